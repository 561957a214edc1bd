/* SPDX-License-Identifier: MIT */
/* stream.c - cuctx_stream: what is particular to streams. */
#include "config.h"

#include "claim.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

static CUresult destroy(uint64_t raw) { return DRV(cuStreamDestroy)((CUstream)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__stream_kind = {0, destroy, NULL};

struct stream_args { unsigned flags; int priority; };

static CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct stream_args *a = arg;
    CUstream s = NULL;
    CUresult rc = DRV(cuStreamCreateWithPriority)(&s, a->flags, a->priority);
    *raw = (uint64_t)(uintptr_t)s;
    *size = CUCTX__STREAM_FLAGS_KNOWN | (a->flags & CU_STREAM_NON_BLOCKING);
    return rc == CUDA_SUCCESS ? rc
         : cuctx__fail(rc, "cuctx_stream_create: cuStreamCreateWithPriority(flags %#x, priority %d) failed: %s",
                       a->flags, a->priority, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_stream_create_at(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct stream_args a = {flags, priority};
    return cuctx__child_create(out ? &out->id : NULL, KIND_STREAM, ctx, "cuctx_stream_create", make, &a, &site);
}

CUCTX_API CUresult (cuctx_stream_create)(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority)
{
    return cuctx_stream_create_at(out, ctx, flags, priority, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_stream_adopt_at(cuctx_stream *out, cuctx_ctx ctx, CUstream raw, int owned,
                                         const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_stream_adopt";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_STREAM, fn)) != CUDA_SUCCESS)
        return rc;
    if (raw == CU_STREAM_LEGACY || raw == CU_STREAM_PER_THREAD)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: %s is a default stream, not an object to adopt; name it %s", fn,
                           raw == CU_STREAM_LEGACY ? "CU_STREAM_LEGACY" : "CU_STREAM_PER_THREAD",
                           raw == CU_STREAM_LEGACY ? "CUCTX_STREAM_LEGACY" : "CUCTX_STREAM_PER_THREAD");
    return cuctx__child_adopt(out ? &out->id : NULL, KIND_STREAM, ctx, fn, (uint64_t)(uintptr_t)raw, 0, owned, &site);
}

CUCTX_API CUresult (cuctx_stream_adopt)(cuctx_stream *out, cuctx_ctx ctx, CUstream raw, int owned)
{
    return cuctx_stream_adopt_at(out, ctx, raw, owned, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_stream_ctx(cuctx_stream s, cuctx_ctx *out)
{
    return cuctx__child_ctx(s.id, KIND_STREAM, "cuctx_stream_ctx", out);
}

CUCTX_API CUresult cuctx_stream_destroy(cuctx_stream *s)
{
    return cuctx__child_destroy(s ? &s->id : NULL, KIND_STREAM, "cuctx_stream_destroy", &cuctx__stream_kind);
}

CUresult cuctx__stream_take(cuctx_stream s, int null_ok, const char *fn, struct cuctx_stream_arg *a)
{
    a->use.obj = NULL;
    a->use.entry.slot = NULL;
    a->current.slot = NULL;
    if (!(null_ok ? cuctx__stream_default(s.id, &a->raw) : cuctx__stream_named(s.id, &a->raw))) {
        CUresult rc = cuctx__child_use(s.id, KIND_STREAM, fn, &a->use);
        a->raw = (CUstream)(uintptr_t)a->use.raw;
        return rc;
    }
    CUCTX_INIT_OR_RETURN(fn);
    return cuctx__ctx_hold((cuctx_ctx){0}, fn, &a->current);
}

void cuctx__stream_done(struct cuctx_stream_arg *a)
{
    cuctx__entry_release(&a->current);
    cuctx__child_done(&a->use);
}

CUCTX_API CUresult cuctx_stream_synchronize(cuctx_stream s)
{
    static const char fn[] = "cuctx_stream_synchronize";
    struct cuctx_stream_arg a;
    CUresult rc = cuctx__stream_take(s, 0, fn, &a);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuStreamSynchronize)(a.raw);
    cuctx__stream_done(&a);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuStreamSynchronize failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_stream_wait_event(cuctx_stream s, cuctx_event ev)
{
    static const char fn[] = "cuctx_stream_wait_event";
    struct cuctx_use su, eu;
    struct cuctx_stream_arg sa;
    CUresult rc;
    if (cuctx__stream_named(s.id, &sa.raw)) {
        if ((rc = cuctx__stream_take(s, 0, fn, &sa)) != CUDA_SUCCESS)
            return rc;
        if ((rc = cuctx__child_use_beside(&sa.current, ev.id, KIND_EVENT, fn, &eu)) != CUDA_SUCCESS) {
            cuctx__stream_done(&sa);
            return rc;
        }
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuStreamWaitEvent)(sa.raw, (CUevent)(uintptr_t)eu.raw, 0);
        cuctx__child_done(&eu);
        cuctx__stream_done(&sa);
    } else {
        if ((rc = cuctx__child_use2(s.id, KIND_STREAM, ev.id, KIND_EVENT, fn, &su, &eu)) != CUDA_SUCCESS)
            return rc;
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuStreamWaitEvent)((CUstream)(uintptr_t)su.raw, (CUevent)(uintptr_t)eu.raw, 0);
        cuctx__child_done2(&su, &eu);
    }
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuStreamWaitEvent failed: %s", fn, cuctx_result_name(rc));
}

CUCTX_API CUstream cuctx_stream_raw(cuctx_stream s)
{
    return (CUstream)(uintptr_t)cuctx__child_value(s.id, KIND_STREAM, "cuctx_stream_raw", FIELD_RAW);
}
