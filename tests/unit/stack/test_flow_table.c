/* test_flow_table.c - flow hash table: unit cases and a randomized model check. */
#include "stack/flow_table.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

static struct ss_flow_key key_make(uint32_t lip, uint16_t lport, uint32_t rip, uint16_t rport)
{
	struct ss_flow_key k = {
		.local_ip = lip, .remote_ip = rip, .local_port = lport, .remote_port = rport,
	};
	return k;
}

/* Key number @i of a test universe: one local endpoint, many peers. */
static struct ss_flow_key key_nth(uint32_t i)
{
	return key_make(0x0a000001, 8080, 0x0a000100 + (i >> 6), (uint16_t)(40000 + (i & 63)));
}

/* Every occupied slot is reachable from its home slot without crossing an empty one. */
static bool table_runs_ok(const struct ss_flow_table *t)
{
	for (uint32_t i = 0; i <= t->mask; i++) {
		if (!t->slots[i].value)
			continue;
		for (uint32_t j = t->slots[i].hash & t->mask; j != i; j = (j + 1) & t->mask)
			if (!t->slots[j].value)
				return false;
	}
	return true;
}

static void test_init_args(void)
{
	struct ss_flow_table t;

	CHECK_EQ_U64(ss_flow_table_init(&t, 0, 1), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_flow_table_init(&t, 1, 1), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_flow_table_init(&t, 100, 1), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_flow_table_init(&t, 2, 1), 0);
	ss_flow_table_fini(&t);
}

static void test_basic(void)
{
	struct ss_flow_table t;
	struct ss_flow_key a = key_make(0x0a000001, 80, 0xc0a80001, 5555);
	struct ss_flow_key b = a;
	int va, vb, vc;

	CHECK_EQ_U64(ss_flow_table_init(&t, 64, 0x1234), 0);
	CHECK(ss_flow_table_lookup(&t, &a) == NULL);
	CHECK_EQ_U64(ss_flow_table_remove(&t, &a), (uint64_t)-ENOENT);
	CHECK_EQ_U64(ss_flow_table_insert(&t, &a, &va), 0);
	CHECK_EQ_U64(ss_flow_table_count(&t), 1);
	CHECK(ss_flow_table_lookup(&t, &a) == &va);
	CHECK_EQ_U64(ss_flow_table_insert(&t, &a, &vb), (uint64_t)-EEXIST);
	CHECK(ss_flow_table_lookup(&t, &a) == &va);
	CHECK_EQ_U64(ss_flow_table_insert(&t, &b, NULL), (uint64_t)-EINVAL);

	/* Each field is part of the key. */
	b.local_ip++;
	CHECK(ss_flow_table_lookup(&t, &b) == NULL);
	b = a;
	b.remote_ip++;
	CHECK(ss_flow_table_lookup(&t, &b) == NULL);
	b = a;
	b.local_port++;
	CHECK(ss_flow_table_lookup(&t, &b) == NULL);
	b = a;
	b.remote_port++;
	CHECK(ss_flow_table_lookup(&t, &b) == NULL);
	CHECK_EQ_U64(ss_flow_table_insert(&t, &b, &vb), 0);
	/* The reverse direction is a different flow. */
	b = key_make(a.remote_ip, a.remote_port, a.local_ip, a.local_port);
	CHECK(ss_flow_table_lookup(&t, &b) == NULL);
	CHECK_EQ_U64(ss_flow_table_insert(&t, &b, &vc), 0);
	CHECK_EQ_U64(ss_flow_table_count(&t), 3);

	/* The hash a prefetch returns finds the same entries; every insert
	 * and remove moves the generation on, a refused one does not. */
	uint32_t gen = t.gen;
	CHECK(ss_flow_table_lookup_hashed(&t, &a, ss_flow_table_prefetch(&t, &a)) == &va);
	CHECK(ss_flow_table_lookup_hashed(&t, &b, ss_flow_table_prefetch(&t, &b)) == &vc);
	CHECK_EQ_U64(ss_flow_table_prefetch(&t, &a), (uint32_t)ss_flow_table_hash(&t, &a));
	CHECK_EQ_U64(ss_flow_table_insert(&t, &a, &vb), (uint64_t)-EEXIST);
	CHECK_EQ_U64(t.gen, gen);
	CHECK_EQ_U64(ss_flow_table_remove(&t, &a), 0);
	CHECK_EQ_U64(t.gen, gen + 1);
	CHECK(ss_flow_table_lookup_hashed(&t, &a, ss_flow_table_prefetch(&t, &a)) == NULL);
	CHECK(ss_flow_table_lookup(&t, &a) == NULL);
	CHECK(ss_flow_table_lookup(&t, &b) == &vc);
	CHECK_EQ_U64(ss_flow_table_remove(&t, &a), (uint64_t)-ENOENT);
	CHECK_EQ_U64(ss_flow_table_count(&t), 2);
	ss_flow_table_fini(&t);
}

static int ins_nth(struct ss_flow_table *t, uint32_t i, void *v)
{
	struct ss_flow_key k = key_nth(i);

	return ss_flow_table_insert(t, &k, v);
}

static void *lookup_nth(const struct ss_flow_table *t, uint32_t i)
{
	struct ss_flow_key k = key_nth(i);

	return ss_flow_table_lookup(t, &k);
}

static int remove_nth(struct ss_flow_table *t, uint32_t i)
{
	struct ss_flow_key k = key_nth(i);

	return ss_flow_table_remove(t, &k);
}

