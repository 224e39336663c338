/* opt.c - POSIX layer socket options, names, fcntl and ioctl on accelerated sockets. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "posix/posix.h"

static int get_int(const void *val, socklen_t len, int *out)
{
	if (!val || len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(out, val, sizeof(int));
	return 0;
}

static int tv_to_ms(const void *val, socklen_t len, int *ms)
{
	struct timeval tv;
	long long v;

	if (!val || len < (socklen_t)sizeof(tv)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&tv, val, sizeof(tv));
	if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000) {
		errno = EDOM;
		return -1;
	}
	v = (long long)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
	*ms = v > 1000000000 ? 1000000000 : (int)v;
	return 0;
}

int ssp_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	int v = 0;

	if (!s)
		return -1;
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVTIMEO:
			if (tv_to_ms(val, len, &s->rcvtimeo_ms) < 0)
				return ssp_fail_unlock(errno);
			goto ok;
		case SO_SNDTIMEO:
			if (tv_to_ms(val, len, &s->sndtimeo_ms) < 0)
				return ssp_fail_unlock(errno);
			goto ok;
		case SO_LINGER: {
			struct linger l;

			if (!val || len < (socklen_t)sizeof(l))
				return ssp_fail_unlock(EINVAL);
			memcpy(&l, val, sizeof(l));
			s->linger_on = l.l_onoff != 0;
			s->linger_s = l.l_linger; /* close() waits (sock.c) */
			goto ok;
		}
		default:
			break;
		}
		if (get_int(val, len, &v) < 0)
			return ssp_fail_unlock(errno);
		switch (name) {
		case SO_REUSEADDR: s->reuseaddr = v; goto ok;
		case SO_REUSEPORT: s->reuseport = v; goto ok;
		case SO_KEEPALIVE:
			if (ssp_opt_set(s, SS_OPT_KEEPALIVE, v) < 0)
				return ssp_fail_unlock(errno);
			goto ok;
		case SO_RCVBUF: case SO_SNDBUF: case SO_RCVBUFFORCE: case SO_SNDBUFFORCE:
			/* The rings are sized at attach (SLIPSTREAM_BUF). */
			goto ok;
		case SO_OOBINLINE: case SO_PRIORITY: case SO_RCVLOWAT: case SO_SNDLOWAT:
			goto ok;
		default:
			break;
		}
	} else if (level == IPPROTO_TCP) {
		if (name == TCP_CONGESTION) {
			/* Congestion control is the service's (--cc, --cc-app):
			 * as Linux answers an algorithm the caller may not set. */
			ssp_log_once("tcp_congestion", "setsockopt(TCP_CONGESTION): the service chooses "
				     "the algorithm (slipstreamd --cc / --cc-app): EPERM");
			return ssp_fail_unlock(EPERM);
		}
		if (get_int(val, len, &v) < 0)
			return ssp_fail_unlock(errno);
		switch (name) {
		case TCP_NODELAY: case TCP_CORK: case TCP_KEEPIDLE: case TCP_KEEPINTVL:
		case TCP_KEEPCNT: case TCP_MAXSEG: {
			unsigned id = name == TCP_NODELAY ? SS_OPT_NODELAY :
				      name == TCP_CORK ? SS_OPT_CORK :
				      name == TCP_KEEPIDLE ? SS_OPT_KEEPIDLE :
				      name == TCP_KEEPINTVL ? SS_OPT_KEEPINTVL :
				      name == TCP_KEEPCNT ? SS_OPT_KEEPCNT : SS_OPT_MAXSEG;

			if (ssp_opt_set(s, id, v) < 0)
				return ssp_fail_unlock(errno);
			goto ok;
		}
		case TCP_QUICKACK: case TCP_USER_TIMEOUT:
		case TCP_DEFER_ACCEPT: case TCP_FASTOPEN:
			ssp_log_once("tcp_opt_ignored", "TCP option %d accepted and ignored", name);
			goto ok;
		default:
			break;
		}
	} else if (level == IPPROTO_IP && (name == IP_TOS || name == IP_TTL)) {
		ssp_log_once("ip_opt_ignored", "IP option %d accepted and ignored", name);
		goto ok;
	}
	ssp_log_once("setsockopt", "setsockopt(level %d, option %d) not supported: ENOPROTOOPT",
		     level, name);
	return ssp_fail_unlock(ENOPROTOOPT);
