/* stack_conn.c - connections on the fast path: lookup, passive and active open, output, timers, release. */
#include "stack/stack_conn.h"
#include "stack/stack_opts.h"
#include "stack/stack_cc.h"
#include "stack/stack_cookie.h"
#include "stack/stack_fork.h"
#include "stack/stack_listen.h"
#include "stack/stack_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stack/arp_cache.h"
#include "stack/bigmem.h"
#include "util/log.h"
#include "wire/arp.h"
#include "wire/bytes.h"
#include "wire/eth.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

#define TTL 64
#define IP_DF 0x4000

/* ---- frame output --------------------------------------------------------- */

/* A buffer for one frame: a loopback queue slot for our own address (a
 * full queue: NULL, counted), else the NIC's. */
static uint8_t *frame_get(struct ss_stack *s, bool loop, void **handle, size_t *cap)
{
	if (loop) {
		*handle = NULL;
		return stack_loop_reserve(s, cap);
	}
	uint8_t *buf = s->io.frame_alloc(s->io.arg, handle, cap);
	if (!buf)
		ss_ctr_inc(s->ctr, SS_CTR_drop_no_mbuf);
	return buf;
}

/* Sends (len > 0) or gives back (len 0) what frame_get() returned. */
static void frame_put(struct ss_stack *s, bool loop, void *handle, size_t len, unsigned flags)
{
	if (!loop)
		s->io.frame_send(s->io.arg, handle, len, flags);
	else if (len)
		stack_loop_commit(s, len);
}

/* conn_seg_buf_tsoc() for a TSO segment (more than an MSS of payload, only on
 * a connection with tso_max): a frame from frame_alloc_tso.  None left:
 * NULL, counted, and the engine sends the segment's first MSS instead. */
static __attribute__((noinline)) uint8_t *conn_seg_buf_tso(struct ss_stack *s, size_t len)
{
	size_t cap, hdrs = SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN;
	uint8_t *buf = s->io.frame_alloc_tso(s->io.arg, &s->seg_handle, &cap);

	if (!buf) {
		ss_ctr_inc(s->ctr, SS_CTR_tx_tso_no_frame);
		return NULL;
	}
	if (hdrs + len > cap || len + SS_IPV4_HDR_MIN > 0xffff) {
		s->io.frame_send(s->io.arg, s->seg_handle, 0, 0);
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_seg_too_big);
		return NULL;
	}
	return buf + hdrs;
}

/* The engine's seg_buf callback (ss_tcp_seg_buf_fn): room for a TCP
 * segment of @len bytes after the Ethernet and IPv4 headers of a frame to
 * the NIC or, for our own address, on the loopback queue; the frame's
 * handle waits in s->seg_handle for the segment's seg_send. */
static uint8_t *conn_seg_buf(void *arg, struct ss_tcp_conn *c, size_t len)
{
	struct ss_stack *s = arg;
	bool loop = c->remote_ip == s->ip;
	size_t cap, hdrs = SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN;
	uint8_t *buf = frame_get(s, loop, &s->seg_handle, &cap);

	if (!buf) {
		/* The engine keeps the segment queued.  A full loopback queue
		 * drains within the round: try again in the next flush rather
		 * than at the retransmission timer. */
		if (loop && c->f.state != SS_TCPS_CLOSED)
			stack_conn_dirty(s, sconn_of(c));
		return NULL;
	}
	if (hdrs + len > cap || len + SS_IPV4_HDR_MIN > 0xffff) {
		frame_put(s, loop, s->seg_handle, 0, 0);
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_seg_too_big);
		return NULL;
	}
	return buf + hdrs;
}

/* The seg_buf callback of a connection with TSO (ss_tcp_conn_set_tso():
 * a port with TSO and checksum offload, never the loopback queue):
 * conn_seg_buf(), or a 64 KiB frame for a segment of more than an MSS.
 * A callback of its own, so that connections without TSO do not test for
 * it per segment. */
static uint8_t *conn_seg_buf_tsoc(void *arg, struct ss_tcp_conn *c, size_t len)
{
	if (__builtin_expect(len > SS_TCP_HDR_MAX + (size_t)c->f.mss, 0))
		return conn_seg_buf_tso(arg, len);
	return conn_seg_buf(arg, c, len);
}

/* The IPv4 header (the next id; with @ol its checksum left 0 for the
 * port, else computed from the values: no struct, no pass over the header)
 * and the Ethernet header in front of the TCP segment of @len bytes at @l4. */
static inline __attribute__((always_inline)) void
conn_seg_lower_hdrs(struct ss_stack *s, struct ss_tcp_conn *c, uint8_t *l4, size_t len,
		    uint8_t ip_ecn, bool ol)
{
	uint8_t *l3 = l4 - SS_IPV4_HDR_MIN, *buf = l3 - SS_ETH_HDR_LEN;

	ss_ipv4_write(l3, ip_ecn & 3, /* DSCP 0; ECT(0) on new data when ECN is on */
		      (uint16_t)(SS_IPV4_HDR_MIN + len), s->ip_id++, IP_DF, TTL, SS_IPPROTO_TCP,
		      c->local_ip, c->remote_ip);
	if (ol)
		ss_wr16(l3 + 10, 0); /* the port's (it sums the header with the field 0) */
	memcpy(buf, sconn_of(c)->peer_mac, SS_ETH_ALEN);
	memcpy(buf + SS_ETH_ALEN, s->mac, SS_ETH_ALEN);
	ss_wr16(buf + 12, SS_ETHERTYPE_IPV4);
}

/* conn_seg_finish() for a TSO segment (with checksum offload only): the
 * TCP checksum field takes the pseudo-header sum without the length (the
 * port adds each cut segment's), the IPv4 header the whole length (the
 * port writes each one's), and the ids of all cut segments are taken. */
static __attribute__((noinline)) void conn_seg_finish_tso(struct ss_stack *s,
							  struct ss_tcp_conn *c, uint8_t *l4,
							  size_t hdr_len, size_t payload_len,
							  uint8_t ip_ecn)
{
	size_t len = hdr_len + payload_len;
	unsigned mss = c->f.mss;
	unsigned nseg = (unsigned)((payload_len + mss - 1) / mss);

	ss_tcp_csum_set_base(l4, 0, c->csum_base, true);
	conn_seg_lower_hdrs(s, c, l4, len, ip_ecn, true);
	s->ip_id = (uint16_t)(s->ip_id + nseg - 1); /* the port numbers the cut segments */
	s->io.frame_send_tso(s->io.arg, s->seg_handle, SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + len,
			     (unsigned)hdr_len, mss);
	ss_ctr_inc(s->ctr, SS_CTR_tx_tso_frames);
	ss_ctr_add(s->ctr, SS_CTR_tx_tcp_segments, nseg);
	ss_ctr_add(s->ctr, SS_CTR_tx_tcp_payload_bytes, payload_len);
}

/* A segment written at @l4 (conn_seg_buf()), its checksum field 0: the
 * checksum, or with @ol the pseudo-header sum for the port (never for the
 * loopback queue, which takes checksums as verified anyway), the IPv4 and
 * Ethernet headers, and the frame on its way.  Always inlined: one copy
 * per checksum mode, without a call (gcc would not inline it). */
static inline __attribute__((always_inline)) void
conn_seg_finish(struct ss_stack *s, struct ss_tcp_conn *c, uint8_t *l4, size_t hdr_len,
		size_t payload_len, uint8_t ip_ecn, bool ol)
{
	size_t len = hdr_len + payload_len;

	ss_tcp_csum_set_base(l4, len, c->csum_base, ol);
	conn_seg_lower_hdrs(s, c, l4, len, ip_ecn, ol);
	frame_put(s, c->remote_ip == s->ip, s->seg_handle, SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + len,
		  ol ? SS_TX_CSUM : 0);
	ss_ctr_inc(s->ctr, SS_CTR_tx_tcp_segments);
	if (payload_len)
		ss_ctr_add(s->ctr, SS_CTR_tx_tcp_payload_bytes, payload_len);
}

