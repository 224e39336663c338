/* sock.c - POSIX layer control plane: socket, bind, listen, accept, connect, shutdown, close, dup. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

#define LISTEN_WAIT_MS 5000

/* Post a control command on the held context, making room in the command
 * queue if needed. */
static int post_retry(int (*post)(void *), void *arg)
{
	for (int i = 0; i < 1000; i++) {
		if (post(arg) == 0)
			return 0;
		if (errno != EAGAIN)
			return -1;
		ssp_pump();
		if (i > 10) {
			ssp_nocancel(); /* usleep is a cancellation point */
			usleep(100);
		}
	}
	errno = EAGAIN;
	return -1;
}

static bool may_bind_low_port(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d) != 0)
		return false;
	return d[CAP_NET_BIND_SERVICE / 32].effective & (1u << (CAP_NET_BIND_SERVICE % 32));
}

static int addr_in(const struct sockaddr *sa, socklen_t len, uint32_t *ip,
		   uint16_t *port)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;

	if (!sa || len < (socklen_t)sizeof(struct sockaddr_in)) {
		errno = EINVAL;
		return -1;
	}
	if (sa->sa_family != AF_INET) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	*ip = ntohl(sin->sin_addr.s_addr);
	*port = ntohs(sin->sin_port);
	return 0;
}

/* Addresses that stay the kernel's: 127.0.0.0/8.  The service's own
 * address is not among them: the service loops connections to it back to
 * the accelerated program that listens there. */
static bool kernel_only(uint32_t ip)
{
	return (ip >> 24) == 127;
}

/* ------------------------------------------------------------- socket */

int ssp_socket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct ssp_sock *s;
	int fd, mode, err;

	if (domain != AF_INET || base != SOCK_STREAM ||
	    (protocol != 0 && protocol != IPPROTO_TCP))
		return -2;
	if (ssp_mode() == SSP_M_DEAD)
		return -2;
	mode = ssp_ready();
	if (mode < 0)
		return -1;
	if (mode != SSP_M_ON)
		return -2;
	fd = eventfd(0, EFD_NONBLOCK | (type & SOCK_CLOEXEC ? EFD_CLOEXEC : 0));
	if (fd < 0)
		return -1;
	/* The socket lives on this thread's context. */
	s = ssp_sock_new(ssp_cx_mine());
	if (!s) {
		err = errno;
		ss_sys_close(fd);
		errno = err;
		return -1;
	}
	s->nonblock = type & SOCK_NONBLOCK;
	ssp_glock();
	if (ssp_fd_set(fd, &s->f) < 0) {
		err = errno;
		ssp_gunlock();
		ssp_sock_discard(s);
		ss_sys_close(fd);
		errno = err;
		return -1;
	}
	ssp_gunlock();
	return fd;
}

/*
 * Give @fd back to the kernel stack (127.0.0.0/8, which stays the
 * kernel's): a kernel socket with the options set so far replaces the
 * eventfd under the same number.  Only for a fresh socket with one fd and
 * no epoll registration.  Lock held; @s is freed on success.
 */
