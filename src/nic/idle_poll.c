/* idle_poll.c - the fast path's adaptive number of empty polls before a sleep (see idle_poll.h). */
#include "nic/idle_poll.h"

/* Above this share of covered spells the window pays; below the other
 * mark it does not; in between the limit stays (hysteresis). */
#define SCORE_UP (SS_IDLE_POLL_SCORE_ONE * 5 / 8)
#define SCORE_DOWN (SS_IDLE_POLL_SCORE_ONE * 3 / 8)

static uint32_t floor_of(const struct ss_idle_poll *ip)
{
	return ip->max < SS_IDLE_POLL_MIN ? ip->max : SS_IDLE_POLL_MIN;
}

void ss_idle_poll_init(struct ss_idle_poll *ip, uint32_t max)
{
	ip->max = max ? max : 1;
	ip->limit = ip->max;
	ip->score = SS_IDLE_POLL_SCORE_ONE;
}

int ss_idle_poll_spell(struct ss_idle_poll *ip, uint32_t polls, uint64_t spin_ns,
		       uint64_t slept_ns)
{
	/* The window: max polls at what these took each. */
	uint64_t window = spin_ns / (polls ? polls : 1) * ip->max;
	uint32_t covered = spin_ns + slept_ns <= window ? SS_IDLE_POLL_SCORE_ONE : 0;

	/* score += (covered - score) / 8, rounded so that it reaches both ends. */
	if (covered > ip->score)
		ip->score += (covered - ip->score + 7) / 8;
	else
		ip->score -= (ip->score - covered + 7) / 8;
	if (ip->limit != ip->max && ip->score >= SCORE_UP) {
		ip->limit = ip->max;
		return 1;
	}
	if (ip->limit == ip->max && ip->max > floor_of(ip) && ip->score < SCORE_DOWN) {
		ip->limit = floor_of(ip);
		return -1;
	}
	return 0;
}
