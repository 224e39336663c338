/* test_sha256.c - tools/apps/sha256.c against the FIPS 180-4 / NIST example vectors. */
#include "check.h"
#include "sha256.h"

static void digest_of(const void *p, size_t len, size_t chunk, char hex[65])
{
	struct sha256 s;
	uint8_t d[SHA256_DIGEST_LEN];
	const uint8_t *b = p;

	sha256_init(&s);
	while (len) {
		size_t n = chunk < len ? chunk : len;

		sha256_update(&s, b, n);
		b += n;
		len -= n;
	}
	sha256_final(&s, d);
	sha256_hex(d, hex);
}

int main(void)
{
	static const struct {
		const char *msg, *want;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	static char million[1000000];
	char hex[65];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t len = strlen(v[i].msg);

		/* Whole, byte by byte, and in odd chunks: same digest. */
		digest_of(v[i].msg, len, len ? len : 1, hex);
		CHECK_STR(hex, v[i].want);
		digest_of(v[i].msg, len, 1, hex);
		CHECK_STR(hex, v[i].want);
		digest_of(v[i].msg, len, 7, hex);
		CHECK_STR(hex, v[i].want);
	}
	memset(million, 'a', sizeof(million));
	digest_of(million, sizeof(million), 4093, hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* Lengths around the padding boundary (55, 56, 63, 64 bytes). */
	digest_of(million, 55, 55, hex);
	CHECK_STR(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	digest_of(million, 56, 56, hex);
	CHECK_STR(hex, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	digest_of(million, 64, 64, hex);
	CHECK_STR(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
	return check_done("test_sha256");
}
