/* cc.c - the congestion-control framework: parameters, algorithm lookup, control interval, samples, shared arithmetic. */
#include "cc/cc_int.h"

#include <errno.h>
#include <string.h>

void ss_cc_params_default(struct ss_cc_params *p)
{
	memset(p, 0, sizeof(*p));

	p->dctcp_rate.init_rate = 1250000;       /* 10 Mbit/s */
	p->dctcp_rate.min_rate = 125000;         /* 1 Mbit/s */
	p->dctcp_rate.max_rate = 12500000000ull; /* 100 Gbit/s */
	p->dctcp_rate.step = 1250000;            /* 10 Mbit/s, TAS §3.2 */
	p->dctcp_rate.g_ppm = SS_CC_PPM / 16;
	p->dctcp_rate.alpha_init_ppm = SS_CC_PPM;
	p->dctcp_rate.loss_md_ppm = SS_CC_PPM / 2;
	p->dctcp_rate.cap_ppm = 1200000;
	p->dctcp_rate.host_per_rtt = 1;

	p->dctcp_win.g_ppm = SS_CC_PPM / 16;
	p->dctcp_win.alpha_init_ppm = SS_CC_PPM;
	p->dctcp_win.max_cwnd = 1u << 30;

	p->timely.init_rate = 1250000;
	p->timely.min_rate = 125000;
	p->timely.max_rate = 12500000000ull;
	p->timely.delta = 1250000;
	p->timely.t_low_us = 50;
	p->timely.t_high_us = 500;
	p->timely.min_rtt_us = 0;
	p->timely.ewma_ppm = 875000;
	p->timely.beta_ppm = 800000;
	p->timely.hai_thresh = 5;
	p->timely.hai_mult = 5;
	p->timely.loss_md_ppm = SS_CC_PPM / 2;
	p->timely.cap_ppm = 1200000;

	p->cubic.c_ppm = 400000;
	p->cubic.beta_ppm = 700000;
	p->cubic.fast_convergence = 1;
	p->cubic.max_cwnd = 1u << 30;

	p->newreno.max_cwnd = 1u << 30;
	p->newreno.ecn = 1;

	p->bbr.init_rate = 1250000;       /* 10 Mbit/s, as dctcp-rate */
	p->bbr.min_rate = 125000;         /* 1 Mbit/s */
	p->bbr.max_rate = 12500000000ull; /* 100 Gbit/s */

	p->interval_rtts = 2;
	p->interval_min_us = 50;
	p->interval_init_us = 1000;
}

static bool cc_rate_bounds_ok(uint64_t init, uint64_t lo, uint64_t hi)
{
	return lo > 0 && lo <= init && init <= hi && hi <= SS_CC_RATE_LIMIT;
}

static bool cc_cap_ok(uint32_t cap_ppm)
{
	return cap_ppm == 0 || (cap_ppm >= SS_CC_PPM && cap_ppm <= 4 * SS_CC_PPM);
}

int ss_cc_params_check(const struct ss_cc_params *p)
{
	const struct ss_cc_dctcp_rate_params *dr = &p->dctcp_rate;
	const struct ss_cc_timely_params *t = &p->timely;

	if (!cc_rate_bounds_ok(dr->init_rate, dr->min_rate, dr->max_rate) ||
	    dr->step > SS_CC_RATE_LIMIT || dr->g_ppm == 0 || dr->g_ppm > SS_CC_PPM ||
	    dr->alpha_init_ppm > SS_CC_PPM || dr->loss_md_ppm > SS_CC_PPM ||
	    !cc_cap_ok(dr->cap_ppm) || dr->host_per_rtt > 1)
		return -EINVAL;
	if (p->dctcp_win.g_ppm == 0 || p->dctcp_win.g_ppm > SS_CC_PPM ||
	    p->dctcp_win.alpha_init_ppm > SS_CC_PPM || p->dctcp_win.max_cwnd == 0)
		return -EINVAL;
	if (!cc_rate_bounds_ok(t->init_rate, t->min_rate, t->max_rate) ||
	    t->delta > SS_CC_RATE_LIMIT / 64 || t->t_low_us == 0 || t->t_low_us >= t->t_high_us ||
	    t->ewma_ppm == 0 || t->ewma_ppm > SS_CC_PPM || t->beta_ppm > SS_CC_PPM ||
	    t->hai_mult == 0 || t->hai_mult > 64 || t->loss_md_ppm > SS_CC_PPM ||
	    !cc_cap_ok(t->cap_ppm))
		return -EINVAL;
	/* C in [0.001, 10] segments/s^3 (cubic.c overflow bounds); β in (0, 1). */
	if (p->cubic.c_ppm < 1000 || p->cubic.c_ppm > 10 * SS_CC_PPM ||
	    p->cubic.beta_ppm == 0 || p->cubic.beta_ppm >= SS_CC_PPM || p->cubic.max_cwnd == 0)
		return -EINVAL;
	if (p->newreno.max_cwnd == 0)
		return -EINVAL;
	if (!cc_rate_bounds_ok(p->bbr.init_rate, p->bbr.min_rate, p->bbr.max_rate))
		return -EINVAL;
	if (p->interval_rtts == 0 || p->interval_min_us == 0 || p->interval_init_us == 0)
		return -EINVAL;
	return 0;
}

static const struct ss_cc_ops *const cc_algorithms[] = {
	&ss_cc_dctcp_rate_ops, /* first: the default */
	&ss_cc_dctcp_win_ops,
	&ss_cc_timely_ops,
	&ss_cc_cubic_ops,
	&ss_cc_newreno_ops,
	&ss_cc_bbr_ops, /* after the others: the default and the order stay */
};

