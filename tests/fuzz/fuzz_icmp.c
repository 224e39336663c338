/* libFuzzer harness for ICMP echo parse, rebuild and in-place reply. */
#include "fuzz.h"
#include "wire/bytes.h"
#include "wire/icmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	struct ss_icmp_echo e, back;
	enum ss_icmp_status st = ss_icmp_echo_parse(buf, size, &e);
	uint8_t *out;

	FUZZ_ASSERT(st < SS_ICMP_STATUS_MAX);
	FUZZ_ASSERT(ss_icmp_status_name(st) != NULL);
	if (st != SS_ICMP_OK) {
		free(buf);
		return 0;
	}
	FUZZ_ASSERT(e.type == SS_ICMP_ECHO_REQUEST ||
		    e.type == SS_ICMP_ECHO_REPLY);
	FUZZ_ASSERT(e.code == 0);
	FUZZ_ASSERT(e.data == buf + SS_ICMP_HDR_LEN);
	FUZZ_ASSERT(e.data_len == size - SS_ICMP_HDR_LEN);
	FUZZ_ASSERT(fuzz_inside(buf, size, e.data, e.data_len));

	/* rebuild: same bytes but maybe the checksum's +0/-0, and it parses */
	out = malloc(size);
	FUZZ_ASSERT(out != NULL);
	FUZZ_ASSERT(ss_icmp_echo_build(out, size, &e) == size);
	FUZZ_ASSERT(memcmp(out, buf, 2) == 0);
	FUZZ_ASSERT(memcmp(out + 4, buf + 4, size - 4) == 0);
	FUZZ_ASSERT(ss_icmp_echo_parse(out, size, &back) == SS_ICMP_OK);
	FUZZ_ASSERT(ss_icmp_echo_build(out, size - 1, &e) == 0);

	/* in-place reply: valid reply with the same id, seq and data */
	memcpy(out, buf, size);
	if (e.type == SS_ICMP_ECHO_REQUEST) {
		uint16_t c = ss_icmp_echo_to_reply_inplace(out, size);

		FUZZ_ASSERT(c == ss_rd16(out + 2));
		FUZZ_ASSERT(ss_icmp_echo_parse(out, size, &back) == SS_ICMP_OK);
		FUZZ_ASSERT(back.type == SS_ICMP_ECHO_REPLY);
		FUZZ_ASSERT(back.id == e.id && back.seq == e.seq);
		FUZZ_ASSERT(memcmp(back.data, e.data, e.data_len) == 0);
	} else {
		FUZZ_ASSERT(ss_icmp_echo_to_reply_inplace(out, size) ==
			    ss_rd16(buf + 2));
		FUZZ_ASSERT(memcmp(out, buf, size) == 0);
	}
	free(out);
	free(buf);
	return 0;
}
