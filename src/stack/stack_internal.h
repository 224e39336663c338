/* stack_internal.h - what stack_conn.c and stack_app.c share; not for other files. */
#ifndef SS_SERVICE_STACK_INTERNAL_H
#define SS_SERVICE_STACK_INTERNAL_H

#include "stack/stack.h"

#define SS_EPHEMERAL_LO 32768u /* Linux's default ip_local_port_range */
#define SS_EPHEMERAL_HI 60999u
#define SS_ARP_RETRY_US 1000000u
#define SS_ARP_TRIES 3

static inline struct ss_sconn *sconn_of(struct ss_tcp_conn *c)
{
	return (struct ss_sconn *)(void *)((uint8_t *)c - offsetof(struct ss_sconn, tcp));
}

/* stack_conn.c */
void stack_conn_dirty(struct ss_stack *s, struct ss_sconn *sc);
struct ss_sconn *stack_conn_lookup_handle(struct ss_stack *s, struct ss_app *a, uint32_t slot,
					  uint32_t gen);
int stack_conn_connect(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		       const struct ss_shm_cmd *cmd);
void stack_conn_app_close(struct ss_stack *s, struct ss_sconn *sc, bool abort);
void stack_conn_release_slot(struct ss_stack *s, struct ss_sconn *sc);
void stack_conn_app_gone(struct ss_stack *s, struct ss_app *a);
void stack_conns_flush(struct ss_stack *s);
struct ss_sconn *stack_conns_alloc(size_t n);
void stack_conns_free(struct ss_sconn *conns, size_t n);
void stack_conn_timers_run(struct ss_stack *s);
void stack_arp_poll(struct ss_stack *s);
void stack_listener_abort_syn(struct ss_stack *s, uint32_t listener);
void stack_conn_set_handle(struct ss_stack *s, struct ss_sconn *sc, struct ss_app *a,
			   uint32_t slot, uint16_t ctx);
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
/* stack_wake_slow_path - wakes the slow-path thread (reclaim_fd, app.h) for
 * @a: to reclaim it, or to populate its region further; @why for the log
 * if the eventfd write fails. */
void stack_wake_slow_path(struct ss_stack *s, const struct ss_app *a, const char *why);
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

/* stack_cookie.c: SYN cookies (src/tcp/tcp_cookie.h). */
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

/* stack_listen.c: port entries (bind/listen/SO_REUSEPORT/fork members). */
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
unsigned stack_listeners_inherit(struct ss_stack *s, struct ss_app *parent,
				 struct ss_app *child, uint16_t ctx, unsigned *full);
void stack_listeners_app_gone(struct ss_stack *s, struct ss_app *a);

/* stack_fork.c: connections shared across fork. */
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

/* stack_cc.c: congestion control (control loop and pacing). */
int stack_cc_init(struct ss_stack *s);
void stack_cc_fini(struct ss_stack *s);
/* Around ss_tcp_output() in the flush: budget before, charge and arm after.
 * Inline tests for the flushes that need neither (nothing to send, nothing
 * sent, intervals running): the _slow halves do the work. */
void stack_cc_before_output_slow(struct ss_stack *s, struct ss_sconn *sc);
void stack_cc_after_output_slow(struct ss_stack *s, struct ss_sconn *sc);

#define CC_QUANTUM_NS 100000u        /* a release sends ~100 us of the rate ... */
#define CC_QUANTUM_MAX 65536u        /* ... at most 64 KiB, at least 2 MSS */

/* Bytes a pacer release lets the flow send: ~CC_QUANTUM_NS of its rate
 * (or its cap), so releases are not more frequent than a sleeping thread
 * can serve; charged exactly afterwards, so the size only shapes bursts. */
static inline uint32_t stack_cc_quantum(const struct ss_sconn *sc)
{
	const struct ss_pacer_flow *pf = &sc->cc.pf;
	uint64_t rate = pf->rate ? pf->rate : UINT64_MAX;
	uint64_t q, lo = 2u * sc->tcp.f.mss;

	if (pf->group && pf->group->tb.rate < rate)
		rate = pf->group->tb.rate;
	q = rate / (1000000000u / CC_QUANTUM_NS);
	return (uint32_t)(q < lo ? lo : q > CC_QUANTUM_MAX ? CC_QUANTUM_MAX : q);
}

/* The pacer group @sc's sends count against: its owner's cap, else its
 * host's aggregate while it is a shared member (cc-share host).  An orphan
 * (no owner) keeps the group it has. */
static inline struct ss_pacer_group *stack_cc_group_want(const struct ss_sconn *sc)
{
	return sc->app->cap ? sc->app->cap : sc->cc.host_grp;
}

/* The budget part of stack_cc_before_output(), for a connection whose
 * control has started and whose group is the one it wants. */
static inline void stack_cc_budget(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_pacer_flow *pf = &sc->cc.pf;

	if (!sc->cc.paced || c->tx_budget != 0 || !ss_tcp_tx_unsent(c))
		return;
	if (ss_pacer_may_send(pf, s->now_us * 1000))
		c->tx_budget = stack_cc_quantum(sc);
}

static inline void stack_cc_before_output(struct ss_stack *s, struct ss_sconn *sc)
{
	/* Not started yet, a new group (owner's cap, host's aggregate), or
	 * a paced flow with data and no budget (ss_tcp_tx_unsent(): a FIN
	 * alone needs none). */
	if (!sc->cc.ops) {
		if (s->ccp)
			stack_cc_before_output_slow(s, sc);
		return;
	}
	if (sc->app && stack_cc_group_want(sc) != sc->cc.pf.group) {
		stack_cc_before_output_slow(s, sc);
		return;
	}
	stack_cc_budget(s, sc);
}

