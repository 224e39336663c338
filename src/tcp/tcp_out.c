/* tcp_out.c - segment output: data segmentation, FIN, ACK, SYN/SYN-ACK, RST, probes, timer arming. */
#include <string.h>

#include "tcp/tcp_int.h"

static inline uint32_t tcp_min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a < b ? a : b;

	return m < c ? m : c;
}

/* RTO or persist interval: @base << @shift, capped at rto_max (RFC 6298
 * §5.5 backoff; §2.5 allows a cap of at least 60 s). */
static uint64_t tcp_backoff_us(const struct ss_tcp_conn *c, unsigned shift)
{
	uint64_t t = (uint64_t)c->f.rto_us << (shift < SS_TCP_BACKOFF_MAX ? shift : SS_TCP_BACKOFF_MAX);

	return t > c->params->rto_max_us ? c->params->rto_max_us : t;
}

/*
 * Arms the retransmission timer and, in front of it, a tail loss probe
 * (RFC 8985 §7): when the last segments of a flight or all their ACKs are
 * lost, no duplicate ACK can arrive; after two smoothed RTTs (plus a
 * delayed-ACK allowance for a single segment) one segment is resent to
 * draw an ACK, instead of waiting out a 200 ms RTO.  One probe per flight.
 *
 * Unlike RFC 8985, the probe also waits at least SRTT + 4 * RTTVAR, the
 * point where RFC 6298's estimator stops expecting the ACK: 2 * SRTT
 * assumes the round trip varies by less than itself, which fails on a
 * loaded host (16384 connections here: 25 ms at p50, 150 ms at p99), where
 * probes for segments whose ACKs were on their way cost both ends a
 * retransmission, a duplicate and a DSACK each.  With a steady RTT the
 * floor stays under 2 * SRTT and changes nothing.
 *
 * The probe's slot also holds RACK's reorder timer (tcp_rack.c), which
 * tcp_rack_arm() puts there after an ACK that asks for it: arming the
 * RTO (on every ACK that advances) leaves the probe alone there, as RFC
 * 8985 §7.2 re-arms it, never in loss recovery.
 */
static inline __attribute__((always_inline)) void tcp_tlp_arm_inline(struct ss_tcp_conn *c,
								     uint64_t now_us)
{
	const struct ss_tcp_flow *f = &c->f;

	c->tlp_deadline_us = 0;
	if (!c->params->tlp_min_us || !f->srtt_us || c->tlp_sent || f->backoff ||
	    (f->flags & (SS_TCPF_IN_RECOVERY | SS_TCPF_FIN_SENT)) || f->state != SS_TCPS_ESTABLISHED)
		return;
	uint64_t pto = 2ull * f->srtt_us;
	uint64_t var = (uint64_t)f->srtt_us + 4ull * f->rttvar_us;
	if (pto < var)
		pto = var;
	if (f->snd_max - f->snd_una <= f->mss)
		pto += 40000; /* the peer may delay its ACK of a lone segment */
	if (pto < c->params->tlp_min_us)
		pto = c->params->tlp_min_us;
	if (now_us + pto < c->rto_deadline_us)
		c->tlp_deadline_us = now_us + pto;
}

static inline __attribute__((always_inline)) void tcp_rto_arm_inline(struct ss_tcp_conn *c,
								     uint64_t now_us)
{
	c->rto_deadline_us = now_us + tcp_backoff_us(c, c->f.backoff);
	tcp_tlp_arm_inline(c, now_us);
}

void tcp_rto_arm(struct ss_tcp_conn *c, uint64_t now_us)
{
	tcp_rto_arm_inline(c, now_us);
}

/* The probe alone, from now, before the running RTO. */
void tcp_tlp_arm(struct ss_tcp_conn *c, uint64_t now_us)
{
	tcp_tlp_arm_inline(c, now_us);
}

/* The probe: the last segment sent, again (RFC 8985 §7.3 when no new data
 * may go); its ACK or SACK restarts loss recovery. */
