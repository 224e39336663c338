/* stack_fork.h - connections and listeners shared across fork (stack_fork.c, stack_sync.c). */
#ifndef SS_STACK_STACK_FORK_H
#define SS_STACK_STACK_FORK_H

#include "stack/stack.h"

/*
 * stack_fork_app_gone - @a is going away: each connection it owns that
 * another process still holds goes to that process (SS_EV_RETURNED)
 * instead of being reset, as Linux keeps a socket open while any process
 * has it.  Call before stack_conn_app_gone() resets the rest.
 */
void stack_fork_app_gone(struct ss_stack *s, struct ss_app *a);

void stack_cmd_inherit(struct ss_stack *s, struct ss_app *a, uint16_t ctx);
int stack_cmd_adopt(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		    const struct ss_shm_cmd *cmd);
int stack_cmd_release(struct ss_stack *s, struct ss_app *a, const struct ss_shm_cmd *cmd);
/* stack_conn_close_held - the owner closes @sc while others hold it:
 * recorded for the last release; true when so (nothing else to do). */
bool stack_conn_close_held(struct ss_stack *s, struct ss_sconn *sc, bool abort);
void stack_inh_app_gone(struct ss_stack *s, struct ss_app *a);

/* stack_sync.c: stack_conn_sync_claim - @sc's handle is going away (it
 * moves, or its app exits): its sync words (abi.h) say MOVED from now
 * on, so no commit or consumption on it succeeds any more; the bytes its
 * app had committed without a TX yet are queued as a TX would, those it
 * had consumed without an RX_DONE yet released as an RX_DONE would (a
 * move's ring copy then takes the right ones along). */
void stack_conn_sync_claim(struct ss_stack *s, struct ss_sconn *sc);

#endif
