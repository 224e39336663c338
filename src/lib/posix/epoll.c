/* epoll.c - POSIX layer epoll: accelerated fds kept beside a real kernel epoll set. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * An application's epoll fd stays a kernel epoll set: kernel fds are
 * registered there as usual.  The first accelerated fd registered turns
 * it into a struct ssp_ep (in the fd table under the epoll fd's number)
 * and adds the context eventfd to the kernel set, marked with
 * SSP_EP_CTX_MARK, so a sleeping epoll_wait wakes on service events.
 *
 * Accelerated registrations sit on a ready list (rdlist) whenever they may
 * be ready: events queue them (ssp_sock_touch), epoll_wait checks them.
 * Level-triggered ones stay queued while ready; edge-triggered ones are
 * reported when the socket's event sequence moved since the last report
 * (EPOLL_CTL_ADD/MOD report the current state once, as Linux does).
 *
 * Wake-ups across threads.  The context eventfd is shared by every set
 * and every blocking call: a thread that pumps events drains it, so a
 * thread asleep in the kernel epoll_wait of another set could sleep on
 * although that set became ready.  So a thread about to sleep on a set
 * joins core.c's waiter protocol with its own eventfd
 * (ssp_waiter_self), which it adds to the kernel set under
 * SSP_EP_WAKE_MARK for the sleep and keeps on the set's list of sleepers.
 * The rule, all under the layer lock:
 *
 *   - the sleeper pumps, finds the ready list empty, registers
 *     (ssp_wait_begin: it may become the poller that arms the context),
 *     adds its eventfd to the kernel set, and only then drops the lock;
 *   - any later pump with events kicks every registered waiter (core.c),
 *     and whenever the set's ready list gains an entry (ssp_ep_wake, from
 *     ssp_sock_touch) or a registration is added or changed, the set's
 *     sleepers are kicked.
 *
 * An entry added after the sleeper's look happens after it registered, so
 * its eventfd is readable before or while it sleeps: the kernel wakes it.
 * A single-threaded program is never asleep when it pumps: no kick.
 *
 * EPOLLEXCLUSIVE (Linux's ep_poll_callback): the exclusive registrations
 * of one socket are visited in registration order on each of its events;
 * the first whose set has a thread in epoll_wait and which wants the
 * event takes it, and later exclusive registrations are not queued at
 * all for this event.  Earlier ones without a waiter are queued (and are
 * reported by a later epoll_wait), as on Linux.
 */

/* epoll_data value marking a set's own wake eventfd in its kernel set. */
#define SSP_EP_WAKE_MARK 0x5553535057414b45ull

/* Linux's EPOLLEXCLUSIVE_OK_BITS: what an exclusive registration may ask. */
#define EXCL_OK_BITS (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | \
		      EPOLLEXCLUSIVE)

/* A set as this file keeps it: struct ssp_ep first (the fd table and
 * sock.c see only that). */
struct ep_x {
	struct ssp_ep ep;
	bool dead;              /* its fd was closed while threads waited */
	int waiters;            /* threads inside ssp_epoll_wait on it */
	struct ssp_link sleepers; /* struct ssp_waiter.in_ep: asleep on it */
};

/* A registration: struct ssp_epreg first (core.c walks those). */
struct reg_x {
	struct ssp_epreg r;
	uint32_t excl_seq;      /* sock->seq of the last event it took */
	bool excl_took;
};

static struct ep_x *ep_x(struct ssp_ep *ep)
{
	return SSP_CONTAINER(ep, struct ep_x, ep);
}

static struct reg_x *reg_x(struct ssp_epreg *r)
{
	return SSP_CONTAINER(r, struct reg_x, r);
}

static struct ssp_ep *ep_get(int epfd)
{
	struct ssp_file *f = ssp_fd_get(epfd);

	return f && f->type == SSP_F_EPOLL ? SSP_CONTAINER(f, struct ssp_ep, f) : NULL;
}

