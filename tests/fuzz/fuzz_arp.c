/* libFuzzer harness for ss_arp_parse() and its rebuild round trip. */
#include "fuzz.h"
#include "wire/arp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	uint8_t out[SS_ARP_LEN];
	struct ss_arp a;
	enum ss_arp_status st = ss_arp_parse(buf, size, &a);

	FUZZ_ASSERT(st < SS_ARP_STATUS_MAX);
	FUZZ_ASSERT(ss_arp_status_name(st) != NULL);
	if (size < SS_ARP_LEN)
		FUZZ_ASSERT(st == SS_ARP_TRUNCATED);
	if (st == SS_ARP_OK) {
		FUZZ_ASSERT(a.op == SS_ARP_OP_REQUEST || a.op == SS_ARP_OP_REPLY);
		/* everything the parser accepts rebuilds to the same bytes */
		FUZZ_ASSERT(ss_arp_build(out, sizeof(out), &a) == SS_ARP_LEN);
		FUZZ_ASSERT(memcmp(out, buf, SS_ARP_LEN) == 0);
	}
	free(buf);
	return 0;
}
