/* SPDX-License-Identifier: MIT */
/* test_handles.c - handles that come from elsewhere or go somewhere they
 * should not (issue 18): a child's context as a borrowed handle, objects
 * adopted from outside cuctx, the default streams by name, the accessors'
 * unpinned read, and a create into a handle that still holds a live object.
 * Each test says in a line which bug it catches; the per-kind ones run for
 * every line of kinds.h. */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudaTypedefs.h>

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

/* The default streams are constants of the handle type, usable as
 * initialisers of static objects too. */
static const cuctx_stream legacy_stream = CUCTX_STREAM_LEGACY;
static const cuctx_stream per_thread_stream = CUCTX_STREAM_PER_THREAD;

/* The kind-independent bodies take a kind's functions as these. */
struct kind {
    const char *name, *create_fn, *destroy_fn;
    enum cusim_kind sim_kind;
    size_t stats_off;
    CUresult (*create)(uint64_t *id, cuctx_ctx c);
    CUresult (*destroy)(uint64_t *id);
    CUresult (*ctx_of)(uint64_t id, cuctx_ctx *out);
    uint64_t (*raw)(uint64_t id);
};

#define KIND_ROW(name, type, stat, sim, letter, create_fn, destroy_fn, use_fn, needs_current, create, args, raw) \
    static CUresult name##_create(uint64_t *id, cuctx_ctx c) { return kind_create_##name((type *)id, c); }      \
    static CUresult name##_destroy(uint64_t *id) { return cuctx_##name##_destroy((type *)id); }               \
    static CUresult name##_ctx_of(uint64_t id, cuctx_ctx *out) { return cuctx_##name##_ctx((type){id}, out); } \
    static uint64_t name##_raw(uint64_t id) { return kind_raw_##name((type){id}); }                          \
    static const struct kind K_##name = {#name, create_fn, destroy_fn, sim, offsetof(struct cuctx_stats, stat),  \
                                         name##_create, name##_destroy, name##_ctx_of, name##_raw};
TEST_CHILD_KINDS(KIND_ROW)
#undef KIND_ROW

static size_t kind_count(const struct kind *k)
{
    struct cuctx_stats st = stats();
    size_t n;
    memcpy(&n, (const char *)&st + k->stats_off, sizeof n);
    return n;
}

static void make(const struct kind *k, uint64_t *id, cuctx_ctx c)
{
    CUresult rc = k->create(id, c);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s create: %s", k->name, cuctx_last_error_message());
}

/* Driver calls of any kind from log position m on (0 without the simulator). */
static size_t calls_since(size_t m)
{
    return sim() ? log_mark() - m : 0;
}

/* ------------------------------------------------------------------------
 *  cuctx_<kind>_ctx
 * ------------------------------------------------------------------------ */

/* Catches: a child's context handle that is not its owner's (a create with
 * it lands elsewhere), or whose destroy or cleanup ends the context. */
static void t_ctx_of_is_borrowed_owner(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, POPPED);
    new_ctx(&b, 0, NULL, LEFT_CURRENT);      /* another context is current */
    any_handle h = {0};
    make(k, &h.id, a);
    cuctx_ctx got = {0};
    CHECK_OK(k->ctx_of(h.id, &got));
    cr_assert_neq(got.id, 0);
    cr_assert_neq(got.id, a.id, "the owner's own handle was handed out, not a borrowed one");
    cr_assert_eq(cuctx_ctx_raw(got), ra);
    size_t m = log_mark();
    cuctx_event ev = {0};
    CHECK_OK(cuctx_event_create(&ev, got, 0));
    if (sim())
        cr_assert_eq(last_call("cuEventCreate", m).ctx, (uint64_t)(uintptr_t)ra, "the event was made in another context");
    CHECK_OK(cuctx_event_destroy(&ev));
    unsigned long destroys = calls("cuCtxDestroy");
    CHECK_OK(cuctx_ctx_destroy(&got));
    {
        CUCTX_AUTO cuctx_ctx again = {0};
        CHECK_OK(k->ctx_of(h.id, &again));
    }
    cr_assert_eq(calls("cuCtxDestroy"), destroys, "destroying the borrowed handle destroyed the context");
    cr_assert_eq(cuctx_ctx_raw(a), ra, "the owner's handle no longer works");
    cr_assert_neq(k->raw(h.id), 0, "the child no longer works");
    CHECK_OK(k->destroy(&h.id));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* Catches: a stale child or one whose context ended yielding a context
 * handle, or leaving *out as it was. */
