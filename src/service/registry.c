/* registry.c - the application registry (the control thread's side): attach, shared memory, hang-up, reclaim. */
#include "service/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "service/populate.h"

#define PAGE 4096u
#define ATTACH_VERSION 1
#define MIN_BUF 4096u
#define POPULATE_STEP (64ull << 20) /* bytes per madvise() */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int ss_app_reg_init(struct ss_app_reg *r, const struct ss_app_limits *lim, unsigned n_fast_paths)
{
	memset(r, 0, sizeof(*r));
	r->lim = *lim;
	r->status_fd = r->doorbell_fd = r->reclaim_fd = -1;
	if (lim->max_ctx == 0 || lim->max_ctx > 64 || !is_pow2(lim->atx_slots) || lim->atx_slots < 2 ||
	    !is_pow2(lim->arx_slots) || n_fast_paths > SS_SHM_MAX_FAST_PATHS)
		return -EINVAL;
	r->apps = calloc(lim->max_apps, sizeof(*r->apps));
	if (!r->apps)
		return -ENOMEM;
	for (uint32_t i = 0; i < lim->max_apps; i++) {
		r->apps[i].id = i;
		r->apps[i].sock_fd = r->apps[i].region_fd = -1;
	}
	/* The status page: writable here, sealed against new writable
	 * mappings so applications can only map it read-only. */
	r->status_fd = memfd_create("slipstream-status", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->status_fd < 0 || ftruncate(r->status_fd, PAGE) != 0)
		goto fail;
	r->status = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, r->status_fd, 0);
	if (r->status == MAP_FAILED) {
		r->status = NULL;
		goto fail;
	}
	if (fcntl(r->status_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0)
		goto fail;
	r->status->magic = SS_SHM_MAGIC;
	r->status->version = SS_SHM_VERSION;
	r->status->n_fast_paths = n_fast_paths;
	r->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->reclaim_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->doorbell_fd < 0 || r->reclaim_fd < 0)
		goto fail;
	return 0;
fail: {
	int rc = -errno;
	ss_app_reg_fini(r);
	return rc ? rc : -ENOMEM;
}
}

static void app_release(struct ss_app *a)
{
	if (a->ctx) {
		for (uint32_t i = 0; i < a->n_ctx; i++)
			if (a->ctx[i].efd >= 0)
				close(a->ctx[i].efd);
		free(a->ctx);
		a->ctx = NULL;
	}
	if (a->region)
		munmap(a->region, a->region_size);
	a->region = NULL;
	if (a->region_fd >= 0)
		close(a->region_fd);
	if (a->sock_fd >= 0)
		close(a->sock_fd);
	a->region_fd = a->sock_fd = -1;
	ss_idpool_fini(&a->slots);
	memset(&a->slots, 0, sizeof(a->slots));
	free(a->slot_conn);
	a->slot_conn = NULL;
	a->n_conns = a->n_listeners = 0;
	free(a->inh); /* the fast path released the references (app_teardown) */
	a->inh = NULL;
	a->n_inh = a->cap_inh = 0;
	a->inherited = false;
	a->parent_token = 0;
	a->cmd_errors = 0;
	a->broken = false;
}

void ss_app_reg_fini(struct ss_app_reg *r)
{
	if (r->apps) {
		for (uint32_t i = 0; i < r->lim.max_apps; i++)
			if (r->apps[i].state != SS_APP_FREE)
				app_release(&r->apps[i]);
		free(r->apps);
	}
	if (r->status)
		munmap(r->status, PAGE);
	if (r->status_fd >= 0)
		close(r->status_fd);
	if (r->doorbell_fd >= 0)
		close(r->doorbell_fd);
	if (r->reclaim_fd >= 0)
		close(r->reclaim_fd);
	memset(r, 0, sizeof(*r));
	r->status_fd = r->doorbell_fd = r->reclaim_fd = -1;
}

struct attach_req {
	unsigned long version, contexts, conns, rxbuf, txbuf;
	unsigned long small;     /* 1 (default): small rings that grow (abi.h) */
	unsigned long long parent, token;
	bool has_parent;
};

/* "attach 1 contexts=C conns=N rxbuf=R txbuf=T [small=0|1] [parent=ID token=T]"
 * (keys in any order; parent and token come together, from a forked child;
 * small=0: every connection on rings of rxbuf and txbuf from the start). */
