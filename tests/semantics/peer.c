/* peer.c - sockpeer: the plain-Linux partner of sockcheck (a line-protocol TCP server). */
/*
 * Usage: sockpeer --port P [--verbose]
 *
 * Every accepted connection gets its own thread and starts in command mode:
 * it reads command lines ("\n"-terminated) and carries them out in order.
 * A client may send several commands at once.  Data the peer sends is the
 * stream pattern: byte i of what one connection sent is i % 251.
 *
 *   SEND n           send n pattern bytes, stay in command mode
 *   SLEEP ms         wait, stay in command mode
 *   ECHO             echo everything; on EOF shut down writing and close
 *   SINK tag         read and count everything until EOF or error, then
 *                    close; the outcome is recorded under tag ("-": none)
 *   HOLD ms tag      read nothing for ms, then SINK tag
 *   VERIFY           the SINK (or HOLD) that follows also checks that the
 *                    bytes are the stream pattern from offset 0: the first
 *                    one that is not ends it as "bad"
 *   FIN tag          shutdown(SHUT_WR), then SINK tag
 *   CLOSE            close() now
 *   RST              SO_LINGER {1, 0} and close(): a reset
 *   CONNECT ip port n
 *                    open n connections to ip:port (each then behaves as
 *                    ECHO), reply "ok n" once all are established, or
 *                    "err ENAME k" at the first failure (k established);
 *                    stay in command mode
 *   WAIT tag ms      reply "bytes N end E" once the connection tagged tag
 *                    has ended (E = eof, reset, err-ENAME) or after ms
 *                    (E = open, or none if no connection has that tag)
 *
 * A connection that ends before its first command is recorded under the
 * tag "from-IP:PORT" (the client's address), as SINK would (eof, reset,
 * ...); a new connection from the same address makes it "open" again.
 *
 * Unknown commands are answered "error unknown command" and the connection
 * is closed.  Every network wait is bounded (SO_RCVTIMEO/SO_SNDTIMEO of
 * 30 s) so a misbehaving client cannot hold a thread forever.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PEER_IO_TIMEOUT_S 30
#define PEER_CONNECT_MS 3000
#define PEER_TAGS 4096
#define PEER_TAG_LEN 96

struct peer_conn {
	int fd;
	size_t sent;          /* pattern offset of the next byte sent */
	char buf[65536];      /* received, not yet consumed */
	size_t len;
	int verify;           /* VERIFY: SINK checks the pattern */
	int cmds;             /* commands read so far */
	int rd_err;           /* how the last read failed: 0 (EOF) or errno */
	char from[PEER_TAG_LEN]; /* "from-IP:PORT" (accepted connections) */
};

struct peer_tag {
	char name[PEER_TAG_LEN];
	long bytes;
	char end[32];         /* "open" while sinking */
};

static struct peer_tag tags[PEER_TAGS];
static unsigned ntags;
static pthread_mutex_t tags_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tags_cond = PTHREAD_COND_INITIALIZER;
static int verbose;

/* The tag's slot (created if absent); NULL for "-" or a full table.
 * WARNING: caller must hold tags_lock. */
static struct peer_tag *peer_tag_get(const char *name, int create)
{
	if (strcmp(name, "-") == 0)
		return NULL;
	for (unsigned i = 0; i < ntags; i++)
		if (strcmp(tags[i].name, name) == 0)
			return &tags[i];
	if (!create || ntags == PEER_TAGS)
		return NULL;
	snprintf(tags[ntags].name, PEER_TAG_LEN, "%s", name);
	tags[ntags].bytes = 0;
	snprintf(tags[ntags].end, sizeof(tags[ntags].end), "open");
	return &tags[ntags++];
}

static void peer_tag_update(const char *name, long bytes, const char *end)
{
	struct peer_tag *t;

	pthread_mutex_lock(&tags_lock);
	t = peer_tag_get(name, 1);
	if (t) {
		t->bytes = bytes;
		snprintf(t->end, sizeof(t->end), "%s", end);
	}
	pthread_mutex_unlock(&tags_lock);
	pthread_cond_broadcast(&tags_cond);
}

static void peer_timeouts_set(int fd)
{
	struct timeval tv = { PEER_IO_TIMEOUT_S, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int peer_send_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int peer_send_pattern(struct peer_conn *c, long n)
{
	uint8_t chunk[16384];

	while (n > 0) {
		size_t k = n < (long)sizeof(chunk) ? (size_t)n : sizeof(chunk);

		for (size_t i = 0; i < k; i++)
			chunk[i] = (uint8_t)((c->sent + i) % 251);
		if (peer_send_all(c->fd, chunk, k) < 0)
			return -1;
		c->sent += k;
		n -= (long)k;
	}
	return 0;
}

/* Next command line into line (without "\n"); 0, or -1 on EOF/error. */
static int peer_line_read(struct peer_conn *c, char *line, size_t size)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);

		if (nl) {
			size_t n = (size_t)(nl - c->buf);

			snprintf(line, size, "%.*s", (int)(n < size ? n : size - 1), c->buf);
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return 0;
		}
		if (c->len == sizeof(c->buf))
			return -1;
		ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			c->rd_err = r < 0 ? errno : 0;
			return -1;
		}
		c->len += (size_t)r;
	}
}

