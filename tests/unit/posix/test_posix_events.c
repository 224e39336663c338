/* test_posix_events.c - the library's side of the events the POSIX layer relies on for shutdown and fork: FIN_ACKED, MOVED with a kept reference, a hand-back (RETURNED), a reference gone; against a fake service. */
#include <errno.h>

#include "check.h"
#include "fake_svc.h"
#include "lib.h"
#include "slipstream.h"

static struct ss_conn *accept_one(struct fake_app *x, uint32_t slot, uint32_t gen)
{
	struct ss_event ev[4];

	fake_ev_open(&x->f, 0, SS_EV_ACCEPTED, slot, gen, 7);
	CHECK_EQ_U64(ss_poll(x->ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_ACCEPTED);
	return ev[0].conn;
}

/* FIN_ACKED: only after our shutdown, once; nothing for the application,
 * the handle remembers it. */
static void test_fin_acked(void)
{
	struct fake_app x;
	struct ss_event ev[4];

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	struct ss_conn *c = accept_one(&x, 1, 3);
	/* Before we shut down: impossible, dropped. */
	fake_ev_conn(&x.f, 0, SS_EV_FIN_ACKED, 1, 3, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	CHECK(!c->fin_acked);
	CHECK_EQ_U64(ss_shutdown(c), 0);
	fake_ev_conn(&x.f, 0, SS_EV_FIN_ACKED, 1, 3, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK(c->fin_acked);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	/* Twice, or for a stale generation: dropped. */
	fake_ev_conn(&x.f, 0, SS_EV_FIN_ACKED, 1, 3, 0, 0);
	fake_ev_conn(&x.f, 0, SS_EV_FIN_ACKED, 1, 2, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 3);
	/* The peer's FIN still reaches the application. */
	fake_ev_conn(&x.f, 0, SS_EV_PEER_FIN, 1, 3, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_PEER_CLOSED);
	CHECK(c->peer_fin && c->fin_acked);
	fake_app_down(&x);
}

/* MOVED with SS_EVF_HELD names the reference we keep; without, nothing. */
static void test_moved_held(void)
{
	struct fake_app x;
	struct ss_event ev[4];

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	struct ss_conn *c = accept_one(&x, 2, 5);
	struct ss_shm_ev e = { .type = SS_EV_MOVED, .flags = SS_EVF_HELD, .conn = 2, .gen = 5,
			       .arg = 9, .arg2 = 4, .arg3 = 11 };
	fake_ev(&x.f, 0, &e);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_MOVED);
	CHECK(ev[0].conn == c);
	CHECK_EQ_U64(ev[0].bytes, 1);
	CHECK_EQ_U64(ev[0].listener, 9);
	CHECK_EQ_U64(ev[0].cookie, (uint64_t)4 << 32 | 11);
	CHECK_EQ_U64(ev[0].remote_port, 40002);
	c = accept_one(&x, 3, 1);
	fake_ev_conn(&x.f, 0, SS_EV_MOVED, 3, 1, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_MOVED);
	CHECK_EQ_U64(ev[0].bytes, 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

/* RETURNED: an ADOPTED the application did not ask for (bytes 1), with the
 * reference it replaces in cookie and the stream positions applied. */
static void test_returned(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	struct ss_shm_ev e = { .type = SS_EV_RETURNED, .conn = 4, .gen = 2,
			       .cookie = (uint64_t)6 << 32 | 8, .local_ip = 0x0a000001,
			       .remote_ip = 0x0a000002, .local_port = 80, .remote_port = 41000,
			       .rx_off = fake_rx_off(&x.f, 4), .tx_off = fake_tx_off(&x.f, 4),
			       .arg = 100, .arg2 = 350, .arg3 = 1000, .arg4 = 1200,
			       .flags = SS_EVF_SHUT_WR | SS_EVF_FIN_ACKED };
	fake_ev(&x.f, 0, &e);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_ADOPTED);
	CHECK_EQ_U64(ev[0].bytes, 1);
	CHECK_EQ_U64(ev[0].cookie, (uint64_t)6 << 32 | 8);
	CHECK_EQ_U64(ev[0].remote_port, 41000);
	struct ss_conn *c = ev[0].conn;
	CHECK(c != NULL);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 250);
	CHECK_EQ_U64(ss_send_queued(c), 200);
	CHECK(c->shut_wr && c->fin_acked && !c->peer_fin);
	/* Positions that cannot be: dropped. */
	e.conn = 5;
	e.arg2 = e.arg + 4097;
	fake_ev(&x.f, 0, &e);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	fake_app_down(&x);
}

/* REF_GONE: MOVED without a handle, naming the reference. */
static void test_ref_gone(void)
{
	struct fake_app x;
	struct ss_event ev[4];

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	struct ss_shm_ev e = { .type = SS_EV_REF_GONE, .conn = 3, .gen = 7, .arg = 2 };
	fake_ev(&x.f, 0, &e);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_MOVED);
	CHECK(ev[0].conn == NULL);
	CHECK_EQ_U64(ev[0].listener, 2);
	CHECK_EQ_U64(ev[0].cookie, (uint64_t)3 << 32 | 7);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

int main(void)
{
	test_fin_acked();
	test_moved_held();
	test_returned();
	test_ref_gone();
	return check_done("test_posix_events");
}
