/* test_timer_wheel.c - hashed timer wheel: unit cases and a randomized model check. */
#include "stack/timer_wheel.h"

#include <errno.h>
#include <stdlib.h>

#include "check.h"

#define OUT_MAX 64

static void test_init_args(void)
{
	struct ss_timer_wheel w;

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 0, 100, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_timer_wheel_init(&w, 48, 100, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_timer_wheel_init(&w, 64, 0, 0), (uint64_t)-EINVAL);
	CHECK_EQ_U64(ss_timer_wheel_init(&w, 1, 100, 0), 0);
	ss_timer_wheel_fini(&w);
	CHECK_EQ_U64(ss_timer_wheel_init(&w, 64, 100, 0), 0);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), UINT64_MAX);
	CHECK_EQ_U64(w.n_armed, 0);
	ss_timer_wheel_fini(&w);
}

static void test_arm_fire(void)
{
	struct ss_timer_wheel w;
	struct ss_timer t, *out[OUT_MAX];

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 64, 100, 1000), 0);
	ss_timer_init(&t);
	CHECK(!ss_timer_armed(&t));
	ss_timer_arm(&w, &t, 1550);
	CHECK(ss_timer_armed(&t));
	CHECK_EQ_U64(w.n_armed, 1);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 1550);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1500, out, OUT_MAX), 0);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1549, out, OUT_MAX), 0);
	CHECK(ss_timer_armed(&t));
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1550, out, OUT_MAX), 1);
	CHECK(out[0] == &t);
	CHECK(!ss_timer_armed(&t));
	CHECK_EQ_U64(w.n_armed, 0);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), UINT64_MAX);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 100000, out, OUT_MAX), 0);
	ss_timer_wheel_fini(&w);
}

static void test_cancel_rearm(void)
{
	struct ss_timer_wheel w;
	struct ss_timer a, b, *out[OUT_MAX];

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 16, 10, 0), 0);
	ss_timer_init(&a);
	ss_timer_init(&b);

	ss_timer_cancel(&w, &a);                /* not armed: no-op */
	CHECK_EQ_U64(w.n_armed, 0);

	ss_timer_arm(&w, &a, 50);
	ss_timer_arm(&w, &b, 55);
	ss_timer_cancel(&w, &a);
	CHECK(!ss_timer_armed(&a));
	ss_timer_cancel(&w, &a);                /* twice: still a no-op */
	CHECK_EQ_U64(w.n_armed, 1);
	CHECK(ss_timer_wheel_next(&w) <= 55);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 60, out, OUT_MAX), 1);
	CHECK(out[0] == &b);

	/* Re-arm later: the first deadline no longer fires. */
	ss_timer_arm(&w, &a, 100);
	ss_timer_arm(&w, &a, 300);
	CHECK_EQ_U64(w.n_armed, 1);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 200, out, OUT_MAX), 0);
	CHECK(ss_timer_armed(&a));
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 300);
	/* Re-arm earlier. */
	ss_timer_arm(&w, &a, 250);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 250);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 250, out, OUT_MAX), 1);
	CHECK(out[0] == &a);
	/* Re-arm a timer that just fired, from the returned pointer. */
	ss_timer_arm(&w, out[0], 251);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 251, out, OUT_MAX), 1);
	CHECK_EQ_U64(w.n_armed, 0);
	ss_timer_wheel_fini(&w);
}

/* Within one rotation, timers come out in tick order, a tick in arming order. */
static void test_order_by_slot(void)
{
	static const uint64_t dl[] = { 70, 20, 50, 20, 10, 60, 30, 75, 40, 15 };
	static const unsigned want[] = { 4, 9, 1, 3, 6, 8, 2, 5, 0, 7 };
	enum { N = sizeof(dl) / sizeof(dl[0]) };
	struct ss_timer_wheel w;
	struct ss_timer t[N], *out[OUT_MAX];

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 16, 10, 0), 0);
	for (unsigned i = 0; i < N; i++) {
		ss_timer_init(&t[i]);
		ss_timer_arm(&w, &t[i], dl[i]);
	}
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 10);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 100, out, OUT_MAX), N);
	for (unsigned i = 0; i < N; i++)
		CHECK_EQ_U64(out[i] - t, want[i]);
	ss_timer_wheel_fini(&w);
}

