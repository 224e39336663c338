/* sc.h - sockcheck's case table, assertion macros and socket helpers. */
#ifndef SS_SEMANTICS_SC_H
#define SS_SEMANTICS_SC_H

/*
 * sockcheck runs named cases against whatever implements the sockets API
 * in its process: the Linux kernel when run plain, the Slipstream POSIX
 * layer under `slipstream run`.  Linux is the oracle: every expectation
 * here is what Linux does, checked exactly (return value and errno).
 *
 * A case is a void function.  Any failed check records "file:line: what"
 * and jumps back to the runner (siglongjmp), so a case stops at its first
 * failure; helpers may fail the same way.  Every socket a case opens goes
 * through sc_track() (the helpers do it) so the runner can close what a
 * failed case left open; a case that closes a tracked fd itself uses
 * sc_close().  Every wait is bounded; the runner also arms alarm() per case.
 *
 * The partner is sockpeer (peer.c) on plain Linux; see the protocol there.
 */

#include <errno.h>
#include <setjmp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define SC_WAIT_MS 3000          /* default bound on any wait for the peer */

struct sc_case {
	const char *name;
	void (*fn)(void);
};

/* The case tables, one per area, each ending with {NULL, NULL}. */
extern const struct sc_case sc_cases_connect[];
extern const struct sc_case sc_cases_data[];
extern const struct sc_case sc_cases_close[];
extern const struct sc_case sc_cases_server[];
extern const struct sc_case sc_cases_opts[];
extern const struct sc_case sc_cases_epoll[];
extern const struct sc_case sc_cases_poll[];
extern const struct sc_case sc_cases_proc[];
extern const struct sc_case sc_cases_fork[];
extern const struct sc_case sc_cases_fork_data[];
extern const struct sc_case sc_cases_splice[];
extern const struct sc_case sc_cases_threads[];

/* Where the case runs. */
struct sc_env {
	struct sockaddr_in server;   /* our own address, as the peer sees it (port 0) */
	struct sockaddr_in peer;     /* sockpeer's listener */
	struct sockaddr_in refused;  /* a port on the peer host nobody listens on */
	struct sockaddr_in blackhole; /* an address nobody answers (no ARP reply) */
	uint16_t base_port;          /* our listeners use base_port + 8 * case + k */
	unsigned case_index;
	const char *case_name;
};
extern struct sc_env sc;

/* Counted by the runner's SIGPIPE handler; cases reset it before use. */
extern volatile sig_atomic_t sc_sigpipe_count;

/* The runner's: where sc_fail() jumps, and the failure message it leaves. */
extern sigjmp_buf sc_run_jmp;
extern char sc_run_msg[512];

/* ---- failing ---------------------------------------------------------- */

__attribute__((noreturn, format(printf, 3, 4)))
void sc_fail(const char *file, int line, const char *fmt, ...);

long sc_ok_(long r, const char *expr, const char *file, int line);
void sc_err_(long r, int want_errno, const char *expr, const char *file, int line);
void sc_eq_(long long got, long long want, const char *expr, const char *file, int line);
void sc_range_(double got, double lo, double hi, const char *expr, const char *file,
	       int line);

