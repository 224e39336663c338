/* test_tcp_ecn.c - ECN (RFC 3168): negotiation both ways, ECT(0) marking, CE echo until CWR, one reduction per window. */
#include "tcp_harness.h"

#define MSS_TS (1460 - 12)

static struct harness h;

/* Active open with ECN on; the peer's SYN-ACK carries @synack_flags extra. */
static void ecn_active(uint8_t synack_flags)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_init(&h, &cfg);
	h.p.ecn = 1;
	CHECK(ss_tcp_connect(&h.c, h.now) == 0);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_SYN | SS_TCP_ECE | SS_TCP_CWR);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_NOT_ECT); /* §6.1.1: SYN not ECT */
	h.now += 10000;
	struct ss_tcp s = h_synack_make(&h);
	s.flags |= synack_flags;
	h_input(&h, &s);
	h.peer_nxt = cfg.peer_iss + 1;
	h_output(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	h_clear(&h);
}

static void test_syn_sent_ecn_accepted(void)
{
	ecn_active(SS_TCP_ECE);
	CHECK_EQ_U64(h.c.ecn_ok, 1);
	CHECK(h_app_send(&h, 1000) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_ECT0);
	CHECK_EQ_U64(h.out[0].hdr.flags & (SS_TCP_ECE | SS_TCP_CWR), 0);
	/* A pure ACK is not ECT (§6.1.4). */
	h_clear(&h);
	h_peer_send(&h, 100);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_NOT_ECT);
	harness_free(&h);
}

/* A SYN-ACK without ECE, or with ECE+CWR (not a valid acceptance): no ECN. */
static void test_syn_sent_ecn_declined(void)
{
	ecn_active(0);
	CHECK_EQ_U64(h.c.ecn_ok, 0);
	CHECK(h_app_send(&h, 1000) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_NOT_ECT);
	ecn_active(SS_TCP_ECE | SS_TCP_CWR);
	CHECK_EQ_U64(h.c.ecn_ok, 0);
	harness_free(&h);
}

/* Passive: ECE+CWR on the SYN is an offer; the SYN-ACK answers with ECE
 * only.  ECE alone on a SYN is not an offer.  With ECN off, never. */
static void test_listen_syn_ecn(void)
{
	struct h_cfg cfg;
	const struct {
		uint8_t syn_flags, ecn_param, want_ok, want_synack;
	} cases[] = {
		{ SS_TCP_ECE | SS_TCP_CWR, 1, 1, SS_TCP_SYN | SS_TCP_ACK | SS_TCP_ECE },
		{ SS_TCP_ECE, 1, 0, SS_TCP_SYN | SS_TCP_ACK },
		{ 0, 1, 0, SS_TCP_SYN | SS_TCP_ACK },
		{ SS_TCP_ECE | SS_TCP_CWR, 0, 0, SS_TCP_SYN | SS_TCP_ACK },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h_cfg_default(&cfg);
		harness_init(&h, &cfg);
		h.p.ecn = cases[i].ecn_param;
		struct ss_tcp syn = h_seg_make(&h, (uint8_t)(SS_TCP_SYN | cases[i].syn_flags),
					       cfg.peer_iss, 0, cfg.peer_win, NULL, 0);
		h_syn_opts(&h, &syn);
		CHECK(ss_tcp_accept_syn(&h.c, &syn, h.now) == 0);
		CHECK_EQ_U64(h.c.ecn_ok, cases[i].want_ok);
		CHECK_EQ_U64(h.out[0].hdr.flags, cases[i].want_synack);
	}
	harness_free(&h);
}

/* CE on received data: ACK at once with ECE, and ECE on every ACK until
 * the peer's CWR; CE bytes counted. */
static void test_established_ce_echo(void)
{
	ecn_active(SS_TCP_ECE);
	uint32_t off = 0;
	h_peer_data_at(&h, off, 500, h.c.f.snd_max, 0);
	h.peer_nxt += 500;
	off += 500;
	h_output(&h);
	h_clear(&h);
	/* The CE-marked segment. */
	static uint8_t buf[600];
	struct ss_tcp s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, h.c.f.snd_max, 65535, buf, 600);
	s.ip_ecn = SS_IP_ECN_CE;
	h_input(&h, &s);
	h.peer_nxt += 600;
	off += 600;
	CHECK_EQ_U64(h.c.ce_bytes, 600);
	CHECK_EQ_U64(h.c.st.ce_segs, 1);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK(h.out[0].hdr.flags & SS_TCP_ECE);
	/* Later ACKs keep ECE... */
	h_clear(&h);
	h_peer_data_at(&h, off, 3000, h.c.f.snd_max, 0);
	h.peer_nxt += 3000;
	off += 3000;
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK(h.out[0].hdr.flags & SS_TCP_ECE);
	/* ...until a segment with CWR. */
	h_clear(&h);
	s = h_seg_make(&h, SS_TCP_ACK | SS_TCP_CWR, h.peer_nxt, h.c.f.snd_max, 65535, buf, 600);
	h_input(&h, &s);
	h.peer_nxt += 600;
	h_output(&h);
	CHECK_EQ_U64(h.c.ece_pending, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags & SS_TCP_ECE, 0);
	harness_free(&h);
}

/* ECE from the peer: the window halves once per window of data, CWR goes
 * on the next new segment only, retransmissions are not ECT. */
static void test_established_ece_reaction(void)
{
	ecn_active(SS_TCP_ECE);
	uint32_t una = h.c.iss + 1;
	CHECK(h_app_send(&h, 8 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 8);
	h_clear(&h);
	/* ACK of 2 segments with ECE: flight was 8 MSS -> cwnd = 4 MSS. */
	struct ss_tcp s = h_seg_make(&h, SS_TCP_ACK | SS_TCP_ECE, h.peer_nxt, una + 2 * MSS_TS,
				     65535, NULL, 0);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.ecn_reductions, 1);
	CHECK_EQ_U64(h.c.f.ssthresh, 4 * MSS_TS);
	CHECK_EQ_U64(h.c.cwr_pending, 1);
	/* More ECE in the same window: no second reduction. */
	s = h_seg_make(&h, SS_TCP_ACK | SS_TCP_ECE, h.peer_nxt, una + 3 * MSS_TS, 65535, NULL, 0);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.ecn_reductions, 1);
	/* The next new segment carries CWR; the one after does not (room for
	 * new data once the flight is below the halved window). */
	s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, una + 6 * MSS_TS, 65535, NULL, 0);
	h_input(&h, &s);
	CHECK(h_app_send(&h, 4 * MSS_TS) == 0);
	h_clear(&h);
	h_output(&h);
	CHECK(h.nout >= 2);
	CHECK(h.out[0].hdr.flags & SS_TCP_CWR);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_ECT0);
	CHECK_EQ_U64(h.out[1].hdr.flags & SS_TCP_CWR, 0);
	CHECK_EQ_U64(h.c.cwr_pending, 0);
	/* A retransmission (RTO, go-back-N) is not ECT (§6.1.5). */
	h_clear(&h);
	h.now = h.c.rto_deadline_us;
	h_timer(&h);
	CHECK(h.nout >= 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una + 6 * MSS_TS);
	CHECK_EQ_U64(h.out[0].hdr.ip_ecn, SS_IP_ECN_NOT_ECT);
	harness_free(&h);
}

int main(void)
{
	test_syn_sent_ecn_accepted();
	test_syn_sent_ecn_declined();
	test_listen_syn_ecn();
	test_established_ce_echo();
	test_established_ece_reaction();
	return check_done("test_tcp_ecn");
}
