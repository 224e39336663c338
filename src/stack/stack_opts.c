/* stack_opts.c - socket options the applications set (SS_CMD_SETOPT): on connections, and on listeners for the connections they accept. */
#include "stack/stack_opts.h"
#include "stack/stack_conn.h"
#include "stack/stack_listen.h"

#include <errno.h>

_Static_assert(SS_OPT_NODELAY == SS_TCP_OPT_NODELAY && SS_OPT_CORK == SS_TCP_OPT_CORK &&
		       SS_OPT_KEEPALIVE == SS_TCP_OPT_KEEPALIVE &&
		       SS_OPT_KEEPIDLE == SS_TCP_OPT_KEEPIDLE &&
		       SS_OPT_KEEPINTVL == SS_TCP_OPT_KEEPINTVL &&
		       SS_OPT_KEEPCNT == SS_TCP_OPT_KEEPCNT && SS_OPT_MAXSEG == SS_TCP_OPT_MAXSEG &&
		       SS_OPT_MAX == SS_TCP_OPT_MAX && SS_OPT_MAX <= 32,
	       "the ABI's option ids are the engine's");

bool stack_opt_valid(uint32_t opt, uint32_t val)
{
	switch (opt) {
	case SS_OPT_NODELAY:
	case SS_OPT_CORK:
	case SS_OPT_KEEPALIVE:
		return true;
	case SS_OPT_KEEPIDLE:
	case SS_OPT_KEEPINTVL:
		return val >= 1 && val <= 32767;
	case SS_OPT_KEEPCNT:
		return val >= 1 && val <= 127;
	case SS_OPT_MAXSEG:
		return val == 0 || (val >= 88 && val <= 32767);
	default:
		return false;
	}
}

int stack_conn_setopt(struct ss_stack *s, struct ss_sconn *sc, uint32_t opt, uint32_t val)
{
	if (!stack_opt_valid(opt, val) || ss_tcp_setopt(&sc->tcp, opt, val, s->now_us) != 0)
		return -EINVAL;
	/* The round's flush sends what the option let go and syncs the
	 * timers (keepalive). */
	stack_conn_dirty(s, sc);
	return 0;
}

int stack_listen_setopt(struct ss_stack *s, struct ss_app *a, const struct ss_shm_cmd *cmd)
{
	struct ss_listener *l = stack_listener_of(s, a, cmd->conn);

	if (!l)
		return -EBADF;
	if (!stack_opt_valid(cmd->arg, cmd->ip))
		return -EINVAL;
	l->opt_set |= 1u << cmd->arg;
	l->opt_val[cmd->arg] = cmd->ip;
	return 0;
}

void stack_opts_inherit(struct ss_stack *s, const struct ss_listener *l, struct ss_sconn *sc)
{
	uint32_t set = l->opt_set;

	while (set) {
		unsigned id = (unsigned)__builtin_ctz(set);

		set &= set - 1;
		ss_tcp_setopt(&sc->tcp, id, l->opt_val[id], s->now_us);
	}
}
