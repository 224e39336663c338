/* event.c - the event side of a context: validate and apply service events, poll, wait, arm. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

/* ss_event.cmd_op reports the service's op number as is. */
#define SAME_OP(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME_OP(SS_OP_LISTEN, SS_CMD_LISTEN) &&
	       SAME_OP(SS_OP_LISTEN_CLOSE, SS_CMD_LISTEN_CLOSE) &&
	       SAME_OP(SS_OP_CONNECT, SS_CMD_CONNECT) && SAME_OP(SS_OP_SEND, SS_CMD_TX) &&
	       SAME_OP(SS_OP_RECV_DONE, SS_CMD_RX_DONE) &&
	       SAME_OP(SS_OP_SHUTDOWN, SS_CMD_SHUTDOWN) &&
	       SAME_OP(SS_OP_CLOSE, SS_CMD_CLOSE) && SAME_OP(SS_OP_ABORT, SS_CMD_ABORT) &&
	       SAME_OP(SS_OP_BIND, SS_CMD_BIND) && SAME_OP(SS_OP_LISTEN_ARM, SS_CMD_LISTEN_ARM) &&
	       SAME_OP(SS_OP_INHERIT, SS_CMD_INHERIT) && SAME_OP(SS_OP_ADOPT, SS_CMD_ADOPT) &&
	       SAME_OP(SS_OP_RELEASE, SS_CMD_RELEASE) &&
	       SAME_OP(SS_OP_LISTEN_STOP, SS_CMD_LISTEN_STOP),
	       "public op numbers match shm/abi.h");

/*
 * Every event is checked before it touches any state (shm/abi.h: the
 * region is shared, the header is the only thing we trust after attach):
 * the type, the slot against max_conns, the generation against the live
 * handle, byte counts against what the stream positions allow, ring
 * offsets against the region.  A failing event is dropped and counted in
 * st.ev_bogus; nothing aborts.
 */

static struct ss_conn *conn_lookup(struct ss_ctx *ctx, const struct ss_shm_ev *e)
{
	struct ss_conn *c;

	if (e->conn >= ctx->app->max_conns)
		return NULL;
	c = ctx->conns[e->conn];
	return c && c->gen == e->gen ? c : NULL;
}

/* A ring of @size bytes at @off must lie in the connection buffer area. */
static bool buf_ok(const struct ss_app *app, uint64_t off, uint32_t size)
{
	return off >= app->buf_off && off <= app->region_size &&
	       app->region_size - off >= size;
}

/* The size of the ring at @off: a slot's small one (shm/abi.h "Small rings
 * that grow", in its own area before buf_off), else @large; 0 where @off
 * is in neither area. */
static uint32_t ring_size_at(const struct ss_app *app, uint64_t off, uint32_t large)
{
	if (off >= app->buf_off)
		return buf_ok(app, off, large) ? large : 0;
	if (app->small_off && off >= app->small_off &&
	    off + SS_SHM_SMALL_RING <= app->buf_off && large > SS_SHM_SMALL_RING)
		return SS_SHM_SMALL_RING;
	return 0;
}

static void out_endpoints(struct ss_event *out, const struct ss_conn *c)
{
	out->local_ip = c->local_ip;
	out->remote_ip = c->remote_ip;
	out->local_port = c->local_port;
	out->remote_port = c->remote_port;
}

/* CONNECTED (success) or ACCEPTED: create the handle.  false = bogus. */
static bool ev_open(struct ss_ctx *ctx, const struct ss_shm_ev *e,
		    struct ss_event *out)
{
	struct ss_app *app = ctx->app;
	struct ss_conn *c;

	uint32_t rx_size = ring_size_at(app, e->rx_off, app->rxbuf_size);
	uint32_t tx_size = ring_size_at(app, e->tx_off, app->txbuf_size);

	if (e->conn >= app->max_conns || ctx->conns[e->conn] || !rx_size || !tx_size)
		return false;
	c = ss_conn_new(ctx);
	if (!c) {
		/* Out of memory: refuse the connection. */
		struct ss_shm_cmd cmd = {
			.op = SS_CMD_ABORT, .conn = e->conn, .gen = e->gen,
		};

		ss_cmd_post(ctx, &cmd);
		out->error = ENOMEM;
		return true;
	}
	c->slot = e->conn;
	c->gen = e->gen;
	c->state = CONN_OPEN;
	c->rx_buf = (uint8_t *)app->region + e->rx_off;
	c->tx_buf = (uint8_t *)app->region + e->tx_off;
	c->rx_size = rx_size;
	c->tx_size = c->tx_size_svc = tx_size;
	c->local_ip = e->local_ip;
	c->remote_ip = e->remote_ip;
	c->local_port = e->local_port;
	c->remote_port = e->remote_port;
	ctx->conns[e->conn] = c;
	out->conn = c;
	out_endpoints(out, c);
	return true;
}

