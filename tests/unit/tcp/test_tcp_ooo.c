/* test_tcp_ooo.c - TCP engine out-of-order receive: intervals, eviction, SACK blocks, gap-fill ACKs (RFC 2018, RFC 5681 §4.2). */
#include "tcp_harness.h"

static struct harness h;

#define MSS_TS (1460 - 12)
#define BIG_RING 262144u /* 256 KiB: window scale 3 */

/*
 * The reference: which stream bytes the receiver holds (got[i] for the
 * peer's stream offset i, which is also the receive stream position).
 * model_store() applies a segment the way the engine must (RFC 2018 §8
 * eviction of the highest interval when all SS_TCP_OOO_MAX are in use),
 * model_check() compares rcv_nxt, rx_tail and every interval exactly.
 */
#define M_MAX 262144u
static uint8_t got[M_MAX];
static uint32_t m_total;

static uint32_t model_rcv(void)
{
	uint32_t i = 0;

	while (i < m_total && got[i])
		i++;
	return i;
}

/* The runs of held bytes beyond the first missing one, into @s/@e. */
static unsigned model_runs(uint32_t *s, uint32_t *e, unsigned cap)
{
	unsigned n = 0;
	uint32_t i = model_rcv();

	while (i < m_total) {
		if (!got[i]) {
			i++;
			continue;
		}
		uint32_t a = i;

		while (i < m_total && got[i])
			i++;
		if (n < cap) {
			s[n] = a;
			e[n] = i;
		}
		n++;
	}
	return n;
}

/* Returns 0 stored in order, 1 stored out of order, 2 dropped (no
 * interval free, above them all), 3 stored after evicting the highest. */
static int model_store(uint32_t a, uint32_t b)
{
	static uint32_t s[M_MAX / 2], e[M_MAX / 2];
	uint32_t r = model_rcv();
	int ret = 1;

	if (a <= r) {
		memset(got + a, 1, b - a);
		return 0;
	}
	unsigned n = model_runs(s, e, M_MAX / 2);
	bool touch = false;

	for (unsigned i = 0; i < n; i++)
		if (s[i] <= b && e[i] >= a)
			touch = true;
	if (!touch && n == SS_TCP_OOO_MAX) {
		if (a > e[n - 1])
			return 2;
		memset(got + s[n - 1], 0, e[n - 1] - s[n - 1]);
		ret = 3;
	}
	memset(got + a, 1, b - a);
	return ret;
}

static void model_reset(uint32_t total)
{
	memset(got, 0, sizeof(got));
	m_total = total;
}

static void model_check(void)
{
	static uint32_t s[SS_TCP_OOO_MAX + 1], e[SS_TCP_OOO_MAX + 1];
	uint32_t r = model_rcv();
	unsigned n = model_runs(s, e, SS_TCP_OOO_MAX + 1);

	CHECK_EQ_U64(h.c.f.rcv_nxt, h.cfg.peer_iss + 1 + r);
	CHECK_EQ_U64(h.c.f.rx_tail, r);
	CHECK_EQ_U64(h.c.ooo_n, n);
	for (unsigned i = 0; i < n && i < h.c.ooo_n; i++) {
		CHECK_EQ_U64(h.c.ooo[i].start, s[i]);
		CHECK_EQ_U64(h.c.ooo[i].len, e[i] - s[i]);
	}
}

/* The receive ring holds the peer's bytes [0, n) (wherever the origin
 * put them), compared with memcmp(). */
static bool rx_holds_stream(uint32_t from, uint32_t n)
{
	static uint8_t want[M_MAX], have[M_MAX];

	for (uint32_t i = 0; i < n; i++)
		want[i] = h_pat_peer(from + i);
	ss_tcp_ring_copy_out(&h.c.rx, from, have, n);
	return memcmp(want, have, n) == 0;
}

/* SACK block @b of segment @s as stream offsets. */
static uint32_t sack_l(const struct h_seg *s, unsigned b)
{
	return s->hdr.opts.sack[b].left - h.cfg.peer_iss - 1;
}

static uint32_t sack_r(const struct h_seg *s, unsigned b)
{
	return s->hdr.opts.sack[b].right - h.cfg.peer_iss - 1;
}

/* Every SACK block of @s is an interval held, none twice, as many as
 * fit (3 beside timestamps, else 4) or all there are. */
