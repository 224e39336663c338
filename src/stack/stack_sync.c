/* stack_sync.c - the sync words of a handle that goes away (fork): what its application committed or consumed without a command yet. */
#include "stack/stack_fork.h"
#include "stack/stack_conn.h"

/*
 * A connection shared across fork may move to another process while its
 * owner writes or reads (shm/abi.h): the owner's library keeps its
 * committed transmit position and its consumed receive position in the
 * slot's sync words, each moved with a compare-and-swap.  When the
 * handle goes, the service swaps MOVED into both (later commits and
 * consumptions on it fail) and takes what the positions say beyond its
 * own as a TX and an RX_DONE would.  The words are the application's:
 * each is believed only when it is kept (SS_SYNC_ON), of this handle,
 * and within what the ring holds; else counted in app_move_sync_bad.
 * Only the move and the application's exit come here.
 */

/* The word @w of handle @gen, kept and not moved: true; else false, and
 * counted when it is kept but wrong. */
static bool word_ok(struct ss_stack *s, uint64_t w, uint32_t gen)
{
	if (!(w & SS_SYNC_ON))
		return false;
	if ((w & SS_SYNC_MOVED) || ss_sync_gen(w) != (gen & SS_SYNC_GEN_MASK)) {
		ss_ctr_inc(s->ctr, SS_CTR_app_move_sync_bad);
		return false;
	}
	return true;
}

static void claim_tx(struct ss_stack *s, struct ss_tcp_conn *c, uint64_t w, uint32_t gen)
{
	uint32_t more = (uint32_t)w - c->f.tx_tail;

	if (!word_ok(s, w, gen) || more == 0)
		return;
	if (more > ss_tcp_tx_space(c)) {
		ss_ctr_inc(s->ctr, SS_CTR_app_move_sync_bad);
		return;
	}
	if (ss_tcp_send(c, more) != 0) {
		/* A connection that sends no more (reset, timed out) drops them
		 * as Linux would; after our FIN nothing may have been written. */
		if (!c->error)
			ss_ctr_inc(s->ctr, SS_CTR_app_move_sync_bad);
		return;
	}
	ss_ctr_inc(s->ctr, SS_CTR_app_move_tx_claimed);
	ss_ctr_add(s->ctr, SS_CTR_app_move_tx_claimed_bytes, more);
}

static void claim_rx(struct ss_stack *s, struct ss_tcp_conn *c, uint64_t w, uint32_t gen)
{
	uint32_t more = (uint32_t)w - c->f.rx_head;

	if (!word_ok(s, w, gen) || more == 0)
		return;
	if (ss_tcp_recv_done(c, more) != 0) {
		ss_ctr_inc(s->ctr, SS_CTR_app_move_sync_bad); /* beyond what arrived */
		return;
	}
	ss_ctr_inc(s->ctr, SS_CTR_app_move_rx_claimed);
	ss_ctr_add(s->ctr, SS_CTR_app_move_rx_claimed_bytes, more);
}

void stack_conn_sync_claim(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_shm_conn_sync *ws = ss_app_sync(sc->app, sc->slot);
	uint64_t moved = ss_sync_word(sc->gen, SS_SYNC_MOVED, 0);
	uint64_t tx = __atomic_exchange_n(&ws->tx, moved, __ATOMIC_ACQ_REL);
	uint64_t rx = __atomic_exchange_n(&ws->rx, moved, __ATOMIC_ACQ_REL);

	claim_tx(s, &sc->tcp, tx, sc->gen);
	claim_rx(s, &sc->tcp, rx, sc->gen);
}
