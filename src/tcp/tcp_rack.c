/* tcp_rack.c - RACK loss detection (RFC 8985 §6): transmit times, RACK.xmit_ts, the reordering window and the reorder timer. */
#include "tcp/tcp_int.h"

/*
 * A segment is lost when one sent after it was delivered (cumulatively
 * acknowledged or SACKed) and a reordering window has passed since then
 * (RFC 8985 §6.2): with the small windows loss leaves, one SACK of a later
 * segment is enough, where DupThresh (RFC 6675 §4) needs three segments
 * SACKed above the hole and otherwise leaves the loss to the tail loss
 * probe or the retransmission timer.
 *
 * What is found lost feeds the RFC 6675 recovery of tcp_recovery.c: the
 * original transmissions lost are those below conn->rack_lost_to (sent in
 * sequence order, they are a prefix), resends lost leave the list of
 * resends in flight (tcp_sack_rxt_update()); NextSeg() sends them again,
 * as cwnd - pipe allows.  Segments not yet past the window wait for the
 * reorder timer (§6.3), which shares tlp_deadline_us with the tail loss
 * probe (a probe is for a flight with nothing to wait for; conn->
 * rack_reo_us says which of the two the deadline is).
 *
 * Only SACK connections: without SACK nothing above snd_una is known to
 * be delivered.  The transmit records are written on output (one store
 * per burst, tcp_rack_sent()); all the rest runs on ACKs that carry SACK
 * blocks or arrive in recovery (the slow path) and on the timer.
 */

#define XREC_MASK (SS_TCP_XREC_MAX - 1)
/* The minimum RTT is taken over this long (Linux: 5 minutes; a path
 * whose RTT went up is seen sooner). */
#define RACK_MIN_RTT_WIN_US 10000000ull

_Static_assert((SS_TCP_XREC_MAX & XREC_MASK) == 0, "SS_TCP_XREC_MAX is a power of two");

static inline struct ss_tcp_xrec *xrec_at(struct ss_tcp_conn *c, unsigned i)
{
	return &c->xrec[(c->xrec_head + i) & XREC_MASK];
}

/* Forget the records below @una. */
static void xrec_trim(struct ss_tcp_conn *c, uint32_t una)
{
	while (c->xrec_n && ss_seq_leq(xrec_at(c, 0)->end, una)) {
		c->xrec_head = (uint16_t)((c->xrec_head + 1) & XREC_MASK);
		c->xrec_n--;
	}
}

/* The ring is full: drop what snd_una passed; if nothing was, merge
 * neighbours pairwise (struct ss_tcp_xrec).  Then the new record. */
void tcp_rack_sent_full(struct ss_tcp_conn *c, uint32_t end, uint32_t ts)
{
	xrec_trim(c, c->f.snd_una);
	if (c->xrec_n == SS_TCP_XREC_MAX) {
		unsigned n = c->xrec_n, k = 0;

		for (unsigned i = 0; i + 1 < n; i += 2, k++) {
			struct ss_tcp_xrec m = *xrec_at(c, i);

			m.end = xrec_at(c, i + 1)->end;
			m.last = xrec_at(c, i + 1)->last;
			*xrec_at(c, k) = m;
		}
		if (n & 1)
			*xrec_at(c, k++) = *xrec_at(c, n - 1);
		c->xrec_n = (uint16_t)k;
	}
	*xrec_at(c, c->xrec_n) = (struct ss_tcp_xrec){ end, ts, ts };
	c->xrec_n++;
}

