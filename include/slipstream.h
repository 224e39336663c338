/* slipstream.h - libslipstream: the low-level, event-based, zero-copy application API. */
#ifndef SLIPSTREAM_H
#define SLIPSTREAM_H

/*
 * Model
 * -----
 * An application attaches to the service once (ss_app_attach) and gets a
 * fixed number of contexts.  A context is a pair of shared-memory queues
 * (commands to the service, events from it) plus an eventfd; it is meant to
 * be owned by one application thread.
 *
 * Thread-safety, for every function below unless it says otherwise:
 *   - a context and every connection on it may be used by ONE thread at a
 *     time (no internal locking);
 *   - different contexts may be used concurrently from different threads;
 *   - struct ss_app is read-only after attach: ss_ctx_get, ss_app_n_ctx are
 *     safe from any thread; ss_app_detach must not race with anything.
 *
 * Commands (listen, connect, send, receive-done, shutdown, close, abort) are
 * batched: they take effect at the next ss_flush, ss_poll or ss_wait on the
 * context.  Every result comes back as an event from ss_poll.
 *
 * Command queue full: the library never drops a command.  Byte counts (data
 * committed with ss_send_commit, data consumed with ss_recv_done) are
 * coalesced per connection and posted at the next flush that finds room;
 * control commands (listen, connect, shutdown, close, abort) that find the
 * queue full fail with EAGAIN and change nothing: call ss_poll (which lets
 * the service drain the queue) and retry.
 *
 * Connections are opaque handles (struct ss_conn *) created by the library
 * when an SS_EVENT_CONNECTED (success) or SS_EVENT_ACCEPTED event is
 * returned.  A handle stays valid until SS_EVENT_CLOSED has been returned for
 * it AND the next ss_poll/ss_wait on its context has started; using it after
 * that is undefined.  Between a terminal event (SS_EVENT_RESET,
 * SS_EVENT_ERROR) and SS_EVENT_CLOSED, calls on it fail with the error.
 *
 * Errors: functions returning int return -1 and set errno; functions
 * returning a pointer return NULL and set errno.  Each function lists its
 * errno values.
 */

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ss_app;
struct ss_ctx;
struct ss_conn;

/* Default UNIX socket of the service; SLIPSTREAM_SOCK overrides it. */
#define SS_DEFAULT_SOCK "/run/slipstream/slipstreamd.sock" /* slipstreamd --ctl default */
#define SS_MAX_CONTEXTS 64

/* ---------------------------------------------------------------- attach */

struct ss_app_opts {
	const char *sock_path;  /* NULL: $SLIPSTREAM_SOCK, else SS_DEFAULT_SOCK */
	uint32_t contexts;      /* 0: 1; at most SS_MAX_CONTEXTS */
	uint32_t conns;         /* connection slots, 0: 1024 */
	uint32_t rxbuf;         /* receive ring per connection, power of two, 0: 65536 */
	uint32_t txbuf;         /* transmit ring per connection, power of two, 0: 65536 */
	int timeout_ms;         /* wait for the service's reply, 0: 5000, <0: forever */
	char *errbuf;           /* optional: the service's refusal message */
	size_t errbuf_len;
	/* A forked child sharing its parent's sockets (the POSIX layer does
	 * this): the parent's ss_app_id() and ss_app_token(); 0: none. */
	uint32_t parent_app;
	uint64_t parent_token;
	/* 1: every connection uses rings of rxbuf and txbuf bytes from the
	 * start; 0: it starts on 4 KiB rings and moves to those when it
	 * needs more (once, with the ring empty: "small rings that grow"). */
	uint32_t fixed_rings;
};

/*
 * ss_app_attach - connect to the service and map the shared region.
 * @opts: may be NULL for all defaults.
 * Returns the application handle, or NULL with errno:
 *   EINVAL       bad option (contexts > SS_MAX_CONTEXTS, size not a power of two)
 *   ENAMETOOLONG the socket path does not fit in sockaddr_un
 *   ECONNREFUSED no service at the socket path (missing or nobody listening)
 *   ETIMEDOUT    no complete reply within opts->timeout_ms
 *   EREMOTEIO    the service refused ({"ok":false}); its message is copied
 *                to opts->errbuf when given
 *   EPROTO       malformed reply, wrong fd count, or a region/status page
 *                that fails validation (magic, version, sizes, layout)
 *   ENOMEM       out of memory
 *   other        from socket(2), connect(2), sendmsg(2), recvmsg(2), mmap(2)
 * Thread-safety: safe to call from any thread.
 */
