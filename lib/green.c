/* SPDX-License-Identifier: MIT */
/* green.c - green contexts (CUDA 12.4+): a part of a device's SMs as a
 * cuctx_ctx, and what is particular to the children made in one.
 *
 * Measured on the H200 (DRIVER-FACTS): cuGreenCtxCreate retains the
 * device's primary context and cuGreenCtxDestroy releases it; the green
 * context's CUcontext (cuCtxFromGreenCtx) is a context with an id of its
 * own, made current as any; of what is made while it is current only the
 * STREAMS are its own - they die with it, leaked unless destroyed first -
 * while events, device and page-locked memory, modules and graph execs
 * belong to the primary context underneath and live as long as that does,
 * whoever holds it (stream-ordered memory belongs to its pool). A green
 * context current when destroyed stays current, stale.
 *
 * So a green context's entry is owned (cuctx alone ends it) and names the
 * primary context's address (entry.home). A create in it (tether.h, then
 * cuctx__child_create_green) runs with the green context current and
 * tethers a stream to the green entry, any other child to the primary
 * context's entry, found by that address like any context met, and
 * checked by the driver's id: the primary may end without cuctx (the
 * runtime's release, a reset), and its children are skipped from then on.
 *
 * Its destroy ends its streams first. The entry is closed and drained (the
 * creates under way finish), marked ending (creates refused) and opened
 * again, so that destroys of its streams under way on other threads reach
 * the driver; every stream tethered to it is found in the handle table -
 * a walk at the destroy, so no create or destroy of any kind pays for a
 * list - and its driver stream destroyed, its handle left tethered to no
 * context, so that its own destroy later is a skipped stale destroy. Then
 * the entry is closed for good and cuGreenCtxDestroy called, with the
 * primary's entry closed around it when this green context may hold the
 * primary's last retain (as at cuctx's last primary release), and the
 * green context popped if it was current on the calling thread, as a
 * cuCtxDestroy pops an ordinary context: cuctx leaves no dead context
 * current of its own doing (a stale green context pops with 0, measured).
 */
#include "config.h"

#include "green.h"
#include "apart.h"
#include "claim.h"
#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "tether.h"

#include <string.h>

#if CUDA_VERSION >= 12040

static CUresult refuse_ending(const char *fn)
{
    return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the green context is being destroyed", fn);
}

static int ending(const struct cuctx_held *o)
{
    return __atomic_load_n(&o->slot->u.entry.ending, __ATOMIC_RELAXED) != 0;
}

CUresult cuctx__child_create_green(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make,
                                   void *arg, const struct cuctx_site *site, struct cuctx_held *o)
{
    if (ending(o)) {
        cuctx__entry_release(o);
        return refuse_ending(fn);
    }
    if (kind == KIND_STREAM)    /* its own: dies with it, destroyed first by its destroy */
        return cuctx__child_make(out, kind, fn, make, arg, site, o, o, NULL);
    /* Anything else belongs to the primary context underneath. Its entry is
     * held by address with nothing else held (it may be registered under
     * the lock, or waited for), then the green context's again. */
    CUcontext home = o->slot->u.entry.home;
    uint64_t green = o->id;
    struct cuctx_held h;
    cuctx__entry_release(o);
    CUresult rc = cuctx__entry_hold_raw(home, fn, &h);
    if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED)
        return cuctx__fail(rc, "%s: the device's primary context under the green context has ended (a reset?); "
                               "the driver makes the %s of a green context in it", fn, cuctx__kind_name(kind));
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__entry_hold(green, fn, o)) != CUDA_SUCCESS) {
        cuctx__entry_release(&h);
        return rc;
    }
    if (ending(o)) {
        cuctx__entry_release(&h);
        cuctx__entry_release(o);
        return refuse_ending(fn);
    }
    return cuctx__child_make(out, kind, fn, make, arg, site, o, &h, NULL);
}

/* ---- the create ------------------------------------------------------------ */

