/* test_tcp_established.c - TCP engine in ESTABLISHED: receive, send, windows, timers, RTT, NewReno, PAWS (RFC 9293, 6298, 5681, 6582, 7323). */
#include "tcp_harness.h"

static struct harness h;

#define MSS_TS (1460 - 12)

/* Several in-order segments, then one output: one ACK for the burst. */
static void test_established_rx_in_order_burst(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_send(&h, 1000);
	h_peer_send(&h, 1000);
	h_peer_send(&h, 1000);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_RX);
	CHECK_EQ_U64(h.c.rx_new, 3000);
	CHECK_EQ_U64(ss_tcp_rx_avail(&h.c), 3000);
	CHECK(h_rx_matches(&h, 0, 0, 3000));
	CHECK_EQ_U64(h.c.st.fast_path, 3);
	CHECK_EQ_U64(h_output(&h), 1);
	const struct ss_tcp *a = &h.out[0].hdr;

	CHECK_EQ_U64(a->flags, SS_TCP_ACK);
	CHECK_EQ_U64(a->seq, cfg.iss + 1);
	CHECK_EQ_U64(a->ack, cfg.peer_iss + 1 + 3000);
	CHECK_EQ_U64(a->window, 16384 - 3000);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h_output(&h), 0); /* nothing more to say */
	harness_free(&h);
}

/* The ring fills: the window shrinks to zero, data beyond it is dropped
 * with an ACK, and recv_done reopens it once it grew by 2 MSS. */
static void test_established_rx_window_fill(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	for (unsigned i = 0; i < 16; i++)
		h_peer_send(&h, 1024);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.window, 0);
	CHECK_EQ_U64(h.c.f.rcv_adv, h.c.f.rcv_nxt);
	CHECK(h_rx_matches(&h, 0, 0, 16384));
	h_clear(&h);
	/* Zero window: the segment at rcv_nxt is refused, its ACK is used. */
	CHECK(h_app_send(&h, 10) == 0);
	h_output(&h);
	h_clear(&h);
	h_peer_data_at(&h, 16384, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.c.f.snd_una, cfg.iss + 1 + 10);
	CHECK_EQ_U64(h.c.st.drop_out_of_window, 1);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 16384);
	CHECK_EQ_U64(h.out[0].hdr.window, 0);
	/* Beyond a zero window (not at rcv_nxt): unacceptable, ACK now. */
	h_clear(&h);
	h_peer_data_at(&h, 16384 + 50, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.st.drop_out_of_window, 2);
	h_clear(&h);
	/* 1000 bytes read: less than 2 * MSS, no update yet. */
	CHECK(ss_tcp_recv_done(&h.c, 1000) == 0);
	CHECK_EQ_U64(h_output(&h), 0);
	/* 2000 more: the window opened by 3000 >= 2 * 1448: update. */
	CHECK(ss_tcp_recv_done(&h.c, 2000) == 0);
	CHECK_EQ_U64(h_output(&h), 1);
	CHECK_EQ_U64(h.out[0].hdr.window, 3000);
	CHECK(ss_tcp_recv_done(&h.c, 20000) == -1);
	CHECK_EQ_U64(ss_tcp_rx_avail(&h.c), 16384 - 3000);
	/* The peer fills the 3000 again, wrapping the ring. */
	h_clear(&h);
	h_peer_send(&h, 3000);
	CHECK_EQ_U64(h.c.rx_new, 3000);
	CHECK(h_rx_matches(&h, 16384, 16384, 3000));
	harness_free(&h);
}

/* Ring origins (struct ss_tcp_ring): the receive ring starts again at
 * its home byte when data comes with nothing unread and nothing out of
 * order, and only then; the transmit ring when the application says so
 * (ss_tcp_tx_restart) with everything acknowledged, and only then.  With
 * home bytes @rx_home and @tx_home (ring bytes below are relative to them,
 * round the ring). */
static void established_ring_origin(uint32_t rx_home, uint32_t tx_home)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_home = rx_home;
	cfg.tx_home = tx_home;
	harness_established(&h, &cfg);
	uint32_t rmask = cfg.rx_size - 1, tmask = cfg.tx_size - 1;
	/* A new connection's origin is 0: the first data moves it (the ring
	 * was empty), unless the home byte is 0. */
	h_peer_send(&h, 1000);
	CHECK_EQ_U64(h.c.rx.origin, (uint32_t)-rx_home);
	CHECK(h_rx_matches(&h, rx_home, 0, 1000));
	CHECK(ss_tcp_recv_done(&h.c, 1000) == 0);
	/* Empty: the next 500 go to the home byte. */
	h_peer_send(&h, 500);
	CHECK_EQ_U64(h.c.rx.origin, 1000 - rx_home);
	CHECK_EQ_U64(ss_tcp_rx_offset(&h.c, 1000), rx_home);
	CHECK(h_rx_matches(&h, rx_home, 1000, 500));
	/* 300 unread: the origin stays, the next 100 follow 500 bytes on. */
	CHECK(ss_tcp_recv_done(&h.c, 200) == 0);
	h_peer_send(&h, 100);
	CHECK_EQ_U64(h.c.rx.origin, 1000 - rx_home);
	CHECK(h_rx_matches(&h, (rx_home + 500) & rmask, 1500, 100));
	/* Empty but for data out of order: it stays too, so the interval
	 * (1000 bytes on from position 1000) is where the in-order data
	 * meets it. */
	CHECK(ss_tcp_recv_done(&h.c, 400) == 0);
	h_peer_data_at(&h, 2000, 300, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.ooo_len, 300);
	h_peer_data_at(&h, 1600, 400, h.c.f.snd_max, 0);
	h.peer_nxt += 700;
	CHECK_EQ_U64(h.c.rx.origin, 1000 - rx_home);
	CHECK_EQ_U64(h.c.f.rx_tail, 2300);
	CHECK(h_rx_matches(&h, (rx_home + 600) & rmask, 1600, 700));
	/* All read: the next bytes at the home byte again. */
	CHECK(ss_tcp_recv_done(&h.c, 700) == 0);
	h_peer_send(&h, 1200);
	CHECK_EQ_U64(h.c.rx.origin, 2300 - rx_home);
	CHECK(h_rx_matches(&h, rx_home, 2300, 1200));
	h_output(&h);
	h_clear(&h);

	/* Transmit: refused with bytes unacknowledged, nothing changes. */
	CHECK(h_app_send(&h, 700) == 0);
	CHECK(ss_tcp_tx_restart(&h.c) == -1);
	CHECK_EQ_U64(h.c.tx.origin, 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK(h_seg_matches(&h, &h.out[0]));
	h_clear(&h);
	h_peer_data_at(&h, h.peer_nxt - cfg.peer_iss - 1, 0, h.c.f.snd_max, 0);
	CHECK_EQ_U64(ss_tcp_tx_queued(&h.c), 0);
	/* All acknowledged: position 700 is at the home byte from now on. */
	CHECK(ss_tcp_tx_restart(&h.c) == 0);
	CHECK_EQ_U64(h.c.tx.origin, 700 - tx_home);
	CHECK(h_app_send(&h, 900) == 0);
	CHECK_EQ_U64(h.txbuf[tx_home], h_pat_ours(700));
	CHECK_EQ_U64(h.txbuf[(tx_home + 899) & tmask], h_pat_ours(1599));
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 900);
	CHECK(h_seg_matches(&h, &h.out[0]));
	harness_free(&h);
}

static void test_established_ring_origin(void)
{
	established_ring_origin(0, 0);
	established_ring_origin(64 * 37, 64 * 21);
	/* Near the end: the messages wrap round the ring. */
	established_ring_origin(16384 - 64, 65536 - 128); /* h_cfg_default() sizes */
}

/*
 * Small rings that grow (shm/abi.h): a connection on 4 KiB rings whose
 * receive ring may grow to 64 KiB offers the window scale for 64 KiB from
 * the start and the small ring's room as its window.  The receive ring
 * moves only with nothing unread and nothing out of order, and never to a
 * smaller one; the next in-order bytes land at the new ring's home byte,
 * and an ACK offers the larger window at once.  The transmit ring moves
 * only with everything acknowledged; the next bytes go from its home
 * byte.
 */
