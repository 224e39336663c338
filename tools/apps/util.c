/* util.c - small helpers shared by the tools/apps programs. */
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *iov_at(const struct iovec v[2], size_t off, size_t *run)
{
	if (off < v[0].iov_len) {
		*run = v[0].iov_len - off;
		return (uint8_t *)v[0].iov_base + off;
	}
	off -= v[0].iov_len;
	*run = v[1].iov_len - off;
	return (uint8_t *)v[1].iov_base + off;
}

void iov2_copy(const struct iovec dst[2], const struct iovec src[2], size_t n)
{
	size_t off = 0;

	while (off < n) {
		size_t drun, srun, k;
		void *d = iov_at(dst, off, &drun);
		void *s = iov_at(src, off, &srun);

		k = n - off;
		if (k > drun)
			k = drun;
		if (k > srun)
			k = srun;
		memcpy(d, s, k);
		off += k;
	}
}

int parse_ip_port(const char *s, uint32_t *ip, uint16_t *port)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	struct in_addr a;
	char *end;
	unsigned long p;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	if (inet_pton(AF_INET, host, &a) != 1)
		return -1;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || p == 0 || p > 65535)
		return -1;
	*ip = ntohl(a.s_addr);
	*port = (uint16_t)p;
	return 0;
}

int parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': mul = 1000; end++; break;
	case 'm': case 'M': mul = 1000000; end++; break;
	case 'g': case 'G': mul = 1000000000; end++; break;
	default: return -1;
	}
	if (*end || (v && mul > UINT64_MAX / v))
		return -1;
	*out = v * mul;
	return 0;
}

int parse_range(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;

	if (parse_count(s, &v) < 0 || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int parse_sockaddr(const char *s, struct sockaddr_in *out)
{
	uint32_t ip;
	uint16_t port;

	if (parse_ip_port(s, &ip, &port) < 0)
		return -1;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_addr.s_addr = htonl(ip);
	out->sin_port = htons(port);
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define LAT_SUB 16

void lat_add(uint64_t hist[LAT_BUCKETS], uint64_t v)
{
	unsigned b = 63 - (unsigned)__builtin_clzll(v | 1);

	if (b < 4)
		hist[v]++; /* exact below 16 */
	else
		hist[b * LAT_SUB + (unsigned)((v >> (b - 4)) & (LAT_SUB - 1))]++;
}

/* The middle of bucket @i. */
static uint64_t lat_value(unsigned i)
{
	unsigned b = i / LAT_SUB, s = i % LAT_SUB;

	if (b < 4)
		return i;
	return ((uint64_t)(LAT_SUB + s) << (b - 4)) + ((uint64_t)1 << (b - 4)) / 2;
}

uint64_t lat_pct(const uint64_t hist[LAT_BUCKETS], uint64_t total, double pct)
{
	uint64_t want = (uint64_t)((double)total * pct), seen = 0;

	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += hist[i];
		if (seen > want)
			return lat_value(i);
	}
	return 0;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void phase(int on, const char *what)
{
	if (on) {
		fprintf(stderr, "phase %s\n", what);
		fflush(stderr);
	}
}

int fd_table_grow(void **tab, size_t *n, size_t elem, int fd)
{
	size_t m = *n ? *n : 1024;
	void *t;

	if (fd < 0)
		return -1;
	if ((size_t)fd < *n)
		return 0;
	while (m <= (size_t)fd)
		m *= 2;
	t = realloc(*tab, m * elem);
	if (!t)
		return -1;
	memset((char *)t + *n * elem, 0, (m - *n) * elem);
	*tab = t;
	*n = m;
	return 0;
}
