/* nic.c - DPDK port set-up: queues, mbuf pools sized from the rings, offload choice, wake-up fds. */
/* rte_intr_fd_get(), rte_intr_type_get(): experimental in DPDK 22.11
 * (memif's queue eventfds, see memif_layout_ok()). */
#define ALLOW_EXPERIMENTAL_API 1

#include "nic/nic.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_version.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "util/log.h"
#include "nic/nic_pool.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif

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

/* ---- memif ------------------------------------------------------------------ */

static void remove_stale_memif(const char *vdev)
{
	struct ss_memif_args a;
	struct stat st;
	if (!ss_memif_args_parse(vdev, &a) || !a.server || a.abstract)
		return;
	if (stat(a.socket, &st) != 0 || !S_ISSOCK(st.st_mode))
		return;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a.socket);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	int rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	int err = errno;
	close(fd);
	if (rc == 0) {
		SS_WARN("memif: %s is served by another process; this service cannot bind it",
			a.socket);
		return;
	}
	if (err == ECONNREFUSED && unlink(a.socket) == 0)
		SS_WARN("memif: removed stale socket %s (nothing listened on it)", a.socket);
}

void ss_nic_remove_stale_memif(int eal_argc, char **eal_argv)
{
	for (int i = 1; i < eal_argc; i++) {
		const char *a = eal_argv[i];
		if (strncmp(a, "--vdev=", 7) == 0)
			remove_stale_memif(a + 7);
		else if (strcmp(a, "--vdev") == 0 && i + 1 < eal_argc)
			remove_stale_memif(eal_argv[i + 1]);
	}
}

/*
 * DPDK 22.11's memif PMD has no RX interrupt in its ethdev ops, and each
 * end masks the interrupts of the rings it receives on (polling mode): the
 * sender never rings the peer.  Both ends of a Slipstream memif link are
 * Slipstream, so the sender rings the queue's eventfd itself after each TX
 * burst that sent frames (nic_wake.c), and the receiver sleeps on it.
 * The eventfds are the memif queue's interrupt handles, which the PMD keeps
 * in its private queue structure; this is DPDK 22.11's layout
 * (drivers/net/memif/rte_eth_memif.h, struct memif_queue) as far as the
 * handle, checked at start-up against what the port must hold (our mbuf
 * pool, port id, ring directions).  Any mismatch: timed sleeps, logged.
 */
struct memif_queue_2211 {
	struct rte_mempool *mempool;            /* RX: the pool given at queue set-up */
	void *pmd;
	uint32_t type;                          /* 0: client to server ring, 1: server to client */
	uint16_t region;
	uint16_t in_port;
	uint32_t ring_offset;
	uint16_t last_head;
	uint16_t last_tail;
	struct rte_mbuf **buffers;
	uint64_t n_pkts;
	uint64_t n_bytes;
	struct rte_intr_handle *intr_handle;    /* fd: the ring's eventfd, -1 unconnected */
	uint8_t log2_ring_size;
};
_Static_assert(offsetof(struct memif_queue_2211, intr_handle) == 0x38,
	       "DPDK 22.11 memif_queue layout");

#define MEMIF_RING_C2S 0u
#define MEMIF_RING_S2C 1u

static const struct memif_queue_2211 *memif_q(uint16_t port, uint16_t q, bool rx)
{
	const struct rte_ethdev_qdata *d = rx ? &rte_eth_fp_ops[port].rxq : &rte_eth_fp_ops[port].txq;
	return d->data ? d->data[q] : NULL;
}

static bool memif_layout_ok(const struct ss_nic *nic)
{
	if (strncmp(rte_version(), "DPDK 22.11", 10) != 0) {
		SS_WARN("port %u: memif wake-ups are built for DPDK 22.11, this is %s",
			nic->port_id, rte_version());
		return false;
	}
	unsigned rx_type = nic->memif_server ? MEMIF_RING_C2S : MEMIF_RING_S2C;
	for (uint16_t q = 0; q < nic->nb_queues; q++) {
		const struct memif_queue_2211 *rx = memif_q(nic->port_id, q, true);
		const struct memif_queue_2211 *tx = memif_q(nic->port_id, q, false);
		if (!rx || !tx || rx->mempool != nic->pool[q] || rx->in_port != nic->port_id ||
		    tx->in_port != nic->port_id || rx->type != rx_type || tx->type != 1u - rx_type ||
		    !rx->intr_handle || !tx->intr_handle ||
		    rte_intr_type_get(rx->intr_handle) != RTE_INTR_HANDLE_EXT ||
		    rte_intr_type_get(tx->intr_handle) != RTE_INTR_HANDLE_EXT) {
			SS_WARN("port %u: memif queue %u is not laid out as in DPDK 22.11", nic->port_id,
				q);
			return false;
		}
	}
	return true;
}

