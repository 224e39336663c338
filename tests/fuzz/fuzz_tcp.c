/* libFuzzer harness for TCP parse, option parse, checksum and rebuild. */
#include "fuzz.h"
#include "wire/bytes.h"
#include "wire/tcp.h"

/* Input: 4-byte source IP, 4-byte destination IP, then the segment. */
#define ADDRS 8

static void check_opts(const struct ss_tcp_opts *o)
{
	FUZZ_ASSERT((o->present & ~0x1F) == 0);
	FUZZ_ASSERT(o->wscale <= SS_TCP_WSCALE_MAX);
	FUZZ_ASSERT(o->sack_count <= SS_TCP_MAX_SACK_BLOCKS);
	FUZZ_ASSERT((o->sack_count > 0) == !!(o->present & SS_TCP_OPTF_SACK));
	FUZZ_ASSERT(ss_tcp_opts_len(o) % 4 == 0);
	FUZZ_ASSERT(ss_tcp_opts_len(o) <= SS_TCP_OPT_SPACE);
}

/* Build from the parsed fields, parse again, compare. */
static void check_rebuild(const struct ss_tcp *t, uint32_t src, uint32_t dst)
{
	size_t cap = SS_TCP_HDR_MAX + t->payload_len;
	uint8_t *out = malloc(cap);
	struct ss_tcp b;
	size_t len;

	FUZZ_ASSERT(out != NULL);
	len = ss_tcp_build(out, cap, t, src, dst);
	if (SS_TCP_HDR_MIN + ss_tcp_opts_len(&t->opts) + t->payload_len >
	    0xFFFF) {
		FUZZ_ASSERT(len == 0); /* beyond what the checksum covers */
		free(out);
		return;
	}
	FUZZ_ASSERT(len == SS_TCP_HDR_MIN + ss_tcp_opts_len(&t->opts) +
				   t->payload_len);
	FUZZ_ASSERT(ss_tcp_csum_ok(src, dst, out, len));
	FUZZ_ASSERT(ss_tcp_parse(out, len, &b) == SS_TCP_OK);
	FUZZ_ASSERT(b.sport == t->sport && b.dport == t->dport &&
		    b.seq == t->seq && b.ack == t->ack &&
		    b.flags == t->flags && b.window == t->window &&
		    b.urg == t->urg && b.payload_len == t->payload_len);
	FUZZ_ASSERT(t->payload_len == 0 ||
		    memcmp(b.payload, t->payload, t->payload_len) == 0);
	FUZZ_ASSERT(b.hdr_len == len - t->payload_len);
	/* options: the same, except that SACK blocks may be cut to fit the
	 * word-aligned layout (never all of them here, see tcp.h) */
	FUZZ_ASSERT(b.opts.present == t->opts.present);
	if (t->opts.present & SS_TCP_OPTF_MSS)
		FUZZ_ASSERT(b.opts.mss == t->opts.mss);
	if (t->opts.present & SS_TCP_OPTF_WSCALE)
		FUZZ_ASSERT(b.opts.wscale == t->opts.wscale);
	if (t->opts.present & SS_TCP_OPTF_TS)
		FUZZ_ASSERT(b.opts.ts_val == t->opts.ts_val &&
			    b.opts.ts_ecr == t->opts.ts_ecr);
	FUZZ_ASSERT(b.opts.sack_count <= t->opts.sack_count);
	FUZZ_ASSERT(memcmp(b.opts.sack, t->opts.sack,
			   b.opts.sack_count * sizeof(b.opts.sack[0])) == 0);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t src = 0, dst = 0;
	uint8_t *buf;
	size_t len;
	struct ss_tcp t;
	struct ss_tcp_opts o;
	enum ss_tcp_status st;

	if (size >= ADDRS) {
		src = ss_rd32(data);
		dst = ss_rd32(data + 4);
		data += ADDRS;
		size -= ADDRS;
	}
	buf = fuzz_dup(data, size);
	len = size;

	/* the whole input as an option area too */
	st = ss_tcp_opts_parse(buf, len, &o);
	FUZZ_ASSERT(st == SS_TCP_OK || st == SS_TCP_BAD_OPTION);
	if (st == SS_TCP_OK)
		check_opts(&o);

	(void)ss_tcp_csum_ok(src, dst, buf, len);

	st = ss_tcp_parse(buf, len, &t);
	FUZZ_ASSERT(st < SS_TCP_STATUS_MAX && st != SS_TCP_BAD_CHECKSUM);
	FUZZ_ASSERT(ss_tcp_status_name(st) != NULL);
	if (st == SS_TCP_OK) {
		FUZZ_ASSERT(t.hdr_len >= SS_TCP_HDR_MIN &&
			    t.hdr_len <= SS_TCP_HDR_MAX && t.hdr_len % 4 == 0);
		FUZZ_ASSERT(t.payload == buf + t.hdr_len);
		FUZZ_ASSERT(t.payload_len == len - t.hdr_len);
		FUZZ_ASSERT(fuzz_inside(buf, len, t.payload, t.payload_len));
		check_opts(&t.opts);
		check_rebuild(&t, src, dst);
	}
	free(buf);
	return 0;
}
