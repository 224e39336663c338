/* posix.h - the POSIX sockets layer of libslipstream: internal state shared by src/lib/posix/ and the preload shim. */
#ifndef SS_LIB_POSIX_POSIX_H
#define SS_LIB_POSIX_POSIX_H

/*
 * The layer turns TCP sockets (AF_INET, SOCK_STREAM) into library
 * connections of ONE attachment per process.  Every accelerated socket
 * owns a real kernel fd (an eventfd that never becomes readable), so fd
 * numbers stay unique and dup/fcntl/CLOEXEC keep working; ssp_fd_get()
 * maps the number to the socket.
 *
 * Contexts (cx.c).  The attachment has ssp.n_cx contexts (command ring,
 * event ring, eventfd; SLIPSTREAM_CONTEXTS, default 8).  A thread takes a
 * context of its own at its first socket() (the least used one; released
 * when the thread exits) and its sockets live there: every command for a
 * socket goes on its context's ring, and the service answers there
 * (connections accepted from a listener arrive on the listener's
 * context).  Any thread may use any socket at any time.
 *
 * Locking.  Each context has a lock (struct ssp_cx.lock) that guards its
 * rings, its event pump, its waiters and cookies, and every socket living
 * there (struct ssp_sock.cx): a call on a socket takes the lock of the
 * socket's context (ssp_sock_enter), blocking waits drop it while they
 * sleep.  ssp.glock guards the fd table's writes, the object pools,
 * attach and the choice of contexts.  Order:
 *
 *     context locks, by ascending index  ->  an epoll set's lock  ->  ssp.glock
 *
 * A thread holds at most one context lock, with one exception: the pump
 * of context 0 takes another context's lock to hand a connection back to
 * a socket living there (fork.c, see ssp_sock_returned).  Such a socket
 * moves to context 0 (the service hands connections back there); it is
 * the only way a socket changes context, and only sockets whose
 * connection is away move, so a thread that holds a socket's lock never
 * sees the socket move: only one that dropped it to sleep does, and
 * ssp_block() follows it (the thread-local "held" context is where
 * ssp_unlock() and ssp_pump() act).  The fd->socket mapping of a socket
 * changes only under its context's lock, so looking a socket up without
 * a lock and then checking the mapping again under its lock is exact;
 * sockets and epoll sets are type-stable (their memory goes back to a
 * pool, never to malloc) so a stale pointer from the lookup stays safe
 * to lock.
 *
 * The layer never calls a libc function that the shim overrides while
 * holding a lock, except on fds that are not in the table (the library's
 * eventfds and attach socket), which the shim passes straight to libc
 * without locking.
 *
 * fork(): the child must not touch the parent's shared region: it
 * attaches as its own application and inherits the sockets, all on its
 * context 0 (fork.c); a socket's connection lives in one process at a
 * time (SSP_S_AWAY in the others that hold it), handed back when that
 * process lets go.
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
#include "util/list.h"

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

struct ssp_cx;

struct ssp_sock {
	struct ssp_file f;
	/* Its context, whose lock guards every field below (loaded
	 * atomically to find that lock; see the locking rules above). */
	struct ssp_cx *cx;
	struct ssp_sock *pool_next; /* in the pool while free (ssp.glock) */
	int refs;               /* fds mapping to this socket (first field reset on reuse) */
	int hold;               /* calls using it while the lock is dropped */
	uint8_t state;          /* enum ssp_state */
	bool nonblock;          /* O_NONBLOCK (per open file: shared by dups) */
	bool bound;
	bool shut_rd, shut_wr;
	bool listen_done;       /* LISTENING (or its CMD_ERROR) arrived */
	int listen_err;
	bool autobind;          /* the port is one the service picked (listen()
				 * without bind(), or bind() to port 0) */
	bool stop_done;         /* shutdown() of the listener: LISTEN_STOPPED arrived */
	int err;                /* pending SO_ERROR, cleared when reported */
	uint32_t bind_ip;       /* host order */
	uint16_t bind_port;
	uint32_t listener;      /* service listener id */
	uint64_t cookie;        /* listen/connect cookie (0: none) */
	struct ss_list in_cookie; /* on cx->cookies while cookie != 0 */
	struct ss_conn *conn;
	struct ssp_accq accq;
	uint32_t seq;           /* bumped by every event: edge-triggered epoll */
	int n_blocked;          /* threads asleep in a call on it (atomic; cx.c) */
	struct ss_list regs;   /* struct ssp_epreg.in_sock */

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
	bool away_counted;      /* counted in ssp.n_away */

	bool lingering;         /* close() waits for SO_LINGER: conn is closed (sock.c) */

	/* socket options: the layer's own, and those the service carries out
	 * (tcpopt.c) */
	bool reuseaddr, reuseport, keepalive, nodelay, linger_on;
	bool cork;              /* TCP_CORK */
	bool opts_unsent;       /* options the service has not heard of yet (its
				 * command queue was full when they were due) */
	int maxseg;             /* TCP_MAXSEG set (0: none) */
	bool nb_connect;        /* a non-blocking connect() not yet confirmed by a second call */
	int linger_s;
	int keepidle, keepintvl, keepcnt;
	int rcvtimeo_ms, sndtimeo_ms; /* 0: none */
};

