/* stack_client.h - applications driven on raw shared memory in the stack tests: attach, commands in, events out. */
#ifndef SS_TESTS_STACK_CLIENT_H
#define SS_TESTS_STACK_CLIENT_H

#include "stack_harness.h"

struct cl {
	struct ss_app *a;
	int sock[2]; /* -1: the harness's own app (sh_fini closes it) */
	uint32_t arx_cons, atx_prod;
	struct ss_shm_ev split; /* cl_ev(): the TX_ACKED of an RX slot */
	bool has_split;
};

static inline void cl_harness(struct sh *h, struct cl *c)
{
	memset(c, 0, sizeof(*c));
	c->a = h->app;
	c->sock[0] = c->sock[1] = -1;
}

/* Attaches another application with @line; returns ss_app_attach()'s
 * result, the reply line in @reply. */
static inline int cl_attach(struct sh *h, struct cl *c, const char *line, char *reply, size_t rlen)
{
	memset(c, 0, sizeof(*c));
	c->sock[0] = c->sock[1] = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, c->sock) != 0)
		return -1;
	int rc = ss_app_attach(&h->reg, c->sock[0], line);
	if (reply) {
		/* The fds riding along are dropped (closed) by the kernel. */
		ssize_t n = read(c->sock[1], reply, rlen - 1);
		reply[n > 0 ? n : 0] = '\0';
	}
	if (rc != 1) {
		close(c->sock[0]);
		close(c->sock[1]);
		c->sock[0] = c->sock[1] = -1;
		return rc;
	}
	for (uint32_t i = 0; i < h->reg.lim.max_apps; i++)
		if (h->reg.apps[i].sock_fd == c->sock[0])
			c->a = &h->reg.apps[i];
	return c->a ? 1 : -1;
}

static inline void cl_close(struct cl *c)
{
	if (c->sock[1] >= 0)
		close(c->sock[1]); /* sock[0] belongs to the registry */
	c->sock[1] = -1;
}

static inline void cl_cmd(struct cl *c, struct ss_shm_cmd cmd)
{
	struct ss_app_ctx *cx = &c->a->ctx[0];
	cx->atx_slot[c->atx_prod & (c->a->atx_slots - 1)] = cmd;
	c->atx_prod++;
	__atomic_store_n(&cx->atx->prod, c->atx_prod, __ATOMIC_RELEASE);
}

#define CMD(c, ...) cl_cmd((c), (struct ss_shm_cmd){ __VA_ARGS__ })

/* Next event, or false; an RX slot that carries a TX_ACKED as the two
 * events (sh_ev_split()). */
static inline bool cl_ev(struct cl *c, struct ss_shm_ev *ev)
{
	struct ss_app_ctx *cx = &c->a->ctx[0];
	uint32_t prod;

	if (c->has_split) {
		*ev = c->split;
		c->has_split = false;
		return true;
	}
	prod = __atomic_load_n(&cx->arx->prod, __ATOMIC_ACQUIRE);
	if (prod == c->arx_cons)
		return false;
	*ev = cx->arx_slot[c->arx_cons & (c->a->arx_slots - 1)];
	c->arx_cons++;
	__atomic_store_n(&cx->arx->cons, c->arx_cons, __ATOMIC_RELEASE);
	c->has_split = sh_ev_split(ev, &c->split);
	return true;
}

#endif
