/* lib.h - libslipstream internals shared by its files (not installed). */
#ifndef SS_LIB_LIB_H
#define SS_LIB_LIB_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "slipstream.h"
#include "util/list.h"

/*
 * System calls on the library's own fds (eventfds, the doorbell, the
 * attach socket), made straight to the kernel, for two reasons:
 *
 *   - inside the preload library (src/preload), libc's names (close,
 *     poll, send...) are the shim's own overrides: a call by name would
 *     go back through the shim and the POSIX layer.  The library never
 *     calls a name that src/preload/exports.map lists, only these
 *     (tests/unit/lib/check_no_shim_calls.py checks the objects);
 *   - they are made in the middle of a call, often with a lock held:
 *     never cancellation points (libc's read, write, close, poll... are,
 *     and a pending pthread_cancel acting there would leave the lock
 *     held; see src/lib/posix/posix.h, "Cancellation").
 *
 * read, write and close never block; the others block only where the
 * caller asks (the attach exchange, ss_wait's poll).
 */
static inline ssize_t ss_sys_read(int fd, void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_read, fd, buf, n);
}

static inline ssize_t ss_sys_write(int fd, const void *buf, size_t n)
{
	return (ssize_t)syscall(SYS_write, fd, buf, n);
}

static inline int ss_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int ss_sys_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

static inline int ss_sys_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	return (int)syscall(SYS_connect, fd, sa, len);
}

static inline ssize_t ss_sys_send(int fd, const void *buf, size_t n, int flags)
{
	return (ssize_t)syscall(SYS_sendto, fd, buf, n, flags, NULL, 0);
}

static inline ssize_t ss_sys_recvmsg(int fd, struct msghdr *mh, int flags)
{
	return (ssize_t)syscall(SYS_recvmsg, fd, mh, flags);
}

/* fcntl with an int argument or none (F_GETFL, F_SETFL, F_GETFD...). */
static inline int ss_sys_fcntl(int fd, int cmd, int arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, (long)arg);
}

/* poll(2): @timeout_ms < 0 waits without end (through ppoll, which every
 * architecture has). */
static inline int ss_sys_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };

	return (int)syscall(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, (size_t)0);
}

/* Largest attach parameters the library accepts from a reply header. */
#define SS_LIB_MAX_SLOTS (1u << 20)
#define SS_LIB_MAX_CONNS (1u << 20)
#define SS_LIB_MAX_BUF (1u << 30)

enum conn_state {
	CONN_OPEN,      /* data may flow both ways (until PEER_FIN/shutdown) */
	CONN_DEAD,      /* RESET/ERROR seen, waiting for CLOSED */
	CONN_CLOSED,    /* CLOSED returned: in the graveyard until the next poll */
};

struct ss_conn {
	struct ss_ctx *ctx;
	uint32_t slot, gen;
	uint8_t state;          /* enum conn_state */
	bool shut_wr;           /* ss_shutdown/ss_close/ss_abort posted */
	bool closing;           /* ss_close/ss_abort posted */
	bool peer_fin;
	bool fin_acked;         /* our FIN was acknowledged (SS_EV_FIN_ACKED) */
	bool shared;            /* other processes may adopt it: commits go
				 * through the sync words (sync.c) */
	/* A sync word refused a commit (tx) or a consumption (rx): the
	 * handle moved away, SS_EV_MOVED follows. */
	bool tx_moved, rx_moved;
	int error;              /* ECONNRESET... once DEAD */
	void *user;

	uint8_t *rx_buf, *tx_buf;
	/* Ring sizes: the slot's small rings or its large ones (shm/abi.h
	 * "Small rings that grow"); tx_size_svc is what the service has: the
	 * next TX carries SS_CMDF_TX_GROW while the two differ. */
	uint32_t rx_size, tx_size, tx_size_svc;
	bool rx_grow;           /* asking for the large receive ring (RX_GROW) */
	bool tx_grow;           /* waiting for all sent to be acknowledged, then
				 * writing to the large transmit ring */
	/* Receive stream positions: rx_tail = sum of RX event bytes,
	 * rx_head = consumed by the application.  rx_done = consumed but not
	 * yet reported with SS_CMD_RX_DONE. */
	uint32_t rx_head, rx_tail, rx_done;
	/* Transmit: tx_tail = committed, tx_acked = acknowledged,
	 * tx_pend = committed but not yet posted with SS_CMD_TX. */
	uint32_t tx_tail, tx_acked, tx_pend;
	bool more, more_svc;    /* MSG_MORE now / as the service last heard it */
	/* Ring origins (shm/abi.h: position p is at byte (p - origin) &
	 * (size - 1)).  tx_origin_svc is the service's transmit origin: the
	 * next TX carries SS_CMDF_TX_HOME while the two differ. */
	uint32_t rx_origin, tx_origin, tx_origin_svc;

	uint32_t local_ip, remote_ip;
	uint16_t local_port, remote_port;

	/* On the context's dirty list while tx_pend or rx_done != 0; on its
	 * graveyard or free list once closed. */
	struct ss_list link;
	bool dirty;
};

struct ss_ctx {
	struct ss_app *app;
	unsigned idx;
	struct ring_atx atx;
	struct ring_arx arx;
	int evfd;
	bool armed;             /* arx->sleeping set by ss_ctx_arm */

