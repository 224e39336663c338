/* test_stack_loop.c - the loopback path: two applications on one stack connect over its own address; a full loopback queue drops and TCP recovers. */
#include "check.h"
#include "stack_client.h"

#include <errno.h>

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536 small=0"
#define RING 65536u
#define PORT 7000

static uint64_t ctr(struct sh *h, enum ss_counter_id id)
{
	return ss_ctr_read(&h->ctr, id);
}

/* ---- one end of a connection, as an application drives it ---- */

struct ep {
	struct cl *cl;
	bool open, connected, peer_fin, reset, closed;
	uint16_t error;
	struct ss_shm_ev ev_open;     /* CONNECTED / ACCEPTED */
	uint32_t slot, gen;
	uint8_t *rx, *tx;
	uint32_t rx_head, rx_avail, tx_tail, tx_unacked;
	uint32_t rx_origin; /* shm/abi.h: where the service put the receive origin */
	uint64_t to_send, sent, got;  /* stream bytes */
	unsigned seed_tx, seed_rx;    /* sh_pat() streams each way */
	uint64_t hash_tx, hash_rx;    /* FNV-1a over what was written / read */
	bool bad;                     /* a byte read differs from the pattern */
};

#define FNV_INIT 0xcbf29ce484222325ull

static uint64_t fnv(uint64_t hsh, uint8_t b)
{
	return (hsh ^ b) * 0x100000001b3ull;
}

/* The FNV-1a hash of @n bytes of stream @seed. */
static uint64_t stream_hash(uint64_t n, unsigned seed)
{
	uint64_t hsh = FNV_INIT;
	for (uint64_t i = 0; i < n; i++)
		hsh = fnv(hsh, sh_pat(i, seed));
	return hsh;
}

static void ep_init(struct ep *e, struct cl *c, uint64_t to_send, unsigned seed_tx,
		    unsigned seed_rx)
{
	memset(e, 0, sizeof(*e));
	e->cl = c;
	e->to_send = to_send;
	e->seed_tx = seed_tx;
	e->seed_rx = seed_rx;
	e->hash_tx = e->hash_rx = FNV_INIT;
}

/* Events of app @c to its ends @eps (CONNECTED by cookie = index + 1,
 * ACCEPTED to the first end not open yet, the rest by handle). */
static void cl_poll(struct cl *c, struct ep *eps, unsigned n)
{
	struct ss_shm_ev ev;
	while (cl_ev(c, &ev)) {
		struct ep *e = NULL;
		if (ev.type == SS_EV_CONNECTED && ev.cookie >= 1 && ev.cookie <= n) {
			e = &eps[ev.cookie - 1];
		} else if (ev.type == SS_EV_ACCEPTED) {
			for (unsigned i = 0; i < n && !e; i++)
				if (!eps[i].open)
					e = &eps[i];
		} else {
			for (unsigned i = 0; i < n && !e; i++)
				if (eps[i].open && !eps[i].closed && eps[i].slot == ev.conn &&
				    eps[i].gen == ev.gen)
					e = &eps[i];
		}
		if (!e) {
			fprintf(stderr, "    app %u: unexpected event %u (conn %u error %u)\n",
				c->a->id, ev.type, ev.conn, ev.error);
			CHECK(e != NULL);
			continue;
		}
		switch (ev.type) {
		case SS_EV_CONNECTED:
		case SS_EV_ACCEPTED:
			e->open = true;
			e->ev_open = ev;
			e->error = ev.error;
			e->connected = ev.error == 0;
			e->slot = ev.conn;
			e->gen = ev.gen;
			e->rx = c->a->region + ev.rx_off;
			e->tx = c->a->region + ev.tx_off;
			if (ev.error)
				e->closed = true; /* a failed connect has no handle */
			break;
		case SS_EV_RX: {
			uint32_t tail = e->rx_head + e->rx_avail;
			if (((tail - e->rx_origin) & (RING - 1)) != ev.arg3) {
				CHECK_EQ_U64(e->rx_avail, 0); /* only when all was consumed */
				e->rx_origin = tail - ev.arg3;
			}
			e->rx_avail += ev.arg;
			break;
		}
		case SS_EV_TX_ACKED:
			e->tx_unacked -= ev.arg;
			break;
		case SS_EV_PEER_FIN:
			e->peer_fin = true;
			break;
		case SS_EV_RESET:
		case SS_EV_ERROR:
			e->reset = true;
			e->error = ev.error;
			break;
		case SS_EV_CLOSED:
			e->closed = true;
			break;
		default:
			break;
		}
	}
}

