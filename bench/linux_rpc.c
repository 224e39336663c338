/* linux_rpc.c - linux_rpc: closed-loop request/response load on Linux sockets, checking every echoed byte. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opts.h"
#include "util.h"

/*
 * K non-blocking connections in one level-triggered epoll set, one request
 * of --size bytes in flight on each: send it, wait until --size bytes came
 * back, compare them with what was sent, record the latency, send the next.
 * Every request carries a different pattern (connection index and sequence
 * number), so a misordered or stale reply is caught too.
 *
 * Phases: connect all K (--connect-seconds, default 10; a connection that
 * is up starts its requests at once), --warmup seconds not counted, then
 * --seconds measured.  One JSON line, the fields of ss-rpc and more:
 *   {"conns":K,"size":S,"seconds":t,"requests":n,"rps":x,
 *    "p50_us":a,"p99_us":b,"rpcs_per_conn":N,"conns_done":c,"cps":y,
 *    "connect_s":c,"connected":n,"error":null|"EBADMSG"|"ECONNRESET"|...}
 * connect_s: how long the K connections took to come up; connected: how
 * many did (K unless the limit ran out: error ETIMEDOUT).
 *
 * --rpcs-per-conn N (short-lived connections): after the N-th reply a
 * connection is closed (by us, gracefully) and a new one opened in its
 * place, so K connections are open or opening at any time; conns_done and
 * cps count the connections that finished their N requests in the measured
 * time.  A request's latency is from its send, so the first request of a
 * connection does not include the handshake.  0 (the default): connections
 * live for the whole run.
 *
 * --phases writes "phase measure" and "phase end" lines on stderr (flushed)
 * when the measured time starts and ends, so a caller can sample CPU
 * counters over exactly that window.
 * Exit status 1 on any mismatch (EBADMSG), connection error or timeout.
 * Latencies: log-linear histogram, 16 sub-buckets per power of two of
 * nanoseconds (under 6.25% error), the scheme ss-rpc uses.
 */

#define EV_BATCH 256
#define MAX_SIZE 65536

struct rpc_conn {
	int fd;
	uint32_t idx;
	uint32_t seq;           /* sequence number of the request in flight */
	int connected;
	int want_out;           /* EPOLLOUT is in the watched set */
	uint64_t done;          /* replies on this connection (--rpcs-per-conn) */
	uint64_t sent_at;       /* ns, request start */
	size_t sent, got;       /* bytes of the request sent, of the reply received */
	uint8_t *req;           /* the request in flight */
};

static volatile sig_atomic_t stop;
static uint64_t hist[LAT_BUCKETS];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Fill the next request: a byte pattern unique to (connection, sequence). */
static void req_fill(struct rpc_conn *rc, size_t size)
{
	uint32_t x = (rc->idx * 2654435761u) ^ (rc->seq * 40503u) ^ 0x9e3779b9u;

	for (size_t i = 0; i < size; i++) {
		x = x * 1664525u + 1013904223u;
		rc->req[i] = (uint8_t)(x >> 24);
	}
}

/* Send what is left of the request; 0 or an errno. */
static int req_send(struct rpc_conn *rc, size_t size)
{
	while (rc->sent < size) {
		ssize_t n = send(rc->fd, rc->req + rc->sent, size - rc->sent, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : errno;
		}
		rc->sent += (size_t)n;
	}
	return 0;
}

static int req_start(struct rpc_conn *rc, size_t size)
{
	rc->seq++;
	req_fill(rc, size);
	rc->sent = rc->got = 0;
	rc->sent_at = now_ns();
	return req_send(rc, size);
}

/*
 * Read the reply; compare it with the request.  0 or an errno; *done set
 * when the whole reply is in.  Bytes beyond the reply (the server echoing
 * what was never sent) are a mismatch.
 */
static int reply_recv(struct rpc_conn *rc, size_t size, uint8_t *buf, int *done)
{
	*done = 0;
	for (;;) {
		ssize_t n = recv(rc->fd, buf, MAX_SIZE, 0);

		if (n == 0)
			return ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : errno;
		}
		if ((size_t)n > size - rc->got || (size_t)n > rc->sent - rc->got ||
		    memcmp(buf, rc->req + rc->got, (size_t)n))
			return EBADMSG;
		rc->got += (size_t)n;
		if (rc->got == size) {
			*done = 1;
			return 0;
		}
	}
}

static int conn_open(struct rpc_conn *rc, int ep, const struct sockaddr_in *to)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = rc };
	int one = 1;

	rc->connected = rc->want_out = 0;
	rc->done = 0;
	rc->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (rc->fd < 0)
		return errno;
	setsockopt(rc->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(rc->fd, (const struct sockaddr *)to, sizeof(*to)) < 0 &&
	    errno != EINPROGRESS)
		return errno;
	return epoll_ctl(ep, EPOLL_CTL_ADD, rc->fd, &ev) < 0 ? errno : 0;
}

/* --rpcs-per-conn: close a connection that has had its N replies and open
 * its successor in the same slot; 0 or an errno. */
