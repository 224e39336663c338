/* cc.h - congestion control: one interface for every algorithm, pure per-interval control laws. */
#ifndef SS_CC_CC_H
#define SS_CC_CC_H

/*
 * The control loop runs once per control interval per active flow (TAS
 * §3.2), on the fast-path thread that owns the flow, out of line from the
 * per-packet work (src/stack/stack_cc.c): it reads the flow's counters,
 * turns them into a struct ss_cc_sample (deltas over the interval, see
 * ss_cc_sample_fill()), calls the flow's algorithm, and applies the
 * struct ss_cc_out it returns (a rate or a window), which the same thread
 * enforces on every send (rates through the pacer, pacer.h; windows as a
 * limit on the bytes in flight).
 *
 * Everything here is pure: no clock, no I/O, no allocation, no globals
 * written.  The same state, parameters and samples give the same outputs
 * on every run: integer arithmetic only.  Fractions are in parts per
 * million (SS_CC_PPM == 1.0), rates in bytes per second, windows in bytes,
 * times in microseconds.
 *
 * Algorithms (one file each):
 *   "dctcp-rate"  dctcp_rate.c  DCTCP on rates, as in TAS (first in the table)
 *   "dctcp-win"   dctcp_win.c   DCTCP on windows, RFC 8257
 *   "timely"      timely.c      TIMELY (Mittal et al., SIGCOMM'15) plus slow start
 *   "cubic"       cubic.c       CUBIC, RFC 9438
 *   "newreno"     newreno.c     NewReno, RFC 5681 + RFC 6582 (+ RFC 3168 ECN)
 *   "bbr"         bbr.c         BBR v1 (Cardwell et al., ACM Queue 2016) on
 *                               per-interval samples: ignores random loss
 *
 * The service's default is none of these alone but "auto"
 * (src/stack/cc_policy.h): cubic, moving to bbr or dctcp-win per flow.
 *
 * Not thread-safe by design and not needing to be: one flow's state is
 * only touched by the fast-path thread that owns the flow.
 */

#include <stdbool.h>
#include <stdint.h>

#define SS_CC_PPM 1000000u /* 1.0 in parts per million */

/* Ceiling for any rate (bytes/s) the algorithms compute or accept: 2^40
 * B/s is about 8.8 Tbit/s; keeps rate * ppm products inside 64 bits. */
#define SS_CC_RATE_LIMIT (UINT64_C(1) << 40)

/*
 * What happened on one flow during one control interval.  All byte and
 * event counts are deltas over the interval.
 */
struct ss_cc_sample {
	uint32_t interval_us; /* length of this interval (time since the previous call) */
	uint64_t acked_bytes; /* bytes newly acknowledged (snd_una advance) */
	uint64_t ecn_bytes;   /* of those, bytes acknowledged by ACKs carrying ECE:
			       * the peer saw CE on them (DCTCP's marked bytes) */
	uint64_t sent_bytes;  /* bytes transmitted, new and retransmitted: the
			       * measured send rate is sent_bytes / interval_us */
	uint32_t fast_retx;   /* fast retransmits (loss recovery episodes entered) */
	uint32_t timeouts;    /* retransmission timeouts that fired */
	uint32_t rate_limited; /* times its pacer budget held it back with data
				* to send: it used its rate */
	uint32_t win_limited; /* times its own window did (the peer's does not count) */
	uint32_t srtt_us;     /* smoothed RTT, RFC 6298 (0: no sample yet) */
	uint32_t rtt_us;      /* latest RTT sample of the interval (0: none) */
	uint32_t inflight;    /* bytes outstanding at the end of the interval */
	uint32_t unsent;      /* bytes written and not yet sent at its end (the
			       * caller's; ss_cc_sample_fill() sets 0) */
	uint32_t mss;         /* sender MSS, bytes (> 0) */
	uint64_t path_rate;   /* mean paced rate of the flows to the same host
			       * (B/s, 0: unknown); set by the caller */
};

