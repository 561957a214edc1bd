/* SPDX-License-Identifier: MIT */
/* graph.c - cuctx_graph: what is particular to graphs, a kind of no
 * context (ids.h), and cuctx__graph_take, how a capture hands its graph
 * over (capture.c). */
#include "config.h"

#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "graph.h"
#include "ids.h"
#include "init.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuGraphDestroy)((CUgraph)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__graph_kind = {0, destroy, NULL};

static CUresult need_graphs(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "graph support", "CUDA 10.0 or newer needed", CUCTX__DRV_AT(cuGraphCreate),
                               CUCTX__DRV_AT(cuGraphDestroy));
}

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    (void)arg;
    CUgraph g = NULL;
    CUresult rc = DRV(cuGraphCreate)(&g, 0);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_graph_create: cuGraphCreate failed: %s", cuctx_result_name(rc));
    *raw = (uint64_t)(uintptr_t)g;
    *size = 0;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_graph_create_at(cuctx_graph *out, const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    static const char fn[] = "cuctx_graph_create";
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_GRAPH, fn)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__ensure_init(fn)) != CUDA_SUCCESS || (rc = need_graphs(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(out ? &out->id : NULL, KIND_GRAPH, (cuctx_ctx){0}, fn, make, NULL, &site);
}

CUCTX_API CUresult (cuctx_graph_create)(cuctx_graph *out)
{
    return cuctx_graph_create_at(out, NULL, 0, NULL);
}

/* A graph made elsewhere (by a capture's end) into *out, which the caller
 * claimed; on failure the graph is destroyed. */
CUresult cuctx__graph_take(uint64_t *out, CUgraph g, const char *fn, const struct cuctx_site *site)
{
    struct cuctx_adopted a = {(uint64_t)(uintptr_t)g, 0};
    CUresult rc = cuctx__child_create(out, KIND_GRAPH, (cuctx_ctx){0}, fn, NULL, &a, site);
    if (rc != CUDA_SUCCESS)
        DRV(cuGraphDestroy)(g);
    return rc;
}

CUCTX_API CUresult cuctx_graph_destroy(cuctx_graph *g)
{
    return cuctx__child_destroy(g ? &g->id : NULL, KIND_GRAPH, "cuctx_graph_destroy", &cuctx__graph_kind);
}

CUCTX_API CUgraph cuctx_graph_raw(cuctx_graph g)
{
    return (CUgraph)(uintptr_t)cuctx__child_value(g.id, KIND_GRAPH, "cuctx_graph_raw", FIELD_RAW);
}
