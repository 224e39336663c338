/* sc_util.c - sockcheck's assertions, fd tracking and socket helpers. */
#include "sc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct sc_env sc;
volatile sig_atomic_t sc_sigpipe_count;

/* ---- failing ---------------------------------------------------------- */

void sc_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	const char *base = strrchr(file, '/');
	int n = snprintf(sc_run_msg, sizeof(sc_run_msg), "%s:%d: ",
			 base ? base + 1 : file, line);

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(sc_run_msg))
		vsnprintf(sc_run_msg + n, sizeof(sc_run_msg) - (size_t)n, fmt, ap);
	va_end(ap);
	siglongjmp(sc_run_jmp, 1);
}

const char *sc_errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "E?";
}

long sc_ok_(long r, const char *expr, const char *file, int line)
{
	if (r == -1) {
		int err = errno;

		sc_fail(file, line, "%s: -1 %s", expr, sc_errname(err));
	}
	return r;
}

void sc_err_(long r, int want_errno, const char *expr, const char *file, int line)
{
	int err = errno;

	if (r != -1)
		sc_fail(file, line, "%s: got %ld, want -1 %s", expr, r,
			sc_errname(want_errno));
	if (err != want_errno)
		sc_fail(file, line, "%s: got -1 %s, want -1 %s", expr, sc_errname(err),
			sc_errname(want_errno));
}

void sc_eq_(long long got, long long want, const char *expr, const char *file, int line)
{
	int err = errno;

	if (got == -1 && want != -1)
		sc_fail(file, line, "%s: got -1 %s, want %lld (0x%llx)", expr, sc_errname(err),
			want, (unsigned long long)want);
	if (got != want)
		sc_fail(file, line, "%s: got %lld (0x%llx), want %lld (0x%llx)", expr, got,
			(unsigned long long)got, want, (unsigned long long)want);
}

void sc_range_(double got, double lo, double hi, const char *expr, const char *file,
	       int line)
{
	if (!(got >= lo && got <= hi))
		sc_fail(file, line, "%s: got %.1f, want %.1f..%.1f", expr, got, lo, hi);
}

/* ---- fds ---------------------------------------------------------------- */

#define SC_TRACK_MAX 256
static int track[SC_TRACK_MAX];
static unsigned ntrack;

int sc_track(int fd)
{
	if (fd < 0)
		return fd;
	for (unsigned i = 0; i < ntrack; i++)
		if (track[i] == fd)
			return fd;
	if (ntrack == SC_TRACK_MAX)
		sc_fail(__FILE__, __LINE__, "more than %d fds in one case", SC_TRACK_MAX);
	track[ntrack++] = fd;
	return fd;
}

int sc_close(int fd)
{
	for (unsigned i = 0; i < ntrack; i++) {
		if (track[i] == fd) {
			track[i] = track[--ntrack];
			break;
		}
	}
	return close(fd);
}

void sc_untrack_all(void)
{
	while (ntrack)
		close(track[--ntrack]);
}

/* ---- time ----------------------------------------------------------------- */

double sc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sc_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* ---- sockets ---------------------------------------------------------------- */

int sc_tcp_socket(int flags)
{
	return sc_track((int)SC_OK(socket(AF_INET, SOCK_STREAM | flags, 0)));
}

int sc_peer_open(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int fd = sc_tcp_socket(0);

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	SC_OK(connect(fd, (const struct sockaddr *)&sc.peer, sizeof(sc.peer)));
	if (cmd[0])
		sc_send_all(fd, cmd, strlen(cmd));
	return fd;
}

void sc_line_read(int fd, char *line, size_t size, int ms)
{
	size_t n = 0;
	double deadline = sc_now_ms() + ms;

	/* One byte at a time: nothing after the line is consumed. */
	while (n + 1 < size) {
		char c;
		ssize_t r;
		int left = (int)(deadline - sc_now_ms());

		if (left < 0 || sc_poll1(fd, POLLIN, left) == 0)
			sc_fail(__FILE__, __LINE__, "no reply line from the peer within %d ms "
				"(got \"%.*s\")", ms, (int)n, line);
		r = recv(fd, &c, 1, 0);
		if (r == 0)
			sc_fail(__FILE__, __LINE__, "EOF from the peer before a reply line");
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			sc_fail(__FILE__, __LINE__, "reading the peer's reply: %s",
				sc_errname(errno));
		}
		if (c == '\n')
			break;
		line[n++] = c;
	}
	line[n] = '\0';
}

