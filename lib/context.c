/* context.c - contexts: owned, primary and borrowed handles, their registry
 * entries (address and generation), and the address -> entry map.
 *
 * Every cuctx_ctx handle names a KIND_CTX slot that points at a KIND_ENTRY
 * slot; children are tethered to the entry. An owned context has one handle
 * per entry; a primary context has one handle per retain, all sharing the
 * entry, whose generation ends with the last of them; a borrowed handle
 * never ends its entry. Registering and ending entries takes `ctx_lock`
 * (the driver spends ~0.1 s on a context create anyway); looking an address
 * up, pinning an entry and every child operation never do.
 */
#include "internal.h"

#include <pthread.h>

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- address -> entry map ------------------------------------------------
 * Open addressing; keys are never removed, so a probe sequence never breaks.
 * A key whose entry's generation ended is a tombstone: "this address held a
 * context that cuctx saw die". Writers hold ctx_lock; readers take none. */
#define MAP_SIZE 8192u
static _Atomic uintptr_t map_key[MAP_SIZE];
static _Atomic uint64_t map_val[MAP_SIZE];

static unsigned map_hash(uintptr_t k)
{
    uint64_t x = (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15);
    return (unsigned)(x >> 40) & (MAP_SIZE - 1);
}

/* The entry id last recorded for raw (maybe dead), 0 if never seen. */
static uint64_t map_get(CUcontext raw)
{
    uintptr_t k = (uintptr_t)raw;
    for (unsigned i = map_hash(k), n = 0; n < MAP_SIZE; i = (i + 1) & (MAP_SIZE - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&map_key[i], memory_order_acquire);
        if (cur == k)
            return atomic_load_explicit(&map_val[i], memory_order_acquire);
        if (cur == 0)
            return 0;
    }
    return 0;
}

/* Under ctx_lock. */
static int map_put(CUcontext raw, uint64_t entry)
{
    uintptr_t k = (uintptr_t)raw;
    for (unsigned i = map_hash(k), n = 0; n < MAP_SIZE; i = (i + 1) & (MAP_SIZE - 1), n++) {
        uintptr_t cur = atomic_load_explicit(&map_key[i], memory_order_relaxed);
        if (cur == k || cur == 0) {
            atomic_store_explicit(&map_val[i], entry, memory_order_release);
            if (cur == 0)
                atomic_store_explicit(&map_key[i], k, memory_order_release);
            return 0;
        }
    }
    return -1;
}

/* ---- entries -------------------------------------------------------------- */

/* Ends an entry's generation: new pins fail at once, pins already held are
 * waited for. The caller does the driver's part in between when it has one. */
static void entry_end(uint64_t id)
{
    struct cuctx_slot *s = cuctx__close(id, KIND_ENTRY);
    if (s) {
        cuctx__drain(s);
        cuctx__slot_free(s);
    }
}

/* Under ctx_lock: a new entry for raw, replacing whatever the map held for
 * the address. A live foreign or stale entry there must be dead: the driver
 * gave its address to a new context. */
static CUresult entry_new(CUcontext raw, CUdevice dev, enum cuctx_ownership own, const char *fn, uint64_t *out)
{
    uint64_t old = map_get(raw);
    if (old && cuctx__alive(old, KIND_ENTRY))
        entry_end(old);
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (!s)
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
    s->u.entry.raw = raw;
    s->u.entry.dev = dev;
    s->u.entry.ownership = (int)own;
    s->u.entry.handles = 0;
    uint64_t id = cuctx__slot_publish(s, KIND_ENTRY);
    if (map_put(raw, id) != 0) {
        entry_end(id);
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: more than %u distinct context addresses seen", fn, MAP_SIZE);
    }
    *out = id;
    return CUDA_SUCCESS;
}

CUresult cuctx__entry_for_raw(CUcontext raw, const char *fn, uint64_t *out)
{
    uint64_t id = map_get(raw);
    if (id && cuctx__alive(id, KIND_ENTRY)) {
        *out = id;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&ctx_lock);
    id = map_get(raw);
    CUresult rc = CUDA_SUCCESS;
    if (id && cuctx__closing(id, KIND_ENTRY)) {     /* being destroyed: not a new context */
        rc = cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: context %p is being destroyed", fn, (void *)raw);
    } else if (!(id && cuctx__alive(id, KIND_ENTRY))) {
        /* Unknown or seen dead. The driver answers safely for a destroyed
         * context (CUDA_ERROR_INVALID_CONTEXT), so ask it which. */
        unsigned version = 0;
        CUdevice dev = -1;
        struct cuctx_switch sw;
        if (DRV(cuCtxGetApiVersion)(raw, &version) != CUDA_SUCCESS) {
            pthread_mutex_unlock(&ctx_lock);
            return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: context %p has been destroyed", fn, (void *)raw);
        }
        if (cuctx__switch_to(raw, fn, &sw) == CUDA_SUCCESS) {
            if (DRV(cuCtxGetDevice)(&dev) != CUDA_SUCCESS)
                dev = -1;
            cuctx__switch_back(&sw, fn);
        }
        rc = entry_new(raw, dev, OWN_FOREIGN, fn, &id);
    }
    pthread_mutex_unlock(&ctx_lock);
    if (rc == CUDA_SUCCESS)
        *out = id;
    return rc;
}

