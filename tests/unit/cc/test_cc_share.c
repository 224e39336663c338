/* test_cc_share.c - one dctcp-rate controller per host (share.c): the aggregate's law, equal shares, water-filling, join and leave. */
#include "cc_harness.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct ss_cc_params prm;

/* The defaults, with the shared host's per-run law (host_per_rtt 0): the
 * tests below up to the fluid one check that law's arithmetic. */
static void per_run_params(void)
{
	ss_cc_params_default(&prm);
	prm.dctcp_rate.host_per_rtt = 0;
}

/* The hand-computed host tests' MSS: share.c measures a delivery rate
 * over 16 segments or more, 400 B (the step's bound over 48, 1200 B). */
#define TEST_MSS 25

/* A bulk flow's interval: paced at @rate for @us (held back by its pacer,
 * so it used its rate), @acked bytes acknowledged, @ecn of them marked. */
static struct ss_cc_sample bulk(uint64_t rate, uint32_t us, uint64_t acked, uint64_t ecn)
{
	struct ss_cc_sample s = cc_sample(us, acked, ecn);

	s.sent_bytes = rate * us / 1000000;
	s.rate_limited = 3;
	return s;
}

/* A host run once with @n flows at @rate each, then put out of slow start
 * by one fully marked interval (alpha 1: R halves): R = n * rate / 2. */
/* Each of @n flows adds an unmarked 1 ms sample at @rate, @acked bytes acknowledged. */
static void add_bulk_all(struct ss_cc_host *h, struct ss_cc_share_flow *f, unsigned n,
			 uint64_t rate, uint64_t acked)
{
	for (unsigned i = 0; i < n; i++) {
		struct ss_cc_sample s = bulk(rate, 1000, acked, 0);

		ss_cc_host_add(h, &prm, &f[i], &s, rate);
	}
}

/* A host with no history and @n flows that never added. */
static void host_fresh(struct ss_cc_host *h, struct ss_cc_share_flow *f, unsigned n)
{
	ss_cc_host_init(h, &prm);
	for (unsigned i = 0; i < n; i++)
		ss_cc_share_flow_init(&f[i]);
}

static void host_in_ca(struct ss_cc_host *h, struct ss_cc_share_flow *f, unsigned n,
		       uint64_t rate)
{
	struct ss_cc_out out;

	ss_cc_host_init(h, &prm);
	for (unsigned i = 0; i < n; i++) {
		struct ss_cc_sample s = bulk(rate, 1000, 0, 0);

		ss_cc_share_flow_init(&f[i]);
		ss_cc_host_add(h, &prm, &f[i], &s, rate);
	}
	ss_cc_host_run(h, &prm, 100, 0, 0, &out); /* nothing acked: held at the sum */
	CHECK_EQ_U64(out.rate_bps, n * rate);
	CHECK(out.flags & SS_CC_OUT_HELD);
	for (unsigned i = 0; i < n; i++) {
		struct ss_cc_sample s = bulk(rate, 1000, 1000, 1000);

		ss_cc_host_add(h, &prm, &f[i], &s, rate);
	}
	ss_cc_host_run(h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, n * rate / 2);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	CHECK(!(out.flags & SS_CC_OUT_SLOW_START));
	CHECK_EQ_U64(h->alpha, 1000000);
}

/* Before the first run there is no share (the flows keep their own
 * rates); the first run starts from the sum of the flows' rates, counting
 * a flow that added twice once; slow start then grows R by the
 * aggregate's delivery rate, at most doubling. */
static void test_first_run_and_slow_start(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[3];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	host_fresh(&h, f, 3);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 0);
	/* 3 flows at 1 MB/s, 1 ms intervals, each acked 500 bytes: the
	 * aggregate delivered 3 x 500 B/ms = 1.5 MB/s. */
	for (int i = 0; i < 3; i++) {
		s = bulk(1000000, 1000, 500, 0);
		ss_cc_host_add(&h, &prm, &f[i], &s, 1000000);
	}
	CHECK_EQ_U64(h.n, 3);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 3000000 + 1500000);
	CHECK(out.flags & SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(h.alpha, 1000000); /* held at 1 until the first mark */
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[1]), 1500000);
	/* Flow 0 adds twice in one host interval (its bytes count, it counts
	 * once in n); everything is delivered: R doubles, no more. */
	s = bulk(1500000, 1000, 1500, 0);
	ss_cc_host_add(&h, &prm, &f[0], &s, 1500000);
	ss_cc_host_add(&h, &prm, &f[0], &s, 1500000);
	ss_cc_host_add(&h, &prm, &f[1], &s, 1500000);
	ss_cc_host_add(&h, &prm, &f[2], &s, 1500000);
	CHECK_EQ_U64(h.n, 3);
	CHECK_EQ_U64(h.n_samples, 4);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 9000000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[2]), 3000000);
	/* Nothing added: held, shares unchanged. */
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK_EQ_U64(out.rate_bps, 9000000);
}