/* The engine's seg_send callbacks (ss_tcp_seg_send_fn), one per checksum
 * mode and one for TSO: the choice is made once per connection
 * (conn_setup()). */
static void conn_seg_send(void *arg, struct ss_tcp_conn *c, uint8_t *seg, size_t hdr_len,
			  size_t payload_len, uint8_t ip_ecn)
{
	conn_seg_finish(arg, c, seg, hdr_len, payload_len, ip_ecn, false);
}

static void conn_seg_send_ol(void *arg, struct ss_tcp_conn *c, uint8_t *seg, size_t hdr_len,
			     size_t payload_len, uint8_t ip_ecn)
{
	conn_seg_finish(arg, c, seg, hdr_len, payload_len, ip_ecn, true);
}

/* conn_seg_send_ol() for a connection with TSO: a segment of more than an
 * MSS (in a frame from conn_seg_buf_tsoc()) goes to the port to be cut. */
static void conn_seg_send_tso(void *arg, struct ss_tcp_conn *c, uint8_t *seg, size_t hdr_len,
			      size_t payload_len, uint8_t ip_ecn)
{
	if (__builtin_expect(payload_len > c->f.mss, 0))
		conn_seg_finish_tso(arg, c, seg, hdr_len, payload_len, ip_ecn);
	else
		conn_seg_finish(arg, c, seg, hdr_len, payload_len, ip_ecn, true);
}

/* The frame callbacks for a connection to @rip: one per checksum mode,
 * and with @tso (the port has it) TSO's, which need checksum offload and
 * are never for our own address. */
static void conn_frame_fns(const struct ss_stack *s, uint32_t rip, bool tso,
			   ss_tcp_seg_buf_fn *buf, ss_tcp_seg_send_fn *send)
{
	bool ol = rip != s->ip && (s->io.tx_offload & SS_TX_CSUM);

	tso = tso && ol;
	*buf = tso ? conn_seg_buf_tsoc : conn_seg_buf;
	*send = tso ? conn_seg_send_tso : ol ? conn_seg_send_ol : conn_seg_send;
}

/* The engine's emit callback, for the segments it does not write itself
 * (SYN, RST, SACK blocks, and every segment of a connection without the
 * direct callbacks): the header from @seg, the payload straight from the
 * transmit ring, through the frame callbacks of the connection's mode. */
static int conn_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct ss_stack *s = arg;
	size_t hdr_len = SS_TCP_HDR_MIN + ss_tcp_opts_len(&seg->hdr.opts);
	ss_tcp_seg_buf_fn buf;
	ss_tcp_seg_send_fn send;

	conn_frame_fns(s, c->remote_ip, c->tso_max != 0, &buf, &send);
	uint8_t *l4 = buf(s, c, hdr_len + seg->len);

	if (!l4)
		return -1;
	ss_tcp_hdr_write(l4, &seg->hdr);
	if (seg->len)
		ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, l4 + hdr_len, seg->len);
	send(s, c, l4, hdr_len, seg->len, seg->hdr.ip_ecn);
	return 0;
}

int stack_conn_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	return conn_emit(arg, c, seg);
}

static void arp_request(struct ss_stack *s, uint32_t target)
{
	void *handle;
	size_t cap;
	uint8_t *buf = s->io.frame_alloc(s->io.arg, &handle, &cap);
	if (!buf) {
		ss_ctr_inc(s->ctr, SS_CTR_drop_no_mbuf);
		return;
	}
	if (cap < SS_ETH_HDR_LEN + SS_ARP_LEN) {
		s->io.frame_send(s->io.arg, handle, 0, 0);
		return;
	}
	struct ss_eth eth = { .ethertype = SS_ETHERTYPE_ARP };
	struct ss_arp req = { .op = SS_ARP_OP_REQUEST, .spa = s->ip, .tpa = target };
	memset(eth.dst, 0xff, 6);
	memcpy(eth.src, s->mac, 6);
	memcpy(req.sha, s->mac, 6);
	ss_eth_build(buf, cap, &eth);
	size_t n = ss_arp_build(buf + SS_ETH_HDR_LEN, cap - SS_ETH_HDR_LEN, &req);
	s->io.frame_send(s->io.arg, handle, SS_ETH_HDR_LEN + n, 0);
	ss_ctr_inc(s->ctr, SS_CTR_tx_arp_request);
}

/* ---- the delayed-ACK queue (s->delack_q) ----------------------------------- */

static void delack_unlink(struct ss_sconn *sc)
{
	struct ss_timer *t = &sc->delack;

	if (!t->armed)
		return;
	ss_list_del(&t->link);
	t->armed = 0;
}

/* The timer whose list link is @l (the link is its first member). */
static inline struct ss_timer *delack_timer(struct ss_list *l)
{
	return SS_LIST_ENTRY(l, struct ss_timer, link);
}

/* Queued in deadline order on its hold's queue: at the tail, unless the
 * clock went back.  A queue's head is a timer too (a sentinel, never due),
 * so the walks read a deadline at every link. */
static void delack_queue(struct ss_stack *s, struct ss_sconn *sc, uint64_t deadline_us)
{
	struct ss_timer *q = &s->delack_q[0], *t = &sc->delack;
	struct ss_list *after;

	if (__builtin_expect(sc->tcp.delack_hold_us != s->params.delack_us, 0))
		q = &s->delack_q[ss_tcp_delack_step(&s->params, sc->tcp.delack_hold_us)];
	after = ss_list_last(&q->link);

	while (after != &q->link && delack_timer(after)->deadline_us > deadline_us)
		after = after->prev;
	t->deadline_us = deadline_us;
	t->armed = 1;
	ss_list_add_after(after, &t->link);
}

/* Delayed ACKs whose time has come (a head is due: stack_timers_run()). */
void stack_delack_run(struct ss_stack *s)
{
	for (unsigned i = 0; i < SS_TCP_DELACK_STEPS; i++) {
		struct ss_timer *q = &s->delack_q[i], *t;

		while ((t = delack_timer(q->link.next))->deadline_us <= s->now_us) {
			/* the sentinel stops it */
			struct ss_sconn *sc = (struct ss_sconn *)(void *)((uint8_t *)t -
									   offsetof(struct ss_sconn, delack));

			delack_unlink(sc);
			ss_tcp_timer(&sc->tcp, s->now_us);
			stack_conn_dirty(s, sc);
		}
	}
}

/* ---- set-up and teardown -------------------------------------------------- */

/* @n connections, zeroed, 64-byte aligned as struct ss_sconn asks (its
 * hot lines start on a line boundary); NULL on failure or overflow.
 * free() releases it. */
struct ss_sconn *stack_conns_alloc(size_t n)
{
	size_t sz = sizeof(struct ss_sconn);

	_Static_assert(_Alignof(struct ss_sconn) <= 64, "ss_bigmem_alloc aligns to 64");
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / sz)
		return NULL;
	return ss_bigmem_alloc(n * sz);
}

void stack_conns_free(struct ss_sconn *conns, size_t n)
{
	ss_bigmem_free(conns, (n ? n : 1) * sizeof(struct ss_sconn));
}

