/* sockscript: executes socket calls read from stdin, one per line, and
 * prints one result line per call on stdout.  It is the "application" side
 * of the wire-level conformance suite (tests/conformance/runner.py): run
 * plain on Linux it exercises the kernel's TCP, run under `slipstream run`
 * the same calls go through the preload shim and the POSIX layer.
 *
 * Input lines (NAME is a socket name given by an earlier NAME=... call;
 * numbers are decimal):
 *   NAME=socket [nonblock]
 *   NAME=accept LNAME
 *   setsockopt NAME OPT VALUE   OPT: SO_REUSEADDR SO_KEEPALIVE SO_RCVBUF
 *                               SO_SNDBUF TCP_NODELAY TCP_MAXSEG TCP_CORK
 *                               SO_LINGER (VALUE "on,secs" or "off")
 *   getsockopt NAME OPT         OPT as above, or SO_ERROR
 *   nonblock NAME 0|1           fcntl O_NONBLOCK
 *   bind NAME ADDR PORT
 *   listen NAME BACKLOG
 *   connect NAME ADDR PORT
 *   write NAME BYTES            writes BYTES bytes of a fixed pattern
 *   read NAME BYTES             one read() of at most BYTES bytes
 *   fionread NAME               ioctl FIONREAD
 *   shutdown NAME rd|wr|rdwr
 *   close NAME
 *   tcpstate NAME               TCP_INFO tcpi_state, printed by name
 *   poll NAME in|out|inout TIMEOUT_MS
 *   sleep MS
 * Output, one line per input line:
 *   ret=R errno=E [val=V]
 * R is the call's return value (for socket and accept: "fd" when it is a
 * descriptor, since descriptor numbers differ between stacks), E the errno
 * name when R is -1 (else "-"), V what the call read (an option value, a
 * state name, revents).  A line the program cannot parse gives
 * "ret=bad errno=- val=REASON".  The program exits at end of input.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_NAMES 32
#define MAX_IO (1 << 20)

struct named {
	char name[16];
	int fd;
};

static struct named names[MAX_NAMES];
static int n_names;
static char iobuf[MAX_IO];

static const char *errno_name(int e)
{
	switch (e) {
	case EAGAIN: return "EAGAIN";
	case EINPROGRESS: return "EINPROGRESS";
	case EALREADY: return "EALREADY";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ECONNRESET: return "ECONNRESET";
	case ECONNABORTED: return "ECONNABORTED";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EPIPE: return "EPIPE";
	case ENOTCONN: return "ENOTCONN";
	case EISCONN: return "EISCONN";
	case EBADF: return "EBADF";
	case EINVAL: return "EINVAL";
	case EADDRINUSE: return "EADDRINUSE";
	case ENOPROTOOPT: return "ENOPROTOOPT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENETUNREACH: return "ENETUNREACH";
	case EINTR: return "EINTR";
	case 0: return "0";
	default: return NULL;
	}
}

static void print_errno(int e, char *out, size_t n)
{
	const char *s = errno_name(e);
	if (s)
		snprintf(out, n, "%s", s);
	else
		snprintf(out, n, "E%d", e);
}

static const char *state_name(unsigned s)
{
	static const char *const t[] = {
		"?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
		"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING",
	};
	return s < sizeof(t) / sizeof(t[0]) ? t[s] : "?";
}

static int name_fd(const char *name)
{
	for (int i = 0; i < n_names; i++)
		if (strcmp(names[i].name, name) == 0)
			return names[i].fd;
	return -2;
}

static int name_set(const char *name, int fd)
{
	for (int i = 0; i < n_names; i++)
		if (strcmp(names[i].name, name) == 0) {
			names[i].fd = fd;
			return 0;
		}
	if (n_names == MAX_NAMES || strlen(name) >= sizeof(names[0].name))
		return -1;
	snprintf(names[n_names].name, sizeof(names[0].name), "%s", name);
	names[n_names++].fd = fd;
	return 0;
}

struct opt {
	const char *name;
	int level, opt;
};

static const struct opt opts[] = {
	{"SO_REUSEADDR", SOL_SOCKET, SO_REUSEADDR},
	{"SO_KEEPALIVE", SOL_SOCKET, SO_KEEPALIVE},
	{"SO_RCVBUF", SOL_SOCKET, SO_RCVBUF},
	{"SO_SNDBUF", SOL_SOCKET, SO_SNDBUF},
	{"SO_ERROR", SOL_SOCKET, SO_ERROR},
	{"SO_LINGER", SOL_SOCKET, SO_LINGER},
	{"TCP_NODELAY", IPPROTO_TCP, TCP_NODELAY},
	{"TCP_MAXSEG", IPPROTO_TCP, TCP_MAXSEG},
	{"TCP_CORK", IPPROTO_TCP, TCP_CORK},
};

static const struct opt *opt_find(const char *name)
{
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strcmp(opts[i].name, name) == 0)
			return &opts[i];
	return NULL;
}

static int addr_parse(const char *ip, const char *port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)atoi(port));
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Executes one line; fills ret (text), err and val. */
static void execute(char *line, char *ret, size_t rn, int *err, char *val, size_t vn)
{
	char *tok[8];
	int nt = 0;
	char *assign = NULL;
	long r = 0;

	*err = 0;
	val[0] = 0;
	for (char *p = strtok(line, " \t\r\n"); p && nt < 8; p = strtok(NULL, " \t\r\n"))
		tok[nt++] = p;
	if (nt == 0) {
		snprintf(ret, rn, "bad");
		snprintf(val, vn, "empty");
		return;
	}
	char *eq = strchr(tok[0], '=');
	if (eq) {
		*eq = 0;
		assign = tok[0];
		tok[0] = eq + 1;
	}
	const char *cmd = tok[0];
	int fd = nt > 1 ? name_fd(tok[1]) : -2;
	int is_fd_call = 0;

#define NEED(n) do { if (nt < (n)) { snprintf(ret, rn, "bad"); \
	snprintf(val, vn, "arguments"); return; } } while (0)
