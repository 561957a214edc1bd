/* SPDX-License-Identifier: MIT */
/* pool_destroy: which destroy of a memory pool with allocations alive
 * crashes the real driver? pool_threads' way 1 (pools destroyed by their
 * makers while other threads free from them, and allocate from them: a
 * race of the program's own) crashed the H200's driver in both rounds.
 * Each way runs in a forked child, in one context, and says how many calls
 * answered 0 and how many did not; a crash is counted, not fatal:
 *   A  one thread: a pool made, 16 allocations from it, the pool destroyed,
 *      then they are freed with cuMemFreeAsync on the stream (2000 rounds)
 *   B  one thread: the frees queued, the pool destroyed before they ran
 *   C  one thread: as A, the frees by cuMemFree with no context current
 *   D  8 threads, each with a pool of its own, each doing A (no thread
 *      touches another's pool or memory)
 *   E  8 threads; allocations from any thread's pool (a lock keeps them
 *      apart from the pool's destroy), handed between threads and freed
 *      by any; each thread now and then destroys its pool with
 *      allocations alive and makes a new one
 *   F  as E, but a pool's destroy waits until no allocation of it lives
 *      (each pool counts its live allocations; the last free, once its
 *      stream was synchronized, destroys it)
 *   G  as F, the last free destroying the pool right after its
 *      cuMemFreeAsync is queued, with no synchronize
 *   H  8 threads, each with a pool of its own, each doing B (the frees
 *      queued, then the pool destroyed)
 *   J  as G (the last free destroys the pool right after queueing its
 *      cuMemFreeAsync), no synchronize after each allocation, each free
 *      queued behind a 64 MiB cuMemsetD8Async on its stream (so that it
 *      is still pending when the pool's destroy comes), and 3 more
 *      threads in the context: two calling cuCtxSynchronize, one making
 *      and destroying streams - tests/stress with explicit pools crashed
 *      the H200's driver in cuCtxSynchronize (SIGSEGV) and hung in it and
 *      in cuStreamDestroy (a spin lock), and ran clean without pools
 *   K  as J, each last free's stream synchronized before the pool's
 *      destroy (F's order, beside the same threads)
 *   L  as J with no pool destroyed during the run: each thread trims its
 *      own pool to 0 now and then (cuMemPoolTrimTo) instead
 *   M  as J, the pool's destroy (by the last free or the handle) waiting
 *      first until the pool's USED_MEM_CURRENT reads 0 (every queued free
 *      of its memory ran), polled every 20 us; says how many destroys
 *      had to wait
 *   N  as J, the pool's destroy waiting first until, trimmed to 0, the pool
 *      reserves nothing (if a free still queued keeps its block reserved),
 *      polled every 20 us
 *   Q  as J, every free's stream synchronized before its reference ends
 *      (F's order under J's load: no pool destroyed with a free queued)
 *      (J, K, M, N and Q free memory on a stream other than its
 *      allocation's, with no order between the two: the program's own
 *      misuse; R and S take it away)
 *   R  as Q, each allocation's stream synchronized before the memory is
 *      handed on (so every free comes after its allocation)
 *   S  as J, each allocation's stream synchronized as in R: the pool
 *      destroyed right after its last free is queued, behind a memset
 *   T  as R, each cuMemPoolDestroy kept apart (a lock, write side) from
 *      the beside threads' cuCtxSynchronize and cuStreamDestroy (read side)
 *   U  as S (destroys with a free still queued), kept apart as in T
 *   V  as U, with a fourth thread beside making and destroying contexts
 *      (cuCtxCreate, cuStreamCreate, cuCtxDestroy), not kept apart
 *   W  as V, the contexts' destroys kept apart as in T (read side)
 *   X  as L (trims, no pool destroyed in the run), with V's context churn
 *   P  one thread: does USED_MEM_CURRENT count a free still queued? 64 MiB
 *      from a pool, freed with cuMemFreeAsync behind 1000 memsets of
 *      1 GiB; the attribute read at once, then after the synchronize
 *   I  8 threads, each with a pool of its own, each doing C but with the
 *      pool destroyed after the frees (cuMemFree with no context current,
 *      which leaves the pool counting the memory as used: cuctx's free of
 *      stream-ordered memory whose context is gone)
 *   gcc -O2 -I/usr/local/cuda/include pool_destroy.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread && ./a.out [seconds] */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define SLOTS 64
