/* test_cubic.c - CUBIC (RFC 9438): K and W(t) against the RFC formula, reductions, fast convergence, Reno-friendly region. */
#include "cc_harness.h"
#include "check.h"

static const struct ss_cc_ops *ops;
static struct ss_cc_params prm;

/* RFC 9438 §4.2 eq. 1 in real numbers, bytes (C = 0.4, t and K in s). */
static double rfc_w(double w_max, double k_s, double t_s, double mss)
{
	double d = t_s - k_s;

	return 0.4 * d * d * d * mss + w_max;
}

static bool near(double got, double want, double tol)
{
	return got >= want - tol && got <= want + tol;
}

/* A flow that has grown to @cwnd in slow start, then loses. */
static void lose_at(union ss_cc_state *st, struct ss_cc_out *out, uint32_t cwnd, uint32_t mss)
{
	struct ss_cc_sample s = cc_sample(200, cwnd, 0);

	ops->init(st, &prm, mss, out);
	st->cubic.cwnd = cwnd;
	s.mss = mss;
	s.fast_retx = 1;
	ops->on_interval(st, &prm, &s, out);
}

static void test_k(void)
{
	struct ss_cc_cubic_params *p = &prm.cubic;
	uint64_t k;

	/* W_max 100 segments, cwnd_epoch 70: K = cbrt(30 / 0.4) s = cbrt(75)
	 * = 4.217163326508746 s. */
	CHECK_EQ_U64(cc_cubic_k_us(p, 1000, 100000, 70000), 4217163);
	/* cbrt(27 / 0.4 * ...) : 0.4 * K^3 = 10.8 segments -> K = 3 s exactly. */
	CHECK_EQ_U64(cc_cubic_k_us(p, 1000, 100000, 89200), 3000000);
	CHECK_EQ_U64(cc_cubic_k_us(p, 1000, 100000, 100000), 0);
	CHECK_EQ_U64(cc_cubic_k_us(p, 1000, 100000, 120000), 0);
	/* Bracketing check on odd numbers: 0.4 * mss * K^3 <= diff < with K+1. */
	k = cc_cubic_k_us(p, 1448, 3000000, 2100000);
	{
		double lo = (double)k / 1e6, hi = (double)(k + 1) / 1e6;

		CHECK(0.4 * 1448 * lo * lo * lo <= 900000.0);
		CHECK(0.4 * 1448 * hi * hi * hi > 900000.0);
	}
}

static void test_window_formula(void)
{
	struct ss_cc_cubic st = {0};
	const double k = 4.217163326508746;

	st.w_max = 100000;
	st.k_us = cc_cubic_k_us(&prm.cubic, 1000, 100000, 70000);
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, 0), 70000);
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, st.k_us), 100000);
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, st.k_us + 1000000), 100400);
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, st.k_us - 1000000), 99600);
	for (uint64_t t = 0; t <= 12000000; t += 12345) {
		double want = rfc_w(100000, k, (double)t / 1e6, 1000);

		CHECK(near((double)cc_cubic_window(&st, &prm.cubic, 1000, t), want, 1.5));
	}
	/* Saturation far out. */
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, UINT64_C(1) << 40), UINT32_MAX);
	st.w_max = 1000;
	st.k_us = 100000000; /* K = 100 s: W(0) would be negative */
	CHECK_EQ_U64(cc_cubic_window(&st, &prm.cubic, 1000, 0), 0);
}

/* §4.6: W_max = cwnd, ssthresh = cwnd = 0.7 cwnd; §4.7 fast convergence. */
static void test_reduction(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	CHECK_STR(ops->name, "cubic");
	lose_at(&st, &out, 100000, 1000);
	CHECK_EQ_U64(out.cwnd, 70000);
	CHECK_EQ_U64(st.cubic.ssthresh, 70000);
	CHECK_EQ_U64(st.cubic.w_max, 100000);
	CHECK_EQ_U64(st.cubic.cwnd_prior, 100000);
	CHECK_EQ_U64(st.cubic.k_us, 4217163);
	CHECK_EQ_U64(st.cubic.w_est, 70000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_REDUCED);

	/* Another loss below W_max: fast convergence W_max = 90000 * 1.7 / 2. */
	st.cubic.cwnd = 90000;
	s = cc_sample(200, 90000, 0);
	s.fast_retx = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.cubic.w_max, 76500);
	CHECK_EQ_U64(out.cwnd, 63000);
	{
		double k = (double)st.cubic.k_us / 1e6, k1 = k + 1e-6;

		/* K^3 = (76500 - 63000) / (0.4 * 1000) = 33.75 */
		CHECK(0.4 * k * k * k * 1000 <= 13500.0 && 0.4 * k1 * k1 * k1 * 1000 > 13500.0);
	}

	/* Same without fast convergence: W_max = cwnd. */
	prm.cubic.fast_convergence = 0;
	lose_at(&st, &out, 100000, 1000);
	st.cubic.cwnd = 90000;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(st.cubic.w_max, 90000);
	ss_cc_params_default(&prm);

	/* ECE is a congestion event too (§4.6). */
	ops->init(&st, &prm, 1000, &out);
	st.cubic.cwnd = 50000;
	s = cc_sample(200, 50000, 10);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 35000);
	/* 2 MSS floor. */
	st.cubic.cwnd = 2500;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 2000);
}