static void test_established_rings_grow(void)
{
	const uint32_t big = 65536, rx_home = 64 * 9, tx_home = 64 * 13;
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = cfg.tx_size = 4096;
	cfg.rx_room = big;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.rcv_wscale, 1); /* 65536 >> 1 fits the field */

	uint8_t *small_rx = h.rxbuf, *large_rx = calloc(1, big);
	uint8_t *small_tx = h.txbuf, *large_tx = calloc(1, big);
	struct ss_tcp_ring lrx = { .base = large_rx, .size = big, .home = rx_home };
	struct ss_tcp_ring ltx = { .base = large_tx, .size = big, .home = tx_home };
	struct ss_tcp_ring half = { .base = large_rx, .size = 2048, .home = 0 };

	/* Unread bytes: refused, nothing changes. */
	h_peer_send(&h, 3000);
	CHECK(ss_tcp_rx_grow(&h.c, lrx) == -1);
	CHECK(h.c.rx.base == small_rx && h.c.rx.size == 4096);
	h_output(&h);
	CHECK_EQ_U64(h_last(&h)->hdr.window, (4096 - 3000) >> 1);
	/* Nothing unread but bytes out of order: refused. */
	CHECK(ss_tcp_recv_done(&h.c, 3000) == 0);
	h_peer_data_at(&h, 3500, 500, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.ooo_len, 500);
	CHECK(ss_tcp_rx_grow(&h.c, lrx) == -1);
	h_peer_data_at(&h, 3000, 500, h.c.f.snd_max, 0);
	h.peer_nxt += 1000;
	CHECK(ss_tcp_recv_done(&h.c, 1000) == 0);
	/* Empty: a smaller ring is refused, the large one taken. */
	CHECK(ss_tcp_rx_grow(&h.c, half) == -1);
	h_clear(&h);
	CHECK(ss_tcp_rx_grow(&h.c, lrx) == 0);
	CHECK(h.c.rx.base == large_rx && h.c.rx.size == big);
	CHECK_EQ_U64(ss_tcp_rx_offset(&h.c, 4000), rx_home);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1); /* the ACK with the larger window */
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.out[0].hdr.window, big >> 1);
	h.rxbuf = large_rx;
	h_clear(&h);
	/* 20000 bytes now fit, from the home byte. */
	for (int i = 0; i < 20; i++)
		h_peer_send(&h, 1000);
	CHECK_EQ_U64(h.c.f.rx_tail, 24000);
	CHECK(h_rx_matches(&h, rx_home, 4000, 20000));
	CHECK(ss_tcp_recv_done(&h.c, 20000) == 0);
	h_output(&h);
	h_clear(&h);

	/* Transmit: unacknowledged bytes, refused. */
	CHECK(h_app_send(&h, 3000) == 0);
	CHECK(ss_tcp_tx_grow(&h.c, ltx) == -1);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	for (unsigned i = 0; i < h.nout; i++)
		CHECK(h_seg_matches(&h, &h.out[i]));
	h_clear(&h);
	h_peer_data_at(&h, h.peer_nxt - cfg.peer_iss - 1, 0, h.c.f.snd_max, 0);
	CHECK_EQ_U64(ss_tcp_tx_queued(&h.c), 0);
	struct ss_tcp_ring ttiny = { .base = large_tx, .size = 2048, .home = 0 };
	CHECK(ss_tcp_tx_grow(&h.c, ttiny) == -1);
	CHECK(ss_tcp_tx_grow(&h.c, ltx) == 0);
	CHECK(h.c.tx.base == large_tx && h.c.tx.size == big);
	CHECK_EQ_U64(h.c.tx.origin, 3000 - tx_home);
	h.txbuf = large_tx;
	CHECK(h_app_send(&h, 30000) == 0); /* more than the small ring held */
	CHECK_EQ_U64(large_tx[tx_home], h_pat_ours(3000));
	CHECK_EQ_U64(large_tx[tx_home + 29999], h_pat_ours(32999));
	uint32_t sent = 0;
	for (int round = 0; round < 8 && sent < 30000; round++) {
		h_output(&h);
		for (unsigned i = 0; i < h.nout; i++) {
			CHECK(h_seg_matches(&h, &h.out[i]));
			sent += h.out[i].len;
		}
		h_clear(&h);
		h_peer_data_at(&h, h.peer_nxt - cfg.peer_iss - 1, 0, h.c.f.snd_max, 0);
	}
	CHECK_EQ_U64(sent, 30000);
	CHECK_EQ_U64(ss_tcp_tx_queued(&h.c), 0);
	free(small_rx);
	free(small_tx);
	harness_free(&h);
}

/*
 * ss_tcp_rings_move() into larger rings (an adopter's large rings while
 * the connection was on its small ones): unread, out-of-order and
 * unacknowledged bytes all land where their stream positions are with
 * origin 0, from small rings whose origins wrap them round; and nothing
 * moves into a smaller ring.
 */
static void test_established_rings_move_larger(void)
{
	const uint32_t big = 65536;
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rx_size = cfg.tx_size = 4096;
	cfg.rx_home = 4096 - 64 * 2;
	cfg.tx_home = 4096 - 64 * 3;
	cfg.rx_room = big;
	harness_established(&h, &cfg);
	/* Receive: 1000 read, so the next data lands at the home byte and
	 * wraps; 1500 unread, then 400 out of order 300 bytes on. */
	h_peer_send(&h, 1000);
	CHECK(ss_tcp_recv_done(&h.c, 1000) == 0);
	h_peer_send(&h, 1500);
	h_peer_data_at(&h, 2800, 400, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.ooo_len, 400);
	CHECK(h_rx_matches(&h, cfg.rx_home, 1000, 1500));
	/* Transmit: 700 acknowledged, then from the home byte (wrapping),
	 * 2000 unacknowledged. */
	CHECK(h_app_send(&h, 700) == 0);
	h_output(&h);
	h_clear(&h);
	h_peer_data_at(&h, h.peer_nxt - cfg.peer_iss - 1, 0, h.c.f.snd_max, 0);
	CHECK(ss_tcp_tx_restart(&h.c) == 0);
	CHECK(h_app_send(&h, 2000) == 0);
	h_output(&h);
	h_clear(&h);
	CHECK_EQ_U64(ss_tcp_tx_queued(&h.c), 2000);

	uint8_t *rx = calloc(1, big), *tx = calloc(1, big);
	struct ss_tcp_ring lrx = { .base = rx, .size = big }, ltx = { .base = tx, .size = big };
	struct ss_tcp_ring srx = { .base = rx, .size = 2048 };
	CHECK(ss_tcp_rings_move(&h.c, srx, ltx) == -1);
	CHECK(h.c.rx.size == 4096 && h.c.tx.size == 4096);
	CHECK(ss_tcp_rings_move(&h.c, lrx, ltx) == 0);
	free(h.rxbuf);
	free(h.txbuf);
	h.rxbuf = rx;
	h.txbuf = tx;
	CHECK_EQ_U64(h.c.rx.origin, 0);
	CHECK_EQ_U64(h.c.tx.origin, 0);
	CHECK(h_rx_matches(&h, 1000, 1000, 1500));
	CHECK(h_rx_matches(&h, 2800, 2800, 400));
	for (uint32_t i = 0; i < 2000; i++)
		if (tx[700 + i] != h_pat_ours(700 + i)) {
			CHECK(tx[700 + i] == h_pat_ours(700 + i));
			break;
		}
	/* The hole filled: all 2700 in order, and more than 4 KiB fits. */
	const uint32_t acked = cfg.iss + 1 + 700; /* the peer has none of the 2000 */
	h_peer_data_at(&h, 2500, 300, acked, 0);
	h.peer_nxt += 700;
	CHECK_EQ_U64(h.c.f.rx_tail, 3200);
	h_peer_data_at(&h, 3200, 10000, acked, 0);
	h.peer_nxt += 10000;
	CHECK_EQ_U64(h.c.f.rx_tail, 13200);
	CHECK(h_rx_matches(&h, 1000, 1000, 12200));
	/* The unacknowledged bytes go again from the large ring (RTO). */
	h_clear(&h);
	h_fire(&h);
	CHECK(h.nout >= 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1 + 700);
	CHECK(h_seg_matches(&h, &h.out[0]));
	harness_free(&h);
}

/* Out-of-order intervals kept, merged, reported in SACK blocks (latest
 * first, RFC 2018 §4), then absorbed in order. */
static void test_established_rx_out_of_order(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	uint32_t base = cfg.peer_iss + 1;

	h_peer_data_at(&h, 1000, 1000, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.c.f.ooo_start, 1000);
	CHECK_EQ_U64(h.c.f.ooo_len, 1000);
	CHECK_EQ_U64(h.nout, 1); /* immediate duplicate ACK, with SACK */
	CHECK_EQ_U64(h.out[0].hdr.ack, base);
	CHECK_EQ_U64(h.out[0].hdr.window, 16384);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack_count, 1);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack[0].left, base + 1000);
	CHECK_EQ_U64(h.out[0].hdr.opts.sack[0].right, base + 2000);
	/* Disjoint second interval: kept; its block comes first. */
	h_peer_data_at(&h, 3000, 500, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, 0);
	CHECK_EQ_U64(h.c.ooo_n, 2);
	CHECK_EQ_U64(h.c.f.ooo_len, 1000); /* the lowest stays mirrored */
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[1].hdr.opts.sack_count, 2);
	CHECK_EQ_U64(h.out[1].hdr.opts.sack[0].left, base + 3000);
	CHECK_EQ_U64(h.out[1].hdr.opts.sack[0].right, base + 3500);
	CHECK_EQ_U64(h.out[1].hdr.opts.sack[1].left, base + 1000);
	/* Abutting the first: merged (not yet touching the second). */
	h_peer_data_at(&h, 2000, 500, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.ooo_start, 1000);
	CHECK_EQ_U64(h.c.f.ooo_len, 1500);
	CHECK_EQ_U64(h.c.ooo_n, 2);
	/* Overlapping its front: merged too. */
	h_peer_data_at(&h, 800, 300, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.f.ooo_start, 800);
	CHECK_EQ_U64(h.c.f.ooo_len, 1700);
	CHECK_EQ_U64(h.nout, 4);
	/* The hole is filled: everything up to 2500 is readable; the
	 * interval at 3000 stays. */
	h_clear(&h);
	h_peer_data_at(&h, 0, 800, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 2500);
	CHECK_EQ_U64(h.c.f.rcv_nxt, base + 2500);
	CHECK_EQ_U64(h.c.f.rx_tail, 2500);
	CHECK_EQ_U64(h.c.ooo_n, 1);
	CHECK_EQ_U64(h.c.f.ooo_start, 3000);
	CHECK(h_rx_matches(&h, 0, 0, 2500));
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, base + 2500);
	/* A segment that fills the hole and runs past the interval. */
	h_clear(&h);
	h_peer_data_at(&h, 2500, 1200, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 1200);
	CHECK_EQ_U64(h.c.f.ooo_len, 0);
	CHECK_EQ_U64(h.c.ooo_n, 0);
	CHECK(h_rx_matches(&h, 0, 0, 3700));
	/* Five disjoint holes: five intervals kept (test_tcp_ooo.c fills
	 * all SS_TCP_OOO_MAX). */
	h_clear(&h);
	for (uint32_t k = 0; k < 5; k++)
		h_peer_data_at(&h, 4000 + 200 * k, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.ooo_n, 5);
	CHECK_EQ_U64(h.c.st.drop_ooo_outside, 0);
	/* A segment bridging two intervals merges them into one. */
	h_peer_data_at(&h, 4100, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.ooo_n, 4);
	CHECK_EQ_U64(h.c.f.ooo_start, 4000);
	CHECK_EQ_U64(h.c.f.ooo_len, 300);
	/* Filling the first hole absorbs only what is contiguous. */
	h_clear(&h);
	h_peer_data_at(&h, 3700, 300, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 600);
	CHECK_EQ_U64(h.c.f.rx_tail, 4300);
	CHECK_EQ_U64(h.c.ooo_n, 3);
	CHECK(h_rx_matches(&h, 0, 0, 4300));
	harness_free(&h);
}

