/* bbr.c - BBR v1 (Cardwell et al., ACM Queue 2016) on per-interval samples: a rate from the path's bandwidth, blind to random loss. */
#include "cc/cc_int.h"

#include <string.h>

/*
 * BBR (Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson, "BBR:
 * Congestion-Based Congestion Control", ACM Queue 14(5), 2016;
 * draft-cardwell-iccrg-bbr-congestion-control-00) models the path by two
 * numbers, the bottleneck bandwidth BtlBw and the round-trip propagation
 * time RTprop, and paces at gain x BtlBw.  Loss is not a signal: a path
 * with random loss keeps its rate, where a loss-based law (cubic,
 * newreno, dctcp-rate's loss cut) collapses at a few percent.
 *
 * Here the model is fed once per control interval (about 2 RTT) instead
 * of per ACK:
 *
 *  - Delivery rate of an interval: acked_bytes / interval_us.  BtlBw is
 *    the maximum over the last SS_CC_BBR_BW_SLOTS (8) intervals that
 *    count: one full gain cycle, about 16 RTT (BBR: 10 RTT, a cycle and a
 *    bit), so the sample of a 1.25 probe stays in the filter until the
 *    next probe replaces it.  Samples are kept in kB/s (1000 B/s) so the
 *    ring fits union ss_cc_state.  An application-limited interval (the
 *    flow was held back neither by its pacer nor by its window, and had
 *    nothing left unsent) only counts if its rate is at least BtlBw: it
 *    shows what the application offered, not what the path can take
 *    (BBR treats its application-limited samples so).  While a flow is
 *    application-limited the filter does not age.
 *  - RTprop: the smallest RTT seen (the interval's latest sample or srtt,
 *    whichever is lower) in the last 10 s of intervals; older, the next
 *    sample replaces it.  No ProbeRTT phase: the estimate only sets
 *    DRAIN's target (the flight is bounded by the service from srtt, not
 *    from a BDP), so an estimate inflated by a standing queue costs a
 *    later exit from DRAIN (which is bounded anyway), not a larger queue.
 *  - STARTUP: gain 2/ln 2 = 2.885, and the rate never falls (Linux's
 *    tcp_bbr.c likewise), so a first small sample does not undo the
 *    initial rate.  It ends when BtlBw has not grown by 25 % in 3
 *    intervals that were not application-limited.
 *  - DRAIN: gain ln 2 / 2 (1 / 2.885) until the bytes in flight are at
 *    most BDP = BtlBw x RTprop, at most 3 intervals: the service's
 *    inflight is snd_max - snd_una, which counts SACKed bytes above a
 *    hole, and under random loss may stay above the BDP for reasons that
 *    are not a queue.
 *  - PROBE_BW: the gain cycle 1.25, 0.75, 1 x 6, one phase per interval.
 *    The phase it starts at is taken from the interval's sample ((acked +
 *    inflight) mod 7, never the 0.75 phase) where BBR draws it at random:
 *    flows that leave DRAIN together need not probe together, and the
 *    same samples still give the same outputs.
 *  - Loss: fast retransmits are ignored, as BBR v1 does.  A retransmission
 *    timeout is taken as the model having failed (the path changed, or
 *    the flow overran it): the filter is emptied and restarted from the
 *    interval's delivery rate (at least min_rate), the rate drops to that
 *    (never rises on a timeout) and the flow re-enters STARTUP to find the
 *    bandwidth again.  BBR v1 keeps its model and leaves the reaction to
 *    TCP's window after an RTO; a rate-paced flow has no such window.
 *  - ECN is ignored.
 *  - An interval with nothing acknowledged (and no timeout) holds
 *    everything (HELD), except before the first delivery sample with an
 *    RTT known: then the rate is one initial window (RFC 6928) per srtt.
 *    A new flow, with no RTT yet, starts at init_rate (as dctcp-rate).
 *  - The rate is clamped to [min_rate, max_rate].  No send-rate cap (TAS
 *    §3.2): the filter already keeps an application-limited flow's
 *    samples from lowering or raising its estimate wrongly.
 *
 * Not here: ProbeRTT, the per-ACK delivery-rate sampler (acked_bytes is
 * snd_una's advance: goodput, retransmissions excluded, so at loss p the
 * estimate is about (1 - p) of the bottleneck), the cwnd_gain window (the
 * service bounds the flight to a few RTTs of the rate), the long-term
 * policer detection of Linux, and BBR v2's loss and ECN response.
 */

