/* fork.c - the POSIX layer across fork and exec: a child attaches as its own application and inherits the parent's sockets. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "posix/posix.h"

/*
 * After fork the child must not touch the parent's shared region (both
 * would post on the same rings).  So the child attaches anew, naming its
 * parent ("parent=ID token=T"), and sends SS_CMD_INHERIT: the service
 * makes it a member of every port entry the parent holds (listeners are
 * shared, as after fork on Linux) and gives it a reference to every
 * connection the parent holds.  Locally, each connected socket becomes an
 * inherited reference (s->inh): on first use the child adopts the
 * connection (SS_CMD_ADOPT moves it and its ring contents into the
 * child's region; the parent's copy is then AWAY: it keeps a reference,
 * its blocking calls wait, non-blocking ones say EAGAIN and poll shows
 * nothing, as if the child took all the data), and closing it unused
 * just drops the reference; the connection's FIN waits for the last
 * process, as on Linux.  When the child closes the connection or exits,
 * the service hands it back (an unasked ADOPTED): the parent's copy works
 * again, nothing lost.  A holder whose owner exits gets it the same way.
 * A reference that goes for good (the connection moved on elsewhere)
 * fails its socket with ENOTCONN.  Listeners shared this way hand new
 * connections to the processes that accept from them (ssp_listen_want).
 * A write or read racing an adoption loses or repeats nothing: from the
 * fork on, the connections a process shares commit and consume through
 * their sync words (lib sync.c, mark_shared); what the move refused
 * counts for nothing and the call waits for the connection to come back,
 * like any call on an AWAY copy (data.c).
 *
 * fork() through the shim attaches the child at once and keeps the parent
 * waiting until the service has recorded the inheritance, so the parent
 * cannot close a socket before the child holds it.  A child made some
 * other way (a raw clone) attaches on first use.
 *
 * Contexts: the child's sockets all live on its context 0 (INHERIT goes
 * there, so the inherited listeners' connections arrive there, and so do
 * the adoptions).  In any process the service hands connections back and
 * tells of references gone on context 0; a socket AWAY on another
 * context is found there under that context's lock (taken in ascending
 * order, after context 0's) and moves to context 0 when its connection
 * comes back (ssp_sock_returned).
 */

#define INHERIT_WAIT_MS 5000
#define ADOPT_WAIT_MS 5000

static pid_t (*real_fork)(void);

/* A connection of the parent's accept queue, released in the child. */
struct handle {
	uint32_t owner, slot, gen;
};

struct convert {
	uint32_t owner;
	struct handle *rel;
	uint32_t n_rel, cap_rel;
};

static void rel_push(struct convert *cv, uint32_t owner, const struct ss_conn *c)
{
	if (cv->n_rel == cv->cap_rel) {
		uint32_t cap = cv->cap_rel ? cv->cap_rel * 2 : 32;
		struct handle *n = realloc(cv->rel, cap * sizeof(*n));

		if (!n)
			return; /* the reference stays until this process exits */
		cv->rel = n;
		cv->cap_rel = cap;
	}
	cv->rel[cv->n_rel++] = (struct handle){ owner, c->slot, c->gen };
}

/* The child's copy of one socket: the parent's handles become
 * references, and it lives on context 0 (all locks held). */
