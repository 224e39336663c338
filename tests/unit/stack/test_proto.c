/* test_proto.c - the service's per-frame logic: every reply byte-exact, every drop counted once. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "stack/proto.h"
#include "wire/arp.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/eth.h"
#include "wire/icmp.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define OUR_IP 0xC6120001u    /* 198.18.0.1 */
#define PEER_IP 0xC6120002u   /* 198.18.0.2 */
#define OTHER_IP 0xC6120009u  /* 198.18.0.9 */

static const uint8_t our_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t other_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x09 };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static struct ss_counters ctr;
static struct ss_arp_cache cache;
static struct ss_proto_ctx ctx;
static uint8_t frame[2048];

static void reset(void)
{
	memset(&ctr, 0, sizeof(ctr));
	ss_arp_cache_free(&cache);
	CHECK_EQ_U64(ss_arp_cache_init(&cache, 64), 0);
	ss_proto_ctx_init(&ctx, our_mac, OUR_IP, 24, &cache, true, &ctr);
	ctx.now_ns = 1000;
	memset(frame, 0, sizeof(frame));
}

static uint64_t drops(void)
{
	uint64_t n = 0;
	for (unsigned id = 0; id < SS_CTR_MAX; id++)
		if (strncmp(ss_counter_name((enum ss_counter_id)id), "drop_", 5) == 0)
			n += ctr.v[id];
	return n;
}

/* Runs one frame that must be dropped by exactly counter @id. */
static void expect_drop(size_t len, enum ss_counter_id id, int line)
{
	size_t out = ss_proto_input(&ctx, frame, len, sizeof(frame), 0);
	if (out != 0 || ctr.v[id] != 1 || drops() != 1) {
		fprintf(stderr, "line %d: want only %s = 1, got out=%zu %s=%llu drops=%llu\n",
			line, ss_counter_name(id), out, ss_counter_name(id),
			(unsigned long long)ctr.v[id], (unsigned long long)drops());
		CHECK(0);
	}
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_packets], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_bytes], len);
}
#define EXPECT_DROP(len, id) expect_drop((len), SS_CTR_##id, __LINE__)

static size_t put_eth(const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	struct ss_eth e = { .ethertype = type };
	memcpy(e.dst, dst, 6);
	memcpy(e.src, src, 6);
	return ss_eth_build(frame, sizeof(frame), &e);
}

static size_t put_arp(uint16_t op, uint32_t spa, uint32_t tpa)
{
	struct ss_arp a = { .op = op, .spa = spa, .tpa = tpa };
	memcpy(a.sha, peer_mac, 6);
	put_eth(bcast, peer_mac, SS_ETHERTYPE_ARP);
	return SS_ETH_HDR_LEN + ss_arp_build(frame + SS_ETH_HDR_LEN, 100, &a);
}

/* Ethernet + IPv4 around an L4 payload already at frame + 34. */
static size_t put_ipv4(uint32_t src, uint32_t dst, uint8_t proto, size_t l4_len)
{
	struct ss_ipv4 ip = { .hdr_len = 20, .total_len = (uint16_t)(20 + l4_len),
			      .id = 0x1234, .ttl = 61, .proto = proto, .src = src, .dst = dst };
	put_eth(our_mac, peer_mac, SS_ETHERTYPE_IPV4);
	ss_ipv4_build(frame + 14, 20, &ip);
	return 34 + l4_len;
}

static size_t put_echo(uint8_t type, uint32_t src, const uint8_t *data, size_t n)
{
	struct ss_icmp_echo e = { .type = type, .id = 0xbeef, .seq = 7, .data = data,
				  .data_len = n };
	size_t l4 = ss_icmp_echo_build(frame + 34, sizeof(frame) - 34, &e);
	return put_ipv4(src, OUR_IP, SS_IPPROTO_ICMP, l4);
}

static size_t put_tcp(uint8_t flags, uint32_t seq, uint32_t ack, size_t payload)
{
	static const uint8_t data[64] = "0123456789abcdef";
	struct ss_tcp t = { .sport = 40000, .dport = 80, .seq = seq, .ack = ack,
			    .flags = flags, .window = 1000, .payload = data,
			    .payload_len = payload };
	size_t l4 = ss_tcp_build(frame + 34, sizeof(frame) - 34, &t, PEER_IP, OUR_IP);
	return put_ipv4(PEER_IP, OUR_IP, SS_IPPROTO_TCP, l4);
}

