/* TCP header and option parse/build (RFC 9293; options RFC 7323, 2018, 6691). */
#ifndef SS_WIRE_TCP_H
#define SS_WIRE_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/ipv4.h"

#define SS_TCP_HDR_MIN 20
#define SS_TCP_HDR_MAX 60
#define SS_TCP_OPT_SPACE (SS_TCP_HDR_MAX - SS_TCP_HDR_MIN) /* 40 */

/* Control bits (RFC 9293 §3.1, RFC 3168 §6.1) */
#define SS_TCP_FIN 0x01
#define SS_TCP_SYN 0x02
#define SS_TCP_RST 0x04
#define SS_TCP_PSH 0x08
#define SS_TCP_ACK 0x10
#define SS_TCP_URG 0x20
#define SS_TCP_ECE 0x40
#define SS_TCP_CWR 0x80

/* Option kinds */
#define SS_TCP_OPT_EOL 0
#define SS_TCP_OPT_NOP 1
#define SS_TCP_OPT_MSS 2
#define SS_TCP_OPT_WSCALE 3
#define SS_TCP_OPT_SACK_PERM 4
#define SS_TCP_OPT_SACK 5
#define SS_TCP_OPT_TS 8

/* Option lengths (kind + length bytes included) */
#define SS_TCP_OLEN_MSS 4
#define SS_TCP_OLEN_WSCALE 3
#define SS_TCP_OLEN_SACK_PERM 2
#define SS_TCP_OLEN_TS 10
#define SS_TCP_OLEN_SACK_BASE 2 /* + 8 per block */

#define SS_TCP_MAX_SACK_BLOCKS 4
#define SS_TCP_WSCALE_MAX 14

struct ss_tcp_sack_block {
	uint32_t left, right;
};

struct ss_tcp_opts {
	uint8_t present; /* SS_TCP_OPTF_* bits */
	uint8_t wscale;  /* as received; values > 14 are clamped to 14 per
			  * RFC 7323 §2.3 */
	uint16_t mss;
	uint32_t ts_val, ts_ecr;
	uint8_t sack_count;
	struct ss_tcp_sack_block sack[SS_TCP_MAX_SACK_BLOCKS];
};

#define SS_TCP_OPTF_MSS 0x01
#define SS_TCP_OPTF_WSCALE 0x02
#define SS_TCP_OPTF_SACK_PERM 0x04
#define SS_TCP_OPTF_TS 0x08
#define SS_TCP_OPTF_SACK 0x10

/* All multi-byte fields host order. */
struct ss_tcp {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t hdr_len;        /* bytes, data offset * 4 */
	uint8_t flags;          /* SS_TCP_FIN .. SS_TCP_CWR */
	uint16_t window;        /* unscaled, as on the wire */
	uint16_t csum;          /* as received */
	uint16_t urg;
	const uint8_t *payload; /* points into the parsed buffer */
	size_t payload_len;
	struct ss_tcp_opts opts;
	uint8_t ip_ecn;         /* not TCP: the ECN field of the carrying IP header
				 * (RFC 3168 §5, SS_IP_ECN_*); ss_tcp_parse() sets 0 and
				 * the caller fills it in, ss_tcp_build() ignores it */
};

#define SS_IP_ECN_NOT_ECT 0
#define SS_IP_ECN_ECT1 1
#define SS_IP_ECN_ECT0 2
#define SS_IP_ECN_CE 3

/* X(ENUM_SUFFIX, counter_name) */
#define SS_TCP_STATUS_LIST(X)        \
	X(OK, ok)                    \
	X(TRUNCATED, truncated)      \
	X(BAD_OFFSET, bad_offset)    \
	X(BAD_OPTION, bad_option)    \
	X(BAD_CHECKSUM, bad_checksum)

#define SS_TCP_STATUS_ENUM_(u, l) SS_TCP_##u,
enum ss_tcp_status {
	SS_TCP_STATUS_LIST(SS_TCP_STATUS_ENUM_)
	SS_TCP_STATUS_MAX
};
#undef SS_TCP_STATUS_ENUM_

const char *ss_tcp_status_name(enum ss_tcp_status st);

/*
 * Parse the TCP header and options of the segment at @seg; @len is the IP
 * payload length.  Does NOT verify the checksum (see ss_tcp_csum_ok()).
 *   SS_TCP_TRUNCATED   len < 20
 *   SS_TCP_BAD_OFFSET  data offset < 5 or data offset * 4 > len
 *   SS_TCP_BAD_OPTION  see ss_tcp_opts_parse()
 * On SS_TCP_OK, out->payload/payload_len is seg[hdr_len .. len).  On any
 * other status *out is unspecified.
 */
enum ss_tcp_status ss_tcp_parse(const uint8_t *seg, size_t len,
				struct ss_tcp *out);

/*
 * ss_tcp_parse_usual - ss_tcp_parse() for nearly every segment, inline:
 * data offset 5 (no options) or 8 with NOP NOP TS (RFC 7323 Appendix A,
 * what Linux sends once timestamps are on).  Then *out is filled exactly
 * as ss_tcp_parse() fills it and true is returned; for any other segment
 * (other options, a bad offset, too short) false, with *out unspecified:
 * call ss_tcp_parse(), which reports the status.
 */
