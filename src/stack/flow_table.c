/* flow_table.c - flow table: linear probing with backward-shift deletion. */
#include "stack/flow_table.h"

#include "stack/bigmem.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Index of the slot holding @k, or of the empty slot that ends its probe
 * run. The load limit guarantees an empty slot exists.
 */
static inline uint32_t flow_table_find(const struct ss_flow_table *t,
				       const struct ss_flow_key *k, uint32_t hash)
{
	uint32_t i = hash & t->mask;

	for (;;) {
		const struct ss_flow_entry *e = &t->slots[i];

		if (!e->value || (e->hash == hash && ss_flow_key_eq(&e->key, k)))
			return i;
		i = (i + 1) & t->mask;
	}
}

int ss_flow_table_init(struct ss_flow_table *t, uint32_t capacity, uint64_t seed)
{
	if (capacity < 2 || capacity > (UINT32_C(1) << 31) || (capacity & (capacity - 1)) != 0)
		return -EINVAL;
	t->slots = ss_bigmem_alloc((size_t)capacity * sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->mask = capacity - 1;
	t->count = 0;
	t->max_count = (uint32_t)((uint64_t)capacity * 3 / 4);
	t->gen = 0;
	t->seed = seed;
	return 0;
}

void ss_flow_table_fini(struct ss_flow_table *t)
{
	ss_bigmem_free(t->slots, ((size_t)t->mask + 1) * sizeof(*t->slots));
	t->slots = NULL;
	t->count = 0;
	t->max_count = 0;
}

void *ss_flow_table_lookup(const struct ss_flow_table *t, const struct ss_flow_key *k)
{
	uint32_t hash = (uint32_t)ss_flow_table_hash(t, k);

	return t->slots[flow_table_find(t, k, hash)].value;
}

void *ss_flow_table_lookup_hashed(const struct ss_flow_table *t, const struct ss_flow_key *k,
				  uint32_t hash)
{
	return t->slots[flow_table_find(t, k, hash)].value;
}

int ss_flow_table_insert(struct ss_flow_table *t, const struct ss_flow_key *k, void *v)
{
	uint32_t hash = (uint32_t)ss_flow_table_hash(t, k);
	struct ss_flow_entry *e;

	if (!v)
		return -EINVAL;
	e = &t->slots[flow_table_find(t, k, hash)];
	if (e->value)
		return -EEXIST;
	if (t->count >= t->max_count)
		return -ENOSPC;
	e->key = *k;
	e->hash = hash;
	e->value = v;
	t->count++;
	t->gen++;
	return 0;
}

/*
 * Backward-shift deletion: after emptying slot @hole, walk the rest of the
 * probe run and move back each entry whose home slot is not cyclically in
 * (hole, j] - i.e. whose probe from home would otherwise cross the hole.
 * The run ends at the first empty slot.
 */
int ss_flow_table_remove(struct ss_flow_table *t, const struct ss_flow_key *k)
{
	uint32_t hash = (uint32_t)ss_flow_table_hash(t, k);
	uint32_t hole = flow_table_find(t, k, hash);
	uint32_t j = hole;

	if (!t->slots[hole].value)
		return -ENOENT;
	for (;;) {
		struct ss_flow_entry *e;
		uint32_t home;

		j = (j + 1) & t->mask;
		e = &t->slots[j];
		if (!e->value)
			break;
		home = e->hash & t->mask;
		if (((j - home) & t->mask) >= ((j - hole) & t->mask)) {
			t->slots[hole] = *e;
			hole = j;
		}
	}
	t->slots[hole].value = NULL;
	t->count--;
	t->gen++;
	return 0;
}

uint32_t ss_flow_table_count(const struct ss_flow_table *t)
{
	return t->count;
}

uint32_t ss_flow_table_prefetch(const struct ss_flow_table *t, const struct ss_flow_key *k)
{
	uint32_t hash = (uint32_t)ss_flow_table_hash(t, k);

	__builtin_prefetch(&t->slots[hash & t->mask], 0, 3);
	return hash;
}
