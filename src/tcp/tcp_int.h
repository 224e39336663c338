/* tcp_int.h - internal helpers shared by the TCP engine's files (not part of the contract). */
#ifndef SS_TCP_TCP_INT_H
#define SS_TCP_TCP_INT_H

#include "tcp/tcp.h"
#include "wire/seq.h"

/* RFC 9293 §3.7.1 / RFC 6691: MSS assumed when the peer sends none. */
#define SS_TCP_MSS_DEFAULT 536
/* Floor for a peer's MSS so a hostile MSS 0 cannot make us send empty
 * segments forever (Linux TCP_MIN_SND_MSS is 48). */
#define SS_TCP_MSS_FLOOR 64
/* Bytes the timestamps option takes in every segment (NOP NOP TS). */
#define SS_TCP_TS_OPT_BYTES 12
/* RFC 6298 §2 clock granularity G (our timestamp clock ticks in ms). */
#define SS_TCP_CLOCK_G_US 1000u
/* Cap on the RTO/persist backoff shift (rto_max clamps long before). */
#define SS_TCP_BACKOFF_MAX 16

/* Transmit stream position of sequence number @seq: the first data byte
 * (ISS + 1) is stream position 0, so the map needs no extra state and is
 * exact modulo 2^32 on both sides. */
static inline uint32_t tcp_tx_pos(const struct ss_tcp_conn *c, uint32_t seq)
{
	return seq - c->iss - 1;
}

/* Sequence number just after the last byte the app queued; our FIN, when
 * queued, takes this number. */
static inline uint32_t tcp_data_end(const struct ss_tcp_conn *c)
{
	return c->iss + 1 + c->f.tx_tail;
}

/* Receive ring free space = the window we may offer (TAS style). */
static inline uint32_t tcp_rx_free(const struct ss_tcp_conn *c)
{
	return c->rx.size - (c->f.rx_tail - c->f.rx_head);
}

/* True once our FIN has been sent and acknowledged. */
static inline bool tcp_fin_acked(const struct ss_tcp_conn *c)
{
	return (c->f.flags & SS_TCPF_FIN_SENT) &&
	       ss_seq_gt(c->f.snd_una, tcp_data_end(c));
}

static inline uint32_t tcp_tsval(const struct ss_tcp_conn *c, uint64_t now_us)
{
	return (uint32_t)(now_us / 1000) + c->ts_offset;
}

/* The counters, for a change: marks them for the caller to drain. */
static inline struct ss_tcp_conn_stats *tcp_st(struct ss_tcp_conn *c)
{
	c->st_new = 1;
	return &c->st;
}

/* Karn's rule (RFC 6298 §3): a retransmission stops the timed segment;
 * until everything sent so far is acknowledged, RTT samples come from
 * TSecr (which names the transmission an ACK answers) or not at all. */
static inline void tcp_rtt_karn(struct ss_tcp_conn *c)
{
	c->f.flags &= (uint8_t)~SS_TCPF_RTT_TIMING;
	c->karn = 1;
	c->karn_end = c->f.snd_max;
}

/* States in which we may still send data (queued FIN not yet sent included). */
static inline bool tcp_state_can_send(uint8_t st)
{
	return st == SS_TCPS_ESTABLISHED || st == SS_TCPS_CLOSE_WAIT ||
	       st == SS_TCPS_FIN_WAIT_1 || st == SS_TCPS_CLOSING ||
	       st == SS_TCPS_LAST_ACK;
}

/* tcp.c */
void tcp_state_set(struct ss_tcp_conn *c, enum ss_tcp_state st);
void tcp_conn_drop(struct ss_tcp_conn *c, int err, uint8_t ev);

/* tcp_open.c */
void tcp_opts_negotiate(struct ss_tcp_conn *c, const struct ss_tcp_opts *o);

/* tcp_in.c */
void tcp_ack_advance(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us);
void tcp_snd_wnd_update(struct ss_tcp_conn *c, const struct ss_tcp *seg);
uint32_t tcp_rx_in_order(struct ss_tcp_conn *c, const uint8_t *data, uint32_t len);

/* tcp_ecn.c */
void tcp_ecn_on_syn(struct ss_tcp_conn *c, const struct ss_tcp *syn);
void tcp_ecn_on_synack(struct ss_tcp_conn *c, const struct ss_tcp *synack);
void tcp_ecn_input(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us);
uint8_t tcp_ecn_output(const struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t *flags);

