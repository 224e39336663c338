/* test_posix_cx.c - the POSIX layer's contexts against a fake service: a context per thread, commands and events of a socket on its own context, threads blocking across contexts, a blocked poller cancelled, what cancellation handling costs. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_svc.h"
#include "posix/posix.h"

#define N_CX 4

static struct fake_svc fk;

static unsigned cx_of(int fd)
{
	struct ssp_sock *s = ssp_fd_sock(fd);

	return s ? s->cx->idx : 99;
}

/* ssp_cx_pick: the least used context, the lowest index among equals. */
static void test_pick(void)
{
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 0, 0, 0 }, 3), 0);
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 1, 0, 0 }, 3), 1);
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 1, 1, 0 }, 3), 2);
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 1, 1, 1 }, 3), 0);
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 2, 1, 1 }, 3), 1);
	CHECK_EQ_U64(ssp_cx_pick((unsigned[]){ 5 }, 1), 0);
}

static pthread_barrier_t bar;

struct maker {
	pthread_t t;
	int fd;
	bool hold;              /* wait at the barrier before exiting */
};

static void *make_socket(void *arg)
{
	struct maker *m = arg;

	m->fd = ssp_socket(AF_INET, SOCK_STREAM, 0);
	if (m->hold)
		pthread_barrier_wait(&bar);
	return NULL;
}

/* A non-blocking connect of @fd, answered by the fake on @ctx as
 * connection @slot. */
static void connect_on(int fd, unsigned ctx, uint32_t slot)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9),
				 .sin_addr.s_addr = htonl(0xc6120002) };
	struct ss_shm_cmd cmd;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	unsigned other = 0;

	CHECK(ssp_fcntl(fd, F_SETFL, O_NONBLOCK) == 0);
	CHECK(ssp_connect(fd, (struct sockaddr *)&a, sizeof(a)) == -1 && errno == EINPROGRESS);
	for (unsigned i = 0; i < N_CX; i++)
		if (i != ctx)
			other += fake_cmd_pending(&fk, i);
	CHECK_EQ_U64(other, 0); /* the command went on the socket's context only */
	CHECK_EQ_U64(fake_cmd(&fk, ctx, &cmd), 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_CONNECT);
	fake_ev_open(&fk, ctx, SS_EV_CONNECTED, slot, 1, cmd.cookie);
	CHECK_EQ_U64(ssp_poll(&p, 1, 2000, NULL), 1);
	CHECK_EQ_U64(p.revents, POLLOUT);
	CHECK(ssp_fcntl(fd, F_SETFL, 0) == 0);
}

/* TCP_INFO from the service's record of connection @slot (generation
 * @gen) behind @fd: the engine's state as Linux names it on an open
 * socket, the figures; a record of another generation is not used. */