long sc_peer_wait(const char *tag, int ms, char *end, size_t end_size)
{
	char line[256];
	long bytes = -1;
	int fd = sc_peer_open("WAIT %s %d\n", tag, ms);

	sc_line_read(fd, line, sizeof(line), ms + SC_WAIT_MS);
	sc_close(fd);
	if (sscanf(line, "bytes %ld end ", &bytes) != 1 || !strstr(line, " end "))
		sc_fail(__FILE__, __LINE__, "bad WAIT reply \"%s\"", line);
	snprintf(end, end_size, "%s", strstr(line, " end ") + 5);
	return bytes;
}

const char *sc_tag(char *buf, size_t size, int k)
{
	snprintf(buf, size, "%s-%d-%d", sc.case_name, (int)getpid(), k);
	return buf;
}

void sc_peer_connect_back_done(int ctl, int n)
{
	char line[128], want[32];

	sc_line_read(ctl, line, sizeof(line), SC_WAIT_MS);
	snprintf(want, sizeof(want), "ok %d", n);
	if (strcmp(line, want) != 0)
		sc_fail(__FILE__, __LINE__, "the peer's connect-back: \"%s\", want \"%s\"",
			line, want);
	sc_close(ctl);
}

void sc_peer_connect_back_refused(uint16_t port)
{
	char line[128];
	int ctl = sc_peer_connect_back(port, 1);

	sc_line_read(ctl, line, sizeof(line), SC_WAIT_MS);
	if (strcmp(line, "err ECONNREFUSED 0") != 0)
		sc_fail(__FILE__, __LINE__, "connect-back to a stopped listener: \"%s\"", line);
	sc_close(ctl);
}

int sc_peer_connect_back(uint16_t port, int n)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &sc.server.sin_addr, ip, sizeof(ip));
	return sc_peer_open("CONNECT %s %u %d\n", ip, (unsigned)port, n);
}

uint16_t sc_port(unsigned k)
{
	return (uint16_t)(sc.base_port + 8 * sc.case_index + k);
}

int sc_listen(uint16_t port, int backlog, int type_flags)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = sc_tcp_socket(type_flags), one = 1;

	SC_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	SC_OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
	SC_OK(listen(fd, backlog));
	return fd;
}

int sc_accept(int lfd, int ms, int flags)
{
	if (!(sc_poll1(lfd, POLLIN, ms) & POLLIN))
		sc_fail(__FILE__, __LINE__, "no connection to accept within %d ms", ms);
	return sc_track((int)SC_OK(accept4(lfd, NULL, NULL, flags)));
}

void sc_send_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	double deadline = sc_now_ms() + SC_WAIT_MS;

	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			int left = (int)(deadline - sc_now_ms());

			if (left < 0)
				sc_fail(__FILE__, __LINE__, "send: no room for %zu bytes "
					"within %d ms", n, SC_WAIT_MS);
			sc_poll1(fd, POLLOUT, left);
			continue;
		}
		if (r <= 0)
			sc_fail(__FILE__, __LINE__, "send(%zu): %zd %s", n, r,
				r < 0 ? sc_errname(errno) : "");
		p += r;
		n -= (size_t)r;
	}
}

void sc_recv_exact(int fd, void *buf, size_t n, int ms)
{
	uint8_t *p = buf;
	size_t got = 0;
	double deadline = sc_now_ms() + ms;

	while (got < n) {
		int left = (int)(deadline - sc_now_ms());
		ssize_t r;

		if (left < 0 || sc_poll1(fd, POLLIN, left) == 0)
			sc_fail(__FILE__, __LINE__, "recv: %zu of %zu bytes within %d ms",
				got, n, ms);
		r = recv(fd, p + got, n - got, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r < 0)
			sc_fail(__FILE__, __LINE__, "recv after %zu of %zu bytes: -1 %s",
				got, n, sc_errname(errno));
		if (r == 0)
			sc_fail(__FILE__, __LINE__, "recv: EOF after %zu of %zu bytes",
				got, n);
		got += (size_t)r;
	}
}

