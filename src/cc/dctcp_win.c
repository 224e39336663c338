/* dctcp_win.c - DCTCP on a congestion window (RFC 8257), one step per control interval. */
#include "cc/cc_int.h"

/*
 * RFC 8257 with the control interval as its observation window (§3.3:
 * "approximately one RTT"; ours is about two):
 *
 *  - alpha = (1 - g) * alpha + g * M, M the fraction of acknowledged bytes
 *    whose ACKs carried ECE (§3.3 steps 4-5);
 *  - timeout: as Reno (§3.5, RFC 5681 §3.1): ssthresh = max(cwnd/2,
 *    2*MSS), cwnd = 1 MSS (the loss window);
 *  - fast retransmit: as Reno/NewReno (§3.5, RFC 6582 §3.2): ssthresh =
 *    max(cwnd/2, 2*MSS) and, once the episode ends, cwnd = ssthresh: the
 *    control loop sees the episode after the fact, so it sets that at once;
 *  - marks: cwnd = cwnd * (1 - alpha/2) (§3.3 step 8), at least 2 MSS; the
 *    result is also ssthresh, so slow start ends;
 *  - otherwise Reno growth (§3.4 keeps RFC 5681's increase): slow start
 *    below ssthresh, then one MSS per window acked (RFC 3465 byte
 *    counting).
 *
 * Each reaction happens at most once per interval, which also gives RFC
 * 8257 §3.3's "once per window of data".  cwnd stands in for FlightSize
 * in RFC 5681 eq. 4: the control loop sees the flight only at interval ends.
 */

static void dctcp_win_out(const struct ss_cc_dctcp_win *st, uint32_t flags,
			  struct ss_cc_out *out)
{
	out->rate_bps = 0;
	out->cwnd = st->cwnd;
	out->flags = SS_CC_OUT_WINDOW | flags | (st->cwnd < st->ssthresh ? SS_CC_OUT_SLOW_START : 0);
}

static void dctcp_win_init(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
			   struct ss_cc_out *out)
{
	struct ss_cc_dctcp_win *st = &u->dctcp_win;

	st->cwnd = cc_initial_window(mss);
	if (st->cwnd > p->dctcp_win.max_cwnd)
		st->cwnd = p->dctcp_win.max_cwnd;
	st->ssthresh = UINT32_MAX; /* "arbitrarily high", RFC 5681 §3.1 */
	st->ca_acc = 0;
	st->alpha = p->dctcp_win.alpha_init_ppm;
	dctcp_win_out(st, 0, out);
}

void ss_cc_dctcp_win_adopt(union ss_cc_state *u, const struct ss_cc_params *p, uint32_t mss,
			   uint32_t cwnd, struct ss_cc_out *out)
{
	struct ss_cc_dctcp_win *st = &u->dctcp_win;

	st->cwnd = cwnd > 2u * mss ? cwnd : 2u * mss;
	if (st->cwnd > p->dctcp_win.max_cwnd)
		st->cwnd = p->dctcp_win.max_cwnd;
	/* The window came from another algorithm's probing: go on from it in
	 * congestion avoidance, not in slow start (RFC 5681 §3.1 sets
	 * ssthresh from what the path showed; here it is the window itself). */
	st->ssthresh = st->cwnd;
	st->ca_acc = 0;
	st->alpha = p->dctcp_win.alpha_init_ppm;
	dctcp_win_out(st, 0, out);
}

static void dctcp_win_on_interval(union ss_cc_state *u, const struct ss_cc_params *pp,
				  const struct ss_cc_sample *s, struct ss_cc_out *out)
{
	const struct ss_cc_dctcp_win_params *p = &pp->dctcp_win;
	struct ss_cc_dctcp_win *st = &u->dctcp_win;
	uint32_t flags = 0;

	if (s->acked_bytes)
		st->alpha = cc_dctcp_alpha(st->alpha, p->g_ppm, s->acked_bytes, s->ecn_bytes);

	if (s->timeouts || s->fast_retx) {
		cc_reno_loss(&st->cwnd, &st->ssthresh, &st->ca_acc, s->timeouts, s->mss);
		flags |= SS_CC_OUT_REDUCED;
	} else if (s->ecn_bytes) {
		uint64_t w = cc_rate_cut(st->cwnd, st->alpha / 2);

		st->cwnd = (uint32_t)cc_u64_max(w, 2ull * s->mss);
		st->ssthresh = st->cwnd;
		st->ca_acc = 0;
		flags |= SS_CC_OUT_REDUCED;
	} else if (!s->acked_bytes) {
		flags |= SS_CC_OUT_HELD;
	} else {
		cc_reno_grow(&st->cwnd, st->ssthresh, &st->ca_acc, s->acked_bytes, s->mss,
			     p->max_cwnd);
	}
	if (st->cwnd > p->max_cwnd)
		st->cwnd = p->max_cwnd;
	dctcp_win_out(st, flags, out);
}

const struct ss_cc_ops ss_cc_dctcp_win_ops = {
	.name = "dctcp-win",
	.rate_based = false,
	.ecn_per_ack = true,
	.init = dctcp_win_init,
	.on_interval = dctcp_win_on_interval,
};
