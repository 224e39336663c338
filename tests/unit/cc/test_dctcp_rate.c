/* test_dctcp_rate.c - DCTCP on rates (TAS): alpha, slow start by delivery rate, additive increase, proportional decrease, 1.2x cap. */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

/* An interval of @us in which the flow sent exactly at its rate @rate and
 * got @acked bytes acknowledged, @ecn of them marked. */
static struct ss_cc_sample at_rate(uint64_t rate, uint32_t us, uint64_t acked, uint64_t ecn)
{
	struct ss_cc_sample s = cc_sample(us, acked, ecn);

	s.sent_bytes = rate * us / 1000000;
	return s;
}

static void test_init(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;

	CHECK_STR(ops->name, "dctcp-rate");
	ops->init(&st, &prm, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(st.dctcp_rate.alpha, 1000000);
}

/* Slow start: the rate grows by the rate data was acknowledged at in the
 * interval, at most doubling.  While the path delivers everything (here
 * 100 MB/s acknowledged) it doubles; alpha stays at 1 until the first
 * mark.  Once a queue holds the delivery to 5 MB/s (a 40 Mbit/s share),
 * it grows by that much per interval, not exponentially. */
static void test_slow_start(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	uint64_t want = 1250000;

	ops->init(&st, &prm, 1000, &out);
	for (int i = 0; i < 5; i++) {
		struct ss_cc_sample s = at_rate(out.rate_bps, 100, 10000, 0);

		ops->on_interval(&st, &prm, &s, &out);
		want *= 2;
		CHECK_EQ_U64(out.rate_bps, want);
		CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
		CHECK_EQ_U64(st.dctcp_rate.alpha, 1000000);
	}
	CHECK_EQ_U64(out.rate_bps, 40000000);
	for (int i = 0; i < 3; i++) {
		/* Sent at its rate (no cap), 500 bytes acked in 100 us. */
		struct ss_cc_sample s = at_rate(out.rate_bps, 100, 500, 0);

		ops->on_interval(&st, &prm, &s, &out);
		want += 5000000;
		CHECK_EQ_U64(out.rate_bps, want);
		CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	}
	CHECK_EQ_U64(out.rate_bps, 55000000);
	/* The first mark: alpha is updated (1 - g + g * 1 = 1), the rate
	 * halves and slow start is over. */
	struct ss_cc_sample s = at_rate(55000000, 100, 500, 100);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.alpha, 1000000 - 62500 + 62500 * 100 / 500);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);
	CHECK_EQ_U64(st.dctcp_rate.slow_start, 0);
	/* Out of slow start, unmarked intervals decay alpha by 15/16. */
	s = at_rate(out.rate_bps, 100, 500, 0);
	uint32_t a = st.dctcp_rate.alpha;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.alpha, a - a / 16);
}

/* TAS: the rate is first cut to 1.2x the send rate, then the law runs. */
static void test_send_rate_cap(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_rate.rate = 40000000;
	/* 1000 bytes in 100 us = 10 MB/s; cap 12 MB/s; still slow start:
	 * plus the 10 MB/s acknowledged. */
	s = cc_sample(100, 1000, 0);
	s.sent_bytes = 1000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 22000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START | SS_CC_OUT_CAPPED);

	/* Sending at 20.5 MB/s: the cap (24.6 MB/s) does not bind. */
	s.sent_bytes = 2050;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 32000000);
	CHECK(!(out.flags & SS_CC_OUT_CAPPED));

	/* Nothing sent: no measurement, no cap; nothing acked: hold. */
	s.sent_bytes = 0;
	s.acked_bytes = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 32000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START | SS_CC_OUT_HELD);

	/* Held back by its pacer budget (rate_limited): it sent at its rate,
	 * in lumps; no cap.  Held back by its window only: the cap applies. */
	s = cc_sample(100, 1000, 0);
	s.sent_bytes = 1000;
	s.rate_limited = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 42000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
	s.rate_limited = 0;
	s.win_limited = 3;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 22000000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START | SS_CC_OUT_CAPPED);

	/* Cap switched off. */
	prm.dctcp_rate.cap_ppm = 0;
	s = cc_sample(100, 1000, 0);
	s.sent_bytes = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 32000000);
	ss_cc_params_default(&prm);

	/* Little sent (37 B in 632 us, an iperf3 cookie): the cap stops at
	 * the initial rate, 1.25 MB/s, then slow start adds the 58 544 B/s
	 * acknowledged.  A new flow that sent so little keeps its rate. */
	s = cc_sample(632, 37, 0);
	s.sent_bytes = 37;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000 + 58544);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START | SS_CC_OUT_CAPPED);
	ops->init(&st, &prm, 1000, &out);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 1250000 + 58544);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_SLOW_START);
}

