/* cases_proc.c - signals (EINTR), threads, fork, and sockets that are not accelerated. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sc.h"

/* ---- EINTR ------------------------------------------------------------------ */

static volatile sig_atomic_t alarm_ticks;

/* The first tick is the interruption under test; a second one (3 s later)
 * means the call never returned: fail the case like the runner's alarm. */
static void on_tick(int sig)
{
	static const char msg[] = "timed out: the blocking call ignored the signal";

	(void)sig;
	if (++alarm_ticks > 1) {
		memcpy(sc_run_msg, msg, sizeof(msg));
		siglongjmp(sc_run_jmp, 2);
	}
}

/* SIGALRM to on_tick (flags), first after first_ms, then every 3 s. */
static void tick_start(int flags, int first_ms)
{
	struct sigaction sa = { .sa_handler = on_tick, .sa_flags = flags };
	struct itimerval it = {
		.it_interval = { SC_WAIT_MS / 1000, 0 },
		.it_value = { first_ms / 1000, (first_ms % 1000) * 1000 },
	};

	alarm(0);            /* the runner's watchdog; the ticks replace it */
	alarm_ticks = 0;
	sigemptyset(&sa.sa_mask);
	SC_EQ(sigaction(SIGALRM, &sa, NULL), 0);
	SC_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void tick_stop(void)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &off, NULL);
}

/* Without SA_RESTART a blocking recv returns EINTR. */
static void eintr_recv(void)
{
	int fd = sc_peer_open("SINK -\n");
	char buf[16];
	double t0;

	tick_start(0, 200);
	t0 = sc_now_ms();
	SC_ERR(recv(fd, buf, sizeof(buf), 0), EINTR);
	tick_stop();
	SC_RANGE(sc_now_ms() - t0, 150, 1000);
	SC_EQ(alarm_ticks, 1);
}

/* With SA_RESTART recv goes on waiting and returns the data. */
static void eintr_restart(void)
{
	int fd = sc_peer_open("SLEEP 500\nSEND 10\nSINK -\n");
	uint8_t buf[16];
	double t0;

	tick_start(SA_RESTART, 200);
	t0 = sc_now_ms();
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 10);
	tick_stop();
	SC_RANGE(sc_now_ms() - t0, 400, 2000);
	SC_EQ(alarm_ticks, 1);
	sc_pattern_check(buf, 10, 0);
}

/* SA_RESTART does not restart a socket with SO_RCVTIMEO: EINTR. */
static void eintr_restart_timeo(void)
{
	int fd = sc_peer_open("SINK -\n");
	struct timeval tv = { 2, 0 };
	char buf[16];
	double t0;

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	tick_start(SA_RESTART, 200);
	t0 = sc_now_ms();
	SC_ERR(recv(fd, buf, sizeof(buf), 0), EINTR);
	tick_stop();
	SC_RANGE(sc_now_ms() - t0, 150, 1000);
	SC_EQ(alarm_ticks, 1);
}

/* siginterrupt() and sigset() are obsolete, but programs still call them:
 * the tests use them on purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* signal() installs BSD semantics (SA_RESTART): recv goes on; after
 * siginterrupt(sig, 1) the next signal() gives EINTR. */
static void eintr_restart_signal(void)
{
	int fd = sc_peer_open("SLEEP 500\nSEND 10\nSINK -\n"), fd2;
	struct itimerval it = { { SC_WAIT_MS / 1000, 0 }, { 0, 200000 } };
	uint8_t buf[16];
	double t0;

	alarm(0);
	alarm_ticks = 0;
	SC_TRUE(signal(SIGALRM, on_tick) != SIG_ERR);
	SC_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	t0 = sc_now_ms();
	SC_EQ(recv(fd, buf, sizeof(buf), 0), 10);
	tick_stop();
	SC_RANGE(sc_now_ms() - t0, 400, 2000);
	SC_EQ(alarm_ticks, 1);
	sc_pattern_check(buf, 10, 0);

	fd2 = sc_peer_open("SINK -\n");
	SC_EQ(siginterrupt(SIGALRM, 1), 0);
	SC_TRUE(signal(SIGALRM, on_tick) == on_tick);
	alarm_ticks = 0;
	SC_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	SC_ERR(recv(fd2, buf, sizeof(buf), 0), EINTR);
	tick_stop();
	SC_EQ(alarm_ticks, 1);
	SC_EQ(siginterrupt(SIGALRM, 0), 0);
}

#pragma GCC diagnostic pop

/* A blocked send (nothing queued yet) goes on after an SA_RESTART
 * handler, and sends everything once the peer reads. */
