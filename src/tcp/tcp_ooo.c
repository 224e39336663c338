/* tcp_ooo.c - out-of-order receive: a few intervals kept in the ring beyond rx_tail, and the SACK blocks that report them. */
#include "tcp/tcp_int.h"

/*
 * TAS keeps one out-of-order interval; under reordering or several losses
 * per window every segment outside it is dropped and must be sent again.
 * We keep up to SS_TCP_OOO_MAX intervals (stream positions in the receive
 * ring beyond rx_tail, sorted, disjoint and not touching), mirror the
 * lowest one into the hot ooo_start/ooo_len that the fast path checks,
 * and report them to the sender as SACK blocks (RFC 2018) when SACK was
 * negotiated, so it resends only what is missing.
 */

static void tcp_ooo_mirror(struct ss_tcp_conn *c)
{
	c->f.ooo_start = c->ooo_n ? c->ooo[0].start : 0;
	c->f.ooo_len = c->ooo_n ? c->ooo[0].len : 0;
}

void tcp_ooo_clear(struct ss_tcp_conn *c)
{
	c->ooo_n = 0;
	c->ooo_recent = 0;
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
		uint32_t end = c->ooo[k].start + c->ooo[k].len;

		if ((int32_t)(end - f->rx_tail) > 0) {
			uint32_t extra = end - f->rx_tail;

			f->rx_tail += extra;
			f->rcv_nxt += extra;
			gained += extra;
		}
		k++;
	}
	if (k) {
		for (unsigned i = k; i < c->ooo_n; i++)
			c->ooo[i - k] = c->ooo[i];
		c->ooo_n = (uint8_t)(c->ooo_n - k);
		c->ooo_recent = 0;
	}
	tcp_ooo_mirror(c);
	return gained;
}

/* Store a segment beyond rcv_nxt (already trimmed to the ring): merged
 * into the intervals it overlaps or touches, or a new interval while
 * there is room; otherwise dropped and counted (the sender resends it). */
void tcp_rx_ooo(struct ss_tcp_conn *c, uint32_t seq, const uint8_t *data, uint32_t len)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t s = f->rx_tail + (seq - f->rcv_nxt), e = s + len;
	unsigned lo = 0, hi;

	if (!len)
		return;
	/* Intervals entirely before the segment (not touching it). */
	while (lo < c->ooo_n && (int32_t)(c->ooo[lo].start + c->ooo[lo].len - s) < 0)
		lo++;
	/* Intervals overlapping or touching it: [lo, hi). */
	hi = lo;
	while (hi < c->ooo_n && (int32_t)(c->ooo[hi].start - e) <= 0)
		hi++;
	if (hi == lo && c->ooo_n == SS_TCP_OOO_MAX) {
		tcp_st(c)->drop_ooo_outside++;
		return;
	}
	ss_tcp_ring_copy_in(&c->rx, s, data, len);
	if (hi > lo) {
		if ((int32_t)(c->ooo[lo].start - s) < 0)
			s = c->ooo[lo].start;
		uint32_t last_end = c->ooo[hi - 1].start + c->ooo[hi - 1].len;
		if ((int32_t)(last_end - e) > 0)
			e = last_end;
		/* Collapse [lo, hi) into slot lo. */
		for (unsigned i = hi; i < c->ooo_n; i++)
			c->ooo[i - (hi - lo - 1)] = c->ooo[i];
		c->ooo_n = (uint8_t)(c->ooo_n - (hi - lo - 1));
	} else {
		for (unsigned i = c->ooo_n; i > lo; i--)
			c->ooo[i] = c->ooo[i - 1];
		c->ooo_n++;
	}
	c->ooo[lo].start = s;
	c->ooo[lo].len = e - s;
	c->ooo_recent = (uint8_t)lo;
	tcp_ooo_mirror(c);
}

/* RFC 2018 §4: the block holding the latest segment first, then the others
 * (ss_tcp_opts_build() keeps as many as fit beside the timestamps). */
void tcp_ooo_sack_blocks(const struct ss_tcp_conn *c, struct ss_tcp_opts *o)
{
	const struct ss_tcp_flow *f = &c->f;
	unsigned n = 0;

	if (!(f->flags & SS_TCPF_SACK_PERM) || !c->ooo_n)
		return;
	for (unsigned k = 0; k < c->ooo_n && n < SS_TCP_MAX_SACK_BLOCKS; k++) {
		unsigned i = (c->ooo_recent + k) % c->ooo_n;
		uint32_t left = f->rcv_nxt + (c->ooo[i].start - f->rx_tail);

		o->sack[n].left = left;
		o->sack[n].right = left + c->ooo[i].len;
		n++;
	}
	o->sack_count = (uint8_t)n;
	o->present |= SS_TCP_OPTF_SACK;
}
