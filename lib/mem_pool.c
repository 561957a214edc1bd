/* SPDX-License-Identifier: MIT */
/* mem_pool.c - cuctx_mem_pool: a CUmemoryPool, a kind of no context
 * (ids.h). A pool belongs to its device - measured: made while one context
 * was current, it serves allocations in a context made after that one was
 * destroyed - so it needs no tether.
 *
 * Its destroy must wait for its memory, though. Measured on the H200
 * (tools/facts/pool_destroy.c): one thread that destroys a pool with
 * allocations alive and frees them afterwards is fine, but eight threads
 * doing the same, each with a pool of its own, crash the driver within
 * seconds (SIGSEGV, SIGFPE); with every pool destroyed only once its
 * allocations were freed, they run clean. So an owned pool that cuctx
 * memory was allocated from gets a record (struct cuctx_pool_life, in its
 * slot's aux record), counting its handle and each such allocation; the
 * handle's destroy ends the handle at once, and the driver's pool is
 * destroyed by whichever goes last - the handle, or the free of its last
 * allocation (mem_async.c). Each cuMemPoolDestroy is kept apart from
 * cuctx's synchronizes, stream destroys and context destroys on other
 * threads, which crash or hang the driver beside it (apart.h). */
#include "config.h"

#include "mem_pool.h"
#include "apart.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "tether.h"

#include <stdlib.h>
#include <string.h>

struct cuctx_pool_life {
    _Atomic uint64_t refs;      /* the handle (until its destroy), plus one per allocation alive */
    CUmemoryPool raw;
};

struct cuctx_pool_life *cuctx__pool_ref(struct cuctx_slot *s, int *no_memory)
{
    void **at = &cuctx__slot_aux(s)->ptr;
    struct cuctx_pool_life *l = __atomic_load_n(at, __ATOMIC_ACQUIRE);
    *no_memory = 0;
    if (s->u.child.site.unowned)    /* borrowed: never destroyed by cuctx */
        return NULL;
    if (!l) {   /* the first allocation: the record made, or another thread's taken */
        struct cuctx_pool_life *mine = malloc(sizeof *mine);
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

/* The reference's end; the last destroys the pool and says how that went. */
static CUresult unref(struct cuctx_pool_life *l)
{
    if (atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
        return CUDA_SUCCESS;
    CUmemoryPool raw = l->raw;
    free(l);
    if (atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed))
        return CUDA_SUCCESS;    /* the driver is gone, and its pools with it */
    return pool_destroy(raw);
}

void cuctx__pool_unref(struct cuctx_pool_life *l, const char *fn)
{
    if (!l)
        return;
    CUresult rc = unref(l);
    if (rc != CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
        cuctx__report(rc, "%s: the pool whose handle was destroyed before its last allocation: cuMemPoolDestroy "
                          "at that allocation's free failed: %s", fn, cuctx_result_name(rc));
    }
}

/* The handle's end: the driver's pool destroyed now, unless cuctx memory
 * from it lives (then by the last one's free). */
static CUresult destroy_slot(struct cuctx_slot *s, const char *fn)
{
    (void)fn;
    struct cuctx_pool_life *l = __atomic_load_n(&cuctx__slot_aux(s)->ptr, __ATOMIC_ACQUIRE);
    if (l)
        return unref(l);
    return pool_destroy((CUmemoryPool)(uintptr_t)s->u.child.raw);
}
const struct cuctx_child_kind cuctx__mem_pool_kind = {0, NULL, destroy_slot};

static CUresult need_pools(const char *fn)
{
    CUCTX_INIT_OR_RETURN(fn);
    return CUCTX__DRIVER_NEEDS(fn, "memory pools", "CUDA 11.2 or newer needed", CUCTX__DRV_AT(cuMemPoolCreate),
                               CUCTX__DRV_AT(cuMemPoolDestroy), CUCTX__DRV_AT(cuMemPoolTrimTo),
                               CUCTX__DRV_AT(cuDeviceGetDefaultMemPool), CUCTX__DRV_AT(cuMemAllocFromPoolAsync),
                               CUCTX__DRV_AT(cuMemFreeAsync));
}

struct make_args { CUdevice dev; const CUmemPoolProps *props; };

static CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct make_args *a = arg;
    CUmemPoolProps dflt;
    const CUmemPoolProps *props = a->props;
    if (!props) {   /* device-local, pinned, no export */
        memset(&dflt, 0, sizeof dflt);
        dflt.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        dflt.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
        dflt.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        dflt.location.id = a->dev;
        props = &dflt;
    }
    CUmemoryPool pool = NULL;
    CUresult rc = DRV(cuMemPoolCreate)(&pool, props);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_mem_pool_create: cuMemPoolCreate(device %d) failed: %s", (int)a->dev,
                           cuctx_result_name(rc));
    *raw = (uint64_t)(uintptr_t)pool;
    *size = 0;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_mem_pool_create_at(cuctx_mem_pool *out, CUdevice dev, const CUmemPoolProps *props,
                                            const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_mem_pool_create";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct make_args a = {dev, props};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_MEM_POOL, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = need_pools(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(out ? &out->id : NULL, KIND_MEM_POOL, (cuctx_ctx){0}, fn, make, &a, &site);
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
