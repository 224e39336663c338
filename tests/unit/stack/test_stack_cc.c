/* test_stack_cc.c - congestion control in the service's stack: the control loop over active flows, pacing, per-application caps and algorithms, ECN feedback. */
#include "check.h"
#include "stack_harness.h"
#include "stack/stack_internal.h"

#include <string.h>

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536 small=0"

static uint64_t ctr(struct sh *h, enum ss_counter_id id)
{
	return ss_ctr_read(&h->ctr, id);
}

/* The process name the service reads at attach: ours. */
static char self_comm[16];

struct flow {
	uint32_t slot, gen;
	uint8_t *tx;
	uint32_t tx_tail, tx_unacked;
	uint64_t queued, got; /* app bytes queued / peer bytes read and checked */
	bool connected, bad;
	struct sh_peer_conn *peer;
};

static void poll_events(struct sh *h, struct flow *fl, unsigned n)
{
	struct ss_shm_ev ev;

	while (sh_event(h, &ev)) {
		struct flow *f = NULL;
		if (ev.type == SS_EV_CONNECTED) {
			f = &fl[ev.cookie];
			f->slot = ev.conn;
			f->gen = ev.gen;
			f->connected = ev.error == 0;
			f->tx = h->app->region + ev.tx_off;
			continue;
		}
		for (unsigned i = 0; i < n; i++)
			if (fl[i].connected && fl[i].slot == ev.conn && fl[i].gen == ev.gen)
				f = &fl[i];
		if (f && ev.type == SS_EV_TX_ACKED)
			f->tx_unacked -= ev.arg;
	}
}

/* @n flows to the peer, connected. */
static void open_flows(struct sh *h, struct flow *fl, unsigned n)
{
	h->peer_listen_port = 9000;
	for (unsigned i = 0; i < n; i++) {
		memset(&fl[i], 0, sizeof(fl[i]));
		sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000,
						.cookie = i });
	}
	sh_pump(h, 16);
	poll_events(h, fl, n);
	for (unsigned i = 0; i < n; i++) {
		CHECK(fl[i].connected);
		fl[i].peer = &h->peer[i];
		CHECK(fl[i].peer->used);
	}
}

/* Flow @i's application writes @k more pattern bytes (seed = @i). */
static void queue(struct sh *h, struct flow *fl, unsigned i, uint32_t k)
{
	struct flow *f = &fl[i];
	uint32_t size = h->app->txbuf_size;

	for (uint32_t j = 0; j < k; j++)
		f->tx[(f->tx_tail + j) & (size - 1)] = sh_pat(f->queued + j, i);
	f->tx_tail += k;
	f->tx_unacked += k;
	f->queued += k;
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = f->slot, .gen = f->gen, .arg = k });
}

/* The app keeps each flow's transmit ring full (pattern bytes, seed = flow
 * index), up to @limit bytes per flow; the peer reads and checks. */
static void keep_full(struct sh *h, struct flow *fl, unsigned n, uint64_t limit)
{
	for (unsigned i = 0; i < n; i++) {
		struct flow *f = &fl[i];
		uint64_t left = limit - f->queued;
		uint32_t k = h->app->txbuf_size - f->tx_unacked;

		if (k > left)
			k = (uint32_t)left;
		if (k)
			queue(h, fl, i, k);
	}
}

/* 50 us of virtual time: the service and the peer run, the peer reads
 * and checks, the app takes its events. */
static void tick(struct sh *h, struct flow *fl, unsigned n)
{
	h->now_us += 50;
	sh_pump(h, 64);
	for (unsigned i = 0; i < n; i++)
		sh_peer_read_check(fl[i].peer, &fl[i].got, i, &fl[i].bad);
	sh_pump(h, 8);
	poll_events(h, fl, n);
}

/* Runs @us of virtual time in 50 us steps, the app keeping rings full. */
static void run(struct sh *h, struct flow *fl, unsigned n, uint64_t us, uint64_t limit)
{
	for (uint64_t t = 0; t < us; t += 50) {
		keep_full(h, fl, n, limit);
		tick(h, fl, n);
	}
}

static struct ss_sconn *sconn(struct sh *h, const struct flow *f)
{
	return h->app->slot_conn[f->slot];
}

/* The service's defaults with dctcp-rate for every flow: the control
 * loop, the host-shared controller and the pacer that most tests here
 * exercise ("auto", the default, starts flows on cubic). */
static void policy_dctcp_rate(struct ss_cc_policy *pol)
{
	char err[160];

	ss_cc_policy_default(pol);
	CHECK(ss_cc_policy_set_algo(pol, "dctcp-rate", err, sizeof(err)) == 0);
}

/* The control loop runs only for active flows: a sending flow gets
 * intervals and rate updates; once it has sent everything and all is
 * acknowledged it leaves the wheel (cc_idle), and comes back when it
 * sends again.  The data is exact all along. */
