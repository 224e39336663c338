/* core.c - POSIX layer core: libc resolution, fd table, attach on first use, sockets, the event pump. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
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

/* Every context's lock initialised statically (ISO C has no ranges). */
#define CX_INIT { .lock = PTHREAD_MUTEX_INITIALIZER, .evfd = -1 }
#define CX_INIT8 CX_INIT, CX_INIT, CX_INIT, CX_INIT, CX_INIT, CX_INIT, CX_INIT, CX_INIT
_Static_assert(SSP_MAX_CX == 64, "CX_INIT8 x 8 initialises every context");

struct ssp_layer ssp = {
	.glock = PTHREAD_MUTEX_INITIALIZER,
	.next_cookie = 1,
	.cx = { CX_INIT8, CX_INIT8, CX_INIT8, CX_INIT8, CX_INIT8, CX_INIT8, CX_INIT8, CX_INIT8 },
};

/* Leaf locks of this file: ssp_log_once's keys, the service address. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ip_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* ------------------------------------------------------------- entry */

struct ssp_sock *ssp_sock_lock_fd(int fd)
{
	for (;;) {
		struct ssp_sock *s = ssp_fd_sock(fd);
		struct ssp_cx *cx;

		if (!s)
			return NULL;
		/* Sockets are type-stable: even a stale @s has a lock to take;
		 * the mapping is then checked again under it (posix.h). */
		cx = __atomic_load_n(&s->cx, __ATOMIC_ACQUIRE);
		ssp_cx_lock(cx);
		if (ssp_fd_sock(fd) == s && __atomic_load_n(&s->cx, __ATOMIC_RELAXED) == cx)
			return s;
		ssp_unlock();
	}
}

struct ssp_sock *ssp_sock_enter(int fd)
{
	struct ssp_sock *s;

	if (ssp_mode() == SSP_M_FORKED && ssp_fd_get(fd))
		ssp_child_attach();
	s = ssp_mode() == SSP_M_ON ? ssp_sock_lock_fd(fd) : NULL;
	if (!s) {
		errno = ssp_mode() == SSP_M_ON && ssp_fd_get(fd) ? ENOTSOCK : EBADF;
		return NULL;
	}
	/* Shared across fork: another process may have adopted it (or given
	 * it back) meanwhile; see that before using it (one load when no
	 * event waits). */
	if (s->shared && ring_arx_avail(&s->cx->ctx->arx))
		ssp_pump();
	if (s->inh)
		ssp_sock_claim(s);
	return s;
}

static void ssp_atfork_prepare(void)
{
	ssp_lock_all();
	pthread_mutex_lock(&log_lock);
	pthread_mutex_lock(&ip_lock);
}

static void ssp_atfork_parent(void)
{
	pthread_mutex_unlock(&ip_lock);
	pthread_mutex_unlock(&log_lock);
	ssp_unlock_all();
}

static void ep_reset(int fd, struct ssp_file *f, void *arg)
{
	(void)arg;
	/* Once per set, not per number. */
	if (f->type == SSP_F_EPOLL && SS_CONTAINER_OF(f, struct ssp_ep, f)->epfd == fd)
		ssp_ep_atfork_child(SS_CONTAINER_OF(f, struct ssp_ep, f));
}

/* The child shares the parent's region: it must never post a command or
 * consume an event there.  It attaches as its own application (fork.c:
 * at once when fork() came through the shim, else on first use).  Only
 * this thread exists in the child: no other waiter, every lock free. */
