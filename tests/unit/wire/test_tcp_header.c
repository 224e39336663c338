/* Unit tests for wire/tcp.h: header parse/build and checksum (RFC 9293). */
#include "check.h"
#include "packets.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define IP_A 0xC6120001u /* 198.18.0.1, port 5001 (server) */
#define IP_B 0xC6120002u /* 198.18.0.2, port 40000 (client) */

/* TCP parts of the captured frames (after 14 + 20 bytes). */
static const uint8_t *const syn = pkt_tcp_syn + 34;
static const uint8_t *const synack = pkt_tcp_synack + 34;
static const uint8_t *const ack = pkt_tcp_ack + 34;
static const uint8_t *const data = pkt_tcp_data + 34;
#define SYN_LEN 40
#define ACK_LEN 32
#define DATA_LEN 50

static const char hello[] = "hello, slipstream\n";

static void test_parse_syn(void)
{
	struct ss_tcp t;

	CHECK_EQ_U64(ss_tcp_parse(syn, SYN_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.sport, 40000);
	CHECK_EQ_U64(t.dport, 5001);
	CHECK_EQ_U64(t.seq, 0x8c75acb0);
	CHECK_EQ_U64(t.ack, 0);
	CHECK_EQ_U64(t.hdr_len, 40);
	CHECK_EQ_U64(t.flags, SS_TCP_SYN);
	CHECK_EQ_U64(t.window, 64240);
	CHECK_EQ_U64(t.csum, 0x2143);
	CHECK_EQ_U64(t.urg, 0);
	CHECK(t.payload == syn + 40);
	CHECK_EQ_U64(t.payload_len, 0);
	CHECK_EQ_U64(t.opts.present, SS_TCP_OPTF_MSS | SS_TCP_OPTF_SACK_PERM |
					     SS_TCP_OPTF_TS | SS_TCP_OPTF_WSCALE);
	CHECK_EQ_U64(t.opts.mss, 1460);
	CHECK_EQ_U64(t.opts.wscale, 7);
	CHECK_EQ_U64(t.opts.ts_val, 0xe2e8d3cb);
	CHECK_EQ_U64(t.opts.ts_ecr, 0);
	CHECK_EQ_U64(t.opts.sack_count, 0);
	CHECK(ss_tcp_csum_ok(IP_B, IP_A, syn, SYN_LEN));

	CHECK_EQ_U64(ss_tcp_parse(synack, SYN_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.flags, SS_TCP_SYN | SS_TCP_ACK);
	CHECK_EQ_U64(t.seq, 0x9d9f769d);
	CHECK_EQ_U64(t.ack, 0x8c75acb1);
	CHECK_EQ_U64(t.window, 65160);
	CHECK_EQ_U64(t.opts.ts_val, 0xe12ed682);
	CHECK_EQ_U64(t.opts.ts_ecr, 0xe2e8d3cb);
	CHECK(ss_tcp_csum_ok(IP_A, IP_B, synack, SYN_LEN));
}

static void test_parse_data(void)
{
	struct ss_tcp t;
	uint8_t odd[1 + DATA_LEN];

	memcpy(odd + 1, data, DATA_LEN); /* unaligned */
	CHECK_EQ_U64(ss_tcp_parse(odd + 1, DATA_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.flags, SS_TCP_PSH | SS_TCP_ACK);
	CHECK_EQ_U64(t.hdr_len, 32);
	CHECK_EQ_U64(t.window, 502);
	CHECK(t.payload == odd + 1 + 32);
	CHECK_EQ_U64(t.payload_len, 18);
	CHECK_MEM(t.payload, hello, 18);
	CHECK_EQ_U64(t.opts.present, SS_TCP_OPTF_TS);
	CHECK_EQ_U64(t.opts.ts_val, 0xe2e8d3cb);
	CHECK_EQ_U64(t.opts.ts_ecr, 0xe12ed682);
	CHECK(ss_tcp_csum_ok(IP_B, IP_A, odd + 1, DATA_LEN)); /* odd length */

	CHECK_EQ_U64(ss_tcp_parse(ack, ACK_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.flags, SS_TCP_ACK);
	CHECK_EQ_U64(t.payload_len, 0);
}

static void test_truncated_and_offset(void)
{
	uint8_t b[SYN_LEN];
	struct ss_tcp t;

	for (size_t len = 0; len < SS_TCP_HDR_MIN; len++)
		CHECK_EQ_U64(ss_tcp_parse(syn, len, &t), SS_TCP_TRUNCATED);
	/* header present, options cut: doff*4 (40) > len */
	for (size_t len = SS_TCP_HDR_MIN; len < SYN_LEN; len++)
		CHECK_EQ_U64(ss_tcp_parse(syn, len, &t), SS_TCP_BAD_OFFSET);

	memcpy(b, syn, SYN_LEN);
	for (unsigned doff = 0; doff < 5; doff++) {
		b[12] = (uint8_t)(doff << 4);
		CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_BAD_OFFSET);
	}
	b[12] = 0xB0; /* doff 11 = 44 > 40 */
	CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_BAD_OFFSET);
	b[12] = 0xF0;
	CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_BAD_OFFSET);
	/* doff 5 on the SYN: options become payload */
	b[12] = 0x50;
	CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.payload_len, 20);
	CHECK_EQ_U64(t.opts.present, 0);
	/* reserved bits next to doff are ignored */
	b[12] = 0xAF;
	CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_OK);
	CHECK_EQ_U64(t.hdr_len, 40);
	/* a bad option inside a good header is reported */
	b[12] = 0xA0;
	b[21] = 3; /* MSS length 3 */
	CHECK_EQ_U64(ss_tcp_parse(b, SYN_LEN, &t), SS_TCP_BAD_OPTION);
}

