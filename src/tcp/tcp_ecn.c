/* tcp_ecn.c - Explicit Congestion Notification (RFC 3168): negotiation, ECT marking, CE echo, the sender's reaction. */
#include "tcp/tcp_int.h"

/*
 * Classic ECN, as Linux peers speak it: a SYN with ECE+CWR offers it, a
 * SYN-ACK with ECE alone accepts (§6.1.1).  New data then goes out ECT(0)
 * (never SYNs, pure ACKs or retransmissions, §6.1.4-5).  A receiver that
 * sees CE sets ECE on its ACKs until a segment with CWR arrives (§6.1.3);
 * it also ACKs at once so the sender learns as early as DCTCP wants.  With
 * ecn_dctcp (our own algorithm is DCTCP) the receiver echoes per ACK
 * instead: ECE on exactly the ACKs that cover CE-marked data (RFC 8257
 * §3.2), which is what a DCTCP sender measures its marked fraction from.  A sender that sees
 * ECE halves its window at most once per window of data and says so with
 * CWR on its next new segment (§6.1.2).
 */

void tcp_ecn_on_syn(struct ss_tcp_conn *c, const struct ss_tcp *syn)
{
	c->ecn_ok = c->params->ecn &&
		    (syn->flags & (SS_TCP_ECE | SS_TCP_CWR)) == (SS_TCP_ECE | SS_TCP_CWR);
}

void tcp_ecn_on_synack(struct ss_tcp_conn *c, const struct ss_tcp *synack)
{
	c->ecn_ok = c->params->ecn &&
		    (synack->flags & (SS_TCP_ECE | SS_TCP_CWR)) == SS_TCP_ECE;
}

/* A segment in a synchronized state with CE, ECE or CWR (checked by the
 * caller: the common segment has none of them). */
void tcp_ecn_input(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	if (!c->ecn_ok || (seg->flags & SS_TCP_SYN))
		return;
	if ((seg->flags & SS_TCP_CWR) && !c->ecn_dctcp)
		c->ece_pending = 0;
	if (seg->ip_ecn == SS_IP_ECN_CE && seg->payload_len) {
		/* RFC 8257 §3.2: the CE state changes with data not yet
		 * acknowledged: acknowledge that data first, without ECE, so
		 * ECE covers exactly the marked bytes. */
		if (c->ecn_dctcp && !c->ece_pending && f->rcv_nxt != c->last_ack_sent)
			tcp_send_ack(c, now_us);
		tcp_st(c)->ce_segs++;
		c->ce_bytes += (uint32_t)seg->payload_len;
		c->ece_pending = 1;
		f->flags |= SS_TCPF_ACK_NOW;
	}
	if ((seg->flags & (SS_TCP_ECE | SS_TCP_ACK)) == (SS_TCP_ECE | SS_TCP_ACK) &&
	    !(f->flags & SS_TCPF_IN_RECOVERY) && ss_seq_geq(seg->ack, c->ecn_recover) &&
	    f->snd_max != f->snd_una) {
		/* Once per window: CWR tells a classic receiver to stop echoing.
		 * Only the engine's own NewReno halves here; a control loop
		 * reads the ECE-acked bytes from c->cc instead. */
		c->ecn_recover = f->snd_max;
		c->cwr_pending = 1;
		if (c->cc_mode == SS_TCP_CC_ENGINE) {
			uint32_t flight = f->snd_max - f->snd_una;
			uint32_t half = flight / 2 > 2u * f->mss ? flight / 2 : 2u * f->mss;

			f->ssthresh = half;
			f->cwnd = half;
			tcp_st(c)->ecn_reductions++;
		} else {
			tcp_st(c)->ecn_echoes++;
		}
	}
}

/* ECE and CWR added to the @flags of an outgoing non-SYN segment; returns
 * its IP ECN field. */
uint8_t tcp_ecn_output(const struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t *flags)
{
	if (!c->ecn_ok)
		return 0;
	if ((*flags & SS_TCP_ACK) && c->ece_pending)
		*flags |= SS_TCP_ECE;
	if (len && ss_seq_geq(seq, c->f.snd_max)) {
		if (c->cwr_pending)
			*flags |= SS_TCP_CWR;
		return SS_IP_ECN_ECT0;
	}
	return 0;
}
