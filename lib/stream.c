/* SPDX-License-Identifier: MIT */
/* stream.c - cuctx_stream: what is particular to streams. */
#include "config.h"

#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

static CUresult destroy(uint64_t raw) { return DRV(cuStreamDestroy)((CUstream)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__stream_kind = {0, destroy};

struct stream_args { unsigned flags; int priority; };

static CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct stream_args *a = arg;
    CUstream s = NULL;
    CUresult rc = DRV(cuStreamCreateWithPriority)(&s, a->flags, a->priority);
    *raw = (uint64_t)(uintptr_t)s;
    *size = 0;
    return rc == CUDA_SUCCESS ? rc
         : cuctx__fail(rc, "cuctx_stream_create: cuStreamCreateWithPriority(flags %#x, priority %d) failed: %s",
                       a->flags, a->priority, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_stream_create_at(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {file, func, line};
    struct stream_args a = {flags, priority};
    return cuctx__child_create(out ? &out->id : NULL, KIND_STREAM, ctx, "cuctx_stream_create", make, &a, &site);
}

CUCTX_API CUresult (cuctx_stream_create)(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority)
{
    return cuctx_stream_create_at(out, ctx, flags, priority, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_stream_destroy(cuctx_stream *s)
{
    return cuctx__child_destroy(s ? &s->id : NULL, KIND_STREAM, "cuctx_stream_destroy", &cuctx__stream_kind);
}

CUCTX_API CUresult cuctx_stream_synchronize(cuctx_stream s)
{
    static const char fn[] = "cuctx_stream_synchronize";
    struct cuctx_use u;
    CUresult rc = cuctx__child_use(s.id, KIND_STREAM, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = DRV(cuStreamSynchronize)((CUstream)(uintptr_t)u.raw);
    cuctx__child_done(&u);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuStreamSynchronize failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_stream_wait_event(cuctx_stream s, cuctx_event ev)
{
    static const char fn[] = "cuctx_stream_wait_event";
    struct cuctx_use su, eu;
    CUresult rc = cuctx__child_use2(s.id, KIND_STREAM, ev.id, KIND_EVENT, fn, &su, &eu);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = DRV(cuStreamWaitEvent)((CUstream)(uintptr_t)su.raw, (CUevent)(uintptr_t)eu.raw, 0);
    cuctx__child_done2(&su, &eu);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuStreamWaitEvent failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUstream cuctx_stream_raw(cuctx_stream s)
{
    uint64_t raw = 0;
    return cuctx__child_peek(s.id, KIND_STREAM, "cuctx_stream_raw", &raw, NULL) ? (CUstream)(uintptr_t)raw : NULL;
}