static void sock_convert(struct ssp_sock *s, struct convert *cv)
{
	if (s->fork_gen == ssp.fork_gen)
		return; /* another fd of the same socket */
	s->fork_gen = ssp.fork_gen;
	__atomic_store_n(&s->cx, &ssp.cx[0], __ATOMIC_RELEASE);
	s->away_counted = false; /* ssp.n_away starts again at 0 */
	s->shared = true;
	s->armed = false;
	switch (s->state) {
	case SSP_S_LISTEN:
		/* Queued connections were handed to the parent: not ours. */
		while (s->accq.n) {
			rel_push(cv, cv->owner, s->accq.q[s->accq.head]);
			s->accq.head = (s->accq.head + 1) % s->accq.cap;
			s->accq.n--;
		}
		s->accq.head = 0;
		break;
	case SSP_S_CONNECTED:
		if (!s->inh && s->conn) {
			s->inh = true;
			s->inh_owner = cv->owner;
			s->inh_slot = s->conn->slot;
			s->inh_gen = s->conn->gen;
			ss_conn_endpoints(s->conn, &s->ref_lip, &s->ref_lport, &s->ref_rip,
					  &s->ref_rport);
		}
		s->conn = NULL;
		break;
	case SSP_S_CONNECTING:
		/* The answer goes to the parent. */
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		s->state = SSP_S_FAILED;
		s->err = ECONNABORTED;
		ssp_log_once("fork_connecting",
			     "fork() during a connect(): the child's copy fails with ECONNABORTED");
		break;
	default:
		break;
	}
}

static void file_convert(int fd, struct ssp_file *f, void *arg)
{
	(void)fd;
	if (f->type == SSP_F_SOCK)
		sock_convert(SS_CONTAINER_OF(f, struct ssp_sock, f), arg);
}

static void ep_convert(int fd, struct ssp_file *f, void *arg)
{
	(void)arg;
	/* A set shared with the parent (the kernel object is): our context
	 * joins it too so our events wake it.  Once per set, not per number. */
	if (f->type == SSP_F_EPOLL && SS_CONTAINER_OF(f, struct ssp_ep, f)->epfd == fd)
		ssp_ep_child_attach(SS_CONTAINER_OF(f, struct ssp_ep, f));
}

int ssp_child_attach(void)
{
	struct ss_app *old, *app;
	struct ss_app_opts o;
	struct convert cv = { 0 };
	struct ssp_cx *cx0 = &ssp.cx[0];
	char why[128] = "";
	int64_t deadline;

	ssp_nocancel(); /* the attach talks to the service */
	ssp_lock_all();
	if (ssp.mode != SSP_M_FORKED) {
		int rc = ssp.mode == SSP_M_ON ? 0 : -1;

		ssp_unlock_all();
		return rc;
	}
	old = ssp.app;
	memset(&o, 0, sizeof(o));
	o.contexts = ssp.n_cx;
	o.conns = old->max_conns;
	o.rxbuf = old->rxbuf_size;
	o.txbuf = old->txbuf_size;
	o.fixed_rings = old->small_off == 0;
	o.parent_app = old->app_id;
	o.parent_token = old->token;
	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	app = ss_app_attach(&o);
	if (!app) {
		__atomic_store_n(&ssp.mode, SSP_M_DEAD, __ATOMIC_RELEASE);
		ssp_unlock_all();
		ssp_log_once("fork_attach", "forked child cannot attach (%s%s%s): its inherited "
			     "sockets fail with EBADF", strerror(errno), *why ? ": " : "", why);
		return -1;
	}
	ssp.fork_gen++;
	ssp.pid = getpid();
	cv.owner = old->app_id;
	/* Every socket moves to context 0, with the answers it waits for. */
	for (unsigned i = 1; i < SSP_MAX_CX; i++)
		ss_list_splice_tail(&cx0->cookies, &ssp.cx[i].cookies);
	ssp.app = app;
	ssp_cx_setup();
	ssp.n_away = 0;
	__atomic_store_n(&ssp.mode, SSP_M_ON, __ATOMIC_RELEASE);
	ssp_fd_foreach(file_convert, &cv);
	ss_app_forget(old);
	ssp_gunlock();
	ssp_fd_foreach(ep_convert, NULL);
	ssp_unlock_all_but(cx0);

	ssp.inherit_done = false;
	ssp.inherit_err = 0;
	deadline = ssp_deadline(INHERIT_WAIT_MS);
	while (ss_inherit(cx0->ctx) < 0 && ssp_ms_left(deadline) != 0)
		ss_flush(cx0->ctx);
	for (uint32_t i = 0; i < cv.n_rel; i++)
		while (ss_release(cx0->ctx, cv.rel[i].owner, cv.rel[i].slot, cv.rel[i].gen) < 0 &&
		       ssp_ms_left(deadline) != 0)
			ss_flush(cx0->ctx);
	free(cv.rel);
	ss_flush(cx0->ctx);
	ssp_block_until(NULL, &ssp.inherit_done, deadline);
	if (!ssp.inherit_done || ssp.inherit_err)
		ssp_log_once("fork_inherit", "forked child: the service did not hand over the "
			     "parent's sockets (%s): using them fails",
			     strerror(ssp.inherit_done ? ssp.inherit_err : ETIMEDOUT));
	ssp_unlock();
	return 0;
}

