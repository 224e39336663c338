/* test_tcp_lossy.c - bulk transfer between two engine connections over a simulated lossy, reordering, duplicating link. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tcp/tcp.h"
#include "wire/tcp.h"

/*
 * A sender and a receiver connection, joined by a link simulated here:
 * per direction a bottleneck of LINK_BPS with a drop-tail queue of
 * LINK_QUEUE segments, then LINK_DELAY_NS of propagation; segments are
 * lost at random (a seeded PRNG: every run is the same), 1 % of them
 * reordered (held back one or two segment times: less than DupThresh,
 * so a correct sender does not take it for loss) and 1 % duplicated.  Both
 * ends run as the service runs them: input, then the applications
 * (the sender keeps its ring full, the receiver reads and checks every
 * byte at once), then output; timers at their deadlines.  Each run must
 * deliver every byte exactly, finish within a simulated-time bound, and
 * neither reset nor time out; its simulated goodput is printed.
 *
 * The receiver keeps only SS_TCP_OOO_MAX out-of-order intervals: at high
 * loss it drops what does not fit (ooo_drops), and the sender recovers
 * that by timeouts.  Deeper reordering than this link's would make a
 * DupThresh sender recover spuriously (no undo is implemented).
 */

#define LINK_BPS 1000000000ull  /* 1 Gbit/s each way */
#define LINK_DELAY_NS 1000000ull /* 1 ms one way: 2 ms RTT, BDP 250 kB */
#define LINK_QUEUE 256           /* segments (about 1.5 BDP) */
#define RING (1u << 20)          /* both ends' rings */
#define XFER (4u << 20)          /* bytes per run */
#define SIM_LIMIT_NS 60000000000ull /* 60 s simulated */
#define WINDOW_CWND (256u * 1024) /* WINDOW mode: the fixed window */
#define SMALL_CWND (16u * 1460)   /* ... and a small one, as a loop leaves under loss */
#define CTRL_NS 2000000ull       /* WINDOW mode: the "loop" speaks every RTT */

struct pkt {
	uint64_t t;   /* arrival, ns */
	uint64_t id;  /* tie-break: FIFO among equal times */
	int to;       /* 0: sender, 1: receiver */
	uint32_t len; /* bytes of seg */
	uint8_t ecn;
	uint8_t seg[SS_TCP_HDR_MAX + 1500];
};

struct end {
	struct ss_tcp_conn c;
	uint8_t *rx, *tx;
	uint64_t link_free; /* ns: when its outgoing link is idle */
	double loss;        /* of what it sends */
};

struct sim {
	struct ss_tcp_params p;
	struct end e[2];
	struct pkt **heap;
	size_t n, cap;
	uint64_t now, next_id, rng;
	unsigned lost, dropped_queue, reordered, duplicated;
};

static uint64_t rng_next(struct sim *s)
{
	/* xorshift64* */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}

static double rng_unit(struct sim *s)
{
	return (double)(rng_next(s) >> 11) / (double)(1ull << 53);
}

static bool pkt_before(const struct pkt *a, const struct pkt *b)
{
	return a->t < b->t || (a->t == b->t && a->id < b->id);
}

