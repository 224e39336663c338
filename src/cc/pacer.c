/* pacer.c - pacing scheduler: hashed timing wheel with a busy-slot bitmap and an overflow list; token buckets. */
#include "cc/pacer.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Invariants between calls:
 *  - an entry in the wheel has now_tick <= tick < now_tick + n_slots and
 *    sits in slot tick & mask, so each non-empty slot holds one tick;
 *  - busy bit i is set iff slot i is non-empty;
 *  - an entry in the overflow list has tick >= now_tick + n_slots when it
 *    is put there, and ovf_check_tick <= tick - n_slots + 1 for each one
 *    (a scan at or after that tick, and before tick, moves it in time);
 *  - a group with flows on its FIFO is itself queued.
 */

#define PACER_NONE UINT64_MAX
#define NS_PER_S UINT64_C(1000000000)
#define PACER_RATE_LIMIT (UINT64_C(1) << 40)          /* bytes/s, as cc.h */

static inline uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t u64_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The link is the first member of the entry, the entry of a group; a
 * flow's entry is its last member (its per-send fields come first). */
static inline struct ss_pacer_ent *link_ent(struct ss_list *l)
{
	return SS_LIST_ENTRY(l, struct ss_pacer_ent, link);
}

static inline struct ss_pacer_flow *ent_flow(struct ss_pacer_ent *e)
{
	return (struct ss_pacer_flow *)(void *)((uint8_t *)e - offsetof(struct ss_pacer_flow, ent));
}

static inline struct ss_pacer_group *ent_group(struct ss_pacer_ent *e)
{
	return (struct ss_pacer_group *)(void *)e;
}

_Static_assert(offsetof(struct ss_pacer_ent, link) == 0, "link first");
_Static_assert(offsetof(struct ss_pacer_group, ent) == 0, "ent first");

/* ---- token bucket ---------------------------------------------------- */

int ss_pacer_bucket_init(struct ss_pacer_bucket *b, uint64_t rate, uint64_t burst,
			 uint64_t now_ns)
{
	if (rate == 0 || rate > PACER_RATE_LIMIT || burst == 0 || burst > SS_PACER_MAX_CHARGE)
		return -EINVAL;
	b->rate = rate;
	b->burst = burst;
	b->credit = (int64_t)(burst * NS_PER_S);
	b->last_ns = now_ns;
	return 0;
}

int ss_pacer_bucket_set_rate(struct ss_pacer_bucket *b, uint64_t rate, uint64_t now_ns)
{
	if (rate == 0 || rate > PACER_RATE_LIMIT)
		return -EINVAL;
	ss_pacer_bucket_refill(b, now_ns);
	b->rate = rate;
	return 0;
}

int ss_pacer_bucket_set(struct ss_pacer_bucket *b, uint64_t rate, uint64_t burst,
			uint64_t now_ns)
{
	if (rate == 0 || rate > PACER_RATE_LIMIT || burst == 0 || burst > SS_PACER_MAX_CHARGE)
		return -EINVAL;
	ss_pacer_bucket_refill(b, now_ns);
	b->rate = rate;
	b->burst = burst;
	if (b->credit > (int64_t)(burst * NS_PER_S))
		b->credit = (int64_t)(burst * NS_PER_S);
	return 0;
}

uint64_t ss_pacer_bucket_next_ns(struct ss_pacer_bucket *b, uint64_t now_ns)
{
	uint64_t debt;

	ss_pacer_bucket_refill(b, now_ns);
	if (b->credit >= 0)
		return now_ns;
	debt = (uint64_t)-b->credit;
	return b->last_ns + (debt + b->rate - 1) / b->rate;
}

/* ---- wheel ------------------------------------------------------------ */

void ss_pacer_params_default(struct ss_pacer_params *p)
{
	p->n_slots = 16384;
	p->slot_ns = 1000;
	p->max_lag_ns = 10000;
}

