/* pipe_pattern.h - the byte pattern of pipe_server / pipe_client streams: byte i of a connection's stream is i mod 251. */
#ifndef SS_BENCH_PIPE_PATTERN_H
#define SS_BENCH_PIPE_PATTERN_H

#include <stdint.h>
#include <string.h>

/*
 * A prime period, so no message size lines up with it and a misplaced or
 * repeated chunk does not compare equal.  pattern_at(off) points at a run
 * of at least PATTERN_RUN bytes that continues the stream from offset off.
 */
#define PATTERN_PERIOD 251u
#define PATTERN_RUN 65536u

static uint8_t pattern_buf[PATTERN_RUN + PATTERN_PERIOD];

static inline void pattern_init(void)
{
	for (uint32_t i = 0; i < sizeof(pattern_buf); i++)
		pattern_buf[i] = (uint8_t)(i % PATTERN_PERIOD);
}

static inline const uint8_t *pattern_at(uint64_t off)
{
	return pattern_buf + off % PATTERN_PERIOD;
}

/* Do @n (<= PATTERN_RUN) bytes at stream offset @off match the pattern? */
static inline int pattern_check(const uint8_t *p, uint64_t off, size_t n)
{
	return memcmp(p, pattern_at(off), n) == 0;
}

#endif /* SS_BENCH_PIPE_PATTERN_H */
