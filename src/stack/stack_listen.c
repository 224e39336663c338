/* stack_listen.c - port entries: bind, listen, SO_REUSEPORT, members shared across fork, the member a new connection goes to. */
#include "stack/stack_listen.h"
#include "stack/stack_app.h"
#include "stack/stack_conn.h"

#include <errno.h>
#include <string.h>

#define BACKLOG_MAX 4096u
#define BACKLOG_DEFAULT 128u

static bool app_usable(const struct ss_app *a)
{
	return __atomic_load_n(&a->state, __ATOMIC_ACQUIRE) == SS_APP_ACTIVE && !a->broken;
}

/* A port another entry holds, unless both sides asked for SO_REUSEPORT. */
static bool port_conflict(const struct ss_stack *s, uint16_t port, bool reuseport)
{
	for (uint32_t i = 0; i < s->lim.max_listeners; i++) {
		const struct ss_listener *l = &s->listeners[i];
		if (l->state != SS_LST_FREE && l->port == port && !(reuseport && l->reuseport))
			return true;
	}
	return false;
}

bool stack_port_in_use(const struct ss_stack *s, uint16_t port)
{
	return port_conflict(s, port, false);
}

/* bind(port 0): an ephemeral port no entry holds, from a seeded start. */
static int pick_free_port(struct ss_stack *s, uint16_t *out)
{
	uint32_t lo = s->lim.local_port_lo, span = s->lim.local_port_hi - lo + 1;
	uint32_t start = (uint32_t)((s->ts_seed ^ (s->now_us * 0x9e3779b97f4a7c15ull)) >> 40) % span;
	for (uint32_t i = 0; i < span; i++) {
		uint16_t p = (uint16_t)(lo + (start + i) % span);
		if (!stack_port_in_use(s, p)) {
			*out = p;
			return 0;
		}
	}
	return -EADDRINUSE;
}

static int member_index(const struct ss_listener *l, const struct ss_app *a)
{
	for (unsigned i = 0; i < l->n_members; i++)
		if (l->m[i].app == a)
			return (int)i;
	return -1;
}

static void member_add(struct ss_listener *l, struct ss_app *a, uint16_t ctx, uint64_t cookie)
{
	l->m[l->n_members++] = (struct ss_lmember){ .app = a, .cookie = cookie, .ctx = ctx };
	__atomic_store_n(&a->n_listeners, a->n_listeners + 1, __ATOMIC_RELAXED);
}

/* @a lets go of entry @li; the last member frees it (and resets the
 * connections still in its handshake). */
static void member_leave(struct ss_stack *s, uint32_t li, struct ss_app *a)
{
	struct ss_listener *l = &s->listeners[li];
	int k = member_index(l, a);
	if (k < 0)
		return;
	/* Shift, not swap: the order is the members' age ("the oldest member
	 * while none has armed"), and the turn stays with the same member. */
	memmove(&l->m[k], &l->m[k + 1], (size_t)(l->n_members - k - 1) * sizeof(l->m[0]));
	l->n_members--;
	memset(&l->m[l->n_members], 0, sizeof(l->m[0]));
	if ((unsigned)k < l->next)
		l->next--;
	if (l->next >= l->n_members)
		l->next = 0;
	__atomic_store_n(&a->n_listeners, a->n_listeners - 1, __ATOMIC_RELAXED);
	if (l->n_members)
		return;
	stack_listener_abort_syn(s, li);
	memset(l, 0, sizeof(*l));
	__atomic_store_n(&s->n_listeners, s->n_listeners - 1, __ATOMIC_RELAXED);
}

/* A free entry for @a, claiming @port; -errno when none. */
static int64_t entry_new(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint16_t port,
			 bool reuseport, uint64_t cookie)
{
	for (uint32_t i = 0; i < s->lim.max_listeners; i++) {
		struct ss_listener *l = &s->listeners[i];
		if (l->state != SS_LST_FREE)
			continue;
		memset(l, 0, sizeof(*l));
		l->state = SS_LST_BOUND;
		l->port = port;
		l->reuseport = reuseport;
		member_add(l, a, ctx, cookie);
		__atomic_store_n(&s->n_listeners, s->n_listeners + 1, __ATOMIC_RELAXED);
		return i;
	}
	return -ENOBUFS;
}

/* Claims a port: 0 picks one; below 1024 needs CAP_NET_BIND_SERVICE. */
static int64_t port_claim(struct ss_stack *s, struct ss_app *a, uint16_t ctx, uint16_t port,
			  bool reuseport, uint64_t cookie)
{
	if (port == 0) {
		int rc = pick_free_port(s, &port);
		if (rc)
			return rc;
	} else if (port < 1024 && !a->cap_bind) {
		return -EACCES;
	} else if (port_conflict(s, port, reuseport)) {
		return -EADDRINUSE;
	}
	return entry_new(s, a, ctx, port, reuseport, cookie);
}

