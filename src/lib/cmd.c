/* cmd.c - the command side of a context: posting, per-connection coalescing, flush and doorbell. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

/*
 * Policy when the atx ring is full (never drop a command):
 *   - byte counts (SS_CMD_TX after ss_send_commit, SS_CMD_RX_DONE after
 *     ss_recv_done) accumulate in the connection (tx_pend, rx_done) and the
 *     connection sits on the context's dirty list until a flush finds room;
 *   - control commands fail with EAGAIN and change no state;
 *   - a connection's pending counts are posted before any control command
 *     for it, so SHUTDOWN/CLOSE come after the data they must follow.
 * Nothing is published until ss_flush (or ss_poll/ss_wait/ss_ctx_arm): one
 * store-release of prod and at most one doorbell per batch.
 */

void ss_conn_mark_dirty(struct ss_conn *c)
{
	struct ss_ctx *ctx = c->ctx;

	if (c->dirty)
		return;
	c->dirty = true;
	ss_list_add_tail(&ctx->dirty, &c->link);
}

void ss_conn_unmark_dirty(struct ss_conn *c)
{
	if (!c->dirty)
		return;
	ss_list_del(&c->link);
	c->dirty = false;
}

/* Copy @cmd into the next atx slot (unpublished).  Returns 0, or -1 with
 * errno EAGAIN when the ring is full. */
int ss_cmd_post(struct ss_ctx *ctx, const struct ss_shm_cmd *cmd)
{
	struct ss_shm_cmd *slot = ring_atx_reserve(&ctx->atx);

	if (!slot) {
		ctx->st.atx_full++;
		errno = EAGAIN;
		return -1;
	}
	*slot = *cmd;
	ring_atx_push(&ctx->atx);
	ctx->st.cmds++;
	return 0;
}

/* SS_CMDF_TX_HOME when @c's next TX starts a new transmit origin, and
 * SS_CMDF_TX_GROW when that is in the large ring. */
static inline uint8_t tx_home(const struct ss_conn *c)
{
	if (__builtin_expect(c->more != c->more_svc, 0))
		return (uint8_t)((c->more ? SS_CMDF_MORE : SS_CMDF_MORE_END) |
				 (c->tx_size != c->tx_size_svc ? SS_CMDF_TX_GROW :
				  c->tx_origin != c->tx_origin_svc ? SS_CMDF_TX_HOME : 0));
	if (__builtin_expect(c->tx_size != c->tx_size_svc, 0))
		return SS_CMDF_TX_GROW;
	return c->tx_origin != c->tx_origin_svc ? SS_CMDF_TX_HOME : 0;
}

/* SS_CMDF_RX_GROW on a report of bytes consumed while @c asks for the
 * large receive ring. */
static inline uint8_t rx_grow(const struct ss_conn *c)
{
	return c->rx_grow ? SS_CMDF_RX_GROW : 0;
}

static int post_count(struct ss_ctx *ctx, struct ss_conn *c, uint8_t op,
		      uint32_t *count)
{
	struct ss_shm_cmd cmd = {
		.op = op, .flags = op == SS_CMD_TX ? tx_home(c) : rx_grow(c), .conn = c->slot,
		.gen = c->gen, .arg = *count,
	};

	if (!*count)
		return 0;
	if (ss_cmd_post(ctx, &cmd) < 0)
		return -1;
	*count = 0;
	if (op == SS_CMD_TX) {
		c->tx_origin_svc = c->tx_origin;
		c->tx_size_svc = c->tx_size;
		c->more_svc = c->more;
	}
	return 0;
}

/* Post @c's coalesced TX and RX_DONE counts.  Returns 0, or -1 with errno
 * EAGAIN when the ring filled up (what was posted stays posted). */
int ss_cmd_post_conn_pending(struct ss_ctx *ctx, struct ss_conn *c)
{
	int rc = 0;

	/* Both: one TX that carries the bytes consumed (a reply after a
	 * request), run by the service as the two commands in this order. */
	if (c->tx_pend && c->rx_done) {
		struct ss_shm_cmd cmd = {
			.op = SS_CMD_TX, .flags = SS_CMDF_RX_DONE | tx_home(c) | rx_grow(c),
			.conn = c->slot,
			.gen = c->gen, .arg = c->tx_pend, .rx_done = c->rx_done,
		};

		if (ss_cmd_post(ctx, &cmd) < 0)
			return -1; /* both still pending, the connection dirty */
		c->tx_origin_svc = c->tx_origin;
		c->tx_size_svc = c->tx_size;
		c->more_svc = c->more;
		c->tx_pend = 0;
		c->rx_done = 0;
		ss_conn_unmark_dirty(c);
		return 0;
	}
	if (post_count(ctx, c, SS_CMD_TX, &c->tx_pend) < 0 ||
	    post_count(ctx, c, SS_CMD_RX_DONE, &c->rx_done) < 0)
		rc = -1;
	if (!c->tx_pend && !c->rx_done)
		ss_conn_unmark_dirty(c);
	return rc;
}

/* Post what the dirty list holds and publish; returns 0, or -1 (EAGAIN)
 * when some counts could not be posted.  Rings the doorbell when the
 * service sleeps and this context has not rung it since it went to
 * sleep. */