static int parse_attach(const char *line, struct attach_req *q, char *why, size_t whylen)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", line);
	char *save = NULL, *tok = strtok_r(buf, " \t", &save);
	unsigned seen = 0;

	memset(q, 0, sizeof(*q));
	q->small = 1;
	if (!tok || strcmp(tok, "attach") != 0)
		return snprintf(why, whylen, "not an attach request"), -1;
	tok = strtok_r(NULL, " \t", &save);
	if (!tok || strcmp(tok, "1") != 0)
		return snprintf(why, whylen, "unsupported attach version (want 1)"), -1;
	q->version = 1;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return snprintf(why, whylen, "bad attach field"), -1;
		*eq = '\0';
		char *end;
		errno = 0;
		unsigned long long v = strtoull(eq + 1, &end, 10);
		if (errno || *end || end == eq + 1 || eq[1] == '-')
			return snprintf(why, whylen, "bad number for %s", tok), -1;
		if (strcmp(tok, "parent") == 0)
			q->parent = v, seen |= 16;
		else if (strcmp(tok, "token") == 0)
			q->token = v, seen |= 32;
		else if (v > ULONG_MAX)
			return snprintf(why, whylen, "bad number for %s", tok), -1;
		else if (strcmp(tok, "contexts") == 0)
			q->contexts = v, seen |= 1;
		else if (strcmp(tok, "conns") == 0)
			q->conns = v, seen |= 2;
		else if (strcmp(tok, "rxbuf") == 0)
			q->rxbuf = v, seen |= 4;
		else if (strcmp(tok, "txbuf") == 0)
			q->txbuf = v, seen |= 8;
		else if (strcmp(tok, "small") == 0 && v <= 1)
			q->small = v;
		else if (strcmp(tok, "small") == 0)
			return snprintf(why, whylen, "small must be 0 or 1"), -1;
		else
			return snprintf(why, whylen, "unknown attach field"), -1;
	}
	if ((seen & 15) != 15)
		return snprintf(why, whylen, "attach needs contexts, conns, rxbuf and txbuf"), -1;
	if ((seen & 48) == 16 || (seen & 48) == 32)
		return snprintf(why, whylen, "parent and token come together"), -1;
	q->has_parent = (seen & 48) == 48;
	return 0;
}

static int check_limits(const struct ss_app_limits *lim, const struct attach_req *q, char *why,
			size_t whylen)
{
	if (q->contexts < 1 || q->contexts > lim->max_ctx)
		return snprintf(why, whylen, "contexts must be 1..%u", lim->max_ctx), -1;
	if (q->conns < 1 || q->conns > lim->max_conns)
		return snprintf(why, whylen, "conns must be 1..%u", lim->max_conns), -1;
	if (!is_pow2(q->rxbuf) || q->rxbuf < MIN_BUF || q->rxbuf > lim->max_buf ||
	    !is_pow2(q->txbuf) || q->txbuf < MIN_BUF || q->txbuf > lim->max_buf)
		return snprintf(why, whylen, "rxbuf and txbuf must be powers of two in %u..%u",
				MIN_BUF, lim->max_buf), -1;
	uint64_t need = (uint64_t)q->conns * (q->rxbuf + q->txbuf);
	if (need > lim->max_region)
		return snprintf(why, whylen, "conns * (rxbuf + txbuf) = %llu bytes exceeds max-app-mem %llu",
				(unsigned long long)need, (unsigned long long)lim->max_region), -1;
	return 0;
}

