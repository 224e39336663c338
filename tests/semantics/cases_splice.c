/* cases_splice.c - splice(2) between a TCP socket and a pipe: data both ways (hashed), end of stream, reset, blocking rules, errors in Linux's order. */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sc.h"

/* FNV-1a over n bytes, continuing h. */
static uint64_t hash_bytes(uint64_t h, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define HASH0 0xcbf29ce484222325ull

/* Hash of the peer's pattern, stream bytes [off, off + n). */
static uint64_t hash_pattern(size_t off, size_t n)
{
	uint64_t h = HASH0;

	for (size_t i = 0; i < n; i++) {
		uint8_t b = sc_pattern_byte(off + i);

		h = hash_bytes(h, &b, 1);
	}
	return h;
}

/* A pipe, both ends tracked: p[0] read, p[1] write. */
static void pipe_open(int p[2])
{
	SC_EQ(pipe(p), 0);
	sc_track(p[0]);
	sc_track(p[1]);
}

/* Everything the pipe holds now, into *h; returns the byte count. */
static size_t pipe_drain(int fd, uint64_t *h, size_t *checked_off)
{
	static uint8_t buf[65536];
	size_t total = 0;
	int avail = 0;

	SC_OK(ioctl(fd, FIONREAD, &avail));
	while (avail > 0) {
		ssize_t r = read(fd, buf, (size_t)avail < sizeof(buf) ? (size_t)avail : sizeof(buf));

		SC_TRUE(r > 0);
		*h = hash_bytes(*h, buf, (size_t)r);
		sc_pattern_check(buf, (size_t)r, *checked_off);
		*checked_off += (size_t)r;
		total += (size_t)r;
		avail -= (int)r;
	}
	return total;
}

/* Socket -> pipe: the peer's 50000 bytes arrive whole and in order (the
 * hash of what came through the pipe is the pattern's), then EOF is 0. */
static void splice_sock_to_pipe(void)
{
	char tag[128];
	int fd = sc_peer_open("SEND 50000\nFIN %s\n", sc_tag(tag, sizeof(tag), 0)), p[2];
	uint64_t h = HASH0;
	size_t total = 0, off = 0;
	double deadline = sc_now_ms() + SC_WAIT_MS;
	ssize_t r;

	pipe_open(p);
	while ((r = splice(fd, NULL, p[1], NULL, 65536, 0)) > 0 && sc_now_ms() < deadline) {
		SC_TRUE(r <= 65536);
		total += pipe_drain(p[0], &h, &off);
	}
	SC_EQ(r, 0);
	SC_EQ(total, 50000);
	SC_EQ(h, hash_pattern(0, 50000));
	/* At the end of the stream, again and again 0; a small len too. */
	SC_EQ(splice(fd, NULL, p[1], NULL, 10, SPLICE_F_NONBLOCK), 0);
	SC_EQ(splice(fd, NULL, p[1], NULL, 1, 0), 0);
	SC_EQ(sc_close(fd), 0);
}

/* Socket -> pipe with a len smaller than what is there: exactly len. */
static void splice_sock_partial(void)
{
	int fd = sc_peer_open("SEND 300\nSINK -\n"), p[2];
	uint8_t buf[300];

	pipe_open(p);
	sc_wait_bytes(fd, 300, SC_WAIT_MS);
	SC_EQ(splice(fd, NULL, p[1], NULL, 100, 0), 100);
	SC_EQ(read(p[0], buf, sizeof(buf)), 100);
	sc_pattern_check(buf, 100, 0);
	/* The rest: recv() sees the stream go on where splice stopped. */
	SC_EQ(recv(fd, buf, 50, 0), 50);
	sc_pattern_check(buf, 50, 100);
	SC_EQ(splice(fd, NULL, p[1], NULL, 1000, SPLICE_F_MORE | SPLICE_F_MOVE), 150);
	SC_EQ(read(p[0], buf, sizeof(buf)), 150);
	sc_pattern_check(buf, 150, 150);
}

/* Pipe -> socket through an echo: what goes into the pipe comes back
 * whole (hashes both ways); a pipe without writers is then 0. */
static void splice_pipe_to_sock(void)
{
	static uint8_t out[40000], in[40000];
	int fd = sc_peer_open("ECHO\n"), p[2];
	size_t total = 0;
	double deadline = sc_now_ms() + SC_WAIT_MS;

	pipe_open(p);
	sc_pattern_fill(out, sizeof(out), 7);
	SC_EQ(write(p[1], out, sizeof(out)), (ssize_t)sizeof(out));
	/* Never more than the pipe holds, never more than len. */
	SC_EQ(splice(p[0], NULL, fd, NULL, 1000, 0), 1000);
	total = 1000;
	while (total < sizeof(out) && sc_now_ms() < deadline) {
		ssize_t r = splice(p[0], NULL, fd, NULL, 1u << 20, SPLICE_F_MORE);

		SC_TRUE(r > 0);
		total += (size_t)r;
	}
	SC_EQ(total, sizeof(out));
	sc_recv_exact(fd, in, sizeof(in), SC_WAIT_MS);
	SC_EQ(hash_bytes(HASH0, in, sizeof(in)), hash_pattern(7, sizeof(out)));
	/* Empty: EAGAIN without waiting; without a writer: 0. */
	SC_ERR(splice(p[0], NULL, fd, NULL, 100, SPLICE_F_NONBLOCK), EAGAIN);
	SC_EQ(sc_close(p[1]), 0);
	SC_EQ(splice(p[0], NULL, fd, NULL, 100, 0), 0);
}

/* Which side's non-blocking mode counts: the socket's own for the socket
 * (SPLICE_F_NONBLOCK does not make it return at once), the pipe's or
 * SPLICE_F_NONBLOCK for the pipe. */
static void splice_nonblock(void)
{
	int fd = sc_peer_open("SINK -\n"), p[2];
	struct timeval tv = { 0, 100000 };
	uint8_t buf[4096];
	double t0;
	ssize_t r;

	pipe_open(p);
	/* No data, a blocking socket with SO_RCVTIMEO: the timeout. */
	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	t0 = sc_now_ms();
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, SPLICE_F_NONBLOCK), EAGAIN);
	SC_RANGE(sc_now_ms() - t0, 60, 1500);
	/* A non-blocking socket: at once. */
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	t0 = sc_now_ms();
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, 0), EAGAIN);
	SC_RANGE(sc_now_ms() - t0, 0, 50);
	/* A full pipe: EAGAIN with SPLICE_F_NONBLOCK or the pipe's O_NONBLOCK. */
	SC_EQ(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	memset(buf, 'x', sizeof(buf));
	while ((r = write(p[1], buf, sizeof(buf))) > 0)
		;
	SC_ERR(r, EAGAIN);
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, 0), EAGAIN);
	SC_EQ(fcntl(p[1], F_SETFL, 0), 0);
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, SPLICE_F_NONBLOCK), EAGAIN);
	/* An empty pipe into the socket: O_NONBLOCK on the pipe, EAGAIN. */
	SC_EQ(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	while ((r = read(p[0], buf, sizeof(buf))) > 0)
		;
	SC_ERR(r, EAGAIN);
	SC_ERR(splice(p[0], NULL, fd, NULL, 100, 0), EAGAIN);
}

