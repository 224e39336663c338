/* test_pacer.c - pacing scheduler: exact inter-departure times, time order over many flows, overflow, groups (per-app caps). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cc/pacer.h"
#include "check.h"

#define OUT_MAX 64

static struct ss_pacer_params dflt(void)
{
	struct ss_pacer_params p;

	ss_pacer_params_default(&p);
	return p;
}

static void test_init_args(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();

	CHECK_EQ_U64(prm.n_slots, 16384);
	CHECK_EQ_U64(prm.slot_ns, 1000);
	prm.n_slots = 32;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), (uint64_t)-EINVAL);
	prm.n_slots = 96;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), (uint64_t)-EINVAL);
	prm = dflt();
	prm.slot_ns = 0;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), (uint64_t)-EINVAL);
	prm = dflt();
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 5000), 0);
	CHECK_EQ_U64(ss_pacer_next_ns(&p), UINT64_MAX);
	ss_pacer_fini(&p);
}

static void test_bucket(void)
{
	struct ss_pacer_bucket b;

	CHECK_EQ_U64(ss_pacer_bucket_init(&b, 0, 1000, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_pacer_bucket_init(&b, 1000, 0, 0), (uint64_t)-EINVAL);
	/* 1 MB/s, burst 3000 B, full at t = 0. */
	CHECK_EQ_U64(ss_pacer_bucket_init(&b, 1000000, 3000, 0), 0);
	CHECK(ss_pacer_bucket_ready(&b, 0));
	ss_pacer_bucket_charge(&b, 1500, 0);
	ss_pacer_bucket_charge(&b, 1500, 0);
	CHECK(ss_pacer_bucket_ready(&b, 0));           /* exactly empty: no debt */
	ss_pacer_bucket_charge(&b, 1500, 0);           /* overdraw by one packet */
	CHECK(!ss_pacer_bucket_ready(&b, 0));
	CHECK_EQ_U64(ss_pacer_bucket_next_ns(&b, 0), 1500000); /* 1500 B at 1 B/us */
	CHECK(!ss_pacer_bucket_ready(&b, 1499999));
	CHECK(ss_pacer_bucket_ready(&b, 1500000));
	CHECK_EQ_U64(ss_pacer_bucket_next_ns(&b, 1500000), 1500000);
	/* A long idle refills to the burst, not beyond. */
	CHECK(ss_pacer_bucket_ready(&b, 100000000000ull));
	ss_pacer_bucket_charge(&b, 3000, 100000000000ull);
	CHECK(ss_pacer_bucket_ready(&b, 100000000000ull));
	ss_pacer_bucket_charge(&b, 1, 100000000000ull);
	CHECK(!ss_pacer_bucket_ready(&b, 100000000000ull));
	CHECK_EQ_U64(ss_pacer_bucket_next_ns(&b, 100000000000ull), 100000001000ull);
	/* Rate change: credit so far at the old rate. */
	CHECK_EQ_U64(ss_pacer_bucket_set_rate(&b, 3, 100000000000ull), 0); /* 3 B/s */
	CHECK_EQ_U64(ss_pacer_bucket_next_ns(&b, 100000000000ull),
		     100000000000ull + 333333334ull); /* ceil(1e9 / 3) */
	CHECK_EQ_U64(ss_pacer_bucket_set_rate(&b, 0, 0), (uint64_t)-EINVAL);
	/* Rate and depth at once: credit earned at the old rate, then cut
	 * to the new depth; debt is kept. */
	CHECK_EQ_U64(ss_pacer_bucket_init(&b, 1000000, 3000, 0), 0); /* full: 3000 B */
	CHECK_EQ_U64(ss_pacer_bucket_set(&b, 2000000, 1000, 0), 0);
	CHECK_EQ_U64(b.credit, 1000ll * 1000000000);
	CHECK_EQ_U64(b.rate, 2000000);
	CHECK_EQ_U64(b.burst, 1000);
	ss_pacer_bucket_charge(&b, 3000, 0);                 /* 2000 B of debt */
	CHECK_EQ_U64(ss_pacer_bucket_set(&b, 4000000, 5000, 250000), 0); /* +500 B at 2 B/us */
	CHECK_EQ_U64(b.credit, (uint64_t)(-1500ll * 1000000000));
	CHECK_EQ_U64(ss_pacer_bucket_next_ns(&b, 250000), 250000 + 375000); /* 1500 B at 4 B/us */
	CHECK_EQ_U64(ss_pacer_bucket_set(&b, 0, 5000, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_pacer_bucket_set(&b, 1000, 0, 0), (uint64_t)-EINVAL);
}

