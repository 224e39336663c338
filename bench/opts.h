/* opts.h - the bench programs' command-line options: one table per program, one parser. */
#ifndef SS_BENCH_OPTS_H
#define SS_BENCH_OPTS_H

#include <stdint.h>

/*
 * Each program lists its long options (--name VALUE, --name=VALUE, or a
 * flag) with where each value goes and what it may be; bopts_parse()
 * runs getopt_long over them and calls the program's usage() (which
 * exits) on an unknown option, a bad value, an operand, or -h/--help.
 * Values are checked as the programs always did:
 *
 *   BOPT_U64, BOPT_U32, BOPT_INT  parse_range() (tools/apps/util.h): decimal
 *                                 with an optional K/M/G suffix, in [min, max]
 *   BOPT_SECONDS                  strtod, the whole string, 0 < v <= dmax
 *   BOPT_DOUBLE                   strtod, the whole string, dmin <= v <= dmax
 *   BOPT_ADDR                     "a.b.c.d:port" into a struct sockaddr_in
 *   BOPT_STR                      the argument itself (const char *)
 *   BOPT_FLAG                     no argument: the int at dst becomes 1
 *   BOPT_FN                       fn(argument, dst), 0 or -1 (anything else)
 *
 * Options are applied in command-line order; *seen (when set) becomes 1
 * once an option is given.
 */
enum bopt_kind {
	BOPT_U64,
	BOPT_U32,
	BOPT_INT,
	BOPT_SECONDS,
	BOPT_DOUBLE,
	BOPT_ADDR,
	BOPT_STR,
	BOPT_FLAG,
	BOPT_FN,
};

struct bopt {
	const char *name;       /* without the dashes; NULL ends the table */
	enum bopt_kind kind;
	void *dst;
	uint64_t min, max;      /* the integer kinds */
	double dmin, dmax;      /* BOPT_DOUBLE, BOPT_SECONDS (dmax) */
	int (*fn)(const char *arg, void *dst); /* BOPT_FN */
	int *seen;
	char short_name;        /* also -c (0: none) */
};

/* Parse argv[first..argc): options only.  Returns only when all of them
 * were good; @usage must not return. */
void bopts_parse(int argc, char **argv, int first, const struct bopt *opts,
		 void (*usage)(void));

/* BOPT_FN for --mode send|recv: the int at @dst becomes 1 (send) or 0. */
int bopt_send_recv(const char *arg, void *dst);

#endif /* SS_BENCH_OPTS_H */
