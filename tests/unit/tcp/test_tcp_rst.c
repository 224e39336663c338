/* test_tcp_rst.c - TCP engine: RST and SYN handling, RFC 5961 challenge ACKs, RST in every state. */
#include "tcp_harness.h"

static struct harness h;

static void h_peer_rst(struct harness *hh, uint32_t seq)
{
	struct ss_tcp r = h_seg_make(hh, SS_TCP_RST, seq, 0, 0, NULL, 0);

	r.opts.present = 0; /* RSTs often carry no TSopt */
	h_input(hh, &r);
}

/* RFC 5961 §3.2: RST at exactly rcv_nxt resets. */
static void test_established_rst_exact(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_send(&h, 100);
	h_clear(&h);
	h_peer_rst(&h, cfg.peer_iss + 101);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ECONNRESET);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_RESET | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.rst_rcvd, 1);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	/* Unread data stays readable for the app. */
	CHECK_EQ_U64(ss_tcp_rx_avail(&h.c), 100);
	harness_free(&h);
}

/* RST in the window but not exact: challenge ACK, no state change. */
static void test_established_rst_in_window(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_rst(&h, cfg.peer_iss + 1 + 1000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.st.challenge_acks, 1);
	CHECK_EQ_U64(h.c.events, 0);
	/* The real peer answers the challenge with the exact RST. */
	h_peer_rst(&h, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	harness_free(&h);
}

/* RST outside the window: silently ignored. */
static void test_established_rst_out_of_window(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_rst(&h, cfg.peer_iss + 1 + 16384);
	h_peer_rst(&h, cfg.peer_iss);
	h_peer_rst(&h, cfg.peer_iss + 0x80000000u);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.rst_ignored, 3);
	CHECK_EQ_U64(h.c.st.rst_rcvd, 3);
	CHECK_EQ_U64(h.c.events, 0);
	harness_free(&h);
}

/* RST with the ring full (zero window): exact still resets. */
static void test_established_rst_zero_window(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = 4096;
	harness_established(&h, &cfg);
	h_peer_send(&h, 4096);
	h_clear(&h);
	h_peer_rst(&h, cfg.peer_iss + 1 + 4096);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ECONNRESET);
	harness_free(&h);
}

/* RFC 5961 §4: a SYN in a synchronized state gets a challenge ACK,
 * whatever its sequence number. */
static void test_established_syn(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	struct ss_tcp syn = h_seg_make(&h, SS_TCP_SYN, cfg.peer_iss + 100, 0, 65535, NULL, 0);

	h_syn_opts(&h, &syn);
	h_input(&h, &syn);
	syn.seq = cfg.peer_iss - 100000; /* outside the window */
	h_input(&h, &syn);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.st.challenge_acks, 2);
	CHECK_EQ_U64(h.c.events, 0);
	CHECK_EQ_U64(h.c.f.mss, 1460 - 12); /* the SYN's options are ignored */
	harness_free(&h);
}

/* RFC 5961 §7: at most challenge_ack_per_s challenge ACKs per second. */
static void test_established_challenge_ack_limit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h.p.challenge_ack_per_s = 3;
	for (unsigned i = 0; i < 5; i++)
		h_peer_rst(&h, cfg.peer_iss + 1 + 10 + i);
	CHECK_EQ_U64(h.nout, 3);
	CHECK_EQ_U64(h.c.st.challenge_acks, 3);
	CHECK_EQ_U64(h.c.st.challenge_ack_limited, 2);
	h.now += 999999;
	h_peer_rst(&h, cfg.peer_iss + 20);
	CHECK_EQ_U64(h.nout, 3);
	h.now += 1000000;
	h_peer_rst(&h, cfg.peer_iss + 20);
	CHECK_EQ_U64(h.nout, 4);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	harness_free(&h);
}

