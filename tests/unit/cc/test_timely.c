/* test_timely.c - TIMELY (SIGCOMM'15 Algorithm 1) plus slow start: decisions for rising, falling, low and high RTTs. */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

/* One interval with RTT sample @rtt; the flow sent a lot (no cap). */
static void rtt_step(union ss_cc_state *st, struct ss_cc_out *out, uint32_t rtt)
{
	struct ss_cc_sample s = cc_sample(200, 100000, 0);

	s.sent_bytes = UINT32_MAX; /* a send rate far above any rate here */
	s.rtt_us = rtt;
	s.srtt_us = rtt;
	ops->on_interval(st, &prm, &s, out);
}

/* A flow out of slow start at @rate with minRTT 100 us and an RTT of
 * 100 us so far, gradient 0. */
static void steady(union ss_cc_state *st, struct ss_cc_out *out, uint64_t rate)
{
	ops->init(st, &prm, 1000, out);
	st->timely.rate = rate;
	st->timely.slow_start = 0;
	st->timely.prev_rtt_us = 100;
	st->timely.min_rtt_us = 100;
	st->timely.rtt_diff_ns = 0;
}

static void test_slow_start(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	CHECK_STR(ops->name, "timely");
	ops->init(&st, &prm, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);

	rtt_step(&st, &out, 20);  /* first sample: no gradient yet; low RTT */
	CHECK_EQ_U64(out.rate_bps, 2500000);
	rtt_step(&st, &out, 30);  /* rising but under T_low: still doubling */
	CHECK_EQ_U64(out.rate_bps, 5000000);
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 8750); /* 0.875 * 10 us */
	rtt_step(&st, &out, 30);  /* flat, under T_low */
	CHECK_EQ_U64(out.rate_bps, 10000000);
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 1093); /* 8750 / 8 = 1093.75 */
	rtt_step(&st, &out, 60);  /* above T_low and rising: slow start ends */
	/* rtt_diff = 1093 / 8 + 0.875 * 30000 = 136.625 + 26250; gradient
	 * 26386 / 20000 > 1 -> clamped: cut by beta = 0.8. */
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 26386);
	CHECK_EQ_U64(out.rate_bps, 2000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);
	CHECK_EQ_U64(st.timely.min_rtt_us, 20);
}

static void test_slow_start_exits(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	/* Above T_high: slow start ends with the T_high decrease. */
	ops->init(&st, &prm, 1000, &out);
	rtt_step(&st, &out, 1000);
	/* 1.25e6 * (1 - 0.8 * (1 - 500/1000)) = 1.25e6 * 0.6 */
	CHECK_EQ_U64(out.rate_bps, 750000);
	CHECK(!(out.flags & SS_CC_OUT_SLOW_START));

	/* Within [T_low, T_high] and not rising: keeps doubling. */
	ops->init(&st, &prm, 1000, &out);
	rtt_step(&st, &out, 200);
	rtt_step(&st, &out, 190);
	CHECK_EQ_U64(out.rate_bps, 5000000);
	CHECK(out.flags & SS_CC_OUT_SLOW_START);

	/* A loss ends it. */
	{
		struct ss_cc_sample s = cc_sample(200, 100000, 0);

		s.sent_bytes = UINT32_MAX;
		s.fast_retx = 1;
		ops->on_interval(&st, &prm, &s, &out);
		CHECK_EQ_U64(out.rate_bps, 2500000);
		CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);
	}
}

/* Rising RTT: decrease by beta * normalised gradient. */
static void test_rising(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	steady(&st, &out, 100000000);
	rtt_step(&st, &out, 120);
	/* rtt_diff = 0.875 * 20 us = 17500 ns; gradient 0.175; cut 0.14. */
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 17500);
	CHECK_EQ_U64(out.rate_bps, 86000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);

	rtt_step(&st, &out, 120); /* flat now, but the EWMA is still positive */
	/* rtt_diff = 17500 / 8 = 2187 (truncated); gradient 21870 ppm; cut
	 * 17496 ppm of 86e6 = 1504656. */
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 2187);
	CHECK_EQ_U64(out.rate_bps, 86000000 - 1504656);
}

