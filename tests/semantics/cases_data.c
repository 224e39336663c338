/* cases_data.c - the data path: EAGAIN, recv flags, vectored I/O, partial writes, timeouts. */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
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

/* send/write on a socket never connected: EPIPE and SIGPIPE (Linux's
 * tcp_sendmsg), even for 0 bytes; recv/read: ENOTCONN. */
static void send_unconnected(void)
{
	int fd = sc_tcp_socket(0);
	char buf[4];

	sc_sigpipe_count = 0;
	SC_ERR(send(fd, "x", 1, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_ERR(write(fd, "x", 1), EPIPE);
	SC_ERR(send(fd, "x", 0, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 3);
	SC_ERR(send(fd, "x", 1, MSG_NOSIGNAL), EPIPE);
	SC_EQ(sc_sigpipe_count, 3);
	SC_ERR(recv(fd, buf, sizeof(buf), 0), ENOTCONN);
	SC_ERR(read(fd, buf, sizeof(buf)), ENOTCONN);
}

/* MSG_MORE is a hint: the bytes still leave (Linux sends a lone MSG_MORE
 * segment after ~200 ms), in order with what follows. */
static void send_more(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[64], in[64];

	sc_pattern_fill(out, sizeof(out), 0);
	SC_EQ(send(fd, out, 10, MSG_MORE), 10);
	sc_recv_exact(fd, in, 10, SC_WAIT_MS);
	sc_pattern_check(in, 10, 0);
	SC_EQ(send(fd, out + 10, 20, MSG_MORE | MSG_NOSIGNAL), 20);
	SC_EQ(send(fd, out + 30, 34, 0), 34);
	sc_recv_exact(fd, in, 54, SC_WAIT_MS);
	sc_pattern_check(in, 54, 10);
}

/* An unlinked temporary file holding n pattern bytes; tracked. */
static int pattern_file(size_t n)
{
	char path[] = "/tmp/sockcheck-sendfile-XXXXXX";
	int f = sc_track((int)SC_OK(mkstemp(path)));
	uint8_t *buf = malloc(n);

	SC_TRUE(buf != NULL);
	unlink(path);
	sc_pattern_fill(buf, n, 0);
	SC_EQ(write(f, buf, n), (long)n);
	free(buf);
	SC_EQ(lseek(f, 0, SEEK_SET), 0);
	return f;
}

/* sendfile from a file: with an offset, *offset moves and the file
 * position does not; without, the file position moves; at the end of
 * the file what is left, then 0. */
static void sendfile_file(void)
{
	int fd = sc_peer_open("ECHO\n"), f = pattern_file(30000);
	static uint8_t in[8192];
	off_t off = 1000;

	SC_EQ(sendfile(fd, f, &off, 5000), 5000);
	SC_EQ(off, 6000);
	SC_EQ(lseek(f, 0, SEEK_CUR), 0);
	sc_recv_exact(fd, in, 5000, SC_WAIT_MS);
	sc_pattern_check(in, 5000, 1000);

	SC_EQ(lseek(f, 200, SEEK_SET), 200);
	SC_EQ(sendfile(fd, f, NULL, 3000), 3000);
	SC_EQ(lseek(f, 0, SEEK_CUR), 3200);
	sc_recv_exact(fd, in, 3000, SC_WAIT_MS);
	sc_pattern_check(in, 3000, 200);

	off = 29000;
	SC_EQ(sendfile(fd, f, &off, 5000), 1000);
	SC_EQ(off, 30000);
	sc_recv_exact(fd, in, 1000, SC_WAIT_MS);
	sc_pattern_check(in, 1000, 29000);
	SC_EQ(sendfile(fd, f, &off, 5000), 0);
	SC_EQ(off, 30000);
	SC_EQ(sendfile(fd, f, NULL, 0), 0);
	SC_EQ(lseek(f, 0, SEEK_CUR), 3200);
	/* sendfile64 is the same call. */
	off = 7;
	SC_EQ(sendfile64(fd, f, &off, 3), 3);
	SC_EQ(off, 10);
	sc_recv_exact(fd, in, 3, SC_WAIT_MS);
	sc_pattern_check(in, 3, 7);
}

/* sendfile's errors, in Linux's order. */
static void sendfile_errors(void)
{
	int fd = sc_peer_open("SINK -\n"), f = pattern_file(100), p[2], wr, un;
	char path[] = "/tmp/sockcheck-sendfile-XXXXXX";
	off_t off = -1;

	SC_ERR(sendfile(fd, f, &off, 10), EINVAL);
	SC_EQ(off, -1);
	SC_ERR(sendfile(fd, -1, NULL, 10), EBADF);
	sc_close(sc_track((int)SC_OK(mkstemp(path))));
	wr = sc_track((int)SC_OK(open(path, O_WRONLY)));
	unlink(path);
	SC_ERR(sendfile(fd, wr, NULL, 10), EBADF);
	SC_EQ(pipe(p), 0);
	sc_track(p[0]);
	sc_track(p[1]);
	off = 0;
	SC_ERR(sendfile(fd, p[0], &off, 10), ESPIPE);
	SC_ERR(sendfile(fd, p[0], NULL, 10), EINVAL);
	SC_ERR(sendfile(fd, p[0], NULL, 0), EINVAL);
	/* Never connected: 0 bytes is fine, more is EPIPE with SIGPIPE. */
	un = sc_tcp_socket(0);
	sc_sigpipe_count = 0;
	SC_EQ(sendfile(un, f, NULL, 0), 0);
	SC_ERR(sendfile(un, f, NULL, 10), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_EQ(lseek(f, 0, SEEK_CUR), 0);
}

/* A non-blocking socket the peer does not read: sendfile sends what fits
 * (the file position moves by exactly that), then EAGAIN; everything sent
 * arrives. */
static void sendfile_nonblock(void)
{
	char tag[128];
	int fd = sc_peer_open("HOLD 2000 %s\n", sc_tag(tag, sizeof(tag), 0));
	char path[] = "/tmp/sockcheck-sendfile-XXXXXX";
	int f = sc_track((int)SC_OK(mkstemp(path)));
	size_t total = 0;
	ssize_t r = 0;
	char end[32];

	unlink(path);
	SC_EQ(ftruncate(f, 256 << 20), 0); /* sparse zeros */
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	while (total < (256u << 20)) {
		r = sendfile(fd, f, NULL, 1 << 20);
		if (r < 0)
			break;
		SC_TRUE(r > 0);
		total += (size_t)r;
	}
	SC_ERR(r, EAGAIN);
	SC_TRUE(total > 0);
	SC_TRUE(total < (256u << 20));
	SC_EQ(lseek(f, 0, SEEK_CUR), (long)total);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	SC_EQ((long)sc_peer_wait(tag, 2000 + SC_WAIT_MS, end, sizeof(end)), (long)total);
	SC_TRUE(strcmp(end, "eof") == 0);
}

/* A socket as sendfile's source: no offset (ESPIPE), only into a pipe
 * (EINVAL otherwise), where it reads what is there like recv. */
static void sendfile_from_socket(void)
{
	int fd = sc_peer_open("SEND 100\nSINK -\n"), f = pattern_file(10), p[2];
	uint8_t buf[200];
	off_t off = 0;

	SC_EQ(pipe(p), 0);
	sc_track(p[0]);
	sc_track(p[1]);
	sc_wait_bytes(fd, 100, SC_WAIT_MS);
	SC_ERR(sendfile(p[1], fd, &off, 50), ESPIPE);
	SC_ERR(sendfile(f, fd, NULL, 50), EINVAL);
	SC_ERR(sendfile(fd, fd, NULL, 50), EINVAL);
	SC_ERR(sendfile(p[0], fd, NULL, 50), EBADF);
	SC_EQ(sendfile(p[1], fd, NULL, 0), 0);
	SC_EQ(sendfile(p[1], fd, NULL, 60), 60);
	SC_EQ(sendfile(p[1], fd, NULL, 1000), 40);
	SC_EQ(read(p[0], buf, sizeof(buf)), 100);
	sc_pattern_check(buf, 100, 0);
	SC_ERR(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
}

static void mmsg_setup(struct mmsghdr *m, struct iovec *v, uint8_t (*buf)[8], int n)
{
	memset(m, 0, (size_t)n * sizeof(*m));
	for (int i = 0; i < n; i++) {
		v[i].iov_base = buf[i];
		v[i].iov_len = 8;
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_len = 99;
	}
}

/* recvmmsg on a stream socket: one recvmsg per entry, msg_len filled,
 * the count returned; EAGAIN only when nothing came. */
static void recvmmsg_stream(void)
{
	int fd = sc_peer_open("SEND 20\nSLEEP 300\nSEND 10\nSLEEP 100\nSEND 20\nSINK -\n");
	uint8_t buf[4][8];
	struct iovec v[4];
	struct mmsghdr m[4];
	struct timespec ts = { 0, 0 };
	double t0;

	sc_wait_bytes(fd, 20, SC_WAIT_MS);
	mmsg_setup(m, v, buf, 4);
	SC_EQ(recvmmsg(fd, m, 4, MSG_DONTWAIT, NULL), 3);
	SC_EQ(m[0].msg_len, 8);
	SC_EQ(m[1].msg_len, 8);
	SC_EQ(m[2].msg_len, 4);
	SC_EQ(m[3].msg_len, 99);
	sc_pattern_check(buf[0], 8, 0);
	sc_pattern_check(buf[1], 8, 8);
	sc_pattern_check(buf[2], 4, 16);
	SC_ERR(recvmmsg(fd, m, 4, MSG_DONTWAIT, NULL), EAGAIN);
	SC_EQ(recvmmsg(fd, m, 0, 0, NULL), 0);
	/* MSG_WAITFORONE: block for the first, then take what is there. */
	mmsg_setup(m, v, buf, 4);
	t0 = sc_now_ms();
	SC_EQ(recvmmsg(fd, m, 4, MSG_WAITFORONE, NULL), 2);
	SC_RANGE(sc_now_ms() - t0, 150, 2000);
	SC_EQ(m[0].msg_len, 8);
	SC_EQ(m[1].msg_len, 2);
	SC_EQ(m[2].msg_len, 99);
	sc_pattern_check(buf[0], 8, 20);
	/* The timeout is looked at after each entry: zero ends after one. */
	sc_wait_bytes(fd, 20, SC_WAIT_MS);
	mmsg_setup(m, v, buf, 4);
	SC_EQ(recvmmsg(fd, m, 4, 0, &ts), 1);
	SC_EQ(m[0].msg_len, 8);
	SC_EQ(ts.tv_sec, 0);
	SC_EQ(ts.tv_nsec, 0);
	ts.tv_sec = 5;
	SC_EQ(recvmmsg(fd, m, 4, MSG_DONTWAIT, &ts), 2);
	SC_EQ(m[0].msg_len, 8);
	SC_EQ(m[1].msg_len, 4);
	SC_EQ(ts.tv_sec, 4); /* the time left, written back */
	sc_pattern_check(buf[1], 4, 46);
	ts.tv_nsec = 1000000000L;
	SC_ERR(recvmmsg(fd, m, 4, MSG_DONTWAIT, &ts), EINVAL);
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	SC_ERR(recvmmsg(fd, m, 4, MSG_DONTWAIT, &ts), EINVAL);
}

/* At the end of the stream every entry gets 0 bytes. */
static void recvmmsg_eof(void)
{
	int fd = sc_peer_open("SEND 4\nFIN -\n");
	uint8_t buf[3][8];
	struct iovec v[3];
	struct mmsghdr m[3];

	mmsg_setup(m, v, buf, 3);
	SC_EQ(recvmmsg(fd, m, 3, 0, NULL), 3);
	SC_EQ(m[0].msg_len, 4);
	SC_EQ(m[1].msg_len, 0);
	SC_EQ(m[2].msg_len, 0);
	sc_pattern_check(buf[0], 4, 0);
}

/* sendmmsg on a stream socket: every entry sent, msg_len filled. */
static void sendmmsg_stream(void)
{
	int fd = sc_peer_open("ECHO\n"), un = sc_tcp_socket(0);
	uint8_t out[16], in[16];
	struct iovec v[3] = { { out, 3 }, { out + 3, 0 }, { out + 3, 5 } };
	struct mmsghdr m[3];

	sc_pattern_fill(out, sizeof(out), 0);
	memset(m, 0, sizeof(m));
	for (int i = 0; i < 3; i++) {
		m[i].msg_hdr.msg_iov = &v[i];
		m[i].msg_hdr.msg_iovlen = 1;
		m[i].msg_len = 99;
	}
	SC_EQ(sendmmsg(fd, m, 3, 0), 3);
	SC_EQ(m[0].msg_len, 3);
	SC_EQ(m[1].msg_len, 0);
	SC_EQ(m[2].msg_len, 5);
	SC_EQ(sendmmsg(fd, m, 0, 0), 0);
	SC_EQ(sendmmsg(fd, m, 1, MSG_MORE), 1);
	sc_recv_exact(fd, in, 11, SC_WAIT_MS);
	sc_pattern_check(in, 8, 0);
	sc_pattern_check(in + 8, 3, 0);
	/* Never connected: EPIPE (with SIGPIPE) as sendmsg. */
	sc_sigpipe_count = 0;
	SC_ERR(sendmmsg(un, m, 3, 0), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
	SC_ERR(sendmmsg(un, m, 3, MSG_NOSIGNAL), EPIPE);
	SC_EQ(sc_sigpipe_count, 1);
}

/* A buffer that is not mapped: EFAULT, nothing sent, nothing consumed
 * (the bytes are still there to read); the connection goes on. */
static void bad_buffer_efault(void)
{
	char tag[128], end[32];
	volatile uintptr_t bad_addr = 1;
	void *bad = (void *)bad_addr;
	struct iovec iov = { bad, 10 };
	uint8_t buf[10];
	int fd = sc_peer_open("SEND 10\nSINK %s\n", sc_tag(tag, sizeof(tag), 0));

	sc_wait_bytes(fd, 10, SC_WAIT_MS);
	SC_ERR(write(fd, bad, 10), EFAULT);
	SC_ERR(send(fd, bad, 10, MSG_NOSIGNAL), EFAULT);
	SC_ERR(writev(fd, &iov, 1), EFAULT);
	SC_ERR(read(fd, bad, 10), EFAULT);
	SC_ERR(recv(fd, bad, 10, 0), EFAULT);
	SC_ERR(recv(fd, bad, 10, MSG_PEEK), EFAULT);
	SC_ERR(readv(fd, &iov, 1), EFAULT);
	sc_recv_exact(fd, buf, sizeof(buf), SC_WAIT_MS);
	sc_pattern_check(buf, sizeof(buf), 0);
	SC_EQ(send(fd, "abc", 3, 0), 3);
	SC_EQ(sc_close(fd), 0);
	SC_EQ(sc_peer_wait(tag, SC_WAIT_MS, end, sizeof(end)), 3);
	SC_TRUE(strcmp(end, "eof") == 0);
}

static sigjmp_buf segv_jmp;
static volatile sig_atomic_t segv_seen;
static void *volatile segv_addr;

static void segv_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	segv_seen = sig;
	segv_addr = si->si_addr;
	siglongjmp(segv_jmp, 1);
}

/* The program's own SIGSEGV handler still gets its faults, with their
 * address; sigaction() shows it; with the default action a fault kills
 * the process with SIGSEGV.  After socket calls that copied data. */
static void own_segv_handler(void)
{
	struct sigaction sa, old, now;
	volatile uintptr_t bad_addr = 8;
	int fd = sc_peer_open("ECHO\n"), status = 0;
	char in[3];
	pid_t pid;

	sc_send_all(fd, "abc", 3);
	sc_recv_exact(fd, in, 3, SC_WAIT_MS);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = segv_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	SC_EQ(sigaction(SIGSEGV, &sa, &old), 0);
	SC_EQ(sigaction(SIGSEGV, NULL, &now), 0);
	SC_TRUE(now.sa_sigaction == segv_handler);
	SC_TRUE(now.sa_flags & SA_SIGINFO);
	segv_seen = 0;
	if (sigsetjmp(segv_jmp, 1) == 0)
		*(volatile int *)bad_addr = 1;
	SC_EQ(segv_seen, SIGSEGV);
	SC_TRUE(segv_addr == (void *)bad_addr);
	/* Still there for the next fault. */
	segv_seen = 0;
	if (sigsetjmp(segv_jmp, 1) == 0)
		*(volatile int *)bad_addr = 1;
	SC_EQ(segv_seen, SIGSEGV);
	SC_EQ(sigaction(SIGSEGV, &old, NULL), 0);
	/* A child with the default action dies of its fault. */
	pid = fork();
	SC_TRUE(pid >= 0);
	if (pid == 0) {
		struct sigaction d;
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core); /* no core file left behind */
		memset(&d, 0, sizeof(d));
		d.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &d, NULL);
		*(volatile int *)bad_addr = 1;
		_exit(0);
	}
	SC_EQ(waitpid(pid, &status, 0), pid);
	SC_TRUE(WIFSIGNALED(status));
	SC_EQ(WTERMSIG(status), SIGSEGV);
	SC_EQ(sc_close(fd), 0);
}

const struct sc_case sc_cases_data[] = {
	{ "own_segv_handler", own_segv_handler },
	{ "bad_buffer_efault", bad_buffer_efault },
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
	{ "send_unconnected", send_unconnected },
	{ "send_more", send_more },
	{ "sendfile_file", sendfile_file },
	{ "sendfile_errors", sendfile_errors },
	{ "sendfile_nonblock", sendfile_nonblock },
	{ "sendfile_from_socket", sendfile_from_socket },
	{ "recvmmsg_stream", recvmmsg_stream },
	{ "recvmmsg_eof", recvmmsg_eof },
	{ "sendmmsg_stream", sendmmsg_stream },
	{ NULL, NULL },
};
