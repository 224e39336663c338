/* sync.c - the transmit sync word of a connection shared across fork (shm/abi.h): commits confirmed against a move to another process. */
#include "lib.h"

/*
 * A connection other processes may adopt (the POSIX layer shares its
 * sockets across fork) can move away at any moment, while a thread here
 * is writing into its ring.  Bytes committed but not yet posted with
 * SS_CMD_TX would then be lost although the write returned.  So from the
 * fork on, every commit moves the slot's sync word forward with a
 * compare-and-swap; the service swaps SS_SYNC_MOVED in when it moves the
 * connection and takes the committed bytes along.  A commit that finds
 * the word changed was not taken: nothing of it counts, and the caller
 * writes it where the connection is once it knows (SS_EV_MOVED).
 *
 * Connections of a process that never forked, or made after its last
 * fork, never touch the word: one test of c->shared per commit.
 */

static uint64_t *conn_sync(const struct ss_conn *c)
{
	const struct ss_app *app = c->ctx->app;

	return (uint64_t *)(void *)((uint8_t *)app->region + app->sync_off) + c->slot;
}

void ss_conn_share(struct ss_conn *c)
{
	uint64_t *w = conn_sync(c);
	uint64_t cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);
	uint64_t want = ss_sync_word(c->gen, SS_SYNC_ON, c->tx_tail);

	if (c->shared || c->state == CONN_CLOSED)
		return;
	c->shared = true;
	/* The word of our handle, not moved: it keeps our position now. */
	if ((cur & SS_SYNC_MOVED) || ss_sync_gen(cur) != (c->gen & SS_SYNC_GEN_MASK) ||
	    !__atomic_compare_exchange_n(w, &cur, want, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		c->tx_moved = true;
}

int ss_sync_commit(struct ss_conn *c, uint32_t n)
{
	uint64_t cur = ss_sync_word(c->gen, SS_SYNC_ON, c->tx_tail);
	uint64_t next = ss_sync_word(c->gen, SS_SYNC_ON, c->tx_tail + n);

	/* Release: the bytes are in the ring before the service sees them
	 * counted. */
	if (__atomic_compare_exchange_n(conn_sync(c), &cur, next, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return 0;
	c->tx_moved = true;
	c->ctx->st.tx_refused++;
	return -1;
}