/* The ssp_ep for @epfd, created on first use; NULL with errno. */
static struct ssp_ep *ep_make(int epfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SSP_EP_CTX_MARK };
	struct ssp_ep *ep = ep_get(epfd);
	struct ep_x *x;

	if (ep)
		return ep;
	if (ssp_fd_get(epfd)) {
		errno = EINVAL; /* an accelerated socket is no epoll set */
		return NULL;
	}
	if (ssp_real.epoll_ctl(epfd, EPOLL_CTL_ADD, ssp.evfd, &ev) < 0)
		return NULL; /* EBADF, EINVAL: not an epoll fd */
	x = calloc(1, sizeof(*x));
	if (!x || ssp_fd_set(epfd, &x->ep.f) < 0) {
		free(x);
		ssp_real.epoll_ctl(epfd, EPOLL_CTL_DEL, ssp.evfd, NULL);
		errno = ENOMEM;
		return NULL;
	}
	ep = &x->ep;
	ep->f.type = SSP_F_EPOLL;
	ep->epfd = epfd;
	ep->has_ctx = true;
	ssp_list_init(&ep->regs);
	ssp_list_init(&ep->rdlist);
	ssp_list_init(&x->sleepers);
	return ep;
}

/* Wake the threads asleep on @x (lock held); see the rule above. */
static void ep_kick(struct ep_x *x)
{
	uint64_t one = 1;

	for (struct ssp_link *l = x->sleepers.next; l != &x->sleepers; l = l->next) {
		struct ssp_waiter *w = SSP_CONTAINER(l, struct ssp_waiter, in_ep);

		if (ssp_real.write(w->efd, &one, sizeof(one)) < 0)
			continue; /* counter saturated: readable anyway */
	}
}

static struct ssp_epreg *reg_find(struct ssp_ep *ep, struct ssp_sock *s, int fd)
{
	for (struct ssp_link *l = s->regs.next; l != &s->regs; l = l->next) {
		struct ssp_epreg *r = SSP_CONTAINER(l, struct ssp_epreg, in_sock);

		if (r->ep == ep && r->fd == fd)
			return r;
	}
	return NULL;
}

static void reg_queue(struct ssp_epreg *r)
{
	if (!r->on_rd) {
		r->on_rd = true;
		ssp_list_add_tail(&r->ep->rdlist, &r->in_rd);
	}
}

