/* test_stack_ports.c - port entries (bind, listen, SO_REUSEPORT), sockets shared across fork (inherit, arm, hold, release, adopt, hand-back) and FIN_ACKED through the stack's command rings. */
#include "check.h"
#include "stack_fork_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- applications: each on its own region, driven like test_stack.c ---- */

/* BIND and its answer. */
static struct ss_shm_ev do_bind(struct sh *h, struct cl *c, uint16_t port, uint32_t flags,
				uint64_t cookie, int line)
{
	cl_cmd(c, (struct ss_shm_cmd){ .op = SS_CMD_BIND, .port = port, .arg = flags, .cookie = cookie });
	sh_pump(h, 4);
	struct ss_shm_ev ev = ev_expect(c, SS_EV_BOUND, line);
	if (ev.cookie != cookie) {
		check_fail_(__FILE__, line, "BOUND cookie");
		fprintf(stderr, "    got %llu want %llu\n", (unsigned long long)ev.cookie,
			(unsigned long long)cookie);
	}
	return ev;
}
#define BIND(h, c, port, flags, cookie) do_bind((h), (c), (port), (flags), (cookie), __LINE__)

/* BIND that must succeed with @port: returns the entry id. */
static uint32_t bind_ok(struct sh *h, struct cl *c, uint16_t port, uint32_t flags, int line)
{
	struct ss_shm_ev ev = do_bind(h, c, port, flags, 1000 + port, line);
	if (ev.error != 0 || ev.local_port != port || ev.conn >= h->st.lim.max_listeners) {
		check_fail_(__FILE__, line, "BIND ok");
		fprintf(stderr, "    error %u port %u entry %u (want port %u)\n", ev.error,
			ev.local_port, ev.conn, port);
	}
	return ev.conn;
}
#define BIND_OK(h, c, port, flags) bind_ok((h), (c), (port), (flags), __LINE__)

/* LISTEN on bound entry @li: must succeed. */
static void listen_bound(struct sh *h, struct cl *c, uint32_t li, uint32_t backlog, uint64_t cookie,
			 int line)
{
	cl_cmd(c, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = li,
				       .arg = backlog, .cookie = cookie });
	sh_pump(h, 4);
	struct ss_shm_ev ev = ev_expect(c, SS_EV_LISTEN, line);
	if (ev.error != 0 || ev.conn != li || ev.cookie != cookie ||
	    ev.local_port != h->st.listeners[li < h->st.lim.max_listeners ? li : 0].port) {
		check_fail_(__FILE__, line, "LISTEN on a bound entry");
		fprintf(stderr, "    error %u conn %u (want %u) port %u\n", ev.error, ev.conn, li,
			ev.local_port);
	}
}
#define LISTEN_BOUND(h, c, li, backlog, cookie) listen_bound((h), (c), (li), (backlog), (cookie), __LINE__)

/* ---- the peer ---- */

/*
 * A bare SYN from the peer's address, port @sport, to @dport: returns the
 * application that got the new connection (NULL if none; *refused when
 * the stack would answer RST).  A RST on the same 4-tuple then takes the
 * half-open connection away again, so the same tuple can be tried again.
 */
static struct ss_app *syn_probe(struct sh *h, uint16_t sport, uint16_t dport, bool *refused)
{
	uint32_t seq = 0x10000u * sport + 1;
	struct ss_tcp t = { .sport = sport, .dport = dport, .seq = seq, .flags = SS_TCP_SYN,
			    .window = 65535 };
	uint64_t rsts = h->rsts_to_peer;
	CHECK(sh_to_stack(h, &t) == 0);
	*refused = h->rsts_to_peer != rsts;
	struct ss_flow_key k = { .local_ip = SH_SVC_IP, .remote_ip = SH_PEER_IP,
				 .local_port = dport, .remote_port = sport };
	struct ss_sconn *sc = ss_flow_table_lookup(&h->st.flows, &k);
	struct ss_app *a = sc ? sc->app : NULL;
	sh_pump(h, 4); /* the SYN-ACK goes nowhere: no peer engine has the tuple */
	if (sc) {
		CHECK_EQ_U64(sc->tcp.f.state, SS_TCPS_SYN_RCVD);
		struct ss_tcp rst = { .sport = sport, .dport = dport, .seq = seq + 1,
				      .flags = SS_TCP_RST };
		CHECK(sh_to_stack(h, &rst) == 0);
		sh_pump(h, 4);
		CHECK(ss_flow_table_lookup(&h->st.flows, &k) == NULL);
	}
	return a;
}

/* The app that a SYN to @dport goes to; it must be taken. */
static struct ss_app *syn_owner(struct sh *h, uint16_t sport, uint16_t dport)
{
	bool refused = false;
	struct ss_app *a = syn_probe(h, sport, dport, &refused);
	CHECK(!refused);
	CHECK(a != NULL);
	return a;
}

static void inherit_fails(struct sh *h, struct cl *c, int err, int line)
{
	cl_cmd(c, (struct ss_shm_cmd){ .op = SS_CMD_INHERIT });
	sh_pump(h, 4);
	struct ss_shm_ev ev = ev_expect(c, SS_EV_INHERITED, line);
	if (ev.error != err || ev.arg != 0 || ev.arg2 != 0) {
		check_fail_(__FILE__, line, "INHERITED error");
		fprintf(stderr, "    error %u joined %u held %u, want %d 0 0\n", ev.error, ev.arg,
			ev.arg2, err);
	}
}
#define INHERIT_FAILS(h, c, err) inherit_fails((h), (c), (err), __LINE__)

/* ---- bind ---- */

static void test_bind(void)
{
	struct sh h;
	struct cl p, q;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	CHECK_EQ_U64(cl_attach(&h, &q, ATTACH, NULL, 0), 1);
	p.a->cap_bind = false;
	q.a->cap_bind = false;

	/* Explicit port: the entry id and the port. */
	ev = BIND(&h, &p, 5000, 0, 11);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.conn, 0);
	CHECK_EQ_U64(ev.local_port, 5000);
	CHECK_EQ_U64(h.st.n_listeners, 1);
	CHECK_EQ_U64(p.a->n_listeners, 1);
	CHECK_EQ_U64(h.st.listeners[0].state, SS_LST_BOUND);

	/* Port 0: an ephemeral port. */
	ev = BIND(&h, &p, 0, 0, 12);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.conn, 1);
	CHECK(ev.local_port >= 32768 && ev.local_port <= 60999);
	uint16_t eph = ev.local_port;
	CHECK_EQ_U64(h.st.listeners[1].port, eph);

	/* The same port from another app: EADDRINUSE, nothing claimed. */
	ev = BIND(&h, &q, 5000, 0, 13);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	CHECK_EQ_U64(ev.conn, UINT32_MAX);
	CHECK_EQ_U64(ev.local_port, 0);
	ev = BIND(&h, &q, eph, SS_BIND_REUSEPORT, 14);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	/* ...and from the same app too (no SO_REUSEPORT). */
	ev = BIND(&h, &p, 5000, 0, 15);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	CHECK_EQ_U64(h.st.n_listeners, 2);
	CHECK_EQ_U64(q.a->n_listeners, 0);

	/* Port 0 from another app: a different ephemeral port. */
	ev = BIND(&h, &q, 0, 0, 16);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.conn, 2);
	CHECK(ev.local_port >= 32768 && ev.local_port <= 60999);
	CHECK(ev.local_port != eph);
	CMD(&q, .op = SS_CMD_LISTEN_CLOSE, .conn = 2);
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = 1);
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = 0);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	NO_EVENT(&q);
	CHECK_EQ_U64(h.st.n_listeners, 0);
	CHECK_EQ_U64(p.a->n_listeners, 0);
	CHECK_EQ_U64(q.a->n_listeners, 0);

	/* Both with SO_REUSEPORT: both succeed, two entries. */
	uint32_t r1 = BIND_OK(&h, &p, 6000, SS_BIND_REUSEPORT);
	uint32_t r2 = BIND_OK(&h, &q, 6000, SS_BIND_REUSEPORT);
	CHECK(r1 != r2);
	CHECK_EQ_U64(h.st.n_listeners, 2);
	/* A third without it: EADDRINUSE. */
	ev = BIND(&h, &p, 6000, 0, 17);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	/* With, then without. */
	BIND_OK(&h, &p, 6001, SS_BIND_REUSEPORT);
	ev = BIND(&h, &q, 6001, 0, 18);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	/* Without, then with. */
	BIND_OK(&h, &p, 6002, 0);
	ev = BIND(&h, &q, 6002, SS_BIND_REUSEPORT, 19);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	CHECK_EQ_U64(h.st.n_listeners, 4);

	/* Privileged ports: EACCES without CAP_NET_BIND_SERVICE. */
	ev = BIND(&h, &p, 80, 0, 20);
	CHECK_EQ_U64(ev.error, EACCES);
	CHECK_EQ_U64(ev.conn, UINT32_MAX);
	ev = BIND(&h, &p, 1023, 0, 21);
	CHECK_EQ_U64(ev.error, EACCES);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 443, .cookie = 22 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, EACCES);
	CHECK_EQ_U64(ev.conn, UINT32_MAX);
	BIND_OK(&h, &p, 1024, 0);
	p.a->cap_bind = true;
	uint32_t e80 = BIND_OK(&h, &p, 80, 0);
	/* A privileged port still conflicts as any other. */
	q.a->cap_bind = true;
	ev = BIND(&h, &q, 80, 0, 23);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	CHECK_EQ_U64(h.st.n_listeners, 6);

	/* Entries run out: ENOBUFS (harness: 8). */
	BIND_OK(&h, &q, 7001, 0);
	BIND_OK(&h, &q, 7002, 0);
	ev = BIND(&h, &q, 7003, 0, 24);
	CHECK_EQ_U64(ev.error, ENOBUFS);
	ev = BIND(&h, &q, 0, 0, 25);
	CHECK_EQ_U64(ev.error, ENOBUFS);
	CHECK_EQ_U64(h.st.n_listeners, 8);
	/* Closing one makes room; closing another app's entry is EBADF. */
	CMD(&q, .op = SS_CMD_LISTEN_CLOSE, .conn = e80);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&q, SS_CMD_LISTEN_CLOSE, e80, 0, EBADF);
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = e80);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	CHECK_EQ_U64(h.st.n_listeners, 7);
	CHECK_EQ_U64(BIND_OK(&h, &q, 80, 0), e80);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 1);
	NO_EVENT(&p);
	NO_EVENT(&q);
	cl_close(&q);
	sh_fini(&h);
}

