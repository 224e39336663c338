/* tcp_in.c - segment input: the ESTABLISHED fast path and the ACK/data helpers it shares with tcp_slow.c. */
#include "tcp/tcp_int.h"

/* Data came after this connection's ACK went alone and before any reply
 * (SS_TCP_ACKP_LATE): the peer was waiting for that ACK to send more, as
 * Nagle's algorithm does, or sends without replies from us.  A longer
 * hold would make it wait longer: back to delack_us. */
static __attribute__((noinline, cold)) void tcp_delack_unlate(struct ss_tcp_conn *c)
{
	if (c->delack_hold_us != c->params->delack_us) {
		c->delack_hold_us = c->params->delack_us;
		tcp_st(c)->delack_shorter++;
	}
}

/* Copy in-order payload (seq == rcv_nxt, fits the ring) and absorb the
 * out-of-order intervals the copy reaches (kept in the ring beyond
 * rx_tail, tcp_ooo.c); with data out of order it filled (part of) a gap,
 * which is acknowledged at once (tcp_ooo_fill()).  Returns bytes made
 * readable. */
static inline __attribute__((always_inline)) uint32_t
rx_in_order(struct ss_tcp_conn *c, const uint8_t *data, uint32_t len)
{
	struct ss_tcp_flow *f = &c->f;

	if (!len)
		return 0;
	/* Nothing unread and nothing out of order: start again at the home
	 * byte (struct ss_tcp_ring; the application learns it from the RX
	 * event, shm/abi.h). */
	if (ss_tcp_rx_restarts(c))
		c->rx.origin = f->rx_tail - c->rx.home;
	ss_tcp_ring_copy_in(&c->rx, f->rx_tail, data, len);
	f->rx_tail += len;
	f->rcv_nxt += len;
	if (f->ooo_len)
		len += tcp_ooo_fill(c); /* a gap (partly) filled: out of line */
	c->rx_new += len;
	c->events |= SS_TCP_EV_RX;
	/* ss_tcp_output() decides: ACK now, or hold it for the reply (data
	 * came: a lone ACK before it is no longer LATE). */
	if (c->delack_hold_us) {
		if (__builtin_expect(c->ack_pending & SS_TCP_ACKP_LATE, 0))
			tcp_delack_unlate(c);
		c->ack_pending = SS_TCP_ACKP_OWED;
	} else
		f->flags |= SS_TCPF_ACK_NOW;
	return len;
}

/* RFC 9293 §3.10.7.4 fifth (ESTABLISHED): SND.UNA < SEG.ACK =< SND.NXT.
 * Frees acknowledged ring space, takes an RTT sample (the timed segment,
 * RFC 6298 §3, in microseconds; while Karn's rule stops timing, TSecr,
 * RFC 7323 §4.1, to the millisecond), updates
 * the congestion window and restarts the RTO (RFC 6298 §5.2, §5.3). */
static inline __attribute__((always_inline)) void
ack_advance(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t ack = seg->ack;
	uint32_t new_head;

	if ((f->flags & SS_TCPF_FIN_SENT) && ss_seq_gt(ack, tcp_data_end(c)))
		new_head = f->tx_tail; /* FIN acked: all data is */
	else
		new_head = tcp_tx_pos(c, ack);
	uint32_t data_acked = new_head - f->tx_head;

	if (f->flags & SS_TCPF_RTT_TIMING) {
		if (ss_seq_gt(ack, f->rtt_seq)) {
			uint64_t rtt = now_us - c->rtt_start_us;

			tcp_rtt_sample_inline(c, rtt > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt);
			f->flags &= (uint8_t)~SS_TCPF_RTT_TIMING;
		}
	} else if (c->karn && (f->flags & SS_TCPF_TS) && (seg->opts.present & SS_TCP_OPTF_TS) &&
		   seg->opts.ts_ecr) {
		/* Karn's rule stopped timing (a retransmission is not yet
		 * acknowledged): the echo still tells which transmission this
		 * ACK answers, to the millisecond (RFC 7323 §4.1). */
		uint32_t ms = tcp_tsval(c, now_us) - seg->opts.ts_ecr;

		if (ms < 600000) /* ignore echoes that cannot be ours */
			tcp_rtt_sample(c, ms * 1000);
	}
	if (c->karn && ss_seq_geq(ack, c->karn_end))
		c->karn = 0;

	f->snd_una = ack;
	if (ss_seq_lt(f->snd_nxt, ack))
		f->snd_nxt = ack; /* after a go-back-N rewind */
	f->tx_head = new_head;
	if (data_acked) {
		c->tx_acked += data_acked;
		c->events |= SS_TCP_EV_TX_ACKED;
		/* For the control loop: DCTCP's marked bytes are those acked
		 * by ACKs that echo CE (RFC 8257 §3.3). */
		c->cc.acked_bytes += data_acked;
		if ((seg->flags & SS_TCP_ECE) && c->ecn_ok)
			c->cc.ecn_bytes += data_acked;
	}
	c->retries = 0;
	c->tlp_sent = 0;
	f->backoff = 0;
	if (f->state != SS_TCPS_SYN_SENT && f->state != SS_TCPS_SYN_RCVD)
		tcp_cc_on_ack(c, data_acked, seg, now_us);
	if (f->snd_una == f->snd_max)
		c->rto_deadline_us = 0;
	else if (!c->persist_deadline_us)
		tcp_rto_arm(c, now_us);
}

