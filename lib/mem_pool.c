/* SPDX-License-Identifier: MIT */
/* mem_pool.c - cuctx_mem_pool: a CUmemoryPool, a kind of no context
 * (ids.h). A pool belongs to its device - measured: made while one context
 * was current, it serves allocations in a context made after that one was
 * destroyed - so it needs no tether.
 *
 * Its end must wait for its memory, though. Measured on the H200
 * (tools/facts/pool_destroy.c): one thread that destroys a pool with
 * allocations alive and frees them afterwards is fine, but eight threads
 * doing the same, each with a pool of its own, crash the driver within
 * seconds (SIGSEGV, SIGFPE). So a pool that cuctx memory was allocated
 * from has a record (struct cuctx_pool_life, in its slot's aux record),
 * counting its handle and each such allocation; the handle's destroy ends
 * the handle at once, and the pool ends with whichever goes last - the
 * handle, or the free of its last allocation (mem_async.c).
 *
 * And a pool cuctx made is never destroyed at all. Destroys with every
 * allocation freed first, each kept apart from cuctx's synchronizes and
 * stream and context destroys (apart.h), still crashed the H200's driver
 * in 4 of 15 runs of tests/stress (20,000 operations on 8 threads, pools
 * destroyed in the run: SIGSEGV, SIGFPE inside cuMemAllocFromPoolAsync,
 * abort), where the same runs with each destroy made a trim to 0 ran clean
 * in 15 of 15. So the end of a pool cuctx made *parks* it: its memory is
 * given back (cuMemPoolTrimTo 0; what frees still queued hold comes back
 * at the next synchronize, its release threshold being 0 again), its
 * attributes are set back to a new pool's, other devices' access is taken
 * away, and it waits in a list for the next cuctx_mem_pool_create with the
 * same properties, which takes it instead of calling cuMemPoolCreate. The
 * parked pools are as many as were ever alive at once, and each holds no
 * memory. A pool made elsewhere and adopted as owned, a pool that can be
 * exported to other processes (a parked one would stay open to whoever
 * imported it) and one the driver refused to set back are destroyed,
 * each cuMemPoolDestroy kept apart as above. */
#include "config.h"

#include "mem_pool.h"
#include "apart.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "tether.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cuctx_pool_life {
    _Atomic uint64_t refs;      /* the handle (until its destroy), plus one per allocation alive */
    CUmemoryPool raw;
    int parks;                  /* made by cuctx, not for export: parked at its end, never destroyed */
    CUmemPoolProps props;       /* what it was made with (where parks) */
};

/* The parked pools (their records); a forked child has none. */
static struct {
    pthread_mutex_t lock;
    struct cuctx_pool_life **at;
    size_t n, cap;
} parked = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};

static CUresult pool_destroy(CUmemoryPool raw);
static void parked_lock(void) { pthread_mutex_lock(&parked.lock); }
static void parked_unlock(void) { pthread_mutex_unlock(&parked.lock); }
static void parked_after_fork(void)
{
    pthread_mutex_init(&parked.lock, NULL);
    parked.n = 0;   /* the parent's pools are not the child's */
    atomic_store(&cuctx__parked_pools, 0);
}
static void parked_fork_hooks(void) { pthread_atfork(parked_lock, parked_unlock, parked_after_fork); }

static int same_props(const CUmemPoolProps *a, const CUmemPoolProps *b)
{
    return a->allocType == b->allocType && a->handleTypes == b->handleTypes && a->location.type == b->location.type &&
           a->location.id == b->location.id && a->win32SecurityAttributes == b->win32SecurityAttributes &&
           a->maxSize == b->maxSize && a->usage == b->usage && memcmp(a->reserved, b->reserved, sizeof a->reserved) == 0;
}

/* The list's i-th pool, taken out of it; under the list's lock. */
static struct cuctx_pool_life *take(size_t i)
{
    struct cuctx_pool_life *l = parked.at[i];
    parked.at[i] = parked.at[--parked.n];
    atomic_fetch_sub_explicit(&cuctx__parked_pools, 1, memory_order_relaxed);
    return l;
}

/* A parked pool made with props, taken out of the list; NULL if none. */
static struct cuctx_pool_life *unpark(const CUmemPoolProps *props)
{
    struct cuctx_pool_life *l = NULL;
    parked_lock();
    for (size_t i = parked.n; i-- > 0;) {
        if (same_props(&parked.at[i]->props, props)) {
            l = take(i);
            break;
        }
    }
    parked_unlock();
    return l;
}