int tcp_tail_probe(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t flight = f->snd_max - f->snd_una;
	uint32_t len = flight < f->mss ? flight : f->mss;

	c->tlp_deadline_us = 0;
	c->tlp_sent = 1;
	if (!len || (f->flags & SS_TCPF_FIN_SENT))
		return 0;
	tcp_st(c)->tail_probes++;
	tcp_st(c)->retrans_segs++;
	tcp_rtt_karn(c);
	return tcp_output_seg(c, f->snd_max - len, len, SS_TCP_ACK | SS_TCP_PSH, now_us);
}

/* Window for a non-SYN segment: the ring's free space, scaled by our
 * shift (RFC 7323 §2.3).  Rounding down to the scale may move the edge
 * back by less than 2^shift; rcv_adv keeps the largest edge offered, and
 * the input side accepts up to the ring's free space, which is never
 * below it, so nothing we offered is ever refused. */
static uint16_t tcp_rcv_wnd_calc(const struct ss_tcp_conn *c, uint32_t *edge)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t free = tcp_rx_free(c);
	uint32_t max = (uint32_t)0xffff << f->rcv_wscale;
	uint32_t win;

	if (free > max)
		free = max;
	win = free >> f->rcv_wscale;
	*edge = f->rcv_nxt + (win << f->rcv_wscale);
	return (uint16_t)win;
}

uint16_t tcp_rcv_wnd_field(struct ss_tcp_conn *c)
{
	uint32_t edge;
	uint16_t w = tcp_rcv_wnd_calc(c, &edge);

	if (ss_seq_gt(edge, c->f.rcv_adv))
		c->f.rcv_adv = edge;
	return w;
}

/* What a non-SYN segment that went out (with @flags, its final ones, and
 * @len bytes of data) leaves behind: the window edge it offered, the ECN
 * signals it carried, the ACK it gave. */
static inline __attribute__((always_inline)) void
tcp_output_sent(struct ss_tcp_conn *c, uint32_t edge, uint8_t flags, uint32_t len)
{
	struct ss_tcp_flow *f = &c->f;

	if (ss_seq_gt(edge, f->rcv_adv))
		f->rcv_adv = edge;
	if (flags & SS_TCP_CWR)
		c->cwr_pending = 0;
	if ((flags & SS_TCP_ECE) && c->ecn_dctcp)
		c->ece_pending = 0; /* per-ACK echo: this ACK carried it */
	c->cc.sent_bytes += len; /* every data segment, resent or new */
	if (flags & SS_TCP_ACK) {
		f->flags &= (uint8_t)~SS_TCPF_ACK_NOW;
		c->ack_pending = 0;
		c->delack_deadline_us = 0;
		c->last_ack_sent = f->rcv_nxt;
	}
}

/* A segment without SACK blocks through the direct callbacks: header and
 * payload written straight into the frame, the same bytes emit's frame
 * would carry (ss_tcp_write_usual() writes what ss_tcp_hdr_write() does for
 * the ss_tcp that tcp_output_seg() fills). */
static inline __attribute__((always_inline)) int
tcp_output_direct(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	bool ts = f->flags & SS_TCPF_TS; /* RFC 7323 §3.2: on every segment */
	size_t hdr_len = ts ? SS_TCP_HDR_MIN + 12 : SS_TCP_HDR_MIN;
	uint8_t *seg = c->seg_buf(c->emit_arg, c, hdr_len + len);
	uint32_t edge;

	if (!seg)
		return -1;
	uint8_t ip_ecn = tcp_ecn_output(c, seq, len, &flags);
	uint16_t win = tcp_rcv_wnd_calc(c, &edge);

	ss_tcp_write_usual(seg, c->local_port, c->remote_port, seq,
			   (flags & SS_TCP_ACK) ? f->rcv_nxt : 0, flags, win, ts,
			   tcp_tsval(c, now_us), f->ts_recent);
	if (len)
		ss_tcp_ring_copy_out(&c->tx, tcp_tx_pos(c, seq), seg + hdr_len, len);
	c->seg_send(c->emit_arg, c, seg, hdr_len, len, ip_ecn);
	tcp_output_sent(c, edge, flags, len);
	return 0;
}

/* Build and emit one non-SYN segment.  Returns emit()'s result (0 from
 * the direct path, -1 where it found no buffer). */