ok:
	ssp_unlock();
	return 0;
}

static void put_opt(void *val, socklen_t *len, const void *src, socklen_t n)
{
	if (*len > n)
		*len = n;
	memcpy(val, src, *len);
}

/* Linux's struct tcp_info goes on past glibc's: the fields up to
 * tcpi_bytes_received, in Linux's order (include/uapi/linux/tcp.h). */
struct ssp_tcp_info {
	struct tcp_info base;
	uint64_t tcpi_pacing_rate, tcpi_max_pacing_rate;
	uint64_t tcpi_bytes_acked, tcpi_bytes_received;
};

/* Segments (Linux counts windows in them) from @bytes. */
static uint32_t info_segs(uint32_t bytes, uint32_t mss)
{
	return mss ? (uint32_t)(((uint64_t)bytes + mss - 1) / mss) : 0;
}

/*
 * The engine's state (abi.h: enum ss_tcp_state order, RFC 9293) as Linux
 * shows it on a socket still open: TIME_WAIT is not the socket's any more
 * (Linux's tcp_time_wait hands the connection to a timewait entry and the
 * socket is TCP_CLOSE), so it reads TCP_CLOSE as after LAST_ACK.
 */
static const uint8_t info_state_linux[] = {
	TCP_CLOSE,       /* CLOSED */
	TCP_SYN_SENT,    /* SYN_SENT */
	TCP_SYN_RECV,    /* SYN_RCVD */
	TCP_ESTABLISHED, /* ESTABLISHED */
	TCP_FIN_WAIT1,   /* FIN_WAIT_1 */
	TCP_FIN_WAIT2,   /* FIN_WAIT_2 */
	TCP_CLOSING,     /* CLOSING */
	TCP_CLOSE,       /* TIME_WAIT */
	TCP_CLOSE_WAIT,  /* CLOSE_WAIT */
	TCP_LAST_ACK,    /* LAST_ACK */
};

/* Milliseconds since service time @t_us (CLOCK_MONOTONIC, microseconds;
 * 0: never, read as 0). */
static uint32_t info_since_ms(uint64_t t_us)
{
	struct timespec ts;
	uint64_t now_us;

	if (!t_us)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	return now_us > t_us ? (uint32_t)((now_us - t_us) / 1000u) : 0;
}

/* The service's figures (abi.h struct ss_shm_conn_info, published at
 * every change of the engine's state and every control interval) over
 * the layer's own; @shut_wr: this process's shutdown(SHUT_WR) or close,
 * which the service may not have taken yet.  False when the record is
 * not this connection's (yet). */
