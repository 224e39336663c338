/* fuzz_proto.c - libFuzzer: arbitrary frames through the service's receive logic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack/proto.h"

/*
 * The first input byte picks the NIC checksum verdict flags and whether
 * the frame comes from the TCP stack's loopback queue; the rest is the
 * frame, copied into a buffer of exactly its length plus the headroom a
 * reply may use, so ASan sees any access past what a NIC would hand us.
 * Invariants: a reply is never longer than the buffer, and every frame
 * from the NIC is counted once in rx_packets (a looped-back one not).
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ss_arp_cache cache;
	static struct ss_counters ctr;
	static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	struct ss_proto_ctx ctx;

	if (size < 1)
		return 0;
	if (!cache.slots && ss_arp_cache_init(&cache, 64) != 0)
		abort();
	unsigned flags = data[0] & (SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD | SS_RX_LOOPBACK);
	size_t len = size - 1;
	/* A reply (RST: 54 bytes) may be longer than a short request frame. */
	size_t cap = len < 64 ? 64 : len;
	uint8_t *frame = malloc(cap);
	if (!frame)
		return 0;
	memcpy(frame, data + 1, len);

	ss_proto_ctx_init(&ctx, mac, 0xC6120001u, 24, &cache, true, &ctr);
	uint64_t before = ctr.v[SS_CTR_rx_packets];
	size_t out = ss_proto_input(&ctx, frame, len, cap, flags);
	/* Frames from the NIC are counted once; the loopback queue's are not. */
	if (out > cap || ctr.v[SS_CTR_rx_packets] != before + !(flags & SS_RX_LOOPBACK))
		abort();
	free(frame);
	return 0;
}
