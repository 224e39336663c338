/* abi.h - the shared-memory ABI between slipstreamd and one application (one header, both sides). */
#ifndef SS_SHM_ABI_H
#define SS_SHM_ABI_H

/*
 * Attach (over the service's UNIX socket, see docs/api.md):
 *   app  -> "attach 1 contexts=C conns=N rxbuf=R txbuf=T\n"
 *   svc  -> one JSON line {"ok":true, "app":id, "region_size":..., ...}
 *           with SCM_RIGHTS fds, in this order:
 *             [0] the application's region (memfd, read-write)
 *             [1] the service status page (memfd, sealed: map read-only)
 *             [2] the service doorbell (eventfd; write 1 to wake the service)
 *             [3 .. 3+C) one eventfd per context (the service writes it)
 *           or {"ok":false,"error":"..."} and no fds.
 * The socket stays open: when it hangs up the service resets the
 * application's connections and reclaims everything.
 *
 * Region layout (offsets from the region start; all sizes fixed at attach):
 *   0                      struct ss_shm_hdr
 *   hdr.ctx_off + i*ctx_stride   context i: struct ss_shm_ring atx (app -> svc)
 *                                followed by atx slots, then struct ss_shm_ring
 *                                arx (svc -> app) and its slots
 *   hdr.info_off + k*sizeof(struct ss_shm_conn_info)
 *                                connection slot k: the figures TCP_INFO shows
 *   hdr.sync_off + k*sizeof(struct ss_shm_conn_sync)
 *                                connection slot k: its sync words (fork,
 *                                see below)
 *   hdr.buf_off + k*(rxbuf+txbuf) connection slot k: receive ring, transmit ring
 *
 * Trust: the service writes the header once and never reads it back.  Every
 * field the application can write (ring indices, command slots, buffer
 * contents) is untrusted: the service keeps its own copy of each consumer
 * index, checks prod - cons <= slots, and validates every command field.
 *
 * Connection handles: (conn, gen) from SS_EV_CONNECTED / SS_EV_ACCEPTED.
 * The handle, and with it the connection's pair of rings, belongs to the
 * application until it sends SS_CMD_CLOSE or SS_CMD_ABORT: data received
 * before a reset or the peer's FIN stays readable.  The service answers
 * the close with SS_EV_CLOSED once the rings are no longer needed (our
 * data acknowledged, or the connection reset); after that the handle is
 * dead and the slot may come back in a later event.  A failed active open
 * is SS_EV_CONNECTED with error != 0 (ECONNREFUSED, ETIMEDOUT,
 * EHOSTUNREACH) and hands out no handle (nothing to close; conn/gen are
 * informational).  A command the service cannot
 * honour is answered with SS_EV_CMD_ERROR (op in arg, errno in error) and
 * changes nothing: EBADF for a dead or foreign handle, EINVAL for a byte
 * count beyond what the ring holds, EPIPE for sending after shutdown,
 * EOPNOTSUPP for an unknown op; SS_CMD_CONNECT failures that happen
 * before a handle exists (EINVAL, ENETUNREACH, EADDRNOTAVAIL, EMFILE,
 * ENOBUFS) come this way too, with the command's cookie.
 *
 * Ports: SS_CMD_BIND claims a port for a socket (port 0: the service picks
 * one) and answers SS_EV_BOUND with the port's entry id in conn and the
 * port in local_port; a port another entry holds is EADDRINUSE unless both
 * asked for SS_BIND_REUSEPORT; ports below 1024 need CAP_NET_BIND_SERVICE
 * in the attaching process (EACCES).  SS_CMD_LISTEN with SS_CMDF_BOUND
 * turns entry conn into a listener; without it, it claims port and listens
 * in one step.  SS_CMD_CONNECT with SS_CMDF_BOUND connects from entry
 * conn's port and gives the entry up (also when the connect then fails).  SS_CMD_LISTEN_CLOSE lets go of an
 * entry in either state.  An entry shared across fork is one socket: when
 * it starts listening (a member's SS_CMD_LISTEN with SS_CMDF_BOUND, say
 * after bind() and fork(), or listen() again after SS_CMD_LISTEN_STOP),
 * every other member gets SS_EV_LISTEN too, with SS_EVF_MEMBER and its
 * own cookie (the one its ACCEPTED events will carry); a member's LISTEN
 * on an entry that listens already is answered as a first one.  SS_CMD_LISTEN_STOP (shutdown() of a listening
 * socket) stops listener conn for every member at once: connections still
 * in the handshake are reset, every member gets SS_EV_LISTEN_STOPPED with
 * its own cookie, and the entry is bound again (it may listen or connect
 * later) or, with SS_STOP_RELEASE in arg, given up by every member (a
 * port the service picked: Linux lets it go).  An entry that is not
 * listening is EINVAL, a foreign one EBADF.
 *
 * Listening: accepted connections are announced on the context that
 * listened; the backlog bounds connections still in the handshake
 * (SYN_RCVD) for that listener; SYNs beyond it are dropped and counted
 * (drop_tcp_backlog), as Linux does when its queue is full.  With
 * SO_REUSEPORT several listeners share a port: a flow hash picks one.
 *
 * fork (a process and its children share sockets): the child attaches
 * with "parent=ID token=T" (the parent's app id and the token from its
 * attach reply), then sends SS_CMD_INHERIT.  The service answers
 * SS_EV_INHERITED once the child is a member of every port entry the
 * parent is a member of and holds a reference to every connection the
 * parent holds; before it, for each port entry joined, the entry's state
 * now (the parent may have listened or stopped since fork()): SS_EV_LISTEN
 * with SS_EVF_MEMBER if it listens, else SS_EV_LISTEN_STOPPED, each with
 * the child's cookie for the entry.  Events a member's LISTEN or
 * LISTEN_STOP causes for the other members are visible to them before the
 * caller's own answer.  A port entry lives while it has members.  New
 * connections of a listener go to its members that asked for them
 * (SS_CMD_LISTEN_ARM: the member accepts or polls the listener), in turn;
 * to the oldest member while none has.  A connection lives on while any
 * process holds it: the owner's SS_CMD_CLOSE/ABORT takes effect when the
 * last inherited reference is dropped (SS_CMD_RELEASE, or the holder
 * exiting).  SS_CMD_ADOPT (conn, gen and ip = the owner's handle and app
 * id) moves the connection and its ring contents into the caller's
 * region: SS_EV_ADOPTED carries the new handle and the four stream
 * positions (arg rx consumed, arg2 rx received, arg3 tx acknowledged,
 * arg4 tx queued) and flags (SS_EVF_*); the old owner gets SS_EV_MOVED for
 * its handle, which is dead from then on.  Unless it had closed the handle,
 * the old owner keeps a reference to the connection (as its descriptor
 * stays open on Linux): MOVED has SS_EVF_HELD and names the adopter's
 * handle (arg app id, arg2 slot, arg3 gen), which SS_CMD_RELEASE takes.
 * When an owner closes or aborts a connection that a process it was
 * forked from still holds, or exits while any process holds one, the
 * connection goes back to such a holder instead of closing: its rings
 * move into the holder's region and the holder gets SS_EV_RETURNED (as
 * ADOPTED, with cookie = the reference it replaces, slot << 32 | gen);
 * the closer gets SS_EV_CLOSED.  Whenever a connection moves, the other
 * references to its old handle go and their holders get SS_EV_REF_GONE
 * (so do they when an exiting owner's connection finds no taker).
 *
 * Nothing the old owner wrote is lost when its connection moves, and
 * nothing it read is read again, though it may be writing or reading at
 * that very moment.  Before an ADOPT moves it, the service carries out
 * the commands the owner has already published on the connection's
 * context (its TX, RX_DONE, SHUTDOWN go first).  What it committed or
 * consumed and not yet posted is in the slot's sync words (struct
 * ss_shm_conn_sync at hdr.sync_off, SS_SYNC_*): the service writes both
 * whenever it hands out a handle (the handle's gen, no flags, the
 * transmit position and the receive position consumed); an application
 * that shares the connection with other processes (after fork) sets
 * SS_SYNC_ON in both with its own positions and from then on moves them
 * forward with a compare-and-swap (release) for every commit, after
 * writing the bytes, and for every consumption, after copying them out.
 * A move swaps SS_SYNC_MOVED into both: a commit or consumption that
 * finds it fails (nothing taken: the application waits for MOVED and
 * writes or reads where the connection is, later); the positions swapped
 * out, when ON, of that handle and within the ring, count as sent (as a
 * TX would) and consumed (as an RX_DONE would) before the rings are
 * copied.  A position that fails those checks is ignored and counted
 * (app_move_sync_bad).  Without SS_SYNC_ON a word is never read, so a
 * process that has not forked pays nothing for them.
 *
 * Rings are single-producer single-consumer with free-running 32-bit
 * indices; slot = index & (slots - 1).  Producer: write slot, then
 * store-release prod.  Consumer: load-acquire prod, read slots, then
 * store-release cons.  Wake-ups (no kick lost, none needless):
 *   - app -> service: the service clears every context's atx->sleeping
 *     (there: "doorbell rung"), sets status->sleeping[fp] = 1, issues a
 *     full fence, re-checks every queue, then blocks.  A producer, after
 *     store-release of prod and a full fence, writes the doorbell only if
 *     it sees status->sleeping set and its atx->sleeping clear, and sets
 *     atx->sleeping first: one write per context per sleep, however many
 *     batches the context publishes before the service runs again (it
 *     cannot clear status->sleeping until it does).
 *   - service -> app: the application sets arx->sleeping = 1, full fence,
 *     re-checks arx, then blocks on its context eventfd.  The service,
 *     after publishing a burst of events, writes the eventfd once if
 *     sleeping is set and clears it.
 */