static int sock_demote(int fd, struct ssp_sock *s)
{
	int one = 1, kfd, cloexec;

	if (s->state != SSP_S_NEW || s->refs != 1 || s->hold ||
	    !ss_list_empty(&s->regs)) {
		ssp_log_once("demote", "loopback on a socket already in use: not supported");
		errno = EADDRNOTAVAIL;
		return -1;
	}
	kfd = ssp_real.socket(AF_INET, SOCK_STREAM, 0);
	if (kfd < 0)
		return -1;
	if (s->reuseaddr)
		ssp_real.setsockopt(kfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (s->reuseport)
		ssp_real.setsockopt(kfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (s->keepalive)
		ssp_real.setsockopt(kfd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	if (s->nodelay)
		ssp_real.setsockopt(kfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	cloexec = ssp_real.fcntl(fd, F_GETFD) & FD_CLOEXEC;
	if (ssp_real.dup3(kfd, fd, cloexec ? O_CLOEXEC : 0) < 0) {
		int err = errno;

		ss_sys_close(kfd);
		errno = err;
		return -1;
	}
	ss_sys_close(kfd);
	if (s->nonblock)
		ssp_real.fcntl(fd, F_SETFL, O_RDWR | O_NONBLOCK);
	ssp_glock();
	ssp_fd_set(fd, NULL);
	ssp_gunlock();
	ssp_sock_put(s);
	return 0;
}

/* --------------------------------------------------------------- bind */

struct bind_arg {
	struct ss_ctx *ctx;
	uint16_t port;
	unsigned flags;
	uint64_t cookie;
};

static int post_bind(void *arg)
{
	struct bind_arg *a = arg;

	return ss_bind(a->ctx, a->port, a->flags, a->cookie);
}

/* Claim @port (0: any) in the service for @s; lock held.  0 or -1 with
 * errno (EADDRINUSE, EACCES, ENOBUFS, ETIMEDOUT). */
static int port_claim(struct ssp_sock *s, uint16_t port)
{
	int64_t deadline = ssp_deadline(LISTEN_WAIT_MS);
	struct bind_arg a = { s->cx->ctx, port, s->reuseport ? SS_BIND_REUSEPORT : 0,
			      ssp_cookie_new() };

	s->cookie = a.cookie;
	s->bind_done = false;
	s->bind_err = 0;
	ss_list_add_tail(&s->cx->cookies, &s->in_cookie);
	if (post_retry(post_bind, &a) < 0) {
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		return -1;
	}
	ss_flush(s->cx->ctx);
	s->hold++;
	ssp_block_until(s, &s->bind_done, deadline);
	s->hold--;
	if (!s->bind_done) {
		/* The service never answered: a late BOUND is given up. */
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		errno = ETIMEDOUT;
		return -1;
	}
	if (s->bind_err) {
		errno = s->bind_err;
		return -1;
	}
	return 0;
}

int ssp_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	uint32_t ip;
	uint16_t port;

	if (!s)
		return -1;
	if (addr_in(sa, len, &ip, &port) < 0)
		return ssp_fail_unlock(errno);
	if (s->bound || s->state != SSP_S_NEW)
		return ssp_fail_unlock(EINVAL);
	if (kernel_only(ip)) {
		if (sock_demote(fd, s) < 0)
			return ssp_fail_unlock(errno);
		ssp_unlock();
		return ssp_real.bind(fd, sa, len);
	}
	if (ip != INADDR_ANY && ip != ssp_service_ip())
		return ssp_fail_unlock(EADDRNOTAVAIL);
	/* The service checks the process's capability at attach; this
	 * checks it now (a process may have dropped it since). */
	if (port && port < 1024 && !may_bind_low_port())
		return ssp_fail_unlock(EACCES);
	if (port_claim(s, port) < 0)
		return ssp_fail_unlock(errno);
	s->bound = true;
	s->autobind = port == 0;
	s->bind_ip = ip;
	ssp_unlock();
	return 0;
}

/* ------------------------------------------------------------- listen */

struct listen_arg {
	struct ss_ctx *ctx;
	uint32_t entry;
	uint32_t backlog;
	uint64_t cookie;
};

static int post_listen(void *arg)
{
	struct listen_arg *a = arg;

	return ss_listen_bound(a->ctx, a->entry, a->backlog, a->cookie);
}

/* Listen on the port entry @s holds; lock held.  0 or -1 with errno. */
static int listen_once(struct ssp_sock *s, int backlog)
{
	int64_t deadline = ssp_deadline(LISTEN_WAIT_MS);
	struct listen_arg a = { s->cx->ctx, s->entry, (uint32_t)backlog, ssp_cookie_new() };

	s->cookie = a.cookie;
	s->listen_done = false;
	s->listen_err = 0;
	ss_list_add_tail(&s->cx->cookies, &s->in_cookie);
	if (post_retry(post_listen, &a) < 0) {
		ss_list_del_init(&s->in_cookie);
		return -1;
	}
	ss_flush(s->cx->ctx);
	s->hold++;
	ssp_block_until(s, &s->listen_done, deadline);
	s->hold--;
	if (!s->listen_done) {
		/* The service never answered: a late LISTENING is undone. */
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		errno = ETIMEDOUT;
		return -1;
	}
	if (s->listen_err) {
		s->cookie = 0;
		errno = s->listen_err;
		return -1;
	}
	return 0;
}

int ssp_listen(int fd, int backlog)
{
	struct ssp_sock *s = ssp_sock_enter(fd);

	if (!s)
		return -1;
	if (s->state == SSP_S_LISTEN) {
		ssp_unlock();
		return 0; /* Linux lets listen() change the backlog: ignored */
	}
	if (s->state != SSP_S_NEW)
		return ssp_fail_unlock(EINVAL);
	if (backlog <= 0)
		backlog = 1;
	if (backlog > 65535)
		backlog = 65535;
	if (!s->has_entry) {
		/* listen() without bind(): an ephemeral port, as Linux does. */
		if (port_claim(s, 0) < 0)
			return ssp_fail_unlock(errno);
		s->bound = true;
		s->autobind = true;
	}
	if (listen_once(s, backlog) < 0)
		return ssp_fail_unlock(errno);
	s->state = SSP_S_LISTEN;
	ssp_opts_push(s); /* the connections it accepts take them */
	ssp_unlock();
	return 0;
}

void ssp_listen_want(struct ssp_sock *s)
{
	if (!s->shared || s->armed || s->state != SSP_S_LISTEN || !s->listen_done ||
	    s->listen_err || ssp_mode() != SSP_M_ON)
		return;
	if (ss_listen_arm(s->cx->ctx, s->listener) == 0) {
		s->armed = true;
		ss_flush(s->cx->ctx);
	}
}

/* ------------------------------------------------------------- accept */

static void addr_out(struct sockaddr *sa, socklen_t *len, uint32_t ip, uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(ip),
	};
	socklen_t n;

	if (!sa || !len)
		return;
	n = *len < (socklen_t)sizeof(sin) ? *len : (socklen_t)sizeof(sin);
	memcpy(sa, &sin, n);
	*len = sizeof(sin);
}

int ssp_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	struct ssp_sock *s = ssp_sock_enter(fd), *ns;
	struct ss_conn *c;
	int64_t deadline;
	int nfd;

	if (!s)
		return -1;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return ssp_fail_unlock(EINVAL);
	if (s->state != SSP_S_LISTEN)
		return ssp_fail_unlock(EINVAL);
	ssp_listen_want(s);
	deadline = ssp_deadline(s->rcvtimeo_ms ? s->rcvtimeo_ms : -1);
	s->hold++;
	while (!s->accq.n && s->state == SSP_S_LISTEN) {
		ssp_pump();
		if (s->accq.n)
			break;
		if (s->nonblock || s->refs <= 0) {
			errno = EAGAIN;
			goto fail;
		}
		if (ssp_block(s, deadline, NULL) < 0) {
			if (errno == EINTR && s->rcvtimeo_ms == 0 && ssp_intr_restart())
				continue; /* SA_RESTART: Linux restarts accept() */
			if (errno == ETIMEDOUT)
				errno = EAGAIN;
			goto fail;
		}
	}
	if (!s->accq.n) {
		errno = EINVAL;
		goto fail;
	}
	nfd = eventfd(0, EFD_NONBLOCK | (flags & SOCK_CLOEXEC ? EFD_CLOEXEC : 0));
	if (nfd < 0)
		goto fail;
	/* The connection arrived on the listener's context: it lives there. */
	ns = ssp_sock_new(s->cx);
	if (ns) {
		ssp_glock();
		if (ssp_fd_set(nfd, &ns->f) < 0) {
			int err = errno;

			ssp_gunlock();
			ssp_sock_discard(ns);
			ns = NULL;
			errno = err;
		} else {
			ssp_gunlock();
		}
	}
	if (!ns) {
		int err = errno;

		ss_sys_close(nfd);
		errno = err;
		goto fail;
	}
	c = s->accq.q[s->accq.head];
	s->accq.head = (s->accq.head + 1) % s->accq.cap;
	s->accq.n--;
	ns->state = SSP_S_CONNECTED;
	ns->conn = c;
	ns->nonblock = flags & SOCK_NONBLOCK;
	ns->bound = true;
	/* As Linux: the service gave the connection the listener's options. */
	ns->keepalive = s->keepalive;
	ns->nodelay = s->nodelay;
	ns->cork = s->cork;
	ns->keepidle = s->keepidle;
	ns->keepintvl = s->keepintvl;
	ns->keepcnt = s->keepcnt;
	ns->maxseg = s->maxseg;
	ns->linger_on = s->linger_on;
	ns->linger_s = s->linger_s;
	ss_conn_set_user(c, ns);
	ss_conn_endpoints(c, &ns->bind_ip, &ns->bind_port, NULL, NULL);
	if (sa && len) {
		uint32_t rip;
		uint16_t rport;

		ss_conn_endpoints(c, NULL, NULL, &rip, &rport);
		addr_out(sa, len, rip, rport);
	}
	ssp_sock_unhold(s);
	ssp_unlock();
	return nfd;
fail: {
		int err = errno;

		ssp_sock_unhold(s);
		return ssp_fail_unlock(err);
	}
}

/* ------------------------------------------------------------ connect */

struct connect_arg {
	struct ss_ctx *ctx;
	uint32_t ip;
	uint16_t port;
	uint64_t cookie;
	bool bound;
	uint32_t entry;
	uint16_t mss;
};

static int post_connect(void *arg)
{
	struct connect_arg *a = arg;

	return ss_connect_mss(a->ctx, a->bound, a->entry, a->ip, a->port, a->mss, a->cookie);
}

int ssp_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	struct connect_arg a;
	int64_t deadline;
	int err;

	if (!s)
		return -1;
	ssp_sock_current(s); /* the handshake may be over */
	switch (s->state) {
	case SSP_S_CONNECTING:
		return ssp_fail_unlock(EALREADY);
	case SSP_S_AWAY:
		return ssp_fail_unlock(EISCONN);
	case SSP_S_CONNECTED:
		/* Linux: the first connect() after a non-blocking one completed
		 * returns 0; only later ones say EISCONN. */
		if (s->nb_connect) {
			s->nb_connect = false;
			ssp_unlock();
			return 0;
		}
		return ssp_fail_unlock(EISCONN);
	case SSP_S_LISTEN:
		return ssp_fail_unlock(EINVAL);
	case SSP_S_FAILED:
		if (s->err) {
			/* The result of the last non-blocking connect. */
			err = s->err;
			s->err = 0;
			return ssp_fail_unlock(err);
		}
		s->state = SSP_S_NEW;
		break;
	default:
		break;
	}
	if (addr_in(sa, len, &a.ip, &a.port) < 0)
		return ssp_fail_unlock(errno);
	if (a.port == 0)
		return ssp_fail_unlock(ECONNREFUSED);
	if (kernel_only(a.ip) || a.ip == INADDR_ANY) {
		if (sock_demote(fd, s) < 0)
			return ssp_fail_unlock(errno);
		ssp_unlock();
		return ssp_real.connect(fd, sa, len);
	}
	/* After bind(): from the bound port (the entry becomes the connection). */
	a.ctx = s->cx->ctx;
	a.bound = s->has_entry;
	a.entry = s->entry;
	a.mss = (uint16_t)s->maxseg; /* in the SYN */
	a.cookie = s->cookie = ssp_cookie_new();
	ss_list_add_tail(&s->cx->cookies, &s->in_cookie);
	if (post_retry(post_connect, &a) < 0) {
		err = errno;
		ss_list_del_init(&s->in_cookie);
		return ssp_fail_unlock(err == EAGAIN ? ENOBUFS : err);
	}
	s->has_entry = false;
	s->state = SSP_S_CONNECTING;
	s->err = 0;
	ss_flush(s->cx->ctx);
	if (s->nonblock) {
		s->nb_connect = true;
		return ssp_fail_unlock(EINPROGRESS);
	}
	deadline = ssp_deadline(s->sndtimeo_ms ? s->sndtimeo_ms : -1);
	s->hold++;
	while (s->state == SSP_S_CONNECTING) {
		if (ssp_block(s, deadline, NULL) < 0) {
			if (errno == EINTR && s->sndtimeo_ms == 0 && ssp_intr_restart())
				continue; /* SA_RESTART: connect() keeps waiting */
			err = errno == ETIMEDOUT ? EINPROGRESS : errno;
			ssp_sock_unhold(s);
			return ssp_fail_unlock(err);
		}
	}
	ssp_sock_unhold(s);
	if (s->state == SSP_S_FAILED) {
		err = s->err;
		s->err = 0;
		return ssp_fail_unlock(err);
	}
	ssp_unlock();
	return 0;
}

