/* tcp_harness.h - fake peer, segment builders, per-state fixtures and controllable time for the TCP engine tests. */
#ifndef SS_TESTS_TCP_HARNESS_H
#define SS_TESTS_TCP_HARNESS_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tcp/tcp.h"
#include "tcp/tcp_int.h"
#include "tcp/tcp_invariants.h"
#include "wire/seq.h"

/*
 * One connection under test plus the peer's view of it.  Segments the
 * engine emits are captured in out[] with their payload copied out of the
 * transmit ring at emit time (as the service does), and their header as
 * it goes on the wire.  The connection has the direct callbacks
 * (ss_tcp_conn_set_direct()): segments the engine writes itself are
 * captured from their bytes, as emit's would be.  Time is h->now, in
 * microseconds, moved only by the test.  Every engine call made through
 * the h_* wrappers runs first on a copy of the connection without the
 * direct callbacks, which must emit the same segments, byte for byte,
 * and end the same; then comes the invariant check, and EV_CLOSED is
 * counted each time it is newly raised (it must be raised exactly once).
 */
#define H_MAX_SEGS 512
#define H_SEG_DATA 8192 /* TSO segments (test_tcp_tso.c) up to 5 MSS */
#define H_SRC_IP 0x0a000001u
#define H_DST_IP 0x0a000002u

struct h_seg {
	struct ss_tcp hdr;      /* as emit gets it (payload NULL, csum 0) */
	uint32_t len;
	uint8_t wire[SS_TCP_HDR_MAX]; /* the header on the wire, checksum set */
	uint8_t data[H_SEG_DATA];
};

/* What the fake peer offers on its SYN or SYN-ACK, and the fixture setup. */
struct h_cfg {
	uint32_t rx_size, tx_size;
	uint32_t rx_home, tx_home; /* struct ss_tcp_ring home bytes (0 by default) */
	uint32_t iss, peer_iss;
	bool ts, ws, sack, mss;
	uint8_t peer_wscale;
	uint16_t peer_mss;
	uint16_t peer_win;  /* window field on the peer's SYN / SYN-ACK / ACKs */
	uint16_t our_mss;   /* params.mss */
	uint32_t ts_offset;
	uint32_t rto_min_us; /* params.rto_min_us when nonzero */
	uint32_t tlp_min_us; /* params.tlp_min_us (0: no tail loss probes) */
	uint32_t delack_us, delack_max_us; /* params' (0: ACK every burst) */
	uint32_t rx_room;   /* ss_tcp_conn_rx_room() before the handshake (0: not) */
};

struct harness {
	struct ss_tcp_params p;
	struct ss_tcp_conn c;
	struct h_cfg cfg;
	uint8_t *rxbuf, *txbuf;
	struct h_seg out[H_MAX_SEGS];
	unsigned nout;
	int emit_fail;          /* emit returns -1 (seg_buf NULL) while nonzero */
	size_t seg_buf_max;     /* nonzero: seg_buf (and emit) fail for longer segments */
	uint8_t seg_buf[SS_TCP_HDR_MAX + H_SEG_DATA]; /* the direct path's segment */
	size_t seg_len;         /* what the engine asked seg_buf for */
	uint64_t now;
	unsigned closed_count;  /* times EV_CLOSED was newly raised */
	/* peer */
	uint32_t peer_nxt;      /* next seq the peer sends */
	uint32_t peer_tsval;    /* TSval the peer puts on its segments */
	uint32_t last_tsval;    /* last TSval we emitted (the peer echoes it) */
	uint32_t app_tx;        /* bytes the app queued (pattern offset) */
	uint32_t peer_tx;       /* bytes the peer sent (pattern offset) */
	const char *violation;
};

/* Payload patterns: byte i of our stream / of the peer's stream. */
static inline uint8_t h_pat_ours(uint32_t i)
{
	return (uint8_t)(i * 7u + (i >> 8) + 1u);
}

static inline uint8_t h_pat_peer(uint32_t i)
{
	return (uint8_t)(i * 13u + (i >> 9) + 5u);
}

static inline void h_cfg_default(struct h_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rx_size = 16384;
	cfg->tx_size = 65536;
	cfg->iss = 0x10000000u;
	cfg->peer_iss = 0x50000000u;
	cfg->ts = cfg->ws = cfg->sack = cfg->mss = true;
	cfg->peer_wscale = 0;
	cfg->peer_mss = 1460;
	cfg->peer_win = 65535;
	cfg->our_mss = 1460;
	cfg->ts_offset = 1000;
}