/* Many rotations away: the slot is passed many times before the timer fires. */
static void test_far_future(void)
{
	struct ss_timer_wheel w;
	struct ss_timer far, near, *out[OUT_MAX];
	const uint64_t deadline = 8 * 10 * 1000 + 37; /* 1000 rotations + 3.7 ticks */
	unsigned fired = 0;

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 8, 10, 0), 0);
	ss_timer_init(&far);
	ss_timer_init(&near);
	ss_timer_arm(&w, &far, deadline);
	CHECK_EQ_U64(far.slot, 3);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), deadline);
	for (uint64_t now = 1; now < deadline; now += 7) {
		unsigned n = ss_timer_wheel_expire(&w, now, out, OUT_MAX);

		fired += n;
		CHECK(ss_timer_wheel_next(&w) <= deadline);
	}
	CHECK_EQ_U64(fired, 0);
	CHECK(ss_timer_armed(&far));
	CHECK_EQ_U64(ss_timer_wheel_next(&w), deadline);

	/* A near timer in the same slot fires; the far one stays. */
	ss_timer_wheel_fini(&w);
	CHECK_EQ_U64(ss_timer_wheel_init(&w, 8, 10, 0), 0);
	ss_timer_init(&far);
	ss_timer_arm(&w, &far, 8 * 10 * 5 + 30);
	ss_timer_arm(&w, &near, 30);
	CHECK_EQ_U64(far.slot, near.slot);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 35, out, OUT_MAX), 1);
	CHECK(out[0] == &near);
	CHECK(ss_timer_armed(&far));
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 8 * 10 * 5 + 30);
	/* One big jump, many rotations past it. */
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1000000, out, OUT_MAX), 1);
	CHECK(out[0] == &far);
	ss_timer_wheel_fini(&w);
}

static void test_past_deadline(void)
{
	struct ss_timer_wheel w;
	struct ss_timer a, b, *out[OUT_MAX];

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 32, 100, 1000000), 0);
	ss_timer_init(&a);
	ss_timer_init(&b);
	ss_timer_arm(&w, &a, 0);
	ss_timer_arm(&w, &b, 999999);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 0);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1000000, out, OUT_MAX), 2);
	CHECK(out[0] == &a && out[1] == &b);

	/* After time moved on, a deadline behind it fires at the next call. */
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 5000000, out, OUT_MAX), 0);
	ss_timer_arm(&w, &a, 4000000);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 5000000, out, OUT_MAX), 1);
	/* Time going backwards counts as no time passing. */
	ss_timer_arm(&w, &a, 4999999);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 10, out, OUT_MAX), 1);
	ss_timer_wheel_fini(&w);
}

static void test_max_limited(void)
{
	enum { N = 25 };
	struct ss_timer_wheel w;
	struct ss_timer t[N], *out[OUT_MAX];
	unsigned seen[N] = { 0 }, total = 0, n;

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 16, 10, 0), 0);
	for (unsigned i = 0; i < N; i++) {
		ss_timer_init(&t[i]);
		ss_timer_arm(&w, &t[i], 5 + (i % 5) * 10);  /* 5 ticks, 5 each */
	}
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1000, out, 0), 0);
	while ((n = ss_timer_wheel_expire(&w, 1000, out, 3)) > 0) {
		CHECK(n <= 3);
		for (unsigned i = 0; i < n; i++)
			seen[out[i] - t]++;
		total += n;
		CHECK(ss_timer_wheel_next(&w) <= 1000 || w.n_armed == 0);
	}
	CHECK_EQ_U64(total, N);
	for (unsigned i = 0; i < N; i++)
		CHECK_EQ_U64(seen[i], 1);
	CHECK_EQ_U64(w.n_armed, 0);

	/* Cut short, then later time: the leftovers come first, nothing lost. */
	for (unsigned i = 0; i < N; i++)
		ss_timer_arm(&w, &t[i], 1000 + i);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 1010, out, 4), 4);
	CHECK(out[0] == &t[0] && out[3] == &t[3]);
	n = ss_timer_wheel_expire(&w, 2000, out, OUT_MAX);
	CHECK_EQ_U64(n, N - 4);
	CHECK(out[0] == &t[4]);
	ss_timer_wheel_fini(&w);
}

