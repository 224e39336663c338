/* epoll.c - POSIX layer epoll: accelerated fds kept beside a real kernel epoll set. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * An application's epoll fd stays a kernel epoll set: kernel fds are
 * registered there as usual.  The first accelerated fd registered turns
 * it into a struct ssp_ep (in the fd table under the epoll fd's number);
 * ep->cxmask holds the contexts that have sockets registered there.  The
 * eventfd of such a context is in the kernel set (ep->kmask), marked
 * with SSP_EP_CTX_MARK, so a sleeping epoll_wait wakes on the service's
 * signal: for good when the set is the only one with sockets of the
 * context (a single-threaded program), else only while a thread asleep
 * on the set is the context's poller (ep_sleeper_register), so that one
 * signal wakes one thread, not every thread asleep on such a set.
 *
 * Accelerated registrations sit on a ready list whenever they may be
 * ready: events queue them (ssp_sock_touch), epoll_wait checks them.
 * Registrations and ready lists are kept per context (ep->per[i], under
 * context i's lock, the lock of the sockets they name), so an event
 * touches only its own context's lists and epoll_wait collects context
 * by context.  Level-triggered ones stay queued while ready;
 * edge-triggered ones are reported when the socket's event sequence
 * moved since the last report (EPOLL_CTL_ADD/MOD report the current
 * state once, as Linux does).
 *
 * Wake-ups across threads.  A thread that pumps a context's events
 * drains its eventfd, so a thread asleep in the kernel epoll_wait of
 * another set could sleep on although that set became ready.  So a
 * thread about to sleep on a set joins the waiter protocol of cx.c on
 * every context of the set with its own eventfd (ssp_waiter_self), which
 * it adds to the kernel set under SSP_EP_WAKE_MARK for the sleep and
 * keeps on the set's list of sleepers (under the set's lock).  The rule:
 *
 *   - the sleeper, context by context under its lock, pumps, finds its
 *     ready list empty and registers (ssp_wait_begin: it may become the
 *     poller that arms it); at the first such registration, still under
 *     that context's lock, it joins the set's sleepers;
 *   - whenever a ready list of the set gains an entry (ssp_ep_wake, from
 *     ssp_sock_touch: a pump by any thread) or a registration is added
 *     or changed, the set's sleepers are kicked; a pump kicks the
 *     epoll sleepers of its context only for events that are no one
 *     socket's (cx.c), so a thread sleeps on through the events of
 *     sockets it does not watch.
 *
 * An entry added after the sleeper's look at a context happens under that
 * context's lock after the sleeper joined the sleepers and registered
 * there, so its eventfd is readable before or while it sleeps: the
 * kernel wakes it.  For the same reason whoever adds an entry may read
 * the number of sleepers without the set's lock (n_sleepers) and skip
 * the kick when it is 0.  A single-threaded program is never asleep when
 * it pumps: no kick.
 *
 * The poller role moves between threads asleep on different sets
 * without waking them (ssp_ep_poller_give/take, under the set's lock,
 * which also covers ep->kmask): the last thread to go to sleep takes it
 * (it just served its own events: the next ones are likely its own
 * again), and a poller that leaves hands it to one still asleep.  So
 * memcached's worker that the service's signal wakes is, as often as
 * not, the one the events are for, and its acceptor sleeps through them.
 *
 * EPOLLEXCLUSIVE (Linux's ep_poll_callback): the exclusive registrations
 * of one socket are visited in registration order on each of its events;
 * the first whose set has a thread in epoll_wait and which wants the
 * event takes it, and later exclusive registrations are not queued at
 * all for this event.  Earlier ones without a waiter are queued (and are
 * reported by a later epoll_wait), as on Linux.
 *
 * Sets are type-stable, like sockets (posix.h): a closed one goes back
 * to a pool once its registrations are gone and no thread waits on it.
 *
 * Numbers.  dup, dup2, dup3 and F_DUPFD of a set's number give another
 * number of the same kernel set, so the fd table maps it to the same
 * object (ssp_ep_dup): registrations made through one are reported
 * through every other, and closing one number leaves the set to the
 * others (ssp_ep_drop); the last one takes it away.  Copies made before
 * the set held any accelerated socket (the layer did not know it then)
 * are found when it takes the first one: ep_make looks for the other
 * fds of the same open file (epoll_nums.c), once per set.  The layer's own
 * epoll_ctl go through ep.epfd, one of the numbers: when that one
 * closes, another takes its place under the set's lock.  A thread in
 * epoll_wait through a number closed meanwhile returns what the kernel
 * gave it, as when the set goes.
 */

/* epoll_data value marking a set's own wake eventfd in its kernel set. */
#define SSP_EP_WAKE_MARK 0x5553535057414b45ull

/* Linux's EPOLLEXCLUSIVE_OK_BITS: what an exclusive registration may ask. */
#define EXCL_OK_BITS (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | \
		      EPOLLEXCLUSIVE)

#define EP_NAP_MS 5     /* the sleep step when no waiter eventfd can be had */

/* A set as this file keeps it: struct ssp_ep first (the fd table and
 * sock.c see only that).  Guarded by ep.lock. */
struct ep_x {
	struct ssp_ep ep;
	bool dead;              /* its fd was closed (or replaced) */
	bool cleaned;           /* ... and its registrations are gone */
	int waiters;            /* threads inside ssp_epoll_wait on it (read atomically) */
	struct ss_list sleepers; /* struct ssp_waiter.in_ep: asleep on it */
	int n_sleepers;         /* on sleepers (written under the lock, read atomically) */
	/* The first thread that sleeps on the set (ssp_waiter.id) keeps its
	 * eventfd in the kernel set between sleeps (owner_in) until another
	 * thread sleeps there too (shared): then each adds and removes its
	 * own around every sleep, as a kick must wake only the sleepers.  An
	 * owner that exits takes its eventfd out and the set forgets it
	 * (ssp_ep_waiter_gone), before the number can name another fd.
	 * (owner: written under the lock, read atomically by ep_own.) */
	uint64_t owner;
	int owner_efd;
	bool owner_in, shared;
	/* The set's numbers (see "Numbers" above): refs in the fd table,
	 * those other than ep.epfd in nums[0 .. refs - 1). */
	int refs;
	int *nums;
	unsigned cap_nums;
	struct ep_x *pool_next; /* in the pool (ssp.glock) */
};

