/* stack_loop.h - the loopback queue (stack_loop.c): segments to our own
 * address, fed back into the receive path after the round's flush. */
#ifndef SS_STACK_STACK_LOOP_H
#define SS_STACK_STACK_LOOP_H

#include "stack/stack.h"

/* Passes per round (stack_round.c): enough for a request, its ACK and its
 * answer to cross in one round, bounded so the NIC and the applications'
 * commands are not starved. */
#define SS_LOOP_PASSES 4

int stack_loop_init(struct ss_stack *s);
void stack_loop_fini(struct ss_stack *s);
/* A slot for one frame (*cap bytes), or NULL when the queue is full
 * (counted in drop_loopback_full); stack_loop_commit() queues it. */
uint8_t *stack_loop_reserve(struct ss_stack *s, size_t *cap);
void stack_loop_commit(struct ss_stack *s, size_t len);
/* One pass: every frame queued now goes through ss_proto_input(); frames
 * those emit wait for the next pass. */
void stack_loop_drain(struct ss_stack *s);

static inline bool stack_loop_pending(const struct ss_stack *s)
{
	return s->loop.head != s->loop.tail;
}

#endif
