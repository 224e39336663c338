/* memif_ring.c - memif's wake-up protocol on the shared rings' headers (see memif_ring.h). */
#include "nic/memif_ring.h"

void ss_memif_rx_arm(volatile struct ss_memif_ring_hdr *ring)
{
	ring->arms = ring->arms + 1;
	ring->flags = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void ss_memif_rx_disarm(volatile struct ss_memif_ring_hdr *ring)
{
	ring->flags = SS_MEMIF_RING_MASK_INT;
}

struct ss_memif_tx_mark ss_memif_tx_mark(const volatile struct ss_memif_ring_hdr *ring)
{
	struct ss_memif_tx_mark m;
	m.arms = ring->arms;
	m.flags = ring->flags;
	return m;
}

enum ss_memif_after_tx ss_memif_tx_check(const volatile struct ss_memif_ring_hdr *ring,
					 struct ss_memif_tx_mark before)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint16_t flags = ring->flags;
	uint32_t arms = ring->arms;
	return ss_memif_after_tx(before.arms, before.flags, arms, flags);
}