/* Additive increase: n x step, the step at most an eighth of the share. */
static void test_additive_increase(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[4];
	struct ss_cc_out out;

	/* 4 flows at 20 MB/s: R = 40 MB/s, share 10 MB/s; step 1.25 MB/s. */
	host_in_ca(&h, f, 4, 20000000);
	add_bulk_all(&h, f, 4, 10000000, 10000);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 40000000 + 4 * 1250000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[3]), 11250000);
	/* 4 flows at 4 MB/s: R = 8 MB/s, share 2 MB/s: step 250 000. */
	host_in_ca(&h, f, 4, 4000000);
	add_bulk_all(&h, f, 4, 2000000, 2000);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 8000000 + 4 * 250000);
	/* Runs of 1 ms where a flow at the share would have 4 ms intervals:
	 * a quarter of the step per run. */
	add_bulk_all(&h, f, 4, 2250000, 2000);
	ss_cc_host_run(&h, &prm, 100, 4000, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 9000000 + 4 * (9000000 / 4 / 8 / 4));
}

/*
 * Loss: the aggregate reacts as n independent flows at the share would.
 * All n lose: halved.  k of n lose and the others see marks: the losers
 * halve, the others cut alpha/2 each, summed (to the ppm).  k of n lose
 * and no marks: R *= 1 - loss_md * k/n, not halved, and the others step.
 * A flow that loses twice in one host interval counts once.
 */
static void test_loss_as_n_flows(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[10];
	struct ss_cc_out out;

	/* R = 10 x 2 MB/s = 20 MB/s, alpha 1. */
	host_in_ca(&h, f, 10, 4000000);
	for (int i = 0; i < 10; i++) {
		struct ss_cc_sample s = bulk(2000000, 1000, 2000, 0);

		s.fast_retx = 1;
		ss_cc_host_add(&h, &prm, &f[i], &s, 2000000);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 10000000);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	CHECK(h.loss_mode);

	/* 3 of 10 lose; the others see marks (2.85 % of their bytes): alpha =
	 * (15/16) * alpha0 + (1/16) * 0.01.  10 independent flows at 2 MB/s
	 * with that alpha: 3 x 1 MB/s + 7 x 2 MB/s x (1 - alpha/2). */
	host_in_ca(&h, f, 10, 4000000);
	uint32_t a0 = h.alpha;
	for (int i = 0; i < 10; i++) {
		struct ss_cc_sample s = bulk(2000000, 1000, 2000, i < 3 ? 0 : 2000 / 35);

		s.fast_retx = i < 3;
		s.timeouts = i == 0; /* both in one flow: still one flow */
		ss_cc_host_add(&h, &prm, &f[i], &s, 2000000);
	}
	CHECK_EQ_U64(h.n_loss, 3);
	uint32_t a1 = cc_dctcp_alpha(a0, prm.dctcp_rate.g_ppm, 20000, 7 * (2000 / 35));
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(h.alpha, a1);
	uint64_t indep = 3 * 1000000 + 7 * cc_rate_cut(2000000, a1 / 2);
	/* The combined cut is truncated to a ppm of R (20 B), the
	 * independent ones to a ppm of each rate. */
	CHECK(out.rate_bps + 30 >= indep && out.rate_bps <= indep + 30);
	CHECK(!h.loss_mode); /* the path marks */

	/* 1 of 4 loses, no marks: R *= 1 - 0.5/4, and the 3 others step by
	 * an eighth of the share they had: 3 x 16 MB/s / 4 / 8. */
	host_in_ca(&h, f, 4, 8000000);
	for (int i = 0; i < 4; i++) {
		struct ss_cc_sample s = bulk(4000000, 1000, 4000, 0);

		s.fast_retx = i == 2 ? 2 : 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
		if (i == 2)
			ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 14000000 + 3 * 500000);
	CHECK(h.loss_mode);
	/* Then, unmarked: each flow's step is max(step, one MSS per RTT) as
	 * dctcp-rate's after unmarked loss: srtt 100 us, mss 1000, 1 ms
	 * interval: 1000 x 1000 / 100^2 x 10^6 = 10^8 B/s per flow. */
	add_bulk_all(&h, f, 4, 3500000, 3500);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 15500000 + 4 * 100000000ull);
}

/* Marks in some flows: those cut by alpha/2, the others step, as that
 * many independent flows at the share would; marks in all: R *= 1 -
 * alpha/2.  A flow with marks and then a loss counts as a loss. */
static void test_marks_as_n_flows(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[4];
	struct ss_cc_out out;

	host_in_ca(&h, f, 4, 8000000); /* R = 16 MB/s, alpha 1 */
	for (int i = 0; i < 4; i++) {
		struct ss_cc_sample s = bulk(4000000, 1000, 4000, i < 2 ? 4000 : 0);

		ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
	}
	CHECK_EQ_U64(h.n_mark, 2);
	/* alpha = 15/16 + 1/16 x 1/2 = 968 750 ppm. */
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(h.alpha, 968750);
	/* Cut by (2 x 484 375) / 4 ppm, and the two unmarked flows step by
	 * min(1.25 MB/s, their share 4 MB/s / 8) = 500 000 each. */
	CHECK_EQ_U64(out.rate_bps, 16000000 - 16000000ull * (2 * 484375 / 4) / 1000000 +
					   2 * 500000);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	uint64_t r = out.rate_bps;
	for (int i = 0; i < 4; i++) {
		struct ss_cc_sample s = bulk(r / 4, 1000, 4000, 4000);

		ss_cc_host_add(&h, &prm, &f[i], &s, r / 4);
		if (i == 3) {
			s.fast_retx = 1;
			ss_cc_host_add(&h, &prm, &f[i], &s, r / 4);
		}
	}
	CHECK_EQ_U64(h.n_mark, 3);
	CHECK_EQ_U64(h.n_loss, 1);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	/* alpha = 968 750 x 15/16 + 62 500 = 970 703; cut (3 x 485 351 +
	 * 500 000) / 4 ppm. */
	CHECK_EQ_U64(h.alpha, 970703);
	CHECK_EQ_U64(out.rate_bps, r - r * ((3 * 485351 + 500000) / 4) / 1000000);
}

