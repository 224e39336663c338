/* stack_harness.h - the service's TCP stack in one process: an app on raw shared memory, a peer engine, virtual time. */
#ifndef SS_TESTS_STACK_HARNESS_H
#define SS_TESTS_STACK_HARNESS_H

/*
 * Wiring (no DPDK, no threads, no real time):
 *
 *   app (this test, writing commands straight into its region)
 *     <-> struct ss_stack (the code under test) <-> frames in memory
 *     <-> a peer: a second TCP engine, standing in for Linux
 *
 * Frames the stack emits are parsed (Ethernet, IPv4 with checksum, TCP with
 * checksum) and fed to the peer engine; the peer's segments are built into
 * frames and fed to ss_stack_tcp_input().  sh_run() pumps both ways until
 * nothing moves, advancing virtual time when asked.  Segments to the
 * stack's own address (SH_SVC_IP) never reach the frame callbacks: they go
 * round the stack's loopback queue through h->proto.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stack/app.h"
#include "stack/arp_cache.h"
#include "stack/counters.h"
#include "stack/proto.h"
#include "service/registry.h"
#include "stack/stack.h"
#include "wire/bytes.h"
#include "wire/csum.h"
#include "wire/eth.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define SH_SVC_IP 0xc6120001u  /* 198.18.0.1 */
#define SH_PEER_IP 0xc6120002u /* 198.18.0.2 */
#define SH_MAX_FRAMES 4096
#define SH_FRAME_CAP 2048
#define SH_PEER_RING (1u << 20)

/* Event ring size for the next sh_init() (tests shrink it to force overflow). */
static uint32_t sh_arx_slots = 64;
/* Loopback queue slots for the next sh_init() (0: the stack's default). */
static uint32_t sh_loop_slots = 0;

static const uint8_t sh_svc_mac[6] = { 0x02, 0, 0, 0, 0, 1 };
static const uint8_t sh_peer_mac[6] = { 0x02, 0, 0, 0, 0, 2 };

/* ss_stack_io.tx_offload for the next sh_init(): SS_TX_CSUM has the stack
 * leave checksums to the "port"; sh_deliver() then completes them in
 * software, as a NIC would, before the peer checks them. */
static unsigned sh_tx_offload = 0;
/* Frames sent marked SS_TX_CSUM, all harnesses together. */
static uint64_t sh_csum_offload_total = 0;
/* ss_stack_io.tso_max for the next sh_init() (with SS_TX_CSUM): the
 * "port" cuts TSO segments as a NIC does (sh_frame_send_tso()). */
static uint32_t sh_tso_max = 0;
/* TSO segments the "port" was given, and those not built as a port
 * expects them, all harnesses together. */
static uint64_t sh_tso_total = 0, sh_tso_bad = 0;
#define SH_TSO_CAP 65536

struct sh_frame {
	uint8_t b[SH_FRAME_CAP];
	size_t len;
	unsigned flags; /* SS_TX_* */
};

struct sh_peer_conn {
	struct ss_tcp_conn c;
	uint8_t *rxbuf, *txbuf;
	bool used;
};

struct sh {
	struct ss_counters ctr;
	struct ss_arp_cache arp;
	struct ss_app_reg reg;
	struct ss_stack st;
	struct ss_proto_ctx proto; /* the receive path looped-back frames take */
	struct ss_tcp_params params;
	uint64_t now_us;

	/* Frames from the stack, not yet given to the peer. */
	struct sh_frame *out;
	uint8_t *tso_buf;   /* the one TSO frame, SH_TSO_CAP bytes (sh_tso_max) */
	unsigned n_out;
	uint64_t frames_from_stack, frames_to_stack;
	uint64_t frames_csum_offload; /* sent marked SS_TX_CSUM */
	/* Drop filter: return true to lose a frame going stack -> peer. */
	bool (*lose)(struct sh *h, const struct ss_tcp *seg);
	unsigned lose_count;

	/* The peer: connections (index = what the test uses) and a listener. */
	struct sh_peer_conn peer[8];
	uint16_t peer_listen_port;
	uint64_t rsts_to_peer;

	/* The app. */
	int sock[2];
	struct ss_app *app;
	uint32_t arx_cons;
	uint32_t atx_prod;
	struct ss_shm_ev split; /* sh_event(): the TX_ACKED of an RX slot */
	bool has_split;
	unsigned rx_acked_slots; /* RX slots that carried a TX_ACKED */
};

/* An RX slot with SS_EVF_TX_ACKED holds two events (SS_SHM_VERSION 5):
 * @ev becomes the RX, *@second the TX_ACKED that follows it, as the
 * library reads them.  Returns whether it did. */
