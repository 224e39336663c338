/* test_config.c - slipstreamd options and config file: values, overrides, exact errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "service/config.h"
#include "util/log.h"
#include "stack/stack.h"

static struct ss_config cfg;
static char err[4096];

static int parse(int argc, const char **argv)
{
	ss_config_defaults(&cfg);
	err[0] = '\0';
	return ss_config_parse_args(&cfg, argc, (char **)argv, err, sizeof(err));
}

#define PARSE_ARGV(...) ((const char *[]){ "slipstreamd", __VA_ARGS__ })
#define PARSE(...)                                                          \
	parse((int)(sizeof(PARSE_ARGV(__VA_ARGS__)) / sizeof(const char *)), \
	      PARSE_ARGV(__VA_ARGS__))

static void test_defaults_and_options(void)
{
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24"), 0);
	CHECK_EQ_U64(cfg.ip, 0xC6120001u);
	CHECK_EQ_U64(cfg.prefix_len, 24);
	CHECK_EQ_U64(cfg.gateway, 0);
	CHECK_EQ_U64(cfg.cores, 1);
	CHECK_EQ_U64(cfg.rx_desc, 2048);
	CHECK_EQ_U64(cfg.rx_budget, 128);
	CHECK(cfg.idle_yield);
	CHECK_EQ_U64(cfg.busy_yield, 256); /* the default */
	CHECK(!cfg.idle_adapt); /* the default */
	CHECK_STR(cfg.ctl_path, SS_CONFIG_DEFAULT_CTL);
	CHECK_EQ_U64(cfg.eal_argc, 1);
	CHECK_STR(cfg.eal_argv[0], "slipstreamd");
	CHECK_EQ_U64(cfg.max_orphan_mem, 256ull << 20);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--max-orphan-mem", "0"), 0);
	CHECK_EQ_U64(cfg.max_orphan_mem, 0);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--max-orphan-mem", "1048576"), 0);
	CHECK_EQ_U64(cfg.max_orphan_mem, 1048576);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24"), 0);
	CHECK_EQ_U64(cfg.syn_cookies, SS_SYN_COOKIES_ON);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--syn-cookies", "off"), 0);
	CHECK_EQ_U64(cfg.syn_cookies, SS_SYN_COOKIES_OFF);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--syn-cookies", "always"), 0);
	CHECK_EQ_U64(cfg.syn_cookies, SS_SYN_COOKIES_ALWAYS);
	CHECK_EQ_U64(cfg.delack_us, 1000); /* the defaults */
	CHECK_EQ_U64(cfg.delack_max_us, 128000);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--delack-us", "0", "--delack-max-us", "500000"), 0);
	CHECK_EQ_U64(cfg.delack_us, 0);
	CHECK_EQ_U64(cfg.delack_max_us, 500000);
	CHECK(cfg.tw_reuse); /* the default */
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--tw-reuse", "off"), 0);
	CHECK(!cfg.tw_reuse);
	CHECK(cfg.tso); /* the default */
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--tso", "off"), 0);
	CHECK(!cfg.tso);
	CHECK(PARSE("--ip", "198.18.0.1/24", "--tso", "maybe") != 0);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--idle-yield", "off"), 0);
	CHECK(!cfg.idle_yield);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--idle-adapt", "on"), 0);
	CHECK(cfg.idle_adapt);
	CHECK(cfg.idle_yield);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--busy-yield", "0"), 0);
	CHECK_EQ_U64(cfg.busy_yield, 0);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--busy-yield", "64"), 0);
	CHECK_EQ_U64(cfg.busy_yield, 64);
	CHECK_EQ_U64(cfg.shm_huge, SS_SHM_HUGE_AUTO); /* the default */
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--shm-huge", "on"), 0);
	CHECK_EQ_U64(cfg.shm_huge, SS_SHM_HUGE_ON);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--shm-huge", "off"), 0);
	CHECK_EQ_U64(cfg.shm_huge, SS_SHM_HUGE_OFF);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--shm-huge", "auto"), 0);
	CHECK_EQ_U64(cfg.shm_huge, SS_SHM_HUGE_AUTO);
	CHECK_EQ_U64(cfg.local_port_lo, 32768);
	CHECK_EQ_U64(cfg.local_port_hi, 60999);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--local-ports", "1024-65535"), 0);
	CHECK_EQ_U64(cfg.local_port_lo, 1024);
	CHECK_EQ_U64(cfg.local_port_hi, 65535);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--local-ports", "5000-5000"), 0);
	CHECK_EQ_U64(cfg.local_port_lo, 5000);
	CHECK_EQ_U64(cfg.local_port_hi, 5000);

	CHECK_EQ_U64(PARSE("--ip=10.0.0.5/8", "--gateway", "10.1.2.3", "--cores", "2",
			   "--ctl", "/tmp/x.sock", "--rx-desc", "512", "--log-level", "debug",
			   "--rx-budget", "64",
			   "--", "--no-huge", "--vdev=net_af_xdp0,iface=v0"), 0);
	CHECK_EQ_U64(cfg.ip, 0x0A000005u);
	CHECK_EQ_U64(cfg.prefix_len, 8);
	CHECK_EQ_U64(cfg.gateway, 0x0A010203u);
	CHECK_EQ_U64(cfg.cores, 2);
	CHECK_EQ_U64(cfg.rx_desc, 512);
	CHECK_EQ_U64(cfg.rx_budget, 64);
	CHECK_EQ_U64(cfg.log_level, SS_LOG_DEBUG);
	CHECK_STR(cfg.ctl_path, "/tmp/x.sock");
	CHECK_EQ_U64(cfg.eal_argc, 3);
	CHECK_STR(cfg.eal_argv[1], "--no-huge");
	CHECK_STR(cfg.eal_argv[2], "--vdev=net_af_xdp0,iface=v0");
	CHECK(cfg.eal_argv[3] == NULL);

	CHECK_EQ_U64(PARSE("--help"), 1);
	/* The text, in parts (main prints them): the whole of it. */
	static char usage[16384];
	size_t len = 0;
	for (const char *const *part = ss_config_usage; *part; part++) {
		size_t n = strlen(*part);
		CHECK(len + n < sizeof(usage));
		if (len + n < sizeof(usage)) {
			memcpy(usage + len, *part, n + 1);
			len += n;
		}
	}
	CHECK(strncmp(usage, "usage: slipstreamd", 18) == 0);
	CHECK(len > 4096); /* more than one literal may hold */
	const char *opts[] = { "--idle-polls N", "--idle-adapt on|off", "--idle-yield on|off",
			       "--busy-yield N",
			       "--log-level LEVEL", "EAL example:" };
	for (unsigned i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		CHECK(strstr(usage, opts[i]) != NULL);
}

