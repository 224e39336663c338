/* cases_epoll.c - epoll: level and edge triggering, ONESHOT, RDHUP, mixed sets, errors, dup of a set (before and after it held a socket). */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

/* EPOLLEXCLUSIVE is for EPOLL_CTL_ADD only, and only with IN, OUT, ERR,
 * HUP, WAKEUP and ET (Linux's do_epoll_ctl); an exclusive registration
 * cannot be modified, only deleted. */
static void epoll_exclusive_rules(void)
{
	int fd = sc_peer_open("SINK -\n"), ep = epoll_new();
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };

	SC_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), EINVAL); /* not ENOENT */
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLONESHOT;
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLRDHUP;
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE | EPOLLPRI;
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EINVAL);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, NULL), EFAULT);
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLERR | EPOLLHUP | EPOLLEXCLUSIVE;
	ev.data.u64 = 4;
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	epoll_one(ep, 0, 4, EPOLLOUT);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EEXIST);
	ev.events = EPOLLIN;
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), EINVAL);
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev), EINVAL);
	SC_ERR(epoll_ctl(-1, EPOLL_CTL_ADD, fd, &ev), EBADF);
}

/* Threads blocked in epoll_wait, each on its own set holding the one
 * listener; results are static (a failed case leaves no dangling stack). */
static struct {
	int ep[3];
	int n[3];
} exw;

static void *exw_thread(void *arg)
{
	long i = (long)arg;
	struct epoll_event ev[4];

	exw.n[i] = epoll_wait(exw.ep[i], ev, 4, 1200);
	return NULL;
}

/* Three sets wait on one listener: with EPOLLEXCLUSIVE one connection
 * wakes one set (the first registered, all having a waiter), and the
 * others are not even queued; without it, all three. */
static void epoll_exclusive_wake_one(void)
{
	for (int excl = 1; excl >= 0; excl--) {
		uint16_t port = sc_port((unsigned)excl);
		int lfd = sc_listen(port, 8, 0), ctl;
		pthread_t t[3];
		char line[64];

		for (long i = 0; i < 3; i++) {
			exw.ep[i] = epoll_new();
			exw.n[i] = -2;
			epoll_add(exw.ep[i], lfd, EPOLLIN | (excl ? EPOLLEXCLUSIVE : 0), (uint64_t)i);
		}
		for (long i = 0; i < 3; i++)
			SC_EQ(pthread_create(&t[i], NULL, exw_thread, (void *)i), 0);
		sc_sleep_ms(150); /* all three asleep */
		ctl = sc_peer_connect_back(port, 1);
		for (int i = 0; i < 3; i++)
			SC_EQ(pthread_join(t[i], NULL), 0);
		sc_line_read(ctl, line, sizeof(line), SC_WAIT_MS);
		SC_TRUE(strcmp(line, "ok 1") == 0);
		if (excl) {
			SC_EQ(exw.n[0], 1);
			SC_EQ(exw.n[1], 0);
			SC_EQ(exw.n[2], 0);
			epoll_one(exw.ep[0], 0, 0, EPOLLIN);
			epoll_none(exw.ep[1], 0);
			epoll_none(exw.ep[2], 0);
		} else {
			for (int i = 0; i < 3; i++) {
				SC_EQ(exw.n[i], 1);
				epoll_one(exw.ep[i], 0, (uint64_t)i, EPOLLIN);
			}
		}
		sc_accept(lfd, 0, 0);
	}
}

/* One thread sleeps in epoll_wait while another keeps taking the
 * library's events (poll with a zero timeout on another socket): the
 * sleeper must still wake when its socket gets data. */
static struct {
	int ep, n;
	uint64_t tag;
	double ms;
	volatile int done;
} lw;