/* Fail unless cond. */
#define SC_TRUE(cond)                                                     \
	do {                                                              \
		if (!(cond))                                              \
			sc_fail(__FILE__, __LINE__, "%s", #cond);        \
	} while (0)
/* The call must not return -1; evaluates to its result. */
#define SC_OK(e) sc_ok_((long)(e), #e, __FILE__, __LINE__)
/* The call must return -1 with errno == err. */
#define SC_ERR(e, err) sc_err_((long)(e), (err), #e, __FILE__, __LINE__)
/* Integer equality, both values shown on failure. */
#define SC_EQ(a, b) sc_eq_((long long)(a), (long long)(b), #a, __FILE__, __LINE__)
/* lo <= v <= hi (timings, in ms). */
#define SC_RANGE(v, lo, hi) sc_range_((double)(v), (lo), (hi), #v, __FILE__, __LINE__)

/* errno's name ("EAGAIN"), for messages. */
const char *sc_errname(int err);

/* ---- fds ---------------------------------------------------------------- */

/* Remember fd (>= 0) so the runner closes it if the case does not; returns fd. */
int sc_track(int fd);
/* Forget and close a tracked fd; returns close()'s result (errno kept). */
int sc_close(int fd);
/* Close everything still tracked (runner, after each case). */
void sc_untrack_all(void);

/* ---- time ----------------------------------------------------------------- */

double sc_now_ms(void);
void sc_sleep_ms(int ms);

/* ---- sockets ---------------------------------------------------------------- */

/* socket(AF_INET, SOCK_STREAM | flags, 0), tracked. */
int sc_tcp_socket(int flags);
/* A blocking TCP connection to sockpeer that has been sent the command
 * line(s) fmt (each command ends with '\n'); tracked. */
__attribute__((format(printf, 1, 2)))
int sc_peer_open(const char *fmt, ...);
/* One line of reply from fd (without '\n'), within ms; fails on EOF/timeout. */
void sc_line_read(int fd, char *line, size_t size, int ms);
/* Ask sockpeer "WAIT tag ms": how the connection tagged tag ended.  *end is
 * "eof", "reset", "open" (still open after ms), "none" (never seen) or
 * "err-NAME"; returns the bytes it received. */
long sc_peer_wait(const char *tag, int ms, char *end, size_t end_size);
/* A tag unique to this run and case: "<case>-<pid>-<k>". */
const char *sc_tag(char *buf, size_t size, int k);
/* Ask the peer to connect to us (server ip, port) n times: returns the
 * control fd; read its reply ("ok n" or "err NAME k") with sc_line_read
 * after accepting. */
int sc_peer_connect_back(uint16_t port, int n);
/* Read the connect-back's reply on @ctl and fail unless it is "ok n";
 * closes @ctl. */
void sc_peer_connect_back_done(int ctl, int n);
/* Ask the peer to connect to @port once and fail unless it is refused
 * (ECONNREFUSED: nothing listens there any more). */
void sc_peer_connect_back_refused(uint16_t port);

/* Listener on 0.0.0.0:port (SO_REUSEADDR), tracked. */
int sc_listen(uint16_t port, int backlog, int type_flags);
/* This case's k-th port (k < 8). */
uint16_t sc_port(unsigned k);
/* accept() with a bound: poll for POLLIN up to ms first; tracked. */
int sc_accept(int lfd, int ms, int flags);

/* The whole buffer, or fail. */
void sc_send_all(int fd, const void *buf, size_t n);
/* Exactly n bytes within ms (polls between reads), or fail. */
void sc_recv_exact(int fd, void *buf, size_t n, int ms);
/* Fail unless recv/read gives 0 (EOF) within ms. */
void sc_recv_eof(int fd, int ms);
/* Wait until n bytes are readable on fd (they may arrive in pieces): polls
 * and peeks (MSG_PEEK | MSG_DONTWAIT), consumes nothing; fails after ms. */
void sc_wait_bytes(int fd, size_t n, int ms);
/* Wait until sockpeer has carried out the commands up to the one that
 * created tag (SINK/HOLD/FIN): the connection is in its final mode. */
void sc_peer_ready(const char *tag);
/* poll() one fd for events within ms; returns revents (0 on timeout). */
int sc_poll1(int fd, short events, int ms);
/* poll() one fd for events until revents has any of the bits in until (or
 * ms passed); returns the last revents. */
int sc_poll_until(int fd, short events, short until, int ms);

/* The peer's data: byte i of a connection's stream is sc_pattern_byte(i). */
static inline uint8_t sc_pattern_byte(size_t i)
{
	return (uint8_t)(i % 251);
}
void sc_pattern_fill(uint8_t *buf, size_t n, size_t offset);
/* Fail unless buf holds the pattern from offset on. */
void sc_pattern_check(const uint8_t *buf, size_t n, size_t offset);

/* sockaddr_in equality of address and, if port != 0, port. */
void sc_addr_check(const struct sockaddr_in *got, const struct sockaddr_in *want,
		   uint16_t port);

#endif /* SS_SEMANTICS_SC_H */