static void test_loop_follows_active_flows(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[2];

	char *trace = NULL;
	size_t trace_len = 0;
	FILE *tf = open_memstream(&trace, &trace_len);

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	ss_stack_set_cc(&h.st, &pol);
	ss_stack_set_cc_trace(&h.st, tf);
	open_flows(&h, fl, 2);
	struct ss_sconn *sc0 = sconn(&h, &fl[0]), *sc1 = sconn(&h, &fl[1]);
	CHECK(sc0->cc.ops == &ss_cc_dctcp_rate_ops);
	CHECK_EQ_U64(sc0->tcp.cc_mode, SS_TCP_CC_RATE);
	CHECK_EQ_U64(sc0->tcp.ecn_dctcp, 1);

	/* Only flow 0 sends: 300 kB. */
	run(&h, fl, 1, 200000, 300000);
	CHECK_EQ_U64(fl[0].got, 300000);
	CHECK(!fl[0].bad);
	CHECK(ctr(&h, SS_CTR_cc_intervals) > 0);
	CHECK(ctr(&h, SS_CTR_cc_rate_updates) > 0);
	CHECK(!ss_timer_armed(&sc1->cc.timer)); /* never active */
	/* Done and acknowledged: the flow goes idle and leaves the wheel. */
	sh_advance(&h, 20000, 100);
	CHECK(!ss_timer_armed(&sc0->cc.timer));
	/* TCP_INFO's record for the slot, as the last interval left it. */
	const struct ss_shm_conn_info *in =
		(const struct ss_shm_conn_info *)(const void *)(h.app->region + h.app->info_off) +
		fl[0].slot;
	CHECK(in->seq && !(in->seq & 1));
	CHECK_EQ_U64(in->state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(in->bytes_acked, 300000);
	CHECK_EQ_U64(in->unacked, 0);
	CHECK_EQ_U64(in->snd_mss, sc0->tcp.f.mss);
	CHECK_EQ_U64(in->srtt_us, sc0->tcp.f.srtt_us);
	CHECK_EQ_U64(in->rto_us, sc0->tcp.f.rto_us);
	CHECK_EQ_U64(in->total_retrans, 0);
	CHECK_EQ_U64(in->pacing_rate, sc0->cc.pf.rate);
	CHECK(in->pacing_rate > 0);
	CHECK_EQ_U64(in->options & (SS_INFO_OPT_TS | SS_INFO_OPT_SACK | SS_INFO_OPT_ECN),
		     SS_INFO_OPT_TS | SS_INFO_OPT_SACK | SS_INFO_OPT_ECN);
	CHECK_STR(in->cc_name, "dctcp-rate");
	/* Flow 1 never sent: its record is the handshake's, written twice
	 * (SYN_SENT, then ESTABLISHED with the algorithm's start), never
	 * since. */
	const struct ss_shm_conn_info *in1 =
		(const struct ss_shm_conn_info *)(const void *)(h.app->region + h.app->info_off) +
		fl[1].slot;
	CHECK_EQ_U64(in1->seq, 4);
	CHECK_EQ_U64(in1->state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(in1->gen, sc1->gen);
	CHECK_EQ_U64(in->gen, sc0->gen);
	CHECK_EQ_U64(in1->bytes_acked, 0);
	CHECK(ctr(&h, SS_CTR_cc_idle) >= 1);
	uint64_t iv = ctr(&h, SS_CTR_cc_intervals);
	/* --cc-trace: a header, then one line per interval, all of flow 0,
	 * whose acked column adds up to the data. */
	ss_stack_set_cc_trace(&h.st, NULL);
	fclose(tf);
	uint64_t lines = 0, acked_sum = 0;
	char *line = trace ? strchr(trace, '\n') : NULL;
	CHECK(trace && strncmp(trace, "# t_us conn ", 12) == 0);
	while (line && line[1]) {
		unsigned long long t, acked, ecn, sent, rate;
		unsigned id, ivl, srtt, rtt, cwnd, flags, infl, rlim, wlim;
		CHECK_EQ_U64(sscanf(line + 1, "%llu %u %u %llu %llu %llu %u %u %llu %u %x %u %u %u",
				    &t, &id, &ivl, &acked, &ecn, &sent, &srtt, &rtt, &rate, &cwnd,
				    &flags, &infl, &rlim, &wlim),
			     14);
		CHECK_EQ_U64(id, sc0->id);
		CHECK(rate > 0 && (flags & SS_CC_OUT_RATE));
		acked_sum += acked;
		lines++;
		line = strchr(line + 1, '\n');
	}
	CHECK_EQ_U64(lines, iv);
	CHECK_EQ_U64(acked_sum, 300000);
	free(trace);
	sh_advance(&h, 100000, 1000);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_intervals), iv); /* idle costs nothing */
	/* Sending again makes it active again. */
	run(&h, fl, 1, 5000, 310000);
	CHECK_EQ_U64(fl[0].got, 310000);
	CHECK(ss_timer_armed(&sc0->cc.timer) || ctr(&h, SS_CTR_cc_intervals) > iv);
	sh_fini(&h);
}

/* An application capped at 8 Mbit/s (1 MB/s) with two flows: together
 * they stay within the cap (bucket depth and one overdraft allowed), get
 * nearly all of it, and share it evenly; data exact.  Per flow, the cap is
 * what holds them (cc_cap_waits); with cc-share host (dctcp-rate) the
 * host's R, which follows the rate delivered, may hold them first. */