#define NEEDFD() do { if (fd == -2) { snprintf(ret, rn, "bad"); \
	snprintf(val, vn, "unknown-name"); return; } } while (0)

	errno = 0;
	if (strcmp(cmd, "socket") == 0) {
		int type = SOCK_STREAM;
		if (nt > 1 && strcmp(tok[1], "nonblock") == 0)
			type |= SOCK_NONBLOCK;
		r = socket(AF_INET, type, 0);
		is_fd_call = 1;
	} else if (strcmp(cmd, "accept") == 0) {
		NEED(2);
		NEEDFD();
		r = accept(fd, NULL, NULL);
		is_fd_call = 1;
	} else if (strcmp(cmd, "setsockopt") == 0 || strcmp(cmd, "getsockopt") == 0) {
		NEED(3);
		NEEDFD();
		const struct opt *o = opt_find(tok[2]);
		if (!o) {
			snprintf(ret, rn, "bad");
			snprintf(val, vn, "option");
			return;
		}
		if (cmd[0] == 's') {
			NEED(4);
			if (o->opt == SO_LINGER && o->level == SOL_SOCKET) {
				struct linger l = {0, 0};
				if (strncmp(tok[3], "on,", 3) == 0) {
					l.l_onoff = 1;
					l.l_linger = atoi(tok[3] + 3);
				}
				r = setsockopt(fd, o->level, o->opt, &l, sizeof(l));
			} else {
				int v = atoi(tok[3]);
				r = setsockopt(fd, o->level, o->opt, &v, sizeof(v));
			}
		} else if (o->opt == SO_LINGER && o->level == SOL_SOCKET) {
			struct linger l;
			socklen_t len = sizeof(l);
			r = getsockopt(fd, o->level, o->opt, &l, &len);
			if (r == 0)
				snprintf(val, vn, l.l_onoff ? "on,%d" : "off", l.l_linger);
		} else {
			int v = 0;
			socklen_t len = sizeof(v);
			r = getsockopt(fd, o->level, o->opt, &v, &len);
			if (r == 0) {
				if (o->opt == SO_ERROR && o->level == SOL_SOCKET)
					print_errno(v, val, vn);
				else
					snprintf(val, vn, "%d", v);
			}
		}
	} else if (strcmp(cmd, "nonblock") == 0) {
		NEED(3);
		NEEDFD();
		int fl = fcntl(fd, F_GETFL);
		r = fl < 0 ? -1 : fcntl(fd, F_SETFL, atoi(tok[2]) ? fl | O_NONBLOCK
						     : fl & ~O_NONBLOCK);
	} else if (strcmp(cmd, "bind") == 0 || strcmp(cmd, "connect") == 0) {
		NEED(4);
		NEEDFD();
		struct sockaddr_in sa;
		if (addr_parse(tok[2], tok[3], &sa) != 0) {
			snprintf(ret, rn, "bad");
			snprintf(val, vn, "address");
			return;
		}
		r = cmd[0] == 'b' ? bind(fd, (struct sockaddr *)&sa, sizeof(sa))
				  : connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	} else if (strcmp(cmd, "listen") == 0) {
		NEED(3);
		NEEDFD();
		r = listen(fd, atoi(tok[2]));
	} else if (strcmp(cmd, "write") == 0) {
		NEED(3);
		NEEDFD();
		long n = atol(tok[2]);
		if (n < 0 || n > MAX_IO)
			n = MAX_IO;
		for (long i = 0; i < n; i++)
			iobuf[i] = (char)('a' + i % 26);
		r = write(fd, iobuf, (size_t)n);
	} else if (strcmp(cmd, "read") == 0) {
		NEED(3);
		NEEDFD();
		long n = atol(tok[2]);
		if (n < 0 || n > MAX_IO)
			n = MAX_IO;
		r = read(fd, iobuf, (size_t)n);
	} else if (strcmp(cmd, "fionread") == 0) {
		NEED(2);
		NEEDFD();
		int v = 0;
		r = ioctl(fd, FIONREAD, &v);
		if (r == 0)
			snprintf(val, vn, "%d", v);
	} else if (strcmp(cmd, "shutdown") == 0) {
		NEED(3);
		NEEDFD();
		int how = strcmp(tok[2], "rd") == 0 ? SHUT_RD :
			  strcmp(tok[2], "wr") == 0 ? SHUT_WR : SHUT_RDWR;
		r = shutdown(fd, how);
	} else if (strcmp(cmd, "close") == 0) {
		NEED(2);
		NEEDFD();
		r = close(fd);
	} else if (strcmp(cmd, "tcpstate") == 0) {
		NEED(2);
		NEEDFD();
		struct tcp_info ti;
		socklen_t len = sizeof(ti);
		memset(&ti, 0, sizeof(ti));
		r = getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
		if (r == 0)
			snprintf(val, vn, "%s", state_name(ti.tcpi_state));
	} else if (strcmp(cmd, "poll") == 0) {
		NEED(4);
		NEEDFD();
		struct pollfd p = {fd, 0, 0};
		if (strchr(tok[2], 'i'))
			p.events |= POLLIN;
		if (strstr(tok[2], "out"))
			p.events |= POLLOUT;
		r = poll(&p, 1, atoi(tok[3]));
		if (r >= 0)
			snprintf(val, vn, "%s%s%s%s%s", p.revents & POLLIN ? "IN" : "",
				 p.revents & POLLOUT ? "OUT" : "", p.revents & POLLERR ? "ERR" : "",
				 p.revents & POLLHUP ? "HUP" : "", p.revents == 0 ? "none" : "");
	} else if (strcmp(cmd, "sleep") == 0) {
		NEED(2);
		sleep_ms(atol(tok[1]));
		r = 0;
	} else {
		snprintf(ret, rn, "bad");
		snprintf(val, vn, "command");
		return;
	}
	*err = r < 0 ? errno : 0;
	if (is_fd_call && r >= 0) {
		snprintf(ret, rn, "fd");
		if (assign && name_set(assign, (int)r) != 0)
			snprintf(val, vn, "too-many-names");
	} else {
		snprintf(ret, rn, "%ld", r);
	}
}

int main(void)
{
	char line[512], ret[32], val[64], errs[32];
	int err;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		execute(line, ret, sizeof(ret), &err, val, sizeof(val));
		if (err)
			print_errno(err, errs, sizeof(errs));
		else
			snprintf(errs, sizeof(errs), "-");
		printf("ret=%s errno=%s%s%s\n", ret, errs, val[0] ? " val=" : "", val);
		fflush(stdout);
	}
	return 0;
}
