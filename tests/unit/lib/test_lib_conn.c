/* test_lib_conn.c - commands, events, ring wrap, atx-full coalescing and bogus events against a fake service. */
#include <errno.h>

#include "check.h"
#include "fake_svc.h"
#include "slipstream.h"

/* Check the next command the fake sees. */
#define CHECK_CMD(x, op_, conn_, gen_, arg_) CHECK_CMD_FL(x, op_, conn_, gen_, arg_, 0)

/* ...with flags @flags_ (TX and RX_DONE: 0 is one count alone). */
#define CHECK_CMD_FL(x, op_, conn_, gen_, arg_, flags_)               \
	do {                                                          \
		struct ss_shm_cmd c_ = { 0 };                         \
		CHECK(fake_cmd(&(x)->f, 0, &c_) == 1);                \
		CHECK_EQ_U64(c_.op, op_);                             \
		CHECK_EQ_U64(c_.conn, conn_);                         \
		CHECK_EQ_U64(c_.gen, gen_);                           \
		CHECK_EQ_U64(c_.arg, arg_);                           \
		if ((op_) == SS_CMD_TX || (op_) == SS_CMD_RX_DONE)    \
			CHECK_EQ_U64(c_.flags, flags_);               \
	} while (0)

/* The flag on the first TX of a new handle on slot @slot: it starts with
 * origin 0, and the first send moves the origin to the home byte
 * (shm/abi.h), unless that is byte 0. */
static uint8_t first_tx(uint32_t slot)
{
	return ss_shm_ring_home(slot, 4096) ? SS_CMDF_TX_HOME : 0;
}

/* A reply's TX that carries the bytes consumed (SS_CMDF_RX_DONE), on a
 * connection that sent before (or whose home byte is 0). */
#define CHECK_CMD_TX_RX(x, conn_, gen_, tx_, rx_) CHECK_CMD_TX_RX_FL(x, conn_, gen_, tx_, rx_, 0)

/* ...with @flags_ besides. */
#define CHECK_CMD_TX_RX_FL(x, conn_, gen_, tx_, rx_, flags_)          \
	do {                                                          \
		struct ss_shm_cmd c_ = { 0 };                         \
		CHECK(fake_cmd(&(x)->f, 0, &c_) == 1);                \
		CHECK_EQ_U64(c_.op, SS_CMD_TX);                       \
		CHECK_EQ_U64(c_.flags, SS_CMDF_RX_DONE | (flags_));   \
		CHECK_EQ_U64(c_.conn, conn_);                         \
		CHECK_EQ_U64(c_.gen, gen_);                           \
		CHECK_EQ_U64(c_.arg, tx_);                            \
		CHECK_EQ_U64(c_.rx_done, rx_);                        \
	} while (0)

/* Accept a connection on slot @slot/@gen and return its handle. */
static struct ss_conn *accept_one(struct fake_app *x, uint32_t slot, uint32_t gen)
{
	struct ss_event ev[4];

	fake_ev_open(&x->f, 0, SS_EV_ACCEPTED, slot, gen, 0xc00c1e);
	CHECK_EQ_U64(ss_poll(x->ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_ACCEPTED);
	CHECK_EQ_U64(ev[0].cookie, 0xc00c1e);
	CHECK(ev[0].conn != NULL);
	return ev[0].conn;
}

static void test_listen_connect(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct ss_shm_cmd c;
	uint32_t lip, rip;
	uint16_t lport, rport;

	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	CHECK(ss_listen(x.ctx, 8080, 128, 0xabc) == 0);
	CHECK(ss_connect(x.ctx, 0x0a000002, 9000, 0xdef) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0); /* batched until flush */
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 2);
	CHECK(fake_cmd(&x.f, 0, &c) == 1);
	CHECK_EQ_U64(c.op, SS_CMD_LISTEN);
	CHECK_EQ_U64(c.port, 8080);
	CHECK_EQ_U64(c.arg, 128);
	CHECK_EQ_U64(c.cookie, 0xabc);
	CHECK(fake_cmd(&x.f, 0, &c) == 1);
	CHECK_EQ_U64(c.op, SS_CMD_CONNECT);
	CHECK_EQ_U64(c.ip, 0x0a000002);
	CHECK_EQ_U64(c.port, 9000);
	CHECK_EQ_U64(c.cookie, 0xdef);

