/* fastpath.c - the per-queue packet loop: burst in, answer in place, burst out, block when idle. */
#include "service/fastpath.h"

#include <errno.h>
#include <sched.h>
#include <poll.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "service/log.h"
#include "service/stack.h"
#include "wire/eth.h"
#include "wire/ipv4.h"

#define NS_PER_MS 1000000ull
#define GW_ARP_FIRST_NS (1000 * NS_PER_MS)
#define GW_ARP_MAX_NS (30000 * NS_PER_MS)
#define TIMED_SLEEP_NS (200 * 1000)     /* no wake-up source: 200 us naps */
#define MAX_SLEEP_MS 1000               /* re-check the stop flag at least this often */

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

/* Sends the queued frames; frees and counts what the NIC would not take. */
static void txq_flush(struct ss_fastpath *fp)
{
	uint16_t n = (uint16_t)fp->ntx;
	if (n == 0)
		return;
	uint16_t sent = rte_eth_tx_burst(fp->port, fp->queue, fp->txq, n);
	uint64_t bytes = 0;
	for (uint16_t i = 0; i < sent; i++)
		bytes += fp->txq[i]->pkt_len;
	ss_ctr_add(&fp->ctr, SS_CTR_tx_packets, sent);
	ss_ctr_add(&fp->ctr, SS_CTR_tx_bytes, bytes);
	if (sent < n) {
		ss_ctr_add(&fp->ctr, SS_CTR_drop_tx_full, n - sent);
		rte_pktmbuf_free_bulk(fp->txq + sent, n - sent);
	}
	fp->ntx = 0;
}

static void txq_add(struct ss_fastpath *fp, struct rte_mbuf *m)
{
	if (fp->ntx == SS_FP_TXQ)
		txq_flush(fp);
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

static unsigned rx_flags_of(const struct rte_mbuf *m)
{
	unsigned f = 0;
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_GOOD)
		f |= SS_RX_IP_CSUM_GOOD;
	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		f |= SS_RX_L4_CSUM_GOOD;
	return f;
}

/* One RX burst; returns the number of frames received. */
static uint16_t poll_once(struct ss_fastpath *fp)
{
	struct rte_mbuf *rx[SS_FP_BURST];
	uint16_t n = rte_eth_rx_burst(fp->port, fp->queue, rx, SS_FP_BURST);

	if (n == 0)
		return 0;
	fp->proto.now_ns = now_ns();
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = rx[i];
		if (i + 1 < n)
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
 * one event per connection per round).
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

/* Blocks until RX has frames, a kick arrives, or the next timer is due. */
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

	ss_ctr_inc(&fp->ctr, SS_CTR_fp_sleeps);
	if (fp->wait_fd < 0) {
		struct timespec ts = { 0, (long)(wait_ns < TIMED_SLEEP_NS ? wait_ns : TIMED_SLEEP_NS) };
		nanosleep(&ts, NULL);
	} else {
		struct pollfd pfd[3] = {
			{ .fd = fp->wait_fd, .events = POLLIN },
			{ .fd = fp->kick_fd, .events = POLLIN },
			{ .fd = fp->doorbell_fd, .events = POLLIN },
		};
		/* ppoll: pacing and control intervals need wake-ups finer
		 * than poll()'s milliseconds. */
		struct timespec ts = { (time_t)(wait_ns / 1000000000u), (long)(wait_ns % 1000000000u) };
		if (ppoll(pfd, fp->doorbell_fd >= 0 ? 3 : 2, &ts, NULL) < 0 && errno != EINTR)
			SS_WARN("fast path %u: poll: %s", fp->id, strerror(errno));
		if (fp->doorbell_fd >= 0 && (pfd[2].revents & POLLIN)) {
			uint64_t v;
			if (read(fp->doorbell_fd, &v, sizeof(v)) < 0)
				ss_ctr_inc(&fp->ctr, SS_CTR_app_kick_failed);
		}
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
	bool light = false; /* the last round with frames had few (idle_yield) */

	fp->gw_next_ns = now_ns();
	fp->gw_backoff_ns = GW_ARP_FIRST_NS;
	/* Timed sleeps end within 1 us, not the default 50 us of slack: the
	 * pacer's departures are timed sleeps. */
	if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0)
		SS_WARN("fast path %u: timer slack: %s", fp->id, strerror(errno));
	SS_INFO("fast path %u: serving port %u queue %u on lcore %u", fp->id, fp->port,
		fp->queue, rte_lcore_id());
	uint64_t last = 0; /* start of the previous round; 0 after a sleep */
	while (!stopping(fp)) {
		uint64_t now = now_ns();
		if (last)
			count_gap(fp, now - last);
		last = now;
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
			idle = 0;
			continue;
		}
		/* Adaptive polling: a few empty polls catch back-to-back work
		 * cheaply; after that, block instead of spinning. */
		if (++idle >= fp->idle_polls) {
			if (!fp->stack || ss_stack_may_sleep(fp->stack)) {
				sleep_until_work(fp, now);
				last = 0;
				if (fp->stack)
					ss_stack_woke(fp->stack);
			}
			idle = 0;
		} else if (fp->idle_yield && light && !(fp->stack && ss_stack_pacing(fp->stack))) {
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
	SS_INFO("fast path %u: stopped", fp->id);
	return 0;
}