/* ----------------------------------------------------------- shutdown */

static int post_shutdown(void *arg)
{
	return ss_shutdown(arg);
}

struct stop_arg {
	struct ss_ctx *ctx;
	uint32_t listener;
	unsigned flags;
	uint64_t cookie;
};

static int post_stop(void *arg)
{
	struct stop_arg *a = arg;

	return ss_listen_stop(a->ctx, a->listener, a->flags, a->cookie);
}

/*
 * shutdown(SHUT_RD or SHUT_RDWR) of listener @s (lock held, @s held):
 * Linux's inet_shutdown disconnects the listening socket itself, so it
 * stops in every process that shares it.  The service stops the entry
 * for all of them (ssp_listen_stopped runs in each at LISTEN_STOPPED);
 * a port the service picked is given up, as Linux's inet_put_port does
 * when the port was not bound explicitly.
 */
static void listen_stop(struct ssp_sock *s)
{
	int64_t deadline = ssp_deadline(LISTEN_WAIT_MS);
	struct stop_arg a = { s->cx->ctx, s->listener,
			      s->autobind ? SS_LISTEN_STOP_RELEASE : 0, s->cookie };

	s->stop_done = false;
	if (post_retry(post_stop, &a) == 0) {
		ss_flush(s->cx->ctx);
		ssp_block_until(s, &s->stop_done, deadline);
	}
	if (s->state == SSP_S_LISTEN) {
		/* No answer: stop here, and let the entry go. */
		ssp_log_once("listen_stop_lost", "shutdown() of a listener: no answer from "
			     "the service; stopped here only");
		ss_listen_close(s->cx->ctx, s->listener);
		ss_flush(s->cx->ctx);
		ssp_listen_stopped(s, true);
	}
}