/* Puts l in the list; 0 where no memory was left for it. */
static int park(struct cuctx_pool_life *l)
{
    int ok = 1;
    parked_lock();
    if (parked.n == parked.cap) {
        size_t cap = parked.cap ? 2 * parked.cap : 8;
        struct cuctx_pool_life **at = realloc(parked.at, cap * sizeof *at);
        if (at) {
            parked.at = at;
            parked.cap = cap;
        } else {
            ok = 0;
        }
    }
    if (ok) {
        parked.at[parked.n++] = l;
        atomic_fetch_add_explicit(&cuctx__parked_pools, 1, memory_order_relaxed);
    }
    parked_unlock();
    return ok;
}

/* Destroys every parked pool (mem_pool.h). */
void cuctx__pools_destroy_parked(void)
{
    for (;;) {
        struct cuctx_pool_life *l = NULL;
        parked_lock();
        if (parked.n)
            l = take(parked.n - 1);
        parked_unlock();
        if (!l)
            return;
        (void)pool_destroy(l->raw);
        free(l);
    }
}

/* A pool made some device's current pool (cuDeviceSetMemPool) is that no
 * longer: its device's default pool is made current again, as the
 * driver's cuMemPoolDestroy does - else allocations from "the device's
 * current pool" would go on landing in the parked pool. */
static CUresult not_current_on(CUmemoryPool raw, CUdevice dev)
{
    CUmemoryPool cur = NULL, dflt = NULL;
    CUresult rc;
    if ((rc = DRV(cuDeviceGetMemPool)(&cur, dev)) != CUDA_SUCCESS || cur != raw)
        return rc;
    if ((rc = DRV(cuDeviceGetDefaultMemPool)(&dflt, dev)) != CUDA_SUCCESS)
        return rc;
    return DRV(cuDeviceSetMemPool)(dev, dflt);
}
/* (an adopted pool's record knows no location: every device is asked) */
static CUresult not_current(const struct cuctx_pool_life *l)
{
    int devices = 0;
    CUresult rc;
    if (!DRV(cuDeviceGetMemPool) || !DRV(cuDeviceSetMemPool))
        return CUDA_SUCCESS;
    if (l->props.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        return not_current_on(l->raw, (CUdevice)l->props.location.id);
    if (l->props.location.type != CU_MEM_LOCATION_TYPE_INVALID)
        return CUDA_SUCCESS;
    if ((rc = DRV(cuDeviceGetCount)(&devices)) != CUDA_SUCCESS)
        return rc;
    for (int d = 0; d < devices && rc == CUDA_SUCCESS; d++)
        rc = not_current_on(l->raw, (CUdevice)d);
    return rc;
}

/* The pool back as cuMemPoolCreate makes one: no device's current pool,
 * its memory given back, the attributes at their first values, no other
 * device let in. */
static CUresult renew(const struct cuctx_pool_life *l)
{
    static const CUmemPool_attribute reuse[] = {CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
                                                CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
                                                CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES};
    cuuint64_t zero = 0;
    int on = 1, devices = 0;
    CUresult rc;
    if ((rc = not_current(l)) != CUDA_SUCCESS ||
        (rc = DRV(cuMemPoolSetAttribute)(l->raw, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero)) != CUDA_SUCCESS ||
        (rc = DRV(cuMemPoolTrimTo)(l->raw, 0)) != CUDA_SUCCESS)
        return rc;
    for (size_t i = 0; i < sizeof reuse / sizeof reuse[0]; i++)
        if ((rc = DRV(cuMemPoolSetAttribute)(l->raw, reuse[i], &on)) != CUDA_SUCCESS)
            return rc;
    if ((rc = DRV(cuMemPoolSetAttribute)(l->raw, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero)) != CUDA_SUCCESS ||
        (rc = DRV(cuMemPoolSetAttribute)(l->raw, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero)) != CUDA_SUCCESS ||
        (rc = DRV(cuDeviceGetCount)(&devices)) != CUDA_SUCCESS)
        return rc;
    for (int d = 0; d < devices; d++) {
        CUmemAccessDesc none = {{CU_MEM_LOCATION_TYPE_DEVICE, d}, CU_MEM_ACCESS_FLAGS_PROT_NONE};
        CUmemAccess_flags now = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        if (d == l->props.location.id)
            continue;
        if ((rc = DRV(cuMemPoolGetAccess)(&now, l->raw, &none.location)) != CUDA_SUCCESS)
            return rc;
        if (now != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            (rc = DRV(cuMemPoolSetAccess)(l->raw, &none, 1)) != CUDA_SUCCESS)
            return rc;
    }
    return CUDA_SUCCESS;
}

struct cuctx_pool_life *cuctx__pool_ref(struct cuctx_slot *s, int *no_memory)
{
    void **at = &cuctx__slot_aux(s)->ptr;
    struct cuctx_pool_life *l = __atomic_load_n(at, __ATOMIC_ACQUIRE);
    *no_memory = 0;
    if (s->u.child.site.unowned)    /* borrowed: never destroyed by cuctx */
        return NULL;
    if (!l) {   /* the first allocation: the record made, or another thread's taken */
        struct cuctx_pool_life *mine = calloc(1, sizeof *mine);     /* (an adopted pool: parks 0) */
        if (!mine) {
            *no_memory = 1;
            return NULL;
        }
        atomic_init(&mine->refs, 1);
        mine->raw = (CUmemoryPool)(uintptr_t)s->u.child.raw;
        void *seen = NULL;
        if (__atomic_compare_exchange_n(at, &seen, mine, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            l = mine;
        } else {
            free(mine);
            l = seen;
        }
    }
    atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
    return l;
}

/* The driver's destroy, apart from synchronizes and stream and context destroys. */
static CUresult pool_destroy(CUmemoryPool raw)
{
    CUresult rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        CUCTX__POOLS_ALONE
            rc = DRV(cuMemPoolDestroy)(raw);
    return rc;
}

/* The pool's end (its handle and its cuctx memory gone): parked, or
 * destroyed where it does not park or could not be set back (that failure
 * to the error handler); the destroy's outcome. */
static CUresult end(struct cuctx_pool_life *l, const char *fn)
{
    CUmemoryPool raw = l->raw;
    if (atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed)) {
        free(l);
        return CUDA_SUCCESS;    /* the driver is gone, and its pools with it */
    }
    if (l->parks) {
        CUresult rc;
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = renew(l);
        if (rc == CUDA_SUCCESS && park(l))
            return CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS)
            cuctx__report(rc, "%s: setting pool %p back to new, to keep it for reuse, failed (%s): destroyed instead",
                          fn, (void *)raw, cuctx_result_name(rc));
    }
    free(l);
    return pool_destroy(raw);
}