static void check_sack_blocks(const struct h_seg *s)
{
	unsigned fit = h.cfg.ts ? 3 : 4;
	unsigned want = h.c.ooo_n < fit ? h.c.ooo_n : fit;

	CHECK_EQ_U64(s->hdr.opts.sack_count, want);
	CHECK_EQ_U64(!!(s->hdr.opts.present & SS_TCP_OPTF_SACK), want > 0);
	for (unsigned b = 0; b < s->hdr.opts.sack_count; b++) {
		bool held = false;

		for (unsigned i = 0; i < h.c.ooo_n; i++)
			if (h.c.ooo[i].start == sack_l(s, b) &&
			    h.c.ooo[i].start + h.c.ooo[i].len == sack_r(s, b))
				held = true;
		CHECK(held);
		for (unsigned b2 = 0; b2 < b; b2++)
			CHECK(s->hdr.opts.sack[b2].left != s->hdr.opts.sack[b].left);
	}
}

/* The peer's bytes [@a, @b) arrive (acking all we sent); checked against
 * the model: an out-of-order segment draws one ACK at once, with the
 * block holding it first; in-order data is ACKed at the end of the burst
 * and, when it fills (part of) a gap, never held for the delayed ACK.
 * Returns model_store()'s verdict, or -1 for an old duplicate. */
static int ooo_send(uint32_t a, uint32_t b)
{
	uint32_t r = model_rcv();
	unsigned nout = h.nout;
	bool had_ooo = h.c.ooo_n != 0;
	uint64_t drop = h.c.st.drop_ooo_outside, ev = h.c.st.ooo_evicted;
	int v = b <= r ? -1 : model_store(a, b);

	h_peer_data_at(&h, a, b - a, h.c.f.snd_max, 0);
	model_check();
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, drop + (v == 2));
	CHECK_EQ_U64(h.c.st.ooo_evicted, ev + (v == 3));
	if (v == 0) {
		CHECK_EQ_U64(h.nout, nout);
		if (had_ooo)
			CHECK(h.c.f.flags & SS_TCPF_ACK_NOW);
		return v;
	}
	CHECK_EQ_U64(h.nout, nout + 1); /* the duplicate ACK, at once */
	const struct h_seg *s = h_last(&h);

	CHECK_EQ_U64(s->hdr.ack, h.c.f.rcv_nxt);
	CHECK_EQ_U64(s->hdr.window, (h.c.rx.size - (h.c.f.rx_tail - h.c.f.rx_head)) >>
					    h.c.f.rcv_wscale);
	check_sack_blocks(s);
	if (v == 1 || v == 3) /* RFC 2018 §4: the block of this segment first */
		CHECK(sack_l(s, 0) <= a && b <= sack_r(s, 0));
	return v;
}

/* The end of a burst: at most the one ACK, acknowledging rcv_nxt. */
static void ooo_flush(void)
{
	unsigned nout = h.nout;
	bool now = h.c.f.flags & SS_TCPF_ACK_NOW;

	h_output(&h);
	CHECK(h.nout == nout + now || (!now && h.nout == nout + 1)); /* or 2 MSS owed */
	if (h.nout > nout) {
		CHECK_EQ_U64(h_last(&h)->hdr.ack, h.c.f.rcv_nxt);
		check_sack_blocks(h_last(&h));
	}
	if (h.c.ooo_n) { /* nothing held for the delayed ACK */
		CHECK_EQ_U64(h.c.delack_deadline_us, 0);
		CHECK_EQ_U64(h.c.ack_pending, 0);
	}
	if (h.nout > H_MAX_SEGS - 8)
		h_clear(&h);
}

static void shuffle(uint32_t *v, unsigned n, uint64_t *rng)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = (unsigned)(check_rand(rng) % i);
		uint32_t t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

/*
 * Sixty holes, filled in random order: segments 2, 4, ... 120 of 1000
 * bytes arrive, 60 intervals; then 0, 1, 3, ... 119 in a seeded random
 * order, each step checked against the model (rcv_nxt, every interval)
 * and the ACKs it draws; at the end the 121000 bytes are the peer's,
 * byte for byte.
 */