/* Per state: RST at rcv_nxt.  want_ev = EV_RESET or 0 (closed only). */
static void check_rst_closes(int want_err, uint8_t want_ev)
{
	h_clear(&h);
	h_peer_rst(&h, h.c.f.rcv_nxt);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, want_err);
	CHECK_EQ_U64(h.c.events, want_ev | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

static void test_syn_rcvd_rst_passive(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_rcvd(&h, &cfg);
	check_rst_closes(0, 0);
}

static void test_syn_rcvd_rst_simultaneous(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	struct ss_tcp syn = h_seg_make(&h, SS_TCP_SYN, cfg.peer_iss, 0, 65535, NULL, 0);

	h_syn_opts(&h, &syn);
	h_input(&h, &syn);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	check_rst_closes(ECONNREFUSED, SS_TCP_EV_RESET);
}

static void test_fin_wait_1_rst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_fin_wait_1(&h, &cfg); /* shutdown only: the app still reads */
	check_rst_closes(ECONNRESET, SS_TCP_EV_RESET);
}

static void test_fin_wait_2_rst_after_close(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_fin_wait_2(&h, &cfg);
	h_close(&h); /* the app is gone: no RESET event */
	check_rst_closes(0, 0);
}

static void test_close_wait_rst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_close_wait(&h, &cfg);
	/* The peer had closed: the socket reports EPIPE, as Linux's. */
	check_rst_closes(EPIPE, SS_TCP_EV_RESET);
}

static void test_closing_rst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_closing(&h, &cfg);
	check_rst_closes(ECONNRESET, SS_TCP_EV_RESET);
}

static void test_last_ack_rst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_last_ack(&h, &cfg);
	check_rst_closes(ECONNRESET, SS_TCP_EV_RESET);
}

static void test_time_wait_rst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_time_wait(&h, &cfg);
	check_rst_closes(0, 0);
}

/* CLOSED: a RST is never answered; anything else gets the §3.10.7.1 RST. */
static void test_closed_segments(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_init(&h, &cfg);
	h_peer_rst(&h, 1234);
	CHECK_EQ_U64(h.nout, 0);
	struct ss_tcp s = h_seg_make(&h, SS_TCP_SYN, 1000, 0, 100, (const uint8_t *)"xy", 2);

	h_input(&h, &s);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, 0);
	CHECK_EQ_U64(h.out[0].hdr.ack, 1003);
	CHECK_EQ_U64(h.c.events, 0);
	harness_free(&h);
}

/* ss_tcp_rst_reply(): the public RFC 9293 §3.10.7.1 helper. */
static void test_rst_reply(void)
{
	struct ss_tcp in, out;

	memset(&in, 0, sizeof(in));
	in.sport = 1;
	in.dport = 2;
	in.seq = 0xfffffffe;
	in.ack = 77;
	in.flags = SS_TCP_ACK | SS_TCP_PSH;
	in.payload_len = 10;
	CHECK(ss_tcp_rst_reply(&in, &out));
	CHECK_EQ_U64(out.sport, 2);
	CHECK_EQ_U64(out.dport, 1);
	CHECK_EQ_U64(out.seq, 77);
	CHECK_EQ_U64(out.flags, SS_TCP_RST);
	in.flags = SS_TCP_SYN | SS_TCP_FIN;
	CHECK(ss_tcp_rst_reply(&in, &out));
	CHECK_EQ_U64(out.seq, 0);
	CHECK_EQ_U64(out.ack, 10); /* 0xfffffffe + 10 + SYN + FIN, wrapped */
	CHECK_EQ_U64(out.flags, SS_TCP_RST | SS_TCP_ACK);
	in.flags = SS_TCP_RST | SS_TCP_ACK;
	CHECK(!ss_tcp_rst_reply(&in, &out));
}

int main(void)
{
	test_established_rst_exact();
	test_established_rst_in_window();
	test_established_rst_out_of_window();
	test_established_rst_zero_window();
	test_established_syn();
	test_established_challenge_ack_limit();
	test_syn_rcvd_rst_passive();
	test_syn_rcvd_rst_simultaneous();
	test_fin_wait_1_rst();
	test_fin_wait_2_rst_after_close();
	test_close_wait_rst();
	test_closing_rst();
	test_last_ack_rst();
	test_time_wait_rst();
	test_closed_segments();
	test_rst_reply();
	return check_done("test_tcp_rst");
}
