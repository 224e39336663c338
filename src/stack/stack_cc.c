/* stack_cc.c - congestion control on a fast-path stack: the per-interval control loop and its enforcement. */
#include "stack/stack_cc.h"
#include "stack/stack_conn.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "wire/seq.h"

/*
 * Policy and enforcement, as TAS §3.2 splits them:
 *
 * - Policy (once per interval, out of line): every active flow has a timer on
 *   s->cc_wheel, due once per control interval (2 smoothed RTTs by
 *   default).  When it fires, the engine's free-running counters (bytes
 *   acked, ECN-echoed bytes, bytes sent, fast retransmits, timeouts) are
 *   turned into a sample, the flow's algorithm (src/cc/) computes a rate
 *   or a window, and the result is written back.  A flow that neither
 *   sent nor was acked during an interval and has nothing in flight
 *   leaves the wheel, so the work per interval follows the active flows,
 *   not all flows; its next send puts it back.
 *
 * - Enforcement (every send, in the send step of stack_send.h, whose
 *   collaborators stack_cc_prepare() and stack_cc_sent() are here): a
 *   rate-based flow, or any flow of an application with a bandwidth cap,
 *   is paced.  Before ss_tcp_output()
 *   it gets a byte budget only when the pacer lets it send (its own next
 *   departure time has come and its application's token bucket is not in
 *   debt); every byte the engine then sends — new data, fast and timeout
 *   retransmissions, probes — is charged afterwards from the engine's
 *   sent_bytes counter, so nothing escapes the budget.  A flow that ran
 *   out of budget with data to send waits in the pacer (a timing wheel:
 *   cost per packet independent of the number of flows) and comes back
 *   through stack_cc_run().  Window-based flows send within the window the
 *   loop set (the engine keeps loss recovery but leaves cwnd alone).
 *
 * The loop runs on the fast-path thread that owns the flows, out of line
 * from the per-packet path, like connection set-up: on a machine whose
 * cores are shared with the applications, a separate thread woken every
 * interval would cost a cross-CPU wake-up per interval.  It touches only
 * cold per-connection state.
 */

#define CC_WHEEL_SLOTS 4096
#define CC_HOST_WHEEL_SLOTS 1024
#define CC_WHEEL_TICK_US 16
#define CC_PACER_MAX_LAG_NS 200000u  /* wake-ups in a VM are this late */
#define CC_RATE_CWND (1u << 30)      /* rate mode: the largest window */
#define CC_RATE_RTTS 2u              /* rate mode: window = rate x this many RTTs */
#define CC_CAP_BURST_MIN 16384u      /* an application cap's bucket depth ... */
#define CC_CAP_BURST_MAX (4u << 20)  /* ... is 20 ms of the cap, within these */
#define CC_FLOW_US 2u                /* the loop's cost bound (cc_iv_at()) */

static inline uint64_t cc_now_ns(const struct ss_stack *s)
{
	return s->now_us * 1000;
}

static inline struct ss_sconn *sconn_of_pf(struct ss_pacer_flow *pf)
{
	return (struct ss_sconn *)(void *)((uint8_t *)pf - offsetof(struct ss_sconn, cc.pf));
}

/* The connection whose host-member link is @l. */
static inline struct ss_sconn *host_member(struct ss_list *l)
{
	return SS_LIST_ENTRY(l, struct ss_sconn, cc.host_link);
}

static inline struct ss_sconn *sconn_of_cc_timer(struct ss_timer *t)
{
	return (struct ss_sconn *)(void *)((uint8_t *)t - offsetof(struct ss_sconn, cc.timer));
}

static inline struct ss_cc_path *path_of_timer(struct ss_timer *t)
{
	return (struct ss_cc_path *)(void *)((uint8_t *)t - offsetof(struct ss_cc_path, timer));
}

int stack_cc_init(struct ss_stack *s)
{
	struct ss_pacer_params pp;
	int rc = ss_timer_wheel_init(&s->cc_wheel, CC_WHEEL_SLOTS, CC_WHEEL_TICK_US, 0);

	if (rc != 0)
		return rc;
	rc = ss_timer_wheel_init(&s->cc_host_wheel, CC_HOST_WHEEL_SLOTS, CC_WHEEL_TICK_US, 0);
	if (rc != 0) {
		ss_timer_wheel_fini(&s->cc_wheel);
		return rc;
	}
	for (unsigned i = 0; i < sizeof(s->cc_paths) / sizeof(s->cc_paths[0]); i++) {
		ss_timer_init(&s->cc_paths[i].timer);
		ss_list_init(&s->cc_paths[i].members);
	}
	ss_pacer_params_default(&pp);
	pp.max_lag_ns = CC_PACER_MAX_LAG_NS;
	s->cc_members = 0;
	s->cc_flow_us = CC_FLOW_US;
	return ss_pacer_init(&s->pacer, &pp, 0);
}

void stack_cc_fini(struct ss_stack *s)
{
	ss_timer_wheel_fini(&s->cc_wheel);
	ss_timer_wheel_fini(&s->cc_host_wheel);
	ss_pacer_fini(&s->pacer);
	free(s->caps);
	s->caps = NULL;
}

/* A cap's bucket: 20 ms of the cap deep, within [CC_CAP_BURST_MIN, _MAX]. */
static uint64_t cc_cap_burst(uint64_t cap_bps)
{
	uint64_t burst = cap_bps / 50;

	return burst < CC_CAP_BURST_MIN ? CC_CAP_BURST_MIN
	       : burst > CC_CAP_BURST_MAX ? CC_CAP_BURST_MAX : burst;
}

int ss_stack_set_cc(struct ss_stack *s, const struct ss_cc_policy *p)
{
	free(s->caps);
	s->caps = NULL;
	s->ccp = p && p->ops ? p : NULL;
	if (!s->ccp || !p->n_rules)
		return 0;
	/* One bucket per rule, shared by every process of that name: a
	 * program's forked workers or second instance share its cap. */
	s->caps = calloc(p->n_rules, sizeof(*s->caps));
	if (!s->caps) {
		s->ccp = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].cap_bps)
			ss_pacer_group_init(&s->caps[i], p->rules[i].cap_bps,
					    cc_cap_burst(p->rules[i].cap_bps), cc_now_ns(s));
	return 0;
}

/* The application's algorithm and cap, looked up once by process name. */
static void cc_app_policy(struct ss_stack *s, struct ss_app *a)
{
	const struct ss_cc_app_rule *r;

	if (a->cc_ready)
		return;
	a->cc_ready = true;
	a->cc_ops = NULL;
	a->cap = NULL;
	r = ss_cc_policy_rule(s->ccp, a->comm);
	if (!r)
		return;
	a->cc_ops = r->ops;
	if (r->cap_bps)
		a->cap = &s->caps[r - s->ccp->rules];
	SS_INFO("app %u (%s): congestion control %s, cap %.1f Mbit/s", a->id, a->comm,
		a->cc_ops ? a->cc_ops->name : ss_cc_policy_name(s->ccp),
		(double)r->cap_bps * 8 / 1e6);
}