/* Entry @li if @a is one of its members, else NULL. */
static struct ss_listener *entry_of(struct ss_stack *s, struct ss_app *a, uint32_t li)
{
	if (li >= s->lim.max_listeners || s->listeners[li].state == SS_LST_FREE ||
	    member_index(&s->listeners[li], a) < 0)
		return NULL;
	return &s->listeners[li];
}

struct ss_listener *stack_listener_of(struct ss_stack *s, struct ss_app *a, uint32_t li)
{
	return entry_of(s, a, li);
}

void stack_cmd_bind(struct ss_stack *s, struct ss_app *a, uint16_t ctx, const struct ss_shm_cmd *cmd)
{
	int64_t li = port_claim(s, a, ctx, cmd->port, cmd->arg & SS_BIND_REUSEPORT, cmd->cookie);
	uint16_t port = li >= 0 ? s->listeners[li].port : 0;

	stack_post_port(s, a, ctx, SS_EV_BOUND, li < 0 ? UINT32_MAX : (uint32_t)li,
			(uint16_t)(li < 0 ? -li : 0), 0, port, cmd->cookie);
}

void stack_cmd_listen(struct ss_stack *s, struct ss_app *a, uint16_t ctx,
		      const struct ss_shm_cmd *cmd)
{
	struct ss_listener *l;
	int64_t li;

	if (cmd->flags & SS_CMDF_BOUND) {
		l = entry_of(s, a, cmd->conn);
		li = l ? (int64_t)cmd->conn : -EBADF;
		if (l && l->state == SS_LST_LISTEN && l->m[member_index(l, a)].listened)
			li = -EINVAL; /* listening already: listen() again only resizes */
	} else {
		li = cmd->port == 0 ? -EINVAL : port_claim(s, a, ctx, cmd->port, false, cmd->cookie);
	}
	if (li < 0) {
		stack_post_port(s, a, ctx, SS_EV_LISTEN, UINT32_MAX, (uint16_t)-li, 0, 0,
				cmd->cookie);
		return;
	}
	l = &s->listeners[li];
	/* Listening already: another member listened first (one socket on
	 * Linux, whose second listen() only resizes).  This one joins in. */
	bool first = l->state != SS_LST_LISTEN;
	if (first) {
		l->state = SS_LST_LISTEN;
		l->backlog = cmd->arg == 0 ? BACKLOG_DEFAULT
			     : cmd->arg > BACKLOG_MAX ? BACKLOG_MAX : cmd->arg;
		l->n_syn = 0;
	}
	int k = member_index(l, a);
	l->m[k].ctx = ctx;
	l->m[k].cookie = cmd->cookie;
	l->m[k].listened = true;
	stack_post_port(s, a, ctx, SS_EV_LISTEN, (uint32_t)li, 0, l->backlog, l->port, cmd->cookie);
	if (!first)
		return;
	/* The members that share the socket (fork) listen with it, each on
	 * its own context under its own cookie: unasked LISTEN events. */
	for (unsigned i = 0; i < l->n_members; i++) {
		struct ss_lmember *m = &l->m[i];
		if ((int)i == k || !app_usable(m->app))
			continue;
		stack_post_listen_member(s, m->app, m->ctx, (uint32_t)li, l->backlog, l->port,
					 m->cookie);
		stack_post_publish(m->app, m->ctx); /* before the caller sees its answer */
	}
}

int stack_cmd_listen_close(struct ss_stack *s, struct ss_app *a, uint32_t li)
{
	if (!entry_of(s, a, li))
		return -EBADF;
	member_leave(s, li, a);
	return 0;
}

/*
 * shutdown() of a listening socket: the socket itself stops, in every
 * process that shares it (Linux's inet_shutdown -> tcp_disconnect on a
 * listener).  Handshakes in progress are reset; connections already
 * announced are the members' to reset (their ACCEPTED events come before
 * the STOPPED each member gets).  The entry is bound again, or given up
 * by every member with SS_STOP_RELEASE (a port the service picked).
 */