/* ---- bind + listen, bind + connect ---- */

static void test_bind_listen_connect(void)
{
	struct sh h;
	struct cl p, q;
	struct ss_shm_ev ev;
	bool refused;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	CHECK_EQ_U64(cl_attach(&h, &q, ATTACH, NULL, 0), 1);

	uint32_t e = BIND_OK(&h, &p, 7100, 0);
	/* Only bound: a SYN to it is answered with RST. */
	CHECK(syn_probe(&h, 41000, 7100, &refused) == NULL);
	CHECK(refused);
	CHECK_EQ_U64(h.rsts_to_peer, 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_rx_tcp_syn), 0);

	/* LISTEN on the entry: the port and the default backlog come back. */
	LISTEN_BOUND(&h, &p, e, 0, 99);
	CHECK_EQ_U64(h.st.listeners[e].state, SS_LST_LISTEN);
	CHECK_EQ_U64(h.st.listeners[e].backlog, 128);
	CHECK_EQ_U64(h.st.n_listeners, 1);
	/* Listening twice: EINVAL, still listening. */
	CMD(&p, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = e, .cookie = 98);
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, EINVAL);
	CHECK_EQ_U64(ev.cookie, 98);
	CHECK_EQ_U64(h.st.listeners[e].state, SS_LST_LISTEN);

	/* A handshake on it: ACCEPTED with the listen cookie. */
	struct sh_peer_conn *pc;
	struct aconn ac = accept_one(&h, &p, &pc, 41001, 7100, 99);
	CHECK_EQ_U64(ac.slot, 0);
	CHECK_EQ_U64(p.a->n_conns, 1);
	CHECK_EQ_U64(h.rsts_to_peer, 1);
	NO_EVENT(&q);

	/* Another app's entry: EBADF for LISTEN, LISTEN_ARM, LISTEN_CLOSE. */
	uint32_t e2 = BIND_OK(&h, &p, 7200, 0);
	CMD(&q, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = e2, .cookie = 5);
	sh_pump(&h, 4);
	ev = EXPECT(&q, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, EBADF);
	CHECK_EQ_U64(ev.conn, UINT32_MAX);
	CHECK_EQ_U64(ev.cookie, 5);
	CMD(&q, .op = SS_CMD_LISTEN_ARM, .conn = e2);
	CMD(&q, .op = SS_CMD_LISTEN_CLOSE, .conn = e2);
	CMD(&q, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = 7, .cookie = 6);
	CMD(&q, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = 1000, .cookie = 7);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&q, SS_CMD_LISTEN_ARM, e2, 0, EBADF);
	EXPECT_CMD_ERROR(&q, SS_CMD_LISTEN_CLOSE, e2, 0, EBADF);
	ev = EXPECT(&q, SS_EV_LISTEN); /* a free entry */
	CHECK_EQ_U64(ev.error, EBADF);
	ev = EXPECT(&q, SS_EV_LISTEN); /* out of range */
	CHECK_EQ_U64(ev.error, EBADF);
	CHECK_EQ_U64(h.st.listeners[e2].state, SS_LST_BOUND);
	CHECK(syn_probe(&h, 41002, 7200, &refused) == NULL);
	CHECK(refused);

	/* LISTEN_CLOSE frees the port: another app can bind it. */
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = e);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	CHECK_EQ_U64(h.st.listeners[e].state, SS_LST_FREE);
	CHECK(syn_probe(&h, 41003, 7100, &refused) == NULL);
	CHECK(refused);
	uint32_t e3 = BIND_OK(&h, &q, 7100, 0);
	CHECK_EQ_U64(e3, e);
	/* The accepted connection is not touched. */
	CHECK_EQ_U64(pc->c.f.state, SS_TCPS_ESTABLISHED);

	/* CONNECT from a bound port: the SYN comes from that port, the entry goes. */
	h.peer_listen_port = 9000;
	uint32_t eb = BIND_OK(&h, &p, 45000, 0);
	CHECK_EQ_U64(p.a->n_listeners, 2);
	CMD(&p, .op = SS_CMD_CONNECT, .flags = SS_CMDF_BOUND, .conn = eb, .ip = SH_PEER_IP,
	    .port = 9000, .cookie = 321);
	sh_pump(&h, 16);
	ev = EXPECT(&p, SS_EV_CONNECTED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.cookie, 321);
	CHECK_EQ_U64(ev.local_port, 45000);
	CHECK_EQ_U64(ev.remote_port, 9000);
	struct sh_peer_conn *act = NULL;
	for (unsigned i = 0; i < 8; i++)
		if (h.peer[i].used && h.peer[i].c.local_port == 9000)
			act = &h.peer[i];
	CHECK(act != NULL);
	if (act) {
		CHECK_EQ_U64(act->c.remote_port, 45000);
		CHECK_EQ_U64(act->c.f.state, SS_TCPS_ESTABLISHED);
	}
	CHECK_EQ_U64(h.st.listeners[eb].state, SS_LST_FREE);
	CHECK_EQ_U64(p.a->n_listeners, 1);
	CHECK_EQ_U64(h.st.n_listeners, 2);
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = eb);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_LISTEN_CLOSE, eb, 0, EBADF);

	/* CONNECT from a listening entry, or another app's: EINVAL. */
	CMD(&q, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = e3, .cookie = 8);
	sh_pump(&h, 4);
	ev = EXPECT(&q, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	CMD(&q, .op = SS_CMD_CONNECT, .flags = SS_CMDF_BOUND, .conn = e3, .ip = SH_PEER_IP,
	    .port = 9000, .cookie = 9);
	CMD(&q, .op = SS_CMD_CONNECT, .flags = SS_CMDF_BOUND, .conn = e2, .ip = SH_PEER_IP,
	    .port = 9000, .cookie = 10);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&q, SS_CMD_CONNECT, e3, 0, EINVAL);
	EXPECT_CMD_ERROR(&q, SS_CMD_CONNECT, e2, 0, EINVAL);
	CHECK_EQ_U64(h.st.listeners[e3].state, SS_LST_LISTEN);
	CHECK_EQ_U64(h.st.listeners[e2].state, SS_LST_BOUND);
	CHECK_EQ_U64(q.a->n_conns, 0);
	NO_EVENT(&p);
	NO_EVENT(&q);
	cl_close(&q);
	sh_fini(&h);
}

/* ---- SO_REUSEPORT ---- */

#define SMALL "attach 1 contexts=1 conns=64 rxbuf=4096 txbuf=4096"

static void test_reuseport_spread(void)
{
	struct sh h;
	struct cl p, q;
	CHECK(sh_init(&h, SMALL) == 0);
	cl_harness(&h, &p);
	CHECK_EQ_U64(cl_attach(&h, &q, SMALL, NULL, 0), 1);

	uint32_t ep = BIND_OK(&h, &p, 7000, SS_BIND_REUSEPORT);
	uint32_t eq = BIND_OK(&h, &q, 7000, SS_BIND_REUSEPORT);
	LISTEN_BOUND(&h, &p, ep, 16, 1);
	LISTEN_BOUND(&h, &q, eq, 16, 2);

	enum { N = 64 };
	struct ss_app *first[N];
	unsigned np = 0, nq = 0;
	for (unsigned i = 0; i < N; i++) {
		first[i] = syn_owner(&h, (uint16_t)(30000 + i), 7000);
		np += first[i] == p.a;
		nq += first[i] == q.a;
	}
	CHECK_EQ_U64(np + nq, N);
	/* Spread: neither listener gets fewer than a quarter. */
	CHECK(np >= N / 4);
	CHECK(nq >= N / 4);
	/* The same 4-tuple always goes to the same listener. */
	unsigned same = 0;
	for (unsigned i = 0; i < N; i++)
		same += syn_owner(&h, (uint16_t)(30000 + i), 7000) == first[i];
	CHECK_EQ_U64(same, N);
	/* Half-open connections came and went; nobody heard of them. */
	CHECK_EQ_U64(p.a->n_conns, 0);
	CHECK_EQ_U64(q.a->n_conns, 0);
	CHECK_EQ_U64(h.st.listeners[ep].n_syn, 0);
	CHECK_EQ_U64(h.st.listeners[eq].n_syn, 0);
	NO_EVENT(&p);
	NO_EVENT(&q);

	/* Whole handshakes: each listener accepts with its own cookie. */
	int ip = -1, iq = -1;
	for (unsigned i = 0; i < N; i++) {
		if (first[i] == p.a && ip < 0)
			ip = (int)i;
		if (first[i] == q.a && iq < 0)
			iq = (int)i;
	}
	CHECK(ip >= 0 && iq >= 0);
	if (ip >= 0 && iq >= 0) {
		struct sh_peer_conn *pc;
		accept_one(&h, &p, &pc, (uint16_t)(30000 + ip), 7000, 1);
		NO_EVENT(&q);
		accept_one(&h, &q, &pc, (uint16_t)(30000 + iq), 7000, 2);
		NO_EVENT(&p);
	}

	/* One listener closes: the other gets every new connection. */
	CMD(&q, .op = SS_CMD_LISTEN_CLOSE, .conn = eq);
	sh_pump(&h, 4);
	unsigned all_p = 0;
	for (unsigned i = 0; i < 16; i++)
		all_p += syn_owner(&h, (uint16_t)(31000 + i), 7000) == p.a;
	CHECK_EQ_U64(all_p, 16);
	/* A REUSEPORT entry that is only bound takes no connections. */
	uint32_t eq2 = BIND_OK(&h, &q, 7000, SS_BIND_REUSEPORT);
	(void)eq2;
	all_p = 0;
	for (unsigned i = 0; i < 16; i++)
		all_p += syn_owner(&h, (uint16_t)(32000 + i), 7000) == p.a;
	CHECK_EQ_U64(all_p, 16);
	NO_EVENT(&q);
	cl_close(&q);
	sh_fini(&h);
}

