/* Unit tests for wire/arp.h (RFC 826). */
#include "check.h"
#include "packets.h"
#include "wire/arp.h"

static const uint8_t *const arp_req = pkt_arp_request + 14;

/* Reply from 198.18.0.1 (02:..:01) to the captured request. */
static const uint8_t arp_reply[28] = {
	0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc6, 0x12, 0x00, 0x01,
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc6, 0x12, 0x00, 0x02,
};

static void test_parse(void)
{
	struct ss_arp a;
	uint8_t padded[46] = {0}; /* 60-byte minimum frame: 18 pad bytes */

	CHECK_EQ_U64(ss_arp_parse(arp_req, 28, &a), SS_ARP_OK);
	CHECK_EQ_U64(a.op, SS_ARP_OP_REQUEST);
	CHECK_MEM(a.sha, ((const uint8_t[]){2, 0, 0, 0, 0, 2}), 6);
	CHECK_EQ_U64(a.spa, 0xC6120002);
	CHECK_MEM(a.tha, ((const uint8_t[]){0, 0, 0, 0, 0, 0}), 6);
	CHECK_EQ_U64(a.tpa, 0xC6120001);

	memcpy(padded, arp_req, 28);
	CHECK_EQ_U64(ss_arp_parse(padded, sizeof(padded), &a), SS_ARP_OK);

	CHECK_EQ_U64(ss_arp_parse(arp_reply, 28, &a), SS_ARP_OK);
	CHECK_EQ_U64(a.op, SS_ARP_OP_REPLY);
	CHECK_EQ_U64(a.spa, 0xC6120001);
	CHECK_EQ_U64(a.tpa, 0xC6120002);
}

static void test_truncated(void)
{
	struct ss_arp a;

	for (size_t len = 0; len < SS_ARP_LEN; len++)
		CHECK_EQ_U64(ss_arp_parse(arp_req, len, &a), SS_ARP_TRUNCATED);
}

static enum ss_arp_status parse_patched(size_t off, uint8_t val)
{
	uint8_t b[28];
	struct ss_arp a;

	memcpy(b, arp_req, 28);
	b[off] = val;
	return ss_arp_parse(b, sizeof(b), &a);
}

static void test_unsupported(void)
{
	CHECK_EQ_U64(parse_patched(1, 6), SS_ARP_UNSUPPORTED);   /* htype 6 */
	CHECK_EQ_U64(parse_patched(0, 1), SS_ARP_UNSUPPORTED);   /* htype 257 */
	CHECK_EQ_U64(parse_patched(2, 0x86), SS_ARP_UNSUPPORTED); /* ptype */
	CHECK_EQ_U64(parse_patched(3, 0x01), SS_ARP_UNSUPPORTED);
	CHECK_EQ_U64(parse_patched(4, 8), SS_ARP_UNSUPPORTED);   /* hlen */
	CHECK_EQ_U64(parse_patched(5, 16), SS_ARP_UNSUPPORTED);  /* plen */
}

static void test_bad_op(void)
{
	uint8_t b[28];
	struct ss_arp a;

	CHECK_EQ_U64(parse_patched(7, 0), SS_ARP_BAD_OP);
	CHECK_EQ_U64(parse_patched(7, 3), SS_ARP_BAD_OP); /* RARP request */
	CHECK_EQ_U64(parse_patched(6, 1), SS_ARP_BAD_OP); /* op 0x0101 */
	/* unsupported wins over a bad op */
	memcpy(b, arp_req, 28);
	b[7] = 9;
	b[5] = 16;
	CHECK_EQ_U64(ss_arp_parse(b, 28, &a), SS_ARP_UNSUPPORTED);
}

static void test_build(void)
{
	struct ss_arp a = {
		.op = SS_ARP_OP_REPLY,
		.sha = {2, 0, 0, 0, 0, 1},
		.spa = 0xC6120001,
		.tha = {2, 0, 0, 0, 0, 2},
		.tpa = 0xC6120002,
	};
	struct ss_arp back;
	uint8_t buf[29];

	CHECK_EQ_U64(ss_arp_build(buf + 1, 28, &a), 28);
	CHECK_MEM(buf + 1, arp_reply, 28);
	CHECK_EQ_U64(ss_arp_build(buf, 27, &a), 0);

	CHECK_EQ_U64(ss_arp_parse(arp_req, 28, &back), SS_ARP_OK);
	CHECK_EQ_U64(ss_arp_build(buf, sizeof(buf), &back), 28);
	CHECK_MEM(buf, arp_req, 28);
}

static void test_names(void)
{
	CHECK_STR(ss_arp_status_name(SS_ARP_OK), "ok");
	CHECK_STR(ss_arp_status_name(SS_ARP_TRUNCATED), "truncated");
	CHECK_STR(ss_arp_status_name(SS_ARP_UNSUPPORTED), "unsupported");
	CHECK_STR(ss_arp_status_name(SS_ARP_BAD_OP), "bad_op");
	CHECK_STR(ss_arp_status_name(SS_ARP_STATUS_MAX), "unknown");
	CHECK_EQ_U64(SS_ARP_STATUS_MAX, 4);
}

int main(void)
{
	test_parse();
	test_truncated();
	test_unsupported();
	test_bad_op();
	test_build();
	test_names();
	return check_done("test_arp");
}