static void *lw_thread(void *arg)
{
	struct epoll_event ev[4];
	double t0 = sc_now_ms();

	(void)arg;
	lw.n = epoll_wait(lw.ep, ev, 4, 2500);
	lw.ms = sc_now_ms() - t0;
	lw.tag = lw.n > 0 ? ev[0].data.u64 : 0;
	__atomic_store_n(&lw.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void epoll_threads_wake(void)
{
	int fd = sc_peer_open("SLEEP 300\nSEND 10\nSINK -\n"), other = sc_peer_open("SINK -\n");
	struct pollfd p = { .fd = other, .events = POLLIN };
	double t0;
	pthread_t t;

	lw.ep = epoll_new();
	lw.n = -2;
	lw.done = 0;
	epoll_add(lw.ep, fd, EPOLLIN, 21);
	SC_EQ(pthread_create(&t, NULL, lw_thread, NULL), 0);
	t0 = sc_now_ms();
	while (!__atomic_load_n(&lw.done, __ATOMIC_ACQUIRE) && sc_now_ms() - t0 < 2000)
		SC_EQ(poll(&p, 1, 0), 0);
	SC_EQ(pthread_join(t, NULL), 0);
	SC_EQ(lw.n, 1);
	SC_EQ(lw.tag, 21);
	SC_RANGE(lw.ms, 150, 1500);
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

/* epoll_wait that must report exactly two events, in either order. */
static void epoll_two(int ep, int ms, uint64_t tag1, uint32_t ev1, uint64_t tag2, uint32_t ev2)
{
	struct epoll_event ev[4];
	int n = (int)SC_OK(epoll_wait(ep, ev, 4, ms)), i;

	if (n != 2)
		sc_fail(__FILE__, __LINE__, "epoll_wait: %d events, want 2", n);
	i = ev[0].data.u64 == tag1 ? 0 : 1;
	SC_EQ(ev[i].data.u64, tag1);
	SC_EQ(ev[i].events, ev1);
	SC_EQ(ev[1 - i].data.u64, tag2);
	SC_EQ(ev[1 - i].events, ev2);
}

/*
 * dup() of an epoll fd names the same set: one interest list.  A socket
 * added through the original is reported through the copy, a thread
 * asleep there is woken by it; the copy sees the original's
 * registrations (EEXIST) and the original the copy's; closing the
 * original leaves the set to the copy, which still sleeps and wakes.
 */
static void epoll_dup(void)
{
	int fd = sc_peer_open("SLEEP 200\nSEND 10\nSINK -\n");
	int late = sc_peer_open("SLEEP 700\nSEND 5\nSINK -\n");
	int quiet = sc_peer_open("SINK -\n"), ep = epoll_new(), d;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 31 };
	uint8_t buf[10];

	epoll_add(ep, fd, EPOLLIN, 31);
	d = sc_track((int)SC_OK(dup(ep)));
	SC_EQ(fcntl(d, F_GETFD), 0);
	epoll_none(d, 0);
	epoll_one(d, SC_WAIT_MS, 31, EPOLLIN);
	SC_ERR(epoll_ctl(d, EPOLL_CTL_ADD, fd, &ev), EEXIST);
	epoll_add(d, quiet, EPOLLOUT, 32);
	epoll_two(ep, 0, 31, EPOLLIN, 32, EPOLLOUT);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 33 };
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, quiet, &ev), 0);
	epoll_one(d, 0, 31, EPOLLIN);
	SC_EQ(epoll_ctl(d, EPOLL_CTL_DEL, fd, NULL), 0);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), ENOENT);
	epoll_add(ep, late, EPOLLIN, 34);
	SC_EQ(sc_close(ep), 0);
	/* The set lives on through the copy: it sleeps until late's data. */
	epoll_one(d, SC_WAIT_MS, 34, EPOLLIN);
	SC_ERR(epoll_ctl(d, EPOLL_CTL_ADD, late, &ev), EEXIST);
	SC_EQ(epoll_ctl(d, EPOLL_CTL_DEL, quiet, NULL), 0);
	SC_ERR(epoll_ctl(d, EPOLL_CTL_DEL, quiet, NULL), ENOENT);
	sc_recv_exact(fd, buf, 10, SC_WAIT_MS);
	sc_pattern_check(buf, 10, 0);
}

