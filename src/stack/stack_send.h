/* stack_send.h - the send step: a connection's output under congestion control. */
#ifndef SS_STACK_STACK_SEND_H
#define SS_STACK_STACK_SEND_H

#include "stack/stack_cc.h"

/*
 * One function owns a connection's output: the budget the pacer allows,
 * the engine's output (ss_tcp_output()), and the charge of what went out.
 * Its collaborators are the pacer (src/cc/pacer.h: may this flow send,
 * charge it, queue it) and the control loop (stack_cc.h: start a flow's
 * control, arm its interval, end a stretched one).  The usual cases are
 * inline: the flush of a request only starts the delayed ACK (the
 * engine's quiet check), the flush of a reply takes a budget (paced
 * flows) and charges it when the intervals already run.
 */

/* True when @sc's control needs nothing before an output: it has not
 * started and never will here (no congestion control configured), or it
 * runs in the pacer group it wants.  Otherwise stack_cc_prepare() comes
 * first. */
static inline bool stack_send_settled(const struct ss_stack *s, const struct ss_sconn *sc)
{
	if (!sc->cc.ops)
		return !s->ccp;
	return !sc->app || stack_cc_group_want(sc) == sc->cc.pf.group;
}

/* The charge after an output: inline where nothing is to be scheduled and
 * the intervals run (the charge alone), or nothing was sent and nothing is
 * in flight; stack_cc_sent() otherwise.  always_inline: called, it costs a
 * frame per segment. */
static inline __attribute__((always_inline)) void stack_send_charge(struct ss_stack *s,
								       struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_pacer_flow *pf = &sc->cc.pf;
	uint32_t sent;

	if (!sc->cc.ops)
		return;
	/* A stretched interval ends at the first output its window stopped,
	 * or at a loss (stack_cc.c cc_interval()). */
	if (__builtin_expect(sc->cc.stretched, 0) &&
	    (c->cc.win_limited != sc->cc.prev.win_limited ||
	     c->cc.fast_retx != sc->cc.prev.fast_retx || c->cc.timeouts != sc->cc.prev.timeouts))
		stack_cc_unstretch(s, sc);
	sent = c->cc.sent_bytes - sc->cc.charged;
	if (!c->budget_hit && (sc->cc.shared || ss_timer_armed(&sc->cc.timer))) {
		if (sent) {
			if (pf->group)
				ss_pacer_charge_u32(&s->pacer, pf, sent, s->now_us * 1000);
			else if (sc->cc.paced)
				ss_pacer_charge_rate(&s->pacer, pf, sent, s->now_us * 1000);
			sc->cc.charged = c->cc.sent_bytes;
		}
		if (sc->cc.paced)
			c->tx_budget = 0; /* what is left of a release is not kept */
		return;
	}
	if (!sent && !c->budget_hit && c->f.snd_max == c->f.snd_una) {
		if (sc->cc.paced)
			c->tx_budget = 0;
		return;
	}
	stack_cc_sent(s, sc);
}

/* The budget before an output: stack_cc_prepare() where the control is
 * not settled (@settled: stack_send_settled()), else the pacer's budget
 * for a paced flow with data waiting. */
static inline __attribute__((always_inline)) void stack_send_budget(struct ss_stack *s,
								       struct ss_sconn *sc,
								       bool settled)
{
	if (__builtin_expect(!settled, 0))
		stack_cc_prepare(s, sc);
	else if (sc->cc.ops)
		stack_cc_budget(s, sc);
}

/*
 * stack_send - the send step of dirty connection @sc in the round's flush.
 * A closed connection, or one waiting for its peer's MAC, sends nothing.
 */
static inline __attribute__((always_inline)) void stack_send(struct ss_stack *s,
							     struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;

	if (c->f.state == SS_TCPS_CLOSED || (sc->flags & SC_ARP_WAIT))
		return;
	if (__builtin_expect(!stack_send_settled(s, sc), 0)) {
		stack_cc_prepare(s, sc);
	} else if (ss_tcp_output_quiet(c, s->now_us)) {
		/* The flush after a request only starts the delayed ACK:
		 * the engine's quiet check does that without the output
		 * path (the reply's flush takes it). */
		stack_send_charge(s, sc);
		return;
	} else if (sc->cc.ops) {
		stack_cc_budget(s, sc);
	}
	ss_tcp_output(c, s->now_us);
	stack_send_charge(s, sc);
}

#endif
