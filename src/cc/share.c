/* share.c - one dctcp-rate controller per remote host, split among its flows (RFC 3124, RFC 9040). */
#include "cc/cc_int.h"

#include <string.h>

/*
 * Why (docs/congestion.md "Host-shared control"): flows to one host that
 * each run their own controller see the same marks, yet cut at different
 * moments, and one runs ahead of the other for a few hundred ms.  One
 * controller for the host cuts all of them at once, and every flow gets
 * the same share of its rate.
 *
 * The aggregate stands for n flows (n: the distinct flows that added a
 * sample since the last run), so it is as aggressive as n TCPs would be
 * together, no more and no less (see cc.h):
 *   - send-rate cap: R <= cap x the aggregate's sent rate, unless some
 *     flow was held back by its pacer (it used its rate); never below
 *     n x init_rate, what n new flows would start at (cc_rate_send_cap());
 *   - alpha from the aggregate's marked bytes (RFC 8257 §3.3);
 *   - a signal: the flows that saw a loss cut by loss_md, those with marks
 *     by alpha/2, the others step:
 *     R = R (1 - (n_loss x loss_md + n_mark x alpha/2) / n) + n_calm x step;
 *   - slow start: R += the aggregate's delivery rate, at most doubling;
 *   - additive increase: R += n x step (n: the flows with bytes acked,
 *     in flight or waiting to be sent, as a slow flow's ACKs fall in
 *     other runs and a paced one sends in few of them; the idle others
 *     hold), the step at most an eighth of the share (as
 *     dctcp-rate's is of the path's mean rate); after unmarked loss,
 *     max(step, a window TCP's increase); scaled to the run's length
 *     where one flow at the share would have a longer interval;
 *   - R within [n x min_rate, n x max_rate].
 * Aggregate rates are n times the flows' mean rate over the samples
 * (bytes over the sum of the samples' lengths): the flows' intervals are
 * one length but not in phase, so a host interval may hold two samples of
 * one flow and one of another.
 *
 * Water-filling: a flow that was held back neither by its pacer nor by
 * its own window (2 RTTs of its rate: held by it, the RTT grew) did not
 * use its rate (application-limited, or held by the peer's window); its
 * demand is cap x its sent rate, at least init_rate, as the send-rate cap
 * gives one flow.  A
 * demand below the last level counts as "small": the level is then
 * (R - small demands) / (other flows), at least R / n, and each flow is
 * paced at min(its demand, level).  One pass, no sorting: a demand that
 * crosses the level is classified anew at the flow's next sample.
 */

#define HOST_DLV_SEGS 16  /* the least a delivery rate is measured over ... */
#define HOST_LDLV_SEGS 48 /* ... and the longer one the step's bound uses */
#define HOST_STEP_DLV_PPM 1050000 /* no step while R > 1.05 x the delivered rate */

static uint64_t cc_mul_n(uint64_t x, uint64_t n)
{
	if (n && x > SS_CC_RATE_LIMIT / n)
		return SS_CC_RATE_LIMIT;
	return x * n;
}

/* The aggregate's delivery rate (host_per_rtt): the larger of the last two
 * measurements (BBR's max filter: ACKs that come in bunches, and stalls of
 * the fast path, make a window's rate an underestimate; at 32 flows one
 * such window cut R by 57 %), or "unknown" (the rate limit) before any. */
static uint64_t host_delivered(const struct ss_cc_host *h, uint64_t all)
{
	if (!h->dlv_last)
		return SS_CC_RATE_LIMIT;
	return cc_mul_n(cc_u64_max(h->dlv_last, h->dlv_prev), all);
}

/*
 * Whether R is above 1.05 x the aggregate's delivery rate over the longer
 * windows (HOST_LDLV_SEGS), the mean of the last two.  Not
 * host_delivered(): over 16 segments (one or two runs at 100 Mbit/s)
 * bunched ACKs read 0.2-1.9x the link, the larger of two reads high, and
 * R at 1.05x that sat at 1.1x the link at 32 flows.  No measurement yet:
 * not above.
 */
static bool host_above_delivered(const struct ss_cc_host *h, uint64_t rate, uint64_t all)
{
	uint64_t dlv;

	if (!h->ldlv_last)
		return false;
	dlv = h->ldlv_prev ? (h->ldlv_last + h->ldlv_prev) / 2 : h->ldlv_last;
	return rate > cc_mul_ppm(cc_mul_n(dlv, all), HOST_STEP_DLV_PPM);
}

/* The active flows without a signal in this run: they step. */
static uint64_t host_calm(const struct ss_cc_host *h, uint64_t lost, uint64_t marked)
{
	return h->n_active > lost + marked ? h->n_active - lost - marked : 0;
}