static void test_app_cap(const struct ss_cc_ops *algo, enum ss_cc_share share)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[2];
	char err[128], rule[64];

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	pol.ops = algo;
	pol.share = share;
	snprintf(rule, sizeof(rule), "%s=8", self_comm);
	CHECK(ss_cc_policy_add_cap(&pol, rule, err, sizeof(err)) == 0);
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 2);
	CHECK(h.app->cap == &h.st.caps[0]);
	CHECK_EQ_U64(h.app->cap ? h.app->cap->tb.rate : 0, 1000000);

	run(&h, fl, 2, 20000, UINT64_MAX); /* settle */
	uint64_t g0 = fl[0].got, g1 = fl[1].got;
	run(&h, fl, 2, 2000000, UINT64_MAX);
	uint64_t d0 = fl[0].got - g0, d1 = fl[1].got - g1, sum = d0 + d1;
	/* 2 s at 1 MB/s = 2 000 000 bytes; the bucket holds 16 KiB and one
	 * release may overdraw it by a quantum, and a ring's worth may be in
	 * flight at either end. */
	CHECK(sum <= 2000000 + 16384 + 2 * 65536);
	CHECK(sum >= 1900000);
	CHECK(d0 * 10 >= sum * 4 && d1 * 10 >= sum * 4);
	CHECK(!fl[0].bad && !fl[1].bad);
	if (share == SS_CC_SHARE_FLOW)
		CHECK(ctr(&h, SS_CTR_cc_cap_waits) > 0);
	else
		CHECK(ctr(&h, SS_CTR_cc_cap_waits) + ctr(&h, SS_CTR_cc_paced_waits) > 0);
	sh_fini(&h);
}

/* A per-application algorithm: cc-app NAME=newreno gives that app's flows
 * NewReno (window mode, RFC 3168 echo), the rest keep the service's. */
static void test_app_algorithm(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[1];
	char err[128], rule[64];

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	snprintf(rule, sizeof(rule), "%s=newreno", self_comm);
	CHECK(ss_cc_policy_add_algo(&pol, rule, err, sizeof(err)) == 0);
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	struct ss_sconn *sc = sconn(&h, &fl[0]);
	CHECK(sc->cc.ops == &ss_cc_newreno_ops);
	CHECK_EQ_U64(sc->tcp.cc_mode, SS_TCP_CC_WINDOW);
	CHECK_EQ_U64(sc->tcp.ecn_dctcp, 0);
	CHECK_EQ_U64(sc->tcp.tx_budget, SS_TCP_BUDGET_UNLIMITED); /* not paced */
	run(&h, fl, 1, 100000, 200000);
	CHECK_EQ_U64(fl[0].got, 200000);
	CHECK(!fl[0].bad);
	CHECK(ctr(&h, SS_CTR_cc_window_updates) > 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_paced_waits), 0);
	sh_fini(&h);
}

/* Every data segment to the peer arrives CE-marked: the peer (a classic
 * RFC 3168 receiver) echoes ECE, our side answers with CWR and its
 * dctcp-rate loop cuts the rate. */
static bool mark_ce(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	if (seg->payload_len && seg->ip_ecn == SS_IP_ECN_ECT0)
		((struct ss_tcp *)seg)->ip_ecn = SS_IP_ECN_CE;
	return false; /* nothing lost */
}

static void test_ecn_feedback(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[1];

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	CHECK_EQ_U64(fl[0].peer->c.ecn_ok, 1);
	h.lose = mark_ce;
	/* Everything marked: the rate goes down toward its 1 Mbit/s floor,
	 * so a little data and some time. */
	run(&h, fl, 1, 300000, 20000);
	CHECK_EQ_U64(fl[0].got, 20000);
	CHECK(!fl[0].bad);
	CHECK(fl[0].peer->c.st.ce_segs > 0);
	CHECK(ctr(&h, SS_CTR_tcp_ecn_echoes) > 0);
	CHECK(ctr(&h, SS_CTR_cc_reductions) > 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_ecn_reductions), 0); /* the loop's job */
	sh_fini(&h);
}

/* Every 40th data segment to the peer is lost. */
static unsigned lose_n;
static bool lose_every_40th(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	return seg->payload_len && ++lose_n % 40 == 0;
}

/*
 * "auto", the default: a flow starts on cubic (window mode, not paced,
 * the RFC 3168 echo) and stays there while it loses nothing, bulk or not;
 * at the first interval its window holds it back and it loses segments
 * it moves to bbr (rate mode, paced), once; with ECN
 * negotiated it then moves to dctcp-win at the first interval whose ACKs
 * carry marks, once, for good; without ECN it stays on bbr whatever
 * happens.  Data exact.
 */