static void ssp_atfork_child(void)
{
	ssp_locks_reset();
	ssp_waiter_atfork_child();
	pthread_mutex_init(&log_lock, NULL);
	pthread_mutex_init(&ip_lock, NULL);
	ssp_fd_foreach(ep_reset, NULL);
	if (ssp.mode == SSP_M_ON)
		__atomic_store_n(&ssp.mode, SSP_M_FORKED, __ATOMIC_RELEASE);
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

	pthread_mutex_lock(&log_lock);
	for (unsigned i = 0; i < n_log_keys; i++) {
		if (log_keys[i] == key) {
			pthread_mutex_unlock(&log_lock);
			return;
		}
	}
	if (n_log_keys < LOG_KEYS)
		log_keys[n_log_keys++] = key;
	pthread_mutex_unlock(&log_lock);
	n = snprintf(buf, sizeof(buf), "slipstream: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (ss_sys_write(2, buf, (size_t)n) < 0)
		return;
}

/* ------------------------------------------------------------ fd table */

/*
 * fd -> object.  Readers (the shim's routing test on every call) are
 * lock-free: the table pointer and each entry are loaded with acquire and
 * stored with release under ssp.glock.  A grown table replaces the old one,
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

	return f && f->type == SSP_F_SOCK ? SS_CONTAINER_OF(f, struct ssp_sock, f) : NULL;
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
	struct fdtab *t = __atomic_load_n(&fdtab, __ATOMIC_ACQUIRE);

	for (size_t i = 0; t && i < t->len; i++) {
		struct ssp_file *f = __atomic_load_n(&t->ent[i], __ATOMIC_ACQUIRE);

		if (f)
			fn((int)i, f, arg);
	}
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

/* Attach with @n contexts: the attachment, or NULL with errno and @why. */
static struct ss_app *attach_n(unsigned n, char *why, size_t why_len)
{
	struct ss_app_opts o;

	memset(&o, 0, sizeof(o));
	o.contexts = n;
	o.conns = env_u32("SLIPSTREAM_CONNS", 4096);
	o.rxbuf = o.txbuf = env_u32("SLIPSTREAM_BUF", SSP_DEFAULT_BUF);
	/* Unset or "0": every connection on its full rings from the start;
	 * "1": 4 KiB rings that grow (shm/abi.h "Small rings that grow").
	 * A program's first read or write must not be held to 4 KiB: a
	 * receive ring that starts small offers a 4 KiB window, where Linux
	 * offers 64 KiB, and a blocking write of more than 4 KiB waits a
	 * round trip for its ACK.  Small rings are for programs with many
	 * thousands of connections of small messages, which ask for them. */
	const char *small = getenv("SLIPSTREAM_SMALL_RINGS");
	o.fixed_rings = !(small && strcmp(small, "1") == 0);
	o.errbuf = why;
	o.errbuf_len = why_len;
	return ss_app_attach(&o);
}

/* Lists of the contexts, once before the first attach. */
static void cx_lists_init(void)
{
	for (unsigned i = 0; i < SSP_MAX_CX; i++) {
		ss_list_init(&ssp.cx[i].cookies);
		ss_list_init(&ssp.cx[i].waiters);
	}
}

/* ssp_ready's work for a process that never attached (ssp.glock held). */
static int attach_first(void)
{
	char why[128] = "";
	const char *strict = getenv("SLIPSTREAM_STRICT");
	unsigned n = env_u32("SLIPSTREAM_CONTEXTS", SSP_DEFAULT_CX);

	ssp.strict = strict && strcmp(strict, "1") == 0;
	if (n > SSP_MAX_CX)
		n = SSP_MAX_CX;
	ssp.app = attach_n(n, why, sizeof(why));
	if (!ssp.app && n > 1) {
		/* A service that allows fewer contexts: one will do. */
		why[0] = '\0';
		ssp.app = attach_n(1, why, sizeof(why));
	}
	if (!ssp.app) {
		const char *path = getenv("SLIPSTREAM_SOCK");

		ssp.attach_err = errno;
		fprintf(stderr, "slipstream: service not reachable at %s (%s%s%s): %s\n",
			path && *path ? path : SS_DEFAULT_SOCK, strerror(errno),
			*why ? ": " : "", why,
			ssp.strict ? "failing (SLIPSTREAM_STRICT=1)" : "using the kernel stack");
		__atomic_store_n(&ssp.mode, SSP_M_KERNEL, __ATOMIC_RELEASE);
		if (ssp.strict) {
			errno = ssp.attach_err;
			return -1;
		}
		return SSP_M_KERNEL;
	}
	cx_lists_init();
	ssp_cx_setup();
	ssp.rxbuf = ssp.app->rxbuf_size;
	ssp.txbuf = ssp.app->txbuf_size;
	ssp.pid = getpid();
	__atomic_store_n(&ssp.mode, SSP_M_ON, __ATOMIC_RELEASE);
	return SSP_M_ON;
}

int ssp_ready(void)
{
	int mode = ssp_mode(), rc;

	if (mode == SSP_M_KERNEL && ssp.strict) {
		errno = ssp.attach_err;
		return -1;
	}
	if (mode == SSP_M_ON || mode == SSP_M_KERNEL)
		return mode;
	if (mode == SSP_M_FORKED && ssp_child_attach() == 0)
		return SSP_M_ON;
	if (mode == SSP_M_DEAD || mode == SSP_M_FORKED) {
		errno = EBADF;
		return -1;
	}
	ssp_nocancel(); /* the attach talks to the service */
	ssp_glock();
	if (ssp.mode == SSP_M_UNSET) {
		rc = attach_first();
	} else if (ssp.mode == SSP_M_KERNEL && ssp.strict) {
		errno = ssp.attach_err;
		rc = -1;
	} else {
		rc = ssp.mode; /* another thread attached meanwhile */
	}
	ssp_gunlock();
	return rc;
}

/*
 * The service's address, for bind() to a specific address and for
 * getsockname() on sockets bound to INADDR_ANY: asked once with the
 * control socket's "stats" command ("ip": "a.b.c.d/len").  0 when unknown.
 */
static uint32_t service_ip;      /* host order, 0 until known (ip_lock) */
static bool service_ip_tried;

uint32_t ssp_service_ip(void)
{
	const char *path = getenv("SLIPSTREAM_SOCK");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[16384];
	size_t len = 0;
	int fd;

	pthread_mutex_lock(&ip_lock);
	if (service_ip_tried)
		goto out;
	service_ip_tried = true;
	ssp_nocancel(); /* a talk with the service, under ip_lock */
	if (!path || !*path)
		path = SS_DEFAULT_SOCK;
	if (strlen(path) >= sizeof(sa.sun_path))
		goto out;
	strcpy(sa.sun_path, path);
	fd = ssp_real.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
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
			service_ip = a << 24 | b << 16 | c << 8 | d;
	}
out:
	pthread_mutex_unlock(&ip_lock);
	return service_ip;
}

