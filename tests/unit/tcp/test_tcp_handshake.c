/* test_tcp_handshake.c - TCP engine: active/passive open, option negotiation, SYN retries, ISN (RFC 9293 §3.5, RFC 7323, RFC 6528). */
#include "tcp_harness.h"

static struct harness h;

/* SYN_SENT: the SYN offers everything (MSS, SACK_PERM, TS, WSCALE). */
static void test_closed_connect(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = 1u << 20; /* needs shift 5 to be offered in 16 bits */
	harness_syn_sent(&h, &cfg);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	CHECK_EQ_U64(h.nout, 1);
	const struct ss_tcp *s = &h.out[0].hdr;

	CHECK_EQ_U64(s->flags, SS_TCP_SYN);
	CHECK_EQ_U64(s->seq, cfg.iss);
	CHECK_EQ_U64(s->ack, 0);
	CHECK_EQ_U64(s->sport, 40000);
	CHECK_EQ_U64(s->dport, 80);
	CHECK_EQ_U64(s->window, 65535); /* SYN window never scaled */
	CHECK_EQ_U64(s->opts.present, SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM |
					      SS_TCP_OPTF_TS);
	CHECK_EQ_U64(s->opts.mss, 1460);
	CHECK_EQ_U64(s->opts.wscale, 5);
	CHECK_EQ_U64(s->opts.ts_val, h.now / 1000 + cfg.ts_offset);
	CHECK_EQ_U64(s->opts.ts_ecr, 0);
	CHECK_EQ_U64(s->hdr_len, 40);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), h.now + 1000000);
	CHECK(ss_tcp_connect(&h.c, h.now) == -1); /* not CLOSED any more */
	harness_free(&h);
}

/* SYN_SENT + SYN-ACK with every option: ESTABLISHED, one ACK. */
static void test_syn_sent_synack_full_options(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.peer_wscale = 7;
	cfg.peer_mss = 1400;
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	h.now += 25000;
	struct ss_tcp sa = h_synack_make(&h);

	h_input(&h, &sa);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CONNECTED);
	CHECK_EQ_U64(h.c.f.mss, 1400 - 12);
	CHECK_EQ_U64(h.c.peer_mss, 1400);
	CHECK_EQ_U64(h.c.f.snd_wscale, 7);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 0); /* 16 KiB ring */
	CHECK_EQ_U64(h.c.f.flags & (SS_TCPF_TS | SS_TCPF_SACK_PERM), SS_TCPF_TS | SS_TCPF_SACK_PERM);
	CHECK_EQ_U64(h.c.f.snd_wnd, 65535); /* SYN-ACK window is not scaled */
	CHECK_EQ_U64(h.c.f.snd_una, cfg.iss + 1);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.irs, cfg.peer_iss);
	CHECK_EQ_U64(h.c.f.ts_recent, 5000);
	CHECK_EQ_U64(h.c.f.cwnd, 10 * 1388);
	/* RTT 25 ms from the echoed TSval: RFC 6298 §2.2. */
	CHECK_EQ_U64(h.c.f.srtt_us, 25000);
	CHECK_EQ_U64(h.c.f.rttvar_us, 12500);
	CHECK_EQ_U64(h.c.f.rto_us, 200000); /* 75 ms clamped to rto_min */
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	CHECK_EQ_U64(h.nout, 0); /* the ACK waits for ss_tcp_output() */
	CHECK_EQ_U64(h_output(&h), 1);
	const struct ss_tcp *a = &h.out[0].hdr;

	CHECK_EQ_U64(a->flags, SS_TCP_ACK);
	CHECK_EQ_U64(a->seq, cfg.iss + 1);
	CHECK_EQ_U64(a->ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(a->window, 16384);
	CHECK_EQ_U64(a->opts.present, SS_TCP_OPTF_TS);
	CHECK_EQ_U64(a->opts.ts_ecr, 5000);
	CHECK_EQ_U64(h.c.f.rcv_adv, cfg.peer_iss + 1 + 16384);
	harness_free(&h);
}

