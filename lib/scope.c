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
#include "internal.h"

#include <stdio.h>

/* prev_entry of a previous context that could not be registered at enter
 * (a driver question failed, not for being dead): known by its driver id
 * alone, or not at all, when nothing is concluded about its slot at exit. */
#define PREV_ID_ONLY (UINT64_MAX - 1)
#define PREV_UNKNOWN UINT64_MAX
/* In depth: the scope pushed nothing (its context was current at enter),
 * so the level it runs on is the previous context's own. */
#define SCOPE_NO_PUSH (1u << 31)
static inline unsigned scope_depth(const cuctx_scope *scope) { return scope->depth & ~SCOPE_NO_PUSH; }

static uint64_t prev_by_id(CUcontext prev, unsigned long long *ctx_id)
{
    CUresult rc = cuctx__ctx_id(prev, ctx_id);
    if (cuctx__gone(rc))
        return 0;
    return rc == CUDA_SUCCESS && *ctx_id ? PREV_ID_ONLY : PREV_UNKNOWN;
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
    } else {
        scope->prev_entry = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED ? 0 : prev_by_id(prev, &scope->prev_ctx_id);
    }
}

/* The previous context when it is one cuctx owns and this thread looked it
 * up lately: its entry needs no hold, having no driver id to check. */
static inline int prev_seen(cuctx_scope *scope, CUcontext prev)
{
    for (int i = 0; i < 2; i++) {
        if (cuctx__me.seen[i].raw != prev)
            continue;
        uint64_t id = cuctx__me.seen[i].entry;
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
     * (destroyed on another thread while current here): then it is no
     * level of ctx, and ctx is pushed over it. */
    int same = prev == o.raw;
    if (same)
        cuctx__current_is(o.slot->u.entry.ctx_id, &same);  /* unsure: the address decides, as before */
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
    if (!same) {
        rc = DRV(cuCtxPushCurrent)(o.raw);
        if (rc != CUDA_SUCCESS) {
            cuctx__entry_release(&o);
            return cuctx__fail(rc, "%s: cuCtxPushCurrent failed: %s", fn, cuctx_result_name(rc));
        }
        cuctx__pushed();
    } else {
        scope->depth |= SCOPE_NO_PUSH;
    }
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
    if (scope->prev_entry == PREV_UNKNOWN) {
        cuctx__report(CUDA_ERROR_UNKNOWN, "%s: the previous context %p could not be identified at enter; "
                      "left on the stack unchecked", fn, (void *)scope->prev_raw);
        return;
    }
    int alive = scope->prev_entry == PREV_ID_ONLY
             || (scope->prev_entry && cuctx__alive(scope->prev_entry, KIND_ENTRY));
    /* (a live owned previous context never gets here: exit settles it) */
    CUresult rc = DRV(cuCtxGetId)(scope->prev_raw, &now);
    if (cuctx__gone(rc) || (rc == CUDA_SUCCESS && alive && now == scope->prev_ctx_id))
        return;     /* dead: left where it was; or the same live context */
    if (rc == CUDA_SUCCESS)
        rc = DRV(cuCtxGetCurrent)(&top);
    if (rc == CUDA_SUCCESS && top != scope->prev_raw)
        return;
    if (rc == CUDA_SUCCESS && (rc = DRV(cuCtxSetCurrent)(NULL)) == CUDA_SUCCESS && scope_depth(scope) > 0)
        cuctx__popped();    /* that level was cuctx's own (a create's push): counted off, or an
                               enclosing scope would pop a level below it */
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot check the stack slot of the previous context %p, which may now be another "
                      "context's: %s", fn, (void *)scope->prev_raw, cuctx_result_name(rc));
}

/* A scope that pushed nothing ran on the previous context's own level: a
 * cuctx_ctx_set_current inside replaced it there, where a scope that
 * pushed would have had it popped. Put the previous context back if it is
 * the same live context (by its entry, and by its driver id where others
 * can end it); a dead one is left as the driver left the level. */
static void restore_own_level(const cuctx_scope *scope, const char *fn)
{
    CUcontext cur = NULL;
    unsigned long long now = 0;
    if (cuctx__push_count() < scope_depth(scope))
        return;     /* a cuctx pop inside took the level itself: the one below is not the scope's */
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    if (rc == CUDA_SUCCESS && cur == scope->prev_raw)
        return;
    if (rc == CUDA_SUCCESS) {
        if (scope->prev_entry == 0 || scope->prev_entry >= PREV_ID_ONLY
            || !cuctx__alive(scope->prev_entry, KIND_ENTRY))
            return;
        if (scope->prev_ctx_id != 0) {
            CUresult idrc = DRV(cuCtxGetId)(scope->prev_raw, &now);
            if (idrc != CUDA_SUCCESS || now != scope->prev_ctx_id)
                return;
        }
        rc = DRV(cuCtxSetCurrent)(scope->prev_raw);
    }
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot put the scope's context %p back on its level: %s", fn,
                      (void *)scope->prev_raw, cuctx_result_name(rc));
}

CUCTX_API void cuctx_scope_exit(cuctx_scope *scope)
{
    static const char fn[] = "cuctx_scope_exit";
    CUcontext popped;
    if (!scope || (scope->state != CUCTX__SCOPE_ENTERED && scope->state != CUCTX__SCOPE_RAN))
        return;
    scope->state = CUCTX__SCOPE_EXITED;
    for (unsigned n = cuctx__push_count(); n > scope_depth(scope); n--) {
        CUresult rc = DRV(cuCtxPopCurrent)(&popped);
        if (rc != CUDA_SUCCESS) {
            cuctx__report(rc, "%s: cannot pop a context pushed inside the scope: cuCtxPopCurrent failed: %s", fn,
                          cuctx_result_name(rc));
            return;
        }
        cuctx__popped();
    }
    if (scope->depth & SCOPE_NO_PUSH)
        restore_own_level(scope, fn);
    /* An owned previous context that lives is where it was: nothing to ask. */
    if (scope->prev_raw && !(scope->prev_ctx_id == 0 && scope->prev_entry != 0 && scope->prev_entry < PREV_ID_ONLY
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
