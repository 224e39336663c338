/* stack_app.c - the fast path's side of the application queues: commands in, events out, wake-ups. */
#include "stack/stack_app.h"
#include "stack/stack_cc.h"
#include "stack/stack_conn.h"
#include "stack/stack_fork.h"
#include "stack/stack_listen.h"
#include "stack/stack_loop.h"
#include "stack/stack_opts.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

/* ---- events --------------------------------------------------------------- */

/* Free event slots in @cx's arx ring, or -1 if the app corrupted its index. */
static int64_t arx_free(const struct ss_app *a, struct ss_app_ctx *cx)
{
	/* Pairs with the app's store-release of cons after reading events. */
	uint32_t cons = __atomic_load_n(&cx->arx->cons, __ATOMIC_ACQUIRE);
	uint32_t used = cx->arx_prod - cons;
	if (used > a->arx_slots)
		return -1;
	return a->arx_slots - used;
}

static struct ss_shm_ev *arx_next(const struct ss_app *a, struct ss_app_ctx *cx)
{
	struct ss_shm_ev *ev = &cx->arx_slot[cx->arx_prod & (a->arx_slots - 1)];
	memset(ev, 0, sizeof(*ev));
	cx->arx_prod++;
	cx->kick = true;
	return ev;
}

/* Appends an event of @type for @sc's handle. */
static inline struct ss_shm_ev *conn_ev(const struct ss_app *a, struct ss_app_ctx *cx,
					const struct ss_sconn *sc, uint8_t type)
{
	struct ss_shm_ev *e = arx_next(a, cx);
	e->type = type;
	e->conn = sc->slot;
	e->gen = sc->gen;
	return e;
}

/* The data events, each once there is something to tell: bytes received,
 * bytes acknowledged.  Both (an RPC's request, which acknowledges the last
 * reply) go in one slot: RX with SS_EVF_TX_ACKED and the acknowledged
 * bytes in arg2, which the library reads as RX then TX_ACKED
 * (SS_SHM_VERSION 5: a cache line less per request here, one event less
 * for the application). */
static inline void conn_post_data_events(const struct ss_app *a, struct ss_app_ctx *cx,
					 struct ss_sconn *sc)
{
	if (sc->rx_pending) {
		struct ss_shm_ev *e = conn_ev(a, cx, sc, SS_EV_RX);
		const struct ss_tcp_conn *c = &sc->tcp;

		e->arg = sc->rx_pending;
		/* Where the first byte is (the origin may have moved). */
		e->arg3 = ss_tcp_rx_offset(c, c->f.rx_tail - c->rx_new - sc->rx_pending);
		sc->rx_pending = 0;
		if (sc->acked_pending) {
			e->flags = SS_EVF_TX_ACKED;
			e->arg2 = sc->acked_pending;
			sc->acked_pending = 0;
		}
	} else if (sc->acked_pending) {
		conn_ev(a, cx, sc, SS_EV_TX_ACKED)->arg = sc->acked_pending;
		sc->acked_pending = 0;
	}
}

static void app_mark_broken(struct ss_stack *s, struct ss_app *a)
{
	if (a->broken)
		return;
	a->broken = true;
	s->app_broken = true;
	ss_ctr_inc(s->ctr, SS_CTR_app_bad_ring);
	SS_WARN("app %u: corrupted queue indices: disconnecting it", a->id);
	stack_wake_control(s, a, "reclaim");
}

/* One event for @a's context @ctx, or NULL when it cannot be posted. */
static struct ss_shm_ev *post_one(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
				  uint32_t conn, uint32_t gen, uint16_t error, uint32_t arg,
				  uint64_t cookie)
{
	struct ss_app_ctx *cx = &a->ctx[ctx];
	int64_t fr = arx_free(a, cx);
	s->publish = true;
	if (fr < 0) {
		app_mark_broken(s, a);
		return NULL;
	}
	if (fr == 0) {
		/* Replies to commands cannot wait: the app sized its ring too
		 * small for what it asked.  Counted; the app sees a gap. */
		ss_ctr_inc(s->ctr, SS_CTR_drop_app_event_ring_full);
		return NULL;
	}
	struct ss_shm_ev *ev = arx_next(a, cx);
	ev->type = type;
	ev->conn = conn;
	ev->gen = gen;
	ev->error = error;
	ev->arg = arg;
	ev->cookie = cookie;
	return ev;
}

