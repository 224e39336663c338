/* poll.c - POSIX layer poll/ppoll/select/pselect over a mix of accelerated and kernel fds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * One-shot readiness: accelerated fds are answered from the socket state;
 * kernel fds go to the real poll with this thread's waiter eventfd (and,
 * for the poller, the context eventfd) appended, so a service event or a
 * pump by another thread ends the sleep; then the accelerated fds are
 * looked at again.
 */

#define POLL_STACK 64
#define POLL_NAP_MS 5   /* the sleep step when no waiter eventfd can be had */

/* Fill the revents of accelerated entries; kernel ones get fd -1 in @k. */
static int scan(struct pollfd *fds, nfds_t n, struct pollfd *k)
{
	int ready = 0;

	for (nfds_t i = 0; i < n; i++) {
		struct ssp_sock *s = fds[i].fd >= 0 ? ssp_fd_sock(fds[i].fd) : NULL;

		k[i] = fds[i];
		k[i].revents = 0;
		if (!s)
			continue;
		k[i].fd = -1;
		fds[i].revents = (short)(ssp_sock_poll(s) &
					 ((uint16_t)fds[i].events | POLLERR | POLLHUP));
		if (fds[i].revents)
			ready++;
	}
	return ready;
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

int ssp_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct pollfd stack[POLL_STACK], *k = stack;
	struct ssp_waiter *x = ssp_waiter_self();
	int64_t deadline;
	int rc;

	ssp_lock();
	if (ssp.mode != SSP_M_ON) {
		ssp_unlock();
		return real_poll(fds, n, timeout_ms, mask);
	}
	if (n + 2 > POLL_STACK) {
		k = malloc((n + 2) * sizeof(*k));
		if (!k) {
			ssp_unlock();
			errno = ENOMEM;
			return -1;
		}
	}
	deadline = ssp_deadline(timeout_ms);
	for (;;) {
		int ready, left, kr, err, role = -1;
		nfds_t extra = 0;

		ssp_pump();
		ready = scan(fds, n, k);
		if (ready) {
			ssp_unlock();
			kr = real_poll(k, n, 0, NULL);
			rc = ready + (kr >= 0 ? merge(fds, n, k) : 0); /* clears stale kernel revents too */
			break;
		}
		left = ssp_ms_left(deadline);
		if (left != 0 && x) {
			role = ssp_wait_begin(x);
			if (role < 0)
				continue; /* events pending: pump and look again */
			k[n + extra++] = (struct pollfd){ .fd = x->efd, .events = POLLIN };
			if (role == 1)
				k[n + extra++] = (struct pollfd){ .fd = ssp.evfd, .events = POLLIN };
		} else if (left != 0 && (left < 0 || left > POLL_NAP_MS)) {
			left = POLL_NAP_MS;
		}
		ssp_unlock();
		kr = real_poll(k, n + extra, left, mask);
		err = errno;
		ssp_lock();
		if (role >= 0)
			ssp_wait_end(x); /* pumps */
		else
			ssp_pump();
		if (kr < 0) {
			ssp_unlock();
			errno = err;
			rc = -1;
			break;
		}
		kr = merge(fds, n, k);
		ready = 0;
		for (nfds_t i = 0; i < n; i++) {
			struct ssp_sock *s = fds[i].fd >= 0 ? ssp_fd_sock(fds[i].fd) : NULL;

			if (!s)
				continue;
			fds[i].revents = (short)(ssp_sock_poll(s) &
						 ((uint16_t)fds[i].events | POLLERR | POLLHUP));
			if (fds[i].revents)
				ready++;
		}
		if (kr + ready > 0 || left == 0) {
			ssp_unlock();
			rc = kr + ready;
			break;
		}
	}
	if (k != stack)
		free(k);
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
	rc = ssp_poll(p, n, timeout_ms, mask);
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
