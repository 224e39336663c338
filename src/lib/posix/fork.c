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
 *
 * fork() through the shim attaches the child at once and keeps the parent
 * waiting until the service has recorded the inheritance, so the parent
 * cannot close a socket before the child holds it.  A child made some
 * other way (a raw clone) attaches on first use.
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

/* The child's copy of one socket: the parent's handles become references. */
static void sock_convert(struct ssp_sock *s, struct convert *cv)
{
	if (s->fork_gen == ssp.fork_gen)
		return; /* another fd of the same socket */
	s->fork_gen = ssp.fork_gen;
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
		ssp_list_del(&s->in_cookie);
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
	struct convert *cv = arg;

	if (f->type == SSP_F_SOCK) {
		sock_convert(SSP_CONTAINER(f, struct ssp_sock, f), cv);
	} else {
		struct ssp_ep *ep = SSP_CONTAINER(f, struct ssp_ep, f);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SSP_EP_CTX_MARK };

		/* A set shared with the parent (the kernel object is): add our
		 * context too so our events wake it. */
		(void)fd;
		if (ep->has_ctx)
			ssp_real.epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ssp.evfd, &ev);
	}
}

int ssp_child_attach(void)
{
	struct ss_app *old = ssp.app, *app;
	struct ss_app_opts o;
	struct convert cv = { 0 };
	char why[128] = "";
	int64_t deadline;

	if (ssp.mode != SSP_M_FORKED)
		return ssp.mode == SSP_M_ON ? 0 : -1;
	memset(&o, 0, sizeof(o));
	o.contexts = 1;
	o.conns = old->max_conns;
	o.rxbuf = old->rxbuf_size;
	o.txbuf = old->txbuf_size;
	o.parent_app = old->app_id;
	o.parent_token = old->token;
	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	app = ss_app_attach(&o);
	if (!app) {
		ssp.mode = SSP_M_DEAD;
		ssp_log_once("fork_attach", "forked child cannot attach (%s%s%s): its inherited "
			     "sockets fail with EBADF", strerror(errno), *why ? ": " : "", why);
		return -1;
	}
	ssp.fork_gen++;
	ssp.pid = getpid();
	cv.owner = old->app_id;
	ssp.app = app;
	ssp.ctx = ss_ctx_get(app, 0);
	ssp.evfd = ss_ctx_fd(ssp.ctx);
	ssp.mode = SSP_M_ON;
	ssp_fd_foreach(file_convert, &cv);
	/* The parent's pending closes are the parent's business. */
	ssp.n_deferred = 0;
	ss_app_forget(old);

	ssp.inherit_done = false;
	ssp.inherit_err = 0;
	deadline = ssp_deadline(INHERIT_WAIT_MS);
	while (ss_inherit(ssp.ctx) < 0 && ssp_ms_left(deadline) != 0)
		ss_flush(ssp.ctx);
	for (uint32_t i = 0; i < cv.n_rel; i++)
		while (ss_release(ssp.ctx, cv.rel[i].owner, cv.rel[i].slot, cv.rel[i].gen) < 0 &&
		       ssp_ms_left(deadline) != 0)
			ss_flush(ssp.ctx);
	free(cv.rel);
	ss_flush(ssp.ctx);
	ssp_block_until(&ssp.inherit_done, deadline);
	if (!ssp.inherit_done || ssp.inherit_err)
		ssp_log_once("fork_inherit", "forked child: the service did not hand over the "
			     "parent's sockets (%s): using them fails",
			     strerror(ssp.inherit_done ? ssp.inherit_err : ETIMEDOUT));
	return 0;
}

static int post_adopt(struct ssp_sock *s)
{
	return ss_adopt(ssp.ctx, s->inh_owner, s->inh_slot, s->inh_gen, s->cookie);
}

void ssp_sock_claim(struct ssp_sock *s)
{
	int64_t deadline = ssp_deadline(ADOPT_WAIT_MS);

	if (!s->inh || ssp.mode != SSP_M_ON)
		return;
	s->cookie = ssp.next_cookie++;
	s->adopt_done = false;
	s->adopt_err = 0;
	ssp_list_add_tail(&ssp.cookies, &s->in_cookie);
	while (post_adopt(s) < 0 && ssp_ms_left(deadline) != 0)
		ssp_pump();
	ss_flush(ssp.ctx);
	s->hold++;
	ssp_block_until(&s->adopt_done, deadline);
	s->hold--;
	s->inh = false;
	if (!s->adopt_done) {
		ssp_list_del(&s->in_cookie);
		s->cookie = 0;
		s->adopt_err = ETIMEDOUT;
	}
	if (s->adopt_err || !s->conn) {
		s->conn = NULL;
		s->state = SSP_S_FAILED;
		s->err = 0;
		s->moved = true;
		ssp_log_once("fork_moved", "a socket shared across fork is in use by another "
			     "process (or closed): this copy fails with ENOTCONN");
	}
	ssp_sock_touch(s);
}

