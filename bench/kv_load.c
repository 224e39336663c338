/* kv_load.c - kv_load: the key-value store benchmark's memcached client, checking every value. */
#include <errno.h>
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "opts.h"
#include "util.h"

#include "mix64.h"

/*
 * memcached text protocol over C non-blocking connections in one epoll
 * loop (one thread).  The workload of the suite's key-value benchmark:
 *
 *   --keys N (100,000) keys of exactly 32 bytes ("kvbench:" and the key
 *   index in 24 digits), values of exactly 64 bytes, a function of the key
 *   index and --seed alone (binary: CR and LF occur), so any client knows
 *   what every key holds and every GET hit is compared byte for byte, the
 *   whole reply ("VALUE key 0 64\r\n" data "\r\nEND\r\n") at once.
 *
 *   Preload: every key SET once (STORED checked), pipelined: connection c
 *   stores keys c, c+C, c+2C, ... with up to 64 SETs in flight.
 *
 *   Then --get-ratio (0.9) GETs, the rest SETs of the same fixed value, key
 *   popularity Zipf(--zipf, 0.9) over the N keys: key index = popularity
 *   rank (key 0 the hottest), drawn from a precomputed CDF table by binary
 *   search with a xorshift64* generator seeded by --seed: the sequence of
 *   (operation, key) draws is the same in every run.
 *
 * Closed loop (default): one request in flight per connection, the next
 * sent when the reply is in; latency from the send.  Open loop (--rate R):
 * requests are due at fixed times t0 + i/R (aggregate over all
 * connections, assigned round-robin, pipelined when replies are late), each
 * sent at its due time or as soon after as the client gets to it, and its
 * latency counted from the due time, so a server that falls behind shows
 * its queueing in the latency instead of slowing the offered load down
 * (no coordinated omission).
 *
 * Phases: connect (--connect-seconds), preload, --warmup s, then --seconds
 * measured (or until --ops requests were sent in it).  A request counts if
 * it was sent (closed) or due (open) inside the measured window; after it
 * the client stops sending and waits for every reply still owed (each is
 * checked, and the measured ones counted, at their full latency).
 * --phases prints "phase measure" / "phase end" on stderr when the window
 * starts and ends.
 *
 * --spin: from the warm-up on, poll (epoll with a zero timeout) instead of
 * blocking until the next due time or reply.  The client then takes its
 * whole CPU, and in exchange is neither late by a timer wake-up of its own
 * (halted) CPU nor slow to see a reply: what the latency shows is the
 * server's side and the path to it.
 *
 * Any GET miss ("END" alone), wrong value, reply other than the expected
 * one (SERVER_ERROR, ERROR, ...), closed connection, or a stall (replies
 * owed and none for --stall s) is an error: the client stops, reports the
 * first in "error" and exits 1.  Output: one JSON line:
 *   {"mode","conns","keys","rate_target","seconds","requests","rps","gets",
 *    "sets","hits","misses","mismatches","bad_replies","preload_s",
 *    "p50_us","p90_us","p99_us","max_us","late_max_us","late_p50_us",
 *    "late_p99_us","rtt_p50_us","rtt_p99_us","connected","error":null|"..."}
 * Latency: log-linear histogram (util.h, under 6.25 % error), max exact.
 * Open loop also splits each measured request's latency into its parts:
 * the client's own lateness in sending it (late_*: sent - due) and the
 * round trip from the send (rtt_*: reply - sent); in closed loop both
 * are 0 and the latency is the round trip.
 *
 * --print-cdf and --sample N print the Zipf table's values and the
 * generator's draws (for tests) and exit.
 */

