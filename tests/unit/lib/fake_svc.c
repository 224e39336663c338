/* fake_svc.c - a scripted stand-in for slipstreamd's side of shm/abi.h, for libslipstream tests. */
#include "fake_svc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "slipstream.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint64_t ctx_arx_rel(const struct ss_shm_hdr *h)
{
	return align_up(sizeof(struct ss_shm_ring) +
			(uint64_t)h->atx_slots * sizeof(struct ss_shm_cmd), 64);
}

struct ss_shm_ring *fake_atx(struct fake_svc *f, unsigned ctx)
{
	return (void *)(f->region + f->hdr->ctx_off + (uint64_t)ctx * f->hdr->ctx_stride);
}

struct ss_shm_ring *fake_arx(struct fake_svc *f, unsigned ctx)
{
	return (void *)((uint8_t *)fake_atx(f, ctx) + ctx_arx_rel(f->hdr));
}

static struct ss_shm_cmd *atx_slots(struct fake_svc *f, unsigned ctx)
{
	return (void *)(fake_atx(f, ctx) + 1);
}

static struct ss_shm_ev *arx_slots(struct fake_svc *f, unsigned ctx)
{
	return (void *)(fake_arx(f, ctx) + 1);
}

uint64_t fake_rx_off(const struct fake_svc *f, uint32_t slot)
{
	return f->hdr->buf_off + (uint64_t)slot * (f->o.rxbuf + f->o.txbuf);
}

uint64_t fake_tx_off(const struct fake_svc *f, uint32_t slot)
{
	return fake_rx_off(f, slot) + f->o.rxbuf;
}

uint64_t fake_rx_small_off(const struct fake_svc *f, uint32_t slot)
{
	return f->hdr->small_off + (uint64_t)slot * (2 * SS_SHM_SMALL_RING);
}

uint64_t fake_tx_small_off(const struct fake_svc *f, uint32_t slot)
{
	return fake_rx_small_off(f, slot) + SS_SHM_SMALL_RING;
}

static int build_region(struct fake_svc *f)
{
	const struct fake_opts *o = &f->o;
	uint64_t stride, ctx_off = align_up(sizeof(struct ss_shm_hdr), 64), info_off, sync_off;
	uint64_t buf_off, size;
	struct ss_shm_hdr h = {
		.magic = SS_SHM_MAGIC, .version = SS_SHM_VERSION, .app_id = 7,
		.n_ctx = o->contexts, .atx_slots = o->atx_slots,
		.arx_slots = o->arx_slots, .max_conns = o->conns,
		.rxbuf_size = o->rxbuf, .txbuf_size = o->txbuf,
	};

	stride = align_up(ctx_arx_rel(&h) + sizeof(struct ss_shm_ring) +
			  (uint64_t)o->arx_slots * sizeof(struct ss_shm_ev), 64);
	info_off = align_up(ctx_off + stride * o->contexts, 4096);
	sync_off = align_up(info_off + (uint64_t)o->conns * sizeof(struct ss_shm_conn_info), 64);
	buf_off = align_up(sync_off + (uint64_t)o->conns * sizeof(struct ss_shm_conn_sync), 4096);
	if (o->small) {
		h.small_off = buf_off;
		buf_off += (uint64_t)o->conns * (2 * SS_SHM_SMALL_RING);
	}
	size = buf_off + (uint64_t)o->conns * (o->rxbuf + o->txbuf);
	h.ctx_off = (uint32_t)ctx_off;
	h.ctx_stride = (uint32_t)stride;
	h.buf_off = buf_off;
	h.info_off = info_off;
	h.sync_off = sync_off;
	h.region_size = size;

	f->region_fd = memfd_create("ss-region", MFD_CLOEXEC);
	if (f->region_fd < 0 || ftruncate(f->region_fd, (off_t)size) < 0)
		return -1;
	f->region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 f->region_fd, 0);
	if (f->region == MAP_FAILED)
		return -1;
	f->region_size = size;
	f->hdr = (void *)f->region;
	*f->hdr = h;

	f->status_fd = memfd_create("ss-status", MFD_CLOEXEC);
	if (f->status_fd < 0 || ftruncate(f->status_fd, 4096) < 0)
		return -1;
	f->status = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			 f->status_fd, 0);
	if (f->status == MAP_FAILED)
		return -1;
	f->status->magic = SS_SHM_MAGIC;
	f->status->version = SS_SHM_VERSION;
	f->status->n_fast_paths = 1;
	f->status->sleeping[0] = o->status_sleeping;

	f->doorbell = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (unsigned i = 0; i < o->contexts; i++)
		f->evfd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return f->doorbell < 0 ? -1 : 0;
}

