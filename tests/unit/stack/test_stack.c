/* test_stack.c - the service's TCP stack end to end in one process: app queues, flows, a peer engine. */
#include "check.h"
#include "smaps.h"
#include "stack_client.h"
#include "stack_harness.h"
#include "service/populate.h"
#include "stack/stack_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536 small=0"

static uint64_t ctr(struct sh *h, enum ss_counter_id id)
{
	return ss_ctr_read(&h->ctr, id);
}

struct app_conn {
	uint32_t slot, gen;
	uint8_t *rx, *tx;
	uint32_t rx_head, rx_avail;  /* stream positions the app tracks */
	uint32_t tx_tail, tx_unacked;
	uint32_t rx_origin, tx_origin; /* shm/abi.h: byte (p - origin) & (size - 1) */
	uint64_t rx_at_home, tx_at_home; /* RX events at the ring's home byte; TXs with
					  * SS_CMDF_TX_HOME */
	/* Ring sizes, small or large, and asking for the large receive ring
	 * as libslipstream does (shm/abi.h "Small rings that grow"). */
	uint32_t rx_size, tx_size;
	bool rx_grow;
	unsigned rx_grown;           /* SS_EV_RX_GROWN events */
	bool peer_fin, reset, closed, connected;
	uint16_t error;
	uint64_t echoed;
};

static void app_on_event(struct sh *h, struct app_conn *ac, const struct ss_shm_ev *ev)
{
	switch (ev->type) {
	case SS_EV_ACCEPTED:
	case SS_EV_CONNECTED:
		ac->slot = ev->conn;
		ac->gen = ev->gen;
		ac->error = ev->error;
		ac->connected = ev->error == 0;
		ac->rx = h->app->region + ev->rx_off;
		ac->tx = h->app->region + ev->tx_off;
		ac->rx_size = ev->rx_off < h->app->buf_off ? SS_SHM_SMALL_RING : h->app->rxbuf_size;
		ac->tx_size = ev->tx_off < h->app->buf_off ? SS_SHM_SMALL_RING : h->app->txbuf_size;
		break;
	case SS_EV_RX: {
		uint32_t tail = ac->rx_head + ac->rx_avail;
		if (((tail - ac->rx_origin) & (ac->rx_size - 1)) != ev->arg3) {
			CHECK_EQ_U64(ac->rx_avail, 0); /* moves only when all was consumed */
			ac->rx_origin = tail - ev->arg3;
		}
		ac->rx_at_home += ev->arg3 == ss_shm_ring_home(ac->slot, ac->rx_size);
		ac->rx_avail += ev->arg;
		CHECK(ac->rx_avail <= ac->rx_size);
		if (ac->rx_avail > ac->rx_size / 2 && ac->rx_size < h->app->rxbuf_size)
			ac->rx_grow = true;
		break;
	}
	case SS_EV_RX_GROWN:
		CHECK_EQ_U64(ac->rx_avail, 0);
		CHECK(ac->rx_size < h->app->rxbuf_size);
		ac->rx = ss_app_rx_ring(h->app, ac->slot);
		ac->rx_size = h->app->rxbuf_size;
		ac->rx_grow = false;
		ac->rx_grown++;
		break;
	case SS_EV_TX_ACKED:
		ac->tx_unacked -= ev->arg;
		break;
	case SS_EV_PEER_FIN:
		ac->peer_fin = true;
		break;
	case SS_EV_RESET:
	case SS_EV_ERROR:
		ac->reset = true;
		ac->error = ev->error;
		break;
	case SS_EV_CLOSED:
		ac->closed = true;
		break;
	default:
		break;
	}
}

/* Echo what arrived, as far as the transmit ring has room. */
/* app_echo() posts one SS_CMD_TX with SS_CMDF_RX_DONE instead of a TX
 * and an RX_DONE. */
static bool echo_merged;

static void app_echo(struct sh *h, struct app_conn *ac)
{
	uint32_t size = ac->tx_size, rsize = ac->rx_size;
	uint8_t at_home = 0;
	uint32_t n = ac->rx_avail;
	uint32_t space = size - ac->tx_unacked;
	if (n > space)
		n = space;
	if (n == 0)
		return;
	/* As libslipstream: all acknowledged, so write from the home byte
	 * again. */
	uint32_t home = ss_shm_ring_home(ac->slot, size);
	if (!ac->tx_unacked && ((ac->tx_tail - ac->tx_origin) & (size - 1)) != home) {
		ac->tx_origin = ac->tx_tail - home;
		at_home = SS_CMDF_TX_HOME;
		ac->tx_at_home++;
	}
	for (uint32_t i = 0; i < n; i++)
		ac->tx[(ac->tx_tail - ac->tx_origin + i) & (size - 1)] =
			ac->rx[(ac->rx_head - ac->rx_origin + i) & (rsize - 1)];
	ac->tx_tail += n;
	ac->tx_unacked += n;
	ac->rx_head += n;
	ac->rx_avail -= n;
	ac->echoed += n;
	uint8_t rx_grow = ac->rx_grow ? SS_CMDF_RX_GROW : 0;
	if (echo_merged) { /* libslipstream's: one TX carrying the bytes consumed */
		sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_TX,
						.flags = SS_CMDF_RX_DONE | at_home | rx_grow,
						.conn = ac->slot, .gen = ac->gen, .arg = n,
						.rx_done = n });
		return;
	}
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = at_home, .conn = ac->slot,
					.gen = ac->gen, .arg = n });
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_RX_DONE, .flags = rx_grow, .conn = ac->slot,
					.gen = ac->gen, .arg = n });
}

/* The next event is SS_EV_CMD_ERROR for command @op, with @error. */
static void expect_cmd_error(struct sh *h, uint16_t error, uint8_t op)
{
	struct ss_shm_ev ev = { 0 };

	CHECK(sh_event(h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
	CHECK_EQ_U64(ev.error, error);
	CHECK_EQ_U64(ev.arg, op);
}

static void app_poll(struct sh *h, struct app_conn *ac, bool echo)
{
	struct ss_shm_ev ev = { 0 };
	while (sh_event(h, &ev))
		app_on_event(h, ac, &ev);
	if (echo && ac->connected)
		app_echo(h, ac);
}

static void test_listen(struct sh *h, uint16_t port)
{
	struct ss_shm_ev ev = { 0 };
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = port, .arg = 16, .cookie = 42 });
	sh_pump(h, 4);
	CHECK(sh_event(h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.cookie, 42);
}

/* A harness peer on @peer_port connects to the app listening on port 7;
 * returns it once the app holds the connection in @ac. */
static struct sh_peer_conn *peer_connected(struct sh *h, uint16_t peer_port, struct app_conn *ac)
{
	struct sh_peer_conn *p = sh_peer_new(h, peer_port, 7);
	CHECK(ss_tcp_connect(&p->c, h->now_us) == 0);
	sh_pump(h, 16);
	app_poll(h, ac, false);
	CHECK(ac->connected);
	return p;
}

/* One turn of an echo exchange: what the peer sent goes through the stack,
 * the app echoes it, and the peer reads back what came (checked against
 * seed @seed from *@got on; *@bad set on a mismatch). */
static void echo_turn(struct sh *h, struct sh_peer_conn *p, struct app_conn *ac, unsigned seed,
		      uint64_t *got, bool *bad)
{
	sh_pump(h, 8);
	app_poll(h, ac, true);
	sh_pump(h, 8);
	sh_peer_read_check(p, got, seed, bad);
}

/* Linux-like peer connects to an app echo server; 300 kB each way, exact.
 * @small: on small rings that grow (shm/abi.h), each ring once. */
static void test_passive_echo(bool merged, bool small)
{
	echo_merged = merged;
	struct sh h;
	CHECK(sh_init(&h, small ? "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536" : ATTACH) == 0);
	test_listen(&h, 7);
	struct app_conn ac = { 0 };
	struct sh_peer_conn *p = peer_connected(&h, 40000, &ac);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.app->n_conns, 1);

	const uint64_t total = 300000;
	uint64_t sent = 0, got = 0;
	bool bad = false;
	for (int iter = 0; iter < 20000 && got < total; iter++) {
		if (sent < total) {
			uint32_t n = ss_tcp_tx_space(&p->c);
			if (n > total - sent)
				n = (uint32_t)(total - sent);
			if (n) {
				CHECK(sh_peer_write(p, sent, n, 1) == 0);
				sent += n;
				ss_tcp_output(&p->c, h.now_us);
			}
		}
		echo_turn(&h, p, &ac, 1, &got, &bad);
		h.now_us += 100;
	}
	CHECK_EQ_U64(got, total);
	CHECK(!bad);
	CHECK_EQ_U64(ac.echoed, total);
	/* Data that acknowledged echoed bytes came as one RX slot with
	 * SS_EVF_TX_ACKED (sh_event() reads it as RX, then TX_ACKED). */
	CHECK(h.rx_acked_slots > 0);
	/* Small rings: the receive ring grew once (the peer sends all its
	 * window allows), the transmit ring did not (the peer acknowledges
	 * each echo within the turn, so it is never half full). */
	uint32_t tx_size = small ? SS_SHM_SMALL_RING : 65536;
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_rx_grown), small);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_tx_grown), 0);
	CHECK_EQ_U64(ac.rx_grown, small);
	CHECK_EQ_U64(ac.rx_size, 65536);
	CHECK_EQ_U64(ac.tx_size, tx_size);
	CHECK_EQ_U64(h.app->slot_conn[ac.slot]->tcp.rx.size, 65536);
	CHECK_EQ_U64(h.app->slot_conn[ac.slot]->tcp.tx.size, tx_size);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 0);

	/* Peer closes first: the app sees PEER_FIN, closes, gets CLOSED. */
	ss_tcp_shutdown(&p->c, h.now_us);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK(ac.peer_fin);
	CHECK_EQ_U64(ac.tx_unacked, 0); /* every echoed byte acknowledged, once */
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CLOSE, .conn = ac.slot, .gen = ac.gen });
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK(ac.closed);
	CHECK_EQ_U64(h.app->n_conns, 0);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_TIME_WAIT);
	/* We closed second: no TIME_WAIT on our side, the flow is gone. */
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_app_event_ring_full), 0);
	sh_fini(&h);
}

/* The app connects out to a peer listener, sends, closes first: TIME_WAIT then nothing. */
static void test_active_close_first(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	h.peer_listen_port = 9000;
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000,
					 .cookie = 7 });
	sh_pump(&h, 16);
	struct app_conn ac = { 0 };
	app_poll(&h, &ac, false);
	CHECK(ac.connected);
	struct sh_peer_conn *p = &h.peer[0];
	CHECK(p->used);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_ESTABLISHED);

	/* 100 kB from the app in ring-sized pieces. */
	uint64_t off = 0, got = 0;
	bool bad = false;
	for (int iter = 0; iter < 5000 && got < 100000; iter++) {
		uint32_t space = h.app->txbuf_size - ac.tx_unacked;
		uint32_t n = (uint32_t)(100000 - off < space ? 100000 - off : space);
		for (uint32_t i = 0; i < n; i++)
			ac.tx[(ac.tx_tail + i) & (h.app->txbuf_size - 1)] = sh_pat(off + i, 3);
		if (n) {
			ac.tx_tail += n;
			ac.tx_unacked += n;
			off += n;
			sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = ac.slot,
							 .gen = ac.gen, .arg = n });
		}
		sh_pump(&h, 8);
		sh_peer_read_check(p, &got, 3, &bad);
		sh_pump(&h, 8);
		app_poll(&h, &ac, false);
	}
	CHECK_EQ_U64(got, 100000);
	CHECK(!bad);
	CHECK_EQ_U64(ac.tx_unacked, 0);

	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CLOSE, .conn = ac.slot, .gen = ac.gen });
	sh_pump(&h, 8);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSE_WAIT);
	app_poll(&h, &ac, false);
	/* FIN_WAIT_2: the slot goes back to the app already. */
	CHECK(ac.closed);
	CHECK_EQ_U64(h.app->n_conns, 0);
	ss_tcp_shutdown(&p->c, h.now_us);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.st.n_flows, 1); /* our TIME_WAIT */
	sh_advance(&h, h.params.time_wait_us + 2000000, 500000);
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_fini(&h);
}