/* @seg as emit gets it into @s: the header struct, the payload, and the
 * header on the wire (the service's ss_tcp_hdr_write() and checksum). */
static inline void h_seg_take(struct h_seg *s, struct ss_tcp_conn *c,
			      const struct ss_tcp_seg_out *seg)
{
	static uint8_t buf[SS_TCP_HDR_MAX + H_SEG_DATA];
	size_t hl = ss_tcp_hdr_write(buf, &seg->hdr);

	s->hdr = seg->hdr;
	s->len = seg->len;
	if (seg->len)
		ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, buf + hl, seg->len);
	ss_tcp_csum_set(buf, hl + seg->len, H_SRC_IP, H_DST_IP, false);
	memset(s->wire, 0, sizeof(s->wire));
	memcpy(s->wire, buf, hl);
	memcpy(s->data, buf + hl, seg->len);
}

static inline int h_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct harness *h = arg;

	if (h->emit_fail || (h->seg_buf_max && seg->hdr.hdr_len + seg->len > h->seg_buf_max))
		return -1;
	if (h->nout >= H_MAX_SEGS || seg->len > H_SEG_DATA) {
		check_fail_(__FILE__, __LINE__, "harness: too many or too long segments");
		return -1;
	}
	h_seg_take(&h->out[h->nout++], c, seg);
	if (seg->hdr.opts.present & SS_TCP_OPTF_TS)
		h->last_tsval = seg->hdr.opts.ts_val;
	return 0;
}

/* The direct path (ss_tcp_seg_buf_fn): room for the segment, or NULL as
 * emit's -1. */
static inline uint8_t *h_seg_buf(void *arg, struct ss_tcp_conn *c, size_t len)
{
	struct harness *h = arg;

	(void)c;
	if (h->emit_fail || (h->seg_buf_max && len > h->seg_buf_max))
		return NULL;
	if (h->nout >= H_MAX_SEGS || len > sizeof(h->seg_buf)) {
		check_fail_(__FILE__, __LINE__, "harness: too many or too long segments");
		return NULL;
	}
	memset(h->seg_buf, 0xa5, sizeof(h->seg_buf)); /* every byte must be written */
	h->seg_len = len;
	return h->seg_buf;
}

/* ss_tcp_seg_send_fn: the segment's checksum, as the service sets it; the
 * header struct read back from the bytes (ss_tcp_parse(), which must take
 * them, checksum included), as emit would have had it. */
static inline void h_seg_send(void *arg, struct ss_tcp_conn *c, uint8_t *seg, size_t hdr_len,
			      size_t payload_len, uint8_t ip_ecn)
{
	struct harness *h = arg;
	struct h_seg *s = &h->out[h->nout++];
	size_t len = hdr_len + payload_len;

	CHECK(seg == h->seg_buf && len == h->seg_len && payload_len <= H_SEG_DATA);
	ss_tcp_csum_set(seg, len, c->local_ip, c->remote_ip, false);
	memset(&s->hdr, 0, sizeof(s->hdr));
	CHECK(ss_tcp_parse(seg, len, &s->hdr) == SS_TCP_OK);
	CHECK(ss_tcp_csum_ok(c->local_ip, c->remote_ip, seg, len));
	CHECK_EQ_U64(s->hdr.hdr_len, hdr_len);
	s->hdr.csum = 0;
	s->hdr.payload = NULL;
	s->hdr.payload_len = 0;
	s->hdr.ip_ecn = ip_ecn;
	s->len = (uint32_t)payload_len;
	memset(s->wire, 0, sizeof(s->wire));
	memcpy(s->wire, seg, hdr_len);
	memcpy(s->data, seg + hdr_len, payload_len);
	if (s->hdr.opts.present & SS_TCP_OPTF_TS)
		h->last_tsval = s->hdr.opts.ts_val;
}

/* After every engine call: invariants, and count a newly raised EV_CLOSED. */
#define h_after(h, ev_before)                                                         \
	do {                                                                          \
		const char *h_v_ = tcp_invariant_violation(&(h)->c);                  \
		check_count++;                                                        \
		if (h_v_) {                                                           \
			check_fail_(__FILE__, __LINE__, h_v_);                        \
			(h)->violation = h_v_;                                        \
		}                                                                     \
		if (!((ev_before) & SS_TCP_EV_CLOSED) && ((h)->c.events & SS_TCP_EV_CLOSED)) \
			(h)->closed_count++;                                          \
	} while (0)

