/* SPDX-License-Identifier: MIT */
/* graph_exec.c - cuctx_graph_exec: what is particular to graph execs. */
#include "config.h"

#include "claim.h"
#include "context.h"
#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuGraphExecDestroy)((CUgraphExec)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__graph_exec_kind = {0, destroy, NULL};

struct graph_args { CUgraph graph; unsigned long long flags; };

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct graph_args *a = arg;
    CUgraphExec ge = NULL;
    CUresult rc = DRV(cuGraphInstantiateWithFlags)(&ge, a->graph, a->flags);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_graph_exec_instantiate: cuGraphInstantiateWithFlags failed: %s", cuctx_result_name(rc));
    *raw = (uint64_t)(uintptr_t)ge;
    *size = 0;
    return CUDA_SUCCESS;
}

static CUresult need_graphs(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "graph support", "CUDA 11.4 or newer needed",
                               CUCTX__DRV_AT(cuGraphInstantiateWithFlags), CUCTX__DRV_AT(cuGraphExecDestroy),
                               CUCTX__DRV_AT(cuGraphLaunch));
}

CUCTX_API CUresult cuctx_graph_exec_instantiate_at(cuctx_graph_exec *out, cuctx_ctx ctx, CUgraph graph, unsigned long long flags,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    static const char fn[] = "cuctx_graph_exec_instantiate";
    struct graph_args a = {graph, flags};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_GRAPH_EXEC, fn)) != CUDA_SUCCESS)
        return rc;
    if (!graph)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: graph is NULL", fn);
    if ((rc = cuctx__ensure_init(fn)) != CUDA_SUCCESS || (rc = need_graphs(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(out ? &out->id : NULL, KIND_GRAPH_EXEC, ctx, fn, make, &a, &site);
}

CUCTX_API CUresult (cuctx_graph_exec_instantiate)(cuctx_graph_exec *out, cuctx_ctx ctx, CUgraph graph, unsigned long long flags)
{
    return cuctx_graph_exec_instantiate_at(out, ctx, graph, flags, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_graph_exec_ctx(cuctx_graph_exec ge, cuctx_ctx *out)
{
    return cuctx__child_ctx(ge.id, KIND_GRAPH_EXEC, "cuctx_graph_exec_ctx", out);
}

CUCTX_API CUresult cuctx_graph_exec_destroy(cuctx_graph_exec *ge)
{
    return cuctx__child_destroy(ge ? &ge->id : NULL, KIND_GRAPH_EXEC, "cuctx_graph_exec_destroy", &cuctx__graph_exec_kind);
}

static CUresult launch_failed(CUresult rc, const char *fn)
{
    return cuctx__fail(rc, "%s: cuGraphLaunch failed: %s", fn, cuctx_result_name(rc));
}

/* A child's generation held once through hazard slots, so that its next
 * launches may take the fast path (cuctx__hold_child sets its CUCTX_W_HELD
 * bit; its destroy then pays a membarrier). Called while it is pinned. */
static void mark_held(uint64_t id, enum cuctx_kind kind)
{
    unsigned hz;
    struct cuctx_slot *x = cuctx__hold_child(id, kind, &hz);
    if (x)
        cuctx__unhold_child(x, hz);
}

/* The launch where cuctx__child_hold_fast2 did not hold: both pinned, the
 * context held once or twice; a default stream's in the exec's context
 * made current. A launch on a handle's stream in the exec's own context
 * marks both held, for the fast path of the next. */
static __attribute__((noinline)) CUresult launch_slow(cuctx_graph_exec ge, cuctx_stream s, const char *fn)
{
    struct cuctx_use g, st = {0};
    struct cuctx_switch sw;
    CUstream dflt;
    int by_default = cuctx__stream_default(s.id, &dflt);
    CUresult rc = !by_default ? cuctx__child_use2(ge.id, KIND_GRAPH_EXEC, s.id, KIND_STREAM, fn, &g, &st)
                              : cuctx__child_use(ge.id, KIND_GRAPH_EXEC, fn, &g);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!by_default) {
        if (st.entry.id != g.entry.id && !cuctx__entry_green_over(&st.entry, &g.entry)) {
            rc = cuctx__fail(CUDA_ERROR_INVALID_CONTEXT,
                             "%s: the graph exec and the stream belong to different contexts", fn);
            goto out;
        }
        if (st.entry.id == g.entry.id) {
            mark_held(ge.id, KIND_GRAPH_EXEC);
            mark_held(s.id, KIND_STREAM);
        }
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuGraphLaunch)((CUgraphExec)(uintptr_t)g.raw, (CUstream)(uintptr_t)st.raw);
    } else {
        int switched = 0;
        CUCTX__UNWOUND_LETS_GO(&sw)
            if ((rc = cuctx__switch_to(g.entry.raw, fn, &sw)) == CUDA_SUCCESS) {
                switched = 1;
                rc = DRV(cuGraphLaunch)((CUgraphExec)(uintptr_t)g.raw, dflt);
                cuctx__switch_back(&sw, fn);
            }
        if (!switched)
            goto out;
    }
    if (rc != CUDA_SUCCESS)
        launch_failed(rc, fn);
out:
    cuctx__child_done2(&g, &st);
    return rc;
}

/* The common launch: the exec, the stream and their context's entry held
 * through the thread's hazard slots 0 to 2 (cuctx__child_hold_fast2,
 * tether.h), no locked instruction; a destroy of either child waits for
 * the hold (their held bits: the close scans the hazard slots), as does
 * the context's. cuGraphLaunch on a stream needs no context current.
 * Anything else (launch_slow): a default stream, a green context's stream,
 * either child not yet held, contexts to check, slots in use, errors. */
CUCTX_API CUresult cuctx_graph_exec_launch(cuctx_graph_exec ge, cuctx_stream s)
{
    static const char fn[] = "cuctx_graph_exec_launch";
    struct cuctx_use g, st;
    if (__builtin_expect(!cuctx__child_hold_fast2(ge.id, KIND_GRAPH_EXEC, s.id, KIND_STREAM, &g, &st), 0))
        return launch_slow(ge, s, fn);
    CUresult rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuGraphLaunch)((CUgraphExec)(uintptr_t)g.raw, (CUstream)(uintptr_t)st.raw);
    cuctx__child_done_fast(3);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return launch_failed(rc, fn);
    return CUDA_SUCCESS;
}

CUCTX_API CUgraphExec cuctx_graph_exec_raw(cuctx_graph_exec ge)
{
    return (CUgraphExec)(uintptr_t)cuctx__child_value(ge.id, KIND_GRAPH_EXEC, "cuctx_graph_exec_raw", FIELD_RAW);
}
