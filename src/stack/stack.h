/* stack.h - the service's TCP stack on one fast-path thread: flows, listeners, app queues (no DPDK). */
#ifndef SS_SERVICE_STACK_H
#define SS_SERVICE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cc/cc.h"
#include "cc/pacer.h"
#include "stack/app.h"
#include "stack/cc_policy.h"
#include "stack/counters.h"
#include "stack/flow_table.h"
#include "stack/idpool.h"
#include "stack/timer_wheel.h"
#include "tcp/tcp.h"

struct ss_ipv4;
struct ss_arp_cache;
struct ss_proto_ctx;

/*
 * One struct ss_stack per fast-path thread that serves TCP; only that
 * thread touches it.  It owns every connection (engine state, timers,
 * flow-table entry), every listener, and the fast-path side of every
 * attached application (its command and event rings).  The control
 * thread only attaches and reclaims applications (service/registry.c).
 *
 * A connection is handed to the application as (slot, gen) of the app's
 * idpool; the slot also names its pair of rings in the app's region.  The
 * slot is held until the application closes or aborts the handle, so data
 * the app has not read yet stays readable after a reset or the peer's FIN;
 * SS_EV_CLOSED confirms the release.  A connection the app has closed
 * lives on without a slot (TIME_WAIT, FIN_WAIT_2 after close) until the
 * engine reaches CLOSED.
 */

/* TX checksum offload (frame_send's @flags, ss_stack_io.tx_offload): the
 * frame is Ethernet (14 bytes) + IPv4 without options (20) + TCP, its IPv4
 * checksum field 0 and its TCP checksum field the pseudo-header sum
 * (ss_tcp_csum_set() with offload): the port completes both. */
#define SS_TX_CSUM 0x1

/* Keys ss_stack_rx_prefetch() takes per burst (the fast path's burst). */
#define SS_STACK_RX_AHEAD 32

/* Frame output, provided by the fast path (mbufs) or a test (memory). */
struct ss_stack_io {
	void *arg;
	/* A buffer for one outgoing frame of up to *cap bytes, or NULL. */
	uint8_t *(*frame_alloc)(void *arg, void **handle, size_t *cap);
	/* Queue the frame for sending (len bytes; SS_TX_* @flags) or, with
	 * len 0, free it. */
	void (*frame_send)(void *arg, void *handle, size_t len, unsigned flags);
	/* SS_TX_CSUM: the port computes checksums, so TCP segments to the
	 * wire go out marked for it; 0: every checksum in software. */
	unsigned tx_offload;
	/* TSO (with SS_TX_CSUM only): the most TCP payload bytes of one
	 * segment the port cuts into MSS-sized ones; 0: no TSO.  Such a
	 * segment's frame comes from frame_alloc_tso (room for tso_max
	 * bytes of payload behind the headers) when it does not fit
	 * frame_alloc's, and goes with frame_send_tso: @l4_len its TCP
	 * header's length, @mss the payload of each cut segment; its TCP
	 * checksum field holds the pseudo-header sum without the length. */
	uint32_t tso_max;
	uint8_t *(*frame_alloc_tso)(void *arg, void **handle, size_t *cap);
	void (*frame_send_tso)(void *arg, void *handle, size_t len, unsigned l4_len, unsigned mss);
};

#define SC_DIRTY 0x01       /* on the stack's dirty list */
#define SC_PENDING 0x02     /* on its context's pending list */
#define SC_ANNOUNCED 0x04   /* CONNECTED / ACCEPTED was posted (or is on its way) */
#define SC_APP_CLOSED 0x08  /* the app closed or aborted the handle */
#define SC_PASSIVE 0x10     /* created by a listener */
#define SC_ARP_WAIT 0x20    /* active open waiting for the peer's MAC */
#define SC_IN_TABLE 0x40    /* in the flow table */
#define SC_FIN_ACKED 0x80   /* SS_EV_FIN_ACKED was posted for this handle */

/* A connection's congestion control (stack_cc.c): the control loop's state
 * (policy, once per interval) and its enforcement (pacer, every send).
 * The fields every send reads (the send step, stack_send.h) come first:
 * with the pacer's per-send part (struct ss_pacer_flow) they share the
 * connection's third line (stack_conn.c checks), which the receive path
 * prefetches for the round's flush.  Then what each interval or host run
 * reads. */
