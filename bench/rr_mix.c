/* rr_mix.c - rr_mix: a request/response benchmark of mixed sizes (1 B to 64 KiB each way), every byte checked; plain Linux sockets. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mix64.h"
#include "opts.h"
#include "util.h"

/*
 * One thread, one level-triggered epoll set, non-blocking sockets, plain
 * Linux sockets: unmodified, it runs on Linux or under `slipstream run`.
 *
 * Wire format, per request (client -> server), little-endian:
 *     u32 request payload length, u32 reply length, u64 sequence,
 *     then the request payload.
 * The server answers with exactly "reply length" bytes (no header).
 *
 * Payload bytes are a function of (sequence, offset, direction): byte o of
 * a payload is PAT[(start + o) mod PAT_SIZE] where PAT is a fixed
 * pseudo-random table of PAT_SIZE bytes and start = mix64(sequence ^
 * direction salt) mod PAT_SIZE.  Senders send straight out of the table
 * (no per-byte work) and receivers memcmp() every byte against it: the
 * server checks every request byte, the client every reply byte.  A reply
 * of another sequence, a lost, repeated or misplaced byte all mismatch.
 *
 * server  rr_mix server --listen IP:PORT [--nodelay 0|1]
 *         Accepts any number of connections; requests on one connection
 *         are answered in order (a client may pipeline; rr_mix's does not).
 *         SIGUSR1 prints a counter line, SIGTERM/SIGINT one more and exit
 *         (status 1 if errors is not 0):
 *           {"requests":n,"req_bytes":b,"rep_bytes":b,"accepted":n,
 *            "open":n,"errors":n,"resets":n}
 *         errors: request bytes that do not match, bad headers, socket
 *         errors other than a peer's reset; resets: connections reset by
 *         the peer (a client that closes with a reply unread resets).
 *
 * client  rr_mix client --connect IP:PORT [--conns K] [--seconds T]
 *         [--warmup W] [--seed S] [--min B] [--max B] [--nodelay 0|1]
 *         [--connect-timeout S] [--stall S] [--phases]
 *         K connections (default 1), each with one request outstanding
 *         (closed loop).  Request and reply lengths are drawn
 *         independently from a log-uniform distribution on [min, max]
 *         (default 1 to 65536 bytes), from a stream seeded by --seed and
 *         the connection's number, so a run's sizes are the same on any
 *         stack.  It connects all K (every one must be up within
 *         --connect-timeout, default 10 s), runs W seconds of warm-up
 *         (default 1), then measures T seconds (default 5) and prints one
 *         JSON line on stdout:
 *           {"conns":K,"established":n,"seconds":t,"msgs":n,
 *            "msgs_per_s":r,"p50_us":x,"p99_us":x,"p999_us":x,"max_us":x,
 *            "req_bytes":b,"rep_bytes":b,"errors":n,"mismatches":n,
 *            "nodelay":0|1,"seed":s[,"error":"first error"]}
 *         msgs, bytes (payload, each way; each request also carries a
 *         16-byte header) and latencies count the requests completed in
 *         the measured window; latency runs from the request's first
 *         send() to its reply's last byte.  Exit status 1 if any error:
 *         a reply byte that does not match (mismatches, also in errors),
 *         a socket error, a connection closed by the server, a connection
 *         not up in time, or a request unanswered for --stall seconds
 *         (default 5).  Every wait is bounded: the whole run takes at
 *         most connect-timeout + warmup + seconds + a little.
 *         --phases prints "phase measure" and "phase end" on stderr at the
 *         window's edges (for a driver's CPU accounting).
 *
 * --nodelay 1 (the default, both ends) sets TCP_NODELAY on every socket,
 * as RPC stacks (gRPC, Thrift, Redis and memcached clients) do; 0 leaves
 * Nagle's algorithm on.  The client sends a request's header and payload
 * in one sendmsg(), the server a reply in as few send()s as the socket
 * takes.
 */

