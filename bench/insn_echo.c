/* insn_echo.c - 64-byte echo requests through the service's TCP stack in one process, for callgrind's instruction counts. */

/*
 * What runs (no DPDK, no threads, virtual time), as in tests/unit/stack/stack_harness.h:
 *
 *   peer TCP engines (one per connection, standing in for a Linux client)
 *     --frames--> ss_proto_input() [bursts of 32, as fastpath.c's poll_once]
 *                 ss_stack_round() after each burst
 *   an echo application on the raw shared memory (as ss-echo through
 *   libslipstream: events in, one TX and one RX_DONE command per request,
 *   one publish per batch)
 *     --commands--> ss_stack_round() until the command rings are empty
 *     --frames--> the peers (the response carries the request's ACK; the
 *                 peer's ACK of the response rides on its next request)
 *
 * The service's work is every call of insn_svc_ahead(), insn_svc_rx() and
 * insn_svc_round(), and only those: bench/insn_per_req.py runs this
 * program under `valgrind --tool=callgrind --collect-atstart=no
 * --toggle-collect=insn_svc_ahead --toggle-collect=insn_svc_rx
 * --toggle-collect=insn_svc_round`, and they are called only in the
 * measured passes (connection set-up and the warm-up passes go through
 * the unmeasured twins).  The peers, the application and the frame
 * transport are not counted, except the two frame callbacks the stack
 * calls (frame_alloc, frame_send: a few instructions each, standing in for
 * rte_pktmbuf_alloc() and the TX queue).
 *
 * Each pass: every connection sends one request; the service takes them
 * in bursts of 32 (a round after each), the application echoes, the
 * service rounds until the commands are taken, the peers take the
 * responses.  Virtual time moves --us-per-req per request the service
 * takes (10 us: ~100k requests/s), so RTTs, delayed ACKs, timers and the
 * congestion-control intervals come as often per request as at that rate.
 *
 * Then --idle-rounds empty rounds through insn_svc_idle() (what the fast
 * path spends per poll when nothing arrives: it polls --idle-polls times
 * before it sleeps).
 *
 * Output: one line "insn_echo conns=N requests=R idle_rounds=K ..." that
 * the script reads; exit status 1 if any response is missing or wrong.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stack/app.h"
#include "stack/arp_cache.h"
#include "service/config.h"
#include "stack/counters.h"
#include "stack/proto.h"
#include "service/registry.h"
#include "stack/stack.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/eth.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define SVC_IP 0xc6120001u  /* 198.18.0.1 */
#define PEER_IP 0xc6120002u /* 198.18.0.2 */
#define SVC_PORT 7
#define PEER_PORT0 20000
#define FRAME_CAP 2048
#define BURST 32 /* SS_FP_BURST */
#define REQ_LEN 64
#define PEER_RING 16384u
#define APP_BUF 16384u

static const uint8_t svc_mac[6] = { 0x02, 0, 0, 0, 0, 1 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 2 };

struct frame {
	uint8_t b[FRAME_CAP];
	uint32_t len;
	unsigned flags; /* SS_TX_*: checksums the port would complete */
};

/* Frames one way: a bounded array, filled then drained. */
struct wire {
	struct frame *f;
	unsigned n, cap;
};

struct peer {
	struct ss_tcp_conn c;
	uint8_t *rxbuf, *txbuf;
	uint64_t sent, got; /* request bytes written, response bytes checked */
	unsigned seed;
};

struct app_conn {
	uint32_t slot, gen;
	uint8_t *rx, *tx;
	uint32_t rx_head, rx_avail, tx_tail, tx_acked;
	uint32_t rx_origin, tx_origin; /* shm/abi.h: as the library keeps them */
	uint32_t rsize, tsize;         /* the small rings (shm/abi.h), where they are */
	bool used;
};

static struct {
	struct ss_config cfg;
	struct ss_counters ctr;
	struct ss_arp_cache arp;
	struct ss_app_reg reg;
	struct ss_stack st;
	struct ss_proto_ctx proto;
	struct ss_tcp_params peer_params;
	uint64_t now_us;
	unsigned us_per_req;
	unsigned base_rtt_us;
	uint64_t paced_rounds; /* rounds for responses the pacer held back */
	unsigned rx_flags;
	unsigned tx_offload; /* --csum-offload: SS_TX_CSUM */
	bool two_cmds;       /* --two-cmds: TX and RX_DONE apart */
	const char *cc_share; /* --cc-share host|flow (default: the service's) */