#define KEY_LEN 32
#define VAL_LEN 64
#define KEY_PREFIX "kvbench:"
#define GET_REQ_LEN (4 + KEY_LEN + 2)                   /* get KEY\r\n */
#define SET_HDR_LEN (4 + KEY_LEN + 9)                   /* set KEY 0 0 64\r\n */
#define SET_REQ_LEN (SET_HDR_LEN + VAL_LEN + 2)
#define GET_HDR_LEN (6 + KEY_LEN + 7)                   /* VALUE KEY 0 64\r\n */
#define GET_REPLY_LEN (GET_HDR_LEN + VAL_LEN + 2 + 5)   /* ... data\r\nEND\r\n */
#define STORED "STORED\r\n"
#define STORED_LEN 8
#define MISS "END\r\n"
#define MISS_LEN 5
#define PRELOAD_WINDOW 64
#define PEND_CAP 4096           /* requests in flight per connection (power of 2) */
#define IN_CAP 65536
#define EV_BATCH 256

enum op { OP_GET, OP_SET };

struct pend {
	uint64_t t;             /* ns: sent (closed loop) or due (open loop) */
	uint64_t sent;          /* ns: when it was written to the socket */
	uint32_t key;
	uint8_t op;
	uint8_t measured;       /* inside the measured window */
};

struct kv_conn {
	int fd;
	uint32_t idx;
	int connected;
	int want_out;
	char *out;              /* bytes to send */
	size_t out_len, out_off, out_cap;
	char in[IN_CAP];
	size_t in_len;
	struct pend pend[PEND_CAP];
	uint32_t p_head, p_tail;        /* in flight: [head, tail) */
	uint32_t next_preload;          /* next key this connection preloads */
};

static volatile sig_atomic_t stop;
static uint64_t hist[LAT_BUCKETS];
/* Open loop: the client's own lateness (sent - due) and the round trip
 * from the send (reply - sent); latency from due is about their sum. */
static uint64_t hist_late[LAT_BUCKETS], hist_rtt[LAT_BUCKETS];

static uint32_t nkeys = 100000;
static double zipf_s = 0.9, get_ratio = 0.9;
static uint64_t seed = 1;
static char *keys;              /* nkeys * KEY_LEN */
static char *vals;              /* nkeys * VAL_LEN */
static double *cdf;             /* cdf[i]: P(key <= i) */
static uint64_t rng;

static uint64_t gets, sets, hits, misses, mismatches, bad_replies, measured, lat_max;
static uint64_t preloaded, all_ops;
static char errbuf[256];
static int failed;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (failed)
		return;
	failed = 1;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
}

/* xorshift64*: the next 64 random bits. */
static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

/* Uniform in [0, 1). */
static double rnd_unit(void)
{
	return (double)(rnd() >> 11) * 0x1.0p-53;
}

static int zipf_init(uint32_t n, double s)
{
	double sum = 0;

	cdf = malloc((size_t)n * sizeof(*cdf));
	if (!cdf)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		sum += pow((double)i + 1.0, -s);
		cdf[i] = sum;
	}
	for (uint32_t i = 0; i < n; i++)
		cdf[i] /= sum;
	cdf[n - 1] = 1.0;
	return 0;
}

/* The key of popularity rank r where u falls: the first i with cdf[i] > u. */
static uint32_t zipf_key(double u)
{
	uint32_t lo = 0, hi = nkeys - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void draw(enum op *op, uint32_t *key)
{
	*op = rnd_unit() < get_ratio ? OP_GET : OP_SET;
	*key = zipf_key(rnd_unit());
}

static int keys_init(void)
{
	keys = malloc((size_t)nkeys * KEY_LEN + 1);
	vals = malloc((size_t)nkeys * VAL_LEN);
	if (!keys || !vals)
		return -1;
	for (uint32_t k = 0; k < nkeys; k++) {
		uint64_t x = mix64(seed * 0x9e3779b97f4a7c15ull + k) | 1;

		/* 8 + 24 = 32 bytes; the NUL lands on the next key's first byte,
		 * rewritten by the next round (and the spare byte at the end). */
		snprintf(keys + (size_t)k * KEY_LEN, KEY_LEN + 1, KEY_PREFIX "%024u", k);
		for (int i = 0; i < VAL_LEN; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			vals[(size_t)k * VAL_LEN + i] = (char)(x >> 24);
		}
	}
	return 0;
}

static const char *key_of(uint32_t k)
{
	return keys + (size_t)k * KEY_LEN;
}

/* ---- output buffer */

static int out_room(struct kv_conn *c, size_t n)
{
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + n <= c->out_cap)
		return 0;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + n <= c->out_cap)
			return 0;
	}
	size_t cap = c->out_cap ? c->out_cap * 2 : 16384;

	while (cap < c->out_len + n)
		cap *= 2;
	char *p = realloc(c->out, cap);

	if (!p)
		return -1;
	c->out = p;
	c->out_cap = cap;
	return 0;
}