/* Old duplicates are ACKed and counted, not copied again; a segment
 * straddling rcv_nxt contributes only its new bytes. */
static void test_established_rx_duplicate_overlap(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_send(&h, 1000);
	h_output(&h);
	h_clear(&h);
	h.rxbuf[10] = 0xEE; /* must stay: the duplicate is not copied */
	h_peer_data_at(&h, 0, 1000, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.dup_data, 1000);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.rxbuf[10], 0xEE);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 1000);
	h.rxbuf[10] = h_pat_peer(10);
	h_clear(&h);
	h_peer_data_at(&h, 500, 1000, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.dup_data, 1500);
	CHECK_EQ_U64(h.c.rx_new, 500);
	CHECK_EQ_U64(h.c.f.rcv_nxt, cfg.peer_iss + 1 + 1500);
	CHECK(h_rx_matches(&h, 0, 0, 1500));
	harness_free(&h);
}

/* Sequence numbers wrap around 2^32 in both directions. */
static void test_established_seq_wraparound(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.iss = 0xffffff00u;
	cfg.peer_iss = 0xfffffe00u;
	harness_established(&h, &cfg);
	for (unsigned i = 0; i < 4; i++)
		h_peer_send(&h, 1000);
	CHECK_EQ_U64(h.c.rx_new, 4000);
	CHECK_EQ_U64(h.c.f.rcv_nxt, (uint32_t)(cfg.peer_iss + 1 + 4000));
	CHECK(h_rx_matches(&h, 0, 0, 4000));
	CHECK_EQ_U64(h.c.st.fast_path, 4);
	CHECK(h_app_send(&h, 4000) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ_U64(h.out[i].hdr.seq, (uint32_t)(cfg.iss + 1 + i * MSS_TS));
		CHECK(h_seg_matches(&h, &h.out[i]));
	}
	CHECK_EQ_U64(h.out[2].len, 4000 - 2 * MSS_TS);
	h_clear(&h);
	h_peer_ack(&h, (uint32_t)(cfg.iss + 1 + 4000), 65535);
	CHECK_EQ_U64(h.c.tx_acked, 4000);
	CHECK_EQ_U64(h.c.f.snd_una, (uint32_t)(cfg.iss + 4001));
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	/* Out-of-order across the wrap too. */
	h_peer_data_at(&h, 5000, 100, h.c.f.snd_max, 0);
	h_peer_data_at(&h, 4000, 1000, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.rx_new, 1100);
	CHECK(h_rx_matches(&h, 4000, 4000, 1100));
	harness_free(&h);
}

/* Send: MSS segments, PSH on the last, RTO armed. */
static void test_established_tx_segmentation(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 5000) == 0);
	CHECK_EQ_U64(h_output(&h), 4);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ_U64(h.out[i].hdr.seq, cfg.iss + 1 + i * MSS_TS);
		CHECK_EQ_U64(h.out[i].hdr.ack, cfg.peer_iss + 1);
		CHECK_EQ_U64(h.out[i].hdr.flags, i == 3 ? SS_TCP_ACK | SS_TCP_PSH : SS_TCP_ACK);
		CHECK_EQ_U64(h.out[i].hdr.opts.present, SS_TCP_OPTF_TS);
		CHECK_EQ_U64(h.out[i].hdr.opts.ts_val, h.now / 1000 + cfg.ts_offset);
		CHECK_EQ_U64(h.out[i].hdr.opts.ts_ecr, 5000);
		CHECK(h_seg_matches(&h, &h.out[i]));
	}
	CHECK_EQ_U64(h.out[3].len, 5000 - 3 * MSS_TS);
	CHECK_EQ_U64(h.c.f.snd_nxt, cfg.iss + 1 + 5000);
	CHECK_EQ_U64(h.c.f.snd_max, cfg.iss + 1 + 5000);
	CHECK_EQ_U64(h.c.rto_deadline_us, h.now + 200000);
	CHECK_EQ_U64(ss_tcp_tx_space(&h.c), 65536 - 5000);
	CHECK(ss_tcp_send(&h.c, 65536) == -1);
	/* ACK of part: space freed, TX_ACKED with the count, RTO restarted. */
	h_clear(&h);
	h.now += 10000;
	h_peer_ack(&h, cfg.iss + 1 + 2000, 65535);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_TX_ACKED);
	CHECK_EQ_U64(h.c.tx_acked, 2000);
	CHECK_EQ_U64(h.c.f.tx_head, 2000);
	CHECK_EQ_U64(ss_tcp_tx_space(&h.c), 65536 - 3000);
	CHECK_EQ_U64(h.c.f.cwnd, 10 * MSS_TS + MSS_TS); /* slow start: + min(acked, MSS) */
	CHECK_EQ_U64(h.c.rto_deadline_us, h.now + 200000);
	CHECK_EQ_U64(h.c.st.fast_path, 1); /* a pure ACK that acks new data is fast */
	h_peer_ack(&h, cfg.iss + 1 + 5000, 65535);
	CHECK_EQ_U64(h.c.tx_acked, 5000);
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	harness_free(&h);
}

/* Limited by the peer's window, then by cwnd. */
static void test_established_tx_window_limits(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_ack(&h, cfg.iss + 1, 3000);
	CHECK_EQ_U64(h.c.f.snd_wnd, 3000);
	CHECK(h_app_send(&h, 30000) == 0);
	CHECK_EQ_U64(h_output(&h), 3);
	CHECK_EQ_U64(h.out[2].len, 3000 - 2 * MSS_TS);
	CHECK_EQ_U64(h.out[2].hdr.flags, SS_TCP_ACK | SS_TCP_PSH);
	CHECK_EQ_U64(h_output(&h), 0);
	h_clear(&h);
	/* Window opens wide: cwnd (10 MSS) is the limit. */
	h_peer_ack(&h, cfg.iss + 1, 65535);
	h_output(&h);
	CHECK_EQ_U64(h.c.f.snd_max - h.c.f.snd_una, 10 * MSS_TS);
	CHECK_EQ_U64(h.nout, 8); /* 3000 already out: 11480 more */
	harness_free(&h);
}

/* The peer's window scale (0, 7, 14) applies to every non-SYN window. */
static void test_established_tx_wscale(void)
{
	static const uint8_t shifts[] = { 0, 7, 14 };

	for (unsigned i = 0; i < 3; i++) {
		struct h_cfg cfg;

		h_cfg_default(&cfg);
		cfg.peer_wscale = shifts[i];
		harness_established(&h, &cfg);
		h_peer_ack(&h, cfg.iss + 1, 10);
		CHECK_EQ_U64(h.c.f.snd_wnd, 10u << shifts[i]);
		CHECK(h_app_send(&h, 2000) == 0);
		h_output(&h);
		uint32_t want = 10u << shifts[i] < 2000 ? 10u << shifts[i] : 2000;

		CHECK_EQ_U64(h.c.f.snd_max - h.c.f.snd_una, want);
		harness_free(&h);
	}
}

/* Zero window: persist probes with backoff; reopening resumes sending. */
static void test_established_persist(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_ack(&h, cfg.iss + 1, 0);
	CHECK(h_app_send(&h, 3000) == 0);
	CHECK_EQ_U64(h_output(&h), 0);
	CHECK_EQ_U64(h.c.rto_deadline_us, 0);
	uint64_t t = h.now + 200000;

	CHECK_EQ_U64(h.c.persist_deadline_us, t);
	for (unsigned i = 0; i < 3; i++) {
		h.now = t;
		h_timer(&h);
		CHECK_EQ_U64(h.nout, i + 1);
		CHECK_EQ_U64(h_last(&h)->hdr.seq, cfg.iss + 1);
		CHECK_EQ_U64(h_last(&h)->len, 1);
		CHECK_EQ_U64(h_last(&h)->data[0], h_pat_ours(0));
		t += 200000ull << (i + 1);
		CHECK_EQ_U64(h.c.persist_deadline_us, t);
		CHECK_EQ_U64(h.c.rto_deadline_us, 0);
		/* The peer answers each probe with a zero window: no give-up count. */
		h_peer_ack(&h, cfg.iss + 1, 0);
		CHECK_EQ_U64(h.c.retries, 0);
		CHECK_EQ_U64(h.c.st.dup_acks, 0);
	}
	CHECK_EQ_U64(h.c.st.persist_probes, 3);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	/* The window opens: probe byte and the rest go out. */
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 1, 65535);
	CHECK_EQ_U64(h.c.persist_deadline_us, 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK_EQ_U64(h.c.f.snd_max, cfg.iss + 1 + 3000);
	CHECK(h.c.rto_deadline_us != 0);
	harness_free(&h);
}

