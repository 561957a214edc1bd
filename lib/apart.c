/* SPDX-License-Identifier: MIT */
/* apart.c - the lock of apart.h: 64 stripes of a readers-writer lock. */
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
    CUCTX__APART_FROM_POOLS(raw)
        rc = DRV(cuStreamDestroy)(raw);
    return rc;
}

/* Every stripe, in one order (so two of these cannot deadlock). */
struct cuctx_sync_all cuctx__sync_all_alone(void)
{
    for (int i = 0; i < SYNC_STRIPES; i++)
        pthread_rwlock_wrlock(&sync_stripes[i]);
    return (struct cuctx_sync_all){1};
}

void cuctx__sync_all_end(struct cuctx_sync_all *g)
{
    if (!g->held)
        return;
    g->held = 0;
    for (int i = SYNC_STRIPES - 1; i >= 0; i--)
        pthread_rwlock_unlock(&sync_stripes[i]);
}