static void test_auto_pick(bool ecn)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[1];

	CHECK(sh_init(&h, ATTACH) == 0);
	h.params.ecn = ecn;
	ss_cc_policy_default(&pol);
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	struct ss_sconn *sc = sconn(&h, &fl[0]);
	CHECK_EQ_U64(sc->tcp.ecn_ok, ecn);
	CHECK(sc->cc.ops == &ss_cc_cubic_ops);
	CHECK_EQ_U64(sc->cc.auto_pick, 1);
	CHECK_EQ_U64(sc->cc.auto_ecn, ecn);
	CHECK_EQ_U64(sc->tcp.cc_mode, SS_TCP_CC_WINDOW);
	CHECK_EQ_U64(sc->tcp.ecn_dctcp, 0);
	CHECK_EQ_U64(sc->tcp.tx_budget, SS_TCP_BUDGET_UNLIMITED); /* not paced */
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_cubic), 1);
	/* Bulk with losses from the start (in slow start its own window
	 * holds it back, not the peer's): bbr.  test_quiet_flow_stretched
	 * has a bulk flow that loses nothing stay on cubic. */
	lose_n = 0;
	h.lose = lose_every_40th;
	run(&h, fl, 1, 200000, 600000);
	h.lose = NULL;
	run(&h, fl, 1, 100000, 600000);
	CHECK_EQ_U64(fl[0].got, 600000);
	CHECK(!fl[0].bad);
	CHECK(sc->cc.ops == &ss_cc_bbr_ops);
	CHECK_EQ_U64(sc->tcp.cc_mode, SS_TCP_CC_RATE);
	CHECK(sc->cc.paced);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_bbr), 1);
	CHECK_EQ_U64(sc->cc.auto_pick, ecn); /* only marks can move it on */
	CHECK(ctr(&h, SS_CTR_cc_rate_updates) > 0);
	/* Marks on every data segment (they reach the peer only with ECN). */
	h.lose = mark_ce;
	run(&h, fl, 1, 300000, 650000);
	CHECK_EQ_U64(fl[0].got, 650000);
	CHECK(!fl[0].bad);
	if (ecn) {
		CHECK(sc->cc.ops == &ss_cc_dctcp_win_ops);
		CHECK_EQ_U64(sc->cc.auto_ecn, 0);
		CHECK_EQ_U64(sc->cc.auto_pick, 0);
		CHECK_EQ_U64(sc->tcp.cc_mode, SS_TCP_CC_WINDOW);
		CHECK_EQ_U64(sc->tcp.ecn_dctcp, 1);
		CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_dctcp), 1);
		CHECK(ctr(&h, SS_CTR_cc_reductions) > 0);
	} else {
		CHECK_EQ_U64(fl[0].peer->c.st.ce_segs, 0);
		CHECK(sc->cc.ops == &ss_cc_bbr_ops);
		CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_dctcp), 0);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_cubic), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_bbr), 1);
	sh_fini(&h);
}

/*
 * A window flow its window never stops (a request now and then) gets
 * intervals 32 times longer after its first, so the loop costs next to
 * nothing per request; the first output its window stops pulls the
 * interval in (cc_unstretched) and the intervals are the usual ones
 * while it stays window-limited.  Data exact.
 */
static void test_quiet_flow_stretched(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[1];

	CHECK(sh_init(&h, ATTACH) == 0);
	ss_cc_policy_default(&pol); /* auto: cubic, windows */
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	struct ss_sconn *sc = sconn(&h, &fl[0]);
	/* 100 bytes every 500 us for 200 ms: never window-limited. */
	for (unsigned t = 0; t < 4000; t++) {
		if (t % 10 == 0)
			queue(&h, fl, 0, 100);
		tick(&h, fl, 1);
	}
	CHECK_EQ_U64(fl[0].got, 40000);
	CHECK(!fl[0].bad);
	CHECK(sc->cc.stretched);
	CHECK(sc->cc.ops == &ss_cc_cubic_ops);
	uint64_t quiet = ctr(&h, SS_CTR_cc_intervals);
	/* The harness's round trip is ~1 us: unstretched, intervals are at
	 * the 50 us floor, ~4000 in 200 ms; stretched, 32 times longer. */
	CHECK(quiet < 200);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_unstretched), 0);
	/* Bulk: the window stops it at once, and the interval pulled in
	 * runs within the usual length. */
	run(&h, fl, 1, 2000, 40000 + 2000000);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_unstretched), 1);
	CHECK(ctr(&h, SS_CTR_cc_intervals) > quiet);
	run(&h, fl, 1, 200000, 40000 + 2000000);
	CHECK_EQ_U64(fl[0].got, 40000 + 2000000);
	CHECK(!fl[0].bad);
	/* "auto" leaves a bulk flow that lost nothing on cubic, unpaced. */
	CHECK(sc->cc.ops == &ss_cc_cubic_ops);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_auto_bbr), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_rate_updates), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_fast_retrans), 0);
	sh_fini(&h);
}

/* The control interval is one per path: two flows to one host whose own
 * srtt differ 9x (a receiver that reads one of them late) still get the
 * same interval, 2 RTTs of the host's path estimate, so neither gains
 * (nor is cut) more often.  The data stays exact. */
static void test_interval_per_path(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[2];
	uint32_t armed[2] = { 0, 0 };

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	pol.share = SS_CC_SHARE_FLOW; /* flows' own timers (a host's members have its) */
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 2);
	struct ss_sconn *sc[2] = { sconn(&h, &fl[0]), sconn(&h, &fl[1]) };
	run(&h, fl, 2, 20000, 1u << 30);
	for (unsigned step = 0; step < 400; step++) {
		sc[0]->tcp.f.srtt_us = 100;
		sc[1]->tcp.f.srtt_us = 900;
		run(&h, fl, 2, 50, 1u << 30);
		for (unsigned i = 0; i < 2; i++)
			if (ss_timer_armed(&sc[i]->cc.timer) && sc[i]->cc.start_us == h.now_us)
				armed[i] = (uint32_t)(sc[i]->cc.timer.deadline_us - sc[i]->cc.start_us);
	}
	const struct ss_cc_path *p = &h.st.cc_paths[(SH_PEER_IP * 2654435761u) >> 24];
	CHECK_EQ_U64(p->ip, SH_PEER_IP);
	/* The mean of 100 and 900, each weighted 1/8 per interval. */
	CHECK(p->rtt_us > 300 && p->rtt_us < 700);
	CHECK(armed[0] && armed[1]);
	CHECK(armed[0] * 10 > armed[1] * 8 && armed[1] * 10 > armed[0] * 8);
	CHECK(armed[0] >= 600 && armed[1] >= 600); /* not 2 x 100 us */
	for (unsigned i = 0; i < 2; i++)
		CHECK(!fl[i].bad && fl[i].got > 0);
	sh_fini(&h);
}