/* This copy lost the connection to another process (or it closed):
 * ENOTCONN from now on, said once in the log. */
static void sock_lost(struct ssp_sock *s)
{
	s->conn = NULL;
	s->state = SSP_S_FAILED;
	s->err = 0;
	s->moved = true;
	ssp_log_once("fork_moved", "a socket shared across fork is in use by another "
		     "process (or closed): this copy fails with ENOTCONN");
}

static int post_adopt(struct ssp_sock *s)
{
	return ss_adopt(s->cx->ctx, s->inh_owner, s->inh_slot, s->inh_gen, s->cookie);
}

void ssp_sock_claim(struct ssp_sock *s)
{
	int64_t deadline = ssp_deadline(ADOPT_WAIT_MS);

	if (!s->inh || ssp_mode() != SSP_M_ON)
		return;
	s->cookie = ssp_cookie_new();
	s->adopt_done = false;
	s->adopt_err = 0;
	ss_list_add_tail(&s->cx->cookies, &s->in_cookie);
	while (post_adopt(s) < 0 && ssp_ms_left(deadline) != 0)
		ssp_pump();
	ss_flush(s->cx->ctx);
	s->hold++;
	ssp_block_until(s, &s->adopt_done, deadline);
	s->hold--;
	s->inh = false;
	if (!s->adopt_done) {
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		s->adopt_err = ETIMEDOUT;
	}
	if (s->adopt_err || !s->conn)
		sock_lost(s);
	ssp_sock_touch(s);
}

void ssp_sock_moved(struct ssp_sock *s, const struct ss_event *e)
{
	s->conn = NULL;
	s->state = SSP_S_FAILED;
	s->moved = true;
	if (e->bytes) {
		s->state = SSP_S_AWAY;
		ssp_away_set(s, true);
		s->moved = false;
		s->inh_owner = e->listener;
		s->inh_slot = (uint32_t)(e->cookie >> 32);
		s->inh_gen = (uint32_t)e->cookie;
		s->ref_lip = e->local_ip;
		s->ref_rip = e->remote_ip;
		s->ref_lport = e->local_port;
		s->ref_rport = e->remote_port;
	}
	ssp_sock_touch(s);
}

/* @s (on context @from, both its lock and context 0's held) moves to
 * context 0 with what it waits for: its pending answer, its epoll
 * registrations; threads blocked on @from for it follow it there. */
static void sock_move0(struct ssp_sock *s, struct ssp_cx *from)
{
	struct ssp_cx *cx0 = &ssp.cx[0];

	ssp_away_set(s, false);
	if (!ss_list_empty(&s->in_cookie)) {
		ss_list_del_init(&s->in_cookie);
		ss_list_add_tail(&cx0->cookies, &s->in_cookie);
	}
	__atomic_store_n(&s->cx, cx0, __ATOMIC_RELEASE);
	ssp_ep_sock_moved(s, from);
	ssp_cx_kick(from);
}

void ssp_sock_returned(struct ssp_sock *s, struct ss_conn *c)
{
	struct ssp_cx *from = s->cx;

	if (s->inh && s->cookie) {
		/* A claim of ours is on its way: this answers it (the service
		 * refuses the ADOPT, our reference being spent). */
		ss_list_del_init(&s->in_cookie);
		s->cookie = 0;
		s->adopt_done = true;
		s->adopt_err = 0;
	}
	if (from != &ssp.cx[0]) {
		sock_move0(s, from);
		pthread_mutex_unlock(&from->lock);
	}
	ssp_away_set(s, false);
	s->inh = s->moved = false;
	s->state = SSP_S_CONNECTED;
	s->conn = c;
	s->err = 0;
	s->shut_wr |= c->shut_wr;
	ss_conn_set_user(c, s);
	ssp_sock_touch(s);
}