static void test_arp_request_for_us(void)
{
	reset();
	size_t len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	size_t out = ss_proto_input(&ctx, frame, len, sizeof(frame), 0);

	static const uint8_t want[42] = {
		0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x06,  /* eth */
		0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02,                  /* reply */
		0x02, 0, 0, 0, 0, 0x01, 198, 18, 0, 1,                     /* us */
		0x02, 0, 0, 0, 0, 0x02, 198, 18, 0, 2,                     /* them */
	};
	CHECK_EQ_U64(out, 42);
	CHECK_MEM(frame, want, 42);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_arp_request], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_tx_arp_reply], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_arp_cache_insert], 1);
	CHECK_EQ_U64(drops(), 0);
	uint8_t mac[6];
	CHECK(ss_arp_cache_lookup(&cache, PEER_IP, mac, NULL));
	CHECK_MEM(mac, peer_mac, 6);
}

static void test_arp_reply_and_merge(void)
{
	reset();
	/* Someone else's request: not learned (RFC 826 creates only for us). */
	size_t len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OTHER_IP);
	EXPECT_DROP(len, drop_arp_not_for_us);
	uint8_t mac[6];
	CHECK(!ss_arp_cache_lookup(&cache, PEER_IP, mac, NULL));

	/* A reply to us is learned and consumed, nothing sent. */
	len = put_arp(SS_ARP_OP_REPLY, PEER_IP, OUR_IP);
	CHECK_EQ_U64(ss_proto_input(&ctx, frame, len, sizeof(frame), 0), 0);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_arp_reply], 1);
	CHECK(ss_arp_cache_lookup(&cache, PEER_IP, mac, NULL));

	/* Now known: someone else's request refreshes it. */
	ctx.now_ns = 5000;
	len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OTHER_IP);
	ss_proto_input(&ctx, frame, len, sizeof(frame), 0);
	uint64_t when = 0;
	CHECK(ss_arp_cache_lookup(&cache, PEER_IP, mac, &when));
	CHECK_EQ_U64(when, 5000);
	CHECK_EQ_U64(ctr.v[SS_CTR_arp_cache_update], 1);

	/* A thread that is not the writer never touches the cache. */
	reset();
	ctx.arp_writer = false;
	len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	CHECK_EQ_U64(ss_proto_input(&ctx, frame, len, sizeof(frame), 0), 42);
	CHECK(!ss_arp_cache_lookup(&cache, PEER_IP, mac, NULL));
}

static void test_arp_bad(void)
{
	reset();
	size_t len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	EXPECT_DROP(len - 1, drop_arp_truncated);
	reset();
	len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	frame[15] = 6; /* htype 6 (IEEE 802) */
	EXPECT_DROP(len, drop_arp_unsupported);
	reset();
	len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	frame[21] = 3; /* op 3 (RARP request) */
	EXPECT_DROP(len, drop_arp_bad_op);
}

static void test_arp_request_build(void)
{
	reset();
	size_t len = ss_proto_build_arp_request(&ctx, frame, sizeof(frame), PEER_IP);
	static const uint8_t want[42] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,
		0x02, 0, 0, 0, 0, 0x01, 198, 18, 0, 1,
		0, 0, 0, 0, 0, 0, 198, 18, 0, 2,
	};
	CHECK_EQ_U64(len, 42);
	CHECK_MEM(frame, want, 42);
	CHECK_EQ_U64(ss_proto_build_arp_request(&ctx, frame, 41, PEER_IP), 0);
}

static void test_eth_filters(void)
{
	reset();
	EXPECT_DROP(13, drop_eth_truncated);
	reset();
	size_t len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	memcpy(frame, other_mac, 6);
	EXPECT_DROP(len, drop_eth_not_for_us);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	memcpy(frame, bcast, 6); /* IPv4 to the broadcast MAC */
	EXPECT_DROP(len, drop_eth_not_for_us);
	reset();
	put_eth(our_mac, peer_mac, SS_ETHERTYPE_IPV6);
	EXPECT_DROP(60, drop_eth_unsupported_type);
	reset();
	put_eth(our_mac, peer_mac, SS_ETHERTYPE_VLAN);
	EXPECT_DROP(60, drop_eth_unsupported_type);
}

