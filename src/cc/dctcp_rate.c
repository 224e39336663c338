/* dctcp_rate.c - DCTCP's control law applied to a sending rate, as in TAS (the default algorithm). */
#include "cc/cc_int.h"

/*
 * TAS §3.2 adapts DCTCP (Alizadeh et al., SIGCOMM'10; RFC 8257) to rates,
 * which the fast path enforces by pacing.  One step per control interval
 * (about 2 RTT, so each step sees a full window of ACKs, where RFC 8257
 * §3.3 updates once per window of data):
 *
 *  0. Cap (TAS §3.2): the rate may be at most cap_ppm (1.2x) of the rate
 *     the flow actually sent at during the interval, so a flow limited by
 *     its application does not build up a rate it never tests.  Skipped
 *     when nothing was sent (no measurement), and when the pacer held the
 *     flow back (it used its rate; cc_rate_send_cap()).  Never below the
 *     initial rate: a flow that sent little is no worse off than a new
 *     one.
 *  1. alpha = (1 - g) * alpha + g * M, M the fraction of acknowledged
 *     bytes whose ACKs echoed CE (RFC 8257 §3.3 steps 4-5); not in slow
 *     start before the first mark, so the first cut is a halving (alpha
 *     starts at 1): at a short RTT slow start spans hundreds of
 *     intervals, and a decayed alpha would cut by little while the
 *     queue it built keeps growing.
 *  2. Then exactly one of, by priority:
 *     - loss (a fast retransmit or a timeout): rate *= 1 - loss_md
 *       (halve by default, as TCP does for loss, RFC 8257 §3.5);
 *     - marks: rate *= 1 - alpha / 2 (RFC 8257 §3.3 step 8, on the rate);
 *     - no byte acknowledged: hold (no evidence the path takes more);
 *     - slow start, until the first congestion signal: rate grows by
 *       the rate at which data was acknowledged in the interval, at most
 *       doubling.  TCP's slow start (cwnd += bytes acked): it doubles
 *       while the path delivers all it is sent, and grows only linearly,
 *       by what the path delivers, once a queue forms.  Doubling the rate
 *       itself regardless ran it to many Gbit/s within a millisecond at
 *       a 40 us RTT, and the flow sent 64 KiB bursts into the queue;
 *     - otherwise additive increase: rate += step; after a loss with no
 *       mark (the path signals by loss: drop-tail or random loss) until
 *       the next mark, rate += max(step, the rate a window TCP would gain,
 *       one MSS per RTT).  RFC 8257 §3.5 has DCTCP treat loss as
 *       conventional TCP does; TAS's fixed step alone, halving at every
 *       loss, leaves a flow under 1 % random loss at its floor on a short
 *       path, while the small step keeps a marking queue steady.
 *  3. Clamp to [min_rate, max_rate].
 */

static void dctcp_rate_out(const struct ss_cc_dctcp_rate *st, uint32_t flags,
			   struct ss_cc_out *out)
{
	out->rate_bps = st->rate;
	out->cwnd = 0;
	out->flags = SS_CC_OUT_RATE | flags | (st->slow_start ? SS_CC_OUT_SLOW_START : 0);
}

static void dctcp_rate_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
			    struct ss_cc_out *out)
{
	struct ss_cc_dctcp_rate *st = &u->dctcp_rate;

	st->rate = p->dctcp_rate.init_rate;
	st->alpha = p->dctcp_rate.alpha_init_ppm;
	st->slow_start = 1;
	st->loss_mode = 0;
	dctcp_rate_out(st, 0, out);
}

static void dctcp_rate_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
				   const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_dctcp_rate_params *p = &pp->dctcp_rate;
	struct ss_cc_dctcp_rate *st = &u->dctcp_rate;
	uint32_t flags = 0;
	uint64_t rate;

	rate = cc_rate_send_cap(st->rate, s, p->cap_ppm, p->init_rate, &flags);
	if (s->acked_bytes && (s->ecn_bytes || !st->slow_start))
		st->alpha = cc_dctcp_alpha(st->alpha, p->g_ppm, s->acked_bytes, s->ecn_bytes);

	if (s->ecn_bytes)
		st->loss_mode = 0;
	if (s->fast_retx || s->timeouts) {
		rate = cc_rate_cut(rate, p->loss_md_ppm);
		st->slow_start = 0;
		st->loss_mode |= !s->ecn_bytes;
		flags |= SS_CC_OUT_REDUCED;
	} else if (s->ecn_bytes) {
		rate = cc_rate_cut(rate, st->alpha / 2);
		st->slow_start = 0;
		flags |= SS_CC_OUT_REDUCED;
	} else if (!s->acked_bytes) {
		flags |= SS_CC_OUT_HELD;
	} else if (st->slow_start) {
		uint64_t delivered = cc_bytes_per_s(s->acked_bytes, s->interval_us);

		rate += cc_u64_min(delivered, rate);
	} else {
		uint64_t step = p->step;

		if (s->path_rate && s->path_rate / 8 < step)
			step = cc_u64_max(s->path_rate / 8, 1);
		rate += st->loss_mode ? cc_u64_max(step, cc_rate_reno_step(s)) : step;
	}
	st->rate = cc_rate_clamp(rate, p->min_rate, p->max_rate);
	dctcp_rate_out(st, flags, out);
}

const struct ss_cc_ops ss_cc_dctcp_rate_ops = {
	.name = "dctcp-rate",
	.rate_based = true,
	.ecn_per_ack = true,
	.init = dctcp_rate_init,
	.on_interval = dctcp_rate_on_interval,
};
