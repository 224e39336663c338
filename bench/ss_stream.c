/* ss_stream.c - ss-stream: the bulk server of bench/tcp_compare.py on the low-level API, without ss-bulk's hashing. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slipstream.h"
#include "opts.h"
#include "util.h"

/*
 * ss-bulk generates and SHA-256s every byte (about 230 MB/s on the bench
 * VM), which would cap the benchmark at about 1.8 Gbit/s and measure the
 * hash, not the stack.  ss-stream does what linux_bulk does instead:
 *   send: copy a constant pattern into the transmit ring (the copy an
 *         application makes of data it has; Linux send(2) makes the same)
 *         until --bytes or --seconds, then shut down and close once
 *         everything is acknowledged and the peer has closed;
 *   recv: release everything readable without touching it (zero-copy: an
 *         application would parse in place), close after the peer's FIN.
 * It listens on --port and serves exactly one connection.  A "listening"
 * line on stderr says when the client may connect.  One JSON line at the end:
 *   {"mode":"send"|"recv","bytes":n,"seconds":t,"gbps":x,"error":null|"..."}
 * The clock runs from ACCEPTED to the peer's FIN (recv) or to the last byte
 * acknowledged (send).
 */

#define EV_BATCH 64
#define PATTERN_LEN 65536

struct stream {
	bool sender;
	uint64_t bytes;         /* send: limit */
	double deadline;        /* send: stop at (0: from --seconds at accept) */
	uint64_t seconds;
	struct ss_conn *c;
	uint64_t done;
	bool shut, acked, peer_closed, closing, closed;
	double start, end;
	int error;
};

static volatile sig_atomic_t stop;
static uint8_t pattern[PATTERN_LEN];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void fail(struct stream *s, int err)
{
	if (!s->error)
		s->error = err ? err : EIO;
}

static void copy_pattern(uint8_t *dst, size_t n)
{
	while (n) {
		size_t k = n < PATTERN_LEN ? n : PATTERN_LEN;

		memcpy(dst, pattern, k);
		dst += k;
		n -= k;
	}
}

/* Sender: fill free transmit space, then shut down once the limit is reached. */
static void pump(struct stream *s)
{
	struct iovec iov[2];

	while (!s->shut && s->done < s->bytes && now_seconds() < s->deadline && !stop) {
		size_t n = ss_send_space(s->c, iov), a;

		if (!n)
			break;
		if (n > s->bytes - s->done)
			n = (size_t)(s->bytes - s->done);
		a = iov[0].iov_len < n ? iov[0].iov_len : n;
		copy_pattern(iov[0].iov_base, a);
		if (n > a)
			copy_pattern(iov[1].iov_base, n - a);
		if (ss_send_commit(s->c, n) < 0) {
			fail(s, errno);
			return;
		}
		s->done += n;
	}
	if (!s->shut && (s->done >= s->bytes || now_seconds() >= s->deadline || stop) &&
	    ss_shutdown(s->c) == 0)
		s->shut = true;
	if (s->shut && !s->acked && ss_send_queued(s->c) == 0) {
		s->acked = true;
		s->end = now_seconds();
	}
}

/* Receiver: release everything readable. */
static void drain(struct stream *s)
{
	struct iovec iov[2];
	size_t n = ss_recv_peek(s->c, iov);

	if (n && ss_recv_done(s->c, n) == 0)
		s->done += n;
}

static void handle(struct stream *s, const struct ss_event *ev)
{
	switch (ev->type) {
	case SS_EVENT_LISTENING:
		if (ev->error)
			fail(s, ev->error);
		else
			fprintf(stderr, "ss-stream: listening\n");
		break;
	case SS_EVENT_BOUND:
	case SS_EVENT_INHERITED:
	case SS_EVENT_ADOPTED:
	case SS_EVENT_MOVED:
	case SS_EVENT_LISTEN_STOPPED:
		break; /* bind, fork and shutdown events: not used here */
	case SS_EVENT_CMD_ERROR:
		fail(s, ev->error);
		break;
	case SS_EVENT_ACCEPTED:
		if (s->c) {
			ss_abort(ev->conn); /* one connection only */
			break;
		}
		s->c = ev->conn;
		s->start = now_seconds();
		if (s->seconds)
			s->deadline = s->start + (double)s->seconds;
		if (s->sender)
			pump(s);
		break;
	case SS_EVENT_DATA:
		if (ev->conn == s->c && !s->sender)
			drain(s);
		break;
	case SS_EVENT_SENT:
		if (ev->conn == s->c && s->sender)
			pump(s);
		break;
	case SS_EVENT_PEER_CLOSED:
		if (ev->conn != s->c)
			break;
		s->peer_closed = true;
		if (!s->sender) {
			drain(s);
			s->end = now_seconds();
		}
		break;
	case SS_EVENT_RESET:
	case SS_EVENT_ERROR:
		if (ev->conn == s->c)
			fail(s, ev->error);
		break;
	case SS_EVENT_CLOSED:
		if (ev->conn != s->c)
			break;
		s->closed = true;
		if (!s->end)
			fail(s, ECONNRESET);
		break;
	case SS_EVENT_CONNECTED:
		break;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ss-stream send|recv --port P [--bytes N[K|M|G]] [--seconds T]\n"
		"                 [--buf BYTES] [--sock PATH] [--timeout SECONDS]\n");
	exit(2);
}