static CUresult need_green(const char *fn, int split)
{
    CUresult rc = CUCTX__DRIVER_NEEDS(fn, "green contexts (cuGreenCtxCreate, cuGreenCtxDestroy, cuCtxFromGreenCtx)",
                                      "CUDA 12.4 or newer needed", CUCTX__DRV_AT(cuGreenCtxCreate),
                                      CUCTX__DRV_AT(cuGreenCtxDestroy), CUCTX__DRV_AT(cuCtxFromGreenCtx));
    if (rc == CUDA_SUCCESS && split)
        rc = CUCTX__DRIVER_NEEDS(fn,
                                 "SM resources (cuDeviceGetDevResource, cuDevSmResourceSplitByCount, "
                                 "cuDevResourceGenerateDesc)",
                                 "CUDA 12.4 or newer needed", CUCTX__DRV_AT(cuDeviceGetDevResource),
                                 CUCTX__DRV_AT(cuDevSmResourceSplitByCount), CUCTX__DRV_AT(cuDevResourceGenerateDesc));
    return rc;
}

/* A call about dev refused: CUDA_ERROR_NOT_SUPPORTED is the device's lack. */
static CUresult device_refused(CUresult rc, const char *fn, CUdevice dev, const char *call)
{
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        return cuctx__fail(rc, "%s: device %d does not support green contexts (%s: %s)", fn, (int)dev, call,
                           cuctx_result_name(rc));
    return cuctx__fail(rc, "%s: %s on device %d failed: %s", fn, call, (int)dev, cuctx_result_name(rc));
}

/* A descriptor of one partition of at least sm_count of dev's SMs. */
static CUresult desc_of(CUdevice dev, unsigned sm_count, const char *fn, CUdevResourceDesc *desc)
{
    CUdevResource all, part;
    unsigned n = 1;
    memset(&all, 0, sizeof all);
    memset(&part, 0, sizeof part);
    CUresult rc = DRV(cuDeviceGetDevResource)(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (rc != CUDA_SUCCESS)
        return device_refused(rc, fn, dev, "cuDeviceGetDevResource");
    if (sm_count > all.sm.smCount)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: device %d has %u SMs, fewer than the %u asked", fn, (int)dev,
                           all.sm.smCount, sm_count);
    if ((rc = DRV(cuDevSmResourceSplitByCount)(&part, &n, &all, NULL, 0, sm_count)) != CUDA_SUCCESS)
        return device_refused(rc, fn, dev, "cuDevSmResourceSplitByCount");
    if (n == 0)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: device %d's %u SMs give no partition of %u (the driver rounds a partition up to its "
                           "minimum size and alignment)", fn, (int)dev, all.sm.smCount, sm_count);
    if ((rc = DRV(cuDevResourceGenerateDesc)(desc, &part, 1)) != CUDA_SUCCESS)
        return device_refused(rc, fn, dev, "cuDevResourceGenerateDesc");
    return CUDA_SUCCESS;
}

/* Under the lock: the entries of a new green context (raw, ctx_id) on dev
 * and of the primary context under it, and its handle. */
static CUresult register_locked(cuctx_ctx *out, CUgreenCtx g, CUcontext raw, unsigned long long ctx_id, CUdevice dev,
                                const char *fn, const struct cuctx_site *site)
{
    struct cuctx_primary *p = cuctx__primary_of(dev, 1);
    CUcontext home = NULL;
    uint64_t entry;
    CUresult rc;
    if (!p)
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the table of primary contexts", fn);
    if ((rc = cuctx__primary_address(dev, fn, &home)) != CUDA_SUCCESS)
        return rc;
    if (!home)      /* the create retained it: not seen active is a driver's fault */
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED,
                           "%s: the primary context of device %d is not active under the new green context", fn,
                           (int)dev);
    /* the primary's entry, for the children */
    if ((rc = cuctx__entry_home_locked(home, dev, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__entry_new(raw, ctx_id, dev, LIFE_GREEN, fn, &entry)) != CUDA_SUCCESS)
        return rc;
    /* (before the handle is published: every hold comes through it or the map, under this lock) */
    __atomic_store_n(&cuctx__slot_own(cuctx__id_index(entry))->u.entry.home, home, __ATOMIC_RELAXED);
    if ((rc = cuctx__handle_new(out, entry, LIFE_GREEN, dev, fn, site)) != CUDA_SUCCESS) {
        cuctx__entry_end_locked(entry);
        return rc;
    }
    /* (*out is the caller's until it returns: nobody destroys the handle before this) */
    __atomic_store_n(&cuctx__slot_own(cuctx__id_index(out->id))->u.ctx.green, (void *)g, __ATOMIC_RELAXED);
    p->raw = home;
    p->greens++;
    return CUDA_SUCCESS;
}

