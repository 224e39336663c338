/* nic.c - DPDK port set-up: queues, mbuf pools sized from the rings, offload choice, wake-up fds. */
#include "service/nic.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "service/log.h"
#include "service/nic_pool.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif


const char *ss_nic_wait_mode_name(enum ss_nic_wait_mode m)
{
	return m == SS_NIC_WAIT_SOCKET ? "socket-poll" : "timed-sleep";
}

/* ---- stale XDP programs ------------------------------------------------ */

static void detach_xdp(const char *ifname)
{
	unsigned ifindex = if_nametoindex(ifname);
	if (ifindex == 0) {
		SS_WARN("af_xdp: interface %s not found", ifname);
		return;
	}
	static const struct { __u32 flag; const char *mode; } modes[] = {
		{ XDP_FLAGS_DRV_MODE, "native" },
		{ XDP_FLAGS_SKB_MODE, "generic" },
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		__u32 prog_id = 0;
		if (bpf_xdp_query_id((int)ifindex, (int)modes[i].flag, &prog_id) != 0 ||
		    prog_id == 0)
			continue;
		int rc = bpf_xdp_detach((int)ifindex, (int)modes[i].flag, NULL);
		if (rc == 0)
			SS_WARN("af_xdp: detached stale %s XDP program %u from %s",
				modes[i].mode, prog_id, ifname);
		else
			SS_WARN("af_xdp: could not detach XDP program %u from %s: %s",
				prog_id, ifname, strerror(-rc));
	}
}

void ss_nic_detach_stale_xdp(int eal_argc, char **eal_argv)
{
	for (int i = 1; i < eal_argc; i++) {
		const char *a = eal_argv[i];
		const char *vdev = NULL;
		if (strncmp(a, "--vdev=", 7) == 0)
			vdev = a + 7;
		else if (strcmp(a, "--vdev") == 0 && i + 1 < eal_argc)
			vdev = eal_argv[i + 1];
		if (!vdev || strncmp(vdev, "net_af_xdp", 10) != 0)
			continue;
		const char *p = strstr(vdev, "iface=");
		if (!p)
			continue;
		char ifname[IF_NAMESIZE];
		size_t n = strcspn(p + 6, ",");
		if (n == 0 || n >= sizeof(ifname))
			continue;
		memcpy(ifname, p + 6, n);
		ifname[n] = '\0';
		detach_xdp(ifname);
	}
}

/* ---- wake-up sockets ---------------------------------------------------- */

/*
 * AF_XDP and AF_PACKET PMDs have no RX interrupt, but each queue is a
 * kernel socket that poll() reports readable when frames wait.
 */
static int packet_socket_domain(int fd)
{
	int domain = -1;
	socklen_t len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
		return -1;
	return domain == AF_XDP || domain == AF_PACKET ? domain : -1;
}

/* Fills @fds (ascending) with the packet sockets now open; returns the count. */
static unsigned list_packet_sockets(int *fds, unsigned max)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		int fd = atoi(de->d_name);
		if (fd == dirfd(d) || packet_socket_domain(fd) < 0)
			continue;
		/* insertion sort: creation order is fd order for fresh sockets */
		unsigned j = n < max ? n++ : max - 1;
		while (j > 0 && fds[j - 1] > fd) {
			fds[j] = fds[j - 1];
			j--;
		}
		fds[j] = fd;
	}
	closedir(d);
	return n;
}

/*
 * The service opens no packet sockets of its own, so those the process
 * holds after the port started are the PMD's (AF_PACKET opens them at
 * probe, AF_XDP at queue set-up): one per queue, in queue order.
 */
static void find_wait_fds(struct ss_nic *nic)
{
	int fds[SS_NIC_MAX_QUEUES * 2];
	unsigned found = list_packet_sockets(fds, SS_NIC_MAX_QUEUES * 2);

	nic->wait_mode = SS_NIC_WAIT_TIMED;
	for (unsigned q = 0; q < SS_NIC_MAX_QUEUES; q++)
		nic->wait_fd[q] = nic->xsk_fd[q] = -1;
	if (found != nic->nb_queues) {
		if (found)
			SS_WARN("port %u: %u packet sockets for %u queues; not sleeping on them",
				nic->port_id, found, nic->nb_queues);
		return;
	}
	for (unsigned q = 0; q < nic->nb_queues; q++) {
		nic->wait_fd[q] = fds[q];
		if (packet_socket_domain(fds[q]) == AF_XDP)
			nic->xsk_fd[q] = fds[q];
	}
	nic->wait_mode = SS_NIC_WAIT_SOCKET;
}