/* Index of the first record ending above @seq (xrec_n if none). */
static unsigned xrec_find(struct ss_tcp_conn *c, uint32_t seq)
{
	unsigned lo = 0, hi = c->xrec_n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (ss_seq_leq(xrec_at(c, mid)->end, seq))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* RFC 8985 §6.2 RACK_sent_after(): (t1, seq1) was sent after (t2, seq2). */
static inline bool rack_sent_after(uint32_t t1, uint32_t seq1, uint32_t t2, uint32_t seq2)
{
	return (int32_t)(t1 - t2) > 0 || (t1 == t2 && ss_seq_gt(seq1, seq2));
}

/* RFC 8985 §6.2 step 4, without the DSACK-driven growth: a quarter of
 * the minimum RTT, at most SRTT (before any RACK sample: SRTT / 4). */
uint32_t tcp_rack_reo_wnd(const struct ss_tcp_conn *c)
{
	uint32_t m = c->rack_min_rtt_us ? c->rack_min_rtt_us : c->f.srtt_us;
	uint32_t w = m / 4;

	if (c->f.srtt_us && w > c->f.srtt_us)
		w = c->f.srtt_us;
	return w;
}

/* RFC 8985 §6.2 step 2: the segment that ends at @end, sent at @ts, was
 * delivered by this ACK (@rexmit: that transmission was a resend). */
static void rack_deliver(struct ss_tcp_conn *c, uint32_t ts, uint32_t end, bool rexmit,
			 uint64_t now_us)
{
	uint32_t rtt = (uint32_t)now_us - ts;

	/* An ACK sooner than the minimum RTT after a resend answers the
	 * original transmission: it says nothing of when the resend went. */
	if (rexmit && rtt < c->rack_min_rtt_us)
		return;
	if (!c->rack_min_rtt_us || rtt < c->rack_min_rtt_us ||
	    now_us - c->rack_min_rtt_at > RACK_MIN_RTT_WIN_US) {
		c->rack_min_rtt_us = rtt ? rtt : 1;
		c->rack_min_rtt_at = now_us;
	}
	if (!c->rack_valid || rack_sent_after(ts, end, c->rack_ts, c->rack_end)) {
		c->rack_valid = 1;
		c->rack_ts = ts;
		c->rack_end = end;
		c->rack_rtt_us = rtt;
	}
}

/* True if the scoreboard holds all of [start, end). */
static bool sackb_holds(const struct ss_tcp_conn *c, uint32_t start, uint32_t end)
{
	for (unsigned i = 0; i < c->sackb_n; i++)
		if (ss_seq_leq(c->sackb[i].left, start) && ss_seq_geq(c->sackb[i].right, end))
			return true;
	return false;
}

/*
 * RFC 8985 §6.2 step 5 for the original transmissions above @una: those
 * sent before RACK's segment and more than RACK.rtt + reo_wnd ago are
 * lost (conn->rack_lost_to rises to the end of them); the first one sent
 * before it, still unSACKed and not resent, that is not yet that old asks
 * for the reorder timer at the moment it will be (conn->rack_want_us).
 * RFC 8985 arms the timer for the last such segment; the first one's
 * deadline comes no later and the detection runs again then.
 */
static void rack_detect(struct ss_tcp_conn *c, uint32_t una, uint64_t now_us)
{
	uint32_t lost = ss_seq_gt(c->rack_lost_to, una) ? c->rack_lost_to : una;
	uint32_t before = lost, start = una, now = (uint32_t)now_us;

	c->rack_want_us = 0;
	if (!c->rack_valid)
		return;
	uint32_t wait = c->rack_rtt_us + tcp_rack_reo_wnd(c);
	/* Above a full scoreboard's top, SACKed ranges were forgotten
	 * (struct ss_tcp_sackb): what is not on the board there may well be
	 * delivered. */
	uint32_t top = c->sackb_n ? c->sackb[c->sackb_n - 1].right : una;
	bool cut = c->sackb_n && ss_seq_gt(c->sack_high, top);

	for (unsigned k = xrec_find(c, una); k < c->xrec_n; k++) {
		const struct ss_tcp_xrec *r = xrec_at(c, k);
		uint32_t lim = r->end, age = now - r->last, s, l;

		if ((int32_t)(r->last - c->rack_ts) > 0)
			break; /* sent after RACK's segment: so is the rest */
		if (r->last == c->rack_ts && ss_seq_gt(lim, c->rack_end))
			lim = c->rack_end; /* the same burst: only what precedes it */
		if (cut && ss_seq_gt(lim, top))
			lim = top;
		if (!ss_seq_gt(lim, start))
			break;
		if (age >= wait) {
			if (ss_seq_gt(lim, lost))
				lost = lim;
		} else if (tcp_sack_next_unsent(c, start, lim, &s, &l)) {
			c->rack_want_us = now_us + (wait - age);
			break;
		}
		if (lim != r->end)
			break;
		start = lim;
	}
	if (ss_seq_gt(lost, before))
		tcp_st(c)->rack_lost++;
	c->rack_lost_to = lost;
}

/*
 * An ACK (@seg, not yet taken: snd_una is the old one) on a SACK
 * connection with data outstanding, in the slow path: RACK.xmit_ts from
 * what it delivers, then the detection above its ACK.  Resends found lost
 * by it leave their list in tcp_sack_rxt_update(); tcp_rack_after_ack()
 * starts recovery and arms the timer once the ACK is taken.
 */
void tcp_rack_on_ack(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t ack = seg->ack, una = f->snd_una;

	/* Transmit times are kept modulo 2^32 microseconds: one delivered
	 * more than 2^30 ago (18 minutes) no longer compares. */
	if (c->rack_valid && (uint32_t)now_us - c->rack_ts > (1u << 30))
		c->rack_valid = 0;
	if (ss_seq_gt(ack, una) && ss_seq_leq(ack, f->snd_max)) {
		/* The newest original transmission acknowledged: the one
		 * that ends at the ACK. */
		unsigned k = xrec_find(c, ack - 1);

		if (k < c->xrec_n)
			rack_deliver(c, xrec_at(c, k)->first, ack, false, now_us);
		una = ack;
	}
	if (seg->opts.present & SS_TCP_OPTF_SACK) {
		for (unsigned i = 0; i < seg->opts.sack_count && i < SS_TCP_MAX_SACK_BLOCKS; i++) {
			const struct ss_tcp_sack_block *b = &seg->opts.sack[i];

			if (!ss_seq_gt(b->left, una) || !ss_seq_gt(b->right, b->left) ||
			    ss_seq_gt(b->right, f->snd_max))
				continue;
			unsigned k = xrec_find(c, b->right - 1);

			if (k < c->xrec_n)
				rack_deliver(c, xrec_at(c, k)->first, b->right, false, now_us);
		}
	}
	/* Resends acknowledged or SACKed whole: their own transmit time. */
	for (unsigned i = 0; i < c->rxt_n; i++) {
		const struct ss_tcp_rxt *e = &c->rxt[i];

		if (ss_seq_leq(e->end, una) || sackb_holds(c, e->start, e->end))
			rack_deliver(c, e->ts, e->end, true, now_us);
	}
	xrec_trim(c, una);
	rack_detect(c, una, now_us);
}

/* A resend sent at @ts and ending at @end, still missing: true if RACK
 * finds it lost (RFC 8985 §6.2 step 5); else, if it was sent before
 * RACK's segment, its deadline joins conn->rack_want_us. */
bool tcp_rack_rxt_lost(struct ss_tcp_conn *c, uint32_t ts, uint32_t end, uint64_t now_us)
{
	if (!c->rack_valid || !rack_sent_after(c->rack_ts, c->rack_end, ts, end))
		return false;
	uint32_t wait = c->rack_rtt_us + tcp_rack_reo_wnd(c), age = (uint32_t)now_us - ts;

	if (age >= wait)
		return true;
	uint64_t dl = now_us + (wait - age);

	if (!c->rack_want_us || dl < c->rack_want_us)
		c->rack_want_us = dl;
	return false;
}

/*
 * The reorder timer goes in the tail loss probe's slot (RFC 8985 §6.3:
 * the probe is for flights with nothing else to wait for).  With no
 * reorder deadline wanted, a slot still holding an old one gets the probe
 * back (RFC 8985 §7.2), or nothing during recovery.
 */
void tcp_rack_arm(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	if (c->rack_want_us && c->rto_deadline_us && f->snd_una != f->snd_max) {
		c->tlp_deadline_us = c->rack_want_us;
		c->rack_reo_us = c->rack_want_us;
		return;
	}
	if (f->flags & SS_TCPF_IN_RECOVERY) {
		c->tlp_deadline_us = 0;
	} else if (c->tlp_deadline_us && c->tlp_deadline_us == c->rack_reo_us) {
		c->tlp_deadline_us = 0;
		if (c->rto_deadline_us && f->snd_una != f->snd_max)
			tcp_tlp_arm(c, now_us);
	}
	c->rack_reo_us = 0;
}

/* After the ACK was taken: RACK found data lost outside recovery (an ACK
 * that advanced, or one that did not count as a duplicate): recovery
 * starts (RFC 8985 §6.2 step 5 feeding RFC 6675 §5). */
void tcp_rack_after_ack(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	if (!(f->flags & SS_TCPF_IN_RECOVERY) && f->snd_una != f->snd_max &&
	    ss_seq_gt(c->rack_lost_to, f->snd_una) && ss_seq_leq(c->rack_lost_to, f->snd_max) &&
	    tcp_state_can_send(f->state))
		tcp_rec_enter(c, 0, now_us);
	tcp_rack_arm(c, now_us);
}

/* RFC 8985 §6.3: the reorder timer expired.  The detection runs again at
 * the time; what it finds lost is resent, starting recovery if needed. */
void tcp_rack_timeout(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	c->tlp_deadline_us = 0;
	c->rack_reo_us = 0;
	if (!(f->flags & SS_TCPF_SACK_PERM) || !tcp_state_can_send(f->state))
		return;
	tcp_st(c)->rack_timeouts++;
	xrec_trim(c, f->snd_una);
	rack_detect(c, f->snd_una, now_us);
	if (f->flags & SS_TCPF_IN_RECOVERY) {
		tcp_sack_rxt_update(c, tcp_sack_lost_point(c), now_us);
	} else if (ss_seq_gt(c->rack_lost_to, f->snd_una)) {
		tcp_rec_enter(c, 0, now_us);
	} else if (!c->rack_want_us) {
		/* Nothing to wait for after all: the probe's turn. */
		tcp_tlp_arm(c, now_us);
		return;
	}
	ss_tcp_output(c, now_us);
	tcp_rack_arm(c, now_us);
}