static void test_csum(void)
{
	uint8_t b[DATA_LEN];

	CHECK(ss_tcp_csum_ok(IP_B, IP_A, data, DATA_LEN));
	CHECK(ss_tcp_csum_ok(IP_A, IP_B, ack, ACK_LEN) ==
	      ss_tcp_csum_ok(IP_B, IP_A, ack, ACK_LEN)); /* commutative */
	CHECK(!ss_tcp_csum_ok(IP_B, IP_A + 1, data, DATA_LEN));
	CHECK(!ss_tcp_csum_ok(IP_B, IP_A, data, DATA_LEN - 1));
	for (size_t i = 0; i < DATA_LEN; i++) {
		memcpy(b, data, DATA_LEN);
		b[i] ^= 0x10;
		CHECK(!ss_tcp_csum_ok(IP_B, IP_A, b, DATA_LEN));
	}
}

/* Fields of a captured segment, for the builder. */
static struct ss_tcp seg_fields(const uint8_t *seg, size_t len)
{
	struct ss_tcp t;

	memset(&t, 0, sizeof(t));
	ss_tcp_parse(seg, len, &t);
	return t;
}

static void test_build_exact(void)
{
	uint8_t buf[1 + 64];
	struct ss_tcp t = {
		.sport = 40000,
		.dport = 5001,
		.seq = 0x8c75acb0,
		.flags = SS_TCP_SYN,
		.window = 64240,
		.opts = {
			.present = SS_TCP_OPTF_MSS | SS_TCP_OPTF_SACK_PERM |
				   SS_TCP_OPTF_TS | SS_TCP_OPTF_WSCALE,
			.mss = 1460,
			.wscale = 7,
			.ts_val = 0xe2e8d3cb,
		},
	};

	/* Linux SYN from fields written out by hand */
	CHECK_EQ_U64(ss_tcp_build(buf + 1, 40, &t, IP_B, IP_A), SYN_LEN);
	CHECK_MEM(buf + 1, syn, SYN_LEN);
	CHECK_EQ_U64(ss_tcp_build(buf, 39, &t, IP_B, IP_A), 0);

	/* the others from their parsed fields */
	t = seg_fields(synack, SYN_LEN);
	t.hdr_len = 0;
	t.csum = 0xdead; /* both ignored */
	CHECK_EQ_U64(ss_tcp_build(buf, sizeof(buf), &t, IP_A, IP_B), SYN_LEN);
	CHECK_MEM(buf, synack, SYN_LEN);

	t = seg_fields(ack, ACK_LEN);
	CHECK_EQ_U64(ss_tcp_build(buf, sizeof(buf), &t, IP_B, IP_A), ACK_LEN);
	CHECK_MEM(buf, ack, ACK_LEN);

	t = seg_fields(data, DATA_LEN);
	t.payload = (const uint8_t *)hello;
	CHECK_EQ_U64(ss_tcp_build(buf + 1, DATA_LEN, &t, IP_B, IP_A),
		     DATA_LEN);
	CHECK_MEM(buf + 1, data, DATA_LEN);
	CHECK_EQ_U64(ss_tcp_build(buf, DATA_LEN - 1, &t, IP_B, IP_A), 0);

	/* payload already in place, and payload sitting where the header
	 * will go (memmove) */
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 32, hello, 18);
	t.payload = buf + 32;
	CHECK_EQ_U64(ss_tcp_build(buf, DATA_LEN, &t, IP_B, IP_A), DATA_LEN);
	CHECK_MEM(buf, data, DATA_LEN);
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 5, hello, 18);
	t.payload = buf + 5;
	CHECK_EQ_U64(ss_tcp_build(buf, DATA_LEN, &t, IP_B, IP_A), DATA_LEN);
	CHECK_MEM(buf, data, DATA_LEN);
}