#include <stdint.h>

#define SS_SHM_MAGIC 0x314d5353u /* "SSM1" little-endian */
#define SS_SHM_VERSION 11u
#define SS_SHM_CACHELINE 64

#define SS_SHM_MAX_FAST_PATHS 64

/* Sealed read-only page every application maps. */
struct ss_shm_status {
	uint32_t magic;
	uint32_t version;
	uint32_t n_fast_paths;
	uint32_t pad_;
	/* 1 while fast path i is (about to be) blocked: kick the doorbell. */
	_Alignas(SS_SHM_CACHELINE) uint32_t sleeping[SS_SHM_MAX_FAST_PATHS];
};

/* ss_shm_hdr.flags: the service marked the region MADV_HUGEPAGE (its
 * --shm-huge on); the library does the same on its mapping, so the pages
 * it touches first are huge ones too. */
#define SS_SHM_HDR_HUGE 0x1u

struct ss_shm_hdr {
	uint32_t magic;
	uint32_t version;
	uint64_t region_size;
	uint32_t app_id;
	uint32_t n_ctx;
	uint32_t ctx_off;      /* first context */
	uint32_t ctx_stride;   /* bytes per context */
	uint32_t atx_slots;    /* power of two, >= 2 (so arx starts cache-aligned) */
	uint32_t arx_slots;    /* power of two */
	uint32_t max_conns;
	uint32_t rxbuf_size;   /* power of two */
	uint32_t txbuf_size;   /* power of two */
	uint32_t flags;        /* SS_SHM_HDR_* */
	uint64_t buf_off;      /* connection slot 0; page aligned */
	uint64_t info_off;     /* struct ss_shm_conn_info of slot 0; page aligned */
	uint64_t sync_off;     /* struct ss_shm_conn_sync of slot 0;
				* cache-line aligned, between info and buf */
	uint64_t small_off;    /* slot 0's small rings (receive, then transmit,
				* SS_SHM_SMALL_RING bytes each, 2 * that per
				* slot), page aligned, between sync and buf; 0:
				* none (see the end of this file) */
};

