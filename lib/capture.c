/* SPDX-License-Identifier: MIT */
/* capture.c - stream capture into a cuctx_graph: cuctx_capture_begin and
 * _end, and the three steps of CUCTX_CAPTURE.
 *
 * The capture holds nothing between its begin and its end: not the
 * stream's pin (the block may destroy the stream, whose destroy would wait
 * for that pin on this very thread), not its context. The end looks the
 * stream up again by its handle; a stream destroyed inside took its
 * capture with it (the driver answers 0 and discards it, measured), and a
 * context ended inside took both. Neither begin nor end calls anything a
 * capture forbids: a pin, a hold, the driver's begin or end, and at the end a
 * cuGraphDestroy of an abandoned graph. The begin and end exclude cuctx's
 * synchronizes of the stream's context (context.h: together they crash the
 * real driver). The begin and end name the stream,
 * which knows its context: no switch is needed (the driver's begin and end
 * take no context; measured to work with none current). */
#include "config.h"

#include "apart.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "graph.h"
#include "ids.h"
#include "init.h"
#include "tether.h"

#include <stdio.h>

static CUresult need_capture(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "stream capture", "CUDA 10.1 or newer needed", CUCTX__DRV_AT(cuStreamBeginCapture),
                               CUCTX__DRV_AT(cuStreamEndCapture), CUCTX__DRV_AT(cuGraphDestroy));
}

/* The statement after it: a begin's or an end's driver call on the stream
 * of st (a struct cuctx_use), covered for a cancel (tether.h), with the
 * synchronizes of its context kept out (context.h). */
#define CAPTURE_CALL(st) CUCTX__UNWOUND_LETS_GO(NULL) CUCTX__SYNC_ALONE((st).entry.id)

/* The begin behind both forms; the site is the graph's. */
static CUresult begin(cuctx_capture *c, cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode, const char *fn)
{
    struct cuctx_use st;
    CUstream dflt;
    CUresult rc;
    c->state = CUCTX__CAPTURE_ENDED;
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    if ((rc = cuctx__claim(&out->id, KIND_GRAPH, fn)) != CUDA_SUCCESS)
        return rc;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        && mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: mode %d is not a CUstreamCaptureMode", fn, (int)mode);
    if (cuctx__stream_default(s.id, &dflt))
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: the stream is a default stream by name; capture needs a stream of cuctx_stream_create",
                           fn);
    if ((rc = cuctx__ensure_init(fn)) != CUDA_SUCCESS || (rc = need_capture(fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__child_use(s.id, KIND_STREAM, fn, &st)) != CUDA_SUCCESS)
        return rc;
    /* The end finds the stream through its handle: one that only tracks a
     * stream made elsewhere could be destroyed inside the block while the
     * stream lives on, capturing, beyond cuctx's reach. */
    if (__atomic_load_n(&st.obj->u.child.site.unowned, __ATOMIC_RELAXED)) {
        cuctx__child_done(&st);
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: the stream handle only tracks a stream made elsewhere (cuctx_stream_adopt, owned 0): "
                           "a capture needs a stream cuctx destroys (cuctx_stream_create, or adopted owned)", fn);
    }
    CAPTURE_CALL(st)
        rc = DRV(cuStreamBeginCapture)((CUstream)(uintptr_t)st.raw, mode);
    if (rc != CUDA_SUCCESS)
        cuctx__fail(rc, "%s: cuStreamBeginCapture failed: %s%s", fn, cuctx_result_name(rc),
                    rc == CUDA_ERROR_ILLEGAL_STATE ? " (the stream is capturing already)" : "");
    cuctx__child_done(&st);
    if (rc != CUDA_SUCCESS)
        return rc;
    c->stream = s.id;
    c->out = out;
    c->state = CUCTX__CAPTURE_BEGUN;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_capture_begin_at(cuctx_capture *c, cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode,
                                          const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_capture_begin";
    if (!c)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the capture is NULL", fn);
    *c = (cuctx_capture){.file = file, .func = func, .line = line, .report = 0};
    return begin(c, s, out, mode, fn);
}

CUCTX_API CUresult (cuctx_capture_begin)(cuctx_capture *c, cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode)
{
    return cuctx_capture_begin_at(c, s, out, mode, NULL, 0, NULL);
}