#define HDR_LEN 16
#define PAT_SIZE (1u << 17)           /* 128 KiB of pattern ... */
#define PAT_MASK (PAT_SIZE - 1)
#define CHUNK (1u << 16)              /* ... read and sent 64 KiB at a time */
#define MAX_LEN (1u << 24)            /* a request or reply, at most */
#define EV_BATCH 256
#define RECV_BATCH 16
#define REQ_SALT 0x5265717565737421ull
#define REP_SALT 0x5265706c79212121ull

/* The table twice over, so that any CHUNK from any start is contiguous. */
static uint8_t pat[2 * PAT_SIZE];

static void pat_init(void)
{
	for (uint32_t i = 0; i < PAT_SIZE; i += 8) {
		uint64_t w = mix64(0x726f6d69785f7272ull + i);

		memcpy(&pat[i], &w, 8);
	}
	memcpy(&pat[PAT_SIZE], pat, PAT_SIZE);
}

/* Where payload byte @off of @seq (direction @salt) is in the table. */
static inline const uint8_t *pat_at(uint64_t seq, uint64_t salt, uint64_t off)
{
	return &pat[(mix64(seq ^ salt) + off) & PAT_MASK];
}

static inline void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t get64(const uint8_t *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static volatile sig_atomic_t stop, report;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		report = 1;
	else
		stop = 1;
}

/* The soft descriptor limit up to the hard one: a program under
 * `slipstream run` holds an eventfd per accelerated socket as well. */
static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void set_nodelay(int fd, int on)
{
	if (on)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

/* ------------------------------------------------------------------ server */

enum { S_HDR, S_BODY, S_REPLY };

struct sconn {
	uint8_t hdr[HDR_LEN];
	uint32_t hdr_got, req_len, rep_len, body_got, rep_sent;
	uint64_t seq;
	int state, open, blocked;
	uint8_t *stash;         /* input read past a request whose reply is blocked */
	uint32_t stash_len, stash_off;
};

struct server {
	int ep, lfd, nodelay;
	struct sconn *conns;    /* indexed by fd */
	size_t n_conns;
	uint64_t requests, req_bytes, rep_bytes, accepted, open, errors, resets;
};

static void server_counters(const struct server *s)
{
	printf("{\"requests\":%llu,\"req_bytes\":%llu,\"rep_bytes\":%llu,\"accepted\":%llu,"
	       "\"open\":%llu,\"errors\":%llu,\"resets\":%llu}\n",
	       (unsigned long long)s->requests, (unsigned long long)s->req_bytes,
	       (unsigned long long)s->rep_bytes, (unsigned long long)s->accepted,
	       (unsigned long long)s->open, (unsigned long long)s->errors,
	       (unsigned long long)s->resets);
	fflush(stdout);
}

static void sconn_close(struct server *s, int fd, int error)
{
	struct sconn *c = &s->conns[fd];

	if (error == ECONNRESET || error == EPIPE)
		s->resets++;
	else if (error)
		s->errors++;
	free(c->stash);
	memset(c, 0, sizeof(*c));
	epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	s->open--;
}

static int sconn_interest(struct server *s, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };

	return epoll_ctl(s->ep, EPOLL_CTL_MOD, fd, &ev);
}

/* Send what is left of the reply: 1 when it is all sent, 0 when the
 * socket is full, -errno on an error. */