/* The cap's floor, n x init_rate, at the 1 Mbit/s minimum: the tests of
 * the cap's arithmetic below use rates under the 10 Mbit/s default
 * (test_cap_floor has the floor itself). */
static void floor_at_min(void)
{
	prm.dctcp_rate.init_rate = prm.dctcp_rate.min_rate;
}

/* The send-rate cap applies to the aggregate when no flow was held back
 * by its pacer; one that was lifts it. */
static void test_cap(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	floor_at_min();
	host_in_ca(&h, f, 2, 10000000); /* R = 10 MB/s */
	for (int i = 0; i < 2; i++) {
		s = bulk(1000000, 1000, 1000, 0); /* sent at 1 MB/s each */
		s.rate_limited = 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 5000000);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK(out.flags & SS_CC_OUT_CAPPED);
	/* 1.2 x 2 MB/s, then + 2 x step (share 1.2 MB/s: step 150 000). */
	CHECK_EQ_U64(out.rate_bps, 2400000 + 2 * 150000);

	host_in_ca(&h, f, 2, 10000000);
	s = bulk(1000000, 1000, 1000, 0);
	ss_cc_host_add(&h, &prm, &f[0], &s, 5000000);
	s.rate_limited = 0;
	ss_cc_host_add(&h, &prm, &f[1], &s, 5000000);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK(!(out.flags & SS_CC_OUT_CAPPED));
	per_run_params();
}

/*
 * The cap never takes R below n x init_rate, nor a flow's demand below
 * init_rate: flows that sent little (an iperf3 data connection's cookie,
 * then a wait for the test to start) are no worse off than new ones, and
 * their first bulk data leaves at 10 Mbit/s, not at the 1 Mbit/s floor.
 * Below that, the cap leaves R alone (it cuts, it never raises).
 */
static void test_cap_floor(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	prm.dctcp_rate.step = 0; /* exact figures below */
	CHECK_EQ_U64(prm.dctcp_rate.init_rate, 1250000);
	host_in_ca(&h, f, 2, 10000000); /* R = 10 MB/s */
	for (int i = 0; i < 2; i++) {
		s = bulk(37000, 1000, 37, 0); /* 37 B in 1 ms each */
		s.rate_limited = 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 5000000);
	}
	CHECK_EQ_U64(h.n_small, 2);
	CHECK_EQ_U64(h.small_sum, 2 * 1250000);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK(out.flags & SS_CC_OUT_CAPPED);
	CHECK_EQ_U64(out.rate_bps, 2 * 1250000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 1250000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[1]), 1250000);

	/* R under the floor (cut by marks to 2 x 0.5 MB/s): a small send
	 * does not cut it further, and the cap does not raise it. */
	host_in_ca(&h, f, 2, 1000000);
	for (int i = 0; i < 2; i++) {
		s = bulk(37000, 1000, 37, 0);
		s.rate_limited = 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 500000);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK(!(out.flags & SS_CC_OUT_CAPPED));
	CHECK_EQ_U64(out.rate_bps, 1000000);
	per_run_params();
}

/*
 * Water-filling: of 4 flows sharing R = 16 MB/s (level 4 MB/s), one sends
 * at 1 MB/s by itself (not held back by its pacer): its demand is 1.2 MB/s
 * and the 3 others share the rest, 14.8 / 3 MB/s each.  Every rate sums
 * to R.  When it sends at its rate again, it is back at the level.
 */
static void test_water_filling(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[4];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	floor_at_min();
	host_in_ca(&h, f, 4, 8000000); /* R = 16 MB/s, level 4 MB/s */
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 4000000);
	prm.dctcp_rate.step = 0; /* exact sums below */
	for (int i = 0; i < 4; i++) {
		s = bulk(i ? 4000000 : 1000000, 1000, i ? 4000 : 1000, 0);
		s.rate_limited = i ? 3 : 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
	}
	CHECK_EQ_U64(h.n_small, 1);
	CHECK_EQ_U64(h.small_sum, 1200000);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 16000000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 1200000);
	uint64_t bulk_share = (16000000 - 1200000) / 3;
	for (int i = 1; i < 4; i++)
		CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[i]), bulk_share);
	CHECK(1200000 + 3 * bulk_share <= out.rate_bps);
	/* It now uses its (small) rate: held back by its pacer, so it is a
	 * bulk flow again, at the level. */
	for (int i = 0; i < 4; i++) {
		s = bulk(i ? bulk_share : 1200000, 1000, 1000, 0);
		ss_cc_host_add(&h, &prm, &f[i], &s, 0);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), out.rate_bps / 4);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[3]), out.rate_bps / 4);
	/* Held by its own window (its RTT grew): not a demand, at the level. */
	for (int i = 0; i < 4; i++) {
		s = bulk(i ? out.rate_bps / 4 : 100000, 1000, 100, 0);
		s.rate_limited = 0;
		s.win_limited = i ? 0 : 2;
		if (i)
			s.rate_limited = 1;
		ss_cc_host_add(&h, &prm, &f[i], &s, 0);
	}
	CHECK_EQ_U64(h.n_small, 0);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), out.rate_bps / 4);
	/* All flows below the level: each gets its demand. */
	for (int i = 0; i < 4; i++) {
		s = bulk(500000, 1000, 500, 0);
		s.rate_limited = 0;
		ss_cc_host_add(&h, &prm, &f[i], &s, 0);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(out.rate_bps, 2400000); /* capped: 1.2 x 2 MB/s */
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[2]), 600000);
	per_run_params();
}