struct ss_app *ss_app_attach(const struct ss_app_opts *opts);

/*
 * ss_app_detach - unmap everything and hang up; the service then resets
 * every connection of the application.  All contexts and connections become
 * invalid.  @app may be NULL.  Must not race with any other call on @app.
 */
void ss_app_detach(struct ss_app *app);

/* ss_app_n_ctx - number of contexts.  ss_app_id - the service's id for us.
 * ss_app_token - the secret a forked child presents to share our sockets. */
unsigned ss_app_n_ctx(const struct ss_app *app);
uint32_t ss_app_id(const struct ss_app *app);
uint64_t ss_app_token(const struct ss_app *app);

/*
 * ss_ctx_get - context @i (0 <= i < ss_app_n_ctx()).
 * Returns NULL with errno EINVAL when @i is out of range.
 */
struct ss_ctx *ss_ctx_get(struct ss_app *app, unsigned i);

/* -------------------------------------------------------------- commands */

/*
 * ss_listen - listen on TCP @port (host order) on all service addresses.
 * The result arrives as SS_EVENT_LISTENING with @cookie, the listener id in
 * ev.listener and ev.error (0 = listening).  Accepted connections arrive as
 * SS_EVENT_ACCEPTED on this context carrying the same @cookie.
 * Returns 0, or -1 with errno EAGAIN (command queue full).
 */
int ss_listen(struct ss_ctx *ctx, uint16_t port, uint32_t backlog, uint64_t cookie);

/* ss_listen_close - stop listener @listener (from SS_EVENT_LISTENING).
 * Returns 0, or -1 with errno EAGAIN (command queue full). */
int ss_listen_close(struct ss_ctx *ctx, uint32_t listener);

/*
 * ss_listen_stop - shutdown() of a listening socket: listener @listener
 * stops for every process that shares it (fork).  Connections still in
 * the handshake are reset; each member gets SS_EVENT_LISTEN_STOPPED with
 * its own cookie (this one's: the cookie it listened with; a rejected
 * stop is SS_EVENT_CMD_ERROR with @cookie: EINVAL when not listening,
 * EBADF when not ours).  The port entry is bound again (ss_listen_bound
 * or ss_connect_bound may use it, ss_listen_close gives it up) or, with
 * SS_LISTEN_STOP_RELEASE, given up by every member.
 * Returns 0, or -1 with errno EAGAIN (command queue full).
 */
#define SS_LISTEN_STOP_RELEASE 0x01
int ss_listen_stop(struct ss_ctx *ctx, uint32_t listener, unsigned flags, uint64_t cookie);

/*
 * ss_connect - open a connection to @ip:@port (both host order).  The
 * result arrives as SS_EVENT_CONNECTED with @cookie: ev.error == 0 and
 * ev.conn set on success, else ev.error set and ev.conn NULL.
 * Returns 0, or -1 with errno EAGAIN (command queue full).
 */
int ss_connect(struct ss_ctx *ctx, uint32_t ip, uint16_t port, uint64_t cookie);

/*
 * ss_connect_cancel - give up the connection that ss_connect (or
 * ss_connect_bound) with @cookie is opening, before its
 * SS_EVENT_CONNECTED: close() of a socket still connecting.  Nothing is
 * sent (RFC 9293 §3.10.4 in SYN-SENT) and no event comes for it.  An
 * SS_EVENT_CONNECTED already on its way still comes: close that handle.
 * Returns 0, or -1 with errno EAGAIN (command queue full).
 */
int ss_connect_cancel(struct ss_ctx *ctx, uint64_t cookie);

/*
 * ss_bind - claim TCP @port (0: the service picks an ephemeral one) before
 * listening or connecting from it.  @flags: SS_BIND_REUSEPORT lets other
 * sockets that ask for it share the port (a flow hash spreads connections).
 * The result arrives as SS_EVENT_BOUND with @cookie: ev.listener is the
 * port entry, ev.local_port the port, ev.error EADDRINUSE (held by another
 * socket), EACCES (below 1024 without CAP_NET_BIND_SERVICE), ENOBUFS (no
 * free entry) or 0.  The entry is given up with ss_listen_close().
 * ss_listen_bound - listen on entry @entry: SS_EVENT_LISTENING as ss_listen.
 * ss_connect_bound - connect from entry @entry's port (the entry goes).
 * ss_listen_arm - this application accepts from listener @listener: new
 * connections of a listener shared with forked processes go, in turn, to
 * the ones that armed it.
 * Each returns 0, or -1 with errno EAGAIN (command queue full).
 */
