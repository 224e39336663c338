/* Ethernet II frame header parse/build (IEEE 802.3, RFC 894). */
#ifndef SS_WIRE_ETH_H
#define SS_WIRE_ETH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SS_ETH_ALEN 6
#define SS_ETH_HDR_LEN 14

#define SS_ETHERTYPE_IPV4 0x0800
#define SS_ETHERTYPE_ARP  0x0806
#define SS_ETHERTYPE_VLAN 0x8100
#define SS_ETHERTYPE_IPV6 0x86DD

/* VLAN tags are not stripped: 0x8100 is reported as the ethertype. */
struct ss_eth {
	uint8_t dst[SS_ETH_ALEN];
	uint8_t src[SS_ETH_ALEN];
	uint16_t ethertype; /* host order */
};

/* X(ENUM_SUFFIX, counter_name) */
#define SS_ETH_STATUS_LIST(X) \
	X(OK, ok)             \
	X(TRUNCATED, truncated)

#define SS_ETH_STATUS_ENUM_(u, l) SS_ETH_##u,
enum ss_eth_status {
	SS_ETH_STATUS_LIST(SS_ETH_STATUS_ENUM_)
	SS_ETH_STATUS_MAX
};
#undef SS_ETH_STATUS_ENUM_

/* Short snake_case name ("ok", "truncated"); "unknown" if out of range. */
const char *ss_eth_status_name(enum ss_eth_status st);

/*
 * Parse the 14-byte header at @buf.  Reads nothing past @len.  The payload
 * starts at buf + SS_ETH_HDR_LEN.  @out is only written on SS_ETH_OK.
 */
enum ss_eth_status ss_eth_parse(const uint8_t *buf, size_t len,
				struct ss_eth *out);

/* Write the 14-byte header; returns SS_ETH_HDR_LEN, or 0 if @cap < 14. */
size_t ss_eth_build(uint8_t *buf, size_t cap, const struct ss_eth *h);

/* ff:ff:ff:ff:ff:ff */
bool ss_eth_addr_is_broadcast(const uint8_t a[SS_ETH_ALEN]);
/* Group bit (LSB of the first octet) set; broadcast is also multicast. */
bool ss_eth_addr_is_multicast(const uint8_t a[SS_ETH_ALEN]);

#endif /* SS_WIRE_ETH_H */
