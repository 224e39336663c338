/* test_idle_poll.c - the fast path's adaptive number of empty polls before a sleep. */
#include "check.h"

#include "nic/idle_poll.h"

/* One idle spell: @polls empty polls of @poll_ns each, then a sleep of
 * @slept_ns; returns what the limit did. */
static int spell(struct ss_idle_poll *ip, uint32_t polls, uint64_t poll_ns, uint64_t slept_ns)
{
	return ss_idle_poll_spell(ip, polls, polls * poll_ns, slept_ns);
}

/* Spells of @gap_ns each (polls of 800 ns, as many as the limit) until the
 * limit changes; returns how many it took (0: not within @most). */
static unsigned spells_until_change(struct ss_idle_poll *ip, uint64_t gap_ns, unsigned most)
{
	for (unsigned i = 1; i <= most; i++) {
		uint64_t spin = (uint64_t)ip->limit * 800;
		if (spell(ip, ip->limit, 800, gap_ns > spin ? gap_ns - spin : 0) != 0)
			return i;
	}
	return 0;
}

/* Work spaced wider than the window (64 polls of 800 ns = 51.2 us): after
 * a run of such spells the polls drop to the floor and stay there. */
static void test_down_when_polling_catches_nothing(void)
{
	struct ss_idle_poll ip;
	ss_idle_poll_init(&ip, 64);
	CHECK_EQ_U64(ip.limit, 64);
	CHECK_EQ_U64(ip.score, SS_IDLE_POLL_SCORE_ONE);
	unsigned n = spells_until_change(&ip, 100000, 100);
	CHECK(n >= 4 && n <= 12);
	CHECK_EQ_U64(ip.limit, SS_IDLE_POLL_MIN);
	CHECK(spells_until_change(&ip, 100000, 1000) == 0);
	CHECK_EQ_U64(ip.limit, SS_IDLE_POLL_MIN);
	CHECK_EQ_U64(ip.score, 0);
}

/* Work that the window would have caught: back up to max (not more). */
static void test_up_when_a_window_would_have_caught_it(void)
{
	struct ss_idle_poll ip;
	ss_idle_poll_init(&ip, 64);
	CHECK(spells_until_change(&ip, 100000, 100) > 0);
	CHECK(spells_until_change(&ip, 100000, 100) == 0);
	/* 2 polls, then work 40 us after the last: a 51.2 us window covers it. */
	unsigned n = spells_until_change(&ip, 40000, 100);
	CHECK(n >= 4 && n <= 12);
	CHECK_EQ_U64(ip.limit, 64);
	CHECK(spells_until_change(&ip, 40000, 1000) == 0);
	CHECK_EQ_U64(ip.limit, 64);
	CHECK_EQ_U64(ip.score, SS_IDLE_POLL_SCORE_ONE);
}

/* One odd spell does not flip the choice, either way; nor does one in
 * four (the marks are 3/8 and 5/8 of spells covered). */
static void test_hysteresis(void)
{
	struct ss_idle_poll ip;
	ss_idle_poll_init(&ip, 64);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t gap = i % 4 == 3 ? 100000 : 20000;
		uint64_t spin = (uint64_t)ip.limit * 800;
		CHECK(spell(&ip, ip.limit, 800, gap > spin ? gap - spin : 0) == 0);
	}
	CHECK_EQ_U64(ip.limit, 64);
	CHECK(spells_until_change(&ip, 100000, 100) > 0);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t gap = i % 4 == 3 ? 20000 : 100000;
		CHECK(spell(&ip, ip.limit, 800, gap - ip.limit * 800) == 0);
	}
	CHECK_EQ_U64(ip.limit, SS_IDLE_POLL_MIN);
}

/* The window is what max polls would last at what the polls just took:
 * slower polls (a yield that ran the application) make a longer one.
 * Exactly the window counts as covered. */
static void test_window_from_measured_polls(void)
{
	struct ss_idle_poll ip;
	ss_idle_poll_init(&ip, 64);
	ip.score = 128;
	/* 4 polls of 2 us: a 128 us window covers a 100 us spell. */
	CHECK(spell(&ip, 4, 2000, 100000 - 8000) == 0);
	CHECK_EQ_U64(ip.score, 128 + 16);
	/* 8 polls of 1 us: a 64 us window does not. */
	CHECK(spell(&ip, 8, 1000, 100000 - 8000) == 0);
	CHECK_EQ_U64(ip.score, 144 - 18);
	ip.score = 128;
	CHECK(spell(&ip, 8, 800, 64 * 800 - 8 * 800) == 0);
	CHECK_EQ_U64(ip.score, 144);
	CHECK(spell(&ip, 8, 800, 64 * 800 - 8 * 800 + 1) == 0);
	CHECK_EQ_U64(ip.score, 126);
	/* A sleep ended at once (a timer due, a kick): covered. */
	CHECK(spell(&ip, 4, 1000, 0) == 0);
	CHECK_EQ_U64(ip.score, 143);
}

/* max 0 and 1 never change; a max under the floor is its own floor; polls
 * 0 does not divide by zero. */
static void test_bounds(void)
{
	struct ss_idle_poll ip;
	ss_idle_poll_init(&ip, 0);
	CHECK_EQ_U64(ip.max, 1);
	CHECK_EQ_U64(ip.limit, 1);
	CHECK(spells_until_change(&ip, 1000000, 100) == 0);
	CHECK_EQ_U64(ip.limit, 1);
	CHECK(spells_until_change(&ip, 0, 100) == 0);
	CHECK_EQ_U64(ip.limit, 1);

	ss_idle_poll_init(&ip, 3);
	CHECK(spells_until_change(&ip, 1000000, 100) > 0);
	CHECK_EQ_U64(ip.limit, 2);
	CHECK(spells_until_change(&ip, 0, 100) > 0);
	CHECK_EQ_U64(ip.limit, 3);

	/* polls 0 counts as 1 poll of 5 us: a 15 us window covers 15 us, not
	 * 15 us + 1 ns: the score moves, the limit does not (one spell). */
	uint32_t score = ip.score;
	CHECK(ss_idle_poll_spell(&ip, 0, 5000, 10000) == 0);
	CHECK(ip.score > score || ip.score == SS_IDLE_POLL_SCORE_ONE);
	score = ip.score;
	CHECK(ss_idle_poll_spell(&ip, 0, 5000, 10001) == 0);
	CHECK(ip.score < score);
}

int main(void)
{
	test_down_when_polling_catches_nothing();
	test_up_when_a_window_would_have_caught_it();
	test_hysteresis();
	test_window_from_measured_polls();
	test_bounds();
	return check_done("test_idle_poll");
}