/* Join and leave: n is the number of flows that added in the last host
 * interval, so flows that left count no more after one interval, and a
 * flow that joins is counted from its first sample. */
static void test_join_leave(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[5];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	host_in_ca(&h, f, 4, 8000000); /* R = 16 MB/s */
	prm.dctcp_rate.step = 0;
	/* Two leave. */
	for (int i = 0; i < 2; i++) {
		s = bulk(4000000, 1000, 4000, 0);
		ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
	}
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(h.n_last, 2);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), out.rate_bps / 2);
	/* One joins (a new flow), one comes back after an interval away. */
	ss_cc_share_flow_init(&f[4]);
	for (int i = 0; i < 5; i++) {
		if (i == 2)
			continue;
		s = bulk(4000000, 1000, 4000, 0);
		ss_cc_host_add(&h, &prm, &f[i], &s, 4000000);
	}
	CHECK_EQ_U64(h.n, 4);
	ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
	CHECK_EQ_U64(h.n_last, 4);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[4]), out.rate_bps / 4);
	/* A restarted entry (another host took it) keeps counting epochs, so
	 * flows of before are not members. */
	uint32_t e = h.epoch;
	ss_cc_host_restart(&h, &prm);
	CHECK(h.epoch != e && h.fresh && h.slow_start);
	s = bulk(4000000, 1000, 4000, 0);
	ss_cc_host_add(&h, &prm, &f[0], &s, 4000000);
	CHECK_EQ_U64(h.n, 1);
	per_run_params();
}

/*
 * R belongs to all the members, not only to the flows whose intervals
 * ended in this run: 4 members, one of them reports (its interval ended,
 * the others' end in the next run).  The split is R / 4, and R steps by
 * the one flow that had bytes acknowledged.  R / n would have paced all
 * four at R, four times their share (the 32-flow overshoot of the test
 * bed, where after a stall of the fast path the flows' intervals ended
 * together and the next runs held one to three flows each).  The cap and
 * slow start count the members too; a fresh host starts from the
 * reporters' mean rate times the members.
 */
static void test_members_split(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[4];
	struct ss_cc_out out;
	struct ss_cc_sample s;

	host_in_ca(&h, f, 4, 8000000); /* R = 16 MB/s, share 4 MB/s */
	s = bulk(4000000, 1000, 4000, 0);
	ss_cc_host_add(&h, &prm, &f[1], &s, 4000000);
	CHECK_EQ_U64(h.n, 1);
	ss_cc_host_run(&h, &prm, 100, 0, 4, &out);
	/* One flow steps min(1.25 MB/s, its share 4 MB/s / 8) = 500 000. */
	CHECK_EQ_U64(out.rate_bps, 16500000);
	CHECK_EQ_U64(h.n_last, 4);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 16500000 / 4);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[1]), 16500000 / 4);
	/* The cap: one flow sent at 2 MB/s with no pacer wait: R <= 1.2 x
	 * 4 x 2 MB/s = 9.6 MB/s (n alone: 2.4 MB/s), and it steps by
	 * 9.6 MB/s / 4 / 8. */
	s = bulk(2000000, 1000, 2000, 0);
	s.rate_limited = 0;
	ss_cc_host_add(&h, &prm, &f[2], &s, 4125000);
	ss_cc_host_run(&h, &prm, 100, 0, 4, &out);
	CHECK(out.flags & SS_CC_OUT_CAPPED);
	CHECK_EQ_U64(out.rate_bps, 9600000 + 9600000 / 4 / 8);
	/* A fresh host, 2 of 3 members reporting at 1 and 2 MB/s: R starts
	 * at 3 x 1.5 MB/s; slow start adds 3 x the delivery rate, 2 x 1 MB/s
	 * / 2 ms. */
	ss_cc_host_init(&h, &prm);
	for (int i = 0; i < 2; i++) {
		ss_cc_share_flow_init(&f[i]);
		s = bulk(1000000 * (uint64_t)(i + 1), 1000, 1000, 0);
		ss_cc_host_add(&h, &prm, &f[i], &s, 1000000 * (uint64_t)(i + 1));
	}
	ss_cc_host_run(&h, &prm, 100, 0, 3, &out);
	CHECK(out.flags & SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(out.rate_bps, 4500000 + 3 * 1000000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 7500000 / 3);
}