static void test_tcp_info(int fd, uint32_t slot, uint32_t gen)
{
	struct ss_shm_conn_info *in =
		(struct ss_shm_conn_info *)(void *)(fk.region + fk.hdr->info_off) + slot;
	static const struct { uint8_t engine, linux_state; } map[] = {
		{ 2, TCP_SYN_RECV }, { 3, TCP_ESTABLISHED }, { 4, TCP_FIN_WAIT1 },
		{ 5, TCP_FIN_WAIT2 }, { 6, TCP_CLOSING }, { 7, TCP_CLOSE },
		{ 8, TCP_CLOSE_WAIT }, { 9, TCP_LAST_ACK }, { 0, TCP_CLOSE },
	};
	struct tcp_info ti;
	socklen_t len;

	memset(in, 0, sizeof(*in));
	in->gen = gen;
	in->snd_mss = in->rcv_mss = 1000;
	in->srtt_us = 1234;
	in->rttvar_us = 321;
	in->snd_cwnd = 10000;
	in->unacked = 5000;
	in->lost = 2000;
	in->retrans = 1000;
	in->sacked = 1500;
	in->pmtu = 1500;
	in->total_retrans = 7;
	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		in->state = map[i].engine;
		__atomic_store_n(&in->seq, 2 * (i + 1), __ATOMIC_RELEASE);
		len = sizeof(ti);
		memset(&ti, 0xff, sizeof(ti));
		CHECK_EQ_U64(ssp_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
		CHECK_EQ_U64(ti.tcpi_state, map[i].linux_state);
		CHECK_EQ_U64(ti.tcpi_rtt, 1234);
		CHECK_EQ_U64(ti.tcpi_rttvar, 321);
		CHECK_EQ_U64(ti.tcpi_snd_mss, 1000);
		CHECK_EQ_U64(ti.tcpi_rcv_mss, 1000);
		CHECK_EQ_U64(ti.tcpi_snd_cwnd, 10);
		CHECK_EQ_U64(ti.tcpi_unacked, 5);
		CHECK_EQ_U64(ti.tcpi_lost, 2);
		CHECK_EQ_U64(ti.tcpi_retrans, 1);
		CHECK_EQ_U64(ti.tcpi_sacked, 2);
		CHECK_EQ_U64(ti.tcpi_pmtu, 1500);
		CHECK_EQ_U64(ti.tcpi_total_retrans, 7);
		CHECK_EQ_U64(ti.tcpi_last_data_recv, 0); /* never */
	}
	/* Another generation's record (the slot's earlier connection): the
	 * state from the events, no figures from it. */
	in->state = 6;
	in->gen = gen + 1;
	__atomic_store_n(&in->seq, 100, __ATOMIC_RELEASE);
	len = sizeof(ti);
	CHECK_EQ_U64(ssp_getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
	CHECK_EQ_U64(ti.tcpi_state, TCP_ESTABLISHED);
	CHECK_EQ_U64(ti.tcpi_rtt, 0);
	memset(in, 0, sizeof(*in));
}

/* MSG_OOB (urgent data) is refused with EOPNOTSUPP, and nothing is sent
 * or taken: no command goes out. */
static void test_msg_oob(int fd, unsigned ctx)
{
	char c = 'x';
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	errno = 0;
	CHECK_EQ_U64(ssp_send(fd, &c, 1, MSG_OOB), (uint64_t)-1);
	CHECK_EQ_U64(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ_U64(ssp_recv(fd, &c, 1, MSG_OOB | MSG_DONTWAIT, NULL, NULL), (uint64_t)-1);
	CHECK_EQ_U64(errno, EOPNOTSUPP);
	errno = 0;
	CHECK_EQ_U64(ssp_sendmsg(fd, &m, MSG_OOB | MSG_NOSIGNAL), (uint64_t)-1);
	CHECK_EQ_U64(errno, EOPNOTSUPP);
	CHECK_EQ_U64(c, 'x');
	CHECK_EQ_U64(fake_cmd_pending(&fk, ctx), 0);
}

/* The main thread's first socket takes context 0; two threads alive at
 * once take 1 and 2; once they exited, the next thread takes 1 again. */
static int test_assign(int *fds)
{
	struct maker a = { .hold = true }, b = { .hold = true }, c = { 0 };

	fds[0] = ssp_socket(AF_INET, SOCK_STREAM, 0);
	fake_join(&fk);
	CHECK(fds[0] >= 0);
	if (fds[0] < 0)
		return -1;
	CHECK_EQ_U64(ssp.n_cx, N_CX);
	CHECK_EQ_U64(cx_of(fds[0]), 0);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&a.t, NULL, make_socket, &a);
	pthread_create(&b.t, NULL, make_socket, &b);
	pthread_join(a.t, NULL);
	pthread_join(b.t, NULL);
	pthread_barrier_destroy(&bar);
	CHECK(a.fd >= 0 && b.fd >= 0);
	CHECK((cx_of(a.fd) == 1 && cx_of(b.fd) == 2) || (cx_of(a.fd) == 2 && cx_of(b.fd) == 1));
	pthread_create(&c.t, NULL, make_socket, &c);
	pthread_join(c.t, NULL);
	CHECK_EQ_U64(cx_of(c.fd), 1); /* the exited threads gave theirs back */
	CHECK(ssp_fd_sock(c.fd) != NULL);
	fds[1] = cx_of(a.fd) == 1 ? a.fd : b.fd;
	fds[2] = cx_of(a.fd) == 1 ? b.fd : a.fd;
	ssp_close(c.fd);
	return 0;
}

struct reader {
	pthread_t t;
	int fd;
	ssize_t n;
	char buf[16];
};

static void *read_one(void *arg)
{
	struct reader *r = arg;

	r->n = ssp_recv(r->fd, r->buf, sizeof(r->buf), 0, NULL, NULL);
	return NULL;
}

/* Two threads block in recv() on sockets of two contexts; data for one
 * wakes only that one, whichever thread pumps. */
static void test_block_across(const int *fds)
{
	struct reader r1 = { .fd = fds[1] }, r2 = { .fd = fds[2] };

	pthread_create(&r1.t, NULL, read_one, &r1);
	pthread_create(&r2.t, NULL, read_one, &r2);
	usleep(50000);
	fake_rx(&fk, 2, 1, 1, 0, "two", 3);
	pthread_join(r2.t, NULL);
	CHECK_EQ_U64(r2.n, 3);
	CHECK(memcmp(r2.buf, "two", 3) == 0);
	fake_rx(&fk, 1, 0, 1, 0, "one!", 4);
	pthread_join(r1.t, NULL);
	CHECK_EQ_U64(r1.n, 4);
	CHECK(memcmp(r1.buf, "one!", 4) == 0);
}

struct pusher {
	pthread_t t;
	unsigned ctx;
	uint32_t slot, pos;
};

static void *push_later(void *arg)
{
	struct pusher *p = arg;

	usleep(50000);
	fake_rx(&fk, p->ctx, p->slot, 1, p->pos, "xy", 2);
	return NULL;
}

/* poll and epoll_wait on sockets of two contexts sleep until either
 * context's service event. */
static void test_wait_across(const int *fds)
{
	struct pollfd p[2] = { { .fd = fds[1], .events = POLLIN },
			       { .fd = fds[2], .events = POLLIN } };
	struct pusher ps = { .ctx = 2, .slot = 1, .pos = 3 };
	struct epoll_event ev[2];
	char buf[8];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	pthread_create(&ps.t, NULL, push_later, &ps);
	CHECK_EQ_U64(ssp_poll(p, 2, 2000, NULL), 1);
	CHECK_EQ_U64(p[0].revents, 0);
	CHECK_EQ_U64(p[1].revents, POLLIN);
	pthread_join(ps.t, NULL);
	CHECK_EQ_U64(ssp_recv(fds[2], buf, sizeof(buf), 0, NULL, NULL), 2);

	CHECK(ep >= 0);
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 1 };
	CHECK(ssp_epoll_ctl(ep, EPOLL_CTL_ADD, fds[1], &ev[0]) == 0);
	ev[0] = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 2 };
	CHECK(ssp_epoll_ctl(ep, EPOLL_CTL_ADD, fds[2], &ev[0]) == 0);
	CHECK_EQ_U64(ssp_epoll_wait(ep, ev, 2, 0, NULL), 0);
	ps = (struct pusher){ .ctx = 1, .slot = 0, .pos = 4 };
	pthread_create(&ps.t, NULL, push_later, &ps);
	CHECK_EQ_U64(ssp_epoll_wait(ep, ev, 2, 2000, NULL), 1);
	CHECK_EQ_U64(ev[0].data.u64, 1);
	pthread_join(ps.t, NULL);
	CHECK_EQ_U64(ssp_recv(fds[1], buf, sizeof(buf), 0, NULL, NULL), 2);
	ssp_close(ep);
}

/*
 * Two threads, each asleep in an epoll set of its own that holds the same
 * two sockets of two contexts (the shape of haproxy's threads), while
 * the "service" streams small chunks to both contexts at random moments:
 * every byte must be read, and no chunk may wait for a reader's timeout
 * (a lost wake-up: e.g. a poller disarmed by another thread's pump whose
 * kick is swallowed).
 */
#define STRESS_CHUNKS 10000
#define STRESS_READERS 4
#define STRESS_CHUNK 512 /* at most 8 events in flight per context: the fake's rings hold 64 */
#define STRESS_STALL_MS 1000

static int stress_fds[2];
static int stress_efd;           /* kernel eventfd: readable when the readers stop */
static uint32_t stress_read[2];  /* bytes read from each socket (atomic) */
static int stress_stop;