/* ---- fork: shared port entries ---- */

static void test_fork_listener(void)
{
	struct sh h;
	struct cl p, c, x;
	struct ss_shm_ev ev;
	bool refused;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);

	uint32_t el = BIND_OK(&h, &p, 8000, 0);
	LISTEN_BOUND(&h, &p, el, 0, 500);
	uint32_t eb = BIND_OK(&h, &p, 8001, 0); /* bound, not listening */
	struct sh_peer_conn *pc;
	struct aconn pa = accept_one(&h, &p, &pc, 42000, 8000, 500);

	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	CHECK_EQ_U64(c.a->parent_id, p.a->id);
	CHECK_EQ_U64(c.a->parent_token, p.a->token);
	INHERIT_OK(&h, &c, 2, 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_inherits), 1);
	CHECK_EQ_U64(c.a->n_listeners, 2);
	CHECK_EQ_U64(p.a->n_listeners, 2);
	CHECK_EQ_U64(c.a->n_inh, 1);
	CHECK_EQ_U64(h.st.listeners[el].n_members, 2);
	CHECK_EQ_U64(h.st.listeners[eb].n_members, 2);
	CHECK_EQ_U64(h.st.n_listeners, 2);
	NO_EVENT(&p);

	/* Nobody armed: member 0, the parent. */
	for (unsigned i = 0; i < 4; i++)
		CHECK(syn_owner(&h, (uint16_t)(20000 + i), 8000) == p.a);
	/* The child arms: the child. */
	CMD(&c, .op = SS_CMD_LISTEN_ARM, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&c);
	for (unsigned i = 0; i < 4; i++)
		CHECK(syn_owner(&h, (uint16_t)(20010 + i), 8000) == c.a);
	/* A whole handshake: ACCEPTED on the child's context, the parent's
	 * listen cookie, rings in the child's region. */
	struct sh_peer_conn *pc2;
	struct aconn ca = accept_one(&h, &c, &pc2, 42001, 8000, 500);
	CHECK_EQ_U64(ca.slot, 0);
	CHECK(ca.rx == ss_app_rx_ring(c.a, 0));
	CHECK_EQ_U64(c.a->n_conns, 1);
	CHECK_EQ_U64(p.a->n_conns, 1);
	NO_EVENT(&p);
	/* Both armed: in turn. */
	CMD(&p, .op = SS_CMD_LISTEN_ARM, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	struct ss_app *seq[6];
	for (unsigned i = 0; i < 6; i++)
		seq[i] = syn_owner(&h, (uint16_t)(20020 + i), 8000);
	for (unsigned i = 0; i < 6; i++)
		CHECK(seq[i] == (i % 2 ? c.a : p.a));

	/* An app that is no member: EBADF. */
	CHECK_EQ_U64(cl_attach(&h, &x, ATTACH, NULL, 0), 1);
	CMD(&x, .op = SS_CMD_LISTEN_ARM, .conn = el);
	CMD(&x, .op = SS_CMD_LISTEN_ARM, .conn = 5);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&x, SS_CMD_LISTEN_ARM, el, 0, EBADF);
	EXPECT_CMD_ERROR(&x, SS_CMD_LISTEN_ARM, 5, 0, EBADF);

	/* The parent closes its listener: the port stays open for the child. */
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	CHECK_EQ_U64(h.st.listeners[el].state, SS_LST_LISTEN);
	CHECK_EQ_U64(h.st.listeners[el].n_members, 1);
	CHECK_EQ_U64(p.a->n_listeners, 1);
	CHECK_EQ_U64(h.st.n_listeners, 2);
	for (unsigned i = 0; i < 3; i++)
		CHECK(syn_owner(&h, (uint16_t)(20030 + i), 8000) == c.a);
	/* A second close by the parent: EBADF (no longer a member). */
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = el);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_LISTEN_CLOSE, el, 0, EBADF);
	/* Still in use: nobody else can bind it. */
	ev = BIND(&h, &x, 8000, 0, 1);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	/* The last member closes: the entry is free, SYNs get RST. */
	CMD(&c, .op = SS_CMD_LISTEN_CLOSE, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&c);
	CHECK_EQ_U64(h.st.listeners[el].state, SS_LST_FREE);
	CHECK_EQ_U64(h.st.n_listeners, 1);
	CHECK_EQ_U64(c.a->n_listeners, 1);
	CHECK(syn_probe(&h, 20040, 8000, &refused) == NULL);
	CHECK(refused);
	ev = BIND(&h, &x, 8000, 0, 2);
	CHECK_EQ_U64(ev.error, 0);

	/* The shared bound entry: the child listens on it after the parent left. */
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = eb);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	CHECK_EQ_U64(h.st.listeners[eb].state, SS_LST_BOUND);
	LISTEN_BOUND(&h, &c, eb, 4, 600);
	CHECK(syn_owner(&h, 20050, 8001) == c.a);
	struct sh_peer_conn *pc3;
	accept_one(&h, &c, &pc3, 42002, 8001, 600);
	CHECK_EQ_U64(p.a->n_listeners, 0);

	/* The connections accepted before are untouched. */
	CHECK_EQ_U64(pc->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(pc2->c.f.state, SS_TCPS_ESTABLISHED);
	(void)pa;
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_inherits), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopts), 0);
	NO_EVENT(&p);
	NO_EVENT(&c);
	cl_close(&c);
	cl_close(&x);
	sh_fini(&h);
}

/* LISTEN_STOP (shutdown() of a listener): every member stops at once, the
 * handshake in progress is reset, accepted connections stay; the entry is
 * bound again (and may listen again), or gone with SS_STOP_RELEASE. */
static void stopped_expect(struct cl *c, uint32_t li, uint16_t port, uint64_t cookie, uint32_t arg,
			   int line)
{
	struct ss_shm_ev ev = ev_expect(c, SS_EV_LISTEN_STOPPED, line);
	if (ev.error != 0 || ev.conn != li || ev.local_port != port || ev.cookie != cookie ||
	    ev.arg != arg) {
		check_fail_(__FILE__, line, "LISTEN_STOPPED");
		fprintf(stderr, "    error %u conn %u port %u cookie %llu arg %u, want 0 %u %u %llu %u\n",
			ev.error, ev.conn, ev.local_port, (unsigned long long)ev.cookie, ev.arg, li,
			port, (unsigned long long)cookie, arg);
	}
}
#define EXPECT_STOPPED(c, li, port, cookie, arg) stopped_expect((c), (li), (port), (cookie), (arg), __LINE__)

static void test_listen_stop(void)
{
	struct sh h;
	struct cl p, c, x;
	struct ss_shm_ev ev;
	bool refused;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	CHECK_EQ_U64(cl_attach(&h, &x, ATTACH, NULL, 0), 1);

	uint32_t el = BIND_OK(&h, &p, 7300, 0);
	LISTEN_BOUND(&h, &p, el, 0, 700);
	struct sh_peer_conn *pc;
	accept_one(&h, &p, &pc, 43000, 7300, 700);
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 1);
	CMD(&c, .op = SS_CMD_LISTEN_ARM, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&c);

	/* A handshake in progress (the peer's SYN, no ACK yet). */
	struct ss_tcp syn = { .sport = 43001, .dport = 7300, .seq = 5000, .flags = SS_TCP_SYN,
			      .window = 65535 };
	CHECK(sh_to_stack(&h, &syn) == 0);
	struct ss_flow_key k = { .local_ip = SH_SVC_IP, .remote_ip = SH_PEER_IP,
				 .local_port = 7300, .remote_port = 43001 };
	struct ss_sconn *half = ss_flow_table_lookup(&h.st.flows, &k);
	CHECK(half != NULL);
	if (half)
		CHECK_EQ_U64(half->tcp.f.state, SS_TCPS_SYN_RCVD);
	sh_pump(&h, 4);

	/* Not a member, not listening: EBADF, then (bound entry) EINVAL. */
	CMD(&x, .op = SS_CMD_LISTEN_STOP, .conn = el, .cookie = 1);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&x, SS_CMD_LISTEN_STOP, el, 0, EBADF);
	uint32_t eb = BIND_OK(&h, &p, 7301, 0);
	CMD(&p, .op = SS_CMD_LISTEN_STOP, .conn = eb, .cookie = 2);
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_CMD_ERROR);
	CHECK_EQ_U64(ev.error, EINVAL);
	CHECK_EQ_U64(ev.arg, SS_CMD_LISTEN_STOP);
	CHECK_EQ_U64(ev.cookie, 2);

	/* The child stops it: both members are told, with their cookies
	 * (the child's is the parent's, inherited). */
	uint64_t rsts = h.rsts_to_peer;
	CMD(&c, .op = SS_CMD_LISTEN_STOP, .conn = el, .cookie = 700);
	sh_pump(&h, 4);
	EXPECT_STOPPED(&c, el, 7300, 700, 0);
	EXPECT_STOPPED(&p, el, 7300, 700, 0);
	NO_EVENT(&p);
	NO_EVENT(&c);
	CHECK_EQ_U64(h.st.listeners[el].state, SS_LST_BOUND);
	CHECK_EQ_U64(h.st.listeners[el].n_members, 2);
	CHECK(!h.st.listeners[el].m[0].armed && !h.st.listeners[el].m[1].armed);
	CHECK(ss_flow_table_lookup(&h.st.flows, &k) == NULL); /* the half-open one: reset */
	(void)rsts;
	CHECK(syn_probe(&h, 43002, 7300, &refused) == NULL);
	CHECK(refused);
	/* Stopped already: EINVAL; still bound: nobody else may bind it. */
	CMD(&p, .op = SS_CMD_LISTEN_STOP, .conn = el, .cookie = 3);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_LISTEN_STOP, el, 0, EINVAL);
	ev = BIND(&h, &x, 7300, 0, 4);
	CHECK_EQ_U64(ev.error, EADDRINUSE);
	/* The accepted connection is not touched. */
	CHECK_EQ_U64(pc->c.f.state, SS_TCPS_ESTABLISHED);

	/* Listening again on the same entry works (Linux: listen() after
	 * shutdown() of a listener), for every member: the child, which
	 * shares the socket, is told (its own cookie, unasked). */
	LISTEN_BOUND(&h, &p, el, 0, 701);
	ev = EXPECT(&c, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.flags, SS_EVF_MEMBER);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.conn, el);
	CHECK_EQ_U64(ev.cookie, 700);
	CHECK_EQ_U64(ev.local_port, 7300);
	CHECK_EQ_U64(ev.arg, 128);
	NO_EVENT(&p);
	CHECK(syn_owner(&h, 43003, 7300) == p.a);
	/* The child's own listen() meanwhile joins in (no EINVAL); the
	 * parent's second one is EINVAL as before. */
	LISTEN_BOUND(&h, &c, el, 0, 702);
	CMD(&p, .op = SS_CMD_LISTEN, .flags = SS_CMDF_BOUND, .conn = el, .cookie = 703);
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, EINVAL);
	CHECK_EQ_U64(ev.flags, 0);
	NO_EVENT(&c);
	CMD(&c, .op = SS_CMD_LISTEN_ARM, .conn = el);
	sh_pump(&h, 4);
	CHECK(syn_owner(&h, 43005, 7300) == c.a);

	/* With SS_STOP_RELEASE: every member gives the entry up. */
	CHECK_EQ_U64(p.a->n_listeners, 2);
	CHECK_EQ_U64(c.a->n_listeners, 1);
	CMD(&p, .op = SS_CMD_LISTEN_STOP, .conn = el, .arg = SS_STOP_RELEASE, .cookie = 701);
	sh_pump(&h, 4);
	EXPECT_STOPPED(&p, el, 7300, 701, 1);
	EXPECT_STOPPED(&c, el, 7300, 702, 1);
	CHECK_EQ_U64(h.st.listeners[el].state, SS_LST_FREE);
	CHECK_EQ_U64(p.a->n_listeners, 1);
	CHECK_EQ_U64(c.a->n_listeners, 0);
	CHECK(syn_probe(&h, 43004, 7300, &refused) == NULL);
	CHECK(refused);
	ev = BIND(&h, &x, 7300, 0, 5);
	CHECK_EQ_U64(ev.error, 0);
	CMD(&c, .op = SS_CMD_LISTEN_CLOSE, .conn = el);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&c, SS_CMD_LISTEN_CLOSE, el, 0, EBADF);
	CHECK_EQ_U64(pc->c.f.state, SS_TCPS_ESTABLISHED);
	NO_EVENT(&p);
	NO_EVENT(&c);
	NO_EVENT(&x);
	cl_close(&c);
	cl_close(&x);
	sh_fini(&h);
}

