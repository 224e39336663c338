/* core.c - POSIX layer core: libc resolution, fd table, attach on first use, event pump, blocking. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <unistd.h>

#include "posix/posix.h"

struct ssp_real ssp_real;

static void ssp_atfork_prepare(void);
static void ssp_atfork_parent(void);
static void ssp_atfork_child(void);

struct ssp_layer ssp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.evfd = -1,
	.next_cookie = 1,
	.cookies = { &ssp.cookies, &ssp.cookies },
	.waiters = { &ssp.waiters, &ssp.waiters },
};

/* ------------------------------------------------------------- libc */

#define RESOLVE(name) \
	do { \
		void *p_ = dlsym(RTLD_NEXT, #name); \
		if (p_) \
			memcpy(&ssp_real.name, &p_, sizeof(p_)); \
	} while (0)

static void real_resolve(void)
{
	RESOLVE(socket); RESOLVE(bind); RESOLVE(listen); RESOLVE(accept4);
	RESOLVE(connect); RESOLVE(close); RESOLVE(shutdown); RESOLVE(read);
	RESOLVE(write); RESOLVE(readv); RESOLVE(writev); RESOLVE(recvfrom);
	RESOLVE(sendto); RESOLVE(recvmsg); RESOLVE(sendmsg); RESOLVE(getsockopt);
	RESOLVE(setsockopt); RESOLVE(getsockname); RESOLVE(getpeername);
	RESOLVE(fcntl); RESOLVE(ioctl); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3);
	RESOLVE(epoll_create1); RESOLVE(epoll_ctl); RESOLVE(epoll_wait);
	RESOLVE(epoll_pwait); RESOLVE(poll); RESOLVE(ppoll); RESOLVE(select);
	RESOLVE(pselect);
	pthread_atfork(ssp_atfork_prepare, ssp_atfork_parent, ssp_atfork_child);
}

static pthread_once_t real_once = PTHREAD_ONCE_INIT;

void ssp_real_init(void)
{
	pthread_once(&real_once, real_resolve);
}

/* ---------------------------------------------------------------- lock */

void ssp_lock(void)
{
	pthread_mutex_lock(&ssp.lock);
}

void ssp_unlock(void)
{
	pthread_mutex_unlock(&ssp.lock);
}

struct ssp_sock *ssp_sock_enter(int fd)
{
	struct ssp_sock *s;

	ssp_lock();
	if (ssp.mode == SSP_M_FORKED && ssp_fd_get(fd))
		ssp_child_attach();
	s = ssp.mode == SSP_M_ON ? ssp_fd_sock(fd) : NULL;
	if (!s) {
		ssp_unlock();
		errno = ssp.mode == SSP_M_ON && ssp_fd_get(fd) ? ENOTSOCK : EBADF;
		return NULL;
	}
	/* Shared across fork: another process may have adopted it (or given
	 * it back) meanwhile; see that before using it (one load when no
	 * event waits). */
	if (s->shared && ring_arx_avail(&ssp.ctx->arx))
		ssp_pump();
	if (s->inh)
		ssp_sock_claim(s);
	return s;
}

int ssp_fail_unlock(int err)
{
	ssp_unlock();
	errno = err;
	return -1;
}

static void ssp_atfork_prepare(void)
{
	ssp_lock();
}

static void ssp_atfork_parent(void)
{
	ssp_unlock();
}

/* The child shares the parent's region: it must never post a command or
 * consume an event there.  It attaches as its own application (fork.c:
 * at once when fork() came through the shim, else on first use).  Only
 * this thread exists in the child: no other waiter. */
static void ssp_atfork_child(void)
{
	pthread_mutex_init(&ssp.lock, NULL);
	ssp_list_init(&ssp.waiters);
	ssp.poller = NULL;
	if (ssp.mode == SSP_M_ON)
		ssp.mode = SSP_M_FORKED;
}

/* ------------------------------------------------------------ logging */

#define LOG_KEYS 64
static const char *log_keys[LOG_KEYS];
static unsigned n_log_keys;