/* The end: the driver's, then the graph kept or destroyed. */
static CUresult end(cuctx_capture *c, int keep, const char *fn)
{
    struct cuctx_use st;
    CUgraph g = NULL;
    CUresult rc;
    if (c->state == CUCTX__CAPTURE_ENDED)
        return CUDA_SUCCESS;
    c->state = CUCTX__CAPTURE_ENDED;
    if ((rc = cuctx__child_use(c->stream, KIND_STREAM, fn, &st)) != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: no graph: the capturing stream was destroyed, or its context ended, inside the "
                               "capture (%s)", fn, cuctx_result_name(rc));
    CAPTURE_CALL(st)
        rc = DRV(cuStreamEndCapture)((CUstream)(uintptr_t)st.raw, &g);
    if (rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        cuctx__fail(rc, "%s: no graph: the driver invalidated the capture (a call it forbids during a capture "
                        "was made inside: an allocation, a synchronize, a query of the stream)", fn);
    else if (rc != CUDA_SUCCESS)
        cuctx__fail(rc, "%s: cuStreamEndCapture failed: %s", fn, cuctx_result_name(rc));
    cuctx__child_done(&st);
    cuctx__kept_retry(fn);     /* the frees a capture refused (tether.h) */
    if (rc != CUDA_SUCCESS) {
        if (g)
            DRV(cuGraphDestroy)(g);
        return rc;
    }
    if (!keep) {
        rc = g ? DRV(cuGraphDestroy)(g) : CUDA_SUCCESS;
        return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuGraphDestroy of the abandoned graph failed: %s", fn,
                                                     cuctx_result_name(rc));
    }
    struct cuctx_site site = {.file = c->file, .func = c->func, .line = c->line};
    return cuctx__graph_take(&c->out->id, g, fn, &site);
}

CUCTX_API CUresult cuctx_capture_end(cuctx_capture *c, int keep)
{
    if (!c)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_capture_end: the capture is NULL");
    return end(c, keep, "cuctx_capture_end");
}

/* ---- CUCTX_CAPTURE -------------------------------------------------------- */

/* The failure just recorded, to the error handler (its message names
 * CUCTX_CAPTURE already: the begin and end are called by that name). */
static void report_last(const char *what)
{
    char why[512];
    snprintf(why, sizeof why, "%s", cuctx_last_error_message());
    cuctx__report(cuctx_last_error(), "%s; %s", why, what);
}

CUCTX_API cuctx_capture cuctx__capture_start(cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode, int report,
                                             const char *file, int line, const char *func)
{
    cuctx_capture c = {.file = file, .func = func, .line = line, .report = report};
    if (begin(&c, s, out, mode, "CUCTX_CAPTURE") != CUDA_SUCCESS && report)
        report_last("the block is skipped");
    return c;
}

CUCTX_API int cuctx__capture_once(cuctx_capture *c)
{
    if (c->state == CUCTX__CAPTURE_BEGUN) {
        c->state = CUCTX__CAPTURE_RUNNING;
        return 1;
    }
    if (c->state == CUCTX__CAPTURE_RUNNING && end(c, 1, "CUCTX_CAPTURE") != CUDA_SUCCESS && c->report)
        report_last("the graph is {0}");
    return 0;
}

/* Left by a jump: the graph is abandoned, quietly. Nothing to tell about
 * a capture that ended itself (invalidated, its stream or context gone):
 * the block was left early anyway, and the last error is left as the
 * block left it. */
CUCTX_API void cuctx__capture_cleanup(cuctx_capture *c)
{
    if (c->state == CUCTX__CAPTURE_ENDED)
        return;
    cuctx__quiet(1);    /* the last error stays the one that made the block leave, if any */
    CUresult rc = end(c, 0, "CUCTX_CAPTURE");
    cuctx__quiet(0);
    if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && rc != CUDA_ERROR_INVALID_HANDLE
        && rc != CUDA_ERROR_CONTEXT_IS_DESTROYED && c->report)
        cuctx__report(rc, "CUCTX_CAPTURE: abandoning the capture: cuStreamEndCapture or cuGraphDestroy failed: %s",
                      cuctx_result_name(rc));
}