/* A paced flow's interval holds at least 4 segments at its rate: at
 * 2 Mbit/s (250 kB/s) and a path RTT of a few tens of us, 4 x 1460 B
 * take ~23 ms, so an interval is not a single packet (or none). */
static void test_interval_holds_segments(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[1];
	unsigned checked = 0;

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	pol.share = SS_CC_SHARE_FLOW; /* flows' own timers (a host's members have its) */
	pol.params.dctcp_rate.init_rate = 250000;
	pol.params.dctcp_rate.max_rate = 250000;
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	struct ss_sconn *sc = sconn(&h, &fl[0]);
	for (unsigned step = 0; step < 4000; step++) {
		run(&h, fl, 1, 50, 1u << 30);
		if (ss_timer_armed(&sc->cc.timer) && sc->cc.start_us == h.now_us && sc->cc.pf.rate) {
			uint64_t want = 4ull * sc->tcp.f.mss * 1000000u / sc->cc.pf.rate;
			CHECK(sc->cc.timer.deadline_us - sc->cc.start_us >= want);
			checked++;
		}
	}
	CHECK(checked >= 3);
	CHECK(sc->tcp.f.srtt_us > 0 && 4u * sc->tcp.f.srtt_us < 4000); /* RTT alone: far shorter */
	CHECK(!fl[0].bad && fl[0].got > 0);
	sh_fini(&h);
}

/*
 * cc-share host: three flows to one host run one controller.  Whenever
 * the host's controller has run, every member flow is paced at the same
 * share (most often all three), and the host counts three flows; the
 * data stays exact.  cc-share flow:
 * no host controller runs.  A collision (the host's entry held by another
 * address that is active) falls back to each flow's own controller and
 * counts cc_share_collisions.
 */
static void test_host_share(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[3];
	unsigned equal = 0;

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	CHECK_EQ_U64(pol.share, SS_CC_SHARE_HOST); /* the default */
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 3);
	struct ss_sconn *sc[3] = { sconn(&h, &fl[0]), sconn(&h, &fl[1]), sconn(&h, &fl[2]) };
	struct ss_cc_path *p = &h.st.cc_paths[(SH_PEER_IP * 2654435761u) >> 24];
	uint64_t runs = 0;
	for (unsigned step = 0; step < 2000; step++) {
		uint64_t iv0 = ctr(&h, SS_CTR_cc_intervals), upd0 = ctr(&h, SS_CTR_cc_rate_updates);
		run(&h, fl, 3, 50, 1u << 30);
		/* A host's run counts its members' intervals and rate
		 * updates at once: one of each per member sampled, as
		 * each flow's own interval does. */
		CHECK_EQ_U64(ctr(&h, SS_CTR_cc_intervals) - iv0, ctr(&h, SS_CTR_cc_rate_updates) - upd0);
		CHECK(ctr(&h, SS_CTR_cc_intervals) - iv0 <= 3 * (ctr(&h, SS_CTR_cc_host_intervals) - runs + 1));
		if (ctr(&h, SS_CTR_cc_host_intervals) != runs) {
			runs = ctr(&h, SS_CTR_cc_host_intervals);
			/* Every member (a flow that went idle leaves) is at its
			 * share now: the level, or its demand if that is less
			 * (it did not use its rate). */
			unsigned members = 0;
			for (unsigned i = 0; i < 3; i++) {
				if (!sc[i]->cc.shared)
					continue;
				members++;
				uint64_t want = ss_cc_host_share(&p->host, &pol.params, &sc[i]->cc.share);
				CHECK_EQ_U64(sc[i]->cc.pf.rate, want);
				CHECK(want <= p->host.level);
				/* ... and paced with the others as one
				 * aggregate: the host's bucket at R, 500 us
				 * of R deep (at least 6000 B). */
				CHECK(sc[i]->cc.pf.group == &p->pace);
				CHECK(sc[i]->cc.host_grp == &p->pace);
				/* Sampled by its host's run: no timer of its own. */
				CHECK(!ss_timer_armed(&sc[i]->cc.timer));
				CHECK_EQ_U64(sc[i]->cc.start_us, h.st.cc_paths[(SH_PEER_IP * 2654435761u) >> 24].host_start_us);
				if (!sc[i]->cc.share.demand)
					CHECK_EQ_U64(want, p->host.level);
			}
			equal += members == 3;
			CHECK(!members || ss_timer_armed(&p->timer));
			CHECK(p->pace_on);
			CHECK_EQ_U64(p->pace.tb.rate, p->host.rate);
			CHECK_EQ_U64(p->pace.tb.burst, p->host.rate / 2000 > 6000 ? p->host.rate / 2000 : 6000);
		}
	}
	CHECK(equal >= 10);
	CHECK_EQ_U64(p->ip, SH_PEER_IP);
	CHECK_EQ_U64(p->host.n_last, 3);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_share_collisions), 0);
	for (unsigned i = 0; i < 3; i++)
		CHECK(!fl[i].bad && fl[i].got > 0);

	/* Another address, active, holds the entry: each flow on its own. */
	uint64_t iv = ctr(&h, SS_CTR_cc_intervals);
	for (unsigned step = 0; step < 400; step++) {
		p->ip = SH_PEER_IP + 1;
		p->last_us = h.now_us;
		run(&h, fl, 3, 50, 1u << 30);
	}
	CHECK(ctr(&h, SS_CTR_cc_intervals) > iv);
	CHECK(ctr(&h, SS_CTR_cc_share_collisions) > 0);
	CHECK(!sc[0]->cc.shared && !sc[1]->cc.shared && !sc[2]->cc.shared);
	CHECK(ss_list_empty(&p->members));
	for (unsigned i = 0; i < 3; i++) /* out of the old host's bucket */
		CHECK(sc[i]->cc.pf.group == NULL && sc[i]->cc.host_grp == NULL);
	CHECK(sc[0]->cc.pf.rate > 0);
	for (unsigned i = 0; i < 3; i++)
		CHECK(!fl[i].bad);
	sh_fini(&h);

	/* cc-share flow: no host controller. */
	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	pol.share = SS_CC_SHARE_FLOW;
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 2);
	run(&h, fl, 2, 20000, 1u << 30);
	CHECK(ctr(&h, SS_CTR_cc_intervals) > 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_host_intervals), 0);
	CHECK(!sconn(&h, &fl[0])->cc.shared);
	for (unsigned i = 0; i < 2; i++)
		CHECK(!fl[i].bad && fl[i].got > 0);
	sh_fini(&h);
}

