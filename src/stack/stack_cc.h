/* stack_cc.h - congestion control on the stack (stack_cc.c): the control
 * loop (one interval per active flow or host) and the pacer, the
 * collaborators of the send step (stack_send.h). */
#ifndef SS_STACK_STACK_CC_H
#define SS_STACK_STACK_CC_H

#include "stack/stack.h"

int stack_cc_init(struct ss_stack *s);
void stack_cc_fini(struct ss_stack *s);

#define CC_QUANTUM_NS 100000u        /* a release sends ~100 us of the rate ... */
#define CC_QUANTUM_MAX 65536u        /* ... at most 64 KiB, at least 2 MSS */

/* Bytes a pacer release lets the flow send: ~CC_QUANTUM_NS of its rate
 * (or its cap), so releases are not more frequent than a sleeping thread
 * can serve; charged exactly afterwards, so the size only shapes bursts. */
static inline uint32_t stack_cc_quantum(const struct ss_sconn *sc)
{
	const struct ss_pacer_flow *pf = &sc->cc.pf;
	uint64_t rate = pf->rate ? pf->rate : UINT64_MAX;
	uint64_t q, lo = 2u * sc->tcp.f.mss;

	if (pf->group && pf->group->tb.rate < rate)
		rate = pf->group->tb.rate;
	q = rate / (1000000000u / CC_QUANTUM_NS);
	return (uint32_t)(q < lo ? lo : q > CC_QUANTUM_MAX ? CC_QUANTUM_MAX : q);
}

/* The pacer group @sc's sends count against: its owner's cap, else its
 * host's aggregate while it is a shared member (cc-share host).  An orphan
 * (no owner) keeps the group it has. */
static inline struct ss_pacer_group *stack_cc_group_want(const struct ss_sconn *sc)
{
	return sc->app->cap ? sc->app->cap : sc->cc.host_grp;
}

/* The budget a paced flow with data waiting and none left gets when the
 * pacer lets it send (a FIN alone needs none: ss_tcp_tx_unsent()). */
static inline void stack_cc_budget(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_pacer_flow *pf = &sc->cc.pf;

	if (!sc->cc.paced || c->tx_budget != 0 || !ss_tcp_tx_unsent(c))
		return;
	if (ss_pacer_may_send(pf, s->now_us * 1000))
		c->tx_budget = stack_cc_quantum(sc);
}

/*
 * stack_cc_prepare - before an output of @sc whose control is not settled
 * (stack_send_settled() false): its control starts (the handshake is
 * done) or it joins the pacer group it wants now (a new owner's cap, its
 * host's aggregate), and it gets its budget.  Also the reference the
 * unit tests hold the send step's inline budget to.
 */
void stack_cc_prepare(struct ss_stack *s, struct ss_sconn *sc);

/* stack_cc_publish - write @sc's TCP_INFO record (abi.h struct
 * ss_shm_conn_info) now: at a change of the engine's state, and at the
 * control loop's pace. */
void stack_cc_publish(struct ss_stack *s, struct ss_sconn *sc);

/*
 * stack_cc_sent - after an output of @sc: what it sent is charged to its
 * pacer flow and group, a flow its budget held back waits in the pacer,
 * and a flow that starts sending gets its control interval.  The send
 * step does the usual cases inline (stack_send_charge()) and calls this
 * for the rest; the unit tests hold the inline part to it.
 */
void stack_cc_sent(struct ss_stack *s, struct ss_sconn *sc);

/* stack_cc_unstretch - @sc's stretched interval ends at the usual length
 * from now (its window held it back, or it lost a segment). */
void stack_cc_unstretch(struct ss_stack *s, struct ss_sconn *sc);

/* Due control intervals and pacer releases (mark connections dirty). */
void stack_cc_run_intervals(struct ss_stack *s);
void stack_cc_run_pacer(struct ss_stack *s);

static inline void stack_cc_run(struct ss_stack *s)
{
	if (!s->ccp)
		return;
	if (ss_timer_wheel_due(&s->cc_wheel, s->now_us) ||
	    ss_timer_wheel_due(&s->cc_host_wheel, s->now_us))
		stack_cc_run_intervals(s);
	if (!ss_pacer_idle(&s->pacer, s->now_us * 1000))
		stack_cc_run_pacer(s);
}
/* The connection leaves its application (slot released) / goes away. */
void stack_cc_conn_unowned(struct ss_stack *s, struct ss_sconn *sc);
void stack_cc_conn_free(struct ss_stack *s, struct ss_sconn *sc);
/* Earliest control-interval or pacer deadline, us (UINT64_MAX: none). */
uint64_t stack_cc_next_us(const struct ss_stack *s);

#endif