/* Peer resets mid-transfer: the app sees RESET with ECONNRESET, then closes. */
static void test_peer_reset(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	test_listen(&h, 7);
	struct sh_peer_conn *p = sh_peer_new(&h, 40001, 7);
	ss_tcp_connect(&p->c, h.now_us);
	sh_pump(&h, 16);
	struct app_conn ac = { 0 };
	app_poll(&h, &ac, false);
	CHECK(ac.connected);
	CHECK(sh_peer_write(p, 0, 5000, 9) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	ss_tcp_abort(&p->c, h.now_us);
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.rx_avail, 5000);
	CHECK(ac.reset);
	CHECK_EQ_U64(ac.error, ECONNRESET);
	/* The data that came before the reset is still readable. */
	CHECK(ac.rx[0] == sh_pat(0, 9) && ac.rx[4999] == sh_pat(4999, 9));
	CHECK(!ac.closed);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CLOSE, .conn = ac.slot, .gen = ac.gen });
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK(ac.closed);
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_fini(&h);
}

/* Connect to a port nobody listens on: CONNECTED with ECONNREFUSED. */
static void test_connect_refused(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	h.peer_listen_port = 1; /* the peer answers other ports with RST */
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9999 });
	sh_pump(&h, 4);
	/* Our harness peer does not send RSTs itself: emulate Linux's. */
	struct sh_frame *f = NULL;
	(void)f;
	struct app_conn ac = { 0 };
	/* No answer at all: SYN retries with backoff, then ETIMEDOUT. */
	sh_advance(&h, 200000000, 1000000);
	app_poll(&h, &ac, false);
	CHECK(!ac.connected);
	CHECK_EQ_U64(ac.error, ETIMEDOUT);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_timeout), 1);
	/* No handle was handed out: the slot and the flow are gone already. */
	CHECK(!ac.closed);
	CHECK_EQ_U64(h.app->n_conns, 0);
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CLOSE, .conn = ac.slot, .gen = ac.gen });
	sh_pump(&h, 4);
	struct ss_shm_ev ev = { 0 };
	CHECK(sh_event(&h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
	CHECK_EQ_U64(ev.error, EBADF);
	sh_fini(&h);
}

/* --local-ports: connect() takes its ports from the configured range and
 * fails with EADDRNOTAVAIL once every one of them is held. */
static void test_local_ports(void)
{
	struct sh h;
	struct ss_shm_ev ev = { 0 };
	CHECK(sh_init(&h, ATTACH) == 0);
	h.st.lim.local_port_lo = 40000;
	h.st.lim.local_port_hi = 40001;
	h.peer_listen_port = 9000;
	for (uint64_t k = 1; k <= 3; k++)
		sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000,
						 .cookie = k });
	sh_pump(&h, 16);
	unsigned connected = 0, refused = 0, seen = 0;
	while (sh_event(&h, &ev)) {
		if (ev.type == SS_EV_CONNECTED && ev.error == 0) {
			connected++;
			CHECK(ev.local_port == 40000 || ev.local_port == 40001);
			seen |= 1u << (ev.local_port - 40000);
		} else if (ev.error == EADDRNOTAVAIL) {
			refused++;
			CHECK_EQ_U64(ev.cookie, 3);
		}
	}
	CHECK_EQ_U64(connected, 2);
	CHECK_EQ_U64(seen, 3);
	CHECK_EQ_U64(refused, 1);
	unsigned peers = 0;
	for (unsigned i = 0; i < sizeof(h.peer) / sizeof(h.peer[0]); i++)
		if (h.peer[i].used) {
			peers++;
			CHECK(h.peer[i].c.remote_port == 40000 || h.peer[i].c.remote_port == 40001);
		}
	CHECK_EQ_U64(peers, 2);
	sh_fini(&h);
}

/* connect() to the harness peer's port 9000 with @cookie; the event it gets. */
static struct ss_shm_ev connect_event(struct sh *h, uint64_t cookie)
{
	struct ss_shm_ev ev = { 0 };
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000,
					.cookie = cookie });
	sh_pump(h, 16);
	CHECK(sh_event(h, &ev));
	CHECK_EQ_U64(ev.cookie, cookie);
	return ev;
}

/*
 * TIME_WAIT reuse (--tw-reuse): with one local port, the app connects,
 * closes first (our TIME_WAIT holds the port), and connects again: refused
 * while the TIME_WAIT is younger than 1 s; then, with reuse on, the new
 * connection takes the 4-tuple, its ISN past the old sequence space by a
 * window (old snd_nxt + 65537); with reuse off, refused until TIME_WAIT ends.
 */
static void test_tw_reuse(void)
{
	for (int on = 0; on <= 1; on++) {
		struct sh h;
		CHECK(sh_init(&h, ATTACH) == 0);
		h.st.lim.local_port_lo = h.st.lim.local_port_hi = 40000;
		h.st.lim.tw_reuse = on;
		h.peer_listen_port = 9000;
		struct ss_shm_ev ev = connect_event(&h, 1);
		CHECK_EQ_U64(ev.type, SS_EV_CONNECTED);
		CHECK_EQ_U64(ev.error, 0);
		struct app_conn ac = { 0 };
		app_on_event(&h, &ac, &ev);
		CHECK(ac.connected);
		struct sh_peer_conn *p = &h.peer[0];
		CHECK(p->used && (p->c.f.flags & SS_TCPF_TS));

		sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CLOSE, .conn = ac.slot, .gen = ac.gen });
		sh_pump(&h, 8);
		app_poll(&h, &ac, false);
		CHECK(ac.closed);
		ss_tcp_shutdown(&p->c, h.now_us);
		ss_tcp_output(&p->c, h.now_us);
		sh_pump(&h, 8);
		CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSED);
		CHECK_EQ_U64(h.st.n_flows, 1); /* our TIME_WAIT */
		uint32_t old_nxt = p->c.f.rcv_nxt; /* our snd_nxt, past our FIN */
		p->used = false;                 /* the peer forgets its closed connection */

		ev = connect_event(&h, 2);
		CHECK_EQ_U64(ev.error, EADDRNOTAVAIL);
		sh_advance(&h, 1000000, 100000);
		CHECK_EQ_U64(h.st.n_flows, 1);
		ev = connect_event(&h, 3);
		if (!on) {
			CHECK_EQ_U64(ev.error, EADDRNOTAVAIL);
			CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_tw_reused), 0);
			sh_fini(&h);
			continue;
		}
		CHECK_EQ_U64(ev.type, SS_EV_CONNECTED);
		CHECK_EQ_U64(ev.error, 0);
		CHECK_EQ_U64(ev.local_port, 40000);
		CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_tw_reused), 1);
		CHECK_EQ_U64(h.st.n_flows, 1);
		CHECK(p->used);                  /* the peer's new connection, same slot */
		CHECK_EQ_U64(p->c.f.state, SS_TCPS_ESTABLISHED);
		CHECK_EQ_U64(p->c.irs, old_nxt + 65537u);
		sh_fini(&h);
	}
}

/* Bad commands get exact errors; a corrupted index disconnects the app. */
static void test_hostile_commands(void)
{
	struct sh h;
	struct ss_shm_ev ev = { 0 };
	CHECK(sh_init(&h, ATTACH) == 0);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = 3, .gen = 0, .arg = 10 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = 200 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = 0x7f000001, .port = 80 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_LISTEN_CLOSE, .conn = 5 });
	sh_pump(&h, 4);
	int want[4] = { EBADF, EOPNOTSUPP, EINVAL, EBADF };
	for (int i = 0; i < 4; i++) {
		CHECK(sh_event(&h, &ev));
		CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
		CHECK_EQ_U64(ev.error, want[i]);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 4);

	/* TX beyond the ring on a live connection: EINVAL, nothing sent. */
	test_listen(&h, 7);
	struct sh_peer_conn *p = sh_peer_new(&h, 40002, 7);
	ss_tcp_connect(&p->c, h.now_us);
	sh_pump(&h, 16);
	struct app_conn ac = { 0 };
	app_poll(&h, &ac, false);
	CHECK(ac.connected);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = ac.slot, .gen = ac.gen,
					 .arg = 65537 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_RX_DONE, .conn = ac.slot, .gen = ac.gen,
					 .arg = 1 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = ac.slot, .gen = ac.gen + 1,
					 .arg = 1 });
	sh_pump(&h, 4);
	int want2[3] = { EINVAL, EINVAL, EBADF };
	for (int i = 0; i < 3; i++) {
		CHECK(sh_event(&h, &ev));
		CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
		CHECK_EQ_U64(ev.error, want2[i]);
	}
	CHECK_EQ_U64(p->c.f.rcv_nxt - p->c.irs, 1); /* no data reached the peer */

	/* A TX carrying an RX_DONE (SS_CMDF_RX_DONE) runs as the two
	 * commands would, errors alike: each part's error with its op. */
	struct { uint32_t gen_off, tx, rx; int err[2]; uint32_t op[2]; unsigned n; } mc[] = {
		{ 1, 1, 1, { EBADF, EBADF }, { SS_CMD_TX, SS_CMD_RX_DONE }, 2 },
		{ 0, 65537, 1, { EINVAL, EINVAL }, { SS_CMD_TX, SS_CMD_RX_DONE }, 2 },
		{ 0, 65537, 0, { EINVAL, 0 }, { SS_CMD_TX, 0 }, 1 },
		{ 0, 0, 1, { EINVAL, 0 }, { SS_CMD_RX_DONE, 0 }, 1 },
	};
	for (unsigned k = 0; k < sizeof(mc) / sizeof(mc[0]); k++) {
		sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = SS_CMDF_RX_DONE,
						 .conn = ac.slot, .gen = ac.gen + mc[k].gen_off,
						 .arg = mc[k].tx, .rx_done = mc[k].rx, .cookie = 77 });
		sh_pump(&h, 4);
		for (unsigned i = 0; i < mc[k].n; i++) {
			CHECK(sh_event(&h, &ev));
			CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
			CHECK_EQ_U64(ev.error, mc[k].err[i]);
			CHECK_EQ_U64(ev.arg, mc[k].op[i]);
			CHECK_EQ_U64(ev.conn, ac.slot);
			CHECK_EQ_U64(ev.cookie, 77);
		}
		CHECK(!sh_event(&h, &ev));
	}
	CHECK_EQ_U64(p->c.f.rcv_nxt - p->c.irs, 1);

	/* Garbage producer index: the app is broken, its connection reset. */
	__atomic_store_n(&sh_ctx(&h)->atx->prod, h.atx_prod + 100000, __ATOMIC_RELEASE);
	sh_pump(&h, 8);
	CHECK(h.app->broken);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_bad_ring), 1);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.app->n_conns, 0);
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_fini(&h);
}