/* Falling RTT: additive increase, then HAI after hai_thresh in a row. */
static void test_falling_and_hai(void)
{
	static const uint64_t inc[] = {1, 1, 1, 1, 5, 5, 5};
	union ss_cc_state st;
	struct ss_cc_out out;
	uint64_t want = 84495344;

	steady(&st, &out, 84495344);
	st.timely.prev_rtt_us = 120;
	st.timely.rtt_diff_ns = 2187;
	for (unsigned i = 0; i < sizeof(inc) / sizeof(inc[0]); i++) {
		rtt_step(&st, &out, 110); /* falls once, then flat: gradient <= 0 */
		want += inc[i] * 1250000;
		CHECK_EQ_U64(out.rate_bps, want);
		CHECK_EQ_U64(st.timely.neg_count, i + 1);
		CHECK(st.timely.rtt_diff_ns <= 0);
	}
	/* (2187 * 125000 - 10000 * 875000) / 1e6 = -8476.6 -> -8476, then
	 * /8 each step toward zero: -1059, -132, -16, -2, 0, 0. */
	CHECK_EQ_U64(st.timely.rtt_diff_ns, 0);

	/* A positive gradient ends HAI: the count restarts. */
	rtt_step(&st, &out, 111);
	CHECK_EQ_U64(st.timely.neg_count, 0);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	rtt_step(&st, &out, 111);
	CHECK_EQ_U64(st.timely.neg_count, 0); /* 875 / 8 = 109 ns: still rising */
	rtt_step(&st, &out, 110);
	CHECK_EQ_U64(st.timely.neg_count, 1);
}

/* Under T_low: increase by delta whatever the gradient. */
static void test_low(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	steady(&st, &out, 50000000);
	st.timely.prev_rtt_us = 20;
	st.timely.min_rtt_us = 20;
	rtt_step(&st, &out, 45); /* rising fast, but below 50 us */
	CHECK(st.timely.rtt_diff_ns > 0);
	CHECK_EQ_U64(out.rate_bps, 51250000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE);
}

/* Over T_high: decrease by beta * (1 - T_high / rtt) whatever the gradient. */
static void test_high(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	steady(&st, &out, 100000000);
	st.timely.prev_rtt_us = 900;
	rtt_step(&st, &out, 800); /* falling, but above 500 us */
	/* 1 - 500/800 = 0.375; cut 0.3 */
	CHECK_EQ_U64(out.rate_bps, 70000000);
	rtt_step(&st, &out, 2000); /* cut 0.8 * 0.75 = 0.6 */
	CHECK_EQ_U64(out.rate_bps, 28000000);
}

/* A fixed minRTT (the paper's constant) instead of the measured one. */
static void test_fixed_min_rtt(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	prm.timely.min_rtt_us = 200;
	steady(&st, &out, 100000000);
	rtt_step(&st, &out, 120);
	/* gradient 17500 / 200000 = 0.0875; cut 0.07 */
	CHECK_EQ_U64(out.rate_bps, 93000000);
	ss_cc_params_default(&prm);
}

static void test_cap_hold_floor(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	steady(&st, &out, 100000000);
	s = cc_sample(100, 1000, 0);
	s.sent_bytes = 1000;   /* 10 MB/s sent: cap 12 MB/s */
	s.rtt_us = 40;         /* below T_low: + delta after the cap */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 13250000);
	CHECK(out.flags & SS_CC_OUT_CAPPED);

	s.sent_bytes = 0;
	s.rtt_us = 0;          /* no sample: hold */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 13250000);
	CHECK(out.flags & SS_CC_OUT_HELD);

	/* 100 B sent (1 MB/s): the cap stops at the initial rate, 1.25 MB/s,
	 * then + delta. */
	s.sent_bytes = 100;
	s.rtt_us = 40;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000 + prm.timely.delta);
	CHECK(out.flags & SS_CC_OUT_CAPPED);

	steady(&st, &out, 130000);
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 125000);  /* 65000 -> floor */
}

int main(void)
{
	ops = ss_cc_find("timely");
	ss_cc_params_default(&prm);
	test_slow_start();
	test_slow_start_exits();
	test_rising();
	test_falling_and_hai();
	test_low();
	test_high();
	test_fixed_min_rtt();
	test_cap_hold_floor();
	return check_done("test_timely");
}