static void cc_update_paced(struct ss_sconn *sc)
{
	sc->cc.paced = sc->cc.pf.rate || sc->cc.pf.group;
	if (!sc->cc.paced)
		sc->tcp.tx_budget = SS_TCP_BUDGET_UNLIMITED;
	else if (sc->tcp.tx_budget == SS_TCP_BUDGET_UNLIMITED)
		sc->tcp.tx_budget = 0; /* from now on only the pacer gives budget */
}

/*
 * The window of a rate-paced flow: CC_RATE_RTTS smoothed RTTs of its rate,
 * at least 2 MSS.  Pacing sets the pace; the window bounds the flight, so
 * the flow is also ACK-clocked: when a queue builds, the RTT grows and the
 * flow slows at once instead of at the end of the interval (a rate alone
 * keeps sending into a full queue until the loop reacts).  Before the first
 * RTT sample only the rate applies.
 */
static uint32_t cc_rate_cwnd(const struct ss_sconn *sc, uint64_t rate)
{
	uint64_t srtt = sc->tcp.f.srtt_us, w, lo = 2u * sc->tcp.f.mss;

	if (!srtt)
		return CC_RATE_CWND;
	w = rate * srtt * CC_RATE_RTTS / 1000000u;
	return (uint32_t)(w < lo ? lo : w > CC_RATE_CWND ? CC_RATE_CWND : w);
}

/* Writes the algorithm's decision into the engine and the pacer; the
 * counters are the caller's (cc_apply(); a host's run adds its members'
 * at once). */
static inline void cc_set(struct ss_sconn *sc, const struct ss_cc_out *out)
{
	bool dctcp = sc->cc.ops->ecn_per_ack;

	if (out->flags & SS_CC_OUT_RATE) {
		uint64_t rate = out->rate_bps;

		ss_pacer_flow_set_rate(&sc->cc.pf, rate ? rate : 1);
		ss_tcp_cc_set(&sc->tcp, SS_TCP_CC_RATE, cc_rate_cwnd(sc, rate), dctcp);
	} else {
		ss_pacer_flow_set_rate(&sc->cc.pf, 0);
		ss_tcp_cc_set(&sc->tcp, SS_TCP_CC_WINDOW, out->cwnd, dctcp);
	}
	cc_update_paced(sc);
}

static void cc_apply(struct ss_stack *s, struct ss_sconn *sc, const struct ss_cc_out *out)
{
	cc_set(sc, out);
	if (out->flags & SS_CC_OUT_RATE)
		ss_ctr_inc(s->ctr, SS_CTR_cc_rate_updates);
	else
		ss_ctr_inc(s->ctr, SS_CTR_cc_window_updates);
	if (out->flags & SS_CC_OUT_REDUCED)
		ss_ctr_inc(s->ctr, SS_CTR_cc_reductions);
}

/*
 * TCP_INFO's figures into the owner's shared record for the slot (a
 * seqlock, abi.h): at the handshake, at the interval in which a flow goes
 * idle, and at most every CC_PUBLISH_US in between (cc_sample_done()), so
 * the per-packet path never pays for it, and a host's run does not for
 * each of its members.
 */
#define CC_PUBLISH_US 10000u

/* Bytes of [from, to) that range [l, h) covers. */
static uint32_t cc_overlap(uint32_t l, uint32_t h, uint32_t from, uint32_t to)
{
	if (ss_seq_lt(l, from))
		l = from;
	if (ss_seq_gt(h, to))
		h = to;
	return ss_seq_lt(l, h) ? h - l : 0;
}

/* Loss figures for TCP_INFO, in bytes (@c in recovery or after a
 * timeout; else none): taken for lost (unSACKed below what the
 * scoreboard or RACK gave up on; after a timeout, all in flight), and
 * resent still out (the resends in flight, tcp.h struct ss_tcp_rxt). */
static void cc_loss_figures(const struct ss_tcp_conn *c, uint32_t *lost, uint32_t *retrans)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t una = f->snd_una, to = una, n;

	*lost = *retrans = 0;
	if (!(f->flags & SS_TCPF_IN_RECOVERY) && !f->backoff)
		return;
	if (f->backoff && !(f->flags & SS_TCPF_IN_RECOVERY)) {
		to = f->snd_max;
	} else {
		if (ss_seq_gt(c->lost_to, to))
			to = c->lost_to;
		if (ss_seq_gt(c->rack_lost_to, to))
			to = c->rack_lost_to;
		if (ss_seq_gt(to, f->snd_max))
			to = f->snd_max;
	}
	n = to - una;
	for (unsigned i = 0; i < c->sackb_n; i++)
		n -= cc_overlap(c->sackb[i].left, c->sackb[i].right, una, to);
	*lost = n;
	for (unsigned i = 0; i < c->rxt_n; i++)
		*retrans += cc_overlap(c->rxt[i].start, c->rxt[i].end, una, f->snd_max);
}

