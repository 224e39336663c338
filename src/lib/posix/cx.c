/* cx.c - POSIX layer contexts: their locks, a context per thread on first use, waiters and blocking. */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "posix/posix.h"

/* How long a thread waiting on a context other than 0 sleeps at most
 * while sockets are AWAY there (ssp.n_away). */
#define SSP_AWAY_NAP_MS 20

/* The context whose lock this thread holds (posix.h: ssp_unlock and
 * ssp_pump act on it); NULL when none. */
static __thread struct ssp_cx *held __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------- locks */

void ssp_glock(void)
{
	pthread_mutex_lock(&ssp.glock);
}

void ssp_gunlock(void)
{
	pthread_mutex_unlock(&ssp.glock);
}

void ssp_cx_lock(struct ssp_cx *cx)
{
	pthread_mutex_lock(&cx->lock);
	held = cx;
}

static void cx_handoff(struct ssp_cx *cx);

void ssp_unlock(void)
{
	struct ssp_cx *cx = held;

	held = NULL;
	/* Waiters there and no poller: one must take the role (cx.c). */
	if (!cx->poller && !ss_list_empty(&cx->waiters) && !cx->handoff)
		cx_handoff(cx);
	pthread_mutex_unlock(&cx->lock);
}

int ssp_fail_unlock(int err)
{
	ssp_unlock();
	errno = err;
	return -1;
}

struct ssp_cx *ssp_cx_held(void)
{
	return held;
}

void ssp_sock_relock(struct ssp_sock *s)
{
	struct ssp_cx *cx;

	/* s->cx changes only under both the old and the new lock, so once
	 * it names the held one it stays. */
	while ((cx = __atomic_load_n(&s->cx, __ATOMIC_ACQUIRE)) != held) {
		ssp_unlock();
		ssp_cx_lock(cx);
	}
}

void ssp_lock_all(void)
{
	for (unsigned i = 0; i < SSP_MAX_CX; i++)
		pthread_mutex_lock(&ssp.cx[i].lock);
	pthread_mutex_lock(&ssp.glock);
}

void ssp_unlock_all(void)
{
	pthread_mutex_unlock(&ssp.glock);
	for (unsigned i = SSP_MAX_CX; i-- > 0;)
		pthread_mutex_unlock(&ssp.cx[i].lock);
}

void ssp_unlock_all_but(struct ssp_cx *keep)
{
	for (unsigned i = SSP_MAX_CX; i-- > 0;)
		if (&ssp.cx[i] != keep)
			pthread_mutex_unlock(&ssp.cx[i].lock);
	held = keep;
}

void ssp_locks_reset(void)
{
	pthread_mutex_init(&ssp.glock, NULL);
	for (unsigned i = 0; i < SSP_MAX_CX; i++) {
		struct ssp_cx *cx = &ssp.cx[i];

		pthread_mutex_init(&cx->lock, NULL);
		ss_list_init(&cx->waiters);
		cx->poller = NULL;
		cx->handoff = NULL;
	}
	held = NULL;
}

/* ------------------------------------------------- a context per thread */

static __thread int mine_idx __attribute__((tls_model("initial-exec"))) = -1;
static __thread uint32_t mine_gen __attribute__((tls_model("initial-exec")));
static pthread_key_t mine_key;
static pthread_once_t mine_once = PTHREAD_ONCE_INIT;
static bool mine_key_ok;

/* The thread's value of mine_key: generation << 8 | index + 1. */
static void mine_release(void *p)
{
	uintptr_t v = (uintptr_t)p;
	unsigned idx = (unsigned)(v & 0xff) - 1;

	ssp_glock();
	if ((uint32_t)(v >> 8) == ssp.cx_gen && idx < ssp.n_cx && ssp.cx[idx].users)
		ssp.cx[idx].users--;
	ssp_gunlock();
}

static void mine_key_make(void)
{
	mine_key_ok = pthread_key_create(&mine_key, mine_release) == 0;
}