/* Output flags. */
#define SS_CC_OUT_RATE 0x01       /* rate_bps is valid: pace the flow at it */
#define SS_CC_OUT_WINDOW 0x02     /* cwnd is valid: keep the flight within it */
#define SS_CC_OUT_SLOW_START 0x04 /* the algorithm is in slow start */
#define SS_CC_OUT_REDUCED 0x08    /* this interval decreased rate or window */
#define SS_CC_OUT_HELD 0x10       /* no feedback this interval: left unchanged
				   * (except for the send-rate cap) */
#define SS_CC_OUT_CAPPED 0x20     /* the rate was cut to the send-rate cap */

/* Decision for the fast path.  Exactly one of OUT_RATE / OUT_WINDOW is set. */
struct ss_cc_out {
	uint64_t rate_bps; /* bytes per second (OUT_RATE) */
	uint32_t cwnd;     /* bytes (OUT_WINDOW) */
	uint32_t flags;    /* SS_CC_OUT_* */
};

/*
 * Parameters, one struct per algorithm, fixed per service (or per
 * application).  ss_cc_params_default() fills the defaults given in the
 * comments; ss_cc_params_check() says whether a set is usable.
 */
struct ss_cc_dctcp_rate_params {
	uint64_t init_rate;     /* 1250000 B/s (10 Mbit/s): rate of a new flow */
	uint64_t min_rate;      /* 125000 B/s (1 Mbit/s): floor */
	uint64_t max_rate;      /* 12500000000 B/s (100 Gbit/s): ceiling */
	uint64_t step;          /* 1250000 B/s (10 Mbit/s): additive increase (TAS) */
	uint32_t g_ppm;         /* 62500 (1/16): DCTCP EWMA gain g (RFC 8257 §4.2) */
	uint32_t alpha_init_ppm; /* 1000000: alpha of a new flow (RFC 8257 §3.3) */
	uint32_t loss_md_ppm;   /* 500000: fraction cut on loss or timeout */
	uint32_t cap_ppm;       /* 1200000: rate <= 1.2 x the measured send rate
				 * (TAS §3.2); 0 disables the cap */
	uint8_t host_per_rtt;   /* 1: a shared host (share.c) reacts at most once
				 * per RTT of data, with alpha over that window,
				 * and cuts from the rate delivered; 0: once per
				 * run, from R */
};

struct ss_cc_dctcp_win_params {
	uint32_t g_ppm;          /* 62500 (1/16), RFC 8257 §4.2 */
	uint32_t alpha_init_ppm; /* 1000000, RFC 8257 §3.3 */
	uint32_t max_cwnd;       /* 1073741824 bytes (1 GiB) */
};

struct ss_cc_timely_params {
	uint64_t init_rate;  /* 1250000 B/s (10 Mbit/s) */
	uint64_t min_rate;   /* 125000 B/s */
	uint64_t max_rate;   /* 12500000000 B/s */
	uint64_t delta;      /* 1250000 B/s (10 Mbit/s): additive step δ */
	uint32_t t_low_us;   /* 50: below it, increase whatever the gradient */
	uint32_t t_high_us;  /* 500: above it, decrease whatever the gradient */
	uint32_t min_rtt_us; /* 0: normalise the gradient by the flow's smallest
			      * RTT sample; else by this constant (the paper's
			      * minRTT, 20 us in its network) */
	uint32_t ewma_ppm;   /* 875000: weight α of the newest RTT difference */
	uint32_t beta_ppm;   /* 800000: multiplicative decrease β */
	uint32_t hai_thresh; /* 5: negative gradients in a row before HAI */
	uint32_t hai_mult;   /* 5: HAI step multiplier N */
	uint32_t loss_md_ppm; /* 500000: fraction cut on loss or timeout */
	uint32_t cap_ppm;    /* 1200000: send-rate cap, as for dctcp-rate; 0 off */
};

struct ss_cc_cubic_params {
	uint32_t c_ppm;     /* 400000: C = 0.4 segments/s^3 (RFC 9438 §5) */
	uint32_t beta_ppm;  /* 700000: β_cubic = 0.7 (RFC 9438 §4.6) */
	uint8_t fast_convergence; /* 1: RFC 9438 §4.7 */
	uint32_t max_cwnd;  /* 1073741824 bytes */
};

