/* pipe_server.c - pipe_server: a receive-only or send-only server of pipelined fixed-size messages, with CPU work per message (TAS's pipelined RPC benchmark). */
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
#include <x86intrin.h>

#include "pipe_pattern.h"
#include "opts.h"
#include "util.h"

/*
 * One thread, one level-triggered epoll set, non-blocking sockets, plain
 * Linux sockets: unmodified, it runs on Linux or under `slipstream run`.
 *
 * --mode recv  reads each connection's stream, checks every byte against
 *              the pattern (pipe_pattern.h), and for every --size bytes
 *              that complete a message spins --work TSC cycles;
 * --mode send  writes messages of --size bytes, one send() each (a partly
 *              taken one is finished first), spinning --work cycles before
 *              each; at most SEND_BATCH messages per connection per wake-up,
 *              so connections take turns.
 *
 * SIGUSR1 prints a counter line on stdout, so a caller can read the
 * counters at the start and end of its measured window:
 *   {"msgs":n,"bytes":b,"t_ns":monotonic,"conns":open,"errors":e}
 * SIGTERM/SIGINT print one more and exit.  "errors" counts connections
 * closed for a pattern mismatch or a socket error (not a peer's reset).
 */

#define BUF_SIZE 65536
#define EV_BATCH 256
#define SEND_BATCH 64
#define RECV_BATCH 16

struct pconn {
	uint64_t off;           /* stream bytes received (recv) or sent (send) */
	uint32_t msg_left;      /* send: bytes of the current message not yet sent */
	int open;
};

struct pserver {
	int ep, lfd, send_mode;
	uint32_t size;
	uint64_t work;
	struct pconn *conns;    /* indexed by fd */
	size_t n_conns;
	uint64_t msgs, bytes, errors, open;
};

static volatile sig_atomic_t stop, report;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		report = 1;
	else
		stop = 1;
}

/* The application's work per message: spin for @cycles TSC cycles. */
static void work(uint64_t cycles)
{
	uint64_t t0 = __rdtsc();

	while (__rdtsc() - t0 < cycles)
		_mm_pause();
}

static void print_counters(const struct pserver *s)
{
	printf("{\"msgs\":%llu,\"bytes\":%llu,\"t_ns\":%llu,\"conns\":%llu,\"errors\":%llu}\n",
	       (unsigned long long)s->msgs, (unsigned long long)s->bytes,
	       (unsigned long long)now_ns(), (unsigned long long)s->open,
	       (unsigned long long)s->errors);
	fflush(stdout);
}

static struct pconn *conn_get(struct pserver *s, int fd)
{
	void *t = s->conns;

	if (fd_table_grow(&t, &s->n_conns, sizeof(*s->conns), fd) != 0)
		return NULL;
	s->conns = t;
	return &s->conns[fd];
}

static void conn_close(struct pserver *s, int fd, int error)
{
	memset(&s->conns[fd], 0, sizeof(s->conns[fd]));
	epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	s->open--;
	s->errors += error && error != ECONNRESET && error != EPIPE;
}