/* ADOPTED or RETURNED: a connection moved in from another process of
 * ours, with its stream positions (shm/abi.h).  false = bogus. */
static bool ev_adopted(struct ss_ctx *ctx, const struct ss_shm_ev *e, struct ss_event *out)
{
	const struct ss_app *app = ctx->app;
	struct ss_conn *c;

	if (e->arg2 - e->arg > ring_size_at(app, e->rx_off, app->rxbuf_size) ||
	    e->arg4 - e->arg3 > ring_size_at(app, e->tx_off, app->txbuf_size))
		return false;
	if (!ev_open(ctx, e, out))
		return false;
	c = out->conn;
	if (!c)
		return true; /* out of memory: ev_open refused it */
	c->rx_head = e->arg;
	c->rx_tail = e->arg2;
	c->tx_acked = e->arg3;
	c->tx_tail = e->arg4;
	c->peer_fin = e->flags & SS_EVF_PEER_FIN;
	c->shut_wr = e->flags & SS_EVF_SHUT_WR;
	c->fin_acked = e->flags & SS_EVF_FIN_ACKED;
	if (e->flags & SS_EVF_DEAD) {
		c->state = CONN_DEAD;
		c->error = e->error ? e->error : ECONNRESET;
	}
	out->error = 0;
	return true;
}

/* Apply one event; returns 1 when @out holds an event for the application,
 * 0 when it was consumed internally, -1 when it was bogus. */
static int ev_apply(struct ss_ctx *ctx, const struct ss_shm_ev *e,
		    struct ss_event *out)
{
	struct ss_conn *c = NULL;

	memset(out, 0, sizeof(*out));
	out->error = e->error;
	out->cookie = e->cookie;
	switch (e->type) {
	case SS_EV_LISTEN:
		out->type = SS_EVENT_LISTENING;
		out->listener = e->conn;
		out->local_port = e->local_port;
		out->bytes = (e->flags & SS_EVF_MEMBER) != 0; /* unasked: shared, see abi.h */
		return 1;
	case SS_EV_CONNECTED:
		out->type = SS_EVENT_CONNECTED;
		if (e->error)
			return 1;
		return ev_open(ctx, e, out) ? 1 : -1;
	case SS_EV_ACCEPTED:
		out->type = SS_EVENT_ACCEPTED;
		out->error = 0;
		return ev_open(ctx, e, out) ? 1 : -1;
	case SS_EV_LISTEN_STOPPED:
		out->type = SS_EVENT_LISTEN_STOPPED;
		out->listener = e->conn;
		out->local_port = e->local_port;
		out->bytes = e->arg != 0;
		return 1;
	case SS_EV_BOUND:
		out->type = SS_EVENT_BOUND;
		out->listener = e->conn;
		out->local_port = e->local_port;
		return 1;
	case SS_EV_INHERITED:
		out->type = SS_EVENT_INHERITED;
		out->bytes = e->arg2;
		out->listener = e->arg;
		return 1;
	case SS_EV_ADOPTED:
	case SS_EV_RETURNED:
		out->type = SS_EVENT_ADOPTED;
		out->bytes = e->type == SS_EV_RETURNED; /* unasked: handed back */
		return ev_adopted(ctx, e, out) ? 1 : -1;
	case SS_EV_REF_GONE:
		/* Public form: MOVED without a handle, naming the reference. */
		out->type = SS_EVENT_MOVED;
		out->listener = e->arg;
		out->cookie = (uint64_t)e->conn << 32 | e->gen;
		return 1;
	case SS_EV_MOVED:
		c = conn_lookup(ctx, e);
		if (!c)
			return -1;
		out->type = SS_EVENT_MOVED;
		out->conn = c;
		out_endpoints(out, c);
		if (e->flags & SS_EVF_HELD) {
			/* The reference we keep: the adopter's handle. */
			out->bytes = 1;
			out->listener = e->arg;
			out->cookie = (uint64_t)e->arg2 << 32 | e->arg3;
		}
		c->state = CONN_DEAD;
		c->error = EBADF;
		ss_conn_bury(c);
		return 1;
	case SS_EV_CMD_ERROR:
		out->type = SS_EVENT_CMD_ERROR;
		out->cmd_op = e->arg < SS_CMD_OP_MAX ? (int)e->arg : 0;
		out->listener = e->conn;
		out->conn = conn_lookup(ctx, e);
		out->cookie = e->cookie; /* a failed ss_connect() is matched by its cookie */
		return 1;
	case SS_EV_RX: case SS_EV_TX_ACKED: case SS_EV_PEER_FIN: case SS_EV_FIN_ACKED:
	case SS_EV_RESET: case SS_EV_ERROR: case SS_EV_CLOSED: case SS_EV_RX_GROWN:
		c = conn_lookup(ctx, e);
		if (!c)
			return -1;
		break;
	default:
		return -1;
	}