void stack_post_simple(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
		       uint32_t conn, uint32_t gen, uint16_t error, uint32_t arg, uint64_t cookie)
{
	post_one(s, a, ctx, type, conn, gen, error, arg, cookie);
}

bool stack_post_room(struct ss_stack *s, struct ss_app *a, uint16_t ctx, unsigned n)
{
	(void)s;
	int64_t fr = ctx < a->n_ctx ? arx_free(a, &a->ctx[ctx]) : -1;
	return fr >= (int64_t)n;
}

void stack_post_moved(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t slot,
		      uint32_t gen, const uint32_t ref[3])
{
	struct ss_shm_ev *ev = post_one(s, a, ctx, SS_EV_MOVED, slot, gen, 0, ref ? ref[0] : 0, 0);
	if (!ev || !ref)
		return;
	ev->flags = SS_EVF_HELD;
	ev->arg2 = ref[1];
	ev->arg3 = ref[2];
}

void stack_post_port(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint8_t type,
		     uint32_t id, uint16_t error, uint32_t arg, uint16_t port, uint64_t cookie)
{
	struct ss_shm_ev *ev = post_one(s, a, ctx, type, id, 0, error, arg, cookie);
	if (ev)
		ev->local_port = port;
}

void stack_post_listen_member(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t id,
			      uint32_t backlog, uint16_t port, uint64_t cookie)
{
	struct ss_shm_ev *ev = post_one(s, a, ctx, SS_EV_LISTEN, id, 0, 0, backlog, cookie);
	if (!ev)
		return;
	ev->flags = SS_EVF_MEMBER;
	ev->local_port = port;
}

void stack_post_publish(struct ss_app *a, uint16_t ctx)
{
	struct ss_app_ctx *cx = &a->ctx[ctx];

	/* kick stays set: stack_app_publish() wakes a sleeper as usual. */
	__atomic_store_n(&cx->arx->prod, cx->arx_prod, __ATOMIC_RELEASE);
}

void stack_post_inherited(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint32_t joined,
			  uint32_t held)
{
	struct ss_shm_ev *ev = post_one(s, a, ctx, SS_EV_INHERITED, 0, 0, 0, joined, 0);
	if (ev)
		ev->arg2 = held;
}

static void ev_endpoints(const struct ss_sconn *sc, struct ss_shm_ev *ev)
{
	const struct ss_app *a = sc->app;
	ev->conn = sc->slot;
	ev->gen = sc->gen;
	ev->local_ip = sc->key.local_ip;
	ev->remote_ip = sc->key.remote_ip;
	ev->local_port = sc->key.local_port;
	ev->remote_port = sc->key.remote_port;
	ev->rx_off = (uint64_t)(sc->tcp.rx.base - a->region); /* small or large */
	ev->tx_off = (uint64_t)(sc->tcp.tx.base - a->region);
}

bool stack_conn_fin_acked(const struct ss_sconn *sc)
{
	const struct ss_tcp_flow *f = &sc->tcp.f;

	switch (f->state) {
	case SS_TCPS_FIN_WAIT_2:
	case SS_TCPS_TIME_WAIT:
		return true;
	case SS_TCPS_CLOSED: /* from LAST_ACK or TIME_WAIT, not by an error */
		return (f->flags & SS_TCPF_FIN_SENT) && !sc->tcp.error;
	default:
		return false;
	}
}

void stack_post_moved_in(struct ss_stack *s, struct ss_sconn *sc, uint8_t type, uint8_t flags,
			 uint64_t cookie)
{
	const struct ss_tcp_flow *f = &sc->tcp.f;
	/* The new owner learns the FIN's fate here: no FIN_ACKED later. */
	sc->flags &= (uint8_t)~SC_FIN_ACKED;
	if (stack_conn_fin_acked(sc)) {
		flags |= SS_EVF_FIN_ACKED;
		sc->flags |= SC_FIN_ACKED;
	}
	struct ss_shm_ev *ev = post_one(s, sc->app, sc->ctx, type, 0, 0, (uint16_t)sc->tcp.error,
					f->rx_head, cookie);
	if (!ev)
		return;
	ev_endpoints(sc, ev);
	ev->flags = flags;
	ev->arg2 = f->rx_tail;
	ev->arg3 = f->tx_head;
	ev->arg4 = f->tx_tail;
}

