/* nic_wait.h - how an idle fast path blocks on its queue's wake-up source: the plan, the wait, its fds (no DPDK). */
#ifndef SS_NIC_WAIT_H
#define SS_NIC_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include "nic/nic_kind.h"

#define SS_NIC_TIMED_NAP_NS (200 * 1000ull)          /* no wake-up source: naps of this at most */
#define SS_NIC_LINK_DOWN_NAP_NS (20 * 1000 * 1000ull) /* memif, no peer: naps of this at most */
#define SS_NIC_WAIT_FDS 4                             /* the caller's fds a wait polls, at most */

/* One wait on a queue, before it is made. */
struct ss_nic_wait_plan {
	int fd;      /* the queue's fd, polled beside the caller's; -1: none */
	uint64_t ns; /* the longest the wait may last */
	bool timed;  /* no wake-up source at all: a timed sleep, no fd polled */
	bool napped; /* a source that is not there now (memif without a peer): ns capped */
};

/*
 * The wait on a queue of wait mode @mode whose wake-up fd is now @fd (-1:
 * none), for at most @wait_ns.  A port without a wake-up source naps
 * (SS_NIC_TIMED_NAP_NS at most), so that work is found soon; a memif queue
 * whose peer is not connected has no eventfd yet, and nothing would wake
 * the thread when the peer comes: short naps too (SS_NIC_LINK_DOWN_NAP_NS).
 */
struct ss_nic_wait_plan ss_nic_wait_plan(enum ss_nic_wait_mode mode, int fd, uint64_t wait_ns);

/*
 * Blocks as @plan says: a timed sleep, or until one of @fds (@nfds of them,
 * at most SS_NIC_WAIT_FDS) or the plan's fd is readable, or plan->ns has
 * passed (ppoll(): nanoseconds, where poll() has milliseconds).  Sets bit
 * i of *ready for each readable fds[i].  Returns 0 (also when a signal
 * ended the wait) or -errno.
 */
int ss_nic_wait_block(const struct ss_nic_wait_plan *plan, const int *fds, unsigned nfds,
		      unsigned *ready);

/* Reads eventfd @fd to zero (a wake-up source that counts); -1 is none.
 * Returns 0 (also when it was zero already) or -errno. */
int ss_nic_eventfd_drain(int fd);

/* @fd is an eventfd (an RX interrupt fd that counts and must be read to
 * re-arm), not another kind of fd. */
bool ss_nic_fd_is_eventfd(int fd);

/*
 * Keeps *@fd a duplicate of @now_src, the fd a PMD holds now (-1: none),
 * *@src the fd it duplicates: when @now_src differs from *@src, the old
 * duplicate is closed and a new one made.  A thread that holds duplicates
 * never writes to a closed and reused fd number.
 */
void ss_nic_fd_track(int *fd, int *src, int now_src);

#endif