/* The reference's end; the last ends the pool and says how that went. */
static CUresult unref(struct cuctx_pool_life *l, const char *fn)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
        return CUDA_SUCCESS;
    return end(l, fn);
}

void cuctx__pool_unref(struct cuctx_pool_life *l, const char *fn)
{
    if (!l)
        return;
    CUresult rc = unref(l, fn);
    if (rc != CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
        cuctx__report(rc, "%s: the pool whose handle was destroyed before its last allocation: cuMemPoolDestroy "
                          "at that allocation's free failed: %s", fn, cuctx_result_name(rc));
    }
}

/* The handle's end: the pool's too, unless cuctx memory from it lives
 * (then the last one's free ends it). Either way it is no device's
 * current pool from here on, as after the driver's destroy: where its end
 * waits for its memory, allocations from the device's current pool would
 * land in it meanwhile, and be parked with it (a failure to the error
 * handler: the end tries again). */
static CUresult destroy_slot(struct cuctx_slot *s, const char *fn)
{
    struct cuctx_pool_life *l = __atomic_load_n(&cuctx__slot_aux(s)->ptr, __ATOMIC_ACQUIRE);
    if (l) {
        CUresult rc;
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = not_current(l);
        if (rc != CUDA_SUCCESS)
            cuctx__report(rc, "%s: making the device's default pool current again in place of pool %p failed (%s)",
                          fn, (void *)l->raw, cuctx_result_name(rc));
        return unref(l, fn);
    }
    return pool_destroy((CUmemoryPool)(uintptr_t)s->u.child.raw);
}
const struct cuctx_child_kind cuctx__mem_pool_kind = {0, NULL, destroy_slot};

static CUresult need_pools(const char *fn)
{
    CUCTX_INIT_OR_RETURN(fn);
    return CUCTX__DRIVER_NEEDS(fn, "memory pools", "CUDA 11.2 or newer needed", CUCTX__DRV_AT(cuMemPoolCreate),
                               CUCTX__DRV_AT(cuMemPoolDestroy), CUCTX__DRV_AT(cuMemPoolTrimTo),
                               CUCTX__DRV_AT(cuDeviceGetDefaultMemPool), CUCTX__DRV_AT(cuMemAllocFromPoolAsync),
                               CUCTX__DRV_AT(cuMemFreeAsync), CUCTX__DRV_AT(cuMemPoolSetAttribute),
                               CUCTX__DRV_AT(cuMemPoolGetAccess), CUCTX__DRV_AT(cuMemPoolSetAccess));
}

