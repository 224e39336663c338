/* siphash.c - SipHash-2-4, written from the paper's description (2 compression, 4 finalisation rounds). */
#include "tcp/siphash.h"

static inline uint64_t sip_rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t sip_load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#define SIP_ROUND(v0, v1, v2, v3)                       \
	do {                                            \
		v0 += v1;                               \
		v1 = sip_rotl(v1, 13);                  \
		v1 ^= v0;                               \
		v0 = sip_rotl(v0, 32);                  \
		v2 += v3;                               \
		v3 = sip_rotl(v3, 16);                  \
		v3 ^= v2;                               \
		v0 += v3;                               \
		v3 = sip_rotl(v3, 21);                  \
		v3 ^= v0;                               \
		v2 += v1;                               \
		v1 = sip_rotl(v1, 17);                  \
		v1 ^= v2;                               \
		v2 = sip_rotl(v2, 32);                  \
	} while (0)

uint64_t ss_siphash24(const uint8_t key[16], const void *msg, size_t len)
{
	const uint8_t *m = msg;
	uint64_t k0 = sip_load_le64(key), k1 = sip_load_le64(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = k1 ^ 0x7465646279746573ull;
	size_t full = len & ~(size_t)7;

	for (size_t i = 0; i < full; i += 8) {
		uint64_t w = sip_load_le64(m + i);

		v3 ^= w;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= w;
	}
	/* Last block: remaining bytes, length mod 256 in the top byte. */
	uint64_t b = (uint64_t)(len & 0xff) << 56;

	for (size_t i = 0; i < (len & 7); i++)
		b |= (uint64_t)m[full + i] << (8 * i);
	v3 ^= b;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
