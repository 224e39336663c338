/* posix_ext.h - POSIX layer additions beside posix.h: sendfile, splice, recvmmsg/sendmmsg, signal interception (SA_RESTART). */
#ifndef SS_LIB_POSIX_POSIX_EXT_H
#define SS_LIB_POSIX_POSIX_EXT_H

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "posix/posix.h"

/* ---------------------------------------------------------- real libc */

/* The libc functions behind the entry points of this header, resolved with
 * dlsym(RTLD_NEXT) by ssp_ext_init() (idempotent, thread-safe; the shim's
 * constructor calls it, so a signal handler never resolves anything). */
struct ssp_real_ext {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
};

extern struct ssp_real_ext ssp_real_ext;

void ssp_ext_init(void);

/* ------------------------------------------------------------ data.c */

/*
 * ssp_sendfile - sendfile(2) where @out_fd or @in_fd is accelerated.
 * A kernel file -> accelerated socket: the bytes are read (pread at
 * *offset, or read at the file position) straight into the connection's
 * send ring, never more than the ring takes, so *offset (or the file
 * position when @offset is NULL) ends exactly after what was sent.
 * An accelerated socket as @in_fd: ESPIPE with an offset; into a pipe it
 * is read like recv(); any other @out_fd: EINVAL (Linux's rules).
 */
ssize_t ssp_sendfile(int out_fd, int in_fd, off_t *offset, size_t count);

/*
 * The socket halves of splice (splice.c), on @s (lock held, @s held);
 * recv()'s and send()'s semantics on the socket's side (O_NONBLOCK,
 * SO_RCVTIMEO/SO_SNDTIMEO, errors once, SA_RESTART).
 * ssp_sock_recv_pipe - up to @len received bytes written into pipe @fd
 * straight from the receive ring, never blocking on the pipe: *@full when
 * it took less than there was (-1 with EAGAIN when it took nothing).
 * ssp_sock_send_pipe - up to @len bytes read from pipe @fd straight into
 * the send ring, never blocking on the pipe: *@drained when it had fewer.
 */
ssize_t ssp_sock_recv_pipe(struct ssp_sock *s, int fd, size_t len, bool *full);
ssize_t ssp_sock_send_pipe(struct ssp_sock *s, int fd, size_t len, bool *drained, bool *sigpipe);

/* ------------------------------------------------------- epoll_nums.c */

/*
 * ssp_ep_numbers - the other numbers of @epfd's epoll set that are not
 * in the fd table (copies made before the layer knew it as a set): their
 * count, in *@out (malloc'ed, the caller frees it; NULL when none).  0
 * when they cannot be found (said once in the log).  Scans every fd of
 * the process: once per set, when it takes its first accelerated socket.
 */
int ssp_ep_numbers(int epfd, int **out);

/* ----------------------------------------------------------- splice.c */

/*
 * ssp_splice - splice(2) where @fd_in or @fd_out is accelerated: between
 * an accelerated socket and a pipe, copying through the connection's
 * rings; Linux's checks in Linux's order (EINVAL for flags and for any
 * pair without a pipe, ESPIPE for an offset on the pipe, EINVAL for one
 * on the socket, EBADF for a wrong access mode).  SPLICE_F_NONBLOCK and
 * the pipe's O_NONBLOCK govern waiting for the pipe, the socket's
 * O_NONBLOCK waiting for the socket, as on Linux.
 */
ssize_t ssp_splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
		   unsigned int flags);

/* ssp_recvmmsg/ssp_sendmmsg - on an accelerated @fd (Linux's stream socket
 * semantics: msg_len per entry, the count returned, an error only when no
 * entry was done). */
int ssp_recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags,
		 struct timespec *timeout);
int ssp_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags);

/* ------------------------------------------------------------- sig.c */

/*
 * Signal handlers the application installs go through these: the kernel
 * gets a wrapper (with the application's sa_flags and sa_mask unchanged)
 * that notes, per thread, whether the signal's action had SA_RESTART and
 * then calls the application's handler.  oldact always reports the
 * application's own handler.  Async-signal-safe, like sigaction(2).
 */
int ssp_sigaction(int sig, const struct sigaction *act, struct sigaction *oact);
/* signal()/bsd_signal()/ssignal(): BSD semantics (SA_RESTART unless
 * siginterrupt(sig, 1) was called), glibc's. */
sighandler_t ssp_signal(int sig, sighandler_t handler);
/* sysv_signal(): SA_RESETHAND | SA_NODEFER, no SA_RESTART. */
sighandler_t ssp_sysv_signal(int sig, sighandler_t handler);
/* sigset(): System V, with SIG_HOLD. */
sighandler_t ssp_sigset(int sig, sighandler_t disp);
int ssp_siginterrupt(int sig, int flag);

/*
 * ssp_intr_restart - a blocking wait of this thread just failed with
 * EINTR: true when Linux would restart the call, i.e. when the signal
 * handler that ran last in this thread (the first one the kernel
 * delivered) was installed with SA_RESTART.  Consumes the note: a second
 * call without a new signal returns false.  The caller still returns
 * EINTR when the socket has a timeout for this direction (SO_RCVTIMEO for
 * recv/accept, SO_SNDTIMEO for send/connect), as Linux does.  A handler
 * installed behind the shim's back (a raw rt_sigaction) is not seen.
 */
bool ssp_intr_restart(void);

/*
 * A bad user buffer (EFAULT, as Linux's copy to or from user memory): a
 * copy between the caller's memory and a ring runs with ssp_fault_jmp
 * pointing at a recovery point; the layer's SIGSEGV/SIGBUS handler,
 * installed once (ssp_fault_init), jumps there when the fault is the
 * kernel's and one is set, and otherwise does what the program's own
 * action for the signal says (its handler, with its flags, mask and
 * SA_RESETHAND; the default action; a fault is never ignored).
 * sigaction() for those two signals sees and sets the program's action,
 * never the layer's.
 */
extern __thread sigjmp_buf *ssp_fault_jmp __attribute__((tls_model("initial-exec")));
extern int ssp_fault_ready;
void ssp_fault_init(void);

#endif /* SS_LIB_POSIX_POSIX_EXT_H */
