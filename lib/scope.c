/* SPDX-License-Identifier: MIT */
/* scope.c - the restore guard behind CUCTX_SCOPED, CUCTX_SCOPED_ELSE and
 * CUCTX_GUARD.
 *
 * Enter pushes the context (nothing, when it is current already); exit
 * pops every level cuctx pushed on the thread's stack since enter - its own
 * push and any context created inside - and so leaves the stack below the
 * scope as it was. The previous context comes back by that pop, never by
 * handing its address to the driver (which accepts a destroyed context and
 * crashes later). If it died inside the block it stays where it was, as the
 * driver left it. Should a new context have taken its address meanwhile,
 * that unrelated context is not left current.
 */
#include "config.h"

#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "thread.h"

#include <stdio.h>

/* How the previous context is known, in the scope's first reserved word
 * (0, as the ABI test wants of a plain enter: by its entry, prev_entry, or
 * not at all when it was dead at enter). A previous context that could not
 * be registered at enter (a driver question failed, not for being dead) is
 * known by its driver id alone, or not at all, when nothing is concluded
 * about its slot at exit. */
enum prev_known { PREV_BY_ENTRY = 0, PREV_BY_ID_ONLY, PREV_UNKNOWN };
#define PREV_KNOWN(scope) ((scope)->cuctx__reserved[0])
/* In the second reserved word, when the scope pushed nothing (its context
 * was current at enter, so the level it runs on is the previous context's
 * own): 1 + the thread's count of cuctx_ctx_set_current calls at enter.
 * Exit puts the previous context back on that level if a set replaced it
 * meanwhile. 0 when the scope pushed. */
#define PUSHED_NOTHING(scope) ((scope)->cuctx__reserved[1])

static enum prev_known prev_by_id(CUcontext prev, unsigned long long *ctx_id)
{
    CUresult rc = cuctx__ctx_id(prev, ctx_id);
    if (cuctx__gone(rc))
        return PREV_BY_ENTRY;   /* dead: prev_entry 0 */
    return rc == CUDA_SUCCESS && *ctx_id ? PREV_BY_ID_ONLY : PREV_UNKNOWN;
}

/* Which context the previous one is, checked by its id like any hold (a
 * stale entry at its address must not stand for it), and held only for
 * the moment it takes to read. */
static void identify_prev(cuctx_scope *scope, CUcontext prev, const char *fn)
{
    struct cuctx_held o;
    cuctx__quiet(1);
    CUresult rc = cuctx__entry_hold_raw(prev, fn, &o);
    cuctx__quiet(0);
    if (rc == CUDA_SUCCESS) {
        scope->prev_entry = o.id;
        scope->prev_ctx_id = o.slot->u.entry.by_id ? o.slot->u.entry.ctx_id : 0;
        cuctx__entry_release(&o);
    } else if (rc != CUDA_ERROR_CONTEXT_IS_DESTROYED) {
        PREV_KNOWN(scope) = prev_by_id(prev, &scope->prev_ctx_id);
    }
}

/* The previous context when it is one cuctx owns and this thread looked it
 * up lately: its entry needs no hold, having no driver id to check. */
static inline int prev_seen(cuctx_scope *scope, CUcontext prev)
{
    for (int i = 0; i < 2; i++) {
        if (cuctx__me.entry.seen[i].raw != prev)
            continue;
        uint64_t id = cuctx__me.entry.seen[i].entry;
        struct cuctx_slot *e = cuctx__slot_own(cuctx__id_index(id));
        if (!cuctx__alive_own(id, KIND_ENTRY) || __atomic_load_n(&e->u.entry.by_id, __ATOMIC_RELAXED)
            || !cuctx__peek_valid(e, id, KIND_ENTRY))
            return 0;
        scope->prev_entry = id;
        return 1;
    }
    return 0;
}

/* The previous context is the one entered: known from its hold. */
static inline void prev_is_target(cuctx_scope *scope, const struct cuctx_held *o)
{
    scope->prev_entry = o->id;
    scope->prev_ctx_id = o->slot->u.entry.by_id ? o->slot->u.entry.ctx_id : 0;
}

