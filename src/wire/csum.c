/* Internet checksum (RFC 1071) and incremental update (RFC 1624). */
#include "wire/csum.h"

#include <string.h>

#include "wire/bytes.h"

/*
 * RFC 1071 §4.1, eight bytes per load.  The sum is taken over the host's
 * own reading of the bytes and turned into the big-endian reading at the
 * end: the one's-complement sum is byte-order independent (RFC 1071 §2 B:
 * swapping the bytes of every 16-bit word swaps the bytes of the sum).
 * 64-bit words are added with end-around carry (one's complement in 64
 * bits is one's complement in 16: 2^16 == 1 mod 0xFFFF), then folded.  A
 * non-zero sum never folds to zero, so +0 and -0 stay distinct as RFC 1071
 * requires.  Loads go through memcpy: @data needs no alignment.
 */
static inline uint64_t csum_add64(uint64_t acc, uint64_t v)
{
	uint64_t r;

	if (__builtin_add_overflow(acc, v, &r))
		r++; /* end-around carry: r < v here, no second overflow */
	return r;
}

static inline uint16_t csum_bswap16(uint32_t v)
{
	return (uint16_t)((v & 0xFF) << 8 | (v >> 8 & 0xFF));
}

/* End-around fold of a 64-bit one's-complement sum to 32 bits. */
static inline uint32_t csum_fold_to32(uint64_t acc)
{
	acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	return (uint32_t)acc + (uint32_t)(acc >> 32);
}

/* End-around fold of a 64-bit one's-complement sum to 16 bits. */
static inline uint32_t csum_fold64(uint64_t acc)
{
	acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	acc = (acc & 0xFFFFFFFFu) + (acc >> 32);
	acc = (acc & 0xFFFF) + (acc >> 16);
	acc = (acc & 0xFFFF) + (acc >> 16);
	return (uint32_t)acc;
}

/*
 * x86-64: the 32-byte step as one add-with-carry chain (add, three adc,
 * adc $0), as Linux's csum_partial does: the carry of each add goes into
 * the next, the last one back into the sum.  It cannot lose a carry: an
 * add that carries out leaves at most 2^64 - 2, so the final adc $0 never
 * overflows.  Any exact end-around-carry sum of the same words is the same
 * value (it is zero only when every word is), so the result is the C
 * loop's.  Not under AddressSanitizer, which does not see loads in asm:
 * the C loop there (test_csum checks both against a reference).
 */
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CSUM_NO_ASM 1
#endif
#endif
#ifndef CSUM_NO_ASM
#define CSUM_ASM 1
#endif
#endif

/* Bytes 0..31 after the 32-byte steps: 8, 4, 2, then the odd byte. */
static inline uint64_t csum_tail(uint64_t acc, const uint8_t *p, size_t len)
{
	uint64_t v;
	uint32_t h;
	uint16_t t;

	while (len >= 8) {
		memcpy(&v, p, 8);
		acc = csum_add64(acc, v);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		memcpy(&h, p, 4);
		acc = csum_add64(acc, h);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		memcpy(&t, p, 2);
		acc = csum_add64(acc, t);
		p += 2;
		len -= 2;
	}
	if (len) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		acc = csum_add64(acc, p[0]); /* the odd byte, zero-padded on its right */
#else
		acc = csum_add64(acc, (uint32_t)p[0] << 8);
#endif
	}
	return acc;
}

uint32_t ss_csum_partial(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = 0;
#ifndef CSUM_ASM
	uint64_t v, w, x, y;
#endif

#ifdef CSUM_ASM
	/* 64 bytes per step first (one carry chain: half the loop's
	 * overhead per byte; a segment of a few hundred bytes is the usual
	 * case), then 32. */
	while (len >= 64) {
		__asm__("addq 0(%[p]), %[acc]\n\t"
			"adcq 8(%[p]), %[acc]\n\t"
			"adcq 16(%[p]), %[acc]\n\t"
			"adcq 24(%[p]), %[acc]\n\t"
			"adcq 32(%[p]), %[acc]\n\t"
			"adcq 40(%[p]), %[acc]\n\t"
			"adcq 48(%[p]), %[acc]\n\t"
			"adcq 56(%[p]), %[acc]\n\t"
			"adcq $0, %[acc]"
			: [acc] "+r"(acc)
			: [p] "r"(p), "m"(*(const uint8_t(*)[64])p)
			: "cc");
		p += 64;
		len -= 64;
	}
	if (len >= 32) {
		__asm__("addq 0(%[p]), %[acc]\n\t"
			"adcq 8(%[p]), %[acc]\n\t"
			"adcq 16(%[p]), %[acc]\n\t"
			"adcq 24(%[p]), %[acc]\n\t"
			"adcq $0, %[acc]"
			: [acc] "+r"(acc)
			: [p] "r"(p), "m"(*(const uint8_t(*)[32])p)
			: "cc");
		p += 32;
		len -= 32;
	}
#else
	while (len >= 32) {
		memcpy(&v, p, 8);
		memcpy(&w, p + 8, 8);
		memcpy(&x, p + 16, 8);
		memcpy(&y, p + 24, 8);
		acc = csum_add64(acc, v);
		acc = csum_add64(acc, w);
		acc = csum_add64(acc, x);
		acc = csum_add64(acc, y);
		p += 32;
		len -= 32;
	}
#endif
	/* The tail (none for a multiple of 32 bytes, as a 32-byte header
	 * with a 64-byte payload). */
	if (len)
		acc = csum_tail(acc, p, len);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* To 32 bits, then each 16-bit half to the big-endian reading (the
	 * halves are a sum of 16-bit words like any other), then the
	 * caller's (big-endian) sum. */
	uint32_t h = csum_fold_to32(acc);

	h = (h & 0x00FF00FFu) << 8 | (h >> 8 & 0x00FF00FFu);
	return csum_fold_to32((uint64_t)h + sum);
#else
	return csum_fold_to32(csum_add64(acc, sum));
#endif
}

uint16_t ss_csum_fold(uint32_t sum)
{
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t ss_csum_ipv4_header(const void *hdr, size_t hdr_len)
{
	if (hdr_len == 20) {
		/* The usual header, no options: five words, no loop. */
		uint64_t acc = ss_csum_ipv4_header20_sum(hdr);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		return (uint16_t)~csum_bswap16(csum_fold64(acc));
#else
		return (uint16_t)~csum_fold64(acc);
#endif
	}
	return ss_csum_fold(ss_csum_partial(hdr, hdr_len, 0));
}

/* RFC 9293 §3.1 (TCP pseudo-header), RFC 768 (UDP): same layout. */
static inline uint32_t csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
					uint16_t l4_len)
{
	return (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) +
	       proto + l4_len;
}

uint32_t ss_csum_pseudo_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			     uint16_t l4_len)
{
	return csum_pseudo_ipv4(src, dst, proto, l4_len);
}

uint16_t ss_csum_l4_ipv4(uint32_t src, uint32_t dst, uint8_t proto,
			 const void *l4, size_t l4_len)
{
	uint32_t sum = csum_pseudo_ipv4(src, dst, proto, (uint16_t)l4_len);

	sum = ss_csum_partial(l4, l4_len, sum);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
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
