/* proto.c - the service's per-frame receive logic on raw bytes, replies built in place. */
#include "stack/proto.h"

#include <string.h>

#include "wire/arp.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/eth.h"
#include "wire/icmp.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define REPLY_TTL 64

/* RFC 1122 §3.2.1.3: sources we never answer (martians). */
static bool ipv4_src_bad(const struct ss_proto_ctx *ctx, uint32_t src, unsigned rx_flags)
{
	uint32_t bcast = ctx->ip | ~ctx->netmask;
	/* Our own address only through the loopback queue, never from the wire. */
	if (src == ctx->ip)
		return !(rx_flags & SS_RX_LOOPBACK);
	return src == 0 || src == 0xffffffffu || (src >> 28) >= 0xe ||
	       (src >> 24) == 127 || (ctx->netmask != ~0u && src == bcast);
}

/* ipv4_src_bad() for the usual path: the last source that passed (never
 * our own address, whose result depends on @rx_flags) is not tested
 * again; the result depends only on ip and netmask, so it is the same. */
static inline bool ipv4_src_bad_cached(struct ss_proto_ctx *ctx, uint32_t src, unsigned rx_flags)
{
	if (src == ctx->src_good)
		return false;
	if (ipv4_src_bad(ctx, src, rx_flags))
		return true;
	if (src != ctx->ip)
		ctx->src_good = src;
	return false;
}

void ss_proto_ctx_init(struct ss_proto_ctx *ctx, const uint8_t mac[6], uint32_t ip,
		       uint8_t prefix_len, struct ss_arp_cache *arp, bool arp_writer,
		       struct ss_counters *ctr)
{
	memset(ctx, 0, sizeof(*ctx));
	memcpy(ctx->mac, mac, 6);
	ctx->ip = ip;
	ctx->netmask = prefix_len >= 32 ? ~0u : ~(~0u >> prefix_len);
	ctx->arp = arp;
	ctx->arp_writer = arp_writer;
	ctx->ctr = ctr;
	/* Any source the test passes will do until a frame brings one (our
	 * address and our broadcast address can block two of these). */
	ctx->src_good = 0x01000001u;
	while (ipv4_src_bad(ctx, ctx->src_good, 0))
		ctx->src_good += 0x01000000u;
}

static size_t drop(struct ss_proto_ctx *ctx, enum ss_counter_id why)
{
	ss_ctr_inc(ctx->ctr, why);
	return 0;
}

/* Rewrites the Ethernet header of @frame to go back where it came from. */
static void eth_turn_around(const struct ss_proto_ctx *ctx, uint8_t *frame)
{
	memcpy(frame, frame + SS_ETH_ALEN, SS_ETH_ALEN);
	memcpy(frame + SS_ETH_ALEN, ctx->mac, SS_ETH_ALEN);
}

/* ---- ARP (RFC 826 "Packet Reception") ---------------------------------- */

static void arp_learn(struct ss_proto_ctx *ctx, uint32_t ip, const uint8_t mac[6],
		      bool create)
{
	if (!ctx->arp_writer || ip == 0)
		return;
	switch (ss_arp_cache_update(ctx->arp, ip, mac, ctx->now_ns, create)) {
	case SS_ARP_CACHE_INSERTED:
		ss_ctr_inc(ctx->ctr, SS_CTR_arp_cache_insert);
		break;
	case SS_ARP_CACHE_UPDATED:
		ss_ctr_inc(ctx->ctr, SS_CTR_arp_cache_update);
		break;
	case SS_ARP_CACHE_EVICTED:
		ss_ctr_inc(ctx->ctr, SS_CTR_arp_cache_insert);
		ss_ctr_inc(ctx->ctr, SS_CTR_arp_cache_evict);
		break;
	case SS_ARP_CACHE_UNCHANGED:
		break;
	}
}