/* A peer sending no options at all: MSS 536, no scaling/TS/SACK. */
static void test_syn_sent_synack_no_options(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.mss = cfg.ws = cfg.ts = cfg.sack = false;
	cfg.rx_size = 1u << 18;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.mss, 536);
	CHECK_EQ_U64(h.c.peer_mss, 536);
	CHECK_EQ_U64(h.c.f.snd_wscale, 0);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 0);
	CHECK_EQ_U64(h.c.f.flags & (SS_TCPF_TS | SS_TCPF_SACK_PERM), 0);
	CHECK_EQ_U64(h.c.f.cwnd, 5360);
	/* RTT from timing the SYN (no timestamps): 10 ms. */
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	/* No scaling: a 256 KiB ring is offered as 65535. */
	h_peer_send(&h, 100);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.window, 65535);
	CHECK_EQ_U64(h.out[0].hdr.opts.present, 0);
	CHECK_EQ_U64(h.out[0].hdr.hdr_len, 20);
	/* Data goes out in 536-byte segments. */
	h_clear(&h);
	CHECK(h_app_send(&h, 1000) == 0);
	CHECK_EQ_U64(h_output(&h), 2);
	CHECK_EQ_U64(h.out[0].len, 536);
	CHECK_EQ_U64(h.out[1].len, 464);
	CHECK(h_seg_matches(&h, &h.out[0]) && h_seg_matches(&h, &h.out[1]));
	harness_free(&h);
}

/* MSS absent but other options present: 536 (RFC 9293 §3.7.1). */
static void test_syn_sent_synack_mss_absent(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.mss = false;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.peer_mss, 536);
	CHECK_EQ_U64(h.c.f.mss, 536 - 12);
	harness_free(&h);
	/* Our own MSS smaller than the peer's wins. */
	h_cfg_default(&cfg);
	cfg.our_mss = 1000;
	cfg.ts = false;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.mss, 1000);
	harness_free(&h);
}

/* Window scale offered by only one side: no scaling in either direction
 * (RFC 7323 §2.2). */
static void test_syn_sent_synack_wscale_one_sided(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.ws = false;
	cfg.rx_size = 1u << 20;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.snd_wscale, 0);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 0);
	h_peer_ack(&h, h.c.f.snd_max, 1000);
	CHECK_EQ_U64(h.c.f.snd_wnd, 1000);
	harness_free(&h);

	/* Passive side: the peer's SYN has no WSCALE, our SYN-ACK has none. */
	harness_syn_rcvd(&h, &cfg);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.opts.present & SS_TCP_OPTF_WSCALE, 0);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 0);
	harness_free(&h);
}

/* Shift 14 is used as is; a shift above 14 is clamped to 14 (RFC 7323 §2.3). */
static void test_syn_sent_synack_wscale_clamp(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.peer_wscale = 14;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.snd_wscale, 14);
	h_peer_ack(&h, h.c.f.snd_max, 3);
	CHECK_EQ_U64(h.c.f.snd_wnd, 3u << 14);
	harness_free(&h);

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	struct ss_tcp sa = h_synack_make(&h);

	sa.opts.wscale = 15; /* a parser would clamp; the engine must too */
	h_input(&h, &sa);
	CHECK_EQ_U64(h.c.f.snd_wscale, 14);
	harness_free(&h);
}

/* Timestamps from one side only: off, and the MSS keeps its 12 bytes. */
static void test_syn_sent_synack_ts_one_sided(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.ts = false;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.flags & SS_TCPF_TS, 0);
	CHECK_EQ_U64(h.c.f.mss, 1460);
	h_peer_send(&h, 10);
	h_output(&h);
	CHECK_EQ_U64(h_last(&h)->hdr.opts.present, 0);
	harness_free(&h);

	/* Passive: the peer's SYN without TS gets a SYN-ACK without TS. */
	harness_syn_rcvd(&h, &cfg);
	CHECK_EQ_U64(h.out[0].hdr.opts.present & SS_TCP_OPTF_TS, 0);
	harness_free(&h);
}