static inline void harness_init(struct harness *h, const struct h_cfg *cfg)
{
	free(h->rxbuf);
	free(h->txbuf);
	memset(h, 0, sizeof(*h));
	h->cfg = *cfg;
	ss_tcp_params_default(&h->p);
	h->p.mss = cfg->our_mss;
	if (cfg->rto_min_us)
		h->p.rto_min_us = cfg->rto_min_us;
	h->p.tlp_min_us = cfg->tlp_min_us;
	h->p.delack_us = cfg->delack_us;
	h->p.delack_max_us = cfg->delack_max_us;
	h->rxbuf = calloc(1, cfg->rx_size);
	h->txbuf = calloc(1, cfg->tx_size);
	h->now = 1000000;
	h->peer_tsval = 5000;
	h->peer_nxt = cfg->peer_iss;
	struct ss_tcp_ring rx = { .base = h->rxbuf, .size = cfg->rx_size, .home = cfg->rx_home };
	struct ss_tcp_ring tx = { .base = h->txbuf, .size = cfg->tx_size, .home = cfg->tx_home };

	ss_tcp_conn_init(&h->c, &h->p, H_SRC_IP, 40000, H_DST_IP, 80, cfg->iss,
			 cfg->ts_offset, rx, tx, h_emit, h);
	ss_tcp_conn_set_direct(&h->c, h_seg_buf, h_seg_send);
	if (cfg->rx_room)
		ss_tcp_conn_rx_room(&h->c, cfg->rx_room);
}

static inline void harness_free(struct harness *h)
{
	free(h->rxbuf);
	free(h->txbuf);
	h->rxbuf = h->txbuf = NULL;
}

/* Forget captured segments and clear events/counts (the caller's job in
 * the service after it has notified the app). */
static inline void h_clear(struct harness *h)
{
	h->nout = 0;
	h->c.events = 0;
	h->c.rx_new = 0;
	h->c.tx_acked = 0;
}

static inline struct h_seg *h_last(struct harness *h)
{
	static struct h_seg none;

	return h->nout ? &h->out[h->nout - 1] : &none;
}

/* A segment from the peer: options follow the TS negotiation of the
 * connection (TSval = peer_tsval, TSecr = the last TSval we sent). */
static inline struct ss_tcp h_seg_make(struct harness *h, uint8_t flags, uint32_t seq,
				       uint32_t ack, uint16_t win, const uint8_t *data,
				       uint32_t len)
{
	struct ss_tcp s;

	memset(&s, 0, sizeof(s));
	s.sport = 80;
	s.dport = 40000;
	s.seq = seq;
	s.ack = ack;
	s.flags = flags;
	s.window = win;
	s.payload = data;
	s.payload_len = len;
	if (h->c.f.flags & SS_TCPF_TS) {
		s.opts.present = SS_TCP_OPTF_TS;
		s.opts.ts_val = h->peer_tsval;
		s.opts.ts_ecr = h->last_tsval;
	}
	s.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&s.opts));
	return s;
}

/* The peer's SYN or SYN-ACK options from the config. */
static inline void h_syn_opts(struct harness *h, struct ss_tcp *s)
{
	memset(&s->opts, 0, sizeof(s->opts));
	if (h->cfg.mss) {
		s->opts.present |= SS_TCP_OPTF_MSS;
		s->opts.mss = h->cfg.peer_mss;
	}
	if (h->cfg.ws) {
		s->opts.present |= SS_TCP_OPTF_WSCALE;
		s->opts.wscale = h->cfg.peer_wscale;
	}
	if (h->cfg.sack)
		s->opts.present |= SS_TCP_OPTF_SACK_PERM;
	if (h->cfg.ts) {
		s->opts.present |= SS_TCP_OPTF_TS;
		s->opts.ts_val = h->peer_tsval;
		s->opts.ts_ecr = h->last_tsval;
	}
}

/* Segments the engine emits on a copy of the connection, to compare with
 * what the connection itself sends. */
struct h_shadow {
	struct harness *h;
	struct h_seg out[H_MAX_SEGS];
	unsigned nout;
};