static size_t arp_input(struct ss_proto_ctx *ctx, uint8_t *frame, const uint8_t *body,
			size_t body_len, size_t cap)
{
	static const enum ss_counter_id status_ctr[SS_ARP_STATUS_MAX] = {
		[SS_ARP_TRUNCATED] = SS_CTR_drop_arp_truncated,
		[SS_ARP_UNSUPPORTED] = SS_CTR_drop_arp_unsupported,
		[SS_ARP_BAD_OP] = SS_CTR_drop_arp_bad_op,
	};
	struct ss_arp a;
	enum ss_arp_status st = ss_arp_parse(body, body_len, &a);

	if (st != SS_ARP_OK)
		return drop(ctx, status_ctr[st]);
	/* Merge: refresh the sender if known; only a packet for us creates. */
	bool for_us = a.tpa == ctx->ip;
	arp_learn(ctx, a.spa, a.sha, for_us);
	if (!for_us)
		return drop(ctx, SS_CTR_drop_arp_not_for_us);
	if (a.op == SS_ARP_OP_REPLY) {
		ss_ctr_inc(ctx->ctr, SS_CTR_rx_arp_reply);
		return 0;
	}
	ss_ctr_inc(ctx->ctr, SS_CTR_rx_arp_request);

	struct ss_arp reply = { .op = SS_ARP_OP_REPLY, .spa = ctx->ip, .tpa = a.spa };
	memcpy(reply.sha, ctx->mac, 6);
	memcpy(reply.tha, a.sha, 6);
	eth_turn_around(ctx, frame);
	size_t n = ss_arp_build(frame + SS_ETH_HDR_LEN, cap - SS_ETH_HDR_LEN, &reply);
	if (n == 0)
		return 0;
	ss_ctr_inc(ctx->ctr, SS_CTR_tx_arp_reply);
	return SS_ETH_HDR_LEN + n;
}

size_t ss_proto_build_arp_request(const struct ss_proto_ctx *ctx, uint8_t *buf,
				  size_t cap, uint32_t target_ip)
{
	struct ss_eth eth = { .ethertype = SS_ETHERTYPE_ARP };
	struct ss_arp req = { .op = SS_ARP_OP_REQUEST, .spa = ctx->ip, .tpa = target_ip };

	memset(eth.dst, 0xff, 6);
	memcpy(eth.src, ctx->mac, 6);
	memcpy(req.sha, ctx->mac, 6);
	if (cap < SS_ETH_HDR_LEN + SS_ARP_LEN)
		return 0;
	ss_eth_build(buf, cap, &eth);
	return SS_ETH_HDR_LEN + ss_arp_build(buf + SS_ETH_HDR_LEN, cap - SS_ETH_HDR_LEN, &req);
}

/* ---- IPv4 --------------------------------------------------------------- */

/* Writes an IPv4 header for a reply to @in at @ip (no options). */
static void ipv4_reply_header(uint8_t *ip, const struct ss_ipv4 *in, uint8_t proto,
			      uint16_t total_len)
{
	struct ss_ipv4 out = {
		.hdr_len = SS_IPV4_HDR_MIN,
		.total_len = total_len,
		.ttl = REPLY_TTL,
		.proto = proto,
		.src = in->dst,
		.dst = in->src,
	};
	ss_ipv4_build(ip, SS_IPV4_HDR_MIN, &out);
}

