/* test_lib_attach.c - ss_app_attach against a fake service: good, refused, malformed, corrupt regions. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "smaps.h"
#include "fake_svc.h"
#include "lib/lib.h"
#include "slipstream.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Attach to a fake built with @fo; returns the app (or NULL with errno). */
static struct ss_app *attach_fake(struct fake_svc *f, const struct fake_opts *fo,
				  struct ss_app_opts *ao)
{
	struct ss_app *app;
	int e;

	if (fake_start(f, fo) < 0) {
		perror("fake_start");
		return NULL;
	}
	ao->sock_path = f->sock;
	app = ss_app_attach(ao);
	e = errno;
	fake_join(f);
	errno = e;
	return app;
}

/* Attach expecting failure with @want_errno; the fake is cleaned up. */
static void expect_fail(const struct fake_opts *fo, int want_errno, int line)
{
	struct fake_svc f;
	struct ss_app_opts ao = { .conns = fo->conns ? fo->conns : 8,
				  .rxbuf = 4096, .txbuf = 4096,
				  .contexts = fo->contexts ? fo->contexts : 1 };
	struct ss_app *app;
	int fds_before = count_fds();

	app = attach_fake(&f, fo, &ao);
	if (app || errno != want_errno)
		fprintf(stderr, "    (case at line %d: app %p errno %d)\n", line,
			(void *)app, errno);
	CHECK(app == NULL);
	CHECK_EQ_U64(errno, want_errno);
	ss_app_detach(app);
	fake_stop(&f);
	CHECK_EQ_U64(count_fds(), fds_before); /* nothing leaked */
}

static void test_no_service(void)
{
	struct ss_app_opts ao = { .sock_path = "/nonexistent/ss/ctl.sock" };
	char dir[] = "/tmp/ss-libtest-XXXXXX", path[100];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, ECONNREFUSED);

	/* A socket file nobody listens on any more. */
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	close(fd);
	ao.sock_path = path;
	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, ECONNREFUSED);

	/* Listening but never answering: ETIMEDOUT. */
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fd, 1) == 0);
	ao.timeout_ms = 50;
	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, ETIMEDOUT);
	close(fd);
	unlink(path);
	rmdir(dir);
}

static void test_bad_opts(void)
{
	struct ss_app_opts ao = { .sock_path = "/nonexistent", .rxbuf = 1000 };
	char longpath[200];

	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, EINVAL);
	ao.rxbuf = 0;
	ao.contexts = SS_MAX_CONTEXTS + 1;
	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, EINVAL);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	ao.contexts = 1;
	ao.sock_path = longpath;
	CHECK(ss_app_attach(&ao) == NULL);
	CHECK_EQ_U64(errno, ENAMETOOLONG);
}

static void test_good(void)
{
	struct fake_opts fo = { .contexts = 2, .conns = 8 };
	struct ss_app_opts ao = { .contexts = 2, .conns = 8, .rxbuf = 4096, .txbuf = 4096 };
	struct fake_svc f;
	struct ss_app *app;
	int fds_before = count_fds();

	app = attach_fake(&f, &fo, &ao);
	CHECK(app != NULL);
	if (!app) {
		fake_stop(&f);
		return;
	}
	CHECK_STR(f.req, "attach 1 contexts=2 conns=8 rxbuf=4096 txbuf=4096\n");
	CHECK_EQ_U64(ss_app_n_ctx(app), 2);
	CHECK_EQ_U64(ss_app_id(app), 7);
	CHECK(ss_ctx_get(app, 0) != NULL);
	CHECK(ss_ctx_get(app, 1) != NULL);
	CHECK(ss_ctx_get(app, 0) != ss_ctx_get(app, 1));
	CHECK(ss_ctx_get(app, 2) == NULL);
	CHECK_EQ_U64(errno, EINVAL);
	CHECK(ss_ctx_fd(ss_ctx_get(app, 0)) >= 0);
	ss_app_detach(app);
	fake_stop(&f);
	CHECK_EQ_U64(count_fds(), fds_before);
}