static inline int h_emit_shadow(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct h_shadow *sh = arg;

	if (sh->h->emit_fail ||
	    (sh->h->seg_buf_max && seg->hdr.hdr_len + seg->len > sh->h->seg_buf_max))
		return -1;
	if (sh->nout >= H_MAX_SEGS || seg->len > H_SEG_DATA)
		return -1;
	h_seg_take(&sh->out[sh->nout++], c, seg);
	return 0;
}

/* @copy: the connection, every segment through emit into @sh. */
static inline void h_shadow_begin(struct harness *h, struct ss_tcp_conn *copy, struct h_shadow *sh)
{
	memcpy(copy, &h->c, sizeof(*copy));
	copy->emit = h_emit_shadow;
	copy->emit_arg = sh;
	ss_tcp_conn_set_direct(copy, NULL, NULL);
	sh->h = h;
	sh->nout = 0;
}

/* After the same call on @copy and on the connection: the same segments
 * (header struct, header bytes on the wire, payload) from out[@nout] on,
 * and the same connection. */
static inline void h_shadow_check(struct harness *h, struct ss_tcp_conn *copy,
				  const struct h_shadow *sh, unsigned nout)
{
	copy->emit = h->c.emit;
	copy->emit_arg = h->c.emit_arg;
	ss_tcp_conn_set_direct(copy, h->c.seg_buf, h->c.seg_send);
	CHECK_EQ_U64(h->nout - nout, sh->nout);
	CHECK(memcmp(copy, &h->c, sizeof(*copy)) == 0);
	for (unsigned i = 0; i < sh->nout && nout + i < h->nout; i++) {
		const struct h_seg *a = &sh->out[i], *b = &h->out[nout + i];

		CHECK(memcmp(&a->hdr, &b->hdr, sizeof(a->hdr)) == 0 && a->len == b->len &&
		      memcmp(a->wire, b->wire, sizeof(a->wire)) == 0 &&
		      memcmp(a->data, b->data, a->len) == 0);
	}
}

/* @call (an engine call on the connection @c_) on a copy through emit,
 * then on the connection, compared. */
#define h_vs_emit(h, call)                                                      \
	do {                                                                    \
		static struct ss_tcp_conn h_copy_;                              \
		static struct h_shadow h_sh_;                                   \
		unsigned h_nout_ = (h)->nout;                                   \
		struct ss_tcp_conn *c_ = &h_copy_;                              \
		h_shadow_begin((h), &h_copy_, &h_sh_);                          \
		call;                                                           \
		c_ = &(h)->c;                                                   \
		call;                                                           \
		h_shadow_check((h), &h_copy_, &h_sh_, h_nout_);                 \
	} while (0)

static inline void h_input(struct harness *h, const struct ss_tcp *s)
{
	uint8_t ev = h->c.events;

	h_vs_emit(h, ss_tcp_input(c_, s, h->now));
	h_after(h, ev);
}

static inline unsigned h_output(struct harness *h)
{
	uint8_t ev = h->c.events;
	/* ss_tcp_output_quiet() on a copy: where it claims the case, the
	 * real ss_tcp_output() must send nothing and leave the connection
	 * exactly as the quiet path left the copy. */
	static struct ss_tcp_conn quiet, general;
	static struct h_shadow sh;
	unsigned nout = h->nout;
	memcpy(&quiet, &h->c, sizeof(quiet));
	bool claimed = ss_tcp_output_quiet(&quiet, h->now);
	/* The general path (no one-segment shortcut), every segment through
	 * emit, on another copy: the same segments, field for field and byte
	 * for byte, and the same connection afterwards. */
	h_shadow_begin(h, &general, &sh);
	unsigned ng = tcp_output_general(&general, h->now);
	unsigned n = ss_tcp_output(&h->c, h->now);

	CHECK_EQ_U64(n, ng);
	h_shadow_check(h, &general, &sh, nout);
	if (claimed) {
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_U64(h->nout, nout);
		CHECK(memcmp(&quiet, &h->c, sizeof(quiet)) == 0);
	}

	h_after(h, ev);
	return n;
}

static inline void h_timer(struct harness *h)
{
	uint8_t ev = h->c.events;

	h_vs_emit(h, ss_tcp_timer(c_, h->now));
	h_after(h, ev);
}

