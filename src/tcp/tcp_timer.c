/* tcp_timer.c - timers: retransmission (RFC 6298), tail loss probe and RACK reorder timeout (RFC 8985 §7, §6.3), persist (RFC 9293 §3.8.6.1), TIME_WAIT and FIN_WAIT_2. */
#include <errno.h>

#include "tcp/tcp_int.h"

/* Give up: RFC 9293 §3.8.3 R2 ("close the connection"), with a RST from a
 * synchronized state so the peer does not keep a half-open connection. */
static void tcp_timer_give_up(struct ss_tcp_conn *c, uint64_t now_us)
{
	if (c->f.state != SS_TCPS_SYN_SENT && c->f.state != SS_TCPS_SYN_RCVD)
		tcp_send_rst(c, now_us);
	tcp_conn_drop(c, ETIMEDOUT, SS_TCP_EV_ERROR);
}

/* RFC 6298 §5.4-5.6: retransmit the earliest unacknowledged segment,
 * double the RTO, restart the timer; RFC 5681 §3.1 eq. 4 for the windows.
 * With SACK, recovery resends what the peer does not hold as the window
 * allows (tcp_rec_on_rto()); without, we go back N (snd_nxt = snd_una)
 * and let ss_tcp_output() resend as far as the loss window allows. */
static void tcp_timer_rto(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	c->rto_deadline_us = 0;
	if (f->snd_una == f->snd_max) {
		/* Armed only because an emit failed: just try again; or the
		 * cork's limit passed: what it holds goes. */
		c->txopt = (uint8_t)((c->txopt | SS_TCP_TXO_PUSH) & ~SS_TCP_TXO_CTIMER);
		ss_tcp_output(c, now_us);
		return;
	}
	tcp_st(c)->rto_fired++;
	if (f->state == SS_TCPS_SYN_SENT || f->state == SS_TCPS_SYN_RCVD) {
		if (c->retries >= c->params->syn_retries) {
			tcp_timer_give_up(c, now_us);
			return;
		}
		c->retries++;
		if (f->backoff < SS_TCP_BACKOFF_MAX)
			f->backoff++;
		tcp_rtt_karn(c);
		tcp_st(c)->retrans_segs++;
		tcp_send_syn(c, now_us);
		tcp_rto_arm(c, now_us);
		return;
	}
	if (c->retries >= c->params->max_retries) {
		tcp_timer_give_up(c, now_us);
		return;
	}
	c->retries++;
	tcp_cc_on_rto(c); /* before backoff++: ssthresh only on the first expiry */
	if (f->backoff < SS_TCP_BACKOFF_MAX)
		f->backoff++;
	tcp_rtt_karn(c);
	if (f->flags & SS_TCPF_SACK_PERM)
		tcp_rec_on_rto(c); /* resend what is not SACKed (RFC 6675 §5.1) */
	else
		f->snd_nxt = f->snd_una;
	ss_tcp_output(c, now_us);
	if (!c->rto_deadline_us && !c->persist_deadline_us)
		tcp_rto_arm(c, now_us);
}

/* Zero-window probe; unanswered probes count toward max_retries, answered
 * ones do not (tcp_snd_wnd_update() resets the count). */
static void tcp_timer_persist(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	c->persist_deadline_us = 0;
	if (!tcp_state_can_send(f->state) || f->snd_wnd) {
		c->persist_backoff = 0;
		ss_tcp_output(c, now_us);
		return;
	}
	if (c->retries >= c->params->max_retries) {
		tcp_timer_give_up(c, now_us);
		return;
	}
	c->retries++;
	tcp_persist_probe(c, now_us);
	if (c->persist_backoff < SS_TCP_BACKOFF_MAX)
		c->persist_backoff++;
	uint64_t t = (uint64_t)f->rto_us << c->persist_backoff;

	if (t > c->params->rto_max_us)
		t = c->params->rto_max_us;
	c->persist_deadline_us = now_us + t;
}

/*
 * The delayed ACK's hold (deadline @dl) passed with no reply: the ACK goes
 * alone.  A reply that follows with no data in between may move the
 * connection to a longer hold (SS_TCP_ACKP_LATE, tcp_delack_late() in
 * tcp_out.c); data that follows first moves it back to the usual one
 * (tcp_delack_unlate() in tcp_in.c).
 */
static void tcp_delack_fire(struct ss_tcp_conn *c, uint64_t dl, uint64_t now_us)
{
	const struct ss_tcp_params *p = c->params;
	uint64_t since = dl - c->delack_hold_us; /* the data's arrival */

	c->f.flags |= SS_TCPF_ACK_NOW;
	ss_tcp_output(c, now_us);
	if (c->ack_pending & SS_TCP_ACKP_OWED)
		return; /* not sent (no buffer): ACK_NOW stays for the next output */
	tcp_st(c)->delack_acks++;
	if (p->delack_max_us > p->delack_us) {
		c->ack_pending = SS_TCP_ACKP_LATE;
		c->delack_late_us = since;
	}
}

void ss_tcp_timer(struct ss_tcp_conn *c, uint64_t now_us)
{
	uint64_t dl = c->delack_deadline_us;

	if (dl && now_us >= dl) {
		c->delack_deadline_us = 0;
		if ((c->ack_pending & SS_TCP_ACKP_OWED) && c->f.state != SS_TCPS_CLOSED)
			tcp_delack_fire(c, dl, now_us);
	}
	if (c->tw_deadline_us && now_us >= c->tw_deadline_us) {
		c->tw_deadline_us = 0;
		if (c->f.state == SS_TCPS_TIME_WAIT) {
			tcp_state_set(c, SS_TCPS_CLOSED);
		} else if (tcp_ka_owns_tw(c)) {
			tcp_ka_timer(c, now_us);
		} else if (c->f.state == SS_TCPS_FIN_WAIT_2) {
			/* Orphaned FIN_WAIT_2 (app closed): reset like Linux. */
			tcp_send_rst(c, now_us);
			tcp_state_set(c, SS_TCPS_CLOSED);
		}
	}
	if (c->rto_deadline_us && c->tlp_deadline_us && now_us >= c->tlp_deadline_us &&
	    now_us < c->rto_deadline_us && c->f.snd_una != c->f.snd_max) {
		/* The slot holds the probe or RACK's reorder timer. */
		if (c->tlp_deadline_us == c->rack_reo_us)
			tcp_rack_timeout(c, now_us);
		else
			tcp_tail_probe(c, now_us);
	}
	if (c->rto_deadline_us && now_us >= c->rto_deadline_us)
		tcp_timer_rto(c, now_us);
	if (c->persist_deadline_us && now_us >= c->persist_deadline_us)
		tcp_timer_persist(c, now_us);
}
