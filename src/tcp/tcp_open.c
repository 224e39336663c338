/* tcp_open.c - connection opening: active/passive open and SYN option negotiation. */
#include "tcp/tcp_int.h"

/*
 * Apply the options of the peer's SYN or SYN-ACK.  We always offer every
 * option on a SYN and echo only what the peer offered on a SYN-ACK, so an
 * option is in use exactly when the peer sent it:
 *   MSS: 536 if absent (RFC 9293 §3.7.1, RFC 6691); send MSS = min(ours,
 *        theirs) minus the timestamp option when that is on (RFC 6691 §2).
 *   Window scale: only if both sent it (RFC 7323 §2.2), shift clamped to
 *        14 (§2.3); otherwise neither side scales.
 *   Timestamps (RFC 7323 §3.2) and SACK-permitted (RFC 2018 §2): both.
 */
void tcp_opts_negotiate(struct ss_tcp_conn *c, const struct ss_tcp_opts *o)
{
	struct ss_tcp_flow *f = &c->f;
	uint32_t mss;

	c->syn_opts = o->present;
	c->peer_mss = (o->present & SS_TCP_OPTF_MSS) ? o->mss : SS_TCP_MSS_DEFAULT;
	mss = c->peer_mss < ss_tcp_mss_ours(c) ? c->peer_mss : ss_tcp_mss_ours(c);
	if (mss < SS_TCP_MSS_FLOOR)
		mss = SS_TCP_MSS_FLOOR;
	if (o->present & SS_TCP_OPTF_WSCALE) {
		f->snd_wscale = o->wscale > SS_TCP_WSCALE_MAX ? SS_TCP_WSCALE_MAX : o->wscale;
	} else {
		f->snd_wscale = 0;
		f->rcv_wscale = 0;
	}
	f->flags &= (uint8_t)~(SS_TCPF_TS | SS_TCPF_SACK_PERM);
	if (o->present & SS_TCP_OPTF_TS) {
		f->flags |= SS_TCPF_TS;
		f->ts_recent = o->ts_val;
		mss -= SS_TCP_TS_OPT_BYTES;
	}
	if (o->present & SS_TCP_OPTF_SACK_PERM)
		f->flags |= SS_TCPF_SACK_PERM;
	f->mss = (uint16_t)mss;
	tcp_cc_init(c);
}

/* Our SYN or SYN-ACK goes out: it takes sequence number iss, is timed
 * for the first RTT sample when @time_it (Karn: a resent one is not), and
 * the retransmission timer covers it. */
static void tcp_open_send_syn(struct ss_tcp_conn *c, bool time_it, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	f->snd_una = c->iss;
	f->snd_nxt = f->snd_max = c->iss + 1;
	if (time_it) {
		f->flags |= SS_TCPF_RTT_TIMING;
		f->rtt_seq = c->iss;
		c->rtt_start_us = now_us;
	}
	tcp_send_syn(c, now_us);
	tcp_rto_arm(c, now_us);
}

int ss_tcp_connect(struct ss_tcp_conn *c, uint64_t now_us)
{
	struct ss_tcp_flow *f = &c->f;

	if (f->state != SS_TCPS_CLOSED || c->events & SS_TCP_EV_CLOSED)
		return -1;
	f->state = SS_TCPS_SYN_SENT;
	/* Timestamps may be refused: time the SYN itself. */
	tcp_open_send_syn(c, true, now_us);
	return 0;
}

/* CLOSED -> SYN_RCVD from the peer's SYN: what ss_tcp_accept_syn() and
 * ss_tcp_accept_cookie() share. */
static int tcp_open_passive(struct ss_tcp_conn *c, const struct ss_tcp *syn)
{
	struct ss_tcp_flow *f = &c->f;

	if (f->state != SS_TCPS_CLOSED || c->events & SS_TCP_EV_CLOSED)
		return -1;
	if ((syn->flags & (SS_TCP_SYN | SS_TCP_ACK | SS_TCP_RST | SS_TCP_FIN)) != SS_TCP_SYN)
		return -1;
	c->passive_open = 1;
	c->irs = syn->seq;
	f->rcv_nxt = syn->seq + 1;
	f->rcv_adv = f->rcv_nxt;
	tcp_opts_negotiate(c, &syn->opts);
	tcp_ecn_on_syn(c, syn);
	/* The SYN's window is never scaled (RFC 7323 §2.2). */
	f->snd_wnd = syn->window;
	c->max_snd_wnd = f->snd_wnd;
	f->snd_wl1 = syn->seq;
	f->snd_wl2 = c->iss;
	f->state = SS_TCPS_SYN_RCVD;
	return 0;
}

int ss_tcp_accept_syn(struct ss_tcp_conn *c, const struct ss_tcp *syn, uint64_t now_us)
{
	if (tcp_open_passive(c, syn) != 0)
		return -1;
	/* Data on the SYN is not accepted (no TFO): the peer resends it.
	 * The SYN-ACK is timed for the first RTT sample. */
	tcp_open_send_syn(c, true, now_us);
	return 0;
}

int ss_tcp_accept_cookie(struct ss_tcp_conn *c, const struct ss_tcp *syn, uint8_t our_wscale)
{
	struct ss_tcp_flow *f = &c->f;

	if (tcp_open_passive(c, syn) != 0)
		return -1;
	/* As if our SYN-ACK had gone out (it did, statelessly): not timed,
	 * no timer (the ACK that follows completes the handshake), the shift
	 * it offered (a ring of another size would pick another; windows are
	 * clamped to 0xffff << shift, so any shift is safe), and the window
	 * it offered, which ss_tcp_accept_syn() would have sent. */
	if (syn->opts.present & SS_TCP_OPTF_WSCALE)
		f->rcv_wscale = our_wscale > SS_TCP_WSCALE_MAX ? SS_TCP_WSCALE_MAX : our_wscale;
	uint32_t free = tcp_rx_free(c);
	f->snd_una = c->iss;
	f->snd_nxt = f->snd_max = c->iss + 1;
	f->rcv_adv = f->rcv_nxt + (free > 0xffff ? 0xffff : free);
	return 0;
}
