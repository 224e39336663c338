/* tcp_sack.c - the sender's SACK scoreboard (RFC 6675 §3, §4) and the resends in flight during recovery. */
#include <string.h>

#include "tcp/tcp_int.h"

static uint32_t sackb_sum(const struct ss_tcp_conn *c)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->sackb_n; i++)
		n += c->sackb[i].right - c->sackb[i].left;
	return n;
}

/* Empty the board (and what recovery built on it). */
static void sackb_clear(struct ss_tcp_conn *c)
{
	c->sackb_n = 0;
	c->sacked = 0;
	c->rxt_n = 0;
}

/*
 * Forget the ranges snd_una has passed.  A range that snd_una reached
 * without passing it means the peer discarded data it had SACKed (RFC
 * 2018 §8 allows it: holding [left, right) and everything below snd_una,
 * its ACK would have passed right): the board no longer tells the truth
 * and is dropped (RFC 6675 §5.1), and the retransmission timer recovers
 * what was lost.
 */
void tcp_sack_prune(struct ss_tcp_conn *c)
{
	uint32_t una = c->f.snd_una;
	unsigned n = c->sackb_n, i = 0;

	while (i < n && ss_seq_leq(c->sackb[i].right, una))
		i++;
	if (i < n && ss_seq_leq(c->sackb[i].left, una)) {
		tcp_st(c)->sack_reneged++;
		sackb_clear(c);
		return;
	}
	if (i) {
		memmove(c->sackb, c->sackb + i, (n - i) * sizeof(c->sackb[0]));
		c->sackb_n = (uint8_t)(n - i);
		c->sacked = sackb_sum(c);
	}
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

bool tcp_sack_reports_new(struct ss_tcp_conn *c, const struct ss_tcp *seg)
{
	struct ss_tcp_flow *f = &c->f;
	bool fresh = false;

	c->sack_delta = 0;
	if (!(f->flags & SS_TCPF_SACK_PERM) || !(seg->opts.present & SS_TCP_OPTF_SACK))
		return false;
	/* Only meaningful inside [snd_una, snd_max]; anything else is stale. */
	if ((uint32_t)(c->sack_high - f->snd_una) > (uint32_t)(f->snd_max - f->snd_una))
		c->sack_high = f->snd_una;
	tcp_sack_prune(c);
	uint32_t before = c->sacked;

	for (unsigned i = 0; i < seg->opts.sack_count && i < SS_TCP_MAX_SACK_BLOCKS; i++) {
		const struct ss_tcp_sack_block *b = &seg->opts.sack[i];
		/* Sane blocks only: above the ACK and snd_una (not D-SACK),
		 * within what we sent. */
		if (!ss_seq_gt(b->left, seg->ack) || !ss_seq_gt(b->left, f->snd_una) ||
		    !ss_seq_gt(b->right, b->left) || ss_seq_gt(b->right, f->snd_max))
			continue;
		sackb_add(c, b->left, b->right);
		if (ss_seq_gt(b->right, c->sack_high)) {
			c->sack_high = b->right;
			fresh = true;
		}
	}
	c->sacked = sackb_sum(c);
	c->sack_delta = c->sacked > before ? c->sacked - before : 0;
	return fresh;
}

/* SACKed bytes below @seq (above snd_una). */
static uint32_t sackb_below(const struct ss_tcp_conn *c, uint32_t seq)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->sackb_n; i++) {
		const struct ss_tcp_sackb *b = &c->sackb[i];
		if (ss_seq_geq(b->left, seq))
			break;
		n += (ss_seq_lt(b->right, seq) ? b->right : seq) - b->left;
	}
	return n;
}

/*
 * RFC 6675 §4 IsLost(): an unSACKed sequence number is lost when more than
 * (DupThresh - 1) * SMSS bytes, or DupThresh discontiguous ranges, above
 * it are SACKed.  What is SACKed above a sequence number only shrinks as
 * it rises, so the lost ones are exactly those below one point, returned
 * here (snd_una when none is lost).
 */
