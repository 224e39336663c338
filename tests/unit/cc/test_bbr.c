/* test_bbr.c - BBR v1 on per-interval samples: startup, drain, the gain cycle, random loss, timeouts, app-limited samples, RTprop ageing, bounds. */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

/* Intervals of 1000 us: @acked bytes are a delivery rate of acked x 1000
 * B/s, i.e. @acked kB/s (the ring's unit).  RTT 500 us, MSS 1000, the
 * pacer held the flow back (not application-limited). */
static struct ss_cc_sample bbr_sample(uint64_t acked, uint32_t inflight)
{
	struct ss_cc_sample s = cc_sample(1000, acked, 0);

	s.srtt_us = 500;
	s.rtt_us = 500;
	s.inflight = inflight;
	s.rate_limited = 1;
	return s;
}

static void step(union ss_cc_state *st, struct ss_cc_out *out, uint64_t acked, uint32_t inflight)
{
	struct ss_cc_sample s = bbr_sample(acked, inflight);

	ops->on_interval(st, &prm, &s, out);
}

/* A flow in PROBE_BW at phase @cycle with all 8 ring slots at @bw_units
 * kB/s and RTprop 500 us. */
static void steady(union ss_cc_state *st, struct ss_cc_out *out, uint32_t bw_units, uint8_t cycle)
{
	ops->init(st, &prm, 1000, out);
	for (unsigned i = 0; i < SS_CC_BBR_BW_SLOTS; i++)
		st->bbr.bw[i] = bw_units;
	st->bbr.mode = SS_CC_BBR_PROBE_BW;
	st->bbr.cycle = cycle;
	st->bbr.min_rtt_us = 500;
	st->bbr.rate = (uint64_t)bw_units * 1000;
}

static void test_init(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	CHECK_STR(ops->name, "bbr");
	CHECK(sizeof(struct ss_cc_bbr) <= 64);
	ops->init(&st, &prm, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000); /* init_rate: no RTT yet */
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_STARTUP);

	/* Nothing acknowledged and no RTT: held at init_rate. */
	s = bbr_sample(0, 0);
	s.srtt_us = s.rtt_us = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START | SS_CC_OUT_HELD);

	/* An RTT and still no delivery: one initial window (10 x 1000 B)
	 * per srtt (500 us) = 20 000 000 B/s. */
	step(&st, &out, 0, 0);
	CHECK_EQ_U64(out.rate_bps, 20000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	/* Once a delivery sample exists, an empty interval holds. */
	step(&st, &out, 1000, 0);
	CHECK_EQ_U64(out.rate_bps, 20000000); /* 2.885 x 1e6 is less: never falls in STARTUP */
	step(&st, &out, 0, 0);
	CHECK_EQ_U64(out.rate_bps, 20000000);
	CHECK(out.flags & SS_CC_OUT_HELD);

	/* At a 1 us RTT and 9000 B MSS the initial-window rate (18 000 B /
	 * 1 us) is above max_rate: clamped. */
	ops->init(&st, &prm, 9000, &out);
	s = bbr_sample(0, 0);
	s.srtt_us = s.rtt_us = 1;
	s.mss = 9000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 12500000000ull);

	/* A first sample far below the initial rate (37 bytes in 1 ms, an
	 * application-limited cookie) does not lower it. */
	ops->init(&st, &prm, 1000, &out);
	s = bbr_sample(37, 0);
	s.rate_limited = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000);
	CHECK_EQ_U64(st.bbr.bw[0], 37); /* 37 000 B/s, kB/s */
}

/* STARTUP to DRAIN to PROBE_BW on a scripted path whose delivery rate
 * follows the rate until it plateaus at 4.5 MB/s; then the gain cycle. */