/* A registration: struct ssp_epreg first (core.c walks those). */
struct reg_x {
	struct ssp_epreg r;
	uint32_t excl_seq;      /* sock->seq of the last event it took */
	bool excl_took;
};

static struct ep_x *ep_pool;

static struct ep_x *ep_x(struct ssp_ep *ep)
{
	return SS_CONTAINER_OF(ep, struct ep_x, ep);
}

static struct reg_x *reg_x(struct ssp_epreg *r)
{
	return SS_CONTAINER_OF(r, struct reg_x, r);
}

static struct ssp_ep *ep_get(int epfd)
{
	struct ssp_file *f = ssp_fd_get(epfd);

	return f && f->type == SSP_F_EPOLL ? SS_CONTAINER_OF(f, struct ssp_ep, f) : NULL;
}

/* Lock @ep and check that it is still the live set at @epfd: false
 * (nothing held) when not. */
static bool ep_lock_live(struct ssp_ep *ep, int epfd)
{
	pthread_mutex_lock(&ep->lock);
	if (ssp_fd_get(epfd) == &ep->f && !ep_x(ep)->dead)
		return true;
	pthread_mutex_unlock(&ep->lock);
	return false;
}

/* Context @cx's eventfd joins @ep's kernel set (@ep's lock held). */
static int ep_kadd(struct ssp_ep *ep, const struct ssp_cx *cx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SSP_EP_CTX_MARK };
	uint64_t bit = 1ull << cx->idx;

	if (ep->kmask & bit)
		return 0;
	if (ssp_real.epoll_ctl(ep->epfd, EPOLL_CTL_ADD, cx->evfd, &ev) < 0 && errno != EEXIST)
		return -1;
	ep->kmask |= bit;
	return 0;
}

/* ... and leaves it (@ep's lock held). */
static void ep_kdel(struct ssp_ep *ep, const struct ssp_cx *cx)
{
	uint64_t bit = 1ull << cx->idx;

	if (!(ep->kmask & bit))
		return;
	ssp_real.epoll_ctl(ep->epfd, EPOLL_CTL_DEL, cx->evfd, NULL);
	ep->kmask &= ~bit;
}

/* @ep holds sockets of @cx from now on (@ep's lock held).  The eventfd
 * of a context that only this set watches stays in its kernel set for
 * good; one that several sets watch is there only while a thread asleep
 * on the set is the context's poller (ep_sleeper_register). */
static int ep_cx_add(struct ssp_ep *ep, struct ssp_cx *cx)
{
	uint64_t bit = 1ull << cx->idx;

	if (ep->cxmask & bit)
		return 0;
	if (__atomic_load_n(&cx->n_sets, __ATOMIC_ACQUIRE) == 0 && ep_kadd(ep, cx) < 0)
		return -1;
	__atomic_add_fetch(&cx->n_sets, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&ep->cxmask, ep->cxmask | bit, __ATOMIC_RELEASE);
	return 0;
}

static int nums_reserve(struct ep_x *x);

static void ep_pool_put(struct ep_x *x)
{
	ssp_glock();
	x->pool_next = ep_pool;
	ep_pool = x;
	ssp_gunlock();
}

/* The ssp_ep for @epfd, created on first use (the lock of @cx, the
 * registering socket's, held) with every number the set has by then
 * (see "Numbers" above); NULL with errno. */
static struct ssp_ep *ep_make(int epfd, struct ssp_cx *cx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SSP_EP_CTX_MARK };
	struct ssp_ep *ep = ep_get(epfd);
	struct ep_x *x;
	int *more = NULL, n_more;

	if (ep)
		return ep;
	if (ssp_fd_get(epfd)) {
		errno = EINVAL; /* an accelerated socket is no epoll set */
		return NULL;
	}
	/* The kernel checks that @epfd is an epoll set (EBADF, EINVAL). */
	if (ssp_real.epoll_ctl(epfd, EPOLL_CTL_ADD, cx->evfd, &ev) < 0 && errno != EEXIST)
		return NULL;
	n_more = ssp_ep_numbers(epfd, &more);
	ssp_glock();
	x = ep_pool;
	if (x)
		ep_pool = x->pool_next;
	ssp_gunlock();
	if (!x) {
		x = calloc(1, sizeof(*x));
		if (!x) {
			free(more);
			errno = ENOMEM;
			return NULL;
		}
		x->ep.f.type = SSP_F_EPOLL;
		pthread_mutex_init(&x->ep.lock, NULL);
	}
	/* Not in the table yet: a stale lookup of a former life of @x fails
	 * its check before it reads anything here (ep_lock_live). */
	ep = &x->ep;
	ep->epfd = epfd;
	ep->cxmask = 1ull << cx->idx;
	ep->kmask = 1ull << cx->idx;
	for (unsigned i = 0; i < SSP_MAX_CX; i++) {
		ss_list_init(&ep->per[i].regs);
		ss_list_init(&ep->per[i].rdlist);
	}
	x->dead = x->cleaned = false;
	x->waiters = 0;
	x->n_sleepers = 0;
	ss_list_init(&x->sleepers);
	__atomic_store_n(&x->owner, 0, __ATOMIC_RELAXED);
	x->owner_efd = -1;
	x->owner_in = x->shared = false;
	x->refs = 1 + n_more;
	if (n_more && nums_reserve(x) < 0)
		n_more = 0; /* no memory for the other numbers: this one alone */
	x->refs = 1;
	ssp_glock();
	if (ssp_fd_get(epfd)) {
		/* Another thread made it meanwhile: use that one. */
		ssp_gunlock();
		ep_pool_put(x);
		free(more);
		return ep_make(epfd, cx);
	}
	if (ssp_fd_set(epfd, &ep->f) < 0) {
		ssp_gunlock();
		ep_pool_put(x);
		free(more);
		errno = ENOMEM;
		return NULL;
	}
	/* The copies made before: numbers of this set from now on. */
	for (int i = 0; i < n_more; i++)
		if (!ssp_fd_get(more[i]) && ssp_fd_set(more[i], &ep->f) == 0)
			x->nums[x->refs++ - 1] = more[i];
	__atomic_add_fetch(&cx->n_sets, 1, __ATOMIC_ACQ_REL);
	ssp_gunlock();
	free(more);
	return ep;
}