static void test_icmp_echo_reply_exact(void)
{
	uint8_t data[200];
	uint64_t seed = 42;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)check_rand(&seed);

	reset();
	size_t len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, data, sizeof(data));
	/* Ethernet padding after the IP datagram must not be echoed. */
	memset(frame + len, 0xee, 4);
	size_t out = ss_proto_input(&ctx, frame, len + 4, sizeof(frame), 0);

	CHECK_EQ_U64(out, len);
	CHECK_MEM(frame, peer_mac, 6);
	CHECK_MEM(frame + 6, our_mac, 6);
	struct ss_ipv4 ip;
	CHECK_EQ_U64(ss_ipv4_parse(frame + 14, out - 14, 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.src, OUR_IP);
	CHECK_EQ_U64(ip.dst, PEER_IP);
	CHECK_EQ_U64(ip.ttl, 64);
	CHECK_EQ_U64(ip.proto, SS_IPPROTO_ICMP);
	CHECK_EQ_U64(ip.total_len, 20 + 8 + sizeof(data));
	struct ss_icmp_echo e;
	CHECK_EQ_U64(ss_icmp_echo_parse(frame + 34, ip.payload_len, &e), SS_ICMP_OK);
	CHECK_EQ_U64(e.type, SS_ICMP_ECHO_REPLY);
	CHECK_EQ_U64(e.id, 0xbeef);
	CHECK_EQ_U64(e.seq, 7);
	CHECK_EQ_U64(e.data_len, sizeof(data));
	CHECK_MEM(e.data, data, sizeof(data));
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_icmp_echo_request], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_tx_icmp_echo_reply], 1);
	CHECK_EQ_U64(drops(), 0);
}

static void test_icmp_drops(void)
{
	reset();
	size_t len = put_echo(SS_ICMP_ECHO_REPLY, PEER_IP, NULL, 0);
	EXPECT_DROP(len, drop_icmp_unsupported_type);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, (const uint8_t *)"abcd", 4);
	frame[40] ^= 0x01; /* payload bit flip */
	EXPECT_DROP(len, drop_icmp_bad_checksum);
	reset();
	len = put_ipv4(PEER_IP, OUR_IP, SS_IPPROTO_ICMP, 4);
	EXPECT_DROP(len, drop_icmp_truncated);
}