static CUresult green_create(cuctx_ctx *out, CUdevice dev, CUdevResourceDesc desc, unsigned sm_count, const char *fn,
                             const struct cuctx_site *site)
{
    CUgreenCtx g = NULL;
    CUcontext raw = NULL;
    unsigned long long ctx_id = 0;
    CUresult rc;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = need_green(fn, !desc)) != CUDA_SUCCESS)
        return rc;
    if (!desc && (rc = desc_of(dev, sm_count, fn, &desc)) != CUDA_SUCCESS)
        return rc;
    /* Nothing is made current (documented), unlike cuCtxCreate. */
    if ((rc = DRV(cuGreenCtxCreate)(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS)
        return device_refused(rc, fn, dev, "cuGreenCtxCreate");
    if ((rc = DRV(cuCtxFromGreenCtx)(&raw, g)) != CUDA_SUCCESS) {
        cuctx__fail(rc, "%s: cuCtxFromGreenCtx of the new green context failed: %s", fn, cuctx_result_name(rc));
    } else if ((rc = cuctx__ctx_id(raw, &ctx_id)) != CUDA_SUCCESS) {
        cuctx__fail(rc, "%s: cuCtxGetId of the new green context failed: %s", fn, cuctx_result_name(rc));
    } else {
        cuctx__ctx_lock();
        rc = register_locked(out, g, raw, ctx_id, dev, fn, site);
        cuctx__ctx_unlock();
    }
    if (rc != CUDA_SUCCESS)
        CUCTX__APART_FROM_POOLS
            DRV(cuGreenCtxDestroy)(g);
    return rc;
}

CUCTX_API CUresult cuctx_ctx_green_at(cuctx_ctx *out, CUdevice dev, unsigned sm_count, const char *file, int line,
                                      const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return green_create(out, dev, NULL, sm_count, "cuctx_ctx_green", &site);
}

CUCTX_API CUresult cuctx_ctx_green_desc_at(cuctx_ctx *out, CUdevice dev, CUdevResourceDesc desc, const char *file,
                                           int line, const char *func)
{
    static const char fn[] = "cuctx_ctx_green_desc";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    if (!desc)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: desc is NULL", fn);
    return green_create(out, dev, desc, 0, fn, &site);
}

/* ---- the destroy ------------------------------------------------------------ */

/* The walk over the table for the green context's streams. */
struct teardown {
    uint64_t entry;
    const char *fn;
    int gone;           /* the driver has shut down: no calls */
    CUresult rc;        /* the first failure */
};

/* One stream's driver stream destroyed; its handle stays, tethered to no
 * context, so that its own destroy is skipped and its uses refused. */
static void end_stream(struct cuctx_slot *s, struct teardown *t)
{
    CUstream raw = (CUstream)(uintptr_t)s->u.child.raw;
    uint64_t flags = s->u.child.size;
    CUresult rc = CUDA_SUCCESS;
    if (!s->u.child.site.unowned && !t->gone) {
        /* Its stream-ordered memory is freed after this in no order of
         * this stream (mem_async.c: on the primary context's legacy stream
         * or by cuMemFree), which waits for nothing: its work first, as in
         * stream.c. One not waited for (capturing, or the wait refused:
         * reported) is destroyed all the same - kept, it would die with
         * the green context a moment later, leaked - and remembered where
         * it can be, for its memory's frees until then (mem_async.c's
         * case 2, while the green context lives). */
        if (flags & CUCTX__STREAM_CARRIED)
            (void)cuctx__stream_wait_carried(s, t->fn);
        rc = cuctx__stream_destroy_raw(raw);
    }
    if (cuctx__driver_gone(rc)) {
        t->gone = 1;
    } else if (rc != CUDA_SUCCESS) {
        atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
        if (t->rc == CUDA_SUCCESS)
            t->rc = cuctx__fail(rc, "%s: the driver refused to destroy stream %p of the green context: %s", t->fn,
                                (void *)raw, cuctx_result_name(rc));
    }
    __atomic_store_n(&s->u.child.entry, CUCTX__ENTRY_NEVER, __ATOMIC_RELAXED);
}

static void end_stream_of(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    struct teardown *t = arg;
    if (kind != KIND_STREAM)
        return;
    /* Whether it is one of ours, read as a peeker: the slot may be any
     * context's stream, or be freed and reused meanwhile. */
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uint64_t id = cuctx__id_make(KIND_STREAM, s->index, cuctx__word_gen(w));
    uint64_t entry = __atomic_load_n(&s->u.child.entry, __ATOMIC_RELAXED);
    atomic_thread_fence(memory_order_acquire);
    uint64_t now = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (cuctx__word_kind(w) != KIND_STREAM || cuctx__word_gen(now) != cuctx__word_gen(w) || entry != t->entry)
        return;
    uint64_t pins;
    struct cuctx_slot *c = cuctx__close_pinned(id, KIND_STREAM, &pins);
    if (!c) {
        /* its destroy is under way on another thread, which holds the open
         * entry for its driver call: it ends it */
        cuctx__wait_closed(id, KIND_STREAM);
        return;
    }
    if (pins)
        cuctx__drain_slow(c);   /* calls on it under way (they hold the open entry) */
    end_stream(c, t);
    cuctx__reopen(c);
}

/* The walk: new creates refused first, the creates under way waited for. */
static CUresult end_streams(uint64_t entry, struct cuctx_slot *e, int gone, const char *fn)
{
    struct teardown t = {entry, fn, gone, CUDA_SUCCESS};
    __atomic_store_n(&e->u.entry.ending, (unsigned char)1, __ATOMIC_RELAXED);
    cuctx__reopen(e);   /* (a release: every later hold sees it ending) */
    cuctx__slot_foreach(end_stream_of, &t);
    return t.rc;
}

/* cuGreenCtxDestroy, and the pop of the green context if it was this
 * thread's current context (the scopes around count on a destroy that pops
 * it, as cuCtxDestroy does). */
static CUresult destroy_popping(CUgreenCtx g, CUcontext raw, const char *fn)
{
    CUcontext cur = NULL;
    CUresult cur_rc = DRV(cuCtxGetCurrent)(&cur);
    if (cur_rc != CUDA_SUCCESS)
        cur_rc = DRV(cuCtxGetCurrent)(&cur);
    CUresult rc;
    CUCTX__APART_FROM_POOLS
        rc = DRV(cuGreenCtxDestroy)(g);
    if (rc != CUDA_SUCCESS)
        return cuctx__driver_gone(rc) ? rc
                                      : cuctx__fail(rc, "%s: cuGreenCtxDestroy failed: %s", fn, cuctx_result_name(rc));
    if (cur_rc != CUDA_SUCCESS)
        return cuctx__fail(cur_rc, "%s: the green context was destroyed, but cuCtxGetCurrent failed (%s): whether it "
                                   "was this thread's current context, now stale, is not known", fn,
                           cuctx_result_name(cur_rc));
    if (cur == raw && (rc = cuctx__pop()) != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: the green context was destroyed, but popping it off this thread, where it was "
                               "current, failed: %s", fn, cuctx_result_name(rc));
    return CUDA_SUCCESS;
}

CUresult cuctx__green_end(uint64_t entry, void *green, CUdevice dev, const char *fn)
{
    int gone = atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed);
    struct cuctx_slot *e = cuctx__close(entry, KIND_ENTRY);
    if (!e)
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the green context was already destroyed", fn);
    cuctx__drain(e);
    CUresult rc = end_streams(entry, e, gone, fn);
    /* Only this destroy closes the entry (it is owned, and its address
     * cannot be retaken while it lives): the close takes. */
    if ((e = cuctx__close(entry, KIND_ENTRY)) == NULL)
        return cuctx__fail(CUDA_ERROR_UNKNOWN, "%s: the green context's entry was closed by another thread", fn);
    cuctx__drain(e);
    uint64_t home_entry = 0;
    struct cuctx_slot *h = NULL;
    CUresult grc = CUDA_SUCCESS;
    cuctx__ctx_lock();
    struct cuctx_primary *p = cuctx__primary_of(dev, 0);
    if (p && p->retains == 0 && p->greens == 1)     /* its retain may be the primary's last */
        h = cuctx__primary_close_locked(dev, &home_entry);
    if (!gone && !atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed))
        grc = destroy_popping((CUgreenCtx)green, e->u.entry.raw, fn);
    if (h)
        cuctx__primary_settle_locked(h, home_entry);
    if (p && p->greens > 0)
        p->greens--;
    cuctx__ctx_unlock();
    cuctx__entry_finish(e, entry);
    return grc != CUDA_SUCCESS ? grc : rc;
}