int ss_stack_init(struct ss_stack *s, const struct ss_stack_limits *lim,
		  const struct ss_tcp_params *params, struct ss_counters *ctr,
		  const uint8_t mac[6], uint32_t ip, uint8_t prefix_len, uint32_t gateway,
		  struct ss_arp_cache *arp, struct ss_app_reg *reg, unsigned fp_index,
		  const struct ss_stack_io *io)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->ctr = ctr;
	s->io = *io;
	s->params = *params;
	s->lim = *lim;
	if (!s->lim.local_port_lo || s->lim.local_port_lo > s->lim.local_port_hi) {
		s->lim.local_port_lo = SS_EPHEMERAL_LO;
		s->lim.local_port_hi = SS_EPHEMERAL_HI;
	}
	memcpy(s->mac, mac, 6);
	s->ip = ip;
	s->netmask = prefix_len ? ~0u << (32 - prefix_len) : 0;
	s->gateway = gateway;
	s->arp = arp;
	s->reg = reg;
	s->fp_index = fp_index;
	/* Secrets for ISNs (RFC 6528) and timestamp offsets (RFC 7323 §5.4). */
	FILE *f = fopen("/dev/urandom", "rb");
	bool ok = f && fread(s->isn_secret, 1, sizeof(s->isn_secret), f) == sizeof(s->isn_secret) &&
		  fread(&s->ts_seed, 1, sizeof(s->ts_seed), f) == sizeof(s->ts_seed);
	if (f)
		fclose(f);
	if (!ok)
		return -EIO;
	uint64_t seed;
	memcpy(&seed, s->isn_secret, sizeof(seed));
	if ((rc = ss_flow_table_init(&s->flows, lim->max_flows * 2, seed ^ s->ts_seed)) != 0)
		return rc;
	if ((rc = ss_timer_wheel_init(&s->wheel, lim->timer_slots, 1000, 0)) != 0)
		goto fail;
	if ((rc = ss_idpool_init(&s->conn_ids, lim->max_flows)) != 0)
		goto fail;
	if ((rc = stack_cc_init(s)) != 0)
		goto fail;
	if ((rc = stack_loop_init(s)) != 0)
		goto fail;
	if ((rc = stack_cookie_init(s)) != 0)
		goto fail;
	s->conns = stack_conns_alloc(lim->max_flows);
	s->listeners = calloc(lim->max_listeners, sizeof(*s->listeners));
	s->active = calloc(reg ? reg->lim.max_apps : 1, sizeof(*s->active));
	if (!s->conns || !s->listeners || !s->active) {
		rc = -ENOMEM;
		goto fail;
	}
	for (uint32_t i = 0; i < lim->max_flows; i++) {
		s->conns[i].id = i;
		ss_timer_init(&s->conns[i].timer);
		ss_timer_init(&s->conns[i].delack);
	}
	for (unsigned i = 0; i < SS_TCP_DELACK_STEPS; i++) {
		ss_list_init(&s->delack_q[i].link);
		s->delack_q[i].deadline_us = UINT64_MAX; /* a sentinel is never due */
	}
	return 0;
fail:
	ss_stack_fini(s);
	return rc;
}

void ss_stack_fini(struct ss_stack *s)
{
	ss_flow_table_fini(&s->flows);
	ss_timer_wheel_fini(&s->wheel);
	ss_idpool_fini(&s->conn_ids);
	stack_cc_fini(s);
	for (uint32_t i = 0; s->conns && i < s->lim.max_flows; i++)
		free(s->conns[i].orphan_buf);
	stack_loop_fini(s);
	stack_cookie_fini(s);
	stack_conns_free(s->conns, s->lim.max_flows);
	free(s->listeners);
	free(s->active);
	s->conns = NULL;
	s->listeners = NULL;
	s->active = NULL;
}

static struct ss_sconn *conn_alloc(struct ss_stack *s)
{
	int64_t id = ss_idpool_alloc(&s->conn_ids);
	if (id < 0)
		return NULL;
	struct ss_sconn *sc = &s->conns[id];
	memset(sc, 0, sizeof(*sc));
	sc->id = (uint32_t)id;
	ss_timer_init(&sc->timer);
	ss_timer_init(&sc->delack);
	__atomic_store_n(&s->n_flows, s->n_flows + 1, __ATOMIC_RELAXED);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_conn_created);
	return sc;
}

/* An orphan's data is all acknowledged (or the connection ended): the
 * service's copy goes. */
static void conn_orphan_free(struct ss_stack *s, struct ss_sconn *sc)
{
	ss_tcp_rings_release(&sc->tcp, (struct ss_tcp_ring){ .base = s->dead_ring,
							  .size = sizeof(s->dead_ring) });
	free(sc->orphan_buf);
	__atomic_store_n(&s->orphan_bytes, s->orphan_bytes - sc->orphan_size, __ATOMIC_RELAXED);
	sc->orphan_buf = NULL;
	sc->orphan_size = 0;
}

/* Last step for a connection the app has let go of and the engine has closed. */
static void conn_free(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->orphan_buf)
		conn_orphan_free(s, sc);
	ss_timer_cancel(&s->wheel, &sc->timer);
	delack_unlink(sc);
	stack_cc_conn_free(s, sc);
	if (sc->flags & SC_IN_TABLE)
		ss_flow_table_remove(&s->flows, &sc->key);
	sc->flags = 0;
	ss_idpool_free(&s->conn_ids, sc->id);
	__atomic_store_n(&s->n_flows, s->n_flows - 1, __ATOMIC_RELAXED);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_conn_freed);
}

/* The connection stops using the app's rings (app closed or gone). */
static void conn_detach_rings(struct ss_stack *s, struct ss_sconn *sc)
{
	ss_tcp_rings_release(&sc->tcp, (struct ss_tcp_ring){ .base = s->dead_ring,
							  .size = sizeof(s->dead_ring) });
}

/* The app's handle goes; the connection itself may live on. */
static void conn_unlink_slot(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_app *a = sc->app;

	if (sc->flags & SC_PENDING)
		stack_conn_unpend(sc);
	a->slot_conn[sc->slot] = NULL;
	ss_idpool_free(&a->slots, sc->slot);
	a->n_conns--;
	sc->app = NULL;
}

void stack_conn_release_slot(struct ss_stack *s, struct ss_sconn *sc)
{
	if (!sc->app)
		return;
	conn_unlink_slot(s, sc);
	conn_detach_rings(s, sc);
	stack_cc_conn_unowned(s, sc);
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 4096;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * The app exited (or crashed) holding @sc: close it as Linux closes the
 * sockets of a process that exits.  Unread data means a RST (inside
 * ss_tcp_close()); otherwise the data the app queued still goes out, then
 * a FIN.  The app's memory is about to be unmapped, so the unacknowledged
 * bytes are copied into a buffer of the service's own, within
 * max-orphan-mem; beyond that the connection is reset
 * (tcp_reset_orphan_mem).  Out of line: once per connection, at exit.
 */
static void conn_orphan(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	struct ss_tcp_ring spare = { .base = s->dead_ring, .size = sizeof(s->dead_ring) };
	struct ss_tcp_ring tx = spare;

	ss_tcp_close(c, s->now_us);
	uint8_t st = c->f.state;
	if (st == SS_TCPS_CLOSED || st == SS_TCPS_TIME_WAIT || st == SS_TCPS_FIN_WAIT_2) {
		stack_conn_release_slot(s, sc);
		return;
	}
	uint32_t queued = ss_tcp_tx_queued(c);
	if (queued) {
		tx.size = pow2_at_least(queued);
		tx.base = s->orphan_bytes + tx.size <= s->lim.max_orphan_mem ? malloc(tx.size) : NULL;
	}
	/* ss_tcp_orphan() fails only for a ring it cannot use: none here. */
	if (!tx.base || ss_tcp_orphan(c, tx, spare) != 0) {
		if (queued)
			free(tx.base);
		ss_tcp_abort(c, s->now_us);
		ss_ctr_inc(s->ctr, SS_CTR_tcp_reset_orphan_mem);
		stack_conn_release_slot(s, sc);
		return;
	}
	if (queued) {
		sc->orphan_buf = tx.base;
		sc->orphan_size = tx.size;
		__atomic_store_n(&s->orphan_bytes, s->orphan_bytes + tx.size, __ATOMIC_RELAXED);
	}
	/* Its application's cap (if any) still applies: the group stays. */
	conn_unlink_slot(s, sc);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_orphaned);
}