/* make's argument: the record, a parked pool's (raw set) or a new one's */
CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    struct cuctx_pool_life *l = arg;
    CUresult rc = CUDA_SUCCESS;
    if (!l->raw && (rc = DRV(cuMemPoolCreate)(&l->raw, &l->props)) != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_mem_pool_create: cuMemPoolCreate(device %d) failed: %s",
                           (int)l->props.location.id, cuctx_result_name(rc));
    *raw = (uint64_t)(uintptr_t)l->raw;
    *size = 0;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_mem_pool_create_at(cuctx_mem_pool *out, CUdevice dev, const CUmemPoolProps *props,
                                            const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_mem_pool_create";
    static pthread_once_t hooks = PTHREAD_ONCE_INIT;
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUmemPoolProps dflt;
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(&out->id, KIND_MEM_POOL, fn)) != CUDA_SUCCESS || (rc = need_pools(fn)) != CUDA_SUCCESS)
        return rc;
    if (!props) {   /* device-local, pinned, no export */
        memset(&dflt, 0, sizeof dflt);
        dflt.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        dflt.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
        dflt.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        dflt.location.id = dev;
        props = &dflt;
    }
    pthread_once(&hooks, parked_fork_hooks);
    struct cuctx_pool_life *l = unpark(props);
    if (!l) {
        if (!(l = calloc(1, sizeof *l)))
            return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: no memory for the pool's record", fn);
        l->props = *props;
        l->parks = props->handleTypes == CU_MEM_HANDLE_TYPE_NONE && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    }
    atomic_init(&l->refs, 1);
    struct cuctx_aux aux = {{0, 0}, l};
    rc = cuctx__loose_create_aux(&out->id, KIND_MEM_POOL, fn, make, l, &site, &aux);
    if (rc == CUDA_SUCCESS || (l->raw && park(l)))  /* (a parked pool refused a slot goes back) */
        return rc;
    if (l->raw)
        (void)pool_destroy(l->raw);
    free(l);
    return rc;
}

CUCTX_API CUresult (cuctx_mem_pool_create)(cuctx_mem_pool *out, CUdevice dev, const CUmemPoolProps *props)
{
    return cuctx_mem_pool_create_at(out, dev, props, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_pool_adopt_at(cuctx_mem_pool *out, CUmemoryPool raw, int owned, const char *file,
                                           int line, const char *func)
{
    static const char fn[] = "cuctx_mem_pool_adopt";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_MEM_POOL, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = need_pools(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_adopt(out ? &out->id : NULL, KIND_MEM_POOL, (cuctx_ctx){0}, fn, (uint64_t)(uintptr_t)raw, 0,
                              owned, &site);
}

CUCTX_API CUresult (cuctx_mem_pool_adopt)(cuctx_mem_pool *out, CUmemoryPool raw, int owned)
{
    return cuctx_mem_pool_adopt_at(out, raw, owned, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_pool_default_at(cuctx_mem_pool *out, CUdevice dev, const char *file, int line,
                                             const char *func)
{
    static const char fn[] = "cuctx_mem_pool_default";
    CUmemoryPool pool = NULL;
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_MEM_POOL, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = need_pools(fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = DRV(cuDeviceGetDefaultMemPool)(&pool, dev)) != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuDeviceGetDefaultMemPool(device %d) failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    return cuctx_mem_pool_adopt_at(out, pool, 0, file, line, func);
}

CUCTX_API CUresult (cuctx_mem_pool_default)(cuctx_mem_pool *out, CUdevice dev)
{
    return cuctx_mem_pool_default_at(out, dev, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_pool_destroy(cuctx_mem_pool *p)
{
    return cuctx__child_destroy(p ? &p->id : NULL, KIND_MEM_POOL, "cuctx_mem_pool_destroy", &cuctx__mem_pool_kind);
}

CUCTX_API CUresult cuctx_mem_pool_trim(cuctx_mem_pool p, size_t keep)
{
    static const char fn[] = "cuctx_mem_pool_trim";
    struct cuctx_use u;
    CUresult rc = cuctx__child_use(p.id, KIND_MEM_POOL, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuMemPoolTrimTo)((CUmemoryPool)(uintptr_t)u.raw, keep);
    cuctx__child_done(&u);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuMemPoolTrimTo failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUmemoryPool cuctx_mem_pool_raw(cuctx_mem_pool p)
{
    return (CUmemoryPool)(uintptr_t)cuctx__child_value(p.id, KIND_MEM_POOL, "cuctx_mem_pool_raw", FIELD_RAW);
}