void stack_post_adopted(struct ss_stack *s, struct ss_sconn *sc, uint8_t flags)
{
	stack_post_moved_in(s, sc, SS_EV_ADOPTED, flags, sc->cookie);
}

/* The app closed the handle and the rings are no longer needed. */
static bool conn_releasable(const struct ss_sconn *sc)
{
	enum ss_tcp_state st = sc->tcp.f.state;
	return (sc->flags & SC_APP_CLOSED) &&
	       (st == SS_TCPS_CLOSED || st == SS_TCPS_TIME_WAIT || st == SS_TCPS_FIN_WAIT_2);
}

/*
 * Room for @need events of @sc in its context's ring?  If not, the
 * connection waits on the pending list (or the app is marked broken, its
 * ring indices corrupted).  Either way the events are published this round.
 */
static inline bool conn_ev_room(struct ss_stack *s, struct ss_app *a, struct ss_app_ctx *cx,
				struct ss_sconn *sc, unsigned need)
{
	int64_t fr = arx_free(a, cx);
	s->publish = true; /* posted now, or waits on the pending list */
	if (fr < 0) {
		app_mark_broken(s, a);
		return false;
	}
	if ((uint64_t)fr < need) {
		ss_ctr_inc(s->ctr, SS_CTR_app_event_ring_waits);
		stack_conn_pend(sc);
		return false;
	}
	return true;
}

/*
 * stack_conn_post() of an open connection the app knows, with nothing
 * but data and acknowledged bytes to tell (the usual post): no announce,
 * FIN, error or release to weigh, the same events in the same order.
 */
static bool conn_post_data(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_app *a = sc->app;
	if (!(sc->rx_pending | sc->acked_pending))
		return true;
	struct ss_app_ctx *cx = &a->ctx[sc->ctx];
	if (!conn_ev_room(s, a, cx, sc, 1)) /* one slot for both */
		return false;
	conn_post_data_events(a, cx, sc);
	sc->ev_pending = 0;
	return true;
}

static bool conn_post_general(struct ss_stack *s, struct ss_sconn *sc);

bool stack_conn_post(struct ss_stack *s, struct ss_sconn *sc)
{
	/* ESTABLISHED: no FIN of ours acknowledged, nothing to release;
	 * announced and not waiting: nothing to announce or unlink. */
	if (sc->tcp.f.state == SS_TCPS_ESTABLISHED &&
	    (sc->flags & (SC_ANNOUNCED | SC_PENDING)) == SC_ANNOUNCED &&
	    !(sc->ev_pending & (SS_TCP_EV_PEER_FIN | SS_TCP_EV_RESET | SS_TCP_EV_ERROR)))
		return conn_post_data(s, sc);
	return conn_post_general(s, sc);
}

