/* shim.c - LD_PRELOAD front-end: defines the libc socket calls and routes each to the POSIX layer or to libc. */

/*
 * The rule, for every call: an fd in the layer's table (an accelerated
 * socket, or an epoll set holding some) goes to src/lib/posix/; anything
 * else goes to the real libc function, resolved once with
 * dlsym(RTLD_NEXT), without taking any lock.  socket() asks the layer,
 * which keeps only AF_INET/SOCK_STREAM (and hands the rest back: -2).
 * Every call into the layer is bracketed for pthread_cancel (posix.h,
 * "Cancellation"): POINT() for the calls that are cancellation points in
 * libc (a pending cancellation acts at their entry), CALL() for the
 * others.  No other logic lives here.
 */
/* Plain names: fortify would inline read() & co., 64-bit file offsets
 * would rename fcntl to fcntl64 (both are defined below). */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "posix/posix.h"
#include "posix/posix_ext.h"

#define REAL(name) (__builtin_expect(ssp_real.name != NULL, 1) ? ssp_real.name \
		    : (ssp_real_init(), ssp_real.name))

#define SOCK(fd) (ssp_fd_sock(fd) != NULL)

/* @call into the layer, a cancellation point in libc or not (@point):
 * cancellation acts only where the layer lets it; errno as @call left it. */
#define LAYER(point, call) __extension__ ({ \
		ssp_call_enter(point); \
		__typeof__(call) r_ = (call); \
		int e_ = errno; \
		ssp_call_leave(); \
		errno = e_; \
		r_; \
	})
#define POINT(call) LAYER(true, call)
#define CALL(call) LAYER(false, call)

__attribute__((constructor)) static void shim_init(void)
{
	ssp_real_init();
	ssp_ext_init();
}

#define REAL_EXT(name) (__builtin_expect(ssp_real_ext.name != NULL, 1) ? ssp_real_ext.name \
			: (ssp_ext_init(), ssp_real_ext.name))

/* Fortified entry points (glibc's _FORTIFY_SOURCE): not in our headers. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *salen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen);
int epoll_pwait2(int epfd, struct epoll_event *evs, int max,
		 const struct timespec *ts, const sigset_t *mask);

/* ------------------------------------------------------------ sockets */

int socket(int domain, int type, int protocol)
{
	int fd;

	ssp_real_init();
	fd = CALL(ssp_socket(domain, type, protocol));
	return fd == -2 ? ssp_real.socket(domain, type, protocol) : fd;
}

int bind(int fd, __CONST_SOCKADDR_ARG sa, socklen_t len)
{
	if (SOCK(fd))
		return CALL(ssp_bind(fd, sa.__sockaddr__, len));
	return REAL(bind)(fd, sa.__sockaddr__, len);
}

int listen(int fd, int backlog)
{
	if (SOCK(fd))
		return CALL(ssp_listen(fd, backlog));
	return REAL(listen)(fd, backlog);
}

int accept4(int fd, __SOCKADDR_ARG sa, socklen_t *len, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_accept4(fd, sa.__sockaddr__, len, flags));
	return REAL(accept4)(fd, sa.__sockaddr__, len, flags);
}

int accept(int fd, __SOCKADDR_ARG sa, socklen_t *len)
{
	if (SOCK(fd))
		return POINT(ssp_accept4(fd, sa.__sockaddr__, len, 0));
	return REAL(accept4)(fd, sa.__sockaddr__, len, 0);
}

int connect(int fd, __CONST_SOCKADDR_ARG sa, socklen_t len)
{
	if (SOCK(fd))
		return POINT(ssp_connect(fd, sa.__sockaddr__, len));
	return REAL(connect)(fd, sa.__sockaddr__, len);
}

int shutdown(int fd, int how)
{
	if (SOCK(fd))
		return CALL(ssp_shutdown(fd, how));
	return REAL(shutdown)(fd, how);
}

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if (SOCK(fd))
		return CALL(ssp_getsockopt(fd, level, name, val, len));
	return REAL(getsockopt)(fd, level, name, val, len);
}

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (SOCK(fd))
		return CALL(ssp_setsockopt(fd, level, name, val, len));
	return REAL(setsockopt)(fd, level, name, val, len);
}

int getsockname(int fd, __SOCKADDR_ARG sa, socklen_t *len)
{
	if (SOCK(fd))
		return CALL(ssp_getsockname(fd, sa.__sockaddr__, len));
	return REAL(getsockname)(fd, sa.__sockaddr__, len);
}

int getpeername(int fd, __SOCKADDR_ARG sa, socklen_t *len)
{
	if (SOCK(fd))
		return CALL(ssp_getpeername(fd, sa.__sockaddr__, len));
	return REAL(getpeername)(fd, sa.__sockaddr__, len);
}

