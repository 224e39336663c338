/* cases_threads.c - threads using sockets made by other threads at the same time (under Slipstream: sockets of different contexts). */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sc.h"

/*
 * Under Slipstream each thread's first socket() gives it a context of its
 * own, and a socket stays on the context it was made (or accepted) on;
 * any thread may use it.  These cases make sockets in several threads and
 * use them from others while those block, with the data checked.
 *
 * Helper threads never call the failing sc_* helpers (those jump back to
 * the runner): they record the first problem in their struct th, which
 * the case checks after joining them.  Every wait in a thread is bounded
 * by SO_RCVTIMEO/SO_SNDTIMEO.  The structs are static so a failed case
 * cannot leave a thread writing into a dead stack frame.
 */

#define TH_IO_S 5

struct th {
	pthread_t t;
	int fd[3];              /* sockets the thread made (-1: none) */
	int ready, done;        /* atomics */
	long result;
	size_t bytes;
	uint64_t hash_out, hash_in; /* FNV-1a of what was sent and received */
	char msg[192];
};

static struct th tha, thb, thc;
static uint16_t th_port;
static char th_tag[128];
static pthread_barrier_t th_barrier;

enum { TH_SINK_BYTES = 100000, TH_ROUNDS = 300, TH_ECHO_BYTES = 256 * 1024 };

static void th_reset(struct th *t)
{
	memset(t, 0, sizeof(*t));
	t->fd[0] = t->fd[1] = t->fd[2] = -1;
	t->result = -2;
}

__attribute__((format(printf, 2, 3)))
static void th_fail(struct th *t, const char *fmt, ...)
{
	va_list ap;

	if (t->msg[0])
		return; /* the first problem is the one worth reading */
	va_start(ap, fmt);
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	va_end(ap);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ull

static int io_timeouts(int fd)
{
	struct timeval tv = { TH_IO_S, 0 };

	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) |
	       setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int th_send_all(int fd, const void *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = send(fd, (const char *)buf + off, n - off, MSG_NOSIGNAL);

		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* Exactly @n bytes, or -1 (errno; 0 at EOF). */
static int th_recv_exact(int fd, void *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t r = recv(fd, (char *)buf + off, n - off, 0);

		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return -1;
		}
		off += (size_t)r;
	}
	return 0;
}

