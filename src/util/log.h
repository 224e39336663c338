/* log.h - service logging: one line per event to stderr, with a level filter. */
#ifndef SS_UTIL_LOG_H
#define SS_UTIL_LOG_H

#include <stdio.h>

enum ss_log_level { SS_LOG_ERR, SS_LOG_WARN, SS_LOG_INFO, SS_LOG_DEBUG };

extern enum ss_log_level ss_log_threshold;

void ss_log(enum ss_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Parses "err", "warn", "info" or "debug"; returns -1 for anything else. */
int ss_log_level_parse(const char *s);

#define SS_ERR(...)   ss_log(SS_LOG_ERR, __VA_ARGS__)
#define SS_WARN(...)  ss_log(SS_LOG_WARN, __VA_ARGS__)
#define SS_INFO(...)  ss_log(SS_LOG_INFO, __VA_ARGS__)
#define SS_DEBUG(...) ss_log(SS_LOG_DEBUG, __VA_ARGS__)

#endif