__attribute__((noinline)) void stack_cc_publish(struct ss_stack *s, struct ss_sconn *sc)
{
	const struct ss_tcp_conn *c = &sc->tcp;
	const struct ss_tcp_flow *f = &c->f;
	struct ss_app *a = sc->app;
	struct ss_shm_conn_info *in;
	uint64_t rate = sc->cc.pf.rate;
	uint32_t lost, retrans;
	bool mine;

	sc->cc.published_us = s->now_us;
	sc->info_state = f->state;
	if (!a || sc->slot >= a->max_conns)
		return;
	in = (struct ss_shm_conn_info *)(void *)(a->region + a->info_off) + sc->slot;
	/* The record's earlier times are this handle's (else it starts over). */
	mine = in->gen == sc->gen && in->seq != 0;
	uint32_t seq = __atomic_load_n(&in->seq, __ATOMIC_RELAXED);
	seq |= 1; /* odd: writing (an app that scribbled on seq only confuses itself) */
	__atomic_store_n(&in->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (!mine)
		in->last_data_sent_us = in->last_data_recv_us = in->last_ack_recv_us = 0;
	if (f->rx_tail != sc->rx_seen)
		in->last_data_recv_us = s->now_us;
	if (f->snd_una != sc->una_seen && mine)
		in->last_ack_recv_us = s->now_us;
	if (f->snd_max != sc->snd_seen && mine)
		in->last_data_sent_us = s->now_us;
	sc->bytes_received += f->rx_tail - sc->rx_seen;
	sc->rx_seen = f->rx_tail;
	sc->una_seen = f->snd_una;
	sc->snd_seen = f->snd_max;
	in->gen = sc->gen;
	in->state = f->state;
	in->options = (uint8_t)(((f->flags & SS_TCPF_TS) ? SS_INFO_OPT_TS : 0) |
				((f->flags & SS_TCPF_SACK_PERM) ? SS_INFO_OPT_SACK : 0) |
				(f->snd_wscale || f->rcv_wscale ? SS_INFO_OPT_WSCALE : 0) |
				(c->ecn_ok ? SS_INFO_OPT_ECN : 0));
	in->snd_wscale = f->snd_wscale;
	in->rcv_wscale = f->rcv_wscale;
	in->retransmits = c->retries;
	in->backoff = f->backoff;
	in->ca_state = (f->flags & SS_TCPF_IN_RECOVERY) ? 3 : f->backoff ? 4 : 0;
	in->rto_us = f->rto_us;
	in->srtt_us = f->srtt_us;
	in->rttvar_us = f->rttvar_us;
	in->snd_mss = f->mss;
	in->rcv_mss = ss_tcp_mss_ours(c);
	in->snd_cwnd = rate ? (uint32_t)(rate * (f->srtt_us ? f->srtt_us : 1) / 1000000u) : f->cwnd;
	in->snd_ssthresh = rate ? UINT32_MAX : f->ssthresh;
	in->unacked = f->snd_max - f->snd_una;
	in->snd_wnd = f->snd_wnd;
	in->rcv_wnd = f->rcv_adv - f->rcv_nxt;
	in->total_retrans = sc->total_retrans;
	in->pacing_rate = rate;
	in->bytes_acked = sc->bytes_acked;
	in->bytes_received = sc->bytes_received;
	cc_loss_figures(c, &lost, &retrans);
	in->lost = lost;
	in->retrans = retrans;
	in->sacked = c->sacked;
	in->pmtu = (uint32_t)c->params->mss + 40u; /* IPv4 and TCP headers, no options */
	/* Copied once: the name only changes with the algorithm (the owner's
	 * record is new when the connection moves, cc_name then empty).
	 * None before the handshake is done. */
	if (!sc->cc.ops)
		in->cc_name[0] = '\0';
	else if (in->cc_name[0] != sc->cc.ops->name[0] ||
		 strncmp(in->cc_name, sc->cc.ops->name, sizeof(in->cc_name) - 1) != 0)
		snprintf(in->cc_name, sizeof(in->cc_name), "%s", sc->cc.ops->name);
	__atomic_store_n(&in->seq, seq + 1, __ATOMIC_RELEASE);
}

/* The handshake is done: the connection gets its algorithm. */
static void cc_start(struct ss_stack *s, struct ss_sconn *sc)
{
	const struct ss_cc_ops *ops = s->ccp->ops;
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_cc_out out;
	bool pick = s->ccp->pick_auto;

	if (sc->app) {
		cc_app_policy(s, sc->app);
		if (sc->app->cc_ops) {
			ops = sc->app->cc_ops;
			pick = false;
		}
	}
	/* "auto" (cc_policy.h): cubic, and dctcp-win later where ECN was
	 * negotiated and the path turns out to mark. */
	sc->cc.auto_pick = pick;
	sc->cc.auto_wl = false;
	sc->cc.auto_ecn = pick && c->ecn_ok;
	if (pick)
		ss_ctr_inc(s->ctr, SS_CTR_cc_auto_cubic);
	ss_pacer_flow_init(&sc->cc.pf, 0, cc_now_ns(s));
	ss_timer_init(&sc->cc.timer);
	sc->cc.ops = ops;
	sc->cc.shared = false;
	sc->cc.host_link.next = sc->cc.host_link.prev = NULL;
	sc->cc.host_grp = NULL;
	sc->cc.prev = c->cc;
	sc->cc.charged = c->cc.sent_bytes;
	sc->cc.start_us = s->now_us;
	sc->rx_seen = c->f.rx_tail;
	ops->init(&sc->cc.st, &s->ccp->params, c->f.mss, &out);
	cc_apply(s, sc, &out);
	stack_cc_publish(s, sc);
}

/* The pacer group @sc's sends count against: its application's cap. */
static void cc_regroup(struct ss_stack *s, struct ss_sconn *sc, struct ss_pacer_group *g)
{
	bool queued = sc->cc.pf.ent.where != SS_PACER_IDLE;

	ss_pacer_cancel(&s->pacer, &sc->cc.pf);
	ss_pacer_flow_set_group(&sc->cc.pf, g);
	cc_update_paced(sc);
	if (queued && sc->cc.paced)
		ss_pacer_schedule(&s->pacer, &sc->cc.pf);
	else if (queued)
		stack_conn_dirty(s, sc); /* not paced any more: send at once */
}

void stack_cc_prepare(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;

	if (!sc->cc.ops) {
		uint8_t st = c->f.state;

		if (!s->ccp || st == SS_TCPS_CLOSED || st == SS_TCPS_SYN_SENT ||
		    st == SS_TCPS_SYN_RCVD)
			return;
		cc_start(s, sc);
	}
	/* The owner may change (fork hand-over): its cap applies, else its
	 * host's aggregate pacer while it is a shared member.  An orphan (its
	 * app exited, data still going out) keeps its last owner's. */
	if (sc->app && stack_cc_group_want(sc) != sc->cc.pf.group)
		cc_regroup(s, sc, stack_cc_group_want(sc));
	/* Budget only for data waiting to go (a FIN alone needs none). */
	if (sc->cc.paced && c->tx_budget == 0 && ss_tcp_tx_unsent(c) &&
	    ss_pacer_may_send(&sc->cc.pf, cc_now_ns(s)))
		c->tx_budget = stack_cc_quantum(sc);
}

/*
 * The control interval of a flow is one per path (remote host): 2 RTTs of
 * the path, and at least the time the path's rate takes for CC_IV_SEGS
 * segments (at most 1 s).  The path's RTT and rate are the means (weight
 * 1/8) of the srtt and paced rate of its flows as their intervals end, in
 * a direct-mapped table (hosts that collide share an entry until the
 * other's next interval takes it).
 *
 * One interval for every flow on the path: the step and the cut come once
 * per interval, so a flow with shorter intervals gains faster and is cut
 * more often.  A flow's own srtt also holds its receiver's delays (an ACK
 * waits for the reading program), which on a busy machine differ 2-4x
 * between flows through one queue; and a floor from the flow's own rate
 * would give the faster flow more steps per second (a multiplicative
 * increase, which does not converge to fairness).  The floor itself: at a
 * 60-100 us RTT and ~45 Mbit/s, 2 RTTs held one packet pair or none, and
 * the step came ~6 times per ms with no feedback between.
 */
#define CC_IV_SEGS 4u
#define CC_IV_MAX_US 1000000u
/* A window flow's interval after one its window held nothing back: 32
 * times longer, at most 500 ms (cc_interval()). */
#define CC_QUIET_STRETCH 32u
#define CC_QUIET_MAX_US 500000u

static struct ss_cc_path *cc_path(struct ss_stack *s, uint32_t ip)
{
	return &s->cc_paths[(ip * 2654435761u) >> 24];
}

/*
 * With cc-share host an entry belongs to one address while its flows are
 * active: another address that hashes to it (a collision) gets no entry,
 * and its flows run their own controllers (cc_share_collisions), until
 * the entry has seen no interval end for CC_HOST_STALE_US.  Then the
 * entry changes hands, and a host of its own that comes back after as
 * long starts over (RFC 9040 §5 ages what it caches).  With cc-share flow
 * the entry goes to whichever host's interval ended last, as before.
 */
#define CC_HOST_STALE_US 1000000u
#define CC_HOST_PACE_OFF (UINT64_C(1) << 40) /* an unlimited aggregate, B/s */
#define CC_HOST_BURST_US 500u                /* the aggregate's bucket: 500 us of R ... */
#define CC_HOST_BURST_MIN 6000u              /* ... at least 4 segments */

/* Whether @p is another address's, still in use (cc-share host). */
static bool cc_path_taken(const struct ss_stack *s, const struct ss_cc_path *p, uint32_t ip)
{
	return s->ccp->share == SS_CC_SHARE_HOST && p->ip != ip && p->last_us &&
	       s->now_us - p->last_us < CC_HOST_STALE_US;
}

static uint32_t cc_interval_len(struct ss_stack *s, const struct ss_sconn *sc, bool update);
static void cc_host_bound(struct ss_stack *s, struct ss_sconn *sc);

/* @sc, a member of @p's host, leaves it: from now on its own controller
 * (or, at its next interval end, its host's again), and out of the host's
 * aggregate pacer.  @own: it is still active, so its own interval timer
 * starts (a member has none: its host's run samples it); its interval
 * counts from its last sample, at its host's last run. */
static __attribute__((noinline)) void cc_host_leave(struct ss_stack *s, struct ss_cc_path *p,
						  struct ss_sconn *sc, bool own)
{
	if (sc->cc.host_grp && sc->cc.pf.group == sc->cc.host_grp)
		cc_regroup(s, sc, NULL);
	sc->cc.host_grp = NULL;
	ss_list_del(&sc->cc.host_link);
	sc->cc.shared = false;
	p->n_members--;
	s->cc_members--;
	if (own && !ss_timer_armed(&sc->cc.timer))
		ss_timer_arm(&s->cc_wheel, &sc->cc.timer, s->now_us + cc_interval_len(s, sc, false));
}

/* @p becomes @ip's, with no history. */
static void cc_path_take(struct ss_stack *s, struct ss_cc_path *p, uint32_t ip)
{
	while (!ss_list_empty(&p->members)) /* an old host's flows, idle for CC_HOST_STALE_US */
		cc_host_leave(s, p, host_member(p->members.next), true);
	ss_timer_cancel(&s->cc_host_wheel, &p->timer);
	p->ip = ip;
	p->rtt_us = 0;
	p->rate = 0;
	p->last_us = s->now_us;
	p->host_start_us = s->now_us;
	p->slack = 0;
	ss_cc_host_restart(&p->host, &s->ccp->params);
	/* The aggregate pacer starts unlimited: until the host's first run
	 * its flows keep their own rates. */
	if (p->pace_on)
		ss_pacer_group_cancel(&s->pacer, &p->pace);
	p->pace_on = s->ccp->share == SS_CC_SHARE_HOST &&
		     ss_pacer_group_init(&p->pace, CC_HOST_PACE_OFF, CC_HOST_BURST_MIN, cc_now_ns(s)) == 0;
}

/*
 * The host's members are paced as one aggregate at R (cc-share host): a
 * token bucket at R, CC_HOST_BURST_US of R deep (at least
 * CC_HOST_BURST_MIN), whose FIFO releases the members round-robin, one per
 * pacer tick, each for one quantum, as an application cap's does.  Each
 * flow is still paced at its share, so the shares and the water-filling
 * hold; the bucket spaces the departures of all of them by R.  Flows
 * paced at one equal rate keep the phase they started in, and 32 flows
 * whose 2-segment quanta left within a few ms of each other every ~23 ms
 * put 92 KB into the bottleneck at once, which marked at every cycle and
 * held R at its floor (docs/congestion.md).  Cost per packet: O(1), as for
 * any group, whatever the number of members.
 */
static void cc_host_pace_set(struct ss_stack *s, struct ss_cc_path *p, uint64_t rate)
{
	uint64_t burst = rate * CC_HOST_BURST_US / 1000000u;

	if (!p->pace_on || rate == 0)
		return;
	if (burst < CC_HOST_BURST_MIN)
		burst = CC_HOST_BURST_MIN;
	ss_pacer_bucket_set(&p->pace.tb, rate, burst, cc_now_ns(s));
}

/*
 * The loop's cost bound.  An interval's end visits its flow (a host's run,
 * every member, twice), a dozen cold cache lines each: ~200 ns a member
 * here.  At 16384 RPC connections to one host with a short path RTT, a
 * host bound by its rate ran every 3 ms and each run took as long: the
 * service did nothing else, the requests waited, the flows stayed bound,
 * and the rate fell from 600k to 65k requests a second for the rest of
 * the run.  So every interval is at least CC_FLOW_US per flow under
 * control on the stack (those with an interval of their own, and the
 * hosts' members): the loop then visits at most one flow per CC_FLOW_US,
 * ~10 % of the fast path's time at worst, whatever the RTT.  With fewer
 * than a few hundred flows the floor stays under 2 RTTs (66 us at 32
 * flows) and changes nothing; at 1024 connections (2 ms against 2 RTTs of
 * ~1.3 ms) the both-ends throughput did not move; with many more, each
 * flow's share is small, and its rate moves once per longer interval (as
 * TCP's window moves once per RTT).
 *
 * An interval of CC_IV_SEGS segments at @rate (0: no floor), at least 2
 * RTTs, and at least the loop's cost bound (cc_interval_floored counts
 * each length the bound raised).
 */
static uint32_t cc_iv_at(const struct ss_stack *s, uint32_t rtt, uint64_t rate, uint32_t mss)
{
	uint32_t iv = ss_cc_interval_us(&s->ccp->params, rtt);
	uint64_t seg, floor;

	if (rate) {
		seg = (uint64_t)CC_IV_SEGS * mss * 1000000u / rate;
		if (seg > iv)
			iv = seg > CC_IV_MAX_US ? CC_IV_MAX_US : (uint32_t)seg;
	}
	/* + 1: the flow being timed, whose timer is not armed while its
	 * interval is computed (for a host's run, the host's own visit). */
	floor = ((uint64_t)s->cc_wheel.n_armed + s->cc_members + 1) * s->cc_flow_us;
	if (floor > iv) {
		ss_ctr_inc(s->ctr, SS_CTR_cc_interval_floored);
		iv = floor > CC_IV_MAX_US ? CC_IV_MAX_US : (uint32_t)floor;
	}
	return iv;
}

/* @sc's next interval; @update: its interval ended, fold it into the path. */
static uint32_t cc_interval_len(struct ss_stack *s, const struct ss_sconn *sc, bool update)
{
	uint32_t srtt = sc->tcp.f.srtt_us, ip = sc->tcp.remote_ip, rtt;
	uint64_t rate = sc->cc.pf.rate;
	struct ss_cc_path *p = cc_path(s, ip);

	if (update && srtt && cc_path_taken(s, p, ip)) {
		/* a collision: the flow's own srtt and rate below */
	} else if (update && srtt && (p->ip != ip || !p->rtt_us)) {
		if (p->ip != ip)
			cc_path_take(s, p, ip);
		p->rtt_us = srtt;
		p->rate = rate;
	} else if (update && srtt) {
		p->rtt_us = (uint32_t)(((uint64_t)p->rtt_us * 7 + srtt) / 8);
		p->rate = rate ? (p->rate ? (p->rate * 7 + rate) / 8 : rate) : p->rate;
	}
	if (update && p->ip == ip)
		p->last_us = s->now_us;
	if (p->ip == ip && p->rtt_us) {
		rtt = p->rtt_us;
		rate = p->rate ? p->rate : rate;
		/* A shared host's controller sees all its flows' segments: 4
		 * of them at R, the host's rate (cc_host_interval()). */
		if (sc->cc.shared && !p->host.fresh && p->host.rate)
			rate = p->host.rate;
	} else {
		rtt = srtt;
	}
	return cc_iv_at(s, rtt, sc->cc.pf.rate ? rate : 0, sc->tcp.f.mss);
}

void stack_cc_sent(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_pacer_flow *pf = &sc->cc.pf;
	uint32_t sent;

	if (!sc->cc.ops)
		return;
	sent = c->cc.sent_bytes - sc->cc.charged;
	sc->cc.charged = c->cc.sent_bytes;
	if (sc->cc.paced) {
		uint64_t now = cc_now_ns(s);

		if (sent)
			ss_pacer_charge(&s->pacer, pf, sent, now);
		if (c->budget_hit && pf->ent.where == SS_PACER_IDLE) {
			/* Held back with data to send: wait for the pacer.  A
			 * flow whose own time has come waits for its cap. */
			ss_ctr_inc(s->ctr, !pf->group || pf->next_ns > now ? SS_CTR_cc_paced_waits
					   : pf->group == sc->cc.host_grp ? SS_CTR_cc_host_waits
									  : SS_CTR_cc_cap_waits);
			ss_pacer_schedule(&s->pacer, pf);
			if (sc->cc.shared)
				cc_host_bound(s, sc);
		}
		c->tx_budget = 0; /* what is left of a release is not kept */
	}
	/* A flow that sends becomes active: intervals start now (a shared
	 * member's are its host's). */
	if (!ss_timer_armed(&sc->cc.timer) && !sc->cc.shared &&
	    (sent || c->f.snd_max != c->f.snd_una)) {
		sc->cc.start_us = s->now_us;
		ss_timer_arm(&s->cc_wheel, &sc->cc.timer,
			     s->now_us + cc_interval_len(s, sc, false));
	}
}

/*
 * --cc-trace: one line per control interval, for tuning the algorithms
 * against a real bottleneck (docs/congestion.md).  Columns: time (us),
 * connection id, interval (us), bytes acked / ECE-acked / sent in it,
 * srtt and latest RTT (us), the decision (rate in bytes/s, or 0 and the
 * window), the SS_CC_OUT_* flags, the bytes in flight, and how often the
 * flow was held back by its rate and by its window (struct ss_cc_sample).
 * Costs nothing unless asked for; stdio's buffer batches the writes.
 */
static void cc_trace(const struct ss_stack *s, const struct ss_sconn *sc,
		     const struct ss_cc_sample *smp, const struct ss_cc_out *out)
{
	fprintf(s->cc_trace, "%llu %u %u %llu %llu %llu %u %u %llu %u 0x%x %u %u %u\n",
		(unsigned long long)s->now_us, sc->id, smp->interval_us,
		(unsigned long long)smp->acked_bytes, (unsigned long long)smp->ecn_bytes,
		(unsigned long long)smp->sent_bytes, smp->srtt_us, smp->rtt_us,
		(unsigned long long)((out->flags & SS_CC_OUT_RATE) ? out->rate_bps : 0),
		(out->flags & SS_CC_OUT_RATE) ? 0 : out->cwnd, out->flags, smp->inflight,
		smp->rate_limited, smp->win_limited);
}

void ss_stack_set_cc_trace(struct ss_stack *s, FILE *f)
{
	s->cc_trace = f;
	if (f)
		fprintf(f, "# t_us conn interval_us acked ecn_acked sent srtt_us rtt_us "
			   "rate_Bps cwnd flags inflight rate_limited win_limited\n");
}

/* The interval every member of @p has: 2 RTTs of the path, and at least
 * CC_IV_SEGS segments at R (the host's controller sees all its members'
 * segments), as cc_interval_len() gives a member. */
static uint32_t cc_host_iv(const struct ss_stack *s, const struct ss_cc_path *p, uint32_t mss)
{
	uint64_t rate = !p->host.fresh && p->host.rate ? p->host.rate : p->rate;

	return cc_iv_at(s, p->rtt_us, rate, mss);
}

/*
 * A slack host: R has slack, its last runs bound none of its members (the
 * law's "calm" flows, share.c, are another thing: those without a signal
 * in one run).  No member was held back by its pacer, the host's bucket
 * or its window, and none saw a mark or a loss: R (at most 1.2 x the rate
 * they sent, the cap) let every flow send what its application wrote, so
 * the runs only tracked the aggregate.  That is an RPC server's host: 64
 * clients' flows to one address, a request each per RTT, were sampled
 * every 2 RTTs, 0.67 member visits per request and ~160 instructions per
 * request of the ~1,800 (bench/insn_per_req.py).  Each slack run in a row
 * doubles the next interval, up to 2^CC_HOST_SLACK_MAX times (and no
 * longer than CC_HOST_SLACK_US, inside CC_HOST_STALE_US: a run keeps the
 * entry its host's).  A run visits every member twice, each visit a dozen
 * of its cache lines: at 16,384 connections to one host, runs every
 * 125-190 ms (8x the interval, 2 RTTs of 8-12 ms) cost both services
 * ~8 % of the machine's time, and the stretch is what bounds that cost;
 * the first member held back ends the slack and
 * brings the run in to its usual end (cc_host_bound()), so a flow that
 * starts to use its share waits no longer for R to grow than before.  A
 * mark or a loss ends it at the next run (the stretched interval at
 * most): until a member is held back, a cut would change nothing it
 * sends.
 */
#define CC_HOST_SLACK_MAX 5u
#define CC_HOST_SLACK_US (CC_HOST_STALE_US / 2)

static uint32_t cc_host_next_iv(const struct ss_stack *s, const struct ss_cc_path *p, uint32_t mss)
{
	uint32_t iv = cc_host_iv(s, p, mss), slack;

	if (!p->slack || iv >= CC_HOST_SLACK_US)
		return iv;
	slack = iv << p->slack;
	return slack < CC_HOST_SLACK_US ? slack : CC_HOST_SLACK_US;
}

/* @sc, a member of its host, was held back (its pacer, or its host's
 * bucket): R binds it, so a slack host's run comes at its usual end. */
static void cc_host_bound(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_cc_path *p = cc_path(s, sc->tcp.remote_ip);
	uint64_t end;

	if (!p->slack || p->ip != sc->tcp.remote_ip || !ss_timer_armed(&p->timer))
		return;
	p->slack = 0;
	ss_ctr_inc(s->ctr, SS_CTR_cc_host_slack_ends);
	end = p->host_start_us + cc_host_iv(s, p, sc->tcp.f.mss);
	if (end < p->timer.deadline_us)
		ss_timer_arm(&s->cc_host_wheel, &p->timer, end > s->now_us ? end : s->now_us);
}

/* The path's RTT and rate estimates take @n flows' mean @srtt and @rate,
 * each flow with weight 1/8 as if one after the other (what remains of
 * the old estimate: (7/8)^n): a flow's as its interval ends, or at a
 * host's run its members' (all of them within one interval, as their own
 * intervals ending one by one would). */
static void cc_path_update_mean(struct ss_stack *s, struct ss_cc_path *p, uint32_t srtt,
				uint64_t rate, uint32_t n)
{
	uint64_t keep = 1024; /* (7/8)^n, in 1/1024 */

	for (uint32_t i = 0; i < n && keep; i++)
		keep = keep * 7 / 8;
	if (srtt && !p->rtt_us) {
		p->rtt_us = srtt;
		p->rate = rate;
	} else if (srtt) {
		/* Rates are at most SS_CC_RATE_LIMIT (2^40 B/s): no overflow. */
		p->rtt_us = (uint32_t)((p->rtt_us * keep + (uint64_t)srtt * (1024 - keep)) / 1024);
		if (rate)
			p->rate = p->rate ? (p->rate * keep + rate * (1024 - keep)) / 1024 : rate;
	}
	p->last_us = s->now_us;
}

/*
 * cc-share host (share.c): the interval of @sc, a dctcp-rate flow that is
 * not a member yet, ended with @smp.  It joins its host: its sample goes
 * into the host's controller, it is paced with the host's other flows as
 * one aggregate, and from now on its host's runs sample it (its own timer
 * stops, cc_host_run()).  It is paced at its share, or at its own rate
 * before the host's first run.  Returns false (the flow runs its own
 * controller) when another address holds the host's entry.
 */
static bool cc_host_interval(struct ss_stack *s, struct ss_sconn *sc,
			     const struct ss_cc_sample *smp, struct ss_cc_out *out)
{
	const struct ss_cc_params *prm = &s->ccp->params;
	uint32_t ip = sc->tcp.remote_ip;
	struct ss_cc_path *p = cc_path(s, ip);
	uint64_t rate;

	if (cc_path_taken(s, p, ip)) {
		ss_ctr_inc(s->ctr, SS_CTR_cc_share_collisions);
		return false;
	}
	if (p->ip != ip || !p->last_us || s->now_us - p->last_us >= CC_HOST_STALE_US)
		cc_path_take(s, p, ip);
	if (!sc->cc.shared) {
		ss_cc_share_flow_init(&sc->cc.share);
		sc->cc.shared = true;
		ss_list_add_head(&p->members, &sc->cc.host_link);
		p->n_members++;
		s->cc_members++;
		if (p->pace_on) {
			/* Paced with its host's flows as one aggregate; an
			 * application cap's bucket takes precedence (a flow has
			 * one group), and the flow keeps only its share. */
			sc->cc.host_grp = &p->pace;
			if (sc->app && sc->app->cap)
				ss_ctr_inc(s->ctr, SS_CTR_cc_host_pace_capped);
			else if (sc->cc.pf.group != &p->pace)
				cc_regroup(s, sc, &p->pace);
		}
	}
	ss_cc_host_add(&p->host, prm, &sc->cc.share, smp, sc->cc.pf.rate);
	cc_path_update_mean(s, p, sc->tcp.f.srtt_us, sc->cc.pf.rate, 1);
	if (!ss_timer_armed(&p->timer)) {
		/* The host's interval began at its last run (or now, a new
		 * entry); one that lapsed while it had no members ends now. */
		uint64_t end = p->host_start_us + cc_host_iv(s, p, sc->tcp.f.mss);

		p->slack = 0;
		ss_timer_arm(&s->cc_host_wheel, &p->timer, end > s->now_us ? end : s->now_us);
	}
	rate = ss_cc_host_share(&p->host, prm, &sc->cc.share);
	out->rate_bps = rate ? rate : sc->cc.pf.rate; /* before the host's first run */
	out->cwnd = 0;
	out->flags = SS_CC_OUT_RATE | (p->host.slow_start ? SS_CC_OUT_SLOW_START : 0);
	return true;
}

/* Whether @sc did nothing since its last sample: nothing sent, acked or
 * in flight, and nothing waiting.  A flow with data that its pacer holds
 * is not idle: at 32 flows on 100 Mbit/s one segment leaves every ~4 ms,
 * longer than an interval, and a shared host's member that left at every
 * empty sample missed the host's cuts and came back at a stale share. */
static bool cc_flow_idle(const struct ss_sconn *sc)
{
	const struct ss_tcp_conn *c = &sc->tcp;

	return c->cc.sent_bytes == sc->cc.prev.sent_bytes &&
	       c->cc.acked_bytes == sc->cc.prev.acked_bytes && c->f.snd_max == c->f.snd_una &&
	       !ss_tcp_tx_unsent(c);
}

/* @sc's sample since its last one (its counters' deltas). */
static void cc_sample(struct ss_stack *s, const struct ss_sconn *sc, struct ss_cc_sample *smp)
{
	const struct ss_tcp_conn *c = &sc->tcp;
	uint64_t iv = s->now_us - sc->cc.start_us;
	uint32_t rtt = c->cc.acked_bytes != sc->cc.prev.acked_bytes ? c->last_rtt_us : 0;
	const struct ss_cc_path *p = cc_path(s, c->remote_ip);

	ss_cc_sample_fill(smp, &sc->cc.prev, &c->cc, iv ? (iv > UINT32_MAX ? UINT32_MAX : (uint32_t)iv) : 1,
			  c->f.srtt_us, rtt, c->f.snd_max - c->f.snd_una, c->f.mss);
	smp->unsent = ss_tcp_tx_unsent(c);
	if (p->ip == c->remote_ip)
		smp->path_rate = p->rate;
}

/* @sc's sample (@smp; NULL: not traced) is taken and @out applied: the
 * next sample starts now.  @idle: it goes idle (TCP_INFO published now).
 * cc_intervals is the caller's to count. */
static inline void cc_sample_next(struct ss_stack *s, struct ss_sconn *sc,
				  const struct ss_cc_sample *smp, const struct ss_cc_out *out,
				  bool idle)
{
	if (smp && s->cc_trace)
		cc_trace(s, sc, smp, out);
	sc->bytes_acked += sc->tcp.cc.acked_bytes - sc->cc.prev.acked_bytes;
	sc->cc.prev = sc->tcp.cc;
	sc->cc.start_us = s->now_us;
	if (idle || s->now_us - sc->cc.published_us >= CC_PUBLISH_US)
		stack_cc_publish(s, sc);
}

static void cc_sample_done(struct ss_stack *s, struct ss_sconn *sc, const struct ss_cc_sample *smp,
			   const struct ss_cc_out *out, bool idle)
{
	ss_ctr_inc(s->ctr, SS_CTR_cc_intervals);
	cc_sample_next(s, sc, smp, out, idle);
}

/*
 * The end of a host's interval (cc-share host).  Every member's sample
 * since the last run goes into the host's controller, which runs once on
 * the aggregate; then every member is paced at its new share at once (one
 * cut for all), and a member that was idle leaves (the walk grows with
 * the host's active flows only).  One timer per host, not per member: a
 * member's part of a run is its sample and its new rate.
 *
 * flatten: the member's part, once per member, is a few loads, sums and
 * stores, and its helpers (the sample, the host's accumulation and share,
 * the engine's and the pacer's setters) are in other files or used
 * elsewhere too; called, their frames cost as much as their work
 * (the leave and TCP_INFO's publish, rare, stay calls: noinline).
 */
static __attribute__((flatten)) void cc_host_run(struct ss_stack *s, struct ss_cc_path *p)
{
	const struct ss_cc_params *prm = &s->ccp->params;
	struct ss_list *l, *next;
	struct ss_sconn *m;
	struct ss_cc_sample smp;
	struct ss_cc_out h, out;
	uint32_t flags, rtt, mss, n_rtt = 0, n_rate = 0, n = 0;
	uint64_t share, rtt_sum = 0, rate_sum = 0;
	bool slack;

	SS_LIST_FOR_EACH_SAFE(l, next, &p->members) {
		/* Its own, not smp, whose address the trace takes: gcc
		 * keeps most of it in registers. */
		struct ss_cc_sample one;

		m = host_member(l);
		if (m->tcp.f.state == SS_TCPS_CLOSED || m->tcp.remote_ip != p->ip) {
			/* Closed; or the entry is another address's (a
			 * member's address is its host's while it is one). */
			cc_host_leave(s, p, m, m->tcp.f.state != SS_TCPS_CLOSED);
			continue;
		}
		cc_sample(s, m, &one);
		ss_cc_host_add(&p->host, prm, &m->cc.share, &one, m->cc.pf.rate);
		if (m->tcp.f.srtt_us) {
			rtt_sum += m->tcp.f.srtt_us;
			n_rtt++;
		}
		if (m->cc.pf.rate) {
			rate_sum += m->cc.pf.rate;
			n_rate++;
		}
	}
	if (ss_list_empty(&p->members))
		return;
	cc_path_update_mean(s, p, n_rtt ? (uint32_t)(rtt_sum / n_rtt) : 0,
			    n_rate ? rate_sum / n_rate : 0, n_rtt);
	mss = host_member(p->members.next)->tcp.f.mss;
	rtt = p->rtt_us ? p->rtt_us : host_member(p->members.next)->tcp.f.srtt_us;
	share = p->host.n_last ? p->host.rate / p->host.n_last : 0;
	/* Whether this run bound any member (before the run clears the counts). */
	slack = !p->host.fresh && !p->host.rate_limited && !p->host.win_limited &&
	       !p->host.n_loss && !p->host.n_mark;
	/* What one flow at the share would have: its step is scaled to the
	 * (shorter) run. */
	p->host.run_us = s->now_us - p->host_start_us;
	ss_cc_host_run(&p->host, prm, rtt, share ? cc_iv_at(s, rtt, share, mss) : 0,
		       p->n_members, &h);
	p->host_start_us = s->now_us;
	cc_host_pace_set(s, p, p->host.rate);
	ss_ctr_inc(s->ctr, SS_CTR_cc_host_intervals);
	flags = SS_CC_OUT_RATE | (h.flags & (SS_CC_OUT_REDUCED | SS_CC_OUT_CAPPED | SS_CC_OUT_HELD)) |
		(p->host.slow_start ? SS_CC_OUT_SLOW_START : 0);
	SS_LIST_FOR_EACH_SAFE(l, next, &p->members) {
		bool idle;

		m = host_member(l);
		idle = cc_flow_idle(m);
		if (s->cc_trace) /* as added above: the counters did not move */
			cc_sample(s, m, &smp);
		out.rate_bps = ss_cc_host_share(&p->host, prm, &m->cc.share);
		out.rate_bps = out.rate_bps ? out.rate_bps : m->cc.pf.rate;
		out.cwnd = 0;
		out.flags = flags;
		cc_set(m, &out);
		cc_sample_next(s, m, s->cc_trace ? &smp : NULL, &out, idle);
		n++;
		if (ss_tcp_tx_unsent(&m->tcp)) /* a larger window may let it send */
			stack_conn_dirty(s, m);
		if (idle) {
			ss_ctr_inc(s->ctr, SS_CTR_cc_idle);
			cc_host_leave(s, p, m, false);
		}
	}
	/* cc_apply()'s and cc_sample_done()'s counts, for all of them. */
	ss_ctr_add(s->ctr, SS_CTR_cc_rate_updates, n);
	ss_ctr_add(s->ctr, SS_CTR_cc_intervals, n);
	if (flags & SS_CC_OUT_REDUCED)
		ss_ctr_add(s->ctr, SS_CTR_cc_reductions, n);
	if (ss_list_empty(&p->members))
		return;
	if (!slack)
		p->slack = 0;
	else if (p->slack < CC_HOST_SLACK_MAX)
		p->slack++;
	if (p->slack)
		ss_ctr_inc(s->ctr, SS_CTR_cc_host_slack_runs);
	ss_timer_arm(&s->cc_host_wheel, &p->timer, s->now_us + cc_host_next_iv(s, p, mss));
}

/* "auto": @sc's path marks CE (ECN was negotiated): from this interval on
 * dctcp-win runs it, from the window cubic had reached; this interval's
 * marks are its first (cc_policy.h). */
static __attribute__((noinline, cold)) void cc_auto_to_dctcp(struct ss_stack *s,
							     struct ss_sconn *sc)
{
	struct ss_cc_out out;

	sc->cc.auto_ecn = false;
	sc->cc.auto_pick = false; /* for good */
	sc->cc.ops = &ss_cc_dctcp_win_ops;
	ss_cc_dctcp_win_adopt(&sc->cc.st, &s->ccp->params, sc->tcp.f.mss, sc->tcp.f.cwnd, &out);
	ss_ctr_inc(s->ctr, SS_CTR_cc_auto_dctcp);
}

/* "auto": where @sc goes from here, after the interval @smp (cc_policy.h):
 * to dctcp-win at its first marks (ECN negotiated), to bbr at the first
 * interval it lost segments, its window having held it back in that
 * interval or the one before (in recovery the output stops on the pipe,
 * not the window), without marks: a bulk flow on a lossy path. */
static __attribute__((noinline)) void cc_auto_move(struct ss_stack *s, struct ss_sconn *sc,
						   const struct ss_cc_sample *smp)
{
	struct ss_cc_out out;

	if (sc->cc.auto_ecn && smp->ecn_bytes) {
		cc_auto_to_dctcp(s, sc);
	} else if (sc->cc.ops == &ss_cc_cubic_ops && (smp->win_limited || sc->cc.auto_wl) &&
		   (smp->fast_retx || smp->timeouts)) {
		sc->cc.ops = &ss_cc_bbr_ops;
		ss_cc_bbr_adopt(&sc->cc.st, &s->ccp->params, sc->tcp.f.mss, sc->tcp.f.cwnd,
				sc->tcp.f.srtt_us, &out);
		ss_ctr_inc(s->ctr, SS_CTR_cc_auto_bbr);
		if (!sc->cc.auto_ecn)
			sc->cc.auto_pick = false; /* nothing more to move to */
	}
	sc->cc.auto_wl = smp->win_limited != 0;
}

/* One control interval of @sc, a flow on its own (not a host's member), has ended. */
static void cc_interval(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_cc_sample smp;
	struct ss_cc_out out;
	bool idle;

	if (c->f.state == SS_TCPS_CLOSED || sc->cc.shared) /* a member: its host samples it */
		return;
	cc_sample(s, sc, &smp);
	idle = cc_flow_idle(sc);
	if (__builtin_expect(sc->cc.auto_pick, 0))
		cc_auto_move(s, sc, &smp);
	if (!(s->ccp->share == SS_CC_SHARE_HOST && sc->cc.ops == &ss_cc_dctcp_rate_ops &&
	      cc_host_interval(s, sc, &smp, &out)))
		sc->cc.ops->on_interval(&sc->cc.st, &s->ccp->params, &smp, &out);
	cc_apply(s, sc, &out);
	cc_sample_done(s, sc, &smp, &out, idle);
	if (ss_tcp_tx_unsent(c)) /* a larger window may let it send */
		stack_conn_dirty(s, sc);
	if (idle) {
		ss_ctr_inc(s->ctr, SS_CTR_cc_idle);
		sc->cc.stretched = false;
		if (sc->cc.shared) /* its host's run walks active flows only */
			cc_host_leave(s, cc_path(s, c->remote_ip), sc, false);
	} else if (!sc->cc.shared) {
		uint32_t iv = cc_interval_len(s, sc, true);

		/* A window flow its window held nothing back (no loss, no
		 * timeout either): the algorithm has nothing to do until it
		 * has, so the next interval is longer (CC_QUIET_STRETCH); the
		 * first output its window stops, or a loss, pulls it in
		 * (stack_cc_unstretch()).  A request/response flow then costs
		 * the loop next to nothing per request. */
		sc->cc.stretched = !(out.flags & SS_CC_OUT_RATE) && !smp.win_limited &&
				   !smp.fast_retx && !smp.timeouts;
		if (sc->cc.stretched) {
			uint64_t l = (uint64_t)iv * CC_QUIET_STRETCH;

			/* Never shorter than the usual interval itself. */
			if (l > CC_QUIET_MAX_US)
				l = iv > CC_QUIET_MAX_US ? iv : CC_QUIET_MAX_US;
			iv = (uint32_t)l;
		}
		ss_timer_arm(&s->cc_wheel, &sc->cc.timer, s->now_us + iv);
	}
}

void stack_cc_unstretch(struct ss_stack *s, struct ss_sconn *sc)
{
	sc->cc.stretched = false;
	ss_ctr_inc(s->ctr, SS_CTR_cc_unstretched);
	ss_timer_cancel(&s->cc_wheel, &sc->cc.timer);
	ss_timer_arm(&s->cc_wheel, &sc->cc.timer, s->now_us + cc_interval_len(s, sc, false));
}

void stack_cc_run_intervals(struct ss_stack *s)
{
	struct ss_timer *due[64];
	unsigned n;

	do {
		n = ss_timer_wheel_expire(&s->cc_wheel, s->now_us, due, 64);
		for (unsigned i = 0; i < n; i++)
			cc_interval(s, sconn_of_cc_timer(due[i]));
	} while (n == 64);
	do {
		n = ss_timer_wheel_expire(&s->cc_host_wheel, s->now_us, due, 64);
		for (unsigned i = 0; i < n; i++)
			cc_host_run(s, path_of_timer(due[i]));
	} while (n == 64);
}

void stack_cc_run_pacer(struct ss_stack *s)
{
	struct ss_pacer_flow *go[64];
	uint64_t holds = s->pacer.tick_holds;
	unsigned n;

	do {
		n = ss_pacer_poll(&s->pacer, cc_now_ns(s), go, 64);
		for (unsigned i = 0; i < n; i++) {
			struct ss_sconn *sc = sconn_of_pf(go[i]);

			sc->tcp.tx_budget = stack_cc_quantum(sc);
			ss_ctr_inc(s->ctr, SS_CTR_cc_pacer_releases);
			stack_conn_dirty(s, sc);
		}
	} while (n == 64);
	if (s->pacer.tick_holds != holds)
		ss_ctr_add(s->ctr, SS_CTR_cc_pacer_tick_holds, s->pacer.tick_holds - holds);
}

void stack_cc_conn_unowned(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->cc.ops && sc->cc.pf.group)
		cc_regroup(s, sc, NULL);
}

void stack_cc_conn_free(struct ss_stack *s, struct ss_sconn *sc)
{
	if (!sc->cc.ops)
		return;
	ss_pacer_cancel(&s->pacer, &sc->cc.pf);
	ss_timer_cancel(&s->cc_wheel, &sc->cc.timer);
	if (sc->cc.shared)
		cc_host_leave(s, cc_path(s, sc->tcp.remote_ip), sc, false);
	sc->cc.ops = NULL;
}

uint64_t stack_cc_next_us(const struct ss_stack *s)
{
	uint64_t t = ss_timer_wheel_next(&s->cc_wheel);
	uint64_t h = ss_timer_wheel_next(&s->cc_host_wheel);
	uint64_t p = ss_pacer_next_ns(&s->pacer);

	if (h < t)
		t = h;
	if (p != UINT64_MAX && (p + 999) / 1000 < t)
		t = (p + 999) / 1000;
	return t;
}
