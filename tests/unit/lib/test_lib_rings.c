/* test_lib_rings.c - small rings that grow (shm/abi.h), the library's side: asking for the large receive ring, moving to the large transmit ring, and putting a move back at fork. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fake_svc.h"
#include "lib.h"
#include "slipstream.h"

#define BIG 16384u
#define SMALL SS_SHM_SMALL_RING

static uint8_t data[3 * BIG];

static int up(struct fake_app *x)
{
	return fake_app_up(x, &(struct fake_opts){ .rxbuf = BIG, .txbuf = BIG, .small = true });
}

/* Where @p is in the region (the library maps it elsewhere than the fake). */
static uint64_t app_off(const struct fake_app *x, const void *p)
{
	return (uint64_t)((const uint8_t *)p - (const uint8_t *)x->app->region);
}

static struct ss_conn *accept_slot(struct fake_app *x, uint32_t slot, uint32_t gen)
{
	struct ss_event ev[2];

	memset(ev, 0, sizeof(ev));
	fake_ev_open(&x->f, 0, SS_EV_ACCEPTED, slot, gen, 1);
	CHECK_EQ_U64(ss_poll(x->ctx, ev, 2), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_ACCEPTED);
	return ev[0].conn;
}

/* The fake service and the library attached, and a connection accepted
 * on @slot; NULL (the test stops, nothing left up) if either failed. */
static struct ss_conn *up_accepted(struct fake_app *x, uint32_t slot, uint32_t gen)
{
	struct ss_conn *c;

	if (up(x) < 0) {
		CHECK(0);
		return NULL;
	}
	c = accept_slot(x, slot, gen);
	if (!c)
		fake_app_down(x);
	return c;
}

/* The next command: @op, @arg, @flags (and @rx_done for a TX). */
static void cmd_next(struct fake_app *x, uint8_t op, uint32_t arg, uint8_t flags,
		     uint32_t rx_done)
{
	struct ss_shm_cmd cmd = { 0 };

	CHECK(fake_cmd(&x->f, 0, &cmd) == 1);
	CHECK_EQ_U64(cmd.op, op);
	CHECK_EQ_U64(cmd.arg, arg);
	CHECK_EQ_U64(cmd.flags, flags);
	if (op == SS_CMD_TX)
		CHECK_EQ_U64(cmd.rx_done, rx_done);
}

/* @n bytes of data[@from...] into the receive ring at @off (of @size
 * bytes), at byte @at, and the SS_EV_RX that says so. */
static void svc_rx(struct fake_app *x, uint32_t slot, uint32_t gen, uint64_t off, uint32_t size,
		   uint32_t at, uint32_t from, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		x->f.region[off + ((at + i) & (size - 1))] = data[from + i];
	fake_ev(&x->f, 0, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = slot, .gen = gen,
					      .arg = n, .arg3 = at & (size - 1) });
	fake_publish(&x->f, 0);
}

/* Reads @n bytes and checks they are data[@from...]. */
static void app_read(struct ss_conn *c, uint32_t from, uint32_t n)
{
	static uint8_t buf[3 * BIG];

	CHECK_EQ_U64(ss_recv(c, buf, n), n);
	CHECK_MEM(buf, data + from, n);
}

/*
 * Receive: a connection opens on its slot's small receive ring.  Once
 * more than half of it was unread, its reports of bytes consumed carry
 * SS_CMDF_RX_GROW until SS_EV_RX_GROWN comes; from then on the data is
 * read from the large ring.  SS_EV_RX_GROWN with bytes unread, or on a
 * large ring, is bogus and changes nothing.
 */
static void test_rx_grow(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	const uint32_t slot = 3, gen = 5;

	struct ss_conn *c = up_accepted(&x, slot, gen);
	if (!c)
		return;
	const uint64_t small = fake_rx_small_off(&x.f, slot), large = fake_rx_off(&x.f, slot);
	const uint32_t shome = ss_shm_ring_home(slot, SMALL), lhome = ss_shm_ring_home(slot, BIG);

	/* Half the small ring: not yet asked for. */
	svc_rx(&x, slot, gen, small, SMALL, shome, 0, SMALL / 2);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	app_read(c, 0, SMALL / 2);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, SMALL / 2, 0, 0);
	/* More than half: asked for with each report until it comes. */
	svc_rx(&x, slot, gen, small, SMALL, shome + SMALL / 2, 100, SMALL / 2 + 1);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	app_read(c, 100, 1000);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, 1000, SS_CMDF_RX_GROW, 0);
	/* Bogus with bytes unread: nothing changes. */
	fake_ev_conn(&x.f, 0, SS_EV_RX_GROWN, slot, gen, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	app_read(c, 1100, SMALL / 2 + 1 - 1000);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, SMALL / 2 + 1 - 1000, SS_CMDF_RX_GROW, 0);
	/* A reply carries it too, on its TX. */
	svc_rx(&x, slot, gen, small, SMALL, shome + 1, 200, 10);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	app_read(c, 200, 10);
	CHECK_EQ_U64(ss_send(c, data, 10), 10);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 10, SS_CMDF_RX_DONE | SS_CMDF_RX_GROW |
				    (ss_shm_ring_home(slot, SMALL) ? SS_CMDF_TX_HOME : 0), 10);
	/* It came: the large ring from the next data on, reports plain. */
	fake_ev_conn(&x.f, 0, SS_EV_RX_GROWN, slot, gen, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 1);
	svc_rx(&x, slot, gen, large, BIG, lhome, 300, BIG - 100);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ev[0].type, SS_EVENT_DATA);
	CHECK_EQ_U64(ev[0].bytes, BIG - 100);
	app_read(c, 300, BIG - 100);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, BIG - 100, 0, 0);
	/* A second one: bogus. */
	fake_ev_conn(&x.f, 0, SS_EV_RX_GROWN, slot, gen, 0, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 2);
	fake_app_down(&x);
}

