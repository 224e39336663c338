/* ICMP echo request/reply parse/build (RFC 792). */
#include "wire/icmp.h"

#include <string.h>

#include "wire/bytes.h"
#include "wire/csum.h"

#define SS_ICMP_STATUS_NAME_(u, l) #l,
static const char *const icmp_status_names[SS_ICMP_STATUS_MAX] = {
	SS_ICMP_STATUS_LIST(SS_ICMP_STATUS_NAME_)
};

const char *ss_icmp_status_name(enum ss_icmp_status st)
{
	if ((unsigned)st >= SS_ICMP_STATUS_MAX)
		return "unknown";
	return icmp_status_names[st];
}

/*
 * RFC 792 "Echo or Echo Reply Message": type, code 0, checksum over the
 * whole ICMP message, identifier, sequence number, data.
 */
enum ss_icmp_status ss_icmp_echo_parse(const uint8_t *buf, size_t len,
				       struct ss_icmp_echo *out)
{
	if (len < SS_ICMP_HDR_LEN)
		return SS_ICMP_TRUNCATED;
	if ((buf[0] != SS_ICMP_ECHO_REQUEST && buf[0] != SS_ICMP_ECHO_REPLY) ||
	    buf[1] != 0)
		return SS_ICMP_UNSUPPORTED_TYPE;
	if (ss_csum_fold(ss_csum_partial(buf, len, 0)) != 0)
		return SS_ICMP_BAD_CHECKSUM;

	out->type = buf[0];
	out->code = buf[1];
	out->id = ss_rd16(buf + 4);
	out->seq = ss_rd16(buf + 6);
	out->data = buf + SS_ICMP_HDR_LEN;
	out->data_len = len - SS_ICMP_HDR_LEN;
	return SS_ICMP_OK;
}

size_t ss_icmp_echo_build(uint8_t *buf, size_t cap,
			  const struct ss_icmp_echo *e)
{
	size_t len;

	if (cap < SS_ICMP_HDR_LEN || e->data_len > cap - SS_ICMP_HDR_LEN)
		return 0;
	len = SS_ICMP_HDR_LEN + e->data_len;
	if (e->data_len)
		memmove(buf + SS_ICMP_HDR_LEN, e->data, e->data_len);
	buf[0] = e->type;
	buf[1] = e->code;
	ss_wr16(buf + 2, 0);
	ss_wr16(buf + 4, e->id);
	ss_wr16(buf + 6, e->seq);
	ss_wr16(buf + 2, ss_csum_fold(ss_csum_partial(buf, len, 0)));
	return len;
}

uint16_t ss_icmp_echo_to_reply_inplace(uint8_t *icmp, size_t len)
{
	uint16_t csum, old_word;

	if (len < SS_ICMP_HDR_LEN)
		return 0;
	csum = ss_rd16(icmp + 2);
	if (icmp[0] != SS_ICMP_ECHO_REQUEST)
		return csum;

	old_word = ss_rd16(icmp);
	icmp[0] = SS_ICMP_ECHO_REPLY;
	csum = ss_csum_update16(csum, old_word, ss_rd16(icmp));
	/* RFC 1624 §3: eqn. 3 yields 0x0000 both for data summing to -0 (then
	 * correct) and for all-zero data (then 0xFFFF is right, e.g. id 0,
	 * seq 0, no data).  Rare (1 in 65536): settle it by recomputing. */
	if (csum == 0) {
		ss_wr16(icmp + 2, 0);
		csum = ss_csum_fold(ss_csum_partial(icmp, len, 0));
	}
	ss_wr16(icmp + 2, csum);
	return csum;
}
