/* test_stack_adopt_sync.c - a connection that moves to another process while its owner writes or reads: the owner's published commands first, what it committed or consumed from the sync words, lying words ignored. */
#include "check.h"
#include "stack_fork_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The owner's writes, seed 4: what the peer must read, in order. */
#define SEED 4

/*
 * Parent @p owns a connection to peer *@k (its handle in *@pa); child
 * @c, forked from it, holds a reference.  With @child_first the child's
 * command ring is taken before the parent's in a round (its app comes
 * first), as happens when the child's id is lower: an ADOPT then meets
 * what the parent published in the same round.
 */
static void setup(struct sh *h, struct cl *p, struct cl *c, struct sh_peer_conn **k,
		  struct aconn *pa, bool child_first)
{
	struct cl x;

	CHECK(sh_init(h, ATTACH) == 0);
	if (child_first)
		CHECK_EQ_U64(cl_attach(h, &x, ATTACH, NULL, 0), 1);
	CHECK_EQ_U64(cl_attach(h, p, ATTACH, NULL, 0), 1);
	cl_cmd(p, (struct ss_shm_cmd){ .op = SS_CMD_LISTEN, .port = 8080, .cookie = 3 });
	sh_pump(h, 4);
	struct ss_shm_ev ev = EXPECT(p, SS_EV_LISTEN);
	CHECK_EQ_U64(ev.error, 0);
	*pa = accept_one(h, p, k, 43000, 8080, 3);
	if (child_first) {
		cl_close(&x);
		ss_app_hangup(&h->reg, x.a);
		sh_pump(h, 4);
		CHECK_EQ_U64(ss_app_reclaim(&h->reg), 1);
	}
	CHECK_EQ_U64(cl_attach_child(h, c, p), 1);
	CHECK(child_first ? c->a->id < p->a->id : c->a->id > p->a->id);
	INHERIT_OK(h, c, 1, 1);
}

static void teardown(struct sh *h, struct cl *p, struct cl *c)
{
	cl_close(c);
	cl_close(p);
	sh_fini(h);
}

/* The parent's events so far (data acknowledged): @acked bytes. */
static void parent_acked(struct cl *p, const struct aconn *pa, uint64_t acked)
{
	uint64_t rx = 0, got = 0;

	drain_counts(p, pa->slot, pa->gen, &rx, &got);
	CHECK_EQ_U64(rx, 0);
	CHECK_EQ_U64(got, acked);
}

/* The child adopts @pa: ADOPTED (checked: no error, @tx_acked in arg3,
 * @tx_queued in arg4, @flags) and the parent's MOVED.  Returns the
 * child's handle. */
static struct aconn adopt(struct sh *h, struct cl *c, struct cl *p, const struct aconn *pa,
			  uint32_t tx_acked, uint32_t tx_queued, uint8_t flags)
{
	CMD(c, .op = SS_CMD_ADOPT, .conn = pa->slot, .gen = pa->gen, .ip = p->a->id, .cookie = 5);
	sh_pump(h, 4);
	struct ss_shm_ev ev = EXPECT(c, SS_EV_ADOPTED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.arg3, tx_acked);
	CHECK_EQ_U64(ev.arg4, tx_queued);
	CHECK_EQ_U64(ev.flags, flags);
	struct aconn ca = take_conn(c, &ev);
	ev = EXPECT(p, SS_EV_MOVED);
	CHECK_EQ_U64(ev.conn, pa->slot);
	CHECK_EQ_U64(ev.gen, pa->gen);
	CHECK_EQ_U64(ev.flags, SS_EVF_HELD);
	return ca;
}

/* What the peer has read so far must be @n bytes of the owner's stream. */
static void peer_got(struct sh *h, struct sh_peer_conn *k, uint64_t n)
{
	uint64_t got = 0;
	bool bad = false;

	sh_advance(h, 200000, 10000);
	sh_peer_read_check(k, &got, SEED, &bad);
	CHECK_EQ_U64(got, n);
	CHECK(!bad);
}

/* The owner's transmit word as its library keeps it once shared (lib
 * sync.c), and its receive word. */
static uint64_t *word(struct cl *a, uint32_t slot)
{
	return &ss_app_sync(a->a, slot)->tx;
}

static uint64_t *rword(struct cl *a, uint32_t slot)
{
	return &ss_app_sync(a->a, slot)->rx;
}

/*
 * The parent published data and a shutdown in the very round the child's
 * ADOPT comes first: the parent's commands are carried out before the
 * move, so the child gets the connection with both (the old code moved
 * it first: the data was lost and the shutdown with it).
 */