/* Wake the threads asleep on @x (its lock held); see the rule above. */
static void ep_kick(struct ep_x *x)
{
	for (struct ss_list *l = x->sleepers.next; l != &x->sleepers; l = l->next)
		ssp_waiter_kick(SS_CONTAINER_OF(l, struct ssp_waiter, in_ep));
}

static struct ssp_epreg *reg_find(struct ssp_ep *ep, struct ssp_sock *s, int fd)
{
	for (struct ss_list *l = s->regs.next; l != &s->regs; l = l->next) {
		struct ssp_epreg *r = SS_CONTAINER_OF(l, struct ssp_epreg, in_sock);

		if (r->ep == ep && r->fd == fd)
			return r;
	}
	return NULL;
}

/* Queue @r on its set's ready list for @r's socket's context. */
static void reg_queue(struct ssp_epreg *r)
{
	if (!r->on_rd) {
		r->on_rd = true;
		ss_list_add_tail(&r->ep->per[r->sock->cx->idx].rdlist, &r->in_rd);
	}
}

static void reg_free(struct ssp_epreg *r)
{
	ss_list_del_init(&r->in_sock);
	ss_list_del_init(&r->in_ep);
	if (r->on_rd)
		ss_list_del_init(&r->in_rd);
	free(reg_x(r));
}

static void reg_arm(struct ssp_epreg *r, const struct epoll_event *ev)
{
	r->events = ev->events;
	r->data = ev->data;
	r->disabled = false;
	r->seen_seq = r->sock->seq - 1; /* report the current state once */
	reg_queue(r);
}

/* The checks of Linux's do_epoll_ctl on a socket of ours, in its order
 * (the event is copied in first, then the fds, then EPOLLEXCLUSIVE); 0
 * or an errno. */
static int ctl_check(int epfd, int op, int fd, const struct epoll_event *ev)
{
	if (op != EPOLL_CTL_DEL && !ev)
		return EFAULT;
	if (epfd == fd)
		return EINVAL;
	if (ssp_fd_get(epfd) && !ep_get(epfd))
		return EINVAL; /* an accelerated socket is no epoll set */
	if (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD || (op == EPOLL_CTL_ADD && (ev->events & ~EXCL_OK_BITS)))) {
		/* Exclusive wake-ups are set up at ADD time only, and do
		 * not mix with ONESHOT, RDHUP, PRI... */
		return ssp_real.fcntl(epfd, F_GETFD) < 0 ? EBADF : EINVAL;
	}
	return 0;
}

int ssp_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct ssp_sock *s;
	struct ssp_ep *ep;
	struct ssp_epreg *r;
	struct reg_x *rx;
	struct ssp_cx *cx;
	int err;

	s = ssp_mode() == SSP_M_ON ? ssp_sock_lock_fd(fd) : NULL;
	if (!s) {
		if (ssp_fd_get(fd))
			ssp_log_once("epoll_nest", "an epoll set holding accelerated fds "
				     "inside another epoll set: inner sockets are not seen");
		return ssp_real.epoll_ctl(epfd, op, fd, ev);
	}
	cx = s->cx;
	err = ctl_check(epfd, op, fd, ev);
	if (err)
		return ssp_fail_unlock(err);
	ep = ep_make(epfd, cx);
	if (!ep)
		return ssp_fail_unlock(errno);
	if (!ep_lock_live(ep, epfd))
		return ssp_fail_unlock(EBADF); /* closed meanwhile */
	if (ep_cx_add(ep, cx) < 0) {
		err = errno;
		goto out;
	}
	r = reg_find(ep, s, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (r) {
			err = EEXIST;
			break;
		}
		rx = calloc(1, sizeof(*rx));
		if (!rx) {
			err = ENOMEM;
			break;
		}
		r = &rx->r;
		r->ep = ep;
		r->sock = s;
		r->fd = fd;
		ss_list_add_tail(&s->regs, &r->in_sock);
		ss_list_add_tail(&ep->per[cx->idx].regs, &r->in_ep);
		ss_list_init(&r->in_rd);
		reg_arm(r, ev);
		ep_kick(ep_x(ep)); /* Linux's ep_insert wakes a waiter if ready */
		break;
	case EPOLL_CTL_MOD:
		if (!r)
			err = ENOENT;
		else if (r->events & EPOLLEXCLUSIVE)
			err = EINVAL; /* an exclusive registration cannot change */
		else {
			reg_arm(r, ev);
			ep_kick(ep_x(ep));
		}
		break;
	case EPOLL_CTL_DEL:
		if (!r)
			err = ENOENT;
		else
			reg_free(r);
		break;
	default:
		err = EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&ep->lock);
	if (err)
		return ssp_fail_unlock(err);
	ssp_unlock();
	return 0;
}