/*
 * A slot's sync words (fork, see above), each: bits 0-31 a stream
 * position (tx: committed, rx: consumed), 32-55 the low 24 bits of the
 * handle's generation, SS_SYNC_ON: the application keeps the position,
 * SS_SYNC_MOVED: the handle moved away, commits (consumptions) on it are
 * refused.  The application writes them; the service reads them only
 * when the handle moves or its application goes.
 */
struct ss_shm_conn_sync {
	uint64_t tx;
	uint64_t rx;
};

#define SS_SYNC_GEN_MASK 0xffffffu
#define SS_SYNC_ON (1ull << 62)
#define SS_SYNC_MOVED (1ull << 63)

static inline uint64_t ss_sync_word(uint32_t gen, uint64_t flags, uint32_t pos)
{
	return flags | (uint64_t)(gen & SS_SYNC_GEN_MASK) << 32 | pos;
}

static inline uint32_t ss_sync_gen(uint64_t w)
{
	return (uint32_t)(w >> 32) & SS_SYNC_GEN_MASK;
}

/*
 * What the service knows about one connection, for TCP_INFO: written by
 * the service at every change of the engine's state (seen where it
 * collects the connection's events) and at the end of every control
 * interval while the connection is active, at most every 10 ms and when
 * the flow goes idle (so never on the per-packet path), read by the
 * application at any time.  A seqlock: seq is odd while the service
 * writes; a reader copies the record between two equal even loads of seq.
 * gen says whose record it is (the handle's generation): a record of
 * another generation, or of a slot with no connection, is stale.  Times
 * are the service's CLOCK_MONOTONIC in microseconds, as of the last
 * write (0: never).
 */
