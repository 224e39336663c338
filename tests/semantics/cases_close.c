/* cases_close.c - half-close, shutdown, resets, SIGPIPE, SO_LINGER and close. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sc.h"

/* The peer's "end" for tag must be want. */
static void peer_end_check(const char *tag, const char *want, long want_bytes)
{
	char end[32];
	long bytes = sc_peer_wait(tag, SC_WAIT_MS, end, sizeof(end));

	if (strcmp(end, want) != 0)
		sc_fail(__FILE__, __LINE__, "the peer's connection %s ended \"%s\", want \"%s\"",
			tag, end, want);
	if (want_bytes >= 0 && bytes != want_bytes)
		sc_fail(__FILE__, __LINE__, "the peer received %ld bytes, want %ld", bytes,
			want_bytes);
}

/* Wait for the peer's reset to arrive (POLLERR). */
static void reset_wait(int fd)
{
	int ev = sc_poll_until(fd, POLLIN, POLLERR, SC_WAIT_MS);

	if (!(ev & POLLERR))
		sc_fail(__FILE__, __LINE__, "no POLLERR after the peer's RST (revents 0x%x)", ev);
}

/* Our SHUT_WR: the echo comes back, then EOF; sending now is EPIPE. */
static void shutdown_wr(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[100], in[100];

	sc_pattern_fill(out, sizeof(out), 0);
	sc_send_all(fd, out, sizeof(out));
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	sc_recv_exact(fd, in, sizeof(in), SC_WAIT_MS);
	sc_pattern_check(in, sizeof(in), 0);
	sc_recv_eof(fd, SC_WAIT_MS);
	SC_ERR(send(fd, out, 1, MSG_NOSIGNAL), EPIPE);
	SC_EQ(sc_sigpipe_count, 0);
	SC_ERR(send(fd, out, 1, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	/* Both directions are closed now: the socket is no longer connected. */
	SC_ERR(shutdown(fd, SHUT_WR), ENOTCONN);
}

/* The peer's FIN: data, then 0 (again and again); we can still send. */
static void peer_fin(void)
{
	char tag[128];
	int fd = sc_peer_open("SEND 100\nFIN %s\n", sc_tag(tag, sizeof(tag), 0));
	uint8_t buf[100];

	sc_recv_exact(fd, buf, sizeof(buf), SC_WAIT_MS);
	sc_pattern_check(buf, sizeof(buf), 0);
	sc_recv_eof(fd, SC_WAIT_MS);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	SC_EQ(read(fd, buf, sizeof(buf)), 0);
	SC_EQ(send(fd, buf, 50, MSG_NOSIGNAL), 50);
	SC_EQ(send(fd, buf, 50, MSG_NOSIGNAL), 50);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "eof", 100);
}

/* SHUT_RD: recv returns 0 at once, poll says readable; sending works. */
static void shutdown_rd(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	uint8_t buf[100];
	double t0;

	SC_EQ(shutdown(fd, SHUT_RD), 0);
	t0 = sc_now_ms();
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	SC_RANGE(sc_now_ms() - t0, 0, 100);
	SC_EQ(sc_poll1(fd, POLLIN | POLLOUT | POLLRDHUP, 0), POLLIN | POLLOUT | POLLRDHUP);
	memset(buf, 'x', sizeof(buf));
	SC_EQ(send(fd, buf, sizeof(buf), MSG_NOSIGNAL), 100);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "eof", 100);
}

static void shutdown_notconn(void)
{
	int fd = sc_tcp_socket(0), pfd[2];

	SC_ERR(shutdown(fd, SHUT_WR), ENOTCONN);
	SC_ERR(shutdown(fd, SHUT_RD), ENOTCONN);
	SC_ERR(shutdown(fd, SHUT_RDWR), ENOTCONN);
	SC_ERR(shutdown(-1, SHUT_RDWR), EBADF);
	SC_OK(pipe(pfd));
	sc_track(pfd[0]);
	sc_track(pfd[1]);
	SC_ERR(shutdown(pfd[0], SHUT_RDWR), ENOTSOCK);
	fd = sc_peer_open("SINK -\n");
	SC_ERR(shutdown(fd, 3), EINVAL);
	SC_ERR(shutdown(fd, -1), EINVAL);
}

