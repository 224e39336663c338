/* mc_load.c - a memcached load generator that checks every value it reads.
 *
 * C connections (non-blocking, one epoll loop, one request in flight per
 * connection) alternate `set KEY` with a fresh value and `get KEY`; every
 * get must return exactly the bytes of the last set of that key, byte for
 * byte (key, flags, length, data, END).  Values are pseudo-random bytes of
 * rotating sizes (CR and LF included: memcached data blocks are binary).
 * Keys are private to a connection, so the expected value is known without
 * any shared state.  Before the load, one connection stores a value under a
 * shared key; at the end every connection reads it back (cross-connection
 * check).
 *
 * Bounded: stops after --seconds or --ops (whichever first); fails when no
 * reply arrives for --stall seconds.  Prints one JSON line; exit 0 only when
 * at least one get was verified and there were no errors and no mismatches.
 *
 *   cc -O2 -o mc_load bench/mc_load.c
 *   mc_load --host 198.18.0.1 --port 11211 --conns 20 --seconds 5
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mix64.h"
#include "opts.h"

#define MAX_CONNS 1024
#define MAX_SIZES 16
#define SHARED_KEY "mcload:shared"

enum op { OP_NONE, OP_SET, OP_GET, OP_SHARED_SET, OP_SHARED_GET };

struct conn {
	int fd;
	int idx;
	enum op op;
	uint32_t key;            /* key index of the request in flight */
	uint32_t *ver;           /* version per key (0: never set) */
	char *out;               /* request bytes */
	size_t out_len, out_off;
	char *in;                /* reply bytes */
	size_t in_len, in_cap;
	uint64_t t_sent;         /* ns */
	uint64_t n;              /* requests completed */
	int done;               /* its final (shared) get answered */
};

static const char *host = "127.0.0.1";
static int port = 11211, nconns = 10, nkeys = 64, nsizes;
static double seconds = 5.0, stall = 10.0;
static uint64_t max_ops = 1000000;
static size_t sizes[MAX_SIZES];
static uint64_t seed = 1;

