/* stack_round.c - one round of a fast-path stack: the applications' commands, due timers, the flush of dirty connections, the loopback queue, events published. */
#include "stack/stack.h"
#include "stack/stack_app.h"
#include "stack/stack_cc.h"
#include "stack/stack_conn.h"
#include "stack/stack_loop.h"
#include "stack/stack_send.h"

/* Due connection timers, delayed ACKs, control intervals and pacer
 * releases: each marks the connections it touches dirty. */
static inline void round_timers(struct ss_stack *s)
{
	if (ss_timer_wheel_due(&s->wheel, s->now_us))
		stack_conn_timers_run(s);
	for (unsigned i = 0; i < SS_TCP_DELACK_STEPS; i++)
		if (stack_delack_head(s, i) <= s->now_us) { /* a sentinel's: UINT64_MAX */
			stack_delack_run(s);
			break;
		}
	stack_cc_run(s);
}

/*
 * The flush: every dirty connection sends (the send step), its engine's
 * events are collected, posted to its application, and it is settled
 * (freed, or its timer synchronised).  A connection its post or its send
 * marks dirty again waits for the next flush.
 */
static __attribute__((noinline)) void round_flush(struct ss_stack *s)
{
	struct ss_sconn *sc = s->dirty;

	s->dirty = NULL;
	while (sc) {
		struct ss_sconn *next = sc->dirty_next;

		sc->flags &= (uint8_t)~SC_DIRTY;
		stack_send(s, sc);
		if (stack_conn_collect(s, sc))
			stack_conn_post(s, sc);
		stack_conn_settle(s, sc);
		sc = next;
	}
}

/* Frames to our own address, fed back and flushed, a few passes: frames a
 * pass emits (ACKs, answers) wait for the next one. */
static __attribute__((noinline)) bool round_loopback(struct ss_stack *s)
{
	bool did = false;

	for (unsigned pass = 0; pass < SS_LOOP_PASSES && stack_loop_pending(s); pass++) {
		stack_loop_drain(s);
		round_flush(s);
		did = true;
	}
	return did;
}

bool ss_stack_round(struct ss_stack *s, uint64_t now_us)
{
	bool did = s->dirty != NULL;

	/* Each step is skipped by an inline test when it has nothing to do:
	 * a fast path polls often and most rounds find nothing. */
	s->now_us = now_us;
	s->rxa.n = 0; /* the receive look-ahead covers the bursts before a round */
	if (s->reg)
		did |= stack_app_commands(s);
	if (s->arp_wait)
		stack_arp_poll(s);
	round_timers(s);
	if (s->dirty) {
		did = true;
		round_flush(s);
	}
	if (stack_loop_pending(s))
		did |= round_loopback(s);
	if (s->publish) {
		s->publish = false;
		did |= stack_app_publish(s);
	}
	/* Frames still on the loopback queue, or connections that found it
	 * full, are work for the next round. */
	return did || stack_loop_pending(s) || s->dirty != NULL;
}