int ss_ctx_flush_quiet(struct ss_ctx *ctx)
{
	struct ss_app *app = ctx->app;
	int rc = 0;

	while (!ss_list_empty(&ctx->dirty)) {
		struct ss_conn *c = SS_LIST_ENTRY(ss_list_first(&ctx->dirty), struct ss_conn, link);

		if (ss_cmd_post_conn_pending(ctx, c) < 0) {
			rc = -1;
			break;
		}
	}
	if (ring_atx_publish(&ctx->atx)) {
		/* Full fence: our store of prod must be visible before we read
		 * sleeping, or we and the service (which sets sleeping, fences,
		 * then re-reads prod) could both miss each other. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&app->status->sleeping[0], __ATOMIC_ACQUIRE) &&
		    !__atomic_load_n(&ctx->atx.r->sleeping, __ATOMIC_RELAXED)) {
			uint64_t one = 1;
			ssize_t n;

			/* Rung for this sleep: the service stays "sleeping"
			 * until it runs, and clears this before it sleeps
			 * again (abi.h). */
			__atomic_store_n(&ctx->atx.r->sleeping, 1, __ATOMIC_RELAXED);
			n = ss_sys_write(app->doorbell, &one, sizeof(one));
			(void)n; /* EAGAIN: the counter is already non-zero */
			ctx->st.doorbells++;
		}
	}
	if (rc < 0)
		errno = EAGAIN;
	return rc;
}

int ss_flush(struct ss_ctx *ctx)
{
	return ss_ctx_flush_quiet(ctx);
}

int ss_listen(struct ss_ctx *ctx, uint16_t port, uint32_t backlog, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_LISTEN, .port = port, .arg = backlog, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_listen_close(struct ss_ctx *ctx, uint32_t listener)
{
	struct ss_shm_cmd cmd = { .op = SS_CMD_LISTEN_CLOSE, .conn = listener };

	return ss_cmd_post(ctx, &cmd);
}

int ss_listen_stop(struct ss_ctx *ctx, uint32_t listener, unsigned flags, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_LISTEN_STOP, .conn = listener,
		.arg = flags & SS_LISTEN_STOP_RELEASE ? SS_STOP_RELEASE : 0, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_connect(struct ss_ctx *ctx, uint32_t ip, uint16_t port, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_CONNECT, .ip = ip, .port = port, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_connect_cancel(struct ss_ctx *ctx, uint64_t cookie)
{
	struct ss_shm_cmd cmd = { .op = SS_CMD_ABORT, .flags = SS_CMDF_CONNECTING, .cookie = cookie };

	return ss_cmd_post(ctx, &cmd);
}

int ss_bind(struct ss_ctx *ctx, uint16_t port, unsigned flags, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_BIND, .port = port, .arg = flags & SS_BIND_REUSEPORT,
		.cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_listen_bound(struct ss_ctx *ctx, uint32_t entry, uint32_t backlog, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = entry, .arg = backlog,
		.cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_connect_bound(struct ss_ctx *ctx, uint32_t entry, uint32_t ip, uint16_t port,
		     uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_CONNECT, .flags = SS_CMDF_BOUND, .conn = entry, .ip = ip,
		.port = port, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_connect_mss(struct ss_ctx *ctx, bool bound, uint32_t entry, uint32_t ip, uint16_t port,
		   uint16_t mss, uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_CONNECT, .flags = bound ? SS_CMDF_BOUND : 0, .conn = bound ? entry : 0,
		.ip = ip, .port = port, .arg = mss, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_conn_setopt(struct ss_conn *c, unsigned opt, uint32_t val)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_SETOPT, .conn = c->slot, .gen = c->gen, .arg = opt, .ip = val,
	};

	/* After the bytes committed before it, as on Linux. */
	if (ss_cmd_post_conn_pending(c->ctx, c) < 0)
		return -1;
	return ss_cmd_post(c->ctx, &cmd);
}

int ss_listen_setopt(struct ss_ctx *ctx, uint32_t listener, unsigned opt, uint32_t val)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_SETOPT, .flags = SS_CMDF_LISTENER, .conn = listener, .arg = opt,
		.ip = val,
	};

	return ss_cmd_post(ctx, &cmd);
}

void ss_conn_set_more(struct ss_conn *c, bool more)
{
	c->more = more;
}

int ss_listen_arm(struct ss_ctx *ctx, uint32_t listener)
{
	struct ss_shm_cmd cmd = { .op = SS_CMD_LISTEN_ARM, .conn = listener };

	return ss_cmd_post(ctx, &cmd);
}

int ss_inherit(struct ss_ctx *ctx)
{
	struct ss_shm_cmd cmd = { .op = SS_CMD_INHERIT };

	return ss_cmd_post(ctx, &cmd);
}

int ss_adopt(struct ss_ctx *ctx, uint32_t owner_app, uint32_t slot, uint32_t gen,
	     uint64_t cookie)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_ADOPT, .conn = slot, .gen = gen, .ip = owner_app, .cookie = cookie,
	};

	return ss_cmd_post(ctx, &cmd);
}

int ss_release(struct ss_ctx *ctx, uint32_t owner_app, uint32_t slot, uint32_t gen)
{
	struct ss_shm_cmd cmd = {
		.op = SS_CMD_RELEASE, .conn = slot, .gen = gen, .ip = owner_app,
	};

	return ss_cmd_post(ctx, &cmd);
}
