/* idpool.h - pool of small integer ids [0, n) with per-id generations. */
#ifndef SS_SERVICE_IDPOOL_H
#define SS_SERVICE_IDPOOL_H

#include <stdbool.h>
#include <stdint.h>

/*
 * O(1) alloc and free over a stack of free ids. Each id carries a
 * generation, bumped on free, so a handle (id, gen) taken at alloc time
 * turns invalid once the id is freed, even if it is handed out again.
 *
 * Not thread-safe: one owner thread. No allocation except in init.
 */
struct ss_idpool {
	uint32_t *free_stack;   /* free ids; the top is free_stack[n_free - 1] */
	uint32_t *gen;          /* per id, bumped on free (wraps) */
	uint8_t *used;          /* per id: 1 while allocated */
	uint32_t n, n_free;
};

/* A pool of @n ids, all free, all at generation 0. Returns 0 or -ENOMEM. */
int ss_idpool_init(struct ss_idpool *p, uint32_t n);
void ss_idpool_fini(struct ss_idpool *p);

/*
 * Takes a free id, or returns -1 when none is left. A fresh pool hands
 * out 0, 1, 2, ...; after that the most recently freed id comes first.
 */
int64_t ss_idpool_alloc(struct ss_idpool *p);

/*
 * Returns @id to the pool and bumps its generation. 0, or -EINVAL if @id
 * is out of range or not allocated (a double free), which changes nothing.
 */
int ss_idpool_free(struct ss_idpool *p, uint32_t id);

/* True if @id is allocated and its generation is @gen. */
static inline bool ss_idpool_valid(const struct ss_idpool *p, uint32_t id, uint32_t gen)
{
	return id < p->n && p->used[id] && p->gen[id] == gen;
}

/* Current generation of @id (0 if out of range). */
static inline uint32_t ss_idpool_gen(const struct ss_idpool *p, uint32_t id)
{
	return id < p->n ? p->gen[id] : 0;
}

#endif /* SS_SERVICE_IDPOOL_H */