static void *stress_reader(void *arg)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	char buf[4096];

	(void)arg;
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

		ssp_epoll_ctl(ep, EPOLL_CTL_ADD, stress_fds[i], &ev);
	}
	ssp_epoll_ctl(ep, EPOLL_CTL_ADD, stress_efd,
		      &(struct epoll_event){ .events = EPOLLIN, .data.u32 = 2 });
	while (!__atomic_load_n(&stress_stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event ev[2];
		int n = ssp_epoll_wait(ep, ev, 2, 5000, NULL);

		for (int k = 0; k < n; k++) {
			unsigned i = ev[k].data.u32;
			ssize_t r;

			if (i == 2)
				continue; /* stop: see the loop's condition */
			r = ssp_recv(stress_fds[i], buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL);

			if (r > 0)
				__atomic_add_fetch(&stress_read[i], (uint32_t)r, __ATOMIC_RELEASE);
		}
	}
	ssp_close(ep);
	return NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_wake_stress(const int *fds, const uint32_t *pos)
{
	pthread_t t[STRESS_READERS];
	uint32_t sent[2] = { 0, 0 }, seed = 12345;
	char chunk[STRESS_CHUNK];
	struct ss_shm_cmd cmd;
	bool stalled = false;
	uint64_t since_end;

	memset(chunk, 'z', sizeof(chunk));
	stress_efd = eventfd(0, EFD_CLOEXEC);
	stress_fds[0] = fds[1];
	stress_fds[1] = fds[2];
	stress_read[0] = stress_read[1] = 0;
	stress_stop = 0;
	for (int i = 0; i < STRESS_READERS; i++)
		pthread_create(&t[i], NULL, stress_reader, NULL);
	usleep(20000);
	for (unsigned c = 0; c < STRESS_CHUNKS && !stalled; c++) {
		unsigned i = (seed = seed * 1103515245u + 12345u) >> 16 & 1;
		uint64_t since = now_ms();

		/* Room in the 4 KB receive ring: wait for the readers. */
		while (sent[i] - __atomic_load_n(&stress_read[i], __ATOMIC_ACQUIRE) >
		       4096 - STRESS_CHUNK) {
			if (now_ms() - since > STRESS_STALL_MS) {
				stalled = true;
				break;
			}
			usleep(50);
		}
		if (stalled)
			break;
		fake_rx(&fk, i + 1, i, 1, pos[i] + sent[i], chunk, STRESS_CHUNK);
		sent[i] += STRESS_CHUNK;
		while (fake_cmd(&fk, 1, &cmd) || fake_cmd(&fk, 2, &cmd))
			; /* RX_DONE counts: keep the command rings moving */
		if ((seed >> 8 & 7) == 0)
			usleep(seed >> 12 & 255);
	}
	for (uint64_t since = now_ms(); !stalled &&
	     (__atomic_load_n(&stress_read[0], __ATOMIC_ACQUIRE) != sent[0] ||
	      __atomic_load_n(&stress_read[1], __ATOMIC_ACQUIRE) != sent[1]);)
		if (now_ms() - since > STRESS_STALL_MS)
			stalled = true;
		else
			usleep(100);
	since_end = now_ms();
	CHECK(!stalled);
	if (stalled)
		fprintf(stderr, "test_wake_stress: stalled: sent %u/%u, read %u/%u\n", sent[0],
			sent[1], stress_read[0], stress_read[1]);
	/* A kernel fd in both sets stops the readers at once. */
	__atomic_store_n(&stress_stop, 1, __ATOMIC_RELEASE);
	CHECK(write(stress_efd, &(uint64_t){ 1 }, sizeof(uint64_t)) == sizeof(uint64_t));
	for (int i = 0; i < STRESS_READERS; i++)
		pthread_join(t[i], NULL);
	CHECK(now_ms() - since_end < 1000);
	close(stress_efd);
}

/* A waiter as a blocked thread has one, driven by hand below. */
static struct ssp_waiter *raw_waiter(uint8_t kind, struct ssp_sock *s)
{
	struct ssp_waiter *w = calloc(1, sizeof(*w));

	if (!w)
		abort();
	for (unsigned i = 0; i < SSP_MAX_CX; i++)
		ss_list_init(&w->link[i]);
	ss_list_init(&w->in_ep);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(w->efd >= 0);
	w->kind = kind;
	w->sock = s;
	return w;
}

static void raw_waiter_free(struct ssp_waiter *w)
{
	close(w->efd);
	free(w);
}

/* Was @w kicked since it last drained?  (Drains it.) */
static bool kicked(struct ssp_waiter *w)
{
	struct pollfd p = { .fd = w->efd, .events = POLLIN };
	bool k = poll(&p, 1, 0) == 1;

	ssp_waiter_drain(w);
	return k;
}

/* A command error the layer ignores: an event that is no one socket's. */
static void post_broad(unsigned ctx)
{
	struct ss_shm_ev e = { .type = SS_EV_CMD_ERROR, .arg = SS_CMD_RELEASE, .error = EBADF };

	CHECK(fake_ev(&fk, ctx, &e) == 0);
	fake_publish(&fk, ctx);
}

/*
 * Who a pump wakes (cx.c), with four waiters on context 1: P, asleep in
 * epoll_wait and the poller; A, blocked in a call on the socket of
 * fds[1]; B, asleep in epoll_wait on a set without it; C, in poll().
 * Data for the socket wakes A and C only, and P sleeps on, still armed,
 * without its eventfd left readable; an event that is no one socket's
 * wakes all.  When P leaves, releasing the lock kicks one waiter (the
 * oldest, once) to take the role; a poller that comes back within the
 * same hold of the lock kicks nobody.  Reads 2 bytes of slot 0 at @pos.
 */
static void test_wake_rules(const int *fds, uint32_t pos)
{
	struct ssp_cx *c1 = &ssp.cx[1];
	struct ssp_sock *s1 = ssp_fd_sock(fds[1]);
	struct ssp_waiter *wp = raw_waiter(SSP_WK_EP, NULL), *wa = raw_waiter(SSP_WK_SOCK, s1);
	struct ssp_waiter *wb = raw_waiter(SSP_WK_EP, NULL), *wc = raw_waiter(SSP_WK_ALL, NULL);
	struct pollfd ep = { .fd = c1->evfd, .events = POLLIN };
	char buf[8];

	CHECK(s1 != NULL && s1->cx == c1);
	if (!s1)
		return;
	ssp_cx_lock(c1);
	CHECK_EQ_U64(ssp_wait_begin(wp, c1), 1);
	CHECK_EQ_U64(ssp_wait_begin(wa, c1), 0);
	__atomic_add_fetch(&s1->n_blocked, 1, __ATOMIC_RELAXED);
	CHECK_EQ_U64(ssp_wait_begin(wb, c1), 0);
	CHECK_EQ_U64(ssp_wait_begin(wc, c1), 0);
	ssp_unlock();
	CHECK(!kicked(wp) && !kicked(wa) && !kicked(wb) && !kicked(wc));

	fake_rx(&fk, 1, 0, 1, pos, "ab", 2);
	CHECK_EQ_U64(poll(&ep, 1, 0), 1); /* the service signalled P */
	ssp_cx_lock(c1);
	ssp_cx_pump(c1);
	CHECK(c1->ctx->armed);
	CHECK(__atomic_load_n(&c1->ctx->arx.r->sleeping, __ATOMIC_RELAXED));
	ssp_unlock();
	CHECK_EQ_U64(poll(&ep, 1, 0), 0); /* taken with the events */
	CHECK(!kicked(wp));
	CHECK(kicked(wa));
	CHECK(!kicked(wb));
	CHECK(kicked(wc));

	post_broad(1);
	ssp_cx_lock(c1);
	ssp_cx_pump(c1);
	ssp_unlock();
	CHECK(kicked(wp) && kicked(wa) && kicked(wb) && kicked(wc));

	/* P leaves: one waiter is kicked to take over, once. */
	ssp_cx_lock(c1);
	ssp_wait_end(wp, c1);
	CHECK(c1->poller == NULL);
	CHECK(!kicked(wa));
	ssp_unlock();
	CHECK(kicked(wa));
	CHECK(!kicked(wb) && !kicked(wc));
	ssp_cx_lock(c1);
	ssp_unlock();
	CHECK(!kicked(wa)); /* it is on its way */
	/* A takes the role, and keeps it across a pass. */
	ssp_cx_lock(c1);
	ssp_wait_end(wa, c1);
	CHECK_EQ_U64(ssp_wait_begin(wa, c1), 1);
	ssp_unlock();
	ssp_cx_lock(c1);
	ssp_wait_end(wa, c1);
	CHECK_EQ_U64(ssp_wait_begin(wa, c1), 1);
	ssp_unlock();
	CHECK(!kicked(wa) && !kicked(wb) && !kicked(wc));

	ssp_cx_lock(c1);
	ssp_wait_end(wa, c1);
	__atomic_sub_fetch(&s1->n_blocked, 1, __ATOMIC_RELAXED);
	ssp_wait_end(wb, c1);
	ssp_wait_end(wc, c1);
	ssp_unlock();
	CHECK(c1->poller == NULL && ss_list_empty(&c1->waiters));
	CHECK_EQ_U64(ssp_recv(fds[1], buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 2);
	raw_waiter_free(wp);
	raw_waiter_free(wa);
	raw_waiter_free(wb);
	raw_waiter_free(wc);
}

struct ep_sleeper {
	pthread_t t;
	int ep;
	int n;                  /* epoll_wait's result */
	uint64_t data;
	int done;               /* (atomic) */
};

static void *ep_sleep(void *arg)
{
	struct ep_sleeper *z = arg;
	struct epoll_event ev;

	z->n = ssp_epoll_wait(z->ep, &ev, 1, 3000, NULL);
	z->data = ev.data.u64;
	__atomic_store_n(&z->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t ep_kmask(int ep)
{
	struct ssp_file *f = ssp_fd_get(ep);

	return f && f->type == SSP_F_EPOLL ? SS_CONTAINER_OF(f, struct ssp_ep, f)->kmask : 0;
}

static struct ssp_ep *ep_of(int ep)
{
	return SS_CONTAINER_OF(ssp_fd_get(ep), struct ssp_ep, f);
}

/* Until @z's thread is asleep on its set as the poller of context 1 (the
 * context's eventfd in its kernel set): at most 2 s. */
static bool ep_polls(struct ep_sleeper *z)
{
	for (int i = 0; i < 2000; i++) {
		struct ssp_waiter *p = __atomic_load_n(&ssp.cx[1].poller, __ATOMIC_ACQUIRE);

		if (p && __atomic_load_n(&p->sleep_ep, __ATOMIC_ACQUIRE) == ep_of(z->ep) &&
		    (ep_kmask(z->ep) & 2))
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * Two threads asleep in epoll_wait on sets of their own, each with a
 * socket of context 1 (memcached's workers with connections the acceptor
 * accepted): only the poller's set watches the context's eventfd.  The
 * thread that sleeps last takes the role from the other without waking
 * it; data for its own socket wakes it alone, and as it leaves it hands
 * the role back to the one still asleep, again without waking it, whose
 * data then wakes it.
 */
static void test_poller_moves(int fd_a, int fd_b, uint32_t pos_a, uint32_t pos_b,
			      uint32_t slot_a, uint32_t slot_b)
{
	struct ep_sleeper a = { .ep = epoll_create1(EPOLL_CLOEXEC) };
	struct ep_sleeper b = { .ep = epoll_create1(EPOLL_CLOEXEC) };
	struct ssp_cx *c1 = &ssp.cx[1];
	char buf[8];

	CHECK(a.ep >= 0 && b.ep >= 0);
	CHECK(ssp_epoll_ctl(a.ep, EPOLL_CTL_ADD, fd_a,
			    &(struct epoll_event){ .events = EPOLLIN, .data.u64 = 0xa }) == 0);
	CHECK(ssp_epoll_ctl(b.ep, EPOLL_CTL_ADD, fd_b,
			    &(struct epoll_event){ .events = EPOLLIN, .data.u64 = 0xb }) == 0);
	CHECK(__atomic_load_n(&c1->n_sets, __ATOMIC_ACQUIRE) >= 2);

	pthread_create(&a.t, NULL, ep_sleep, &a);
	CHECK(ep_polls(&a));                    /* A: the poller */
	pthread_create(&b.t, NULL, ep_sleep, &b);
	CHECK(ep_polls(&b));                    /* B took the role... */
	CHECK(!(ep_kmask(a.ep) & 2));           /* ...and A no longer watches */
	CHECK(!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE));

	fake_rx(&fk, 1, slot_b, 1, pos_b, "bb", 2);
	pthread_join(b.t, NULL);
	CHECK_EQ_U64(b.n, 1);
	CHECK_EQ_U64(b.data, 0xb);
	usleep(20000);
	CHECK(!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE)); /* A slept through */
	CHECK(ep_polls(&a));                    /* and is the poller again */

	fake_rx(&fk, 1, slot_a, 1, pos_a, "aa", 2);
	pthread_join(a.t, NULL);
	CHECK_EQ_U64(a.n, 1);
	CHECK_EQ_U64(a.data, 0xa);
	CHECK_EQ_U64(ssp_recv(fd_a, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 2);
	CHECK_EQ_U64(ssp_recv(fd_b, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 2);
	ssp_close(a.ep);
	ssp_close(b.ep);
}

/*
 * The interleaving that lost haproxy's wake-ups, replayed with the
 * primitives of cx.c: W sleeps on contexts 1 and 2, the poller of both.
 * Woken, it starts a pass: context 1 taken off and W registered again
 * (poller, armed); then another thread's pump of context 1 takes an
 * event that W must look at and kicks W (the arming stays: only the
 * poller disarms); then W's pass goes on to context 2.  The kick must
 * still be pending when the pass ends, so W's next sleep ends at once and
 * it looks again: a pass must not consume W's eventfd midway.
 */
static void test_kick_survives_pass(void)
{
	struct ssp_waiter *w = raw_waiter(SSP_WK_ALL, NULL);
	struct ssp_cx *c1 = &ssp.cx[1], *c2 = &ssp.cx[2];
	struct pollfd p;

	ssp_cx_lock(c1);
	CHECK_EQ_U64(ssp_wait_begin(w, c1), 1);
	ssp_unlock();
	ssp_cx_lock(c2);
	CHECK_EQ_U64(ssp_wait_begin(w, c2), 1);
	ssp_unlock();

	/* W wakes: the pass (its eventfd read once, before). */
	ssp_waiter_drain(w);
	ssp_cx_lock(c1);
	ssp_wait_end(w, c1);
	CHECK_EQ_U64(ssp_wait_begin(w, c1), 1);
	ssp_unlock();
	/* Another thread pumps context 1: W is kicked, its arming stays. */
	post_broad(1);
	ssp_cx_lock(c1);
	ssp_cx_pump(c1);
	CHECK(c1->ctx->armed);
	ssp_unlock();
	/* W's pass goes on. */
	ssp_cx_lock(c2);
	ssp_wait_end(w, c2);
	CHECK_EQ_U64(ssp_wait_begin(w, c2), 1);
	ssp_unlock();
	p = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	CHECK_EQ_U64(poll(&p, 1, 0), 1); /* the kick is still there */

	/* W's next pass re-arms context 1. */
	ssp_waiter_drain(w);
	ssp_cx_lock(c1);
	ssp_wait_end(w, c1);
	CHECK_EQ_U64(ssp_wait_begin(w, c1), 1);
	CHECK(c1->ctx->armed);
	ssp_wait_end(w, c1);
	ssp_unlock();
	ssp_cx_lock(c2);
	ssp_wait_end(w, c2);
	ssp_unlock();
	raw_waiter_free(w);
}

/* A: recv() on @fd as the shim makes it (a cancellation point). */
static void *read_cancellable(void *arg)
{
	struct reader *r = arg;

	ssp_call_enter(true);
	r->n = ssp_recv(r->fd, r->buf, sizeof(r->buf), 0, NULL, NULL);
	ssp_call_leave();
	return NULL;
}

/* Threads on context 1's waiter list (its lock taken for the look). */
static unsigned cx_waiters(struct ssp_cx *cx, struct ssp_waiter **poller)
{
	unsigned n = 0;

	ssp_cx_lock(cx);
	for (struct ss_list *l = cx->waiters.next; l != &cx->waiters; l = l->next)
		n++;
	*poller = cx->poller;
	ssp_unlock();
	return n;
}

/*
 * pthread_cancel of a thread blocked in recv() while it is the poller of
 * its context, another thread blocked there too: the cancelled one leaves
 * the waiter list, the role goes to the other (kicked), the socket it
 * held is let go, and the other is woken by the next event.  @fd_a,
 * @fd_b: sockets of context 1, @fd_b's connection slot 0 at @pos_b.
 */
static void test_cancel(int fd_a, int fd_b, uint32_t pos_b)
{
	struct reader a = { .fd = fd_a, .n = -2 }, b = { .fd = fd_b, .n = -2 };
	struct ssp_cx *c1 = &ssp.cx[1];
	struct ssp_sock *sa = ssp_fd_sock(fd_a);
	struct ssp_waiter *p = NULL;
	void *ret = NULL;
	unsigned n = 0;

	CHECK(sa != NULL);
	pthread_create(&a.t, NULL, read_cancellable, &a);
	for (int i = 0; i < 200 && cx_waiters(c1, &p) < 1; i++)
		usleep(5000);
	CHECK(p != NULL); /* A: the poller */
	pthread_create(&b.t, NULL, read_one, &b);
	for (int i = 0; i < 200 && (n = cx_waiters(c1, &p)) < 2; i++)
		usleep(5000);
	CHECK_EQ_U64(n, 2);
	CHECK(pthread_cancel(a.t) == 0);
	pthread_join(a.t, &ret);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ_U64(a.n, -2);
	usleep(20000); /* B takes the role it was kicked for */
	CHECK_EQ_U64(cx_waiters(c1, &p), 1);
	CHECK(p != NULL && p->kind == SSP_WK_SOCK && p->sock == ssp_fd_sock(fd_b));
	ssp_cx_lock(c1);
	CHECK_EQ_U64(sa->hold, 0);
	CHECK_EQ_U64(__atomic_load_n(&sa->n_blocked, __ATOMIC_RELAXED), 0);
	ssp_unlock();
	fake_rx(&fk, 1, 0, 1, pos_b, "cc", 2);
	pthread_join(b.t, NULL);
	CHECK_EQ_U64(b.n, 2);
	CHECK(memcmp(b.buf, "cc", 2) == 0);
	CHECK_EQ_U64(cx_waiters(c1, &p), 0);
	CHECK(p == NULL);
}

struct owner_thread {
	pthread_t t;
	int ep, n, efd;
};

/* One sleep of 20 ms on the set, then the thread exits normally. */
static void *ep_sleep_exit(void *arg)
{
	struct owner_thread *o = arg;
	struct epoll_event ev;
	struct ssp_waiter *w;

	o->n = ssp_epoll_wait(o->ep, &ev, 1, 20, NULL);
	w = ssp_waiter_self();
	o->efd = w ? w->efd : -1;
	return NULL;
}

/*
 * A thread sleeps on a set holding @fd (a connected socket with nothing
 * to read) alone, so the set keeps its eventfd in the kernel set between
 * sleeps, and exits normally: its eventfd is closed, and the number goes
 * to a pipe of the program, registered in the same set.  Another thread
 * sleeping there later must not take that number out of the kernel set
 * for the dead thread's eventfd: the pipe's registration stays, and its
 * data is reported.
 */
static void test_owner_exits(int fd)
{
	struct owner_thread a = { .ep = epoll_create1(EPOLL_CLOEXEC), .n = -2, .efd = -1 };
	struct owner_thread b = { .ep = a.ep, .n = -2, .efd = -1 };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x51 };
	int p[2] = { -1, -1 };
	char c;

	CHECK(a.ep >= 0);
	CHECK(ssp_epoll_ctl(a.ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	pthread_create(&a.t, NULL, ep_sleep_exit, &a);
	pthread_join(a.t, NULL);
	CHECK_EQ_U64(a.n, 0);
	CHECK(a.efd >= 0);
	CHECK_EQ_U64(fcntl(a.efd, F_GETFD), (uint64_t)-1); /* closed at its exit */
	CHECK_EQ_U64(errno, EBADF);
	/* The number now names the program's pipe, in the same set. */
	CHECK(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
	if (p[0] != a.efd) {
		CHECK(dup3(p[0], a.efd, O_CLOEXEC) == a.efd);
		close(p[0]);
		p[0] = a.efd;
	}
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 0x77 };
	CHECK(ssp_epoll_ctl(a.ep, EPOLL_CTL_ADD, p[0], &ev) == 0);

	pthread_create(&b.t, NULL, ep_sleep_exit, &b);
	pthread_join(b.t, NULL);
	CHECK_EQ_U64(b.n, 0);
	/* Still registered: reported, and EEXIST for another ADD. */
	CHECK(write(p[1], "p", 1) == 1);
	ev.data.u64 = 0;
	CHECK_EQ_U64(ssp_epoll_wait(a.ep, &ev, 1, 1000, NULL), 1);
	CHECK_EQ_U64(ev.data.u64, 0x77);
	CHECK(read(p[0], &c, 1) == 1);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 0x77 };
	CHECK_EQ_U64(ssp_epoll_ctl(a.ep, EPOLL_CTL_ADD, p[0], &ev), (uint64_t)-1);
	CHECK_EQ_U64(errno, EEXIST);
	ssp_close(a.ep);
	close(p[0]);
	close(p[1]);
}

/*
 * Numbers of one epoll set (dup, dup3 onto a chosen number, F_DUPFD) map
 * to one object; closing some leaves it to the others, which still see
 * the socket's data; the last one gives it back to the pool (the next
 * set made reuses it).  @fd: a connected socket of context 1, its
 * connection @slot at stream position @pos.
 */
static void test_ep_dup(int fd, uint32_t slot, uint32_t pos)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), d, d2, d3, again;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0xd0 };
	struct ssp_file *obj;
	struct ss_shm_cmd cmd;
	char buf[4];

	CHECK(ep >= 0);
	CHECK(ssp_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	obj = ssp_fd_get(ep);
	CHECK(obj != NULL && obj->type == SSP_F_EPOLL);
	d = ssp_dup(ep, 0, 0, false);
	d2 = ssp_dup(ep, 200, O_CLOEXEC, true);
	d3 = ssp_dup(d, 100, O_CLOEXEC, false);
	CHECK(d >= 0 && d != ep);
	CHECK_EQ_U64(d2, 200);
	CHECK(d3 >= 100 && d3 != 200);
	CHECK(ssp_fd_get(d) == obj && ssp_fd_get(d2) == obj && ssp_fd_get(d3) == obj);
	CHECK_EQ_U64(fcntl(d2, F_GETFD), FD_CLOEXEC);
	CHECK_EQ_U64(fcntl(d, F_GETFD), 0);
	CHECK_EQ_U64(ssp_close(ep), 0);
	CHECK(ssp_fd_get(ep) == NULL);
	CHECK_EQ_U64(ssp_close(d3), 0);
	fake_rx(&fk, 1, slot, 1, pos, "ok", 2);
	CHECK_EQ_U64(ssp_epoll_wait(d2, &ev, 1, 1000, NULL), 1);
	CHECK_EQ_U64(ev.data.u64, 0xd0);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = 0xd1 };
	CHECK_EQ_U64(ssp_epoll_ctl(d, EPOLL_CTL_ADD, fd, &ev), (uint64_t)-1);
	CHECK_EQ_U64(errno, EEXIST);
	CHECK_EQ_U64(ssp_close(d2), 0);
	CHECK(ssp_fd_get(d) == obj);
	CHECK_EQ_U64(ssp_epoll_wait(d, &ev, 1, 1000, NULL), 1);
	CHECK_EQ_U64(ev.data.u64, 0xd0);
	CHECK_EQ_U64(ssp_close(d), 0);
	CHECK(ssp_fd_get(d) == NULL);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 2);
	CHECK(memcmp(buf, "ok", 2) == 0);
	/* Gone with its last number: the next set is the same object. */
	again = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ssp_epoll_ctl(again, EPOLL_CTL_ADD, fd, &ev) == 0);
	CHECK(ssp_fd_get(again) == obj);
	ssp_close(again);
	while (fake_cmd(&fk, 1, &cmd))
		; /* what was posted (the read's release waits: test_recv_done_deferred) */
}

/*
 * Copies of a set made before it held any socket (dup, dup2 onto a
 * chosen number, F_DUPFD straight through libc: the layer did not know
 * the set then) become numbers of the same object when a socket is
 * added through one of them; another set and other fds do not.  @fd: a
 * connected socket of context 1, its connection @slot at position @pos.
 */
static void test_ep_dup_early(int fd, uint32_t slot, uint32_t pos)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), other = epoll_create1(0), p[2], d, d2, d3;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0xe0 };
	struct ssp_file *obj;
	struct ss_shm_cmd cmd;
	char buf[4];

	CHECK(ep >= 0 && other >= 0 && pipe(p) == 0);
	d = dup(ep);
	d2 = dup2(ep, 210);
	d3 = fcntl(ep, F_DUPFD_CLOEXEC, 100);
	CHECK(d >= 0 && d2 == 210 && d3 >= 100);
	CHECK(ssp_fd_get(ep) == NULL && ssp_fd_get(d) == NULL);
	CHECK(ssp_epoll_ctl(d2, EPOLL_CTL_ADD, fd, &ev) == 0);
	obj = ssp_fd_get(d2);
	CHECK(obj != NULL && obj->type == SSP_F_EPOLL);
	CHECK(ssp_fd_get(ep) == obj && ssp_fd_get(d) == obj && ssp_fd_get(d3) == obj);
	CHECK(ssp_fd_get(other) == NULL && ssp_fd_get(p[0]) == NULL && ssp_fd_get(p[1]) == NULL);
	ev.data.u64 = 0xe1;
	CHECK_EQ_U64(ssp_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), (uint64_t)-1);
	CHECK_EQ_U64(errno, EEXIST);
	fake_rx(&fk, 1, slot, 1, pos, "ek", 2);
	CHECK_EQ_U64(ssp_epoll_wait(d3, &ev, 1, 1000, NULL), 1);
	CHECK_EQ_U64(ev.data.u64, 0xe0);
	/* Closing all but one leaves the set to it; the last takes it. */
	CHECK_EQ_U64(ssp_close(d2), 0);
	CHECK_EQ_U64(ssp_close(ep), 0);
	CHECK_EQ_U64(ssp_close(d3), 0);
	CHECK(ssp_fd_get(d) == obj);
	CHECK_EQ_U64(ssp_epoll_wait(d, &ev, 1, 1000, NULL), 1);
	CHECK_EQ_U64(ev.data.u64, 0xe0);
	CHECK_EQ_U64(ssp_close(d), 0);
	CHECK(ssp_fd_get(d) == NULL);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 2);
	CHECK(memcmp(buf, "ek", 2) == 0);
	close(other);
	close(p[0]);
	close(p[1]);
	while (fake_cmd(&fk, 1, &cmd))
		; /* the RX_DONE */
}

