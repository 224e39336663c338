/* mix64.h - a 64-bit integer mixer (MurmurHash3's finaliser) for the load generators' keys, sizes and values. */
#ifndef SS_BENCH_MIX64_H
#define SS_BENCH_MIX64_H

#include <stdint.h>

/* A bijection of 64-bit values whose every output bit depends on every
 * input bit: neighbouring seeds give unrelated streams. */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
