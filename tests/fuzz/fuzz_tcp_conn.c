/* fuzz_tcp_conn.c - libFuzzer: an established TCP connection driven by arbitrary segments, app calls and time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcp/tcp.h"
#include "tcp/tcp_invariants.h"
#include "wire/seq.h"

/*
 * Input: byte 0 picks the setup (bit 0 timestamps, bit 1 passive open,
 * bits 2-3 the peer's window scale 0/3/7/14, bit 4 SACK-permitted, bit 5
 * no MSS option, bits 6-7 the rings' home bytes: 0, a few lines in, the
 * last line, half way); the rest is a list of operations.  Segments are built
 * relative to rcv_nxt and snd_una so that most land in or near the
 * windows.  After every operation the invariants of tcp_invariants.h
 * must hold, every emitted payload must lie in queued transmit data, and
 * EV_CLOSED must be raised at most once; any violation traps.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_RX_SIZE 4096u
#define FZ_TX_SIZE 8192u

struct fz {
	const uint8_t *p;
	size_t n;
	int emit_fail;
	uint32_t peer_tsval;
	uint32_t last_tsval;
	uint8_t scratch[65536];
};

static uint8_t fz_u8(struct fz *z)
{
	if (!z->n)
		return 0;
	z->n--;
	return *z->p++;
}

static uint16_t fz_u16(struct fz *z)
{
	return (uint16_t)(fz_u8(z) | fz_u8(z) << 8);
}

static int fz_emit(void *arg, struct ss_tcp_conn *c, const struct ss_tcp_seg_out *seg)
{
	struct fz *z = arg;
	const struct ss_tcp_flow *f = &c->f;

	if (seg->len) {
		/* The payload must be data the app queued and that is not yet acked. */
		if ((uint32_t)(seg->tx_pos - f->tx_head) + (uint64_t)seg->len > f->tx_tail - f->tx_head)
			__builtin_trap();
		if (seg->len > f->mss)
			__builtin_trap();
		ss_tcp_ring_copy_out(&c->tx, seg->tx_pos, z->scratch, seg->len);
	}
	if (seg->hdr.flags & SS_TCP_SYN && seg->len)
		__builtin_trap();
	if (seg->hdr.opts.present & SS_TCP_OPTF_TS)
		z->last_tsval = seg->hdr.opts.ts_val;
	return z->emit_fail ? -1 : 0;
}

static void fz_check(const struct ss_tcp_conn *c, unsigned *closed)
{
	if (tcp_invariant_violation(c))
		__builtin_trap();
	if (c->events & SS_TCP_EV_CLOSED) {
		if (c->f.state != SS_TCPS_CLOSED)
			__builtin_trap();
		(*closed)++;
		if (*closed > 1)
			__builtin_trap();
	}
}