/* Writes up to @chunk more bytes of its stream, as far as the ring has room. */
static void ep_write(struct ep *e, uint32_t chunk)
{
	uint32_t space = RING - e->tx_unacked;
	uint64_t left = e->to_send - e->sent;
	uint32_t n = (uint32_t)(left < space ? left : space);
	if (n > chunk)
		n = chunk;
	if (!e->connected || n == 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t b = sh_pat(e->sent + i, e->seed_tx);
		e->tx[(e->tx_tail + i) & (RING - 1)] = b;
		e->hash_tx = fnv(e->hash_tx, b);
	}
	e->tx_tail += n;
	e->tx_unacked += n;
	e->sent += n;
	CMD(e->cl, .op = SS_CMD_TX, .conn = e->slot, .gen = e->gen, .arg = n);
}

/* Reads everything that arrived, checking it byte by byte. */
static void ep_read(struct ep *e)
{
	uint32_t n = e->rx_avail;
	if (!e->connected || n == 0)
		return;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t b = e->rx[(e->rx_head - e->rx_origin + i) & (RING - 1)];
		if (b != sh_pat(e->got + i, e->seed_rx))
			e->bad = true;
		e->hash_rx = fnv(e->hash_rx, b);
	}
	e->rx_head += n;
	e->rx_avail = 0;
	e->got += n;
	CMD(e->cl, .op = SS_CMD_RX_DONE, .conn = e->slot, .gen = e->gen, .arg = n);
}

static bool loop_empty(const struct sh *h)
{
	return h->st.loop.head == h->st.loop.tail;
}

/*
 * Moves both streams of @a <-> @b until each end has read @a->to_send /
 * @b->to_send and all of its own is acknowledged (bounded: @iters rounds
 * of virtual time, 100 us each).
 */
static void exchange(struct sh *h, struct ep *a, struct ep *b, uint32_t chunk, int iters)
{
	for (int it = 0; it < iters; it++) {
		if (a->got == b->to_send && b->got == a->to_send && !a->tx_unacked && !b->tx_unacked)
			break;
		ep_write(a, chunk);
		ep_write(b, chunk);
		sh_pump(h, 8);
		cl_poll(a->cl, a, 1);
		cl_poll(b->cl, b, 1);
		ep_read(a);
		ep_read(b);
		h->now_us += 100;
	}
}

/* ---- tests ---- */

/*
 * App S listens, app C connects to the stack's own address: the handshake,
 * 300 kB C -> S and 200 kB S -> C at the same time, C closes first, S
 * second, C's TIME_WAIT expires.  Nothing reaches the NIC; every segment
 * goes round the loopback queue once.
 */
