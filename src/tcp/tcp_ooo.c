/* tcp_ooo.c - out-of-order receive: intervals kept in the ring beyond rx_tail, and the SACK blocks that report them. */
#include <string.h>

#include "tcp/tcp_int.h"

/*
 * TAS keeps one out-of-order interval; under reordering or several losses
 * per window every segment outside it is dropped and must be sent again.
 * We keep up to SS_TCP_OOO_MAX intervals (stream positions in the receive
 * ring beyond rx_tail, sorted, disjoint and not touching), mirror the
 * lowest one into the hot ooo_start/ooo_len that the fast path checks,
 * and report them to the sender as SACK blocks (RFC 2018) when SACK was
 * negotiated, so it resends only what is missing.
 *
 * SS_TCP_OOO_MAX is sized for a full window under 10 % random loss: with
 * only a few intervals, a bulk sender into a 256 KiB ring at 5 % loss saw
 * thousands of segments a second dropped here and sent again.  Every
 * interval lies within the ring from rx_tail, so its offset from rx_tail
 * orders it without sequence-space comparisons; positions are found by
 * binary search and the array is shifted with memmove().
 */

_Static_assert(SS_TCP_OOO_MAX <= UINT8_MAX && SS_TCP_OOO_MAX <= 64,
	       "ooo_n is a uint8_t; tcp_ooo_sack_blocks() marks intervals in a uint64_t");

static inline uint32_t ooo_end(const struct ss_tcp_ooo *o)
{
	return o->start + o->len;
}

/* Offset of stream position @pos from rx_tail: an interval's start and
 * end are in (0, rx.size]; a position behind rx_tail is far above. */
static inline uint32_t ooo_off(const struct ss_tcp_conn *c, uint32_t pos)
{
	return pos - c->f.rx_tail;
}

/* The first interval from @lo whose end is at or after offset @off (one
 * that ends exactly at @off touches a segment starting there). */
