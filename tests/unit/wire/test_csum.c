/* Unit tests for wire/csum.h and wire/bytes.h (RFC 1071, RFC 1624). */
#include "check.h"
#include "packets.h"
#include "wire/bytes.h"
#include "wire/csum.h"

/* Independent reference: 16-bit words one at a time, RFC 1071 §4.1. */
static uint16_t ref_csum(const uint8_t *p, size_t len, uint32_t extra)
{
	uint64_t sum = extra;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return (uint16_t)~sum;
}

static void test_bytes(void)
{
	uint8_t b[9] = {0};

	ss_wr16(b + 1, 0xABCD); /* odd address: unaligned */
	ss_wr32(b + 3, 0x01020304);
	CHECK_MEM(b, ((const uint8_t[]){0, 0xAB, 0xCD, 1, 2, 3, 4, 0, 0}), 9);
	CHECK_EQ_U64(ss_rd16(b + 1), 0xABCD);
	CHECK_EQ_U64(ss_rd32(b + 3), 0x01020304);
	CHECK_EQ_U64(ss_rd32(b + 2), 0xCD010203);
}

/* RFC 1071 §3 numerical example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2. */
static void test_rfc1071_example(void)
{
	static const uint8_t d[8] = {0x00, 0x01, 0xf2, 0x03,
				     0xf4, 0xf5, 0xf6, 0xf7};

	CHECK_EQ_U64(ss_csum_fold(ss_csum_partial(d, sizeof(d), 0)), 0x220d);
	/* split at an even boundary: same result */
	CHECK_EQ_U64(ss_csum_fold(ss_csum_partial(d + 2, 6,
						  ss_csum_partial(d, 2, 0))),
		     0x220d);
	CHECK_EQ_U64(ss_csum_fold(0), 0xFFFF);
	CHECK_EQ_U64(ss_csum_fold(0xFFFF), 0);
	CHECK_EQ_U64(ss_csum_fold(0xFFFFFFFF), 0);
	CHECK_EQ_U64(ss_csum_fold(0x0001FFFE), 0);
}

/* The classic textbook header (also on Wikipedia): checksum 0xb861. */
static void test_ipv4_header(void)
{
	uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
			 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
			 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};

	CHECK_EQ_U64(ss_csum_ipv4_header(h, 20), 0);
	h[10] = h[11] = 0;
	CHECK_EQ_U64(ss_csum_ipv4_header(h, 20), 0xb861);

	/* real captured headers verify to 0 */
	CHECK_EQ_U64(ss_csum_ipv4_header(pkt_tcp_syn + 14, 20), 0);
	CHECK_EQ_U64(ss_csum_ipv4_header(pkt_icmp_echo_reply + 14, 20), 0);
}

static void test_l4(void)
{
	uint8_t seg[40];

	CHECK_EQ_U64(ss_csum_pseudo_ipv4(0xC6120002, 0xC6120001, 6, 40),
		     0x18c55);
	/* real SYN: verify 0; with the field zeroed we get the captured value */
	CHECK_EQ_U64(ss_csum_l4_ipv4(0xC6120002, 0xC6120001, 6,
				     pkt_tcp_syn + 34, 40), 0);
	memcpy(seg, pkt_tcp_syn + 34, 40);
	seg[16] = seg[17] = 0;
	CHECK_EQ_U64(ss_csum_l4_ipv4(0xC6120002, 0xC6120001, 6, seg, 40),
		     0x2143);
	/* swapped addresses sum the same (commutative) ... */
	CHECK_EQ_U64(ss_csum_l4_ipv4(0xC6120001, 0xC6120002, 6, seg, 40),
		     0x2143);
	/* ... but a different address or protocol does not */
	CHECK(ss_csum_l4_ipv4(0xC6120003, 0xC6120001, 6, seg, 40) != 0x2143);
	CHECK(ss_csum_l4_ipv4(0xC6120002, 0xC6120001, 17, seg, 40) != 0x2143);
	/* odd-length real segment: the data packet, 18 payload bytes + 32 */
	CHECK_EQ_U64(ss_csum_l4_ipv4(0xC6120002, 0xC6120001, 6,
				     pkt_tcp_data + 34, 50), 0);
}

