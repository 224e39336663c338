/* timely.c - TIMELY (Mittal et al., SIGCOMM'15): rate control from the RTT gradient, plus slow start (TAS §3.2). */
#include "cc/cc_int.h"

/*
 * The paper's Algorithm 1 (§4.3), run once per control interval on the
 * interval's latest RTT sample instead of once per completion event:
 *
 *   new_diff  = rtt - prev_rtt;  prev_rtt = rtt
 *   rtt_diff  = (1 - α) * rtt_diff + α * new_diff          (EWMA, §4.3)
 *   gradient  = rtt_diff / minRTT                          (normalised)
 *   rtt < T_low:   rate += δ                               (§4.4, "T_low")
 *   rtt > T_high:  rate *= 1 - β * (1 - T_high / rtt)      (§4.4, "T_high")
 *   gradient <= 0: rate += N * δ, N = hai_mult once hai_thresh gradients
 *                  in a row were <= 0 (HAI, §4.3), else 1
 *   gradient > 0:  rate *= 1 - β * gradient
 *
 * The gradient is clamped to 1 so one decrease never cuts more than β.
 * minRTT is the flow's smallest sample unless min_rtt_us fixes it.
 *
 * Added for TCP, as TAS does: slow start doubles the rate every interval
 * until the first congestion signal (a loss, a sample above T_high, or a
 * positive gradient with the sample at or above T_low); loss and timeouts,
 * which TIMELY does not consider, cut the rate by loss_md; the rate is
 * capped at cap_ppm of the measured send rate as in dctcp_rate.c.  An
 * interval without an RTT sample holds the rate.
 */

static void timely_out(const struct ss_cc_timely *st, uint32_t flags, struct ss_cc_out *out)
{
	out->rate_bps = st->rate;
	out->cwnd = 0;
	out->flags = SS_CC_OUT_RATE | flags | (st->slow_start ? SS_CC_OUT_SLOW_START : 0);
}

static void timely_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
			struct ss_cc_out *out)
{
	struct ss_cc_timely *st = &u->timely;

	st->rate = p->timely.init_rate;
	st->rtt_diff_ns = 0;
	st->prev_rtt_us = 0;
	st->min_rtt_us = 0;
	st->neg_count = 0;
	st->slow_start = 1;
	timely_out(st, 0, out);
}

/* Feed one RTT sample into the difference EWMA. */
static void timely_rtt_update(struct ss_cc_timely *st, const struct ss_cc_timely_params *p,
			      uint32_t rtt_us)
{
	if (st->prev_rtt_us) {
		int64_t new_diff_ns = ((int64_t)rtt_us - st->prev_rtt_us) * 1000;
		int64_t a = p->ewma_ppm;

		/* |values| < 2^42 ns, weights <= 10^6 < 2^20: no overflow.  The
		 * division truncates toward zero, the same on every run. */
		st->rtt_diff_ns = (st->rtt_diff_ns * ((int64_t)SS_CC_PPM - a) + new_diff_ns * a) /
				  (int64_t)SS_CC_PPM;
	}
	st->prev_rtt_us = rtt_us;
	if (st->min_rtt_us == 0 || rtt_us < st->min_rtt_us)
		st->min_rtt_us = rtt_us;
}

/* The normalised gradient rtt_diff / minRTT in ppm, clamped to [0, 1]. */
static uint64_t timely_gradient_ppm(const struct ss_cc_timely *st,
				    const struct ss_cc_timely_params *p)
{
	uint64_t min_rtt_ns = (uint64_t)(p->min_rtt_us ? p->min_rtt_us : st->min_rtt_us) * 1000;
	uint64_t g;

	if (st->rtt_diff_ns <= 0 || min_rtt_ns == 0)
		return 0;
	if ((uint64_t)st->rtt_diff_ns >= min_rtt_ns)
		return SS_CC_PPM;
	g = (uint64_t)st->rtt_diff_ns * SS_CC_PPM / min_rtt_ns;
	return g;
}

static void timely_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
			       const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_timely_params *p = &pp->timely;
	struct ss_cc_timely *st = &u->timely;
	uint32_t flags = 0, rtt = s->rtt_us;
	uint64_t rate;

	rate = cc_rate_send_cap(st->rate, s, p->cap_ppm, p->init_rate, &flags);
	if (rtt)
		timely_rtt_update(st, p, rtt);

	if (s->fast_retx || s->timeouts) {
		rate = cc_rate_cut(rate, p->loss_md_ppm);
		st->slow_start = 0;
		st->neg_count = 0;
		flags |= SS_CC_OUT_REDUCED;
		goto done;
	}
	if (!rtt) {
		flags |= SS_CC_OUT_HELD;
		goto done;
	}
	if (st->slow_start) {
		if (rtt <= p->t_high_us && (rtt < p->t_low_us || st->rtt_diff_ns <= 0)) {
			rate *= 2;
			goto done;
		}
		st->slow_start = 0; /* congestion: fall through to the law */
	}
	if (rtt < p->t_low_us) {
		rate += p->delta;
	} else if (rtt > p->t_high_us) {
		uint64_t over_ppm = SS_CC_PPM - (uint64_t)p->t_high_us * SS_CC_PPM / rtt;

		rate = cc_rate_cut(rate, cc_mul_ppm(p->beta_ppm, over_ppm));
		st->neg_count = 0;
		flags |= SS_CC_OUT_REDUCED;
	} else if (st->rtt_diff_ns <= 0) {
		uint32_t n = 1;

		if (st->neg_count < UINT32_MAX)
			st->neg_count++;
		if (st->neg_count >= p->hai_thresh)
			n = p->hai_mult;
		rate += (uint64_t)n * p->delta;
	} else {
		uint64_t g = timely_gradient_ppm(st, p);

		st->neg_count = 0;
		rate = cc_rate_cut(rate, cc_mul_ppm(p->beta_ppm, g));
		flags |= SS_CC_OUT_REDUCED;
	}
done:
	st->rate = cc_rate_clamp(rate, p->min_rate, p->max_rate);
	timely_out(st, flags, out);
}

const struct ss_cc_ops ss_cc_timely_ops = {
	.name = "timely",
	.rate_based = true,
	.init = timely_init,
	.on_interval = timely_on_interval,
};