/* A connection to sockpeer that has been sent @cmd, with bounded I/O. */
static int th_peer_open(struct th *t, const char *cmd)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0) {
		th_fail(t, "socket: %s", sc_errname(errno));
		return -1;
	}
	if (io_timeouts(fd) < 0 ||
	    connect(fd, (const struct sockaddr *)&sc.peer, sizeof(sc.peer)) < 0 ||
	    th_send_all(fd, cmd, strlen(cmd)) < 0) {
		th_fail(t, "peer connection: %s", sc_errname(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* @rounds request/response rounds on the echo connection @fd, of sizes
 * 1..6000 bytes, each answer compared and both streams hashed. */
static void th_echo_rounds(struct th *t, int fd, unsigned rounds, size_t total)
{
	static __thread uint8_t out[8192], in[8192];
	size_t off = 0;

	t->hash_out = t->hash_in = FNV_INIT;
	for (unsigned i = 0; (rounds ? i < rounds : off < total); i++) {
		size_t n = rounds ? 1 + (size_t)(i * 7919u) % 6000 : sizeof(out);

		if (!rounds && n > total - off)
			n = total - off;
		sc_pattern_fill(out, n, off);
		if (th_send_all(fd, out, n) < 0) {
			th_fail(t, "send at %zu: %s", off, sc_errname(errno));
			return;
		}
		if (th_recv_exact(fd, in, n) < 0) {
			th_fail(t, "recv at %zu: %s", off, errno ? sc_errname(errno) : "EOF");
			return;
		}
		t->hash_out = fnv(t->hash_out, out, n);
		t->hash_in = fnv(t->hash_in, in, n);
		if (memcmp(in, out, n) != 0) {
			th_fail(t, "echo differs in the %zu bytes at %zu", n, off);
			return;
		}
		off += n;
	}
	t->bytes = off;
}

/* ---- accept on one thread, data on another, close from a third ---------------- */

/* A: a listener and a connection of its own (the peer sinks what it
 * sent), then blocks in accept(); the accepted connection echoes. */
static void *ctx_acceptor(void *arg)
{
	static uint8_t sink[TH_SINK_BYTES];
	struct th *t = &tha;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(th_port) };
	char cmd[160];
	int one = 1, fd;

	(void)arg;
	t->fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (t->fd[0] < 0 ||
	    setsockopt(t->fd[0], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(t->fd[0], (struct sockaddr *)&a, sizeof(a)) < 0 || listen(t->fd[0], 8) < 0 ||
	    io_timeouts(t->fd[0]) < 0) {
		th_fail(t, "listener: %s", sc_errname(errno));
		goto out;
	}
	snprintf(cmd, sizeof(cmd), "SINK %s\n", th_tag);
	t->fd[1] = th_peer_open(t, cmd);
	if (t->fd[1] < 0)
		goto out;
	sc_pattern_fill(sink, sizeof(sink), 0);
	if (th_send_all(t->fd[1], sink, sizeof(sink)) < 0) {
		th_fail(t, "send to the sink: %s", sc_errname(errno));
		goto out;
	}
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
	fd = accept(t->fd[0], NULL, NULL);
	t->result = fd;
	if (fd < 0) {
		th_fail(t, "accept: %s", sc_errname(errno));
		goto out;
	}
	t->fd[2] = fd;
	if (io_timeouts(fd) < 0) {
		th_fail(t, "accepted: %s", sc_errname(errno));
		goto out;
	}
	th_echo_rounds(t, fd, 0, TH_ECHO_BYTES);
out:
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* B: request/response rounds on a connection of its own meanwhile. */
static void *ctx_talker(void *arg)
{
	struct th *t = &thb;

	(void)arg;
	t->fd[0] = th_peer_open(t, "ECHO\n");
	if (t->fd[0] >= 0)
		th_echo_rounds(t, t->fd[0], TH_ROUNDS, 0);
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A: only makes an echo connection. */
static void *ctx_talker_open(void *arg)
{
	(void)arg;
	tha.fd[0] = th_peer_open(&tha, "ECHO\n");
	__atomic_store_n(&tha.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* C: closes A's connection while A blocks in accept() and B talks. */
static void *ctx_closer(void *arg)
{
	struct th *t = &thc;

	(void)arg;
	t->result = close(tha.fd[1]);
	if (t->result < 0)
		th_fail(t, "close: %s", sc_errname(errno));
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait until @t is ready or done (bounded). */
static void th_wait_ready(struct th *t, int ms)
{
	double end = sc_now_ms() + ms;

	while (!__atomic_load_n(&t->ready, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) && sc_now_ms() < end)
		sc_sleep_ms(2);
}

static void th_track(struct th *t)
{
	for (int i = 0; i < 3; i++)
		if (t->fd[i] >= 0)
			sc_track(t->fd[i]);
}

static void th_check(struct th *t, const char *who)
{
	if (t->msg[0])
		sc_fail(__FILE__, __LINE__, "thread %s: %s", who, t->msg);
}

/*
 * Thread A blocks in accept() on its own listener while thread B does
 * request/response rounds on its own connection and thread C closes a
 * connection A made (its data must all reach the peer, then EOF); then
 * the peer connects to A's listener and A echoes 256 KB on the accepted
 * connection.  Every stream is compared and hashed.
 */
static void threads_contexts(void)
{
	char end[32];
	long bytes;
	int ctl;

	th_reset(&tha);
	th_reset(&thb);
	th_reset(&thc);
	th_port = sc_port(0);
	sc_tag(th_tag, sizeof(th_tag), 0);
	SC_EQ(pthread_create(&tha.t, NULL, ctx_acceptor, NULL), 0);
	th_wait_ready(&tha, SC_WAIT_MS);
	if (!__atomic_load_n(&tha.ready, __ATOMIC_ACQUIRE)) {
		pthread_join(tha.t, NULL);
		th_track(&tha);
		th_check(&tha, "A");
		sc_fail(__FILE__, __LINE__, "thread A never got to accept()");
	}
	sc_sleep_ms(50); /* let A block in accept() */
	SC_EQ(pthread_create(&thb.t, NULL, ctx_talker, NULL), 0);
	SC_EQ(pthread_create(&thc.t, NULL, ctx_closer, NULL), 0);
	SC_EQ(pthread_join(thc.t, NULL), 0);
	tha.fd[1] = -1; /* C closed it */
	bytes = sc_peer_wait(th_tag, SC_WAIT_MS, end, sizeof(end));
	ctl = sc_peer_connect_back(th_port, 1);
	SC_EQ(pthread_join(tha.t, NULL), 0);
	SC_EQ(pthread_join(thb.t, NULL), 0);
	th_track(&tha);
	th_track(&thb);
	th_check(&thc, "C");
	th_check(&tha, "A");
	th_check(&thb, "B");
	sc_peer_connect_back_done(ctl, 1);
	SC_EQ(thc.result, 0);
	SC_TRUE(strcmp(end, "eof") == 0);
	SC_EQ(bytes, TH_SINK_BYTES);
	SC_EQ(tha.bytes, TH_ECHO_BYTES);
	SC_TRUE(tha.hash_in == tha.hash_out);
	SC_TRUE(thb.bytes > 0);
	SC_TRUE(thb.hash_in == thb.hash_out);
}

/* ---- one thread waits on sockets of two others ------------------------------ */

/* X and Y: each makes an echo connection; both exist at the same time
 * (under Slipstream: two contexts of their own). */
static void *ctx_maker(void *arg)
{
	struct th *t = arg;

	t->fd[0] = th_peer_open(t, "ECHO\n");
	pthread_barrier_wait(&th_barrier);
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Z: after 100 ms, sends 4 bytes on thc.fd[0] (a socket of X or Y). */
static void *ctx_sender(void *arg)
{
	struct th *t = &thc;

	(void)arg;
	sc_sleep_ms(100);
	t->result = send(t->fd[0], arg ? "ping" : "pong", 4, MSG_NOSIGNAL);
	if (t->result != 4)
		th_fail(t, "send: %ld %s", t->result, sc_errname(errno));
	return NULL;
}

/*
 * Threads X and Y each make a connection; the main thread then sleeps in
 * epoll_wait, and later in poll, on both while a third thread sends on
 * one of them: the echo must wake the main thread at once.
 */
static void threads_wait_contexts(void)
{
	struct epoll_event ev[4];
	struct pollfd p[2];
	char buf[4];
	double t0;
	int ep, x, y;

	th_reset(&tha);
	th_reset(&thb);
	th_reset(&thc);
	SC_EQ(pthread_barrier_init(&th_barrier, NULL, 2), 0);
	SC_EQ(pthread_create(&tha.t, NULL, ctx_maker, &tha), 0);
	SC_EQ(pthread_create(&thb.t, NULL, ctx_maker, &thb), 0);
	SC_EQ(pthread_join(tha.t, NULL), 0);
	SC_EQ(pthread_join(thb.t, NULL), 0);
	pthread_barrier_destroy(&th_barrier);
	th_track(&tha);
	th_track(&thb);
	th_check(&tha, "X");
	th_check(&thb, "Y");
	x = tha.fd[0];
	y = thb.fd[0];
	ep = sc_track((int)SC_OK(epoll_create1(EPOLL_CLOEXEC)));
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 1 };
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, x, &ev[0]), 0);
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 2 };
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, y, &ev[0]), 0);
	SC_EQ(epoll_wait(ep, ev, 4, 0), 0);

	/* epoll: Y's socket, written by Z while we sleep. */
	thc.fd[0] = y;
	SC_EQ(pthread_create(&thc.t, NULL, ctx_sender, (void *)1), 0);
	t0 = sc_now_ms();
	SC_EQ(epoll_wait(ep, ev, 4, SC_WAIT_MS), 1);
	SC_RANGE(sc_now_ms() - t0, 50, 1500);
	SC_EQ(ev[0].data.u64, 2);
	SC_EQ(ev[0].events, EPOLLIN);
	SC_EQ(pthread_join(thc.t, NULL), 0);
	th_check(&thc, "Z");
	sc_recv_exact(y, buf, 4, SC_WAIT_MS);
	SC_TRUE(memcmp(buf, "ping", 4) == 0);
	SC_EQ(epoll_wait(ep, ev, 4, 0), 0);

	/* poll: X's socket this time. */
	th_reset(&thc);
	thc.fd[0] = x;
	SC_EQ(pthread_create(&thc.t, NULL, ctx_sender, NULL), 0);
	p[0] = (struct pollfd){ .fd = x, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = y, .events = POLLIN };
	t0 = sc_now_ms();
	SC_EQ(poll(p, 2, SC_WAIT_MS), 1);
	SC_RANGE(sc_now_ms() - t0, 50, 1500);
	SC_EQ(pthread_join(thc.t, NULL), 0);
	th_check(&thc, "Z");
	SC_EQ(p[0].revents, POLLIN);
	SC_EQ(p[1].revents, 0);
	sc_recv_exact(x, buf, 4, SC_WAIT_MS);
	SC_TRUE(memcmp(buf, "pong", 4) == 0);
}

/* ---- fork: a connection another thread made, used by a child ------------------ */

/* B: blocks in recv() for 6 bytes on thb.fd[1] (not its own socket). */
static void *ctx_waiter(void *arg)
{
	struct th *t = &thb;
	char in[8];

	(void)arg;
	__atomic_store_n(&t->ready, 1, __ATOMIC_RELEASE);
	t->result = recv(t->fd[1], in, 6, MSG_WAITALL);
	if (t->result != 6)
		th_fail(t, "recv: %ld %s", t->result, t->result < 0 ? sc_errname(errno) : "");
	else if (memcmp(in, "child!", 6) != 0)
		th_fail(t, "recv: not the child's bytes");
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Thread A makes an echo connection (under Slipstream: on A's context,
 * not the main thread's) and exits; the main thread forks a child that
 * sends on it (adopting it: the parent's copy is away) and exits (the
 * service hands it back, on the parent's context 0: the socket moves
 * there); meanwhile thread B of the parent blocks in recv() on it and
 * gets the echo of the child's bytes.  Then the main thread uses it.
 */
static void threads_fork_handoff(void)
{
	struct timeval tv = { 5, 0 };
	double deadline;
	int fd, status = -1;
	char in[8];
	pid_t pid, w = 0;

	th_reset(&tha);
	th_reset(&thb);
	SC_EQ(pthread_create(&tha.t, NULL, ctx_talker_open, NULL), 0);
	SC_EQ(pthread_join(tha.t, NULL), 0);
	th_track(&tha);
	th_check(&tha, "A");
	fd = tha.fd[0];
	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		usleep(100 * 1000); /* the parent's thread blocks first */
		_exit(send(fd, "child!", 6, MSG_NOSIGNAL) == 6 ? 0 : 1);
	}
	thb.fd[1] = fd;
	SC_EQ(pthread_create(&thb.t, NULL, ctx_waiter, NULL), 0);
	deadline = sc_now_ms() + SC_WAIT_MS;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && sc_now_ms() < deadline)
		sc_sleep_ms(10);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	SC_EQ(pthread_join(thb.t, NULL), 0);
	SC_EQ(w, pid);
	SC_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	th_check(&thb, "B");
	SC_EQ(send(fd, "parent", 6, 0), 6);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "parent", 6) == 0);
}

/* ---- pthread_cancel of threads blocked in the layer --------------------------- */

/*
 * A thread blocked in a call on a socket is cancelled (pthread_cancel:
 * recv, accept, epoll_wait, poll, select, connect and send are
 * cancellation points): it must go without a trace, so that the others
 * go on using those sockets and waiting on them.  Under Slipstream the
 * cancelled thread was asleep as a waiter of the sockets' context, often
 * its poller: a second thread blocked there meanwhile must still be
 * woken by the next event (no lost wake-up).
 */

enum cw_kind { CW_RECV, CW_ACCEPT, CW_EPOLL, CW_POLL, CW_SELECT, CW_CONNECT, CW_SEND };

struct cw {
	pthread_t t;
	enum cw_kind kind;
	int fd;
	int ready;              /* atomic: about to block */
	long rc;
	int err;
	uint32_t events;        /* epoll/poll/select: what was ready */
	char buf[8];
};

static struct cw cwa, cwb;

static void *cw_run(void *arg)
{
	static uint8_t big[16 << 20];
	struct cw *c = arg;
	struct epoll_event ev;
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	struct timeval tv = { TH_IO_S, 0 };
	struct sockaddr_in a = sc.blackhole;
	fd_set r;

	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	switch (c->kind) {
	case CW_RECV:
		c->rc = recv(c->fd, c->buf, 4, MSG_WAITALL);
		break;
	case CW_ACCEPT:
		c->rc = accept(c->fd, NULL, NULL);
		break;
	case CW_EPOLL:
		c->rc = epoll_wait(c->fd, &ev, 1, TH_IO_S * 1000);
		c->events = c->rc == 1 ? ev.events : 0;
		break;
	case CW_POLL:
		c->rc = poll(&p, 1, TH_IO_S * 1000);
		c->events = (uint32_t)p.revents;
		break;
	case CW_SELECT:
		FD_ZERO(&r);
		FD_SET(c->fd, &r);
		c->rc = select(c->fd + 1, &r, NULL, NULL, &tv);
		c->events = c->rc == 1 && FD_ISSET(c->fd, &r);
		break;
	case CW_CONNECT:
		c->rc = connect(c->fd, (struct sockaddr *)&a, sizeof(a));
		break;
	case CW_SEND:
		c->rc = send(c->fd, big, sizeof(big), MSG_NOSIGNAL);
		break;
	}
	c->err = c->rc < 0 ? errno : 0;
	return NULL;
}

/* Start @c (@kind on @fd) and let it block. */
static void cw_start(struct cw *c, enum cw_kind kind, int fd)
{
	double end = sc_now_ms() + SC_WAIT_MS;

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->fd = fd;
	c->rc = -2;
	SC_EQ(pthread_create(&c->t, NULL, cw_run, c), 0);
	while (!__atomic_load_n(&c->ready, __ATOMIC_ACQUIRE) && sc_now_ms() < end)
		sc_sleep_ms(2);
	sc_sleep_ms(100); /* asleep in the call by now */
}

/* Join @c within SC_WAIT_MS: its return value, or fail. */
static void *cw_join(struct cw *c, const char *what)
{
	struct timespec ts;
	void *ret = NULL;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += SC_WAIT_MS / 1000;
	if (pthread_timedjoin_np(c->t, &ret, &ts) != 0)
		sc_fail(__FILE__, __LINE__, "the thread in %s did not end (rc %ld)", what, c->rc);
	return ret;
}

/* Cancel @c, asleep in its call: it ends as cancelled, the call unreturned. */
static void cw_cancel(struct cw *c, const char *what)
{
	SC_EQ(c->rc, -2);
	SC_EQ(pthread_cancel(c->t), 0);
	if (cw_join(c, what) != PTHREAD_CANCELED)
		sc_fail(__FILE__, __LINE__, "the thread in %s was not cancelled (rc %ld %s)", what,
			c->rc, sc_errname(c->err));
	SC_EQ(c->rc, -2);
}

/* One exact echo round of @n bytes on @fd by this thread (blocking recv). */
static void cw_echo(int fd, size_t n)
{
	static uint8_t out[65536], in[65536];
	size_t got = 0;

	sc_pattern_fill(out, n, 3);
	sc_send_all(fd, out, n);
	while (got < n) {
		ssize_t r = recv(fd, in + got, n - got, 0);

		if (r <= 0)
			sc_fail(__FILE__, __LINE__, "echo: recv %zd %s after %zu", r,
				r < 0 ? sc_errname(errno) : "EOF", got);
		got += (size_t)r;
	}
	sc_pattern_check(in, n, 3);
}

static int cw_peer_echo(void)
{
	struct timeval tv = { TH_IO_S, 0 };
	int fd = sc_peer_open("ECHO\n");

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SC_OK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	return fd;
}

/*
 * recv, accept, epoll_wait: in each round thread A blocks first (under
 * Slipstream the poller of the main thread's context), thread B second
 * on another socket or set; A is cancelled and joined; then an event for
 * B must wake it; then the sockets work on (exact echoes).
 */
static void threads_cancel_blocked(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	uint16_t port = sc_port(0);
	int c1 = cw_peer_echo(), c2 = cw_peer_echo(), lfd = sc_listen(port, 8, 0), ep, ctl, fd;
	char buf[4];

	ep = sc_track((int)SC_OK(epoll_create1(EPOLL_CLOEXEC)));
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, c1, &ev), 0);

	/* recv: A on c1, B on c2. */
	cw_start(&cwa, CW_RECV, c1);
	cw_start(&cwb, CW_RECV, c2);
	cw_cancel(&cwa, "recv()");
	SC_EQ(send(c2, "ping", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "recv()"), NULL);
	SC_EQ(cwb.rc, 4);
	SC_TRUE(memcmp(cwb.buf, "ping", 4) == 0);
	cw_echo(c1, 20000);
	cw_echo(c2, 300);

	/* accept: A on the listener, B in epoll_wait on c1. */
	cw_start(&cwa, CW_ACCEPT, lfd);
	cw_start(&cwb, CW_EPOLL, ep);
	cw_cancel(&cwa, "accept()");
	SC_EQ(send(c1, "pong", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "epoll_wait()"), NULL);
	SC_EQ(cwb.rc, 1);
	SC_EQ(cwb.events, EPOLLIN);
	sc_recv_exact(c1, buf, 4, SC_WAIT_MS);
	SC_TRUE(memcmp(buf, "pong", 4) == 0);
	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	cw_echo(fd, 5000);

	/* epoll_wait: A on the set, B in recv() on c2. */
	cw_start(&cwa, CW_EPOLL, ep);
	cw_start(&cwb, CW_RECV, c2);
	cw_cancel(&cwa, "epoll_wait()");
	SC_EQ(send(c2, "pang", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "recv()"), NULL);
	SC_EQ(cwb.rc, 4);
	SC_TRUE(memcmp(cwb.buf, "pang", 4) == 0);
	/* The set works on for the main thread. */
	SC_EQ(epoll_wait(ep, &ev, 1, 0), 0);
	SC_EQ(send(c1, "pung", 4, 0), 4);
	SC_EQ(epoll_wait(ep, &ev, 1, SC_WAIT_MS), 1);
	SC_EQ(ev.data.u64, 7);
	sc_recv_exact(c1, buf, 4, SC_WAIT_MS);
	SC_TRUE(memcmp(buf, "pung", 4) == 0);
	cw_echo(c1, 65536);
	cw_echo(c2, 65536);
}