static void host_reset_acc(struct ss_cc_host *h)
{
	h->acked = h->ecn = h->sent = 0;
	h->sample_us = h->join_rate = h->small_sum = 0;
	h->n = h->n_small = h->n_loss = h->n_mark = h->n_samples = h->n_active = 0;
	h->rate_limited = 0;
	h->win_limited = 0;
	h->run_us = 0;
}

void ss_cc_host_init(struct ss_cc_host *h, const struct ss_cc_params *p)
{
	memset(h, 0, sizeof(*h));
	h->alpha = p->dctcp_rate.alpha_init_ppm;
	h->epoch = 1;
	h->slow_start = 1;
	h->fresh = 1;
}

void ss_cc_host_restart(struct ss_cc_host *h, const struct ss_cc_params *p)
{
	uint32_t epoch = h->epoch + 1;

	ss_cc_host_init(h, p);
	h->epoch = epoch ? epoch : 1;
}

void ss_cc_host_add(struct ss_cc_host *h, const struct ss_cc_params *pp,
		    struct ss_cc_share_flow *f, const struct ss_cc_sample *s, uint64_t flow_rate)
{
	const struct ss_cc_dctcp_rate_params *p = &pp->dctcp_rate;
	uint64_t demand = 0;

	if (f->epoch != h->epoch) {
		f->epoch = h->epoch;
		f->lost = 0;
		f->active = 0;
		f->demand = 0;
		h->n++;
		h->join_rate = cc_u64_min(h->join_rate + cc_u64_min(flow_rate, SS_CC_RATE_LIMIT),
					  SS_CC_RATE_LIMIT);
	} else if (f->demand) {
		/* A second sample in one host interval: classify it anew. */
		if (h->n_small && h->small_sum >= f->demand) {
			h->small_sum -= f->demand;
			h->n_small--;
		}
		f->demand = 0;
	}
	if ((s->acked_bytes || s->inflight || s->unsent) && !f->active) {
		f->active = 1;
		h->n_active++;
	}
	h->acked += s->acked_bytes;
	h->ecn += s->ecn_bytes;
	h->sent += s->sent_bytes;
	h->sample_us += s->interval_us;
	h->n_samples++;
	if (s->mss > h->mss)
		h->mss = s->mss;
	/* Its worst signal in this host interval: a loss (2), marks (1). */
	if ((s->fast_retx || s->timeouts) && f->lost < 2) {
		if (f->lost == 1)
			h->n_mark--;
		f->lost = 2;
		h->n_loss++;
	} else if (s->ecn_bytes && f->lost == 0) {
		f->lost = 1;
		h->n_mark++;
	}
	if (s->rate_limited) {
		h->rate_limited++;
		return;
	}
	/* Held by its own window, 2 RTTs of its rate (stack_cc.c): the RTT
	 * grew, which is congestion, not a lack of data.  Not a demand, and
	 * no send-rate cap for the aggregate. */
	if (s->win_limited) {
		h->win_limited++;
		return;
	}
	/* Did not use its rate: its demand, as the send-rate cap sees it
	 * (which has nothing to measure when nothing was sent). */
	if (p->cap_ppm == 0 || s->sent_bytes == 0)
		return;
	demand = cc_mul_ppm(cc_bytes_per_s(s->sent_bytes, s->interval_us), p->cap_ppm);
	demand = cc_u64_max(demand, p->init_rate); /* >= min_rate (ss_cc_params_check) */
	if (demand < h->level) {
		f->demand = demand;
		h->small_sum += demand;
		h->n_small++;
	}
}

/* One flow's additive step at the share @rate / @n: dctcp-rate's, at most
 * an eighth of the share; after unmarked loss at least a window TCP's. */
static uint64_t host_step(const struct ss_cc_host *h, const struct ss_cc_dctcp_rate_params *p,
			  uint64_t rate, uint64_t n, uint32_t srtt_us, uint32_t flow_iv_us)
{
	uint64_t step = p->step, share = rate / n, run_us = h->sample_us / h->n_samples;

	if (share / 8 < step)
		step = cc_u64_max(share / 8, 1);
	if (h->loss_mode) {
		struct ss_cc_sample s;

		memset(&s, 0, sizeof(s));
		s.interval_us = (uint32_t)cc_u64_min(h->sample_us / h->n_samples, UINT32_MAX);
		s.srtt_us = srtt_us;
		s.mss = h->mss;
		step = cc_u64_max(step, cc_rate_reno_step(&s));
	}
	/* A flow at the share would step once per flow_iv_us: in a shorter
	 * run, that fraction of it (the same gain per second). */
	if (flow_iv_us && run_us < flow_iv_us)
		step = cc_u64_max(step * run_us / flow_iv_us, 1);
	return step;
}

