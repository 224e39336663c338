/* Unit tests for wire/ipv4.h (RFC 791). */
#include <string.h>

#include "check.h"
#include "packets.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/ipv4.h"

/* IP part of the captured SYN: 20-byte header + 40-byte TCP segment. */
static const uint8_t *const syn_ip = pkt_tcp_syn + 14;
#define SYN_IP_LEN 60

/* Tests patch a copy of the SYN's IP packet, then fix_csum() it. */
static void syn_copy(uint8_t *b)
{
	memcpy(b, syn_ip, SYN_IP_LEN);
}

static void fix_csum(uint8_t *b, size_t hdr_len)
{
	ss_wr16(b + 10, 0);
	ss_wr16(b + 10, ss_csum_ipv4_header(b, hdr_len));
}

static void test_parse_syn(void)
{
	struct ss_ipv4 ip;

	CHECK_EQ_U64(ss_ipv4_parse(syn_ip, SYN_IP_LEN, 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.hdr_len, 20);
	CHECK_EQ_U64(ip.tos, 0);
	CHECK_EQ_U64(ip.total_len, 60);
	CHECK_EQ_U64(ip.id, 0xe264);
	CHECK_EQ_U64(ip.frag, SS_IPV4_FRAG_DF);
	CHECK_EQ_U64(ip.ttl, 64);
	CHECK_EQ_U64(ip.proto, SS_IPPROTO_TCP);
	CHECK_EQ_U64(ip.csum, 0xcc2f);
	CHECK_EQ_U64(ip.src, 0xC6120002); /* 198.18.0.2 */
	CHECK_EQ_U64(ip.dst, 0xC6120001);
	CHECK_EQ_U64(ip.payload_len, 40);
	CHECK_EQ_U64(ip.exceptions, 0);
}

static void test_parse_padded_icmp(void)
{
	/* 60-byte minimum Ethernet frame: 46-byte payload, 36 of it IP */
	uint8_t b[1 + 46] = {0};
	struct ss_ipv4 ip;

	memcpy(b + 1, pkt_icmp_echo_reply + 14, 36); /* unaligned */
	CHECK_EQ_U64(ss_ipv4_parse(b + 1, 46, 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.total_len, 36);
	CHECK_EQ_U64(ip.payload_len, 16);
	CHECK_EQ_U64(ip.proto, SS_IPPROTO_ICMP);
	CHECK_EQ_U64(ip.id, 0x351f);
	CHECK_EQ_U64(ip.frag, 0);
	CHECK_EQ_U64(ip.src, 0xC6120001);
}

static void test_truncated(void)
{
	struct ss_ipv4 ip;

	for (size_t len = 0; len < SS_IPV4_HDR_MIN; len++)
		CHECK_EQ_U64(ss_ipv4_parse(syn_ip, len, 0, &ip),
			     SS_IPV4_TRUNCATED);
}

static void test_bad_version(void)
{
	static const uint8_t versions[] = {0x0, 0x6, 0x5, 0xF};
	uint8_t b[SYN_IP_LEN];
	struct ss_ipv4 ip;

	for (size_t i = 0; i < sizeof(versions); i++) {
		syn_copy(b);
		b[0] = (uint8_t)(versions[i] << 4 | 5);
		fix_csum(b, 20);
		CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip),
			     SS_IPV4_BAD_VERSION);
	}
}

static void test_bad_ihl(void)
{
	uint8_t b[SYN_IP_LEN];
	struct ss_ipv4 ip;

	for (unsigned ihl = 0; ihl < 5; ihl++) {
		syn_copy(b);
		b[0] = (uint8_t)(0x40 | ihl);
		CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip),
			     SS_IPV4_BAD_IHL);
	}
	/* IHL*4 > len: IHL 6 on a bare 20-byte header, IHL 15 on 59 bytes */
	syn_copy(b);
	b[0] = 0x46;
	CHECK_EQ_U64(ss_ipv4_parse(b, 20, 0, &ip), SS_IPV4_BAD_IHL);
	CHECK_EQ_U64(ss_ipv4_parse(b, 23, 0, &ip), SS_IPV4_BAD_IHL);
	b[0] = 0x4F;
	CHECK_EQ_U64(ss_ipv4_parse(b, 59, 0, &ip), SS_IPV4_BAD_IHL);
	/* IHL 15 on 60 bytes with total_len 60: all options, valid */
	fix_csum(b, 60);
	CHECK_EQ_U64(ss_ipv4_parse(b, 60, 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.hdr_len, 60);
	CHECK_EQ_U64(ip.payload_len, 0);
	CHECK_EQ_U64(ip.exceptions, SS_IPV4_EXC_OPTIONS);
}