static void test_ipv4_drops(void)
{
	reset();
	size_t len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	EXPECT_DROP(14 + 19, drop_ipv4_truncated);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	frame[14] = 0x65; /* version 6 */
	EXPECT_DROP(len, drop_ipv4_bad_version);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	frame[14] = 0x44; /* IHL 4 */
	EXPECT_DROP(len, drop_ipv4_bad_ihl);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	ss_wr16(frame + 16, (uint16_t)(len - 14 + 1)); /* total length past the frame */
	EXPECT_DROP(len, drop_ipv4_bad_total_len);
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	frame[22] = 1; /* TTL changed, checksum not */
	EXPECT_DROP(len, drop_ipv4_bad_checksum);
	/* The NIC's verdict replaces the software check. */
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	frame[22] = 1;
	CHECK(ss_proto_input(&ctx, frame, len, sizeof(frame), SS_RX_IP_CSUM_GOOD) > 0);

	static const struct { uint32_t src; const char *what; } martians[] = {
		{ 0, "0.0.0.0" }, { 0xffffffffu, "limited broadcast" },
		{ 0xE0000001u, "multicast" }, { 0xF0000001u, "class E" },
		{ 0x7f000001u, "loopback" }, { OUR_IP, "our own address" },
		{ 0xC61200ffu, "subnet broadcast" },
	};
	for (size_t i = 0; i < sizeof(martians) / sizeof(martians[0]); i++) {
		reset();
		len = put_echo(SS_ICMP_ECHO_REQUEST, martians[i].src, NULL, 0);
		fprintf(stderr, "martian source: %s\n", martians[i].what);
		EXPECT_DROP(len, drop_ipv4_bad_src);
	}

	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	struct ss_ipv4 ip = { .hdr_len = 20, .total_len = (uint16_t)(len - 14), .ttl = 64,
			      .proto = SS_IPPROTO_ICMP, .src = PEER_IP, .dst = OTHER_IP };
	ss_ipv4_build(frame + 14, 20, &ip);
	EXPECT_DROP(len, drop_ipv4_not_for_us);

	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	ip = (struct ss_ipv4){ .hdr_len = 20, .total_len = (uint16_t)(len - 14), .ttl = 64,
			       .frag = 0x2000 /* MF */, .proto = SS_IPPROTO_ICMP,
			       .src = PEER_IP, .dst = OUR_IP };
	ss_ipv4_build(frame + 14, 20, &ip);
	EXPECT_DROP(len, drop_ipv4_fragment);

	/* IHL 6 with one NOP-padded option word, checksum made valid. */
	reset();
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, NULL, 0);
	memmove(frame + 38, frame + 34, len - 34);
	memset(frame + 34, 1, 4);
	frame[14] = 0x46;
	ss_wr16(frame + 16, (uint16_t)(len - 14 + 4));
	ss_wr16(frame + 24, 0);
	ss_wr16(frame + 24, ss_csum_ipv4_header(frame + 14, 24));
	EXPECT_DROP(len + 4, drop_ipv4_options);

	reset();
	len = put_ipv4(PEER_IP, OUR_IP, SS_IPPROTO_UDP, 8);
	EXPECT_DROP(len, drop_ipv4_unsupported_proto);
}

static void check_rst(size_t out, uint8_t flags, uint32_t seq, uint32_t ack)
{
	CHECK_EQ_U64(out, 54);
	CHECK_MEM(frame, peer_mac, 6);
	struct ss_ipv4 ip;
	CHECK_EQ_U64(ss_ipv4_parse(frame + 14, out - 14, 0, &ip), SS_IPV4_OK);
	CHECK_EQ_U64(ip.src, OUR_IP);
	CHECK_EQ_U64(ip.dst, PEER_IP);
	struct ss_tcp t;
	CHECK_EQ_U64(ss_tcp_parse(frame + 34, ip.payload_len, &t), SS_TCP_OK);
	CHECK(ss_tcp_csum_ok(OUR_IP, PEER_IP, frame + 34, ip.payload_len));
	CHECK_EQ_U64(t.sport, 80);
	CHECK_EQ_U64(t.dport, 40000);
	CHECK_EQ_U64(t.flags, flags);
	CHECK_EQ_U64(t.seq, seq);
	CHECK_EQ_U64(t.ack, ack);
	CHECK_EQ_U64(t.payload_len, 0);
}

static void test_tcp_closed_port(void)
{
	/* RFC 9293 §3.10.7.1: no ACK -> <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK> */
	reset();
	size_t len = put_tcp(SS_TCP_SYN, 0xfffffffeu, 0, 0);
	size_t out = ss_proto_input(&ctx, frame, len, sizeof(frame), 0);
	check_rst(out, SS_TCP_RST | SS_TCP_ACK, 0, 0xffffffffu);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_tcp], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_drop_tcp_no_flow], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_tx_tcp_rst], 1);

	/* SYN+FIN with 10 bytes: SEG.LEN = 12, wrapping. */
	reset();
	len = put_tcp(SS_TCP_SYN | SS_TCP_FIN, 0xfffffffcu, 0, 10);
	out = ss_proto_input(&ctx, frame, len, sizeof(frame), 0);
	check_rst(out, SS_TCP_RST | SS_TCP_ACK, 0, 8);

	/* ACK set -> <SEQ=SEG.ACK><CTL=RST> */
	reset();
	len = put_tcp(SS_TCP_ACK | SS_TCP_PSH, 1000, 0x12345678u, 16);
	out = ss_proto_input(&ctx, frame, len, sizeof(frame), 0);
	check_rst(out, SS_TCP_RST, 0x12345678u, 0);

	/* Never answer a reset. */
	reset();
	len = put_tcp(SS_TCP_RST, 1, 0, 0);
	CHECK_EQ_U64(ss_proto_input(&ctx, frame, len, sizeof(frame), 0), 0);
	CHECK_EQ_U64(ctr.v[SS_CTR_drop_tcp_no_flow], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_tx_tcp_rst], 0);
}