int ssp_shutdown(int fd, int how)
{
	struct ssp_sock *s = ssp_sock_enter(fd);

	if (!s)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return ssp_fail_unlock(EINVAL);
	/* Linux's inet_shutdown: ENOTCONN in TCP_CLOSE, which a connection
	 * reaches when reset or once both FINs are done (pending events may
	 * tell: take them first). */
	ssp_sock_current(s);
	if (s->state == SSP_S_LISTEN) {
		/* SHUT_WR leaves a listener alone; SHUT_RD stops it. */
		if (how != SHUT_WR) {
			s->hold++;
			listen_stop(s);
			ssp_sock_unhold(s);
		}
		ssp_unlock();
		return 0;
	}
	if (s->state == SSP_S_AWAY) {
		/* Linux would shut the socket down for every process that has
		 * it; the one using it now owns the connection. */
		ssp_log_once("shutdown_away", "shutdown() of a socket another process (fork) is "
			     "using: not supported, ENOTCONN");
		return ssp_fail_unlock(ENOTCONN);
	}
	if (s->state != SSP_S_CONNECTED || ssp_sock_closed(s))
		return ssp_fail_unlock(ENOTCONN);
	if (how != SHUT_WR)
		s->shut_rd = true;
	if (how != SHUT_RD && !s->shut_wr) {
		s->shut_wr = true;
		if (ss_conn_error(s->conn) == 0 && post_retry(post_shutdown, s->conn) < 0 &&
		    errno == EAGAIN)
			ssp_log_once("shutdown", "shutdown(): command queue stuck, FIN not sent");
		ss_flush(s->cx->ctx);
	}
	ssp_sock_touch(s);
	ssp_unlock();
	return 0;
}