unsigned ssp_cx_pick(const unsigned *users, unsigned n)
{
	unsigned best = 0;

	for (unsigned i = 1; i < n; i++)
		if (users[i] < users[best])
			best = i;
	return best;
}

void ssp_cx_setup(void)
{
	unsigned n = ss_app_n_ctx(ssp.app);

	ssp.n_cx = n;
	for (unsigned i = 0; i < SSP_MAX_CX; i++) {
		struct ssp_cx *cx = &ssp.cx[i];

		cx->idx = i;
		cx->users = 0;
		cx->n_deferred = 0; /* (a child's: the parent's business) */
		cx->ctx = i < n ? ss_ctx_get(ssp.app, i) : NULL;
		cx->evfd = i < n ? ss_ctx_fd(cx->ctx) : -1;
		cx->n_sets = 0; /* (a child's sets join again: fork.c) */
	}
	__atomic_store_n(&ssp.cx_gen, ssp.cx_gen + 1, __ATOMIC_RELEASE);
}

struct ssp_cx *ssp_cx_mine(void)
{
	unsigned users[SSP_MAX_CX], i;
	uint32_t gen;

	if (mine_idx >= 0 && mine_gen == __atomic_load_n(&ssp.cx_gen, __ATOMIC_ACQUIRE))
		return &ssp.cx[mine_idx];
	pthread_once(&mine_once, mine_key_make);
	ssp_glock();
	for (i = 0; i < ssp.n_cx; i++)
		users[i] = ssp.cx[i].users;
	i = ssp_cx_pick(users, ssp.n_cx ? ssp.n_cx : 1);
	ssp.cx[i].users++;
	gen = ssp.cx_gen;
	ssp_gunlock();
	mine_idx = (int)i;
	mine_gen = gen;
	if (mine_key_ok)
		pthread_setspecific(mine_key, (void *)((uintptr_t)gen << 8 | (i + 1)));
	return &ssp.cx[i];
}

/* ---------------------------------------------------------------- waiters */

/*
 * Several threads may block at once on one context.  Only one of them,
 * the poller, arms the context (sets the sleeping flag the service looks
 * at) and waits on its eventfd; the others wait on their own eventfd.
 * Whoever pumps events (ssp_cx_pump) wakes the waiters the events may
 * concern, and only those: a socket's events wake the threads blocked in
 * a call on that socket (ssp_sock_touch) and the threads asleep on an
 * epoll set that holds it (its ready list gains an entry: epoll.c);
 * poll/select waiters and fork waits (SSP_WK_ALL) wake for any event;
 * events that are no one socket's (fork, bind, errors) wake everyone.
 * A thread waking on the other vCPU costs more than all the bookkeeping,
 * so nobody is woken "in case" (memcached's workers sleep on the
 * acceptor's context: each event used to wake all of them).
 *
 * A pump by a thread other than the poller leaves the arming alone
 * (ss_poll_keep_armed): the poller sleeps on, still signalled by the
 * service, instead of being woken to arm again.  When the poller itself
 * leaves, the context must not stay without one while others sleep on
 * it: whoever releases the context's lock (ssp_unlock) with waiters
 * there and no poller kicks one of them (cx->handoff), which takes the
 * role when it registers again; a poller that comes back within the
 * same hold of the lock (epoll_wait's pass) keeps it and kicks nobody.
 *
 * Only the poller ever arms, so two blocked threads never disarm each
 * other in a loop.  A thread waiting on several contexts (poll, epoll)
 * registers on each, under each one's lock in turn.  Its eventfd is read
 * once before a pass that takes it off its contexts (and looks at each),
 * never in the middle of one: a kick that arrives during the pass (for a
 * context the pass is done with) must stay pending, so that the next
 * sleep ends at once and the pass runs again.
 */
static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;
static uint64_t waiter_ids;
static bool waiter_key_ok;

static void waiter_free(void *p)
{
	struct ssp_waiter *w = p;

	ssp_ep_waiter_gone(w);
	if (w->efd >= 0)
		ss_sys_close(w->efd);
	free(w->owns);
	free(w);
}

