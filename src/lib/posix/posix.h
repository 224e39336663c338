/* posix.h - the POSIX sockets layer of libslipstream: internal state shared by src/lib/posix/ and the preload shim. */
#ifndef SS_LIB_POSIX_POSIX_H
#define SS_LIB_POSIX_POSIX_H

/*
 * The layer turns TCP sockets (AF_INET, SOCK_STREAM) into library
 * connections on ONE context of ONE attachment per process.  Every
 * accelerated socket owns a real kernel fd (an eventfd that never becomes
 * readable), so fd numbers stay unique and dup/fcntl/CLOEXEC keep working;
 * ssp_fd_get() maps the number to the socket.
 *
 * Locking: one mutex (ssp.lock) around all layer state; every ssp_* entry
 * point takes it, and blocking waits drop it while they sleep.  The layer
 * never calls a libc function that the shim overrides while holding it,
 * except on fds that are not in the table (the library's eventfds and
 * attach socket), which the shim passes straight to libc without locking.
 * Per-thread contexts come later: today several threads blocking in the
 * layer at once may see a wake-up late (one context eventfd for all).
 *
 * fork(): the child must not touch the parent's shared region: it
 * attaches as its own application and inherits the sockets (fork.c); a
 * socket's connection lives in one process at a time (SSP_S_AWAY in the
 * others that hold it), handed back when that process lets go.
 */

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "lib.h"

/* ----------------------------------------------------------------- lists */

struct ssp_link {
	struct ssp_link *prev, *next;
};

#define SSP_CONTAINER(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void ssp_list_init(struct ssp_link *h)
{
	h->prev = h->next = h;
}

static inline bool ssp_list_empty(const struct ssp_link *h)
{
	return h->next == h;
}

static inline void ssp_list_add_tail(struct ssp_link *h, struct ssp_link *e)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