/*
 * One flow, always backlogged, served event by event (the clock jumps to
 * ss_pacer_next_ns()).  Its k-th send time is start + floor(k * bytes *
 * 1e9 / rate) exactly (the fraction of a nanosecond is carried), and each
 * departure is at that time rounded up to the slot, never before.
 */
static void run_one_flow(uint64_t rate, uint64_t bytes, uint32_t slot_ns, unsigned n)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_flow f, *out[OUT_MAX];
	uint64_t now = 1000000, start = now;
	bool exact = true, on_time = true;

	prm.slot_ns = slot_ns;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, now), 0);
	ss_pacer_flow_init(&f, rate, now);
	CHECK(ss_pacer_may_send(&f, now));
	ss_pacer_charge(&p, &f, bytes, now); /* the first packet goes at once */
	ss_pacer_schedule(&p, &f);
	CHECK(!ss_pacer_may_send(&f, now));
	for (unsigned k = 1; k <= n; k++) {
		uint64_t due = start + k * bytes * 1000000000u / rate; /* < 2^64 here */
		uint64_t dep = (due + slot_ns - 1) / slot_ns * slot_ns;
		unsigned got = 0;

		exact = exact && f.next_ns == due;
		if (ss_pacer_poll(&p, dep - 1, out, OUT_MAX) != 0) /* not a ns early */
			on_time = false;
		/* Follow the scheduler's own wake-up hints (an overflow scan
		 * may come first) until the flow comes out. */
		while (!got) {
			now = ss_pacer_next_ns(&p);
			if (now == UINT64_MAX || now > dep)
				break;
			got = ss_pacer_poll(&p, now, out, OUT_MAX);
		}
		on_time = on_time && got == 1 && out[0] == &f && now == dep;
		ss_pacer_charge(&p, &f, bytes, now);
		ss_pacer_schedule(&p, &f);
	}
	CHECK(exact);
	CHECK(on_time);
	ss_pacer_fini(&p);
}

static void test_inter_departure(void)
{
	run_one_flow(1250000000, 1500, 1000, 2000);  /* 10 Gbit/s: 1200 ns apart */
	run_one_flow(7000000, 1000, 1000, 2000);      /* 142857.142857... ns apart */
	run_one_flow(1000003, 1448, 100, 500);        /* a prime rate, finer slots */
	run_one_flow(125000, 1500, 1000, 50);         /* 12 ms: within the 16 ms horizon */
	run_one_flow(50000, 1500, 1000, 20);          /* 30 ms: through the overflow list */
	run_one_flow(1000, 1500, 1000, 3);            /* 1.5 s: many half-horizon scans */
}

/* Served late by more than max_lag: the lost time is not made up. */
static void test_lag(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_flow f;

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	ss_pacer_flow_init(&f, 1000000000, 0); /* 1 B/ns */
	ss_pacer_charge(&p, &f, 1000, 0);
	CHECK_EQ_U64(f.next_ns, 1000);
	ss_pacer_charge(&p, &f, 1000, 5000);   /* 4 us late: catch up */
	CHECK_EQ_U64(f.next_ns, 2000);
	ss_pacer_charge(&p, &f, 1000, 1000000); /* 998 us late: from now - 10 us */
	CHECK_EQ_U64(f.next_ns, 1000000 - 10000 + 1000);
	/* Retransmissions are charged like anything else: the API has no
	 * other kind of send. Rate 0: unpaced. */
	ss_pacer_flow_set_rate(&f, 0);
	ss_pacer_charge(&p, &f, 1000, 1000000);
	CHECK_EQ_U64(f.next_ns, 991000);
	ss_pacer_fini(&p);
}

/*
 * ss_pacer_charge_rate() (inline, the stack's per-reply charge) and
 * ss_pacer_charge() against the formula written out: next_ns =
 * max(next_ns, now - max_lag) + (bytes * 10^9 + rem) / rate, the
 * remainder carried; random rates, sizes up to and past 2^32 (the
 * general function's clamp), clocks early and late.
 */