CUresult cuctx__owner_pin(uint64_t entry, const char *fn, struct cuctx_owner *out)
{
    struct cuctx_slot *s = cuctx__hold(entry, KIND_ENTRY, &out->hazard);
    out->slot = NULL;
    if (!s)
        return fn ? cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the context has been destroyed", fn)
                  : CUDA_ERROR_CONTEXT_IS_DESTROYED;
    out->slot = s;
    out->id = entry;
    out->raw = s->u.entry.raw;
    return CUDA_SUCCESS;
}

void cuctx__owner_release(struct cuctx_owner *o)
{
    if (o->slot)
        cuctx__unhold(o->slot, o->hazard);
    o->slot = NULL;
}

/* The entry a live ctx handle names: read without a pin (this is on every
 * child create), so the field is read atomically and kept only if the
 * handle was still live after the read. */
static CUresult handle_entry(cuctx_ctx ctx, const char *fn, uint64_t *entry)
{
    struct cuctx_slot *h = cuctx__peek(ctx.id, KIND_CTX);
    if (h) {
        *entry = __atomic_load_n(&h->u.ctx.entry, __ATOMIC_RELAXED);
        if (!cuctx__peek_valid(h, ctx.id, KIND_CTX))
            h = NULL;
    }
    if (!h) {
        if (ctx.id && cuctx__id_kind(ctx.id) != KIND_CTX)
            return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: handle %#llx is not a context handle", fn,
                               (unsigned long long)ctx.id);
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: context handle %#llx is stale or invalid", fn,
                           (unsigned long long)ctx.id);
    }
    return CUDA_SUCCESS;
}

CUresult cuctx__owner_acquire(cuctx_ctx ctx, const char *fn, struct cuctx_owner *out)
{
    uint64_t entry;
    CUresult rc;
    out->slot = NULL;
    if (ctx.id == 0) {
        CUcontext cur = NULL;
        rc = DRV(cuCtxGetCurrent)(&cur);
        if (rc != CUDA_SUCCESS)
            return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, RN(rc));
        if (!cur)
            return cuctx__fail(CUDA_ERROR_INVALID_CONTEXT, "%s: no context given and none is current", fn);
        rc = cuctx__entry_for_raw(cur, fn, &entry);
    } else {
        rc = handle_entry(ctx, fn, &entry);
    }
    return rc == CUDA_SUCCESS ? cuctx__owner_pin(entry, fn, out) : rc;
}

/* ---- switching for one driver call --------------------------------------- */

