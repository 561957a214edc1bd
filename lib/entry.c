/* SPDX-License-Identifier: MIT */
/* entry.c - context entries: what cuctx knows of one driver context (its
 * address, the driver's id for it, its device, who decides its life), and
 * how an entry is found, held for a child call, checked and ended.
 *
 * Every child is tethered to an entry's id (slot and generation). The
 * entry of an owned context ends when cuctx destroys it; no driver call is
 * needed to know it lives. Primary and borrowed contexts can be ended by
 * anyone, so each hold checks the driver's id for the address (cuCtxGetId,
 * unique in the process and never reused): when the context is gone, or a
 * new one took its address, the entry ends there and then, and the child
 * call it was for never reaches the driver. What no check can exclude is an
 * owner ending the context between the check and the call itself.
 */
#include "config.h"

#include "entry.h"
#include "ctxmap.h"
#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Driver calls under the lock may be cancellation points: a thread is not
 * cancelled while it holds the lock, so it never leaves it held. */
void cuctx__ctx_lock(void)
{
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cuctx__me.lock.cancel_state);
    pthread_mutex_lock(&lock);
    cuctx__me.lock.held = 1;
}

void cuctx__ctx_unlock(void)
{
    cuctx__me.lock.held = 0;
    pthread_mutex_unlock(&lock);
    pthread_setcancelstate(cuctx__me.lock.cancel_state, NULL);
    cuctx__deliver_reports();
}

/* fork waits for the lock, so that the child never inherits it taken by a
 * thread that does not exist there. */
void cuctx__ctx_lock_fork(int phase)
{
    if (phase < 0)
        pthread_mutex_lock(&lock);
    else
        pthread_mutex_unlock(&lock);
}

static struct cuctx_primary *primaries;
static size_t n_primaries;

/* dev's record, grown on demand when grow; NULL for a bad device or no memory. */
struct cuctx_primary *cuctx__primary_of(CUdevice dev, int grow)
{
    if (dev < 0)
        return NULL;
    if ((size_t)dev >= n_primaries) {
        size_t n = (size_t)dev + 8;
        struct cuctx_primary *p = grow ? realloc(primaries, n * sizeof *p) : NULL;
        if (!p)
            return NULL;
        memset(p + n_primaries, 0, (n - n_primaries) * sizeof *p);
        primaries = p;
        n_primaries = n;
    }
    return &primaries[dev];
}

/* In a forked child every handle is a borrow: no retain of cuctx's is left. */
static void primaries_after_fork(void)
{
    for (size_t i = 0; i < n_primaries; i++)
        primaries[i].retains = primaries[i].greens = 0;
}

/* In a forked child: the contexts are the parent's, and CUDA objects do not
 * cross fork. Every entry ends, so children made before the fork are never
 * sent to the child's driver (their destroys are skipped; so are those of
 * the untethered kinds, given an entry that never lives), and every context
 * handle becomes a borrow, whose destroy never calls the driver. */
static void after_fork_one(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    (void)arg;
    if (kind == KIND_ENTRY) {
        cuctx__map_remove(s->u.entry.raw, cuctx__id_make(KIND_ENTRY, s->index,
                                                         (uint32_t)(atomic_load(&s->word) >> 32)));
        cuctx__slot_free(s);
    } else if (kind == KIND_CTX_HANDLE) {
        s->u.ctx.life = LIFE_BORROWED;
    } else if (kind < KIND_ENTRY && !cuctx__kind_tethered(kind) && s->u.child.entry == 0) {
        s->u.child.entry = CUCTX__ENTRY_NEVER;  /* in no context, but the parent's all the same */
    }
}

void cuctx__contexts_after_fork(void)
{
    cuctx__slot_foreach(after_fork_one, NULL);
    primaries_after_fork();
}

/* ---- ending ----------------------------------------------------------------- */

void cuctx__entry_finish(struct cuctx_slot *s, uint64_t id)
{
    cuctx__drain(s);
    cuctx__ctx_lock();
    cuctx__map_remove(s->u.entry.raw, id);
    cuctx__ctx_unlock();
    cuctx__slot_free(s);
}