/* tcp_ooo.c */
void tcp_rx_ooo(struct ss_tcp_conn *c, uint32_t seq, const uint8_t *data, uint32_t len);
uint32_t tcp_ooo_absorb(struct ss_tcp_conn *c);
uint32_t tcp_ooo_fill(struct ss_tcp_conn *c);
void tcp_ooo_clear(struct ss_tcp_conn *c);
void tcp_ooo_sack_blocks(struct ss_tcp_conn *c, struct ss_tcp_opts *o);

/* tcp_slow.c */
void tcp_input_slow(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us);

/* RFC 6298 §2.2 (first sample) and §2.3 (later samples, alpha 1/8, beta
 * 1/4), RTO = SRTT + max(G, 4 * RTTVAR) clamped to [rto_min, rto_max]
 * (§2.4, §2.5).  Inline for the fast path's timed segment (once per RTT
 * per connection: per request in request/response); tcp_rtt_sample() is
 * the same, out of line. */
static inline __attribute__((always_inline)) void
tcp_rtt_sample_inline(struct ss_tcp_conn *c, uint32_t rtt_us)
{
	struct ss_tcp_flow *f = &c->f;
	uint64_t rto;

	if (rtt_us == 0)
		rtt_us = 1; /* srtt 0 means "no sample yet" */
	c->last_rtt_us = rtt_us;
	if (f->srtt_us == 0) {
		f->srtt_us = rtt_us;
		f->rttvar_us = rtt_us / 2;
	} else {
		uint32_t err = f->srtt_us > rtt_us ? f->srtt_us - rtt_us : rtt_us - f->srtt_us;

		f->rttvar_us = (uint32_t)(((uint64_t)3 * f->rttvar_us + err) / 4);
		f->srtt_us = (uint32_t)(((uint64_t)7 * f->srtt_us + rtt_us) / 8);
	}
	rto = (uint64_t)f->srtt_us +
	      (4 * f->rttvar_us > SS_TCP_CLOCK_G_US ? 4 * f->rttvar_us : SS_TCP_CLOCK_G_US);
	if (rto < c->params->rto_min_us)
		rto = c->params->rto_min_us;
	if (rto > c->params->rto_max_us)
		rto = c->params->rto_max_us;
	f->rto_us = (uint32_t)rto;
}

/* tcp_cc.c: RTT estimation (RFC 6298), the window (RFC 5681), NewReno
 * recovery without SACK (RFC 6582). */
void tcp_rtt_sample(struct ss_tcp_conn *c, uint32_t rtt_us);
void tcp_cc_init(struct ss_tcp_conn *c);
void tcp_cc_on_ack_slow(struct ss_tcp_conn *c, uint32_t acked, const struct ss_tcp *seg,
			uint64_t now_us);

/* New data acknowledged (@acked bytes) by @seg.  Inline the usual case:
 * out of recovery with no window of ours to grow (a control loop owns
 * it, or nothing was acked) it only clears the duplicate count. */
static inline void tcp_cc_on_ack(struct ss_tcp_conn *c, uint32_t acked, const struct ss_tcp *seg,
				 uint64_t now_us)
{
	if (!(c->f.flags & SS_TCPF_IN_RECOVERY) && (c->cc_mode != SS_TCP_CC_ENGINE || !acked))
		c->f.dupacks = 0;
	else
		tcp_cc_on_ack_slow(c, acked, seg, now_us);
}
void tcp_cc_on_dupack(struct ss_tcp_conn *c, const struct ss_tcp *seg, bool sack_new,
		      uint64_t now_us);
void tcp_cc_on_rto(struct ss_tcp_conn *c);

/* tcp_sack.c: the scoreboard (RFC 6675 §3, §4) and the resends in flight. */
/* True when @seg's SACK blocks report data above snd_una not reported
 * before (D-SACK blocks below the ACK do not count); records them. */
bool tcp_sack_reports_new(struct ss_tcp_conn *c, const struct ss_tcp *seg);
void tcp_sack_prune(struct ss_tcp_conn *c);
uint32_t tcp_sack_lost_point(const struct ss_tcp_conn *c);
uint32_t tcp_sack_pipe(const struct ss_tcp_conn *c, uint32_t lost);
bool tcp_sack_next_unsent(const struct ss_tcp_conn *c, uint32_t from, uint32_t limit,
			  uint32_t *seq, uint32_t *len);