static void test_loop_two_apps(void)
{
	struct sh h;
	struct cl S, C;
	struct ep es, ec;
	struct ss_shm_ev ev;
	const uint64_t c2s = 300000, s2c = 200000;

	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &S);
	CHECK(cl_attach(&h, &C, ATTACH, NULL, 0) == 1);
	ep_init(&es, &S, s2c, 2, 1);
	ep_init(&ec, &C, c2s, 1, 2);

	CMD(&S, .op = SS_CMD_LISTEN, .port = PORT, .arg = 16, .cookie = 77);
	sh_pump(&h, 4);
	CHECK(cl_ev(&S, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);

	CMD(&C, .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = PORT, .cookie = 1);
	sh_pump(&h, 16);
	cl_poll(&C, &ec, 1);
	cl_poll(&S, &es, 1);
	CHECK(ec.connected);
	CHECK(es.connected);
	CHECK_EQ_U64(ec.ev_open.type, SS_EV_CONNECTED);
	CHECK_EQ_U64(es.ev_open.type, SS_EV_ACCEPTED);
	CHECK_EQ_U64(es.ev_open.cookie, 77);
	/* Both ends on our own address, each the other's mirror image. */
	CHECK_EQ_U64(ec.ev_open.local_ip, SH_SVC_IP);
	CHECK_EQ_U64(ec.ev_open.remote_ip, SH_SVC_IP);
	CHECK_EQ_U64(es.ev_open.local_ip, SH_SVC_IP);
	CHECK_EQ_U64(es.ev_open.remote_ip, SH_SVC_IP);
	CHECK_EQ_U64(ec.ev_open.remote_port, PORT);
	CHECK_EQ_U64(es.ev_open.local_port, PORT);
	CHECK_EQ_U64(es.ev_open.remote_port, ec.ev_open.local_port);
	CHECK(ec.ev_open.local_port >= 32768 && ec.ev_open.local_port <= 60999);
	CHECK_EQ_U64(h.st.n_flows, 2);
	CHECK_EQ_U64(h.frames_from_stack, 0); /* no SYN, no ARP on the wire */

	/* Both ways at once, in pieces of 5000 bytes (not a multiple of the MSS). */
	exchange(&h, &ec, &es, 5000, 20000);
	CHECK_EQ_U64(es.got, c2s);
	CHECK_EQ_U64(ec.got, s2c);
	CHECK(!es.bad && !ec.bad);
	CHECK_EQ_U64(es.hash_rx, ec.hash_tx);
	CHECK_EQ_U64(ec.hash_rx, es.hash_tx);
	CHECK_EQ_U64(es.hash_rx, stream_hash(c2s, 1));
	CHECK_EQ_U64(ec.hash_rx, stream_hash(s2c, 2));
	CHECK_EQ_U64(ec.tx_unacked, 0);
	CHECK_EQ_U64(es.tx_unacked, 0);

	/* C closes first, then S: C's end waits in TIME_WAIT. */
	CMD(&C, .op = SS_CMD_CLOSE, .conn = ec.slot, .gen = ec.gen);
	sh_pump(&h, 16);
	cl_poll(&S, &es, 1);
	cl_poll(&C, &ec, 1);
	CHECK(es.peer_fin);
	CHECK(!es.closed);
	CMD(&S, .op = SS_CMD_CLOSE, .conn = es.slot, .gen = es.gen);
	sh_pump(&h, 16);
	cl_poll(&S, &es, 1);
	cl_poll(&C, &ec, 1);
	CHECK(es.closed && ec.closed);
	CHECK(!es.reset && !ec.reset);
	CHECK_EQ_U64(S.a->n_conns, 0);
	CHECK_EQ_U64(C.a->n_conns, 0);
	CHECK_EQ_U64(h.st.n_flows, 1); /* C's TIME_WAIT */
	sh_advance(&h, h.params.time_wait_us + 1000000, 100000);
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK(loop_empty(&h));

	/* The books: every segment looped once, nothing reached the NIC. */
	uint64_t segs = ctr(&h, SS_CTR_tx_tcp_segments);
	CHECK(segs > (c2s + s2c) / 1448);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_loopback), segs);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_loopback), segs);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_tcp), segs);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_tcp_fast) + ctr(&h, SS_CTR_rx_tcp_slow) +
			     ctr(&h, SS_CTR_rx_tcp_syn), segs);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_loopback_full), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_payload_bytes), c2s + s2c);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_packets), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_bytes), 0);
	CHECK_EQ_U64(h.frames_from_stack, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_arp_request), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_tcp_syn), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_active_open), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_passive_open), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_conn_created), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_conn_closed), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_conn_freed), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rto_fired), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rst_sent), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_rcvd), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_rst), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_ipv4_bad_src), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_bad_checksum), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_app_event_ring_full), 0);

	cl_close(&C);
	sh_fini(&h);
}

/*
 * One app talks to itself: it listens and connects to its own listener
 * over the stack's address, echoing in one direction; then 127.0.0.1 is
 * still refused (the kernel's) and a closed port answers with RST, which
 * goes round the queue too: ECONNREFUSED.
 */
