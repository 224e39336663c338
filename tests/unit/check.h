/* Minimal test harness for the unit test programs: CHECK macros + a PRNG. */
#ifndef SS_TESTS_CHECK_H
#define SS_TESTS_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * Each test program includes this once.  Failed checks print file:line and
 * are counted; main() ends with `return check_done();`, which is nonzero
 * when anything failed.  Checks do not abort, so one run shows every
 * failure.
 */
static unsigned check_failures;
static unsigned check_count;

static inline void check_fail_(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
	check_failures++;
}

#define CHECK(cond)                                              \
	do {                                                     \
		check_count++;                                   \
		if (!(cond))                                     \
			check_fail_(__FILE__, __LINE__, #cond);  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                  \
	do {                                                                \
		uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b); \
		check_count++;                                              \
		if (check_a_ != check_b_) {                                 \
			check_fail_(__FILE__, __LINE__, #a " == " #b);      \
			fprintf(stderr, "    got 0x%" PRIx64               \
					" (%" PRIu64 "), want 0x%" PRIx64 \
					" (%" PRIu64 ")\n",                 \
				check_a_, check_a_, check_b_, check_b_);    \
		}                                                           \
	} while (0)

#define CHECK_STR(a, b)                                                 \
	do {                                                            \
		const char *check_a_ = (a), *check_b_ = (b);            \
		check_count++;                                          \
		if (strcmp(check_a_, check_b_) != 0) {                  \
			check_fail_(__FILE__, __LINE__, #a " == " #b);  \
			fprintf(stderr, "    got \"%s\", want \"%s\"\n", \
				check_a_, check_b_);                    \
		}                                                       \
	} while (0)

static inline void check_hexdump_(const char *tag, const void *p, size_t n)
{
	const uint8_t *b = p;

	fprintf(stderr, "    %s:", tag);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i % 16 ? " " : "\n      ", b[i]);
	fprintf(stderr, "\n");
}

#define CHECK_MEM(a, b, n)                                                \
	do {                                                              \
		size_t check_n_ = (n);                                    \
		check_count++;                                            \
		if (memcmp((a), (b), check_n_) != 0) {                    \
			check_fail_(__FILE__, __LINE__,                   \
				    "memcmp(" #a ", " #b ", " #n ") == 0"); \
			check_hexdump_("got", (a), check_n_);             \
			check_hexdump_("want", (b), check_n_);            \
		}                                                         \
	} while (0)

static inline int check_done(const char *prog)
{
	if (check_failures)
		fprintf(stderr, "%s: %u of %u checks FAILED\n", prog,
			check_failures, check_count);
	else
		printf("%s: all %u checks passed\n", prog, check_count);
	return check_failures ? 1 : 0;
}

/* splitmix64: a fixed seed gives the same "random" cases on every run. */
static inline uint64_t check_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15u);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return z ^ (z >> 31);
}

#endif /* SS_TESTS_CHECK_H */
