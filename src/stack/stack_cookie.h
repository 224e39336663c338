/* stack_cookie.h - SYN cookies of the stack's listeners (src/tcp/tcp_cookie.h). */
#ifndef SS_STACK_STACK_COOKIE_H
#define SS_STACK_STACK_COOKIE_H

#include "stack/stack.h"

int stack_cookie_init(struct ss_stack *s);
void stack_cookie_fini(struct ss_stack *s);
/* stack_cookie_synack - answer the SYN @seg with a cookie SYN-ACK, with
 * listener member @m's ring size; false when none went out. */
bool stack_cookie_synack(struct ss_stack *s, struct ss_lmember *m, const uint8_t *frame,
			 const struct ss_ipv4 *ip, const struct ss_tcp *seg);
/* stack_cookie_ack - @seg, an ACK for no connection: if it returns one of
 * our cookies to a listening port, the connection is made and the ACK
 * processed (true); false otherwise (the caller resets as usual). */
bool stack_cookie_ack(struct ss_stack *s, const uint8_t *frame, const struct ss_ipv4 *ip,
		      const struct ss_tcp *seg);

#endif