void ss_nic_memif_fds(const struct ss_nic *nic, uint16_t q, int *rx_fd, int *tx_fd)
{
	*rx_fd = *tx_fd = -1;
	if (nic->wait_mode != SS_NIC_WAIT_MEMIF || !ss_nic_link_up(nic->port_id))
		return;
	*rx_fd = rte_intr_fd_get(memif_q(nic->port_id, q, true)->intr_handle);
	*tx_fd = rte_intr_fd_get(memif_q(nic->port_id, q, false)->intr_handle);
}

/*
 * DPDK 22.11 finds queue @q's ring at its region's address plus the
 * queue's ring_offset; the regions are the first member of the port's
 * process-private data (struct pmd_process_private), and a region's
 * address the first of struct memif_region.
 */
#define MEMIF_COOKIE 0x3E31F20u
_Static_assert(offsetof(struct ss_memif_ring_hdr, flags) == 4 &&
	       offsetof(struct ss_memif_ring_hdr, head) == 6 &&
	       offsetof(struct ss_memif_ring_hdr, arms) + 4 <= 64, "memif ring header");
struct memif_region_2211 {
	void *addr;
};

/* struct rte_eth_dev of DPDK 22.11 (ethdev_driver.h, not installed), as
 * far as process_private, and its size for indexing. */
struct eth_dev_2211 {
	eth_rx_burst_t rx_pkt_burst;
	eth_tx_burst_t tx_pkt_burst;
	eth_tx_prep_t tx_pkt_prepare;
	eth_rx_queue_count_t rx_queue_count;
	eth_rx_descriptor_status_t rx_descriptor_status;
	eth_tx_descriptor_status_t tx_descriptor_status;
	void *data;
	void *process_private;
	void *dev_ops, *device, *intr_handle;
	void *link_intr_cbs[2];
	void *post_rx_burst_cbs[RTE_MAX_QUEUES_PER_PORT];
	void *pre_tx_burst_cbs[RTE_MAX_QUEUES_PER_PORT];
	int state;
	void *security_ctx;
	uint64_t reserved_64s[4];
	void *reserved_ptrs[4];
} __rte_cache_aligned;
extern struct eth_dev_2211 rte_eth_devices[];

/*
 * The port's memif regions, or NULL if its device entry does not match
 * what the public fast-path table says of it (burst functions, queues).
 */
static struct memif_region_2211 *const *memif_regions(uint16_t port)
{
	const struct eth_dev_2211 *dev = &rte_eth_devices[port];
	const struct rte_eth_fp_ops *ops = &rte_eth_fp_ops[port];
	/* struct rte_eth_dev_data: name[RTE_ETH_NAME_MAX_LEN], then the queue arrays */
	void **const *queues = (void **const *)((const char *)dev->data + RTE_ETH_NAME_MAX_LEN);
	if (ops->rx_pkt_burst != dev->rx_pkt_burst || ops->tx_pkt_burst != dev->tx_pkt_burst ||
	    ops->rx_queue_count != dev->rx_queue_count || !dev->data ||
	    queues[0] != ops->rxq.data || queues[1] != ops->txq.data)
		return NULL;
	return dev->process_private;
}

volatile struct ss_memif_ring_hdr *ss_nic_memif_ring(const struct ss_nic *nic, uint16_t q, bool rx)
{
	if (!nic->memif_regions)
		return NULL;
	const struct memif_queue_2211 *mq = memif_q(nic->port_id, q, rx);
	if (!mq)
		return NULL;
	const struct memif_region_2211 *r = nic->memif_regions[mq->region];
	if (!r || !r->addr)
		return NULL;
	volatile struct ss_memif_ring_hdr *ring =
		(volatile struct ss_memif_ring_hdr *)((uint8_t *)r->addr + mq->ring_offset);
	return ring->cookie == MEMIF_COOKIE ? ring : NULL;
}