/* Out of line: its frame is not set up for the usual post. */
static __attribute__((noinline)) bool conn_post_general(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_app *a = sc->app;
	uint8_t ev = sc->ev_pending;
	bool announce = !(sc->flags & SC_ANNOUNCED) &&
			((ev & SS_TCP_EV_CONNECTED) || (!(sc->flags & SC_PASSIVE) &&
							 (ev & (SS_TCP_EV_RESET | SS_TCP_EV_ERROR))));
	bool release = conn_releasable(sc);
	/* Our FIN acknowledged: with the peer's FIN, Linux's CLOSE state
	 * (shutdown() and getpeername() then say ENOTCONN). */
	bool fin_acked = !(sc->flags & (SC_FIN_ACKED | SC_APP_CLOSED)) && stack_conn_fin_acked(sc);
	unsigned need = announce + !!(sc->rx_pending | sc->acked_pending) + fin_acked +
			!!(ev & SS_TCP_EV_PEER_FIN) + !!(ev & (SS_TCP_EV_RESET | SS_TCP_EV_ERROR)) +
			release;

	/* TCP_INFO's state is the engine's, published at every change: a
	 * connection whose state changed always comes here (a change to
	 * ESTABLISHED raises EV_CONNECTED, any other leaves it in another
	 * state), and only one with an application has a record. */
	if (sc->tcp.f.state != sc->info_state)
		stack_cc_publish(s, sc);

	if (sc->flags & SC_PENDING)
		stack_conn_unpend(sc);
	if (need == 0)
		return true;
	/* A passive connection is not the app's business before it is accepted. */
	if ((sc->flags & SC_PASSIVE) && !(sc->flags & SC_ANNOUNCED) && !announce && !release)
		return true;
	struct ss_app_ctx *cx = &a->ctx[sc->ctx];
	if (!conn_ev_room(s, a, cx, sc, need))
		return false;
	struct ss_shm_ev *e;
	if (announce) {
		e = arx_next(a, cx);
		ev_endpoints(sc, e);
		e->cookie = sc->cookie;
		if (sc->flags & SC_PASSIVE) {
			e->type = SS_EV_ACCEPTED;
		} else {
			e->type = SS_EV_CONNECTED;
			e->error = (ev & SS_TCP_EV_CONNECTED) ? 0 : sc->tcp.error;
		}
		sc->flags |= SC_ANNOUNCED;
		if (e->error) {
			/* A failed open hands out no handle: nothing else to tell. */
			sc->ev_pending = 0;
			sc->rx_pending = sc->acked_pending = 0;
			sc->flags |= SC_APP_CLOSED;
			stack_conn_release_slot(s, sc);
			return true;
		}
	}
	conn_post_data_events(a, cx, sc);
	if (fin_acked) {
		conn_ev(a, cx, sc, SS_EV_FIN_ACKED);
		sc->flags |= SC_FIN_ACKED;
	}
	if (ev & SS_TCP_EV_PEER_FIN) {
		conn_ev(a, cx, sc, SS_EV_PEER_FIN);
	}
	if (ev & (SS_TCP_EV_RESET | SS_TCP_EV_ERROR)) {
		conn_ev(a, cx, sc, (ev & SS_TCP_EV_RESET) ? SS_EV_RESET : SS_EV_ERROR)->error =
			sc->tcp.error;
	}
	sc->ev_pending = 0;
	if (release) {
		conn_ev(a, cx, sc, SS_EV_CLOSED);
		stack_conn_release_slot(s, sc);
	}
	return true;
}

/* Publishes every context's new events and wakes the sleeping ones, once. */
bool stack_app_publish(struct ss_stack *s)
{
	bool did = false;
	for (uint32_t i = 0; i < s->n_active; i++) {
		struct ss_app *a = s->active[i];
		for (uint32_t c = 0; c < a->n_ctx; c++) {
			struct ss_app_ctx *cx = &a->ctx[c];
			/* Retry connections whose events did not fit last time. */
			struct ss_sconn *p = cx->pending;
			while (p) {
				struct ss_sconn *next = p->pend_next;
				stack_conn_post(s, p);
				p = next;
			}
			if (!cx->kick)
				continue;
			cx->kick = false;
			did = true;
			/* Pairs with the app's load-acquire of prod. */
			__atomic_store_n(&cx->arx->prod, cx->arx_prod, __ATOMIC_RELEASE);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			/* Untrusted hint: a lying app only loses or gains wake-ups. */
			if (__atomic_load_n(&cx->arx->sleeping, __ATOMIC_RELAXED)) {
				__atomic_store_n(&cx->arx->sleeping, 0, __ATOMIC_RELAXED);
				uint64_t one = 1;
				if (write(cx->efd, &one, sizeof(one)) < 0)
					ss_ctr_inc(s->ctr, SS_CTR_app_kick_failed);
				ss_ctr_inc(s->ctr, SS_CTR_app_kicks);
			}
		}
	}
	return did;
}

/* ---- commands ------------------------------------------------------------- */

static void cmd_error(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		      const struct ss_shm_cmd *cmd, int err)
{
	a->cmd_errors++;
	ss_ctr_inc(s->ctr, SS_CTR_app_cmd_errors);
	stack_post_simple(s, a, ctx, SS_EV_CMD_ERROR, cmd->conn, cmd->gen, (uint16_t)err, cmd->op,
			  cmd->cookie);
}

/* The error of a TX command's RX_DONE part (SS_CMDF_RX_DONE): what the
 * RX_DONE command on its own would have posted. */
__attribute__((noinline, cold)) static void
cmd_rx_done_error(struct ss_stack *s, struct ss_app *a, uint16_t ctx, const struct ss_shm_cmd *cmd,
		  int err)
{
	struct ss_shm_cmd rd = { .op = SS_CMD_RX_DONE, .conn = cmd->conn, .gen = cmd->gen,
				 .arg = cmd->rx_done, .cookie = cmd->cookie };

	cmd_error(s, a, ctx, &rd, err);
}


