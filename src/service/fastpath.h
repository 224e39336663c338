/* fastpath.h - one fast-path thread: RX burst -> protocol input -> TX burst, sleeps when idle. */
#ifndef SS_SERVICE_FASTPATH_H
#define SS_SERVICE_FASTPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "stack/counters.h"
#include "nic/idle_poll.h"
#include "nic/nic_wake.h"
#include "stack/proto.h"

struct rte_mempool;
struct rte_mbuf;
struct ss_stack;
struct ss_nic;

#define SS_FP_BURST 32
#define SS_FP_TXQ 64            /* frames buffered before a TX burst */
#define SS_FP_TXQ_MAX 4096      /* frames held while the NIC's TX ring is full */

struct ss_fastpath {
	/* Written only by this thread (read by the control thread). */
	struct ss_counters ctr __attribute__((aligned(64)));
	struct ss_proto_ctx proto;

	unsigned id;
	uint16_t port;
	uint16_t queue;
	struct rte_mempool *pool;
	struct rte_mempool *tso_pool; /* frames for TSO segments; NULL: no TSO */
	uint16_t tso_frame_max;       /* a cut segment's longest frame (nic.h) */
	const struct ss_nic *nic;
	struct ss_nic_wake wake; /* the queue's wake-ups (nic_wake.h) */
	int kick_fd;            /* eventfd: wakes the thread (stop) */
	int doorbell_fd;        /* eventfd the applications ring; -1: none */
	struct ss_stack *stack; /* the TCP stack this thread serves, or NULL */

	/* Frames waiting for the next TX burst (replies and TCP output),
	 * oldest first; those a burst did not take stay at the front. */
	struct rte_mbuf *txq[SS_FP_TXQ_MAX];
	unsigned ntx;
	unsigned nkept;         /* of them, at the front: refused by a burst before */
	unsigned tx_flush_at;   /* burst when ntx reaches this */

	struct ss_idle_poll idle; /* empty polls before sleeping (idle_poll.h) */
	bool idle_yield;        /* sched_yield() after each empty poll */
	uint32_t busy_yield;    /* and every this many frames of a busy spell (0: never) */
	bool idle_adapt;        /* adapt idle.limit (else always idle.max) */
	uint32_t rx_budget;     /* RX frames per round, in bursts of SS_FP_BURST */

	/* Gateway resolution (thread 0 only): ARP until a reply is cached. */
	uint32_t gateway;
	uint64_t gw_next_ns;
	uint64_t gw_backoff_ns;

	bool *stop;             /* set by the signal handler */
};

/* Runs until *fp->stop; the lcore entry point (arg is struct ss_fastpath *). */
int ss_fastpath_run(void *arg);

/* Frame output for the stack (struct ss_stack_io callbacks; arg is the fast path). */
uint8_t *ss_fastpath_frame_alloc(void *arg, void **handle, size_t *cap);
void ss_fastpath_frame_send(void *arg, void *handle, size_t len, unsigned flags);
uint8_t *ss_fastpath_frame_alloc_tso(void *arg, void **handle, size_t *cap);
void ss_fastpath_frame_send_tso(void *arg, void *handle, size_t len, unsigned l4_len, unsigned mss);

#endif
