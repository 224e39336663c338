/* smaps.h - the tests' look at this process's /proc/self/smaps: is a mapping madvised huge. */
#ifndef SS_TESTS_SMAPS_H
#define SS_TESTS_SMAPS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

#endif