/* Passive open echoes exactly the options the SYN offered. */
static void test_closed_accept_syn(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = 1u << 17;
	cfg.peer_wscale = 3;
	cfg.peer_win = 29200;
	harness_syn_rcvd(&h, &cfg);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	CHECK_EQ_U64(h.nout, 1);
	const struct ss_tcp *s = &h.out[0].hdr;

	CHECK_EQ_U64(s->flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(s->seq, cfg.iss);
	CHECK_EQ_U64(s->ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(s->window, 65535);
	CHECK_EQ_U64(s->opts.present, SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM |
					      SS_TCP_OPTF_TS);
	CHECK_EQ_U64(s->opts.wscale, 2); /* 128 KiB ring */
	CHECK_EQ_U64(s->opts.ts_ecr, 5000);
	CHECK_EQ_U64(h.c.f.snd_wnd, 29200); /* SYN window unscaled */
	CHECK_EQ_U64(h.c.passive_open, 1);
	h_clear(&h);
	h.now += 10000;
	h.peer_tsval += 10;
	h_peer_ack(&h, cfg.iss + 1, 1000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CONNECTED);
	CHECK_EQ_U64(h.c.f.snd_wnd, 8000); /* 1000 << 3 */
	CHECK_EQ_U64(h.c.f.ts_recent, 5010);
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	CHECK_EQ_U64(h.nout, 0);
	harness_free(&h);

	/* Plain SYN only; a SYN-ACK or RST is refused. */
	harness_init(&h, &cfg);
	struct ss_tcp bad = h_seg_make(&h, SS_TCP_SYN | SS_TCP_ACK, 1, 1, 100, NULL, 0);

	CHECK(ss_tcp_accept_syn(&h.c, &bad, h.now) == -1);
	bad.flags = SS_TCP_SYN | SS_TCP_RST;
	CHECK(ss_tcp_accept_syn(&h.c, &bad, h.now) == -1);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	harness_free(&h);
}

/* Passive open against a peer with no options at all. */
static void test_closed_accept_syn_no_options(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.mss = cfg.ws = cfg.ts = cfg.sack = false;
	harness_syn_rcvd(&h, &cfg);
	CHECK_EQ_U64(h.out[0].hdr.opts.present, SS_TCP_OPTF_MSS);
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 1, 5000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.f.mss, 536);
	CHECK_EQ_U64(h.c.f.snd_wnd, 5000);
	h_peer_send(&h, 300);
	CHECK_EQ_U64(h.c.rx_new, 300);
	CHECK(h_rx_matches(&h, 0, 0, 300));
	harness_free(&h);
}

/* SYN retransmission: RTO 1 s doubling, ETIMEDOUT after syn_retries. */
static void test_syn_sent_timeout(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	uint64_t t0 = h.now;
	uint64_t expect = t0;

	for (unsigned i = 0; i < 6; i++) {
		expect += 1000000ull << i;
		CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), expect);
		h.now = expect - 1;
		h_timer(&h);
		CHECK_EQ_U64(h.nout, i); /* early: nothing */
		h.now = expect;
		h_timer(&h);
		CHECK_EQ_U64(h.nout, i + 1);
		CHECK_EQ_U64(h_last(&h)->hdr.flags, SS_TCP_SYN);
		CHECK_EQ_U64(h_last(&h)->hdr.seq, cfg.iss);
		CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	}
	CHECK_EQ_U64(h.c.retries, 6);
	CHECK_EQ_U64(h.c.st.retrans_segs, 6);
	expect += 60000000; /* 64 s capped at rto_max (RFC 6298 §2.5) */
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), expect);
	h.now = expect;
	h_timer(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_ERROR | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.nout, 6); /* no RST from SYN_SENT */
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* A SYN-ACK after a retransmitted SYN gives no RTT sample (Karn). */
static void test_syn_sent_synack_after_retransmit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.ts = false;
	harness_syn_sent(&h, &cfg);
	h_fire(&h);
	h.now += 5000;
	struct ss_tcp sa = h_synack_make(&h);

	h_input(&h, &sa);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.f.srtt_us, 0);
	CHECK_EQ_U64(h.c.f.backoff, 0);
	CHECK_EQ_U64(h.c.retries, 0);
	harness_free(&h);
}