static CUcontext ctx;
static CUdevice dev;
static char way;
static int seconds = 3;
static atomic_int stop;
static atomic_ulong ok, bad, waited;

static void count(CUresult rc)
{
    atomic_fetch_add(rc == CUDA_SUCCESS ? &ok : &bad, 1);
}

static CUmemoryPool new_pool(void)
{
    CUmemPoolProps pp;
    CUmemoryPool p = NULL;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    count(cuMemPoolCreate(&p, &pp));
    return p;
}

/* P: a queued free, and what the pool counts used meanwhile */
static void pending_used(void)
{
    CUstream s;
    CUdeviceptr p = 0, busy = 0;
    cuuint64_t queued = 0, after = 0, before = 0, rq = 0, rt = 0, ra = 0;
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    CUmemoryPool pool = new_pool();
    count(cuMemAlloc(&busy, 1u << 30));
    count(cuMemAllocFromPoolAsync(&p, 64u << 20, pool, s));
    count(cuStreamSynchronize(s));
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &before);
    for (int i = 0; i < 1000; i++)
        count(cuMemsetD8Async(busy, (unsigned char)i, 1u << 30, s));
    count(cuMemFreeAsync(p, s));
    count(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &queued));
    count(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &rq));
    count(cuMemPoolTrimTo(pool, 0));
    count(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &rt));
    CUresult q = cuStreamQuery(s);
    count(cuStreamSynchronize(s));
    count(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &after));
    count(cuMemPoolTrimTo(pool, 0));
    count(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &ra));
    printf("    P: used %llu before the free, %llu with it queued (stream query %d), %llu after the synchronize\n",
           (unsigned long long)before, (unsigned long long)queued, (int)q, (unsigned long long)after);
    printf("    P: reserved %llu with the free queued, %llu after a trim to 0 then, %llu after the synchronize and "
           "a trim\n", (unsigned long long)rq, (unsigned long long)rt, (unsigned long long)ra);
    count(cuMemPoolDestroy(pool));
    cuMemFree(busy);
    cuStreamDestroy(s);
}

/* A, B, C, D: one thread's rounds on a pool of its own */
static void serial(char how)
{
    CUstream s;
    CUdeviceptr p[16];
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (how == 'P') {
        pending_used();
        return;
    }
    for (int round = 0; round < 2000 && !atomic_load(&stop); round++) {
        CUmemoryPool pool = new_pool();
        for (int i = 0; i < 16; i++)
            count(cuMemAllocFromPoolAsync(&p[i], 4096u << (i % 6), pool, s));
        if (how == 'B') {
            for (int i = 0; i < 16; i++)
                count(cuMemFreeAsync(p[i], s));
            count(cuMemPoolDestroy(pool));
            count(cuStreamSynchronize(s));
            continue;
        }
        count(cuStreamSynchronize(s));
        if (how != 'I')
            count(cuMemPoolDestroy(pool));
        if (how == 'C' || how == 'I') {
            CUcontext popped;
            cuCtxPopCurrent(&popped);
            for (int i = 0; i < 16; i++)
                count(cuMemFree(p[i]));
            cuCtxPushCurrent(popped);
            if (how == 'I')
                count(cuMemPoolDestroy(pool));
        } else {
            for (int i = 0; i < 16; i++)
                count(cuMemFreeAsync(p[i], s));
        }
        count(cuStreamSynchronize(s));
    }
    cuStreamDestroy(s);
}

#define BUSY_BYTES (64u << 20)

/* E, F */
struct pool {
    CUmemoryPool raw;
    atomic_long live;       /* allocations alive, plus one while its maker keeps it */
};
static pthread_rwlock_t pools_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct pool *pools[THREADS];
struct alloc {
    CUdeviceptr p;
    struct pool *pool;
};
static _Atomic(struct alloc *) slots[SLOTS];

