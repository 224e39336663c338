/* Unit tests for TCP options (RFC 9293 §3.2, RFC 7323, RFC 2018, RFC 6691). */
#include "check.h"
#include "wire/tcp.h"

#define OPTS(...) ((const uint8_t[]){__VA_ARGS__})
#define NOPTS(...) sizeof((const uint8_t[]){__VA_ARGS__})
/* parse a literal option area */
#define PARSE(o, ...) ss_tcp_opts_parse(OPTS(__VA_ARGS__), NOPTS(__VA_ARGS__), (o))

static void test_linux_syn(void)
{
	struct ss_tcp_opts o;

	CHECK_EQ_U64(PARSE(&o, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a,
			   0xe2, 0xe8, 0xd3, 0xcb, 0, 0, 0, 0, 0x01, 0x03,
			   0x03, 0x07),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_MSS | SS_TCP_OPTF_SACK_PERM |
					SS_TCP_OPTF_TS | SS_TCP_OPTF_WSCALE);
	CHECK_EQ_U64(o.mss, 1460);
	CHECK_EQ_U64(o.ts_val, 0xe2e8d3cb);
	CHECK_EQ_U64(o.ts_ecr, 0);
	CHECK_EQ_U64(o.wscale, 7);
	CHECK_EQ_U64(o.sack_count, 0);
}

static void test_empty_nop_eol(void)
{
	struct ss_tcp_opts o;

	memset(&o, 0xA5, sizeof(o));
	CHECK_EQ_U64(ss_tcp_opts_parse(NULL, 0, &o), SS_TCP_OK);
	CHECK_EQ_U64(o.present, 0); /* reset */
	CHECK_EQ_U64(o.sack_count, 0);
	CHECK_EQ_U64(PARSE(&o, 1, 1, 1, 1), SS_TCP_OK);
	CHECK_EQ_U64(o.present, 0);
	CHECK_EQ_U64(PARSE(&o, 1, 1, 1, 2, 4, 0x05, 0xb4), SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_MSS);
	/* EOL stops parsing: garbage after it is not looked at */
	CHECK_EQ_U64(PARSE(&o, 0, 2, 1, 0xFF), SS_TCP_OK);
	CHECK_EQ_U64(o.present, 0);
	CHECK_EQ_U64(PARSE(&o, 2, 4, 0x05, 0xb4, 0, 3, 3, 7), SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_MSS);
	CHECK_EQ_U64(PARSE(&o, 1, 0, 0, 0), SS_TCP_OK);
}

static void test_malformed(void)
{
	struct ss_tcp_opts o;

	/* length byte missing */
	CHECK_EQ_U64(PARSE(&o, 2), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 1, 1, 1, 254), SS_TCP_BAD_OPTION);
	/* length 0 and 1 */
	CHECK_EQ_U64(PARSE(&o, 254, 0, 1, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 254, 1, 1, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 2, 0, 1, 1), SS_TCP_BAD_OPTION);
	/* length running past the area */
	CHECK_EQ_U64(PARSE(&o, 2, 4, 5), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 1, 254, 4, 0), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 8, 10, 1, 2, 3, 4, 5, 6, 7), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 254, 255, 0, 0), SS_TCP_BAD_OPTION);
}

static void test_wrong_lengths(void)
{
	struct ss_tcp_opts o;

	/* MSS must be 4 */
	CHECK_EQ_U64(PARSE(&o, 2, 3, 5, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 2, 5, 5, 0xb4, 0), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 2, 2, 1, 1), SS_TCP_BAD_OPTION);
	/* WSCALE must be 3 */
	CHECK_EQ_U64(PARSE(&o, 3, 2, 1, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 3, 4, 7, 0), SS_TCP_BAD_OPTION);
	/* SACK_PERM must be 2 */
	CHECK_EQ_U64(PARSE(&o, 4, 3, 0, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 4, 4, 0, 0), SS_TCP_BAD_OPTION);
	/* TS must be 10 */
	CHECK_EQ_U64(PARSE(&o, 8, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0),
		     SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 8, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0),
		     SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 2), SS_TCP_BAD_OPTION);
	/* SACK must be 2 + 8n, 1 <= n <= 4 */
	CHECK_EQ_U64(PARSE(&o, 5, 2, 1, 1), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 5, 9, 0, 0, 0, 1, 0, 0, 0), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0),
		     SS_TCP_BAD_OPTION);
}

