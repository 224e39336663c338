/* Unit tests for wire/seq.h (RFC 9293 §3.4, RFC 1982 serial arithmetic). */
#include "check.h"
#include "wire/seq.h"

static void test_compare(void)
{
	CHECK(ss_seq_lt(1, 2));
	CHECK(!ss_seq_lt(2, 1));
	CHECK(!ss_seq_lt(5, 5));
	CHECK(ss_seq_leq(5, 5));
	CHECK(ss_seq_geq(5, 5));
	CHECK(!ss_seq_gt(5, 5));
	CHECK(ss_seq_gt(2, 1));

	/* wraparound: 0xFFFFFFF0 comes before 0x10 */
	CHECK(ss_seq_lt(0xFFFFFFF0u, 0x10));
	CHECK(ss_seq_leq(0xFFFFFFF0u, 0x10));
	CHECK(ss_seq_gt(0x10, 0xFFFFFFF0u));
	CHECK(ss_seq_geq(0x10, 0xFFFFFFF0u));
	CHECK(!ss_seq_gt(0xFFFFFFF0u, 0x10));
	CHECK(!ss_seq_lt(0x10, 0xFFFFFFF0u));
	CHECK(ss_seq_lt(0xFFFFFFFFu, 0));
	CHECK(ss_seq_gt(0, 0xFFFFFFFFu));

	/* largest distance that still orders correctly: 2^31 - 1 */
	CHECK(ss_seq_lt(0, 0x7FFFFFFF));
	CHECK(ss_seq_gt(0x7FFFFFFF, 0));
	CHECK(ss_seq_lt(0x80000000u, 0xFFFFFFFFu));
	/* beyond it the order flips (distance > 2^31 is "behind") */
	CHECK(ss_seq_gt(0, 0x80000001u));
}

static void test_between(void)
{
	/* half-open [lo, hi) */
	CHECK(ss_seq_between(100, 100, 200));
	CHECK(ss_seq_between(199, 100, 200));
	CHECK(!ss_seq_between(200, 100, 200));
	CHECK(!ss_seq_between(99, 100, 200));
	/* empty window contains nothing */
	CHECK(!ss_seq_between(100, 100, 100));
	CHECK(!ss_seq_between(0, 100, 100));
	/* window across the wrap */
	CHECK(ss_seq_between(0xFFFFFFF0u, 0xFFFFFFF0u, 0x10));
	CHECK(ss_seq_between(0xFFFFFFFFu, 0xFFFFFFF0u, 0x10));
	CHECK(ss_seq_between(0, 0xFFFFFFF0u, 0x10));
	CHECK(ss_seq_between(0xF, 0xFFFFFFF0u, 0x10));
	CHECK(!ss_seq_between(0x10, 0xFFFFFFF0u, 0x10));
	CHECK(!ss_seq_between(0xFFFFFFEFu, 0xFFFFFFF0u, 0x10));
	CHECK(!ss_seq_between(0x80000000u, 0xFFFFFFF0u, 0x10));
	/* a window of 2^32 - 1 holds everything but hi */
	CHECK(ss_seq_between(0x7FFFFFFF, 0, 0xFFFFFFFFu));
	CHECK(!ss_seq_between(0xFFFFFFFFu, 0, 0xFFFFFFFFu));
	/* windows wider than 2^31 still work (unlike lt/geq pairs) */
	CHECK(ss_seq_between(0xC0000000u, 0x10, 0xF0000000u));
}

int main(void)
{
	test_compare();
	test_between();
	return check_done("test_seq");
}
