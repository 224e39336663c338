/* test_nic_kind.c - port kinds, wait-mode names, memif devargs, the TX queue's kept frames. */
#include <string.h>

#include "check.h"
#include "nic/nic_kind.h"

static void test_kinds(void)
{
	CHECK(ss_nic_kind_of("net_af_xdp") == SS_NIC_KIND_AF_XDP);
	CHECK(ss_nic_kind_of("net_af_packet") == SS_NIC_KIND_AF_PACKET);
	CHECK(ss_nic_kind_of("net_memif") == SS_NIC_KIND_MEMIF);
	CHECK(ss_nic_kind_of("net_ice") == SS_NIC_KIND_OTHER);
	CHECK(ss_nic_kind_of("net_memif2") == SS_NIC_KIND_OTHER);
	CHECK(ss_nic_kind_of(NULL) == SS_NIC_KIND_OTHER);
	CHECK_STR(ss_nic_kind_name(SS_NIC_KIND_MEMIF), "memif");
	CHECK_STR(ss_nic_kind_name(SS_NIC_KIND_AF_XDP), "af_xdp");
	CHECK_STR(ss_nic_kind_name(SS_NIC_KIND_OTHER), "other");
	CHECK_STR(ss_nic_wait_mode_name(SS_NIC_WAIT_SOCKET), "socket-poll");
	CHECK_STR(ss_nic_wait_mode_name(SS_NIC_WAIT_RX_INTR), "rx-interrupt");
	CHECK_STR(ss_nic_wait_mode_name(SS_NIC_WAIT_MEMIF), "memif-eventfd");
	CHECK_STR(ss_nic_wait_mode_name(SS_NIC_WAIT_TIMED), "timed-sleep");
}

static void test_memif_args(void)
{
	struct ss_memif_args a;

	CHECK(ss_memif_args_parse("net_memif0,role=server,id=7,socket=/run/slipstream/x.sock,"
				  "socket-abstract=no,rsize=12", &a));
	CHECK(a.server);
	CHECK(!a.abstract);
	CHECK(!a.zero_copy);
	CHECK(a.id == 7);
	CHECK_STR(a.socket, "/run/slipstream/x.sock");

	/* DPDK's defaults: client, abstract socket /run/memif.sock, id 0. */
	CHECK(ss_memif_args_parse("net_memif1", &a));
	CHECK(!a.server);
	CHECK(a.abstract);
	CHECK(a.id == 0);
	CHECK_STR(a.socket, "/run/memif.sock");

	CHECK(ss_memif_args_parse("net_memif0,zero-copy=yes,role=client", &a));
	CHECK(a.zero_copy);
	CHECK(!a.server);

	/* Not memif, or malformed. */
	CHECK(!ss_memif_args_parse("net_af_xdp0,iface=x", &a));
	CHECK(!ss_memif_args_parse(NULL, &a));
	CHECK(!ss_memif_args_parse("net_memif0,role=master", &a));
	CHECK(!ss_memif_args_parse("net_memif0,role", &a));
	CHECK(!ss_memif_args_parse("net_memif0,socket-abstract=maybe", &a));
	CHECK(!ss_memif_args_parse("net_memif0,id=12x", &a));
	CHECK(!ss_memif_args_parse("net_memif0,socket=", &a));
	char longpath[200];
	memset(longpath, 'a', sizeof(longpath));
	memcpy(longpath, "net_memif0,socket=/", 19);
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK(!ss_memif_args_parse(longpath, &a));
}

static void test_txq_keep(void)
{
	int f[6];
	void *q[6];
	for (int i = 0; i < 6; i++)
		q[i] = &f[i];

	/* All sent: nothing kept. */
	CHECK(ss_txq_keep(q, 6, 6) == 0);
	/* None sent: all kept, in place. */
	CHECK(ss_txq_keep(q, 6, 0) == 6);
	CHECK(q[0] == &f[0] && q[5] == &f[5]);
	/* Some sent: the rest moves to the front, in order. */
	CHECK(ss_txq_keep(q, 6, 4) == 2);
	CHECK(q[0] == &f[4]);
	CHECK(q[1] == &f[5]);
	/* More "sent" than queued (never from a PMD): nothing kept. */
	CHECK(ss_txq_keep(q, 2, 3) == 0);
}

/* The sender's decision after a burst, from the peer's ring header. */
static void test_memif_after_tx(void)
{
	const uint16_t M = SS_MEMIF_RING_MASK_INT;
	/* The peer polls now: nobody rings, whatever it was before. */
	CHECK_EQ_U64(ss_memif_after_tx(5, 0, 6, M), SS_MEMIF_PEER_POLLING);
	CHECK_EQ_U64(ss_memif_after_tx(5, M, 5, M), SS_MEMIF_PEER_POLLING);
	/* Asleep before and after, same arming: the PMD saw the flag clear. */
	CHECK_EQ_U64(ss_memif_after_tx(5, 0, 5, 0), SS_MEMIF_PMD_RANG);
	/* Polling before, asleep now: it armed during the burst. */
	CHECK_EQ_U64(ss_memif_after_tx(5, M, 6, 0), SS_MEMIF_RING_PEER);
	/* Asleep before, woke and slept again during the burst (a new
	 * arming): the PMD may have looked while it was awake. */
	CHECK_EQ_U64(ss_memif_after_tx(5, 0, 6, 0), SS_MEMIF_RING_PEER);
	/* The count wraps. */
	CHECK_EQ_U64(ss_memif_after_tx(UINT32_MAX, 0, 0, 0), SS_MEMIF_RING_PEER);
	CHECK_EQ_U64(ss_memif_after_tx(UINT32_MAX, 0, UINT32_MAX, 0), SS_MEMIF_PMD_RANG);
	/* Other flag bits (none defined) do not count as MASK_INT. */
	CHECK_EQ_U64(ss_memif_after_tx(5, 0x8000, 5, 0x8000), SS_MEMIF_PMD_RANG);
}

int main(void)
{
	test_kinds();
	test_memif_args();
	test_txq_keep();
	test_memif_after_tx();
	return check_done("test_nic_kind");
}