static void test_unknown_skipped(void)
{
	struct ss_tcp_opts o;

	/* kind 254 len 4 (experimental, RFC 6994), then MSS */
	CHECK_EQ_U64(PARSE(&o, 254, 4, 0xAB, 0xCD, 2, 4, 0x23, 0x28),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_MSS);
	CHECK_EQ_U64(o.mss, 9000);
	/* unknown with length 2 (no data) and one filling the whole area */
	CHECK_EQ_U64(PARSE(&o, 30, 2, 3, 3, 9), SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_WSCALE);
	CHECK_EQ_U64(o.wscale, 9);
	CHECK_EQ_U64(PARSE(&o, 19, 6, 2, 4, 5, 0xb4), SS_TCP_OK);
	CHECK_EQ_U64(o.present, 0); /* MSS-looking bytes inside kind 19 */
}

static void test_wscale_clamp(void)
{
	struct ss_tcp_opts o;

	CHECK_EQ_U64(PARSE(&o, 1, 3, 3, 14), SS_TCP_OK);
	CHECK_EQ_U64(o.wscale, 14);
	CHECK_EQ_U64(PARSE(&o, 1, 3, 3, 15), SS_TCP_OK);
	CHECK_EQ_U64(o.wscale, 14);
	CHECK_EQ_U64(PARSE(&o, 1, 3, 3, 255), SS_TCP_OK);
	CHECK_EQ_U64(o.wscale, 14);
	CHECK_EQ_U64(PARSE(&o, 1, 3, 3, 0), SS_TCP_OK);
	CHECK_EQ_U64(o.wscale, 0);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_WSCALE);
}

static void test_sack(void)
{
	uint8_t area[2 + 8 * 5];
	struct ss_tcp_opts o;

	for (unsigned n = 1; n <= 5; n++) {
		area[0] = SS_TCP_OPT_SACK;
		area[1] = (uint8_t)(2 + 8 * n);
		for (unsigned b = 0; b < n; b++) {
			/* left = 0xL0000bb0, right = 0xR0000bb1 */
			uint32_t l = 0x10000000u * (b + 1) + b * 16;
			uint32_t r = l + 1;

			for (int k = 0; k < 4; k++) {
				area[2 + 8 * b + k] = (uint8_t)(l >> (24 - 8 * k));
				area[6 + 8 * b + k] = (uint8_t)(r >> (24 - 8 * k));
			}
		}
		if (n == 5) {
			CHECK_EQ_U64(ss_tcp_opts_parse(area, 2 + 8 * n, &o),
				     SS_TCP_BAD_OPTION);
			continue;
		}
		CHECK_EQ_U64(ss_tcp_opts_parse(area, 2 + 8 * n, &o), SS_TCP_OK);
		CHECK_EQ_U64(o.present, SS_TCP_OPTF_SACK);
		CHECK_EQ_U64(o.sack_count, n);
		CHECK_EQ_U64(o.sack[0].left, 0x10000000);
		CHECK_EQ_U64(o.sack[0].right, 0x10000001);
		CHECK_EQ_U64(o.sack[n - 1].left, 0x10000000u * n + (n - 1) * 16);
		CHECK_EQ_U64(o.sack[n - 1].right,
			     0x10000000u * n + (n - 1) * 16 + 1);
	}
	/* Linux ACK with TS + SACK: NOP NOP TS NOP NOP SACK(1) */
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8,
			   1, 1, 5, 10, 0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0x10),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_TS | SS_TCP_OPTF_SACK);
	CHECK_EQ_U64(o.ts_val, 9);
	CHECK_EQ_U64(o.ts_ecr, 8);
	CHECK_EQ_U64(o.sack_count, 1);
	CHECK_EQ_U64(o.sack[0].left, 0xFFFFFFF0);
	CHECK_EQ_U64(o.sack[0].right, 0x10);
}

