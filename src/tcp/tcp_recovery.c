/* tcp_recovery.c - SACK loss recovery driven by the pipe (RFC 6675 §5), PRR (RFC 6937), recovery after a timeout. */
#include "tcp/tcp_int.h"

/*
 * An episode lasts from its start (enough SACKed above snd_una, or three
 * duplicate ACKs; or a retransmission timeout) until snd_una reaches
 * recover, snd_max at the start.  Throughout, what may be sent is
 * cwnd - pipe (RFC 6675 §5 step C): lost data first (NextSeg rule 1,
 * here), then new data (rule 2, ss_tcp_output()'s loop, given what room
 * is left), and with no new data one rescue retransmission of the tail
 * (rule 4).  Lost means IsLost() (RFC 6675
 * §4, DupThresh), RACK's verdict (RFC 8985 §6, tcp_rack.c) or the
 * episode's own knowledge (the first segment, everything after a
 * timeout).  Rule 3 (unSACKed data not yet lost) is left out, as Linux
 * does: what it would resend is usually still on its way.
 *
 * Who sets cwnd: ENGINE mode, PRR during a fast recovery (RFC 6937) and
 * slow start after a timeout (RFC 5681 §3.1); WINDOW and RATE modes, the
 * control loop (a timeout in WINDOW mode leaves one MSS until it speaks).
 * In RATE mode new data also waits for the pacing budget, and so do the
 * resends after a timeout (they are most of what is sent then); the fast
 * recovery's resends follow the ACKs as they always did.
 */

static inline uint32_t u32_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static inline uint32_t u32_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/* Unsacked data below the point returned is lost: IsLost() (RFC 6675 §4),
 * RACK (RFC 8985 §6.2, conn->rack_lost_to) or the episode's own knowledge
 * (conn->lost_to). */
static uint32_t rec_lost_point(const struct ss_tcp_conn *c)
{
	uint32_t p = tcp_sack_lost_point(c);

	if (ss_seq_gt(c->lost_to, p))
		p = c->lost_to;
	if (ss_seq_gt(c->rack_lost_to, p) && ss_seq_leq(c->rack_lost_to, c->f.snd_max))
		p = c->rack_lost_to;
	return p;
}

/* New data (or our FIN) could go now, window permitting: NextSeg rule 2. */
static bool rec_new_data(const struct ss_tcp_conn *c)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t end = tcp_data_end(c);

	if (ss_seq_lt(f->snd_nxt, end))
		return ss_seq_lt(f->snd_nxt, f->snd_una + f->snd_wnd);
	return (f->flags & SS_TCPF_FIN_QUEUED) && !(f->flags & SS_TCPF_FIN_SENT);
}

/* The resends after a timeout of a paced flow wait for budget. */
static inline bool rec_paced(const struct ss_tcp_conn *c)
{
	return c->rec_rto && c->tx_budget != SS_TCP_BUDGET_UNLIMITED;
}

/* Resend [seq, seq + len) and put it in the list. */
static bool rec_resend(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint64_t now_us)
{
	if (tcp_retransmit_seq(c, seq, len, now_us) != 0)
		return false;
	tcp_sack_rxt_add(c, seq, seq + len, now_us);
	c->prr_out += len;
	if (seq != c->f.snd_una)
		tcp_st(c)->sack_rexmits++;
	if (rec_paced(c))
		c->tx_budget = len >= c->tx_budget ? 0 : c->tx_budget - len;
	return true;
}

/*
 * RFC 6675 §5 step (C): while cwnd - pipe allows a segment, send what
 * NextSeg() names: lost data (rule 1); if no new data may go, one rescue
 * retransmission per episode (rule 4): the highest unSACKed segment.
 * Returns segments sent; *@room: what cwnd - pipe leaves for new data.
 */