int tcp_output_seg(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
		   uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	/* SACK blocks on pure ACKs only: on a full data segment they would
	 * push it past the MSS (the out-of-order ACKs are pure anyway). */
	bool sack = (flags & SS_TCP_ACK) && len == 0 && f->ooo_len;

	if (c->seg_buf && !sack && !(flags & SS_TCP_RST))
		return tcp_output_direct(c, seq, len, flags, now_us);

	struct ss_tcp_seg_out s;
	uint32_t edge;
	int rc;

	memset(&s, 0, sizeof(s));
	s.hdr.sport = c->local_port;
	s.hdr.dport = c->remote_port;
	s.hdr.seq = seq;
	s.hdr.ack = (flags & SS_TCP_ACK) ? f->rcv_nxt : 0;
	s.hdr.flags = flags;
	s.hdr.window = tcp_rcv_wnd_calc(c, &edge);
	if (f->flags & SS_TCPF_TS) {
		/* RFC 7323 §3.2: TSopt on every segment once negotiated. */
		s.hdr.opts.present = SS_TCP_OPTF_TS;
		s.hdr.opts.ts_val = tcp_tsval(c, now_us);
		s.hdr.opts.ts_ecr = f->ts_recent;
	}
	if (sack)
		tcp_ooo_sack_blocks(c, &s.hdr.opts);
	s.hdr.ip_ecn = tcp_ecn_output(c, seq, len, &s.hdr.flags);
	s.hdr.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&s.hdr.opts));
	s.tx_pos = tcp_tx_pos(c, seq);
	s.len = len;
	rc = c->emit(c->emit_arg, c, &s);
	if (rc == 0)
		tcp_output_sent(c, edge, s.hdr.flags, len);
	return rc;
}

int tcp_send_ack(struct ss_tcp_conn *c, uint64_t now_us)
{
	return tcp_output_seg(c, c->f.snd_nxt, 0, SS_TCP_ACK, now_us);
}

/* RST from a synchronized state (ABORT, give-up, data after close):
 * RFC 9293 §3.10.5 says <SEQ=SND.NXT>; we use the highest sequence sent,
 * which after a go-back-N rewind is what the peer expects, so the RST
 * passes its RFC 5961 exact-match check.  ACK set so the peer can match
 * it against its own state. */
int tcp_send_rst(struct ss_tcp_conn *c, uint64_t now_us)
{
	tcp_st(c)->rst_sent++;
	return tcp_output_seg(c, c->f.snd_max, 0, SS_TCP_RST | SS_TCP_ACK, now_us);
}

/* RFC 5961 §7: at most challenge_ack_per_s challenge ACKs per second. */
int tcp_send_challenge_ack(struct ss_tcp_conn *c, uint64_t now_us)
{
	if (now_us - c->last_challenge_us >= 1000000) {
		c->last_challenge_us = now_us;
		c->challenge_count = 0;
	}
	if (c->challenge_count >= c->params->challenge_ack_per_s) {
		tcp_st(c)->challenge_ack_limited++;
		return -1;
	}
	c->challenge_count++;
	tcp_st(c)->challenge_acks++;
	return tcp_send_ack(c, now_us);
}

/* SYN (SYN_SENT) or SYN-ACK (SYN_RCVD), both with sequence number ISS.
 * The SYN offers MSS, SACK_PERM, TS and WSCALE; the SYN-ACK echoes what
 * the peer's SYN offered (RFC 7323 §2.2, §3.2; RFC 2018 §2).  The window
 * of a SYN is never scaled (RFC 7323 §2.2). */