	struct ss_shm_ev le = { .type = SS_EV_LISTEN, .conn = 4, .cookie = 0xabc };
	fake_ev(&x.f, 0, &le);
	struct ss_shm_ev ce = { .type = SS_EV_CONNECTED, .error = ECONNREFUSED, .cookie = 0xdef };
	fake_ev(&x.f, 0, &ce);
	fake_publish(&x.f, 0);
	fake_ev_open(&x.f, 0, SS_EV_CONNECTED, 2, 9, 0xdef);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 3);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_LISTENING);
	CHECK_EQ_U64(ev[0].listener, 4);
	CHECK_EQ_U64(ev[0].cookie, 0xabc);
	CHECK_EQ_U64(ev[0].error, 0);
	CHECK_EQ_U64(ev[1].type, SS_EVENT_CONNECTED);
	CHECK_EQ_U64(ev[1].error, ECONNREFUSED);
	CHECK(ev[1].conn == NULL);
	CHECK_EQ_U64(ev[2].type, SS_EVENT_CONNECTED);
	CHECK_EQ_U64(ev[2].error, 0);
	CHECK(ev[2].conn != NULL);
	CHECK_EQ_U64(ev[2].remote_port, 40002);
	ss_conn_endpoints(ev[2].conn, &lip, &lport, &rip, &rport);
	CHECK_EQ_U64(lip, 0x0a000001);
	CHECK_EQ_U64(lport, 80);
	CHECK_EQ_U64(rip, 0x0a000002);
	CHECK_EQ_U64(rport, 40002);
	CHECK(ss_conn_ctx(ev[2].conn) == x.ctx);

	/* shutdown() of the listener: LISTEN_STOP, answered LISTEN_STOPPED. */
	CHECK(ss_listen_stop(x.ctx, 4, SS_LISTEN_STOP_RELEASE, 0xabc) == 0);
	CHECK(ss_listen_stop(x.ctx, 4, 0, 0xabd) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(fake_cmd(&x.f, 0, &c) == 1);
	CHECK_EQ_U64(c.op, SS_CMD_LISTEN_STOP);
	CHECK_EQ_U64(c.conn, 4);
	CHECK_EQ_U64(c.arg, SS_STOP_RELEASE);
	CHECK_EQ_U64(c.cookie, 0xabc);
	CHECK_CMD(&x, SS_CMD_LISTEN_STOP, 4, 0, 0);
	struct ss_shm_ev se = { .type = SS_EV_LISTEN_STOPPED, .conn = 4, .cookie = 0xabc,
				.arg = 1, .local_port = 8080 };
	fake_ev(&x.f, 0, &se);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_LISTEN_STOPPED);
	CHECK_EQ_U64(ev[0].listener, 4);
	CHECK_EQ_U64(ev[0].cookie, 0xabc);
	CHECK_EQ_U64(ev[0].local_port, 8080);
	CHECK_EQ_U64(ev[0].bytes, 1);
	CHECK(ev[0].conn == NULL);

	CHECK(ss_listen_close(x.ctx, 4) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_LISTEN_CLOSE, 4, 0, 0);

	/* A rejected command comes back as CMD_ERROR. */
	struct ss_shm_ev ee = { .type = SS_EV_CMD_ERROR, .arg = SS_CMD_LISTEN,
				.error = EADDRINUSE, .conn = 0 };
	fake_ev(&x.f, 0, &ee);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_CMD_ERROR);
	CHECK_EQ_U64(ev[0].cmd_op, SS_OP_LISTEN);
	CHECK_EQ_U64(ev[0].error, EADDRINUSE);
	CHECK(ev[0].conn == NULL);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

/* close() of a connecting socket: ss_connect_cancel() is SS_CMD_ABORT
 * with SS_CMDF_CONNECTING and the CONNECT's cookie, no handle. */
static void test_connect_cancel(void)
{
	struct fake_app x;
	struct ss_shm_cmd c;

	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	CHECK(ss_connect(x.ctx, 0x0a000002, 9000, 0xdef) == 0);
	CHECK(ss_connect_cancel(x.ctx, 0xdef) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 2);
	CHECK(fake_cmd(&x.f, 0, &c) == 1);
	CHECK_EQ_U64(c.op, SS_CMD_CONNECT);
	CHECK(fake_cmd(&x.f, 0, &c) == 1);
	CHECK_EQ_U64(c.op, SS_CMD_ABORT);
	CHECK_EQ_U64(c.flags, SS_CMDF_CONNECTING);
	CHECK_EQ_U64(c.cookie, 0xdef);
	CHECK_EQ_U64(c.conn, 0);
	CHECK_EQ_U64(c.gen, 0);
	fake_app_down(&x);
}