static int conn_renew(struct rpc_conn *rc, int ep, const struct sockaddr_in *to)
{
	close(rc->fd);  /* also takes it out of the epoll set */
	rc->fd = -1;
	return conn_open(rc, ep, to);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: linux_rpc --connect IP:PORT [--conns K] [--size BYTES] [--seconds T]\n"
		"                 [--warmup S] [--rpcs-per-conn N] [--connect-seconds S]\n"
		"                 [--phases]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct epoll_event evs[EV_BATCH];
	struct rpc_conn *rcs;
	static uint8_t buf[MAX_SIZE];
	uint64_t k = 1, size = 64, seconds = 10, warmup = 1, per_conn = 0, connect_limit = 10;
	uint64_t t_begin;
	uint64_t requests = 0, opened = 0, t_start = 0, t_end, t_measure = 0, conns_done = 0;
	int ep, error = 0, have_peer = 0, phases = 0;
	const struct bopt opts[] = {
		{ .name = "connect", .kind = BOPT_ADDR, .dst = &to, .seen = &have_peer },
		{ .name = "conns", .kind = BOPT_U64, .dst = &k, .min = 1, .max = 65536 },
		{ .name = "size", .kind = BOPT_U64, .dst = &size, .min = 1, .max = MAX_SIZE },
		{ .name = "seconds", .kind = BOPT_U64, .dst = &seconds, .min = 1, .max = 86400 },
		{ .name = "warmup", .kind = BOPT_U64, .dst = &warmup, .min = 0, .max = 86400 },
		{ .name = "rpcs-per-conn", .kind = BOPT_U64, .dst = &per_conn,
		  .min = 0, .max = UINT32_MAX },
		{ .name = "phases", .kind = BOPT_FLAG, .dst = &phases },
		{ .name = "connect-seconds", .kind = BOPT_U64, .dst = &connect_limit,
		  .min = 1, .max = 3600 },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (!have_peer)
		usage();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	rcs = calloc(k, sizeof(*rcs));
	ep = epoll_create1(0);
	if (!rcs || ep < 0) {
		perror("linux_rpc");
		return 1;
	}
	for (unsigned long i = 0; i < k && !error; i++) {
		rcs[i].idx = (uint32_t)i;
		rcs[i].fd = -1;
		rcs[i].req = malloc(size);
		error = rcs[i].req ? conn_open(&rcs[i], ep, &to) : ENOMEM;
	}
	t_begin = now_ns();
	t_end = t_begin + connect_limit * 1000000000u;
	while (!stop && !error) {
		int n = epoll_wait(ep, evs, EV_BATCH, 100);
		uint64_t now = now_ns();

		if (n < 0 && errno != EINTR) {
			error = errno;
			break;
		}
		if (now >= t_end) {
			if (!t_start)
				error = ETIMEDOUT;      /* not all connected in time */
			else if (!t_measure) {
				/* Warm-up over: count from here. */
				t_measure = now;
				t_end = now + seconds * 1000000000u;
				memset(hist, 0, sizeof(hist));
				requests = conns_done = 0;
				phase(phases, "measure");
				continue;
			}
			break;
		}
		for (int i = 0; i < n && !error; i++) {
			struct rpc_conn *rc = evs[i].data.ptr;
			int done = 0, so_err = 0;
			socklen_t len = sizeof(so_err);

			if (!rc->connected) {
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = rc };

				getsockopt(rc->fd, SOL_SOCKET, SO_ERROR, &so_err, &len);
				if (so_err || epoll_ctl(ep, EPOLL_CTL_MOD, rc->fd, &ev) < 0) {
					error = so_err ? so_err : errno;
					break;
				}
				rc->connected = 1;
				rc->want_out = 0;
				if (++opened == k) {
					t_start = now_ns();
					t_end = t_start + warmup * 1000000000u;
				}
				error = req_start(rc, size);
			} else {
				if (evs[i].events & EPOLLOUT)
					error = req_send(rc, size);
				if (!error && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
					error = reply_recv(rc, size, buf, &done);
			}
			if (!error && done) {
				lat_add(hist, now_ns() - rc->sent_at);
				requests++;
				if (per_conn && ++rc->done == per_conn) {
					conns_done++;
					error = conn_renew(rc, ep, &to);
					continue;       /* a new connection: EPOLLOUT watched */
				}
				error = req_start(rc, size);
			}
			if (!error) {
				/* Watch EPOLLOUT only while part of the request is unsent. */
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = rc };

				if (rc->sent < size)
					ev.events |= EPOLLOUT;
				if (rc->want_out != !!(ev.events & EPOLLOUT)) {
					rc->want_out = !rc->want_out;
					if (epoll_ctl(ep, EPOLL_CTL_MOD, rc->fd, &ev) < 0)
						error = errno;
				}
			}
		}
	}
	if (stop && !error && !t_measure)
		error = EINTR;
	double secs = t_measure ? (double)(now_ns() - t_measure) / 1e9 : 0;
	const char *en = error ? strerrorname_np(error) : NULL;

	phase(phases && t_measure, "end");
	printf("{\"conns\":%lu,\"size\":%lu,\"seconds\":%.3f,\"requests\":%llu,"
	       "\"rps\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"rpcs_per_conn\":%llu,"
	       "\"conns_done\":%llu,\"cps\":%.1f,\"connect_s\":%.3f,\"connected\":%llu,"
	       "\"error\":%s%s%s}\n",
	       (unsigned long)k, (unsigned long)size, secs, (unsigned long long)requests,
	       secs > 0 ? (double)requests / secs : 0.0,
	       (double)lat_pct(hist, requests, 0.50) / 1000.0,
	       (double)lat_pct(hist, requests, 0.99) / 1000.0,
	       (unsigned long long)per_conn, (unsigned long long)conns_done,
	       secs > 0 ? (double)conns_done / secs : 0.0,
	       t_start ? (double)(t_start - t_begin) / 1e9 : (double)(now_ns() - t_begin) / 1e9,
	       (unsigned long long)(opened < k ? opened : k),
	       en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	for (unsigned long i = 0; i < k; i++) {
		if (rcs[i].fd >= 0)
			close(rcs[i].fd);
		free(rcs[i].req);
	}
	free(rcs);
	close(ep);
	return error ? 1 : 0;
}