void ssp_log_once(const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	for (unsigned i = 0; i < n_log_keys; i++)
		if (log_keys[i] == key)
			return;
	if (n_log_keys < LOG_KEYS)
		log_keys[n_log_keys++] = key;
	n = snprintf(buf, sizeof(buf), "slipstream: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (ssp_real.write && ssp_real.write(2, buf, (size_t)n) < 0)
		return;
}

/* ------------------------------------------------------------ fd table */

/*
 * fd -> object.  Readers (the shim's routing test on every call) are
 * lock-free: the table pointer and each entry are loaded with acquire and
 * stored with release under the lock.  A grown table replaces the old one,
 * which is never freed (readers may still hold it; growth doubles, so the
 * waste is bounded by the final size) but stays linked from the new one.
 */
struct fdtab {
	struct fdtab *prev;
	size_t len;
	struct ssp_file *ent[];
};

static struct fdtab *fdtab;

struct ssp_file *ssp_fd_get(int fd)
{
	struct fdtab *t = __atomic_load_n(&fdtab, __ATOMIC_ACQUIRE);

	if (!t || fd < 0 || (size_t)fd >= t->len)
		return NULL;
	return __atomic_load_n(&t->ent[fd], __ATOMIC_ACQUIRE);
}

struct ssp_sock *ssp_fd_sock(int fd)
{
	struct ssp_file *f = ssp_fd_get(fd);

	return f && f->type == SSP_F_SOCK ? SSP_CONTAINER(f, struct ssp_sock, f) : NULL;
}

int ssp_fd_set(int fd, struct ssp_file *f)
{
	struct fdtab *t = fdtab, *nt;
	size_t len;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if (!t || (size_t)fd >= t->len) {
		struct rlimit rl;

		if (!f)
			return 0;
		len = t ? t->len * 2 : 1024;
		if (!t && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > len &&
		    rl.rlim_cur < (1u << 24))
			len = rl.rlim_cur;
		while (len <= (size_t)fd)
			len *= 2;
		nt = calloc(1, sizeof(*nt) + len * sizeof(nt->ent[0]));
		if (!nt) {
			errno = ENOMEM;
			return -1;
		}
		nt->len = len;
		nt->prev = t;
		if (t)
			for (size_t i = 0; i < t->len; i++)
				nt->ent[i] = t->ent[i];
		__atomic_store_n(&fdtab, nt, __ATOMIC_RELEASE);
		t = nt;
	}
	__atomic_store_n(&t->ent[fd], f, __ATOMIC_RELEASE);
	return 0;
}

void ssp_fd_foreach(void (*fn)(int fd, struct ssp_file *f, void *arg), void *arg)
{
	struct fdtab *t = fdtab;

	for (size_t i = 0; t && i < t->len; i++)
		if (t->ent[i])
			fn((int)i, t->ent[i], arg);
}

/* -------------------------------------------------------------- attach */

static uint32_t env_u32(const char *name, uint32_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return def;
	x = strtoul(v, &end, 0);
	if (*end || x == 0 || x > UINT32_MAX)
		return def;
	return (uint32_t)x;
}

int ssp_ready(void)
{
	struct ss_app_opts o;
	char why[128] = "";
	const char *strict;

	if (ssp.mode == SSP_M_KERNEL && ssp.strict) {
		errno = ssp.attach_err;
		return -1;
	}
	if (ssp.mode == SSP_M_ON || ssp.mode == SSP_M_KERNEL)
		return ssp.mode;
	if (ssp.mode == SSP_M_FORKED && ssp_child_attach() == 0)
		return ssp.mode;
	if (ssp.mode == SSP_M_DEAD || ssp.mode == SSP_M_FORKED) {
		errno = EBADF;
		return -1;
	}
	strict = getenv("SLIPSTREAM_STRICT");
	ssp.strict = strict && strcmp(strict, "1") == 0;
	memset(&o, 0, sizeof(o));
	o.contexts = 1;
	o.conns = env_u32("SLIPSTREAM_CONNS", 4096);
	o.rxbuf = o.txbuf = env_u32("SLIPSTREAM_BUF", 65536);
	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	ssp.app = ss_app_attach(&o);
	if (!ssp.app) {
		const char *path = getenv("SLIPSTREAM_SOCK");

		ssp.attach_err = errno;
		fprintf(stderr, "slipstream: service not reachable at %s (%s%s%s): %s\n",
			path && *path ? path : SS_DEFAULT_SOCK, strerror(errno),
			*why ? ": " : "", why,
			ssp.strict ? "failing (SLIPSTREAM_STRICT=1)" : "using the kernel stack");
		ssp.mode = SSP_M_KERNEL;
		if (ssp.strict) {
			errno = ssp.attach_err;
			return -1;
		}
		return ssp.mode;
	}
	ssp.ctx = ss_ctx_get(ssp.app, 0);
	ssp.evfd = ss_ctx_fd(ssp.ctx);
	ssp.rxbuf = ssp.app->rxbuf_size;
	ssp.txbuf = ssp.app->txbuf_size;
	ssp.pid = getpid();
	ssp.mode = SSP_M_ON;
	return ssp.mode;
}

/*
 * The service's address, for bind() to a specific address and for
 * getsockname() on sockets bound to INADDR_ANY: asked once with the
 * control socket's "stats" command ("ip": "a.b.c.d/len").  0 when unknown.
 */
uint32_t ssp_service_ip(void)
{
	const char *path = getenv("SLIPSTREAM_SOCK");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[16384];
	size_t len = 0;
	int fd;

	if (ssp.service_ip_tried)
		return ssp.service_ip;
	ssp.service_ip_tried = true;
	if (!path || !*path)
		path = SS_DEFAULT_SOCK;
	if (strlen(path) >= sizeof(sa.sun_path))
		return 0;
	strcpy(sa.sun_path, path);
	fd = ssp_real.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	if (ssp_real.connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    ssp_real.write(fd, "stats\n", 6) == 6) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		while (len < sizeof(buf) - 1 && ssp_real.poll(&pfd, 1, 2000) > 0) {
			ssize_t n = ssp_real.read(fd, buf + len, sizeof(buf) - 1 - len);

			if (n <= 0)
				break;
			len += (size_t)n;
			if (memchr(buf, '\n', len))
				break;
		}
	}
	ssp_real.close(fd);
	buf[len] = '\0';
	{
		const char *p = strstr(buf, "\"ip\": \"");
		unsigned a, b, c, d;

		if (p && sscanf(p + 7, "%u.%u.%u.%u", &a, &b, &c, &d) == 4 &&
		    a < 256 && b < 256 && c < 256 && d < 256)
			ssp.service_ip = a << 24 | b << 16 | c << 8 | d;
	}
	return ssp.service_ip;
}

