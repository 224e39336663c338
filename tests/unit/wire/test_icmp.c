/* Unit tests for wire/icmp.h (RFC 792 echo, RFC 1624 update). */
#include "check.h"
#include "packets.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/icmp.h"

/* ICMP parts of the captured ping: 8-byte header + 8 data bytes. */
static const uint8_t *const echo_req = pkt_icmp_echo_request + 34;
static const uint8_t *const echo_rep = pkt_icmp_echo_reply + 34;
#define ECHO_LEN 16

static void test_parse(void)
{
	struct ss_icmp_echo e;
	uint8_t odd[1 + ECHO_LEN];

	CHECK_EQ_U64(ss_icmp_echo_parse(echo_req, ECHO_LEN, &e), SS_ICMP_OK);
	CHECK_EQ_U64(e.type, SS_ICMP_ECHO_REQUEST);
	CHECK_EQ_U64(e.code, 0);
	CHECK_EQ_U64(e.id, 0x2353);
	CHECK_EQ_U64(e.seq, 1);
	CHECK(e.data == echo_req + 8);
	CHECK_EQ_U64(e.data_len, 8);

	memcpy(odd + 1, echo_rep, ECHO_LEN);
	CHECK_EQ_U64(ss_icmp_echo_parse(odd + 1, ECHO_LEN, &e), SS_ICMP_OK);
	CHECK_EQ_U64(e.type, SS_ICMP_ECHO_REPLY);
	CHECK(e.data == odd + 9);
	CHECK_MEM(e.data, ((const uint8_t[]){0, 1, 2, 3, 4, 5, 6, 7}), 8);
}

static void test_truncated(void)
{
	struct ss_icmp_echo e;

	for (size_t len = 0; len < SS_ICMP_HDR_LEN; len++)
		CHECK_EQ_U64(ss_icmp_echo_parse(echo_req, len, &e),
			     SS_ICMP_TRUNCATED);
	/* a length cut short (not a header truncation) breaks the checksum */
	CHECK_EQ_U64(ss_icmp_echo_parse(echo_req, ECHO_LEN - 1, &e),
		     SS_ICMP_BAD_CHECKSUM);
}

static void test_bad_checksum(void)
{
	uint8_t b[ECHO_LEN];
	struct ss_icmp_echo e;

	for (size_t i = 2; i < ECHO_LEN; i++) {
		memcpy(b, echo_req, ECHO_LEN);
		b[i] ^= 0x40;
		CHECK_EQ_U64(ss_icmp_echo_parse(b, ECHO_LEN, &e),
			     SS_ICMP_BAD_CHECKSUM);
	}
}

/* type/code patched with the checksum kept correct */
static enum ss_icmp_status parse_type(uint8_t type, uint8_t code, bool fix)
{
	uint8_t b[ECHO_LEN];
	struct ss_icmp_echo e;

	memcpy(b, echo_req, ECHO_LEN);
	b[0] = type;
	b[1] = code;
	if (fix) {
		ss_wr16(b + 2, 0);
		ss_wr16(b + 2, ss_csum_fold(ss_csum_partial(b, ECHO_LEN, 0)));
	}
	return ss_icmp_echo_parse(b, ECHO_LEN, &e);
}

static void test_unsupported(void)
{
	CHECK_EQ_U64(parse_type(3, 3, true), SS_ICMP_UNSUPPORTED_TYPE);
	CHECK_EQ_U64(parse_type(11, 0, true), SS_ICMP_UNSUPPORTED_TYPE);
	CHECK_EQ_U64(parse_type(13, 0, true), SS_ICMP_UNSUPPORTED_TYPE);
	CHECK_EQ_U64(parse_type(8, 1, true), SS_ICMP_UNSUPPORTED_TYPE);
	CHECK_EQ_U64(parse_type(0, 255, true), SS_ICMP_UNSUPPORTED_TYPE);
	/* type is checked before the checksum */
	CHECK_EQ_U64(parse_type(3, 0, false), SS_ICMP_UNSUPPORTED_TYPE);
	CHECK_EQ_U64(parse_type(0, 0, true), SS_ICMP_OK);
	CHECK_EQ_U64(parse_type(0, 0, false), SS_ICMP_BAD_CHECKSUM);
}

