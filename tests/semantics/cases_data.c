/* cases_data.c - the data path: EAGAIN, recv flags, vectored I/O, partial writes, timeouts. */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sc.h"


static void recv_nonblock_eagain(void)
{
	int fd = sc_peer_open("SINK -\n");
	char buf[16];

	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), EAGAIN);
	SC_ERR(read(fd, buf, sizeof(buf)), EAGAIN);
}

static void recv_dontwait(void)
{
	int fd = sc_peer_open("SLEEP 200\nSEND 10\nSINK -\n");
	uint8_t buf[16];

	SC_ERR(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	SC_EQ(sc_poll1(fd, POLLIN, SC_WAIT_MS), POLLIN);
	sc_wait_bytes(fd, 10, SC_WAIT_MS);
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 10);
	sc_pattern_check(buf, 10, 0);
	/* The socket itself stays blocking. */
	SC_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
}

static void recv_peek(void)
{
	int fd = sc_peer_open("SEND 100\nSINK -\n");
	uint8_t a[100], b[100];

	sc_wait_bytes(fd, 100, SC_WAIT_MS);
	SC_EQ(recv(fd, a, 50, MSG_PEEK), 50);
	sc_pattern_check(a, 50, 0);
	SC_EQ(recv(fd, a, 100, MSG_PEEK), 100);
	sc_pattern_check(a, 100, 0);
	/* Peeking consumed nothing. */
	SC_EQ(recv(fd, b, 30, 0), 30);
	sc_pattern_check(b, 30, 0);
	SC_EQ(recv(fd, b, 100, MSG_PEEK | MSG_DONTWAIT), 70);
	sc_pattern_check(b, 70, 30);
	SC_EQ(recv(fd, b, 100, 0), 70);
	sc_pattern_check(b, 70, 30);
	SC_ERR(recv(fd, b, 100, MSG_PEEK | MSG_DONTWAIT), EAGAIN);
}

/* MSG_WAITALL gathers 1000 bytes the peer sends in three pieces. */
static void recv_waitall(void)
{
	int fd = sc_peer_open("SEND 300\nSLEEP 100\nSEND 300\nSLEEP 100\nSEND 400\nSINK -\n");
	uint8_t buf[1000];
	struct timeval tv = { 3, 0 };

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_WAITALL), 1000);
	sc_pattern_check(buf, sizeof(buf), 0);
}

/* MSG_WAITALL returns short when the peer closes first. */
static void recv_waitall_eof(void)
{
	int fd = sc_peer_open("SEND 300\nSLEEP 100\nFIN -\n");
	uint8_t buf[1000];
	struct timeval tv = { 3, 0 };

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_WAITALL), 300);
	sc_pattern_check(buf, 300, 0);
	SC_EQ(recv(fd, buf, sizeof(buf), MSG_WAITALL), 0);
}

static void readv_writev(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[700], in[700];
	struct iovec wv[3] = {
		{ out, 1 }, { out + 1, 299 }, { out + 300, 400 },
	};
	struct iovec rv[4] = {
		{ in, 10 }, { in + 10, 0 }, { in + 10, 500 }, { in + 510, 190 },
	};

	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(writev(fd, wv, 3), 700);
	sc_wait_bytes(fd, 700, SC_WAIT_MS);
	SC_EQ(readv(fd, rv, 4), 700);
	sc_pattern_check(in, sizeof(in), 0);
	/* An empty vector is not an error. */
	SC_EQ(writev(fd, wv, 0), 0);
}

static void sendmsg_recvmsg(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[300], in[300];
	struct sockaddr_in from;
	struct iovec wv[2] = { { out, 100 }, { out + 100, 200 } };
	struct iovec rv[2] = { { in, 150 }, { in + 150, 150 } };
	struct msghdr m = { .msg_iov = wv, .msg_iovlen = 2 };

	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(sendmsg(fd, &m, MSG_NOSIGNAL), 300);
	sc_wait_bytes(fd, 300, SC_WAIT_MS);
	memset(&m, 0, sizeof(m));
	m.msg_iov = rv;
	m.msg_iovlen = 2;
	m.msg_name = &from;
	m.msg_namelen = sizeof(from);
	m.msg_flags = -1;
	SC_EQ(recvmsg(fd, &m, 0), 300);
	sc_pattern_check(in, sizeof(in), 0);
	/* TCP gives no source address and no flags. */
	SC_EQ(m.msg_namelen, 0);
	SC_EQ(m.msg_flags, 0);
	SC_EQ(m.msg_controllen, 0);
}