/* ------------------------------------------------------------- sockets */

/*
 * Sockets are type-stable (posix.h): a freed one goes to this pool and
 * comes back as another socket, never to malloc.  f.type stays
 * SSP_F_SOCK and cx always names a context; the rest is reset on reuse.
 */
static struct ssp_sock *sock_pool;

struct ssp_sock *ssp_sock_new(struct ssp_cx *cx)
{
	struct ssp_sock *s;

	ssp_glock();
	s = sock_pool;
	if (s)
		sock_pool = s->pool_next;
	ssp_gunlock();
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s) {
			errno = ENOMEM;
			return NULL;
		}
		s->f.type = SSP_F_SOCK;
	}
	memset(&s->refs, 0, sizeof(*s) - offsetof(struct ssp_sock, refs));
	__atomic_store_n(&s->cx, cx, __ATOMIC_RELEASE);
	s->refs = 1;
	ss_list_init(&s->in_cookie);
	ss_list_init(&s->regs);
	s->nodelay = false; /* Nagle's algorithm, as on Linux */
	return s;
}

void ssp_sock_discard(struct ssp_sock *s)
{
	if (!s)
		return;
	ssp_glock();
	s->pool_next = sock_pool;
	sock_pool = s;
	ssp_gunlock();
}

uint64_t ssp_cookie_new(void)
{
	return __atomic_fetch_add(&ssp.next_cookie, 1, __ATOMIC_RELAXED);
}

/* New readiness may exist: bump the edge sequence and queue every epoll
 * registration of @s for a look by the next epoll_wait (@s's lock held). */