/*
 * Transmit: a connection opens on its slot's small transmit ring.  With
 * less than half of it free, nothing more is written until all is
 * acknowledged; then the large ring is written from its home byte, a
 * small ring's worth at most until the TX with SS_CMDF_TX_GROW is posted
 * (a commit past that is EINVAL), the whole large ring after.
 */
static void test_tx_grow(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	const uint32_t slot = 5, gen = 2;

	struct ss_conn *c = up_accepted(&x, slot, gen);
	if (!c)
		return;
	const uint8_t *small = x.f.region + fake_tx_small_off(&x.f, slot);
	const uint8_t *large = x.f.region + fake_tx_off(&x.f, slot);
	const uint32_t shome = ss_shm_ring_home(slot, SMALL), lhome = ss_shm_ring_home(slot, BIG);
	CHECK(shome != 0 && shome + 3000 <= SMALL && lhome != 0 && lhome + SMALL <= BIG);

	CHECK_EQ_U64(ss_send_space(c, iov), SMALL);
	CHECK_EQ_U64(ss_send(c, data, 3000), 3000);
	CHECK_MEM(small + shome, data, 3000);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 3000, SS_CMDF_TX_HOME, 0);
	/* 1096 free, less than half: nothing, though there is room. */
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	CHECK_EQ_U64(ss_send(c, data, 100), 0);
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, slot, gen, 2000, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send_space(c, iov), 0); /* until all is acknowledged */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, slot, gen, 1000, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	/* All acknowledged: the large ring, from its home byte, a small
	 * ring's worth until the service is told. */
	CHECK_EQ_U64(ss_send_space(c, iov), SMALL);
	CHECK_EQ_U64(app_off(&x, iov[0].iov_base), fake_tx_off(&x.f, slot) + lhome);
	CHECK_EQ_U64(ss_send(c, data + 3000, 3000), 3000);
	CHECK_EQ_U64(ss_send_space(c, iov), SMALL - 3000);
	CHECK(ss_send_commit(c, SMALL - 3000 + 1) == -1);
	CHECK_EQ_U64(errno, EINVAL);
	CHECK_EQ_U64(ss_send(c, data + 6000, 5000), SMALL - 3000);
	CHECK_MEM(large + lhome, data + 3000, SMALL);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, SMALL, SS_CMDF_TX_GROW, 0);
	/* Told: the rest of the large ring. */
	CHECK_EQ_U64(ss_send_space(c, iov), BIG - SMALL);
	CHECK_EQ_U64(ss_send(c, data + 3000 + SMALL, BIG), BIG - SMALL);
	CHECK_MEM(large + lhome + SMALL, data + 3000 + SMALL, BIG - SMALL - lhome);
	CHECK_MEM(large, data + 3000 + BIG - lhome, lhome); /* round the ring */
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, BIG - SMALL, 0, 0);
	/* Full, then all acknowledged: from the large ring's home byte again
	 * (SS_CMDF_TX_HOME), never the small ring. */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, slot, gen, BIG, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send_space(c, iov), BIG);
	CHECK_EQ_U64(app_off(&x, iov[0].iov_base), fake_tx_off(&x.f, slot) + lhome);
	CHECK_EQ_U64(ss_send(c, data, 64), 64);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 64, SS_CMDF_TX_HOME, 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

/*
 * A sender that only ever finds its small transmit ring full, then (having
 * waited longer than the acknowledgment takes) empty, never sees it "more
 * than half full" with room left: it must move to the large ring all the
 * same, or a bulk sender that sleeps on EAGAIN stays at 4 KiB a wait.
 */