static void fz_seg_init(struct fz *z, const struct ss_tcp_conn *c, struct ss_tcp *s, uint8_t flags,
			uint32_t seq, uint32_t ack, uint16_t win)
{
	memset(s, 0, sizeof(*s));
	s->sport = c->remote_port;
	s->dport = c->local_port;
	s->seq = seq;
	s->ack = ack;
	s->flags = flags;
	s->window = win;
	if (c->f.flags & SS_TCPF_TS || c->f.state == SS_TCPS_SYN_SENT ||
	    c->f.state == SS_TCPS_CLOSED) {
		s->opts.present = SS_TCP_OPTF_TS;
		s->opts.ts_val = z->peer_tsval;
		s->opts.ts_ecr = z->last_tsval;
	}
	s->hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&s->opts));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t rxbuf[FZ_RX_SIZE], txbuf[FZ_TX_SIZE], payload[2048];
	static struct fz z;
	static const uint8_t wscales[4] = { 0, 3, 7, 14 };
	struct ss_tcp_params p;
	struct ss_tcp_conn c;
	struct ss_tcp s;
	uint64_t now = 1000000;
	unsigned closed = 0;

	if (size < 1)
		return 0;
	z.p = data + 1;
	z.n = size - 1;
	z.emit_fail = 0;
	z.peer_tsval = 777;
	z.last_tsval = 0;
	uint8_t setup = data[0];
	const uint32_t iss = 0xfffff000u, peer_iss = 0x7ffff800u;

	ss_tcp_params_default(&p);
	p.max_retries = 4;
	p.syn_retries = 2;
	static const uint32_t rx_homes[4] = { 0, 5 * 64, FZ_RX_SIZE - 64, FZ_RX_SIZE / 2 };
	static const uint32_t tx_homes[4] = { 0, 3 * 64, FZ_TX_SIZE - 64, FZ_TX_SIZE / 2 };
	struct ss_tcp_ring rx = { .base = rxbuf, .size = FZ_RX_SIZE, .home = rx_homes[setup >> 6] };
	struct ss_tcp_ring tx = { .base = txbuf, .size = FZ_TX_SIZE, .home = tx_homes[setup >> 6] };

	ss_tcp_conn_init(&c, &p, 0x0a000001, 1234, 0x0a000002, 80, iss, 42, rx, tx, fz_emit, &z);

	/* Handshake, with the options the setup byte picks. */
	struct ss_tcp_opts o;

	memset(&o, 0, sizeof(o));
	o.present = (uint8_t)(SS_TCP_OPTF_WSCALE | ((setup & 1) ? SS_TCP_OPTF_TS : 0) |
			      ((setup & 0x10) ? SS_TCP_OPTF_SACK_PERM : 0) |
			      ((setup & 0x20) ? 0 : SS_TCP_OPTF_MSS));
	o.mss = 1400;
	o.wscale = wscales[(setup >> 2) & 3];
	o.ts_val = z.peer_tsval;
	if (setup & 2) {
		fz_seg_init(&z, &c, &s, SS_TCP_SYN, peer_iss, 0, 65535);
		s.opts = o;
		if (ss_tcp_accept_syn(&c, &s, now) != 0)
			__builtin_trap();
		now += 1000;
		fz_seg_init(&z, &c, &s, SS_TCP_ACK, peer_iss + 1, iss + 1, 65535);
		ss_tcp_input(&c, &s, now);
	} else {
		if (ss_tcp_connect(&c, now) != 0)
			__builtin_trap();
		now += 1000;
		o.ts_ecr = z.last_tsval;
		fz_seg_init(&z, &c, &s, SS_TCP_SYN | SS_TCP_ACK, peer_iss, iss + 1, 65535);
		s.opts = o;
		ss_tcp_input(&c, &s, now);
	}
	ss_tcp_output(&c, now);
	if (c.f.state != SS_TCPS_ESTABLISHED)
		__builtin_trap();
	fz_check(&c, &closed);
	c.events = 0;

	while (z.n && c.f.state != SS_TCPS_CLOSED) {
		uint8_t op = fz_u8(&z);

		switch (op & 15) {
		case 0: case 1: case 2: case 3: case 4: case 5: {
			/* Incoming segment near the windows. */
			uint8_t fl = fz_u8(&z);
			int16_t dseq = (int16_t)fz_u16(&z);
			int16_t dack = (int16_t)fz_u16(&z);
			uint16_t win = fz_u16(&z);
			uint32_t len = (uint32_t)fz_u8(&z) * 8u;
			uint8_t ob = fz_u8(&z);

			if (len > sizeof(payload))
				len = sizeof(payload);
			if (op & 0x10)
				dseq = (int16_t)(dseq % 64); /* mostly at rcv_nxt */
			if (op & 0x20)
				dack = (int16_t)(dack % 64);
			uint32_t seq = c.f.rcv_nxt + (uint32_t)(int32_t)dseq;
			uint32_t ack = c.f.snd_una + (uint32_t)(int32_t)dack;

			if (op & 0x40)
				ack = c.f.snd_max;
			fz_seg_init(&z, &c, &s, fl, seq, ack, win);
			if (ob & 1)
				s.opts.present = 0;
			if (ob & 2)
				z.peer_tsval += ob >> 2;
			else if (ob & 4)
				z.peer_tsval -= ob >> 3;
			if (s.opts.present)
				s.opts.ts_val = z.peer_tsval;
			if (ob & 0x80) {
				s.opts.present |= SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE;
				s.opts.mss = (uint16_t)(ob * 3);
				s.opts.wscale = ob & 15;
			}
			for (uint32_t i = 0; i < len; i++)
				payload[i] = (uint8_t)(seq + i);
			s.payload = payload;
			s.payload_len = len;
			ss_tcp_input(&c, &s, now);
			break;
		}
		case 6: case 7: {
			uint32_t n = fz_u16(&z) % 3000u;

			/* The application's SS_CMDF_TX_HOME first: taken exactly
			 * when nothing is unacknowledged, and then the next byte
			 * is at the home byte. */
			if (op & 0x10) {
				bool empty = ss_tcp_tx_queued(&c) == 0;
				if ((ss_tcp_tx_restart(&c) == 0) != empty ||
				    (empty && ss_tcp_ring_off(&c.tx, c.f.tx_tail) != c.tx.home))
					__builtin_trap();
			}

			if (ss_tcp_send(&c, n) == 0 && n > ss_tcp_tx_space(&c) + n)
				__builtin_trap();
			break;
		}
		case 8: {
			uint32_t avail = ss_tcp_rx_avail(&c);
			uint32_t n = fz_u16(&z);

			if (ss_tcp_recv_done(&c, n) == 0 && n > avail)
				__builtin_trap();
			break;
		}
		case 9: case 10: {
			uint64_t d = ss_tcp_next_deadline(&c);

			if ((op & 0x10) && d > now)
				now = d;
			else
				now += (uint64_t)fz_u16(&z) * 100u;
			ss_tcp_timer(&c, now);
			break;
		}
		case 11: case 12:
			ss_tcp_output(&c, now);
			break;
		case 13:
			z.emit_fail = !z.emit_fail;
			break;
		case 14:
			ss_tcp_shutdown(&c, now);
			break;
		case 15:
			if (op & 0x80)
				ss_tcp_abort(&c, now);
			else
				ss_tcp_close(&c, now);
			break;
		}
		fz_check(&c, &closed);
		/* The caller's part: deliver events, then clear them. */
		c.events = 0;
		c.rx_new = 0;
		c.tx_acked = 0;
	}
	return 0;
}
