/* data.c - POSIX layer data plane: recv/send families copying through the connection rings, readiness. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

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

/*
 * iov_copy() where one side is the caller's memory: 0, or -1 with errno
 * EFAULT when it is not there (Linux's answer), how much was copied
 * unknown: the caller counts none of it.  Costs a sigsetjmp without the
 * signal mask (no system call).
 */
static int iov_copy_user(const struct iovec *dst, int ndst, size_t dst_off,
			 const struct iovec *src, int nsrc, size_t src_off, size_t len)
{
	sigjmp_buf jb;

	if (__builtin_expect(!__atomic_load_n(&ssp_fault_ready, __ATOMIC_ACQUIRE), 0))
		ssp_fault_init();
	if (sigsetjmp(jb, 0)) {
		errno = EFAULT; /* the handler cleared ssp_fault_jmp */
		return -1;
	}
	ssp_fault_jmp = &jb;
	iov_copy(dst, ndst, dst_off, src, nsrc, src_off, len);
	ssp_fault_jmp = NULL;
	return 0;
}

static int timeout_err(void)
{
	return errno == ETIMEDOUT ? EAGAIN : errno;
}

/*
 * ssp_block() just failed: true when Linux would go on waiting, i.e. a
 * signal interrupted the wait, its handler had SA_RESTART and the socket
 * has no timeout for this direction (@timeo_ms, SO_RCVTIMEO or
 * SO_SNDTIMEO): Linux's sock_intr_errno() gives -ERESTARTSYS only for an
 * infinite timeout.  errno is left as it was.
 */
static bool intr_restart(int timeo_ms)
{
	return errno == EINTR && ssp_intr_restart() && timeo_ms == 0;
}

/* Wait while @s is connecting, or its connection is away in another
 * process of ours (fork.c: as if that one took all the data); lock held.
 * 0 once it is neither, -1 with errno.  @timeo_ms: the socket's timeout
 * for the call. */
static int wait_connected(struct ssp_sock *s, bool nonblock, int64_t deadline, int timeo_ms)
{
	bool pumped = false;

	while (s->state == SSP_S_CONNECTING || s->state == SSP_S_AWAY) {
		if (nonblock && !pumped) {
			ssp_pump(); /* the answer may be waiting: as current as Linux */
			if (s->state == SSP_S_AWAY) {
				/* Handed back on context 0 (cx.c): look there too. */
				ssp_away_pump();
				ssp_sock_relock(s);
			}
			pumped = true;
			continue;
		}
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (ssp_block(s, deadline, NULL) < 0 && !intr_restart(timeo_ms)) {
			errno = timeout_err();
			return -1;
		}
	}
	return 0;
}

/* After a wait inside a call: @s is not connected any more, so another
 * process of ours took the connection meanwhile (fork.c).  Wait for it
 * to come back, as at the start of a call: 0 once it has, else -1 with
 * errno (@none when it is gone for good). */
static int rewait_connected(struct ssp_sock *s, bool nonblock, int64_t deadline, int timeo_ms,
			    int none)
{
	if (wait_connected(s, nonblock, deadline, timeo_ms) < 0)
		return -1;
	if (s->state != SSP_S_CONNECTED) {
		errno = none;
		return -1;
	}
	return 0;
}

/* The start every data call shares (lock held): flags we do not know,
 * waiting out a connect in progress, an error left by a failed
 * non-blocking connect.  0 to go on, -1 with errno. */
static int io_begin(struct ssp_sock *s, int flags, int known, const char *key, bool nonblock,
		    int64_t deadline, int timeo_ms)
{
	if (flags & MSG_OOB) {
		/* Urgent data (docs/compat.md): refused before anything is
		 * sent or taken; urgent bytes a peer sends arrive inline. */
		ssp_log_once("msg_oob", "MSG_OOB (urgent data) not supported: EOPNOTSUPP");
		errno = EOPNOTSUPP;
		return -1;
	}
	if (flags & ~known) {
		ssp_log_once(key, "%s 0x%x not supported", key, flags & ~known);
		errno = EOPNOTSUPP;
		return -1;
	}
	ssp_sock_current(s); /* a reset, the peer's FIN, an answered connect */
	if (wait_connected(s, nonblock, deadline, timeo_ms) < 0)
		return -1;
	if (s->state == SSP_S_FAILED && s->err) {
		errno = s->err;
		s->err = 0;
		return -1;
	}
	return 0;
}

