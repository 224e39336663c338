/* test_tcp_close.c - TCP engine: connection termination in every state (RFC 9293 §3.6, §3.10.4, RFC 1122 §4.2.2.13). */
#include "tcp_harness.h"

static struct harness h;

/* Active close: FIN_WAIT_1 -> FIN_WAIT_2 -> TIME_WAIT -> CLOSED. */
static void test_established_close_active(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_close(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_1);
	CHECK(ss_tcp_send(&h.c, 1) == -1);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.f.snd_max, cfg.iss + 2);
	CHECK(h.c.f.flags & SS_TCPF_FIN_SENT);
	CHECK_EQ_U64(h.c.rto_deadline_us, h.now + 200000);
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 2, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000); /* orphaned: fin_wait2_us */
	CHECK_EQ_U64(h.c.tx_acked, 0);
	h.now += 1000;
	h_peer_ctl(&h, SS_TCP_FIN | SS_TCP_ACK, cfg.iss + 2, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_PEER_FIN);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 2);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 2);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 2);
	h.now += 59999999;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	h.now += 1;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_PEER_FIN | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.c.error, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* Passive close: CLOSE_WAIT -> LAST_ACK -> CLOSED. */
static void test_established_close_passive(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_ctl(&h, SS_TCP_FIN | SS_TCP_ACK, cfg.iss + 1, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_PEER_FIN);
	CHECK(h.c.f.flags & SS_TCPF_PEER_FIN);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 2);
	/* The app may still send in CLOSE_WAIT. */
	CHECK(h_app_send(&h, 200) == 0);
	h_shutdown(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_LAST_ACK);
	h_clear(&h);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_PSH | SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].len, 200);
	CHECK(h_seg_matches(&h, &h.out[0]));
	h_peer_ack(&h, cfg.iss + 201, 65535); /* data only */
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_LAST_ACK);
	CHECK_EQ_U64(h.c.tx_acked, 200);
	h_peer_ack(&h, cfg.iss + 202, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.events & SS_TCP_EV_CLOSED, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.c.events & (SS_TCP_EV_RESET | SS_TCP_EV_ERROR), 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* Simultaneous close: FIN_WAIT_1 + FIN -> CLOSING -> ACK -> TIME_WAIT. */
static void test_fin_wait_1_simultaneous_close(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_closing(&h, &cfg);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 2);
	h_peer_ack(&h, cfg.iss + 2, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* FIN that also acks our FIN: FIN_WAIT_1 -> TIME_WAIT directly. */
static void test_fin_wait_1_fin_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_fin_wait_1(&h, &cfg);
	h_peer_ctl(&h, SS_TCP_FIN | SS_TCP_ACK, cfg.iss + 2, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 2);
	harness_free(&h);
}

/* FIN on a data segment, both directions. */
static void test_established_fin_with_data(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_data_at(&h, 0, 500, cfg.iss + 1, SS_TCP_FIN | SS_TCP_PSH);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_RX | SS_TCP_EV_PEER_FIN);
	CHECK_EQ_U64(h.c.rx_new, 500);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 1 + 501);
	CHECK(h_rx_matches(&h, 0, 0, 500));
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 502);
	harness_free(&h);

	/* An out-of-order FIN is not taken: the peer resends it. */
	harness_established(&h, &cfg);
	h_peer_data_at(&h, 100, 100, cfg.iss + 1, SS_TCP_FIN);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.f.ooo_len, 100);
	h_peer_data_at(&h, 0, 100, cfg.iss + 1, 0);
	CHECK_EQ_U64(h.c.rx_new, 200);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	h_peer_data_at(&h, 200, 0, cfg.iss + 1, SS_TCP_FIN);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSE_WAIT);
	harness_free(&h);

	/* Ours: data then FIN in the same segment. */
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 100) == 0);
	h_shutdown(&h);
	h_shutdown(&h); /* idempotent */
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_PSH | SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].len, 100);
	CHECK_EQ_U64(h.c.f.snd_max, cfg.iss + 102);
	h_peer_ack(&h, cfg.iss + 102, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	CHECK_EQ_U64(h.c.tx_acked, 100);
	CHECK_EQ_U64(h.c.f.tx_head, 100);
	harness_free(&h);
}