/*
 * dup2() onto an epoll fd: the number now names the other set, and the
 * set it named, left without a number, is gone with its registrations.
 * dup3(O_CLOEXEC) and F_DUPFD_CLOEXEC give numbers of the same set,
 * close-on-exec on the new number only; dup2 of a set onto itself
 * changes nothing; a socket dup2'ed onto one of the numbers takes that
 * number away from the set, which the others keep.
 */
static void epoll_dup2(void)
{
	int a = sc_peer_open("SEND 10\nSINK -\n"), b = sc_peer_open("SEND 20\nSINK -\n");
	int ep1 = epoll_new(), ep2 = epoll_new(), ep3 = epoll_new(), d;

	epoll_add(ep1, a, EPOLLIN, 41);
	epoll_add(ep2, b, EPOLLIN, 42);
	epoll_one(ep1, SC_WAIT_MS, 41, EPOLLIN);
	epoll_one(ep2, SC_WAIT_MS, 42, EPOLLIN);
	SC_EQ(dup2(ep1, ep2), ep2);
	epoll_one(ep2, 0, 41, EPOLLIN);
	epoll_add(ep2, b, EPOLLIN, 43); /* its old set is gone */
	epoll_two(ep1, 0, 41, EPOLLIN, 43, EPOLLIN);
	SC_EQ(dup2(ep1, ep1), ep1);
	epoll_two(ep1, 0, 41, EPOLLIN, 43, EPOLLIN);
	SC_EQ(dup3(ep2, ep3, O_CLOEXEC), ep3);
	SC_EQ(fcntl(ep3, F_GETFD), FD_CLOEXEC);
	SC_EQ(fcntl(ep2, F_GETFD), 0); /* dup2 cleared epoll_new's */
	SC_EQ(fcntl(ep1, F_GETFD), FD_CLOEXEC);
	SC_EQ(epoll_ctl(ep3, EPOLL_CTL_DEL, a, NULL), 0);
	epoll_one(ep1, 0, 43, EPOLLIN);
	d = sc_track((int)SC_OK(fcntl(ep1, F_DUPFD_CLOEXEC, 0)));
	SC_EQ(fcntl(d, F_GETFD), FD_CLOEXEC);
	epoll_one(d, 0, 43, EPOLLIN);
	/* A socket onto a number: the set keeps its other numbers. */
	SC_EQ(dup2(a, ep2), ep2);
	epoll_one(ep3, 0, 43, EPOLLIN);
	SC_EQ(sc_close(ep1), 0);
	SC_EQ(sc_close(ep3), 0);
	epoll_one(d, 0, 43, EPOLLIN);
	epoll_add(d, ep2, EPOLLIN, 44); /* a's other number, a's data */
	epoll_two(d, 0, 43, EPOLLIN, 44, EPOLLIN);
}

/*
 * Copies made before the set held any socket (dup, F_DUPFD, with a pipe
 * already in it) are the same set too: a socket added through a copy
 * is reported through the original, which sleeps until its data, and
 * through the other copy; every number sees every registration; the
 * set lives on in the last number.
 */
