/* tcp_cc.c - RTT estimation (RFC 6298) and NewReno congestion control (RFC 5681, RFC 6582). */
#include <string.h>

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

static bool tcp_sack_rexmit_next(struct ss_tcp_conn *c, uint64_t now_us);

/* New data acknowledged (@acked sequence bytes): tcp_cc_on_ack() (tcp_int.h)
 * when in recovery or the engine owns the window. */
void tcp_cc_on_ack_slow(struct ss_tcp_conn *c, uint32_t acked, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	bool own = c->cc_mode == SS_TCP_CC_ENGINE;

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
		 * restart the timer for the first partial ACK.  The segment now
		 * at snd_una may have gone already from the scoreboard: then the
		 * next lost hole above goes instead, if there is one. */
		if (ss_seq_lt(f->snd_una, c->rexmit_next)) {
			if (tcp_sack_rexmit_next(c, now_us))
				tcp_st(c)->fast_retrans++;
		} else {
			tcp_retransmit_una(c, now_us);
			tcp_st(c)->fast_retrans++;
		}
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

/* ---- the SACK scoreboard (RFC 6675 §3) ------------------------------- */

/* Forget the ranges snd_una has passed. */
static void sackb_prune(struct ss_tcp_conn *c)
{
	uint32_t una = c->f.snd_una;
	unsigned n = c->sackb_n, i = 0;

	while (i < n && ss_seq_leq(c->sackb[i].right, una))
		i++;
	if (i) {
		memmove(c->sackb, c->sackb + i, (n - i) * sizeof(c->sackb[0]));
		n -= i;
	}
	if (n && ss_seq_lt(c->sackb[0].left, una))
		c->sackb[0].left = una;
	c->sackb_n = (uint8_t)n;
}

/* Merges [l, r) into the board; on a full board the highest range goes. */
static void sackb_add(struct ss_tcp_conn *c, uint32_t l, uint32_t r)
{
	struct ss_tcp_sackb *b = c->sackb;
	unsigned n = c->sackb_n, i = 0, j;

	while (i < n && ss_seq_lt(b[i].right, l))
		i++;
	for (j = i; j < n && ss_seq_leq(b[j].left, r); j++) { /* overlapping or adjacent */
		if (ss_seq_lt(b[j].left, l))
			l = b[j].left;
		if (ss_seq_gt(b[j].right, r))
			r = b[j].right;
	}
	if (j == i) {
		if (n == SS_TCP_SACKB_MAX) {
			if (i == n)
				return; /* above every range kept: forgotten at once */
			n--;
		}
		memmove(b + i + 1, b + i, (n - i) * sizeof(*b));
		n++;
	} else if (j > i + 1) {
		memmove(b + i + 1, b + j, (n - j) * sizeof(*b));
		n -= j - i - 1;
	}
	b[i].left = l;
	b[i].right = r;
	c->sackb_n = (uint8_t)n;
}

/* Bytes the board holds at or above @seq. */
static uint32_t sackb_above(const struct ss_tcp_conn *c, uint32_t seq)
{
	uint32_t n = 0;

	for (unsigned i = c->sackb_n; i-- > 0;) {
		const struct ss_tcp_sackb *b = &c->sackb[i];
		if (ss_seq_leq(b->right, seq))
			break;
		n += b->right - (ss_seq_gt(b->left, seq) ? b->left : seq);
	}
	return n;
}

/*
 * RFC 6675 §5 NextSeg() rule 1: the first sequence at or after @from that
 * the board does not hold, lies below a SACKed range, and IsLost (more
 * than (DupThresh - 1) * SMSS bytes SACKed above it).  At most one MSS,
 * and never past the hole.  Holes further up have less SACKed above them,
 * so the search ends at the first hole that is not lost.
 */
static bool sackb_next_lost(const struct ss_tcp_conn *c, uint32_t from, uint32_t *seq,
			    uint32_t *len)
{
	uint32_t mss = c->f.mss;

	for (unsigned i = 0; i < c->sackb_n; i++) {
		const struct ss_tcp_sackb *b = &c->sackb[i];
		if (ss_seq_leq(b->right, from))
			continue;
		if (ss_seq_geq(from, b->left)) {
			from = b->right; /* inside a SACKed range: on to its end */
			continue;
		}
		if (sackb_above(c, from) <= 2u * mss)
			return false;
		*seq = from;
		*len = tcp_u32_min(b->left - from, mss);
		return true;
	}
	return false;
}

bool tcp_sack_reports_new(struct ss_tcp_conn *c, const struct ss_tcp *seg)
{
	struct ss_tcp_flow *f = &c->f;
	bool fresh = false;

	if (!(f->flags & SS_TCPF_SACK_PERM) || !(seg->opts.present & SS_TCP_OPTF_SACK))
		return false;
	/* Only meaningful inside [snd_una, snd_max]; anything else is stale. */
	if ((uint32_t)(c->sack_high - f->snd_una) > (uint32_t)(f->snd_max - f->snd_una))
		c->sack_high = f->snd_una;
	sackb_prune(c);
	for (unsigned i = 0; i < seg->opts.sack_count && i < SS_TCP_MAX_SACK_BLOCKS; i++) {
		const struct ss_tcp_sack_block *b = &seg->opts.sack[i];
		/* Sane blocks only: above the ACK (not D-SACK), within what we sent. */
		if (!ss_seq_gt(b->left, seg->ack) || !ss_seq_gt(b->right, b->left) ||
		    ss_seq_gt(b->right, f->snd_max))
			continue;
		sackb_add(c, b->left, b->right);
		if (ss_seq_gt(b->right, c->sack_high)) {
			c->sack_high = b->right;
			fresh = true;
		}
	}
	return fresh;
}

/* Bytes SACKed above the first unacknowledged segment (the scoreboard's
 * count: holes in between do not count). */
static uint32_t tcp_sacked_above_una(const struct ss_tcp_conn *c)
{
	const struct ss_tcp_flow *f = &c->f;

	if (!(f->flags & SS_TCPF_SACK_PERM))
		return 0;
	return sackb_above(c, f->snd_una + f->mss);
}

/* In recovery: resend the next hole the scoreboard shows lost, above
 * those already resent this episode (RFC 6675 §5 step (C)); false if
 * there is none. */
static bool tcp_sack_rexmit_next(struct ss_tcp_conn *c, uint64_t now_us)
{
	uint32_t from = c->f.snd_una, seq, len;

	if (ss_seq_gt(c->rexmit_next, from))
		from = c->rexmit_next;
	sackb_prune(c);
	if (!sackb_next_lost(c, from, &seq, &len))
		return false;
	if (seq == c->f.snd_una) {
		tcp_retransmit_una(c, now_us);
	} else {
		c->rexmit_next = seq + len;
		tcp_retransmit_hole(c, seq, len, now_us);
	}
	return true;
}

/*
 * A duplicate ACK (RFC 5681 §2 definition, checked by the caller).
 *
 * Loss of the segment at snd_una is declared on the third duplicate ACK
 * (RFC 5681 §3.2), or, with SACK, as soon as more than (DupThresh - 1) *
 * SMSS bytes above it have been SACKed (RFC 6675 §4 IsLost): one surviving
 * ACK then suffices when others are lost, and small windows that cannot
 * produce three duplicates still recover without a timeout.
 *
 * In recovery, a retransmission that was itself lost shows as SACKed data
 * sent after it while the hole stays open (the idea of RACK, RFC 8985):
 * resend it instead of waiting for the retransmission timer.
 */
void tcp_cc_on_dupack(struct ss_tcp_conn *c, bool sack_new, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t sacked = tcp_sacked_above_una(c);

	bool own = c->cc_mode == SS_TCP_CC_ENGINE;

	tcp_st(c)->dup_acks++;
	if (f->flags & SS_TCPF_IN_RECOVERY) {
		bool resent = false;

		if (sack_new && ss_seq_geq(c->sack_high, c->rexmit_mark + 3u * f->mss)) {
			tcp_st(c)->lost_rexmits++;
			tcp_retransmit_una(c, now_us);
			resent = true;
		} else if (sack_new) {
			/* More holes in the window: resend the next lost one now
			 * rather than one per round trip at each partial ACK. */
			resent = tcp_sack_rexmit_next(c, now_us);
		}
		/* RFC 6582 §3.2 step 4: inflate for the segment that left,
		 * unless a retransmission took its place (RFC 6675 §5: one
		 * segment out per segment that left). */
		if (own && !resent)
			f->cwnd += f->mss;
		return;
	}
	if (f->dupacks < UINT8_MAX)
		f->dupacks++;
	if (f->dupacks < 3 && sacked <= 2u * f->mss)
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
	f->recover = f->snd_max;
	f->flags |= SS_TCPF_IN_RECOVERY;
	c->rexmit_next = f->snd_una;
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
	c->rexmit_next = f->snd_una; /* go-back-N resends every hole */
	/* RFC 6582 §3.2 step 4 after a timeout: record recover. */
	f->recover = f->snd_max;
}
