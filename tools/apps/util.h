/* util.h - small helpers shared by the tools/apps programs and the bench/ Linux references. */
#ifndef SS_APPS_UTIL_H
#define SS_APPS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Copy @n bytes from the pieces @src to the pieces @dst (two each, as
 * ss_recv_peek/ss_send_space give them). */
void iov2_copy(const struct iovec dst[2], const struct iovec src[2], size_t n);

/* "a.b.c.d:port" into host-order values; 0 or -1. */
int parse_ip_port(const char *s, uint32_t *ip, uint16_t *port);
/* A decimal number with optional K/M/G (powers of 1000) suffix; 0 or -1. */
int parse_count(const char *s, uint64_t *out);
/* parse_count() within [min, max]; 0 or -1. */
int parse_range(const char *s, uint64_t min, uint64_t max, uint64_t *out);
struct sockaddr_in;
/* "a.b.c.d:port" as a socket address; 0 or -1. */
int parse_sockaddr(const char *s, struct sockaddr_in *out);

double now_seconds(void);
uint64_t now_ns(void); /* CLOCK_MONOTONIC */

/*
 * Latency histogram, log-linear: exact below 16, then 16 sub-buckets per
 * power of two (under 6.25 % error), so memory does not grow with time.
 * The caller owns the LAT_BUCKETS counters.
 */
#define LAT_BUCKETS (64 * 16)
void lat_add(uint64_t hist[LAT_BUCKETS], uint64_t value);
/* The value at fraction @pct (0..1) of @total samples, or 0 if empty. */
uint64_t lat_pct(const uint64_t hist[LAT_BUCKETS], uint64_t total, double pct);

/* "phase WHAT" on stderr (flushed) when @on: lets a driving script see
 * where a load program is (--phases). */
void phase(int on, const char *what);

/*
 * Grows the array *@tab of *@n elements of @elem bytes, indexed by file
 * descriptor, so that index @fd exists (doubling from 1024, new entries
 * zeroed).  0, or -1 when out of memory (nothing changed).
 */
int fd_table_grow(void **tab, size_t *n, size_t elem, int fd);

#endif /* SS_APPS_UTIL_H */
