/* nic_wake.c - a queue's wake-ups by wait mode: socket, RX interrupt, memif's protocol, timed naps (see nic_wake.h). */
#include "nic/nic_wake.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "nic/nic.h"
#include "util/log.h"

#define LINK_CHECK_NS (10 * 1000 * 1000ull) /* memif: look for the peer's (dis)connection */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void drain(const struct ss_nic_wake *w, int fd)
{
	int rc = ss_nic_eventfd_drain(fd);
	if (rc < 0)
		SS_WARN("eventfd %d: %s", fd, strerror(-rc));
}

void ss_nic_wake_init(struct ss_nic_wake *w, const struct ss_nic *nic, uint16_t q, uint64_t now)
{
	memset(w, 0, sizeof(*w));
	w->nic = nic;
	w->port = nic->port_id;
	w->queue = q;
	w->mode = nic->wait_mode;
	w->fd = nic->wait_fd[q];
	/* An RX interrupt fd that is an eventfd (MSI-X, VFIO) counts and must
	 * be read to re-arm; another (TAP's queue) is drained by the RX burst
	 * itself. */
	w->fd_counts = w->mode == SS_NIC_WAIT_RX_INTR && ss_nic_fd_is_eventfd(w->fd);
	w->link_up = true;
	w->link_next_ns = UINT64_MAX;
	w->memif_rx_fd = w->memif_tx_fd = w->memif_rx_src = w->memif_tx_src = -1;
	if (nic->kind == SS_NIC_KIND_MEMIF)
		ss_nic_wake_link_check(w, now);
}

void ss_nic_wake_fini(struct ss_nic_wake *w)
{
	if (w->armed)
		ss_nic_wake_disarm(w);
	ss_nic_fd_track(&w->memif_rx_fd, &w->memif_rx_src, -1);
	ss_nic_fd_track(&w->memif_tx_fd, &w->memif_tx_src, -1);
}

/*
 * memif: the link's state and the queue's eventfds.  The PMD makes them
 * when the peer connects and closes them when it goes; this thread holds
 * duplicates, so a closed and reused fd number is never written.
 */
void ss_nic_wake_link_check(struct ss_nic_wake *w, uint64_t now)
{
	w->link_next_ns = now + LINK_CHECK_NS;
	bool up = ss_nic_link_up(w->port);
	if (up != w->link_up)
		SS_INFO("port %u queue %u: link %s", w->port, w->queue, up ? "up" : "down");
	w->link_up = up;
	int rx = -1, tx = -1;
	if (up)
		ss_nic_memif_fds(w->nic, w->queue, &rx, &tx);
	ss_nic_fd_track(&w->memif_rx_fd, &w->memif_rx_src, rx);
	ss_nic_fd_track(&w->memif_tx_fd, &w->memif_tx_src, tx);
}

void ss_nic_wake_tx_refused(struct ss_nic_wake *w)
{
	if (w->link_next_ns != UINT64_MAX)
		ss_nic_wake_link_check(w, now_ns());
}

bool ss_nic_wake_arm(struct ss_nic_wake *w, uint64_t now)
{
	bool armed = false;
	switch (w->mode) {
	case SS_NIC_WAIT_RX_INTR:
		armed = rte_eth_dev_rx_intr_enable(w->port, w->queue) == 0;
		break;
	case SS_NIC_WAIT_MEMIF: {
		/* Clear our RX ring's MASK_INT flag, so that the peer rings
		 * after sending (memif_ring.h); the caller then polls once
		 * more.  While the flag is clear the PMD's RX burst reads the
		 * eventfd itself, which forgets rings from before the sleep.
		 * Without the ring (layout not recognised) the peer rings
		 * after every burst: forget those here. */
		ss_nic_wake_link_check(w, now);
		volatile struct ss_memif_ring_hdr *ring = ss_nic_memif_ring(w->nic, w->queue, true);
		w->memif_unmasked = ring != NULL;
		if (ring)
			ss_memif_rx_arm(ring);
		else
			drain(w, w->memif_rx_fd);
		armed = true;
		break;
	}
	default:
		break;
	}
	w->armed = armed;
	return armed;
}

void ss_nic_wake_disarm(struct ss_nic_wake *w)
{
	if (w->memif_unmasked) {
		/* Polling again: no rings wanted.  A ring that came after
		 * the sleep stays in the eventfd until the next arm's poll.
		 * Looked up again: the peer may have gone (and its rings
		 * with it) while we slept. */
		volatile struct ss_memif_ring_hdr *ring = ss_nic_memif_ring(w->nic, w->queue, true);
		if (ring)
			ss_memif_rx_disarm(ring);
		w->memif_unmasked = false;
	}
	if (w->mode == SS_NIC_WAIT_RX_INTR) {
		rte_eth_dev_rx_intr_disable(w->port, w->queue);
		if (w->fd_counts)
			drain(w, w->fd);
	}
	w->armed = false;
}

struct ss_nic_wait_plan ss_nic_wake_plan(const struct ss_nic_wake *w, uint64_t wait_ns)
{
	int fd = w->mode == SS_NIC_WAIT_MEMIF ? w->memif_rx_fd : w->fd;
	return ss_nic_wait_plan(w->mode, fd, wait_ns);
}

/*
 * memif, before a TX burst: the peer's RX ring as it was (see
 * ss_nic_wake_kick()).  Without the ring (layout not recognised), none:
 * every burst rings.
 */
void ss_nic_wake_tx_mark_memif(const struct ss_nic_wake *w, struct ss_nic_tx_mark *m)
{
	m->ring = ss_nic_memif_ring(w->nic, w->queue, false);
	if (m->ring)
		m->before = ss_memif_tx_mark(m->ring);
}

/*
 * memif, after a TX burst that sent frames: rings the peer if it sleeps on
 * its RX ring, i.e. the ring's MASK_INT flag is clear, and the PMD's burst
 * has not rung it already.  The PMD rings when it sees the flag clear, but
 * it reads the flag right after publishing the ring's new head with no
 * full barrier between, so it can miss a peer that cleared the flag and
 * then saw the old head.  ss_memif_tx_check()'s fence closes that: the
 * peer fences between the same two steps (ss_memif_rx_arm()), so either it
 * sees our frames or we see its flag clear.  Clear before the burst and
 * clear now within the same arming, the flag was clear when the PMD
 * looked: it rang.  A polling peer is not rung.  Without the ring every
 * burst rings.
 */
enum ss_nic_tx_wake ss_nic_wake_kick(struct ss_nic_wake *w, const struct ss_nic_tx_mark *m)
{
	if (m->ring) {
		switch (ss_memif_tx_check(m->ring, m->before)) {
		case SS_MEMIF_PEER_POLLING:
			return SS_NIC_TX_WAKE_PEER_POLLING;
		case SS_MEMIF_PMD_RANG:
			return SS_NIC_TX_WAKE_PMD_RANG;
		case SS_MEMIF_RING_PEER:
			break;
		}
	}
	uint64_t one = 1;
	if (write(w->memif_tx_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		return SS_NIC_TX_WAKE_KICKED;
	return SS_NIC_TX_WAKE_KICK_FAILED;
}