static void test_loop_self_and_refused(void)
{
	struct sh h;
	struct cl A;
	struct ep e[2];
	struct ss_shm_ev ev;

	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &A);
	ep_init(&e[0], &A, 70000, 5, 6); /* the client end (cookie 1) */
	ep_init(&e[1], &A, 70000, 6, 5); /* the accepted end */
	CMD(&A, .op = SS_CMD_LISTEN, .port = PORT, .arg = 4, .cookie = 500);
	sh_pump(&h, 4);
	CHECK(cl_ev(&A, &ev) && ev.type == SS_EV_LISTEN && ev.error == 0);
	CMD(&A, .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = PORT, .cookie = 1);
	sh_pump(&h, 16);
	cl_poll(&A, e, 2);
	CHECK(e[0].connected && e[1].connected);
	for (int it = 0; it < 5000; it++) {
		if (e[0].got == 70000 && e[1].got == 70000)
			break;
		ep_write(&e[0], 9000);
		ep_write(&e[1], 9000);
		sh_pump(&h, 8);
		cl_poll(&A, e, 2);
		ep_read(&e[0]);
		ep_read(&e[1]);
		h.now_us += 100;
	}
	CHECK_EQ_U64(e[0].got, 70000);
	CHECK_EQ_U64(e[1].got, 70000);
	CHECK(!e[0].bad && !e[1].bad);
	CHECK_EQ_U64(e[1].hash_rx, e[0].hash_tx);
	CHECK_EQ_U64(e[0].hash_rx, e[1].hash_tx);
	CMD(&A, .op = SS_CMD_ABORT, .conn = e[1].slot, .gen = e[1].gen);
	sh_pump(&h, 16);
	cl_poll(&A, e, 2);
	CHECK(e[1].closed);
	CHECK(e[0].reset);
	CHECK_EQ_U64(e[0].error, ECONNRESET);
	CMD(&A, .op = SS_CMD_CLOSE, .conn = e[0].slot, .gen = e[0].gen);
	sh_pump(&h, 4);
	cl_poll(&A, e, 2);
	CHECK(e[0].closed);
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rst_sent), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_rcvd), 1);
	/* The client end's last window update (its RX_DONE came in the
	 * ABORT's round) crossed the RST: it met no flow and got a RST from
	 * the receive path, which met none either and was not answered. */
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_rst), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_loopback), ctr(&h, SS_CTR_rx_loopback));
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_loopback), ctr(&h, SS_CTR_tx_tcp_segments) +
							  ctr(&h, SS_CTR_tx_tcp_rst));

	/* 127.0.0.1 stays the kernel's: EINVAL, as before. */
	CMD(&A, .op = SS_CMD_CONNECT, .ip = 0x7f000001u, .port = PORT, .cookie = 2);
	sh_pump(&h, 4);
	CHECK(cl_ev(&A, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_CMD_ERROR);
	CHECK_EQ_U64(ev.error, EINVAL);

	/* A closed port on our own address: the SYN loops, the receive path
	 * answers with RST (in place), the RST loops back: ECONNREFUSED. */
	uint64_t tx0 = ctr(&h, SS_CTR_tx_loopback), rx0 = ctr(&h, SS_CTR_rx_loopback);
	uint64_t nf0 = ctr(&h, SS_CTR_drop_tcp_no_flow), rst0 = ctr(&h, SS_CTR_tx_tcp_rst);
	struct ep r;
	ep_init(&r, &A, 0, 0, 0);
	CMD(&A, .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = PORT + 1, .cookie = 1);
	sh_pump(&h, 8);
	cl_poll(&A, &r, 1);
	CHECK(r.open && !r.connected);
	CHECK_EQ_U64(r.error, ECONNREFUSED);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_loopback) - tx0, 2); /* SYN, RST */
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_loopback) - rx0, 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_tcp_no_flow) - nf0, 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_rst) - rst0, 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_rcvd), 2);
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK(loop_empty(&h));
	CHECK_EQ_U64(ctr(&h, SS_CTR_drop_loopback_full), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_packets), 0);
	CHECK_EQ_U64(h.frames_from_stack, 0);
	sh_fini(&h);
}

/* The loopback counters since @base (tx_loopback, rx_loopback, drop_loopback_full). */
struct loopc {
	uint64_t tx, rx, full;
};

static struct loopc loopc_now(struct sh *h)
{
	return (struct loopc){ ctr(h, SS_CTR_tx_loopback), ctr(h, SS_CTR_rx_loopback),
			       ctr(h, SS_CTR_drop_loopback_full) };
}