static void test_rx_wrap(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	uint8_t data[4096], got[4096];
	uint64_t seed = 1;
	struct ss_conn *c;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)check_rand(&seed);
	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 3, 5);
	if (!c)
		goto out;
	ss_conn_set_user(c, &x);

	fake_rx(&x.f, 0, 3, 5, 0, data, 3000);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_DATA);
	CHECK(ev[0].conn == c);
	CHECK(ss_conn_user(ev[0].conn) == &x);
	CHECK_EQ_U64(ev[0].bytes, 3000);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 3000);
	CHECK_EQ_U64(iov[0].iov_len, 3000);
	CHECK_EQ_U64(iov[1].iov_len, 0);
	CHECK_MEM(iov[0].iov_base, data, 3000);
	CHECK(ss_recv_done(c, 3001) == -1);
	CHECK_EQ_U64(errno, EINVAL);
	CHECK(ss_recv_done(c, 1000) == 0);
	CHECK(ss_recv_done(c, 2000) == 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);

	/* 2000 more: positions 3000..5000 wrap at 4096. */
	fake_rx(&x.f, 0, 3, 5, 3000, data + 100, 2000);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1); /* also flushes RX_DONE 3000 */
	CHECK_CMD(&x, SS_CMD_RX_DONE, 3, 5, 3000);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 2000);
	CHECK_EQ_U64(iov[0].iov_len, 1096);
	CHECK_EQ_U64(iov[1].iov_len, 904);
	CHECK_MEM(iov[0].iov_base, data + 100, 1096);
	CHECK_MEM(iov[1].iov_base, data + 100 + 1096, 904);
	/* The copying variant across the wrap, in two bites. */
	CHECK_EQ_U64(ss_recv(c, got, 1500), 1500);
	CHECK_EQ_U64(ss_recv(c, got + 1500, sizeof(got) - 1500), 500);
	CHECK_MEM(got, data + 100, 2000);
	CHECK_EQ_U64(ss_recv(c, got, sizeof(got)), 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_RX_DONE, 3, 5, 2000); /* coalesced 1500 + 500 */
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);

	/* Fill the ring exactly: 4096 readable; one byte more is bogus. */
	fake_rx(&x.f, 0, 3, 5, 5000, data, 4096);
	fake_rx(&x.f, 0, 3, 5, 9096, data, 1);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 4096);
	CHECK_EQ_U64(iov[0].iov_len, 4096 - (5000 - 4096));
	CHECK_MEM(iov[0].iov_base, data, iov[0].iov_len);
	CHECK_MEM(iov[1].iov_base, data + iov[0].iov_len, iov[1].iov_len);
out:
	fake_app_down(&x);
}

static void test_tx_wrap(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	uint8_t data[8192];
	uint64_t seed = 2;
	struct ss_conn *c;
	uint8_t *ring;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)check_rand(&seed);
	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	/* Slot 0: its home byte is byte 0 (shm/abi.h), so the ring's own
	 * geometry is what is tested. */
	ring = x.f.region + fake_tx_off(&x.f, 0);
	c = accept_one(&x, 0, 77);
	if (!c)
		goto out;
	CHECK_EQ_U64(ss_send_space(c, iov), 4096);
	CHECK_EQ_U64(ss_send(c, data, 3000), 3000);
	CHECK_EQ_U64(ss_send_queued(c), 3000);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 77, 3000);
	CHECK_MEM(ring, data, 3000);

	/* Only 1096 bytes fit now; a second send is short. */
	CHECK_EQ_U64(ss_send(c, data + 3000, 5000), 1096);
	CHECK_EQ_U64(ss_send(c, data, 10), 0);
	CHECK(ss_send_commit(c, 1) == -1);
	CHECK_EQ_U64(errno, EINVAL);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 77, 1096);

	/* Acks: more than posted is bogus; 3000 frees the front. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 0, 77, 5000, 0);
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 0, 77, 3000, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_SENT);
	CHECK_EQ_U64(ev[0].bytes, 3000);
	CHECK_EQ_U64(ss_send_queued(c), 1096);

	/* Free space is at positions 4096..7096: ring offsets 0..3000. */
	CHECK_EQ_U64(ss_send_space(c, iov), 3000);
	CHECK_EQ_U64(iov[0].iov_len, 3000);
	CHECK_EQ_U64(iov[1].iov_len, 0);
	CHECK_EQ_U64(ss_send(c, data + 4096, 1000), 1000);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 77, 1000);
	CHECK_MEM(ring + 3000, data + 3000, 1096);
	CHECK_MEM(ring, data + 4096, 1000);

	/* Ack all but one byte; a write now straddles the end of the ring
	 * (pos 5096; with nothing left unacknowledged it would start at byte
	 * 0 instead, test_ring_origin). */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 0, 77, 2095, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send_space(c, iov), 4095);
	CHECK_EQ_U64(iov[0].iov_len, 4096 - 1000);
	CHECK_EQ_U64(iov[1].iov_len, 999);
	CHECK_EQ_U64(ss_send(c, data, 3500), 3500);
	CHECK_MEM(ring + 1000, data, 3096);
	CHECK_MEM(ring, data + 3096, 404);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 77, 3500);

	/* Shutdown goes after the data it follows; sending then fails. */
	CHECK_EQ_U64(ss_send(c, data, 10), 10);
	CHECK(ss_shutdown(c) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 77, 10);
	CHECK_CMD(&x, SS_CMD_SHUTDOWN, 0, 77, 0);
	CHECK(ss_send(c, data, 10) == -1);
	CHECK_EQ_U64(errno, EPIPE);
	CHECK(ss_shutdown(c) == -1);
	CHECK_EQ_U64(errno, EPIPE);
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	/* Acks still free space after shutdown. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 0, 77, 3511, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send_queued(c), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
out:
	fake_app_down(&x);
}

/*
 * An RX slot with SS_EVF_TX_ACKED (SS_SHM_VERSION 5: a request and the ACK
 * of the last reply in one slot) reads as DATA then SENT, each with its
 * own bytes, the slot after it next; a poll with room for one event
 * returns DATA and keeps SENT for the next poll, and ss_wait() does not
 * sleep while it is kept.  A bogus acknowledgement in such a slot counts
 * as bogus and leaves the data.
 */
