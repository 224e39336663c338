/* poll.c - POSIX layer poll/ppoll/select/pselect over a mix of accelerated and kernel fds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * One-shot readiness: accelerated fds are answered from the socket state,
 * context by context under each one's lock (pumped first); kernel fds go
 * to the real poll with this thread's waiter eventfd (and, for contexts
 * where it is the poller, their eventfds) appended, so a service event or
 * a pump by another thread ends the sleep; then the accelerated fds are
 * looked at again.  A thread that finds nothing registers as a waiter on
 * each context right after looking at it, under the same lock hold, so
 * no event between the look and the sleep is missed.
 */

#define POLL_STACK 64
#define POLL_NAP_MS 5   /* the sleep step when no waiter eventfd can be had */


/*
 * Fill the revents of accelerated entries of @fds (nothing held); kernel
 * ones are copied to @k, accelerated ones get fd -1 there.  @w is taken
 * off the contexts in @old first (where it slept: each one under the same
 * lock hold as the look, so a poller that comes back keeps the role, see
 * cx.c).  With @sleep (the caller sleeps unless something is ready), @w
 * is registered on every context looked at while nothing was ready
 * (*@reg; *@pollers: those where it armed the context), and taken off
 * again when something was.  Returns how many accelerated entries are
 * ready, or -1 when events came during a registration (look again).
 */
static int scan(struct pollfd *fds, nfds_t n, struct pollfd *k, struct ssp_waiter *w,
		uint64_t old, bool sleep, uint64_t *reg, uint64_t *pollers)
{
	uint64_t cxs = 0, done = 0, now = 0, polled = 0;
	bool again = false;
	int ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		struct ssp_sock *s = fds[i].fd >= 0 ? ssp_fd_sock(fds[i].fd) : NULL;

		k[i] = fds[i];
		k[i].revents = 0;
		if (!s)
			continue;
		k[i].fd = -1;
		k[i].revents = 1; /* accelerated, not looked at yet */
		fds[i].revents = 0;
		cxs |= 1ull << __atomic_load_n(&s->cx, __ATOMIC_ACQUIRE)->idx;
	}
	if (cxs && __atomic_load_n(&ssp.n_away, __ATOMIC_ACQUIRE) > 0)
		cxs |= 1; /* connections come back on context 0 (cx.c) */
	if (old)
		ssp_waiter_drain(w); /* before the pass, never within (cx.c) */
	if (sleep) {
		w->kind = SSP_WK_ALL;
		w->sock = NULL;
	}
	while ((cxs | old) & ~done) {
		for (unsigned j = 0; j < ssp.n_cx; j++) {
			struct ssp_cx *cx = &ssp.cx[j];
			uint64_t bit = 1ull << j;

			if (!((cxs | old) & ~done & bit))
				continue;
			done |= bit;
			ssp_cx_lock(cx);
			if (old & bit)
				ssp_wait_end(w, cx); /* pumps */
			else
				ssp_cx_pump(cx);
			for (nfds_t i = 0; i < n && (cxs & bit); i++) {
				struct ssp_sock *s;

				if (!k[i].revents)
					continue;
				s = ssp_fd_sock(fds[i].fd);
				if (!s || s->cx != cx)
					continue;
				k[i].revents = 0;
				fds[i].revents = (short)(ssp_sock_poll(s) &
							 ((uint16_t)fds[i].events | POLLERR | POLLHUP));
				if (fds[i].revents)
					ready++;
			}
			if (sleep && !ready && !again && (cxs & bit)) {
				int role = ssp_wait_begin(w, cx);

				if (role < 0) {
					again = true;
				} else {
					now |= bit;
					if (role == 1)
						polled |= bit;
				}
			}
			ssp_unlock();
		}
		/* Sockets that moved meanwhile are looked at where they are
		 * now; fds closed meanwhile go to the kernel. */
		for (nfds_t i = 0; i < n; i++) {
			struct ssp_sock *s;

			if (!k[i].revents)
				continue;
			s = ssp_fd_sock(fds[i].fd);
			if (s && !(done & 1ull << __atomic_load_n(&s->cx, __ATOMIC_ACQUIRE)->idx)) {
				cxs |= 1ull << s->cx->idx;
			} else if (!s || !(cxs & ~done)) {
				k[i] = fds[i];
				k[i].revents = 0;
			}
		}
	}
	if ((ready || again) && now) {
		ssp_wait_end_all(w, now);
		now = polled = 0;
	}
	*reg = now;
	*pollers = polled;
	return !ready && again ? -1 : ready;
}

/* Copy kernel results back; returns how many kernel entries are ready. */
static int merge(struct pollfd *fds, nfds_t n, const struct pollfd *k)
{
	int ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		if (k[i].fd < 0 && fds[i].fd >= 0)
			continue; /* accelerated */
		fds[i].revents = k[i].revents;
		if (k[i].revents)
			ready++;
	}
	return ready;
}

static int real_poll(struct pollfd *k, nfds_t n, int timeout, const sigset_t *mask)
{
	struct timespec ts = { timeout / 1000, (timeout % 1000) * 1000000L };

	if (!mask)
		return ssp_real.poll(k, n, timeout);
	return ssp_real.ppoll(k, n, timeout < 0 ? NULL : &ts, mask);
}

/* The kernel fds' readiness now, never sleeping: no cancellation point
 * (@k may be on the heap). */