/* TCP_INFO's tcpi_state of fd. */
static int tcp_state(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	SC_OK(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len));
	return ti.tcpi_state;
}

/* Wait (up to SC_WAIT_MS) until fd reaches TCP_INFO state want. */
static void tcp_state_wait(int fd, int want)
{
	double deadline = sc_now_ms() + SC_WAIT_MS;

	while (tcp_state(fd) != want && sc_now_ms() < deadline)
		sc_sleep_ms(5);
	SC_EQ(tcp_state(fd), want);
}

/* In TCP_CLOSE (both FINs done, or reset) a socket has no peer: every
 * shutdown() is ENOTCONN (a bad how still EINVAL first), so is
 * getpeername(); getsockname() still answers. */
static void closed_checks(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	SC_ERR(shutdown(fd, SHUT_WR), ENOTCONN);
	SC_ERR(shutdown(fd, SHUT_RD), ENOTCONN);
	SC_ERR(shutdown(fd, SHUT_RDWR), ENOTCONN);
	SC_ERR(shutdown(fd, 7), EINVAL);
	SC_ERR(getpeername(fd, (struct sockaddr *)&a, &len), ENOTCONN);
	len = sizeof(a);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	SC_TRUE(a.sin_port != 0);
	SC_EQ(tcp_state(fd), TCP_CLOSE);
}

/* The peer's FIN first, then ours: once the peer acknowledges ours the
 * socket is in TCP_CLOSE (LAST_ACK before: shutdown() still 0). */
static void shutdown_closed(void)
{
	char tag[128];
	int fd = sc_peer_open("SEND 100\nFIN %s\n", sc_tag(tag, sizeof(tag), 0));
	uint8_t buf[100];
	double deadline;

	sc_recv_exact(fd, buf, sizeof(buf), SC_WAIT_MS);
	sc_recv_eof(fd, SC_WAIT_MS);
	SC_EQ(tcp_state(fd), TCP_CLOSE_WAIT);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	/* Again until our FIN is acknowledged: 0 in LAST_ACK, then ENOTCONN. */
	deadline = sc_now_ms() + SC_WAIT_MS;
	while (shutdown(fd, SHUT_WR) == 0 && sc_now_ms() < deadline)
		sc_sleep_ms(5);
	SC_EQ(errno, ENOTCONN);
	closed_checks(fd);
	SC_EQ(sc_poll1(fd, POLLIN | POLLOUT | POLLRDHUP, 0),
	      POLLIN | POLLOUT | POLLHUP | POLLRDHUP);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	SC_ERR(send(fd, buf, 1, MSG_NOSIGNAL), EPIPE);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "eof", 0);
}

/* Our FIN first, the peer keeps sending: FIN_WAIT_2 once it is
 * acknowledged, where shutdown() is still 0 and the peer is still there. */
static void shutdown_fin_wait(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	SC_EQ(send(fd, "abc", 3, 0), 3);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	peer_end_check(tag, "eof", 3);
	/* The peer closed after EOF: its FIN ends it (TCP_CLOSE). */
	tcp_state_wait(fd, TCP_CLOSE);
	closed_checks(fd);
	SC_EQ(sc_close(fd), 0);

	fd = sc_peer_open("HOLD 5000 -\n");
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	tcp_state_wait(fd, TCP_FIN_WAIT2);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	SC_EQ(shutdown(fd, SHUT_RDWR), 0);
	SC_EQ(getpeername(fd, (struct sockaddr *)&a, &len), 0);
	sc_addr_check(&a, &sc.peer, ntohs(sc.peer.sin_port));
}

/* A reset puts the socket in TCP_CLOSE at once: shutdown() says ENOTCONN
 * before the error is read, and leaves it to recv() (data first). */
