/* test_tcp_rack.c - RACK loss detection (RFC 8985 §6): exact loss times, the reorder timer, lost resends, no spurious resends. */
#include "tcp_harness.h"

static struct harness h;

#define MSS_TS (1460 - 12)
#define RTT 10000u       /* harness_established()'s round trip, microseconds */
#define REO (RTT / 4)    /* reo_wnd: a quarter of the minimum RTT */

/* An ACK of @ack with SACK blocks [l, r) in segments from @una. */
static struct ss_tcp sack_ack(uint32_t una, uint32_t ack, unsigned n, const uint32_t *lr)
{
	struct ss_tcp s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, ack, 65535, NULL, 0);

	s.opts.present |= SS_TCP_OPTF_SACK;
	s.opts.sack_count = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		s.opts.sack[i].left = una + lr[2 * i] * MSS_TS;
		s.opts.sack[i].right = una + lr[2 * i + 1] * MSS_TS;
	}
	return s;
}

/* Data segments since the last h_clear() below snd_max before them. */
static unsigned resent(uint32_t limit, uint32_t *first)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h.nout; i++) {
		if (h.out[i].len && ss_seq_lt(h.out[i].hdr.seq, limit)) {
			if (!n && first)
				*first = h.out[i].hdr.seq;
			n++;
		}
	}
	return n;
}

/* Established; @segs segments sent at once (one burst) at h.now, under a
 * control loop's window of as many (WINDOW mode: recovery sends new data
 * as far as cwnd - pipe allows), and @more queued behind them (with new
 * data to send, NextSeg() rule 4 has no rescue to send: only what RACK
 * finds lost is resent).  Returns snd_una. */
static uint32_t setup(unsigned segs, unsigned more)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.tlp_min_us = 10000;
	harness_established(&h, &cfg);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, segs * MSS_TS, false);
	CHECK(h_app_send(&h, (segs + more) * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, segs);
	h_clear(&h);
	return cfg.iss + 1;
}

/* One SACK of a later segment of the same burst: the first waits the
 * reordering window from the SACK (RACK.rtt + reo_wnd after it was
 * sent), on the reorder timer; not resent a microsecond before, resent
 * alone exactly then. */
static void test_rack_reorder_timer(void)
{
	uint32_t una = setup(4, 4), seq = 0;
	uint64_t t0 = h.now;

	h.now = t0 + RTT;
	const uint32_t b[] = { 1, 2 };
	struct ss_tcp s = sack_ack(una, una, 1, b);

	h_input(&h, &s);
	h_output(&h);
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, NULL), 0);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(h.c.rack_min_rtt_us, RTT);
	CHECK_EQ_U64(tcp_rack_reo_wnd(&h.c), REO);
	CHECK_EQ_U64(h.c.tlp_deadline_us, t0 + RTT + REO);
	CHECK_EQ_U64(h.c.rack_reo_us, t0 + RTT + REO);
	CHECK_EQ_U64(ss_tcp_next_deadline_no_delack(&h.c), t0 + RTT + REO);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t0 + RTT + REO);
	CHECK(h.c.rto_deadline_us > t0 + RTT + REO);
	h.now = t0 + RTT + REO - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now = t0 + RTT + REO;
	h_timer(&h);
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.st.rack_timeouts, 1);
	CHECK_EQ_U64(h.c.st.rack_lost, 1);
	CHECK_EQ_U64(h.c.st.tail_probes, 0);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
	/* Segments 2 and 3 were sent after segment 1: not lost, no timer. */
	CHECK(h.c.tlp_deadline_us == 0);
}

/* A segment SACKed that left more than reo_wnd after the hole: the hole
 * is lost at once, with that ACK; the segments after the SACKed one are
 * not. */
static void send_later(uint64_t at)
{
	h.now = at; /* three more (the window opens to 4), one queued */
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, 4 * MSS_TS, false);
	CHECK(h_app_send(&h, 4 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	h_clear(&h);
}

static void test_rack_sent_later_elapsed(void)
{
	uint32_t una = setup(1, 0), seq = 0;
	uint64_t t0 = h.now;

	send_later(t0 + REO + 1);
	h.now = t0 + REO + 1 + RTT;
	const uint32_t b[] = { 1, 2 };
	struct ss_tcp s = sack_ack(una, una, 1, b);

	h_input(&h, &s);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
	CHECK_EQ_U64(h.c.st.rack_lost, 1);
	CHECK_EQ_U64(h.c.tlp_deadline_us, 0);

	/* The same, the later segments sent just under reo_wnd after the
	 * first: within the window still at the SACK (RACK.rtt + reo_wnd
	 * has not passed since the first left); lost when it has. */
	una = setup(1, 0);
	t0 = h.now;
	send_later(t0 + REO - 1);
	h.now = t0 + REO - 1 + RTT;
	s = sack_ack(una, una, 1, b);
	h_input(&h, &s);
	h_output(&h);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, NULL), 0);
	CHECK_EQ_U64(h.c.tlp_deadline_us, t0 + RTT + REO);
	h.now = t0 + RTT + REO - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now = t0 + RTT + REO;
	h_timer(&h);
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
}

/* The hole's ACK arrives within reo_wnd (reordering, not loss): nothing
 * is resent, the reorder deadline leaves the slot, and its time passes
 * without a resend. */
