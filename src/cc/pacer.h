/* pacer.h - timer-ordered pacing of rate-limited flows (hashed timing wheel) and per-application token buckets. */
#ifndef SS_CC_PACER_H
#define SS_CC_PACER_H

/*
 * The fast path's enforcement of rates (TAS §3.1): each paced
 * flow has a rate (bytes/s) and the earliest time it may send next,
 * next_ns.  Every transmission, new data or retransmission alike, is
 * charged (ss_pacer_charge()), which moves next_ns on by bytes / rate.  A
 * flow with data waiting is queued (ss_pacer_schedule()) and comes out of
 * ss_pacer_poll() once its time has come, in time order.
 *
 * Structure: a hashed timing wheel of n_slots slots of slot_ns each (the
 * horizon is n_slots * slot_ns), a bitmap of non-empty slots, and an
 * unsorted overflow list for flows further away than the horizon.  Queue,
 * cancel and pop are O(1); poll also pays for the empty slots it passes
 * (64 per bitmap word).  The overflow list is scanned at most once per
 * half horizon and each scan moves what has come within the horizon, so
 * a flow beyond it costs O(1) per half horizon it waits.  None of this
 * depends on the number of flows.
 *
 * Time order: a flow is placed at tick ceil(next_ns / slot_ns) and a tick
 * is served once the clock reaches it, so a flow never comes out before
 * next_ns and at most one slot after.  Flows of one tick come out in the
 * order they were queued.
 *
 * Groups (per-application caps): a flow
 * may belong to a group with a token bucket.  A flow whose time has come
 * while its group's bucket is in debt, or while others of the group wait,
 * joins the group's FIFO, and the
 * group itself sits in the wheel until its bucket is out of debt; then it
 * releases waiting flows in order.  Each packet costs O(1) whatever the
 * number of flows in the group.  A flow of a group that pops from the
 * wheel while nobody waits and the bucket has credit goes straight out.
 *
 * Within one tick, from the wheel or from the FIFO, a group lets flows go
 * only while its credit pays for the ones it already let go in that tick,
 * each counted at the group's mean charge (a release is charged only
 * after its flow has sent, later in the caller's round); the others due
 * join the FIFO.  So a poll that comes late, when many of a group's flows
 * are due at once, lets out what the bucket holds, and the bucket is
 * overdrawn by about one release at most (its debt then holds the group
 * back until it is repaid).  32 flows at one share of a host's aggregate
 * keep the phase they started in; a poll 1 ms late let ~18 of them out at
 * once, 54 KB into a 100 Mbit/s bottleneck in well under a millisecond,
 * when nothing bounded a tick's releases.  Then, until 2026-11-23, one
 * flow per tick: a FIFO drained at one flow per poll, and 16384 RPC flows
 * of one host (600k sends a second, each of 118 bytes, against a 2 GB/s
 * aggregate) went through it at the fast path's ~100k polls a second once
 * a single flow had waited, for the rest of the run.
 *
 * The pacer allocates only in ss_pacer_init() and never reads a clock:
 * the caller passes the time in nanoseconds (monotonic; an earlier time
 * than one already given is treated as that one).  Not thread-safe: one
 * fast-path thread owns a pacer and its flows.
 */

#include <stdbool.h>
#include <stdint.h>

#include "util/list.h"

/* Where an entry is queued. */
#define SS_PACER_IDLE 0
#define SS_PACER_WHEEL 1
#define SS_PACER_OVERFLOW 2
#define SS_PACER_GROUP_WAIT 3 /* flows only: on its group's FIFO */

/* Common header of flows and groups (internal). */
struct ss_pacer_ent {
	struct ss_list link;        /* first member */
	uint64_t tick;             /* tick queued for (WHEEL, OVERFLOW) */
	uint8_t where;             /* SS_PACER_* */
	uint8_t is_group;
};

