/* conn.c - connection handles: lifetime, zero-copy receive/transmit ring access, shutdown/close/abort. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

/*
 * Stream positions are free-running uint32_t, so every difference below is
 * taken modulo 2^32 and is bounded by the ring size (event handling in
 * event.c rejects counts that would break that).
 *
 * Handle lifetime: a handle is allocated when CONNECTED/ACCEPTED is
 * handled, sits in ctx->conns[slot] while live, moves to the graveyard when
 * CLOSED is handled (so the pointer returned with that event stays unique
 * for the rest of the batch) and to the free list at the start of the
 * next poll.
 */

/* Take the first handle off @h (not empty). */
static struct ss_conn *conn_pop(struct ss_list *h)
{
	struct ss_list *l = ss_list_first(h);

	ss_list_del(l);
	return SS_LIST_ENTRY(l, struct ss_conn, link);
}

void ss_ctx_lists_init(struct ss_ctx *ctx)
{
	ss_list_init(&ctx->dirty);
	ss_list_init(&ctx->graveyard);
	ss_list_init(&ctx->free_list);
}

struct ss_conn *ss_conn_new(struct ss_ctx *ctx)
{
	struct ss_conn *c;

	if (!ss_list_empty(&ctx->free_list))
		c = conn_pop(&ctx->free_list);
	else
		c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	ctx->st.conns++;
	return c;
}

void ss_conn_bury(struct ss_conn *c)
{
	struct ss_ctx *ctx = c->ctx;

	ss_conn_unmark_dirty(c);
	ctx->conns[c->slot] = NULL;
	c->state = CONN_CLOSED;
	ss_list_add_head(&ctx->graveyard, &c->link);
	ctx->st.conns--;
}

void ss_ctx_reap(struct ss_ctx *ctx)
{
	while (!ss_list_empty(&ctx->graveyard))
		ss_list_add_head(&ctx->free_list, &conn_pop(&ctx->graveyard)->link);
}

void ss_ctx_free_conns(struct ss_ctx *ctx)
{
	ss_ctx_reap(ctx);
	while (!ss_list_empty(&ctx->free_list))
		free(conn_pop(&ctx->free_list));
	for (uint32_t i = 0; i < ctx->app->max_conns; i++) {
		free(ctx->conns[i]);
		ctx->conns[i] = NULL;
	}
	ss_list_init(&ctx->dirty);
}

/* Describe @len bytes of a ring of @size bytes from position @pos. */
static void ring_iov(uint8_t *buf, uint32_t size, uint32_t pos, size_t len,
		     struct iovec iov[2])
{
	size_t off = pos & (size - 1);
	size_t first = size - off < len ? size - off : len;

	iov[0].iov_base = buf + off;
	iov[0].iov_len = first;
	iov[1].iov_base = buf;
	iov[1].iov_len = len - first;
}

static bool conn_can_recv(const struct ss_conn *c)
{
	return c->state != CONN_CLOSED && !c->closing;
}

static size_t conn_rx_avail(const struct ss_conn *c)
{
	return conn_can_recv(c) && !c->rx_moved ? (uint32_t)(c->rx_tail - c->rx_head) : 0;
}

size_t ss_recv_peek(struct ss_conn *c, struct iovec iov[2])
{
	size_t n = conn_rx_avail(c);

	ring_iov(c->rx_buf, c->rx_size, c->rx_head - c->rx_origin, n, iov);
	return n;
}

int ss_recv_done(struct ss_conn *c, size_t n)
{
	if (n > conn_rx_avail(c)) {
		errno = EINVAL;
		return -1;
	}
	if (!n)
		return 0;
	if (c->shared && ss_sync_consume(c, (uint32_t)n) < 0) {
		errno = EAGAIN; /* not taken: it moved to another process */
		return -1;
	}
	c->rx_head += (uint32_t)n;
	c->rx_done += (uint32_t)n;
	if (c->state == CONN_OPEN)
		ss_conn_mark_dirty(c);
	return 0;
}