/* ------------------------------------------------------------- sockets */

struct ssp_sock *ssp_sock_new(void)
{
	struct ssp_sock *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->f.type = SSP_F_SOCK;
	s->refs = 1;
	ssp_list_init(&s->in_cookie);
	ssp_list_init(&s->regs);
	s->nodelay = false; /* as Linux reports it; the service never delays segments */
	return s;
}

/* New readiness may exist: bump the edge sequence and queue every epoll
 * registration of @s for a look by the next epoll_wait. */
void ssp_sock_touch(struct ssp_sock *s)
{
	s->seq++;
	for (struct ssp_link *l = s->regs.next; l != &s->regs; l = l->next) {
		struct ssp_epreg *r = SSP_CONTAINER(l, struct ssp_epreg, in_sock);

		if (!r->on_rd) {
			r->on_rd = true;
			ssp_list_add_tail(&r->ep->rdlist, &r->in_rd);
			ssp_ep_wake(r->ep);
		}
	}
}

static void deferred_push(struct ss_conn *c, bool abort)
{
	if (ssp.n_deferred == ssp.cap_deferred) {
		uint32_t cap = ssp.cap_deferred ? ssp.cap_deferred * 2 : 64;
		struct ss_conn **q = realloc(ssp.deferred, cap * sizeof(*q));
		bool *a = realloc(ssp.deferred_abort, cap * sizeof(*a));

		if (q)
			ssp.deferred = q;
		if (a)
			ssp.deferred_abort = a;
		if (!q || !a) {
			ssp_log_once("deferred", "out of memory queueing a close: connection leaks");
			return;
		}
		ssp.cap_deferred = cap;
	}
	ssp.deferred[ssp.n_deferred] = c;
	ssp.deferred_abort[ssp.n_deferred++] = abort;
}