/*
 * Token bucket: rate bytes/s, at most burst bytes of credit.  A send may
 * begin whenever the bucket is not in debt and may overdraw it (by one
 * packet, or a retransmission burst): over any time T the bucket lets
 * through at most burst + rate * T + the last overdraft.  Credit is kept
 * in bytes * 10^9 so refills are exact.
 */
struct ss_pacer_bucket {
	uint64_t rate;    /* bytes per second, > 0 */
	uint64_t burst;   /* bytes, > 0 */
	int64_t credit;   /* bytes * 10^9; negative = debt */
	uint64_t last_ns; /* time of the last refill */
};

/* @rate in [1, 2^40] B/s, @burst in [1, 2^32] bytes.  Starts full.
 * Returns 0 or -EINVAL. */
int ss_pacer_bucket_init(struct ss_pacer_bucket *b, uint64_t rate, uint64_t burst,
			 uint64_t now_ns);

/* New rate from @now_ns on (credit so far is earned at the old one).
 * Returns 0 or -EINVAL (@rate out of range). */
int ss_pacer_bucket_set_rate(struct ss_pacer_bucket *b, uint64_t rate, uint64_t now_ns);

/* New rate and depth from @now_ns on: credit so far is earned at the old
 * rate, and credit above the new depth is dropped (debt is kept).  Returns
 * 0 or -EINVAL (@rate or @burst out of range, as for init). */
int ss_pacer_bucket_set(struct ss_pacer_bucket *b, uint64_t rate, uint64_t burst,
			uint64_t now_ns);

#define SS_PACER_MAX_CHARGE (UINT64_C(1) << 32) /* bytes per charge */
#define SS_PACER_MAX_DEBT (INT64_C(1) << 62)     /* bytes * 10^9 */

/* The credit earned since the last refill, up to the depth (internal;
 * inline, as ready and charge are: a host's aggregate bucket is checked
 * and charged for every segment its flows send). */
static inline void ss_pacer_bucket_refill(struct ss_pacer_bucket *b, uint64_t now_ns)
{
	int64_t full = (int64_t)(b->burst * UINT64_C(1000000000));
	uint64_t dt, room;

	if (now_ns <= b->last_ns)
		return;
	dt = now_ns - b->last_ns;
	b->last_ns = now_ns;
	room = (uint64_t)(full - b->credit); /* < 2^63: credit >= -2^62 */
	/* dt <= room / rate means dt * rate <= room: no overflow, no cap. */
	if (dt > room / b->rate)
		b->credit = full;
	else
		b->credit += (int64_t)(dt * b->rate);
}

/* True if a send may begin at @now_ns (no debt). */
static inline bool ss_pacer_bucket_ready(struct ss_pacer_bucket *b, uint64_t now_ns)
{
	ss_pacer_bucket_refill(b, now_ns);
	return b->credit >= 0;
}

/* Earliest time >= @now_ns at which the bucket is out of debt. */
uint64_t ss_pacer_bucket_next_ns(struct ss_pacer_bucket *b, uint64_t now_ns);

/* @bytes were sent at @now_ns (whatever they were). */
static inline void ss_pacer_bucket_charge(struct ss_pacer_bucket *b, uint64_t bytes,
					  uint64_t now_ns)
{
	int64_t c;

	ss_pacer_bucket_refill(b, now_ns);
	c = b->credit - (int64_t)((bytes < SS_PACER_MAX_CHARGE ? bytes : SS_PACER_MAX_CHARGE) *
				  UINT64_C(1000000000));
	b->credit = c < -SS_PACER_MAX_DEBT ? -SS_PACER_MAX_DEBT : c;
}

struct ss_pacer_group {
	struct ss_pacer_ent ent;      /* the group's own place in the wheel */
	struct ss_pacer_bucket tb;
	struct ss_list waitq;         /* flows due but held by the bucket, FIFO */
	uint32_t n_wait;
	uint32_t mean_charge;         /* bytes per charge, 1/8 moving mean (at
				       * first the depth): a release's provisional
				       * charge until it is charged */
	uint64_t go_tick;             /* tick in which a poll last let some go */
	uint64_t go_bytes;            /* their provisional charges, bytes */
};

