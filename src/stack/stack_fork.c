/* stack_fork.c - sockets shared across fork: a child inherits its parent's ports and connections, adopts or releases them. */
#include "stack/stack_fork.h"
#include "stack/stack_app.h"
#include "stack/stack_conn.h"
#include "stack/stack_listen.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * A forked child is a separate application with its own region.  At
 * SS_CMD_INHERIT it becomes a member of its parent's port entries
 * (stack_listen.c) and gets a reference to each connection the parent
 * holds: the owner's handle (app id + token, slot, gen) in child->inh and
 * a count in sconn->holds.  While holds > 0 the owner's close is only
 * recorded (held_close); the last release performs it, as Linux sends
 * the FIN when the last process closes its descriptor.
 *
 * SS_CMD_ADOPT moves a connection into the caller's region (the first
 * process that uses it); the old owner keeps a reference to the new
 * handle, every other reference goes stale (the handle it names is
 * gone).  When an owner lets go of a connection others hold, it goes
 * back to one of them ("hand-back") rather than closing: on exit to any
 * holder, on close or abort only to a process it was forked from (one
 * that used the connection before; a child merely holding it keeps the
 * recorded close, so the FIN waits for it, as on Linux).
 *
 * These are rare control operations, so they may scan and allocate.
 */

static struct ss_sconn *inh_resolve(struct ss_stack *s, const struct ss_inh *r)
{
	if (r->owner_id >= s->reg->lim.max_apps)
		return NULL;
	struct ss_app *o = &s->reg->apps[r->owner_id];
	uint32_t st = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE);
	if ((st != SS_APP_ACTIVE && st != SS_APP_DYING) || o->token != r->owner_token)
		return NULL;
	return stack_conn_lookup_handle(s, o, r->slot, r->gen);
}