static bool tcp_info_service(const struct ss_conn *c, bool shut_wr, struct ssp_tcp_info *x)
{
	struct tcp_info *ti = &x->base;
	struct ss_shm_conn_info in;
	uint8_t st;

	if (ss_conn_info(c, &in) != 0 || in.gen != c->gen ||
	    in.state >= sizeof(info_state_linux))
		return false;
	st = info_state_linux[in.state];
	/* Linux's shutdown() changes the state at once. */
	if (shut_wr && st == TCP_ESTABLISHED)
		st = TCP_FIN_WAIT1;
	else if (shut_wr && st == TCP_CLOSE_WAIT)
		st = TCP_LAST_ACK;
	ti->tcpi_state = st;
	if (!in.snd_mss)
		return true; /* no figures yet */
	ti->tcpi_ca_state = in.ca_state;
	ti->tcpi_retransmits = in.retransmits;
	ti->tcpi_backoff = in.backoff;
	ti->tcpi_options = (uint8_t)(((in.options & SS_INFO_OPT_TS) ? TCPI_OPT_TIMESTAMPS : 0) |
				     ((in.options & SS_INFO_OPT_SACK) ? TCPI_OPT_SACK : 0) |
				     ((in.options & SS_INFO_OPT_WSCALE) ? TCPI_OPT_WSCALE : 0) |
				     ((in.options & SS_INFO_OPT_ECN) ? TCPI_OPT_ECN : 0));
	ti->tcpi_snd_wscale = in.snd_wscale & 15;
	ti->tcpi_rcv_wscale = in.rcv_wscale & 15;
	ti->tcpi_rto = in.rto_us;
	ti->tcpi_snd_mss = in.snd_mss;
	ti->tcpi_rcv_mss = in.rcv_mss;
	ti->tcpi_advmss = in.rcv_mss;
	ti->tcpi_rtt = in.srtt_us;
	ti->tcpi_rttvar = in.rttvar_us;
	ti->tcpi_snd_cwnd = info_segs(in.snd_cwnd, in.snd_mss);
	ti->tcpi_snd_ssthresh = in.snd_ssthresh == UINT32_MAX ? 0x7fffffffu /* Linux's "none" */
				 : info_segs(in.snd_ssthresh, in.snd_mss);
	ti->tcpi_unacked = info_segs(in.unacked, in.snd_mss);
	ti->tcpi_sacked = info_segs(in.sacked, in.snd_mss);
	ti->tcpi_lost = info_segs(in.lost, in.snd_mss);
	ti->tcpi_retrans = info_segs(in.retrans, in.snd_mss);
	ti->tcpi_total_retrans = in.total_retrans;
	if (in.pmtu)
		ti->tcpi_pmtu = in.pmtu;
	ti->tcpi_last_data_sent = info_since_ms(in.last_data_sent_us);
	ti->tcpi_last_data_recv = info_since_ms(in.last_data_recv_us);
	ti->tcpi_last_ack_recv = info_since_ms(in.last_ack_recv_us);
	ti->tcpi_reordering = 3; /* Linux's initial (sysctl tcp_reordering) */
	x->tcpi_pacing_rate = in.pacing_rate ? in.pacing_rate : UINT64_MAX; /* Linux: ~0 unpaced */
	x->tcpi_max_pacing_rate = UINT64_MAX;
	x->tcpi_bytes_acked = in.bytes_acked;
	x->tcpi_bytes_received = in.bytes_received;
	return true;
}

/*
 * TCP_INFO: the engine's state and figures (RTT, window, MSS, losses,
 * retransmissions, pacing rate, bytes) as the service last published
 * them, over what this process knows: a reset or both FINs done it has
 * taken are TCP_CLOSE, and until the service's record is this
 * connection's the state comes from the events taken.
 */
static void tcp_info_fill(const struct ssp_sock *s, struct ssp_tcp_info *x)
{
	const struct ss_conn *c = s->conn;
	struct tcp_info *ti = &x->base;

	memset(x, 0, sizeof(*x));
	switch (s->state) {
	case SSP_S_LISTEN: ti->tcpi_state = TCP_LISTEN; return;
	case SSP_S_CONNECTING: ti->tcpi_state = TCP_SYN_SENT; return;
	case SSP_S_AWAY: ti->tcpi_state = TCP_ESTABLISHED; return; /* in another process */
	case SSP_S_CONNECTED: break;
	default: ti->tcpi_state = TCP_CLOSE; return;
	}
	if (!c || ssp_sock_closed(s)) {
		ti->tcpi_state = TCP_CLOSE;
		return;
	}
	ti->tcpi_snd_mss = ti->tcpi_rcv_mss = ti->tcpi_advmss = 1460;
	ti->tcpi_pmtu = 1500;
	ti->tcpi_rcv_space = ssp.rxbuf;
	ti->tcpi_unacked = (c->tx_tail - c->tx_pend - c->tx_acked + 1459) / 1460;
	if (tcp_info_service(c, c->shut_wr || s->shut_wr, x))
		return;
	if (c->peer_fin)
		ti->tcpi_state = c->shut_wr ? TCP_LAST_ACK : TCP_CLOSE_WAIT;
	else if (c->shut_wr)
		ti->tcpi_state = c->fin_acked ? TCP_FIN_WAIT2 : TCP_FIN_WAIT1;
	else
		ti->tcpi_state = TCP_ESTABLISHED;
}

