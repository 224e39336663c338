/* tcp.c - TCP engine: setup, ISN, ring copies, application calls (send/recv/shutdown/close/abort). */
#include <errno.h>
#include <string.h>

#include "tcp/siphash.h"
#include "tcp/tcp_int.h"

/* The fast path touches only struct ss_tcp_flow: keep it in two cache lines. */
_Static_assert(sizeof(struct ss_tcp_flow) <= 128, "ss_tcp_flow must stay <= 128 bytes");
_Static_assert(SS_TCPS_MAX <= 256, "state must fit in uint8_t");

#define SS_TCP_STATE_NAME_(s) [SS_TCPS_##s] = #s,
static const char *const tcp_state_names[SS_TCPS_MAX] = { SS_TCP_STATE_LIST(SS_TCP_STATE_NAME_) };
#undef SS_TCP_STATE_NAME_

const char *ss_tcp_state_name(enum ss_tcp_state s)
{
	return (unsigned)s < SS_TCPS_MAX ? tcp_state_names[s] : "?";
}

void ss_tcp_params_default(struct ss_tcp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->mss = 1460;
	p->rto_min_us = 200000;
	p->rto_max_us = 60000000;
	p->rto_initial_us = 1000000;
	p->max_retries = 15;
	p->syn_retries = 6;
	p->time_wait_us = 60000000;
	p->fin_wait2_us = 60000000;
	p->delack_us = 0;
	p->challenge_ack_per_s = 1000;
	p->tlp_min_us = 10000; /* Linux's floor: fewer probes against delayed ACKs */
}

void ss_tcp_conn_init(struct ss_tcp_conn *c, const struct ss_tcp_params *p,
		      uint32_t local_ip, uint16_t local_port, uint32_t remote_ip,
		      uint16_t remote_port, uint32_t iss, uint32_t ts_offset,
		      struct ss_tcp_ring rx, struct ss_tcp_ring tx,
		      ss_tcp_emit_fn emit, void *emit_arg)
{
	memset(c, 0, sizeof(*c));
	c->local_ip = local_ip;
	c->local_port = local_port;
	c->remote_ip = remote_ip;
	c->remote_port = remote_port;
	c->csum_base = ss_tcp_csum_base(local_ip, remote_ip);
	c->iss = iss;
	c->ts_offset = ts_offset;
	c->rx = rx;
	c->tx = tx;
	c->params = p;
	c->delack_hold_us = p->delack_us;
	c->emit = emit;
	c->emit_arg = emit_arg;

	struct ss_tcp_flow *f = &c->f;
	f->state = SS_TCPS_CLOSED;
	f->snd_una = f->snd_nxt = f->snd_max = iss;
	f->recover = iss;
	c->ecn_recover = iss;
	c->snd_sml = iss; /* no small segment in flight */
	f->rto_us = p->rto_initial_us;
	f->mss = p->mss;
	ss_tcp_conn_rx_room(c, rx.size);
	c->tx_budget = SS_TCP_BUDGET_UNLIMITED;
	tcp_cc_init(c);
}

void ss_tcp_conn_rx_room(struct ss_tcp_conn *c, uint32_t max)
{
	struct ss_tcp_flow *f = &c->f;

	/* RFC 7323 §2.3: the smallest shift that lets all of it be offered. */
	f->rcv_wscale = 0;
	while (f->rcv_wscale < SS_TCP_WSCALE_MAX && (max >> f->rcv_wscale) > 0xffff)
		f->rcv_wscale++;
}

int ss_tcp_rx_grow(struct ss_tcp_conn *c, struct ss_tcp_ring rx)
{
	if (!ss_tcp_rx_restarts(c) || rx.size < c->rx.size)
		return -1;
	rx.origin = c->f.rx_tail - rx.home;
	c->rx = rx;
	if (c->f.state != SS_TCPS_CLOSED)
		c->f.flags |= SS_TCPF_ACK_NOW; /* the larger window, now */
	return 0;
}

void ss_tcp_cc_set(struct ss_tcp_conn *c, uint8_t mode, uint32_t cwnd, bool ecn_dctcp)
{
	struct ss_tcp_flow *f = &c->f;

	c->cc_mode = mode <= SS_TCP_CC_RATE ? mode : SS_TCP_CC_ENGINE;
	c->ecn_dctcp = ecn_dctcp;
	f->cwnd = cwnd > f->mss ? cwnd : f->mss;
	if (c->cc_mode == SS_TCP_CC_ENGINE && f->ssthresh < f->cwnd)
		f->ssthresh = UINT32_MAX; /* resume as if in slow start below it */
}

