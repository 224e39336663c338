/* cases_opts.c - socket options, fcntl, ioctl, FD_CLOEXEC, dup/dup2. */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sc.h"

static int opt_get(int fd, int level, int name)
{
	int v = -12345;
	socklen_t len = sizeof(v);

	SC_EQ(getsockopt(fd, level, name, &v, &len), 0);
	SC_EQ(len, sizeof(v));
	return v;
}

static void opt_set(int fd, int level, int name, int v)
{
	SC_EQ(setsockopt(fd, level, name, &v, sizeof(v)), 0);
}

static void sockopt_get(void)
{
	int fd = sc_tcp_socket(0);

	SC_EQ(opt_get(fd, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_DOMAIN), AF_INET);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_PROTOCOL), IPPROTO_TCP);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_ERROR), 0);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_ACCEPTCONN), 0);
	fd = sc_peer_open("SINK -\n");
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_TYPE), SOCK_STREAM);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_ERROR), 0);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_ACCEPTCONN), 0);
	SC_TRUE(opt_get(fd, SOL_SOCKET, SO_SNDBUF) > 0);
	SC_TRUE(opt_get(fd, SOL_SOCKET, SO_RCVBUF) > 0);
	SC_TRUE(opt_get(fd, IPPROTO_TCP, TCP_MAXSEG) > 0);
	/* A larger optlen is cut to the int. */
	{
		char big[16];
		socklen_t len = sizeof(big);

		SC_EQ(getsockopt(fd, SOL_SOCKET, SO_TYPE, big, &len), 0);
		SC_EQ(len, sizeof(int));
	}
}

static void sockopt_set(void)
{
	int fd = sc_tcp_socket(0);

	SC_EQ(opt_get(fd, SOL_SOCKET, SO_REUSEADDR), 0);
	opt_set(fd, SOL_SOCKET, SO_REUSEADDR, 1);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_REUSEADDR), 1);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_NODELAY), 0);
	opt_set(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_NODELAY), 1);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
	opt_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_KEEPALIVE), 1);

	/* The options survive connect and stay settable. */
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_REUSEADDR), 1);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_NODELAY), 1);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
	opt_set(fd, IPPROTO_TCP, TCP_NODELAY, 0);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_NODELAY), 0);
	opt_set(fd, SOL_SOCKET, SO_KEEPALIVE, 0);
	SC_EQ(opt_get(fd, SOL_SOCKET, SO_KEEPALIVE), 0);
	/* Any non-zero value means on. */
	opt_set(fd, IPPROTO_TCP, TCP_NODELAY, 42);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_NODELAY), 1);
	sc_send_all(fd, "SINK -\n", 7);
}

static void sockopt_errors(void)
{
	int fd = sc_tcp_socket(0), v = 1, pfd[2];
	socklen_t len = sizeof(v);

	SC_ERR(getsockopt(fd, SOL_SOCKET, 12345, &v, &len), ENOPROTOOPT);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, 12345, &v, sizeof(v)), ENOPROTOOPT);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, 1), EINVAL);
	SC_ERR(getsockopt(-1, SOL_SOCKET, SO_TYPE, &v, &len), EBADF);
	SC_ERR(setsockopt(-1, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), EBADF);
	SC_OK(pipe(pfd));
	sc_track(pfd[0]);
	sc_track(pfd[1]);
	SC_ERR(getsockopt(pfd[0], SOL_SOCKET, SO_TYPE, &v, &len), ENOTSOCK);
	SC_ERR(setsockopt(pfd[0], SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)), ENOTSOCK);
}

/* TCP_MAXSEG: 536 before the handshake, the value set (88..32767) before
 * connect, then the send MSS it clamps (less the timestamp option). */
static void tcp_maxseg(void)
{
	int fd = sc_tcp_socket(0), v = 87;

	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_MAXSEG), 536);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v)), EINVAL);
	v = 32768;
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof(v)), EINVAL);
	opt_set(fd, IPPROTO_TCP, TCP_MAXSEG, 1000);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_MAXSEG), 1000);
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_MAXSEG), 1000 - 12);
	sc_send_all(fd, "SINK -\n", 7);
}

/* TCP_NODELAY, TCP_CORK and the keepalive times: get what was set, Linux's
 * ranges; data still flows with each. */