struct ss_cc_newreno_params {
	uint32_t max_cwnd; /* 1073741824 bytes */
	uint8_t ecn;       /* 1: treat ECE as congestion (RFC 3168 §6.1.2) */
};

struct ss_cc_bbr_params {
	uint64_t init_rate; /* 1250000 B/s (10 Mbit/s): rate of a new flow until
			     * it has an RTT (then one initial window per RTT) */
	uint64_t min_rate;  /* 125000 B/s (1 Mbit/s): floor */
	uint64_t max_rate;  /* 12500000000 B/s (100 Gbit/s): ceiling */
};

struct ss_cc_params {
	struct ss_cc_dctcp_rate_params dctcp_rate;
	struct ss_cc_dctcp_win_params dctcp_win;
	struct ss_cc_timely_params timely;
	struct ss_cc_cubic_params cubic;
	struct ss_cc_newreno_params newreno;
	struct ss_cc_bbr_params bbr;
	/* Control interval (default 2 RTT), ss_cc_interval_us(). */
	uint32_t interval_rtts;  /* 2 */
	uint32_t interval_min_us; /* 50: never shorter than this */
	uint32_t interval_init_us; /* 1000: while the flow has no RTT sample */
};

void ss_cc_params_default(struct ss_cc_params *p);

/* 0 if @p is usable, else -EINVAL (a zero or out-of-order rate bound, a
 * fraction above 1 where it must not be, C out of [0.001, 10], ...). */
int ss_cc_params_check(const struct ss_cc_params *p);

/*
 * Per-flow algorithm state, fixed size, embedded in the service's
 * per-connection record.  Opaque to callers: only the algorithm that initialised it
 * reads it.  (The members are visible so it can be embedded and so the
 * unit tests can check the control laws' internals.)
 */
struct ss_cc_dctcp_rate {
	uint64_t rate;      /* B/s */
	uint32_t alpha;     /* ppm */
	uint8_t slow_start;
	uint8_t loss_mode;  /* the path signals by loss, not marks: Reno's increase */
};

struct ss_cc_dctcp_win {
	uint32_t cwnd, ssthresh;
	uint32_t ca_acc;    /* bytes acked toward the next +1 MSS (RFC 3465) */
	uint32_t alpha;     /* ppm */
};

struct ss_cc_timely {
	uint64_t rate;        /* B/s */
	int64_t rtt_diff_ns;  /* EWMA of RTT differences, ns */
	uint32_t prev_rtt_us; /* previous sample (0: none yet) */
	uint32_t min_rtt_us;  /* smallest sample seen (0: none yet) */
	uint32_t neg_count;   /* negative (or zero) gradients in a row */
	uint8_t slow_start;
};

struct ss_cc_cubic {
	uint64_t t_us;        /* time since the congestion avoidance epoch began */
	uint64_t k_us;        /* K, RFC 9438 §4.2 eq. 2 */
	uint32_t cwnd, ssthresh;
	uint32_t w_max;       /* RFC 9438 W_max, bytes */
	uint32_t cwnd_prior;  /* cwnd before the last reduction */
	uint32_t cwnd_epoch;  /* cwnd when the epoch began */
	uint32_t w_est;       /* Reno-friendly estimate, RFC 9438 §4.3, bytes */
	uint8_t in_epoch;     /* t_us/k_us/cwnd_epoch/w_est are valid */
	uint8_t after_rto;    /* next epoch: W_max = cwnd_epoch, K = 0 (§4.8) */
};

struct ss_cc_newreno {
	uint32_t cwnd, ssthresh;
	uint32_t ca_acc;
};

/* BBR's modes (bbr.c). */
#define SS_CC_BBR_STARTUP 0
#define SS_CC_BBR_DRAIN 1
#define SS_CC_BBR_PROBE_BW 2
#define SS_CC_BBR_BW_SLOTS 8 /* delivery-rate samples kept: one gain cycle */

