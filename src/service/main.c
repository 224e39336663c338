/* main.c - slipstreamd: parse configuration, bring up the NIC, run fast paths and control. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "stack/arp_cache.h"
#include "stack/bigmem.h"
#include "service/config.h"
#include "service/ctl.h"
#include "service/fastpath.h"
#include "util/log.h"
#include "nic/nic.h"
#include "stack/stack.h"

static bool stop_flag;
static int kick_fds[SS_NIC_MAX_QUEUES];
static unsigned nb_kick_fds;

static void on_signal(int sig)
{
	(void)sig;
	__atomic_store_n(&stop_flag, true, __ATOMIC_RELEASE);
	uint64_t one = 1;
	for (unsigned i = 0; i < nb_kick_fds; i++) /* async-signal-safe */
		if (write(kick_fds[i], &one, sizeof(one)) < 0)
			continue;
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void log_final_counters(struct ss_fastpath **fps, unsigned n)
{
	uint64_t rx = 0, tx = 0, drops = 0;
	for (unsigned t = 0; t < n; t++) {
		rx += ss_ctr_read(&fps[t]->ctr, SS_CTR_rx_packets);
		tx += ss_ctr_read(&fps[t]->ctr, SS_CTR_tx_packets);
		for (unsigned id = 0; id < SS_CTR_MAX; id++)
			if (strncmp(ss_counter_name((enum ss_counter_id)id), "drop_", 5) == 0)
				drops += ss_ctr_read(&fps[t]->ctr, (enum ss_counter_id)id);
	}
	SS_INFO("stopped: %llu packets received, %llu sent, %llu dropped",
		(unsigned long long)rx, (unsigned long long)tx, (unsigned long long)drops);
}

/*
 * --shm-huge: the host's shmem THP mode, recorded for `slipstream stats`;
 * the regions (madvised by registry.c and the library, populated ahead by
 * registry.c) are on huge pages where it allows them.  "on" also sets it from
 * "never" to "advise"; "auto" leaves it as it is.
 */
static void shm_huge_setup(struct ss_app_reg *reg, const struct ss_config *cfg)
{
	char was[sizeof(reg->shmem_thp)];
	int thp = ss_bigmem_shmem_thp(SS_SHMEM_THP_PATH, cfg->shm_huge == SS_SHM_HUGE_ON, was,
				      sizeof(was));

	snprintf(reg->shmem_thp, sizeof(reg->shmem_thp), "%s", was);
	reg->shm_huge = cfg->shm_huge != SS_SHM_HUGE_OFF && thp == 1;
	if (cfg->shm_huge == SS_SHM_HUGE_OFF)
		return;
	if (thp < 0)
		SS_WARN("--shm-huge: shmem THP mode unknown (%s: %s); regions on 4 KiB pages",
			SS_SHMEM_THP_PATH, strerror(-thp));
	else if (thp == 0)
		SS_INFO("shared regions on 4 KiB pages: the host's shmem THP mode is '%s'%s", was,
			cfg->shm_huge == SS_SHM_HUGE_AUTO && strcmp(was, "never") == 0
				? " (--shm-huge on sets it to 'advise')" : "");
	else
		SS_INFO("shared regions on huge pages, populated ahead (shmem THP mode '%s'%s)", was,
			cfg->shm_huge == SS_SHM_HUGE_ON && strcmp(was, "never") == 0 ? ", now 'advise'"
										     : "");
}

