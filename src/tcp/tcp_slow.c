/* tcp_slow.c - slow-path segment arrival: RFC 9293 §3.10.7 in every state, with RFC 5961 and RFC 7323 checks. */
#include <errno.h>

#include "tcp/tcp_int.h"

static void tcp_time_wait_enter(struct ss_tcp_conn *c, uint64_t now_us)
{
	c->f.state = SS_TCPS_TIME_WAIT;
	c->rto_deadline_us = 0;
	c->persist_deadline_us = 0;
	c->tw_deadline_us = now_us + c->params->time_wait_us;
}

/*
 * RFC 9293 §3.10.7.4 second, reset accepted (RFC 5961 §3.2 exact match).
 * EV_RESET + ECONNRESET (EPIPE in CLOSE_WAIT) when the application may
 * still care, i.e. it has
 * not closed the connection and it is not in TIME_WAIT (all data was
 * exchanged then).  SYN_RCVD from a passive open is not known to the
 * application yet: just CLOSED.  SYN_RCVD from a simultaneous open: the
 * connection was refused.
 */
static void tcp_input_reset(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;

	if (f->state == SS_TCPS_SYN_RCVD) {
		if (c->passive_open)
			tcp_state_set(c, SS_TCPS_CLOSED);
		else
			tcp_conn_drop(c, ECONNREFUSED, SS_TCP_EV_RESET);
		return;
	}
	if (f->state == SS_TCPS_TIME_WAIT || c->closed_by_app) {
		tcp_state_set(c, SS_TCPS_CLOSED);
		return;
	}
	/* The error the socket reports: ECONNRESET, but EPIPE in CLOSE_WAIT
	 * (the peer had closed; Linux's tcp_reset() says so too, and a
	 * write() then fails with EPIPE). */
	tcp_conn_drop(c, f->state == SS_TCPS_CLOSE_WAIT ? EPIPE : ECONNRESET, SS_TCP_EV_RESET);
}

/* RFC 9293 §3.10.7.4 eighth: an in-order FIN. */
static void tcp_input_fin(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	f->rcv_nxt++;
	f->flags |= SS_TCPF_PEER_FIN | SS_TCPF_ACK_NOW;
	c->events |= SS_TCP_EV_PEER_FIN;
	switch (f->state) {
	case SS_TCPS_ESTABLISHED:
		f->state = SS_TCPS_CLOSE_WAIT;
		break;
	case SS_TCPS_FIN_WAIT_1:
		/* Our FIN acked by this very segment: TIME_WAIT, else CLOSING. */
		if (tcp_fin_acked(c))
			tcp_time_wait_enter(c, now_us);
		else
			f->state = SS_TCPS_CLOSING;
		break;
	case SS_TCPS_FIN_WAIT_2:
		tcp_time_wait_enter(c, now_us);
		break;
	default:
		break;
	}
}

/*
 * RFC 9293 §3.10.7.4 seventh and eighth: segment text and FIN, for
 * ESTABLISHED, FIN_WAIT_1 and FIN_WAIT_2 (in the other states the peer's
 * FIN is in, so text is ignored).  @seq/@data/@len exclude any SYN.
 */