#define CARRY_BYTES ((const uint8_t[]){0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})

/* Every length 0..300 at every alignment 0..7 against the reference. */
static void test_odd_unaligned(void)
{
	static uint8_t buf[320];
	uint64_t rng = 1071;
	unsigned bad = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)check_rand(&rng);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 300; len++)
			if (ss_csum_fold(ss_csum_partial(buf + off, len, 0)) !=
			    ref_csum(buf + off, len, 0))
				bad++;
	CHECK_EQ_U64(bad, 0);

	/* Carry-heavy data through the 32-byte steps (x86-64: one add-with-
	 * carry chain): all 0xFF, all 0xFF with one byte less, all 0xFE/0xFF
	 * mixes, all zeros; every length to 300 and a few alignments. */
	for (int pat = 0; pat < 5; pat++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = pat == 0 ? 0xFF : pat == 1 ? (i == 77 ? 0xFE : 0xFF)
				 : pat == 2 ? (uint8_t)(0xFE | (check_rand(&rng) & 1))
				 : pat == 3 ? 0 : (uint8_t)(0xF0 | (check_rand(&rng) & 0xF));
		for (size_t off = 0; off < 3; off++)
			for (size_t len = 0; len <= 300; len++)
				if (ss_csum_fold(ss_csum_partial(buf + off, len, 0)) !=
				    ref_csum(buf + off, len, 0))
					bad++;
	}
	CHECK_EQ_U64(bad, 0);
	memset(buf, 0xFF, sizeof(buf));
	for (size_t len = 0; len <= 40; len++)
		CHECK_EQ_U64(ss_csum_fold(ss_csum_partial(buf + 1, len, 0)),
			     ref_csum(buf + 1, len, 0));
	/* odd length: last byte is padded on the right */
	CHECK_EQ_U64(ss_csum_fold(ss_csum_partial((const uint8_t[]){0x12}, 1,
						  0)),
		     (uint16_t)~0x1200);
	/* a large incoming sum still folds correctly, even when the first
	 * end-around carry produces another one */
	CHECK_EQ_U64(ss_csum_fold(ss_csum_partial(buf, 4, 0xFFFFFFFF)),
		     ref_csum(buf, 4, 0));
	CHECK_EQ_U64(ss_csum_fold(ss_csum_partial(CARRY_BYTES, 8, 0xFFFFFFFF)),
		     ref_csum(CARRY_BYTES, 8, 0xFFFFFFFF));
}

