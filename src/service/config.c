/* config.c - slipstreamd command line and config file parsing (pure, unit tested). */
#include "service/config.h"
#include "util/log.h"
#include "stack/stack.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In parts: ISO C caps a string literal at 4095 bytes. */
const char *const ss_config_usage[] = {
	"usage: slipstreamd --ip ADDR/PREFIX [options] [-- DPDK-EAL-ARGS...]\n"
	"  -c, --config FILE     read options from FILE (key = value lines)\n"
	"  --ip ADDR/PREFIX      the service's IPv4 address, e.g. 198.18.0.1/24\n"
	"  --gateway ADDR        default gateway (resolved by ARP at start)\n"
	"  --ctl PATH            control socket (default " SS_CONFIG_DEFAULT_CTL ")\n"
	"  --cores N             fast-path threads, one NIC queue each (default 1)\n"
	"  --port N              DPDK port id to serve (default 0)\n"
	"  --rx-desc N           RX descriptors per queue (default 2048; AF_XDP: at least\n"
	"                        4096, the whole fill ring lent to the kernel)\n"
	"  --tx-desc N           TX descriptors per queue (default 1024)\n"
	"  --arp-entries N       ARP cache size, power of two (default 256)\n"
	,
	"  --idle-polls N        the most empty polls before a fast-path thread sleeps\n"
	"                        (default 64)\n"
	"  --idle-adapt on|off   fewer empty polls while idle spells outlast them\n"
	"                        (default off: always --idle-polls; see\n"
	"                        docs/architecture.md before turning it on)\n"
	"  --idle-yield on|off   give the CPU away (sched_yield) after each empty poll,\n"
	"                        after light rounds, for a fast path that shares its\n"
	"                        CPU with the application (default on)\n"
	"  --busy-yield N        with --idle-yield on, also give the CPU away after every\n"
	"                        N frames of back-to-back busy rounds, so an application\n"
	"                        on the same CPU takes its events while they are still in\n"
	"                        cache (default 256; 0: never; see docs/architecture.md)\n"
	"  --rx-budget N         frames a fast-path thread takes from its RX queue per round,\n"
	"                        in bursts of 32, before the round's other work (default 128)\n"
	"  --max-apps N          applications attached at once (default 16)\n"
	"  --max-flows N         TCP connections incl. TIME_WAIT (default 65536)\n"
	"  --max-app-conns N     connections one application may hold (default 16384)\n"
	"  --max-buf BYTES       largest per-connection ring an app may ask for (default 4194304)\n"
	"  --max-listeners N     listening ports (default 64)\n"
	"  --max-app-mem BYTES   connection rings one application may map (default 4294967296)\n"
	"  --shm-huge on|off|auto  huge pages for the apps' shared regions, populated ahead of\n"
	"                        use; auto where the host's shmem THP mode allows them, on\n"
	"                        also sets that mode from 'never' to 'advise' (default auto)\n"
	"  --max-orphan-mem BYTES  data still to send, kept after its application exited\n"
	"                        (default 268435456; beyond it such connections are reset)\n"
	"  --time-wait-ms N      TIME_WAIT duration, 2*MSL (default 60000)\n"
	"  --local-ports LO-HI   ephemeral ports for connect() and bind(0), as Linux's\n"
	"                        ip_local_port_range (default 32768-60999)\n"
	,
	"  --delack-us N         hold the ACK of a lone segment for the reply, up to N us\n"
	"                        (default 1000; 0 = ACK at the end of every burst)\n"
	"  --delack-max-us N     the longest hold of a connection whose replies came after\n"
	"                        its ACK went alone: holds step up by four times from\n"
	"                        --delack-us to N (default 128000; at most --delack-us:\n"
	"                        no longer hold)\n"
	"  --ecn on|off          negotiate ECN with peers (RFC 3168; default on)\n"
	"  --tso on|off          TCP segmentation offload where the port has it and both\n"
	"                        TX checksum offloads (default on)\n"
	"  --tw-reuse on|off     connect() may take a 4-tuple in TIME_WAIT for 1 s or\n"
	"                        more if it had timestamps (Linux's tcp_tw_reuse = 1;\n"
	"                        default on)\n"
	"  --syn-cookies on|off|always  answer SYNs past a listener's backlog with a\n"
	"                        SYN cookie instead of dropping them (default on;\n"
	"                        always: every SYN, for tests)\n"
	"  --cc ALG              congestion control: auto (default: cubic, bbr once a\n"
	"                        window-limited flow loses segments, dctcp-win once\n"
	"                        an ECN path marks), dctcp-rate, dctcp-win, timely,\n"
	"                        cubic, newreno or bbr\n"
	"  --cc-app NAME=ALG     algorithm for the application whose process is NAME\n"
	"                        (repeatable)\n"
	"  --app-rate-cap NAME=MBIT  cap in Mbit/s over all flows of application NAME\n"
	"                        (repeatable)\n"
	"  --cc-share host|flow  dctcp-rate: one controller per remote host, its rate\n"
	"                        split among the host's flows (host, default: fair),\n"
	"                        or one per flow (flow: fewer instructions per packet)\n"
	"  --cc-interval-rtts N  control interval in smoothed RTTs (default 2)\n"
	"  --cc-step-mbit MBIT   additive increase per interval of dctcp-rate and\n"
	"                        timely (default 10)\n"
	"  --cc-trace FILE       write one line per control interval to FILE (for\n"
	"                        tuning; see docs/congestion.md)\n"
	"  --log-level LEVEL     err, warn, info or debug (default info)\n"
	"  -h, --help            this text\n"
	"EAL example: -- --no-huge --no-pci --no-shconf -l 0 "
	"--vdev=net_af_xdp0,iface=veth0\n",
	NULL,
};

