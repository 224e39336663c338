/* tcpopt.c - POSIX layer: the TCP socket options the service carries out (TCP_NODELAY, TCP_CORK, TCP_MAXSEG, keepalive), with Linux's ranges. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "posix/posix.h"

/* Linux's defaults (include/net/tcp.h). */
#define KEEPIDLE_DEFAULT 7200
#define KEEPINTVL_DEFAULT 75
#define KEEPCNT_DEFAULT 9
#define MSS_DEFAULT 536 /* TCP_MAXSEG before the handshake, none set */

/* Where @s's options go now: its connection, or its listener (for the
 * connections it accepts), or nowhere yet (ssp_opts_push() later).  With
 * the command queue full, s->opts_unsent says so and the socket's next
 * call sends them all again (ssp_sock_current()) before anything else;
 * -1 (EAGAIN) then. */
static int opt_send(struct ssp_sock *s, unsigned opt, uint32_t val)
{
	int rc;

	if (s->state == SSP_S_CONNECTED && s->conn && !ssp_sock_closed(s))
		rc = ss_conn_setopt(s->conn, opt, val);
	else if (s->state == SSP_S_LISTEN && s->listen_done && !s->listen_err)
		rc = ss_listen_setopt(s->cx->ctx, s->listener, opt, val);
	else
		return 0;
	if (rc < 0) {
		s->opts_unsent = true;
		return -1;
	}
	ss_flush(s->cx->ctx);
	return 0;
}

int ssp_opt_set(struct ssp_sock *s, unsigned opt, int v)
{
	switch (opt) {
	case SS_OPT_NODELAY:
		s->nodelay = v != 0;
		break;
	case SS_OPT_CORK:
		s->cork = v != 0;
		break;
	case SS_OPT_KEEPALIVE:
		s->keepalive = v != 0;
		break;
	case SS_OPT_KEEPIDLE:
	case SS_OPT_KEEPINTVL:
		if (v < 1 || v > 32767) {
			errno = EINVAL;
			return -1;
		}
		if (opt == SS_OPT_KEEPIDLE)
			s->keepidle = v;
		else
			s->keepintvl = v;
		break;
	case SS_OPT_KEEPCNT:
		if (v < 1 || v > 127) {
			errno = EINVAL;
			return -1;
		}
		s->keepcnt = v;
		break;
	case SS_OPT_MAXSEG:
		if (v && (v < 88 || v > 32767)) {
			errno = EINVAL;
			return -1;
		}
		s->maxseg = v;
		break;
	default:
		errno = ENOPROTOOPT;
		return -1;
	}
	/* Stored either way: a full command queue only delays it (the
	 * socket's next call sends it, before its data). */
	(void)opt_send(s, opt, opt == SS_OPT_NODELAY || opt == SS_OPT_CORK ||
				       opt == SS_OPT_KEEPALIVE ? (uint32_t)(v != 0) : (uint32_t)v);
	return 0;
}

/* Connected or listening now: the options set before that the service has
 * not heard of (the MSS went with the connect). */
void ssp_opts_push(struct ssp_sock *s)
{
	s->opts_unsent = false;
	if (s->keepidle)
		opt_send(s, SS_OPT_KEEPIDLE, (uint32_t)s->keepidle);
	if (s->keepintvl)
		opt_send(s, SS_OPT_KEEPINTVL, (uint32_t)s->keepintvl);
	if (s->keepcnt)
		opt_send(s, SS_OPT_KEEPCNT, (uint32_t)s->keepcnt);
	if (s->keepalive)
		opt_send(s, SS_OPT_KEEPALIVE, 1);
	if (s->nodelay)
		opt_send(s, SS_OPT_NODELAY, 1);
	if (s->cork)
		opt_send(s, SS_OPT_CORK, 1);
	if (s->maxseg && s->state == SSP_S_LISTEN)
		opt_send(s, SS_OPT_MAXSEG, (uint32_t)s->maxseg);
}

/* TCP_MAXSEG as Linux reads it: the send MSS once connected, before that
 * the value set or 536. */
int ssp_maxseg_get(const struct ssp_sock *s)
{
	struct ss_shm_conn_info in;

	if (s->state == SSP_S_CONNECTED && s->conn && ss_conn_info(s->conn, &in) == 0 &&
	    in.snd_mss)
		return (int)in.snd_mss;
	return s->maxseg ? s->maxseg : MSS_DEFAULT;
}
