/* stack_fork.h - what stack_fork.c (sockets shared across fork) and stack_app.c share beyond stack_internal.h. */
#ifndef SS_SERVICE_STACK_FORK_H
#define SS_SERVICE_STACK_FORK_H

#include "stack/stack_internal.h"

/* stack_fork.c */

/*
 * stack_fork_app_gone - @a is going away: each connection it owns that
 * another process still holds goes to that process (SS_EV_RETURNED)
 * instead of being reset, as Linux keeps a socket open while any process
 * has it.  Call before stack_conn_app_gone() resets the rest.
 */
void stack_fork_app_gone(struct ss_stack *s, struct ss_app *a);

/* stack_app.c */

/*
 * stack_app_drain - carry out the commands @a has published on context
 * @ctx now, ahead of its turn (at most a ring's worth): before one of its
 * connections moves, what it asked for on it comes first.  Not nested (a
 * move inside a drain does not drain again) and never on a ring being
 * taken at the moment.  Returns the commands carried out.
 */
unsigned stack_app_drain(struct ss_stack *s, struct ss_app *a, uint16_t ctx);

/* stack_conn_fin_acked - our FIN was sent and acknowledged (the engine is
 * past FIN_WAIT_1/CLOSING/LAST_ACK without an error). */
bool stack_conn_fin_acked(const struct ss_sconn *sc);

/* stack_post_room - @a's context @ctx has room for @n more events now. */
bool stack_post_room(struct ss_stack *s, struct ss_app *a, uint16_t ctx, unsigned n);

/*
 * stack_post_moved_in - @sc now belongs to sc->app (its handle, its
 * rings): @type is SS_EV_ADOPTED or SS_EV_RETURNED, with @flags (SS_EVF_*
 * of the stream's state; SS_EVF_FIN_ACKED is added here) and @cookie.
 */
void stack_post_moved_in(struct ss_stack *s, struct ss_sconn *sc, uint8_t type, uint8_t flags,
			 uint64_t cookie);

/* stack_post_moved - @a's handle (@slot, @gen) on context @ctx is dead:
 * another process adopted it.  @ref (app id, slot, gen), when not NULL, is
 * the reference @a keeps (SS_EVF_HELD). */
void stack_post_moved(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t slot,
		      uint32_t gen, const uint32_t ref[3]);

#endif