void ss_config_defaults(struct ss_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->ctl_path, sizeof(cfg->ctl_path), "%s", SS_CONFIG_DEFAULT_CTL);
	cfg->cores = 1;
	cfg->rx_desc = 2048;
	cfg->tx_desc = 1024;
	cfg->arp_entries = 256;
	cfg->idle_polls = 64;
	cfg->idle_yield = true;
	cfg->busy_yield = 256;
	cfg->idle_adapt = false;
	cfg->shm_huge = SS_SHM_HUGE_AUTO;
	cfg->rx_budget = 128;
	cfg->max_apps = 16;
	cfg->max_flows = 65536;
	cfg->max_app_conns = 16384;
	cfg->max_buf = 4u << 20;
	cfg->max_listeners = 64;
	cfg->max_app_mem = 4ull << 30;
	cfg->max_orphan_mem = 256ull << 20;
	cfg->time_wait_ms = 60000;
	cfg->delack_us = 1000;
	cfg->delack_max_us = 128000;
	cfg->ecn = true;
	cfg->tso = true;
	cfg->tw_reuse = true;
	cfg->syn_cookies = SS_SYN_COOKIES_ON;
	cfg->local_port_lo = 32768;
	cfg->local_port_hi = 60999;
	ss_cc_policy_default(&cfg->cc);
	cfg->log_level = SS_LOG_INFO;
	cfg->eal_argc = 1;
	cfg->eal_argv[0] = cfg->eal_store;
	snprintf(cfg->eal_store, sizeof(cfg->eal_store), "slipstreamd");
	cfg->eal_used = strlen("slipstreamd") + 1;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int ss_parse_ipv4(const char *s, uint32_t *out)
{
	uint32_t ip = 0;
	for (int i = 0; i < 4; i++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned v = 0, digits = 0;
		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (unsigned)(*s++ - '0');
			if (++digits > 3 || v > 255)
				return -1;
		}
		ip = ip << 8 | v;
		if (i < 3 && *s++ != '.')
			return -1;
	}
	if (*s != '\0')
		return -1;
	*out = ip;
	return 0;
}

const char *ss_format_ipv4(uint32_t ip, char *buf)
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff,
		 (ip >> 8) & 0xff, ip & 0xff);
	return buf;
}