	struct wire to_svc, to_peer;
	struct peer *peers;
	unsigned n_peers;

	int sock[2];
	struct ss_app *app;
	uint32_t arx_cons, atx_prod;
	struct app_conn *ac; /* by slot */
	unsigned n_accepted;
	bool bad;
} B;

/* ---- the service's entry points: measured and unmeasured twins ---------- */

/* Kept out of line under their own names (callgrind toggles on them): no
 * inlining, cloning or merging of identical functions. */
#if defined(__clang__)
#define MEASURED __attribute__((noinline, used))
#else
#define MEASURED __attribute__((noipa, used))
#endif

/* The fast path hands each frame of a burst to ss_proto_input(); the NIC
 * gave no checksum verdict (AF_XDP) unless --rx-csum-good. */
MEASURED static size_t insn_svc_rx(uint8_t *frame, size_t len)
{
	return ss_proto_input(&B.proto, frame, len, FRAME_CAP, B.rx_flags);
}

/* fastpath.c's rx_ahead(): the burst's 4-tuples to the stack, which
 * prefetches their flow-table slots and looks their connections up ahead
 * (the headers' prefetch is the only part left out). */
static void svc_ahead(struct frame *f, unsigned k)
{
	struct ss_flow_key keys[BURST];
	unsigned nk = 0;

	for (unsigned j = 0; j < k; j++)
		if (ss_proto_peek_tcp(f[j].b, f[j].len, &keys[nk]))
			nk++;
	ss_stack_rx_prefetch(&B.st, keys, nk);
}

MEASURED static void insn_svc_ahead(struct frame *f, unsigned k)
{
	svc_ahead(f, k);
}

MEASURED static bool insn_svc_round(void)
{
	return ss_stack_round(&B.st, B.now_us);
}

MEASURED static bool insn_svc_idle(void)
{
	return ss_stack_round(&B.st, B.now_us);
}

static size_t svc_rx_setup(uint8_t *frame, size_t len)
{
	return ss_proto_input(&B.proto, frame, len, FRAME_CAP, B.rx_flags);
}

static bool svc_round_setup(void)
{
	return ss_stack_round(&B.st, B.now_us);
}

/* ---- frames out of the stack (counted: the stack calls them) -------------- */

static uint8_t *frame_alloc(void *arg, void **handle, size_t *cap)
{
	struct wire *w = arg;
	if (w->n == w->cap)
		return NULL;
	struct frame *f = &w->f[w->n++];
	*handle = f;
	*cap = FRAME_CAP;
	return f->b;
}

static void frame_send(void *arg, void *handle, size_t len, unsigned flags)
{
	struct wire *w = arg;
	struct frame *f = handle;
	if (len == 0) {
		w->n--; /* only the last one is ever given back */
		return;
	}
	f->len = (uint32_t)len;
	f->flags = flags;
}

/* ---- the peers (not counted) -------------------------------------------- */

/* Peer engine emit: a whole frame onto the wire to the service. */
static int peer_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	(void)arg;
	if (B.to_svc.n == B.to_svc.cap)
		return -1;
	struct frame *f = &B.to_svc.f[B.to_svc.n];
	uint8_t pay[FRAME_CAP];
	struct ss_tcp t = seg->hdr;
	if (seg->len > sizeof(pay))
		return -1;
	ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, pay, seg->len);
	t.payload = pay;
	t.payload_len = seg->len;
	size_t n = ss_tcp_build(f->b + 34, FRAME_CAP - 34, &t, PEER_IP, SVC_IP);
	if (n == 0)
		return -1;
	struct ss_ipv4 ip = { .total_len = (uint16_t)(20 + n), .ttl = 64, .proto = SS_IPPROTO_TCP,
			      .frag = 0x4000, .src = PEER_IP, .dst = SVC_IP };
	ss_ipv4_build(f->b + 14, 20, &ip);
	struct ss_eth eth = { .ethertype = SS_ETHERTYPE_IPV4 };
	memcpy(eth.dst, svc_mac, 6);
	memcpy(eth.src, peer_mac, 6);
	ss_eth_build(f->b, 14, &eth);
	f->len = (uint32_t)(34 + n);
	B.to_svc.n++;
	return 0;
}

