/* SPDX-License-Identifier: MIT */
/* context.c - the context API: owned, primary and borrowed handles.
 *
 * Every cuctx_ctx handle names a KIND_CTX_HANDLE slot that points at a context
 * entry (entry.c); children are tethered to the entry. An owned context has
 * one handle; a primary context has one handle per retain through cuctx,
 * all sharing the entry; a borrowed handle never ends its entry. An owned
 * entry ends when its handle is destroyed. A primary or borrowed entry ends
 * when the driver's context ends - whoever ends it - which each hold sees
 * in the driver's id; cuctx's own last primary release ends it only if the
 * context ended with that release. Also the calling thread's current
 * context as a raw driver handle, and its pop.
 */
#include "config.h"

#include "apart.h"
#include "claim.h"
#include "context.h"
#include "ctxmap.h"
#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "green.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "tether.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int flags_valid(unsigned flags)
{
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    return (flags & ~(CU_CTX_SCHED_MASK | CUCTX_MAP_HOST | CUCTX_LMEM_RESIZE_TO_MAX)) == 0
        && (sched == CUCTX_SCHED_AUTO || sched == CUCTX_SCHED_SPIN || sched == CUCTX_SCHED_YIELD
            || sched == CUCTX_SCHED_BLOCKING_SYNC);
}

CUCTX_API CUresult cuctx_ctx_create_at(cuctx_ctx *out, CUdevice dev, unsigned flags,
                                       const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_ctx_create";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUcontext raw = NULL;
    unsigned long long ctx_id = 0;
    uint64_t entry;
    CUresult rc;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    if (!flags_valid(flags))
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: unknown flags %#x", fn, flags);
    CUCTX_INIT_OR_RETURN(fn);
    rc = cuctx__create_pushed(&raw, flags, dev);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxCreate on device %d failed: %s", fn, (int)dev, cuctx_result_name(rc));
    if ((rc = cuctx__ctx_id(raw, &ctx_id)) != CUDA_SUCCESS) {
        cuctx__fail(rc, "%s: cuCtxGetId of the new context failed: %s", fn, cuctx_result_name(rc));
    } else {
        cuctx__ctx_lock();
        rc = cuctx__entry_new(raw, ctx_id, dev, LIFE_OWNED, fn, &entry);
        if (rc == CUDA_SUCCESS && (rc = cuctx__handle_new(out, entry, LIFE_OWNED, dev, fn, &site)) != CUDA_SUCCESS)
            cuctx__entry_end_locked(entry);
        cuctx__ctx_unlock();
    }
    if (rc != CUDA_SUCCESS)
        cuctx__destroy_pushed(raw);
    return rc;
}