/* A probe the peer accepts moves snd_una; unanswered probes give up. */
static void test_established_persist_give_up(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_ack(&h, cfg.iss + 1, 0);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h_fire(&h);
	h_peer_ack(&h, cfg.iss + 2, 0); /* probe byte taken, window still 0 */
	CHECK_EQ_U64(h.c.f.snd_una, cfg.iss + 2);
	CHECK_EQ_U64(h.c.tx_acked, 1);
	CHECK(h.c.persist_deadline_us != 0);
	h_clear(&h);
	for (unsigned i = 0; i < 15; i++)
		h_fire(&h);
	CHECK_EQ_U64(h.nout, 15);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h.c.events, SS_TCP_EV_ERROR | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h_last(&h)->hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* RTO: go-back-N from snd_una, cwnd 1 MSS, doubling, give up after 15. */
static void test_established_rto(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 4000) == 0);
	h_output(&h);
	h_clear(&h);
	uint64_t t = h.now + 200000;

	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t);
	h.now = t;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK_EQ_U64(h.c.f.cwnd, MSS_TS);
	CHECK_EQ_U64(h.c.f.ssthresh, 2 * MSS_TS); /* max(4000 / 2, 2 MSS) */
	/* With SACK no go-back-N: recovery resends from the scoreboard. */
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.f.snd_nxt, cfg.iss + 1 + 4000);
	CHECK_EQ_U64(h.c.f.snd_max, cfg.iss + 1 + 4000);
	CHECK_EQ_U64(h.c.f.backoff, 1);
	CHECK_EQ_U64(h.c.st.rto_fired, 1);
	CHECK_EQ_U64(h.c.st.retrans_segs, 1);
	t += 400000;
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), t);
	/* ACK of the resent segment: cwnd grows, the rest goes out. */
	h_clear(&h);
	h_peer_ack(&h, cfg.iss + 1 + MSS_TS, 65535);
	CHECK_EQ_U64(h.c.f.backoff, 0);
	CHECK_EQ_U64(h.c.f.cwnd, 2 * MSS_TS);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 2);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1 + MSS_TS);
	CHECK_EQ_U64(h.c.st.retrans_segs, 3);
	/* Now nothing is acked any more: 15 retransmissions, then ETIMEDOUT. */
	h_clear(&h);
	uint64_t prev = h.now;

	for (unsigned i = 0; i < 15; i++) {
		uint64_t d = ss_tcp_next_deadline(&h.c);
		uint64_t want = 200000ull << i;

		CHECK_EQ_U64(d - prev, want > 60000000 ? 60000000 : want);
		h.now = prev = d;
		h_timer(&h);
		CHECK_EQ_U64(h.c.f.state, SS_TCPS_ESTABLISHED);
	}
	CHECK_EQ_U64(h.nout, 15);
	CHECK_EQ_U64(h.c.retries, 15);
	h_fire(&h);
	CHECK_EQ_U64(h.c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.c.error, ETIMEDOUT);
	CHECK_EQ_U64(h.c.events & (SS_TCP_EV_ERROR | SS_TCP_EV_CLOSED), SS_TCP_EV_ERROR | SS_TCP_EV_CLOSED);
	CHECK_EQ_U64(h.nout, 16);
	CHECK_EQ_U64(h_last(&h)->hdr.flags, SS_TCP_RST | SS_TCP_ACK);
	CHECK_EQ_U64(h_last(&h)->hdr.seq, cfg.iss + 1 + 4000);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	CHECK_EQ_U64(h.closed_count, 1);
	harness_free(&h);
}

/* RFC 6298 values for a known sample sequence (timing, no timestamps). */
static void test_established_rtt_rfc6298(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.ts = false;
	cfg.rto_min_us = 1000;
	harness_established(&h, &cfg);
	/* SYN sample 10 ms: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR. */
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	CHECK_EQ_U64(h.c.f.rttvar_us, 5000);
	CHECK_EQ_U64(h.c.f.rto_us, 30000);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h.now += 100000;
	h_peer_ack(&h, cfg.iss + 101, 65535);
	CHECK_EQ_U64(h.c.f.rttvar_us, 26250); /* 3/4 5000 + 1/4 |10000 - 100000| */
	CHECK_EQ_U64(h.c.f.srtt_us, 21250);   /* 7/8 10000 + 1/8 100000 */
	CHECK_EQ_U64(h.c.f.rto_us, 21250 + 4 * 26250);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h.now += 50000;
	h_peer_ack(&h, cfg.iss + 201, 65535);
	CHECK_EQ_U64(h.c.f.rttvar_us, 26875);
	CHECK_EQ_U64(h.c.f.srtt_us, 24843);
	CHECK_EQ_U64(h.c.f.rto_us, 24843 + 4 * 26875);
	/* Karn: a retransmitted segment gives no sample. */
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h_fire(&h);
	h.now += 1000;
	h_peer_ack(&h, cfg.iss + 301, 65535);
	CHECK_EQ_U64(h.c.f.srtt_us, 24843);
	CHECK_EQ_U64(h.c.f.rto_us, 24843 + 4 * 26875);
	/* Upper clamp. */
	h.p.rto_max_us = 50000;
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h.now += 10000;
	h_peer_ack(&h, cfg.iss + 401, 65535);
	CHECK_EQ_U64(h.c.f.rto_us, 50000);
	harness_free(&h);
}

/* With timestamps on, RTT samples still come from the timed segment, in
 * microseconds (the TS clock ticks in ms: a 300 us RTT would read 0 or 1
 * ms); while Karn's rule stops timing, TSecr gives the sample (ms). */
static void test_established_rtt_timestamps(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.rto_min_us = 1000;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h); /* timed */
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h); /* not timed: one segment per RTT */
	h.now += 300;
	h_peer_ack(&h, cfg.iss + 101, 65535); /* echoes the TSval of the data */
	CHECK_EQ_U64(h.c.f.srtt_us, (7 * 10000 + 300) / 8);
	uint32_t srtt = h.c.f.srtt_us;
	/* The untimed segment's ACK gives no (millisecond) sample. */
	h.now += 5000;
	h_peer_ack(&h, cfg.iss + 201, 65535);
	CHECK_EQ_U64(h.c.f.srtt_us, srtt);
	/* Resent after a timeout: no timed sample; the echo of the resent
	 * segment's TSval tells its RTT, whole milliseconds. */
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h_fire(&h);
	CHECK((h.c.f.flags & SS_TCPF_RTT_TIMING) == 0);
	h.now += 3000;
	h_peer_ack(&h, cfg.iss + 301, 65535);
	CHECK_EQ_U64(h.c.f.srtt_us, (7 * srtt + 3000) / 8);
	CHECK_EQ_U64(h.c.karn, 0); /* all acknowledged: timing may resume */
	harness_free(&h);
}

/* Three duplicate ACKs: fast retransmit; NewReno partial and full ACK
 * (a peer without SACK: with SACK, recovery is RFC 6675's and PRR's). */
static void test_established_fast_retransmit_newreno(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.sack = false;
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 10 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 10);
	h_clear(&h);
	uint32_t a1 = cfg.iss + 1 + MSS_TS;

	h_peer_ack(&h, a1, 65535);
	CHECK_EQ_U64(h.c.f.cwnd, 11 * MSS_TS);
	h_peer_ack(&h, a1, 65535);
	h_peer_ack(&h, a1, 65535);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.f.dupacks, 2);
	h_peer_ack(&h, a1, 65535);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, a1);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	uint32_t flight = 9 * MSS_TS;

	CHECK_EQ_U64(h.c.f.ssthresh, flight / 2);
	CHECK_EQ_U64(h.c.f.cwnd, flight / 2 + 3 * MSS_TS);
	CHECK_EQ_U64(h.c.f.recover, cfg.iss + 1 + 10 * MSS_TS);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.st.fast_retrans, 1);
	/* Further dup ACKs inflate. */
	h_peer_ack(&h, a1, 65535);
	CHECK_EQ_U64(h.c.f.cwnd, flight / 2 + 4 * MSS_TS);
	/* Partial ACK (2 segments): resend the next hole, deflate, stay. */
	h_clear(&h);
	uint32_t a2 = a1 + 2 * MSS_TS;

	h_peer_ack(&h, a2, 65535);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, a2);
	CHECK_EQ_U64(h.c.f.cwnd, flight / 2 + 4 * MSS_TS - 2 * MSS_TS + MSS_TS);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.st.fast_retrans, 2);
	/* Full ACK: leave recovery with cwnd = ssthresh. */
	h_peer_ack(&h, cfg.iss + 1 + 10 * MSS_TS, 65535);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(h.c.f.cwnd, flight / 2);
	CHECK_EQ_U64(h.c.f.ssthresh, flight / 2);
	CHECK_EQ_U64(h.c.st.retrans_segs, 2);
	CHECK_EQ_U64(h.c.st.dup_acks, 4);
	/* Congestion avoidance now: + MSS*MSS/cwnd per ACK. */
	CHECK(h_app_send(&h, 1000) == 0);
	h_output(&h);
	uint32_t cw = h.c.f.cwnd;

	h_peer_ack(&h, h.c.f.snd_max, 65535);
	CHECK_EQ_U64(h.c.f.cwnd, cw + MSS_TS * MSS_TS / cw);
	harness_free(&h);
}

/* ACKs that are not duplicates: window change, or data on them. */
static void test_established_not_dupack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 5000) == 0);
	h_output(&h);
	for (unsigned i = 0; i < 5; i++)
		h_peer_ack(&h, cfg.iss + 1, (uint16_t)(60000 + i));
	CHECK_EQ_U64(h.c.f.dupacks, 0);
	for (unsigned i = 0; i < 5; i++)
		h_peer_send(&h, 10);
	CHECK_EQ_U64(h.c.f.dupacks, 0);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	harness_free(&h);
}

/* Dataless unacceptable segments are answered at most every 500 ms (an
 * ACK war between two stacks that disagree ends); data is always answered. */
