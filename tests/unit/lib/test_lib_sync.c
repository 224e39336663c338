/* test_lib_sync.c - a connection shared across fork: commits and consumptions confirmed against the slot's sync words, refused once the service moved the handle away. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fake_svc.h"
#include "lib.h"
#include "slipstream.h"

#define SLOT 2
#define GEN 9

static struct ss_shm_conn_sync *sync_words(struct fake_app *x, uint32_t slot)
{
	return (struct ss_shm_conn_sync *)(void *)(x->f.region + x->f.hdr->sync_off) + slot;
}

static uint64_t *sync_word(struct fake_app *x, uint32_t slot)
{
	return &sync_words(x, slot)->tx;
}

/* The service hands out handle (SLOT, GEN): its words start off. */
static struct ss_conn *accept_shared_slot(struct fake_app *x)
{
	struct ss_event ev[2];

	*sync_word(x, SLOT) = ss_sync_word(GEN, 0, 0);
	sync_words(x, SLOT)->rx = ss_sync_word(GEN, 0, 0);
	fake_ev_open(&x->f, 0, SS_EV_ACCEPTED, SLOT, GEN, 1);
	CHECK_EQ_U64(ss_poll(x->ctx, ev, 2), 1);
	CHECK(ev[0].conn != NULL);
	return ev[0].conn;
}

static void send_exact(struct ss_conn *c, size_t n)
{
	static const uint8_t buf[1000];

	CHECK_EQ_U64(ss_send(c, buf, n), n);
}

/* A command the fake must see next. */
static void cmd_next(struct fake_app *x, uint8_t op, uint32_t arg)
{
	struct ss_shm_cmd cmd = { 0 };

	CHECK(fake_cmd(&x->f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, op);
	CHECK_EQ_U64(cmd.conn, SLOT);
	CHECK_EQ_U64(cmd.gen, GEN);
	CHECK_EQ_U64(cmd.arg, arg);
}

static void test_commit_refused(void)
{
	struct fake_app x;
	struct ss_ctx_stats st;
	struct iovec iov[2];
	struct ss_conn *c;

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	c = accept_shared_slot(&x);
	/* Not shared: the word is not touched. */
	send_exact(c, 100);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, 0, 0));
	/* Shared (the process forks): the word keeps the committed position. */
	ss_conn_share(c);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_ON, 100));
	send_exact(c, 50);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_ON, 150));
	ss_conn_share(c); /* once is enough: nothing changes */
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_ON, 150));
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 150);

	/* Another process adopts it: the service swaps MOVED in.  The next
	 * commit is refused and counts for nothing; no more room is shown. */
	send_exact(c, 20);
	__atomic_store_n(sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_MOVED, 0),
			 __ATOMIC_RELEASE);
	CHECK(ss_send_space(c, iov) > 0);
	errno = 0;
	CHECK_EQ_U64(ss_send(c, "x", 1), (uint64_t)-1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	CHECK_EQ_U64(ss_send_queued(c), 170);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_MOVED, 0));
	ss_ctx_stats(x.ctx, &st);
	CHECK_EQ_U64(st.tx_refused, 1);
	/* What was committed before is posted as ever (the service took it
	 * from the word already; this count finds a dead handle). */
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 20);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

/* Shared when the word is not its handle's any more (the slot already
 * went to another handle, or the move came first): every commit refused. */
static void test_share_moved(void)
{
	struct fake_app x;
	struct iovec iov[2];
	struct ss_conn *c;

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	c = accept_shared_slot(&x);
	send_exact(c, 10);
	*sync_word(&x, SLOT) = ss_sync_word(GEN + 1, 0, 10);
	ss_conn_share(c);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN + 1, 0, 10));
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	CHECK_EQ_U64(ss_send(c, "x", 1), 0);
	errno = 0;
	CHECK_EQ_U64(ss_send_commit(c, 1), (uint64_t)-1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(ss_send_queued(c), 10);
	fake_app_down(&x);

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	c = accept_shared_slot(&x);
	*sync_word(&x, SLOT) = ss_sync_word(GEN, SS_SYNC_MOVED, 0);
	ss_conn_share(c);
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	CHECK_EQ_U64(ss_send(c, "x", 1), 0);
	CHECK_EQ_U64(ss_send_queued(c), 0);
	fake_app_down(&x);
}