bool tcp_sack_rxt_covers(const struct ss_tcp_conn *c, uint32_t start, uint32_t end);
bool tcp_sack_rxt_add(struct ss_tcp_conn *c, uint32_t start, uint32_t end, uint64_t now_us);
unsigned tcp_sack_rxt_update(struct ss_tcp_conn *c, uint32_t lost_sack, uint64_t now_us);
void tcp_sack_rxt_clear(struct ss_tcp_conn *c);

/* tcp_rack.c: RACK loss detection (RFC 8985 §6). */
void tcp_rack_sent_full(struct ss_tcp_conn *c, uint32_t end, uint32_t ts);
uint32_t tcp_rack_reo_wnd(const struct ss_tcp_conn *c);
void tcp_rack_on_ack(struct ss_tcp_conn *c, const struct ss_tcp *seg, uint64_t now_us);
bool tcp_rack_rxt_lost(struct ss_tcp_conn *c, uint32_t ts, uint32_t end, uint64_t now_us);
void tcp_rack_after_ack(struct ss_tcp_conn *c, uint64_t now_us);
void tcp_rack_arm(struct ss_tcp_conn *c, uint64_t now_us);
void tcp_rack_timeout(struct ss_tcp_conn *c, uint64_t now_us);

/* New data up to @end (snd_max) left now (RFC 8985 §6.1: its transmit
 * time).  On SACK connections only; one store per burst: segments sent
 * in the same microsecond share the newest record. */
static inline void tcp_rack_sent(struct ss_tcp_conn *c, uint32_t end, uint64_t now_us)
{
	uint32_t ts = (uint32_t)now_us;
	unsigned n;

	if (!(c->f.flags & SS_TCPF_SACK_PERM))
		return;
	n = c->xrec_n;
	if (n) {
		struct ss_tcp_xrec *r = &c->xrec[(c->xrec_head + n - 1) & (SS_TCP_XREC_MAX - 1)];

		if (r->first == ts) {
			r->end = end;
			return;
		}
	}
	if (n < SS_TCP_XREC_MAX) {
		c->xrec[(c->xrec_head + n) & (SS_TCP_XREC_MAX - 1)] = (struct ss_tcp_xrec){ end, ts, ts };
		c->xrec_n = (uint16_t)(n + 1);
		return;
	}
	tcp_rack_sent_full(c, end, ts);
}

/* tcp_recovery.c: SACK loss recovery (RFC 6675 §5), PRR (RFC 6937). */
void tcp_rec_enter(struct ss_tcp_conn *c, uint32_t estimate, uint64_t now_us);
void tcp_rec_ack(struct ss_tcp_conn *c, bool advanced, uint32_t estimate, uint64_t now_us);
void tcp_rec_on_rto(struct ss_tcp_conn *c);
unsigned tcp_rec_send(struct ss_tcp_conn *c, uint64_t now_us, uint32_t *room);

/* tcp_opts.c: keepalive (RFC 9293 §3.8.4, RFC 1122 §4.2.3.6).  Its timer
 * is tw_deadline_us in every state but TIME_WAIT and the orphaned
 * FIN_WAIT_2 (the application closed), whose timers those are. */
static inline bool tcp_ka_owns_tw(const struct ss_tcp_conn *c)
{
	return c->ka_on && c->f.state != SS_TCPS_TIME_WAIT && c->f.state != SS_TCPS_CLOSED &&
	       !c->closed_by_app;
}
void tcp_ka_timer(struct ss_tcp_conn *c, uint64_t now_us);

/* tcp_out.c */
int tcp_output_seg(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint8_t flags,
		   uint64_t now_us);
int tcp_send_ack(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_send_rst(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_send_syn(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_send_challenge_ack(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_retransmit_una(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_retransmit_seq(struct ss_tcp_conn *c, uint32_t seq, uint32_t len, uint64_t now_us);
int tcp_send_rst_reply(struct ss_tcp_conn *c, const struct ss_tcp *in);
int tcp_persist_probe(struct ss_tcp_conn *c, uint64_t now_us);
void tcp_rto_arm(struct ss_tcp_conn *c, uint64_t now_us);
void tcp_tlp_arm(struct ss_tcp_conn *c, uint64_t now_us);
int tcp_tail_probe(struct ss_tcp_conn *c, uint64_t now_us);
uint16_t tcp_rcv_wnd_field(struct ss_tcp_conn *c);
/* ss_tcp_output() without its one-segment path: the loop for every case
 * (the tests compare the two). */
unsigned tcp_output_general(struct ss_tcp_conn *c, uint64_t now_us);

#endif /* SS_TCP_TCP_INT_H */