int tcp_send_syn(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	struct ss_tcp_seg_out s;
	bool synack = f->state == SS_TCPS_SYN_RCVD;
	uint8_t offer = synack ? c->syn_opts : (SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE |
						 SS_TCP_OPTF_SACK_PERM | SS_TCP_OPTF_TS);
	uint32_t free = tcp_rx_free(c);

	memset(&s, 0, sizeof(s));
	s.hdr.sport = c->local_port;
	s.hdr.dport = c->remote_port;
	s.hdr.seq = c->iss;
	s.hdr.ack = synack ? f->rcv_nxt : 0;
	s.hdr.flags = synack ? (SS_TCP_SYN | SS_TCP_ACK) : SS_TCP_SYN;
	/* RFC 3168 §6.1.1: offer with ECE+CWR, accept with ECE. */
	if (!synack && c->params->ecn)
		s.hdr.flags |= SS_TCP_ECE | SS_TCP_CWR;
	if (synack && c->ecn_ok)
		s.hdr.flags |= SS_TCP_ECE;
	s.hdr.window = (uint16_t)(free > 0xffff ? 0xffff : free);
	s.hdr.opts.present = (uint8_t)(SS_TCP_OPTF_MSS |
				       (offer & (SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM |
						 SS_TCP_OPTF_TS)));
	s.hdr.opts.mss = ss_tcp_mss_ours(c);
	s.hdr.opts.wscale = f->rcv_wscale;
	s.hdr.opts.ts_val = tcp_tsval(c, now_us);
	s.hdr.opts.ts_ecr = synack ? f->ts_recent : 0;
	if (!(s.hdr.opts.present & SS_TCP_OPTF_TS))
		s.hdr.opts.ts_val = 0;
	s.hdr.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&s.hdr.opts));
	s.tx_pos = 0;
	s.len = 0;
	if (synack && ss_seq_gt(f->rcv_nxt + s.hdr.window, f->rcv_adv))
		f->rcv_adv = f->rcv_nxt + s.hdr.window;
	return c->emit(c->emit_arg, c, &s);
}

/* Resend the segment at snd_una (fast retransmit, NewReno partial ACK). */
int tcp_retransmit_una(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t end = tcp_data_end(c);
	uint32_t len = 0;
	uint8_t flags = SS_TCP_ACK;

	if (f->snd_una == f->snd_max)
		return 0;
	if (ss_seq_lt(f->snd_una, end))
		len = tcp_min3(f->mss, end - f->snd_una, f->snd_max - f->snd_una);
	if ((f->flags & SS_TCPF_FIN_SENT) && f->snd_una + len == end)
		flags |= SS_TCP_FIN;
	if (!len && !(flags & SS_TCP_FIN))
		return 0;
	tcp_st(c)->retrans_segs++;
	tcp_rtt_karn(c);
	return tcp_output_seg(c, f->snd_una, len, (uint8_t)(flags | SS_TCP_PSH), now_us);
}

/* In SACK recovery: resend [seq, seq + len), sequence space below
 * snd_max (RFC 6675 §5 NextSeg); our FIN goes with it when it lies in
 * the range. */
int tcp_retransmit_seq(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint64_t now_us)
{
	uint32_t end = tcp_data_end(c);
	uint32_t data = ss_seq_lt(seq, end) ? (end - seq < len ? end - seq : len) : 0;
	uint8_t flags = data ? SS_TCP_ACK | SS_TCP_PSH : SS_TCP_ACK;

	if ((c->f.flags & SS_TCPF_FIN_SENT) && ss_seq_gt(seq + len, end))
		flags |= SS_TCP_FIN;
	tcp_st(c)->retrans_segs++;
	tcp_rtt_karn(c);
	return tcp_output_seg(c, seq, data, flags, now_us);
}

/* RFC 9293 §3.8.6.1 zero-window probe: one byte of new data beyond the
 * window; the peer's ACK (accepting it or not) tells us its window. */
int tcp_persist_probe(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	int rc;

	if (!ss_seq_lt(f->snd_una, tcp_data_end(c)))
		return 0;
	tcp_st(c)->persist_probes++;
	tcp_rtt_karn(c);
	rc = tcp_output_seg(c, f->snd_una, 1, SS_TCP_ACK | SS_TCP_PSH, now_us);
	if (rc == 0) {
		f->snd_nxt = f->snd_una + 1;
		if (ss_seq_gt(f->snd_nxt, f->snd_max)) {
			f->snd_max = f->snd_nxt;
			tcp_rack_sent(c, f->snd_max, now_us);
		}
	}
	return rc;
}

/* Each test mirrors a branch of ss_tcp_output() below that would do
 * something other than what this does; keep the two in step. */
