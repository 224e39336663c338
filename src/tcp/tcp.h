/* tcp.h - the per-connection TCP engine: pure and deterministic (time in, segments in, segments out). */
#ifndef SS_TCP_TCP_H
#define SS_TCP_TCP_H

/*
 * One struct ss_tcp_conn per connection.  The engine does no I/O, reads no
 * clock and allocates nothing: the caller passes the time (microseconds,
 * monotonic), hands in parsed segments, and receives the segments to send
 * through an emit callback.  The connection's payload lives in two
 * circular buffers the caller provides (in the service they sit in the
 * application's shared memory): the engine copies in-order received
 * payload into the receive ring and reads payload to send from the
 * transmit ring.  It never reads control information from either ring.
 *
 * Split: ss_tcp_input() tests a short list of fast-path
 * conditions and handles the common ESTABLISHED case on the hot 128-byte
 * struct ss_tcp_flow; everything else (handshake, FIN, RST, options,
 * out-of-window, timers) is in the non-inlined slow path (tcp_slow.c).
 *
 * RFCs: 9293 (TCP), 5961 (RST/SYN/ACK attack mitigation), 6298 (RTO),
 * 6528 (ISN), 7323 (window scale, timestamps), 5681 + 6582 (NewReno
 * without SACK), 1122 §4.2.2.17 (persist), 2018 (SACK: blocks sent for the
 * data held out of order, and read from the peer's ACKs), 6675 (SACK loss
 * recovery), 6937 (PRR), 8985 (RACK loss detection and its reorder
 * timer, §6, for SACK connections; tail loss probe, §7).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cc/cc.h"
#include "wire/tcp.h"

/* RFC 9293 §3.3.2 states.  LISTEN is not a connection state here: a
 * listener lives in the caller, which creates a connection per SYN. */
#define SS_TCP_STATE_LIST(X) \
	X(CLOSED)            \
	X(SYN_SENT)          \
	X(SYN_RCVD)          \
	X(ESTABLISHED)       \
	X(FIN_WAIT_1)        \
	X(FIN_WAIT_2)        \
	X(CLOSING)           \
	X(TIME_WAIT)         \
	X(CLOSE_WAIT)        \
	X(LAST_ACK)

#define SS_TCP_STATE_ENUM_(s) SS_TCPS_##s,
enum ss_tcp_state { SS_TCP_STATE_LIST(SS_TCP_STATE_ENUM_) SS_TCPS_MAX };
#undef SS_TCP_STATE_ENUM_

const char *ss_tcp_state_name(enum ss_tcp_state s);

/* Events for the application, OR-ed into conn->events by the engine and
 * cleared by the caller after it has told the application.  Several
 * segments in one burst therefore give one notification (receive
 * aggregation). */
#define SS_TCP_EV_CONNECTED 0x01 /* handshake done (active or passive open) */
#define SS_TCP_EV_RX 0x02        /* conn->rx_new bytes were added to the receive ring */
#define SS_TCP_EV_TX_ACKED 0x04  /* conn->tx_acked bytes of the transmit ring were acknowledged */
#define SS_TCP_EV_PEER_FIN 0x08  /* the peer's FIN arrived in order: no more data */
#define SS_TCP_EV_RESET 0x10     /* RST received: conn->error = ECONNRESET/ECONNREFUSED;
				  * not raised when nobody can care: in TIME_WAIT, after
				  * ss_tcp_close(), or in SYN_RCVD of a passive open
				  * (then only EV_CLOSED, error 0) */
#define SS_TCP_EV_ERROR 0x20     /* gave up (retransmissions): conn->error = ETIMEDOUT */
#define SS_TCP_EV_CLOSED 0x40    /* state became CLOSED: the caller may free the conn
				  * once it has delivered the other events */

/* Circular byte buffer; size is a power of two.  Positions are free-running
 * 32-bit counters; position p is at byte (p - origin) & (size - 1).
 *
 * The origin moves only while the ring holds nothing (receive: all data
 * consumed, none out of order; transmit: all of it acknowledged), so that
 * the next byte goes to the home byte again: a connection that carries one
 * small message at a time keeps touching the same cache line of its ring,
 * instead of a new one per message through the whole ring (at thousands
 * of connections those lines all come from memory, docs/benchmarks.md).
 * The caller picks the home byte (shm/abi.h ss_shm_ring_home(): different
 * connections' hot lines in different cache sets); 0 is a valid one. */
struct ss_tcp_ring {
	uint8_t *base;
	uint32_t size;
	uint32_t origin;
	uint32_t home; /* < size: where the next byte goes after an origin move */
};

/*
 * Hot state touched by the fast path on every segment: at most 128 bytes
 * (static assert in tcp.c).  Names follow RFC 9293.
 */
struct ss_tcp_flow {
	uint32_t snd_una;   /* oldest unacknowledged sequence number */
	uint32_t snd_nxt;   /* next sequence number to send */
	uint32_t snd_max;   /* highest sequence number sent (snd_nxt rewinds on RTO) */
	uint32_t snd_wnd;   /* peer's window in bytes (already scaled) */
	uint32_t snd_wl1;   /* seq of the segment that last updated snd_wnd */
	uint32_t snd_wl2;   /* ack of the segment that last updated snd_wnd */
	uint32_t rcv_nxt;   /* next sequence number expected */
	uint32_t rcv_adv;   /* right edge of the window we last advertised */
	uint32_t cwnd;      /* congestion window, bytes */
	uint32_t ssthresh;
	uint32_t recover;   /* NewReno: snd_max when fast recovery started */
	uint32_t tx_head;   /* stream position of snd_una's first data byte */
	uint32_t tx_tail;   /* stream position after the last byte the app queued */
	uint32_t rx_head;   /* stream position the app has consumed up to */
	uint32_t rx_tail;   /* stream position of rcv_nxt's first byte */
	uint32_t ooo_start; /* lowest out-of-order interval: stream position... */
	uint32_t ooo_len;   /* ...and length (0 = none; the rest are cold) */
	uint32_t ts_recent; /* RFC 7323 TS.Recent */
	uint32_t rtt_seq;   /* seq being timed when timestamps are off (0 flag in flags) */
	uint32_t srtt_us;   /* RFC 6298 SRTT (0 = no sample yet) */
	uint32_t rttvar_us;
	uint32_t rto_us;
	uint16_t mss;       /* effective send MSS (payload bytes) */
	uint8_t snd_wscale; /* peer's shift, applied to windows it sends */
	uint8_t rcv_wscale; /* our shift, applied to windows we send */
	uint8_t state;      /* enum ss_tcp_state */
	uint8_t flags;      /* SS_TCPF_* */
	uint8_t dupacks;
	uint8_t backoff;    /* RTO backoff exponent */
};