static void tcp_input_text(struct ss_tcp_conn *c, uint32_t seq, const uint8_t *data,
			   uint32_t len, bool fin, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	/* Only the new part of a segment straddling rcv_nxt is processed. */
	if (ss_seq_lt(seq, f->rcv_nxt)) {
		uint32_t d = f->rcv_nxt - seq;

		if (d > len) { /* cannot pass the acceptability test; be safe */
			tcp_st(c)->dup_data += len;
			f->flags |= SS_TCPF_ACK_NOW;
			return;
		}
		tcp_st(c)->dup_data += d;
		data += d;
		len -= d;
		seq = f->rcv_nxt;
	}
	/* Trim what lies beyond the ring (RFC 9293 §3.10.7.4: "tail end
	 * ... beyond the window ... trimmed off"); the FIN goes with it. */
	uint32_t off = seq - f->rcv_nxt, wnd = tcp_rx_free(c);

	if (off + (uint64_t)len > wnd) {
		uint32_t keep = wnd > off ? wnd - off : 0;

		tcp_st(c)->drop_out_of_window++;
		len = keep < len ? keep : len;
		fin = false;
		f->flags |= SS_TCPF_ACK_NOW;
	}
	/* RFC 1122 §4.2.2.13: nobody will read new data after close(). */
	if (c->closed_by_app && len) {
		tcp_st(c)->data_after_close++;
		tcp_send_rst(c, now_us);
		tcp_state_set(c, SS_TCPS_CLOSED);
		return;
	}
	if (off == 0) {
		tcp_rx_in_order(c, data, len);
		if (fin)
			tcp_input_fin(c, now_us);
		return;
	}
	/* Out of order: keep it if we can, and send a duplicate ACK now, with
	 * SACK blocks, so the sender's fast retransmit and loss recovery can
	 * work (RFC 5681 §4.2: "an immediate duplicate ACK ... when an
	 * out-of-order segment arrives"; a delayed ACK owed for earlier
	 * in-order data goes with it).  An out-of-order FIN is forgotten; the
	 * peer resends it. */
	tcp_rx_ooo(c, seq, data, len);
	tcp_send_ack(c, now_us);
}

/*
 * The ACK RFC 9293 §3.10.7.4 and RFC 7323 §5.3 ask for in answer to an
 * unacceptable segment.  When that segment carries no data (and no SYN),
 * at most one per TCP_OOW_ACK_US: two stacks whose state disagrees (or a
 * forged segment that moved TS.Recent) would otherwise trade ACKs forever.
 * Linux does the same (tcp_invalid_ratelimit, 500 ms).
 */
#define TCP_OOW_ACK_US 500000u

static void tcp_send_oow_ack(struct ss_tcp_conn *c, uint32_t len, uint8_t fl, uint64_t now_us)
{
	if (len == 0 && !(fl & SS_TCP_SYN)) {
		if (c->oow_ack_sent && now_us - c->last_oow_ack_us < TCP_OOW_ACK_US) {
			tcp_st(c)->oow_ack_limited++;
			return;
		}
		c->oow_ack_sent = true;
		c->last_oow_ack_us = now_us;
	}
	tcp_send_ack(c, now_us);
}

/*
 * RFC 9293 §3.10.7.4 fifth, TIME-WAIT: "The only thing that can arrive in
 * this state is a retransmission of the remote FIN.  Acknowledge it, and
 * restart the 2 MSL timeout."  (seventh: text is ignored; eighth: a FIN
 * restarts the timeout.)  An acceptable segment: the 2 MSL restart, and
 * an ACK of RCV.NXT; for a bare ACK at most one per TCP_OOW_ACK_US, as
 * two ends that both wait in TIME-WAIT would trade them forever.
 */
static void tcp_time_wait_input(struct ss_tcp_conn *c, uint32_t len, uint8_t fl, uint64_t now_us)
{
	c->tw_deadline_us = now_us + c->params->time_wait_us;
	if (len || (fl & SS_TCP_FIN))
		tcp_send_ack(c, now_us);
	else
		tcp_send_oow_ack(c, 0, fl, now_us);
}

/* RFC 9293 §3.10.7.4 first: the four acceptability cases. */
static bool tcp_seg_acceptable(const struct ss_tcp_flow *f, uint32_t seq, uint32_t seg_len,
			       uint32_t wnd)
{
	uint32_t lo = f->rcv_nxt, hi = f->rcv_nxt + wnd;

	if (seg_len == 0)
		return wnd == 0 ? seq == lo : ss_seq_between(seq, lo, hi);
	if (wnd == 0)
		return false;
	return ss_seq_between(seq, lo, hi) || ss_seq_between(seq + seg_len - 1, lo, hi);
}