struct ss_cc_bbr {
	uint64_t rate;        /* B/s: the last output */
	/* Delivery rates of the last SS_CC_BBR_BW_SLOTS intervals that count
	 * (not application-limited, or above the estimate), in units of
	 * 1000 B/s (kB/s: 32 bits hold 4.3e12 B/s, above SS_CC_RATE_LIMIT),
	 * a ring; 0: empty.  BtlBw is their maximum. */
	uint32_t bw[SS_CC_BBR_BW_SLOTS];
	uint32_t min_rtt_us;  /* smallest RTT in the window (0: none yet) */
	uint32_t min_rtt_age_us; /* time since it was taken (saturating) */
	uint32_t full_bw;     /* STARTUP: BtlBw at the last 25 % growth, kB/s */
	uint8_t mode;         /* SS_CC_BBR_* */
	uint8_t bw_next;      /* ring slot the next sample goes to */
	uint8_t full_bw_cnt;  /* STARTUP: intervals without 25 % growth;
			       * DRAIN: intervals spent draining */
	uint8_t cycle;        /* PROBE_BW: phase of the gain cycle, 0..7 */
};

union ss_cc_state {
	struct ss_cc_dctcp_rate dctcp_rate;
	struct ss_cc_dctcp_win dctcp_win;
	struct ss_cc_timely timely;
	struct ss_cc_cubic cubic;
	struct ss_cc_newreno newreno;
	struct ss_cc_bbr bbr;
	uint64_t align_;
};

_Static_assert(sizeof(union ss_cc_state) <= 64, "per-flow CC state fits one cache line");

/*
 * An algorithm.  Both functions fill *@out completely (flags included).
 *
 * init: start a new flow with sender MSS @mss (> 0): the initial rate or
 *   window (RFC 6928 IW for the window algorithms).
 * on_interval: one control interval's feedback @s (s->mss > 0); updates
 *   @st and returns the new rate or window.
 */
struct ss_cc_ops {
	const char *name;
	bool rate_based; /* outputs rates (else windows) */
	bool ecn_per_ack; /* measures marked bytes: the receiver echoes CE per ACK
			   * (RFC 8257 §3.2), not until CWR (RFC 3168) */
	void (*init)(union ss_cc_state *st, const struct ss_cc_params *p, uint32_t mss,
		     struct ss_cc_out *out);
	void (*on_interval)(union ss_cc_state *st, const struct ss_cc_params *p,
			    const struct ss_cc_sample *s, struct ss_cc_out *out);
};

extern const struct ss_cc_ops ss_cc_dctcp_rate_ops;
extern const struct ss_cc_ops ss_cc_dctcp_win_ops;
extern const struct ss_cc_ops ss_cc_timely_ops;
extern const struct ss_cc_ops ss_cc_cubic_ops;
extern const struct ss_cc_ops ss_cc_newreno_ops;
extern const struct ss_cc_ops ss_cc_bbr_ops;

/*
 * ss_cc_dctcp_win_adopt - dctcp-win takes over a flow another algorithm
 * ran until now, whose window is @cwnd bytes (at least 2 @mss are kept):
 * it goes on from there in congestion avoidance, with the initial alpha
 * (RFC 8257 §3.3), so the first marks cut as a loss would.  The service's
 * "auto" choice moves a flow to it once its path marks CE.
 */
void ss_cc_dctcp_win_adopt(union ss_cc_state *st, const struct ss_cc_params *p, uint32_t mss,
			   uint32_t cwnd, struct ss_cc_out *out);

/*
 * ss_cc_bbr_adopt - bbr takes over a flow another algorithm ran until now,
 * whose window is @cwnd bytes at a smoothed RTT of @srtt_us (0: unknown):
 * STARTUP from a rate of @cwnd per @srtt_us (init_rate without an RTT),
 * within min_rate and max_rate.  The service's "auto" choice moves a bulk
 * flow to it (cc_policy.h).
 */
void ss_cc_bbr_adopt(union ss_cc_state *st, const struct ss_cc_params *p, uint32_t mss,
		     uint32_t cwnd, uint32_t srtt_us, struct ss_cc_out *out);

/* The algorithm called @name ("dctcp-rate", ...), or NULL. */
const struct ss_cc_ops *ss_cc_find(const char *name);

/* The table's first algorithm, dctcp-rate (TAS); the service's default
 * policy is "auto" (src/stack/cc_policy.h). */
const struct ss_cc_ops *ss_cc_default(void);

