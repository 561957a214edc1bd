/* SPDX-License-Identifier: MIT */
/* mem_pool.h - what mem_pool.c offers the rest of lib/: a pool's record,
 * which keeps the driver's pool until its handle and every allocation
 * cuctx made from it are gone. */
#ifndef CUCTX_MEM_POOL_H
#define CUCTX_MEM_POOL_H

#include "registry.h"

struct cuctx_pool_life;

/* The record of the pool in slot s (pinned by the caller, so not being
 * destroyed), with one more reference, for an allocation about to be made
 * from it; NULL for a pool cuctx does not destroy (borrowed), or where no
 * memory was left to make the record (then the allocation is refused). */
struct cuctx_pool_life *cuctx__pool_ref(struct cuctx_slot *s, int *no_memory);

/* Gives a reference back: the last one destroys the driver's pool. NULL
 * does nothing. */
void cuctx__pool_unref(struct cuctx_pool_life *l, const char *fn);

/* Destroys every parked pool, with no other thread in the driver: for a
 * harness that resets the driver between runs (tests/fuzz), where parked
 * pools would outlive the driver's record of them. */
void cuctx__pools_destroy_parked(void);

#endif
