/* stack_fork_client.h - the stack tests of sockets shared across fork: applications on raw shared memory, their connections, the events they must get. */
#ifndef SS_TESTS_STACK_FORK_CLIENT_H
#define SS_TESTS_STACK_FORK_CLIENT_H

#include "check.h"
#include "stack_client.h"

#include <stdio.h>

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536 small=0"
#define RING 65536u

static inline uint64_t ctr(struct sh *h, enum ss_counter_id id)
{
	return ss_ctr_read(&h->ctr, id);
}

/* A forked child of @parent. */
static inline int cl_attach_child(struct sh *h, struct cl *c, const struct cl *parent)
{
	char line[256];
	snprintf(line, sizeof(line), "%s parent=%u token=%llu", ATTACH, parent->a->id,
		 (unsigned long long)parent->a->token);
	return cl_attach(h, c, line, NULL, 0);
}

/* The next event, which must be of @type. */
static inline struct ss_shm_ev ev_expect(struct cl *c, uint8_t type, int line)
{
	struct ss_shm_ev ev;
	check_count++;
	if (!cl_ev(c, &ev)) {
		memset(&ev, 0, sizeof(ev));
		check_fail_(__FILE__, line, "an event");
		fprintf(stderr, "    app %u: no event, want type %u\n", c->a->id, type);
		return ev;
	}
	if (ev.type != type) {
		check_fail_(__FILE__, line, "event type");
		fprintf(stderr, "    app %u: got type %u (conn %u error %u arg %u), want %u\n", c->a->id,
			ev.type, ev.conn, ev.error, ev.arg, type);
	}
	return ev;
}
#define EXPECT(c, type) ev_expect((c), (type), __LINE__)

static inline void ev_none(struct cl *c, int line)
{
	struct ss_shm_ev ev;
	check_count++;
	if (cl_ev(c, &ev)) {
		check_fail_(__FILE__, line, "no event");
		fprintf(stderr, "    app %u: got type %u (conn %u error %u arg %u)\n", c->a->id, ev.type,
			ev.conn, ev.error, ev.arg);
	}
}
#define NO_EVENT(c) ev_none((c), __LINE__)

/* A command rejected with SS_EV_CMD_ERROR: @err, the op in arg, the fields echoed. */
static inline void cmd_error_expect(struct cl *c, uint8_t op, uint32_t conn, uint32_t gen, int err,
				    int line)
{
	struct ss_shm_ev ev = ev_expect(c, SS_EV_CMD_ERROR, line);
	if (ev.error != err || ev.arg != op || ev.conn != conn || ev.gen != gen) {
		check_fail_(__FILE__, line, "command error");
		fprintf(stderr, "    got error %u op %u conn %u gen %u, want %d %u %u %u\n", ev.error,
			ev.arg, ev.conn, ev.gen, err, op, conn, gen);
	}
}
#define EXPECT_CMD_ERROR(c, op, conn, gen, err) cmd_error_expect((c), (op), (conn), (gen), (err), __LINE__)

/* The peer connects from @sport to @dport; returns its connection. */
static inline struct sh_peer_conn *peer_connect(struct sh *h, uint16_t sport, uint16_t dport)
{
	struct sh_peer_conn *p = sh_peer_new(h, sport, dport);
	CHECK(p != NULL);
	if (!p)
		abort();
	CHECK(ss_tcp_connect(&p->c, h->now_us) == 0);
	sh_pump(h, 16);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_ESTABLISHED);
	return p;
}

/* An app's view of one connection. */
struct aconn {
	uint32_t slot, gen;
	uint8_t *rx, *tx;
	uint16_t lport, rport;
	uint64_t cookie;
};

static inline struct aconn take_conn(struct cl *c, const struct ss_shm_ev *ev)
{
	return (struct aconn){ .slot = ev->conn, .gen = ev->gen, .rx = c->a->region + ev->rx_off,
			       .tx = c->a->region + ev->tx_off, .lport = ev->local_port,
			       .rport = ev->remote_port, .cookie = ev->cookie };
}

/* The peer connects to @port; the app @c must get ACCEPTED with @cookie. */
static inline struct aconn accept_one(struct sh *h, struct cl *c, struct sh_peer_conn **pp,
				      uint16_t sport, uint16_t port, uint64_t cookie)
{
	*pp = peer_connect(h, sport, port);
	struct ss_shm_ev ev = EXPECT(c, SS_EV_ACCEPTED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.cookie, cookie);
	CHECK_EQ_U64(ev.local_port, port);
	CHECK_EQ_U64(ev.remote_port, sport);
	CHECK_EQ_U64(ev.local_ip, SH_SVC_IP);
	CHECK_EQ_U64(ev.remote_ip, SH_PEER_IP);
	return take_conn(c, &ev);
}

static inline void inherit_ok(struct sh *h, struct cl *c, uint32_t joined, uint32_t held, int line)
{
	struct ss_shm_ev ev;
	uint32_t states = 0;
	bool got;

	cl_cmd(c, (struct ss_shm_cmd){ .op = SS_CMD_INHERIT });
	sh_pump(h, 4);
	/* First each joined port entry's state as it is now (LISTEN as a
	 * member, or LISTEN_STOPPED), then INHERITED. */
	while ((got = cl_ev(c, &ev)) &&
	       ((ev.type == SS_EV_LISTEN && (ev.flags & SS_EVF_MEMBER)) ||
		ev.type == SS_EV_LISTEN_STOPPED))
		states++;
	check_count++;
	if (!got || ev.type != SS_EV_INHERITED || ev.error != 0 || ev.arg != joined ||
	    ev.arg2 != held || states != joined) {
		check_fail_(__FILE__, line, "INHERITED");
		fprintf(stderr, "    got %d type %u error %u joined %u held %u states %u, want %u 0 %u %u %u\n",
			got, got ? ev.type : 0, got ? ev.error : 0, got ? ev.arg : 0,
			got ? ev.arg2 : 0, states, SS_EV_INHERITED, joined, held, joined);
	}
}
#define INHERIT_OK(h, c, joined, held) inherit_ok((h), (c), (joined), (held), __LINE__)

/* Sums the byte counts of the events that follow (RX and TX_ACKED of @slot). */
static inline void drain_counts(struct cl *c, uint32_t slot, uint32_t gen, uint64_t *rx,
				uint64_t *acked)
{
	struct ss_shm_ev ev;
	while (cl_ev(c, &ev)) {
		CHECK_EQ_U64(ev.conn, slot);
		CHECK_EQ_U64(ev.gen, gen);
		if (ev.type == SS_EV_RX)
			*rx += ev.arg;
		else if (ev.type == SS_EV_TX_ACKED)
			*acked += ev.arg;
		else {
			CHECK_EQ_U64(ev.type, SS_EV_RX);
		}
	}
}

static inline void app_write(uint8_t *tx, uint32_t pos, uint32_t n, unsigned seed)
{
	for (uint32_t i = 0; i < n; i++)
		tx[(pos + i) & (RING - 1)] = sh_pat(pos + i, seed);
}

#endif
