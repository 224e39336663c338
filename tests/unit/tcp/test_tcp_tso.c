/* test_tcp_tso.c - segmentation offload in the engine: how much new data one segment carries, and when it stays one MSS. */
#include "tcp_harness.h"

#define MSS_TS (1460 - 12)

static struct harness h;

/* ESTABLISHED with timestamps, a window of 16 MSS, TSO up to 4 MSS (the
 * limit given a little above, as a port's would be), nothing captured. */
static void established(bool ecn)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_init(&h, &cfg);
	h.p.ecn = ecn;
	CHECK(ss_tcp_connect(&h.c, h.now) == 0);
	h.now += 10000;
	struct ss_tcp s = h_synack_make(&h);
	if (ecn)
		s.flags |= SS_TCP_ECE;
	h_input(&h, &s);
	h.peer_nxt = cfg.peer_iss + 1;
	h_output(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.f.mss, MSS_TS);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, 16 * MSS_TS, false);
	ss_tcp_conn_set_tso(&h.c, 4 * MSS_TS + 100);
	h_clear(&h);
}

/* Captured segments @from.. are contiguous from @seq, carry our pattern,
 * and have payloads @lens (0-terminated); PSH on the last only. */
static void check_run(unsigned from, uint32_t seq, const uint32_t *lens)
{
	unsigned i = from;

	for (; *lens; lens++, i++) {
		CHECK(i < h.nout);
		if (i >= h.nout)
			return;
		CHECK_EQ_U64(h.out[i].hdr.seq, seq);
		CHECK_EQ_U64(h.out[i].len, *lens);
		CHECK(h_seg_matches(&h, &h.out[i]));
		CHECK_EQ_U64(!!(h.out[i].hdr.flags & SS_TCP_PSH), lens[1] == 0);
		seq += *lens;
	}
	CHECK_EQ_U64(h.nout, i);
}

/* New data: segments of 4 MSS (the limit rounded down to the MSS), the
 * rest in the last; the flight is what the window allows. */
static void test_tso_new_data(void)
{
	established(false);
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 10 * MSS_TS + 500) == 0);
	h_output(&h);
	const uint32_t lens[] = { 4 * MSS_TS, 4 * MSS_TS, 2 * MSS_TS + 500, 0 };
	check_run(0, una, lens);
	CHECK_EQ_U64(h.c.f.snd_max - una, 10 * MSS_TS + 500);
	CHECK_EQ_U64(h.c.st.retrans_segs, 0);

	/* The window's edge cuts the segment: 16 MSS in flight at most. */
	h_clear(&h);
	CHECK(h_app_send(&h, 10 * MSS_TS) == 0);
	h_output(&h);
	const uint32_t lens2[] = { 4 * MSS_TS, 2 * MSS_TS - 500, 0 };
	check_run(0, una + 10 * MSS_TS + 500, lens2);
	CHECK_EQ_U64(h.c.f.snd_max - una, 16 * MSS_TS);

	/* The ACK opens the window for the rest, 4 MSS and 500 bytes: a TSO
	 * segment, then 500 bytes (an MSS or less left: no TSO). */
	h_clear(&h);
	h_peer_ack(&h, h.c.f.snd_max, 65535);
	h_output(&h);
	const uint32_t lens3[] = { 4 * MSS_TS, 500, 0 };
	check_run(0, una + 16 * MSS_TS, lens3);
	harness_free(&h);
}

/* A limit under two MSS is none: one MSS a segment. */
static void test_tso_limit_small(void)
{
	established(false);
	ss_tcp_conn_set_tso(&h.c, 2 * MSS_TS - 1);
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 3 * MSS_TS) == 0);
	h_output(&h);
	const uint32_t lens[] = { MSS_TS, MSS_TS, MSS_TS, 0 };
	check_run(0, una, lens);
	harness_free(&h);
}

/* A paced flow: a segment stays within the budget (rounded down to the
 * MSS, at least one MSS), as the pacer charges it whole. */