static void tcp_delay_opts(void)
{
	int fd = sc_tcp_socket(0), v = 0;

	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_CORK), 0);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPIDLE), 7200);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPINTVL), 75);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPCNT), 9);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)), EINVAL);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v, sizeof(v)), EINVAL);
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v)), EINVAL);
	v = 32768;
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)), EINVAL);
	v = 128;
	SC_ERR(setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v)), EINVAL);
	opt_set(fd, IPPROTO_TCP, TCP_KEEPIDLE, 30);
	opt_set(fd, IPPROTO_TCP, TCP_KEEPINTVL, 5);
	opt_set(fd, IPPROTO_TCP, TCP_KEEPCNT, 3);
	opt_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	SC_EQ(connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)), 0);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPIDLE), 30);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPINTVL), 5);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_KEEPCNT), 3);
	opt_set(fd, IPPROTO_TCP, TCP_CORK, 1);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_CORK), 1);
	sc_send_all(fd, "SINK", 4);
	opt_set(fd, IPPROTO_TCP, TCP_CORK, 0);
	SC_EQ(opt_get(fd, IPPROTO_TCP, TCP_CORK), 0);
	SC_EQ(send(fd, " -", 2, MSG_MORE), 2);
	SC_EQ(send(fd, "\n", 1, 0), 1);
}

static void fcntl_nonblock(void)
{
	int fd = sc_peer_open("SINK -\n");
	char c;

	SC_EQ(fcntl(fd, F_GETFL), O_RDWR);
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	SC_EQ(fcntl(fd, F_GETFL), O_RDWR | O_NONBLOCK);
	SC_ERR(recv(fd, &c, 1, 0), EAGAIN);
	SC_EQ(fcntl(fd, F_SETFL, 0), 0);
	SC_EQ(fcntl(fd, F_GETFL), O_RDWR);
	/* Blocking again: SO_RCVTIMEO bounds the wait. */
	{
		struct timeval tv = { 0, 100000 };

		SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
		double t0 = sc_now_ms();

		SC_ERR(recv(fd, &c, 1, 0), EAGAIN);
		SC_RANGE(sc_now_ms() - t0, 80, 1000);
	}
	/* SOCK_NONBLOCK at creation shows in F_GETFL. */
	fd = sc_tcp_socket(SOCK_NONBLOCK);
	SC_EQ(fcntl(fd, F_GETFL), O_RDWR | O_NONBLOCK);
}

static void ioctl_fionread(void)
{
	int fd = sc_peer_open("SEND 1000\nSINK -\n"), avail = -1;
	uint8_t buf[1000];

	SC_EQ(ioctl(fd, FIONREAD, &avail), 0);
	SC_TRUE(avail >= 0 && avail <= 1000);
	sc_wait_bytes(fd, 1000, SC_WAIT_MS);
	SC_EQ(ioctl(fd, FIONREAD, &avail), 0);
	SC_EQ(avail, 1000);
	SC_EQ(recv(fd, buf, 400, 0), 400);
	SC_EQ(ioctl(fd, FIONREAD, &avail), 0);
	SC_EQ(avail, 600);
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 600);
	sc_pattern_check(buf, 600, 400);
	SC_EQ(ioctl(fd, FIONREAD, &avail), 0);
	SC_EQ(avail, 0);
	/* On a listener FIONREAD is EINVAL. */
	fd = sc_listen(sc_port(0), 4, 0);
	SC_ERR(ioctl(fd, FIONREAD, &avail), EINVAL);
}

static void ioctl_fionbio(void)
{
	int fd = sc_peer_open("SINK -\n"), on = 1, off = 0;
	char c;

	SC_EQ(ioctl(fd, FIONBIO, &on), 0);
	SC_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	SC_ERR(recv(fd, &c, 1, 0), EAGAIN);
	SC_EQ(ioctl(fd, FIONBIO, &off), 0);
	SC_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
}

static void fd_cloexec(void)
{
	int fd = sc_tcp_socket(0);

	SC_EQ(fcntl(fd, F_GETFD), 0);
	SC_EQ(fcntl(fd, F_SETFD, FD_CLOEXEC), 0);
	SC_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	fd = sc_tcp_socket(SOCK_CLOEXEC);
	SC_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	SC_EQ(fcntl(fd, F_SETFD, 0), 0);
	SC_EQ(fcntl(fd, F_GETFD), 0);
	/* The flag belongs to the fd, not the socket: dup clears it. */
	SC_EQ(fcntl(fd, F_SETFD, FD_CLOEXEC), 0);
	{
		int d = sc_track((int)SC_OK(dup(fd)));

		SC_EQ(fcntl(d, F_GETFD), 0);
		d = sc_track((int)SC_OK(fcntl(fd, F_DUPFD_CLOEXEC, 100)));
		SC_TRUE(d >= 100);
		SC_EQ(fcntl(d, F_GETFD), FD_CLOEXEC);
	}
}