int ssp_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	int v;

	if (!s)
		return -1;
	if (!val || !len)
		return ssp_fail_unlock(EFAULT);
	ssp_sock_current(s); /* SO_ERROR, TCP_INFO: as current as Linux's */
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVTIMEO: case SO_SNDTIMEO: {
			int ms = name == SO_RCVTIMEO ? s->rcvtimeo_ms : s->sndtimeo_ms;
			struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

			put_opt(val, len, &tv, sizeof(tv));
			goto ok;
		}
		case SO_LINGER: {
			struct linger l = { s->linger_on, s->linger_s };

			put_opt(val, len, &l, sizeof(l));
			goto ok;
		}
		case SO_ERROR:
			v = s->err;
			s->err = 0;
			break;
		case SO_TYPE: v = SOCK_STREAM; break;
		case SO_DOMAIN: v = AF_INET; break;
		case SO_PROTOCOL: v = IPPROTO_TCP; break;
		case SO_ACCEPTCONN: v = s->state == SSP_S_LISTEN; break;
		case SO_REUSEADDR: v = s->reuseaddr; break;
		case SO_REUSEPORT: v = s->reuseport; break;
		case SO_KEEPALIVE: v = s->keepalive; break;
		case SO_RCVBUF: v = (int)ssp.rxbuf; break;
		case SO_SNDBUF: v = (int)ssp.txbuf; break;
		default: goto unsupported;
		}
	} else if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_NODELAY: v = s->nodelay; break;
		case TCP_CORK: v = s->cork; break;
		case TCP_KEEPIDLE: v = s->keepidle ? s->keepidle : 7200; break;
		case TCP_KEEPINTVL: v = s->keepintvl ? s->keepintvl : 75; break;
		case TCP_KEEPCNT: v = s->keepcnt ? s->keepcnt : 9; break;
		case TCP_MAXSEG: v = ssp_maxseg_get(s); break;
		case TCP_INFO: {
			struct ssp_tcp_info ti;

			tcp_info_fill(s, &ti);
			put_opt(val, len, &ti, sizeof(ti));
			goto ok;
		}
		case TCP_CONGESTION: {
			/* The service's algorithm for this connection (it, not
			 * the application, decides); before the handshake, or
			 * unknown: "reno", as the layer has always said. */
			char cc_name[16] = "reno";
			struct ss_shm_conn_info in;

			if (s->conn && ss_conn_info(s->conn, &in) == 0 && in.cc_name[0]) {
				memcpy(cc_name, in.cc_name, sizeof(cc_name));
				cc_name[sizeof(cc_name) - 1] = '\0';
			}
			put_opt(val, len, cc_name, sizeof(cc_name));
			goto ok;
		}
		default: goto unsupported;
		}
	} else {
		goto unsupported;
	}
	put_opt(val, len, &v, sizeof(v));
ok:
	ssp_unlock();
	return 0;
unsupported:
	ssp_log_once("getsockopt", "getsockopt(level %d, option %d) not supported: ENOPROTOOPT",
		     level, name);
	return ssp_fail_unlock(ENOPROTOOPT);
}

static void name_out(struct sockaddr *sa, socklen_t *len, uint32_t ip, uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(ip),
	};

	/* Truncated to the caller's buffer, but *len says the full size (as
	 * Linux's getsockname/getpeername do). */
	socklen_t cap = *len;
	memcpy(sa, &sin, cap < sizeof(sin) ? cap : sizeof(sin));
	*len = sizeof(sin);
}

