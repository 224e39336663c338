/* app.h - attached applications as the stack sees them: slots, shared-memory
 * layout, per-context queues.  The control thread creates and reclaims them
 * (service/registry.h). */
#ifndef SS_STACK_APP_H
#define SS_STACK_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cc/pacer.h"
#include "shm/abi.h"
#include "stack/idpool.h"

struct ss_sconn;

/*
 * Life of an application slot (state, an atomic):
 *
 *   FREE --attach (control)--> ACTIVE --hang-up (control)--> DYING
 *     ^                                                            |
 *     +--- reclaim (control) <-- DEAD <--teardown (fast path)----+
 *
 * The control thread (service/ctl.c) is the only writer of FREE->ACTIVE and
 * ACTIVE->DYING and DEAD->FREE; the fast path owns everything below
 * "fast path" while the app is ACTIVE or DYING and is the only writer of
 * DYING->DEAD.  Each transition is a store-release read with load-acquire
 * by the other thread, so the fields written before it are visible.
 */
enum ss_app_state { SS_APP_FREE, SS_APP_ACTIVE, SS_APP_DYING, SS_APP_DEAD };

struct ss_app_ctx {
	/* Shared memory (untrusted). */
	struct ss_shm_ring *atx, *arx;
	struct ss_shm_cmd *atx_slot;
	struct ss_shm_ev *arx_slot;
	int efd;                  /* the app blocks on it; the service writes it */
	/* Fast path only: private ring indices (never read back from shm). */
	uint32_t atx_cons;
	uint32_t arx_prod;
	uint32_t arx_published;   /* arx_prod at the last store-release */
	bool kick;                /* events published this round */
	struct ss_sconn *pending; /* connections with events that did not fit */
	bool taking;              /* its commands are being carried out right now */
};

struct ss_app {
	uint32_t state;           /* enum ss_app_state, atomic */
	uint32_t id;
	pid_t pid;
	uint64_t token;           /* random, from the attach reply: proves parenthood */
	bool cap_bind;            /* CAP_NET_BIND_SERVICE at attach: ports < 1024 */
	char comm[16];            /* process name at attach (/proc/PID/comm): the
				   * congestion-control rules' key (cc_policy.h) */
	uint32_t parent_id;       /* fork child: the parent's app id ... */
	uint64_t parent_token;    /* ... and token (0: not a child) */

	/* Slow path only. */
	int sock_fd;
	int region_fd;
	bool populating;          /* a huge region, populated ahead (populate.h);
				   * cleared if that fails */
	uint64_t pop_small_end;   /* populated so far: bytes [0, pop_small_end)
				   * (the records and the small rings) ... */
	uint64_t pop_end;         /* ... and [buf_off, pop_end) (the large rings) */

	/* Populating ahead, both paths (atomics): the fast path raises
	 * slot_hw, the control thread sets the other two (service/registry.c). */
	uint32_t populated;       /* slots whose rings are populated (0: none) */
	uint32_t slot_hw;         /* slots [0, slot_hw) have been handed out */
	uint32_t populate_at;     /* the fast path kicks once slot_hw passes it */

	/* Set at attach, read-only afterwards: the trusted layout. */
	uint8_t *region;
	size_t region_size;
	uint32_t n_ctx;
	uint32_t atx_slots, arx_slots;
	uint32_t max_conns;
	uint32_t rxbuf_size, txbuf_size;
	uint64_t buf_off;
	uint64_t info_off;        /* struct ss_shm_conn_info per slot */
	uint64_t sync_off;        /* struct ss_shm_conn_sync per slot (abi.h, fork) */
	uint64_t small_off;       /* small rings per slot (abi.h); 0: none */
	struct ss_app_ctx *ctx;

	/* Fast path only. */
	struct ss_idpool slots;   /* connection handles: slot + generation */
	uint32_t populate_kicked; /* the populate_at it last kicked for */
	struct ss_sconn **slot_conn;
	uint32_t n_conns;         /* live connections holding a slot */
	uint32_t n_listeners;     /* port entries it is a member of */
	struct ss_inh *inh;       /* inherited connection references (fork) */
	uint32_t n_inh, cap_inh;
	bool inherited;           /* SS_CMD_INHERIT done */
	uint64_t cmd_errors;
	bool broken;              /* corrupted its rings: being disconnected */
	/* Congestion control (stack_cc.c), set up at its first connection. */
	bool cc_ready;            /* cleared at attach */
	const struct ss_cc_ops *cc_ops;
	struct ss_pacer_group *cap; /* its rule's cap (stack-owned), NULL: none */
};