static void reg_free(struct ssp_epreg *r)
{
	ssp_list_del(&r->in_sock);
	ssp_list_del(&r->in_ep);
	if (r->on_rd)
		ssp_list_del(&r->in_rd);
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

int ssp_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct ssp_sock *s;
	struct ssp_ep *ep;
	struct ssp_epreg *r;
	struct reg_x *rx;
	int err = 0;

	ssp_lock();
	s = ssp.mode == SSP_M_ON ? ssp_fd_sock(fd) : NULL;
	if (!s) {
		ssp_unlock();
		if (ssp_fd_get(fd))
			ssp_log_once("epoll_nest", "an epoll set holding accelerated fds "
				     "inside another epoll set: inner sockets are not seen");
		return ssp_real.epoll_ctl(epfd, op, fd, ev);
	}
	/* Linux's order (do_epoll_ctl): the event is copied in first, then
	 * the fds are checked, then EPOLLEXCLUSIVE, then the registration. */
	if (op != EPOLL_CTL_DEL && !ev) {
		err = EFAULT;
		goto out;
	}
	if (epfd == fd) {
		err = EINVAL;
		goto out;
	}
	if (ssp_fd_get(epfd) && !ep_get(epfd)) {
		err = EINVAL; /* an accelerated socket is no epoll set */
		goto out;
	}
	if (op != EPOLL_CTL_DEL && (ev->events & EPOLLEXCLUSIVE) &&
	    (op == EPOLL_CTL_MOD || (op == EPOLL_CTL_ADD && (ev->events & ~EXCL_OK_BITS)))) {
		/* Exclusive wake-ups are set up at ADD time only, and do
		 * not mix with ONESHOT, RDHUP, PRI... */
		if (ssp_real.fcntl(epfd, F_GETFD) < 0)
			err = EBADF;
		else
			err = EINVAL;
		goto out;
	}
	ep = ep_make(epfd);
	if (!ep) {
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
		ssp_list_add_tail(&s->regs, &r->in_sock);
		ssp_list_add_tail(&ep->regs, &r->in_ep);
		ssp_list_init(&r->in_rd);
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
	ssp_unlock();
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* The set's fd is gone (lock held).  Threads still in ssp_epoll_wait on
 * it free it when they leave. */
void ssp_ep_free(struct ssp_ep *ep)
{
	struct ep_x *x = ep_x(ep);

	while (!ssp_list_empty(&ep->regs))
		reg_free(SSP_CONTAINER(ep->regs.next, struct ssp_epreg, in_ep));
	x->dead = true;
	if (x->waiters <= 0)
		free(x);
}

void ssp_ep_drop_fd(struct ssp_sock *s, int fd)
{
	struct ssp_link *l = s->regs.next;

	while (l != &s->regs) {
		struct ssp_epreg *r = SSP_CONTAINER(l, struct ssp_epreg, in_sock);

		l = l->next;
		if (r->fd == fd)
			reg_free(r);
	}
}

/* Move ready accelerated registrations of @ep into @out (lock held). */
static int ep_collect(struct ssp_ep *ep, struct epoll_event *out, int max)
{
	struct ssp_link todo;
	int n = 0;

	if (ssp_list_empty(&ep->rdlist))
		return 0;
	/* Take the whole list: each entry is looked at once per call. */
	todo = ep->rdlist;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	ssp_list_init(&ep->rdlist);
	while (!ssp_list_empty(&todo)) {
		struct ssp_epreg *r = SSP_CONTAINER(todo.next, struct ssp_epreg, in_rd);
		uint32_t m;

		if (n == max) {
			/* Out of room: the rest stays queued, in order. */
			struct ssp_link *first = todo.next, *last = todo.prev;

			last->next = ep->rdlist.next;
			ep->rdlist.next->prev = last;
			ep->rdlist.next = first;
			first->prev = &ep->rdlist;
			break;
		}
		ssp_list_del(&r->in_rd);
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
	return n;
}

/* Drop the context's and the set's own eventfds from kernel results. */
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

/* Sleep in the kernel set until the deadline, a kernel fd, or a kick
 * (lock held, dropped meanwhile).  The kernel's answer, or -1 with errno;
 * *again set when events were pending and nothing was slept. */
static int ep_sleep(struct ep_x *x, struct epoll_event *evs, int max, int left,
		    const sigset_t *mask, bool *again)
{
	struct epoll_event wev = { .events = EPOLLIN, .data.u64 = SSP_EP_WAKE_MARK };
	struct ssp_waiter *w = left != 0 ? ssp_waiter_self() : NULL;
	int epfd = x->ep.epfd, k, err, role = -1;

	*again = false;
	if (w) {
		role = ssp_wait_begin(w);
		if (role < 0) {
			*again = true;
			return 0;
		}
		if (ssp_real.epoll_ctl(epfd, EPOLL_CTL_ADD, w->efd, &wev) < 0) {
			ssp_log_once("ep_waiter", "cannot add a waiter eventfd to an epoll set: "
				     "waits there nap");
			ssp_wait_end(w);
			w = NULL;
			role = -1;
		} else {
			ssp_list_add_tail(&x->sleepers, &w->in_ep);
		}
	}
	if (!w && left != 0 && (left < 0 || left > 5))
		left = 5; /* no eventfd of our own: nap and look again */
	ssp_unlock();
	k = real_wait(epfd, evs, max, left, mask);
	err = errno;
	ssp_lock();
	if (w) {
		ssp_list_del(&w->in_ep);
		if (!x->dead)
			ssp_real.epoll_ctl(epfd, EPOLL_CTL_DEL, w->efd, NULL);
		ssp_wait_end(w); /* pumps */
	} else {
		ssp_pump();
	}
	errno = err;
	return k;
}

/* Leave ssp_epoll_wait (lock held, released here): entries still queued
 * go on to another thread asleep on the set, as Linux's ep_poll wakes the
 * next waiter when its ready list is not empty. */
static void ep_leave(struct ep_x *x)
{
	x->waiters--;
	if (x->dead) {
		if (x->waiters <= 0)
			free(x);
	} else if (!ssp_list_empty(&x->ep.rdlist)) {
		ep_kick(x);
	}
	ssp_unlock();
}

int ssp_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask)
{
	int64_t deadline;
	struct ssp_ep *ep;
	struct ep_x *x;

	if (max <= 0 || !evs) {
		errno = EINVAL;
		return -1;
	}
	ssp_lock();
	ep = ep_get(epfd);
	if (!ep || ssp.mode != SSP_M_ON) {
		ssp_unlock();
		return real_wait(epfd, evs, max, timeout_ms, mask);
	}
	x = ep_x(ep);
	x->waiters++;
	deadline = ssp_deadline(timeout_ms);
	ssp_pump();
	for (;;) {
		int n, k, left, err;
		bool again;

		n = ep_collect(ep, evs, max);
		if (n > 0) {
			ep_leave(x);
			if (n < max) {
				k = ctx_filter(evs + n, real_wait(epfd, evs + n, max - n, 0, NULL));
				if (k > 0)
					n += k;
			}
			return n;
		}
		left = ssp_ms_left(deadline);
		k = ep_sleep(x, evs, max, left, mask, &again);
		err = errno;
		if (again) {
			ssp_pump();
			continue;
		}
		if (k < 0 || x->dead) {
			/* An error (EINTR: never restarted), or the set was
			 * closed meanwhile: what the kernel said. */
			ep_leave(x);
			if (k < 0) {
				errno = err;
				return -1;
			}
			return ctx_filter(evs, k);
		}
		k = ctx_filter(evs, k);
		if (k > 0 || left == 0) {
			n = k < max ? ep_collect(ep, evs + k, max - k) : 0;
			ep_leave(x);
			return k + n;
		}
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

	for (struct ssp_link *l = s->regs.next; l != &r->in_sock; l = l->next) {
		struct ssp_epreg *o = SSP_CONTAINER(l, struct ssp_epreg, in_sock);
		struct reg_x *ox = reg_x(o);

		if ((o->events & EPOLLEXCLUSIVE) && ox->excl_took && ox->excl_seq == s->seq)
			return false;
	}
	rx->excl_took = ep_x(r->ep)->waiters > 0 &&
			(ssp_sock_poll(s) & (r->events | EPOLLERR | EPOLLHUP) &
			 (EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP));
	rx->excl_seq = s->seq;
	return true;
}

/*
 * @ep's ready list just gained an entry, at its tail (ssp_sock_touch
 * appends, then calls this; lock held).  Exclusive registrations may give
 * the entry back (see excl_keep); otherwise a thread asleep on the set is
 * woken through the set's wake eventfd.
 */
void ssp_ep_wake(struct ssp_ep *ep)
{
	struct ssp_epreg *r;

	if (ssp_list_empty(&ep->rdlist))
		return;
	r = SSP_CONTAINER(ep->rdlist.prev, struct ssp_epreg, in_rd);
	if ((r->events & EPOLLEXCLUSIVE) && !excl_keep(r)) {
		ssp_list_del(&r->in_rd);
		r->on_rd = false;
		return;
	}
	ep_kick(ep_x(ep));
}