static void host_out(const struct ss_cc_host *h, uint32_t flags, struct ss_cc_out *out)
{
	out->rate_bps = h->rate;
	out->cwnd = 0;
	out->flags = SS_CC_OUT_RATE | flags | (h->slow_start ? SS_CC_OUT_SLOW_START : 0);
}

void ss_cc_host_run(struct ss_cc_host *h, const struct ss_cc_params *pp, uint32_t srtt_us,
		    uint32_t flow_iv_us, uint32_t members, struct ss_cc_out *out)
{
	const struct ss_cc_dctcp_rate_params *p = &pp->dctcp_rate;
	uint64_t n = h->n, rate, big, all;
	uint32_t flags = 0;

	if (n == 0) {
		host_out(h, SS_CC_OUT_HELD, out);
		return;
	}
	/* R is the rate of all the members, whether or not their intervals
	 * ended in this run: the flows' intervals are not in phase (and
	 * after a stall of the fast path they end together), so n varies
	 * from run to run, and R / n paced every member at up to
	 * members / n times its share. */
	all = members > n ? members : n;
	if (h->fresh) {
		h->fresh = 0;
		h->rate = cc_rate_clamp(all == n ? h->join_rate : cc_mul_n(h->join_rate / n, all),
					p->min_rate, SS_CC_RATE_LIMIT);
	}
	rate = h->rate;
	/* The cap measures a lack of data: not when a flow was held by its
	 * pacer (it used its rate) or, with host_per_rtt, by its window
	 * (the RTT grew: a 4 ms stall of the fast path capped R from
	 * 9 MB/s to 1.5 MB/s at 2 flows). */
	if (!h->rate_limited && !(p->host_per_rtt && h->win_limited) && p->cap_ppm && h->sent &&
	    h->sample_us) {
		uint64_t cap = cc_mul_ppm(cc_mul_n(cc_bytes_per_s(h->sent, h->sample_us), all),
					  p->cap_ppm);

		cap = cc_u64_max(cap, cc_mul_n(p->init_rate, all));

		if (rate > cap) {
			rate = cap;
			flags |= SS_CC_OUT_CAPPED;
		}
	}
	if (p->host_per_rtt) {
		/* The observation window (RFC 8257 §3.3): alpha once per RTT
		 * of data, from the window's marked fraction; it also ends at
		 * a cut, so the cut's alpha holds the marks that caused it. */
		bool react = (h->n_loss || h->n_mark) && h->hold_us == 0;
		uint64_t el = h->run_us ? h->run_us : h->sample_us / h->n_samples;

		h->w_acked += h->acked;
		h->w_ecn += h->ecn;
		h->w_us += el;
		h->d_acked += h->acked;
		h->d_sample_us += h->sample_us;
		h->hold_us = h->hold_us > el ? h->hold_us - el : 0;
		if (h->w_us >= srtt_us || react) {
			if (h->w_acked && (h->w_ecn || !h->slow_start))
				h->alpha = cc_dctcp_alpha(h->alpha, p->g_ppm, h->w_acked, h->w_ecn);
			/* A delivery rate is measured over whole windows that
			 * hold HOST_DLV_SEGS segments or more in all: 32 flows
			 * at 1.5 Mbit/s ack a few segments per RTT, and in slow
			 * start an RTT is a few runs of 2 segments each.  The
			 * longer windows are whole short ones. */
			if (h->d_sample_us && h->d_acked >= (uint64_t)HOST_DLV_SEGS * h->mss) {
				h->dlv_prev = h->dlv_last;
				h->dlv_last = cc_bytes_per_s(h->d_acked, h->d_sample_us);
				h->l_acked += h->d_acked;
				h->l_sample_us += h->d_sample_us;
				h->d_acked = h->d_sample_us = 0;
				if (h->l_acked >= (uint64_t)HOST_LDLV_SEGS * h->mss) {
					h->ldlv_prev = h->ldlv_last;
					h->ldlv_last = cc_bytes_per_s(h->l_acked, h->l_sample_us);
					h->l_acked = h->l_sample_us = 0;
				}
			}
			h->w_acked = h->w_ecn = h->w_us = 0;
		}
		if (h->ecn)
			h->loss_mode = 0;
		if (react) {
			/* One cut per RTT of data, from what the path delivered
			 * over the last window when R is above it (as TCP cuts
			 * from the flight, not from cwnd): a rate has no ACK
			 * clock, and R at 1.4x the link cut by alpha/2 stayed
			 * above it, the queue kept growing and the marks went
			 * on for several cuts (docs/congestion.md). */
			uint64_t lost = cc_u64_min(h->n_loss, n), marked = cc_u64_min(h->n_mark, n - lost);
			uint64_t cut = lost * p->loss_md_ppm + marked * (h->alpha / 2);
			uint64_t calm = host_calm(h, lost, marked);
			uint64_t step = host_step(h, p, rate, all, srtt_us, flow_iv_us), base = rate;

			base = cc_u64_min(base, host_delivered(h, all));
			rate = cc_rate_cut(base, cut / n) + cc_mul_n(step, calm);
			h->slow_start = 0;
			h->loss_mode |= !h->ecn;
			h->hold_us = srtt_us;
			flags |= SS_CC_OUT_REDUCED;
		} else if (h->n_loss || h->n_mark || !h->acked) {
			/* Signals on data sent before the last cut: held. */
			flags |= SS_CC_OUT_HELD;
		} else if (h->slow_start) {
			/* At most twice the measured delivery rate, as TCP's
			 * slow start doubles per RTT of ACKs: by the run's
			 * delivery rate alone R went from 2.4 to 13 times the
			 * link in 20 ms at 8 flows (drops before the first
			 * marks came back). */
			uint64_t delivered = cc_mul_n(cc_bytes_per_s(h->acked, h->sample_us), all);
			uint64_t dlv2 = cc_mul_n(host_delivered(h, all), 2);

			rate += cc_u64_min(delivered, rate);
			if (rate > dlv2)
				rate = cc_u64_max(dlv2, h->rate);
		} else if (host_above_delivered(h, rate, all)) {
			/* R is above what the path delivered: the flows
			 * cannot use it (the link or a busy fast path holds
			 * them; the pacer still does too, so the cap on the
			 * sent rate does not apply).  No step: R above the
			 * link only fills the queue until the marks come.
			 * At 2x the delivered rate R ran to 1.9x the link at
			 * 8 flows (p99 backlog 47 KB against the 45 KB
			 * bound); at 1.2x the larger of the last two
			 * measurements, to 1.23x at 32 flows (50 KB). */
			flags |= SS_CC_OUT_HELD;
		} else {
			rate += cc_mul_n(host_step(h, p, rate, all, srtt_us, flow_iv_us), h->n_active);
		}
		goto clamp;
	}
	if (h->acked && (h->ecn || !h->slow_start))
		h->alpha = cc_dctcp_alpha(h->alpha, p->g_ppm, h->acked, h->ecn);

	if (h->ecn)
		h->loss_mode = 0;
	if (h->n_loss || h->n_mark) {
		/* As n flows at the share would: those that lost cut by
		 * loss_md, those with marks by alpha/2, the others step. */
		uint64_t lost = cc_u64_min(h->n_loss, n), marked = cc_u64_min(h->n_mark, n - lost);
		uint64_t cut = lost * p->loss_md_ppm + marked * (h->alpha / 2);
		uint64_t calm = host_calm(h, lost, marked), step = host_step(h, p, rate, all, srtt_us, flow_iv_us);

		rate = cc_rate_cut(rate, cut / n) + cc_mul_n(step, calm);
		h->slow_start = 0;
		h->loss_mode |= !h->ecn;
		flags |= SS_CC_OUT_REDUCED;
	} else if (!h->acked) {
		flags |= SS_CC_OUT_HELD;
	} else if (h->slow_start) {
		uint64_t delivered = cc_mul_n(cc_bytes_per_s(h->acked, h->sample_us), all);

		rate += cc_u64_min(delivered, rate);
	} else {
		/* Each flow that had bytes acknowledged steps; the others hold. */
		rate += cc_mul_n(host_step(h, p, rate, all, srtt_us, flow_iv_us), h->n_active);
	}
clamp:
	h->rate = cc_rate_clamp(rate, cc_mul_n(p->min_rate, all),
				cc_u64_min(cc_mul_n(p->max_rate, all), SS_CC_RATE_LIMIT));

	/* The water level: what is left once the small demands are met, over
	 * the other members, and never below an equal split. */
	big = all - cc_u64_min(h->n_small, all);
	if (big == 0) {
		h->level = h->rate;
	} else {
		uint64_t lvl = h->rate > h->small_sum ? (h->rate - h->small_sum) / big : 0;

		h->level = cc_u64_max(lvl, h->rate / all);
	}
	h->n_last = (uint32_t)all;
	h->epoch = h->epoch + 1 ? h->epoch + 1 : 1;
	host_reset_acc(h);
	host_out(h, flags, out);
}

uint64_t ss_cc_host_share(const struct ss_cc_host *h, const struct ss_cc_params *pp,
			  const struct ss_cc_share_flow *f)
{
	const struct ss_cc_dctcp_rate_params *p = &pp->dctcp_rate;
	uint64_t r = h->level;

	if (h->fresh)
		return 0;
	if (f->demand && f->demand < r)
		r = f->demand;
	return cc_rate_clamp(r, p->min_rate, p->max_rate);
}
