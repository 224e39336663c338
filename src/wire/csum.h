/* Internet checksum (RFC 1071) and incremental update (RFC 1624). */
#ifndef SS_WIRE_CSUM_H
#define SS_WIRE_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Byte-order convention (applies to every checksum function in src/wire):
 *
 *   A checksum is a host-order uint16_t whose value equals the big-endian
 *   reading of the two checksum bytes on the wire.  Store it with
 *   ss_wr16() (bytes.h) and read it back with ss_rd16().  Partial sums
 *   (uint32_t) are likewise sums of big-endian 16-bit words.
 *
 * Verification: summing over data that already contains a correct checksum
 * yields 0 from ss_csum_fold(), ss_csum_ipv4_header() and ss_csum_l4_ipv4().
 * Generation: zero the checksum field, compute, and ss_wr16() the result.
 */

/*
 * One's-complement accumulation of @len bytes at @data into @sum (RFC 1071
 * §4.1), treating the bytes as big-endian 16-bit words.  An odd final byte is
 * padded with a zero byte on the right.  @data needs no alignment.  Chaining
 * calls is only exact when every call but the last has an even @len.
 * The result is not folded; pass it to ss_csum_fold().
 */
uint32_t ss_csum_partial(const void *data, size_t len, uint32_t sum);

/* Fold a partial sum to 16 bits and complement it: the checksum value. */
uint16_t ss_csum_fold(uint32_t sum);

/*
 * Checksum of an IPv4 header of @hdr_len bytes (RFC 791 §3.1), with its
 * checksum field as it is.  Returns 0 over a header whose checksum is
 * correct; over a header with a zeroed checksum field, returns the value to
 * store.
 */
uint16_t ss_csum_ipv4_header(const void *hdr, size_t hdr_len);

/*
 * The one's-complement sum of a 20-byte IPv4 header in 64 bits, unfolded,
 * in memory byte order: five words in three loads, end-around carries.
 */
static inline uint64_t ss_csum_ipv4_header20_sum(const void *hdr)
{
	const uint8_t *p = hdr;
	uint64_t a, b, acc;
	uint32_t c;

	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	memcpy(&c, p + 16, 4);
	if (__builtin_add_overflow(a, b, &acc))
		acc++; /* end-around carry */
	if (__builtin_add_overflow(acc, (uint64_t)c, &acc))
		acc++;
	return acc;
}

/*
 * ss_csum_ipv4_header(@hdr, 20) == 0, inline for the receive path: a
 * correct sum folds to 0xFFFF in either byte order, so no swap.
 */
static inline bool ss_csum_ipv4_header20_ok(const void *hdr)
{
	uint64_t acc = ss_csum_ipv4_header20_sum(hdr);

	acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	acc = (acc & 0xFFFF) + (acc >> 16);
	acc = (acc & 0xFFFF) + (acc >> 16);
	return acc == 0xFFFF;
}

/*
 * Partial sum of the IPv4 pseudo-header (RFC 9293 §3.1, RFC 768): source,
 * destination, zero, protocol, L4 length.  All inputs in host order.
 */
uint32_t ss_csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			     uint16_t l4_len);

/*
 * Full TCP/UDP checksum over pseudo-header plus the @l4_len bytes at @l4.
 * Returns 0 over a segment with a correct checksum in place; with the
 * checksum field zeroed, returns the value to store.  @l4_len must fit in
 * 16 bits (it always does for IPv4).  For UDP the caller sends a computed
 * 0x0000 as 0xFFFF (RFC 768: zero means "no checksum").
 */
uint16_t ss_csum_l4_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			 const void *l4, size_t l4_len);

/*
 * RFC 1624 eqn. 3 incremental update: HC' = ~(~HC + ~m + m'), where a
 * 16-bit field changes from @old_val to @new_val (host-order values of the
 * big-endian field).  The field must sit at an even offset from the start of
 * the checksummed data.
 */
uint16_t ss_csum_update16(uint16_t old_csum, uint16_t old_val,
			  uint16_t new_val);

/* As ss_csum_update16() for a 32-bit field (e.g. an IPv4 address). */
uint16_t ss_csum_update32(uint16_t old_csum, uint32_t old_val,
			  uint32_t new_val);

#endif /* SS_WIRE_CSUM_H */
