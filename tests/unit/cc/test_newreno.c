/* test_newreno.c - NewReno per interval (RFC 5681, 6582, 3465) and classic ECN (RFC 3168). */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

static uint32_t mss = 1000;

static struct ss_cc_sample ev(uint64_t acked, uint64_t ecn, uint32_t frx, uint32_t rto)
{
	struct ss_cc_sample s = cc_sample(200, acked, ecn);

	s.mss = mss;
	s.fast_retx = frx;
	s.timeouts = rto;
	return s;
}

static void test_slow_start_and_halving(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	CHECK_STR(ops->name, "newreno");
	mss = 1460;
	ops->init(&st, &prm, 1460, &out);
	CHECK_EQ_U64(out.cwnd, 14600);
	CHECK_EQ_U64(st.newreno.ssthresh, UINT32_MAX);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_SLOW_START);

	/* Slow start: the window doubles when a whole window is acked. */
	s = ev(14600, 0, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 29200);
	s = ev(29200, 0, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 58400);

	/* Fast retransmit: ssthresh = cwnd / 2 (RFC 5681 eq. 4), cwnd deflated
	 * to it at the end of recovery (RFC 6582 §3.2 step 3). */
	s = ev(10000, 0, 1, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 29200);
	CHECK_EQ_U64(st.newreno.ssthresh, 29200);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_REDUCED);

	/* Three fast retransmits in one interval are one episode: one halving. */
	s = ev(10000, 0, 3, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 14600);

	/* Timeout: ssthresh = cwnd / 2, cwnd = 1 MSS (loss window). */
	s = ev(0, 0, 0, 1);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 1460);
	CHECK_EQ_U64(st.newreno.ssthresh, 7300);
	/* Second timeout: 2 MSS floor for ssthresh. */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 1460);
	CHECK_EQ_U64(st.newreno.ssthresh, 2920);
	mss = 1000;
}

/* Congestion avoidance: exactly one MSS per window acked: a line. */
static void test_congestion_avoidance_line(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	ops->init(&st, &prm, 1000, &out);
	st.newreno.cwnd = 10000;
	st.newreno.ssthresh = 10000;
	for (uint32_t i = 1; i <= 50; i++) {
		struct ss_cc_sample s = ev(st.newreno.cwnd, 0, 0, 0);

		ops->on_interval(&st, &prm, &s, &out);
		CHECK_EQ_U64(out.cwnd, 10000 + 1000 * i);
		CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW);
	}
	/* Half a window per interval: one MSS every two intervals. */
	for (uint32_t i = 1; i <= 4; i++) {
		struct ss_cc_sample s = ev(st.newreno.cwnd / 2, 0, 0, 0);

		ops->on_interval(&st, &prm, &s, &out);
		CHECK_EQ_U64(out.cwnd, 60000 + 1000 * (i / 2));
	}
}

/* Loss-based sawtooth: with a loss every 20 intervals the window swings
 * between W and W/2 with W stable (the Reno steady state). */
static void test_sawtooth(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	uint32_t peaks[4];
	unsigned np = 0;

	ops->init(&st, &prm, 1000, &out);
	st.newreno.cwnd = 20000;
	st.newreno.ssthresh = 20000;
	for (int i = 1; i <= 80; i++) {
		struct ss_cc_sample s = ev(st.newreno.cwnd, 0, i % 20 == 0, 0);

		if (i % 20 == 0 && np < 4)
			peaks[np++] = st.newreno.cwnd;
		ops->on_interval(&st, &prm, &s, &out);
	}
	CHECK_EQ_U64(np, 4);
	/* Each cycle: from P/2 grow 19 MSS, so P = P/2 + 19000 -> 38000. */
	CHECK_EQ_U64(peaks[0], 39000);
	CHECK_EQ_U64(peaks[1], 38500);
	CHECK_EQ_U64(peaks[2], 38250);
	CHECK_EQ_U64(peaks[3], 38125);
}

static void test_ecn(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	st.newreno.cwnd = 40000;
	st.newreno.ssthresh = 40000;
	s = ev(40000, 1, 0, 0); /* any mark: halve (RFC 3168 §6.1.2) */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 20000);
	CHECK(out.flags & SS_CC_OUT_REDUCED);

	prm.newreno.ecn = 0; /* marks ignored: CA growth instead */
	s = ev(20000, 20000, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 21000);
	ss_cc_params_default(&prm);
}

static void test_hold_and_max(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	s = ev(0, 0, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 10000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_SLOW_START | SS_CC_OUT_HELD);

	prm.newreno.max_cwnd = 15000;
	s = ev(10000, 0, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 15000);
	ss_cc_params_default(&prm);
}

int main(void)
{
	ops = ss_cc_find("newreno");
	ss_cc_params_default(&prm);
	test_slow_start_and_halving();
	test_congestion_avoidance_line();
	test_sawtooth();
	test_ecn();
	test_hold_and_max();
	return check_done("test_newreno");
}