#define SS_TCPF_TS 0x01         /* timestamps negotiated */
#define SS_TCPF_SACK_PERM 0x02  /* SACK-permitted negotiated */
#define SS_TCPF_ACK_NOW 0x04    /* an ACK must go out at the next ss_tcp_output() */
#define SS_TCPF_IN_RECOVERY 0x08
#define SS_TCPF_RTT_TIMING 0x10 /* rtt_seq/rtt_start valid (no timestamps) */
#define SS_TCPF_FIN_QUEUED 0x20 /* app shut down writing: FIN after tx_tail */
#define SS_TCPF_FIN_SENT 0x40   /* our FIN has been sent (seq snd_max - 1) */
#define SS_TCPF_PEER_FIN 0x80   /* peer's FIN received in order */

/* conn->ack_pending: what the delayed-ACK rule (ss_tcp_output()) knows. */
#define SS_TCP_ACKP_OWED 0x01   /* in-order data not yet acknowledged */
#define SS_TCP_ACKP_LATE 0x02   /* the last ACK went alone at its deadline and
				 * no data came since: a reply now tells how
				 * long the hold should have been */

/* conn->txopt: what ss_tcp_output() does with a segment smaller than the
 * MSS that would end the queued data (not one that carries our FIN).
 * With none of them set, Nagle's algorithm in Minshall's variant as Linux
 * (RFC 896, RFC 9293 §3.7.4): it waits while a smaller segment sent
 * before is unacknowledged. */
#define SS_TCP_TXO_NODELAY 0x01 /* TCP_NODELAY: it goes at once */
#define SS_TCP_TXO_CORK 0x02    /* TCP_CORK: it waits for a full MSS, the cork
				 * to come off, or SS_TCP_CORK_US */
#define SS_TCP_TXO_MORE 0x04    /* MSG_MORE on the latest send: as CORK */
#define SS_TCP_TXO_PUSH 0x08    /* the next ss_tcp_output() sends what waits
				 * (once: cleared by it) */
#define SS_TCP_TXO_CTIMER 0x10  /* rto_deadline_us holds the cork's limit (nothing
				 * in flight): its expiry pushes */

/* Longest hold of a corked segment with nothing in flight (Linux: 200 ms). */
#define SS_TCP_CORK_US 200000u

/* The delayed ACK's holds: delack_us, four times longer at each step, the
 * last step delack_max_us (and none above it).  A connection moves up
 * to the step that would have caught its late reply; each step has its
 * own deadline-ordered queue in the service. */
#define SS_TCP_DELACK_STEPS 5

/* Engine limits and defaults, fixed per service. */
struct ss_tcp_params {
	uint16_t mss;              /* our MSS to announce and use at most (1460) */
	uint32_t rto_min_us;       /* 200000 (Linux); RFC 6298 says 1 s */
	uint32_t rto_max_us;       /* 60000000 */
	uint32_t rto_initial_us;   /* 1000000 (RFC 6298 §2.1) */
	uint8_t max_retries;       /* data retransmissions before ETIMEDOUT (15) */
	uint8_t syn_retries;       /* SYN / SYN-ACK retransmissions (6) */
	uint32_t time_wait_us;     /* 2*MSL; 60000000 like Linux */
	uint32_t fin_wait2_us;     /* orphaned FIN_WAIT_2 timeout (60 s) */
	uint32_t delack_us;        /* 0: ACK in-order data at the end of every burst;
				    * else hold the ACK of less than two full
				    * segments up to this long so the reply carries
				    * it (RFC 1122 §4.2.3.2; RFC 9293 §3.8.6.3) */
	uint32_t delack_max_us;    /* above delack_us: the longest hold of a
				    * connection whose replies came after its ACK
				    * went alone (ss_tcp_delack_step_us()); else
				    * none.  A connection takes delack_us at
				    * ss_tcp_conn_init() */
	uint32_t challenge_ack_per_s; /* RFC 5961 §7 limit (1000) */
	uint32_t tlp_min_us;       /* tail loss probe floor (10000); 0 disables probes */
	uint8_t ecn;               /* 1: negotiate ECN (RFC 3168) on SYN / SYN-ACK */
};

/*
 * Who moves the congestion window (ss_tcp_cc_set()).  ENGINE: the engine's
 * own per-ACK NewReno and RFC 3168 reaction (tcp_cc.c, tcp_ecn.c).  WINDOW
 * and RATE: a control loop outside the engine (the service's, src/cc/)
 * decides once per interval from the counters in conn->cc; the engine then
 * keeps loss recovery (retransmitting) but never changes cwnd itself,
 * except that a retransmission timeout in WINDOW mode drops it to one
 * segment until the loop speaks again.  In RATE mode cwnd is only a cap;
 * the caller paces with conn->tx_budget.
 */
enum ss_tcp_cc_mode { SS_TCP_CC_ENGINE, SS_TCP_CC_WINDOW, SS_TCP_CC_RATE };

/* conn->tx_budget when the caller does not pace the connection. */
#define SS_TCP_BUDGET_UNLIMITED UINT32_MAX

void ss_tcp_params_default(struct ss_tcp_params *p);

/* Segment the engine wants sent.  hdr.sport/dport/seq/ack/flags/window and
 * hdr.opts are filled; hdr.payload is NULL: the payload is the @len bytes
 * of the transmit ring from stream position @tx_pos (may wrap: copy with
 * ss_tcp_ring_copy_out()). */
struct ss_tcp_seg_out {
	struct ss_tcp hdr;
	uint32_t tx_pos;
	uint32_t len;
};

struct ss_tcp_conn;

/* Out-of-order intervals kept per connection (tcp_ooo.c): a receive ring
 * of 1 MiB holds some 720 full segments, about 70 holes among them at 10 %
 * random loss.  The array is in the cold part of struct ss_tcp_conn; the
 * fast path sees only the lowest interval (f.ooo_start, f.ooo_len). */
#define SS_TCP_OOO_MAX 64

struct ss_tcp_ooo {
	uint32_t start, len; /* receive-ring stream position, bytes */
};

/* The sender's SACK scoreboard (RFC 6675 §3): ranges the peer reported
 * holding above snd_una, sorted and disjoint, as many as a window of
 * holes needs (tcp_sack.c).  When a new range finds the board full, the
 * highest range is forgotten: the ranges nearest snd_una, whose holes
 * are resent first, are kept; what lies above them waits for later
 * SACKs, partial ACKs or the timer. */
#define SS_TCP_SACKB_MAX 64