static size_t icmp_input(struct ss_proto_ctx *ctx, uint8_t *frame,
			 const struct ss_ipv4 *ip)
{
	static const enum ss_counter_id status_ctr[SS_ICMP_STATUS_MAX] = {
		[SS_ICMP_TRUNCATED] = SS_CTR_drop_icmp_truncated,
		[SS_ICMP_BAD_CHECKSUM] = SS_CTR_drop_icmp_bad_checksum,
		[SS_ICMP_UNSUPPORTED_TYPE] = SS_CTR_drop_icmp_unsupported_type,
	};
	uint8_t *icmp = frame + SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN;
	struct ss_icmp_echo echo;
	enum ss_icmp_status st = ss_icmp_echo_parse(icmp, ip->payload_len, &echo);

	if (st != SS_ICMP_OK)
		return drop(ctx, status_ctr[st]);
	if (echo.type != SS_ICMP_ECHO_REQUEST)
		return drop(ctx, SS_CTR_drop_icmp_unsupported_type);
	ss_ctr_inc(ctx->ctr, SS_CTR_rx_icmp_echo_request);

	/* RFC 792: swap addresses, type 8 -> 0, same id, seq and data. */
	eth_turn_around(ctx, frame);
	ipv4_reply_header(frame + SS_ETH_HDR_LEN, ip, SS_IPPROTO_ICMP, ip->total_len);
	ss_icmp_echo_to_reply_inplace(icmp, ip->payload_len);
	ss_ctr_inc(ctx->ctr, SS_CTR_tx_icmp_echo_reply);
	return SS_ETH_HDR_LEN + ip->total_len;
}

/*
 * No connection exists for a valid segment: answer with a reset unless it
 * is one (RFC 9293 §3.10.7.1, "If the state is CLOSED").
 */
static size_t tcp_reset(struct ss_proto_ctx *ctx, uint8_t *frame, size_t cap,
			const struct ss_ipv4 *ip, const struct ss_tcp *seg)
{
	struct ss_tcp rst = { .sport = seg->dport, .dport = seg->sport };

	if (seg->flags & SS_TCP_ACK) {
		rst.seq = seg->ack;
		rst.flags = SS_TCP_RST;
	} else {
		uint32_t seg_len = (uint32_t)seg->payload_len +
				   !!(seg->flags & SS_TCP_SYN) + !!(seg->flags & SS_TCP_FIN);
		rst.ack = seg->seq + seg_len;
		rst.flags = SS_TCP_RST | SS_TCP_ACK;
	}
	uint8_t *l3 = frame + SS_ETH_HDR_LEN;
	size_t n = ss_tcp_build(l3 + SS_IPV4_HDR_MIN, cap - SS_ETH_HDR_LEN - SS_IPV4_HDR_MIN,
				&rst, ip->dst, ip->src);
	if (n == 0)
		return 0;
	eth_turn_around(ctx, frame);
	ipv4_reply_header(l3, ip, SS_IPPROTO_TCP, (uint16_t)(SS_IPV4_HDR_MIN + n));
	ss_ctr_inc(ctx->ctr, SS_CTR_tx_tcp_rst);
	return SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + n;
}

static size_t tcp_input(struct ss_proto_ctx *ctx, uint8_t *frame, size_t cap,
			const struct ss_ipv4 *ip, unsigned rx_flags)
{
	static const enum ss_counter_id status_ctr[SS_TCP_STATUS_MAX] = {
		[SS_TCP_TRUNCATED] = SS_CTR_drop_tcp_truncated,
		[SS_TCP_BAD_OFFSET] = SS_CTR_drop_tcp_bad_offset,
		[SS_TCP_BAD_OPTION] = SS_CTR_drop_tcp_bad_option,
		[SS_TCP_BAD_CHECKSUM] = SS_CTR_drop_tcp_bad_checksum,
	};
	const uint8_t *l4 = frame + SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN;
	struct ss_tcp seg;

	/* Header without options or with NOP NOP TS: inline; the rest, and
	 * every malformed header, through the general parser. */
	if (!ss_tcp_parse_usual(l4, ip->payload_len, &seg)) {
		enum ss_tcp_status st = ss_tcp_parse(l4, ip->payload_len, &seg);

		if (st != SS_TCP_OK)
			return drop(ctx, status_ctr[st]);
	}
	if (!(rx_flags & SS_RX_L4_CSUM_GOOD) &&
	    !ss_tcp_csum_ok(ip->src, ip->dst, l4, ip->payload_len))
		return drop(ctx, SS_CTR_drop_tcp_bad_checksum);
	ss_ctr_inc(ctx->ctr, SS_CTR_rx_tcp);
	seg.ip_ecn = ip->tos & 3; /* RFC 3168 §5: the ECN field travels with the segment */
	if (ctx->tcp_input && ctx->tcp_input(ctx->tcp_arg, frame, ip, &seg))
		return 0;

	/* No connection or listener: the port is closed. */
	ss_ctr_inc(ctx->ctr, SS_CTR_drop_tcp_no_flow);
	if (seg.flags & SS_TCP_RST)
		return 0;
	return tcp_reset(ctx, frame, cap, ip, &seg);
}