static void test_env_sock(void)
{
	struct fake_opts fo = { 0 };
	struct fake_svc f;
	struct ss_app *app;

	CHECK(fake_start(&f, &fo) == 0);
	setenv("SLIPSTREAM_SOCK", f.sock, 1);
	app = ss_app_attach(&(struct ss_app_opts){ .conns = 8, .rxbuf = 4096,
						   .txbuf = 4096 });
	fake_join(&f);
	unsetenv("SLIPSTREAM_SOCK");
	CHECK(app != NULL);
	CHECK_STR(f.req, "attach 1 contexts=1 conns=8 rxbuf=4096 txbuf=4096\n");
	ss_app_detach(app);
	fake_stop(&f);

	/* Rings of the full size from the start: the request says so. */
	CHECK(fake_start(&f, &fo) == 0);
	setenv("SLIPSTREAM_SOCK", f.sock, 1);
	app = ss_app_attach(&(struct ss_app_opts){ .conns = 8, .rxbuf = 4096, .txbuf = 4096,
						   .fixed_rings = 1 });
	fake_join(&f);
	unsetenv("SLIPSTREAM_SOCK");
	CHECK(app != NULL);
	CHECK_STR(f.req, "attach 1 contexts=1 conns=8 rxbuf=4096 txbuf=4096 small=0\n");
	if (app)
		ss_app_detach(app);
	fake_stop(&f);
}

static void test_refused(void)
{
	struct fake_opts fo = {
		.reply = "{\"ok\":false,\"error\":\"too many applications\"}\n",
		.nfds = -1,
	};
	struct ss_app_opts ao = { .errbuf = (char[64]){ 0 }, .errbuf_len = 64 };
	struct fake_svc f;

	CHECK(attach_fake(&f, &fo, &ao) == NULL);
	CHECK_EQ_U64(errno, EREMOTEIO);
	CHECK_STR(ao.errbuf, "too many applications");
	fake_stop(&f);
}

static void corrupt_magic(struct fake_svc *f) { f->hdr->magic ^= 1; }
static void corrupt_version(struct fake_svc *f) { f->hdr->version = SS_SHM_VERSION + 1; }
static void corrupt_conns(struct fake_svc *f) { f->hdr->max_conns = 1000; }
static void corrupt_buf_off(struct fake_svc *f) { f->hdr->buf_off = f->region_size + 4096; }
static void corrupt_rxbuf(struct fake_svc *f) { f->hdr->rxbuf_size = 3000; }
static void corrupt_slots(struct fake_svc *f) { f->hdr->arx_slots = 0; }
static void corrupt_stride(struct fake_svc *f) { f->hdr->ctx_stride = 64; }
static void corrupt_ctx_off(struct fake_svc *f) { f->hdr->ctx_off = 0; }
static void corrupt_region_size(struct fake_svc *f) { f->hdr->region_size += 4096; }
static void corrupt_status(struct fake_svc *f) { f->status->magic = 0; }
static void corrupt_overlap(struct fake_svc *f) { f->hdr->buf_off = f->hdr->ctx_off; }
static void corrupt_info_off(struct fake_svc *f) { f->hdr->info_off = f->hdr->ctx_off; }
static void corrupt_info_room(struct fake_svc *f) { f->hdr->info_off = f->hdr->buf_off - 64; }
static void corrupt_sync_info(struct fake_svc *f) { f->hdr->sync_off = f->hdr->info_off; }
static void corrupt_sync_room(struct fake_svc *f) { f->hdr->sync_off = f->hdr->buf_off; }
static void corrupt_sync_align(struct fake_svc *f) { f->hdr->sync_off += 8; }
static void corrupt_sync_low(struct fake_svc *f) { f->hdr->sync_off = f->hdr->ctx_off; }
/* Small rings (shm/abi.h) over the sync words, with too little room, or
 * not page aligned. */