static int reply_send(struct server *s, int fd, struct sconn *c)
{
	while (c->rep_sent < c->rep_len) {
		uint32_t n = c->rep_len - c->rep_sent;
		ssize_t k;

		if (n > CHUNK)
			n = CHUNK;
		k = send(fd, pat_at(c->seq, REP_SALT, c->rep_sent), n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		c->rep_sent += (uint32_t)k;
		s->rep_bytes += (uint64_t)k;
	}
	s->requests++;
	c->state = S_HDR;
	c->hdr_got = 0;
	return 1;
}

/* Take input bytes: how many were used (fewer than @n when a reply is
 * blocked: the socket is full), or -errno. */
static long sconn_input(struct server *s, int fd, struct sconn *c, const uint8_t *p, size_t n)
{
	size_t used = 0;

	while (used < n) {
		if (c->state == S_HDR) {
			uint32_t k = HDR_LEN - c->hdr_got;

			if (k > n - used)
				k = (uint32_t)(n - used);
			memcpy(c->hdr + c->hdr_got, p + used, k);
			c->hdr_got += k;
			used += k;
			if (c->hdr_got < HDR_LEN)
				break;
			c->req_len = get32(c->hdr);
			c->rep_len = get32(c->hdr + 4);
			c->seq = get64(c->hdr + 8);
			if (c->req_len > MAX_LEN || c->rep_len > MAX_LEN)
				return -EPROTO;
			c->body_got = 0;
			c->state = S_BODY;
		} else if (c->state == S_BODY) {
			uint32_t k = c->req_len - c->body_got;

			if (k > n - used)
				k = (uint32_t)(n - used);
			/* k <= CHUNK: the caller's reads are at most that. */
			if (k && memcmp(p + used, pat_at(c->seq, REQ_SALT, c->body_got), k) != 0)
				return -EBADMSG;
			c->body_got += k;
			used += k;
			s->req_bytes += k;
		}
		if (c->state == S_BODY && c->body_got == c->req_len) {
			int r;

			c->state = S_REPLY;
			c->rep_sent = 0;
			r = reply_send(s, fd, c);
			if (r < 0)
				return r;
			if (r == 0)
				break;
		}
	}
	return (long)used;
}

/* The reply is blocked: keep the unused input and wait for EPOLLOUT only. */
static int sconn_block(struct server *s, int fd, struct sconn *c, const uint8_t *rest, size_t n)
{
	if (n) {
		uint8_t *m = malloc(n);

		if (!m)
			return -ENOMEM;
		memcpy(m, rest, n);
		c->stash = m;
		c->stash_len = (uint32_t)n;
		c->stash_off = 0;
	}
	c->blocked = 1;
	return sconn_interest(s, fd, EPOLLOUT) < 0 ? -errno : 0;
}

static void on_readable(struct server *s, int fd, uint8_t *buf)
{
	struct sconn *c = &s->conns[fd];

	for (int i = 0; i < RECV_BATCH && !c->blocked; i++) {
		ssize_t n = recv(fd, buf, CHUNK, 0);
		long used;

		if (n == 0) {
			sconn_close(s, fd, 0);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				sconn_close(s, fd, errno);
			return;
		}
		used = sconn_input(s, fd, c, buf, (size_t)n);
		if (used < 0) {
			sconn_close(s, fd, (int)-used);
			return;
		}
		if (c->state == S_REPLY) {
			int r = sconn_block(s, fd, c, buf + used, (size_t)n - (size_t)used);

			if (r < 0)
				sconn_close(s, fd, -r);
			return;
		}
		if (n < (ssize_t)CHUNK)
			return;
	}
}

static void on_writable(struct server *s, int fd)
{
	struct sconn *c = &s->conns[fd];
	int r = reply_send(s, fd, c);

	if (r == 0)
		return;
	if (r < 0) {
		sconn_close(s, fd, -r);
		return;
	}
	/* Input kept while the reply was blocked comes first. */
	while (c->stash) {
		long used = sconn_input(s, fd, c, c->stash + c->stash_off,
					c->stash_len - c->stash_off);

		if (used < 0) {
			sconn_close(s, fd, (int)-used);
			return;
		}
		c->stash_off += (uint32_t)used;
		if (c->stash_off == c->stash_len) {
			free(c->stash);
			c->stash = NULL;
		}
		if (c->state == S_REPLY)
			return;         /* blocked again: still EPOLLOUT */
	}
	c->blocked = 0;
	if (sconn_interest(s, fd, EPOLLIN | EPOLLRDHUP) < 0)
		sconn_close(s, fd, errno);
}

static void on_accept(struct server *s)
{
	for (int i = 0; i < 64; i++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		void *t = s->conns;

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				s->errors++;
			return;
		}
		ev.data.fd = fd;
		if (fd_table_grow(&t, &s->n_conns, sizeof(*s->conns), fd) != 0 ||
		    epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			if (t)
				s->conns = t;
			close(fd);
			s->errors++;
			continue;
		}
		s->conns = t;
		set_nodelay(fd, s->nodelay);
		memset(&s->conns[fd], 0, sizeof(s->conns[fd]));
		s->conns[fd].open = 1;
		s->accepted++;
		s->open++;
	}
}

