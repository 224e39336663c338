/* tcp_opts.c - per-connection socket options: TCP_NODELAY, TCP_CORK, TCP_MAXSEG and keepalive (RFC 9293 §3.8.4, RFC 1122 §4.2.3.6). */
#include <errno.h>

#include "tcp/tcp_int.h"

/* Linux's defaults and limits (include/net/tcp.h). */
#define KA_IDLE_DEFAULT_S 7200u
#define KA_INTVL_DEFAULT_S 75u
#define KA_CNT_DEFAULT 9u
#define KA_TIME_MAX_S 32767u /* MAX_TCP_KEEPIDLE, MAX_TCP_KEEPINTVL */
#define KA_CNT_MAX 127u      /* MAX_TCP_KEEPCNT */
#define MAXSEG_MIN 88u       /* TCP_MIN_MSS */
#define MAXSEG_MAX 32767u    /* MAX_TCP_WINDOW */

static uint64_t ka_idle_us(const struct ss_tcp_conn *c)
{
	return (uint64_t)(c->ka_idle_s ? c->ka_idle_s : KA_IDLE_DEFAULT_S) * 1000000u;
}

static uint64_t ka_intvl_us(const struct ss_tcp_conn *c)
{
	return (uint64_t)(c->ka_intvl_s ? c->ka_intvl_s : KA_INTVL_DEFAULT_S) * 1000000u;
}

static unsigned ka_cnt(const struct ss_tcp_conn *c)
{
	return c->ka_cnt ? c->ka_cnt : KA_CNT_DEFAULT;
}

/* The keepalive timer from now: the rest of the idle time (Linux
 * tcp_sock_set_keepidle_locked(), tcp_set_keepalive()). */
static void ka_arm(struct ss_tcp_conn *c, uint64_t now_us)
{
	uint64_t idle = ka_idle_us(c), elapsed = c->rcv_us && now_us > c->rcv_us ? now_us - c->rcv_us : 0;

	if (!tcp_ka_owns_tw(c))
		return;
	c->tw_deadline_us = now_us + (elapsed < idle ? idle - elapsed : 0);
	if (c->tw_deadline_us == 0)
		c->tw_deadline_us = 1; /* 0 is "none" */
}

/*
 * The keepalive timer fired (tcp_timer.c; Linux tcp_keepalive_timer()).
 * Before the handshake completes, or with data in flight or waiting
 * (the retransmission and persist timers watch the peer then): again
 * after the idle time.  Otherwise, idle that long since the peer's last
 * segment: after KEEPCNT probes none of which drew an answer, RST and
 * ETIMEDOUT; else a probe, and the next check an interval later.
 */
void tcp_ka_timer(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint64_t idle = ka_idle_us(c);

	if (f->state == SS_TCPS_SYN_SENT || f->state == SS_TCPS_SYN_RCVD ||
	    f->snd_una != f->snd_max || ss_tcp_tx_unsent(c) || c->persist_deadline_us) {
		c->tw_deadline_us = now_us + idle;
		return;
	}
	/* Anything from the peer since the latest probe answered it (Linux
	 * clears icsk_probes_out on every ACK). */
	if (c->ka_probes && c->rcv_us > c->ka_probe_us)
		c->ka_probes = 0;
	uint64_t elapsed = now_us > c->rcv_us ? now_us - c->rcv_us : 0;

	if (elapsed < idle) {
		c->tw_deadline_us = now_us + (idle - elapsed);
		return;
	}
	if (c->ka_probes >= ka_cnt(c)) {
		tcp_st(c)->ka_timeouts++;
		tcp_send_rst(c, now_us);
		tcp_conn_drop(c, ETIMEDOUT, SS_TCP_EV_ERROR);
		return;
	}
	/* <SEQ=SND.UNA-1><ACK=RCV.NXT><CTL=ACK>, no data: an old sequence
	 * number, which the peer answers with an ACK (RFC 9293 §3.8.4). */
	tcp_output_seg(c, f->snd_una - 1, 0, SS_TCP_ACK, now_us);
	tcp_st(c)->ka_probes++;
	if (c->ka_probes < UINT8_MAX)
		c->ka_probes++;
	c->ka_probe_us = now_us;
	c->tw_deadline_us = now_us + ka_intvl_us(c);
}

int ss_tcp_setopt(struct ss_tcp_conn *c, unsigned opt, uint32_t val, uint64_t now_us)
{
	switch (opt) {
	case SS_TCP_OPT_NODELAY:
		if (val)
			c->txopt |= SS_TCP_TXO_NODELAY | SS_TCP_TXO_PUSH;
		else
			c->txopt &= (uint8_t)~SS_TCP_TXO_NODELAY;
		return 0;
	case SS_TCP_OPT_CORK:
		if (val) {
			c->txopt |= SS_TCP_TXO_CORK;
		} else {
			/* Linux __tcp_sock_set_cork(): what waits goes as
			 * Nagle's algorithm lets it, at once with NODELAY. */
			c->txopt &= (uint8_t)~SS_TCP_TXO_CORK;
			if (c->txopt & SS_TCP_TXO_NODELAY)
				c->txopt |= SS_TCP_TXO_PUSH;
		}
		return 0;
	case SS_TCP_OPT_KEEPALIVE:
		if (!val) {
			if (tcp_ka_owns_tw(c))
				c->tw_deadline_us = 0;
			c->ka_on = 0;
			return 0;
		}
		if (!c->ka_on) {
			/* Linux tcp_set_keepalive(): the idle time from now. */
			c->ka_on = 1;
			c->ka_probes = 0;
			if (tcp_ka_owns_tw(c))
				c->tw_deadline_us = now_us + ka_idle_us(c);
		}
		return 0;
	case SS_TCP_OPT_KEEPIDLE:
		if (val < 1 || val > KA_TIME_MAX_S)
			return -1;
		c->ka_idle_s = (uint16_t)val;
		if (c->ka_on)
			ka_arm(c, now_us);
		return 0;
	case SS_TCP_OPT_KEEPINTVL:
		if (val < 1 || val > KA_TIME_MAX_S)
			return -1;
		c->ka_intvl_s = (uint16_t)val;
		return 0;
	case SS_TCP_OPT_KEEPCNT:
		if (val < 1 || val > KA_CNT_MAX)
			return -1;
		c->ka_cnt = (uint8_t)val;
		return 0;
	case SS_TCP_OPT_MAXSEG:
		if (val && (val < MAXSEG_MIN || val > MAXSEG_MAX))
			return -1;
		c->mss_clamp = (uint16_t)val;
		return 0;
	default:
		return -1;
	}
}