static void t_ctx_of_stale_child(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0}, copy;
    make(k, &h.id, a);
    copy = h;
    CHECK_OK(k->destroy(&h.id));
    cuctx_ctx got = {0}, old = {0};
    new_ctx(&old, 0, NULL, LEFT_CURRENT);
    got = old;
    CHECK_OK(cuctx_ctx_destroy(&old));       /* got is now a stale context handle: fine to fill */
    cr_assert_eq(k->ctx_of(copy.id, &got), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(got.id, 0, "*out not reset");
    make(k, &h.id, a);
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(k->ctx_of(h.id, &got), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(got.id, 0);
    CHECK_OK(k->destroy(&h.id));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  A create into a handle that holds a live object
 * ------------------------------------------------------------------------ */

static void expect_refused(CUresult rc, size_t mark, const char *what)
{
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s into a live handle: %s", what, cuctx_result_name(rc));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "already holds a live object; destroy or CUCTX_MOVE it first"),
                  NULL, "%s: %s", what, cuctx_last_error_message());
    cr_assert_eq(calls_since(mark), 0, "%s into a live handle called the driver", what);
}

/* Catches: a create that overwrites a live handle (the old object is
 * orphaned, seen only by the leak report), or calls the driver first. */
static void t_create_into_live_refused(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0};
    make(k, &h.id, a);
    any_handle before = h;
    uint64_t raw = k->raw(h.id);
    size_t live = kind_count(k);
    size_t m = log_mark();
    expect_refused(k->create(&h.id, a), m, k->name);
    cr_assert_eq(h.id, before.id, "the refused create changed the handle");
    cr_assert_eq(k->raw(h.id), raw, "the object behind the handle changed");
    cr_assert_eq(kind_count(k), live);
    /* a borrowed handle of its context, into a live context handle */
    m = log_mark();
    cuctx_ctx live_ctx = a;
    expect_refused(k->ctx_of(h.id, &live_ctx), m, "cuctx_<kind>_ctx");
    cr_assert_eq(live_ctx.id, a.id);
    m = log_mark();
    CHECK_OK(k->destroy(&h.id));
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, raw, m), 1, "the object was not the handle's any more");
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* Catches: a refused create into a stale handle (destroyed copy), and a
 * child whose context ended either refused or leaked: its slot must be
 * released, with no driver call for it. */
static void t_create_into_stale_or_orphan(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0}, copy;
    make(k, &h.id, a);
    copy = h;
    CHECK_OK(k->destroy(&h.id));
    make(k, &copy.id, a);          /* into the stale copy */
    CHECK_OK(k->destroy(&copy.id));
    size_t live = kind_count(k);
    make(k, &h.id, a);
    uint64_t old_raw = k->raw(h.id);
    CHECK_OK(cuctx_ctx_destroy(&a));   /* h's object went with its context */
    new_ctx(&b, 0, NULL, LEFT_CURRENT);
    struct cuctx_stats st0 = stats();
    size_t m = log_mark();
    make(k, &h.id, b);
    cr_assert_eq(stats().stale_skips, st0.stale_skips + 1, "the old slot was not released as a destroy would");
    cr_assert_eq(kind_count(k), live + 1, "the old handle's slot leaked, or the new object is not counted");
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, old_raw, m), 0, "the dead context's object was sent to the driver");
    CHECK_OK(k->destroy(&h.id));
    CHECK_OK(cuctx_ctx_destroy(&b));
    graph_fini();
    ASSERT_NO_MISUSE();
}