static inline bool sh_ev_split(struct ss_shm_ev *ev, struct ss_shm_ev *second)
{
	if (ev->type != SS_EV_RX || !(ev->flags & SS_EVF_TX_ACKED))
		return false;
	*second = (struct ss_shm_ev){ .type = SS_EV_TX_ACKED, .conn = ev->conn, .gen = ev->gen,
				      .arg = ev->arg2 };
	ev->flags &= (uint8_t)~SS_EVF_TX_ACKED;
	ev->arg2 = 0;
	return true;
}

static inline uint8_t *sh_frame_alloc(void *arg, void **handle, size_t *cap)
{
	struct sh *h = arg;
	if (h->n_out == SH_MAX_FRAMES)
		return NULL;
	struct sh_frame *f = &h->out[h->n_out++];
	*handle = f;
	*cap = sizeof(f->b);
	f->len = 0;
	f->flags = 0;
	return f->b;
}

static inline void sh_frame_send(void *arg, void *handle, size_t len, unsigned flags)
{
	struct sh *h = arg;
	struct sh_frame *f = handle;
	if (len == 0) {
		if (handle != h->tso_buf)
			h->n_out--; /* only the last one can be given back */
		return;
	}
	f->len = len;
	f->flags = flags;
	h->frames_from_stack++;
	if (flags & SS_TX_CSUM) {
		h->frames_csum_offload++;
		sh_csum_offload_total++;
	}
}

static inline uint8_t *sh_frame_alloc_tso(void *arg, void **handle, size_t *cap)
{
	struct sh *h = arg;
	*handle = h->tso_buf;
	*cap = SH_TSO_CAP;
	return h->tso_buf;
}

/*
 * What a port with TSO does to a TSO segment: cut into segments of @mss
 * payload bytes, each with the headers, its own sequence number, IPv4
 * length and id, FIN and PSH on the last only, and both checksums (left
 * to sh_frame_csum_finish(), as SS_TX_CSUM frames: the TCP field gets
 * the pseudo-header sum with the cut segment's length).  As the stack
 * hands it over: IPv4 checksum 0, the TCP field the pseudo-header sum
 * without the length (rte_ipv4_phdr_cksum() with RTE_MBUF_F_TX_TCP_SEG),
 * and more than one MSS of payload.
 */
static inline void sh_frame_send_tso(void *arg, void *handle, size_t len, unsigned l4_len,
				     unsigned mss)
{
	struct sh *h = arg;
	uint8_t *b = handle;
	size_t hl = 34 + l4_len;

	sh_tso_total++;
	uint16_t phdr0 = (uint16_t)~ss_csum_fold(ss_csum_pseudo_ipv4(SH_SVC_IP, SH_PEER_IP,
								      SS_IPPROTO_TCP, 0));
	if (b != h->tso_buf || len <= hl + mss || len > SH_TSO_CAP || ss_rd16(b + 24) != 0 ||
	    ss_rd16(b + 50) != phdr0 || ss_rd16(b + 16) != len - 14 || l4_len != (b[46] >> 4) * 4u) {
		sh_tso_bad++;
		return;
	}
	uint32_t seq = ss_rd32(b + 38);
	uint16_t id = ss_rd16(b + 18);
	uint8_t flags = b[47];
	for (size_t off = 0, pay = len - hl; off < pay; off += mss) {
		size_t n = pay - off < mss ? pay - off : mss;
		void *fh;
		size_t cap;
		uint8_t *f = sh_frame_alloc(h, &fh, &cap);
		if (!f) {
			sh_tso_bad++;
			return;
		}
		memcpy(f, b, hl);
		memcpy(f + hl, b + hl + off, n);
		ss_wr16(f + 16, (uint16_t)(20 + l4_len + n));
		ss_wr16(f + 18, id++);
		ss_wr32(f + 38, seq + (uint32_t)off);
		if (off + n < pay)
			f[47] = (uint8_t)(flags & ~(SS_TCP_FIN | SS_TCP_PSH));
		ss_wr16(f + 50, (uint16_t)~ss_csum_fold(ss_csum_pseudo_ipv4(
					SH_SVC_IP, SH_PEER_IP, SS_IPPROTO_TCP, (uint16_t)(l4_len + n))));
		sh_frame_send(h, fh, hl + n, SS_TX_CSUM);
	}
}

/* What a port with TX checksum offload does to a frame marked SS_TX_CSUM:
 * the IPv4 header checksum (field 0) and the TCP checksum (field: the
 * pseudo-header sum) computed and stored. */
