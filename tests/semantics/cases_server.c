/* cases_server.c - passive open: bind, listen, accept, accept4 flags, backlog. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sc.h"

/* One echo round trip on fd (the peer's connect-backs echo). */
static void echo_check(int fd, size_t n)
{
	uint8_t out[512], in[512];

	sc_pattern_fill(out, n, 7);
	sc_send_all(fd, out, n);
	sc_recv_exact(fd, in, n, SC_WAIT_MS);
	sc_pattern_check(in, n, 7);
}

static void accept_basic(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ctl, fd, v = -1;
	struct sockaddr_in a, b;
	socklen_t len = sizeof(v);

	SC_EQ(getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
	SC_EQ(v, 1);
	len = sizeof(a);
	SC_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(a.sin_addr.s_addr, htonl(INADDR_ANY));
	SC_EQ(ntohs(a.sin_port), port);
	len = sizeof(a);
	SC_ERR(getpeername(lfd, (struct sockaddr *)&a, &len), ENOTCONN);

	ctl = sc_peer_connect_back(port, 1);
	SC_EQ(sc_poll1(lfd, POLLIN, SC_WAIT_MS), POLLIN);
	memset(&a, 0xff, sizeof(a));
	len = sizeof(a);
	fd = sc_track((int)SC_OK(accept(lfd, (struct sockaddr *)&a, &len)));
	SC_EQ(len, sizeof(a));
	sc_addr_check(&a, &sc.peer, 0);
	sc_peer_connect_back_done(ctl, 1);

	len = sizeof(b);
	SC_EQ(getpeername(fd, (struct sockaddr *)&b, &len), 0);
	sc_addr_check(&b, &sc.peer, ntohs(a.sin_port));
	len = sizeof(b);
	SC_EQ(getsockname(fd, (struct sockaddr *)&b, &len), 0);
	sc_addr_check(&b, &sc.server, port);
	len = sizeof(v);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
	SC_EQ(v, 0);
	echo_check(fd, 300);
	SC_EQ(sc_close(fd), 0);
}

/* accept4 flags land on the new fd; plain accept inherits nothing. */
static void accept4_flags(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, SOCK_NONBLOCK), ctl, fd;

	ctl = sc_peer_connect_back(port, 2);
	fd = sc_accept(lfd, SC_WAIT_MS, SOCK_NONBLOCK | SOCK_CLOEXEC);
	SC_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	SC_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	{
		char c;

		SC_ERR(recv(fd, &c, 1, 0), EAGAIN);
	}
	/* The listener is non-blocking; accept() does not pass that on. */
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	SC_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	SC_EQ(fcntl(fd, F_GETFD), 0);
	echo_check(fd, 100);
	sc_peer_connect_back_done(ctl, 2);
	SC_ERR(accept4(lfd, NULL, NULL, 0x40000000), EINVAL);
}

static void accept_nonblock_eagain(void)
{
	int lfd = sc_listen(sc_port(0), 8, 0);

	SC_EQ(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	SC_ERR(accept(lfd, NULL, NULL), EAGAIN);
	SC_ERR(accept4(lfd, NULL, NULL, SOCK_CLOEXEC), EAGAIN);
	SC_EQ(sc_poll1(lfd, POLLIN | POLLOUT, 0), 0);
}

/* accept on a socket that is not listening: EINVAL. */
static void accept_not_listening(void)
{
	int fd = sc_tcp_socket(0);

	SC_ERR(accept(fd, NULL, NULL), EINVAL);
	fd = sc_peer_open("SINK -\n");
	SC_ERR(accept(fd, NULL, NULL), EINVAL);
	SC_ERR(listen(fd, 8), EINVAL);
}

static void bind_in_use(void)
{
	uint16_t port = sc_port(0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int lfd = sc_listen(port, 8, 0), fd = sc_tcp_socket(0), one = 1;

	(void)lfd;
	SC_ERR(bind(fd, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	/* SO_REUSEADDR does not share a port with a listener. */
	SC_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	SC_ERR(bind(fd, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	/* The failed binds left fd unbound: another port works, once. */
	a.sin_port = htons(sc_port(1));
	SC_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons(sc_port(2));
	SC_ERR(bind(fd, (struct sockaddr *)&a, sizeof(a)), EINVAL);
	a.sin_family = AF_UNIX;
	fd = sc_tcp_socket(0);
	SC_ERR(bind(fd, (struct sockaddr *)&a, sizeof(a)), EAFNOSUPPORT);
	a.sin_family = AF_INET;
	SC_ERR(bind(fd, (struct sockaddr *)&a, sizeof(a) - 1), EINVAL);
}

/* bind to port 0: an ephemeral port shows in getsockname; listen there. */
static void bind_port_zero(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int lfd = sc_tcp_socket(0), ctl, fd;

	SC_EQ(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	SC_TRUE(a.sin_port != 0);
	SC_EQ(listen(lfd, 4), 0);
	ctl = sc_peer_connect_back(ntohs(a.sin_port), 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	echo_check(fd, 10);
}

/* listen(4): four connects complete before we accept any. */
static void listen_backlog(void)
{
	enum { N = 4 };
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, N, 0), ctl, fds[N];

	ctl = sc_peer_connect_back(port, N);
	sc_peer_connect_back_done(ctl, N);
	for (int i = 0; i < N; i++)
		fds[i] = sc_accept(lfd, SC_WAIT_MS, 0);
	for (int i = 0; i < N; i++)
		echo_check(fds[i], 64);
	SC_EQ(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	SC_ERR(accept(lfd, NULL, NULL), EAGAIN);
}

/* Closing the listener leaves accepted connections working. */
static void listener_close(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ctl, fd;

	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	SC_EQ(sc_close(lfd), 0);
	echo_check(fd, 200);
	/* The port is free again for a new listener. */
	lfd = sc_listen(port, 8, 0);
	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	echo_check(fd, 10);
}

const struct sc_case sc_cases_server[] = {
	{ "accept_basic", accept_basic },
	{ "accept4_flags", accept4_flags },
	{ "accept_nonblock_eagain", accept_nonblock_eagain },
	{ "accept_not_listening", accept_not_listening },
	{ "bind_in_use", bind_in_use },
	{ "bind_port_zero", bind_port_zero },
	{ "listen_backlog", listen_backlog },
	{ "listener_close", listener_close },
	{ NULL, NULL },
};