/*
 * Where sock_recv's bytes go: the caller's iovecs, or a pipe written
 * straight from the receive ring (splice), never blocking on the pipe.
 */
struct recv_sink {
	const struct iovec *iov;
	int n;
	int fd;            /* pipe, when iov is NULL */
	bool full;         /* the pipe took less than it was offered */
};

/* Cut a ring view (@v: up to two pieces) to its first @k bytes, k no
 * more than the view holds: the pieces left (1 or 2). */
static int ring_iov_trim(struct iovec v[2], size_t k)
{
	if (v[0].iov_len >= k) {
		v[0].iov_len = k;
		return 1;
	}
	v[1].iov_len = k - v[0].iov_len;
	return 2;
}

/* Put @k bytes of the ring (@src) into @sink at offset @off: the bytes
 * put (fewer, even 0, when a pipe is full), or -1 with errno (EPIPE: the
 * kernel has raised SIGPIPE, as splice does). */
static ssize_t sink_put(struct recv_sink *sink, const struct iovec src[2], size_t off, size_t k)
{
	struct iovec v[2] = { src[0], src[1] };
	int nv;
	ssize_t w;

	if (sink->iov) {
		if (iov_copy_user(sink->iov, sink->n, off, src, 2, 0, k) < 0)
			return -1; /* EFAULT: nothing taken */
		return (ssize_t)k;
	}
	nv = ring_iov_trim(v, k);
	w = pwritev2(sink->fd, v, nv, -1, RWF_NOWAIT);
	if (w < 0 && errno == EAGAIN)
		w = 0;
	if (w >= 0 && (size_t)w < k)
		sink->full = true;
	return w;
}

/* Room in pipe @fd for up to @k bytes now (@k when it cannot be told). */
static size_t pipe_room(int fd, size_t k)
{
	int size = ssp_real.fcntl(fd, F_GETPIPE_SZ), queued = 0;

	if (size <= 0 || ssp_real.ioctl(fd, FIONREAD, &queued) != 0 || queued < 0)
		return k;
	size = queued < size ? size - queued : 0;
	return (size_t)size < k ? (size_t)size : k;
}

/* Lock held, @s held.  Up to @want bytes into @sink (all of them with
 * MSG_WAITALL), or -1 with errno. */