/* Leave ssp_epoll_wait on @x (nothing held): entries still queued (@more)
 * go on to another thread asleep on the set, as Linux's ep_poll wakes the
 * next waiter when its ready list is not empty. */
static void ep_leave(struct ep_x *x, bool more)
{
	bool recycle;

	pthread_mutex_lock(&x->ep.lock);
	__atomic_store_n(&x->waiters, x->waiters - 1, __ATOMIC_RELAXED);
	recycle = x->dead && x->cleaned && x->waiters <= 0;
	if (!x->dead && more)
		ep_kick(x);
	pthread_mutex_unlock(&x->ep.lock);
	if (recycle)
		ep_pool_put(x);
}

/* Room in @x->nums for one more number (its lock held): 0, or -1 (ENOMEM). */
static int nums_reserve(struct ep_x *x)
{
	unsigned cap = x->cap_nums ? 2 * x->cap_nums : 4;
	int *n;

	if ((unsigned)x->refs <= x->cap_nums)
		return 0;
	while (cap < (unsigned)x->refs)
		cap *= 2;
	n = realloc(x->nums, cap * sizeof(*n));
	if (!n) {
		errno = ENOMEM;
		return -1;
	}
	x->nums = n;
	x->cap_nums = cap;
	return 0;
}

/* Number @fd of @x leaves it, another one left (its lock held): out of
 * the fd table, and out of nums, or another takes ep.epfd's place. */
static void num_drop(struct ep_x *x, int fd)
{
	int last = x->nums[--x->refs - 1];

	if (x->ep.epfd == fd) {
		x->ep.epfd = last;
	} else {
		for (int i = 0; i < x->refs - 1; i++)
			if (x->nums[i] == fd) {
				x->nums[i] = last;
				break;
			}
	}
	ssp_glock();
	ssp_fd_set(fd, NULL);
	ssp_gunlock();
}

int ssp_ep_dup(struct ssp_ep *ep, int oldfd, int newfd, int flags, bool exact)
{
	struct ep_x *x = ep_x(ep);
	int nfd, err;

	if (!ep_lock_live(ep, oldfd))
		return -2;
	if (nums_reserve(x) < 0)
		goto fail;
	nfd = exact ? ssp_real.dup3(oldfd, newfd, flags)
		    : ssp_real.fcntl(oldfd, flags & O_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD, newfd);
	if (nfd < 0)
		goto fail;
	if (exact && ssp_fd_get(newfd)) {
		/* dup2 closed what newfd was (a socket, another set, or a
		 * number of this one): it leaves the layer first, under its
		 * own locks. */
		pthread_mutex_unlock(&ep->lock);
		ssp_fd_forget(newfd);
		pthread_mutex_lock(&ep->lock);
		if (x->dead || nums_reserve(x) < 0) {
			/* Its last other number closed meanwhile (a race in the
			 * program), or no memory: the kernel's set only. */
			pthread_mutex_unlock(&ep->lock);
			ssp_log_once("dup_epoll_lost", "dup2() of an epoll fd closed meanwhile: "
				     "the copy sees kernel fds only");
			return nfd;
		}
	}
	ssp_glock();
	if (ssp_fd_set(nfd, &ep->f) == 0)
		x->nums[x->refs++ - 1] = nfd;
	else
		ssp_log_once("dup_epoll_table", "dup() of an epoll fd: no memory for the fd "
			     "table, the copy sees kernel fds only");
	ssp_gunlock();
	pthread_mutex_unlock(&ep->lock);
	return nfd;
fail:
	err = errno;
	pthread_mutex_unlock(&ep->lock);
	errno = err;
	return -1;
}

int ssp_ep_drop(int epfd, struct ssp_ep *ep, bool close_fd)
{
	struct ep_x *x = ep_x(ep);
	bool recycle;
	int rc = 0;

	if (!ep_lock_live(ep, epfd))
		return close_fd ? ss_sys_close(epfd) : 0; /* gone meanwhile */
	if (x->refs > 1) {
		/* Other numbers keep the set. */
		num_drop(x, epfd);
		pthread_mutex_unlock(&ep->lock);
		return close_fd ? ss_sys_close(epfd) : 0;
	}
	x->dead = true;
	x->refs = 0;
	for (unsigned i = 0; i < SSP_MAX_CX; i++)
		if (ep->cxmask & 1ull << i)
			__atomic_sub_fetch(&ssp.cx[i].n_sets, 1, __ATOMIC_ACQ_REL);
	ssp_glock();
	ssp_fd_set(epfd, NULL);
	ssp_gunlock();
	pthread_mutex_unlock(&ep->lock);
	/* No registration comes any more (dead), none moves (see
	 * ssp_ep_sock_moved): take each context's away under its lock. */
	for (unsigned i = 0; i < ssp.n_cx; i++) {
		struct ss_list *h = &ep->per[i].regs;

		ssp_cx_lock(&ssp.cx[i]);
		while (!ss_list_empty(h))
			reg_free(SS_LIST_ENTRY(ss_list_first(h), struct ssp_epreg, in_ep));
		ssp_unlock();
	}
	if (close_fd)
		rc = ss_sys_close(epfd);
	pthread_mutex_lock(&ep->lock);
	x->cleaned = true;
	recycle = x->waiters <= 0;
	pthread_mutex_unlock(&ep->lock);
	if (recycle)
		ep_pool_put(x);
	return rc;
}

void ssp_ep_drop_fd(struct ssp_sock *s, int fd)
{
	struct ss_list *l = s->regs.next;

	while (l != &s->regs) {
		struct ssp_epreg *r = SS_CONTAINER_OF(l, struct ssp_epreg, in_sock);

		l = l->next;
		if (r->fd == fd)
			reg_free(r);
	}
}