CUresult cuctx__switch_to(CUcontext raw, const char *fn, struct cuctx_switch *sw)
{
    CUcontext cur = NULL;
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    sw->pushed = 0;
    if (rc == CUDA_SUCCESS && cur != raw) {
        rc = DRV(cuCtxPushCurrent)(raw);
        sw->pushed = rc == CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cannot make context %p current: %s", fn, (void *)raw, RN(rc));
    return CUDA_SUCCESS;
}

void cuctx__switch_back(struct cuctx_switch *sw, const char *fn)
{
    CUcontext popped;
    if (!sw->pushed)
        return;
    sw->pushed = 0;
    CUresult rc = DRV(cuCtxPopCurrent)(&popped);
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot restore the previous context: cuCtxPopCurrent failed: %s", fn, RN(rc));
}

/* ---- handles ------------------------------------------------------------- */

static CUresult handle_new(cuctx_ctx *out, uint64_t entry, enum cuctx_role role, const char *fn)
{
    struct cuctx_slot *h = cuctx__slot_alloc();
    if (!h)
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
    __atomic_store_n(&h->u.ctx.entry, entry, __ATOMIC_RELAXED);    /* peeked at by handle_entry */
    h->u.ctx.role = (int)role;
    out->id = cuctx__slot_publish(h, KIND_CTX);
    return CUDA_SUCCESS;
}

static int flags_valid(unsigned flags)
{
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    return (flags & ~(CU_CTX_SCHED_MASK | CUCTX_MAP_HOST | CUCTX_LMEM_RESIZE_TO_MAX)) == 0
        && (sched == CUCTX_SCHED_AUTO || sched == CUCTX_SCHED_SPIN || sched == CUCTX_SCHED_YIELD
            || sched == CUCTX_SCHED_BLOCKING_SYNC);
}

CUCTX_API CUresult cuctx_ctx_create(cuctx_ctx *out, CUdevice dev, unsigned flags)
{
    static const char fn[] = "cuctx_ctx_create";
    CUcontext raw = NULL;
    uint64_t entry;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    out->id = 0;
    if (!flags_valid(flags))
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: unknown flags %#x", fn, flags);
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = DRV(cuCtxCreate)(&raw, flags, dev);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxCreate on device %d failed: %s", fn, (int)dev, RN(rc));
    pthread_mutex_lock(&ctx_lock);
    rc = entry_new(raw, dev, OWN_OWNED, fn, &entry);
    pthread_mutex_unlock(&ctx_lock);
    if (rc == CUDA_SUCCESS && (rc = handle_new(out, entry, ROLE_OWNED, fn)) != CUDA_SUCCESS)
        entry_end(entry);
    if (rc != CUDA_SUCCESS)
        DRV(cuCtxDestroy)(raw);
    return rc;
}

CUCTX_API CUresult cuctx_ctx_primary(cuctx_ctx *out, CUdevice dev)
{
    static const char fn[] = "cuctx_ctx_primary";
    CUcontext raw = NULL;
    uint64_t entry = 0;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    out->id = 0;
    CUCTX_INIT_OR_RETURN(fn);
    pthread_mutex_lock(&ctx_lock);
    CUresult rc = DRV(cuDevicePrimaryCtxRetain)(&raw, dev);
    if (rc != CUDA_SUCCESS) {
        pthread_mutex_unlock(&ctx_lock);
        return cuctx__fail(rc, "%s: cuDevicePrimaryCtxRetain on device %d failed: %s", fn, (int)dev, RN(rc));
    }
    uint64_t old = map_get(raw);
    struct cuctx_slot *e = old ? cuctx__pin(old, KIND_ENTRY) : NULL;
    if (e && e->u.entry.ownership == OWN_FOREIGN)
        e->u.entry.ownership = OWN_PRIMARY;     /* borrowed before, retained now */
    if (e && e->u.entry.ownership == OWN_PRIMARY) {
        e->u.entry.handles++;
        entry = old;
    }
    if (e)
        cuctx__unpin(e);
    if (!entry && (rc = entry_new(raw, dev, OWN_PRIMARY, fn, &entry)) == CUDA_SUCCESS) {
        struct cuctx_slot *n = cuctx__pin(entry, KIND_ENTRY);
        n->u.entry.handles = 1;
        cuctx__unpin(n);
    }
    if (rc == CUDA_SUCCESS)
        rc = handle_new(out, entry, ROLE_PRIMARY, fn);
    pthread_mutex_unlock(&ctx_lock);
    if (rc != CUDA_SUCCESS)
        DRV(cuDevicePrimaryCtxRelease)(dev);
    return rc;
}

CUCTX_API CUresult cuctx_ctx_borrow(cuctx_ctx *out, CUcontext raw)
{
    static const char fn[] = "cuctx_ctx_borrow";
    uint64_t entry;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    out->id = 0;
    if (!raw)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the context is NULL", fn);
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = cuctx__entry_for_raw(raw, fn, &entry);
    return rc == CUDA_SUCCESS ? handle_new(out, entry, ROLE_BORROWED, fn) : rc;
}

/* Ends an owned or primary entry around its driver call, never while a
 * child call is under way on it. */
static CUresult end_with_driver(uint64_t entry, int role, const char *fn)
{
    struct cuctx_slot *e;
    CUresult rc = CUDA_SUCCESS;
    CUdevice dev;
    if (role == ROLE_PRIMARY) {
        /* Each handle holds one retain; the last one also ends the entry. */
        pthread_mutex_lock(&ctx_lock);
        e = cuctx__pin(entry, KIND_ENTRY);
        if (!e) {
            pthread_mutex_unlock(&ctx_lock);
            return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the primary context entry already ended", fn);
        }
        dev = e->u.entry.dev;
        int last = --e->u.entry.handles == 0;
        cuctx__unpin(e);
        e = last ? cuctx__close(entry, KIND_ENTRY) : NULL;
        pthread_mutex_unlock(&ctx_lock);
        if (e)
            cuctx__drain(e);
        rc = DRV(cuDevicePrimaryCtxRelease)(dev);
        if (e)
            cuctx__slot_free(e);
        return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuDevicePrimaryCtxRelease failed: %s", fn, RN(rc));
    }
    e = cuctx__close(entry, KIND_ENTRY);
    if (!e)
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the context was already destroyed", fn);
    cuctx__drain(e);
    rc = DRV(cuCtxDestroy)(e->u.entry.raw);
    cuctx__slot_free(e);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxDestroy failed: %s", fn, RN(rc));
}

CUCTX_API CUresult cuctx_ctx_destroy(cuctx_ctx *ctx)
{
    static const char fn[] = "cuctx_ctx_destroy";
    if (!ctx)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: ctx is NULL", fn);
    if (ctx->id == 0)
        return CUDA_SUCCESS;
    CUCTX_INIT_OR_RETURN(fn);
    uint64_t id = ctx->id;
    ctx->id = 0;    /* whatever happens, the variable names nothing afterwards */
    struct cuctx_slot *h = cuctx__close(id, KIND_CTX);
    if (!h)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: context handle %#llx is stale, destroyed already, or not a context",
                           fn, (unsigned long long)id);
    cuctx__drain(h);
    uint64_t entry = h->u.ctx.entry;
    int role = h->u.ctx.role;
    cuctx__slot_free(h);
    if (role == ROLE_BORROWED)
        return CUDA_SUCCESS;
    CUresult rc = end_with_driver(entry, role, fn);
    if (rc != CUDA_SUCCESS)
        atomic_fetch_add(&cuctx__failed_destroys, 1);
    return rc;
}