/* -------------------------------------------------------- close, dup */

static int post_close(void *arg)
{
	return ss_close(arg);
}

/*
 * SO_LINGER with a timeout (Linux's tcp_close -> sk_stream_wait_close):
 * the last close() of a connected socket waits, blocking or not, until
 * our FIN is acknowledged (and with it every byte before it), the
 * connection dies, a signal comes, or the time is up; it returns 0
 * either way, and the connection closes on in the background.  Not a
 * socket shared across fork: another process may hold it still, and
 * Linux does not wait while one does.
 */
static bool linger_wanted(const struct ssp_sock *s)
{
	return s->linger_on && s->linger_s != 0 && s->refs == 1 && s->hold == 0 &&
	       s->state == SSP_S_CONNECTED && s->conn && !s->inh && !s->shared;
}

/* @s (held, its lock held, its fd gone) closes its connection now and
 * waits as above: CLOSED for it ends the wait (core.c), and the rest of
 * the release is sock_free's. */
static void sock_linger(struct ssp_sock *s)
{
	/* A negative l_linger is a huge one for Linux (unsigned jiffies). */
	int64_t deadline = s->linger_s < 0 ? -1 : ssp_now_ms() + (int64_t)s->linger_s * 1000;

	if (post_retry(post_close, s->conn) < 0)
		return; /* sock_free closes it later (deferred): no wait */
	s->lingering = true;
	ss_flush(s->cx->ctx);
	while (s->conn && ssp_block(s, deadline, NULL) == 0)
		;
}

