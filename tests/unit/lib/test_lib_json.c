/* test_lib_json.c - the attach reply parser on fixed, truncated and malformed lines. */
#include "check.h"
#include "lib/lib.h"

static void test_good(void)
{
	struct ss_reply r;

	CHECK(ss_reply_parse("{\"ok\":true,\"app\":3,\"region_size\":1048576,\"contexts\":2}\n", &r) == 0);
	CHECK_EQ_U64(r.ok, 1);
	CHECK(r.has_app && r.has_region_size && r.has_contexts);
	CHECK_EQ_U64(r.app, 3);
	CHECK_EQ_U64(r.region_size, 1048576);
	CHECK_EQ_U64(r.contexts, 2);

	/* Whitespace, member order, unknown members of every type. */
	CHECK(ss_reply_parse(" { \"x\" : [1, {\"y\": null}, \"s\"], \"contexts\" : 1 ,"
			     "\"ok\" : true , \"f\":-1.5e3, \"b\":false,\"region_size\":4096}\r\n", &r) == 0);
	CHECK_EQ_U64(r.ok, 1);
	CHECK_EQ_U64(r.contexts, 1);
	CHECK_EQ_U64(r.region_size, 4096);

	CHECK(ss_reply_parse("{\"ok\":false,\"error\":\"no \\\"room\\\"\\n\\u0041\"}", &r) == 0);
	CHECK_EQ_U64(r.ok, 0);
	CHECK_STR(r.error, "no \"room\"\n?");

	/* A long error is truncated, not overflowed. */
	char line[512];
	snprintf(line, sizeof(line), "{\"ok\":false,\"error\":\"%0300d\"}", 0);
	CHECK(ss_reply_parse(line, &r) == 0);
	CHECK_EQ_U64(strlen(r.error), sizeof(r.error) - 1);

	CHECK(ss_reply_parse("{}", &r) == 0);
	CHECK(r.ok == -1);
}

static void test_bad(void)
{
	static const char *const bad[] = {
		"", "{", "}", "{\"ok\"}", "{\"ok\":}", "{\"ok\":tru}", "{\"ok\":true,}",
		"{\"ok\":true} x", "{\"app\":1.5}", "{\"app\":-1}", "{\"app\":\"1\"}",
		"{\"app\":18446744073709551616}", "{\"s\":\"unterminated}",
		"{\"s\":\"bad \\x escape\"}", "{\"s\":\"\\u12\"}", "{\"a\":[1,2}",
		"{\"a\":[[[[[[[[[[[[1]]]]]]]]]]]]}", "{\"n\":-}", "{\"n\":1.}", "{\"n\":1e}",
		"{ok:true}", "{\"ok\":true \"app\":1}", "{\"s\":\"ctl\x01\"}",
	};
	struct ss_reply r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ss_reply_parse(bad[i], &r);

		if (rc != -1)
			fprintf(stderr, "    accepted: %s\n", bad[i]);
		CHECK(rc == -1);
	}
}

int main(void)
{
	test_good();
	test_bad();
	return check_done("test_lib_json");
}
