/* ss_rpc.c - ss-rpc: closed-loop request/response load against an echo server, on the low-level API. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slipstream.h"
#include "util.h"

/*
 * K connections, one request of --size bytes in flight on each: send it,
 * wait until --size bytes came back, record the latency, send the next.
 * After --seconds, prints
 *   {"conns":K,"size":S,"seconds":t,"requests":n,"rps":x,
 *    "p50_us":a,"p99_us":b,"error":null|"ECONNRESET"|...}
 * Latencies go to a log-linear histogram (16 sub-buckets per power of two
 * of nanoseconds: under 6.25% error), so memory does not grow with time.
 */

#define EV_BATCH 256

struct rpc_conn {
	struct ss_conn *c;
	uint64_t sent_at;       /* ns, request start */
	size_t to_send, to_recv;
};

static volatile sig_atomic_t stop;
static uint64_t hist[LAT_BUCKETS];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void send_req(struct rpc_conn *rc, const uint8_t *payload, size_t size)
{
	ssize_t n;

	if (!rc->to_send && !rc->to_recv) {
		rc->to_send = rc->to_recv = size;
		rc->sent_at = now_ns();
	}
	if (!rc->to_send)
		return;
	n = ss_send(rc->c, payload + (size - rc->to_send), rc->to_send);
	if (n > 0)
		rc->to_send -= (size_t)n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ss-rpc --connect IP:PORT [--conns K] [--size BYTES] [--seconds T]\n"
		"              [--sock PATH]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "connect", required_argument, NULL, 'C' },
		{ "conns", required_argument, NULL, 'k' },
		{ "size", required_argument, NULL, 'z' },
		{ "seconds", required_argument, NULL, 'T' },
		{ "sock", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ss_app_opts ao = { .rxbuf = 16384, .txbuf = 16384 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ss_event evs[EV_BATCH];
	struct rpc_conn *rcs;
	struct ss_app *app;
	struct ss_ctx *ctx;
	uint8_t *payload, sink[4096];
	uint64_t k = 1, size = 64, seconds = 10, requests = 0;
	uint64_t t_start = 0, t_end, opened = 0;
	uint32_t ip = 0;
	uint16_t port = 0;
	int error = 0, opt;
	char err[128] = "";

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'C':
			if (parse_ip_port(optarg, &ip, &port) < 0)
				usage();
			break;
		case 'k':
			if (parse_count(optarg, &k) < 0 || !k || k > 65536)
				usage();
			break;
		case 'z':
			if (parse_count(optarg, &size) < 0 || !size || size > 8192)
				usage();
			break;
		case 'T':
			if (parse_count(optarg, &seconds) < 0 || !seconds)
				usage();
			break;
		case 's': ao.sock_path = optarg; break;
		default: usage();
		}
	}
	if (!port || optind != argc)
		usage();
	ao.conns = k < 64 ? 64 : (uint32_t)k;
	ao.errbuf = err;
	ao.errbuf_len = sizeof(err);
	rcs = calloc(k, sizeof(*rcs));
	payload = malloc(size);
	if (!rcs || !payload) {
		free(rcs);
		free(payload);
		return 1;
	}
	memset(payload, 'r', size);
	app = ss_app_attach(&ao);
	if (!app) {
		fprintf(stderr, "ss-rpc: attach: %s%s%s\n", strerror(errno),
			*err ? ": " : "", err);
		free(rcs);
		free(payload);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ctx = ss_ctx_get(app, 0);

	for (uint64_t i = 0; i < k && !stop; ) {
		if (ss_connect(ctx, ip, port, i) == 0)
			i++;
		else
			ss_wait(ctx, 1); /* queue full: let the service drain it */
	}
	t_end = now_ns() + 10ull * 1000000000u; /* connection setup limit */
	while (!stop && !error) {
		int n = ss_poll(ctx, evs, EV_BATCH);
		uint64_t now = now_ns();

		if (now >= t_end) {
			if (!t_start)
				error = ETIMEDOUT;
			break;
		}
		for (int i = 0; i < n; i++) {
			struct ss_event *ev = &evs[i];
			struct rpc_conn *rc = ev->conn ? ss_conn_user(ev->conn) : NULL;

			switch (ev->type) {
			case SS_EVENT_CONNECTED:
				if (ev->error) {
					error = ev->error;
					break;
				}
				if (ev->cookie >= k) {
					error = EPROTO;
					break;
				}
				rc = &rcs[ev->cookie];
				rc->c = ev->conn;
				ss_conn_set_user(ev->conn, rc);
				if (++opened == k) {
					t_start = now_ns();
					t_end = t_start + seconds * 1000000000u;
					memset(hist, 0, sizeof(hist));
					requests = 0;
				}
				send_req(rc, payload, size);
				break;
			case SS_EVENT_DATA:
				if (!rc)
					break;
				for (size_t got; (got = ss_recv(rc->c, sink, sizeof(sink))); ) {
					rc->to_recv = got > rc->to_recv ? 0 : rc->to_recv - got;
					if (!rc->to_recv && !rc->to_send) {
						lat_add(hist, now_ns() - rc->sent_at);
						requests++;
						send_req(rc, payload, size);
					}
				}
				break;
			case SS_EVENT_SENT:
				if (rc)
					send_req(rc, payload, size);
				break;
			case SS_EVENT_PEER_CLOSED:
				error = ECONNRESET;
				break;
			case SS_EVENT_RESET:
			case SS_EVENT_ERROR:
			case SS_EVENT_CMD_ERROR:
				error = ev->error ? ev->error : EIO;
				break;
			default:
				break;
			}
		}
		if (n == 0)
			ss_wait(ctx, 10);
	}
	double secs = t_start ? (double)(now_ns() - t_start) / 1e9 : 0;
	const char *en = ss_errno_name(error);

	printf("{\"conns\":%llu,\"size\":%llu,\"seconds\":%.3f,\"requests\":%llu,"
	       "\"rps\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"error\":%s%s%s}\n",
	       (unsigned long long)k, (unsigned long long)size, secs,
	       (unsigned long long)requests, secs > 0 ? (double)requests / secs : 0.0,
	       (double)lat_pct(hist, requests, 0.50) / 1000.0,
	       (double)lat_pct(hist, requests, 0.99) / 1000.0,
	       en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	ss_app_detach(app);
	free(rcs);
	free(payload);
	return error ? 1 : 0;
}