struct ss_shm_conn_info {
	uint32_t seq;
	uint8_t state;          /* RFC 9293 state, enum ss_tcp_state order */
	uint8_t options;        /* SS_INFO_OPT_* negotiated */
	uint8_t snd_wscale, rcv_wscale;
	uint8_t retransmits;    /* consecutive timeouts of the current episode */
	uint8_t backoff;        /* RTO backoff exponent */
	uint8_t ca_state;       /* 0 open, 3 recovery, 4 loss (Linux TCP_CA_*) */
	uint8_t pad_;
	uint32_t rto_us, srtt_us, rttvar_us;
	uint32_t snd_mss, rcv_mss;
	uint32_t snd_cwnd;      /* bytes (rate-based flows: the rate over srtt) */
	uint32_t snd_ssthresh;  /* bytes; UINT32_MAX: none */
	uint32_t unacked;       /* bytes in flight */
	uint32_t snd_wnd, rcv_wnd;
	uint32_t total_retrans; /* segments retransmitted */
	uint32_t gen;           /* the handle's generation the record is of */
	uint64_t pacing_rate;   /* bytes/s; 0: not paced */
	uint64_t bytes_acked;   /* our bytes the peer acknowledged */
	uint64_t bytes_received;/* bytes received in order */
	char cc_name[16];       /* the connection's congestion-control algorithm */
	uint32_t sacked;        /* bytes the peer's SACK blocks hold above snd_una */
	uint32_t lost;          /* bytes in flight taken for lost, not resent yet */
	uint32_t retrans;       /* bytes resent and not yet acknowledged or SACKed */
	uint32_t pmtu;          /* the path's MTU as the engine uses it */
	uint64_t last_data_sent_us; /* new data last sent (to within one write) */
	uint64_t last_data_recv_us; /* data last received */
	uint64_t last_ack_recv_us;  /* an ACK last advanced snd_una */
};

#define SS_INFO_OPT_TS 0x01
#define SS_INFO_OPT_SACK 0x02
#define SS_INFO_OPT_WSCALE 0x04
#define SS_INFO_OPT_ECN 0x08

/* Ring header: producer, consumer and sleeping flag on separate lines. */
struct ss_shm_ring {
	_Alignas(SS_SHM_CACHELINE) uint32_t prod;
	_Alignas(SS_SHM_CACHELINE) uint32_t cons;
	_Alignas(SS_SHM_CACHELINE) uint32_t sleeping; /* arx: consumer blocked; atx: doorbell rung */
	/* slots follow at the next cache line */
};

