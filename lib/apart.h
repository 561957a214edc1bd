/* SPDX-License-Identifier: MIT */
/* apart.h - driver calls that crash the real driver when they run beside
 * each other on two threads, and the locks that keep cuctx's apart: two
 * such rules are known, each measured on the H200 (below). */
#ifndef CUCTX_APART_H
#define CUCTX_APART_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

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
/* A guard of one side of lock: struct cuctx_sync_guard g CUCTX__SYNC_GUARD = ... */
static inline struct cuctx_sync_guard cuctx__guard_shared(pthread_rwlock_t *lock)
{
    pthread_rwlock_rdlock(lock);
    return (struct cuctx_sync_guard){lock};
}
static inline struct cuctx_sync_guard cuctx__guard_alone(pthread_rwlock_t *lock)
{
    pthread_rwlock_wrlock(lock);
    return (struct cuctx_sync_guard){lock};
}
/* The statement after it runs under the guard made by take: a run-once for
 * with the guard (named var) in its init clause (its pointer, set, is the
 * loop's flag). */
#define CUCTX__GUARDED(var, take)                                                                   \
    for (struct cuctx_sync_guard var CUCTX__SYNC_GUARD = (take), *var##once_ = &var; var##once_;   \
         var##once_ = NULL)
static inline struct cuctx_sync_guard cuctx__sync_shared(uint64_t entry)
{
    return cuctx__guard_shared(cuctx__sync_stripe(entry));
}
/* The statement after it runs with the lock of entry alone. */
#define CUCTX__SYNC_ALONE(entry) CUCTX__GUARDED(cuctx__alone_, cuctx__guard_alone(cuctx__sync_stripe(entry)))

/* cuMemPoolDestroy on one thread while another thread's cuCtxSynchronize
 * or cuStreamDestroy runs, in any context, crashes the real driver
 * (SIGSEGV) or hangs it (measured on the H200, tools/facts/pool_destroy.c:
 * way S crashed in 4 runs of 4, and R, whose pools ended with every free
 * done, hung in 2 of 4; U and T, the same with the destroys kept apart
 * from those two calls, ran clean in 4 of 4). A context's destroy
 * (cuCtxDestroy, a primary context's reset or last release, a green
 * context's destroy) synchronizes and destroys streams too, and
 * tests/stress crashed with pools only where contexts died: those are
 * kept apart as well. So each of these calls runs with a second lock, one
 * for the process, shared, and a pool's destroy has it alone (writers
 * first). A holder of either lock waits meanwhile only for driver calls
 * and for locks that no thread holds while it waits for one of these (the
 * context lock is taken before, never inside; a synchronize takes its
 * stripe, then this lock), so they add no wait of their own beyond the
 * driver's. (One lock, not every stripe alone: ThreadSanitizer's deadlock
 * detector stops at 64 locks held by one thread.) */
extern pthread_rwlock_t cuctx__pools_lock;
/* The statement after it runs with the pool lock shared. */
#define CUCTX__APART_FROM_POOLS CUCTX__GUARDED(cuctx__apart_, cuctx__guard_shared(&cuctx__pools_lock))
/* The statement after it runs with the pool lock alone. */
#define CUCTX__POOLS_ALONE CUCTX__GUARDED(cuctx__pools_, cuctx__guard_alone(&cuctx__pools_lock))
/* cuStreamDestroy so. */
CUresult cuctx__stream_destroy_raw(CUstream raw);

#endif