static void eintr_restart_send(void)
{
	static uint8_t buf[1 << 16];
	int fd = sc_peer_open("HOLD 2000 -\n");
	double t0 = sc_now_ms(), quiet = 0;
	ssize_t r;

	/* Fill every buffer on the way: sends refused for 200 ms running. */
	SC_EQ(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	while (quiet < 200) {
		double q0 = sc_now_ms();

		r = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);
		if (r > 0) {
			quiet = 0;
			continue;
		}
		SC_ERR(r, EAGAIN);
		sc_sleep_ms(20);
		quiet += sc_now_ms() - q0;
		SC_TRUE(sc_now_ms() - t0 < 1200);
	}
	SC_EQ(fcntl(fd, F_SETFL, 0), 0);
	tick_start(SA_RESTART, 200);
	t0 = sc_now_ms();
	SC_EQ(send(fd, buf, sizeof(buf), MSG_NOSIGNAL), (long)sizeof(buf));
	tick_stop();
	SC_RANGE(sc_now_ms() - t0, 300, 2800);
	SC_EQ(alarm_ticks, 1);
}

/* poll and epoll_wait return EINTR even for an SA_RESTART handler. */
static void eintr_restart_poll(void)
{
	int fd = sc_peer_open("SINK -\n"), ep;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct epoll_event ev = { .events = EPOLLIN };

	ep = sc_track((int)SC_OK(epoll_create1(EPOLL_CLOEXEC)));
	SC_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	tick_start(SA_RESTART, 200);
	SC_ERR(poll(&p, 1, 2000), EINTR);
	tick_stop();
	SC_EQ(alarm_ticks, 1);
	tick_start(SA_RESTART, 200);
	SC_ERR(epoll_wait(ep, &ev, 1, 2000), EINTR);
	tick_stop();
	SC_EQ(alarm_ticks, 1);
}

static volatile sig_atomic_t info_sig, info_code, plain_sig;

static void on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	info_sig = sig;
	info_code = si->si_code;
}