void ssp_ep_sock_moved(struct ssp_sock *s, struct ssp_cx *from)
{
	struct ss_list *l = s->regs.next;
	unsigned to = s->cx->idx;

	(void)from;
	while (l != &s->regs) {
		struct ssp_epreg *r = SS_CONTAINER_OF(l, struct ssp_epreg, in_sock);
		struct ssp_ep *ep = r->ep;

		l = l->next;
		pthread_mutex_lock(&ep->lock);
		if (ep_x(ep)->dead) {
			reg_free(r); /* its set is being taken apart */
		} else {
			ep_cx_add(ep, s->cx);
			ss_list_del_init(&r->in_ep);
			ss_list_add_tail(&ep->per[to].regs, &r->in_ep);
			if (r->on_rd) {
				ss_list_del_init(&r->in_rd);
				ss_list_add_tail(&ep->per[to].rdlist, &r->in_rd);
			}
		}
		pthread_mutex_unlock(&ep->lock);
	}
}

bool ssp_ep_poller_give(struct ssp_waiter *w, struct ssp_cx *cx)
{
	struct ssp_ep *ep = __atomic_load_n(&w->sleep_ep, __ATOMIC_ACQUIRE);
	bool done = false;

	if (!ep || __atomic_load_n(&w->kicked, __ATOMIC_ACQUIRE))
		return false; /* awake, or about to be: a kick does as well */
	pthread_mutex_lock(&ep->lock);
	if (w->sleep_ep == ep && !ep_x(ep)->dead && (ep->cxmask & 1ull << cx->idx) &&
	    ss_ctx_arm(cx->ctx) == 0) {
		/* Armed: a failure to watch the eventfd leaves it armed with no
		 * poller, which the next pump undoes (ss_poll disarms). */
		if (ep_kadd(ep, cx) == 0) {
			__atomic_store_n(&cx->poller, w, __ATOMIC_RELEASE);
			done = true;
		}
	}
	pthread_mutex_unlock(&ep->lock);
	return done;
}

bool ssp_ep_poller_take(struct ssp_waiter *p, struct ssp_cx *cx, struct ssp_waiter *w)
{
	struct ssp_ep *ep = __atomic_load_n(&p->sleep_ep, __ATOMIC_ACQUIRE);
	bool done = false;

	if (!ep || ep == w->ep)
		return false; /* awake, or on our own set: nothing to gain */
	pthread_mutex_lock(&ep->lock);
	if (p->sleep_ep == ep) {
		/* Another set holds sockets of @cx (ours): never the only one,
		 * so the eventfd may go.  A signal already in it stays there:
		 * our set, which takes it (ep_sleeper_register), wakes at once. */
		if (!ep_x(ep)->dead)
			ep_kdel(ep, cx);
		__atomic_store_n(&cx->poller, w, __ATOMIC_RELEASE);
		done = true;
	}
	pthread_mutex_unlock(&ep->lock);
	return done;
}

void ssp_ep_atfork_child(struct ssp_ep *ep)
{
	struct ep_x *x = ep_x(ep);

	pthread_mutex_init(&ep->lock, NULL);
	ss_list_init(&x->sleepers);
	x->n_sleepers = 0;
	x->waiters = 0;
	/* The kernel set is the parent's too, with the parent's eventfds. */
	x->shared = true;
	x->owner_in = false;
}

void ssp_ep_child_attach(struct ssp_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	for (unsigned i = 1; i < SSP_MAX_CX; i++) {
		ss_list_splice_tail(&ep->per[0].regs, &ep->per[i].regs);
		ss_list_splice_tail(&ep->per[0].rdlist, &ep->per[i].rdlist);
	}
	ep->cxmask = 0;
	ep->kmask = 0; /* the kernel set holds the parent's eventfds, not ours */
	ep_cx_add(ep, &ssp.cx[0]);
	pthread_mutex_unlock(&ep->lock);
}

/* Move ready accelerated registrations of @ep on context @j (its lock
 * held) into @out; *@more when some stay queued. */
static int ep_collect(struct ssp_ep *ep, unsigned j, struct epoll_event *out, int max,
		      bool *more)
{
	struct ss_list *rd = &ep->per[j].rdlist, todo;
	int n = 0;

	if (ss_list_empty(rd))
		return 0;
	/* Take the whole list: each entry is looked at once per call. */
	ss_list_move(&todo, rd);
	while (!ss_list_empty(&todo)) {
		struct ssp_epreg *r = SS_LIST_ENTRY(ss_list_first(&todo), struct ssp_epreg, in_rd);
		uint32_t m;

		if (n == max) {
			/* Out of room: the rest stays queued, in order. */
			ss_list_splice_head(rd, &todo);
			break;
		}
		ss_list_del_init(&r->in_rd);
		r->on_rd = false;
		if (r->disabled)
			continue;
		m = ssp_sock_poll(r->sock) & (r->events | EPOLLERR | EPOLLHUP);
		if (!m)
			continue;
		if (r->events & EPOLLET) {
			if (r->seen_seq == r->sock->seq)
				continue;
			r->seen_seq = r->sock->seq;
		}
		out[n].events = m;
		out[n].data = r->data;
		n++;
		if (r->events & EPOLLONESHOT)
			r->disabled = true;
		else if (!(r->events & EPOLLET))
			reg_queue(r); /* level-triggered: look again next time */
	}
	*more |= !ss_list_empty(rd);
	return n;
}

/* Drop the contexts' and the set's own eventfds from kernel results. */
static int ctx_filter(struct epoll_event *evs, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (evs[i].data.u64 != SSP_EP_CTX_MARK && evs[i].data.u64 != SSP_EP_WAKE_MARK)
			evs[k++] = evs[i];
	return k;
}