static void shutdown_after_reset(void)
{
	int fd = sc_peer_open("SEND 10\nSLEEP 50\nRST\n");
	uint8_t buf[16];

	reset_wait(fd);
	closed_checks(fd);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 10);
	sc_pattern_check(buf, 10, 0);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), ECONNRESET);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	SC_ERR(shutdown(fd, SHUT_WR), ENOTCONN);
}

/* SHUT_RDWR on a live connection: the peer sees EOF, we see POLLHUP. */
static void shutdown_rdwr(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	char c;

	SC_EQ(send(fd, "abc", 3, 0), 3);
	SC_EQ(shutdown(fd, SHUT_RDWR), 0);
	peer_end_check(tag, "eof", 3);
	SC_EQ(recv(fd, &c, 1, 0), 0);
	SC_TRUE(sc_poll1(fd, POLLIN, SC_WAIT_MS) & POLLHUP);
}

/* The peer resets: a blocking recv says ECONNRESET, then 0. */
static void peer_reset_recv(void)
{
	int fd = sc_peer_open("SLEEP 100\nRST\n");
	char buf[16];

	SC_ERR(recv(fd, buf, sizeof(buf), 0), ECONNRESET);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
}

/* Data that arrived before the reset stays readable; then the reset shows. */
static void peer_reset_after_data(void)
{
	int fd = sc_peer_open("SEND 100\nSLEEP 200\nRST\n");
	uint8_t buf[200];

	reset_wait(fd);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 100);
	sc_pattern_check(buf, 100, 0);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), ECONNRESET);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
}

/* The first send after a reset reports it (no SIGPIPE), the next is EPIPE. */
static void reset_send_first(void)
{
	int fd = sc_peer_open("RST\n");
	char buf[16] = "x";

	reset_wait(fd);
	SC_ERR(send(fd, buf, 1, 0), ECONNRESET);
	SC_EQ(sc_sigpipe_count, 0);
	SC_ERR(send(fd, buf, 1, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_ERR(write(fd, buf, 1), EPIPE);
	SC_EQ(sc_sigpipe_count, 2);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 0);
}

/* After the reset was read: send raises SIGPIPE and fails with EPIPE. */
static void reset_sigpipe(void)
{
	int fd = sc_peer_open("RST\n");
	char buf[16] = "x";
	struct iovec v = { buf, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

	reset_wait(fd);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), ECONNRESET);
	SC_ERR(send(fd, buf, 1, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_ERR(sendmsg(fd, &m, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 2);
	SC_ERR(writev(fd, &v, 1), EPIPE);
	SC_EQ(sc_sigpipe_count, 3);
}

/* MSG_NOSIGNAL: EPIPE without the signal. */
static void reset_nosignal(void)
{
	int fd = sc_peer_open("RST\n");
	char buf[16] = "x";
	struct iovec v = { buf, 1 };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };

	reset_wait(fd);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), ECONNRESET);
	SC_ERR(send(fd, buf, 1, MSG_NOSIGNAL), EPIPE);
	SC_ERR(sendmsg(fd, &m, MSG_NOSIGNAL), EPIPE);
	SC_ERR(sendto(fd, buf, 1, MSG_NOSIGNAL, NULL, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 0);
}

/* SO_LINGER {1, 0}: close() resets the connection. */
static void linger_zero_close(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	struct linger lg = { 1, 0 }, got = { 9, 9 };
	socklen_t len = sizeof(got);

	sc_peer_ready(tag);
	SC_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_LINGER, &got, &len), 0);
	SC_EQ(len, sizeof(got));
	SC_EQ(got.l_onoff, 1);
	SC_EQ(got.l_linger, 0);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "reset", 0);
}

/* Send the pattern on non-blocking @fd until nothing moves for 200 ms
 * (the peer reads nothing: its window and both sides' buffers are full);
 * returns the bytes sent. */