#define BBR_HIGH_GAIN 2885390u   /* 2 / ln 2, ppm */
#define BBR_DRAIN_GAIN 346574u   /* ln 2 / 2 = 1 / 2.885, ppm */
#define BBR_FULL_BW_NUM 5u       /* STARTUP goes on while BtlBw grows by */
#define BBR_FULL_BW_DEN 4u       /* 5/4 (25 %) ... */
#define BBR_FULL_BW_CNT 3u       /* ... within this many intervals */
#define BBR_DRAIN_MAX 3u         /* DRAIN lasts at most this many intervals */
#define BBR_MIN_RTT_WIN_US 10000000u /* RTprop filter: 10 s */
#define BBR_UNIT 1000u           /* B/s per unit of the bw ring */
#define BBR_CYCLE_LEN 8u

static const uint32_t bbr_cycle_gain[BBR_CYCLE_LEN] = {
	1250000, 750000, 1000000, 1000000, 1000000, 1000000, 1000000, 1000000,
};

/* BtlBw in ring units (kB/s); 0: no sample. */
static uint32_t bbr_bw_units(const struct ss_cc_bbr *st)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < SS_CC_BBR_BW_SLOTS; i++)
		if (st->bw[i] > m)
			m = st->bw[i];
	return m;
}

static void bbr_record(struct ss_cc_bbr *st, uint64_t rate)
{
	/* rate <= SS_CC_RATE_LIMIT (2^40): / 1000 fits 32 bits. */
	st->bw[st->bw_next] = (uint32_t)(rate / BBR_UNIT);
	st->bw_next = (uint8_t)((st->bw_next + 1) % SS_CC_BBR_BW_SLOTS);
}

static void bbr_update_min_rtt(struct ss_cc_bbr *st, const struct ss_cc_sample *s)
{
	uint32_t rtt = s->rtt_us;
	uint64_t age = (uint64_t)st->min_rtt_age_us + s->interval_us;

	if (s->srtt_us && (!rtt || s->srtt_us < rtt))
		rtt = s->srtt_us;
	if (age > UINT32_MAX)
		age = UINT32_MAX;
	if (rtt && (!st->min_rtt_us || rtt <= st->min_rtt_us || age >= BBR_MIN_RTT_WIN_US)) {
		st->min_rtt_us = rtt;
		age = 0;
	}
	st->min_rtt_age_us = (uint32_t)age;
}

static void bbr_out(const struct ss_cc_bbr *st, uint32_t flags, struct ss_cc_out *out)
{
	out->rate_bps = st->rate;
	out->cwnd = 0;
	out->flags = SS_CC_OUT_RATE | flags |
		     (st->mode == SS_CC_BBR_STARTUP ? SS_CC_OUT_SLOW_START : 0);
}

static void bbr_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
		     struct ss_cc_out *out)
{
	struct ss_cc_bbr *st = &u->bbr;

	(void)mss;
	memset(st, 0, sizeof(*st));
	st->rate = p->bbr.init_rate;
	st->mode = SS_CC_BBR_STARTUP;
	bbr_out(st, 0, out);
}

