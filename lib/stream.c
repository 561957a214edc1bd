/* SPDX-License-Identifier: MIT */
/* stream.c - cuctx_stream: what is particular to streams. */
#include "config.h"

#include "apart.h"
#include "claim.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return cuctx__stream_destroy_raw((CUstream)(uintptr_t)raw); }

/* A stream that carried stream-ordered memory and may run apart from the
 * legacy stream (non-blocking, or adopted with flags unknown) waits for its
 * work before its destroy: its memory freed after it is freed on the
 * legacy stream (mem_async.c), which would not wait for that work, and the
 * real driver hands such memory on while a kernel queued there still
 * writes it (measured). A capturing stream has no work to wait for: the
 * synchronize ends its capture (900), and the destroy goes on. The wait
 * and the list of the streams not waited for are tether.c's: the destroy
 * of a green context makes the same wait for its streams (green.c). */
static CUresult destroy_slot(struct cuctx_slot *s, const char *fn)
{
    uint64_t flags = __atomic_load_n(&s->u.child.size, __ATOMIC_RELAXED);
    /* (one not waited for that could not be remembered is kept: the
     * destroy refused) */
    if ((flags & CUCTX__STREAM_CARRIED)
        && (!(flags & CUCTX__STREAM_FLAGS_KNOWN) || (flags & CU_STREAM_NON_BLOCKING))
        && cuctx__stream_wait_carried(s, fn) != CUDA_SUCCESS)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return cuctx__stream_destroy_raw((CUstream)(uintptr_t)s->u.child.raw);
}
const struct cuctx_child_kind cuctx__stream_kind = {0, destroy, destroy_slot};

struct stream_args { unsigned flags; int priority; };

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
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
    CUresult rc = cuctx__child_destroy(s ? &s->id : NULL, KIND_STREAM, "cuctx_stream_destroy", &cuctx__stream_kind);
    cuctx__kept_retry("cuctx_stream_destroy");     /* the frees a capture refused, its own among them (tether.h) */
    return rc;
}

CUresult cuctx__stream_take_current(const char *fn, struct cuctx_stream_arg *a)
{
    CUCTX_INIT_OR_RETURN(fn);
    return cuctx__ctx_hold((cuctx_ctx){0}, fn, &a->current);
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