#define CC_N_ALGORITHMS (sizeof(cc_algorithms) / sizeof(cc_algorithms[0]))

const struct ss_cc_ops *ss_cc_find(const char *name)
{
	if (!name)
		return NULL;
	for (unsigned i = 0; i < CC_N_ALGORITHMS; i++)
		if (strcmp(cc_algorithms[i]->name, name) == 0)
			return cc_algorithms[i];
	return NULL;
}

const struct ss_cc_ops *ss_cc_default(void)
{
	return cc_algorithms[0];
}

const struct ss_cc_ops *ss_cc_at(unsigned i)
{
	return i < CC_N_ALGORITHMS ? cc_algorithms[i] : NULL;
}

uint32_t ss_cc_interval_us(const struct ss_cc_params *p, uint32_t srtt_us)
{
	uint64_t iv;

	if (srtt_us == 0)
		return p->interval_init_us;
	iv = (uint64_t)p->interval_rtts * srtt_us;
	if (iv < p->interval_min_us)
		iv = p->interval_min_us;
	return iv > UINT32_MAX ? UINT32_MAX : (uint32_t)iv;
}

void ss_cc_sample_fill(struct ss_cc_sample *s, const struct ss_cc_counters *prev,
		       const struct ss_cc_counters *cur, uint32_t interval_us,
		       uint32_t srtt_us, uint32_t rtt_us, uint32_t inflight, uint32_t mss)
{
	s->interval_us = interval_us;
	s->acked_bytes = (uint32_t)(cur->acked_bytes - prev->acked_bytes);
	s->ecn_bytes = (uint32_t)(cur->ecn_bytes - prev->ecn_bytes);
	s->sent_bytes = (uint32_t)(cur->sent_bytes - prev->sent_bytes);
	s->fast_retx = cur->fast_retx - prev->fast_retx;
	s->timeouts = cur->timeouts - prev->timeouts;
	s->rate_limited = cur->rate_limited - prev->rate_limited;
	s->win_limited = cur->win_limited - prev->win_limited;
	s->srtt_us = srtt_us;
	s->rtt_us = rtt_us;
	s->inflight = inflight;
	s->unsent = 0;
	s->mss = mss;
	s->path_rate = 0;
	/* A torn read could show more marked than acked bytes: clamp. */
	if (s->ecn_bytes > s->acked_bytes)
		s->ecn_bytes = s->acked_bytes;
}

uint64_t cc_bytes_per_s(uint64_t bytes, uint64_t us)
{
	uint64_t r;

	if (us == 0)
		return 0;
	/* bytes * 10^6 fits in 64 bits below 2^44 bytes. */
	if (bytes < (UINT64_C(1) << 44))
		r = bytes * 1000000u / us;
	else
		r = bytes / us * 1000000u;
	return r < SS_CC_RATE_LIMIT ? r : SS_CC_RATE_LIMIT;
}

uint64_t cc_rate_send_cap(uint64_t rate, const struct ss_cc_sample *s, uint32_t cap_ppm,
			  uint64_t floor, uint32_t *flags)
{
	uint64_t cap;

	/* The pacer held it back: it sent at its rate, and what the interval
	 * saw of that is lumpy (sends come in pacer quanta, a few per
	 * interval at a short RTT), so it is no measure of its demand. */
	if (cap_ppm == 0 || s->sent_bytes == 0 || s->interval_us == 0 || s->rate_limited)
		return rate;
	cap = cc_mul_ppm(cc_bytes_per_s(s->sent_bytes, s->interval_us), cap_ppm);
	if (cap < floor)
		cap = floor;
	if (rate <= cap)
		return rate;
	*flags |= SS_CC_OUT_CAPPED;
	return cap;
}

uint64_t cc_rate_reno_step(const struct ss_cc_sample *s)
{
	uint64_t srtt = s->srtt_us, interval = s->interval_us;

	if (!srtt)
		return 0;
	if (interval > 10000000u) /* 10 s: no overflow below */
		interval = 10000000u;
	return (uint64_t)s->mss * interval * 1000000u / (srtt * srtt);
}

uint32_t cc_dctcp_alpha(uint32_t alpha, uint32_t g_ppm, uint64_t acked, uint64_t ecn)
{
	uint64_t m = (ecn >= acked ? acked : ecn) * SS_CC_PPM / acked;

	return (uint32_t)(((uint64_t)alpha * (SS_CC_PPM - g_ppm) + m * g_ppm) / SS_CC_PPM);
}

uint32_t cc_initial_window(uint32_t mss)
{
	uint64_t lo = cc_u64_max(2ull * mss, 14600);

	return (uint32_t)cc_u64_min(10ull * mss, lo);
}

void cc_reno_grow(uint32_t *cwnd, uint32_t ssthresh, uint32_t *acc, uint64_t acked,
		  uint32_t mss, uint32_t max_cwnd)
{
	uint64_t w = *cwnd, a = *acc;

	if (w < ssthresh) {
		uint64_t ss = cc_u64_min(acked, ssthresh - w);

		w += ss;
		acked -= ss;
	}
	if (w >= ssthresh && acked) {
		a += acked;
		/* One MSS per cwnd of acked bytes.  Bounded: an interval acks a
		 * few windows at most; anything beyond 64 is not credible. */
		for (unsigned n = 0; a >= w && n < 64; n++) {
			a -= w;
			w += mss;
		}
		if (a >= w)
			a = w - 1;
	}
	if (w > max_cwnd)
		w = max_cwnd;
	*cwnd = (uint32_t)w;
	*acc = (uint32_t)a;
}