static void test_rx_with_ack(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	uint8_t data[600];
	struct ss_conn *c;
	uint8_t *tx, *ring;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 0, 9);
	if (!c)
		goto out;
	/* Slot 0: its home byte is byte 0 (shm/abi.h). */
	tx = x.f.region + fake_tx_off(&x.f, 0);
	ring = x.f.region + fake_rx_off(&x.f, 0);
	CHECK_EQ_U64(ss_send(c, data, 500), 500);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 9, 500);
	CHECK_MEM(tx, data, 500);

	/* Room for four: both, in order, then the next slot's event. */
	memcpy(ring, data, 120);
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .flags = SS_EVF_TX_ACKED,
					      .conn = 0, .gen = 9, .arg = 100, .arg2 = 300 });
	fake_publish(&x.f, 0);
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = 0, .gen = 9, .arg = 20,
					      .arg3 = 100 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 3);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_DATA);
	CHECK_EQ_U64(ev[0].bytes, 100);
	CHECK(ev[0].conn == c);
	CHECK_EQ_U64(ev[1].type, SS_EVENT_SENT);
	CHECK_EQ_U64(ev[1].bytes, 300);
	CHECK(ev[1].conn == c);
	CHECK_EQ_U64(ev[2].type, SS_EVENT_DATA);
	CHECK_EQ_U64(ev[2].bytes, 20);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 120);
	CHECK_MEM(iov[0].iov_base, data, 120);
	CHECK_EQ_U64(ss_send_queued(c), 200);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	CHECK(ss_recv_done(c, 120) == 0);

	/* Room for one: DATA now, SENT kept for the next poll; no sleep. */
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .flags = SS_EVF_TX_ACKED,
					      .conn = 0, .gen = 9, .arg = 40, .arg2 = 200,
					      .arg3 = 120 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 1), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_DATA);
	CHECK_EQ_U64(ev[0].bytes, 40);
	CHECK_EQ_U64(ss_send_queued(c), 200); /* not yet */
	CHECK_EQ_U64(ss_wait(x.ctx, 0), 1);    /* an event is still there */
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 1), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_SENT);
	CHECK_EQ_U64(ev[0].bytes, 200);
	CHECK_EQ_U64(ss_send_queued(c), 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 1), 0);

	/* An acknowledgement of more than was sent is bogus; the data counts. */
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .flags = SS_EVF_TX_ACKED,
					      .conn = 0, .gen = 9, .arg = 10, .arg2 = 1,
					      .arg3 = 160 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_DATA);
	CHECK_EQ_U64(ev[0].bytes, 10);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 50);
out:
	fake_app_down(&x);
}

/* The home bytes (shm/abi.h ss_shm_ring_home()): a whole line inside the
 * ring, 0 for slot 0 and for a size that is no power of two above a line;
 * spread over the ring's lines (a fresh line for most of the first
 * size / 64 slots, and no line holding more than twice its share of
 * 16,384 slots). */
static void test_ring_home(void)
{
	static uint16_t per_line[65536 / 64];

	CHECK_EQ_U64(ss_shm_ring_home(0, 65536), 0);
	CHECK_EQ_U64(ss_shm_ring_home(7, 0), 0);
	CHECK_EQ_U64(ss_shm_ring_home(7, 64), 0);
	CHECK_EQ_U64(ss_shm_ring_home(7, 3000), 0);
	CHECK_EQ_U64(ss_shm_ring_home(1, 128), 64);
	for (uint32_t size = 4096; size <= 65536; size *= 2) {
		uint32_t lines = size / 64, fresh = 0, most = 0;
		bool inside = true;

		memset(per_line, 0, sizeof(per_line));
		for (uint32_t slot = 0; slot < 16384; slot++) {
			uint32_t h = ss_shm_ring_home(slot, size);
			if (h >= size || h % 64 || h != ss_shm_ring_home(slot, size))
				inside = false;
			if (h >= size)
				continue;
			if (slot < lines && per_line[h / 64] == 0)
				fresh++;
			if (++per_line[h / 64] > most)
				most = per_line[h / 64];
		}
		CHECK(inside);
		CHECK(fresh * 10 >= lines * 8);
		CHECK(most <= 2 * (16384 / lines));
	}
}

