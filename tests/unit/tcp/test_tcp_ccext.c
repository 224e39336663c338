/* test_tcp_ccext.c - congestion control by the caller: the counters for the control loop, WINDOW and RATE modes, the send budget, DCTCP's per-ACK CE echo. */
#include "tcp_harness.h"

#define MSS_TS (1460 - 12)

static struct harness h;

/* Active open with ECN on and timestamps; ESTABLISHED, nothing captured. */
static void established_delack(uint32_t delack_us)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.delack_us = delack_us;
	harness_init(&h, &cfg);
	h.p.ecn = 1;
	CHECK(ss_tcp_connect(&h.c, h.now) == 0);
	h.now += 10000;
	struct ss_tcp s = h_synack_make(&h);
	s.flags |= SS_TCP_ECE;
	h_input(&h, &s);
	h.peer_nxt = cfg.peer_iss + 1;
	h_output(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.ecn_ok, 1);
	h_clear(&h);
}

static void established(void)
{
	established_delack(0);
}

static uint32_t una0(void)
{
	return h.c.iss + 1;
}

/* ACK from the peer for @ack with @flags extra (ECE), echoing our latest TSval. */
static void peer_ack(uint32_t ack, uint8_t flags)
{
	struct ss_tcp s = h_seg_make(&h, (uint8_t)(SS_TCP_ACK | flags), h.peer_nxt, ack, 65535,
				     NULL, 0);
	h_input(&h, &s);
}

/* The counters: bytes acked, ECE-acked, sent (new and resent), recovery
 * episodes, timeouts, and the latest RTT sample. */
static void test_counters(void)
{
	established();
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, 20 * MSS_TS, false);
	struct ss_cc_counters z = h.c.cc;
	CHECK(h_app_send(&h, 10 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 10);
	CHECK_EQ_U64(h.c.cc.sent_bytes - z.sent_bytes, 10 * MSS_TS);
	h.now += 3000;
	peer_ack(una0() + 2 * MSS_TS, 0);
	CHECK_EQ_U64(h.c.cc.acked_bytes - z.acked_bytes, 2 * MSS_TS);
	CHECK_EQ_U64(h.c.cc.ecn_bytes - z.ecn_bytes, 0);
	CHECK_EQ_U64(h.c.last_rtt_us, 3000); /* TSecr: 3 ms ago */
	peer_ack(una0() + 5 * MSS_TS, SS_TCP_ECE);
	CHECK_EQ_U64(h.c.cc.acked_bytes - z.acked_bytes, 5 * MSS_TS);
	CHECK_EQ_U64(h.c.cc.ecn_bytes - z.ecn_bytes, 3 * MSS_TS);
	/* Three duplicate ACKs: one recovery episode, the fast
	 * retransmission; the fourth, with no new data to send, the rescue
	 * retransmission of the last segment (RFC 6675 §5 NextSeg rule 4);
	 * the fifth nothing. */
	h_clear(&h);
	for (int i = 0; i < 5; i++)
		peer_ack(una0() + 5 * MSS_TS, 0);
	CHECK_EQ_U64(h.c.cc.fast_retx - z.fast_retx, 1);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[0].hdr.seq, una0() + 5 * MSS_TS);
	CHECK_EQ_U64(h.out[1].hdr.seq, una0() + 9 * MSS_TS);
	CHECK_EQ_U64(h.c.st.rescue_rexmits, 1);
	CHECK_EQ_U64(h.c.cc.sent_bytes - z.sent_bytes, 12 * MSS_TS);
	/* A timeout. */
	h.now = h.c.rto_deadline_us;
	h_timer(&h);
	CHECK_EQ_U64(h.c.cc.timeouts - z.timeouts, 1);
	harness_free(&h);
}

/* WINDOW mode: ACKs, duplicate ACKs and ECE leave cwnd alone (the loop
 * owns it); recovery still retransmits; a timeout drops it to one MSS. */
static void test_window_mode(void)
{
	established();
	ss_tcp_cc_set(&h.c, SS_TCP_CC_WINDOW, 6 * MSS_TS, false);
	CHECK_EQ_U64(h.c.cc_mode, SS_TCP_CC_WINDOW);
	CHECK(h_app_send(&h, 12 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 6); /* the loop's window, exactly */
	peer_ack(una0() + 2 * MSS_TS, 0);
	CHECK_EQ_U64(h.c.f.cwnd, 6 * MSS_TS); /* no slow-start growth */
	h_clear(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2); /* the window slid by two */
	peer_ack(una0() + 3 * MSS_TS, SS_TCP_ECE);
	CHECK_EQ_U64(h.c.f.cwnd, 6 * MSS_TS);
	CHECK_EQ_U64(h.c.st.ecn_reductions, 0);
	CHECK_EQ_U64(h.c.st.ecn_echoes, 1);
	CHECK_EQ_U64(h.c.cwr_pending, 1);
	h_clear(&h);
	for (int i = 0; i < 4; i++)
		peer_ack(una0() + 3 * MSS_TS, 0);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.f.cwnd, 6 * MSS_TS); /* neither halved nor inflated */
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una0() + 3 * MSS_TS);
	/* Full ACK ends recovery, window still the loop's. */
	peer_ack(h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.flags & SS_TCPF_IN_RECOVERY, 0);
	CHECK_EQ_U64(h.c.f.cwnd, 6 * MSS_TS);
	h_clear(&h);
	h_output(&h);
	CHECK(h.nout >= 1);
	h.now = h.c.rto_deadline_us;
	h_clear(&h);
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.cwnd, MSS_TS);
	CHECK_EQ_U64(h.nout, 1); /* go-back-N within one segment */
	/* ENGINE hands the window back to NewReno. */
	ss_tcp_cc_set(&h.c, SS_TCP_CC_ENGINE, 4 * MSS_TS, false);
	CHECK_EQ_U64(h.c.cc_mode, SS_TCP_CC_ENGINE);
	CHECK_EQ_U64(h.c.f.cwnd, 4 * MSS_TS);
	harness_free(&h);
}