/* Simultaneous open: SYN in SYN_SENT -> SYN_RCVD, SYN-ACK, then the
 * peer's SYN-ACK completes it (RFC 9293 Figure 8). */
static void test_syn_sent_simultaneous_open(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	struct ss_tcp syn = h_seg_make(&h, SS_TCP_SYN, cfg.peer_iss, 0, 65535, NULL, 0);

	h_syn_opts(&h, &syn);
	h_input(&h, &syn);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	CHECK_EQ_U64(h.c.passive_open, 0);
	h_clear(&h);
	struct ss_tcp sa = h_seg_make(&h, SS_TCP_SYN | SS_TCP_ACK, cfg.peer_iss, cfg.iss + 1, 65535,
				      NULL, 0);

	h_syn_opts(&h, &sa);
	h_input(&h, &sa);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_CONNECTED);
	CHECK_EQ_U64(h.c.f.snd_una, cfg.iss + 1);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 1);
	harness_free(&h);
}

/* RST with an acceptable ACK in SYN_SENT: connection refused. */
static void test_syn_sent_rst_good_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	struct ss_tcp r = h_seg_make(&h, SS_TCP_RST | SS_TCP_ACK, 0, cfg.iss + 1, 0, NULL, 0);

	h_input(&h, &r);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ECONNREFUSED);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_RESET | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* RST with a bad ACK, or without ACK, in SYN_SENT: ignored. */
static void test_syn_sent_rst_bad_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	struct ss_tcp r = h_seg_make(&h, SS_TCP_RST | SS_TCP_ACK, 0, cfg.iss + 5, 0, NULL, 0);

	h_input(&h, &r);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	r = h_seg_make(&h, SS_TCP_RST, 0, 0, 0, NULL, 0);
	h_input(&h, &r);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	CHECK_EQ_U64(h.c.st.rst_ignored, 2);
	CHECK_EQ_U64(h.nout, 0); /* a RST is never answered */
	CHECK_EQ_U64(h.c.events, 0);
	harness_free(&h);
}

/* A SYN-ACK (or ACK) acking something we did not send: RST <SEQ=SEG.ACK>. */
static void test_syn_sent_bad_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	h_clear(&h);
	struct ss_tcp sa = h_synack_make(&h);

	sa.ack = cfg.iss + 1000;
	h_input(&h, &sa);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1000);
	CHECK_EQ_U64(h.out[0].hdr.sport, 40000);
	CHECK_EQ_U64(h.out[0].hdr.dport, 80);
	/* ACK = ISS (acks nothing) is bad too. */
	sa.ack = cfg.iss;
	h_input(&h, &sa);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.seq, cfg.iss);
	/* A plain ACK without SYN that is acceptable is dropped. */
	struct ss_tcp a = h_seg_make(&h, SS_TCP_ACK, cfg.peer_iss, cfg.iss + 1, 100, NULL, 0);

	h_input(&h, &a);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_SENT);
	CHECK_EQ_U64(h.c.st.drop_syn_sent, 3);
	harness_free(&h);
}

/* SYN_RCVD: the SYN-ACK is resent on RTO with backoff and when the peer
 * resends its SYN; gives up after syn_retries without a RST. */
static void test_syn_rcvd_synack_retransmit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_rcvd(&h, &cfg);
	h_clear(&h);
	uint64_t t = h.now + 1000000;

	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t);
	h.now = t;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t + 2000000);
	/* The peer resends its SYN: SYN-ACK again, no state change. */
	struct ss_tcp syn = h_seg_make(&h, SS_TCP_SYN, cfg.peer_iss, 0, 65535, NULL, 0);

	h_syn_opts(&h, &syn);
	h_input(&h, &syn);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	for (unsigned i = 0; i < 6; i++)
		h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h_count_flags(&h, SS_TCP_RST), 0);
	CHECK_EQ_U64(h.nout, 7);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* SYN_RCVD + ACK that does not ack our SYN: RST <SEQ=SEG.ACK>. */
