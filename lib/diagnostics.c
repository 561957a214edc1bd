/* diagnostics.c - cuctx_stats_get: counts by scanning the table, so that
 * creates and destroys keep no shared counters. */
#include "internal.h"

#include <string.h>

static void count(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    struct cuctx_stats *st = arg;
    (void)s;
    switch (kind) {
    case KIND_ENTRY: st->contexts++; break;
    case KIND_CTX: st->ctx_handles++; break;
    case KIND_EVENT: st->events++; break;
    case KIND_STREAM: st->streams++; break;
    case KIND_MODULE: st->modules++; break;
    case KIND_MEM: st->mems++; break;
    case KIND_HOST_MEM: st->host_mems++; break;
    case KIND_GRAPH_EXEC: st->graph_execs++; break;
    default: break;
    }
}

CUCTX_API void cuctx_stats_get(struct cuctx_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    cuctx__slot_foreach(count, out);
    out->stale_skips = atomic_load(&cuctx__stale_skips);
    out->failed_destroys = atomic_load(&cuctx__failed_destroys);
    out->shutdown_skips = atomic_load(&cuctx__shutdown_skips);
}