/* RFC 9293 §3.10.7.4 fifth: take the peer's window from the newest
 * segment (SND.WL1/WL2 guard against reordered old ones).  Leaving the
 * zero-window state stops the persist timer; the probe byte, if still
 * unacknowledged, is resent with the data that follows. */
static inline __attribute__((always_inline)) void
snd_wnd_update(struct ss_tcp_conn *c, const struct ss_tcp *seg)
{
	struct ss_tcp_flow *f = &c->f;

	if (c->persist_deadline_us)
		c->retries = 0; /* the peer answers our probes: keep probing */
	if (!(ss_seq_lt(f->snd_wl1, seg->seq) ||
	      (f->snd_wl1 == seg->seq && ss_seq_leq(f->snd_wl2, seg->ack))))
		return;
	f->snd_wnd = (uint32_t)seg->window << f->snd_wscale;
	f->snd_wl1 = seg->seq;
	f->snd_wl2 = seg->ack;
	if (f->snd_wnd > c->max_snd_wnd)
		c->max_snd_wnd = f->snd_wnd;
	if (f->snd_wnd && c->persist_deadline_us) {
		c->persist_deadline_us = 0;
		c->persist_backoff = 0;
		f->snd_nxt = f->snd_una;
	}
}

/* The three helpers, out of line for tcp_slow.c; the fast path below has
 * them inlined (each call's frame cost more than its common case). */
uint32_t tcp_rx_in_order(struct ss_tcp_conn *c, const uint8_t *data, uint32_t len)
{
	return rx_in_order(c, data, len);
}

void tcp_ack_advance(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	ack_advance(c, seg, now_us);
}

void tcp_snd_wnd_update(struct ss_tcp_conn *c, const struct ss_tcp *seg)
{
	snd_wnd_update(c, seg);
}

/*
 * Fast path (Linux header prediction).  Taken when all hold:
 *   - state ESTABLISHED;
 *   - control bits exactly ACK (PSH, ECE, CWR ignored): no SYN/FIN/RST/URG;
 *   - the segment starts at rcv_nxt and fits in the receive ring;
 *   - timestamps negotiated => TSopt present and not older than
 *     TS.Recent (RFC 7323 §5.3 PAWS);
 *   - SND.UNA < SEG.ACK =< SND.MAX, or SEG.ACK = SND.UNA with payload
 *     (a payload-free SEG.ACK = SND.UNA may be a duplicate ACK: slow path);
 *   - no SACK blocks and not in loss recovery (both: RACK's detection,
 *     tcp_rack.c, and the recovery in the slow path).
 * Everything else goes to tcp_input_slow().
 */
void ss_tcp_input(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	size_t len = seg->payload_len;

	c->rcv_us = now_us; /* the keepalive's idle time starts again */
	/* Rare: congestion signals (the segment's own fields first, so the
	 * common case does not touch the cold ecn_ok). */
	if ((seg->ip_ecn == SS_IP_ECN_CE || (seg->flags & (SS_TCP_ECE | SS_TCP_CWR))) &&
	    c->ecn_ok && f->state != SS_TCPS_SYN_SENT)
		tcp_ecn_input(c, seg, now_us);
	if (f->state == SS_TCPS_ESTABLISHED &&
	    (seg->flags & (SS_TCP_SYN | SS_TCP_FIN | SS_TCP_RST | SS_TCP_URG | SS_TCP_ACK)) ==
		    SS_TCP_ACK &&
	    seg->seq == f->rcv_nxt && len <= tcp_rx_free(c) &&
	    (!(f->flags & SS_TCPF_TS) ||
	     ((seg->opts.present & SS_TCP_OPTF_TS) &&
	      ss_seq_geq(seg->opts.ts_val, f->ts_recent))) &&
	    !(seg->opts.present & SS_TCP_OPTF_SACK) && !(f->flags & SS_TCPF_IN_RECOVERY) &&
	    ss_seq_leq(seg->ack, f->snd_max) &&
	    (ss_seq_gt(seg->ack, f->snd_una) || (seg->ack == f->snd_una && len))) {
		c->st.fast_path++;
		/* RFC 7323 §4.3: in-order segment, so SEG.SEQ =< Last.ACK.sent. */
		if (f->flags & SS_TCPF_TS)
			f->ts_recent = seg->opts.ts_val;
		if (seg->ack != f->snd_una)
			ack_advance(c, seg, now_us);
		snd_wnd_update(c, seg);
		rx_in_order(c, seg->payload, (uint32_t)len);
		return;
	}
	tcp_input_slow(c, seg, now_us);
}
