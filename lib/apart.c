/* SPDX-License-Identifier: MIT */
/* apart.c - the locks of apart.h: 64 stripes of a readers-writer lock for
 * synchronizes and captures, and one for pools' destroys. */
#include "config.h"

#include "apart.h"
#include "driver.h"

/* The stripes of the synchronize/capture lock (apart.h). */
#define SYNC_STRIPES 64
static pthread_rwlock_t sync_stripes[SYNC_STRIPES] = {
    [0 ... SYNC_STRIPES - 1] = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP};

pthread_rwlock_t *cuctx__sync_stripe(uint64_t entry)
{
    return &sync_stripes[(entry ^ entry >> 32) % SYNC_STRIPES];
}

/* A stream's destroy, apart from pools' destroys. */
CUresult cuctx__stream_destroy_raw(CUstream raw)
{
    CUresult rc;
    CUCTX__APART_FROM_POOLS
        rc = DRV(cuStreamDestroy)(raw);
    return rc;
}

/* The pool lock (apart.h). */
pthread_rwlock_t cuctx__pools_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