static int real_wait(int epfd, struct epoll_event *evs, int max, int timeout,
		     const sigset_t *mask)
{
	return mask ? ssp_real.epoll_pwait(epfd, evs, max, timeout, mask)
		    : ssp_real.epoll_wait(epfd, evs, max, timeout);
}

/* A look at the kernel set that never sleeps, after ours were collected
 * (and, edge-triggered or one-shot, consumed): no cancellation point, so
 * they reach the caller. */
static int kernel_look(int epfd, struct epoll_event *evs, int max)
{
	return (int)syscall(SYS_epoll_pwait, epfd, evs, max, 0, NULL, (size_t)8);
}

/* A sleep of ssp_epoll_wait in the kernel set, and what a thread
 * cancelled there undoes (ep_cancelled). */
struct ep_sleep {
	int epfd;
	struct epoll_event *evs;
	int max, timeout;
	const sigset_t *mask;
	struct ep_x *x;           /* NULL: not our set, nothing to undo */
	struct ssp_waiter *w;     /* asleep on x (a sleeper), or NULL: a nap */
	uint64_t reg;             /* the contexts w is registered on */
};

static int ep_sleep(void *arg)
{
	const struct ep_sleep *e = arg;

	return real_wait(e->epfd, e->evs, e->max, e->timeout, e->mask);
}

static void ep_cancelled(void *arg);

/* real_wait, cancellable (ssp_cancellable) with @x, @w, @reg to undo. */
static int ep_wait_cancellable(int epfd, struct epoll_event *evs, int max, int timeout,
			       const sigset_t *mask, struct ep_x *x, struct ssp_waiter *w,
			       uint64_t reg)
{
	struct ep_sleep e = { epfd, evs, max, timeout, mask, x, w, reg };

	return ssp_cancellable(ep_sleep, &e, x ? ep_cancelled : NULL, &e);
}

/* The contexts to look at for @ep: those with sockets registered, and
 * context 0 while sockets are AWAY elsewhere (cx.c). */
static uint64_t ep_cxs(struct ssp_ep *ep)
{
	uint64_t m = __atomic_load_n(&ep->cxmask, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&ssp.n_away, __ATOMIC_ACQUIRE) > 0 && !(m & 1)) {
		pthread_mutex_lock(&ep->lock);
		if (!ep_x(ep)->dead)
			ep_cx_add(ep, &ssp.cx[0]);
		pthread_mutex_unlock(&ep->lock);
		m |= 1;
	}
	return m;
}

/* Is a thread with waiter id @id on @x's sleepers?  (Its lock held.) */
static bool ep_sleeping(struct ep_x *x, uint64_t id)
{
	for (struct ss_list *l = x->sleepers.next; l != &x->sleepers; l = l->next)
		if (SS_CONTAINER_OF(l, struct ssp_waiter, in_ep)->id == id)
			return true;
	return false;
}

/* @w, about to become @x's owner (@x's lock held), notes @x in its
 * w->owns, where its exit finds it; entries of sets it no longer owns go
 * (only @w's thread makes a set its owner again).  0, or -1 (ENOMEM). */
static int ep_own(struct ep_x *x, struct ssp_waiter *w)
{
	unsigned k = 0;

	for (unsigned i = 0; i < w->n_owns; i++) {
		struct ssp_ep *ep = w->owns[i];

		if (ep != &x->ep &&
		    __atomic_load_n(&ep_x(ep)->owner, __ATOMIC_RELAXED) == w->id)
			w->owns[k++] = ep;
	}
	w->n_owns = k;
	if (k == w->cap_owns) {
		unsigned cap = k ? 2 * k : 4;
		struct ssp_ep **n = realloc(w->owns, cap * sizeof(*n));

		if (!n) {
			errno = ENOMEM;
			return -1;
		}
		w->owns = n;
		w->cap_owns = cap;
	}
	w->owns[w->n_owns++] = &x->ep;
	return 0;
}

void ssp_ep_waiter_gone(struct ssp_waiter *w)
{
	for (unsigned i = 0; i < w->n_owns; i++) {
		struct ssp_ep *ep = w->owns[i];
		struct ep_x *x = ep_x(ep);

		/* Sets are type-stable: a set since closed, or made again for
		 * another fd, has another owner (or none) by now. */
		pthread_mutex_lock(&ep->lock);
		if (x->owner == w->id) {
			if (x->owner_in && !x->dead)
				ssp_real.epoll_ctl(ep->epfd, EPOLL_CTL_DEL, w->efd, NULL);
			x->owner_in = false;
			__atomic_store_n(&x->owner, 0, __ATOMIC_RELAXED);
			x->owner_efd = -1;
		}
		pthread_mutex_unlock(&ep->lock);
	}
	w->n_owns = 0;
}

/* @w's eventfd joins @x's kernel set for a sleep (@x's lock held; see
 * ep_x.owner).  0 or -1. */
static int ep_wake_add(struct ep_x *x, struct ssp_waiter *w)
{
	struct epoll_event wev = { .events = EPOLLIN, .data.u64 = SSP_EP_WAKE_MARK };

	if (!x->owner) {
		if (ep_own(x, w) < 0)
			return -1;
		__atomic_store_n(&x->owner, w->id, __ATOMIC_RELAXED);
		x->owner_efd = w->efd;
	} else if (x->owner != w->id && !x->shared) {
		x->shared = true;
		if (x->owner_in && !ep_sleeping(x, x->owner)) {
			/* (asleep, it takes its own away when it wakes) */
			ssp_real.epoll_ctl(x->ep.epfd, EPOLL_CTL_DEL, x->owner_efd, NULL);
			x->owner_in = false;
		}
	}
	if (x->owner == w->id && x->owner_in)
		return 0;
	if (ssp_real.epoll_ctl(x->ep.epfd, EPOLL_CTL_ADD, w->efd, &wev) < 0 && errno != EEXIST)
		return -1;
	if (x->owner == w->id && !x->shared)
		x->owner_in = true;
	return 0;
}