static inline bool ss_tcp_parse_usual(const uint8_t *seg, size_t len, struct ss_tcp *out)
{
	unsigned doff;

	if (len < SS_TCP_HDR_MIN)
		return false;
	doff = seg[12] >> 4;
	memset(&out->opts, 0, sizeof(out->opts));
	if (doff == 8) {
		if (len < 32 || ss_rd32(seg + 20) != (uint32_t)(SS_TCP_OPT_NOP << 24 |
								SS_TCP_OPT_NOP << 16 |
								SS_TCP_OPT_TS << 8 | SS_TCP_OLEN_TS))
			return false;
		out->opts.present = SS_TCP_OPTF_TS;
		out->opts.ts_val = ss_rd32(seg + 24);
		out->opts.ts_ecr = ss_rd32(seg + 28);
	} else if (doff != 5) {
		return false;
	}
	out->sport = ss_rd16(seg);
	out->dport = ss_rd16(seg + 2);
	out->seq = ss_rd32(seg + 4);
	out->ack = ss_rd32(seg + 8);
	out->hdr_len = (uint8_t)(doff * 4);
	out->flags = seg[13];
	out->window = ss_rd16(seg + 14);
	out->csum = ss_rd16(seg + 16);
	out->urg = ss_rd16(seg + 18);
	out->payload = seg + doff * 4;
	out->payload_len = len - doff * 4;
	return true;
}

/*
 * Parse the option area @opts of @len bytes (RFC 9293 §3.1, §3.2).  *out is reset
 * first.  EOL ends parsing; NOP is skipped; unknown options with a valid
 * length are skipped; a repeated option: the last one wins.  Returns
 * SS_TCP_BAD_OPTION for a missing length byte, a length < 2, a length
 * running past the area, or a known option with the wrong length (MSS 4,
 * WSCALE 3, SACK_PERM 2, TS 10, SACK 2+8n with 1 <= n <= 4).  A window
 * scale above 14 is clamped to 14 (RFC 7323 §2.3).
 */
enum ss_tcp_status ss_tcp_opts_parse(const uint8_t *opts, size_t len,
				     struct ss_tcp_opts *out);

/*
 * True if the TCP checksum (with the IPv4 pseudo-header for host-order
 * @src/@dst) over the @len-byte segment is correct.  False for
 * @len > 65535.
 */
bool ss_tcp_csum_ok(uint32_t src, uint32_t dst, const uint8_t *seg,
		    size_t len);

/*
 * Bytes ss_tcp_opts_build() will emit for @o (a multiple of 4, <= 40).
 * Inline for timestamps alone (nearly every segment), else
 * ss_tcp_opts_len_any().
 */
size_t ss_tcp_opts_len_any(const struct ss_tcp_opts *o);

static inline size_t ss_tcp_opts_len(const struct ss_tcp_opts *o)
{
	return o->present == SS_TCP_OPTF_TS ? 12 : ss_tcp_opts_len_any(o);
}

/*
 * Emit the options present in @o in Linux order, every option 32-bit
 * aligned with NOP padding as Linux does:
 *   MSS                              02 04 mm mm
 *   SACK_PERM + TS                   04 02 08 0a <val> <ecr>
 *   TS alone                         01 01 08 0a <val> <ecr>
 *   SACK_PERM alone                  01 01 04 02
 *   WSCALE                           01 03 03 ws
 *   SACK blocks                      01 01 05 len <blocks>
 * (a Linux SYN: MSS, SACK_PERM+TS, WSCALE = 20 bytes).  SACK blocks past
 * o->sack_count, past 4, or that would not fit in the 40-byte option space
 * are left out (the first ones are kept: RFC 2018 §4 puts the most recent
 * block first; with TS at most 3 fit).  o->wscale is emitted as given.
 * Returns bytes written (a multiple of 4, may be 0 if nothing is present),
 * or 0 if @cap < ss_tcp_opts_len(o).
 */
size_t ss_tcp_opts_build(uint8_t *buf, size_t cap,
			 const struct ss_tcp_opts *o);

/*
 * Write header + options (from h->opts) + payload and compute the checksum
 * with the pseudo-header for host-order @src_ip/@dst_ip.  The data offset is
 * computed (h->hdr_len and h->csum are ignored).  h->payload may be NULL
 * when payload_len is 0, and may already sit at its final place in @buf (the
 * copy is a memmove).  Returns the segment length, or 0 if @cap is too small
 * or the segment would exceed 65535 bytes.
 */
size_t ss_tcp_build(uint8_t *buf, size_t cap, const struct ss_tcp *h,
		    uint32_t src_ip, uint32_t dst_ip);

/*
 * As ss_tcp_build(), for @payload_len bytes of payload already in place at
 * @buf + the header length (20 + ss_tcp_opts_len(&h->opts)): h->payload and
 * h->payload_len are not read, nothing is copied.  Returns the segment
 * length, or 0 if @cap is too small or the segment would exceed 65535 bytes.
 */
