/* test_populate.c - how far ahead a shared region is populated: targets, whole pages, kick marks. */
#include "service/populate.h"

#include "check.h"

#define KB 1024ull
#define MB (1024ull * KB)

static void test_target(void)
{
	const uint64_t slot = 128 * KB; /* the default rings: 64 KiB each way */

	/* Nothing handed out yet: 32 MiB of rings, 256 slots. */
	CHECK_EQ_U64(ss_populate_target(0, 16384, slot), 256);
	/* Below 256 in use, the 32 MiB ahead; then as many as in use. */
	CHECK_EQ_U64(ss_populate_target(100, 16384, slot), 356 + 12); /* 16 a page: 368 */
	CHECK_EQ_U64(ss_populate_target(256, 16384, slot), 512);
	CHECK_EQ_U64(ss_populate_target(1000, 16384, slot), 2000);
	CHECK_EQ_U64(ss_populate_target(1001, 16384, slot), 2016);
	/* Capped at the region's slots. */
	CHECK_EQ_U64(ss_populate_target(10000, 16384, slot), 16384);
	CHECK_EQ_U64(ss_populate_target(16384, 16384, slot), 16384);
	CHECK_EQ_U64(ss_populate_target(5, 16, slot), 16);
	/* Large rings: one slot is more than a page, no rounding. */
	CHECK_EQ_U64(ss_populate_target(0, 1024, 8 * MB), 4);
	CHECK_EQ_U64(ss_populate_target(7, 1024, 8 * MB), 14);
	/* Small rings (4 KiB each way): 256 slots a page. */
	CHECK_EQ_U64(ss_populate_target(0, 65536, 8 * KB), 4096);
	CHECK_EQ_U64(ss_populate_target(5000, 65536, 8 * KB), 10240);
	/* Odd ring sums round to whole slots of a page (2 MiB / 192 KiB = 10). */
	CHECK_EQ_U64(ss_populate_target(0, 1000, 192 * KB), 180);
	/* Whole pages: every target's rings end on a 2 MiB multiple (or the cap). */
	for (uint32_t hw = 0; hw < 3000; hw += 7) {
		uint32_t t = ss_populate_target(hw, 4096, slot);
		CHECK(t > hw || t == 4096);
		CHECK(t == 4096 || (t * slot) % (2 * MB) == 0);
		CHECK(t >= hw * 2 || t == 4096);
		CHECK(t <= hw * 2 + 256 + 16);
	}
	CHECK_EQ_U64(ss_populate_target(0, 100, 0), 100); /* degenerate: all */
}

static void test_kick_at(void)
{
	CHECK_EQ_U64(ss_populate_kick_at(0, 256, 16384), 128);
	CHECK_EQ_U64(ss_populate_kick_at(1000, 2000, 16384), 1500);
	CHECK_EQ_U64(ss_populate_kick_at(129, 400, 16384), 264);
	/* Everything populated: never again. */
	CHECK_EQ_U64(ss_populate_kick_at(10000, 16384, 16384), SS_POPULATE_NEVER);
	CHECK_EQ_U64(ss_populate_kick_at(0, 16, 16), SS_POPULATE_NEVER);
	/* A plan that did not get ahead kicks at once. */
	CHECK_EQ_U64(ss_populate_kick_at(300, 300, 16384), 300);

	/* Walking the high-water mark up one slot at a time, replanning at
	 * each kick (as the fast path and the slow path do): the rings of
	 * every slot handed out were planned before it was, and the kicks
	 * grow geometrically. */
	const uint64_t slot = 128 * KB;
	const uint32_t max = 65536;
	uint32_t target = ss_populate_target(0, max, slot);
	uint32_t at = ss_populate_kick_at(0, target, max);
	unsigned kicks = 0;
	for (uint32_t hw = 1; hw <= max; hw++) {
		CHECK(hw <= target);
		if (hw > at) {
			kicks++;
			target = ss_populate_target(hw, max, slot);
			at = ss_populate_kick_at(hw, target, max);
		}
	}
	CHECK_EQ_U64(target, max);
	CHECK_EQ_U64(at, SS_POPULATE_NEVER);
	CHECK_EQ_U64(kicks, 14); /* each 1.5x the last mark: 128, 264, 404, ... 35747 */
}

int main(void)
{
	test_target();
	test_kick_at();
	return check_done("test_populate");
}
