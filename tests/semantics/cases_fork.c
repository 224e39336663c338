/* cases_fork.c - sockets shared across fork: worker processes accepting on one listener, hand-off to a child, a child that leaves them alone, a connection that comes back to its holder. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
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

/* FNV-1a over n bytes, continuing h. */
static uint64_t hash_bytes(uint64_t h, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define HASH0 0xcbf29ce484222325ull

/* The child's own stream: byte i. */
static uint8_t child_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3 + (i >> 8));
}

/* Poll then recv until n bytes; false on EOF, error or SC_WAIT_MS. */
static bool child_recv(int fd, uint8_t *buf, size_t n)
{
	size_t got = 0;
	double deadline = sc_now_ms() + SC_WAIT_MS;

	while (got < n && sc_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = recv(fd, buf + got, n - got, MSG_DONTWAIT);
		if (r <= 0 && !(r < 0 && errno == EAGAIN))
			return false;
		if (r > 0)
			got += (size_t)r;
	}
	return got == n;
}

/*
 * The child reads part of what the peer sent and sends a stream of its
 * own, then exits; the parent, which kept its copy, reads the rest of the
 * peer's data and the echo of the child's stream, byte for byte (hashes
 * on both sides), and goes on using the connection.
 */
static void fork_inherit_data(void)
{
	static uint8_t buf[30000];
	int fd = sc_peer_open("SEND 20000\nECHO\n");
	uint64_t want = HASH0, got = HASH0;
	pid_t pid;

	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		static uint8_t out[30000];
		size_t off = 0;

		if (!child_recv(fd, buf, 5000))
			_exit(2);
		for (size_t i = 0; i < 5000; i++)
			if (buf[i] != sc_pattern_byte(i))
				_exit(3);
		for (size_t i = 0; i < sizeof(out); i++)
			out[i] = child_byte(i);
		while (off < sizeof(out)) {
			ssize_t r = send(fd, out + off, sizeof(out) - off, MSG_NOSIGNAL);

			if (r <= 0)
				_exit(4);
			off += (size_t)r;
		}
		_exit(0);
	}
	SC_EQ(child_wait(pid), 0);
	/* The peer's bytes the child left, then the echo of the child's. */
	sc_recv_exact(fd, buf, 15000, SC_WAIT_MS);
	sc_pattern_check(buf, 15000, 5000);
	sc_recv_exact(fd, buf, 30000, SC_WAIT_MS);
	for (size_t i = 0; i < 30000; i++) {
		uint8_t b = child_byte(i);

		want = hash_bytes(want, &b, 1);
	}
	got = hash_bytes(got, buf, 30000);
	SC_EQ(got, want);
	/* The parent's own bytes go both ways. */
	sc_pattern_fill(buf, 1000, 0);
	sc_send_all(fd, buf, 1000);
	sc_recv_exact(fd, buf + 1000, 1000, SC_WAIT_MS);
	SC_TRUE(memcmp(buf, buf + 1000, 1000) == 0);
}

/* The child uses the connection and closes its copy but lives on: the
 * parent's copy works at once (no FIN went out: it was not the last). */
static void fork_child_closes(void)
{
	int fd = sc_peer_open("ECHO\n"), done[2], go[2];
	char in[16], c = 0;
	pid_t pid;

	SC_OK(pipe(done));
	SC_OK(pipe(go));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		int rc = send(fd, "child!", 6, MSG_NOSIGNAL) == 6 ? 0 : 1;

		if (close(fd) != 0)
			rc = 2;
		close(done[0]);
		close(go[1]);
		if (write(done[1], "d", 1) != 1)
			rc = 3;
		if (read(go[0], &c, 1) != 1) /* until the parent is through */
			rc = 4;
		_exit(rc);
	}
	close(done[1]);
	close(go[0]);
	SC_EQ(read(done[0], &c, 1), 1);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "child!", 6) == 0);
	SC_EQ(send(fd, "parent", 6, 0), 6);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "parent", 6) == 0);
	SC_EQ(write(go[1], "g", 1), 1);
	close(go[1]);
	close(done[0]);
	SC_EQ(child_wait(pid), 0);
	SC_EQ(send(fd, "again!", 6, 0), 6);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "again!", 6) == 0);
}