static void waiter_key_make(void)
{
	if (pthread_key_create(&waiter_key, waiter_free) != 0)
		waiter_key = (pthread_key_t)-1;
	else
		__atomic_store_n(&waiter_key_ok, true, __ATOMIC_RELEASE);
}

struct ssp_waiter *ssp_waiter_self(void)
{
	struct ssp_waiter *w;

	pthread_once(&waiter_once, waiter_key_make);
	if (waiter_key == (pthread_key_t)-1)
		return NULL;
	w = pthread_getspecific(waiter_key);
	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	for (unsigned i = 0; i < SSP_MAX_CX; i++)
		ss_list_init(&w->link[i]);
	ss_list_init(&w->in_ep);
	w->id = __atomic_add_fetch(&waiter_ids, 1, __ATOMIC_RELAXED);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0 || pthread_setspecific(waiter_key, w) != 0) {
		ssp_log_once("waiter", "no eventfd for a waiting thread: it naps instead");
		waiter_free(w);
		return NULL;
	}
	return w;
}

void ssp_waiter_atfork_child(void)
{
	struct ssp_waiter *w;

	if (!__atomic_load_n(&waiter_key_ok, __ATOMIC_ACQUIRE) ||
	    !(w = pthread_getspecific(waiter_key)))
		return;
	if (w->efd >= 0)
		ss_sys_close(w->efd);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->id = __atomic_add_fetch(&waiter_ids, 1, __ATOMIC_RELAXED);
	w->kicked = 0;
	w->sleep_ep = NULL;
	w->ep_fail = false;
	/* The parent's sets forgot their owners here (ssp_ep_atfork_child);
	 * the locks of those no longer in the table may be held by threads
	 * the child does not have: never look at them. */
	w->n_owns = 0;
	if (w->efd < 0) {
		/* No eventfd: this thread naps from now on. */
		pthread_setspecific(waiter_key, NULL);
		free(w->owns);
		free(w);
	}
}

void ssp_waiter_kick(struct ssp_waiter *w)
{
	uint64_t one = 1;

	/* One write until the waiter drains: its eventfd is readable. */
	if (__atomic_exchange_n(&w->kicked, 1, __ATOMIC_ACQ_REL))
		return;
	if (ss_sys_write(w->efd, &one, sizeof(one)) < 0)
		return; /* counter saturated: it is readable anyway */
}

static void poller_set(struct ssp_cx *cx, struct ssp_waiter *w)
{
	__atomic_store_n(&cx->poller, w, __ATOMIC_RELEASE);
}

static uint8_t kind_of(const struct ssp_waiter *w)
{
	return __atomic_load_n(&w->kind, __ATOMIC_RELAXED);
}

static struct ssp_waiter *link_waiter(struct ssp_cx *cx, struct ss_list *l)
{
	return SS_CONTAINER_OF(l, struct ssp_waiter, link[cx->idx]);
}

void ssp_cx_kick(struct ssp_cx *cx)
{
	for (struct ss_list *l = cx->waiters.next; l != &cx->waiters; l = l->next)
		ssp_waiter_kick(link_waiter(cx, l));
}

void ssp_sock_kick_blocked(struct ssp_sock *s)
{
	struct ssp_cx *cx = s->cx;

	for (struct ss_list *l = cx->waiters.next; l != &cx->waiters; l = l->next) {
		struct ssp_waiter *w = link_waiter(cx, l);

		if (kind_of(w) == SSP_WK_SOCK && w->sock == s)
			ssp_waiter_kick(w);
	}
}

/* The context's lock is about to go (ssp_unlock): a context with waiters
 * and no poller gets one.  A thread asleep in epoll_wait is made the
 * poller where it sleeps (epoll.c), without waking it; else the oldest
 * waiter is kicked (once) and takes the role when it registers again. */
