/* populate.h - how far ahead of its connections an application's shared region is populated. */
#ifndef SS_SERVICE_POPULATE_H
#define SS_SERVICE_POPULATE_H

#include <stdint.h>

/*
 * A region on huge pages (--shm-huge, bigmem.h) is populated by the
 * control thread ahead of use, so that no 2 MiB page is zeroed at its
 * first touch on the fast path or in the application.  A fresh slot pool
 * hands out 0, 1, 2, ... and reuses freed slots first (idpool.h), so the
 * rings ever used are those of slots [0, hw), hw being the high-water mark
 * of slots handed out; the control thread keeps those of [0, target)
 * populated:
 *
 *   target = hw + max(hw, SS_POPULATE_AHEAD bytes of rings),
 *
 * rounded up to whole 2 MiB pages of rings and capped at the region's
 * slots, so the memory committed ahead is at most what is in use (or 32
 * MiB) and a burst of connections finds its rings ready.  The fast path
 * wakes the control thread when hw passes the kick mark, half way from the hw
 * the plan was made for to its target.  Pure functions.
 */
#define SS_POPULATE_AHEAD (32ull << 20)
#define SS_POPULATE_PAGE (2ull << 20)
#define SS_POPULATE_NEVER UINT32_MAX /* a kick mark: nothing more to populate */

/* Slots to have populated with @hw handed out, of @max, @slot_bytes each. */
uint32_t ss_populate_target(uint32_t hw, uint32_t max, uint64_t slot_bytes);

/* The kick mark for a plan made at @hw to @target of @max slots. */
uint32_t ss_populate_kick_at(uint32_t hw, uint32_t target, uint32_t max);

#endif