/* Queue one request (t: its send or due time; sent: now); 0 or an errno. */
static int req_queue(struct kv_conn *c, enum op op, uint32_t key, uint64_t t, uint64_t sent,
		     int in_window)
{
	struct pend *p;
	char *o;

	if (c->p_tail - c->p_head >= PEND_CAP)
		return ENOBUFS;
	if (out_room(c, SET_REQ_LEN) < 0)
		return ENOMEM;
	o = c->out + c->out_len;
	if (op == OP_GET) {
		memcpy(o, "get ", 4);
		memcpy(o + 4, key_of(key), KEY_LEN);
		memcpy(o + 4 + KEY_LEN, "\r\n", 2);
		c->out_len += GET_REQ_LEN;
	} else {
		memcpy(o, "set ", 4);
		memcpy(o + 4, key_of(key), KEY_LEN);
		memcpy(o + 4 + KEY_LEN, " 0 0 64\r\n", 9);
		memcpy(o + SET_HDR_LEN, vals + (size_t)key * VAL_LEN, VAL_LEN);
		memcpy(o + SET_HDR_LEN + VAL_LEN, "\r\n", 2);
		c->out_len += SET_REQ_LEN;
	}
	p = &c->pend[c->p_tail++ & (PEND_CAP - 1)];
	p->t = t;
	p->sent = sent;
	p->key = key;
	p->op = (uint8_t)op;
	p->measured = (uint8_t)in_window;
	return 0;
}

/* Send what is queued; 0 or an errno. */
static int out_flush(struct kv_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : errno;
		}
		c->out_off += (size_t)n;
	}
	return 0;
}

/* Watch EPOLLOUT exactly while bytes wait to be sent; 0 or an errno. */
static int watch(struct kv_conn *c, int ep)
{
	int want = c->out_off < c->out_len;
	struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c };

	if (want == c->want_out)
		return 0;
	c->want_out = want;
	return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? errno : 0;
}

/* A printable excerpt of a reply, for the error message. */
static const char *excerpt(const char *p, size_t n)
{
	static char buf[64];
	size_t j = 0;

	for (size_t i = 0; i < n && j < sizeof(buf) - 5; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch >= 0x20 && ch < 0x7f) {
			buf[j++] = (char)ch;
		} else {
			j += (size_t)snprintf(buf + j, sizeof(buf) - j, "\\x%02x", ch);
		}
	}
	buf[j] = 0;
	return buf;
}

/*
 * Check the reply of the oldest request in flight against what it must be.
 * Returns the bytes it took (0: not all in yet) or -1 (wrong: fail() said
 * why).
 */
