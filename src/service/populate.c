/* How far ahead of its connections a shared region is populated (populate.h). */
#include "service/populate.h"

uint32_t ss_populate_target(uint32_t hw, uint32_t max, uint64_t slot_bytes)
{
	if (slot_bytes == 0 || hw >= max)
		return max;
	uint64_t ahead = (SS_POPULATE_AHEAD + slot_bytes - 1) / slot_bytes;
	if (ahead < hw)
		ahead = hw;
	/* Whole 2 MiB pages of rings: a multiple of the slots in one. */
	uint64_t per_page = slot_bytes < SS_POPULATE_PAGE ? SS_POPULATE_PAGE / slot_bytes : 1;
	uint64_t t = (uint64_t)hw + ahead;
	t = (t + per_page - 1) / per_page * per_page;
	return t < max ? (uint32_t)t : max;
}

uint32_t ss_populate_kick_at(uint32_t hw, uint32_t target, uint32_t max)
{
	if (target >= max)
		return SS_POPULATE_NEVER;
	if (target <= hw)
		return hw;
	return hw + (target - hw) / 2;
}