struct ss_tcp_sackb {
	uint32_t left, right; /* sequence numbers, [left, right) */
};

/* Retransmissions in flight during loss recovery (tcp_sack.c): what was
 * resent this episode and not yet SACKed or acknowledged, sorted and
 * disjoint.  RFC 6675 keeps only HighRxt; the list also says, per range,
 * when it was resent and what was sent after it, which finds a lost
 * retransmission: by RACK (RFC 8985 §6.2: data sent later was delivered
 * and the reordering window passed, tcp_rack.c), or by DupThresh over
 * what was sent after it. */
#define SS_TCP_RXT_MAX 64

struct ss_tcp_rxt {
	uint32_t start, end; /* sequence numbers, [start, end) */
	uint32_t mark;       /* snd_max when it was (last) resent: data at or
			      * above mark left after it */
	uint32_t order;      /* resend count (conn->rxt_order) of its last segment */
	uint32_t ts;         /* when it was (last) resent, microseconds (low 32 bits):
			      * RACK's transmit time for it (RFC 8985 §6.1) */
};

/* RACK (RFC 8985 §6.1): when each sequence range was sent.  The original
 * transmissions, in sequence order and therefore in time order: record
 * i covers from the end of record i - 1 (the first one from snd_una) to
 * its end, sent between its first and last times (microseconds, low 32
 * bits), equal while segments sent in the same microsecond (a burst)
 * share a record.  A ring sized for a window of a few hundred bursts
 * (3 KiB); when it is full, with nothing acknowledged to drop, neighbours
 * merge pairwise: half the resolution in time, still the whole window.
 * A record's last time says when its data may be taken for lost (never
 * sooner than its own), its first time what its delivery proves (never
 * more).  Resends carry their own time in struct ss_tcp_rxt. */
#define SS_TCP_XREC_MAX 256

struct ss_tcp_xrec {
	uint32_t end;   /* sequence number after the range */
	uint32_t first; /* when its first byte was sent, microseconds (low 32 bits) */
	uint32_t last;  /* when its last byte was */
};

/* Returns 0 if the segment was queued for sending, -1 if it could not be
 * (no buffer): the engine then treats it as lost (it will be retransmitted
 * by the timer; a lost pure ACK is regenerated by the next event). */
typedef int (*ss_tcp_emit_fn)(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg);

/*
 * Direct output, optional beside emit (ss_tcp_conn_set_direct()): a
 * non-SYN, non-RST segment without SACK blocks (options: timestamps alone
 * or none) is written by the engine itself.  seg_buf returns room for the
 * @len bytes of the TCP segment (header and payload) in an outgoing frame,
 * or NULL as emit's -1 (the segment is lost, with the same consequences);
 * the engine writes the segment there (ss_tcp_write_usual(), then the
 * payload from the transmit ring; checksum field 0) and passes it, with
 * its header and payload lengths, to seg_send, which must send it: the
 * checksum, the lower headers (@ip_ecn: the IP header's ECN field, as
 * ss_tcp_seg_out's hdr.ip_ecn), the frame.  On the wire the segment is
 * the one emit would have been given, byte for byte.  Both get emit_arg.
 */
typedef uint8_t *(*ss_tcp_seg_buf_fn)(void *arg, struct ss_tcp_conn *c, size_t len);
typedef void (*ss_tcp_seg_send_fn)(void *arg, struct ss_tcp_conn *c, uint8_t *seg,
				   size_t hdr_len, size_t payload_len, uint8_t ip_ecn);

/* Per-connection counters the caller sums into service-wide counters
 * (conn->st_new says when any but fast_path and slow_path moved). */
struct ss_tcp_conn_stats {
	uint64_t fast_path, slow_path;        /* segments by path taken */
	uint64_t retrans_segs, fast_retrans, rto_fired;
	uint64_t drop_out_of_window, drop_old_ack, drop_future_ack;
	uint64_t drop_ooo_outside;            /* out of order, no interval left for it */
	uint64_t ooo_evicted;                 /* highest out-of-order interval forgotten
					       * for data nearer rcv_nxt (RFC 2018 §8) */
	uint64_t rst_rcvd, rst_ignored, challenge_acks;
	uint64_t dup_data;                    /* bytes already received */
	uint64_t lost_rexmits;                /* retransmissions found lost via SACK */
	uint64_t sack_rexmits;                /* holes above snd_una resent from the scoreboard */
	uint64_t rescue_rexmits;              /* RFC 6675 §5 rule 4: the tail resent once */
	uint64_t sack_reneged;                /* scoreboards dropped: the peer discarded
					       * SACKed data (RFC 2018 §8) */
	uint64_t drop_paws;                   /* RFC 7323 §5.3 R1: old TSval */
	uint64_t drop_no_ts;                  /* RFC 7323 §3.2: TS negotiated, none sent */
	uint64_t drop_no_ack;                 /* ACK bit off in a synchronized state */
	uint64_t drop_syn_sent;               /* SYN_SENT: neither SYN nor acceptable RST */
	uint64_t challenge_ack_limited;       /* RFC 5961 §7: over challenge_ack_per_s */
	uint64_t oow_ack_limited;             /* dataless out-of-window/PAWS ACKs not answered */
	uint64_t dup_acks;                    /* RFC 5681 §2 duplicate ACKs counted */
	uint64_t persist_probes;              /* RFC 9293 §3.8.6.1 zero-window probes */
	uint64_t rst_sent;
	uint64_t data_after_close;            /* RFC 1122 §4.2.2.13 resets */
	uint64_t tail_probes;                 /* RFC 8985 §7 loss probes sent */
	uint64_t rack_lost;                   /* RACK (RFC 8985 §6.2) found data lost
					       * (ACKs or reorder timeouts that did) */
	uint64_t rack_timeouts;               /* RACK reorder timer expiries (§6.3) */
	uint64_t ce_segs;                     /* segments received with CE */
	uint64_t ecn_reductions;              /* cwnd reductions for ECE (ENGINE mode) */
	uint64_t ecn_echoes;                  /* ECE episodes answered with CWR (WINDOW/RATE
					       * modes: the reduction is the loop's) */
	uint64_t budget_stops;                /* ss_tcp_output() stopped at tx_budget */
	uint64_t delack_acks;                 /* ACKs sent alone at the delayed-ACK deadline */
	uint64_t delack_longer;               /* holds raised a step or more */
	uint64_t delack_shorter;              /* ... and back to delack_us */
	uint64_t ka_probes;                   /* keepalive probes sent */
	uint64_t ka_timeouts;                 /* connections reset: keepalive unanswered */
};