static uint8_t pat(uint64_t i, unsigned seed)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

/* The peer writes its next request and sends it (with the ACK it owes). */
static void peer_request(struct peer *p)
{
	uint32_t size = p->c.tx.size;
	for (uint32_t i = 0; i < REQ_LEN; i++)
		p->txbuf[(p->c.f.tx_tail + i) & (size - 1)] = pat(p->sent + i, p->seed);
	if (ss_tcp_send(&p->c, REQ_LEN) != 0) {
		fprintf(stderr, "insn_echo: peer %u: send refused\n", p->seed);
		B.bad = true;
		return;
	}
	p->sent += REQ_LEN;
	ss_tcp_output(&p->c, B.now_us);
}

/* Frames from the service to the peers; each response is checked. */
static void peers_take(void)
{
	for (unsigned i = 0; i < B.to_peer.n; i++) {
		struct frame *f = &B.to_peer.f[i];
		struct ss_eth eth;
		struct ss_ipv4 ip;
		struct ss_tcp seg;
		if (f->flags & SS_TX_CSUM) {
			/* The port's work (not counted): both checksums. */
			ss_wr16(f->b + 24, ss_csum_ipv4_header(f->b + 14, 20));
			ss_tcp_csum_finish(f->b + 34, ss_rd16(f->b + 16) - 20u);
		}
		if (ss_eth_parse(f->b, f->len, &eth) != SS_ETH_OK ||
		    eth.ethertype != SS_ETHERTYPE_IPV4)
			continue;
		if (ss_ipv4_parse(f->b + 14, f->len - 14, 0, &ip) != SS_IPV4_OK ||
		    ss_tcp_parse(f->b + 34, ip.payload_len, &seg) != SS_TCP_OK ||
		    !ss_tcp_csum_ok(ip.src, ip.dst, f->b + 34, ip.payload_len)) {
			fprintf(stderr, "insn_echo: the stack emitted a malformed frame\n");
			exit(1);
		}
		seg.ip_ecn = ip.tos & 3;
		unsigned k = (unsigned)(seg.dport - PEER_PORT0);
		if (seg.dport < PEER_PORT0 || k >= B.n_peers)
			continue;
		struct peer *p = &B.peers[k];
		if (p->c.f.state == SS_TCPS_SYN_SENT || p->c.f.state == SS_TCPS_CLOSED) {
			ss_tcp_input(&p->c, &seg, B.now_us);
			ss_tcp_output(&p->c, B.now_us); /* the handshake's ACK */
			continue;
		}
		ss_tcp_input(&p->c, &seg, B.now_us);
		uint32_t n = ss_tcp_rx_avail(&p->c), size = p->c.rx.size;
		for (uint32_t j = 0; j < n; j++)
			if (p->rxbuf[(p->c.f.rx_head - p->c.rx.origin + j) & (size - 1)] !=
			    pat(p->got + j, p->seed))
				B.bad = true;
		p->got += n;
		ss_tcp_recv_done(&p->c, n);
		/* No ss_tcp_output(): the ACK waits (delayed) for the next request. */
	}
	B.to_peer.n = 0;
}

/* ---- the application (not counted) -------------------------------------- */

static void app_cmd(uint8_t op, const struct app_conn *c, uint32_t arg, uint32_t rx_done,
		    uint8_t flags)
{
	struct ss_app_ctx *cx = &B.app->ctx[0];
	struct ss_shm_cmd *cmd = &cx->atx_slot[B.atx_prod & (B.app->atx_slots - 1)];
	memset(cmd, 0, sizeof(*cmd));
	cmd->op = op;
	cmd->conn = c->slot;
	cmd->gen = c->gen;
	cmd->arg = arg;
	cmd->flags = flags;
	if (rx_done) {
		cmd->flags |= SS_CMDF_RX_DONE;
		cmd->rx_done = rx_done;
	}
	B.atx_prod++;
}