void cuctx__entry_end_locked(uint64_t id)
{
    struct cuctx_slot *s = cuctx__close(id, KIND_ENTRY);
    if (!s)
        return;
    cuctx__map_remove(s->u.entry.raw, id);
    cuctx__drain(s);
    cuctx__slot_free(s);
}

/* Under the lock: a counted entry whose last name went ends, unless a call
 * in flight named it meanwhile: a name is counted while its maker holds
 * the entry (or the lock), so once the close has drained the holds the
 * count is final. */
static void end_unnamed_locked(uint64_t id)
{
    struct cuctx_slot *s = cuctx__close(id, KIND_ENTRY);
    if (!s)
        return;     /* ended already */
    cuctx__drain(s);
    if (__atomic_load_n(&s->u.entry.names, __ATOMIC_ACQUIRE) != 0) {
        cuctx__reopen(s);
        return;
    }
    cuctx__map_remove(s->u.entry.raw, id);
    cuctx__slot_free(s);
}

void cuctx__entry_unname(uint64_t id)
{
    cuctx__ctx_lock();
    end_unnamed_locked(id);
    cuctx__ctx_unlock();
}

void cuctx__entry_unname_locked(uint64_t id)
{
    struct cuctx_slot *s = cuctx__peek(id, KIND_ENTRY);
    if (s && cuctx__entry_counted(s) && cuctx__entry_unnamed_last(s))
        end_unnamed_locked(id);
}

/* A context found gone by its id: forgotten at once, so that a new context
 * at the address is registered anew; then drained and freed. */
static void entry_retire(uint64_t id)
{
    int cancel_state;   /* closed to freed: a cancel here would leave it closing for good */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    cuctx__ctx_lock();
    struct cuctx_slot *s = cuctx__close(id, KIND_ENTRY);
    if (s)
        cuctx__map_remove(s->u.entry.raw, id);
    cuctx__ctx_unlock();
    if (s) {
        cuctx__drain(s);
        cuctx__slot_free(s);
    }
    pthread_setcancelstate(cancel_state, NULL);
}

/* ---- making ----------------------------------------------------------------- */

/* Under the lock: ends the entries whose contexts the driver says are gone.
 * Entries of primary and borrowed contexts are otherwise only found dead
 * when something holds them; this keeps the map to the live contexts. */
static void sweep_one(CUcontext raw, uint64_t entry, void *arg)
{
    struct cuctx_slot *s = cuctx__peek(entry, KIND_ENTRY);
    unsigned long long id;
    (void)arg;
    if (s && s->u.entry.by_id && cuctx__gone(cuctx__ctx_id(raw, &id)))
        cuctx__entry_end_locked(entry);
}

static size_t sweep_at = 64;

void cuctx__sweep_locked(void)
{
    if (DRV(cuCtxGetId))
        cuctx__map_foreach(sweep_one, NULL);
}

CUresult cuctx__entry_new(CUcontext raw, unsigned long long ctx_id, CUdevice dev, enum cuctx_life life,
                          const char *fn, uint64_t *out)
{
    uint64_t old = cuctx__map_find(raw);
    if (old && cuctx__alive(old, KIND_ENTRY))
        cuctx__entry_end_locked(old);
    if (cuctx__map_count() >= sweep_at && DRV(cuCtxGetId)) {
        cuctx__map_foreach(sweep_one, NULL);
        sweep_at = 2 * cuctx__map_count() > 64 ? 2 * cuctx__map_count() : 64;
    }
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (!s)
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
    /* Atomic (relaxed): seqlock readers (prev_seen in scope.c, handle
     * peeks) may still read this slot's fields as its previous object's. */
    __atomic_store_n(&s->u.entry.raw, raw, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.ctx_id, ctx_id, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.dev, dev, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.by_id, (unsigned char)(life != LIFE_OWNED && life != LIFE_GREEN && ctx_id != 0),
                     __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.owner_handle, (uint64_t)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.counted, (unsigned char)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.ending, (unsigned char)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.names, (uint32_t)0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.entry.home, (CUcontext)NULL, __ATOMIC_RELAXED);
    uint64_t id = cuctx__slot_publish(s, KIND_ENTRY);
    if (cuctx__map_put(raw, id) != 0) {
        cuctx__entry_end_locked(id);
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the context map", fn);
    }
    *out = id;
    return CUDA_SUCCESS;
}