/* "on" or "off" for option @key; 0, or -1 with the message in @err. */
static int parse_on_off(const char *key, const char *val, bool *out, char *err, size_t errlen)
{
	if (strcmp(val, "on") == 0)
		*out = true;
	else if (strcmp(val, "off") == 0)
		*out = false;
	else
		return fail(err, errlen, "%s: expected on or off, got '%s'", key, val);
	return 0;
}

/* "off", "on" or @third for option @key, stored as @vals[0], [1] or [2];
 * 0, or -1 with the message in @err. */
static int parse_on_off_or(const char *key, const char *val, const char *third,
			   const uint8_t vals[3], uint8_t *out, char *err, size_t errlen)
{
	if (strcmp(val, "off") == 0)
		*out = vals[0];
	else if (strcmp(val, "on") == 0)
		*out = vals[1];
	else if (strcmp(val, third) == 0)
		*out = vals[2];
	else
		return fail(err, errlen, "%s: expected on, off or %s, got '%s'", key, third, val);
	return 0;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int add_eal_arg(struct ss_config *cfg, const char *arg, size_t len,
		       char *err, size_t errlen)
{
	if (cfg->eal_argc >= SS_CONFIG_MAX_EAL_ARGS)
		return fail(err, errlen, "too many DPDK arguments (max %d)",
			    SS_CONFIG_MAX_EAL_ARGS);
	if (cfg->eal_used + len + 1 > sizeof(cfg->eal_store))
		return fail(err, errlen, "DPDK arguments too long");
	char *dst = cfg->eal_store + cfg->eal_used;
	memcpy(dst, arg, len);
	dst[len] = '\0';
	cfg->eal_used += len + 1;
	cfg->eal_argv[cfg->eal_argc++] = dst;
	cfg->eal_argv[cfg->eal_argc] = NULL;
	return 0;
}

/* Applies one option by its long name. */
static int apply(struct ss_config *cfg, const char *key, const char *val,
		 char *err, size_t errlen)
{
	unsigned long n;

	if (strcmp(key, "ip") == 0) {
		char addr[32];
		const char *slash = strchr(val, '/');
		size_t alen = slash ? (size_t)(slash - val) : strlen(val);
		if (!slash || alen >= sizeof(addr))
			return fail(err, errlen, "ip: expected ADDR/PREFIX, got '%s'", val);
		memcpy(addr, val, alen);
		addr[alen] = '\0';
		if (ss_parse_ipv4(addr, &cfg->ip) != 0)
			return fail(err, errlen, "ip: bad address '%s'", addr);
		if (parse_uint(slash + 1, 1, 32, &n) != 0)
			return fail(err, errlen, "ip: bad prefix length '%s'", slash + 1);
		cfg->prefix_len = (uint8_t)n;
		cfg->has_ip = true;
	} else if (strcmp(key, "gateway") == 0) {
		if (ss_parse_ipv4(val, &cfg->gateway) != 0)
			return fail(err, errlen, "gateway: bad address '%s'", val);
	} else if (strcmp(key, "ctl") == 0) {
		if (val[0] == '\0' || strlen(val) >= sizeof(cfg->ctl_path))
			return fail(err, errlen, "ctl: path empty or longer than %zu bytes",
				    sizeof(cfg->ctl_path) - 1);
		snprintf(cfg->ctl_path, sizeof(cfg->ctl_path), "%s", val);
	} else if (strcmp(key, "cores") == 0) {
		if (parse_uint(val, 1, 128, &n) != 0)
			return fail(err, errlen, "cores: expected 1..128, got '%s'", val);
		cfg->cores = (unsigned)n;
	} else if (strcmp(key, "port") == 0) {
		if (parse_uint(val, 0, 1023, &n) != 0)
			return fail(err, errlen, "port: expected 0..1023, got '%s'", val);
		cfg->port_id = (uint16_t)n;
	} else if (strcmp(key, "rx-desc") == 0 || strcmp(key, "tx-desc") == 0) {
		if (parse_uint(val, 64, 16384, &n) != 0 || (n & (n - 1)) != 0)
			return fail(err, errlen, "%s: expected a power of two in 64..16384, got '%s'",
				    key, val);
		if (key[0] == 'r')
			cfg->rx_desc = (uint16_t)n;
		else
			cfg->tx_desc = (uint16_t)n;
	} else if (strcmp(key, "arp-entries") == 0) {
		if (parse_uint(val, 16, 1u << 20, &n) != 0 || (n & (n - 1)) != 0)
			return fail(err, errlen, "arp-entries: expected a power of two in 16..1048576, got '%s'",
				    val);
		cfg->arp_entries = (uint32_t)n;
	} else if (strcmp(key, "idle-polls") == 0) {
		if (parse_uint(val, 1, 1000000, &n) != 0)
			return fail(err, errlen, "idle-polls: expected 1..1000000, got '%s'", val);
		cfg->idle_polls = (uint32_t)n;
	} else if (strcmp(key, "idle-adapt") == 0) {
		return parse_on_off(key, val, &cfg->idle_adapt, err, errlen);
	} else if (strcmp(key, "idle-yield") == 0) {
		return parse_on_off(key, val, &cfg->idle_yield, err, errlen);
	} else if (strcmp(key, "busy-yield") == 0) {
		if (parse_uint(val, 0, 1000000, &n) != 0)
			return fail(err, errlen, "busy-yield: expected 0..1000000, got '%s'", val);
		cfg->busy_yield = (uint32_t)n;
	} else if (strcmp(key, "shm-huge") == 0) {
		return parse_on_off_or(key, val, "auto",
				       (const uint8_t[3]){ SS_SHM_HUGE_OFF, SS_SHM_HUGE_ON,
							   SS_SHM_HUGE_AUTO },
				       &cfg->shm_huge, err, errlen);
	} else if (strcmp(key, "rx-budget") == 0) {
		if (parse_uint(val, 1, 65536, &n) != 0)
			return fail(err, errlen, "rx-budget: expected 1..65536, got '%s'", val);
		cfg->rx_budget = (uint32_t)n;
	} else if (strcmp(key, "max-apps") == 0) {
		if (parse_uint(val, 1, 1024, &n) != 0)
			return fail(err, errlen, "max-apps: expected 1..1024, got '%s'", val);
		cfg->max_apps = (uint32_t)n;
	} else if (strcmp(key, "max-flows") == 0) {
		if (parse_uint(val, 16, 1u << 24, &n) != 0)
			return fail(err, errlen, "max-flows: expected 16..16777216, got '%s'", val);
		cfg->max_flows = (uint32_t)n;
	} else if (strcmp(key, "max-app-conns") == 0) {
		if (parse_uint(val, 1, 1u << 22, &n) != 0)
			return fail(err, errlen, "max-app-conns: expected 1..4194304, got '%s'", val);
		cfg->max_app_conns = (uint32_t)n;
	} else if (strcmp(key, "max-buf") == 0) {
		if (parse_uint(val, 4096, 1u << 30, &n) != 0 || (n & (n - 1)) != 0)
			return fail(err, errlen, "max-buf: expected a power of two in 4096..1073741824, got '%s'",
				    val);
		cfg->max_buf = (uint32_t)n;
	} else if (strcmp(key, "max-listeners") == 0) {
		if (parse_uint(val, 1, 65535, &n) != 0)
			return fail(err, errlen, "max-listeners: expected 1..65535, got '%s'", val);
		cfg->max_listeners = (uint32_t)n;
	} else if (strcmp(key, "max-app-mem") == 0) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(val, &end, 10);
		if (errno || *end || end == val || v < (1u << 20) || v > (1ull << 40))
			return fail(err, errlen, "max-app-mem: expected 1048576..1099511627776, got '%s'", val);
		cfg->max_app_mem = v;
	} else if (strcmp(key, "max-orphan-mem") == 0) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(val, &end, 10);
		if (errno || *end || end == val || val[0] == '-' || v > (1ull << 40))
			return fail(err, errlen, "max-orphan-mem: expected 0..1099511627776, got '%s'",
				    val);
		cfg->max_orphan_mem = v;
	} else if (strcmp(key, "ecn") == 0) {
		return parse_on_off(key, val, &cfg->ecn, err, errlen);
	} else if (strcmp(key, "tso") == 0) {
		return parse_on_off(key, val, &cfg->tso, err, errlen);
	} else if (strcmp(key, "tw-reuse") == 0) {
		return parse_on_off(key, val, &cfg->tw_reuse, err, errlen);
	} else if (strcmp(key, "cc") == 0) {
		return ss_cc_policy_set_algo(&cfg->cc, val, err, errlen);
	} else if (strcmp(key, "cc-app") == 0) {
		return ss_cc_policy_add_algo(&cfg->cc, val, err, errlen);
	} else if (strcmp(key, "app-rate-cap") == 0) {
		return ss_cc_policy_add_cap(&cfg->cc, val, err, errlen);
	} else if (strcmp(key, "cc-share") == 0) {
		return ss_cc_policy_set_share(&cfg->cc, val, err, errlen);
	} else if (strcmp(key, "cc-interval-rtts") == 0) {
		if (parse_uint(val, 1, 64, &n) != 0)
			return fail(err, errlen, "cc-interval-rtts: expected 1..64, got '%s'", val);
		cfg->cc.params.interval_rtts = (uint32_t)n;
	} else if (strcmp(key, "cc-step-mbit") == 0) {
		char *end;
		errno = 0;
		double mbit = strtod(val, &end);
		if (errno || *end || end == val || !(mbit >= 0.01 && mbit <= 100000))
			return fail(err, errlen, "cc-step-mbit: expected Mbit/s in 0.01..100000, got '%s'",
				    val);
		cfg->cc.params.dctcp_rate.step = (uint64_t)(mbit * 1e6 / 8 + 0.5);
		cfg->cc.params.timely.delta = cfg->cc.params.dctcp_rate.step;
	} else if (strcmp(key, "cc-trace") == 0) {
		if (!*val || strlen(val) >= sizeof(cfg->cc_trace))
			return fail(err, errlen, "cc-trace: expected a file name of 1..%zu bytes",
				    sizeof(cfg->cc_trace) - 1);
		snprintf(cfg->cc_trace, sizeof(cfg->cc_trace), "%s", val);
	} else if (strcmp(key, "delack-us") == 0) {
		if (parse_uint(val, 0, 500000, &n) != 0)
			return fail(err, errlen, "delack-us: expected 0..500000 (RFC 1122: at most 0.5 s), got '%s'",
				    val);
		cfg->delack_us = (uint32_t)n;
	} else if (strcmp(key, "delack-max-us") == 0) {
		if (parse_uint(val, 0, 500000, &n) != 0)
			return fail(err, errlen, "delack-max-us: expected 0..500000 (RFC 1122: at most 0.5 s), got '%s'",
				    val);
		cfg->delack_max_us = (uint32_t)n;
	} else if (strcmp(key, "syn-cookies") == 0) {
		return parse_on_off_or(key, val, "always",
				       (const uint8_t[3]){ SS_SYN_COOKIES_OFF, SS_SYN_COOKIES_ON,
							   SS_SYN_COOKIES_ALWAYS },
				       &cfg->syn_cookies, err, errlen);
	} else if (strcmp(key, "local-ports") == 0) {
		char lo_s[8], hi_s[8];
		const char *dash = strchr(val, '-');
		unsigned long lo = 0, hi = 0;
		size_t ln = dash ? (size_t)(dash - val) : 0;
		bool ok = dash && ln && ln < sizeof(lo_s) && strlen(dash + 1) < sizeof(hi_s);
		if (ok) {
			memcpy(lo_s, val, ln);
			lo_s[ln] = '\0';
			strcpy(hi_s, dash + 1);
			ok = parse_uint(lo_s, 1, 65535, &lo) == 0 && parse_uint(hi_s, 1, 65535, &hi) == 0 &&
			     lo <= hi;
		}
		if (!ok)
			return fail(err, errlen, "local-ports: expected LO-HI with 1 <= LO <= HI <= 65535, "
				    "got '%s'", val);
		cfg->local_port_lo = (uint16_t)lo;
		cfg->local_port_hi = (uint16_t)hi;
	} else if (strcmp(key, "time-wait-ms") == 0) {
		if (parse_uint(val, 0, 240000, &n) != 0)
			return fail(err, errlen, "time-wait-ms: expected 0..240000, got '%s'", val);
		cfg->time_wait_ms = (uint32_t)n;
	} else if (strcmp(key, "log-level") == 0) {
		int lvl = ss_log_level_parse(val);
		if (lvl < 0)
			return fail(err, errlen, "log-level: expected err, warn, info or debug, got '%s'",
				    val);
		cfg->log_level = lvl;
	} else if (strcmp(key, "dpdk") == 0) {
		const char *p = val;
		while (*p) {
			while (*p == ' ' || *p == '\t')
				p++;
			const char *start = p;
			while (*p && *p != ' ' && *p != '\t')
				p++;
			if (p > start && add_eal_arg(cfg, start, (size_t)(p - start), err, errlen))
				return -1;
		}
	} else {
		return fail(err, errlen, "unknown option '%s'", key);
	}
	return 0;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