static uint64_t sets, gets, verified, errors, mismatches, bytes_checked, misses;
static uint64_t *lat;            /* ns per request */
static uint64_t nlat, lat_cap;
static char first_error[256];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void err(const char *fmt, ...)
{
	errors++;
	if (!first_error[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(first_error, sizeof first_error, fmt, ap);
		va_end(ap);
	}
}

/* The value of (conn, key, version): its size and bytes. */
static size_t value_size(int c, uint32_t k, uint32_t v)
{
	return sizes[mix64(seed ^ ((uint64_t)c << 40) ^ ((uint64_t)k << 20) ^ v) % (uint64_t)nsizes];
}

static void value_fill(char *dst, size_t len, int c, uint32_t k, uint32_t v)
{
	uint64_t s = mix64(seed * 31 + ((uint64_t)c << 42) + ((uint64_t)k << 21) + v) | 1;
	for (size_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		dst[i] = (char)(s >> 24);
	}
}

static void key_name(char *dst, size_t cap, int c, uint32_t k)
{
	snprintf(dst, cap, "mcload:%d:%u", c, k);
}

static size_t max_size(void)
{
	size_t m = 0;
	for (int i = 0; i < nsizes; i++)
		if (sizes[i] > m)
			m = sizes[i];
	return m;
}

static void request(struct conn *cn)
{
	char key[64];
	size_t len;
	if (cn->op == OP_SHARED_SET || cn->op == OP_SHARED_GET) {
		snprintf(key, sizeof key, "%s", SHARED_KEY);
		len = sizes[nsizes - 1];
	} else {
		key_name(key, sizeof key, cn->idx, cn->key);
		len = value_size(cn->idx, cn->key, cn->ver[cn->key]);
	}
	if (cn->op == OP_SET || cn->op == OP_SHARED_SET) {
		int h = sprintf(cn->out, "set %s 0 0 %zu\r\n", key, len);
		if (cn->op == OP_SET)
			value_fill(cn->out + h, len, cn->idx, cn->key, cn->ver[cn->key]);
		else
			value_fill(cn->out + h, len, -1, 0, 1);
		memcpy(cn->out + h + len, "\r\n", 2);
		cn->out_len = (size_t)h + len + 2;
	} else {
		cn->out_len = (size_t)sprintf(cn->out, "get %s\r\n", key);
	}
	cn->out_off = 0;
	cn->in_len = 0;
	cn->t_sent = now_ns();
}

/* Pick the next operation of a load connection. */
static void next_op(struct conn *cn)
{
	uint32_t k = (uint32_t)(cn->n / 2 % (uint64_t)nkeys);
	cn->key = k;
	if (cn->n % 2 == 0) {
		cn->op = OP_SET;
		cn->ver[k]++;
	} else {
		cn->op = OP_GET;
	}
	request(cn);
}

/* 1: reply complete and checked, 0: need more bytes, -1: broken */
static int reply_check(struct conn *cn)
{
	char *in = cn->in;
	size_t n = cn->in_len;
	if (cn->op == OP_SET || cn->op == OP_SHARED_SET) {
		char *eol = memmem(in, n, "\r\n", 2);
		if (!eol)
			return n > 512 ? (err("conn %d: set reply without CRLF", cn->idx), -1) : 0;
		if ((size_t)(eol - in) != 6 || memcmp(in, "STORED", 6) != 0) {
			err("conn %d: set reply '%.*s'", cn->idx, (int)(eol - in > 80 ? 80 : eol - in), in);
			return -1;
		}
		if ((size_t)(eol - in) + 2 != n) {
			err("conn %d: %zu extra bytes after STORED", cn->idx, n - (size_t)(eol - in) - 2);
			return -1;
		}
		sets++;
		return 1;
	}
	/* get */
	char key[64];
	size_t want;
	int c = cn->idx;
	uint32_t k = cn->key, v;
	if (cn->op == OP_SHARED_GET) {
		snprintf(key, sizeof key, "%s", SHARED_KEY);
		want = sizes[nsizes - 1];
		c = -1, k = 0, v = 1;
	} else {
		key_name(key, sizeof key, cn->idx, cn->key);
		v = cn->ver[cn->key];
		want = value_size(cn->idx, cn->key, v);
	}
	char *eol = memmem(in, n, "\r\n", 2);
	if (!eol)
		return n > 512 ? (err("conn %d: get reply without CRLF", cn->idx), -1) : 0;
	size_t hl = (size_t)(eol - in);
	if (hl == 3 && memcmp(in, "END", 3) == 0) {
		misses++;
		err("conn %d: get %s: miss (END only)", cn->idx, key);
		return -1;
	}
	char hdr[160];
	int hn = snprintf(hdr, sizeof hdr, "VALUE %s 0 %zu", key, want);
	if (hl != (size_t)hn || memcmp(in, hdr, hl) != 0) {
		err("conn %d: get header '%.*s', want '%s'", cn->idx, (int)(hl > 100 ? 100 : hl), in, hdr);
		return -1;
	}
	size_t total = hl + 2 + want + 7; /* data \r\nEND\r\n */
	if (n < total)
		return 0;
	if (n > total) {
		err("conn %d: %zu extra bytes after END", cn->idx, n - total);
		return -1;
	}
	char *data = in + hl + 2;
	if (memcmp(data + want, "\r\nEND\r\n", 7) != 0) {
		err("conn %d: get %s: bad trailer", cn->idx, key);
		return -1;
	}
	/* Compare with the expected bytes, regenerated into the out buffer's tail. */
	char *exp = cn->out + 256;
	value_fill(exp, want, c, k, v);
	if (memcmp(data, exp, want) != 0) {
		size_t i = 0;
		while (i < want && data[i] == exp[i])
			i++;
		mismatches++;
		err("conn %d: get %s: %zu-byte value differs at byte %zu", cn->idx, key, want, i);
		return -1;
	}
	gets++;
	verified++;
	bytes_checked += want;
	return 1;
}

static int conn_open(struct conn *cn, int ep)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "mc_load: bad host %s\n", host);
		exit(2);
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	/* Blocking connect (simple; the load is what is non-blocking). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		err("conn %d: connect: %s", cn->idx, strerror(errno));
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	cn->fd = fd;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u32 = (uint32_t)cn->idx};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
		err("conn %d: epoll_ctl: %s", cn->idx, strerror(errno));
		return -1;
	}
	return 0;
}

static void conn_events(struct conn *cn, int ep, int want_out)
{
	struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
				 .data.u32 = (uint32_t)cn->idx};
	epoll_ctl(ep, EPOLL_CTL_MOD, cn->fd, &ev);
}

static void lat_add(uint64_t ns)
{
	if (nlat < lat_cap)
		lat[nlat++] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(double p)
{
	if (!nlat)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(nlat - 1) + 0.5);
	return (double)lat[i] / 1000.0;
}

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: mc_load --host IP [--port P] [--conns C] [--keys K] [--seconds S]\n"
			"               [--ops N] [--sizes A,B,...] [--seed X] [--stall S]\n");
	exit(2);
}

/* BOPT_FN for --sizes A,B,...: 1 to MAX_SIZES value sizes, each 1 byte
 * to 1,000,000 (decimal, nothing else in the list). */
