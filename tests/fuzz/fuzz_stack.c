/* fuzz_stack.c - arbitrary segments and app commands into the service's TCP stack with established flows. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "stack_harness.h"
#include "util/log.h"
#include "wire/csum.h"

/*
 * Set-up (every run): an app listening on port 7 with two connections
 * accepted from the harness peer and some data exchanged, plus one
 * connection the app opened to the peer and one it opened to itself over
 * the stack's own address (both ends of it go round the loopback queue).  Then the input is a sequence
 * of operations:
 *
 *   op 0..3  a TCP segment to one of the peer's flows (or a fresh 4-tuple), with
 *            seq/ack taken relative to the flow's rcv_nxt/snd_una so that
 *            many land in the window, fuzzed flags, window, options and
 *            payload length; it goes through ss_stack_tcp_input() exactly
 *            as the fast path would hand it over
 *   op 4     an app command with fuzzed fields (hostile app)
 *   op 5     time passes (up to ~4 s), timers run
 *
 * Checked: no crash or sanitizer report, every frame the stack emits
 * parses with correct checksums and goes to the peer's MAC (the harness
 * aborts otherwise), and the books balance: live flows never exceed the
 * limit, and the app's connection count matches its slot table.
 */

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=16384 txbuf=16384"

struct reader {
	const uint8_t *p;
	size_t n;
};

static uint32_t take(struct reader *r, unsigned bytes)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		v <<= 8;
		if (r->n) {
			v |= *r->p++;
			r->n--;
		}
	}
	return v;
}

static struct sh h;
static bool ready;

static void drain_events(void)
{
	struct ss_shm_ev ev = { 0 };
	while (sh_event(&h, &ev))
		;
}

/* Congestion control for the run: each algorithm in turn, every other
 * run with a cap on this process (so pacing, caps and the control loop
 * see the hostile segments and commands too). */
static struct ss_cc_policy policy;

static void policy_next(void)
{
	static unsigned run_no;
	char comm[16], rule[40], err[128];

	sh_self_comm(comm);
	ss_cc_policy_default(&policy);
	policy.ops = ss_cc_at(run_no % 5);
	if ((run_no / 5) % 2 && comm[0]) {
		snprintf(rule, sizeof(rule), "%s=20", comm);
		ss_cc_policy_add_cap(&policy, rule, err, sizeof(err));
	}
	run_no++;
}

static void setup(void)
{
	ss_log_threshold = SS_LOG_ERR; /* one attach per run: keep the log quiet */
	if (ready)
		sh_fini(&h);
	if (sh_init(&h, ATTACH) != 0)
		__builtin_trap();
	/* Every other run, every SYN gets a cookie (the peers' handshakes
	 * and hostile ACKs to the listener take the cookie path). */
	static unsigned setups;
	h.st.lim.syn_cookies = setups++ % 2 ? SS_SYN_COOKIES_ALWAYS : SS_SYN_COOKIES_ON;
	policy_next();
	if (ss_stack_set_cc(&h.st, &policy) != 0)
		__builtin_trap();
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 7, .arg = 8 });
	sh_pump(&h, 4);
	for (int i = 0; i < 2; i++) {
		struct sh_peer_conn *p = sh_peer_new(&h, (uint16_t)(41000 + i), 7);
		ss_tcp_connect(&p->c, h.now_us);
	}
	h.peer_listen_port = 9000;
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000 });
	/* And one to itself over the stack's own address (the loopback
	 * queue): hostile commands and time reach it too. */
	sh_cmd(&h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_SVC_IP, .port = 7 });
	sh_pump(&h, 32);
	drain_events();
	ready = true;
}

static void check_books(void)
{
	uint32_t used = 0;
	for (uint32_t s = 0; s < h.app->max_conns; s++)
		used += h.app->slot_conn[s] != NULL;
	if (used != h.app->n_conns || h.st.n_flows > h.st.lim.max_flows)
		__builtin_trap();
}

/* A frame for the stack from the peer's MAC/IP, built and checked like the
 * fast path does before calling ss_stack_tcp_input(). */