#define CHECK_LOOPC(h, base, dtx, drx, dfull)                                   \
	do {                                                                    \
		struct loopc now_ = loopc_now(h);                               \
		CHECK_EQ_U64(now_.tx - (base).tx, (dtx));                       \
		CHECK_EQ_U64(now_.rx - (base).rx, (drx));                       \
		CHECK_EQ_U64(now_.full - (base).full, (dfull));                 \
	} while (0)

/* S listens on PORT, C connects over the stack's address; both open. */
static void loop_connect(struct sh *h, struct cl *S, struct cl *C, struct ep *es, struct ep *ec)
{
	struct ss_shm_ev ev;
	cl_harness(h, S);
	CHECK(cl_attach(h, C, ATTACH, NULL, 0) == 1);
	CMD(S, .op = SS_CMD_LISTEN, .port = PORT, .arg = 16, .cookie = 77);
	sh_pump(h, 4);
	CHECK(cl_ev(S, &ev) && ev.type == SS_EV_LISTEN && ev.error == 0);
	CMD(C, .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = PORT, .cookie = 1);
	sh_pump(h, 16);
	cl_poll(C, ec, 1);
	cl_poll(S, es, 1);
	CHECK(ec->connected && es->connected);
}

/*
 * A burst larger than the loopback queue (4 slots): what does not fit is
 * dropped and counted; the engine keeps the data and the connection tries
 * again in the next pass, so nothing waits for a retransmission timer.
 * One round, exactly: the app's TX lets C send 20 segments (its window);
 * the flush queues 4, the 5th finds the queue full (drop 1).  Each of the
 * round's 4 passes then feeds 4 frames to the receive path, S answers with
 * one ACK and C fills the other 3 slots and hits the full queue once more:
 * 4 + 4 x (1 + 3) = 20 frames queued, 16 received, 5 drops, 4 frames left
 * waiting, so the round reports work and the thread must not sleep.
 */
static void test_loop_queue_full(void)
{
	struct sh h;
	struct cl S, C;
	struct ep es, ec;
	const uint32_t seg = 1448; /* MSS less the timestamp option */

	sh_loop_slots = 4;
	CHECK(sh_init(&h, ATTACH) == 0);
	sh_loop_slots = 0;
	CHECK_EQ_U64(h.st.loop.slots, 4);
	ep_init(&es, &S, 200000, 2, 1);
	ep_init(&ec, &C, 20 * seg, 1, 2);
	loop_connect(&h, &S, &C, &es, &ec);
	CHECK_LOOPC(&h, ((struct loopc){ 0, 0, 0 }), 3, 3, 0); /* SYN, SYN-ACK, ACK */

	struct loopc base = loopc_now(&h);
	ep_write(&ec, 20 * seg);
	CHECK(ss_stack_round(&h.st, h.now_us));
	CHECK_LOOPC(&h, base, 20, 16, 5);
	CHECK_EQ_U64(h.st.loop.tail - h.st.loop.head, 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_payload_bytes), 16 * seg);
	/* Frames wait: no sleeping (fastpath.c asks both). */
	CHECK(!ss_stack_may_sleep(&h.st));
	CHECK_EQ_U64(ss_stack_next_deadline(&h.st), 0);
	CHECK(ss_stack_round(&h.st, h.now_us)); /* the next round picks them up */

	sh_pump(&h, 16);
	CHECK(loop_empty(&h));
	cl_poll(&S, &es, 1);
	cl_poll(&C, &ec, 1);
	ep_read(&es);
	CHECK_EQ_U64(es.got, 20 * seg);
	CHECK(!es.bad);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_payload_bytes), 20 * seg);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rto_fired), 0);

	/* 200 kB each way through the 4 slots: many drops, no byte lost, no
	 * byte sent twice, every frame queued is received. */
	ec.to_send = 20 * seg + 200000;
	exchange(&h, &ec, &es, 30000, 20000);
	CHECK_EQ_U64(es.got, ec.to_send);
	CHECK_EQ_U64(ec.got, es.to_send);
	CHECK(!es.bad && !ec.bad);
	CHECK_EQ_U64(es.hash_rx, stream_hash(ec.to_send, 1));
	CHECK_EQ_U64(ec.hash_rx, stream_hash(es.to_send, 2));
	CHECK(ctr(&h, SS_CTR_drop_loopback_full) > 100);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_payload_bytes), ec.to_send + es.to_send);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_loopback), ctr(&h, SS_CTR_tx_tcp_segments));
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_loopback), ctr(&h, SS_CTR_tx_loopback));
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 0);
	CHECK(loop_empty(&h));
	CHECK_EQ_U64(h.frames_from_stack, 0);
	cl_close(&C);
	sh_fini(&h);
}