/* Three members: in turn when armed; the oldest remaining when none is. */
/*
 * bind(), fork(), then listen() in one process: the socket listens in
 * both (Linux: one socket).  The child is told with the cookie it got at
 * INHERIT (the parent's bind cookie) and takes connections once armed.
 */
static void test_listen_shared_bound(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);

	uint32_t e = BIND_OK(&h, &p, 7400, 0);
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 0);
	LISTEN_BOUND(&h, &p, e, 0, 800);
	ev = EXPECT(&c, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.flags, SS_EVF_MEMBER);
	CHECK_EQ_U64(ev.conn, e);
	CHECK_EQ_U64(ev.cookie, 1000 + 7400);
	CHECK_EQ_U64(ev.local_port, 7400);
	NO_EVENT(&c);
	NO_EVENT(&p);
	CMD(&c, .op = SS_CMD_LISTEN_ARM, .conn = e);
	sh_pump(&h, 4);
	CHECK(syn_owner(&h, 44000, 7400) == c.a);
	/* Stopped by the child: both told; the parent listens again alone
	 * first, the child is told again. */
	CMD(&c, .op = SS_CMD_LISTEN_STOP, .conn = e, .cookie = 801);
	sh_pump(&h, 4);
	EXPECT_STOPPED(&c, e, 7400, 1000 + 7400, 0);
	EXPECT_STOPPED(&p, e, 7400, 800, 0);
	LISTEN_BOUND(&h, &p, e, 0, 802);
	ev = EXPECT(&c, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.flags, SS_EVF_MEMBER);
	CHECK_EQ_U64(ev.cookie, 1000 + 7400);
	NO_EVENT(&c);
	NO_EVENT(&p);
	cl_close(&c);
	sh_fini(&h);
}

static void test_member_order(void)
{
	struct sh h;
	struct cl p, c1, c2;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	uint32_t el = BIND_OK(&h, &p, 8100, 0);
	LISTEN_BOUND(&h, &p, el, 0, 1);
	uint32_t e2 = BIND_OK(&h, &p, 8101, 0);
	LISTEN_BOUND(&h, &p, e2, 0, 2);
	CHECK_EQ_U64(cl_attach_child(&h, &c1, &p), 1);
	CHECK_EQ_U64(cl_attach_child(&h, &c2, &p), 1);
	INHERIT_OK(&h, &c1, 2, 0);
	INHERIT_OK(&h, &c2, 2, 0);
	CHECK_EQ_U64(h.st.listeners[el].n_members, 3);
	CHECK_EQ_U64(h.st.listeners[e2].n_members, 3);
	for (unsigned i = 0; i < 3; i++)
		CHECK(syn_owner(&h, (uint16_t)(21000 + i), 8100) == p.a);
	/* All armed: P, C1, C2, P, C1, C2. */
	CMD(&p, .op = SS_CMD_LISTEN_ARM, .conn = el);
	CMD(&c1, .op = SS_CMD_LISTEN_ARM, .conn = el);
	CMD(&c2, .op = SS_CMD_LISTEN_ARM, .conn = el);
	sh_pump(&h, 4);
	struct ss_app *want[3] = { p.a, c1.a, c2.a };
	for (unsigned i = 0; i < 6; i++)
		CHECK(syn_owner(&h, (uint16_t)(21010 + i), 8100) == want[i % 3]);
	/* C1 leaves: P and C2 in turn. */
	CMD(&c1, .op = SS_CMD_LISTEN_CLOSE, .conn = el);
	sh_pump(&h, 4);
	NO_EVENT(&c1);
	for (unsigned i = 0; i < 4; i++)
		CHECK(syn_owner(&h, (uint16_t)(21020 + i), 8100) == (i % 2 ? c2.a : p.a));

	/* Nobody armed on the second entry: the parent, the oldest. */
	CHECK(syn_owner(&h, 21030, 8101) == p.a);
	/* The parent leaves: the oldest remaining member, C1. */
	CMD(&p, .op = SS_CMD_LISTEN_CLOSE, .conn = e2);
	sh_pump(&h, 4);
	NO_EVENT(&p);
	CHECK_EQ_U64(h.st.listeners[e2].n_members, 2);
	for (unsigned i = 0; i < 3; i++)
		CHECK(syn_owner(&h, (uint16_t)(21040 + i), 8101) == c1.a);
	/* Then C2. */
	CMD(&c1, .op = SS_CMD_LISTEN_CLOSE, .conn = e2);
	sh_pump(&h, 4);
	for (unsigned i = 0; i < 3; i++)
		CHECK(syn_owner(&h, (uint16_t)(21050 + i), 8101) == c2.a);
	NO_EVENT(&p);
	NO_EVENT(&c1);
	NO_EVENT(&c2);
	cl_close(&c1);
	cl_close(&c2);
	sh_fini(&h);
}

/* ---- fork: holds ---- */

static void test_holds_release(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .arg = 8, .cookie = 3 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	struct sh_peer_conn *k1, *k2;
	struct aconn a1 = accept_one(&h, &p, &k1, 43000, 8080, 3);
	struct aconn a2 = accept_one(&h, &p, &k2, 43001, 8080, 3);

	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 2);

	/* The parent closes one and aborts the other: nothing reaches the
	 * peer while the child holds them, and the parent hears nothing. */
	uint64_t frames = h.frames_from_stack;
	CMD(&p, .op = SS_CMD_CLOSE, .conn = a1.slot, .gen = a1.gen);
	CMD(&p, .op = SS_CMD_ABORT, .conn = a2.slot, .gen = a2.gen);
	sh_pump(&h, 8);
	sh_advance(&h, 3000000, 100000);
	CHECK_EQ_U64(h.frames_from_stack, frames);
	CHECK_EQ_U64(k1->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(k2->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK(!(k1->c.f.flags & SS_TCPF_PEER_FIN));
	NO_EVENT(&p);
	CHECK_EQ_U64(p.a->n_conns, 2);
	CHECK_EQ_U64(h.st.n_flows, 2);
	/* The parent's handles are closed for the parent all the same. */
	CMD(&p, .op = SS_CMD_TX, .conn = a1.slot, .gen = a1.gen, .arg = 10);
	CMD(&p, .op = SS_CMD_CLOSE, .conn = a1.slot, .gen = a1.gen);
	CMD(&p, .op = SS_CMD_RX_DONE, .conn = a2.slot, .gen = a2.gen, .arg = 0);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_TX, a1.slot, a1.gen, EBADF);
	EXPECT_CMD_ERROR(&p, SS_CMD_CLOSE, a1.slot, a1.gen, EBADF);
	EXPECT_CMD_ERROR(&p, SS_CMD_RX_DONE, a2.slot, a2.gen, EBADF);
	NO_EVENT(&p);
	CHECK_EQ_U64(k1->c.f.rx_tail, 0);
	CHECK_EQ_U64(h.frames_from_stack, frames);

	/* The child lets go of the first: FIN now, CLOSED to the parent once
	 * the FIN is acknowledged. */
	CMD(&c, .op = SS_CMD_RELEASE, .conn = a1.slot, .gen = a1.gen, .ip = p.a->id);
	sh_pump(&h, 8);
	NO_EVENT(&c);
	CHECK_EQ_U64(k1->c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK(k1->c.f.flags & SS_TCPF_PEER_FIN);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, a1.slot);
	CHECK_EQ_U64(ev.gen, a1.gen);
	NO_EVENT(&p);
	CHECK_EQ_U64(k2->c.f.state, SS_TCPS_ESTABLISHED);
	/* ...and of the second: the parent's abort, RST now. */
	CMD(&c, .op = SS_CMD_RELEASE, .conn = a2.slot, .gen = a2.gen, .ip = p.a->id);
	sh_pump(&h, 8);
	NO_EVENT(&c);
	CHECK_EQ_U64(k2->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(k2->c.error, ECONNRESET);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, a2.slot);
	CHECK_EQ_U64(ev.gen, a2.gen);
	NO_EVENT(&p);
	CHECK_EQ_U64(p.a->n_conns, 0);
	CHECK_EQ_U64(c.a->n_inh, 0);

	/* Releasing again, or something never held: EBADF, op in arg. */
	CMD(&c, .op = SS_CMD_RELEASE, .conn = a1.slot, .gen = a1.gen, .ip = p.a->id);
	CMD(&c, .op = SS_CMD_RELEASE, .conn = 9, .gen = 0, .ip = p.a->id);
	CMD(&c, .op = SS_CMD_RELEASE, .conn = a1.slot, .gen = a1.gen, .ip = 77);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&c, SS_CMD_RELEASE, a1.slot, a1.gen, EBADF);
	EXPECT_CMD_ERROR(&c, SS_CMD_RELEASE, 9, 0, EBADF);
	EXPECT_CMD_ERROR(&c, SS_CMD_RELEASE, a1.slot, a1.gen, EBADF);
	NO_EVENT(&c);

	/* The peer closes the first too: our side ends in TIME_WAIT. */
	ss_tcp_shutdown(&k1->c, h.now_us);
	ss_tcp_output(&k1->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k1->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(h.st.n_flows, 1);
	NO_EVENT(&p);
	cl_close(&c);
	sh_fini(&h);
}