/* --------------------------------------------------------------- data */

ssize_t read(int fd, void *buf, size_t n)
{
	if (SOCK(fd))
		return POINT(ssp_recv(fd, buf, n, 0, NULL, NULL));
	return REAL(read)(fd, buf, n);
}

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	(void)buflen;
	return read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (SOCK(fd))
		return POINT(ssp_send(fd, buf, n, 0));
	return REAL(write)(fd, buf, n);
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
	if (SOCK(fd))
		return POINT(ssp_readv(fd, iov, n));
	return REAL(readv)(fd, iov, n);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (SOCK(fd))
		return POINT(ssp_writev(fd, iov, n));
	return REAL(writev)(fd, iov, n);
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_recv(fd, buf, n, flags, NULL, NULL));
	return REAL(recvfrom)(fd, buf, n, flags, NULL, NULL);
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	(void)buflen;
	return recv(fd, buf, n, flags);
}

ssize_t recvfrom(int fd, void *buf, size_t n, int flags, __SOCKADDR_ARG sa,
		 socklen_t *salen)
{
	if (SOCK(fd))
		return POINT(ssp_recv(fd, buf, n, flags, sa.__sockaddr__, salen));
	return REAL(recvfrom)(fd, buf, n, flags, sa.__sockaddr__, salen);
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
		       struct sockaddr *sa, socklen_t *salen)
{
	(void)buflen;
	return recvfrom(fd, buf, n, flags, sa, salen);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_recvmsg(fd, msg, flags));
	return REAL(recvmsg)(fd, msg, flags);
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_send(fd, buf, n, flags));
	return REAL(sendto)(fd, buf, n, flags, NULL, 0);
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG sa,
	       socklen_t salen)
{
	if (SOCK(fd))
		return POINT(ssp_send(fd, buf, n, flags)); /* TCP ignores the address */
	return REAL(sendto)(fd, buf, n, flags, sa.__sockaddr__, salen);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_sendmsg(fd, msg, flags));
	return REAL(sendmsg)(fd, msg, flags);
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	if (SOCK(out_fd) || SOCK(in_fd))
		return CALL(ssp_sendfile(out_fd, in_fd, offset, count));
	return REAL_EXT(sendfile)(out_fd, in_fd, offset, count);
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
	_Static_assert(sizeof(off64_t) == sizeof(off_t), "64-bit off_t expected");
	return sendfile(out_fd, in_fd, (off_t *)offset, count);
}

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	if (SOCK(fd_in) || SOCK(fd_out))
		return POINT(ssp_splice(fd_in, off_in, fd_out, off_out, len, flags));
	return REAL_EXT(splice)(fd_in, off_in, fd_out, off_out, len, flags);
}

int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *tmo)
{
	if (SOCK(fd))
		return POINT(ssp_recvmmsg(fd, vec, vlen, flags, tmo));
	return REAL_EXT(recvmmsg)(fd, vec, vlen, flags, tmo);
}

int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	if (SOCK(fd))
		return POINT(ssp_sendmmsg(fd, vec, vlen, flags));
	return REAL_EXT(sendmmsg)(fd, vec, vlen, flags);
}

/* ------------------------------------------------------ fd management */

int close(int fd)
{
	if (ssp_fd_busy(fd))
		return POINT(ssp_close(fd));
	return REAL(close)(fd);
}

int dup(int fd)
{
	if (ssp_fd_busy(fd))
		return CALL(ssp_dup(fd, 0, 0, false));
	return REAL(dup)(fd);
}

int dup2(int oldfd, int newfd)
{
	if (ssp_fd_busy(oldfd) || ssp_fd_busy(newfd))
		return CALL(ssp_dup(oldfd, newfd, 0, true));
	return REAL(dup2)(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags)
{
	if (ssp_fd_busy(oldfd) || ssp_fd_busy(newfd))
		return CALL(ssp_dup(oldfd, newfd, flags, true));
	return REAL(dup3)(oldfd, newfd, flags);
}

static int shim_fcntl(int fd, int cmd, uintptr_t arg)
{
	if (ssp_fd_busy(fd)) {
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			return CALL(ssp_dup(fd, (int)arg, cmd == F_DUPFD_CLOEXEC ? O_CLOEXEC : 0,
					    false));
		if (SOCK(fd))
			return CALL(ssp_fcntl(fd, cmd, arg));
	}
	return REAL(fcntl)(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return shim_fcntl(fd, cmd, arg);
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (SOCK(fd))
		return CALL(ssp_ioctl(fd, req, arg));
	return REAL(ioctl)(fd, req, arg);
}

/* -------------------------------------------------------------- epoll */

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	if (SOCK(fd))
		return CALL(ssp_epoll_ctl(epfd, op, fd, ev));
	return REAL(epoll_ctl)(epfd, op, fd, ev);
}

int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	if (ssp_fd_busy(epfd))
		return POINT(ssp_epoll_wait(epfd, evs, max, timeout, NULL));
	return REAL(epoll_wait)(epfd, evs, max, timeout);
}