static void test_established_oow_ack_limit(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_clear(&h);
	/* A pure ACK far beyond the window: answered once... */
	h_peer_data_at(&h, 1u << 30, 0, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	h_clear(&h);
	/* ...not again within 500 ms... */
	h.now += 499999;
	h_peer_data_at(&h, 1u << 30, 0, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.oow_ack_limited, 1);
	/* ...while an unacceptable segment with data always is... */
	h_peer_data_at(&h, 1u << 30, 10, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.st.oow_ack_limited, 1);
	h_clear(&h);
	/* ...and after 500 ms the pure ACK is answered again. */
	h.now += 1;
	h_peer_data_at(&h, 1u << 30, 0, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.c.st.drop_out_of_window, 4);
}

/* PAWS: an old TSval is dropped with an ACK; TSopt missing: dropped. */
static void test_established_paws(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h.peer_tsval = 6000;
	h_peer_send(&h, 100);
	CHECK_EQ_U64(h.c.f.ts_recent, 6000);
	h_output(&h);
	h_clear(&h);
	h.peer_tsval = 5999;
	h_peer_data_at(&h, 100, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.drop_paws, 1);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 101);
	CHECK_EQ_U64(h.out[0].hdr.opts.ts_ecr, 6000);
	/* TSval wrapping past 2^31 ahead is "older" too. */
	h.peer_tsval = 6000 + 0x80000001u;
	h_peer_data_at(&h, 100, 100, h.c.f.snd_max, 0);
	CHECK_EQ_U64(h.c.st.drop_paws, 2);
	/* No TSopt at all. */
	h.peer_tsval = 7000;
	struct ss_tcp s = h_seg_make(&h, SS_TCP_ACK, h.peer_nxt, h.c.f.snd_max, 65535,
				     (const uint8_t *)"abcd", 4);

	s.opts.present = 0;
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.drop_no_ts, 1);
	CHECK_EQ_U64(h.c.rx_new, 0);
	/* A newer TSval is fine again and updates TS.Recent. */
	h_peer_send(&h, 100);
	CHECK_EQ_U64(h.c.rx_new, 100);
	CHECK_EQ_U64(h.c.f.ts_recent, 7000);
	harness_free(&h);
}

/* ACK for data never sent: challenge ACK, segment dropped (RFC 5961 §5). */
static void test_established_ack_future(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h_peer_data_at(&h, 0, 100, cfg.iss + 1 + 5, 0);
	CHECK_EQ_U64(h.c.st.drop_future_ack, 1);
	CHECK_EQ_U64(h.c.st.challenge_acks, 1);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.flags, SS_TCP_ACK);
	CHECK_EQ_U64(h.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1);
	/* Too old: more than the largest window before snd_una. */
	h_clear(&h);
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h_peer_ack(&h, cfg.iss + 101, 65535);
	h_clear(&h);
	h_peer_data_at(&h, 0, 100, cfg.iss + 101 - 70000, 0);
	CHECK_EQ_U64(h.c.st.drop_old_ack, 1);
	CHECK_EQ_U64(h.c.rx_new, 0);
	CHECK_EQ_U64(h.nout, 1);
	/* Old but within the window: data accepted, ACK ignored. */
	h_peer_data_at(&h, 0, 100, cfg.iss + 50, 0);
	CHECK_EQ_U64(h.c.rx_new, 100);
	CHECK_EQ_U64(h.c.f.snd_una, cfg.iss + 101);
	harness_free(&h);
}

/* emit() failing: nothing advances, the RTO retries the send later. */
static void test_established_emit_fail(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 1000) == 0);
	h.emit_fail = 1;
	CHECK_EQ_U64(h_output(&h), 0);
	CHECK_EQ_U64(h.c.f.snd_nxt, cfg.iss + 1);
	CHECK_EQ_U64(h.c.rto_deadline_us, h.now + 200000);
	h.emit_fail = 0;
	h_fire(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 1000);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
	CHECK_EQ_U64(h.c.f.backoff, 0);
	CHECK_EQ_U64(h.c.st.retrans_segs, 0);
	harness_free(&h);
}

/* A bidirectional exchange through the fast path on both sides. */
static void test_established_bulk_both_ways(void)
{
	struct h_cfg cfg;
	uint32_t got = 0;

	h_cfg_default(&cfg);
	cfg.rx_size = 4096;
	cfg.tx_size = 4096;
	harness_established(&h, &cfg);
	for (unsigned round = 0; round < 200; round++) {
		h_clear(&h);
		uint32_t n = 100 + (round * 37) % 900;

		if (h_app_send(&h, n) != 0)
			n = 0;
		h_output(&h);
		uint32_t rx = (round * 53) % 1000;

		h_peer_send(&h, rx);
		h.now += 1000;
		h_peer_ack(&h, h.c.f.snd_max, 65535);
		got += h.c.rx_new;
		CHECK(ss_tcp_recv_done(&h.c, ss_tcp_rx_avail(&h.c)) == 0);
		h_output(&h);
	}
	CHECK_EQ_U64(h.c.f.snd_una, h.c.f.snd_max);
	CHECK_EQ_U64(h.c.f.tx_head, h.app_tx);
	CHECK_EQ_U64(got, h.peer_nxt - cfg.peer_iss - 1);
	/* Data segments (they also ack) are fast; the ACKs after them ack
	 * nothing new and are window-update candidates: slow. */
	CHECK_EQ_U64(h.c.st.fast_path, 200);
	CHECK_EQ_U64(h.c.st.slow_path, 201); /* + the SYN-ACK */
	harness_free(&h);
}

/* A dupack carrying SACK for more than 2 MSS above the hole: RFC 6675
 * IsLost, so one ACK suffices (the other two were lost on the way). */
static struct ss_tcp h_sack_ack(struct harness *hh, uint32_t ack, uint32_t left, uint32_t right,
				uint16_t win)
{
	struct ss_tcp s = h_seg_make(hh, SS_TCP_ACK, hh->peer_nxt, ack, win, NULL, 0);
	s.opts.present |= SS_TCP_OPTF_SACK;
	s.opts.sack_count = 1;
	s.opts.sack[0].left = left;
	s.opts.sack[0].right = right;
	return s;
}

static void test_established_sack_loss_one_dupack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 8 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 8);
	h_clear(&h);
	h.now += 10000; /* a round trip (RACK, RFC 8985, times it) */
	uint32_t una = cfg.iss + 1;
	/* Window changes on the way (Linux grows it): still a dupack with new SACK. */
	struct ss_tcp s = h_sack_ack(&h, una, una + MSS_TS, una + 4 * MSS_TS, 65000);
	h_input(&h, &s);
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h.c.st.fast_retrans, 1);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK_EQ_U64(h.c.f.recover, una + 8 * MSS_TS);

	/* Two MSS SACKed is not enough (RFC 6675: more than (3 - 1) * SMSS). */
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 8 * MSS_TS) == 0);
	h_output(&h);
	h_clear(&h);
	h.now += 10000;
	s = h_sack_ack(&h, una, una + MSS_TS, una + 3 * MSS_TS, 65000);
	h_input(&h, &s);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(h.nout, 0);
	/* A D-SACK block (below the ACK) reports nothing new. */
	s = h_sack_ack(&h, una, una - 10, una, 65000);
	CHECK(!tcp_sack_reports_new(&h.c, &s));
}

/* The fast retransmission is lost too: SACK for data sent after it while
 * the hole stays open resends it (RACK idea) instead of waiting for the RTO. */
static void test_established_lost_retransmission(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	CHECK(h_app_send(&h, 12 * MSS_TS) == 0);
	h.c.f.cwnd = 8 * MSS_TS;
	h_output(&h);
	CHECK_EQ_U64(h.nout, 8);
	h_clear(&h);
	h.now += 10000;
	uint32_t una = cfg.iss + 1;
	struct ss_tcp s = h_sack_ack(&h, una, una + MSS_TS, una + 5 * MSS_TS, 65535);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.fast_retrans, 1);
	uint32_t mark = h.c.f.recover;
	CHECK_EQ_U64(mark, una + 8 * MSS_TS);
	/* cwnd = 4 + 3 MSS against 8 in flight; four more dupacks inflate
	 * it to 11: three new segments leave after the retransmission. */
	for (uint32_t k = 6; k <= 9; k++) {
		s = h_sack_ack(&h, una, una + MSS_TS, una + (k < 8 ? k : 8) * MSS_TS, 65535);
		h_input(&h, &s);
	}
	CHECK_EQ_U64(h.c.st.lost_rexmits, 0);
	h_output(&h);
	CHECK(h.c.f.snd_max != mark);
	h_clear(&h);
	/* SACK reaching 3 MSS past the mark, hole still open: resend. */
	s = h_sack_ack(&h, una, una + MSS_TS, mark + 3 * MSS_TS, 65535);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.st.lost_rexmits, 1);
	CHECK_EQ_U64(h_count_flags(&h, SS_TCP_ACK), h.nout);
	CHECK(h.nout >= 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
}

/* A duplicate ACK with up to four SACK blocks, given as segment indices
 * [l, r) counted in MSS_TS from @una. */
static struct ss_tcp h_sack_segs(struct harness *hh, uint32_t una, uint32_t ack_seg, unsigned n,
				 const uint32_t *lr)
{
	struct ss_tcp s = h_seg_make(hh, SS_TCP_ACK, hh->peer_nxt, una + ack_seg * MSS_TS, 65535,
				     NULL, 0);
	s.opts.present |= SS_TCP_OPTF_SACK;
	s.opts.sack_count = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		s.opts.sack[i].left = una + lr[2 * i] * MSS_TS;
		s.opts.sack[i].right = una + lr[2 * i + 1] * MSS_TS;
	}
	return s;
}

/* An established connection with @segs full segments in flight (the
 * window @cwnd_segs); returns the first one's sequence number. */