/* Marks: rate *= 1 - alpha/2 with alpha updated first; then AI. */
static void test_decrease_and_ai(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_rate.rate = 100000000;
	/* Half the bytes marked: alpha = 1e6 * 15/16 + 5e5 / 16 = 968750;
	 * cut 484375 ppm: 100e6 - 48.4375e6. */
	s = at_rate(100000000, 100, 10000, 5000);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.alpha, 968750);
	CHECK_EQ_U64(out.rate_bps, 51562500);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);

	/* Slow start is over: + 10 Mbit/s per interval, alpha decays.  At
	 * srtt 1 ms a window TCP would gain 1000 B per ms: 1000 * 100 us /
	 * 1 ms = 100 B of window, 100 kB/s, less than the step. */
	s = at_rate(60000000, 100, 10000, 0);
	s.srtt_us = 1000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 52812500);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE);
	CHECK_EQ_U64(st.dctcp_rate.alpha, 908203); /* 968750 * 15/16 = 908203.125 */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 54062500);

	CHECK_EQ_U64(st.dctcp_rate.alpha, 851440); /* 851440.3125 */

	/* One byte in 10000 marked: M = 100 ppm; alpha = 798225 + 6.25. */
	s = at_rate(60000000, 100, 10000, 1);
	s.srtt_us = 1000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.alpha, 798231);
	/* cut alpha/2 = 399115 ppm of 54062500: 21577154.6875 */
	CHECK_EQ_U64(out.rate_bps, 54062500 - 21577154);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);

	/* Many flows share the host's path: the step is at most an eighth of
	 * their mean rate.  Mean 4 MB/s: 500 kB/s, not the 1.25 MB/s step. */
	uint64_t r0 = out.rate_bps;
	s = at_rate(60000000, 100, 10000, 0);
	s.srtt_us = 1000;
	s.path_rate = 4000000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, r0 + 500000);
	/* A mean above 8 steps: the step itself. */
	s.path_rate = 20000000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, r0 + 500000 + 1250000);
}

/* A path that signals by loss (a loss with no mark) gets a window TCP's
 * increase, one MSS per RTT, until the next mark: mss 1448, interval
 * 200 us, srtt 100 us: the window would grow by 1448 * 200 / 100 = 2896 B,
 * 28 960 000 B/s at 100 us.  Without loss, or once marks come, the step. */
static void test_ai_after_loss_follows_reno(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1448, &out);
	st.dctcp_rate.rate = 100000000;
	st.dctcp_rate.slow_start = 0;
	s = at_rate(100000000, 200, 20000, 0);
	s.mss = 1448;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 100000000 + 1250000); /* no loss yet: the step */
	s.fast_retx = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 50625000);
	CHECK_EQ_U64(st.dctcp_rate.loss_mode, 1);
	s.fast_retx = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 50625000 + 28960000);
	/* Without an RTT estimate the step alone. */
	s.srtt_us = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 79585000 + 1250000);
	/* A loss that comes with marks is congestion at a marking queue:
	 * no loss mode.  A mark ends it. */
	s.srtt_us = 100;
	s.fast_retx = 1;
	s.ecn_bytes = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.loss_mode, 0);
	st.dctcp_rate.loss_mode = 1;
	s.fast_retx = 0;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.dctcp_rate.loss_mode, 0);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED);
	/* A loss every second interval (1 % loss at 50 segments per
	 * interval) no longer pins the rate to its floor: from 1 MB/s,
	 * halving then adding the Reno step settles between that step and
	 * twice it (29-58 MB/s, after an increase), far above min_rate. */
	st.dctcp_rate.rate = 1000000;
	s.ecn_bytes = 0;
	for (int i = 0; i < 64; i++) {
		s = at_rate(st.dctcp_rate.rate, 200, 20000, 0);
		s.mss = 1448;
		s.fast_retx = (i % 2) == 0;
		ops->on_interval(&st, &prm, &s, &out);
	}
	CHECK(out.rate_bps > 50000000);
}

static void test_loss(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_rate.rate = 52812500;
	s = at_rate(60000000, 100, 10000, 0);
	s.fast_retx = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 26406250);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_RATE | SS_CC_OUT_REDUCED); /* left slow start */
	s.fast_retx = 0;
	s.timeouts = 1;
	s.acked_bytes = 0; /* a timeout with nothing acked still cuts */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 13203125);
	/* Loss wins over marks in the same interval: one cut, by loss_md. */
	s = at_rate(60000000, 100, 10000, 10000);
	s.fast_retx = 3;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 13203125 - 6601562);
}

static void test_floor_ceiling(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_rate.rate = 200000;
	s = cc_sample(100, 1000, 0);
	s.sent_bytes = 20; /* 200 kB/s */
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 125000); /* 100000 -> floor */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 125000);

	ops->init(&st, &prm, 1000, &out);
	st.dctcp_rate.rate = 8000000000ull;
	s = cc_sample(1000, 10000000, 0);
	s.sent_bytes = 10000000; /* 10 GB/s */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.rate_bps, 12500000000ull); /* 16e9 -> ceiling */
}

