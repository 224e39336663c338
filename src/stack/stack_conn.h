/* stack_conn.h - connections of the stack (stack_conn.c): their records,
 * lists, timers, output callbacks and the two halves of a flush around
 * the send step (collect before the post, settle after it). */
#ifndef SS_STACK_STACK_CONN_H
#define SS_STACK_STACK_CONN_H

#include "stack/stack.h"

#define SS_EPHEMERAL_LO 32768u /* Linux's default ip_local_port_range */
#define SS_EPHEMERAL_HI 60999u
#define SS_ARP_RETRY_US 1000000u
#define SS_ARP_TRIES 3

static inline struct ss_sconn *sconn_of(struct ss_tcp_conn *c)
{
	return (struct ss_sconn *)(void *)((uint8_t *)c - offsetof(struct ss_sconn, tcp));
}

void stack_conn_dirty(struct ss_stack *s, struct ss_sconn *sc);
struct ss_sconn *stack_conn_lookup_handle(struct ss_stack *s, struct ss_app *a, uint32_t slot,
					  uint32_t gen);
int stack_conn_connect(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		       const struct ss_shm_cmd *cmd);
void stack_conn_app_close(struct ss_stack *s, struct ss_sconn *sc, bool abort);
/* stack_conn_cancel - SS_CMD_ABORT with SS_CMDF_CONNECTING (shm/abi.h): the
 * app's connection still opening under CONNECT cookie @cookie goes, with
 * no event. */
void stack_conn_cancel(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint64_t cookie);
void stack_conn_release_slot(struct ss_stack *s, struct ss_sconn *sc);
void stack_conn_app_gone(struct ss_stack *s, struct ss_app *a);
struct ss_sconn *stack_conns_alloc(size_t n);
void stack_conns_free(struct ss_sconn *conns, size_t n);
void stack_conn_timers_run(struct ss_stack *s);
void stack_delack_run(struct ss_stack *s);
/* The earliest deadline on delayed-ACK queue @i (UINT64_MAX: empty; the
 * queue's head is a sentinel timer that is never due). */
static inline uint64_t stack_delack_head(const struct ss_stack *s, unsigned i)
{
	return SS_LIST_ENTRY(s->delack_q[i].link.next, struct ss_timer, link)->deadline_us;
}
void stack_arp_poll(struct ss_stack *s);
void stack_listener_abort_syn(struct ss_stack *s, uint32_t listener);
void stack_conn_set_handle(struct ss_stack *s, struct ss_sconn *sc, struct ss_app *a,
			   uint32_t slot, uint16_t ctx);

/*
 * The flush of one dirty connection is: the send step (stack_send.h), then
 * stack_conn_collect() (the engine's events to the connection's pending
 * set; table and orphan upkeep), then the post of those events to its
 * application (stack_app.h), then stack_conn_settle() (freed, or its timer
 * synchronised).  stack_round.c runs the four in that order.
 */
/* Returns true when it left @sc something to post. */
bool stack_conn_collect(struct ss_stack *s, struct ss_sconn *sc);
void stack_conn_settle(struct ss_stack *s, struct ss_sconn *sc);

/* The context's pending list: connections whose events did not fit its
 * event ring (SC_PENDING), retried at every publish. */
void stack_conn_pend(struct ss_sconn *sc);
void stack_conn_unpend(struct ss_sconn *sc);

/* The engine's view of slot @slot's large rings in @a's region, with
 * their home bytes (shm/abi.h ss_shm_ring_home()). */
static inline void stack_slot_rings(const struct ss_app *a, uint32_t slot,
				    struct ss_tcp_ring *rx, struct ss_tcp_ring *tx)
{
	*rx = (struct ss_tcp_ring){ .base = ss_app_rx_ring(a, slot), .size = a->rxbuf_size,
				    .home = ss_shm_ring_home(slot, a->rxbuf_size) };
	*tx = (struct ss_tcp_ring){ .base = ss_app_tx_ring(a, slot), .size = a->txbuf_size,
				    .home = ss_shm_ring_home(slot, a->txbuf_size) };
}

/* ... and the rings a new connection starts on: the small ones where the
 * slot has them (abi.h "Small rings that grow"). */
static inline void stack_slot_start_rings(const struct ss_app *a, uint32_t slot,
					  struct ss_tcp_ring *rx, struct ss_tcp_ring *tx)
{
	uint8_t *srx = ss_app_rx_small(a, slot), *stx = ss_app_tx_small(a, slot);

	stack_slot_rings(a, slot, rx, tx);
	if (srx)
		*rx = (struct ss_tcp_ring){ .base = srx, .size = SS_SHM_SMALL_RING,
					    .home = ss_shm_ring_home(slot, SS_SHM_SMALL_RING) };
	if (stx)
		*tx = (struct ss_tcp_ring){ .base = stx, .size = SS_SHM_SMALL_RING,
					    .home = ss_shm_ring_home(slot, SS_SHM_SMALL_RING) };
}

/* stack_wake_control - wakes the control thread (reclaim_fd, app.h) for
 * @a: to reclaim it, or to populate its region further; @why for the log
 * if the eventfd write fails. */
void stack_wake_control(struct ss_stack *s, const struct ss_app *a, const char *why);
/* stack_conn_emit - the engine's emit callback (emit_arg: the stack). */
int stack_conn_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg);
/* stack_conn_ts_offset - the TSval offset of the connection with ISS @iss. */
uint32_t stack_conn_ts_offset(const struct ss_stack *s, uint32_t iss);
/* stack_conn_passive - a CLOSED connection with ISS @iss for listener
 * member @m, in the flow table, for the SYN (or cookie ACK) @seg in @ip and
 * the Ethernet frame @frame; NULL when a limit is hit (counted). */
struct ss_sconn *stack_conn_passive(struct ss_stack *s, struct ss_lmember *m, const uint8_t *frame,
				    const struct ss_ipv4 *ip, const struct ss_tcp *seg,
				    uint32_t iss);

#endif
