/* cubic.c - CUBIC (RFC 9438) with the Reno-friendly region and fast convergence, one step per control interval. */
#include "cc/cc_int.h"

/*
 * RFC 9438 in bytes and microseconds:
 *
 *   W_cubic(t) = C * (t - K)^3 + W_max                        (§4.2 eq. 1)
 *   K = cbrt((W_max - cwnd_epoch) / C)                        (§4.2 eq. 2)
 *
 * with C in segments/s^3 (so times MSS for bytes), t the time since the
 * current congestion avoidance stage (the "epoch") began, cwnd_epoch the
 * window then.  Each interval in congestion avoidance:
 *
 *  - the Reno-friendly estimate grows by α_cubic segments per window
 *    acked, W_est += α_cubic * MSS * acked / cwnd (§4.3 eq. 4), α_cubic =
 *    3(1 - β)/(1 + β) until W_est reaches the window before the last
 *    reduction (cwnd_prior), 1 after (§4.3);
 *  - if W_cubic(t) < W_est the flow is in the Reno-friendly region and
 *    cwnd = W_est (§4.3); otherwise (concave §4.4 or convex §4.5 region)
 *    target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd] (§4.2) and cwnd
 *    grows by (target - cwnd) / cwnd MSS per MSS acked, not past target.
 *
 * Congestion events (§4.6): a fast retransmit or ECE (§4.6 treats ECN as
 * loss), once per interval: cwnd_prior = cwnd; W_max = cwnd, or with fast
 * convergence (§4.7) cwnd * (1 + β)/2 when cwnd fell short of the
 * previous W_max; ssthresh = max(cwnd * β, 2 MSS) (cwnd standing in for
 * the flight); cwnd = ssthresh; a new epoch begins.  A timeout (§4.8) sets
 * the same ssthresh, cwnd = 1 MSS, and slow start follows; the first epoch
 * after it takes W_max = cwnd_epoch, K = 0.  Slow start is standard
 * (RFC 5681 with byte counting; §4.10 allows HyStart++, not done here),
 * and an epoch that begins when slow start ends without a loss takes
 * W_max = max(W_max, cwnd).
 *
 * The cube and the cube root use 128-bit integers (a GNU extension that
 * gcc and clang have on 64-bit targets), so results are exact integers.
 */

__extension__ typedef unsigned __int128 cc_u128;

#define CUBIC_T_MAX_US (UINT64_C(1) << 29) /* |t - K| clamp, ~9 minutes */
#define CUBIC_E24 ((cc_u128)1000000000000ull * 1000000000000ull)

/* TCP's MSS is a 16-bit quantity; the overflow bounds below rely on it,
 * and K divides by it (a 0 from a broken caller must not trap). */
static inline uint32_t cubic_mss(uint32_t mss)
{
	return mss > UINT16_MAX ? UINT16_MAX : mss ? mss : 1;
}