/* Take socket @fd out of the layer (its lock held): the mapping, its
 * epoll registrations, its reference.  The number itself is closed (or
 * replaced) by the caller. */
static void sock_fd_drop(int fd, struct ssp_sock *s)
{
	ssp_glock();
	ssp_fd_set(fd, NULL);
	ssp_gunlock();
	ssp_ep_drop_fd(s, fd);
	ssp_sock_put(s);
}

/* @fd leaves the layer; with @close_fd the number is closed too (close's
 * result), else it is about to be replaced (0). */
static int fd_leave(int fd, bool close_fd)
{
	for (;;) {
		struct ssp_file *f = ssp_fd_get(fd);
		struct ssp_sock *s;
		bool linger;
		int rc = 0;

		if (!f)
			return close_fd ? ss_sys_close(fd) : 0;
		if (f->type == SSP_F_EPOLL)
			return ssp_ep_drop(fd, SS_CONTAINER_OF(f, struct ssp_ep, f), close_fd);
		s = ssp_sock_lock_fd(fd);
		if (!s)
			continue; /* it changed meanwhile: look again */
		/* What the last close does depends on the state: a connect
		 * already answered closes with a FIN, a connect in progress
		 * goes away silently. */
		ssp_sock_current(s);
		linger = close_fd && linger_wanted(s);
		if (linger)
			s->hold++;
		sock_fd_drop(fd, s);
		if (close_fd)
			rc = ss_sys_close(fd);
		if (linger) {
			/* As Linux: the number is free before the wait. */
			sock_linger(s);
			ssp_sock_unhold(s);
		}
		ssp_unlock();
		return rc;
	}
}

int ssp_close(int fd)
{
	/* A vfork() child shares our memory: its close is only its own. */
	if (ssp_mode() == SSP_M_ON && ssp.pid != getpid())
		return ss_sys_close(fd);
	return fd_leave(fd, true);
}

void ssp_fd_forget(int fd)
{
	fd_leave(fd, false);
}

int ssp_dup(int oldfd, int newfd, int flags, bool exact)
{
	struct ssp_file *f;
	struct ssp_sock *s;
	int nfd;

	if (exact && oldfd == newfd) {
		if (flags) {
			errno = EINVAL;
			return -1;
		}
		return ssp_real.fcntl(oldfd, F_GETFD) < 0 ? -1 : newfd;
	}
	f = ssp_fd_get(oldfd);
	if (f && f->type == SSP_F_EPOLL) {
		nfd = ssp_ep_dup(SS_CONTAINER_OF(f, struct ssp_ep, f), oldfd, newfd, flags, exact);
		if (nfd != -2)
			return nfd;
		/* closed meanwhile: as any fd */
	}
	s = ssp_sock_lock_fd(oldfd);
	if (exact)
		nfd = ssp_real.dup3(oldfd, newfd, flags);
	else
		nfd = ssp_real.fcntl(oldfd, flags & O_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD, newfd);
	if (nfd >= 0 && exact && ssp_fd_get(newfd)) {
		/* dup2 closed what newfd was: it leaves the layer (under its
		 * own lock, which may be another context's). */
		if (s)
			ssp_unlock();
		fd_leave(newfd, false);
		s = ssp_sock_lock_fd(oldfd);
	}
	if (nfd >= 0 && s) {
		ssp_glock();
		if (ssp_fd_set(nfd, &s->f) == 0)
			s->refs++;
		ssp_gunlock();
	}
	if (s)
		ssp_unlock();
	return nfd;
}