static ssize_t sock_recv(struct ssp_sock *s, struct recv_sink *sink, size_t want, int flags)
{
	const struct iovec *iov = sink->iov;
	int n = sink->n;
	size_t got = 0;
	bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	int64_t deadline = ssp_deadline(s->rcvtimeo_ms ? s->rcvtimeo_ms : -1);
	bool released = false, pumped = false;
	struct ss_conn *rel = NULL; /* the connection released from, last */

	if (io_begin(s, flags, RECV_FLAGS, "recv flags", nonblock, deadline, s->rcvtimeo_ms) < 0)
		return -1;
	if (s->state != SSP_S_CONNECTED) {
		errno = ENOTCONN;
		return -1;
	}
	if (!want)
		return 0;
	for (;;) {
		struct ss_conn *c;
		struct iovec src[2];
		size_t avail;
		bool moving;

		if (s->state != SSP_S_CONNECTED || !s->conn) {
			/* Another process of ours took the connection while we
			 * waited or pumped (fork.c). */
			if (got)
				break;
			if (rewait_connected(s, nonblock, deadline, s->rcvtimeo_ms, ENOTCONN) < 0)
				return -1;
		}
		c = s->conn;
		if (s->shut_rd)
			break;
		avail = ss_recv_peek(c, src);
		if (avail > got && (flags & MSG_PEEK)) {
			size_t k = avail < want ? avail : want;

			if (iov_copy_user(iov, n, 0, src, 2, 0, k) < 0)
				return -1; /* EFAULT */
			got = k;
			break;
		}
		if (avail && !(flags & MSG_PEEK)) {
			size_t k = avail < want - got ? avail : want - got;
			bool first = !sink->iov && c->shared;
			ssize_t w;

			/* Shared across fork, into a pipe, which cannot give
			 * bytes back: consumed first, no more than it has room for. */
			if (first && (k = pipe_room(sink->fd, k)) > 0 && ss_recv_done(c, k) < 0)
				continue; /* it moved away meanwhile: nothing taken */
			if (first && k == 0)
				sink->full = true;
			w = k ? sink_put(sink, src, got, k) : 0;
			if (first && w >= 0 && (size_t)w < k)
				ssp_log_once("splice_shared", "splice() from a socket shared across "
					     "fork into a pipe another process filled meanwhile: "
					     "bytes lost");
			if (w <= 0) {
				if (got)
					break;
				if (w == 0)
					errno = EAGAIN; /* the pipe is full: splice waits for it */
				return -1;
			}
			if (!first && ss_recv_done(c, (size_t)w) < 0)
				continue; /* moved away meanwhile: not taken, read again later */
			released = true;
			rel = c;
			got += (size_t)w;
			if (got == want || !(flags & MSG_WAITALL) || sink->full)
				break;
			continue;
		}
		/* Moved to another process of ours (SS_EV_MOVED is on its
		 * way): its state here says nothing any more; wait. */
		moving = c->rx_moved;
		if (!moving && ss_conn_error(c)) {
			/* Data before the reset was read; report the error
			 * once (as Linux), then end-of-stream. */
			if (!got && s->err) {
				errno = s->err;
				s->err = 0;
				return -1;
			}
			break;
		}
		if (!moving && c->peer_fin)
			break;
		if (got && !(flags & MSG_WAITALL))
			break;
		if (nonblock) {
			if (got)
				break;
			if (!pumped) {
				/* Events not taken yet may hold data: look once more. */
				ssp_pump();
				pumped = true;
				continue;
			}
			errno = EAGAIN;
			return -1;
		}
		if (released) {
			ss_flush(s->cx->ctx);
			released = false;
		}
		if (ssp_block(s, deadline, NULL) < 0) {
			if (got)
				break; /* interrupted or timed out: what was read */
			if (!intr_restart(s->rcvtimeo_ms)) {
				errno = timeout_err();
				return -1;
			}
		}
	}
	/* The release goes with the next command or sleep unless the window
	 * needs it now (ss_recv_done_due()). */
	if (released && (s->conn != rel || ss_recv_done_due(rel)))
		ss_flush(s->cx->ctx);
	return (ssize_t)got;
}

/*
 * Where sock_send's bytes come from: the caller's iovecs, or a kernel file
 * read straight into the send ring (sendfile).
 */
struct send_src {
	const struct iovec *iov;
	int n;
	int fd;            /* file, when iov is NULL */
	off_t *pos;        /* pread position (advanced), NULL: read() */
	bool pipe;         /* fd is a pipe, read without blocking (splice) */
	bool eof;          /* the file ended, or the pipe ran dry */
	bool drained;      /* the pipe ran dry (its writers are still there) */
	/* A pipe's bytes on their way into a connection shared across fork
	 * (the pipe cannot give them back if the commit is refused). */
	uint8_t *held;
	size_t n_held;
};

/* Copy @k bytes of @src->held into the ring view @dst. */
static void held_put(struct send_src *src, const struct iovec *dst, size_t k)
{
	struct iovec h = { src->held, k };

	iov_copy(dst, 2, 0, &h, 1, 0, k);
}

/* Put up to @k bytes from @src (@off bytes in) into @dst, the send ring
 * of @c: the bytes put, 0 at the file's end, -1 with errno.  Nothing is
 * taken from @src for good before src_taken() (a commit on a connection
 * shared across fork may be refused). */