static void test_build(void)
{
	static const uint8_t data[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	struct ss_icmp_echo e = {
		.type = SS_ICMP_ECHO_REQUEST,
		.id = 0x2353,
		.seq = 1,
		.data = data,
		.data_len = 8,
	};
	uint8_t buf[1 + ECHO_LEN];

	CHECK_EQ_U64(ss_icmp_echo_build(buf + 1, ECHO_LEN, &e), ECHO_LEN);
	CHECK_MEM(buf + 1, echo_req, ECHO_LEN);
	e.type = SS_ICMP_ECHO_REPLY;
	CHECK_EQ_U64(ss_icmp_echo_build(buf, sizeof(buf), &e), ECHO_LEN);
	CHECK_MEM(buf, echo_rep, ECHO_LEN);

	CHECK_EQ_U64(ss_icmp_echo_build(buf, ECHO_LEN - 1, &e), 0);
	CHECK_EQ_U64(ss_icmp_echo_build(buf, 7, &e), 0);

	/* data already in place */
	memcpy(buf + 8, data, 8);
	e.data = buf + 8;
	CHECK_EQ_U64(ss_icmp_echo_build(buf, ECHO_LEN, &e), ECHO_LEN);
	CHECK_MEM(buf, echo_rep, ECHO_LEN);

	/* no data, NULL pointer */
	e.data = NULL;
	e.data_len = 0;
	CHECK_EQ_U64(ss_icmp_echo_build(buf, 8, &e), 8);
	CHECK_EQ_U64(ss_icmp_echo_parse(buf, 8, &(struct ss_icmp_echo){0}),
		     SS_ICMP_OK);
}

static void test_to_reply(void)
{
	uint8_t b[ECHO_LEN];
	uint8_t z[8] = {SS_ICMP_ECHO_REQUEST, 0, 0xF7, 0xFF, 0, 0, 0, 0};
	struct ss_icmp_echo e;

	memcpy(b, echo_req, ECHO_LEN);
	CHECK_EQ_U64(ss_icmp_echo_to_reply_inplace(b, ECHO_LEN), 0xd09b);
	CHECK_MEM(b, echo_rep, ECHO_LEN); /* identical to Linux's reply */
	/* a reply is left alone */
	CHECK_EQ_U64(ss_icmp_echo_to_reply_inplace(b, ECHO_LEN), 0xd09b);
	CHECK_MEM(b, echo_rep, ECHO_LEN);
	/* too short: untouched */
	memcpy(b, echo_req, ECHO_LEN);
	CHECK_EQ_U64(ss_icmp_echo_to_reply_inplace(b, 7), 0);
	CHECK_MEM(b, echo_req, ECHO_LEN);

	/* all-zero reply (id 0, seq 0, no data): checksum must be 0xFFFF,
	 * not the 0x0000 that eqn. 3 alone gives (RFC 1624 §3) */
	CHECK_EQ_U64(ss_icmp_echo_parse(z, 8, &e), SS_ICMP_OK);
	CHECK_EQ_U64(ss_icmp_echo_to_reply_inplace(z, 8), 0xFFFF);
	CHECK_EQ_U64(ss_icmp_echo_parse(z, 8, &e), SS_ICMP_OK);
	CHECK_EQ_U64(e.type, SS_ICMP_ECHO_REPLY);
}

/* Random requests: in-place reply == freshly built reply, and parses. */
static void test_to_reply_random(void)
{
	uint64_t rng = 792;
	uint8_t data[64], req[8 + 64], rep[8 + 64];
	unsigned bad = 0;

	for (int n = 0; n < 20000; n++) {
		struct ss_icmp_echo e = {
			.type = SS_ICMP_ECHO_REQUEST,
			.id = (uint16_t)check_rand(&rng),
			.seq = (uint16_t)check_rand(&rng),
			.data = data,
			.data_len = check_rand(&rng) % 65,
		};
		size_t len = 8 + e.data_len;
		struct ss_icmp_echo p;

		if (n % 5 == 0)
			e.id = e.seq = 0;
		for (size_t i = 0; i < e.data_len; i++)
			data[i] = n % 5 == 0 ? 0 : (uint8_t)check_rand(&rng);
		ss_icmp_echo_build(req, sizeof(req), &e);
		e.type = SS_ICMP_ECHO_REPLY;
		ss_icmp_echo_build(rep, sizeof(rep), &e);
		ss_icmp_echo_to_reply_inplace(req, len);
		if (memcmp(req, rep, len) != 0 ||
		    ss_icmp_echo_parse(req, len, &p) != SS_ICMP_OK)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

static void test_names(void)
{
	CHECK_STR(ss_icmp_status_name(SS_ICMP_OK), "ok");
	CHECK_STR(ss_icmp_status_name(SS_ICMP_TRUNCATED), "truncated");
	CHECK_STR(ss_icmp_status_name(SS_ICMP_BAD_CHECKSUM), "bad_checksum");
	CHECK_STR(ss_icmp_status_name(SS_ICMP_UNSUPPORTED_TYPE),
		  "unsupported_type");
	CHECK_STR(ss_icmp_status_name(SS_ICMP_STATUS_MAX), "unknown");
	CHECK_EQ_U64(SS_ICMP_STATUS_MAX, 4);
}

int main(void)
{
	test_parse();
	test_truncated();
	test_bad_checksum();
	test_unsupported();
	test_build();
	test_to_reply();
	test_to_reply_random();
	test_names();
	return check_done("test_icmp");
}