static size_t ipv4_input(struct ss_proto_ctx *ctx, uint8_t *frame, size_t len,
			 size_t cap, unsigned rx_flags)
{
	static const enum ss_counter_id status_ctr[SS_IPV4_STATUS_MAX] = {
		[SS_IPV4_TRUNCATED] = SS_CTR_drop_ipv4_truncated,
		[SS_IPV4_BAD_VERSION] = SS_CTR_drop_ipv4_bad_version,
		[SS_IPV4_BAD_IHL] = SS_CTR_drop_ipv4_bad_ihl,
		[SS_IPV4_BAD_TOTAL_LEN] = SS_CTR_drop_ipv4_bad_total_len,
		[SS_IPV4_BAD_CHECKSUM] = SS_CTR_drop_ipv4_bad_checksum,
	};
	struct ss_ipv4 ip;
	unsigned flags = (rx_flags & SS_RX_IP_CSUM_GOOD) ? SS_IPV4_PARSE_SKIP_CSUM : 0;
	enum ss_ipv4_status st = ss_ipv4_parse(frame + SS_ETH_HDR_LEN, len - SS_ETH_HDR_LEN,
					       flags, &ip);

	if (st != SS_IPV4_OK)
		return drop(ctx, status_ctr[st]);
	if (ip.dst != ctx->ip)
		return drop(ctx, SS_CTR_drop_ipv4_not_for_us);
	if (ipv4_src_bad(ctx, ip.src, rx_flags))
		return drop(ctx, SS_CTR_drop_ipv4_bad_src);
	/* Exceptions: no exception path to the kernel yet, so counted drops. */
	if (ip.exceptions & SS_IPV4_EXC_FRAGMENT)
		return drop(ctx, SS_CTR_drop_ipv4_fragment);
	if (ip.exceptions & SS_IPV4_EXC_OPTIONS)
		return drop(ctx, SS_CTR_drop_ipv4_options);

	switch (ip.proto) {
	case SS_IPPROTO_ICMP:
		return icmp_input(ctx, frame, &ip);
	case SS_IPPROTO_TCP:
		return tcp_input(ctx, frame, cap, &ip, rx_flags);
	default:
		return drop(ctx, SS_CTR_drop_ipv4_unsupported_proto);
	}
}

/*
 * Nearly every frame: unicast to our MAC, IPv4 without options or
 * fragmentation, TCP, to our address from a good source, header checksum
 * right (or verified by the NIC).  Checked in one pass over the header and
 * @ip filled as ss_ipv4_parse() fills it; anything else (or any check that
 * fails) returns false before a side effect, and the general path below
 * takes the frame, with its drop counters.  Same result, fewer steps: no
 * Ethernet struct, no general IHL/length/exception handling.
 */