static int run_server(const struct sockaddr_in *addr, int nodelay)
{
	struct server s = { .nodelay = nodelay };
	struct epoll_event evs[EV_BATCH];
	uint8_t *buf = malloc(CHUNK);
	int one = 1;

	s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (!buf || s.lfd < 0) {
		perror("rr_mix: socket");
		return 1;
	}
	setsockopt(s.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s.lfd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 ||
	    listen(s.lfd, 4096) < 0) {
		perror("rr_mix: bind/listen");
		return 1;
	}
	s.ep = epoll_create1(0);
	struct epoll_event lev = { .events = EPOLLIN, .data.fd = s.lfd };

	if (s.ep < 0 || epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd, &lev) < 0) {
		perror("rr_mix: epoll");
		return 1;
	}
	fprintf(stderr, "rr_mix: listening\n");
	while (!stop) {
		int n = epoll_wait(s.ep, evs, EV_BATCH, 200);

		if (report) {
			report = 0;
			server_counters(&s);
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == s.lfd) {
				on_accept(&s);
				continue;
			}
			if ((size_t)fd >= s.n_conns || !s.conns[fd].open)
				continue;
			if (s.conns[fd].blocked) {
				if (evs[i].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
					on_writable(&s, fd);
			} else if (evs[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
				on_readable(&s, fd, buf);
			}
		}
	}
	server_counters(&s);
	return s.errors ? 1 : 0;
}

/* ------------------------------------------------------------------ client */

enum { C_CONNECTING, C_SEND, C_RECV, C_DEAD };

struct cconn {
	int fd, state;
	uint32_t id, req_len, rep_len, sent, got, want_out;
	uint64_t n, seq, t0;
	uint8_t hdr[HDR_LEN];
};

struct client {
	int ep, nodelay, measuring, phases;
	uint32_t min, max;
	uint64_t seed;
	struct cconn *c;
	uint32_t k, established;
	uint64_t msgs, req_bytes, rep_bytes, errors, mismatches, max_ns;
	uint64_t hist[LAT_BUCKETS];
	char error[160];
};

static void client_error(struct client *cl, struct cconn *c, const char *what, int err)
{
	cl->errors++;
	if (!cl->error[0])
		snprintf(cl->error, sizeof(cl->error), "connection %u: %s%s%s", c->id, what,
			 err ? ": " : "", err ? strerror(err) : "");
	if (c->fd >= 0) {
		epoll_ctl(cl->ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
	c->state = C_DEAD;
}

/* A length, log-uniform on [min, max]. */
static uint32_t draw_len(const struct client *cl, uint64_t r)
{
	double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
	double lo = log((double)cl->min), hi = log((double)cl->max + 1.0);
	uint64_t v = (uint64_t)exp(lo + u * (hi - lo));

	if (v < cl->min)
		v = cl->min;
	if (v > cl->max)
		v = cl->max;
	return (uint32_t)v;
}

static int cconn_interest(struct client *cl, struct cconn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u32 = c->id };

	return epoll_ctl(cl->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Send what is left of the request (header and payload in one sendmsg). */
static void cconn_send(struct client *cl, struct cconn *c)
{
	uint32_t total = HDR_LEN + c->req_len;

	while (c->sent < total) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		uint32_t body = c->sent > HDR_LEN ? c->sent - HDR_LEN : 0, n;
		ssize_t k;

		if (c->sent < HDR_LEN) {
			iov[mh.msg_iovlen].iov_base = c->hdr + c->sent;
			iov[mh.msg_iovlen++].iov_len = HDR_LEN - c->sent;
		}
		n = c->req_len - body;
		if (n > CHUNK)
			n = CHUNK;
		if (n) {
			iov[mh.msg_iovlen].iov_base = (void *)pat_at(c->seq, REQ_SALT, body);
			iov[mh.msg_iovlen++].iov_len = n;
		}
		k = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->want_out && cconn_interest(cl, c, EPOLLIN | EPOLLOUT) < 0) {
					client_error(cl, c, "epoll_ctl", errno);
					return;
				}
				c->want_out = 1;
				return;
			}
			client_error(cl, c, "send", errno);
			return;
		}
		c->sent += (uint32_t)k;
	}
	if (c->want_out) {
		c->want_out = 0;
		if (cconn_interest(cl, c, EPOLLIN) < 0) {
			client_error(cl, c, "epoll_ctl", errno);
			return;
		}
	}
	c->state = C_RECV;
	c->got = 0;
}