static void bbr_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
			    const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_bbr_params *p = &pp->bbr;
	struct ss_cc_bbr *st = &u->bbr;
	bool app_limited = !s->rate_limited && !s->win_limited && !s->unsent;
	uint64_t prev = st->rate, rate, d, bw;
	uint32_t flags = 0, bw_u;

	bbr_update_min_rtt(st, s);

	if (s->timeouts) {
		d = cc_u64_max(cc_bytes_per_s(s->acked_bytes, s->interval_us), p->min_rate);
		memset(st->bw, 0, sizeof(st->bw));
		st->bw_next = 0;
		bbr_record(st, d);
		st->mode = SS_CC_BBR_STARTUP;
		st->full_bw = 0;
		st->full_bw_cnt = 0;
		st->cycle = 0;
		rate = cc_u64_min(d, prev);
		goto done;
	}
	if (!s->acked_bytes) {
		if (!bbr_bw_units(st) && s->srtt_us) {
			rate = cc_bytes_per_s(cc_initial_window(s->mss), s->srtt_us);
		} else {
			rate = prev;
			flags |= SS_CC_OUT_HELD;
		}
		goto done;
	}

	d = cc_bytes_per_s(s->acked_bytes, s->interval_us);
	if (!app_limited || d / BBR_UNIT >= bbr_bw_units(st))
		bbr_record(st, d);
	bw_u = bbr_bw_units(st);
	bw = (uint64_t)bw_u * BBR_UNIT;

	switch (st->mode) {
	case SS_CC_BBR_STARTUP:
		if (app_limited)
			break;
		if ((uint64_t)bw_u * BBR_FULL_BW_DEN >= (uint64_t)st->full_bw * BBR_FULL_BW_NUM) {
			st->full_bw = bw_u;
			st->full_bw_cnt = 0;
		} else if (++st->full_bw_cnt >= BBR_FULL_BW_CNT) {
			st->mode = SS_CC_BBR_DRAIN;
			st->full_bw_cnt = 0;
		}
		break;
	case SS_CC_BBR_DRAIN:
		st->full_bw_cnt++;
		break;
	default:
		st->cycle = (uint8_t)((st->cycle + 1) % BBR_CYCLE_LEN);
		break;
	}
	if (st->mode == SS_CC_BBR_DRAIN) {
		/* kB/s x us / 1000 = bytes; both factors < 2^32. */
		uint64_t bdp = (uint64_t)bw_u * st->min_rtt_us / 1000u;

		if (s->inflight <= bdp || st->full_bw_cnt >= BBR_DRAIN_MAX) {
			uint32_t r = (uint32_t)((s->acked_bytes + s->inflight) % (BBR_CYCLE_LEN - 1));

			st->mode = SS_CC_BBR_PROBE_BW;
			st->cycle = (uint8_t)(r ? r + 1 : 0); /* never the 0.75 phase */
		}
	}

	switch (st->mode) {
	case SS_CC_BBR_STARTUP:
		rate = cc_u64_max(prev, cc_mul_ppm(bw, BBR_HIGH_GAIN));
		break;
	case SS_CC_BBR_DRAIN:
		rate = cc_mul_ppm(bw, BBR_DRAIN_GAIN);
		break;
	default:
		rate = cc_mul_ppm(bw, bbr_cycle_gain[st->cycle]);
		break;
	}
done:
	st->rate = cc_rate_clamp(rate, p->min_rate, p->max_rate);
	if (st->rate < prev)
		flags |= SS_CC_OUT_REDUCED;
	bbr_out(st, flags, out);
}

void ss_cc_bbr_adopt(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
		     uint32_t cwnd, uint32_t srtt_us, struct ss_cc_out *out)
{
	struct ss_cc_bbr *st = &u->bbr;

	bbr_init(u, p, mss, out);
	/* Its window per smoothed RTT: what the path carried so far, from
	 * which STARTUP goes on probing. */
	if (srtt_us)
		st->rate = cc_rate_clamp((uint64_t)cwnd * 1000000u / srtt_us, p->bbr.min_rate,
					 p->bbr.max_rate);
	bbr_out(st, 0, out);
}

const struct ss_cc_ops ss_cc_bbr_ops = {
	.name = "bbr",
	.rate_based = true,
	.ecn_per_ack = false,
	.init = bbr_init,
	.on_interval = bbr_on_interval,
};