/*
 * A connection's engine state.  Laid out for the cache: f and the fields
 * after it up to st.slow_path are what an established connection reads or
 * writes per segment (the fast path, the output path, the timers' check),
 * five cache lines from a line boundary; everything after them is touched
 * only at set-up, on loss, on ECN marks, at the persist/TIME_WAIT/
 * challenge-ACK edges, or when a statistic changes (st_new).  With
 * thousands of connections each request's lines come from L2 or beyond,
 * so every hot field out there is one more miss (docs/benchmarks.md,
 * "Cache lines per request").
 */
struct ss_tcp_conn {
	struct ss_tcp_flow f; /* hot: first, so it fills the first two cache lines */

	/* hot: per segment, after f */
	uint32_t iss;           /* stream position 0 is iss + 1 (tcp_data_end()) */
	uint32_t ts_offset;     /* random per-connection offset for TSval (RFC 7323 §5.4) */
	uint32_t rx_new;        /* bytes added since events were last cleared */
	uint32_t tx_acked;      /* bytes acknowledged since events were last cleared */
	uint32_t last_ack_sent; /* rcv_nxt carried by our last ACK */
	uint32_t tx_budget;     /* payload bytes ss_tcp_output() may still send
				 * (SS_TCP_BUDGET_UNLIMITED: not paced); a segment
				 * may begin while it is above 0 */
	uint32_t last_rtt_us;   /* latest RTT sample (0: none yet) */
	uint32_t karn_end;      /* snd_max at the last retransmission ... */
	uint32_t max_snd_wnd;   /* largest window the peer offered (RFC 5961 §5.2) */
	uint32_t local_ip, remote_ip; /* host order */
	uint16_t local_port, remote_port;
	uint8_t karn;           /* ... not yet acknowledged: TSecr gives the RTT */
	uint8_t events;         /* SS_TCP_EV_*, cleared by the caller */
	uint8_t ack_pending;    /* SS_TCP_ACKP_* */
	uint8_t tlp_sent;       /* a probe is out since the last ACK advance */
	uint8_t retries;        /* consecutive RTO/SYN retransmissions */
	uint8_t ecn_ok;         /* ECN negotiated (RFC 3168 §6.1.1) */
	uint8_t ece_pending;    /* CE seen: ECE on our ACKs until the peer's CWR */
	uint8_t cwr_pending;    /* we reduced for ECE: CWR on the next new data */
	uint8_t ecn_dctcp;      /* echo CE per ACK (RFC 8257 §3.2), not until CWR */
	uint8_t cc_mode;        /* enum ss_tcp_cc_mode */
	uint8_t budget_hit;     /* the last ss_tcp_output() stopped at tx_budget */
	uint8_t st_new;         /* a count other than fast_path/slow_path changed
				 * since the caller last cleared this: it drains
				 * st only then (the common path changes none) */
	uint8_t txopt;          /* SS_TCP_TXO_*: what holds a small segment back
				 * (0: Nagle's algorithm, as Linux by default) */
	uint8_t ka_on;          /* SO_KEEPALIVE (ss_tcp_setopt()) */
	uint8_t ka_probes;      /* keepalive probes sent and not answered */
	uint8_t ka_cnt;         /* TCP_KEEPCNT; 0: the default (9) */
	uint32_t snd_sml;       /* end of the last segment sent smaller than the
				 * MSS (Minshall's variant of Nagle's algorithm) */
	uint32_t csum_base;     /* ss_tcp_csum_base(local_ip, remote_ip): each
				 * segment's checksum adds only its length */
	uint64_t rtt_start_us;        /* when rtt_seq was sent */
	uint64_t rto_deadline_us;     /* 0 = not armed; also used for SYN retries */
	uint64_t tlp_deadline_us;     /* tail loss probe, or RACK's reorder timeout
				       * when equal to rack_reo_us; before the
				       * RTO; 0 = none */
	uint64_t delack_deadline_us;  /* delayed ACK due; 0 = none */
	uint64_t persist_deadline_us; /* 0 = not armed */
	uint64_t tw_deadline_us;      /* TIME_WAIT / FIN_WAIT_2 expiry, or in the other
				       * states the keepalive timer (tcp_opts.c); 0 = none */
	uint64_t rcv_us;              /* when the latest segment arrived (keepalive) */
	struct ss_cc_counters cc;     /* free-running, for the control loop (cc.h) */
	uint32_t delack_hold_us;      /* params' delack_us, or a longer step while
				       * this connection holds its ACKs longer
				       * (the delayed-ACK rule above ss_tcp_output(),
				       * ss_tcp_delack_step()) */
	struct ss_tcp_ring rx, tx;
	const struct ss_tcp_params *params;
	ss_tcp_emit_fn emit;
	ss_tcp_seg_buf_fn seg_buf;   /* NULL: every segment through emit */
	ss_tcp_seg_send_fn seg_send;
	void *emit_arg;
	struct ss_tcp_conn_stats st; /* fast_path and slow_path (first) are hot */