/* A host's usual interval (stack_cc.c cc_host_iv()): 2 RTTs of its path
 * (ss_cc_interval_us()), at least 4 segments at R, at most 1 s, and at
 * least the loop's cost bound (cc_iv_at()). */
static uint64_t host_iv(const struct ss_stack *st, const struct ss_cc_path *p,
			const struct ss_cc_params *prm, uint32_t mss)
{
	uint64_t iv = ss_cc_interval_us(prm, p->rtt_us), seg = 4ull * mss * 1000000u / p->host.rate;
	uint64_t floor = ((uint64_t)st->cc_wheel.n_armed + st->cc_members + 1) * st->cc_flow_us;

	if (seg > iv)
		iv = seg > 1000000u ? 1000000u : seg;
	if (floor > iv)
		iv = floor > 1000000u ? 1000000u : floor;
	return iv;
}

/*
 * cc-share host, a slack host: three flows that each write 200 B every
 * 2 ms once the last write is acknowledged (an RPC client's requests)
 * never use their share.  Each run that held none of them back doubles
 * the next interval, up to 32 times the usual one (the host's entry stays
 * its own: at most 500 ms); cc_host_slack_runs counts them.  Then the
 * flows fill their rings: the first that its share holds back ends the
 * slack (cc_host_slack_ends) and the run comes at its usual end, and every
 * run after it has the usual interval.  The data stays exact.
 */
static void test_host_slack(void)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[3];

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 3);
	struct ss_sconn *sc0 = sconn(&h, &fl[0]);
	struct ss_cc_path *p = &h.st.cc_paths[(SH_PEER_IP * 2654435761u) >> 24];
	uint64_t runs = ctr(&h, SS_CTR_cc_host_intervals);
	unsigned stretched = 0, checked = 0;
	uint8_t slack = 0;

	for (unsigned step = 0; step < 40000; step++) { /* 2 s */
		if (step % 40 == 0)
			for (unsigned i = 0; i < 3; i++)
				if (!fl[i].tx_unacked)
					queue(&h, fl, i, 200);
		tick(&h, fl, 3);
		if (ctr(&h, SS_CTR_cc_host_intervals) == runs)
			continue;
		runs = ctr(&h, SS_CTR_cc_host_intervals);
		if (!ss_timer_armed(&p->timer) || p->host.fresh)
			continue;
		/* Slack in a row: one more doubling each run, up to 5. */
		CHECK(p->slack == slack + 1 || p->slack == 5 || (slack == 0 && p->slack == 0));
		slack = p->slack;
		uint64_t iv = host_iv(&h.st, p, &pol.params, sc0->tcp.f.mss), want = iv << p->slack;
		if (iv >= 500000)
			want = iv;
		else if (want > 500000)
			want = 500000;
		CHECK_EQ_U64(p->timer.deadline_us - p->host_start_us, want);
		stretched += p->slack == 5;
		checked++;
	}
	CHECK(checked >= 6 && stretched >= 1);
	CHECK_EQ_U64(p->slack, 5);
	CHECK(ctr(&h, SS_CTR_cc_host_slack_runs) >= checked - 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_host_slack_ends), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_host_waits) + ctr(&h, SS_CTR_cc_paced_waits), 0);

	/* Bulk: the first flow held back brings the run in. */
	uint64_t start = p->host_start_us, end = start + host_iv(&h.st, p, &pol.params, sc0->tcp.f.mss);
	CHECK(p->timer.deadline_us > end);
	unsigned steps = 0;
	while (!ctr(&h, SS_CTR_cc_host_slack_ends) && steps++ < 20000) {
		keep_full(&h, fl, 3, UINT64_MAX);
		tick(&h, fl, 3);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_host_slack_ends), 1);
	CHECK_EQ_U64(p->slack, 0);
	if (end < h.now_us)
		end = h.now_us;
	if (p->host_start_us == start) /* not run yet: due at its usual end */
		CHECK_EQ_U64(p->timer.deadline_us, end);
	else /* it ran in this step */
		CHECK(p->host_start_us <= end + 50);
	while (p->host_start_us == start && h.now_us < end + 50) {
		keep_full(&h, fl, 3, UINT64_MAX);
		tick(&h, fl, 3);
	}
	/* (at the next round after its end: the wheel fires what is due) */
	CHECK(p->host_start_us != start && p->host_start_us <= end + 50);
	runs = ctr(&h, SS_CTR_cc_host_intervals);
	checked = 0;
	for (unsigned step = 0; step < 4000; step++) { /* 200 ms */
		keep_full(&h, fl, 3, UINT64_MAX);
		tick(&h, fl, 3);
		if (ctr(&h, SS_CTR_cc_host_intervals) == runs)
			continue;
		runs = ctr(&h, SS_CTR_cc_host_intervals);
		CHECK_EQ_U64(p->slack, 0);
		CHECK_EQ_U64(p->timer.deadline_us - p->host_start_us,
			     host_iv(&h.st, p, &pol.params, sc0->tcp.f.mss));
		checked++;
	}
	CHECK(checked >= 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_cc_host_slack_ends), 1);
	for (unsigned i = 0; i < 3; i++)
		CHECK(!fl[i].bad && fl[i].got > 0 && fl[i].got <= fl[i].queued);
	sh_fini(&h);
}