/*
 * poll, select, connect, send: each blocked thread is cancelled while
 * another blocks on the same sockets' context; that one is woken by the
 * next event, and the sockets work on.
 */
static void threads_cancel_calls(void)
{
	char tag[128];
	int c1 = cw_peer_echo(), c2 = cw_peer_echo(), s, hold;
	struct timeval tv = { TH_IO_S, 0 };

	/* poll: A on c1, B in select() on c2. */
	cw_start(&cwa, CW_POLL, c1);
	cw_start(&cwb, CW_SELECT, c2);
	cw_cancel(&cwa, "poll()");
	SC_EQ(send(c2, "ping", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "select()"), NULL);
	SC_EQ(cwb.rc, 1);
	SC_EQ(cwb.events, 1);
	cw_echo(c1, 1000);
	{
		char buf[4];

		sc_recv_exact(c2, buf, 4, SC_WAIT_MS);
		SC_TRUE(memcmp(buf, "ping", 4) == 0);
	}

	/* select: A on c1, B in poll() on c2. */
	cw_start(&cwa, CW_SELECT, c1);
	cw_start(&cwb, CW_POLL, c2);
	cw_cancel(&cwa, "select()");
	SC_EQ(send(c2, "pong", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "poll()"), NULL);
	SC_EQ(cwb.rc, 1);
	SC_EQ(cwb.events, POLLIN);
	cw_echo(c1, 1000);
	{
		char buf[4];

		sc_recv_exact(c2, buf, 4, SC_WAIT_MS);
		SC_TRUE(memcmp(buf, "pong", 4) == 0);
	}

	/* connect to an address nobody answers: A cancelled, B in recv(). */
	s = sc_tcp_socket(0);
	cw_start(&cwa, CW_CONNECT, s);
	cw_start(&cwb, CW_RECV, c2);
	cw_cancel(&cwa, "connect()");
	SC_EQ(send(c2, "pang", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "recv()"), NULL);
	SC_EQ(cwb.rc, 4);
	SC_EQ(sc_close(s), 0);

	/* send into a peer that reads nothing: A cancelled, B in recv(). */
	hold = sc_peer_open("HOLD 1000 %s\n", sc_tag(tag, sizeof(tag), 0));
	SC_OK(setsockopt(hold, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	cw_start(&cwa, CW_SEND, hold);
	cw_start(&cwb, CW_RECV, c1);
	cw_cancel(&cwa, "send()");
	SC_EQ(send(c1, "pung", 4, 0), 4);
	SC_EQ(cw_join(&cwb, "recv()"), NULL);
	SC_EQ(cwb.rc, 4);
	SC_TRUE(memcmp(cwb.buf, "pung", 4) == 0);
	cw_echo(c1, 65536);
	cw_echo(c2, 65536);
	SC_EQ(sc_close(hold), 0);
}

const struct sc_case sc_cases_threads[] = {
	{ "threads_contexts", threads_contexts },
	{ "threads_wait_contexts", threads_wait_contexts },
	{ "threads_fork_handoff", threads_fork_handoff },
	{ "threads_cancel_blocked", threads_cancel_blocked },
	{ "threads_cancel_calls", threads_cancel_calls },
	{ NULL, NULL },
};
