/* cases_poll.c - poll, select, ppoll and pselect over sockets and pipes. */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sc.h"

static volatile sig_atomic_t usr1_count;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

/* SIGUSR1 blocked, with a handler, and pending. */
static void usr1_pending(sigset_t *old)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t block;

	sigemptyset(&sa.sa_mask);
	SC_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	SC_EQ(sigprocmask(SIG_BLOCK, &block, old), 0);
	usr1_count = 0;
	SC_EQ(raise(SIGUSR1), 0);
	SC_EQ(usr1_count, 0);
}

static void pipe_new(int pfd[2])
{
	SC_OK(pipe(pfd));
	sc_track(pfd[0]);
	sc_track(pfd[1]);
}

/* A socket and a pipe in one poll: each ready one, and only those. */
static void poll_mixed(void)
{
	int fd = sc_peer_open("SLEEP 300\nSEND 10\nSINK -\n"), pfd[2];
	struct pollfd p[3];

	pipe_new(pfd);
	p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = pfd[0], .events = POLLIN };
	p[2] = (struct pollfd){ .fd = fd, .events = POLLOUT };
	SC_EQ(poll(p, 2, 50), 0);
	SC_EQ(p[0].revents, 0);
	SC_EQ(p[1].revents, 0);
	SC_EQ(write(pfd[1], "x", 1), 1);
	SC_EQ(poll(p, 3, SC_WAIT_MS), 2);
	SC_EQ(p[0].revents, 0);
	SC_EQ(p[1].revents, POLLIN);
	SC_EQ(p[2].revents, POLLOUT);
	SC_EQ(sc_poll1(fd, POLLIN, SC_WAIT_MS), POLLIN);
	SC_EQ(poll(p, 2, 0), 2);
	SC_EQ(p[0].revents, POLLIN);
	SC_EQ(p[1].revents, POLLIN);
	/* A negative fd is ignored. */
	p[1].fd = -1;
	SC_EQ(poll(p, 2, 0), 1);
	SC_EQ(p[1].revents, 0);
}

/* The peer's FIN: POLLIN | POLLRDHUP; once we shut down too, POLLHUP. */
static void poll_hup(void)
{
	int fd = sc_peer_open("SLEEP 100\nFIN -\n");

	SC_EQ(sc_poll1(fd, POLLIN | POLLRDHUP, SC_WAIT_MS), POLLIN | POLLRDHUP);
	SC_EQ(sc_poll1(fd, POLLOUT, 0), POLLOUT);
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	SC_EQ(sc_poll1(fd, POLLIN | POLLRDHUP, SC_WAIT_MS), POLLIN | POLLRDHUP | POLLHUP);
	/* POLLHUP is reported even with no events asked for. */
	SC_EQ(sc_poll1(fd, 0, 0), POLLHUP);
}

static void poll_reset(void)
{
	int fd = sc_peer_open("SLEEP 100\nRST\n");

	/* Writable at once; the reset adds the rest. */
	SC_EQ(sc_poll_until(fd, POLLIN | POLLOUT | POLLRDHUP, POLLERR, SC_WAIT_MS),
	      POLLIN | POLLOUT | POLLRDHUP | POLLERR | POLLHUP);
	/* Reading the error clears POLLERR; the hang-up stays. */
	{
		char c;

		SC_ERR(recv(fd, &c, 1, 0), ECONNRESET);
	}
	SC_EQ(sc_poll1(fd, POLLIN | POLLOUT | POLLRDHUP, 0),
	      POLLIN | POLLOUT | POLLRDHUP | POLLHUP);
}

/* poll on a closed fd number: POLLNVAL. */
static void poll_nval(void)
{
	int fd = sc_tcp_socket(0);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	SC_EQ(sc_close(fd), 0);
	SC_EQ(poll(&p, 1, 0), 1);
	SC_EQ(p.revents, POLLNVAL);
}

