/* config.h - slipstreamd configuration: command line and config file, no DPDK. */
#ifndef SS_SERVICE_CONFIG_H
#define SS_SERVICE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack/cc_policy.h"

#define SS_CONFIG_MAX_EAL_ARGS 64
#define SS_CONFIG_DEFAULT_CTL "/run/slipstream/slipstreamd.sock"

/* --shm-huge: the applications' shared regions on huge pages. */
enum {
	SS_SHM_HUGE_OFF,  /* never */
	SS_SHM_HUGE_ON,   /* also sets the host's shmem THP mode "never" to "advise" */
	SS_SHM_HUGE_AUTO, /* where the host's shmem THP mode already allows them */
};

struct ss_config {
	uint32_t ip;            /* host byte order */
	uint8_t prefix_len;
	bool has_ip;
	uint32_t gateway;       /* host byte order; 0 = none */
	char ctl_path[108];     /* sizeof(sun_path) */
	unsigned cores;         /* fast-path threads (one NIC queue each) */
	uint16_t port_id;       /* DPDK port to serve */
	uint16_t rx_desc;       /* descriptors per RX queue */
	uint16_t tx_desc;       /* descriptors per TX queue */
	uint32_t arp_entries;   /* ARP cache capacity (power of two) */
	uint32_t idle_polls;    /* the most empty polls before a fast-path thread sleeps */
	bool idle_yield;        /* sched_yield() after each empty poll */
	uint32_t busy_yield;    /* with idle_yield: sched_yield() every N frames of a busy spell (default 256; 0: never) */
	bool idle_adapt;        /* fewer empty polls while idle spells outlast them */
	uint8_t shm_huge;       /* SS_SHM_HUGE_*: huge pages for the shared regions (bigmem.h) */
	uint32_t rx_budget;     /* RX frames per round (bursts of SS_FP_BURST) */
	uint32_t max_apps;      /* applications attached at once */
	uint32_t max_flows;     /* TCP connections, TIME_WAIT included */
	uint32_t max_app_conns; /* connections one application may hold */
	uint32_t max_buf;       /* largest ring an application may ask for */
	uint32_t max_listeners;
	uint64_t max_app_mem;   /* shared memory one application may ask for */
	uint64_t max_orphan_mem; /* unsent data kept for apps that exited */
	uint32_t time_wait_ms;
	uint32_t delack_us;     /* delayed ACK for less than two segments; 0 = off */
	uint32_t delack_max_us; /* the longer hold (tcp.h); <= delack_us: none */
	bool ecn;               /* negotiate ECN (RFC 3168) */
	bool tso;               /* TCP segmentation offload where the port has it */
	uint8_t syn_cookies;    /* SS_SYN_COOKIES_* (stack.h) */
	bool tw_reuse;          /* connect() may take a 4-tuple in TIME_WAIT (stack.h) */
	uint16_t local_port_lo; /* ephemeral ports for connect() and bind(0), */
	uint16_t local_port_hi; /* inclusive (as Linux's ip_local_port_range) */
	struct ss_cc_policy cc; /* congestion control: algorithm, per-app rules */
	char cc_trace[256];     /* --cc-trace: one line per control interval; "" = off */
	int log_level;          /* enum ss_log_level */
	/* DPDK EAL arguments; eal_argv[0] is the program name. */
	int eal_argc;
	char *eal_argv[SS_CONFIG_MAX_EAL_ARGS + 1];
	char eal_store[4096];   /* backing store for eal_argv strings */
	size_t eal_used;
};

void ss_config_defaults(struct ss_config *cfg);

/*
 * Parses "slipstreamd [options] [-- EAL args]". A --config file is read
 * first wherever it appears; command-line options override it. Returns 0,
 * 1 if --help was asked for (print ss_config_usage), or -1 with a message
 * in @err (NUL-terminated, at most @errlen bytes).
 */
int ss_config_parse_args(struct ss_config *cfg, int argc, char **argv,
			 char *err, size_t errlen);

/*
 * Applies a config file's text: "key = value" lines, '#' comments, blank
 * lines ignored. Keys are the long option names (ip, gateway, ctl, cores,
 * port, rx-desc, tx-desc, arp-entries, idle-polls, rx-budget, max-apps, max-flows,
 * max-app-conns, max-buf, max-listeners, max-app-mem, max-orphan-mem, time-wait-ms, local-ports,
 * delack-us, delack-max-us, ecn,
 * cc, cc-app, app-rate-cap, cc-interval-rtts, log-level) plus "dpdk",
 * whose value is split on whitespace into EAL arguments.
 */
int ss_config_parse_text(struct ss_config *cfg, const char *text,
			 char *err, size_t errlen);

/* Parses "a.b.c.d" into host order. Returns 0 or -1. */
int ss_parse_ipv4(const char *s, uint32_t *out);
/* Formats a host-order address; @buf must hold 16 bytes. */
const char *ss_format_ipv4(uint32_t ip, char *buf);

extern const char *const ss_config_usage[]; /* parts, NULL-terminated */

#endif