/* ss_poll + echo + ss_flush: events in, commands out, one publish. */
static void app_run(void)
{
	struct ss_app_ctx *cx = &B.app->ctx[0];
	uint32_t prod = __atomic_load_n(&cx->arx->prod, __ATOMIC_ACQUIRE);
	while (B.arx_cons != prod) {
		const struct ss_shm_ev *ev = &cx->arx_slot[B.arx_cons & (B.app->arx_slots - 1)];
		B.arx_cons++;
		struct app_conn *c = ev->conn < B.app->max_conns ? &B.ac[ev->conn] : NULL;
		switch (ev->type) {
		case SS_EV_ACCEPTED:
			c->slot = ev->conn;
			c->gen = ev->gen;
			c->rx = B.app->region + ev->rx_off;
			c->tx = B.app->region + ev->tx_off;
			/* 64-byte messages never need the large rings. */
			c->rsize = ev->rx_off < B.app->buf_off ? SS_SHM_SMALL_RING : B.app->rxbuf_size;
			c->tsize = ev->tx_off < B.app->buf_off ? SS_SHM_SMALL_RING : B.app->txbuf_size;
			c->rx_head = c->rx_avail = c->tx_tail = c->tx_acked = 0;
			c->rx_origin = c->tx_origin = 0;
			c->used = true;
			B.n_accepted++;
			break;
		case SS_EV_RX: {
			uint32_t tail = c->rx_head + c->rx_avail;
			if (((tail - c->rx_origin) & (c->rsize - 1)) != ev->arg3)
				c->rx_origin = tail - ev->arg3; /* libslipstream's event.c */
			c->rx_avail += ev->arg;
			if (ev->flags & SS_EVF_TX_ACKED)
				c->tx_acked += ev->arg2;
			break;
		}
		case SS_EV_TX_ACKED:
			c->tx_acked += ev->arg;
			break;
		case SS_EV_LISTEN:
			break;
		default:
			fprintf(stderr, "insn_echo: unexpected event %u (error %u)\n", ev->type,
				ev->error);
			B.bad = true;
			break;
		}
	}
	__atomic_store_n(&cx->arx->cons, B.arx_cons, __ATOMIC_RELEASE);
	for (uint32_t s = 0; s < B.app->max_conns; s++) {
		struct app_conn *c = &B.ac[s];
		uint32_t n = c->rx_avail;
		if (!c->used || !n)
			continue;
		/* libslipstream's ss_send_space: all acknowledged, the home
		 * byte again. */
		uint8_t at_home = 0;
		uint32_t tsize = c->tsize, rsize = c->rsize;
		uint32_t home = ss_shm_ring_home(c->slot, tsize);
		if (c->tx_acked == c->tx_tail && ((c->tx_tail - c->tx_origin) & (tsize - 1)) != home) {
			c->tx_origin = c->tx_tail - home;
			at_home = SS_CMDF_TX_HOME;
		}
		for (uint32_t i = 0; i < n; i++)
			c->tx[(c->tx_tail - c->tx_origin + i) & (tsize - 1)] =
				c->rx[(c->rx_head - c->rx_origin + i) & (rsize - 1)];
		c->tx_tail += n;
		c->rx_head += n;
		c->rx_avail = 0;
		/* libslipstream's flush: the reply's TX carries the bytes
		 * consumed (SS_CMDF_RX_DONE), one command; --two-cmds: the
		 * separate TX and RX_DONE of a library before SS_SHM_VERSION 4. */
		if (B.two_cmds) {
			app_cmd(SS_CMD_TX, c, n, 0, at_home);
			app_cmd(SS_CMD_RX_DONE, c, n, 0, 0);
		} else {
			app_cmd(SS_CMD_TX, c, n, n, at_home);
		}
	}
	__atomic_store_n(&cx->atx->prod, B.atx_prod, __ATOMIC_RELEASE);
}

static bool app_cmds_waiting(void)
{
	struct ss_app_ctx *cx = &B.app->ctx[0];
	return __atomic_load_n(&cx->atx->cons, __ATOMIC_ACQUIRE) != B.atx_prod;
}

/* ---- one pass ------------------------------------------------------------- */

/*
 * The service takes what the peers sent, in bursts, a round after each
 * (fastpath.c's loop); the application answers each burst's events before
 * the next round, which takes its commands with the next burst.
 */
