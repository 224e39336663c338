/* ARP for Ethernet/IPv4 (RFC 826) parse/build. */
#include "wire/arp.h"

#include <string.h>

#include "wire/bytes.h"

/*
 * RFC 826 packet layout for hardware Ethernet, protocol IPv4:
 *   0 ar$hrd  2 ar$pro  4 ar$hln  5 ar$pln  6 ar$op
 *   8 ar$sha 14 ar$spa 18 ar$tha 24 ar$tpa   (28 bytes)
 */
#define ARP_PTYPE_IPV4 0x0800
#define ARP_HLEN_ETHER 6
#define ARP_PLEN_IPV4 4

#define SS_ARP_STATUS_NAME_(u, l) #l,
static const char *const arp_status_names[SS_ARP_STATUS_MAX] = {
	SS_ARP_STATUS_LIST(SS_ARP_STATUS_NAME_)
};

const char *ss_arp_status_name(enum ss_arp_status st)
{
	if ((unsigned)st >= SS_ARP_STATUS_MAX)
		return "unknown";
	return arp_status_names[st];
}

enum ss_arp_status ss_arp_parse(const uint8_t *buf, size_t len,
				struct ss_arp *out)
{
	uint16_t op;

	if (len < SS_ARP_LEN)
		return SS_ARP_TRUNCATED;
	if (ss_rd16(buf) != SS_ARP_HTYPE_ETHER ||
	    ss_rd16(buf + 2) != ARP_PTYPE_IPV4 ||
	    buf[4] != ARP_HLEN_ETHER || buf[5] != ARP_PLEN_IPV4)
		return SS_ARP_UNSUPPORTED;
	op = ss_rd16(buf + 6);
	if (op != SS_ARP_OP_REQUEST && op != SS_ARP_OP_REPLY)
		return SS_ARP_BAD_OP;

	out->op = op;
	memcpy(out->sha, buf + 8, SS_ETH_ALEN);
	out->spa = ss_rd32(buf + 14);
	memcpy(out->tha, buf + 18, SS_ETH_ALEN);
	out->tpa = ss_rd32(buf + 24);
	return SS_ARP_OK;
}

size_t ss_arp_build(uint8_t *buf, size_t cap, const struct ss_arp *a)
{
	if (cap < SS_ARP_LEN)
		return 0;
	ss_wr16(buf, SS_ARP_HTYPE_ETHER);
	ss_wr16(buf + 2, ARP_PTYPE_IPV4);
	buf[4] = ARP_HLEN_ETHER;
	buf[5] = ARP_PLEN_IPV4;
	ss_wr16(buf + 6, a->op);
	memcpy(buf + 8, a->sha, SS_ETH_ALEN);
	ss_wr32(buf + 14, a->spa);
	memcpy(buf + 18, a->tha, SS_ETH_ALEN);
	ss_wr32(buf + 24, a->tpa);
	return SS_ARP_LEN;
}