bool ss_nic_link_up(uint16_t port)
{
	struct rte_eth_link link;
	memset(&link, 0, sizeof(link));
	return rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

/* ---- AF_XDP fill ring ---------------------------------------------------------- */

/*
 * DPDK 22.11's AF_XDP PMD lends the kernel SS_AF_XDP_FILL_BUFFERS buffers
 * at queue set-up and refills one for one in each RX burst, on a fill ring
 * of twice as many slots.  Those 2048 are the whole backlog a queue holds:
 * the veth's NAPI thread copies frames in while the fast path is off its
 * (shared) CPU, and frame 2049 is dropped (xsk_fill_ring_empty).  The
 * service tops the fill ring up once, before the fast path runs, with
 * buffers of the queue's own pool; the PMD's one-for-one refill then keeps
 * them all circulating.  Its queue structure is DPDK 22.11's
 * (drivers/net/af_xdp/rte_eth_af_xdp.c, struct pkt_rx_queue and struct
 * xsk_umem_info) and its rings libxdp's (struct xsk_ring_prod/cons), both
 * checked against what the queue must hold (our pool, port, socket, ring
 * sizes) before anything is written; any mismatch: nothing is added, logged.
 */
struct xsk_ring_2211 {
	uint32_t cached_prod, cached_cons, mask, size;
	uint32_t *producer, *consumer;
	void *ring;
	uint32_t *flags;
};

struct af_xdp_umem_2211 {
	void *umem;                     /* struct xsk_umem * */
	void *buf_ring;                 /* NULL: mbufs are the UMEM's frames */
	const void *mz;
	struct rte_mempool *mb_pool;
	void *buffer;                   /* the UMEM's base address */
	uint8_t refcnt;
	uint32_t max_xsks;
};

struct af_xdp_rxq_2211 {
	struct xsk_ring_2211 rx;
	struct af_xdp_umem_2211 *umem;
	void *xsk;
	struct rte_mempool *mb_pool;
	uint16_t port;
	uint64_t rx_pkts, rx_bytes, imissed_offset;
	struct xsk_ring_2211 fq;
	struct xsk_ring_2211 cq;
	void *pair;
	struct pollfd fds[1];
	int xsk_queue_idx;
	int busy_budget;
};

static struct af_xdp_rxq_2211 *af_xdp_rxq(const struct ss_nic *nic, uint16_t q, unsigned rx_desc)
{
	struct af_xdp_rxq_2211 *rxq = rte_eth_fp_ops[nic->port_id].rxq.data ?
		rte_eth_fp_ops[nic->port_id].rxq.data[q] : NULL;
	if (strncmp(rte_version(), "DPDK 22.11", 10) != 0 || !rxq)
		return NULL;
	const struct af_xdp_umem_2211 *u = rxq->umem;
	if (rxq->mb_pool != nic->pool[q] || rxq->port != nic->port_id ||
	    rxq->fds[0].fd != nic->xsk_fd[q] || nic->xsk_fd[q] < 0 || !u ||
	    u->mb_pool != nic->pool[q] || u->buf_ring != NULL || !u->buffer ||
	    rxq->fq.size != SS_AF_XDP_FILL_RING || rxq->fq.mask != rxq->fq.size - 1 ||
	    !rxq->fq.producer || !rxq->fq.consumer || !rxq->fq.ring ||
	    rxq->rx.size != rx_desc || rxq->rx.mask != rx_desc - 1 ||
	    rxq->cq.size != SS_AF_XDP_FILL_BUFFERS)
		return NULL;
	return rxq;
}

/*
 * Adds up to @extra buffers of queue @q's pool to its fill ring (before the
 * fast path runs: the PMD's ring state is then this thread's).  Returns the
 * number added.
 */
static unsigned af_xdp_fill_top_up(const struct ss_nic *nic, uint16_t q, unsigned rx_desc,
				   unsigned extra)
{
	struct af_xdp_rxq_2211 *rxq = af_xdp_rxq(nic, q, rx_desc);
	if (!rxq) {
		SS_WARN("port %u: AF_XDP queue %u is not laid out as in DPDK 22.11: the kernel "
			"gets the PMD's %u buffers only", nic->port_id, q, SS_AF_XDP_FILL_BUFFERS);
		return 0;
	}
	struct xsk_ring_2211 *fq = &rxq->fq;
	uint32_t cons = __atomic_load_n(fq->consumer, __ATOMIC_ACQUIRE);
	uint32_t used = fq->cached_prod - cons;
	uint32_t room = used < fq->size ? fq->size - used : 0;
	unsigned n = extra < room ? extra : room;
	struct rte_mbuf *bufs[SS_AF_XDP_FILL_RING];
	if (n == 0 || rte_pktmbuf_alloc_bulk(nic->pool[q], bufs, n) != 0)
		return 0;
	uint64_t *ring = fq->ring;
	uint32_t idx = fq->cached_prod;
	for (unsigned i = 0; i < n; i++)
		ring[(idx + i) & fq->mask] = (uint64_t)(uintptr_t)bufs[i] -
			(uint64_t)(uintptr_t)rxq->umem->buffer - nic->pool[q]->header_size;
	fq->cached_prod = idx + n;
	fq->cached_cons = cons + fq->size;
	__atomic_store_n(fq->producer, *fq->producer + n, __ATOMIC_RELEASE);
	return n;
}

/* ---- RX interrupts ------------------------------------------------------------ */

/*
 * Ports whose PMD has RX interrupts (configured with intr_conf.rxq): each
 * queue's interrupt fd, if enabling and disabling work on it.
 */
static bool find_rx_intr_fds(struct ss_nic *nic)
{
	int fds[SS_NIC_MAX_QUEUES];
	for (uint16_t q = 0; q < nic->nb_queues; q++) {
		fds[q] = rte_eth_dev_rx_intr_ctl_q_get_fd(nic->port_id, q);
		if (fds[q] < 0 || rte_eth_dev_rx_intr_enable(nic->port_id, q) != 0)
			return false;
		rte_eth_dev_rx_intr_disable(nic->port_id, q);
	}
	for (uint16_t q = 0; q < nic->nb_queues; q++)
		nic->wait_fd[q] = fds[q];
	nic->wait_mode = SS_NIC_WAIT_RX_INTR;
	return true;
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

int ss_nic_open(struct ss_nic *nic, const struct ss_nic_conf *cfg)
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
	nic->kind = ss_nic_kind_of(nic->driver);
	nic->ifindex = (int)info.if_index;
	rte_eth_dev_get_name_by_port(port, nic->name);
	if (nic->kind == SS_NIC_KIND_MEMIF) {
		struct ss_memif_args ma;
		const struct rte_devargs *da = rte_dev_devargs(info.device);
		const char *args = da ? da->args : "";
		char vdev[256];
		snprintf(vdev, sizeof(vdev), "net_memif,%s", args ? args : "");
		if (ss_memif_args_parse(vdev, &ma))
			nic->memif_server = ma.server;
	}
	read_caps(&info, &nic->caps);

	unsigned nq = cfg->queues;
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
	/* TSO only with both checksum offloads (the port writes each cut
	 * segment's); off with --tso off. */
	nic->use_tso = cfg->tso && nic->caps.tso && nic->use_tx_ip_csum &&
		       nic->use_tx_tcp_csum;
	if (nic->use_tso)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;

	/* RX interrupts where the PMD may have them (not the socket PMDs,
	 * whose sockets poll() reports, nor memif, which has none). */
	bool try_intr = nic->kind == SS_NIC_KIND_OTHER;
	conf.intr_conf.rxq = try_intr;
	rc = rte_eth_dev_configure(port, (uint16_t)nq, (uint16_t)nq, &conf);
	if (rc != 0 && try_intr) {
		SS_INFO("port %u: no RX interrupts (%s); configuring without", port,
			rte_strerror(-rc));
		try_intr = false;
		conf.intr_conf.rxq = 0;
		rc = rte_eth_dev_configure(port, (uint16_t)nq, (uint16_t)nq, &conf);
	}
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

	bool af_xdp = nic->kind == SS_NIC_KIND_AF_XDP;
	struct ss_af_xdp_rx_plan plan = ss_af_xdp_rx_plan(nrx);
	if (af_xdp)
		nrx = (uint16_t)plan.rx_desc;
	/* Neither AF_XDP nor memif (copy mode) does DMA: packed pools. */
	bool packed = af_xdp || nic->kind == SS_NIC_KIND_MEMIF;
	unsigned pool_n = ss_nic_pool_size(nrx, ntx, af_xdp);
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = SOCKET_ID_ANY;

	for (unsigned q = 0; q < nq; q++) {
		char name[RTE_MEMPOOL_NAMESIZE];
		snprintf(name, sizeof(name), "ss_p%u_q%u", port, q);
		nic->pool[q] = ss_nic_pool_create(name, pool_n, socket, packed);
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
		if (nic->use_tso) {
			snprintf(name, sizeof(name), "ss_p%u_q%u_tso", port, q);
			nic->tso_pool[q] = ss_nic_tso_pool_create(name, SS_NIC_TSO_FRAMES, socket);
			if (!nic->tso_pool[q]) {
				SS_WARN("port %u: no pool of %u TSO frames for queue %u (%s): "
					"segments of one MSS (raise EAL -m?)", port,
					SS_NIC_TSO_FRAMES, q, rte_strerror(rte_errno));
				nic->use_tso = false;
			}
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

	nic->tso_max = nic->use_tso ? ss_nic_tso_max() : 0;

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
	/* DPDK 22.11's tap PMD refuses (and keeps refusing) a TSO segment
	 * whose cut segments' frames, Ethernet header included, exceed the
	 * MTU: its cut segments are made that much shorter. */
	nic->tso_frame_max = strcmp(nic->driver, "net_tap") == 0 ? nic->mtu : UINT16_MAX;
	/* How an idle fast path sleeps on this port; the AF_XDP sockets
	 * found here also name the queues whose fill rings are topped up. */
	if (nic->kind == SS_NIC_KIND_AF_XDP || nic->kind == SS_NIC_KIND_AF_PACKET) {
		find_wait_fds(nic);
		if (af_xdp) {
			nic->xsk_fill = 0;
			for (uint16_t q = 0; q < nq; q++)
				nic->xsk_fill += SS_AF_XDP_FILL_BUFFERS +
					af_xdp_fill_top_up(nic, q, nrx, plan.fill_extra);
		}
	} else if (try_intr && find_rx_intr_fds(nic))
		;
	else if (nic->kind == SS_NIC_KIND_MEMIF && memif_layout_ok(nic)) {
		nic->wait_mode = SS_NIC_WAIT_MEMIF;
		nic->memif_regions = memif_regions(port);
		if (!nic->memif_regions)
			SS_WARN("port %u: memif device entry not as in DPDK 22.11: the peer is rung "
				"after every TX burst", port);
	} else
		nic->wait_mode = SS_NIC_WAIT_TIMED;

	SS_INFO("port %u: %s (%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u, %u queue(s), "
		"%u rx / %u tx descriptors, pools of %u mbufs",
		port, nic->name, nic->driver, nic->mac[0], nic->mac[1], nic->mac[2],
		nic->mac[3], nic->mac[4], nic->mac[5], nic->mtu, nq, nrx, ntx, pool_n);
	if (af_xdp)
		SS_INFO("port %u: AF_XDP: %u buffers lent to the kernel on %u queue(s) (fill ring "
			"of %u, RX ring of %u)", port, nic->xsk_fill, nq, SS_AF_XDP_FILL_RING, nrx);
	SS_INFO("port %u: max queues rx %u tx %u, RSS %s (RETA %u)", port,
		nic->caps.max_rx_queues, nic->caps.max_tx_queues,
		nic->caps.rss ? "yes" : "no", nic->caps.reta_size);
	SS_INFO("port %u: rx ip csum %s; rx tcp csum %s", port,
		offload_state(nic->caps.rx_ip_csum, nic->use_rx_ip_csum),
		offload_state(nic->caps.rx_tcp_csum, nic->use_rx_tcp_csum));
	SS_INFO("port %u: tx ip csum %s; tx tcp csum %s; TSO %s", port,
		offload_state(nic->caps.tx_ip_csum, nic->use_tx_ip_csum),
		offload_state(nic->caps.tx_tcp_csum, nic->use_tx_tcp_csum),
		offload_state(nic->caps.tso, nic->use_tso));
	if (nic->kind == SS_NIC_KIND_MEMIF)
		SS_INFO("port %u: memif %s, link %s (up once the peer connects)", port,
			nic->memif_server ? "server" : "client",
			ss_nic_link_up(port) ? "up" : "down");
	SS_INFO("port %u: kind %s; idle fast-path threads wait by %s", port,
		ss_nic_kind_name(nic->kind), ss_nic_wait_mode_name(nic->wait_mode));
	if (nic->wait_mode == SS_NIC_WAIT_TIMED)
		SS_WARN("port %u: no wake-up source on this port: idle fast-path threads take "
			"timed naps", port);
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
		rte_mempool_free(nic->tso_pool[q]);
		nic->pool[q] = nic->tso_pool[q] = NULL;
	}
}