static void test_startup_drain_cycle(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	/* 1.25 x, 0.75 x, 6 x 1 x 4.5e6 */
	static const uint64_t cycle[8] = {5625000, 3375000, 4500000, 4500000,
					  4500000, 4500000, 4500000, 4500000};

	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 1000, 20000);  /* 1 MB/s delivered: 2.885390 x */
	CHECK_EQ_U64(out.rate_bps, 2885390);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(st.bbr.full_bw, 1000);
	step(&st, &out, 2000, 20000);
	CHECK_EQ_U64(out.rate_bps, 5770780);
	step(&st, &out, 4000, 20000);
	CHECK_EQ_U64(out.rate_bps, 11541560);
	CHECK_EQ_U64(st.bbr.full_bw, 4000);
	/* 4.5 MB/s: below 1.25 x 4 MB/s, the first interval without growth. */
	step(&st, &out, 4500, 20000);
	CHECK_EQ_U64(out.rate_bps, 12984255); /* 4.5e6 x 2.885390 */
	CHECK_EQ_U64(st.bbr.full_bw_cnt, 1);
	CHECK_EQ_U64(st.bbr.full_bw, 4000);
	step(&st, &out, 4500, 20000);
	CHECK_EQ_U64(out.rate_bps, 12984255);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(st.bbr.full_bw_cnt, 2);
	/* The third: DRAIN, at 1 / 2.885 (0.346574) of BtlBw (the max, 4.5). */
	step(&st, &out, 4400, 20000);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	CHECK_EQ_U64(out.rate_bps, 1559583);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);
	/* BDP = 4.5 MB/s x 500 us = 2250 B: 2251 in flight is above it. */
	step(&st, &out, 4500, 2251);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	CHECK_EQ_U64(out.rate_bps, 1559583);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE);
	/* 1499 in flight: PROBE_BW; (4500 + 1499) mod 7 = 0, phase 0. */
	step(&st, &out, 4500, 1499);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_PROBE_BW);
	CHECK_EQ_U64(st.bbr.cycle, 0);
	CHECK_EQ_U64(out.rate_bps, 5625000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE);
	/* Two full cycles, one phase per interval. */
	for (unsigned i = 1; i < 17; i++) {
		step(&st, &out, 4500, 2000);
		CHECK_EQ_U64(out.rate_bps, cycle[i % 8]);
		CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | (i % 8 == 1 ? SS_CC_OUT_REDUCED : 0));
	}
}

static void test_drain_bounded_and_phase(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	/* DRAIN with the flight never at the BDP: PROBE_BW after 3 intervals
	 * (the one that entered DRAIN and two more at the drain gain). */
	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 4000, 100000);
	for (int i = 0; i < 3; i++)
		step(&st, &out, 4000, 100000);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	CHECK_EQ_U64(out.rate_bps, 1386296); /* 4e6 x 0.346574 */
	step(&st, &out, 4000, 100000);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	step(&st, &out, 4000, 100000);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	/* (4000 + 100000) mod 7 = 1: phase 2 (1.0), never the 0.75 phase. */
	step(&st, &out, 4000, 100000);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_PROBE_BW);
	CHECK_EQ_U64(st.bbr.cycle, 2);
	CHECK_EQ_U64(out.rate_bps, 4000000);

	/* Residue 6: phase 7 (1.0), then the probe. */
	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 4000, 100000);
	for (int i = 0; i < 3; i++)
		step(&st, &out, 4000, 100000);
	step(&st, &out, 4000, 5); /* 4005 mod 7 = 1 ... */
	CHECK_EQ_U64(st.bbr.cycle, 2);
	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 4000, 100000);
	for (int i = 0; i < 3; i++)
		step(&st, &out, 4000, 100000);
	step(&st, &out, 4000, 10); /* 4010 mod 7 = 6: phase 7 */
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_PROBE_BW);
	CHECK_EQ_U64(st.bbr.cycle, 7);
	CHECK_EQ_U64(out.rate_bps, 4000000);
	step(&st, &out, 4000, 1000);
	CHECK_EQ_U64(out.rate_bps, 5000000);
}

/* Random loss: fast retransmits in every interval change nothing. */
static void test_random_loss(void)
{
	union ss_cc_state a, b;
	struct ss_cc_out oa, ob;
	bool same = true;

	steady(&a, &oa, 4500, 0);
	steady(&b, &ob, 4500, 0);
	for (int i = 0; i < 200; i++) {
		struct ss_cc_sample s = bbr_sample(4500, 2250);

		ops->on_interval(&a, &prm, &s, &oa);
		s.fast_retx = 1 + (uint32_t)(i % 3);
		ops->on_interval(&b, &prm, &s, &ob);
		same = same && oa.rate_bps == ob.rate_bps && oa.flags == ob.flags;
		same = same && ob.rate_bps >= 3375000;
	}
	CHECK(same);
	CHECK_EQ_U64(b.bbr.mode, SS_CC_BBR_PROBE_BW);
	/* ECN is no signal either. */
	{
		struct ss_cc_sample s = bbr_sample(4500, 2250);

		steady(&a, &oa, 4500, 2);
		s.ecn_bytes = 4500;
		ops->on_interval(&a, &prm, &s, &oa);
		CHECK_EQ_U64(oa.rate_bps, 4500000);
	}
}