/* The holder exiting drops its references the same way. */
static void test_holder_exits(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	uint32_t li = ev.conn;
	struct sh_peer_conn *k1, *k2;
	struct aconn a1 = accept_one(&h, &p, &k1, 43000, 8080, 3);
	struct aconn a2 = accept_one(&h, &p, &k2, 43001, 8080, 3);
	(void)a2;

	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 2);
	CHECK_EQ_U64(h.st.listeners[li].n_members, 2);
	CMD(&c, .op = SS_CMD_LISTEN_ARM, .conn = li);
	CMD(&p, .op = SS_CMD_CLOSE, .conn = a1.slot, .gen = a1.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k1->c.f.state, SS_TCPS_ESTABLISHED);
	NO_EVENT(&p);

	/* The child goes away (its control socket hangs up). */
	ss_app_hangup(&h.reg, c.a);
	sh_pump(&h, 8);
	CHECK_EQ_U64(c.a->state, SS_APP_DEAD);
	/* The closed one: FIN, then CLOSED to the parent. */
	CHECK_EQ_U64(k1->c.f.state, SS_TCPS_CLOSE_WAIT);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, a1.slot);
	CHECK_EQ_U64(ev.gen, a1.gen);
	NO_EVENT(&p);
	/* The other one stays the parent's, open. */
	CHECK_EQ_U64(k2->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(p.a->n_conns, 1);
	/* The child left the listener: new connections go to the parent. */
	CHECK_EQ_U64(h.st.listeners[li].n_members, 1);
	CHECK(syn_owner(&h, 20000, 8080) == p.a);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);
	/* Closing the other one now takes effect at once. */
	CMD(&p, .op = SS_CMD_CLOSE, .conn = a2.slot, .gen = a2.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k2->c.f.state, SS_TCPS_CLOSE_WAIT);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, a2.slot);
	NO_EVENT(&p);
	cl_close(&c);
	sh_fini(&h);
}

/* ---- fork: adopt ---- */

static bool lose_data(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	return seg->payload_len > 0;
}

static void test_adopt(void)
{
	struct sh h;
	struct cl p, c, c2, x;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	struct sh_peer_conn *k;
	/* Slot 1 for the parent, so its handle differs from the child's. */
	struct sh_peer_conn *k0;
	accept_one(&h, &p, &k0, 42999, 8080, 3);
	struct aconn pa = accept_one(&h, &p, &k, 43000, 8080, 3);
	CHECK_EQ_U64(pa.slot, 1);

	/* The peer sends 3000 bytes; the parent reads 1000. */
	uint64_t prx = 0, packed = 0;
	CHECK(sh_peer_write(k, 0, 3000, 1) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	drain_counts(&p, pa.slot, pa.gen, &prx, &packed);
	CHECK_EQ_U64(prx, 3000);
	/* At the receive ring's home byte (abi.h), where the first bytes go. */
	uint32_t home = ss_shm_ring_home(pa.slot, RING);
	CHECK(home != 0);
	for (uint32_t i = 0; i < 3000; i++)
		if (pa.rx[(home + i) % RING] != sh_pat(i, 1)) {
			CHECK(pa.rx[(home + i) % RING] == sh_pat(i, 1));
			break;
		}
	CMD(&p, .op = SS_CMD_RX_DONE, .conn = pa.slot, .gen = pa.gen, .arg = 1000);
	/* The parent sends 2000 bytes, delivered and acknowledged. */
	app_write(pa.tx, 0, 2000, 2);
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 2000);
	sh_pump(&h, 8);
	sh_advance(&h, 500000, 10000);
	uint64_t got = 0;
	bool bad = false;
	sh_peer_read_check(k, &got, 2, &bad);
	CHECK_EQ_U64(got, 2000);
	sh_advance(&h, 500000, 10000);
	drain_counts(&p, pa.slot, pa.gen, &prx, &packed);
	CHECK_EQ_U64(packed, 2000);
	/* Then 5000 more that are lost on the way: queued, unacknowledged. */
	h.lose = lose_data;
	app_write(pa.tx, 2000, 5000, 2);
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 5000);
	sh_pump(&h, 8);
	CHECK(h.lose_count > 0);
	NO_EVENT(&p);

	/* Two children inherit; a third app is no child. */
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	CHECK_EQ_U64(cl_attach_child(&h, &c2, &p), 1);
	CHECK_EQ_U64(cl_attach(&h, &x, ATTACH, NULL, 0), 1);
	INHERIT_OK(&h, &c, 1, 2);
	INHERIT_OK(&h, &c2, 1, 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_inherits), 2);

	/* What the parent's rings hold now, with position p at byte p (the
	 * receive ring's origin put position 0 at its home byte; the
	 * transmit ring's is 0: no TX had SS_CMDF_TX_HOME). */
	uint8_t *prx_snap = malloc(RING), *ptx_snap = malloc(RING);
	for (uint32_t b = 0; b < RING; b++)
		prx_snap[b] = pa.rx[(home + b) % RING];
	memcpy(ptx_snap, pa.tx, RING);

	/* The child adopts it: its handle, the positions, the same bytes at
	 * origin 0. */
	CMD(&c, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 77);
	sh_pump(&h, 4);
	ev = EXPECT(&c, SS_EV_ADOPTED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.flags, 0);
	CHECK_EQ_U64(ev.cookie, 77);
	CHECK_EQ_U64(ev.conn, 0);
	CHECK_EQ_U64(ev.gen, 0);
	CHECK_EQ_U64(ev.arg, 1000);  /* rx consumed */
	CHECK_EQ_U64(ev.arg2, 3000); /* rx received */
	CHECK_EQ_U64(ev.arg3, 2000); /* tx acknowledged */
	CHECK_EQ_U64(ev.arg4, 7000); /* tx queued */
	CHECK_EQ_U64(ev.local_ip, SH_SVC_IP);
	CHECK_EQ_U64(ev.remote_ip, SH_PEER_IP);
	CHECK_EQ_U64(ev.local_port, 8080);
	CHECK_EQ_U64(ev.remote_port, 43000);
	CHECK_EQ_U64(ev.rx_off, ss_app_rx_ring(c.a, 0) - c.a->region);
	CHECK_EQ_U64(ev.tx_off, ss_app_tx_ring(c.a, 0) - c.a->region);
	struct aconn ca = take_conn(&c, &ev);
	CHECK_MEM(ca.rx, prx_snap, RING);
	CHECK_MEM(ca.tx, ptx_snap, RING);
	NO_EVENT(&c);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopts), 1);
	CHECK_EQ_U64(c.a->n_conns, 1);
	CHECK_EQ_U64(c.a->n_inh, 1);
	CHECK_EQ_U64(p.a->n_conns, 1);
	/* The parent's handle is dead: MOVED, then EBADF.  It keeps a
	 * reference to the child's handle (its descriptor stays open). */
	ev = EXPECT(&p, SS_EV_MOVED);
	CHECK_EQ_U64(ev.conn, pa.slot);
	CHECK_EQ_U64(ev.gen, pa.gen);
	CHECK_EQ_U64(ev.flags, SS_EVF_HELD);
	CHECK_EQ_U64(ev.arg, c.a->id);
	CHECK_EQ_U64(ev.arg2, ca.slot);
	CHECK_EQ_U64(ev.arg3, ca.gen);
	NO_EVENT(&p);
	CHECK_EQ_U64(p.a->n_inh, 1);
	/* The sibling's reference named the parent's handle: gone, and told. */
	ev = EXPECT(&c2, SS_EV_REF_GONE);
	CHECK_EQ_U64(ev.arg, p.a->id);
	CHECK_EQ_U64(ev.conn, pa.slot);
	CHECK_EQ_U64(ev.gen, pa.gen);
	NO_EVENT(&c2);
	CHECK_EQ_U64(c2.a->n_inh, 1);
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 1);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_TX, pa.slot, pa.gen, EBADF);

	/* The same reference again, the sibling's stale one, a stranger's: EBADF. */
	CMD(&c, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 78);
	CMD(&c2, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 79);
	CMD(&x, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 80);
	CMD(&x, .op = SS_CMD_RELEASE, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id);
	/* The new handle is no inherited reference either. */
	CMD(&x, .op = SS_CMD_ADOPT, .conn = ca.slot, .gen = ca.gen, .ip = c.a->id, .cookie = 81);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&c, SS_CMD_ADOPT, pa.slot, pa.gen, EBADF);
	EXPECT_CMD_ERROR(&c2, SS_CMD_ADOPT, pa.slot, pa.gen, EBADF);
	EXPECT_CMD_ERROR(&x, SS_CMD_ADOPT, pa.slot, pa.gen, EBADF);
	EXPECT_CMD_ERROR(&x, SS_CMD_RELEASE, pa.slot, pa.gen, EBADF);
	EXPECT_CMD_ERROR(&x, SS_CMD_ADOPT, ca.slot, ca.gen, EBADF);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopts), 1);
	CHECK_EQ_U64(c.a->n_conns, 1);

	/* The lost data goes again, from the child's ring, byte-exact. */
	h.lose = NULL;
	sh_advance(&h, 5000000, 10000);
	sh_peer_read_check(k, &got, 2, &bad);
	CHECK_EQ_U64(got, 7000);
	CHECK(!bad);
	uint64_t crx = 0, cacked = 0;
	drain_counts(&c, ca.slot, ca.gen, &crx, &cacked);
	CHECK_EQ_U64(cacked, 5000);
	CHECK_EQ_U64(crx, 0);

	/* The peer's next bytes land in the child's ring. */
	CHECK(sh_peer_write(k, 3000, 1500, 1) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	drain_counts(&c, ca.slot, ca.gen, &crx, &cacked);
	CHECK_EQ_U64(crx, 1500);
	NO_EVENT(&p);
	bad = false;
	for (uint32_t i = 1000; i < 4500; i++)
		if (ca.rx[i] != sh_pat(i, 1))
			bad = true;
	CHECK(!bad);
	CMD(&c, .op = SS_CMD_RX_DONE, .conn = ca.slot, .gen = ca.gen, .arg = 3500);
	/* The child's bytes reach the peer, byte-exact. */
	app_write(ca.tx, 7000, 4000, 2);
	CMD(&c, .op = SS_CMD_TX, .conn = ca.slot, .gen = ca.gen, .arg = 4000);
	sh_pump(&h, 8);
	sh_advance(&h, 500000, 10000);
	sh_peer_read_check(k, &got, 2, &bad);
	CHECK_EQ_U64(got, 11000);
	CHECK(!bad);
	drain_counts(&c, ca.slot, ca.gen, &crx, &cacked);
	CHECK_EQ_U64(cacked, 9000);
	CHECK_EQ_U64(k->c.f.rx_tail, 11000); /* nothing twice */

	/* The child closes: the parent still has it open, so it goes back
	 * there (RETURNED naming the reference, identical rings, the
	 * positions); no FIN; CLOSED to the child. */
	memcpy(prx_snap, ca.rx, RING);
	memcpy(ptx_snap, ca.tx, RING);
	CMD(&c, .op = SS_CMD_CLOSE, .conn = ca.slot, .gen = ca.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_ESTABLISHED);
	ev = EXPECT(&c, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, ca.slot);
	CHECK_EQ_U64(ev.gen, ca.gen);
	NO_EVENT(&c);
	NO_EVENT(&c2);
	ev = EXPECT(&p, SS_EV_RETURNED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.flags, 0);
	CHECK_EQ_U64(ev.cookie, (uint64_t)ca.slot << 32 | ca.gen);
	CHECK_EQ_U64(ev.arg, 4500);
	CHECK_EQ_U64(ev.arg2, 4500);
	CHECK_EQ_U64(ev.arg3, 11000);
	CHECK_EQ_U64(ev.arg4, 11000);
	CHECK_EQ_U64(ev.remote_port, 43000);
	struct aconn pb = take_conn(&p, &ev);
	CHECK_MEM(pb.rx, prx_snap, RING);
	CHECK_MEM(pb.tx, ptx_snap, RING);
	NO_EVENT(&p);
	CHECK_EQ_U64(p.a->n_inh, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_handbacks), 1);
	/* The parent's close is the last: FIN now. */
	CMD(&p, .op = SS_CMD_CLOSE, .conn = pb.slot, .gen = pb.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_CLOSE_WAIT);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, pb.slot);
	NO_EVENT(&p);
	/* The child's reference to the other connection is still good. */
	CHECK_EQ_U64(c.a->n_inh, 1);
	CHECK_EQ_U64(k0->c.f.state, SS_TCPS_ESTABLISHED);
	free(prx_snap);
	free(ptx_snap);
	cl_close(&c);
	cl_close(&c2);
	cl_close(&x);
	sh_fini(&h);
}