int main(int argc, char **argv)
{
	static struct ss_config cfg;
	char err[4096];
	int rc, status = EXIT_FAILURE;

	ss_config_defaults(&cfg);
	rc = ss_config_parse_args(&cfg, argc, argv, err, sizeof(err));
	if (rc == 1) {
		for (const char *const *part = ss_config_usage; *part; part++)
			fputs(*part, stdout);
		return EXIT_SUCCESS;
	}
	if (rc != 0) {
		fprintf(stderr, "slipstreamd: %s\n", err);
		return 2;
	}
	ss_log_threshold = (enum ss_log_level)cfg.log_level;

	ss_nic_detach_stale_xdp(cfg.eal_argc, cfg.eal_argv);
	ss_nic_remove_stale_memif(cfg.eal_argc, cfg.eal_argv);
	if (rte_eal_init(cfg.eal_argc, cfg.eal_argv) < 0) {
		SS_ERR("DPDK EAL init failed: %s", rte_strerror(rte_errno));
		return EXIT_FAILURE;
	}

	static struct ss_nic nic;
	static struct ss_arp_cache arp;
	static struct ss_ctl ctl;
	static struct ss_app_reg reg;
	static struct ss_stack stack;
	bool reg_up = false, stack_up = false;
	FILE *cc_trace = NULL;
	struct ss_fastpath *fps[SS_NIC_MAX_QUEUES] = { 0 };
	unsigned nfp = 0;

	for (unsigned i = 0; i < SS_NIC_MAX_QUEUES; i++)
		kick_fds[i] = -1;
	struct ss_nic_conf nconf = {
		.port_id = cfg.port_id, .queues = cfg.cores,
		.rx_desc = cfg.rx_desc, .tx_desc = cfg.tx_desc, .tso = cfg.tso,
	};
	if (ss_nic_open(&nic, &nconf) != 0)
		goto out_eal;
	if (rte_lcore_count() < nic.nb_queues) {
		SS_ERR("%u fast-path threads need %u lcores; the EAL has %u (give -l with more cores)",
		       nic.nb_queues, nic.nb_queues, rte_lcore_count());
		goto out_nic;
	}
	if ((rc = ss_arp_cache_init(&arp, cfg.arp_entries)) != 0) {
		SS_ERR("ARP cache of %u entries: %s", cfg.arp_entries, strerror(-rc));
		goto out_nic;
	}

	for (nfp = 0; nfp < nic.nb_queues; nfp++) {
		struct ss_fastpath *fp = rte_zmalloc("fastpath", sizeof(*fp), 64);
		int kfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (!fp || kfd < 0) {
			SS_ERR("fast path %u: out of memory or eventfd: %s", nfp, strerror(errno));
			rte_free(fp);
			goto out_fps;
		}
		fp->id = nfp;
		fp->port = nic.port_id;
		fp->queue = (uint16_t)nfp;
		fp->pool = nic.pool[nfp];
		fp->tso_pool = nic.use_tso ? nic.tso_pool[nfp] : NULL;
		fp->tso_frame_max = nic.tso_frame_max;
		fp->nic = &nic;
		fp->kick_fd = kfd;
		fp->doorbell_fd = -1;
		ss_idle_poll_init(&fp->idle, cfg.idle_polls);
		fp->idle_yield = cfg.idle_yield;
		fp->busy_yield = cfg.idle_yield ? cfg.busy_yield : 0;
		fp->idle_adapt = cfg.idle_adapt;
		fp->rx_budget = cfg.rx_budget;
		fp->stop = &stop_flag;
		/* Non-IP frames (ARP) reach queue 0: its thread writes the cache. */
		fp->gateway = nfp == 0 ? cfg.gateway : 0;
		ss_proto_ctx_init(&fp->proto, nic.mac, cfg.ip, cfg.prefix_len, &arp, nfp == 0,
				  &fp->ctr);
		fps[nfp] = fp;
		kick_fds[nfp] = kfd;
	}
	nb_kick_fds = nfp;

	/* TCP: one stack, served by fast path 0 (the only thread that sees
	 * TCP on a single-queue port).  With more queues, RSS could steer a
	 * flow elsewhere: those threads answer such segments with RST. */
	if (nfp > 1)
		SS_WARN("TCP is served by fast path 0 only; with %u queues, segments RSS steers to "
			"other queues are refused", nfp);
	struct ss_app_limits alim = {
		.max_apps = cfg.max_apps, .max_ctx = 64, .max_conns = cfg.max_app_conns,
		.max_buf = cfg.max_buf, .max_region = cfg.max_app_mem,
		.atx_slots = 4096, .arx_slots = 8192,
	};
	if ((rc = ss_app_reg_init(&reg, &alim, nfp)) != 0) {
		SS_ERR("application registry: %s", strerror(-rc));
		goto out_fps;
	}
	reg_up = true;
	shm_huge_setup(&reg, &cfg);
	struct ss_tcp_params tp;
	ss_tcp_params_default(&tp);
	tp.time_wait_us = cfg.time_wait_ms * 1000u;
	tp.delack_us = cfg.delack_us;
	tp.delack_max_us = cfg.delack_max_us;
	tp.ecn = cfg.ecn;
	struct ss_stack_limits slim = {
		.max_flows = cfg.max_flows, .max_listeners = cfg.max_listeners,
		.timer_slots = 4096, .cmd_budget = 256, .max_orphan_mem = cfg.max_orphan_mem,
		.syn_cookies = cfg.syn_cookies, .tw_reuse = cfg.tw_reuse,
		.local_port_lo = cfg.local_port_lo, .local_port_hi = cfg.local_port_hi,
	};
	struct ss_stack_io io = { fps[0], ss_fastpath_frame_alloc, ss_fastpath_frame_send,
				  nic.use_tx_ip_csum && nic.use_tx_tcp_csum ? SS_TX_CSUM : 0,
				  nic.tso_max, ss_fastpath_frame_alloc_tso,
				  ss_fastpath_frame_send_tso };
	if ((rc = ss_stack_init(&stack, &slim, &tp, &fps[0]->ctr, nic.mac, cfg.ip, cfg.prefix_len,
				cfg.gateway, &arp, &reg, 0, &io)) != 0) {
		SS_ERR("TCP stack: %s", strerror(-rc));
		goto out_fps;
	}
	stack_up = true;
	if ((rc = ss_stack_set_cc(&stack, &cfg.cc)) != 0) {
		SS_ERR("congestion control: %s", strerror(-rc));
		goto out_fps;
	}
	SS_INFO("congestion control: %s (%u application rule%s)", ss_cc_policy_name(&cfg.cc),
		cfg.cc.n_rules, cfg.cc.n_rules == 1 ? "" : "s");
	if (cfg.cc_trace[0]) {
		if (!(cc_trace = fopen(cfg.cc_trace, "we"))) {
			SS_ERR("cc-trace %s: %s", cfg.cc_trace, strerror(errno));
			goto out_fps;
		}
		ss_stack_set_cc_trace(&stack, cc_trace);
		SS_INFO("congestion control: tracing every control interval to %s", cfg.cc_trace);
	}
	fps[0]->stack = &stack;
	fps[0]->doorbell_fd = reg.doorbell_fd;
	fps[0]->proto.tcp_input = ss_stack_tcp_input;
	fps[0]->proto.tcp_arg = &stack;
	/* Loopback: segments to our own address go round through the same
	 * receive path as the NIC's frames, on the same thread. */
	ss_stack_set_loop_input(&stack, &fps[0]->proto);
	install_signals();

	ctl.cfg = &cfg;
	ctl.nic = &nic;
	ctl.fps = fps;
	ctl.nb_fps = nfp;
	ctl.arp = &arp;
	ctl.reg = &reg;
	ctl.stack = &stack;
	if ((rc = ss_ctl_start(&ctl)) != 0) {
		SS_ERR("control socket %s: %s", cfg.ctl_path, strerror(-rc));
		goto out_fps;
	}

	/* Queue 0 runs on the main lcore, the others on worker lcores in order. */
	unsigned lcore = rte_get_main_lcore();
	for (unsigned i = 1; i < nfp; i++) {
		lcore = rte_get_next_lcore(lcore, 1, 0);
		rc = rte_eal_remote_launch(ss_fastpath_run, fps[i], lcore);
		if (rc != 0) {
			SS_ERR("fast path %u: launch on lcore %u: %s", i, lcore, rte_strerror(-rc));
			on_signal(SIGTERM);
		}
	}
	char ip[16];
	SS_INFO("slipstreamd %s serving %s/%u on port %u with %u fast-path thread(s)", SS_VERSION,
		ss_format_ipv4(cfg.ip, ip), cfg.prefix_len, nic.port_id, nfp);
	if (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE))
		ss_fastpath_run(fps[0]);
	rte_eal_mp_wait_lcore();
	SS_INFO("shutting down");
	status = EXIT_SUCCESS;

	ss_ctl_stop(&ctl);
	log_final_counters(fps, nfp);
out_fps:
	if (stack_up)
		ss_stack_fini(&stack);
	if (cc_trace)
		fclose(cc_trace);
	if (reg_up)
		ss_app_reg_fini(&reg);
	nb_kick_fds = 0;
	for (unsigned i = 0; i < nfp; i++) {
		close(fps[i]->kick_fd);
		rte_free(fps[i]);
	}
	ss_arp_cache_free(&arp);
out_nic:
	ss_nic_close(&nic);
out_eal:
	rte_eal_cleanup();
	return status;
}