int ssp_getsockname(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	uint32_t ip = 0;
	uint16_t port = 0;

	if (!s)
		return -1;
	if (!sa || !len)
		return ssp_fail_unlock(EFAULT);
	ssp_sock_current(s); /* a connect may have been answered */
	if (s->state == SSP_S_CONNECTED) {
		ss_conn_endpoints(s->conn, &ip, &port, NULL, NULL);
	} else if (s->state == SSP_S_AWAY) {
		ip = s->ref_lip;
		port = s->ref_lport;
	} else {
		/* Bound; or a listener that shutdown() stopped, whose port
		 * Linux still shows after giving it up. */
		ip = s->bind_ip;
		port = s->bind_port;
	}
	name_out(sa, len, ip, port);
	ssp_unlock();
	return 0;
}

int ssp_getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	uint32_t ip;
	uint16_t port;

	if (!s)
		return -1;
	if (!sa || !len)
		return ssp_fail_unlock(EFAULT);
	ssp_sock_current(s); /* a reset or the last FIN may be waiting */
	if (s->state == SSP_S_AWAY) {
		ip = s->ref_rip;
		port = s->ref_rport;
	} else if (s->state != SSP_S_CONNECTED || ssp_sock_closed(s)) {
		/* Linux: no peer once the connection is in TCP_CLOSE. */
		return ssp_fail_unlock(ENOTCONN);
	} else {
		ss_conn_endpoints(s->conn, NULL, NULL, &ip, &port);
	}
	name_out(sa, len, ip, port);
	ssp_unlock();
	return 0;
}

/* F_DUPFD* are routed to ssp_dup by the shim; the rest of fcntl here. */
int ssp_fcntl(int fd, int cmd, uintptr_t arg)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	int rc;

	if (!s)
		return -1;
	switch (cmd) {
	case F_GETFL:
		rc = O_RDWR | (s->nonblock ? O_NONBLOCK : 0);
		break;
	case F_SETFL:
		s->nonblock = (arg & O_NONBLOCK) != 0;
		rc = 0;
		break;
	case F_GETFD:
	case F_SETFD:
		/* FD_CLOEXEC lives on the eventfd behind the number. */
		rc = ssp_real.fcntl(fd, cmd, arg);
		break;
	default:
		ssp_log_once("fcntl", "fcntl(cmd %d) on an accelerated socket: EINVAL", cmd);
		return ssp_fail_unlock(EINVAL);
	}
	ssp_unlock();
	return rc;
}

int ssp_ioctl(int fd, unsigned long req, void *arg)
{
	struct ssp_sock *s = ssp_sock_enter(fd);
	int v;

	if (!s)
		return -1;
	if (req == FIONREAD || req == SIOCOUTQ)
		ssp_sock_current(s); /* bytes received or acknowledged meanwhile */
	switch (req) {
	case FIONREAD: {
		struct iovec iov[2];

		if (s->state == SSP_S_LISTEN)
			return ssp_fail_unlock(EINVAL);
		v = s->state == SSP_S_CONNECTED ? (int)ss_recv_peek(s->conn, iov) : 0;
		memcpy(arg, &v, sizeof(v));
		break;
	}
	case SIOCOUTQ:
		v = s->state == SSP_S_CONNECTED ? (int)ss_send_queued(s->conn) : 0;
		memcpy(arg, &v, sizeof(v));
		break;
	case FIONBIO:
		memcpy(&v, arg, sizeof(v));
		s->nonblock = v != 0;
		break;
	case FIOCLEX:
	case FIONCLEX:
		v = ssp_real.ioctl(fd, req, arg);
		ssp_unlock();
		return v;
	default:
		ssp_log_once("ioctl", "ioctl(0x%lx) on an accelerated socket: ENOTTY", req);
		return ssp_fail_unlock(ENOTTY);
	}
	ssp_unlock();
	return 0;
}