CUresult cuctx__entry_home_locked(CUcontext home, CUdevice dev, const char *fn)
{
    unsigned long long home_id = 0;
    uint64_t entry;
    CUresult rc = cuctx__ctx_id(home, &home_id);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxGetId of the primary context of device %d failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    if (cuctx__entry_same(home, home_id))
        return CUDA_SUCCESS;
    return cuctx__entry_new(home, home_id, dev, LIFE_PRIMARY, fn, &entry);
}

/* Whether the current context is a green context's, and then the primary
 * context under it, in *home (else NULL): cuStreamGetCtx_v2 of the legacy
 * stream gives the green context and the device's primary for a green
 * context current, the context and NULL for any other (documented; CUDA
 * 12.5+). A driver without it, or refusing the question, has no green
 * context cuctx can tell apart: *home NULL. */
static CUresult current_home(CUcontext *home)
{
    *home = NULL;
#if CUDA_VERSION >= 12050
    CUcontext under = NULL;
    CUgreenCtx green = NULL;
    if (!DRV(cuStreamGetCtx))
        return CUDA_SUCCESS;
    CUresult rc = DRV(cuStreamGetCtx)(CU_STREAM_LEGACY, &under, &green);
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        return CUDA_SUCCESS;
    if (rc != CUDA_SUCCESS)
        return rc;
    if (green)
        *home = under;
#endif
    return CUDA_SUCCESS;
}

/* Under the lock: a context cuctx has not met, identified by the driver
 * and registered as borrowed (counted: for a borrow, entry.h). A green
 * context made elsewhere is told apart (current_home) and, as one cuctx
 * made, names the primary context under it (entry.home), registered too:
 * its children but streams belong to that primary, and are tethered to it
 * (green.c). Errors are the driver's own. */
static CUresult entry_register(CUcontext raw, const char *fn, int counted, uint64_t *out)
{
    unsigned long long ctx_id = 0;
    unsigned version;
    CUdevice dev = -1;
    CUcontext home = NULL;
    struct cuctx_switch sw;
    CUresult rc = DRV(cuCtxGetId) ? DRV(cuCtxGetId)(raw, &ctx_id) : DRV(cuCtxGetApiVersion)(raw, &version);
    if (cuctx__gone(rc))
        return cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: context %p has been destroyed", fn, (void *)raw);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cannot identify context %p: %s failed: %s", fn, (void *)raw,
                           DRV(cuCtxGetId) ? "cuCtxGetId" : "cuCtxGetApiVersion", cuctx_result_name(rc));
    /* Alive a moment ago, so it may be made current to ask its device. */
    if ((rc = cuctx__switch_to(raw, fn, &sw)) != CUDA_SUCCESS)
        return rc;
    const char *step = "cuCtxGetDevice";
    rc = DRV(cuCtxGetDevice)(&dev);
    if (rc == CUDA_SUCCESS) {
        step = "cuStreamGetCtx";
        rc = current_home(&home);
    }
    cuctx__switch_back(&sw, fn);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: %s for context %p failed: %s", fn, step, (void *)raw, cuctx_result_name(rc));
    if (home && (rc = cuctx__entry_home_locked(home, dev, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__entry_new(raw, ctx_id, dev, LIFE_BORROWED, fn, out)) != CUDA_SUCCESS)
        return rc;
    struct cuctx_slot *e = cuctx__slot_own(cuctx__id_index(*out));
    if (counted && ctx_id)
        __atomic_store_n(&e->u.entry.counted, (unsigned char)1, __ATOMIC_RELAXED);
    /* (before the entry is handed out: every hold comes through it or the map, under this lock) */
    __atomic_store_n(&e->u.entry.home, home, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}

CUresult cuctx__handle_new(cuctx_ctx *out, uint64_t entry, enum cuctx_life life, CUdevice dev, const char *fn,
                           const struct cuctx_site *site)
{
    struct cuctx_slot *h = cuctx__slot_alloc();
    if (!h)
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
    /* atomic: peekers with stale ids may read the reused slot (cuctx__slot_alloc) */
    __atomic_store_n(&h->u.ctx.entry, entry, __ATOMIC_RELAXED);
    __atomic_store_n(&h->u.ctx.life, (int)life, __ATOMIC_RELAXED);
    __atomic_store_n(&h->u.ctx.dev, dev, __ATOMIC_RELAXED);
    __atomic_store_n(&h->u.ctx.green, (void *)NULL, __ATOMIC_RELAXED);
    cuctx__site_store(&h->u.ctx.site, site);
    out->id = cuctx__slot_publish(h, KIND_CTX_HANDLE);
    struct cuctx_slot *e = cuctx__slot_own(cuctx__id_index(entry));
    if (life == LIFE_OWNED || life == LIFE_GREEN)   /* the entry, made just now under the lock, names its owner */
        __atomic_store_n(&e->u.entry.owner_handle, out->id, __ATOMIC_RELAXED);
    else if (cuctx__entry_counted(e))   /* (held, or under the lock, by the caller) */
        cuctx__entry_named(e);
    return CUDA_SUCCESS;
}

struct cuctx_slot *cuctx__primary_close_locked(CUdevice dev, uint64_t *id)
{
    struct cuctx_primary *p = cuctx__primary_of(dev, 0);
    struct cuctx_slot *e = NULL;
    *id = p && p->raw ? cuctx__map_find(p->raw) : 0;
    if (*id) {
        struct cuctx_slot *live = cuctx__peek(*id, KIND_ENTRY);
        if (live && live->u.entry.dev == dev && (e = cuctx__close(*id, KIND_ENTRY)) != NULL)
            cuctx__drain(e);
    }
    return e;
}

void cuctx__primary_settle_locked(struct cuctx_slot *e, uint64_t id)
{
    unsigned long long now = 0;
    int gone = atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed);
    CUresult idrc = gone ? CUDA_ERROR_DEINITIALIZED : cuctx__ctx_id(e->u.entry.raw, &now);
    /* Ends only when the driver says the context is gone (or has no ids):
     * a failed check proves nothing, and every later hold checks again. */
    int ended = !DRV(cuCtxGetId) || gone || cuctx__gone(idrc) || (idrc == CUDA_SUCCESS && now != e->u.entry.ctx_id);
    if (!ended) {
        cuctx__reopen(e);
    } else {
        cuctx__map_remove(e->u.entry.raw, id);
        cuctx__slot_free(e);
    }
}