/*
 * @w, registered on @cx (its lock held) for a sleep on @x, joins the
 * set's sleepers at its first registration of the pass (@first; see the
 * rule above) with its eventfd in the kernel set, and the kernel set
 * watches @cx's eventfd if @w is its poller, or if no other set has
 * sockets of @cx; else not, unless another thread sleeps on the set
 * too.  The role may move later (ssp_ep_poller_give/take, under the
 * set's lock too): whoever moves it fixes the kernel set.  A failure
 * that would let @w sleep through its wake-up sets w->ep_fail.
 */
static void ep_sleeper_register(struct ep_x *x, struct ssp_waiter *w, struct ssp_cx *cx,
				bool first)
{
	struct ssp_ep *ep = &x->ep;

	pthread_mutex_lock(&ep->lock);
	if (first) {
		ss_list_add_tail(&x->sleepers, &w->in_ep);
		__atomic_store_n(&x->n_sleepers, x->n_sleepers + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&w->sleep_ep, ep, __ATOMIC_RELEASE);
		if (!x->dead && ep_wake_add(x, w) < 0)
			w->ep_fail = true;
	}
	if (!x->dead) {
		bool poller = cx->poller == w;

		if (poller || __atomic_load_n(&cx->n_sets, __ATOMIC_ACQUIRE) <= 1) {
			if (ep_kadd(ep, cx) < 0 && poller)
				w->ep_fail = true;
		} else if (x->n_sleepers <= 1) {
			ep_kdel(ep, cx);
		}
	}
	pthread_mutex_unlock(&ep->lock);
}

/* @w leaves @x's sleepers (its lock held) and, unless it keeps it there
 * (ep_x.owner), takes its eventfd out of the kernel set.  True when the
 * set was closed meanwhile. */
static bool ep_sleeper_quit_locked(struct ep_x *x, struct ssp_waiter *w)
{
	ss_list_del_init(&w->in_ep);
	__atomic_store_n(&x->n_sleepers, x->n_sleepers - 1, __ATOMIC_RELAXED);
	__atomic_store_n(&w->sleep_ep, NULL, __ATOMIC_RELEASE);
	if (x->dead)
		return true;
	if (x->owner != w->id || x->shared) {
		ssp_real.epoll_ctl(x->ep.epfd, EPOLL_CTL_DEL, w->efd, NULL);
		if (x->owner == w->id)
			x->owner_in = false;
	}
	return false;
}

static bool ep_sleeper_quit(struct ep_x *x, struct ssp_waiter *w)
{
	bool dead;

	pthread_mutex_lock(&x->ep.lock);
	dead = ep_sleeper_quit_locked(x, w);
	pthread_mutex_unlock(&x->ep.lock);
	return dead;
}

/*
 * A thread cancelled asleep in epoll_wait on @e->x: off the set's
 * sleepers, its eventfd out of the kernel set even where it kept it
 * there between sleeps (the thread is going: the set forgets it as its
 * owner), off its contexts (a poller hands its role on), out of the
 * set's waiters.
 */
static void ep_cancelled(void *arg)
{
	const struct ep_sleep *e = arg;
	struct ep_x *x = e->x;

	if (e->w) {
		pthread_mutex_lock(&x->ep.lock);
		if (!ep_sleeper_quit_locked(x, e->w) && x->owner == e->w->id) {
			if (x->owner_in)
				ssp_real.epoll_ctl(x->ep.epfd, EPOLL_CTL_DEL, e->w->efd, NULL);
			x->owner_in = false;
			__atomic_store_n(&x->owner, 0, __ATOMIC_RELAXED);
			x->owner_efd = -1;
		}
		pthread_mutex_unlock(&x->ep.lock);
		ssp_wait_end_all(e->w, e->reg);
	}
	ep_leave(x, false);
}

/*
 * One pass over @ep's contexts in @cxs and those @self is registered on
 * (*@reg, from the last sleep), each under its lock: taken off the
 * context (which pumps it) or pumped, collected into @evs, and, with
 * @sleep while nothing was found, @self registered there again and (at
 * the first) joined to the set's sleepers (see the rule above), so that
 * a thread that sleeps again takes each lock once per wake-up.  What was
 * registered is undone when something was found.  The events found, with
 * *@reg the contexts @self sleeps on now (none when it found any), or -1
 * when events came during a registration (nothing registered: look again).
 */
static int ep_pass(struct ssp_ep *ep, uint64_t cxs, struct epoll_event *evs, int max,
		   struct ssp_waiter *self, bool sleep, uint64_t *reg, bool *more)
{
	struct ep_x *x = ep_x(ep);
	uint64_t old = *reg, now = 0;
	bool again = false;
	int n = 0;

	if (old)
		ssp_waiter_drain(self); /* before the pass, never within (cx.c) */
	for (uint64_t todo = cxs | old; todo; todo &= todo - 1) {
		unsigned j = (unsigned)__builtin_ctzll(todo);
		struct ssp_cx *cx = &ssp.cx[j];
		uint64_t bit = 1ull << j;

		ssp_cx_lock(cx);
		if (old & bit)
			ssp_wait_end(self, cx); /* pumps */
		else
			ssp_cx_pump(cx);
		if (cxs & bit) {
			if (n < max)
				n += ep_collect(ep, j, evs + n, max - n, more);
			else
				*more |= !ss_list_empty(&ep->per[j].rdlist);
			if (sleep && !n && !again) {
				if (ssp_wait_begin(self, cx) < 0) {
					again = true;
				} else {
					ep_sleeper_register(x, self, cx, !now);
					now |= bit;
				}
			}
		}
		ssp_unlock();
	}
	if ((n || again) && now) {
		ep_sleeper_quit(x, self);
		self->ep_fail = false;
		ssp_wait_end_all(self, now);
		now = 0;
	}
	*reg = now;
	return !n && again ? -1 : n;
}