static bool ipv4_tcp_usual(struct ss_proto_ctx *ctx, const uint8_t *frame, size_t len,
			   unsigned rx_flags, struct ss_ipv4 *ip)
{
	const uint8_t *h = frame + SS_ETH_HDR_LEN;

	/* A multicast (or broadcast) MAC of our own: the general path. */
	if (len < SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN || (ctx->mac[0] & 1) ||
	    memcmp(frame, ctx->mac, SS_ETH_ALEN) != 0 || ss_rd16(frame + 12) != SS_ETHERTYPE_IPV4 ||
	    h[0] != 0x45 || h[9] != SS_IPPROTO_TCP)
		return false;
	uint16_t total_len = ss_rd16(h + 2), frag = ss_rd16(h + 6);
	uint32_t src = ss_rd32(h + 12), dst = ss_rd32(h + 16);

	if (total_len < SS_IPV4_HDR_MIN || total_len > len - SS_ETH_HDR_LEN ||
	    (frag & (SS_IPV4_FRAG_MF | SS_IPV4_FRAG_OFFSET_MASK)) || dst != ctx->ip ||
	    ipv4_src_bad_cached(ctx, src, rx_flags))
		return false;
	if (!(rx_flags & SS_RX_IP_CSUM_GOOD) && !ss_csum_ipv4_header20_ok(h))
		return false;
	ip->hdr_len = SS_IPV4_HDR_MIN;
	ip->tos = h[1];
	ip->total_len = total_len;
	ip->id = ss_rd16(h + 4);
	ip->frag = frag;
	ip->ttl = h[8];
	ip->proto = SS_IPPROTO_TCP;
	ip->csum = ss_rd16(h + 10);
	ip->src = src;
	ip->dst = dst;
	ip->payload_len = (uint16_t)(total_len - SS_IPV4_HDR_MIN);
	ip->exceptions = 0;
	return true;
}

bool ss_proto_peek_tcp(const uint8_t *frame, size_t len, struct ss_flow_key *k)
{
	const uint8_t *h = frame + SS_ETH_HDR_LEN;
	size_t ihl;

	if (len < SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + 4 || ss_rd16(frame + 12) != SS_ETHERTYPE_IPV4 ||
	    (h[0] >> 4) != 4 || h[9] != SS_IPPROTO_TCP)
		return false;
	ihl = (size_t)(h[0] & 0x0f) * 4;
	if (ihl < SS_IPV4_HDR_MIN || len < SS_ETH_HDR_LEN + ihl + 4)
		return false;
	k->local_ip = ss_rd32(h + 16);
	k->remote_ip = ss_rd32(h + 12);
	k->remote_port = ss_rd16(h + ihl);
	k->local_port = ss_rd16(h + ihl + 2);
	return true;
}

size_t ss_proto_input(struct ss_proto_ctx *ctx, uint8_t *frame, size_t len,
		      size_t cap, unsigned rx_flags)
{
	struct ss_eth eth;

	if (!(rx_flags & SS_RX_LOOPBACK)) {
		ss_ctr_inc(ctx->ctr, SS_CTR_rx_packets);
		ss_ctr_add(ctx->ctr, SS_CTR_rx_bytes, len);
	}
	struct ss_ipv4 ip;
	if (ipv4_tcp_usual(ctx, frame, len, rx_flags, &ip))
		return tcp_input(ctx, frame, cap, &ip, rx_flags);
	if (ss_eth_parse(frame, len, &eth) != SS_ETH_OK)
		return drop(ctx, SS_CTR_drop_eth_truncated);
	if (memcmp(eth.dst, ctx->mac, 6) != 0 && !ss_eth_addr_is_broadcast(eth.dst))
		return drop(ctx, SS_CTR_drop_eth_not_for_us);

	switch (eth.ethertype) {
	case SS_ETHERTYPE_ARP:
		return arp_input(ctx, frame, frame + SS_ETH_HDR_LEN, len - SS_ETH_HDR_LEN, cap);
	case SS_ETHERTYPE_IPV4:
		if (ss_eth_addr_is_broadcast(eth.dst))
			return drop(ctx, SS_CTR_drop_eth_not_for_us);
		return ipv4_input(ctx, frame, len, cap, rx_flags);
	default:
		return drop(ctx, SS_CTR_drop_eth_unsupported_type);
	}
}