/*
 * Handshake segments dropped by a full queue (2 slots) come back by
 * retransmission.  Three CONNECTs in one round: SYN1 and SYN2 fill the
 * queue, SYN3 is dropped.  Feeding SYN1 back opens S1, whose SYN-ACK
 * finds SYN1 and SYN2 still queued: dropped.  SYN2's SYN-ACK fits, C2
 * answers with its ACK: C2 and S2 are open (4 frames, 2 drops, no timer).
 * At 1 s the timers of C1, C3 (SYN) and S1 (SYN-ACK) fire: 3
 * retransmissions, 4 frames and 2 more drops later C1 is open; at 2 s S3
 * sends its SYN-ACK again and C3 opens: 10 frames, 4 drops, 4
 * retransmissions in all, and nothing moves after that.
 */
static void test_loop_syn_full(void)
{
	struct sh h;
	struct cl S, C;
	struct ep es[3], ec[3];
	struct ss_shm_ev ev;
	const struct loopc zero = { 0, 0, 0 };

	sh_loop_slots = 2;
	CHECK(sh_init(&h, ATTACH) == 0);
	sh_loop_slots = 0;
	cl_harness(&h, &S);
	CHECK(cl_attach(&h, &C, ATTACH, NULL, 0) == 1);
	for (int i = 0; i < 3; i++) {
		ep_init(&es[i], &S, 0, 0, 0);
		ep_init(&ec[i], &C, 0, 0, 0);
	}
	CMD(&S, .op = SS_CMD_LISTEN, .port = PORT, .arg = 16, .cookie = 77);
	sh_pump(&h, 4);
	CHECK(cl_ev(&S, &ev) && ev.type == SS_EV_LISTEN);
	for (int i = 0; i < 3; i++)
		CMD(&C, .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = PORT, .cookie = (uint64_t)i + 1);
	sh_pump(&h, 16);
	cl_poll(&C, ec, 3);
	cl_poll(&S, es, 3);
	CHECK_LOOPC(&h, zero, 4, 4, 2);
	CHECK(!ec[0].connected && ec[1].connected && !ec[2].connected);
	CHECK(es[0].connected && !es[1].connected); /* S2, accepted first */
	CHECK_EQ_U64(h.st.n_flows, 5);              /* C1-3, S1, S2 */
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 0);

	sh_advance(&h, 1010000, 10000);
	cl_poll(&C, ec, 3);
	cl_poll(&S, es, 3);
	CHECK_LOOPC(&h, zero, 8, 8, 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 3);
	CHECK(ec[0].connected && !ec[2].connected);
	CHECK(es[1].connected);

	sh_advance(&h, 1000000, 10000);
	cl_poll(&C, ec, 3);
	cl_poll(&S, es, 3);
	CHECK_LOOPC(&h, zero, 10, 10, 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_retrans_segs), 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rto_fired), 4);
	for (int i = 0; i < 3; i++)
		CHECK(ec[i].connected && es[i].connected);
	CHECK_EQ_U64(h.st.n_flows, 6);

	sh_advance(&h, 3000000, 100000);
	CHECK_LOOPC(&h, zero, 10, 10, 4);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tx_tcp_segments), 10);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_passive_open), 3);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_active_open), 3);
	CHECK_EQ_U64(h.frames_from_stack, 0);
	cl_close(&C);
	sh_fini(&h);
}

int main(void)
{
	test_loop_two_apps();
	test_loop_self_and_refused();
	test_loop_queue_full();
	test_loop_syn_full();
	return check_done("test_stack_loop");
}