static void test_adopt_drains_owner(void)
{
	struct sh h;
	struct cl p, c;
	struct sh_peer_conn *k;
	struct aconn pa;

	setup(&h, &p, &c, &k, &pa, true);
	/* A fresh handle's word: off, at the stream's start. */
	CHECK_EQ_U64(*word(&p, pa.slot), ss_sync_word(pa.gen, 0, 0));
	app_write(pa.tx, 0, 1000, SEED);
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 1000);
	CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = pa.slot, .gen = pa.gen);
	struct aconn ca = adopt(&h, &c, &p, &pa, 0, 1000, SS_EVF_SHUT_WR);
	NO_EVENT(&p);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_adopt_drained), 2);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed), 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_cmd_errors), 0);
	/* The old handle's word says MOVED; the new one's starts off. */
	CHECK_EQ_U64(*word(&p, pa.slot), ss_sync_word(pa.gen, SS_SYNC_MOVED, 0));
	CHECK_EQ_U64(*word(&c, ca.slot), ss_sync_word(ca.gen, 0, 1000));
	peer_got(&h, k, 1000);
	CHECK(k->c.f.flags & SS_TCPF_PEER_FIN);
	teardown(&h, &p, &c);
}

/*
 * The parent had committed bytes it had not posted yet (its TX was still
 * to come) when the child adopted: the service takes them from the word,
 * the parent's next commit fails on it, its late TX finds a dead handle.
 */
static void test_adopt_takes_committed(void)
{
	struct sh h;
	struct cl p, c;
	struct sh_peer_conn *k;
	struct aconn pa;

	setup(&h, &p, &c, &k, &pa, false);
	app_write(pa.tx, 0, 1000, SEED);
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 1000);
	sh_pump(&h, 4);
	parent_acked(&p, &pa, 1000);
	/* Shared from here on (the fork), then 3000 more committed. */
	*word(&p, pa.slot) = ss_sync_word(pa.gen, SS_SYNC_ON, 1000);
	app_write(pa.tx, 1000, 3000, SEED);
	uint64_t cur = ss_sync_word(pa.gen, SS_SYNC_ON, 1000);
	CHECK(__atomic_compare_exchange_n(word(&p, pa.slot), &cur,
					  ss_sync_word(pa.gen, SS_SYNC_ON, 4000), false,
					  __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	struct aconn ca = adopt(&h, &c, &p, &pa, 1000, 4000, 0);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed_bytes), 3000);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_sync_bad), 0);
	CHECK_EQ_U64(*word(&c, ca.slot), ss_sync_word(ca.gen, 0, 4000));
	/* The parent's next commit is refused... */
	cur = ss_sync_word(pa.gen, SS_SYNC_ON, 4000);
	CHECK(!__atomic_compare_exchange_n(word(&p, pa.slot), &cur,
					   ss_sync_word(pa.gen, SS_SYNC_ON, 4100), false,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	/* ...and its TX for the 3000 comes too late. */
	CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 3000);
	sh_pump(&h, 4);
	EXPECT_CMD_ERROR(&p, SS_CMD_TX, pa.slot, pa.gen, EBADF);
	uint64_t got = 0;
	bool bad = false;
	sh_advance(&h, 200000, 10000);
	CHECK_EQ_U64(sh_peer_read_check(k, &got, SEED, &bad), 4000);
	CHECK(!bad);
	/* The child goes on from there. */
	app_write(ca.tx, 4000, 500, SEED);
	CMD(&c, .op = SS_CMD_TX, .conn = ca.slot, .gen = ca.gen, .arg = 500);
	sh_pump(&h, 4);
	sh_advance(&h, 200000, 10000);
	CHECK_EQ_U64(sh_peer_read_check(k, &got, SEED, &bad), 500);
	CHECK(!bad);
	teardown(&h, &p, &c);
}

/*
 * The parent had read bytes it had not reported yet (its RX_DONE was
 * still to come) when the child adopted: the service takes the
 * consumption from the receive word, so the child does not read them
 * again; a receive word past what arrived is not believed.
 */
static void test_adopt_takes_consumed(void)
{
	for (int bad = 0; bad < 2; bad++) {
		struct sh h;
		struct cl p, c;
		struct sh_peer_conn *k;
		struct aconn pa;
		uint64_t rx = 0, acked = 0;

		setup(&h, &p, &c, &k, &pa, false);
		CHECK(sh_peer_write(k, 0, 3000, 9) == 0);
		ss_tcp_output(&k->c, h.now_us);
		sh_pump(&h, 8);
		drain_counts(&p, pa.slot, pa.gen, &rx, &acked);
		CHECK_EQ_U64(rx, 3000);
		/* Shared, then 1000 read (or, lying, 3001). */
		*rword(&p, pa.slot) = ss_sync_word(pa.gen, SS_SYNC_ON, bad ? 3001 : 1000);
		CMD(&c, .op = SS_CMD_ADOPT, .conn = pa.slot, .gen = pa.gen, .ip = p.a->id,
		    .cookie = 5);
		sh_pump(&h, 4);
		struct ss_shm_ev ev = EXPECT(&c, SS_EV_ADOPTED);
		CHECK_EQ_U64(ev.arg, bad ? 0 : 1000);
		CHECK_EQ_U64(ev.arg2, 3000);
		struct aconn ca = take_conn(&c, &ev);
		EXPECT(&p, SS_EV_MOVED);
		CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_rx_claimed), bad ? 0 : 1);
		CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_rx_claimed_bytes), bad ? 0 : 1000);
		CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_sync_bad), bad ? 1 : 0);
		CHECK_EQ_U64(*rword(&p, pa.slot), ss_sync_word(pa.gen, SS_SYNC_MOVED, 0));
		CHECK_EQ_U64(*rword(&c, ca.slot), ss_sync_word(ca.gen, 0, bad ? 0 : 1000));
		/* The bytes from there on are in the child's ring, in order. */
		bool same = true;
		for (uint32_t i = bad ? 0 : 1000; i < 3000; i++)
			same &= ca.rx[i & (RING - 1)] == sh_pat(i, 9);
		CHECK(same);
		teardown(&h, &p, &c);
	}
}