/*
 * Ring origins (shm/abi.h): a send with everything acknowledged starts at
 * the transmit ring's home byte and its TX says so (SS_CMDF_TX_HOME),
 * once; data the service put elsewhere is read where the RX event says,
 * which it may say only when everything before was consumed (else the
 * event is bogus and changes nothing).  Slot 4, whose home byte is not 0.
 */
static void test_ring_origin(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	uint8_t data[600];
	struct ss_conn *c;
	uint8_t *tx, *rx;
	struct ss_shm_cmd cmd;
	const uint32_t home = ss_shm_ring_home(4, 4096);

	CHECK(home != 0 && home + sizeof(data) <= 4096); /* no wrap below */
	CHECK_EQ_U64(home % 64, 0); /* a cache line of its own */
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 5);
	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 4, 2);
	if (!c)
		goto out;
	tx = x.f.region + fake_tx_off(&x.f, 4);
	rx = x.f.region + fake_rx_off(&x.f, 4);

	/* The first send: nothing is unacknowledged, so it goes to the home
	 * byte (the handle started with origin 0), flagged. */
	CHECK_EQ_U64(ss_send(c, data, 100), 100);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD_FL(&x, SS_CMD_TX, 4, 2, 100, SS_CMDF_TX_HOME);
	CHECK_MEM(tx + home, data, 100);
	/* Not all acknowledged: the next one follows, unflagged. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 4, 2, 60, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send(c, data + 100, 50), 50);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 4, 2, 50);
	CHECK_MEM(tx + home + 100, data + 100, 50);
	/* All acknowledged: from the home byte again, the TX flagged; the
	 * space is the whole ring, from there round to it. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 4, 2, 90, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send_space(c, iov), 4096);
	CHECK_EQ_U64(iov[0].iov_len, 4096 - home);
	CHECK_EQ_U64(iov[1].iov_len, home);
	CHECK_EQ_U64(ss_send(c, data + 200, 70), 70);
	CHECK_EQ_U64(ss_send(c, data + 270, 30), 30); /* same TX */
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(fake_cmd(&x.f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_TX);
	CHECK_EQ_U64(cmd.flags, SS_CMDF_TX_HOME);
	CHECK_EQ_U64(cmd.arg, 100);
	CHECK_MEM(tx + home, data + 200, 100);
	/* Once: the next send (100 unacknowledged) follows, unflagged. */
	CHECK_EQ_U64(ss_send(c, data + 300, 10), 10);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 4, 2, 10);
	CHECK_MEM(tx + home + 100, data + 300, 10);
	/* A reply after a request: both flags on the one command. */
	fake_rx(&x.f, 0, 4, 2, 0, data, 40);
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 4, 2, 110, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 2);
	CHECK(ss_recv_done(c, 40) == 0);
	CHECK_EQ_U64(ss_send(c, data + 400, 40), 40);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(fake_cmd(&x.f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, SS_CMD_TX);
	CHECK_EQ_U64(cmd.flags, SS_CMDF_TX_HOME | SS_CMDF_RX_DONE);
	CHECK_EQ_U64(cmd.arg, 40);
	CHECK_EQ_U64(cmd.rx_done, 40);
	CHECK_MEM(tx + home, data + 400, 40);

	/* Receive: 40 consumed, the service starts again at the home byte. */
	memcpy(rx + home, data + 500, 30);
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = 4, .gen = 2, .arg = 30,
					      .arg3 = home });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 30);
	CHECK_EQ_U64(iov[0].iov_len, 30);
	CHECK_MEM(iov[0].iov_base, data + 500, 30);
	/* With 30 unread, an event elsewhere than 30 bytes on is bogus. */
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = 4, .gen = 2, .arg = 5,
					      .arg3 = home });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 30);
	/* There it is taken; and beyond the ring it is bogus. */
	memcpy(rx + home + 30, data + 530, 5);
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = 4, .gen = 2, .arg = 5,
					      .arg3 = home + 30 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 35);
	CHECK_MEM(iov[0].iov_base, data + 500, 35);
	CHECK(ss_recv_done(c, 35) == 0);
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = 4, .gen = 2, .arg = 5,
					      .arg3 = 4096 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 2);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 0);