static void inject(struct reader *r)
{
	struct ss_sconn *target = NULL;
	unsigned which = take(r, 1) % 4;
	uint32_t live = 0;
	for (uint32_t i = 0; i < h.st.lim.max_flows && !target; i++)
		if (h.st.conns[i].flags & SC_IN_TABLE && h.st.conns[i].key.remote_ip == SH_PEER_IP &&
		    live++ == which)
			target = &h.st.conns[i];

	struct ss_tcp seg;
	memset(&seg, 0, sizeof(seg));
	if (target) {
		seg.sport = target->key.remote_port;
		seg.dport = target->key.local_port;
		seg.seq = target->tcp.f.rcv_nxt + (uint32_t)(int16_t)take(r, 2);
		seg.ack = target->tcp.f.snd_una + (uint32_t)(int16_t)take(r, 2);
	} else {
		seg.sport = (uint16_t)take(r, 2);
		seg.dport = (uint16_t)(take(r, 1) & 1 ? 7 : take(r, 2));
		seg.seq = take(r, 4);
		seg.ack = take(r, 4);
	}
	seg.flags = (uint8_t)take(r, 1);
	seg.window = (uint16_t)take(r, 2);
	uint8_t o = (uint8_t)take(r, 1);
	if (o & 1) {
		seg.opts.present |= SS_TCP_OPTF_TS;
		seg.opts.ts_val = take(r, 4);
		seg.opts.ts_ecr = take(r, 4);
	}
	if (o & 2) {
		seg.opts.present |= SS_TCP_OPTF_SACK;
		seg.opts.sack_count = (uint8_t)(1 + (o >> 6) % 3);
		for (unsigned i = 0; i < seg.opts.sack_count; i++) {
			uint32_t base = target ? target->tcp.f.snd_una : 0;
			seg.opts.sack[i].left = base + (uint32_t)(int16_t)take(r, 2);
			seg.opts.sack[i].right = seg.opts.sack[i].left + take(r, 2);
		}
	}
	if (o & 4) {
		seg.opts.present |= SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE | SS_TCP_OPTF_SACK_PERM;
		seg.opts.mss = (uint16_t)take(r, 2);
		seg.opts.wscale = (uint8_t)(take(r, 1) % 15);
	}
	static uint8_t payload[1500];
	uint32_t len = take(r, 2) % 1400;
	for (uint32_t i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 7 + len);
	seg.payload = payload;
	seg.payload_len = len;

	seg.ip_ecn = (uint8_t)((o >> 3) & 3); /* any ECN codepoint, CE included */
	sh_to_stack(&h, &seg);
}

static void hostile_cmd(struct reader *r)
{
	struct ss_shm_cmd c;
	memset(&c, 0, sizeof(c));
	c.op = (uint8_t)(take(r, 1) % (SS_CMD_OP_MAX + 1));
	if (c.op == SS_CMD_CONNECT || c.op == SS_CMD_LISTEN)
		c.op = SS_CMD_TX;
	c.conn = take(r, 1) % 20;
	c.gen = take(r, 1) % 3;
	c.arg = take(r, 4);
	if (take(r, 1) & 1)
		c.arg %= 20000;
	if (c.op == SS_CMD_TX && (take(r, 1) & 1)) { /* a reply's TX with its RX_DONE */
		c.flags = SS_CMDF_RX_DONE;
		c.rx_done = take(r, 4) % 40000;
	}
	/* Ring moves asked for at random (shm/abi.h: home bytes, small rings
	 * that grow), and an ABORT by cookie (cookie 0 here). */
	c.flags |= (uint8_t)(take(r, 1) & (SS_CMDF_TX_HOME | SS_CMDF_TX_GROW | SS_CMDF_RX_GROW |
					   SS_CMDF_CONNECTING));
	sh_cmd(&h, &c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { data, size };

	setup();
	for (int ops = 0; r.n && ops < 256; ops++) {
		unsigned op = take(&r, 1) % 6;
		if (op < 4)
			inject(&r);
		else if (op == 4)
			hostile_cmd(&r);
		else if (op == 5)
			h.now_us += take(&r, 2) * 64;
		sh_pump(&h, 8);
		drain_events();
		check_books();
		if (h.app->broken)
			break;
	}
	return 0;
}