static void heap_push(struct sim *s, struct pkt *p)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->heap = realloc(s->heap, s->cap * sizeof(*s->heap));
	}
	size_t i = s->n++;

	while (i && pkt_before(p, s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = p;
}

static struct pkt *heap_pop(struct sim *s)
{
	struct pkt *top = s->heap[0], *last = s->heap[--s->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct pkt *best = last;

		if (l < s->n && pkt_before(s->heap[l], best)) {
			m = l;
			best = s->heap[l];
		}
		if (l + 1 < s->n && pkt_before(s->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->n)
		s->heap[i] = last;
	return top;
}

static int sim_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct sim *s = arg;
	int from = c == &s->e[0].c ? 0 : 1;
	struct end *e = &s->e[from];
	struct pkt *p = malloc(sizeof(*p));
	size_t hl = ss_tcp_hdr_write(p->seg, &seg->hdr);

	if (seg->len)
		ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, p->seg + hl, seg->len);
	p->len = (uint32_t)(hl + seg->len);
	p->ecn = seg->hdr.ip_ecn;
	p->to = !from;
	/* The bottleneck: drop-tail queue, then serialisation (40 bytes of
	 * IP and framing per segment). */
	uint64_t ser = (uint64_t)(p->len + 40) * 8 * 1000000000ull / LINK_BPS;

	if (e->link_free > s->now && e->link_free - s->now > LINK_QUEUE * ser) {
		s->dropped_queue++;
		free(p);
		return 0; /* lost on the way, as far as the sender knows */
	}
	e->link_free = (e->link_free > s->now ? e->link_free : s->now) + ser;
	if (rng_unit(s) < e->loss) {
		s->lost++;
		free(p);
		return 0;
	}
	p->t = e->link_free + LINK_DELAY_NS;
	if (rng_unit(s) < 0.01) { /* held back 1 to 2 segment times */
		p->t += ser + rng_next(s) % ser;
		s->reordered++;
	}
	p->id = s->next_id++;
	if (rng_unit(s) < 0.01) {
		struct pkt *d = malloc(sizeof(*d));

		*d = *p;
		d->t += ser + rng_next(s) % (2 * ser);
		d->id = s->next_id++;
		heap_push(s, d);
		s->duplicated++;
	}
	heap_push(s, p);
	return 0;
}

static uint8_t pat(uint32_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

struct result {
	double mbps;         /* goodput: XFER over the time to deliver it */
	uint64_t t_ns;       /* connected to last byte delivered */
	uint64_t retrans, rto, tlp, lost_rexmits, ooo_drops, dup_segs;
	bool ok;
};

static void end_init(struct sim *s, int i, uint16_t lport, uint16_t rport, uint32_t iss)
{
	struct end *e = &s->e[i];

	e->rx = calloc(1, RING);
	e->tx = calloc(1, RING);
	struct ss_tcp_ring rx = { .base = e->rx, .size = RING };
	struct ss_tcp_ring tx = { .base = e->tx, .size = RING };

	ss_tcp_conn_init(&e->c, &s->p, i ? 0x0a000002u : 0x0a000001u, lport,
			 i ? 0x0a000001u : 0x0a000002u, rport, iss, 777u * (unsigned)(i + 1), rx, tx,
			 sim_emit, s);
}

/* One transfer; @mode ENGINE or WINDOW; loss of data and of ACKs. */
static struct result run(uint8_t mode, uint32_t cwnd, double loss_data, double loss_ack, uint64_t seed)
{
	static struct sim s;
	struct result r = { 0 };
	uint8_t buf[65536];
	uint32_t queued = 0, got = 0;
	uint64_t t_conn = 0, t_done = 0, next_ctrl = 0;
	bool fin_queued = false, bad = false, mismatch = false;

	memset(&s, 0, sizeof(s));
	s.rng = seed * 0x9e3779b97f4a7c15ull + 1;
	ss_tcp_params_default(&s.p);
	s.p.delack_us = 0;
	s.p.ecn = 0;
	end_init(&s, 0, 40000, 5001, 0x11111111u);
	end_init(&s, 1, 5001, 40000, 0x77777777u);
	s.e[0].loss = loss_data;
	s.e[1].loss = loss_ack;
	s.now = 1000000000ull;
	CHECK(ss_tcp_connect(&s.e[0].c, s.now / 1000) == 0);

	while (s.now < SIM_LIMIT_NS) {
		/* Next event: an arrival, a deadline, a control tick. */
		uint64_t next = UINT64_MAX;

		if (s.n)
			next = s.heap[0]->t;
		for (int i = 0; i < 2; i++) {
			uint64_t d = ss_tcp_next_deadline(&s.e[i].c);

			if (d && d * 1000 < next)
				next = d * 1000;
		}
		if (mode == SS_TCP_CC_WINDOW && t_conn && next_ctrl < next)
			next = next_ctrl;
		if (next == UINT64_MAX)
			break; /* nothing left to happen */
		s.now = next > s.now ? next : s.now + 1000;
		uint64_t now_us = s.now / 1000;

		while (s.n && s.heap[0]->t <= s.now) {
			struct pkt *p = heap_pop(&s);
			struct ss_tcp_conn *c = &s.e[p->to].c;
			struct ss_tcp seg;

			memset(&seg, 0, sizeof(seg));
			CHECK(ss_tcp_parse(p->seg, p->len, &seg) == SS_TCP_OK);
			seg.ip_ecn = p->ecn;
			if (c->f.state == SS_TCPS_CLOSED && p->to == 1 &&
			    (seg.flags & (SS_TCP_SYN | SS_TCP_ACK | SS_TCP_RST)) == SS_TCP_SYN)
				ss_tcp_accept_syn(c, &seg, now_us);
			else
				ss_tcp_input(c, &seg, now_us);
			free(p);
		}
		for (int i = 0; i < 2; i++)
			ss_tcp_timer(&s.e[i].c, now_us);
		struct ss_tcp_conn *a = &s.e[0].c, *b = &s.e[1].c;

		if (!t_conn && a->f.state == SS_TCPS_ESTABLISHED) {
			t_conn = s.now;
			next_ctrl = s.now;
		}
		if (mode == SS_TCP_CC_WINDOW && t_conn && s.now >= next_ctrl) {
			/* The control loop, trivially: the same window each interval. */
			ss_tcp_cc_set(a, SS_TCP_CC_WINDOW, cwnd, false);
			next_ctrl = s.now + CTRL_NS;
		}
		/* The sender's application keeps its ring full, then shuts down. */
		if (t_conn && queued < XFER) {
			uint32_t n = ss_tcp_tx_space(a);

			if (n > XFER - queued)
				n = XFER - queued;
			while (n) {
				uint32_t k = n < sizeof(buf) ? n : (uint32_t)sizeof(buf);

				for (uint32_t j = 0; j < k; j++)
					buf[j] = pat(queued + j);
				ss_tcp_ring_copy_in(&a->tx, a->f.tx_tail, buf, k);
				CHECK(ss_tcp_send(a, k) == 0);
				queued += k;
				n -= k;
			}
		}
		if (queued == XFER && !fin_queued) {
			ss_tcp_shutdown(a, now_us);
			fin_queued = true;
		}
		/* The receiver's reads everything and checks it. */
		for (uint32_t n; (n = ss_tcp_rx_avail(b)) != 0;) {
			if (n > sizeof(buf))
				n = sizeof(buf);
			ss_tcp_ring_copy_out(&b->rx, b->f.rx_head, buf, n);
			for (uint32_t j = 0; j < n; j++)
				if (buf[j] != pat(got + j))
					mismatch = true;
			got += n;
			CHECK(ss_tcp_recv_done(b, n) == 0);
		}
		if (got >= XFER && !t_done)
			t_done = s.now;
		for (int i = 0; i < 2; i++) {
			struct ss_tcp_conn *c = &s.e[i].c;

			ss_tcp_output(c, now_us);
			if (c->events & (SS_TCP_EV_RESET | SS_TCP_EV_ERROR))
				bad = true;
			c->events = 0;
			c->rx_new = c->tx_acked = 0;
		}
		if (bad)
			break;
		/* Done: all delivered, the FIN in, ours acknowledged. */
		if (t_done && (b->f.flags & SS_TCPF_PEER_FIN) && a->f.snd_una == a->f.snd_max)
			break;
	}
	r.ok = !bad && !mismatch && got == XFER && t_done;
	CHECK(!bad);
	CHECK(!mismatch);
	CHECK_EQ_U64(got, XFER);
	CHECK(t_done != 0);
	CHECK(s.e[1].c.f.flags & SS_TCPF_PEER_FIN);
	CHECK(s.e[0].c.f.snd_una == s.e[0].c.f.snd_max);
	if (t_done) {
		r.t_ns = t_done - t_conn;
		r.mbps = (double)XFER * 8 * 1000.0 / (double)r.t_ns;
	}
	r.retrans = s.e[0].c.st.retrans_segs;
	r.rto = s.e[0].c.st.rto_fired + s.e[1].c.st.rto_fired;
	r.tlp = s.e[0].c.st.tail_probes + s.e[1].c.st.tail_probes;
	r.lost_rexmits = s.e[0].c.st.lost_rexmits;
	r.ooo_drops = s.e[1].c.st.drop_ooo_outside;
	r.dup_segs = (s.e[1].c.st.dup_data + 1459) / 1460;
	while (s.n)
		free(heap_pop(&s));
	free(s.heap);
	for (int i = 0; i < 2; i++) {
		free(s.e[i].rx);
		free(s.e[i].tx);
	}
	return r;
}

int main(void)
{
	static const double losses[] = { 0.005, 0.01, 0.02, 0.05, 0.10 };
	static const char *const dirs[] = { "data", "acks", "both" };
	static const struct {
		uint8_t mode;
		uint32_t cwnd;
		const char *name;
	} modes[] = {
		{ SS_TCP_CC_ENGINE, 0, "ENGINE" },
		{ SS_TCP_CC_WINDOW, WINDOW_CWND, "WINDOW" },
		{ SS_TCP_CC_WINDOW, SMALL_CWND, "WIN16" }, /* 16 segments */
	};

	printf("mode    lost  loss%%  goodput_Mbit/s  time_ms  retrans  rto  tlp  lost_rexmits  ooo_drops  dup_segs\n");
	for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (unsigned d = 0; d < 3; d++) {
			for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
				double ld = d != 1 ? losses[i] : 0, la = d != 0 ? losses[i] : 0;
				struct result r = run(modes[m].mode, modes[m].cwnd, ld, la,
						      1000 * m + 100 * d + i + 1);

				printf("%-6s  %-4s  %5.1f  %14.1f  %7.1f  %7" PRIu64 "  %3" PRIu64
				       "  %3" PRIu64 "  %12" PRIu64 "  %9" PRIu64 "  %8" PRIu64 "%s\n",
				       modes[m].name, dirs[d], losses[i] * 100, r.mbps, r.t_ns / 1e6,
				       r.retrans, r.rto, r.tlp, r.lost_rexmits, r.ooo_drops, r.dup_segs,
				       r.ok ? "" : "  FAILED");
				/* The simulation is deterministic: generous floors
				 * (about half of what it gives) for light loss. */
				if (losses[i] <= 0.01 && m < 2)
					CHECK(r.mbps >= (m == 0 ? 25 : 400));
				/* WINDOW mode at any loss: RACK (RFC 8985 §6) finds
				 * the losses without waiting on timers (both ways at
				 * 10 % took 250 ms with DupThresh alone, 57 with it). */
				if (m == 1)
					CHECK(r.mbps >= 300);
			}
		}
	}
	return check_done("test_tcp_lossy");
}
