/* counters.c - counter names, generated from SS_COUNTER_LIST. */
#include "stack/counters.h"

static const char *const counter_names[SS_CTR_MAX] = {
#define SS_COUNTER_NAME(name) #name,
	SS_COUNTER_LIST(SS_COUNTER_NAME)
#undef SS_COUNTER_NAME
};

const char *ss_counter_name(enum ss_counter_id id)
{
	return (unsigned)id < SS_CTR_MAX ? counter_names[id] : "unknown";
}
