/* epoll.c - POSIX layer epoll: accelerated fds kept beside a real kernel epoll set. */
#include <errno.h>
#include <stdlib.h>

#include "posix/posix.h"

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
 */

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

	if (ep)
		return ep;
	if (ssp_fd_get(epfd)) {
		errno = EINVAL; /* an accelerated socket is no epoll set */
		return NULL;
	}
	if (ssp_real.epoll_ctl(epfd, EPOLL_CTL_ADD, ssp.evfd, &ev) < 0)
		return NULL; /* EBADF, EINVAL: not an epoll fd */
	ep = calloc(1, sizeof(*ep));
	if (!ep || ssp_fd_set(epfd, &ep->f) < 0) {
		free(ep);
		ssp_real.epoll_ctl(epfd, EPOLL_CTL_DEL, ssp.evfd, NULL);
		errno = ENOMEM;
		return NULL;
	}
	ep->f.type = SSP_F_EPOLL;
	ep->epfd = epfd;
	ep->has_ctx = true;
	ssp_list_init(&ep->regs);
	ssp_list_init(&ep->rdlist);
	return ep;
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
	free(r);
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
	if (epfd == fd) {
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
		if (!ev) {
			err = EFAULT;
			break;
		}
		r = calloc(1, sizeof(*r));
		if (!r) {
			err = ENOMEM;
			break;
		}
		r->ep = ep;
		r->sock = s;
		r->fd = fd;
		ssp_list_add_tail(&s->regs, &r->in_sock);
		ssp_list_add_tail(&ep->regs, &r->in_ep);
		ssp_list_init(&r->in_rd);
		reg_arm(r, ev);
		break;
	case EPOLL_CTL_MOD:
		if (!r)
			err = ENOENT;
		else if (!ev)
			err = EFAULT;
		else
			reg_arm(r, ev);
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

void ssp_ep_free(struct ssp_ep *ep)
{
	while (!ssp_list_empty(&ep->regs))
		reg_free(SSP_CONTAINER(ep->regs.next, struct ssp_epreg, in_ep));
	free(ep);
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

/* Drop the context eventfd's entries from kernel results. */
static int ctx_filter(struct epoll_event *evs, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (evs[i].data.u64 != SSP_EP_CTX_MARK)
			evs[k++] = evs[i];
	return k;
}

static int real_wait(int epfd, struct epoll_event *evs, int max, int timeout,
		     const sigset_t *mask)
{
	return mask ? ssp_real.epoll_pwait(epfd, evs, max, timeout, mask)
		    : ssp_real.epoll_wait(epfd, evs, max, timeout);
}

int ssp_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask)
{
	int64_t deadline;
	struct ssp_ep *ep;

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
	deadline = ssp_deadline(timeout_ms);
	for (;;) {
		int n, k, left, err;

		ssp_pump();
		n = ep_collect(ep, evs, max);
		if (n > 0) {
			ssp_unlock();
			if (n < max) {
				k = ctx_filter(evs + n, real_wait(epfd, evs + n, max - n, 0, NULL));
				if (k > 0)
					n += k;
			}
			return n;
		}
		left = ssp_ms_left(deadline);
		if (left != 0 && ss_ctx_arm(ssp.ctx))
			continue; /* events arrived meanwhile */
		ssp_unlock();
		k = real_wait(epfd, evs, max, left, mask);
		err = errno;
		if (k < 0) {
			errno = err;
			return -1;
		}
		k = ctx_filter(evs, k);
		ssp_lock();
		ep = ep_get(epfd);
		if (!ep) {
			ssp_unlock();
			return k;
		}
		if (k > 0 || left == 0) {
			ssp_pump();
			n = k < max ? ep_collect(ep, evs + k, max - k) : 0;
			ssp_unlock();
			return k + n;
		}
	}
}
