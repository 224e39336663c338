/* stack_loop.c - the loopback path: segments to our own address queued in the stack and fed back into the receive path. */
#include "stack/stack_loop.h"
#include "stack/stack_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stack/proto.h"
#include "wire/eth.h"
#include "wire/ipv4.h"
#include "wire/tcp.h"

/*
 * A ring of preallocated frame slots.  The stack's output callbacks
 * (conn_seg_buf() and conn_emit()) build a segment for our own address
 * straight into the slot at the tail (stack_loop_reserve, then
 * stack_loop_commit); after the round's flush, stack_loop_drain() hands
 * each queued frame to ss_proto_input() (what the NIC's frames go
 * through), in place; the round then flushes the connections that took
 * them (stack_round.c, SS_LOOP_PASSES passes).  Frames
 * emitted while a pass runs (ACKs, SYN-ACKs, a RST for a closed port)
 * queue behind it and wait for the next pass or the next round: the
 * receive path is never entered from inside emit.
 */

int stack_loop_init(struct ss_stack *s)
{
	struct ss_stack_loop *q = &s->loop;
	uint32_t n = s->lim.loop_slots ? s->lim.loop_slots : SS_LOOP_SLOTS_DEFAULT;
	/* The largest segment the engine builds: our MSS (both ends are us)
	 * with the most options, behind Ethernet and IPv4; cache-line stride. */
	size_t frame = SS_ETH_HDR_LEN + SS_IPV4_HDR_MIN + SS_TCP_HDR_MAX + s->params.mss;

	if (n & (n - 1))
		return -EINVAL;
	q->slots = n;
	q->stride = (uint32_t)((frame + 63) & ~(size_t)63);
	q->buf = malloc((size_t)n * q->stride);
	q->len = calloc(n, sizeof(*q->len));
	if (!q->buf || !q->len) {
		stack_loop_fini(s);
		return -ENOMEM;
	}
	return 0;
}

void stack_loop_fini(struct ss_stack *s)
{
	free(s->loop.buf);
	free(s->loop.len);
	s->loop.buf = NULL;
	s->loop.len = NULL;
}

void ss_stack_set_loop_input(struct ss_stack *s, struct ss_proto_ctx *rx)
{
	s->loop.rx = rx;
}

uint8_t *stack_loop_reserve(struct ss_stack *s, size_t *cap)
{
	struct ss_stack_loop *q = &s->loop;

	if (q->tail - q->head == q->slots) {
		ss_ctr_inc(s->ctr, SS_CTR_drop_loopback_full);
		return NULL;
	}
	*cap = q->stride;
	return q->buf + (size_t)(q->tail & (q->slots - 1)) * q->stride;
}

void stack_loop_commit(struct ss_stack *s, size_t len)
{
	struct ss_stack_loop *q = &s->loop;

	q->len[q->tail & (q->slots - 1)] = (uint16_t)len;
	q->tail++;
	ss_ctr_inc(s->ctr, SS_CTR_tx_loopback);
}

/* A reply ss_proto_input() wrote over a looped-back frame (a RST for a
 * closed port) goes to our own address too: behind the queue. */
static void loop_requeue(struct ss_stack *s, const uint8_t *frame, size_t len)
{
	size_t cap;
	uint8_t *buf = stack_loop_reserve(s, &cap);

	if (!buf)
		return;
	memcpy(buf, frame, len);
	stack_loop_commit(s, len);
}

/* Feeds the frames queued now (not those they cause) to the receive path. */
void stack_loop_drain(struct ss_stack *s)
{
	struct ss_stack_loop *q = &s->loop;
	uint32_t end = q->tail;
	const unsigned flags = SS_RX_LOOPBACK | SS_RX_IP_CSUM_GOOD | SS_RX_L4_CSUM_GOOD;

	while (q->head != end) {
		uint32_t i = q->head & (q->slots - 1);
		uint8_t *frame = q->buf + (size_t)i * q->stride;

		/* The slot stays taken while its frame is read in place. */
		ss_ctr_inc(s->ctr, SS_CTR_rx_loopback);
		size_t out = ss_proto_input(q->rx, frame, q->len[i], q->stride, flags);
		if (out)
			loop_requeue(s, frame, out);
		q->head++;
	}
}
