/* TCP header and option parse/build (RFC 9293; options RFC 7323, 2018, 6691). */
#include "wire/tcp.h"

#include <string.h>

#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/ipv4.h"

#define SS_TCP_STATUS_NAME_(u, l) #l,
static const char *const tcp_status_names[SS_TCP_STATUS_MAX] = {
	SS_TCP_STATUS_LIST(SS_TCP_STATUS_NAME_)
};

const char *ss_tcp_status_name(enum ss_tcp_status st)
{
	if ((unsigned)st >= SS_TCP_STATUS_MAX)
		return "unknown";
	return tcp_status_names[st];
}

/* ---- options: parse ---------------------------------------------------- */

/* RFC 2018 §3: SACK option length 2 + 8n; at most 4 blocks fit in 40 bytes. */
static bool tcp_sack_len_ok(size_t olen)
{
	size_t body = olen - SS_TCP_OLEN_SACK_BASE;

	return olen >= SS_TCP_OLEN_SACK_BASE + 8 && body % 8 == 0 &&
	       body / 8 <= SS_TCP_MAX_SACK_BLOCKS;
}

/*
 * RFC 9293 §3.1 "Options", §3.2: EOL and NOP are single bytes; every other
 * option is kind, length (counting both), data.  Unknown options are
 * skipped by their length (MUST-6); an illegal length, e.g. zero, is
 * reported, never looped on or read past (MUST-7).
 */
enum ss_tcp_status ss_tcp_opts_parse(const uint8_t *opts, size_t len,
				     struct ss_tcp_opts *out)
{
	size_t i = 0;

	memset(out, 0, sizeof(*out));
	/* The layout of nearly every segment once timestamps are on: NOP,
	 * NOP, TS (RFC 7323 Appendix A; Linux's tcp_parse_aligned_timestamp). */
	if (len == 12 && opts[0] == SS_TCP_OPT_NOP && opts[1] == SS_TCP_OPT_NOP &&
	    opts[2] == SS_TCP_OPT_TS && opts[3] == SS_TCP_OLEN_TS) {
		out->ts_val = ss_rd32(opts + 4);
		out->ts_ecr = ss_rd32(opts + 8);
		out->present = SS_TCP_OPTF_TS;
		return SS_TCP_OK;
	}
	while (i < len) {
		uint8_t kind = opts[i];
		const uint8_t *v;
		size_t olen;

		if (kind == SS_TCP_OPT_EOL)
			break;
		if (kind == SS_TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return SS_TCP_BAD_OPTION; /* length byte missing */
		olen = opts[i + 1];
		if (olen < 2 || olen > len - i)
			return SS_TCP_BAD_OPTION;
		v = opts + i + 2;

		switch (kind) {
		case SS_TCP_OPT_MSS: /* RFC 9293 §3.7.1, RFC 6691 */
			if (olen != SS_TCP_OLEN_MSS)
				return SS_TCP_BAD_OPTION;
			out->mss = ss_rd16(v);
			out->present |= SS_TCP_OPTF_MSS;
			break;
		case SS_TCP_OPT_WSCALE: /* RFC 7323 §2.2, §2.3 */
			if (olen != SS_TCP_OLEN_WSCALE)
				return SS_TCP_BAD_OPTION;
			out->wscale = v[0] > SS_TCP_WSCALE_MAX ?
					      SS_TCP_WSCALE_MAX : v[0];
			out->present |= SS_TCP_OPTF_WSCALE;
			break;
		case SS_TCP_OPT_SACK_PERM: /* RFC 2018 §2 */
			if (olen != SS_TCP_OLEN_SACK_PERM)
				return SS_TCP_BAD_OPTION;
			out->present |= SS_TCP_OPTF_SACK_PERM;
			break;
		case SS_TCP_OPT_TS: /* RFC 7323 §3.2 */
			if (olen != SS_TCP_OLEN_TS)
				return SS_TCP_BAD_OPTION;
			out->ts_val = ss_rd32(v);
			out->ts_ecr = ss_rd32(v + 4);
			out->present |= SS_TCP_OPTF_TS;
			break;
		case SS_TCP_OPT_SACK: /* RFC 2018 §3 */
			if (!tcp_sack_len_ok(olen))
				return SS_TCP_BAD_OPTION;
			out->sack_count = (uint8_t)((olen - 2) / 8);
			for (unsigned b = 0; b < out->sack_count; b++) {
				out->sack[b].left = ss_rd32(v + 8 * b);
				out->sack[b].right = ss_rd32(v + 8 * b + 4);
			}
			out->present |= SS_TCP_OPTF_SACK;
			break;
		default:
			break;
		}
		i += olen;
	}
	return SS_TCP_OK;
}

/* ---- header: parse ----------------------------------------------------- */

/* RFC 9293 §3.1 header format. */
enum ss_tcp_status ss_tcp_parse(const uint8_t *seg, size_t len,
				struct ss_tcp *out)
{
	unsigned doff, hdr_len;