/* A TX whose bytes start at the home byte of the slot's large transmit
 * ring (SS_CMDF_TX_GROW: shm/abi.h "Small rings that grow").  0, or -1:
 * refused, nothing changed. */
static __attribute__((noinline, cold)) int cmd_tx_grow(struct ss_stack *s, const struct ss_app *a,
						       struct ss_sconn *sc)
{
	struct ss_tcp_ring rx, tx;

	stack_slot_rings(a, sc->slot, &rx, &tx);
	if (sc->tcp.tx.base == tx.base || ss_tcp_tx_grow(&sc->tcp, tx) != 0)
		return -1; /* large already, or bytes not yet acknowledged */
	ss_ctr_inc(s->ctr, SS_CTR_app_tx_grown);
	return 0;
}

/* The application asks for the large receive ring (SS_CMDF_RX_GROW): the
 * ring moves if nothing is unread or out of order now (else a later
 * RX_DONE asks again), and SS_EV_RX_GROWN says so before any data in it. */
static __attribute__((noinline, cold)) void cmd_rx_grow(struct ss_stack *s, struct ss_app *a,
							struct ss_sconn *sc)
{
	struct ss_tcp_ring rx, tx;

	stack_slot_rings(a, sc->slot, &rx, &tx);
	/* The event must go (else the application reads the wrong ring):
	 * without room for it, a later RX_DONE asks again. */
	if (sc->tcp.rx.base == rx.base || !stack_post_room(s, a, sc->ctx, 1) ||
	    ss_tcp_rx_grow(&sc->tcp, rx) != 0)
		return;
	ss_ctr_inc(s->ctr, SS_CTR_app_rx_grown);
	stack_post_simple(s, a, sc->ctx, SS_EV_RX_GROWN, sc->slot, sc->gen, 0, 0, 0);
}

/* @cmd's connection, live (not closed by the application), or NULL after
 * EBADF (for a TX with SS_CMDF_RX_DONE, for both parts). */
static inline __attribute__((always_inline)) struct ss_sconn *
cmd_conn(struct ss_stack *s, struct ss_app *a, uint16_t ctx, const struct ss_shm_cmd *cmd)
{
	struct ss_sconn *sc = stack_conn_lookup_handle(s, a, cmd->conn, cmd->gen);

	if (__builtin_expect(sc && !(sc->flags & SC_APP_CLOSED), 1))
		return sc;
	cmd_error(s, a, ctx, cmd, EBADF);
	if (cmd->op == SS_CMD_TX && (cmd->flags & SS_CMDF_RX_DONE))
		cmd_rx_done_error(s, a, ctx, cmd, EBADF);
	return NULL;
}

/* SS_CMD_TX on @sc, and its SS_CMDF_RX_DONE part; @refuse: its bytes are
 * refused (EINVAL) as a refused SS_CMDF_TX_HOME's are (cmd_run_grow()). */
static inline __attribute__((always_inline)) void cmd_tx(struct ss_stack *s, struct ss_app *a,
							   uint16_t ctx,
							   const struct ss_shm_cmd *cmd,
							   struct ss_sconn *sc, bool refuse)
{
	bool home_refused = refuse ||
			    ((cmd->flags & SS_CMDF_TX_HOME) && ss_tcp_tx_restart(&sc->tcp) != 0);

	if (home_refused || ss_tcp_send(&sc->tcp, cmd->arg) != 0) {
		/* A reset that beat the command explains it best (Linux:
		 * ECONNRESET, then EPIPE); then a bad count (or bytes at the
		 * home byte of a ring that is not empty); then shutdown. */
		bool bad = home_refused || cmd->arg > ss_tcp_tx_space(&sc->tcp);
		int err = sc->tcp.error ? sc->tcp.error : bad ? EINVAL : EPIPE;
		cmd_error(s, a, ctx, cmd, err);
		if (!(cmd->flags & SS_CMDF_RX_DONE))
			return;
		/* The RX_DONE part runs as its own command would. */
		if (ss_tcp_recv_done(&sc->tcp, cmd->rx_done) != 0) {
			cmd_rx_done_error(s, a, ctx, cmd, EINVAL);
			return;
		}
	} else if ((cmd->flags & SS_CMDF_RX_DONE) &&
		   ss_tcp_recv_done(&sc->tcp, cmd->rx_done) != 0) {
		cmd_rx_done_error(s, a, ctx, cmd, EINVAL); /* the TX part stands */
	}
	stack_conn_dirty(s, sc);
}