static void cconn_next(struct client *cl, struct cconn *c)
{
	uint64_t r = mix64(cl->seed ^ mix64(((uint64_t)c->id << 32) | 0x7fffffffu) ^ c->n);

	c->seq = ((uint64_t)c->id << 40) | c->n;
	c->n++;
	c->req_len = draw_len(cl, mix64(r));
	c->rep_len = draw_len(cl, mix64(r ^ 0x9e3779b97f4a7c15ull));
	put32(c->hdr, c->req_len);
	put32(c->hdr + 4, c->rep_len);
	put64(c->hdr + 8, c->seq);
	c->sent = 0;
	c->state = C_SEND;
	c->t0 = now_ns();
	cconn_send(cl, c);
}

static void cconn_done(struct client *cl, struct cconn *c)
{
	uint64_t dt = now_ns() - c->t0;

	if (cl->measuring) {
		cl->msgs++;
		cl->req_bytes += c->req_len;
		cl->rep_bytes += c->rep_len;
		lat_add(cl->hist, dt);
		if (dt > cl->max_ns)
			cl->max_ns = dt;
	}
	if (cl->measuring >= 0)
		cconn_next(cl, c);
	else
		c->state = C_SEND;      /* the run is over: idle */
}

static void cconn_readable(struct client *cl, struct cconn *c, uint8_t *buf)
{
	for (int i = 0; i < RECV_BATCH && c->state == C_RECV; i++) {
		uint32_t want = c->rep_len - c->got;
		ssize_t n;

		if (want > CHUNK)
			want = CHUNK;
		n = recv(c->fd, buf, want, 0);
		if (n == 0) {
			client_error(cl, c, "closed by the server", 0);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_error(cl, c, "recv", errno);
			return;
		}
		if (memcmp(buf, pat_at(c->seq, REP_SALT, c->got), (size_t)n) != 0) {
			cl->mismatches++;
			client_error(cl, c, "reply bytes do not match", 0);
			return;
		}
		c->got += (uint32_t)n;
		if (c->got == c->rep_len) {
			cconn_done(cl, c);      /* and the next request goes out */
			return;
		}
		if ((uint32_t)n < want)
			return;
	}
	if (c->state == C_SEND) {
		/* Readable while a request is still going out: the server
		 * answered before it had the whole request, or closed. */
		char b;
		ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

		if (n > 0)
			client_error(cl, c, "reply before the request was complete", 0);
		else if (n == 0)
			client_error(cl, c, "closed by the server", 0);
		else if (errno != EAGAIN && errno != EINTR)
			client_error(cl, c, "recv", errno);
	}
}