uint32_t stack_conn_ts_offset(const struct ss_stack *s, uint32_t iss)
{
	return (uint32_t)(s->ts_seed * (iss | 1)) ^ (uint32_t)(s->ts_seed >> 32);
}

static void conn_setup(struct ss_stack *s, struct ss_sconn *sc, struct ss_app *a, uint32_t slot,
		       uint16_t ctx, uint32_t rip, uint16_t rport, uint16_t lport, uint32_t iss)
{
	struct ss_tcp_ring rx, tx;

	stack_slot_start_rings(a, slot, &rx, &tx);
	ss_tcp_conn_init(&sc->tcp, &s->params, s->ip, lport, rip, rport, iss,
			 stack_conn_ts_offset(s, iss), rx, tx, conn_emit, s);
	ss_tcp_conn_rx_room(&sc->tcp, a->rxbuf_size); /* the scale for the large ring */
	ss_tcp_seg_buf_fn buf;
	ss_tcp_seg_send_fn send;
	conn_frame_fns(s, rip, s->io.tso_max != 0, &buf, &send);
	ss_tcp_conn_set_direct(&sc->tcp, buf, send);
	if (buf == conn_seg_buf_tsoc)
		ss_tcp_conn_set_tso(&sc->tcp, s->io.tso_max);
	sc->key = (struct ss_flow_key){ .local_ip = s->ip, .remote_ip = rip,
					.local_port = lport, .remote_port = rport };
	stack_conn_set_handle(s, sc, a, slot, ctx);
}

void stack_conn_set_handle(struct ss_stack *s, struct ss_sconn *sc, struct ss_app *a,
			   uint32_t slot, uint16_t ctx)
{
	sc->app = a;
	sc->slot = slot;
	sc->gen = ss_idpool_gen(&a->slots, slot);
	bool behind;
	if (ss_app_slot_taken(a, slot, &behind)) {
		/* Past the kick mark: the control thread populates further ahead. */
		ss_ctr_inc(s->ctr, SS_CTR_app_populate_kicks);
		stack_wake_control(s, a, "populate");
	}
	if (behind)
		ss_ctr_inc(s->ctr, SS_CTR_app_slot_unpopulated);
	sc->ctx = ctx;
	a->slot_conn[slot] = sc;
	a->n_conns++;
	sc->cc.published_us = 0; /* the new owner's TCP_INFO record at the next sample */
	sc->info_state = SS_TCPS_MAX; /* ... and at the next collect */
	/* A new handle: its sync words start off (abi.h, fork). */
	struct ss_shm_conn_sync *w = ss_app_sync(a, slot);
	__atomic_store_n(&w->tx, ss_sync_word(sc->gen, 0, sc->tcp.f.tx_tail), __ATOMIC_RELEASE);
	__atomic_store_n(&w->rx, ss_sync_word(sc->gen, 0, sc->tcp.f.rx_head), __ATOMIC_RELEASE);
}

void stack_conn_dirty(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->flags & SC_DIRTY)
		return;
	sc->flags |= SC_DIRTY;
	sc->dirty_next = s->dirty;
	s->dirty = sc;
}

void stack_conn_pend(struct ss_sconn *sc)
{
	struct ss_app_ctx *cx = &sc->app->ctx[sc->ctx];
	sc->flags |= SC_PENDING;
	sc->pend_next = cx->pending;
	cx->pending = sc;
}

void stack_conn_unpend(struct ss_sconn *sc)
{
	struct ss_app_ctx *cx = &sc->app->ctx[sc->ctx];
	for (struct ss_sconn **pp = &cx->pending; *pp; pp = &(*pp)->pend_next)
		if (*pp == sc) {
			*pp = sc->pend_next;
			break;
		}
	sc->flags &= (uint8_t)~SC_PENDING;
	sc->pend_next = NULL;
}

void stack_wake_control(struct ss_stack *s, const struct ss_app *a, const char *why)
{
	uint64_t one = 1;

	if (write(s->reg->reclaim_fd, &one, sizeof(one)) < 0)
		SS_WARN("app %u: %s kick: %s", a->id, why, strerror(errno));
}

struct ss_sconn *stack_conn_lookup_handle(struct ss_stack *s, struct ss_app *a, uint32_t slot,
					  uint32_t gen)
{
	(void)s;
	if (slot >= a->max_conns || !ss_idpool_valid(&a->slots, slot, gen))
		return NULL;
	return a->slot_conn[slot];
}

/* ---- receive -------------------------------------------------------------- */

struct ss_sconn *stack_conn_passive(struct ss_stack *s, struct ss_lmember *m, const uint8_t *frame,
				    const struct ss_ipv4 *ip, const struct ss_tcp *seg,
				    uint32_t iss)
{
	struct ss_app *a = m->app;
	int64_t slot = ss_idpool_alloc(&a->slots);
	if (slot < 0) {
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_app_conns_full);
		return NULL;
	}
	struct ss_sconn *sc = conn_alloc(s);
	if (!sc) {
		ss_idpool_free(&a->slots, (uint32_t)slot);
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_flows_full);
		return NULL;
	}
	conn_setup(s, sc, a, (uint32_t)slot, m->ctx, ip->src, seg->sport, seg->dport, iss);
	memcpy(sc->peer_mac, frame + 6, 6);
	sc->flags |= SC_PASSIVE;
	sc->cookie = m->cookie;
	if (ss_flow_table_insert(&s->flows, &sc->key, sc) != 0) {
		stack_conn_release_slot(s, sc);
		conn_free(s, sc);
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_flows_full);
		return NULL;
	}
	sc->flags |= SC_IN_TABLE;
	return sc;
}

/* A SYN for a listening port: a connection in SYN_RCVD with a slot of the
 * listener's app, so data that follows the handshake has a ring to go to.
 * Past the listener's backlog of half-open connections, a SYN cookie
 * answers instead (stack_cookie.c), or the SYN is dropped. */
static void passive_open(struct ss_stack *s, struct ss_listener *l, uint32_t li,
			 const uint8_t *frame, const struct ss_ipv4 *ip, const struct ss_tcp *seg)
{
	struct ss_lmember *m = stack_listener_pick(l);

	if (!m) {
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_listener_gone);
		return;
	}
	bool full = l->n_syn >= l->backlog;
	if (full || s->lim.syn_cookies == SS_SYN_COOKIES_ALWAYS) {
		if (s->lim.syn_cookies != SS_SYN_COOKIES_OFF && stack_cookie_synack(s, m, frame, ip, seg))
			return;
		if (full) {
			ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_backlog);
			return;
		}
	}
	uint32_t iss = ss_tcp_isn(s->isn_secret, s->ip, seg->dport, ip->src, seg->sport, s->now_us);
	struct ss_sconn *sc = stack_conn_passive(s, m, frame, ip, seg, iss);
	if (!sc)
		return;
	sc->listener = (uint16_t)(li + 1);
	l->n_syn++;
	ss_ctr_inc(s->ctr, SS_CTR_tcp_passive_open);
	stack_opts_inherit(s, l, sc);
	ss_tcp_accept_syn(&sc->tcp, seg, s->now_us);
	stack_conn_dirty(s, sc);
}

static bool tcp_input_no_conn(struct ss_stack *s, const uint8_t *frame, const struct ss_ipv4 *ip,
			      const struct ss_tcp *seg, const struct ss_flow_key *kp);

/* ---- receive bursts: connections looked up ahead ------------------------- */

/* Segments ahead of the one being handled whose connections are looked up
 * and prefetched: a miss (~100-150 ns here) is over before their turn.
 * Nearer, whose receive-ring line is prefetched: that address is read
 * from the connection, whose lines were prefetched RX_AHEAD_DIST -
 * RX_RING_DIST segments before. */
#define RX_AHEAD_DIST 4u
#define RX_RING_DIST 2u