static int kernel_look(struct pollfd *k, nfds_t n)
{
	struct timespec ts = { 0, 0 };

	return (int)syscall(SYS_ppoll, k, n, &ts, NULL, (size_t)8);
}

/* The sleep of ssp_poll, and what a thread cancelled there undoes: off
 * the contexts it waits on (a poller hands its role on), the copy freed. */
struct poll_sleep {
	struct pollfd *k;
	nfds_t n;
	int timeout;
	const sigset_t *mask;
	struct ssp_waiter *w;
	uint64_t reg;
	struct pollfd *heap;    /* k when malloc'ed */
};

static int poll_sleep(void *arg)
{
	const struct poll_sleep *p = arg;

	return real_poll(p->k, p->n, p->timeout, p->mask);
}

static void poll_undo(void *arg)
{
	const struct poll_sleep *p = arg;

	if (p->reg)
		ssp_wait_end_all(p->w, p->reg);
	free(p->heap);
}

int ssp_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct pollfd stack[POLL_STACK + 1 + SSP_MAX_CX], *k = stack;
	struct ssp_waiter *w;
	uint64_t reg = 0, pollers = 0;
	bool slept = false;
	int64_t deadline;
	int rc, kr = 0;

	if (ssp_mode() != SSP_M_ON) {
		struct poll_sleep ps = { fds, n, timeout_ms, mask, NULL, 0, NULL };

		return ssp_cancellable(poll_sleep, &ps, NULL, NULL);
	}
	w = timeout_ms != 0 ? ssp_waiter_self() : NULL;
	if (n > POLL_STACK) {
		k = malloc((n + 1 + SSP_MAX_CX) * sizeof(*k));
		if (!k) {
			errno = ENOMEM;
			return -1;
		}
	}
	deadline = ssp_deadline(timeout_ms);
	for (;;) {
		int ready, left = ssp_ms_left(deadline), err;
		/* After a sleep: kernel fds ready (kr) end it as well. */
		bool sleep = left != 0 && w && kr == 0;
		nfds_t extra = 0;

		ready = scan(fds, n, k, w, reg, sleep, &reg, &pollers);
		if (ready < 0)
			continue; /* events pending: pump and look again */
		if (slept && (kr + ready > 0 || left == 0)) {
			rc = kr + ready; /* kernel fds as the sleep left them */
			break;
		}
		if (ready) {
			kr = kernel_look(k, n);
			rc = ready + (kr >= 0 ? merge(fds, n, k) : 0); /* clears stale kernel revents too */
			break;
		}
		if (sleep) {
			k[n + extra++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
			for (unsigned j = 0; j < ssp.n_cx; j++)
				if (pollers & 1ull << j)
					k[n + extra++] = (struct pollfd){ .fd = ssp.cx[j].evfd,
									 .events = POLLIN };
		} else if (left != 0 && (left < 0 || left > POLL_NAP_MS)) {
			left = POLL_NAP_MS;
		}
		{
			struct poll_sleep ps = { k, n + extra, left, mask, w, reg,
						 k != stack ? k : NULL };

			kr = ssp_cancellable(poll_sleep, &ps, poll_undo, &ps);
		}
		err = errno;
		slept = true;
		if (kr < 0) {
			ssp_wait_end_all(w, reg); /* pumps */
			errno = err;
			rc = -1;
			break;
		}
		/* The next scan takes us off the contexts (pumping them) and
		 * looks again, under the same lock holds. */
		kr = merge(fds, n, k);
	}
	if (k != stack)
		free(k);
	return rc;
}

/* ssp_poll for ssp_select: a thread cancelled there frees @heap too. */
static int select_poll(struct pollfd *p, nfds_t n, int timeout_ms, const sigset_t *mask,
		       struct pollfd *heap)
{
	volatile int rc;

	pthread_cleanup_push(free, heap);
	rc = ssp_poll(p, n, timeout_ms, mask);
	pthread_cleanup_pop(0);
	return rc;
}

int ssp_select(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout_ms,
	       const sigset_t *mask)
{
	struct pollfd stack[POLL_STACK], *p = stack;
	nfds_t n = 0;
	int rc, count = 0;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e)))
			n++;
	if (n > POLL_STACK) {
		p = malloc(n * sizeof(*p));
		if (!p) {
			errno = ENOMEM;
			return -1;
		}
	}
	n = 0;
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((r && FD_ISSET(fd, r) ? POLLIN : 0) |
				   (w && FD_ISSET(fd, w) ? POLLOUT : 0) |
				   (e && FD_ISSET(fd, e) ? POLLPRI : 0));

		if (ev)
			p[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	rc = select_poll(p, n, timeout_ms, mask, p != stack ? p : NULL);
	if (rc >= 0) {
		for (nfds_t i = 0; i < n; i++)
			if (p[i].revents & POLLNVAL) {
				rc = -1;
				errno = EBADF;
			}
	}
	if (rc >= 0) {
		if (r)
			FD_ZERO(r);
		if (w)
			FD_ZERO(w);
		if (e)
			FD_ZERO(e);
		for (nfds_t i = 0; i < n; i++) {
			short re = p[i].revents;

			if (r && (p[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
				FD_SET(p[i].fd, r);
				count++;
			}
			if (w && (p[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
				FD_SET(p[i].fd, w);
				count++;
			}
			if (e && (p[i].events & POLLPRI) && (re & POLLPRI)) {
				FD_SET(p[i].fd, e);
				count++;
			}
		}
		rc = count;
	}
	if (p != stack)
		free(p);
	return rc;
}
