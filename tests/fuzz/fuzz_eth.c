/* libFuzzer harness for ss_eth_parse() and its rebuild round trip. */
#include "fuzz.h"
#include "wire/eth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = fuzz_dup(data, size);
	uint8_t out[SS_ETH_HDR_LEN];
	struct ss_eth e;
	enum ss_eth_status st = ss_eth_parse(buf, size, &e);

	FUZZ_ASSERT(st < SS_ETH_STATUS_MAX);
	FUZZ_ASSERT(ss_eth_status_name(st) != NULL);
	FUZZ_ASSERT((st == SS_ETH_OK) == (size >= SS_ETH_HDR_LEN));
	if (st == SS_ETH_OK) {
		FUZZ_ASSERT(ss_eth_build(out, sizeof(out), &e) == SS_ETH_HDR_LEN);
		FUZZ_ASSERT(memcmp(out, buf, SS_ETH_HDR_LEN) == 0);
		FUZZ_ASSERT(!ss_eth_addr_is_broadcast(e.dst) ||
			    ss_eth_addr_is_multicast(e.dst));
	}
	free(buf);
	return 0;
}
