/* tcp_cookie.c - SYN cookies (RFC 4987 §3.6): make, check, and rebuild the SYN. */
#include "tcp/tcp_cookie.h"

#include <string.h>

#include "tcp/siphash.h"

/* Common MSS values, ascending: a peer's MSS is rounded down to one of
 * them (536 is the RFC 9293 default; 1460 Ethernet; 8960 jumbo). */
const uint16_t ss_tcp_cookie_mss[SS_TCP_COOKIE_MSS_N] = {
	536, 1024, 1220, 1300, 1400, 1440, 1460, 8960,
};

#define TS_WSCALE_NONE 0xf
#define TS_SACK 0x10
#define TS_ECN 0x20
#define TS_OUR_WSCALE_SHIFT 6

static uint32_t cookie_hash(const uint8_t secret[16], const struct ss_tcp_cookie_id *id,
			    uint32_t t, uint32_t mss_idx)
{
	/* Domain-separated from the RFC 6528 ISN, which uses the same key
	 * with a 12-byte message. */
	uint8_t m[24] = { 'c', 'k' };

	m[2] = (uint8_t)mss_idx;
	m[3] = (uint8_t)t;
	m[4] = (uint8_t)(t >> 8);
	m[5] = (uint8_t)(t >> 16);
	m[6] = (uint8_t)(t >> 24);
	memcpy(m + 8, &id->local_ip, 4);
	memcpy(m + 12, &id->remote_ip, 4);
	memcpy(m + 16, &id->local_port, 2);
	memcpy(m + 18, &id->remote_port, 2);
	memcpy(m + 20, &id->peer_isn, 4);
	return (uint32_t)ss_siphash24(secret, m, sizeof(m)) & 0xffffffu;
}

uint32_t ss_tcp_cookie_make(const uint8_t secret[16], const struct ss_tcp_cookie_id *id,
			    uint16_t peer_mss, uint64_t now_us)
{
	uint32_t t = (uint32_t)(now_us >> SS_TCP_COOKIE_T_SHIFT);
	uint32_t idx = 0;

	while (idx + 1 < SS_TCP_COOKIE_MSS_N && ss_tcp_cookie_mss[idx + 1] <= peer_mss)
		idx++;
	return (t & 0x1f) << 27 | idx << 24 | cookie_hash(secret, id, t, idx);
}

bool ss_tcp_cookie_check(const uint8_t secret[16], const struct ss_tcp_cookie_id *id,
			 uint32_t cookie, uint64_t now_us, uint16_t *peer_mss)
{
	uint32_t now_t = (uint32_t)(now_us >> SS_TCP_COOKIE_T_SHIFT);
	uint32_t age = (now_t - (cookie >> 27)) & 0x1f;
	uint32_t idx = (cookie >> 24) & 7;

	if (age > 1 || now_t < age)
		return false;
	if (cookie_hash(secret, id, now_t - age, idx) != (cookie & 0xffffffu))
		return false;
	*peer_mss = ss_tcp_cookie_mss[idx];
	return true;
}

void ss_tcp_cookie_syn_offer(const struct ss_tcp *syn, bool ecn_on, uint8_t our_wscale,
			     struct ss_tcp *out, uint16_t *ts_bits)
{
	*out = *syn;
	*ts_bits = 0;
	if (!(syn->opts.present & SS_TCP_OPTF_TS)) {
		out->opts.present &= (uint8_t)~(SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM);
		out->flags &= (uint8_t)~(SS_TCP_ECE | SS_TCP_CWR);
		return;
	}
	if (syn->opts.present & SS_TCP_OPTF_WSCALE)
		*ts_bits = syn->opts.wscale > SS_TCP_WSCALE_MAX ? SS_TCP_WSCALE_MAX
								: syn->opts.wscale;
	else
		*ts_bits = TS_WSCALE_NONE;
	if (syn->opts.present & SS_TCP_OPTF_SACK_PERM)
		*ts_bits |= TS_SACK;
	if (ecn_on && (syn->flags & (SS_TCP_ECE | SS_TCP_CWR)) == (SS_TCP_ECE | SS_TCP_CWR))
		*ts_bits |= TS_ECN;
	else
		out->flags &= (uint8_t)~(SS_TCP_ECE | SS_TCP_CWR);
	*ts_bits |= (uint16_t)((our_wscale & 0xf) << TS_OUR_WSCALE_SHIFT);
}

uint32_t ss_tcp_cookie_tsval(uint32_t ts_now, uint16_t ts_bits)
{
	const uint32_t mask = (1u << SS_TCP_COOKIE_TS_BITS) - 1;
	uint32_t ts = (ts_now & ~mask) | (ts_bits & mask);

	if (ts > ts_now) /* the bits are above now's: the step before */
		ts -= mask + 1;
	return ts;
}

bool ss_tcp_cookie_syn_rebuild(const struct ss_tcp *ack, uint16_t peer_mss, struct ss_tcp *syn,
			       uint8_t *our_wscale)
{
	if ((ack->flags & (SS_TCP_SYN | SS_TCP_RST | SS_TCP_ACK)) != SS_TCP_ACK)
		return false;
	memset(syn, 0, sizeof(*syn));
	syn->sport = ack->sport;
	syn->dport = ack->dport;
	syn->seq = ack->seq - 1;
	syn->flags = SS_TCP_SYN;
	syn->hdr_len = SS_TCP_HDR_MIN;
	/* The SYN's own window is unknown; the ACK's (scaled) replaces it
	 * as soon as the ACK is processed. */
	syn->window = ack->window;
	syn->opts.present = SS_TCP_OPTF_MSS;
	syn->opts.mss = peer_mss;
	*our_wscale = 0;
	if (!(ack->opts.present & SS_TCP_OPTF_TS))
		return true;
	uint32_t bits = ack->opts.ts_ecr & ((1u << SS_TCP_COOKIE_TS_BITS) - 1);
	*our_wscale = (uint8_t)(bits >> TS_OUR_WSCALE_SHIFT);
	if (*our_wscale > SS_TCP_WSCALE_MAX)
		return false;
	syn->opts.present |= SS_TCP_OPTF_TS;
	syn->opts.ts_val = ack->opts.ts_val;
	if ((bits & 0xf) != TS_WSCALE_NONE) { /* 0..14: what the SYN offered, clamped */
		syn->opts.present |= SS_TCP_OPTF_WSCALE;
		syn->opts.wscale = (uint8_t)(bits & 0xf);
	}
	if (bits & TS_SACK)
		syn->opts.present |= SS_TCP_OPTF_SACK_PERM;
	if (bits & TS_ECN)
		syn->flags |= SS_TCP_ECE | SS_TCP_CWR;
	return true;
}
