/* ss_echo.c - ss-echo: a zero-copy echo server on libslipstream's low-level API. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slipstream.h"
#include "util.h"

/*
 * One thread per context; each listens on the port (the service decides
 * how accepted connections are spread over listeners on the same port).
 * Per connection the only state is a flag in the user pointer: the peer
 * has closed.  Echo = copy min(readable, free) from the receive ring into
 * the transmit ring, again on DATA and on SENT (space freed).  Once the
 * peer has closed and everything is echoed, close our side.
 */

#define EV_BATCH 256
#define PEER_CLOSED ((void *)1)

static volatile sig_atomic_t stop;

/* Counters: written by their worker only, read by the stats line. */
#define STAT_ADD(field, n) __atomic_store_n(&(field), (field) + (n), __ATOMIC_RELAXED)

struct worker {
	struct ss_ctx *ctx;
	unsigned idx;
	uint16_t port;
	pthread_t thr;
	int failed;
	/* Connections whose ss_close found the command queue full. */
	struct ss_conn **retry;
	size_t n_retry, cap_retry;
	/* Written by the worker, read racily by the stats printer. */
	uint64_t accepted, active, closed, resets, bytes;
};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void conn_close(struct worker *w, struct ss_conn *c)
{
	if (ss_close(c) == 0 || errno != EAGAIN)
		return;
	if (w->n_retry == w->cap_retry) {
		size_t cap = w->cap_retry ? 2 * w->cap_retry : 64;
		struct ss_conn **r = realloc(w->retry, cap * sizeof(*r));

		if (!r) {
			ss_abort(c);
			return;
		}
		w->retry = r;
		w->cap_retry = cap;
	}
	w->retry[w->n_retry++] = c;
}

static void retry_closes(struct worker *w)
{
	size_t n = w->n_retry;

	w->n_retry = 0;
	for (size_t i = 0; i < n; i++)
		conn_close(w, w->retry[i]);
}

static void echo(struct worker *w, struct ss_conn *c)
{
	struct iovec rx[2], tx[2];
	size_t avail, space, n;

	for (;;) {
		avail = ss_recv_peek(c, rx);
		space = ss_send_space(c, tx);
		n = avail < space ? avail : space;
		if (!n)
			break;
		iov2_copy(tx, rx, n);
		if (ss_send_commit(c, n) < 0)
			break;
		ss_recv_done(c, n);
		STAT_ADD(w->bytes, n);
	}
	if (ss_conn_user(c) == PEER_CLOSED && avail == 0) {
		ss_conn_set_user(c, NULL); /* close once */
		conn_close(w, c);
	}
}