/* RFC 6528 §3: ISN = M + F(localip, localport, remoteip, remoteport, secretkey),
 * M a 4-microsecond timer, F SipHash-2-4 keyed with the secret. */
uint32_t ss_tcp_isn(const uint8_t secret[16], uint32_t local_ip, uint16_t local_port,
		    uint32_t remote_ip, uint16_t remote_port, uint64_t now_us)
{
	uint8_t m[12];

	m[0] = (uint8_t)(local_ip >> 24);
	m[1] = (uint8_t)(local_ip >> 16);
	m[2] = (uint8_t)(local_ip >> 8);
	m[3] = (uint8_t)local_ip;
	m[4] = (uint8_t)(local_port >> 8);
	m[5] = (uint8_t)local_port;
	m[6] = (uint8_t)(remote_ip >> 24);
	m[7] = (uint8_t)(remote_ip >> 16);
	m[8] = (uint8_t)(remote_ip >> 8);
	m[9] = (uint8_t)remote_ip;
	m[10] = (uint8_t)(remote_port >> 8);
	m[11] = (uint8_t)remote_port;
	return (uint32_t)(now_us / 4) + (uint32_t)ss_siphash24(secret, m, sizeof(m));
}

bool ss_tcp_rst_reply(const struct ss_tcp *in, struct ss_tcp *rst)
{
	if (in->flags & SS_TCP_RST)
		return false;
	memset(rst, 0, sizeof(*rst));
	rst->sport = in->dport;
	rst->dport = in->sport;
	if (in->flags & SS_TCP_ACK) {
		rst->seq = in->ack;
		rst->flags = SS_TCP_RST;
	} else {
		uint32_t len = (uint32_t)in->payload_len + !!(in->flags & SS_TCP_SYN) +
			       !!(in->flags & SS_TCP_FIN);
		rst->seq = 0;
		rst->ack = in->seq + len;
		rst->flags = SS_TCP_RST | SS_TCP_ACK;
	}
	rst->hdr_len = SS_TCP_HDR_MIN;
	return true;
}

/* Every path to CLOSED goes through here, so EV_CLOSED is set exactly once
 * and no timer survives. */
void tcp_state_set(struct ss_tcp_conn *c, enum ss_tcp_state st)
{
	if (c->f.state == SS_TCPS_CLOSED && st == SS_TCPS_CLOSED)
		return;
	c->f.state = (uint8_t)st;
	if (st == SS_TCPS_CLOSED) {
		c->rto_deadline_us = 0;
		c->persist_deadline_us = 0;
		c->tw_deadline_us = 0;
		c->delack_deadline_us = 0;
		c->ack_pending = 0;
		c->f.flags &= (uint8_t)~SS_TCPF_ACK_NOW;
		c->events |= SS_TCP_EV_CLOSED;
	}
}

/* Close because of an error: @err into conn->error, @ev (RESET/ERROR or 0). */
void tcp_conn_drop(struct ss_tcp_conn *c, int err, uint8_t ev)
{
	if (c->f.state == SS_TCPS_CLOSED)
		return;
	c->error = (uint8_t)err;
	c->events |= ev;
	tcp_state_set(c, SS_TCPS_CLOSED);
}

void ss_tcp_shutdown(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	(void)now_us; /* the FIN leaves at the next ss_tcp_output() */
	switch (f->state) {
	case SS_TCPS_SYN_SENT:
		/* RFC 9293 §3.10.4: CLOSE in SYN-SENT deletes the TCB. */
		tcp_state_set(c, SS_TCPS_CLOSED);
		return;
	case SS_TCPS_SYN_RCVD:
		/* FIN after the handshake: we enter FIN_WAIT_1 when the SYN-ACK
		 * is acknowledged (tcp_slow.c). */
		f->flags |= SS_TCPF_FIN_QUEUED;
		return;
	case SS_TCPS_ESTABLISHED:
		/* RFC 9293 §3.10.4: queue the FIN behind the data, enter FIN-WAIT-1. */
		f->flags |= SS_TCPF_FIN_QUEUED;
		f->state = SS_TCPS_FIN_WAIT_1;
		return;
	case SS_TCPS_CLOSE_WAIT:
		f->flags |= SS_TCPF_FIN_QUEUED;
		f->state = SS_TCPS_LAST_ACK;
		return;
	default:
		return; /* already shut down, or CLOSED: idempotent */
	}
}

