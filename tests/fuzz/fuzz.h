/* Shared helpers for the libFuzzer harnesses: exact-size copies, asserts. */
#ifndef SS_TESTS_FUZZ_H
#define SS_TESTS_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Invariant check: unlike assert() it stays on in every build type, and
 * abort() makes libFuzzer save the crashing input.
 */
#define FUZZ_ASSERT(cond)                                               \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", \
				__FILE__, __LINE__, #cond);             \
			abort();                                        \
		}                                                       \
	} while (0)

/*
 * Copy of the input in a heap block of exactly @size bytes, so ASan flags
 * a read even one byte past the end.  NULL for size 0 (parsers must not
 * dereference the buffer then).  Free with free().
 */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t size)
{
	uint8_t *p;

	if (size == 0)
		return NULL;
	p = malloc(size);
	FUZZ_ASSERT(p != NULL);
	memcpy(p, data, size);
	return p;
}

/* True if [p, p + n) lies within [buf, buf + len). */
static inline int fuzz_inside(const uint8_t *buf, size_t len,
			      const uint8_t *p, size_t n)
{
	return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* SS_TESTS_FUZZ_H */