/* Adds one sample of @acked bytes, @ecn marked, per flow of @n (1 ms at
 * @rate), then runs the host 1 ms after its last run at RTT @srtt. */
static void host_step_all(struct ss_cc_host *h, struct ss_cc_share_flow *f, unsigned n,
			  uint64_t rate, uint64_t acked, uint64_t ecn, uint32_t srtt,
			  struct ss_cc_out *out)
{
	for (unsigned i = 0; i < n; i++) {
		struct ss_cc_sample s = bulk(rate, 1000, acked, ecn);

		s.mss = TEST_MSS; /* a delivery rate needs 16 segments: 400 B */
		ss_cc_host_add(h, &prm, &f[i], &s, rate);
	}
	h->run_us = 1000;
	ss_cc_host_run(h, &prm, srtt, 0, 0, out);
}

/*
 * host_per_rtt (the default): one reaction per RTT of data, alpha over
 * that window, the cut from the rate delivered when R is above it.  Two
 * flows, RTT 2 ms, runs 1 ms apart, MSS 25 (a delivery rate needs 16
 * segments: 400 B); every value by hand.
 */
static void test_once_per_rtt(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;
	uint64_t r, step;

	ss_cc_params_default(&prm);
	CHECK_EQ_U64(prm.dctcp_rate.host_per_rtt, 1);
	host_fresh(&h, f, 2);
	/* First run: R = 2 x 5 MB/s; its 1 ms (an RTT of 1 ms here) ends a
	 * window with nothing acked: no delivery rate yet. */
	host_step_all(&h, f, 2, 5000000, 0, 0, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 10000000);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK_EQ_U64(h.dlv_last, 0);
	/* All marked, 2 x 4000 B acked: the window ends at the cut, alpha
	 * stays 1 (slow start, first mark); delivered 8000 B over the 2 x
	 * 2 ms measured (2 x 2 MB/s), and R is cut from that, not from its
	 * 10 MB/s: 4 x (1 - 1/2). */
	host_step_all(&h, f, 2, 5000000, 4000, 4000, 2000, &out);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	CHECK(!(out.flags & SS_CC_OUT_SLOW_START));
	CHECK_EQ_U64(h.alpha, 1000000);
	CHECK_EQ_U64(h.dlv_last, 2000000);
	CHECK_EQ_U64(out.rate_bps, 2000000);
	CHECK_EQ_U64(h.hold_us, 2000);
	CHECK_EQ_U64(ss_cc_host_share(&h, &prm, &f[0]), 1000000);
	/* Marks for one RTT more (data sent before the cut): held, twice. */
	host_step_all(&h, f, 2, 1000000, 2000, 1000, 2000, &out);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK(!(out.flags & SS_CC_OUT_REDUCED));
	CHECK_EQ_U64(out.rate_bps, 2000000);
	CHECK_EQ_U64(h.hold_us, 1000);
	CHECK_EQ_U64(h.alpha, 1000000); /* the window (2 ms) is not over */
	host_step_all(&h, f, 2, 1000000, 2000, 1000, 2000, &out);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK_EQ_U64(out.rate_bps, 2000000);
	CHECK_EQ_U64(h.hold_us, 0);
	/* The window's 2 ms: 8000 B acked, 4000 marked: alpha 15/16 + 1/32;
	 * delivered 8000 B over 4 ms of samples. */
	CHECK_EQ_U64(h.alpha, 968750);
	CHECK_EQ_U64(h.dlv_last, 2000000);
	CHECK_EQ_U64(h.dlv_prev, 2000000);
	/* Marks after the hold: the next cut, alpha over the 1 ms since the
	 * window's end (all marked), from R (2 MB/s, below the 4 delivered). */
	host_step_all(&h, f, 2, 1000000, 2000, 2000, 2000, &out);
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	CHECK_EQ_U64(h.alpha, 970703);
	CHECK_EQ_U64(out.rate_bps, 2000000 - 2000000ull * 485351 / 1000000);
	r = out.rate_bps;
	/* Unmarked runs step during the hold: 2 flows x an eighth of the share. */
	host_step_all(&h, f, 2, r / 2, 1000, 0, 2000, &out);
	step = r / 2 / 8;
	CHECK_EQ_U64(out.rate_bps, r + 2 * step);
	r = out.rate_bps;
	host_step_all(&h, f, 2, r / 2, 1000, 0, 2000, &out);
	CHECK_EQ_U64(out.rate_bps, r + 2 * (r / 2 / 8));
	r = out.rate_bps;
	CHECK_EQ_U64(h.hold_us, 0);
	/* A loss in one flow, delivered (2 x 6000 B per ms = 12 MB/s) above
	 * R: the cut is from R, loss_md for one of two flows, and the other
	 * flow (acked, unmarked) steps. */
	{
		struct ss_cc_sample s0 = bulk(r / 2, 1000, 6000, 0), s1 = s0;

		s0.fast_retx = 1;
		s0.mss = s1.mss = TEST_MSS;
		ss_cc_host_add(&h, &prm, &f[0], &s0, r / 2);
		ss_cc_host_add(&h, &prm, &f[1], &s1, r / 2);
		h.run_us = 1000;
		ss_cc_host_run(&h, &prm, 2000, 0, 0, &out);
	}
	CHECK(out.flags & SS_CC_OUT_REDUCED);
	CHECK(h.loss_mode);
	CHECK_EQ_U64(h.dlv_last, 6000000);
	CHECK_EQ_U64(out.rate_bps, r - r * (500000 / 2) / 1000000 + (r / 2 / 8));
	CHECK_EQ_U64(h.hold_us, 2000);
	/* A window of fewer than 16 segments (2 x 100 B) is no measurement:
	 * its bytes wait for the next window's. */
	host_step_all(&h, f, 2, r / 2, 100, 0, 1000, &out);
	CHECK_EQ_U64(h.dlv_last, 6000000);
	CHECK_EQ_U64(h.d_acked, 200);
	CHECK_EQ_U64(h.d_sample_us, 2000);
	r = out.rate_bps;
	/* Flows held by their own window (the RTT grew) that sent little:
	 * no send-rate cap (the per-run law caps R at 1.2 x 2 x 100 B/ms,
	 * then steps; its floor at the minimum here). */
	floor_at_min();
	for (uint8_t per_rtt = 1; ; per_rtt = 0) {
		struct ss_cc_host h2 = h;
		struct ss_cc_share_flow f2[2] = { f[0], f[1] };

		prm.dctcp_rate.host_per_rtt = per_rtt;
		for (unsigned i = 0; i < 2; i++) {
			struct ss_cc_sample s = cc_sample(1000, 100, 0);

			s.sent_bytes = 100;
			s.win_limited = 2;
			s.mss = TEST_MSS;
			ss_cc_host_add(&h2, &prm, &f2[i], &s, r / 2);
		}
		h2.run_us = 1000;
		ss_cc_host_run(&h2, &prm, 2000, 0, 0, &out);
		if (per_rtt) {
			CHECK(!(out.flags & SS_CC_OUT_CAPPED));
			CHECK(out.rate_bps > r);
		} else {
			CHECK(out.flags & SS_CC_OUT_CAPPED);
			CHECK(out.rate_bps < r);
			break;
		}
	}
	per_run_params();
}