/* The @i-th algorithm (0-based), or NULL past the last: for listings. */
const struct ss_cc_ops *ss_cc_at(unsigned i);

/*
 * Length of the next control interval for a flow with smoothed RTT
 * @srtt_us: interval_rtts * srtt, at least interval_min_us; while there is
 * no sample (@srtt_us == 0), interval_init_us.
 */
uint32_t ss_cc_interval_us(const struct ss_cc_params *p, uint32_t srtt_us);

/*
 * The free-running per-flow counters the fast path keeps for the control
 * loop (32-bit, wrapping: the control loop reads them at least once per
 * interval, long before 4 GiB can pass).
 */
struct ss_cc_counters {
	uint32_t acked_bytes; /* += bytes by which an ACK advanced snd_una */
	uint32_t ecn_bytes;   /* += the same, when that ACK carried ECE */
	uint32_t sent_bytes;  /* += payload bytes of every data segment sent */
	uint32_t fast_retx;   /* += 1 per fast retransmit (recovery entered) */
	uint32_t timeouts;    /* += 1 per RTO expiry */
	uint32_t rate_limited; /* += 1 per output stopped by the pacer's budget
				* with data to send */
	uint32_t win_limited; /* += 1 per output stopped by cwnd with data to send */
};

/*
 * Fill @s with the deltas from @prev to @cur (modulo 2^32) and the given
 * interval length, RTT estimate and sample, flight and MSS.  The caller
 * keeps @cur as the next @prev.
 */
void ss_cc_sample_fill(struct ss_cc_sample *s, const struct ss_cc_counters *prev,
		       const struct ss_cc_counters *cur, uint32_t interval_us,
		       uint32_t srtt_us, uint32_t rtt_us, uint32_t inflight, uint32_t mss);

/*
 * Host-shared congestion state (share.c; the Congestion Manager, RFC 3124,
 * and TCB ensemble sharing, RFC 9040): ONE dctcp-rate controller per remote
 * host instead of one per flow.  Each flow's interval end adds its sample
 * to the host's accumulator (ss_cc_host_add()); once per host interval the
 * caller runs the law on the aggregate (ss_cc_host_run()), which yields the
 * host rate R; every flow is then paced at its share (ss_cc_host_share()):
 * R split equally, with water-filling so that flows that did not use their
 * rate leave the rest to those that did.
 *
 * The aggregate emulates the flows it stands for, so that it is as
 * aggressive as n TCPs (n: the distinct flows that added in the interval):
 * additive increase n x step; ECN cut R *= 1 - alpha/2 with alpha from the
 * aggregate marked fraction; a loss cuts loss_md x (flows that saw a loss
 * / n), not the whole aggregate by loss_md; slow start grows by the
 * aggregate delivery rate (at most doubling); the send-rate cap applies to
 * the aggregate sent rate unless some flow was held back by its pacer.
 *
 * Pure as the rest of src/cc/: no clock (the caller decides when an
 * interval has elapsed), integer arithmetic, no allocation.  Cost per add
 * and per run: O(1).
 */
struct ss_cc_host {
	uint64_t rate;        /* R, B/s: the aggregate (0 before the first run) */
	uint64_t level;       /* water level: the share of a flow that uses it */
	uint32_t alpha;       /* ppm, of the aggregate */
	uint32_t epoch;       /* host intervals run, + 1 (a flow's 0: never added) */
	uint32_t n_last;      /* flows R was split among in the last run */
	uint8_t slow_start;
	uint8_t loss_mode;    /* unmarked loss: Reno's increase, as dctcp-rate */
	uint8_t fresh;        /* never run: the first run starts from the flows' rates */
	/* The interval being accumulated. */
	uint64_t acked, ecn, sent; /* bytes, summed over the flows' samples */
	uint64_t sample_us;   /* sum of the samples' interval lengths */
	uint64_t join_rate;   /* sum of the flows' paced rates (for the first run) */
	uint64_t small_sum;   /* demands of the flows below the level (water-filling) */
	uint32_t n, n_small, n_loss, n_mark, n_samples; /* n_mark: marks, no loss */
	uint32_t n_active;    /* flows with bytes acked, in flight or unsent (the others hold) */
	uint32_t rate_limited; /* samples in which the pacer held a flow back */
	uint32_t win_limited; /* samples in which its window held a flow back */
	uint32_t mss;         /* largest MSS seen */
	uint64_t run_us;      /* set by the caller before a run: time since the
			       * last run (0: the samples' mean length) */
	/* Once per RTT of data (host_per_rtt): the observation window. */
	uint64_t w_acked, w_ecn, w_us; /* this window so far */
	uint64_t d_acked, d_sample_us; /* the delivery measurement so far */
	uint64_t dlv_last, dlv_prev; /* the flows' mean delivery rate, B/s, over
				      * the last two measurements (0: none) */
	uint64_t l_acked, l_sample_us; /* the same over longer windows, so far */
	uint64_t ldlv_last, ldlv_prev; /* ... and its last two (the step's bound) */
	uint64_t hold_us;     /* no cut for this long more (one RTT after a cut) */
};