/* SS_CMD_RX_DONE on @sc. */
static inline __attribute__((always_inline)) void cmd_rx_done(struct ss_stack *s,
								struct ss_app *a, uint16_t ctx,
								const struct ss_shm_cmd *cmd,
								struct ss_sconn *sc)
{
	if (ss_tcp_recv_done(&sc->tcp, cmd->arg) != 0) {
		cmd_error(s, a, ctx, cmd, EINVAL);
		return;
	}
	stack_conn_dirty(s, sc);
}

/*
 * A TX or RX_DONE on live connection @sc that asks for a ring move
 * (shm/abi.h "Small rings that grow"): SS_CMDF_TX_GROW first (refused:
 * the TX is refused as a refused SS_CMDF_TX_HOME is), then the command as
 * usual, then SS_CMDF_RX_GROW (it moves nothing unless the ring is empty,
 * so also after an RX_DONE refused).
 */
static __attribute__((noinline, cold)) void cmd_grow(struct ss_stack *s, struct ss_app *a,
						     uint16_t ctx, const struct ss_shm_cmd *cmd,
						     struct ss_sconn *sc)
{
	struct ss_shm_cmd c = *cmd;

	c.flags &= (uint8_t)~(SS_CMDF_TX_GROW | SS_CMDF_RX_GROW);
	if (c.op == SS_CMD_TX)
		cmd_tx(s, a, ctx, &c, sc,
		       (cmd->flags & SS_CMDF_TX_GROW) && cmd_tx_grow(s, a, sc) != 0);
	else
		cmd_rx_done(s, a, ctx, &c, sc);
	if ((cmd->flags & SS_CMDF_RX_GROW) &&
	    (c.op == SS_CMD_RX_DONE || (c.flags & SS_CMDF_RX_DONE)))
		cmd_rx_grow(s, a, sc);
}

/* Every command but the common TX (cmd_run()). */
static __attribute__((noinline)) void cmd_run_other(struct ss_stack *s, struct ss_app *a,
						     uint16_t ctx, const struct ss_shm_cmd *cmd)
{
	struct ss_sconn *sc;

	switch (cmd->op) {
	case SS_CMD_NOP:
		return;
	case SS_CMD_LISTEN:
		stack_cmd_listen(s, a, ctx, cmd);
		return;
	case SS_CMD_BIND:
		stack_cmd_bind(s, a, ctx, cmd);
		return;
	case SS_CMD_INHERIT:
		stack_cmd_inherit(s, a, ctx);
		return;
	case SS_CMD_LISTEN_CLOSE:
	case SS_CMD_LISTEN_STOP:
	case SS_CMD_LISTEN_ARM:
	case SS_CMD_CONNECT:
	case SS_CMD_ADOPT:
	case SS_CMD_RELEASE: {
		int rc;
		if (cmd->op == SS_CMD_LISTEN_CLOSE)
			rc = stack_cmd_listen_close(s, a, cmd->conn);
		else if (cmd->op == SS_CMD_LISTEN_STOP)
			rc = stack_cmd_listen_stop(s, a, cmd->conn, cmd->arg);
		else if (cmd->op == SS_CMD_LISTEN_ARM)
			rc = stack_cmd_listen_arm(s, a, cmd->conn);
		else if (cmd->op == SS_CMD_ADOPT)
			rc = stack_cmd_adopt(s, a, ctx, cmd);
		else if (cmd->op == SS_CMD_RELEASE)
			rc = stack_cmd_release(s, a, cmd);
		else
			rc = stack_conn_connect(s, a, ctx, cmd);
		if (rc != 0)
			cmd_error(s, a, ctx, cmd, -rc);
		return;
	}
	case SS_CMD_SETOPT:
		if (cmd->flags & SS_CMDF_LISTENER) {
			int rc = stack_listen_setopt(s, a, cmd);

			if (rc != 0)
				cmd_error(s, a, ctx, cmd, -rc);
			return;
		}
		break;
	case SS_CMD_ABORT:
		if (cmd->flags & SS_CMDF_CONNECTING) {
			stack_conn_cancel(s, a, ctx, cmd->cookie);
			return;
		}
		break;
	case SS_CMD_TX:
	case SS_CMD_RX_DONE:
	case SS_CMD_SHUTDOWN:
	case SS_CMD_CLOSE:
		break;
	default:
		cmd_error(s, a, ctx, cmd, EOPNOTSUPP);
		return;
	}
	sc = cmd_conn(s, a, ctx, cmd);
	if (!sc)
		return;
	if (cmd->op == SS_CMD_SETOPT) {
		int rc = stack_conn_setopt(s, sc, cmd->arg, cmd->ip);

		if (rc != 0)
			cmd_error(s, a, ctx, cmd, -rc);
		return;
	}
	if (cmd->op == SS_CMD_TX && (cmd->flags & (SS_CMDF_MORE | SS_CMDF_MORE_END))) {
		/* MSG_MORE on or off from these bytes on; the rest as usual. */
		struct ss_shm_cmd c = *cmd;

		ss_tcp_set_more(&sc->tcp, cmd->flags & SS_CMDF_MORE);
		c.flags &= (uint8_t)~(SS_CMDF_MORE | SS_CMDF_MORE_END);
		if (c.flags & (SS_CMDF_TX_GROW | SS_CMDF_RX_GROW))
			cmd_grow(s, a, ctx, &c, sc);
		else
			cmd_tx(s, a, ctx, &c, sc, false);
		return;
	}
	if ((cmd->flags & (SS_CMDF_TX_GROW | SS_CMDF_RX_GROW)) &&
	    (cmd->op == SS_CMD_TX || cmd->op == SS_CMD_RX_DONE)) {
		cmd_grow(s, a, ctx, cmd, sc);
		return;
	}
	switch (cmd->op) {
	case SS_CMD_TX:
		cmd_tx(s, a, ctx, cmd, sc, false);
		return;
	case SS_CMD_RX_DONE:
		cmd_rx_done(s, a, ctx, cmd, sc);
		return;
	case SS_CMD_SHUTDOWN:
		ss_tcp_shutdown(&sc->tcp, s->now_us);
		stack_conn_dirty(s, sc);
		return;
	case SS_CMD_CLOSE:
	case SS_CMD_ABORT:
		stack_conn_app_close(s, sc, cmd->op == SS_CMD_ABORT);
		return;
	}
}

