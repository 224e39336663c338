/* stack_cookie.c - SYN cookies for listeners past their backlog (RFC 4987 §3.6).
 *
 * A listener keeps at most its backlog of half-open connections (each holds
 * a connection slot of its application and a flow-table entry).  Past that,
 * a SYN is answered by a SYN-ACK whose ISN is a cookie (src/tcp/tcp_cookie.h)
 * and nothing is kept: a burst of thousands of connects, or a SYN flood,
 * costs no memory.  The ACK that returns a valid cookie makes the
 * connection, already ESTABLISHED.  Linux does the same by default
 * (net.ipv4.tcp_syncookies = 1); `--syn-cookies off` drops such SYNs
 * instead (drop_tcp_backlog), `always` answers every SYN so (for tests).
 *
 * The SYN-ACK is built by the engine itself on a scratch connection, so it
 * is byte for byte what ss_tcp_accept_syn() sends, with two differences the
 * cookie needs: the ISN, and a TSval whose low bits carry the options.
 * SYNs from our own address (the loopback path) never get a cookie.
 */
#include "stack/stack_cookie.h"
#include "stack/stack_opts.h"
#include "stack/stack_conn.h"
#include "stack/stack_listen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tcp/tcp_cookie.h"
#include "wire/ipv4.h"

/* An ACK may return a cookie for up to two of its time steps. */
#define COOKIE_LIFE_US (2ull << SS_TCP_COOKIE_T_SHIFT)

int stack_cookie_init(struct ss_stack *s)
{
	s->cookie_sc = stack_conns_alloc(1);
	return s->cookie_sc ? 0 : -ENOMEM;
}

void stack_cookie_fini(struct ss_stack *s)
{
	stack_conns_free(s->cookie_sc, 1);
	s->cookie_sc = NULL;
}

static void cookie_id(const struct ss_stack *s, const struct ss_ipv4 *ip,
		      const struct ss_tcp *seg, uint32_t peer_isn, struct ss_tcp_cookie_id *id)
{
	id->local_ip = s->ip;
	id->remote_ip = ip->src;
	id->local_port = seg->dport;
	id->remote_port = seg->sport;
	id->peer_isn = peer_isn;
}

bool stack_cookie_synack(struct ss_stack *s, struct ss_lmember *m, const uint8_t *frame,
			 const struct ss_ipv4 *ip, const struct ss_tcp *seg)
{
	struct ss_sconn *sc = s->cookie_sc;
	struct ss_app *a = m->app;
	struct ss_tcp_cookie_id id;

	if (!sc || ip->src == s->ip)
		return false;
	cookie_id(s, ip, seg, seg->seq, &id);
	uint16_t peer_mss = (seg->opts.present & SS_TCP_OPTF_MSS) ? seg->opts.mss : 0; /* 536 */
	uint32_t cookie = ss_tcp_cookie_make(s->isn_secret, &id, peer_mss, s->now_us);

	/* The rings are never touched (a SYN-ACK carries no data); their
	 * sizes give the window and our window scale, as the member's own
	 * connection would have them. */
	struct ss_tcp_ring rx, tx;
	stack_slot_start_rings(a, 0, &rx, &tx);
	rx.base = tx.base = NULL;
	ss_tcp_conn_init(&sc->tcp, &s->params, s->ip, seg->dport, ip->src, seg->sport, cookie, 0,
			 rx, tx, stack_conn_emit, s);
	ss_tcp_conn_rx_room(&sc->tcp, a->rxbuf_size); /* as conn_setup() */
	memcpy(sc->peer_mac, frame + 6, 6);

	struct ss_tcp offer;
	uint16_t bits;
	ss_tcp_cookie_syn_offer(seg, s->params.ecn, sc->tcp.f.rcv_wscale, &offer, &bits);
	/* The connection's own offset, moved back so the SYN-ACK's TSval
	 * carries the bits: later TSvals are never below it. */
	uint32_t base = stack_conn_ts_offset(s, cookie);
	uint32_t ts_now = (uint32_t)(s->now_us / 1000) + base;
	sc->tcp.ts_offset = base + (ss_tcp_cookie_tsval(ts_now, bits) - ts_now);
	if (ss_tcp_accept_syn(&sc->tcp, &offer, s->now_us) != 0)
		return false;
	/* A SYN-ACK that found no buffer (counted by the emit path) is lost
	 * like any other: the peer sends its SYN again. */
	ss_ctr_inc(s->ctr, SS_CTR_tcp_syn_cookies_sent);
	s->cookie_until_us = s->now_us + COOKIE_LIFE_US;
	return true;
}

bool stack_cookie_ack(struct ss_stack *s, const uint8_t *frame, const struct ss_ipv4 *ip,
		      const struct ss_tcp *seg)
{
	if ((seg->flags & (SS_TCP_SYN | SS_TCP_RST | SS_TCP_ACK)) != SS_TCP_ACK)
		return false;
	struct ss_flow_key k = { .local_ip = ip->dst, .remote_ip = ip->src,
				 .local_port = seg->dport, .remote_port = seg->sport };
	uint32_t li;
	struct ss_listener *l = stack_listener_find(s, &k, &li);
	if (!l)
		return false;

	struct ss_tcp_cookie_id id;
	struct ss_tcp syn;
	uint16_t peer_mss;
	uint8_t our_wscale;
	cookie_id(s, ip, seg, seg->seq - 1, &id);
	if (!ss_tcp_cookie_check(s->isn_secret, &id, seg->ack - 1, s->now_us, &peer_mss) ||
	    !ss_tcp_cookie_syn_rebuild(seg, peer_mss, &syn, &our_wscale)) {
		ss_ctr_inc(s->ctr, SS_CTR_tcp_syn_cookies_bad);
		return false; /* reset, as for any ACK to a listening port */
	}
	struct ss_lmember *m = stack_listener_pick(l);
	if (!m) {
		ss_ctr_inc(s->ctr, SS_CTR_drop_tcp_listener_gone);
		return true;
	}
	/* A limit hit here is counted and the ACK dropped; the peer's next
	 * segment returns the cookie again while it is valid. */
	struct ss_sconn *sc = stack_conn_passive(s, m, frame, ip, seg, seg->ack - 1);
	if (!sc)
		return true;
	stack_opts_inherit(s, l, sc);
	ss_tcp_accept_cookie(&sc->tcp, &syn, our_wscale);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_syn_cookies_ok);
	ss_ctr_inc(s->ctr, SS_CTR_tcp_passive_open);
	ss_tcp_input(&sc->tcp, seg, s->now_us);
	stack_conn_dirty(s, sc);
	return true;
}
