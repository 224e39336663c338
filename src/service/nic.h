/* nic.h - the NIC layer: one DPDK port set up from configuration, capabilities detected. */
#ifndef SS_SERVICE_NIC_H
#define SS_SERVICE_NIC_H

#include <stdbool.h>
#include <stdint.h>

#include "service/config.h"

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

/* How a fast-path thread sleeps on an RX queue when it has no work. */
enum ss_nic_wait_mode {
	SS_NIC_WAIT_SOCKET, /* poll() the PMD's kernel socket (AF_XDP, AF_PACKET) */
	SS_NIC_WAIT_TIMED,  /* no wake-up source: short timed sleeps */
};

struct ss_nic {
	uint16_t port_id;
	uint16_t nb_queues;
	char driver[64];
	char name[64];
	uint8_t mac[6];
	uint16_t mtu;
	struct ss_nic_caps caps;
	/* Offloads in use; for everything else the software path runs. */
	bool use_rx_ip_csum, use_rx_tcp_csum, use_tx_ip_csum, use_tx_tcp_csum;
	enum ss_nic_wait_mode wait_mode;
	int wait_fd[SS_NIC_MAX_QUEUES];  /* per queue, -1 if none */
	int xsk_fd[SS_NIC_MAX_QUEUES];   /* the queue's AF_XDP socket (statistics), -1 if none */
	int ifindex;                     /* the kernel interface under the PMD, 0 if none */
	unsigned umem_outside;           /* AF_XDP: mbufs the kernel cannot use (must be 0) */
	struct rte_mempool *pool[SS_NIC_MAX_QUEUES];
	bool started;
};

/*
 * Before rte_eal_init(): detaches XDP programs that a killed service left
 * on the interfaces named in AF_XDP vdev arguments (iface=...).
 */
void ss_nic_detach_stale_xdp(int eal_argc, char **eal_argv);

/* After rte_eal_init(): configures and starts cfg->port_id with up to cfg->cores queues. */
int ss_nic_open(struct ss_nic *nic, const struct ss_config *cfg);
void ss_nic_close(struct ss_nic *nic);

const char *ss_nic_wait_mode_name(enum ss_nic_wait_mode m);

#endif
