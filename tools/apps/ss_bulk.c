/* ss_bulk.c - ss-bulk: stream a deterministic byte stream and check it with SHA-256, on the low-level API. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "slipstream.h"
#include "util.h"

/*
 * send: each of K connections carries --bytes bytes of the xorshift64
 * stream seeded with S + i (i = connection index), written straight into
 * the transmit ring, then shuts down; done when everything is acknowledged
 * and the connection closed.
 * recv: reads each connection until the peer's FIN, hashing straight from
 * the receive ring.
 * Either side may --connect or --listen.  One JSON line at the end:
 *   {"bytes":total,"sha256":"<connection 0's stream>","conns":K,
 *    "seconds":t,"gbps":x,"error":null|"ECONNRESET"|...}
 * Exit status 1 on any connection error or timeout (named in "error").
 */

#define EV_BATCH 256

struct gen {
	uint64_t x;             /* xorshift64 state, never 0 */
	uint64_t word;          /* current 8 output bytes, little-endian */
	unsigned used;          /* bytes of word already handed out */
};

struct bulk_conn {
	struct ss_conn *c;
	uint64_t done;          /* bytes sent (send) or received (recv) */
	struct sha256 h;
	struct gen g;
	bool shut, finished, closing, closed;
};

struct bulk {
	bool sender;
	uint64_t bytes;         /* per connection (send) */
	uint64_t seed;
	unsigned k, opened, n_closed;
	struct bulk_conn *bc;
	struct ss_ctx *ctx;
	int error;
	double start, end, last_progress;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void gen_init(struct gen *g, uint64_t seed)
{
	g->x = seed ? seed : 0x9e3779b97f4a7c15u;
	g->used = 8;
}

static void gen_fill(struct gen *g, uint8_t *p, size_t n)
{
	while (n) {
		if (g->used == 8) {
			g->x ^= g->x << 13;
			g->x ^= g->x >> 7;
			g->x ^= g->x << 17;
			g->word = g->x;
			g->used = 0;
		}
		*p++ = (uint8_t)(g->word >> (8 * g->used++));
		n--;
	}
}

static void conn_fail(struct bulk *b, int err)
{
	if (!b->error)
		b->error = err ? err : EIO;
}

static void conn_close(struct bulk *b, struct bulk_conn *bc)
{
	if (bc->closing || ss_close(bc->c) < 0)
		return; /* EAGAIN: retried from pump_all */
	bc->closing = true;
}

/* Sender: fill free transmit space with the stream, then shut down. */
static void pump(struct bulk *b, struct bulk_conn *bc)
{
	struct iovec iov[2];

	while (!bc->closed && bc->done < b->bytes) {
		size_t n = ss_send_space(bc->c, iov), a;

		if (!n)
			break;
		if (n > b->bytes - bc->done)
			n = (size_t)(b->bytes - bc->done);
		a = iov[0].iov_len < n ? iov[0].iov_len : n;
		gen_fill(&bc->g, iov[0].iov_base, a);
		sha256_update(&bc->h, iov[0].iov_base, a);
		if (n > a) {
			gen_fill(&bc->g, iov[1].iov_base, n - a);
			sha256_update(&bc->h, iov[1].iov_base, n - a);
		}
		if (ss_send_commit(bc->c, n) < 0)
			return;
		bc->done += n;
	}
	if (!bc->closed && bc->done == b->bytes && !bc->shut && ss_shutdown(bc->c) == 0)
		bc->shut = true;
	if (bc->shut && !bc->finished && ss_send_queued(bc->c) == 0) {
		bc->finished = true;
		conn_close(b, bc);
	}
}

/* Receiver: hash and release everything readable. */
static void drain(struct bulk_conn *bc)
{
	struct iovec iov[2];
	size_t n = ss_recv_peek(bc->c, iov);

	if (!n)
		return;
	sha256_update(&bc->h, iov[0].iov_base, iov[0].iov_len);
	sha256_update(&bc->h, iov[1].iov_base, iov[1].iov_len);
	ss_recv_done(bc->c, n);
	bc->done += n;
}

static void conn_open(struct bulk *b, struct ss_conn *c)
{
	struct bulk_conn *bc;

	if (b->opened == b->k) {
		ss_abort(c); /* more than asked for */
		return;
	}
	bc = &b->bc[b->opened];
	gen_init(&bc->g, b->seed + b->opened);
	b->opened++;
	bc->c = c;
	ss_conn_set_user(c, bc);
	if (!b->start)
		b->start = now_seconds();
	if (b->sender)
		pump(b, bc);
}

static void handle(struct bulk *b, const struct ss_event *ev)
{
	struct bulk_conn *bc = ev->conn ? ss_conn_user(ev->conn) : NULL;

	switch (ev->type) {
	case SS_EVENT_LISTENING:
	case SS_EVENT_BOUND:
	case SS_EVENT_INHERITED:
	case SS_EVENT_ADOPTED:
	case SS_EVENT_MOVED:
	case SS_EVENT_LISTEN_STOPPED:
		break; /* bind, fork and shutdown events: not used here */
	case SS_EVENT_CMD_ERROR:
		if (ev->error)
			conn_fail(b, ev->error);
		break;
	case SS_EVENT_CONNECTED:
		if (ev->error)
			conn_fail(b, ev->error);
		else
			conn_open(b, ev->conn);
		break;
	case SS_EVENT_ACCEPTED:
		conn_open(b, ev->conn);
		break;
	case SS_EVENT_DATA:
		b->last_progress = now_seconds();
		if (bc && !b->sender)
			drain(bc);
		break;
	case SS_EVENT_SENT:
		b->last_progress = now_seconds();
		if (bc && b->sender)
			pump(b, bc);
		break;
	case SS_EVENT_PEER_CLOSED:
		if (!bc)
			break;
		if (!b->sender) {
			drain(bc);
			bc->finished = true;
			conn_close(b, bc);
		}
		break;
	case SS_EVENT_RESET:
	case SS_EVENT_ERROR:
		conn_fail(b, ev->error);
		if (bc)
			conn_close(b, bc);
		break;
	case SS_EVENT_CLOSED:
		if (!bc)
			break;
		bc->closed = true;
		b->n_closed++;
		if (!bc->finished)
			conn_fail(b, ECONNRESET);
		break;
	}
}

static void pump_all(struct bulk *b)
{
	for (unsigned i = 0; i < b->opened; i++) {
		struct bulk_conn *bc = &b->bc[i];

		if (bc->closed)
			continue;
		if (b->sender)
			pump(b, bc);
		else if (bc->finished)
			conn_close(b, bc);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ss-bulk send|recv (--connect IP:PORT | --listen PORT)\n"
		"               [--bytes N[K|M|G]] [--seed S] [--conns K] [--sock PATH]\n"
		"               [--timeout SECONDS] [--buf BYTES]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "connect", required_argument, NULL, 'C' },
		{ "listen", required_argument, NULL, 'L' },
		{ "bytes", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'S' },
		{ "conns", required_argument, NULL, 'k' },
		{ "sock", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "buf", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ss_app_opts ao = { .conns = 0, .rxbuf = 1u << 20, .txbuf = 1u << 20 };
	struct bulk b = { .bytes = 1000000000, .seed = 1, .k = 1 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ss_event evs[EV_BATCH];
	struct ss_app *app;
	uint32_t ip = 0;
	uint16_t port = 0;
	uint64_t v, timeout = 30, total = 0;
	bool listen_mode = false, have_peer = false;
	char err[128] = "", hex[65] = "";
	int opt;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		b.sender = true;
	else if (strcmp(argv[1], "recv"))
		usage();
	optind = 2;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'C':
			if (parse_ip_port(optarg, &ip, &port) < 0)
				usage();
			have_peer = true;
			break;
		case 'L':
			if (parse_count(optarg, &v) < 0 || !v || v > 65535)
				usage();
			port = (uint16_t)v;
			listen_mode = have_peer = true;
			break;
		case 'n':
			if (parse_count(optarg, &b.bytes) < 0)
				usage();
			break;
		case 'S':
			if (parse_count(optarg, &b.seed) < 0)
				usage();
			break;
		case 'k':
			if (parse_count(optarg, &v) < 0 || !v || v > 65536)
				usage();
			b.k = (unsigned)v;
			break;
		case 's': ao.sock_path = optarg; break;
		case 't':
			if (parse_count(optarg, &timeout) < 0 || !timeout)
				usage();
			break;
		case 'b':
			if (parse_count(optarg, &v) < 0 || !v || v > (1u << 30) || (v & (v - 1)))
				usage();
			ao.rxbuf = ao.txbuf = (uint32_t)v;
			break;
		default: usage();
		}
	}
	if (!have_peer || optind != argc)
		usage();
	ao.conns = b.k < 64 ? 64 : b.k;
	ao.errbuf = err;
	ao.errbuf_len = sizeof(err);
	b.bc = calloc(b.k, sizeof(*b.bc));
	if (!b.bc)
		return 1;
	for (unsigned i = 0; i < b.k; i++)
		sha256_init(&b.bc[i].h);
	app = ss_app_attach(&ao);
	if (!app) {
		fprintf(stderr, "ss-bulk: attach: %s%s%s\n", strerror(errno),
			*err ? ": " : "", err);
		free(b.bc);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	b.ctx = ss_ctx_get(app, 0);

	/* Listen, or open K connections (retrying while the queue is full). */
	for (unsigned i = 0; i < (listen_mode ? 1 : b.k) && !stop; ) {
		int rc = listen_mode ? ss_listen(b.ctx, port, b.k, 0)
				     : ss_connect(b.ctx, ip, port, i);

		if (rc == 0) {
			i++;
			continue;
		}
		int n = ss_poll(b.ctx, evs, EV_BATCH);

		for (int j = 0; j < n; j++)
			handle(&b, &evs[j]);
	}
	b.last_progress = now_seconds();
	while (!stop && !b.error && b.n_closed < b.k) {
		int n = ss_poll(b.ctx, evs, EV_BATCH);

		for (int i = 0; i < n; i++)
			handle(&b, &evs[i]);
		pump_all(&b);
		if (b.opened == b.k && !b.end) {
			bool all = true;

			for (unsigned i = 0; i < b.k; i++)
				all &= b.bc[i].finished;
			if (all)
				b.end = now_seconds();
		}
		/* No progress for --timeout seconds (waiting for connections,
		 * data, acknowledgements or the close). */
		if (n == 0 && now_seconds() - b.last_progress > (double)timeout)
			conn_fail(&b, ETIMEDOUT);
		if (n == 0)
			ss_wait(b.ctx, 100);
		else
			b.last_progress = now_seconds();
	}
	if (stop && !b.error)
		b.error = EINTR;
	if (!b.end)
		b.end = now_seconds();
	for (unsigned i = 0; i < b.opened; i++)
		total += b.bc[i].done;
	if (b.opened) {
		uint8_t d[SHA256_DIGEST_LEN];

		sha256_final(&b.bc[0].h, d);
		sha256_hex(d, hex);
	}
	double secs = b.start ? b.end - b.start : 0;
	const char *en = ss_errno_name(b.error);

	printf("{\"bytes\":%llu,\"sha256\":%s%s%s,\"conns\":%u,\"seconds\":%.6f,"
	       "\"gbps\":%.3f,\"error\":%s%s%s}\n",
	       (unsigned long long)total, *hex ? "\"" : "", *hex ? hex : "null",
	       *hex ? "\"" : "", b.k, secs,
	       secs > 0 ? (double)total * 8 / secs / 1e9 : 0.0,
	       en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	ss_app_detach(app);
	free(b.bc);
	return b.error ? 1 : 0;
}