/* Advance time to the next armed deadline and run the timers. */
static inline void h_fire(struct harness *h)
{
	uint64_t d = ss_tcp_next_deadline(&h->c);

	if (d > h->now)
		h->now = d;
	h_timer(h);
}

static inline void h_close(struct harness *h)
{
	uint8_t ev = h->c.events;

	h_vs_emit(h, ss_tcp_close(c_, h->now));
	h_after(h, ev);
}

static inline void h_shutdown(struct harness *h)
{
	uint8_t ev = h->c.events;

	h_vs_emit(h, ss_tcp_shutdown(c_, h->now));
	h_after(h, ev);
}

static inline void h_abort(struct harness *h)
{
	uint8_t ev = h->c.events;

	h_vs_emit(h, ss_tcp_abort(c_, h->now));
	h_after(h, ev);
}

/* Input a control/ACK-only segment from the peer at peer_nxt. */
static inline void h_peer_ctl(struct harness *h, uint8_t flags, uint32_t ack, uint16_t win)
{
	struct ss_tcp s = h_seg_make(h, flags, h->peer_nxt, ack, win, NULL, 0);

	h_input(h, &s);
	if (flags & (SS_TCP_FIN | SS_TCP_SYN))
		h->peer_nxt++;
}

/* Pure ACK from the peer acknowledging @ack with window field @win. */
static inline void h_peer_ack(struct harness *h, uint32_t ack, uint16_t win)
{
	h_peer_ctl(h, SS_TCP_ACK, ack, win);
}

/* Peer data: @len pattern bytes at the peer's stream offset @off (seq
 * peer_iss + 1 + off), acking @ack.  Does not move peer_nxt. */
static inline void h_peer_data_at(struct harness *h, uint32_t off, uint32_t len, uint32_t ack,
				  uint8_t extra_flags)
{
	static uint8_t buf[65536];

	for (uint32_t i = 0; i < len; i++)
		buf[i] = h_pat_peer(off + i);
	struct ss_tcp s = h_seg_make(h, (uint8_t)(SS_TCP_ACK | extra_flags), h->cfg.peer_iss + 1 + off,
				     ack, h->cfg.peer_win, buf, len);

	h_input(h, &s);
}

/* Peer data in order: @len bytes at peer_nxt acking what we sent (snd_max). */
static inline void h_peer_send(struct harness *h, uint32_t len)
{
	h_peer_data_at(h, h->peer_nxt - h->cfg.peer_iss - 1, len, h->c.f.snd_max, SS_TCP_PSH);
	h->peer_nxt += len;
}

/* The app queues @len pattern bytes. */
static inline int h_app_send(struct harness *h, uint32_t len)
{
	if (len > ss_tcp_tx_space(&h->c))
		return -1;
	for (uint32_t i = 0; i < len; i++)
		h->txbuf[(h->c.f.tx_tail - h->c.tx.origin + i) & (h->c.tx.size - 1)] =
			h_pat_ours(h->app_tx + i);
	int rc = ss_tcp_send(&h->c, len);

	if (rc == 0)
		h->app_tx += len;
	return rc;
}

/* True if the rx ring holds the peer's pattern bytes [off, off+len) at
 * stream positions [pos, pos+len). */
static inline bool h_rx_matches(struct harness *h, uint32_t pos, uint32_t off, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (h->rxbuf[(pos + i) & (h->c.rx.size - 1)] != h_pat_peer(off + i))
			return false;
	return true;
}

/* True if captured segment @s carries our pattern bytes for its seq. */
static inline bool h_seg_matches(struct harness *h, const struct h_seg *s)
{
	uint32_t off = s->hdr.seq - h->cfg.iss - 1;

	for (uint32_t i = 0; i < s->len; i++)
		if (s->data[i] != h_pat_ours(off + i))
			return false;
	return true;
}

/* ---- fixtures: one per state ------------------------------------------ */

/* Active open up to SYN_SENT (the SYN is out[0]). */
static inline void harness_syn_sent(struct harness *h, const struct h_cfg *cfg)
{
	harness_init(h, cfg);
	CHECK(ss_tcp_connect(&h->c, h->now) == 0);
	h_after(h, 0);
}