/* Random commands: never a crash, and the stack's books stay balanced. */
/* @attach: fixed rings, or small rings that grow (shm/abi.h). */
static void test_random_commands(const char *attach)
{
	struct sh h;
	CHECK(sh_init(&h, attach) == 0);
	test_listen(&h, 7);
	struct sh_peer_conn *p = sh_peer_new(&h, 40003, 7);
	ss_tcp_connect(&p->c, h.now_us);
	sh_pump(&h, 16);
	uint64_t seed = 0x5eed;
	for (int i = 0; i < 20000 && !h.app->broken; i++) {
		struct ss_shm_cmd c;
		uint8_t *b = (uint8_t *)&c;
		for (size_t k = 0; k < sizeof(c); k++)
			b[k] = (uint8_t)check_rand(&seed);
		c.op %= SS_CMD_OP_MAX + 2;
		c.conn %= 20;
		c.gen %= 3;
		if (c.op == SS_CMD_LISTEN || c.op == SS_CMD_CONNECT)
			c.op = SS_CMD_NOP;
		sh_cmd(&h, &c);
		struct ss_shm_ev ev;
		sh_pump(&h, 2);
		while (sh_event(&h, &ev))
			;
	}
	CHECK(!h.app->broken);
	CHECK(h.st.n_flows <= 1);
	sh_fini(&h);
}

/* Active open to a peer not in the ARP cache: ARP requests, then either
 * the SYN once the reply is cached, or EHOSTUNREACH after three tries. */
static void test_connect_arp(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	const uint32_t silent = 0xc6120009u, late = 0xc612000au;
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = silent, .port = 80, .cookie = 1 });
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = late, .port = 80, .cookie = 2 });
	ss_stack_round(&h.st, h.now_us);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_arp_request), 2);
	CHECK_EQ_U64(h.st.arp_pending, 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_active_open), 0);
	h.n_out = 0;
	/* The second peer answers (the fast path caches the reply): SYN goes. */
	ss_arp_cache_update(&h.arp, late, sh_peer_mac, 0, true);
	ss_stack_round(&h.st, h.now_us);
	CHECK_EQ_U64(h.st.arp_pending, 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_active_open), 1);
	CHECK_EQ_U64(h.n_out, 1);
	h.n_out = 0;
	/* The first never answers: two more requests a second apart, then
	 * CONNECTED with EHOSTUNREACH and no handle. */
	for (int i = 0; i < 4; i++) {
		h.now_us += 1000000;
		ss_stack_round(&h.st, h.now_us);
		h.n_out = 0;
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_arp_request), 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_arp_failed), 1);
	CHECK_EQ_U64(h.st.arp_pending, 0);
	struct ss_shm_ev ev = { 0 };
	bool seen = false;
	while (sh_event(&h, &ev))
		if (ev.type == SS_EV_CONNECTED && ev.cookie == 1) {
			CHECK_EQ_U64(ev.error, EHOSTUNREACH);
			seen = true;
		}
	CHECK(seen);
	CHECK_EQ_U64(h.app->n_conns, 1); /* only the one still in SYN_SENT */
	sh_fini(&h);
}

/* More events than the app's event ring holds: connections wait on the
 * context's pending list, byte counts keep adding up, nothing is lost. */
static void test_event_ring_full(void)
{
	struct sh h;
	sh_arx_slots = 8;
	CHECK(sh_init(&h, ATTACH) == 0);
	sh_arx_slots = 64;
	test_listen(&h, 7);
	struct sh_peer_conn *p[6];
	for (int i = 0; i < 6; i++) {
		p[i] = sh_peer_new(&h, (uint16_t)(42000 + i), 7);
		ss_tcp_connect(&p[i]->c, h.now_us);
	}
	/* Do not read events: six ACCEPTED do not fit with their data. */
	sh_pump(&h, 16);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ_U64(p[i]->c.f.state, SS_TCPS_ESTABLISHED);
		CHECK(sh_peer_write(p[i], 0, 3000 + (uint32_t)i, 20 + (unsigned)i) == 0);
		ss_tcp_output(&p[i]->c, h.now_us);
	}
	sh_pump(&h, 16);
	CHECK(ctr(&h, SS_CTR_app_event_ring_waits) > 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_app_event_ring_full), 0);
	/* Drain a few at a time; every connection ends up announced with all
	 * of its bytes. */
	uint32_t bytes[16] = { 0 };
	unsigned accepted = 0;
	for (int round = 0; round < 50; round++) {
		struct ss_shm_ev ev = { 0 };
		for (int k = 0; k < 3 && sh_event(&h, &ev); k++) {
			if (ev.type == SS_EV_ACCEPTED)
				accepted++;
			if (ev.type == SS_EV_RX && ev.conn < 16)
				bytes[ev.conn] += ev.arg;
		}
		sh_pump(&h, 2);
	}
	CHECK_EQ_U64(accepted, 6);
	uint64_t total = 0;
	for (int i = 0; i < 16; i++)
		total += bytes[i];
	CHECK_EQ_U64(total, 6 * 3000 + 15);
	sh_fini(&h);
}

/*
 * Delayed ACKs (the service's default, delack_us 1000): in-order data is
 * not acknowledged at once; the reply carries the ACK when the app answers
 * in time, else a pure ACK goes when the deadline comes (the stack keeps
 * these deadlines in a FIFO beside the timer wheel).
 */
static void test_delayed_ack(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	h.st.params.delack_us = 1000; /* connections take the stack's copy */
	test_listen(&h, 7);
	struct app_conn ac = { 0 };
	struct sh_peer_conn *p = peer_connected(&h, 40001, &ac);

	/* The first data after the handshake is acknowledged at once (no ACK
	 * of ours carried rcv_nxt yet): past that, delayed ACKs. */
	CHECK(sh_peer_write(p, 0, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(p->c.f.snd_una, p->c.f.snd_max);

	/* No reply: nothing until the deadline, then one pure ACK. */
	uint64_t segs = ctr(&h, SS_CTR_tx_tcp_segments);
	CHECK(sh_peer_write(p, 10, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs);
	CHECK(p->c.f.snd_una != p->c.f.snd_max);
	uint64_t due = ss_stack_next_deadline(&h.st);
	CHECK(due > h.now_us && due <= h.now_us + 1000);
	h.now_us += 500;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs);
	h.now_us = due;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 1);
	CHECK_EQ_U64(p->c.f.snd_una, p->c.f.snd_max);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.rx_avail, 20);

	/* A reply in time carries the ACK: one segment, none later. */
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_RX_DONE, .conn = ac.slot, .gen = ac.gen,
					 .arg = 20 });
	ac.rx_head += 20;
	ac.rx_avail = 0;
	sh_pump(&h, 8);
	segs = ctr(&h, SS_CTR_tx_tcp_segments);
	for (int r = 0; r < 20; r++) {
		CHECK(sh_peer_write(p, 20 + 10 * (uint64_t)r, 10, 3) == 0);
		ss_tcp_output(&p->c, h.now_us);
		sh_pump(&h, 8);
		h.now_us += 200;
		app_poll(&h, &ac, true); /* echo */
		sh_pump(&h, 8);
		h.now_us += 200;
	}
	h.now_us += 5000;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 20);
	CHECK_EQ_U64(p->c.f.snd_una, p->c.f.snd_max);
	CHECK_EQ_U64(ac.echoed, 200);
	CHECK(ss_list_empty(&h.st.delack_q[0].link)); /* nothing left queued */
	CHECK(ss_list_empty(&h.st.delack_q[1].link));

	/* Several connections: their delayed ACKs go in deadline order. */
	struct sh_peer_conn *q[3];
	for (int i = 0; i < 3; i++) {
		q[i] = sh_peer_new(&h, (uint16_t)(40010 + i), 7);
		CHECK(ss_tcp_connect(&q[i]->c, h.now_us) == 0);
	}
	sh_pump(&h, 16);
	app_poll(&h, &ac, false);
	for (int i = 0; i < 3; i++) { /* past the first, at-once ACK */
		CHECK(sh_peer_write(q[i], 0, 5, 4) == 0);
		ss_tcp_output(&q[i]->c, h.now_us);
		sh_pump(&h, 8);
		CHECK_EQ_U64(q[i]->c.f.snd_una, q[i]->c.f.snd_max);
	}
	segs = ctr(&h, SS_CTR_tx_tcp_segments);
	for (int i = 2; i >= 0; i--) {
		CHECK(sh_peer_write(q[i], 5, 5, 4) == 0);
		ss_tcp_output(&q[i]->c, h.now_us);
		sh_pump(&h, 8);
		h.now_us += 300;
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs);
	for (int i = 2; i >= 0; i--) {
		uint64_t next = ss_stack_next_deadline(&h.st);
		CHECK(next > h.now_us - 1000 && next <= h.now_us + 1000);
		if (next > h.now_us + 1000)
			break; /* (already reported) */
		h.now_us = next > h.now_us ? next : h.now_us;
		sh_pump(&h, 8);
		CHECK_EQ_U64(q[i]->c.f.snd_una, q[i]->c.f.snd_max);
		if (i > 0)
			CHECK(q[i - 1]->c.f.snd_una != q[i - 1]->c.f.snd_max);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 3);
	sh_fini(&h);
}

/*
 * Timers armed lazily (conn_sync_timer), as an RPC server's are: a reply
 * arms the tail-loss probe and the wheel with it; the next request's ACK
 * stops the probe (the wheel's timer stays), and the next reply arms it
 * again, later, leaving the wheel alone.  The timer fires at the old
 * deadline and goes back on the wheel at the new one from the
 * connection's first line (timer_want_us, tcp_timer_rearms), and the
 * probe goes at the new deadline, not before.  The peer does not see
 * that reply (lost), so it stays in flight; the probe draws its ACK.
 */
static bool lose_data(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	return seg->payload_len > 0;
}

