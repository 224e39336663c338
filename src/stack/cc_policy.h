/* cc_policy.h - which congestion-control algorithm and cap each application gets (service configuration). */
#ifndef SS_SERVICE_CC_POLICY_H
#define SS_SERVICE_CC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cc/cc.h"

/*
 * The service picks the algorithm of every flow (`cc = ALG`), by default
 * "auto": each connection by what its path and its traffic show.  A flow
 * starts on cubic (RFC 9438, windows: a request/response flow its window
 * never holds back costs the loop next to nothing, stack_cc.c).  At the
 * first control interval in which its window held it back and it lost
 * segments (a bulk flow on a lossy path) it moves to bbr (BBR v1 on
 * per-interval samples, paced: blind to random loss, where a loss-based
 * window collapses at a few percent; this machine's Linux default); a
 * bulk flow that loses nothing stays on cubic, unpaced.  If ECN was
 * negotiated and the path marks CE, it moves to
 * dctcp-win (RFC 8257) at its first marked interval, from whichever it
 * was on (a datacenter fabric that marks is where DCTCP keeps queues
 * short).  Each move starts from the window or rate the flow had.
 * Counters: cc_auto_cubic, flows started so; cc_auto_bbr and
 * cc_auto_dctcp, flows that moved.
 *
 * Rules keyed by the application's process name (its comm,
 * as /proc/PID/comm shows it when it attaches) override the algorithm
 * (`cc-app = NAME=ALG`) and set a bandwidth cap over all of the
 * application's flows (`app-rate-cap = NAME=MBIT`).  One rule per name;
 * a later line for the same name changes only what it names.
 */
#define SS_CC_APP_RULES 32
#define SS_CC_NAME_MAX 16 /* TASK_COMM_LEN */

struct ss_cc_app_rule {
	char name[SS_CC_NAME_MAX];
	const struct ss_cc_ops *ops; /* NULL: the service's algorithm */
	uint64_t cap_bps;            /* bytes/s over all its flows; 0: none */
};

/* Who runs a rate-based (dctcp-rate) flow's controller: one per remote
 * host, split among its flows (share.c), or each flow its own. */
enum ss_cc_share { SS_CC_SHARE_HOST, SS_CC_SHARE_FLOW };

struct ss_cc_policy {
	const struct ss_cc_ops *ops; /* NULL: the TCP engine's own NewReno, no
				      * control loop (the stack's unit tests);
				      * with pick_auto, cubic: where flows start */
	bool pick_auto;              /* "auto" (the default): per connection, above */
	struct ss_cc_params params;
	uint8_t share;               /* enum ss_cc_share (default: host) */
	uint32_t n_rules;
	struct ss_cc_app_rule rules[SS_CC_APP_RULES];
};

/* "auto", default parameters, no rules. */
void ss_cc_policy_default(struct ss_cc_policy *p);

/* The service's choice by name: "auto" or the algorithm's. */
const char *ss_cc_policy_name(const struct ss_cc_policy *p);

/* The rule for process name @comm, or NULL. */
const struct ss_cc_app_rule *ss_cc_policy_rule(const struct ss_cc_policy *p, const char *comm);

/*
 * Configuration values.  Each returns 0, or -1 with a message in @err:
 *   ss_cc_policy_set_algo  "auto", or "ALG" (a name ss_cc_find() knows)
 *   ss_cc_policy_add_algo  "NAME=ALG"
 *   ss_cc_policy_add_cap   "NAME=MBIT" (Mbit/s, decimals allowed, 0.1 .. 100000)
 */
int ss_cc_policy_set_algo(struct ss_cc_policy *p, const char *val, char *err, size_t errlen);
int ss_cc_policy_add_algo(struct ss_cc_policy *p, const char *val, char *err, size_t errlen);
int ss_cc_policy_add_cap(struct ss_cc_policy *p, const char *val, char *err, size_t errlen);
/*   ss_cc_policy_set_share "host" or "flow" */
int ss_cc_policy_set_share(struct ss_cc_policy *p, const char *val, char *err, size_t errlen);

#endif
