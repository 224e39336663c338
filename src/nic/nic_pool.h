/* nic_pool.h - mbuf pools for a port's queues: sized from the rings, laid out for AF_XDP's UMEM. */
#ifndef SS_SERVICE_NIC_POOL_H
#define SS_SERVICE_NIC_POOL_H

#include <stdbool.h>
#include <stdint.h>

struct rte_mempool;

/* DPDK 22.11's AF_XDP PMD puts this many buffers on its fill ring at queue
 * set-up (ETH_AF_XDP_DFLT_NUM_DESCS), whatever the RX ring's size, and
 * then refills one for one in each RX burst: left alone, exactly this many
 * buffers circulate between the fill ring, the kernel and the RX ring.
 * Its completion ring has as many slots, its TX ring as many as the RX
 * ring. */
#define SS_AF_XDP_FILL_BUFFERS 2048u
/* Slots of that fill ring (2 x ETH_AF_XDP_DFLT_NUM_DESCS): the most
 * buffers that can circulate, since all of them are on it whenever the
 * service has drained the RX ring. */
#define SS_AF_XDP_FILL_RING 4096u

/* How an AF_XDP queue's receive side is sized (ss_af_xdp_rx_plan()). */
struct ss_af_xdp_rx_plan {
	unsigned rx_desc;     /* RX ring (the PMD's TX ring too): a power of two >= fill */
	unsigned fill;        /* buffers lent to the kernel: frames it can hold unread */
	unsigned fill_extra;  /* of them, those the service adds to the PMD's own */
};

/*
 * AF_XDP: the kernel drops a frame (xsk_fill_ring_empty) when every buffer
 * circulating is in the RX ring unread, so a backlog of `fill` frames is the
 * most the queue absorbs while the fast path is off the CPU (it shares it
 * with the veth's NAPI thread, which keeps copying frames in).  The plan
 * lends the kernel the whole fill ring (SS_AF_XDP_FILL_RING), the service
 * adding what the PMD does not put there itself, and gives the RX ring
 * room for all of it (else the same frames drop as xsk_rx_ring_full): the
 * larger of @rx_desc and the fill, rounded up to a power of two (the
 * kernel refuses other ring sizes).  Pure.
 */
struct ss_af_xdp_rx_plan ss_af_xdp_rx_plan(unsigned rx_desc);

/*
 * Mbufs per queue: the RX ring twice (a PMD may keep a ring's worth of
 * buffers posted while the ring is full; AF_XDP: the buffers lent to the
 * kernel, at most the RX ring, and the PMD's TX ring, as large as the RX
 * ring), the TX ring, a burst in flight and the per-lcore cache; AF_XDP
 * adds its completion ring (SS_AF_XDP_FILL_BUFFERS slots).  2^n - 1.  Pure.
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

/* TSO frames per queue: each holds up to SS_NIC_TSO_ROOM bytes, so up to
 * 45 MSS-sized segments of 1,448 bytes. */
#define SS_NIC_TSO_FRAMES 127
#define SS_NIC_TSO_ROOM 65535u /* an mbuf's data room is 16 bits */

/*
 * A pool of @n mbufs for TSO segments, SS_NIC_TSO_ROOM bytes of data room
 * each: packed (as above) when the EAL has no hugepages, where an
 * IOVA-contiguous object must fit one 4 KiB page.  NULL and rte_errno on
 * failure.
 */
struct rte_mempool *ss_nic_tso_pool_create(const char *name, unsigned n, int socket);

/* The most TCP payload of one TSO segment in such a frame: behind the
 * headroom, Ethernet, IPv4 and the largest TCP header, and within IPv4's
 * 16-bit total length.  Pure. */
uint32_t ss_nic_tso_max(void);

/*
 * How many of @mp's mbufs lie outside the UMEM the AF_XDP PMD derives
 * from it (its own arithmetic, xdp_umem_configure()): the kernel refuses
 * those.  Must be 0 for a pool the PMD is given.
 */
unsigned ss_nic_umem_outside(struct rte_mempool *mp);

#endif
