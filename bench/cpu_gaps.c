/* cpu_gaps.c - cpu_gaps: how much of a CPU's time a busy thread loses in gaps, the bed's own latency noise.
 *
 * A latency percentile can be no better than the CPUs it runs on: in a
 * VM, a vCPU that is running a thread still stops for tens of microseconds
 * now and then (the host's work, interrupts, exits), and a request that
 * arrives in such a gap waits for it, on any stack.  This reads
 * CLOCK_MONOTONIC back to back on one CPU for a while and counts the gaps
 * between two reads, by length: what a request on that CPU would wait at
 * most if it arrived at the start of one.
 *
 *   cpu_gaps [--cpu N] [--seconds S]      (defaults: the current CPU, 3 s)
 *
 * Output: one JSON line:
 *   {"cpu","seconds","reads","gaps":{"2-5":n,"5-10":n,"10-20":n,"20-50":n,
 *    "50-100":n,"100-200":n,"200+":n},"lost_pct","max_us","p_wait_20us_pct",
 *    "wait_p99_us","wait_p999_us"}
 * with gap lengths in µs (gaps under 2 µs are not counted), lost_pct the
 * share of the time spent in counted gaps, p_wait_20us_pct the share of
 * the time at which a request arriving would wait 20 µs or more (the part
 * of each gap that lies 20 µs or more before its end), and wait_p99_us /
 * wait_p999_us the wait that a request arriving at a random time meets or
 * exceeds 1 % / 0.1 % of the time (0: it arrives outside any gap).
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opts.h"

static const uint64_t bound_ns[] = { 2000, 5000, 10000, 20000, 50000, 100000, 200000 };
static const char *const bound_name[] = { "2-5", "5-10", "10-20", "20-50", "50-100",
					  "100-200", "200+" };
#define NB (sizeof(bound_ns) / sizeof(bound_ns[0]))
#define GAPS_MAX (1u << 22)     /* gaps kept for the wait percentiles */

/* The share of the time at which an arrival waits @x ns or more. */
static double wait_share(const uint32_t *gap, uint64_t n, double x, double span)
{
	double sum = 0;

	for (uint64_t i = 0; i < n; i++)
		if (gap[i] > x)
			sum += gap[i] - x;
	return sum / span;
}

/* The wait met or exceeded by a share @q of arrivals (bisection: the share
 * falls as the wait grows). */
static double wait_pct(const uint32_t *gap, uint64_t n, double q, double span, double max)
{
	double lo = 0, hi = max;

	if (wait_share(gap, n, 0, span) <= q)
		return 0;
	for (int i = 0; i < 60; i++) {
		double mid = (lo + hi) / 2;

		if (wait_share(gap, n, mid, span) > q)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: cpu_gaps [--cpu N] [--seconds S]\n");
	exit(2);
}

/* --cpu N: plain decimal, a CPU number cpu_set_t can hold. */
static int parse_cpu(const char *arg, void *dst)
{
	char *end;
	long cpu = strtol(arg, &end, 10);

	if (end == arg || *end || cpu < 0 || cpu >= CPU_SETSIZE)
		return -1;
	*(long *)dst = cpu;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t count[NB] = { 0 }, lost = 0, max = 0, reads = 0, ngap = 0;
	uint32_t *gaps;
	long cpu = -1;
	double seconds = 3;
	const struct bopt opts[] = {
		{ .name = "cpu", .kind = BOPT_FN, .dst = &cpu, .fn = parse_cpu },
		{ .name = "seconds", .kind = BOPT_SECONDS, .dst = &seconds, .dmax = 600 },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			perror("cpu_gaps: sched_setaffinity");
			return 1;
		}
	} else {
		cpu = sched_getcpu();
	}

	gaps = calloc(GAPS_MAX, sizeof(*gaps));      /* touched now, not in the loop */
	if (!gaps) {
		perror("cpu_gaps");
		return 1;
	}
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(seconds * 1e9), prev = t0;

	for (;;) {
		uint64_t t = now_ns(), gap = t - prev;

		prev = t;
		reads++;
		if (t >= end)
			break;
		if (gap < bound_ns[0])
			continue;
		unsigned b = NB - 1;

		while (gap < bound_ns[b])
			b--;
		count[b]++;
		lost += gap;
		if (gap > max)
			max = gap;
		if (ngap < GAPS_MAX)
			gaps[ngap++] = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
	}

	double span = (double)(prev - t0);

	printf("{\"cpu\":%ld,\"seconds\":%.3f,\"reads\":%llu,\"gaps\":{", cpu, span / 1e9,
	       (unsigned long long)reads);
	for (unsigned b = 0; b < NB; b++)
		printf("%s\"%s\":%llu", b ? "," : "", bound_name[b], (unsigned long long)count[b]);
	printf("},\"lost_pct\":%.3f,\"max_us\":%.1f,\"p_wait_20us_pct\":%.3f,"
	       "\"wait_p99_us\":%.1f,\"wait_p999_us\":%.1f}\n",
	       100.0 * (double)lost / span, (double)max / 1000.0,
	       100.0 * wait_share(gaps, ngap, 20000, span),
	       wait_pct(gaps, ngap, 0.01, span, (double)max) / 1000.0,
	       wait_pct(gaps, ngap, 0.001, span, (double)max) / 1000.0);
	free(gaps);
	return 0;
}