void ssp_conn_release(struct ss_conn *c, bool abort)
{
	int rc;

	ss_conn_set_user(c, NULL);
	rc = abort ? ss_abort(c) : ss_close(c);
	if (rc < 0 && errno == EAGAIN)
		deferred_push(c, abort);
}

/* @c is gone from under a close still waiting in the deferred list (it
 * moved to another process): forget it.  True when it was there. */
static bool deferred_forget(const struct ss_conn *c)
{
	for (uint32_t i = 0; i < ssp.n_deferred; i++) {
		if (ssp.deferred[i] != c)
			continue;
		ssp.n_deferred--;
		ssp.deferred[i] = ssp.deferred[ssp.n_deferred];
		ssp.deferred_abort[i] = ssp.deferred_abort[ssp.n_deferred];
		return true;
	}
	return false;
}

static void deferred_retry(void)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < ssp.n_deferred; i++) {
		struct ss_conn *c = ssp.deferred[i];
		bool abort = ssp.deferred_abort[i];
		int rc = abort ? ss_abort(c) : ss_close(c);

		if (rc < 0 && errno == EAGAIN) {
			ssp.deferred[k] = c;
			ssp.deferred_abort[k++] = abort;
		}
	}
	ssp.n_deferred = k;
}

static void accq_free(struct ssp_sock *s)
{
	while (s->accq.n) {
		struct ss_conn *c = s->accq.q[s->accq.head];

		s->accq.head = (s->accq.head + 1) % s->accq.cap;
		s->accq.n--;
		ssp_conn_release(c, true);
	}
	free(s->accq.q);
	s->accq.q = NULL;
	s->accq.cap = 0;
}

static int accq_push(struct ssp_sock *s, struct ss_conn *c)
{
	struct ssp_accq *a = &s->accq;

	if (a->n == a->cap) {
		uint32_t cap = a->cap ? a->cap * 2 : 16;
		struct ss_conn **q = malloc(cap * sizeof(*q));

		if (!q)
			return -1;
		for (uint32_t i = 0; i < a->n; i++)
			q[i] = a->q[(a->head + i) % a->cap];
		free(a->q);
		a->q = q;
		a->head = 0;
		a->cap = cap;
	}
	a->q[(a->head + a->n) % a->cap] = c;
	a->n++;
	return 0;
}

/* Last fd closed and no call still using @s: tear down. */
static void sock_free(struct ssp_sock *s)
{
	if (ssp.mode == SSP_M_ON) {
		switch (s->state) {
		case SSP_S_LISTEN:
			if (s->listen_done && !s->listen_err)
				ss_listen_close(ssp.ctx, s->listener);
			accq_free(s);
			break;
		case SSP_S_CONNECTED:
			if (s->inh)
				ss_release(ssp.ctx, s->inh_owner, s->inh_slot, s->inh_gen);
			else if (s->conn)
				ssp_conn_release(s->conn, s->linger_on && s->linger_s == 0);
			break;
		case SSP_S_AWAY: /* our reference to where the connection went */
			ss_release(ssp.ctx, s->inh_owner, s->inh_slot, s->inh_gen);
			break;
		default:
			if (s->has_entry)
				ss_listen_close(ssp.ctx, s->entry);
			break;
		}
		ss_flush(ssp.ctx);
	}
	/* A pending LISTENING/CONNECTED finds no socket and is undone in
	 * ssp_event. */
	if (!ssp_list_empty(&s->in_cookie))
		ssp_list_del(&s->in_cookie);
	free(s->accq.q);
	free(s);
}

void ssp_sock_put(struct ssp_sock *s)
{
	if (--s->refs <= 0 && s->hold <= 0)
		sock_free(s);
}

void ssp_sock_unhold(struct ssp_sock *s)
{
	if (--s->hold <= 0 && s->refs <= 0)
		sock_free(s);
}

/* ------------------------------------------------------------- events */