/* FIN retransmitted by the RTO (with the data before it, go-back-N). */
static void test_fin_wait_1_fin_retransmit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 2000) == 0);
	h_shutdown(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.flags, SS_TCP_ACK | SS_TCP_PSH | SS_TCP_FIN);
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 1 + 2000, 65535); /* data acked, FIN lost */
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_1);
	h_fire(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1 + 2000);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.c.st.retrans_segs, 1);
	h_peer_ack(&h, cfg.iss + 2 + 2000, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	CHECK_EQ_U64(h.c.tw_deadline_us, 0); /* not closed by the app: no timeout */
	harness_free(&h);
}

/* Data after the peer's FIN is not accepted. */
static void test_close_wait_data_ignored(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_close_wait(&h, &cfg);
	h_peer_data_at(&h, 1, 100, cfg.iss + 1, 0);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 2);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSE_WAIT);
	/* A retransmitted FIN is re-ACKed. */
	h_peer_data_at(&h, 0, 0, cfg.iss + 1, SS_TCP_FIN);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 2);
	harness_free(&h);
}

/* TIME_WAIT: a retransmitted FIN is ACKed and restarts 2MSL. */
static void test_time_wait_fin_retransmit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_time_wait(&h, &cfg);
	h.now += 30000000;
	h_peer_data_at(&h, 0, 0, h.c.f.snd_max, SS_TCP_FIN);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 2);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	/* Data in TIME_WAIT: nothing accepted. */
	h_peer_data_at(&h, 1, 10, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 0);
	h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/*
 * TIME_WAIT, an acceptable segment (RFC 9293 §3.10.7.4 fifth, TIME-WAIT:
 * "The only thing that can arrive in this state is a retransmission of
 * the remote FIN.  Acknowledge it, and restart the 2 MSL timeout."; eighth:
 * a FIN restarts it too).  A FIN or text at RCV.NXT: one ACK of RCV.NXT
 * (nothing more taken in) and 2MSL from now.  A bare ACK: 2MSL from now,
 * and an ACK at most once per 500 ms (two ends in TIME_WAIT would
 * otherwise trade them forever).
 */
static void test_time_wait_acceptable(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_time_wait(&h, &cfg);
	uint32_t snd = h.c.f.snd_max, rcv = cfg.peer_iss + 2;

	CHECK_EQ_U64(h.c.f.rcv_nxt, rcv);
	/* A FIN at RCV.NXT. */
	h.now += 10000000;
	h_peer_data_at(&h, 1, 0, snd, SS_TCP_FIN);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, snd);
	CHECK_EQ_U64(h.out[0].hdr.ack, rcv);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.c.f.rcv_nxt, rcv);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	CHECK_EQ_U64(h.c.events, 0);
	h_clear(&h);
	/* Text at RCV.NXT: ignored, acknowledged. */
	h.now += 10000000;
	h_peer_data_at(&h, 1, 10, snd, SS_TCP_PSH);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, snd);
	CHECK_EQ_U64(h.out[0].hdr.ack, rcv);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.c.f.rcv_nxt, rcv);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	h_clear(&h);
	/* A bare ACK at RCV.NXT: acknowledged, then rate-limited. */
	h.now += 10000000;
	h_peer_data_at(&h, 1, 0, snd, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, snd);
	CHECK_EQ_U64(h.out[0].hdr.ack, rcv);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	h_clear(&h);
	h.now += 1000;
	h_peer_data_at(&h, 1, 0, snd, 0);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.oow_ack_limited, 1);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	/* ... but a FIN is always acknowledged. */
	h.now += 1000;
	h_peer_data_at(&h, 1, 0, snd, SS_TCP_FIN);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.ack, rcv);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	h_clear(&h);
	/* Out of the window (a keepalive-like probe below RCV.NXT): one ACK. */
	h.now += 1000000;
	h_peer_data_at(&h, 0, 0, snd, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.ack, rcv);
	h_clear(&h);
	/* 2MSL after the last restart, not before: CLOSED. */
	uint64_t end = h.c.tw_deadline_us;
	h.now = end - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_TIME_WAIT);
	h.now = end;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	CHECK_EQ_U64(h.nout, 0);
	harness_free(&h);
}