void ssp_sock_touch(struct ssp_sock *s)
{
	struct ssp_cx *cx = s->cx;

	s->seq++;
	if (__atomic_load_n(&s->n_blocked, __ATOMIC_RELAXED))
		ssp_sock_kick_blocked(s);
	for (struct ss_list *l = s->regs.next; l != &s->regs; l = l->next) {
		struct ssp_epreg *r = SS_CONTAINER_OF(l, struct ssp_epreg, in_sock);

		if (!r->on_rd) {
			r->on_rd = true;
			ss_list_add_tail(&r->ep->per[cx->idx].rdlist, &r->in_rd);
			ssp_ep_wake(r->ep, cx);
		}
	}
}

/* The context of connection @c. */
static struct ssp_cx *conn_cx(const struct ss_conn *c)
{
	return &ssp.cx[c->ctx->idx];
}

static void deferred_push(struct ssp_cx *cx, struct ss_conn *c, bool abort)
{
	if (cx->n_deferred == cx->cap_deferred) {
		uint32_t cap = cx->cap_deferred ? cx->cap_deferred * 2 : 64;
		struct ss_conn **q = realloc(cx->deferred, cap * sizeof(*q));
		bool *a = realloc(cx->deferred_abort, cap * sizeof(*a));

		if (q)
			cx->deferred = q;
		if (a)
			cx->deferred_abort = a;
		if (!q || !a) {
			ssp_log_once("deferred", "out of memory queueing a close: connection leaks");
			return;
		}
		cx->cap_deferred = cap;
	}
	cx->deferred[cx->n_deferred] = c;
	cx->deferred_abort[cx->n_deferred++] = abort;
}

void ssp_conn_release(struct ss_conn *c, bool abort)
{
	int rc;

	ss_conn_set_user(c, NULL);
	rc = abort ? ss_abort(c) : ss_close(c);
	if (rc < 0 && errno == EAGAIN)
		deferred_push(conn_cx(c), c, abort);
}

/* @c is gone from under a close still waiting in the deferred list (it
 * moved to another process): forget it.  True when it was there. */
static bool deferred_forget(struct ssp_cx *cx, const struct ss_conn *c)
{
	for (uint32_t i = 0; i < cx->n_deferred; i++) {
		if (cx->deferred[i] != c)
			continue;
		cx->n_deferred--;
		cx->deferred[i] = cx->deferred[cx->n_deferred];
		cx->deferred_abort[i] = cx->deferred_abort[cx->n_deferred];
		return true;
	}
	return false;
}

static void deferred_retry(struct ssp_cx *cx)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < cx->n_deferred; i++) {
		struct ss_conn *c = cx->deferred[i];
		bool abort = cx->deferred_abort[i];
		int rc = abort ? ss_abort(c) : ss_close(c);

		if (rc < 0 && errno == EAGAIN) {
			cx->deferred[k] = c;
			cx->deferred_abort[k++] = abort;
		}
	}
	cx->n_deferred = k;
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

void ssp_listen_stopped(struct ssp_sock *s, bool released)
{
	accq_free(s); /* Linux resets the connections queued on it */
	if (!ss_list_empty(&s->in_cookie))
		ss_list_del_init(&s->in_cookie);
	s->cookie = 0;
	s->state = SSP_S_NEW;
	s->listen_done = false;
	s->armed = false;
	s->stop_done = true;
	s->has_entry = !released;
	s->entry = s->listener;
	if (released)
		s->bound = false; /* bind() may pick a port again */
	ssp_sock_touch(s);
}

