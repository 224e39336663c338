/* registry.h - the application registry: attach over the control socket,
 * per-app shared memory, reclaim.  Control thread only, except where a
 * function says otherwise. */
#ifndef SS_SERVICE_REGISTRY_H
#define SS_SERVICE_REGISTRY_H

#include "stack/app.h"

int ss_app_reg_init(struct ss_app_reg *r, const struct ss_app_limits *lim, unsigned n_fast_paths);
void ss_app_reg_fini(struct ss_app_reg *r);

/*
 * Handles an "attach ..." request line received on @fd.  On
 * success the app is ACTIVE, the reply with its fds has been sent, @fd is
 * kept (returns 1).  On failure an error reply has been sent (returns 0;
 * the caller closes @fd).
 */
int ss_app_attach(struct ss_app_reg *r, int fd, const char *line);

/* The app behind @fd hung up: mark it DYING for the fast path. */
void ss_app_hangup(struct ss_app_reg *r, struct ss_app *a);

/* Unmaps and free every DEAD app; returns how many. */
unsigned ss_app_reclaim(struct ss_app_reg *r);

/*
 * Populates the huge regions of attached applications ahead of
 * their connections (populate.h), when the fast path has kicked.  Returns
 * the bytes populated.
 */
uint64_t ss_app_populate(struct ss_app_reg *r);

/* Bytes of shared memory held by attached applications */
uint64_t ss_app_reg_memory(const struct ss_app_reg *r);

#endif
