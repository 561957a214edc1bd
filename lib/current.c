/* SPDX-License-Identifier: MIT */
/* current.c - the calling thread's current context: switching for one
 * driver call, and the count of stack levels cuctx left pushed, which
 * scopes use to take back exactly what was pushed inside them. */
#include "internal.h"

/* cuCtxGetCurrent failed, or answered another context: push raw. */
CUresult cuctx__switch_slow(CUcontext raw, CUresult rc, const char *fn, struct cuctx_switch *sw)
{
    if (rc == CUDA_SUCCESS) {
        rc = DRV(cuCtxPushCurrent)(raw);
        sw->pushed = rc == CUDA_SUCCESS;
    }
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cannot make context %p current: %s", fn, (void *)raw, cuctx_result_name(rc));
    return CUDA_SUCCESS;
}

void cuctx__switch_back_slow(struct cuctx_switch *sw, const char *fn)
{
    CUcontext popped;
    sw->pushed = 0;
    CUresult rc = DRV(cuCtxPopCurrent)(&popped);
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot restore the previous context: cuCtxPopCurrent failed: %s", fn,
                      cuctx_result_name(rc));
}

CUresult cuctx__current_is(unsigned long long ctx_id, int *is)
{
    unsigned long long now = 0;
    *is = 1;
    if (!DRV(cuCtxGetId) || ctx_id == 0)
        return CUDA_SUCCESS;
    CUresult rc = DRV(cuCtxGetId)(NULL, &now);
    if (cuctx__gone(rc) || (rc == CUDA_SUCCESS && now != ctx_id))
        *is = 0;
    return cuctx__gone(rc) ? CUDA_SUCCESS : rc;
}

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
    CUcontext cur = NULL, popped = NULL;
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
    rc = DRV(cuCtxPopCurrent)(&popped);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxPopCurrent failed: %s", fn, cuctx_result_name(rc));
    cuctx__popped();
    return CUDA_SUCCESS;
}
