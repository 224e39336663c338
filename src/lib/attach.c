/* attach.c - attach to the service: socket, reply and fds, mapping and validating the region. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib.h"

#define REPLY_MAX 4096
#define MAX_FDS (3 + SS_MAX_CONTEXTS)
#define STATUS_MAX (1u << 20)

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t align64(uint64_t v)
{
	return (v + SS_SHM_CACHELINE - 1) & ~(uint64_t)(SS_SHM_CACHELINE - 1);
}

/* Offsets of context @i's rings inside the region (see shm/abi.h). */
static uint64_t ctx_atx_off(const struct ss_shm_hdr *h, unsigned i)
{
	return h->ctx_off + (uint64_t)i * h->ctx_stride;
}

static uint64_t ctx_arx_rel(const struct ss_shm_hdr *h)
{
	return align64(sizeof(struct ss_shm_ring) +
		       (uint64_t)h->atx_slots * sizeof(struct ss_shm_cmd));
}

/*
 * ss_region_validate - check a region header before trusting any of it:
 * magic, version, the size it claims, power-of-two and bounded ring and
 * buffer sizes, and that the contexts and connection buffers lie inside
 * the region without overlapping the header or each other.
 * Returns 0, or -1 with errno EPROTO.
 */
int ss_region_validate(const void *region, uint64_t region_size, uint32_t n_ctx)
{
	const struct ss_shm_hdr *h = region;
	uint64_t ctx_need, ctx_end, per_conn;

	if (region_size < sizeof(*h))
		goto bad;
	if (h->magic != SS_SHM_MAGIC || h->version != SS_SHM_VERSION ||
	    h->region_size != region_size || h->n_ctx != n_ctx)
		goto bad;
	if (!is_pow2(h->atx_slots) || h->atx_slots > SS_LIB_MAX_SLOTS ||
	    !is_pow2(h->arx_slots) || h->arx_slots > SS_LIB_MAX_SLOTS ||
	    !is_pow2(h->rxbuf_size) || h->rxbuf_size > SS_LIB_MAX_BUF ||
	    !is_pow2(h->txbuf_size) || h->txbuf_size > SS_LIB_MAX_BUF ||
	    h->max_conns == 0 || h->max_conns > SS_LIB_MAX_CONNS)
		goto bad;
	if (h->ctx_off < sizeof(*h) || h->ctx_off % SS_SHM_CACHELINE ||
	    h->ctx_stride % SS_SHM_CACHELINE)
		goto bad;
	ctx_need = ctx_arx_rel(h) + sizeof(struct ss_shm_ring) +
		   (uint64_t)h->arx_slots * sizeof(struct ss_shm_ev);
	if (h->ctx_stride < ctx_need)
		goto bad;
	/* All terms are < 2^32 * 2^6 or products of 32-bit values: no
	 * 64-bit overflow below. */
	ctx_end = (uint64_t)h->ctx_off + (uint64_t)n_ctx * h->ctx_stride;
	per_conn = (uint64_t)h->rxbuf_size + h->txbuf_size;
	if (h->buf_off < ctx_end || h->buf_off > region_size ||
	    (region_size - h->buf_off) / per_conn < h->max_conns)
		goto bad;
	if (h->info_off < ctx_end || h->info_off % SS_SHM_CACHELINE ||
	    h->info_off > h->buf_off ||
	    (h->buf_off - h->info_off) / sizeof(struct ss_shm_conn_info) < h->max_conns)
		goto bad;
	/* The sync words: after the info records, before the buffers. */
	if (h->sync_off % SS_SHM_CACHELINE || h->sync_off < h->info_off ||
	    h->sync_off > h->buf_off ||
	    h->sync_off - h->info_off < (uint64_t)h->max_conns * sizeof(struct ss_shm_conn_info) ||
	    (h->buf_off - h->sync_off) / sizeof(struct ss_shm_conn_sync) < h->max_conns)
		goto bad;
	/* The small rings (abi.h): after the sync words, before the buffers. */
	if (h->small_off &&
	    (h->small_off % SS_SHM_SMALL_RING || h->small_off < h->sync_off ||
	     h->small_off > h->buf_off ||
	     h->small_off - h->sync_off < (uint64_t)h->max_conns * sizeof(struct ss_shm_conn_sync) ||
	     (h->buf_off - h->small_off) / (2 * SS_SHM_SMALL_RING) < h->max_conns))
		goto bad;
	return 0;
bad:
	errno = EPROTO;
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			ss_sys_close(fds[i]);
}