/* The parent is blocked in recv() when the child uses the connection and
 * exits: the parent's call returns what the peer sends back. */
static void fork_parent_blocked(void)
{
	int fd = sc_peer_open("ECHO\n");
	struct timeval tv = { 3, 0 };
	char in[16];
	pid_t pid;

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		usleep(100 * 1000); /* the parent blocks first */
		_exit(send(fd, "child!", 6, MSG_NOSIGNAL) == 6 ? 0 : 1);
	}
	SC_EQ(recv(fd, in, 6, MSG_WAITALL), 6);
	SC_TRUE(memcmp(in, "child!", 6) == 0);
	SC_EQ(child_wait(pid), 0);
	SC_EQ(send(fd, "parent", 6, 0), 6);
	sc_recv_exact(fd, in, 6, SC_WAIT_MS);
	SC_TRUE(memcmp(in, "parent", 6) == 0);
}

/*
 * The process that made the connection forks and exits at once (daemon
 * style, without closing it); its child, which never touched it before,
 * uses it afterwards.  The child reports on a pipe (it is not ours to
 * reap: the middle process is).
 */
static void fork_owner_exits(void)
{
	int res[2], rc = -1;
	char c = 'x';
	pid_t pid;

	SC_OK(pipe(res));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), gone[2];
		uint8_t out[300], in[300];

		close(res[0]);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sc.peer, sizeof(sc.peer)) != 0 ||
		    send(fd, "ECHO\n", 5, 0) != 5 || pipe(gone) != 0)
			_exit(2);
		sc_pattern_fill(out, sizeof(out), 0);
		if (send(fd, out, sizeof(out), 0) != (ssize_t)sizeof(out))
			_exit(3);
		if (fork() == 0) {
			char r = '0';

			/* EOF once the middle process has exited. */
			close(gone[1]);
			if (read(gone[0], &c, 1) != 0)
				r = '5';
			else if (!child_recv(fd, in, sizeof(in)) || memcmp(in, out, sizeof(in)) != 0)
				r = '6';
			else if (send(fd, "late", 4, MSG_NOSIGNAL) != 4 || !child_recv(fd, in, 4) ||
				 memcmp(in, "late", 4) != 0)
				r = '7';
			if (write(res[1], &r, 1) != 1)
				r = '8';
			_exit(0);
		}
		_exit(0);
	}
	close(res[1]);
	SC_EQ(child_wait(pid), 0);
	{
		struct pollfd p = { .fd = res[0], .events = POLLIN };

		if (poll(&p, 1, SC_WAIT_MS) == 1)
			rc = (int)read(res[0], &c, 1);
	}
	close(res[0]);
	SC_EQ(rc, 1);
	SC_EQ(c, '0');
}

/* A child of fork_listener_shutdown: blocks in accept() on the shared
 * listener (after telling @ready_fd it is about to), which the parent
 * shuts down: 0 when accept() says EINVAL. */
__attribute__((noreturn)) static void stop_waiter(int lfd, int ready_fd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	poll(&p, 1, 0); /* a server's event loop looks first */
	if (write(ready_fd, "r", 1) != 1)
		_exit(5);
	if (accept(lfd, NULL, NULL) >= 0)
		_exit(6);
	_exit(errno == EINVAL ? 0 : errno == EAGAIN ? 7 : 8);
}

/*
 * shutdown() of a listener shared across fork stops the socket itself,
 * in every process (Linux: one socket): a child blocked in accept() gets
 * EINVAL when the parent shuts it down, and the parent's accept() gets
 * EINVAL when a child does.  New connections are refused.
 */