static void test_rack_no_spurious(void)
{
	uint32_t una = setup(4, 4);
	uint64_t t0 = h.now;

	h.now = t0 + RTT;
	const uint32_t b[] = { 1, 2 };
	struct ss_tcp s = sack_ack(una, una, 1, b);

	h_input(&h, &s);
	CHECK_EQ_U64(h.c.tlp_deadline_us, t0 + RTT + REO);
	h.now = t0 + RTT + REO - 1;
	s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, una + 2 * MSS_TS, 65535, NULL, 0);
	h_input(&h, &s);
	h_output(&h);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK(h.c.tlp_deadline_us != t0 + RTT + REO);
	h.now = t0 + RTT + REO;
	h_timer(&h);
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, NULL), 0);
	CHECK_EQ_U64(h.c.st.retrans_segs, 0);
	CHECK_EQ_U64(h.c.st.rack_lost, 0);
	/* The rest is acknowledged: nothing was ever resent. */
	s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, una + 4 * MSS_TS, 65535, NULL, 0);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.retrans_segs, 0);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
}

/* The resend is lost too: new data sent after it is SACKed, and once the
 * window has passed since the resend left, it goes again (RFC 8985
 * §6.2: a resend has its own transmit time), on the reorder timer. */
static void test_rack_lost_retransmission(void)
{
	uint32_t una = setup(4, 1), seq = 0;
	uint64_t t0 = h.now;

	h.now = t0 + RTT;
	const uint32_t b[] = { 1, 2 };
	struct ss_tcp s = sack_ack(una, una, 1, b);

	h_input(&h, &s);
	uint64_t t1 = t0 + RTT + REO;

	h.now = t1;
	h_timer(&h); /* segment 0 resent at t1, then the new segment 4 */
	CHECK_EQ_U64(resent(una + 4 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.seq, una + 4 * MSS_TS);
	h_clear(&h);
	/* 1 to 4 SACKed, 0 still missing: segment 4 left after the resend
	 * (the same microsecond, higher sequence: RFC 8985 §6.2's tie
	 * rule), so the resend is lost once RACK.rtt + reo_wnd has passed
	 * since it left. */
	h.now = t1 + RTT;
	const uint32_t b2[] = { 1, 5 };
	s = sack_ack(una, una, 1, b2);
	h_input(&h, &s);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.lost_rexmits, 0);
	CHECK_EQ_U64(h.c.tlp_deadline_us, t1 + RTT + REO);
	h.now = t1 + RTT + REO - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now = t1 + RTT + REO;
	h_timer(&h);
	CHECK_EQ_U64(resent(una + 5 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.st.lost_rexmits, 1);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
	/* It arrives: everything is acknowledged, recovery ends. */
	h_clear(&h);
	h.now += RTT;
	s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, una + 5 * MSS_TS, 65535, NULL, 0);
	h_input(&h, &s);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(h.c.f.snd_una, h.c.f.snd_max);
}

/* A tail loss probe's SACK feeds RACK: the last segment probed and
 * SACKed, the hole before it (same burst) is resent after reo_wnd. */
static void test_rack_after_probe(void)
{
	uint32_t una = setup(2, 0), seq = 0;

	CHECK(h.c.tlp_deadline_us != 0);
	h_fire(&h); /* the probe: segment 1 again */
	CHECK_EQ_U64(h.c.st.tail_probes, 1);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una + MSS_TS);
	h_clear(&h);
	h.now += RTT;
	const uint32_t b[] = { 1, 2 };
	struct ss_tcp s = sack_ack(una, una, 1, b);

	uint64_t t = h.now;

	h_input(&h, &s);
	h_output(&h);
	/* Segment 1's transmit time is its first (the probe is not
	 * recorded), so its RACK.rtt, and the minimum, include the wait for
	 * the probe: reo_wnd is then SRTT.  Segment 0, of the same burst,
	 * waits that long. */
	CHECK_EQ_U64(resent(una + 2 * MSS_TS, NULL), 0);
	CHECK_EQ_U64(tcp_rack_reo_wnd(&h.c), h.c.f.srtt_us);
	CHECK_EQ_U64(h.c.tlp_deadline_us, t + h.c.f.srtt_us);
	h.now = t + h.c.f.srtt_us - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now = t + h.c.f.srtt_us;
	h_timer(&h);
	CHECK_EQ_U64(resent(una + 2 * MSS_TS, &seq), 1);
	CHECK_EQ_U64(seq, una);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
}

/* The transmit records: one per burst (same microsecond), pairwise merged
 * when the ring is full with nothing acknowledged. */
static void test_rack_records(void)
{
	uint32_t una = setup(3, 0);

	CHECK_EQ_U64(h.c.xrec_n, 1);
	CHECK_EQ_U64(h.c.xrec[h.c.xrec_head].end, una + 3 * MSS_TS);
	for (unsigned i = 0; i < SS_TCP_XREC_MAX + 1; i++)
		tcp_rack_sent(&h.c, una + 3 * MSS_TS + i + 1, h.now + i + 1);
	CHECK_EQ_U64(h.c.xrec_n, SS_TCP_XREC_MAX / 2 + 2);
	const struct ss_tcp_xrec *r = &h.c.xrec[h.c.xrec_head];

	CHECK_EQ_U64(r->first, (uint32_t)h.now);
	CHECK_EQ_U64(r->last, (uint32_t)h.now + 1);
	CHECK_EQ_U64(r->end, una + 3 * MSS_TS + 1);
}

int main(void)
{
	test_rack_reorder_timer();
	test_rack_sent_later_elapsed();
	test_rack_no_spurious();
	test_rack_lost_retransmission();
	test_rack_after_probe();
	test_rack_records();
	harness_free(&h);
	return check_done("test_tcp_rack");
}
