/* log.c - service logging. Never called per packet on the fast path. */
#include "util/log.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

enum ss_log_level ss_log_threshold = SS_LOG_INFO;

static const char *const level_names[] = { "err", "warn", "info", "debug" };

void ss_log(enum ss_log_level lvl, const char *fmt, ...)
{
	if (lvl > ss_log_threshold)
		return;

	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);

	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* One fputs per line so lines from different threads do not interleave. */
	char out[1100];
	snprintf(out, sizeof(out), "slipstreamd[%ld.%03ld] %s: %s\n",
		 (long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[lvl], line);
	fputs(out, stderr);
}

int ss_log_level_parse(const char *s)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(s, level_names[i]) == 0)
			return (int)i;
	return -1;
}
