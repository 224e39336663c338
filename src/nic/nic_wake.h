/* nic_wake.h - a queue's wake-ups: arm them, wait for work, disarm, whatever the kind of port. */
#ifndef SS_NIC_WAKE_H
#define SS_NIC_WAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "nic/memif_ring.h"
#include "nic/nic_kind.h"
#include "nic/nic_wait.h"

struct ss_nic;

/*
 * One queue's wake-ups, held by the thread that polls the queue.  A thread
 * that found no work for a while arms them (ss_nic_wake_arm()), polls once
 * more (frames that came before the arming raise nothing), then waits
 * (ss_nic_wake_wait()) and disarms when it polls again
 * (ss_nic_wake_disarm()).  How depends on the port's wait mode (nic_kind.h):
 *
 *   socket-poll   AF_XDP, AF_PACKET: the queue's kernel socket is readable
 *                 when frames wait; nothing to arm.
 *   rx-interrupt  rte_eth_dev_rx_intr_enable() before the wait, disable
 *                 after; an eventfd that counts is read to re-arm it.
 *   memif         the memif protocol: the receiver clears its RX ring's
 *                 MASK_INT flag (memif_ring.h) and sleeps on the queue's
 *                 eventfd, which the sender rings after a TX burst
 *                 (ss_nic_wake_tx_begin() and ss_nic_wake_tx_done()).  The
 *                 eventfds come and go with the peer: the link is watched.
 *   timed-sleep   no wake-up source: short naps.
 *
 * Everything else of the queue (bursts, pools) is the caller's.
 */
struct ss_nic_wake {
	const struct ss_nic *nic;
	uint16_t port;
	uint16_t queue;
	enum ss_nic_wait_mode mode;
	int fd;                 /* socket-poll, rx-interrupt: the queue's fd; -1: none */
	bool fd_counts;         /* rx-interrupt: the fd is an eventfd, read it to re-arm */
	bool armed;             /* armed for the coming wait */

	/* memif: the link, and the queue's eventfds (our duplicates of the
	 * PMD's, which come and go with the peer), -1 while unconnected. */
	bool link_up;           /* always, but on memif */
	uint64_t link_next_ns;  /* next link check; UINT64_MAX: none (not memif) */
	int memif_rx_fd, memif_tx_fd;
	int memif_rx_src, memif_tx_src;  /* the PMD's fds they duplicate */
	bool memif_unmasked;    /* armed: our RX ring's MASK_INT flag is clear */
};

/* Queue @q of @nic at @now (CLOCK_MONOTONIC ns); ss_nic_wake_fini() ends it. */
void ss_nic_wake_init(struct ss_nic_wake *w, const struct ss_nic *nic, uint16_t q, uint64_t now);
/* Disarms if armed, closes what ss_nic_wake_init() and the link checks opened. */
void ss_nic_wake_fini(struct ss_nic_wake *w);

/* memif: looks at the link (the peer's connection) and the eventfds now. */
void ss_nic_wake_link_check(struct ss_nic_wake *w, uint64_t now);

/* Each round: the link checks that are due (memif, every few ms). */
static inline void ss_nic_wake_tick(struct ss_nic_wake *w, uint64_t now)
{
	if (now >= w->link_next_ns)
		ss_nic_wake_link_check(w, now);
}

/* The link is up (memif: the peer is connected; other ports: always). */
static inline bool ss_nic_wake_link_up(const struct ss_nic_wake *w)
{
	return w->link_up;
}

/*
 * Before a wait: turns the queue's wake-up on.  Returns true if it did
 * (the caller then polls once more before waiting), false if this wait
 * mode has nothing to arm.
 */
bool ss_nic_wake_arm(struct ss_nic_wake *w, uint64_t now);

static inline bool ss_nic_wake_armed(const struct ss_nic_wake *w)
{
	return w->armed;
}

/* After a wait, or when work came after the arming: polling again. */
void ss_nic_wake_disarm(struct ss_nic_wake *w);

/*
 * The coming wait, for at most @wait_ns (nic_wait.h): the queue's fd to
 * poll, and whether the wait is a nap for want of one (plan.napped:
 * memif without a peer; plan.timed: a port without wake-up source).
 */
struct ss_nic_wait_plan ss_nic_wake_plan(const struct ss_nic_wake *w, uint64_t wait_ns);

/*
 * Waits for work as @plan says: frames on the queue, one of the caller's
 * @fds (@nfds, at most SS_NIC_WAIT_FDS) readable, or the plan's time
 * passed; a timed plan polls none of @fds.  Sets bit i of *ready for each
 * readable fds[i].  Returns 0 or -errno.
 */
static inline int ss_nic_wake_wait(const struct ss_nic_wait_plan *plan, const int *fds,
				   unsigned nfds, unsigned *ready)
{
	return ss_nic_wait_block(plan, fds, nfds, ready);
}

/* memif after a TX burst: who rang the peer, if anyone needed to. */
enum ss_nic_tx_wake {
	SS_NIC_TX_WAKE_NONE,         /* nothing to do (not memif, or nothing sent) */
	SS_NIC_TX_WAKE_PEER_POLLING, /* the peer polls: no ring */
	SS_NIC_TX_WAKE_PMD_RANG,     /* the PMD's burst rang it */
	SS_NIC_TX_WAKE_KICKED,       /* rung here */
	SS_NIC_TX_WAKE_KICK_FAILED,  /* rung here, and the write failed */
};

/* What a TX burst's caller keeps from ss_nic_wake_tx_begin() to ss_nic_wake_tx_done(). */
struct ss_nic_tx_mark {
	volatile struct ss_memif_ring_hdr *ring; /* memif: the peer's RX ring; NULL: none */
	struct ss_memif_tx_mark before;
};

void ss_nic_wake_tx_mark_memif(const struct ss_nic_wake *w, struct ss_nic_tx_mark *m);
enum ss_nic_tx_wake ss_nic_wake_kick(struct ss_nic_wake *w, const struct ss_nic_tx_mark *m);

/* Before a TX burst. */
static inline void ss_nic_wake_tx_begin(const struct ss_nic_wake *w, struct ss_nic_tx_mark *m)
{
	m->ring = NULL;
	if (w->memif_tx_fd >= 0)
		ss_nic_wake_tx_mark_memif(w, m);
}

/*
 * After a TX burst that sent @sent frames: memif rings the peer if it
 * sleeps on its RX ring and the PMD's burst did not ring it already
 * (ss_nic_wake_kick() in nic_wake.c).
 */
static inline enum ss_nic_tx_wake ss_nic_wake_tx_done(struct ss_nic_wake *w,
						      const struct ss_nic_tx_mark *m, unsigned sent)
{
	if (sent == 0 || w->memif_tx_fd < 0)
		return SS_NIC_TX_WAKE_NONE;
	return ss_nic_wake_kick(w, m);
}

/*
 * A TX burst took nothing: on memif, the peer may have gone, so the link
 * is looked at now (ss_nic_wake_link_up() then says).
 */
void ss_nic_wake_tx_refused(struct ss_nic_wake *w);

#endif