/* next(): exact after arm and refresh, early after cancel, bounded scan on a big wheel. */
static void test_next_bound(void)
{
	struct ss_timer_wheel w;
	struct ss_timer a, b, c, *out[OUT_MAX];
	const uint64_t far = 3000 * 10 + 5;     /* 3000 ticks: beyond one refresh walk */
	unsigned wakeups = 0, fired = 0;
	uint64_t now = 0;

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 4096, 10, 0), 0);
	ss_timer_init(&a);
	ss_timer_init(&b);
	ss_timer_init(&c);
	ss_timer_arm(&w, &a, 100);
	ss_timer_arm(&w, &b, 200);
	ss_timer_arm(&w, &c, far);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 100);
	ss_timer_cancel(&w, &a);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 100);     /* early, still a bound */
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 100, out, OUT_MAX), 0);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), 200);     /* refreshed */
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 199, out, OUT_MAX), 0);
	CHECK_EQ_U64(ss_timer_wheel_expire(&w, 200, out, OUT_MAX), 1);
	CHECK(out[0] == &b);
	/* Only c is left, 2980 ticks out: the bound creeps up in early wake-ups. */
	while (fired == 0 && wakeups < 100) {
		uint64_t next = ss_timer_wheel_next(&w);

		CHECK(next > now && next <= far);
		now = next;
		wakeups++;
		fired = ss_timer_wheel_expire(&w, now, out, OUT_MAX);
	}
	CHECK_EQ_U64(fired, 1);
	CHECK_EQ_U64(now, far);
	CHECK(wakeups > 1 && wakeups < 20);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), UINT64_MAX);
	ss_timer_wheel_fini(&w);
}

/*
 * Random arm/cancel/advance against a brute-force model: every timer's
 * armed state and deadline. Checks no early fire, no loss, no double fire,
 * and that next() never exceeds the true minimum.
 */
#define RT_N 100000

struct rt_model {
	uint64_t deadline[RT_N];
	uint8_t armed[RT_N];
	uint32_t n_armed;
};

static void rt_full_check(const struct ss_timer_wheel *w, const struct ss_timer *t,
			  const struct rt_model *m, uint64_t now, bool drained)
{
	uint64_t min = UINT64_MAX;
	unsigned bad_state = 0, bad_due = 0;

	for (uint32_t i = 0; i < RT_N; i++) {
		if (ss_timer_armed(&t[i]) != (m->armed[i] != 0))
			bad_state++;
		if (!m->armed[i])
			continue;
		if (t[i].deadline_us != m->deadline[i])
			bad_state++;
		if (m->deadline[i] < min)
			min = m->deadline[i];
		if (drained && m->deadline[i] <= now)
			bad_due++;
	}
	CHECK_EQ_U64(bad_state, 0);
	CHECK_EQ_U64(bad_due, 0);
	CHECK(ss_timer_wheel_next(w) <= min);
	if (drained)    /* an uncut expire leaves the bound exact or early */
		CHECK(m->n_armed == 0 ? ss_timer_wheel_next(w) == UINT64_MAX
				      : ss_timer_wheel_next(w) > now);
}

/* @skip_idle: expire only when ss_timer_wheel_due() says so, as the
 * stack's round does (the wheel's now_tick then lags between calls). */
