/* libFuzzer harness: a whole Ethernet frame walked as the service does. */
#include "fuzz.h"
#include "wire/arp.h"
#include "wire/eth.h"
#include "wire/icmp.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

/* Echo request -> in-place reply on a private exact-size copy. */
static void frame_icmp(const uint8_t *l4, size_t len)
{
	struct ss_icmp_echo e;
	uint8_t *copy;

	if (ss_icmp_echo_parse(l4, len, &e) != SS_ICMP_OK)
		return;
	FUZZ_ASSERT(fuzz_inside(l4, len, e.data, e.data_len));
	if (e.type != SS_ICMP_ECHO_REQUEST)
		return;
	copy = fuzz_dup(l4, len);
	ss_icmp_echo_to_reply_inplace(copy, len);
	FUZZ_ASSERT(ss_icmp_echo_parse(copy, len, &e) == SS_ICMP_OK);
	free(copy);
}

static void frame_tcp(const struct ss_ipv4 *ip, const uint8_t *l4,
		      size_t len)
{
	struct ss_tcp t;

	if (ss_tcp_parse(l4, len, &t) != SS_TCP_OK)
		return;
	FUZZ_ASSERT(fuzz_inside(l4, len, t.payload, t.payload_len));
	FUZZ_ASSERT(t.hdr_len + t.payload_len == len);
	(void)ss_tcp_csum_ok(ip->src, ip->dst, l4, len);
}

static void frame_ipv4(const uint8_t *pkt, size_t len)
{
	struct ss_ipv4 ip;
	const uint8_t *l4;

	if (ss_ipv4_parse(pkt, len, 0, &ip) != SS_IPV4_OK)
		return;
	FUZZ_ASSERT(ip.hdr_len + (size_t)ip.payload_len <= len);
	if (ip.exceptions)
		return; /* options / fragments: exception path */
	l4 = pkt + ip.hdr_len;
	FUZZ_ASSERT(fuzz_inside(pkt, len, l4, ip.payload_len));
	if (ip.proto == SS_IPPROTO_ICMP)
		frame_icmp(l4, ip.payload_len);
	else if (ip.proto == SS_IPPROTO_TCP)
		frame_tcp(&ip, l4, ip.payload_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	struct ss_eth eth;
	struct ss_arp arp;

	if (ss_eth_parse(buf, size, &eth) != SS_ETH_OK)
		goto out;
	switch (eth.ethertype) {
	case SS_ETHERTYPE_ARP:
		(void)ss_arp_parse(buf + SS_ETH_HDR_LEN,
				   size - SS_ETH_HDR_LEN, &arp);
		break;
	case SS_ETHERTYPE_IPV4:
		frame_ipv4(buf + SS_ETH_HDR_LEN, size - SS_ETH_HDR_LEN);
		break;
	default:
		break; /* VLAN, IPv6, ...: unsupported */
	}
out:
	free(buf);
	return 0;
}