static void test_timer_lazy_rearm(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	test_listen(&h, 7);
	struct app_conn ac = { 0 };
	struct sh_peer_conn *p = peer_connected(&h, 40002, &ac);
	struct ss_sconn *sc = h.app->slot_conn[ac.slot];
	uint64_t got = 0;
	bool bad = false;

	/* Clean exchanges: an RTT sample, so replies arm a probe. */
	for (unsigned r = 0; r < 3; r++) {
		h.now_us += 100;
		CHECK(sh_peer_write(p, 10 * r, 10, 5) == 0);
		ss_tcp_output(&p->c, h.now_us);
		echo_turn(&h, p, &ac, 5, &got, &bad);
	}
	CHECK(!bad && got == 30 && sc->tcp.f.srtt_us > 0);
	/* The last reply's ACK came: the probe is off, its timer still on
	 * the wheel. */
	CHECK_EQ_U64(sc->tcp.f.snd_una, sc->tcp.f.snd_max);
	CHECK_EQ_U64(sc->timer_want_us, 0);
	CHECK(ss_timer_armed(&sc->timer));
	uint64_t first = sc->timer.deadline_us;
	CHECK(first > h.now_us);

	/* The next request, and a reply the peer never sees: the probe is
	 * later than the wheel's timer, which stays where it was. */
	h.now_us += 100;
	h.lose = lose_data;
	CHECK(sh_peer_write(p, 30, 10, 5) == 0);
	ss_tcp_output(&p->c, h.now_us);
	echo_turn(&h, p, &ac, 5, &got, &bad);
	uint64_t second = sc->tcp.tlp_deadline_us;
	CHECK(second > first && second < sc->tcp.rto_deadline_us);
	CHECK(sc->tcp.f.snd_una != sc->tcp.f.snd_max);
	CHECK_EQ_U64(sc->timer.deadline_us, first);
	CHECK_EQ_U64(sc->timer_want_us, second);

	/* The old deadline: back on the wheel at the new one, nothing sent. */
	uint64_t rearms = ctr(&h, SS_CTR_tcp_timer_rearms);
	uint64_t probes = ctr(&h, SS_CTR_tcp_tail_probes);
	uint64_t segs = ctr(&h, SS_CTR_tx_tcp_segments);
	h.now_us = first;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_timer_rearms), rearms + 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_tail_probes), probes);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs);
	CHECK(ss_timer_armed(&sc->timer) && sc->timer.deadline_us == second);

	/* Just before the new deadline nothing; at it, the probe, which the
	 * peer sees and answers with an ACK of everything. */
	h.now_us = second - 1;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_tail_probes), probes);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs);
	h.lose = NULL;
	h.now_us = second;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_tail_probes), probes + 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_timer_rearms), rearms + 1);
	CHECK_EQ_U64(sc->tcp.f.snd_una, sc->tcp.f.snd_max);
	CHECK_EQ_U64(sc->timer_want_us, 0);
	sh_peer_read_check(p, &got, 5, &bad);
	CHECK(!bad && got == 40);
	sh_fini(&h);
}

/*
 * The longer holds (delack_max_us 128 ms: steps of 1, 4, 16, 64 and 128
 * ms).  A connection whose reply came 3 ms after its request, after the
 * ACK had gone alone at 1 ms, holds its next ACKs up to 16 ms (the step
 * above 1.5 times 3 ms), on the stack's third queue, so replies 3 ms late
 * carry them (one segment a request).  A request with no reply within
 * 16 ms gets its ACK alone then; its reply at 40 ms moves the connection
 * to 64 ms.  A request whose ACK went alone at 64 ms, followed by more
 * data from the peer before any reply, moves it back to 1 ms.  The
 * counters say each step.
 */
static void test_delayed_ack_longer(void)
{
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	h.st.params.delack_us = 1000;
	h.st.params.delack_max_us = 128000;
	test_listen(&h, 7);
	struct app_conn ac = { 0 };
	struct sh_peer_conn *p = peer_connected(&h, 40001, &ac);
	CHECK(sh_peer_write(p, 0, 10, 3) == 0); /* past the first, at-once ACK */
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	app_poll(&h, &ac, true);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ac.echoed, 10);

	/* A request; its ACK alone at 1 ms; the reply at 3 ms. */
	uint64_t segs = ctr(&h, SS_CTR_tx_tcp_segments);
	uint64_t off = 10;
	CHECK(sh_peer_write(p, off, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	uint64_t t0 = h.now_us;
	CHECK_EQ_U64(ss_stack_next_deadline(&h.st), t0 + 1000);
	h.now_us = t0 + 1000;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_acks), 1);
	h.now_us = t0 + 3000;
	app_poll(&h, &ac, true);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_longer), 1);
	off += 10;

	/* Twenty requests answered 3 ms late: one segment each, their ACKs
	 * held on the 16 ms queue until the reply took them. */
	segs = ctr(&h, SS_CTR_tx_tcp_segments);
	for (int r = 0; r < 20; r++) {
		CHECK(sh_peer_write(p, off, 10, 3) == 0);
		ss_tcp_output(&p->c, h.now_us);
		sh_pump(&h, 8);
		CHECK_EQ_U64(stack_delack_head(&h.st, 2), h.now_us + 16000);
		for (unsigned k = 0; k < SS_TCP_DELACK_STEPS; k++)
			CHECK(ss_list_empty(&h.st.delack_q[k].link) == (k != 2));
		h.now_us += 3000;
		sh_pump(&h, 8);
		app_poll(&h, &ac, true);
		sh_pump(&h, 8);
		off += 10;
		h.now_us += 1000;
		sh_pump(&h, 8);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 20);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_acks), 1);
	CHECK_EQ_U64(p->c.f.snd_una, p->c.f.snd_max);
	CHECK_EQ_U64(ac.echoed, off);
	CHECK(ss_list_empty(&h.st.delack_q[2].link));

	/* No reply within 16 ms: the ACK goes alone then; the reply at 40 ms
	 * moves the connection to 64 ms. */
	CHECK(sh_peer_write(p, off, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	uint64_t t1 = h.now_us;
	h.now_us = t1 + 15999;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 20);
	h.now_us = t1 + 16000;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 21);
	CHECK_EQ_U64(p->c.f.snd_una, p->c.f.snd_max);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_acks), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_shorter), 0);
	h.now_us = t1 + 40000;
	app_poll(&h, &ac, true);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 22);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_longer), 2);
	off += 10;
	CHECK_EQ_U64(ac.echoed, off);

	/* A request whose ACK goes alone at 64 ms; the peer sends more before
	 * any reply (it waited for that ACK): back to 1 ms. */
	CHECK(sh_peer_write(p, off, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(stack_delack_head(&h.st, 3), h.now_us + 64000);
	h.now_us += 64000;
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), segs + 23);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_acks), 3);
	CHECK(ss_list_empty(&h.st.delack_q[3].link));
	off += 10;
	CHECK(sh_peer_write(p, off, 10, 3) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_shorter), 1);
	CHECK_EQ_U64(ss_stack_next_deadline(&h.st), h.now_us + 1000);
	CHECK(!ss_list_empty(&h.st.delack_q[0].link));
	app_poll(&h, &ac, true);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ac.echoed, off + 10);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_delack_longer), 2);
	sh_fini(&h);
}

/*
 * SYN cookies: a listener with a backlog of 2 half-open connections and
 * six peers connecting at once.  The first two get ordinary SYN-ACKs, the
 * other four cookies; every peer ends up ESTABLISHED with scaled windows,
 * the app accepts all six, and 4000 bytes echo exactly on each.  With
 * cookies off, the four are dropped (counted); a forged ACK with no valid
 * cookie is reset.
 */
static void cookie_listen(struct sh *h, uint32_t backlog)
{
	struct ss_shm_ev ev = { 0 };
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 7, .arg = backlog, .cookie = 9 });
	sh_pump(h, 4);
	CHECK(sh_event(h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_LISTEN);
}

/* @small: on small rings that grow (shm/abi.h): the same shift, for the
 * large ring. */
static void test_syn_cookies(bool small)
{
	struct sh h;
	CHECK(sh_init(&h, small ? "attach 1 contexts=1 conns=16 rxbuf=131072 txbuf=65536"
				: "attach 1 contexts=1 conns=16 rxbuf=131072 txbuf=65536 small=0") == 0);
	CHECK_EQ_U64(h.st.lim.syn_cookies, SS_SYN_COOKIES_OFF); /* the limits' zero value */
	h.st.lim.syn_cookies = SS_SYN_COOKIES_ON;
	cookie_listen(&h, 2);
	struct sh_peer_conn *p[6];
	for (int i = 0; i < 6; i++) {
		p[i] = sh_peer_new(&h, (uint16_t)(43000 + i), 7);
		CHECK(ss_tcp_connect(&p[i]->c, h.now_us) == 0);
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_sent), 4);
	CHECK_EQ_U64(h.st.listeners[0].n_syn, 2);
	CHECK_EQ_U64(h.st.n_flows, 2); /* the cookies keep nothing */
	sh_pump(&h, 16);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_ok), 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_bad), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_backlog), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_passive_open), 6);
	CHECK_EQ_U64(h.st.listeners[0].n_syn, 0);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ_U64(p[i]->c.f.state, SS_TCPS_ESTABLISHED);
		CHECK_EQ_U64(p[i]->c.f.snd_wscale, 2);         /* ours: 128 KiB ring */
		CHECK(p[i]->c.f.flags & SS_TCPF_TS);
		CHECK(p[i]->c.f.flags & SS_TCPF_SACK_PERM);
		CHECK(p[i]->c.ecn_ok);
	}
	CHECK_EQ_U64(h.rsts_to_peer, 0);

	/* All six are announced; each echoes its own bytes exactly. */
	struct app_conn ac[6];
	unsigned n_ac = 0;
	memset(ac, 0, sizeof(ac));
	struct ss_shm_ev ev = { 0 };
	while (sh_event(&h, &ev)) {
		if (ev.type == SS_EV_ACCEPTED && n_ac < 6) {
			CHECK_EQ_U64(ev.cookie, 9);
			app_on_event(&h, &ac[n_ac++], &ev);
		}
	}
	CHECK_EQ_U64(n_ac, 6);
	for (unsigned k = 0; k < n_ac; k++) { /* our side uses the shift it offered */
		struct ss_sconn *sc = h.app->slot_conn[ac[k].slot];
		CHECK_EQ_U64(sc->tcp.f.rcv_wscale, 2);
		CHECK_EQ_U64(sc->tcp.rx.size, small ? SS_SHM_SMALL_RING : 131072);
		CHECK_EQ_U64(ac[k].rx_size, small ? SS_SHM_SMALL_RING : 131072);
		CHECK_EQ_U64(sc->tcp.f.snd_wscale, p[0]->c.f.rcv_wscale);
		CHECK(sc->tcp.f.flags & SS_TCPF_SACK_PERM);
	}
	for (int i = 0; i < 6; i++)
		CHECK(sh_peer_write(p[i], 0, 4000, 30 + (unsigned)i) == 0);
	uint64_t got[6] = { 0 };
	bool bad = false;
	for (int iter = 0; iter < 400; iter++) {
		for (int i = 0; i < 6; i++)
			ss_tcp_output(&p[i]->c, h.now_us);
		sh_pump(&h, 8);
		while (sh_event(&h, &ev))
			for (unsigned k = 0; k < n_ac; k++)
				if (ev.conn == ac[k].slot && ev.gen == ac[k].gen)
					app_on_event(&h, &ac[k], &ev);
		for (unsigned k = 0; k < n_ac; k++)
			app_echo(&h, &ac[k]);
		sh_pump(&h, 8);
		bool done = true;
		for (int i = 0; i < 6; i++) {
			sh_peer_read_check(p[i], &got[i], 30 + (unsigned)i, &bad);
			done &= got[i] == 4000;
		}
		if (done)
			break;
		h.now_us += 200;
	}
	for (int i = 0; i < 6; i++)
		CHECK_EQ_U64(got[i], 4000);
	CHECK(!bad);

	/* An ACK to the port that returns no cookie of ours: reset. */
	struct ss_tcp forged = { .sport = 44000, .dport = 7, .seq = 1000, .ack = 0x12345678,
				 .flags = SS_TCP_ACK, .window = 1000, .hdr_len = 20 };
	uint64_t rsts = h.rsts_to_peer;
	CHECK(sh_to_stack(&h, &forged) == 0);
	CHECK_EQ_U64(h.rsts_to_peer, rsts + 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_bad), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_passive_open), 6);
	sh_fini(&h);

	/* Cookies off: past the backlog, SYNs are dropped. */
	CHECK(sh_init(&h, "attach 1 contexts=1 conns=16 rxbuf=131072 txbuf=65536 small=0") == 0);
	cookie_listen(&h, 2);
	for (int i = 0; i < 6; i++) {
		p[i] = sh_peer_new(&h, (uint16_t)(43000 + i), 7);
		CHECK(ss_tcp_connect(&p[i]->c, h.now_us) == 0);
	}
	sh_pump(&h, 16);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_sent), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_backlog), 4);
	unsigned est = 0;
	for (int i = 0; i < 6; i++)
		est += p[i]->c.f.state == SS_TCPS_ESTABLISHED;
	CHECK_EQ_U64(est, 2);
	sh_fini(&h);

	/* Always: every SYN gets a cookie, none is half-open. */
	CHECK(sh_init(&h, "attach 1 contexts=1 conns=16 rxbuf=131072 txbuf=65536 small=0") == 0);
	h.st.lim.syn_cookies = SS_SYN_COOKIES_ALWAYS;
	cookie_listen(&h, 16);
	for (int i = 0; i < 3; i++) {
		p[i] = sh_peer_new(&h, (uint16_t)(43000 + i), 7);
		CHECK(ss_tcp_connect(&p[i]->c, h.now_us) == 0);
	}
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_pump(&h, 16);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_ok), 3);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_U64(p[i]->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h.st.n_flows, 3);
	sh_fini(&h);
}