static uint32_t h_flight(uint32_t cwnd_segs, uint32_t segs)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	harness_established(&h, &cfg);
	h.c.f.cwnd = cwnd_segs * MSS_TS;
	CHECK(h_app_send(&h, segs * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, segs);
	h.now += 10000; /* the ACKs come a round trip later (RACK times them) */
	return cfg.iss + 1;
}

/* Segments out since the last h_clear() that resend data below snd_max. */
static unsigned h_resent(const struct harness *hh, uint32_t *first_seq)
{
	unsigned n = 0;

	for (unsigned i = 0; i < hh->nout; i++) {
		if (hh->out[i].len && ss_seq_lt(hh->out[i].hdr.seq, hh->c.f.snd_max) &&
		    ss_seq_lt(hh->out[i].hdr.seq, hh->c.f.recover)) {
			if (!n && first_seq)
				*first_seq = hh->out[i].hdr.seq;
			n++;
		}
	}
	return n;
}

/* The scoreboard (RFC 6675 §3): ranges sorted, merged when they touch,
 * trimmed at snd_una, dropped when the peer reneges; when full, the
 * ranges nearest snd_una are kept. */
static void test_established_sack_scoreboard(void)
{
	uint32_t una = h_flight(24, 20);
#define SEG(k) (una + (k) * MSS_TS)
	const uint32_t four[] = { 16, 17, 14, 15, 12, 13, 10, 11 };
	struct ss_tcp s = h_sack_segs(&h, una, 0, 4, four);
	CHECK(tcp_sack_reports_new(&h.c, &s));
	CHECK_EQ_U64(h.c.sackb_n, 4);
	CHECK_EQ_U64(h.c.sacked, 4 * MSS_TS);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ_U64(h.c.sackb[i].left, SEG(10 + 2 * i));
		CHECK_EQ_U64(h.c.sackb[i].right, SEG(11 + 2 * i));
	}
	/* A lower range and a higher one: six. */
	const uint32_t low[] = { 2, 3 };
	s = h_sack_segs(&h, una, 0, 1, low);
	CHECK(!tcp_sack_reports_new(&h.c, &s)); /* nothing above sack_high */
	const uint32_t high[] = { 18, 19 };
	s = h_sack_segs(&h, una, 0, 1, high);
	CHECK(tcp_sack_reports_new(&h.c, &s));
	CHECK_EQ_U64(h.c.sack_high, SEG(19));
	CHECK_EQ_U64(h.c.sackb_n, 6);
	CHECK_EQ_U64(h.c.sackb[0].left, SEG(2));
	CHECK_EQ_U64(h.c.sackb[5].right, SEG(19));
	/* Touching ranges merge: [10,11) [11,12) [12,13) -> [10,13). */
	const uint32_t mid[] = { 11, 12 };
	s = h_sack_segs(&h, una, 0, 1, mid);
	tcp_sack_reports_new(&h.c, &s);
	CHECK_EQ_U64(h.c.sackb_n, 5);
	CHECK_EQ_U64(h.c.sackb[1].left, SEG(10));
	CHECK_EQ_U64(h.c.sackb[1].right, SEG(13));
	CHECK_EQ_U64(h.c.sackb[2].left, SEG(14));
	CHECK_EQ_U64(h.c.sack_delta, MSS_TS);
	/* One range over most of them, touching [16,17): [1,17) [18,19). */
	const uint32_t all[] = { 1, 16 };
	s = h_sack_segs(&h, una, 0, 1, all);
	tcp_sack_reports_new(&h.c, &s);
	CHECK_EQ_U64(h.c.sackb_n, 2);
	CHECK_EQ_U64(h.c.sackb[0].left, SEG(1));
	CHECK_EQ_U64(h.c.sackb[0].right, SEG(17));
	CHECK_EQ_U64(h.c.sacked, 17 * MSS_TS);
	/* Insane blocks change nothing: at or below the ACK (D-SACK), empty,
	 * beyond snd_max. */
	const uint32_t bad[] = { 0, 1, 17, 17, 19, 21 };
	s = h_sack_segs(&h, una, 0, 3, bad);
	CHECK(!tcp_sack_reports_new(&h.c, &s));
	CHECK_EQ_U64(h.c.sackb_n, 2);
	/* The ACK stops at segment 5, inside [1,17): the peer dropped what
	 * it SACKed (RFC 2018 §8), the board goes. */
	h_peer_ack(&h, SEG(5), 65535);
	const uint32_t none[] = { 19, 20 };
	s = h_sack_segs(&h, una, 5, 1, none);
	tcp_sack_reports_new(&h.c, &s);
	CHECK_EQ_U64(h.c.st.sack_reneged, 1);
	CHECK_EQ_U64(h.c.sackb_n, 1);
	CHECK_EQ_U64(h.c.sackb[0].left, SEG(19));
	CHECK_EQ_U64(h.c.sacked, MSS_TS);
	/* An ACK past a range: gone. */
	h_peer_ack(&h, SEG(20), 65535);
	s = h_sack_segs(&h, una, 20, 0, none);
	tcp_sack_reports_new(&h.c, &s);
	CHECK_EQ_U64(h.c.sackb_n, 0);
	CHECK_EQ_U64(h.c.sacked, 0);
	CHECK_EQ_U64(h.c.st.sack_reneged, 1);
#undef SEG
}

/* A full board keeps the ranges nearest snd_una: the highest goes for a
 * lower one, and one above them all is not kept. */
static void test_established_sack_scoreboard_full(void)
{
	uint32_t una = h_flight(24, 20);
	struct ss_tcp s = h_sack_segs(&h, una, 0, 0, NULL);

	s.opts.sack_count = 1;
	for (uint32_t k = 0; k < SS_TCP_SACKB_MAX; k++) {
		s.opts.sack[0].left = una + 100 + 3 * k;
		s.opts.sack[0].right = una + 101 + 3 * k;
		CHECK(tcp_sack_reports_new(&h.c, &s));
	}
	CHECK_EQ_U64(h.c.sackb_n, SS_TCP_SACKB_MAX);
	uint32_t top = una + 101 + 3 * (SS_TCP_SACKB_MAX - 1);
	CHECK_EQ_U64(h.c.sackb[SS_TCP_SACKB_MAX - 1].right, top);
	s.opts.sack[0].left = una + 50;
	s.opts.sack[0].right = una + 51;
	CHECK(!tcp_sack_reports_new(&h.c, &s));
	CHECK_EQ_U64(h.c.sackb_n, SS_TCP_SACKB_MAX);
	CHECK_EQ_U64(h.c.sackb[0].left, una + 50);
	CHECK_EQ_U64(h.c.sackb[SS_TCP_SACKB_MAX - 1].right, top - 3);
	s.opts.sack[0].left = una + 5000;
	s.opts.sack[0].right = una + 5001;
	CHECK(tcp_sack_reports_new(&h.c, &s)); /* new, but not kept */
	CHECK_EQ_U64(h.c.sackb_n, SS_TCP_SACKB_MAX);
	CHECK_EQ_U64(h.c.sackb[SS_TCP_SACKB_MAX - 1].right, top - 3);
	CHECK_EQ_U64(h.c.sacked, SS_TCP_SACKB_MAX);
}

/* Three holes in one window (segments 0, 4 and 8 lost of 12): each hole
 * is resent as soon as the SACKs show it lost (RFC 6675), within the
 * first round trip, not one per partial ACK (NewReno); a partial ACK
 * does not resend what the scoreboard resent already. */
static void test_established_sack_recovery_many_holes(void)
{
	uint32_t seq = 0;
	uint32_t una = h_flight(16, 12);
#define SEG(k) (una + (k) * MSS_TS)
	/* Segments 1-3 arrive: the third SACK shows 3 MSS above the hole. */
	for (uint32_t k = 2; k <= 4; k++) {
		const uint32_t b[] = { 1, k };
		struct ss_tcp s = h_sack_segs(&h, una, 0, 1, b);
		h_clear(&h);
		h_input(&h, &s);
	}
	CHECK(h.c.f.flags & SS_TCPF_IN_RECOVERY);
	CHECK_EQ_U64(h_resent(&h, &seq), 1);
	CHECK_EQ_U64(seq, SEG(0));
	/* Segments 5 and 6 arrive: the hole at 4 has 1, then 2 MSS SACKed
	 * above it: not lost yet (IsLost counts only what lies above). */
	const uint32_t b5[] = { 5, 6, 1, 4 };
	const uint32_t b6[] = { 5, 7, 1, 4 };
	struct ss_tcp s = h_sack_segs(&h, una, 0, 2, b5);
	h_clear(&h);
	h_input(&h, &s);
	s = h_sack_segs(&h, una, 0, 2, b6);
	h_input(&h, &s);
	CHECK_EQ_U64(h_resent(&h, NULL), 0);
	/* 7: 3 MSS above the hole at 4: resent now. */
	const uint32_t b7[] = { 5, 8, 1, 4 };
	s = h_sack_segs(&h, una, 0, 2, b7);
	h_clear(&h);
	h_input(&h, &s);
	CHECK_EQ_U64(h_resent(&h, &seq), 1);
	CHECK_EQ_U64(seq, SEG(4));
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK_EQ_U64(h.c.st.sack_rexmits, 1);
	/* 9, 10: the hole at 8 has 2 MSS above: not lost yet. */
	const uint32_t b10[] = { 9, 11, 5, 8, 1, 4 };
	s = h_sack_segs(&h, una, 0, 3, b10);
	h_clear(&h);
	h_input(&h, &s);
	CHECK_EQ_U64(h_resent(&h, NULL), 0);
	/* 11: now it is. */
	const uint32_t b11[] = { 9, 12, 5, 8, 1, 4 };
	s = h_sack_segs(&h, una, 0, 3, b11);
	h_clear(&h);
	h_input(&h, &s);
	CHECK_EQ_U64(h_resent(&h, &seq), 1);
	CHECK_EQ_U64(seq, SEG(8));
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK_EQ_U64(h.c.st.sack_rexmits, 2);
	CHECK_EQ_U64(h.c.st.fast_retrans, 1);
	CHECK_EQ_U64(h.c.st.lost_rexmits, 0);
	/* The resent 0 arrives: a partial ACK to 4, whose resend is out
	 * already: nothing is resent. */
	const uint32_t p4[] = { 5, 8, 9, 12 };
	s = h_sack_segs(&h, una, 4, 2, p4);
	h_clear(&h);
	h_input(&h, &s);
	CHECK_EQ_U64(h.c.f.snd_una, SEG(4));
	CHECK_EQ_U64(h_resent(&h, NULL), 0);
	/* The resent 4, then 8: the ACK reaches recover; recovery ends with
	 * no timeout and every segment sent once more at most. */
	s = h_sack_segs(&h, una, 8, 1, p4 + 2);
	h_clear(&h);
	h_input(&h, &s);
	CHECK_EQ_U64(h_resent(&h, NULL), 0);
	h_peer_ack(&h, SEG(12), 65535);
	CHECK(!(h.c.f.flags & SS_TCPF_IN_RECOVERY));
	CHECK_EQ_U64(h.c.st.retrans_segs, 3);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
#undef SEG
}