static void cx_handoff(struct ssp_cx *cx)
{
	struct ssp_waiter *w;

	if (!cx->waiters.next)
		return; /* (lists not set up: never attached) */
	for (struct ss_list *l = cx->waiters.next; l != &cx->waiters; l = l->next) {
		w = link_waiter(cx, l);
		if (kind_of(w) == SSP_WK_EP && ssp_ep_poller_give(w, cx))
			return;
	}
	w = link_waiter(cx, ss_list_first(&cx->waiters));
	cx->handoff = w;
	ssp_waiter_kick(w);
}

int ssp_wait_begin(struct ssp_waiter *w, struct ssp_cx *cx)
{
	struct ssp_waiter *p = cx->poller;

	/* Whatever this thread queued must reach the service before it
	 * sleeps (the poller's arm flushes too; a follower must as well). */
	ss_flush(cx->ctx);
	if (!p) {
		if (ss_ctx_arm(cx->ctx))
			return -1;
		poller_set(cx, w);
		cx->handoff = NULL;
	} else if (p != w && kind_of(w) == SSP_WK_EP && kind_of(p) == SSP_WK_EP) {
		/* The thread that sleeps last is the likeliest to be the one
		 * the next events are for (it just served its own): it takes
		 * the role, the other sleeps on untouched (epoll.c). */
		ssp_ep_poller_take(p, cx, w);
	}
	ss_list_add_tail(&cx->waiters, &w->link[cx->idx]);
	return cx->poller == w;
}

void ssp_waiter_drain(struct ssp_waiter *w)
{
	uint64_t v;

	/* Every kick sets the flag before it writes: no flag, nothing to
	 * read (a kick after the exchange is read next time). */
	if (!__atomic_exchange_n(&w->kicked, 0, __ATOMIC_ACQ_REL))
		return;
	if (ss_sys_read(w->efd, &v, sizeof(v)) < 0)
		__atomic_store_n(&w->kicked, 1, __ATOMIC_RELEASE); /* its write is on its way */
}

void ssp_wait_end_all(struct ssp_waiter *w, uint64_t reg)
{
	if (reg)
		ssp_waiter_drain(w); /* before the pass, never within */
	for (unsigned j = 0; reg; j++) {
		if (!(reg & 1ull << j))
			continue;
		reg &= ~(1ull << j);
		ssp_cx_lock(&ssp.cx[j]);
		ssp_wait_end(w, &ssp.cx[j]);
		ssp_unlock();
	}
}

void ssp_wait_end(struct ssp_waiter *w, struct ssp_cx *cx)
{
	ss_list_del_init(&w->link[cx->idx]);
	if (cx->poller == w)
		poller_set(cx, NULL);
	if (cx->handoff == w)
		cx->handoff = NULL;
	ssp_cx_pump(cx);
}

void ssp_wake_others(struct ssp_cx *cx, bool events, bool broad)
{
	if (!events)
		return;
	for (struct ss_list *l = cx->waiters.next; l != &cx->waiters; l = l->next) {
		struct ssp_waiter *w = link_waiter(cx, l);

		if (broad || kind_of(w) == SSP_WK_ALL)
			ssp_waiter_kick(w);
	}
}

/* ----------------------------------------------------------- cancellation */

/* This thread's call into the layer (posix.h, "Cancellation"): nesting
 * depth, whether it is a cancellation point, whether ssp_nocancel turned
 * cancellation off in it and the state it found then. */
static __thread struct {
	int depth;
	int state;
	bool point;
	bool off;
} call __attribute__((tls_model("initial-exec")));

void ssp_call_enter(bool point)
{
	if (call.depth++ > 0)
		return;
	/* libc acts on a pending cancellation at the entry of a
	 * cancellation point: nothing is held yet.  (A load of the thread's
	 * cancellation word, no store.) */
	if (point)
		pthread_testcancel();
	call.point = point;
}

void ssp_call_leave(void)
{
	if (--call.depth == 0 && call.off) {
		call.off = false;
		pthread_setcancelstate(call.state, NULL);
	}
}

