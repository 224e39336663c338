/* fastpath.h - one fast-path thread: RX burst -> protocol input -> TX burst, sleeps when idle. */
#ifndef SS_SERVICE_FASTPATH_H
#define SS_SERVICE_FASTPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "service/counters.h"
#include "service/proto.h"

struct rte_mempool;

#define SS_FP_BURST 32

struct ss_fastpath {
	/* Written only by this thread (read by the control thread). */
	struct ss_counters ctr __attribute__((aligned(64)));
	struct ss_proto_ctx proto;

	unsigned id;
	uint16_t port;
	uint16_t queue;
	struct rte_mempool *pool;
	int wait_fd;            /* readable when RX has frames; -1: timed sleep */
	int kick_fd;            /* eventfd: wakes the thread (stop) */
	uint32_t idle_polls;    /* empty polls before sleeping */

	/* Gateway resolution (thread 0 only): ARP until a reply is cached. */
	uint32_t gateway;
	uint64_t gw_next_ns;
	uint64_t gw_backoff_ns;

	bool *stop;             /* set by the signal handler */
};

/* Runs until *fp->stop; the lcore entry point (arg is struct ss_fastpath *). */
int ss_fastpath_run(void *arg);

#endif
