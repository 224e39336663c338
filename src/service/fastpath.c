/* fastpath.c - the per-queue packet loop: burst in, answer in place, burst out, block when idle. */
#include "service/fastpath.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "stack/log.h"
#include "nic/nic.h"
#include "nic/nic_wake.h"
#include "stack/stack.h"
#include "wire/eth.h"
#include "wire/ipv4.h"

#define NS_PER_MS 1000000ull
#define GW_ARP_FIRST_NS (1000 * NS_PER_MS)
#define GW_ARP_MAX_NS (30000 * NS_PER_MS)
#define MAX_SLEEP_MS 1000               /* re-check the stop flag at least this often */
#define TX_RETRY_NS (50 * 1000)         /* frames kept for a full TX ring: retry after */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool stopping(const struct ss_fastpath *fp)
{
	return __atomic_load_n(fp->stop, __ATOMIC_ACQUIRE);
}

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
static void txq_flush(struct ss_fastpath *fp)
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

static void txq_add(struct ss_fastpath *fp, struct rte_mbuf *m)
{
	if (fp->ntx >= fp->tx_flush_at)
		txq_flush(fp);
	if (fp->ntx == SS_FP_TXQ_MAX) {
		/* The ring stayed full for SS_FP_TXQ_MAX frames. */
		ss_ctr_inc(&fp->ctr, SS_CTR_drop_tx_full);
		rte_pktmbuf_free(m);
		return;
	}
	fp->txq[fp->ntx++] = m;
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
	txq_add(fp, m);
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
	txq_add(fp, m);
}

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
 * connections.  Frame by frame, each of these was a miss in turn: at 1024
 * connections the flow-table slot alone was 11 % of the service's time.
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
	fp->proto.now_ns = now_ns();
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
		txq_add(fp, m);
	}
	return n;
}

/*
 * RX bursts until the queue is empty or the round's budget is spent.  One
 * burst per round took 32 frames while the round's commands could send up
 * to 256 (and the peer answers each at once): the receive rings filled and
 * dropped.  Draining first also lets the round coalesce more (one ACK and
 * one event per connection per round).  The budget (--rx-budget, 128 by
 * default) bounds how far apart a segment's receive and its round's flush
 * and events are.  At 512, both ends at 1024 connections reached a median
 * 5.36x Linux's throughput against 6.48x at 128, likely because a round's
 * connections' lines left the caches before its flush (docs/benchmarks.md,
 * "A smaller receive budget").
 */
static uint32_t poll_rx(struct ss_fastpath *fp)
{
	uint32_t total = 0;
	for (;;) {
		uint16_t n = poll_once(fp);
		total += n;
		if (n < SS_FP_BURST || total >= fp->rx_budget)
			return total;
	}
}

/* Thread 0: ARP for the gateway until the cache has it, backing off. */
static void gateway_tick(struct ss_fastpath *fp, uint64_t now)
{
	uint8_t mac[6];

	if (fp->gateway == 0 || now < fp->gw_next_ns)
		return;
	if (ss_arp_cache_lookup(fp->proto.arp, fp->gateway, mac, NULL)) {
		fp->gateway = 0; /* resolved; refreshes come with its traffic */
		return;
	}
	struct rte_mbuf *m = rte_pktmbuf_alloc(fp->pool);
	if (!m) {
		ss_ctr_inc(&fp->ctr, SS_CTR_drop_no_mbuf);
	} else {
		size_t len = ss_proto_build_arp_request(&fp->proto, rte_pktmbuf_mtod(m, uint8_t *),
							rte_pktmbuf_tailroom(m), fp->gateway);
		m->data_len = (uint16_t)len;
		m->pkt_len = (uint32_t)len;
		ss_ctr_inc(&fp->ctr, SS_CTR_tx_arp_request);
		txq_add(fp, m);
	}
	fp->gw_next_ns = now + fp->gw_backoff_ns;
	fp->gw_backoff_ns = fp->gw_backoff_ns * 2 > GW_ARP_MAX_NS ? GW_ARP_MAX_NS
								 : fp->gw_backoff_ns * 2;
}