size_t ss_tcp_build_in_place(uint8_t *buf, size_t cap, const struct ss_tcp *h,
			     size_t payload_len, uint32_t src_ip, uint32_t dst_ip);

/*
 * ss_tcp_build_in_place() with @offload true: for a port that computes the
 * TCP checksum (TX checksum offload), the checksum field holds the
 * pseudo-header sum for host-order @src_ip/@dst_ip, folded and not
 * complemented, as DPDK's rte_ipv4_phdr_cksum() gives it; the NIC (or
 * ss_tcp_csum_finish()) adds the segment and stores the complement.  With
 * @offload false, exactly ss_tcp_build_in_place().
 */
size_t ss_tcp_build_in_place_csum(uint8_t *buf, size_t cap, const struct ss_tcp *h,
				  size_t payload_len, uint32_t src_ip, uint32_t dst_ip,
				  bool offload);

/*
 * The header of @h (20 bytes, then the options from h->opts as
 * ss_tcp_opts_build() writes them) at @buf, checksum field 0: the parts
 * ss_tcp_build_in_place_csum() writes before the checksum, for a caller
 * that sets it with ss_tcp_csum_set().  @buf must hold 20 +
 * ss_tcp_opts_len(&h->opts) bytes.  Returns that length.
 */
size_t ss_tcp_hdr_write(uint8_t *buf, const struct ss_tcp *h);

/*
 * The usual header written at once: 20 bytes (urgent pointer 0, checksum
 * field 0), then with @ts the timestamps alone, NOP NOP TS <@ts_val>
 * <@ts_ecr>, as ss_tcp_hdr_write() writes an ss_tcp with those fields and
 * no other option.  Returns the header length, 20 or 32.
 */
static inline size_t ss_tcp_write_usual(uint8_t *buf, uint16_t sport, uint16_t dport,
					uint32_t seq, uint32_t ack, uint8_t flags,
					uint16_t window, bool ts, uint32_t ts_val,
					uint32_t ts_ecr)
{
	size_t len = ts ? SS_TCP_HDR_MIN + 12 : SS_TCP_HDR_MIN;

	ss_wr32(buf, (uint32_t)sport << 16 | dport);
	ss_wr32(buf + 4, seq);
	ss_wr32(buf + 8, ack);
	ss_wr32(buf + 12, (uint32_t)(len / 4 << 4) << 24 | (uint32_t)flags << 16 | window);
	ss_wr32(buf + 16, 0);
	if (ts) {
		ss_wr32(buf + 20, (uint32_t)SS_TCP_OPT_NOP << 24 | (uint32_t)SS_TCP_OPT_NOP << 16 |
					  SS_TCP_OPT_TS << 8 | SS_TCP_OLEN_TS);
		ss_wr32(buf + 24, ts_val);
		ss_wr32(buf + 28, ts_ecr);
	}
	return len;
}

/*
 * The checksum field of the @len-byte segment at @seg, written with its
 * checksum field 0: the checksum with the pseudo-header for host-order
 * @src_ip/@dst_ip, or with @offload the pseudo-header sum for the port
 * (see ss_tcp_build_in_place_csum()).
 */
void ss_tcp_csum_set(uint8_t *seg, size_t len, uint32_t src_ip, uint32_t dst_ip, bool offload);

/*
 * The pseudo-header's address and protocol words for host-order
 * @src_ip/@dst_ip (RFC 9293 §3.1), summed and not folded (below 2^19): a
 * connection's, computed once, for ss_tcp_csum_set_base().
 */
static inline uint32_t ss_tcp_csum_base(uint32_t src_ip, uint32_t dst_ip)
{
	return (src_ip >> 16) + (src_ip & 0xFFFF) + (dst_ip >> 16) + (dst_ip & 0xFFFF) +
	       SS_IPPROTO_TCP;
}

/*
 * ss_tcp_csum_set() from @base = ss_tcp_csum_base(src_ip, dst_ip): the same
 * bytes, inline, with the addresses' words not summed again (the
 * per-segment path).
 */
static inline void ss_tcp_csum_set_base(uint8_t *seg, size_t len, uint32_t base, bool offload)
{
	uint32_t sum = base + (uint32_t)len;

	if (!offload)
		sum = ss_csum_partial(seg, len, sum);
	sum = (sum & 0xFFFF) + (sum >> 16);
	sum = (sum & 0xFFFF) + (sum >> 16);
	/* offload: the pseudo-header sum, folded, not complemented */
	ss_wr16(seg + 16, (uint16_t)(offload ? sum : ~sum));
}

/*
 * What the NIC does for a segment built with ss_tcp_build_in_place_csum(offload):
 * the checksum over the @len bytes at @seg (its checksum field holding the
 * pseudo-header sum), complemented and stored.  The result is the
 * segment ss_tcp_build_in_place() builds, byte for byte.
 */
void ss_tcp_csum_finish(uint8_t *seg, size_t len);

#endif /* SS_WIRE_TCP_H */