static inline __attribute__((always_inline)) CUresult enter(cuctx_scope *scope, cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_scope_enter";
    struct cuctx_held o;
    CUcontext prev = NULL;
    scope->prev_raw = NULL;
    scope->prev_entry = 0;
    scope->prev_ctx_id = 0;
    scope->depth = 0;
    scope->state = CUCTX__SCOPE_FAILED;
    scope->cuctx__reserved[0] = scope->cuctx__reserved[1] = 0;
    CUCTX_INIT_OR_RETURN(fn);
    if (ctx.id == 0)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: the context handle is {0}", fn);
    CUresult rc = DRV(cuCtxGetCurrent)(&prev);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, cuctx_result_name(rc));
    if ((rc = cuctx__ctx_hold(ctx, fn, &o)) != CUDA_SUCCESS)
        return rc;
    /* Which context the previous one is: ctx itself (its hold says), an
     * owned one this thread met lately (no lock, no driver call), or else
     * looked up, maybe registered under the lock - never waited for while
     * holding an entry, so ctx is let go meanwhile. A dead previous context
     * is no failure of the enter; one that could not be identified is left
     * alone at exit. */
    /* The address current may be a dead context's whose address ctx took
     * (ended on another thread while current here): then that level is not
     * ctx, and ctx is pushed over it. Asked by id; a failed question leaves
     * the address to decide. */
    int same = prev == o.raw;
    if (same && !cuctx__top_is(o.id)) {
        CUCTX__LET_GO_ON_UNWIND
            cuctx__current_is(o.slot->u.entry.ctx_id, &same);
        if (same)
            cuctx__top_found(o.id);
    }
    if (same) {
        prev_is_target(scope, &o);
    } else if (prev == o.raw) {
        scope->prev_entry = 0;      /* dead at enter */
    } else if (prev && !prev_seen(scope, prev)) {
        cuctx__entry_release(&o);
        identify_prev(scope, prev, fn);
        if ((rc = cuctx__ctx_hold(ctx, fn, &o)) != CUDA_SUCCESS)
            return rc;
    }
    scope->depth = cuctx__push_count();
    if (!same)
        CUCTX__LET_GO_ON_UNWIND
            rc = cuctx__push(o.raw, o.id);
    if (!same && rc != CUDA_SUCCESS) {
        cuctx__entry_release(&o);
        return cuctx__fail(rc, "%s: cuCtxPushCurrent failed: %s", fn, cuctx_result_name(rc));
    }
    PUSHED_NOTHING(scope) = same ? 1 + cuctx__set_count() : 0;
    cuctx__entry_release(&o);
    scope->prev_raw = prev;
    scope->state = CUCTX__SCOPE_ENTERED;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_scope_enter(cuctx_scope *scope, cuctx_ctx ctx)
{
    if (!scope)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_scope_enter: scope is NULL");
    return enter(scope, ctx);
}

/* After the pops the previous context's stack slot is on top again. When
 * a check the conclusion needs fails, the handler is told that the slot
 * was left unchecked. */
static void settle_prev_slow(const cuctx_scope *scope, const char *fn)
{
    unsigned long long now = 0;
    CUcontext top = NULL;
    if (!DRV(cuCtxGetId))
        return;     /* nothing to tell contexts apart by */
    if (PREV_KNOWN(scope) == PREV_UNKNOWN) {
        cuctx__report(CUDA_ERROR_UNKNOWN, "%s: the previous context %p could not be identified at enter; "
                      "left on the stack unchecked", fn, (void *)scope->prev_raw);
        return;
    }
    /* By its id where the driver has one (its entry may have ended with
     * the borrow that named it, entry.h, while the context lives on). */
    int alive = PREV_KNOWN(scope) == PREV_BY_ID_ONLY || scope->prev_ctx_id != 0
             || (scope->prev_entry && cuctx__alive(scope->prev_entry, KIND_ENTRY));
    unsigned long long want = scope->prev_ctx_id;
    /* (a live owned previous context never gets here: exit settles it.) One
     * whose entry is closing (being destroyed, or released by cuctx while
     * others may keep it) is the same context while the driver gives its
     * address the entry's id: the closing entry's id is read as a seqlock
     * reader, kept only if the entry is closing still. */
    if (!alive && scope->prev_entry && PREV_KNOWN(scope) == PREV_BY_ENTRY) {
        struct cuctx_slot *e = cuctx__closing_slot(scope->prev_entry, KIND_ENTRY);
        if (e) {
            unsigned long long id = __atomic_load_n(&e->u.entry.ctx_id, __ATOMIC_RELAXED);
            atomic_thread_fence(memory_order_acquire);  /* the read before the second look */
            if ((alive = cuctx__closing(scope->prev_entry, KIND_ENTRY)) && !want)
                want = id;
        }
    }
    CUresult rc = DRV(cuCtxGetId)(scope->prev_raw, &now);
    if (cuctx__gone(rc) || (rc == CUDA_SUCCESS && alive && now == want))
        return;     /* dead: left where it was; or the same live context */
    if (rc == CUDA_SUCCESS)
        rc = DRV(cuCtxGetCurrent)(&top);
    if (rc == CUDA_SUCCESS && top != scope->prev_raw)
        return;
    /* That level was cuctx's own when the scope's depth counts it (a
     * create's push): taken off the count too, or an enclosing scope would
     * pop a level below it. */
    if (rc == CUDA_SUCCESS)
        rc = cuctx__set_null(scope->depth > 0);
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot check the stack slot of the previous context %p, which may now be another "
                      "context's: %s", fn, (void *)scope->prev_raw, cuctx_result_name(rc));
}