static void test_ooo_sixty_holes(void)
{
	struct h_cfg cfg;
	uint64_t rng = 60;
	uint32_t fill[61];
	unsigned nf = 0;

	h_cfg_default(&cfg);
	cfg.rx_size = BIG_RING;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 3);
	model_reset(121000);
	for (uint32_t k = 2; k <= 120; k += 2)
		CHECK_EQ_U64(ooo_send(1000 * k, 1000 * k + 1000), 1);
	CHECK_EQ_U64(h.c.ooo_n, 60);
	CHECK_EQ_U64(h.c.f.ooo_start, 2000);
	CHECK_EQ_U64(h.c.f.ooo_len, 1000);
	CHECK_EQ_U64(h.c.rx_new, 0);
	fill[nf++] = 0;
	for (uint32_t k = 1; k < 120; k += 2)
		fill[nf++] = k;
	shuffle(fill, nf, &rng);
	h_clear(&h);
	uint32_t rx = 0;
	for (unsigned i = 0; i < nf; i++) {
		ooo_send(1000 * fill[i], 1000 * fill[i] + 1000);
		rx += h.c.rx_new;
		h.c.rx_new = 0;
		ooo_flush();
	}
	CHECK_EQ_U64(h.c.ooo_n, 0);
	CHECK_EQ_U64(h.c.f.ooo_len, 0);
	CHECK_EQ_U64(rx, 121000);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 1 + 121000);
	CHECK(rx_holds_stream(0, 121000));
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, 0);
	CHECK_EQ_U64(h.c.st.ooo_evicted, 0);
	harness_free(&h);
}

/*
 * A stream sent in segments of random sizes with random loss, then the
 * holes resent cut differently (overlapping what arrived), in random
 * order with loss again, until all of it is in; sequence numbers wrap
 * round 2^32 on the way.  With @mss small and @loss high the intervals
 * run out and the highest ones are evicted; the model says exactly
 * which.  Reassembly is checked byte for byte at the end.
 */
static void ooo_random(uint64_t seed, uint32_t total, uint32_t mss, unsigned loss_pct,
		       bool ts, bool want_evict)
{
	static uint32_t seg_a[M_MAX / 64], seg_b[M_MAX / 64], order[M_MAX / 64];
	struct h_cfg cfg;
	uint64_t rng = seed;
	unsigned most = 0, rounds = 0;

	h_cfg_default(&cfg);
	cfg.rx_size = BIG_RING;
	cfg.peer_iss = 0xffffffffu - 50000;
	cfg.ts = ts;
	cfg.delack_us = 40000; /* the delayed ACK must not hold gap fills */
	harness_established(&h, &cfg);
	model_reset(total);
	/* First pass, in order but for the losses. */
	for (uint32_t a = 0; a < total;) {
		uint32_t len = 100 + (uint32_t)(check_rand(&rng) % (mss - 99));
		uint32_t b = a + len < total ? a + len : total;

		if (check_rand(&rng) % 100 >= loss_pct) {
			ooo_send(a, b);
			if (h.c.ooo_n > most)
				most = h.c.ooo_n;
			if (check_rand(&rng) % 4 == 0)
				ooo_flush();
		}
		a = b;
	}
	ooo_flush();
	/* Then the holes, until none is left. */
	while (model_rcv() < total && rounds++ < 100) {
		unsigned n = 0;

		for (uint32_t i = model_rcv(); i < total && n < M_MAX / 64;) {
			if (got[i]) {
				i++;
				continue;
			}
			uint32_t e = i;

			while (e < total && !got[e])
				e++;
			/* The hole in pieces, some reaching back into what
			 * arrived before them. */
			for (uint32_t a = i; a < e && n < M_MAX / 64;) {
				uint32_t len = 100 + (uint32_t)(check_rand(&rng) % (mss - 99));
				uint32_t b = a + len < e ? a + len : e;
				uint32_t back = (uint32_t)(check_rand(&rng) % 3) * 50;

				seg_a[n] = a >= back ? a - back : 0;
				seg_b[n] = b;
				order[n] = n;
				n++;
				a = b;
			}
			i = e;
		}
		shuffle(order, n, &rng);
		for (unsigned k = 0; k < n; k++) {
			if (check_rand(&rng) % 100 < loss_pct / 3)
				continue;
			ooo_send(seg_a[order[k]], seg_b[order[k]]);
			if (h.c.ooo_n > most)
				most = h.c.ooo_n;
			if (check_rand(&rng) % 3 == 0)
				ooo_flush();
		}
		ooo_flush();
	}
	CHECK_EQ_U64(model_rcv(), total);
	CHECK_EQ_U64(h.c.ooo_n, 0);
	CHECK_EQ_U64(h.c.f.rx_tail, total);
	CHECK(rx_holds_stream(0, total));
	CHECK(most >= 40);
	CHECK_EQ_U64(h.c.st.ooo_evicted > 0, want_evict);
	harness_free(&h);
}

