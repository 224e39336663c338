/* data.c - POSIX layer data plane: recv/send families copying through the connection rings, readiness. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>

#include "posix/posix.h"

/* Flags handled here; anything else is refused with EOPNOTSUPP. */
#define RECV_FLAGS (MSG_PEEK | MSG_DONTWAIT | MSG_WAITALL | MSG_NOSIGNAL | MSG_CMSG_CLOEXEC)
#define SEND_FLAGS (MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE | MSG_EOR)

static size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/*
 * Copy @len bytes from the byte stream described by @src (skipping
 * @src_off bytes) into the one described by @dst (skipping @dst_off).
 * The caller guarantees both hold that many bytes.
 */
static void iov_copy(const struct iovec *dst, int ndst, size_t dst_off,
		     const struct iovec *src, int nsrc, size_t src_off, size_t len)
{
	int di = 0, si = 0;

	while (di < ndst && dst_off >= dst[di].iov_len)
		dst_off -= dst[di++].iov_len;
	while (si < nsrc && src_off >= src[si].iov_len)
		src_off -= src[si++].iov_len;
	while (len && di < ndst && si < nsrc) {
		size_t a = dst[di].iov_len - dst_off, b = src[si].iov_len - src_off;
		size_t k = a < b ? a : b;

		if (k > len)
			k = len;
		memcpy((char *)dst[di].iov_base + dst_off,
		       (const char *)src[si].iov_base + src_off, k);
		len -= k;
		dst_off += k;
		src_off += k;
		if (dst_off == dst[di].iov_len) {
			di++;
			dst_off = 0;
		}
		if (src_off == src[si].iov_len) {
			si++;
			src_off = 0;
		}
	}
}

static int timeout_err(void)
{
	return errno == ETIMEDOUT ? EAGAIN : errno;
}

/* Wait while @s is connecting (blocking sockets); lock held.  0 once it
 * is not, -1 with errno. */
static int wait_connected(struct ssp_sock *s, bool nonblock, int64_t deadline)
{
	while (s->state == SSP_S_CONNECTING) {
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (ssp_block(deadline, NULL) < 0) {
			errno = timeout_err();
			return -1;
		}
	}
	return 0;
}

/* The start every data call shares (lock held): flags we do not know,
 * waiting out a connect in progress, an error left by a failed
 * non-blocking connect.  0 to go on, -1 with errno. */
static int io_begin(struct ssp_sock *s, int flags, int known, const char *key, bool nonblock,
		    int64_t deadline)
{
	if (flags & ~known) {
		ssp_log_once(key, "%s 0x%x not supported", key, flags & ~known);
		errno = EOPNOTSUPP;
		return -1;
	}
	if (wait_connected(s, nonblock, deadline) < 0)
		return -1;
	if (s->state == SSP_S_FAILED && s->err) {
		errno = s->err;
		s->err = 0;
		return -1;
	}
	return 0;
}

/* Lock held, @s held.  The bytes copied, or -1 with errno. */
static ssize_t sock_recv(struct ssp_sock *s, const struct iovec *iov, int n, int flags)
{
	size_t want = iov_total(iov, n), got = 0;
	bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	int64_t deadline = ssp_deadline(s->rcvtimeo_ms ? s->rcvtimeo_ms : -1);
	bool released = false;

	if (io_begin(s, flags, RECV_FLAGS, "recv flags", nonblock, deadline) < 0)
		return -1;
	if (s->state != SSP_S_CONNECTED) {
		errno = ENOTCONN;
		return -1;
	}
	if (!want)
		return 0;
	for (;;) {
		struct ss_conn *c = s->conn;
		struct iovec src[2];
		size_t avail;

		if (s->shut_rd)
			break;
		avail = ss_recv_peek(c, src);
		if (avail > got && (flags & MSG_PEEK)) {
			size_t k = avail < want ? avail : want;

			iov_copy(iov, n, 0, src, 2, 0, k);
			got = k;
			break;
		}
		if (avail && !(flags & MSG_PEEK)) {
			size_t k = avail < want - got ? avail : want - got;

			iov_copy(iov, n, got, src, 2, 0, k);
			ss_recv_done(c, k);
			released = true;
			got += k;
			if (got == want || !(flags & MSG_WAITALL))
				break;
			continue;
		}
		if (ss_conn_error(c)) {
			/* Data before the reset was read; report the error
			 * once (as Linux), then end-of-stream. */
			if (!got && s->err) {
				errno = s->err;
				s->err = 0;
				return -1;
			}
			break;
		}
		if (c->peer_fin)
			break;
		if (got && !(flags & MSG_WAITALL))
			break;
		if (nonblock) {
			if (got)
				break;
			errno = EAGAIN;
			return -1;
		}
		if (released) {
			ss_flush(ssp.ctx);
			released = false;
		}
		if (ssp_block(deadline, NULL) < 0) {
			if (got)
				break;
			errno = timeout_err();
			return -1;
		}
		if (s->state != SSP_S_CONNECTED)
			break;
	}
	if (released)
		ss_flush(ssp.ctx);
	return (ssize_t)got;
}

/* Lock held, @s held.  The bytes queued, or -1 with errno; *sigpipe set
 * when the error is EPIPE. */
