/* test_idpool.c - id pool: exhaustion, double free, generations, randomized model check. */
#include "stack/idpool.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

static void test_exhaust(void)
{
	struct ss_idpool p;

	CHECK_EQ_U64(ss_idpool_init(&p, 4), 0);
	for (int64_t i = 0; i < 4; i++)
		CHECK_EQ_U64(ss_idpool_alloc(&p), i);       /* lowest first */
	CHECK_EQ_U64(ss_idpool_alloc(&p), (uint64_t)-1);
	CHECK_EQ_U64(p.n_free, 0);
	CHECK_EQ_U64(ss_idpool_free(&p, 2), 0);
	CHECK_EQ_U64(ss_idpool_alloc(&p), 2);
	CHECK_EQ_U64(ss_idpool_alloc(&p), (uint64_t)-1);
	ss_idpool_fini(&p);

	/* An empty pool. */
	CHECK_EQ_U64(ss_idpool_init(&p, 0), 0);
	CHECK_EQ_U64(ss_idpool_alloc(&p), (uint64_t)-1);
	CHECK_EQ_U64(ss_idpool_free(&p, 0), (uint64_t)-EINVAL);
	CHECK(!ss_idpool_valid(&p, 0, 0));
	ss_idpool_fini(&p);
}

static void test_free_errors(void)
{
	struct ss_idpool p;

	CHECK_EQ_U64(ss_idpool_init(&p, 8), 0);
	CHECK_EQ_U64(ss_idpool_free(&p, 0), (uint64_t)-EINVAL);    /* never allocated */
	CHECK_EQ_U64(ss_idpool_free(&p, 8), (uint64_t)-EINVAL);    /* out of range */
	CHECK_EQ_U64(ss_idpool_free(&p, UINT32_MAX), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_idpool_alloc(&p), 0);
	CHECK_EQ_U64(ss_idpool_free(&p, 0), 0);
	CHECK_EQ_U64(ss_idpool_free(&p, 0), (uint64_t)-EINVAL);    /* double free */
	CHECK_EQ_U64(ss_idpool_gen(&p, 0), 1);                      /* bumped once */
	CHECK_EQ_U64(p.n_free, 8);
	ss_idpool_fini(&p);
}

static void test_generations(void)
{
	struct ss_idpool p;
	uint32_t id, g0, g1;

	CHECK_EQ_U64(ss_idpool_init(&p, 2), 0);
	id = (uint32_t)ss_idpool_alloc(&p);
	g0 = ss_idpool_gen(&p, id);
	CHECK_EQ_U64(g0, 0);
	CHECK(ss_idpool_valid(&p, id, g0));
	CHECK(!ss_idpool_valid(&p, id, g0 + 1));
	CHECK(!ss_idpool_valid(&p, 1, 0));                 /* free id */
	CHECK(!ss_idpool_valid(&p, 2, 0));                 /* out of range */
	CHECK_EQ_U64(ss_idpool_gen(&p, 7), 0);

	CHECK_EQ_U64(ss_idpool_free(&p, id), 0);
	CHECK(!ss_idpool_valid(&p, id, g0));               /* stale after free */
	CHECK_EQ_U64((uint32_t)ss_idpool_alloc(&p), id);   /* same id comes back... */
	g1 = ss_idpool_gen(&p, id);
	CHECK_EQ_U64(g1, g0 + 1);
	CHECK(!ss_idpool_valid(&p, id, g0));               /* ...but the old handle stays stale */
	CHECK(ss_idpool_valid(&p, id, g1));
	ss_idpool_fini(&p);
}

/* Random alloc/free (valid and invalid) against a model of used flags and generations. */
static void test_random_model(void)
{
	enum { N = 1000 };
	static uint8_t used[N];
	static uint32_t gen[N];
	struct ss_idpool p;
	uint64_t rng = 42;
	uint32_t n_used = 0;
	unsigned bad = 0;

	CHECK_EQ_U64(ss_idpool_init(&p, N), 0);
	for (unsigned op = 0; op < 500000; op++) {
		uint64_t r = check_rand(&rng);
		uint32_t id = (uint32_t)(r >> 32) % (N + 8);   /* some out of range */

		if (r % 2 == 0) {
			int64_t got = ss_idpool_alloc(&p);

			if (n_used == N) {
				bad += got != -1;
			} else if (got < 0 || got >= N || used[got]) {
				bad++;
			} else {
				used[got] = 1;
				n_used++;
			}
		} else {
			int rc = ss_idpool_free(&p, id);

			if (id < N && used[id]) {
				bad += rc != 0;
				used[id] = 0;
				gen[id]++;
				n_used--;
			} else {
				bad += rc != -EINVAL;
			}
		}
		bad += p.n_free != N - n_used;
		if (id < N) {
			bad += ss_idpool_gen(&p, id) != gen[id];
			bad += ss_idpool_valid(&p, id, gen[id]) != (used[id] != 0);
			bad += ss_idpool_valid(&p, id, gen[id] - 1);
		}
	}
	CHECK_EQ_U64(bad, 0);
	/* Free everything, then all N ids come back, each once. */
	for (uint32_t i = 0; i < N; i++)
		if (used[i])
			CHECK_EQ_U64(ss_idpool_free(&p, i), 0);
	memset(used, 0, sizeof(used));
	for (uint32_t i = 0; i < N; i++) {
		int64_t got = ss_idpool_alloc(&p);

		CHECK(got >= 0 && got < N && !used[got]);
		if (got >= 0 && got < N)
			used[got] = 1;
	}
	CHECK_EQ_U64(ss_idpool_alloc(&p), (uint64_t)-1);
	ss_idpool_fini(&p);
}

int main(void)
{
	test_exhaust();
	test_free_errors();
	test_generations();
	test_random_model();
	return check_done("test_idpool");
}