static void send_line(int fd, const char *msg, const int *fds, unsigned nfds)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	union {
		char buf[CMSG_SPACE(sizeof(int) * (3 + 64))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		SS_WARN("attach: reply: %s", strerror(errno));
}

static void refuse(struct ss_app_reg *r, int fd, const char *why)
{
	char msg[320];
	snprintf(msg, sizeof(msg), "{\"ok\": false, \"error\": \"%s\"}\n", why);
	send_line(fd, msg, NULL, 0);
	r->refused++;
	SS_INFO("attach refused: %s", why);
}

/* Lays out the region and fills the trusted copy in @a. */
static int app_map(struct ss_app *a, const struct ss_app_limits *lim, const struct attach_req *q,
		   bool huge)
{
	uint64_t ring_bytes = sizeof(struct ss_shm_ring);
	uint64_t stride = align_up(ring_bytes + (uint64_t)lim->atx_slots * sizeof(struct ss_shm_cmd) +
				   ring_bytes + (uint64_t)lim->arx_slots * sizeof(struct ss_shm_ev), PAGE);
	uint64_t ctx_off = PAGE;
	uint64_t info_off = align_up(ctx_off + stride * q->contexts, PAGE);
	uint64_t sync_off = align_up(info_off + (uint64_t)q->conns * sizeof(struct ss_shm_conn_info),
				     SS_SHM_CACHELINE);
	uint64_t small_end = align_up(sync_off + (uint64_t)q->conns * sizeof(struct ss_shm_conn_sync),
				      PAGE);
	/* Small rings (abi.h) where a direction's ring is larger. */
	uint64_t small_off = 0;
	if (q->small && (q->rxbuf > SS_SHM_SMALL_RING || q->txbuf > SS_SHM_SMALL_RING)) {
		small_off = small_end;
		small_end += (uint64_t)q->conns * (2 * SS_SHM_SMALL_RING);
	}
	uint64_t buf_off = small_end;
	uint64_t size = buf_off + (uint64_t)q->conns * (q->rxbuf + q->txbuf);

	a->region_fd = memfd_create("slipstream-app", MFD_CLOEXEC);
	if (a->region_fd < 0)
		return -errno;
	if (ftruncate(a->region_fd, (off_t)size) != 0)
		return -errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, a->region_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* --shm-huge on: huge pages (bigmem.h), the rings of thousands of
	 * connections then take a few TLB entries, not one per connection
	 * and direction.  Advice only. */
	if (huge)
		(void)madvise(p, size, MADV_HUGEPAGE);
	a->region = p;
	a->region_size = size;
	a->populating = huge;
	a->populated = a->slot_hw = a->populate_kicked = 0;
	a->populate_at = SS_POPULATE_NEVER; /* app_populate() sets it for a huge one */
	a->n_ctx = (uint32_t)q->contexts;
	a->atx_slots = lim->atx_slots;
	a->arx_slots = lim->arx_slots;
	a->max_conns = (uint32_t)q->conns;
	a->rxbuf_size = (uint32_t)q->rxbuf;
	a->txbuf_size = (uint32_t)q->txbuf;
	a->buf_off = buf_off;
	a->info_off = info_off;
	a->sync_off = sync_off;
	a->small_off = small_off;
	a->pop_small_end = 0;
	a->pop_end = buf_off;

	struct ss_shm_hdr *h = (struct ss_shm_hdr *)(void *)a->region;
	h->magic = SS_SHM_MAGIC;
	h->version = SS_SHM_VERSION;
	h->region_size = size;
	h->app_id = a->id;
	h->n_ctx = a->n_ctx;
	h->ctx_off = (uint32_t)ctx_off;
	h->ctx_stride = (uint32_t)stride;
	h->atx_slots = a->atx_slots;
	h->arx_slots = a->arx_slots;
	h->max_conns = a->max_conns;
	h->rxbuf_size = a->rxbuf_size;
	h->txbuf_size = a->txbuf_size;
	h->flags = huge ? SS_SHM_HDR_HUGE : 0;
	h->buf_off = buf_off;
	h->info_off = info_off;
	h->sync_off = sync_off;
	h->small_off = small_off;

	a->ctx = calloc(a->n_ctx, sizeof(*a->ctx));
	if (!a->ctx)
		return -ENOMEM;
	for (uint32_t i = 0; i < a->n_ctx; i++)
		a->ctx[i].efd = -1;
	for (uint32_t i = 0; i < a->n_ctx; i++) {
		struct ss_app_ctx *c = &a->ctx[i];
		uint8_t *base = a->region + ctx_off + stride * i;
		/* Page-aligned base, cache-line multiples after it: aligned. */
		c->atx = (struct ss_shm_ring *)(void *)base;
		c->atx_slot = (struct ss_shm_cmd *)(void *)(base + ring_bytes);
		c->arx = (struct ss_shm_ring *)(void *)(base + ring_bytes +
						 (uint64_t)a->atx_slots * sizeof(struct ss_shm_cmd));
		c->arx_slot = (struct ss_shm_ev *)(void *)((uint8_t *)c->arx + ring_bytes);
		c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (c->efd < 0)
			return -errno;
	}
	int rc = ss_idpool_init(&a->slots, a->max_conns);
	if (rc != 0)
		return rc;
	a->slot_conn = calloc(a->max_conns, sizeof(*a->slot_conn));
	return a->slot_conn ? 0 : -ENOMEM;
}

/* Populates @a's region from *@from to @to rounded up to whole huge pages
 * (at most @cap), adding the bytes to *@bytes and moving *@from along.
 * -1 on failure (errno). */
static int populate_to(struct ss_app *a, uint64_t *from, uint64_t to, uint64_t cap,
		       uint64_t *bytes)
{
	to = align_up(to, SS_POPULATE_PAGE);
	if (to > cap)
		to = cap;
	while (*from < to) {
		uint64_t n = to - *from < POPULATE_STEP ? to - *from : POPULATE_STEP;
		if (madvise(a->region + *from, n, MADV_POPULATE_WRITE) != 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		*from += n;
		*bytes += n;
	}
	return 0;
}

/*
 * Populates @a's region (huge) up to the rings of the slots planned for
 * its high-water mark (populate.h): the first time from byte 0 (the
 * header, the queues and the per-slot records with them), then the small
 * rings of those slots where the region has them (shm/abi.h "Small rings
 * that grow"), then their large rings (a connection that grows must not
 * zero a huge page on the fast path either); and sets the next kick mark.
 * MADV_POPULATE_WRITE faults the pages in writable, zeroed by the kernel,
 * without writing them: safe while the fast path and the application use
 * the pages already there.  On failure (a kernel before 5.14, no memory)
 * the rest is left to first touch, as on small pages.  Returns the bytes
 * populated.
 */
static uint64_t app_populate(struct ss_app_reg *r, struct ss_app *a)
{
	uint32_t hw = __atomic_load_n(&a->slot_hw, __ATOMIC_RELAXED);
	uint64_t slot_bytes = (uint64_t)a->rxbuf_size + a->txbuf_size;
	uint32_t target = ss_populate_target(hw, a->max_conns, slot_bytes);
	uint64_t done = 0;

	uint32_t done_slots = a->populated; /* only this thread writes it */
	if (!a->populating || (target <= done_slots && done_slots))
		return 0;
	uint64_t small_to = a->small_off ? a->small_off + (uint64_t)target * (2 * SS_SHM_SMALL_RING)
					 : a->buf_off;
	if (populate_to(a, &a->pop_small_end, small_to, a->buf_off, &done) != 0 ||
	    populate_to(a, &a->pop_end, a->buf_off + target * slot_bytes, a->region_size,
			&done) != 0) {
		r->populate_errors++;
		SS_WARN("app %u: populating its shared memory ahead: %s; the rest at first touch",
			a->id, strerror(errno));
		a->populating = false;
		__atomic_store_n(&a->populate_at, SS_POPULATE_NEVER, __ATOMIC_RELAXED);
	}
	r->populated_bytes += done;
	if (a->populating) {
		__atomic_store_n(&a->populated, target, __ATOMIC_RELAXED);
		__atomic_store_n(&a->populate_at, ss_populate_kick_at(hw, target, a->max_conns),
				 __ATOMIC_RELAXED);
	}
	return done;
}

uint64_t ss_app_populate(struct ss_app_reg *r)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < r->lim.max_apps; i++) {
		struct ss_app *a = &r->apps[i];
		if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) == SS_APP_ACTIVE)
			n += app_populate(r, a);
	}
	return n;
}