/* The layer's calls of pthread_setcancelstate in this thread: the layer
 * (linked in statically) binds to this definition. */
static __thread unsigned cancelstate_calls;

int pthread_setcancelstate(int state, int *old)
{
	static int (*real)(int, int *);

	if (!real) {
		void *p = dlsym(RTLD_NEXT, "pthread_setcancelstate");

		memcpy(&real, &p, sizeof(p));
	}
	cancelstate_calls++;
	return real(state, old);
}

/* A cancellation is pending when the thread calls in: a call that is no
 * cancellation point runs through, the next one that is acts at entry. */
static int cancel_reached;

static void *cancel_pending(void *arg)
{
	int fd = *(const int *)arg, v = -1;
	socklen_t len = sizeof(v);
	char buf[4];

	pthread_cancel(pthread_self());
	ssp_call_enter(false);
	CHECK(ssp_getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len) == 0);
	ssp_call_leave();
	CHECK_EQ_U64(v, 0);
	cancel_reached = 1;
	ssp_call_enter(true);
	ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL);
	ssp_call_leave();
	cancel_reached = 2;
	return NULL;
}

/*
 * Calls that neither sleep nor take a rare path (a recv that finds
 * nothing or finds data, a send into the ring, getsockopt, fcntl,
 * epoll_ctl, epoll_wait and poll that find what they look for at once)
 * make no pthread_setcancelstate call (posix.h, "Cancellation"); one
 * that turns cancellation off gives the thread its state back at the
 * end.  @fd: a connected socket of context 1, its connection @slot at
 * stream position @pos.
 */
