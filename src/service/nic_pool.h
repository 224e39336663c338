/* nic_pool.h - mbuf pools for a port's queues: sized from the rings, laid out for AF_XDP's UMEM. */
#ifndef SS_SERVICE_NIC_POOL_H
#define SS_SERVICE_NIC_POOL_H

#include <stdbool.h>

struct rte_mempool;

/* DPDK 22.11's AF_XDP PMD keeps this many buffers on its fill ring
 * (ETH_AF_XDP_DFLT_NUM_DESCS), whatever the RX ring's size; its completion
 * ring has as many slots, and its TX ring as many as the RX ring. */
#define SS_AF_XDP_FILL_BUFFERS 2048u

/*
 * Mbufs per queue: the RX ring twice (a PMD may keep a ring's worth of
 * buffers posted while the ring is full), the TX ring, a burst in flight
 * and the per-lcore cache; AF_XDP adds its fill ring.  2^n - 1.  Pure.
 */
unsigned ss_nic_pool_size(unsigned rx_desc, unsigned tx_desc, bool af_xdp);

/*
 * A pool of @n mbufs of RTE_MBUF_DEFAULT_BUF_SIZE.  @packed (ports that
 * do no DMA: AF_XDP, which needs it, and memif in copy mode): its objects
 * lie back to back in one chunk (see nic_pool.c); otherwise
 * rte_pktmbuf_pool_create()'s (IOVA-contiguous, for DMA: without
 * hugepages one mbuf per 4 KiB page).  NULL and rte_errno on failure.
 */
struct rte_mempool *ss_nic_pool_create(const char *name, unsigned n, int socket, bool packed);

/*
 * How many of @mp's mbufs lie outside the UMEM the AF_XDP PMD derives
 * from it (its own arithmetic, xdp_umem_configure()): the kernel refuses
 * those.  Must be 0 for a pool the PMD is given.
 */
unsigned ss_nic_umem_outside(struct rte_mempool *mp);

#endif