	/* cold */
	uint32_t irs;
	uint32_t tso_max;       /* the most payload bytes of one segment the port
				 * cuts into MSS-sized ones (TSO); 0: none.  Read
				 * only with more than an MSS to send (bulk) */
	uint16_t peer_mss;
	uint8_t error;          /* errno for RESET/ERROR events, else 0 */
	uint8_t persist_backoff;
	uint8_t closed_by_app;  /* app closed: data arriving now gets RST (RFC 1122 §4.2.2.13) */
	uint8_t passive_open;   /* opened by ss_tcp_accept_syn(): a RST in SYN_RCVD
				 * closes without EV_RESET (RFC 9293 §3.10.7.4) */
	uint8_t syn_opts;       /* SS_TCP_OPTF_* the peer's SYN carried (echoed on SYN-ACK) */
	struct ss_tcp_ooo ooo[SS_TCP_OOO_MAX]; /* sorted; ooo[0] mirrored in f.ooo_* */
	uint8_t ooo_n;
	uint8_t ooo_hist_n;
	uint32_t ooo_hist[SS_TCP_MAX_SACK_BLOCKS]; /* where the latest out-of-order
				 * segments began, newest first, one per interval:
				 * the SACK blocks to repeat (RFC 2018 §4) */
	uint32_t ooo_rot;       /* SACK rotation: the next interval reported from
				 * the rotating slot starts at or after this */
	uint32_t sack_high;     /* highest sequence the peer's SACK blocks reported */
	uint32_t sacked;        /* bytes the scoreboard holds */
	uint32_t sack_delta;    /* bytes the latest segment's blocks added to it */
	uint8_t sackb_n;
	uint8_t rxt_n;
	uint8_t rec_rto;        /* this recovery episode began with a timeout */
	uint8_t rescue_sent;    /* RFC 6675 §5 NextSeg rule 4 used this episode */
	/* Loss recovery (tcp_recovery.c), valid while SS_TCPF_IN_RECOVERY. */
	uint32_t lost_to;       /* unSACKed data below this is lost whatever
				 * IsLost says: the first segment at entry
				 * (RFC 6675 §5 step 4.3), the segment after a
				 * partial ACK, everything after a timeout */
	uint32_t prr_delivered; /* RFC 6937 §3: bytes delivered in recovery */
	uint32_t prr_out;       /* ... and sent in recovery */
	uint32_t recover_fs;    /* ... RecoverFS, the flight at entry */
	uint32_t rec_una;       /* snd_una and sacked at the last ACK taken */
	uint32_t rec_sacked;    /* in recovery (DeliveredData, RFC 6937 §3) */
	uint32_t rxt_order;     /* segments resent in recovery so far */
	uint32_t rxt_delivered; /* highest order among the resends delivered */
	struct ss_tcp_sackb sackb[SS_TCP_SACKB_MAX]; /* scoreboard, above snd_una */
	struct ss_tcp_rxt rxt[SS_TCP_RXT_MAX];       /* resends in flight */
	/* RACK (tcp_rack.c, RFC 8985 §6), SACK connections only. */
	uint16_t xrec_head, xrec_n;   /* ring of transmit records */
	uint8_t rack_valid;     /* rack_ts/rack_end hold a delivered segment */
	uint32_t rack_ts;       /* RACK.xmit_ts: latest transmit time delivered */
	uint32_t rack_end;      /* RACK.end_seq: that segment's end */
	uint32_t rack_rtt_us;   /* RACK.rtt: its round trip */
	uint32_t rack_min_rtt_us; /* windowed minimum of RACK.rtt (0: none) */
	uint64_t rack_min_rtt_at; /* when that minimum was taken */
	uint32_t rack_lost_to;  /* unSACKed original data below this is lost */
	uint64_t rack_reo_us;   /* reorder timeout (§6.3) placed in
				 * tlp_deadline_us; 0: none */
	uint64_t rack_want_us;  /* the reorder deadline the latest detection
				 * asks for (0: none) */
	struct ss_tcp_xrec xrec[SS_TCP_XREC_MAX];
	uint32_t ecn_recover;         /* one ECE reduction per window (RFC 3168 §6.1.2) */
	uint32_t ce_bytes;            /* payload bytes received with CE */
	uint64_t last_challenge_us;
	uint32_t challenge_count;
	uint64_t last_oow_ack_us;     /* last ACK to a dataless unacceptable segment */
	bool oow_ack_sent;
	uint64_t delack_late_us;      /* with SS_TCP_ACKP_LATE: when the data the
				       * lone ACK answered arrived */
	uint64_t ka_probe_us;         /* when the latest keepalive probe went */
	uint16_t ka_idle_s;           /* TCP_KEEPIDLE; 0: the default (7200) */
	uint16_t ka_intvl_s;          /* TCP_KEEPINTVL; 0: the default (75) */
	uint16_t mss_clamp;           /* TCP_MAXSEG: our MSS at most this; 0: none */
};

/* The hold of delayed-ACK step @k (< SS_TCP_DELACK_STEPS): delack_us *
 * 4^k, at most delack_max_us; the last step is delack_max_us. */
static inline uint32_t ss_tcp_delack_step_us(const struct ss_tcp_params *p, unsigned k)
{
	uint64_t h = (uint64_t)p->delack_us << (2 * k);

	if (k == 0)
		return p->delack_us;
	if (k == SS_TCP_DELACK_STEPS - 1 || h > p->delack_max_us)
		return p->delack_max_us;
	return (uint32_t)h;
}

/* The shortest step whose hold is at least @hold_us (the last if none
 * is): the step of a connection's hold, the first where two are equal. */
static inline unsigned ss_tcp_delack_step(const struct ss_tcp_params *p, uint32_t hold_us)
{
	unsigned k = 0;

	while (k < SS_TCP_DELACK_STEPS - 1 && ss_tcp_delack_step_us(p, k) < hold_us)
		k++;
	return k;
}

/*
 * Initialise @c (CLOSED) for the given endpoints and rings, with the
 * caller's emit callback.  @iss from ss_tcp_isn(); @ts_offset random.
 * The rings must be empty, sizes powers of two between 4 KiB and 1 GiB.
 * Our window scale is the smallest shift that lets rx.size be advertised.
 */
void ss_tcp_conn_init(struct ss_tcp_conn *c, const struct ss_tcp_params *p,
		      uint32_t local_ip, uint16_t local_port, uint32_t remote_ip,
		      uint16_t remote_port, uint32_t iss, uint32_t ts_offset,
		      struct ss_tcp_ring rx, struct ss_tcp_ring tx,
		      ss_tcp_emit_fn emit, void *emit_arg);

/* Direct output for @c's usual segments (see ss_tcp_seg_buf_fn); NULL,
 * NULL: all through emit (as after ss_tcp_conn_init()). */
static inline void ss_tcp_conn_set_direct(struct ss_tcp_conn *c, ss_tcp_seg_buf_fn seg_buf,
					  ss_tcp_seg_send_fn seg_send)
{
	c->seg_buf = seg_buf;
	c->seg_send = seg_send;
}

/*
 * TCP segmentation offload for @c: new data goes out in segments of up to
 * @max payload bytes (rounded down to a multiple of the MSS, at least two
 * MSS to matter), which the port cuts into MSS-sized segments with the
 * same header but their own sequence numbers, IP ids and checksums, FIN
 * and PSH on the last.  Retransmissions, probes and a segment that
 * carries CWR stay one MSS; a paced flow's segment stays within its
 * budget.  0 (the default): every segment at most one MSS.
 */
static inline void ss_tcp_conn_set_tso(struct ss_tcp_conn *c, uint32_t max)
{
	c->tso_max = max;
}

/* Active open: CLOSED -> SYN_SENT, emits SYN with MSS, SACK_PERM, TS,
 * WSCALE.  Returns 0, or -1 if not CLOSED. */
int ss_tcp_connect(struct ss_tcp_conn *c, uint64_t now_us);

/* Passive open from a listener: @syn is a SYN (no ACK/RST) that the
 * caller matched to a listening port.  CLOSED -> SYN_RCVD, emits SYN-ACK
 * echoing the options the SYN offered (an option the peer did not send is
 * not used: peers without timestamps, window scale or SACK work).
 * Returns 0, or -1 if @c is not CLOSED or @syn is not a plain SYN. */