int stack_cmd_listen_stop(struct ss_stack *s, struct ss_app *a, uint32_t li, uint32_t flags)
{
	struct ss_listener *l = entry_of(s, a, li);
	bool release = flags & SS_STOP_RELEASE;
	if (!l)
		return -EBADF;
	if (l->state != SS_LST_LISTEN)
		return -EINVAL;
	stack_listener_abort_syn(s, li);
	l->state = SS_LST_BOUND;
	for (unsigned i = 0; i < l->n_members; i++) {
		struct ss_lmember *m = &l->m[i];
		m->armed = m->listened = false;
		if (!app_usable(m->app))
			continue;
		stack_post_port(s, m->app, m->ctx, SS_EV_LISTEN_STOPPED, li, 0, release, l->port,
				m->cookie);
		if (m->app != a)
			stack_post_publish(m->app, m->ctx); /* before the caller sees its answer */
	}
	while (release && l->state != SS_LST_FREE)
		member_leave(s, li, l->m[l->n_members - 1].app);
	return 0;
}

int stack_cmd_listen_arm(struct ss_stack *s, struct ss_app *a, uint32_t li)
{
	struct ss_listener *l = entry_of(s, a, li);
	if (!l)
		return -EBADF;
	l->m[member_index(l, a)].armed = true;
	return 0;
}

int stack_port_take(struct ss_stack *s, struct ss_app *a, uint32_t li, uint16_t *port)
{
	struct ss_listener *l = entry_of(s, a, li);
	if (!l || l->state != SS_LST_BOUND)
		return -EINVAL;
	*port = l->port;
	member_leave(s, li, a);
	return 0;
}

/* Flow hash for SO_REUSEPORT groups: the same 4-tuple always picks the same entry. */
static uint32_t flow_hash(const struct ss_flow_key *k)
{
	uint64_t h = ((uint64_t)k->remote_ip << 32 | (uint32_t)k->remote_port << 16 | k->local_port) *
		     0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

struct ss_listener *stack_listener_find(struct ss_stack *s, const struct ss_flow_key *k,
					uint32_t *idx)
{
	uint32_t n = 0, want = 0, first = UINT32_MAX;

	for (int pass = 0; pass < 2; pass++) {
		uint32_t seen = 0;
		for (uint32_t i = 0; i < s->lim.max_listeners; i++) {
			struct ss_listener *l = &s->listeners[i];
			if (l->state != SS_LST_LISTEN || l->port != k->local_port)
				continue;
			if (pass == 0) {
				if (first == UINT32_MAX)
					first = i;
				n++;
				if (!l->reuseport)
					break; /* a port without SO_REUSEPORT has one entry */
			} else if (seen++ == want) {
				*idx = i;
				return l;
			}
		}
		if (n == 0)
			return NULL;
		if (n == 1) {
			*idx = first;
			return &s->listeners[first];
		}
		want = flow_hash(k) % n;
	}
	return NULL;
}

struct ss_lmember *stack_listener_pick(struct ss_listener *l)
{
	unsigned n = l->n_members;

	for (unsigned i = 0; i < n; i++) {
		struct ss_lmember *m = &l->m[(l->next + i) % n];
		if (m->armed && app_usable(m->app)) {
			l->next = (uint8_t)((l->next + i + 1) % n);
			return m;
		}
	}
	/* Nobody asked yet: the oldest member that can take it. */
	for (unsigned i = 0; i < n; i++)
		if (app_usable(l->m[i].app))
			return &l->m[i];
	return NULL;
}

unsigned stack_listeners_inherit(struct ss_stack *s, struct ss_app *parent, struct ss_app *child,
				 uint16_t ctx, unsigned *full)
{
	unsigned joined = 0;

	*full = 0;
	for (uint32_t i = 0; i < s->lim.max_listeners; i++) {
		struct ss_listener *l = &s->listeners[i];
		if (l->state == SS_LST_FREE)
			continue;
		int k = member_index(l, parent);
		if (k < 0 || member_index(l, child) >= 0)
			continue;
		if (l->n_members == SS_LISTENER_MEMBERS) {
			(*full)++;
			continue;
		}
		member_add(l, child, ctx, l->m[k].cookie);
		joined++;
		/* The child's copy of the socket is as the parent's was at
		 * fork(); the entry may have changed since (the parent listened
		 * or stopped before this INHERIT came): say how it is now, as a
		 * member is told when it changes (before INHERITED, so the
		 * child's first use sees it). */
		if (l->state == SS_LST_LISTEN)
			stack_post_listen_member(s, child, ctx, i, l->backlog, l->port,
						 l->m[k].cookie);
		else
			stack_post_port(s, child, ctx, SS_EV_LISTEN_STOPPED, i, 0, 0, l->port,
					l->m[k].cookie);
	}
	return joined;
}

void stack_listeners_app_gone(struct ss_stack *s, struct ss_app *a)
{
	for (uint32_t i = 0; i < s->lim.max_listeners; i++)
		if (s->listeners[i].state != SS_LST_FREE)
			member_leave(s, i, a);
}
