/* tcp_cc.c - RTT estimation (RFC 6298), the window (RFC 5681) and NewReno recovery without SACK (RFC 6582). */

#include "tcp/tcp_int.h"

static inline uint32_t tcp_u32_max(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static inline uint32_t tcp_u32_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* RFC 6928 §2: IW = min(10*MSS, max(2*MSS, 14600)).  ssthresh starts
 * "arbitrarily high" (RFC 5681 §3.1). */
void tcp_cc_init(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t mss = f->mss;

	f->cwnd = tcp_u32_min(10 * mss, tcp_u32_max(2 * mss, 14600));
	f->ssthresh = UINT32_MAX;
}

void tcp_rtt_sample(struct ss_tcp_conn *c, uint32_t rtt_us)
{
	tcp_rtt_sample_inline(c, rtt_us);
}

/* RFC 5681 eq. 4 / RFC 6582 §3.2 step 2: half the flight, at least 2 SMSS. */
static uint32_t tcp_cc_loss_ssthresh(const struct ss_tcp_flow *f)
{
	uint32_t flight = f->snd_max - f->snd_una;

	return tcp_u32_max(flight / 2, 2u * f->mss);
}

/* New data acknowledged (@acked sequence bytes) by @seg: tcp_cc_on_ack()
 * (tcp_int.h) when in recovery or the engine owns the window. */
void tcp_cc_on_ack_slow(struct ss_tcp_conn *c, uint32_t acked, const struct ss_tcp *seg,
			uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	bool own = c->cc_mode == SS_TCP_CC_ENGINE;

	if ((f->flags & SS_TCPF_IN_RECOVERY) && (f->flags & SS_TCPF_SACK_PERM)) {
		/* In recovery every ACK takes the slow path, which has read
		 * its SACK blocks and run RACK (tcp_rack_on_ack()). */
		tcp_rec_ack(c, true, 0, now_us);
		return;
	}
	if (f->flags & SS_TCPF_IN_RECOVERY) {
		if (ss_seq_geq(f->snd_una, f->recover)) {
			/* RFC 6582 §3.2 step 3 (full ACK): deflate to ssthresh. */
			if (own)
				f->cwnd = f->ssthresh;
			f->flags &= (uint8_t)~SS_TCPF_IN_RECOVERY;
			f->dupacks = 0;
			return;
		}
		/* Step 5 (partial ACK): resend the next hole, deflate by the data
		 * acked, add one SMSS back if at least one SMSS was acked, and
		 * restart the timer for the first partial ACK. */
		tcp_retransmit_una(c, now_us);
		tcp_st(c)->fast_retrans++;
		if (!own)
			return; /* the control loop owns the window */
		f->cwnd = f->cwnd > acked ? f->cwnd - acked : 0;
		if (acked >= f->mss)
			f->cwnd += f->mss;
		if (f->cwnd < f->mss)
			f->cwnd = f->mss;
		return;
	}
	f->dupacks = 0;
	if (!acked || !own)
		return; /* only our SYN or FIN was acknowledged, or not our window */
	if (f->cwnd < f->ssthresh) {
		/* Slow start, RFC 5681 eq. 2 with L = 1 SMSS (RFC 3465). */
		f->cwnd += tcp_u32_min(acked, f->mss);
	} else {
		/* Congestion avoidance, RFC 5681 eq. 3. */
		uint32_t inc = (uint32_t)((uint64_t)f->mss * f->mss / f->cwnd);

		f->cwnd += inc ? inc : 1;
	}
}

/*
 * A duplicate ACK (RFC 5681 §2 definition, checked by the caller; RFC
 * 6675 §2: one with new SACK information counts too).
 *
 * Loss of the segment at snd_una is declared on the third duplicate ACK
 * (RFC 5681 §3.2), or, with SACK, as soon as more than (DupThresh - 1) *
 * SMSS bytes above it have been SACKed (RFC 6675 §4 IsLost), or when RACK
 * found it lost (RFC 8985 §6.2, tcp_rack.c: a segment sent after it was
 * delivered and the reordering window passed): one surviving ACK then
 * suffices when others are lost, and small windows that cannot produce
 * three duplicates still recover without a timeout.  With SACK,
 * recovery is tcp_recovery.c's; without, NewReno's (RFC 6582).
 */
void tcp_cc_on_dupack(struct ss_tcp_conn *c, const struct ss_tcp *seg, bool sack_new,
		      uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	bool own = c->cc_mode == SS_TCP_CC_ENGINE;
	bool sack = f->flags & SS_TCPF_SACK_PERM;
	/* RFC 6937 §3: a duplicate ACK without SACK blocks stands for one
	 * segment delivered. */
	uint32_t estimate = (seg->opts.present & SS_TCP_OPTF_SACK) ? 0 : f->mss;

	tcp_st(c)->dup_acks++;
	if (f->flags & SS_TCPF_IN_RECOVERY) {
		if (sack) {
			tcp_rec_ack(c, false, estimate, now_us);
			return;
		}
		/* RFC 6582 §3.2 step 4: inflate for the segment that left. */
		if (own)
			f->cwnd += f->mss;
		return;
	}
	if (f->dupacks < UINT8_MAX)
		f->dupacks++;
	if (f->dupacks < 3 &&
	    !(sack && (ss_seq_gt(tcp_sack_lost_point(c), f->snd_una) ||
		       (ss_seq_gt(c->rack_lost_to, f->snd_una) &&
			ss_seq_leq(c->rack_lost_to, f->snd_max)))))
		return;
	/* RFC 6582 §3.2 step 2: enter recovery only if the ACK covers more
	 * than recover (avoids a second reduction for one loss episode).  Our
	 * recover is snd_max, one past the RFC's "highest sequence number
	 * transmitted", hence >=.  With SACK the receiver proves it holds
	 * data beyond a hole, which a go-back-N resend after a timeout cannot
	 * fake (its duplicates come back as D-SACK, not new SACK): recover at
	 * once (RFC 6675 §5) instead of waiting for another timeout. */
	if (ss_seq_lt(f->snd_una, f->recover) && !sack_new)
		return;
	if (sack) {
		tcp_rec_enter(c, estimate, now_us);
		return;
	}
	f->recover = f->snd_max;
	f->flags |= SS_TCPF_IN_RECOVERY;
	tcp_st(c)->fast_retrans++;
	c->cc.fast_retx++;
	if (own)
		f->ssthresh = tcp_cc_loss_ssthresh(f);
	tcp_retransmit_una(c, now_us);
	/* RFC 5681 §3.2 step 3: artificially inflate by the 3 segments that left. */
	if (own)
		f->cwnd = f->ssthresh + 3u * f->mss;
}

/* Retransmission timer expired (first expiry of an episode sets ssthresh:
 * RFC 5681 eq. 4; every expiry resets cwnd to the loss window).  Counted
 * for the control loop in every mode. */
void tcp_cc_on_rto(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;

	c->cc.timeouts++;
	if (c->cc_mode == SS_TCP_CC_ENGINE) {
		if (f->backoff == 0)
			f->ssthresh = tcp_cc_loss_ssthresh(f);
		f->cwnd = f->mss;
	} else if (c->cc_mode == SS_TCP_CC_WINDOW) {
		f->cwnd = f->mss; /* until the control loop has seen the timeout */
	}
	f->dupacks = 0;
	f->flags &= (uint8_t)~SS_TCPF_IN_RECOVERY;
	/* RFC 6582 §3.2 step 4 after a timeout: record recover. */
	f->recover = f->snd_max;
}