static ssize_t src_fill(struct send_src *src, const struct iovec *dst, size_t off, size_t k,
			const struct ss_conn *c)
{
	struct iovec v[2] = { dst[0], dst[1] };
	bool shared = c->shared;
	int nv;
	ssize_t r;

	if (src->iov) {
		if (iov_copy_user(dst, 2, 0, src->iov, src->n, off, k) < 0)
			return -1; /* EFAULT: nothing put */
		return (ssize_t)k;
	}
	if (src->n_held) {
		k = k < src->n_held ? k : src->n_held;
		held_put(src, dst, k);
		return (ssize_t)k;
	}
	nv = ring_iov_trim(v, k);
	if (src->pipe && shared) {
		/* Through a buffer of ours: kept if the commit is refused. */
		if (!src->held)
			src->held = malloc(c->ctx->app->txbuf_size);
		if (!src->held) {
			errno = ENOMEM;
			return -1;
		}
		v[0] = (struct iovec){ src->held, k };
		nv = 1;
	}
	if (src->pos) {
		r = preadv(src->fd, v, nv, *src->pos);
		if (r > 0)
			*src->pos += r;
	} else if (src->pipe) {
		r = preadv2(src->fd, v, nv, -1, RWF_NOWAIT);
		if (r < 0 && errno == EAGAIN) {
			/* Another reader took what splice saw there. */
			src->drained = true;
			r = 0;
		}
	} else {
		r = ssp_real.readv(src->fd, v, nv);
	}
	if (r == 0)
		src->eof = true;
	if (r > 0 && src->pipe && shared) {
		src->n_held = (size_t)r;
		held_put(src, dst, (size_t)r);
	}
	return r;
}

/* The @n bytes src_fill put were committed: taken for good. */
static void src_taken(struct send_src *src, size_t n)
{
	if (!src->n_held)
		return;
	src->n_held -= n;
	memmove(src->held, src->held + n, src->n_held);
}

/*
 * The commit of the @n bytes src_fill put was refused (the connection
 * moved to another process of ours meanwhile): they go again later.
 * The caller's bytes are still there, a pipe's are held; a file is
 * read again from where they began.
 */
static void src_untake(struct send_src *src, size_t n)
{
	if (src->iov || src->n_held)
		return;
	if (src->pos)
		*src->pos -= (off_t)n;
	else if (lseek(src->fd, -(off_t)n, SEEK_CUR) < 0)
		ssp_log_once("sendfile_moved", "sendfile() from an unseekable file into a "
			     "socket another process took meanwhile: bytes skipped");
}

/* Lock held, @s held.  @want bytes of @src queued (fewer at a file's
 * end), or -1 with errno; *sigpipe set when the error is EPIPE. */
