/* newreno.c - NewReno (RFC 5681, RFC 6582) with classic ECN (RFC 3168), one step per control interval. */
#include "cc/cc_int.h"

/*
 * The window a NewReno sender would hold at the end of each interval:
 *
 *  - timeout (RFC 5681 §3.1, eq. 4 and the loss window): ssthresh =
 *    max(FlightSize/2, 2*MSS), cwnd = 1 MSS;
 *  - fast retransmit (RFC 5681 §3.2 step 2, RFC 6582 §3.2 steps 2-3): the
 *    same ssthresh and, after the full ACK that ends recovery, cwnd =
 *    ssthresh.  The per-ACK inflation during recovery is the fast path's;
 *    the control loop sees the episode after the fact and sets the deflated
 *    window.  Several fast retransmits in one interval are one episode
 *    (RFC 6582 §3.2: one reduction per window of data);
 *  - ECE (RFC 3168 §6.1.2, when ecn is on): as a loss, once per interval;
 *  - otherwise slow start below ssthresh (cwnd += bytes acked, RFC 3465
 *    §2.2 with the interval's ACKs taken together), else congestion
 *    avoidance: one MSS per cwnd of acked bytes (RFC 5681 eq. 3, RFC 3465
 *    §2.1).
 *
 * cwnd stands in for FlightSize (the control loop sees the flight only at
 * interval ends; for a flow that fills its window they agree).
 */

static void newreno_out(const struct ss_cc_newreno *st, uint32_t flags, struct ss_cc_out *out)
{
	out->rate_bps = 0;
	out->cwnd = st->cwnd;
	out->flags = SS_CC_OUT_WINDOW | flags | (st->cwnd < st->ssthresh ? SS_CC_OUT_SLOW_START : 0);
}

static void newreno_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
			 struct ss_cc_out *out)
{
	struct ss_cc_newreno *st = &u->newreno;

	st->cwnd = cc_initial_window(mss);
	if (st->cwnd > p->newreno.max_cwnd)
		st->cwnd = p->newreno.max_cwnd;
	st->ssthresh = UINT32_MAX;
	st->ca_acc = 0;
	newreno_out(st, 0, out);
}

static void newreno_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
				const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_newreno_params *p = &pp->newreno;
	struct ss_cc_newreno *st = &u->newreno;
	uint32_t flags = 0;

	if (s->timeouts || s->fast_retx || (p->ecn && s->ecn_bytes)) {
		cc_reno_loss(&st->cwnd, &st->ssthresh, &st->ca_acc, s->timeouts, s->mss);
		flags |= SS_CC_OUT_REDUCED;
	} else if (!s->acked_bytes) {
		flags |= SS_CC_OUT_HELD;
	} else {
		cc_reno_grow(&st->cwnd, st->ssthresh, &st->ca_acc, s->acked_bytes, s->mss,
			     p->max_cwnd);
	}
	if (st->cwnd > p->max_cwnd)
		st->cwnd = p->max_cwnd;
	newreno_out(st, flags, out);
}

const struct ss_cc_ops ss_cc_newreno_ops = {
	.name = "newreno",
	.rate_based = false,
	.init = newreno_init,
	.on_interval = newreno_on_interval,
};