static void fork_listener_shutdown(void)
{
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), ready[2], ctl, fd;
	struct timeval tv = { SC_WAIT_MS / 1000, 0 };
	pid_t pid;
	char c;

	SC_OK(setsockopt(lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	SC_OK(pipe(ready));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		close(ready[0]);
		stop_waiter(lfd, ready[1]);
	}
	close(ready[1]);
	SC_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	sc_sleep_ms(100); /* the child blocks in accept() */
	SC_EQ(shutdown(lfd, SHUT_RD), 0);
	SC_EQ(child_wait(pid), 0);
	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	sc_peer_connect_back_refused(port);

	/* Listening again (the port stayed ours), a child shuts it down
	 * while the parent blocks in accept(). */
	SC_EQ(listen(lfd, 8), 0);
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		usleep(200 * 1000);
		_exit(shutdown(lfd, SHUT_RDWR) == 0 ? 0 : 2);
	}
	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	SC_EQ(child_wait(pid), 0);
	sc_peer_connect_back_refused(port);
	/* Listening once more works, in the parent alone. */
	SC_EQ(listen(lfd, 8), 0);
	ctl = sc_peer_connect_back(port, 1);
	fd = sc_accept(lfd, SC_WAIT_MS, 0);
	sc_peer_connect_back_done(ctl, 1);
	SC_EQ(child_echo(fd, 100), 0);
}

/* A child of fork_listen_again: waits for @go, then finds its copy of
 * the listener listening (SO_ACCEPTCONN) and serves one connection on it
 * as a worker does. */
__attribute__((noreturn)) static void relisten_child(int lfd, int go, int ready)
{
	socklen_t len = sizeof(int);
	int on = 0;
	char c;

	if (read(go, &c, 1) != 1)
		_exit(8);
	if (getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || on != 1)
		_exit(9);
	worker(lfd, ready, 100);
}

/* Fork a relisten_child on @lfd; the parent's ends of its pipes. */
static pid_t relisten_fork(int lfd, int *go, int *ready)
{
	int g[2], r[2];
	pid_t pid;

	SC_OK(pipe(g));
	SC_OK(pipe(r));
	fflush(NULL);
	pid = (pid_t)SC_OK(fork());
	if (pid == 0) {
		close(g[1]);
		close(r[0]);
		relisten_child(lfd, g[0], r[1]);
	}
	close(g[0]);
	close(r[1]);
	*go = sc_track(g[1]);
	*ready = sc_track(r[0]);
	return pid;
}

/* The parent lets @pid's relisten_child go and it serves a connection. */
static void relisten_serve(pid_t pid, uint16_t port, int go, int ready)
{
	char c;
	int ctl;

	SC_EQ(write(go, "g", 1), 1);
	SC_EQ(read(ready, &c, 1), 1);
	ctl = sc_peer_connect_back(port, 1);
	SC_EQ(child_wait(pid), 0);
	sc_peer_connect_back_done(ctl, 1);
	sc_close(go);
	sc_close(ready);
}

/*
 * A listener shared across fork is one socket: listen() in one process
 * makes it listen in all.  Shut down and listened again by the parent,
 * the child's copy listens again and accepts; bound, forked, then
 * listened by the parent, likewise.
 */
static void fork_listen_again(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(sc_port(1)) };
	uint16_t port = sc_port(0);
	int lfd = sc_listen(port, 8, 0), bfd, go, ready, one = 1;
	pid_t pid;

	pid = relisten_fork(lfd, &go, &ready);
	SC_EQ(shutdown(lfd, SHUT_RD), 0);
	SC_ERR(accept(lfd, NULL, NULL), EINVAL);
	SC_EQ(listen(lfd, 8), 0);
	relisten_serve(pid, port, go, ready);

	bfd = sc_tcp_socket(0);
	SC_OK(setsockopt(bfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	SC_OK(bind(bfd, (struct sockaddr *)&a, sizeof(a)));
	pid = relisten_fork(bfd, &go, &ready);
	SC_EQ(listen(bfd, 8), 0);
	relisten_serve(pid, sc_port(1), go, ready);
}

const struct sc_case sc_cases_fork[] = {
	{ "fork_workers", fork_workers },
	{ "fork_handoff", fork_handoff },
	{ "fork_parent_leaves", fork_parent_leaves },
	{ "fork_child_idle", fork_child_idle },
	{ "fork_inherit_data", fork_inherit_data },
	{ "fork_child_closes", fork_child_closes },
	{ "fork_parent_blocked", fork_parent_blocked },
	{ "fork_owner_exits", fork_owner_exits },
	{ "fork_listener_shutdown", fork_listener_shutdown },
	{ "fork_listen_again", fork_listen_again },
	{ NULL, NULL },
};