/* ss_proto_peek_tcp(): a TCP segment's 4-tuple from our side, past IPv4
 * options too; nothing for other frames or short ones (never a read past
 * @len). */
static void test_peek_tcp(void)
{
	struct ss_flow_key k;
	size_t len = put_tcp(SS_TCP_ACK, 1, 2, 16);

	CHECK(ss_proto_peek_tcp(frame, len, &k));
	CHECK_EQ_U64(k.local_ip, OUR_IP);
	CHECK_EQ_U64(k.remote_ip, PEER_IP);
	CHECK_EQ_U64(k.local_port, 80);
	CHECK_EQ_U64(k.remote_port, 40000);
	CHECK(ss_proto_peek_tcp(frame, 14 + 20 + 4, &k));
	CHECK(!ss_proto_peek_tcp(frame, 14 + 20 + 3, &k));
	/* IHL 6: the ports 4 bytes further on. */
	memmove(frame + 38, frame + 34, len - 34);
	frame[14] = 0x46;
	memset(frame + 34, 0, 4);
	CHECK(ss_proto_peek_tcp(frame, len + 4, &k));
	CHECK_EQ_U64(k.local_port, 80);
	CHECK_EQ_U64(k.remote_port, 40000);
	CHECK(!ss_proto_peek_tcp(frame, 14 + 24 + 3, &k));
	frame[14] = 0x44; /* IHL below 5 */
	CHECK(!ss_proto_peek_tcp(frame, len + 4, &k));
	len = put_echo(SS_ICMP_ECHO_REQUEST, PEER_IP, frame + 100, 8);
	CHECK(!ss_proto_peek_tcp(frame, len, &k));
	len = put_arp(SS_ARP_OP_REQUEST, PEER_IP, OUR_IP);
	CHECK(!ss_proto_peek_tcp(frame, len, &k));
	CHECK(!ss_proto_peek_tcp(frame, 0, &k));
}

static void test_tcp_drops(void)
{
	reset();
	size_t len = put_tcp(SS_TCP_SYN, 1, 0, 0);
	frame[34 + 4] ^= 0x80; /* sequence number bit: checksum now wrong */
	EXPECT_DROP(len, drop_tcp_bad_checksum);
	reset();
	len = put_tcp(SS_TCP_SYN, 1, 0, 0);
	frame[34 + 4] ^= 0x80;
	CHECK(ss_proto_input(&ctx, frame, len, sizeof(frame), SS_RX_L4_CSUM_GOOD) > 0);
	reset();
	len = put_ipv4(PEER_IP, OUR_IP, SS_IPPROTO_TCP, 19);
	EXPECT_DROP(len, drop_tcp_truncated);
	reset();
	len = put_tcp(SS_TCP_SYN, 1, 0, 0);
	frame[34 + 12] = 0x40; /* data offset 4 */
	EXPECT_DROP(len, drop_tcp_bad_offset);
	reset();
	len = put_tcp(SS_TCP_SYN, 1, 0, 0);
	frame[34 + 12] = 0x60; /* data offset 6: past the 20-byte segment */
	EXPECT_DROP(len, drop_tcp_bad_offset);
	/* An option with length 0 inside a 24-byte header. */
	reset();
	len = put_tcp(SS_TCP_SYN, 1, 0, 4);
	frame[34 + 12] = 0x60;
	memcpy(frame + 54, "\x02\x00\x00\x00", 4);
	EXPECT_DROP(len, drop_tcp_bad_option);
}

/* TCP frames take the one-pass path, which remembers the last good
 * source: after good frames (from the peer, and from our own address
 * through the loopback queue) every martian source is still dropped, our
 * own address from the NIC included. */