/* The peer's SYN-ACK for our SYN. */
static inline struct ss_tcp h_synack_make(struct harness *h)
{
	struct ss_tcp s = h_seg_make(h, SS_TCP_SYN | SS_TCP_ACK, h->cfg.peer_iss, h->cfg.iss + 1,
				     h->cfg.peer_win, NULL, 0);

	h_syn_opts(h, &s);
	return s;
}

/* Active open, ESTABLISHED, with our ACK of the SYN-ACK sent; cleared. */
static inline void harness_established(struct harness *h, const struct h_cfg *cfg)
{
	harness_syn_sent(h, cfg);
	h->now += 10000; /* 10 ms RTT */
	struct ss_tcp s = h_synack_make(h);

	h_input(h, &s);
	h->peer_nxt = cfg->peer_iss + 1;
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_ESTABLISHED);
	h_clear(h);
}

/* Passive open up to SYN_RCVD (the SYN-ACK is out[0]). */
static inline void harness_syn_rcvd(struct harness *h, const struct h_cfg *cfg)
{
	harness_init(h, cfg);
	struct ss_tcp syn = h_seg_make(h, SS_TCP_SYN, cfg->peer_iss, 0, cfg->peer_win, NULL, 0);

	h_syn_opts(h, &syn);
	CHECK(ss_tcp_accept_syn(&h->c, &syn, h->now) == 0);
	h_after(h, 0);
	h->peer_nxt = cfg->peer_iss + 1;
}

/* Passive open, ESTABLISHED by the peer's ACK of our SYN-ACK; cleared. */
static inline void harness_passive_established(struct harness *h, const struct h_cfg *cfg)
{
	harness_syn_rcvd(h, cfg);
	h->now += 10000;
	h_peer_ack(h, cfg->iss + 1, cfg->peer_win);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_ESTABLISHED);
	h_clear(h);
}

/* ESTABLISHED, then the app closes writing: our FIN out, FIN_WAIT_1. */
static inline void harness_fin_wait_1(struct harness *h, const struct h_cfg *cfg)
{
	harness_established(h, cfg);
	h_shutdown(h);
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_FIN_WAIT_1);
	h_clear(h);
}

/* FIN_WAIT_1 and the peer acks our FIN: FIN_WAIT_2. */
static inline void harness_fin_wait_2(struct harness *h, const struct h_cfg *cfg)
{
	harness_fin_wait_1(h, cfg);
	h_peer_ack(h, h->c.f.snd_max, cfg->peer_win);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_FIN_WAIT_2);
	h_clear(h);
}

/* FIN_WAIT_2 and the peer's FIN: TIME_WAIT, our ACK sent. */
static inline void harness_time_wait(struct harness *h, const struct h_cfg *cfg)
{
	harness_fin_wait_2(h, cfg);
	h_peer_ctl(h, SS_TCP_FIN | SS_TCP_ACK, h->c.f.snd_max, cfg->peer_win);
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_TIME_WAIT);
	h_clear(h);
}

/* ESTABLISHED and the peer's FIN: CLOSE_WAIT, our ACK sent. */
static inline void harness_close_wait(struct harness *h, const struct h_cfg *cfg)
{
	harness_established(h, cfg);
	h_peer_ctl(h, SS_TCP_FIN | SS_TCP_ACK, h->c.f.snd_max, cfg->peer_win);
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_CLOSE_WAIT);
	h_clear(h);
}

/* CLOSE_WAIT and the app closes writing: our FIN out, LAST_ACK. */
static inline void harness_last_ack(struct harness *h, const struct h_cfg *cfg)
{
	harness_close_wait(h, cfg);
	h_shutdown(h);
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_LAST_ACK);
	h_clear(h);
}

/* FIN_WAIT_1 and the peer's FIN before it acks ours: CLOSING. */
static inline void harness_closing(struct harness *h, const struct h_cfg *cfg)
{
	harness_fin_wait_1(h, cfg);
	h_peer_ctl(h, SS_TCP_FIN | SS_TCP_ACK, h->c.f.snd_max - 1, cfg->peer_win);
	h_output(h);
	CHECK_EQ_U64(h->c.f.state, SS_TCPS_CLOSING);
	h_clear(h);
}

/* Count captured segments with all of @flags set. */
static inline unsigned h_count_flags(const struct harness *h, uint8_t flags)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h->nout; i++)
		if ((h->out[i].hdr.flags & flags) == flags)
			n++;
	return n;
}

#endif /* SS_TESTS_TCP_HARNESS_H */