/* The peer's data, then its reset: the data first, ECONNRESET once, then 0. */
static void splice_reset(void)
{
	int fd = sc_peer_open("SEND 20\nSLEEP 50\nRST\n"), p[2];
	uint8_t buf[64];

	pipe_open(p);
	SC_TRUE(sc_poll_until(fd, POLLIN, POLLERR, SC_WAIT_MS) & POLLERR);
	SC_EQ(splice(fd, NULL, p[1], NULL, 100, 0), 20);
	SC_EQ(read(p[0], buf, sizeof(buf)), 20);
	sc_pattern_check(buf, 20, 0);
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, 0), ECONNRESET);
	SC_EQ(splice(fd, NULL, p[1], NULL, 100, 0), 0);
	/* Into the dead socket: EPIPE and SIGPIPE. */
	SC_EQ(write(p[1], "x", 1), 1);
	sc_sigpipe_count = 0;
	SC_ERR(splice(p[0], NULL, fd, NULL, 100, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
}

/* EPIPE with SIGPIPE: into a pipe nobody reads, into a socket shut down
 * for writing or never connected; ENOTCONN from one never connected. */
static void splice_epipe(void)
{
	int fd = sc_peer_open("SEND 10\nSINK -\n"), p[2], un = sc_tcp_socket(0);

	pipe_open(p);
	sc_wait_bytes(fd, 10, SC_WAIT_MS);
	SC_EQ(sc_close(p[0]), 0);
	sc_sigpipe_count = 0;
	SC_ERR(splice(fd, NULL, p[1], NULL, 100, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_EQ(sc_close(p[1]), 0);

	pipe_open(p);
	SC_ERR(splice(un, NULL, p[1], NULL, 100, 0), ENOTCONN);
	SC_EQ(write(p[1], "abc", 3), 3);
	sc_sigpipe_count = 0;
	SC_ERR(splice(p[0], NULL, un, NULL, 100, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	SC_ERR(splice(p[0], NULL, fd, NULL, 100, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 2);
}

/* The errors, in Linux's order (fs/splice.c). */
static void splice_errors(void)
{
	int fd = sc_peer_open("SEND 10\nSINK -\n"), fd2 = sc_peer_open("SINK -\n"), p[2], wr;
	char path[] = "/tmp/sockcheck-splice-XXXXXX";
	loff_t off = 0;

	pipe_open(p);
	sc_wait_bytes(fd, 10, SC_WAIT_MS);
	/* len 0 wins over everything, even bad fds and flags. */
	SC_EQ(splice(fd, NULL, p[1], NULL, 0, 0), 0);
	SC_EQ(splice(fd, NULL, -1, NULL, 0, 0x100), 0);
	SC_ERR(splice(fd, NULL, -1, NULL, 10, 0x100), EINVAL);
	SC_ERR(splice(fd, NULL, -1, NULL, 10, 0), EBADF);
	SC_ERR(splice(-1, NULL, fd, NULL, 10, 0), EBADF);
	/* An offset on the pipe: ESPIPE, before the access modes. */
	SC_ERR(splice(fd, NULL, p[1], &off, 10, 0), ESPIPE);
	SC_ERR(splice(fd, NULL, p[0], &off, 10, 0), ESPIPE);
	SC_ERR(splice(p[0], &off, fd, NULL, 10, 0), ESPIPE);
	/* The wrong end of the pipe, a file not open for reading: EBADF. */
	SC_ERR(splice(fd, NULL, p[0], NULL, 10, 0), EBADF);
	SC_ERR(splice(p[1], NULL, fd, NULL, 10, 0), EBADF);
	sc_close(sc_track((int)SC_OK(mkstemp(path))));
	wr = sc_track((int)SC_OK(open(path, O_WRONLY)));
	unlink(path);
	SC_ERR(splice(wr, NULL, fd, NULL, 10, 0), EBADF);
	/* No pipe on either side: EINVAL. */
	SC_ERR(splice(fd, NULL, fd2, NULL, 10, 0), EINVAL);
	SC_ERR(splice(fd, NULL, fd, NULL, 10, 0), EINVAL);
	/* An offset on the socket, or a len beyond ssize_t: EINVAL. */
	SC_ERR(splice(fd, &off, p[1], NULL, 10, 0), EINVAL);
	SC_ERR(splice(p[0], NULL, fd, &off, 10, 0), EINVAL);
	SC_ERR(splice(fd, NULL, p[1], NULL, (size_t)-1, 0), EINVAL);
	SC_EQ(off, 0);
	/* Nothing was taken: the 10 bytes are all still there. */
	SC_EQ(splice(fd, NULL, p[1], NULL, 64, 0), 10);
}

const struct sc_case sc_cases_splice[] = {
	{ "splice_sock_to_pipe", splice_sock_to_pipe },
	{ "splice_sock_partial", splice_sock_partial },
	{ "splice_pipe_to_sock", splice_pipe_to_sock },
	{ "splice_nonblock", splice_nonblock },
	{ "splice_reset", splice_reset },
	{ "splice_epipe", splice_epipe },
	{ "splice_errors", splice_errors },
	{ NULL, NULL },
};
