/* fp_rx.c - the fast path's receive step: RX bursts, look-ahead, each frame answered in place or to the stack. */
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "service/fp_internal.h"
#include "stack/stack.h"

static unsigned rx_flags_of(const struct rte_mbuf *m)
{
	unsigned f = 0;
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		f |= SS_RX_IP_CSUM_GOOD;
	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		f |= SS_RX_L4_CSUM_GOOD;
	return f;
}

/*
 * Burst processing (ss_stack_rx_prefetch()): every frame's headers are
 * prefetched, then the TCP segments' 4-tuples go to the stack, which
 * prefetches their flow-table slots and, a few segments ahead, their
 * connections.  Frame by frame, each of these was a cache miss in turn,
 * and with many connections the flow-table slots alone were a large part
 * of the service's time.
 */
_Static_assert(SS_FP_BURST <= SS_STACK_RX_AHEAD, "a burst's keys fit the stack's look-ahead");

static void rx_ahead(struct ss_fastpath *fp, struct rte_mbuf **rx, uint16_t n)
{
	struct ss_flow_key keys[SS_FP_BURST];
	unsigned nk = 0;

	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0(rte_pktmbuf_mtod(rx[i], void *));
	for (uint16_t i = 0; i < n; i++)
		if (rx[i]->nb_segs == 1 &&
		    ss_proto_peek_tcp(rte_pktmbuf_mtod(rx[i], uint8_t *), rx[i]->data_len, &keys[nk]))
			nk++;
	ss_stack_rx_prefetch(fp->stack, keys, nk);
}

/* One RX burst; returns the number of frames received. */
static uint16_t poll_once(struct ss_fastpath *fp)
{
	struct rte_mbuf *rx[SS_FP_BURST];
	uint16_t n = rte_eth_rx_burst(fp->port, fp->queue, rx, SS_FP_BURST);

	if (n == 0)
		return 0;
	fp->proto.now_ns = ss_fp_now_ns();
	bool ahead = fp->stack && n > 1 && ss_stack_rx_ahead_wanted(fp->stack);

	if (ahead)
		rx_ahead(fp, rx, n);
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		if (!ahead && i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(rx[i + 1], void *));
		if (m->nb_segs != 1) {
			ss_ctr_inc(&fp->ctr, SS_CTR_rx_packets);
			ss_ctr_inc(&fp->ctr, SS_CTR_drop_rx_chained);
			rte_pktmbuf_free(m);
			continue;
		}
		uint8_t *frame = rte_pktmbuf_mtod(m, uint8_t *);
		size_t cap = (size_t)m->data_len + rte_pktmbuf_tailroom(m);
		size_t out = ss_proto_input(&fp->proto, frame, m->data_len, cap, rx_flags_of(m));
		if (out == 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		m->data_len = (uint16_t)out;
		m->pkt_len = (uint32_t)out;
		m->ol_flags = 0;
		ss_fp_tx_add(fp, m);
	}
	return n;
}

/*
 * RX bursts until the queue is empty or the round's budget is spent.  One
 * burst per round took SS_FP_BURST frames while the round's commands could
 * send many more (and the peer answers each at once): the receive rings
 * filled and dropped.  Draining first also lets the round coalesce more
 * (one ACK and one event per connection per round).  The budget
 * (--rx-budget) bounds how far apart a segment's receive and its round's
 * flush and events are: with a larger one and many connections, a round's
 * connections' lines leave the caches before its flush.
 */
unsigned ss_fp_rx(struct ss_fastpath *fp)
{
	uint32_t total = 0;
	for (;;) {
		uint16_t n = poll_once(fp);
		total += n;
		if (n < SS_FP_BURST || total >= fp->rx_budget)
			return total;
	}
}
