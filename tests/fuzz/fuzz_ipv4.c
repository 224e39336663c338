/* libFuzzer harness for ss_ipv4_parse() (both flag settings) and rebuild. */
#include "fuzz.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/ipv4.h"

static void check_fields(const uint8_t *buf, size_t len,
			 const struct ss_ipv4 *ip)
{
	uint8_t exc = 0;

	FUZZ_ASSERT(ip->hdr_len >= SS_IPV4_HDR_MIN && ip->hdr_len <= 60);
	FUZZ_ASSERT(ip->hdr_len % 4 == 0);
	FUZZ_ASSERT(ip->hdr_len <= ip->total_len && ip->total_len <= len);
	FUZZ_ASSERT(ip->payload_len == ip->total_len - ip->hdr_len);
	FUZZ_ASSERT(ip->src == ss_rd32(buf + 12) && ip->dst == ss_rd32(buf + 16));
	if (ip->hdr_len > SS_IPV4_HDR_MIN)
		exc |= SS_IPV4_EXC_OPTIONS;
	if (ip->frag & (SS_IPV4_FRAG_MF | SS_IPV4_FRAG_OFFSET_MASK))
		exc |= SS_IPV4_EXC_FRAGMENT;
	FUZZ_ASSERT(ip->exceptions == exc);
}

/* Rebuild an option-less header + payload and parse it back. */
static void check_rebuild(const uint8_t *buf, const struct ss_ipv4 *ip)
{
	uint8_t *out = malloc(ip->total_len);
	struct ss_ipv4 back;

	FUZZ_ASSERT(out != NULL);
	FUZZ_ASSERT(ss_ipv4_build(out, ip->total_len, ip) == SS_IPV4_HDR_MIN);
	memcpy(out + SS_IPV4_HDR_MIN, buf + SS_IPV4_HDR_MIN, ip->payload_len);
	/* same bytes except maybe the checksum (0x0000 vs 0xFFFF, RFC 1071) */
	FUZZ_ASSERT(memcmp(out, buf, 10) == 0);
	FUZZ_ASSERT(memcmp(out + 12, buf + 12, ip->total_len - 12u) == 0);
	FUZZ_ASSERT(ss_csum_ipv4_header(out, SS_IPV4_HDR_MIN) == 0);
	FUZZ_ASSERT(ss_ipv4_parse(out, ip->total_len, 0, &back) == SS_IPV4_OK);
	FUZZ_ASSERT(back.total_len == ip->total_len && back.id == ip->id &&
		    back.frag == ip->frag && back.ttl == ip->ttl &&
		    back.proto == ip->proto && back.tos == ip->tos &&
		    back.exceptions == ip->exceptions);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	struct ss_ipv4 a, b;
	enum ss_ipv4_status sa, sb;

	memset(&a, 0, sizeof(a)); /* padding too, for the memcmp below */
	memset(&b, 0, sizeof(b));
	sa = ss_ipv4_parse(buf, size, 0, &a);
	sb = ss_ipv4_parse(buf, size, SS_IPV4_PARSE_SKIP_CSUM, &b);

	FUZZ_ASSERT(sa < SS_IPV4_STATUS_MAX && sb < SS_IPV4_STATUS_MAX);
	FUZZ_ASSERT(ss_ipv4_status_name(sa) != NULL);
	FUZZ_ASSERT(sb != SS_IPV4_BAD_CHECKSUM);
	/* skipping the checksum only turns bad_checksum into ok */
	FUZZ_ASSERT(sa == sb || (sa == SS_IPV4_BAD_CHECKSUM && sb == SS_IPV4_OK));
	if (sb == SS_IPV4_OK)
		check_fields(buf, size, &b);
	if (sa == SS_IPV4_OK) {
		check_fields(buf, size, &a);
		FUZZ_ASSERT(memcmp(&a, &b, sizeof(a)) == 0);
		FUZZ_ASSERT(ss_csum_ipv4_header(buf, a.hdr_len) == 0);
		if (a.hdr_len == SS_IPV4_HDR_MIN)
			check_rebuild(buf, &a);
	}
	free(buf);
	return 0;
}