CUCTX_API CUresult cuctx_ctx_primary_at(cuctx_ctx *out, CUdevice dev, const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_ctx_primary";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUcontext raw = NULL;
    unsigned long long ctx_id = 0;
    uint64_t entry = 0;
    CUresult rc;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    cuctx__ctx_lock();
    rc = DRV(cuDevicePrimaryCtxRetain)(&raw, dev);
    if (rc != CUDA_SUCCESS) {
        cuctx__ctx_unlock();
        return cuctx__fail(rc, "%s: cuDevicePrimaryCtxRetain on device %d failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    }
    struct cuctx_primary *p = cuctx__primary_of(dev, 1);
    if (!p) {
        rc = cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the table of primary contexts", fn);
    } else if ((rc = cuctx__ctx_id(raw, &ctx_id)) != CUDA_SUCCESS) {
        cuctx__fail(rc, "%s: cuCtxGetId of the primary context of device %d failed: %s", fn, (int)dev,
                    cuctx_result_name(rc));
    } else {
        struct cuctx_slot *e = cuctx__entry_same(raw, ctx_id);
        if (e) {
            entry = cuctx__map_find(raw);   /* (met as borrowed before: retained now, still checked by id) */
        } else {
            rc = cuctx__entry_new(raw, ctx_id, dev, LIFE_PRIMARY, fn, &entry);
        }
        if (rc == CUDA_SUCCESS && (rc = cuctx__handle_new(out, entry, LIFE_PRIMARY, dev, fn, &site)) == CUDA_SUCCESS) {
            p->raw = raw;
            p->retains++;
        }
    }
    if (rc != CUDA_SUCCESS)
        CUCTX__APART_FROM_POOLS
            DRV(cuDevicePrimaryCtxRelease)(dev);
    cuctx__ctx_unlock();
    return rc;
}

/* Releases one primary retain of cuctx's. A reset does not release retains
 * (measured), so this runs whether the handle's entry lives or not. On
 * cuctx's last retain of the device (counted per device: the handle's own
 * entry may have ended in a reset while its retain lived on), unless a green
 * context of cuctx's holds one too, no child call may run across the
 * release (it may end the context): the primary's entry is closed around it
 * (cuctx__primary_close_locked) and ends only if the context did. */
static CUresult primary_release(CUdevice dev, uint64_t handle_entry, const char *fn)
{
    int gone = atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed);
    uint64_t entry = 0;
    struct cuctx_slot *e = NULL;
    cuctx__ctx_lock();
    struct cuctx_primary *p = cuctx__primary_of(dev, 0);
    if (p && p->retains > 0 && --p->retains == 0 && p->greens == 0)
        e = cuctx__primary_close_locked(dev, &entry);
    CUresult rc = CUDA_SUCCESS;
    if (!gone)
        CUCTX__APART_FROM_POOLS
            rc = DRV(cuDevicePrimaryCtxRelease)(dev);
    if (e)
        cuctx__primary_settle_locked(e, entry);
    cuctx__entry_unname_locked(handle_entry);   /* (a borrow's entry retained since) */
    cuctx__ctx_unlock();
    return rc == CUDA_SUCCESS ? rc
                              : cuctx__fail(rc, "%s: cuDevicePrimaryCtxRelease failed: %s", fn, cuctx_result_name(rc));
}

/* The reset ends dev's primary context, so it waits out the child calls
 * under way in it first: its entry is found by the context's address,
 * whatever cuctx knows it as (retained, borrowed, or met as some thread's
 * current context). */
CUCTX_API CUresult cuctx_ctx_primary_reset(CUdevice dev)
{
    static const char fn[] = "cuctx_ctx_primary_reset";
    uint64_t found = 0;
    struct cuctx_slot *e = NULL;
    CUcontext raw = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    cuctx__ctx_lock();
    CUresult rc = cuctx__primary_address(dev, fn, &raw);
    if (rc != CUDA_SUCCESS) {
        cuctx__ctx_unlock();
        return rc;
    }
    if (raw) {
        found = cuctx__map_find(raw);
        struct cuctx_slot *live = found ? cuctx__peek(found, KIND_ENTRY) : NULL;
        if (!live || live->u.entry.dev != dev)
            found = 0;
    }
    if (found && (e = cuctx__close(found, KIND_ENTRY)) != NULL)
        cuctx__drain(e);
    CUCTX__APART_FROM_POOLS
        rc = DRV(cuDevicePrimaryCtxReset)(dev);
    if (e && rc == CUDA_SUCCESS) {
        cuctx__map_remove(e->u.entry.raw, found);
        cuctx__slot_free(e);
    } else if (e) {
        cuctx__reopen(e);
    }
    cuctx__ctx_unlock();
    return rc == CUDA_SUCCESS ? rc
                              : cuctx__fail(rc, "%s: cuDevicePrimaryCtxReset on device %d failed: %s", fn, (int)dev,
                                            cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_ctx_borrow_at(cuctx_ctx *out, CUcontext raw, const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_ctx_borrow";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct cuctx_held o;
    CUresult rc;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    if (!raw)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the context is NULL", fn);
    CUCTX_INIT_OR_RETURN(fn);
    rc = cuctx__entry_hold_borrowed(raw, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUdevice dev = o.slot->u.entry.dev;
    rc = cuctx__handle_new(out, o.id, LIFE_BORROWED, dev, fn, &site);
    cuctx__entry_release(&o);
    return rc;
}

/* A child's context, borrowed: the handle's destroy never ends it. */
CUresult cuctx__child_ctx(uint64_t id, enum cuctx_kind kind, const char *fn, cuctx_ctx *out)
{
    static const struct cuctx_site site = {.file = NULL};
    struct cuctx_use u;
    CUresult rc;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__child_use(id, kind, fn, &u)) != CUDA_SUCCESS)
        return rc;
    rc = cuctx__handle_new(out, u.entry.id, LIFE_BORROWED, u.entry.slot->u.entry.dev, fn, &site);
    cuctx__child_done(&u);
    return rc;
}

CUCTX_API CUresult (cuctx_ctx_create)(cuctx_ctx *out, CUdevice dev, unsigned flags)
{
    return cuctx_ctx_create_at(out, dev, flags, NULL, 0, NULL);
}

CUCTX_API CUresult (cuctx_ctx_primary)(cuctx_ctx *out, CUdevice dev)
{
    return cuctx_ctx_primary_at(out, dev, NULL, 0, NULL);
}

CUCTX_API CUresult (cuctx_ctx_borrow)(cuctx_ctx *out, CUcontext raw)
{
    return cuctx_ctx_borrow_at(out, raw, NULL, 0, NULL);
}

/* Destroys an owned context, never while a child call is under way on it;
 * once the driver has shut down, only the entry ends. */
static CUresult owned_destroy(uint64_t entry, const char *fn)
{
    CUresult rc = CUDA_SUCCESS;
    struct cuctx_slot *e = cuctx__close(entry, KIND_ENTRY);
    if (!e)
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the context was already destroyed", fn);
    cuctx__drain(e);
    CUresult cur_rc = CUDA_SUCCESS;
    if (!atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed)) {
        /* Whether the driver pops it off this thread's stack: the scopes
         * around count on it. */
        rc = cuctx__destroy_popping(e->u.entry.raw, &cur_rc);
    }
    cuctx__entry_finish(e, entry);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxDestroy failed: %s", fn, cuctx_result_name(rc));
    if (cur_rc != CUDA_SUCCESS)
        return cuctx__fail(cur_rc, "%s: the context was destroyed, but cuCtxGetCurrent failed (%s): whether it was this "
                                   "thread's current context is not known, so an enclosing CUCTX_SCOPED may pop one "
                                   "level too many", fn, cuctx_result_name(cur_rc));
    return CUDA_SUCCESS;
}

static CUresult handle_destroy(uint64_t id, const char *fn);

CUCTX_API CUresult cuctx_ctx_destroy(cuctx_ctx *ctx)
{
    static const char fn[] = "cuctx_ctx_destroy";
    if (!ctx)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: ctx is NULL", fn);
    if (ctx->id == 0)
        return CUDA_SUCCESS;
    uint64_t id = ctx->id;
    ctx->id = 0;    /* whatever happens, the variable names nothing afterwards */
    CUCTX_INIT_OR_RETURN(fn);
    /* From the handle's close to the entry's free, a cancelled thread would
     * leave them closing for good (every later hold of the entry waits for
     * the verdict): the drains sleep and the driver's destroy may be a
     * cancellation point, so cancellation is off until the end, then the
     * caller's state is back (a cancel that came meanwhile acts at the
     * thread's next cancellation point). */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    CUresult rc = handle_destroy(id, fn);
    pthread_setcancelstate(cancel_state, NULL);
    return rc;
}

static CUresult handle_destroy(uint64_t id, const char *fn)
{
    struct cuctx_slot *h = cuctx__close(id, KIND_CTX_HANDLE);
    if (!h)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: context handle %#llx is stale, destroyed already, or not a context",
                           fn, (unsigned long long)id);
    cuctx__drain(h);
    uint64_t entry = h->u.ctx.entry;
    int life = h->u.ctx.life;
    CUdevice dev = h->u.ctx.dev;
    void *green = h->u.ctx.green;
    /* An owned (or green) handle's entry closes right after this, with no
     * call between: cuctx__ctx_hold_last (entry.h) counts on it. */
    cuctx__slot_free(h);
    if (life == LIFE_BORROWED) {
        cuctx__ctx_lock();
        cuctx__entry_unname_locked(entry);
        cuctx__ctx_unlock();
        return CUDA_SUCCESS;
    }
    int gone = atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed);
    CUresult rc = life == LIFE_PRIMARY ? primary_release(dev, entry, fn)
                : life == LIFE_GREEN   ? cuctx__green_end(entry, green, dev, fn)
                                       : owned_destroy(entry, fn);
    if (gone || cuctx__driver_gone(rc)) {
        atomic_fetch_add_explicit(&cuctx__shutdown_skips, 1, memory_order_relaxed);
        return CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS)
        atomic_fetch_add(&cuctx__failed_destroys, 1);
    return rc;
}