/* One 100-byte request, ACKed @rtt_us later: one RTT sample. */
static void h_round_trip(uint32_t rtt_us)
{
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	h.now += rtt_us;
	h_peer_ack(&h, h.c.f.snd_max, 65535);
	CHECK_EQ_U64(h.c.f.snd_una, h.c.f.snd_max);
	h_clear(&h);
}

/* RFC 8985 §7: with no ACK for two SRTTs, the last segment is resent once
 * before the RTO; an ACK that advances allows the next probe. */
static void test_established_tail_loss_probe(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.tlp_min_us = 2000;
	harness_established(&h, &cfg);
	/* A steady 10 ms RTT: RTTVAR decays to 2109, SRTT + 4 RTTVAR (18436)
	 * falls under 2 SRTT, which sets the probe's time. */
	for (int i = 0; i < 3; i++)
		h_round_trip(10000);
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	CHECK_EQ_U64(h.c.f.rttvar_us, 2109);
	uint32_t una = h.c.f.snd_una, cwnd = h.c.f.cwnd;
	CHECK(h_app_send(&h, 3 * MSS_TS) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	h_clear(&h);
	uint64_t sent = h.now;
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), sent + 20000); /* 2 * SRTT */
	h.now = sent + 20000;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una + 2 * MSS_TS);
	CHECK_EQ_U64(h.out[0].len, MSS_TS);
	CHECK(h_seg_matches(&h, &h.out[0]));
	CHECK_EQ_U64(h.c.st.tail_probes, 1);
	CHECK_EQ_U64(h.c.st.rto_fired, 0);
	CHECK_EQ_U64(h.c.f.cwnd, cwnd); /* no reduction */
	/* No second probe for this flight: next is the RTO. */
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), h.c.rto_deadline_us);
	CHECK(h.c.tlp_deadline_us == 0);
	/* The ACK for everything, echoing the probe's timestamp 10 ms on (a
	 * 10 ms sample: SRTT stays): nothing outstanding, no timers. */
	h_clear(&h);
	h.now += 10000;
	h_peer_ack(&h, una + 3 * MSS_TS, 65535);
	CHECK_EQ_U64(h.c.f.srtt_us, 10000);
	CHECK_EQ_U64(h.c.tlp_sent, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), 0);
	/* One segment alone waits for a delayed ACK too: 2 SRTT + 40 ms. */
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.c.tlp_deadline_us, h.now + 2 * 10000 + 40000);
}

/* Where the RTT varies by more than itself, the probe waits until RFC
 * 6298's estimator stops expecting the ACK (SRTT + 4 RTTVAR), not two
 * SRTTs; where that reaches the RTO, there is no probe. */
static void test_established_tail_loss_probe_rtt_variance(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.tlp_min_us = 2000;
	cfg.ts = false; /* Karn's rule alone: no sample from the probe's ACK */
	harness_established(&h, &cfg);
	uint32_t mss = h.c.f.mss;

	/* SYN sample 10 ms, then 40 ms. */
	h_round_trip(40000);
	CHECK_EQ_U64(h.c.f.srtt_us, 13750);  /* 7/8 10000 + 1/8 40000 */
	CHECK_EQ_U64(h.c.f.rttvar_us, 11250); /* 3/4 5000 + 1/4 30000 */
	CHECK_EQ_U64(h.c.f.rto_us, 200000);   /* rto_min */
	uint32_t una = h.c.f.snd_una;
	CHECK(h_app_send(&h, 3 * mss) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 3);
	h_clear(&h);
	uint64_t sent = h.now;
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), sent + 13750 + 4 * 11250); /* not 2 SRTT (27500) */
	h.now = sent + 2 * 13750;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.st.tail_probes, 0);
	h.now = sent + 13750 + 4 * 11250;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.seq, una + 2 * mss);
	CHECK_EQ_U64(h.c.st.tail_probes, 1);
	h_clear(&h);
	h_peer_ack(&h, una + 3 * mss, 65535); /* Karn: no sample */
	CHECK_EQ_U64(h.c.f.srtt_us, 13750);
	/* A lone segment adds the delayed-ACK allowance to the floor. */
	CHECK(h_app_send(&h, 100) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.c.tlp_deadline_us, h.now + 13750 + 4 * 11250 + 40000);
	h.now += 1000;
	h_peer_ack(&h, h.c.f.snd_max, 65535);
	h_clear(&h);
	/* A 300 ms sample: SRTT + 4 RTTVAR passes the RTO, which comes
	 * first; no probe is armed. */
	h_round_trip(300000);
	CHECK(h.c.f.srtt_us + 4ull * h.c.f.rttvar_us >= h.c.f.rto_us);
	CHECK(h_app_send(&h, 3 * mss) == 0);
	h_output(&h);
	CHECK(h.c.tlp_deadline_us == 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), h.now + h.c.f.rto_us);
	harness_free(&h);
}

/* Delayed ACK (RFC 1122 §4.2.3.2): a lone request waits for the reply to
 * carry its ACK; two full segments are ACKed at once; alone, the ACK goes
 * when delack_us runs out. */
static void test_established_delayed_ack(void)
{
	struct h_cfg cfg;

	h_cfg_default(&cfg);
	cfg.delack_us = 1000;
	harness_established(&h, &cfg);
	h_clear(&h);
	/* 64-byte request: no ACK yet, a deadline instead. */
	h_peer_send(&h, 64);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(ss_tcp_next_deadline(&h.c), h.now + 1000);
	/* The reply carries the ACK: one segment in all. */
	CHECK(h_app_send(&h, 64) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 64);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 64);
	CHECK_EQ_U64(h.c.delack_deadline_us, 0);
	/* No reply: the ACK leaves alone when the timer fires. */
	h_peer_ack(&h, cfg.iss + 1 + 64, 65535);
	h_clear(&h);
	h_peer_send(&h, 100);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
	h.now += 1000;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 164);
	/* Two full segments: ACK in the same burst. */
	h_clear(&h);
	h_peer_send(&h, MSS_TS);
	h_peer_send(&h, MSS_TS);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].hdr.ack, cfg.peer_iss + 1 + 164 + 2 * MSS_TS);
}

/* The delayed ACK's hold adapts (tcp.h, above ss_tcp_output()): a reply
 * that came after its ACK went alone, with no data in between and within
 * delack_max_us, moves the connection to the longer hold; the longer hold
 * passing with no reply moves it back.  More data before the reply (a
 * peer that waited for the ACK), a reply later than delack_max_us, a
 * delack_max_us at most delack_us, or an ACK that could not be sent leave
 * the hold as it is. */
static void delack_request(uint32_t len)
{
	h_clear(&h);
	h_peer_send(&h, len);
	h_output(&h);
	CHECK_EQ_U64(h.nout, 0);
}

static void delack_reply(uint32_t len, unsigned want_segs)
{
	h_clear(&h);
	CHECK(h_app_send(&h, len) == 0);
	h_output(&h);
	CHECK_EQ_U64(h.nout, want_segs);
	CHECK_EQ_U64(h.out[want_segs - 1].len, len);
	CHECK_EQ_U64(h.out[want_segs - 1].hdr.ack, h.peer_nxt);
	h_peer_ack(&h, h.c.f.snd_max, 65535);
}

/* The hold's deadline passes: the ACK goes alone. */
static void delack_fire_alone(void)
{
	h_clear(&h);
	h.now = h.c.delack_deadline_us;
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.out[0].hdr.ack, h.peer_nxt);
}

/* A request whose ACK goes alone at its hold, then a reply @late_us after
 * the request: the hold it leaves the connection at. */
static uint32_t delack_late_reply(uint64_t late_us)
{
	uint64_t t = h.now;

	CHECK(late_us > h.c.delack_hold_us);
	delack_request(64);
	CHECK_EQ_U64(h.c.delack_deadline_us, t + h.c.delack_hold_us);
	delack_fire_alone();
	CHECK_EQ_U64(h.c.ack_pending, SS_TCP_ACKP_LATE);
	h.now = t + late_us;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.ack_pending, 0);
	CHECK_EQ_U64(h.c.delack_hold_us,
		     ss_tcp_delack_step_us(h.c.params, ss_tcp_delack_step(h.c.params, h.c.delack_hold_us)));
	h.now += 5000;
	return h.c.delack_hold_us;
}

/* A request whose ACK goes alone, then more data from the peer before
 * the reply: the connection is back at delack_us. */
