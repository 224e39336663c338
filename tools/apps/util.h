/* util.h - small helpers shared by the tools/apps programs. */
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

double now_seconds(void);

#endif /* SS_APPS_UTIL_H */