static void svc_ingest(bool measure)
{
	for (unsigned i = 0; i < B.to_svc.n; i += BURST) {
		unsigned k = B.to_svc.n - i < BURST ? B.to_svc.n - i : BURST;
		B.now_us += (uint64_t)k * B.us_per_req;
		B.st.now_us = B.now_us; /* fastpath.c sets it before the burst */
		if (k > 1 && ss_stack_rx_ahead_wanted(&B.st)) { /* as fastpath.c */
			if (measure)
				insn_svc_ahead(&B.to_svc.f[i], k);
			else
				svc_ahead(&B.to_svc.f[i], k);
		}
		for (unsigned j = 0; j < k; j++) {
			struct frame *f = &B.to_svc.f[i + j];
			size_t out = measure ? insn_svc_rx(f->b, f->len) : svc_rx_setup(f->b, f->len);
			if (out) {
				fprintf(stderr, "insn_echo: the service answered a frame in place\n");
				B.bad = true;
			}
		}
		if (measure)
			insn_svc_round();
		else
			svc_round_setup();
		app_run();
	}
	B.to_svc.n = 0;
}

static void svc_take_commands(bool measure)
{
	for (unsigned r = 0; r < 1000 && app_cmds_waiting(); r++) {
		if (measure)
			insn_svc_round();
		else
			svc_round_setup();
	}
}

static bool peers_done(void)
{
	for (unsigned i = 0; i < B.n_peers; i++)
		if (B.peers[i].got != B.peers[i].sent)
			return false;
	return true;
}

/*
 * One request per connection.  A pass takes at least --base-rtt-us of
 * virtual time (a client's turn-around at one connection).  Responses the
 * pacer holds back go out in later rounds, 10 us apart: those rounds are
 * the service's work too.
 */
static void pass(bool measure)
{
	uint64_t busy = (uint64_t)B.n_peers * B.us_per_req;

	if (busy < B.base_rtt_us)
		B.now_us += B.base_rtt_us - busy;
	for (unsigned i = 0; i < B.n_peers; i++)
		peer_request(&B.peers[i]);
	svc_ingest(measure);
	svc_take_commands(measure);
	for (unsigned r = 0; r < 100000; r++) {
		peers_take();
		if (peers_done())
			return;
		B.now_us += 10;
		B.st.now_us = B.now_us;
		B.paced_rounds++;
		if (measure)
			insn_svc_round();
		else
			svc_round_setup();
	}
	fprintf(stderr, "insn_echo: responses still missing after 1 s of rounds\n");
	B.bad = true;
}

/* ---- set-up ---------------------------------------------------------------- */

