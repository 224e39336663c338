/* timer_wheel.c - hashed timer wheel over intrusive circular lists. */
#include "stack/timer_wheel.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Invariant between calls: every armed timer either has tick(deadline) >=
 * now_tick and sits in slot tick(deadline) & mask, or was armed with a
 * deadline before now_tick and sits in slot now_tick & mask (where the
 * next expire looks first). Slots of ticks before now_tick hold nothing
 * that is due.
 */

static inline uint32_t wheel_mask(const struct ss_timer_wheel *w)
{
	return w->n_slots - 1;
}

/* The timer a slot list's link belongs to (the link is its first member). */
static inline struct ss_timer *link_timer(struct ss_list *l)
{
	return SS_LIST_ENTRY(l, struct ss_timer, link);
}

static inline const struct ss_timer *link_timer_const(const struct ss_list *l)
{
	return SS_LIST_ENTRY(l, const struct ss_timer, link);
}

_Static_assert(offsetof(struct ss_timer, link) == 0, "link first");

static inline void timer_unlink(struct ss_timer *t)
{
	ss_list_del(&t->link);
	t->armed = 0;
}

int ss_timer_wheel_init(struct ss_timer_wheel *w, uint32_t n_slots, uint64_t tick_us,
			uint64_t now_us)
{
	if (n_slots == 0 || n_slots > (UINT32_C(1) << 31) || (n_slots & (n_slots - 1)) != 0 ||
	    tick_us == 0)
		return -EINVAL;
	w->slots = malloc((size_t)n_slots * sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < n_slots; i++)
		ss_list_init(&w->slots[i]);
	w->n_slots = n_slots;
	w->tick_us = tick_us;
	w->now_tick = now_us / tick_us;
	w->n_armed = 0;
	w->now_us = now_us;
	w->next_us = UINT64_MAX;
	return 0;
}

void ss_timer_wheel_fini(struct ss_timer_wheel *w)
{
	free(w->slots);
	w->slots = NULL;
	w->n_slots = 0;
	w->n_armed = 0;
	w->next_us = UINT64_MAX;
}

void ss_timer_init(struct ss_timer *t)
{
	t->link.next = t->link.prev = NULL;
	t->deadline_us = 0;
	t->slot = 0;
	t->armed = 0;
}

void ss_timer_arm(struct ss_timer_wheel *w, struct ss_timer *t, uint64_t deadline_us)
{
	uint64_t tick = deadline_us / w->tick_us;

	if (t->armed)
		timer_unlink(t);
	else
		w->n_armed++;
	if (tick < w->now_tick)
		tick = w->now_tick;     /* past: fires at the next expire */
	t->deadline_us = deadline_us;
	t->slot = (uint32_t)(tick & wheel_mask(w));
	t->armed = 1;
	/* append: a tick fires in arming order */
	ss_list_add_tail(&w->slots[t->slot], &t->link);
	if (deadline_us < w->next_us)
		w->next_us = deadline_us;
}

void ss_timer_cancel(struct ss_timer_wheel *w, struct ss_timer *t)
{
	if (!t->armed)
		return;
	timer_unlink(t);
	/* next_us stays a valid (possibly early) bound; expire refreshes it. */
	if (--w->n_armed == 0)
		w->next_us = UINT64_MAX;
}

/* Most slots one refresh of next_us walks: bounds the cost of one expire. */
#define WHEEL_SCAN_SLOTS 256u

/*
 * Lower bound on the earliest deadline, given that nothing armed is due
 * at w->now_us. Walks slots from now_tick; a slot at offset i only holds
 * ticks >= now_tick + i, so the walk stops once a slot's tick passes the
 * best deadline found so far: the result is exact if that happens within
 * WHEEL_SCAN_SLOTS slots (or one rotation), else the start of the first
 * tick not walked - an early wake-up, after which the walk goes on.
 */
static uint64_t wheel_min_deadline(const struct ss_timer_wheel *w)
{
	uint64_t best = UINT64_MAX, n_scan = w->n_slots, tick;
	uint32_t mask = wheel_mask(w);

	if (n_scan > WHEEL_SCAN_SLOTS)
		n_scan = WHEEL_SCAN_SLOTS;
	for (tick = w->now_tick; tick < w->now_tick + n_scan; tick++) {
		const struct ss_list *head = &w->slots[tick & mask], *l;

		if (tick > best / w->tick_us)
			return best;
		SS_LIST_FOR_EACH(l, head) {
			const struct ss_timer *t = link_timer_const(l);

			if (t->deadline_us < best)
				best = t->deadline_us;
		}
	}
	if (n_scan < w->n_slots && tick <= best / w->tick_us)
		best = tick * w->tick_us;       /* no overflow: tick <= best / tick_us */
	return best;
}

unsigned ss_timer_wheel_expire(struct ss_timer_wheel *w, uint64_t now_us,
			       struct ss_timer **out, unsigned max)
{
	uint32_t mask = wheel_mask(w);
	uint64_t new_tick, n_visit;
	unsigned n = 0;

	if (now_us < w->now_us)
		now_us = w->now_us;     /* time does not go backwards */
	w->now_us = now_us;
	new_tick = now_us / w->tick_us;
	if (w->n_armed == 0) {
		w->now_tick = new_tick;
		return 0;
	}
	if (max == 0)
		return 0;
	if (now_us < w->next_us) {
		/*
		 * Nothing is due, so every armed timer is in a tick >= new_tick
		 * (none sits clamped in an old one): skip the walk. This keeps
		 * calls between deadlines O(1) even when the current slot holds
		 * many timers of later rotations.
		 */
		w->now_tick = new_tick;
		return 0;
	}

	/* Nothing armed is due before next_us, and a caller may skip the calls
	 * while now is below it (now_tick then lags): the walk starts at
	 * next_us's tick when that is later.  A timer armed with a past
	 * deadline sits at the now_tick of its arming, not before next_us's
	 * tick (next_us went down to its deadline). */
	if (w->now_tick < w->next_us / w->tick_us)
		w->now_tick = w->next_us / w->tick_us;
	/* Ticks now_tick..new_tick; past one rotation every slot has been seen. */
	n_visit = new_tick - w->now_tick + 1;
	if (n_visit > w->n_slots)
		n_visit = w->n_slots;
	for (uint64_t i = 0; i < n_visit; i++) {
		struct ss_list *head = &w->slots[(w->now_tick + i) & mask], *l, *next;

		SS_LIST_FOR_EACH_SAFE(l, next, head) {
			struct ss_timer *t = link_timer(l);

			if (t->deadline_us > now_us)
				continue;       /* a later rotation, or later in this tick */
			if (n == max) {
				/* Full: resume at this slot next time. */
				w->now_tick += i;
				w->n_armed -= n;
				return n;
			}
			timer_unlink(t);
			out[n++] = t;
		}
	}
	w->now_tick = new_tick;
	w->n_armed -= n;        /* the n taken out above */

	if (w->n_armed == 0)
		w->next_us = UINT64_MAX;
	else if (w->next_us <= now_us)
		w->next_us = wheel_min_deadline(w);
	return n;
}