/* Last fd closed and no call still using @s: tear down (its lock held). */
static void sock_free(struct ssp_sock *s)
{
	struct ss_ctx *ctx = s->cx->ctx;

	if (ssp_mode() == SSP_M_ON) {
		switch (s->state) {
		case SSP_S_LISTEN:
			if (s->listen_done && !s->listen_err)
				ss_listen_close(ctx, s->listener);
			accq_free(s);
			break;
		case SSP_S_CONNECTED:
			if (s->inh)
				ss_release(ctx, s->inh_owner, s->inh_slot, s->inh_gen);
			else if (s->lingering && s->conn)
				ss_conn_set_user(s->conn, NULL); /* closed already: it closes on */
			else if (s->conn)
				ssp_conn_release(s->conn, s->linger_on && s->linger_s == 0);
			break;
		case SSP_S_AWAY: /* our reference to where the connection went */
			ss_release(ctx, s->inh_owner, s->inh_slot, s->inh_gen);
			break;
		case SSP_S_CONNECTING:
			/* No handle yet: the service drops the connection by
			 * its cookie (RFC 9293 §3.10.4 in SYN-SENT). */
			if (ss_connect_cancel(ctx, s->cookie) < 0)
				ssp_log_once("connect_cancel", "close() of a connecting socket: "
					     "command queue full, the connection opens and is reset");
			break;
		default:
			if (s->has_entry)
				ss_listen_close(ctx, s->entry);
			break;
		}
		ss_flush(ctx);
	}
	/* A pending LISTENING/CONNECTED finds no socket and is undone in
	 * ssp_event. */
	if (!ss_list_empty(&s->in_cookie))
		ss_list_del_init(&s->in_cookie);
	free(s->accq.q);
	s->accq.q = NULL;
	ssp_away_set(s, false);
	s->state = SSP_S_NEW;
	s->inh = false;
	ssp_sock_discard(s);
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

static void ssp_event_apply(struct ssp_cx *cx, const struct ss_event *e);

static struct ssp_sock *cookie_find(struct ssp_cx *cx, uint64_t cookie)
{
	for (struct ss_list *l = cx->cookies.next; l != &cx->cookies; l = l->next) {
		struct ssp_sock *s = SS_CONTAINER_OF(l, struct ssp_sock, in_cookie);

		if (s->cookie == cookie)
			return s;
	}
	return NULL;
}

static void ev_listening(struct ssp_cx *cx, const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (!e->error && e->type == SS_EVENT_LISTENING)
			ss_listen_close(cx->ctx, e->listener);
		return;
	}
	s->listen_done = true;
	s->listen_err = e->error ? e->error : 0;
	if (e->type == SS_EVENT_CMD_ERROR && !s->listen_err)
		s->listen_err = EINVAL;
	s->listener = e->listener;
	/* A listener keeps its cookie: ACCEPTED events carry it. */
	if (s->listen_err)
		ss_list_del_init(&s->in_cookie);
	ssp_sock_touch(s);
}

struct entry_match {
	const struct ssp_cx *cx;
	uint32_t entry;
	struct ssp_sock *s;
};

static void entry_match(int fd, struct ssp_file *f, void *arg)
{
	struct entry_match *m = arg;
	struct ssp_sock *s;

	(void)fd;
	if (m->s || f->type != SSP_F_SOCK)
		return;
	s = SS_CONTAINER_OF(f, struct ssp_sock, f);
	if (__atomic_load_n(&s->cx, __ATOMIC_ACQUIRE) != m->cx)
		return;
	if ((s->state == SSP_S_NEW && s->has_entry && s->entry == m->entry) ||
	    (s->state == SSP_S_LISTEN && s->listener == m->entry))
		m->s = s;
}

/*
 * Another process sharing our socket across fork made it listen (after
 * bind() and fork(), or again after shutdown()): one socket on Linux, so
 * ours listens too, under the cookie the service gave us.  Not a socket
 * waiting for its own listen() answer (that answer says it all).
 */
static void ev_listening_member(struct ssp_cx *cx, const struct ss_event *e)
{
	struct entry_match m = { cx, e->listener, NULL };
	struct ssp_sock *s;

	ssp_fd_foreach(entry_match, &m);
	s = m.s;
	if (s && s->state == SSP_S_LISTEN && e->cookie && s->cookie != e->cookie) {
		/* Listening already, as the parent was at fork(), which has
		 * listened again since under a new cookie: the service names
		 * our copy by that one now (a forked child's INHERIT). */
		ss_list_del_init(&s->in_cookie);
		s->cookie = e->cookie;
		ss_list_add_tail(&cx->cookies, &s->in_cookie);
		return;
	}
	if (!s || s->state != SSP_S_NEW || !ss_list_empty(&s->in_cookie) || !e->cookie)
		return;
	s->state = SSP_S_LISTEN;
	s->listener = e->listener;
	s->listen_done = true;
	s->listen_err = 0;
	s->armed = false;
	s->cookie = e->cookie;
	ss_list_add_tail(&cx->cookies, &s->in_cookie);
	ssp_sock_touch(s);
}

