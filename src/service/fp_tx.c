/* fp_tx.c - the fast path's transmit step: the TX queue, its bursts, frames the stack builds. */
#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "service/fp_internal.h"
#include "stack/stack.h"
#include "wire/eth.h"
#include "wire/ipv4.h"

/* After a TX burst: how the peer was woken, if it needed waking (memif). */
static void count_tx_wake(struct ss_fastpath *fp, enum ss_nic_tx_wake how)
{
	switch (how) {
	case SS_NIC_TX_WAKE_NONE:
		break;
	case SS_NIC_TX_WAKE_PEER_POLLING:
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_peer_polling);
		break;
	case SS_NIC_TX_WAKE_PMD_RANG:
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_peer_pmd_rang);
		break;
	case SS_NIC_TX_WAKE_KICKED:
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_peer_kicks);
		break;
	case SS_NIC_TX_WAKE_KICK_FAILED:
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_peer_kick_failed);
		break;
	}
}

/*
 * Sends the queued frames.  What the NIC would not take (its TX ring full:
 * a memif peer not keeping up) stays queued, in order, for the next burst
 * (tx_kept), unless the link is down (drop_tx_link_down: a memif peer not
 * connected).
 */
void ss_fp_tx_flush(struct ss_fastpath *fp)
{
	uint16_t n = (uint16_t)fp->ntx;
	if (n == 0)
		return;
	struct ss_nic_tx_mark mark;
	ss_nic_wake_tx_begin(&fp->wake, &mark);
	uint16_t sent = rte_eth_tx_burst(fp->port, fp->queue, fp->txq, n);
	uint64_t bytes = 0;
	for (uint16_t i = 0; i < sent; i++)
		bytes += fp->txq[i]->pkt_len;
	ss_ctr_add(&fp->ctr, SS_CTR_tx_packets, sent);
	ss_ctr_add(&fp->ctr, SS_CTR_tx_bytes, bytes);
	count_tx_wake(fp, ss_nic_wake_tx_done(&fp->wake, &mark, sent));
	fp->tx_flush_at = SS_FP_TXQ;
	fp->ntx = 0;
	if (sent == n) {
		fp->nkept = 0;
		return;
	}
	if (sent == 0)
		ss_nic_wake_tx_refused(&fp->wake);
	if (!ss_nic_wake_link_up(&fp->wake)) {
		ss_ctr_add(&fp->ctr, SS_CTR_drop_tx_link_down, n - sent);
		rte_pktmbuf_free_bulk(fp->txq + sent, n - sent);
		fp->nkept = 0;
		return;
	}
	/* tx_ring_full: bursts that left frames; tx_kept: frames kept for
	 * the first time (those kept before are at the front). */
	unsigned again = fp->nkept > sent ? fp->nkept - sent : 0;
	ss_ctr_inc(&fp->ctr, SS_CTR_tx_ring_full);
	ss_ctr_add(&fp->ctr, SS_CTR_tx_kept, n - sent - again);
	fp->ntx = ss_txq_keep((void **)fp->txq, n, sent);
	fp->nkept = fp->ntx;
	/* The next try once a burst's worth more is queued (or next round). */
	fp->tx_flush_at = RTE_MIN(fp->ntx + SS_FP_TXQ, SS_FP_TXQ_MAX);
}

void ss_fp_tx_drop_all(struct ss_fastpath *fp)
{
	if (fp->ntx) {
		ss_ctr_add(&fp->ctr, SS_CTR_drop_tx_full, fp->ntx);
		rte_pktmbuf_free_bulk(fp->txq, fp->ntx);
		fp->ntx = fp->nkept = 0;
	}
}

uint8_t *ss_fastpath_frame_alloc(void *arg, void **handle, size_t *cap)
{
	struct ss_fastpath *fp = arg;
	struct rte_mbuf *m = rte_pktmbuf_alloc(fp->pool);
	if (!m)
		return NULL;
	*handle = m;
	*cap = rte_pktmbuf_tailroom(m);
	return rte_pktmbuf_mtod(m, uint8_t *);
}

void ss_fastpath_frame_send(void *arg, void *handle, size_t len, unsigned flags)
{
	struct ss_fastpath *fp = arg;
	struct rte_mbuf *m = handle;
	if (len == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	if (flags & SS_TX_CSUM) {
		/* IPv4 field 0, TCP field the pseudo-header sum (stack.h). */
		m->ol_flags = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_TCP_CKSUM;
		m->l2_len = SS_ETH_HDR_LEN;
		m->l3_len = SS_IPV4_HDR_MIN;
	}
	ss_fp_tx_add(fp, m);
}

uint8_t *ss_fastpath_frame_alloc_tso(void *arg, void **handle, size_t *cap)
{
	struct ss_fastpath *fp = arg;
	struct rte_mbuf *m = fp->tso_pool ? rte_pktmbuf_alloc(fp->tso_pool) : NULL;
	if (!m)
		return NULL;
	*handle = m;
	*cap = rte_pktmbuf_tailroom(m);
	return rte_pktmbuf_mtod(m, uint8_t *);
}

/* A TSO segment (stack.h): both checksums and the cutting to the port. */
void ss_fastpath_frame_send_tso(void *arg, void *handle, size_t len, unsigned l4_len, unsigned mss)
{
	struct ss_fastpath *fp = arg;
	struct rte_mbuf *m = handle;
	m->data_len = (uint16_t)len;
	m->pkt_len = (uint32_t)len;
	m->ol_flags = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_TCP_CKSUM |
		      RTE_MBUF_F_TX_TCP_SEG;
	m->l2_len = SS_ETH_HDR_LEN;
	m->l3_len = SS_IPV4_HDR_MIN;
	m->l4_len = l4_len;
	unsigned hdrs = SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + l4_len;
	if (mss + hdrs > fp->tso_frame_max) /* its payload then under the MSS */
		mss = fp->tso_frame_max - hdrs;
	m->tso_segsz = (uint16_t)mss;
	ss_fp_tx_add(fp, m);
}
