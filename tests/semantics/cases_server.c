/* cases_server.c - passive open: bind, listen, accept, accept4 flags, backlog. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

/* ---- shutdown() of a listener ----------------------------------------------- */

/* Threads blocked on a listener while it is shut down: no SC_* checks in
 * them (those jump back to the runner); static, so a failed case cannot
 * leave one writing into a dead stack frame. */
static int sd_lfd;
static long sd_accept_rc, sd_poll_rc;
static int sd_accept_err, sd_poll_revents;

static void *sd_acceptor(void *arg)
{
	long r = accept(sd_lfd, NULL, NULL);

	(void)arg;
	sd_accept_err = r < 0 ? errno : 0;
	__atomic_store_n(&sd_accept_rc, r, __ATOMIC_RELEASE);
	return NULL;
}

static void *sd_poller(void *arg)
{
	struct pollfd p = { .fd = sd_lfd, .events = POLLIN };
	long r = poll(&p, 1, 2 * SC_WAIT_MS);

	(void)arg;
	sd_poll_revents = p.revents;
	__atomic_store_n(&sd_poll_rc, r, __ATOMIC_RELEASE);
	return NULL;
}

/* Join @t within SC_WAIT_MS, or fail (the thread is left behind). */
static void sd_join(pthread_t t, const char *who)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += SC_WAIT_MS / 1000;
	if (pthread_timedjoin_np(t, NULL, &ts) != 0)
		sc_fail(__FILE__, __LINE__, "the thread blocked in %s did not return", who);
}

static int sd_acceptconn(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);

	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len), 0);
	return v;
}

static uint16_t sd_port_of(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/*
 * Linux's inet_shutdown on a listener: SHUT_WR changes nothing; SHUT_RD
 * (and SHUT_RDWR) stops it (tcp_disconnect): a thread blocked in accept()
 * gets EINVAL, one blocked in poll() POLLHUP, later accept() EINVAL, new
 * connections are refused, accepted ones are not touched; the socket is
 * an unconnected one on its port, which may listen again.
 */
static void listener_shutdown(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ctl, fd, fd2, err = -1;
	socklen_t len = sizeof(err);
	pthread_t ta, tp;
	struct sockaddr_in a;
	double t0;

	SC_EQ(shutdown(lfd, SHUT_WR), 0);
	SC_EQ(sd_acceptconn(lfd), 1);
	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	echo_check(fd, 100);

	sd_lfd = lfd;
	sd_accept_rc = sd_poll_rc = -2;
	SC_EQ(pthread_create(&ta, NULL, sd_acceptor, NULL), 0);
	SC_EQ(pthread_create(&tp, NULL, sd_poller, NULL), 0);
	sc_sleep_ms(100); /* both block */
	SC_EQ(__atomic_load_n(&sd_accept_rc, __ATOMIC_ACQUIRE), -2);
	SC_EQ(__atomic_load_n(&sd_poll_rc, __ATOMIC_ACQUIRE), -2);
	t0 = sc_now_ms();
	SC_EQ(shutdown(lfd, SHUT_RD), 0);
	sd_join(ta, "accept()");
	sd_join(tp, "poll()");
	SC_RANGE(sc_now_ms() - t0, 0, 1000);
	SC_EQ(sd_accept_rc, -1);
	SC_EQ(sd_accept_err, EINVAL);
	SC_EQ(sd_poll_rc, 1);
	SC_EQ(sd_poll_revents, POLLHUP);

	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	SC_ERR(accept4(lfd, NULL, NULL, SOCK_NONBLOCK), EINVAL);
	SC_EQ(sc_poll1(lfd, POLLIN | POLLOUT | POLLRDHUP, 0), POLLOUT | POLLHUP);
	SC_EQ(sd_acceptconn(lfd), 0);
	SC_EQ(getsockopt(lfd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	SC_EQ(err, 0);
	SC_EQ(sd_port_of(lfd), port);
	len = sizeof(a);
	SC_ERR(getpeername(lfd, (struct sockaddr *)&a, &len), ENOTCONN);
	sc_peer_connect_back_refused(port);
	echo_check(fd, 200); /* accepted before: untouched */

	/* listen() again: on the same port, which it kept (bound by us). */
	SC_EQ(listen(lfd, 8), 0);
	SC_EQ(sd_acceptconn(lfd), 1);
	SC_EQ(sd_port_of(lfd), port);
	ctl = sc_peer_connect_back(port, 1);
	fd2 = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	echo_check(fd2, 300);

	/* SHUT_RDWR stops it too; then it is an unconnected socket: ENOTCONN. */
	SC_EQ(shutdown(lfd, SHUT_RDWR), 0);
	SC_EQ(sc_poll1(lfd, POLLIN | POLLOUT, 0), POLLOUT | POLLHUP);
	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	sc_peer_connect_back_refused(port);
	SC_ERR(shutdown(lfd, SHUT_RD), ENOTCONN);
	SC_ERR(shutdown(lfd, SHUT_WR), ENOTCONN);
	echo_check(fd2, 10);
}

/* Connect to our own listener on @port (the service's address under
 * Slipstream: its loopback); tracked. */
static int sd_self_connect(uint16_t port)
{
	struct sockaddr_in a = sc.server;
	int fd = sc_tcp_socket(0);

	a.sin_port = htons(port);
	SC_OK(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	return fd;
}

/* Wait for the reset of @fd (POLLERR), then recv says ECONNRESET. */
static void sd_reset_check(int fd)
{
	char c;

	if (!(sc_poll_until(fd, POLLIN, POLLERR, SC_WAIT_MS) & POLLERR))
		sc_fail(__FILE__, __LINE__, "no reset of a connection queued on the listener");
	SC_ERR(recv(fd, &c, 1, 0), ECONNRESET);
}

/*
 * A listener on a port it did not choose (listen() without bind()):
 * connections queued but not accepted are reset by the shutdown, the
 * port is given up (getsockname() still shows it; another socket may
 * bind it), and the socket may bind() and listen() again.
 */
static void listener_shutdown_queued(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int lfd = sc_tcp_socket(0), c1, c2, other, ctl, fd;
	uint16_t p0;

	SC_EQ(listen(lfd, 8), 0);
	p0 = sd_port_of(lfd);
	SC_TRUE(p0 != 0);
	c1 = sd_self_connect(p0);
	c2 = sd_self_connect(p0);
	SC_EQ(send(c2, "hello", 5, 0), 5);
	SC_EQ(sc_poll1(lfd, POLLIN, SC_WAIT_MS), POLLIN);
	sc_sleep_ms(50); /* both queued */

	SC_EQ(shutdown(lfd, SHUT_RDWR), 0);
	sd_reset_check(c1);
	sd_reset_check(c2);
	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	SC_EQ(sd_port_of(lfd), p0);
	sc_peer_connect_back_refused(p0);

	/* The port is free: another socket binds it. */
	other = sc_tcp_socket(0);
	a.sin_port = htons(p0);
	SC_EQ(bind(other, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_EQ(sc_close(other), 0);

	/* bind() is allowed again, then listen() there. */
	a.sin_port = htons(sc_port(1));
	SC_EQ(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_EQ(listen(lfd, 8), 0);
	SC_EQ(sd_port_of(lfd), sc_port(1));
	ctl = sc_peer_connect_back(sc_port(1), 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	echo_check(fd, 64);
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
	{ "listener_shutdown", listener_shutdown },
	{ "listener_shutdown_queued", listener_shutdown_queued },
	{ NULL, NULL },
};