/* close() with unread data: RST, not FIN (RFC 1122 §4.2.2.13). */
static void test_established_close_unread(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 300) == 0);
	h_output(&h);
	h_peer_send(&h, 100);
	h_clear(&h);
	h_close(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 301);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 101);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	h_close(&h); /* closing again does nothing */
	h_abort(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* Data arriving after close(): RST and CLOSED. */
static void test_fin_wait_2_data_after_close(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_close(&h);
	h_output(&h);
	h_peer_ack(&h, cfg.iss + 2, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	h_clear(&h);
	h_peer_send(&h, 10);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.st.data_after_close, 1);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 2);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* abort(): RST with seq = snd_max, from ESTABLISHED; none from SYN_SENT. */
static void test_established_abort(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.sack = false; /* a timeout goes back N (with SACK it does not) */
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 3000) == 0);
	h_output(&h);
	h_fire(&h); /* go-back-N: snd_nxt < snd_max */
	CHECK(h.c.f.snd_nxt != h.c.f.snd_max);
	h_clear(&h);
	h_abort(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 3001);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.c.st.rst_sent, 1);
	/* A segment for a CLOSED connection is answered by RST (RFC 9293 §3.10.7.1). */
	h_clear(&h);
	h_peer_send(&h, 10);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 3001);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);

	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	h_abort(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* shutdown() is a half-close: we keep receiving in FIN_WAIT_2. */
static void test_fin_wait_2_half_close(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_fin_wait_2(&h, &cfg);
	CHECK_EQ_U64(h.c.tw_deadline_us, 0);
	for (unsigned i = 0; i < 5; i++)
		h_peer_send(&h, 1000);
	CHECK_EQ_U64(h.c.rx_new, 5000);
	CHECK(h_rx_matches(&h, 0, 0, 5000));
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 5001);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 2);
	/* Reading reopens the window in FIN_WAIT_2 too. */
	h_clear(&h);
	CHECK(ss_tcp_recv_done(&h.c, 5000) == 0);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.window, 16384);
	harness_free(&h);
}

/* Orphaned FIN_WAIT_2 times out after fin_wait2_us. */
static void test_fin_wait_2_timeout(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_fin_wait_2(&h, &cfg);
	h_close(&h);
	CHECK_EQ_U64(h.c.tw_deadline_us, h.now + 60000000);
	h.now += 59999999;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_2);
	h.now += 1;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* close() in SYN_SENT: CLOSED at once, nothing sent. */
static void test_syn_sent_close(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	h_close(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	harness_free(&h);
}

/* shutdown() in SYN_RCVD: FIN after the handshake completes. */
static void test_syn_rcvd_shutdown(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_rcvd(&h, &cfg);
	h_shutdown(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 1, 65535);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_FIN_WAIT_1);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CONNECTED);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	harness_free(&h);
}

/* LAST_ACK: FIN retransmission and give-up. */
static void test_last_ack_fin_timeout(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_last_ack(&h, &cfg);
	for (unsigned i = 0; i < 15; i++) {
		h_fire(&h);
		CHECK_EQ_U64(h_last(&h)->hdr.flags, SS_TCP_ACK | SS_TCP_FIN);
	}
	CHECK_EQ_U64(h.nout, 15);
	h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h_last(&h)->hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

int main(void)
{
	test_established_close_active();
	test_established_close_passive();
	test_fin_wait_1_simultaneous_close();
	test_fin_wait_1_fin_ack();
	test_established_fin_with_data();
	test_fin_wait_1_fin_retransmit();
	test_close_wait_data_ignored();
	test_time_wait_fin_retransmit();
	test_time_wait_acceptable();
	test_established_close_unread();
	test_fin_wait_2_data_after_close();
	test_established_abort();
	test_fin_wait_2_half_close();
	test_fin_wait_2_timeout();
	test_syn_sent_close();
	test_syn_rcvd_shutdown();
	test_last_ack_fin_timeout();
	return check_done("test_tcp_close");
}