/* --idle-yield: yield while idle only after light rounds (at most this
 * many frames): at one connection the application and the kernel's
 * receive thread need the CPU now; under load, yielding cuts batches. */
#define YIELD_MAX_RX 2

/* The pacer holds segments: no yield, which could give the CPU away for
 * a whole time slice and send paced departures late. */
static inline bool pacing(const struct ss_fastpath *fp)
{
	return fp->stack && ss_stack_pacing(fp->stack);
}

/* Blocks until RX has frames, a kick or a doorbell arrives, or the next timer is due. */
static void sleep_until_work(struct ss_fastpath *fp, uint64_t now)
{
	uint64_t wait_ns = (uint64_t)MAX_SLEEP_MS * NS_PER_MS;
	if (fp->gateway)
		wait_ns = fp->gw_next_ns <= now ? 0 : RTE_MIN(wait_ns, fp->gw_next_ns - now);
	if (fp->stack) {
		uint64_t next_us = ss_stack_next_deadline(fp->stack);
		if (next_us != UINT64_MAX) {
			uint64_t next = next_us * 1000;
			wait_ns = next <= now ? 0 : RTE_MIN(wait_ns, next - now);
		}
	}
	if (fp->ntx) {
		/* Frames kept for a full TX ring: the peer frees slots
		 * without telling us, so try again soon. */
		wait_ns = RTE_MIN(wait_ns, (uint64_t)TX_RETRY_NS);
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_tx_waits);
	}
	struct ss_nic_wait_plan plan = ss_nic_wake_plan(&fp->wake, wait_ns);
	int fds[2] = { fp->kick_fd, fp->doorbell_fd };
	unsigned nfds = fp->doorbell_fd >= 0 ? 2 : 1, ready;
	if (plan.napped) /* no peer yet: nothing would wake us when it comes */
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_link_naps);

	ss_ctr_inc(&fp->ctr, SS_CTR_fp_sleeps);
	int rc = ss_nic_wake_wait(&plan, fds, nfds, &ready);
	if (rc < 0)
		SS_WARN("fast path %u: poll: %s", fp->id, strerror(-rc));
	if (ready & 2u) {
		uint64_t v;
		if (read(fp->doorbell_fd, &v, sizeof(v)) < 0)
			ss_ctr_inc(&fp->ctr, SS_CTR_app_kick_failed);
	}
	ss_ctr_inc(&fp->ctr, SS_CTR_fp_wakeups);
}

/*
 * How long the RX queue went unpolled while the thread was awake: the
 * previous round's own work (commands, timers, transmit) plus any time the
 * thread was preempted.  Frames that arrive meanwhile wait in the rings
 * below (nic_stats.h), which overflow if this is long.
 */
static void count_gap(struct ss_fastpath *fp, uint64_t gap_ns)
{
	if (gap_ns < 100 * 1000)
		return;
	ss_ctr_inc(&fp->ctr, SS_CTR_fp_rx_gap_100us);
	if (gap_ns >= NS_PER_MS)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_rx_gap_1ms);
	if (gap_ns >= 10 * NS_PER_MS)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_rx_gap_10ms);
}