int ss_tcp_accept_syn(struct ss_tcp_conn *c, const struct ss_tcp *syn, uint64_t now_us);

/* Passive open from a SYN cookie (tcp_cookie.h): @syn is the peer's SYN and
 * @our_wscale the shift our SYN-ACK offered, as ss_tcp_cookie_syn_rebuild()
 * gives them, and @c was initialised with the cookie as its ISS.  CLOSED -> SYN_RCVD as ss_tcp_accept_syn() does, but
 * nothing is sent: the SYN-ACK went out before, and the caller passes the
 * ACK that returned the cookie to ss_tcp_input() next.  Returns 0, or -1
 * as ss_tcp_accept_syn() does. */
int ss_tcp_accept_cookie(struct ss_tcp_conn *c, const struct ss_tcp *syn, uint8_t our_wscale);

/*
 * Process one received segment (checksum already verified, addressed to
 * this connection's 4-tuple) at @now_us.  Updates state, copies payload,
 * sets events, and may emit segments (ACKs for out-of-order data, RSTs,
 * challenge ACKs, retransmissions of data found lost: on the third
 * duplicate ACK, by the SACK scoreboard or by RACK).  In-order
 * data only sets SS_TCPF_ACK_NOW: the caller calls ss_tcp_output() once
 * per connection per burst, so a burst gets one ACK.
 */
void ss_tcp_input(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us);

/*
 * Send what may be sent now: new data within min(cwnd, snd_wnd) in
 * segments of at most mss bytes, our FIN when queued and all data is out,
 * and a pure ACK if SS_TCPF_ACK_NOW is set and nothing else carried it.
 * Arms the RTO when data/FIN is outstanding, the persist timer when the
 * peer's window is zero and data waits.  A paced connection (tx_budget
 * not SS_TCP_BUDGET_UNLIMITED) sends data only while tx_budget is above
 * 0, spends it, and sets budget_hit when it stopped there with data the
 * windows would let go.  Returns segments emitted.
 *
 * The delayed ACK (params->delack_us > 0): in-order data of less than two
 * full segments is acknowledged by the next segment that goes (the
 * reply), or alone once the hold has passed: delack_us, or a longer step
 * (ss_tcp_delack_step_us()) for a connection whose replies come later
 * than that.  Never while data is held out of order: in-order data then
 * fills (part of) a gap and is acknowledged at once (RFC 5681 §4.2).  When a reply goes out after the ACK left alone with no data
 * arriving in between (SS_TCP_ACKP_LATE), and within delack_max_us of the
 * data it answers, the connection moves up to the shortest step of at
 * least one and a half times that delay (a server that answers in tens of
 * milliseconds under load: its ACKs now ride on the replies).  It goes
 * back to delack_us when the peer sends more data after a lone ACK before
 * any reply: the peer was waiting for the ACK (Nagle's algorithm, or a
 * one-way stream), and waited one hold once.
 */
unsigned ss_tcp_output(struct ss_tcp_conn *c, uint64_t now_us);

/*
 * ss_tcp_output_quiet - ss_tcp_output() for its most common case, cheaply:
 * an ESTABLISHED connection with nothing to send (no unsent data, no FIN,
 * no ACK due now) and no timer to arm, as after a request arrives and
 * before its reply is written.  Then it does what ss_tcp_output() would
 * (clears budget_hit, starts the delayed-ACK deadline) and returns true;
 * otherwise it changes nothing and returns false: call ss_tcp_output().
 */
bool ss_tcp_output_quiet(struct ss_tcp_conn *c, uint64_t now_us);

/* The application appended @n bytes to the transmit ring (tx_tail += n).
 * Returns 0, or -1 if @n exceeds the free space (tx.size - (tx_tail -
 * tx_head)) or the sending side is shut down / not open: nothing changes
 * then.  The caller then calls ss_tcp_output(). */
/* Free bytes in the transmit ring / bytes waiting in the receive ring. */
static inline uint32_t ss_tcp_tx_space(const struct ss_tcp_conn *c)
{
	return c->tx.size - (c->f.tx_tail - c->f.tx_head);
}

static inline uint32_t ss_tcp_rx_avail(const struct ss_tcp_conn *c)
{
	return c->f.rx_tail - c->f.rx_head;
}

/* The application wrote the next bytes to send from the transmit ring's
 * home byte (it may when all it sent was acknowledged: shm/abi.h
 * SS_CMDF_TX_HOME): the origin moves so that tx_tail is there.  Returns 0,
 * or -1 (nothing changes) if the ring still holds unacknowledged bytes. */
static inline int ss_tcp_tx_restart(struct ss_tcp_conn *c)
{
	if (c->f.tx_tail != c->f.tx_head)
		return -1;
	c->tx.origin = c->f.tx_tail - c->tx.home;
	return 0;
}

/* The connection moves to a larger transmit ring @tx (base, size, home;
 * shm/abi.h "Small rings that grow"), all it sent so far acknowledged:
 * the next bytes to send are at @tx's home byte.  Returns 0, or -1
 * (nothing changes) if unacknowledged bytes remain or @tx is smaller. */
static inline int ss_tcp_tx_grow(struct ss_tcp_conn *c, struct ss_tcp_ring tx)
{
	if (c->f.tx_tail != c->f.tx_head || tx.size < c->tx.size)
		return -1;
	tx.origin = c->f.tx_tail - tx.home;
	c->tx = tx;
	return 0;
}

/* Byte of ring @r where stream position @pos is. */
static inline uint32_t ss_tcp_ring_off(const struct ss_tcp_ring *r, uint32_t pos)
{
	return (pos - r->origin) & (r->size - 1);
}

/* Nothing unread and nothing out of order: the receive ring's origin moves
 * with the next in-order byte, which goes to the home byte (rx_in_order()). */
static inline bool ss_tcp_rx_restarts(const struct ss_tcp_conn *c)
{
	return c->f.rx_head == c->f.rx_tail && !c->f.ooo_len;
}

/* The connection moves to a larger receive ring @rx (base, size, home)
 * while nothing is unread and nothing held out of order: the next
 * in-order byte goes to @rx's home byte, and an ACK offers the larger
 * window at once.  Returns 0, or -1 (nothing changes) if the ring is not
 * empty or @rx is smaller.  The window scale was chosen for it at the
 * start (ss_tcp_conn_rx_room()), else the window offered stops at 64 KiB
 * times the scale. */
int ss_tcp_rx_grow(struct ss_tcp_conn *c, struct ss_tcp_ring rx);

/* Before the handshake: the receive ring may grow to @max bytes, and the
 * window scale we offer lets all of it be offered (ss_tcp_conn_init()
 * sets it for the ring it is given). */