/* True when stack_cc_before_output() has nothing to do for a connection
 * with nothing unsent (the paced budget is only for data waiting); then,
 * for one with data, all it does is stack_cc_before_output_settled(). */
static inline bool stack_cc_before_output_idle(const struct ss_stack *s, const struct ss_sconn *sc)
{
	if (!sc->cc.ops)
		return !s->ccp;
	return !sc->app || stack_cc_group_want(sc) == sc->cc.pf.group;
}

/* stack_cc_before_output() where stack_cc_before_output_idle() held (the
 * connection did not change since): without its tests again. */
static inline void stack_cc_before_output_settled(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->cc.ops)
		stack_cc_budget(s, sc);
}

/* stack_cc_unstretch - @sc's stretched interval ends at the usual length
 * from now (its window held it back, or it lost a segment). */
void stack_cc_unstretch(struct ss_stack *s, struct ss_sconn *sc);

/* always_inline: the flush is at gcc's inlining limits, and this hook
 * called costs a frame per segment (+25 per request when gcc outlined it). */
static inline __attribute__((always_inline)) void stack_cc_after_output(struct ss_stack *s,
									   struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_pacer_flow *pf = &sc->cc.pf;
	uint32_t sent;

	if (!sc->cc.ops)
		return;
	/* A stretched interval ends at the first output its window stopped,
	 * or at a loss (stack_cc.c cc_interval()). */
	if (__builtin_expect(sc->cc.stretched, 0) &&
	    (c->cc.win_limited != sc->cc.prev.win_limited ||
	     c->cc.fast_retx != sc->cc.prev.fast_retx || c->cc.timeouts != sc->cc.prev.timeouts))
		stack_cc_unstretch(s, sc);
	sent = c->cc.sent_bytes - sc->cc.charged;
	if (!c->budget_hit && (sc->cc.shared || ss_timer_armed(&sc->cc.timer))) {
		/* Nothing to schedule, the intervals run: all the slow half
		 * would do is the charge (the group's bucket, the flow's
		 * rate). */
		if (sent) {
			if (pf->group)
				ss_pacer_charge_u32(&s->pacer, pf, sent, s->now_us * 1000);
			else if (sc->cc.paced)
				ss_pacer_charge_rate(&s->pacer, pf, sent, s->now_us * 1000);
			sc->cc.charged = c->cc.sent_bytes;
		}
		if (sc->cc.paced)
			c->tx_budget = 0; /* what is left of a release is not kept */
		return;
	}
	if (!sent && !c->budget_hit && c->f.snd_max == c->f.snd_una) {
		if (sc->cc.paced)
			c->tx_budget = 0;
		return;
	}
	stack_cc_after_output_slow(s, sc);
}
/* Due control intervals and pacer releases (marks connections dirty). */
void stack_cc_run_intervals(struct ss_stack *s);
void stack_cc_run_pacer(struct ss_stack *s);

static inline void stack_cc_run(struct ss_stack *s)
{
	if (!s->ccp)
		return;
	if (ss_timer_wheel_due(&s->cc_wheel, s->now_us) ||
	    ss_timer_wheel_due(&s->cc_host_wheel, s->now_us))
		stack_cc_run_intervals(s);
	if (!ss_pacer_idle(&s->pacer, s->now_us * 1000))
		stack_cc_run_pacer(s);
}
/* The connection leaves its application (slot released) / goes away. */
void stack_cc_conn_unowned(struct ss_stack *s, struct ss_sconn *sc);
void stack_cc_conn_free(struct ss_stack *s, struct ss_sconn *sc);
/* Earliest control-interval or pacer deadline, us (UINT64_MAX: none). */
uint64_t stack_cc_next_us(const struct ss_stack *s);

/* stack_loop.c: the loopback queue (segments to our own address). */
int stack_loop_init(struct ss_stack *s);
void stack_loop_fini(struct ss_stack *s);
/* A slot for one frame (*cap bytes), or NULL when the queue is full
 * (counted in drop_loopback_full); stack_loop_commit() queues it. */
uint8_t *stack_loop_reserve(struct ss_stack *s, size_t *cap);
void stack_loop_commit(struct ss_stack *s, size_t len);
/* After the round's flush: feed the queue back and flush, a few passes. */
bool stack_loop_run(struct ss_stack *s);

static inline bool stack_loop_pending(const struct ss_stack *s)
{
	return s->loop.head != s->loop.tail;
}

void stack_delack_run(struct ss_stack *s);

/* Due connection timers, delayed ACKs, control intervals and pacer releases. */
static inline void stack_timers_run(struct ss_stack *s)
{
	if (ss_timer_wheel_due(&s->wheel, s->now_us))
		stack_conn_timers_run(s);
	for (unsigned i = 0; i < SS_TCP_DELACK_STEPS; i++)
		if (s->delack_q[i].next->deadline_us <= s->now_us) { /* a sentinel's: UINT64_MAX */
			stack_delack_run(s);
			break;
		}
	stack_cc_run(s);
}

/* stack_app.c */
bool stack_conn_post(struct ss_stack *s, struct ss_sconn *sc);
void stack_pending_unlink(struct ss_stack *s, struct ss_sconn *sc);
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

#endif