/*
 * TX checksum offload (SS_TX_CSUM): every kind of segment the stack sends
 * (SYN, SYN-ACK, data of every length, ACK, FIN, RST, with and without
 * timestamps, SACK blocks, ECN marks), built for the port and completed in
 * software as a NIC does, is byte for byte the frame built with software
 * checksums; as the port gets it, its IPv4 checksum is 0 and its TCP
 * checksum field the pseudo-header sum (rte_ipv4_phdr_cksum()).
 */
static void test_tx_csum_offload_frames(void)
{
	static const uint8_t kinds[] = {
		SS_TCP_SYN, SS_TCP_SYN | SS_TCP_ACK, SS_TCP_SYN | SS_TCP_ACK | SS_TCP_ECE,
		SS_TCP_ACK, SS_TCP_ACK | SS_TCP_PSH, SS_TCP_ACK | SS_TCP_FIN,
		SS_TCP_ACK | SS_TCP_PSH | SS_TCP_FIN, SS_TCP_ACK | SS_TCP_CWR | SS_TCP_PSH,
		SS_TCP_RST, SS_TCP_RST | SS_TCP_ACK,
	};
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	test_listen(&h, 7);
	struct app_conn ac = { 0 };
	peer_connected(&h, 40000, &ac);
	struct ss_flow_key k = { .local_ip = SH_SVC_IP, .remote_ip = SH_PEER_IP,
				 .local_port = 7, .remote_port = 40000 };
	struct ss_sconn *sc = ss_flow_table_lookup(&h.st.flows, &k);
	CHECK(sc != NULL);
	if (!sc || !ac.connected) {
		sh_fini(&h);
		return;
	}
	uint32_t tsize = h.app->txbuf_size;
	uint64_t rng = 1071;
	for (uint32_t i = 0; i < tsize; i++)
		ac.tx[i] = (uint8_t)check_rand(&rng);
	unsigned bad = 0, n_kinds = sizeof(kinds) / sizeof(kinds[0]);
	for (unsigned n = 0; n < 4000; n++) {
		struct ss_tcp_seg_out seg;
		uint8_t fl = kinds[n % n_kinds];

		memset(&seg, 0, sizeof(seg));
		seg.hdr.sport = 7;
		seg.hdr.dport = 40000;
		seg.hdr.seq = (uint32_t)check_rand(&rng);
		seg.hdr.ack = fl & SS_TCP_ACK ? (uint32_t)check_rand(&rng) : 0;
		seg.hdr.flags = fl;
		seg.hdr.window = (uint16_t)check_rand(&rng);
		if (fl & SS_TCP_SYN) {
			seg.hdr.opts.present = SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE |
					       SS_TCP_OPTF_SACK_PERM;
			seg.hdr.opts.mss = 1460;
			seg.hdr.opts.wscale = (uint8_t)(check_rand(&rng) % 15);
		}
		if (check_rand(&rng) % 4) {
			seg.hdr.opts.present |= SS_TCP_OPTF_TS;
			seg.hdr.opts.ts_val = (uint32_t)check_rand(&rng);
			seg.hdr.opts.ts_ecr = (uint32_t)check_rand(&rng);
		}
		if (!(fl & (SS_TCP_SYN | SS_TCP_RST)) && check_rand(&rng) % 5 == 0) {
			seg.hdr.opts.present |= SS_TCP_OPTF_SACK;
			seg.hdr.opts.sack_count = (uint8_t)(1 + check_rand(&rng) % 3);
			for (unsigned b = 0; b < seg.hdr.opts.sack_count; b++) {
				seg.hdr.opts.sack[b].left = (uint32_t)check_rand(&rng);
				seg.hdr.opts.sack[b].right = (uint32_t)check_rand(&rng);
			}
		}
		if (fl & SS_TCP_PSH) {
			seg.len = (uint32_t)(1 + check_rand(&rng) % 1460);
			seg.hdr.ip_ecn = check_rand(&rng) % 2 ? SS_IP_ECN_ECT0 : 0;
		}
		seg.tx_pos = (uint32_t)check_rand(&rng);
		seg.hdr.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&seg.hdr.opts));

		h.n_out = 0;
		uint16_t id = h.st.ip_id;
		h.st.io.tx_offload = 0;
		int rc_sw = stack_conn_emit(&h.st, &sc->tcp, &seg);
		h.st.ip_id = id; /* the same IPv4 id for both */
		h.st.io.tx_offload = SS_TX_CSUM;
		int rc_ol = stack_conn_emit(&h.st, &sc->tcp, &seg);
		h.st.io.tx_offload = 0;
		if (rc_sw != 0 || rc_ol != 0 || h.n_out != 2) {
			bad++;
			break;
		}
		struct sh_frame *sw = &h.out[0], *ol = &h.out[1];
		uint16_t l4_len = (uint16_t)(ol->len - 34);
		uint16_t phdr = (uint16_t)~ss_csum_fold(ss_csum_pseudo_ipv4(SH_SVC_IP, SH_PEER_IP,
									   SS_IPPROTO_TCP, l4_len));
		if (sw->flags != 0 || ol->flags != SS_TX_CSUM || ss_rd16(ol->b + 24) != 0 ||
		    ss_rd16(ol->b + 50) != phdr)
			bad++;
		sh_frame_csum_finish(ol);
		if (sw->len != ol->len || memcmp(sw->b, ol->b, sw->len) != 0)
			bad++;
		/* and the software frame's checksums are right */
		if (ss_csum_ipv4_header(sw->b + 14, 20) != 0 ||
		    !ss_tcp_csum_ok(SH_SVC_IP, SH_PEER_IP, sw->b + 34, l4_len))
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	h.n_out = 0;
	sh_fini(&h);
}

/* The connection tests, run once with software checksums and once with
 * the stack leaving them to the "port". */
static void conn_tests(void)
{
	test_passive_echo(false, false);
	test_passive_echo(true, false);
	test_passive_echo(false, true);
	test_passive_echo(true, true);
	test_syn_cookies(false);
	test_syn_cookies(true);
	test_delayed_ack();
	test_timer_lazy_rearm();
	test_delayed_ack_longer();
	test_active_close_first();
	test_peer_reset();
	test_connect_refused();
}

/*
 * @t from the peer as a whole frame through the receive path the service
 * runs (ss_proto_input(): checks, flow lookup, listeners, the engine, the
 * reset for a closed port).  Every segment that comes back, whether the
 * receive path's own reply or one the stack emits meanwhile, is parsed
 * into @back (up to @cap); returns how many.
 */
static unsigned raw_in(struct sh *h, const struct ss_tcp *t, struct ss_tcp *back, unsigned cap)
{
	uint8_t frame[SH_FRAME_CAP];
	size_t n = ss_tcp_build(frame + 34, sizeof(frame) - 34, t, SH_PEER_IP, SH_SVC_IP);
	CHECK(n > 0);
	struct ss_ipv4 ip = { .total_len = (uint16_t)(20 + n), .ttl = 64, .proto = 6,
			      .src = SH_PEER_IP, .dst = SH_SVC_IP };
	ss_ipv4_build(frame + 14, 20, &ip);
	struct ss_eth eth = { .ethertype = SS_ETHERTYPE_IPV4 };
	memcpy(eth.dst, sh_svc_mac, 6);
	memcpy(eth.src, sh_peer_mac, 6);
	ss_eth_build(frame, 14, &eth);
	unsigned from = h->n_out, got = 0;
	h->st.now_us = h->now_us;
	size_t r = ss_proto_input(&h->proto, frame, 34 + n, sizeof(frame), 0);
	ss_stack_round(&h->st, h->now_us); /* the flush: what the engine owes goes out */
	for (unsigned i = 0; i <= h->n_out - from; i++) {
		const uint8_t *b = i == 0 ? frame : h->out[from + i - 1].b;
		size_t len = i == 0 ? r : h->out[from + i - 1].len;
		struct ss_ipv4 pip;
		if (!len)
			continue;
		if (i)
			sh_frame_csum_finish(&h->out[from + i - 1]);
		CHECK(ss_ipv4_parse(b + 14, len - 14, 0, &pip) == SS_IPV4_OK);
		CHECK_EQ_U64(pip.dst, SH_PEER_IP);
		if (got < cap) {
			CHECK(ss_tcp_parse(b + 34, pip.payload_len, &back[got]) == SS_TCP_OK);
			CHECK(ss_tcp_csum_ok(pip.src, pip.dst, b + 34, pip.payload_len));
		}
		got++;
	}
	h->n_out = from;
	return got;
}

/*
 * A listening port and a segment with none of SYN, ACK, RST (RFC 9293
 * §3.10.7.2 LISTEN, fourth: "Any other control or text-bearing segment
 * (not containing SYN) must have an ACK and thus would have been
 * discarded by the ACK processing in the second step ... drop the
 * segment and return"): no answer, drop_tcp_listen_no_ack, no
 * connection; also while SYN cookies are out.  An ACK is still answered
 * <SEQ=SEG.ACK><CTL=RST> (second), and the same segments to a port
 * nobody listens on still get <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>
 * (§3.10.7.1).
 */