/* A context handle's entry, held, for the functions below: unlike
 * cuctx__ctx_hold, {0} is an error here, not the current context. */
static CUresult hold_given(cuctx_ctx ctx, const char *fn, struct cuctx_held *o)
{
    o->slot = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    if (ctx.id == 0)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: the context handle is {0}", fn);
    return cuctx__ctx_hold(ctx, fn, o);
}

CUCTX_API CUresult cuctx_ctx_set_current(cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_ctx_set_current";
    struct cuctx_held o = {0};
    CUresult rc = hold_given(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = cuctx__set_current(o.raw, o.id);
    cuctx__entry_release(&o);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxSetCurrent failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_ctx_is_current(cuctx_ctx ctx, int *out)
{
    static const char fn[] = "cuctx_ctx_is_current";
    struct cuctx_held o = {0};
    CUcontext cur = NULL;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    *out = 0;
    CUresult rc = hold_given(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc != CUDA_SUCCESS) {
        cuctx__entry_release(&o);
        return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, cuctx_result_name(rc));
    }
    /* by id too: a dead context at its address is not it */
    if (cur == o.raw) {
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = cuctx__current_is(o.slot->u.entry.ctx_id, out);
        if (rc != CUDA_SUCCESS)
            *out = 0;
    }
    cuctx__entry_release(&o);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxGetId of the current context failed: %s", fn,
                                                 cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_ctx_synchronize(cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_ctx_synchronize";
    struct cuctx_held o = {0};
    struct cuctx_switch sw = {0};   /* (the guard's wait below comes before the switch: a cancel there pops nothing) */
    CUresult rc = hold_given(ctx, fn, &o);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(&sw) {
        struct cuctx_sync_guard beside_captures CUCTX__SYNC_GUARD = cuctx__sync_shared(o.id);
        if ((rc = cuctx__switch_to(o.raw, fn, &sw)) == CUDA_SUCCESS) {
            CUCTX__APART_FROM_POOLS
                rc = DRV(cuCtxSynchronize)();
            cuctx__switch_back(&sw, fn);
            if (rc != CUDA_SUCCESS)
                cuctx__fail(rc, "%s: cuCtxSynchronize failed: %s", fn, cuctx_result_name(rc));
        }
    }
    cuctx__entry_release(&o);
    return rc;
}

/* The accessors read an owned context's entry without holding it
 * (cuctx__ctx_read, entry.h); the rest - stale handles, which the holding
 * path reports, and contexts others can end, which a hold checks by the
 * driver's id - hold it. */
CUCTX_API CUcontext cuctx_ctx_raw(cuctx_ctx ctx)
{
    struct cuctx_entry_fields f;
    if (cuctx__ctx_read_last(ctx, &f) || __builtin_expect(cuctx__ctx_read(ctx, &f), 1))
        return f.raw;
    struct cuctx_held o = {0};
    if (hold_given(ctx, "cuctx_ctx_raw", &o) != CUDA_SUCCESS)
        return NULL;
    CUcontext raw = o.raw;
    cuctx__entry_release(&o);
    return raw;
}

CUCTX_API CUdevice cuctx_ctx_device(cuctx_ctx ctx)
{
    struct cuctx_entry_fields f;
    if (__builtin_expect(cuctx__ctx_read(ctx, &f), 1))
        return f.dev;
    struct cuctx_held o = {0};
    if (hold_given(ctx, "cuctx_ctx_device", &o) != CUDA_SUCCESS)
        return -1;
    CUdevice dev = o.slot->u.entry.dev;
    cuctx__entry_release(&o);
    return dev;
}

/* ---- the calling thread's current context ------------------------------- */

CUCTX_API CUresult cuctx_current_raw(CUcontext *out)
{
    static const char fn[] = "cuctx_current_raw";
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    *out = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = DRV(cuCtxGetCurrent)(out);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_pop_current(void)
{
    static const char fn[] = "cuctx_pop_current";
    CUcontext cur = NULL;
    unsigned version;
    unsigned long long id;
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, cuctx_result_name(rc));
    if (!cur)
        return cuctx__fail(CUDA_ERROR_INVALID_CONTEXT, "%s: no context is current", fn);
    /* The driver aborts on popping a destroyed context that was handed to
     * it: cuctx never does that, but other code may have. */
    rc = DRV(cuCtxGetId) ? cuctx__ctx_id(cur, &id) : DRV(cuCtxGetApiVersion)(cur, &version);
    if (cuctx__gone(rc))
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED,
                           "%s: the current context %p has been destroyed; not popping it (the driver may abort)",
                           fn, (void *)cur);
    rc = cuctx__pop();
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxPopCurrent failed: %s", fn, cuctx_result_name(rc));
    return CUDA_SUCCESS;
}