/* @bytes sent by one of @g's flows: its bucket pays, and its mean charge
 * moves (inline: per segment). */
static inline void ss_pacer_group_charge(struct ss_pacer_group *g, uint64_t bytes,
					 uint64_t now_ns)
{
	uint32_t b = bytes < (UINT32_C(1) << 28) ? (uint32_t)bytes : UINT32_C(1) << 28;

	ss_pacer_bucket_charge(&g->tb, bytes, now_ns);
	g->mean_charge = (uint32_t)(((uint64_t)g->mean_charge * 7 + b) / 8);
}

/* One paced flow, embedded in the caller's flow state.  What every send
 * reads and writes (the charge, ss_pacer_may_send()) comes first, in 32
 * bytes; the wheel's entry, touched only when the flow waits, last. */
struct ss_pacer_flow {
	uint64_t next_ns;             /* earliest time of the next send */
	uint64_t rate;                /* bytes/s; 0: not rate-limited */
	uint64_t rem;                 /* carried bytes * 10^9 modulo rate */
	struct ss_pacer_group *group; /* NULL: no per-application cap */
	struct ss_pacer_ent ent;
};

struct ss_pacer_params {
	uint32_t n_slots;    /* 16384: power of two, 64 .. 2^24 */
	uint32_t slot_ns;    /* 1000: slot granularity */
	uint64_t max_lag_ns; /* 10000: a flow served late may catch up this much
			      * (sends back to back); beyond it the lost time is
			      * forgotten, so idle time never becomes a burst */
};

void ss_pacer_params_default(struct ss_pacer_params *p);

struct ss_pacer {
	struct ss_list *slots;         /* n_slots list heads */
	uint64_t *busy;                /* bitmap: slot list non-empty */
	uint32_t n_slots, slot_ns;
	uint64_t max_lag_ns;
	uint64_t now_tick;             /* current tick: earlier ticks are served */
	struct ss_list overflow;
	uint32_t n_overflow;
	uint64_t ovf_check_tick;       /* scan the overflow list at this tick */
	uint64_t ovf_last_scan;        /* tick of the last scan */
	uint32_t n_queued;             /* entries in the wheel or overflow */
	uint64_t ovf_scans;            /* overflow scans so far (cost: each looks */
	uint64_t ovf_looked;           /* ...at every entry: their sum here) */
	uint64_t tick_holds;           /* flows a group held because one of it
					* went in the same tick (FIFO instead) */
};

/* Returns 0, -EINVAL (bad params) or -ENOMEM. */
int ss_pacer_init(struct ss_pacer *p, const struct ss_pacer_params *prm, uint64_t now_ns);
void ss_pacer_fini(struct ss_pacer *p);

/* Idle flow with @rate (0: unpaced) that may send at once, no group. */
void ss_pacer_flow_init(struct ss_pacer_flow *f, uint64_t rate, uint64_t now_ns);

/* New rate (0: unpaced) for the next charge; a queued flow keeps its
 * place (the control loop changes rates once per interval). */
void ss_pacer_flow_set_rate(struct ss_pacer_flow *f, uint64_t rate);

/* Put @f in @g (NULL: none).  @f must be idle (not queued). */
void ss_pacer_flow_set_group(struct ss_pacer_flow *f, struct ss_pacer_group *g);

/* A group with a bucket of @rate B/s and @burst bytes.  0 or -EINVAL. */
int ss_pacer_group_init(struct ss_pacer_group *g, uint64_t rate, uint64_t burst,
			uint64_t now_ns);

/*
 * May @f send now without queueing?  Its own time has come and, if it is
 * in a group, the group's bucket is out of debt and no flow of the group
 * waits (so it cannot overtake them).  False for a queued flow.
 */