static void on_plain(int sig)
{
	plain_sig = sig;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* sigaction reads back exactly what was installed (handler, flags, mask);
 * SA_SIGINFO handlers get their siginfo; SA_RESETHAND resets to SIG_DFL;
 * signal() and sigset() return the previous handler. */
static void sigaction_roundtrip(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	SC_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	SC_EQ(sigaction(SIGUSR1, NULL, &old), 0);
	SC_TRUE(old.sa_sigaction == on_info);
	SC_EQ(old.sa_flags & (SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_RESETHAND),
	      SA_SIGINFO | SA_RESTART | SA_NODEFER);
	SC_TRUE(sigismember(&old.sa_mask, SIGUSR2));
	SC_TRUE(!sigismember(&old.sa_mask, SIGUSR1));
	info_sig = 0;
	SC_EQ(raise(SIGUSR1), 0);
	SC_EQ(info_sig, SIGUSR1);
	SC_EQ(info_code, SI_TKILL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_plain;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	SC_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	SC_TRUE(old.sa_sigaction == on_info);
	SC_EQ(sigaction(SIGUSR1, NULL, &old), 0);
	SC_TRUE(old.sa_handler == on_plain);
	SC_EQ(old.sa_flags & (SA_SIGINFO | SA_RESTART | SA_RESETHAND), SA_RESETHAND);
	plain_sig = 0;
	SC_EQ(raise(SIGUSR1), 0);
	SC_EQ(plain_sig, SIGUSR1);
	SC_EQ(sigaction(SIGUSR1, NULL, &old), 0);
	SC_TRUE(old.sa_handler == SIG_DFL);

	SC_TRUE(signal(SIGUSR2, on_plain) == SIG_DFL);
	SC_EQ(sigaction(SIGUSR2, NULL, &old), 0);
	SC_TRUE(old.sa_handler == on_plain);
	SC_EQ(old.sa_flags & SA_RESTART, SA_RESTART);
	SC_TRUE(sigismember(&old.sa_mask, SIGUSR2));
	SC_TRUE(signal(SIGUSR2, SIG_IGN) == on_plain);
	SC_TRUE(sigset(SIGUSR2, on_plain) == SIG_IGN);
	SC_TRUE(sigset(SIGUSR2, SIG_HOLD) == on_plain);
	SC_TRUE(sigset(SIGUSR2, SIG_HOLD) == SIG_HOLD);
	plain_sig = 0;
	SC_EQ(raise(SIGUSR2), 0);
	SC_EQ(plain_sig, 0);            /* held */
	SC_TRUE(sigset(SIGUSR2, on_plain) == SIG_HOLD);
	SC_EQ(plain_sig, SIGUSR2);      /* delivered once unblocked */
	SC_ERR(sigaction(SIGKILL, &sa, NULL), EINVAL);
	SC_ERR(sigaction(0, NULL, &old), EINVAL);
	SC_TRUE(signal(SIGKILL, on_plain) == SIG_ERR);
}

#pragma GCC diagnostic pop

/* ---- threads ------------------------------------------------------------------ */

/* Results of helper threads; static so a failed case cannot leave a thread
 * writing into a dead stack frame. */
static struct {
	int fd;
	long result;
	int err;
	size_t bytes;
	char msg[128];
} th;

static void *accept_thread(void *arg)
{
	th.result = accept(th.fd, NULL, NULL);
	th.err = errno;
	(void)arg;
	return NULL;
}

/* One thread blocks in accept while the main thread has the peer connect. */
static void threads_accept(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ctl;
	struct timeval tv = { 3, 0 };
	pthread_t t;
	char line[64];

	SC_OK(setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	th.fd = lfd;
	th.result = -2;
	SC_EQ(pthread_create(&t, NULL, accept_thread, NULL), 0);
	sc_sleep_ms(100);
	ctl = sc_peer_connect_back(port, 1);
	SC_EQ(pthread_join(t, NULL), 0);
	if (th.result < 0)
		sc_fail(__FILE__, __LINE__, "accept in the thread: %ld %s", th.result,
			sc_errname(th.err));
	sc_track((int)th.result);
	sc_line_read(ctl, line, sizeof(line), SC_WAIT_MS);
	SC_TRUE(strcmp(line, "ok 1") == 0);
	SC_EQ(send((int)th.result, "abc", 3, 0), 3);
	{
		char in[3];

		sc_recv_exact((int)th.result, in, 3, SC_WAIT_MS);
		SC_TRUE(memcmp(in, "abc", 3) == 0);
	}
}

enum { TH_BYTES = 1 << 20 };

static void *reader_thread(void *arg)
{
	static uint8_t buf[65536];

	(void)arg;
	th.bytes = 0;
	while (th.bytes < TH_BYTES) {
		ssize_t r = recv(th.fd, buf, sizeof(buf), 0);

		if (r <= 0) {
			snprintf(th.msg, sizeof(th.msg), "recv after %zu bytes: %zd %s",
				 th.bytes, r, r < 0 ? sc_errname(errno) : "");
			return NULL;
		}
		for (ssize_t i = 0; i < r; i++) {
			if (buf[i] != sc_pattern_byte(th.bytes + (size_t)i)) {
				snprintf(th.msg, sizeof(th.msg), "byte %zu wrong",
					 th.bytes + (size_t)i);
				return NULL;
			}
		}
		th.bytes += (size_t)r;
	}
	return NULL;
}

/* One thread reads while another writes on the same socket (through ECHO). */
static void threads_rw(void)
{
	static uint8_t out[TH_BYTES];
	int fd = sc_peer_open("ECHO\n");
	struct timeval tv = { 3, 0 };
	pthread_t t;

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SC_OK(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	sc_pattern_fill(out, sizeof(out), 0);
	th.fd = fd;
	th.msg[0] = '\0';
	SC_EQ(pthread_create(&t, NULL, reader_thread, NULL), 0);
	sc_sleep_ms(50);      /* let the reader block first */
	for (size_t off = 0; off < sizeof(out);) {
		ssize_t r = send(fd, out + off, sizeof(out) - off, MSG_NOSIGNAL);

		if (r <= 0) {
			int err = errno;

			pthread_join(t, NULL);
			sc_fail(__FILE__, __LINE__, "send after %zu bytes: %zd %s", off, r,
				sc_errname(err));
		}
		off += (size_t)r;
	}
	SC_EQ(pthread_join(t, NULL), 0);
	if (th.msg[0])
		sc_fail(__FILE__, __LINE__, "reader thread: %s", th.msg);
	SC_EQ(th.bytes, TH_BYTES);
}

/* ---- fork ---------------------------------------------------------------------- */

/* A child inherits the connected socket and writes on it; the parent's
 * copy keeps working after the child exits. */
static void fork_inherit(void)
{
	int fd = sc_peer_open("ECHO\n"), status = -1;
	char in[16];
	pid_t pid, w = 0;
	double deadline;

	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		ssize_t r = send(fd, "child!", 6, MSG_NOSIGNAL);

		_exit(r == 6 ? 0 : 1);
	}
	deadline = sc_now_ms() + SC_WAIT_MS;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && sc_now_ms() < deadline)
		sc_sleep_ms(10);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		sc_fail(__FILE__, __LINE__, "the child did not exit within %d ms", SC_WAIT_MS);
	}
	SC_EQ(w, pid);
	SC_TRUE(WIFEXITED(status));
	SC_EQ(WEXITSTATUS(status), 0);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "child!", 6) == 0);
	SC_EQ(send(fd, "parent", 6, 0), 6);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "parent", 6) == 0);
}