static inline void sh_frame_csum_finish(struct sh_frame *f)
{
	if (!(f->flags & SS_TX_CSUM))
		return;
	ss_wr16(f->b + 24, ss_csum_ipv4_header(f->b + 14, 20));
	ss_tcp_csum_finish(f->b + 34, ss_rd16(f->b + 16) - 20u);
	f->flags &= ~SS_TX_CSUM;
}

/*
 * A segment from the peer (198.18.0.2) to the stack: built into a whole
 * frame, put through the checks the fast path makes (IPv4, TCP, checksum),
 * then handed to ss_stack_tcp_input() with @t->ip_ecn as its ECN field.
 * Returns -1 if the frame could not be built or failed the checks.
 */
static inline int sh_to_stack(struct sh *h, const struct ss_tcp *t)
{
	uint8_t frame[SH_FRAME_CAP];
	size_t n = ss_tcp_build(frame + 34, sizeof(frame) - 34, t, SH_PEER_IP, SH_SVC_IP);
	if (n == 0)
		return -1;
	struct ss_ipv4 ip = { .total_len = (uint16_t)(20 + n), .ttl = 64, .proto = 6,
			      .src = SH_PEER_IP, .dst = SH_SVC_IP };
	ss_ipv4_build(frame + 14, 20, &ip);
	struct ss_eth eth = { .ethertype = SS_ETHERTYPE_IPV4 };
	memcpy(eth.dst, sh_svc_mac, 6);
	memcpy(eth.src, sh_peer_mac, 6);
	ss_eth_build(frame, 14, &eth);

	struct ss_ipv4 pip;
	struct ss_tcp pseg;
	if (ss_ipv4_parse(frame + 14, 20 + n, 0, &pip) != SS_IPV4_OK ||
	    ss_tcp_parse(frame + 34, pip.payload_len, &pseg) != SS_TCP_OK ||
	    !ss_tcp_csum_ok(pip.src, pip.dst, frame + 34, pip.payload_len))
		return -1;
	pseg.ip_ecn = t->ip_ecn;
	h->frames_to_stack++;
	h->st.now_us = h->now_us;
	if (!ss_stack_tcp_input(&h->st, frame, &pip, &pseg))
		h->rsts_to_peer++; /* the fast path would answer with RST */
	return 0;
}

/* Peer engine emit: its segment to the stack, at once. */
static inline int sh_peer_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct sh *h = arg;
	uint8_t pay[SH_FRAME_CAP];
	struct ss_tcp t = seg->hdr;

	if (seg->len > sizeof(pay))
		return -1;
	ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, pay, seg->len);
	t.payload = pay;
	t.payload_len = seg->len;
	return sh_to_stack(h, &t);
}

static inline struct sh_peer_conn *sh_peer_find(struct sh *h, const struct ss_tcp *seg, uint32_t src)
{
	for (unsigned i = 0; i < 8; i++) {
		struct sh_peer_conn *p = &h->peer[i];
		if (p->used && p->c.local_port == seg->dport && p->c.remote_port == seg->sport &&
		    p->c.remote_ip == src)
			return p;
	}
	return NULL;
}

static inline struct sh_peer_conn *sh_peer_new(struct sh *h, uint16_t lport, uint16_t rport)
{
	for (unsigned i = 0; i < 8; i++) {
		struct sh_peer_conn *p = &h->peer[i];
		if (p->used)
			continue;
		if (!p->rxbuf) {
			p->rxbuf = calloc(1, SH_PEER_RING);
			p->txbuf = calloc(1, SH_PEER_RING);
		}
		struct ss_tcp_ring rx = { .base = p->rxbuf, .size = SH_PEER_RING };
		struct ss_tcp_ring tx = { .base = p->txbuf, .size = SH_PEER_RING };
		ss_tcp_conn_init(&p->c, &h->params, SH_PEER_IP, lport, SH_SVC_IP, rport,
				 0x10000000u * (i + 1) + 12345, 777 * (i + 1), rx, tx, sh_peer_emit, h);
		p->used = true;
		return p;
	}
	return NULL;
}