static ssize_t sock_send(struct ssp_sock *s, const struct iovec *iov, int n, int flags,
			 bool *sigpipe)
{
	size_t want = iov_total(iov, n), sent = 0;
	bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	int64_t deadline = ssp_deadline(s->sndtimeo_ms ? s->sndtimeo_ms : -1);
	int err = 0;

	if (io_begin(s, flags, SEND_FLAGS, "send flags", nonblock, deadline) < 0)
		return -1;
	if (s->state != SSP_S_CONNECTED) {
		errno = s->state == SSP_S_FAILED ? EPIPE : ENOTCONN;
		*sigpipe = errno == EPIPE;
		return -1;
	}
	for (;;) {
		struct ss_conn *c = s->conn;
		struct iovec dst[2];
		size_t space, k;

		if (s->shut_wr) {
			err = EPIPE;
			break;
		}
		if (ss_conn_error(c)) {
			err = s->err ? s->err : EPIPE;
			s->err = 0;
			break;
		}
		space = ss_send_space(c, dst);
		k = space < want - sent ? space : want - sent;
		if (k) {
			iov_copy(dst, 2, 0, iov, n, sent, k);
			if (ss_send_commit(c, k) < 0) {
				err = errno;
				break;
			}
			sent += k;
		}
		if (sent == want)
			break;
		if (nonblock) {
			if (!sent)
				err = EAGAIN;
			break;
		}
		if (ssp_block(deadline, NULL) < 0) {
			if (!sent)
				err = timeout_err();
			break;
		}
		if (s->state != SSP_S_CONNECTED)
			break;
	}
	if (sent && !(flags & MSG_MORE))
		ss_flush(ssp.ctx);
	if (sent)
		return (ssize_t)sent;
	if (!want && !err)
		return 0;
	*sigpipe = err == EPIPE;
	errno = err;
	return -1;
}

/* Lock, the socket behind @fd held for a data call on @n iovecs; NULL
 * with errno (and the lock released) otherwise. */
static struct ssp_sock *iov_enter(int fd, int n)
{
	struct ssp_sock *s = ssp_sock_enter(fd);

	if (s && (n < 0 || n > IOV_MAX)) {
		ssp_fail_unlock(EINVAL);
		return NULL;
	}
	if (s)
		s->hold++;
	return s;
}

static ssize_t recv_iov(int fd, const struct iovec *iov, int n, int flags)
{
	struct ssp_sock *s = iov_enter(fd, n);
	ssize_t rc;
	int err;

	if (!s)
		return -1;
	rc = sock_recv(s, iov, n, flags);
	err = errno;
	ssp_sock_unhold(s);
	ssp_unlock();
	errno = err;
	return rc;
}

static ssize_t send_iov(int fd, const struct iovec *iov, int n, int flags)
{
	struct ssp_sock *s = iov_enter(fd, n);
	bool sigpipe = false;
	ssize_t rc;
	int err;

	if (!s)
		return -1;
	rc = sock_send(s, iov, n, flags, &sigpipe);
	err = errno;
	ssp_sock_unhold(s);
	ssp_unlock();
	if (rc < 0 && sigpipe && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	errno = err;
	return rc;
}

ssize_t ssp_recv(int fd, void *buf, size_t len, int flags, struct sockaddr *sa,
		 socklen_t *salen)
{
	struct iovec iov = { buf, len };

	(void)sa;
	if (salen)
		*salen = 0; /* a connected stream socket reports no source address */
	return recv_iov(fd, &iov, 1, flags);
}

ssize_t ssp_send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)(uintptr_t)buf, len };

	return send_iov(fd, &iov, 1, flags);
}

ssize_t ssp_readv(int fd, const struct iovec *iov, int n)
{
	return recv_iov(fd, iov, n, 0);
}

ssize_t ssp_writev(int fd, const struct iovec *iov, int n)
{
	return send_iov(fd, iov, n, 0);
}

ssize_t ssp_recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t rc = recv_iov(fd, msg->msg_iov, (int)msg->msg_iovlen, flags);

	if (rc >= 0) {
		msg->msg_namelen = 0;
		msg->msg_controllen = 0;
		msg->msg_flags = 0;
	}
	return rc;
}

ssize_t ssp_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (msg->msg_controllen) {
		ssp_log_once("sendmsg_cmsg", "sendmsg() with control data on a TCP socket: refused");
		errno = EOPNOTSUPP;
		return -1;
	}
	return send_iov(fd, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

/* ------------------------------------------------------------ readiness */

/* As Linux's tcp_poll reports them, from the connection state. */
uint32_t ssp_sock_poll(const struct ssp_sock *s)
{
	const struct ss_conn *c = s->conn;
	uint32_t m = 0;
	struct iovec iov[2];

	switch (s->state) {
	case SSP_S_NEW:
		return POLLOUT | POLLHUP;
	case SSP_S_LISTEN:
		return s->accq.n ? POLLIN : 0;
	case SSP_S_CONNECTING:
		return 0;
	case SSP_S_FAILED:
		return POLLIN | POLLOUT | POLLHUP | POLLRDHUP | (s->err ? POLLERR : 0);
	default:
		break;
	}
	if (s->err)
		m |= POLLERR;
	if (ss_conn_error(c)) {
		return m | POLLIN | POLLOUT | POLLHUP | POLLRDHUP;
	}
	if (ss_recv_peek((struct ss_conn *)(uintptr_t)c, iov) || c->peer_fin || s->shut_rd)
		m |= POLLIN;
	if (c->peer_fin || s->shut_rd)
		m |= POLLRDHUP;
	if ((c->peer_fin || s->shut_rd) && s->shut_wr)
		m |= POLLHUP;
	if (s->shut_wr || ss_send_space((struct ss_conn *)(uintptr_t)c, iov))
		m |= POLLOUT;
	return m;
}