static void test_repeated_last_wins(void)
{
	struct ss_tcp_opts o;

	CHECK_EQ_U64(PARSE(&o, 2, 4, 0x05, 0xb4, 2, 4, 0x02, 0x18), SS_TCP_OK);
	CHECK_EQ_U64(o.mss, 536);
	CHECK_EQ_U64(PARSE(&o, 5, 18, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0,
			   0, 0, 4, 5, 10, 0, 0, 0, 7, 0, 0, 0, 8),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.sack_count, 1);
	CHECK_EQ_U64(o.sack[0].left, 7);
	CHECK_EQ_U64(o.sack[0].right, 8);
}

static void test_build(void)
{
	uint8_t buf[41];
	struct ss_tcp_opts o = {
		.present = SS_TCP_OPTF_MSS | SS_TCP_OPTF_SACK_PERM |
			   SS_TCP_OPTF_TS | SS_TCP_OPTF_WSCALE,
		.mss = 1460,
		.wscale = 7,
		.ts_val = 0xe2e8d3cb,
		.ts_ecr = 0,
		.sack_count = 3, /* ignored: SACK bit not set */
	};

	/* the Linux SYN layout */
	CHECK_EQ_U64(ss_tcp_opts_len(&o), 20);
	CHECK_EQ_U64(ss_tcp_opts_build(buf + 1, 20, &o), 20);
	CHECK_MEM(buf + 1, OPTS(0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a,
				0xe2, 0xe8, 0xd3, 0xcb, 0, 0, 0, 0, 0x01, 0x03,
				0x03, 0x07),
		  20);
	CHECK_EQ_U64(ss_tcp_opts_build(buf, 19, &o), 0);

	o.present = 0;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, 0, &o), 0);
	CHECK_EQ_U64(ss_tcp_opts_len(&o), 0);

	o.present = SS_TCP_OPTF_TS;
	o.ts_val = 1;
	o.ts_ecr = 2;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 12);
	CHECK_MEM(buf, OPTS(1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2), 12);

	o.present = SS_TCP_OPTF_SACK_PERM;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 4);
	CHECK_MEM(buf, OPTS(1, 1, 4, 2), 4);

	o.present = SS_TCP_OPTF_WSCALE;
	o.wscale = 14;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 4);
	CHECK_MEM(buf, OPTS(1, 3, 3, 14), 4);

	o.present = SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE;
	o.mss = 8960;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 8);
	CHECK_MEM(buf, OPTS(2, 4, 0x23, 0x00, 1, 3, 3, 14), 8);
}

