/* sha256.h - SHA-256 (FIPS 180-4), streaming. */
#ifndef SS_APPS_SHA256_H
#define SS_APPS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32

struct sha256 {
	uint32_t h[8];
	uint64_t len;           /* message bytes so far */
	uint8_t buf[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_DIGEST_LEN]);
/* Lower-case hex of a digest into @hex (65 bytes with the NUL). */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_LEN], char hex[65]);

#endif /* SS_APPS_SHA256_H */