/* Command @cmd of context @ctx.  The common one, a TX (a reply, with the
 * request's RX_DONE, at the home byte or not), goes straight to its
 * connection; everything else out of line. */
static inline __attribute__((always_inline)) void cmd_run(struct ss_stack *s, struct ss_app *a,
							    uint16_t ctx,
							    const struct ss_shm_cmd *cmd)
{
	if (__builtin_expect(cmd->op == SS_CMD_TX &&
			     !(cmd->flags & (uint8_t)~(SS_CMDF_RX_DONE | SS_CMDF_TX_HOME)), 1)) {
		struct ss_sconn *sc = cmd_conn(s, a, ctx, cmd);

		if (sc)
			cmd_tx(s, a, ctx, cmd, sc, false);
		return;
	}
	cmd_run_other(s, a, ctx, cmd);
}

/* Takes up to the budget of commands from one context. */
unsigned stack_app_take(struct ss_stack *s, struct ss_app *a, uint16_t ctx)
{
	struct ss_app_ctx *cx = &a->ctx[ctx];
	/* Pairs with the app's store-release of prod after writing slots. */
	uint32_t prod = __atomic_load_n(&cx->atx->prod, __ATOMIC_ACQUIRE);
	uint32_t avail = prod - cx->atx_cons;

	if (avail == 0)
		return 0;
	if (avail > a->atx_slots) {
		app_mark_broken(s, a);
		return 0;
	}
	if (avail > s->lim.cmd_budget)
		avail = s->lim.cmd_budget;
	cx->taking = true;
	for (uint32_t i = 0; i < avail && !a->broken; i++) {
		/* Copy first: the app may rewrite the slot while we look at it. */
		struct ss_shm_cmd cmd;
		memcpy(&cmd, &cx->atx_slot[(cx->atx_cons + i) & (a->atx_slots - 1)], sizeof(cmd));
		cmd_run(s, a, ctx, &cmd);
	}
	cx->taking = false;
	cx->atx_cons += avail;
	ss_ctr_add(s->ctr, SS_CTR_app_commands, avail);
	/* Pairs with the app's load-acquire of cons before reusing slots. */
	__atomic_store_n(&cx->atx->cons, cx->atx_cons, __ATOMIC_RELEASE);
	return avail;
}

