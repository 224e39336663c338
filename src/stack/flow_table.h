/* flow_table.h - TCP 4-tuple -> connection hash table (seeded, linear probing). */
#ifndef SS_SERVICE_FLOW_TABLE_H
#define SS_SERVICE_FLOW_TABLE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Open addressing with linear probing; removal shifts the rest of the
 * probe run back (no tombstones), so a lookup stops at the first empty
 * slot and its cost depends only on the current load. The capacity (slot
 * count) is fixed at init; inserts that would push the load past 3/4 are
 * refused with -ENOSPC.
 *
 * The hash is keyed by a seed chosen at init, so remote peers, who pick
 * remote_ip/remote_port, cannot aim their flows at one probe run.
 *
 * Threading: single writer, and lookups on that same thread only (the
 * fast-path thread that owns the connections). There is no
 * synchronisation: a lookup racing an insert or remove may miss or return
 * a wrong entry.
 *
 * No allocation except in init; fini frees.
 */
struct ss_flow_key {
	uint32_t local_ip, remote_ip;           /* host order */
	uint16_t local_port, remote_port;       /* host order */
};

struct ss_flow_entry {
	struct ss_flow_key key;
	uint32_t hash;          /* low 32 bits of the hash: home slot, fast compare */
	void *value;            /* NULL = empty slot */
};

struct ss_flow_table {
	struct ss_flow_entry *slots;
	uint32_t mask;          /* capacity - 1 */
	uint32_t count;
	uint32_t max_count;     /* capacity * 3 / 4 */
	uint32_t gen;           /* + 1 at every insert and remove: an answer
				 * kept from a lookup holds while it is equal */
	uint64_t seed;
};

/*
 * @capacity: slots, a power of two in [2, 2^31]; @seed: hash key, e.g.
 * from getrandom(). Returns 0, -EINVAL or -ENOMEM.
 */
int ss_flow_table_init(struct ss_flow_table *t, uint32_t capacity, uint64_t seed);
void ss_flow_table_fini(struct ss_flow_table *t);

static inline bool ss_flow_key_eq(const struct ss_flow_key *a, const struct ss_flow_key *b)
{
	return a->local_ip == b->local_ip && a->remote_ip == b->remote_ip &&
	       a->local_port == b->local_port && a->remote_port == b->remote_port;
}

/* The value stored for @k, or NULL if absent. */
void *ss_flow_table_lookup(const struct ss_flow_table *t, const struct ss_flow_key *k);

/*
 * Maps @k to @v (not NULL). Returns 0, -EEXIST if @k is present (the old
 * value stays), -ENOSPC if the table holds capacity * 3 / 4 keys, or
 * -EINVAL if @v is NULL.
 */
int ss_flow_table_insert(struct ss_flow_table *t, const struct ss_flow_key *k, void *v);

/* Removes @k. Returns 0 or -ENOENT. */
int ss_flow_table_remove(struct ss_flow_table *t, const struct ss_flow_key *k);

/* Keys stored. */
uint32_t ss_flow_table_count(const struct ss_flow_table *t);

static inline uint64_t ss_flow_mix64_(uint64_t x)
{
	/* murmur3 fmix64: a bijection with full avalanche. */
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

/*
 * Seeded 64-bit hash of the 12 key bytes: two rounds of fmix64, the seed
 * folded in before the first. Without the seed, an outsider cannot find
 * keys that share a home slot. Exposed so a burst loop can hash ahead.
 */
static inline uint64_t ss_flow_table_hash(const struct ss_flow_table *t,
					  const struct ss_flow_key *k)
{
	uint64_t a = (uint64_t)k->local_ip << 32 | k->remote_ip;
	uint64_t b = (uint64_t)k->local_port << 16 | k->remote_port;

	return ss_flow_mix64_(ss_flow_mix64_(a ^ t->seed) ^ b ^ UINT64_C(0x9e3779b97f4a7c15));
}

/*
 * Prefetches @k's home slot, for a lookup a few packets later in a burst,
 * and returns the hash, which ss_flow_table_lookup_hashed() then takes
 * instead of computing it again.
 */
uint32_t ss_flow_table_prefetch(const struct ss_flow_table *t, const struct ss_flow_key *k);

/* ss_flow_table_lookup() for @hash, (uint32_t)ss_flow_table_hash(t, k). */
void *ss_flow_table_lookup_hashed(const struct ss_flow_table *t, const struct ss_flow_key *k,
				  uint32_t hash);

#endif /* SS_SERVICE_FLOW_TABLE_H */