/* The lines a segment's receive path touches: the service's three (the
 * dirty list, flags, the app's counts, the timers; the send step's part of
 * the congestion control, which the round's flush reads) and the engine's
 * hot part (struct ss_sconn's layout).  always_inline: as a plain static
 * inline gcc found it const (nothing but prefetches) and deleted every
 * call, so until 2026-11-22 no line was prefetched (ss_tcp_rx_prefetch()). */
#define SCONN_LINE(f) (offsetof(struct ss_sconn, f) / 64)
_Static_assert(SCONN_LINE(timer) == 0 && SCONN_LINE(timer.armed) == 0 &&
		       SCONN_LINE(timer_want_us) == 0 && SCONN_LINE(flags) == 0,
	       "a lazy timer fire reads the connection's first line only");
_Static_assert(SCONN_LINE(cc.ops) == 2 && SCONN_LINE(cc.host_grp) == 2 && SCONN_LINE(cc.paced) == 2 &&
		       SCONN_LINE(cc.shared) == 2 && SCONN_LINE(cc.charged) == 2 &&
		       SCONN_LINE(cc.pf.next_ns) == 2 && SCONN_LINE(cc.pf.rem) == 2 &&
		       (offsetof(struct ss_sconn, cc.pf.group) + 7) / 64 == 2,
	       "the send step's congestion-control fields share the connection's third line");

/* The engine's part a segment and its reply read: struct ss_tcp_conn up to
 * the path counts (st.fast_path, st.slow_path) that every segment bumps,
 * and emit_arg, which every segment sent reads. */
#define SCONN_TCP_HOT_LINES 6u
_Static_assert((offsetof(struct ss_tcp_conn, st.slow_path) + 8 + 63) / 64 == SCONN_TCP_HOT_LINES &&
		       offsetof(struct ss_tcp_conn, emit_arg) / 64 < SCONN_TCP_HOT_LINES,
	       "the engine's hot part is SCONN_TCP_HOT_LINES lines");

static inline __attribute__((always_inline)) void sconn_prefetch(const struct ss_sconn *sc)
{
	const char *t = (const char *)&sc->tcp;

	__builtin_prefetch(sc, 1, 3);
	__builtin_prefetch((const char *)sc + 64, 1, 3);
	__builtin_prefetch((const char *)sc + 128, 1, 3);
#pragma GCC unroll 8
	for (unsigned i = 0; i < SCONN_TCP_HOT_LINES; i++)
		__builtin_prefetch(t + 64 * i, 1, 3);
}

/* Looks up the burst's keys up to index @upto (within the burst). */
static void rx_ahead_resolve(struct ss_stack *s, unsigned upto)
{
	struct ss_stack_rx_ahead *ra = &s->rxa;
	unsigned end = upto < ra->n ? upto + 1 : ra->n;

	for (unsigned i = ra->resolved; i < end; i++) {
		struct ss_sconn *sc = ss_flow_table_lookup_hashed(&s->flows, &ra->key[i],
								  ra->hash[i]);

		ra->sc[i] = sc;
		ra->gen[i] = s->flows.gen;
		if (sc)
			sconn_prefetch(sc);
	}
	if (end > ra->resolved)
		ra->resolved = (uint16_t)end;
}

void ss_stack_rx_prefetch(struct ss_stack *s, const struct ss_flow_key *keys, unsigned n)
{
	struct ss_stack_rx_ahead *ra = &s->rxa;

	if (n > SS_STACK_RX_AHEAD)
		n = SS_STACK_RX_AHEAD;
	for (unsigned i = 0; i < n; i++) {
		ra->key[i] = keys[i];
		ra->hash[i] = ss_flow_table_prefetch(&s->flows, &keys[i]);
	}
	ra->n = (uint16_t)n;
	ra->next = 0;
	ra->resolved = 0;
	rx_ahead_resolve(s, RX_AHEAD_DIST - 1);
}

/* @k's connection: the burst's answer when it is the next key (or the one
 * after: a frame the receive path dropped) and still valid, else a lookup. */
static inline struct ss_sconn *rx_conn(struct ss_stack *s, const struct ss_flow_key *k)
{
	struct ss_stack_rx_ahead *ra = &s->rxa;
	unsigned j = ra->next;

	if (j < ra->n && !ss_flow_key_eq(&ra->key[j], k))
		j++;
	if (j >= ra->n) /* past the burst: looped-back segments */
		return ss_flow_table_lookup(&s->flows, k);
	if (!ss_flow_key_eq(&ra->key[j], k)) {
		ss_ctr_inc(s->ctr, SS_CTR_rx_ahead_misses);
		return ss_flow_table_lookup(&s->flows, k);
	}
	ra->next = (uint16_t)(j + 1);
	rx_ahead_resolve(s, j + RX_AHEAD_DIST);
	if (j + RX_RING_DIST < ra->resolved && ra->sc[j + RX_RING_DIST] &&
	    ra->gen[j + RX_RING_DIST] == s->flows.gen)
		ss_tcp_rx_prefetch(&ra->sc[j + RX_RING_DIST]->tcp);
	if (ra->gen[j] != s->flows.gen) { /* the table changed since */
		ss_ctr_inc(s->ctr, SS_CTR_rx_ahead_stale);
		return ss_flow_table_lookup_hashed(&s->flows, k, ra->hash[j]);
	}
	return ra->sc[j];
}

bool ss_stack_tcp_input(void *arg, const uint8_t *frame, const struct ss_ipv4 *ip,
			const struct ss_tcp *seg)
{
	struct ss_stack *s = arg;
	struct ss_flow_key k = { .local_ip = ip->dst, .remote_ip = ip->src,
				 .local_port = seg->dport, .remote_port = seg->sport };
	struct ss_sconn *sc = rx_conn(s, &k);

	if (sc) {
		uint64_t fast = sc->tcp.st.fast_path;
		ss_tcp_input(&sc->tcp, seg, s->now_us);
		ss_ctr_inc(s->ctr, sc->tcp.st.fast_path != fast ? SS_CTR_rx_tcp_fast
								: SS_CTR_rx_tcp_slow);
		stack_conn_dirty(s, sc);
		return true;
	}
	return tcp_input_no_conn(s, frame, ip, seg, &k);
}

/* A segment for no connection: a SYN for a listener, an ACK that may
 * return a SYN cookie, or one a listener drops.  Out of line: the usual
 * segment's frame above stays small (fewer registers saved per segment). */
static __attribute__((noinline)) bool tcp_input_no_conn(struct ss_stack *s, const uint8_t *frame,
							 const struct ss_ipv4 *ip,
							 const struct ss_tcp *seg,
							 const struct ss_flow_key *kp)
{
	struct ss_flow_key k = *kp;

	if ((seg->flags & (SS_TCP_SYN | SS_TCP_ACK | SS_TCP_RST | SS_TCP_FIN)) == SS_TCP_SYN) {
		uint32_t li;
		struct ss_listener *l = stack_listener_find(s, &k, &li);
		if (l) {
			ss_ctr_inc(s->ctr, SS_CTR_rx_tcp_syn);
			passive_open(s, l, li, frame, ip, seg);
			return true;
		}
	} else if (!(seg->flags & (SS_TCP_SYN | SS_TCP_ACK | SS_TCP_RST))) {
		/* RFC 9293 §3.10.7.2 LISTEN, fourth: "Any other control or
		 * text-bearing segment (not containing SYN) must have an ACK
		 * ... drop the segment and return."  No reset: that is for a
		 * port nobody listens on (§3.10.7.1), and for an ACK (second). */
		uint32_t li;
		if (stack_listener_find(s, &k, &li)) {
			ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_listen_no_ack);
			return true;
		}
	}
	/* An ACK for no connection may return a SYN cookie. */
	if (s->now_us < s->cookie_until_us)
		return stack_cookie_ack(s, frame, ip, seg);
	return false;
}

