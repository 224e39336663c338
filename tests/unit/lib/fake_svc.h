/* fake_svc.h - a scripted stand-in for slipstreamd's side of shm/abi.h, for libslipstream tests. */
#ifndef SS_TESTS_FAKE_SVC_H
#define SS_TESTS_FAKE_SVC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/abi.h"

/*
 * The fake lays out a region exactly as shm/abi.h describes, listens on a
 * UNIX socket in a fresh temporary directory, and a thread answers one
 * attach with the configured reply and fds.  After that the test drives the
 * service side directly from its own thread: push events into arx, read
 * commands from atx, write bytes into connection rings.
 */

struct fake_svc;

struct fake_opts {
	uint32_t contexts, conns, rxbuf, txbuf, atx_slots, arx_slots;
	const char *reply;      /* reply line to send instead of the right one */
	int nfds;               /* fds to send; 0: 3 + contexts */
	void (*corrupt)(struct fake_svc *f); /* mutate the region before replying */
	uint32_t status_sleeping; /* initial status->sleeping[0] */
	bool small;             /* small rings per slot (shm/abi.h "Small rings
				 * that grow"): connections open on them */
};

struct fake_svc {
	struct fake_opts o;
	char dir[64], sock[100];
	int lfd, cfd;
	int region_fd, status_fd, doorbell, evfd[SS_SHM_MAX_FAST_PATHS];
	uint8_t *region;
	size_t region_size;
	struct ss_shm_hdr *hdr;
	struct ss_shm_status *status;
	pthread_t thr;
	char req[256];
	uint32_t arx_prod[SS_SHM_MAX_FAST_PATHS];
	uint32_t atx_cons[SS_SHM_MAX_FAST_PATHS];
};

/* Build the region and socket and start the answering thread; 0 or -1. */
int fake_start(struct fake_svc *f, const struct fake_opts *o);
/* Wait for the answering thread (after ss_app_attach returned). */
void fake_join(struct fake_svc *f);
/* Close and remove everything. */
void fake_stop(struct fake_svc *f);

struct ss_shm_ring *fake_atx(struct fake_svc *f, unsigned ctx);
struct ss_shm_ring *fake_arx(struct fake_svc *f, unsigned ctx);
uint64_t fake_rx_off(const struct fake_svc *f, uint32_t slot);
uint64_t fake_tx_off(const struct fake_svc *f, uint32_t slot);
/* Slot @slot's small rings (fake_opts.small). */
uint64_t fake_rx_small_off(const struct fake_svc *f, uint32_t slot);
uint64_t fake_tx_small_off(const struct fake_svc *f, uint32_t slot);

/* Write one event into arx (returns -1 when full); publish makes the
 * written events visible (store-release of prod). */
int fake_ev(struct fake_svc *f, unsigned ctx, const struct ss_shm_ev *e);
void fake_publish(struct fake_svc *f, unsigned ctx);
/* Event helpers: write + publish. */
void fake_ev_open(struct fake_svc *f, unsigned ctx, uint8_t type, uint32_t slot,
		  uint32_t gen, uint64_t cookie);
void fake_ev_conn(struct fake_svc *f, unsigned ctx, uint8_t type, uint32_t slot,
		  uint32_t gen, uint32_t arg, uint16_t error);
/* Append @len bytes to connection @slot's (large) receive ring at stream
 * position @pos (wrapping) and send SS_EV_RX. */
void fake_rx(struct fake_svc *f, unsigned ctx, uint32_t slot, uint32_t gen,
	     uint32_t pos, const void *data, uint32_t len);

/* Take the next published command; 1 when there was one, 0 if none. */
int fake_cmd(struct fake_svc *f, unsigned ctx, struct ss_shm_cmd *out);

/* An application attached to a fake service (8 connections, 4 KiB rings):
 * the fixture of the library's tests. */
struct fake_app {
	struct fake_svc f;
	struct ss_app *app;
	struct ss_ctx *ctx; /* context 0 */
};

/* Start the service (@o NULL: defaults) and attach with its ring sizes: 0,
 * or -1 (logged). */
int fake_app_up(struct fake_app *x, const struct fake_opts *o);
void fake_app_down(struct fake_app *x);
/* Events the library's context 0 refused as bogus so far. */
uint64_t fake_app_bogus(struct fake_app *x);
/* Commands pending in atx (published, not yet taken). */
uint32_t fake_cmd_pending(struct fake_svc *f, unsigned ctx);
/* Read the doorbell eventfd: its counter, 0 when it was not written. */
uint64_t fake_doorbell(struct fake_svc *f);

#endif /* SS_TESTS_FAKE_SVC_H */