static int connect_all(struct client *cl, const struct sockaddr_in *addr, double timeout)
{
	struct epoll_event evs[EV_BATCH];
	double deadline = now_seconds() + timeout;

	for (uint32_t i = 0; i < cl->k; i++) {
		struct cconn *c = &cl->c[i];
		struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = i };

		c->id = i;
		c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (c->fd < 0) {
			client_error(cl, c, "socket", errno);
			continue;
		}
		set_nodelay(c->fd, cl->nodelay);
		if (connect(c->fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0 &&
		    errno != EINPROGRESS) {
			client_error(cl, c, "connect", errno);
			continue;
		}
		if (epoll_ctl(cl->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
			client_error(cl, c, "epoll_ctl", errno);
			continue;
		}
		c->state = C_CONNECTING;
	}
	while (cl->established + cl->errors < cl->k) {
		double left = deadline - now_seconds();
		int n;

		if (left <= 0 || stop)
			break;
		n = epoll_wait(cl->ep, evs, EV_BATCH, left > 0.1 ? 100 : (int)(left * 1000) + 1);
		for (int i = 0; i < n; i++) {
			struct cconn *c = &cl->c[evs[i].data.u32];
			int err = 0;
			socklen_t len = sizeof(err);

			if (c->state != C_CONNECTING)
				continue;
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
			if (err) {
				client_error(cl, c, "connect", err);
				continue;
			}
			if (cconn_interest(cl, c, EPOLLIN) < 0) {
				client_error(cl, c, "epoll_ctl", errno);
				continue;
			}
			c->state = C_SEND;
			cl->established++;
		}
	}
	for (uint32_t i = 0; i < cl->k; i++)
		if (cl->c[i].state == C_CONNECTING)
			client_error(cl, &cl->c[i], "not connected in time", ETIMEDOUT);
	return cl->established == cl->k ? 0 : -1;
}

static int run_client(const struct sockaddr_in *addr, struct client *cl, double seconds,
		      double warmup, double connect_timeout, double stall)
{
	struct epoll_event evs[EV_BATCH];
	uint8_t *buf = malloc(CHUNK);
	double t_start, t_measure, t_end, t_check = 0, t_window = 0;

	cl->c = calloc(cl->k, sizeof(*cl->c));
	cl->ep = epoll_create1(0);
	if (!buf || !cl->c || cl->ep < 0) {
		perror("rr_mix");
		return 1;
	}
	for (uint32_t i = 0; i < cl->k; i++)
		cl->c[i].fd = -1;
	if (connect_all(cl, addr, connect_timeout) == 0) {
		t_start = now_seconds();
		t_measure = t_start + warmup;
		t_end = t_measure + seconds;
		for (uint32_t i = 0; i < cl->k; i++)
			cconn_next(cl, &cl->c[i]);
		while (!stop && !cl->errors) {
			double now = now_seconds();
			int n;

			if (!cl->measuring && now >= t_measure) {
				phase(cl->phases, "measure");
				cl->measuring = 1;
				t_window = now;
			}
			if (now >= t_end) {
				phase(cl->phases, "end");
				t_window = now - t_window;
				cl->measuring = -1;
				break;
			}
			if (now >= t_check) {
				uint64_t old = now_ns() - (uint64_t)(stall * 1e9);

				for (uint32_t i = 0; i < cl->k; i++) {
					struct cconn *c = &cl->c[i];

					if (c->state != C_DEAD && c->t0 < old)
						client_error(cl, c, "request unanswered", ETIMEDOUT);
				}
				t_check = now + 0.1;
			}
			n = epoll_wait(cl->ep, evs, EV_BATCH, 10);
			for (int i = 0; i < n; i++) {
				struct cconn *c = &cl->c[evs[i].data.u32];

				uint32_t e = evs[i].events;

				if (c->state == C_SEND && (e & (EPOLLOUT | EPOLLERR)))
					cconn_send(cl, c);
				if ((c->state == C_RECV || c->state == C_SEND) &&
				    (e & (EPOLLIN | EPOLLERR | EPOLLHUP)))
					cconn_readable(cl, c, buf);
			}
		}
		if (cl->measuring != -1)
			t_window = cl->measuring == 1 ? now_seconds() - t_window : 0;
	}
	if (stop && !cl->error[0])
		snprintf(cl->error, sizeof(cl->error), "interrupted");
	printf("{\"conns\":%u,\"established\":%u,\"seconds\":%.3f,\"msgs\":%llu,"
	       "\"msgs_per_s\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
	       "\"max_us\":%.2f,\"req_bytes\":%llu,\"rep_bytes\":%llu,\"errors\":%llu,"
	       "\"mismatches\":%llu,\"nodelay\":%d,\"seed\":%llu,\"min\":%u,\"max\":%u",
	       cl->k, cl->established, t_window, (unsigned long long)cl->msgs,
	       t_window > 0 ? (double)cl->msgs / t_window : 0.0,
	       lat_pct(cl->hist, cl->msgs, 0.50) / 1e3, lat_pct(cl->hist, cl->msgs, 0.99) / 1e3,
	       lat_pct(cl->hist, cl->msgs, 0.999) / 1e3, cl->max_ns / 1e3,
	       (unsigned long long)cl->req_bytes, (unsigned long long)cl->rep_bytes,
	       (unsigned long long)cl->errors, (unsigned long long)cl->mismatches,
	       cl->nodelay, (unsigned long long)cl->seed, cl->min, cl->max);
	if (cl->error[0])
		printf(",\"error\":\"%s\"", cl->error);
	printf("}\n");
	fflush(stdout);
	for (uint32_t i = 0; i < cl->k; i++)
		if (cl->c[i].fd >= 0)
			close(cl->c[i].fd);
	return cl->errors || cl->error[0] || !cl->msgs ? 1 : 0;
}

/* -------------------------------------------------------------------- main */

static _Noreturn void usage(void)
{
	fprintf(stderr,
		"usage: rr_mix server --listen IP:PORT [--nodelay 0|1]\n"
		"       rr_mix client --connect IP:PORT [--conns K] [--seconds T] [--warmup W]\n"
		"              [--seed S] [--min BYTES] [--max BYTES] [--nodelay 0|1]\n"
		"              [--connect-timeout S] [--stall S] [--phases]\n");
	exit(2);
}

/* --warmup S: 0, or seconds in (0, 600]. */
static int parse_warmup(const char *arg, void *dst)
{
	char *end;
	double v = strtod(arg, &end);

	if (strcmp(arg, "0") == 0) {
		*(double *)dst = 0;
		return 0;
	}
	if (*end || !(v > 0) || v > 600)
		return -1;
	*(double *)dst = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct client cl = { .k = 1, .min = 1, .max = 65536, .nodelay = 1, .seed = 1 };
	struct sockaddr_in addr;
	const char *where = NULL;
	double seconds = 5, warmup = 1, connect_timeout = 10, stall = 5;
	int server;
	const struct bopt opts[] = {
		{ .name = "listen", .kind = BOPT_STR, .dst = &where },
		{ .name = "connect", .kind = BOPT_STR, .dst = &where },
		{ .name = "conns", .kind = BOPT_U32, .dst = &cl.k, .min = 1, .max = 100000 },
		{ .name = "seconds", .kind = BOPT_SECONDS, .dst = &seconds, .dmax = 3600 },
		{ .name = "warmup", .kind = BOPT_FN, .dst = &warmup, .fn = parse_warmup },
		{ .name = "seed", .kind = BOPT_U64, .dst = &cl.seed, .max = UINT64_MAX },
		{ .name = "min", .kind = BOPT_U32, .dst = &cl.min, .min = 0, .max = MAX_LEN },
		{ .name = "max", .kind = BOPT_U32, .dst = &cl.max, .min = 1, .max = MAX_LEN },
		{ .name = "nodelay", .kind = BOPT_INT, .dst = &cl.nodelay, .min = 0, .max = 1 },
		{ .name = "connect-timeout", .kind = BOPT_SECONDS, .dst = &connect_timeout,
		  .dmax = 600 },
		{ .name = "stall", .kind = BOPT_SECONDS, .dst = &stall, .dmax = 600 },
		{ .name = "phases", .kind = BOPT_FLAG, .dst = &cl.phases },
		{ 0 },
	};

	if (argc < 2)
		usage();
	if (strcmp(argv[1], "server") == 0)
		server = 1;
	else if (strcmp(argv[1], "client") == 0)
		server = 0;
	else
		usage();
	bopts_parse(argc, argv, 2, opts, usage);
	if (!where || parse_sockaddr(where, &addr) != 0 || cl.min > cl.max)
		usage();
	if (cl.min == 0)
		cl.min = 1;     /* log-uniform needs a positive lower end */
	pat_init();
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (server)
		return run_server(&addr, cl.nodelay);
	return run_client(&addr, &cl, seconds, warmup, connect_timeout, stall);
}