bool ss_tcp_output_quiet(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	/* The send loop: no data (snd_nxt at the end), no FIN to go, no ACK
	 * forced, no loss recovery (it may resend); the timers: nothing
	 * outstanding without an RTO (a persist timer leaves them alone too;
	 * that rare case takes the long way). */
	if (f->state != SS_TCPS_ESTABLISHED || f->snd_nxt != tcp_data_end(c) ||
	    (f->flags & (SS_TCPF_FIN_QUEUED | SS_TCPF_ACK_NOW | SS_TCPF_IN_RECOVERY)) ||
	    (f->snd_max != f->snd_una && !c->rto_deadline_us))
		return false;
	if (c->ack_pending & SS_TCP_ACKP_OWED) {
		/* The delayed ACK: neither two full segments unacknowledged
		 * nor its deadline passed. */
		if (f->rcv_nxt - c->last_ack_sent >= 2u * f->mss ||
		    (c->delack_deadline_us && now_us >= c->delack_deadline_us))
			return false;
		if (!c->delack_deadline_us)
			c->delack_deadline_us = now_us + c->delack_hold_us;
	}
	c->budget_hit = 0;
	return true;
}

/*
 * The one-segment case of ss_tcp_output() (a request's reply): the send
 * loop's first pass would send all that is unsent as one PSH segment and
 * its second pass would find nothing more.  True when
 *   - ESTABLISHED, no FIN queued, not in loss recovery, no persist
 *     timer (zero window);
 *   - nothing to resend (snd_nxt = snd_max): new data only;
 *   - the unsent data fits in one segment (at most the MSS) and in
 *     min(cwnd, snd_wnd) from snd_una;
 *   - pacing budget left (or not paced).
 * Keep in step with the loop below.
 */
/* Minshall's test (Linux tcp_minshall_check()): a segment smaller than
 * the MSS is in flight. */
static inline bool tcp_small_in_flight(const struct ss_tcp_conn *c)
{
	return ss_seq_gt(c->snd_sml, c->f.snd_una) && ss_seq_leq(c->snd_sml, c->f.snd_nxt);
}

/*
 * May the last segment of the queued data, @len bytes, go now (the
 * send loop's test; Linux tcp_nagle_test())?  A full one always; a
 * smaller one when pushed (SS_TCP_TXO_PUSH), never while corked (CORK,
 * MORE), at once with NODELAY, else when no smaller one is in flight
 * (Nagle, Minshall's variant).  A segment that carries our FIN is not
 * asked.
 */
static inline bool tcp_nagle_ok(const struct ss_tcp_conn *c, uint32_t len)
{
	uint8_t o = c->txopt;

	if (len >= c->f.mss || (o & SS_TCP_TXO_PUSH))
		return true;
	if (o & (SS_TCP_TXO_CORK | SS_TCP_TXO_MORE))
		return false;
	return (o & SS_TCP_TXO_NODELAY) || !tcp_small_in_flight(c);
}

static inline bool tcp_output_one_fits(const struct ss_tcp_conn *c, uint32_t end)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t wnd = f->cwnd < f->snd_wnd ? f->cwnd : f->snd_wnd;
	uint32_t avail = end - f->snd_nxt;

	/* Nagle: NODELAY or none of the other options (they take the loop),
	 * and a full segment or no smaller one in flight (a reply after
	 * its request acknowledged the last one). */
	return f->state == SS_TCPS_ESTABLISHED && f->snd_nxt == f->snd_max &&
	       !(f->flags & (SS_TCPF_FIN_QUEUED | SS_TCPF_IN_RECOVERY)) && !c->persist_deadline_us &&
	       c->tx_budget &&
	       ss_seq_lt(f->snd_nxt, end) && avail <= f->mss &&
	       ss_seq_leq(end, f->snd_una + wnd) &&
	       !(c->txopt & (uint8_t)~SS_TCP_TXO_NODELAY) &&
	       (f->snd_una == f->snd_nxt || c->txopt || avail == f->mss || !tcp_small_in_flight(c));
}

