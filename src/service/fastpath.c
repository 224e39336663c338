/* fastpath.c - the per-queue packet loop: burst in, answer in place, burst out, block when idle. */
#include "service/fastpath.h"

#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "nic/nic.h"
#include "nic/nic_wake.h"
#include "service/fp_internal.h"
#include "util/log.h"
#include "stack/stack.h"

#define GW_ARP_FIRST_NS (1000 * SS_NS_PER_MS)
#define GW_ARP_MAX_NS (30000 * SS_NS_PER_MS)

static bool stopping(const struct ss_fastpath *fp)
{
	return __atomic_load_n(fp->stop, __ATOMIC_ACQUIRE);
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
	if (gap_ns >= SS_NS_PER_MS)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_rx_gap_1ms);
	if (gap_ns >= 10 * SS_NS_PER_MS)
		ss_ctr_inc(&fp->ctr, SS_CTR_fp_rx_gap_10ms);
}

/* The round's clock (the stack's too), and the gap since the last round. */
static uint64_t round_start(struct ss_fastpath *fp, struct ss_fp_rounds *r)
{
	uint64_t now = ss_fp_now_ns();
	if (r->last)
		count_gap(fp, now - r->last);
	r->last = now;
	if (fp->stack)
		fp->stack->now_us = now / 1000;
	return now;
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
		ss_fp_tx_add(fp, m);
	}
	fp->gw_next_ns = now + fp->gw_backoff_ns;
	fp->gw_backoff_ns = fp->gw_backoff_ns * 2 > GW_ARP_MAX_NS ? GW_ARP_MAX_NS
								 : fp->gw_backoff_ns * 2;
}

/* The stack's round: commands, timers, output, events; true if it did any work. */
static bool stack_round(struct ss_fastpath *fp, uint64_t now)
{
	return fp->stack && ss_stack_round(fp->stack, now / 1000);
}

static void start(struct ss_fastpath *fp)
{
	uint64_t now = ss_fp_now_ns();

	fp->gw_next_ns = now;
	fp->gw_backoff_ns = GW_ARP_FIRST_NS;
	fp->tx_flush_at = SS_FP_TXQ;
	ss_nic_wake_init(&fp->wake, fp->nic, fp->queue, now);
	/* Timed sleeps end within 1 us, not the default 50 us of slack: the
	 * pacer's departures are timed sleeps. */
	if (prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) != 0)
		SS_WARN("fast path %u: timer slack: %s", fp->id, strerror(errno));
	SS_INFO("fast path %u: serving port %u (%s) queue %u on lcore %u, idle waits by %s",
		fp->id, fp->port, ss_nic_kind_name(fp->nic->kind), fp->queue, rte_lcore_id(),
		ss_nic_wait_mode_name(fp->wake.mode));
}

static void finish(struct ss_fastpath *fp)
{
	if (ss_nic_wake_armed(&fp->wake))
		ss_nic_wake_disarm(&fp->wake);
	ss_fp_tx_drop_all(fp);
	ss_nic_wake_fini(&fp->wake);
	SS_INFO("fast path %u: stopped", fp->id);
}

int ss_fastpath_run(void *arg)
{
	struct ss_fastpath *fp = arg;
	struct ss_fp_rounds r = { 0 };

	start(fp);
	while (!stopping(fp)) {
		uint64_t now = round_start(fp, &r);
		ss_nic_wake_tick(&fp->wake, now);     /* memif: the peer's link */
		gateway_tick(fp, now);
		unsigned rx = ss_fp_rx(fp);            /* fp_rx.c */
		bool did = rx > 0;
		did |= stack_round(fp, now);
		ss_fp_tx_flush(fp);                    /* fp_tx.c */
		if (did)
			ss_fp_busy(fp, &r, rx);        /* fp_idle.c */
		else
			ss_fp_idle(fp, &r, now);
	}
	finish(fp);
	return 0;
}
