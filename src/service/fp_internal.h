/* fp_internal.h - the fast-path loop's steps, shared by fastpath.c, fp_rx.c, fp_tx.c and fp_idle.c. */
#ifndef SS_SERVICE_FP_INTERNAL_H
#define SS_SERVICE_FP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rte_mbuf.h>

#include "service/fastpath.h"

#define SS_NS_PER_MS 1000000ull

/* The loop's state from one round to the next. */
struct ss_fp_rounds {
	uint64_t last;       /* start of the previous round; 0 after a sleep */
	uint32_t idle;       /* empty rounds in a row */
	uint64_t idle_since; /* the first empty round of this idle spell */
	bool light;          /* the last round with frames had few (idle_yield) */
	uint32_t busy_rx;    /* frames since the last empty round or busy yield */
};

static inline uint64_t ss_fp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* fp_rx.c: RX bursts until the queue is empty or the round's budget is
 * spent, each frame answered in place or handed to the stack; returns the
 * number of frames received. */
unsigned ss_fp_rx(struct ss_fastpath *fp);

/* fp_tx.c: sends the queued frames (what the port refuses stays queued). */
void ss_fp_tx_flush(struct ss_fastpath *fp);
/* fp_tx.c: at stop, drops what is still queued. */
void ss_fp_tx_drop_all(struct ss_fastpath *fp);

/* Queues a frame for the next TX burst; bursts first once enough wait. */
static inline void ss_fp_tx_add(struct ss_fastpath *fp, struct rte_mbuf *m)
{
	if (fp->ntx >= fp->tx_flush_at)
		ss_fp_tx_flush(fp);
	if (fp->ntx == SS_FP_TXQ_MAX) {
		/* The ring stayed full for SS_FP_TXQ_MAX frames. */
		ss_ctr_inc(&fp->ctr, SS_CTR_drop_tx_full);
		rte_pktmbuf_free(m);
		return;
	}
	fp->txq[fp->ntx++] = m;
}

/* fp_idle.c: after a round that did work (@rx frames received). */
void ss_fp_busy(struct ss_fastpath *fp, struct ss_fp_rounds *r, unsigned rx);
/* fp_idle.c: after a round without work: poll again, yield, or sleep. */
void ss_fp_idle(struct ss_fastpath *fp, struct ss_fp_rounds *r, uint64_t now);

#endif
