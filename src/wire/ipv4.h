/* IPv4 header parse/build (RFC 791). */
#ifndef SS_WIRE_IPV4_H
#define SS_WIRE_IPV4_H

#include <stddef.h>
#include <stdint.h>

#include "wire/bytes.h"

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

/*
 * ss_ipv4_build() from the fields themselves, for a sender that writes one
 * header per segment (no struct to fill, inlined).  The checksum comes
 * from the ten 16-bit words as values (RFC 1071: their sum, folded and
 * complemented) instead of being read back from @buf: the same result,
 * since the sum includes 0x45xx and is never zero.  @buf needs 20 bytes.
 */
static inline void ss_ipv4_write(uint8_t *buf, uint8_t tos, uint16_t total_len, uint16_t id,
				 uint16_t frag, uint8_t ttl, uint8_t proto, uint32_t src,
				 uint32_t dst)
{
	uint32_t sum = (0x4500u | tos) + total_len + id + frag + ((uint32_t)ttl << 8 | proto) +
		       (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF);

	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	buf[0] = 0x45;
	buf[1] = tos;
	ss_wr16(buf + 2, total_len);
	ss_wr16(buf + 4, id);
	ss_wr16(buf + 6, frag);
	buf[8] = ttl;
	buf[9] = proto;
	ss_wr16(buf + 10, (uint16_t)~sum);
	ss_wr32(buf + 12, src);
	ss_wr32(buf + 16, dst);
}

#endif /* SS_WIRE_IPV4_H */