static inline bool ss_pacer_may_send(struct ss_pacer_flow *f, uint64_t now_ns)
{
	struct ss_pacer_group *g = f->group;

	if (f->ent.where != SS_PACER_IDLE || f->next_ns > now_ns)
		return false;
	return !g || (g->n_wait == 0 && ss_pacer_bucket_ready(&g->tb, now_ns));
}

/*
 * @f sent @bytes (>0; any segment: new data, retransmission, probe) at
 * @now_ns.  next_ns becomes max(next_ns, now_ns - max_lag_ns) + bytes /
 * rate, the fraction of a nanosecond carried to the next charge; the
 * group's bucket is charged too.  Call for every transmission.
 */
void ss_pacer_charge(struct ss_pacer *p, struct ss_pacer_flow *f, uint64_t bytes,
		     uint64_t now_ns);

/*
 * ss_pacer_charge() of @bytes (< 2^32) for a flow in no group, inline for
 * the per-segment path: the same next_ns and remainder.  @f->rate > 0.
 */
static inline void ss_pacer_charge_rate(const struct ss_pacer *p, struct ss_pacer_flow *f,
					uint32_t bytes, uint64_t now_ns)
{
	uint64_t base = f->next_ns, num;

	/* Served late: keep the schedule (catch up) within max_lag_ns,
	 * forget the rest. */
	if (now_ns > p->max_lag_ns && now_ns - p->max_lag_ns > base)
		base = now_ns - p->max_lag_ns;
	num = (uint64_t)bytes * UINT64_C(1000000000) + f->rem; /* < 2^62 + 2^40 */
	f->next_ns = base + num / f->rate;
	f->rem = num % f->rate;
}

/*
 * ss_pacer_charge() of @bytes (< 2^32), inline for the per-segment path:
 * the group's bucket (a host's aggregate, an application's cap), then
 * the flow's own rate; nothing for a flow with neither.
 */
static inline void ss_pacer_charge_u32(const struct ss_pacer *p, struct ss_pacer_flow *f,
				       uint32_t bytes, uint64_t now_ns)
{
	if (f->group)
		ss_pacer_group_charge(f->group, bytes, now_ns);
	if (f->rate)
		ss_pacer_charge_rate(p, f, bytes, now_ns);
}

/* @f has data to send: queue it for next_ns (or, for a flow held by its
 * group, on the group).  No-op if it is queued already. */
void ss_pacer_schedule(struct ss_pacer *p, struct ss_pacer_flow *f);

/* Remove @f from wherever it is queued (no-op if idle). */
void ss_pacer_cancel(struct ss_pacer *p, struct ss_pacer_flow *f);

/* Take group @g out of the pacer (its application is gone): its waiting
 * flows become idle (they keep their group pointer: the caller moves
 * them) and the group leaves the wheel. */
void ss_pacer_group_cancel(struct ss_pacer *p, struct ss_pacer_group *g);

/*
 * Serve the clock up to @now_ns: store in @out, in time order, up to @max
 * flows that may send now (their time has come and their group allows
 * it); they are idle again.  The caller sends for each one (at least one
 * segment), charges it, and schedules it again if it has more to send.
 * Returns how many it stored; when that is @max there may be more due.
 */
unsigned ss_pacer_poll(struct ss_pacer *p, uint64_t now_ns, struct ss_pacer_flow **out,
		       unsigned max);

/* A lower bound on the next time poll will have work (UINT64_MAX when
 * nothing is queued), for a sleep timeout.  Cost O(n_slots / 64). */
uint64_t ss_pacer_next_ns(const struct ss_pacer *p);

/*
 * True when nothing is queued (ss_pacer_poll() would return nothing): the
 * pacer's clock moves to @now_ns as a poll would move it.  Inline, for
 * callers that poll on every round.
 */
static inline bool ss_pacer_idle(struct ss_pacer *p, uint64_t now_ns)
{
	uint64_t tick = now_ns / p->slot_ns;

	if (p->n_queued)
		return false;
	if (tick > p->now_tick)
		p->now_tick = tick;
	return true;
}

#endif /* SS_CC_PACER_H */