static void test_cancel_cost(int fd, uint32_t slot, uint32_t pos)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	struct ss_shm_cmd cmd;
	int ep = epoll_create1(EPOLL_CLOEXEC), v = -1, old = -1;
	socklen_t len = sizeof(v);
	pthread_t t;
	void *ret = NULL;
	char buf[8];

	CHECK(ep >= 0);
	cancelstate_calls = 0;
	ssp_call_enter(true);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), (uint64_t)-1);
	CHECK_EQ_U64(errno, EAGAIN);
	ssp_call_leave();
	fake_rx(&fk, 1, slot, 1, pos, "dd", 2);
	ssp_call_enter(true);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), 0, NULL, NULL), 2);
	ssp_call_leave();
	CHECK(memcmp(buf, "dd", 2) == 0);
	ssp_call_enter(true);
	CHECK_EQ_U64(ssp_send(fd, "ee", 2, 0), 2);
	ssp_call_leave();
	ssp_call_enter(false);
	CHECK(ssp_getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &len) == 0);
	ssp_call_leave();
	CHECK_EQ_U64(v, 0);
	ssp_call_enter(false);
	CHECK_EQ_U64(ssp_fcntl(fd, F_GETFL, 0), O_RDWR);
	ssp_call_leave();
	ssp_call_enter(false);
	CHECK(ssp_epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
	ssp_call_leave();
	ev.events = EPOLLOUT;
	ssp_call_enter(false);
	CHECK(ssp_epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) == 0);
	ssp_call_leave();
	ssp_call_enter(true);
	CHECK_EQ_U64(ssp_epoll_wait(ep, &ev, 1, 1000, NULL), 1);
	ssp_call_leave();
	CHECK_EQ_U64(ev.events, EPOLLOUT);
	CHECK_EQ_U64(ev.data.u64, 7);
	ssp_call_enter(true);
	CHECK_EQ_U64(ssp_poll(&p, 1, 1000, NULL), 1);
	ssp_call_leave();
	CHECK_EQ_U64(p.revents, POLLOUT);
	CHECK_EQ_U64(cancelstate_calls, 0);

	/* Off for the rest of a call, then back as it was. */
	ssp_call_enter(false);
	ssp_nocancel();
	ssp_nocancel();
	ssp_call_leave();
	CHECK_EQ_U64(cancelstate_calls, 2);
	CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
	CHECK_EQ_U64(old, PTHREAD_CANCEL_ENABLE);

	cancel_reached = 0;
	pthread_create(&t, NULL, cancel_pending, &fd);
	pthread_join(t, &ret);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ_U64(cancel_reached, 1);
	CHECK(pthread_mutex_trylock(&ssp.cx[1].lock) == 0); /* nothing left held */
	pthread_mutex_unlock(&ssp.cx[1].lock);

	ssp_close(ep);
	while (fake_cmd(&fk, 1, &cmd))
		; /* the TX and RX_DONE of the calls above */
}

