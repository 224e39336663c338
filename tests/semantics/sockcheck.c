/* sockcheck.c - runs the socket-semantics cases and prints one line per case. */
/*
 * Usage: sockcheck --server-ip A --peer-ip B --peer-port P
 *                  [--base-port N] [--timeout S] [--only NAME[,NAME...]]
 *        sockcheck --list | --known
 *
 *   --server-ip   our own address as the peer reaches it (for connect-backs)
 *   --peer-ip/--peer-port   where sockpeer listens; P+1 must be closed
 *   --blackhole-ip  an address nobody answers (default: .254 of the peer's /24)
 *   --base-port   first port of our listeners (default 31000, below Linux's ephemeral range)
 *   --timeout     per-case alarm() in seconds (default 20)
 *   --list        print every case name;  --known: the cases known not to
 *                 work under Slipstream yet
 *
 * Output: "ok NAME", "FAIL NAME: file:line: what", and for the cases named
 * in $SOCKCHECK_XFAIL (comma-separated; the word "slipstream" stands for
 * the --known list) "xfail NAME: ..." or "xpass NAME", which do not count.
 * Exit status: the number of FAIL lines (at most 100).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "sc.h"

sigjmp_buf sc_run_jmp;
char sc_run_msg[512];

static const struct sc_case *const areas[] = {
	sc_cases_connect, sc_cases_data, sc_cases_close, sc_cases_server,
	sc_cases_opts, sc_cases_epoll, sc_cases_poll, sc_cases_proc,
	sc_cases_fork, sc_cases_fork_data, sc_cases_splice, sc_cases_threads,
};

/* Known not to work under Slipstream yet (the POSIX layer is young); each
 * is a gap listed in docs/compat.md.  A case here that passes prints xpass.
 * NULL-terminated (empty today). */
static const char *const known_slipstream[] = {
	NULL,
};

static unsigned alarm_s = 20;

static void on_sigpipe(int sig)
{
	(void)sig;
	sc_sigpipe_count++;
}

/* The case ran past its alarm: back to the runner, which words the message. */
static void on_watchdog(int sig)
{
	(void)sig;
	sc_run_msg[0] = '\0';
	siglongjmp(sc_run_jmp, 2);
}

/* Every signal disposition and mask back to what the runner set up. */
static void signals_reset(void)
{
	struct sigaction sa = { .sa_handler = on_sigpipe };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	sigset_t none;

	setitimer(ITIMER_REAL, &off, NULL);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = on_watchdog;
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Is name in the comma-separated list (the word "slipstream" expands)? */
static int list_has(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && strncmp(p, name, n) == 0)
			return 1;
		if (n == 10 && strncmp(p, "slipstream", n) == 0)
			for (const char *const *k = known_slipstream; *k; k++)
				if (strcmp(*k, name) == 0)
					return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

/* Run one case; returns 1 if it counts as a failure. */
static int case_run(const struct sc_case *c, unsigned index, const char *xfail)
{
	static volatile int outcome;
	int expect_fail = list_has(xfail, c->name);

	sc.case_index = index;
	sc.case_name = c->name;
	sc_sigpipe_count = 0;
	signals_reset();
	fflush(stdout);
	outcome = sigsetjmp(sc_run_jmp, 1);
	if (outcome == 0) {
		alarm(alarm_s);
		c->fn();
	}
	alarm(0);
	signals_reset();
	sc_untrack_all();
	if (outcome == 2 && !sc_run_msg[0])
		snprintf(sc_run_msg, sizeof(sc_run_msg), "timed out after %u s (the "
			 "runner's alarm): a wait that never ended", alarm_s);
	if (outcome == 0)
		printf(expect_fail ? "xpass %s\n" : "ok %s\n", c->name);
	else
		printf("%s %s: %s\n", expect_fail ? "xfail" : "FAIL", c->name, sc_run_msg);
	fflush(stdout);
	return outcome != 0 && !expect_fail;
}

static int addr_parse(const char *s, struct sockaddr_in *a)
{
	a->sin_family = AF_INET;
	return inet_pton(AF_INET, s, &a->sin_addr) == 1 ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: sockcheck --server-ip A --peer-ip B --peer-port P "
		"[--blackhole-ip C] [--base-port N] [--timeout S] [--only NAME,...]\n"
		"       sockcheck --list | --known\n");
	exit(100);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server-ip", required_argument, NULL, 's' },
		{ "peer-ip", required_argument, NULL, 'p' },
		{ "peer-port", required_argument, NULL, 'P' },
		{ "base-port", required_argument, NULL, 'b' },
		{ "timeout", required_argument, NULL, 't' },
		{ "blackhole-ip", required_argument, NULL, 'B' },
		{ "only", required_argument, NULL, 'o' },
		{ "list", no_argument, NULL, 'l' },
		{ "known", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *only = NULL, *xfail = getenv("SOCKCHECK_XFAIL");
	int opt, list = 0, have_server = 0, have_peer = 0, have_blackhole = 0;
	int failures = 0;
	unsigned long peer_port = 0, base_port = 31000, index = 0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (addr_parse(optarg, &sc.server) < 0)
				usage();
			have_server = 1;
			break;
		case 'p':
			if (addr_parse(optarg, &sc.peer) < 0)
				usage();
			have_peer = 1;
			break;
		case 'P':
			peer_port = strtoul(optarg, NULL, 10);
			break;
		case 'b':
			base_port = strtoul(optarg, NULL, 10);
			break;
		case 'B':
			if (addr_parse(optarg, &sc.blackhole) < 0)
				usage();
			have_blackhole = 1;
			break;
		case 't':
			alarm_s = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'o':
			only = optarg;
			break;
		case 'l':
			list = 1;
			break;
		case 'k':
			for (const char *const *k = known_slipstream; *k; k++)
				printf("%s\n", *k);
			return 0;
		default:
			usage();
		}
	}
	if (list) {
		for (size_t a = 0; a < sizeof(areas) / sizeof(*areas); a++)
			for (const struct sc_case *c = areas[a]; c->name; c++)
				printf("%s\n", c->name);
		return 0;
	}
	if (!have_server || !have_peer || peer_port == 0 || peer_port > 65534 ||
	    base_port == 0 || base_port > 60000 || alarm_s == 0)
		usage();
	sc.peer.sin_port = htons((uint16_t)peer_port);
	sc.refused = sc.peer;
	sc.refused.sin_port = htons((uint16_t)(peer_port + 1));
	sc.base_port = (uint16_t)base_port;
	if (!have_blackhole) {
		/* .254 of the peer's /24 */
		sc.blackhole = sc.peer;
		sc.blackhole.sin_addr.s_addr = htonl((ntohl(sc.peer.sin_addr.s_addr) & ~0xffu) | 254);
	}
	sc.blackhole.sin_port = htons(9);
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (size_t a = 0; a < sizeof(areas) / sizeof(*areas); a++) {
		for (const struct sc_case *c = areas[a]; c->name; c++, index++) {
			if (only && !list_has(only, c->name))
				continue;
			failures += case_run(c, (unsigned)index, xfail);
		}
	}
	return failures > 100 ? 100 : failures;
}
