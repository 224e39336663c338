/* ARP for Ethernet/IPv4 (RFC 826) parse/build. */
#ifndef SS_WIRE_ARP_H
#define SS_WIRE_ARP_H

#include <stddef.h>
#include <stdint.h>

#include "wire/eth.h"

#define SS_ARP_LEN 28
#define SS_ARP_OP_REQUEST 1
#define SS_ARP_OP_REPLY 2

#define SS_ARP_HTYPE_ETHER 1

/* All multi-byte fields host order; IPv4 addresses as host-order uint32_t. */
struct ss_arp {
	uint16_t op;
	uint8_t sha[SS_ETH_ALEN];
	uint32_t spa;
	uint8_t tha[SS_ETH_ALEN];
	uint32_t tpa;
};

/* X(ENUM_SUFFIX, counter_name) */
#define SS_ARP_STATUS_LIST(X)       \
	X(OK, ok)                   \
	X(TRUNCATED, truncated)     \
	X(UNSUPPORTED, unsupported) \
	X(BAD_OP, bad_op)

#define SS_ARP_STATUS_ENUM_(u, l) SS_ARP_##u,
enum ss_arp_status {
	SS_ARP_STATUS_LIST(SS_ARP_STATUS_ENUM_)
	SS_ARP_STATUS_MAX
};
#undef SS_ARP_STATUS_ENUM_

const char *ss_arp_status_name(enum ss_arp_status st);

/*
 * Parse an ARP packet (the Ethernet payload).  SS_ARP_TRUNCATED if
 * @len < 28; SS_ARP_UNSUPPORTED unless htype 1, ptype 0x0800, hlen 6,
 * plen 4; SS_ARP_BAD_OP unless op is request or reply.  Bytes past 28
 * (Ethernet padding) are ignored.  @out is only written on SS_ARP_OK.
 */
enum ss_arp_status ss_arp_parse(const uint8_t *buf, size_t len,
				struct ss_arp *out);

/* Write a 28-byte Ethernet/IPv4 ARP packet; returns 28, or 0 if @cap < 28. */
size_t ss_arp_build(uint8_t *buf, size_t cap, const struct ss_arp *a);

#endif /* SS_WIRE_ARP_H */
