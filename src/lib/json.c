/* json.c - parse the service's one-line JSON attach reply (a flat object). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib.h"

/*
 * Only what the reply needs: an object whose members we care about are
 * "ok" (bool), "app", "region_size", "contexts" (non-negative integers) and
 * "error" (string).  Other members of any type are skipped (nesting limited
 * to 8 levels).  Every malformed input returns -1; nothing aborts.
 */

struct jp {
	const char *p;
};

static void jp_ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n')
		j->p++;
}

/* A string; its unescaped contents go to @out (truncated to @len - 1),
 * @out may be NULL.  \uXXXX escapes become '?'. */
static int jp_string(struct jp *j, char *out, size_t len)
{
	size_t n = 0;

	if (*j->p != '"')
		return -1;
	j->p++;
	for (;;) {
		char c = *j->p++;

		if (c == '\0' || (unsigned char)c < 0x20)
			return -1;
		if (c == '"')
			break;
		if (c == '\\') {
			c = *j->p++;
			switch (c) {
			case '"': case '\\': case '/': break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				for (int i = 0; i < 4; i++) {
					char h = *j->p++;

					if (!((h >= '0' && h <= '9') ||
					      (h >= 'a' && h <= 'f') ||
					      (h >= 'A' && h <= 'F')))
						return -1;
				}
				c = '?';
				break;
			default:
				return -1;
			}
		}
		if (out && n + 1 < len)
			out[n++] = c;
	}
	if (out && len)
		out[n] = '\0';
	return 0;
}

/* A JSON number; @out gets it when it is a non-negative integer that fits,
 * *is_uint tells whether it was one. */
static int jp_number(struct jp *j, uint64_t *out, bool *is_uint)
{
	const char *s = j->p;
	uint64_t v = 0;
	bool neg = false, integral = true, overflow = false;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
		s++;
	}
	if (*s == '.') {
		integral = false;
		s++;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		integral = false;
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	j->p = s;
	*is_uint = integral && !neg && !overflow;
	*out = v;
	return 0;
}

static int jp_skip(struct jp *j, int depth);

static int jp_skip_container(struct jp *j, int depth, char close, bool keys)
{
	j->p++;
	jp_ws(j);
	if (*j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		if (keys) {
			if (jp_string(j, NULL, 0) < 0)
				return -1;
			jp_ws(j);
			if (*j->p++ != ':')
				return -1;
		}
		if (jp_skip(j, depth + 1) < 0)
			return -1;
		jp_ws(j);
		if (*j->p == ',') {
			j->p++;
			jp_ws(j);
			continue;
		}
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		return -1;
	}
}

/* Skip one value of any type. */
static int jp_skip(struct jp *j, int depth)
{
	uint64_t v;
	bool u;

	if (depth > 8)
		return -1;
	jp_ws(j);
	switch (*j->p) {
	case '"':
		return jp_string(j, NULL, 0);
	case '{':
		return jp_skip_container(j, depth, '}', true);
	case '[':
		return jp_skip_container(j, depth, ']', false);
	case 't':
		if (strncmp(j->p, "true", 4))
			return -1;
		j->p += 4;
		return 0;
	case 'f':
		if (strncmp(j->p, "false", 5))
			return -1;
		j->p += 5;
		return 0;
	case 'n':
		if (strncmp(j->p, "null", 4))
			return -1;
		j->p += 4;
		return 0;
	default:
		return jp_number(j, &v, &u);
	}
}

static int jp_uint_member(struct jp *j, uint64_t *out, bool *has)
{
	bool is_uint;

	if (jp_number(j, out, &is_uint) < 0 || !is_uint)
		return -1;
	*has = true;
	return 0;
}

/* ss_reply_parse - parse @line (NUL-terminated, trailing newline allowed).
 * Returns 0, or -1 when it is not a well-formed object or a known member
 * has the wrong type. */
int ss_reply_parse(const char *line, struct ss_reply *out)
{
	struct jp j = { .p = line };
	char key[32];

	memset(out, 0, sizeof(*out));
	out->ok = -1;
	jp_ws(&j);
	if (*j.p != '{')
		return -1;
	j.p++;
	jp_ws(&j);
	if (*j.p == '}') {
		j.p++;
		goto end;
	}
	for (;;) {
		int rc = 0;

		if (jp_string(&j, key, sizeof(key)) < 0)
			return -1;
		jp_ws(&j);
		if (*j.p++ != ':')
			return -1;
		jp_ws(&j);
		if (!strcmp(key, "ok")) {
			if (!strncmp(j.p, "true", 4)) {
				out->ok = 1;
				j.p += 4;
			} else if (!strncmp(j.p, "false", 5)) {
				out->ok = 0;
				j.p += 5;
			} else {
				return -1;
			}
		} else if (!strcmp(key, "app")) {
			rc = jp_uint_member(&j, &out->app, &out->has_app);
		} else if (!strcmp(key, "region_size")) {
			rc = jp_uint_member(&j, &out->region_size,
					    &out->has_region_size);
		} else if (!strcmp(key, "contexts")) {
			rc = jp_uint_member(&j, &out->contexts,
					    &out->has_contexts);
		} else if (!strcmp(key, "token")) {
			rc = jp_uint_member(&j, &out->token, &out->has_token);
		} else if (!strcmp(key, "error") && *j.p == '"') {
			rc = jp_string(&j, out->error, sizeof(out->error));
		} else {
			rc = jp_skip(&j, 1);
		}
		if (rc < 0)
			return -1;
		jp_ws(&j);
		if (*j.p == ',') {
			j.p++;
			jp_ws(&j);
			continue;
		}
		if (*j.p++ != '}')
			return -1;
		break;
	}
end:
	jp_ws(&j);
	return *j.p == '\0' ? 0 : -1;
}