static void test_build_limits(void)
{
	static uint8_t big[0x10000 + 64];
	struct ss_tcp t = {.flags = SS_TCP_ACK, .payload = big};

	/* 20 + 65515 = 65535: the largest segment the checksum covers */
	t.payload_len = 0xFFFF - 20;
	CHECK_EQ_U64(ss_tcp_build(big, sizeof(big), &t, IP_A, IP_B), 0xFFFF);
	CHECK(ss_tcp_csum_ok(IP_A, IP_B, big, 0xFFFF));
	/* one zero byte more would still sum right (the pseudo-header length
	 * wraps to 0 == 0xFFFF in one's complement): must be refused */
	big[0xFFFF] = 0;
	CHECK(!ss_tcp_csum_ok(IP_A, IP_B, big, 0x10000));
	t.payload_len++;
	CHECK_EQ_U64(ss_tcp_build(big, sizeof(big), &t, IP_A, IP_B), 0);
	t.payload_len = 0;
	t.payload = NULL;
	CHECK_EQ_U64(ss_tcp_build(big, 20, &t, IP_A, IP_B), 20);
	CHECK_EQ_U64(ss_tcp_build(big, 19, &t, IP_A, IP_B), 0);
	CHECK_EQ_U64(big[12], 0x50);
}

/* Random headers: build, then parse and verify, get the same fields. */
/* Ports, sequence numbers, flags and window drawn from @rng, in that order;
 * no options, no payload. */
static struct ss_tcp random_header(uint64_t *rng)
{
	struct ss_tcp t = { 0 };
	t.sport = (uint16_t)check_rand(rng);
	t.dport = (uint16_t)check_rand(rng);
	t.seq = (uint32_t)check_rand(rng);
	t.ack = (uint32_t)check_rand(rng);
	t.flags = (uint8_t)check_rand(rng);
	t.window = (uint16_t)check_rand(rng);
	return t;
}