static void delack_data_first(void)
{
	delack_request(10);
	delack_fire_alone();
	h.now += 10;
	delack_request(10);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 0);
	h.now += 10;
	delack_reply(64, 1);
	h.now += 5000;
}

static void test_established_delack_adapt(void)
{
	struct h_cfg cfg;

	/* The steps: four times longer each, the last one delack_max_us. */
	struct ss_tcp_params sp = { .delack_us = 1000, .delack_max_us = 128000 };
	static const uint32_t want128[] = { 1000, 4000, 16000, 64000, 128000 };
	for (unsigned k = 0; k < SS_TCP_DELACK_STEPS; k++)
		CHECK_EQ_U64(ss_tcp_delack_step_us(&sp, k), want128[k]);
	sp.delack_max_us = 32000;
	static const uint32_t want32[] = { 1000, 4000, 16000, 32000, 32000 };
	for (unsigned k = 0; k < SS_TCP_DELACK_STEPS; k++)
		CHECK_EQ_U64(ss_tcp_delack_step_us(&sp, k), want32[k]);
	/* ... and back from a hold to its step (the first of two equal). */
	static const unsigned step32[] = { 0, 1, 2, 3, 3 };
	for (unsigned k = 0; k < SS_TCP_DELACK_STEPS; k++)
		CHECK_EQ_U64(ss_tcp_delack_step(&sp, want32[k]), step32[k]);
	sp.delack_us = 200;
	sp.delack_max_us = 500000;
	static const uint32_t want500[] = { 200, 800, 3200, 12800, 500000 };
	for (unsigned k = 0; k < SS_TCP_DELACK_STEPS; k++)
		CHECK_EQ_U64(ss_tcp_delack_step_us(&sp, k), want500[k]);

	h_cfg_default(&cfg);
	cfg.delack_us = 1000;
	cfg.delack_max_us = 128000;
	harness_established(&h, &cfg);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 0);

	/* A reply 3 ms after its request: the ACK went alone at 1 ms; the
	 * shortest step of at least 4.5 ms is 16 ms. */
	CHECK_EQ_U64(delack_late_reply(3000), 16000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 2);
	CHECK_EQ_U64(h.c.st.delack_acks, 1);
	CHECK_EQ_U64(h.c.st.delack_longer, 1);

	/* The longer hold: the next reply, 3 ms late again, carries the ACK. */
	uint64_t t1 = h.now;
	delack_request(64);
	CHECK_EQ_U64(h.c.delack_deadline_us, t1 + 16000);
	h.now = t1 + 3000;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.delack_deadline_us, 0);
	CHECK_EQ_U64(h.c.st.delack_acks, 1);

	/* No reply within 16 ms: the ACK goes alone; the reply at 40 ms moves
	 * the connection up to 64 ms (at least 60). */
	h.now += 5000;
	CHECK_EQ_U64(delack_late_reply(40000), 64000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 3);
	CHECK_EQ_U64(h.c.st.delack_acks, 2);
	CHECK_EQ_U64(h.c.st.delack_longer, 2);
	CHECK_EQ_U64(h.c.st.delack_shorter, 0);

	/* A reply within the hold never lowers it. */
	t1 = h.now;
	delack_request(64);
	CHECK_EQ_U64(h.c.delack_deadline_us, t1 + 64000);
	h.now = t1 + 100;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.delack_hold_us, 64000);

	/* The ACK goes alone at 64 ms and the peer sends more before any
	 * reply (it waited for the ACK, as Nagle's algorithm does): back to
	 * 1 ms, for this data already. */
	h.now += 5000;
	uint64_t t2 = h.now;
	delack_request(10);
	delack_fire_alone();
	CHECK_EQ_U64(h.now, t2 + 64000);
	CHECK_EQ_U64(h.c.ack_pending, SS_TCP_ACKP_LATE);
	h.now += 500;
	delack_request(10);
	CHECK_EQ_U64(h.c.ack_pending, SS_TCP_ACKP_OWED);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 0);
	CHECK_EQ_U64(h.c.delack_deadline_us, h.now + 1000);
	CHECK_EQ_U64(h.c.st.delack_shorter, 1);
	h.now += 500;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	CHECK_EQ_U64(h.c.st.delack_longer, 2);

	/* At 1 ms, the same tells nothing: the hold stays, nothing counted. */
	h.now += 5000;
	delack_request(10);
	delack_fire_alone();
	h.now += 500;
	delack_request(10);
	CHECK_EQ_U64(h.c.st.delack_shorter, 1);
	h.now += 500;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	h.now += 5000;

	/* A reply later than delack_max_us: no hold would have caught it; the
	 * hold stays. */
	CHECK_EQ_U64(delack_late_reply(128001), 1000);
	CHECK_EQ_U64(h.c.st.delack_longer, 2);

	/* The step chosen is the shortest of at least 1.5 times the delay:
	 * 2.666 ms -> 4 ms, then 10.667 ms (16.0005) -> 64 ms; back at 1 ms,
	 * 10.666 ms -> 16 ms; 100 ms (150 wanted) takes the last step,
	 * delack_max_us. */
	CHECK_EQ_U64(delack_late_reply(2666), 4000);
	CHECK_EQ_U64(delack_late_reply(10667), 64000);
	delack_data_first();
	CHECK_EQ_U64(h.c.st.delack_shorter, 2);
	CHECK_EQ_U64(delack_late_reply(10666), 16000);
	CHECK_EQ_U64(delack_late_reply(100000), 128000);
	CHECK_EQ_U64(ss_tcp_delack_step(h.c.params, h.c.delack_hold_us), 4);
	CHECK_EQ_U64(h.c.st.delack_longer, 6);

	/* Data before the reply at the top step: back to 1 ms. */
	delack_data_first();
	CHECK_EQ_U64(h.c.st.delack_shorter, 3);

	/* The ACK cannot go (no buffer): nothing is learnt, ACK_NOW stays,
	 * and the next output sends it. */
	uint64_t acks = h.c.st.delack_acks;
	delack_request(64);
	h.emit_fail = 1;
	h.now = h.c.delack_deadline_us;
	h_clear(&h);
	h_timer(&h);
	CHECK_EQ_U64(h.nout, 0);
	CHECK_EQ_U64(h.c.ack_pending, SS_TCP_ACKP_OWED);
	CHECK(h.c.f.flags & SS_TCPF_ACK_NOW);
	CHECK_EQ_U64(h.c.st.delack_acks, acks);
	h.emit_fail = 0;
	h_output(&h);
	CHECK_EQ_U64(h.nout, 1);
	CHECK_EQ_U64(h.out[0].len, 0);
	CHECK_EQ_U64(h.c.ack_pending, 0);

	/* delack_max_us at most delack_us: no longer hold, never LATE. */
	h_cfg_default(&cfg);
	cfg.delack_us = 1000;
	cfg.delack_max_us = 1000;
	harness_established(&h, &cfg);
	delack_request(64);
	delack_fire_alone();
	CHECK_EQ_U64(h.c.ack_pending, 0);
	h.now += 2000;
	delack_reply(64, 1);
	CHECK_EQ_U64(h.c.delack_hold_us, 1000);
	CHECK_EQ_U64(h.c.st.delack_longer, 0);
}

/* The reference: the earliest of two deadlines, 0 meaning none. */
static uint64_t ref_min_deadline(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

/* ss_tcp_next_deadline_no_delack() (inline, branch-free) against the
 * definition: min of RTO, persist and TIME_WAIT, and the probe's while
 * the RTO runs; 0 none.  Values 0, 1, near 2^64 and random. */
static void test_next_deadline_formula(void)
{
	static struct ss_tcp_conn c;
	uint64_t seed = 3;

	for (int i = 0; i < 400000; i++) {
		uint64_t v[4];

		for (int j = 0; j < 4; j++) {
			uint64_t r = check_rand(&seed);
			switch (r % 6) {
			case 0: case 1: v[j] = 0; break;
			case 2: v[j] = UINT64_MAX - r % 3; break;
			case 3: v[j] = 1 + r % 4; break;
			default: v[j] = check_rand(&seed) % 1000000; break;
			}
		}
		c.rto_deadline_us = v[0];
		c.persist_deadline_us = v[1];
		c.tw_deadline_us = v[2];
		c.tlp_deadline_us = v[3];
		uint64_t d = ref_min_deadline(ref_min_deadline(v[0], v[1]), v[2]);
		uint64_t want = v[0] ? ref_min_deadline(d, v[3]) : d;
		CHECK_EQ_U64(ss_tcp_next_deadline_no_delack(&c), want);
	}
}

int main(void)
{
	test_next_deadline_formula();
	test_established_rx_in_order_burst();
	test_established_rx_window_fill();
	test_established_rx_out_of_order();
	test_established_ring_origin();
	test_established_rings_grow();
	test_established_rings_move_larger();
	test_established_rx_duplicate_overlap();
	test_established_seq_wraparound();
	test_established_tx_segmentation();
	test_established_tx_window_limits();
	test_established_tx_wscale();
	test_established_persist();
	test_established_persist_give_up();
	test_established_rto();
	test_established_rtt_rfc6298();
	test_established_rtt_timestamps();
	test_established_fast_retransmit_newreno();
	test_established_not_dupack();
	test_established_paws();
	test_established_oow_ack_limit();
	test_established_ack_future();
	test_established_emit_fail();
	test_established_bulk_both_ways();
	test_established_sack_loss_one_dupack();
	test_established_lost_retransmission();
	test_established_sack_scoreboard();
	test_established_sack_recovery_many_holes();
	test_established_sack_scoreboard_full();
	test_established_tail_loss_probe();
	test_established_tail_loss_probe_rtt_variance();
	test_established_delayed_ack();
	test_established_delack_adapt();
	return check_done("test_tcp_established");
}