static unsigned ooo_first_end_geq(const struct ss_tcp_conn *c, unsigned lo, uint32_t off)
{
	unsigned hi = c->ooo_n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (ooo_off(c, ooo_end(&c->ooo[mid])) < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first interval from @lo whose start is after offset @off. */
static unsigned ooo_first_start_gt(const struct ss_tcp_conn *c, unsigned lo, uint32_t off)
{
	unsigned hi = c->ooo_n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (ooo_off(c, c->ooo[mid].start) <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The interval holding stream position @pos, or -1. */
static int ooo_find(const struct ss_tcp_conn *c, uint32_t pos)
{
	uint32_t off = ooo_off(c, pos);
	unsigned i;

	if (off >= c->rx.size)
		return -1;
	i = ooo_first_end_geq(c, 0, off + 1);
	if (i == c->ooo_n || ooo_off(c, c->ooo[i].start) > off)
		return -1;
	return (int)i;
}

static void tcp_ooo_mirror(struct ss_tcp_conn *c)
{
	c->f.ooo_start = c->ooo_n ? c->ooo[0].start : 0;
	c->f.ooo_len = c->ooo_n ? c->ooo[0].len : 0;
}

/* The remembered positions whose interval is gone (absorbed by rx_tail,
 * or forgotten) are forgotten too, and a rotation cursor left behind
 * rx_tail starts again from the lowest interval. */
static void tcp_ooo_hist_prune(struct ss_tcp_conn *c)
{
	unsigned k = 0;

	for (unsigned i = 0; i < c->ooo_hist_n; i++)
		if (ooo_find(c, c->ooo_hist[i]) >= 0)
			c->ooo_hist[k++] = c->ooo_hist[i];
	c->ooo_hist_n = (uint8_t)k;
	if (ooo_off(c, c->ooo_rot) > c->rx.size)
		c->ooo_rot = c->f.rx_tail;
}

/* RFC 2018 §4: @pos (the start of the segment just stored) now names the
 * interval @i that holds it, first in the list; any older position in the
 * same interval goes (one entry per interval). */
static void tcp_ooo_hist_push(struct ss_tcp_conn *c, unsigned i, uint32_t pos)
{
	uint32_t lo = ooo_off(c, c->ooo[i].start), hi = ooo_off(c, ooo_end(&c->ooo[i]));
	unsigned k = 1;
	uint32_t keep[SS_TCP_MAX_SACK_BLOCKS];

	keep[0] = pos;
	for (unsigned j = 0; j < c->ooo_hist_n && k < SS_TCP_MAX_SACK_BLOCKS; j++) {
		uint32_t off = ooo_off(c, c->ooo_hist[j]);

		if (off < lo || off >= hi)
			keep[k++] = c->ooo_hist[j];
	}
	memcpy(c->ooo_hist, keep, k * sizeof(keep[0]));
	c->ooo_hist_n = (uint8_t)k;
}

void tcp_ooo_clear(struct ss_tcp_conn *c)
{
	c->ooo_n = 0;
	c->ooo_hist_n = 0;
	c->ooo_rot = c->f.rx_tail;
	tcp_ooo_mirror(c);
}

/* rx_tail moved: absorb every interval it reached (returns the bytes that
 * became readable beyond rx_tail) and drop them from the list. */
uint32_t tcp_ooo_absorb(struct ss_tcp_conn *c)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t gained = 0;
	unsigned k = 0;

	while (k < c->ooo_n && (int32_t)(f->rx_tail - c->ooo[k].start) >= 0) {
		uint32_t end = ooo_end(&c->ooo[k]);

		if ((int32_t)(end - f->rx_tail) > 0) {
			uint32_t extra = end - f->rx_tail;

			f->rx_tail += extra;
			f->rcv_nxt += extra;
			gained += extra;
		}
		k++;
	}
	if (k) {
		memmove(&c->ooo[0], &c->ooo[k], (c->ooo_n - k) * sizeof(c->ooo[0]));
		c->ooo_n = (uint8_t)(c->ooo_n - k);
		tcp_ooo_hist_prune(c);
	}
	tcp_ooo_mirror(c);
	return gained;
}

/*
 * In-order data arrived while data is held out of order: it filled all
 * or part of the first gap.  RFC 5681 §4.2: "an immediate ACK SHOULD be
 * generated when a segment arrives that fills in all or part of a gap in
 * the sequence space" (the sender learns at once how far it got, and
 * that its retransmission arrived); so no delayed ACK is held while data
 * is out of order.  The ACK leaves at the end of the burst, at the next
 * ss_tcp_output(), as other in-order data's does.  Returns the bytes the
 * intervals reached added.
 */
uint32_t tcp_ooo_fill(struct ss_tcp_conn *c)
{
	c->f.flags |= SS_TCPF_ACK_NOW;
	if ((int32_t)(c->f.rx_tail - c->f.ooo_start) < 0)
		return 0; /* part of the gap: the intervals stay */
	return tcp_ooo_absorb(c);
}

/*
 * Store a segment beyond rcv_nxt (already trimmed to the ring): merged
 * into the intervals it overlaps or touches, or a new interval while
 * there is room.  With all SS_TCP_OOO_MAX intervals in use, a segment
 * above them is dropped (counted in drop_ooo_outside; the sender resends
 * it), and one below the highest takes that interval's place (counted in
 * ooo_evicted): data near rcv_nxt is what makes the stream readable
 * soonest, and the highest interval is the one the sender will reach
 * last.  RFC 2018 §8 lets a receiver discard data it reported in SACK
 * blocks ("reneging"); the sender keeps such data until it is
 * cumulatively acknowledged and resends it then.
 */
void tcp_rx_ooo(struct ss_tcp_conn *c, uint32_t seq, const uint8_t *data, uint32_t len)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t s = f->rx_tail + (seq - f->rcv_nxt), e = s + len;
	uint32_t so = ooo_off(c, s), eo = so + len;
	unsigned n = c->ooo_n, lo, hi;

	if (!len)
		return;
	/* Intervals before lo end before the segment with a gap between;
	 * [lo, hi) overlap or touch it. */
	lo = ooo_first_end_geq(c, 0, so);
	hi = ooo_first_start_gt(c, lo, eo);
	if (hi == lo && n == SS_TCP_OOO_MAX) {
		if (lo == n) {
			tcp_st(c)->drop_ooo_outside++;
			return;
		}
		tcp_st(c)->ooo_evicted++;
		c->ooo_n = (uint8_t)--n; /* lo < n still: the slot goes below */
		tcp_ooo_hist_prune(c);
	}
	ss_tcp_ring_copy_in(&c->rx, s, data, len);
	if (hi > lo) {
		if (ooo_off(c, c->ooo[lo].start) < so)
			s = c->ooo[lo].start;
		if (ooo_off(c, ooo_end(&c->ooo[hi - 1])) > eo)
			e = ooo_end(&c->ooo[hi - 1]);
		/* [lo, hi) become slot lo. */
		memmove(&c->ooo[lo + 1], &c->ooo[hi], (n - hi) * sizeof(c->ooo[0]));
		n -= hi - lo - 1;
	} else {
		memmove(&c->ooo[lo + 1], &c->ooo[lo], (n - lo) * sizeof(c->ooo[0]));
		n++;
	}
	c->ooo[lo].start = s;
	c->ooo[lo].len = e - s;
	c->ooo_n = (uint8_t)n;
	tcp_ooo_hist_push(c, lo, f->rx_tail + (seq - f->rcv_nxt));
	tcp_ooo_mirror(c);
}

/* Block @i of the intervals into @o's next SACK block (sequence numbers). */
static void tcp_ooo_sack_put(const struct ss_tcp_conn *c, struct ss_tcp_opts *o, unsigned i)
{
	uint32_t left = c->f.rcv_nxt + (c->ooo[i].start - c->f.rx_tail);

	o->sack[o->sack_count].left = left;
	o->sack[o->sack_count].right = left + c->ooo[i].len;
	o->sack_count++;
}

/*
 * The SACK blocks of an ACK (RFC 2018 §4), as many as fit beside the
 * other options (3 with timestamps, else 4):
 *   - first, the block holding the latest out-of-order segment (the one
 *     that triggered this ACK, unless in-order data did);
 *   - then the blocks that held the segments before it, newest first:
 *     "repeating the most recently reported SACK blocks", so that a block
 *     survives the loss of an ACK or two;
 *   - with more intervals than blocks fit, the last block rotates through
 *     all the intervals in order, one more per ACK: with tens of holes a
 *     sender that missed ACKs, or keeps fewer ranges than we hold, still
 *     learns every interval within ooo_n ACKs.
 * A block is never reported twice in one option.  Not const: the
 * rotation moves on.
 */
void tcp_ooo_sack_blocks(struct ss_tcp_conn *c, struct ss_tcp_opts *o)
{
	const struct ss_tcp_flow *f = &c->f;
	unsigned used = (o->present & SS_TCP_OPTF_TS) ? SS_TCP_TS_OPT_BYTES : 0;
	unsigned max = (SS_TCP_OPT_SPACE - used - 4) / 8; /* NOP NOP kind len, 8 per block */
	unsigned recent;
	uint64_t taken = 0;

	if (!(f->flags & SS_TCPF_SACK_PERM) || !c->ooo_n)
		return;
	if (max > SS_TCP_MAX_SACK_BLOCKS)
		max = SS_TCP_MAX_SACK_BLOCKS;
	recent = c->ooo_n > max ? max - 1 : max;
	o->sack_count = 0;
	for (unsigned h = 0; h < c->ooo_hist_n && o->sack_count < recent; h++) {
		int i = ooo_find(c, c->ooo_hist[h]);

		if (i < 0 || (taken >> i & 1))
			continue;
		taken |= 1ull << i;
		tcp_ooo_sack_put(c, o, (unsigned)i);
	}
	/* The rotation: from the first interval at or after ooo_rot, round. */
	unsigned i = ooo_first_start_gt(c, 0, ooo_off(c, c->ooo_rot) - 1);

	for (unsigned k = 0; k < c->ooo_n && o->sack_count < max; k++, i++) {
		if (i >= c->ooo_n)
			i = 0;
		if (taken >> i & 1)
			continue;
		taken |= 1ull << i;
		tcp_ooo_sack_put(c, o, i);
		c->ooo_rot = ooo_end(&c->ooo[i]);
	}
	o->present |= SS_TCP_OPTF_SACK;
}