/* ---- not accelerated ----------------------------------------------------------- */

static void unix_socketpair(void)
{
	int sv[2], v = 0, lfd, cfd, afd;
	socklen_t len = sizeof(v);
	char buf[8];
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	SC_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	sc_track(sv[0]);
	sc_track(sv[1]);
	SC_EQ(getsockopt(sv[0], SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
	SC_EQ(v, AF_UNIX);
	SC_EQ(send(sv[0], "unix", 4, 0), 4);
	SC_EQ(sc_poll1(sv[1], POLLIN, SC_WAIT_MS), POLLIN);
	SC_EQ(recv(sv[1], buf, sizeof(buf), 0), 4);
	SC_TRUE(memcmp(buf, "unix", 4) == 0);
	SC_EQ(shutdown(sv[0], SHUT_WR), 0);
	SC_EQ(recv(sv[1], buf, sizeof(buf), 0), 0);

	/* A listener on an abstract address. */
	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "sockcheck-%d", (int)getpid());
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	lfd = sc_track((int)SC_OK(socket(AF_UNIX, SOCK_STREAM, 0)));
	SC_EQ(bind(lfd, (struct sockaddr *)&a, len), 0);
	SC_EQ(listen(lfd, 4), 0);
	cfd = sc_track((int)SC_OK(socket(AF_UNIX, SOCK_STREAM, 0)));
	SC_EQ(connect(cfd, (struct sockaddr *)&a, len), 0);
	afd = sc_accept(lfd, SC_WAIT_MS, 0);
	SC_EQ(send(afd, "hi", 2, 0), 2);
	SC_EQ(recv(cfd, buf, sizeof(buf), 0), 2);
}

static void udp_socket(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, from;
	socklen_t len = sizeof(a);
	int fd = sc_track((int)SC_OK(socket(AF_INET, SOCK_DGRAM, 0))), v = 0;
	char buf[16];

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	SC_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	SC_TRUE(a.sin_port != 0);
	len = sizeof(v);
	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	SC_EQ(v, SOCK_DGRAM);
	SC_EQ(sendto(fd, "udp!", 4, 0, (struct sockaddr *)&a, sizeof(a)), 4);
	SC_EQ(sc_poll1(fd, POLLIN, SC_WAIT_MS), POLLIN);
	len = sizeof(from);
	SC_EQ(recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len), 4);
	SC_TRUE(memcmp(buf, "udp!", 4) == 0);
	SC_EQ(len, sizeof(from));
	sc_addr_check(&from, &a, ntohs(a.sin_port));
	SC_ERR(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
}

static void inet6_socket(void)
{
	int fd = sc_track((int)SC_OK(socket(AF_INET6, SOCK_STREAM, 0))), v = 0;
	struct sockaddr_in6 a;
	socklen_t len = sizeof(v);

	SC_EQ(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
	SC_EQ(v, AF_INET6);
	len = sizeof(a);
	SC_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	SC_EQ(len, sizeof(a));
	SC_EQ(a.sin6_family, AF_INET6);
	SC_EQ(sc_close(fd), 0);
	fd = sc_track((int)SC_OK(socket(AF_INET6, SOCK_DGRAM, 0)));
	SC_EQ(sc_close(fd), 0);
}

static void socket_errors(void)
{
	SC_ERR(socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	SC_ERR(socket(12345, SOCK_STREAM, 0), EAFNOSUPPORT);
	SC_ERR(socket(AF_INET, 12345, 0), EINVAL);
	/* A socket never used closes fine. */
	SC_EQ(sc_close(sc_tcp_socket(0)), 0);
}

const struct sc_case sc_cases_proc[] = {
	{ "eintr_recv", eintr_recv },
	{ "eintr_restart", eintr_restart },
	{ "eintr_restart_timeo", eintr_restart_timeo },
	{ "eintr_restart_signal", eintr_restart_signal },
	{ "eintr_restart_send", eintr_restart_send },
	{ "eintr_restart_poll", eintr_restart_poll },
	{ "sigaction_roundtrip", sigaction_roundtrip },
	{ "threads_accept", threads_accept },
	{ "threads_rw", threads_rw },
	{ "fork_inherit", fork_inherit },
	{ "unix_socketpair", unix_socketpair },
	{ "udp_socket", udp_socket },
	{ "inet6_socket", inet6_socket },
	{ "socket_errors", socket_errors },
	{ NULL, NULL },
};