static int sock_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = ss_sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (ss_sys_connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		ss_sys_close(fd);
		errno = (e == ENOENT || e == ENOTSOCK) ? ECONNREFUSED : e;
		return -1;
	}
	return fd;
}

static int send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = ss_sys_send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Take the SCM_RIGHTS fds of one recvmsg into fds[*nfds...]; fds beyond
 * MAX_FDS are closed and make the reply invalid (*overflow). */
static void take_fds(struct msghdr *mh, int *fds, int *nfds, bool *overflow)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (*nfds < MAX_FDS) {
				fds[(*nfds)++] = fd;
			} else {
				ss_sys_close(fd);
				*overflow = true;
			}
		}
	}
}

/* Read the reply line (up to '\n') and the fds that come with it.
 * Returns 0, or -1 with errno ETIMEDOUT, EPROTO (hang-up, too long,
 * truncated control data, too many fds) or from poll/recvmsg. */
static int recv_reply(int sock, char *line, int *fds, int *nfds, int timeout_ms)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	size_t len = 0;
	bool overflow = false;

	*nfds = 0;
	for (;;) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		struct iovec iov = { line + len, REPLY_MAX - 1 - len };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
		};
		int wait = -1, pr;
		ssize_t n;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			wait = left > 0 ? (int)left : 0;
		}
		pr = ss_sys_poll(&pfd, 1, wait);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			goto fail;
		if (pr == 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		n = ss_sys_recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		take_fds(&mh, fds, nfds, &overflow);
		if (n == 0 || (mh.msg_flags & MSG_CTRUNC) || overflow)
			goto proto;
		len += (size_t)n;
		line[len] = '\0';
		if (memchr(line, '\0', len))
			goto proto;
		if (strchr(line, '\n'))
			return 0;
		if (len >= REPLY_MAX - 1)
			goto proto;
	}
proto:
	errno = EPROTO;
fail:;
	int e = errno;

	close_fds(fds, *nfds);
	*nfds = 0;
	errno = e;
	return -1;
}

/* Map @fd read-write (region) or read-only (status page), checking the
 * file is at least @size bytes.  Returns the mapping or MAP_FAILED. */
static void *map_fd(int fd, uint64_t size, int prot)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < size || size == 0 ||
	    size > SIZE_MAX) {
		errno = EPROTO;
		return MAP_FAILED;
	}
	return mmap(NULL, (size_t)size, prot, MAP_SHARED, fd, 0);
}

