/* IPv4 header parse/build (RFC 791). */
#include "wire/ipv4.h"

#include "wire/bytes.h"
#include "wire/csum.h"

#define IPV4_VERSION 4
#define IPV4_IHL_MIN 5

#define SS_IPV4_STATUS_NAME_(u, l) #l,
static const char *const ipv4_status_names[SS_IPV4_STATUS_MAX] = {
	SS_IPV4_STATUS_LIST(SS_IPV4_STATUS_NAME_)
};

const char *ss_ipv4_status_name(enum ss_ipv4_status st)
{
	if ((unsigned)st >= SS_IPV4_STATUS_MAX)
		return "unknown";
	return ipv4_status_names[st];
}

const char *ss_ipv4_exception_name(unsigned exc_bit)
{
	switch (exc_bit) {
	case SS_IPV4_EXC_OPTIONS:
		return "options";
	case SS_IPV4_EXC_FRAGMENT:
		return "fragment";
	default:
		return "unknown";
	}
}

/* RFC 791 §3.1 header format; checks documented in ipv4.h. */
enum ss_ipv4_status ss_ipv4_parse(const uint8_t *buf, size_t len,
				  unsigned flags, struct ss_ipv4 *out)
{
	unsigned ihl, hdr_len, total_len;

	if (len < SS_IPV4_HDR_MIN)
		return SS_IPV4_TRUNCATED;
	if (buf[0] >> 4 != IPV4_VERSION)
		return SS_IPV4_BAD_VERSION;
	ihl = buf[0] & 0x0F;
	hdr_len = ihl * 4;
	if (ihl < IPV4_IHL_MIN || hdr_len > len)
		return SS_IPV4_BAD_IHL;
	total_len = ss_rd16(buf + 2);
	if (total_len < hdr_len || total_len > len)
		return SS_IPV4_BAD_TOTAL_LEN;
	/* RFC 791 §3.1 "Header Checksum"; RFC 1071: a correct header sums
	 * to zero with the checksum field included. */
	if (!(flags & SS_IPV4_PARSE_SKIP_CSUM) &&
	    ss_csum_ipv4_header(buf, hdr_len) != 0)
		return SS_IPV4_BAD_CHECKSUM;

	out->hdr_len = (uint8_t)hdr_len;
	out->tos = buf[1];
	out->total_len = (uint16_t)total_len;
	out->id = ss_rd16(buf + 4);
	out->frag = ss_rd16(buf + 6);
	out->ttl = buf[8];
	out->proto = buf[9];
	out->csum = ss_rd16(buf + 10);
	out->src = ss_rd32(buf + 12);
	out->dst = ss_rd32(buf + 16);
	out->payload_len = (uint16_t)(total_len - hdr_len);
	out->exceptions = 0;
	if (ihl > IPV4_IHL_MIN)
		out->exceptions |= SS_IPV4_EXC_OPTIONS;
	if (out->frag & (SS_IPV4_FRAG_MF | SS_IPV4_FRAG_OFFSET_MASK))
		out->exceptions |= SS_IPV4_EXC_FRAGMENT;
	return SS_IPV4_OK;
}

size_t ss_ipv4_build(uint8_t *buf, size_t cap, const struct ss_ipv4 *h)
{
	if (cap < SS_IPV4_HDR_MIN)
		return 0;
	ss_ipv4_write(buf, h->tos, h->total_len, h->id, h->frag, h->ttl, h->proto, h->src, h->dst);
	return SS_IPV4_HDR_MIN;
}