/* The owner had closed it (and the peer had sent FIN): the owner gets CLOSED, the flags say so. */
static void test_adopt_closed(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	struct sh_peer_conn *k;
	struct aconn pa = accept_one(&h, &p, &k, 43000, 8080, 3);
	CHECK(sh_peer_write(k, 0, 100, 5) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_RX);
	CHECK_EQ_U64(ev.arg, 100);
	NO_EVENT(&p);

	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 1);
	CMD(&p, .op = SS_CMD_CLOSE, .conn = pa.slot, .gen = pa.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_ESTABLISHED);
	/* More data and the peer's FIN while only the child holds it: kept
	 * (no RST for data after close), the parent told nothing. */
	CHECK(sh_peer_write(k, 100, 50, 5) == 0);
	ss_tcp_output(&k->c, h.now_us);
	ss_tcp_shutdown(&k->c, h.now_us);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_FIN_WAIT_2);
	NO_EVENT(&p);

	CMD(&c, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 9);
	sh_pump(&h, 8);
	ev = EXPECT(&c, SS_EV_ADOPTED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.flags, SS_EVF_PEER_FIN);
	CHECK_EQ_U64(ev.arg, 0);
	CHECK_EQ_U64(ev.arg2, 150);
	CHECK_EQ_U64(ev.arg3, 0);
	CHECK_EQ_U64(ev.arg4, 0);
	CHECK_EQ_U64(ev.cookie, 9);
	struct aconn ca = take_conn(&c, &ev);
	bool bad = false;
	for (uint32_t i = 0; i < 150; i++)
		bad |= ca.rx[i] != sh_pat(i, 5);
	CHECK(!bad);
	NO_EVENT(&c);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, pa.slot);
	CHECK_EQ_U64(ev.gen, pa.gen);
	NO_EVENT(&p);
	CHECK_EQ_U64(p.a->n_conns, 0);
	/* The parent's close went with its handle: still open until the child closes. */
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_FIN_WAIT_2);
	CMD(&c, .op = SS_CMD_RX_DONE, .conn = ca.slot, .gen = ca.gen, .arg = 150);
	CMD(&c, .op = SS_CMD_CLOSE, .conn = ca.slot, .gen = ca.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_TIME_WAIT);
	ev = EXPECT(&c, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, ca.slot);
	NO_EVENT(&c);
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopts), 1);
	cl_close(&c);
	sh_fini(&h);
}

/* ---- fork: hand-back (the owner lets go while another process holds it) ---- */

/* FNV-1a over @n bytes, continuing @h. */
static uint64_t hash_bytes(uint64_t h, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#define HASH0 0xcbf29ce484222325ull

/* Hash of stream bytes [@pos, @pos + @n) of a ring. */
static uint64_t hash_ring(const uint8_t *ring, uint32_t pos, uint32_t n)
{
	uint64_t h = HASH0;
	for (uint32_t i = 0; i < n; i++)
		h = hash_bytes(h, &ring[(pos + i) & (RING - 1)], 1);
	return h;
}

/* Hash of pattern bytes [@off, @off + @n) seeded @seed. */
static uint64_t hash_pat(uint64_t off, uint32_t n, unsigned seed)
{
	uint64_t h = HASH0;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t b = sh_pat(off + i, seed);
		h = hash_bytes(h, &b, 1);
	}
	return h;
}

/* The peer takes everything it has into *@h; returns the byte count. */
static uint32_t peer_read_hash(struct sh_peer_conn *k, uint64_t *h)
{
	uint32_t n = ss_tcp_rx_avail(&k->c), size = k->c.rx.size;
	for (uint32_t i = 0; i < n; i++)
		*h = hash_bytes(*h, &k->rxbuf[(k->c.f.rx_head - k->c.rx.origin + i) & (size - 1)],
				1);
	ss_tcp_recv_done(&k->c, n);
	return n;
}