static int setup(unsigned n_conns)
{
	char line[160];
	struct ss_config *cfg = &B.cfg;

	ss_config_defaults(cfg);
	if (B.cc_share && ss_cc_policy_set_share(&cfg->cc, B.cc_share, line, sizeof(line)) != 0) {
		fprintf(stderr, "insn_echo: %s\n", line);
		return -1;
	}
	B.now_us = 1000000;
	B.n_peers = n_conns;
	B.to_svc.cap = n_conns + 64;
	B.to_peer.cap = 2 * n_conns + 64;
	B.to_svc.f = calloc(B.to_svc.cap, sizeof(struct frame));
	B.to_peer.f = calloc(B.to_peer.cap, sizeof(struct frame));
	B.peers = calloc(n_conns, sizeof(*B.peers));
	if (!B.to_svc.f || !B.to_peer.f || !B.peers)
		return -ENOMEM;
	if (ss_arp_cache_init(&B.arp, cfg->arp_entries) != 0)
		return -ENOMEM;

	/* As main.c sets the service up, with its defaults. */
	struct ss_app_limits alim = {
		.max_apps = cfg->max_apps, .max_ctx = 64, .max_conns = cfg->max_app_conns,
		.max_buf = cfg->max_buf, .max_region = cfg->max_app_mem,
		.atx_slots = 4096, .arx_slots = 8192,
	};
	if (ss_app_reg_init(&B.reg, &alim, 1) != 0)
		return -1;
	struct ss_tcp_params tp;
	ss_tcp_params_default(&tp);
	tp.time_wait_us = cfg->time_wait_ms * 1000u;
	tp.delack_us = cfg->delack_us;
	tp.ecn = cfg->ecn;
	struct ss_stack_limits slim = {
		.max_flows = cfg->max_flows, .max_listeners = cfg->max_listeners,
		.timer_slots = 4096, .cmd_budget = 256, .max_orphan_mem = cfg->max_orphan_mem,
	};
	struct ss_stack_io io = { .arg = &B.to_peer, .frame_alloc = frame_alloc,
				  .frame_send = frame_send, .tx_offload = B.tx_offload };
	if (ss_stack_init(&B.st, &slim, &tp, &B.ctr, svc_mac, SVC_IP, 24, 0, &B.arp, &B.reg, 0,
			  &io) != 0)
		return -1;
	if (ss_stack_set_cc(&B.st, &cfg->cc) != 0)
		return -1;
	ss_proto_ctx_init(&B.proto, svc_mac, SVC_IP, 24, &B.arp, true, &B.ctr);
	B.proto.tcp_input = ss_stack_tcp_input;
	B.proto.tcp_arg = &B.st;
	ss_stack_set_loop_input(&B.st, &B.proto);

	/* The application: ss-echo's ring sizes. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, B.sock) != 0)
		return -errno;
	snprintf(line, sizeof(line), "attach 1 contexts=1 conns=%u rxbuf=%u txbuf=%u",
		 n_conns < 16 ? 16 : n_conns, APP_BUF, APP_BUF);
	if (ss_app_attach(&B.reg, B.sock[0], line) != 1)
		return -1;
	B.app = &B.reg.apps[0];
	B.ac = calloc(B.app->max_conns, sizeof(*B.ac));
	if (!B.ac)
		return -ENOMEM;
	struct ss_shm_cmd *cmd = &B.app->ctx[0].atx_slot[0];
	memset(cmd, 0, sizeof(*cmd));
	cmd->op = SS_CMD_LISTEN;
	cmd->port = SVC_PORT;
	cmd->arg = 4096;
	B.atx_prod = 1;
	__atomic_store_n(&B.app->ctx[0].atx->prod, B.atx_prod, __ATOMIC_RELEASE);
	svc_round_setup();
	app_run();

	/* The peers: a Linux client (no ECN asked for, delayed ACKs). */
	ss_tcp_params_default(&B.peer_params);
	B.peer_params.ecn = 0;
	B.peer_params.delack_us = 40000;
	for (unsigned i = 0; i < n_conns; i++) {
		struct peer *p = &B.peers[i];
		p->rxbuf = calloc(1, PEER_RING);
		p->txbuf = calloc(1, PEER_RING);
		if (!p->rxbuf || !p->txbuf)
			return -ENOMEM;
		p->seed = i + 1;
		struct ss_tcp_ring rx = { .base = p->rxbuf, .size = PEER_RING },
				   tx = { .base = p->txbuf, .size = PEER_RING };
		ss_tcp_conn_init(&p->c, &B.peer_params, PEER_IP, (uint16_t)(PEER_PORT0 + i), SVC_IP,
				 SVC_PORT, 0x10000000u * (i + 1) + 12345, 777 * (i + 1), rx, tx,
				 peer_emit, NULL);
	}
	/* Handshakes, a burst at a time. */
	for (unsigned i = 0; i < n_conns; i++) {
		ss_tcp_connect(&B.peers[i].c, B.now_us);
		if (B.to_svc.n >= BURST || i + 1 == n_conns) {
			svc_ingest(false);            /* SYNs -> SYN-ACKs */
			peers_take();                 /* -> ACKs */
			svc_ingest(false);            /* -> ESTABLISHED, ACCEPTED */
			app_run();
		}
	}
	if (B.n_accepted != n_conns) {
		fprintf(stderr, "insn_echo: %u of %u connections accepted\n", B.n_accepted, n_conns);
		return -1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: insn_echo [--conns N] [--requests M] [--warmup W] [--us-per-req U]\n"
		"                 [--base-rtt-us T] [--idle-rounds K] [--rx-csum-good] [--csum-offload]\n"
		"                 [--counters] [--two-cmds] [--cc-share host|flow]\n"
		"N is 1..4096: the peers ACK a response only with their next request, a\n"
		"pass later, and from 8192 connections (82 ms passes at 10 us) their tail\n"
		"probes overflow the frame queues and requests go missing.\n"
		"Run under bench/insn_per_req.py (valgrind --tool=callgrind).\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned conns = 1, requests = 200, warmup = UINT32_MAX, idle = 100;
	bool show_counters = false;

	B.us_per_req = 10;
	B.base_rtt_us = 40;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--counters") == 0) {
			show_counters = true;
			continue;
		}
		if (strcmp(a, "--two-cmds") == 0) {
			B.two_cmds = true;
			continue;
		}
		if (strcmp(a, "--rx-csum-good") == 0) {
			B.rx_flags = SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD;
			continue;
		}
		if (strcmp(a, "--csum-offload") == 0) {
			/* A port with both offloads: RX verified, TX completed. */
			B.rx_flags = SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD;
			B.tx_offload = SS_TX_CSUM;
			continue;
		}
		if (!v)
			usage();
		if (strcmp(a, "--cc-share") == 0) {
			B.cc_share = v;
			i++;
			continue;
		}
		unsigned long x = strtoul(v, NULL, 10);
		if (strcmp(a, "--conns") == 0 && x > 0 && x <= 4096)
			conns = (unsigned)x;
		else if (strcmp(a, "--requests") == 0)
			requests = (unsigned)x;
		else if (strcmp(a, "--warmup") == 0)
			warmup = (unsigned)x;
		else if (strcmp(a, "--us-per-req") == 0 && x > 0)
			B.us_per_req = (unsigned)x;
		else if (strcmp(a, "--base-rtt-us") == 0)
			B.base_rtt_us = (unsigned)x;
		else if (strcmp(a, "--idle-rounds") == 0)
			idle = (unsigned)x;
		else
			usage();
		i++;
	}
	if (warmup == UINT32_MAX) {
		/* 200 ms of virtual time: the rates reach their steady state. */
		uint64_t pass_us = (uint64_t)conns * B.us_per_req;
		if (pass_us < B.base_rtt_us)
			pass_us = B.base_rtt_us;
		warmup = (unsigned)(200000 / pass_us + 10);
	}
	if (setup(conns) != 0) {
		fprintf(stderr, "insn_echo: set-up failed\n");
		return 1;
	}
	for (unsigned r = 0; r < warmup; r++)
		pass(false);
	struct ss_counters c0 = B.ctr;
	uint64_t ev0 = B.arx_cons, pr0 = B.paced_rounds;
	for (unsigned r = 0; r < requests; r++)
		pass(true);
	struct ss_counters c1 = B.ctr;
	for (unsigned r = 0; r < idle; r++)
		insn_svc_idle();

	uint64_t want = (uint64_t)(warmup + requests) * REQ_LEN;
	for (unsigned i = 0; i < conns; i++)
		if (B.peers[i].got != want) {
			fprintf(stderr, "insn_echo: connection %u: %llu of %llu response bytes\n", i,
				(unsigned long long)B.peers[i].got, (unsigned long long)want);
			B.bad = true;
			break;
		}
