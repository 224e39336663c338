/* test_list.c - util/list.h: insertion order, removal, splices, walks, a randomized model check. */
#include <stdint.h>

#include "check.h"
#include "util/list.h"

struct item {
	uint64_t pad;   /* the link is not the first member */
	struct ss_list link;
	int v;
};

static struct item *item_of(struct ss_list *l)
{
	return SS_LIST_ENTRY(l, struct item, link);
}

/* The values on @h, first to last, into @out (at most @max); their count,
 * and the backward walk must see them reversed. */
static unsigned collect(struct ss_list *h, int *out, unsigned max)
{
	struct ss_list *l;
	unsigned n = 0, m;

	SS_LIST_FOR_EACH(l, h) {
		CHECK(l->next->prev == l);
		if (n < max)
			out[n] = item_of(l)->v;
		n++;
	}
	m = n;
	for (l = h->prev; l != h; l = l->prev) {
		m--;
		if (m < max)
			CHECK_EQ_U64(item_of(l)->v, out[m]);
	}
	CHECK_EQ_U64(m, 0);
	return n;
}

static void test_basic(void)
{
	struct ss_list h, *l, *nx;
	struct item it[4];
	int got[8];

	ss_list_init(&h);
	CHECK(ss_list_empty(&h));
	CHECK(ss_list_first(&h) == &h && ss_list_last(&h) == &h);
	for (int i = 0; i < 4; i++)
		it[i].v = i;
	ss_list_add_tail(&h, &it[1].link);
	ss_list_add_tail(&h, &it[2].link);
	ss_list_add_head(&h, &it[0].link);
	ss_list_add_after(&it[2].link, &it[3].link);
	CHECK(!ss_list_empty(&h));
	CHECK_EQ_U64(collect(&h, got, 8), 4);
	for (int i = 0; i < 4; i++)
		CHECK_EQ_U64(got[i], i);
	CHECK(item_of(ss_list_first(&h)) == &it[0]);
	CHECK(item_of(ss_list_last(&h)) == &it[3]);

	/* ss_list_del clears the links; ss_list_del_init leaves it alone. */
	ss_list_del(&it[1].link);
	CHECK(it[1].link.next == NULL && it[1].link.prev == NULL);
	ss_list_del_init(&it[2].link);
	CHECK(ss_list_empty(&it[2].link));
	CHECK_EQ_U64(collect(&h, got, 8), 2);
	CHECK_EQ_U64(got[0], 0);
	CHECK_EQ_U64(got[1], 3);

	/* The safe walk may take every element off. */
	SS_LIST_FOR_EACH_SAFE(l, nx, &h)
		ss_list_del(l);
	CHECK(ss_list_empty(&h));
	/* ... and does nothing on an empty list. */
	SS_LIST_FOR_EACH_SAFE(l, nx, &h)
		CHECK(0);
}

static void test_splice(void)
{
	struct ss_list a, b, c;
	struct item it[6];
	int got[8];

	ss_list_init(&a);
	ss_list_init(&b);
	for (int i = 0; i < 6; i++) {
		it[i].v = i;
		ss_list_add_tail(i < 3 ? &a : &b, &it[i].link);
	}
	ss_list_splice_tail(&a, &b);    /* a: 0 1 2 3 4 5 */
	CHECK(ss_list_empty(&b));
	CHECK_EQ_U64(collect(&a, got, 8), 6);
	for (int i = 0; i < 6; i++)
		CHECK_EQ_U64(got[i], i);

	ss_list_splice_tail(&a, &b);    /* empty: nothing moves */
	CHECK_EQ_U64(collect(&a, got, 8), 6);

	ss_list_move(&c, &a);           /* c: 0 .. 5, a empty */
	CHECK(ss_list_empty(&a));
	CHECK_EQ_U64(collect(&c, got, 8), 6);

	ss_list_del(&it[4].link);
	ss_list_del(&it[5].link);
	ss_list_add_tail(&b, &it[4].link);
	ss_list_add_tail(&b, &it[5].link);
	ss_list_splice_head(&c, &b);    /* c: 4 5 0 1 2 3 */
	CHECK(ss_list_empty(&b));
	CHECK_EQ_U64(collect(&c, got, 8), 6);
	CHECK_EQ_U64(got[0], 4);
	CHECK_EQ_U64(got[1], 5);
	CHECK_EQ_U64(got[2], 0);
	CHECK_EQ_U64(got[5], 3);

	ss_list_splice_head(&c, &b);    /* empty: nothing moves */
	CHECK_EQ_U64(collect(&c, got, 8), 6);
	ss_list_move(&a, &b);           /* from an empty list */
	CHECK(ss_list_empty(&a) && ss_list_empty(&b));
}

/* Random operations on two lists against an array model of each. */
#define MODEL_N 64

static void test_model(void)
{
	struct ss_list h[2];
	struct item it[MODEL_N];
	int model[2][MODEL_N], len[2] = {0, 0}, where[MODEL_N], got[MODEL_N];
	uint64_t seed = 12345;

	ss_list_init(&h[0]);
	ss_list_init(&h[1]);
	for (int i = 0; i < MODEL_N; i++) {
		it[i].v = i;
		where[i] = -1;
	}
	for (int step = 0; step < 20000; step++) {
		int i = (int)(check_rand(&seed) % MODEL_N), op = (int)(check_rand(&seed) % 4);
		int k = (int)(check_rand(&seed) % 2);

		if (where[i] < 0 && op < 2) {
			if (op == 0) {
				ss_list_add_tail(&h[k], &it[i].link);
				model[k][len[k]++] = i;
			} else {
				ss_list_add_head(&h[k], &it[i].link);
				memmove(&model[k][1], &model[k][0], (size_t)len[k] * sizeof(int));
				model[k][0] = i;
				len[k]++;
			}
			where[i] = k;
		} else if (where[i] >= 0 && op < 3) {
			int w = where[i], j = 0;

			while (model[w][j] != i)
				j++;
			memmove(&model[w][j], &model[w][j + 1], (size_t)(len[w] - j - 1) * sizeof(int));
			len[w]--;
			ss_list_del(&it[i].link);
			where[i] = -1;
		} else if (op == 3) {
			/* everything of the other list onto the end of list k */
			int o = 1 - k;

			ss_list_splice_tail(&h[k], &h[o]);
			for (int j = 0; j < len[o]; j++) {
				where[model[o][j]] = k;
				model[k][len[k]++] = model[o][j];
			}
			len[o] = 0;
		}
		for (int w = 0; w < 2; w++) {
			unsigned n = collect(&h[w], got, MODEL_N);

			CHECK_EQ_U64(n, len[w]);
			if (n == (unsigned)len[w] && memcmp(got, model[w], n * sizeof(int)) != 0)
				CHECK(!"list order differs from the model");
		}
		if (check_failures)
			break;
	}
}

int main(void)
{
	test_basic();
	test_splice();
	test_model();
	return check_done("test_list");
}