/* A reference to another app's connection, inherited across fork. */
struct ss_inh {
	uint32_t owner_id;
	uint64_t owner_token;
	uint32_t slot, gen;       /* the owner's handle */
};

struct ss_app_limits {
	uint32_t max_apps;
	uint32_t max_ctx;         /* per app, <= 64 */
	uint32_t max_conns;       /* per app */
	uint32_t max_buf;         /* per ring, bytes */
	uint64_t max_region;      /* per app, bytes of shared memory */
	uint32_t atx_slots, arx_slots;
};

struct ss_app_reg {
	struct ss_app_limits lim;
	struct ss_app *apps;      /* lim.max_apps slots */
	uint32_t gen;             /* bumped (release) on every state change */
	int status_fd;            /* sealed memfd, struct ss_shm_status */
	struct ss_shm_status *status;
	int doorbell_fd;          /* eventfd the apps write to wake the fast path */
	int reclaim_fd;           /* eventfd the fast path writes to wake the control thread:
				   * an app is DEAD, or a region to populate further */
	uint64_t attached, detached, refused;
	uint64_t populated_bytes; /* shared memory populated ahead of use, all apps ever */
	uint64_t populate_errors; /* madvise(MADV_POPULATE_WRITE) failures */
	bool shm_huge;            /* regions on huge pages (--shm-huge and the host's mode, bigmem.h) */
	char shmem_thp[16];       /* the host's shmem THP mode at start, "" unknown */
};

/*
 * Fast path: @a handed out connection slot @slot.  True when the slow
 * path is to populate more of the region (populate.h): the caller kicks
 * it (reclaim_fd), once per mark.  *@behind is set when a region being
 * populated had not got as far as this slot's rings yet: their pages are
 * zeroed at first touch, on the fast path or in the application.
 */
static inline bool ss_app_slot_taken(struct ss_app *a, uint32_t slot, bool *behind)
{
	uint32_t hw = __atomic_load_n(&a->slot_hw, __ATOMIC_RELAXED);
	*behind = false;
	if (slot < hw)
		return false;
	__atomic_store_n(&a->slot_hw, slot + 1, __ATOMIC_RELAXED);
	uint32_t done = __atomic_load_n(&a->populated, __ATOMIC_RELAXED);
	*behind = done && slot >= done;
	uint32_t at = __atomic_load_n(&a->populate_at, __ATOMIC_RELAXED);
	if (slot + 1 <= at || a->populate_kicked == at)
		return false;
	a->populate_kicked = at;
	return true;
}

/* Region offset -> pointer helpers (trusted layout). */
static inline uint8_t *ss_app_rx_ring(const struct ss_app *a, uint32_t slot)
{
	return a->region + a->buf_off + (uint64_t)slot * (a->rxbuf_size + a->txbuf_size);
}
static inline uint8_t *ss_app_tx_ring(const struct ss_app *a, uint32_t slot)
{
	return ss_app_rx_ring(a, slot) + a->rxbuf_size;
}
/* Slot @slot's small rings (abi.h "Small rings that grow"): NULL where
 * that direction has none (the region has none, or its ring is small). */
static inline uint8_t *ss_app_rx_small(const struct ss_app *a, uint32_t slot)
{
	if (!a->small_off || a->rxbuf_size <= SS_SHM_SMALL_RING)
		return NULL;
	return a->region + a->small_off + (uint64_t)slot * (2 * SS_SHM_SMALL_RING);
}
static inline uint8_t *ss_app_tx_small(const struct ss_app *a, uint32_t slot)
{
	if (!a->small_off || a->txbuf_size <= SS_SHM_SMALL_RING)
		return NULL;
	return a->region + a->small_off + (uint64_t)slot * (2 * SS_SHM_SMALL_RING) +
	       SS_SHM_SMALL_RING;
}
/* Slot @slot's sync words (untrusted: the app writes them). */
static inline struct ss_shm_conn_sync *ss_app_sync(const struct ss_app *a, uint32_t slot)
{
	return (struct ss_shm_conn_sync *)(void *)(a->region + a->sync_off) + slot;
}

#endif