	if (len < SS_TCP_HDR_MIN)
		return SS_TCP_TRUNCATED;
	doff = seg[12] >> 4;
	hdr_len = doff * 4;
	if (hdr_len < SS_TCP_HDR_MIN || hdr_len > len)
		return SS_TCP_BAD_OFFSET;

	out->sport = ss_rd16(seg);
	out->dport = ss_rd16(seg + 2);
	out->seq = ss_rd32(seg + 4);
	out->ack = ss_rd32(seg + 8);
	out->hdr_len = (uint8_t)hdr_len;
	out->flags = seg[13]; /* the reserved bits in seg[12] are ignored */
	out->window = ss_rd16(seg + 14);
	out->csum = ss_rd16(seg + 16);
	out->urg = ss_rd16(seg + 18);
	out->payload = seg + hdr_len;
	out->payload_len = len - hdr_len;
	return ss_tcp_opts_parse(seg + SS_TCP_HDR_MIN,
				 hdr_len - SS_TCP_HDR_MIN, &out->opts);
}

bool ss_tcp_csum_ok(uint32_t src, uint32_t dst, const uint8_t *seg,
		    size_t len)
{
	if (len > 0xFFFF)
		return false;
	return ss_csum_l4_ipv4(src, dst, SS_IPPROTO_TCP, seg, len) == 0;
}

/* ---- options: build ---------------------------------------------------- */

/* Bytes of the word-aligned options before any SACK blocks. */
static size_t tcp_opts_fixed_len(const struct ss_tcp_opts *o)
{
	size_t n = 0;

	if (o->present & SS_TCP_OPTF_MSS)
		n += 4;
	if (o->present & SS_TCP_OPTF_TS)
		n += 12; /* SACK_PERM rides in the TS word's padding */
	else if (o->present & SS_TCP_OPTF_SACK_PERM)
		n += 4;
	if (o->present & SS_TCP_OPTF_WSCALE)
		n += 4;
	return n;
}

/* SACK blocks that fit after @used bytes of other options. */
static unsigned tcp_sack_blocks_fit(const struct ss_tcp_opts *o, size_t used)
{
	unsigned n;

	if (!(o->present & SS_TCP_OPTF_SACK))
		return 0;
	n = o->sack_count;
	if (n > SS_TCP_MAX_SACK_BLOCKS)
		n = SS_TCP_MAX_SACK_BLOCKS;
	while (n > 0 && used + 4 + 8 * n > SS_TCP_OPT_SPACE)
		n--;
	return n;
}

size_t ss_tcp_opts_len_any(const struct ss_tcp_opts *o)
{
	size_t n = tcp_opts_fixed_len(o);
	unsigned blocks = tcp_sack_blocks_fit(o, n);

	return blocks ? n + 4 + 8 * blocks : n;
}

static uint8_t *tcp_put4(uint8_t *p, uint8_t a, uint8_t b, uint8_t c,
			 uint8_t d)
{
	p[0] = a;
	p[1] = b;
	p[2] = c;
	p[3] = d;
	return p + 4;
}

/* Same layout as Linux tcp_options_write(); see tcp.h. */
size_t ss_tcp_opts_build(uint8_t *buf, size_t cap,
			 const struct ss_tcp_opts *o)
{
	size_t fixed, total;
	unsigned blocks;
	uint8_t *p = buf;

	if (o->present == SS_TCP_OPTF_TS) { /* the common case, written at once */
		if (cap < 12)
			return 0;
		tcp_put4(p, SS_TCP_OPT_NOP, SS_TCP_OPT_NOP, SS_TCP_OPT_TS, SS_TCP_OLEN_TS);
		ss_wr32(p + 4, o->ts_val);
		ss_wr32(p + 8, o->ts_ecr);
		return 12;
	}
	fixed = tcp_opts_fixed_len(o);
	blocks = tcp_sack_blocks_fit(o, fixed);
	total = blocks ? fixed + 4 + 8 * blocks : fixed;
	if (cap < total)
		return 0;
	if (o->present & SS_TCP_OPTF_MSS) {
		p = tcp_put4(p, SS_TCP_OPT_MSS, SS_TCP_OLEN_MSS, 0, 0);
		ss_wr16(p - 2, o->mss);
	}
	if (o->present & SS_TCP_OPTF_TS) {
		if (o->present & SS_TCP_OPTF_SACK_PERM)
			p = tcp_put4(p, SS_TCP_OPT_SACK_PERM,
				     SS_TCP_OLEN_SACK_PERM, SS_TCP_OPT_TS,
				     SS_TCP_OLEN_TS);
		else
			p = tcp_put4(p, SS_TCP_OPT_NOP, SS_TCP_OPT_NOP,
				     SS_TCP_OPT_TS, SS_TCP_OLEN_TS);
		ss_wr32(p, o->ts_val);
		ss_wr32(p + 4, o->ts_ecr);
		p += 8;
	} else if (o->present & SS_TCP_OPTF_SACK_PERM) {
		p = tcp_put4(p, SS_TCP_OPT_NOP, SS_TCP_OPT_NOP,
			     SS_TCP_OPT_SACK_PERM, SS_TCP_OLEN_SACK_PERM);
	}
	if (o->present & SS_TCP_OPTF_WSCALE)
		p = tcp_put4(p, SS_TCP_OPT_NOP, SS_TCP_OPT_WSCALE,
			     SS_TCP_OLEN_WSCALE, o->wscale);
	if (blocks) {
		p = tcp_put4(p, SS_TCP_OPT_NOP, SS_TCP_OPT_NOP, SS_TCP_OPT_SACK,
			     (uint8_t)(SS_TCP_OLEN_SACK_BASE + 8 * blocks));
		for (unsigned b = 0; b < blocks; b++) {
			ss_wr32(p, o->sack[b].left);
			ss_wr32(p + 4, o->sack[b].right);
			p += 8;
		}
	}
	return (size_t)(p - buf);
}

/* ---- header: build ----------------------------------------------------- */

size_t ss_tcp_build(uint8_t *buf, size_t cap, const struct ss_tcp *h,
		    uint32_t src_ip, uint32_t dst_ip)
{
	size_t hdr_len = SS_TCP_HDR_MIN + ss_tcp_opts_len(&h->opts);

	if (cap < hdr_len || h->payload_len > cap - hdr_len ||
	    h->payload_len > 0xFFFF - hdr_len)
		return 0;
	/* Payload first: it may already be in @buf, even where the header
	 * goes; memmove copes with the overlap.  Already in place: nothing
	 * to move. */
	if (h->payload_len && h->payload != buf + hdr_len)
		memmove(buf + hdr_len, h->payload, h->payload_len);
	return ss_tcp_build_in_place(buf, cap, h, h->payload_len, src_ip, dst_ip);
}

void ss_tcp_csum_finish(uint8_t *seg, size_t len)
{
	ss_wr16(seg + 16, ss_csum_fold(ss_csum_partial(seg, len, 0)));
}

size_t ss_tcp_hdr_write(uint8_t *buf, const struct ss_tcp *h)
{
	size_t hdr_len = SS_TCP_HDR_MIN + ss_tcp_opts_len(&h->opts);

	ss_wr16(buf, h->sport);
	ss_wr16(buf + 2, h->dport);
	ss_wr32(buf + 4, h->seq);
	ss_wr32(buf + 8, h->ack);
	buf[12] = (uint8_t)(hdr_len / 4 << 4);
	buf[13] = h->flags;
	ss_wr16(buf + 14, h->window);
	ss_wr16(buf + 16, 0);
	ss_wr16(buf + 18, h->urg);
	ss_tcp_opts_build(buf + SS_TCP_HDR_MIN, hdr_len - SS_TCP_HDR_MIN, &h->opts);
	return hdr_len;
}

void ss_tcp_csum_set(uint8_t *seg, size_t len, uint32_t src_ip, uint32_t dst_ip, bool offload)
{
	ss_tcp_csum_set_base(seg, len, ss_tcp_csum_base(src_ip, dst_ip), offload);
}

size_t ss_tcp_build_in_place_csum(uint8_t *buf, size_t cap, const struct ss_tcp *h,
				  size_t payload_len, uint32_t src_ip, uint32_t dst_ip,
				  bool offload)
{
	size_t hdr_len = SS_TCP_HDR_MIN + ss_tcp_opts_len(&h->opts);
	size_t len;

	if (cap < hdr_len || payload_len > cap - hdr_len || payload_len > 0xFFFF - hdr_len)
		return 0;
	len = hdr_len + payload_len;
	ss_tcp_hdr_write(buf, h);
	ss_tcp_csum_set(buf, len, src_ip, dst_ip, offload);
	return len;
}

size_t ss_tcp_build_in_place(uint8_t *buf, size_t cap, const struct ss_tcp *h,
			     size_t payload_len, uint32_t src_ip, uint32_t dst_ip)
{
	return ss_tcp_build_in_place_csum(buf, cap, h, payload_len, src_ip, dst_ip, false);
}
