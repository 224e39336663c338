/* test_stack_orphan.c - an application exits with data still to send: the service sends it, then a FIN. */
#include "check.h"
#include "stack_harness.h"
#include <errno.h>

#define ATTACH "attach 1 contexts=1 conns=16 rxbuf=65536 txbuf=65536 small=0"

static uint64_t ctr(struct sh *h, enum ss_counter_id id)
{
	return ss_ctr_read(&h->ctr, id);
}

static bool lose_all(struct sh *h, const struct ss_tcp *seg)
{
	(void)h;
	(void)seg;
	return true;
}

struct oconn {
	uint32_t slot, gen;
	uint8_t *tx;
	uint32_t tx_tail;
};

/* The app connects to the peer's port 9000. */
static struct oconn connect_peer(struct sh *h, struct sh_peer_conn **peer)
{
	struct oconn oc = { 0 };
	struct ss_shm_ev ev = { 0 };

	h->peer_listen_port = 9000;
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_CONNECT, .ip = SH_PEER_IP, .port = 9000,
					.cookie = 7 });
	sh_pump(h, 16);
	CHECK(sh_event(h, &ev));
	CHECK_EQ_U64(ev.type, SS_EV_CONNECTED);
	CHECK_EQ_U64(ev.error, 0);
	oc.slot = ev.conn;
	oc.gen = ev.gen;
	oc.tx = h->app->region + ev.tx_off;
	*peer = &h->peer[0];
	CHECK_EQ_U64((*peer)->c.f.state, SS_TCPS_ESTABLISHED);
	return oc;
}

/* The app queues @n pattern bytes from stream offset @off. */
static void app_write(struct sh *h, struct oconn *oc, uint64_t off, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		oc->tx[(oc->tx_tail + i) & (h->app->txbuf_size - 1)] = sh_pat(off + i, 5);
	oc->tx_tail += n;
	sh_cmd(h, &(struct ss_shm_cmd){ .op = SS_CMD_TX, .conn = oc->slot, .gen = oc->gen, .arg = n });
}

/* The app process is gone (its socket hung up) and the service reclaims it. */
static void app_exits(struct sh *h)
{
	ss_app_hangup(&h->reg, h->app);
	sh_pump(h, 8);
	CHECK_EQ_U64(ss_app_reclaim(&h->reg), 1);
	CHECK_EQ_U64(h->st.n_active, 0);
}

/*
 * 50 000 bytes go through, then 30 000 more are queued while the network
 * loses everything, and the app exits.  The 30 000 bytes (wrapping in the
 * app's 64 KiB ring and in the service's 32 KiB copy, at different places)
 * still reach the peer, exact, then a FIN; the copy is freed once acked.
 */
static void test_orphan_sends_the_rest(void)
{
	struct sh h;
	struct sh_peer_conn *p;
	uint64_t got = 0;
	bool bad = false;

	CHECK(sh_init(&h, ATTACH) == 0);
	struct oconn oc = connect_peer(&h, &p);
	app_write(&h, &oc, 0, 50000);
	sh_pump(&h, 16);
	sh_peer_read_check(p, &got, 5, &bad);
	CHECK_EQ_U64(got, 50000);

	h.lose = lose_all;
	app_write(&h, &oc, 50000, 30000);
	sh_pump(&h, 16);
	CHECK_EQ_U64(ss_tcp_tx_queued(&h.st.conns[0].tcp), 30000);
	app_exits(&h);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_orphaned), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_app_gone), 0);
	CHECK_EQ_U64(h.st.orphan_bytes, 32768);
	CHECK_EQ_U64(h.st.n_flows, 1);
	CHECK_EQ_U64(h.st.conns[0].tcp.f.state, SS_TCPS_FIN_WAIT_1);

	h.lose = NULL;
	for (int i = 0; i < 200 && (got < 80000 || p->c.f.state != SS_TCPS_CLOSE_WAIT); i++) {
		sh_advance(&h, 100000, 20000);
		sh_peer_read_check(p, &got, 5, &bad);
	}
	CHECK_EQ_U64(got, 80000);
	CHECK(!bad);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK_EQ_U64(p->c.error, 0);
	CHECK_EQ_U64(h.st.orphan_bytes, 0);
	CHECK_EQ_U64(h.st.conns[0].orphan_buf == NULL, 1);
	CHECK_EQ_U64(h.st.conns[0].tcp.f.state, SS_TCPS_FIN_WAIT_2);

	/* The peer closes too: TIME_WAIT, then nothing. */
	ss_tcp_shutdown(&p->c, h.now_us);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 8);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSED);
	sh_advance(&h, h.params.time_wait_us + 2000000, 500000);
	CHECK_EQ_U64(h.st.n_flows, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_conn_freed), 1);
	sh_fini(&h);
}

