/* timer_wheel.h - hashed timer wheel: O(1) arm/cancel, expiry cost grows with armed timers. */
#ifndef SS_SERVICE_TIMER_WHEEL_H
#define SS_SERVICE_TIMER_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

#include "util/list.h"

/*
 * A single-level hashed wheel (Varghese & Lauck, scheme 6). Time is cut
 * into ticks of @tick_us; a timer due in tick T sits in slot T % n_slots,
 * in a circular doubly linked list (util/list.h) whose head is in @slots.
 * Timers more than one rotation away share a slot with nearer ones and are
 * skipped (left armed) until their own rotation comes round.
 *
 * The timer is embedded in the caller's object (a connection); the wheel
 * never allocates after init. Not thread-safe: one thread (the owner of
 * the connections) arms, cancels and expires.
 *
 * Time is in microseconds and must not go backwards; a smaller @now_us
 * than an earlier one is treated as the earlier one.
 */
struct ss_timer {
	/* Its list link (util/list.h), first member; NULL when idle: on a
	 * wheel slot, or on one of the stack's delayed-ACK queues
	 * (stack_conn.c). */
	struct ss_list link;
	uint64_t deadline_us;
	uint32_t slot;                  /* slot index while armed */
	uint8_t armed;
};

struct ss_timer_wheel {
	struct ss_list *slots;          /* n_slots list heads */
	uint32_t n_slots;               /* power of two */
	uint64_t tick_us;
	uint64_t now_tick;              /* first tick not yet fully expired */
	uint32_t n_armed;
	uint64_t now_us;                /* latest time given to init/expire */
	uint64_t next_us;               /* lower bound on the earliest deadline */
};

/*
 * @n_slots: a power of two (>= 1, <= 2^31); @tick_us: > 0; @now_us: the
 * current time. Returns 0, -EINVAL on bad arguments or -ENOMEM.
 */
int ss_timer_wheel_init(struct ss_timer_wheel *w, uint32_t n_slots, uint64_t tick_us,
			uint64_t now_us);

/* Frees the slots. Armed timers are simply forgotten (their links go stale). */
void ss_timer_wheel_fini(struct ss_timer_wheel *w);

/* Puts @t in the idle (not armed) state. Call once before first use. */
void ss_timer_init(struct ss_timer *t);

/*
 * Arms @t for @deadline_us, first cancelling it if it is armed. O(1).
 * A deadline at or before the current time fires at the next expire call.
 */
void ss_timer_arm(struct ss_timer_wheel *w, struct ss_timer *t, uint64_t deadline_us);

/* Disarms @t. O(1); a no-op if @t is not armed. */
void ss_timer_cancel(struct ss_timer_wheel *w, struct ss_timer *t);

static inline bool ss_timer_armed(const struct ss_timer *t)
{
	return t->armed != 0;
}

/*
 * Advances the wheel to @now_us and pops (disarms and stores in @out) up
 * to @max timers whose deadline <= @now_us. Returns how many it stored.
 *
 * Timers come out in slot order starting from the current tick: in
 * deadline-tick order when @now_us is within one rotation of the previous
 * call, otherwise only grouped by slot. Within a tick, in arming order.
 * When @max is reached the wheel stops where it is, and the next call
 * returns the rest (nothing is lost). A caller may re-arm or cancel any
 * timer, including the ones returned, once this returns.
 *
 * Cost: O(1) while @now_us is before ss_timer_wheel_next(); otherwise
 * slots passed (at most n_slots) + timers looked at in them, plus the
 * refresh of the next() bound.
 */
unsigned ss_timer_wheel_expire(struct ss_timer_wheel *w, uint64_t now_us,
			       struct ss_timer **out, unsigned max);

/*
 * A lower bound on the earliest armed deadline, for a poll timeout: never
 * later than it. UINT64_MAX when nothing is armed. O(1): it returns a
 * cached bound, lowered by arm and refreshed by expire once time reaches
 * it. The bound is exact except: after the earliest timer was cancelled
 * (it stays at that deadline), while due timers wait for an expire cut
 * short by @max, and when the earliest deadline is more than 256 slots
 * ahead (it is then the start of the 257th tick: an early wake-up). The
 * refresh walks at most 256 slots and the timers in them.
 */
static inline uint64_t ss_timer_wheel_next(const struct ss_timer_wheel *w)
{
	return w->next_us;
}

/*
 * True when ss_timer_wheel_expire(@w, @now_us, ...) may return timers:
 * @now_us has reached ss_timer_wheel_next().  Callers that poll often may
 * call expire only then (the wheel catches up on the ticks it did not
 * see at the next call).
 */
static inline bool ss_timer_wheel_due(const struct ss_timer_wheel *w, uint64_t now_us)
{
	return now_us >= w->next_us;
}

#endif /* SS_SERVICE_TIMER_WHEEL_H */