static ssize_t sock_send_src(struct ssp_sock *s, struct send_src *src, size_t want, int flags,
			     bool *sigpipe)
{
	size_t sent = 0;
	bool nonblock = s->nonblock || (flags & MSG_DONTWAIT);
	int64_t deadline = ssp_deadline(s->sndtimeo_ms ? s->sndtimeo_ms : -1);
	bool pumped = false, unflushed = false;
	int err = 0;

	if (io_begin(s, flags, SEND_FLAGS, "send flags", nonblock, deadline, s->sndtimeo_ms) < 0)
		return -1;
	if (s->state != SSP_S_CONNECTED) {
		/* Linux: a stream socket never connected, listening or whose
		 * connect failed says EPIPE (tcp_sendmsg -> sk_stream_wait_connect). */
		*sigpipe = true;
		errno = EPIPE;
		return -1;
	}
	for (;;) {
		struct ss_conn *c;
		struct iovec dst[2];
		size_t space, k;
		ssize_t got;

		if (s->state != SSP_S_CONNECTED || !s->conn) {
			/* Another process of ours took the connection meanwhile
			 * (fork.c): wait for it to come back, as at the start;
			 * with a pipe's bytes held for it, whatever the mode. */
			while (src->n_held &&
			       (s->state == SSP_S_AWAY || s->state == SSP_S_CONNECTING))
				ssp_block(s, -1, NULL);
			if (src->n_held && s->state != SSP_S_CONNECTED) {
				err = EPIPE;
				break;
			}
			if (!src->n_held && sent)
				break;
			if (!src->n_held && rewait_connected(s, nonblock, deadline, s->sndtimeo_ms,
							     EPIPE) < 0) {
				err = errno;
				break;
			}
		}
		c = s->conn;
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
			got = src_fill(src, dst, sent, k, c);
			if (got < 0) {
				err = errno;
				break;
			}
			ss_conn_set_more(c, (flags & MSG_MORE) != 0);
			if (got > 0 && ss_send_commit(c, (size_t)got) < 0) {
				if (!c->tx_moved) {
					err = errno;
					break;
				}
				/* Not taken: it moved to another process of ours
				 * (SS_EV_MOVED is on its way); sent again where the
				 * connection is, once it is ours again. */
				src_untake(src, (size_t)got);
				continue;
			}
			src_taken(src, (size_t)got);
			sent += (size_t)got;
			unflushed |= got > 0;
			if (src->eof)
				break;
			if ((size_t)got < k)
				continue; /* a short read: read on */
		}
		if (sent == want)
			break;
		if (nonblock && !src->n_held) {
			if (!sent && !pumped) {
				/* Events not taken yet may have freed room. */
				ssp_pump();
				pumped = true;
				continue;
			}
			if (!sent)
				err = EAGAIN;
			break;
		}
		if (unflushed) {
			/* Out before we sleep: the peer's answer may be what wakes us. */
			ss_flush(s->cx->ctx);
			unflushed = false;
		}
		if (ssp_block(s, src->n_held ? -1 : deadline, NULL) < 0 && !src->n_held) {
			if (sent)
				break; /* interrupted or timed out: what was queued */
			if (!intr_restart(s->sndtimeo_ms)) {
				err = timeout_err();
				break;
			}
		}
	}
	free(src->held);
	src->held = NULL;
	/* Published now, also with MSG_MORE: the service holds the small
	 * last segment (SS_CMDF_MORE); data left unpublished would wait for
	 * the next call. */
	if (sent)
		ss_flush(s->cx->ctx);
	if (sent)
		return (ssize_t)sent;
	if ((!want || src->eof) && !err)
		return 0;
	*sigpipe = err == EPIPE;
	errno = err;
	return -1;
}

static ssize_t sock_send(struct ssp_sock *s, const struct iovec *iov, int n, int flags,
			 bool *sigpipe)
{
	struct send_src src = { .iov = iov, .n = n, .fd = -1 };

	return sock_send_src(s, &src, iov_total(iov, n), flags, sigpipe);
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
	struct recv_sink sink = { .iov = iov, .n = n, .fd = -1 };
	ssize_t rc;
	int err;

	if (!s)
		return -1;
	rc = sock_recv(s, &sink, iov_total(iov, n), flags);
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

/* ------------------------------------------------------- splice halves */

ssize_t ssp_sock_recv_pipe(struct ssp_sock *s, int fd, size_t len, bool *full)
{
	struct recv_sink sink = { .fd = fd };
	ssize_t rc = sock_recv(s, &sink, len, 0);

	*full = sink.full;
	return rc;
}

ssize_t ssp_sock_send_pipe(struct ssp_sock *s, int fd, size_t len, bool *drained, bool *sigpipe)
{
	struct send_src src = { .fd = fd, .pipe = true };
	ssize_t rc = sock_send_src(s, &src, len, 0, sigpipe);

	*drained = src.drained;
	return rc;
}

/* ------------------------------------------------------------ sendfile */

/* Linux's cap on one read/write (MAX_RW_COUNT: INT_MAX & PAGE_MASK). */
#define SSP_MAX_RW ((size_t)INT_MAX & ~(size_t)4095)

/* A kernel file -> the accelerated socket @out_fd, with Linux's checks in
 * Linux's order (do_sendfile, rw_verify_area, splice_direct_to_actor). */
static ssize_t sendfile_to_sock(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct send_src src = { .fd = in_fd };
	struct ssp_sock *s;
	struct stat st;
	bool sigpipe = false;
	mode_t type;
	off_t pos = 0;
	ssize_t rc;
	int fl, err;

	if (fstat(in_fd, &st) < 0)
		return -1; /* EBADF */
	fl = ssp_real.fcntl(in_fd, F_GETFL);
	if (fl < 0)
		return -1;
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY) {
		errno = EBADF;
		return -1;
	}
	type = st.st_mode & S_IFMT;
	/* Pipes, sockets and anonymous inodes (eventfd, epoll...) have no
	 * pread: an offset is ESPIPE, none is EINVAL below. */
	if (offset && (type == S_IFIFO || type == S_IFSOCK || type == 0)) {
		errno = ESPIPE;
		return -1;
	}
	if ((ssize_t)count < 0 || (offset && (*offset < 0 || *offset + (off_t)count < 0))) {
		errno = EINVAL;
		return -1;
	}
	if (count > SSP_MAX_RW)
		count = SSP_MAX_RW;
	if (type != S_IFREG && type != S_IFBLK && type != S_IFCHR && type != S_IFDIR) {
		errno = EINVAL;
		return -1;
	}
	if (!count)
		return 0;
	if (type == S_IFDIR) {
		errno = EINVAL;
		return -1;
	}
	if (offset) {
		pos = *offset;
		src.pos = &pos;
	}
	s = iov_enter(out_fd, 0);
	if (!s)
		return -1;
	rc = sock_send_src(s, &src, count, 0, &sigpipe);
	err = errno;
	ssp_sock_unhold(s);
	ssp_unlock();
	if (offset)
		*offset = pos; /* after exactly what was queued */
	if (rc < 0 && sigpipe)
		raise(SIGPIPE);
	errno = err;
	return rc;
}

