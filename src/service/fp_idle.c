/* fp_idle.c - the fast path between rounds: yield in a long busy spell, poll again, sleep until work. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "nic/nic_wake.h"
#include "service/fp_internal.h"
#include "util/log.h"
#include "stack/stack.h"

#define MAX_SLEEP_MS 1000               /* re-check the stop flag at least this often */
#define TX_RETRY_NS (50 * 1000)         /* frames kept for a full TX ring: retry after */

/* --idle-yield: yield while idle only after light rounds (at most this
 * many frames): at one connection the application and the kernel's
 * receive thread need the CPU now; under load, yielding cuts batches. */
#define YIELD_MAX_RX 2

/* The pacer holds segments: no yield, which could give the CPU away for
 * a whole time slice and send paced departures late. */
static inline bool pacing(const struct ss_fastpath *fp)
{
	return fp->stack && ss_stack_pacing(fp->stack);
}

void ss_fp_busy(struct ss_fastpath *fp, struct ss_fp_rounds *r, unsigned rx)
{
	if (rx)
		r->light = rx <= YIELD_MAX_RX;
	if (ss_nic_wake_armed(&fp->wake))
		ss_nic_wake_disarm(&fp->wake);
	r->idle = 0;
	r->busy_rx += rx;
	if (fp->busy_yield && r->busy_rx >= fp->busy_yield && !pacing(fp)) {
		/* A long busy spell on a shared CPU: the application's events
		 * wait until the scheduler preempts us, thousands of requests
		 * later, when every line they name has left the cache.  Let it
		 * take them now (--busy-yield; not while pacing, as below). */
		r->busy_rx = 0;
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_busy_yields);
		sched_yield();
	}
}

/* How long the coming sleep may last: the next timer, gateway ARP or TX retry. */
static uint64_t sleep_budget(struct ss_fastpath *fp, uint64_t now)
{
	uint64_t wait_ns = (uint64_t)MAX_SLEEP_MS * SS_NS_PER_MS;
	if (fp->gateway)
		wait_ns = fp->gw_next_ns <= now ? 0 : RTE_MIN(wait_ns, fp->gw_next_ns - now);
	if (fp->stack) {
		uint64_t next_us = ss_stack_next_deadline(fp->stack);
		if (next_us != UINT64_MAX) {
			uint64_t next = next_us * 1000;
			wait_ns = next <= now ? 0 : RTE_MIN(wait_ns, next - now);
		}
	}
	if (fp->ntx) {
		/* Frames kept for a full TX ring: the peer frees slots
		 * without telling us, so try again soon. */
		wait_ns = RTE_MIN(wait_ns, (uint64_t)TX_RETRY_NS);
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_tx_waits);
	}
	return wait_ns;
}

/* Blocks until RX has frames, a kick or a doorbell arrives, or the next timer is due. */
static void sleep_until_work(struct ss_fastpath *fp, uint64_t now)
{
	uint64_t wait_ns = sleep_budget(fp, now);
	int fds[2] = { fp->kick_fd, fp->doorbell_fd };
	unsigned nfds = fp->doorbell_fd >= 0 ? 2 : 1;

	struct ss_nic_wait_plan plan = ss_nic_wake_plan(&fp->wake, wait_ns);
	unsigned ready;

	if (plan.napped) /* no peer yet: nothing would wake us when it comes */
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_link_naps);
	ss_ctr_inc(&fp->ctr, SS_CTR_fp_sleeps);
	int rc = ss_nic_wake_wait(&plan, fds, nfds, &ready);
	if (rc < 0)
		SS_WARN("fast path %u: poll: %s", fp->id, strerror(-rc));
	if (ready & 2u) {
		uint64_t v;
		if (read(fp->doorbell_fd, &v, sizeof(v)) < 0)
			ss_ctr_inc(&fp->ctr, SS_CTR_app_kick_failed);
	}
	ss_ctr_inc(&fp->ctr, SS_CTR_fp_wakeups);
}

/* After a sleep: adapt the number of empty polls to how long the spell lasted. */
static void adapt_polls(struct ss_fastpath *fp, const struct ss_fp_rounds *r, uint64_t now)
{
	int adapt = fp->idle_adapt ? ss_idle_poll_spell(&fp->idle, r->idle, now - r->idle_since,
							ss_fp_now_ns() - now)
				   : 0;
	if (adapt > 0)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_idle_polls_grown);
	else if (adapt < 0)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_idle_polls_shrunk);
}

/*
 * Adaptive polling: a few empty polls catch back-to-back work cheaply;
 * after that, block instead of spinning.  How many follows how long the
 * idle spells last (idle_poll.h).
 */
void ss_fp_idle(struct ss_fastpath *fp, struct ss_fp_rounds *r, uint64_t now)
{
	r->busy_rx = 0;
	if (r->idle++ == 0)
		r->idle_since = now;
	if (r->idle >= fp->idle.limit) {
		if (!fp->stack || ss_stack_may_sleep(fp->stack)) {
			/* Wake-up on, then one more round before sleeping. */
			if (!ss_nic_wake_armed(&fp->wake) && ss_nic_wake_arm(&fp->wake, now))
				return;
			sleep_until_work(fp, now);
			adapt_polls(fp, r, now);
			if (ss_nic_wake_armed(&fp->wake))
				ss_nic_wake_disarm(&fp->wake);
			r->last = 0;
			if (fp->stack)
				ss_stack_woke(fp->stack);
		}
		r->idle = 0;
	} else if (fp->idle_yield && r->light && !pacing(fp)) {
		/* Sharing the CPU with the application (and the kernel's
		 * receive thread): let them run now, the reply comes sooner
		 * than after a sleep and a wake-up.  Not while the pacer holds
		 * segments: a yield can give the CPU away for a whole time
		 * slice, and departures would leave late (a capped flow's
		 * slow start would suffer). */
		sched_yield();
	}
}
