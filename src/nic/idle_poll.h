/* idle_poll.h - how many empty polls a fast path makes before it sleeps, adapted to how long it stays idle. */
#ifndef SS_SERVICE_IDLE_POLL_H
#define SS_SERVICE_IDLE_POLL_H

#include <stdint.h>

/*
 * A fast path that finds no work polls again a few times before it blocks:
 * work that comes within those polls costs no wake-up, and in a VM the
 * wake-up of a halted vCPU is expensive (a one-connection echo serves
 * fewer requests when the thread sleeps at once).  But polls that end in a
 * sleep anyway are CPU spent for nothing: requests that come a little
 * further apart than the polls last pay for every poll and a sleep each.
 *
 * Polls that catch the work stop there: they cost the gap, however many
 * were allowed.  Polls that do not cost the whole window.  So the choice
 * is all or few: max polls while most idle spells end within what max
 * polls last, SS_IDLE_POLL_MIN while most do not.  After each sleep the
 * spell (its polls and the sleep) is compared with the window, computed
 * from what the polls just took; a score (an average with weight 1/8 per
 * spell) decides, so one odd spell does not flip the choice.  As Linux's
 * guest haltpoll cpuidle governor adapts its poll time to how long the
 * vCPU stays halted.  Pure: the caller measures the times.
 */

#define SS_IDLE_POLL_MIN 2u
#define SS_IDLE_POLL_SCORE_ONE 256u  /* the score of every spell covered */

struct ss_idle_poll {
	uint32_t max;     /* the most empty polls before a sleep (--idle-polls) */
	uint32_t limit;   /* empty polls before the next sleep: max or the floor */
	uint32_t score;   /* 0..SS_IDLE_POLL_SCORE_ONE: the share of recent
			   * spells that a full window would have covered */
};

/* Starts at @max polls (at least 1) with a full score; the floor is
 * SS_IDLE_POLL_MIN, or max if that is smaller. */
void ss_idle_poll_init(struct ss_idle_poll *ip, uint32_t max);

/* After a sleep: the spell's @polls empty polls (0 counts as 1) took
 * @spin_ns, then the sleep @slept_ns.  Returns 1 if the limit went up to
 * max, -1 if it went down to the floor, 0 if it stayed. */
int ss_idle_poll_spell(struct ss_idle_poll *ip, uint32_t polls, uint64_t spin_ns,
		       uint64_t slept_ns);

#endif