unsigned stack_app_drain(struct ss_stack *s, struct ss_app *a, uint16_t ctx)
{
	uint32_t rounds = a->atx_slots / (s->lim.cmd_budget ? s->lim.cmd_budget : 1) + 1;
	unsigned n = 0, k;

	/* Not from inside another drain, nor on a ring being taken now. */
	if (s->draining || ctx >= a->n_ctx || a->ctx[ctx].taking || a->broken)
		return 0;
	s->draining = true;
	for (uint32_t r = 0; r < rounds && !a->broken; r++) {
		k = stack_app_take(s, a, ctx);
		n += k;
		if (k == 0)
			break;
	}
	s->draining = false;
	return n;
}

/* ---- applications coming and going ------------------------------------------ */

/*
 * Commands a departed app published before it went are carried out (the
 * data it wrote, its closes), as Linux sends what write() accepted before
 * exit.  Bounded: the app can publish no more than its rings hold.
 */
static void app_drain_commands(struct ss_stack *s, struct ss_app *a)
{
	uint32_t rounds = a->atx_slots / (s->lim.cmd_budget ? s->lim.cmd_budget : 1) + 1;

	for (uint32_t c = 0; c < a->n_ctx; c++)
		for (uint32_t r = 0; r < rounds && !a->broken; r++)
			if (stack_app_take(s, a, (uint16_t)c) == 0)
				break;
}

static void app_teardown(struct ss_stack *s, struct ss_app *a)
{
	if (!a->broken)
		app_drain_commands(s, a);
	stack_fork_app_gone(s, a);
	stack_conn_app_gone(s, a);
	a->n_listeners = 0;
	for (uint32_t c = 0; c < a->n_ctx; c++)
		a->ctx[c].pending = NULL;
}

void stack_apps_resync(struct ss_stack *s, uint32_t gen)
{
	s->reg_gen = gen;
	s->app_broken = false;
	s->n_active = 0;
	for (uint32_t i = 0; i < s->reg->lim.max_apps; i++) {
		struct ss_app *a = &s->reg->apps[i];
		uint32_t st = __atomic_load_n(&a->state, __ATOMIC_ACQUIRE);
		if (st == SS_APP_ACTIVE && !a->broken) {
			s->active[s->n_active++] = a;
		} else if (st == SS_APP_DYING || (st == SS_APP_ACTIVE && a->broken && a->n_conns)) {
			app_teardown(s, a);
			if (st == SS_APP_DYING) {
				__atomic_store_n(&a->state, SS_APP_DEAD, __ATOMIC_RELEASE);
				ss_ctr_inc(s->ctr, SS_CTR_app_detached);
				stack_wake_control(s, a, "reclaim");
			}
		}
	}
}

bool ss_stack_may_sleep(struct ss_stack *s)
{
	if (stack_loop_pending(s) || s->dirty)
		return false;
	if (!s->reg)
		return true;
	/* Doorbells rung during the last sleep are spent: each context may
	 * ring once for the next (abi.h).  Before the flag's store, so a
	 * context that sees it set sees its own latch cleared. */
	for (uint32_t i = 0; i < s->n_active; i++) {
		struct ss_app *a = s->active[i];
		for (uint32_t c = 0; c < a->n_ctx; c++)
			if (__atomic_load_n(&a->ctx[c].atx->sleeping, __ATOMIC_RELAXED))
				__atomic_store_n(&a->ctx[c].atx->sleeping, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&s->reg->status->sleeping[s->fp_index], 1, __ATOMIC_RELEASE);
	/* Dekker with the apps: our flag store before their prod load, their
	 * prod store before our prod load (each side has a full fence). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->reg->gen, __ATOMIC_ACQUIRE) != s->reg_gen)
		goto busy;
	for (uint32_t i = 0; i < s->n_active; i++) {
		struct ss_app *a = s->active[i];
		for (uint32_t c = 0; c < a->n_ctx; c++)
			if (__atomic_load_n(&a->ctx[c].atx->prod, __ATOMIC_ACQUIRE) != a->ctx[c].atx_cons)
				goto busy;
	}
	return true;
busy:
	__atomic_store_n(&s->reg->status->sleeping[s->fp_index], 0, __ATOMIC_RELAXED);
	return false;
}

void ss_stack_woke(struct ss_stack *s)
{
	if (s->reg)
		__atomic_store_n(&s->reg->status->sleeping[s->fp_index], 0, __ATOMIC_RELAXED);
}