int ss_fastpath_run(void *arg)
{
	struct ss_fastpath *fp = arg;
	uint32_t idle = 0;
	uint64_t idle_since = 0; /* the first empty round of this idle spell */
	bool light = false; /* the last round with frames had few (idle_yield) */

	fp->gw_next_ns = now_ns();
	fp->gw_backoff_ns = GW_ARP_FIRST_NS;
	fp->tx_flush_at = SS_FP_TXQ;
	ss_nic_wake_init(&fp->wake, fp->nic, fp->queue, fp->gw_next_ns);
	/* Timed sleeps end within 1 us, not the default 50 us of slack: the
	 * pacer's departures are timed sleeps. */
	if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0)
		SS_WARN("fast path %u: timer slack: %s", fp->id, strerror(errno));
	SS_INFO("fast path %u: serving port %u (%s) queue %u on lcore %u, idle waits by %s",
		fp->id, fp->port, ss_nic_kind_name(fp->nic->kind), fp->queue, rte_lcore_id(),
		ss_nic_wait_mode_name(fp->wake.mode));
	uint64_t last = 0; /* start of the previous round; 0 after a sleep */
	uint32_t busy_rx = 0; /* frames since the last empty round or busy yield */
	while (!stopping(fp)) {
		uint64_t now = now_ns();
		if (last)
			count_gap(fp, now - last);
		last = now;
		ss_nic_wake_tick(&fp->wake, now); /* memif: the peer's link */
		gateway_tick(fp, now);
		if (fp->stack)
			fp->stack->now_us = now / 1000;
		unsigned rx = poll_rx(fp);
		bool did = rx > 0;
		if (did)
			light = rx <= YIELD_MAX_RX;
		if (fp->stack)
			did |= ss_stack_round(fp->stack, now / 1000);
		txq_flush(fp);
		if (did) {
			if (ss_nic_wake_armed(&fp->wake))
				ss_nic_wake_disarm(&fp->wake);
			idle = 0;
			busy_rx += rx;
			if (fp->busy_yield && busy_rx >= fp->busy_yield && !pacing(fp)) {
				/* A long busy spell on a shared CPU: the
				 * application's events wait until the
				 * scheduler preempts us, thousands of
				 * requests later, when every line they name
				 * has left the cache.  Let it take them now
				 * (--busy-yield; not while pacing, as below). */
				busy_rx = 0;
				ss_ctr_inc(&fp->ctr, SS_CTR_fp_busy_yields);
				sched_yield();
			}
			continue;
		}
		busy_rx = 0;
		/* Adaptive polling: a few empty polls catch back-to-back work
		 * cheaply; after that, block instead of spinning.  How many
		 * follows how long the idle spells last (idle_poll.h). */
		if (idle++ == 0)
			idle_since = now;
		if (idle >= fp->idle.limit) {
			if (!fp->stack || ss_stack_may_sleep(fp->stack)) {
				/* Wake-up on, then one more round before sleeping. */
				if (!ss_nic_wake_armed(&fp->wake) &&
				    ss_nic_wake_arm(&fp->wake, now))
					continue;
				sleep_until_work(fp, now);
				int adapt = fp->idle_adapt ? ss_idle_poll_spell(&fp->idle, idle,
										now - idle_since,
										now_ns() - now)
							   : 0;
				if (adapt > 0)
					ss_ctr_inc(&fp->ctr, SS_CTR_fp_idle_polls_grown);
				else if (adapt < 0)
					ss_ctr_inc(&fp->ctr, SS_CTR_fp_idle_polls_shrunk);
				if (ss_nic_wake_armed(&fp->wake))
					ss_nic_wake_disarm(&fp->wake);
				last = 0;
				if (fp->stack)
					ss_stack_woke(fp->stack);
			}
			idle = 0;
		} else if (fp->idle_yield && light && !pacing(fp)) {
			/* Sharing the CPU with the application (and the
			 * kernel's receive thread): let them run now, the
			 * reply comes sooner than after a sleep and a wake-up.
			 * Not while the pacer holds segments: a yield can give
			 * the CPU away for a whole time slice, and departures
			 * would leave late (a capped flow's slow start lost
			 * 15 % of its first second). */
			sched_yield();
		}
	}
	if (ss_nic_wake_armed(&fp->wake))
		ss_nic_wake_disarm(&fp->wake);
	if (fp->ntx) {
		ss_ctr_add(&fp->ctr, SS_CTR_drop_tx_full, fp->ntx);
		rte_pktmbuf_free_bulk(fp->txq, fp->ntx);
		fp->ntx = fp->nkept = 0;
	}
	ss_nic_wake_fini(&fp->wake);
	SS_INFO("fast path %u: stopped", fp->id);
	return 0;
}