/* ---- port set-up ---------------------------------------------------------- */

static void read_caps(const struct rte_eth_dev_info *info, struct ss_nic_caps *c)
{
	c->max_rx_queues = info->max_rx_queues;
	c->max_tx_queues = info->max_tx_queues;
	c->rss = info->flow_type_rss_offloads != 0 && info->max_rx_queues > 1;
	c->reta_size = info->reta_size;
	c->rx_ip_csum = info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	c->rx_tcp_csum = info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
	c->tx_ip_csum = info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	c->tx_tcp_csum = info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	c->tso = info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO;
}

/* How a checksum or segmentation job is done on this port. */
static const char *offload_state(bool has, bool used)
{
	return used ? "offloaded" : has ? "software (offload unused)" : "software (port has none)";
}

int ss_nic_open(struct ss_nic *nic, const struct ss_config *cfg)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint16_t port = cfg->port_id;
	int rc;

	memset(nic, 0, sizeof(*nic));
	nic->port_id = port;
	for (unsigned q = 0; q < SS_NIC_MAX_QUEUES; q++)
		nic->wait_fd[q] = nic->xsk_fd[q] = -1;

	if (!rte_eth_dev_is_valid_port(port)) {
		SS_ERR("port %u does not exist (%u ports found; give a device with "
		       "--vdev=... or a PCI address in the DPDK arguments)",
		       port, rte_eth_dev_count_avail());
		return -ENODEV;
	}
	rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		SS_ERR("port %u: dev_info: %s", port, rte_strerror(-rc));
		return rc;
	}
	snprintf(nic->driver, sizeof(nic->driver), "%s", info.driver_name);
	nic->ifindex = (int)info.if_index;
	rte_eth_dev_get_name_by_port(port, nic->name);
	read_caps(&info, &nic->caps);

	unsigned nq = cfg->cores;
	if (nq > info.max_rx_queues || nq > info.max_tx_queues || nq > SS_NIC_MAX_QUEUES) {
		unsigned lim = RTE_MIN(RTE_MIN(info.max_rx_queues, info.max_tx_queues),
				       SS_NIC_MAX_QUEUES);
		SS_WARN("port %u (%s): %u fast-path threads asked for, port has %u queues: using %u",
			port, nic->driver, nq, lim, lim);
		nq = lim;
	}
	if (nq > 1 && !nic->caps.rss) {
		SS_WARN("port %u: no RSS, so one queue and one fast-path thread", port);
		nq = 1;
	}
	nic->nb_queues = (uint16_t)nq;

	memset(&conf, 0, sizeof(conf));
	if (nq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_IPV4) &
			info.flow_type_rss_offloads;
	}
	nic->use_rx_ip_csum = nic->caps.rx_ip_csum;
	nic->use_rx_tcp_csum = nic->caps.rx_tcp_csum;
	/* TX: the stack leaves both checksums of its TCP segments to the
	 * port (SS_TX_CSUM) only when it has both offloads; otherwise, and
	 * for the replies proto.c writes in place (ARP, ICMP, RST), software. */
	nic->use_tx_ip_csum = nic->use_tx_tcp_csum = nic->caps.tx_ip_csum && nic->caps.tx_tcp_csum;
	if (nic->use_rx_ip_csum)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	if (nic->use_rx_tcp_csum)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
	if (nic->use_tx_ip_csum)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	if (nic->use_tx_tcp_csum)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;

	rc = rte_eth_dev_configure(port, (uint16_t)nq, (uint16_t)nq, &conf);
	if (rc != 0) {
		SS_ERR("port %u: configure %u queues: %s", port, nq, rte_strerror(-rc));
		return rc;
	}
	uint16_t nrx = cfg->rx_desc, ntx = cfg->tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
	if (rc != 0) {
		SS_ERR("port %u: descriptor counts: %s", port, rte_strerror(-rc));
		return rc;
	}

	bool af_xdp = strcmp(nic->driver, "net_af_xdp") == 0;
	unsigned pool_n = ss_nic_pool_size(nrx, ntx, af_xdp);
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = SOCKET_ID_ANY;

	for (unsigned q = 0; q < nq; q++) {
		char name[RTE_MEMPOOL_NAMESIZE];
		snprintf(name, sizeof(name), "ss_p%u_q%u", port, q);
		nic->pool[q] = ss_nic_pool_create(name, pool_n, socket, af_xdp);
		if (!nic->pool[q]) {
			SS_ERR("port %u: mbuf pool of %u for queue %u: %s (raise EAL -m?)",
			       port, pool_n, q, rte_strerror(rte_errno));
			return -ENOMEM;
		}
		if (af_xdp) {
			unsigned out = ss_nic_umem_outside(nic->pool[q]);
			if (out)
				SS_WARN("port %u: %u of %u mbufs of queue %u lie outside the AF_XDP "
					"UMEM (%u memory chunks): the kernel drops them",
					port, out, nic->pool[q]->size, q,
					nic->pool[q]->nb_mem_chunks);
			nic->umem_outside += out;
		}
		struct rte_eth_rxconf rxc = info.default_rxconf;
		rxc.offloads = conf.rxmode.offloads;
		rc = rte_eth_rx_queue_setup(port, (uint16_t)q, nrx, (unsigned)socket, &rxc,
					    nic->pool[q]);
		if (rc == 0) {
			struct rte_eth_txconf txc = info.default_txconf;
			txc.offloads = conf.txmode.offloads;
			rc = rte_eth_tx_queue_setup(port, (uint16_t)q, ntx, (unsigned)socket, &txc);
		}
		if (rc != 0) {
			SS_ERR("port %u: queue %u set-up: %s", port, q, rte_strerror(-rc));
			return rc;
		}
	}

	rc = rte_eth_dev_start(port);
	if (rc != 0) {
		SS_ERR("port %u: start: %s", port, rte_strerror(-rc));
		return rc;
	}
	nic->started = true;
	rte_eth_promiscuous_disable(port);

	struct rte_ether_addr mac;
	rte_eth_macaddr_get(port, &mac);
	memcpy(nic->mac, mac.addr_bytes, 6);
	rte_eth_dev_get_mtu(port, &nic->mtu);
	find_wait_fds(nic);

	SS_INFO("port %u: %s (%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u, %u queue(s), "
		"%u rx / %u tx descriptors, pools of %u mbufs",
		port, nic->name, nic->driver, nic->mac[0], nic->mac[1], nic->mac[2],
		nic->mac[3], nic->mac[4], nic->mac[5], nic->mtu, nq, nrx, ntx, pool_n);
	SS_INFO("port %u: max queues rx %u tx %u, RSS %s (RETA %u)", port,
		nic->caps.max_rx_queues, nic->caps.max_tx_queues,
		nic->caps.rss ? "yes" : "no", nic->caps.reta_size);
	SS_INFO("port %u: rx ip csum %s; rx tcp csum %s", port,
		offload_state(nic->caps.rx_ip_csum, nic->use_rx_ip_csum),
		offload_state(nic->caps.rx_tcp_csum, nic->use_rx_tcp_csum));
	SS_INFO("port %u: tx ip csum %s; tx tcp csum %s; TSO %s", port,
		offload_state(nic->caps.tx_ip_csum, nic->use_tx_ip_csum),
		offload_state(nic->caps.tx_tcp_csum, nic->use_tx_tcp_csum),
		offload_state(nic->caps.tso, false));
	SS_INFO("port %u: idle fast-path threads wait by %s", port,
		ss_nic_wait_mode_name(nic->wait_mode));
	return 0;
}

void ss_nic_close(struct ss_nic *nic)
{
	if (nic->started) {
		rte_eth_dev_stop(nic->port_id);
		nic->started = false;
	}
	rte_eth_dev_close(nic->port_id);
	for (unsigned q = 0; q < SS_NIC_MAX_QUEUES; q++) {
		rte_mempool_free(nic->pool[q]);
		nic->pool[q] = NULL;
	}
}