static void test_timeout(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	/* PROBE_BW at 4.5 MB/s; a timeout in an interval that delivered
	 * 1 MB/s: the filter holds only that, the rate drops to it, STARTUP. */
	steady(&st, &out, 4500, 3);
	s = bbr_sample(1000, 20000);
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED | SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_STARTUP);
	CHECK_EQ_U64(st.bbr.bw[0], 1000);
	for (unsigned i = 1; i < SS_CC_BBR_BW_SLOTS; i++)
		CHECK_EQ_U64(st.bbr.bw[i], 0);
	/* Then STARTUP regrows from it. */
	step(&st, &out, 1000, 20000);
	CHECK_EQ_U64(out.rate_bps, 2885390);

	/* Nothing delivered: the floor, min_rate. */
	steady(&st, &out, 4500, 3);
	s = bbr_sample(0, 20000);
	s.timeouts = 2;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 125000);
	CHECK_EQ_U64(st.bbr.bw[0], 125);

	/* A timeout never raises the rate: at the 0.75 phase (3.375 MB/s)
	 * with 4.5 MB/s delivered it stays at 3.375. */
	steady(&st, &out, 4500, 0);
	step(&st, &out, 4500, 2000); /* phase 1: 3 375 000 */
	CHECK_EQ_U64(out.rate_bps, 3375000);
	s = bbr_sample(4500, 20000);
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 3375000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
}

static void test_app_limited(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	/* Twenty application-limited intervals at 1 MB/s: BtlBw stays 4.5. */
	steady(&st, &out, 4500, 2);
	for (int i = 0; i < 20; i++) {
		s = bbr_sample(1000, 1000);
		s.rate_limited = 0;
		ops->on_interval(&st, &prm, &s, &out);
	}
	for (unsigned i = 0; i < SS_CC_BBR_BW_SLOTS; i++)
		CHECK_EQ_U64(st.bbr.bw[i], 4500);
	CHECK_EQ_U64(st.bbr.cycle, (2 + 20) % 8); /* the cycle goes on */
	CHECK_EQ_U64(out.rate_bps, 4500000);       /* phase 6: 1.0 */
	/* One above the estimate counts, limited or not. */
	s = bbr_sample(5000, 1000);
	s.rate_limited = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 5000000);       /* phase 7: 1.0 x 5 MB/s */
	/* Data left unsent or a full window: not application-limited, so a
	 * lower sample goes into the ring. */
	s = bbr_sample(1000, 1000);
	s.rate_limited = 0;
	s.unsent = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.bw[(st.bbr.bw_next + SS_CC_BBR_BW_SLOTS - 1) % SS_CC_BBR_BW_SLOTS], 1000);
	s.unsent = 0;
	s.win_limited = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.bw[(st.bbr.bw_next + SS_CC_BBR_BW_SLOTS - 1) % SS_CC_BBR_BW_SLOTS], 1000);

	/* In STARTUP, application-limited intervals do not end it. */
	ops->init(&st, &prm, 1000, &out);
	step(&st, &out, 1000, 0);
	for (int i = 0; i < 10; i++) {
		s = bbr_sample(1000, 0);
		s.rate_limited = 0;
		ops->on_interval(&st, &prm, &s, &out);
	}
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_STARTUP);
	CHECK_EQ_U64(st.bbr.full_bw_cnt, 0);
	CHECK_EQ_U64(out.rate_bps, 2885390);
}

/* The max filter forgets a sample after 8 intervals that count. */
static void test_bw_window(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	steady(&st, &out, 3000, 2);
	st.bbr.bw[st.bbr.bw_next] = 4500; /* the oldest slot */
	for (int i = 0; i < 8; i++) {
		step(&st, &out, 3000, 1000);
		/* phases 3..7 at 1.0, then 0 (1.25), 1 (0.75), 2 */
		if (i == 0)
			CHECK_EQ_U64(out.rate_bps, 3000000); /* the 4.5 went first */
	}
	CHECK_EQ_U64(out.rate_bps, 3000000);

	steady(&st, &out, 3000, 2);
	st.bbr.bw[(st.bbr.bw_next + 1) % SS_CC_BBR_BW_SLOTS] = 4500; /* second oldest */
	step(&st, &out, 3000, 1000); /* phase 3 */
	CHECK_EQ_U64(out.rate_bps, 4500000);
	step(&st, &out, 3000, 1000); /* phase 4: the 4.5 is overwritten */
	CHECK_EQ_U64(out.rate_bps, 3000000);
}

