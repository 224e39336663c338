/* test_cc_api.c - the congestion-control framework: lookup, parameters, intervals, samples, output invariants. */
#include <errno.h>

#include "cc_harness.h"
#include "check.h"

static const char *const names[] = {"dctcp-rate", "dctcp-win", "timely", "cubic", "newreno", "bbr"};

static void test_lookup(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct ss_cc_ops *o = ss_cc_find(names[i]);

		CHECK(o != NULL);
		if (o)
			CHECK_STR(o->name, names[i]);
	}
	CHECK(ss_cc_find("dctcp") == NULL);
	CHECK(ss_cc_find("") == NULL);
	CHECK(ss_cc_find("CUBIC") == NULL);
	CHECK(ss_cc_find(NULL) == NULL);
	CHECK(ss_cc_default() == ss_cc_find("dctcp-rate"));
	CHECK(ss_cc_find("dctcp-rate")->rate_based);
	CHECK(ss_cc_find("timely")->rate_based);
	CHECK(!ss_cc_find("dctcp-win")->rate_based);
	CHECK(!ss_cc_find("cubic")->rate_based);
	CHECK(!ss_cc_find("newreno")->rate_based);
	CHECK(ss_cc_find("bbr")->rate_based);
	CHECK(!ss_cc_find("bbr")->ecn_per_ack);
	CHECK(ss_cc_at(5) == ss_cc_find("bbr")); /* appended: the order before it stays */
	while (ss_cc_at(n))
		n++;
	CHECK_EQ_U64(n, 6);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			CHECK(ss_cc_at(i) != ss_cc_at(j));
}

static void test_params(void)
{
	struct ss_cc_params p, q;

	ss_cc_params_default(&p);
	CHECK_EQ_U64(ss_cc_params_check(&p), 0);
	/* The documented defaults. */
	CHECK_EQ_U64(p.dctcp_rate.step, 1250000);        /* 10 Mbit/s */
	CHECK_EQ_U64(p.dctcp_rate.g_ppm, 62500);         /* 1/16 */
	CHECK_EQ_U64(p.dctcp_rate.cap_ppm, 1200000);     /* 1.2x */
	CHECK_EQ_U64(p.timely.t_low_us, 50);
	CHECK_EQ_U64(p.timely.t_high_us, 500);
	CHECK_EQ_U64(p.timely.beta_ppm, 800000);
	CHECK_EQ_U64(p.cubic.c_ppm, 400000);
	CHECK_EQ_U64(p.cubic.beta_ppm, 700000);
	CHECK_EQ_U64(p.interval_rtts, 2);

	q = p; q.dctcp_rate.min_rate = 0;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.dctcp_rate.init_rate = q.dctcp_rate.max_rate + 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.dctcp_rate.max_rate = SS_CC_RATE_LIMIT + 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.dctcp_rate.g_ppm = 0;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.dctcp_rate.cap_ppm = 900000; /* a cap below the send rate */
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.dctcp_rate.cap_ppm = 0;      /* off */
	CHECK_EQ_U64(ss_cc_params_check(&q), 0);
	q = p; q.dctcp_win.alpha_init_ppm = SS_CC_PPM + 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.timely.t_low_us = q.timely.t_high_us;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.timely.beta_ppm = SS_CC_PPM + 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.cubic.beta_ppm = SS_CC_PPM;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.cubic.c_ppm = 11 * SS_CC_PPM;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.newreno.max_cwnd = 0;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	CHECK_EQ_U64(p.bbr.init_rate, 1250000);
	CHECK_EQ_U64(p.bbr.min_rate, 125000);
	CHECK_EQ_U64(p.bbr.max_rate, 12500000000ull);
	q = p; q.bbr.min_rate = 0;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.bbr.init_rate = q.bbr.min_rate - 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.bbr.max_rate = SS_CC_RATE_LIMIT + 1;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
	q = p; q.interval_rtts = 0;
	CHECK_EQ_U64(ss_cc_params_check(&q), (uint64_t)-EINVAL);
}

static void test_interval(void)
{
	struct ss_cc_params p;

	ss_cc_params_default(&p);
	CHECK_EQ_U64(ss_cc_interval_us(&p, 0), 1000);     /* no RTT yet */
	CHECK_EQ_U64(ss_cc_interval_us(&p, 100), 200);    /* 2 RTT */
	CHECK_EQ_U64(ss_cc_interval_us(&p, 10), 50);      /* floor */
	CHECK_EQ_U64(ss_cc_interval_us(&p, 25), 50);
	CHECK_EQ_U64(ss_cc_interval_us(&p, 26), 52);
	CHECK_EQ_U64(ss_cc_interval_us(&p, UINT32_MAX), UINT32_MAX); /* saturates */
	p.interval_rtts = 3;
	CHECK_EQ_U64(ss_cc_interval_us(&p, 1000), 3000);
}