/*
 * Small window, short RTT: the Reno-friendly estimate beats the curve
 * (§4.3).  W_est grows by alpha_cubic = 3 * 0.3 / 1.7 segments per window
 * acked until it reaches cwnd_prior, then by 1.
 */
static void test_reno_friendly(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	double west = 70000;
	int n_after = 0;

	lose_at(&st, &out, 100000, 1000);
	for (int i = 0; i < 40; i++) {
		uint32_t before = out.cwnd;
		struct ss_cc_sample s = cc_sample(200, 2ull * before, 0);

		ops->on_interval(&st, &prm, &s, &out);
		if (west < 100000) {
			west += 0.9 / 1.7 * 1000 * 2;
		} else {
			west += 1000 * 2;
			n_after++;
			CHECK_EQ_U64(out.cwnd - before, 2000); /* alpha_cubic = 1 */
		}
		CHECK_EQ_U64(out.cwnd, st.cubic.w_est);
		CHECK(near(out.cwnd, west, i + 1.0));
		/* ...and the curve is indeed below it. */
		CHECK(cc_cubic_window(&st.cubic, &prm.cubic, 1000, st.cubic.t_us) < st.cubic.w_est);
	}
	CHECK(n_after > 5);
	CHECK_EQ_U64(st.cubic.t_us, 40 * 200);
}

/*
 * Large window, long RTT: the curve wins.  Acking two windows per
 * interval, cwnd reaches target = W_cubic(t + RTT) each interval: concave
 * up to W_max (plateau around t = K), convex after.
 */
static void test_concave_convex(void)
{
	const double k = 9.085602964160698; /* cbrt(300 / 0.4) */
	union ss_cc_state st;
	struct ss_cc_out out;
	bool saw_plateau = false;

	lose_at(&st, &out, 1000000, 1000);
	CHECK_EQ_U64(out.cwnd, 700000);
	for (int i = 1; i <= 100; i++) {
		struct ss_cc_sample s = cc_sample(200000, 2ull * out.cwnd, 0);
		double t = i * 0.2, want;

		s.srtt_us = 100000;
		s.rtt_us = 100000;
		ops->on_interval(&st, &prm, &s, &out);
		want = rfc_w(1000000, k, t + 0.1, 1000);
		CHECK(near(out.cwnd, want, 2.0));
		if (t > 8.5 && t < 9.5)
			saw_plateau = saw_plateau || near(out.cwnd, 1000000, 200);
	}
	CHECK(saw_plateau);
	CHECK(out.cwnd > 1400000); /* t = 20 s: well into the convex region */
}

/* The 1.5 cwnd clamp on the target (§4.2). */
static void test_target_clamp(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	lose_at(&st, &out, 100000, 1000);
	/* Jump far past K: the curve is way up, the step is at most 50 %. */
	st.cubic.t_us = 30000000;
	s = cc_sample(200, 2 * 70000, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 105000);
}

/* §4.8: timeout -> cwnd 1 MSS, slow start to ssthresh; the next epoch
 * has W_max = cwnd_epoch and K = 0 (convex from the start). */
static void test_timeout(void)
{
	union ss_cc_state st;
	struct ss_cc_out out;
	struct ss_cc_sample s;

	ops->init(&st, &prm, 1000, &out);
	CHECK_EQ_U64(out.cwnd, 10000);
	st.cubic.cwnd = 100000;
	s = cc_sample(200, 0, 0);
	s.timeouts = 1;
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 1000);
	CHECK_EQ_U64(st.cubic.ssthresh, 70000);
	CHECK_EQ_U64(out.flags, SS_CC_OUT_WINDOW | SS_CC_OUT_SLOW_START | SS_CC_OUT_REDUCED);

	s = cc_sample(200, 40000, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 41000);
	s = cc_sample(200, 29000, 0);  /* exactly to ssthresh */
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 70000);
	CHECK(st.cubic.in_epoch);
	CHECK_EQ_U64(st.cubic.w_max, 70000);
	CHECK_EQ_U64(st.cubic.k_us, 0);
	CHECK(!(out.flags & SS_CC_OUT_SLOW_START));

	/* No ACK: hold, but the epoch clock runs. */
	s = cc_sample(200, 0, 0);
	ops->on_interval(&st, &prm, &s, &out);
	CHECK_EQ_U64(out.cwnd, 70000);
	CHECK_EQ_U64(st.cubic.t_us, 200);
	CHECK(out.flags & SS_CC_OUT_HELD);
}

int main(void)
{
	ops = ss_cc_find("cubic");
	ss_cc_params_default(&prm);
	test_k();
	test_window_formula();
	test_reduction();
	test_reno_friendly();
	test_concave_convex();
	test_target_clamp();
	test_timeout();
	return check_done("test_cubic");
}