static int parse_sizes(const char *arg, void *dst)
{
	const char *p = arg;

	(void)dst;
	nsizes = 0;
	while (*p) {
		char *end;
		unsigned long long v;

		if (nsizes == MAX_SIZES || *p < '0' || *p > '9')
			return -1;
		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno || v < 1 || v > 1000000 || (*end && *end != ','))
			return -1;
		sizes[nsizes++] = (size_t)v;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return -1; /* a trailing comma */
	}
	return nsizes ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct bopt opts[] = {
		{ .name = "host", .kind = BOPT_STR, .dst = &host },
		{ .name = "port", .kind = BOPT_INT, .dst = &port, .min = 1, .max = 65535 },
		{ .name = "conns", .kind = BOPT_INT, .dst = &nconns, .min = 1, .max = MAX_CONNS },
		{ .name = "keys", .kind = BOPT_INT, .dst = &nkeys, .min = 1, .max = 100000000 },
		{ .name = "seconds", .kind = BOPT_SECONDS, .dst = &seconds, .dmax = 86400 },
		{ .name = "ops", .kind = BOPT_U64, .dst = &max_ops, .min = 1, .max = UINT64_MAX },
		{ .name = "sizes", .kind = BOPT_FN, .fn = parse_sizes },
		{ .name = "seed", .kind = BOPT_U64, .dst = &seed, .min = 0, .max = UINT64_MAX },
		{ .name = "stall", .kind = BOPT_SECONDS, .dst = &stall, .dmax = 3600 },
		{ 0 },
	};

	if (parse_sizes("16,100,1000,4000,16000,100000", NULL) != 0)
		usage();
	bopts_parse(argc, argv, 1, opts, usage);

	lat_cap = max_ops + 2u * (uint64_t)nconns + 8;
	if (lat_cap > 20000000)
		lat_cap = 20000000;
	lat = malloc(lat_cap * sizeof *lat);
	struct conn *cs = calloc((size_t)nconns, sizeof *cs);
	size_t buf = max_size() + 512;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (!lat || !cs || ep < 0) {
		perror("mc_load");
		return 2;
	}
	int opened = 0;
	for (int i = 0; i < nconns; i++) {
		cs[i].idx = i;
		cs[i].ver = calloc((size_t)nkeys, sizeof *cs[i].ver);
		cs[i].out = malloc(2 * buf);
		cs[i].in = malloc(buf);
		cs[i].in_cap = buf;
		cs[i].fd = -1;
		if (!cs[i].ver || !cs[i].out || !cs[i].in) {
			perror("mc_load");
			return 2;
		}
		if (conn_open(&cs[i], ep) == 0)
			opened++;
		else
			cs[i].done = 1;
	}
	/* Phase 0: connection 0 stores the shared value; then every connection
	 * runs the load; each ends by reading the shared value back. */
	int active = 0;
	if (opened == nconns) {
		cs[0].op = OP_SHARED_SET;
		request(&cs[0]);
		active = nconns;
	}
	uint64_t t0 = now_ns(), last_progress = t0, started = 0, completed = 0;
	uint64_t deadline = t0 + (uint64_t)(seconds * 1e9);
	struct epoll_event evs[256];
	while (active > 0 && !errors) {
		int ne = epoll_wait(ep, evs, 256, 200);
		uint64_t t = now_ns();
		if (ne < 0) {
			if (errno == EINTR)
				continue;
			err("epoll_wait: %s", strerror(errno));
			break;
		}
		if (t - last_progress > (uint64_t)(stall * 1e9)) {
			err("stall: no reply for %.1f s (%d connections busy)", stall, active);
			break;
		}
		for (int e = 0; e < ne && !errors; e++) {
			struct conn *cn = &cs[evs[e].data.u32];
			if (cn->done || cn->op == OP_NONE)
				continue;
			if (cn->out_off < cn->out_len && (evs[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
				ssize_t w = send(cn->fd, cn->out + cn->out_off, cn->out_len - cn->out_off,
						 MSG_NOSIGNAL);
				if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
					err("conn %d: send: %s", cn->idx, strerror(errno));
					break;
				}
				if (w > 0)
					cn->out_off += (size_t)w;
				if (cn->out_off == cn->out_len)
					conn_events(cn, ep, 0);
			}
			if (!(evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				continue;
			for (;;) {
				if (cn->in_len == cn->in_cap) {
					err("conn %d: reply longer than %zu bytes", cn->idx, cn->in_cap);
					break;
				}
				ssize_t r = recv(cn->fd, cn->in + cn->in_len, cn->in_cap - cn->in_len, 0);
				if (r == 0) {
					err("conn %d: server closed the connection", cn->idx);
					break;
				}
				if (r < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK)
						err("conn %d: recv: %s", cn->idx, strerror(errno));
					break;
				}
				cn->in_len += (size_t)r;
				if (cn->out_off < cn->out_len) {
					err("conn %d: reply before the request was sent", cn->idx);
					break;
				}
				int rc = reply_check(cn);
				if (rc < 0)
					break;
				if (rc == 0)
					continue;
				uint64_t tn = now_ns();
				lat_add(tn - cn->t_sent);
				last_progress = tn;
				completed++;
				if (cn->op == OP_SHARED_SET) {
					for (int i = 0; i < nconns; i++) {
						next_op(&cs[i]);
						conn_events(&cs[i], ep, 1);
						started++;
					}
				} else if (cn->op == OP_SHARED_GET) {
					cn->done = 1;
					active--;
				} else {
					cn->n++;
					if (tn < deadline && started < max_ops) {
						next_op(cn);
						started++;
					} else {
						cn->op = OP_SHARED_GET;
						request(cn);
					}
					conn_events(cn, ep, 1);
				}
				break;
			}
		}
	}
	uint64_t t1 = now_ns();
	double el = (double)(t1 - t0) / 1e9;
	qsort(lat, nlat, sizeof *lat, cmp_u64);
	printf("{\"conns\": %d, \"connected\": %d, \"ops\": %llu, \"sets\": %llu, \"gets\": %llu, "
	       "\"verified\": %llu, \"bytes_verified\": %llu, \"misses\": %llu, \"mismatches\": %llu, "
	       "\"errors\": %llu, \"seconds\": %.3f, \"ops_per_s\": %.1f, \"p50_us\": %.1f, "
	       "\"p99_us\": %.1f, \"max_us\": %.1f, \"first_error\": \"",
	       nconns, opened, (unsigned long long)completed, (unsigned long long)sets,
	       (unsigned long long)gets, (unsigned long long)verified,
	       (unsigned long long)bytes_checked, (unsigned long long)misses,
	       (unsigned long long)mismatches, (unsigned long long)errors, el,
	       el > 0 ? (double)completed / el : 0.0, pct(50), pct(99),
	       nlat ? (double)lat[nlat - 1] / 1000.0 : 0.0);
	for (const char *p = first_error; *p; p++)
		if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			putchar(*p);
	printf("\"}\n");
	for (int i = 0; i < nconns; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	return errors || mismatches || !verified || opened != nconns ? 1 : 0;
}