/*
 * Data is about to go after this connection's ACK went alone at its
 * deadline, with no data arriving since (SS_TCP_ACKP_LATE): the reply came
 * late.  Within delack_max_us of the data it answers, the connection moves
 * up to the shortest step of at least 1.5 times that delay, which would
 * have let the reply carry the ACK.
 */
static __attribute__((noinline, cold)) void tcp_delack_late(struct ss_tcp_conn *c,
							    uint64_t now_us)
{
	const struct ss_tcp_params *p = c->params;
	uint64_t d = now_us - c->delack_late_us;

	if (c->f.snd_nxt == tcp_data_end(c))
		return; /* nothing to send: not the reply yet */
	c->ack_pending &= (uint8_t)~SS_TCP_ACKP_LATE;
	if (d > p->delack_max_us)
		return; /* no hold would have caught it */
	d += (d + 1) / 2; /* at least 1.5 times: below 2^32, as delack_max_us */
	uint32_t hold = ss_tcp_delack_step_us(p, ss_tcp_delack_step(p, (uint32_t)d));
	if (hold > c->delack_hold_us) { /* only ever up */
		c->delack_hold_us = hold;
		tcp_st(c)->delack_longer++;
	}
}

/*
 * The most payload the loop's next new-data segment may carry: one MSS,
 * or with TSO (ss_tcp_conn_set_tso()) the largest multiple of it within
 * tso_max and, for a paced flow, within its budget.  One MSS for a
 * resend (snd_nxt behind snd_max after a timeout) and for the segment
 * that carries CWR (RFC 3168 §6.1.2: the first new data after the
 * reduction; a port would repeat it on every cut segment).
 */
static inline uint32_t tcp_seg_max(const struct ss_tcp_conn *c)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t max = c->tso_max;

	if (max < 2u * f->mss || ss_seq_lt(f->snd_nxt, f->snd_max) || c->cwr_pending)
		return f->mss;
	if (c->tx_budget != SS_TCP_BUDGET_UNLIMITED && max > c->tx_budget)
		max = c->tx_budget;
	max -= max % f->mss;
	return max > f->mss ? max : f->mss;
}