/* A scope that pushed nothing runs on the previous context's own level:
 * if the block replaced it (cuctx_ctx_set_current), the previous context
 * goes back on it - while it lives, and unless a cuctx pop inside took that
 * level itself (then the one below is not the scope's). */
static void restore_own_level(const cuctx_scope *scope, const char *fn)
{
    CUcontext cur = NULL;
    unsigned long long now = 0;
    if (cuctx__push_count() < scope->depth)
        return;
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc == CUDA_SUCCESS && cur == scope->prev_raw)
        return;
    if (rc == CUDA_SUCCESS) {
        if (scope->prev_entry == 0 || PREV_KNOWN(scope) != PREV_BY_ENTRY
            || (scope->prev_ctx_id == 0 && !cuctx__alive(scope->prev_entry, KIND_ENTRY)))
            return;     /* (by its id where it has one, as above) */
        if (scope->prev_ctx_id != 0) {
            CUresult idrc = DRV(cuCtxGetId)(scope->prev_raw, &now);
            if (idrc != CUDA_SUCCESS || now != scope->prev_ctx_id)
                return;
        }
        rc = cuctx__put_back(scope->prev_raw);
    }
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot put the scope's context %p back on its level: %s", fn,
                      (void *)scope->prev_raw, cuctx_result_name(rc));
}

CUCTX_API void cuctx_scope_exit(cuctx_scope *scope)
{
    static const char fn[] = "cuctx_scope_exit";
    if (!scope || (scope->state != CUCTX__SCOPE_ENTERED && scope->state != CUCTX__SCOPE_RAN))
        return;
    scope->state = CUCTX__SCOPE_EXITED;
    for (unsigned n = cuctx__push_count(); n > scope->depth; n--) {
        CUresult rc = cuctx__pop();
        if (rc != CUDA_SUCCESS) {
            cuctx__report(rc, "%s: cannot pop a context pushed inside the scope: cuCtxPopCurrent failed: %s", fn,
                          cuctx_result_name(rc));
            return;
        }
    }
    if (PUSHED_NOTHING(scope) && PUSHED_NOTHING(scope) != 1 + cuctx__set_count())
        restore_own_level(scope, fn);
    /* An owned previous context that lives is where it was: nothing to ask. */
    if (scope->prev_raw && !(scope->prev_ctx_id == 0 && scope->prev_entry != 0
                             && cuctx__alive_own(scope->prev_entry, KIND_ENTRY)))
        settle_prev_slow(scope, fn);
}

/* The enter's own message, handed on to the error handler with what the
 * macro does about the failure. */
static void report_enter(CUresult rc, const char *macro, const char *then)
{
    char why[512];
    snprintf(why, sizeof why, "%s", cuctx_last_error_message());
    cuctx__report(rc, "%s: %s; %s", macro, why, then);
}

CUCTX_API cuctx_scope cuctx__scope_begin(cuctx_ctx ctx, int report)
{
    cuctx_scope s;
    CUresult rc = enter(&s, ctx);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0) && report)
        report_enter(rc, "CUCTX_SCOPED", "the block is skipped");
    return s;
}

CUCTX_API cuctx_scope cuctx__scope_guard(cuctx_ctx ctx)
{
    cuctx_scope s;
    CUresult rc = enter(&s, ctx);
    if (rc != CUDA_SUCCESS)
        report_enter(rc, "CUCTX_GUARD", "the block runs without the switch");
    return s;
}
