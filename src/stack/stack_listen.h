/* stack_listen.h - port entries of the stack (stack_listen.c): bind,
 * listen, SO_REUSEPORT and the members a fork adds. */
#ifndef SS_STACK_STACK_LISTEN_H
#define SS_STACK_STACK_LISTEN_H

#include "stack/stack.h"

bool stack_port_in_use(const struct ss_stack *s, uint16_t port);
void stack_cmd_bind(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		    const struct ss_shm_cmd *cmd);
void stack_cmd_listen(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		      const struct ss_shm_cmd *cmd);
int stack_cmd_listen_close(struct ss_stack *s, struct ss_app *a, uint32_t li);
int stack_cmd_listen_arm(struct ss_stack *s, struct ss_app *a, uint32_t li);
/* stack_cmd_listen_stop - shutdown() of listener @li: stopped for every member. */
int stack_cmd_listen_stop(struct ss_stack *s, struct ss_app *a, uint32_t li, uint32_t flags);
/* stack_port_take - connect() from bound entry @li: its port, and the entry goes. */
int stack_port_take(struct ss_stack *s, struct ss_app *a, uint32_t li, uint16_t *port);
/* stack_listener_find - the listening entry for a SYN to @k (SO_REUSEPORT: by flow hash). */
struct ss_listener *stack_listener_find(struct ss_stack *s, const struct ss_flow_key *k,
					uint32_t *idx);
/* stack_listener_pick - the member that gets the next connection, NULL if none can. */
struct ss_lmember *stack_listener_pick(struct ss_listener *l);
/* stack_listener_of - entry @li when @a is one of its members, else NULL. */
struct ss_listener *stack_listener_of(struct ss_stack *s, struct ss_app *a, uint32_t li);
unsigned stack_listeners_inherit(struct ss_stack *s, struct ss_app *parent,
				 struct ss_app *child, uint16_t ctx, unsigned *full);
void stack_listeners_app_gone(struct ss_stack *s, struct ss_app *a);

#endif