static void test_charge_inline(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	uint64_t seed = 42;

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	for (int i = 0; i < 200000; i++) {
		struct ss_pacer_flow a, b;
		uint64_t rate = 1 + check_rand(&seed) % (UINT64_C(1) << 40);
		uint64_t now = check_rand(&seed) % (UINT64_C(1) << 50);
		uint64_t bytes, base, num, want_next, want_rem;

		switch (i % 4) {
		case 0: bytes = 1 + check_rand(&seed) % 100; break;
		case 1: bytes = 1 + check_rand(&seed) % 65536; break;
		case 2: bytes = 1 + check_rand(&seed) % UINT32_MAX; break;
		default: bytes = (UINT64_C(1) << 32) - 1 + check_rand(&seed) % 3; break;
		}
		ss_pacer_flow_init(&a, rate, 0);
		a.next_ns = check_rand(&seed) % (UINT64_C(1) << 50);
		a.rem = check_rand(&seed) % rate;
		b = a;
		base = a.next_ns;
		if (now > prm.max_lag_ns && now - prm.max_lag_ns > base)
			base = now - prm.max_lag_ns;
		num = (bytes > (UINT64_C(1) << 32) ? (UINT64_C(1) << 32) : bytes) * 1000000000u + a.rem;
		want_next = base + num / rate;
		want_rem = num % rate;
		ss_pacer_charge(&p, &a, bytes, now);
		CHECK_EQ_U64(a.next_ns, want_next);
		CHECK_EQ_U64(a.rem, want_rem);
		if (bytes <= UINT32_MAX) {
			ss_pacer_charge_rate(&p, &b, (uint32_t)bytes, now);
			CHECK_EQ_U64(b.next_ns, want_next);
			CHECK_EQ_U64(b.rem, want_rem);
		}
	}
	ss_pacer_fini(&p);
}

/*
 * ss_pacer_charge_u32() (inline, a grouped flow's per-segment charge:
 * a host's aggregate) against the bucket's formula written out: refill
 * by (now - last) x rate up to the depth (none for an earlier clock),
 * then less bytes x 10^9, at most 2^62 in debt; the flow's own charge as
 * above, none without a rate; and the same as ss_pacer_charge().
 */
static void test_charge_group_inline(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	uint64_t seed = 43;

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	for (int i = 0; i < 200000; i++) {
		struct ss_pacer_group ga, gb;
		struct ss_pacer_flow a, b;
		uint64_t grate = 1 + check_rand(&seed) % (UINT64_C(1) << 40);
		uint64_t burst = 1 + check_rand(&seed) % (UINT64_C(1) << 32);
		uint64_t rate = (i % 3 == 0) ? 0 : 1 + check_rand(&seed) % (UINT64_C(1) << 40);
		uint64_t now = check_rand(&seed) % (UINT64_C(1) << 50);
		uint32_t bytes = (uint32_t)(1 + check_rand(&seed) % (i % 2 ? 65536 : UINT32_MAX));
		int64_t full = (int64_t)(burst * 1000000000u), credit;
		uint64_t last, want_next, want_rem;

		CHECK_EQ_U64(ss_pacer_group_init(&ga, grate, burst, 0), 0);
		last = check_rand(&seed) % (UINT64_C(1) << 50);
		ga.tb.last_ns = last;
		switch (i % 5) {
		case 0: ga.tb.credit = full; break;
		case 1: ga.tb.credit = -(INT64_C(1) << 62); break;
		case 2: ga.tb.credit = -(int64_t)(check_rand(&seed) % (UINT64_C(1) << 62)); break;
		default: ga.tb.credit = (int64_t)(check_rand(&seed) % (uint64_t)full); break;
		}
		gb = ga;
		ss_pacer_flow_init(&a, rate, 0);
		a.next_ns = check_rand(&seed) % (UINT64_C(1) << 50);
		a.rem = rate ? check_rand(&seed) % rate : 0;
		b = a;
		a.group = &ga;
		b.group = &gb;
		credit = ga.tb.credit;
		if (now > last) {
			uint64_t dt = now - last, room = (uint64_t)(full - credit);
			credit = dt > room / grate ? full : credit + (int64_t)(dt * grate);
		}
		credit -= (int64_t)((uint64_t)bytes * 1000000000u);
		if (credit < -(INT64_C(1) << 62))
			credit = -(INT64_C(1) << 62);
		want_next = a.next_ns;
		want_rem = a.rem;
		if (rate) {
			uint64_t base = a.next_ns, num = (uint64_t)bytes * 1000000000u + a.rem;

			if (now > prm.max_lag_ns && now - prm.max_lag_ns > base)
				base = now - prm.max_lag_ns;
			want_next = base + num / rate;
			want_rem = num % rate;
		}
		ss_pacer_charge_u32(&p, &a, bytes, now);
		CHECK_EQ_U64((uint64_t)ga.tb.credit, (uint64_t)credit);
		CHECK_EQ_U64(ga.tb.last_ns, now > last ? now : last);
		CHECK_EQ_U64(a.next_ns, want_next);
		CHECK_EQ_U64(a.rem, want_rem);
		ss_pacer_charge(&p, &b, bytes, now);
		CHECK(memcmp(&ga.tb, &gb.tb, sizeof(ga.tb)) == 0);
		CHECK_EQ_U64(b.next_ns, a.next_ns);
		CHECK_EQ_U64(b.rem, a.rem);
	}
	ss_pacer_fini(&p);
}