/* Commands, app -> service (atx). */
enum ss_shm_cmd_op {
	SS_CMD_NOP = 0,
	SS_CMD_LISTEN,       /* port, arg (backlog), cookie -> SS_EV_LISTEN */
	SS_CMD_LISTEN_CLOSE, /* conn = listener id */
	SS_CMD_CONNECT,      /* ip, port, cookie, arg = TCP_MAXSEG (0: none)
			      * -> SS_EV_CONNECTED */
	SS_CMD_TX,           /* conn, gen, arg = bytes appended to the transmit ring */
	SS_CMD_RX_DONE,      /* conn, gen, arg = bytes consumed from the receive ring */
	SS_CMD_SHUTDOWN,     /* conn, gen: no more sending (FIN after queued data) */
	SS_CMD_CLOSE,        /* conn, gen: shutdown + no more receiving */
	SS_CMD_ABORT,        /* conn, gen: RST now */
	SS_CMD_BIND,         /* port (0: pick), arg SS_BIND_*, cookie -> SS_EV_BOUND */
	SS_CMD_LISTEN_ARM,   /* conn = listener id: this app accepts from it */
	SS_CMD_INHERIT,      /* (fork child) -> SS_EV_INHERITED */
	SS_CMD_ADOPT,        /* conn, gen, ip = owner app id, cookie -> SS_EV_ADOPTED */
	SS_CMD_RELEASE,      /* conn, gen, ip = owner app id: drop an inherited reference */
	SS_CMD_LISTEN_STOP,  /* conn = listener id, arg SS_STOP_*, cookie: stop listening
			      * -> SS_EV_LISTEN_STOPPED to every member */
	SS_CMD_SETOPT,       /* conn, gen, arg = SS_OPT_*, ip = value: a connection's
			      * socket option (bad option or value: EINVAL); with
			      * SS_CMDF_LISTENER, conn = listener id: the listener's,
			      * which the connections it accepts from then on take */
	SS_CMD_OP_MAX
};

#define SS_CMDF_BOUND 0x01   /* LISTEN/CONNECT: conn names a bound port entry */
#define SS_CMDF_RX_DONE 0x02 /* TX: also SS_CMD_RX_DONE of rx_done bytes, after the TX
			      * (one command for a reply; the service runs the two
			      * parts as the two commands in that order, errors alike) */
#define SS_CMDF_TX_HOME 0x04 /* TX: the bytes start at the transmit ring's home byte
			      * (all sent before was acknowledged; else EINVAL and the
			      * TX part is not taken; see the end of this file) */
#define SS_CMDF_TX_GROW 0x08 /* TX: the bytes start at the home byte of the slot's
			      * large transmit ring, the connection's from now on
			      * (its small one was all acknowledged; else EINVAL as
			      * for SS_CMDF_TX_HOME; see the end of this file) */
#define SS_CMDF_RX_GROW 0x10 /* RX_DONE, or TX with SS_CMDF_RX_DONE: move the
			      * receive ring to the slot's large one once nothing
			      * is unread (see the end of this file) */
#define SS_CMDF_MORE 0x20     /* TX: MSG_MORE: a last segment smaller than the MSS
			      * waits for more (as TCP_CORK) */
#define SS_CMDF_MORE_END 0x40 /* TX: the first without MSG_MORE after one with it */
#define SS_CMDF_LISTENER 0x80 /* SETOPT: conn is a listener id */
#define SS_CMDF_CONNECTING 0x20 /* ABORT (the bit is TX's SS_CMDF_MORE: flags are
				 * read per op): conn and gen unused; the connection the
				 * app's SS_CMD_CONNECT with this cookie opened, not
				 * yet announced, goes (RFC 9293 §3.10.4 CLOSE and
				 * §3.10.5 ABORT in SYN-SENT: the TCB is deleted,
				 * nothing is sent; a SYN-ACK that comes later finds
				 * no connection and is reset).  No event follows,
				 * SS_EV_CONNECTED included.  Already announced, or
				 * no such cookie: nothing (the SS_EV_CONNECTED
				 * brings the handle to close). */

/* SS_CMD_SETOPT options, Linux's semantics and ranges (values in ip):
 * NODELAY, CORK, KEEPALIVE: 0 off, else on; KEEPIDLE, KEEPINTVL: seconds,
 * 1..32767; KEEPCNT: 1..127; MAXSEG: 0 (none) or 88..32767, the MSS
 * announced and used at most (before the handshake: SS_CMD_CONNECT takes
 * it in arg, a listener for its connections). */
#define SS_OPT_NODELAY 1
#define SS_OPT_CORK 2
#define SS_OPT_KEEPALIVE 3
#define SS_OPT_KEEPIDLE 4
#define SS_OPT_KEEPINTVL 5
#define SS_OPT_KEEPCNT 6
#define SS_OPT_MAXSEG 7
#define SS_OPT_MAX 8

#define SS_BIND_REUSEPORT 0x01
#define SS_STOP_RELEASE 0x01 /* LISTEN_STOP: the members give the entry up */

