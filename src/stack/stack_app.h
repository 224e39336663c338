/* stack_app.h - the applications' queues on the stack (stack_app.c): their
 * commands carried out, their events posted and published. */
#ifndef SS_STACK_STACK_APP_H
#define SS_STACK_STACK_APP_H

#include "stack/stack.h"

/* The stack's list of active applications brought up to registry
 * generation @gen: applications attached since join it, those dying are
 * torn down (stack_app_commands()). */
void stack_apps_resync(struct ss_stack *s, uint32_t gen);

/* Carries out up to a ring's worth of the commands @a published on context
 * @ctx; returns how many. */
unsigned stack_app_take(struct ss_stack *s, struct ss_app *a, uint16_t ctx);

/* The round's commands step: applications attached or gone since the last
 * round taken in, then every context's published commands carried out.
 * True when there were any.  Inline: most rounds find nothing. */
static inline bool stack_app_commands(struct ss_stack *s)
{
	uint32_t gen = __atomic_load_n(&s->reg->gen, __ATOMIC_ACQUIRE);
	bool did = false;

	if (gen != s->reg_gen || s->app_broken)
		stack_apps_resync(s, gen);
	for (uint32_t i = 0; i < s->n_active; i++) {
		struct ss_app *a = s->active[i];
		for (uint32_t c = 0; c < a->n_ctx && !a->broken; c++) {
			struct ss_app_ctx *cx = &a->ctx[c];
			/* Pairs with the app's store-release of prod (as in
			 * stack_app_take()). */
			if (__atomic_load_n(&cx->atx->prod, __ATOMIC_ACQUIRE) != cx->atx_cons)
				did |= stack_app_take(s, a, (uint16_t)c) > 0;
		}
	}
	return did;
}

/* The round's publish step: connections whose events did not fit retried,
 * every context's new events made visible, sleeping contexts woken (one
 * eventfd write each).  True when any context had new events. */
bool stack_app_publish(struct ss_stack *s);

/*
 * stack_conn_post - posts @sc's pending events (stack_conn_collect()) in
 * one go, in the order the app must see them: opened, data, delivered,
 * peer FIN, reset/error, closed.  If its context's ring lacks room for
 * all of them, none is posted and the connection waits on the context's
 * pending list (its byte counts keep adding up, so nothing is lost).  May
 * release the slot (CLOSED posted).  Returns true when nothing is left.
 */
bool stack_conn_post(struct ss_stack *s, struct ss_sconn *sc);

void stack_post_simple(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
		       uint32_t conn, uint32_t gen, uint16_t error, uint32_t arg,
		       uint64_t cookie);
void stack_post_port(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
		     uint32_t id, uint16_t error, uint32_t arg, uint16_t port, uint64_t cookie);
void stack_post_inherited(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t joined,
			  uint32_t held);
/* stack_post_listen_member - entry @id, which @a shares (fork), listens
 * now (another member listened): LISTEN with SS_EVF_MEMBER, @a's cookie. */
void stack_post_listen_member(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t id,
			      uint32_t backlog, uint16_t port, uint64_t cookie);
/* stack_post_publish - make @a's events on @ctx visible now, not at the
 * end of the round: a change another process caused, which that process
 * may tell @a about as soon as it sees its own answer (fork: listen() in
 * one process, then "go" to the other over a pipe). */
void stack_post_publish(struct ss_app *a, uint16_t ctx);
void stack_post_adopted(struct ss_stack *s, struct ss_sconn *sc, uint8_t flags);

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