#define SS_BIND_REUSEPORT 0x01
int ss_bind(struct ss_ctx *ctx, uint16_t port, unsigned flags, uint64_t cookie);
int ss_listen_bound(struct ss_ctx *ctx, uint32_t entry, uint32_t backlog, uint64_t cookie);
int ss_connect_bound(struct ss_ctx *ctx, uint32_t entry, uint32_t ip, uint16_t port,
		     uint64_t cookie);
int ss_listen_arm(struct ss_ctx *ctx, uint32_t listener);
/* ss_connect_mss - ss_connect (@bound: ss_connect_bound from @entry) whose
 * SYN announces at most @mss (TCP_MAXSEG; 0: the service's MSS). */
int ss_connect_mss(struct ss_ctx *ctx, bool bound, uint32_t entry, uint32_t ip, uint16_t port,
		   uint16_t mss, uint64_t cookie);

/*
 * Socket options (SS_OPT_* of shm/abi.h, Linux's meaning and ranges):
 * ss_conn_setopt - on @conn, after its bytes committed so far (a bad
 * option or value comes back as SS_EVENT_CMD_ERROR EINVAL);
 * ss_listen_setopt - on listener @listener: the connections it accepts
 * from then on start with it.  Both post a command (-1 EAGAIN: the ring
 * is full, nothing posted).
 * ss_conn_set_more - MSG_MORE: the bytes committed from now on end with
 * more to come (a last segment smaller than the MSS waits, as with
 * TCP_CORK) until a commit with @more false.
 */
int ss_conn_setopt(struct ss_conn *conn, unsigned opt, uint32_t val);
int ss_listen_setopt(struct ss_ctx *ctx, uint32_t listener, unsigned opt, uint32_t val);
void ss_conn_set_more(struct ss_conn *conn, bool more);

/*
 * ss_flush - post every batched command and byte count, then ring the
 * service's doorbell if it sleeps.  ss_poll and ss_wait flush implicitly.
 * Returns 0 when everything is posted, or -1 with errno EAGAIN when the
 * command queue was full and some coalesced byte counts are still pending
 * (they are retried by the next flush; nothing is lost).
 */
int ss_flush(struct ss_ctx *ctx);

/* ----------------------------------------------------------------- events */

enum ss_event_type {
	SS_EVENT_LISTENING = 1, /* listener, cookie, error, local_port.  bytes 1:
				 * unasked, a port entry this process shares (fork)
				 * listens now, another member listened; cookie is
				 * ours, as its ACCEPTED events will carry */
	SS_EVENT_CONNECTED,     /* cookie, error; conn + endpoints when error == 0 */
	SS_EVENT_ACCEPTED,      /* conn, cookie (the listener's), endpoints */
	SS_EVENT_DATA,          /* conn, bytes: newly received (see ss_recv_peek) */
	SS_EVENT_SENT,          /* conn, bytes: acknowledged by the peer, space freed */
	SS_EVENT_PEER_CLOSED,   /* conn: the peer sent FIN; data before it stays readable */
	SS_EVENT_RESET,         /* conn, error (ECONNRESET): connection is dead */
	SS_EVENT_ERROR,         /* conn, error (ETIMEDOUT, ...): connection is dead */
	SS_EVENT_CLOSED,        /* conn: the handle dies (see the model above) */
	SS_EVENT_CMD_ERROR,     /* a command was rejected: cmd_op, error, conn (may be NULL) */
	SS_EVENT_BOUND,         /* listener (port entry), local_port, cookie, error */
	SS_EVENT_INHERITED,     /* (fork) error; bytes = connections held */
	SS_EVENT_ADOPTED,       /* (fork) conn, cookie, endpoints: the connection is ours.
				 * bytes 1: unasked, the process that had it let go and it
				 * is ours again; cookie = the reference it replaces
				 * (slot << 32 | gen) */
	SS_EVENT_MOVED,         /* (fork) conn: another process adopted it; the handle is dead.
				 * bytes 1: this process keeps a reference to it (listener =
				 * the adopter's app id, cookie = its slot << 32 | gen).
				 * conn NULL: such a reference (listener, cookie) is gone */
	SS_EVENT_LISTEN_STOPPED, /* listener, cookie, local_port: the listener stopped
				  * (ss_listen_stop, by this process or one sharing it);
				  * bytes 1: its port entry is gone too */
};