	out->conn = c;
	out->cookie = 0;
	switch (e->type) {
	case SS_EV_RX: {
		uint32_t used = c->rx_tail - c->rx_head, mask = c->rx_size - 1;

		if (e->arg == 0 || c->peer_fin || e->arg > c->rx_size - used)
			return -1;
		/* The service moved the origin: only ever with nothing unread. */
		if (((c->rx_tail - c->rx_origin) & mask) != e->arg3) {
			if (used || e->arg3 > mask)
				return -1;
			c->rx_origin = c->rx_tail - e->arg3;
		}
		/* Its first byte is at arg3 now (checked, or the origin moved
		 * there).  The program reads it after this poll's other
		 * events: the ring line (and its page walk) is on its way
		 * meanwhile. */
		__builtin_prefetch(c->rx_buf + e->arg3, 0, 3);
		c->rx_tail += e->arg;
		/* More than half the small ring unread: ask for the large one
		 * (shm/abi.h "Small rings that grow"). */
		if (__builtin_expect(used + e->arg > c->rx_size / 2, 0) &&
		    c->rx_size < c->ctx->app->rxbuf_size && !c->shared)
			c->rx_grow = true;
		if (c->state != CONN_OPEN || c->closing)
			return 0;
		out->type = SS_EVENT_DATA;
		out->bytes = e->arg;
		return 1;
	}
	case SS_EV_RX_GROWN: {
		/* The receive ring is the slot's large one from now on; the
		 * service moved it with nothing unread (shm/abi.h). */
		const struct ss_app *app = c->ctx->app;

		if (c->rx_tail != c->rx_head || c->rx_size >= app->rxbuf_size)
			return -1;
		c->rx_buf = ss_slot_rx_large(app, c->slot);
		c->rx_size = app->rxbuf_size;
		c->rx_grow = false;
		return 0;
	}
	case SS_EV_TX_ACKED: {
		uint32_t posted = c->tx_tail - c->tx_pend;

		if (e->arg == 0 || e->arg > (uint32_t)(posted - c->tx_acked))
			return -1;
		c->tx_acked += e->arg;
		if (c->state != CONN_OPEN)
			return 0;
		out->type = SS_EVENT_SENT;
		out->bytes = e->arg;
		return 1;
	}
	case SS_EV_FIN_ACKED:
		/* Only after our shutdown, once; the application is told
		 * nothing (the state is in the handle: Linux's CLOSE once the
		 * peer's FIN is in too). */
		if (c->fin_acked || !c->shut_wr)
			return -1;
		c->fin_acked = true;
		return 0;
	case SS_EV_PEER_FIN:
		if (c->peer_fin)
			return -1;
		c->peer_fin = true;
		if (c->state != CONN_OPEN || c->closing)
			return 0;
		out->type = SS_EVENT_PEER_CLOSED;
		return 1;
	case SS_EV_RESET:
	case SS_EV_ERROR:
		if (c->state != CONN_OPEN)
			return -1;
		c->state = CONN_DEAD;
		c->error = e->error ? e->error :
			   e->type == SS_EV_RESET ? ECONNRESET : EIO;
		c->tx_pend = c->rx_done = 0;
		ss_conn_unmark_dirty(c);
		out->type = e->type == SS_EV_RESET ? SS_EVENT_RESET : SS_EVENT_ERROR;
		out->error = c->error;
		return 1;
	default: /* SS_EV_CLOSED */
		out->type = SS_EVENT_CLOSED;
		out->error = c->error;
		ss_conn_bury(c);
		return 1;
	}
}

/* Undo ss_ctx_arm: the eventfd may hold a count, read it away. */
static void ctx_disarm(struct ss_ctx *ctx)
{
	uint64_t v;
	ssize_t n;

	__atomic_store_n(&ctx->arx.r->sleeping, 0, __ATOMIC_RELAXED);
	n = ss_sys_read(ctx->evfd, &v, sizeof(v)); /* non-blocking */
	(void)n;
	ctx->armed = false;
}

