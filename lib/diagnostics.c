/* SPDX-License-Identifier: MIT */
/* diagnostics.c - cuctx_stats_get_sized, from the threads' own live counters
 * (registry.c), and the leak report, which scans the table. */
#include "config.h"

#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "ids.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

/* stats.contexts: the live contexts in use through cuctx - the distinct
 * live entries named by live context handles or live children. Entries of
 * contexts with neither (a foreign current context met by a {0} create
 * whose child is gone, or by a scope) are not counted, and those of primary and borrowed contexts that their
 * owners ended are ended first (a sweep by id, under the context lock), so
 * the count is exact while no other thread creates or destroys. It walks
 * the handle table: a diagnostic, not a hot path. */
struct entry_ids { uint64_t *ids; size_t n, cap; int failed; size_t greens; };

static void collect_entry(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    struct entry_ids *e = arg;
    if (kind == KIND_ENTRY || e->failed)
        return;
    uint64_t id = cuctx__slot_id(s);
    if (!cuctx__pin(id, kind))
        return;
    uint64_t entry = kind == KIND_CTX_HANDLE ? s->u.ctx.entry : s->u.child.entry;
    if (kind == KIND_CTX_HANDLE && s->u.ctx.life == LIFE_GREEN)
        e->greens++;    /* (one handle per green context; borrowed in a forked child) */
    /* a pair (peer access) names a second context (tether.h) */
    uint64_t second = kind != KIND_CTX_HANDLE && cuctx__kind_paired(kind) ? cuctx__slot_aux(s)->id[0] : 0;
    cuctx__unpin(s);
    if (e->n + 2 > e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        uint64_t *ids = realloc(e->ids, cap * sizeof *ids);
        if (!ids) {
            e->failed = 1;
            return;
        }
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->n++] = entry;
    if (second)
        e->ids[e->n++] = second;
}

static int cmp_ids(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* -1 when it cannot be counted (no memory): the caller keeps the entry
 * count. *greens: the live green contexts' handles. */
static long contexts_handed_out(size_t *greens)
{
    struct entry_ids e = {NULL, 0, 0, 0, 0};
    long n = 0;
    cuctx__ctx_lock();
    if (!atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed))  /* (no entry before the driver loaded) */
        cuctx__sweep_locked();
    cuctx__slot_foreach(collect_entry, &e);
    cuctx__ctx_unlock();
    *greens = e.greens;
    if (e.failed) {
        free(e.ids);
        return -1;
    }
    if (e.n)    /* (qsort of NULL: undefined, even of 0 elements) */
        qsort(e.ids, e.n, sizeof *e.ids, cmp_ids);
    for (size_t i = 0; i < e.n; i++)
        if ((i == 0 || e.ids[i] != e.ids[i - 1]) && cuctx__alive(e.ids[i], KIND_ENTRY))
            n++;
    free(e.ids);
    return n;
}

/* The fields of 0.1.0 end with shutdown_skips; later ones are appended, and
 * a caller compiled with a shorter struct gets only the fields it has room
 * for (see cuctx.h). */
CUCTX_API size_t cuctx_stats_get_sized(struct cuctx_stats *out, size_t size)
{
    int64_t n[KIND_COUNT];
    struct cuctx_stats st;
    if (!out || size == 0)
        return 0;
    memset(&st, 0, sizeof st);
    cuctx__live_counts(n);
    long handed_out = contexts_handed_out(&st.green_contexts);
    st.contexts = handed_out >= 0 ? (size_t)handed_out : (size_t)n[KIND_ENTRY];
    st.ctx_handles = (size_t)n[KIND_CTX_HANDLE];
#define CUCTX__KIND_COUNT(K, name, field, display, tethered) st.field = (size_t)n[KIND_##K];
    CUCTX_CHILD_KINDS(CUCTX__KIND_COUNT)
#undef CUCTX__KIND_COUNT
    st.stale_skips = atomic_load(&cuctx__stale_skips);
    st.failed_destroys = atomic_load(&cuctx__failed_destroys);
    st.shutdown_skips = atomic_load(&cuctx__shutdown_skips);
    st.parked_pools = atomic_load(&cuctx__parked_pools);
    size_t known = size < sizeof st ? size : sizeof st;
    memcpy(out, &st, known);
    if (size > known)   /* fields of a newer header: zero, not unknown */
        memset((char *)out + known, 0, size - known);
    return known;
}