static const char *peer_errname(int err)
{
	const char *name = strerrorname_np(err);

	return name ? name : "E?";
}

/* With VERIFY: are the @n bytes at @p the pattern from stream offset @off? */
static int peer_pattern_ok(const struct peer_conn *c, const char *p, size_t n, long off)
{
	for (size_t i = 0; c->verify && i < n; i++)
		if ((uint8_t)p[i] != (uint8_t)((size_t)(off + (long)i) % 251))
			return 0;
	return 1;
}

/* Read until EOF or error, counting (buffered bytes included); record under tag. */
static void peer_sink(struct peer_conn *c, const char *tag)
{
	long bytes = (long)c->len;
	char end[32];

	if (!peer_pattern_ok(c, c->buf, c->len, 0)) {
		peer_tag_update(tag, bytes, "bad");
		return;
	}
	c->len = 0;
	peer_tag_update(tag, bytes, "open");
	for (;;) {
		ssize_t r = recv(c->fd, c->buf, sizeof(c->buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			snprintf(end, sizeof(end), "eof");
			break;
		}
		if (r > 0 && !peer_pattern_ok(c, c->buf, (size_t)r, bytes)) {
			snprintf(end, sizeof(end), "bad");
			break;
		}
		if (r < 0) {
			if (errno == ECONNRESET)
				snprintf(end, sizeof(end), "reset");
			else
				snprintf(end, sizeof(end), "err-%s", peer_errname(errno));
			break;
		}
		bytes += r;
		peer_tag_update(tag, bytes, "open");
	}
	peer_tag_update(tag, bytes, end);
}

static void peer_echo(struct peer_conn *c)
{
	if (c->len && peer_send_all(c->fd, c->buf, c->len) < 0)
		return;
	c->len = 0;
	for (;;) {
		ssize_t r = recv(c->fd, c->buf, sizeof(c->buf), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (peer_send_all(c->fd, c->buf, (size_t)r) < 0)
			return;
	}
	shutdown(c->fd, SHUT_WR);
}

static void *peer_echo_thread(void *arg)
{
	struct peer_conn *c = arg;

	peer_echo(c);
	close(c->fd);
	free(c);
	return NULL;
}

static int peer_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	pthread_attr_t attr;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return r;
}

/* One connection to ip:port within PEER_CONNECT_MS; fd or -errno. */
static int peer_connect_one(const struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0;
	socklen_t len = sizeof(err);
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) == 0)
		goto done;
	if (errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return -err;
	}
	if (poll(&p, 1, PEER_CONNECT_MS) != 1) {
		close(fd);
		return -ETIMEDOUT;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		close(fd);
		return -err;
	}
done:
	if (fcntl(fd, F_SETFL, 0) < 0) {
		err = errno;
		close(fd);
		return -err;
	}
	peer_timeouts_set(fd);
	return fd;
}

static void peer_connect_cmd(struct peer_conn *c, const char *ip, unsigned port, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char reply[64];
	int k;

	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1 || n < 1 || n > 1024) {
		snprintf(reply, sizeof(reply), "err EINVAL 0\n");
		peer_send_all(c->fd, reply, strlen(reply));
		return;
	}
	for (k = 0; k < n; k++) {
		int fd = peer_connect_one(&a);
		struct peer_conn *e;

		if (fd < 0) {
			snprintf(reply, sizeof(reply), "err %s %d\n", peer_errname(-fd), k);
			peer_send_all(c->fd, reply, strlen(reply));
			return;
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			close(fd);
			snprintf(reply, sizeof(reply), "err ENOMEM %d\n", k);
			peer_send_all(c->fd, reply, strlen(reply));
			return;
		}
		e->fd = fd;
		if (peer_thread_start(peer_echo_thread, e) != 0) {
			close(fd);
			free(e);
			snprintf(reply, sizeof(reply), "err EAGAIN %d\n", k);
			peer_send_all(c->fd, reply, strlen(reply));
			return;
		}
	}
	snprintf(reply, sizeof(reply), "ok %d\n", n);
	peer_send_all(c->fd, reply, strlen(reply));
}

static void peer_wait_cmd(struct peer_conn *c, const char *tag, long ms)
{
	struct timespec deadline;
	struct peer_tag *t;
	char reply[160];

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&tags_lock);
	for (;;) {
		t = peer_tag_get(tag, 0);
		if (t && strcmp(t->end, "open") != 0)
			break;
		if (pthread_cond_timedwait(&tags_cond, &tags_lock, &deadline) == ETIMEDOUT) {
			t = peer_tag_get(tag, 0);
			break;
		}
	}
	snprintf(reply, sizeof(reply), "bytes %ld end %s\n", t ? t->bytes : 0L,
		 t ? t->end : "none");
	pthread_mutex_unlock(&tags_lock);
	peer_send_all(c->fd, reply, strlen(reply));
}