void ssp_nocancel(void)
{
	if (call.depth == 0 || call.off)
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &call.state);
	call.off = true;
}

struct cancel_undo {
	void (*undo)(void *);
	void *arg;
};

/* The cleanup handler of a cancellable sleep: the caller's undo, then the
 * call is over (whatever the thread's own cleanup handlers call next
 * enters the layer afresh; the thread's state is the one it had). */
static void cancel_cleanup(void *arg)
{
	const struct cancel_undo *u = arg;

	if (u->undo)
		u->undo(u->arg);
	call.depth = 0;
	call.off = false;
}

int ssp_cancellable(int (*sleep)(void *), void *arg, void (*undo)(void *), void *uarg)
{
	struct cancel_undo u = { undo, uarg };
	volatile bool on;
	volatile int rc, err;

	/* A call that is no cancellation point never acts on one. */
	if (call.depth > 0 && !call.point)
		ssp_nocancel();
	/* Turned off earlier in this call: on again for the sleep, if the
	 * thread had it on.  Else the thread's own state rules the sleep. */
	on = call.off && call.point && call.state == PTHREAD_CANCEL_ENABLE;
	pthread_cleanup_push(cancel_cleanup, &u);
	if (on)
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	rc = sleep(arg);
	err = errno;
	if (on)
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_pop(0);
	errno = err;
	return rc;
}

/* ---------------------------------------------------------------- waiting */

void ssp_away_set(struct ssp_sock *s, bool away)
{
	if (away && !s->away_counted && s->cx != &ssp.cx[0]) {
		s->away_counted = true;
		__atomic_add_fetch(&ssp.n_away, 1, __ATOMIC_RELEASE);
	} else if (!away && s->away_counted) {
		s->away_counted = false;
		__atomic_sub_fetch(&ssp.n_away, 1, __ATOMIC_RELEASE);
	}
}

static bool away_elsewhere(const struct ssp_cx *cx)
{
	return cx != &ssp.cx[0] && __atomic_load_n(&ssp.n_away, __ATOMIC_ACQUIRE) > 0;
}

void ssp_away_pump(void)
{
	struct ssp_cx *cx = held;

	if (!cx || !away_elsewhere(cx))
		return;
	ssp_unlock();
	ssp_cx_lock(&ssp.cx[0]);
	ssp_cx_pump(&ssp.cx[0]);
	ssp_unlock();
	ssp_cx_lock(cx);
}

int64_t ssp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ssp_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : ssp_now_ms() + timeout_ms;
}

