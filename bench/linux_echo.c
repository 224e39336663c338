/* linux_echo.c - linux_echo: an epoll echo server on Linux sockets, the reference for ss-echo. */
#include <errno.h>
#include <fcntl.h>
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

#include "opts.h"
#include "util.h"

/*
 * One thread, one level-triggered epoll set, non-blocking sockets.
 * Per connection: read up to BUF_SIZE bytes, write them back; what the
 * socket does not take is kept in the connection's pending buffer, and
 * reading from that connection stops (EPOLLIN off, EPOLLOUT on) until the
 * pending bytes are written, so the peer's FIN is seen only once everything
 * before it is echoed; then close.  Connection state is indexed by fd, grown on demand, so thousands
 * of connections cost one small struct each plus a buffer while pending.
 *
 * With --quiet unset, one stats line on SIGTERM/SIGINT (on stderr):
 *   {"accepted":n,"closed":n,"resets":n,"errors":n,"bytes":n}
 * (a load generator that exits with a reply unread resets its connections).
 */

#define BUF_SIZE 65536
#define EV_BATCH 256

struct echo_conn {
	char *pending;          /* BUF_SIZE bytes once needed, else NULL */
	size_t off, len;        /* unwritten bytes: pending[off, off + len) */
	int open;
};

struct echo_server {
	int ep, lfd;
	struct echo_conn *conns;        /* indexed by fd */
	size_t n_conns;
	uint64_t accepted, closed, resets, errors, bytes;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static struct echo_conn *conn_get(struct echo_server *s, int fd)
{
	void *t = s->conns;

	if (fd_table_grow(&t, &s->n_conns, sizeof(*s->conns), fd) != 0)
		return NULL;
	s->conns = t;
	return &s->conns[fd];
}

static void conn_close(struct echo_server *s, int fd, int error)
{
	struct echo_conn *c = &s->conns[fd];

	free(c->pending);
	memset(c, 0, sizeof(*c));
	epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	s->closed++;
	s->resets += error == ECONNRESET;
	s->errors += error && error != ECONNRESET;
}

static int conn_watch(struct echo_server *s, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev);
}

/* Write the pending bytes; 1 if all written, 0 if the socket is full, -1 on error. */
static int conn_flush(struct echo_conn *c, int fd)
{
	while (c->len) {
		ssize_t n = send(fd, c->pending + c->off, c->len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		c->off += (size_t)n;
		c->len -= (size_t)n;
	}
	c->off = 0;
	return 1;
}

static void on_accept(struct echo_server *s)
{
	for (;;) {
		int one = 1, fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct echo_conn *c;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				perror("linux_echo: accept4");
			return;
		}
		c = conn_get(s, fd);
		ev.data.fd = fd;
		if (!c || epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			s->errors++;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->open = 1;
		s->accepted++;
	}
}

static void on_readable(struct echo_server *s, int fd, char *buf)
{
	struct echo_conn *c = &s->conns[fd];

	for (;;) {
		ssize_t n = recv(fd, buf, BUF_SIZE, 0), w;

		if (n == 0) {
			conn_close(s, fd, 0); /* nothing pending: all echoed */
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			conn_close(s, fd, errno);
			return;
		}
		s->bytes += (uint64_t)n;
		w = send(fd, buf, (size_t)n, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN) {
			conn_close(s, fd, errno);
			return;
		}
		if (w < 0)
			w = 0;
		if (w < n) {
			/* Socket full: keep the rest, stop reading until it drains. */
			if (!c->pending && !(c->pending = malloc(BUF_SIZE))) {
				conn_close(s, fd, ENOMEM);
				return;
			}
			memcpy(c->pending, buf + w, (size_t)(n - w));
			c->off = 0;
			c->len = (size_t)(n - w);
			if (conn_watch(s, fd, EPOLLOUT) < 0)
				conn_close(s, fd, errno);
			return;
		}
		if (n < BUF_SIZE)
			return; /* drained: level-triggered epoll calls again */
	}
}

static void on_writable(struct echo_server *s, int fd)
{
	struct echo_conn *c = &s->conns[fd];
	int r = conn_flush(c, fd);

	if (r < 0)
		conn_close(s, fd, errno);
	else if (r > 0 && conn_watch(s, fd, EPOLLIN | EPOLLRDHUP) < 0)
		conn_close(s, fd, errno);
}

static int listen_on(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void usage(void)
{
	fprintf(stderr, "usage: linux_echo --port P [--quiet]\n");
	exit(2);
}

/* --port P: plain decimal, 1..65535. */
static int parse_port(const char *arg, void *dst)
{
	char *end;
	unsigned long port = strtoul(arg, &end, 10);

	if (*end || !port || port > 65535)
		return -1;
	*(unsigned long *)dst = port;
	return 0;
}

int main(int argc, char **argv)
{
	struct echo_server s = { .ep = -1, .lfd = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct epoll_event evs[EV_BATCH], lev = { .events = EPOLLIN };
	static char buf[BUF_SIZE];
	unsigned long port = 0;
	int quiet = 0;
	const struct bopt opts[] = {
		{ .name = "port", .kind = BOPT_FN, .dst = &port, .fn = parse_port, .short_name = 'p' },
		{ .name = "quiet", .kind = BOPT_FLAG, .dst = &quiet, .short_name = 'q' },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (!port)
		usage();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	s.lfd = listen_on((uint16_t)port);
	s.ep = epoll_create1(0);
	lev.data.fd = s.lfd;
	if (s.lfd < 0 || s.ep < 0 || fd_nonblock(s.lfd) < 0 ||
	    epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &lev) < 0) {
		perror("linux_echo: listen");
		return 1;
	}
	while (!stop) {
		int n = epoll_wait(s.ep, evs, EV_BATCH, 200);

		if (n < 0 && errno != EINTR) {
			perror("linux_echo: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			uint32_t e = evs[i].events;

			if (fd == s.lfd) {
				on_accept(&s);
				continue;
			}
			if (!s.conns[fd].open)
				continue; /* closed earlier in this batch */
			/* Pending bytes: only EPOLLOUT (or HUP/ERR) is watched. */
			if (s.conns[fd].len)
				on_writable(&s, fd);
			else if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
				on_readable(&s, fd, buf);
		}
	}
	if (!quiet)
		fprintf(stderr, "{\"accepted\":%llu,\"closed\":%llu,\"resets\":%llu,"
			"\"errors\":%llu,\"bytes\":%llu}\n",
			(unsigned long long)s.accepted, (unsigned long long)s.closed,
			(unsigned long long)s.resets, (unsigned long long)s.errors,
			(unsigned long long)s.bytes);
	for (size_t fd = 0; fd < s.n_conns; fd++)
		if (s.conns[fd].open)
			conn_close(&s, (int)fd, 0);
	free(s.conns);
	close(s.ep);
	close(s.lfd);
	return 0;
}