out:
	fake_app_down(&x);
}

static void test_atx_full(void)
{
	struct fake_app x;
	struct ss_conn *c;
	struct ss_shm_cmd cmd;
	struct ss_ctx_stats st;
	uint8_t data[100] = { 0 };

	/* 16 command slots. */
	if (fake_app_up(&x, &(struct fake_opts){ .atx_slots = 16 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 0, 1);
	if (!c)
		goto out;
	for (int i = 0; i < 16; i++)
		CHECK(ss_listen(x.ctx, (uint16_t)(1000 + i), 1, (uint64_t)i) == 0);
	CHECK(ss_listen(x.ctx, 2000, 1, 99) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK(ss_connect(x.ctx, 1, 2, 3) == -1);
	CHECK_EQ_U64(errno, EAGAIN);

	/* Byte counts are coalesced, not refused. */
	CHECK_EQ_U64(ss_send(c, data, 100), 100);
	CHECK_EQ_U64(ss_send(c, data, 50), 50);
	CHECK(ss_flush(x.ctx) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 16); /* published what fitted */
	/* Control commands refuse without changing state. */
	CHECK(ss_shutdown(c) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK(ss_close(c) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK(ss_abort(c) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(ss_send(c, data, 25), 25); /* still open for sending */
	ss_ctx_stats(x.ctx, &st);
	CHECK(st.atx_full >= 6);

	/* The service drains; the next flush posts one coalesced TX. */
	for (int i = 0; i < 16; i++) {
		CHECK(fake_cmd(&x.f, 0, &cmd) == 1);
		CHECK_EQ_U64(cmd.op, SS_CMD_LISTEN);
		CHECK_EQ_U64(cmd.cookie, i);
	}
	CHECK(ss_shutdown(c) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_TX, 0, 1, 175);
	CHECK_CMD(&x, SS_CMD_SHUTDOWN, 0, 1, 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);

out:
	fake_app_down(&x);
}

/* Counts alone overflow a 4-slot ring: the rest waits, in order.  A
 * connection with both counts posts one TX carrying the bytes consumed
 * (SS_CMDF_RX_DONE); one with a single count, that count alone. */
static void test_atx_full_counts(void)
{
	struct fake_app x;
	struct ss_conn *c[5];
	uint8_t data[8] = { 0 };

	if (fake_app_up(&x, &(struct fake_opts){ .atx_slots = 4 }) < 0) {
		CHECK(0);
		return;
	}
	for (uint32_t s = 0; s < 5; s++) {
		c[s] = accept_one(&x, s, 10 + s);
		if (!c[s])
			goto out;
	}
	for (uint32_t s = 0; s < 5; s++)
		fake_rx(&x.f, 0, s, 10 + s, 0, data, 8);
	CHECK_EQ_U64(ss_poll(x.ctx, (struct ss_event[8]){ 0 }, 8), 5);
	for (uint32_t s = 0; s < 5; s++) {
		if (s != 2) /* 2 only reads */
			CHECK_EQ_U64(ss_send(c[s], data, s + 1), s + 1);
		if (s != 1) /* 1 only writes */
			CHECK_EQ_U64(ss_recv(c[s], data, 8), 8);
	}
	CHECK(ss_flush(x.ctx) == -1);
	CHECK_EQ_U64(errno, EAGAIN);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 4);
	CHECK_CMD_TX_RX_FL(&x, 0, 10, 1, 8, first_tx(0));
	CHECK_CMD_FL(&x, SS_CMD_TX, 1, 11, 2, first_tx(1));
	CHECK_CMD(&x, SS_CMD_RX_DONE, 2, 12, 8);
	CHECK_CMD_TX_RX_FL(&x, 3, 13, 4, 8, first_tx(3));
	/* More for conn 4 while it waits: still one command. */
	CHECK_EQ_U64(ss_send(c[4], data, 4), 4);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD_TX_RX_FL(&x, 4, 14, 9, 8, first_tx(4));
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);

	/* ss_wait keeps retrying (1 ms naps) instead of sleeping on it. */
	for (int i = 0; i < 4; i++)
		CHECK(ss_listen(x.ctx, 1, 1, 1) == 0);
	CHECK_EQ_U64(ss_send(c[0], data, 1), 1);
	CHECK_EQ_U64(ss_wait(x.ctx, 5), 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 4);
out:
	fake_app_down(&x);
}

static void test_close_lifecycle(void)
{
	struct fake_app x;
	struct ss_event ev[8];
	struct ss_conn *c, *c2;
	int tag;
	uint8_t data[10] = { 0 };

	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 5, 1);
	if (!c)
		goto out;
	ss_conn_set_user(c, &tag);
	CHECK(ss_conn_user(c) == &tag);

	/* PEER_FIN, then a second one is bogus; RX after FIN is bogus. */
	fake_ev_conn(&x.f, 0, SS_EV_PEER_FIN, 5, 1, 0, 0);
	fake_ev_conn(&x.f, 0, SS_EV_PEER_FIN, 5, 1, 0, 0);
	fake_rx(&x.f, 0, 5, 1, 0, data, 10);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_PEER_CLOSED);
	CHECK(ss_conn_user(ev[0].conn) == &tag);
	CHECK_EQ_U64(fake_app_bogus(&x), 2);

	/* RESET: the connection is dead, calls fail with its error. */
	fake_ev_conn(&x.f, 0, SS_EV_RESET, 5, 1, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_RESET);
	CHECK_EQ_U64(ev[0].error, ECONNRESET);
	CHECK_EQ_U64(ss_conn_error(c), ECONNRESET);
	CHECK(ss_send(c, data, 1) == -1);
	CHECK_EQ_U64(errno, ECONNRESET);
	CHECK(ss_close(c) == 0);
	CHECK(ss_close(c) == -1);
	CHECK_EQ_U64(errno, EPIPE);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_CLOSE, 5, 1, 0);

	/* CLOSED and a new connection on the same slot in one batch: two
	 * distinct handles; the old one's events are then stale. */
	fake_ev_conn(&x.f, 0, SS_EV_CLOSED, 5, 1, 0, 0);
	fake_ev_open(&x.f, 0, SS_EV_ACCEPTED, 5, 2, 0xc00c1e);
	fake_ev_conn(&x.f, 0, SS_EV_RX, 5, 1, 4, 0);     /* stale gen */
	fake_ev_conn(&x.f, 0, SS_EV_CLOSED, 5, 1, 0, 0); /* stale gen */
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 2);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_CLOSED);
	CHECK(ev[0].conn == c);
	CHECK(ss_conn_user(ev[0].conn) == &tag);
	CHECK_EQ_U64(ev[1].type, SS_EVENT_ACCEPTED);
	c2 = ev[1].conn;
	CHECK(c2 != NULL && c2 != c);
	CHECK(ss_conn_user(c2) == NULL);
	CHECK_EQ_U64(fake_app_bogus(&x), 4);

	/* Close with data queued: TX first, then CLOSE. */
	CHECK_EQ_U64(ss_send(c2, data, 10), 10);
	CHECK(ss_close(c2) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD_FL(&x, SS_CMD_TX, 5, 2, 10, first_tx(5));
	CHECK_CMD(&x, SS_CMD_CLOSE, 5, 2, 0);
	CHECK(ss_abort(c2) == -1);
	CHECK_EQ_U64(errno, EPIPE);

	/* Abort drops what was not posted. */
	struct ss_conn *c3 = accept_one(&x, 6, 1);
	CHECK_EQ_U64(ss_send(c3, data, 10), 10);
	CHECK(ss_abort(c3) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_CMD(&x, SS_CMD_ABORT, 6, 1, 0);
	CHECK_EQ_U64(fake_cmd_pending(&x.f, 0), 0);

	struct ss_ctx_stats st;
	ss_ctx_stats(x.ctx, &st);
	CHECK_EQ_U64(st.conns, 2);
out:
	fake_app_down(&x);
}

static void test_bogus(void)
{
	struct fake_app x;
	struct ss_event ev[8];
	struct ss_conn *c;
	struct iovec iov[2];

	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	c = accept_one(&x, 2, 3);
	if (!c)
		goto out;
	fake_ev_conn(&x.f, 0, SS_EV_RX, 8, 3, 10, 0);        /* slot == max_conns */
	fake_ev_conn(&x.f, 0, SS_EV_RX, 0xffffffff, 3, 10, 0);
	fake_ev_conn(&x.f, 0, SS_EV_RX, 2, 4, 10, 0);        /* wrong gen */
	fake_ev_conn(&x.f, 0, SS_EV_RX, 1, 3, 10, 0);        /* free slot */
	fake_ev_conn(&x.f, 0, SS_EV_RX, 2, 3, 0, 0);         /* zero bytes */
	fake_ev_conn(&x.f, 0, SS_EV_RX, 2, 3, 4097, 0);      /* > ring */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, 2, 3, 1, 0);   /* nothing sent */
	fake_ev_conn(&x.f, 0, 200, 2, 3, 1, 0);              /* unknown type */
	fake_ev_conn(&x.f, 0, SS_EV_NONE, 2, 3, 1, 0);
	fake_ev_open(&x.f, 0, SS_EV_ACCEPTED, 2, 9, 1);       /* slot in use */
	fake_ev_open(&x.f, 0, SS_EV_ACCEPTED, 8, 1, 1);       /* out of range */
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 11);

	/* Ring offsets outside the region or before the buffers. */
	struct ss_shm_ev e = { .type = SS_EV_ACCEPTED, .conn = 4, .gen = 1,
			       .rx_off = x.f.region_size - 100,
			       .tx_off = fake_tx_off(&x.f, 4) };
	fake_ev(&x.f, 0, &e);
	e.rx_off = 0;
	fake_ev(&x.f, 0, &e);
	e.rx_off = fake_rx_off(&x.f, 4);
	e.tx_off = UINT64_MAX - 10;
	fake_ev(&x.f, 0, &e);
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 14);

	/* The live connection is untouched. */
	CHECK_EQ_U64(ss_recv_peek(c, iov), 0);
	CHECK_EQ_U64(ss_send_space(c, iov), 4096);

	/* ss_poll hands out at most max events per call. */
	for (int i = 0; i < 5; i++)
		fake_rx(&x.f, 0, 2, 3, (uint32_t)i, "x", 1);
	CHECK(ss_poll(x.ctx, NULL, 1) == -1);
	CHECK_EQ_U64(errno, EINVAL);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 0), 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 2), 2);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 8), 3);
	CHECK_EQ_U64(ss_recv_peek(c, iov), 5);