struct model_flow {
	struct ss_pacer_flow pf; /* first: out[] pointers cast back */
	uint64_t sent, due_tick;
	unsigned pops;
};

/*
 * Many flows with random rates and start times (some beyond the horizon),
 * the clock advancing by random steps: every pop is due (never early),
 * comes in non-decreasing tick order, and is not late either: a flow
 * whose tick had come at the previous poll came out then, unless that
 * poll was cut short by its limit.  Over the run each flow sends at its
 * rate.
 */
static void test_many_flows(void)
{
	enum { N = 10000 };
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct model_flow *m = calloc(N, sizeof(*m));
	struct ss_pacer_flow *out[OUT_MAX];
	uint64_t seed = 7, now = 0, prev_target = 0, last_tick = 0, end = 200000000;
	bool never_early = true, ordered = true, not_late = true, prev_full = false;
	bool polled = false;
	unsigned bad = 0;

	if (!m)
		return;
	prm.n_slots = 4096; /* 4 ms horizon: plenty of overflow traffic */
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	for (unsigned i = 0; i < N; i++) {
		uint64_t r = check_rand(&seed);

		/* 10 kB/s .. 10 MB/s, 1500 B packets: gaps 150 us .. 150 ms */
		ss_pacer_flow_init(&m[i].pf, 10000 + r % 10000000, 0);
		m[i].pf.next_ns = (r >> 32) % 20000000; /* first send within 20 ms */
		ss_pacer_schedule(&p, &m[i].pf);
	}
	CHECK_EQ_U64(p.n_queued, N);
	CHECK(p.n_overflow > N / 2);
	while (now < end) {
		uint64_t target;
		unsigned n;

		if (!prev_full)
			now += 1 + check_rand(&seed) % 3000;
		target = now / prm.slot_ns;
		n = ss_pacer_poll(&p, now, out, OUT_MAX);
		for (unsigned j = 0; j < n; j++) {
			struct model_flow *f = (struct model_flow *)(void *)out[j];
			uint64_t tick = (f->pf.next_ns + prm.slot_ns - 1) / prm.slot_ns;

			never_early = never_early && f->pf.next_ns <= now;
			ordered = ordered && tick >= last_tick;
			last_tick = tick;
			if (polled && !prev_full && tick <= prev_target)
				not_late = false;
			f->pops++;
			f->sent += 1500;
			ss_pacer_charge(&p, &f->pf, 1500, now);
			ss_pacer_schedule(&p, &f->pf);
		}
		polled = true;
		prev_full = n == OUT_MAX;
		prev_target = target;
	}
	CHECK(never_early);
	CHECK(ordered);
	CHECK(not_late);
	/* Long-run rate: one packet at the start, then one per gap; nothing
	 * is lost to service lag (it stays under max_lag). */
	for (unsigned i = 0; i < N; i++) {
		double want = (double)m[i].pf.rate * ((double)end - 20e6) / 1e9;

		if ((double)m[i].sent > want * 1.01 + 3000 + (double)m[i].pf.rate * 20e-3)
			bad++;
		if ((double)m[i].sent < want * 0.80)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	/* Cost of the overflow list: at most one scan per half horizon
	 * (2048 ticks of 1 us here), plus one per... nothing else. */
	CHECK(p.ovf_scans <= end / 1000 / 2048 + 2);
	ss_pacer_fini(&p);
	free(m);
}

static void test_cancel(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_flow a, b, c, *out[OUT_MAX];

	prm.n_slots = 64;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	ss_pacer_flow_init(&a, 1000000, 0);
	ss_pacer_flow_init(&b, 1000000, 0);
	ss_pacer_flow_init(&c, 1000000, 0);
	a.next_ns = 5000;
	b.next_ns = 5000;
	c.next_ns = 1000000; /* beyond 64 us: overflow */
	ss_pacer_schedule(&p, &a);
	ss_pacer_schedule(&p, &b);
	ss_pacer_schedule(&p, &c);
	ss_pacer_schedule(&p, &c); /* already queued: no-op */
	CHECK_EQ_U64(p.n_queued, 3);
	CHECK_EQ_U64(p.n_overflow, 1);
	CHECK_EQ_U64(ss_pacer_next_ns(&p), 5000);
	ss_pacer_cancel(&p, &a);
	ss_pacer_cancel(&p, &a); /* idle: no-op */
	ss_pacer_cancel(&p, &c);
	CHECK_EQ_U64(p.n_overflow, 0);
	CHECK_EQ_U64(ss_pacer_poll(&p, 2000000, out, OUT_MAX), 1);
	CHECK(out[0] == &b);
	CHECK_EQ_U64(p.n_queued, 0);
	CHECK_EQ_U64(ss_pacer_next_ns(&p), UINT64_MAX);
	ss_pacer_fini(&p);
}

/* Same tick: queue order.  Different ticks: time order, whatever the
 * queue order. */
static void test_order(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_flow f[6], *out[OUT_MAX];
	static const uint64_t at[6] = {9000, 3000, 3001, 2500, 70000000, 3000};
	static const unsigned want[5] = {1, 3, 5, 2, 0};

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	for (int i = 0; i < 6; i++) {
		ss_pacer_flow_init(&f[i], 1000, 0);
		f[i].next_ns = at[i];
		ss_pacer_schedule(&p, &f[i]);
	}
	/* ticks (ceil, 1 us): 9, 3, 4, 3, 70000, 3 */
	CHECK_EQ_U64(ss_pacer_poll(&p, 69999999, out, OUT_MAX), 5);
	for (int i = 0; i < 5; i++)
		CHECK(out[i] == &f[want[i]]);
	CHECK_EQ_U64(ss_pacer_next_ns(&p), 70000000);
	CHECK_EQ_U64(ss_pacer_poll(&p, 70000000, out, OUT_MAX), 1);
	CHECK(out[0] == &f[4]);
	/* A poll limit of 2 leaves the rest for the next call, in order. */
	for (int i = 0; i < 6; i++) {
		f[i].next_ns = 80000000 + 1000 * (uint64_t)(5 - i);
		ss_pacer_schedule(&p, &f[i]);
	}
	CHECK_EQ_U64(ss_pacer_poll(&p, 90000000, out, 2), 2);
	CHECK(out[0] == &f[5] && out[1] == &f[4]);
	CHECK_EQ_U64(ss_pacer_poll(&p, 90000000, out, OUT_MAX), 4);
	CHECK(out[0] == &f[3] && out[3] == &f[0]);
	ss_pacer_fini(&p);
}

/*
 * Per-application cap: 40 flows of one app, each allowed 10 Gbit/s, all
 * backlogged, against a 50 Mbit/s group bucket.  The app's total stays
 * within the cap (burst + rate * T + the one release a bucket may be
 * overdrawn by), above
 * 95 % of it, and the flows share it evenly (FIFO release).  An uncapped
 * flow beside it keeps its own rate.
 */
static void test_group_cap(void)
{
	enum { NF = 40 };
	const uint64_t cap = 6250000, burst = 15000, pkt = 1500; /* 50 Mbit/s */
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_group g;
	struct model_flow m[NF + 1];
	struct ss_pacer_flow *out[OUT_MAX];
	uint64_t now = 0, end = 1000000000, total = 0, lo = UINT64_MAX, hi = 0;

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	CHECK_EQ_U64(ss_pacer_group_init(&g, cap, burst, 0), 0);
	for (unsigned i = 0; i <= NF; i++) {
		m[i] = (struct model_flow){0};
		ss_pacer_flow_init(&m[i].pf, 1250000000, 0);
		if (i < NF)
			ss_pacer_flow_set_group(&m[i].pf, &g);
		ss_pacer_schedule(&p, &m[i].pf);
	}
	m[NF].pf.rate = 1000000; /* the uncapped one: 1 MB/s */
	while (now < end) {
		unsigned n = ss_pacer_poll(&p, now, out, OUT_MAX);

		for (unsigned j = 0; j < n; j++) {
			struct model_flow *f = (struct model_flow *)(void *)out[j];

			f->sent += pkt;
			ss_pacer_charge(&p, &f->pf, pkt, now);
			ss_pacer_schedule(&p, &f->pf);
		}
		if (n < OUT_MAX) {
			uint64_t nx = ss_pacer_next_ns(&p);

			now = nx > now ? nx : now + 1;
		}
	}
	for (unsigned i = 0; i < NF; i++) {
		total += m[i].sent;
		lo = m[i].sent < lo ? m[i].sent : lo;
		hi = m[i].sent > hi ? m[i].sent : hi;
	}
	CHECK(total <= burst + cap * (end / 1000000000) + pkt); /* one release's overdraft */
	CHECK(total >= cap * (end / 1000000000) * 95 / 100);
	CHECK(hi - lo <= 2 * pkt);
	/* The uncapped flow: 1 MB/s for 1 s, within one packet. */
	CHECK(m[NF].sent >= 1000000 - pkt && m[NF].sent <= 1000000 + 2 * pkt);
	/* may_send respects the group: in debt, nobody goes directly. */
	ss_pacer_cancel(&p, &m[0].pf);
	m[0].pf.next_ns = 0;
	CHECK(!ss_pacer_may_send(&m[0].pf, now) || g.n_wait == 0);
	ss_pacer_bucket_charge(&g.tb, 100000, now);
	CHECK(!ss_pacer_may_send(&m[0].pf, now));
	for (unsigned i = 0; i <= NF; i++)
		ss_pacer_cancel(&p, &m[i].pf);
	CHECK_EQ_U64(g.n_wait, 0);
	ss_pacer_fini(&p);
}

/*
 * A group's FIFO in detail: a flow whose time comes while others of its
 * group wait queues behind them (no overtaking), and in one tick the
 * group releases only what its credit pays for, counting each release
 * not yet charged at the group's mean charge (here, before any charge,
 * its depth): one flow per tick while the credit is a byte.
 */
static void test_group_fifo(void)
{
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_group g;
	struct ss_pacer_flow a, b, c, *out[OUT_MAX];

	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	/* 1 MB/s, burst 6000 B; 7500 B charged at t = 0: ready at 1.5 ms. */
	CHECK_EQ_U64(ss_pacer_group_init(&g, 1000000, 6000, 0), 0);
	ss_pacer_bucket_charge(&g.tb, 7500, 0);
	ss_pacer_flow_init(&a, 0, 0);
	ss_pacer_flow_init(&b, 0, 0);
	ss_pacer_flow_init(&c, 0, 0);
	ss_pacer_flow_set_group(&a, &g);
	ss_pacer_flow_set_group(&b, &g);
	ss_pacer_flow_set_group(&c, &g);
	CHECK(!ss_pacer_may_send(&a, 0));
	a.next_ns = 1000;
	c.next_ns = 2000;
	b.next_ns = 1500000; /* due exactly when the bucket is */
	ss_pacer_schedule(&p, &a);
	ss_pacer_schedule(&p, &b); /* in tick 1500's slot before the group */
	ss_pacer_schedule(&p, &c);
	CHECK_EQ_U64(ss_pacer_poll(&p, 1499999, out, OUT_MAX), 0);
	CHECK_EQ_U64(a.ent.where, SS_PACER_GROUP_WAIT);
	CHECK_EQ_U64(c.ent.where, SS_PACER_GROUP_WAIT);
	CHECK_EQ_U64(g.n_wait, 2);
	CHECK_EQ_U64(ss_pacer_next_ns(&p), 1500000);
	/* Bucket ready: one release (a), b queues behind c. */
	CHECK_EQ_U64(ss_pacer_poll(&p, 1500000, out, OUT_MAX), 1);
	CHECK(out[0] == &a);
	CHECK_EQ_U64(b.ent.where, SS_PACER_GROUP_WAIT);
	CHECK_EQ_U64(g.n_wait, 2);
	CHECK(!ss_pacer_may_send(&a, 1500000)); /* others wait: no direct send */
	CHECK_EQ_U64(ss_pacer_poll(&p, 1500999, out, OUT_MAX), 0);
	/* Next tick: the next one (credit is there: nothing was charged). */
	CHECK_EQ_U64(ss_pacer_poll(&p, 1501000, out, OUT_MAX), 1);
	CHECK(out[0] == &c);
	ss_pacer_charge(&p, &c, 1500, 1501000); /* debt 1499 B again */
	CHECK_EQ_U64(ss_pacer_poll(&p, 1502000, out, OUT_MAX), 0);
	CHECK_EQ_U64(ss_pacer_poll(&p, 3000000, out, OUT_MAX), 1);
	CHECK(out[0] == &b);
	CHECK_EQ_U64(g.n_wait, 0);
	CHECK(ss_pacer_may_send(&a, 3000000));
	ss_pacer_fini(&p);
}

/*
 * A crowd: a host's aggregate (cc-share host) of 32 flows, each paced at
 * its share of 100 Mbit/s, all in phase, the group's bucket 6000 B deep.
 * The caller sleeps until ss_pacer_next_ns() and wakes up late, by up to
 * 50 us, and with @rare_late one time in 16 by up to 2 ms (this VM's
 * timed sleeps); after a poll that returned flows its next round polls
 * again 1 us later, as the fast path does.  Each release sends one
 * 2 x 1448 B quantum.  A late poll returns what the bucket pays for at
 * the group's mean charge, not every flow due: over every span of
 * departures, what left is within the bucket's depth + its rate x the
 * span + one quantum (the release not yet charged).
 * With nothing to bound a tick's releases a poll 1 ms late let ~18 flows out at once
 * (54 KB at 100 Mbit/s, seen at the test bed's bottleneck; this model
 * then measured 86 KB over the bound).  The shares stay even.  With short
 * delays only, the aggregate fills the rate; the time a 2 ms late wake-up
 * loses beyond the bucket's depth is lost, not sent later as a burst.
 */
static void test_group_crowd(bool rare_late)
{
	enum { NF = 32, MAXDEP = 8192 };
	const uint64_t rate = 12500000, burst = 6000, q = 2 * 1448;
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_group g;
	struct model_flow m[NF];
	struct ss_pacer_flow *out[OUT_MAX];
	static uint64_t dep_t[MAXDEP];
	uint64_t now, end = 1000000000, lcg = 12345, worst = 0, lo = UINT64_MAX, hi = 0;
	uint64_t total = 0, sum;
	unsigned ndep = 0, n;

	prm.max_lag_ns = 200000; /* the service's (stack_cc.c) */
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	CHECK_EQ_U64(ss_pacer_group_init(&g, rate, burst, 0), 0);
	for (unsigned i = 0; i < NF; i++) {
		m[i] = (struct model_flow){0};
		ss_pacer_flow_init(&m[i].pf, rate / NF, 0);
		ss_pacer_flow_set_group(&m[i].pf, &g);
		m[i].pf.next_ns = 1000000; /* in phase */
		ss_pacer_schedule(&p, &m[i].pf);
	}
	/* 1 ms late: all 32 are due; what the full bucket pays for at the
	 * mean charge (at first the depth: 2 releases) goes, the others wait
	 * in the FIFO. */
	now = 2000000;
	n = ss_pacer_poll(&p, now, out, OUT_MAX);
	CHECK_EQ_U64(n, 2);
	CHECK_EQ_U64(g.n_wait, NF - 2);
	for (; now < end; n = ss_pacer_poll(&p, now, out, OUT_MAX)) {
		for (unsigned j = 0; j < n; j++) {
			struct model_flow *f = (struct model_flow *)(void *)out[j];

			f->sent += q;
			ss_pacer_charge(&p, &f->pf, q, now);
			ss_pacer_schedule(&p, &f->pf);
			if (ndep < MAXDEP)
				dep_t[ndep++] = now;
		}
		if (n) {
			now += 1000;
		} else {
			uint64_t nx = ss_pacer_next_ns(&p);

			lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
			now = (nx > now ? nx : now) +
			      (lcg >> 33) % (rare_late && (lcg >> 60) == 0 ? 2000000 : 50000);
		}
	}
	CHECK(ndep < MAXDEP);
	/* Every span [dep i, dep j]: (j - i + 1) quanta <= burst + rate x span + q. */
	for (unsigned i = 0; i < ndep; i++) {
		sum = 0;
		for (unsigned j = i; j < ndep && dep_t[j] - dep_t[i] < 50000000; j++) {
			uint64_t allow = burst + rate * (dep_t[j] - dep_t[i]) / 1000000000 + q;

			sum += q;
			if (sum > allow && sum - allow > worst)
				worst = sum - allow;
		}
	}
	CHECK_EQ_U64(worst, 0);
	for (unsigned i = 0; i < NF; i++) {
		total += m[i].sent;
		lo = m[i].sent < lo ? m[i].sent : lo;
		hi = m[i].sent > hi ? m[i].sent : hi;
	}
	CHECK(total <= burst + rate * (end - 1000000) / 1000000000 + q);
	if (!rare_late)
		CHECK(total >= rate * (end - 1000000) / 1000000000 * 99 / 100);
	CHECK(hi - lo <= 2 * q);
	for (unsigned i = 0; i < NF; i++)
		ss_pacer_cancel(&p, &m[i].pf);
	CHECK_EQ_U64(g.n_wait, 0);
	ss_pacer_fini(&p);
}

/*
 * A group's FIFO is no funnel: 2048 RPC flows of one host (cc-share
 * host), each sending one 118-byte segment every 3.4 ms (600k a second)
 * and paced at 125 kB/s, against a 2 GB/s aggregate 1 MB deep, polled
 * every 20 us.  One flow is in the FIFO at the start (the group was in
 * debt).  Once charges have taught the group its mean (118 B), each poll
 * lets out everything due (at most OUT_MAX a poll, the rest next tick),
 * so every send leaves within two polls of its time and the FIFO
 * empties; at one release per tick, 50k polls a second could not keep up
 * with 600k sends and the FIFO held all 2048 flows for good.
 */
static void test_group_no_funnel(void)
{
	enum { NF = 2048 };
	const uint64_t rate = 2048000000, burst = 1024000, seg = 118, gap = 3400000;
	struct ss_pacer p;
	struct ss_pacer_params prm = dflt();
	struct ss_pacer_group g;
	static struct model_flow m[NF];
	static uint64_t due[NF];
	struct ss_pacer_flow *out[OUT_MAX];
	uint64_t now, late = 0, sends = 0, max_wait_end = 0;
	unsigned n;

	prm.max_lag_ns = 200000;
	CHECK_EQ_U64(ss_pacer_init(&p, &prm, 0), 0);
	CHECK_EQ_U64(ss_pacer_group_init(&g, rate, burst, 0), 0);
	ss_pacer_bucket_charge(&g.tb, burst + 1000, 0); /* in debt for ~0.5 ms */
	for (unsigned i = 0; i < NF; i++) {
		m[i] = (struct model_flow){0};
		ss_pacer_flow_init(&m[i].pf, 125000, 0);
		ss_pacer_flow_set_group(&m[i].pf, &g);
		due[i] = 1000 + (uint64_t)i * gap / NF; /* spread over one gap */
		m[i].pf.next_ns = due[i];
		ss_pacer_schedule(&p, &m[i].pf);
	}
	for (now = 20000; now < 200000000; now += 20000) { /* 200 ms */
		n = ss_pacer_poll(&p, now, out, OUT_MAX);
		for (unsigned j = 0; j < n; j++) {
			struct model_flow *f = (struct model_flow *)(void *)out[j];
			unsigned i = (unsigned)(f - m);

			ss_pacer_charge(&p, &f->pf, seg, now);
			sends++;
			if (now > 100000000 && now - due[i] > 2 * 20000 + 1000)
				late++;
			due[i] += gap; /* its next request's reply */
			f->pf.next_ns = f->pf.next_ns > due[i] ? f->pf.next_ns : due[i];
			ss_pacer_schedule(&p, &f->pf);
		}
		if (g.n_wait)
			max_wait_end = now > 100000000 && g.n_wait > max_wait_end ? g.n_wait : max_wait_end;
	}
	/* 200 ms of 2048 flows, one send each per 3.4 ms: ~120k sends. */
	CHECK(sends >= (uint64_t)NF * (200000000 / gap) * 99 / 100);
	CHECK_EQ_U64(late, 0);
	CHECK(max_wait_end <= OUT_MAX);
	CHECK(g.mean_charge >= seg && g.mean_charge <= seg + 8);
	for (unsigned i = 0; i < NF; i++)
		ss_pacer_cancel(&p, &m[i].pf);
	ss_pacer_fini(&p);
}

int main(void)
{
	test_init_args();
	test_bucket();
	test_inter_departure();
	test_lag();
	test_charge_inline();
	test_charge_group_inline();
	test_many_flows();
	test_cancel();
	test_order();
	test_group_cap();
	test_group_fifo();
	test_group_crowd(false);
	test_group_crowd(true);
	test_group_no_funnel();
	return check_done("test_pacer");
}
