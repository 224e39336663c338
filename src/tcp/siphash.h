/* siphash.h - SipHash-2-4 (Aumasson & Bernstein), the keyed PRF behind RFC 6528 ISNs. */
#ifndef SS_TCP_SIPHASH_H
#define SS_TCP_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit SipHash-2-4 of @len bytes at @msg under the 16-byte @key, as in
 * the reference implementation (little-endian key and message words). */
uint64_t ss_siphash24(const uint8_t key[16], const void *msg, size_t len);

#endif /* SS_TCP_SIPHASH_H */