static void ev_connected(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (e->conn)
			ssp_conn_release(e->conn, true);
		return;
	}
	ss_list_del_init(&s->in_cookie);
	if (e->type == SS_EVENT_CONNECTED && !e->error && e->conn) {
		s->state = SSP_S_CONNECTED;
		s->conn = e->conn;
		ss_conn_set_user(e->conn, s);
		ssp_opts_push(s); /* before any byte the application writes */
	} else {
		s->state = SSP_S_FAILED;
		s->err = e->error ? e->error : ECONNREFUSED;
	}
	ssp_sock_touch(s);
}

static void ev_bound(struct ssp_cx *cx, const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (!e->error && e->type == SS_EVENT_BOUND)
			ss_listen_close(cx->ctx, e->listener); /* nobody waits: give it up */
		return;
	}
	ss_list_del_init(&s->in_cookie);
	s->cookie = 0;
	s->bind_done = true;
	s->bind_err = e->error ? e->error : e->type == SS_EVENT_BOUND ? 0 : EINVAL;
	if (!s->bind_err) {
		s->has_entry = true;
		s->entry = e->listener;
		s->bind_port = e->local_port;
	}
}

/* LISTEN_STOPPED: our listener (or a copy a process we share it with
 * stopped) stopped listening. */
static void ev_listen_stopped(const struct ss_event *e, struct ssp_sock *s)
{
	if (s && s->state == SSP_S_LISTEN && s->listener == e->listener)
		ssp_listen_stopped(s, e->bytes != 0);
}