int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		const sigset_t *mask)
{
	if (ssp_fd_busy(epfd))
		return POINT(ssp_epoll_wait(epfd, evs, max, timeout, mask));
	return REAL(epoll_pwait)(epfd, evs, max, timeout, mask);
}

static int ts_to_ms(const struct timespec *ts)
{
	long long ms;

	if (!ts)
		return -1;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0)
		return 0;
	ms = (long long)ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000;
	return ms > 1000000000 ? 1000000000 : (int)ms;
}

int epoll_pwait2(int epfd, struct epoll_event *evs, int max,
		 const struct timespec *ts, const sigset_t *mask)
{
	static int (*real)(int, struct epoll_event *, int, const struct timespec *,
			   const sigset_t *);

	if (ssp_fd_busy(epfd))
		return POINT(ssp_epoll_wait(epfd, evs, max, ts_to_ms(ts), mask));
	if (!real) {
		void *p = dlsym(RTLD_NEXT, "epoll_pwait2");

		if (!p) {
			errno = ENOSYS;
			return -1;
		}
		memcpy(&real, &p, sizeof(p));
	}
	return real(epfd, evs, max, ts, mask);
}

/* --------------------------------------------------------- poll, select */

static bool any_busy(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (SOCK(fds[i].fd))
			return true;
	return false;
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (any_busy(fds, n))
		return POINT(ssp_poll(fds, n, timeout, NULL));
	return REAL(poll)(fds, n, timeout);
}

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	(void)fdslen;
	return poll(fds, n, timeout);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	if (any_busy(fds, n))
		return POINT(ssp_poll(fds, n, ts_to_ms(ts), mask));
	return REAL(ppoll)(fds, n, ts, mask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		const sigset_t *mask, size_t fdslen)
{
	(void)fdslen;
	return ppoll(fds, n, ts, mask);
}

static bool sets_busy(int nfds, fd_set *r, fd_set *w, fd_set *e)
{
	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	for (int fd = 0; fd < nfds; fd++)
		if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) ||
		     (e && FD_ISSET(fd, e))) && SOCK(fd))
			return true;
	return false;
}

int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	if (sets_busy(nfds, r, w, e)) {
		int ms = -1;

		if (tv) {
			long long v = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;

			ms = v < 0 ? 0 : v > 1000000000 ? 1000000000 : (int)v;
		}
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int rc = POINT(ssp_select(nfds, r, w, e, ms, NULL));
		if (tv && rc >= 0) {
			/* Linux writes back the time not slept. */
			clock_gettime(CLOCK_MONOTONIC, &t1);
			long long left = (long long)tv->tv_sec * 1000000 + tv->tv_usec -
					 ((long long)(t1.tv_sec - t0.tv_sec) * 1000000 +
					  (t1.tv_nsec - t0.tv_nsec) / 1000);
			if (left < 0 || rc == 0)
				left = 0;
			tv->tv_sec = left / 1000000;
			tv->tv_usec = left % 1000000;
		}
		return rc;
	}
	return REAL(select)(nfds, r, w, e, tv);
}

int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
	    const sigset_t *mask)
{
	if (sets_busy(nfds, r, w, e))
		return POINT(ssp_select(nfds, r, w, e, ts_to_ms(ts), mask));
	return REAL(pselect)(nfds, r, w, e, ts, mask);
}

/* ------------------------------------------------------------ signals */

/* Every handler goes through the layer, which notes SA_RESTART for the
 * blocking calls it emulates (src/lib/posix/sig.c). */

int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	return ssp_sigaction(sig, act, oact);
}

int __sigaction(int sig, const struct sigaction *act, struct sigaction *oact);
int __sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	return ssp_sigaction(sig, act, oact);
}

sighandler_t signal(int sig, sighandler_t handler)
{
	return ssp_signal(sig, handler);
}

sighandler_t bsd_signal(int sig, sighandler_t handler); /* not declared under _GNU_SOURCE */
sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return ssp_signal(sig, handler);
}

sighandler_t ssignal(int sig, sighandler_t handler)
{
	return ssp_signal(sig, handler);
}

sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return ssp_sysv_signal(sig, handler);
}

sighandler_t __sysv_signal(int sig, sighandler_t handler);
sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
	return ssp_sysv_signal(sig, handler);
}

sighandler_t sigset(int sig, sighandler_t disp)
{
	return ssp_sigset(sig, disp);
}

int siginterrupt(int sig, int flag)
{
	return ssp_siginterrupt(sig, flag);
}