static void test_errors(void)
{
	static const struct { const char *a, *b; const char *msg; } bad[] = {
		{ "--ip", "198.18.0.1", "ip: expected ADDR/PREFIX, got '198.18.0.1'" },
		{ "--ip", "198.18.0.256/24", "ip: bad address '198.18.0.256'" },
		{ "--ip", "198.18.0/24", "ip: bad address '198.18.0'" },
		{ "--ip", "198.18.0.1/33", "ip: bad prefix length '33'" },
		{ "--ip", "198.18.0.1/0", "ip: bad prefix length '0'" },
		{ "--cores", "0", "cores: expected 1..128, got '0'" },
		{ "--cores", "2x", "cores: expected 1..128, got '2x'" },
		{ "--rx-desc", "1000", "rx-desc: expected a power of two in 64..16384, got '1000'" },
		{ "--rx-budget", "0", "rx-budget: expected 1..65536, got '0'" },
		{ "--busy-yield", "-1", "busy-yield: expected 0..1000000, got '-1'" },
		{ "--busy-yield", "1000001", "busy-yield: expected 0..1000000, got '1000001'" },
		{ "--log-level", "loud", "log-level: expected err, warn, info or debug, got 'loud'" },
		{ "--bogus", "1", "unknown option 'bogus'" },
		{ "--cc", "vegas", "cc: unknown algorithm 'vegas' (one of auto, dctcp-rate, dctcp-win, timely, cubic, newreno, bbr)" },
		{ "--cc-app", "redis-server", "cc-app: expected NAME=VALUE with a process name of 1..15 bytes, got 'redis-server'" },
		{ "--cc-app", "=cubic", "cc-app: expected NAME=VALUE with a process name of 1..15 bytes, got '=cubic'" },
		{ "--cc-app", "a-very-long-process-name=cubic", "cc-app: expected NAME=VALUE with a process name of 1..15 bytes, got 'a-very-long-process-name=cubic'" },
		{ "--cc-app", "nginx=vegas", "cc-app: unknown algorithm 'vegas' (one of dctcp-rate, dctcp-win, timely, cubic, newreno, bbr)" },
		{ "--app-rate-cap", "iperf3=0", "app-rate-cap: expected Mbit/s in 0.1..100000, got '0'" },
		{ "--app-rate-cap", "iperf3=fast", "app-rate-cap: expected Mbit/s in 0.1..100000, got 'fast'" },
		{ "--cc-interval-rtts", "0", "cc-interval-rtts: expected 1..64, got '0'" },
		{ "--cc-share", "path", "cc-share: expected host or flow, got 'path'" },
		{ "--cc-share", "", "cc-share: expected host or flow, got ''" },
		{ "--cc-trace", "", "cc-trace: expected a file name of 1..255 bytes" },
		{ "--max-orphan-mem", "-1", "max-orphan-mem: expected 0..1099511627776, got '-1'" },
		{ "--max-orphan-mem", "1099511627777", "max-orphan-mem: expected 0..1099511627776, got '1099511627777'" },
		{ "--max-orphan-mem", "64M", "max-orphan-mem: expected 0..1099511627776, got '64M'" },
		{ "--syn-cookies", "yes", "syn-cookies: expected on, off or always, got 'yes'" },
		{ "--idle-yield", "1", "idle-yield: expected on or off, got '1'" },
		{ "--idle-adapt", "yes", "idle-adapt: expected on or off, got 'yes'" },
		{ "--shm-huge", "advise", "shm-huge: expected on, off or auto, got 'advise'" },
		{ "--tw-reuse", "yes", "tw-reuse: expected on or off, got 'yes'" },
		{ "--delack-us", "500001", "delack-us: expected 0..500000 (RFC 1122: at most 0.5 s), got '500001'" },
		{ "--delack-max-us", "500001", "delack-max-us: expected 0..500000 (RFC 1122: at most 0.5 s), got '500001'" },
		{ "--delack-max-us", "-1", "delack-max-us: expected 0..500000 (RFC 1122: at most 0.5 s), got '-1'" },
		{ "--local-ports", "5000", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '5000'" },
		{ "--local-ports", "0-10", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '0-10'" },
		{ "--local-ports", "10-5", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '10-5'" },
		{ "--local-ports", "1-65536", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '1-65536'" },
		{ "--local-ports", "-5", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '-5'" },
		{ "--local-ports", "5-", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '5-'" },
		{ "--local-ports", "a-b", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got 'a-b'" },
		{ "--local-ports", "1-2-3", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '1-2-3'" },
		{ "--local-ports", " 1-2", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got ' 1-2'" },
		{ "--local-ports", "+1-2", "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, got '+1-2'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { "slipstreamd", "--ip", "198.18.0.1/24", bad[i].a, bad[i].b };
		CHECK_EQ_U64(parse(5, argv), (uint64_t)-1);
		CHECK_STR(err, bad[i].msg);
	}
	CHECK_EQ_U64(PARSE("--gateway", "198.18.0.2"), (uint64_t)-1);
	CHECK_STR(err, "--ip ADDR/PREFIX is required (see --help)");
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--gateway", "198.19.0.2"), (uint64_t)-1);
	CHECK_STR(err, "gateway is not inside 24-bit prefix of ip");
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "stray"), (uint64_t)-1);
	CHECK_STR(err, "unexpected argument 'stray' (see --help)");
	CHECK_EQ_U64(PARSE("--ip"), (uint64_t)-1);
	CHECK_STR(err, "--ip needs a value");
}

/* Congestion control: the service's algorithm, per-application rules by
 * process name (a later line for a name changes only what it names). */
static void test_cc_options(void)
{
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24"), 0);
	CHECK(cfg.cc.pick_auto && cfg.cc.ops == &ss_cc_cubic_ops);
	CHECK_STR(ss_cc_policy_name(&cfg.cc), "auto");
	CHECK_EQ_U64(cfg.cc.n_rules, 0);
	CHECK_EQ_U64(cfg.cc.params.interval_rtts, 2);
	CHECK_EQ_U64(cfg.cc.share, SS_CC_SHARE_HOST);
	CHECK_STR(cfg.cc_trace, "");
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--cc-share", "flow"), 0);
	CHECK_EQ_U64(cfg.cc.share, SS_CC_SHARE_FLOW);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--cc-share", "host"), 0);
	CHECK_EQ_U64(cfg.cc.share, SS_CC_SHARE_HOST);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--cc-trace", "/tmp/cc.trace"), 0);
	CHECK_STR(cfg.cc_trace, "/tmp/cc.trace");
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--cc", "cubic", "--cc-app", "redis-server=dctcp-win",
			   "--app-rate-cap", "iperf3=50", "--app-rate-cap", "redis-server=2.5",
			   "--cc-app", "iperf3=timely", "--cc-interval-rtts", "3"), 0);
	CHECK(cfg.cc.ops == &ss_cc_cubic_ops && !cfg.cc.pick_auto);
	CHECK_STR(ss_cc_policy_name(&cfg.cc), "cubic");
	CHECK_EQ_U64(cfg.cc.params.interval_rtts, 3);
	CHECK_EQ_U64(cfg.cc.n_rules, 2);
	const struct ss_cc_app_rule *r = ss_cc_policy_rule(&cfg.cc, "redis-server");
	CHECK(r && r->ops == &ss_cc_dctcp_win_ops);
	CHECK_EQ_U64(r ? r->cap_bps : 0, 312500); /* 2.5 Mbit/s in bytes/s */
	r = ss_cc_policy_rule(&cfg.cc, "iperf3");
	CHECK(r && r->ops == &ss_cc_timely_ops);
	CHECK_EQ_U64(r ? r->cap_bps : 0, 6250000);
	CHECK(ss_cc_policy_rule(&cfg.cc, "iperf") == NULL);
	CHECK(ss_cc_policy_rule(&cfg.cc, "nginx") == NULL);
	CHECK_EQ_U64(PARSE("--ip", "198.18.0.1/24", "--cc", "bbr", "--cc-app", "nginx=bbr"), 0);
	CHECK(cfg.cc.ops == &ss_cc_bbr_ops && !cfg.cc.pick_auto);
	CHECK_STR(ss_cc_policy_name(&cfg.cc), "bbr");
	r = ss_cc_policy_rule(&cfg.cc, "nginx");
	CHECK(r && r->ops == &ss_cc_bbr_ops);
}

static void test_file(void)
{
	char path[] = "/tmp/ss_test_config_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	static const char text[] =
		"# comment\n"
		"ip = 198.18.0.1/24   # trailing comment\n"
		"\n"
		"  gateway=198.18.0.2\n"
		"cores = 3\n"
		"dpdk = --no-huge   --no-pci -l 0\n";
	CHECK_EQ_U64(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);

	/* The command line overrides the file, wherever --config appears. */
	CHECK_EQ_U64(PARSE("--cores", "1", "-c", path, "--", "--vdev=x"), 0);
	CHECK_EQ_U64(cfg.ip, 0xC6120001u);
	CHECK_EQ_U64(cfg.gateway, 0xC6120002u);
	CHECK_EQ_U64(cfg.cores, 1);
	CHECK_EQ_U64(cfg.eal_argc, 6);
	CHECK_STR(cfg.eal_argv[1], "--no-huge");
	CHECK_STR(cfg.eal_argv[2], "--no-pci");
	CHECK_STR(cfg.eal_argv[3], "-l");
	CHECK_STR(cfg.eal_argv[4], "0");
	CHECK_STR(cfg.eal_argv[5], "--vdev=x");
	unlink(path);

	CHECK_EQ_U64(PARSE("--config", "/nonexistent/ss.conf"), (uint64_t)-1);
	CHECK_STR(err, "config /nonexistent/ss.conf: No such file or directory");

	ss_config_defaults(&cfg);
	CHECK_EQ_U64(ss_config_parse_text(&cfg, "ip = 1.2.3.4/8\nnonsense\n", err, sizeof(err)),
		     (uint64_t)-1);
	CHECK_STR(err, "line 2: expected 'key = value'");
	CHECK_EQ_U64(ss_config_parse_text(&cfg, "colour = blue\n", err, sizeof(err)),
		     (uint64_t)-1);
	CHECK_STR(err, "line 1: unknown option 'colour'");
}

static void test_ipv4_text(void)
{
	uint32_t ip;
	char buf[16];
	CHECK_EQ_U64(ss_parse_ipv4("0.0.0.0", &ip), 0);
	CHECK_EQ_U64(ip, 0);
	CHECK_EQ_U64(ss_parse_ipv4("255.255.255.255", &ip), 0);
	CHECK_EQ_U64(ip, 0xffffffffu);
	CHECK_STR(ss_format_ipv4(0xC6120001u, buf), "198.18.0.1");
	static const char *const bad[] = { "", "1.2.3", "1.2.3.4.", "1.2.3.4.5", "1..2.3",
					   "1.2.3.0004", "a.b.c.d", "1.2.3.4 ", "-1.2.3.4" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_U64(ss_parse_ipv4(bad[i], &ip), (uint64_t)-1);
}

int main(void)
{
	test_defaults_and_options();
	test_errors();
	test_cc_options();
	test_file();
	test_ipv4_text();
	return check_done("test_config");
}
