/* cc_int.h - helpers shared by the congestion-control algorithms (internal to src/cc/). */
#ifndef SS_CC_CC_INT_H
#define SS_CC_CC_INT_H

#include "cc/cc.h"

static inline uint64_t cc_u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t cc_u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* @x * @ppm / 10^6, rounded down; @x <= 2^42 and @ppm < 2^22 keep it exact. */
static inline uint64_t cc_mul_ppm(uint64_t x, uint64_t ppm)
{
	return x * ppm / SS_CC_PPM;
}

/* @rate reduced by the fraction @cut_ppm (<= 10^6). */
static inline uint64_t cc_rate_cut(uint64_t rate, uint64_t cut_ppm)
{
	return rate - cc_mul_ppm(rate, cut_ppm);
}

static inline uint64_t cc_rate_clamp(uint64_t rate, uint64_t lo, uint64_t hi)
{
	return rate < lo ? lo : rate > hi ? hi : rate;
}

/* @bytes over @us microseconds in bytes per second, at most
 * SS_CC_RATE_LIMIT; 0 when @us is 0. */
uint64_t cc_bytes_per_s(uint64_t bytes, uint64_t us);

/*
 * TAS §3.2: "the rate is no more than 20% higher than the flow's send
 * rate", checked at the start of the control step.  Only when the flow
 * sent something this interval: an idle flow has no send rate to measure
 * and keeps its rate.  Not when the pacer held it back (rate_limited): it
 * used its rate.  Never below @floor, the algorithm's initial rate: a new
 * flow starts there untested, so a flow that sent little is not worse
 * off than one that just opened (RFC 7661 §4.4 likewise keeps an
 * application-limited TCP's window at the initial window or more).  An
 * iperf3 data connection sends a 37-byte cookie, then waits for the test
 * to start: capped to 1.2 x that, its rate fell to the 1 Mbit/s floor,
 * whose intervals (CC_IV_SEGS segments at the rate) are 46 ms long, and
 * the ramp to 50 Mbit/s took 85 ms.  Sets SS_CC_OUT_CAPPED in *@flags
 * when it cuts.
 */
uint64_t cc_rate_send_cap(uint64_t rate, const struct ss_cc_sample *s, uint32_t cap_ppm,
			  uint64_t floor, uint32_t *flags);

/*
 * A window TCP's additive increase, one MSS per RTT (RFC 5681), as a rate
 * step over the interval: the window would grow by mss * interval / srtt
 * bytes, which at one window per srtt is that much over srtt more rate.
 * 0 without an RTT estimate.
 */
uint64_t cc_rate_reno_step(const struct ss_cc_sample *s);

/*
 * DCTCP's estimate of the marked fraction (RFC 8257 §3.3 step 4 and 5):
 * alpha = (1 - g) * alpha + g * M, M = ecn_bytes / acked_bytes, all in
 * ppm, each product rounded down.  @acked must be > 0.
 */
uint32_t cc_dctcp_alpha(uint32_t alpha, uint32_t g_ppm, uint64_t acked, uint64_t ecn);

/* RFC 6928 §2 initial window: min(10*MSS, max(2*MSS, 14600)). */
uint32_t cc_initial_window(uint32_t mss);

/*
 * Reno window growth for @acked bytes (RFC 5681 §3.1 with appropriate
 * byte counting, RFC 3465 §2.1): below ssthresh (slow start) cwnd grows
 * by the bytes acked, up to ssthresh; the bytes left over, and all bytes
 * in congestion avoidance, accumulate in *@acc and each full cwnd of them
 * adds one MSS.  Result at most @max_cwnd.
 */
void cc_reno_grow(uint32_t *cwnd, uint32_t ssthresh, uint32_t *acc, uint64_t acked,
		  uint32_t mss, uint32_t max_cwnd);

/* RFC 5681 eq. 4 with cwnd for FlightSize: max(cwnd / 2, 2 * MSS). */
static inline uint32_t cc_half_window(uint32_t cwnd, uint32_t mss)
{
	uint32_t half = cwnd / 2;

	return half > 2 * mss ? half : 2 * mss;
}

/* Loss reaction of the Reno-style window algorithms (RFC 5681 §3.1-§3.2):
 * ssthresh = half the window; the window goes to one MSS after a timeout,
 * to ssthresh after a fast retransmit (RFC 6582 deflation). */
static inline void cc_reno_loss(uint32_t *cwnd, uint32_t *ssthresh, uint32_t *acc, bool timeout,
				uint32_t mss)
{
	*ssthresh = cc_half_window(*cwnd, mss);
	*cwnd = timeout ? mss : *ssthresh;
	*acc = 0;
}

/* CUBIC internals, exposed for the unit tests (cubic.c). */

/* RFC 9438 §4.2 eq. 2: K in microseconds for the given W_max and
 * cwnd_epoch (bytes); 0 when cwnd_epoch >= W_max. */
uint64_t cc_cubic_k_us(const struct ss_cc_cubic_params *p, uint32_t mss, uint32_t w_max,
		       uint32_t cwnd_epoch);

/* RFC 9438 §4.2 eq. 1: W_cubic(t) in bytes (rounded down, clamped to
 * [0, UINT32_MAX]) for the epoch in @st at @t_us into the epoch. */
uint64_t cc_cubic_window(const struct ss_cc_cubic *st, const struct ss_cc_cubic_params *p,
			 uint32_t mss, uint64_t t_us);

#endif /* SS_CC_CC_INT_H */