static int set_nonblock(int fd)
{
	int fl = ss_sys_fcntl(fd, F_GETFL, 0);

	if (fl < 0 || ss_sys_fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

/* Address of region offset @off (validated to be 64-byte aligned for rings). */
static void *region_at(const struct ss_app *app, uint64_t off)
{
	return (uint8_t *)app->region + off;
}

static int ctx_init(struct ss_app *app, unsigned i, int evfd)
{
	const struct ss_shm_hdr *h = app->hdr;
	struct ss_ctx *ctx = &app->ctx[i];
	uint64_t atx = ctx_atx_off(h, i), arx = atx + ctx_arx_rel(h);
	uint64_t ring = sizeof(struct ss_shm_ring);

	ctx->app = app;
	ctx->idx = i;
	ctx->evfd = evfd;
	ctx->atx.r = region_at(app, atx);
	ctx->atx.slots = region_at(app, atx + ring);
	ctx->atx.mask = h->atx_slots - 1;
	/* Start from whatever indices the region holds (zero when fresh). */
	ctx->atx.prod = ctx->atx.published =
		__atomic_load_n(&ctx->atx.r->prod, __ATOMIC_RELAXED);
	ctx->atx.cons_cache = ctx->atx.prod - h->atx_slots;
	ctx->arx.r = region_at(app, arx);
	ctx->arx.slots = region_at(app, arx + ring);
	ctx->arx.mask = h->arx_slots - 1;
	ctx->arx.cons = ctx->arx.released =
		__atomic_load_n(&ctx->arx.r->cons, __ATOMIC_RELAXED);
	ctx->arx.has_split = false;
	ctx->conns = calloc(h->max_conns, sizeof(*ctx->conns));
	return ctx->conns ? 0 : -1;
}

static void app_free(struct ss_app *app)
{
	for (unsigned i = 0; i < app->n_ctx; i++) {
		struct ss_ctx *ctx = &app->ctx[i];

		if (ctx->conns)
			ss_ctx_free_conns(ctx);
		free(ctx->conns);
		if (ctx->evfd >= 0)
			ss_sys_close(ctx->evfd);
	}
	if (app->region)
		munmap(app->region, (size_t)app->region_size);
	if (app->status)
		munmap((void *)app->status, app->status_size);
	if (app->doorbell >= 0)
		ss_sys_close(app->doorbell);
	if (app->sock >= 0)
		ss_sys_close(app->sock);
	free(app);
}

static int opts_check(struct ss_app_opts *o)
{
	if (!o->contexts)
		o->contexts = 1;
	if (!o->conns)
		o->conns = 1024;
	if (!o->rxbuf)
		o->rxbuf = 65536;
	if (!o->txbuf)
		o->txbuf = 65536;
	if (!o->timeout_ms)
		o->timeout_ms = 5000;
	if (!o->sock_path)
		o->sock_path = getenv("SLIPSTREAM_SOCK");
	if (!o->sock_path || !*o->sock_path)
		o->sock_path = SS_DEFAULT_SOCK;
	if (o->contexts > SS_MAX_CONTEXTS || o->conns > SS_LIB_MAX_CONNS ||
	    !is_pow2(o->rxbuf) || o->rxbuf > SS_LIB_MAX_BUF ||
	    !is_pow2(o->txbuf) || o->txbuf > SS_LIB_MAX_BUF) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Everything after a good reply line: map and check the fds. */
static int app_setup(struct ss_app *app, const struct ss_reply *rep,
		     int *fds, int nfds, uint32_t n_ctx)
{
	const struct ss_shm_status *st;
	struct stat sst;

	if (!rep->has_region_size || !rep->has_contexts ||
	    rep->contexts != n_ctx || nfds != 3 + (int)n_ctx ||
	    rep->region_size < sizeof(struct ss_shm_hdr) ||
	    rep->region_size > SIZE_MAX / 2)
		goto proto;
	app->region = map_fd(fds[0], rep->region_size, PROT_READ | PROT_WRITE);
	if (app->region == MAP_FAILED) {
		app->region = NULL;
		return -1;
	}
	/* As the service does (its --shm-huge on): a page this side touches
	 * first must be a huge one too.  Advice only. */
	if (((const struct ss_shm_hdr *)app->region)->flags & SS_SHM_HDR_HUGE)
		(void)madvise(app->region, (size_t)rep->region_size, MADV_HUGEPAGE);
	app->region_size = rep->region_size;
	if (ss_region_validate(app->region, app->region_size, n_ctx) < 0)
		return -1;
	app->hdr = app->region;

	if (fstat(fds[1], &sst) < 0 || sst.st_size < (off_t)sizeof(*st) ||
	    sst.st_size > STATUS_MAX)
		goto proto;
	app->status_size = (size_t)sst.st_size;
	st = map_fd(fds[1], app->status_size, PROT_READ);
	if (st == MAP_FAILED)
		return -1;
	app->status = st;
	if (st->magic != SS_SHM_MAGIC || st->version != SS_SHM_VERSION ||
	    st->n_fast_paths == 0 || st->n_fast_paths > SS_SHM_MAX_FAST_PATHS)
		goto proto;

	app->app_id = app->hdr->app_id;
	app->token = rep->has_token ? rep->token : 0;
	app->max_conns = app->hdr->max_conns;
	app->rxbuf_size = app->hdr->rxbuf_size;
	app->txbuf_size = app->hdr->txbuf_size;
	app->buf_off = app->hdr->buf_off;
	app->info_off = app->hdr->info_off;
	app->sync_off = app->hdr->sync_off;
	app->small_off = app->hdr->small_off;
	ss_sys_close(fds[0]);
	ss_sys_close(fds[1]);
	fds[0] = fds[1] = -1;
	app->doorbell = fds[2];
	fds[2] = -1;
	if (set_nonblock(app->doorbell) < 0)
		return -1;
	for (unsigned i = 0; i < n_ctx; i++) {
		int evfd = fds[3 + i];

		fds[3 + i] = -1;
		if (ctx_init(app, i, evfd) < 0)
			return -1;
		if (set_nonblock(evfd) < 0)
			return -1;
	}
	return 0;
proto:
	errno = EPROTO;
	return -1;
}

struct ss_app *ss_app_attach(const struct ss_app_opts *opts)
{
	struct ss_app_opts o = { 0 };
	struct ss_app *app;
	struct ss_reply rep;
	char req[192], *line;
	int fds[MAX_FDS], nfds = 0, e;

	if (opts)
		o = *opts;
	if (opts_check(&o) < 0)
		return NULL;
	app = calloc(1, sizeof(*app) + o.contexts * sizeof(struct ss_ctx));
	line = malloc(REPLY_MAX);
	if (!app || !line) {
		free(app);
		free(line);
		errno = ENOMEM;
		return NULL;
	}
	app->sock = app->doorbell = -1;
	for (unsigned i = 0; i < o.contexts; i++) {
		app->ctx[i].evfd = -1;
		ss_ctx_lists_init(&app->ctx[i]);
	}

	app->sock = sock_connect(o.sock_path);
	if (app->sock < 0)
		goto fail;
	/* The service's default is small rings that grow (shm/abi.h). */
	const char *fixed = o.fixed_rings ? " small=0" : "";
	if (o.parent_token)
		snprintf(req, sizeof(req),
			 "attach 1 contexts=%u conns=%u rxbuf=%u txbuf=%u%s parent=%u token=%llu\n",
			 o.contexts, o.conns, o.rxbuf, o.txbuf, fixed, o.parent_app,
			 (unsigned long long)o.parent_token);
	else
		snprintf(req, sizeof(req), "attach 1 contexts=%u conns=%u rxbuf=%u txbuf=%u%s\n",
			 o.contexts, o.conns, o.rxbuf, o.txbuf, fixed);
	if (send_all(app->sock, req, strlen(req)) < 0)
		goto fail;
	if (recv_reply(app->sock, line, fds, &nfds, o.timeout_ms) < 0)
		goto fail;
	if (ss_reply_parse(line, &rep) < 0 || rep.ok < 0) {
		errno = EPROTO;
		goto fail;
	}
	if (!rep.ok) {
		if (o.errbuf && o.errbuf_len)
			snprintf(o.errbuf, o.errbuf_len, "%s", rep.error);
		errno = EREMOTEIO;
		goto fail;
	}
	/* From here on the app owns the contexts' memory layout. */
	app->n_ctx = o.contexts;
	if (app_setup(app, &rep, fds, nfds, o.contexts) < 0)
		goto fail;
	free(line);
	return app;
fail:
	e = errno;
	close_fds(fds, nfds);
	app_free(app);
	free(line);
	errno = e;
	return NULL;
}

void ss_app_forget(struct ss_app *app)
{
	if (app)
		app_free(app);
}

void ss_app_detach(struct ss_app *app)
{
	if (!app)
		return;
	for (unsigned i = 0; i < app->n_ctx; i++)
		ss_flush(&app->ctx[i]);
	app_free(app);
}

unsigned ss_app_n_ctx(const struct ss_app *app)
{
	return app->n_ctx;
}

uint32_t ss_app_id(const struct ss_app *app)
{
	return app->app_id;
}

uint64_t ss_app_token(const struct ss_app *app)
{
	return app->token;
}

struct ss_ctx *ss_ctx_get(struct ss_app *app, unsigned i)
{
	if (!app || i >= app->n_ctx) {
		errno = EINVAL;
		return NULL;
	}
	return &app->ctx[i];
}

int ss_conn_info(const struct ss_conn *c, struct ss_shm_conn_info *out)
{
	const struct ss_app *app = c->ctx->app;
	const volatile struct ss_shm_conn_info *in;

	if (c->slot >= app->max_conns)
		return -1;
	in = (const volatile struct ss_shm_conn_info *)(const void *)((const uint8_t *)app->region +
								      app->info_off) + c->slot;
	for (int tries = 0; tries < 64; tries++) {
		uint32_t seq = __atomic_load_n(&in->seq, __ATOMIC_ACQUIRE);

		if (seq & 1)
			continue; /* the service is writing it */
		memcpy(out, (const void *)in, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&in->seq, __ATOMIC_RELAXED) == seq)
			return seq ? 0 : -1; /* 0: never written */
	}
	return -1;
}
