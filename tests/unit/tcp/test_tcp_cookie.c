/* test_tcp_cookie.c - SYN cookies: the cookie's fields and lifetime, the
 * options carried in TSval, and a handshake completed from a cookie alone. */
#include "tcp_harness.h"

#include "tcp/tcp_cookie.h"

static struct harness h;   /* stands in for the listener's scratch connection */
static struct harness h2;  /* the connection made from the cookie */

static const uint8_t secret[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const struct ss_tcp_cookie_id id0 = {
	.local_ip = 0x0a000001u, .remote_ip = 0x0a000002u,
	.local_port = 40000, .remote_port = 80, .peer_isn = 0x50000000u,
};

#define STEP_US (1ull << SS_TCP_COOKIE_T_SHIFT)

/* Each MSS comes back rounded down to the table; the MSS index and the
 * time step sit where the layout says. */
static void test_cookie_mss_and_layout(void)
{
	static const struct { uint16_t in, out; } cases[] = {
		{ 0, 536 }, { 536, 536 }, { 1023, 536 }, { 1024, 1024 }, { 1220, 1220 },
		{ 1299, 1220 }, { 1300, 1300 }, { 1400, 1400 }, { 1440, 1440 }, { 1448, 1440 },
		{ 1460, 1460 }, { 8959, 1460 }, { 8960, 8960 }, { 65535, 8960 },
	};
	uint64_t now = 77 * STEP_US + 12345;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t ck = ss_tcp_cookie_make(secret, &id0, cases[i].in, now);
		uint16_t mss = 0;

		CHECK_EQ_U64(ck >> 27, 77 & 0x1f);
		CHECK_EQ_U64(ss_tcp_cookie_mss[(ck >> 24) & 7], cases[i].out);
		CHECK(ss_tcp_cookie_check(secret, &id0, ck, now, &mss));
		CHECK_EQ_U64(mss, cases[i].out);
	}
}

/* Anything else than the connection it was made for fails. */
static void test_cookie_rejects(void)
{
	uint64_t now = 1000 * STEP_US + 5;
	uint32_t ck = ss_tcp_cookie_make(secret, &id0, 1460, now);
	uint16_t mss = 0;
	struct ss_tcp_cookie_id id;
	uint8_t other[16];

	for (int bit = 0; bit < 32; bit++)
		CHECK(!ss_tcp_cookie_check(secret, &id0, ck ^ (1u << bit), now, &mss));
	id = id0;
	id.peer_isn++;
	CHECK(!ss_tcp_cookie_check(secret, &id, ck, now, &mss));
	id = id0;
	id.remote_port++;
	CHECK(!ss_tcp_cookie_check(secret, &id, ck, now, &mss));
	id = id0;
	id.local_port++;
	CHECK(!ss_tcp_cookie_check(secret, &id, ck, now, &mss));
	id = id0;
	id.remote_ip ^= 0x100;
	CHECK(!ss_tcp_cookie_check(secret, &id, ck, now, &mss));
	id = id0;
	id.local_ip ^= 1;
	CHECK(!ss_tcp_cookie_check(secret, &id, ck, now, &mss));
	memcpy(other, secret, 16);
	other[15] ^= 0x80;
	CHECK(!ss_tcp_cookie_check(other, &id0, ck, now, &mss));
	CHECK_EQ_U64(mss, 0);
}

/* Valid in the step it was made and the next; not after, not before. */
static void test_cookie_lifetime(void)
{
	uint64_t made = 40 * STEP_US + STEP_US - 1; /* the last µs of step 40 */
	uint32_t ck = ss_tcp_cookie_make(secret, &id0, 1460, made);
	uint16_t mss;

	CHECK(ss_tcp_cookie_check(secret, &id0, ck, made, &mss));
	CHECK(ss_tcp_cookie_check(secret, &id0, ck, made + 1, &mss));           /* step 41 */
	CHECK(ss_tcp_cookie_check(secret, &id0, ck, 42 * STEP_US - 1, &mss));   /* last of 41 */
	CHECK(!ss_tcp_cookie_check(secret, &id0, ck, 42 * STEP_US, &mss));     /* step 42 */
	CHECK(!ss_tcp_cookie_check(secret, &id0, ck, 40 * STEP_US + 32 * STEP_US, &mss));
	CHECK(!ss_tcp_cookie_check(secret, &id0, ck, 39 * STEP_US, &mss));     /* before */
	/* 32 steps later the 5-bit step matches again: the hash still differs. */
	CHECK(!ss_tcp_cookie_check(secret, &id0, ck, made + 32 * STEP_US, &mss));
}