static inline void ssp_list_del(struct ssp_link *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

/* ---------------------------------------------------------- real libc */

/* The libc functions the layer uses on kernel fds; resolved with
 * dlsym(RTLD_NEXT) so that, when preloaded, they bypass the shim. */
struct ssp_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	int (*shutdown)(int, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
};

extern struct ssp_real ssp_real;

/* ssp_real_init - resolve ssp_real (idempotent, thread-safe). */
void ssp_real_init(void);

/* ------------------------------------------------------------- objects */

enum ssp_file_type { SSP_F_SOCK = 1, SSP_F_EPOLL };

/* First member of every object the fd table points to. */
struct ssp_file {
	uint8_t type; /* enum ssp_file_type */
};

enum ssp_state {
	SSP_S_NEW,        /* socket(), maybe bind() */
	SSP_S_LISTEN,     /* listen() succeeded */
	SSP_S_CONNECTING, /* ss_connect posted, CONNECTED not yet seen */
	SSP_S_CONNECTED,  /* sock->conn set (the connection may be dead inside) */
	SSP_S_FAILED,     /* connect failed: sock->err tells why */
	SSP_S_AWAY,       /* fork: another process of ours adopted the connection;
			   * we hold a reference (inh_*) until it comes back */
};

/* Accepted connections waiting for accept(): a growable FIFO. */
struct ssp_accq {
	struct ss_conn **q;
	uint32_t head, n, cap;
};

struct ssp_sock {
	struct ssp_file f;
	int refs;               /* fds mapping to this socket */
	int hold;               /* calls using it while the lock is dropped */
	uint8_t state;          /* enum ssp_state */
	bool nonblock;          /* O_NONBLOCK (per open file: shared by dups) */
	bool bound;
	bool shut_rd, shut_wr;
	bool listen_done;       /* LISTENING (or its CMD_ERROR) arrived */
	int listen_err;
	int err;                /* pending SO_ERROR, cleared when reported */
	uint32_t bind_ip;       /* host order */
	uint16_t bind_port;
	uint32_t listener;      /* service listener id */
	uint64_t cookie;        /* listen/connect cookie (0: none) */
	struct ssp_link in_cookie; /* on ssp.cookies while cookie != 0 */
	struct ss_conn *conn;
	struct ssp_accq accq;
	uint32_t seq;           /* bumped by every event: edge-triggered epoll */
	struct ssp_link regs;   /* struct ssp_epreg.in_sock */

	/* The service's port entry (bind(), then listen() or connect()). */
	bool has_entry;
	bool bind_done;         /* BOUND (or its CMD_ERROR) arrived */
	int bind_err;
	uint32_t entry;
	/* Shared across fork (see fork.c). */
	bool shared;            /* a fork happened since: arm listeners on use */
	bool armed;             /* SS_CMD_LISTEN_ARM sent */
	bool inh;               /* inherited connection not adopted yet: */
	uint32_t inh_owner, inh_slot, inh_gen; /* the owner's handle */
	bool adopt_done;        /* ADOPTED (or its CMD_ERROR) arrived */
	int adopt_err;
	bool moved;             /* another process has the connection for good */
	uint32_t ref_lip, ref_rip; /* the connection's endpoints while inh or */
	uint16_t ref_lport, ref_rport; /* AWAY: a hand-back is matched on them */
	uint32_t fork_gen;      /* last fork that converted it */

	/* socket options (stored; most are fixed behaviour in the service) */
	bool reuseaddr, reuseport, keepalive, nodelay, linger_on;
	bool nb_connect;        /* a non-blocking connect() not yet confirmed by a second call */
	int linger_s;
	int keepidle, keepintvl, keepcnt;
	int rcvtimeo_ms, sndtimeo_ms; /* 0: none */
};

/* One epoll set that holds accelerated fds (a real kernel epoll fd). */
struct ssp_ep {
	struct ssp_file f;
	int epfd;
	bool has_ctx;           /* the context eventfd is in the kernel set */
	struct ssp_link regs;   /* struct ssp_epreg.in_ep */
	struct ssp_link rdlist; /* struct ssp_epreg.in_rd: may be ready */
};

struct ssp_epreg {
	struct ssp_ep *ep;
	struct ssp_sock *sock;
	int fd;
	uint32_t events;
	epoll_data_t data;
	uint32_t seen_seq;      /* sock->seq when last reported (EPOLLET) */
	bool disabled;          /* EPOLLONESHOT fired */
	bool on_rd;
	struct ssp_link in_sock, in_ep, in_rd;
};

/* epoll_data value marking the context eventfd in kernel epoll sets. */
#define SSP_EP_CTX_MARK 0x55535350435458ffull

enum ssp_mode {
	SSP_M_UNSET,    /* no accelerated socket asked for yet */
	SSP_M_ON,       /* attached */
	SSP_M_KERNEL,   /* service unreachable: everything goes to libc */
	SSP_M_DEAD,     /* forked child that could not attach: accelerated fds are unusable */
	SSP_M_FORKED,   /* forked child, not attached yet (fork.c does it) */
};

struct ssp_layer {
	pthread_mutex_t lock;
	int mode;               /* enum ssp_mode */
	bool strict;            /* SLIPSTREAM_STRICT=1 */
	int attach_err;
	struct ss_app *app;
	struct ss_ctx *ctx;
	int evfd;
	uint32_t rxbuf, txbuf;
	uint32_t service_ip;    /* host order, 0 until known */
	bool service_ip_tried;
	uint64_t next_cookie;
	struct ssp_link cookies; /* sockets waiting for LISTENING/CONNECTED */
	struct ss_conn **deferred; /* close/abort that found the queue full */
	uint32_t n_deferred, cap_deferred;
	bool *deferred_abort;
	pid_t pid;                /* the process the attachment belongs to */
	uint32_t fork_gen;        /* forks that converted the sockets (fork.c) */
	bool inherit_done;        /* INHERITED arrived (fork.c) */
	int inherit_err;
	struct ssp_link waiters;  /* struct ssp_waiter: threads blocked in the layer */
	struct ssp_waiter *poller; /* the one of them that armed the context */
};

extern struct ssp_layer ssp;

/* ----------------------------------------------------------- core.c */

void ssp_lock(void);
void ssp_unlock(void);

/* ssp_fd_get - the object behind @fd or NULL; lock-free (the answer may
 * be stale if another thread closes @fd concurrently, as with any fd). */
struct ssp_file *ssp_fd_get(int fd);
/* ssp_fd_set - install @f (NULL removes).  Caller holds the lock. */
int ssp_fd_set(int fd, struct ssp_file *f);
/* ssp_fd_foreach - call @fn for every fd in the table.  Lock held; @fn
 * must not change the table. */
void ssp_fd_foreach(void (*fn)(int fd, struct ssp_file *f, void *arg), void *arg);
/* ssp_fd_sock - the socket behind @fd, NULL when @fd is not one. */
struct ssp_sock *ssp_fd_sock(int fd);
/* ssp_sock_enter - take the lock and return the socket behind @fd; on
 * failure the lock is released and errno is EBADF (not ours, or the layer
 * is off) or ENOTSOCK (one of our epoll sets). */
struct ssp_sock *ssp_sock_enter(int fd);
/* ssp_fail_unlock - release the lock, set errno to @err, return -1. */
int ssp_fail_unlock(int err);
/* ssp_fd_busy - true when @fd needs the layer (socket or epoll set). */
static inline bool ssp_fd_busy(int fd)
{
	return ssp_fd_get(fd) != NULL;
}

/* ssp_ready - attach on first use.  Returns SSP_M_ON or SSP_M_KERNEL, or
 * -1 with errno (strict mode).  Caller holds the lock. */
int ssp_ready(void);
/* ssp_pump - take every pending event and apply it.  Lock held. */
void ssp_pump(void);
/* A thread blocked in the layer (a blocking call, poll/select, or
 * epoll_wait): woken through its own eventfd, which poll/select put in
 * their array and epoll_wait in the kernel set while it sleeps there. */
struct ssp_waiter {
	struct ssp_link link;   /* on ssp.waiters while blocked */
	struct ssp_link in_ep;  /* on an epoll set's sleepers (epoll.c) */
	int efd;
};

/* ssp_waiter_self - this thread's waiter, made on first use; NULL when no
 * eventfd can be had (the caller then naps in short steps). */
struct ssp_waiter *ssp_waiter_self(void);

/* ssp_wait_begin - register @w before dropping the lock to block.
 * Returns 1: the caller is the poller and must also wait on ssp.evfd (the
 * context is armed); 0: wait on w->efd only; -1: events are pending
 * (not registered: pump and re-check).  ssp_wait_end - after retaking
 * the lock: unregister, consume w->efd, pump, hand the poller role on.
 * ssp_wake_others - called by ssp_pump: wake the waiters (@events) or the
 * poller (@disarmed: the pump took its arming away). */
int ssp_wait_begin(struct ssp_waiter *w);
void ssp_wait_end(struct ssp_waiter *w);
void ssp_wake_others(bool events, bool disarmed);
/* ssp_block - sleep until events arrive or @deadline_ms (monotonic ms,
 * -1: none).  Drops the lock while sleeping.  Returns 0 (events or a
 * spurious wake: re-check), or -1 with errno EINTR or ETIMEDOUT. */
int ssp_block(int64_t deadline_ms, const sigset_t *mask);
/* ssp_block_until - block (signals ignored) until *@done, set by an event
 * handler, or @deadline_ms; returns *@done. */
bool ssp_block_until(const bool *done, int64_t deadline_ms);
int64_t ssp_now_ms(void);
int64_t ssp_deadline(int timeout_ms);
int ssp_ms_left(int64_t deadline_ms);

void ssp_sock_touch(struct ssp_sock *s);
/* ssp_sock_put - drop an fd reference; ssp_sock_unhold - end a call that
 * set s->hold++ before dropping the lock.  The last of both frees @s. */
void ssp_sock_put(struct ssp_sock *s);
void ssp_sock_unhold(struct ssp_sock *s);
struct ssp_sock *ssp_sock_new(void);
/* Close or abort @c now or, when the command queue is full, later. */
void ssp_conn_release(struct ss_conn *c, bool abort);
uint32_t ssp_service_ip(void);

/* ssp_log_once - one stderr line per distinct @key (a string literal). */
void ssp_log_once(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ssp_sock_poll - Linux poll bits (POLLIN, POLLOUT, ...) of @s now. */
uint32_t ssp_sock_poll(const struct ssp_sock *s);

/* ssp_sock_closed - @s is connected but in Linux's CLOSE state: reset,
 * timed out, or both FINs done (the peer's received, ours acknowledged):
 * shutdown() and getpeername() say ENOTCONN. */
bool ssp_sock_closed(const struct ssp_sock *s);

/* ----------------------------------------------------------- fork.c */

/* ssp_fork - fork(2) for the shim: the child attaches as its own
 * application and inherits the parent's sockets (the parent waits until
 * the service has recorded that, at most a few seconds). */
pid_t ssp_fork(void);
/* ssp_child_attach - in a forked child (mode SSP_M_FORKED): attach and
 * inherit now.  Lock held.  0, or -1 (mode becomes SSP_M_DEAD). */
int ssp_child_attach(void);
/* ssp_sock_claim - @s was inherited across fork and is used for the first
 * time: adopt its connection (blocks for the service's answer).  Lock
 * held.  Afterwards @s is connected, or failed with s->moved set. */
void ssp_sock_claim(struct ssp_sock *s);
/* ssp_sock_moved - another process of ours adopted @s's connection
 * (SS_EVENT_MOVED @e): @s is AWAY, holding the reference the event
 * names, or failed (ENOTCONN) when it names none.  ssp_sock_returned -
 * the connection is @s's again: @c (SS_EVENT_ADOPTED, unasked).
 * ssp_ref_find - the socket holding the reference that event @e
 * replaces, or NULL.  ssp_ref_gone - the reference to handle (@owner,
 * @slot, @gen) is gone (SS_EVENT_MOVED without a conn): its socket fails
 * with ENOTCONN.  Lock held. */
void ssp_sock_moved(struct ssp_sock *s, const struct ss_event *e);
void ssp_sock_returned(struct ssp_sock *s, struct ss_conn *c);
struct ssp_sock *ssp_ref_find(const struct ss_event *e);
void ssp_ref_gone(uint32_t owner, uint32_t slot, uint32_t gen);
/* ssp_listen_want - this process accepts from listener @s (shared across
 * fork): ask the service for its connections.  Lock held. */
void ssp_listen_want(struct ssp_sock *s);
/* ssp_exec_prepare - before exec: close-on-exec sockets are closed
 * cleanly; the others cannot cross exec and are closed too, with a log line. */
void ssp_exec_prepare(void);

/* ----------------------------------------------- the POSIX entry points */
/* Each returns what the libc function returns and sets errno likewise.
 * Calls on fds that are not accelerated are not expected here, except
 * where noted (the shim routes those to libc). */

int ssp_socket(int domain, int type, int protocol);   /* -2: not ours, use libc */
int ssp_bind(int fd, const struct sockaddr *sa, socklen_t len);
int ssp_listen(int fd, int backlog);
int ssp_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags);
int ssp_connect(int fd, const struct sockaddr *sa, socklen_t len);
int ssp_shutdown(int fd, int how);
int ssp_close(int fd);                /* also epoll fds in the table */
/* ssp_fd_forget - @fd is about to be replaced (dup2 onto it): drop it
 * from the layer without closing the number. */
void ssp_fd_forget(int fd);
int ssp_dup(int oldfd, int newfd, int flags, bool exact); /* dup/dup2/dup3/F_DUPFD */

ssize_t ssp_recvmsg(int fd, struct msghdr *msg, int flags);
ssize_t ssp_sendmsg(int fd, const struct msghdr *msg, int flags);
ssize_t ssp_recv(int fd, void *buf, size_t len, int flags,
		 struct sockaddr *sa, socklen_t *salen);
ssize_t ssp_send(int fd, const void *buf, size_t len, int flags);
ssize_t ssp_readv(int fd, const struct iovec *iov, int n);
ssize_t ssp_writev(int fd, const struct iovec *iov, int n);

int ssp_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int ssp_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int ssp_getsockname(int fd, struct sockaddr *sa, socklen_t *len);
int ssp_getpeername(int fd, struct sockaddr *sa, socklen_t *len);
int ssp_fcntl(int fd, int cmd, uintptr_t arg);
int ssp_ioctl(int fd, unsigned long req, void *arg);

/* epoll.c: @epfd may be any epoll fd (a set without accelerated fds is
 * passed to libc). */
int ssp_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int ssp_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask);
void ssp_ep_free(struct ssp_ep *ep);
/* ssp_ep_wake - @ep's ready list gained an entry: wake a thread blocked in
 * epoll_wait on it in another thread (lock held). */
void ssp_ep_wake(struct ssp_ep *ep);
void ssp_ep_drop_fd(struct ssp_sock *s, int fd);

/* poll.c: @fds may mix accelerated and kernel fds. */
int ssp_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);
int ssp_select(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout_ms,
	       const sigset_t *mask);

#endif /* SS_LIB_POSIX_POSIX_H */