void ss_tcp_close(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	if (f->state == SS_TCPS_CLOSED)
		return;
	c->closed_by_app = 1;
	/* RFC 1122 §4.2.2.13 / RFC 2525 §2.17: unread data is lost, so tell the
	 * peer with a RST instead of a FIN. */
	if (f->rx_tail != f->rx_head) {
		ss_tcp_abort(c, now_us);
		return;
	}
	ss_tcp_shutdown(c, now_us);
	/* Orphaned FIN_WAIT_2 must not live forever (Linux tcp_fin_timeout). */
	if (f->state == SS_TCPS_FIN_WAIT_2)
		c->tw_deadline_us = now_us + c->params->fin_wait2_us;
}

void ss_tcp_abort(struct ss_tcp_conn *c, uint64_t now_us)
{
	switch (c->f.state) {
	case SS_TCPS_CLOSED:
		return;
	case SS_TCPS_SYN_SENT:
	case SS_TCPS_TIME_WAIT:
		break; /* RFC 9293 §3.10.5: no RST from these states */
	default:
		tcp_send_rst(c, now_us);
		break;
	}
	tcp_state_set(c, SS_TCPS_CLOSED);
}

static inline uint64_t tcp_min_deadline(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

void ss_tcp_rings_release(struct ss_tcp_conn *c, struct ss_tcp_ring spare)
{
	struct ss_tcp_flow *f = &c->f;

	f->rx_head = f->rx_tail;
	tcp_ooo_clear(c);
	f->tx_tail = f->tx_head;
	c->rx = spare;
	c->tx = spare;
}

uint32_t ss_tcp_tx_queued(const struct ss_tcp_conn *c)
{
	return c->f.tx_tail - c->f.tx_head;
}

int ss_tcp_orphan(struct ss_tcp_conn *c, struct ss_tcp_ring tx, struct ss_tcp_ring spare)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t n = f->tx_tail - f->tx_head, pos = f->tx_head;

	if (!c->closed_by_app || tx.size < 4096 || (tx.size & (tx.size - 1)) || tx.size < n ||
	    spare.size < 4096)
		return -1;
	while (n) { /* both rings may wrap, at different places */
		uint32_t off = pos & (tx.size - 1), chunk = tx.size - off;
		if (chunk > n)
			chunk = n;
		ss_tcp_ring_copy_out(&c->tx, pos, tx.base + off, chunk);
		pos += chunk;
		n -= chunk;
	}
	f->rx_head = f->rx_tail;
	tcp_ooo_clear(c);
	tx.origin = 0; /* the copy above put position p at p & (size - 1) */
	c->rx = spare;
	c->tx = tx;
	return 0;
}

/* Stream positions [@pos, @pos + @n) of ring @src into ring @dst, each
 * where that ring's origin puts it (@n at most either ring's size). */
static void ring_copy_positions(const struct ss_tcp_ring *dst, const struct ss_tcp_ring *src,
				uint32_t pos, uint32_t n)
{
	while (n) {
		uint32_t so = ss_tcp_ring_off(src, pos), dof = ss_tcp_ring_off(dst, pos);
		uint32_t k = n;

		if (k > src->size - so)
			k = src->size - so;
		if (k > dst->size - dof)
			k = dst->size - dof;
		memcpy(dst->base + dof, src->base + so, k);
		pos += k;
		n -= k;
	}
}

int ss_tcp_rings_move(struct ss_tcp_conn *c, struct ss_tcp_ring rx, struct ss_tcp_ring tx)
{
	if (rx.size < c->rx.size || tx.size < c->tx.size)
		return -1;
	/* Every byte (in order, out of order, unsent) goes to where its
	 * position is with origin 0: all a ring can hold lies within its
	 * size from its oldest byte (unread, unacknowledged). */
	rx.origin = tx.origin = 0;
	ring_copy_positions(&rx, &c->rx, c->f.rx_head, c->rx.size);
	ring_copy_positions(&tx, &c->tx, c->f.tx_head, c->tx.size);
	c->rx = rx;
	c->tx = tx;
	return 0;
}

uint64_t ss_tcp_next_deadline(const struct ss_tcp_conn *c)
{
	return tcp_min_deadline(ss_tcp_next_deadline_no_delack(c), c->delack_deadline_us);
}