static struct ssp_sock *cookie_find(uint64_t cookie)
{
	for (struct ssp_link *l = ssp.cookies.next; l != &ssp.cookies; l = l->next) {
		struct ssp_sock *s = SSP_CONTAINER(l, struct ssp_sock, in_cookie);

		if (s->cookie == cookie)
			return s;
	}
	return NULL;
}

static void ev_listening(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (!e->error && e->type == SS_EVENT_LISTENING)
			ss_listen_close(ssp.ctx, e->listener);
		return;
	}
	s->listen_done = true;
	s->listen_err = e->error ? e->error : 0;
	if (e->type == SS_EVENT_CMD_ERROR && !s->listen_err)
		s->listen_err = EINVAL;
	s->listener = e->listener;
	/* A listener keeps its cookie: ACCEPTED events carry it. */
	if (s->listen_err)
		ssp_list_del(&s->in_cookie);
	ssp_sock_touch(s);
}

static void ev_connected(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (e->conn)
			ssp_conn_release(e->conn, true);
		return;
	}
	ssp_list_del(&s->in_cookie);
	if (e->type == SS_EVENT_CONNECTED && !e->error && e->conn) {
		s->state = SSP_S_CONNECTED;
		s->conn = e->conn;
		ss_conn_set_user(e->conn, s);
	} else {
		s->state = SSP_S_FAILED;
		s->err = e->error ? e->error : ECONNREFUSED;
	}
	ssp_sock_touch(s);
}

static void ev_bound(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (!e->error && e->type == SS_EVENT_BOUND)
			ss_listen_close(ssp.ctx, e->listener); /* nobody waits: give it up */
		return;
	}
	ssp_list_del(&s->in_cookie);
	s->cookie = 0;
	s->bind_done = true;
	s->bind_err = e->error ? e->error : e->type == SS_EVENT_BOUND ? 0 : EINVAL;
	if (!s->bind_err) {
		s->has_entry = true;
		s->entry = e->listener;
		s->bind_port = e->local_port;
	}
}

static void ev_adopted(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (e->type == SS_EVENT_ADOPTED && e->conn)
			ssp_conn_release(e->conn, false);
		return;
	}
	ssp_list_del(&s->in_cookie);
	s->cookie = 0;
	s->adopt_done = true;
	if (e->type == SS_EVENT_ADOPTED && e->conn) {
		s->adopt_err = 0;
		s->conn = e->conn;
		ss_conn_set_user(e->conn, s);
	} else {
		s->adopt_err = e->error ? e->error : EBADF;
	}
}

/* A connection handed back to us (fork.c): to the socket holding the
 * reference it replaces. */
static void ev_returned(const struct ss_event *e)
{
	struct ssp_sock *s;

	if (!e->conn)
		return; /* the library ran out of memory and refused it */
	s = ssp_ref_find(e);
	if (s)
		ssp_sock_returned(s, e->conn);
	else
		ssp_conn_release(e->conn, false); /* closed here meanwhile */
}