static void test_sample_fill(void)
{
	struct ss_cc_counters prev = {0xFFFFFF00u, 0xFFFFFFF0u, 0x7FFFFFFFu, 0xFFFFFFFFu, 3,
				      0xFFFFFFFEu, 7};
	struct ss_cc_counters cur = {0x100u, 0x10u, 0x80000010u, 1u, 3, 5, 9};
	struct ss_cc_sample s;

	ss_cc_sample_fill(&s, &prev, &cur, 200, 100, 90, 5000, 1448);
	CHECK_EQ_U64(s.interval_us, 200);
	CHECK_EQ_U64(s.acked_bytes, 0x200);  /* wrapped */
	CHECK_EQ_U64(s.ecn_bytes, 0x20);
	CHECK_EQ_U64(s.sent_bytes, 0x11);
	CHECK_EQ_U64(s.fast_retx, 2);        /* 0xFFFFFFFF -> 1 */
	CHECK_EQ_U64(s.timeouts, 0);
	CHECK_EQ_U64(s.rate_limited, 7);     /* 0xFFFFFFFE -> 5 */
	CHECK_EQ_U64(s.win_limited, 2);
	CHECK_EQ_U64(s.srtt_us, 100);
	CHECK_EQ_U64(s.rtt_us, 90);
	CHECK_EQ_U64(s.inflight, 5000);
	CHECK_EQ_U64(s.mss, 1448);

	/* More marked than acked (counters read while being updated). */
	prev = (struct ss_cc_counters){0, 0, 0, 0, 0, 0, 0};
	cur = (struct ss_cc_counters){1000, 1500, 0, 0, 0, 0, 0};
	ss_cc_sample_fill(&s, &prev, &cur, 200, 100, 90, 0, 1000);
	CHECK_EQ_U64(s.ecn_bytes, 1000);
}

static void test_helpers(void)
{
	/* RFC 6928 §2: min(10*MSS, max(2*MSS, 14600)). */
	CHECK_EQ_U64(cc_initial_window(536), 5360);
	CHECK_EQ_U64(cc_initial_window(1000), 10000);
	CHECK_EQ_U64(cc_initial_window(1460), 14600);
	CHECK_EQ_U64(cc_initial_window(1500), 14600);
	CHECK_EQ_U64(cc_initial_window(9000), 18000);
	/* Send rates. */
	CHECK_EQ_U64(cc_bytes_per_s(1250, 1000), 1250000);
	CHECK_EQ_U64(cc_bytes_per_s(3, 7), 428571);          /* floor(3e6 / 7) */
	CHECK_EQ_U64(cc_bytes_per_s(1000, 0), 0);
	CHECK_EQ_U64(cc_bytes_per_s(UINT64_MAX, 1), SS_CC_RATE_LIMIT);
	/* Large byte counts: divided first, no overflow. */
	CHECK_EQ_U64(cc_bytes_per_s(UINT64_C(1) << 50, UINT64_C(1) << 30),
		     (UINT64_C(1) << 20) * 1000000u);
	CHECK_EQ_U64(cc_bytes_per_s(UINT64_C(1) << 50, UINT64_C(1) << 20), SS_CC_RATE_LIMIT);
	CHECK_EQ_U64(cc_half_window(10000, 1000), 5000);
	CHECK_EQ_U64(cc_half_window(3000, 1000), 2000);
}

static bool out_ok(const struct ss_cc_ops *o, const struct ss_cc_params *p,
		   const struct ss_cc_out *out, uint32_t mss)
{
	if (o->rate_based) {
		const struct ss_cc_dctcp_rate_params *dr = &p->dctcp_rate;

		return (out->flags & (SS_CC_OUT_RATE | SS_CC_OUT_WINDOW)) == SS_CC_OUT_RATE &&
		       out->rate_bps >= dr->min_rate && out->rate_bps <= dr->max_rate;
	}
	return (out->flags & (SS_CC_OUT_RATE | SS_CC_OUT_WINDOW)) == SS_CC_OUT_WINDOW &&
	       out->cwnd >= mss && out->cwnd <= (1u << 30);
}

/* Random feedback: outputs stay in range and are the same on a rerun. */
static void test_random_invariants(void)
{
	struct ss_cc_params p;

	ss_cc_params_default(&p);
	for (unsigned a = 0; ss_cc_at(a); a++) {
		const struct ss_cc_ops *o = ss_cc_at(a);
		uint64_t sum[2] = {0, 0};
		bool ok = true;

		for (int run = 0; run < 2; run++) {
			union ss_cc_state st;
			struct ss_cc_out out;
			uint64_t seed = 42 + a;

			o->init(&st, &p, 1448, &out);
			ok = ok && out_ok(o, &p, &out, 1448);
			for (int i = 0; i < 20000; i++) {
				uint64_t r = check_rand(&seed);
				struct ss_cc_sample s = cc_sample(1 + (uint32_t)(r % 5000),
								  (r >> 13) % 3000000, 0);

				s.ecn_bytes = (r >> 40) % 4 == 0 ? s.acked_bytes / (1 + (r >> 50) % 7) : 0;
				s.sent_bytes = (r >> 20) % 4000000;
				s.fast_retx = (r >> 33) % 23 == 0;
				s.timeouts = (r >> 38) % 101 == 0;
				s.rtt_us = (uint32_t)((r >> 44) % 2000);
				s.srtt_us = s.rtt_us;
				s.mss = 1448;
				o->on_interval(&st, &p, &s, &out);
				ok = ok && out_ok(o, &p, &out, 1448);
				sum[run] = sum[run] * 31 + out.rate_bps + out.cwnd + out.flags;
			}
		}
		CHECK(ok);
		CHECK_EQ_U64(sum[0], sum[1]);
	}
}

int main(void)
{
	test_lookup();
	test_params();
	test_interval();
	test_sample_fill();
	test_helpers();
	test_random_invariants();
	return check_done("test_cc_api");
}