static long linger_fill(int fd)
{
	static uint8_t chunk[65536];
	double end = sc_now_ms() + SC_WAIT_MS;
	long sent = 0;

	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	for (;;) {
		ssize_t r;

		sc_pattern_fill(chunk, sizeof(chunk), (size_t)sent);
		r = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
		if (r > 0) {
			sent += r;
			continue;
		}
		SC_ERR(r, EAGAIN);
		if (!(sc_poll1(fd, POLLOUT, 200) & POLLOUT))
			break;
		if (sc_now_ms() > end)
			sc_fail(__FILE__, __LINE__, "the peer took %ld bytes and more", sent);
	}
	SC_TRUE(sent > 0);
	return sent;
}

/*
 * SO_LINGER {1, 5}: close() waits until everything sent is acknowledged
 * (Linux's sk_stream_wait_close: our FIN acknowledged).  The peer reads
 * nothing for 1.5 s, then everything: close() (blocking socket) returns
 * 0 after the peer's reads began, long before the 5 s, and the peer has
 * every byte, checked against the pattern.
 */
static void linger_close_waits(void)
{
	char tag[128];
	struct linger lg = { 1, 5 };
	double t0 = sc_now_ms(), t1;
	int fd = sc_peer_open("VERIFY\nHOLD 1500 %s\n", sc_tag(tag, sizeof(tag), 0));
	long sent = linger_fill(fd);

	SC_EQ(fcntl(fd, F_SETFL, 0), 0);
	SC_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	t1 = sc_now_ms();
	SC_TRUE(t1 - t0 < 1300); /* the peer still holds */
	SC_EQ(sc_close(fd), 0);
	/* After the reads began; the 5 s would end after t1 + 5000. */
	SC_RANGE(sc_now_ms() - t0, 1500, 4500);
	peer_end_check(tag, "eof", sent);
}

/*
 * SO_LINGER {1, 1} while the peer reads nothing: close() gives up after
 * the second and returns 0, on a non-blocking socket too (Linux waits
 * either way); the connection closes on in the background: the peer gets
 * every byte and EOF once it reads.  Closing a dup first does not wait:
 * only the last close lingers.
 */
static void linger_close_timeout(void)
{
	char tag[128];
	struct linger lg = { 1, 1 };
	int fd = sc_peer_open("VERIFY\nHOLD 2500 %s\n", sc_tag(tag, sizeof(tag), 0)), d;
	long sent = linger_fill(fd);
	double t0;

	SC_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	d = sc_track((int)SC_OK(dup(fd)));
	t0 = sc_now_ms();
	SC_EQ(sc_close(d), 0);
	SC_RANGE(sc_now_ms() - t0, 0, 300);
	t0 = sc_now_ms();
	SC_EQ(sc_close(fd), 0);
	SC_RANGE(sc_now_ms() - t0, 900, 2000);
	peer_end_check(tag, "eof", sent);
}

/* A plain close sends everything queued, then FIN. */
static void close_flushes(void)
{
	enum { N = 400000 };
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	uint8_t *buf = malloc(N);

	SC_TRUE(buf != NULL);
	sc_pattern_fill(buf, N, 0);
	sc_send_all(fd, buf, N);
	free(buf);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "eof", N);
}

/* close() with unread received data resets the connection (RFC 2525 2.17). */
static void close_unread_rst(void)
{
	char tag[128];
	int fd = sc_peer_open("SEND 100\nSINK %s\n", sc_tag(tag, sizeof(tag), 0));

	sc_wait_bytes(fd, 100, SC_WAIT_MS);
	sc_peer_ready(tag);
	SC_EQ(sc_close(fd), 0);
	peer_end_check(tag, "reset", 0);
}

/* A non-blocking connect nobody waits for, then close() once the
 * handshake is done: the peer sees a FIN, not a reset.  The peer knows
 * the connection by our address (no command is ever sent). */