/* Delivers the stack's frames to the peer; returns how many. */
static inline unsigned sh_deliver(struct sh *h)
{
	unsigned n = 0;
	while (h->n_out) {
		/* Take a snapshot: delivering may make the stack emit more. */
		static struct sh_frame batch[SH_MAX_FRAMES];
		unsigned k = h->n_out;
		memcpy(batch, h->out, sizeof(batch[0]) * k);
		h->n_out = 0;
		for (unsigned i = 0; i < k; i++) {
			struct sh_frame *f = &batch[i];
			struct ss_eth eth;
			struct ss_ipv4 ip;
			struct ss_tcp seg;
			n++;
			sh_frame_csum_finish(f);
			if (ss_eth_parse(f->b, f->len, &eth) != SS_ETH_OK ||
			    eth.ethertype != SS_ETHERTYPE_IPV4)
				continue; /* ARP requests: the test pre-loads the cache */
			if (ss_ipv4_parse(f->b + 14, f->len - 14, 0, &ip) != SS_IPV4_OK ||
			    ss_tcp_parse(f->b + 34, ip.payload_len, &seg) != SS_TCP_OK ||
			    !ss_tcp_csum_ok(ip.src, ip.dst, f->b + 34, ip.payload_len)) {
				fprintf(stderr, "stack emitted a malformed frame\n");
				abort();
			}
			seg.ip_ecn = ip.tos & 3;
			if (memcmp(eth.dst, sh_peer_mac, 6) != 0) {
				fprintf(stderr, "stack emitted a frame to the wrong MAC\n");
				abort();
			}
			if (h->lose && h->lose(h, &seg)) {
				h->lose_count++;
				continue;
			}
			struct sh_peer_conn *p = sh_peer_find(h, &seg, ip.src);
			if (!p && (seg.flags & (SS_TCP_SYN | SS_TCP_ACK | SS_TCP_RST | SS_TCP_FIN)) == SS_TCP_SYN &&
			    seg.dport == h->peer_listen_port) {
				p = sh_peer_new(h, seg.dport, seg.sport);
				ss_tcp_accept_syn(&p->c, &seg, h->now_us);
				continue;
			}
			if (!p)
				continue;
			ss_tcp_input(&p->c, &seg, h->now_us);
			ss_tcp_output(&p->c, h->now_us);
		}
	}
	return n;
}

static inline void sh_peer_timers(struct sh *h)
{
	for (unsigned i = 0; i < 8; i++)
		if (h->peer[i].used) {
			ss_tcp_timer(&h->peer[i].c, h->now_us);
			ss_tcp_output(&h->peer[i].c, h->now_us);
		}
}

/* Pumps until quiet (at most @rounds rounds). */
static inline void sh_pump(struct sh *h, unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		bool did = ss_stack_round(&h->st, h->now_us);
		unsigned n = sh_deliver(h);
		sh_peer_timers(h);
		did |= ss_stack_round(&h->st, h->now_us);
		n += sh_deliver(h);
		if (!did && n == 0)
			break;
	}
}

/* Advances virtual time in @step_us steps up to @total_us, pumping each step. */
static inline void sh_advance(struct sh *h, uint64_t total_us, uint64_t step_us)
{
	for (uint64_t t = 0; t < total_us; t += step_us) {
		h->now_us += step_us;
		sh_pump(h, 64);
	}
}

/* ---- the app side, straight on the region ---- */

static inline struct ss_app_ctx *sh_ctx(struct sh *h)
{
	return &h->app->ctx[0];
}

static inline void sh_cmd(struct sh *h, const struct ss_shm_cmd *cmd)
{
	struct ss_app_ctx *cx = sh_ctx(h);
	cx->atx_slot[h->atx_prod & (h->app->atx_slots - 1)] = *cmd;
	h->atx_prod++;
	__atomic_store_n(&cx->atx->prod, h->atx_prod, __ATOMIC_RELEASE);
}

/* Next event slot as the service wrote it, or false. */
static inline bool sh_event_raw(struct sh *h, struct ss_shm_ev *ev)
{
	struct ss_app_ctx *cx = sh_ctx(h);
	uint32_t prod = __atomic_load_n(&cx->arx->prod, __ATOMIC_ACQUIRE);
	if (prod == h->arx_cons)
		return false;
	*ev = cx->arx_slot[h->arx_cons & (h->app->arx_slots - 1)];
	h->arx_cons++;
	__atomic_store_n(&cx->arx->cons, h->arx_cons, __ATOMIC_RELEASE);
	return true;
}

/* Next event, or false: an RX slot that carries a TX_ACKED as the two
 * events (sh_ev_split()). */
static inline bool sh_event(struct sh *h, struct ss_shm_ev *ev)
{
	if (h->has_split) {
		*ev = h->split;
		h->has_split = false;
		return true;
	}
	if (!sh_event_raw(h, ev))
		return false;
	if (sh_ev_split(ev, &h->split)) {
		h->has_split = true;
		h->rx_acked_slots++;
	}
	return true;
}