static void corrupt_small_low(struct fake_svc *f) { f->hdr->small_off = f->hdr->sync_off & ~4095ull; }
static void corrupt_small_room(struct fake_svc *f) { f->hdr->small_off = f->hdr->buf_off - 4096; }
static void corrupt_small_align(struct fake_svc *f) { f->hdr->small_off = f->hdr->buf_off - 64; }
static void corrupt_small_high(struct fake_svc *f) { f->hdr->small_off = f->hdr->buf_off + 4096; }

static void test_malformed(void)
{
	static const char *const bad_replies[] = {
		"garbage\n",
		"{\"ok\":true}\n",                           /* no sizes */
		"{\"ok\":true,\"app\":7,\"region_size\":\"big\",\"contexts\":1}\n",
		"{\"ok\":true,\"app\":7,\"region_size\":-1,\"contexts\":1}\n",
		"{\"ok\":true,\"app\":7,\"region_size\":99999999999,\"contexts\":1}\n",
		"{\"ok\":true,\"app\":7,\"region_size\":65536,\"contexts\":3}\n",
		"{\"ok\":1}\n",
		"{\"ok\":true,\n",
		"[]\n",
		"\n",
	};
	void (*const corrupts[])(struct fake_svc *) = {
		corrupt_magic, corrupt_version, corrupt_conns, corrupt_buf_off,
		corrupt_rxbuf, corrupt_slots, corrupt_stride, corrupt_ctx_off,
		corrupt_region_size, corrupt_status, corrupt_overlap, corrupt_info_off,
		corrupt_info_room, corrupt_sync_info, corrupt_sync_room, corrupt_sync_align,
		corrupt_sync_low, corrupt_small_low, corrupt_small_room, corrupt_small_align,
		corrupt_small_high,
	};

	for (size_t i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]); i++)
		expect_fail(&(struct fake_opts){ .reply = bad_replies[i] }, EPROTO,
			    __LINE__ + (int)i * 1000);
	for (size_t i = 0; i < sizeof(corrupts) / sizeof(corrupts[0]); i++)
		expect_fail(&(struct fake_opts){ .corrupt = corrupts[i] }, EPROTO,
			    __LINE__ + (int)i * 1000);
	/* Wrong number of fds: too few, too many, none. */
	expect_fail(&(struct fake_opts){ .nfds = 2 }, EPROTO, __LINE__);
	expect_fail(&(struct fake_opts){ .nfds = 5 }, EPROTO, __LINE__);
	expect_fail(&(struct fake_opts){ .nfds = -1 }, EPROTO, __LINE__);
	/* The reply claims fewer contexts than asked for. */
	expect_fail(&(struct fake_opts){ .contexts = 1,
		.reply = "{\"ok\":true,\"app\":7,\"region_size\":1,\"contexts\":1}\n" },
		EPROTO, __LINE__);
}

static void set_hdr_huge(struct fake_svc *f)
{
	((struct ss_shm_hdr *)(void *)f->region)->flags = SS_SHM_HDR_HUGE;
}

/* The library advises huge pages on its mapping exactly when the service
 * says it did (SS_SHM_HDR_HUGE, its --shm-huge on). */
static void test_huge_flag(void)
{
	for (int huge = 0; huge < 2; huge++) {
		struct fake_opts fo = { .contexts = 1, .conns = 8,
					.corrupt = huge ? set_hdr_huge : NULL };
		struct ss_app_opts ao = { .contexts = 1, .conns = 8, .rxbuf = 4096, .txbuf = 4096 };
		struct fake_svc f;
		struct ss_app *app = attach_fake(&f, &fo, &ao);

		CHECK(app != NULL);
		if (app) {
			CHECK_EQ_U64(smaps_advised_huge(app->region), huge);
			ss_app_detach(app);
		}
		fake_stop(&f);
	}
}

int main(void)
{
	test_no_service();
	test_bad_opts();
	test_good();
	test_huge_flag();
	test_env_sock();
	test_refused();
	test_malformed();
	return check_done("test_lib_attach");
}