static void test_ooo_random(void)
{
	/* Full segments, 20-25 % loss over 200 KB: some 40-60 holes at
	 * once, none evicted. */
	ooo_random(1, 200000, MSS_TS, 20, true, false);
	ooo_random(2, 200000, MSS_TS, 25, false, false);
	/* Small segments, 30 % loss: more holes than intervals. */
	ooo_random(3, 60000, 200, 30, true, true);
	ooo_random(4, 100000, 400, 30, false, true);
}

/*
 * All SS_TCP_OOO_MAX intervals in use: a segment above them all is
 * dropped and counted, one that touches an interval still merges, and
 * one below the highest takes the highest one's place (counted); the
 * forgotten data is taken again when resent.
 */
static void test_ooo_evict_when_full(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = BIG_RING;
	harness_established(&h, &cfg);
	model_reset(14000);
	for (uint32_t k = 0; k < SS_TCP_OOO_MAX; k++)
		CHECK_EQ_U64(ooo_send(1000 + 200 * k, 1100 + 200 * k), 1);
	CHECK_EQ_U64(h.c.ooo_n, 64);
	CHECK_EQ_U64(h.c.ooo[63].start, 13600);
	/* Above them all: dropped, nothing written; the ACK still goes. */
	h_clear(&h);
	CHECK_EQ_U64(ooo_send(13800, 13900), 2);
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, 1);
	for (uint32_t i = 13800; i < 13900; i++)
		CHECK_EQ_U64(h.rxbuf[i], 0);
	CHECK_EQ_U64(sack_l(&h.out[0], 0), 13600); /* the latest block held */
	/* Touching the highest: merged, no interval needed. */
	CHECK_EQ_U64(ooo_send(13700, 13750), 1);
	CHECK_EQ_U64(h.c.ooo_n, 64);
	CHECK_EQ_U64(h.c.ooo[63].len, 150);
	/* Below the lowest: the highest ([13600, 13750)) goes. */
	h_clear(&h);
	CHECK_EQ_U64(ooo_send(500, 600), 3);
	CHECK_EQ_U64(h.c.st.ooo_evicted, 1);
	CHECK_EQ_U64(h.c.ooo_n, 64);
	CHECK_EQ_U64(h.c.f.ooo_start, 500);
	CHECK_EQ_U64(h.c.f.ooo_len, 100);
	CHECK_EQ_U64(h.c.ooo[63].start, 13400);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack[0].left, cfg.peer_iss + 1 + 500);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack[0].right, cfg.peer_iss + 1 + 600);
	/* Between two intervals: [13400, 13500) goes. */
	CHECK_EQ_U64(ooo_send(3120, 3180), 3);
	CHECK_EQ_U64(h.c.st.ooo_evicted, 2);
	CHECK_EQ_U64(h.c.ooo[12].start, 3120);
	CHECK_EQ_U64(h.c.ooo[63].start, 13200);
	/* A bridge merges three intervals into one: room again. */
	CHECK_EQ_U64(ooo_send(3100, 3200), 1);
	CHECK_EQ_U64(h.c.ooo_n, 62);
	CHECK_EQ_U64(h.c.ooo[11].start, 3000);
	CHECK_EQ_U64(h.c.ooo[11].len, 300);
	/* Then everything, in order: the forgotten bytes come again. */
	h_clear(&h);
	for (uint32_t a = 0; a < 14000; a += 1000) {
		ooo_send(a, a + 1000);
		ooo_flush();
	}
	CHECK_EQ_U64(h.c.ooo_n, 0);
	CHECK(rx_holds_stream(0, 14000));
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, 1);
	CHECK_EQ_U64(h.c.st.ooo_evicted, 2);
	harness_free(&h);
}

