/* TCP sequence-number arithmetic mod 2^32 (RFC 9293 §3.4 = RFC 793 §3.3; RFC 1982). */
#ifndef SS_WIRE_SEQ_H
#define SS_WIRE_SEQ_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Comparisons treat the distance a - b as a signed 32-bit number, so they
 * are correct as long as the two values are less than 2^31 apart, e.g.
 * ss_seq_lt(0xFFFFFFF0, 0x10) is true.  The unsigned subtraction is done
 * first and then converted, which is well defined (implementation-defined
 * conversion, two's complement on every supported compiler).
 */
static inline bool ss_seq_lt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

static inline bool ss_seq_leq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) <= 0;
}

static inline bool ss_seq_gt(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0;
}

static inline bool ss_seq_geq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

/*
 * Half-open window test: lo <= s < hi modulo 2^32 (the RFC 9293 §3.4
 * acceptability form "RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND").  Computed as
 * (s - lo) < (hi - lo) in unsigned arithmetic, so it is exact for any window
 * size below 2^32; an empty window (lo == hi) contains nothing.
 */
static inline bool ss_seq_between(uint32_t s, uint32_t lo, uint32_t hi)
{
	return (uint32_t)(s - lo) < (uint32_t)(hi - lo);
}

#endif /* SS_WIRE_SEQ_H */