static void test_bad_total_len(void)
{
	static const uint16_t bad[] = {0, 19, 61, 0xFFFF};
	uint8_t b[SYN_IP_LEN];
	struct ss_ipv4 ip;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		syn_copy(b);
		ss_wr16(b + 2, bad[i]);
		fix_csum(b, 20);
		CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip),
			     SS_IPV4_BAD_TOTAL_LEN);
	}
	/* total_len < hdr_len with options: IHL 6, total_len 22 */
	syn_copy(b);
	b[0] = 0x46;
	ss_wr16(b + 2, 22);
	fix_csum(b, 24);
	CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip),
		     SS_IPV4_BAD_TOTAL_LEN);
	/* the real packet cut one byte short of total_len */
	CHECK_EQ_U64(ss_ipv4_parse(syn_ip, SYN_IP_LEN - 1, 0, &ip),
		     SS_IPV4_BAD_TOTAL_LEN);
	/* total_len == hdr_len: empty payload is fine */
	syn_copy(b);
	ss_wr16(b + 2, 20);
	fix_csum(b, 20);
	CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.payload_len, 0);
}

static void test_bad_checksum(void)
{
	uint8_t b[SYN_IP_LEN];
	struct ss_ipv4 ip;

	for (size_t i = 0; i < 20; i++) {
		if (i == 0 || i == 2 || i == 3)
			continue; /* would fail earlier checks */
		syn_copy(b);
		b[i] ^= 0x01;
		CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip),
			     SS_IPV4_BAD_CHECKSUM);
		CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b),
					   SS_IPV4_PARSE_SKIP_CSUM, &ip),
			     SS_IPV4_OK);
	}
	/* payload bytes are not covered by the header checksum */
	syn_copy(b);
	b[40] ^= 0xFF;
	CHECK_EQ_U64(ss_ipv4_parse(b, sizeof(b), 0, &ip), SS_IPV4_OK);
}

static uint8_t parse_exc(uint16_t frag, uint8_t ihl)
{
	uint8_t b[SYN_IP_LEN];
	struct ss_ipv4 ip;

	syn_copy(b);
	b[0] = (uint8_t)(0x40 | ihl);
	ss_wr16(b + 6, frag);
	fix_csum(b, ihl * 4u);
	if (ss_ipv4_parse(b, sizeof(b), 0, &ip) != SS_IPV4_OK)
		return 0xFF;
	return ip.exceptions;
}

static void test_exceptions(void)
{
	CHECK_EQ_U64(parse_exc(0x0000, 5), 0);
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_DF, 5), 0);
	CHECK_EQ_U64(parse_exc(0x8000, 5), 0); /* reserved bit: not a frag */
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_MF, 5), SS_IPV4_EXC_FRAGMENT);
	CHECK_EQ_U64(parse_exc(0x0001, 5), SS_IPV4_EXC_FRAGMENT);
	CHECK_EQ_U64(parse_exc(0x1FFF, 5), SS_IPV4_EXC_FRAGMENT);
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_DF | 0x00B9, 5),
		     SS_IPV4_EXC_FRAGMENT);
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_MF | 0x0010, 5),
		     SS_IPV4_EXC_FRAGMENT);
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_DF, 6), SS_IPV4_EXC_OPTIONS);
	CHECK_EQ_U64(parse_exc(SS_IPV4_FRAG_MF, 15),
		     SS_IPV4_EXC_OPTIONS | SS_IPV4_EXC_FRAGMENT);
}