int ss_pacer_init(struct ss_pacer *p, const struct ss_pacer_params *prm, uint64_t now_ns)
{
	uint32_t n = prm->n_slots;

	if (n < 64 || n > (UINT32_C(1) << 24) || (n & (n - 1)) != 0 || prm->slot_ns == 0)
		return -EINVAL;
	p->slots = malloc((size_t)n * sizeof(*p->slots));
	p->busy = calloc(n / 64, sizeof(*p->busy));
	if (!p->slots || !p->busy) {
		free(p->slots);
		free(p->busy);
		p->slots = NULL;
		p->busy = NULL;
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		ss_list_init(&p->slots[i]);
	p->n_slots = n;
	p->slot_ns = prm->slot_ns;
	p->max_lag_ns = prm->max_lag_ns;
	p->now_tick = now_ns / prm->slot_ns;
	ss_list_init(&p->overflow);
	p->n_overflow = 0;
	p->ovf_check_tick = PACER_NONE;
	p->ovf_last_scan = p->now_tick;
	p->n_queued = 0;
	p->ovf_scans = 0;
	p->ovf_looked = 0;
	p->tick_holds = 0;
	return 0;
}

void ss_pacer_fini(struct ss_pacer *p)
{
	free(p->slots);
	free(p->busy);
	p->slots = NULL;
	p->busy = NULL;
	p->n_slots = 0;
	p->n_queued = 0;
}

/* Tick at which something due at @t_ns may be served: never early. */
static inline uint64_t pacer_tick_of(const struct ss_pacer *p, uint64_t t_ns)
{
	return t_ns / p->slot_ns + (t_ns % p->slot_ns != 0);
}

static inline void busy_set(struct ss_pacer *p, uint32_t slot)
{
	p->busy[slot >> 6] |= UINT64_C(1) << (slot & 63);
}

static inline void busy_clear(struct ss_pacer *p, uint32_t slot)
{
	p->busy[slot >> 6] &= ~(UINT64_C(1) << (slot & 63));
}

static void pacer_enqueue(struct ss_pacer *p, struct ss_pacer_ent *e, uint64_t tick)
{
	uint64_t n = p->n_slots;

	if (tick < p->now_tick)
		tick = p->now_tick;
	e->tick = tick;
	if (tick - p->now_tick < n) {
		uint32_t slot = (uint32_t)(tick & (n - 1));

		ss_list_add_tail(&p->slots[slot], &e->link);
		busy_set(p, slot);
		e->where = SS_PACER_WHEEL;
	} else {
		/* Scan when it comes within the horizon, but not more often
		 * than every half horizon (see pacer_overflow_scan). */
		uint64_t check = u64_max(tick - n + 1, p->ovf_last_scan + n / 2);

		ss_list_add_tail(&p->overflow, &e->link);
		p->n_overflow++;
		e->where = SS_PACER_OVERFLOW;
		if (check < p->ovf_check_tick)
			p->ovf_check_tick = check;
	}
	p->n_queued++;
}

/* Take @e out of the wheel or the overflow list. */
static void pacer_dequeue(struct ss_pacer *p, struct ss_pacer_ent *e)
{
	if (e->where == SS_PACER_WHEEL) {
		uint32_t slot = (uint32_t)(e->tick & (p->n_slots - 1));

		ss_list_del(&e->link);
		if (ss_list_empty(&p->slots[slot]))
			busy_clear(p, slot);
	} else {
		ss_list_del(&e->link);
		p->n_overflow--;
	}
	p->n_queued--;
	e->where = SS_PACER_IDLE;
}

/*
 * Move the overflow entries that now fit in the horizon into the wheel.
 * The next scan is due when the nearest remaining one comes within the
 * horizon, but no sooner than half a horizon from now: each remaining
 * entry is at least a full horizon away, so it is still moved in time,
 * and an entry is looked at once per half horizon it waits at most.
 */
static void pacer_overflow_scan(struct ss_pacer *p)
{
	uint64_t n = p->n_slots, t = p->now_tick, next = PACER_NONE;
	struct ss_list *l, *nx;

	p->ovf_scans++;
	p->ovf_looked += p->n_overflow;
	SS_LIST_FOR_EACH_SAFE(l, nx, &p->overflow) {
		struct ss_pacer_ent *e = link_ent(l);

		if (e->tick < t + n) {
			pacer_dequeue(p, e);
			pacer_enqueue(p, e, e->tick);
		} else {
			next = u64_min(next, e->tick - n + 1);
		}
	}
	p->ovf_last_scan = t;
	p->ovf_check_tick = p->n_overflow ? u64_max(next, t + n / 2) : PACER_NONE;
}

/* First tick in [from, to] (to - from < n_slots) whose slot is busy. */
static uint64_t pacer_next_busy(const struct ss_pacer *p, uint64_t from, uint64_t to)
{
	uint64_t t = from;

	while (t <= to) {
		uint32_t slot = (uint32_t)(t & (p->n_slots - 1));
		uint32_t bit = slot & 63;
		uint64_t bits = p->busy[slot >> 6] >> bit;

		/* n_slots is a multiple of 64: a word never wraps round. */
		if (bits) {
			uint64_t c = t + (uint64_t)__builtin_ctzll(bits);

			return c <= to ? c : PACER_NONE;
		}
		t += 64 - bit;
	}
	return PACER_NONE;
}

/* ---- flows and groups ------------------------------------------------ */

void ss_pacer_flow_init(struct ss_pacer_flow *f, uint64_t rate, uint64_t now_ns)
{
	f->ent.link.next = f->ent.link.prev = NULL;
	f->ent.tick = 0;
	f->ent.where = SS_PACER_IDLE;
	f->ent.is_group = 0;
	f->next_ns = now_ns;
	f->rate = u64_min(rate, PACER_RATE_LIMIT);
	f->rem = 0;
	f->group = NULL;
}

void ss_pacer_flow_set_rate(struct ss_pacer_flow *f, uint64_t rate)
{
	f->rate = u64_min(rate, PACER_RATE_LIMIT);
	if (f->rem >= f->rate)
		f->rem = 0;
}

void ss_pacer_flow_set_group(struct ss_pacer_flow *f, struct ss_pacer_group *g)
{
	f->group = g;
}

int ss_pacer_group_init(struct ss_pacer_group *g, uint64_t rate, uint64_t burst,
			uint64_t now_ns)
{
	g->ent.link.next = g->ent.link.prev = NULL;
	g->ent.tick = 0;
	g->ent.where = SS_PACER_IDLE;
	g->ent.is_group = 1;
	ss_list_init(&g->waitq);
	g->n_wait = 0;
	g->go_tick = PACER_NONE;
	g->go_bytes = 0;
	/* Until charges teach it, a release may take the whole depth. */
	g->mean_charge = (uint32_t)u64_min(u64_max(burst, 1), UINT32_C(1) << 28);
	return ss_pacer_bucket_init(&g->tb, rate, burst, now_ns);
}

void ss_pacer_charge(struct ss_pacer *p, struct ss_pacer_flow *f, uint64_t bytes,
		     uint64_t now_ns)
{
	uint64_t base, num;

	bytes = u64_min(bytes, SS_PACER_MAX_CHARGE);
	/* bytes <= SS_PACER_MAX_CHARGE: a charge of exactly 2^32 stays here */
	if (bytes < SS_PACER_MAX_CHARGE) {
		ss_pacer_charge_u32(p, f, (uint32_t)bytes, now_ns);
		return;
	}
	if (f->group)
		ss_pacer_group_charge(f->group, bytes, now_ns);
	if (!f->rate)
		return;
	base = f->next_ns;
	if (now_ns > p->max_lag_ns && now_ns - p->max_lag_ns > base)
		base = now_ns - p->max_lag_ns;
	num = bytes * NS_PER_S + f->rem; /* < 2^62 + 2^40 */
	f->next_ns = base + num / f->rate;
	f->rem = num % f->rate;
}

void ss_pacer_schedule(struct ss_pacer *p, struct ss_pacer_flow *f)
{
	if (f->ent.where != SS_PACER_IDLE)
		return;
	pacer_enqueue(p, &f->ent, pacer_tick_of(p, f->next_ns));
}

void ss_pacer_cancel(struct ss_pacer *p, struct ss_pacer_flow *f)
{
	switch (f->ent.where) {
	case SS_PACER_WHEEL:
	case SS_PACER_OVERFLOW:
		pacer_dequeue(p, &f->ent);
		break;
	case SS_PACER_GROUP_WAIT:
		ss_list_del(&f->ent.link);
		f->group->n_wait--;
		f->ent.where = SS_PACER_IDLE;
		break;
	default:
		break;
	}
}

void ss_pacer_group_cancel(struct ss_pacer *p, struct ss_pacer_group *g)
{
	while (g->n_wait) {
		struct ss_pacer_flow *f = ent_flow(link_ent(ss_list_first(&g->waitq)));

		ss_list_del(&f->ent.link);
		f->ent.where = SS_PACER_IDLE;
		g->n_wait--;
	}
	if (g->ent.where == SS_PACER_WHEEL || g->ent.where == SS_PACER_OVERFLOW)
		pacer_dequeue(p, &g->ent);
}

/* Queue group @g for when its bucket is out of debt, and after tick
 * @after (the tick being served up to). */
static void pacer_group_arm(struct ss_pacer *p, struct ss_pacer_group *g, uint64_t now_ns,
			    uint64_t after)
{
	uint64_t t = pacer_tick_of(p, ss_pacer_bucket_next_ns(&g->tb, now_ns));

	if (g->ent.where == SS_PACER_IDLE)
		pacer_enqueue(p, &g->ent, u64_max(t, after + 1));
}

/* May one more of @g go in tick @target: the bucket is out of debt and
 * its credit pays for those that went in this tick, at the mean charge. */
static bool pacer_group_may_go(struct ss_pacer_group *g, uint64_t now_ns, uint64_t target)
{
	uint64_t held = g->go_tick == target ? g->go_bytes : 0;

	return ss_pacer_bucket_ready(&g->tb, now_ns) &&
	       (uint64_t)g->tb.credit >= held * UINT64_C(1000000000);
}

/* One of @g goes in tick @target. */
static void pacer_group_went(struct ss_pacer_group *g, uint64_t target)
{
	if (g->go_tick != target) {
		g->go_tick = target;
		g->go_bytes = 0;
	}
	g->go_bytes = u64_min(g->go_bytes + u64_max(g->mean_charge, 1), UINT64_C(1) << 32);
}

/* Flow @f's time has come; its group @g decides whether it goes now:
 * nobody of the group waits and the credit allows (pacer_group_may_go()). */
static bool pacer_flow_gate(struct ss_pacer *p, struct ss_pacer_flow *f, uint64_t now_ns,
			    uint64_t target)
{
	struct ss_pacer_group *g = f->group;

	if (g->n_wait == 0) {
		if (pacer_group_may_go(g, now_ns, target)) {
			pacer_group_went(g, target);
			return true;
		}
		if (g->tb.credit >= 0) /* held by this tick's releases, not by debt */
			p->tick_holds++;
	}
	ss_list_add_tail(&g->waitq, &f->ent.link);
	f->ent.where = SS_PACER_GROUP_WAIT;
	g->n_wait++;
	pacer_group_arm(p, g, now_ns, target);
	return false;
}

/* Group @g's time has come: release its waiting flows, in order, into
 * @out (at most @room) while the credit allows; stay queued (from the
 * next tick) while flows wait.  Returns how many went. */
static unsigned pacer_group_release(struct ss_pacer *p, struct ss_pacer_group *g, uint64_t now_ns,
				    uint64_t target, struct ss_pacer_flow **out, unsigned room)
{
	unsigned n = 0;

	while (n < room && g->n_wait && pacer_group_may_go(g, now_ns, target)) {
		struct ss_pacer_flow *f = ent_flow(link_ent(ss_list_first(&g->waitq)));

		ss_list_del(&f->ent.link);
		f->ent.where = SS_PACER_IDLE;
		g->n_wait--;
		pacer_group_went(g, target);
		out[n++] = f;
	}
	if (g->n_wait)
		pacer_group_arm(p, g, now_ns, target);
	return n;
}

unsigned ss_pacer_poll(struct ss_pacer *p, uint64_t now_ns, struct ss_pacer_flow **out,
		       unsigned max)
{
	uint64_t target = now_ns / p->slot_ns;
	unsigned n = 0;

	if (target < p->now_tick)
		target = p->now_tick; /* the clock went back: serve what was due */
	if (p->n_queued == 0) {
		p->now_tick = target; /* the common poll: nothing waits */
		return 0;
	}
	while (n < max) {
		uint64_t hi = target, t, slot;
		struct ss_pacer_ent *e;

		if (p->n_overflow && p->ovf_check_tick <= p->now_tick)
			pacer_overflow_scan(p);
		/* Stop short of the next overflow scan; at most one rotation. */
		if (p->n_overflow && p->ovf_check_tick - 1 < hi)
			hi = p->ovf_check_tick - 1;
		hi = u64_min(hi, p->now_tick + p->n_slots - 1);
		t = pacer_next_busy(p, p->now_tick, hi);
		if (t == PACER_NONE) {
			if (p->n_overflow && p->ovf_check_tick <= target) {
				p->now_tick = p->ovf_check_tick;
				continue;
			}
			/* Nothing in the wheel is due (all of it is within one
			 * rotation of now_tick, and hi covered it up to target). */
			p->now_tick = target;
			break;
		}
		p->now_tick = t;
		slot = t & (p->n_slots - 1);
		e = link_ent(ss_list_first(&p->slots[slot]));
		pacer_dequeue(p, e);
		if (e->is_group) {
			n += pacer_group_release(p, ent_group(e), now_ns, target, out + n, max - n);
		} else {
			struct ss_pacer_flow *f = ent_flow(e);

			if (!f->group || pacer_flow_gate(p, f, now_ns, target))
				out[n++] = f;
		}
	}
	return n;
}

uint64_t ss_pacer_next_ns(const struct ss_pacer *p)
{
	uint64_t t = PACER_NONE;

	if (p->n_queued == 0)
		return PACER_NONE;
	if (p->n_queued > p->n_overflow)
		t = pacer_next_busy(p, p->now_tick, p->now_tick + p->n_slots - 1);
	if (p->n_overflow)
		t = u64_min(t, p->ovf_check_tick);
	return t == PACER_NONE ? PACER_NONE : t * p->slot_ns;
}