/* A context handle's entry, pinned, for the functions below. */
static CUresult pin_ctx(cuctx_ctx ctx, const char *fn, struct cuctx_owner *o)
{
    o->slot = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    if (ctx.id == 0)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: the context handle is {0}", fn);
    return cuctx__owner_acquire(ctx, fn, o);
}

CUCTX_API CUresult cuctx_ctx_set_current(cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_ctx_set_current";
    struct cuctx_owner o = {0};
    CUresult rc = pin_ctx(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = DRV(cuCtxSetCurrent)(o.raw);
    cuctx__owner_release(&o);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxSetCurrent failed: %s", fn, RN(rc));
}

CUCTX_API CUresult cuctx_ctx_is_current(cuctx_ctx ctx, int *out)
{
    static const char fn[] = "cuctx_ctx_is_current";
    struct cuctx_owner o = {0};
    CUcontext cur = NULL;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    *out = 0;
    CUresult rc = pin_ctx(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc == CUDA_SUCCESS)
        *out = cur == o.raw;
    cuctx__owner_release(&o);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, RN(rc));
}

CUCTX_API CUresult cuctx_ctx_synchronize(cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_ctx_synchronize";
    struct cuctx_owner o = {0};
    struct cuctx_switch sw;
    CUresult rc = pin_ctx(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__switch_to(o.raw, fn, &sw)) == CUDA_SUCCESS) {
        rc = DRV(cuCtxSynchronize)();
        cuctx__switch_back(&sw, fn);
        if (rc != CUDA_SUCCESS)
            cuctx__fail(rc, "%s: cuCtxSynchronize failed: %s", fn, RN(rc));
    }
    cuctx__owner_release(&o);
    return rc;
}

CUCTX_API CUcontext cuctx_ctx_raw(cuctx_ctx ctx)
{
    struct cuctx_owner o = {0};
    if (pin_ctx(ctx, "cuctx_ctx_raw", &o) != CUDA_SUCCESS)
        return NULL;
    CUcontext raw = o.raw;
    cuctx__owner_release(&o);
    return raw;
}

CUCTX_API CUdevice cuctx_ctx_device(cuctx_ctx ctx)
{
    struct cuctx_owner o = {0};
    if (pin_ctx(ctx, "cuctx_ctx_device", &o) != CUDA_SUCCESS)
        return -1;
    CUdevice dev = o.slot->u.entry.dev;
    cuctx__owner_release(&o);
    return dev;
}

CUCTX_API CUresult cuctx_current_raw(CUcontext *out)
{
    static const char fn[] = "cuctx_current_raw";
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    *out = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = DRV(cuCtxGetCurrent)(out);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, RN(rc));
}

CUCTX_API CUresult cuctx_pop_current(void)
{
    static const char fn[] = "cuctx_pop_current";
    CUcontext cur = NULL, popped = NULL;
    uint64_t entry;
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, RN(rc));
    if (!cur)
        return cuctx__fail(CUDA_ERROR_INVALID_CONTEXT, "%s: no context is current", fn);
    /* Popping a destroyed context aborts the process in the real driver. */
    entry = map_get(cur);
    if (entry && !cuctx__alive(entry, KIND_ENTRY)) {
        unsigned version;
        if (DRV(cuCtxGetApiVersion)(cur, &version) != CUDA_SUCCESS)
            return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED,
                               "%s: the current context %p has been destroyed; not popping it (the driver would abort)",
                               fn, (void *)cur);
    }
    rc = DRV(cuCtxPopCurrent)(&popped);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxPopCurrent failed: %s", fn, RN(rc));
}