void ss_tcp_conn_rx_room(struct ss_tcp_conn *c, uint32_t max);

/*
 * Prefetch of the receive ring's line the next in-order byte goes to (the
 * home byte when nothing is unread or out of order, as rx_in_order()
 * moves the origin), issued a few segments before its turn so that with
 * thousands of connections the line (and its page walk) is on its way.
 * always_inline: gcc finds a function whose only statement is a
 * __builtin_prefetch() const and deletes the calls to it as dead code
 * (gcc 12 -O2: no prefetch instruction was left of such helpers).
 */
static inline __attribute__((always_inline)) void ss_tcp_rx_prefetch(const struct ss_tcp_conn *c)
{
	uint32_t off = ss_tcp_rx_restarts(c) ? c->rx.home : ss_tcp_ring_off(&c->rx, c->f.rx_tail);

	/* As an integer: a connection without rings yet has base NULL, and
	 * NULL + off is undefined where a prefetch of it is harmless. */
	__builtin_prefetch((const void *)((uintptr_t)c->rx.base + off), 1, 3);
}

/* Byte of the receive ring where stream position @pos is. */
static inline uint32_t ss_tcp_rx_offset(const struct ss_tcp_conn *c, uint32_t pos)
{
	return ss_tcp_ring_off(&c->rx, pos);
}

/* Inline: the per-reply command's part (stack_app.c). */
static inline int ss_tcp_send(struct ss_tcp_conn *c, uint32_t n)
{
	uint8_t st = c->f.state;

	if (c->f.flags & SS_TCPF_FIN_QUEUED)
		return -1;
	/* Data queued before the handshake completes goes out once it does. */
	if (st != SS_TCPS_ESTABLISHED && st != SS_TCPS_CLOSE_WAIT &&
	    st != SS_TCPS_SYN_SENT && st != SS_TCPS_SYN_RCVD)
		return -1;
	if (n > ss_tcp_tx_space(c))
		return -1;
	c->f.tx_tail += n;
	return 0;
}

/* The application consumed @n bytes of the receive ring (rx_head += n).
 * Returns 0, or -1 if @n exceeds what is there.  Sets SS_TCPF_ACK_NOW
 * when the window opens by at least 2*MSS or half the ring from what we
 * last advertised (RFC 9293 §3.8.6.2.2 receiver SWS avoidance). */
static inline int ss_tcp_recv_done(struct ss_tcp_conn *c, uint32_t n)
{
	struct ss_tcp_flow *f = &c->f;

	if (n > f->rx_tail - f->rx_head)
		return -1;
	f->rx_head += n;
	/* RFC 9293 §3.8.6.2.2: announce the larger window only when the right
	 * edge moves by min(2 * MSS, half the ring), so we do not invite silly
	 * small segments. */
	uint32_t edge = f->rcv_nxt + (c->rx.size - (f->rx_tail - f->rx_head));
	uint32_t thresh = 2u * f->mss < c->rx.size / 2 ? 2u * f->mss : c->rx.size / 2;

	if (n && (int32_t)(edge - (f->rcv_adv + thresh)) >= 0 &&
	    (f->state == SS_TCPS_ESTABLISHED || f->state == SS_TCPS_FIN_WAIT_1 ||
	     f->state == SS_TCPS_FIN_WAIT_2))
		f->flags |= SS_TCPF_ACK_NOW;
	return 0;
}

/* Bytes of the transmit ring not sent yet (from snd_nxt: after a
 * go-back-N rewind, the ones to send again too); with none, in loss
 * recovery, the lost bytes not yet resent (ss_tcp_resend_pending()). */
uint32_t ss_tcp_resend_pending(const struct ss_tcp_conn *c);

static inline uint32_t ss_tcp_tx_unsent(const struct ss_tcp_conn *c)
{
	uint32_t end = c->iss + 1 + c->f.tx_tail; /* sequence number after the data */
	uint32_t n = (int32_t)(end - c->f.snd_nxt) > 0 ? end - c->f.snd_nxt : 0;

	/* In loss recovery, lost data not yet resent waits too. */
	if (__builtin_expect(!n && (c->f.flags & SS_TCPF_IN_RECOVERY), 0))
		return ss_tcp_resend_pending(c);
	return n;
}


/* Shut down sending: queue a FIN after the data already queued.  The
 * state changes at once as RFC 9293 §3.10.4 says (ESTABLISHED ->
 * FIN_WAIT_1, CLOSE_WAIT -> LAST_ACK; the FIN itself leaves with or after
 * the last queued byte); SYN_RCVD -> FIN_WAIT_1 when the handshake
 * completes; SYN_SENT -> CLOSED.  Idempotent.  Call ss_tcp_output() after. */
void ss_tcp_shutdown(struct ss_tcp_conn *c, uint64_t now_us);

/* close(): shutdown plus "the application no longer reads": data arriving
 * after this is answered with RST and the connection is aborted (RFC 1122
 * §4.2.2.13), and so is unread data still in the receive ring. */
void ss_tcp_close(struct ss_tcp_conn *c, uint64_t now_us);

/* Abort: emit RST (in synchronized states) and go to CLOSED. */
void ss_tcp_abort(struct ss_tcp_conn *c, uint64_t now_us);

/* The caller takes the rings back (the application let the connection
 * go): what they held is forgotten (unread and out-of-order data, the
 * transmit queue — empty by then in every state that allows it) and
 * @spare, at least 4 KiB, stands in for both from now on; the engine
 * writes nothing into it (data after close is answered with RST). */
void ss_tcp_rings_release(struct ss_tcp_conn *c, struct ss_tcp_ring spare);
/* Bytes of the transmit ring not yet acknowledged (sent or not). */
uint32_t ss_tcp_tx_queued(const struct ss_tcp_conn *c);
/* ss_tcp_orphan - the application went away after ss_tcp_close() and the
 * connection goes on without it, as Linux's orphaned sockets do: the
 * unacknowledged bytes move to @tx (a power of two of at least 4 KiB and
 * at least ss_tcp_tx_queued() bytes; positions stay), and @spare, at least
 * 4 KiB, stands in for the receive ring (nothing is written into it after
 * close).  Returns 0, or -1 (nothing changed) if @tx is too small or the
 * connection was not closed. */
int ss_tcp_orphan(struct ss_tcp_conn *c, struct ss_tcp_ring tx, struct ss_tcp_ring spare);
/* ss_tcp_rings_move - the connection's payload moves to rings @rx and @tx
 * of the same sizes or larger (another process adopted it; shm/abi.h
 * "Small rings that grow"): contents are copied, positions stay, and the
 * new rings start with origin 0 (the bytes are rotated into place, so the
 * adopter maps position p to p & (size - 1)).  Returns 0, or -1 (nothing
 * changed) if a ring is smaller than the connection's. */
