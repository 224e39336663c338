/* tcp_invariants.h - consistency checks on a struct ss_tcp_conn, shared by the unit tests and the fuzzer. */
#ifndef SS_TESTS_TCP_INVARIANTS_H
#define SS_TESTS_TCP_INVARIANTS_H

#include <stddef.h>

#include "tcp/tcp.h"
#include "wire/seq.h"

/*
 * Returns NULL when every invariant holds, else a description of the first
 * one violated.  They hold after every engine call, whatever the input:
 * ring accounting, sequence-space ordering, the sent range within the
 * queued data, the out-of-order interval inside the ring, timers off once
 * CLOSED.
 */
static inline const char *tcp_invariant_violation(const struct ss_tcp_conn *c)
{
	const struct ss_tcp_flow *f = &c->f;
	uint32_t fin = (f->flags & SS_TCPF_FIN_SENT) ? 1 : 0;
	uint32_t data_end = c->iss + 1 + f->tx_tail;

	if (f->state >= SS_TCPS_MAX)
		return "state out of range";
	if (f->rx_tail - f->rx_head > c->rx.size)
		return "rx ring over-full";
	if (f->tx_tail - f->tx_head > c->tx.size)
		return "tx ring over-full";
	if (!ss_seq_leq(f->snd_una, f->snd_nxt) || !ss_seq_leq(f->snd_nxt, f->snd_max))
		return "snd_una <= snd_nxt <= snd_max violated";
	if (fin && !(f->flags & SS_TCPF_FIN_QUEUED))
		return "FIN sent but not queued";
	if (f->state == SS_TCPS_CLOSED &&
	    (c->rto_deadline_us || c->persist_deadline_us || c->tw_deadline_us))
		return "timer armed in CLOSED";
	if (f->mss == 0 || f->cwnd == 0)
		return "mss or cwnd zero";
	if (f->state == SS_TCPS_CLOSED)
		return NULL;
	/* Sent range within queued data (+ our SYN before, FIN after). */
	if ((uint32_t)(data_end + fin - f->snd_max) > c->tx.size)
		return "snd_max beyond queued data";
	if (f->snd_max - f->snd_una > (f->tx_tail - f->tx_head) + 2)
		return "flight larger than queued data";
	if (f->snd_una != c->iss) {
		bool fin_acked = fin && ss_seq_gt(f->snd_una, data_end);
		uint32_t want = fin_acked ? f->tx_tail : f->snd_una - c->iss - 1;

		if (f->tx_head != want)
			return "tx_head does not match snd_una";
	}
	if (c->ooo_n > SS_TCP_OOO_MAX)
		return "too many ooo intervals";
	if ((c->ooo_n == 0) != (f->ooo_len == 0) ||
	    (c->ooo_n && (f->ooo_start != c->ooo[0].start || f->ooo_len != c->ooo[0].len)))
		return "hot ooo interval is not the lowest one";
	for (unsigned i = 0; i < c->ooo_n; i++) {
		uint32_t off = c->ooo[i].start - f->rx_tail;

		if (c->ooo[i].len == 0)
			return "empty ooo interval";
		if (off == 0 || off >= c->rx.size)
			return "ooo interval not beyond rx_tail";
		if (c->ooo[i].start + c->ooo[i].len - f->rx_head > c->rx.size)
			return "ooo interval beyond ring";
		/* sorted, disjoint and not touching: a gap before the next */
		if (i + 1 < c->ooo_n &&
		    (int32_t)(c->ooo[i + 1].start - (c->ooo[i].start + c->ooo[i].len)) <= 0)
			return "ooo intervals overlap or touch";
	}
	/* The SACK history: one remembered position per interval, each in
	 * an interval held. */
	if (c->ooo_hist_n > SS_TCP_MAX_SACK_BLOCKS)
		return "too many remembered SACK blocks";
	for (unsigned h = 0; h < c->ooo_hist_n; h++) {
		int in = -1;

		for (unsigned i = 0; i < c->ooo_n; i++)
			if (c->ooo_hist[h] - c->ooo[i].start < c->ooo[i].len)
				in = (int)i;
		if (in < 0)
			return "remembered SACK block not held";
		for (unsigned g = 0; g < h; g++)
			if (c->ooo_hist[g] - c->ooo[in].start < c->ooo[in].len)
				return "SACK block remembered twice";
	}
	if (f->state != SS_TCPS_SYN_SENT &&
	    !ss_seq_leq(f->rcv_adv, f->rcv_nxt + (c->rx.size - (f->rx_tail - f->rx_head))))
		return "advertised window beyond ring space";
	return NULL;
}

#endif /* SS_TESTS_TCP_INVARIANTS_H */
