/* sync.c - the sync words of a connection shared across fork (shm/abi.h): commits and consumptions confirmed against a move to another process. */
#include "lib.h"

/*
 * A connection other processes may adopt (the POSIX layer shares its
 * sockets across fork) can move away at any moment, while a thread here
 * writes into its ring or reads from it.  Bytes committed but not yet
 * posted with SS_CMD_TX would then be lost although the write returned,
 * and bytes consumed but not yet reported with SS_CMD_RX_DONE read again
 * by the adopter.  So from the fork on, every commit and every
 * consumption moves the slot's sync word forward with a compare-and-swap;
 * the service swaps SS_SYNC_MOVED in when it moves the connection and
 * takes the positions along.  A commit or consumption that finds its word
 * changed was not taken: nothing of it counts, and the caller writes or
 * reads where the connection is once it knows (SS_EV_MOVED).
 *
 * Connections of a process that never forked, or made after its last
 * fork, never touch the words: one test of c->shared per call.
 */

static struct ss_shm_conn_sync *conn_sync(const struct ss_conn *c)
{
	const struct ss_app *app = c->ctx->app;

	return (struct ss_shm_conn_sync *)(void *)((uint8_t *)app->region + app->sync_off) +
	       c->slot;
}

/* Word @w of handle @gen, not moved, keeps @pos from now on: false when
 * the handle moved (or the slot is another handle's already). */
static bool word_share(uint64_t *w, uint32_t gen, uint32_t pos)
{
	uint64_t cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);

	if ((cur & SS_SYNC_MOVED) || ss_sync_gen(cur) != (gen & SS_SYNC_GEN_MASK))
		return false;
	return __atomic_compare_exchange_n(w, &cur, ss_sync_word(gen, SS_SYNC_ON, pos), false,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Move word @w of handle @gen from @pos by @n (release: the bytes were
 * written, or copied out, before the service sees them counted). */
static bool word_advance(uint64_t *w, uint32_t gen, uint32_t pos, uint32_t n)
{
	uint64_t cur = ss_sync_word(gen, SS_SYNC_ON, pos);

	return __atomic_compare_exchange_n(w, &cur, ss_sync_word(gen, SS_SYNC_ON, pos + n), false,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

static void bytes_reverse(uint8_t *a, uint32_t n)
{
	for (uint32_t i = 0, j = n; i + 1 < j; i++, j--) {
		uint8_t t = a[i];

		a[i] = a[j - 1];
		a[j - 1] = t;
	}
}

/* A transmit origin the service has not been told of yet (the TX with
 * SS_CMDF_TX_HOME is still pending): a move would take the bytes committed
 * since by the sync word's position alone, where the service's origin has
 * them.  So they go there now: the ring turns in place by the difference
 * (three reversals; what else it holds was acknowledged, so free). */
static void tx_origin_undo(struct ss_conn *c)
{
	uint32_t size = c->tx_size;
	uint32_t k = (c->tx_origin - c->tx_origin_svc) & (size - 1);

	if (k) {
		bytes_reverse(c->tx_buf, size);
		bytes_reverse(c->tx_buf, k);
		bytes_reverse(c->tx_buf + k, size - k);
	}
	c->tx_origin = c->tx_origin_svc;
}

/* The transmit ring moved to the large one and the service has not been
 * told yet (SS_CMDF_TX_GROW pending): the bytes committed since, at most a
 * small ring's worth (conn_tx_grow()), go back to the small ring where the
 * service's origin has them, and the connection stays there. */
static void tx_grow_undo(struct ss_conn *c)
{
	uint8_t *small = ss_slot_tx_small(c->ctx->app, c->slot);

	for (uint32_t p = c->tx_acked; p != c->tx_tail; p++)
		small[(p - c->tx_origin_svc) & (SS_SHM_SMALL_RING - 1)] =
			c->tx_buf[(p - c->tx_origin) & (c->tx_size - 1)];
	c->tx_buf = small;
	c->tx_size = SS_SHM_SMALL_RING;
	c->tx_origin = c->tx_origin_svc;
}

void ss_conn_share(struct ss_conn *c)
{
	struct ss_shm_conn_sync *ws = conn_sync(c);

	if (c->shared || c->state == CONN_CLOSED)
		return;
	if (c->tx_size != c->tx_size_svc)
		tx_grow_undo(c);
	c->tx_grow = false; /* shared: both rings stay as they are */
	c->rx_grow = false;
	if (c->tx_origin != c->tx_origin_svc)
		tx_origin_undo(c);
	c->shared = true;
	if (!word_share(&ws->tx, c->gen, c->tx_tail))
		c->tx_moved = true;
	if (!word_share(&ws->rx, c->gen, c->rx_head))
		c->rx_moved = true;
}

int ss_sync_commit(struct ss_conn *c, uint32_t n)
{
	if (word_advance(&conn_sync(c)->tx, c->gen, c->tx_tail, n))
		return 0;
	c->tx_moved = true;
	c->ctx->st.tx_refused++;
	return -1;
}

int ss_sync_consume(struct ss_conn *c, uint32_t n)
{
	if (word_advance(&conn_sync(c)->rx, c->gen, c->rx_head, n))
		return 0;
	c->rx_moved = true;
	c->ctx->st.rx_refused++;
	return -1;
}