/* rcv_nxt reaches the intervals: a segment that stops short absorbs
 * nothing, one spanning several absorbs all it reaches (and only that),
 * one running past the last empties the list. */
static void test_ooo_absorb(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	model_reset(6000);
	ooo_send(2000, 2500);
	ooo_send(3000, 3500);
	ooo_send(4000, 4500);
	ooo_send(5000, 5100);
	h_clear(&h);
	CHECK_EQ_U64(ooo_send(0, 1000), 0);
	CHECK_EQ_U64(h.c.rx_new, 1000);
	CHECK_EQ_U64(h.c.ooo_n, 4);
	ooo_flush();
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 1000);
	/* [1000, 4200): the first two and part of the third. */
	h_clear(&h);
	CHECK_EQ_U64(ooo_send(1000, 4200), 0);
	CHECK_EQ_U64(h.c.rx_new, 3500);
	CHECK_EQ_U64(h.c.f.rx_tail, 4500);
	CHECK_EQ_U64(h.c.ooo_n, 1);
	CHECK_EQ_U64(h.c.f.ooo_start, 5000);
	CHECK_EQ_U64(h.c.f.ooo_len, 100);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 4500);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack_count, 1);
	CHECK_EQ_U64(sack_l(&h.out[0], 0), 5000);
	CHECK_EQ_U64(sack_r(&h.out[0], 0), 5100);
	/* Past the last one: no interval, no SACK option. */
	h_clear(&h);
	CHECK_EQ_U64(ooo_send(4500, 6000), 0);
	CHECK_EQ_U64(h.c.rx_new, 1500);
	CHECK_EQ_U64(h.c.ooo_n, 0);
	CHECK_EQ_U64(h.c.f.ooo_len, 0);
	CHECK_EQ_U64(h.c.ooo_hist_n, 0);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 6000);
	CHECK(!(h.out[0].hdr.opts.present & SS_TCP_OPTF_SACK));
	CHECK(rx_holds_stream(0, 6000));
	harness_free(&h);
}

/* An old duplicate (below rcv_nxt): answered by an ACK that changes
 * nothing but the SACK rotation; returns that ACK. */
static const struct h_seg *dup_ack(void)
{
	unsigned nout = h.nout;

	h_peer_data_at(&h, 0, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, nout + 1);
	return h_last(&h);
}

/* SACK block @b of @s is interval I_k: [1000 + 200k, 1100 + 200k). */
static bool block_is(const struct h_seg *s, unsigned b, uint32_t k)
{
	return b < s->hdr.opts.sack_count && sack_l(s, b) == 1000 + 200 * k &&
	       sack_r(s, b) == 1100 + 200 * k;
}

/*
 * RFC 2018 §4: the first block holds the segment that triggered the ACK;
 * the next ones repeat the most recently reported first blocks; with more
 * intervals than fit, the last one rotates through the intervals in
 * order, skipping those already in the option.
 */
