/* test_bigmem.c - large arrays: zeroed, aligned, huge-page advice on the big ones, sizes at the edges. */
#include "stack/bigmem.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "smaps.h"

#define MIB ((size_t)1 << 20)

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void test_sizes(void)
{
	static const size_t sizes[] = { 1, 64, 4096, 2 * MIB - 1, 2 * MIB, 2 * MIB + 1, 5 * MIB + 123 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		uint8_t *p = ss_bigmem_alloc(n);

		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK_EQ_U64((uintptr_t)p % 64, 0);
		CHECK(all_zero(p, n));
		memset(p, 0xa5, n); /* every byte is ours */
		CHECK_EQ_U64(p[n - 1], 0xa5);
		if (n >= 2 * MIB) {
			CHECK_EQ_U64((uintptr_t)p % (2 * MIB), 0);
			CHECK_EQ_U64(smaps_advised_huge(p), 1);
		} else {
			CHECK(smaps_advised_huge(p) != 1);
		}
		ss_bigmem_free(p, n);
	}
	CHECK(ss_bigmem_alloc(0) == NULL);
	CHECK(ss_bigmem_alloc(SIZE_MAX) == NULL);
	ss_bigmem_free(NULL, 0);
	ss_bigmem_free(NULL, 4 * MIB);
}

/* Freed mappings are gone: the range can be mapped again, zeroed. */
static void test_reuse(void)
{
	for (int i = 0; i < 64; i++) {
		uint8_t *p = ss_bigmem_alloc(8 * MIB);

		CHECK(p != NULL);
		if (!p)
			return;
		CHECK(all_zero(p, 8 * MIB));
		memset(p, i + 1, 8 * MIB);
		ss_bigmem_free(p, 8 * MIB);
	}
}

/* A knob file with @text; returns ss_bigmem_shmem_thp()'s result, the
 * mode in @was and the file's text afterwards in @after. */
static int knob(const char *text, int adjust, char *was, char *after)
{
	char path[] = "/tmp/ss-test-thp-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1000;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		unlink(path);
		return -1000;
	}
	close(fd);
	int rc = ss_bigmem_shmem_thp(path, adjust, was, 32);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(after, 1, 127, f) : 0;

	after[n] = '\0';
	if (f)
		fclose(f);
	unlink(path);
	return rc;
}

static void test_shmem_thp(void)
{
	const char *never = "always within_size advise [never] deny force\n";
	char was[32], after[128];

	/* Modes that let a madvised region have huge pages: left as they are. */
	CHECK_EQ_U64(knob("[always] within_size advise never deny force\n", 1, was, after), 1);
	CHECK_STR(was, "always");
	CHECK_STR(after, "[always] within_size advise never deny force\n");
	CHECK_EQ_U64(knob("always within_size [advise] never deny force\n", 1, was, after), 1);
	CHECK_STR(was, "advise");
	CHECK_EQ_U64(knob("always [within_size] advise never deny force\n", 0, was, after), 1);
	CHECK_STR(was, "within_size");

	/* "never": left alone without adjust, "advise" written with it. */
	CHECK_EQ_U64(knob(never, 0, was, after), 0);
	CHECK_STR(was, "never");
	CHECK_STR(after, never);
	CHECK_EQ_U64(knob(never, 1, was, after), 1);
	CHECK_STR(was, "never");
	CHECK_STR(after, "advise");

	/* "deny" is an operator's choice: never overridden. */
	CHECK_EQ_U64(knob("always within_size advise never [deny] force\n", 1, was, after), 0);
	CHECK_STR(was, "deny");
	CHECK_STR(after, "always within_size advise never [deny] force\n");

	/* Unreadable or unparsable: an error, nothing written. */
	CHECK_EQ_U64(ss_bigmem_shmem_thp("/nonexistent/shmem_enabled", 1, was, sizeof(was)),
		     (uint64_t)-ENOENT);
	CHECK_STR(was, "");
	CHECK_EQ_U64(knob("always advise never\n", 1, was, after), (uint64_t)-EINVAL);
	CHECK_STR(after, "always advise never\n");
	CHECK_EQ_U64(knob("[a_mode_name_longer_than_the_buffer_holds_by_far] never\n", 1, was,
			  after), (uint64_t)-EINVAL);
}

int main(void)
{
	test_sizes();
	test_reuse();
	test_shmem_thp();
	return check_done("test_bigmem");
}
