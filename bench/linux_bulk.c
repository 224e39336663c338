/* linux_bulk.c - linux_bulk: one TCP stream of bulk data on Linux sockets, counted exactly and timed. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opts.h"
#include "util.h"

/*
 * send: write --bytes bytes (or for --seconds, whichever ends first) from
 *       one --buf sized buffer, shutdown(SHUT_WR), then read until the
 *       peer's FIN: the clock stops once the peer has everything.
 * recv: read until the peer's FIN, then close.
 * Either side may --connect or --listen (one connection, then exit; a
 * "listening" line on stderr says when connect may start).  The clock
 * starts when the connection is established.  No payload check: the tests
 * do that; here only the byte count (exact) and the time matter.  One JSON
 * line at the end:
 *   {"mode":"send"|"recv","bytes":n,"seconds":t,"gbps":x,"error":null|"..."}
 * Exit status 1 on a connection error, or when the sender's peer sent data.
 */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The connected socket, or -1 with errno. */
static int stream_open(const struct sockaddr_in *peer, int listen_mode)
{
	int one = 1, fd, lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0)
		return -1;
	if (!listen_mode) {
		if (connect(lfd, (const struct sockaddr *)peer, sizeof(*peer)) == 0)
			return lfd;
		close(lfd);
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)peer, sizeof(*peer)) < 0 || listen(lfd, 1) < 0) {
		close(lfd);
		return -1;
	}
	fprintf(stderr, "linux_bulk: listening on port %u\n", ntohs(peer->sin_port));
	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR && !stop);
	close(lfd);
	return fd;
}

/* Read until EOF; 0 or an errno.  *got counts the bytes read. */
static int stream_drain(int fd, char *buf, size_t len, unsigned long long *got)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, 0);

		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR && !stop)
				continue;
			return errno;
		}
		*got += (unsigned long long)n;
	}
}

static int stream_send(int fd, const char *buf, size_t len, unsigned long long bytes,
		       double deadline, unsigned long long *sent)
{
	while (*sent < bytes && !stop && now_seconds() < deadline) {
		size_t want = bytes - *sent < len ? (size_t)(bytes - *sent) : len;
		ssize_t n = send(fd, buf, want, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		*sent += (unsigned long long)n;
	}
	return shutdown(fd, SHUT_WR) < 0 ? errno : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: linux_bulk send|recv (--connect IP:PORT | --listen PORT)\n"
		"                  [--bytes N[K|M|G]] [--seconds T] [--buf BYTES]\n");
	exit(2);
}

/* --listen PORT: the wildcard address at PORT. */
static int listen_port(const char *arg, void *dst)
{
	struct sockaddr_in *peer = dst;
	uint64_t v;

	if (parse_range(arg, 1, 65535, &v) < 0)
		return -1;
	peer->sin_port = htons((uint16_t)v);
	peer->sin_addr.s_addr = htonl(INADDR_ANY);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in peer = { .sin_family = AF_INET };
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t bytes = UINT64_MAX, seconds = 0, buflen = 1 << 20;
	unsigned long long done = 0, extra = 0;
	int sender, listen_mode = 0, have_peer = 0, fd, error = 0;
	double t0 = 0, t1;
	char *buf;
	const struct bopt opts[] = {
		{ .name = "connect", .kind = BOPT_ADDR, .dst = &peer, .seen = &have_peer },
		{ .name = "listen", .kind = BOPT_FN, .dst = &peer, .fn = listen_port,
		  .seen = &listen_mode },
		{ .name = "bytes", .kind = BOPT_U64, .dst = &bytes, .max = UINT64_MAX },
		{ .name = "seconds", .kind = BOPT_U64, .dst = &seconds, .max = UINT64_MAX },
		{ .name = "buf", .kind = BOPT_U64, .dst = &buflen, .min = 1, .max = 1u << 30 },
		{ 0 },
	};

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv")))
		usage();
	sender = !strcmp(argv[1], "send");
	bopts_parse(argc, argv, 2, opts, usage);
	have_peer |= listen_mode;
	if (!have_peer || (sender && bytes == UINT64_MAX && !seconds))
		usage();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	buf = malloc(buflen);
	if (!buf)
		return 1;
	memset(buf, 'b', buflen);

	fd = stream_open(&peer, listen_mode);
	if (fd < 0) {
		error = errno;
	} else {
		t0 = now_seconds();
		if (sender) {
			error = stream_send(fd, buf, buflen, bytes,
					    seconds ? t0 + (double)seconds : 1e300, &done);
			if (!error)
				error = stream_drain(fd, buf, buflen, &extra);
			if (!error && extra)
				error = EPROTO; /* the receiver is not supposed to talk */
		} else {
			error = stream_drain(fd, buf, buflen, &done);
		}
		close(fd);
	}
	if (stop && !error)
		error = EINTR;
	t1 = now_seconds();
	double secs = t0 ? t1 - t0 : 0;
	const char *en = error ? strerrorname_np(error) : NULL;

	printf("{\"mode\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,\"gbps\":%.3f,\"error\":%s%s%s}\n",
	       sender ? "send" : "recv", done, secs,
	       secs > 0 ? (double)done * 8 / secs / 1e9 : 0.0,
	       en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	free(buf);
	return error ? 1 : 0;
}