/* The next command on context 1 is an RX_DONE of @n bytes, and the last. */
static void expect_rx_done(uint32_t n)
{
	struct ss_shm_cmd cmd = { 0 };

	CHECK(fake_cmd(&fk, 1, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_RX_DONE);
	CHECK_EQ_U64(cmd.arg, n);
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
}

/*
 * A read's release waits for the next command or sleep (lib/conn.c
 * ss_recv_done_due()): an RPC's reply carries it (one TX with
 * SS_CMDF_RX_DONE), unless it is an eighth of the 4 KiB ring or the bytes
 * the service counts as used are over half of it; a poll that sleeps
 * posts it first.  @fd: a connected socket of context 1, connection @slot
 * (generation 1) at receive position @pos, nothing unreported.
 */
static void test_recv_done_deferred(int fd, uint32_t slot, uint32_t pos)
{
	static uint8_t data[4096], buf[4096];
	struct ss_shm_cmd cmd = { 0 };
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	/* The last test's read is not posted yet: a poll posts it (a poll
	 * of the context's events posts what waits first). */
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
	CHECK_EQ_U64(ssp_poll(&p, 1, 0, NULL), 0);
	expect_rx_done(2);
	/* A request: read, nothing posted; the reply carries the release. */
	fake_rx(&fk, 1, slot, 1, pos, data, 64);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 64);
	CHECK(memcmp(buf, data, 64) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
	CHECK_EQ_U64(ssp_send(fd, buf, 64, 0), 64);
	CHECK(fake_cmd(&fk, 1, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_TX);
	CHECK_EQ_U64(cmd.flags & ~SS_CMDF_TX_HOME, SS_CMDF_RX_DONE);
	CHECK_EQ_U64(cmd.conn, slot);
	CHECK_EQ_U64(cmd.arg, 64);
	CHECK_EQ_U64(cmd.rx_done, 64);
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
	pos += 64;
	/* 512 bytes, an eighth of the ring: posted at once. */
	fake_rx(&fk, 1, slot, 1, pos, data, 512);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 512);
	expect_rx_done(512);
	pos += 512;
	/* 100 of 2100 read: 2000 unread and 100 unreported is over half. */
	fake_rx(&fk, 1, slot, 1, pos, data, 2100);
	CHECK_EQ_U64(ssp_recv(fd, buf, 100, MSG_DONTWAIT, NULL, NULL), 100);
	expect_rx_done(100);
	/* 40 more: 1960 unread and 40 unreported is not: it waits ... */
	CHECK_EQ_U64(ssp_recv(fd, buf, 40, MSG_DONTWAIT, NULL, NULL), 40);
	CHECK(memcmp(buf, data + 100, 40) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
	/* ... and comes with the next read's, once that one is due. */
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 1960);
	CHECK(memcmp(buf, data + 140, 1960) == 0);
	expect_rx_done(2000);
	pos += 2100;
	/* A small read, then a poll that sleeps (nothing to read): posted
	 * before it sleeps. */
	fake_rx(&fk, 1, slot, 1, pos, data, 10);
	CHECK_EQ_U64(ssp_recv(fd, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL), 10);
	CHECK_EQ_U64(fake_cmd_pending(&fk, 1), 0);
	CHECK_EQ_U64(ssp_poll(&p, 1, 20, NULL), 0);
	expect_rx_done(10);
}

int main(void)
{
	int fds[3] = { -1, -1, -1 };

	ssp_real_init();
	test_pick();
	if (fake_start(&fk, &(struct fake_opts){ .contexts = N_CX, .conns = 8, .rxbuf = 4096,
						  .txbuf = 4096, .atx_slots = 64,
						  .arx_slots = 64 }) < 0) {
		CHECK(!"fake service");
		return check_done("test_posix_cx");
	}
	setenv("SLIPSTREAM_SOCK", fk.sock, 1);
	setenv("SLIPSTREAM_CONTEXTS", "4", 1);
	setenv("SLIPSTREAM_CONNS", "8", 1);
	setenv("SLIPSTREAM_BUF", "4096", 1);
	unsetenv("SLIPSTREAM_STRICT");
	if (test_assign(fds) == 0) {
		connect_on(fds[1], 1, 0);
		connect_on(fds[2], 2, 1);
		test_tcp_info(fds[1], 0, 1);
		test_msg_oob(fds[1], 1);
		test_block_across(fds);
		test_wait_across(fds);
		test_kick_survives_pass();
		test_wake_rules(fds, 6);
		{
			/* A second connection on context 1 (slot 2), made by a
			 * thread that takes context 1 as the others did. */
			struct maker m = { 0 };

			struct ss_shm_cmd cmd;

			pthread_create(&m.t, NULL, make_socket, &m);
			pthread_join(m.t, NULL);
			CHECK_EQ_U64(cx_of(m.fd), 1);
			for (unsigned i = 0; i < N_CX; i++)
				while (fake_cmd(&fk, i, &cmd))
					; /* the RX_DONE counts of the reads so far */
			connect_on(m.fd, 1, 2);
			test_poller_moves(fds[1], m.fd, 8, 0, 0, 2);
			test_cancel(m.fd, fds[1], 10);
			test_cancel_cost(m.fd, 2, 2);
			test_owner_exits(fds[2]);
			test_ep_dup(m.fd, 2, 4);
			test_ep_dup_early(m.fd, 2, 6);
			test_recv_done_deferred(m.fd, 2, 8);
			ssp_close(m.fd);
		}
		/* Stream positions so far: slot 0 (fds[1]) 4 + 2 + 2 + 2 + 2, slot 1 3 + 2. */
		test_wake_stress(fds, (const uint32_t[]){ 12, 5 });
	}
	fake_stop(&fk);
	return check_done("test_posix_cx");
}