/* RFC 9293 §3.10.7.3: SYN-SENT. */
static void tcp_input_syn_sent(struct ss_tcp_conn *c, const struct ss_tcp *seg,
			       uint32_t len, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	bool ack_ok = false;

	if (seg->flags & SS_TCP_ACK) {
		/* First: SEG.ACK =< ISS or > SND.NXT -> <SEQ=SEG.ACK><CTL=RST>. */
		if (ss_seq_leq(seg->ack, c->iss) || ss_seq_gt(seg->ack, f->snd_max)) {
			tcp_st(c)->drop_syn_sent++;
			if (seg->flags & SS_TCP_RST)
				tcp_st(c)->rst_ignored++;
			else
				tcp_send_rst_reply(c, seg);
			return;
		}
		ack_ok = true;
	}
	if (seg->flags & SS_TCP_RST) {
		tcp_st(c)->rst_rcvd++;
		/* Second: a RST counts only with an acceptable ACK (RFC 5961 §3.2
		 * leaves SYN-SENT to RFC 9293). */
		if (ack_ok)
			tcp_conn_drop(c, ECONNREFUSED, SS_TCP_EV_RESET);
		else
			tcp_st(c)->rst_ignored++;
		return;
	}
	if (!(seg->flags & SS_TCP_SYN)) {
		tcp_st(c)->drop_syn_sent++;
		return;
	}
	/* Fourth: SYN. */
	c->irs = seg->seq;
	f->rcv_nxt = seg->seq + 1;
	f->rcv_adv = f->rcv_nxt;
	tcp_opts_negotiate(c, &seg->opts);
	if (ack_ok)
		tcp_ecn_on_synack(c, seg);
	/* RFC 7323 §2.2: the window of a SYN or SYN-ACK is never scaled. */
	f->snd_wnd = seg->window;
	c->max_snd_wnd = f->snd_wnd;
	f->snd_wl1 = seg->seq;
	f->snd_wl2 = seg->ack;
	if (!ack_ok) {
		/* Simultaneous open: SYN-ACK with our ISS again. */
		f->state = SS_TCPS_SYN_RCVD;
		f->flags &= (uint8_t)~SS_TCPF_RTT_TIMING;
		tcp_send_syn(c, now_us);
		return;
	}
	tcp_ack_advance(c, seg, now_us);
	f->state = SS_TCPS_ESTABLISHED;
	c->events |= SS_TCP_EV_CONNECTED;
	f->flags |= SS_TCPF_ACK_NOW;
	/* RFC 9293: "continue processing at the sixth step": data or FIN that
	 * came with the SYN-ACK. */
	if (len || (seg->flags & SS_TCP_FIN))
		tcp_input_text(c, seg->seq + 1, seg->payload, len,
			       (seg->flags & SS_TCP_FIN) != 0, now_us);
}