static long reply_take(struct kv_conn *c, const struct pend *p)
{
	const char *in = c->in;
	size_t n = c->in_len;

	if (p->op == OP_SET) {
		if (n < STORED_LEN && !memchr(in, '\n', n))
			return 0;
		if (n >= STORED_LEN && !memcmp(in, STORED, STORED_LEN))
			return STORED_LEN;
		bad_replies++;
		fail("conn %u: SET of key %u answered \"%s\"", c->idx, p->key,
		     excerpt(in, n < 40 ? n : 40));
		return -1;
	}
	if (n < MISS_LEN)
		return 0;
	if (!memcmp(in, MISS, MISS_LEN)) {
		misses++;
		fail("conn %u: GET of key %u missed (END without VALUE)", c->idx, p->key);
		return -1;
	}
	if (memcmp(in, "VALUE ", n < 6 ? n : 6)) {
		/* Not a value: an error line (SERVER_ERROR, CLIENT_ERROR, ERROR). */
		if (!memchr(in, '\n', n) && n < 256)
			return 0;
		bad_replies++;
		fail("conn %u: GET of key %u answered \"%s\"", c->idx, p->key,
		     excerpt(in, n < 40 ? n : 40));
		return -1;
	}
	if (n < GET_REPLY_LEN)
		return 0;

	char want[GET_REPLY_LEN];
	char *w = want;

	memcpy(w, "VALUE ", 6);
	memcpy(w + 6, key_of(p->key), KEY_LEN);
	memcpy(w + 6 + KEY_LEN, " 0 64\r\n", 7);
	memcpy(w + GET_HDR_LEN, vals + (size_t)p->key * VAL_LEN, VAL_LEN);
	memcpy(w + GET_HDR_LEN + VAL_LEN, "\r\nEND\r\n", 7);
	if (memcmp(in, want, GET_REPLY_LEN)) {
		size_t at = 0;

		while (in[at] == want[at])
			at++;
		mismatches++;
		fail("conn %u: GET of key %u: wrong reply from byte %zu of %d (%s: got \"%s\")",
		     c->idx, p->key, at, GET_REPLY_LEN,
		     at < GET_HDR_LEN ? "header" : at < GET_HDR_LEN + VAL_LEN ? "value" : "trailer",
		     excerpt(in + at, GET_REPLY_LEN - at < 16 ? GET_REPLY_LEN - at : 16));
		return -1;
	}
	hits++;
	return GET_REPLY_LEN;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kv_load --connect IP:PORT [--conns C] [--rate R] [--seconds T]\n"
		"               [--warmup S] [--ops N] [--keys N] [--zipf S] [--get-ratio G]\n"
		"               [--seed X] [--stall S] [--connect-seconds S] [--phases] [--spin]\n"
		"       kv_load --print-cdf [--keys N] [--zipf S]\n"
		"       kv_load --sample N [--keys N] [--zipf S] [--get-ratio G] [--seed X]\n");
	exit(2);
}

/* --sample N: the generator's first N draws, summarised. */
static void sample(uint64_t n)
{
	uint64_t g = 0, top[4] = { 0 }, k0 = 0, k1 = 0;

	for (uint64_t i = 0; i < n; i++) {
		enum op op;
		uint32_t key;

		draw(&op, &key);
		g += op == OP_GET;
		k0 += key == 0;
		k1 += key == 1;
		for (int j = 0; j < 4; j++)
			top[j] += key < (uint32_t)(j == 0 ? 10 : j == 1 ? 100 : j == 2 ? 1000 : 10000);
	}
	printf("{\"draws\":%llu,\"gets\":%llu,\"key0\":%llu,\"key1\":%llu,\"below10\":%llu,"
	       "\"below100\":%llu,\"below1000\":%llu,\"below10000\":%llu}\n",
	       (unsigned long long)n, (unsigned long long)g, (unsigned long long)k0,
	       (unsigned long long)k1, (unsigned long long)top[0], (unsigned long long)top[1],
	       (unsigned long long)top[2], (unsigned long long)top[3]);
}