/*
 * The loop's cost bound (stack_cc.c cc_iv_at()): every interval is at
 * least cc_flow_us per flow under control, counting the one being timed.
 * Three bulk flows at 5 ms a flow over a path whose 2 RTTs are well
 * under a millisecond: with cc-share host each of the host's runs comes
 * 20 ms after the last (3 members, and the run); with cc-share flow each
 * flow's interval is 15 ms (2 others armed, and itself).
 * cc_interval_floored counts them; the data stays exact.
 */
static void test_loop_cost_floor(enum ss_cc_share share)
{
	struct sh h;
	struct ss_cc_policy pol;
	struct flow fl[3];
	unsigned checked = 0;

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol);
	pol.share = share;
	ss_stack_set_cc(&h.st, &pol);
	CHECK_EQ_U64(h.st.cc_flow_us, 2);
	h.st.cc_flow_us = 5000;
	open_flows(&h, fl, 3);
	struct ss_sconn *sc[3] = { sconn(&h, &fl[0]), sconn(&h, &fl[1]), sconn(&h, &fl[2]) };
	struct ss_cc_path *p = &h.st.cc_paths[(SH_PEER_IP * 2654435761u) >> 24];
	/* Until all three have sent (flow) or joined (host), fewer count. */
	run(&h, fl, 3, 50000, UINT64_MAX);
	uint64_t runs = ctr(&h, SS_CTR_cc_host_intervals);

	for (unsigned step = 0; step < 6000; step++) { /* 300 ms */
		keep_full(&h, fl, 3, UINT64_MAX);
		tick(&h, fl, 3);
		if (share == SS_CC_SHARE_HOST) {
			if (ctr(&h, SS_CTR_cc_host_intervals) == runs)
				continue;
			runs = ctr(&h, SS_CTR_cc_host_intervals);
			CHECK_EQ_U64(h.st.cc_members, 3);
			CHECK_EQ_U64(p->n_members, 3);
			CHECK_EQ_U64(h.st.cc_wheel.n_armed, 0);
			if (!ss_timer_armed(&p->timer) || p->slack) /* bulk: bound, no slack */
				continue;
			CHECK_EQ_U64(p->timer.deadline_us - p->host_start_us, 20000);
			checked++;
			continue;
		}
		CHECK_EQ_U64(h.st.cc_members, 0);
		for (unsigned i = 0; i < 3; i++) {
			if (!ss_timer_armed(&sc[i]->cc.timer) || sc[i]->cc.start_us != h.now_us)
				continue;
			CHECK_EQ_U64(h.st.cc_wheel.n_armed, 3);
			CHECK_EQ_U64(sc[i]->cc.timer.deadline_us - sc[i]->cc.start_us, 15000);
			checked++;
		}
	}
	/* 300 ms / 20 ms: 15 runs; 300 ms / 15 ms: 20 intervals a flow. */
	CHECK(checked >= (share == SS_CC_SHARE_HOST ? 14u : 57u));
	CHECK(ctr(&h, SS_CTR_cc_interval_floored) >= checked);
	CHECK(p->rtt_us > 0 && 2u * p->rtt_us < 5000); /* 2 RTTs alone: far shorter */
	/* The writes stop: once all is read and acknowledged the flows go
	 * idle and leave the loop, and the count falls back to nothing. */
	for (unsigned step = 0; step < 4000; step++) /* 200 ms */
		tick(&h, fl, 3);
	CHECK_EQ_U64(h.st.cc_members, 0);
	CHECK_EQ_U64(p->n_members, 0);
	CHECK_EQ_U64(h.st.cc_wheel.n_armed, 0);
	for (unsigned i = 0; i < 3; i++)
		CHECK(!fl[i].bad && fl[i].got == fl[i].queued);
	sh_fini(&h);
}

/*
 * The send step (stack_send.h) takes the usual cases inline: the budget
 * of a paced flow whose control is settled, and the charge when nothing
 * is to be scheduled and the intervals run.  On copies of a live paced
 * connection, in random states, each inline part must leave the
 * connection and the pacer flow byte for byte as its out-of-line
 * reference in stack_cc.c does (stack_cc_prepare(), stack_cc_sent()); the
 * states avoid those where the reference queues the copy on the stack's
 * wheels (the inline part calls it there).  Per flow the flow is in no
 * group; with cc-share host it is in its host's aggregate, whose bucket
 * (random credit, a flow waiting or none) both must leave the same too.
 */