int ss_config_parse_text(struct ss_config *cfg, const char *text, char *err,
			 size_t errlen)
{
	unsigned lineno = 0;
	const char *p = text;

	while (*p) {
		char line[1024];
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lineno++;
		if (len >= sizeof(line))
			return fail(err, errlen, "line %u: longer than %zu bytes", lineno,
				    sizeof(line) - 1);
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);

		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *s = trim(line);
		if (*s == '\0')
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen, "line %u: expected 'key = value'", lineno);
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		char sub[256];
		if (apply(cfg, key, val, sub, sizeof(sub)) != 0)
			return fail(err, errlen, "line %u: %s", lineno, sub);
	}
	return 0;
}

static int load_file(struct ss_config *cfg, const char *path, char *err,
		     size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return fail(err, errlen, "config %s: %s", path, strerror(errno));
	char text[65536];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	int too_big = !feof(f);
	fclose(f);
	if (too_big)
		return fail(err, errlen, "config %s: larger than %zu bytes", path,
			    sizeof(text) - 1);
	text[n] = '\0';
	char sub[512];
	if (ss_config_parse_text(cfg, text, sub, sizeof(sub)) != 0)
		return fail(err, errlen, "config %s: %s", path, sub);
	return 0;
}

int ss_config_parse_args(struct ss_config *cfg, int argc, char **argv,
			 char *err, size_t errlen)
{
	int end = argc; /* index of "--" */

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			end = i;
			break;
		}
	/* The config file first, so the command line overrides it. */
	for (int i = 1; i < end; i++) {
		if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= end)
				return fail(err, errlen, "%s needs a value", argv[i]);
			if (load_file(cfg, argv[i + 1], err, errlen) != 0)
				return -1;
		}
	}
	for (int i = 1; i < end; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			/* The text is ss_config_usage, which the caller prints. */
			snprintf(err, errlen, "help");
			return 1;
		}
		if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
			return fail(err, errlen, "unexpected argument '%s' (see --help)", a);
		char key[64];
		const char *val;
		const char *eq = strchr(a, '=');
		if (eq) {
			size_t klen = (size_t)(eq - a - 2);
			if (klen >= sizeof(key))
				return fail(err, errlen, "unknown option '%s'", a);
			memcpy(key, a + 2, klen);
			key[klen] = '\0';
			val = eq + 1;
		} else {
			snprintf(key, sizeof(key), "%s", a + 2);
			if (i + 1 >= end)
				return fail(err, errlen, "%s needs a value", a);
			val = argv[++i];
		}
		if (apply(cfg, key, val, err, errlen) != 0)
			return -1;
	}
	for (int i = end + 1; i < argc; i++)
		if (add_eal_arg(cfg, argv[i], strlen(argv[i]), err, errlen) != 0)
			return -1;
	if (!cfg->has_ip)
		return fail(err, errlen, "--ip ADDR/PREFIX is required (see --help)");
	if (cfg->gateway) {
		uint32_t mask = cfg->prefix_len == 32 ? ~0u : ~(~0u >> cfg->prefix_len);
		if ((cfg->gateway & mask) != (cfg->ip & mask))
			return fail(err, errlen, "gateway is not inside %u-bit prefix of ip",
				    cfg->prefix_len);
	}
	return 0;
}
