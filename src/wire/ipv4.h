/* IPv4 header parse/build (RFC 791). */
#ifndef SS_WIRE_IPV4_H
#define SS_WIRE_IPV4_H

#include <stddef.h>
#include <stdint.h>

#define SS_IPV4_HDR_MIN 20

#define SS_IPPROTO_ICMP 1
#define SS_IPPROTO_TCP 6
#define SS_IPPROTO_UDP 17

/* Flags / fragment-offset field (RFC 791 §3.1), host order. */
#define SS_IPV4_FRAG_DF 0x4000
#define SS_IPV4_FRAG_MF 0x2000
#define SS_IPV4_FRAG_OFFSET_MASK 0x1FFF

/* All multi-byte fields host order; 198.18.0.1 == 0xC6120001. */
struct ss_ipv4 {
	uint8_t hdr_len;      /* bytes, IHL*4 */
	uint8_t tos;
	uint16_t total_len;
	uint16_t id;
	uint16_t frag;        /* flags + fragment offset as on the wire */
	uint8_t ttl;
	uint8_t proto;
	uint16_t csum;        /* as received */
	uint32_t src, dst;
	uint16_t payload_len; /* total_len - hdr_len */
	uint8_t exceptions;   /* SS_IPV4_EXC_* bits: parsed fine, but needs
			       * the exception path */
};

#define SS_IPV4_EXC_OPTIONS  0x01 /* IHL > 5 */
#define SS_IPV4_EXC_FRAGMENT 0x02 /* MF set or fragment offset != 0 */

/* X(ENUM_SUFFIX, counter_name) */
#define SS_IPV4_STATUS_LIST(X)          \
	X(OK, ok)                       \
	X(TRUNCATED, truncated)         \
	X(BAD_VERSION, bad_version)     \
	X(BAD_IHL, bad_ihl)             \
	X(BAD_TOTAL_LEN, bad_total_len) \
	X(BAD_CHECKSUM, bad_checksum)

#define SS_IPV4_STATUS_ENUM_(u, l) SS_IPV4_##u,
enum ss_ipv4_status {
	SS_IPV4_STATUS_LIST(SS_IPV4_STATUS_ENUM_)
	SS_IPV4_STATUS_MAX
};
#undef SS_IPV4_STATUS_ENUM_

const char *ss_ipv4_status_name(enum ss_ipv4_status st);

/* ss_ipv4_parse() flags */
#define SS_IPV4_PARSE_SKIP_CSUM 0x1 /* the NIC already verified the header
				     * checksum */

/*
 * Parse and validate the IPv4 header at @buf (the Ethernet payload, @len
 * bytes).  Checks, in this order:
 *   SS_IPV4_TRUNCATED      len < 20
 *   SS_IPV4_BAD_VERSION    version != 4
 *   SS_IPV4_BAD_IHL        IHL < 5 or IHL*4 > len
 *   SS_IPV4_BAD_TOTAL_LEN  total_len < IHL*4 or total_len > len
 *   SS_IPV4_BAD_CHECKSUM   header checksum wrong (skipped with
 *                          SS_IPV4_PARSE_SKIP_CSUM)
 * Bytes past total_len (Ethernet padding) are ignored: the payload is
 * buf[hdr_len .. total_len).  On SS_IPV4_OK, out->exceptions tells whether
 * the packet carries options or is a fragment.  On any other status *out is
 * unspecified.
 */
enum ss_ipv4_status ss_ipv4_parse(const uint8_t *buf, size_t len,
				  unsigned flags, struct ss_ipv4 *out);

/* "options", "fragment" for a single SS_IPV4_EXC_* bit, else "unknown". */
const char *ss_ipv4_exception_name(unsigned exc_bit);

/*
 * Write a 20-byte header (version 4, IHL 5, no options) from @h and compute
 * its checksum.  h->hdr_len, h->csum, h->payload_len and h->exceptions are
 * ignored; total_len is taken from h->total_len as is.  Returns 20, or 0 if
 * @cap < 20.
 */
size_t ss_ipv4_build(uint8_t *buf, size_t cap, const struct ss_ipv4 *h);

#endif /* SS_WIRE_IPV4_H */