/* CAP_NET_BIND_SERVICE (bit 10) in the effective set of @pid, read from
 * /proc (the peer's credentials at attach, as Linux checks at bind time). */
static bool app_cap_bind(pid_t pid)
{
	char path[64], line[256];
	bool cap = false;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0) {
			unsigned long long v = strtoull(line + 7, NULL, 16);
			cap = (v >> 10) & 1;
			break;
		}
	fclose(f);
	return cap;
}

/* The process name of @pid (/proc/PID/comm), "" if it cannot be read. */
static void app_comm(pid_t pid, char comm[16])
{
	char path[64];
	size_t n = 0;

	comm[0] = '\0';
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	n = fread(comm, 1, 15, f);
	fclose(f);
	while (n && (comm[n - 1] == '\n' || comm[n - 1] == '\0'))
		n--;
	comm[n] = '\0';
}

/* A random non-zero token for the attach reply. */
static uint64_t app_token(void)
{
	uint64_t t = 0;

	while (t == 0)
		if (getrandom(&t, sizeof(t), 0) != (ssize_t)sizeof(t))
			t = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
	return t;
}

int ss_app_attach(struct ss_app_reg *r, int fd, const char *line)
{
	struct attach_req q;
	char why[160];

	if (parse_attach(line, &q, why, sizeof(why)) != 0 ||
	    check_limits(&r->lim, &q, why, sizeof(why)) != 0) {
		refuse(r, fd, why);
		return 0;
	}
	if (q.has_parent) {
		/* A forked child: the parent must be attached, and the token
		 * (which only the parent's process tree has seen) must match. */
		struct ss_app *p = q.parent < r->lim.max_apps ? &r->apps[q.parent] : NULL;
		if (!p || __atomic_load_n(&p->state, __ATOMIC_ACQUIRE) != SS_APP_ACTIVE ||
		    p->token != q.token || q.token == 0) {
			refuse(r, fd, "parent is not attached or the token does not match");
			return 0;
		}
	}
	struct ss_app *a = NULL;
	for (uint32_t i = 0; i < r->lim.max_apps; i++)
		if (__atomic_load_n(&r->apps[i].state, __ATOMIC_ACQUIRE) == SS_APP_FREE) {
			a = &r->apps[i];
			break;
		}
	if (!a) {
		snprintf(why, sizeof(why), "too many applications (max-apps %u)", r->lim.max_apps);
		refuse(r, fd, why);
		return 0;
	}
	int rc = app_map(a, &r->lim, &q, r->shm_huge);
	if (rc != 0) {
		app_release(a);
		snprintf(why, sizeof(why), "cannot set up shared memory: %s", strerror(-rc));
		refuse(r, fd, why);
		return 0;
	}
	(void)app_populate(r, a); /* before the app or the fast path touches it */
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	a->pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 ? cred.pid : 0;
	a->cap_bind = app_cap_bind(a->pid);
	app_comm(a->pid, a->comm);
	a->cc_ready = false;
	a->cap = NULL;
	a->token = app_token();
	a->parent_id = q.has_parent ? (uint32_t)q.parent : 0;
	a->parent_token = q.has_parent ? q.token : 0;

	int fds[3 + 64];
	unsigned nfds = 0;
	fds[nfds++] = a->region_fd;
	fds[nfds++] = r->status_fd;
	fds[nfds++] = r->doorbell_fd;
	for (uint32_t i = 0; i < a->n_ctx; i++)
		fds[nfds++] = a->ctx[i].efd;
	char msg[256];
	snprintf(msg, sizeof(msg),
		 "{\"ok\": true, \"app\": %u, \"region_size\": %llu, \"contexts\": %u, "
		 "\"token\": %llu}\n", a->id,
		 (unsigned long long)a->region_size, a->n_ctx, (unsigned long long)a->token);
	/* Publish to the fast path before the app can send commands. */
	a->sock_fd = fd;
	__atomic_store_n(&a->state, SS_APP_ACTIVE, __ATOMIC_RELEASE);
	__atomic_add_fetch(&r->gen, 1, __ATOMIC_RELEASE);
	send_line(fd, msg, fds, nfds);
	r->attached++;
	SS_INFO("app %u attached: pid %d, %u contexts, %u connections, rx %u / tx %u bytes%s",
		a->id, (int)a->pid, a->n_ctx, a->max_conns, a->rxbuf_size, a->txbuf_size,
		a->small_off ? ", starting on 4 KiB rings" : "");
	return 1;
}