static void test_build_sack(void)
{
	uint8_t buf[40];
	struct ss_tcp_opts o = {
		.present = SS_TCP_OPTF_SACK | SS_TCP_OPTF_TS,
		.ts_val = 0x01020304,
		.ts_ecr = 0x05060708,
		.sack_count = 4,
		.sack = {{1, 2}, {3, 4}, {5, 6}, {7, 8}},
	};
	struct ss_tcp_opts back;

	/* with TS only 3 blocks fit: 12 + 4 + 24 = 40 */
	CHECK_EQ_U64(ss_tcp_opts_len(&o), 40);
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 40);
	CHECK_MEM(buf, OPTS(1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8,
			    1, 1, 5, 26, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
			    0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6),
		  40);
	CHECK_EQ_U64(ss_tcp_opts_parse(buf, 40, &back), SS_TCP_OK);
	CHECK_EQ_U64(back.sack_count, 3);
	CHECK_EQ_U64(back.sack[2].right, 6);
	CHECK_EQ_U64(back.ts_ecr, 0x05060708);

	/* without TS all 4 fit: 4 + 32 = 36 */
	o.present = SS_TCP_OPTF_SACK;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 36);
	CHECK_EQ_U64(ss_tcp_opts_parse(buf, 36, &back), SS_TCP_OK);
	CHECK_EQ_U64(back.sack_count, 4);
	CHECK_EQ_U64(back.sack[3].left, 7);

	/* MSS + TS + WSCALE leave room for 2 */
	o.present = SS_TCP_OPTF_SACK | SS_TCP_OPTF_TS | SS_TCP_OPTF_MSS |
		    SS_TCP_OPTF_WSCALE;
	CHECK_EQ_U64(ss_tcp_opts_len(&o), 40);
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 40);
	CHECK_EQ_U64(ss_tcp_opts_parse(buf, 40, &back), SS_TCP_OK);
	CHECK_EQ_U64(back.sack_count, 2);
	CHECK_EQ_U64(back.present, o.present);

	/* MSS + WSCALE (8 bytes) leave room for 3, MSS + TS (16) for 2 */
	o.present = SS_TCP_OPTF_SACK | SS_TCP_OPTF_MSS | SS_TCP_OPTF_WSCALE;
	o.sack_count = 4;
	CHECK_EQ_U64(ss_tcp_opts_len(&o), 36);
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 36);
	CHECK_EQ_U64(ss_tcp_opts_parse(buf, 36, &back), SS_TCP_OK);
	CHECK_EQ_U64(back.sack_count, 3);
	o.present = SS_TCP_OPTF_SACK | SS_TCP_OPTF_MSS | SS_TCP_OPTF_TS;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 36);
	CHECK_EQ_U64(ss_tcp_opts_parse(buf, 36, &back), SS_TCP_OK);
	CHECK_EQ_U64(back.sack_count, 2);

	/* count 0 or > 4 */
	o.present = SS_TCP_OPTF_SACK;
	o.sack_count = 0;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 0);
	o.sack_count = 200;
	CHECK_EQ_U64(ss_tcp_opts_build(buf, sizeof(buf), &o), 36);
	CHECK_EQ_U64(ss_tcp_opts_build(buf, 35, &o), 0);
}

/* NOP NOP TS, the layout of almost every segment (parsed without the
 * loop), and the look-alikes the loop must still judge. */
static void test_aligned_ts(void)
{
	struct ss_tcp_opts o;

	memset(&o, 0xA5, sizeof(o));
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_TS);
	CHECK_EQ_U64(o.ts_val, 0x11223344);
	CHECK_EQ_U64(o.ts_ecr, 0x55667788);
	CHECK_EQ_U64(o.sack_count, 0);
	CHECK_EQ_U64(o.mss, 0);
	/* TS first, padding after: the same values through the loop */
	CHECK_EQ_U64(PARSE(&o, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 1, 1),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_TS);
	CHECK_EQ_U64(o.ts_val, 0x11223344);
	CHECK_EQ_U64(o.ts_ecr, 0x55667788);
	/* wrong TS length in the same place: rejected */
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 11, 0, 0, 0, 0, 0, 0, 0, 0), SS_TCP_BAD_OPTION);
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0), SS_TCP_BAD_OPTION);
	/* NOP NOP TS then a SACK block: not the short layout */
	CHECK_EQ_U64(PARSE(&o, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1, 5, 10, 0, 0, 0, 3, 0, 0,
			   0, 4),
		     SS_TCP_OK);
	CHECK_EQ_U64(o.present, SS_TCP_OPTF_TS | SS_TCP_OPTF_SACK);
	CHECK_EQ_U64(o.ts_val, 1);
	CHECK_EQ_U64(o.sack_count, 1);
}

int main(void)
{
	test_linux_syn();
	test_empty_nop_eol();
	test_malformed();
	test_wrong_lengths();
	test_unknown_skipped();
	test_wscale_clamp();
	test_sack();
	test_repeated_last_wins();
	test_build();
	test_build_sack();
	test_aligned_ts();
	return check_done("test_tcp_opts");
}
