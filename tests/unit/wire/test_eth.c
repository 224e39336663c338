/* Unit tests for wire/eth.h. */
#include "check.h"
#include "packets.h"
#include "wire/eth.h"

static const uint8_t mac_a[6] = {0xca, 0x98, 0x90, 0x77, 0x8d, 0x46};
static const uint8_t mac_b[6] = {0xce, 0xa0, 0x00, 0x0f, 0x02, 0xbb};

static void test_parse(void)
{
	struct ss_eth e;
	uint8_t odd[1 + sizeof(pkt_tcp_syn)];

	CHECK_EQ_U64(ss_eth_parse(pkt_arp_request, sizeof(pkt_arp_request), &e),
		     SS_ETH_OK);
	CHECK(ss_eth_addr_is_broadcast(e.dst));
	CHECK_MEM(e.src, ((const uint8_t[]){2, 0, 0, 0, 0, 2}), 6);
	CHECK_EQ_U64(e.ethertype, SS_ETHERTYPE_ARP);

	/* unaligned buffer */
	memcpy(odd + 1, pkt_tcp_syn, sizeof(pkt_tcp_syn));
	CHECK_EQ_U64(ss_eth_parse(odd + 1, sizeof(pkt_tcp_syn), &e), SS_ETH_OK);
	CHECK_MEM(e.dst, mac_a, 6);
	CHECK_MEM(e.src, mac_b, 6);
	CHECK_EQ_U64(e.ethertype, SS_ETHERTYPE_IPV4);

	/* exactly a header, no payload, is fine */
	CHECK_EQ_U64(ss_eth_parse(pkt_tcp_syn, 14, &e), SS_ETH_OK);
}

static void test_truncated(void)
{
	struct ss_eth e;

	for (size_t len = 0; len < SS_ETH_HDR_LEN; len++) {
		memset(&e, 0xA5, sizeof(e));
		CHECK_EQ_U64(ss_eth_parse(pkt_tcp_syn, len, &e),
			     SS_ETH_TRUNCATED);
		CHECK_EQ_U64(e.ethertype, 0xA5A5); /* untouched on error */
	}
}

static void test_vlan_not_stripped(void)
{
	static const uint8_t f[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				      0x81, 0x00, 0x00, 0x64, 0x08, 0x00};
	struct ss_eth e;

	CHECK_EQ_U64(ss_eth_parse(f, sizeof(f), &e), SS_ETH_OK);
	CHECK_EQ_U64(e.ethertype, SS_ETHERTYPE_VLAN);
}

static void test_build(void)
{
	struct ss_eth e = {.ethertype = SS_ETHERTYPE_IPV4};
	uint8_t buf[15];

	memcpy(e.dst, mac_a, 6);
	memcpy(e.src, mac_b, 6);
	CHECK_EQ_U64(ss_eth_build(buf + 1, 14, &e), 14);
	CHECK_MEM(buf + 1, pkt_tcp_syn, 14);
	CHECK_EQ_U64(ss_eth_build(buf, 13, &e), 0);
	CHECK_EQ_U64(ss_eth_build(buf, 0, &e), 0);

	e.ethertype = SS_ETHERTYPE_IPV6;
	CHECK_EQ_U64(ss_eth_build(buf, sizeof(buf), &e), 14);
	CHECK_MEM(buf + 12, ((const uint8_t[]){0x86, 0xdd}), 2);
}

static void test_addr_class(void)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t almost[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
	static const uint8_t mcast4[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
	static const uint8_t mcast6[6] = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};
	static const uint8_t local[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

	CHECK(ss_eth_addr_is_broadcast(bcast));
	CHECK(ss_eth_addr_is_multicast(bcast));
	CHECK(!ss_eth_addr_is_broadcast(almost));
	CHECK(ss_eth_addr_is_multicast(almost));
	CHECK(ss_eth_addr_is_multicast(mcast4));
	CHECK(!ss_eth_addr_is_broadcast(mcast4));
	CHECK(ss_eth_addr_is_multicast(mcast6));
	CHECK(!ss_eth_addr_is_multicast(local));
	CHECK(!ss_eth_addr_is_multicast(mac_a));
	CHECK(!ss_eth_addr_is_broadcast(mac_a));
}

static void test_names(void)
{
	CHECK_STR(ss_eth_status_name(SS_ETH_OK), "ok");
	CHECK_STR(ss_eth_status_name(SS_ETH_TRUNCATED), "truncated");
	CHECK_STR(ss_eth_status_name(SS_ETH_STATUS_MAX), "unknown");
	CHECK_EQ_U64(SS_ETH_STATUS_MAX, 2);
}

int main(void)
{
	test_parse();
	test_truncated();
	test_vlan_not_stripped();
	test_build();
	test_addr_class();
	test_names();
	return check_done("test_eth");
}
