/* ctl.h - the control thread: the UNIX socket for tools (stats, arp) and applications (attach). */
#ifndef SS_SERVICE_CTL_H
#define SS_SERVICE_CTL_H

#include <pthread.h>
#include <stdint.h>

#include "service/registry.h"
#include "stack/arp_cache.h"
#include "service/config.h"
#include "service/fastpath.h"
#include "nic/nic.h"

struct ss_ctl {
	const struct ss_config *cfg;
	const struct ss_nic *nic;
	struct ss_fastpath *const *fps; /* one per fast-path thread */
	unsigned nb_fps;
	const struct ss_arp_cache *arp;
	struct ss_app_reg *reg;         /* applications (NULL: attach refused) */
	const struct ss_stack *stack;   /* for gauges, may be NULL */
	uint64_t start_ns;

	int listen_fd;
	int stop_fd;            /* eventfd: ss_ctl_stop() wakes the thread */
	pthread_t thread;
	bool running;
};

/*
 * Binds cfg->ctl_path (creating its directory; refusing with -EADDRINUSE if
 * another live service answers there, replacing a stale socket file) and
 * starts the thread. Returns 0 or -errno.
 */
int ss_ctl_start(struct ss_ctl *ctl);
/* Stops the thread and removes the socket file. */
void ss_ctl_stop(struct ss_ctl *ctl);

/*
 * Builds the reply to one request line into @buf (NUL-terminated JSON);
 * returns its length. Exposed for tests.
 */
size_t ss_ctl_handle(const struct ss_ctl *ctl, const char *line, char *buf, size_t cap);

#endif