/* ---- active open ---------------------------------------------------------- */

/* Our own address is fine once the loopback path is set up; 127/8 is
 * the kernel's (the POSIX layer never sends it here). */
static bool addr_bad(const struct ss_stack *s, uint32_t ip)
{
	if (ip == s->ip)
		return !s->loop.rx;
	return ip == 0 || ip == 0xffffffffu || (ip >> 28) >= 0xe || (ip >> 24) == 127 ||
	       (s->netmask != ~0u && ip == (s->ip | ~s->netmask));
}

/*
 * TIME_WAIT reuse for connect() (--tw-reuse; Linux's tcp_tw_reuse = 1): a
 * 4-tuple whose connection has been in TIME_WAIT for SS_TW_REUSE_AFTER_US
 * or more, with timestamps on it, may be taken by a new connection.  What
 * TIME_WAIT guards against, old segments taken for new ones, stays
 * guarded: the new connection starts its sequence space past the old one
 * plus a maximal unscaled window (stack_conn_connect()), and its PAWS check
 * (RFC 7323) drops the peer's old segments, whose timestamps are older
 * than the new handshake's.  Not while the connection is on the dirty
 * list (it is freed only from there).
 */
#define SS_TW_REUSE_AFTER_US 1000000u

static bool tw_reusable(const struct ss_stack *s, const struct ss_sconn *sc)
{
	const struct ss_tcp_conn *c = &sc->tcp;
	return s->lim.tw_reuse && c->f.state == SS_TCPS_TIME_WAIT && !sc->app &&
	       (c->f.flags & SS_TCPF_TS) && !(sc->flags & SC_DIRTY) && c->tw_deadline_us &&
	       s->now_us + c->params->time_wait_us >= c->tw_deadline_us + SS_TW_REUSE_AFTER_US;
}

/* A local port for a connection to rip:rport: a free one, or one whose
 * 4-tuple is in a reusable TIME_WAIT (*tw, to be retired); the first of
 * either from a pseudo-random start, as Linux. */
static int pick_port(struct ss_stack *s, uint32_t rip, uint16_t rport, uint16_t *out,
		     struct ss_sconn **tw)
{
	uint32_t lo = s->lim.local_port_lo, span = s->lim.local_port_hi - lo + 1;
	uint32_t start = (uint32_t)((s->ts_seed ^ (s->now_us * 0x9e3779b97f4a7c15ull)) >> 40) % span;
	*tw = NULL;
	for (uint32_t i = 0; i < span; i++) {
		uint16_t p = (uint16_t)(lo + (start + i) % span);
		struct ss_flow_key k = { s->ip, rip, p, rport };
		struct ss_sconn *old = ss_flow_table_lookup(&s->flows, &k);
		if (old && !tw_reusable(s, old))
			continue;
		if (stack_port_in_use(s, p))
			continue;
		*out = p;
		*tw = old;
		return 0;
	}
	return -EADDRNOTAVAIL;
}

static uint32_t next_hop(const struct ss_stack *s, uint32_t ip)
{
	if ((ip & s->netmask) == (s->ip & s->netmask))
		return ip;
	return s->gateway;
}

static void arp_wait_add(struct ss_stack *s, struct ss_sconn *sc)
{
	sc->flags |= SC_ARP_WAIT;
	sc->arp_next = s->arp_wait;
	s->arp_wait = sc;
	s->arp_pending++;
}

static void arp_wait_remove(struct ss_stack *s, struct ss_sconn *sc)
{
	if (!(sc->flags & SC_ARP_WAIT))
		return;
	for (struct ss_sconn **pp = &s->arp_wait; *pp; pp = &(*pp)->arp_next)
		if (*pp == sc) {
			*pp = sc->arp_next;
			break;
		}
	sc->arp_next = NULL;
	sc->flags &= (uint8_t)~SC_ARP_WAIT;
	s->arp_pending--;
}

/* Sends the SYN once the next hop's MAC is known. */
static void active_start(struct ss_stack *s, struct ss_sconn *sc)
{
	arp_wait_remove(s, sc);
	ss_timer_cancel(&s->wheel, &sc->timer);
	ss_tcp_connect(&sc->tcp, s->now_us);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_active_open);
	stack_conn_dirty(s, sc);
}

int stack_conn_connect(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		       const struct ss_shm_cmd *cmd)
{
	uint32_t ip = cmd->ip;
	uint16_t port = cmd->port, lport;
	struct ss_sconn *tw = NULL;

	if (port == 0 || addr_bad(s, ip) || !stack_opt_valid(SS_OPT_MAXSEG, cmd->arg))
		return -EINVAL;
	uint32_t hop = next_hop(s, ip);
	if (hop == 0)
		return -ENETUNREACH;
	if (cmd->flags & SS_CMDF_BOUND) {
		/* bind() then connect(): from the bound port, which the
		 * connection now holds instead of the entry. */
		struct ss_flow_key k;
		if (stack_port_take(s, a, cmd->conn, &lport) != 0)
			return -EINVAL;
		k = (struct ss_flow_key){ s->ip, ip, lport, port };
		tw = ss_flow_table_lookup(&s->flows, &k);
		if (tw && !tw_reusable(s, tw))
			return -EADDRNOTAVAIL;
	} else if (pick_port(s, ip, port, &lport, &tw) != 0) {
		return -EADDRNOTAVAIL;
	}
	uint64_t cookie = cmd->cookie;
	int64_t slot = ss_idpool_alloc(&a->slots);
	if (slot < 0)
		return -EMFILE;
	uint32_t iss = ss_tcp_isn(s->isn_secret, s->ip, lport, ip, port, s->now_us);
	if (tw) {
		/* Past everything the old connection sent, and a window
		 * more, as Linux (its snd_nxt + 65535 + 2). */
		iss = tw->tcp.f.snd_nxt + 65537u;
		conn_free(s, tw);
		ss_ctr_inc(s->ctr, SS_CTR_tcp_tw_reused);
	}
	struct ss_sconn *sc = conn_alloc(s);
	if (!sc) {
		ss_idpool_free(&a->slots, (uint32_t)slot);
		return -ENOBUFS;
	}
	conn_setup(s, sc, a, (uint32_t)slot, ctx, ip, port, lport, iss);
	sc->cookie = cookie;
	ss_tcp_setopt(&sc->tcp, SS_TCP_OPT_MAXSEG, cmd->arg, s->now_us); /* for the SYN */
	if (ss_flow_table_insert(&s->flows, &sc->key, sc) != 0) {
		stack_conn_release_slot(s, sc);
		conn_free(s, sc);
		return -ENOBUFS;
	}
	sc->flags |= SC_IN_TABLE;
	if (ip == s->ip) {
		/* Loopback: no ARP, the frames never leave the stack. */
		memcpy(sc->peer_mac, s->mac, 6);
		active_start(s, sc);
	} else if (ss_arp_cache_lookup(s->arp, hop, sc->peer_mac, NULL)) {
		active_start(s, sc);
	} else {
		arp_wait_add(s, sc);
		sc->arp_tries = 1;
		arp_request(s, hop);
		ss_timer_arm(&s->wheel, &sc->timer, s->now_us + SS_ARP_RETRY_US);
	}
	return 0;
}

/* After an RX burst: active opens whose next hop has been resolved. */
void stack_arp_poll(struct ss_stack *s)
{
	struct ss_sconn *sc = s->arp_wait;
	while (sc) {
		struct ss_sconn *next = sc->arp_next;
		if (ss_arp_cache_lookup(s->arp, next_hop(s, sc->key.remote_ip), sc->peer_mac, NULL))
			active_start(s, sc);
		sc = next;
	}
}