out:
	fake_app_down(&x);
}

static void test_doorbell(void)
{
	struct fake_app x;
	struct ss_ctx_stats st;

	if (fake_app_up(&x, &(struct fake_opts){ .status_sleeping = 0 }) < 0) {
		CHECK(0);
		return;
	}
	CHECK(ss_listen(x.ctx, 1, 1, 1) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_doorbell(&x.f), 0);       /* service awake: no kick */
	x.f.status->sleeping[0] = 1;
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_doorbell(&x.f), 0);       /* nothing new: no kick */
	CHECK(ss_listen(x.ctx, 2, 1, 2) == 0);
	CHECK(ss_listen(x.ctx, 3, 1, 3) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_doorbell(&x.f), 1);       /* one kick per batch */
	CHECK_EQ_U64(fake_atx(&x.f, 0)->sleeping, 1);  /* latched */
	/* The service has not run yet (its flag still set): more batches,
	 * no more kicks. */
	CHECK(ss_listen(x.ctx, 4, 1, 4) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK(ss_listen(x.ctx, 5, 1, 5) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_doorbell(&x.f), 0);
	/* It ran and sleeps again, the latch cleared: one kick. */
	fake_atx(&x.f, 0)->sleeping = 0;
	CHECK(ss_listen(x.ctx, 6, 1, 6) == 0);
	CHECK(ss_flush(x.ctx) == 0);
	CHECK_EQ_U64(fake_doorbell(&x.f), 1);
	ss_ctx_stats(x.ctx, &st);
	CHECK_EQ_U64(st.doorbells, 2);
	CHECK_EQ_U64(st.cmds, 6);
	fake_app_down(&x);
}