/*
 * A read's release may wait for the next command or sleep (an RPC server's
 * reply then carries it, SS_CMDF_RX_DONE: one command a request instead of
 * two) unless the service may need it for the window it offers: the bytes
 * it counts as used (unread, and read but not reported) over half the
 * ring, or the unreported ones an eighth of it.  Below both, the window it
 * offers is at least half the ring either way.  A shared connection
 * reports at once (other processes read from the same ring).
 */
bool ss_recv_done_due(const struct ss_conn *c)
{
	uint32_t size = c->rx_size;

	return c->shared || c->rx_done >= size / 8 ||
	       (c->rx_tail - c->rx_head) + c->rx_done > size / 2;
}

size_t ss_recv(struct ss_conn *c, void *buf, size_t len)
{
	struct iovec iov[2];
	size_t n = ss_recv_peek(c, iov), a, b;

	if (n > len)
		n = len;
	a = iov[0].iov_len < n ? iov[0].iov_len : n;
	b = n - a;
	memcpy(buf, iov[0].iov_base, a);
	if (b)
		memcpy((uint8_t *)buf + a, iov[1].iov_base, b);
	if (ss_recv_done(c, n) < 0)
		return 0; /* the connection moved away meanwhile (fork) */
	return n;
}

/* 0 when sending is allowed, else the errno that refuses it. */
static int conn_send_error(const struct ss_conn *c)
{
	if (c->state == CONN_DEAD)
		return c->error ? c->error : EPIPE;
	if (c->state != CONN_OPEN || c->shut_wr)
		return EPIPE;
	return 0;
}

static size_t conn_tx_free(const struct ss_conn *c)
{
	uint32_t used = c->tx_tail - c->tx_acked;

	/* Moved to the large ring, the service not yet told: at most a
	 * small ring's worth (conn_tx_grow()). */
	if (__builtin_expect(c->tx_size != c->tx_size_svc, 0))
		return used < SS_SHM_SMALL_RING ? SS_SHM_SMALL_RING - used : 0;
	return c->tx_size - used;
}

/* The small transmit ring is more than half full (shm/abi.h "Small rings
 * that grow"): nothing more goes into it; once all of it is acknowledged
 * the connection writes to the large ring.  Until the TX that tells the
 * service (SS_CMDF_TX_GROW) is posted, at most a small ring's worth goes
 * there: ss_conn_share() may have to put it back.  Returns the bytes
 * that may be written now (of @n free). */
static __attribute__((noinline, cold)) size_t conn_tx_grow(struct ss_conn *c, size_t n)
{
	const struct ss_app *app = c->ctx->app;

	if (c->shared || (n >= c->tx_size / 2 && !c->tx_grow))
		return n; /* shared: the sync words carry positions; it stays */
	if (n != c->tx_size) {
		c->tx_grow = true;
		return 0;
	}
	c->tx_grow = false;
	c->tx_buf = ss_slot_tx_large(app, c->slot);
	c->tx_size = app->txbuf_size;
	c->tx_origin = c->tx_tail - ss_shm_ring_home(c->slot, c->tx_size);
	return conn_tx_free(c);
}

size_t ss_send_space(struct ss_conn *c, struct iovec iov[2])
{
	bool may = !conn_send_error(c) && !c->tx_moved;
	size_t n = may ? conn_tx_free(c) : 0;

	/* A full small ring (n == 0) is more than half full too: a sender
	 * that only ever finds it full, then empty (waits longer than the
	 * peer takes to acknowledge it), must move as well. */
	if (__builtin_expect(may && (c->tx_grow || n < c->tx_size / 2) &&
			     c->tx_size < c->ctx->app->txbuf_size, 0))
		n = conn_tx_grow(c, n);
	uint32_t size = c->tx_size;

	/* All acknowledged (nothing posted or pending either): write from
	 * the home byte again, and tell the service with the TX (shm/abi.h).
	 * Not while other processes may take the connection: the sync words
	 * carry positions, not origins. */
	if (n == size && !c->shared)
		c->tx_origin = c->tx_tail - ss_shm_ring_home(c->slot, size);
	ring_iov(c->tx_buf, size, c->tx_tail - c->tx_origin, n, iov);
	return n;
}