static void test_listen_no_ack(void)
{
	static const uint8_t fl[] = { 0, SS_TCP_FIN, SS_TCP_PSH, SS_TCP_URG,
				      SS_TCP_FIN | SS_TCP_PSH | SS_TCP_URG, SS_TCP_ECE | SS_TCP_CWR };
	static const uint8_t pay[5] = "hello";
	for (int cookies = 0; cookies <= 1; cookies++) {
		struct sh h;
		CHECK(sh_init(&h, ATTACH) == 0);
		if (cookies)
			h.st.lim.syn_cookies = SS_SYN_COOKIES_ALWAYS;
		test_listen(&h, 7);
		if (cookies) { /* a cookie out: ACKs to the port are looked at */
			struct sh_peer_conn *p = sh_peer_new(&h, 45999, 7);
			CHECK(ss_tcp_connect(&p->c, h.now_us) == 0);
			CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_syn_cookies_sent), 1);
			CHECK(h.st.cookie_until_us > h.now_us);
			sh_pump(&h, 8);
			CHECK_EQ_U64(h.st.n_flows, 1);
		}
		uint64_t flows = h.st.n_flows;
		struct ss_tcp back[4];
		unsigned k = 0;
		for (unsigned i = 0; i < sizeof(fl); i++) {
			for (int with_data = 0; with_data <= 1; with_data++, k++) {
				struct ss_tcp t = { .sport = (uint16_t)(45000 + k), .dport = 7,
						    .seq = 1000 + k, .flags = fl[i], .window = 1000,
						    .hdr_len = 20 };
				if (with_data) {
					t.payload = pay;
					t.payload_len = sizeof(pay);
				}
				uint64_t no_flow = ctr(&h, SS_CTR_drop_tcp_no_flow);
				CHECK_EQ_U64(raw_in(&h, &t, back, 4), 0);
				CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_listen_no_ack), k + 1);
				CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow), no_flow);
				CHECK_EQ_U64(h.st.n_flows, flows);
				/* The same to a closed port: reset. */
				t.dport = 8;
				CHECK_EQ_U64(raw_in(&h, &t, back, 4), 1);
				CHECK_EQ_U64(back[0].flags, SS_TCP_RST | SS_TCP_ACK);
				CHECK_EQ_U64(back[0].seq, 0);
				CHECK_EQ_U64(back[0].ack, t.seq + t.payload_len + !!(fl[i] & SS_TCP_FIN));
				CHECK_EQ_U64(back[0].sport, 8);
				CHECK_EQ_U64(back[0].dport, t.sport);
				CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow), no_flow + 1);
			}
		}
		CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_passive_open), (uint64_t)cookies);
		/* An ACK (no valid cookie) to the listening port: reset. */
		struct ss_tcp a = { .sport = 46000, .dport = 7, .seq = 5000, .ack = 0x12345678,
				    .flags = SS_TCP_ACK | SS_TCP_FIN, .window = 1000, .hdr_len = 20 };
		CHECK_EQ_U64(raw_in(&h, &a, back, 4), 1);
		CHECK_EQ_U64(back[0].flags, SS_TCP_RST);
		CHECK_EQ_U64(back[0].seq, 0x12345678);
		CHECK_EQ_U64(back[0].sport, 7);
		CHECK_EQ_U64(back[0].dport, 46000);
		CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_listen_no_ack), k);
		CHECK_EQ_U64(h.st.n_flows, flows);
		sh_fini(&h);
	}
}

/*
 * The app closes (or aborts) a connection still in SYN_SENT (RFC 9293
 * §3.10.4 CLOSE, SYN-SENT: "Delete the TCB"; §3.10.5 ABORT: no RST from
 * SYN-SENT): nothing goes out, the flow is gone, and the SYN-ACK that
 * comes later finds no connection: <SEQ=SEG.ACK><CTL=RST> (§3.10.7.1),
 * no ACK.  @mode 0 and 1: SS_CMD_CLOSE and SS_CMD_ABORT on the handle
 * (the slot the stack took; the app gets SS_EV_CLOSED for it); 2: what
 * close() of a connecting socket sends, which has no handle yet:
 * SS_CMD_ABORT with SS_CMDF_CONNECTING and the CONNECT's cookie
 * (ss_connect_cancel()), after which no event comes at all (a cookie of
 * no connection changes nothing).
 */
static void test_syn_sent_app_close(void)
{
	for (int mode = 0; mode <= 2; mode++) {
		struct sh h;
		CHECK(sh_init(&h, ATTACH) == 0);
		h.peer_listen_port = 1; /* the peer answers nothing: the SYN waits */
		sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP,
						 .port = 9000, .cookie = 5 });
		sh_pump(&h, 4);
		CHECK_EQ_U64(h.st.n_flows, 1);
		CHECK_EQ_U64(h.app->n_conns, 1);
		struct ss_sconn *sc = NULL;
		uint32_t slot = 0;
		for (; slot < h.app->max_conns && !sc; slot++)
			sc = h.app->slot_conn[slot];
		CHECK(sc != NULL);
		slot--;
		CHECK_EQ_U64(sc->tcp.f.state, SS_TCPS_SYN_SENT);
		uint32_t iss = sc->tcp.iss, gen = ss_idpool_gen(&h.app->slots, slot);
		uint16_t lport = sc->key.local_port;
		uint64_t sent = h.frames_from_stack;
		struct ss_shm_ev ev = { 0 };
		if (mode == 2) {
			sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_ABORT,
							 .flags = SS_CMDF_CONNECTING, .cookie = 6 });
			sh_pump(&h, 4);
			CHECK(!sh_event(&h, &ev));
			CHECK_EQ_U64(sc->tcp.f.state, SS_TCPS_SYN_SENT);
			CHECK_EQ_U64(h.app->n_conns, 1);
			sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_ABORT,
							 .flags = SS_CMDF_CONNECTING, .cookie = 5 });
		} else {
			sh_cmd(&h, &(struct ss_shm_cmd){ .op = mode ? SS_CMD_ABORT : SS_CMD_CLOSE,
							 .conn = slot, .gen = gen });
		}
		sh_pump(&h, 4);
		CHECK_EQ_U64(h.frames_from_stack, sent); /* no RST, no FIN */
		if (mode < 2) {
			CHECK(sh_event(&h, &ev));
			CHECK_EQ_U64(ev.type, SS_EV_CLOSED);
			CHECK_EQ_U64(ev.conn, slot);
			CHECK_EQ_U64(ev.gen, gen);
		}
		CHECK(!sh_event(&h, &ev));
		CHECK_EQ_U64(h.app->n_conns, 0);
		CHECK_EQ_U64(h.st.n_flows, 0);

		/* The peer's SYN-ACK, late. */
		struct ss_tcp synack = { .sport = 9000, .dport = lport, .seq = 0x70000000u,
					 .ack = iss + 1, .flags = SS_TCP_SYN | SS_TCP_ACK,
					 .window = 65535, .hdr_len = 20 };
		struct ss_tcp back[4];
		uint64_t no_flow = ctr(&h, SS_CTR_drop_tcp_no_flow);
		CHECK_EQ_U64(raw_in(&h, &synack, back, 4), 1);
		CHECK_EQ_U64(back[0].flags, SS_TCP_RST);
		CHECK_EQ_U64(back[0].seq, iss + 1);
		CHECK_EQ_U64(back[0].sport, lport);
		CHECK_EQ_U64(back[0].dport, 9000);
		CHECK_EQ_U64(back[0].payload_len, 0);
		CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow), no_flow + 1);
		CHECK_EQ_U64(h.st.n_flows, 0);
		sh_pump(&h, 4);
		CHECK(!sh_event(&h, &ev));
		CHECK_EQ_U64(h.frames_from_stack, sent);
		sh_fini(&h);
	}

	/* Announced already: SS_CMDF_CONNECTING changes nothing (the app
	 * closes the handle SS_EV_CONNECTED brought). */
	struct sh h;
	CHECK(sh_init(&h, ATTACH) == 0);
	h.peer_listen_port = 9000;
	struct ss_shm_ev ev = connect_event(&h, 5);
	CHECK_EQ_U64(ev.type, SS_EV_CONNECTED);
	CHECK_EQ_U64(ev.error, 0);
	uint64_t sent = h.frames_from_stack;
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_ABORT, .flags = SS_CMDF_CONNECTING,
					 .cookie = 5 });
	sh_pump(&h, 4);
	CHECK(!sh_event(&h, &ev));
	CHECK_EQ_U64(h.frames_from_stack, sent);
	CHECK_EQ_U64(h.app->n_conns, 1);
	CHECK_EQ_U64(h.peer[0].c.f.state, SS_TCPS_ESTABLISHED);
	sh_fini(&h);
}

/*
 * The doorbell latch (abi.h): before it sleeps, the service clears each
 * context's atx->sleeping, set by the application when it rang during
 * the last sleep, and only then sets its own flag; a queue with work
 * keeps it awake (the flag cleared again), latch cleared all the same.
 */
static void test_sleep_doorbell_latch(void)
{
	struct sh h;

	CHECK(sh_init(&h, ATTACH) == 0);
	sh_pump(&h, 2);
	struct ss_app_ctx *cx = sh_ctx(&h);
	uint32_t *svc = &h.reg.status->sleeping[h.st.fp_index];

	__atomic_store_n(&cx->atx->sleeping, 1, __ATOMIC_RELAXED);
	CHECK(ss_stack_may_sleep(&h.st));
	CHECK_EQ_U64(*svc, 1);
	CHECK_EQ_U64(cx->atx->sleeping, 0);
	ss_stack_woke(&h.st);
	CHECK_EQ_U64(*svc, 0);

	/* A command not taken yet: no sleep. */
	__atomic_store_n(&cx->atx->sleeping, 1, __ATOMIC_RELAXED);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_NOP });
	CHECK(!ss_stack_may_sleep(&h.st));
	CHECK_EQ_U64(*svc, 0);
	CHECK_EQ_U64(cx->atx->sleeping, 0);
	sh_pump(&h, 2);
	CHECK(ss_stack_may_sleep(&h.st));
	ss_stack_woke(&h.st);
	sh_fini(&h);
}

/* Events to whichever of @n connections they are for (by slot); a new
 * connection's go to the first that holds none. */
static void app_poll_many(struct sh *h, struct app_conn *ac, unsigned n)
{
	struct ss_shm_ev ev = { 0 };

	while (sh_event(h, &ev)) {
		unsigned i = 0;

		while (i < n && !(ac[i].connected && ac[i].slot == ev.conn))
			i++;
		if (i == n && (ev.type == SS_EV_ACCEPTED || ev.type == SS_EV_CONNECTED))
			for (i = 0; i < n && ac[i].connected; i++)
				;
		CHECK(i < n);
		if (i < n)
			app_on_event(h, &ac[i], &ev);
	}
}

