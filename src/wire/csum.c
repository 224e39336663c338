/* Internet checksum (RFC 1071) and incremental update (RFC 1624). */
#include "wire/csum.h"

#include "wire/bytes.h"

/*
 * RFC 1071 §4.1.  Words are read as big-endian 32-bit values into a 64-bit
 * accumulator; since 2^16 == 1 (mod 0xFFFF), adding a 32-bit word equals
 * adding its two 16-bit halves, and folding the high half back in
 * (end-around carry) keeps the one's-complement sum.  A non-zero sum never
 * folds to zero, so +0 and -0 stay distinct as RFC 1071 requires.
 */
uint32_t ss_csum_partial(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	while (len >= 4) {
		acc += ss_rd32(p);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		acc += ss_rd16(p);
		p += 2;
		len -= 2;
	}
	if (len)
		acc += (uint32_t)p[0] << 8; /* pad odd byte with zero */

	while (acc >> 32)
		acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t ss_csum_fold(uint32_t sum)
{
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t ss_csum_ipv4_header(const void *hdr, size_t hdr_len)
{
	return ss_csum_fold(ss_csum_partial(hdr, hdr_len, 0));
}

/* RFC 9293 §3.1 (TCP pseudo-header), RFC 768 (UDP): same layout. */
uint32_t ss_csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			     uint16_t l4_len)
{
	return (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) +
	       proto + l4_len;
}

uint16_t ss_csum_l4_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			 const void *l4, size_t l4_len)
{
	uint32_t sum = ss_csum_pseudo_ipv4(src, dst, proto, (uint16_t)l4_len);

	return ss_csum_fold(ss_csum_partial(l4, l4_len, sum));
}

/*
 * RFC 1624 §3 eqn. 3: HC' = ~(~HC + ~m + m').  Unlike eqn. 2 this never
 * turns a correct 0x0000 into 0xFFFF.  The one case it cannot get right is
 * data that becomes all zeros (true sum +0, checksum 0xFFFF): it yields
 * 0x0000 there; callers for whom that matters recompute when the result
 * is 0.
 */
uint16_t ss_csum_update16(uint16_t old_csum, uint16_t old_val,
			  uint16_t new_val)
{
	uint32_t sum = (uint16_t)~old_csum;

	sum += (uint16_t)~old_val;
	sum += new_val;
	return ss_csum_fold(sum);
}

uint16_t ss_csum_update32(uint16_t old_csum, uint32_t old_val,
			  uint32_t new_val)
{
	uint32_t sum = (uint16_t)~old_csum;

	sum += (uint16_t)~(old_val >> 16);
	sum += (uint16_t)~(old_val & 0xFFFF);
	sum += new_val >> 16;
	sum += new_val & 0xFFFF;
	return ss_csum_fold(sum);
}