static void *answer(void *arg)
{
	struct fake_svc *f = arg;
	char reply[256];
	size_t len = 0;
	int fds[3 + SS_SHM_MAX_FAST_PATHS], nfds;

	f->cfd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (f->cfd < 0)
		return NULL;
	while (len < sizeof(f->req) - 1) {
		ssize_t n = read(f->cfd, f->req + len, 1);

		if (n <= 0)
			break;
		if (f->req[len++] == '\n')
			break;
	}
	f->req[len] = '\0';
	if (f->o.corrupt)
		f->o.corrupt(f);
	if (f->o.reply)
		snprintf(reply, sizeof(reply), "%s", f->o.reply);
	else
		snprintf(reply, sizeof(reply),
			 "{\"ok\":true,\"app\":7,\"region_size\":%zu,\"contexts\":%u}\n",
			 f->region_size, f->o.contexts);
	fds[0] = f->region_fd;
	fds[1] = f->status_fd;
	fds[2] = f->doorbell;
	for (unsigned i = 0; i < SS_SHM_MAX_FAST_PATHS; i++)
		fds[3 + i] = f->evfd[i < f->o.contexts ? i : 0];
	nfds = f->o.nfds ? f->o.nfds : 3 + (int)f->o.contexts;
	if (nfds < 0)
		nfds = 0;

	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { reply, strlen(reply) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(f->cfd, &mh, MSG_NOSIGNAL) < 0)
		perror("fake_svc: sendmsg");
	return NULL;
}

int fake_start(struct fake_svc *f, const struct fake_opts *o)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(f, 0, sizeof(*f));
	f->o = *o;
	if (!f->o.contexts)
		f->o.contexts = 1;
	if (!f->o.conns)
		f->o.conns = 8;
	if (!f->o.rxbuf)
		f->o.rxbuf = 4096;
	if (!f->o.txbuf)
		f->o.txbuf = 4096;
	if (!f->o.atx_slots)
		f->o.atx_slots = 16;
	if (!f->o.arx_slots)
		f->o.arx_slots = 16;
	f->lfd = f->cfd = f->region_fd = f->status_fd = f->doorbell = -1;
	for (unsigned i = 0; i < SS_SHM_MAX_FAST_PATHS; i++)
		f->evfd[i] = -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/ss-libtest-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/ctl.sock", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	if (build_region(f) < 0)
		return -1;
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(f->lfd, 4) < 0)
		return -1;
	return pthread_create(&f->thr, NULL, answer, f) ? -1 : 0;
}

void fake_join(struct fake_svc *f)
{
	pthread_join(f->thr, NULL);
}

void fake_stop(struct fake_svc *f)
{
	if (f->cfd >= 0)
		close(f->cfd);
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->region && f->region != MAP_FAILED)
		munmap(f->region, f->region_size);
	if (f->status && f->status != MAP_FAILED)
		munmap(f->status, 4096);
	if (f->region_fd >= 0)
		close(f->region_fd);
	if (f->status_fd >= 0)
		close(f->status_fd);
	if (f->doorbell >= 0)
		close(f->doorbell);
	for (unsigned i = 0; i < SS_SHM_MAX_FAST_PATHS; i++)
		if (f->evfd[i] >= 0)
			close(f->evfd[i]);
	unlink(f->sock);
	rmdir(f->dir);
}

int fake_ev(struct fake_svc *f, unsigned ctx, const struct ss_shm_ev *e)
{
	struct ss_shm_ring *r = fake_arx(f, ctx);
	uint32_t cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);

	if (f->arx_prod[ctx] - cons >= f->o.arx_slots)
		return -1;
	arx_slots(f, ctx)[f->arx_prod[ctx] & (f->o.arx_slots - 1)] = *e;
	f->arx_prod[ctx]++;
	return 0;
}