struct ss_shm_cmd {
	uint8_t op;
	uint8_t flags;   /* SS_CMDF_* */
	uint8_t pad_[2];
	uint32_t conn;   /* connection slot or listener id */
	uint32_t gen;    /* connection generation (stale handles are rejected) */
	uint32_t arg;    /* bytes, backlog */
	union {
		uint32_t ip;      /* host order */
		uint32_t rx_done; /* TX with SS_CMDF_RX_DONE: bytes consumed */
	};
	uint16_t port;   /* host order */
	uint16_t pad2_;
	uint64_t cookie; /* the application's own value, echoed in events */
};

/* Events, service -> app (arx). */
enum ss_shm_ev_type {
	SS_EV_NONE = 0,
	SS_EV_LISTEN,     /* cookie, conn = listener id, error; flags SS_EVF_MEMBER */
	SS_EV_CONNECTED,  /* cookie, conn, gen, error (0 = open), endpoints, buffers */
	SS_EV_ACCEPTED,   /* cookie = listener's cookie, conn, gen, endpoints, buffers */
	SS_EV_RX,         /* conn, gen, bytes appended to the receive ring, arg3 the
			   * ring byte the first of them is at (see the end of this
			   * file); flags SS_EVF_TX_ACKED: arg2 bytes of the transmit
			   * ring acknowledged too, as a TX_ACKED after it */
	SS_EV_TX_ACKED,   /* conn, gen, bytes of the transmit ring acknowledged (now free) */
	SS_EV_PEER_FIN,   /* conn, gen: the peer will send no more */
	SS_EV_RESET,      /* conn, gen, error (ECONNRESET) */
	SS_EV_ERROR,      /* conn, gen, error (ETIMEDOUT, ...) */
	SS_EV_CLOSED,     /* conn, gen: the handle is dead, the slot may be reused */
	SS_EV_CMD_ERROR,  /* a command was rejected: op in arg, error, conn, gen */
	SS_EV_BOUND,      /* cookie, conn = port entry id, local_port, error */
	SS_EV_INHERITED,  /* error; arg = port entries joined, arg2 = connections held */
	SS_EV_ADOPTED,    /* cookie, conn, gen, endpoints, buffers, positions, flags */
	SS_EV_MOVED,      /* conn, gen: the handle is dead, another process adopted it;
			   * flags SS_EVF_HELD: arg, arg2, arg3 name our reference */
	SS_EV_FIN_ACKED,  /* conn, gen: our FIN was acknowledged (after SHUTDOWN) */
	SS_EV_RETURNED,   /* as ADOPTED, unasked (fork: the owner let go); cookie =
			   * the reference it replaces: slot << 32 | gen */
	SS_EV_REF_GONE,   /* arg = app id, conn, gen: our reference to that handle
			   * is gone (the connection moved elsewhere or was reset) */
	SS_EV_LISTEN_STOPPED, /* cookie (the member's), conn = listener id, local_port;
			       * arg 1: the entry is gone (SS_STOP_RELEASE) */
	SS_EV_RX_GROWN,   /* conn, gen: the receive ring is the slot's large one from
			   * the next SS_EV_RX on (nothing was unread; see the end of
			   * this file) */
	SS_EV_TYPE_MAX
};

#define SS_EVF_PEER_FIN 0x01 /* ADOPTED/RETURNED: the peer's FIN was received */
#define SS_EVF_SHUT_WR 0x02  /* ADOPTED/RETURNED: our FIN is queued or sent */
#define SS_EVF_DEAD 0x04     /* ADOPTED/RETURNED: reset or timed out (error says which) */
#define SS_EVF_FIN_ACKED 0x08 /* ADOPTED/RETURNED: our FIN was acknowledged */
#define SS_EVF_HELD 0x10     /* MOVED: we hold a reference to the connection */
#define SS_EVF_MEMBER 0x20   /* LISTEN: unasked, another member of the entry listened */
#define SS_EVF_TX_ACKED 0x40 /* RX: a TX_ACKED of arg2 bytes rides along (one slot
			      * for a request and the ACK of the last reply) */

struct ss_shm_ev {
	uint8_t type;
	uint8_t flags;   /* SS_EVF_* */
	uint16_t error;  /* errno value, 0 = none */
	uint32_t conn;
	uint32_t gen;
	uint32_t arg;    /* bytes, or the rejected command's op */
	uint64_t cookie;
	uint32_t local_ip, remote_ip;
	uint16_t local_port, remote_port;
	uint32_t arg2;
	uint64_t rx_off;  /* region offset of the receive ring (CONNECTED/ACCEPTED) */
	uint64_t tx_off;  /* region offset of the transmit ring */
	uint32_t arg3, arg4;
};

