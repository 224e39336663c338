/* pipe_client.c - pipe_client: K connections that keep a pipe_server busy, sending or receiving a patterned stream as fast as the server takes it. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pipe_pattern.h"
#include "opts.h"
#include "util.h"

/*
 * --mode send (against a receive-only server): every connection writes the
 *   pattern stream (pipe_pattern.h) whenever its socket takes more, in
 *   chunks of up to 64 KiB: the messages are pipelined, the server's
 *   message size only matters to the server.
 * --mode recv (against a send-only server): every connection reads and
 *   checks every byte against the pattern.
 *
 * Phases as linux_rpc: connect all K (--connect-seconds), --warmup s, then
 * --seconds measured; --phases writes "phase measure" / "phase end" on
 * stderr at the window's edges.  One JSON line:
 *   {"mode":"send"|"recv","conns":K,"seconds":t,"bytes":n,"gbps":x,
 *    "connect_s":c,"connected":k,"error":null|"EBADMSG"|...}
 * bytes: sent (send) or received and checked (recv) in the window.  What
 * is sent may still sit in socket buffers; the receiving end's count is
 * the one to trust (for --mode send, the server's).
 */

#define CHUNK 65536
#define EV_BATCH 256

struct cconn {
	int fd, connected;
	uint64_t off;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int conn_open(struct cconn *c, int ep, const struct sockaddr_in *to)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
	int one = 1;

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)to, sizeof(*to)) < 0 && errno != EINPROGRESS)
		return errno;
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? errno : 0;
}

/* One connection's turn: 0 or an errno; *moved counts the bytes. */
static int conn_io(struct cconn *c, int send_mode, uint8_t *buf, uint64_t *moved)
{
	if (send_mode) {
		ssize_t n = send(c->fd, pattern_at(c->off), CHUNK, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : errno;
		c->off += (uint64_t)n;
		*moved += (uint64_t)n;
		return 0;
	}
	ssize_t n = recv(c->fd, buf, CHUNK, 0);

	if (n == 0)
		return ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : errno;
	if (!pattern_check(buf, c->off, (size_t)n))
		return EBADMSG;
	c->off += (uint64_t)n;
	*moved += (uint64_t)n;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pipe_client --connect IP:PORT --mode send|recv [--conns K] [--seconds T]\n"
		"                   [--warmup S] [--connect-seconds S] [--phases]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct epoll_event evs[EV_BATCH];
	static uint8_t buf[CHUNK];
	uint64_t k = 100, seconds = 10, warmup = 1, connect_limit = 10;
	uint64_t moved = 0, opened = 0, t_begin, t_end, t_start = 0, t_measure = 0;
	int ep, error = 0, have_peer = 0, send_mode = -1, phases = 0;
	struct cconn *cs;
	const struct bopt opts[] = {
		{ .name = "connect", .kind = BOPT_ADDR, .dst = &to, .seen = &have_peer },
		{ .name = "mode", .kind = BOPT_FN, .dst = &send_mode, .fn = bopt_send_recv },
		{ .name = "conns", .kind = BOPT_U64, .dst = &k, .min = 1, .max = 65536 },
		{ .name = "seconds", .kind = BOPT_U64, .dst = &seconds, .min = 1, .max = 86400 },
		{ .name = "warmup", .kind = BOPT_U64, .dst = &warmup, .min = 0, .max = 86400 },
		{ .name = "connect-seconds", .kind = BOPT_U64, .dst = &connect_limit,
		  .min = 1, .max = 3600 },
		{ .name = "phases", .kind = BOPT_FLAG, .dst = &phases },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (!have_peer || send_mode < 0)
		usage();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	pattern_init();

	cs = calloc(k, sizeof(*cs));
	ep = epoll_create1(0);
	if (!cs || ep < 0) {
		perror("pipe_client");
		return 1;
	}
	for (uint64_t i = 0; i < k && !error; i++) {
		cs[i].fd = -1;
		error = conn_open(&cs[i], ep, &to);
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
			if (!t_start) {
				error = ETIMEDOUT;      /* not all connected in time */
			} else if (!t_measure) {
				t_measure = now;        /* warm-up over */
				t_end = now + seconds * 1000000000u;
				moved = 0;
				phase(phases, "measure");
				continue;
			}
			break;
		}
		for (int i = 0; i < n && !error; i++) {
			struct cconn *c = evs[i].data.ptr;

			if (!c->connected) {
				struct epoll_event ev = { .events = send_mode ? EPOLLOUT : EPOLLIN,
							  .data.ptr = c };
				int so_err = 0;
				socklen_t len = sizeof(so_err);

				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so_err, &len);
				if (so_err || epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
					error = so_err ? so_err : errno;
					break;
				}
				c->connected = 1;
				if (++opened == k) {
					t_start = now_ns();
					t_end = t_start + warmup * 1000000000u;
				}
				continue;
			}
			error = conn_io(c, send_mode, buf, &moved);
		}
	}
	if (stop && !error && !t_measure)
		error = EINTR;
	double secs = t_measure ? (double)(now_ns() - t_measure) / 1e9 : 0;
	const char *en = error ? strerrorname_np(error) : NULL;

	phase(phases && t_measure, "end");
	printf("{\"mode\":\"%s\",\"conns\":%llu,\"seconds\":%.3f,\"bytes\":%llu,\"gbps\":%.4f,"
	       "\"connect_s\":%.3f,\"connected\":%llu,\"error\":%s%s%s}\n",
	       send_mode ? "send" : "recv", (unsigned long long)k, secs,
	       (unsigned long long)moved, secs > 0 ? (double)moved * 8 / secs / 1e9 : 0.0,
	       (double)((t_start ? t_start : now_ns()) - t_begin) / 1e9,
	       (unsigned long long)opened, en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	for (uint64_t i = 0; i < k; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
	close(ep);
	return error ? 1 : 0;
}
