/* test_lib_wait.c - ss_wait and ss_ctx_arm: the sleeping flag and eventfd wake-up protocol. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_svc.h"
#include "slipstream.h"

struct waker {
	struct fake_svc *f;
	int saw_sleeping;
};

/* The service side: wait until the application says it sleeps, then
 * publish one event (fake_publish writes the eventfd and clears the flag). */
static void *waker_main(void *arg)
{
	struct waker *w = arg;
	struct ss_shm_ring *arx = fake_arx(w->f, 0);

	for (int i = 0; i < 2000; i++) {
		if (__atomic_load_n(&arx->sleeping, __ATOMIC_ACQUIRE)) {
			w->saw_sleeping = 1;
			break;
		}
		usleep(1000);
	}
	usleep(20000); /* really asleep in poll() by now */
	struct ss_shm_ev e = { .type = SS_EV_LISTEN, .conn = 1, .cookie = 42 };
	fake_ev(w->f, 0, &e);
	fake_publish(w->f, 0);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct fake_svc f;
	struct ss_app *app;
	struct ss_ctx *ctx;
	struct ss_event ev[4];
	struct ss_ctx_stats st;
	struct ss_shm_ring *arx;
	struct waker w;
	pthread_t thr;
	double t0;
	uint64_t v;

	if (fake_start(&f, &(struct fake_opts){ 0 }) < 0)
		return 1;
	app = ss_app_attach(&(struct ss_app_opts){ .sock_path = f.sock, .conns = 8,
						   .rxbuf = 4096, .txbuf = 4096 });
	fake_join(&f);
	CHECK(app != NULL);
	if (!app) {
		fake_stop(&f);
		return check_done("test_lib_wait");
	}
	ctx = ss_ctx_get(app, 0);
	arx = fake_arx(&f, 0);

	/* Nothing pending: 0 at once, and 0 after a short timeout with the
	 * flag cleared again. */
	CHECK_EQ_U64(ss_wait(ctx, 0), 0);
	t0 = now_s();
	CHECK_EQ_U64(ss_wait(ctx, 30), 0);
	CHECK(now_s() - t0 >= 0.025);
	CHECK_EQ_U64(arx->sleeping, 0);

	/* Pending before the call: 1 without sleeping. */
	fake_ev_conn(&f, 0, SS_EV_LISTEN, 1, 0, 0, 0);
	CHECK_EQ_U64(ss_wait(ctx, -1), 1);
	CHECK_EQ_U64(ss_poll(ctx, ev, 4), 1);

	/* Blocked wait woken by the service through the eventfd. */
	w.f = &f;
	w.saw_sleeping = 0;
	pthread_create(&thr, NULL, waker_main, &w);
	t0 = now_s();
	CHECK_EQ_U64(ss_wait(ctx, 5000), 1);
	CHECK(now_s() - t0 < 4.0);
	pthread_join(thr, NULL);
	CHECK(w.saw_sleeping);
	CHECK_EQ_U64(arx->sleeping, 0);
	ss_ctx_stats(ctx, &st);
	CHECK_EQ_U64(st.wakeups, 1);
	CHECK_EQ_U64(ss_poll(ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_LISTENING);
	CHECK_EQ_U64(ev[0].cookie, 42);
	CHECK(read(ss_ctx_fd(ctx), &v, sizeof(v)) == -1); /* drained */
	CHECK_EQ_U64(errno, EAGAIN);

	/* ss_ctx_arm for the application's own epoll. */
	CHECK_EQ_U64(ss_ctx_arm(ctx), 0);
	CHECK_EQ_U64(arx->sleeping, 1);
	struct pollfd pfd = { .fd = ss_ctx_fd(ctx), .events = POLLIN };
	CHECK_EQ_U64(poll(&pfd, 1, 0), 0);
	fake_ev_conn(&f, 0, SS_EV_LISTEN, 2, 0, 0, 0);
	CHECK_EQ_U64(poll(&pfd, 1, 1000), 1);
	CHECK_EQ_U64(ss_poll(ctx, ev, 4), 1);
	CHECK_EQ_U64(arx->sleeping, 0);
	CHECK_EQ_U64(poll(&pfd, 1, 0), 0);       /* ss_poll read the fd */
	/* Armed with an event already there: 1 and not left sleeping. */
	fake_ev_conn(&f, 0, SS_EV_LISTEN, 3, 0, 0, 0);
	CHECK_EQ_U64(ss_ctx_arm(ctx), 1);
	CHECK_EQ_U64(arx->sleeping, 0);
	CHECK_EQ_U64(ss_poll(ctx, ev, 4), 1);

	ss_app_detach(app);
	fake_stop(&f);
	return check_done("test_lib_wait");
}
