/* SPDX-License-Identifier: MIT */
/* launch.c - cuctx_launch: a kernel launch on a cuctx stream, in the
 * stream's context. */
#include "config.h"

#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "tether.h"

static CUresult launch(CUfunction f, CUstream s, cuctx_dim3 grid, cuctx_dim3 block, size_t shared_bytes,
                       void **args, const char *fn)
{
    if (shared_bytes > 0xffffffffu)    /* cuLaunchKernel takes an unsigned int */
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: shared_bytes %zu is more than a launch can have", fn,
                           shared_bytes);
    CUresult rc = DRV(cuLaunchKernel)(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                      (unsigned)shared_bytes, s, args, NULL);
    if (rc != CUDA_SUCCESS)
        cuctx__fail(rc, "%s: cuLaunchKernel(grid %ux%ux%u, block %ux%ux%u, %zu shared bytes) failed: %s",
                    fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes, cuctx_result_name(rc));
    return rc;
}

/* Both launches: f in s's context. */
static CUresult launch_on(CUfunction f, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block, size_t shared_bytes,
                          void **args, const char *fn, const char *what)
{
    struct cuctx_use st;
    struct cuctx_switch sw;
    if (!f)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the %s is NULL", fn, what);
    CUCTX_INIT_OR_RETURN(fn);
    if (!DRV(cuLaunchKernel))
        return cuctx__fail(CUDA_ERROR_NOT_SUPPORTED, "%s: the driver has no cuLaunchKernel", fn);
    CUstream dflt;  /* {0}, CUCTX_STREAM_LEGACY, CUCTX_STREAM_PER_THREAD: the current context's */
    if (cuctx__stream_default(s.id, &dflt))
        return launch(f, dflt, grid, block, shared_bytes, args, fn);
    CUresult rc = cuctx__child_use(s.id, KIND_STREAM, fn, &st);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(&sw)
        if ((rc = cuctx__switch_to(st.entry.raw, fn, &sw)) == CUDA_SUCCESS) {
            rc = launch(f, (CUstream)(uintptr_t)st.raw, grid, block, shared_bytes, args, fn);
            cuctx__switch_back(&sw, fn);
        }
    cuctx__child_done(&st);
    return rc;
}

CUCTX_API CUresult (cuctx_launch)(CUfunction f, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block,
                                  size_t shared_bytes, void **args)
{
    return launch_on(f, s, grid, block, shared_bytes, args, "cuctx_launch", "function");
}

/* A library's kernel launches as a function of whichever context is
 * current: cuLaunchKernel takes it cast (the driver documents it so). */
CUCTX_API CUresult cuctx_launch_kernel(CUkernel k, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block,
                                       size_t shared_bytes, void **args)
{
    return launch_on((CUfunction)(void *)k, s, grid, block, shared_bytes, args, "cuctx_launch_kernel", "kernel");
}
