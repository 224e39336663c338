/* nic.h - the NIC layer: one DPDK port set up from its port configuration, capabilities detected. */
#ifndef SS_NIC_NIC_H
#define SS_NIC_NIC_H

#include <stdbool.h>
#include <stdint.h>

#include "nic/memif_ring.h"
#include "nic/nic_kind.h"

struct rte_mempool;

#define SS_NIC_MAX_QUEUES 64

/* What the port can do, as it reports it (rte_eth_dev_info). */
struct ss_nic_caps {
	uint16_t max_rx_queues;
	uint16_t max_tx_queues;
	bool rss;
	uint16_t reta_size;
	bool rx_ip_csum;
	bool rx_tcp_csum;
	bool tx_ip_csum;
	bool tx_tcp_csum;
	bool tso;
};

struct memif_region_2211;

struct ss_nic {
	uint16_t port_id;
	uint16_t nb_queues;
	char driver[64];
	char name[64];
	enum ss_nic_kind kind;
	bool memif_server;               /* memif: role=server */
	uint8_t mac[6];
	uint16_t mtu;
	struct ss_nic_caps caps;
	/* Offloads in use; for everything else the software path runs. */
	bool use_rx_ip_csum, use_rx_tcp_csum, use_tx_ip_csum, use_tx_tcp_csum;
	bool use_tso;                    /* with both TX checksums: tso_pool[] and tso_max */
	uint32_t tso_max;                /* TCP payload bytes of one TSO segment, 0: none */
	uint16_t tso_frame_max;          /* the longest frame a cut segment may make */
	enum ss_nic_wait_mode wait_mode;
	/* per queue, -1 if none (memif: none; its eventfds come and go with
	 * the peer, see ss_nic_memif_fds()) */
	int wait_fd[SS_NIC_MAX_QUEUES];
	int xsk_fd[SS_NIC_MAX_QUEUES];   /* the queue's AF_XDP socket (statistics), -1 if none */
	int ifindex;                     /* the kernel interface under the PMD, 0 if none */
	unsigned umem_outside;           /* AF_XDP: mbufs the kernel cannot use (must be 0) */
	unsigned xsk_fill;               /* AF_XDP: buffers lent to the kernel, all queues */
	struct rte_mempool *pool[SS_NIC_MAX_QUEUES];
	struct rte_mempool *tso_pool[SS_NIC_MAX_QUEUES]; /* NULL without TSO */
	/* memif: the PMD's regions (its process-private data), NULL where
	 * its layout was not recognised (see ss_nic_memif_ring()) */
	struct memif_region_2211 *const *memif_regions;
	bool started;
};

/*
 * Before rte_eal_init(): detaches XDP programs that a killed service left
 * on the interfaces named in AF_XDP vdev arguments (iface=...).
 */
void ss_nic_detach_stale_xdp(int eal_argc, char **eal_argv);

/*
 * Before rte_eal_init(): removes the socket file of a memif server
 * (role=server, socket-abstract=no) that a killed service left behind:
 * only if nothing accepts on it (DPDK's memif cannot bind over it).
 */
void ss_nic_remove_stale_memif(int eal_argc, char **eal_argv);

/* What the port is asked for (the service fills it from its configuration). */
struct ss_nic_conf {
	uint16_t port_id;       /* the DPDK port */
	unsigned queues;        /* RX/TX queue pairs wanted (fewer if the port has fewer) */
	uint16_t rx_desc;       /* descriptors per RX queue */
	uint16_t tx_desc;       /* descriptors per TX queue */
	bool tso;               /* TCP segmentation offload where the port has it */
};

/* After rte_eal_init(): configures and starts conf->port_id with up to conf->queues queues. */
int ss_nic_open(struct ss_nic *nic, const struct ss_nic_conf *conf);
void ss_nic_close(struct ss_nic *nic);

/*
 * memif (wait mode SS_NIC_WAIT_MEMIF), for the queue's wake-ups
 * (nic_wake.c): queue @q's eventfds as the PMD holds them now: *rx_fd rung
 * by the peer when it has sent to us, *tx_fd the one we ring after sending
 * to it.  -1 while the peer is not connected (they are made at connection
 * and closed at disconnection).
 */
void ss_nic_memif_fds(const struct ss_nic *nic, uint16_t q, int *rx_fd, int *tx_fd);

/*
 * memif (wait mode SS_NIC_WAIT_MEMIF), for the queue's wake-ups: the head
 * (memif_ring.h) of queue @q's RX ring (@rx) or TX ring; NULL while the
 * peer is not connected, or if the ring does not carry the protocol's
 * cookie or the PMD's layout was not recognised.  Look it up at each use:
 * the PMD unmaps the rings when the peer goes.
 */
volatile struct ss_memif_ring_hdr *ss_nic_memif_ring(const struct ss_nic *nic, uint16_t q, bool rx);

/* The port's link is up (memif: the peer is connected). */
bool ss_nic_link_up(uint16_t port);

#endif
