/* cases_fork.c - sockets shared across fork: worker processes accepting on one listener, hand-off to a child, a child that leaves them alone. */
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sc.h"

/* Children report with their exit status; no SC_* checks in a child (they
 * would jump back into the parent's runner). */
static int child_echo(int fd, size_t n)
{
	uint8_t out[512], in[512];
	size_t got = 0;
	double deadline = sc_now_ms() + SC_WAIT_MS;

	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(i * 7 + 3);
	if (send(fd, out, n, MSG_NOSIGNAL) != (ssize_t)n)
		return 2;
	while (got < n && sc_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = recv(fd, in + got, n - got, MSG_DONTWAIT);
		if (r <= 0 && !(r < 0 && errno == EAGAIN))
			return 3;
		if (r > 0)
			got += (size_t)r;
	}
	return got == n && memcmp(in, out, n) == 0 ? 0 : 4;
}

/* Reap @pid within SC_WAIT_MS; returns its exit status (or fails). */
static int child_wait(pid_t pid)
{
	double deadline = sc_now_ms() + SC_WAIT_MS;
	int status = -1;
	pid_t w;

	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && sc_now_ms() < deadline)
		sc_sleep_ms(10);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		sc_fail(__FILE__, __LINE__, "child %d did not exit within %d ms", (int)pid,
			SC_WAIT_MS);
	}
	SC_EQ(w, pid);
	SC_TRUE(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* A worker process: polls its listener (as a server's event loop does),
 * says it is up on @ready_fd, then accepts one connection and serves it. */
__attribute__((noreturn)) static void worker(int lfd, int ready_fd, size_t n)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd, rc;

	poll(&p, 1, 0);
	if (write(ready_fd, "r", 1) != 1)
		_exit(5);
	if (poll(&p, 1, SC_WAIT_MS) != 1)
		_exit(6);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(7);
	rc = child_echo(fd, n);
	close(fd);
	_exit(rc);
}

/* nginx-style: the parent listens and never accepts; two workers each
 * accept one connection from the shared listener and serve it. */
static void fork_workers(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ready[2], ctl;
	pid_t pid[2];
	char c;

	SC_OK(pipe(ready));
	fflush(NULL);
	for (int i = 0; i < 2; i++) {
		pid[i] = (pid_t)SC_OK(fork());
		if (pid[i] == 0) {
			close(ready[0]);
			worker(lfd, ready[1], 300);
		}
	}
	close(ready[1]);
	for (int i = 0; i < 2; i++)
		SC_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	ctl = sc_peer_connect_back(port, 2);
	SC_EQ(child_wait(pid[0]), 0);
	SC_EQ(child_wait(pid[1]), 0);
	sc_peer_connect_back_done(ctl, 2);
}

/* inetd / ForkingMixIn-style: the parent accepts, forks a child to serve
 * the connection and closes its own copy at once. */
static void fork_handoff(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ctl, fd;
	pid_t pid;

	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		int rc = child_echo(fd, 200);

		close(fd);
		_exit(rc);
	}
	SC_EQ(sc_close(fd), 0);
	SC_EQ(child_wait(pid), 0);
	sc_peer_connect_back_done(ctl, 1);
}

/* daemon()-style: the parent gives the listener up right after fork; the
 * child keeps serving on it. */
static void fork_parent_leaves(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ready[2], ctl;
	pid_t pid;
	char c;

	SC_OK(pipe(ready));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		close(ready[0]);
		worker(lfd, ready[1], 100);
	}
	close(ready[1]);
	SC_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	SC_EQ(sc_close(lfd), 0);
	ctl = sc_peer_connect_back(port, 1);
	SC_EQ(child_wait(pid), 0);
	sc_peer_connect_back_done(ctl, 1);
}

/* redis BGSAVE-style: a child that never touches the sockets does not
 * disturb the parent's connection while it lives or when it exits. */
static void fork_child_idle(void)
{
	int fd = sc_peer_open("ECHO\n");
	uint8_t out[256], in[256];
	pid_t pid;

	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		usleep(200 * 1000);
		_exit(0);
	}
	sc_pattern_fill(out, sizeof(out), 0);
	sc_send_all(fd, out, sizeof(out));
	sc_recv_exact(fd, in, sizeof(in), SC_WAIT_MS);
	sc_pattern_check(in, sizeof(in), 0);
	SC_EQ(child_wait(pid), 0);
	sc_send_all(fd, out, 100);
	sc_recv_exact(fd, in, 100, SC_WAIT_MS);
	sc_pattern_check(in, 100, 0);
}

const struct sc_case sc_cases_fork[] = {
	{ "fork_workers", fork_workers },
	{ "fork_handoff", fork_handoff },
	{ "fork_parent_leaves", fork_parent_leaves },
	{ "fork_child_idle", fork_child_idle },
	{ NULL, NULL },
};
