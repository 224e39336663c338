/* tcp_cookie.h - SYN cookies: a SYN-ACK whose ISN and TSval carry the
 * connection's state, so a listener past its half-open limit keeps none. */
#ifndef SS_TCP_COOKIE_H
#define SS_TCP_COOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/tcp.h"

/*
 * The cookie is our ISN (RFC 4987 §3.6):
 *
 *   bits 31..27  t mod 32, t = now_us >> SS_TCP_COOKIE_T_SHIFT (~67 s steps)
 *   bits 26..24  index of the peer's MSS in ss_tcp_cookie_mss[]
 *   bits 23..0   SipHash-2-4(secret, 4-tuple, peer ISN, t, MSS index)
 *
 * It is valid for one to two steps (67-134 s) after it was made: an ACK
 * acknowledging cookie+1 with sequence peer ISN+1 proves the peer got our
 * SYN-ACK; a forged one is accepted with probability 2^-24.
 *
 * The options we cannot recompute ride in the low 10 bits of the SYN-ACK's
 * TSval, which the peer echoes in TSecr (Linux keeps 6 there): bits 0-3
 * the peer's window scale (15: none), bit 4 SACK-permitted, bit 5 ECN,
 * bits 6-9 our own window scale, which the ACK may find a listener member
 * with another ring size would have chosen differently.  A SYN without
 * timestamps gets a SYN-ACK without window scaling, SACK or ECN.
 */
#define SS_TCP_COOKIE_T_SHIFT 26
#define SS_TCP_COOKIE_TS_BITS 10
#define SS_TCP_COOKIE_MSS_N 8

extern const uint16_t ss_tcp_cookie_mss[SS_TCP_COOKIE_MSS_N];

/* The connection a cookie is for (host order). */
struct ss_tcp_cookie_id {
	uint32_t local_ip, remote_ip;
	uint16_t local_port, remote_port;
	uint32_t peer_isn; /* the SYN's sequence number */
};

/* The cookie for a SYN whose peer offered @peer_mss (0 if it sent none: 536);
 * the MSS is rounded down to an entry of ss_tcp_cookie_mss[]. */
uint32_t ss_tcp_cookie_make(const uint8_t secret[16], const struct ss_tcp_cookie_id *id,
			    uint16_t peer_mss, uint64_t now_us);

/* Checks @cookie (the ACK's ack - 1) for @id (peer_isn = the ACK's seq - 1)
 * at @now_us.  True and *@peer_mss set when it is ours and not expired. */
bool ss_tcp_cookie_check(const uint8_t secret[16], const struct ss_tcp_cookie_id *id,
			 uint32_t cookie, uint64_t now_us, uint16_t *peer_mss);

/*
 * What a cookie SYN-ACK may offer, from the peer's SYN: the SYN with the
 * options we cannot remember removed (no timestamps: no window scale,
 * SACK or ECN).  Accepting the result with ss_tcp_accept_syn() sends the
 * SYN-ACK; *@ts_bits are the low TSval bits that SYN-ACK must carry, with
 * @our_wscale, the shift it offers.
 */
void ss_tcp_cookie_syn_offer(const struct ss_tcp *syn, bool ecn_on, uint8_t our_wscale,
			     struct ss_tcp *out, uint16_t *ts_bits);

/* The TSval for a cookie SYN-ACK: its low bits @ts_bits, never above
 * @ts_now (our clock for the connection), so the connection's later TSvals
 * do not go back (the peer's PAWS check, RFC 7323 §5). */
uint32_t ss_tcp_cookie_tsval(uint32_t ts_now, uint16_t ts_bits);

/*
 * The SYN the peer sent, rebuilt from the ACK that returned a valid cookie
 * (@peer_mss from ss_tcp_cookie_check()): sequence number, MSS, and from
 * the TSecr bits the window scale, SACK-permitted and ECN; *@our_wscale
 * the shift our SYN-ACK offered (0 without timestamps).  The result is a
 * plain SYN for ss_tcp_accept_cookie().  False when @ack is not a plain
 * ACK (SYN or RST set, or no ACK) or its bits name a shift above 14.
 */
bool ss_tcp_cookie_syn_rebuild(const struct ss_tcp *ack, uint16_t peer_mss, struct ss_tcp *syn,
			       uint8_t *our_wscale);

#endif /* SS_TCP_COOKIE_H */