	struct ss_conn **conns; /* by slot, max_conns entries */
	/* Lists of struct ss_conn.link, set up by ss_ctx_lists_init(). */
	struct ss_list dirty;     /* counts to post, in the order they came */
	struct ss_list graveyard; /* CLOSED returned by the last poll */
	struct ss_list free_list; /* for ss_conn_new(), last freed first */

	struct ss_ctx_stats st;
};

struct ss_app {
	int sock;               /* attach socket: kept open for the lifetime */
	int doorbell;
	void *region;
	uint64_t region_size;
	const struct ss_shm_status *status;
	size_t status_size;
	const struct ss_shm_hdr *hdr; /* == region */
	uint32_t app_id;
	uint64_t token;         /* from the attach reply: a forked child presents it */
	uint32_t max_conns, rxbuf_size, txbuf_size;
	uint64_t small_off;     /* the slots' small rings (shm/abi.h); 0: none */
	uint64_t buf_off;
	uint64_t info_off;      /* struct ss_shm_conn_info per slot (TCP_INFO) */
	uint64_t sync_off;      /* struct ss_shm_conn_sync per slot (sync.c) */
	unsigned n_ctx;
	struct ss_ctx ctx[];
};

/* Slot @slot's large receive and transmit rings, and its small transmit
 * ring (the region's layout: shm/abi.h "Small rings that grow"). */
static inline uint8_t *ss_slot_rx_large(const struct ss_app *app, uint32_t slot)
{
	return (uint8_t *)app->region + app->buf_off +
	       (uint64_t)slot * (app->rxbuf_size + app->txbuf_size);
}
static inline uint8_t *ss_slot_tx_large(const struct ss_app *app, uint32_t slot)
{
	return ss_slot_rx_large(app, slot) + app->rxbuf_size;
}
static inline uint8_t *ss_slot_tx_small(const struct ss_app *app, uint32_t slot)
{
	return (uint8_t *)app->region + app->small_off +
	       (uint64_t)slot * (2 * SS_SHM_SMALL_RING) + SS_SHM_SMALL_RING;
}

/* cmd.c: posting commands. */
int ss_cmd_post(struct ss_ctx *ctx, const struct ss_shm_cmd *cmd);
int ss_cmd_post_conn_pending(struct ss_ctx *ctx, struct ss_conn *c);
void ss_conn_mark_dirty(struct ss_conn *c);
void ss_conn_unmark_dirty(struct ss_conn *c);
int ss_ctx_flush_quiet(struct ss_ctx *ctx);

/* conn.c: whether the bytes @c consumed and has not reported yet should go
 * to the service now, not with the next flush (a send's, or before the
 * context sleeps). */
bool ss_recv_done_due(const struct ss_conn *c);

/* event.c: ss_poll for a thread other than the one that armed @ctx and
 * sleeps on its eventfd (the POSIX layer's poller): the events are taken
 * but the arming stays, so the service still signals the sleeper and
 * nobody has to wake it to arm again.  Events that the service signalled
 * meanwhile may wake it for nothing (it looks, finds none, arms again). */
int ss_poll_keep_armed(struct ss_ctx *ctx, struct ss_event *evs, int max);

/* conn.c: connection objects. */
struct ss_conn *ss_conn_new(struct ss_ctx *ctx);
void ss_conn_bury(struct ss_conn *c);
void ss_ctx_lists_init(struct ss_ctx *ctx);
void ss_ctx_reap(struct ss_ctx *ctx);
void ss_ctx_free_conns(struct ss_ctx *ctx);

/* sync.c: a connection shared across fork (shm/abi.h, the sync words).
 * ss_conn_share - from now on other processes may adopt @c (the caller
 * is about to fork): its commits and consumptions are confirmed against
 * the service.  ss_sync_commit - confirm a commit of @n bytes of shared
 * @c: 0, or -1 (c->tx_moved set) when its handle moved away meanwhile.
 * ss_sync_consume - the same for a consumption (c->rx_moved). */
void ss_conn_share(struct ss_conn *c);
int ss_sync_commit(struct ss_conn *c, uint32_t n);
int ss_sync_consume(struct ss_conn *c, uint32_t n);

/* fork support (the POSIX layer): commands and the child's clean-up. */
int ss_inherit(struct ss_ctx *ctx);
int ss_adopt(struct ss_ctx *ctx, uint32_t owner_app, uint32_t slot, uint32_t gen,
	     uint64_t cookie);
int ss_release(struct ss_ctx *ctx, uint32_t owner_app, uint32_t slot, uint32_t gen);
/* ss_app_forget - a forked child lets go of its parent's attachment: unmap
 * and close its copies, post nothing (the parent still uses it). */
void ss_app_forget(struct ss_app *app);

/* attach.c: the service's TCP_INFO figures for @c (abi.h seqlock); 0, or
 * -1 when none is readable (not published yet, or written right now). */
int ss_conn_info(const struct ss_conn *c, struct ss_shm_conn_info *out);

/* attach.c: the region layout checks, shared with the tests. */
int ss_region_validate(const void *region, uint64_t region_size,
		       uint32_t n_ctx);

/* json.c: the attach reply. */
struct ss_reply {
	int ok;                 /* 1, 0, or -1 when absent */
	uint64_t app, region_size, contexts, token;
	bool has_app, has_region_size, has_contexts, has_token;
	char error[128];
};
int ss_reply_parse(const char *line, struct ss_reply *out);

#endif /* SS_LIB_LIB_H */