static void handle(struct worker *w, const struct ss_event *ev)
{
	switch (ev->type) {
	case SS_EVENT_LISTENING:
		if (ev->error) {
			fprintf(stderr, "ss-echo: context %u: listen on port %u: %s\n",
				w->idx, w->port, strerror(ev->error));
			__atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
		}
		break;
	case SS_EVENT_ACCEPTED:
		STAT_ADD(w->accepted, 1);
		STAT_ADD(w->active, 1);
		break;
	case SS_EVENT_DATA:
	case SS_EVENT_SENT:
		echo(w, ev->conn);
		break;
	case SS_EVENT_PEER_CLOSED:
		ss_conn_set_user(ev->conn, PEER_CLOSED);
		echo(w, ev->conn);
		break;
	case SS_EVENT_RESET:
	case SS_EVENT_ERROR:
		STAT_ADD(w->resets, 1);
		ss_conn_set_user(ev->conn, NULL);
		conn_close(w, ev->conn);
		break;
	case SS_EVENT_CLOSED:
		/* A pending close retry for it would use a dead handle. */
		for (size_t i = 0; i < w->n_retry; i++)
			if (w->retry[i] == ev->conn)
				w->retry[i] = w->retry[--w->n_retry];
		STAT_ADD(w->active, (uint64_t)-1);
		STAT_ADD(w->closed, 1);
		break;
	case SS_EVENT_BOUND:
	case SS_EVENT_INHERITED:
	case SS_EVENT_ADOPTED:
	case SS_EVENT_MOVED:
	case SS_EVENT_LISTEN_STOPPED:
		break; /* bind, fork and shutdown events: not used here */
	case SS_EVENT_CMD_ERROR:
		fprintf(stderr, "ss-echo: context %u: command %d rejected: %s\n",
			w->idx, ev->cmd_op, strerror(ev->error));
		break;
	case SS_EVENT_CONNECTED:
		break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ss_event evs[EV_BATCH];

	while (ss_listen(w->ctx, w->port, 4096, w->idx) < 0) {
		if (errno != EAGAIN || stop)
			return NULL;
		ss_wait(w->ctx, 10);
	}
	while (!stop && !w->failed) {
		int n = ss_poll(w->ctx, evs, EV_BATCH);

		for (int i = 0; i < n; i++)
			handle(w, &evs[i]);
		if (w->n_retry)
			retry_closes(w);
		if (n == 0 && ss_wait(w->ctx, 100) < 0 && errno != EINTR) {
			perror("ss-echo: ss_wait");
			__atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ss-echo [--sock PATH] --port P [--contexts N] [--conns N]\n"
		"               [--buf BYTES] [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "sock", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'p' },
		{ "contexts", required_argument, NULL, 'c' },
		{ "conns", required_argument, NULL, 'n' },
		{ "buf", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct ss_app_opts ao = { .conns = 4096, .rxbuf = 16384, .txbuf = 16384 };
	struct worker *ws;
	struct sigaction sa = { .sa_handler = on_signal };
	struct ss_app *app;
	uint64_t v, port = 0;
	unsigned n_ctx = 1;
	int verbose = 0, opt, failed = 0;
	char err[128] = "";

	while ((opt = getopt_long(argc, argv, "s:p:c:n:b:vh", lo, NULL)) != -1) {
		switch (opt) {
		case 's': ao.sock_path = optarg; break;
		case 'p':
			if (parse_count(optarg, &port) < 0 || !port || port > 65535)
				usage();
			break;
		case 'c':
			if (parse_count(optarg, &v) < 0 || !v || v > SS_MAX_CONTEXTS)
				usage();
			n_ctx = (unsigned)v;
			break;
		case 'n':
			if (parse_count(optarg, &v) < 0 || !v || v > (1u << 20))
				usage();
			ao.conns = (uint32_t)v;
			break;
		case 'b':
			if (parse_count(optarg, &v) < 0 || !v || v > (1u << 30) || (v & (v - 1)))
				usage();
			ao.rxbuf = ao.txbuf = (uint32_t)v;
			break;
		case 'v': verbose = 1; break;
		default: usage();
		}
	}
	if (!port || optind != argc)
		usage();
	ao.contexts = n_ctx;
	ao.errbuf = err;
	ao.errbuf_len = sizeof(err);
	app = ss_app_attach(&ao);
	if (!app) {
		fprintf(stderr, "ss-echo: attach: %s%s%s\n", strerror(errno),
			*err ? ": " : "", err);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	ws = calloc(n_ctx, sizeof(*ws));
	if (!ws) {
		ss_app_detach(app);
		return 1;
	}
	for (unsigned i = 0; i < n_ctx; i++) {
		ws[i].ctx = ss_ctx_get(app, i);
		ws[i].idx = i;
		ws[i].port = (uint16_t)port;
		if (pthread_create(&ws[i].thr, NULL, worker_main, &ws[i])) {
			fprintf(stderr, "ss-echo: pthread_create failed\n");
			stop = 1;
			n_ctx = i;
			failed = 1;
			break;
		}
	}
	/* Stats once a second with -v; racy reads of the workers' counters
	 * are fine for a progress line. */
	uint64_t last_bytes = 0;
	double last = now_seconds();

	while (!stop) {
		int all_failed = 1;

		for (unsigned i = 0; i < n_ctx; i++)
			all_failed &= __atomic_load_n(&ws[i].failed, __ATOMIC_RELAXED);
		if (n_ctx && all_failed)
			break;
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		if (!verbose || now_seconds() - last < 1.0)
			continue;
		uint64_t acc = 0, act = 0, cl = 0, rs = 0, by = 0;
		for (unsigned i = 0; i < n_ctx; i++) {
			acc += __atomic_load_n(&ws[i].accepted, __ATOMIC_RELAXED);
			act += __atomic_load_n(&ws[i].active, __ATOMIC_RELAXED);
			cl += __atomic_load_n(&ws[i].closed, __ATOMIC_RELAXED);
			rs += __atomic_load_n(&ws[i].resets, __ATOMIC_RELAXED);
			by += __atomic_load_n(&ws[i].bytes, __ATOMIC_RELAXED);
		}
		double t = now_seconds();
		printf("ss-echo: conns accepted %llu active %llu closed %llu resets %llu "
		       "echoed %llu bytes (%.3f Gbit/s)\n",
		       (unsigned long long)acc, (unsigned long long)act,
		       (unsigned long long)cl, (unsigned long long)rs,
		       (unsigned long long)by, (double)(by - last_bytes) * 8 / (t - last) / 1e9);
		fflush(stdout);
		last_bytes = by;
		last = t;
	}
	stop = 1;
	for (unsigned i = 0; i < n_ctx; i++) {
		pthread_join(ws[i].thr, NULL);
		failed |= ws[i].failed;
		free(ws[i].retry);
	}
	free(ws);
	ss_app_detach(app);
	return failed ? 1 : 0;
}