void sc_recv_eof(int fd, int ms)
{
	char c;
	ssize_t r;

	if (sc_poll1(fd, POLLIN, ms) == 0)
		sc_fail(__FILE__, __LINE__, "no EOF within %d ms", ms);
	r = recv(fd, &c, 1, MSG_DONTWAIT);
	if (r != 0)
		sc_fail(__FILE__, __LINE__, "recv: got %zd %s, want 0 (EOF)", r,
			r < 0 ? sc_errname(errno) : "");
}

void sc_wait_bytes(int fd, size_t n, int ms)
{
	uint8_t buf[65536];
	double deadline = sc_now_ms() + ms;
	ssize_t r = 0;

	if (n > sizeof(buf))
		sc_fail(__FILE__, __LINE__, "sc_wait_bytes: %zu is too many", n);
	for (;;) {
		int left = (int)(deadline - sc_now_ms());

		r = recv(fd, buf, n, MSG_PEEK | MSG_DONTWAIT);
		if (r >= 0 && (size_t)r >= n)
			return;
		if (r == 0)
			sc_fail(__FILE__, __LINE__, "EOF while waiting for %zu bytes", n);
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			sc_fail(__FILE__, __LINE__, "recv(MSG_PEEK) while waiting for %zu "
				"bytes: %s", n, sc_errname(errno));
		if (left <= 0)
			break;
		sc_poll1(fd, POLLIN, left);
		sc_sleep_ms(2);   /* the rest may be on its way */
	}
	sc_fail(__FILE__, __LINE__, "%zd of %zu bytes readable within %d ms", r < 0 ? 0 : r,
		n, ms);
}

void sc_peer_ready(const char *tag)
{
	char end[32];
	double deadline = sc_now_ms() + SC_WAIT_MS;

	for (;;) {
		sc_peer_wait(tag, 0, end, sizeof(end));
		if (strcmp(end, "none") != 0)
			return;
		if (sc_now_ms() > deadline)
			sc_fail(__FILE__, __LINE__, "the peer did not start %s within %d ms",
				tag, SC_WAIT_MS);
		sc_sleep_ms(10);
	}
}

int sc_poll1(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	double deadline = sc_now_ms() + ms;

	for (;;) {
		int left = (int)(deadline - sc_now_ms());
		int r = poll(&p, 1, left < 0 ? 0 : left);

		if (r >= 0)
			return r ? p.revents : 0;
		if (errno != EINTR)
			sc_fail(__FILE__, __LINE__, "poll: %s", sc_errname(errno));
	}
}

int sc_poll_until(int fd, short events, short until, int ms)
{
	double deadline = sc_now_ms() + ms;
	int ev;

	for (;;) {
		int left = (int)(deadline - sc_now_ms());

		ev = sc_poll1(fd, events, left < 0 ? 0 : left);
		if ((ev & until) || left <= 0)
			return ev;
		if (ev)
			sc_sleep_ms(5);   /* ready for something else: do not spin */
	}
}

void sc_pattern_fill(uint8_t *buf, size_t n, size_t offset)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = sc_pattern_byte(offset + i);
}

void sc_pattern_check(const uint8_t *buf, size_t n, size_t offset)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i] != sc_pattern_byte(offset + i))
			sc_fail(__FILE__, __LINE__, "stream byte %zu: got 0x%02x, want 0x%02x",
				offset + i, buf[i], sc_pattern_byte(offset + i));
}

void sc_addr_check(const struct sockaddr_in *got, const struct sockaddr_in *want,
		   uint16_t port)
{
	char g[INET_ADDRSTRLEN], w[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &got->sin_addr, g, sizeof(g));
	inet_ntop(AF_INET, &want->sin_addr, w, sizeof(w));
	if (got->sin_family != AF_INET || got->sin_addr.s_addr != want->sin_addr.s_addr ||
	    (port && got->sin_port != htons(port)))
		sc_fail(__FILE__, __LINE__, "address: got family %d %s:%u, want %s:%u",
			got->sin_family, g, ntohs(got->sin_port), w, (unsigned)port);
}