static void test_ooo_sack_rotation(void)
{
	struct h_cfg cfg;
	/* The rotating block during I_3..I_9's ACKs, then 11 duplicates. */
	static const uint32_t rot[] = { 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1 };

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	model_reset(4000);
	ooo_send(0, 500);
	ooo_flush();
	h_clear(&h);
	/* Ten intervals I_0..I_9, each the latest in turn. */
	for (uint32_t k = 0; k < 10; k++) {
		ooo_send(1000 + 200 * k, 1100 + 200 * k);
		const struct h_seg *s = h_last(&h);

		CHECK(block_is(s, 0, k));
		if (k >= 1)
			CHECK(block_is(s, 1, k - 1));
		if (k == 2)
			CHECK(block_is(s, 2, 0)); /* all three fit */
		if (k >= 3)
			CHECK(block_is(s, 2, rot[k - 3]));
	}
	/* Duplicates: I_9 and I_8 stay, the third block goes round. */
	for (unsigned j = 0; j < 11; j++) {
		const struct h_seg *s = dup_ack();

		CHECK_EQ_U64(s->hdr.opts.sack_count, 3);
		CHECK(block_is(s, 0, 9) && block_is(s, 1, 8));
		CHECK(block_is(s, 2, rot[7 + j]));
	}
	/* A segment extending I_2: its block first, then the latest other
	 * one (I_9); the rotation goes on from I_1 (I_2 is in). */
	h_clear(&h);
	ooo_send(1500, 1550);
	CHECK_EQ_U64(sack_l(&h.out[0], 0), 1400);
	CHECK_EQ_U64(sack_r(&h.out[0], 0), 1550);
	CHECK(block_is(&h.out[0], 1, 9));
	CHECK(block_is(&h.out[0], 2, 3));
	CHECK_EQ_U64(h.c.ooo_hist_n, 4); /* I_2, I_9, I_8, I_7 */
	CHECK_EQ_U64(h.c.ooo_hist[0], 1500);

	/* Without timestamps four blocks fit: three recent, one rotating. */
	cfg.ts = false;
	harness_established(&h, &cfg);
	model_reset(4000);
	ooo_send(0, 500);
	ooo_flush();
	h_clear(&h);
	for (uint32_t k = 0; k < 6; k++)
		ooo_send(1000 + 200 * k, 1100 + 200 * k);
	const struct h_seg *s = h_last(&h);
	CHECK_EQ_U64(s->hdr.opts.sack_count, 4);
	CHECK(block_is(s, 0, 5) && block_is(s, 1, 4) && block_is(s, 2, 3) && block_is(s, 3, 1));
	s = dup_ack();
	CHECK(block_is(s, 0, 5) && block_is(s, 1, 4) && block_is(s, 2, 3) && block_is(s, 3, 2));
	s = dup_ack();
	CHECK(block_is(s, 3, 0)); /* I_3..I_5 are in: round to I_0 */
	harness_free(&h);
}

/* With 60 intervals every one of them is reported within 60 ACKs, and
 * the two latest in every ACK. */
static void test_ooo_sack_covers_all(void)
{
	struct h_cfg cfg;
	bool seen[64] = { false };

	h_cfg_default(&cfg);
	cfg.rx_size = BIG_RING;
	harness_established(&h, &cfg);
	model_reset(20000);
	ooo_send(0, 500);
	ooo_flush();
	h_clear(&h);
	for (uint32_t k = 0; k < 60; k++)
		ooo_send(1000 + 200 * k, 1100 + 200 * k);
	h_clear(&h);
	for (unsigned j = 0; j < 60; j++) {
		const struct h_seg *s = dup_ack();

		CHECK(block_is(s, 0, 59) && block_is(s, 1, 58));
		for (unsigned b = 0; b < s->hdr.opts.sack_count; b++)
			seen[(sack_l(s, b) - 1000) / 200] = true;
	}
	for (unsigned k = 0; k < 60; k++)
		CHECK(seen[k]);
	harness_free(&h);
}

/*
 * RFC 5681 §4.2 with the delayed ACK on: in-order data alone is held;
 * an out-of-order segment is ACKed at once (with what was held); data
 * filling part of the gap, and the rest of it, are ACKed at the end of
 * their burst, not held; with nothing out of order the hold is back.
 */
static void test_ooo_gap_fill_ack(void)
{
	struct h_cfg cfg;
	uint32_t base;

	h_cfg_default(&cfg);
	cfg.delack_us = 40000;
	harness_established(&h, &cfg);
	base = cfg.peer_iss + 1;
	model_reset(10000);
	ooo_send(0, 1000);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 0); /* held */
	CHECK_EQ_U64(h.c.delack_deadline_us, h.now + 40000);
	ooo_send(3000, 4000);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, base + 1000);
	CHECK_EQ_U64(h.c.delack_deadline_us, 0);
	CHECK_EQ_U64(h.c.ack_pending, 0);
	/* Part of the gap: ACK now. */
	h_clear(&h);
	ooo_send(1000, 1500);
	CHECK(h.c.f.flags & SS_TCPF_ACK_NOW);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, base + 1500);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack_count, 1);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack[0].left, base + 3000);
	/* The rest of it: ACK now, the interval absorbed. */
	h_clear(&h);
	ooo_send(1500, 3000);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, base + 4000);
	CHECK(!(h.out[0].hdr.opts.present & SS_TCP_OPTF_SACK));
	/* Nothing out of order: the hold again. */
	h_clear(&h);
	ooo_send(4000, 4100);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.delack_deadline_us, h.now + 40000);
	harness_free(&h);
}