static inline int sh_init(struct sh *h, const char *attach_line)
{
	memset(h, 0, sizeof(*h));
	h->out = calloc(SH_MAX_FRAMES, sizeof(*h->out));
	h->tso_buf = calloc(1, SH_TSO_CAP);
	h->now_us = 1000000;
	ss_tcp_params_default(&h->params);
	h->params.ecn = 1; /* both ends negotiate ECN: the marks travel too */
	if (ss_arp_cache_init(&h->arp, 64) != 0)
		return -1;
	ss_arp_cache_update(&h->arp, SH_PEER_IP, sh_peer_mac, 0, true);
	struct ss_app_limits al = { .max_apps = 4, .max_ctx = 4, .max_conns = 1024,
				    .max_buf = 1u << 20, .max_region = 1ull << 30,
				    .atx_slots = 64, .arx_slots = sh_arx_slots };
	if (ss_app_reg_init(&h->reg, &al, 1) != 0)
		return -1;
	struct ss_stack_limits sl = { .max_flows = 256, .max_listeners = 8,
				      .timer_slots = 256, .cmd_budget = 32,
				      .max_orphan_mem = 1u << 20,
				      .loop_slots = sh_loop_slots };
	struct ss_stack_io io = { h, sh_frame_alloc, sh_frame_send, sh_tx_offload,
				  sh_tso_max, sh_frame_alloc_tso, sh_frame_send_tso };
	if (ss_stack_init(&h->st, &sl, &h->params, &h->ctr, sh_svc_mac, SH_SVC_IP, 24, 0, &h->arp,
			  &h->reg, 0, &io) != 0)
		return -1;
	/* Looped-back frames go through ss_proto_input() as in the service. */
	ss_proto_ctx_init(&h->proto, sh_svc_mac, SH_SVC_IP, 24, &h->arp, false, &h->ctr);
	h->proto.tcp_input = ss_stack_tcp_input;
	h->proto.tcp_arg = &h->st;
	ss_stack_set_loop_input(&h->st, &h->proto);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, h->sock) != 0)
		return -1;
	if (ss_app_attach(&h->reg, h->sock[0], attach_line) != 1)
		return -1;
	h->app = &h->reg.apps[0];
	return 0;
}

static inline void sh_fini(struct sh *h)
{
	ss_stack_fini(&h->st);
	ss_app_reg_fini(&h->reg); /* closes sock[0] with the app */
	close(h->sock[1]);
	ss_arp_cache_free(&h->arp);
	for (unsigned i = 0; i < 8; i++) {
		free(h->peer[i].rxbuf);
		free(h->peer[i].txbuf);
	}
	free(h->out);
	free(h->tso_buf);
}

/* This process's name as the service reads it at attach (/proc/PID/comm):
 * the harness attaches over a socketpair, so the "application" is us. */
static inline void sh_self_comm(char comm[16])
{
	FILE *f = fopen("/proc/self/comm", "r");
	size_t n = f ? fread(comm, 1, 15, f) : 0;

	if (f)
		fclose(f);
	while (n && comm[n - 1] == '\n')
		n--;
	comm[n] = '\0';
}

/* Test payload: byte @i of a stream seeded @seed. */
static inline uint8_t sh_pat(uint64_t i, unsigned seed)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

/* Peer writes @n pattern bytes from stream offset @off; ss_tcp_send's result. */
static inline int sh_peer_write(struct sh_peer_conn *p, uint64_t off, uint32_t n, unsigned seed)
{
	uint32_t size = p->c.tx.size;
	for (uint32_t i = 0; i < n; i++)
		p->txbuf[(p->c.f.tx_tail - p->c.tx.origin + i) & (size - 1)] =
			sh_pat(off + i, seed);
	return ss_tcp_send(&p->c, n);
}

/* Peer reads everything it has, checking it against the pattern from *@off
 * (*@bad set on a mismatch); returns bytes read. */
static inline uint32_t sh_peer_read_check(struct sh_peer_conn *p, uint64_t *off, unsigned seed,
					  bool *bad)
{
	uint32_t n = ss_tcp_rx_avail(&p->c), size = p->c.rx.size;
	for (uint32_t i = 0; i < n; i++)
		if (p->rxbuf[(p->c.f.rx_head - p->c.rx.origin + i) & (size - 1)] !=
		    sh_pat(*off + i, seed))
			*bad = true;
	*off += n;
	ss_tcp_recv_done(&p->c, n);
	return n;
}

#endif