static void ssp_event(const struct ss_event *e)
{
	struct ssp_sock *s;

	switch (e->type) {
	case SS_EVENT_LISTENING:
		ev_listening(e, cookie_find(e->cookie));
		return;
	case SS_EVENT_CONNECTED:
		ev_connected(e, cookie_find(e->cookie));
		return;
	case SS_EVENT_ACCEPTED:
		s = cookie_find(e->cookie);
		if (!s || s->state != SSP_S_LISTEN) {
			/* Listener gone (closed): refuse. */
			ssp_conn_release(e->conn, true);
			return;
		}
		if (!e->conn)
			return; /* the library ran out of memory and refused it */
		if (accq_push(s, e->conn) < 0) {
			ssp_conn_release(e->conn, true);
			return;
		}
		ssp_sock_touch(s);
		return;
	case SS_EVENT_BOUND:
		ev_bound(e, cookie_find(e->cookie));
		return;
	case SS_EVENT_INHERITED:
		ssp.inherit_done = true;
		ssp.inherit_err = e->error;
		return;
	case SS_EVENT_ADOPTED:
		if (e->bytes)
			ev_returned(e);
		else
			ev_adopted(e, cookie_find(e->cookie));
		return;
	case SS_EVENT_MOVED:
		if (!e->conn) {
			/* A reference of ours is gone (fork.c). */
			ssp_ref_gone(e->listener, (uint32_t)(e->cookie >> 32), (uint32_t)e->cookie);
			return;
		}
		/* Another process of ours adopted it (fork): ours is away
		 * until it comes back (fork.c). */
		s = ss_conn_user(e->conn);
		deferred_forget(e->conn);
		if (s) {
			ssp_sock_moved(s, e);
		} else if (e->bytes) {
			/* Closed here meanwhile: let go of the reference too. */
			ss_release(ssp.ctx, e->listener, (uint32_t)(e->cookie >> 32),
				   (uint32_t)e->cookie);
		}
		return;
	case SS_EVENT_CMD_ERROR:
		if (e->cmd_op == SS_OP_BIND) {
			ev_bound(e, cookie_find(e->cookie));
			return;
		}
		if (e->cmd_op == SS_OP_ADOPT) {
			ev_adopted(e, cookie_find(e->cookie));
			return;
		}
		if (e->cmd_op == SS_OP_INHERIT) {
			ssp.inherit_done = true;
			ssp.inherit_err = e->error ? e->error : EINVAL;
			return;
		}
		if (e->cmd_op == SS_OP_RELEASE || e->cmd_op == SS_OP_LISTEN_ARM)
			return; /* already gone: nothing to undo */
		if (e->cmd_op == SS_OP_CONNECT) {
			s = cookie_find(e->cookie);
			if (s && s->state == SSP_S_CONNECTING)
				ev_connected(e, s);
			return;
		}
		if (e->cmd_op == SS_OP_LISTEN) {
			s = cookie_find(e->cookie);
			if (s)
				ev_listening(e, s);
			return;
		}
		ssp_log_once("cmd_error", "the service rejected a command (op %d): %s",
			     e->cmd_op, strerror(e->error));
		return;
	case SS_EVENT_DATA:
	case SS_EVENT_SENT:
	case SS_EVENT_PEER_CLOSED:
	case SS_EVENT_RESET:
	case SS_EVENT_ERROR:
		s = e->conn ? ss_conn_user(e->conn) : NULL;
		if (!s)
			return;
		if (e->type == SS_EVENT_RESET || e->type == SS_EVENT_ERROR)
			s->err = e->error;
		ssp_sock_touch(s);
		return;
	case SS_EVENT_CLOSED:
	default:
		return;
	}
}

void ssp_pump(void)
{
	struct ss_event ev[64];
	bool disarmed, any = false;
	int n;

	if (ssp.mode != SSP_M_ON)
		return;
	disarmed = ssp.ctx->armed; /* ss_poll disarms: the poller must re-arm */
	do {
		n = ss_poll(ssp.ctx, ev, 64);
		for (int i = 0; i < n; i++)
			ssp_event(&ev[i]);
		any |= n > 0;
	} while (n == 64);
	if (ssp.n_deferred)
		deferred_retry();
	if (!ssp_list_empty(&ssp.waiters))
		ssp_wake_others(any, disarmed);
}

/* ------------------------------------------------------------- waiting */

int64_t ssp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t ssp_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : ssp_now_ms() + timeout_ms;
}

/* Milliseconds to @deadline_ms for poll(): -1 forever, 0 when passed. */
int ssp_ms_left(int64_t deadline_ms)
{
	int64_t left;

	if (deadline_ms < 0)
		return -1;
	left = deadline_ms - ssp_now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

/*
 * Several threads may block at once, on one context.  Only one of them,
 * the poller, arms the context (sets the sleeping flag the service looks
 * at) and waits on its eventfd; the others wait on their own eventfd.
 * Whoever pumps events (ssp_pump) wakes every registered waiter, because
 * the events may be theirs; and a pump that disarmed the context (any
 * ss_poll does) wakes the poller so that it arms again.  A poller that
 * leaves hands the role on by waking the others.  Only the poller ever
 * arms, so two blocked threads never disarm each other in a loop.
 */
static pthread_key_t waiter_key;
static pthread_once_t waiter_once = PTHREAD_ONCE_INIT;

static void waiter_free(void *p)
{
	struct ssp_waiter *w = p;

	if (w->efd >= 0)
		ssp_real.close(w->efd);
	free(w);
}

static void waiter_key_make(void)
{
	if (pthread_key_create(&waiter_key, waiter_free) != 0)
		waiter_key = (pthread_key_t)-1;
}

struct ssp_waiter *ssp_waiter_self(void)
{
	struct ssp_waiter *w;

	pthread_once(&waiter_once, waiter_key_make);
	if (waiter_key == (pthread_key_t)-1)
		return NULL;
	w = pthread_getspecific(waiter_key);
	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	ssp_list_init(&w->link);
	ssp_list_init(&w->in_ep);
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0 || pthread_setspecific(waiter_key, w) != 0) {
		ssp_log_once("waiter", "no eventfd for a waiting thread: it naps instead");
		waiter_free(w);
		return NULL;
	}
	return w;
}