/* Two fresh flows (default parameters) brought to R = 1 MB/s out of slow
 * start: a first run at 2 x 5 MB/s, then 4000 B over 4 ms of samples
 * (2 x 1 MB/s delivered), all marked: R = 2 x 1/2. */
static void host_at_1mbps(struct ss_cc_host *h, struct ss_cc_share_flow *f, struct ss_cc_out *out)
{
	host_fresh(h, f, 2);
	host_step_all(h, f, 2, 5000000, 0, 0, 1000, out);
	CHECK_EQ_U64(out->rate_bps, 10000000);
	host_step_all(h, f, 2, 5000000, 2000, 2000, 1000, out);
	CHECK_EQ_U64(h->dlv_last, 1000000);
	CHECK_EQ_U64(out->rate_bps, 1000000);
}

/* host_per_rtt: R does not step while it is above 1.05 x the rate the
 * path delivered (the flows could not use it), the mean of the last two
 * measurements over 48 segments or more; by hand. */
static void test_no_step_above_delivered(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;
	uint64_t r;

	ss_cc_params_default(&prm);
	host_at_1mbps(&h, f, &out);
	CHECK_EQ_U64(h.ldlv_last, 1000000);
	CHECK_EQ_U64(h.ldlv_prev, 0);
	/* 2 x 600 B per ms (2 x 0.6 MB/s, 48 segments: a measurement of
	 * each length); the mean of the last two, 2 x 0.8 MB/s, x 1.05 is
	 * above R: 2 steps of an eighth of the 0.5 MB/s share. */
	host_step_all(&h, f, 2, 500000, 600, 0, 1000, &out);
	CHECK_EQ_U64(h.dlv_last, 600000);
	CHECK_EQ_U64(h.ldlv_last, 600000);
	CHECK_EQ_U64(h.ldlv_prev, 1000000);
	CHECK(!(out.flags & SS_CC_OUT_HELD));
	CHECK_EQ_U64(out.rate_bps, 1000000 + 2 * 62500);
	/* Again: 2 x 0.6 MB/s x 1.05 = 1.26 MB/s is above R. */
	host_step_all(&h, f, 2, 562500, 600, 0, 1000, &out);
	CHECK(!(out.flags & SS_CC_OUT_HELD));
	CHECK_EQ_U64(out.rate_bps, 1125000 + 2 * (1125000 / 2 / 8));
	r = out.rate_bps;
	CHECK_EQ_U64(r, 1265624);
	/* And again: 1.26 MB/s is below R: held (at 1.2 x the larger of the
	 * last two short measurements, an old bound, 1.44 MB/s, R would
	 * have stepped). */
	host_step_all(&h, f, 2, r / 2, 600, 0, 1000, &out);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK_EQ_U64(out.rate_bps, r);
	/* 2 x 250 B: a short measurement (500 B), not a long one (1200 B):
	 * the bound is the same, held. */
	host_step_all(&h, f, 2, r / 2, 250, 0, 1000, &out);
	CHECK_EQ_U64(h.dlv_last, 250000);
	CHECK_EQ_U64(h.l_acked, 500);
	CHECK(out.flags & SS_CC_OUT_HELD);
	CHECK_EQ_U64(out.rate_bps, r);
	/* The boundary, from one state: 2 x 350 B more close a long window
	 * of 1200 B over 4 ms (2 x 0.3 MB/s), and then 2 x (x + 300) / 2 kB/s
	 * x 1.05 with x = 905 is 1,265,250 B/s, below R (1,265,624): held;
	 * with x = 906, 1,266,300 is not: a step for each flow, an eighth of
	 * the share. */
	host_step_all(&h, f, 2, r / 2, 350, 0, 1000, &out);
	CHECK_EQ_U64(h.ldlv_last, 300000);
	CHECK(out.flags & SS_CC_OUT_HELD);
	for (uint64_t x = 905; x <= 906; x++) {
		struct ss_cc_host hx = h;
		struct ss_cc_share_flow fx[2];

		memcpy(fx, f, sizeof(fx));
		host_step_all(&hx, fx, 2, r / 2, x, 0, 1000, &out);
		CHECK_EQ_U64(hx.ldlv_last, x * 1000);
		CHECK_EQ_U64(hx.ldlv_prev, 300000);
		CHECK_EQ_U64(!!(out.flags & SS_CC_OUT_HELD), x == 905);
		CHECK_EQ_U64(out.rate_bps, x == 905 ? r : r + 2 * (r / 2 / 8));
	}
	per_run_params();
}