/*
 * Words the service must not believe: beyond the ring, behind what was
 * posted, another handle's, one already moved, more after the FIN.  The
 * move happens with what was posted; a word that is not ON is not even
 * looked at.
 */
static void test_adopt_bad_words(void)
{
	static const struct {
		const char *what;
		int64_t pos;      /* relative to the 200 posted */
		int gen_off;
		uint64_t flags;
		bool shut;        /* the parent shut down first */
		uint64_t bad;     /* app_move_sync_bad after */
	} cases[] = {
		{ "beyond the ring", RING + 1, 0, SS_SYNC_ON, false, 1 },
		{ "behind the posted data", -16, 0, SS_SYNC_ON, false, 1 },
		{ "another handle's", 100, 1, SS_SYNC_ON, false, 1 },
		{ "moved already", 100, 0, SS_SYNC_ON | SS_SYNC_MOVED, false, 1 },
		{ "data after the FIN", 100, 0, SS_SYNC_ON, true, 1 },
		{ "not kept (off)", 100, 0, 0, false, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sh h;
		struct cl p, c;
		struct sh_peer_conn *k;
		struct aconn pa;

		setup(&h, &p, &c, &k, &pa, false);
		app_write(pa.tx, 0, 200, SEED);
		CMD(&p, .op = SS_CMD_TX, .conn = pa.slot, .gen = pa.gen, .arg = 200);
		if (cases[i].shut)
			CMD(&p, .op = SS_CMD_SHUTDOWN, .conn = pa.slot, .gen = pa.gen);
		sh_pump(&h, 4);
		if (cases[i].shut) {
			CHECK_EQ_U64(EXPECT(&p, SS_EV_TX_ACKED).arg, 200);
			EXPECT(&p, SS_EV_FIN_ACKED);
		} else {
			parent_acked(&p, &pa, 200);
		}
		*word(&p, pa.slot) = ss_sync_word(pa.gen + (uint32_t)cases[i].gen_off,
						  cases[i].flags,
						  (uint32_t)(200 + cases[i].pos));
		adopt(&h, &c, &p, &pa, 200, 200,
		      cases[i].shut ? SS_EVF_SHUT_WR | SS_EVF_FIN_ACKED : 0);
		if (ctr(&h, SS_CTR_app_move_sync_bad) != cases[i].bad)
			fprintf(stderr, "    case: %s\n", cases[i].what);
		CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_sync_bad), cases[i].bad);
		CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed), 0);
		peer_got(&h, k, 200);
		teardown(&h, &p, &c);
	}
}

/*
 * The child, sharing the connection in turn (it forked too), committed
 * bytes and exited before it posted them: the hand-back takes them along
 * and the parent's copy has them as sent.
 */
static void test_handback_takes_committed(void)
{
	struct sh h;
	struct cl p, c;
	struct sh_peer_conn *k;
	struct aconn pa;

	setup(&h, &p, &c, &k, &pa, false);
	struct aconn ca = adopt(&h, &c, &p, &pa, 0, 0, 0);
	*word(&c, ca.slot) = ss_sync_word(ca.gen, SS_SYNC_ON, 0);
	app_write(ca.tx, 0, 700, SEED);
	*word(&c, ca.slot) = ss_sync_word(ca.gen, SS_SYNC_ON, 700);
	ss_app_hangup(&h.reg, c.a);
	sh_pump(&h, 8);
	CHECK_EQ_U64(c.a->state, SS_APP_DEAD);
	struct ss_shm_ev ev = EXPECT(&p, SS_EV_RETURNED);
	CHECK_EQ_U64(ev.error, 0);
	CHECK_EQ_U64(ev.arg3, 0);
	CHECK_EQ_U64(ev.arg4, 700);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed), 1);
	CHECK_EQ_U64(ctr(&h, SS_CTR_app_move_tx_claimed_bytes), 700);
	peer_got(&h, k, 700);
	CHECK_EQ_U64(ss_app_reclaim(&h.reg), 1);
	cl_close(&p);
	sh_fini(&h);
}

int main(void)
{
	test_adopt_drains_owner();
	test_adopt_takes_committed();
	test_adopt_takes_consumed();
	test_adopt_bad_words();
	test_handback_takes_committed();
	return check_done("test_stack_adopt_sync");
}