/* M: every free of the pool's memory ran (the pool counts none used) */
static void wait_unused(CUmemoryPool raw)
{
    cuuint64_t used = 0;
    int polls = 0;
    while (cuMemPoolGetAttribute(raw, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS && used
           && polls < 500000) {
        polls++;
        usleep(20);
    }
    if (polls)
        atomic_fetch_add(&waited, 1);
    if (used)
        printf("    M: still %llu bytes used after %d polls\n", (unsigned long long)used, polls);
}

/* N: every queued free of the pool's memory ran (a trim to 0 leaves none reserved) */
static void wait_unreserved(CUmemoryPool raw)
{
    cuuint64_t held = 0;
    int polls = 0;
    while (cuMemPoolTrimTo(raw, 0) == CUDA_SUCCESS
           && cuMemPoolGetAttribute(raw, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &held) == CUDA_SUCCESS && held
           && polls < 500000) {
        polls++;
        usleep(20);
    }
    if (polls)
        atomic_fetch_add(&waited, 1);
    if (held)
        printf("    N: still %llu bytes reserved after %d polls\n", (unsigned long long)held, polls);
}

/* T, U: the pools' destroys apart from the synchronizes and stream destroys */
static pthread_rwlock_t apart = PTHREAD_RWLOCK_INITIALIZER;
static int kept_apart(void)
{
    return way == 'T' || way == 'U' || way == 'V' || way == 'W';
}

static void pool_destroy(CUmemoryPool raw)
{
    if (kept_apart())
        pthread_rwlock_wrlock(&apart);
    count(cuMemPoolDestroy(raw));
    if (kept_apart())
        pthread_rwlock_unlock(&apart);
}

static void pool_unref(struct pool *pl)
{
    if (atomic_fetch_sub(&pl->live, 1) == 1) {
        if (way == 'M')
            wait_unused(pl->raw);
        if (way == 'N')
            wait_unreserved(pl->raw);
        pool_destroy(pl->raw);
        free(pl);
    }
}

static struct pool *pool_new(void)
{
    struct pool *pl = malloc(sizeof *pl);
    pl->raw = new_pool();
    atomic_init(&pl->live, 1);
    return pl;
}

/* V, W, X: contexts made and destroyed beside the workers */
static void *beside_contexts(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        CUcontext c;
        CUstream s;
        CUresult rc = cuCtxCreate(&c, NULL, 0, dev);
        count(rc);
        if (rc != CUDA_SUCCESS)
            continue;
        count(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        if (way == 'W')
            pthread_rwlock_rdlock(&apart);
        count(cuCtxDestroy(c));
        if (way == 'W')
            pthread_rwlock_unlock(&apart);
    }
    return NULL;
}

/* J, K, L: threads beside the workers, in the same context */
static void *beside_sync(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!atomic_load(&stop)) {
        if (kept_apart())
            pthread_rwlock_rdlock(&apart);
        count(cuCtxSynchronize());
        if (kept_apart())
            pthread_rwlock_unlock(&apart);
    }
    return NULL;
}

static void *beside_streams(void *arg)
{
    CUstream s;
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!atomic_load(&stop)) {
        CUresult rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
        count(rc);
        if (rc == CUDA_SUCCESS) {
            if (kept_apart())
                pthread_rwlock_rdlock(&apart);
            count(cuStreamDestroy(s));
            if (kept_apart())
                pthread_rwlock_unlock(&apart);
        }
    }
    return NULL;
}