static void test_min_rtt(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	steady(&st, &out, 3000, 2);
	st.bbr.min_rtt_us = 0;
	step(&st, &out, 3000, 1000);
	CHECK_EQ_U64(st.bbr.min_rtt_us, 500);
	/* Larger samples, 1 s apart: kept for 10 s, then replaced. */
	for (int i = 0; i < 10; i++) {
		s = bbr_sample(3000, 1000);
		s.interval_us = 1000000;
		s.acked_bytes = 3000000; /* 3 MB/s */
		s.rtt_us = s.srtt_us = 800;
		ops->on_interval(&st, &prm, &s, &out);
		CHECK_EQ_U64(st.bbr.min_rtt_us, i < 9 ? 500 : 800);
	}
	CHECK_EQ_U64(st.bbr.min_rtt_age_us, 0);
	/* A smaller one replaces it at once; the smaller of rtt and srtt. */
	s = bbr_sample(3000, 1000);
	s.rtt_us = 700;
	s.srtt_us = 600;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.min_rtt_us, 600);
	s.rtt_us = 0;
	s.srtt_us = 450;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.min_rtt_us, 450);
	CHECK_EQ_U64(st.bbr.min_rtt_age_us, 0);
	s.srtt_us = 460;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.min_rtt_us, 450);
	CHECK_EQ_U64(st.bbr.min_rtt_age_us, 1000);

	/* The RTprop sets DRAIN's target: at 4 MB/s and 450 us, BDP 1800. */
	st.bbr.mode = SS_CC_BBR_DRAIN;
	st.bbr.full_bw_cnt = 0;
	for (unsigned i = 0; i < SS_CC_BBR_BW_SLOTS; i++)
		st.bbr.bw[i] = 4000;
	s = bbr_sample(4000, 1801);
	s.srtt_us = s.rtt_us = 460;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_DRAIN);
	s.inflight = 1800;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_PROBE_BW);
}

static void test_bounds(void)
{
	struct ss_cc_params q = prm;
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	/* max_rate 5 MB/s: STARTUP stops there. */
	q.bbr.max_rate = 5000000;
	ops->init(&st, &q, 1000, &out);
	s = bbr_sample(1000, 0);
	ops->on_interval(&st, &q, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 2885390);
	s = bbr_sample(2000, 0);
	ops->on_interval(&st, &q, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 5000000);
	s = bbr_sample(5000, 0);
	ops->on_interval(&st, &q, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 5000000);

	/* min_rate: the 0.75 phase of 150 kB/s (112 500) is floored. */
	steady(&st, &out, 150, 0);
	step(&st, &out, 150, 0);
	CHECK_EQ_U64(out.rate_bps, 125000);
	step(&st, &out, 150, 0);
	CHECK_EQ_U64(out.rate_bps, 150000);
	/* A delivery rate under 1 kB/s is 0 in the ring: still the floor. */
	steady(&st, &out, 0, 2);
	st.bbr.rate = 125000;
	s = bbr_sample(1, 0);
	s.interval_us = 2000; /* 500 B/s */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 125000);
}

/*
 * A fluid path: a 10 MB/s bottleneck, 500 us RTT, and 10 % random loss
 * after it (every interval has fast retransmits; what is acknowledged is
 * 90 % of what the bottleneck served).  From a new flow: the rate settles
 * at the goodput with the gain cycle around it, the queue stays small.
 */
static void test_lossy_path(void)
{
	const uint64_t cap = 10000000, iv = 1000;
	union ss_cc_state st;
	struct ss_cc_out out;
	uint64_t rate, q = 0, sum = 0, qmax = 0;

	ops->init(&st, &prm, 1000, &out);
	rate = out.rate_bps;
	for (int i = 0; i < 200; i++) {
		uint64_t offered = rate * iv / 1000000, served = cc_u64_min(offered + q, cap * iv / 1000000);
		struct ss_cc_sample s;

		q = q + offered - served;
		s = bbr_sample(served * 9 / 10, (uint32_t)(cap * 500 / 1000000 + q));
		s.fast_retx = 3;
		ops->on_interval(&st, &prm, &s, &out);
		rate = out.rate_bps;
		if (i >= 200 - 64) {
			sum += rate;
			qmax = cc_u64_max(qmax, q);
		}
	}
	CHECK_EQ_U64(st.bbr.mode, SS_CC_BBR_PROBE_BW);
	/* The estimate is the goodput, 9 MB/s; the mean over 8 cycles the
	 * cycle's mean gain, 1.0. */
	CHECK_EQ_U64(sum / 64, 9000000);
	CHECK(qmax <= 1250); /* a 1.25 probe over 1 ms: 1.25 x 9 - 10 = 1.25 kB */
}

int main(void)
{
	ss_cc_params_default(&prm);
	ops = ss_cc_find("bbr");
	CHECK(ops != NULL);
	if (!ops)
		return check_done("test_bbr");
	test_init();
	test_startup_drain_cycle();
	test_drain_bounded_and_phase();
	test_random_loss();
	test_timeout();
	test_app_limited();
	test_bw_window();
	test_min_rtt();
	test_bounds();
	test_lossy_path();
	return check_done("test_bbr");
}
