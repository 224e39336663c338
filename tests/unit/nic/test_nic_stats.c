/* test_nic_stats.c - the rtnetlink reply parser behind the link counters of `slipstream stats`. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include "check.h"
#include "nic/nic_stats.h"

/* Builds netlink messages into a buffer, as the kernel lays them out. */
struct nlbuf {
	_Alignas(8) uint8_t b[4096];
	size_t len;
	struct nlmsghdr *cur;
};

static void *put(struct nlbuf *nb, const void *p, size_t n)
{
	void *at = nb->b + nb->len;
	memcpy(at, p, n);
	nb->len += NLMSG_ALIGN(n);
	return at;
}

static void msg_start(struct nlbuf *nb, uint16_t type, int32_t ifindex)
{
	struct nlmsghdr nh = { .nlmsg_type = type };
	nb->cur = put(nb, &nh, sizeof(nh));
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	put(nb, &ifi, sizeof(ifi));
}

static struct rtattr *attr(struct nlbuf *nb, uint16_t type, const void *p, size_t n)
{
	struct rtattr rta = { .rta_len = (unsigned short)RTA_LENGTH(n), .rta_type = type };
	struct rtattr *at = put(nb, &rta, sizeof(rta));
	if (n) {
		memcpy(nb->b + nb->len, p, n);
		nb->len += RTA_ALIGN(n);
	}
	return at;
}

static void msg_end(struct nlbuf *nb)
{
	nb->cur->nlmsg_len = (uint32_t)(nb->b + nb->len - (uint8_t *)nb->cur);
}

static void link_msg(struct nlbuf *nb, int32_t ifindex, const char *kind, int32_t peer,
		     int32_t nsid, uint64_t rx_dropped, uint64_t tx_dropped)
{
	msg_start(nb, RTM_NEWLINK, ifindex);
	attr(nb, IFLA_IFNAME, "ss-sv0", 7);
	struct rtnl_link_stats64 st;
	memset(&st, 0, sizeof(st));
	st.rx_packets = 1000;
	st.tx_packets = 2000;
	st.rx_dropped = rx_dropped;
	st.tx_dropped = tx_dropped;
	attr(nb, IFLA_STATS64, &st, sizeof(st));
	if (peer)
		attr(nb, IFLA_LINK, &peer, sizeof(peer));
	if (kind) {
		struct rtattr *li = attr(nb, IFLA_LINKINFO, NULL, 0);
		attr(nb, IFLA_INFO_KIND, kind, strlen(kind) + 1);
		li->rta_len = (unsigned short)((uint8_t *)nb->b + nb->len - (uint8_t *)li);
	}
	if (nsid >= 0)
		attr(nb, IFLA_LINK_NETNSID, &nsid, sizeof(nsid));
	msg_end(nb);
}

static void test_veth_reply(void)
{
	struct nlbuf nb = { .len = 0 };
	link_msg(&nb, 7, "veth", 12, 3, 62900, 0);
	struct ss_link_info li;
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 7, &li), 0);
	CHECK_EQ_U64(li.ifindex, 7);
	CHECK_STR(li.kind, "veth");
	CHECK(li.has_stats);
	CHECK_EQ_U64(li.st.rx_packets, 1000);
	CHECK_EQ_U64(li.st.tx_packets, 2000);
	CHECK_EQ_U64(li.st.rx_dropped, 62900);
	CHECK_EQ_U64(li.st.tx_dropped, 0);
	CHECK_EQ_U64(li.link_ifindex, 12);
	CHECK(li.has_link_netnsid);
	CHECK_EQ_U64(li.link_netnsid, 3);
	/* Any interface when asked for none in particular. */
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 0, &li), 0);
	CHECK_EQ_U64(li.ifindex, 7);
}

static void test_picks_the_asked_interface(void)
{
	struct nlbuf nb = { .len = 0 };
	link_msg(&nb, 3, NULL, 0, -1, 1, 2);
	link_msg(&nb, 9, "veth", 4, -1, 5, 77390);
	struct nlmsghdr done = { .nlmsg_len = NLMSG_LENGTH(sizeof(int)), .nlmsg_type = NLMSG_DONE };
	int zero = 0;
	put(&nb, &done, sizeof(done));
	put(&nb, &zero, sizeof(zero));
	struct ss_link_info li;
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 9, &li), 0);
	CHECK_EQ_U64(li.st.tx_dropped, 77390);
	CHECK(!li.has_link_netnsid);
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 3, &li), 0);
	CHECK_STR(li.kind, "");
	CHECK_EQ_U64(li.link_ifindex, 0);
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 5, &li), (uint64_t)-ENOENT);
}

static void test_errors(void)
{
	struct ss_link_info li;
	/* The kernel's refusal comes back as its errno. */
	struct nlbuf nb = { .len = 0 };
	struct nlmsghdr nh = { .nlmsg_type = NLMSG_ERROR };
	struct nlmsghdr *h = put(&nb, &nh, sizeof(nh));
	struct nlmsgerr e;
	memset(&e, 0, sizeof(e));
	e.error = -ENODEV;
	put(&nb, &e, sizeof(e));
	h->nlmsg_len = (uint32_t)nb.len;
	CHECK_EQ_U64(ss_link_parse(nb.b, nb.len, 7, &li), (uint64_t)-ENODEV);

	/* Truncated: a header longer than the buffer, an attribute cut short. */
	struct nlbuf t = { .len = 0 };
	link_msg(&t, 7, "veth", 12, 3, 1, 2);
	CHECK_EQ_U64(ss_link_parse(t.b, 10, 7, &li), (uint64_t)-EBADMSG);
	struct nlbuf s = { .len = 0 };
	msg_start(&s, RTM_NEWLINK, 7);
	uint32_t short_stats[4] = { 1, 2, 3, 4 };
	attr(&s, IFLA_STATS64, short_stats, sizeof(short_stats));
	msg_end(&s);
	CHECK_EQ_U64(ss_link_parse(s.b, s.len, 7, &li), (uint64_t)-EBADMSG);
	/* Nothing at all. */
	CHECK_EQ_U64(ss_link_parse(s.b, 0, 7, &li), (uint64_t)-ENOENT);
}

int main(void)
{
	test_veth_reply();
	test_picks_the_asked_interface();
	test_errors();
	return check_done("test_nic_stats");
}