static void select_mixed(void)
{
	int fd = sc_peer_open("SLEEP 300\nSEND 10\nSINK -\n"), pfd[2], nfds;
	fd_set r, w;
	struct timeval tv = { 0, 50000 };
	double t0;

	pipe_new(pfd);
	nfds = (fd > pfd[0] ? fd : pfd[0]) + 1;
	FD_ZERO(&r);
	FD_SET(fd, &r);
	FD_SET(pfd[0], &r);
	t0 = sc_now_ms();
	SC_EQ(select(nfds, &r, NULL, NULL, &tv), 0);
	SC_RANGE(sc_now_ms() - t0, 45, 500);
	SC_TRUE(!FD_ISSET(fd, &r) && !FD_ISSET(pfd[0], &r));
	/* Linux updates the timeout. */
	SC_EQ(tv.tv_sec, 0);
	SC_EQ(tv.tv_usec, 0);

	SC_EQ(write(pfd[1], "x", 1), 1);
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(fd, &r);
	FD_SET(pfd[0], &r);
	FD_SET(fd, &w);
	tv = (struct timeval){ 3, 0 };
	SC_EQ(select(nfds, &r, &w, NULL, &tv), 2);
	SC_TRUE(!FD_ISSET(fd, &r));
	SC_TRUE(FD_ISSET(pfd[0], &r));
	SC_TRUE(FD_ISSET(fd, &w));

	SC_EQ(sc_poll1(fd, POLLIN, SC_WAIT_MS), POLLIN);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	FD_SET(pfd[0], &r);
	tv = (struct timeval){ 0, 0 };
	SC_EQ(select(nfds, &r, NULL, NULL, &tv), 2);
	SC_TRUE(FD_ISSET(fd, &r) && FD_ISSET(pfd[0], &r));
}

/* select on a closed fd: EBADF. */
static void select_badf(void)
{
	int fd = sc_tcp_socket(0);
	fd_set r;
	struct timeval tv = { 0, 0 };

	SC_EQ(sc_close(fd), 0);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	SC_ERR(select(fd + 1, &r, NULL, NULL, &tv), EBADF);
}

/* ppoll's mask: a pending signal interrupts when unblocked, waits when not. */
static void ppoll_sigmask(void)
{
	int fd = sc_peer_open("SINK -\n");
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { 0, 100 * 1000000L };
	sigset_t old, keep;
	double t0;

	usr1_pending(&old);
	/* With SIGUSR1 still blocked: a plain timeout. */
	sigemptyset(&keep);
	sigaddset(&keep, SIGUSR1);
	t0 = sc_now_ms();
	SC_EQ(ppoll(&p, 1, &ts, &keep), 0);
	SC_RANGE(sc_now_ms() - t0, 90, 600);
	SC_EQ(usr1_count, 0);
	/* Unblocked for the call: EINTR at once, the handler ran. */
	ts = (struct timespec){ 3, 0 };
	t0 = sc_now_ms();
	SC_ERR(ppoll(&p, 1, &ts, &old), EINTR);
	SC_RANGE(sc_now_ms() - t0, 0, 100);
	SC_EQ(usr1_count, 1);
	SC_EQ(sigprocmask(SIG_SETMASK, &old, NULL), 0);
}

static void pselect_sigmask(void)
{
	int fd = sc_peer_open("SINK -\n");
	struct timespec ts = { 0, 100 * 1000000L };
	sigset_t old, keep;
	fd_set r;
	double t0;

	usr1_pending(&old);
	sigemptyset(&keep);
	sigaddset(&keep, SIGUSR1);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	t0 = sc_now_ms();
	SC_EQ(pselect(fd + 1, &r, NULL, NULL, &ts, &keep), 0);
	SC_RANGE(sc_now_ms() - t0, 90, 600);
	SC_EQ(usr1_count, 0);
	FD_ZERO(&r);
	FD_SET(fd, &r);
	ts = (struct timespec){ 3, 0 };
	t0 = sc_now_ms();
	SC_ERR(pselect(fd + 1, &r, NULL, NULL, &ts, &old), EINTR);
	SC_RANGE(sc_now_ms() - t0, 0, 100);
	SC_EQ(usr1_count, 1);
	SC_EQ(sigprocmask(SIG_SETMASK, &old, NULL), 0);
}

const struct sc_case sc_cases_poll[] = {
	{ "poll_mixed", poll_mixed },
	{ "poll_hup", poll_hup },
	{ "poll_reset", poll_reset },
	{ "poll_nval", poll_nval },
	{ "select_mixed", select_mixed },
	{ "select_badf", select_badf },
	{ "ppoll_sigmask", ppoll_sigmask },
	{ "pselect_sigmask", pselect_sigmask },
	{ NULL, NULL },
};