unsigned tcp_rec_send(struct ss_tcp_conn *c, uint64_t now_us, uint32_t *room)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t lost = rec_lost_point(c);
	uint32_t pipe = tcp_sack_pipe(c, lost);
	uint32_t seq, len;
	unsigned n = 0;

	if (ss_seq_gt(lost, f->snd_max))
		lost = f->snd_max;
	while (c->rxt_n < SS_TCP_RXT_MAX &&
	       tcp_sack_next_unsent(c, f->snd_una, lost, &seq, &len)) {
		if (pipe >= f->cwnd || f->cwnd - pipe < u32_min(len, f->mss))
			break;
		if (rec_paced(c) && !c->tx_budget) {
			c->budget_hit = 1;
			break;
		}
		if (!rec_resend(c, seq, len, now_us))
			break;
		pipe += len;
		n++;
	}
	if (!n && !c->rescue_sent && c->rxt_n < SS_TCP_RXT_MAX && pipe < f->cwnd &&
	    !rec_new_data(c) && !(rec_paced(c) && !c->tx_budget)) {
		/* Rule 4: the tail above the highest SACK, if unSACKed, once
		 * every hole below it was resent (rule 3, left out, would
		 * have sent those first).  RACK (tcp_rack.c) cannot find a
		 * lost tail when nothing sent after it comes back, and no
		 * tail loss probe goes in recovery (RFC 8985 §7.2): without
		 * this, the RTO would. */
		uint32_t top = c->sackb_n ? c->sackb[c->sackb_n - 1].right : f->snd_una, s3, l3;

		len = u32_min(f->snd_max - top, f->mss);
		if (ss_seq_lt(top, f->snd_max) &&
		    !tcp_sack_next_unsent(c, f->snd_una, top, &s3, &l3) &&
		    !tcp_sack_rxt_covers(c, f->snd_max - len, f->snd_max)) {
			c->rescue_sent = 1;
			if (rec_resend(c, f->snd_max - len, len, now_us)) {
				tcp_st(c)->rescue_rexmits++;
				pipe += len;
				n++;
			}
		}
	}
	*room = pipe < f->cwnd ? f->cwnd - pipe : 0;
	return n;
}

uint32_t ss_tcp_resend_pending(const struct ss_tcp_conn *c)
{
	uint32_t lost = rec_lost_point(c), seq, len;

	if (!(c->f.flags & SS_TCPF_IN_RECOVERY) || !(c->f.flags & SS_TCPF_SACK_PERM))
		return 0;
	if (ss_seq_gt(lost, c->f.snd_max))
		lost = c->f.snd_max;
	return tcp_sack_next_unsent(c, c->f.snd_una, lost, &seq, &len) ? len : 0;
}

/* RFC 6937 §3, per ACK in a fast recovery (ENGINE mode): cwnd = pipe +
 * sndcnt, sndcnt proportional to what was delivered while pipe is above
 * ssthresh, then the slow-start reduction bound (PRR-SSRB) up to it. */
static void rec_prr(struct ss_tcp_conn *c, uint32_t delivered, uint32_t pipe)
{
	struct ss_tcp_flow *f = &c->f;
	int64_t sndcnt;

	c->prr_delivered += delivered;
	if (pipe > f->ssthresh) {
		uint64_t fs = c->recover_fs ? c->recover_fs : 1;

		sndcnt = (int64_t)(((uint64_t)c->prr_delivered * f->ssthresh + fs - 1) / fs) -
			 c->prr_out;
	} else {
		int64_t limit = (int64_t)c->prr_delivered - c->prr_out;

		if (limit < (int64_t)delivered)
			limit = delivered;
		limit += f->mss;
		sndcnt = (int64_t)(f->ssthresh - pipe);
		if (sndcnt > limit)
			sndcnt = limit;
	}
	if (sndcnt < 0)
		sndcnt = 0;
	/* The fast retransmission goes at the start whatever the ratio says
	 * (RFC 6675 §5 step 4.3). */
	if (!c->prr_out && sndcnt < f->mss)
		sndcnt = f->mss;
	if (sndcnt > UINT32_MAX / 2)
		sndcnt = UINT32_MAX / 2;
	f->cwnd = pipe + (uint32_t)sndcnt;
	if (!f->cwnd)
		f->cwnd = f->mss;
}

/* End of the episode (snd_una reached recover). */
static void rec_exit(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;

	/* RFC 6937 §3: the reduction ends at ssthresh.  After a timeout,
	 * slow start goes on. */
	if (c->cc_mode == SS_TCP_CC_ENGINE && !c->rec_rto)
		f->cwnd = f->ssthresh;
	f->flags &= (uint8_t)~SS_TCPF_IN_RECOVERY;
	f->dupacks = 0;
	c->rec_rto = 0;
	tcp_sack_rxt_clear(c);
}

