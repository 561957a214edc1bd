/* SPDX-License-Identifier: MIT */
/* current.c - the calling thread's current context: switching for one
 * driver call, and the count of stack levels cuctx left pushed, which
 * scopes use to take back exactly what was pushed inside them. */
#include "config.h"

#include "current.h"
#include "apart.h"
#include "driver.h"
#include "error.h"
#include "thread.h"

/* cuCtxGetCurrent failed, or answered another context: push raw. */
CUresult cuctx__switch_slow(CUcontext raw, CUresult rc, const char *fn, struct cuctx_switch *sw)
{
    if (rc == CUDA_SUCCESS) {
        sw->raw = raw;
        rc = DRV(cuCtxPushCurrent)(raw);
        sw->pushed = rc == CUDA_SUCCESS;
        if (rc != CUDA_SUCCESS)
            sw->raw = NULL;
    }
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cannot make context %p current: %s", fn, (void *)raw, cuctx_result_name(rc));
    return CUDA_SUCCESS;
}

void cuctx__switch_back_slow(struct cuctx_switch *sw, const char *fn)
{
    CUcontext popped;
    CUresult rc = DRV(cuCtxPopCurrent)(&popped);
    sw->pushed = 0;
    sw->raw = NULL;
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

CUresult cuctx__create_pushed(CUcontext *raw, unsigned flags, CUdevice dev)
{
    CUresult rc = DRV(cuCtxCreate)(raw, flags, dev);
    if (rc == CUDA_SUCCESS)
        cuctx__me.current.pushes++;
    cuctx__me.current.top = 0;
    return rc;
}

CUresult cuctx__destroy_pushed(CUcontext raw)
{
    CUresult rc;
    CUCTX__APART_FROM_POOLS
        rc = DRV(cuCtxDestroy)(raw);
    if (rc == CUDA_SUCCESS && cuctx__me.current.pushes)
        cuctx__me.current.pushes--;
    cuctx__me.current.top = 0;
    return rc;
}

CUresult cuctx__destroy_popping(CUcontext raw, CUresult *cur_rc)
{
    CUcontext cur = NULL;
    if ((*cur_rc = DRV(cuCtxGetCurrent)(&cur)) != CUDA_SUCCESS)
        *cur_rc = DRV(cuCtxGetCurrent)(&cur);
    CUresult rc;
    CUCTX__APART_FROM_POOLS
        rc = DRV(cuCtxDestroy)(raw);
    if (rc == CUDA_SUCCESS && *cur_rc == CUDA_SUCCESS && cur == raw && cuctx__me.current.pushes)
        cuctx__me.current.pushes--;
    cuctx__me.current.top = 0;
    return rc;
}