static void test_send_step_inline(enum ss_cc_share share)
{
	struct sh h;
	struct flow fl[1];
	uint64_t seed = 7;
	unsigned inline_budget = 0, inline_charge = 0, settled = 0;

	struct ss_cc_policy pol;

	CHECK(sh_init(&h, ATTACH) == 0);
	policy_dctcp_rate(&pol); /* paced */
	pol.share = share;
	ss_stack_set_cc(&h.st, &pol);
	open_flows(&h, fl, 1);
	run(&h, fl, 1, 20000, UINT64_MAX);
	struct ss_sconn *sc = sconn(&h, &fl[0]);
	struct ss_pacer_group *g = sc->cc.pf.group;
	CHECK(sc->cc.ops && sc->cc.paced && sc->cc.pf.rate);
	if (share == SS_CC_SHARE_FLOW) {
		CHECK(!g && ss_timer_armed(&sc->cc.timer));
	} else {
		/* A member: its host's run samples it, no timer of its own. */
		CHECK(g && g == sc->cc.host_grp && sc->cc.shared && !ss_timer_armed(&sc->cc.timer));
	}
	if (!sc->cc.pf.rate || (!g && !ss_timer_armed(&sc->cc.timer)) || (g && !sc->cc.shared))
		return;
	static struct ss_sconn a, b;
	struct ss_pacer_group g0, ga;
	if (g)
		g0 = *g;
	for (int i = 0; i < 100000; i++) {
		if (g) {
			*g = g0;
			g->tb.credit = (int64_t)(check_rand(&seed) % 20000) * 1000000000 -
				       (int64_t)10000 * 1000000000;
			g->tb.last_ns = h.st.now_us * 1000 - check_rand(&seed) % 100000;
			g->n_wait = check_rand(&seed) % 4 == 0; /* read only, never walked here */
			g0 = *g;
		}
		a = *sc;
		a.tcp.tx_budget = check_rand(&seed) % 3 ? 0 : 1 + check_rand(&seed) % 9000;
		a.cc.pf.next_ns = h.st.now_us * 1000 + check_rand(&seed) % 4000 - 2000;
		a.cc.pf.rem = check_rand(&seed) % a.cc.pf.rate;
		a.cc.pf.ent.where = check_rand(&seed) % 4 ? SS_PACER_IDLE : SS_PACER_WHEEL;
		a.tcp.budget_hit = a.cc.pf.ent.where != SS_PACER_IDLE && check_rand(&seed) % 2;
		a.cc.charged = a.tcp.cc.sent_bytes - (check_rand(&seed) % 2 ? 0 : check_rand(&seed) % 70000);
		if (check_rand(&seed) % 2) /* data waiting (only the send step reads tx_tail) */
			a.tcp.f.tx_tail = a.tcp.f.snd_nxt - a.tcp.iss - 1 + 1 + check_rand(&seed) % 5000;
		b = a;
		uint32_t budget0 = a.tcp.tx_budget;
		uint64_t next0 = a.cc.pf.next_ns;
		bool ready = stack_send_settled(&h.st, &a);
		settled += ready;
		stack_send_budget(&h.st, &a, ready);
		if (g) {
			ga = *g;
			*g = g0;
		}
		stack_cc_prepare(&h.st, &b);
		CHECK(memcmp(&a, &b, sizeof(a)) == 0);
		if (g) {
			CHECK(memcmp(&ga, g, sizeof(ga)) == 0);
			g0 = *g;
		}
		inline_budget += budget0 == 0 && a.tcp.tx_budget != 0;
		stack_send_charge(&h.st, &a);
		if (g) {
			ga = *g;
			*g = g0;
		}
		stack_cc_sent(&h.st, &b);
		CHECK(memcmp(&a, &b, sizeof(a)) == 0);
		if (g)
			CHECK(memcmp(&ga, g, sizeof(ga)) == 0);
		inline_charge += a.cc.pf.next_ns != next0;
	}
	if (g)
		*g = g0;
	fprintf(stderr, "send step (%s): %u budgets, %u charges inline\n",
		share == SS_CC_SHARE_HOST ? "host" : "flow", inline_budget, inline_charge);
	CHECK(inline_budget > 0 && inline_charge > 0 && settled == 100000);
	sh_fini(&h);
}

int main(void)
{
	sh_self_comm(self_comm);
	test_loop_follows_active_flows();
	test_app_cap(&ss_cc_dctcp_rate_ops, SS_CC_SHARE_FLOW);
	test_app_cap(&ss_cc_dctcp_rate_ops, SS_CC_SHARE_HOST);
	test_app_cap(&ss_cc_cubic_ops, SS_CC_SHARE_FLOW);
	test_app_cap(&ss_cc_cubic_ops, SS_CC_SHARE_HOST);
	test_app_algorithm();
	test_ecn_feedback();
	test_auto_pick(true);
	test_auto_pick(false);
	test_quiet_flow_stretched();
	test_interval_per_path();
	test_interval_holds_segments();
	test_host_share();
	test_host_slack();
	test_loop_cost_floor(SS_CC_SHARE_HOST);
	test_loop_cost_floor(SS_CC_SHARE_FLOW);
	test_send_step_inline(SS_CC_SHARE_FLOW);
	test_send_step_inline(SS_CC_SHARE_HOST);
	return check_done("test_stack_cc");
}