/* One run of two flows, 1 ms each, MSS TEST_MSS: flow 0 acks @acked0,
 * flow 1 acks nothing and has @inflight1 bytes outstanding and @unsent1
 * waiting to be sent. */
static void host_run_pair(struct ss_cc_host *h, struct ss_cc_share_flow *f, uint64_t rate,
			  uint64_t acked0, uint32_t inflight1, uint32_t unsent1,
			  struct ss_cc_out *out)
{
	struct ss_cc_sample s0 = bulk(rate, 1000, acked0, 0), s1 = bulk(rate, 1000, 0, 0);

	s0.mss = s1.mss = TEST_MSS;
	s1.inflight = inflight1;
	s1.unsent = unsent1;
	ss_cc_host_add(h, &prm, &f[0], &s0, rate);
	ss_cc_host_add(h, &prm, &f[1], &s1, rate);
	h->run_us = 1000;
	ss_cc_host_run(h, &prm, 1000, 0, 0, out);
}

/* A flow with bytes in flight and none acknowledged in a run steps as one
 * with ACKs does: a slow flow's ACKs fall in other runs (at 5 % loss, 100
 * flows paced at the host's floor acked in a few runs of each RTT, and R,
 * stepping only for them, stayed at its floor: 0.07 Gbit/s against
 * Linux's 2.8).  So does a flow with data its pacer holds and nothing in
 * flight: at 32 flows on 100 Mbit/s each sends a segment every few runs,
 * and R, stepping for the four or so that had ACKs in a run, took 1.5 s
 * to climb back from a cut (link use 79 %).  A flow with none of them
 * holds.  By hand, from R = 1 MB/s as in test_no_step_above_delivered(). */
static void test_in_flight_steps(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;

	ss_cc_params_default(&prm);
	host_at_1mbps(&h, f, &out);
	/* Flow 0 acks 500 B, flow 1 has 25 B in flight: 2 steps of an
	 * eighth of the 0.5 MB/s share (the delivered rate, 2 x 1 MB/s
	 * over 48 segments, x 1.05 is above R). */
	host_run_pair(&h, f, 500000, 500, 25, 0, &out);
	CHECK(!(out.flags & SS_CC_OUT_HELD));
	CHECK_EQ_U64(out.rate_bps, 1000000 + 2 * 62500);
	/* Flow 1 with nothing in flight or waiting: only flow 0 steps. */
	host_run_pair(&h, f, 562500, 2000, 0, 0, &out);
	CHECK(!(out.flags & SS_CC_OUT_HELD));
	CHECK_EQ_U64(out.rate_bps, 1125000 + 1125000 / 2 / 8);
	CHECK_EQ_U64(out.rate_bps, 1195312);
	/* Flow 1 with 100 B waiting and nothing in flight: both step. */
	host_run_pair(&h, f, 597656, 2000, 0, 100, &out);
	CHECK(!(out.flags & SS_CC_OUT_HELD));
	CHECK_EQ_U64(out.rate_bps, 1195312 + 2 * (1195312 / 2 / 8));
	per_run_params();
}

/* host_per_rtt: slow start grows R by the run's delivery rate, but to at
 * most twice the measured delivery rate (never below R); by hand. */