/* The accelerated socket @in_fd -> a pipe (Linux splices a socket into a
 * pipe; into anything else sendfile refuses a socket). */
static ssize_t sendfile_from_sock(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct stat st;
	char *buf;
	ssize_t n, w;
	int fl, room = -1, queued = 0;

	if (offset) {
		errno = ESPIPE; /* a socket has no pread */
		return -1;
	}
	if ((ssize_t)count < 0) {
		errno = EINVAL;
		return -1;
	}
	if (fstat(out_fd, &st) < 0)
		return -1;
	fl = ssp_real.fcntl(out_fd, F_GETFL);
	if (fl < 0)
		return -1;
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_RDONLY) {
		errno = EBADF;
		return -1;
	}
	if (!S_ISFIFO(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	if (!count)
		return 0;
	/* Never take more than the pipe holds: what the socket gives is
	 * peeked, written, and only then consumed. */
	room = ssp_real.fcntl(out_fd, F_GETPIPE_SZ);
	if (room > 0 && ssp_real.ioctl(out_fd, FIONREAD, &queued) == 0 && queued >= 0)
		room -= queued < room ? queued : room;
	if (room == 0 && (fl & O_NONBLOCK)) {
		errno = EAGAIN;
		return -1;
	}
	if (room > 0 && count > (size_t)room)
		count = (size_t)room;
	if (count > 65536)
		count = 65536;
	buf = malloc(count);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	n = ssp_recv(in_fd, buf, count, MSG_PEEK, NULL, NULL);
	if (n <= 0) {
		int err = errno;

		free(buf);
		errno = err;
		return n;
	}
	w = ssp_real.write(out_fd, buf, (size_t)n);
	if (w > 0 && ssp_recv(in_fd, buf, (size_t)w, MSG_DONTWAIT, NULL, NULL) != w)
		ssp_log_once("sendfile_race", "sendfile() from a socket read by another "
			     "thread meanwhile: bytes may repeat");
	{
		int err = errno;

		free(buf);
		errno = err;
	}
	return w;
}

ssize_t ssp_sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	/* Not a cancellation point; its reads and writes of the kernel fd
	 * are (and happen with the lock held). */
	ssp_nocancel();
	if (ssp_fd_sock(in_fd))
		return sendfile_from_sock(out_fd, in_fd, offset, count);
	return sendfile_to_sock(out_fd, in_fd, offset, count);
}

/* --------------------------------------------------- recvmmsg, sendmmsg */

/* The kernel's internal flag, refused from user space with EINVAL. */
#define SSP_MSG_CMSG_COMPAT 0x80000000u

static size_t msg_total(const struct msghdr *m)
{
	return m->msg_iov ? iov_total(m->msg_iov, (int)m->msg_iovlen) : 0;
}

