/* stack_fork.c - sockets shared across fork: a child inherits its parent's ports and connections, adopts or releases them. */
#include "service/stack_internal.h"

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
 * the FIN when the last process closes its descriptor.  SS_CMD_ADOPT
 * moves a connection into the caller's region; every other reference
 * goes stale (the owner's handle they name is gone).  These are rare
 * control operations, so they may scan and allocate.
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
	(void)s;
	if (sc->holds == 0)
		return false;
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

int stack_cmd_adopt(struct ss_stack *s, struct ss_app *a, uint16_t ctx, const struct ss_shm_cmd *cmd)
{
	int64_t i = inh_find(a, cmd->ip, cmd->conn, cmd->gen);
	if (i < 0)
		return -EBADF;
	struct ss_sconn *sc = inh_resolve(s, &a->inh[i]);
	if (!sc) {
		inh_remove(a, (uint32_t)i);
		return -EBADF; /* closed, or adopted by another process */
	}
	struct ss_app *o = sc->app;
	if (o->rxbuf_size != a->rxbuf_size || o->txbuf_size != a->txbuf_size)
		return -EINVAL;
	int64_t slot = ss_idpool_alloc(&a->slots);
	if (slot < 0)
		return -EMFILE;
	struct ss_tcp_ring rx = { ss_app_rx_ring(a, (uint32_t)slot), a->rxbuf_size };
	struct ss_tcp_ring tx = { ss_app_tx_ring(a, (uint32_t)slot), a->txbuf_size };
	if (ss_tcp_rings_move(&sc->tcp, rx, tx) != 0) {
		ss_idpool_free(&a->slots, (uint32_t)slot);
		return -EINVAL;
	}
	inh_remove(a, (uint32_t)i);

	/* The old owner's handle dies: CLOSED if it had closed it, else MOVED. */
	uint32_t old_slot = sc->slot, old_gen = sc->gen;
	uint16_t old_ctx = sc->ctx;
	bool owner_closed = sc->held_close != 0;
	if (sc->flags & SC_PENDING)
		stack_pending_unlink(s, sc);
	o->slot_conn[old_slot] = NULL;
	ss_idpool_free(&o->slots, old_slot);
	o->n_conns--;
	stack_post_simple(s, o, old_ctx, owner_closed ? SS_EV_CLOSED : SS_EV_MOVED, old_slot,
			  old_gen, 0, 0, 0);
	stack_conn_set_handle(s, sc, a, (uint32_t)slot, ctx);
	sc->cookie = cmd->cookie;
	sc->holds = 0;        /* the others' references name a dead handle now */
	sc->held_close = 0;
	sc->flags &= (uint8_t)~SC_APP_CLOSED; /* the old owner's close went with its handle */

	/* Everything the engine has not reported yet is in the positions. */
	const struct ss_tcp_flow *f = &sc->tcp.f;
	sc->tcp.events &= SS_TCP_EV_CLOSED;
	sc->tcp.rx_new = 0;
	sc->tcp.tx_acked = 0;
	sc->ev_pending = 0;
	sc->rx_pending = sc->acked_pending = 0;
	uint8_t flags = 0;
	if (f->flags & SS_TCPF_PEER_FIN)
		flags |= SS_EVF_PEER_FIN;
	if (f->flags & SS_TCPF_FIN_QUEUED)
		flags |= SS_EVF_SHUT_WR;
	if (sc->tcp.error)
		flags |= SS_EVF_DEAD;
	stack_post_adopted(s, sc, flags);
	ss_ctr_inc(s->ctr, SS_CTR_app_adopts);
	stack_conn_dirty(s, sc);
	return 0;
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