uint32_t tcp_sack_lost_point(const struct ss_tcp_conn *c)
{
	uint32_t need = 2u * c->f.mss, above = 0, p = c->f.snd_una;
	unsigned n = c->sackb_n;

	if (n >= 3)
		p = c->sackb[n - 3].left;
	for (unsigned i = n; i-- > 0;) {
		const struct ss_tcp_sackb *b = &c->sackb[i];
		uint32_t size = b->right - b->left;

		if (above + size > need) {
			uint32_t t = b->right - (need - above);

			if (ss_seq_gt(t, p))
				p = t;
			break;
		}
		above += size;
	}
	return p;
}

/*
 * RFC 6675 §4 SetPipe(): of the unSACKed bytes between snd_una and
 * snd_max, those not lost count once, those resent (and not yet SACKed)
 * once more.  @lost: the lost point (tcp_rec_lost_point()).
 */
uint32_t tcp_sack_pipe(const struct ss_tcp_conn *c, uint32_t lost)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t flight = f->snd_max - f->snd_una;
	uint32_t pipe = flight > c->sacked ? flight - c->sacked : 0;

	if (ss_seq_gt(lost, f->snd_max))
		lost = f->snd_max;
	if (ss_seq_gt(lost, f->snd_una)) {
		uint32_t l = (lost - f->snd_una) - sackb_below(c, lost);

		pipe = pipe > l ? pipe - l : 0;
	}
	for (unsigned i = 0; i < c->rxt_n; i++)
		pipe += c->rxt[i].end - c->rxt[i].start;
	return pipe;
}

/*
 * The lowest sequence number at or above @from and below @limit that is
 * neither SACKed nor resent this episode, with the length that may go
 * from it (at most one MSS, up to the next SACKed or resent range).
 */
bool tcp_sack_next_unsent(const struct ss_tcp_conn *c, uint32_t from, uint32_t limit,
			  uint32_t *seq, uint32_t *len)
{
	unsigned i = 0, j = 0;
	uint32_t s = from;

	for (;;) {
		if (!ss_seq_lt(s, limit))
			return false;
		while (i < c->sackb_n && ss_seq_leq(c->sackb[i].right, s))
			i++;
		if (i < c->sackb_n && ss_seq_leq(c->sackb[i].left, s)) {
			s = c->sackb[i].right;
			continue;
		}
		while (j < c->rxt_n && ss_seq_leq(c->rxt[j].end, s))
			j++;
		if (j < c->rxt_n && ss_seq_leq(c->rxt[j].start, s)) {
			s = c->rxt[j].end;
			continue;
		}
		break;
	}
	uint32_t e = s + c->f.mss;

	if (ss_seq_lt(limit, e))
		e = limit;
	if (i < c->sackb_n && ss_seq_lt(c->sackb[i].left, e))
		e = c->sackb[i].left;
	if (j < c->rxt_n && ss_seq_lt(c->rxt[j].start, e))
		e = c->rxt[j].start;
	*seq = s;
	*len = e - s;
	return true;
}

/* True if some of [start, end) is resent and in flight. */
bool tcp_sack_rxt_covers(const struct ss_tcp_conn *c, uint32_t start, uint32_t end)
{
	for (unsigned i = 0; i < c->rxt_n; i++)
		if (ss_seq_lt(c->rxt[i].start, end) && ss_seq_gt(c->rxt[i].end, start))
			return true;
	return false;
}

/* [start, end) was resent now: into the list, merged with a neighbour it
 * touches (the later mark, order and time stand for both: the merged
 * range is found lost no earlier than its last part).  False if the list
 * is full. */
