/* nic_stats.h - drops below the service: the AF_XDP socket behind a queue and the link it serves (no DPDK). */
#ifndef SS_SERVICE_NIC_STATS_H
#define SS_SERVICE_NIC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A frame can be lost before the fast path sees it in three places on an
 * AF_XDP port, none of which DPDK's rte_eth_stats tells apart:
 *
 *   the link        a veth's peer hands frames to our end's XDP program
 *                   through a 256-slot ring (no qdisc behind it): when it
 *                   is full the PEER counts tx_dropped
 *   the XDP socket  the XDP program redirects the frame into the socket;
 *                   copy mode needs a buffer from the fill ring (none:
 *                   rx_dropped, DPDK's imissed) and a slot in the RX ring
 *                   (none: rx_ring_full, which DPDK does not report);
 *                   either failure is also our link's rx_dropped
 *
 * The control thread reads them when asked (`slipstream stats`, "nic").
 */

/* XDP_STATISTICS of one AF_XDP socket (the full struct: with the short
 * one the kernel folds rx_ring_full into rx_dropped). */
struct ss_xsk_stats {
	uint64_t rx_dropped;        /* copy mode: no buffer on the fill ring */
	uint64_t rx_ring_full;      /* no room in the RX ring */
	uint64_t rx_fill_empty;     /* times the kernel found the fill ring empty */
	uint64_t rx_invalid_descs;  /* bad fill-ring entries (our bug) */
	uint64_t tx_invalid_descs;
};

/* Reads @fd's XDP_STATISTICS and adds them to @sum; 0 or -errno. */
int ss_xsk_stats_add(int fd, struct ss_xsk_stats *sum);

/* One interface's counters, as RTM_GETLINK reports them (IFLA_STATS64). */
struct ss_link_stats {
	uint64_t rx_packets, tx_packets;
	uint64_t rx_dropped, tx_dropped;
};

/* What one RTM_NEWLINK message says about an interface. */
struct ss_link_info {
	int32_t ifindex;
	char kind[16];          /* IFLA_INFO_KIND ("veth"), "" if none */
	bool has_stats;
	struct ss_link_stats st;
	int32_t link_ifindex;   /* IFLA_LINK: a veth's peer; 0 if none */
	bool has_link_netnsid;  /* IFLA_LINK_NETNSID: the peer is in another namespace */
	int32_t link_netnsid;
};

/*
 * Parses one netlink reply (a buffer of messages) for the RTM_NEWLINK of
 * @ifindex (any, if 0).  Returns 0, -ENOENT if there is none, -EBADMSG for
 * a malformed buffer, or the -errno of an NLMSG_ERROR.  Pure: unit tested.
 */
int ss_link_parse(const void *buf, size_t len, int32_t ifindex, struct ss_link_info *out);

/*
 * RTM_GETLINK of @ifindex in our namespace (@netnsid < 0) or in the
 * namespace with that id (as our namespace names it: IFLA_LINK_NETNSID).
 * 0 or -errno.
 */
int ss_link_query(int32_t ifindex, int32_t netnsid, struct ss_link_info *out);

/* The link below an AF_XDP or AF_PACKET port, and its peer if it is a veth. */
struct ss_link_drops {
	bool ok, peer_ok;
	struct ss_link_stats own;   /* our interface */
	struct ss_link_stats peer;  /* the veth peer (its tx_dropped: our ring was full) */
};
void ss_link_drops_read(int32_t ifindex, struct ss_link_drops *out);

#endif
