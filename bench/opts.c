/* opts.c - one getopt_long loop for the bench programs' option tables (opts.h). */
#include "opts.h"

#include <getopt.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define BOPTS_MAX 32

static int opt_double(const char *s, double lo, double hi, int lo_open, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(lo_open ? v > lo : v >= lo) || !(v <= hi))
		return -1;
	*out = v;
	return 0;
}

/* Apply @arg to @o; 0 or -1. */
static int opt_apply(const struct bopt *o, const char *arg)
{
	uint64_t v;

	switch (o->kind) {
	case BOPT_U64:
		return parse_range(arg, o->min, o->max, (uint64_t *)o->dst);
	case BOPT_U32:
		if (parse_range(arg, o->min, o->max, &v) < 0)
			return -1;
		*(uint32_t *)o->dst = (uint32_t)v;
		return 0;
	case BOPT_INT:
		if (parse_range(arg, o->min, o->max, &v) < 0)
			return -1;
		*(int *)o->dst = (int)v;
		return 0;
	case BOPT_SECONDS:
		return opt_double(arg, 0, o->dmax, 1, (double *)o->dst);
	case BOPT_DOUBLE:
		return opt_double(arg, o->dmin, o->dmax, 0, (double *)o->dst);
	case BOPT_ADDR:
		return parse_sockaddr(arg, (struct sockaddr_in *)o->dst);
	case BOPT_STR:
		*(const char **)o->dst = arg;
		return 0;
	case BOPT_FLAG:
		*(int *)o->dst = 1;
		return 0;
	case BOPT_FN:
		return o->fn(arg, o->dst);
	}
	return -1;
}

void bopts_parse(int argc, char **argv, int first, const struct bopt *opts,
		 void (*usage)(void))
{
	struct option lo[BOPTS_MAX + 2];
	char shorts[2 * BOPTS_MAX + 2] = "h";
	size_t n = 0, ns = 1;
	int c, idx;

	for (; opts[n].name; n++) {
		if (n == BOPTS_MAX)
			usage();
		lo[n] = (struct option){
			.name = opts[n].name,
			.has_arg = opts[n].kind == BOPT_FLAG ? no_argument : required_argument,
			.flag = NULL,
			.val = 256 + (int)n,
		};
		if (opts[n].short_name) {
			shorts[ns++] = opts[n].short_name;
			if (opts[n].kind != BOPT_FLAG)
				shorts[ns++] = ':';
		}
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ 0 };
	shorts[ns] = '\0';

	optind = first;
	while ((c = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		const struct bopt *o = NULL;

		if (c >= 256)
			o = &opts[c - 256];
		else if (c != 'h' && c != '?' && c != ':')
			for (size_t i = 0; opts[i].name && !o; i++)
				if (opts[i].short_name == c)
					o = &opts[i];
		if (!o || opt_apply(o, optarg) < 0)
			usage();
		if (o->seen)
			*o->seen = 1;
	}
	if (optind != argc)
		usage();
}

int bopt_send_recv(const char *arg, void *dst)
{
	if (strcmp(arg, "send") && strcmp(arg, "recv"))
		return -1;
	*(int *)dst = strcmp(arg, "send") == 0;
	return 0;
}
