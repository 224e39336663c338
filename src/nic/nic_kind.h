/* nic_kind.h - what kind of port the service runs on, how it waits, memif devargs: pure helpers. */
#ifndef SS_SERVICE_NIC_KIND_H
#define SS_SERVICE_NIC_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The port's kind, from its DPDK driver name. */
enum ss_nic_kind {
	SS_NIC_KIND_AF_XDP,     /* net_af_xdp: a kernel interface through an XDP socket */
	SS_NIC_KIND_AF_PACKET,  /* net_af_packet */
	SS_NIC_KIND_MEMIF,      /* net_memif: shared-memory rings to a peer process */
	SS_NIC_KIND_OTHER,      /* a NIC (PCI) or any other PMD */
};

enum ss_nic_kind ss_nic_kind_of(const char *driver);
const char *ss_nic_kind_name(enum ss_nic_kind k);

/* How a fast-path thread sleeps on an RX queue when it has no work. */
enum ss_nic_wait_mode {
	SS_NIC_WAIT_SOCKET,  /* poll() the PMD's kernel socket (AF_XDP, AF_PACKET) */
	SS_NIC_WAIT_RX_INTR, /* the port's RX interrupt fd (rte_eth_dev_rx_intr_*) */
	SS_NIC_WAIT_MEMIF,   /* memif: the RX ring's eventfd, rung by the sending peer */
	SS_NIC_WAIT_TIMED,   /* no wake-up source: short timed sleeps */
};

const char *ss_nic_wait_mode_name(enum ss_nic_wait_mode m);

/* The devargs of a memif vdev that matter to the service (--vdev=net_memifN,...). */
struct ss_memif_args {
	bool server;            /* role=server (the default is client) */
	bool abstract;          /* socket-abstract (DPDK 22.11's default: yes) */
	bool zero_copy;         /* zero-copy=yes */
	char socket[108];       /* socket=PATH, or DPDK's default /run/memif.sock */
	unsigned id;            /* id=N */
};

/*
 * Parses the devargs of one --vdev value; returns false if it is not a
 * memif vdev (name net_memif...) or an argument is malformed.  Pure.
 */
bool ss_memif_args_parse(const char *vdev, struct ss_memif_args *out);

/*
 * Frames a TX burst did not take: moves the @n - @sent left at @q[sent..]
 * to the front, in order, and returns how many are left (n - sent).  Pure.
 */
unsigned ss_txq_keep(void **q, unsigned n, unsigned sent);

/*
 * memif, after a TX burst that sent frames (ss_memif_tx_check() in
 * memif_ring.h): what the peer's RX ring header says, read after a full
 * fence (@arms, then @flags read first), against what it said before the
 * burst (@pre_arms, then @pre_flags).  MASK_INT set now: the peer polls,
 * nobody rings.  Clear before and now within the same arming: the flag
 * stayed clear through the burst, so the PMD, which rings whenever it sees
 * it clear, did.  Otherwise the peer armed during the burst: ring it.
 * Pure.
 */
#define SS_MEMIF_RING_MASK_INT 1u
enum ss_memif_after_tx {
	SS_MEMIF_PEER_POLLING,
	SS_MEMIF_PMD_RANG,
	SS_MEMIF_RING_PEER,
};
enum ss_memif_after_tx ss_memif_after_tx(uint32_t pre_arms, uint16_t pre_flags, uint32_t arms,
					 uint16_t flags);

#endif
