/* stack_opts.h - socket options the applications set (SS_CMD_SETOPT): on connections, and on listeners for the connections they accept. */
#ifndef SS_STACK_STACK_OPTS_H
#define SS_STACK_STACK_OPTS_H

#include "stack/stack.h"

/* Whether @val is a value option @opt (SS_OPT_*) takes. */
bool stack_opt_valid(uint32_t opt, uint32_t val);
/* SS_CMD_SETOPT on live connection @sc: 0, or -EINVAL (nothing changed). */
int stack_conn_setopt(struct ss_stack *s, struct ss_sconn *sc, uint32_t opt, uint32_t val);
/* SS_CMD_SETOPT with SS_CMDF_LISTENER: 0, -EBADF or -EINVAL. */
int stack_listen_setopt(struct ss_stack *s, struct ss_app *a, const struct ss_shm_cmd *cmd);
/* A connection of listener @l, before its SYN-ACK: the listener's options
 * (Linux: accepted sockets inherit them). */
void stack_opts_inherit(struct ss_stack *s, const struct ss_listener *l, struct ss_sconn *sc);

#endif
