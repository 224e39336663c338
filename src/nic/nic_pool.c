/* nic_pool.c - mbuf pools: sized from the rings; for AF_XDP, objects back to back so all lie in the UMEM. */
#include "nic/nic_pool.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

#include "wire/eth.h"
#include "wire/tcp.h"

#define MBUF_CACHE 256
#define RX_BURST_SLACK 512
#define SS_AF_XDP_RX_DESC_MAX 32768u

unsigned ss_nic_pool_size(unsigned rx_desc, unsigned tx_desc, bool af_xdp)
{
	return rte_align32pow2(2u * rx_desc + tx_desc + RX_BURST_SLACK + MBUF_CACHE +
			       (af_xdp ? SS_AF_XDP_FILL_BUFFERS : 0)) - 1;
}

struct ss_af_xdp_rx_plan ss_af_xdp_rx_plan(unsigned rx_desc)
{
	struct ss_af_xdp_rx_plan p;
	p.fill = SS_AF_XDP_FILL_RING;
	p.fill_extra = p.fill - SS_AF_XDP_FILL_BUFFERS;
	/* Ring sizes are 16-bit in ethdev: 32768 is the largest power of two. */
	unsigned want = rx_desc > p.fill ? rx_desc : p.fill;
	p.rx_desc = want > SS_AF_XDP_RX_DESC_MAX ? SS_AF_XDP_RX_DESC_MAX : rte_align32pow2(want);
	return p;
}

/*
 * The AF_XDP PMD registers its mempool's memory as the socket's UMEM: from
 * the first memory chunk's base, populated_size x object size bytes, and
 * hands the kernel each mbuf as its offset there.  That assumes the objects
 * lie back to back.  rte_pktmbuf_pool_create() asks for IOVA-contiguous
 * objects, which without hugepages (--no-huge: 4 KiB pages) means none may
 * cross a page boundary: one 2.3 KiB mbuf per 4 KiB page, and the last
 * ~40% of them past the end of the UMEM.  The kernel silently discards such
 * a buffer when it comes round on the fill ring (fill-ring entries lost,
 * and with them the mbufs) and rejects it as a TX descriptor
 * (tx_invalid_descs: the frame is never sent, the mbuf never completes).
 * The fill ring shrinks as such buffers come round, and under load the
 * kernel finds it empty (xsk_rx_dropped).  AF_XDP does no DMA, so
 * its pool drops the IOVA requirement and its objects are contiguous.
 */
static struct rte_mempool *pool_create(const char *name, unsigned n, unsigned cache, int socket,
				       bool packed, uint16_t room)
{
	if (!packed)
		return rte_pktmbuf_pool_create(name, n, cache, 0, room, socket);
	/* rte_pktmbuf_pool_create_by_ops(), with RTE_MEMPOOL_F_NO_IOVA_CONTIG. */
	struct rte_pktmbuf_pool_private priv;
	memset(&priv, 0, sizeof(priv));
	priv.mbuf_data_room_size = room;
	struct rte_mempool *mp = rte_mempool_create_empty(
		name, n, sizeof(struct rte_mbuf) + room, cache,
		sizeof(priv), socket, RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (!mp)
		return NULL;
	int rc = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (rc == 0) {
		rte_pktmbuf_pool_init(mp, &priv);
		rc = rte_mempool_populate_default(mp);
	}
	if (rc < 0) {
		rte_mempool_free(mp);
		rte_errno = -rc;
		return NULL;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
}

struct rte_mempool *ss_nic_pool_create(const char *name, unsigned n, int socket, bool packed)
{
	return pool_create(name, n, MBUF_CACHE, socket, packed, RTE_MBUF_DEFAULT_BUF_SIZE);
}

struct rte_mempool *ss_nic_tso_pool_create(const char *name, unsigned n, int socket)
{
	/* A small cache: each object is 64 KiB. */
	return pool_create(name, n, 8, socket, !rte_eal_has_hugepages(),
			   (uint16_t)SS_NIC_TSO_ROOM);
}

uint32_t ss_nic_tso_max(void)
{
	uint32_t room = SS_NIC_TSO_ROOM - RTE_PKTMBUF_HEADROOM - SS_ETH_HDR_LEN -
			SS_IPV4_HDR_MIN - SS_TCP_HDR_MAX;
	uint32_t ip = 0xffff - SS_IPV4_HDR_MIN - SS_TCP_HDR_MAX; /* IPv4's total length */
	return room < ip ? room : ip;
}

struct umem_check {
	uintptr_t base;      /* the PMD's UMEM start: first chunk, page-aligned down */
	uint64_t size;       /* the PMD's UMEM length */
	uint64_t frame;      /* its chunk size: one whole object */
	unsigned outside;    /* objects the kernel would refuse */
};

static void umem_check_obj(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	(void)idx;
	struct umem_check *c = arg;
	uint64_t addr = (uint64_t)((uintptr_t)obj - c->base) - mp->header_size;
	if ((uintptr_t)obj < c->base + mp->header_size || addr + c->frame > c->size)
		c->outside++;
}

unsigned ss_nic_umem_outside(struct rte_mempool *mp)
{
	struct rte_mempool_memhdr *first = STAILQ_FIRST(&mp->mem_list);
	if (!first)
		return mp->size;
	uintptr_t addr = (uintptr_t)first->addr;
	uintptr_t base = addr & ~((uintptr_t)getpagesize() - 1);
	struct umem_check c = {
		.base = base,
		.frame = rte_mempool_calc_obj_size(mp->elt_size, mp->flags, NULL),
	};
	c.size = (uint64_t)mp->populated_size * c.frame + (addr - base);
	rte_mempool_obj_iter(mp, umem_check_obj, &c);
	return c.outside;
}