struct ss_sconn_cc {
	const struct ss_cc_ops *ops;  /* NULL until the handshake completes */
	struct ss_pacer_group *host_grp; /* while shared: its host's aggregate pacer */
	uint32_t charged;             /* engine's sent_bytes already charged */
	bool paced;                   /* pf enforces something (rate or cap) */
	bool shared;                  /* paced at its host's share (cc-share host) */
	bool auto_pick;               /* "auto" chose its algorithm: it may move on */
	bool auto_wl;                 /* ... its window held it back in the last
				       * interval (cc_auto_move()) */
	bool auto_ecn;                /* ... with ECN negotiated: dctcp-win once
				       * it sees marks */
	bool stretched;               /* its interval was stretched: its window
				       * held nothing back (stack_cc.c) */
	struct ss_pacer_flow pf;      /* rate and the app's cap, charged per send */
	struct ss_timer timer;        /* on the stack's cc_wheel while active and
				       * not shared (a member's is its host's) */
	uint64_t start_us;            /* start of the current interval */
	struct ss_list host_link;     /* on its host's members while shared */
	struct ss_cc_share_flow share; /* its membership of the host's interval */
	struct ss_cc_counters prev;   /* the engine's counters at interval start */
	uint64_t published_us;        /* TCP_INFO last published (cc_sample_done()) */
	union ss_cc_state st;         /* the algorithm's state */
};

/*
 * A connection.  Laid out for the cache (docs/benchmarks.md, "Cache lines
 * per request"): what a request reads or writes, the service's part first
 * (three lines) and then the engine's hot part (tcp, on a cache-line
 * boundary, six lines: SCONN_TCP_HOT_LINES), nine lines in a row, which
 * the receive path prefetches (sconn_prefetch()); the cold rest after.
 * The array of them is allocated 64-byte aligned (stack_conn.c).
 */
struct ss_sconn {
	/* hot; the first line is also all that a lazy timer fire reads */
	struct ss_timer timer;   /* on the stack's wheel: every deadline but the
				  * delayed ACK's, armed lazily (conn_sync_timer) */
	struct ss_sconn *dirty_next;
	struct ss_app *app;      /* NULL once the slot is released */
	uint64_t timer_want_us;  /* the engine's earliest deadline on the wheel at
				  * the last sync (0: none), for the timer's fire */
	uint16_t ctx;            /* context that receives its events */
	uint8_t flags;           /* SC_* */
	uint8_t ev_pending;      /* SS_TCP_EV_* bits not yet posted */
	uint8_t info_state;      /* engine state its TCP_INFO record shows
				  * (SS_TCPS_MAX: none yet, stack_cc_publish) */
	uint8_t *orphan_buf;     /* the data it still sends after its app exited
				  * (every flush looks) */
	uint32_t slot, gen;      /* the application's handle */
	uint32_t rx_pending, acked_pending;
	uint8_t peer_mac[6];
	struct ss_timer delack;  /* the delayed ACK's, on an s->delack_q (a list
				  * node: armed, deadline_us) */
	struct ss_sconn_cc cc;
	struct ss_tcp_conn tcp __attribute__((aligned(64))); /* engine state; its hot part first */
	/* cold */
	struct ss_flow_key key;
	uint32_t id;             /* index in the stack's connection pool */
	uint16_t listener;       /* passive: listener index + 1 until accepted */
	uint8_t arp_tries;
	uint8_t ev_connect_error;
	uint64_t cookie;
	uint16_t holds;          /* inherited references held by other apps (fork) */
	uint8_t held_close;      /* owner closed (1) or aborted (2) while held */
	struct ss_sconn *pend_next;
	struct ss_sconn *arp_next; /* on the stack's ARP-wait list */
	uint32_t orphan_size;
	/* For TCP_INFO (published at most every 10 ms, stack_cc_publish()). */
	uint32_t total_retrans;  /* segments, summed as the stats drain */
	uint32_t rx_seen;        /* rx_tail at the last publish */
	uint32_t una_seen, snd_seen; /* snd_una, snd_max at the last publish */
	uint64_t bytes_acked, bytes_received;
};