static void epoll_dup_early(void)
{
	int fd = sc_peer_open("SLEEP 200\nSEND 10\nSINK -\n");
	int quiet = sc_peer_open("SINK -\n"), ep = epoll_new(), p[2], d, f;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 51 };
	uint8_t buf[10];
	char c = 'p';

	SC_OK(pipe(p));
	sc_track(p[0]);
	sc_track(p[1]);
	epoll_add(ep, p[0], EPOLLIN, 50);
	d = sc_track((int)SC_OK(dup(ep)));
	f = sc_track((int)SC_OK(fcntl(ep, F_DUPFD_CLOEXEC, 0)));
	SC_EQ(fcntl(d, F_GETFD), 0);
	SC_EQ(fcntl(f, F_GETFD), FD_CLOEXEC);
	epoll_add(d, fd, EPOLLIN, 51);
	epoll_one(ep, SC_WAIT_MS, 51, EPOLLIN);
	epoll_one(f, 0, 51, EPOLLIN);
	SC_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EEXIST);
	SC_ERR(epoll_ctl(f, EPOLL_CTL_ADD, fd, &ev), EEXIST);
	epoll_add(f, quiet, EPOLLOUT, 52);
	epoll_two(d, 0, 51, EPOLLIN, 52, EPOLLOUT);
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, quiet, NULL), 0);
	SC_ERR(epoll_ctl(d, EPOLL_CTL_DEL, quiet, NULL), ENOENT);
	/* The kernel fd registered before the copies: in the same set. */
	SC_EQ(write(p[1], &c, 1), 1);
	epoll_two(f, 0, 50, EPOLLIN, 51, EPOLLIN);
	SC_EQ(read(p[0], &c, 1), 1);
	SC_EQ(sc_close(ep), 0);
	SC_EQ(sc_close(d), 0);
	epoll_one(f, 0, 51, EPOLLIN);
	SC_EQ(epoll_ctl(f, EPOLL_CTL_DEL, fd, NULL), 0);
	epoll_none(f, 0);
	sc_recv_exact(fd, buf, 10, SC_WAIT_MS);
	sc_pattern_check(buf, 10, 0);
}

/*
 * dup2() and dup3() of a set onto other numbers (a pipe's, another
 * set's) before the set held any socket: those numbers name the set
 * too.  A socket added through the original is reported through them
 * (the one waited on sleeps until its data), and one added through a
 * copy through the original.  A pipe dup2'ed onto a copy later takes
 * that number away from the set; the other numbers keep it.
 */
static void epoll_dup2_early(void)
{
	int fd = sc_peer_open("SLEEP 200\nSEND 10\nSINK -\n");
	int quiet = sc_peer_open("SINK -\n"), ep = epoll_new(), other = epoll_new(), p[2];

	SC_OK(pipe(p));
	sc_track(p[0]);
	sc_track(p[1]);
	SC_EQ(dup2(ep, p[0]), p[0]);
	SC_EQ(dup3(ep, other, O_CLOEXEC), other);
	epoll_add(ep, fd, EPOLLIN, 61);
	epoll_one(p[0], SC_WAIT_MS, 61, EPOLLIN);
	epoll_one(other, 0, 61, EPOLLIN);
	epoll_add(other, quiet, EPOLLOUT, 62);
	epoll_two(ep, 0, 61, EPOLLIN, 62, EPOLLOUT);
	/* The pipe's read end onto the copy: that number leaves the set. */
	SC_EQ(dup2(p[1], p[0]), p[0]);
	SC_ERR(epoll_wait(p[0], (struct epoll_event[1]){ { 0 } }, 1, 0), EINVAL);
	epoll_two(other, 0, 61, EPOLLIN, 62, EPOLLOUT);
	SC_EQ(sc_close(ep), 0);
	epoll_two(other, 0, 61, EPOLLIN, 62, EPOLLOUT);
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
	{ "epoll_exclusive_rules", epoll_exclusive_rules },
	{ "epoll_exclusive_wake_one", epoll_exclusive_wake_one },
	{ "epoll_threads_wake", epoll_threads_wake },
	{ "epoll_ctl_errors", epoll_ctl_errors },
	{ "epoll_close_removes", epoll_close_removes },
	{ "epoll_dup", epoll_dup },
	{ "epoll_dup2", epoll_dup2 },
	{ "epoll_dup_early", epoll_dup_early },
	{ "epoll_dup2_early", epoll_dup2_early },
	{ NULL, NULL },
};