static void random_model(bool skip_idle)
{
	static struct rt_model m;
	static struct ss_timer t[RT_N];
	static struct ss_timer *out[1024];
	struct ss_timer_wheel w;
	uint64_t rng = 0x7173, now = 123456789;
	unsigned bad_fire = 0, expires = 0;
	const uint64_t tick = 25, rotation = 1024 * tick;

	CHECK_EQ_U64(ss_timer_wheel_init(&w, 1024, tick, now), 0);
	for (uint32_t i = 0; i < RT_N; i++)
		ss_timer_init(&t[i]);

	for (unsigned op = 0; op < 400000; op++) {
		uint64_t r = check_rand(&rng);
		uint32_t i = (uint32_t)(r >> 32) % RT_N;
		unsigned kind = (unsigned)(r % 100);

		if (kind < 60) {
			/* Mostly near, some past, some many rotations out. */
			uint64_t d, s = check_rand(&rng);

			switch (s % 8) {
			case 0:
				d = now - s % 5000;
				break;
			case 1:
				d = now + (s >> 8) % (40 * rotation);
				break;
			default:
				d = now + (s >> 8) % (2 * rotation);
				break;
			}
			if (!m.armed[i])
				m.n_armed++;
			m.armed[i] = 1;
			m.deadline[i] = d;
			ss_timer_arm(&w, &t[i], d);
			CHECK(ss_timer_wheel_next(&w) <= d);
		} else if (kind < 85) {
			if (m.armed[i])
				m.n_armed--;
			m.armed[i] = 0;
			ss_timer_cancel(&w, &t[i]);
		} else {
			uint64_t s = check_rand(&rng);
			unsigned max = 1 + (unsigned)(s % 1024), n;

			switch (s >> 16 & 15) {
			case 0:
				now += (s >> 24) % (3 * rotation);
				break;
			case 1:
				break;  /* same time again */
			default:
				now += (s >> 24) % (4 * tick);
				break;
			}
			if (skip_idle && !ss_timer_wheel_due(&w, now)) {
				if (++expires % 64 == 0)
					rt_full_check(&w, t, &m, now, false);
				continue;
			}
			n = ss_timer_wheel_expire(&w, now, out, max);
			CHECK(n <= max);
			for (unsigned k = 0; k < n; k++) {
				uint32_t id = (uint32_t)(out[k] - t);

				if (!m.armed[id] || m.deadline[id] > now || ss_timer_armed(out[k]))
					bad_fire++;
				m.armed[id] = 0;
				m.n_armed--;
			}
			CHECK_EQ_U64(w.n_armed, m.n_armed);
			if (++expires % 64 == 0)
				rt_full_check(&w, t, &m, now, n < max);
		}
	}
	CHECK_EQ_U64(bad_fire, 0);
	rt_full_check(&w, t, &m, now, false);

	/* Drain everything: all that was armed fires exactly once. */
	now += 50 * rotation;
	for (;;) {
		unsigned n = ss_timer_wheel_expire(&w, now, out, 1024);

		for (unsigned k = 0; k < n; k++) {
			uint32_t id = (uint32_t)(out[k] - t);

			if (!m.armed[id])
				bad_fire++;
			m.armed[id] = 0;
			m.n_armed--;
		}
		if (n < 1024)
			break;
	}
	CHECK_EQ_U64(bad_fire, 0);
	CHECK_EQ_U64(m.n_armed, 0);
	CHECK_EQ_U64(w.n_armed, 0);
	CHECK_EQ_U64(ss_timer_wheel_next(&w), UINT64_MAX);
	ss_timer_wheel_fini(&w);
}

static void test_random_model(void)
{
	random_model(false);
}

static void test_random_model_skip_idle(void)
{
	random_model(true);
}

int main(void)
{
	test_init_args();
	test_arm_fire();
	test_cancel_rearm();
	test_order_by_slot();
	test_far_future();
	test_past_deadline();
	test_max_limited();
	test_next_bound();
	test_random_model();
	test_random_model_skip_idle();
	return check_done("test_timer_wheel");
}
