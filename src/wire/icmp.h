/* ICMP echo request/reply parse/build (RFC 792). */
#ifndef SS_WIRE_ICMP_H
#define SS_WIRE_ICMP_H

#include <stddef.h>
#include <stdint.h>

#define SS_ICMP_ECHO_REPLY 0
#define SS_ICMP_ECHO_REQUEST 8
#define SS_ICMP_HDR_LEN 8

struct ss_icmp_echo {
	uint8_t type;
	uint8_t code;
	uint16_t id;         /* host order */
	uint16_t seq;        /* host order */
	const uint8_t *data; /* points into the parsed buffer */
	size_t data_len;
};

/* X(ENUM_SUFFIX, counter_name) */
#define SS_ICMP_STATUS_LIST(X)          \
	X(OK, ok)                       \
	X(TRUNCATED, truncated)         \
	X(BAD_CHECKSUM, bad_checksum)   \
	X(UNSUPPORTED_TYPE, unsupported_type)

#define SS_ICMP_STATUS_ENUM_(u, l) SS_ICMP_##u,
enum ss_icmp_status {
	SS_ICMP_STATUS_LIST(SS_ICMP_STATUS_ENUM_)
	SS_ICMP_STATUS_MAX
};
#undef SS_ICMP_STATUS_ENUM_

const char *ss_icmp_status_name(enum ss_icmp_status st);

/*
 * Parse an ICMP echo message (the IP payload, @len bytes).  Checks, in this
 * order:
 *   SS_ICMP_TRUNCATED         len < 8
 *   SS_ICMP_UNSUPPORTED_TYPE  not (type 0 or 8, code 0)
 *   SS_ICMP_BAD_CHECKSUM      checksum over all @len bytes wrong
 * On SS_ICMP_OK, out->data/data_len is buf[8 .. len).  On any other status
 * *out is unspecified.
 */
enum ss_icmp_status ss_icmp_echo_parse(const uint8_t *buf, size_t len,
				       struct ss_icmp_echo *out);

/*
 * Write header + e->data_len bytes of e->data (may be NULL when data_len is
 * 0; may already sit at buf + 8, the copy is a memmove), computing the
 * checksum.  Returns 8 + data_len, or 0 if @cap is too small.
 */
size_t ss_icmp_echo_build(uint8_t *buf, size_t cap,
			  const struct ss_icmp_echo *e);

/*
 * Turn the echo request at @icmp (@len bytes, already validated by
 * ss_icmp_echo_parse()) into an echo reply in place: type 8 -> 0, checksum
 * updated incrementally (RFC 1624 eqn. 3).  Returns the new checksum (also
 * stored).  A message that is not an echo request is left unchanged and its
 * current checksum returned; with @len < 8 nothing is touched and 0 is
 * returned.
 */
uint16_t ss_icmp_echo_to_reply_inplace(uint8_t *icmp, size_t len);

#endif /* SS_WIRE_ICMP_H */