static void waiter_kick(struct ssp_waiter *w)
{
	uint64_t one = 1;

	if (ssp_real.write(w->efd, &one, sizeof(one)) < 0)
		return; /* counter saturated: it is readable anyway */
}

static void waiters_kick_all(void)
{
	for (struct ssp_link *l = ssp.waiters.next; l != &ssp.waiters; l = l->next)
		waiter_kick(SSP_CONTAINER(l, struct ssp_waiter, link));
}

int ssp_wait_begin(struct ssp_waiter *w)
{
	/* Whatever this thread queued must reach the service before it
	 * sleeps (the poller's arm flushes too; a follower must as well). */
	ss_flush(ssp.ctx);
	if (!ssp.poller) {
		if (ss_ctx_arm(ssp.ctx))
			return -1;
		ssp.poller = w;
	}
	ssp_list_add_tail(&ssp.waiters, &w->link);
	return ssp.poller == w;
}

void ssp_wait_end(struct ssp_waiter *w)
{
	uint64_t v;
	bool was_poller = ssp.poller == w;

	ssp_list_del(&w->link);
	if (ssp_real.read(w->efd, &v, sizeof(v)) < 0)
		v = 0; /* nothing there */
	if (was_poller)
		ssp.poller = NULL;
	ssp_pump();
	if (was_poller && !ssp_list_empty(&ssp.waiters))
		waiters_kick_all(); /* one of them takes over the context */
}

void ssp_wake_others(bool events, bool disarmed)
{
	if (events)
		waiters_kick_all();
	else if (disarmed && ssp.poller)
		waiter_kick(ssp.poller);
}

int ssp_block(int64_t deadline_ms, const sigset_t *mask)
{
	struct ssp_waiter *w = ssp_waiter_self();
	struct pollfd pfd[2];
	int left, rc, err, role, n = 0;

	left = ssp_ms_left(deadline_ms);
	if (!w) {
		/* No eventfd of our own: nap briefly and re-check. */
		ssp_pump();
		if (left == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ssp_unlock();
		rc = ssp_real.poll(NULL, 0, left < 0 || left > 5 ? 5 : left);
		ssp_lock();
		ssp_pump();
		return 0;
	}
	role = ssp_wait_begin(w);
	if (role < 0) {
		ssp_pump();
		return 0;
	}
	if (left == 0) {
		ssp_wait_end(w);
		errno = ETIMEDOUT;
		return -1;
	}
	pfd[n++] = (struct pollfd){ .fd = w->efd, .events = POLLIN };
	if (role == 1)
		pfd[n++] = (struct pollfd){ .fd = ssp.evfd, .events = POLLIN };
	ssp_unlock();
	if (mask) {
		struct timespec ts = { left / 1000, (left % 1000) * 1000000L };

		rc = ssp_real.ppoll(pfd, (nfds_t)n, left < 0 ? NULL : &ts, mask);
	} else {
		rc = ssp_real.poll(pfd, (nfds_t)n, left);
	}
	err = errno;
	ssp_lock();
	ssp_wait_end(w);
	if (rc < 0 && err == EINTR) {
		errno = EINTR;
		return -1;
	}
	return 0;
}

bool ssp_block_until(const bool *done, int64_t deadline_ms)
{
	while (!*done)
		if (ssp_block(deadline_ms, NULL) < 0 && errno == ETIMEDOUT)
			return false;
	return true;
}
