/* stack_internal.h - what stack_conn.c and stack_app.c share; not for other files. */
#ifndef SS_SERVICE_STACK_INTERNAL_H
#define SS_SERVICE_STACK_INTERNAL_H

#include "service/stack.h"

#define SS_EPHEMERAL_LO 32768u /* Linux's default ip_local_port_range */
#define SS_EPHEMERAL_HI 60999u
#define SS_ARP_RETRY_US 1000000u
#define SS_ARP_TRIES 3

static inline struct ss_sconn *sconn_of(struct ss_tcp_conn *c)
{
	return (struct ss_sconn *)(void *)c; /* tcp is the first member */
}

/* stack_conn.c */
void stack_conn_dirty(struct ss_stack *s, struct ss_sconn *sc);
struct ss_sconn *stack_conn_lookup_handle(struct ss_stack *s, struct ss_app *a, uint32_t slot,
					  uint32_t gen);
int stack_conn_connect(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t ip,
		       uint16_t port, uint64_t cookie);
void stack_conn_app_close(struct ss_stack *s, struct ss_sconn *sc, bool abort);
void stack_conn_release_slot(struct ss_stack *s, struct ss_sconn *sc);
void stack_conn_app_gone(struct ss_stack *s, struct ss_app *a);
void stack_conns_flush(struct ss_stack *s);
void stack_timers_run(struct ss_stack *s);
void stack_arp_poll(struct ss_stack *s);
void stack_listener_abort_syn(struct ss_stack *s, uint32_t listener);

/* stack_app.c */
bool stack_conn_post(struct ss_stack *s, struct ss_sconn *sc);
void stack_pending_unlink(struct ss_stack *s, struct ss_sconn *sc);
void stack_post_simple(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
		       uint32_t conn, uint32_t gen, uint16_t error, uint32_t arg,
		       uint64_t cookie);

#endif