static void *worker(void *arg)
{
    int beside = way >= 'J', deferred = way == 'F' || way == 'G' || beside;
    int me = (int)(intptr_t)arg;
    unsigned r = (unsigned)me * 2654435761u + 1;
    CUstream s;
    if (way <= 'D' || way == 'H' || way == 'I' || way == 'P') {
        serial(way == 'D' ? 'A' : way == 'H' ? 'B' : way);     /* (I: 8 threads of I) */
        return NULL;
    }
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    CUdeviceptr busy = 0;
    if (beside)
        count(cuMemAlloc(&busy, BUSY_BYTES));
    pthread_rwlock_wrlock(&pools_lock);
    pools[me] = pool_new();
    pthread_rwlock_unlock(&pools_lock);
    while (!atomic_load(&stop)) {
        r = r * 1103515245u + 12345u;
        struct alloc *a = malloc(sizeof *a);
        pthread_rwlock_rdlock(&pools_lock);
        a->pool = pools[(r >> 4) % THREADS];
        CUresult rc = CUDA_ERROR_INVALID_VALUE;
        if (a->pool) {
            atomic_fetch_add(&a->pool->live, 1);
            rc = cuMemAllocFromPoolAsync(&a->p, 256 + (r >> 8) % 65536, a->pool->raw, s);
            count(rc);
        }
        pthread_rwlock_unlock(&pools_lock);
        if (rc != CUDA_SUCCESS) {
            if (a->pool)
                pool_unref(a->pool);
            free(a);
            continue;
        }
        if (!beside || way == 'R' || way == 'S' || way == 'T' || way == 'U' || way == 'V' || way == 'W')
            cuStreamSynchronize(s);
        struct alloc *old = atomic_exchange(&slots[(r >> 12) % SLOTS], a);
        if (old) {
            if (busy)
                count(cuMemsetD8Async(busy, 0, BUSY_BYTES, s));
            count(cuMemFreeAsync(old->p, s));
            if (deferred) {
                if (way == 'F' || way == 'Q' || way == 'R' || way == 'T' || (way == 'K' && atomic_load(&old->pool->live) == 1))
                    cuStreamSynchronize(s);
                pool_unref(old->pool);
            } else if (atomic_fetch_sub(&old->pool->live, 1) == 1) {
                free(old->pool);
            }
            free(old);
        }
        if ((r & 63) == 0 && (way == 'L' || way == 'X')) {      /* my pool trimmed */
            pthread_rwlock_rdlock(&pools_lock);
            count(cuMemPoolTrimTo(pools[me]->raw, 0));
            pthread_rwlock_unlock(&pools_lock);
        } else if ((r & 63) == 0) {        /* my pool ended with allocations alive, a new one made */
            pthread_rwlock_wrlock(&pools_lock);
            struct pool *mine = pools[me];
            pools[me] = pool_new();
            pthread_rwlock_unlock(&pools_lock);
            if (deferred) {
                pool_unref(mine);
            } else {
                count(cuMemPoolDestroy(mine->raw));
                if (atomic_fetch_sub(&mine->live, 1) == 1)
                    free(mine);
            }
        }
    }
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
    if (busy)
        cuMemFree(busy);
    return NULL;
}

static int run(void)
{
    pthread_t t[THREADS];
    int n = way <= 'C' || way == 'P' ? 1 : THREADS;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
        return 10;
    pthread_t b[4];
    int nb = way >= 'J' && way != 'P' ? (way >= 'V' ? 4 : 3) : 0;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < nb; i++)
        pthread_create(&b[i], NULL, i < 2 ? beside_sync : i == 2 ? beside_streams : beside_contexts, NULL);
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < nb; i++)
        pthread_join(b[i], NULL);
    CUresult sync = cuCtxSynchronize();
    CUdeviceptr probe;
    CUresult alloc = cuMemAlloc(&probe, 4096);
    printf("    %lu calls answered 0, %lu did not; then cuCtxSynchronize %d, cuMemAlloc %d", atomic_load(&ok),
           atomic_load(&bad), (int)sync, (int)alloc);
    if (way == 'M')
        printf("; %lu destroys waited for queued frees", atomic_load(&waited));
    printf("\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    const char *ways = argc > 2 ? argv[2] : "ABCDEFGHIJKLMNPQRSTUVWX";
    if (argc > 1)
        seconds = atoi(argv[1]);
    for (const char *w = ways; *w; w++) {
        way = *w;
        for (int round = 0; round < 2; round++) {
            printf("%c, round %d\n", way, round);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                alarm((unsigned)seconds * 8 + 10);     /* a hang is reported as signal 14 */
                int rc = run();
                fflush(NULL);
                _exit(rc);
            }
            int st = 0;
            waitpid(pid, &st, 0);
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
                printf("    HUNG (no end after %d s)\n", seconds * 8 + 10);
            else if (WIFSIGNALED(st))
                printf("    CRASHED (signal %d)\n", WTERMSIG(st));
            else if (WEXITSTATUS(st))
                printf("    setup failed (%d)\n", WEXITSTATUS(st));
        }
    }
    return 0;
}
