/* cases_fork_data.c - bytes written on one connection by several processes sharing it across fork: each record a write() accepted arrives once, in its writer's order. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sc.h"

/*
 * A record is 16 bytes, written with one send(): 'R', the writer (0 for
 * the parent, k for the k-th child), two zero bytes, the writer's
 * sequence number and a hash of both.  The peer echoes the stream; the
 * parent checks every record as it comes back: intact, and the next one
 * of its writer.  Records of different writers may interleave in any
 * order (Linux too); within a writer none may be lost, repeated or
 * reordered, and at the end every writer's count must be what its
 * send() calls accepted.
 */

#define REC 16
#define RACE_ROUNDS 24
#define RACE_CHILD_RECORDS 12
/* The parent's records per round, at most: the round's echo (read after
 * the round) fits the receive buffer, and no send() blocks half-way
 * through a record for want of room (another writer's records may come
 * in between there, on Linux too). */
#define RACE_PARENT_MAX 1500
/* fork_read_race: the parent's records not yet back from the peer, at
 * most (the same reason). */
#define RACE_AHEAD 256

struct rec_check {
	uint8_t part[REC];
	size_t n_part;
	uint32_t next[RACE_ROUNDS + 1]; /* each writer's next sequence number */
	uint64_t records;
};

static uint64_t rec_sum(uint8_t writer, uint32_t seq)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t b[5] = { writer, (uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16),
			 (uint8_t)(seq >> 24) };

	for (size_t i = 0; i < sizeof(b); i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void rec_make(uint8_t *r, uint8_t writer, uint32_t seq)
{
	uint64_t h = rec_sum(writer, seq);

	r[0] = 'R';
	r[1] = writer;
	r[2] = r[3] = 0;
	memcpy(r + 4, &seq, sizeof(seq));
	memcpy(r + 8, &h, sizeof(h));
}

/* One complete record off the stream. */
static void rec_take(struct rec_check *k, const uint8_t *r)
{
	uint8_t w = r[1];
	uint32_t seq;
	uint64_t h;

	memcpy(&seq, r + 4, sizeof(seq));
	memcpy(&h, r + 8, sizeof(h));
	if (r[0] != 'R' || w > RACE_ROUNDS || r[2] || r[3] || h != rec_sum(w, seq))
		sc_fail(__FILE__, __LINE__, "record %llu of the echo is no record a writer wrote "
			"(torn or corrupt)", (unsigned long long)k->records);
	if (seq != k->next[w])
		sc_fail(__FILE__, __LINE__, "record %llu of the echo: writer %u's record %u, want "
			"%u (lost, repeated or out of order)", (unsigned long long)k->records, w,
			seq, k->next[w]);
	k->next[w]++;
	k->records++;
}

static void rec_feed(struct rec_check *k, const uint8_t *b, size_t n)
{
	while (n) {
		size_t t = REC - k->n_part < n ? REC - k->n_part : n;

		memcpy(k->part + k->n_part, b, t);
		k->n_part += t;
		b += t;
		n -= t;
		if (k->n_part == REC) {
			k->n_part = 0;
			rec_take(k, k->part);
		}
	}
}

/* What the peer echoed so far, without waiting. */
static void rec_drain(int fd, struct rec_check *k)
{
	uint8_t buf[4096];

	for (;;) {
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r > 0) {
			rec_feed(k, buf, (size_t)r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		sc_fail(__FILE__, __LINE__, "recv() of the echo: %s",
			r == 0 ? "EOF" : sc_errname(errno));
	}
}

/* The echo up to @want records in all. */
static void rec_wait(int fd, struct rec_check *k, uint64_t want)
{
	double deadline = sc_now_ms() + SC_WAIT_MS;
	uint8_t buf[4096];

	while (k->records < want) {
		int left = (int)(deadline - sc_now_ms());
		ssize_t r;

		if (left < 0 || sc_poll1(fd, POLLIN, left) == 0)
			sc_fail(__FILE__, __LINE__, "%llu of %llu records back within %d ms",
				(unsigned long long)k->records, (unsigned long long)want,
				SC_WAIT_MS);
		r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r == 0)
			sc_fail(__FILE__, __LINE__, "EOF from the peer after %llu records",
				(unsigned long long)k->records);
		SC_OK(r);
		rec_feed(k, buf, (size_t)r);
	}
}

/* The rest of the echo, up to the peer's EOF. */
static void rec_drain_eof(int fd, struct rec_check *k)
{
	double deadline = sc_now_ms() + SC_WAIT_MS;
	uint8_t buf[4096];

	for (;;) {
		int left = (int)(deadline - sc_now_ms());
		ssize_t r;

		if (left < 0 || sc_poll1(fd, POLLIN, left) == 0)
			sc_fail(__FILE__, __LINE__, "no EOF from the peer within %d ms (%llu records)",
				SC_WAIT_MS, (unsigned long long)k->records);
		r = recv(fd, buf, sizeof(buf), 0);
		if (r == 0)
			return;
		if (r < 0 && errno == EINTR)
			continue;
		SC_OK(r);
		rec_feed(k, buf, (size_t)r);
	}
}

/* A child of fork_write_race: its records as fast as it can, then exit. */
__attribute__((noreturn)) static void race_child(int fd, uint8_t writer)
{
	uint8_t r[REC];

	for (uint32_t i = 0; i < RACE_CHILD_RECORDS; i++) {
		rec_make(r, writer, i);
		if (send(fd, r, REC, MSG_NOSIGNAL) != REC)
			_exit(2);
	}
	_exit(0);
}

/*
 * The parent writes records without pause while a child it just forked
 * writes its own on the same connection and exits; again with a new
 * child each round.  The children's first send() is where, under
 * Slipstream, the connection moves to them while the parent is in the
 * middle of writing: a record the parent's send() accepted must not be
 * lost there (nor sent twice), whichever process the connection is in.
 * With @read_during the parent also reads the echo while it writes (a
 * record it read must not come again); else only between rounds, when
 * no child is left.
 */
static void race_run(bool read_during)
{
	static struct rec_check k;
	int fd = sc_peer_open("ECHO\n");
	uint32_t sent = 0;

	memset(&k, 0, sizeof(k));
	for (unsigned round = 0; round < RACE_ROUNDS; round++) {
		double deadline;
		int status = 0;
		unsigned n = 0;
		pid_t pid, w = 0;

		fflush(NULL);
		pid = (pid_t)SC_OK(fork());
		if (pid == 0)
			race_child(fd, (uint8_t)(round + 1));
		deadline = sc_now_ms() + SC_WAIT_MS;
		while (w == 0) {
			if (n < RACE_PARENT_MAX && (!read_during || sent - k.next[0] < RACE_AHEAD)) {
				uint8_t r[REC];

				rec_make(r, 0, sent);
				SC_EQ(send(fd, r, REC, MSG_NOSIGNAL), REC);
				sent++;
				n++;
			} else if (read_during) {
				sc_poll1(fd, POLLIN, 1);
			} else {
				sc_sleep_ms(1);
			}
			if (read_during)
				rec_drain(fd, &k);
			w = waitpid(pid, &status, WNOHANG);
			if (w == 0 && sc_now_ms() > deadline) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				sc_fail(__FILE__, __LINE__, "child %u did not exit within %d ms",
					round + 1, SC_WAIT_MS);
			}
		}
		SC_EQ(w, pid);
		SC_TRUE(WIFEXITED(status));
		SC_EQ(WEXITSTATUS(status), 0);
		/* The connection is the parent's alone now: the round's echo. */
		rec_wait(fd, &k, (uint64_t)sent + (round + 1) * RACE_CHILD_RECORDS);
	}
	/* The connection is the parent's alone again: a last record. */
	{
		uint8_t r[REC];

		rec_make(r, 0, sent);
		SC_EQ(send(fd, r, REC, 0), REC);
		sent++;
	}
	SC_EQ(shutdown(fd, SHUT_WR), 0);
	rec_drain_eof(fd, &k);
	SC_EQ(k.n_part, 0);
	SC_EQ(k.next[0], sent);
	for (unsigned w = 1; w <= RACE_ROUNDS; w++)
		SC_EQ(k.next[w], RACE_CHILD_RECORDS);
	SC_EQ(k.records, (uint64_t)sent + RACE_ROUNDS * RACE_CHILD_RECORDS);
}

static void fork_write_race(void)
{
	race_run(false);
}

static void fork_read_race(void)
{
	race_run(true);
}

const struct sc_case sc_cases_fork_data[] = {
	{ "fork_write_race", fork_write_race },
	{ "fork_read_race", fork_read_race },
	{ NULL, NULL },
};