/* A listener on 8080 for the harness's app and one accepted connection. */
static struct aconn owner_conn(struct sh *h, struct cl *p, struct sh_peer_conn **k)
{
	cl_cmd(p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(h, 4);
	struct ss_shm_ev ev = EXPECT(p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	return accept_one(h, p, k, 43000, 8080, 3);
}

/* The child @c adopts the parent's @pa: returns its handle. */
static struct aconn adopt_ok(struct sh *h, struct cl *c, struct cl *p, const struct aconn *pa)
{
	CMD(c, .op = SS_CMD_ADOPT, .conn = pa->slot, .gen = pa->gen, .ip = p->a->id, .cookie = 5);
	sh_pump(h, 4);
	struct ss_shm_ev ev = EXPECT(c, SS_EV_ADOPTED);
	CHECK_EQ_U64(ev.error, 0);
	struct aconn ca = take_conn(c, &ev);
	ev = EXPECT(p, SS_EV_MOVED);
	CHECK_EQ_U64(ev.flags, SS_EVF_HELD);
	CHECK_EQ_U64(ev.arg, c->a->id);
	return ca;
}

/* The common start of the hand-back cases: parent @p owns a connection to
 * peer *@k (its handle in *@pa), forks child @c, which inherits and adopts
 * it; returns the child's handle. */
static struct aconn child_adopts(struct sh *h, struct cl *p, struct cl *c,
				 struct sh_peer_conn **k, struct aconn *pa)
{
	CHECK(sh_init(h, ATTACH) == 0);
	cl_harness(h, p);
	*pa = owner_conn(h, p, k);
	CHECK_EQ_U64(cl_attach_child(h, c, p), 1);
	INHERIT_OK(h, c, 1, 1);
	return adopt_ok(h, c, p, pa);
}

/*
 * fork_inherit's case: the child uses the connection, then exits while
 * the parent still has it.  The parent gets it back with every byte: the
 * peer's data the child never read, the child's data not yet
 * acknowledged, and what the child published just before it went.
 */
static void test_handback_exit(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	struct sh_peer_conn *k;
	uint64_t rx = 0, acked = 0;
	struct aconn pa, ca = child_adopts(&h, &p, &c, &k, &pa);

	/* The peer sends 20000 bytes; the child reads 5000 of them. */
	CHECK(sh_peer_write(k, 0, 20000, 7) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 16);
	drain_counts(&c, ca.slot, ca.gen, &rx, &acked);
	CHECK_EQ_U64(rx, 20000);
	CHECK_EQ_U64(hash_ring(ca.rx, 0, 20000), hash_pat(0, 20000, 7));
	CMD(&c, .op = SS_CMD_RX_DONE, .conn = ca.slot, .gen = ca.gen, .arg = 5000);
	/* The child sends 18000 bytes, delivered and acknowledged... */
	uint64_t peer_h = HASH0;
	uint32_t peer_n = 0;
	app_write(ca.tx, 0, 18000, 8);
	CMD(&c, .op = SS_CMD_TX, .conn = ca.slot, .gen = ca.gen, .arg = 18000);
	sh_pump(&h, 16);
	sh_advance(&h, 500000, 10000);
	peer_n += peer_read_hash(k, &peer_h);
	CHECK_EQ_U64(peer_n, 18000);
	drain_counts(&c, ca.slot, ca.gen, &rx, &acked);
	CHECK_EQ_U64(acked, 18000);
	/* ...then 12000 that are lost on the way... */
	h.lose = lose_data;
	app_write(ca.tx, 18000, 12000, 8);
	CMD(&c, .op = SS_CMD_TX, .conn = ca.slot, .gen = ca.gen, .arg = 12000);
	sh_pump(&h, 16);
	CHECK(h.lose_count > 0);
	/* ...and publishes 3000 more as it exits (the service has not taken
	 * them when it sees the hang-up). */
	app_write(ca.tx, 30000, 3000, 8);
	CMD(&c, .op = SS_CMD_TX, .conn = ca.slot, .gen = ca.gen, .arg = 3000);
	ss_app_hangup(&h.reg, c.a);
	sh_pump(&h, 8);
	CHECK_EQ_U64(c.a->state, SS_APP_DEAD);

	/* The parent has it again: the positions, every unread and every
	 * unacknowledged byte in its own rings. */
	ev = EXPECT(&p, SS_EV_RETURNED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.flags, 0);
	CHECK_EQ_U64(ev.cookie, (uint64_t)ca.slot << 32 | ca.gen);
	CHECK_EQ_U64(ev.arg, 5000);
	CHECK_EQ_U64(ev.arg2, 20000);
	CHECK_EQ_U64(ev.arg3, 18000);
	CHECK_EQ_U64(ev.arg4, 33000);
	CHECK_EQ_U64(ev.local_port, 8080);
	CHECK_EQ_U64(ev.remote_port, 43000);
	CHECK_EQ_U64(ev.rx_off, ss_app_rx_ring(p.a, ev.conn) - p.a->region);
	struct aconn pb = take_conn(&p, &ev);
	NO_EVENT(&p);
	CHECK_EQ_U64(hash_ring(pb.rx, 5000, 15000), hash_pat(5000, 15000, 7));
	CHECK_EQ_U64(hash_ring(pb.tx, 18000, 15000), hash_pat(18000, 15000, 8));
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_handbacks), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_handback_failed), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_app_gone), 0);
	CHECK_EQ_U64(p.a->n_inh, 0);
	CHECK_EQ_U64(p.a->n_conns, 1);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);

	/* The lost bytes go again, now from the parent's ring: the peer has
	 * all 33000, once each, in order. */
	h.lose = NULL;
	sh_advance(&h, 3000000, 10000);
	peer_n += peer_read_hash(k, &peer_h);
	CHECK_EQ_U64(peer_n, 33000);
	CHECK_EQ_U64(peer_h, hash_pat(0, 33000, 8));
	CHECK_EQ_U64(k->c.f.rx_tail, 33000);
	rx = acked = 0;
	drain_counts(&p, pb.slot, pb.gen, &rx, &acked);
	CHECK_EQ_U64(acked, 15000);
	CHECK_EQ_U64(rx, 0);

	/* Both directions go on for the parent. */
	rx = acked = 0;
	CMD(&p, .op = SS_CMD_RX_DONE, .conn = pb.slot, .gen = pb.gen, .arg = 15000);
	CHECK(sh_peer_write(k, 20000, 1000, 7) == 0);
	ss_tcp_output(&k->c, h.now_us);
	app_write(pb.tx, 33000, 2000, 8);
	CMD(&p, .op = SS_CMD_TX, .conn = pb.slot, .gen = pb.gen, .arg = 2000);
	sh_pump(&h, 16);
	sh_advance(&h, 500000, 10000);
	drain_counts(&p, pb.slot, pb.gen, &rx, &acked);
	CHECK_EQ_U64(rx, 1000);
	CHECK_EQ_U64(acked, 2000);
	/* The data came in the round that took the RX_DONE, before it: the
	 * ring was not empty, so the origin stayed. */
	CHECK_EQ_U64(hash_ring(pb.rx, 20000, 1000), hash_pat(20000, 1000, 7));
	peer_h = HASH0;
	CHECK_EQ_U64(peer_read_hash(k, &peer_h), 2000);
	CHECK_EQ_U64(peer_h, hash_pat(33000, 2000, 8));
	CMD(&p, .op = SS_CMD_RX_DONE, .conn = pb.slot, .gen = pb.gen, .arg = 1000);
	CMD(&p, .op = SS_CMD_CLOSE, .conn = pb.slot, .gen = pb.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_CLOSE_WAIT);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, pb.slot);
	NO_EVENT(&p);
	cl_close(&c);
	sh_fini(&h);
}

/* The adopter aborts (SO_LINGER {1, 0}) while the parent holds it: no
 * RST, the parent gets it back; the parent's abort then resets it. */
static void test_handback_abort(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	struct sh_peer_conn *k;
	struct aconn pa, ca = child_adopts(&h, &p, &c, &k, &pa);
	CHECK(sh_peer_write(k, 0, 100, 3) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&c, SS_EV_RX);
	CHECK_EQ_U64(ev.arg, 100);

	CMD(&c, .op = SS_CMD_ABORT, .conn = ca.slot, .gen = ca.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_ESTABLISHED);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_rst_sent), 0);
	ev = EXPECT(&c, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, ca.slot);
	NO_EVENT(&c);
	ev = EXPECT(&p, SS_EV_RETURNED);
	CHECK_EQ_U64(ev.arg, 0);
	CHECK_EQ_U64(ev.arg2, 100);
	struct aconn pb = take_conn(&p, &ev);
	CHECK_EQ_U64(hash_ring(pb.rx, 0, 100), hash_pat(0, 100, 3));
	NO_EVENT(&p);
	/* Not an ancestor of the parent: the child's reference is gone. */
	CHECK_EQ_U64(c.a->n_inh, 0);
	CMD(&p, .op = SS_CMD_ABORT, .conn = pb.slot, .gen = pb.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(k->c.error, ECONNRESET);
	ev = EXPECT(&p, SS_EV_CLOSED);
	CHECK_EQ_U64(ev.conn, pb.slot);
	NO_EVENT(&p);
	cl_close(&c);
	sh_fini(&h);
}

/* The owner exits while a child holds the connection it never used: the
 * child gets it (RETURNED naming the parent's handle) and goes on. */
static void test_handback_owner_exits(void)
{
	struct sh h;
	struct cl harness, p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &harness);
	CHECK_EQ_U64(cl_attach(&h, &p, ATTACH, NULL, 0), 1);
	struct sh_peer_conn *k;
	struct aconn pa = owner_conn(&h, &p, &k);
	CHECK(sh_peer_write(k, 0, 500, 4) == 0);
	ss_tcp_output(&k->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_RX);
	CHECK_EQ_U64(ev.arg, 500);
	CMD(&p, .op = SS_CMD_RX_DONE, .conn = pa.slot, .gen = pa.gen, .arg = 200);
	sh_pump(&h, 4);
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 1);

	cl_close(&p);
	ss_app_hangup(&h.reg, p.a);
	sh_pump(&h, 8);
	CHECK_EQ_U64(p.a->state, SS_APP_DEAD);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_ESTABLISHED);
	ev = EXPECT(&c, SS_EV_RETURNED);
	CHECK_EQ_U64(ev.cookie, (uint64_t)pa.slot << 32 | pa.gen);
	CHECK_EQ_U64(ev.arg, 200);
	CHECK_EQ_U64(ev.arg2, 500);
	struct aconn cb = take_conn(&c, &ev);
	CHECK_EQ_U64(hash_ring(cb.rx, 200, 300), hash_pat(200, 300, 4));
	NO_EVENT(&c);
	CHECK_EQ_U64(c.a->n_inh, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_app_gone), 0);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);
	/* The reference it named is spent. */
	CMD(&c, .op = SS_CMD_RELEASE, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&c, SS_CMD_RELEASE, pa.slot, pa.gen, EBADF);
	/* The child reads the rest; its close is the last one: FIN. */
	CMD(&c, .op = SS_CMD_RX_DONE, .conn = cb.slot, .gen = cb.gen, .arg = 300);
	CMD(&c, .op = SS_CMD_CLOSE, .conn = cb.slot, .gen = cb.gen);
	sh_pump(&h, 8);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_CLOSE_WAIT);
	ev = EXPECT(&c, SS_EV_CLOSED);
	NO_EVENT(&c);
	cl_close(&c);
	sh_fini(&h);
}

/* A holder that cannot take it (other ring sizes): counted, and the
 * connection closes as its owner's exit says: a FIN (nothing unread). */
static void test_handback_refused(void)
{
	struct sh h;
	struct cl harness, p, c;
	char line[256];
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &harness);
	CHECK_EQ_U64(cl_attach(&h, &p, ATTACH, NULL, 0), 1);
	struct sh_peer_conn *k;
	struct aconn pa = owner_conn(&h, &p, &k);
	snprintf(line, sizeof(line), "attach 1 contexts=1 conns=16 rxbuf=4096 txbuf=4096 parent=%u token=%llu",
		 p.a->id, (unsigned long long)p.a->token);
	CHECK_EQ_U64(cl_attach(&h, &c, line, NULL, 0), 1);
	INHERIT_OK(&h, &c, 1, 1);
	cl_close(&p);
	ss_app_hangup(&h.reg, p.a);
	sh_pump(&h, 8);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_handback_failed), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_handbacks), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_app_gone), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_orphaned), 1);
	CHECK_EQ_U64(k->c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK_EQ_U64(k->c.error, 0);
	/* The child is told its reference is gone. */
	struct ss_shm_ev ev = EXPECT(&c, SS_EV_REF_GONE);
	CHECK_EQ_U64(ev.arg, p.a->id);
	CHECK_EQ_U64(ev.conn, pa.slot);
	CHECK_EQ_U64(ev.gen, pa.gen);
	NO_EVENT(&c);
	CHECK_EQ_U64(c.a->n_inh, 0);
	CMD(&c, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id, .cookie = 1);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&c, SS_CMD_ADOPT, pa.slot, pa.gen, EBADF);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);
	cl_close(&c);
	sh_fini(&h);
}