void fake_publish(struct fake_svc *f, unsigned ctx)
{
	struct ss_shm_ring *r = fake_arx(f, ctx);

	__atomic_store_n(&r->prod, f->arx_prod[ctx], __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&r->sleeping, __ATOMIC_RELAXED)) {
		uint64_t one = 1;

		__atomic_store_n(&r->sleeping, 0, __ATOMIC_RELAXED);
		if (write(f->evfd[ctx], &one, sizeof(one)) < 0)
			perror("fake_svc: eventfd");
	}
}

void fake_ev_open(struct fake_svc *f, unsigned ctx, uint8_t type, uint32_t slot,
		  uint32_t gen, uint64_t cookie)
{
	struct ss_shm_ev e = {
		.type = type, .conn = slot, .gen = gen, .cookie = cookie,
		.local_ip = 0x0a000001, .remote_ip = 0x0a000002,
		.local_port = 80, .remote_port = (uint16_t)(40000 + slot),
		.rx_off = f->o.small ? fake_rx_small_off(f, slot) : fake_rx_off(f, slot),
		.tx_off = f->o.small ? fake_tx_small_off(f, slot) : fake_tx_off(f, slot),
	};

	fake_ev(f, ctx, &e);
	fake_publish(f, ctx);
}

void fake_ev_conn(struct fake_svc *f, unsigned ctx, uint8_t type, uint32_t slot,
		  uint32_t gen, uint32_t arg, uint16_t error)
{
	struct ss_shm_ev e = {
		.type = type, .conn = slot, .gen = gen, .arg = arg, .error = error,
	};

	fake_ev(f, ctx, &e);
	fake_publish(f, ctx);
}

void fake_rx(struct fake_svc *f, unsigned ctx, uint32_t slot, uint32_t gen,
	     uint32_t pos, const void *data, uint32_t len)
{
	uint8_t *ring = f->region + fake_rx_off(f, slot);

	for (uint32_t i = 0; i < len; i++)
		ring[(pos + i) & (f->o.rxbuf - 1)] = ((const uint8_t *)data)[i];
	/* The fake's receive origin stays 0 (shm/abi.h). */
	fake_ev(f, ctx, &(struct ss_shm_ev){ .type = SS_EV_RX, .conn = slot, .gen = gen, .arg = len,
					    .arg3 = pos & (f->o.rxbuf - 1) });
	fake_publish(f, ctx);
}

uint32_t fake_cmd_pending(struct fake_svc *f, unsigned ctx)
{
	struct ss_shm_ring *r = fake_atx(f, ctx);

	return __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE) - f->atx_cons[ctx];
}

int fake_cmd(struct fake_svc *f, unsigned ctx, struct ss_shm_cmd *out)
{
	struct ss_shm_ring *r = fake_atx(f, ctx);

	if (!fake_cmd_pending(f, ctx))
		return 0;
	*out = atx_slots(f, ctx)[f->atx_cons[ctx] & (f->o.atx_slots - 1)];
	f->atx_cons[ctx]++;
	__atomic_store_n(&r->cons, f->atx_cons[ctx], __ATOMIC_RELEASE);
	return 1;
}

uint64_t fake_doorbell(struct fake_svc *f)
{
	uint64_t v = 0;

	if (read(f->doorbell, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

int fake_app_up(struct fake_app *x, const struct fake_opts *o)
{
	struct ss_app_opts ao = { .conns = 8, .rxbuf = 4096, .txbuf = 4096 };

	if (fake_start(&x->f, o ? o : &(struct fake_opts){ 0 }) < 0)
		return -1;
	ao.sock_path = x->f.sock;
	ao.rxbuf = x->f.o.rxbuf;
	ao.txbuf = x->f.o.txbuf;
	x->app = ss_app_attach(&ao);
	fake_join(&x->f);
	if (!x->app) {
		perror("ss_app_attach");
		fake_stop(&x->f);
		return -1;
	}
	x->ctx = ss_ctx_get(x->app, 0);
	return 0;
}

void fake_app_down(struct fake_app *x)
{
	ss_app_detach(x->app);
	fake_stop(&x->f);
}

uint64_t fake_app_bogus(struct fake_app *x)
{
	struct ss_ctx_stats st;

	ss_ctx_stats(x->ctx, &st);
	return st.ev_bogus;
}