struct cuctx_slot *cuctx__entry_same(CUcontext raw, unsigned long long ctx_id)
{
    uint64_t id = cuctx__map_find(raw);
    struct cuctx_slot *e = id ? cuctx__peek(id, KIND_ENTRY) : NULL;
    return e && e->u.entry.ctx_id == ctx_id ? e : NULL;
}

/* Without cuDevicePrimaryCtxGetState (a driver older than CUDA 7.0, which
 * cuctx cannot load: it needs cuGetProcAddress, CUDA 11.3), only an address
 * cuctx retained is known. */
CUresult cuctx__primary_address(CUdevice dev, const char *fn, CUcontext *raw)
{
    struct cuctx_primary *p = cuctx__primary_of(dev, 0);
    unsigned flags = 0;
    int active = 0;
    *raw = p ? p->raw : NULL;
    if (*raw || !DRV(cuDevicePrimaryCtxGetState))
        return CUDA_SUCCESS;
    CUresult rc = DRV(cuDevicePrimaryCtxGetState)(dev, &flags, &active);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuDevicePrimaryCtxGetState on device %d failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    if (!active)
        return CUDA_SUCCESS;
    if ((rc = DRV(cuDevicePrimaryCtxRetain)(raw, dev)) != CUDA_SUCCESS) {
        *raw = NULL;
        return cuctx__fail(rc, "%s: cuDevicePrimaryCtxRetain on device %d failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    }
    if ((rc = DRV(cuDevicePrimaryCtxRelease)(dev)) != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuDevicePrimaryCtxRelease on device %d failed: %s", fn, (int)dev,
                           cuctx_result_name(rc));
    if ((p = cuctx__primary_of(dev, 1)) != NULL)
        p->raw = *raw;
    return CUDA_SUCCESS;
}

/* ---- finding and holding ---------------------------------------------------- */

/* cuctx__me.entry.seen: the last two entries this thread looked up by address:
 * a thread's current context rarely changes between the creates made in
 * it, and a scope looks up the context it leaves. */

/* Under the lock: whether the address of an entry being destroyed already
 * names a new context (its destroy has reached the driver, which gave the
 * address out again before the entry left the map). The closing entry's
 * fields stay put until it is freed, which takes the lock. */
static int retaken_while_closing(uint64_t id, CUcontext raw)
{
    struct cuctx_slot *s = cuctx__closing_slot(id, KIND_ENTRY);
    unsigned long long now = 0;
    return s && DRV(cuCtxGetId) && DRV(cuCtxGetId)(raw, &now) == CUDA_SUCCESS && now != s->u.entry.ctx_id;
}

/* The entry for raw, registered if new (*fresh: its id was just read). */
static CUresult entry_lookup(CUcontext raw, const char *fn, int counted, uint64_t *out, int *fresh)
{
    *fresh = 0;
    for (int i = 0; i < 2; i++) {
        if (cuctx__me.entry.seen[i].raw == raw && cuctx__alive(cuctx__me.entry.seen[i].entry, KIND_ENTRY)) {
            *out = cuctx__me.entry.seen[i].entry;
            return CUDA_SUCCESS;
        }
    }
    CUresult rc = CUDA_SUCCESS;
    cuctx__ctx_lock();
    uint64_t id = cuctx__map_find(raw);
    if (id && cuctx__closing(id, KIND_ENTRY) && !retaken_while_closing(id, raw))
        rc = cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: context %p is being destroyed", fn, (void *)raw);
    else if (id && cuctx__closing(id, KIND_ENTRY) && (rc = entry_register(raw, fn, counted, &id)) == CUDA_SUCCESS)
        *fresh = 1;
    else if (!(id && cuctx__alive(id, KIND_ENTRY)) && (rc = entry_register(raw, fn, counted, &id)) == CUDA_SUCCESS)
        *fresh = 1;
    cuctx__ctx_unlock();
    if (rc != CUDA_SUCCESS)
        return rc;
    cuctx__me.entry.seen[1] = cuctx__me.entry.seen[0];
    cuctx__me.entry.seen[0].raw = raw;
    cuctx__me.entry.seen[0].entry = id;
    *out = id;
    return CUDA_SUCCESS;
}

/* An entry held (s): its fields, and the id check where the driver
 * decides its life (check: the caller did not just read that id). quiet:
 * an ended context is not recorded as an error. */
static CUresult check_held(struct cuctx_slot *s, uint64_t entry, const char *fn, int quiet, int check,
                           struct cuctx_held *out)
{
    out->slot = NULL;
    out->id = entry;
    out->raw = s->u.entry.raw;
    if (check && s->u.entry.by_id) {
        unsigned long long now = 0;
        CUresult rc;
        CUCTX__LET_GO_ON_UNWIND
            rc = DRV(cuCtxGetId)(out->raw, &now);
        if (rc != CUDA_SUCCESS || now != s->u.entry.ctx_id) {
            cuctx__unhold(s, out->hazard);
            if (rc != CUDA_SUCCESS && !cuctx__gone(rc))
                return cuctx__fail(rc, "%s: cannot check context %p: cuCtxGetId failed: %s", fn,
                                   (void *)out->raw, cuctx_result_name(rc));
            /* Retired under the context lock, which is never taken while
             * an entry is held: a closer holding the lock may be draining
             * that entry (a sweep, a primary's last release). A thread
             * holding another entry leaves it to a later hold - the hold
             * beside another lets go of both and holds this one again
             * (cuctx__entry_hold_beside) - or to the sweep. */
            if (!cuctx__thread_holds_entry())
                entry_retire(entry);
            return quiet ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                         : cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED,
                                       "%s: context %p has been destroyed by its owner", fn, (void *)out->raw);
        }
    }
    out->slot = s;
    return CUDA_SUCCESS;
}

/* Holds an entry, waiting out a close that may yet be abandoned, then checks it. */
static CUresult hold_waiting(uint64_t entry, const char *fn, int quiet, int check, struct cuctx_held *out)
{
    struct cuctx_slot *s;
    out->slot = NULL;
    /* A closing entry may be reopened (a primary context that lived on past
     * cuctx's last release): wait for the verdict - but not while this
     * thread holds any entry or the context lock: the closer may be waiting
     * for that entry to drain, or for the lock. A pin or hold of a child (a
     * child call's own, taken before its entry is held) blocks no entry's
     * closer, so a child call waits: its context may live on. */
    while (!(s = cuctx__hold_own(entry, KIND_ENTRY, &out->hazard))) {
        if (!cuctx__closing(entry, KIND_ENTRY) || cuctx__thread_holds_entry() || cuctx__me.lock.held)
            return quiet ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                         : cuctx__fail(CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: the context has been destroyed", fn);
        CUCTX__LET_GO_ON_UNWIND     /* (a child call's pin or hold of its child) */
            cuctx__wait_closed(entry, KIND_ENTRY);
    }
    return check_held(s, entry, fn, quiet, check, out);
}

CUresult cuctx__entry_hold_slow(uint64_t entry, const char *fn, int quiet, struct cuctx_held *out,
                                struct cuctx_slot *s)
{
    return s ? check_held(s, entry, fn, quiet, 1, out) : hold_waiting(entry, fn, quiet, 1, out);
}

CUresult cuctx__entry_hold_beside(struct cuctx_held *a, uint64_t b, const char *fn, int quiet,
                                  struct cuctx_held *out)
{
    for (;;) {
        if (b == a->id) {       /* one context: a's hold serves both */
            *out = *a;
            out->slot = NULL;
            return CUDA_SUCCESS;
        }
        CUresult rc = cuctx__entry_hold_quiet(b, out);
        if (rc == CUDA_SUCCESS)
            return rc;
        uint64_t ea = a->id;
        cuctx__entry_release(a);
        /* b may be closing until the driver's verdict: its hold, with
         * nothing held now, waits for that where it may and says why not;
         * then both are taken again */
        if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && (rc = cuctx__entry_hold_as(b, fn, quiet, out)) == CUDA_SUCCESS) {
            cuctx__entry_release(out);
            if ((rc = cuctx__entry_hold_as(ea, fn, quiet, a)) == CUDA_SUCCESS)
                continue;
        }
        return rc;
    }
}

static CUresult hold_raw(CUcontext raw, const char *fn, int counted, struct cuctx_held *out)
{
    uint64_t id = 0;
    int fresh = 0;
    out->slot = NULL;
    /* Twice at most: when the entry found has just ended because a new
     * context took the address, the second lookup registers that one. */
    for (int round = 0;; round++) {
        CUresult rc = entry_lookup(raw, fn, counted, &id, &fresh);
        if (rc == CUDA_SUCCESS)
            rc = hold_waiting(id, round ? fn : "cuctx", !round, !fresh, out);
        if (rc != CUDA_ERROR_CONTEXT_IS_DESTROYED || round)
            return rc;
    }
}

CUresult cuctx__entry_hold_raw(CUcontext raw, const char *fn, struct cuctx_held *out)
{
    return hold_raw(raw, fn, 0, out);
}

CUresult cuctx__entry_hold_borrowed(CUcontext raw, const char *fn, struct cuctx_held *out)
{
    return hold_raw(raw, fn, 1, out);
}

CUresult cuctx__ctx_hold_slow(cuctx_ctx ctx, const char *fn, struct cuctx_held *out)
{
    out->slot = NULL;
    if (ctx.id == 0) {
        CUcontext cur = NULL;
        CUresult rc = DRV(cuCtxGetCurrent)(&cur);
        if (rc != CUDA_SUCCESS)
            return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, cuctx_result_name(rc));
        if (!cur)
            return cuctx__fail(CUDA_ERROR_INVALID_CONTEXT, "%s: no context given and none is current", fn);
        return cuctx__entry_hold_raw(cur, fn, out);
    }
    /* The fast path found the handle not live (stale, being destroyed, of
     * another kind, or never valid). */
    if (cuctx__id_kind(ctx.id) != KIND_CTX_HANDLE)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: handle %#llx is not a context handle", fn,
                           (unsigned long long)ctx.id);
    return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: context handle %#llx is stale or invalid", fn,
                       (unsigned long long)ctx.id);
}