/* Milliseconds to @deadline_ms for poll(): -1 forever, 0 when passed. */
int ssp_ms_left(int64_t deadline_ms)
{
	int64_t left;

	if (deadline_ms < 0)
		return -1;
	left = deadline_ms - ssp_now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/* The sleep of ssp_block: one poll (or ppoll) with no lock held. */
struct block_sleep {
	struct pollfd *pfd;
	nfds_t n;
	int left;               /* ms, -1: none */
	const sigset_t *mask;
};

static int block_sleep(void *arg)
{
	const struct block_sleep *b = arg;
	struct timespec ts = { b->left / 1000, (b->left % 1000) * 1000000L };

	if (b->mask)
		return ssp_real.ppoll(b->pfd, b->n, b->left < 0 ? NULL : &ts, b->mask);
	return ssp_real.poll(b->pfd, b->n, b->left);
}

/* What a thread cancelled in that sleep undoes. */
struct block_undo {
	struct ssp_cx *cx;
	struct ssp_waiter *w;   /* registered on cx, NULL: a nap */
	struct ssp_sock *s;     /* held by the caller (ssp_block's rule), or NULL */
};

/* Off the context (a poller hands its role on as it leaves: ssp_unlock),
 * and the caller's hold on its socket dropped. */
static void block_undo(void *arg)
{
	const struct block_undo *u = arg;

	ssp_cx_lock(u->cx);
	if (u->w) {
		if (u->s)
			__atomic_sub_fetch(&u->s->n_blocked, 1, __ATOMIC_RELAXED);
		ssp_waiter_drain(u->w);
		ssp_wait_end(u->w, u->cx);
	}
	if (u->s) {
		ssp_sock_relock(u->s);
		ssp_sock_unhold(u->s);
	}
	ssp_unlock();
}

/* The sleep, a cancellation point with @u to undo when @cancel, else
 * none, even in a call that is one (ssp_block_until). */
static int block_sleep_as(struct block_sleep *b, struct block_undo *u, bool cancel)
{
	if (cancel)
		return ssp_cancellable(block_sleep, b, block_undo, u);
	ssp_nocancel();
	return block_sleep(b);
}

/* ssp_block without following @s (blocked in a call on it, or NULL);
 * @cancel: the sleep is a cancellation point (ssp_block, not _until). */
static int block_held(struct ssp_sock *s, int64_t deadline_ms, const sigset_t *mask,
		      bool cancel)
{
	struct ssp_cx *cx = held;
	struct ssp_waiter *w = ssp_waiter_self();
	struct pollfd pfd[2];
	struct block_sleep b = { pfd, 0, 0, mask };
	struct block_undo u = { cx, w, s };
	int left, rc, err, role, n = 0;

	left = ssp_ms_left(deadline_ms);
	if (away_elsewhere(cx) && (left < 0 || left > SSP_AWAY_NAP_MS))
		left = SSP_AWAY_NAP_MS; /* and look at context 0 (ssp_away_pump) */
	if (!w) {
		/* No eventfd of our own: nap briefly and re-check. */
		ssp_cx_pump(cx);
		if (left == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ssp_unlock();
		b.left = left < 0 || left > 5 ? 5 : left;
		b.mask = NULL;
		rc = block_sleep_as(&b, &u, cancel);
		ssp_cx_lock(cx);
		ssp_cx_pump(cx);
		ssp_away_pump();
		return 0;
	}
	__atomic_store_n(&w->kind, s ? SSP_WK_SOCK : SSP_WK_ALL, __ATOMIC_RELAXED);
	w->sock = s;
	role = ssp_wait_begin(w, cx);
	if (role < 0) {
		ssp_cx_pump(cx);
		return 0;
	}
	if (left == 0) {
		ssp_wait_end(w, cx);
		errno = ETIMEDOUT;
		return -1;
	}
	if (s)
		__atomic_add_fetch(&s->n_blocked, 1, __ATOMIC_RELAXED);
	pfd[n++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	if (role == 1)
		pfd[n++] = (struct pollfd){ .fd = cx->evfd, .events = POLLIN };
	ssp_unlock();
	b.n = (nfds_t)n;
	b.left = left;
	rc = block_sleep_as(&b, &u, cancel);
	err = errno;
	ssp_cx_lock(cx);
	if (s)
		__atomic_sub_fetch(&s->n_blocked, 1, __ATOMIC_RELAXED);
	ssp_waiter_drain(w);
	ssp_wait_end(w, cx);
	ssp_away_pump();
	if (rc < 0 && err == EINTR) {
		errno = EINTR;
		return -1;
	}
	return 0;
}

/* ssp_block, cancellable or not. */
static int block(struct ssp_sock *s, int64_t deadline_ms, const sigset_t *mask, bool cancel)
{
	int rc = block_held(s, deadline_ms, mask, cancel), err = errno;

	if (s)
		ssp_sock_relock(s); /* it may have moved to context 0 meanwhile */
	errno = err;
	return rc;
}

int ssp_block(struct ssp_sock *s, int64_t deadline_ms, const sigset_t *mask)
{
	return block(s, deadline_ms, mask, true);
}

bool ssp_block_until(struct ssp_sock *s, const bool *done, int64_t deadline_ms)
{
	while (!*done)
		if (block(s, deadline_ms, NULL, false) < 0 && errno == ETIMEDOUT)
			return false;
	return true;
}