void ssp_sock_moved(struct ssp_sock *s, const struct ss_event *e)
{
	s->conn = NULL;
	s->state = SSP_S_FAILED;
	s->moved = true;
	if (e->bytes) {
		s->state = SSP_S_AWAY;
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

void ssp_sock_returned(struct ssp_sock *s, struct ss_conn *c)
{
	if (s->inh && s->cookie) {
		/* A claim of ours is on its way: this answers it (the service
		 * refuses the ADOPT, our reference being spent). */
		ssp_list_del(&s->in_cookie);
		s->cookie = 0;
		s->adopt_done = true;
		s->adopt_err = 0;
	}
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
	struct ssp_sock *s;
};

static void ref_match(int fd, struct ssp_file *f, void *arg)
{
	struct ref_match *m = arg;
	const struct ss_event *e = m->e;
	struct ssp_sock *s;

	(void)fd;
	if (m->s || f->type != SSP_F_SOCK)
		return;
	s = SSP_CONTAINER(f, struct ssp_sock, f);
	if (!sock_has_ref(s) || s->inh_slot != m->slot || s->inh_gen != m->gen)
		return;
	/* A hand-back names no owner: the connection's endpoints do. */
	if (e ? s->ref_lip == e->local_ip && s->ref_rip == e->remote_ip &&
		s->ref_lport == e->local_port && s->ref_rport == e->remote_port
	      : s->inh_owner == m->owner)
		m->s = s;
}

struct ssp_sock *ssp_ref_find(const struct ss_event *e)
{
	struct ref_match m = { e, 0, (uint32_t)(e->cookie >> 32), (uint32_t)e->cookie, NULL };

	ssp_fd_foreach(ref_match, &m);
	return m.s;
}

void ssp_ref_gone(uint32_t owner, uint32_t slot, uint32_t gen)
{
	struct ref_match m = { NULL, owner, slot, gen, NULL };
	struct ssp_sock *s;

	ssp_fd_foreach(ref_match, &m);
	s = m.s;
	if (!s)
		return;
	if (s->inh && s->cookie)
		return; /* a claim is on its way: its answer (EBADF) settles it */
	s->inh = false;
	s->conn = NULL;
	s->state = SSP_S_FAILED;
	s->err = 0;
	s->moved = true;
	ssp_log_once("fork_moved", "a socket shared across fork is in use by another "
		     "process (or closed): this copy fails with ENOTCONN");
	ssp_sock_touch(s);
}

/* ------------------------------------------------------------------ fork */

static void mark_shared(int fd, struct ssp_file *f, void *arg)
{
	(void)fd;
	(void)arg;
	if (f->type == SSP_F_SOCK)
		SSP_CONTAINER(f, struct ssp_sock, f)->shared = true;
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

	ssp_real_init();
	if (!real_fork) {
		void *sym = dlsym(RTLD_NEXT, "fork");

		memcpy(&real_fork, &sym, sizeof(sym));
		if (!real_fork) {
			errno = ENOSYS;
			return -1;
		}
	}
	ssp_lock();
	share = ssp.mode == SSP_M_ON;
	if (share) {
		ssp_fd_foreach(fd_count, &n);
		share = n > 0;
	}
	if (share) {
		ssp_fd_foreach(mark_shared, NULL);
		ss_flush(ssp.ctx); /* the service's view is ours at fork time */
	}
	ssp_unlock();
	if (share && pipe2(p, O_CLOEXEC) < 0)
		share = false; /* the child attaches on first use */
	pid = real_fork();
	if (pid == 0) {
		if (share) {
			char one = 1;

			ssp_real.close(p[0]);
			ssp_lock();
			ssp_child_attach();
			ssp_unlock();
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

	ssp_real_init();
	ssp_lock();
	/* Only the process the attachment belongs to: a vfork() child shares
	 * our memory, and a child forked around the shim never attached; in
	 * both the kernel's close-on-exec is all there is to do. */
	if (ssp.mode != SSP_M_ON || ssp.pid != getpid()) {
		ssp_unlock();
		return;
	}
	ssp_fd_foreach(fd_count, &n);
	x.fd = n ? malloc(n * sizeof(*x.fd)) : NULL;
	x.cap = x.fd ? n : 0;
	ssp_fd_foreach(collect_socks, &x);
	ssp_unlock();
	if (x.inherit)
		ssp_log_once("exec", "exec: accelerated sockets cannot cross exec; those without "
			     "close-on-exec are closed too (the new program gets EBADF on them)");
	/* Closed cleanly now (FIN, or the reference of a forked child
	 * dropped) rather than reset when the attachment hangs up. */
	for (unsigned i = 0; i < x.n; i++)
		ssp_close(x.fd[i]);
	free(x.fd);
}
