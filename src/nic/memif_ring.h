/* memif_ring.h - memif's wake-up protocol on the shared rings' headers: arm, disarm, ring the peer (no DPDK). */
#ifndef SS_NIC_MEMIF_RING_H
#define SS_NIC_MEMIF_RING_H

#include <stdint.h>

#include "nic/nic_kind.h"

/*
 * The head of a memif ring in the shared memory, as every implementation
 * of the protocol lays it out (DPDK, VPP, libmemif): a cookie, the flags
 * the ring's receiver owns, the head; the tail is on the next cache line.
 * MASK_INT (SS_MEMIF_RING_MASK_INT) set: the receiver polls and wants no
 * interrupt; clear: the sender rings the queue's eventfd after sending.
 * `arms` sits in the padding before the tail, which the protocol leaves
 * unused: a Slipstream receiver counts there each time it clears MASK_INT
 * (ss_memif_rx_arm()).
 */
struct ss_memif_ring_hdr {
	uint32_t cookie;
	uint16_t flags;
	uint16_t head;
	uint8_t pad[24];
	uint32_t arms;
};

/*
 * The receiver, before it sleeps: counts an arming, then clears MASK_INT
 * so that the peer rings after sending, then a full fence (the caller
 * polls its RX ring once more after this: frames the peer sent before it
 * saw the flag clear raise nothing).  The arm count comes first, for the
 * sender's ss_memif_tx_check().
 */
void ss_memif_rx_arm(volatile struct ss_memif_ring_hdr *ring);

/* The receiver, polling again: no rings wanted (MASK_INT set). */
void ss_memif_rx_disarm(volatile struct ss_memif_ring_hdr *ring);

/* What the sender read of the peer's RX ring before a TX burst. */
struct ss_memif_tx_mark {
	uint32_t arms;
	uint16_t flags;
};

/* The sender, before a TX burst: the arm count, then the flags. */
struct ss_memif_tx_mark ss_memif_tx_mark(const volatile struct ss_memif_ring_hdr *ring);

/*
 * The sender, after a TX burst that sent frames: a full fence, then the
 * flags and the arm count (the receiver writes them in the other order),
 * judged against @before by ss_memif_after_tx() (nic_kind.h).  The fence
 * pairs with the receiver's in ss_memif_rx_arm(): either the receiver sees
 * the frames in its last poll, or the sender sees the flag clear here.
 */
enum ss_memif_after_tx ss_memif_tx_check(const volatile struct ss_memif_ring_hdr *ring,
					 struct ss_memif_tx_mark before);

#endif