static void test_build(void)
{
	struct ss_ipv4 h = {
		.hdr_len = 24, /* ignored */
		.tos = 0,
		.total_len = 60,
		.id = 0xe264,
		.frag = SS_IPV4_FRAG_DF,
		.ttl = 64,
		.proto = SS_IPPROTO_TCP,
		.csum = 0x1234, /* ignored */
		.src = 0xC6120002,
		.dst = 0xC6120001,
		.exceptions = 0xFF, /* ignored */
	};
	struct ss_ipv4 back;
	uint8_t buf[1 + 60] = {0};

	CHECK_EQ_U64(ss_ipv4_build(buf + 1, 20, &h), 20);
	CHECK_MEM(buf + 1, syn_ip, 20);
	CHECK_EQ_U64(ss_ipv4_build(buf, 19, &h), 0);

	/* the kernel's SYN-ACK: id 0, DF */
	h.id = 0;
	h.src = 0xC6120001;
	h.dst = 0xC6120002;
	CHECK_EQ_U64(ss_ipv4_build(buf, sizeof(buf), &h), 20);
	CHECK_MEM(buf, pkt_tcp_synack + 14, 20);

	/* the kernel's echo reply: id 0x351f, no DF, ICMP */
	h.id = 0x351f;
	h.frag = 0;
	h.total_len = 36;
	h.proto = SS_IPPROTO_ICMP;
	CHECK_EQ_U64(ss_ipv4_build(buf, sizeof(buf), &h), 20);
	CHECK_MEM(buf, pkt_icmp_echo_reply + 14, 20);

	/* round trip: build then parse */
	h.tos = 0xB8;
	h.ttl = 1;
	h.total_len = 60;
	CHECK_EQ_U64(ss_ipv4_build(buf, sizeof(buf), &h), 20);
	CHECK_EQ_U64(ss_ipv4_parse(buf, 60, 0, &back), SS_IPV4_OK);
	CHECK_EQ_U64(back.tos, 0xB8);
	CHECK_EQ_U64(back.ttl, 1);
	CHECK_EQ_U64(back.id, 0x351f);
	CHECK_EQ_U64(back.src, 0xC6120001);
	CHECK_EQ_U64(back.dst, 0xC6120002);
	CHECK_EQ_U64(back.payload_len, 40);
	CHECK_EQ_U64(back.hdr_len, 20);
}

static void test_names(void)
{
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_OK), "ok");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_TRUNCATED), "truncated");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_BAD_VERSION), "bad_version");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_BAD_IHL), "bad_ihl");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_BAD_TOTAL_LEN), "bad_total_len");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_BAD_CHECKSUM), "bad_checksum");
	CHECK_STR(ss_ipv4_status_name(SS_IPV4_STATUS_MAX), "unknown");
	CHECK_EQ_U64(SS_IPV4_STATUS_MAX, 6);
	CHECK_STR(ss_ipv4_exception_name(SS_IPV4_EXC_OPTIONS), "options");
	CHECK_STR(ss_ipv4_exception_name(SS_IPV4_EXC_FRAGMENT), "fragment");
	CHECK_STR(ss_ipv4_exception_name(0x04), "unknown");
}

/* ss_ipv4_write() computes the checksum from the field values: it must
 * equal the RFC 1071 sum over the written header, for any fields
 * (including sums that carry more than once and the 0xFFFF corner). */
static void test_write_csum(void)
{
	uint32_t x = 12345;
	uint8_t buf[20];

	for (int i = 0; i < 200000; i++) {
		uint32_t r[4];
		for (int k = 0; k < 4; k++) {
			x = x * 1103515245u + 12345u;
			r[k] = x ^ (x >> 13) * 2654435761u;
		}
		uint32_t src = i < 1000 ? 0xFFFFFFFFu - (uint32_t)i : r[0];
		uint32_t dst = i < 1000 ? 0xFFFFFFFFu : r[1];
		ss_ipv4_write(buf, (uint8_t)r[2], (uint16_t)(r[2] >> 8), (uint16_t)r[3],
			      (uint16_t)(r[3] >> 16), (uint8_t)(r[2] >> 24), (uint8_t)(r[3] >> 5),
			      src, dst);
		uint16_t want;
		uint8_t copy[20];
		memcpy(copy, buf, 20);
		copy[10] = copy[11] = 0;
		want = ss_csum_ipv4_header(copy, 20);
		if (ss_rd16(buf + 10) != want || ss_csum_ipv4_header(buf, 20) != 0) {
			CHECK_EQ_U64(ss_rd16(buf + 10), want);
			CHECK_EQ_U64(ss_csum_ipv4_header(buf, 20), 0);
			return;
		}
	}
}

int main(void)
{
	test_parse_syn();
	test_parse_padded_icmp();
	test_truncated();
	test_bad_version();
	test_bad_ihl();
	test_bad_total_len();
	test_bad_checksum();
	test_exceptions();
	test_build();
	test_write_csum();
	test_names();
	return check_done("test_ipv4");
}