int ss_tcp_rings_move(struct ss_tcp_conn *c, struct ss_tcp_ring rx, struct ss_tcp_ring tx);

/*
 * Congestion control by the caller: @mode (enum ss_tcp_cc_mode) and, for
 * WINDOW and RATE, the window in bytes (at least one MSS is kept).  ENGINE
 * hands the window back to the engine's NewReno from the given value.
 * @ecn_dctcp: echo CE on exactly the ACKs of CE-marked data, as DCTCP
 * senders want (RFC 8257 §3.2), instead of until CWR (RFC 3168).
 */
void ss_tcp_cc_set(struct ss_tcp_conn *c, uint8_t mode, uint32_t cwnd, bool ecn_dctcp);

/* Earliest armed timer deadline (RTO, tail loss probe or RACK reorder
 * timeout, persist, TIME_WAIT, FIN_WAIT_2, delayed ACK), or 0 when none
 * is armed. */
uint64_t ss_tcp_next_deadline(const struct ss_tcp_conn *c);
/* The same without the delayed ACK, for callers that keep conn->
 * delack_deadline_us apart (it is always set to now + delack_us, so a
 * FIFO keeps those in order). */
static inline uint64_t ss_tcp_next_deadline_no_delack(const struct ss_tcp_conn *c)
{
	/* 0 is "none": minus one makes it the largest, and the minimum plus
	 * one is 0 again when all are none.  A probe only matters while the
	 * retransmission timer runs. */
	uint64_t r = c->rto_deadline_us - 1, p = c->persist_deadline_us - 1;
	uint64_t t = c->tw_deadline_us - 1, l = (c->rto_deadline_us ? c->tlp_deadline_us : 0) - 1;
	uint64_t m = r < p ? r : p;

	m = m < t ? m : t;
	return (m < l ? m : l) + 1;
}

/* Run the timers due at @now_us: RTO retransmission (go-back-N from
 * snd_una, cwnd to one segment, RFC 6298 §5.5 backoff; after max_retries,
 * or syn_retries for SYN/SYN-ACK, ETIMEDOUT + CLOSED), the tail loss
 * probe or RACK's reorder timeout (RFC 8985 §7, §6.3), persist probes,
 * TIME_WAIT and FIN_WAIT_2 expiry.  Safe to call early: timers not yet due
 * do nothing. */
void ss_tcp_timer(struct ss_tcp_conn *c, uint64_t now_us);

/*
 * Socket options of one connection (tcp_opts.c), as Linux takes them:
 *   NODELAY, CORK: on when @val != 0 (taking CORK off, or putting NODELAY
 *     on, sends what waits at the next ss_tcp_output());
 *   KEEPALIVE: on when @val != 0; from then a probe (<SEQ=SND.UNA-1><ACK>,
 *     no data) after KEEPIDLE seconds without a segment from the peer,
 *     then every KEEPINTVL seconds; KEEPCNT probes unanswered: RST, and
 *     the connection drops with ETIMEDOUT (SS_TCP_EV_ERROR);
 *   KEEPIDLE, KEEPINTVL: 1..32767 s; KEEPCNT: 1..127;
 *   MAXSEG: 0 (none) or 88..32767: the MSS we announce and use at most,
 *     from the next SYN or SYN-ACK on.
 * Returns 0, or -1 (nothing changes) for an unknown option or a value out
 * of range.  The caller calls ss_tcp_output() after.
 */
enum ss_tcp_opt {
	SS_TCP_OPT_NODELAY = 1,
	SS_TCP_OPT_CORK,
	SS_TCP_OPT_KEEPALIVE,
	SS_TCP_OPT_KEEPIDLE,
	SS_TCP_OPT_KEEPINTVL,
	SS_TCP_OPT_KEEPCNT,
	SS_TCP_OPT_MAXSEG,
	SS_TCP_OPT_MAX
};

int ss_tcp_setopt(struct ss_tcp_conn *c, unsigned opt, uint32_t val, uint64_t now_us);

/* MSG_MORE: @more on a send holds a small last segment as TCP_CORK does;
 * a send without it lets it go as usual. */
static inline void ss_tcp_set_more(struct ss_tcp_conn *c, bool more)
{
	if (more)
		c->txopt |= SS_TCP_TXO_MORE;
	else
		c->txopt &= (uint8_t)~SS_TCP_TXO_MORE;
}

/* The MSS we announce: the service's, or the connection's TCP_MAXSEG. */
static inline uint16_t ss_tcp_mss_ours(const struct ss_tcp_conn *c)
{
	uint16_t m = c->params->mss;

	return c->mss_clamp && c->mss_clamp < m ? c->mss_clamp : m;
}

/* RFC 6528 ISN: keyed hash of the 4-tuple plus a 4-microsecond clock. */
uint32_t ss_tcp_isn(const uint8_t secret[16], uint32_t local_ip, uint16_t local_port,
		    uint32_t remote_ip, uint16_t remote_port, uint64_t now_us);

/* RFC 9293 §3.10.7.1: fill @rst with the reset answering @in (a segment
 * for no connection, or one a closed connection cannot take): ports
 * swapped; if @in has ACK then <SEQ=SEG.ACK><CTL=RST>, else
 * <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.  No options.  Returns false
 * (and fills nothing) if @in is itself a RST: a RST is never answered. */
bool ss_tcp_rst_reply(const struct ss_tcp *in, struct ss_tcp *rst);

/* Copy @len bytes from / to ring position @pos (wrapping; origin applied).
 * Inline: one of each per request on the fast path. */
static inline void ss_tcp_ring_copy_out(const struct ss_tcp_ring *r, uint32_t pos, void *dst,
					uint32_t len)
{
	uint32_t off = ss_tcp_ring_off(r, pos);
	uint32_t first = r->size - off < len ? r->size - off : len;

	memcpy(dst, r->base + off, first);
	if (len > first) /* wraps */
		memcpy((uint8_t *)dst + first, r->base, len - first);
}

static inline void ss_tcp_ring_copy_in(const struct ss_tcp_ring *r, uint32_t pos, const void *src,
				       uint32_t len)
{
	uint32_t off = ss_tcp_ring_off(r, pos);
	uint32_t first = r->size - off < len ? r->size - off : len;

	memcpy(r->base + off, src, first);
	if (len > first) /* wraps */
		memcpy(r->base, (const uint8_t *)src + first, len - first);
}

#endif /* SS_TCP_TCP_H */