static void test_slow_start_bound(void)
{
	struct ss_cc_host h;
	struct ss_cc_share_flow f[2];
	struct ss_cc_out out;

	ss_cc_params_default(&prm);
	host_fresh(&h, f, 2);
	host_step_all(&h, f, 2, 1000000, 0, 0, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 2000000);
	/* 2000 B over 4 ms of samples (the first run's included): 2 x 0.5
	 * MB/s, a bound of 2 MB/s: the run's + 2 MB/s is held back to R. */
	host_step_all(&h, f, 2, 1000000, 1000, 0, 1000, &out);
	CHECK(out.flags & SS_CC_OUT_SLOW_START);
	CHECK_EQ_U64(h.dlv_last, 500000);
	CHECK_EQ_U64(out.rate_bps, 2000000);
	/* 2 x 1.5 MB/s: bound 6 MB/s, + min(3, R) = 4 MB/s. */
	host_step_all(&h, f, 2, 1000000, 1500, 0, 1000, &out);
	CHECK_EQ_U64(h.dlv_last, 1500000);
	CHECK_EQ_U64(out.rate_bps, 4000000);
	/* Again: + 3 MB/s would give 7, the bound is 6. */
	host_step_all(&h, f, 2, 2000000, 1500, 0, 1000, &out);
	CHECK_EQ_U64(out.rate_bps, 6000000);
	/* Delivery drops to 2 x 200 B per ms: + 0.4 MB/s, but the bound is
	 * still 6 MB/s (the max filter keeps the 1.5 MB/s measurement). */
	host_step_all(&h, f, 2, 3000000, 200, 0, 1000, &out);
	CHECK_EQ_U64(h.dlv_last, 200000);
	CHECK_EQ_U64(out.rate_bps, 6000000);
	per_run_params();
}

/*
 * N flows sharing one host controller through a fluid 100 Mbit/s
 * bottleneck that marks every byte while its queue holds more than 30 KB
 * (the test bed's): each flow is paced at the same rate at all times;
 * the aggregate uses the link and keeps the queue short.  The flows'
 * intervals end at their own phases: each adds its sample at its own
 * time; the host runs when flow 0's ends, and every flow then takes its
 * share, as the service does.
 */
static void fluid(unsigned n, uint8_t per_rtt)
{
	const int64_t cap = 12500000, k = 30000; /* B/s, bytes */
	const uint32_t iv = 500;                 /* us */
	struct ss_cc_host h;
	struct ss_cc_share_flow f[32];
	uint64_t rate[32];
	struct ss_cc_out out;
	double sum = 0;
	int64_t q = 0, q_max = 0, q_sum = 0;
	unsigned samples = 0;
	uint64_t max_spread = 0;

	prm.dctcp_rate.step = 125000; /* 1 Mbit/s, as the test bed runs */
	prm.dctcp_rate.host_per_rtt = per_rtt;
	ss_cc_host_init(&h, &prm);
	for (unsigned i = 0; i < n; i++) {
		ss_cc_share_flow_init(&f[i]);
		rate[i] = prm.dctcp_rate.init_rate;
	}
	/* Time in steps of iv / n; flow i's interval ends at step i mod n. */
	for (unsigned t = 0; t < 4000 * n; t++) {
		unsigned i = t % n;
		int64_t offered = 0, dt = iv / n;

		for (unsigned j = 0; j < n; j++)
			offered += (int64_t)rate[j];
		q += (offered - cap) * dt / 1000000;
		q = q < 0 ? 0 : q;
		/* Flow i's interval: its bytes over the last iv, marked if the
		 * queue is above K now (a fluid model's marks). */
		uint64_t bytes = rate[i] * iv / 1000000;
		bool mark = q > k;
		struct ss_cc_sample s = bulk(rate[i], iv, bytes, mark ? bytes : 0);

		s.mss = 1448;
		ss_cc_host_add(&h, &prm, &f[i], &s, rate[i]);
		if (i == 0) {
			ss_cc_host_run(&h, &prm, 100, 0, 0, &out);
			for (unsigned j = 0; j < n; j++)
				rate[j] = ss_cc_host_share(&h, &prm, &f[j]);
		}
		if (t >= n) {
			uint64_t lo = UINT64_MAX, hi = 0;

			for (unsigned j = 0; j < n; j++) {
				lo = rate[j] < lo ? rate[j] : lo;
				hi = rate[j] > hi ? rate[j] : hi;
			}
			if (hi - lo > max_spread)
				max_spread = hi - lo;
		}
		if (t >= 2000 * n) {
			sum += (double)offered;
			q_max = q > q_max ? q : q_max;
			q_sum += q;
			samples++;
		}
	}
	if (getenv("FLUID_DEBUG"))
		fprintf(stderr, "n %u per_rtt %u util %.3f q mean %lld max %lld\n", n, per_rtt, sum / samples / cap,
			(long long)(q_sum / samples), (long long)q_max);
	CHECK_EQ_U64(max_spread, 0); /* equal rates all along */
	CHECK(sum / samples > 0.9 * (double)cap);
	CHECK(sum / samples < 1.1 * (double)cap);
	CHECK(q_max < 3 * k);
	CHECK(q_sum / samples < 2 * k);
	per_run_params();
}

static void test_fluid_bottleneck(void)
{
	for (uint8_t per_rtt = 0; per_rtt <= 1; per_rtt++) {
		fluid(2, per_rtt);
		fluid(8, per_rtt);
		fluid(32, per_rtt);
	}
}

int main(void)
{
	per_run_params();
	test_first_run_and_slow_start();
	test_additive_increase();
	test_loss_as_n_flows();
	test_marks_as_n_flows();
	test_cap();
	test_cap_floor();
	test_water_filling();
	test_join_leave();
	test_members_split();
	test_once_per_rtt();
	test_no_step_above_delivered();
	test_in_flight_steps();
	test_slow_start_bound();
	test_fluid_bottleneck();
	return check_done("test_cc_share");
}