/* Largest r with r^3 <= x (x < 2^126). */
static uint64_t cubic_icbrt(cc_u128 x)
{
	uint64_t lo = 0, hi = UINT64_C(1) << 42; /* (2^42)^3 = 2^126 */

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if ((cc_u128)mid * mid * mid <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

uint64_t cc_cubic_k_us(const struct ss_cc_cubic_params *p, uint32_t mss, uint32_t w_max,
		       uint32_t cwnd_epoch)
{
	/* K^3 [us^3] = (W_max - cwnd_epoch) [bytes] * 10^18 [us^3/s^3] /
	 * (C [seg/s^3] * MSS [bytes/seg]), with C = c_ppm / 10^6. */
	if (cwnd_epoch >= w_max)
		return 0;
	return cubic_icbrt((cc_u128)(w_max - cwnd_epoch) * CUBIC_E24 /
			   ((cc_u128)p->c_ppm * cubic_mss(mss)));
}

uint64_t cc_cubic_window(const struct ss_cc_cubic *st, const struct ss_cc_cubic_params *p,
			 uint32_t mss, uint64_t t_us)
{
	uint64_t dt = t_us > st->k_us ? t_us - st->k_us : st->k_us - t_us;
	cc_u128 num, d;

	if (dt > CUBIC_T_MAX_US)
		dt = CUBIC_T_MAX_US;
	/* C * MSS * dt^3 / 10^24 bytes; num < 2^87 * 2^24 * 2^16 (C <= 10).  Rounded
	 * so that W itself is rounded down in both regions. */
	num = (cc_u128)dt * dt * dt * p->c_ppm * cubic_mss(mss);
	d = num / CUBIC_E24;
	if (t_us >= st->k_us)
		return d >= (cc_u128)UINT32_MAX - st->w_max ? UINT32_MAX : st->w_max + (uint64_t)d;
	if (num % CUBIC_E24)
		d++;
	return d >= st->w_max ? 0 : st->w_max - (uint64_t)d;
}

static void cubic_out(const struct ss_cc_cubic *st, uint32_t flags, struct ss_cc_out *out)
{
	out->rate_bps = 0;
	out->cwnd = st->cwnd;
	out->flags = SS_CC_OUT_WINDOW | flags | (st->cwnd < st->ssthresh ? SS_CC_OUT_SLOW_START : 0);
}

static void cubic_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
		       struct ss_cc_out *out)
{
	struct ss_cc_cubic *st = &u->cubic;

	*st = (struct ss_cc_cubic){0};
	st->cwnd = cc_initial_window(mss);
	if (st->cwnd > p->cubic.max_cwnd)
		st->cwnd = p->cubic.max_cwnd;
	st->ssthresh = UINT32_MAX;
	cubic_out(st, 0, out);
}

static void cubic_epoch_begin(struct ss_cc_cubic *st, const struct ss_cc_cubic_params *p,
			      uint32_t mss)
{
	st->cwnd_epoch = st->cwnd;
	if (st->after_rto || st->w_max < st->cwnd)
		st->w_max = st->cwnd;
	st->after_rto = 0;
	st->k_us = cc_cubic_k_us(p, mss, st->w_max, st->cwnd_epoch);
	st->w_est = st->cwnd_epoch;
	st->t_us = 0;
	st->in_epoch = 1;
}

/* §4.6 / §4.7: reduce for a congestion event; @rto for a timeout (§4.8). */
static void cubic_reduce(struct ss_cc_cubic *st, const struct ss_cc_cubic_params *p,
			 uint32_t mss, bool rto)
{
	uint64_t w = cc_mul_ppm(st->cwnd, p->beta_ppm);

	st->cwnd_prior = st->cwnd;
	if (p->fast_convergence && st->cwnd < st->w_max)
		st->w_max = (uint32_t)((uint64_t)st->cwnd * (SS_CC_PPM + p->beta_ppm) /
				       (2 * SS_CC_PPM));
	else
		st->w_max = st->cwnd;
	st->ssthresh = (uint32_t)cc_u64_max(w, 2ull * mss);
	if (rto) {
		st->cwnd = mss;
		st->in_epoch = 0;
		st->after_rto = 1;
	} else {
		st->cwnd = st->ssthresh;
		cubic_epoch_begin(st, p, mss);
	}
}

/* Congestion avoidance for one interval that acknowledged @acked bytes. */
static void cubic_avoid(struct ss_cc_cubic *st, const struct ss_cc_cubic_params *p,
			const struct ss_cc_sample *s, uint64_t acked)
{
	uint32_t mss = s->mss;
	uint64_t cwnd = st->cwnd, w_cubic, target, est_inc;

	if (!st->in_epoch)
		cubic_epoch_begin(st, p, mss);
	st->t_us += s->interval_us;

	/* §4.3 eq. 4; α_cubic as num/den. */
	if (st->w_est >= st->cwnd_prior)
		est_inc = (uint64_t)mss * acked / cwnd;
	else
		est_inc = (uint64_t)mss * acked * 3 * (SS_CC_PPM - p->beta_ppm) /
			  ((SS_CC_PPM + p->beta_ppm) * cwnd);
	st->w_est = (uint32_t)cc_u64_min((uint64_t)st->w_est + est_inc, UINT32_MAX);

	w_cubic = cc_cubic_window(st, p, mss, st->t_us);
	if (w_cubic < st->w_est) {
		/* Reno-friendly region.  The RFC sets cwnd = W_est; a cwnd the
		 * cubic curve already took above it is not cut without a
		 * congestion signal. */
		cwnd = cc_u64_max(cwnd, st->w_est);
	} else {
		target = cc_cubic_window(st, p, mss, st->t_us + s->srtt_us);
		target = cc_u64_min(cc_u64_max(target, cwnd), cwnd + cwnd / 2);
		cwnd = cc_u64_min(cwnd + (target - cwnd) * acked / cwnd, target);
	}
	st->cwnd = (uint32_t)cc_u64_min(cwnd, p->max_cwnd);
}

static void cubic_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
			      const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_cubic_params *p = &pp->cubic;
	struct ss_cc_cubic *st = &u->cubic;
	uint64_t acked = s->acked_bytes;
	uint32_t flags = 0;

	if (s->timeouts) {
		cubic_reduce(st, p, s->mss, true);
		flags |= SS_CC_OUT_REDUCED;
	} else if (s->fast_retx || s->ecn_bytes) {
		cubic_reduce(st, p, s->mss, false);
		flags |= SS_CC_OUT_REDUCED;
	} else if (!acked) {
		if (st->in_epoch)
			st->t_us += s->interval_us; /* t is wall time in the epoch */
		flags |= SS_CC_OUT_HELD;
	} else {
		if (st->cwnd < st->ssthresh) {
			/* Slow start, RFC 5681 §3.1 with RFC 3465 byte counting. */
			uint64_t ss = cc_u64_min(acked, st->ssthresh - st->cwnd);

			st->cwnd += (uint32_t)ss;
			acked -= ss;
		}
		if (st->cwnd >= st->ssthresh && acked)
			cubic_avoid(st, p, s, acked);
		else if (st->cwnd >= st->ssthresh && !st->in_epoch)
			cubic_epoch_begin(st, p, s->mss);
	}
	if (st->cwnd > p->max_cwnd)
		st->cwnd = p->max_cwnd;
	cubic_out(st, flags, out);
}

const struct ss_cc_ops ss_cc_cubic_ops = {
	.name = "cubic",
	.rate_based = false,
	.init = cubic_init,
	.on_interval = cubic_on_interval,
};