static uint64_t due_time(uint64_t t0, uint64_t i, double rate)
{
	return t0 + (uint64_t)((double)i * 1e9 / rate);
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct epoll_event evs[EV_BATCH];
	struct kv_conn *cs;
	uint64_t k = 16, seconds = 10, warmup = 1, max_ops = UINT64_MAX, connect_limit = 10;
	uint64_t stall_s = 5, nsample = 0;
	double rate = 0, stall_ns;
	int ep, error = 0, have_peer = 0, phases = 0, print_cdf = 0, spin = 0;
	uint64_t t_begin, t_preload = 0, t_run = 0, t_measure = 0, t_end = 0, t_last = 0;
	uint64_t opened = 0, issued = 0, late_max = 0, rr = 0;
	enum { CONNECTING, PRELOAD, WARMUP, MEASURE, DRAIN } state = CONNECTING;

	const struct bopt opts[] = {
		{ .name = "connect", .kind = BOPT_ADDR, .dst = &to, .seen = &have_peer },
		{ .name = "conns", .kind = BOPT_U64, .dst = &k, .min = 1, .max = 16384 },
		{ .name = "rate", .kind = BOPT_DOUBLE, .dst = &rate, .dmin = 1, .dmax = 1e8 },
		{ .name = "seconds", .kind = BOPT_U64, .dst = &seconds, .min = 1, .max = 86400 },
		{ .name = "warmup", .kind = BOPT_U64, .dst = &warmup, .min = 0, .max = 86400 },
		{ .name = "ops", .kind = BOPT_U64, .dst = &max_ops, .min = 1, .max = UINT64_MAX },
		{ .name = "keys", .kind = BOPT_U32, .dst = &nkeys, .min = 1, .max = 10000000 },
		{ .name = "zipf", .kind = BOPT_DOUBLE, .dst = &zipf_s, .dmin = 0, .dmax = 10 },
		{ .name = "get-ratio", .kind = BOPT_DOUBLE, .dst = &get_ratio, .dmin = 0, .dmax = 1 },
		{ .name = "seed", .kind = BOPT_U64, .dst = &seed, .min = 0, .max = UINT64_MAX },
		{ .name = "stall", .kind = BOPT_U64, .dst = &stall_s, .min = 1, .max = 3600 },
		{ .name = "connect-seconds", .kind = BOPT_U64, .dst = &connect_limit,
		  .min = 1, .max = 3600 },
		{ .name = "phases", .kind = BOPT_FLAG, .dst = &phases },
		{ .name = "spin", .kind = BOPT_FLAG, .dst = &spin },
		{ .name = "print-cdf", .kind = BOPT_FLAG, .dst = &print_cdf },
		{ .name = "sample", .kind = BOPT_U64, .dst = &nsample, .min = 1, .max = UINT64_MAX },
		{ 0 },
	};

	bopts_parse(argc, argv, 1, opts, usage);
	if (!have_peer && !print_cdf && !nsample)
		usage();
	rng = mix64(seed + 0x5851f42d4c957f2dull) | 1;
	if (zipf_init(nkeys, zipf_s) < 0) {
		perror("kv_load");
		return 1;
	}
	if (print_cdf) {
		printf("{\"keys\":%u,\"zipf\":%.17g,\"cdf0\":%.17g,\"cdf9\":%.17g,\"cdf99\":%.17g,"
		       "\"cdf_half\":%.17g}\n", nkeys, zipf_s, cdf[0], cdf[nkeys > 9 ? 9 : nkeys - 1],
		       cdf[nkeys > 99 ? 99 : nkeys - 1], cdf[(nkeys - 1) / 2]);
		return 0;
	}
	if (nsample) {
		sample(nsample);
		return 0;
	}
	if (keys_init() < 0) {
		perror("kv_load");
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);   /* open loop: wake on time */
	stall_ns = (double)stall_s * 1e9;

	cs = calloc(k, sizeof(*cs));
	ep = epoll_create1(0);
	if (!cs || ep < 0) {
		perror("kv_load");
		return 1;
	}
	for (uint32_t i = 0; i < k && !error; i++) {
		struct kv_conn *c = &cs[i];
		struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
		int one = 1;

		c->idx = i;
		c->want_out = 1;
		c->next_preload = i;
		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (c->fd < 0) {
			error = errno;
			break;
		}
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(c->fd, (const struct sockaddr *)&to, sizeof(to)) < 0 &&
		    errno != EINPROGRESS)
			error = errno;
		else if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
			error = errno;
	}
	t_begin = t_last = now_ns();
	if (error)
		fail("connect: %s", strerrorname_np(error));

	while (!stop && !failed) {
		uint64_t now = now_ns(), wake = now + 100000000ull;   /* 100 ms at most */
		struct timespec ts;
		int n;

		/* Time-driven steps. */
		if (state == CONNECTING && now - t_begin >= connect_limit * 1000000000ull) {
			fail("ETIMEDOUT");
			break;
		}
		if (state == WARMUP && now >= t_run + warmup * 1000000000ull) {
			state = MEASURE;
			t_measure = now;
			t_end = now + seconds * 1000000000ull;
			memset(hist, 0, sizeof(hist));
			memset(hist_late, 0, sizeof(hist_late));
			memset(hist_rtt, 0, sizeof(hist_rtt));
			measured = gets = sets = lat_max = 0;
			phase(phases, "measure");
		}
		if (state == MEASURE && (now >= t_end || measured >= max_ops)) {
			state = DRAIN;
			t_end = now;
			phase(phases, "end");
		}
		if (rate > 0 && (state == WARMUP || state == MEASURE)) {
			/* Open loop: every request due by now, round-robin. */
			for (;;) {
				uint64_t due = due_time(t_run, issued, rate);
				struct kv_conn *c = &cs[rr % k];
				enum op op;
				uint32_t key;
				int in_window = state == MEASURE && due >= t_measure;

				if (due > now) {
					if (due < wake)
						wake = due;
					break;
				}
				if (in_window && measured >= max_ops)
					break;
				if (c->p_tail - c->p_head >= PEND_CAP)
					break;  /* still due: sent later, late */
				draw(&op, &key);
				error = req_queue(c, op, key, due, now, in_window);
				if (!error)
					error = out_flush(c);
				if (!error)
					error = watch(c, ep);
				if (error)
					break;
				if (now - due > late_max)
					late_max = now - due;
				measured += in_window;
				issued++;
				rr++;
			}
			if (error) {
				fail("%s", strerrorname_np(error));
				break;
			}
		}
		if (state == DRAIN) {
			uint64_t owed = 0;

			for (uint32_t i = 0; i < k; i++)
				owed += cs[i].p_tail - cs[i].p_head;
			if (!owed)
				break;
		}
		{
			uint64_t owed_any = 0;

			for (uint32_t i = 0; i < k && !owed_any; i++)
				owed_any = cs[i].p_tail - cs[i].p_head;
			if (owed_any && (double)(now - t_last) > stall_ns) {
				fail("stall: replies owed and none for %llu s (state %d)",
				     (unsigned long long)stall_s, (int)state);
				break;
			}
		}

		if (state == MEASURE && t_end < wake)
			wake = t_end;
		if (state == WARMUP && t_run + warmup * 1000000000ull < wake)
			wake = t_run + warmup * 1000000000ull;
		now = now_ns();
		if (spin && state >= WARMUP)
			wake = now;     /* --spin: poll, never block */
		ts.tv_sec = wake > now ? (time_t)((wake - now) / 1000000000ull) : 0;
		ts.tv_nsec = wake > now ? (long)((wake - now) % 1000000000ull) : 0;
		n = epoll_pwait2(ep, evs, EV_BATCH, &ts, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail("epoll_pwait2: %s", strerrorname_np(errno));
			break;
		}
		now = now_ns();
		for (int i = 0; i < n && !failed; i++) {
			struct kv_conn *c = evs[i].data.ptr;

			if (!c->connected) {
				int so_err = 0;
				socklen_t len = sizeof(so_err);

				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &so_err, &len);
				if (so_err) {
					fail("connect: %s", strerrorname_np(so_err));
					break;
				}
				c->connected = 1;
				c->want_out = 1;        /* EPOLLOUT watched; watch() drops it */
				if (++opened == k) {
					state = PRELOAD;
					t_preload = t_last = now;
					/* Every connection starts its share of the SETs. */
					for (uint32_t j = 0; j < k && !error; j++) {
						struct kv_conn *d = &cs[j];

						while (d->next_preload < nkeys &&
						       d->p_tail - d->p_head < PRELOAD_WINDOW && !error) {
							error = req_queue(d, OP_SET, d->next_preload,
									  now, now, 0);
							d->next_preload += (uint32_t)k;
						}
						if (!error)
							error = out_flush(d);
						if (!error)
							error = watch(d, ep);
					}
					if (error)
						fail("%s", strerrorname_np(error));
				} else if ((error = watch(c, ep))) {
					fail("%s", strerrorname_np(error));
				}
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				error = out_flush(c);
				if (!error)
					error = watch(c, ep);
				if (error) {
					fail("send: %s", strerrorname_np(error));
					break;
				}
			}
			if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				continue;
			for (;;) {
				ssize_t got = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
				size_t off = 0;

				if (got == 0) {
					fail("conn %u: closed by the server with %u replies owed", c->idx,
					     c->p_tail - c->p_head);
					break;
				}
				if (got < 0) {
					if (errno == EINTR)
						continue;
					if (errno != EAGAIN)
						fail("conn %u: recv: %s", c->idx, strerrorname_np(errno));
					break;
				}
				c->in_len += (size_t)got;
				t_last = now;
				for (;;) {
					struct pend *p;
					long took;

					if (c->p_head == c->p_tail) {
						if (off < c->in_len) {
							bad_replies++;
							fail("conn %u: %zu bytes nobody asked for: \"%s\"",
							     c->idx, c->in_len - off,
							     excerpt(c->in + off, c->in_len - off));
						}
						break;
					}
					p = &c->pend[c->p_head & (PEND_CAP - 1)];
					/* reply_take() looks at c->in from its start. */
					if (off) {
						memmove(c->in, c->in + off, c->in_len - off);
						c->in_len -= off;
						off = 0;
					}
					took = reply_take(c, p);
					if (took <= 0)
						break;
					off = (size_t)took;
					c->p_head++;
					all_ops++;
					if (state == PRELOAD) {
						preloaded++;
						if (c->next_preload < nkeys) {
							error = req_queue(c, OP_SET, c->next_preload, now, now, 0);
							c->next_preload += (uint32_t)k;
						}
						continue;
					}
					if (p->measured) {
						uint64_t lat = now - p->t;

						lat_add(hist, lat);
						lat_add(hist_late, p->sent - p->t);
						lat_add(hist_rtt, now - p->sent);
						if (lat > lat_max)
							lat_max = lat;
						if (p->op == OP_GET)
							gets++;
						else
							sets++;
					}
					if (rate == 0 && (state == WARMUP ||
							  (state == MEASURE && measured < max_ops))) {
						enum op op;
						uint32_t key;

						draw(&op, &key);
						error = req_queue(c, op, key, now, now, state == MEASURE);
						measured += state == MEASURE;
					}
					if (error)
						break;
				}
				if (off) {
					memmove(c->in, c->in + off, c->in_len - off);
					c->in_len -= off;
				}
				if (failed || error)
					break;
			}
			if (!failed && !error)
				error = out_flush(c);
			if (!failed && !error)
				error = watch(c, ep);
			if (error) {
				fail("%s", strerrorname_np(error));
				break;
			}
			if (state == PRELOAD && preloaded == nkeys) {
				/* All stored: the load starts, one request per
				 * connection (closed loop) or on schedule (open). */
				state = WARMUP;
				t_run = now_ns();
				if (rate == 0) {
					for (uint32_t j = 0; j < k && !error; j++) {
						enum op op;
						uint32_t key;

						draw(&op, &key);
						error = req_queue(&cs[j], op, key, t_run, t_run, 0);
						if (!error)
							error = out_flush(&cs[j]);
						if (!error)
							error = watch(&cs[j], ep);
					}
					if (error)
						fail("%s", strerrorname_np(error));
				}
			}
		}
	}
	if (stop && !failed && state != DRAIN)
		fail("EINTR");
	if (state == MEASURE) {
		t_end = now_ns();
		phase(phases, "end");
	}
	double secs = t_measure ? (double)(t_end - t_measure) / 1e9 : 0;
	uint64_t done = gets + sets;

	if (!failed && state == DRAIN && done != measured)
		fail("counted %llu replies of %llu measured requests",
		     (unsigned long long)done, (unsigned long long)measured);
	if (!failed && rate > 0 && secs > 0 && (double)measured < 0.95 * rate * secs)
		fail("open loop fell behind: %llu requests due in %.3f s at %.0f/s, %llu sent",
		     (unsigned long long)(uint64_t)(rate * secs), secs, rate,
		     (unsigned long long)measured);
	printf("{\"mode\":\"%s\",\"conns\":%lu,\"keys\":%u,\"zipf\":%.3f,\"get_ratio\":%.3f,"
	       "\"rate_target\":%.1f,\"seconds\":%.3f,\"requests\":%llu,\"rps\":%.1f,"
	       "\"gets\":%llu,\"sets\":%llu,\"hits\":%llu,\"misses\":%llu,\"mismatches\":%llu,"
	       "\"bad_replies\":%llu,\"preloaded\":%llu,\"preload_s\":%.3f,\"all_ops\":%llu,"
	       "\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,"
	       "\"late_max_us\":%.2f,\"late_p50_us\":%.2f,\"late_p99_us\":%.2f,"
	       "\"rtt_p50_us\":%.2f,\"rtt_p99_us\":%.2f,\"connected\":%llu,\"error\":",
	       rate > 0 ? "open" : "closed", (unsigned long)k, nkeys, zipf_s, get_ratio, rate, secs,
	       (unsigned long long)done, secs > 0 ? (double)done / secs : 0.0,
	       (unsigned long long)gets, (unsigned long long)sets, (unsigned long long)hits,
	       (unsigned long long)misses, (unsigned long long)mismatches,
	       (unsigned long long)bad_replies, (unsigned long long)preloaded,
	       t_run ? (double)(t_run - t_preload) / 1e9 : 0.0, (unsigned long long)all_ops,
	       (double)lat_pct(hist, done, 0.50) / 1000.0,
	       (double)lat_pct(hist, done, 0.90) / 1000.0,
	       (double)lat_pct(hist, done, 0.99) / 1000.0, (double)lat_max / 1000.0,
	       (double)late_max / 1000.0, (double)lat_pct(hist_late, done, 0.50) / 1000.0,
	       (double)lat_pct(hist_late, done, 0.99) / 1000.0,
	       (double)lat_pct(hist_rtt, done, 0.50) / 1000.0,
	       (double)lat_pct(hist_rtt, done, 0.99) / 1000.0, (unsigned long long)opened);
	if (failed) {
		putchar('"');
		for (const char *s = errbuf; *s; s++) {
			if (*s == '"' || *s == '\\')
				putchar('\\');
			putchar(*s);
		}
		puts("\"}");
	} else {
		puts("null}");
	}
	fflush(stdout);
	for (uint32_t i = 0; i < k; i++) {
		if (cs[i].fd > 0)  /* calloc'd: 0 = never opened */
			close(cs[i].fd);
		free(cs[i].out);
	}
	free(cs);
	free(keys);
	free(vals);
	free(cdf);
	close(ep);
	return failed ? 1 : 0;
}