/* --buf N: both rings of every connection, a power of two up to 1G. */
static int parse_buf(const char *arg, void *dst)
{
	struct ss_app_opts *ao = dst;
	uint64_t v;

	if (parse_count(arg, &v) < 0 || !v || v > (1u << 30) || (v & (v - 1)))
		return -1;
	ao->rxbuf = ao->txbuf = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct ss_app_opts ao = { .conns = 64, .rxbuf = 1u << 20, .txbuf = 1u << 20 };
	struct stream s = { .bytes = UINT64_MAX, .deadline = 1e300 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ss_event evs[EV_BATCH];
	struct ss_app *app;
	struct ss_ctx *ctx;
	uint64_t port = 0, timeout = 60;
	double last_progress;
	char err[128] = "";
	const struct bopt opts[] = {
		{ .name = "port", .kind = BOPT_U64, .dst = &port, .min = 1, .max = 65535 },
		{ .name = "bytes", .kind = BOPT_U64, .dst = &s.bytes, .max = UINT64_MAX },
		{ .name = "seconds", .kind = BOPT_U64, .dst = &s.seconds, .max = UINT64_MAX },
		{ .name = "buf", .kind = BOPT_FN, .dst = &ao, .fn = parse_buf },
		{ .name = "sock", .kind = BOPT_STR, .dst = &ao.sock_path },
		{ .name = "timeout", .kind = BOPT_U64, .dst = &timeout, .min = 1, .max = UINT64_MAX },
		{ 0 },
	};

	if (argc < 2 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv")))
		usage();
	s.sender = !strcmp(argv[1], "send");
	bopts_parse(argc, argv, 2, opts, usage);
	if (!port || (s.sender && s.bytes == UINT64_MAX && !s.seconds))
		usage();
	memset(pattern, 's', sizeof(pattern));
	ao.errbuf = err;
	ao.errbuf_len = sizeof(err);
	app = ss_app_attach(&ao);
	if (!app) {
		fprintf(stderr, "ss-stream: attach: %s%s%s\n", strerror(errno),
			*err ? ": " : "", err);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ctx = ss_ctx_get(app, 0);

	while (ss_listen(ctx, (uint16_t)port, 1, 0) < 0) {
		if (errno != EAGAIN || stop) {
			fail(&s, errno);
			break;
		}
		ss_wait(ctx, 10);
	}
	last_progress = now_seconds();
	while (!s.error && !s.closed) {
		int n = ss_poll(ctx, evs, EV_BATCH);

		for (int i = 0; i < n; i++)
			handle(&s, &evs[i]);
		if (s.c && s.sender && !s.closed)
			pump(&s);
		/* Close once our side is done and the peer has closed. */
		if (s.c && !s.closing && s.peer_closed && (!s.sender || s.acked) &&
		    ss_close(s.c) == 0)
			s.closing = true;
		if (stop && !s.c)
			fail(&s, EINTR);
		if (n) {
			last_progress = now_seconds();
			continue;
		}
		if (now_seconds() - last_progress > (double)timeout)
			fail(&s, ETIMEDOUT);
		else
			ss_wait(ctx, 100);
	}
	if (!s.end)
		s.end = now_seconds();
	double secs = s.start ? s.end - s.start : 0;
	const char *en = ss_errno_name(s.error);

	printf("{\"mode\":\"%s\",\"bytes\":%llu,\"seconds\":%.6f,\"gbps\":%.3f,\"error\":%s%s%s}\n",
	       s.sender ? "send" : "recv", (unsigned long long)s.done, secs,
	       secs > 0 ? (double)s.done * 8 / secs / 1e9 : 0.0,
	       en ? "\"" : "", en ? en : "null", en ? "\"" : "");
	fflush(stdout);
	ss_app_detach(app);
	return s.error ? 1 : 0;
}