/* RFC 9293 §3.10.7.4, SYN_RCVD and the synchronized states. */
static void tcp_input_sync(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint32_t len,
			   uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	struct ss_tcp synack;

	if (f->state == SS_TCPS_SYN_RCVD && seg->seq == c->irs &&
	    (seg->flags & (SS_TCP_SYN | SS_TCP_RST)) == SS_TCP_SYN) {
		/* The peer did not get our SYN-ACK and resent its SYN. */
		if (!(seg->flags & SS_TCP_ACK)) {
			tcp_send_syn(c, now_us);
			return;
		}
		/* Simultaneous open (RFC 9293 Figure 8): the peer's SYN-ACK
		 * repeats the SYN we have; drop that SYN and use its ACK. */
		synack = *seg;
		synack.flags &= (uint8_t)~SS_TCP_SYN;
		synack.seq++;
		seg = &synack;
	}
	uint8_t fl = seg->flags;
	uint32_t seq = seg->seq;

	/* RFC 7323 §5.3 R1 (PAWS) and §3.2 (TSopt required once negotiated);
	 * RSTs are exempt (Linux does the same: a RST may carry no TSopt). */
	if ((f->flags & SS_TCPF_TS) && !(fl & SS_TCP_RST)) {
		if (!(seg->opts.present & SS_TCP_OPTF_TS)) {
			tcp_st(c)->drop_no_ts++;
			return;
		}
		if (ss_seq_lt(seg->opts.ts_val, f->ts_recent)) {
			tcp_st(c)->drop_paws++;
			tcp_send_oow_ack(c, len, fl, now_us);
			return;
		}
	}

	/* First: sequence number acceptability. */
	uint32_t wnd = tcp_rx_free(c);
	uint32_t seg_len = len + !!(fl & SS_TCP_SYN) + !!(fl & SS_TCP_FIN);

	if (!tcp_seg_acceptable(f, seq, seg_len, wnd) &&
	    !(wnd == 0 && seq == f->rcv_nxt)) { /* zero window: still take ACK/RST */
		if (fl & SS_TCP_RST) {
			/* RFC 5961 §3.2: RST outside the window: drop silently. */
			tcp_st(c)->rst_rcvd++;
			tcp_st(c)->rst_ignored++;
			return;
		}
		if (fl & SS_TCP_SYN) {
			tcp_st(c)->drop_out_of_window++;
			tcp_send_challenge_ack(c, now_us); /* RFC 5961 §4.2 */
			return;
		}
		if (f->state == SS_TCPS_TIME_WAIT && (fl & SS_TCP_FIN)) {
			/* Retransmitted FIN: ACK it and restart 2MSL (§3.10.7.4 eighth). */
			c->tw_deadline_us = now_us + c->params->time_wait_us;
			tcp_send_ack(c, now_us);
			return;
		}
		if (len && ss_seq_leq(seq + seg_len, f->rcv_nxt))
			tcp_st(c)->dup_data += len; /* old duplicate */
		else
			tcp_st(c)->drop_out_of_window++;
		if (f->state == SS_TCPS_SYN_RCVD)
			tcp_send_syn(c, now_us);
		else
			tcp_send_oow_ack(c, len, fl, now_us);
		return;
	}

	/* Second: RST (RFC 5961 §3.2: exact match resets, else challenge). */
	if (fl & SS_TCP_RST) {
		tcp_st(c)->rst_rcvd++;
		if (seq == f->rcv_nxt)
			tcp_input_reset(c);
		else
			tcp_send_challenge_ack(c, now_us);
		return;
	}

	/* Fourth: SYN in a synchronized state (RFC 5961 §4.2). */
	if (fl & SS_TCP_SYN) {
		tcp_send_challenge_ack(c, now_us);
		return;
	}

	/* Fifth: ACK. */
	if (!(fl & SS_TCP_ACK)) {
		tcp_st(c)->drop_no_ack++;
		return;
	}
	if (f->state == SS_TCPS_SYN_RCVD) {
		if (!ss_seq_gt(seg->ack, f->snd_una) || ss_seq_gt(seg->ack, f->snd_max)) {
			tcp_st(c)->drop_old_ack++;
			tcp_send_rst_reply(c, seg);
			return;
		}
	} else if (ss_seq_gt(seg->ack, f->snd_max)) {
		/* RFC 5961 §5.2: acks data never sent. */
		tcp_st(c)->drop_future_ack++;
		tcp_send_challenge_ack(c, now_us);
		return;
	} else if (ss_seq_lt(seg->ack, f->snd_una - c->max_snd_wnd)) {
		/* RFC 5961 §5.2: older than any window the peer could have seen. */
		tcp_st(c)->drop_old_ack++;
		tcp_send_challenge_ack(c, now_us);
		return;
	}

	/* RFC 7323 §4.3: TS.Recent from a segment covering Last.ACK.sent
	 * (approximated by rcv_nxt, as Linux does). */
	if ((f->flags & SS_TCPF_TS) && ss_seq_leq(seq, f->rcv_nxt) &&
	    ss_seq_geq(seg->opts.ts_val, f->ts_recent))
		f->ts_recent = seg->opts.ts_val;

	if (f->state == SS_TCPS_SYN_RCVD) {
		f->state = (f->flags & SS_TCPF_FIN_QUEUED) ? SS_TCPS_FIN_WAIT_1 : SS_TCPS_ESTABLISHED;
		c->events |= SS_TCP_EV_CONNECTED;
		f->snd_wl1 = seq - 1; /* force the window update below */
	}

	/* RFC 5681 §2: a duplicate ACK carries no data, does not move the
	 * window, acks snd_una, and data is outstanding.  RFC 6675 §2: an
	 * ACK reporting new SACK information counts too, window change or
	 * not (Linux grows its window while it queues out-of-order data). */
	bool sack_new = tcp_sack_reports_new(c, seg);
	/* RACK (RFC 8985 §6.2): what this ACK delivered, and what that
	 * shows lost, before recovery acts on it. */
	bool rack = (f->flags & SS_TCPF_SACK_PERM) && f->snd_max != f->snd_una &&
		    tcp_state_can_send(f->state);

	if (rack)
		tcp_rack_on_ack(c, seg, now_us);
	bool dup = len == 0 && !(fl & SS_TCP_FIN) && seg->ack == f->snd_una &&
		   f->snd_max != f->snd_una &&
		   (((uint32_t)seg->window << f->snd_wscale) == f->snd_wnd || sack_new) &&
		   !c->persist_deadline_us && tcp_state_can_send(f->state);

	if (ss_seq_gt(seg->ack, f->snd_una))
		tcp_ack_advance(c, seg, now_us);
	else if (dup)
		tcp_cc_on_dupack(c, seg, sack_new, now_us);
	if (ss_seq_geq(seg->ack, f->snd_una))
		tcp_snd_wnd_update(c, seg);
	if (rack)
		tcp_rack_after_ack(c, now_us);

	switch (f->state) {
	case SS_TCPS_FIN_WAIT_1:
		if (tcp_fin_acked(c)) {
			f->state = SS_TCPS_FIN_WAIT_2;
			if (c->closed_by_app)
				c->tw_deadline_us = now_us + c->params->fin_wait2_us;
		}
		break;
	case SS_TCPS_CLOSING:
		if (tcp_fin_acked(c))
			tcp_time_wait_enter(c, now_us);
		return;
	case SS_TCPS_LAST_ACK:
		if (tcp_fin_acked(c))
			tcp_state_set(c, SS_TCPS_CLOSED);
		return;
	case SS_TCPS_TIME_WAIT:
		tcp_time_wait_input(c, len, fl, now_us);
		return;
	case SS_TCPS_CLOSE_WAIT:
		return; /* the peer's FIN is in: its text is ignored */
	default:
		break;
	}

	if (len || (fl & SS_TCP_FIN))
		tcp_input_text(c, seq, seg->payload, len, (fl & SS_TCP_FIN) != 0, now_us);
}

void tcp_input_slow(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	c->st.slow_path++;
	/* No IPv4 segment is longer; anything else is not network input. */
	if (seg->payload_len > 0xffff || (seg->payload_len && !seg->payload)) {
		tcp_st(c)->drop_out_of_window++;
		return;
	}
	uint32_t len = (uint32_t)seg->payload_len;

	switch (c->f.state) {
	case SS_TCPS_CLOSED:
		/* RFC 9293 §3.10.7.1: everything but a RST is answered by a RST. */
		tcp_send_rst_reply(c, seg);
		return;
	case SS_TCPS_SYN_SENT:
		tcp_input_syn_sent(c, seg, len, now_us);
		return;
	default:
		tcp_input_sync(c, seg, len, now_us);
		return;
	}
}