/* LISTEN answering our command, and one unasked (SS_EVF_MEMBER: another
 * process sharing the port entry made it listen): bytes tells them apart. */
static void test_listen_member(void)
{
	struct fake_app x;
	struct ss_event ev[4];

	if (fake_app_up(&x, &(struct fake_opts){ 0 }) < 0) {
		CHECK(0);
		return;
	}
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_LISTEN, .conn = 3, .cookie = 0x11,
					      .local_port = 8080, .arg = 128 });
	fake_ev(&x.f, 0, &(struct ss_shm_ev){ .type = SS_EV_LISTEN, .flags = SS_EVF_MEMBER,
					      .conn = 5, .cookie = 0x22, .local_port = 8081,
					      .arg = 128 });
	fake_publish(&x.f, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 2);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_LISTENING);
	CHECK_EQ_U64(ev[0].bytes, 0);
	CHECK_EQ_U64(ev[0].listener, 3);
	CHECK_EQ_U64(ev[0].cookie, 0x11);
	CHECK_EQ_U64(ev[0].local_port, 8080);
	CHECK_EQ_U64(ev[1].type, SS_EVENT_LISTENING);
	CHECK_EQ_U64(ev[1].bytes, 1);
	CHECK_EQ_U64(ev[1].listener, 5);
	CHECK_EQ_U64(ev[1].cookie, 0x22);
	CHECK_EQ_U64(ev[1].local_port, 8081);
	CHECK_EQ_U64(ev[1].error, 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

int main(void)
{
	test_listen_connect();
	test_connect_cancel();
	test_listen_member();
	test_rx_wrap();
	test_tx_wrap();
	test_rx_with_ack();
	test_ring_home();
	test_ring_origin();
	test_atx_full();
	test_atx_full_counts();
	test_close_lifecycle();
	test_bogus();
	test_doorbell();
	return check_done("test_lib_conn");
}