/* A flow's membership in its host's interval (embedded in the flow). */
struct ss_cc_share_flow {
	uint32_t epoch;  /* host epoch of its last sample (0: none) */
	uint8_t lost;    /* in that epoch: 2 counted in n_loss, 1 in n_mark */
	uint8_t active;  /* in that epoch: counted in n_active */
	uint64_t demand; /* > 0: it did not use its rate; counted in small_sum */
};

/* A host with no history: slow start, alpha_init, R set by the first run. */
void ss_cc_host_init(struct ss_cc_host *h, const struct ss_cc_params *p);

/* The same, for a host entry that is reused: its epochs go on from where
 * they were, so no flow that added to it before counts as a member. */
void ss_cc_host_restart(struct ss_cc_host *h, const struct ss_cc_params *p);

/* A flow joins (again): forget its membership of earlier epochs. */
static inline void ss_cc_share_flow_init(struct ss_cc_share_flow *f)
{
	f->epoch = 0;
	f->lost = 0;
	f->active = 0;
	f->demand = 0;
}

/*
 * Add one flow's interval @s to the host's current interval.  @flow_rate
 * is the rate the flow was paced at (counts toward R's start on a fresh
 * host).  A flow that adds again in the same host interval is counted
 * once in n; its bytes all count.
 */
void ss_cc_host_add(struct ss_cc_host *h, const struct ss_cc_params *p,
		    struct ss_cc_share_flow *f, const struct ss_cc_sample *s, uint64_t flow_rate);

/*
 * Run the control law once on what was added since the last run (nothing
 * added: R and the shares are kept, HELD), start a new interval, and
 * return the decision for R in *@out (OUT_RATE, rate_bps = R, REDUCED,
 * SLOW_START, CAPPED, HELD as for one flow).  @srtt_us: the host's RTT
 * (for the Reno increase after unmarked loss).  @flow_iv_us: the control
 * interval one flow at the share would have (0: the host's own): the
 * host runs more often than that, as its interval holds 4 segments of R,
 * not of the share, and each flow's step is scaled to the run's length,
 * so that R gains per second what n flows at the share would.
 * @members: the flows paced at a share of R (the caller's list of the
 * host's active flows; fewer than n counts as n).  R is theirs: the split,
 * R's bounds and the aggregate rates (cap, slow start) count all of them,
 * not only the n whose intervals ended in this run.
 * With host_per_rtt (the default) it reacts to marks and losses at most
 * once per @srtt_us of run time (h->run_us, set by the caller), with alpha
 * over that window, cuts from min(R, the delivery rate), grows R in slow
 * start only up to twice the delivery rate, and steps only while R is at
 * most 1.05 times the delivery rate over 48 segments or more.
 */
void ss_cc_host_run(struct ss_cc_host *h, const struct ss_cc_params *p, uint32_t srtt_us,
		    uint32_t flow_iv_us, uint32_t members, struct ss_cc_out *out);

/* The rate flow @f is paced at: the level, or its own demand when that is
 * smaller (it did not use its rate); within [min_rate, max_rate]. */
uint64_t ss_cc_host_share(const struct ss_cc_host *h, const struct ss_cc_params *p,
			  const struct ss_cc_share_flow *f);

#endif /* SS_CC_CC_H */