static void test_cookie_tsval(void)
{
	for (uint32_t now = 0x1000; now < 0x1000 + 3000; now += 7)
		for (uint16_t bits = 0; bits < 1024; bits += 3) {
			uint32_t ts = ss_tcp_cookie_tsval(now, bits);
			CHECK_EQ_U64(ts & 1023, bits);
			CHECK(ts <= now && now - ts < 1024);
		}
}

static struct ss_tcp syn_with(uint8_t opts, uint8_t wscale, uint8_t flags)
{
	struct ss_tcp s;

	memset(&s, 0, sizeof(s));
	s.sport = 80;
	s.dport = 40000;
	s.seq = id0.peer_isn;
	s.flags = (uint8_t)(SS_TCP_SYN | flags);
	s.window = 64240;
	s.opts.present = opts;
	s.opts.mss = 1460;
	s.opts.wscale = wscale;
	s.opts.ts_val = 5000;
	s.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&s.opts));
	return s;
}

/* What a cookie SYN-ACK may offer, and the bits that carry it. */
static void test_cookie_offer(void)
{
	const uint8_t all = SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM |
			    SS_TCP_OPTF_TS;
	struct ss_tcp syn, out;
	uint16_t bits;

	syn = syn_with(all, 7, SS_TCP_ECE | SS_TCP_CWR);
	ss_tcp_cookie_syn_offer(&syn, true, 9, &out, &bits);
	CHECK_EQ_U64(bits, 7 | 0x10 | 0x20 | 9 << 6);
	CHECK_EQ_U64(out.opts.present, all);
	CHECK_EQ_U64(out.flags, SS_TCP_SYN | SS_TCP_ECE | SS_TCP_CWR);

	ss_tcp_cookie_syn_offer(&syn, false, 9, &out, &bits); /* our ECN off */
	CHECK_EQ_U64(bits, 7 | 0x10 | 9 << 6);
	CHECK_EQ_U64(out.flags, SS_TCP_SYN);

	syn = syn_with(SS_TCP_OPTF_MSS | SS_TCP_OPTF_TS, 0, 0);
	ss_tcp_cookie_syn_offer(&syn, true, 9, &out, &bits);
	CHECK_EQ_U64(bits, 0xf | 9 << 6); /* no window scale, no SACK, no ECN */

	syn = syn_with(all, 15, 0); /* clamped to 14 (RFC 7323 §2.3) */
	ss_tcp_cookie_syn_offer(&syn, true, 9, &out, &bits);
	CHECK_EQ_U64(bits, 14 | 0x10 | 9 << 6);

	/* No timestamps: nothing to carry the rest in. */
	syn = syn_with(SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM, 7,
		       SS_TCP_ECE | SS_TCP_CWR);
	ss_tcp_cookie_syn_offer(&syn, true, 9, &out, &bits);
	CHECK_EQ_U64(bits, 0); /* no TSval to carry anything */
	CHECK_EQ_U64(out.opts.present, SS_TCP_OPTF_MSS);
	CHECK_EQ_U64(out.flags, SS_TCP_SYN);

	struct ss_tcp ack, rebuilt;
	uint8_t ours = 99;
	memset(&ack, 0, sizeof(ack));
	ack.flags = SS_TCP_SYN | SS_TCP_ACK;
	CHECK(!ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	ack.flags = SS_TCP_RST | SS_TCP_ACK;
	CHECK(!ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	ack.flags = SS_TCP_FIN; /* no ACK bit */
	CHECK(!ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	ack.flags = SS_TCP_ACK; /* our shift 15: not one we offer */
	ack.opts.present = SS_TCP_OPTF_TS;
	ack.opts.ts_ecr = 0x12345000u | 15u << 6 | 0x3f;
	CHECK(!ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	ack.opts.ts_ecr = 0x12345000u | 14u << 6 | 0x1f; /* 14, SACK, no peer shift */
	CHECK(ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	CHECK_EQ_U64(ours, 14);
	CHECK_EQ_U64(rebuilt.opts.present, SS_TCP_OPTF_MSS | SS_TCP_OPTF_TS | SS_TCP_OPTF_SACK_PERM);
	ack.opts.present = 0; /* no timestamps: nothing more */
	CHECK(ss_tcp_cookie_syn_rebuild(&ack, 1460, &rebuilt, &ours));
	CHECK_EQ_U64(ours, 0);
	CHECK_EQ_U64(rebuilt.opts.present, SS_TCP_OPTF_MSS);
	CHECK_EQ_U64(rebuilt.flags, SS_TCP_SYN);
}

/*
 * The whole exchange at the engine's level: the listener answers the SYN
 * from a scratch connection and forgets it; the peer's ACK alone makes
 * the connection, which then carries data both ways.
 */
static void handshake_from_cookie(bool ts, bool ecn, uint8_t wscale)
{
	struct h_cfg cfg;
	uint8_t opts = (uint8_t)(SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM |
				 (ts ? SS_TCP_OPTF_TS : 0));
	struct ss_tcp syn = syn_with(opts, wscale, ecn ? SS_TCP_ECE | SS_TCP_CWR : 0);
	struct ss_tcp offer, ack, rebuilt;
	uint16_t bits;

	h_cfg_default(&cfg);
	cfg.rx_size = 1u << 18; /* our window scale: 3 */
	cfg.peer_iss = id0.peer_isn;
	uint64_t now = 3 * STEP_US + 777;
	cfg.iss = ss_tcp_cookie_make(secret, &id0, syn.opts.mss, now);

	/* The SYN-ACK, from a scratch connection whose TSval is the cookie's. */
	ss_tcp_cookie_syn_offer(&syn, true, 3, &offer, &bits);
	uint32_t ts_now = (uint32_t)(now / 1000) + cfg.ts_offset;
	uint32_t ts_ck = ss_tcp_cookie_tsval(ts_now, bits);
	cfg.ts_offset += ts_ck - ts_now;
	harness_init(&h, &cfg);
	h.p.ecn = true;
	h.now = now;
	CHECK(ss_tcp_accept_syn(&h.c, &offer, h.now) == 0);
	CHECK_EQ_U64(h.nout, 1);
	const struct ss_tcp *sa = &h.out[0].hdr;
	CHECK_EQ_U64(sa->flags, SS_TCP_SYN | SS_TCP_ACK | (ts && ecn ? SS_TCP_ECE : 0));
	CHECK_EQ_U64(sa->seq, cfg.iss);
	CHECK_EQ_U64(sa->ack, id0.peer_isn + 1);
	CHECK_EQ_U64(sa->window, 65535);
	CHECK_EQ_U64(sa->opts.present & SS_TCP_OPTF_WSCALE, ts ? SS_TCP_OPTF_WSCALE : 0);
	if (ts) {
		CHECK_EQ_U64(sa->opts.wscale, 3);
		CHECK_EQ_U64(sa->opts.ts_val, ts_ck);
	}
	uint32_t synack_tsval = sa->opts.ts_val;

	/* The peer's ACK, 300 µs later, carrying 100 bytes already. */
	static uint8_t data[100];
	for (uint32_t i = 0; i < sizeof(data); i++)
		data[i] = h_pat_peer(i);
	memset(&ack, 0, sizeof(ack));
	ack.sport = 80;
	ack.dport = 40000;
	ack.seq = id0.peer_isn + 1;
	ack.ack = cfg.iss + 1;
	ack.flags = SS_TCP_ACK | SS_TCP_PSH;
	ack.window = 1000;
	ack.payload = data;
	ack.payload_len = sizeof(data);
	if (ts) {
		ack.opts.present = SS_TCP_OPTF_TS;
		ack.opts.ts_val = 5003;
		ack.opts.ts_ecr = synack_tsval;
	}
	ack.hdr_len = (uint8_t)(SS_TCP_HDR_MIN + ss_tcp_opts_len(&ack.opts));

	uint16_t mss = 0;
	struct ss_tcp_cookie_id id = id0;
	id.peer_isn = ack.seq - 1;
	CHECK(ss_tcp_cookie_check(secret, &id, ack.ack - 1, now + 300, &mss));
	CHECK_EQ_U64(mss, 1460);
	uint8_t ours = 99;
	CHECK(ss_tcp_cookie_syn_rebuild(&ack, mss, &rebuilt, &ours));
	CHECK_EQ_U64(ours, ts ? 3 : 0);

	/* The real connection: the same ISS and timestamp offset base, and a
	 * smaller ring (its own shift would be 0): the SYN-ACK's shift holds. */
	h_cfg_default(&cfg);
	cfg.rx_size = 1u << 16;
	cfg.peer_iss = id0.peer_isn;
	cfg.iss = ack.ack - 1;
	harness_init(&h2, &cfg);
	h2.p.ecn = true;
	h2.now = now + 300;
	h2.peer_tsval = 5003;
	h2.last_tsval = synack_tsval;
	h2.peer_nxt = id0.peer_isn + 1;
	CHECK(ss_tcp_accept_cookie(&h2.c, &rebuilt, ours) == 0);
	CHECK_EQ_U64(h2.nout, 0);
	CHECK_EQ_U64(h2.c.f.state, SS_TCPS_SYN_RCVD);
	h_input(&h2, &ack);
	CHECK_EQ_U64(h2.c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(h2.c.events & SS_TCP_EV_CONNECTED, SS_TCP_EV_CONNECTED);
	CHECK_EQ_U64(h2.c.rx_new, 100);
	CHECK(h_rx_matches(&h2, 0, 0, 100));
	CHECK_EQ_U64(h2.c.f.snd_wscale, ts ? wscale : 0);
	CHECK_EQ_U64(h2.c.f.rcv_wscale, ts ? 3 : 0);
	CHECK_EQ_U64(h2.c.f.snd_wnd, ts ? (1000u << wscale) : 1000u);
	CHECK_EQ_U64(!!(h2.c.f.flags & SS_TCPF_SACK_PERM), ts);
	CHECK_EQ_U64(!!(h2.c.f.flags & SS_TCPF_TS), ts);
	CHECK_EQ_U64(h2.c.f.mss, ts ? 1460 - 12 : 1460);
	CHECK_EQ_U64(h2.c.ecn_ok, ts && ecn);
	CHECK_EQ_U64(h2.c.rto_deadline_us, 0);
	CHECK_EQ_U64(h2.c.f.snd_una, cfg.iss + 1);
	if (ts)
		CHECK_EQ_U64(h2.c.f.ts_recent, 5003);

	/* The right edge the SYN-ACK announced has not moved. */
	CHECK_EQ_U64(h2.c.f.rcv_adv - (id0.peer_isn + 1), 65535);

	/* Our data goes out after the cookie, with later TSvals. */
	h_clear(&h2);
	CHECK(h_app_send(&h2, 50) == 0);
	h_output(&h2);
	CHECK_EQ_U64(h2.nout, 1);
	CHECK_EQ_U64(h2.out[0].hdr.seq, cfg.iss + 1);
	CHECK_EQ_U64(h2.out[0].hdr.ack, id0.peer_isn + 101);
	CHECK_EQ_U64(h2.out[0].len, 50);
	/* The ring's 64 KiB less the 100 bytes, in units of the shift the
	 * SYN-ACK offered (3, where the ring alone would give 0). */
	CHECK_EQ_U64(h2.out[0].hdr.window, ts ? (65536u - 100u) >> 3 : 65536u - 100u);
	if (ts)
		CHECK(h2.out[0].hdr.opts.ts_val >= synack_tsval);
	harness_free(&h);
	harness_free(&h2);
}

static void test_cookie_handshake(void)
{
	handshake_from_cookie(true, true, 7);
	handshake_from_cookie(true, false, 0);
	handshake_from_cookie(false, true, 7);
}

int main(void)
{
	test_cookie_mss_and_layout();
	test_cookie_rejects();
	test_cookie_lifetime();
	test_cookie_tsval();
	test_cookie_offer();
	test_cookie_handshake();
	return check_done("test_tcp_cookie");
}