/* The application's bytes of @ac match the pattern stream @seed from 0. */
static bool app_rx_is(struct sh *h, const struct app_conn *ac, uint32_t n, unsigned seed)
{
	uint32_t size = ac->rx_size;

	if (ac->rx_avail != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (ac->rx[(ac->rx_head - ac->rx_origin + i) & (size - 1)] != sh_pat(i, seed))
			return false;
	return true;
}

static struct ss_flow_key peer_key(uint16_t peer_port)
{
	return (struct ss_flow_key){ .local_ip = SH_SVC_IP, .remote_ip = SH_PEER_IP,
				     .local_port = 7, .remote_port = peer_port };
}

/*
 * Receive bursts looked up ahead (ss_stack_rx_prefetch()): segments in
 * the order given take the burst's answers; one whose key is not next is
 * looked up (rx_ahead_misses); an answer from before the table changed is
 * not taken (rx_ahead_stale): a SYN's answer was "no connection", and
 * its retransmission in the same burst must find the connection the
 * first made.  A round ends the burst.  Every byte reaches its own
 * connection.
 */
static void test_rx_ahead(void)
{
	struct sh h;
	struct app_conn ac[3] = { 0 };
	struct ss_flow_key keys[4];

	CHECK(sh_init(&h, ATTACH) == 0);
	test_listen(&h, 7);
	struct sh_peer_conn *a = sh_peer_new(&h, 40000, 7), *b = sh_peer_new(&h, 40001, 7);
	CHECK(ss_tcp_connect(&a->c, h.now_us) == 0);
	CHECK(ss_tcp_connect(&b->c, h.now_us) == 0);
	sh_pump(&h, 16);
	app_poll_many(&h, ac, 2);
	CHECK(ac[0].connected && ac[1].connected);

	/* In order: both from the burst. */
	keys[0] = peer_key(40000);
	keys[1] = peer_key(40001);
	ss_stack_rx_prefetch(&h.st, keys, 2);
	CHECK(sh_peer_write(a, 0, 100, 1) == 0);
	ss_tcp_output(&a->c, h.now_us);
	CHECK(sh_peer_write(b, 0, 200, 2) == 0);
	ss_tcp_output(&b->c, h.now_us);
	CHECK_EQ_U64(h.st.rxa.next, 2);
	sh_pump(&h, 8);
	app_poll_many(&h, ac, 2);
	unsigned ia = ac[0].rx_avail == 100 ? 0 : 1; /* which one is a's */
	CHECK(app_rx_is(&h, &ac[ia], 100, 1));
	CHECK(app_rx_is(&h, &ac[1 - ia], 200, 2));
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_ahead_misses), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_ahead_stale), 0);

	/* b's segment where the burst expects a's: looked up, b's bytes. */
	keys[0] = keys[1] = keys[2] = peer_key(40000);
	ss_stack_rx_prefetch(&h.st, keys, 3);
	CHECK(sh_peer_write(b, 200, 50, 2) == 0);
	ss_tcp_output(&b->c, h.now_us);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_ahead_misses), 1);
	CHECK_EQ_U64(h.st.rxa.next, 0);
	sh_pump(&h, 8);
	app_poll_many(&h, ac, 2);
	CHECK(app_rx_is(&h, &ac[1 - ia], 250, 2));
	CHECK(app_rx_is(&h, &ac[ia], 100, 1));

	/* A round ends the burst: its keys are not compared any more. */
	sh_pump(&h, 1);
	CHECK_EQ_U64(h.st.rxa.n, 0);

	/* A SYN and its retransmission in one burst: the second's answer (no
	 * connection, from before the first made one) is stale. */
	keys[0] = keys[1] = peer_key(40002);
	ss_stack_rx_prefetch(&h.st, keys, 2);
	CHECK(h.st.rxa.sc[1] == NULL);
	struct sh_peer_conn *c = sh_peer_new(&h, 40002, 7);
	uint32_t flows = h.st.n_flows;
	CHECK(ss_tcp_connect(&c->c, h.now_us) == 0);
	CHECK_EQ_U64(h.st.n_flows, flows + 1);
	/* Its SYN again, before the round that would answer the first. */
	h.now_us += 3000000;
	ss_tcp_timer(&c->c, h.now_us);
	ss_tcp_output(&c->c, h.now_us);
	CHECK_EQ_U64(h.st.rxa.next, 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_ahead_stale), 1);
	CHECK_EQ_U64(h.st.n_flows, flows + 1);
	sh_pump(&h, 16);
	CHECK_EQ_U64(h.rsts_to_peer, 0);
	CHECK_EQ_U64(c->c.f.state, SS_TCPS_ESTABLISHED);
	app_poll_many(&h, ac, 3);
	CHECK(ac[2].connected);
	CHECK(sh_peer_write(c, 0, 300, 3) == 0);
	ss_tcp_output(&c->c, h.now_us);
	sh_pump(&h, 8);
	app_poll_many(&h, ac, 3);
	CHECK(app_rx_is(&h, &ac[2], 300, 3));
	CHECK_EQ_U64(h.app->n_conns, 3);
	sh_fini(&h);
}

/* --shm-huge: a region is madvised, and its header says so to the
 * library, exactly when the registry has shm_huge. */
static void test_region_huge(void)
{
	struct sh h;

	CHECK(sh_init(&h, ATTACH) == 0);
	CHECK_EQ_U64(smaps_advised_huge(h.app->region), 0);
	CHECK_EQ_U64(((const struct ss_shm_hdr *)(const void *)h.app->region)->flags, 0);
	h.reg.shm_huge = true;
	struct cl c;
	CHECK_EQ_U64(cl_attach(&h, &c, ATTACH, NULL, 0), 1);
	CHECK_EQ_U64(smaps_advised_huge(c.a->region), 1);
	CHECK_EQ_U64(((const struct ss_shm_hdr *)(const void *)c.a->region)->flags, SS_SHM_HDR_HUGE);
	cl_close(&c);
	sh_fini(&h);
}

/* Connections @from to @to - 1 of @c to ports 9000 + k that the peer
 * does not answer (h->peer_listen_port elsewhere): each holds its slot. */
static void connect_unanswered(struct sh *h, struct cl *c, uint16_t from, uint16_t to)
{
	for (uint16_t k = from; k < to; k++)
		cl_cmd(c, (struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP,
					       .port = (uint16_t)(9000 + k) });
	sh_pump(h, 4);
}

/*
 * --shm-huge: a huge region is populated ahead of its connections
 * (populate.h).  At attach: the header, the queues, the per-slot records
 * and the rings of the first 32 MiB of slots, nothing after.  The slot
 * past the kick mark wakes the slow path (reclaim_fd, counted in
 * app_populate_kicks) once for that mark; a slot past what is populated
 * counts in app_slot_unpopulated; ss_app_populate() then takes the rings
 * as far as the new plan, and again nothing after.  A region on small
 * pages is never populated.
 */
static void test_region_populated(void)
{
	const uint64_t page2m = 2ull << 20, slot = 2ull << 20; /* 1 MiB rings each way */
	struct sh h;
	struct cl c;
	uint64_t v;

	CHECK(sh_init(&h, ATTACH) == 0);
	CHECK_EQ_U64(h.app->populate_at, SS_POPULATE_NEVER);
	CHECK_EQ_U64(h.app->populated, 0);
	CHECK_EQ_U64(h.reg.populated_bytes, 0);
	h.reg.shm_huge = true;
	CHECK_EQ_U64(cl_attach(&h, &c, "attach 1 contexts=1 conns=64 rxbuf=1048576 txbuf=1048576 small=0",
			       NULL, 0), 1);
	struct ss_app *a = c.a;
	uint64_t end = (a->buf_off + 16 * slot + page2m - 1) / page2m * page2m;
	CHECK_EQ_U64(a->populated, 16); /* 32 MiB of 2 MiB slots */
	CHECK_EQ_U64(a->populate_at, 8);
	CHECK_EQ_U64(h.reg.populated_bytes, end);
	CHECK_EQ_U64(resident_pages(a->region, end), end / 4096);
	CHECK_EQ_U64(resident_pages(a->region + end, a->region_size - end), 0);

	/* Nine connections (unanswered SYNs hold their slots): the ninth
	 * passes the mark and kicks; two more do not kick again. */
	h.peer_listen_port = 1;
	connect_unanswered(&h, &c, 0, 9);
	CHECK_EQ_U64(a->slot_hw, 9);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_populate_kicks), 1);
	CHECK_EQ_U64(read(h.reg.reclaim_fd, &v, sizeof(v)), sizeof(v));
	CHECK_EQ_U64(v, 1);
	connect_unanswered(&h, &c, 9, 11);
	CHECK_EQ_U64(a->slot_hw, 11);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_populate_kicks), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_slot_unpopulated), 0);

	/* The slow path has not run yet: slots 11 to 16, the last one past
	 * what is populated (a fallback to first touch, counted). */
	connect_unanswered(&h, &c, 11, 17);
	CHECK_EQ_U64(a->slot_hw, 17);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_populate_kicks), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_slot_unpopulated), 1);

	/* The slow path: 17 in use, as many again ahead (more than 32 MiB),
	 * so 34 slots; the next mark half way there. */
	uint64_t end2 = (a->buf_off + 34 * slot + page2m - 1) / page2m * page2m;
	CHECK_EQ_U64(ss_app_populate(&h.reg), end2 - end); /* from where it stopped */
	CHECK_EQ_U64(a->populated, 34);
	CHECK_EQ_U64(a->populate_at, 25);
	CHECK_EQ_U64(resident_pages(a->region, end2), end2 / 4096);
	CHECK_EQ_U64(resident_pages(a->region + end2, a->region_size - end2), 0);
	CHECK_EQ_U64(ss_app_populate(&h.reg), 0); /* nothing new planned */
	CHECK_EQ_U64(h.app->populated, 0);        /* the small-page region */
	cl_close(&c);
	sh_fini(&h);
}

/*
 * The same with small rings (shm/abi.h "Small rings that grow"): at
 * attach, the records and the small rings of the planned slots (to a
 * whole huge page), then those slots' large rings; neither the rest of
 * the small area nor the large rings after them.  Further on, each area
 * from where it stopped.
 */
static void test_region_populated_small(void)
{
	const uint64_t page2m = 2ull << 20, slot = 2ull << 20, small = 2 * SS_SHM_SMALL_RING;
	struct sh h;
	struct cl c;

	CHECK(sh_init(&h, ATTACH) == 0);
	h.reg.shm_huge = true;
	CHECK_EQ_U64(cl_attach(&h, &c, "attach 1 contexts=1 conns=256 rxbuf=1048576 txbuf=1048576",
			       NULL, 0), 1);
	struct ss_app *a = c.a;
	CHECK(a->small_off != 0);
	CHECK(a->small_off + 256 * small <= a->buf_off);
	uint64_t s_end = (a->small_off + 16 * small + page2m - 1) / page2m * page2m;
	uint64_t end = (a->buf_off + 16 * slot + page2m - 1) / page2m * page2m;
	CHECK(s_end < a->buf_off);
	CHECK_EQ_U64(a->populated, 16);
	CHECK_EQ_U64(h.reg.populated_bytes, s_end + (end - a->buf_off));
	CHECK_EQ_U64(resident_pages(a->region, s_end), s_end / 4096);
	CHECK_EQ_U64(resident_pages(a->region + s_end, a->buf_off - s_end), 0);
	CHECK_EQ_U64(resident_pages(a->region + a->buf_off, end - a->buf_off),
		     (end - a->buf_off) / 4096);
	CHECK_EQ_U64(resident_pages(a->region + end, a->region_size - end), 0);

	h.peer_listen_port = 1;
	connect_unanswered(&h, &c, 0, 17);
	uint64_t s_end2 = (a->small_off + 34 * small + page2m - 1) / page2m * page2m;
	uint64_t end2 = (a->buf_off + 34 * slot + page2m - 1) / page2m * page2m;
	CHECK_EQ_U64(ss_app_populate(&h.reg), (s_end2 - s_end) + (end2 - end));
	CHECK_EQ_U64(a->populated, 34);
	CHECK_EQ_U64(resident_pages(a->region + s_end2, a->buf_off - s_end2), 0);
	CHECK_EQ_U64(resident_pages(a->region + end2, a->region_size - end2), 0);
	CHECK_EQ_U64(resident_pages(a->region + a->buf_off, end2 - a->buf_off),
		     (end2 - a->buf_off) / 4096);
	cl_close(&c);
	sh_fini(&h);
}

/*
 * Ring origins (shm/abi.h): one request at a time, each read and answered
 * before the next, on a slot whose home byte is not 0.  Every request
 * lands at the receive ring's home byte (the service saw everything
 * consumed), every reply is written at the transmit ring's (SS_CMDF_TX_HOME:
 * the last one was acknowledged), and the peer gets every byte, in order.
 * A TX_HOME while bytes are unacknowledged is EINVAL and takes nothing.
 */
