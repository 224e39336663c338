/* test_tcp_opts.c - socket options in the engine: Nagle's algorithm (Minshall's variant, TCP_NODELAY), TCP_CORK and MSG_MORE, keepalive, TCP_MAXSEG: the exact segments. */
#include <errno.h>

#include "tcp_harness.h"

#define MSS_TS (1460 - 12)

static struct harness h;

static void est(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
}

/* Nagle: the second small write waits for the ACK of the first, then
 * goes; with TCP_NODELAY it goes at once. */
static void test_nagle_holds_second_small_write(void)
{
	est();
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 100);
	h_clear(&h);
	CHECK(h_app_send(&h, 50) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0); /* held: a small segment in flight */
	CHECK(h_app_send(&h, 30) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now += 10000;
	h_peer_ack(&h, h.cfg.iss + 1 + 100, 65535);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, h.cfg.iss + 1 + 100);
	CHECK_EQ_U64(h.out[0].len, 80); /* both writes, one segment */
	h_clear(&h);

	/* TCP_NODELAY: no wait. */
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_NODELAY, 1, h.now) == 0);
	CHECK(h_app_send(&h, 20) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, h.cfg.iss + 1 + 180);
	CHECK_EQ_U64(h.out[0].len, 20);
	harness_free(&h);
}

/* Minshall: full segments in flight do not hold the last small one (a
 * reply of three segments goes at once, as on Linux). */
static void test_nagle_minshall_full_in_flight(void)
{
	est();
	CHECK(h_app_send(&h, 2 * MSS_TS + 104) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	CHECK_EQ_U64(h.out[2].len, 104);
	h_clear(&h);
	/* The FIN is not held behind the small segment in flight. */
	CHECK(h_app_send(&h, 10) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	h_shutdown(&h);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK(h.out[0].hdr.flags & SS_TCP_FIN);
	CHECK_EQ_U64(h.out[0].len, 10);
	harness_free(&h);
}

/* TCP_CORK: full segments go, the small rest waits for the cork to come
 * off or for 200 ms with nothing in flight. */
static void test_cork(void)
{
	est();
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_CORK, 1, h.now) == 0);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK(h_app_send(&h, MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1); /* one full segment */
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	h_clear(&h);
	h.now += 10000;
	h_peer_ack(&h, h.cfg.iss + 1 + MSS_TS, 65535);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0); /* 100 bytes still corked */
	uint64_t t0 = h.now;
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t0 + SS_TCP_CORK_US);
	h.now = t0 + SS_TCP_CORK_US - 1;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	h_fire(&h);
	CHECK_EQ_U64(h.now, t0 + SS_TCP_CORK_US);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, h.cfg.iss + 1 + MSS_TS);
	CHECK_EQ_U64(h.out[0].len, 100);
	/* The slot is the RTO's again. */
	CHECK(h.c.rto_deadline_us > h.now + 100000);
	CHECK(!(h.c.txopt & (SS_TCP_TXO_PUSH | SS_TCP_TXO_CTIMER)));
	h_clear(&h);
	h.now += 10000;
	h_peer_ack(&h, h.cfg.iss + 1 + MSS_TS + 100, 65535);
	/* Uncorked: what waits goes (nothing small in flight). */
	CHECK(h_app_send(&h, 7) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_CORK, 0, h.now) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 7);
	harness_free(&h);
}

/* MSG_MORE: held for one send; the next send without it lets all go. */
static void test_msg_more(void)
{
	est();
	ss_tcp_set_more(&h.c, true);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	ss_tcp_set_more(&h.c, false);
	CHECK(h_app_send(&h, 50) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 150);
	harness_free(&h);
}

/* Keepalive: a probe <SEQ=SND.UNA-1> with no data after the idle time,
 * one per interval, KEEPCNT unanswered: RST and ETIMEDOUT; an answer
 * starts the idle time again. */
static void test_keepalive(void)
{
	est();
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPIDLE, 0, h.now) == -1);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPCNT, 128, h.now) == -1);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPIDLE, 2, h.now) == 0);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPINTVL, 1, h.now) == 0);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPCNT, 2, h.now) == 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	uint64_t t0 = h.now;
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_KEEPALIVE, 1, h.now) == 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t0 + 2000000);
	h_fire(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, h.cfg.iss); /* SND.UNA - 1 */
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.c.st.ka_probes, 1);
	h_clear(&h);
	/* Answered: idle again from the answer. */
	h.now += 1000;
	h_peer_ack(&h, h.cfg.iss + 1, 65535);
	uint64_t ans = h.now;
	h_fire(&h); /* the interval's check: no probe, the rest of the idle time */
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), ans + 2000000);
	h_fire(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.ka_probes, 1);
	h_fire(&h);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.now, ans + 3000000);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	h_fire(&h); /* two unanswered: reset */
	CHECK_EQ_U64(h.now, ans + 4000000);
	CHECK_EQ_U64(h.nout, 3);
	CHECK(h.out[2].hdr.flags & SS_TCP_RST);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK(h.c.events & SS_TCP_EV_ERROR);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h.c.st.ka_timeouts, 1);
	harness_free(&h);
}

/* TCP_MAXSEG before connect: the SYN announces it, the send MSS is at
 * most it; Linux's range. */
static void test_maxseg(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_init(&h, &cfg);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_MAXSEG, 87, 0) == -1);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_MAXSEG, 32768, 0) == -1);
	CHECK(ss_tcp_setopt(&h.c, SS_TCP_OPT_MAXSEG, 1000, 0) == 0);
	CHECK(ss_tcp_connect(&h.c, h.now) == 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.opts.mss, 1000);
	h.now += 10000;
	struct ss_tcp s = h_synack_make(&h);

	h_input(&h, &s);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.c.f.mss, 1000 - 12);
	harness_free(&h);
}

int main(void)
{
	test_nagle_holds_second_small_write();
	test_nagle_minshall_full_in_flight();
	test_cork();
	test_msg_more();
	test_keepalive();
	test_maxseg();
	return check_done("test_tcp_opts");
}