static void on_accept(struct pserver *s)
{
	for (;;) {
		int one = 1, fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct pconn *c;

		if (fd < 0)
			return;
		if (s->send_mode)
			ev.events |= EPOLLOUT;
		ev.data.fd = fd;
		c = conn_get(s, fd);
		if (!c || epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			s->errors++;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		memset(c, 0, sizeof(*c));
		c->open = 1;
		s->open++;
	}
}

/* recv mode: read what is there (up to RECV_BATCH reads), check it, work
 * once per completed message. */
static void on_readable(struct pserver *s, int fd, uint8_t *buf)
{
	struct pconn *c = &s->conns[fd];

	for (int i = 0; i < RECV_BATCH; i++) {
		ssize_t n = recv(fd, buf, BUF_SIZE, 0);

		if (n == 0) {
			conn_close(s, fd, 0);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_close(s, fd, errno);
			return;
		}
		if (!pattern_check(buf, c->off, (size_t)n)) {
			conn_close(s, fd, EBADMSG);
			return;
		}
		uint64_t done = (c->off + (uint64_t)n) / s->size - c->off / s->size;

		c->off += (uint64_t)n;
		s->bytes += (uint64_t)n;
		s->msgs += done;
		while (done--)
			work(s->work);
		if (n < BUF_SIZE)
			return;
	}
}

/* send mode: up to SEND_BATCH messages, one send() each. */
static void on_writable(struct pserver *s, int fd)
{
	struct pconn *c = &s->conns[fd];

	for (int i = 0; i < SEND_BATCH; i++) {
		if (!c->msg_left) {
			work(s->work);
			c->msg_left = s->size;
		}
		ssize_t n = send(fd, pattern_at(c->off), c->msg_left, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				conn_close(s, fd, errno);
			return;
		}
		c->off += (uint64_t)n;
		c->msg_left -= (uint32_t)n;
		s->bytes += (uint64_t)n;
		if (c->msg_left)
			return;         /* the socket is full */
		s->msgs++;
	}
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
	fprintf(stderr, "usage: pipe_server --port P --mode recv|send --size BYTES "
		"[--work CYCLES]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct pserver s = { .ep = -1, .lfd = -1, .send_mode = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct epoll_event evs[EV_BATCH], lev = { .events = EPOLLIN };
	static uint8_t buf[BUF_SIZE];
	uint64_t port = 0, size = 0;
	const struct bopt opts[] = {
		{ .name = "port", .kind = BOPT_U64, .dst = &port, .min = 1, .max = 65535 },
		{ .name = "mode", .kind = BOPT_FN, .dst = &s.send_mode, .fn = bopt_send_recv },
		{ .name = "size", .kind = BOPT_U64, .dst = &size, .min = 1, .max = BUF_SIZE },
		{ .name = "work", .kind = BOPT_U64, .dst = &s.work, .min = 0, .max = 1000000000 },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (!port || !size || s.send_mode < 0)
		usage();
	s.size = (uint32_t)size;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	pattern_init();

	s.lfd = listen_on((uint16_t)port);
	s.ep = epoll_create1(0);
	lev.data.fd = s.lfd;
	if (s.lfd < 0 || s.ep < 0 || epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &lev) < 0) {
		perror("pipe_server: listen");
		return 1;
	}
	fprintf(stderr, "pipe_server: listening on port %u\n", (unsigned)port);
	while (!stop) {
		int n = epoll_wait(s.ep, evs, EV_BATCH, 200);

		if (report) {
			report = 0;
			print_counters(&s);
		}
		if (n < 0 && errno != EINTR) {
			perror("pipe_server: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			uint32_t e = evs[i].events;

			/* A batch can take long (100 connections x 16 reads x
			 * 2048 messages x the work): answer SIGUSR1 within it. */
			if (report) {
				report = 0;
				print_counters(&s);
			}
			if (fd == s.lfd) {
				on_accept(&s);
				continue;
			}
			if (!s.conns[fd].open)
				continue;       /* closed earlier in this batch */
			if (s.send_mode && (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
				/* The client sends nothing: this is its close. */
				ssize_t r = recv(fd, buf, BUF_SIZE, 0);

				if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
					conn_close(&s, fd, r < 0 ? errno : 0);
					continue;
				}
			}
			if (s.send_mode && (e & EPOLLOUT))
				on_writable(&s, fd);
			else if (!s.send_mode)
				on_readable(&s, fd, buf);
		}
	}
	print_counters(&s);
	for (size_t fd = 0; fd < s.n_conns; fd++)
		if (s.conns[fd].open)
			conn_close(&s, (int)fd, 0);
	free(s.conns);
	close(s.ep);
	close(s.lfd);
	return 0;
}