/*
 * An ACK in recovery: @advanced when it moved snd_una, @estimate the
 * bytes a duplicate ACK without SACK blocks stands for (RFC 6937 §3:
 * one MSS), else 0.  The scoreboard is up to date.
 */
void tcp_rec_ack(struct ss_tcp_conn *c, bool advanced, uint32_t estimate, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t room;

	tcp_sack_prune(c);
	/* DeliveredData (RFC 6937 §3): snd_una's move plus the change in
	 * what is SACKed. */
	int64_t delivered = (int64_t)(uint32_t)(f->snd_una - c->rec_una) +
			    ((int64_t)c->sacked - (int64_t)c->rec_sacked) + estimate;

	c->rec_una = f->snd_una;
	c->rec_sacked = c->sacked;
	if (delivered < 0)
		delivered = 0;
	if (ss_seq_geq(f->snd_una, f->recover)) {
		rec_exit(c);
		return;
	}
	/* A partial ACK: without RACK's transmit times, the segment now at
	 * snd_una is taken as sent before the resend that was just delivered,
	 * so lost too (RFC 6582 §3.2 step 5 resends it).  RACK knows when it
	 * was sent (tcp_rack.c): it may have left after that resend. */
	if (advanced && !c->rack_valid) {
		uint32_t to = f->snd_una + f->mss;

		if (ss_seq_gt(to, f->recover))
			to = f->recover;
		if (ss_seq_gt(to, c->lost_to))
			c->lost_to = to;
	}
	tcp_sack_rxt_update(c, tcp_sack_lost_point(c), now_us);
	if (c->cc_mode == SS_TCP_CC_ENGINE) {
		if (c->rec_rto) {
			/* RFC 5681 §3.1 after a timeout: slow start, then
			 * congestion avoidance, on what was delivered. */
			if (f->cwnd < f->ssthresh)
				f->cwnd += u32_min((uint32_t)delivered, f->mss);
			else if (delivered)
				f->cwnd += u32_max((uint32_t)((uint64_t)f->mss * f->mss / f->cwnd), 1);
		} else {
			rec_prr(c, (uint32_t)delivered, tcp_sack_pipe(c, rec_lost_point(c)));
		}
	}
	tcp_rec_send(c, now_us, &room);
}

/* Start a fast recovery (RFC 6675 §5 step 4; RFC 6937 initialisation). */
void tcp_rec_enter(struct ss_tcp_conn *c, uint32_t estimate, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	f->recover = f->snd_max;
	f->flags |= SS_TCPF_IN_RECOVERY;
	c->rec_rto = 0;
	c->rescue_sent = 0;
	c->lost_to = f->snd_una + u32_min(f->mss, f->snd_max - f->snd_una);
	tcp_sack_rxt_clear(c);
	c->prr_delivered = 0;
	c->prr_out = 0;
	c->recover_fs = f->snd_max - f->snd_una;
	/* This ACK's own SACK blocks count as delivered (RFC 6937 §3). */
	c->rec_una = f->snd_una;
	c->rec_sacked = c->sacked - (c->sack_delta < c->sacked ? c->sack_delta : c->sacked);
	tcp_st(c)->fast_retrans++;
	c->cc.fast_retx++;
	if (c->cc_mode == SS_TCP_CC_ENGINE)
		f->ssthresh = u32_max((f->snd_max - f->snd_una) / 2, 2u * f->mss);
	tcp_rec_ack(c, false, estimate, now_us);
}

/* After a retransmission timeout (tcp_cc_on_rto() set the windows): all
 * that is not SACKed is lost; recovery resends it from the scoreboard,
 * not what the peer holds (RFC 6675 §5.1), as the window grows. */
void tcp_rec_on_rto(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;

	f->recover = f->snd_max;
	f->snd_nxt = f->snd_max;
	f->flags |= SS_TCPF_IN_RECOVERY;
	c->rec_rto = 1;
	c->rescue_sent = 0;
	c->lost_to = f->snd_max;
	tcp_sack_rxt_clear(c);
	c->prr_delivered = 0;
	c->prr_out = 0;
	c->recover_fs = f->snd_max - f->snd_una;
	tcp_sack_prune(c);
	c->rec_una = f->snd_una;
	c->rec_sacked = c->sacked;
}