static void connect_unpolled_close(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(sc_port(0)) };
	int fd = sc_tcp_socket(SOCK_NONBLOCK), one = 1;
	char tag[64];

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	SC_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_ERR(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), EINPROGRESS);
	sc_sleep_ms(300);
	SC_EQ(sc_close(fd), 0);
	snprintf(tag, sizeof(tag), "from-%s:%u", inet_ntoa(sc.server.sin_addr), sc_port(0));
	peer_end_check(tag, "eof", 0);
}

/* The peer resets while we look away: SO_ERROR says ECONNRESET without a
 * poll or read first, then 0; reads then see the end of the stream. */
static void so_error_unpolled_reset(void)
{
	int fd = sc_peer_open("RST\n"), err = -1;
	socklen_t len = sizeof(err);
	char buf[16];

	sc_sleep_ms(300);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, ECONNRESET);
	err = -1;
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, 0);
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	SC_EQ(sc_close(fd), 0);
}

/* FIONREAD (SIOCINQ) counts what arrived while we looked away, SIOCOUTQ
 * drops to 0 once the peer acknowledged everything: no poll first.  The
 * same after a non-blocking connect nobody waited for. */
static void ioctl_unpolled(void)
{
	int fd = sc_peer_open("SEND 100\nSINK -\n"), v = -1;
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	uint8_t buf[100];

	sc_sleep_ms(300);
	SC_EQ(ioctl(fd, FIONREAD, &v), 0);
	SC_EQ(v, 100);
	v = -1;
	SC_EQ(ioctl(fd, SIOCINQ, &v), 0);
	SC_EQ(v, 100);
	memset(buf, 'x', sizeof(buf));
	SC_EQ(send(fd, buf, sizeof(buf), 0), 100);
	sc_sleep_ms(300);
	v = -1;
	SC_EQ(ioctl(fd, SIOCOUTQ, &v), 0);
	SC_EQ(v, 0);
	SC_EQ(sc_close(fd), 0);

	/* Connected by now: getpeername answers, FIONREAD says 0. */
	fd = sc_tcp_socket(SOCK_NONBLOCK);
	SC_ERR(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), EINPROGRESS);
	sc_sleep_ms(300);
	v = -1;
	SC_EQ(ioctl(fd, FIONREAD, &v), 0);
	SC_EQ(v, 0);
	SC_EQ(getpeername(fd, (struct sockaddr *)&a, &len), 0);
	sc_addr_check(&a, &sc.peer, ntohs(sc.peer.sin_port));
}

/* close() twice: EBADF the second time. */
static void close_twice(void)
{
	int fd = sc_peer_open("SINK -\n");

	SC_EQ(sc_close(fd), 0);
	SC_ERR(close(fd), EBADF);
}

const struct sc_case sc_cases_close[] = {
	{ "shutdown_wr", shutdown_wr },
	{ "peer_fin", peer_fin },
	{ "shutdown_rd", shutdown_rd },
	{ "shutdown_notconn", shutdown_notconn },
	{ "shutdown_closed", shutdown_closed },
	{ "shutdown_fin_wait", shutdown_fin_wait },
	{ "shutdown_after_reset", shutdown_after_reset },
	{ "shutdown_rdwr", shutdown_rdwr },
	{ "peer_reset_recv", peer_reset_recv },
	{ "peer_reset_after_data", peer_reset_after_data },
	{ "reset_send_first", reset_send_first },
	{ "reset_sigpipe", reset_sigpipe },
	{ "reset_nosignal", reset_nosignal },
	{ "linger_zero_close", linger_zero_close },
	{ "linger_close_waits", linger_close_waits },
	{ "linger_close_timeout", linger_close_timeout },
	{ "close_flushes", close_flushes },
	{ "close_unread_rst", close_unread_rst },
	{ "close_twice", close_twice },
	{ "connect_unpolled_close", connect_unpolled_close },
	{ "so_error_unpolled_reset", so_error_unpolled_reset },
	{ "ioctl_unpolled", ioctl_unpolled },
	{ NULL, NULL },
};