struct ss_event {
	enum ss_event_type type;
	int error;              /* errno value, 0 = none */
	struct ss_conn *conn;   /* NULL for LISTENING, failed CONNECTED, some CMD_ERROR */
	uint64_t cookie;        /* LISTENING, CONNECTED, ACCEPTED */
	uint32_t bytes;         /* DATA, SENT */
	uint32_t listener;      /* LISTENING; CMD_ERROR of a listener command */
	int cmd_op;             /* CMD_ERROR: the rejected command (SS_OP_*) */
	uint32_t local_ip, remote_ip;       /* host order, CONNECTED/ACCEPTED */
	uint16_t local_port, remote_port;   /* host order, CONNECTED/ACCEPTED */
};

/* Command identifiers reported in ss_event.cmd_op. */
enum ss_op {
	SS_OP_LISTEN = 1, SS_OP_LISTEN_CLOSE, SS_OP_CONNECT, SS_OP_SEND,
	SS_OP_RECV_DONE, SS_OP_SHUTDOWN, SS_OP_CLOSE, SS_OP_ABORT,
	SS_OP_BIND, SS_OP_LISTEN_ARM, SS_OP_INHERIT, SS_OP_ADOPT, SS_OP_RELEASE,
	SS_OP_LISTEN_STOP,
};

/*
 * ss_poll - flush (as ss_flush), then return up to @max pending events
 * without blocking.  Connection state is updated before the events are
 * returned (DATA makes bytes readable, SENT frees send space).  Malformed
 * events from the service (slot out of range, stale generation, impossible
 * byte counts) are dropped and counted in ss_ctx_stats.ev_bogus.
 * Returns the number of events stored in @evs (0 when none), or -1 with
 * errno EINVAL (@max < 0 or @evs NULL with @max > 0).
 */
int ss_poll(struct ss_ctx *ctx, struct ss_event *evs, int max);

/*
 * ss_wait - flush, then block until events are pending or @timeout_ms
 * passes (<0: forever, 0: just check).  While coalesced byte counts wait for
 * room in the command queue, it sleeps at most 1 ms at a time.
 * Returns 1 when events are pending, 0 on timeout, -1 with errno EINTR
 * (signal) or from poll(2)/read(2).
 */
int ss_wait(struct ss_ctx *ctx, int timeout_ms);

/*
 * ss_ctx_fd - the context's eventfd, for the application's own epoll.
 * Before blocking on it call ss_ctx_arm(); after it becomes readable call
 * ss_poll (which reads it).  Never write it.
 */
int ss_ctx_fd(const struct ss_ctx *ctx);

/*
 * ss_ctx_arm - flush, then ask the service to signal ss_ctx_fd() on the
 * next event.  Returns 1 when events are already pending (do not block:
 * call ss_poll), 0 when armed (safe to block on the fd).  Never fails.
 */
int ss_ctx_arm(struct ss_ctx *ctx);

struct ss_ctx_stats {
	uint64_t events;        /* events taken from the service */
	uint64_t ev_bogus;      /* dropped: bad type, slot, generation, counts, offsets */
	uint64_t cmds;          /* commands posted */
	uint64_t atx_full;      /* times the command queue was found full */
	uint64_t doorbells;     /* doorbell writes */
	uint64_t wakeups;       /* ss_wait blocked and was woken by the eventfd */
	uint64_t tx_refused;    /* commits refused: the connection had moved to
				 * another process (fork, POSIX layer) */
	uint64_t rx_refused;    /* consumptions refused, likewise */
	uint32_t conns;         /* live connection handles */
};

/* ss_ctx_stats - copy the context's counters into @out. */
void ss_ctx_stats(const struct ss_ctx *ctx, struct ss_ctx_stats *out);

/* ------------------------------------------------------------ connections */

/*
 * ss_recv_peek - zero-copy receive: describe the readable bytes as up to
 * two pieces (two when the data wraps around the end of the ring).
 * Unused iov entries get iov_len 0.  The memory stays valid and unchanged
 * until those bytes are released with ss_recv_done.
 * Returns the readable byte count (0: nothing now).  Never fails.
 */