/*
 * A port entry: claimed by bind() (BOUND) and then listening (LISTEN), or
 * listening at once.  Its members are the applications that hold the
 * socket: the one that made it and the children it forked (SS_CMD_INHERIT).
 * The entry lives while it has members.  New connections go, in turn, to
 * the members that armed it (they accept from it), else to member 0.
 */
#define SS_LISTENER_MEMBERS 16

enum ss_listener_state { SS_LST_FREE, SS_LST_BOUND, SS_LST_LISTEN };

struct ss_lmember {
	struct ss_app *app;
	uint64_t cookie;         /* the member's own cookie, echoed in ACCEPTED */
	uint16_t ctx;
	bool armed;
	bool listened;           /* its own LISTEN made the entry listen, or joined it */
};

struct ss_listener {
	uint8_t state;           /* enum ss_listener_state */
	bool reuseport;
	uint8_t n_members;
	uint8_t next;            /* round-robin position among armed members */
	uint16_t port;
	uint32_t backlog;
	uint32_t n_syn;          /* connections in SYN_RCVD */
	struct ss_lmember m[SS_LISTENER_MEMBERS];
	uint32_t opt_set;        /* SS_OPT_* set on the listener (1 << id) ... */
	uint32_t opt_val[SS_OPT_MAX]; /* ... and their values: its connections take them */
};

struct ss_stack_limits {
	uint32_t max_flows;      /* connections incl. TIME_WAIT */
	uint32_t max_listeners;
	uint32_t timer_slots;    /* power of two */
	uint32_t cmd_budget;     /* commands taken per context per round */
	uint64_t max_orphan_mem; /* bytes kept for connections whose app exited */
	uint32_t loop_slots;     /* loopback queue frames, power of two; 0: the default */
	uint8_t syn_cookies;     /* SS_SYN_COOKIES_*: 0 (off) unless set */
	bool tw_reuse;           /* connect() may take a 4-tuple in TIME_WAIT (stack_conn.c) */
	uint16_t local_port_lo;  /* ephemeral ports for connect() and bind(0), */
	uint16_t local_port_hi;  /* inclusive; 0, 0: SS_EPHEMERAL_LO..HI (set at init) */
};

/* SYN cookies (stack_cookie.c): a SYN past the listener's backlog of
 * half-open connections is answered statelessly instead of dropped. */
enum { SS_SYN_COOKIES_OFF, SS_SYN_COOKIES_ON, SS_SYN_COOKIES_ALWAYS };

#define SS_LOOP_SLOTS_DEFAULT 1024u

/*
 * The loopback queue (stack_loop.c): segments to our own address never go
 * to the NIC.  The output callbacks put them here (a full queue drops and
 * counts them; the engine sends again later), and the round feeds them back
 * into the receive path, ss_proto_input() as for frames from the NIC,
 * after its flush: never from inside emit, so no connection is re-entered
 * while it is being processed.  Preallocated, single-threaded, no locks.
 */
struct ss_stack_loop {
	uint8_t *buf;            /* slots x stride bytes */
	uint16_t *len;           /* frame length per slot */
	uint32_t slots, stride;
	uint32_t head, tail;     /* free-running; tail - head frames queued */
	struct ss_proto_ctx *rx; /* the receive path; NULL: no loopback */
};

struct ss_stack {
	struct ss_counters *ctr;
	struct ss_stack_io io;
	struct ss_tcp_params params;
	struct ss_stack_limits lim;
	uint8_t mac[6];
	uint32_t ip, netmask, gateway;
	struct ss_arp_cache *arp;
	uint8_t isn_secret[16];
	uint64_t ts_seed;

	struct ss_flow_table flows;
	struct ss_timer_wheel wheel;
	struct ss_sconn *conns;
	struct ss_idpool conn_ids;
	struct ss_listener *listeners;
	uint32_t n_listeners;    /* gauge: port entries in use */

	struct ss_app_reg *reg;
	uint32_t reg_gen;        /* registry generation last synced */
	struct ss_app **active;  /* ACTIVE apps this thread serves */
	uint32_t n_active;
	unsigned fp_index;       /* this thread's sleeping flag in the status page */
	bool draining;           /* carrying out an owner's commands before a move */
	bool publish;            /* events posted (or waiting for room) since the
				  * last publish_events() */
	bool app_broken;         /* an app broke its rings since the last stack_apps_resync() */