#define KIND_SUITE(name, ...)                                                                   \
    Test(name, ctx_of_child_is_borrowed_owner) { t_ctx_of_is_borrowed_owner(&K_##name); }      \
    Test(name, ctx_of_stale_child_is_refused) { t_ctx_of_stale_child(&K_##name); }              \
    Test(name, create_into_live_handle_is_refused) { t_create_into_live_refused(&K_##name); }   \
    Test(name, create_into_stale_or_orphaned_handle_works) { t_create_into_stale_or_orphan(&K_##name); }
TEST_CHILD_KINDS(KIND_SUITE)
#undef KIND_SUITE

/* Catches: context creates (owned, primary, borrowed) that overwrite a live
 * context handle, or reach the driver before refusing. */
Test(claim, context_creates_into_live_handle_are_refused)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, POPPED);
    cuctx_ctx keep = a;
    size_t m = log_mark();
    expect_refused(cuctx_ctx_create(&a, 0, 0), m, "cuctx_ctx_create");
    expect_refused(cuctx_ctx_primary(&a, 0), m, "cuctx_ctx_primary");
    expect_refused(cuctx_ctx_borrow(&a, ra), m, "cuctx_ctx_borrow");
    expect_refused(cuctx_ctx_borrow(&a, NULL), m, "cuctx_ctx_borrow(NULL)");
    cr_assert_eq(a.id, keep.id);
    cr_assert_eq(cuctx_ctx_raw(a), ra);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));   /* a is {0} again */
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Catches: argument checks that reset a live handle before the claim
 * (module load with no path, graph instantiate with no graph, an adopt of
 * NULL). */
Test(claim, bad_arguments_leave_live_handle)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_module mod = {0};
    cuctx_graph_exec ge = {0};
    cuctx_stream s = {0};
    CHECK_OK(kind_create_module(&mod, a));
    CHECK_OK(kind_create_graph_exec(&ge, a));
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    uint64_t mod_id = mod.id, ge_id = ge.id, s_id = s.id;
    size_t m = log_mark();
    expect_refused(cuctx_module_load(&mod, a, NULL), m, "cuctx_module_load(NULL)");
    expect_refused(cuctx_module_load_data(&mod, a, NULL), m, "cuctx_module_load_data(NULL)");
    expect_refused(cuctx_graph_exec_instantiate(&ge, a, NULL, 0), m, "cuctx_graph_exec_instantiate(NULL)");
    expect_refused(cuctx_stream_adopt(&s, a, NULL, 1), m, "cuctx_stream_adopt(NULL)");
    cr_assert_eq(mod.id, mod_id);
    cr_assert_eq(ge.id, ge_id);
    cr_assert_eq(s.id, s_id);
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  Adoption
 * ------------------------------------------------------------------------ */

/* An object made by the raw driver in the current context, for adopting. */
struct raw_obj {
    const char *destroy_fn;
    uint64_t raw;
};

static CUresult adopt(const char *kind, cuctx_ctx c, uint64_t raw, int owned, uint64_t *out)
{
    if (strcmp(kind, "stream") == 0)
        return cuctx_stream_adopt((cuctx_stream *)out, c, (CUstream)(uintptr_t)raw, owned);
    if (strcmp(kind, "event") == 0)
        return cuctx_event_adopt((cuctx_event *)out, c, (CUevent)(uintptr_t)raw, owned);
    return cuctx_mem_adopt((cuctx_mem *)out, c, (CUdeviceptr)raw, KIND_BYTES, owned);
}

static struct raw_obj raw_make(const char *kind)
{
    struct raw_obj o = {NULL, 0};
    if (strcmp(kind, "stream") == 0) {
        CUstream s = NULL;
        CHECK_OK(((PFN_cuStreamCreate_v2000)drv_sym("cuStreamCreate", 2000))(&s, 0));
        o.destroy_fn = "cuStreamDestroy";
        o.raw = (uint64_t)(uintptr_t)s;
    } else if (strcmp(kind, "event") == 0) {
        CUevent e = NULL;
        CHECK_OK(((PFN_cuEventCreate_v2000)drv_sym("cuEventCreate", 2000))(&e, 0));
        o.destroy_fn = "cuEventDestroy";
        o.raw = (uint64_t)(uintptr_t)e;
    } else {
        CUdeviceptr p = 0;
        CHECK_OK(((PFN_cuMemAlloc_v3020)drv_sym("cuMemAlloc", 3020))(&p, KIND_BYTES));
        o.destroy_fn = "cuMemFree";
        o.raw = (uint64_t)p;
    }
    return o;
}

static void raw_destroy(const char *kind, uint64_t raw)
{
    if (strcmp(kind, "stream") == 0)
        CHECK_OK(((PFN_cuStreamDestroy_v4000)drv_sym("cuStreamDestroy", 4000))((CUstream)(uintptr_t)raw));
    else if (strcmp(kind, "event") == 0)
        CHECK_OK(((PFN_cuEventDestroy_v4000)drv_sym("cuEventDestroy", 4000))((CUevent)(uintptr_t)raw));
    else
        CHECK_OK(((PFN_cuMemFree_v3020)drv_sym("cuMemFree", 3020))((CUdeviceptr)raw));
}

/* The adopted handle's driver value, through its accessor. */
static uint64_t adopted_raw(const char *kind, uint64_t id)
{
    if (strcmp(kind, "stream") == 0)
        return (uint64_t)(uintptr_t)cuctx_stream_raw((cuctx_stream){id});
    if (strcmp(kind, "event") == 0)
        return (uint64_t)(uintptr_t)cuctx_event_raw((cuctx_event){id});
    return (uint64_t)cuctx_mem_ptr((cuctx_mem){id});
}

/* Catches: an owned adoption whose destroy does not destroy the object, a
 * tracking one whose destroy does (the owner elsewhere then frees it twice),
 * or an adopt that does not name the given object in the given context. */
static void t_adopt_owned_or_not(const char *kind)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    for (int owned = 0; owned <= 1; owned++) {
        struct raw_obj o = raw_make(kind);
        uint64_t h = 0;
        new_ctx(&b, 0, NULL, LEFT_CURRENT);   /* the adopt names a, not the current context */
        CHECK_OK(adopt(kind, a, o.raw, owned, &h));
        cr_assert_eq(adopted_raw(kind, h), o.raw);
        cuctx_ctx owner = {0};
        CHECK_OK(cuctx_destroy(&b));
        if (strcmp(kind, "stream") == 0)
            CHECK_OK(cuctx_stream_ctx((cuctx_stream){h}, &owner));
        else if (strcmp(kind, "event") == 0)
            CHECK_OK(cuctx_event_ctx((cuctx_event){h}, &owner));
        else
            CHECK_OK(cuctx_mem_ctx((cuctx_mem){h}, &owner));
        cr_assert_eq(cuctx_ctx_raw(owner), ra);
        CHECK_OK(cuctx_ctx_destroy(&owner));
        size_t m = log_mark();
        CHECK_OK((cuctx_destroy)(&h));   /* the void * form: h is a bare id */
        cr_assert_eq(h, 0);
        if (sim()) {
            cr_assert_eq(calls_on(o.destroy_fn, o.raw, m), (unsigned long)owned, "%s adopted %s: %s called %lu times",
                         kind, owned ? "owned" : "to track", o.destroy_fn, calls_on(o.destroy_fn, o.raw, m));
            if (!owned)
                cr_assert_eq(calls_since(m), 0, "a tracking handle's destroy called the driver");
        }
        if (!owned)
            raw_destroy(kind, o.raw);      /* still live: its owner frees it */
    }
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Catches: an adopted object sent to the driver after its context died
 * (owned: skipped like a created one; tracked: uses checked against the
 * context's generation), and an adoption missing from the leak report. */
static void t_adopt_after_context_destroy(const char *kind)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    struct raw_obj o1 = raw_make(kind), o2 = raw_make(kind);
    uint64_t owned = 0, tracked = 0;
    CHECK_OK(adopt(kind, (cuctx_ctx){0}, o1.raw, 1, &owned));   /* {0}: the current context, a */
    CHECK_OK(adopt(kind, a, o2.raw, 0, &tracked));
    char report[8192] = "";
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cuctx_leak_report(f);
    rewind(f);
    size_t n = fread(report, 1, sizeof report - 1, f);
    report[n] = 0;
    fclose(f);
    /* both adoptions, at their site (the helper adopt() below calls the macros) */
    const char *site = "test_handles.c";
    const char *first = strstr(report, site);
    first = first ? strstr(first, " in adopt()") : NULL;
    cr_assert(first && strstr(strstr(first + 1, site) ? strstr(first + 1, site) : "", " in adopt()"), "the leak report does not name both adoptions at %s:\n%s", site, report);
    cr_assert_neq(strstr(report, "adopted to track"), NULL, "the tracked adoption is not marked:\n%s", report);
    struct cuctx_stats st0 = stats();
    CHECK_OK(cuctx_ctx_destroy(&a));
    size_t m = log_mark();
    cr_assert_eq(adopted_raw(kind, tracked), 0, "a tracked object of a dead context still gives its value");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    if (strcmp(kind, "stream") == 0)
        cr_assert_eq(cuctx_stream_synchronize((cuctx_stream){tracked}), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_OK((cuctx_destroy)(&owned));
    CHECK_OK((cuctx_destroy)(&tracked));
    cr_assert_eq(calls_since(m), 0, "a destroy after the context died reached the driver");
    cr_assert_eq(stats().stale_skips, st0.stale_skips + 1, "the owned adoption's destroy was not skipped as stale");
    ASSERT_NO_MISUSE();
}

#define ADOPT_TESTS(kind)                                                                    \
    Test(adopt, kind##_owned_destroys_tracked_does_not) { t_adopt_owned_or_not(#kind); }     \
    Test(adopt, kind##_after_context_destroy_never_reaches_driver) { t_adopt_after_context_destroy(#kind); }
ADOPT_TESTS(stream)
ADOPT_TESTS(event)
ADOPT_TESTS(mem)

/* Catches: adopting nothing, or a default stream as if it were an object
 * (its destroy would reach cuStreamDestroy(CU_STREAM_LEGACY)). */
Test(adopt, null_and_default_streams_are_refused)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_stream s = {0};
    cuctx_event e = {0};
    cuctx_mem mem = {0};
    size_t m = log_mark();
    cr_assert_eq(cuctx_stream_adopt(&s, a, NULL, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_event_adopt(&e, a, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_mem_adopt(&mem, a, 0, 16, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_stream_adopt(&s, a, CU_STREAM_LEGACY, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "CUCTX_STREAM_LEGACY"), NULL, "%s", cuctx_last_error_message());
    cr_assert_neq(strstr(cuctx_last_error_message(), ": CU_STREAM_LEGACY is a default stream"), NULL, "%s",
                  cuctx_last_error_message());
    cr_assert_eq(cuctx_stream_adopt(&s, a, CU_STREAM_PER_THREAD, 0), CUDA_ERROR_INVALID_VALUE);
    /* each named as itself, not as the other default stream */
    cr_assert_neq(strstr(cuctx_last_error_message(), ": CU_STREAM_PER_THREAD is a default stream"), NULL, "%s",
                  cuctx_last_error_message());
    cr_assert_neq(strstr(cuctx_last_error_message(), "CUCTX_STREAM_PER_THREAD"), NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(s.id | e.id | mem.id, 0);
    cr_assert_eq(calls_since(m), 0);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ------------------------------------------------------------------------
 *  The default streams by name
 * ------------------------------------------------------------------------ */

/* Catches: the named default streams not reaching the driver as
 * CU_STREAM_LEGACY / CU_STREAM_PER_THREAD, or recorded and launched with
 * another context current than the event's and graph exec's own. */
Test(default_stream, record_and_launch_in_the_objects_context)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, POPPED);
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cuctx_event ev = {0};
    cuctx_graph_exec ge = {0};
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(kind_create_graph_exec(&ge, a));
    const cuctx_stream streams[] = {{0}, CUCTX_STREAM_LEGACY, CUCTX_STREAM_PER_THREAD};
    const uint64_t want[] = {0, (uint64_t)(uintptr_t)CU_STREAM_LEGACY, (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD};
    for (int i = 0; i < 3; i++) {
        size_t m = log_mark();
        CHECK_OK(cuctx_event_record(ev, streams[i]));
        CHECK_OK(cuctx_graph_exec_launch(ge, streams[i]));
        cr_assert_eq(current(), rb);
        if (sim()) {
            struct cusim_call rec = last_call("cuEventRecord", m), launch = last_call("cuGraphLaunch", m);
            cr_assert_eq(rec.handle2, want[i], "stream %d: cuEventRecord on %#llx", i, (unsigned long long)rec.handle2);
            cr_assert_eq(rec.ctx, (uint64_t)(uintptr_t)ra);
            cr_assert_eq(launch.handle2, want[i]);
            cr_assert_eq(launch.ctx, (uint64_t)(uintptr_t)ra);
        }
    }
    CHECK_OK(cuctx_event_synchronize(ev));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* Catches: wait and synchronize refusing the named streams, or running
 * them in some other context than the current one. */
Test(default_stream, wait_and_synchronize_in_the_current_context)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, POPPED);
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cuctx_event ev = {0};
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_event_record(ev, legacy_stream));
    size_t m = log_mark();
    CHECK_OK(cuctx_stream_wait_event(per_thread_stream, ev));
    CHECK_OK(cuctx_stream_synchronize(CUCTX_STREAM_LEGACY));
    if (sim()) {
        struct cusim_call w = last_call("cuStreamWaitEvent", m), s = last_call("cuStreamSynchronize", m);
        cr_assert_eq(w.handle, (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD);
        cr_assert_eq(w.ctx, (uint64_t)(uintptr_t)rb);
        cr_assert_eq(s.handle, (uint64_t)(uintptr_t)CU_STREAM_LEGACY);
        cr_assert_eq(s.ctx, (uint64_t)(uintptr_t)rb);
    }
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Catches: cuctx_launch refusing the named default streams or sending
 * another stream value than the driver's. */
Test(default_stream, launch_on_named_streams)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_module mod = {0};
    CUfunction f = NULL;
    CHECK_OK(kind_create_module(&mod, a));
    CHECK_OK(cuctx_module_function(mod, "vadd", &f));
    CUdeviceptr p = 0;
    int n = 0;
    void *args[] = {&p, &p, &p, &n};
    const cuctx_stream streams[] = {CUCTX_STREAM_LEGACY, CUCTX_STREAM_PER_THREAD};
    for (int i = 0; i < 2; i++) {
        size_t m = log_mark();
        CHECK_OK(cuctx_launch(f, streams[i], (cuctx_dim3){1, 1, 1}, (cuctx_dim3){1, 1, 1}, 0, args));
        if (sim()) {
            struct cusim_call c = last_call("cuLaunchKernel", m);
            cr_assert_eq(c.handle2, (uint64_t)(uintptr_t)(i ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY));
            cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra);
        }
    }
    CHECK_OK(cuctx_ctx_synchronize(a));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

static int handler_calls;
static void count_reports(CUresult rc, const char *msg, void *user)
{
    (void)rc;
    (void)msg;
    (void)user;
    handler_calls++;
}

/* Catches: raw values other than the driver's for the named streams, a
 * destroy of one reaching the driver or failing (and so a CUCTX_AUTO
 * holding one reporting), and a context handed out for one. */
Test(default_stream, raw_destroy_and_ctx_of_named_streams)
{
    NEED_DRIVER();
    cr_assert_eq(cuctx_stream_raw(CUCTX_STREAM_LEGACY), CU_STREAM_LEGACY);
    cr_assert_eq(cuctx_stream_raw(CUCTX_STREAM_PER_THREAD), CU_STREAM_PER_THREAD);
    cr_assert_null(cuctx_stream_raw((cuctx_stream){0}));
    cuctx_set_error_handler(count_reports, NULL);
    size_t m = log_mark();
    cuctx_stream s = CUCTX_STREAM_PER_THREAD;
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(s.id, 0);
    {
        CUCTX_AUTO cuctx_stream t = CUCTX_STREAM_LEGACY;
        (void)t;
    }
    cr_assert_eq(handler_calls, 0, "the cleanup of a named default stream reported a failure");
    cr_assert_eq(calls_since(m), 0);
    cuctx_set_error_handler(NULL, NULL);
    cuctx_ctx c = {0};
    cr_assert_eq(cuctx_stream_ctx(CUCTX_STREAM_LEGACY, &c), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "CUCTX_STREAM_LEGACY"), NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(c.id, 0);
}

/* ------------------------------------------------------------------------
 *  Accessors
 * ------------------------------------------------------------------------ */

/* A child's context asked into NULL: refused, and no handle made.
 * Mutant killed: lib/context.c:217 (the refusal in cuctx__child_ctx made
 * `return 0;`: success with nowhere to write; seed 31). */
Test(accessor, a_childs_context_asked_into_null_is_refused)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    size_t handles = stats().ctx_handles;
    cr_assert_eq(cuctx_event_ctx(ev, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuctx_event_ctx: out is NULL"), NULL, "%s",
                  cuctx_last_error_message());
    cr_assert_eq(cuctx_stream_ctx(s, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(stats().ctx_handles, handles);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Catches: an accessor that asks the driver for a child of an owned
 * context (the unpinned read fell back, or never was), or that skips the
 * driver's check for a context others can end. */
Test(accessor, owned_context_children_cost_no_driver_call)
{
    NEED_SIM();
    cuctx_ctx a = {0}, p = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_mem mem = {0}, pm = {0};
    CHECK_OK(cuctx_mem_alloc(&mem, a, 64));
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_mem_alloc(&pm, p, 64));
    size_t m = log_mark();
    cr_assert_neq(cuctx_mem_ptr(mem), 0);
    cr_assert_eq(cuctx_mem_size(mem), 64);
    cr_assert_neq(cuctx_ctx_raw(a), NULL);
    cr_assert_eq(cuctx_ctx_device(a), 0);
    cr_assert_eq(calls_since(m), 0, "an accessor of an owned context's object called the driver");
    unsigned long ids = calls("cuCtxGetId");
    cr_assert_neq(cuctx_mem_ptr(pm), 0);
    cr_assert_gt(calls("cuCtxGetId"), ids, "a primary context's child was read without checking the context");
    CHECK_OK(cuctx_mem_destroy(&pm));
    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(cuctx_mem_destroy(&mem));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Catches: a stale handle whose slot now holds a new object of its kind
 * giving that object's value, and a child of an ended context giving one
 * (the documented contract: NULL/0, CUDA_ERROR_CONTEXT_IS_DESTROYED). */
static void t_accessor_stale_and_orphan(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0}, copy;
    make(k, &h.id, a);
    copy = h;
    CHECK_OK(k->destroy(&h.id));
    make(k, &h.id, a);            /* most likely in the freed slot */
    cr_assert_neq(k->raw(h.id), 0);
    cr_assert_eq(k->raw(copy.id), 0, "a stale handle gave a value");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "stale"), NULL, "%s", cuctx_last_error_message());
    cuctx_ctx stale_ctx = a;
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(k->raw(h.id), 0, "a child of an ended context gave a value");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_null(cuctx_ctx_raw(stale_ctx));
    cr_assert_eq(cuctx_ctx_device(stale_ctx), -1);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(k->destroy(&h.id));
    graph_fini();
    ASSERT_NO_MISUSE();
}

#define ACCESSOR_SUITE(name, ...) \
    Test(name, accessor_refuses_stale_and_orphaned_handles) { t_accessor_stale_and_orphan(&K_##name); }
TEST_CHILD_KINDS(ACCESSOR_SUITE)
#undef ACCESSOR_SUITE

/* ---- mutation survivors of lib/claim.c (h7) ---- */

/* A refused create names the kind of the handle it would have filled: a
 * stream handle as a stream, a context handle as a context.
 * Mutant killed: lib/claim.c:30 `ror` (the two names swapped: a stream's
 * refusal said "context handle", a context's "object handle"). */
Test(claim, a_refusal_names_the_kind_of_the_live_handle)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_stream s = {0};
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    size_t m = log_mark();
    expect_refused(cuctx_stream_create(&s, a, 0, 0), m, "cuctx_stream_create");
    cr_assert_neq(strstr(cuctx_last_error_message(), "(stream handle "), NULL, "%s", cuctx_last_error_message());
    expect_refused(cuctx_ctx_create(&a, 0, 0), m, "cuctx_ctx_create");
    cr_assert_neq(strstr(cuctx_last_error_message(), "(context handle "), NULL, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* A handle whose child went with its context is released by the next
 * create into it and left {0}, also when that create then fails on its own
 * arguments (an adopt of the legacy default stream).
 * Mutant killed: lib/claim.c:77 `const` (`*out = 0` made 1: the failed
 * adopt left the handle holding the id 1). */
Test(claim, an_orphaned_handle_released_by_a_failing_create_is_left_empty)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_stream s = {0};
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    CHECK_OK(cuctx_ctx_destroy(&a));   /* s's stream went with its context */
    new_ctx(&b, 0, NULL, LEFT_CURRENT);
    struct cuctx_stats st0 = stats();
    cr_assert_eq(cuctx_stream_adopt(&s, b, CU_STREAM_LEGACY, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "CU_STREAM_LEGACY"), NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(stats().stale_skips, st0.stale_skips + 1, "the orphaned stream's slot was not released");
    cr_assert_eq(s.id, 0, "the released handle holds %#llx", (unsigned long long)s.id);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&b));
    ASSERT_NO_MISUSE();
}

/* A create into the handle of a child of a borrowed context, when the
 * check of that context fails (cuCtxGetId answers an error that is neither
 * "destroyed" nor "deinitialized"), fails with that error and leaves the
 * handle and its child alone: whether the child lives is not known.
 * Mutant killed: lib/claim.c:67 `not` (`!cuctx__driver_gone(rc)` made
 * `cuctx__driver_gone(rc)`: the child was taken for dead, its slot
 * released and the create went on). */
Test(claim, a_create_into_a_child_whose_context_cannot_be_checked_fails)
{
    NEED_DRIVER();
    NEED_SIM();
    CUcontext r = raw_ctx_create(0, LEFT_CURRENT);
    cuctx_ctx a = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, r));
    cuctx_stream s = {0};
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    uint64_t keep = s.id;
    CUstream raw = cuctx_stream_raw(s);
    struct cuctx_stats st0 = stats();
    unsigned long made = calls("cuStreamCreateWithPriority") + calls("cuStreamCreate");
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_stream_create(&s, a, 0, 0), CUDA_ERROR_UNKNOWN, "%s", cuctx_last_error_message());
    cr_assert_neq(strstr(cuctx_last_error_message(), "cannot tell whether the stream"), NULL, "%s",
                  cuctx_last_error_message());
    cr_assert_eq(s.id, keep, "the handle was overwritten");
    cr_assert_eq(cuctx_stream_raw(s), raw);
    cr_assert_eq(stats().stale_skips, st0.stale_skips, "the live stream's slot was released");
    cr_assert_eq(calls("cuStreamCreateWithPriority") + calls("cuStreamCreate"), made, "the create went on");
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    raw_ctx_destroy(r);
    ASSERT_NO_MISUSE();
}