static void test_roundtrip_random(void)
{
	uint64_t rng = 9293;
	uint8_t pay[100], buf[60 + 100];
	unsigned bad = 0;

	for (int n = 0; n < 5000; n++) {
		struct ss_tcp t = random_header(&rng);
		t.urg = (uint16_t)check_rand(&rng);
		t.payload = pay;
		t.payload_len = check_rand(&rng) % 101;
		uint32_t src = (uint32_t)check_rand(&rng);
		uint32_t dst = (uint32_t)check_rand(&rng);
		struct ss_tcp p;
		size_t len;

		t.opts.present = (uint8_t)(check_rand(&rng) & 0x1F);
		t.opts.mss = (uint16_t)check_rand(&rng);
		t.opts.wscale = (uint8_t)(check_rand(&rng) % 15);
		t.opts.ts_val = (uint32_t)check_rand(&rng);
		t.opts.ts_ecr = (uint32_t)check_rand(&rng);
		t.opts.sack_count = (uint8_t)(1 + check_rand(&rng) % 2);
		for (int i = 0; i < 4; i++) {
			t.opts.sack[i].left = (uint32_t)check_rand(&rng);
			t.opts.sack[i].right = (uint32_t)check_rand(&rng);
		}
		for (size_t i = 0; i < t.payload_len; i++)
			pay[i] = (uint8_t)check_rand(&rng);

		len = ss_tcp_build(buf, sizeof(buf), &t, src, dst);
		if (len != 20 + ss_tcp_opts_len(&t.opts) + t.payload_len ||
		    ss_tcp_parse(buf, len, &p) != SS_TCP_OK ||
		    !ss_tcp_csum_ok(src, dst, buf, len) ||
		    p.sport != t.sport || p.dport != t.dport ||
		    p.seq != t.seq || p.ack != t.ack || p.flags != t.flags ||
		    p.window != t.window || p.urg != t.urg ||
		    p.payload_len != t.payload_len ||
		    p.hdr_len != len - t.payload_len ||
		    memcmp(p.payload, pay, t.payload_len) != 0 ||
		    p.opts.present != t.opts.present ||
		    ((p.opts.present & SS_TCP_OPTF_MSS) &&
		     p.opts.mss != t.opts.mss) ||
		    ((p.opts.present & SS_TCP_OPTF_TS) &&
		     p.opts.ts_val != t.opts.ts_val) ||
		    ((p.opts.present & SS_TCP_OPTF_SACK) &&
		     (p.opts.sack_count != t.opts.sack_count ||
		      p.opts.sack[0].left != t.opts.sack[0].left)))
			bad++;
		/* The in-place build: same bytes around the same payload. */
		uint8_t buf2[sizeof(buf)];
		size_t hl = 20 + ss_tcp_opts_len(&t.opts);
		memcpy(buf2 + hl, pay, t.payload_len);
		if (ss_tcp_build_in_place(buf2, sizeof(buf2), &t, t.payload_len, src, dst) != len ||
		    memcmp(buf, buf2, len) != 0)
			bad++;
		/* For TX checksum offload: the pseudo-header sum in the field,
		 * then completed as a NIC does: the same bytes. */
		uint16_t phdr = (uint16_t)~ss_csum_fold(ss_csum_pseudo_ipv4(src, dst, SS_IPPROTO_TCP,
									   (uint16_t)len));
		if (ss_tcp_build_in_place_csum(buf2, sizeof(buf2), &t, t.payload_len, src, dst, true) != len ||
		    ss_rd16(buf2 + 16) != phdr)
			bad++;
		ss_tcp_csum_finish(buf2, len);
		if (memcmp(buf, buf2, len) != 0)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

/* ss_tcp_write_usual() against the general build: for a header with
 * timestamps alone or no options (urgent pointer 0), the same bytes as
 * ss_tcp_hdr_write() and, with the payload after it and
 * ss_tcp_csum_set(), as ss_tcp_build_in_place_csum() in both checksum
 * modes (with offload, the pseudo-header sum csum.c gives), and
 * ss_tcp_csum_set_base() the same; every byte of the header written. */
static void test_write_usual(void)
{
	uint64_t rng = 7323;
	uint8_t a[60 + 100], b[60 + 100];
	unsigned bad = 0;

	for (int n = 0; n < 200000; n++) {
		bool ts = check_rand(&rng) & 1, ol = check_rand(&rng) & 1;
		struct ss_tcp t = random_header(&rng);
		size_t pl = check_rand(&rng) % 101;
		uint32_t src = (uint32_t)check_rand(&rng), dst = (uint32_t)check_rand(&rng);

		if (ts) {
			t.opts.present = SS_TCP_OPTF_TS;
			t.opts.ts_val = (uint32_t)check_rand(&rng);
			t.opts.ts_ecr = (uint32_t)check_rand(&rng);
		}
		memset(a, 0x5a, sizeof(a));
		memset(b, 0xa5, sizeof(b));
		size_t hl = ss_tcp_write_usual(a, t.sport, t.dport, t.seq, t.ack, t.flags, t.window,
					       ts, t.opts.ts_val, t.opts.ts_ecr);
		if (hl != (ts ? 32u : 20u) || ss_tcp_hdr_write(b, &t) != hl || memcmp(a, b, hl) != 0)
			bad++;
		for (size_t i = 0; i < pl; i++)
			a[hl + i] = b[hl + i] = (uint8_t)check_rand(&rng);
		ss_tcp_csum_set(a, hl + pl, src, dst, ol);
		if (ss_tcp_build_in_place_csum(b, sizeof(b), &t, pl, src, dst, ol) != hl + pl ||
		    memcmp(a, b, hl + pl) != 0)
			bad++;
		if (!ol && !ss_tcp_csum_ok(src, dst, a, hl + pl))
			bad++;
		/* with offload, the pseudo-header sum from csum.c's own helpers */
		uint16_t pseudo = (uint16_t)~ss_csum_fold(
			ss_csum_pseudo_ipv4(src, dst, SS_IPPROTO_TCP, (uint16_t)(hl + pl)));
		if (ol && ss_rd16(a + 16) != pseudo)
			bad++;
		/* the inline form a connection uses, from its base */
		memcpy(b, a, hl + pl);
		ss_wr16(b + 16, 0);
		ss_tcp_csum_set_base(b, hl + pl, ss_tcp_csum_base(src, dst), ol);
		if (memcmp(a, b, hl + pl) != 0)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

/* ss_tcp_parse_usual() against ss_tcp_parse(): where it claims a header,
 * the same struct, byte for byte; it claims exactly the headers without
 * options or with NOP NOP TS; everything else is left to the parser. */
static void test_parse_usual(void)
{
	static const uint8_t nopnopts[4] = { 1, 1, 8, 10 };
	uint64_t rng = 7323;
	unsigned bad = 0, claimed = 0;
	uint8_t buf[80];

	for (int n = 0; n < 200000; n++) {
		size_t len = check_rand(&rng) % sizeof(buf);
		unsigned doff;
		struct ss_tcp a, b;

		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)check_rand(&rng);
		/* Mostly the usual shapes, some near misses. */
		switch (check_rand(&rng) % 4) {
		case 0:
			buf[12] = (uint8_t)(5 << 4 | (buf[12] & 0xf));
			break;
		case 1:
		case 2:
			buf[12] = (uint8_t)(8 << 4 | (buf[12] & 0xf));
			memcpy(buf + 20, nopnopts, 4);
			if (check_rand(&rng) % 8 == 0)
				buf[20 + check_rand(&rng) % 4] ^= (uint8_t)(1 + check_rand(&rng) % 255);
			break;
		default:
			break;
		}
		doff = buf[12] >> 4;
		memset(&a, 0xa5, sizeof(a));
		memset(&b, 0xa5, sizeof(b));
		bool usual = len >= 20 && len >= doff * 4u &&
			     (doff == 5 || (doff == 8 && memcmp(buf + 20, nopnopts, 4) == 0));
		bool got = ss_tcp_parse_usual(buf, len, &a);

		if (got != usual)
			bad++;
		if (!got)
			continue;
		claimed++;
		if (ss_tcp_parse(buf, len, &b) != SS_TCP_OK || memcmp(&a, &b, sizeof(a)) != 0)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(claimed > 50000);
	/* The captured frames: the ACK and the data segment are usual, the
	 * SYN and SYN-ACK (MSS, SACK_PERM, WSCALE) are not. */
	struct ss_tcp a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK(ss_tcp_parse_usual(ack, ACK_LEN, &a));
	CHECK_EQ_U64(ss_tcp_parse(ack, ACK_LEN, &b), SS_TCP_OK);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	CHECK(ss_tcp_parse_usual(data, DATA_LEN, &a));
	CHECK_EQ_U64(ss_tcp_parse(data, DATA_LEN, &b), SS_TCP_OK);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	CHECK(!ss_tcp_parse_usual(syn, SYN_LEN, &a));
	CHECK(!ss_tcp_parse_usual(synack, SYN_LEN, &a));
	CHECK(!ss_tcp_parse_usual(data, 31, &a)); /* TS option cut short */
}

static void test_names(void)
{
	CHECK_STR(ss_tcp_status_name(SS_TCP_OK), "ok");
	CHECK_STR(ss_tcp_status_name(SS_TCP_TRUNCATED), "truncated");
	CHECK_STR(ss_tcp_status_name(SS_TCP_BAD_OFFSET), "bad_offset");
	CHECK_STR(ss_tcp_status_name(SS_TCP_BAD_OPTION), "bad_option");
	CHECK_STR(ss_tcp_status_name(SS_TCP_BAD_CHECKSUM), "bad_checksum");
	CHECK_STR(ss_tcp_status_name(SS_TCP_STATUS_MAX), "unknown");
	CHECK_EQ_U64(SS_TCP_STATUS_MAX, 5);
}

int main(void)
{
	test_parse_syn();
	test_parse_data();
	test_truncated_and_offset();
	test_csum();
	test_build_exact();
	test_build_limits();
	test_roundtrip_random();
	test_write_usual();
	test_parse_usual();
	test_names();
	return check_done("test_tcp");
}