/* ---- FIN_ACKED: both FINs done is Linux's CLOSE ---- */

static bool lose_all(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	(void)seg;
	return true;
}

static void test_fin_acked(void)
{
	struct sh h;
	struct cl p, c;
	struct ss_shm_ev ev;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);
	cl_cmd(&p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(&h, 4);
	ev = EXPECT(&p, SS_EV_LISTEN);
	struct sh_peer_conn *k1, *k2, *k3, *k4;
	struct aconn a1 = accept_one(&h, &p, &k1, 43001, 8080, 3);
	struct aconn a2 = accept_one(&h, &p, &k2, 43002, 8080, 3);
	struct aconn a3 = accept_one(&h, &p, &k3, 43003, 8080, 3);
	struct aconn a4 = accept_one(&h, &p, &k4, 43004, 8080, 3);

	/* We shut down first: FIN_ACKED once the peer acknowledges it
	 * (FIN_WAIT_2), then the peer's FIN, and FIN_ACKED is not repeated. */
	CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = a1.slot, .gen = a1.gen);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_FIN_ACKED);
	CHECK_EQ_U64(ev.conn, a1.slot);
	CHECK_EQ_U64(ev.gen, a1.gen);
	NO_EVENT(&p);
	CHECK(sh_peer_write(k1, 0, 10, 1) == 0);
	ss_tcp_shutdown(&k1->c, h.now_us);
	ss_tcp_output(&k1->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_RX);
	ev = EXPECT(&p, SS_EV_PEER_FIN);
	CHECK_EQ_U64(ev.conn, a1.slot);
	NO_EVENT(&p);

	/* The peer's FIN first: our FIN in LAST_ACK, FIN_ACKED when the
	 * engine reaches CLOSED (the handle stays ours). */
	ss_tcp_shutdown(&k2->c, h.now_us);
	ss_tcp_output(&k2->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_PEER_FIN);
	CHECK_EQ_U64(ev.conn, a2.slot);
	NO_EVENT(&p);
	CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = a2.slot, .gen = a2.gen);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_FIN_ACKED);
	CHECK_EQ_U64(ev.conn, a2.slot);
	NO_EVENT(&p);
	sh_advance(&h, 1000000, 100000);
	NO_EVENT(&p);

	/* Our FIN never acknowledged, then a reset: RESET only. */
	h.lose = lose_all;
	CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = a3.slot, .gen = a3.gen);
	sh_pump(&h, 8);
	NO_EVENT(&p);
	h.lose = NULL;
	ss_tcp_abort(&k3->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_RESET);
	CHECK_EQ_U64(ev.conn, a3.slot);
	NO_EVENT(&p);

	/* A half-closed connection adopted by a child: the flag says so, and
	 * no FIN_ACKED follows for the child. */
	CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = a4.slot, .gen = a4.gen);
	sh_pump(&h, 8);
	ev = EXPECT(&p, SS_EV_FIN_ACKED);
	CHECK_EQ_U64(ev.conn, a4.slot);
	NO_EVENT(&p);
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 1, 4);
	CMD(&c, .op = SS_CMD_ADOPT, .conn = a4.slot, .gen = a4.gen, .ip = p.a->id, .cookie = 6);
	sh_pump(&h, 8);
	ev = EXPECT(&c, SS_EV_ADOPTED);
	CHECK_EQ_U64(ev.flags, SS_EVF_SHUT_WR | SS_EVF_FIN_ACKED);
	NO_EVENT(&c);
	ev = EXPECT(&p, SS_EV_MOVED);
	NO_EVENT(&p);
	ss_tcp_shutdown(&k4->c, h.now_us);
	ss_tcp_output(&k4->c, h.now_us);
	sh_pump(&h, 8);
	ev = EXPECT(&c, SS_EV_PEER_FIN);
	NO_EVENT(&c);
	cl_close(&c);
	sh_fini(&h);
}

/* ---- INHERIT errors ---- */

static void test_inherit_errors(void)
{
	struct sh h;
	struct cl p, c, c2, x, n;
	CHECK(sh_init(&h, ATTACH) == 0);
	cl_harness(&h, &p);

	/* No parent: EINVAL. */
	CHECK_EQ_U64(cl_attach(&h, &x, ATTACH, NULL, 0), 1);
	INHERIT_FAILS(&h, &x, EINVAL);
	/* Twice: EINVAL the second time. */
	CHECK_EQ_U64(cl_attach_child(&h, &c, &p), 1);
	INHERIT_OK(&h, &c, 0, 0);
	INHERIT_FAILS(&h, &c, EINVAL);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_inherits), 1);
	cl_close(&x);
	ss_app_hangup(&h.reg, x.a);
	sh_pump(&h, 4);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);

	/* The parent is gone: ESRCH. */
	CHECK_EQ_U64(cl_attach_child(&h, &c2, &p), 1);
	uint64_t old_token = p.a->token;
	ss_app_hangup(&h.reg, p.a);
	sh_pump(&h, 4);
	CHECK_EQ_U64(p.a->state, SS_APP_DEAD);
	INHERIT_FAILS(&h, &c2, ESRCH);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);
	/* Another app in the parent's slot: the token does not match, ESRCH. */
	CHECK_EQ_U64(cl_attach(&h, &n, ATTACH, NULL, 0), 1);
	CHECK(n.a == p.a);
	CHECK(n.a->token != old_token);
	INHERIT_FAILS(&h, &c2, ESRCH);
	/* A child of the new app still cannot claim it was the old one's. */
	CHECK_EQ_U64(c2.a->parent_token, old_token);
	CHECK(!c2.a->inherited);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_inherits), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopts), 0);
	cl_close(&c);
	cl_close(&c2);
	cl_close(&n);
	sh_fini(&h);
}

/* ---- the attach line: parent= and token=, credentials ---- */

static bool self_cap_bind(void)
{
	char line[256];
	bool cap = false;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0)
			cap = (strtoull(line + 7, NULL, 16) >> 10) & 1;
	fclose(f);
	return cap;
}

static void test_attach_lines(void)
{
	struct sh h;
	struct cl c;
	char reply[512], line[256], want[64];
	CHECK(sh_init(&h, ATTACH) == 0);
	struct ss_app *p = h.app;
	CHECK(p->token != 0);
	CHECK_EQ_U64(p->parent_token, 0);
	/* The peer's credentials: this process. */
	CHECK_EQ_U64(p->pid, getpid());
	CHECK_EQ_U64(p->cap_bind, self_cap_bind());

	/* A child: the reply carries its own token. */
	snprintf(line, sizeof(line), "attach 1 token=%llu contexts=1 conns=4 parent=%u rxbuf=4096 txbuf=4096",
		 (unsigned long long)p->token, p->id);
	CHECK_EQ_U64(cl_attach(&h, &c, line, reply, sizeof(reply)), 1);
	CHECK_EQ_U64(c.a->parent_id, p->id);
	CHECK_EQ_U64(c.a->parent_token, p->token);
	CHECK(c.a->token != 0 && c.a->token != p->token);
	snprintf(want, sizeof(want), "\"token\": %llu}", (unsigned long long)c.a->token);
	CHECK(strstr(reply, want) != NULL);
	CHECK(strncmp(reply, "{\"ok\": true", 11) == 0);
	cl_close(&c);

	const char *base = "attach 1 contexts=1 conns=4 rxbuf=4096 txbuf=4096";
	unsigned long long tok = (unsigned long long)p->token;
	char bad[8][200];
	const char *why[8];
	unsigned nb = 0;
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=%u", base, p->id);
	why[nb++] = "parent and token come together";
	snprintf(bad[nb], sizeof(bad[0]), "%s token=%llu", base, tok);
	why[nb++] = "parent and token come together";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=%u token=99999999999999999999", base, p->id);
	why[nb++] = "bad number for token";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=%u token=x%llu", base, p->id, tok);
	why[nb++] = "bad number for token";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=-%u token=%llu", base, p->id, tok);
	why[nb++] = "bad number for parent";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=3 token=%llu", base, tok);
	why[nb++] = "parent is not attached or the token does not match";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=99 token=%llu", base, tok);
	why[nb++] = "parent is not attached or the token does not match";
	snprintf(bad[nb], sizeof(bad[0]), "%s parent=%u token=0", base, p->id);
	why[nb++] = "parent is not attached or the token does not match";
	uint64_t refused = h.reg.refused;
	for (unsigned i = 0; i < nb; i++) {
		int rc = cl_attach(&h, &c, bad[i], reply, sizeof(reply));
		CHECK_EQ_U64(rc, 0);
		if (!strstr(reply, why[i])) {
			CHECK(strstr(reply, why[i]) != NULL);
			fprintf(stderr, "    line \"%s\": reply %s", bad[i], reply);
		}
	}
	CHECK_EQ_U64(h.reg.refused, refused + nb);
	/* A wrong token (one off): refused too. */
	snprintf(line, sizeof(line), "%s parent=%u token=%llu", ATTACH, p->id,
		 (unsigned long long)(p->token ^ 1));
	CHECK_EQ_U64(cl_attach(&h, &c, line, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "parent is not attached or the token does not match") != NULL);
	sh_fini(&h);
}

int main(void)
{
	test_bind();
	test_bind_listen_connect();
	test_reuseport_spread();
	test_fork_listener();
	test_member_order();
	test_listen_stop();
	test_listen_shared_bound();
	test_holds_release();
	test_holder_exits();
	test_adopt();
	test_adopt_closed();
	test_handback_exit();
	test_handback_abort();
	test_handback_owner_exits();
	test_handback_refused();
	test_fin_acked();
	test_inherit_errors();
	test_attach_lines();
	return check_done("test_stack_ports");
}