static void test_load_limit(void)
{
	struct ss_flow_table t;
	int v[16];

	CHECK_EQ_U64(ss_flow_table_init(&t, 16, 99), 0);
	for (uint32_t i = 0; i < 12; i++)
		CHECK_EQ_U64(ins_nth(&t, i, &v[i]), 0);
	CHECK_EQ_U64(ss_flow_table_count(&t), 12);
	CHECK_EQ_U64(ins_nth(&t, 12, &v[12]), (uint64_t)-ENOSPC);
	/* A present key is still reported as such when full. */
	CHECK_EQ_U64(ins_nth(&t, 3, &v[12]), (uint64_t)-EEXIST);
	CHECK(lookup_nth(&t, 12) == NULL);
	CHECK_EQ_U64(remove_nth(&t, 5), 0);
	CHECK_EQ_U64(ins_nth(&t, 12, &v[12]), 0);
	for (uint32_t i = 0; i <= 12; i++)
		CHECK(lookup_nth(&t, i) == (i == 5 ? NULL : &v[i]));
	CHECK(table_runs_ok(&t));
	ss_flow_table_fini(&t);
}

/* Same keys, different seeds: different hashes and different slots. */
static void test_seeds(void)
{
	enum { N = 1000 };
	struct ss_flow_table t1, t2;
	static uint32_t pos1[N], pos2[N];
	unsigned same_hash = 0, same_pos = 0;
	int dummy;

	CHECK_EQ_U64(ss_flow_table_init(&t1, 2048, 1), 0);
	CHECK_EQ_U64(ss_flow_table_init(&t2, 2048, 2), 0);
	for (uint32_t i = 0; i < N; i++) {
		struct ss_flow_key k = key_nth(i);

		same_hash += ss_flow_table_hash(&t1, &k) == ss_flow_table_hash(&t2, &k);
		CHECK_EQ_U64(ss_flow_table_insert(&t1, &k, &dummy), 0);
		CHECK_EQ_U64(ss_flow_table_insert(&t2, &k, &dummy), 0);
	}
	for (uint32_t s = 0; s < 2048; s++) {
		for (uint32_t i = 0; i < N; i++) {
			struct ss_flow_key k = key_nth(i);

			if (t1.slots[s].value && !memcmp(&t1.slots[s].key, &k, sizeof(k)))
				pos1[i] = s;
			if (t2.slots[s].value && !memcmp(&t2.slots[s].key, &k, sizeof(k)))
				pos2[i] = s;
		}
	}
	for (uint32_t i = 0; i < N; i++)
		same_pos += pos1[i] == pos2[i];
	CHECK_EQ_U64(same_hash, 0);
	CHECK(same_pos < N / 20);       /* ~N/2048 expected by chance */
	ss_flow_table_fini(&t1);
	ss_flow_table_fini(&t2);
}

/*
 * Random insert/remove/lookup against a model (value per key number).
 * Inserts outnumber removes two to one over a key universe larger than
 * the load limit, so the table sits at its limit: probe runs are long,
 * wrap around the end, and -ENOSPC is hit.
 */
static void random_model(uint32_t capacity, uint32_t universe, unsigned ops,
			 unsigned full_every, uint64_t seed)
{
	struct ss_flow_table t;
	void **model = calloc(universe, sizeof(*model));
	char *vals = malloc(universe);  /* distinct addresses to store */
	uint64_t rng = seed;
	uint32_t count = 0;
	unsigned bad = 0, bad_full = 0, n_enospc = 0;

	CHECK(model && vals);
	if (!model || !vals)
		goto out;
	CHECK_EQ_U64(ss_flow_table_init(&t, capacity, seed * 31), 0);
	for (unsigned op = 0; op < ops; op++) {
		uint64_t r = check_rand(&rng);
		uint32_t i = (uint32_t)(r >> 32) % universe;
		int rc;

		switch (r % 4) {
		case 0:
		case 1:
			rc = ins_nth(&t, i, &vals[i]);
			if (model[i]) {
				bad += rc != -EEXIST;
			} else if (count >= capacity / 4 * 3) {
				bad += rc != -ENOSPC;
				n_enospc++;
			} else {
				bad += rc != 0;
				model[i] = &vals[i];
				count++;
			}
			break;
		case 2:
			rc = remove_nth(&t, i);
			if (model[i]) {
				bad += rc != 0;
				model[i] = NULL;
				count--;
			} else {
				bad += rc != -ENOENT;
			}
			break;
		default:
			bad += lookup_nth(&t, i) != model[i];
			break;
		}
		if (ss_flow_table_count(&t) != count)
			bad++;
		if (op % full_every == 0) {
			for (uint32_t j = 0; j < universe; j++)
				bad_full += lookup_nth(&t, j) != model[j];
			bad_full += !table_runs_ok(&t);
		}
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(bad_full, 0);
	CHECK(n_enospc > 0);
	ss_flow_table_fini(&t);
out:
	free(model);
	free(vals);
}

int main(void)
{
	test_init_args();
	test_basic();
	test_load_limit();
	test_seeds();
	/* Tiny table, every op fully checked: wrap-around shifts. */
	random_model(8, 10, 300000, 1, 1);
	random_model(16, 24, 200000, 1, 2);
	/* Larger table near its limit. */
	random_model(4096, 5000, 500000, 5000, 3);
	return check_done("test_flow_table");
}