static void test_tso_budget(void)
{
	established(false);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_RATE, 16 * MSS_TS, false);
	h.c.tx_budget = 3 * MSS_TS + 7;
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 10 * MSS_TS) == 0);
	h_output(&h);
	/* 3 MSS (budget 7 left), then one MSS, which overdraws it. */
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[0].len, 3 * MSS_TS);
	CHECK_EQ_U64(h.out[1].len, MSS_TS);
	CHECK_EQ_U64(h.out[1].hdr.seq, una + 3 * MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]) && h_seg_matches(&h, &h.out[1]));
	CHECK_EQ_U64(h.c.tx_budget, 0);
	CHECK_EQ_U64(h.c.budget_hit, 1);
	harness_free(&h);
}

/* After a timeout the flight is resent go-back-N, one MSS a segment; new
 * data after it goes in TSO segments again. */
static void test_tso_resend_one_mss(void)
{
	established(false);
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 8 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2);
	h_clear(&h);
	h.now = h.c.rto_deadline_us;
	h_timer(&h);
	CHECK(h.nout >= 1);
	uint32_t seq = una;
	for (unsigned i = 0; i < h.nout; i++) {
		CHECK_EQ_U64(h.out[i].hdr.seq, seq);
		CHECK(h.out[i].len > 0 && h.out[i].len <= MSS_TS);
		CHECK(h_seg_matches(&h, &h.out[i]));
		seq += h.out[i].len;
	}
	CHECK_EQ_U64(h.c.st.retrans_segs, h.nout);
	/* The peer had it all: its ACK ends the resend; new data is cut
	 * by the port again. */
	h_clear(&h);
	h_peer_ack(&h, una + 8 * MSS_TS, 65535);
	CHECK_EQ_U64(h.c.f.snd_una, una + 8 * MSS_TS);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, 16 * MSS_TS, false);
	CHECK(h_app_send(&h, 8 * MSS_TS) == 0);
	h_output(&h);
	const uint32_t lens[] = { 4 * MSS_TS, 4 * MSS_TS, 0 };
	check_run(0, una + 8 * MSS_TS, lens);
	harness_free(&h);
}

/* CWR rides on the first new data after a reduction for ECE: that segment
 * is one MSS (a port would copy CWR to every cut segment); then TSO. */
static void test_tso_cwr_one_mss(void)
{
	established(true);
	CHECK_EQ_U64(h.c.ecn_ok, 1);
	h.c.cwr_pending = 1;
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 9 * MSS_TS) == 0);
	h_output(&h);
	const uint32_t lens[] = { MSS_TS, 4 * MSS_TS, 4 * MSS_TS, 0 };
	check_run(0, una, lens);
	CHECK(h.out[0].hdr.flags & SS_TCP_CWR);
	CHECK(!(h.out[1].hdr.flags & SS_TCP_CWR) && !(h.out[2].hdr.flags & SS_TCP_CWR));
	CHECK_EQ_U64(h.c.cwr_pending, 0);
	harness_free(&h);
}

/* No frame for a TSO segment (seg_buf refuses it): its first MSS goes,
 * without PSH, and nothing is lost or sent twice. */
static void test_tso_no_frame(void)
{
	established(false);
	h.seg_buf_max = SS_TCP_HDR_MIN + 12 + MSS_TS;
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 3 * MSS_TS + 10) == 0);
	h_output(&h);
	const uint32_t lens[] = { MSS_TS, MSS_TS, MSS_TS, 10, 0 };
	check_run(0, una, lens);
	CHECK_EQ_U64(h.c.st.retrans_segs, 0);
	harness_free(&h);
}

/* The FIN rides on the last TSO segment (the port puts it on the last cut
 * segment only), and the peer's ACK of it all closes our side. */
static void test_tso_fin(void)
{
	established(false);
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 6 * MSS_TS) == 0);
	h_shutdown(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[0].len, 4 * MSS_TS);
	CHECK_EQ_U64(h.out[1].len, 2 * MSS_TS);
	CHECK(!(h.out[0].hdr.flags & SS_TCP_FIN));
	CHECK(h.out[1].hdr.flags & SS_TCP_FIN);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_1);
	h_peer_ack(&h, una + 6 * MSS_TS + 1, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	harness_free(&h);
}

int main(void)
{
	test_tso_new_data();
	test_tso_limit_small();
	test_tso_budget();
	test_tso_resend_one_mss();
	test_tso_cwr_one_mss();
	test_tso_no_frame();
	test_tso_fin();
	return check_done("test_tcp_tso");
}