static void test_rpc_ring_origin(void)
{
	struct sh h;
	struct app_conn ac = { 0 };
	CHECK(sh_init(&h, ATTACH) == 0);
	echo_merged = true;
	test_listen(&h, 7);
	struct app_conn first = { 0 }; /* slot 0, whose home is byte 0 */
	CHECK(peer_connected(&h, 40006, &first) != NULL);
	struct sh_peer_conn *p = peer_connected(&h, 40007, &ac);
	uint32_t rx_home = ss_shm_ring_home(ac.slot, h.app->rxbuf_size);
	uint32_t tx_home = ss_shm_ring_home(ac.slot, h.app->txbuf_size);
	CHECK(rx_home != 0 && tx_home != 0);
	uint64_t sent = 0, got = 0;
	bool bad = false;
	const unsigned reqs = 200;
	for (unsigned r = 0; r < reqs; r++) {
		uint32_t n = 64 + r % 7; /* never a divisor of the ring */
		CHECK(sh_peer_write(p, sent, n, 3) == 0);
		sent += n;
		ss_tcp_output(&p->c, h.now_us);
		echo_turn(&h, p, &ac, 3, &got, &bad);
		h.now_us += 1000;
	}
	CHECK_EQ_U64(got, sent);
	CHECK(!bad);
	CHECK_EQ_U64(ac.echoed, sent);
	CHECK_EQ_U64(ac.rx_at_home, reqs);
	CHECK_EQ_U64(ac.tx_at_home, reqs); /* the first too: the handshake left byte 0 */
	uint32_t last = 64 + (reqs - 1) % 7;
	CHECK_EQ_U64(ac.rx_origin, (uint32_t)(sent - last - rx_home));
	/* The last request and its reply sit at the home bytes. */
	for (uint32_t i = 0; i < last; i++) {
		CHECK(ac.rx[(rx_home + i) & (h.app->rxbuf_size - 1)] == sh_pat(sent - last + i, 3));
		CHECK(ac.tx[(tx_home + i) & (h.app->txbuf_size - 1)] == sh_pat(sent - last + i, 3));
	}
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 0);

	/* With the reply not acknowledged yet, a TX at the home byte is
	 * refused. */
	CHECK(sh_peer_write(p, sent, 64, 3) == 0);
	sent += 64;
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	uint32_t tail = h.app->slot_conn[ac.slot]->tcp.f.tx_tail + 64;
	app_poll(&h, &ac, true); /* the reply's TX, then one more in the same batch */
	CHECK_EQ_U64(ac.tx_unacked, 64);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = SS_CMDF_TX_HOME,
					 .conn = ac.slot, .gen = ac.gen, .arg = 10 });
	sh_pump(&h, 1);
	expect_cmd_error(&h, EINVAL, SS_CMD_TX);
	CHECK_EQ_U64(h.app->slot_conn[ac.slot]->tcp.f.tx_tail, tail);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 1);
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	sh_peer_read_check(p, &got, 3, &bad);
	CHECK_EQ_U64(got, sent);
	CHECK(!bad);
	sh_fini(&h);
	echo_merged = false;
}

/* The app has the peer's bytes [@from, @from + @n) of seed @seed unread,
 * and consumes them (reported with RX_DONE, @flags on it). */
static bool app_consume(struct sh *h, struct app_conn *ac, uint64_t from, uint32_t n,
			unsigned seed, uint8_t flags)
{
	bool ok = ac->rx_avail >= n;
	for (uint32_t i = 0; ok && i < n; i++)
		ok = ac->rx[(ac->rx_head - ac->rx_origin + i) & (ac->rx_size - 1)] ==
		     sh_pat(from + i, seed);
	ac->rx_head += n;
	ac->rx_avail -= n;
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_RX_DONE, .flags = flags, .conn = ac->slot,
					.gen = ac->gen, .arg = n });
	return ok;
}

/* The app writes @n bytes of seed @seed from stream offset @from at its
 * transmit ring's origin and posts the TX with @flags. */
static void app_write(struct sh *h, struct app_conn *ac, uint64_t from, uint32_t n,
		      unsigned seed, uint8_t flags)
{
	for (uint32_t i = 0; i < n; i++)
		ac->tx[(ac->tx_tail - ac->tx_origin + i) & (ac->tx_size - 1)] = sh_pat(from + i, seed);
	ac->tx_tail += n;
	ac->tx_unacked += n;
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = flags, .conn = ac->slot,
					.gen = ac->gen, .arg = n });
}

/*
 * Small rings that grow (shm/abi.h), the service's side.  A connection
 * starts on its slot's small rings, with the window scale for the large
 * receive ring.  SS_CMDF_RX_GROW moves the receive ring only with nothing
 * unread (else nothing happens, no event, and a later RX_DONE asks
 * again), SS_EV_RX_GROWN comes before the data in the large ring, which
 * starts at its home byte, and the peer learns the larger window at
 * once.  SS_CMDF_TX_GROW with bytes unacknowledged, or a second time, is
 * EINVAL and takes nothing; after all was acknowledged it moves the
 * transmit ring to the large one, from its home byte.  Every byte
 * arrives, in order.
 */
static void test_rings_grow(void)
{
	struct sh h;
	struct ss_shm_ev ev = { 0 };
	CHECK(sh_init(&h, "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536") == 0);
	test_listen(&h, 7);
	struct app_conn first = { 0 }, ac = { 0 }; /* slot 1: home bytes not 0 */
	CHECK(peer_connected(&h, 40020, &first) != NULL);
	struct sh_peer_conn *p = peer_connected(&h, 40021, &ac);
	struct ss_sconn *sc = h.app->slot_conn[ac.slot];
	struct ss_app *a = h.app;
	CHECK(ac.rx == ss_app_rx_small(a, ac.slot) && ac.tx == ss_app_tx_small(a, ac.slot));
	CHECK_EQ_U64(ac.rx_size, SS_SHM_SMALL_RING);
	CHECK_EQ_U64(ac.tx_size, SS_SHM_SMALL_RING);
	CHECK(sc->tcp.rx.base == ac.rx && sc->tcp.tx.base == ac.tx);
	CHECK_EQ_U64(sc->tcp.f.rcv_wscale, 1); /* for 64 KiB */
	CHECK_EQ_U64(p->c.f.snd_wscale, 1);
	CHECK_EQ_U64(p->c.f.snd_wnd, SS_SHM_SMALL_RING);

	/* 3000 unread: asked for, refused without a word. */
	CHECK(sh_peer_write(p, 0, 3000, 5) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.rx_avail, 3000);
	CHECK(ac.rx_grow);
	CHECK(app_consume(&h, &ac, 0, 1000, 5, SS_CMDF_RX_GROW));
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.rx_grown, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_rx_grown), 0);
	CHECK(sc->tcp.rx.base == ss_app_rx_small(a, ac.slot));
	/* All read: it moves, and the peer may send 64 KiB. */
	CHECK(app_consume(&h, &ac, 1000, 2000, 5, SS_CMDF_RX_GROW));
	sh_pump(&h, 8);
	CHECK(sh_event(&h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_RX_GROWN);
	CHECK_EQ_U64(ev.conn, ac.slot);
	CHECK_EQ_U64(ev.gen, ac.gen);
	app_on_event(&h, &ac, &ev);
	CHECK(!sh_event(&h, &ev));
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_rx_grown), 1);
	CHECK(sc->tcp.rx.base == ss_app_rx_ring(a, ac.slot) && sc->tcp.rx.size == 65536);
	CHECK_EQ_U64(p->c.f.snd_wnd, 65536);
	CHECK(sh_peer_write(p, 3000, 40000, 5) == 0);
	ss_tcp_output(&p->c, h.now_us);
	uint64_t at_home = ac.rx_at_home;
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.rx_at_home, at_home + 1); /* the first RX: the large ring's home */
	CHECK_EQ_U64(ac.rx_avail, 40000);
	CHECK(app_consume(&h, &ac, 3000, 40000, 5, SS_CMDF_RX_GROW)); /* large already */
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_rx_grown), 1);
	CHECK_EQ_U64(ac.rx_grown, 1);

	/* Transmit: 4096 bytes, and a move asked for before they are
	 * acknowledged. */
	uint32_t tail = sc->tcp.f.tx_tail;
	app_write(&h, &ac, 0, 4096, 6, 0);
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = SS_CMDF_TX_GROW,
					 .conn = ac.slot, .gen = ac.gen, .arg = 10 });
	sh_pump(&h, 8);
	expect_cmd_error(&h, EINVAL, SS_CMD_TX);
	CHECK_EQ_U64(sc->tcp.f.tx_tail, tail + 4096);
	CHECK(sc->tcp.tx.base == ss_app_tx_small(a, ac.slot));
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ac.tx_unacked, 0);
	/* All acknowledged: 20000 bytes from the large ring's home byte. */
	ac.tx = ss_app_tx_ring(a, ac.slot);
	ac.tx_size = 65536;
	ac.tx_origin = ac.tx_tail - ss_shm_ring_home(ac.slot, 65536);
	app_write(&h, &ac, 4096, 20000, 6, SS_CMDF_TX_GROW);
	sh_pump(&h, 8);
	app_poll(&h, &ac, false);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_tx_grown), 1);
	CHECK(sc->tcp.tx.base == ss_app_tx_ring(a, ac.slot) && sc->tcp.tx.size == 65536);
	CHECK_EQ_U64(ss_tcp_ring_off(&sc->tcp.tx, tail + 4096), ss_shm_ring_home(ac.slot, 65536));
	CHECK_EQ_U64(ac.tx_unacked, 0);
	uint64_t got = 0;
	bool bad = false;
	sh_peer_read_check(p, &got, 6, &bad);
	CHECK_EQ_U64(got, 24096);
	CHECK(!bad);
	/* Large already: EINVAL again. */
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .flags = SS_CMDF_TX_GROW,
					 .conn = ac.slot, .gen = ac.gen, .arg = 1 });
	sh_pump(&h, 8);
	expect_cmd_error(&h, EINVAL, SS_CMD_TX);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_tx_grown), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 2);
	sh_fini(&h);
}

int main(void)
{
	conn_tests();
	test_listen_no_ack();
	test_syn_sent_app_close();
	test_local_ports();
	test_tw_reuse();
	test_connect_arp();
	test_event_ring_full();
	test_hostile_commands();
	test_rpc_ring_origin();
	test_rings_grow();
	test_random_commands(ATTACH);
	test_random_commands("attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536");
	test_tx_csum_offload_frames();
	test_sleep_doorbell_latch();
	test_rx_ahead();
	test_region_huge();
	test_region_populated();
	test_region_populated_small();
	/* Again, the stack leaving every TCP checksum to the "port"
	 * (sh_deliver() completes them as a NIC would; the peer checks). */
	uint64_t marked = sh_csum_offload_total;
	sh_tx_offload = SS_TX_CSUM;
	conn_tests();
	CHECK(sh_csum_offload_total > marked + 100);
	/* And with TSO: segments of up to 5 MSS (and a few bytes, which the
	 * stack rounds down) cut by the "port" (sh_frame_send_tso()). */
	CHECK_EQ_U64(sh_tso_total, 0);
	sh_tso_max = 5 * 1448 + 100;
	conn_tests();
	sh_tso_max = 0;
	sh_tx_offload = 0;
	CHECK(sh_tso_total > 100);
	CHECK_EQ_U64(sh_tso_bad, 0);
	return check_done("test_stack");
}