/* ---- the leak report ------------------------------------------------------ */

struct report { FILE *out; size_t n; };

static const char *const lives[] = {[LIFE_OWNED] = "owned", [LIFE_PRIMARY] = "primary", [LIFE_BORROWED] = "borrowed",
                                     [LIFE_GREEN] = "green"};

/* The driver's address of a context entry, NULL once it has ended. */
static CUcontext entry_raw(uint64_t entry)
{
    struct cuctx_slot *e = cuctx__pin(entry, KIND_ENTRY);
    CUcontext raw = e ? e->u.entry.raw : NULL;
    if (e)
        cuctx__unpin(e);
    return raw;
}

static void site_line(FILE *out, const struct cuctx_site *site)
{
    if (site->file)
        fprintf(out, ", created at %s:%d in %s()\n", site->file, site->line, site->func ? site->func : "?");
    else
        fprintf(out, ", created by a call without its site (a plain function)\n");
}

static void report_one(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    struct report *r = arg;
    if (kind == KIND_ENTRY)
        return;
    uint64_t id = cuctx__slot_id(s);
    if (!cuctx__pin(id, kind))
        return;     /* destroyed meanwhile */
    if (kind == KIND_CTX_HANDLE) {
        CUcontext raw = entry_raw(s->u.ctx.entry);
        int life = s->u.ctx.life;
        fprintf(r->out, "cuctx: leak: context %p (%s, handle %#llx)", (void *)raw,
                life >= LIFE_OWNED && life <= LIFE_GREEN ? lives[life] : "?", (unsigned long long)id);
        site_line(r->out, &s->u.ctx.site);
    } else if (cuctx__kind_paired(kind)) {
        /* peer access: the context it is enabled from, and its peer (raw) */
        CUcontext from = entry_raw(s->u.child.entry), to = entry_raw(cuctx__slot_aux(s)->id[0]);
        fprintf(r->out, "cuctx: leak: %s (handle %#llx) from context ", cuctx__kind_name(kind), (unsigned long long)id);
        if (from)
            fprintf(r->out, "%p", (void *)from);
        else
            fprintf(r->out, "(destroyed)");
        if (to)
            fprintf(r->out, " to context %p", (void *)to);
        else
            fprintf(r->out, " to a destroyed context (%p)", (void *)(uintptr_t)s->u.child.raw);
        if (s->u.child.site.unowned)
            fprintf(r->out, ", borrowed (enabled elsewhere: not cuctx's to disable)");
        site_line(r->out, &s->u.child.site);
    } else {
        CUcontext owner = s->u.child.entry ? entry_raw(s->u.child.entry) : NULL;
        fprintf(r->out, "cuctx: leak: %s %#llx (handle %#llx) in ", cuctx__kind_name(kind),
                (unsigned long long)s->u.child.raw, (unsigned long long)id);
        if (!s->u.child.entry)
            fprintf(r->out, "no context (%s)",
                    kind == KIND_MEM_ASYNC ? "stream-ordered memory belongs to its pool"
                    : kind == KIND_GRAPH   ? "a graph belongs to none"
                    : kind == KIND_LIBRARY ? "a library belongs to none"
                                           : "a memory pool belongs to its device");
        else if (owner)
            fprintf(r->out, "context %p", (void *)owner);
        else
            fprintf(r->out, "a destroyed context");
        if (s->u.child.site.unowned)
            fprintf(r->out, ", adopted to track (not cuctx's to destroy)");
        site_line(r->out, &s->u.child.site);
    }
    cuctx__unpin(s);
    r->n++;
}

CUCTX_API void cuctx_leak_report(FILE *out)
{
    struct report r = {out ? out : stderr, 0};
    cuctx__slot_foreach(report_one, &r);
    fprintf(r.out, "cuctx: %zu object%s alive\n", r.n, r.n == 1 ? "" : "s");
    fflush(r.out);
}