/* Reading: every consumption moves the receive word once shared; after
 * the move one is refused (nothing released, nothing readable). */
static void test_consume_refused(void)
{
	struct fake_app x;
	struct ss_ctx_stats st;
	struct iovec iov[2];
	struct ss_conn *c;
	char buf[64];

	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	c = accept_shared_slot(&x);
	fake_rx(&x.f, 0, SLOT, GEN, 0, "abcdefghij", 10);
	CHECK_EQ_U64(ss_poll(x.ctx, (struct ss_event[2]){ 0 }, 2), 1);
	CHECK_EQ_U64(ss_recv(c, buf, 2), 2);
	CHECK_EQ_U64(sync_words(&x, SLOT)->rx, ss_sync_word(GEN, 0, 0));
	ss_conn_share(c);
	CHECK_EQ_U64(sync_words(&x, SLOT)->rx, ss_sync_word(GEN, SS_SYNC_ON, 2));
	CHECK_EQ_U64(ss_recv(c, buf, 3), 3);
	CHECK(memcmp(buf, "cde", 3) == 0);
	CHECK_EQ_U64(sync_words(&x, SLOT)->rx, ss_sync_word(GEN, SS_SYNC_ON, 5));
	__atomic_store_n(&sync_words(&x, SLOT)->rx, ss_sync_word(GEN, SS_SYNC_MOVED, 0),
			 __ATOMIC_RELEASE);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 5);
	errno = 0;
	CHECK_EQ_U64(ss_recv_done(c, 1), (uint64_t)-1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 0);
	CHECK_EQ_U64(ss_recv(c, buf, sizeof(buf)), 0);
	ss_ctx_stats(x.ctx, &st);
	CHECK_EQ_U64(st.rx_refused, 1);
	CHECK_EQ_U64(st.tx_refused, 0);
	/* What was consumed before is reported as ever. */
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, 5);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);
	fake_app_down(&x);
}

/*
 * A send that started a new transmit origin (all acknowledged: the home
 * byte, shm/abi.h) but is not posted yet when the process forks: the sync
 * word carries only the position, so the bytes go back to where the
 * service's origin has them before the word is shared, and the TX goes
 * unflagged.  While shared, sends do not start at the home byte again.
 */
static void test_share_undoes_origin(void)
{
	struct fake_app x;
	struct ss_event ev[2];
	struct ss_shm_cmd cmd = { 0 };
	uint8_t data[64], *tx;
	struct ss_conn *c;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 29 + 1);
	if (fake_app_up(&x, NULL) < 0) {
		CHECK(0);
		return;
	}
	c = accept_shared_slot(&x);
	/* The transmit ring's home byte (shm/abi.h), where the first send
	 * moves the origin (the service is told with SS_CMDF_TX_HOME). */
	const uint32_t home = ss_shm_ring_home(SLOT, 4096);
	CHECK(home != 0 && home + 400 <= 4096); /* no wrap below */
	tx = x.f.region + fake_tx_off(&x.f, SLOT);
	send_exact(c, 300);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 300);
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, SLOT, GEN, 300, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 2), 1);
	/* All acknowledged: this one is written at the home byte again, not
	 * yet posted. */
	CHECK_EQ_U64(ss_send(c, data, 40), 40);
	CHECK_MEM(tx + home, data, 40);
	ss_conn_share(c);
	/* Moved 300 bytes on, where position 300 is for the service. */
	CHECK_MEM(tx + home + 300, data, 40);
	CHECK_EQ_U64(*sync_word(&x, SLOT), ss_sync_word(GEN, SS_SYNC_ON, 340));
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(fake_cmd(&x.f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_TX);
	CHECK_EQ_U64(cmd.flags, 0);
	CHECK_EQ_U64(cmd.arg, 40);
	/* Shared: all acknowledged again, yet the next bytes follow at 340. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, SLOT, GEN, 40, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 2), 1);
	CHECK_EQ_U64(ss_send(c, data + 40, 20), 20);
	CHECK_MEM(tx + home + 340, data + 40, 20);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(fake_cmd(&x.f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.flags, 0);
	CHECK_EQ_U64(cmd.arg, 20);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

int main(void)
{
	test_commit_refused();
	test_share_undoes_origin();
	test_consume_refused();
	test_share_moved();
	return check_done("test_lib_sync");
}