static int ctx_poll(struct ss_ctx *ctx, struct ss_event *evs, int max, bool keep_armed)
{
	uint32_t avail;
	int n = 0;

	if (max < 0 || (!evs && max > 0)) {
		errno = EINVAL;
		return -1;
	}
	ss_ctx_reap(ctx);
	ss_ctx_flush_quiet(ctx);
	if (ctx->armed && !keep_armed) {
		ctx_disarm(ctx);
	} else if (ctx->armed && !__atomic_load_n(&ctx->arx.r->sleeping, __ATOMIC_RELAXED)) {
		/* The service signalled the sleeper (it clears the flag, then
		 * writes the eventfd): we take the events, so take the signal
		 * too and arm again.  Events published after the fence are
		 * either seen below or signalled anew. */
		uint64_t v;
		ssize_t r = ss_sys_read(ctx->evfd, &v, sizeof(v)); /* non-blocking */

		(void)r;
		__atomic_store_n(&ctx->arx.r->sleeping, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	avail = ring_arx_avail(&ctx->arx);
	while (n < max && avail) {
		/* One copy of the slot: nothing is re-read from shared memory
		 * between validation and use. */
		struct ss_shm_ev e = *ring_arx_peek(&ctx->arx);
		int rc;

		ring_arx_pop(&ctx->arx);
		avail--;
		if (e.type == SS_EV_RX && (e.flags & SS_EVF_TX_ACKED)) {
			/* Two events in one slot: RX now, then its TX_ACKED
			 * (next, or first in the next poll when this one is
			 * full), as the service would have posted them apart. */
			ring_arx_push_front(&ctx->arx, &(struct ss_shm_ev){ .type = SS_EV_TX_ACKED,
									  .conn = e.conn, .gen = e.gen,
									  .arg = e.arg2 });
			avail++;
			e.flags &= (uint8_t)~SS_EVF_TX_ACKED;
		}
		ctx->st.events++;
		rc = ev_apply(ctx, &e, &evs[n]);
		if (rc > 0)
			n++;
		else if (rc < 0)
			ctx->st.ev_bogus++;
	}
	ring_arx_release(&ctx->arx);
	return n;
}

int ss_poll(struct ss_ctx *ctx, struct ss_event *evs, int max)
{
	return ctx_poll(ctx, evs, max, false);
}

int ss_poll_keep_armed(struct ss_ctx *ctx, struct ss_event *evs, int max)
{
	return ctx_poll(ctx, evs, max, true);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Set arx->sleeping, then re-check: true when events are already there
 * (sleeping cleared again).  The full fence orders our store of sleeping
 * before our load of prod; the service publishes prod, fences, then reads
 * sleeping: one of us sees the other. */
static bool ctx_sleep_prepare(struct ss_ctx *ctx)
{
	__atomic_store_n(&ctx->arx.r->sleeping, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ring_arx_avail(&ctx->arx)) {
		__atomic_store_n(&ctx->arx.r->sleeping, 0, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

int ss_wait(struct ss_ctx *ctx, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;

	for (;;) {
		bool backlog = ss_ctx_flush_quiet(ctx) < 0;
		struct pollfd pfd = { .fd = ctx->evfd, .events = POLLIN };
		int64_t left = -1;
		int wait, pr, err;

		if (ring_arx_avail(&ctx->arx))
			return 1;
		if (deadline >= 0) {
			left = deadline - now_ms();
			if (left <= 0)
				return 0;
		}
		wait = left < 0 || left > 1000000 ? (left < 0 ? -1 : 1000000) : (int)left;
		/* Counts still waiting for command ring room: retry soon. */
		if (backlog && (wait < 0 || wait > 1))
			wait = 1;
		if (ctx_sleep_prepare(ctx))
			return 1;
		ctx->armed = true;
		pr = ss_sys_poll(&pfd, 1, wait);
		err = errno;
		ctx_disarm(ctx);
		if (pr < 0) {
			errno = err;
			return -1;
		}
		if (pr > 0)
			ctx->st.wakeups++;
	}
}

int ss_ctx_fd(const struct ss_ctx *ctx)
{
	return ctx->evfd;
}

int ss_ctx_arm(struct ss_ctx *ctx)
{
	ss_ctx_flush_quiet(ctx);
	if (ring_arx_avail(&ctx->arx) || ctx_sleep_prepare(ctx))
		return 1;
	ctx->armed = true;
	return 0;
}

void ss_ctx_stats(const struct ss_ctx *ctx, struct ss_ctx_stats *out)
{
	*out = ctx->st;
}
