/* cases_connect.c - active open: blocking and non-blocking connect, refusals, names. */
#include <arpa/inet.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sc.h"

/* connect, a 1000-byte round trip through ECHO, EOF after our shutdown. */
static void connect_roundtrip(void)
{
	uint8_t out[1000], in[1000];
	int fd = sc_tcp_socket(0);

	SC_EQ(SC_OK(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer))), 0);
	sc_send_all(fd, "ECHO\n", 5);
	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(SC_OK(send(fd, out, sizeof(out), 0)), sizeof(out));
	sc_recv_exact(fd, in, sizeof(in), SC_WAIT_MS);
	sc_pattern_check(in, sizeof(in), 0);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	sc_recv_eof(fd, SC_WAIT_MS);
	SC_EQ(sc_close(fd), 0);
}

static void connect_refused(void)
{
	int fd = sc_tcp_socket(0), err = -1;
	socklen_t len = sizeof(err);

	SC_ERR(connect(fd, (struct sockaddr *)&sc.refused, sizeof(sc.refused)), ECONNREFUSED);
	/* The error was returned, so nothing is left pending. */
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, 0);
}

/* EINPROGRESS, POLLOUT, SO_ERROR 0, then connect again says EISCONN. */
static void connect_nonblock(void)
{
	int fd = sc_tcp_socket(SOCK_NONBLOCK), err = -1;
	socklen_t len = sizeof(err);

	SC_ERR(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), EINPROGRESS);
	SC_EQ(sc_poll1(fd, POLLOUT, SC_WAIT_MS), POLLOUT);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, 0);
	SC_EQ(len, sizeof(int));
	/* The first connect after completion reports success, later ones EISCONN. */
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
	SC_ERR(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), EISCONN);
	sc_send_all(fd, "ECHO\nab", 7);
	{
		char in[2];

		sc_recv_exact(fd, in, 2, SC_WAIT_MS);
		SC_TRUE(memcmp(in, "ab", 2) == 0);
	}
}

/* A second connect while the first is in progress: EALREADY.  The target
 * does not exist (no ARP answer), so the attempt stays in progress. */
static void connect_nonblock_already(void)
{
	int fd = sc_tcp_socket(SOCK_NONBLOCK);

	SC_ERR(connect(fd, (struct sockaddr *)&sc.blackhole, sizeof(sc.blackhole)),
	       EINPROGRESS);
	SC_ERR(connect(fd, (struct sockaddr *)&sc.blackhole, sizeof(sc.blackhole)), EALREADY);
	SC_EQ(sc_poll1(fd, POLLIN | POLLOUT, 200), 0);
	SC_ERR(send(fd, "x", 1, MSG_NOSIGNAL), EAGAIN);
	SC_EQ(sc_close(fd), 0);
}

static void connect_nonblock_refused(void)
{
	int fd = sc_tcp_socket(SOCK_NONBLOCK), err = -1;
	socklen_t len = sizeof(err);

	SC_ERR(connect(fd, (struct sockaddr *)&sc.refused, sizeof(sc.refused)), EINPROGRESS);
	SC_EQ(sc_poll1(fd, POLLIN | POLLOUT, SC_WAIT_MS), POLLIN | POLLOUT | POLLERR | POLLHUP);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, ECONNREFUSED);
	/* Reading SO_ERROR clears it. */
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, 0);
}

/* getsockname/getpeername of a connected socket; ENOTCONN before. */
static void connect_names(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = sc_tcp_socket(0);

	SC_ERR(getpeername(fd, (struct sockaddr *)&a, &len), ENOTCONN);
	len = sizeof(a);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(len, sizeof(a));
	SC_EQ(a.sin_family, AF_INET);
	SC_EQ(a.sin_port, 0);
	SC_EQ(a.sin_addr.s_addr, htonl(INADDR_ANY));

	SC_OK(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)));
	memset(&a, 0xff, sizeof(a));
	len = sizeof(a);
	SC_EQ(getpeername(fd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(len, sizeof(a));
	sc_addr_check(&a, &sc.peer, ntohs(sc.peer.sin_port));
	memset(&a, 0xff, sizeof(a));
	len = sizeof(a);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(len, sizeof(a));
	sc_addr_check(&a, &sc.server, 0);
	SC_TRUE(a.sin_port != 0);
	/* A short length: filled as far as it goes; len says the full size. */
	memset(&a, 0, sizeof(a));
	len = 4;
	SC_EQ(getpeername(fd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(len, sizeof(a));
	SC_EQ(a.sin_port, sc.peer.sin_port);
	SC_EQ(a.sin_addr.s_addr, 0);
}

/* Bad arguments: wrong family, short length, bad fd, not a socket. */
static void connect_errors(void)
{
	struct sockaddr_in a = sc.peer;
	int fd = sc_tcp_socket(0), pfd[2];

	SC_ERR(connect(fd, (struct sockaddr *)&a, sizeof(a) - 1), EINVAL);
	a.sin_family = AF_UNIX;
	SC_ERR(connect(fd, (struct sockaddr *)&a, sizeof(a)), EAFNOSUPPORT);
	SC_ERR(connect(-1, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), EBADF);
	SC_OK(pipe(pfd));
	sc_track(pfd[0]);
	sc_track(pfd[1]);
	SC_ERR(connect(pfd[0], (struct sockaddr *)&sc.peer, sizeof(sc.peer)), ENOTSOCK);
	/* The socket is still usable after the failed attempts. */
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
}

/* bind to an explicit local port before connect; the peer sees that port. */
static void connect_bound(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(sc_port(0)) };
	socklen_t len = sizeof(a);
	int fd = sc_tcp_socket(0), one = 1;

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	SC_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	sc_addr_check(&a, &sc.server, sc_port(0));
}

const struct sc_case sc_cases_connect[] = {
	{ "connect_roundtrip", connect_roundtrip },
	{ "connect_refused", connect_refused },
	{ "connect_nonblock", connect_nonblock },
	{ "connect_nonblock_already", connect_nonblock_already },
	{ "connect_nonblock_refused", connect_nonblock_refused },
	{ "connect_names", connect_names },
	{ "connect_errors", connect_errors },
	{ "connect_bound", connect_bound },
	{ NULL, NULL },
};
