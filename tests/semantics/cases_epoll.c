/* cases_epoll.c - epoll: level and edge triggering, ONESHOT, RDHUP, mixed sets, errors. */
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sc.h"

static int epoll_new(void)
{
	return sc_track((int)SC_OK(epoll_create1(EPOLL_CLOEXEC)));
}

static void epoll_add(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
}

/* epoll_wait that must report exactly one event: (tag, events). */
static void epoll_one(int ep, int ms, uint64_t tag, uint32_t events)
{
	struct epoll_event ev[4];
	int n = (int)SC_OK(epoll_wait(ep, ev, 4, ms));

	if (n != 1)
		sc_fail(__FILE__, __LINE__, "epoll_wait: %d events, want 1", n);
	SC_EQ(ev[0].data.u64, tag);
	SC_EQ(ev[0].events, events);
}

static void epoll_none(int ep, int ms)
{
	struct epoll_event ev[4];
	int n = (int)SC_OK(epoll_wait(ep, ev, 4, ms));

	if (n != 0)
		sc_fail(__FILE__, __LINE__, "epoll_wait: %d events (first 0x%x tag %llu), "
			"want none", n, ev[0].events, (unsigned long long)ev[0].data.u64);
}

/* Level-triggered EPOLLIN: reported until drained. */
static void epoll_level(void)
{
	int fd = sc_peer_open("SEND 100\nSINK -\n"), ep = epoll_new();
	uint8_t buf[100];

	epoll_add(ep, fd, EPOLLIN, 7);
	epoll_one(ep, SC_WAIT_MS, 7, EPOLLIN);
	epoll_one(ep, 0, 7, EPOLLIN);
	sc_recv_exact(fd, buf, 100, SC_WAIT_MS);
	epoll_none(ep, 0);
}

/* Edge-triggered: one event per arrival, none while the data just sits. */
static void epoll_edge(void)
{
	int fd = sc_peer_open("SEND 100\nSLEEP 400\nSEND 100\nSINK -\n"), ep = epoll_new();
	uint8_t buf[200];

	epoll_add(ep, fd, EPOLLIN | EPOLLET, 8);
	epoll_one(ep, SC_WAIT_MS, 8, EPOLLIN);
	epoll_none(ep, 100);
	/* The second arrival fires again though the first is unread. */
	epoll_one(ep, SC_WAIT_MS, 8, EPOLLIN);
	epoll_none(ep, 50);
	sc_recv_exact(fd, buf, 200, SC_WAIT_MS);
	sc_pattern_check(buf, 200, 0);
	epoll_none(ep, 0);
}

/* EPOLLONESHOT: one event, then silence until EPOLL_CTL_MOD re-arms it. */
static void epoll_oneshot(void)
{
	int fd = sc_peer_open("SEND 10\nSLEEP 200\nSEND 10\nSINK -\n"), ep = epoll_new();
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 9 };

	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	epoll_one(ep, SC_WAIT_MS, 9, EPOLLIN);
	epoll_none(ep, 400);
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), 0);
	epoll_one(ep, 0, 9, EPOLLIN);
	epoll_none(ep, 0);
}

/* The peer's FIN: EPOLLIN | EPOLLRDHUP, and no EPOLLHUP while we can send. */
static void epoll_rdhup(void)
{
	int fd = sc_peer_open("SLEEP 100\nFIN -\n"), ep = epoll_new();

	epoll_add(ep, fd, EPOLLIN | EPOLLRDHUP, 10);
	epoll_one(ep, SC_WAIT_MS, 10, EPOLLIN | EPOLLRDHUP);
	/* Once we shut down too: EPOLLHUP, reported even when not asked for. */
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	epoll_one(ep, SC_WAIT_MS, 10, EPOLLIN | EPOLLRDHUP | EPOLLHUP);
}

static void epoll_out(void)
{
	int fd = sc_peer_open("SINK -\n"), ep = epoll_new();

	epoll_add(ep, fd, EPOLLOUT, 11);
	epoll_one(ep, 0, 11, EPOLLOUT);
	/* Asking for both on a quiet socket: only EPOLLOUT. */
	{
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 12 };

		SC_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), 0);
		epoll_one(ep, 0, 12, EPOLLOUT);
	}
}