/* A socket holding a reference: one inherited and not claimed yet, or
 * one whose connection is away. */
static bool sock_has_ref(const struct ssp_sock *s)
{
	return s->inh || s->state == SSP_S_AWAY;
}

struct ref_match {
	const struct ss_event *e; /* RETURNED: match slot, gen and endpoints */
	uint32_t owner, slot, gen; /* else: this handle */
	bool others;              /* look at sockets of other contexts too */
	struct ssp_sock *s;
};

/* Context 0's lock held; a socket of another context is looked at under
 * its lock too (ascending order), which stays held when it matches. */
static void ref_match(int fd, struct ssp_file *f, void *arg)
{
	struct ref_match *m = arg;
	const struct ss_event *e = m->e;
	struct ssp_cx *cx0 = &ssp.cx[0], *cx;
	struct ssp_sock *s;
	bool hit;

	if (m->s || f->type != SSP_F_SOCK)
		return;
	s = SS_CONTAINER_OF(f, struct ssp_sock, f);
	cx = __atomic_load_n(&s->cx, __ATOMIC_ACQUIRE);
	if (cx != cx0) {
		if (!m->others)
			return;
		pthread_mutex_lock(&cx->lock);
		if (ssp_fd_get(fd) != f || s->cx != cx) {
			pthread_mutex_unlock(&cx->lock);
			return; /* closed or moved meanwhile */
		}
	}
	hit = sock_has_ref(s) && s->inh_slot == m->slot && s->inh_gen == m->gen &&
	      /* A hand-back names no owner: the connection's endpoints do. */
	      (e ? s->ref_lip == e->local_ip && s->ref_rip == e->remote_ip &&
		   s->ref_lport == e->local_port && s->ref_rport == e->remote_port
		 : s->inh_owner == m->owner);
	if (hit)
		m->s = s;
	else if (cx != cx0)
		pthread_mutex_unlock(&cx->lock);
}

static struct ssp_sock *ref_find(struct ref_match *m)
{
	/* Only AWAY sockets hold references outside context 0. */
	m->others = __atomic_load_n(&ssp.n_away, __ATOMIC_ACQUIRE) > 0;
	ssp_fd_foreach(ref_match, m);
	return m->s;
}

struct ssp_sock *ssp_ref_find(const struct ss_event *e)
{
	struct ref_match m = { e, 0, (uint32_t)(e->cookie >> 32), (uint32_t)e->cookie, false,
			       NULL };

	return ref_find(&m);
}

void ssp_ref_gone(uint32_t owner, uint32_t slot, uint32_t gen)
{
	struct ref_match m = { NULL, owner, slot, gen, false, NULL };
	struct ssp_sock *s = ref_find(&m);
	struct ssp_cx *cx;

	if (!s)
		return;
	cx = s->cx;
	if (s->inh && s->cookie) {
		/* a claim is on its way: its answer (EBADF) settles it */
	} else {
		ssp_away_set(s, false);
		s->inh = false;
		sock_lost(s);
		ssp_sock_touch(s);
	}
	if (cx != &ssp.cx[0]) {
		ssp_cx_kick(cx); /* threads blocked there for it */
		pthread_mutex_unlock(&cx->lock);
	}
}

/* ------------------------------------------------------------------ fork */

static void mark_shared(int fd, struct ssp_file *f, void *arg)
{
	struct ssp_sock *s;

	(void)fd;
	(void)arg;
	if (f->type != SSP_F_SOCK)
		return;
	s = SS_CONTAINER_OF(f, struct ssp_sock, f);
	s->shared = true;
	/* The child may adopt the connection while we write or read: our
	 * commits and consumptions go through its sync words from now on
	 * (lib sync.c). */
	if (s->state == SSP_S_CONNECTED && s->conn)
		ss_conn_share(s->conn);
}

