/* smaps.h - the tests' look at this process's memory: is a mapping madvised huge, which pages are resident. */
#ifndef SS_TESTS_SMAPS_H
#define SS_TESTS_SMAPS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Whether the mapping holding @p is marked MADV_HUGEPAGE ("hg" in its
 * VmFlags); -1 when no mapping holds it. */
static inline int smaps_advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], perms[5];
	unsigned long lo, hi;
	int in = 0, found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's first line is "lo-hi perms ..."; its field
		 * lines ("Size:", "AnonHugePages:") do not scan as that. */
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		} else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			found = strstr(line, " hg") != NULL;
			in = 0;
		}
	}
	fclose(f);
	return found;
}

/* How many of the 4 KiB pages of [@p, @p + @len) are resident (mincore:
 * for a shared file mapping, in the page cache); @p page-aligned, -1 on
 * error. */
static inline long resident_pages(const void *p, size_t len)
{
	size_t n = (len + 4095) / 4096;
	unsigned char *v = malloc(n ? n : 1);
	long r = 0;

	if (!v || mincore((void *)(uintptr_t)p, len, v) != 0) {
		free(v);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	free(v);
	return r;
}

#endif