/* A connection that ended before its first command: its end under
 * its "from-" tag. */
static void peer_silent_end(const struct peer_conn *c)
{
	char end[32];

	if (!c->from[0])
		return;
	if (c->rd_err == 0)
		snprintf(end, sizeof(end), "eof");
	else if (c->rd_err == ECONNRESET)
		snprintf(end, sizeof(end), "reset");
	else
		snprintf(end, sizeof(end), "err-%s", peer_errname(c->rd_err));
	peer_tag_update(c->from, (long)c->len, end);
}

/* Carry out commands until the connection is handed to a final mode or closed. */
static void peer_serve(struct peer_conn *c)
{
	char line[256], word[16], arg1[PEER_TAG_LEN], arg2[PEER_TAG_LEN];
	long n;

	while (peer_line_read(c, line, sizeof(line)) == 0) {
		c->cmds++;
		if (verbose)
			fprintf(stderr, "sockpeer: fd %d: %s\n", c->fd, line);
		word[0] = arg1[0] = arg2[0] = '\0';
		sscanf(line, "%15s %95s %95s", word, arg1, arg2);
		if (strcmp(word, "SEND") == 0) {
			if (peer_send_pattern(c, strtol(arg1, NULL, 10)) < 0)
				return;
		} else if (strcmp(word, "SLEEP") == 0) {
			n = strtol(arg1, NULL, 10);
			struct timespec ts = { n / 1000, (n % 1000) * 1000000L };

			nanosleep(&ts, NULL);
		} else if (strcmp(word, "ECHO") == 0) {
			peer_echo(c);
			return;
		} else if (strcmp(word, "SINK") == 0) {
			peer_sink(c, arg1);
			return;
		} else if (strcmp(word, "VERIFY") == 0) {
			c->verify = 1;
		} else if (strcmp(word, "HOLD") == 0) {
			n = strtol(arg1, NULL, 10);
			struct timespec ts = { n / 1000, (n % 1000) * 1000000L };

			nanosleep(&ts, NULL);
			peer_sink(c, arg2[0] ? arg2 : "-");
			return;
		} else if (strcmp(word, "FIN") == 0) {
			shutdown(c->fd, SHUT_WR);
			peer_sink(c, arg1[0] ? arg1 : "-");
			return;
		} else if (strcmp(word, "CLOSE") == 0) {
			return;
		} else if (strcmp(word, "RST") == 0) {
			struct linger lg = { 1, 0 };

			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			return;
		} else if (strcmp(word, "CONNECT") == 0) {
			char ip[64];
			unsigned port = 0;
			int cnt = 0;

			if (sscanf(line, "CONNECT %63s %u %d", ip, &port, &cnt) != 3)
				cnt = 0;
			peer_connect_cmd(c, ip, port, cnt);
		} else if (strcmp(word, "WAIT") == 0) {
			peer_wait_cmd(c, arg1, strtol(arg2, NULL, 10));
		} else {
			static const char msg[] = "error unknown command\n";

			peer_send_all(c->fd, msg, sizeof(msg) - 1);
			return;
		}
	}
	if (!c->cmds)
		peer_silent_end(c);
}

static void *peer_conn_thread(void *arg)
{
	struct peer_conn *c = arg;

	peer_serve(c);
	close(c->fd);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in a = { .sin_family = AF_INET };
	unsigned long port = 0;
	int opt, lfd, one = 1;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt == 'p')
			port = strtoul(optarg, NULL, 10);
		else if (opt == 'v')
			verbose = 1;
		else
			port = 0;
	}
	if (port == 0 || port > 65535) {
		fprintf(stderr, "usage: sockpeer --port P [--verbose]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	a.sin_port = htons((uint16_t)port);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 1024) < 0) {
		perror("sockpeer: listen");
		return 1;
	}
	printf("sockpeer: listening on port %lu\n", port);
	fflush(stdout);
	for (;;) {
		struct sockaddr_in from;
		socklen_t from_len = sizeof(from);
		int fd = accept4(lfd, (struct sockaddr *)&from, &from_len, SOCK_CLOEXEC);
		struct peer_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE)
				continue;
			perror("sockpeer: accept");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		peer_timeouts_set(fd);
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		snprintf(c->from, sizeof(c->from), "from-%s:%u", inet_ntoa(from.sin_addr),
			 ntohs(from.sin_port));
		pthread_mutex_lock(&tags_lock);
		{
			/* An earlier connection from there is over: not its end. */
			struct peer_tag *t = peer_tag_get(c->from, 0);

			if (t) {
				t->bytes = 0;
				snprintf(t->end, sizeof(t->end), "open");
			}
		}
		pthread_mutex_unlock(&tags_lock);
		if (peer_thread_start(peer_conn_thread, c) != 0) {
			close(fd);
			free(c);
		}
	}
}
