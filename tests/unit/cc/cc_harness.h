/* cc_harness.h - helpers for the congestion-control tests: building samples, running an algorithm. */
#ifndef SS_TESTS_CC_HARNESS_H
#define SS_TESTS_CC_HARNESS_H

#include "cc/cc.h"
#include "cc/cc_int.h"

#include <string.h>

/* A sample with the given interval, acked and marked bytes; no loss;
 * sent = acked; RTT 100 us; MSS 1000 (round numbers for hand checks). */
static inline struct ss_cc_sample cc_sample(uint32_t interval_us, uint64_t acked,
					    uint64_t ecn)
{
	struct ss_cc_sample s;

	memset(&s, 0, sizeof(s));
	s.interval_us = interval_us;
	s.acked_bytes = acked;
	s.ecn_bytes = ecn;
	s.sent_bytes = acked;
	s.srtt_us = 100;
	s.rtt_us = 100;
	s.mss = 1000;
	return s;
}

#endif /* SS_TESTS_CC_HARNESS_H */