/* RATE mode: the send budget.  A segment may begin while budget is left
 * (the last may overdraw it); at 0 nothing new goes and budget_hit says
 * so; pure ACKs are never held; a timeout does not shrink the window. */
static void test_rate_mode_budget(void)
{
	established();
	ss_tcp_cc_set(&h.c, SS_TCP_CC_RATE, 1u << 30, false);
	CHECK_EQ_U64(h.c.tx_budget, SS_TCP_BUDGET_UNLIMITED);
	h.c.tx_budget = 2 * MSS_TS + 1;
	CHECK(h_app_send(&h, 10 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	CHECK_EQ_U64(h.c.tx_budget, 0);
	CHECK_EQ_U64(h.c.budget_hit, 1);
	CHECK_EQ_U64(h.c.st.budget_stops, 1);
	CHECK_EQ_U64(h.c.cc.rate_limited, 1); /* for the control loop */
	CHECK_EQ_U64(h.c.cc.win_limited, 0);
	/* Budget 0: data waits, but an ACK the peer's data asks for goes. */
	h_clear(&h);
	h_peer_send(&h, 100);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.out[0].hdr.ack, h.peer_nxt);
	CHECK_EQ_U64(h.c.budget_hit, 1);
	/* Budget for the rest: everything goes, budget_hit clear. */
	h_clear(&h);
	h.c.tx_budget = 100 * MSS_TS;
	h_output(&h);
	CHECK_EQ_U64(h.nout, 7);
	CHECK_EQ_U64(h.c.tx_budget, 93 * MSS_TS);
	CHECK_EQ_U64(h.c.budget_hit, 0);
	CHECK_EQ_U64(h.c.cc.win_limited, 0);
	/* A timeout resends go-back-N under the same budget, window kept. */
	uint32_t cwnd = h.c.f.cwnd, una = h.c.f.snd_una;
	CHECK_EQ_U64(h.c.f.snd_max - una, 7 * MSS_TS);
	h.c.tx_budget = MSS_TS;
	h.now = h.c.rto_deadline_us;
	h_clear(&h);
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.cwnd, cwnd);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una);
	CHECK_EQ_U64(h.c.budget_hit, 1);
	/* Unlimited is never spent. */
	h.c.tx_budget = SS_TCP_BUDGET_UNLIMITED;
	h_clear(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 6); /* the rest of the flight, resent */
	CHECK_EQ_U64(h.c.tx_budget, SS_TCP_BUDGET_UNLIMITED);
	/* The flow's own window holds data back: win_limited, not
	 * rate_limited (the budget is unlimited). */
	uint32_t rl = h.c.cc.rate_limited;
	CHECK_EQ_U64(h.c.cc.win_limited, 0);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_RATE, h.c.f.snd_max - h.c.f.snd_una + MSS_TS, false);
	CHECK(h_app_send(&h, 3 * MSS_TS) == 0);
	h_clear(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.cc.win_limited, 1);
	CHECK_EQ_U64(h.c.cc.rate_limited, rl);
	harness_free(&h);
}

/* A CE-marked peer segment. */
static void peer_data_ce(uint32_t len, bool ce)
{
	static uint8_t buf[1500];
	struct ss_tcp s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, h.c.f.snd_max, 65535, buf, len);

	s.ip_ecn = ce ? SS_IP_ECN_CE : SS_IP_ECN_ECT0;
	h_input(&h, &s);
	h.peer_nxt += len;
}

/* DCTCP receiver (RFC 8257 §3.2): ECE on exactly the ACKs of CE data,
 * whatever CWR says; unacknowledged unmarked data is acknowledged without
 * ECE before a marked segment is taken. */
static void test_dctcp_echo(void)
{
	/* ACKs held, so the state change must force one. */
	established_delack(40000);
	ss_tcp_cc_set(&h.c, SS_TCP_CC_RATE, 1u << 30, true);
	peer_data_ce(500, false);
	CHECK_EQ_U64(h.nout, 0);
	peer_data_ce(600, true);
	/* The first 500 bytes were acknowledged at once, without ECE. */
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, h.peer_nxt - 600);
	CHECK_EQ_U64(h.out[0].hdr.flags & SS_TCP_ECE, 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.ack, h.peer_nxt);
	CHECK(h.out[1].hdr.flags & SS_TCP_ECE);
	/* Unmarked data next: its ACK has no ECE, with no CWR from the peer. */
	h_clear(&h);
	peer_data_ce(700, false);
	h_output(&h); /* delayed: nothing yet */
	CHECK_EQ_U64(h.nout, 0);
	h.now += 50000;
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, h.peer_nxt);
	CHECK_EQ_U64(h.out[0].hdr.flags & SS_TCP_ECE, 0);
	/* Two marked in a row (the unmarked data is acknowledged already):
	 * nothing is forced, and one ACK with ECE covers both. */
	h_clear(&h);
	peer_data_ce(300, true);
	CHECK_EQ_U64(h.nout, 0);
	peer_data_ce(300, true);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, h.peer_nxt);
	CHECK(h.out[0].hdr.flags & SS_TCP_ECE);
	CHECK_EQ_U64(h.c.st.ce_segs, 3);
	harness_free(&h);
}

int main(void)
{
	test_counters();
	test_window_mode();
	test_rate_mode_budget();
	test_dctcp_echo();
	return check_done("test_tcp_ccext");
}
