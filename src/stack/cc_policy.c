/* cc_policy.c - congestion-control configuration: the service's algorithm and per-application rules. */
#include "stack/cc_policy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int policy_fail(char *err, size_t errlen,
							      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

void ss_cc_policy_default(struct ss_cc_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->ops = &ss_cc_cubic_ops;
	p->pick_auto = true;
	ss_cc_params_default(&p->params);
	/* One controller per remote host, its flows paced as one aggregate:
	 * fair at 2, 8 and 32 flows where one per flow is not, at the same
	 * RPC throughput (docs/congestion.md, "Host-shared control"). */
	p->share = SS_CC_SHARE_HOST;
}

const char *ss_cc_policy_name(const struct ss_cc_policy *p)
{
	return p->pick_auto ? "auto" : p->ops ? p->ops->name : "engine";
}

const struct ss_cc_app_rule *ss_cc_policy_rule(const struct ss_cc_policy *p, const char *comm)
{
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (strncmp(p->rules[i].name, comm, SS_CC_NAME_MAX) == 0)
			return &p->rules[i];
	return NULL;
}

static const struct ss_cc_ops *algo_lookup(const char *name, const char *what, char *err,
					   size_t errlen)
{
	const struct ss_cc_ops *ops = ss_cc_find(name);

	if (!ops) {
		char names[128];
		/* "auto" is the service's choice, not an algorithm of its own. */
		bool service = strcmp(what, "cc") == 0;

		snprintf(names, sizeof(names), "%s", service ? "auto" : "");
		for (unsigned i = 0; ss_cc_at(i); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i || service ? ", " : "", ss_cc_at(i)->name);
		policy_fail(err, errlen, "%s: unknown algorithm '%s' (one of %s)", what, name, names);
	}
	return ops;
}

int ss_cc_policy_set_algo(struct ss_cc_policy *p, const char *val, char *err, size_t errlen)
{
	const struct ss_cc_ops *ops;

	if (val && strcmp(val, "auto") == 0) {
		p->ops = &ss_cc_cubic_ops;
		p->pick_auto = true;
		return 0;
	}
	ops = algo_lookup(val, "cc", err, errlen);
	if (!ops)
		return -1;
	p->ops = ops;
	p->pick_auto = false;
	return 0;
}

/* "NAME=VALUE": the rule for NAME (created if new) and VALUE. */
static struct ss_cc_app_rule *rule_for(struct ss_cc_policy *p, const char *val, const char *what,
				       const char **rest, char *err, size_t errlen)
{
	const char *eq = strchr(val, '=');
	size_t n = eq ? (size_t)(eq - val) : 0;

	if (!eq || n == 0 || n >= SS_CC_NAME_MAX || eq[1] == '\0') {
		policy_fail(err, errlen, "%s: expected NAME=VALUE with a process name of 1..%d bytes, got '%s'",
			    what, SS_CC_NAME_MAX - 1, val);
		return NULL;
	}
	*rest = eq + 1;
	for (uint32_t i = 0; i < p->n_rules; i++)
		if (strlen(p->rules[i].name) == n && memcmp(p->rules[i].name, val, n) == 0)
			return &p->rules[i];
	if (p->n_rules >= SS_CC_APP_RULES) {
		policy_fail(err, errlen, "%s: more than %d application rules", what, SS_CC_APP_RULES);
		return NULL;
	}
	struct ss_cc_app_rule *r = &p->rules[p->n_rules];
	memset(r, 0, sizeof(*r));
	memcpy(r->name, val, n);
	return r;
}

/* Commits a rule rule_for() returned (counts it if it was new). */
static void rule_commit(struct ss_cc_policy *p, struct ss_cc_app_rule *r)
{
	if (r == &p->rules[p->n_rules])
		p->n_rules++;
}

int ss_cc_policy_add_algo(struct ss_cc_policy *p, const char *val, char *err, size_t errlen)
{
	const char *alg;
	struct ss_cc_app_rule *r = rule_for(p, val, "cc-app", &alg, err, errlen);
	const struct ss_cc_ops *ops;

	if (!r || !(ops = algo_lookup(alg, "cc-app", err, errlen)))
		return -1;
	r->ops = ops;
	rule_commit(p, r);
	return 0;
}

int ss_cc_policy_add_cap(struct ss_cc_policy *p, const char *val, char *err, size_t errlen)
{
	const char *num;
	struct ss_cc_app_rule *r = rule_for(p, val, "app-rate-cap", &num, err, errlen);
	char *end;
	double mbit;

	if (!r)
		return -1;
	errno = 0;
	mbit = strtod(num, &end);
	if (errno || *end || end == num || !(mbit >= 0.1 && mbit <= 100000))
		return policy_fail(err, errlen, "app-rate-cap: expected Mbit/s in 0.1..100000, got '%s'",
				   num);
	r->cap_bps = (uint64_t)(mbit * 1e6 / 8 + 0.5);
	rule_commit(p, r);
	return 0;
}

int ss_cc_policy_set_share(struct ss_cc_policy *p, const char *val, char *err, size_t errlen)
{
	if (strcmp(val, "host") == 0)
		p->share = SS_CC_SHARE_HOST;
	else if (strcmp(val, "flow") == 0)
		p->share = SS_CC_SHARE_FLOW;
	else
		return policy_fail(err, errlen, "cc-share: expected host or flow, got '%s'", val);
	return 0;
}
