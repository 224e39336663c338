/* nic_stats.c - drops below the service: XDP socket statistics and the link's counters over rtnetlink. */
#include "nic/nic_stats.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif

/* The kernel's NLMSG_NEXT/RTA_NEXT step through a byte buffer that
 * NLMSG_ALIGN/RTA_ALIGN keep 4-byte aligned (and the buffers below are
 * aligned for struct nlmsghdr): clang's -Wcast-align cannot see that. */
#pragma GCC diagnostic ignored "-Wcast-align"

int ss_xsk_stats_add(int fd, struct ss_xsk_stats *sum)
{
	struct xdp_statistics st;
	socklen_t len = sizeof(st);
	memset(&st, 0, sizeof(st));
	if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0)
		return -errno;
	/* A kernel older than 5.9 fills only the first three fields. */
	sum->rx_dropped += st.rx_dropped;
	sum->rx_invalid_descs += st.rx_invalid_descs;
	sum->tx_invalid_descs += st.tx_invalid_descs;
	if (len >= sizeof(st)) {
		sum->rx_ring_full += st.rx_ring_full;
		sum->rx_fill_empty += st.rx_fill_ring_empty_descs;
	}
	return 0;
}

/* ---- rtnetlink ----------------------------------------------------------- */

static int parse_link(const struct nlmsghdr *nh, struct ss_link_info *out)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	out->ifindex = ifi->ifi_index;
	size_t left = nh->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	const struct rtattr *rta = (const struct rtattr *)((const char *)ifi +
							   NLMSG_ALIGN(sizeof(*ifi)));
	for (; RTA_OK(rta, left); rta = RTA_NEXT(rta, left)) {
		size_t plen = RTA_PAYLOAD(rta);
		const void *p = RTA_DATA(rta);
		switch (rta->rta_type) {
		case IFLA_STATS64: {
			struct rtnl_link_stats64 s;
			if (plen < offsetof(struct rtnl_link_stats64, tx_dropped) +
				   sizeof(s.tx_dropped))
				return -EBADMSG;
			memset(&s, 0, sizeof(s));
			memcpy(&s, p, plen < sizeof(s) ? plen : sizeof(s));
			out->st.rx_packets = s.rx_packets;
			out->st.tx_packets = s.tx_packets;
			out->st.rx_dropped = s.rx_dropped;
			out->st.tx_dropped = s.tx_dropped;
			out->has_stats = true;
			break;
		}
		case IFLA_LINK:
			if (plen < sizeof(int32_t))
				return -EBADMSG;
			memcpy(&out->link_ifindex, p, sizeof(int32_t));
			break;
		case IFLA_LINKINFO: {
			/* Nested: IFLA_INFO_KIND names the driver ("veth"). */
			size_t nleft = plen;
			const struct rtattr *n = p;
			for (; RTA_OK(n, nleft); n = RTA_NEXT(n, nleft)) {
				if (n->rta_type != IFLA_INFO_KIND)
					continue;
				size_t k = RTA_PAYLOAD(n);
				if (k >= sizeof(out->kind))
					k = sizeof(out->kind) - 1;
				memcpy(out->kind, RTA_DATA(n), k);
				out->kind[k] = '\0';
			}
			break;
		}
		case IFLA_LINK_NETNSID:
			if (plen < sizeof(int32_t))
				return -EBADMSG;
			memcpy(&out->link_netnsid, p, sizeof(int32_t));
			out->has_link_netnsid = true;
			break;
		default:
			break;
		}
	}
	return 0;
}

int ss_link_parse(const void *buf, size_t len, int32_t ifindex, struct ss_link_info *out)
{
	const struct nlmsghdr *nh = buf;
	if (len > 0 && !NLMSG_OK(nh, len))
		return -EBADMSG;
	for (; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
		if (nh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);
			if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
				return -EBADMSG;
			if (e->error != 0)
				return e->error < 0 ? e->error : -e->error;
			continue;
		}
		if (nh->nlmsg_type == NLMSG_DONE)
			break;
		if (nh->nlmsg_type != RTM_NEWLINK)
			continue;
		struct ss_link_info li;
		int rc = parse_link(nh, &li);
		if (rc != 0)
			return rc;
		if (ifindex == 0 || li.ifindex == ifindex) {
			*out = li;
			return 0;
		}
	}
	return -ENOENT;
}

int ss_link_query(int32_t ifindex, int32_t netnsid, struct ss_link_info *out)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		char attrs[64];
	} req;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_type = RTM_GETLINK;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ifi.ifi_family = AF_UNSPEC;
	req.ifi.ifi_index = ifindex;
	size_t len = NLMSG_LENGTH(sizeof(req.ifi));
	if (netnsid >= 0) {
		struct rtattr *rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(len));
		rta->rta_type = IFLA_TARGET_NETNSID;
		rta->rta_len = RTA_LENGTH(sizeof(int32_t));
		memcpy(RTA_DATA(rta), &netnsid, sizeof(int32_t));
		len = NLMSG_ALIGN(len) + RTA_ALIGN(rta->rta_len);
	}
	req.nh.nlmsg_len = (uint32_t)len;

	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	struct timeval tv = { .tv_sec = 1 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int rc;
	if (sendto(fd, &req, len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
	} else {
		static _Thread_local char buf[16384] __attribute__((aligned(8)));
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		rc = n < 0 ? -errno : ss_link_parse(buf, (size_t)n, ifindex, out);
	}
	close(fd);
	return rc;
}

void ss_link_drops_read(int32_t ifindex, struct ss_link_drops *out)
{
	struct ss_link_info own, peer;
	memset(out, 0, sizeof(*out));
	if (ifindex <= 0 || ss_link_query(ifindex, -1, &own) != 0 || !own.has_stats)
		return;
	out->ok = true;
	out->own = own.st;
	/* A veth names its peer (IFLA_LINK), in another namespace on the
	 * test bed; other stacked devices name their lower device there. */
	if (strcmp(own.kind, "veth") != 0 || own.link_ifindex <= 0)
		return;
	if (ss_link_query(own.link_ifindex, own.has_link_netnsid ? own.link_netnsid : -1,
			  &peer) != 0 || !peer.has_stats)
		return;
	out->peer_ok = true;
	out->peer = peer.st;
}