static void test_tcp_martians_after_good(void)
{
	static const uint32_t martians[] = {
		0, 0xffffffffu, 0xE0000001u, 0xF0000001u, 0x7f000001u, OUR_IP, 0xC61200ffu,
	};
	const unsigned lo = SS_RX_LOOPBACK | SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD;

	for (size_t i = 0; i < sizeof(martians) / sizeof(martians[0]); i++) {
		reset();
		size_t len = put_tcp(SS_TCP_ACK, 1, 1, 0);
		CHECK(ss_proto_input(&ctx, frame, len, sizeof(frame), 0) > 0); /* RST */
		len = put_tcp(SS_TCP_ACK, 1, 1, 0);
		ss_wr32(frame + 26, OUR_IP);
		ss_wr32(frame + 30, OUR_IP);
		ss_wr16(frame + 24, 0);
		ss_wr16(frame + 24, ss_csum_ipv4_header(frame + 14, 20));
		CHECK(ss_proto_input(&ctx, frame, len, sizeof(frame), lo) > 0);
		memset(&ctr, 0, sizeof(ctr));
		len = put_tcp(SS_TCP_ACK, 1, 1, 0);
		ss_wr32(frame + 26, martians[i]);
		ss_wr16(frame + 24, 0);
		ss_wr16(frame + 24, ss_csum_ipv4_header(frame + 14, 20));
		EXPECT_DROP(len, drop_ipv4_bad_src);
	}
}

/* A frame from the stack's loopback queue: our own address as the source
 * is fine, it is not counted as received from the NIC, and the reply (a
 * RST for a closed port) goes back to our own address. */
static void test_tcp_loopback(void)
{
	static const uint8_t data[1] = { 0 };
	const unsigned lo = SS_RX_LOOPBACK | SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD;
	reset();
	struct ss_tcp t = { .sport = 40000, .dport = 80, .seq = 5, .flags = SS_TCP_SYN,
			    .window = 1000, .payload = data };
	size_t l4 = ss_tcp_build(frame + 34, sizeof(frame) - 34, &t, OUR_IP, OUR_IP);
	struct ss_ipv4 ip = { .hdr_len = 20, .total_len = (uint16_t)(20 + l4), .ttl = 64,
			      .proto = SS_IPPROTO_TCP, .src = OUR_IP, .dst = OUR_IP };
	put_eth(our_mac, our_mac, SS_ETHERTYPE_IPV4);
	ss_ipv4_build(frame + 14, 20, &ip);
	size_t len = 34 + l4;
	size_t out = ss_proto_input(&ctx, frame, len, sizeof(frame), lo);
	CHECK_EQ_U64(out, 54);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_packets], 0);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_bytes], 0);
	CHECK_EQ_U64(ctr.v[SS_CTR_rx_tcp], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_drop_tcp_no_flow], 1);
	CHECK_EQ_U64(ctr.v[SS_CTR_tx_tcp_rst], 1);
	CHECK_EQ_U64(drops(), 1);
	CHECK(memcmp(frame, our_mac, 6) == 0 && memcmp(frame + 6, our_mac, 6) == 0);
	CHECK_EQ_U64(ss_rd32(frame + 26), OUR_IP);
	CHECK_EQ_U64(ss_rd32(frame + 30), OUR_IP);
	CHECK(ss_tcp_csum_ok(OUR_IP, OUR_IP, frame + 34, 20));

	/* The same frame from the NIC is a martian. */
	reset();
	l4 = ss_tcp_build(frame + 34, sizeof(frame) - 34, &t, OUR_IP, OUR_IP);
	put_eth(our_mac, our_mac, SS_ETHERTYPE_IPV4);
	ss_ipv4_build(frame + 14, 20, &ip);
	EXPECT_DROP(len, drop_ipv4_bad_src);
}

int main(void)
{
	test_arp_request_for_us();
	test_arp_reply_and_merge();
	test_arp_bad();
	test_arp_request_build();
	test_eth_filters();
	test_icmp_echo_reply_exact();
	test_icmp_drops();
	test_ipv4_drops();
	test_tcp_closed_port();
	test_peek_tcp();
	test_tcp_drops();
	test_tcp_loopback();
	test_tcp_martians_after_good();
	ss_arp_cache_free(&cache);
	return check_done("test_proto");
}