	struct ss_sconn *dirty;  /* connections touched this round */
	/* Delayed ACKs due, in deadline order, one queue per hold: [k] the
	 * connections at now + ss_tcp_delack_step_us(k) (tcp.h, the
	 * delayed-ACK rule), so appending keeps each in order (stack_conn.c);
	 * a reply usually takes the ACK first and the entry goes without ever
	 * touching the wheel. */
	struct ss_timer delack_q[SS_TCP_DELACK_STEPS]; /* list sentinels */
	uint64_t now_us;
	void *seg_handle;        /* the frame conn_seg_buf() gave the engine, until it is sent */
	uint16_t ip_id;
	uint32_t n_flows;        /* gauge: live connections (any state) */
	uint32_t arp_pending;    /* gauge: active opens waiting for ARP */
	struct ss_sconn *arp_wait; /* those opens, to check after each burst */
	uint8_t dead_ring[4096]; /* stands in for an app's rings after release */
	uint64_t orphan_bytes;   /* gauge: unacknowledged data of orphans (stack_conn_orphan) */

	/* Congestion control (stack_cc.c). */
	const struct ss_cc_policy *ccp; /* NULL: the engine's own NewReno */
	struct ss_timer_wheel cc_wheel; /* control intervals of active flows */
	struct ss_timer_wheel cc_host_wheel; /* cc-share host: the hosts' intervals */
	struct ss_pacer pacer;          /* paced flows waiting for their time */
	struct ss_pacer_group *caps;    /* one per ccp rule: app-rate-cap buckets */
	FILE *cc_trace;                 /* --cc-trace, or NULL */
	uint32_t cc_members;            /* gauge: members of all hosts (cc-share host) */
	uint32_t cc_flow_us;            /* each flow under control lengthens every
					 * interval's floor by this (stack_cc.c,
					 * CC_FLOW_US; tests set it) */
	struct ss_cc_path {             /* per remote host, for the control */
		uint32_t ip;            /* interval of its flows (stack_cc.c: */
		uint32_t rtt_us;        /* cc_interval_len): mean srtt ... */
		uint64_t rate;          /* ... and mean paced rate, B/s */
		uint64_t last_us;       /* a flow's interval last ended (0: never) */
		uint64_t host_start_us; /* the host controller's interval began */
		struct ss_timer timer;  /* cc-share host: its interval's end, while
					 * it has members (cc_host_wheel) */
		struct ss_cc_host host; /* cc-share host: the host's controller */
		struct ss_list members; /* its flows paced at their share */
		uint32_t n_members;     /* how many (the split's divisor) */
		bool pace_on;           /* pace is initialised (cc-share host) */
		uint8_t slack;          /* runs in a row that bound no member: the
					 * next interval is 2^slack longer
					 * (stack_cc.c, CC_HOST_SLACK_MAX) */
		struct ss_pacer_group pace; /* the members paced as one aggregate at R */
	} cc_paths[256];

	struct ss_stack_loop loop;      /* segments to our own address */

	/* The receive burst's connections, looked up ahead
	 * (ss_stack_rx_prefetch(), stack_conn.c). */
	struct ss_stack_rx_ahead {
		struct ss_flow_key key[SS_STACK_RX_AHEAD];
		uint32_t hash[SS_STACK_RX_AHEAD];
		struct ss_sconn *sc[SS_STACK_RX_AHEAD]; /* valid while ... */
		uint32_t gen[SS_STACK_RX_AHEAD];        /* ... flows.gen is this */
		uint16_t n;             /* keys of the burst */
		uint16_t next;          /* the next one ss_stack_tcp_input() expects */
		uint16_t resolved;      /* looked up: [0, resolved) */
	} rxa;

	/* SYN cookies (stack_cookie.c). */
	struct ss_sconn *cookie_sc;     /* scratch connection that answers a SYN */
	uint64_t cookie_until_us;       /* ACKs may carry our cookies until then */
};

int ss_stack_init(struct ss_stack *s, const struct ss_stack_limits *lim,
		  const struct ss_tcp_params *params, struct ss_counters *ctr,
		  const uint8_t mac[6], uint32_t ip, uint8_t prefix_len, uint32_t gateway,
		  struct ss_arp_cache *arp, struct ss_app_reg *reg, unsigned fp_index,
		  const struct ss_stack_io *io);
void ss_stack_fini(struct ss_stack *s);