void ss_app_hangup(struct ss_app_reg *r, struct ss_app *a)
{
	if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) != SS_APP_ACTIVE)
		return;
	__atomic_store_n(&a->state, SS_APP_DYING, __ATOMIC_RELEASE);
	__atomic_add_fetch(&r->gen, 1, __ATOMIC_RELEASE);
	uint64_t one = 1;
	if (write(r->doorbell_fd, &one, sizeof(one)) < 0)
		SS_WARN("app %u: doorbell: %s", a->id, strerror(errno));
	SS_INFO("app %u (pid %d) hung up: closing its connections", a->id, (int)a->pid);
}

unsigned ss_app_reclaim(struct ss_app_reg *r)
{
	unsigned n = 0;
	for (uint32_t i = 0; i < r->lim.max_apps; i++) {
		struct ss_app *a = &r->apps[i];
		if (__atomic_load_n(&a->state, __ATOMIC_ACQUIRE) != SS_APP_DEAD)
			continue;
		app_release(a);
		__atomic_store_n(&a->state, SS_APP_FREE, __ATOMIC_RELEASE);
		r->detached++;
		n++;
		SS_INFO("app %u: memory reclaimed", a->id);
	}
	return n;
}

uint64_t ss_app_reg_memory(const struct ss_app_reg *r)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < r->lim.max_apps; i++)
		if (__atomic_load_n(&r->apps[i].state, __ATOMIC_ACQUIRE) != SS_APP_FREE)
			sum += r->apps[i].region_size;
	return sum;
}
