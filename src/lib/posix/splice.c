/* splice.c - splice(2) between an accelerated socket and a pipe, copying through the connection's rings. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

/*
 * Linux splices a TCP socket into a pipe (tcp_splice_read) and a pipe into
 * a socket (splice_to_socket) by passing pages; here the bytes are copied
 * between the connection's rings and the pipe (pwritev2/preadv2 with
 * RWF_NOWAIT, so the pipe never blocks us while we hold the layer's lock).
 * The results are Linux's (fs/splice.c, checked on 6.18), in its order:
 *
 *   len 0                          -> 0, before anything else
 *   flags beyond SPLICE_F_*        -> EINVAL
 *   a bad (or O_PATH) fd           -> EBADF
 *   an offset on the pipe          -> ESPIPE
 *   in not readable, out not writable -> EBADF
 *   no pipe on either side         -> EINVAL
 *   an offset on the socket        -> EINVAL (a socket has no pread/pwrite)
 *
 * Then the pipe is waited for first (room to write, data to read: with
 * SPLICE_F_NONBLOCK or the pipe's O_NONBLOCK, EAGAIN instead; a pipe
 * without readers is EPIPE and SIGPIPE; one empty without writers is 0),
 * then the socket, with recv()'s and send()'s rules: the socket's own
 * O_NONBLOCK and SO_RCVTIMEO/SO_SNDTIMEO decide whether it waits (not
 * SPLICE_F_NONBLOCK, as on Linux), its error comes once, a send after
 * shutdown or on a socket never connected is EPIPE with SIGPIPE.  From a
 * socket, splice returns what is there (up to len and what the pipe
 * takes) without waiting for more, as recv() does.
 */

#define SPLICE_FLAGS (SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT)

/* Linux's cap on one read/write (MAX_RW_COUNT). */
#define SPLICE_MAX_RW ((size_t)INT_MAX & ~(size_t)4095)

/* What splice needs to know of one of its fds. */
struct end {
	bool sock;   /* an accelerated socket */
	bool pipe;   /* a pipe or FIFO */
	int fl;      /* file status flags */
};

/* 0, or -1 with EBADF (as fdget() for a closed or O_PATH fd). */
static int end_probe(struct end *e, int fd)
{
	struct stat st;

	e->sock = ssp_fd_sock(fd) != NULL;
	e->pipe = false;
	if (e->sock) {
		e->fl = O_RDWR;
		return 0;
	}
	e->fl = ssp_real.fcntl(fd, F_GETFL);
	if (e->fl < 0 || (e->fl & O_PATH)) {
		errno = EBADF;
		return -1;
	}
	e->pipe = fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
	return 0;
}

/* The wait for the pipe: nothing of the layer's is held (cancellable). */
static int pipe_sleep(void *arg)
{
	return ssp_real.poll(arg, 1, -1);
}

/*
 * Linux's wait_for_space (@events POLLOUT) and splice_from_pipe_next
 * (POLLIN) on pipe @fd, without the layer's lock.  0 when the pipe is
 * ready, 1 when it is empty and has no writer (end of file), -1 with
 * errno: EPIPE (no reader; SIGPIPE raised, as the kernel does), EAGAIN
 * (@nonblock), EINTR (a signal whose handler had no SA_RESTART).
 */
static int pipe_wait(int fd, short events, bool nonblock)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };

		if (ssp_real.poll(&p, 1, 0) < 0)
			return -1;
		if (events == POLLOUT && (p.revents & POLLERR)) {
			raise(SIGPIPE);
			errno = EPIPE;
			return -1;
		}
		if (p.revents & events)
			return 0;
		if (events == POLLIN && (p.revents & POLLHUP))
			return 1;
		if (nonblock) {
			errno = EAGAIN;
			return -1;
		}
		if (ssp_cancellable(pipe_sleep, &p, NULL, NULL) < 0 && errno == EINTR &&
		    !ssp_intr_restart())
			return -1;
	}
}

/* The accelerated socket @in_fd -> pipe @out_fd. */
static ssize_t sock_to_pipe(int in_fd, int out_fd, size_t len, bool nonblock)
{
	for (;;) {
		struct ssp_sock *s;
		bool full = false;
		ssize_t n;
		int err;

		if (pipe_wait(out_fd, POLLOUT, nonblock) < 0)
			return -1;
		s = ssp_sock_enter(in_fd);
		if (!s)
			return -1;
		s->hold++;
		n = ssp_sock_recv_pipe(s, out_fd, len, &full);
		err = errno;
		ssp_sock_unhold(s);
		ssp_unlock();
		if (n < 0 && err == EAGAIN && full)
			continue; /* another writer filled the pipe meanwhile: wait again */
		errno = err;
		return n;
	}
}

/* Pipe @in_fd -> the accelerated socket @out_fd. */
static ssize_t pipe_to_sock(int in_fd, int out_fd, size_t len, bool nonblock)
{
	for (;;) {
		struct ssp_sock *s;
		bool drained = false, sigpipe = false;
		int avail = 0, rc;
		ssize_t n;
		int err;

		rc = pipe_wait(in_fd, POLLIN, nonblock);
		if (rc != 0)
			return rc < 0 ? -1 : 0;
		if (ssp_real.ioctl(in_fd, FIONREAD, &avail) < 0)
			return -1;
		if (avail <= 0)
			continue; /* another reader was quicker */
		s = ssp_sock_enter(out_fd);
		if (!s)
			return -1;
		s->hold++;
		n = ssp_sock_send_pipe(s, in_fd, len < (size_t)avail ? len : (size_t)avail,
				       &drained, &sigpipe);
		err = errno;
		ssp_sock_unhold(s);
		ssp_unlock();
		if (n < 0 && sigpipe)
			raise(SIGPIPE);
		if (n == 0 && drained)
			continue;
		errno = err;
		return n;
	}
}

ssize_t ssp_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
		   unsigned int flags)
{
	struct end in, out;

	if (!len)
		return 0;
	if (flags & ~(unsigned int)SPLICE_FLAGS) {
		errno = EINVAL;
		return -1;
	}
	if (end_probe(&in, fd_in) < 0 || end_probe(&out, fd_out) < 0)
		return -1;
	if ((in.pipe && off_in) || (out.pipe && off_out)) {
		errno = ESPIPE;
		return -1;
	}
	if ((in.fl & O_ACCMODE) == O_WRONLY || (out.fl & O_ACCMODE) == O_RDONLY) {
		errno = EBADF;
		return -1;
	}
	if (!(in.pipe && out.sock) && !(in.sock && out.pipe)) {
		errno = EINVAL; /* two sockets, a file, ...: Linux wants a pipe */
		return -1;
	}
	if (off_in || off_out || (ssize_t)len < 0) {
		errno = EINVAL; /* the offset is the socket's (rw_verify_area) */
		return -1;
	}
	if (len > SPLICE_MAX_RW)
		len = SPLICE_MAX_RW;
	/* The pipe's reads and writes happen with the lock held: no
	 * cancellation there (its waits stay cancellable). */
	ssp_nocancel();
	/* Linux: the pipe's O_NONBLOCK counts as SPLICE_F_NONBLOCK. */
	if (out.pipe)
		return sock_to_pipe(fd_in, fd_out, len,
				    (flags & SPLICE_F_NONBLOCK) || (out.fl & O_NONBLOCK));
	return pipe_to_sock(fd_in, fd_out, len, (flags & SPLICE_F_NONBLOCK) || (in.fl & O_NONBLOCK));
}