static void test_tx_grow_from_full(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	const uint32_t slot = 3, gen = 1;

	struct ss_conn *c = up_accepted(&x, slot, gen);
	if (!c)
		return;
	const uint8_t *large = x.f.region + fake_tx_off(&x.f, slot);
	const uint32_t lhome = ss_shm_ring_home(slot, BIG);

	CHECK_EQ_U64(ss_send(c, data, 2 * SMALL), SMALL);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, SMALL, SS_CMDF_TX_HOME, 0);
	CHECK_EQ_U64(ss_send(c, data + SMALL, 100), 0); /* full: EAGAIN */
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, slot, gen, SMALL, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	/* All acknowledged at once: the large ring, from its home byte. */
	CHECK_EQ_U64(ss_send_space(c, iov), SMALL);
	CHECK_EQ_U64(app_off(&x, iov[0].iov_base), fake_tx_off(&x.f, slot) + lhome);
	CHECK_EQ_U64(ss_send(c, data + SMALL, SMALL), SMALL);
	for (uint32_t i = 0; i < SMALL; i++)
		if (large[(lhome + i) & (BIG - 1)] != data[SMALL + i]) {
			CHECK_EQ_U64(i, SMALL); /* the first byte that differs */
			break;
		}
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, SMALL, SS_CMDF_TX_GROW, 0);
	CHECK_EQ_U64(ss_send_space(c, iov), BIG - SMALL);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
	fake_app_down(&x);
}

/*
 * A fork while bytes sit in the large transmit ring and the TX that tells
 * the service of the move is not posted yet: they go back to the small
 * ring, where the service's origin has them, and the TX goes out plain.
 * Shared, the connection stays on its small rings: no move is asked for
 * either way.
 */
static void test_share_undoes_grow(void)
{
	struct fake_app x;
	struct ss_event ev[4];
	struct iovec iov[2];
	const uint32_t slot = 2, gen = 4;

	if (up(&x) < 0) {
		CHECK(0);
		return;
	}
	struct ss_shm_conn_sync *w = (struct ss_shm_conn_sync *)(void *)(x.f.region +
									 x.f.hdr->sync_off) + slot;
	w->tx = w->rx = ss_sync_word(gen, 0, 0);
	struct ss_conn *c = accept_slot(&x, slot, gen);
	if (!c)
		goto out;
	const uint8_t *small = x.f.region + fake_tx_small_off(&x.f, slot);
	const uint8_t *large = x.f.region + fake_tx_off(&x.f, slot);
	const uint32_t shome = ss_shm_ring_home(slot, SMALL), lhome = ss_shm_ring_home(slot, BIG);

	CHECK_EQ_U64(ss_send(c, data, 3000), 3000);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 3000, shome ? SS_CMDF_TX_HOME : 0, 0);
	CHECK_EQ_U64(ss_send_space(c, iov), 0);
	fake_ev_conn(&x.f, 0, SS_EV_TX_ACKED, slot, gen, 3000, 0);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	CHECK_EQ_U64(ss_send(c, data + 3000, 1500), 1500);
	CHECK_MEM(large + lhome, data + 3000, 1500);
	ss_conn_share(c);
	/* Where position 3000 is for the service: after the first 3000, round
	 * the small ring. */
	for (uint32_t i = 0; i < 1500; i++)
		if (small[(shome + 3000 + i) & (SMALL - 1)] != data[3000 + i]) {
			CHECK(small[(shome + 3000 + i) & (SMALL - 1)] == data[3000 + i]);
			break;
		}
	CHECK_EQ_U64(w->tx, ss_sync_word(gen, SS_SYNC_ON, 4500));
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_TX, 1500, 0, 0);
	CHECK_EQ_U64(ss_send_space(c, iov), SMALL - 1500);
	CHECK_EQ_U64(app_off(&x, iov[0].iov_base),
		     fake_tx_small_off(&x.f, slot) + ((shome + 4500) & (SMALL - 1)));
	/* Shared: more than half of the small ring unread asks for nothing. */
	const uint64_t rsmall = fake_rx_small_off(&x.f, slot);
	svc_rx(&x, slot, gen, rsmall, SMALL, ss_shm_ring_home(slot, SMALL), 0, SMALL - 10);
	CHECK_EQ_U64(ss_poll(x.ctx, ev, 4), 1);
	app_read(c, 0, SMALL - 10);
	CHECK(ss_flush(x.ctx) == 0);
	cmd_next(&x, SS_CMD_RX_DONE, SMALL - 10, 0, 0);
	CHECK_EQ_U64(fake_app_bogus(&x), 0);
out:
	fake_app_down(&x);
}

int main(void)
{
	uint64_t seed = 11;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)check_rand(&seed);
	test_rx_grow();
	test_tx_grow();
	test_tx_grow_from_full();
	test_share_undoes_grow();
	return check_done("test_lib_rings");
}