static void ev_adopted(const struct ss_event *e, struct ssp_sock *s)
{
	if (!s) {
		if (e->type == SS_EVENT_ADOPTED && e->conn)
			ssp_conn_release(e->conn, false);
		return;
	}
	ss_list_del_init(&s->in_cookie);
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
 * reference it replaces.  On context 0, as the service sends it. */
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

/* One event of @cx (its lock held).  Each socket an event concerns is
 * touched (ssp_sock_touch: the threads waiting for it are woken); true
 * when the event may concern threads that wait for something else (the
 * pump then wakes every waiter of @cx, see cx.c). */
static bool ssp_event(struct ssp_cx *cx, const struct ss_event *e)
{
	ssp_event_apply(cx, e);
	switch (e->type) {
	case SS_EVENT_LISTENING:
	case SS_EVENT_LISTEN_STOPPED:
	case SS_EVENT_CONNECTED:
	case SS_EVENT_ACCEPTED:
	case SS_EVENT_DATA:
	case SS_EVENT_SENT:
	case SS_EVENT_PEER_CLOSED:
	case SS_EVENT_RESET:
	case SS_EVENT_ERROR:
	case SS_EVENT_CLOSED:
		return false;
	default:
		return true; /* bound, adopted, inherited, moved, errors of commands */
	}
}

static void ssp_event_apply(struct ssp_cx *cx, const struct ss_event *e)
{
	struct ssp_sock *s;

	switch (e->type) {
	case SS_EVENT_LISTENING:
		if (e->bytes)
			ev_listening_member(cx, e);
		else
			ev_listening(cx, e, cookie_find(cx, e->cookie));
		return;
	case SS_EVENT_CONNECTED:
		ev_connected(e, cookie_find(cx, e->cookie));
		return;
	case SS_EVENT_ACCEPTED:
		s = cookie_find(cx, e->cookie);
		if (!s || s->state != SSP_S_LISTEN) {
			/* Listener gone (closed): refuse. */
			if (e->conn)
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
		ev_bound(cx, e, cookie_find(cx, e->cookie));
		return;
	case SS_EVENT_LISTEN_STOPPED:
		ev_listen_stopped(e, cookie_find(cx, e->cookie));
		return;
	case SS_EVENT_INHERITED:
		ssp.inherit_done = true;
		ssp.inherit_err = e->error;
		return;
	case SS_EVENT_ADOPTED:
		if (e->bytes)
			ev_returned(e);
		else
			ev_adopted(e, cookie_find(cx, e->cookie));
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
		deferred_forget(cx, e->conn);
		if (s) {
			ssp_sock_moved(s, e);
		} else if (e->bytes) {
			/* Closed here meanwhile: let go of the reference too. */
			ss_release(cx->ctx, e->listener, (uint32_t)(e->cookie >> 32),
				   (uint32_t)e->cookie);
		}
		return;
	case SS_EVENT_CMD_ERROR:
		if (e->cmd_op == SS_OP_BIND) {
			ev_bound(cx, e, cookie_find(cx, e->cookie));
			return;
		}
		if (e->cmd_op == SS_OP_ADOPT) {
			ev_adopted(e, cookie_find(cx, e->cookie));
			return;
		}
		if (e->cmd_op == SS_OP_INHERIT) {
			ssp.inherit_done = true;
			ssp.inherit_err = e->error ? e->error : EINVAL;
			return;
		}
		if (e->cmd_op == SS_OP_RELEASE || e->cmd_op == SS_OP_LISTEN_ARM)
			return; /* already gone: nothing to undo */
		if ((e->cmd_op == SS_OP_SEND || e->cmd_op == SS_OP_RECV_DONE) && e->error == EBADF)
			return; /* counts that came after a move (fork): the new
				 * owner's positions say it all */
		if (e->cmd_op == SS_OP_CONNECT) {
			s = cookie_find(cx, e->cookie);
			if (s && s->state == SSP_S_CONNECTING)
				ev_connected(e, s);
			return;
		}
		if (e->cmd_op == SS_OP_LISTEN) {
			s = cookie_find(cx, e->cookie);
			if (s)
				ev_listening(cx, e, s);
			return;
		}
		if (e->cmd_op == SS_OP_LISTEN_STOP) {
			/* The service no longer has it listening for us: stop
			 * here, and let the entry go. */
			s = cookie_find(cx, e->cookie);
			if (s && s->state == SSP_S_LISTEN) {
				ssp_log_once("listen_stop", "shutdown() of a listener: the service "
					     "refused (%s); stopped here only", strerror(e->error));
				ss_listen_close(cx->ctx, s->listener);
				ssp_listen_stopped(s, true);
			}
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
		/* A close() that lingers (SO_LINGER) is over: our FIN was
		 * acknowledged, or the connection died (sock.c). */
		s = e->conn ? ss_conn_user(e->conn) : NULL;
		if (s && s->lingering && s->conn == e->conn) {
			s->conn = NULL;
			ssp_sock_touch(s);
		}
		return;
	default:
		return;
	}
}

void ssp_cx_pump(struct ssp_cx *cx)
{
	struct ss_event ev[64];
	/* A poller asleep on the context keeps its arming (cx.c). */
	bool keep = cx->poller != NULL, any = false, broad = false;
	int n;

	if (ssp_mode() != SSP_M_ON || !cx->ctx)
		return;
	do {
		n = keep ? ss_poll_keep_armed(cx->ctx, ev, 64) : ss_poll(cx->ctx, ev, 64);
		for (int i = 0; i < n; i++)
			broad |= ssp_event(cx, &ev[i]);
		any |= n > 0;
	} while (n == 64);
	if (cx->n_deferred)
		deferred_retry(cx);
	if (!ss_list_empty(&cx->waiters))
		ssp_wake_others(cx, any, broad);
}

void ssp_pump(void)
{
	struct ssp_cx *cx = ssp_cx_held();

	if (cx)
		ssp_cx_pump(cx);
}