int ssp_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask)
{
	struct ssp_waiter *w;
	uint64_t reg = 0;
	int64_t deadline;
	struct ssp_ep *ep;
	struct ep_x *x;
	int k = 0;          /* kernel events from the last sleep, at evs[0..k) */

	if (max <= 0 || !evs) {
		errno = EINVAL;
		return -1;
	}
	ep = ssp_mode() == SSP_M_ON ? ep_get(epfd) : NULL;
	if (!ep || !ep_lock_live(ep, epfd))
		return ep_wait_cancellable(epfd, evs, max, timeout_ms, mask, NULL, NULL, 0);
	x = ep_x(ep);
	__atomic_store_n(&x->waiters, x->waiters + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ep->lock);
	deadline = ssp_deadline(timeout_ms);
	w = timeout_ms != 0 ? ssp_waiter_self() : NULL;
	if (w) {
		/* Woken through the set (see above); registered nowhere now. */
		__atomic_store_n(&w->kind, SSP_WK_EP, __ATOMIC_RELAXED);
		w->sock = NULL;
		w->ep = ep;
	}
	for (;;) {
		int left = ssp_ms_left(deadline), n, err;
		bool more = false, dead;

		n = ep_pass(ep, ep_cxs(ep), evs + k, max - k, w, left != 0 && w && !k, &reg,
			    &more);
		if (n < 0)
			continue; /* events came meanwhile: look again */
		if (k + n > 0) {
			ep_leave(x, more);
			if (!k && n < max) {
				/* Ours first; kernel fds ready now after them. */
				int kn = ctx_filter(evs + n, kernel_look(epfd, evs + n, max - n));

				if (kn > 0)
					n += kn;
			}
			return k + n;
		}
		if (!reg) {
			/* Nothing of ours, no sleep: a last look (left == 0), a
			 * nap without an eventfd of our own, or a set with no
			 * context to wait on. */
			k = ep_wait_cancellable(epfd, evs, max,
						left < 0 || left > EP_NAP_MS ? EP_NAP_MS : left, mask,
						x, NULL, 0);
			err = errno;
			if (k < 0) {
				ep_leave(x, false);
				errno = err;
				return -1;
			}
			k = ctx_filter(evs, k);
			if (k > 0 || left == 0) {
				ep_leave(x, false);
				return k;
			}
			continue;
		}
		if (w->ep_fail) {
			ssp_log_once("ep_waiter", "cannot add a waiter eventfd to an epoll set: "
				     "waits there nap");
			ep_sleeper_quit(x, w);
			w->ep_fail = false;
			ssp_wait_end_all(w, reg);
			reg = 0;
			w = NULL;
			continue;
		}
		k = ep_wait_cancellable(epfd, evs, max, left, mask, x, w, reg);
		err = errno;
		dead = ep_sleeper_quit(x, w);
		if (k < 0 || dead || ssp_fd_get(epfd) != &ep->f) {
			/* An error (EINTR: never restarted), or the set (or
			 * this number of it) was closed meanwhile: what the
			 * kernel said. */
			ssp_wait_end_all(w, reg);
			ep_leave(x, false);
			if (k < 0) {
				errno = err;
				return -1;
			}
			return ctx_filter(evs, k);
		}
		k = ctx_filter(evs, k);
		/* The next pass takes us off the contexts, collects after the
		 * kernel's events, and sleeps again when there is nothing. */
	}
}

/* EPOLLEXCLUSIVE: may @r (just queued on its set's ready list by an event
 * of its socket) keep the event?  Not when an exclusive registration
 * visited before it (in registration order, during the same event) took
 * it; it takes the event itself when its set has a thread in epoll_wait
 * and it wants what the socket reports. */
static bool excl_keep(struct ssp_epreg *r)
{
	struct ssp_sock *s = r->sock;
	struct reg_x *rx = reg_x(r);

	for (struct ss_list *l = s->regs.next; l != &r->in_sock; l = l->next) {
		struct ssp_epreg *o = SS_CONTAINER_OF(l, struct ssp_epreg, in_sock);
		struct reg_x *ox = reg_x(o);

		if ((o->events & EPOLLEXCLUSIVE) && ox->excl_took && ox->excl_seq == s->seq)
			return false;
	}
	rx->excl_took = __atomic_load_n(&ep_x(r->ep)->waiters, __ATOMIC_RELAXED) > 0 &&
			(ssp_sock_poll(s) & (r->events | EPOLLERR | EPOLLHUP) &
			 (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP));
	rx->excl_seq = s->seq;
	return true;
}

/*
 * @ep's ready list for @cx just gained an entry, at its tail
 * (ssp_sock_touch appends, then calls this; @cx's lock held).  Exclusive
 * registrations may give the entry back (see excl_keep); otherwise a
 * thread asleep on the set is woken through its wake eventfd.
 */
void ssp_ep_wake(struct ssp_ep *ep, struct ssp_cx *cx)
{
	struct ss_list *rd = &ep->per[cx->idx].rdlist;
	struct ep_x *x = ep_x(ep);
	struct ssp_epreg *r;

	if (ss_list_empty(rd))
		return;
	r = SS_LIST_ENTRY(ss_list_last(rd), struct ssp_epreg, in_rd);
	if ((r->events & EPOLLEXCLUSIVE) && !excl_keep(r)) {
		ss_list_del_init(&r->in_rd);
		r->on_rd = false;
		return;
	}
	/* A sleeper joined under a context lock we hold now, or will look
	 * at this entry itself (see the rule above). */
	if (!__atomic_load_n(&x->n_sleepers, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&ep->lock);
	ep_kick(x);
	pthread_mutex_unlock(&ep->lock);
}