#define D(id) (unsigned long long)(c1.v[SS_CTR_##id] - c0.v[SS_CTR_##id])
	printf("insn_echo conns=%u requests=%llu idle_rounds=%u us_per_req=%u base_rtt_us=%u "
	       "rx_csum_good=%d tx_csum_offload=%d rx_tcp=%llu rx_fast=%llu rx_slow=%llu tx_segments=%llu "
	       "events=%llu app_commands=%llu retrans=%llu cc_intervals=%llu paced_waits=%llu "
	       "paced_rounds=%llu\n",
	       conns, (unsigned long long)conns * requests, idle, B.us_per_req, B.base_rtt_us,
	       B.rx_flags != 0, B.tx_offload != 0, D(rx_tcp), D(rx_tcp_fast), D(rx_tcp_slow), D(tx_tcp_segments),
	       (unsigned long long)(B.arx_cons - ev0), D(app_commands), D(tcp_retrans_segs),
	       D(cc_intervals), D(cc_paced_waits), (unsigned long long)(B.paced_rounds - pr0));
#undef D
	if (show_counters)
		for (unsigned i = 0; i < SS_CTR_MAX; i++)
			if (c1.v[i] != c0.v[i])
				printf("  %s %llu\n", ss_counter_name((enum ss_counter_id)i),
				       (unsigned long long)(c1.v[i] - c0.v[i]));
	if (B.bad) {
		for (unsigned i = 0; i < SS_CTR_MAX; i++)
			if (ss_ctr_read(&B.ctr, (enum ss_counter_id)i))
				fprintf(stderr, "  %s %llu\n", ss_counter_name((enum ss_counter_id)i),
					(unsigned long long)ss_ctr_read(&B.ctr, (enum ss_counter_id)i));
		fprintf(stderr, "insn_echo: FAILED: a response was missing or wrong\n");
		return 1;
	}
	return 0;
}