/*
 * The window while data is held out of order: the ring's free space from
 * rcv_nxt (held data lies inside it), its right edge never moving back; a
 * segment up to the edge is kept, beyond it trimmed.
 */
static void test_ooo_window(void)
{
	struct h_cfg cfg;
	uint32_t base;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	base = cfg.peer_iss + 1;
	model_reset(20000);
	ooo_send(0, 3000);
	ooo_flush();
	h_clear(&h);
	ooo_send(5000, 7000);
	CHECK_EQ_U64(h.out[0].hdr.window, 16384 - 3000);
	CHECK_EQ_U64(h.c.f.rcv_adv, base + 16384);
	/* Up to the right edge: kept. */
	ooo_send(16000, 16384);
	CHECK_EQ_U64(h.c.ooo_n, 2);
	CHECK_EQ_U64(h.out[1].hdr.window, 16384 - 3000);
	/* Beyond it: trimmed to the edge, counted, merged. */
	h_peer_data_at(&h, 16300, 200, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.drop_out_of_window, 1);
	CHECK_EQ_U64(h.c.ooo_n, 2);
	CHECK_EQ_U64(h.c.ooo[1].start, 16000);
	CHECK_EQ_U64(h.c.ooo[1].len, 384);
	CHECK_EQ_U64(h.out[2].hdr.window, 16384 - 3000);
	/* The app reads: the window opens (SWS avoidance), blocks stay. */
	h_clear(&h);
	CHECK(ss_tcp_recv_done(&h.c, 3000) == 0);
	ooo_flush();
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.window, 16384);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack_count, 2);
	CHECK_EQ_U64(h.c.f.rcv_adv, base + 3000 + 16384);
	/* The gap filled: 4000 unread, the edge where it was. */
	h_clear(&h);
	ooo_send(3000, 5000);
	ooo_flush();
	CHECK_EQ_U64(h.out[0].hdr.ack, base + 7000);
	CHECK_EQ_U64(h.out[0].hdr.window, 16384 - 4000);
	CHECK_EQ_U64(h.c.f.rcv_adv, base + 3000 + 16384);
	CHECK(rx_holds_stream(3000, 4000));
	harness_free(&h);
}

/* Intervals across the ring's end (the origin stays while data is out
 * of order), merged across it and absorbed; the bytes where they
 * belong. */
static void test_ooo_ring_wrap(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	model_reset(18000);
	for (uint32_t a = 0; a < 15000; a += 1000)
		ooo_send(a, a + 1000);
	ooo_flush();
	CHECK(ss_tcp_recv_done(&h.c, 15000) == 0);
	CHECK_EQ_U64(h.c.rx.origin, 0);
	h_clear(&h);
	ooo_send(16000, 16800); /* 16000..16383, then 0..415 of the ring */
	ooo_send(17000, 17200);
	ooo_send(15500, 15600);
	CHECK_EQ_U64(h.c.ooo_n, 3);
	CHECK_EQ_U64(h.rxbuf[16383], h_pat_peer(16383));
	CHECK_EQ_U64(h.rxbuf[0], h_pat_peer(16384));
	ooo_send(16800, 17000);
	CHECK_EQ_U64(h.c.ooo_n, 2);
	CHECK_EQ_U64(h.c.ooo[1].start, 16000);
	CHECK_EQ_U64(h.c.ooo[1].len, 1200);
	CHECK_EQ_U64(h.c.rx.origin, 0);
	h_clear(&h);
	ooo_send(15000, 16000);
	CHECK_EQ_U64(h.c.rx_new, 2200);
	CHECK_EQ_U64(h.c.ooo_n, 0);
	ooo_flush();
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 17200);
	CHECK(rx_holds_stream(15000, 2200));
	CHECK_EQ_U64(h.rxbuf[(17199) & 16383], h_pat_peer(17199));
	harness_free(&h);
}

int main(void)
{
	test_ooo_sixty_holes();
	test_ooo_random();
	test_ooo_evict_when_full();
	test_ooo_absorb();
	test_ooo_sack_rotation();
	test_ooo_sack_covers_all();
	test_ooo_gap_fill_ack();
	test_ooo_window();
	test_ooo_ring_wrap();
	return check_done("test_tcp_ooo");
}