/* send/sendto with a NULL address work on a connected socket. */
static void sendto_connected(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[64], in[64];

	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(sendto(fd, out, 32, 0, NULL, 0), 32);
	SC_EQ(write(fd, out + 32, 32), 32);
	sc_recv_exact(fd, in, 64, SC_WAIT_MS);
	sc_pattern_check(in, 64, 0);
	SC_EQ(recvfrom(fd, in, sizeof(in), MSG_DONTWAIT, NULL, NULL), -1);
	SC_EQ(errno, EAGAIN);
}

/* The peer does not read: non-blocking writes fill the buffers, then EAGAIN. */
static void send_partial_nonblock(void)
{
	char tag[128];
	int fd = sc_peer_open("HOLD 2000 %s\n", sc_tag(tag, sizeof(tag), 0));
	size_t chunk = 1 << 16, total = 0;
	uint8_t *buf = calloc(1, chunk);
	ssize_t r = 0;
	char end[32];

	SC_TRUE(buf != NULL);
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	while (total < (256u << 20)) {
		r = send(fd, buf, chunk, 0);
		if (r < 0)
			break;
		total += (size_t)r;
	}
	free(buf);
	SC_ERR(r, EAGAIN);
	SC_TRUE(total > 0);
	SC_TRUE(total < (256u << 20));
	/* Once the peer reads, everything arrives. */
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	SC_EQ((long)sc_peer_wait(tag, 2000 + SC_WAIT_MS, end, sizeof(end)), (long)total);
	SC_TRUE(strcmp(end, "eof") == 0);
}

static void so_rcvtimeo(void)
{
	int fd = sc_peer_open("SINK -\n");
	struct timeval tv = { 0, 300000 }, got = { 9, 9 };
	socklen_t len = sizeof(got);
	char buf[16];
	double t0;

	SC_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &got, &len), 0);
	SC_EQ(len, sizeof(got));
	SC_EQ(got.tv_sec, 0);
	SC_RANGE(got.tv_usec / 1000.0, 290, 310);
	t0 = sc_now_ms();
	SC_ERR(recv(fd, buf, sizeof(buf), 0), EAGAIN);
	SC_RANGE(sc_now_ms() - t0, 250, 1000);
	/* A negative tv_usec is rejected. */
	tv.tv_usec = -1;
	SC_ERR(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), EDOM);
}

/* The peer does not read: a blocking send times out after SO_SNDTIMEO. */
static void so_sndtimeo(void)
{
	int fd = sc_peer_open("HOLD 5000 -\n");
	struct timeval tv = { 0, 300000 };
	size_t chunk = 1 << 20, total = 0;
	uint8_t *buf = calloc(1, chunk);
	ssize_t r = 0;
	double t0 = 0, elapsed = 0;

	SC_TRUE(buf != NULL);
	SC_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	while (total < (256u << 20)) {
		t0 = sc_now_ms();
		r = send(fd, buf, chunk, MSG_NOSIGNAL);
		elapsed = sc_now_ms() - t0;
		if (r < 0)
			break;
		total += (size_t)r;
	}
	free(buf);
	SC_ERR(r, EAGAIN);
	SC_TRUE(total > 0);
	SC_RANGE(elapsed, 250, 1500);
}

const struct sc_case sc_cases_data[] = {
	{ "recv_nonblock_eagain", recv_nonblock_eagain },
	{ "recv_dontwait", recv_dontwait },
	{ "recv_peek", recv_peek },
	{ "recv_waitall", recv_waitall },
	{ "recv_waitall_eof", recv_waitall_eof },
	{ "readv_writev", readv_writev },
	{ "sendmsg_recvmsg", sendmsg_recvmsg },
	{ "sendto_connected", sendto_connected },
	{ "send_partial_nonblock", send_partial_nonblock },
	{ "so_rcvtimeo", so_rcvtimeo },
	{ "so_sndtimeo", so_sndtimeo },
	{ NULL, NULL },
};