/*
 * Linux's do_recvmmsg for a stream socket: one recvmsg per entry until
 * vlen, an error or the timeout (looked at after each entry only, as
 * Linux does; a zero timeout ends after the first); MSG_WAITFORONE turns
 * on MSG_DONTWAIT after the first.  At end of stream every entry gets 0.
 * An error after some entries is kept as the socket's pending error
 * (reported by the next call), EAGAIN excepted.
 */
int ssp_recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags,
		 struct timespec *timeout)
{
	struct timespec end = { 0, 0 }, left = { 0, 0 };
	unsigned int done = 0;
	int err = 0;

	if ((unsigned int)flags & SSP_MSG_CMSG_COMPAT) {
		errno = EINVAL;
		return -1;
	}
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000L) {
			errno = EINVAL;
			return -1;
		}
		if (timeout->tv_sec || timeout->tv_nsec) {
			clock_gettime(CLOCK_MONOTONIC, &end);
			end.tv_sec += timeout->tv_sec;
			end.tv_nsec += timeout->tv_nsec;
			if (end.tv_nsec >= 1000000000L) {
				end.tv_sec++;
				end.tv_nsec -= 1000000000L;
			}
		}
	}
	while (done < vlen) {
		ssize_t r = ssp_recvmsg(fd, &vec[done].msg_hdr, flags & ~MSG_WAITFORONE);

		if (r < 0) {
			err = errno;
			break;
		}
		vec[done++].msg_len = (unsigned int)r;
		if (flags & MSG_WAITFORONE)
			flags |= MSG_DONTWAIT;
		if (timeout) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left.tv_sec = end.tv_sec - now.tv_sec;
			left.tv_nsec = end.tv_nsec - now.tv_nsec;
			if (left.tv_nsec < 0) {
				left.tv_sec--;
				left.tv_nsec += 1000000000L;
			}
			if (left.tv_sec < 0) {
				left.tv_sec = left.tv_nsec = 0;
				break;
			}
			if (!left.tv_sec && !left.tv_nsec)
				break;
		}
	}
	if (done && timeout)
		*timeout = left;
	if (!err)
		return (int)done;
	if (!done) {
		errno = err;
		return -1;
	}
	if (err != EAGAIN && err != EINTR) {
		struct ssp_sock *s = ssp_sock_enter(fd);

		if (s) {
			s->err = err;
			ssp_unlock();
		}
	}
	return (int)done;
}

/* Linux's __sys_sendmmsg: one sendmsg per entry (at most UIO_MAXIOV), up
 * to the first error or the first entry not sent whole. */
int ssp_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	unsigned int done = 0;

	if ((unsigned int)flags & SSP_MSG_CMSG_COMPAT) {
		errno = EINVAL;
		return -1;
	}
	if (vlen > IOV_MAX)
		vlen = IOV_MAX;
	while (done < vlen) {
		ssize_t r = ssp_sendmsg(fd, &vec[done].msg_hdr, flags);

		if (r < 0)
			return done ? (int)done : -1;
		vec[done].msg_len = (unsigned int)r;
		if ((size_t)r < msg_total(&vec[done++].msg_hdr))
			break;
	}
	return (int)done;
}

/* ------------------------------------------------------------ readiness */

bool ssp_sock_closed(const struct ssp_sock *s)
{
	const struct ss_conn *c = s->conn;

	return s->state == SSP_S_CONNECTED && c &&
	       (ss_conn_error(c) || (c->peer_fin && c->fin_acked));
}

/* As Linux's tcp_poll reports them, from the connection state. */
uint32_t ssp_sock_poll(const struct ssp_sock *s)
{
	const struct ss_conn *c = s->conn;
	uint32_t m = 0;
	struct iovec iov[2];

	if (s->inh) /* inherited across fork, first use: adopt it */
		ssp_sock_claim((struct ssp_sock *)(uintptr_t)s);
	c = s->conn;
	switch (s->state) {
	case SSP_S_NEW:
		return POLLOUT | POLLHUP;
	case SSP_S_LISTEN:
		ssp_listen_want((struct ssp_sock *)(uintptr_t)s);
		return s->accq.n ? POLLIN : 0;
	case SSP_S_CONNECTING:
	case SSP_S_AWAY: /* another process of ours has it now */
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
