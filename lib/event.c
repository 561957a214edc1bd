/* SPDX-License-Identifier: MIT */
/* event.c - cuctx_event: what is particular to events. */
#include "config.h"

#include "cuctx.h"
#include "context.h"
#include "current.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuEventDestroy)((CUevent)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__event_kind = {0, destroy, NULL};

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    CUevent ev = NULL;
    CUresult rc = DRV(cuEventCreate)(&ev, *(unsigned *)arg);
    *raw = (uint64_t)(uintptr_t)ev;
    *size = 0;
    return rc == CUDA_SUCCESS ? rc
         : cuctx__fail(rc, "cuctx_event_create: cuEventCreate(flags %#x) failed: %s", *(unsigned *)arg, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_event_create_at(cuctx_event *out, cuctx_ctx ctx, unsigned flags,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return cuctx__child_create(out ? &out->id : NULL, KIND_EVENT, ctx, "cuctx_event_create", make, &flags, &site);
}

CUCTX_API CUresult (cuctx_event_create)(cuctx_event *out, cuctx_ctx ctx, unsigned flags)
{
    return cuctx_event_create_at(out, ctx, flags, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_event_adopt_at(cuctx_event *out, cuctx_ctx ctx, CUevent raw, int owned,
                                        const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return cuctx__child_adopt(out ? &out->id : NULL, KIND_EVENT, ctx, "cuctx_event_adopt", (uint64_t)(uintptr_t)raw, 0,
                              owned, &site);
}

CUCTX_API CUresult (cuctx_event_adopt)(cuctx_event *out, cuctx_ctx ctx, CUevent raw, int owned)
{
    return cuctx_event_adopt_at(out, ctx, raw, owned, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_event_ctx(cuctx_event ev, cuctx_ctx *out)
{
    return cuctx__child_ctx(ev.id, KIND_EVENT, "cuctx_event_ctx", out);
}

CUCTX_API CUresult cuctx_event_destroy(cuctx_event *ev)
{
    return cuctx__child_destroy(ev ? &ev->id : NULL, KIND_EVENT, "cuctx_event_destroy", &cuctx__event_kind);
}

/* The driver call, checked and named, for the simple event operations. */
static CUresult event_call(cuctx_event ev, const char *fn, const char *call, CUresult (*op)(CUevent))
{
    struct cuctx_use u;
    CUresult rc = cuctx__child_use(ev.id, KIND_EVENT, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = op((CUevent)(uintptr_t)u.raw);
    cuctx__child_done(&u);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
        cuctx__fail(rc, "%s: %s failed: %s", fn, call, cuctx_result_name(rc));
    return rc;
}

static CUresult do_sync(CUevent e) { return DRV(cuEventSynchronize)(e); }
static CUresult do_query(CUevent e) { return DRV(cuEventQuery)(e); }

CUCTX_API CUresult cuctx_event_synchronize(cuctx_event ev)
{
    return event_call(ev, "cuctx_event_synchronize", "cuEventSynchronize", do_sync);
}

CUCTX_API CUresult cuctx_event_query(cuctx_event ev)
{
    return event_call(ev, "cuctx_event_query", "cuEventQuery", do_query);
}

CUCTX_API CUresult cuctx_event_record(cuctx_event ev, cuctx_stream s)
{
    static const char fn[] = "cuctx_event_record";
    struct cuctx_use e, st = {0};
    struct cuctx_switch sw;
    CUstream dflt;
    int by_default = cuctx__stream_default(s.id, &dflt);
    CUresult rc = !by_default ? cuctx__child_use2(ev.id, KIND_EVENT, s.id, KIND_STREAM, fn, &e, &st)
                              : cuctx__child_use(ev.id, KIND_EVENT, fn, &e);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!by_default) {
        if (st.entry.id != e.entry.id && !cuctx__entry_green_over(&st.entry, &e.entry)) {
            rc = cuctx__fail(CUDA_ERROR_INVALID_CONTEXT,
                             "%s: the event and the stream belong to different contexts; the driver records an event only on a stream of its own context (or of a green context over it)",
                             fn);
            goto out;
        }
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuEventRecord)((CUevent)(uintptr_t)e.raw, (CUstream)(uintptr_t)st.raw);
    } else {
        /* a default stream is the current context's: make it the event's */
        int switched = 0;
        CUCTX__UNWOUND_LETS_GO(&sw)
            if ((rc = cuctx__switch_to(e.entry.raw, fn, &sw)) == CUDA_SUCCESS) {
                switched = 1;
                rc = DRV(cuEventRecord)((CUevent)(uintptr_t)e.raw, dflt);
                cuctx__switch_back(&sw, fn);
            }
        if (!switched)
            goto out;
    }
    if (rc != CUDA_SUCCESS)
        cuctx__fail(rc, "%s: cuEventRecord failed: %s", fn, cuctx_result_name(rc));
out:
    cuctx__child_done2(&e, &st);
    return rc;
}

CUCTX_API CUresult cuctx_event_elapsed_ms(cuctx_event start, cuctx_event end, float *ms)
{
    static const char fn[] = "cuctx_event_elapsed_ms";
    struct cuctx_use a, b;
    float v = 0;
    if (!ms)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: ms is NULL", fn);
    CUresult rc = cuctx__child_use2(start.id, KIND_EVENT, end.id, KIND_EVENT, fn, &a, &b);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuEventElapsedTime)(&v, (CUevent)(uintptr_t)a.raw, (CUevent)(uintptr_t)b.raw);
    cuctx__child_done2(&a, &b);
    if (rc == CUDA_SUCCESS)
        *ms = v;
    else
        cuctx__fail(rc, "%s: cuEventElapsedTime failed: %s (events made with CU_EVENT_DISABLE_TIMING, or not both recorded and complete?)",
                    fn, cuctx_result_name(rc));
    return rc;
}

CUCTX_API CUevent cuctx_event_raw(cuctx_event ev)
{
    return (CUevent)(uintptr_t)cuctx__child_value(ev.id, KIND_EVENT, "cuctx_event_raw", FIELD_RAW);
}