size_t ss_recv_peek(struct ss_conn *conn, struct iovec iov[2]);

/*
 * ss_recv_done - release @n bytes from the front of the readable data
 * (their ring space goes back to the service at the next flush).
 * Returns 0, or -1 with errno EINVAL (@n > readable bytes) or EAGAIN (a
 * connection the POSIX layer shares across fork moved to another process
 * meanwhile: nothing released).
 */
int ss_recv_done(struct ss_conn *conn, size_t n);

/*
 * ss_recv - copy up to @len readable bytes into @buf and release them.
 * Returns the bytes copied (0: nothing readable now; check for a
 * SS_EVENT_PEER_CLOSED to tell end-of-stream).  Never fails.
 */
size_t ss_recv(struct ss_conn *conn, void *buf, size_t len);

/*
 * ss_send_space - zero-copy send: describe the free transmit ring space as
 * up to two pieces.  Write the payload there, then ss_send_commit.
 * Returns the free byte count (0 when full or when sending is no longer
 * possible: after ss_shutdown/ss_close or a RESET/ERROR).
 */
size_t ss_send_space(struct ss_conn *conn, struct iovec iov[2]);

/*
 * ss_send_commit - queue @n bytes written into the space from
 * ss_send_space (in order, starting at iov[0]).
 * Returns 0, or -1 with errno EINVAL (@n > free space), EPIPE (after
 * ss_shutdown/ss_close), or the connection's error (ECONNRESET, ...).
 */
int ss_send_commit(struct ss_conn *conn, size_t n);

/*
 * ss_send - copy up to @len bytes from @buf into the transmit ring and
 * queue them.  Returns the bytes queued (may be short, 0 when full), or -1
 * with errno as ss_send_commit (EPIPE, ECONNRESET, ...).
 */
ssize_t ss_send(struct ss_conn *conn, const void *buf, size_t len);

/* ss_send_queued - bytes queued and not yet acknowledged by the peer. */
size_t ss_send_queued(const struct ss_conn *conn);

/*
 * ss_shutdown - no more sending: the service sends FIN after the queued
 * data.  Receiving continues.  Returns 0, or -1 with errno EAGAIN (command
 * queue full, retry), EPIPE (already shut down/closed), or the
 * connection's error.
 */
int ss_shutdown(struct ss_conn *conn);

/*
 * ss_close - shutdown + no more receiving.  Queued data is still sent; the
 * handle lives until SS_EVENT_CLOSED.  Returns 0, or -1 with errno EAGAIN
 * (retry), EPIPE (already closed).  After a RESET/ERROR it is accepted and
 * just waits for CLOSED.
 */
int ss_close(struct ss_conn *conn);

/*
 * ss_abort - reset the connection (RST) now; queued data is dropped.
 * Returns 0, or -1 with errno EAGAIN (retry), EPIPE (already closed or
 * aborted).
 */
int ss_abort(struct ss_conn *conn);

/* ss_conn_set_user / ss_conn_user - the application's pointer for @conn
 * (NULL initially).  Valid on the handle of an SS_EVENT_CLOSED too, so the
 * application can free its state there. */
void ss_conn_set_user(struct ss_conn *conn, void *user);
void *ss_conn_user(const struct ss_conn *conn);

/* ss_conn_ctx - the context @conn belongs to. */
struct ss_ctx *ss_conn_ctx(const struct ss_conn *conn);

/* ss_conn_endpoints - addresses and ports, host order; any pointer may be NULL. */
void ss_conn_endpoints(const struct ss_conn *conn, uint32_t *local_ip,
		       uint16_t *local_port, uint32_t *remote_ip,
		       uint16_t *remote_port);

/* ss_conn_error - the connection's error (ECONNRESET, ETIMEDOUT...), 0 if none. */
int ss_conn_error(const struct ss_conn *conn);

/* ss_event_name - "DATA", "CLOSED", ... ("?" for unknown values). */
const char *ss_event_name(enum ss_event_type type);

/* ss_errno_name - "ECONNRESET", ... for the errno values the service reports
 * (NULL for 0, "E?" for unknown ones). */
const char *ss_errno_name(int err);

#ifdef __cplusplus
}
#endif

#endif /* SLIPSTREAM_H */