/* The peer's reset: EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP. */
static void epoll_reset(void)
{
	int fd = sc_peer_open("SLEEP 100\nRST\n"), ep = epoll_new();

	epoll_add(ep, fd, EPOLLIN | EPOLLRDHUP, 13);
	epoll_one(ep, SC_WAIT_MS, 13, EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP);
}

/* A pipe and a socket in one set: each reported when ready, both together. */
static void epoll_mixed_pipe(void)
{
	int fd = sc_peer_open("SLEEP 300\nSEND 10\nSINK -\n"), ep = epoll_new(), pfd[2];
	struct epoll_event ev[4];
	int n, seen = 0;

	SC_OK(pipe(pfd));
	sc_track(pfd[0]);
	sc_track(pfd[1]);
	epoll_add(ep, pfd[0], EPOLLIN, 1);
	epoll_add(ep, fd, EPOLLIN, 2);
	epoll_none(ep, 50);
	SC_EQ(write(pfd[1], "x", 1), 1);
	epoll_one(ep, 0, 1, EPOLLIN);
	/* The socket's data comes later, while the pipe stays readable. */
	SC_EQ(sc_poll1(fd, POLLIN, SC_WAIT_MS), POLLIN);
	n = (int)SC_OK(epoll_wait(ep, ev, 4, SC_WAIT_MS));
	SC_EQ(n, 2);
	for (int i = 0; i < n; i++) {
		SC_EQ(ev[i].events, EPOLLIN);
		seen |= 1 << ev[i].data.u64;
	}
	SC_EQ(seen, 6);
}

static void epoll_timeout(void)
{
	int fd = sc_peer_open("SINK -\n"), ep = epoll_new();
	double t0;

	epoll_add(ep, fd, EPOLLIN, 1);
	t0 = sc_now_ms();
	epoll_none(ep, 200);
	SC_RANGE(sc_now_ms() - t0, 190, 700);
	/* An empty set waits too. */
	ep = epoll_new();
	t0 = sc_now_ms();
	epoll_none(ep, 100);
	SC_RANGE(sc_now_ms() - t0, 90, 600);
}

/* EPOLLEXCLUSIVE on a listener: accepted, reports the connection; MOD refuses it. */
static void epoll_exclusive(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ep = epoll_new(), ctl;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.u64 = 5 };
	char line[64];

	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev), 0);
	epoll_none(ep, 0);
	ctl = sc_peer_connect_back(port, 1);
	epoll_one(ep, SC_WAIT_MS, 5, EPOLLIN);
	sc_accept(lfd, 0, 0);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, lfd, &ev), EINVAL);
	sc_line_read(ctl, line, sizeof(line), SC_WAIT_MS);
	SC_TRUE(strcmp(line, "ok 1") == 0);
}

static void epoll_ctl_errors(void)
{
	int fd = sc_peer_open("SINK -\n"), ep = epoll_new(), other = sc_tcp_socket(0);
	struct epoll_event ev = { .events = EPOLLIN };

	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EEXIST);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, other, &ev), ENOENT);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, other, &ev), ENOENT);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, -1, &ev), EBADF);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), ENOENT);
	/* An unconnected socket is allowed in a set; asked for EPOLLIN it reports EPOLLHUP. */
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, other, &ev), 0);
	epoll_one(ep, 0, 0, EPOLLHUP);
}

/* Closing the only fd of a socket removes it from the set. */
static void epoll_close_removes(void)
{
	int fd = sc_peer_open("SEND 10\nSINK -\n"), ep = epoll_new();

	epoll_add(ep, fd, EPOLLIN, 3);
	epoll_one(ep, SC_WAIT_MS, 3, EPOLLIN);
	SC_EQ(sc_close(fd), 0);
	epoll_none(ep, 100);
}

const struct sc_case sc_cases_epoll[] = {
	{ "epoll_level", epoll_level },
	{ "epoll_edge", epoll_edge },
	{ "epoll_oneshot", epoll_oneshot },
	{ "epoll_rdhup", epoll_rdhup },
	{ "epoll_out", epoll_out },
	{ "epoll_reset", epoll_reset },
	{ "epoll_mixed_pipe", epoll_mixed_pipe },
	{ "epoll_timeout", epoll_timeout },
	{ "epoll_exclusive", epoll_exclusive },
	{ "epoll_ctl_errors", epoll_ctl_errors },
	{ "epoll_close_removes", epoll_close_removes },
	{ NULL, NULL },
};