bool tcp_sack_rxt_add(struct ss_tcp_conn *c, uint32_t start, uint32_t end, uint64_t now_us)
{
	uint32_t ts = (uint32_t)now_us;
	struct ss_tcp_rxt *r = c->rxt;
	unsigned n = c->rxt_n, i = 0;
	uint32_t mark = c->f.snd_max, order = ++c->rxt_order;

	while (i < n && ss_seq_leq(r[i].end, start))
		i++;
	if (i > 0 && r[i - 1].end == start) {
		r[i - 1].end = end;
		r[i - 1].mark = mark;
		r[i - 1].order = order;
		r[i - 1].ts = ts;
		if (i < n && r[i].start == end) { /* it bridges two */
			r[i - 1].end = r[i].end;
			memmove(r + i, r + i + 1, (n - i - 1) * sizeof(*r));
			c->rxt_n = (uint8_t)(n - 1);
		}
		return true;
	}
	if (i < n && r[i].start == end) {
		r[i].start = start;
		r[i].mark = mark;
		r[i].order = order;
		r[i].ts = ts;
		return true;
	}
	if (n == SS_TCP_RXT_MAX) {
		c->rxt_order--;
		return false;
	}
	memmove(r + i + 1, r + i, (n - i) * sizeof(*r));
	r[i] = (struct ss_tcp_rxt){ start, end, mark, order, ts };
	c->rxt_n = (uint8_t)(n + 1);
	return true;
}

/*
 * After an ACK (or at the reorder timeout): resends acknowledged or
 * SACKed leave the list (the parts SACKed are cut out of it), and one
 * still missing is lost when
 *   - RACK says so (RFC 8985 §6.2: a segment sent after it was delivered
 *     and the reordering window has passed, tcp_rack_rxt_lost(); one
 *     sent after it but still within the window asks for the reorder
 *     timer);
 *   - or, DupThresh's way, more than (DupThresh - 1) * SMSS bytes sent
 *     after it are SACKed: its mark lies below the lost point @lost_sack
 *     (tcp_sack_lost_point());
 *   - or a resend made at least DupThresh segments after it was delivered
 *     whole (DupThresh - 1 segments of reordering are allowed).
 * A lost resend leaves the list, so that NextSeg() sends it again.
 * Returns the number found lost.
 */
unsigned tcp_sack_rxt_update(struct ss_tcp_conn *c, uint32_t lost_sack, uint64_t now_us)
{
	struct ss_tcp_rxt out[SS_TCP_RXT_MAX];
	uint32_t una = c->f.snd_una;
	unsigned n = 0, i = 0, j = 0, lost = 0;

	for (unsigned k = 0; k < c->rxt_n; k++) {
		struct ss_tcp_rxt e = c->rxt[k];
		bool piece = false;

		if (ss_seq_leq(e.end, una)) {
			if ((int32_t)(e.order - c->rxt_delivered) > 0)
				c->rxt_delivered = e.order;
			continue;
		}
		if (ss_seq_lt(e.start, una))
			e.start = una;
		while (i < c->sackb_n && ss_seq_leq(c->sackb[i].right, e.start))
			i++;
		uint32_t cur = e.start;

		for (j = i; j < c->sackb_n && ss_seq_lt(c->sackb[j].left, e.end); j++) {
			const struct ss_tcp_sackb *b = &c->sackb[j];
			if (ss_seq_gt(b->left, cur)) {
				if (n < SS_TCP_RXT_MAX) {
					out[n] = e;
					out[n].start = cur;
					out[n++].end = b->left;
				} else {
					out[n - 1].end = b->left; /* full: keep it whole */
				}
				piece = true;
			}
			if (ss_seq_gt(b->right, cur))
				cur = b->right;
		}
		if (ss_seq_lt(cur, e.end)) {
			if (n < SS_TCP_RXT_MAX) {
				out[n] = e;
				out[n++].start = cur;
			} else {
				out[n - 1].end = e.end;
			}
			piece = true;
		}
		if (!piece && (int32_t)(e.order - c->rxt_delivered) > 0)
			c->rxt_delivered = e.order; /* SACKed whole: delivered */
	}
	c->rxt_n = 0;
	for (unsigned k = 0; k < n; k++) {
		if (tcp_rack_rxt_lost(c, out[k].ts, out[k].end, now_us) ||
		    ss_seq_lt(out[k].mark, lost_sack) ||
		    (int32_t)(c->rxt_delivered - out[k].order) >= 3) {
			lost++;
			continue;
		}
		c->rxt[c->rxt_n++] = out[k];
	}
	if (lost)
		tcp_st(c)->lost_rexmits += lost;
	return lost;
}

/* Forget the resends (a new episode, or its end). */
void tcp_sack_rxt_clear(struct ss_tcp_conn *c)
{
	c->rxt_n = 0;
	c->rxt_delivered = c->rxt_order;
}