#define SSP_MAX_CX SS_MAX_CONTEXTS
#define SSP_DEFAULT_CX 8        /* contexts per attachment without SLIPSTREAM_CONTEXTS */
/* Ring per connection and direction without SLIPSTREAM_BUF: 256 KiB, so a
 * bulk flow is not held by its window (64 KiB is 1.7 Gbit/s at a 300 us
 * round trip), and a receiver that holds out-of-order data during loss
 * recovery still offers the sender room to go on (Linux starts at 128 KiB
 * and grows to 6 MiB). */
#define SSP_DEFAULT_BUF (256u * 1024)

/* An epoll set's registrations of sockets living on one context, and
 * those of them that may be ready: under that context's lock. */
struct ssp_ep_cx {
	struct ss_list regs;   /* struct ssp_epreg.in_ep */
	struct ss_list rdlist; /* struct ssp_epreg.in_rd */
};

/* One epoll set that holds accelerated fds (a real kernel epoll fd).
 * Every number of the kernel set (dup, dup2, dup3, F_DUPFD) maps to the
 * same object, as they name the same set on Linux (epoll.c). */
struct ssp_ep {
	struct ssp_file f;
	pthread_mutex_t lock;   /* the set's own state in epoll.c, and cxmask */
	int epfd;               /* one of its numbers, for the layer's own
				 * epoll_ctl (lock: another takes over when it closes) */
	uint64_t cxmask;        /* contexts with sockets registered here
				 * (written under lock, read atomically) */
	uint64_t kmask;         /* contexts whose eventfd is in the kernel set (lock) */
	struct ssp_ep_cx per[SSP_MAX_CX];
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
	struct ss_list in_sock, in_ep, in_rd;
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

/* What a waiter waits for, which decides what wakes it (cx.c). */
enum ssp_wait_kind {
	SSP_WK_ALL,     /* anything on its contexts: poll/select, fork waits */
	SSP_WK_SOCK,    /* a blocking call on one socket (->sock) */
	SSP_WK_EP,      /* epoll_wait: woken by its set's ready lists (epoll.c) */
};

/* A thread blocked in the layer (a blocking call, poll/select, or
 * epoll_wait): woken through its own eventfd, which poll/select put in
 * their array and epoll_wait in the kernel set while it sleeps there.
 * It may wait on several contexts at once (poll and epoll sets that span
 * them): one link per context. */
struct ssp_waiter {
	struct ss_list link[SSP_MAX_CX]; /* on cx->waiters while blocked there */
	struct ss_list in_ep;  /* on an epoll set's sleepers (epoll.c) */
	int efd;
	/* Set by its thread before it registers anywhere, fixed until it is
	 * off every context again (read by others under a context lock). */
	uint8_t kind;           /* enum ssp_wait_kind of the current wait */
	struct ssp_sock *sock;  /* SSP_WK_SOCK: the socket */
	struct ssp_ep *ep;      /* SSP_WK_EP: the set of its epoll_wait */
	int kicked;             /* a kick is in efd, not drained yet (atomic) */
	/* SSP_WK_EP: the set it is on the sleepers of (written under that
	 * set's lock, read atomically): epoll.c may hand it a context's
	 * poller role there, or take it away, without waking it. */
	struct ssp_ep *sleep_ep;
	bool ep_fail;           /* epoll.c could not set up a sleep */
	uint64_t id;            /* unique in the process, never 0 */
	/* The epoll sets that made it their owner (epoll.c: its eventfd may
	 * stay in their kernel sets between sleeps), some maybe no longer:
	 * its own thread's (written under the set's lock), looked at when
	 * the thread exits (ssp_ep_waiter_gone). */
	struct ssp_ep **owns;
	unsigned n_owns, cap_owns;
};

/* One context of the attachment as the layer uses it.  Everything here
 * but the fields marked otherwise is guarded by @lock. */
struct ssp_cx {
	pthread_mutex_t lock;
	struct ss_ctx *ctx;     /* set at attach (ssp.glock), then fixed */
	int evfd;               /* the context's eventfd (idem) */
	unsigned idx;
	unsigned users;         /* threads that took it as their own (ssp.glock) */
	struct ss_list cookies; /* sockets waiting for LISTENING/CONNECTED/... */
	struct ss_list waiters; /* struct ssp_waiter.link[idx]: blocked here */
	struct ssp_waiter *poller; /* the one of them that armed the context */
	struct ssp_waiter *handoff; /* kicked to become the poller (none left) */
	int n_sets;             /* epoll sets holding sockets of it (atomic; epoll.c) */
	struct ss_conn **deferred; /* close/abort that found the queue full */
	bool *deferred_abort;
	uint32_t n_deferred, cap_deferred;
} __attribute__((aligned(64)));

struct ssp_layer {
	pthread_mutex_t glock;  /* fd table writes, pools, attach, contexts */
	int mode;               /* enum ssp_mode (written under glock, read atomically) */
	bool strict;            /* SLIPSTREAM_STRICT=1 */
	int attach_err;
	struct ss_app *app;
	unsigned n_cx;          /* contexts of the attachment */
	uint32_t cx_gen;        /* bumped by every attach: threads choose again */
	uint32_t rxbuf, txbuf;
	uint64_t next_cookie;   /* atomic */
	pid_t pid;              /* the process the attachment belongs to */
	uint32_t fork_gen;      /* forks that converted the sockets (fork.c, all locks) */
	bool inherit_done;      /* INHERITED arrived (fork.c; context 0's lock) */
	int inherit_err;
	/* Sockets AWAY (fork.c) on a context other than 0 (atomic): the
	 * service hands their connections back on context 0, so while there
	 * are any, threads waiting elsewhere look at context 0 too. */
	int n_away;
	struct ssp_cx cx[SSP_MAX_CX];
};

extern struct ssp_layer ssp;

/* ----------------------------------------------------------- core.c */

/* ssp_fd_get - the object behind @fd or NULL; lock-free (the answer may
 * be stale if another thread closes @fd concurrently, as with any fd). */
struct ssp_file *ssp_fd_get(int fd);
/* ssp_fd_set - install @f (NULL removes).  Caller holds ssp.glock and,
 * to remove a socket's fd, the socket's context lock. */
int ssp_fd_set(int fd, struct ssp_file *f);
/* ssp_fd_foreach - call @fn for every fd in the table (a lock-free walk:
 * @fn must check what it finds under the right lock, or hold them all). */
void ssp_fd_foreach(void (*fn)(int fd, struct ssp_file *f, void *arg), void *arg);
/* ssp_fd_sock - the socket behind @fd, NULL when @fd is not one. */
struct ssp_sock *ssp_fd_sock(int fd);
/* ssp_sock_lock_fd - lock the context of the socket behind @fd and
 * return the socket, checked under that lock; NULL (nothing held) when
 * @fd is not a socket of ours. */
struct ssp_sock *ssp_sock_lock_fd(int fd);
/* ssp_sock_enter - lock and return the socket behind @fd, ready for a
 * call (an inherited connection claimed); on failure nothing is held and
 * errno is EBADF (not ours, or the layer is off) or ENOTSOCK (one of our
 * epoll sets). */
struct ssp_sock *ssp_sock_enter(int fd);
/* ssp_fd_busy - true when @fd needs the layer (socket or epoll set). */
static inline bool ssp_fd_busy(int fd)
{
	return ssp_fd_get(fd) != NULL;
}

/* ssp_ready - attach on first use (no lock held).  Returns SSP_M_ON or
 * SSP_M_KERNEL, or -1 with errno (strict mode). */
int ssp_ready(void);
/* ssp_cx_pump - take every pending event of @cx and apply it (its lock
 * held).  ssp_pump - the same for the context this thread holds. */
void ssp_cx_pump(struct ssp_cx *cx);
void ssp_pump(void);
/* ssp_mode - ssp.mode, read atomically. */
static inline int ssp_mode(void)
{
	return __atomic_load_n(&ssp.mode, __ATOMIC_ACQUIRE);
}

/* ssp_opts_push - send @s's options the service has not heard of
 * (tcpopt.c). */
void ssp_opts_push(struct ssp_sock *s);

/* ssp_sock_current - before a call whose answer depends on the state of
 * @s (its context's lock held): take the events the service has posted
 * on that context, as Linux's answer reflects every segment already
 * received.  One load of the ring's producer index when none waits (no
 * system call). */
static inline void ssp_sock_current(struct ssp_sock *s)
{
	struct ssp_cx *cx = s->cx;

	if (cx->ctx && ssp_mode() == SSP_M_ON && ring_arx_avail(&cx->ctx->arx))
		ssp_cx_pump(cx);
	if (__builtin_expect(s->opts_unsent, 0))
		ssp_opts_push(s);
}

void ssp_sock_touch(struct ssp_sock *s);
/* ssp_sock_put - drop an fd reference; ssp_sock_unhold - end a call that
 * set s->hold++ before dropping the lock.  The last of both frees @s. */
void ssp_sock_put(struct ssp_sock *s);
void ssp_sock_unhold(struct ssp_sock *s);
/* ssp_sock_new - a fresh socket living on @cx (no lock needed); not in
 * the fd table yet: ssp_sock_discard gives it back if it never gets there. */
struct ssp_sock *ssp_sock_new(struct ssp_cx *cx);
void ssp_sock_discard(struct ssp_sock *s);
/* Close or abort @c now or, when the command queue is full, later
 * (the lock of @c's context held). */
void ssp_conn_release(struct ss_conn *c, bool abort);
uint32_t ssp_service_ip(void);
/* A fresh cookie for a command's answer. */
uint64_t ssp_cookie_new(void);

/* ssp_log_once - one stderr line per distinct @key (a string literal). */
void ssp_log_once(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------- cx.c */

/* ssp_glock/ssp_gunlock - ssp.glock. */
void ssp_glock(void);
void ssp_gunlock(void);
/* ssp_cx_lock - lock @cx and make it this thread's held context;
 * ssp_unlock - release the held context.  ssp_fail_unlock - release it,
 * set errno to @err, return -1.  ssp_cx_held - the held context or NULL. */
void ssp_cx_lock(struct ssp_cx *cx);
void ssp_unlock(void);
int ssp_fail_unlock(int err);
struct ssp_cx *ssp_cx_held(void);
/* ssp_sock_relock - the held context is not @s's any more (it moved while
 * the lock was dropped): take @s's.  @s must be held (s->hold). */
void ssp_sock_relock(struct ssp_sock *s);
/* ssp_lock_all/ssp_unlock_all - every context lock (ascending) and
 * ssp.glock: fork and attach in a child.  ssp_unlock_all_but - after
 * ssp_lock_all and ssp_gunlock: release every context lock but @keep's,
 * which becomes the held one. */
void ssp_lock_all(void);
void ssp_unlock_all(void);
void ssp_unlock_all_but(struct ssp_cx *keep);
/* ssp_away_pump - while sockets are AWAY on contexts other than 0 (see
 * ssp.n_away), a thread holding another context pumps context 0 too
 * (dropping its lock meanwhile: a caller using a socket follows it with
 * ssp_sock_relock). */
void ssp_away_pump(void);
/* ssp_away_set - @s enters (@away) or leaves the AWAY state: keep
 * ssp.n_away (its lock held). */
void ssp_away_set(struct ssp_sock *s, bool away);
/* ssp_locks_reset - in a forked child: every lock of cx.c fresh, no
 * waiter anywhere (only the forking thread exists). */
void ssp_locks_reset(void);
/* ssp_cx_setup - after an attach (all locks held): contexts 0..n-1 of
 * ssp.app ready, threads choose theirs again. */
void ssp_cx_setup(void);
/* ssp_cx_mine - this thread's own context, chosen on first use (the
 * layer attached; no lock held). */
struct ssp_cx *ssp_cx_mine(void);
/* ssp_cx_pick - the context a new thread takes: the least used (lowest
 * index among equals) of @n with @users each. */
unsigned ssp_cx_pick(const unsigned *users, unsigned n);

/* ssp_waiter_self - this thread's waiter, made on first use; NULL when no
 * eventfd can be had (the caller then naps in short steps).
 * ssp_waiter_atfork_child - in a forked child: the thread's waiter gets
 * an eventfd of its own (the inherited one is the parent's too). */
struct ssp_waiter *ssp_waiter_self(void);
void ssp_waiter_atfork_child(void);

/* ssp_wait_begin - register @w (w->kind, w->sock set) on @cx (its lock
 * held) before dropping the lock to block.  Returns 1: the caller is the
 * poller and must also wait on cx->evfd (the context is armed); 0: wait
 * on w->efd only; -1: events are pending (not registered: pump and
 * re-check).  ssp_wait_end - after retaking the lock: unregister and
 * pump; when the poller leaves, whoever releases the lock last hands the
 * role to one waiter (ssp_unlock).  ssp_waiter_drain - consume w->efd:
 * once before a pass of ssp_wait_end over the contexts @w waited on,
 * never within one (cx.c).  ssp_wake_others - called by the pump: wake
 * the waiters the events may concern (@events: there were some; @broad:
 * some that are not one socket's).  ssp_waiter_kick - wake @w (once
 * until it drains).  ssp_cx_kick - wake every thread blocked on @cx (its
 * lock held).  ssp_sock_kick_blocked - wake the threads blocked in a
 * call on @s (its lock held; ssp_sock_touch calls it when s->n_blocked). */
int ssp_wait_begin(struct ssp_waiter *w, struct ssp_cx *cx);
void ssp_wait_end(struct ssp_waiter *w, struct ssp_cx *cx);
/* ssp_wait_end_all - ssp_waiter_drain, then ssp_wait_end on each context
 * whose bit is set in @reg, taking and dropping its lock (none held). */
void ssp_wait_end_all(struct ssp_waiter *w, uint64_t reg);
void ssp_waiter_drain(struct ssp_waiter *w);
void ssp_wake_others(struct ssp_cx *cx, bool events, bool broad);
void ssp_waiter_kick(struct ssp_waiter *w);
void ssp_cx_kick(struct ssp_cx *cx);
void ssp_sock_kick_blocked(struct ssp_sock *s);
/* ssp_block - sleep on the held context until events arrive or
 * @deadline_ms (monotonic ms, -1: none).  Drops the lock while sleeping;
 * with @s (held by the caller: s->hold), returns holding @s's context,
 * which may have changed meanwhile.  Returns 0 (events or a spurious
 * wake: re-check), or -1 with errno EINTR or ETIMEDOUT.  A cancellation
 * point (see ssp_call_enter): a thread cancelled there is taken off the
 * context and lets go of @s (the caller's hold) first. */
int ssp_block(struct ssp_sock *s, int64_t deadline_ms, const sigset_t *mask);
/* ssp_block_until - block (signals ignored) until *@done, set by an event
 * handler, or @deadline_ms; returns *@done.  @s as for ssp_block.  Never
 * a cancellation point (the answers of bind, listen, fork...). */
bool ssp_block_until(struct ssp_sock *s, const bool *done, int64_t deadline_ms);

/*
 * Cancellation (pthread_cancel).  A thread cancelled inside the layer must
 * leave nothing behind: no lock held, no waiter registered on a context
 * (nor the poller role), no epoll sleeper, no socket held.  A deferred
 * cancellation acts only where the thread reaches a libc cancellation
 * point, so the layer reaches none but these:
 *
 *   - the entry of the calls that are cancellation points in libc
 *     (accept, connect, recv, send and their kin, close, poll, select,
 *     epoll_wait, splice): pthread_testcancel, nothing held yet;
 *   - the sleeps of those calls, one blocking system call made with no
 *     lock held, with a cleanup handler that undoes what the sleep and its
 *     caller hold (ssp_cancellable).
 *
 * Everywhere else the layer's system calls are not cancellation points:
 * on its own fds (eventfd kicks and drains, the doorbell, closing an fd
 * it took out of its table) and its non-sleeping looks at kernel fds it
 * makes raw system calls (ss_sys_read/write/close in lib.h, syscall()),
 * and the rare paths that call libc's cancellable functions (attach,
 * fork, exec, sendfile and splice's kernel I/O, a full command queue's
 * usleep, the sleeps of calls that are no cancellation point: bind,
 * listen, shutdown, the options, fcntl, ioctl, dup, epoll_ctl, sendfile,
 * fork) first turn cancellation off for the rest of the call
 * (ssp_nocancel).  So a call that neither sleeps nor takes a rare path
 * (a recv or send that completes at once, getsockopt, fcntl, epoll_ctl)
 * costs no pthread_setcancelstate at all.  Asynchronous cancellation
 * inside a socket call is undefined in POSIX (they are not
 * async-cancel-safe) and is not guarded against.
 *
 * ssp_call_enter - a call into the layer begins (the shim brackets each;
 * @point: a cancellation point in libc: a pending cancellation acts
 * here); ssp_call_leave - it ends: the thread's cancellation state is
 * back as it was.  Calls nest (the outermost counts).
 * ssp_nocancel - no cancellation acts in this call from now on (the
 * first time: pthread_setcancelstate; nothing outside a call).
 * ssp_cancellable - run @sleep(@arg), a blocking system call made with no
 * lock held, cancellable when the call is a cancellation point and the
 * thread's state allows it (on again for the sleep after ssp_nocancel);
 * if the thread is cancelled there, @undo(@uarg) runs first (it may take
 * locks) and the call is over.  In a call that is no cancellation point
 * the sleep is not one either.  Returns what @sleep returns, errno as it
 * left it.
 */
void ssp_call_enter(bool point);
void ssp_call_leave(void);
void ssp_nocancel(void);
int ssp_cancellable(int (*sleep)(void *), void *arg, void (*undo)(void *), void *uarg);
int64_t ssp_now_ms(void);
int64_t ssp_deadline(int timeout_ms);
int ssp_ms_left(int64_t deadline_ms);

/* ssp_sock_poll - Linux poll bits (POLLIN, POLLOUT, ...) of @s now. */
uint32_t ssp_sock_poll(const struct ssp_sock *s);

/* ssp_listen_stopped - listener @s stopped (shutdown(), by this process
 * or one sharing it; its lock held): the connections not accepted yet are
 * reset, threads waiting in accept() or for readiness are woken, and @s
 * is a fresh socket again, bound to its port entry or, when @released,
 * to none (getsockname() still shows the port, as Linux). */
void ssp_listen_stopped(struct ssp_sock *s, bool released);

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
 * inherit now, every socket on context 0.  No lock held (it takes them
 * all).  0, or -1 (mode becomes SSP_M_DEAD). */
int ssp_child_attach(void);
/* ssp_sock_claim - @s was inherited across fork and is used for the first
 * time: adopt its connection (blocks for the service's answer).  Its
 * context's lock held.  Afterwards @s is connected, or failed with
 * s->moved set. */
void ssp_sock_claim(struct ssp_sock *s);
/* ssp_sock_moved - another process of ours adopted @s's connection
 * (SS_EVENT_MOVED @e, on @s's context, its lock held): @s is AWAY,
 * holding the reference the event names, or failed (ENOTCONN) when it
 * names none.  The service tells the rest on context 0 (its lock held):
 * ssp_ref_find - the socket holding the reference that event @e
 * replaces, or NULL; when it lives on another context, that lock is held
 * too.  ssp_sock_returned - the connection is @s's again: @c
 * (SS_EVENT_ADOPTED, unasked, on context 0); @s moves to context 0 and
 * the other lock ssp_ref_find took is released.  ssp_ref_gone - the
 * reference to handle (@owner, @slot, @gen) is gone (SS_EVENT_MOVED
 * without a conn): its socket fails with ENOTCONN. */
void ssp_sock_moved(struct ssp_sock *s, const struct ss_event *e);
void ssp_sock_returned(struct ssp_sock *s, struct ss_conn *c);
struct ssp_sock *ssp_ref_find(const struct ss_event *e);
void ssp_ref_gone(uint32_t owner, uint32_t slot, uint32_t gen);
/* ssp_listen_want - this process accepts from listener @s (shared across
 * fork): ask the service for its connections.  @s's lock held. */
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
/* tcpopt.c: the options the service carries out (SS_OPT_*): set (Linux's
 * ranges: -1 EINVAL), passed on once connected or listening, read. */
int ssp_opt_set(struct ssp_sock *s, unsigned opt, int v);
void ssp_opts_push(struct ssp_sock *s);
int ssp_maxseg_get(const struct ssp_sock *s);
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
/* ssp_ep_drop - the number @epfd of epoll set @ep goes (close, or dup2
 * over it when !@close_fd); with its last number the set goes, its
 * registrations too.  No lock held.  close()'s result (0 without
 * @close_fd). */
int ssp_ep_drop(int epfd, struct ssp_ep *ep, bool close_fd);
/* ssp_ep_dup - dup/dup2/dup3/F_DUPFD (ssp_dup's arguments) of @oldfd, a
 * number of epoll set @ep: the new number names the same set.  No lock
 * held.  The new number, -1 with errno, or -2: @oldfd is no number of
 * @ep any more (closed meanwhile): the caller dups it as any fd. */
int ssp_ep_dup(struct ssp_ep *ep, int oldfd, int newfd, int flags, bool exact);
/* ssp_ep_wake - @ep's ready list for context @cx gained an entry (the
 * lock of @cx held): wake a thread blocked in epoll_wait on it. */
void ssp_ep_wake(struct ssp_ep *ep, struct ssp_cx *cx);
/* ssp_ep_drop_fd - @fd of @s leaves the layer: its registrations go
 * (@s's lock held). */
void ssp_ep_drop_fd(struct ssp_sock *s, int fd);
/* ssp_ep_sock_moved - @s moved from context @from to its current one
 * (both locks held): its registrations follow it. */
void ssp_ep_sock_moved(struct ssp_sock *s, struct ssp_cx *from);
/* ssp_ep_poller_give - @w, registered on @cx (its lock held, no poller)
 * and asleep on an epoll set, becomes @cx's poller without being woken:
 * @cx is armed and its eventfd joins @w's kernel set.  False (nothing
 * done) when @w is not asleep on a set or events are pending.
 * ssp_ep_poller_take - @w, about to sleep on set w->ep, takes over @cx's
 * poller role (@cx's lock held) from @p, asleep on another set, whose
 * kernel set stops watching @cx's eventfd (@p sleeps on).  False when
 * @p is not asleep on another set. */
bool ssp_ep_poller_give(struct ssp_waiter *w, struct ssp_cx *cx);
bool ssp_ep_poller_take(struct ssp_waiter *p, struct ssp_cx *cx, struct ssp_waiter *w);
/* ssp_ep_waiter_gone - @w's thread exits (no lock held), its eventfd
 * about to be closed: every set that keeps it in its kernel set between
 * sleeps takes it out and forgets it (its number will be another fd's). */
void ssp_ep_waiter_gone(struct ssp_waiter *w);
/* ssp_ep_atfork_child - right after fork, in the child: @ep's lock
 * fresh, nobody waiting on it.  ssp_ep_child_attach - the child attached
 * (every context lock held, not ssp.glock): every registration of @ep on
 * context 0, whose eventfd joins the kernel set. */
void ssp_ep_atfork_child(struct ssp_ep *ep);
void ssp_ep_child_attach(struct ssp_ep *ep);

/* poll.c: @fds may mix accelerated and kernel fds. */
int ssp_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);
int ssp_select(int nfds, fd_set *r, fd_set *w, fd_set *e, int timeout_ms,
	       const sigset_t *mask);

#endif /* SS_LIB_POSIX_POSIX_H */