static void fd_count(int fd, struct ssp_file *f, void *arg)
{
	(void)fd;
	(void)f;
	++*(unsigned *)arg;
}

pid_t ssp_fork(void)
{
	int p[2] = { -1, -1 };
	unsigned n = 0;
	bool share;
	pid_t pid;

	ssp_nocancel(); /* pipes, the child's attach: no cancellation point */
	ssp_real_init();
	if (!real_fork) {
		void *sym = dlsym(RTLD_NEXT, "fork");

		memcpy(&real_fork, &sym, sizeof(sym));
		if (!real_fork) {
			errno = ENOSYS;
			return -1;
		}
	}
	share = false;
	if (ssp_mode() == SSP_M_ON) {
		ssp_lock_all();
		ssp_fd_foreach(fd_count, &n);
		share = n > 0 && ssp.mode == SSP_M_ON;
		if (share) {
			ssp_fd_foreach(mark_shared, NULL);
			/* The service's view is ours at fork time. */
			for (unsigned i = 0; i < ssp.n_cx; i++)
				ss_flush(ssp.cx[i].ctx);
		}
		ssp_unlock_all();
	}
	if (share && pipe2(p, O_CLOEXEC) < 0)
		share = false; /* the child attaches on first use */
	pid = real_fork();
	if (pid == 0) {
		if (share) {
			char one = 1;

			ssp_real.close(p[0]);
			ssp_child_attach();
			if (ssp_real.write(p[1], &one, 1) < 0)
				one = 0; /* the parent stops waiting at EOF anyway */
			ssp_real.close(p[1]);
		}
		return 0;
	}
	if (share) {
		int err = errno;
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char c;

		ssp_real.close(p[1]);
		if (pid > 0) {
			int64_t deadline = ssp_deadline(INHERIT_WAIT_MS);

			/* EOF or a byte: the child has attached, or died. */
			while (ssp_real.poll(&pfd, 1, ssp_ms_left(deadline)) < 0 && errno == EINTR)
				;
			if (pfd.revents && ssp_real.read(p[0], &c, 1) < 0)
				c = 0;
		}
		ssp_real.close(p[0]);
		errno = err;
	}
	return pid;
}

/* ------------------------------------------------------------------ exec */

struct exec_fds {
	int *fd;
	unsigned n, cap;
	bool inherit;
};

static void collect_socks(int fd, struct ssp_file *f, void *arg)
{
	struct exec_fds *x = arg;

	if (f->type != SSP_F_SOCK || x->n == x->cap)
		return;
	x->fd[x->n++] = fd;
	if (!(ssp_real.fcntl(fd, F_GETFD) & FD_CLOEXEC))
		x->inherit = true;
}

void ssp_exec_prepare(void)
{
	struct exec_fds x = { 0 };
	unsigned n = 0;

	ssp_nocancel();
	ssp_real_init();
	/* Only the process the attachment belongs to: a vfork() child shares
	 * our memory, and a child forked around the shim never attached; in
	 * both the kernel's close-on-exec is all there is to do. */
	if (ssp_mode() != SSP_M_ON || ssp.pid != getpid())
		return;
	ssp_glock(); /* no socket comes or goes meanwhile */
	ssp_fd_foreach(fd_count, &n);
	x.fd = n ? malloc(n * sizeof(*x.fd)) : NULL;
	x.cap = x.fd ? n : 0;
	ssp_fd_foreach(collect_socks, &x);
	ssp_gunlock();
	if (x.inherit)
		ssp_log_once("exec", "exec: accelerated sockets cannot cross exec; those without "
			     "close-on-exec are closed too (the new program gets EBADF on them)");
	/* Closed cleanly now (FIN, or the reference of a forked child
	 * dropped) rather than reset when the attachment hangs up. */
	for (unsigned i = 0; i < x.n; i++)
		ssp_close(x.fd[i]);
	free(x.fd);
}
