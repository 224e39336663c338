/* ring.h - the application's side of the SPSC shared-memory rings (see shm/abi.h). */
#ifndef SS_LIB_RING_H
#define SS_LIB_RING_H

#include <stdbool.h>
#include <stdint.h>

#include "shm/abi.h"

/*
 * Indices are free-running uint32_t; slot = index & (slots - 1).  Each side
 * keeps a private copy of its own index (the shared one is only ever
 * written by its owner) and re-reads the other side's index with acquire.
 *
 * atx (app produces, service consumes):
 *   ring_atx_reserve  reads  cons (acquire) - pairs with the service's
 *                     store-release of cons after it has read the slots, so
 *                     a slot we reuse is no longer being read;
 *   ring_atx_publish  writes prod (release) - pairs with the service's
 *                     load-acquire of prod, so it sees the slot contents.
 * arx (service produces, app consumes):
 *   ring_arx_avail    reads  prod (acquire) - pairs with the service's
 *                     store-release of prod after writing the events;
 *   ring_arx_release  writes cons (release) - pairs with the service's
 *                     load-acquire of cons before it overwrites slots.
 */

struct ring_atx {
	struct ss_shm_ring *r;
	struct ss_shm_cmd *slots;
	uint32_t mask;
	uint32_t prod;          /* next slot to write (private) */
	uint32_t published;     /* last value stored to r->prod */
	uint32_t cons_cache;    /* last cons seen */
};

struct ring_arx {
	struct ss_shm_ring *r;
	const struct ss_shm_ev *slots;
	uint32_t mask;
	uint32_t cons;          /* next slot to read (private) */
	uint32_t released;      /* last value stored to r->cons */
	/* The second half of a slot that held two events (RX with
	 * SS_EVF_TX_ACKED): read before the next slot, as if it were one. */
	bool has_split;
	struct ss_shm_ev split;
};

/* A slot to write the next command into, or NULL when the ring is full.
 * Call ring_atx_push to make it part of the next publish. */
static inline struct ss_shm_cmd *ring_atx_reserve(struct ring_atx *q)
{
	uint32_t size = q->mask + 1;

	if (q->prod - q->cons_cache >= size) {
		/* Pairs with the service's store-release of cons. */
		q->cons_cache = __atomic_load_n(&q->r->cons, __ATOMIC_ACQUIRE);
		/* A consumer index ahead of what we produced is garbage:
		 * treat the ring as full rather than overwrite live slots. */
		if (q->prod - q->cons_cache >= size ||
		    q->published - q->cons_cache > size)
			return NULL;
	}
	return &q->slots[q->prod & q->mask];
}

static inline void ring_atx_push(struct ring_atx *q)
{
	q->prod++;
}

/* Make every pushed command visible; true when there was anything new. */
static inline bool ring_atx_publish(struct ring_atx *q)
{
	if (q->prod == q->published)
		return false;
	/* Pairs with the service's load-acquire of prod. */
	__atomic_store_n(&q->r->prod, q->prod, __ATOMIC_RELEASE);
	q->published = q->prod;
	return true;
}

/* Number of events readable now (bounded by the ring size: a producer index
 * further ahead than that is garbage and reads as the ring size). */
static inline uint32_t ring_arx_avail(struct ring_arx *q)
{
	/* Pairs with the service's store-release of prod. */
	uint32_t n = __atomic_load_n(&q->r->prod, __ATOMIC_ACQUIRE) - q->cons;

	return (n > q->mask + 1 ? 0 : n) + q->has_split;
}

/* The next readable event; only valid while ring_arx_avail() > 0. */
static inline const struct ss_shm_ev *ring_arx_peek(const struct ring_arx *q)
{
	return q->has_split ? &q->split : &q->slots[q->cons & q->mask];
}

static inline void ring_arx_pop(struct ring_arx *q)
{
	if (q->has_split)
		q->has_split = false;
	else
		q->cons++;
}

/* Right after ring_arx_pop() of a slot: @ev is the next event to read,
 * ahead of the slots that follow (the second event of the slot). */
static inline void ring_arx_push_front(struct ring_arx *q, const struct ss_shm_ev *ev)
{
	q->split = *ev;
	q->has_split = true;
}

/* Give the read slots back to the service. */
static inline void ring_arx_release(struct ring_arx *q)
{
	if (q->cons == q->released)
		return;
	/* Pairs with the service's load-acquire of cons. */
	__atomic_store_n(&q->r->cons, q->cons, __ATOMIC_RELEASE);
	q->released = q->cons;
}

#endif /* SS_LIB_RING_H */