/* Build-then-verify: storing the computed checksum makes verify return 0. */
static void test_roundtrip(void)
{
	uint64_t rng = 42;
	uint8_t buf[64 + 1];
	unsigned bad = 0;

	for (int n = 0; n < 2000; n++) {
		size_t len = 20 + check_rand(&rng) % 45; /* 20..64, odd too */
		uint8_t *seg = buf + (n & 1);           /* unaligned too */
		uint32_t src = (uint32_t)check_rand(&rng);
		uint32_t dst = (uint32_t)check_rand(&rng);
		uint16_t c;

		for (size_t i = 0; i < len; i++)
			seg[i] = (uint8_t)check_rand(&rng);
		ss_wr16(seg + 16, 0);
		c = ss_csum_l4_ipv4(src, dst, 6, seg, len);
		ss_wr16(seg + 16, c);
		if (ss_csum_l4_ipv4(src, dst, 6, seg, len) != 0)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

/* RFC 1624 §4 example: eqn. 3 gives 0x0000 where eqn. 2 gives 0xFFFF. */
static void test_rfc1624_example(void)
{
	CHECK_EQ_U64(ss_csum_update16(0xDD2F, 0x5555, 0x3285), 0x0000);
	/* no change -> same checksum */
	CHECK_EQ_U64(ss_csum_update16(0x1234, 0xBEEF, 0xBEEF), 0x1234);
	CHECK_EQ_U64(ss_csum_update32(0x1234, 0xDEADBEEF, 0xDEADBEEF), 0x1234);
}

/*
 * Random buffers, random field change at a random even offset: the
 * incremental update must equal a full recompute, for 16- and 32-bit
 * fields, as well as for a checksum field living inside the data (IPv4).
 */
static void test_incremental_random(void)
{
	uint64_t rng = 1624;
	uint8_t buf[128];
	unsigned bad16 = 0, bad32 = 0, bad_ip = 0;

	for (int n = 0; n < 20000; n++) {
		size_t len = 4 + 2 * (check_rand(&rng) % 62); /* even, 4..126 */
		size_t off = 2 * (check_rand(&rng) % ((len - 2) / 2));
		size_t off32 = 2 * (check_rand(&rng) % ((len - 4) / 2 + 1));
		uint16_t old16, new16 = (uint16_t)check_rand(&rng);
		uint32_t old32, new32 = (uint32_t)check_rand(&rng);
		uint16_t c, inc;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)check_rand(&rng);
		if (n % 7 == 0) /* exercise sums near 0xFFFF / zero words */
			memset(buf, n % 2 ? 0xFF : 0x00, len / 2);

		c = ref_csum(buf, len, 0);
		old16 = ss_rd16(buf + off);
		ss_wr16(buf + off, new16);
		inc = ss_csum_update16(c, old16, new16);
		if (inc != ref_csum(buf, len, 0))
			bad16++;

		c = ref_csum(buf, len, 0);
		old32 = ss_rd32(buf + off32);
		ss_wr32(buf + off32, new32);
		inc = ss_csum_update32(c, old32, new32);
		if (inc != ref_csum(buf, len, 0))
			bad32++;

		/* IPv4-style: checksum stored at 10, TTL/proto word at 8 */
		if (len >= 20) {
			uint16_t word;

			buf[0] = 0x45; /* never all-zero data */
			ss_wr16(buf + 10, 0);
			ss_wr16(buf + 10, ss_csum_ipv4_header(buf, 20));
			word = ss_rd16(buf + 8);
			buf[8]--; /* TTL decrement: the router case (RFC 1141) */
			c = ss_csum_update16(ss_rd16(buf + 10), word,
					     ss_rd16(buf + 8));
			ss_wr16(buf + 10, c);
			if (ss_csum_ipv4_header(buf, 20) != 0)
				bad_ip++;
		}
	}
	CHECK_EQ_U64(bad16, 0);
	CHECK_EQ_U64(bad32, 0);
	CHECK_EQ_U64(bad_ip, 0);
}

/* ss_csum_ipv4_header20_ok() against ss_csum_ipv4_header(h, 20) == 0:
 * random headers, with correct sums, off by one bit, the field zeroed,
 * all zeros, all ones, and sums whose folds carry. */
static void test_ipv4_header20_ok(void)
{
	uint64_t seed = 5;
	uint8_t h[21];
	unsigned good = 0;

	for (int i = 0; i < 400000; i++) {
		uint8_t *p = h + (i & 1); /* unaligned too */

		for (int j = 0; j < 20; j++)
			p[j] = (uint8_t)check_rand(&seed);
		switch (i % 8) {
		case 0: memset(p, 0, 20); break;
		case 1: memset(p, 0xFF, 20); break;
		case 2: memset(p, 0xFF, 20); p[check_rand(&seed) % 20] = 0xFE; break;
		default: break;
		}
		if (i % 8 >= 3) { /* a correct sum, then maybe a flipped bit */
			ss_wr16(p + 10, 0);
			ss_wr16(p + 10, ss_csum_ipv4_header(p, 20));
			if (i % 8 == 7)
				p[check_rand(&seed) % 20] ^= (uint8_t)(1u << (check_rand(&seed) % 8));
		}
		bool want = ss_csum_ipv4_header(p, 20) == 0;
		good += want;
		CHECK_EQ_U64(ss_csum_ipv4_header20_ok(p), want);
	}
	CHECK(good > 100000);
}

int main(void)
{
	test_bytes();
	test_rfc1071_example();
	test_ipv4_header();
	test_l4();
	test_odd_unaligned();
	test_roundtrip();
	test_rfc1624_example();
	test_incremental_random();
	test_ipv4_header20_ok();
	return check_done("test_csum");
}