static void arp_timeout(struct ss_stack *s, struct ss_sconn *sc)
{
	uint32_t hop = next_hop(s, sc->key.remote_ip);
	if (ss_arp_cache_lookup(s->arp, hop, sc->peer_mac, NULL)) {
		active_start(s, sc);
		return;
	}
	if (sc->arp_tries < SS_ARP_TRIES) {
		sc->arp_tries++;
		arp_request(s, hop);
		ss_timer_arm(&s->wheel, &sc->timer, s->now_us + SS_ARP_RETRY_US);
		return;
	}
	/* Like Linux: connect() fails with EHOSTUNREACH when ARP gets no answer. */
	arp_wait_remove(s, sc);
	sc->tcp.error = EHOSTUNREACH;
	sc->tcp.events |= SS_TCP_EV_ERROR | SS_TCP_EV_CLOSED;
	ss_ctr_inc(s->ctr, SS_CTR_tcp_arp_failed);
	stack_conn_dirty(s, sc);
}

/* ---- application requests -------------------------------------------------- */

void stack_conn_app_close(struct ss_stack *s, struct ss_sconn *sc, bool abort)
{
	if (stack_conn_close_held(s, sc, abort))
		return; /* a forked process still holds it: the last one closes */
	sc->flags |= SC_APP_CLOSED;
	if (sc->flags & SC_ARP_WAIT) {
		arp_wait_remove(s, sc);
		ss_timer_cancel(&s->wheel, &sc->timer);
	}
	if (abort)
		ss_tcp_abort(&sc->tcp, s->now_us);
	else
		ss_tcp_close(&sc->tcp, s->now_us);
	stack_conn_dirty(s, sc);
}

/*
 * The app let go of a socket still connecting: it has no handle yet, only
 * the CONNECT's cookie.  RFC 9293 §3.10.4 (CLOSE) and §3.10.5 (ABORT) in
 * SYN-SENT: delete the TCB, send nothing; the flow leaves the table at
 * the flush, so a SYN-ACK that comes later is reset (§3.10.7.1).  The
 * handle never reaches the app: no event.  A connection whose SYN-ACK came
 * in this round, before the command, is reset like any open one.  A scan
 * of the app's slots: once per such close.
 */
void stack_conn_cancel(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint64_t cookie)
{
	for (uint32_t slot = 0; slot < a->max_conns; slot++) {
		struct ss_sconn *sc = a->slot_conn[slot];
		if (!sc || sc->ctx != ctx || sc->cookie != cookie ||
		    (sc->flags & (SC_PASSIVE | SC_ANNOUNCED | SC_APP_CLOSED)))
			continue;
		if (sc->flags & SC_ARP_WAIT) {
			arp_wait_remove(s, sc);
			ss_timer_cancel(&s->wheel, &sc->timer);
		}
		sc->flags |= SC_APP_CLOSED;
		ss_tcp_abort(&sc->tcp, s->now_us);
		sc->ev_pending = 0;
		stack_conn_release_slot(s, sc);
		stack_conn_dirty(s, sc);
		return;
	}
}

/* The app hung up or broke: reset what is open, let go of every slot. */
void stack_conn_app_gone(struct ss_stack *s, struct ss_app *a)
{
	for (uint32_t slot = 0; slot < a->max_conns; slot++) {
		struct ss_sconn *sc = a->slot_conn[slot];
		if (!sc)
			continue;
		arp_wait_remove(s, sc);
		enum ss_tcp_state st = sc->tcp.f.state;
		/* A connection the app knew of (announced, past the handshake)
		 * closes gracefully, unless the app was cut off for breaking
		 * the rules; the rest are reset. */
		if (!a->broken && (sc->flags & SC_ANNOUNCED) && !sc->listener &&
		    st != SS_TCPS_CLOSED && st != SS_TCPS_TIME_WAIT && st != SS_TCPS_SYN_SENT &&
		    st != SS_TCPS_SYN_RCVD) {
			sc->flags |= SC_APP_CLOSED;
			sc->ev_pending = 0;
			stack_conn_sync_claim(s, sc); /* written before it went */
			conn_orphan(s, sc);
			stack_conn_dirty(s, sc);
			continue;
		}
		if (st != SS_TCPS_CLOSED && st != SS_TCPS_TIME_WAIT) {
			ss_tcp_abort(&sc->tcp, s->now_us);
			ss_ctr_inc(s->ctr, SS_CTR_tcp_reset_app_gone);
		}
		if (sc->listener) {
			struct ss_listener *l = &s->listeners[sc->listener - 1];
			if (l->n_syn)
				l->n_syn--;
			sc->listener = 0;
		}
		sc->flags |= SC_APP_CLOSED;
		sc->ev_pending = 0;
		stack_conn_release_slot(s, sc);
		stack_conn_dirty(s, sc);
	}
	stack_listeners_app_gone(s, a);
	stack_inh_app_gone(s, a);
}

void stack_listener_abort_syn(struct ss_stack *s, uint32_t li)
{
	for (uint32_t i = 0; i < s->lim.max_flows; i++) {
		struct ss_sconn *sc = &s->conns[i];
		if (sc->listener == li + 1 && sc->tcp.f.state == SS_TCPS_SYN_RCVD) {
			ss_tcp_abort(&sc->tcp, s->now_us);
			stack_conn_dirty(s, sc);
		}
	}
}

/* ---- timers and the end of a round ----------------------------------------- */

static void conn_sync_timer(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->flags & SC_ARP_WAIT)
		return;
	/* The delayed ACK: queued, moved or taken off as the engine set or
	 * cleared it (the reply carried the ACK). */
	uint64_t dl = sc->tcp.delack_deadline_us;
	if (dl != (sc->delack.armed ? sc->delack.deadline_us : 0)) {
		delack_unlink(sc);
		if (dl)
			delack_queue(s, sc, dl);
	}
	uint64_t d = ss_tcp_next_deadline_no_delack(&sc->tcp);
	/* Lazy: an earlier deadline re-arms; a later one, or none (an ACK
	 * of everything stopped the RTO), waits for the armed timer to fire
	 * and re-arm or stop (ACKs then cost no wheel work).  The fire reads
	 * the deadline from timer_want_us, in the timer's line: every change
	 * to the engine's deadlines is followed by this sync (the flush). */
	sc->timer_want_us = d;
	if (d && (!ss_timer_armed(&sc->timer) || d < sc->timer.deadline_us))
		ss_timer_arm(&s->wheel, &sc->timer, d);
}

void stack_conn_timers_run(struct ss_stack *s)
{
	struct ss_timer *due[64];
	unsigned n;

	do {
		n = ss_timer_wheel_expire(&s->wheel, s->now_us, due, 64);
		for (unsigned i = 0; i < n; i++) {
			struct ss_sconn *sc = (struct ss_sconn *)(void *)((uint8_t *)due[i] -
									   offsetof(struct ss_sconn, timer));
			if (sc->flags & SC_ARP_WAIT) {
				arp_timeout(s, sc);
				continue;
			}
			/* Lazy arming (conn_sync_timer) lets a timer fire after
			 * its deadline went away or moved later (a send pushed
			 * the tail-loss probe back): then nothing is due, and
			 * it only goes back on the wheel, from the timer's own
			 * line (an RPC connection, never without data in
			 * flight, does this once per probe timeout). */
			uint64_t d = sc->timer_want_us;
			if (d > s->now_us) {
				ss_ctr_inc(s->ctr, SS_CTR_tcp_timer_rearms);
				ss_timer_arm(&s->wheel, &sc->timer, d);
				continue;
			}
			if (d == 0 && sc->tcp.f.state != SS_TCPS_CLOSED)
				continue; /* nothing armed any more */
			ss_tcp_timer(&sc->tcp, s->now_us);
			stack_conn_dirty(s, sc);
		}
	} while (n == 64);
}