static inline unsigned tcp_output(struct ss_tcp_conn *c, uint64_t now_us, bool one)
{
	struct ss_tcp_flow *f = &c->f;
	unsigned n = 0;
	bool failed = false;

	if (__builtin_expect(c->ack_pending & SS_TCP_ACKP_LATE, 0))
		tcp_delack_late(c, now_us);

	if (f->state == SS_TCPS_CLOSED || f->state == SS_TCPS_SYN_SENT ||
	    f->state == SS_TCPS_SYN_RCVD) {
		/* Handshake segments are sent by connect/accept/timer/input. */
		f->flags &= (uint8_t)~SS_TCPF_ACK_NOW;
		return 0;
	}
	bool can_send = tcp_state_can_send(f->state);
	uint32_t end = tcp_data_end(c);

	c->budget_hit = 0;

	if (one && tcp_output_one_fits(c, end)) {
		/* What the loop's first pass does for it, once. */
		uint32_t len = end - f->snd_nxt;

		/* New data, no RST: tcp_output_seg() would take the direct
		 * path when the connection has it (inlined here, one call
		 * less per reply). */
		int rc = c->seg_buf ? tcp_output_direct(c, f->snd_nxt, len, SS_TCP_ACK | SS_TCP_PSH,
							now_us)
				    : tcp_output_seg(c, f->snd_nxt, len, SS_TCP_ACK | SS_TCP_PSH, now_us);

		if (rc == 0) {
			if (c->tx_budget != SS_TCP_BUDGET_UNLIMITED)
				c->tx_budget = len >= c->tx_budget ? 0 : c->tx_budget - len;
			if (!(f->flags & SS_TCPF_RTT_TIMING)) {
				f->flags |= SS_TCPF_RTT_TIMING;
				f->rtt_seq = f->snd_nxt;
				c->rtt_start_us = now_us;
			}
			if (len < f->mss)
				c->snd_sml = end;
			f->snd_nxt = f->snd_max = end;
			tcp_rack_sent(c, end, now_us);
			/* The segment carried the ACK: no delayed ACK left;
			 * RFC 6298 §5.1: the RTO runs once per flight. */
			if (!c->rto_deadline_us)
				tcp_rto_arm_inline(c, now_us);
			return 1;
		}
		failed = true; /* as the loop: stays queued, the timer retries */
	}
	/* SACK loss recovery (tcp_recovery.c): lost data goes first, then new
	 * data within what cwnd - pipe leaves (RFC 6675 §5), not cwnd from
	 * snd_una. */
	bool rec = false;
	uint32_t room = 0;

	if (__builtin_expect(f->flags & SS_TCPF_IN_RECOVERY, 0) && (f->flags & SS_TCPF_SACK_PERM) &&
	    can_send) {
		rec = true;
		n += tcp_rec_send(c, now_us, &room);
	}
	/* Whatever the windows allow goes now, but a small last segment that
	 * Nagle's algorithm or a cork holds (tcp_nagle_ok()). */
	while (can_send && !failed) {
		uint32_t wnd = f->cwnd < f->snd_wnd && !rec ? f->cwnd : f->snd_wnd;
		uint32_t edge = f->snd_una + wnd;
		uint32_t len = 0;
		uint8_t flags = SS_TCP_ACK;

		if (ss_seq_lt(f->snd_nxt, end)) {
			uint32_t avail = end - f->snd_nxt;
			uint32_t usable = ss_seq_gt(edge, f->snd_nxt) ? edge - f->snd_nxt : 0;

			if (c->persist_deadline_us)
				break; /* zero window: only the persist timer probes */
			len = tcp_min3(avail, usable, avail > f->mss ? tcp_seg_max(c) : f->mss);
			if (rec && len > room) {
				/* Whole segments only, but the last one. */
				len = room >= f->mss ? room - room % f->mss : 0;
			}
			if (!len) {
				if (f->cwnd <= f->snd_wnd)
					c->cc.win_limited++;
				break;
			}
			if (len == avail && len < f->mss && !(f->flags & SS_TCPF_FIN_QUEUED) &&
			    !ss_seq_lt(f->snd_nxt, f->snd_max) && !tcp_nagle_ok(c, len)) {
				/* Held: until an ACK (Nagle), a full segment or
				 * the cork off; a cork with nothing in flight at
				 * most SS_TCP_CORK_US (the RTO slot, which then
				 * only calls output: tcp_timer.c). */
				if ((c->txopt & (SS_TCP_TXO_CORK | SS_TCP_TXO_MORE)) &&
				    f->snd_una == f->snd_max && !c->rto_deadline_us) {
					c->rto_deadline_us = now_us + SS_TCP_CORK_US;
					c->txopt |= SS_TCP_TXO_CTIMER;
				}
				break;
			}
			if (!c->tx_budget) {
				/* Paced: the caller gives more budget when the
				 * pacer lets this flow send again. */
				c->budget_hit = 1;
				tcp_st(c)->budget_stops++;
				c->cc.rate_limited++;
				break;
			}
			/* PSH on the last segment of the burst. */
			if (len == avail || len == usable)
				flags |= SS_TCP_PSH;
			/* Our FIN rides on the last data segment. */
			if (len == avail && (f->flags & SS_TCPF_FIN_QUEUED))
				flags |= SS_TCP_FIN;
		} else if ((f->flags & SS_TCPF_FIN_QUEUED) && f->snd_nxt == end) {
			/* FIN alone; it takes no room in the peer's buffer, so it
			 * is not held back by a zero window. */
			flags |= SS_TCP_FIN;
		} else {
			break;
		}
		bool rexmit = ss_seq_lt(f->snd_nxt, f->snd_max);
		int rc = tcp_output_seg(c, f->snd_nxt, len, flags, now_us);

		if (rc != 0 && len > f->mss) {
			/* No frame for a TSO segment: its first MSS, which
			 * ends neither the burst nor the stream. */
			len = f->mss;
			flags = SS_TCP_ACK;
			rc = tcp_output_seg(c, f->snd_nxt, len, flags, now_us);
		}
		if (rc != 0) {
			failed = true; /* stays queued; the timer retries */
			break;
		}
		n++;
		if (c->tx_budget != SS_TCP_BUDGET_UNLIMITED)
			c->tx_budget = len >= c->tx_budget ? 0 : c->tx_budget - len;
		if (rec) {
			room = len >= room ? 0 : room - len;
			c->prr_out += len; /* RFC 6937 §3 */
		}
		if (rexmit) {
			tcp_st(c)->retrans_segs++;
			tcp_rtt_karn(c);
		} else if (!(f->flags & SS_TCPF_RTT_TIMING) && len) {
			/* RFC 6298 §3: time one segment per RTT, in microseconds
			 * (our timestamps tick in milliseconds: too coarse for a
			 * path whose RTT is a fraction of one). */
			f->flags |= SS_TCPF_RTT_TIMING;
			f->rtt_seq = f->snd_nxt;
			c->rtt_start_us = now_us;
		}
		if (!rexmit && len % f->mss)
			c->snd_sml = f->snd_nxt + len; /* a smaller one (last of a TSO burst too) */
		f->snd_nxt += len + !!(flags & SS_TCP_FIN);
		if (ss_seq_gt(f->snd_nxt, f->snd_max)) {
			f->snd_max = f->snd_nxt;
			tcp_rack_sent(c, f->snd_max, now_us);
		}
		if (flags & SS_TCP_FIN)
			f->flags |= SS_TCPF_FIN_SENT;
	}
	c->txopt &= (uint8_t)~SS_TCP_TXO_PUSH;
	if ((c->ack_pending & SS_TCP_ACKP_OWED) && !(f->flags & SS_TCPF_ACK_NOW)) {
		/* RFC 1122 §4.2.3.2: ACK at least every second full-sized
		 * segment; less than that waits up to delack_us for data to
		 * ride on (a request's reply), then goes alone. */
		if (f->rcv_nxt - c->last_ack_sent >= 2u * f->mss ||
		    (c->delack_deadline_us && now_us >= c->delack_deadline_us))
			f->flags |= SS_TCPF_ACK_NOW;
		else if (!c->delack_deadline_us)
			c->delack_deadline_us = now_us + c->delack_hold_us;
	}
	if ((f->flags & SS_TCPF_ACK_NOW) && tcp_send_ack(c, now_us) == 0)
		n++;

	if (can_send && !c->persist_deadline_us) {
		bool outstanding = f->snd_max != f->snd_una;

		if (__builtin_expect(c->txopt & SS_TCP_TXO_CTIMER, 0) && outstanding) {
			/* Data left: the slot is the RTO's again. */
			c->txopt &= (uint8_t)~SS_TCP_TXO_CTIMER;
			c->rto_deadline_us = 0;
		}
		/* RFC 6298 §5.1: arm when data is outstanding and it is not running. */
		if (outstanding && !c->rto_deadline_us)
			tcp_rto_arm(c, now_us);
		/* RFC 9293 §3.8.6.1 / RFC 1122 §4.2.2.17: zero window, data
		 * waiting, nothing in flight whose ACK would reopen it. */
		if (f->snd_wnd == 0 && ss_seq_lt(f->snd_nxt, end) && !outstanding) {
			c->persist_deadline_us = now_us + tcp_backoff_us(c, c->persist_backoff);
			c->rto_deadline_us = 0;
		} else if (failed && !c->rto_deadline_us) {
			tcp_rto_arm(c, now_us);
		}
	}
	return n;
}

unsigned ss_tcp_output(struct ss_tcp_conn *c, uint64_t now_us)
{
	return tcp_output(c, now_us, true);
}

unsigned tcp_output_general(struct ss_tcp_conn *c, uint64_t now_us)
{
	return tcp_output(c, now_us, false);
}

/* Answer @in with the RFC 9293 §3.10.7.1 reset (CLOSED state, bad ACK in
 * SYN_SENT or SYN_RCVD).  Never answers a RST. */
int tcp_send_rst_reply(struct ss_tcp_conn *c, const struct ss_tcp *in)
{
	struct ss_tcp_seg_out s;

	memset(&s, 0, sizeof(s));
	if (!ss_tcp_rst_reply(in, &s.hdr))
		return 0;
	tcp_st(c)->rst_sent++;
	return c->emit(c->emit_arg, c, &s);
}