#else /* CUDA_VERSION < 12040 */

/* Built with CUDA headers older than 12.4: no green contexts. */
static CUresult unbuilt(const char *fn)
{
    return cuctx__fail(CUDA_ERROR_NOT_SUPPORTED,
                       "%s: cuctx was built with CUDA headers older than 12.4 (CUDA_VERSION %d): no green contexts", fn,
                       (int)CUDA_VERSION);
}

CUresult cuctx__child_create_green(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make,
                                   void *arg, const struct cuctx_site *site, struct cuctx_held *o)
{
    (void)out, (void)kind, (void)make, (void)arg, (void)site;
    cuctx__entry_release(o);
    return unbuilt(fn);
}

CUCTX_API CUresult cuctx_ctx_green_at(cuctx_ctx *out, CUdevice dev, unsigned sm_count, const char *file, int line,
                                      const char *func)
{
    (void)dev, (void)sm_count, (void)file, (void)line, (void)func;
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, "cuctx_ctx_green")) != CUDA_SUCCESS)
        return rc;
    return unbuilt("cuctx_ctx_green");
}

CUCTX_API CUresult cuctx_ctx_green_desc_at(cuctx_ctx *out, CUdevice dev, struct CUdevResourceDesc_st *desc,
                                           const char *file, int line, const char *func)
{
    (void)dev, (void)desc, (void)file, (void)line, (void)func;
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, "cuctx_ctx_green_desc")) != CUDA_SUCCESS)
        return rc;
    return unbuilt("cuctx_ctx_green_desc");
}

CUresult cuctx__green_end(uint64_t entry, void *green, CUdevice dev, const char *fn)
{
    (void)entry, (void)green, (void)dev;
    return unbuilt(fn);
}

#endif /* CUDA_VERSION */

CUCTX_API CUresult (cuctx_ctx_green)(cuctx_ctx *out, CUdevice dev, unsigned sm_count)
{
    return cuctx_ctx_green_at(out, dev, sm_count, NULL, 0, NULL);
}

CUCTX_API CUresult (cuctx_ctx_green_desc)(cuctx_ctx *out, CUdevice dev, struct CUdevResourceDesc_st *desc)
{
    return cuctx_ctx_green_desc_at(out, dev, desc, NULL, 0, NULL);
}