_Static_assert(sizeof(struct ss_shm_cmd) == 32, "command slot is 32 bytes");
_Static_assert(sizeof(struct ss_shm_ev) == 64, "event slot is one cache line");
_Static_assert(sizeof(struct ss_shm_ring) == 3 * SS_SHM_CACHELINE, "ring header layout");

/*
 * Receive/transmit ring positions: the app and the service each track the
 * stream positions themselves from events and commands.  Position p is at
 * byte (p - origin) & (size - 1) of its ring, and a ring's origin moves
 * only while the ring is empty, so that the next bytes go to the ring's
 * home byte again (a connection with one small message at a time keeps to
 * one cache line of each ring instead of walking through all of it):
 *   receive: the service moves it when new data arrives while everything
 *     before was consumed (RX_DONE) and nothing is held out of order.
 *     Every SS_EV_RX says in arg3 where its first byte is; where that is
 *     not where the application expected it, the application had
 *     consumed everything (else the event is bogus) and moves its origin.
 *   transmit: the application moves it when everything it sent was
 *     acknowledged (TX_ACKED), writes from the home byte, and sets
 *     SS_CMDF_TX_HOME on the TX of those bytes.  It does not while the
 *     connection is shared with other processes (fork: the sync words
 *     carry positions only), and before sharing it puts unposted bytes
 *     back where the old origin has them.
 * A handle that comes with SS_EV_CONNECTED, ACCEPTED, ADOPTED or RETURNED
 * starts with origin 0 for both rings (a move copies the bytes into
 * place).
 *
 * The home byte is ss_shm_ring_home(): spread over the ring by slot.  Were
 * it byte 0 for every connection, the one hot line of every ring would sit
 * at the same offset from a 64 KiB boundary, and all of them would fall
 * into the same few sets of each cache (an L2 of 1024 sets has one set for
 * them all): at thousands of connections each request would fetch its
 * message from memory.
 */
/*
 * Small rings that grow.  Where the application's ring size in a
 * direction (ss_shm_hdr rxbuf_size, txbuf_size) is above
 * SS_SHM_SMALL_RING and the region has small rings (small_off), a
 * connection starts in that direction on its slot's small ring, and moves
 * to the slot's large ring once, when it needs more, with the ring empty:
 *   receive: the application asks with SS_CMDF_RX_GROW on its RX_DONEs
 *     (it saw more than half the small ring unread) until SS_EV_RX_GROWN
 *     comes; the service moves the ring at such a command that leaves
 *     nothing unread and nothing held out of order, and posts
 *     SS_EV_RX_GROWN before any SS_EV_RX in the large ring.  The window
 *     offered grows with the ring (an ACK tells the peer at once).
 *   transmit: the application, having found the small ring more than
 *     half full, stops writing until all it sent is acknowledged, writes
 *     from the large ring's home byte, and sets SS_CMDF_TX_GROW on the TX
 *     of those bytes.
 * A connection shared with other processes (fork) does not move, and one
 * that moves to another application (ADOPTED, RETURNED) lands on the
 * large rings of its new slot.  The window scale is chosen for the large
 * receive ring from the start.  So a connection with one small message
 * at a time keeps to 8 KiB of rings, densely laid out (fewer page-table
 * lines and TLB entries for thousands of connections), and a bulk one
 * gets the large rings after one round trip or so.
 */
#define SS_SHM_SMALL_RING 4096u

static inline uint32_t ss_shm_ring_home(uint32_t slot, uint32_t size)
{
	if (size <= SS_SHM_CACHELINE || (size & (size - 1)))
		return 0;
	/* Fibonacci hashing: the top bits of slot * 2^32/phi pick one of the
	 * ring's lines; consecutive slots land far apart. */
	unsigned line_bits = (unsigned)__builtin_ctz(size) - 6;
	return ((slot * 0x9e3779b1u) >> (32 - line_bits)) * SS_SHM_CACHELINE;
}

#endif /* SS_SHM_ABI_H */
