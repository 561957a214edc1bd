/* SPDX-License-Identifier: MIT */
/* context.h - what the context API (context.c) offers the child kinds. */
#ifndef CUCTX_CONTEXT_H
#define CUCTX_CONTEXT_H

#include "cuctx.h"
#include "ids.h"

#include <pthread.h>
#include <stdint.h>

/* The cuctx_<kind>_ctx functions: a borrowed handle of the context of the
 * live child id, in *out (claimed first, claim.h). The child's context must
 * live: an ended one gives CUDA_ERROR_CONTEXT_IS_DESTROYED, a stale child
 * CUDA_ERROR_INVALID_HANDLE, and *out {0}. */
CUresult cuctx__child_ctx(uint64_t id, enum cuctx_kind kind, const char *fn, cuctx_ctx *out);

/* On the real driver, cuCtxSynchronize on one thread while another thread
 * of the same context begins or ends a stream capture is a SIGSEGV inside
 * libcuda (measured on the H200: tools/facts/sync_beside_capture.c crashed
 * in every run of a few seconds; never with the captures in another
 * context, never beside one capture held open the whole time). So cuctx's
 * context synchronize and its capture begin and end take the two sides of
 * one lock of the context, striped by its entry id: synchronizes share it,
 * a begin or an end has it alone (writers first, so that a loop of
 * synchronizes cannot hold a capture's end off). The guard lets go at the
 * end of its block, and when a cancellation unwinds it. */
struct cuctx_sync_guard { pthread_rwlock_t *lock; };
pthread_rwlock_t *cuctx__sync_stripe(uint64_t entry);
static inline void cuctx__sync_guard_end(struct cuctx_sync_guard *g)
{
    pthread_rwlock_unlock(g->lock);
}
/* (unused: a guard is held for its block, never read) */
#define CUCTX__SYNC_GUARD __attribute__((cleanup(cuctx__sync_guard_end), unused))
/* struct cuctx_sync_guard g CUCTX__SYNC_GUARD = cuctx__sync_shared(entry); */
static inline struct cuctx_sync_guard cuctx__sync_shared(uint64_t entry)
{
    struct cuctx_sync_guard g = {cuctx__sync_stripe(entry)};
    pthread_rwlock_rdlock(g.lock);
    return g;
}
static inline struct cuctx_sync_guard cuctx__sync_alone(uint64_t entry)
{
    struct cuctx_sync_guard g = {cuctx__sync_stripe(entry)};
    pthread_rwlock_wrlock(g.lock);
    return g;
}
/* The statement after it runs with the lock of entry alone: a run-once for
 * with the guard in its init clause (its pointer, set, is the loop's flag). */
#define CUCTX__SYNC_ALONE(entry)                                                                    \
    for (struct cuctx_sync_guard cuctx__alone_ CUCTX__SYNC_GUARD = cuctx__sync_alone(entry),        \
                                 *cuctx__alone_once_ = &cuctx__alone_;                               \
         cuctx__alone_once_; cuctx__alone_once_ = NULL)

#endif