/* The EWMA on a recorded sequence of marked fractions, from alpha = 0:
 * worked by hand (each step rounded down) and against the real-valued
 * RFC 8257 formula. */
static void test_alpha_sequence(void)
{
	static const struct {
		uint64_t acked, ecn;
		uint32_t want;
	} seq[] = {
		{10000, 0, 0},
		{8000, 2000, 15625},       /* M = 1/4: 250000 / 16 */
		{6000, 3000, 45898},       /* 15625 * 15/16 + 500000 / 16 = 45898.4375 */
		{1448, 1448, 105529},      /* 45898 * 15/16 + 62500 = 105529.375 */
		{20000, 0, 98933},         /* 105529 * 15/16 = 98933.4375 */
		{3000, 1000, 113583},      /* 98933 * 15/16 + 333333 / 16 = 92749.6875 + 20833.3125 */
	};
	union ss_cc_state st;
	struct ss_cc_out out;
	double ref = 0;

	prm.dctcp_rate.alpha_init_ppm = 0;
	ops->init(&st, &prm, 1000, &out);
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		struct ss_cc_sample s = at_rate(out.rate_bps, 100, seq[i].acked, seq[i].ecn);
		double got;

		ops->on_interval(&st, &prm, &s, &out);
		CHECK_EQ_U64(st.dctcp_rate.alpha, seq[i].want);
		ref = ref * (1 - 1.0 / 16) + (double)seq[i].ecn / (double)seq[i].acked / 16;
		got = st.dctcp_rate.alpha / 1e6;
		CHECK(got <= ref + 1e-9 && got > ref - (i + 1) * 1e-6);
	}
	/* A steady marked fraction: alpha converges to it (from below). */
	for (int i = 0; i < 400; i++) {
		struct ss_cc_sample s = at_rate(out.rate_bps, 100, 10000, 3000);

		ops->on_interval(&st, &prm, &s, &out);
	}
	CHECK(st.dctcp_rate.alpha <= 300000 && st.dctcp_rate.alpha >= 299984);
	ss_cc_params_default(&prm);
}

/*
 * Two backlogged flows through a fluid 10 Gbit/s bottleneck whose queue
 * marks every byte while it holds more than K = 65 packets (the DCTCP
 * paper's 10G threshold): they converge to a fair share, use the link,
 * and keep the queue short.
 */
static void test_two_flows_converge(void)
{
	const int64_t cap = 1250000000, k = 65 * 1500; /* B/s, bytes */
	union ss_cc_state st[2];
	struct ss_cc_out out[2];
	double sum[2] = {0, 0};
	int64_t q = 0, q_max = 0;

	ops->init(&st[0], &prm, 1460, &out[0]);
	ops->init(&st[1], &prm, 1460, &out[1]);
	st[0].dctcp_rate.rate = 1000000000; /* a head start */
	out[0].rate_bps = st[0].dctcp_rate.rate;
	for (int it = 0; it < 6000; it++) {
		int64_t offered = (int64_t)(out[0].rate_bps + out[1].rate_bps);
		bool mark;

		q += (offered - cap) * 200 / 1000000;
		q = q < 0 ? 0 : q;
		mark = q > k;
		for (int f = 0; f < 2; f++) {
			uint64_t sent = out[f].rate_bps * 200 / 1000000;
			struct ss_cc_sample s = cc_sample(200, sent, mark ? sent : 0);

			s.mss = 1460;
			ops->on_interval(&st[f], &prm, &s, &out[f]);
		}
		if (it >= 5000) {
			sum[0] += (double)out[0].rate_bps;
			sum[1] += (double)out[1].rate_bps;
			q_max = q > q_max ? q : q_max;
		}
	}
	/* Jain's index over the last 1000 intervals, utilisation, queue. */
	CHECK((sum[0] + sum[1]) * (sum[0] + sum[1]) / (2 * (sum[0] * sum[0] + sum[1] * sum[1])) >
	      0.99);
	CHECK((sum[0] + sum[1]) / 1000 > 0.9 * (double)cap);
	CHECK((sum[0] + sum[1]) / 1000 < 1.1 * (double)cap);
	CHECK(q_max < 3 * k);
}

int main(void)
{
	ops = ss_cc_find("dctcp-rate");
	ss_cc_params_default(&prm);
	test_init();
	test_slow_start();
	test_send_rate_cap();
	test_decrease_and_ai();
	test_loss();
	test_floor_ceiling();
	test_alpha_sequence();
	test_two_flows_converge();
	test_ai_after_loss_follows_reno();
	return check_done("test_dctcp_rate");
}