/* Data written through a dup arrives; the dup shares O_NONBLOCK. */
static void dup_write(void)
{
	int fd = sc_peer_open("ECHO\n"), d;
	uint8_t out[100], in[100];

	d = sc_track((int)SC_OK(dup(fd)));
	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(send(d, out, 50, 0), 50);
	SC_EQ(write(fd, out + 50, 50), 50);
	sc_recv_exact(d, in, 30, SC_WAIT_MS);
	sc_recv_exact(fd, in + 30, 70, SC_WAIT_MS);
	sc_pattern_check(in, sizeof(in), 0);
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	SC_EQ(fcntl(d, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	{
		char c;

		SC_ERR(recv(d, &c, 1, 0), EAGAIN);
	}
}

/* Closing one of two fds leaves the connection open and usable. */
static void dup_close_one(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0)), d;
	char end[32];

	d = sc_track((int)SC_OK(dup(fd)));
	SC_EQ(sc_close(fd), 0);
	SC_EQ(sc_peer_wait(tag, 300, end, sizeof(end)), 0);
	SC_TRUE(strcmp(end, "open") == 0);
	SC_EQ(send(d, "hello", 5, 0), 5);
	SC_EQ(sc_close(d), 0);
	SC_EQ(sc_peer_wait(tag, SC_WAIT_MS, end, sizeof(end)), 5);
	if (strcmp(end, "eof") != 0)
		sc_fail(__FILE__, __LINE__, "the peer's connection ended \"%s\", want eof", end);
}

/* dup2 onto a chosen number; closing both ends the connection. */
static void dup2_close_both(void)
{
	char tag[128];
	int fd = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0)), d = 200;
	char end[32];

	SC_EQ(dup2(fd, d), d);
	sc_track(d);
	SC_EQ(dup2(fd, fd), fd);
	SC_EQ(send(d, "abc", 3, 0), 3);
	SC_EQ(sc_close(d), 0);
	SC_EQ(sc_peer_wait(tag, 300, end, sizeof(end)), 3);
	SC_TRUE(strcmp(end, "open") == 0);
	SC_EQ(sc_close(fd), 0);
	SC_EQ(sc_peer_wait(tag, SC_WAIT_MS, end, sizeof(end)), 3);
	if (strcmp(end, "eof") != 0)
		sc_fail(__FILE__, __LINE__, "the peer's connection ended \"%s\", want eof", end);
}

/* dup2 over a connected socket's fd closes that socket. */
static void dup2_replace(void)
{
	char tag[128], end[32];
	int victim = sc_peer_open("SINK %s\n", sc_tag(tag, sizeof(tag), 0));
	int fd = sc_peer_open("ECHO\n");
	uint8_t in[4];

	SC_EQ(dup2(fd, victim), victim);
	if (sc_peer_wait(tag, SC_WAIT_MS, end, sizeof(end)) != 0 || strcmp(end, "eof") != 0)
		sc_fail(__FILE__, __LINE__, "the replaced connection ended \"%s\", want eof", end);
	/* victim is now the echo connection. */
	SC_EQ(send(victim, "ping", 4, 0), 4);
	sc_recv_exact(fd, in, 4, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "ping", 4) == 0);
}

const struct sc_case sc_cases_opts[] = {
	{ "sockopt_get", sockopt_get },
	{ "sockopt_set", sockopt_set },
	{ "sockopt_errors", sockopt_errors },
	{ "tcp_maxseg", tcp_maxseg },
	{ "tcp_delay_opts", tcp_delay_opts },
	{ "fcntl_nonblock", fcntl_nonblock },
	{ "ioctl_fionread", ioctl_fionread },
	{ "ioctl_fionbio", ioctl_fionbio },
	{ "fd_cloexec", fd_cloexec },
	{ "dup_write", dup_write },
	{ "dup_close_one", dup_close_one },
	{ "dup2_close_both", dup2_close_both },
	{ "dup2_replace", dup2_replace },
	{ NULL, NULL },
};
