/* Ethernet II frame header parse/build (IEEE 802.3, RFC 894). */
#include "wire/eth.h"

#include <string.h>

#include "wire/bytes.h"

#define SS_ETH_STATUS_NAME_(u, l) #l,
static const char *const eth_status_names[SS_ETH_STATUS_MAX] = {
	SS_ETH_STATUS_LIST(SS_ETH_STATUS_NAME_)
};

const char *ss_eth_status_name(enum ss_eth_status st)
{
	if ((unsigned)st >= SS_ETH_STATUS_MAX)
		return "unknown";
	return eth_status_names[st];
}

enum ss_eth_status ss_eth_parse(const uint8_t *buf, size_t len,
				struct ss_eth *out)
{
	if (len < SS_ETH_HDR_LEN)
		return SS_ETH_TRUNCATED;
	memcpy(out->dst, buf, SS_ETH_ALEN);
	memcpy(out->src, buf + 6, SS_ETH_ALEN);
	out->ethertype = ss_rd16(buf + 12);
	return SS_ETH_OK;
}

size_t ss_eth_build(uint8_t *buf, size_t cap, const struct ss_eth *h)
{
	if (cap < SS_ETH_HDR_LEN)
		return 0;
	memcpy(buf, h->dst, SS_ETH_ALEN);
	memcpy(buf + 6, h->src, SS_ETH_ALEN);
	ss_wr16(buf + 12, h->ethertype);
	return SS_ETH_HDR_LEN;
}

bool ss_eth_addr_is_broadcast(const uint8_t a[SS_ETH_ALEN])
{
	return (a[0] & a[1] & a[2] & a[3] & a[4] & a[5]) == 0xFF;
}

/* IEEE 802 I/G (group) bit: the least significant bit of the first octet. */
bool ss_eth_addr_is_multicast(const uint8_t a[SS_ETH_ALEN])
{
	return (a[0] & 0x01) != 0;
}
