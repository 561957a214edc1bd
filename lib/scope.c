/* scope.c - the restore guard behind CUCTX_SCOPED and CUCTX_GUARD.
 *
 * Enter remembers the previous context with its registry entry; exit puts it
 * back only if that entry's generation is still alive, and otherwise leaves
 * no context current: the real driver accepts a destroyed context in
 * cuCtxSetCurrent and crashes the thread later. cuCtxSetCurrent (not push and
 * pop) because the entered context may be destroyed inside the block, which
 * pops it; a pop at exit would then pop the wrong one.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* prev_entry when the previous context was already dead at enter. */
#define PREV_DEAD UINT64_MAX

CUCTX_API CUresult cuctx_scope_enter(cuctx_scope *scope, cuctx_ctx ctx)
{
    static const char fn[] = "cuctx_scope_enter";
    struct cuctx_owner o = {0};
    CUcontext prev = NULL;
    uint64_t prev_entry = 0;
    if (!scope)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: scope is NULL", fn);
    memset(scope, 0, sizeof *scope);
    scope->state = CUCTX__SCOPE_FAILED;
    CUCTX_INIT_OR_RETURN(fn);
    if (ctx.id == 0)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: the context handle is {0}", fn);
    /* The previous context is looked up (maybe registered, under the
     * context lock) before ctx's entry is pinned: never hold a pin while
     * waiting for that lock. */
    CUresult rc = DRV(cuCtxGetCurrent)(&prev);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxGetCurrent failed: %s", fn, RN(rc));
    if (prev && cuctx__entry_for_raw(prev, fn, &prev_entry) != CUDA_SUCCESS)
        prev_entry = PREV_DEAD;
    if ((rc = cuctx__owner_acquire(ctx, fn, &o)) != CUDA_SUCCESS)
        return rc;
    if (prev == o.raw) {
        prev_entry = o.id;              /* already current: nothing to do either way */
    } else {
        rc = DRV(cuCtxSetCurrent)(o.raw);
        if (rc != CUDA_SUCCESS) {
            cuctx__owner_release(&o);
            return cuctx__fail(rc, "%s: cuCtxSetCurrent failed: %s", fn, RN(rc));
        }
    }
    scope->prev_raw = prev;
    scope->prev_entry = prev_entry;
    scope->entry = o.id;
    scope->state = CUCTX__SCOPE_ENTERED;
    cuctx__owner_release(&o);
    return CUDA_SUCCESS;
}

CUCTX_API void cuctx_scope_exit(cuctx_scope *scope)
{
    static const char fn[] = "cuctx_scope_exit";
    struct cuctx_owner prev;
    CUresult rc;
    if (!scope || (scope->state != CUCTX__SCOPE_ENTERED && scope->state != CUCTX__SCOPE_RAN))
        return;
    scope->state = CUCTX__SCOPE_EXITED;
    if (scope->prev_entry == scope->entry)
        return;
    if (scope->prev_entry == 0 || scope->prev_entry == PREV_DEAD) {
        rc = DRV(cuCtxSetCurrent)(NULL);
    } else if (cuctx__owner_pin(scope->prev_entry, NULL, &prev) == CUDA_SUCCESS) {
        /* held so that it cannot be destroyed during the call */
        rc = DRV(cuCtxSetCurrent)(scope->prev_raw);
        cuctx__owner_release(&prev);
    } else {
        cuctx__debug("%s: the previous context %p was destroyed inside the scope; leaving no context current",
                     fn, (void *)scope->prev_raw);
        rc = DRV(cuCtxSetCurrent)(NULL);
    }
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot restore the previous context: cuCtxSetCurrent failed: %s", fn, RN(rc));
}

CUCTX_API cuctx_scope cuctx__scope_guard(cuctx_ctx ctx)
{
    cuctx_scope s;
    CUresult rc = cuctx_scope_enter(&s, ctx);
    if (rc != CUDA_SUCCESS) {
        char why[512];
        snprintf(why, sizeof why, "%s", cuctx_last_error_message());
        cuctx__report(rc, "CUCTX_GUARD: %s; the block runs without the switch", why);
    }
    return s;
}