int ss_send_commit(struct ss_conn *c, size_t n)
{
	int err = conn_send_error(c);

	if (err) {
		errno = err;
		return -1;
	}
	if (n > conn_tx_free(c)) {
		errno = EINVAL;
		return -1;
	}
	if (!n)
		return 0;
	if (c->shared && ss_sync_commit(c, (uint32_t)n) < 0) {
		errno = EAGAIN; /* not taken: it moved to another process */
		return -1;
	}
	c->tx_tail += (uint32_t)n;
	c->tx_pend += (uint32_t)n;
	ss_conn_mark_dirty(c);
	return 0;
}

ssize_t ss_send(struct ss_conn *c, const void *buf, size_t len)
{
	struct iovec iov[2];
	size_t n, a;
	int err = conn_send_error(c);

	if (err) {
		errno = err;
		return -1;
	}
	n = ss_send_space(c, iov);
	if (n > len)
		n = len;
	a = iov[0].iov_len < n ? iov[0].iov_len : n;
	memcpy(iov[0].iov_base, buf, a);
	if (n > a)
		memcpy(iov[1].iov_base, (const uint8_t *)buf + a, n - a);
	if (ss_send_commit(c, n) < 0)
		return -1;
	return (ssize_t)n;
}

size_t ss_send_queued(const struct ss_conn *c)
{
	return (uint32_t)(c->tx_tail - c->tx_acked);
}

/* Post @op for @c after its pending counts.  EAGAIN leaves no state
 * change visible to the application (counts posted early are harmless). */
static int conn_post(struct ss_conn *c, uint8_t op)
{
	struct ss_ctx *ctx = c->ctx;
	struct ss_shm_cmd cmd = { .op = op, .conn = c->slot, .gen = c->gen };

	if (ss_cmd_post_conn_pending(ctx, c) < 0)
		return -1;
	return ss_cmd_post(ctx, &cmd);
}

int ss_shutdown(struct ss_conn *c)
{
	int err = conn_send_error(c);

	if (err) {
		errno = err;
		return -1;
	}
	if (conn_post(c, SS_CMD_SHUTDOWN) < 0)
		return -1;
	c->shut_wr = true;
	return 0;
}

int ss_close(struct ss_conn *c)
{
	if (c->closing || c->state == CONN_CLOSED) {
		errno = EPIPE;
		return -1;
	}
	if (conn_post(c, SS_CMD_CLOSE) < 0)
		return -1;
	c->shut_wr = c->closing = true;
	/* Nothing more is read: drop unreported consumption. */
	c->rx_done = 0;
	if (!c->tx_pend)
		ss_conn_unmark_dirty(c);
	return 0;
}

int ss_abort(struct ss_conn *c)
{
	struct ss_shm_cmd cmd = { .op = SS_CMD_ABORT, .conn = c->slot, .gen = c->gen };

	if (c->closing || c->state == CONN_CLOSED) {
		errno = EPIPE;
		return -1;
	}
	if (ss_cmd_post(c->ctx, &cmd) < 0)
		return -1;
	/* The reset drops queued data: nothing pending is worth posting. */
	c->tx_pend = c->rx_done = 0;
	ss_conn_unmark_dirty(c);
	c->shut_wr = c->closing = true;
	return 0;
}

void ss_conn_set_user(struct ss_conn *c, void *user)
{
	c->user = user;
}

void *ss_conn_user(const struct ss_conn *c)
{
	return c->user;
}

struct ss_ctx *ss_conn_ctx(const struct ss_conn *c)
{
	return c->ctx;
}

void ss_conn_endpoints(const struct ss_conn *c, uint32_t *local_ip,
		       uint16_t *local_port, uint32_t *remote_ip,
		       uint16_t *remote_port)
{
	if (local_ip)
		*local_ip = c->local_ip;
	if (local_port)
		*local_port = c->local_port;
	if (remote_ip)
		*remote_ip = c->remote_ip;
	if (remote_port)
		*remote_port = c->remote_port;
}

int ss_conn_error(const struct ss_conn *c)
{
	return c->error;
}