/* Unread data at exit: a RST, as Linux sends when a socket closes unread. */
static void test_orphan_unread_resets(void)
{
	struct sh h;
	struct sh_peer_conn *p;

	CHECK(sh_init(&h, ATTACH) == 0);
	struct oconn oc = connect_peer(&h, &p);
	app_write(&h, &oc, 0, 1000);
	CHECK(sh_peer_write(p, 0, 3000, 8) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 16);
	app_exits(&h);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_orphaned), 0);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSED);
	CHECK_EQ_U64(p->c.error, ECONNRESET);
	CHECK_EQ_U64(h.st.orphan_bytes, 0);
	CHECK_EQ_U64(h.st.n_flows, 0);
	sh_fini(&h);
}

/* Beyond max-orphan-mem the connection is reset and counted; nothing kept. */
static void test_orphan_over_limit_resets(void)
{
	struct sh h;
	struct sh_peer_conn *p;

	CHECK(sh_init(&h, ATTACH) == 0);
	h.st.lim.max_orphan_mem = 16384;
	struct oconn oc = connect_peer(&h, &p);
	h.lose = lose_all;
	app_write(&h, &oc, 0, 20000); /* needs a 32 KiB copy */
	sh_pump(&h, 16);
	app_exits(&h);
	h.lose = NULL;
	sh_pump(&h, 16);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_reset_orphan_mem), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_orphaned), 0);
	CHECK_EQ_U64(h.st.orphan_bytes, 0);
	CHECK_EQ_U64(h.st.n_flows, 0);
	/* The RST was lost with everything else; the peer's next segment
	 * finds no flow (the fast path answers it with a RST). */
	uint64_t rsts = h.rsts_to_peer;
	CHECK(sh_peer_write(p, 0, 100, 8) == 0);
	ss_tcp_output(&p->c, h.now_us);
	sh_pump(&h, 16);
	CHECK_EQ_U64(h.rsts_to_peer, rsts + 1);
	sh_fini(&h);
}

/* Everything already acknowledged: no copy, just the FIN. */
static void test_orphan_nothing_queued(void)
{
	struct sh h;
	struct sh_peer_conn *p;
	uint64_t got = 0;
	bool bad = false;

	CHECK(sh_init(&h, ATTACH) == 0);
	struct oconn oc = connect_peer(&h, &p);
	app_write(&h, &oc, 0, 5000);
	sh_pump(&h, 16);
	sh_peer_read_check(p, &got, 5, &bad);
	app_exits(&h);
	CHECK_EQ_U64(ctr(&h, SS_CTR_tcp_orphaned), 1);
	CHECK_EQ_U64(h.st.orphan_bytes, 0);
	CHECK_EQ_U64(p->c.f.state, SS_TCPS_CLOSE_WAIT);
	CHECK_EQ_U64(got, 5000);
	CHECK(!bad);
	sh_fini(&h);
}

int main(void)
{
	test_orphan_sends_the_rest();
	test_orphan_unread_resets();
	test_orphan_over_limit_resets();
	test_orphan_nothing_queued();
	return check_done("test_stack_orphan");
}
