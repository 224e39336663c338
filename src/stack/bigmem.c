/* bigmem.c - large zeroed arrays from 2 MiB-aligned anonymous mappings, MADV_HUGEPAGE. */
#include "stack/bigmem.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BIGMEM_HUGE ((size_t)2 << 20)

static size_t bigmem_len(size_t size)
{
	return (size + BIGMEM_HUGE - 1) & ~(BIGMEM_HUGE - 1);
}

void *ss_bigmem_alloc(size_t size)
{
	if (size == 0 || size > SIZE_MAX - 2 * BIGMEM_HUGE)
		return NULL;
	if (size < BIGMEM_HUGE) {
		/* A huge page would be mostly waste: the heap, line-aligned. */
		void *q = NULL;
		if (posix_memalign(&q, 64, size) != 0)
			return NULL;
		return memset(q, 0, size);
	}
	size_t len = bigmem_len(size);
	/* Over-map by one huge page and trim both ends to alignment. */
	uint8_t *raw = mmap(NULL, len + BIGMEM_HUGE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)raw + BIGMEM_HUGE - 1) & ~(uintptr_t)(BIGMEM_HUGE - 1);
	uint8_t *p = (uint8_t *)a;
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + len + BIGMEM_HUGE > p + len)
		munmap(p + len, (size_t)(raw + len + BIGMEM_HUGE - (p + len)));
	/* Advice only: EINVAL on a kernel without THP leaves small pages. */
	(void)madvise(p, len, MADV_HUGEPAGE);
	return p;
}

void ss_bigmem_free(void *p, size_t size)
{
	if (!p)
		return;
	if (size < BIGMEM_HUGE)
		free(p);
	else
		munmap(p, bigmem_len(size));
}

/* The selected mode of a THP knob's text: the word in brackets. */
static int thp_mode(const char *text, char *out, size_t len)
{
	const char *a = strchr(text, '['), *b = a ? strchr(a, ']') : NULL;

	if (!a || !b || (size_t)(b - a - 1) >= len)
		return -EINVAL;
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = '\0';
	return 0;
}

int ss_bigmem_shmem_thp(const char *path, int adjust, char *was, size_t len)
{
	char text[256];
	FILE *f;
	size_t n;

	if (len)
		was[0] = '\0';
	if (!(f = fopen(path, "r")))
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	if (thp_mode(text, was, len) != 0)
		return -EINVAL;
	if (strcmp(was, "always") == 0 || strcmp(was, "within_size") == 0 ||
	    strcmp(was, "advise") == 0 || strcmp(was, "force") == 0)
		return 1;
	if (!adjust || strcmp(was, "never") != 0)
		return 0;
	if (!(f = fopen(path, "w")))
		return -errno;
	errno = 0;
	int ok = fputs("advise", f) >= 0;
	if (fclose(f) != 0 || !ok) /* sysfs answers the write at the flush */
		return errno ? -errno : -EIO;
	return 1;
}