static void test_syn_rcvd_bad_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_rcvd(&h, &cfg);
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 77, 1000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_SYN_RCVD);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_RST);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 77);
	harness_free(&h);
}

/* Data queued in SYN_SENT goes out right after the handshake, and the
 * ACK of the handshake carries it. */
static void test_syn_sent_send_early(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_syn_sent(&h, &cfg);
	CHECK(h_app_send(&h, 100) == 0);
	h_clear(&h);
	struct ss_tcp sa = h_synack_make(&h);

	h_input(&h, &sa);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK | SS_TCP_PSH);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].len, 100);
	CHECK(h_seg_matches(&h, &h.out[0]));
	harness_free(&h);
}

/* RFC 6528: the ISN depends on the 4-tuple and the key, and advances
 * with a 4 us clock. */
static void test_isn_rfc6528(void)
{
	uint8_t k1[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint8_t k2[16] = { 2, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint32_t a = ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000002, 80, 0);

	CHECK(a != ss_tcp_isn(k1, 0x0a000001, 40001, 0x0a000002, 80, 0));
	CHECK(a != ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000003, 80, 0));
	CHECK(a != ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000002, 81, 0));
	CHECK(a != ss_tcp_isn(k1, 0x0a000009, 40000, 0x0a000002, 80, 0));
	CHECK(a != ss_tcp_isn(k2, 0x0a000001, 40000, 0x0a000002, 80, 0));
	CHECK_EQ_U64(ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000002, 80, 3), a);
	CHECK_EQ_U64(ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000002, 80, 4), a + 1u);
	CHECK_EQ_U64(ss_tcp_isn(k1, 0x0a000001, 40000, 0x0a000002, 80, 4000000), a + 1000000u);
}

/* SipHash-2-4 reference vectors (key 00..0f, message 00..n-1). */
#include "tcp/siphash.h"
static void test_siphash_vectors(void)
{
	uint8_t key[16], msg[64];

	for (unsigned i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (unsigned i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	CHECK_EQ_U64(ss_siphash24(key, msg, 0), 0x726fdb47dd0e0e31ull);
	CHECK_EQ_U64(ss_siphash24(key, msg, 1), 0x74f839c593dc67fdull);
	CHECK_EQ_U64(ss_siphash24(key, msg, 8), 0x93f5f5799a932462ull);
	CHECK_EQ_U64(ss_siphash24(key, msg, 15), 0xa129ca6149be45e5ull);
	CHECK_EQ_U64(ss_siphash24(key, msg, 63), 0x958a324ceb064572ull);
}

/* Params and state names. */
static void test_params_names(void)
{
	struct ss_tcp_params p;

	ss_tcp_params_default(&p);
	CHECK_EQ_U64(p.mss, 1460);
	CHECK_EQ_U64(p.rto_initial_us, 1000000);
	CHECK_EQ_U64(p.syn_retries, 6);
	CHECK_STR(ss_tcp_state_name(SS_TCPS_ESTABLISHED), "ESTABLISHED");
	CHECK_STR(ss_tcp_state_name(SS_TCPS_LAST_ACK), "LAST_ACK");
	CHECK_STR(ss_tcp_state_name(SS_TCPS_MAX), "?");
}

int main(void)
{
	test_closed_connect();
	test_syn_sent_synack_full_options();
	test_syn_sent_synack_no_options();
	test_syn_sent_synack_mss_absent();
	test_syn_sent_synack_wscale_one_sided();
	test_syn_sent_synack_wscale_clamp();
	test_syn_sent_synack_ts_one_sided();
	test_closed_accept_syn();
	test_closed_accept_syn_no_options();
	test_syn_sent_timeout();
	test_syn_sent_synack_after_retransmit();
	test_syn_sent_simultaneous_open();
	test_syn_sent_rst_good_ack();
	test_syn_sent_rst_bad_ack();
	test_syn_sent_bad_ack();
	test_syn_rcvd_synack_retransmit();
	test_syn_rcvd_bad_ack();
	test_syn_sent_send_early();
	test_isn_rfc6528();
	test_siphash_vectors();
	test_params_names();
	return check_done("test_tcp_handshake");
}