static int inh_push(struct ss_app *a, const struct ss_inh *r)
{
	if (a->n_inh == a->cap_inh) {
		uint32_t cap = a->cap_inh ? a->cap_inh * 2 : 64;
		struct ss_inh *n = realloc(a->inh, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		a->inh = n;
		a->cap_inh = cap;
	}
	a->inh[a->n_inh++] = *r;
	return 0;
}

static int64_t inh_find(const struct ss_app *a, uint32_t owner_id, uint32_t slot, uint32_t gen)
{
	for (uint32_t i = 0; i < a->n_inh; i++)
		if (a->inh[i].owner_id == owner_id && a->inh[i].slot == slot && a->inh[i].gen == gen)
			return i;
	return -1;
}

static void inh_remove(struct ss_app *a, uint32_t i)
{
	a->inh[i] = a->inh[--a->n_inh];
}

/* @a's reference to @sc's current handle, or -1. */
static int64_t inh_find_conn(const struct ss_app *a, const struct ss_sconn *sc)
{
	const struct ss_app *o = sc->app;

	for (uint32_t i = 0; i < a->n_inh; i++) {
		const struct ss_inh *r = &a->inh[i];
		if (r->owner_id == o->id && r->owner_token == o->token && r->slot == sc->slot &&
		    r->gen == sc->gen)
			return i;
	}
	return -1;
}

/* @anc is @a's parent, or its parent's parent, ... (tokens checked: a
 * parent that went away may have left its slot to another app). */
static bool app_descends(const struct ss_stack *s, const struct ss_app *a, const struct ss_app *anc)
{
	for (uint32_t hops = 0; hops < s->reg->lim.max_apps && a->parent_token; hops++) {
		if (a->parent_id >= s->reg->lim.max_apps)
			return false;
		const struct ss_app *p = &s->reg->apps[a->parent_id];
		if (p->token != a->parent_token)
			return false;
		if (p == anc)
			return true;
		a = p;
	}
	return false;
}

static bool conn_hand_back(struct ss_stack *s, struct ss_sconn *sc, bool closing);

/* One reference fewer; the last one carries out the owner's close. */
static void hold_drop(struct ss_stack *s, struct ss_sconn *sc)
{
	if (sc->holds == 0)
		return;
	if (--sc->holds == 0 && sc->held_close) {
		bool abort = sc->held_close == 2;
		sc->held_close = 0;
		stack_conn_app_close(s, sc, abort);
	}
}

bool stack_conn_close_held(struct ss_stack *s, struct ss_sconn *sc, bool abort)
{
	if (sc->holds == 0)
		return false;
	/* A process we were forked from still has it open: it goes back
	 * there (an abort too: on Linux SO_LINGER acts at the last close). */
	if (conn_hand_back(s, sc, true))
		return true;
	/* An abort wins over a close recorded earlier. */
	if (abort || !sc->held_close)
		sc->held_close = abort ? 2 : 1;
	/* The owner's handle is closed all the same: no more commands on it
	 * (EBADF) and no more events, as after any other close. */
	sc->flags |= SC_APP_CLOSED;
	return true;
}

/* Reference to (owner, slot): pushes and counts it. */
static bool inh_take(struct ss_app *child, struct ss_app *owner, struct ss_sconn *sc)
{
	struct ss_inh r = { .owner_id = owner->id, .owner_token = owner->token,
			    .slot = sc->slot, .gen = sc->gen };
	if (sc->holds == UINT16_MAX || inh_push(child, &r) != 0)
		return false;
	sc->holds++;
	return true;
}

void stack_cmd_inherit(struct ss_stack *s, struct ss_app *a, uint16_t ctx)
{
	struct ss_app *p = a->parent_id < s->reg->lim.max_apps ? &s->reg->apps[a->parent_id] : NULL;
	unsigned full = 0, joined, held = 0, failed = 0;

	if (a->inherited || !a->parent_token) {
		stack_post_port(s, a, ctx, SS_EV_INHERITED, 0, EINVAL, 0, 0, 0);
		return;
	}
	if (!p || __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != SS_APP_ACTIVE ||
	    p->token != a->parent_token) {
		stack_post_port(s, a, ctx, SS_EV_INHERITED, 0, ESRCH, 0, 0, 0);
		return;
	}
	a->inherited = true;
	joined = stack_listeners_inherit(s, p, a, ctx, &full);
	/* The connections the parent owns and has not closed... */
	for (uint32_t slot = 0; slot < p->max_conns; slot++) {
		struct ss_sconn *sc = p->slot_conn[slot];
		if (!sc || (sc->flags & SC_APP_CLOSED) || sc->held_close ||
		    !(sc->flags & SC_ANNOUNCED))
			continue;
		if (inh_take(a, p, sc))
			held++;
		else
			failed++;
	}
	/* ...and those it inherited itself and still holds. */
	for (uint32_t i = 0; i < p->n_inh; i++) {
		struct ss_sconn *sc = inh_resolve(s, &p->inh[i]);
		if (!sc)
			continue;
		struct ss_app *o = sc->app;
		if (inh_take(a, o, sc))
			held++;
		else
			failed++;
	}
	if (full)
		ss_ctr_add(s->ctr, SS_CTR_app_inherit_listener_full, full);
	if (failed)
		ss_ctr_add(s->ctr, SS_CTR_app_inherit_failed, failed);
	ss_ctr_inc(s->ctr, SS_CTR_app_inherits);
	stack_post_inherited(s, a, ctx, joined, held);
}

int stack_cmd_release(struct ss_stack *s, struct ss_app *a, const struct ss_shm_cmd *cmd)
{
	int64_t i = inh_find(a, cmd->ip, cmd->conn, cmd->gen);
	if (i < 0)
		return -EBADF;
	struct ss_sconn *sc = inh_resolve(s, &a->inh[i]);
	inh_remove(a, (uint32_t)i);
	if (!sc)
		return -EBADF; /* stale: adopted elsewhere, or the owner is gone */
	hold_drop(s, sc);
	return 0;
}

/* The stream's state for ADOPTED/RETURNED (SS_EVF_*). */
static uint8_t conn_ev_flags(const struct ss_sconn *sc)
{
	const struct ss_tcp_flow *f = &sc->tcp.f;
	uint8_t flags = 0;

	if (f->flags & SS_TCPF_PEER_FIN)
		flags |= SS_EVF_PEER_FIN;
	if (f->flags & SS_TCPF_FIN_QUEUED)
		flags |= SS_EVF_SHUT_WR;
	if (sc->tcp.error)
		flags |= SS_EVF_DEAD;
	return flags;
}

/*
 * The references naming handle (@o, @slot, @gen) go, but @skip's: each
 * holder is told (SS_EV_REF_GONE), so that a copy waiting for the
 * connection to come back fails instead (ENOTCONN).
 */
static void refs_gone(struct ss_stack *s, const struct ss_app *o, uint32_t slot, uint32_t gen,
		      const struct ss_app *skip)
{
	for (uint32_t i = 0; i < s->reg->lim.max_apps; i++) {
		struct ss_app *h = &s->reg->apps[i];
		uint32_t st = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
		if (h == skip || !h->n_inh || (st != SS_APP_ACTIVE && st != SS_APP_DYING))
			continue;
		for (uint32_t k = 0; k < h->n_inh;) {
			const struct ss_inh *r = &h->inh[k];
			if (r->owner_id != o->id || r->owner_token != o->token || r->slot != slot ||
			    r->gen != gen) {
				k++;
				continue;
			}
			inh_remove(h, k);
			if (st == SS_APP_ACTIVE && !h->broken)
				stack_post_simple(s, h, 0, SS_EV_REF_GONE, slot, gen, 0, o->id, 0);
		}
	}
}

/*
 * Moves @sc with its rings to @a: a new handle there (events to context
 * @ctx), the ring contents copied in place (with what the old owner had
 * committed or consumed, stack_conn_sync_claim), the old owner's slot freed;
 * the references to the old handle go (but @a's own: the caller's), so
 * holds is 0.  The old owner is told nothing here.  0, or -EINVAL (ring
 * sizes differ) or -EMFILE (no free slot), and then nothing changed.
 */
static int conn_move(struct ss_stack *s, struct ss_sconn *sc, struct ss_app *a, uint16_t ctx)
{
	struct ss_app *o = sc->app;
	uint32_t old_slot = sc->slot, old_gen = sc->gen;

	if (o->rxbuf_size != a->rxbuf_size || o->txbuf_size != a->txbuf_size)
		return -EINVAL;
	int64_t slot = ss_idpool_alloc(&a->slots);
	if (slot < 0)
		return -EMFILE;
	struct ss_tcp_ring rx, tx;
	/* The large rings: what the connection holds may not fit small ones
	 * (abi.h "Small rings that grow"). */
	stack_slot_rings(a, (uint32_t)slot, &rx, &tx);
	/* Past the checks: from here on the move happens. */
	stack_conn_sync_claim(s, sc);
	if (ss_tcp_rings_move(&sc->tcp, rx, tx) != 0) {
		ss_idpool_free(&a->slots, (uint32_t)slot);
		return -EINVAL;
	}
	if (sc->flags & SC_PENDING)
		stack_conn_unpend(sc);
	o->slot_conn[sc->slot] = NULL;
	ss_idpool_free(&o->slots, sc->slot);
	o->n_conns--;
	stack_conn_set_handle(s, sc, a, (uint32_t)slot, ctx);
	sc->held_close = 0;
	sc->flags &= (uint8_t)~SC_APP_CLOSED; /* a close went with the old handle */

	/* Everything the engine has not reported yet is in the positions. */
	sc->tcp.events &= SS_TCP_EV_CLOSED;
	sc->tcp.rx_new = 0;
	sc->tcp.tx_acked = 0;
	sc->ev_pending = 0;
	sc->rx_pending = sc->acked_pending = 0;
	if (sc->holds)
		refs_gone(s, o, old_slot, old_gen, a);
	sc->holds = 0;
	return 0;
}

int stack_cmd_adopt(struct ss_stack *s, struct ss_app *a, uint16_t ctx, const struct ss_shm_cmd *cmd)
{
	int64_t i = inh_find(a, cmd->ip, cmd->conn, cmd->gen);
	if (i < 0)
		return -EBADF;
	struct ss_sconn *sc = inh_resolve(s, &a->inh[i]);
	/* What the owner asked for on it before we took it comes first (its
	 * data, consumption, shutdown; a close may even hand it elsewhere):
	 * then look again. */
	unsigned drained = sc ? stack_app_drain(s, sc->app, sc->ctx) : 0;
	if (drained) {
		ss_ctr_add(s->ctr, SS_CTR_app_adopt_drained, drained);
		i = inh_find(a, cmd->ip, cmd->conn, cmd->gen);
		if (i < 0)
			return -EBADF;
		sc = inh_resolve(s, &a->inh[i]);
	}
	if (!sc) {
		inh_remove(a, (uint32_t)i);
		return -EBADF; /* closed, or adopted by another process */
	}
	struct ss_app *o = sc->app;
	uint32_t old_slot = sc->slot, old_gen = sc->gen;
	uint16_t old_ctx = sc->ctx;
	bool owner_closed = sc->held_close != 0;
	int rc = conn_move(s, sc, a, ctx);
	if (rc != 0)
		return rc;
	inh_remove(a, (uint32_t)i);
	sc->cookie = cmd->cookie;

	/* The old owner's handle dies: CLOSED if it had closed it.  Else it
	 * keeps the socket (a reference to the new handle) and gets the
	 * connection back when we let go. */
	if (owner_closed) {
		stack_post_simple(s, o, old_ctx, SS_EV_CLOSED, old_slot, old_gen, 0, 0, 0);
	} else {
		struct ss_inh r = { .owner_id = a->id, .owner_token = a->token,
				    .slot = sc->slot, .gen = sc->gen };
		bool keep = __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == SS_APP_ACTIVE &&
			    inh_push(o, &r) == 0;
		uint32_t ref[3] = { r.owner_id, r.slot, r.gen };
		if (keep)
			sc->holds = 1;
		stack_post_moved(s, o, old_ctx, old_slot, old_gen, keep ? ref : NULL);
	}
	stack_post_adopted(s, sc, conn_ev_flags(sc));
	ss_ctr_inc(s->ctr, SS_CTR_app_adopts);
	stack_conn_dirty(s, sc);
	return 0;
}

/* ---- hand-back: the owner lets go, a holder takes the connection ---- */

/* @h can take @sc now: same ring sizes, a free slot, room for the event. */
static bool holder_can_take(struct ss_stack *s, struct ss_app *h, const struct ss_sconn *sc)
{
	return h->rxbuf_size == sc->app->rxbuf_size && h->txbuf_size == sc->app->txbuf_size &&
	       h->slots.n_free > 0 && stack_post_room(s, h, 0, 1);
}

/*
 * The holder that takes @sc from its owner: a live app holding a
 * reference to it, preferring one the owner descends from (it used the
 * connection before); only such one with @ancestors_only.  NULL if none
 * (*@refused: one exists but cannot take it now); *@ref its reference.
 */
static struct ss_app *holder_pick(struct ss_stack *s, const struct ss_sconn *sc,
				  bool ancestors_only, uint32_t *ref, bool *refused)
{
	struct ss_app *best = NULL;
	bool best_anc = false;

	*refused = false;
	for (uint32_t i = 0; i < s->reg->lim.max_apps; i++) {
		struct ss_app *h = &s->reg->apps[i];
		if (h == sc->app || h->broken || !h->n_inh ||
		    __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != SS_APP_ACTIVE)
			continue;
		int64_t k = inh_find_conn(h, sc);
		if (k < 0)
			continue;
		bool anc = app_descends(s, sc->app, h);
		if ((ancestors_only && !anc) || (best && (best_anc || !anc)))
			continue;
		if (!holder_can_take(s, h, sc)) {
			*refused = true;
			continue;
		}
		best = h;
		best_anc = anc;
		*ref = (uint32_t)k;
	}
	return best;
}

/*
 * @sc's owner lets go of it (@closing: closes or aborts it; else it is
 * gone): hand it to a holder, which gets SS_EV_RETURNED; a closing owner
 * gets SS_EV_CLOSED.  True when done.
 */
static bool conn_hand_back(struct ss_stack *s, struct ss_sconn *sc, bool closing)
{
	struct ss_app *o = sc->app, *h;
	uint32_t k = 0, old_slot = sc->slot, old_gen = sc->gen;
	uint16_t old_ctx = sc->ctx;
	bool refused;

	if (!sc->holds || !(sc->flags & SC_ANNOUNCED))
		return false;
	h = holder_pick(s, sc, closing, &k, &refused);
	if (!h || conn_move(s, sc, h, 0) != 0) {
		if (h || refused)
			ss_ctr_inc(s->ctr, SS_CTR_app_handback_failed);
		return false;
	}
	uint64_t key = (uint64_t)h->inh[k].slot << 32 | h->inh[k].gen;
	inh_remove(h, k);
	sc->cookie = 0;
	if (closing)
		stack_post_simple(s, o, old_ctx, SS_EV_CLOSED, old_slot, old_gen, 0, 0, 0);
	stack_post_moved_in(s, sc, SS_EV_RETURNED, conn_ev_flags(sc), key);
	ss_ctr_inc(s->ctr, SS_CTR_app_handbacks);
	stack_conn_dirty(s, sc);
	return true;
}

void stack_fork_app_gone(struct ss_stack *s, struct ss_app *a)
{
	for (uint32_t slot = 0; slot < a->max_conns; slot++) {
		struct ss_sconn *sc = a->slot_conn[slot];
		if (!sc || !sc->holds || conn_hand_back(s, sc, false))
			continue;
		/* Nobody could take it: it is reset, and its holders told. */
		refs_gone(s, a, sc->slot, sc->gen, NULL);
		sc->holds = 0;
	}
}

void stack_inh_app_gone(struct ss_stack *s, struct ss_app *a)
{
	for (uint32_t i = 0; i < a->n_inh; i++) {
		struct ss_sconn *sc = inh_resolve(s, &a->inh[i]);
		if (sc)
			hold_drop(s, sc);
	}
	a->n_inh = 0;
}
