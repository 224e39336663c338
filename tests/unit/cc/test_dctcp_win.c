/* test_dctcp_win.c - DCTCP on windows (RFC 8257): slow start, alpha-proportional cut, Reno growth, loss. */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

static void step(union ss_cc_state *st, struct ss_cc_out *out, uint64_t acked, uint64_t ecn)
{
	struct ss_cc_sample s = cc_sample(200, acked, ecn);

	ops->on_interval(st, &prm, &s, out);
}

/* A walk through every reaction, MSS 1000, values worked by hand. */
static void test_walk(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	CHECK_STR(ops->name, "dctcp-win");
	ops->init(&st, &prm, 1000, &out);
	CHECK_EQ_U64(out.cwnd, 10000); /* RFC 6928 IW for MSS 1000 */
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_SLOW_START);

	step(&st, &out, 10000, 0);     /* slow start: + bytes acked */
	CHECK_EQ_U64(out.cwnd, 20000);
	CHECK_EQ_U64(st.dctcp_win.alpha, 937500);

	step(&st, &out, 20000, 20000); /* all marked: alpha 937500*15/16 + 1/16 */
	CHECK_EQ_U64(st.dctcp_win.alpha, 941406); /* 878906.25 + 62500 */
	CHECK_EQ_U64(out.cwnd, 20000 - 9414);     /* cut 470703 ppm: 9414.06 */
	CHECK_EQ_U64(st.dctcp_win.ssthresh, 10586);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_REDUCED);

	/* Congestion avoidance: one MSS per cwnd of acked bytes. */
	step(&st, &out, 10586, 0);
	CHECK_EQ_U64(out.cwnd, 11586);
	CHECK_EQ_U64(st.dctcp_win.ca_acc, 0);
	step(&st, &out, 5000, 0);
	CHECK_EQ_U64(out.cwnd, 11586);
	CHECK_EQ_U64(st.dctcp_win.ca_acc, 5000);
	step(&st, &out, 6586, 0);
	CHECK_EQ_U64(out.cwnd, 12586);
	CHECK_EQ_U64(st.dctcp_win.ca_acc, 0);
	/* alpha: 941406 -> 882568 -> 827407 -> 775694 (each * 15/16, floor) */
	CHECK_EQ_U64(st.dctcp_win.alpha, 775694);

	/* A quarter marked: alpha = 727213.125 + 15625; cut 371419 ppm. */
	step(&st, &out, 12000, 3000);
	CHECK_EQ_U64(st.dctcp_win.alpha, 742838);
	CHECK_EQ_U64(out.cwnd, 12586 - 4674); /* 12586 * 0.371419 = 4674.68 */

	/* Fast retransmit: half, at least 2 MSS. */
	s = cc_sample(200, 5000, 0);
	s.fast_retx = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 3956);
	CHECK_EQ_U64(st.dctcp_win.ssthresh, 3956);

	/* Timeout: ssthresh max(1978, 2000), cwnd one MSS. */
	s.fast_retx = 0;
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 1000);
	CHECK_EQ_U64(st.dctcp_win.ssthresh, 2000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_SLOW_START | SS_CC_OUT_REDUCED);

	/* Slow start up to ssthresh, the rest counted toward CA. */
	step(&st, &out, 5000, 0);
	CHECK_EQ_U64(out.cwnd, 3000); /* 1000 -> 2000, then 4000 acked: +1 MSS, 2000 left */
	CHECK_EQ_U64(st.dctcp_win.ca_acc, 2000);

	/* No ACK, no loss: hold. */
	step(&st, &out, 0, 0);
	CHECK_EQ_U64(out.cwnd, 3000);
	CHECK(out.flags & SS_CC_OUT_HELD);
}

static void test_ecn_floor(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_win.cwnd = 2500;
	st.dctcp_win.ssthresh = 2500;
	step(&st, &out, 2500, 2500); /* alpha 1: half = 1250 -> 2 MSS */
	CHECK_EQ_U64(out.cwnd, 2000);
}

/* With alpha = 1 (every byte marked) DCTCP halves like classic ECN; with
 * a small marked fraction it cuts by about half that fraction once alpha
 * has converged (RFC 8257 §3.3: cwnd * (1 - alpha/2)). */
static void test_cut_tracks_fraction(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	prm.dctcp_win.alpha_init_ppm = 0;
	ops->init(&st, &prm, 1000, &out);
	st.dctcp_win.cwnd = 1000000;
	st.dctcp_win.ssthresh = 1000000;
	for (int i = 0; i < 300; i++)
		step(&st, &out, 1000000, 100000); /* 10 % marked */
	CHECK(st.dctcp_win.alpha >= 99984 && st.dctcp_win.alpha <= 100000);
	st.dctcp_win.cwnd = 1000000;
	step(&st, &out, 1000000, 100000);
	/* cut ~5 %: 1e6 * (1 - alpha/2) */
	CHECK(out.cwnd >= 950000 && out.cwnd <= 950008);
	ss_cc_params_default(&prm);
}

static void test_max_cwnd(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	prm.dctcp_win.max_cwnd = 50000;
	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 100000, 0);
	CHECK_EQ_U64(out.cwnd, 50000);
	ss_cc_params_default(&prm);
}

/* Adopting a flow another algorithm ran: its window, in congestion
 * avoidance (ssthresh = cwnd), alpha 1; the first fully marked interval
 * then halves it, as a loss would; at least 2 MSS, at most max_cwnd. */
static void test_adopt(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	ss_cc_dctcp_win_adopt(&st, &prm, 1000, 50000, &out);
	CHECK_EQ_U64(out.cwnd, 50000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW); /* not slow start */
	CHECK_EQ_U64(st.dctcp_win.ssthresh, 50000);
	CHECK_EQ_U64(st.dctcp_win.alpha, 1000000);
	step(&st, &out, 10000, 0); /* unmarked: + 1 MSS per window acked */
	CHECK_EQ_U64(out.cwnd, 50000);
	CHECK_EQ_U64(st.dctcp_win.ca_acc, 10000);
	CHECK_EQ_U64(st.dctcp_win.alpha, 937500);

	ss_cc_dctcp_win_adopt(&st, &prm, 1000, 50000, &out);
	step(&st, &out, 20000, 20000); /* alpha stays 1: cut by half */
	CHECK_EQ_U64(st.dctcp_win.alpha, 1000000);
	CHECK_EQ_U64(out.cwnd, 25000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_REDUCED);

	ss_cc_dctcp_win_adopt(&st, &prm, 1000, 100, &out);
	CHECK_EQ_U64(out.cwnd, 2000);
	ss_cc_dctcp_win_adopt(&st, &prm, 1000, UINT32_MAX, &out);
	CHECK_EQ_U64(out.cwnd, prm.dctcp_win.max_cwnd);
}

int main(void)
{
	ops = ss_cc_find("dctcp-win");
	ss_cc_params_default(&prm);
	test_walk();
	test_ecn_floor();
	test_cut_tracks_fraction();
	test_max_cwnd();
	test_adopt();
	return check_done("test_dctcp_win");
}