/* Adds the engine's per-connection counts to the thread's counters. */
static void conn_stats_drain(struct ss_stack *s, struct ss_tcp_conn_stats *st)
{
#define DRAIN(field, id)                                    \
	if (st->field) {                                    \
		ss_ctr_add(s->ctr, SS_CTR_##id, st->field);  \
		st->field = 0;                              \
	}
	DRAIN(retrans_segs, tcp_retrans_segs)
	DRAIN(fast_retrans, tcp_fast_retrans)
	DRAIN(rto_fired, tcp_rto_fired)
	DRAIN(drop_out_of_window, drop_tcp_out_of_window)
	DRAIN(drop_old_ack, drop_tcp_old_ack)
	DRAIN(drop_future_ack, drop_tcp_future_ack)
	DRAIN(drop_ooo_outside, drop_tcp_ooo_outside)
	DRAIN(ooo_evicted, tcp_ooo_evicted)
	DRAIN(rst_rcvd, tcp_rst_rcvd)
	DRAIN(rst_ignored, drop_tcp_rst_ignored)
	DRAIN(challenge_acks, tcp_challenge_acks)
	DRAIN(dup_data, tcp_dup_data_bytes)
	DRAIN(lost_rexmits, tcp_lost_rexmits)
	DRAIN(sack_rexmits, tcp_sack_rexmits)
	DRAIN(rescue_rexmits, tcp_rescue_rexmits)
	DRAIN(sack_reneged, tcp_sack_reneged)
	DRAIN(drop_paws, drop_tcp_paws)
	DRAIN(drop_no_ts, drop_tcp_no_ts)
	DRAIN(drop_no_ack, drop_tcp_no_ack)
	DRAIN(drop_syn_sent, drop_tcp_syn_sent)
	DRAIN(challenge_ack_limited, tcp_challenge_ack_limited)
	DRAIN(oow_ack_limited, tcp_oow_ack_limited)
	DRAIN(dup_acks, tcp_dup_acks)
	DRAIN(persist_probes, tcp_persist_probes)
	DRAIN(ka_probes, tcp_ka_probes)
	DRAIN(ka_timeouts, tcp_ka_timeouts)
	DRAIN(rst_sent, tcp_rst_sent)
	DRAIN(data_after_close, tcp_reset_data_after_close)
	DRAIN(tail_probes, tcp_tail_probes)
	DRAIN(rack_lost, tcp_rack_lost)
	DRAIN(rack_timeouts, tcp_rack_timeouts)
	DRAIN(ce_segs, tcp_ce_segs)
	DRAIN(ecn_reductions, tcp_ecn_reductions)
	DRAIN(ecn_echoes, tcp_ecn_echoes)
	DRAIN(delack_acks, tcp_delack_acks)
	DRAIN(delack_longer, tcp_delack_longer)
	DRAIN(delack_shorter, tcp_delack_shorter)
#undef DRAIN
}

/* conn_collect()'s events of a connection's start and end: a listener's
 * half-open count, and the counters. */
static __attribute__((noinline, cold)) void conn_collect_rare(struct ss_stack *s,
							      struct ss_sconn *sc, uint8_t ev)
{
	if ((ev & SS_TCP_EV_CONNECTED) && sc->listener) {
		struct ss_listener *l = &s->listeners[sc->listener - 1];
		if (l->n_syn)
			l->n_syn--;
		sc->listener = 0;
	}
	if (ev & SS_TCP_EV_CLOSED)
		ss_ctr_inc(s->ctr, SS_CTR_tcp_conn_closed);
	if (ev & SS_TCP_EV_RESET)
		ss_ctr_inc(s->ctr, SS_CTR_tcp_reset_rcvd);
	if ((ev & SS_TCP_EV_ERROR) && sc->tcp.error == ETIMEDOUT)
		ss_ctr_inc(s->ctr, SS_CTR_tcp_timeout);
}

/* Moves the engine's events to the connection's pending set. */
static void conn_collect(struct ss_stack *s, struct ss_sconn *sc)
{
	struct ss_tcp_conn *c = &sc->tcp;
	uint8_t ev = c->events;

	if (c->st_new) {
		c->st_new = 0;
		sc->total_retrans += (uint32_t)c->st.retrans_segs; /* for TCP_INFO */
		conn_stats_drain(s, &c->st);
	}
	if (!ev)
		return;
	if (__builtin_expect(ev & (SS_TCP_EV_CONNECTED | SS_TCP_EV_CLOSED | SS_TCP_EV_RESET |
				   SS_TCP_EV_ERROR), 0))
		conn_collect_rare(s, sc, ev);
	if (sc->app && !(sc->flags & SC_APP_CLOSED)) {
		sc->ev_pending |= ev;
		sc->rx_pending += c->rx_new;
		sc->acked_pending += c->tx_acked;
	}
	c->events = 0;
	c->rx_new = 0;
	c->tx_acked = 0;
}

/* A passive connection that died before the app heard of it goes away quietly. */
static bool conn_unannounced_dead(const struct ss_sconn *sc)
{
	return (sc->flags & SC_PASSIVE) && !(sc->flags & SC_ANNOUNCED) &&
	       sc->tcp.f.state == SS_TCPS_CLOSED;
}

bool stack_conn_collect(struct ss_stack *s, struct ss_sconn *sc)
{
	conn_collect(s, sc);
	if (sc->orphan_buf && ss_tcp_tx_queued(&sc->tcp) == 0)
		conn_orphan_free(s, sc);
	if (sc->tcp.f.state == SS_TCPS_CLOSED && (sc->flags & SC_IN_TABLE)) {
		/* Closed flows leave the table at once: later segments get RST. */
		ss_flow_table_remove(&s->flows, &sc->key);
		sc->flags &= (uint8_t)~SC_IN_TABLE;
	}
	if (sc->app && conn_unannounced_dead(sc)) {
		if (sc->listener) {
			struct ss_listener *l = &s->listeners[sc->listener - 1];
			if (l->n_syn)
				l->n_syn--;
			sc->listener = 0;
		}
		sc->ev_pending = 0;
		stack_conn_release_slot(s, sc);
	}
	/* Nothing to post for an open connection without events (the flush
	 * that sends a reply). */
	return sc->app && (sc->ev_pending || sc->rx_pending || sc->acked_pending ||
			   (sc->flags & SC_PENDING) || sc->tcp.f.state != SS_TCPS_ESTABLISHED);
}

void stack_conn_settle(struct ss_stack *s, struct ss_sconn *sc)
{
	/* Back on the dirty list already (its post or its send re-queued
	 * it): freed when that list is flushed, never while on it. */
	if (!sc->app && sc->tcp.f.state == SS_TCPS_CLOSED && !(sc->flags & SC_DIRTY))
		conn_free(s, sc);
	else
		conn_sync_timer(s, sc);
}

uint64_t ss_stack_next_deadline(const struct ss_stack *s)
{
	if (stack_loop_pending(s))
		return 0; /* looped-back frames wait: no sleeping */
	uint64_t t = ss_timer_wheel_next(&s->wheel), c = stack_cc_next_us(s);

	for (unsigned i = 0; i < SS_TCP_DELACK_STEPS; i++)
		if (stack_delack_head(s, i) < t) /* a sentinel's is UINT64_MAX */
			t = stack_delack_head(s, i);
	return c < t ? c : t;
}

void ss_stack_gauges(const struct ss_stack *s, struct ss_stack_gauges *g)
{
	g->flows = __atomic_load_n(&s->n_flows, __ATOMIC_RELAXED);
	g->listeners = __atomic_load_n(&s->n_listeners, __ATOMIC_RELAXED);
	g->orphan_bytes = __atomic_load_n(&s->orphan_bytes, __ATOMIC_RELAXED);
	g->apps = 0;
	g->app_conns = 0;
	if (s->reg)
		for (uint32_t i = 0; i < s->reg->lim.max_apps; i++) {
			const struct ss_app *a = &s->reg->apps[i];
			if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) == SS_APP_FREE)
				continue;
			g->apps++;
			g->app_conns += __atomic_load_n(&a->n_conns, __ATOMIC_RELAXED);
		}
}