/*
 * A TCP segment (checksum verified, addressed to us) for the stack.
 * Returns true when a connection or listener took it, false when none
 * exists (the caller answers with RST).  @frame is the Ethernet frame
 * (source MAC for new connections).
 */
bool ss_stack_tcp_input(void *stack, const uint8_t *frame, const struct ss_ipv4 *ip,
			const struct ss_tcp *seg);

/*
 * Burst processing (TAS §3.1, mTCP §4): before a receive burst goes
 * through ss_proto_input() frame by frame, the fast path hands over the
 * 4-tuples of its TCP segments, in order (at most SS_STACK_RX_AHEAD; the
 * rest are ignored).  Every key's flow-table slot is prefetched now, and
 * a few segments ahead of the one ss_stack_tcp_input() is handling, the
 * next one's connection is looked up and its lines prefetched, so the
 * burst's cache misses overlap instead of coming one after another.  The
 * answers are hints: ss_stack_tcp_input() takes one only for the same key
 * and while the table is unchanged, and looks up itself otherwise.
 */
void ss_stack_rx_prefetch(struct ss_stack *s, const struct ss_flow_key *keys, unsigned n);

/*
 * Whether a burst is worth looking up ahead: with SS_STACK_RX_AHEAD_FLOWS
 * connections or more.  The pass has a cost per segment (parsing the
 * 4-tuple, a second hash's worth of work, the answers' bookkeeping:
 * bench/insn_per_req.py measures it); below that many connections their
 * lines stay in the cache and there is no miss for it to hide, above it
 * the misses it hides are worth more (docs/benchmarks.md).
 */
#define SS_STACK_RX_AHEAD_FLOWS 512u

static inline bool ss_stack_rx_ahead_wanted(const struct ss_stack *s)
{
	return s->n_flows >= SS_STACK_RX_AHEAD_FLOWS;
}

/*
 * One round of non-packet work, after an RX burst: pick up attached and
 * hung-up applications, take commands from every context (bounded), run
 * due timers, then send what connections may send and post their events
 * (one ACK and one notification per connection per round), feed the
 * loopback queue back into the receive path and flush again (a bounded
 * number of passes), and wake the contexts that got events.  Returns true
 * if it did any work or looped-back frames still wait (the caller must
 * not sleep then).
 */
bool ss_stack_round(struct ss_stack *s, uint64_t now_us);

/*
 * Before blocking: sets this thread's sleeping flag, then re-checks every
 * command ring.  Returns false (flag cleared) if work arrived, true if the
 * caller may block; ss_stack_woke() clears the flag after the wait.
 */
bool ss_stack_may_sleep(struct ss_stack *s);
void ss_stack_woke(struct ss_stack *s);

/*
 * Congestion control for connections that complete their handshake from
 * now on: @p's algorithm (and per-application rules), run once per
 * control interval, enforced by pacing or windows.  Without it (the
 * default) the TCP engine's own NewReno runs.  @p must outlive the stack.
 * Each app-rate-cap rule gets one token bucket, shared by every process
 * of that name.  Returns 0 or -ENOMEM (then no loop runs).
 */
int ss_stack_set_cc(struct ss_stack *s, const struct ss_cc_policy *p);
/* --cc-trace: one line per control interval to @f (NULL: off; the caller closes it). */
void ss_stack_set_cc_trace(struct ss_stack *s, FILE *f);

/*
 * The receive path for looped-back frames: the fast path's protocol
 * context, whose tcp_input is this stack.  Until it is set, connecting to
 * the stack's own address fails with EINVAL (no loopback path).
 */
void ss_stack_set_loop_input(struct ss_stack *s, struct ss_proto_ctx *rx);

/* Earliest timer deadline (us), 0 while looped-back frames wait, or UINT64_MAX. */
uint64_t ss_stack_next_deadline(const struct ss_stack *s);
/* True while the pacer holds segments waiting for their departure time. */
static inline bool ss_stack_pacing(const struct ss_stack *s)
{
	return s->pacer.n_queued != 0;
}

/* Gauges for `slipstream stats`. */
struct ss_stack_gauges {
	uint32_t flows, listeners, apps, app_conns;
	uint64_t orphan_bytes;
};
void ss_stack_gauges(const struct ss_stack *s, struct ss_stack_gauges *g);

#endif
