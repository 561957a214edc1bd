/* SPDX-License-Identifier: MIT */
/* test_green.c - green contexts (issue 21): cuctx_ctx_green and
 * cuctx_ctx_green_desc, a cuctx_ctx like any other whose children the
 * driver treats two ways. Measured on the H200 (DRIVER-FACTS.md):
 * cuGreenCtxCreate retains the primary context and its destroy releases
 * it; its CUcontext has an id of its own (the same value as the CUgreenCtx
 * there; the simulator makes them differ, and cuctx must not assume
 * either); only its streams die with it (leaked unless destroyed first);
 * events, device and host memory, modules and graph execs belong to the
 * primary context underneath and live while it does; a green context
 * current when destroyed stays current, stale.
 *
 * Each test says in a line which bug it catches. They assert on the
 * simulated driver's call log (which call, on which value, with which
 * context current), its misuse log (empty), its live counts and its count
 * of leaked streams; those that need none of that run on a GPU too. */
#include "testlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

#if CUDA_VERSION >= 12040

/* ---- helpers -------------------------------------------------------------- */

/* A green context of sms SMs of device 0, named for traces; its CUcontext. */
static CUcontext green(cuctx_ctx *g, unsigned sms, const char *name)
{
    CHECK_OK(cuctx_ctx_green(g, 0, sms));
    CUcontext raw = cuctx_ctx_raw(*g);
    cr_assert_not_null(raw);
    if (name)
        name_handle('c', (uint64_t)(uintptr_t)raw, name);
    return raw;
}

/* The driver's value of device 0's primary context, through cuctx (a retain
 * and its release: a no-op for the primary's life while another holds it). */
static CUcontext primary_raw(void)
{
    cuctx_ctx p = {0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext raw = cuctx_ctx_raw(p);
    CHECK_OK(cuctx_ctx_destroy(&p));
    return raw;
}

/* The calls of the named entry points from mark on, as "fn(h),fn(h)",
 * each handle by the name name_handle gave it ('s' streams, 'c' contexts). */
static const char *calls_of(size_t mark, const char *const *fns, char *buf, size_t n)
{
    struct cusim_call c;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = mark; sim() && sim()->log_get(i, &c) == 0; i++)
        for (const char *const *f = fns; *f; f++)
            if (strcmp(c.fn, *f) == 0 && len < n) {
                char kind = strncmp(c.fn, "cuStream", 8) == 0 ? 's' : 'c';
                uint64_t h = strcmp(c.fn, "cuGreenCtxDestroy") == 0 ? c.handle2 : c.handle;
                len += (size_t)snprintf(buf + len, n - len, "%s%s(%s)", len ? "," : "", c.fn, name_of(kind, h));
            }
    return buf;
}
#define CALLS_OF(mark, ...) calls_of((mark), (const char *const[]){__VA_ARGS__, NULL}, (char[1024]){0}, 1024)

/* The child kinds but streams, one row each (kinds.h). */
struct kind {
    const char *name;
    enum cusim_kind sim;
    const char *create_fn, *destroy_fn;
    int needs_current;
    CUresult (*create)(uint64_t *id, cuctx_ctx c);
    CUresult (*ctx_of)(uint64_t id, cuctx_ctx *out);
    uint64_t (*raw)(uint64_t id);
};
#define KIND_ROW(name, type, stat, simk, letter, create_fn, destroy_fn, use_fn, needs_current, create, args, raw) \
    static CUresult name##_create(uint64_t *id, cuctx_ctx c) { return kind_create_##name((type *)id, c); }      \
    static CUresult name##_ctx_of(uint64_t id, cuctx_ctx *out) { return cuctx_##name##_ctx((type){id}, out); }  \
    static uint64_t name##_raw(uint64_t id) { return kind_raw_##name((type){id}); }                          \
    static const struct kind K_##name __attribute__((unused)) = {#name, simk, create_fn, destroy_fn,         \
                                                                 needs_current, name##_create,             \
                                                                 name##_ctx_of, name##_raw};
TEST_CHILD_KINDS(KIND_ROW)
#undef KIND_ROW
static const struct kind *const others[] = {&K_event, &K_module, &K_mem, &K_host_mem, &K_graph_exec};
#define N_OTHERS (sizeof others / sizeof others[0])

/* One child of every kind but streams, made in g; their raw values. */
static void make_others(cuctx_ctx g, CUcontext graw, uint64_t id[N_OTHERS], uint64_t raw[N_OTHERS])
{
    for (size_t k = 0; k < N_OTHERS; k++) {
        size_t mark = log_mark();
        id[k] = 0;
        CUresult rc = others[k]->create(&id[k], g);
        cr_assert_eq(rc, CUDA_SUCCESS, "%s in a green context: %s", others[k]->name, cuctx_last_error_message());
        raw[k] = others[k]->raw(id[k]);
        cr_assert_neq(raw[k], 0, "%s", others[k]->name);
        if (sim())
            cr_assert_eq(last_call(others[k]->create_fn, mark).ctx, (uint64_t)(uintptr_t)graw,
                         "%s not made with the green context current", others[k]->name);
    }
}

/* ---- the create -------------------------------------------------------------- */

TestSuite(green);

/* Bug caught: the split not asked for the count given, the green context
 * made without its default stream, or the create leaving it (or anything)
 * current, as cuctx_ctx_create would. */
Test(green, create_splits_the_sms_asked_and_makes_nothing_current)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_green(&g, 0, 16));
    cr_assert_neq(g.id, 0);
    struct cusim_call split = last_call("cuDevSmResourceSplitByCount", mark);
    cr_assert_eq(split.arg, 16, "the SMs asked");
    cr_assert_eq(split.handle2, 1, "one group");
    struct cusim_call desc = last_call("cuDevResourceGenerateDesc", mark);
    struct cusim_call create = last_call("cuGreenCtxCreate", mark);
    cr_assert_eq(create.rc, CUDA_SUCCESS);
    cr_assert_eq(create.flags, CU_GREEN_CTX_DEFAULT_STREAM);
    cr_assert_eq(create.arg, 0, "on device 0");
    cr_assert_eq(create.handle2, desc.handle, "from the descriptor of that split");
    cr_assert_null(current(), "the create made a context current");
    cr_assert_eq(calls("cuCtxPushCurrent"), calls("cuCtxPopCurrent"), "a push left behind");
    cr_assert_eq(sim()->live(CUSIM_GREEN), 1);
    cr_assert_eq(sim()->primary_refs(0), 1, "the green context's own retain of the primary, and no other");
    cr_assert_eq(cuctx_ctx_device(g), 0);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(g.id, 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: cuctx_ctx_raw giving the CUgreenCtx instead of its CUcontext
 * (one value on the H200, two in the simulator): every raw context call on
 * it would name a green context handle. */
Test(green, raw_is_the_cucontext_of_cuCtxFromGreenCtx)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_green(&g, 0, 16));
    struct cusim_call conv = last_call("cuCtxFromGreenCtx", mark);
    cr_assert_eq(conv.handle, last_call("cuGreenCtxCreate", mark).handle);
    CUcontext raw = cuctx_ctx_raw(g);
    cr_assert_eq((uint64_t)(uintptr_t)raw, conv.handle2, "cuctx_ctx_raw is not the CUcontext");
    cr_assert_neq((uint64_t)(uintptr_t)raw, conv.handle, "cuctx_ctx_raw is the CUgreenCtx");
    cr_assert(sim()->is_live(CUSIM_CONTEXT, (uint64_t)(uintptr_t)raw));
    int is = 1;
    CHECK_OK(cuctx_ctx_is_current(g, &is));
    cr_assert_eq(is, 0);
    CHECK_OK(cuctx_ctx_set_current(g));
    CHECK_OK(cuctx_ctx_is_current(g, &is));
    cr_assert_eq(is, 1);
    cr_assert_eq(current(), raw);
    CHECK_OK(cuctx_ctx_synchronize(g));
    CHECK_OK(cuctx_ctx_destroy(&g));
    ASSERT_NO_MISUSE();
}

/* Bug caught: a green context counted as no context, or as two (its entry
 * and the primary's) while nothing of the primary's is alive; the primary
 * not counted while a child of it lives. */
Test(green, stats_count_it_and_the_primary_under_its_children)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cuctx_event e = {0};
    struct cuctx_stats st0 = stats();
    green(&g, 16, NULL);
    struct cuctx_stats st = stats();
    cr_assert_eq(st.green_contexts, st0.green_contexts + 1);
    cr_assert_eq(st.contexts, st0.contexts + 1);
    cr_assert_eq(st.ctx_handles, st0.ctx_handles + 1);
    CHECK_OK(cuctx_event_create(&e, g, 0));
    st = stats();
    cr_assert_eq(st.contexts, st0.contexts + 2, "the event's context is the primary, a second context");
    cr_assert_eq(st.events, st0.events + 1);
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&g));
    st = stats();
    cr_assert_eq(st.green_contexts, st0.green_contexts);
    cr_assert_eq(st.contexts, st0.contexts);
    cr_assert_eq(st.ctx_handles, st0.ctx_handles);
    cr_assert_eq(st.failed_destroys, 0);
}

/* Bug caught: the leak report not naming a green context as one (or
 * without its create site), or naming its event's context as the green
 * context rather than the primary it belongs to. */
Test(green, leak_report_names_it_green_with_its_site_and_its_event_in_the_primary)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cuctx_event e = {0};
    CUcontext graw = green(&g, 16, NULL);
    int line = __LINE__ + 1;
    CHECK_OK(cuctx_event_create(&e, g, 0));
    CUcontext praw = primary_raw();
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cuctx_leak_report(f);
    rewind(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    char want[256];
    snprintf(want, sizeof want, "cuctx: leak: context %p (green, handle %#llx), created at ", (void *)graw,
             (unsigned long long)g.id);
    cr_assert(strstr(buf, want), "no line\n  %s\nin\n%s", want, buf);
    cr_assert(strstr(buf, "test_green.c:"), "without its create site:\n%s", buf);
    snprintf(want, sizeof want, "(handle %#llx) in context %p, created at %s:%d", (unsigned long long)e.id, (void *)praw,
             __FILE__, line);
    cr_assert(strstr(buf, want), "no line with\n  %s\nin\n%s", want, buf);
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&g));
}

/* Bug caught: a stale green handle used or destroyed again - a second
 * cuGreenCtxDestroy is a use of a destroyed green context, a create in it
 * would reach the driver with its dead CUcontext current. */
Test(green, a_stale_handle_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cuctx_event e = {0};
    green(&g, 16, NULL);
    cuctx_ctx copy = g;
    CHECK_OK(cuctx_ctx_destroy(&g));
    unsigned long destroys = calls("cuGreenCtxDestroy"), creates = calls("cuEventCreate");
    cuctx_ctx stale = copy;
    cr_assert_eq(cuctx_ctx_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(copy.id, 0);
    cr_assert_eq(cuctx_event_create(&e, stale, 0), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(e.id, 0);
    cr_assert_null(cuctx_ctx_raw(stale));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    int ran = 0, refused = 0;
    CUCTX_SCOPED_ELSE(stale, refused = 1) { ran = 1; }
    cr_assert(refused && !ran, "a scope entered a destroyed green context");
    cr_assert_eq(calls("cuGreenCtxDestroy"), destroys, "a stale destroy reached the driver");
    cr_assert_eq(calls("cuEventCreate"), creates, "a create through a stale handle reached the driver");
    cr_assert_null(current());
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: a failure on the way (cuGreenCtxCreate, cuCtxFromGreenCtx)
 * leaving a handle, or a green context and its retain of the primary alive. */
Test(green, a_failed_create_leaves_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    static const char *const steps[] = {"cuDeviceGetDevResource", "cuDevSmResourceSplitByCount",
                                        "cuDevResourceGenerateDesc", "cuGreenCtxCreate", "cuCtxFromGreenCtx"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        cuctx_ctx g = {0};
        sim()->fail_call(steps[i], 1, CUDA_ERROR_OUT_OF_MEMORY);
        cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_OUT_OF_MEMORY, "%s failing", steps[i]);
        cr_assert_eq(g.id, 0, "%s failing left a handle", steps[i]);
        cr_assert(strstr(cuctx_last_error_message(), steps[i]), "the message does not name %s: %s", steps[i],
                  cuctx_last_error_message());
        cr_assert_eq(sim()->live(CUSIM_GREEN), 0, "%s failing left the green context", steps[i]);
        cr_assert_eq(sim()->primary_refs(0), 0, "%s failing left a retain of the primary", steps[i]);
        cr_assert_eq(stats().ctx_handles, 0);
    }
    ASSERT_NO_MISUSE();
}

/* Bug caught: a failure to find the primary context under the new green
 * context (cuDevicePrimaryCtxGetState refused, where cuctx knows no
 * primary of the device yet) taken for success, or not undone: the create
 * must return the driver's error, leave the handle {0} and destroy the
 * green context it made, so that its retain of the primary goes too. */
Test(green, a_failed_look_for_the_primary_under_it_is_returned_and_undone)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    size_t mark = log_mark();
    sim()->fail_call("cuDevicePrimaryCtxGetState", 1, CUDA_ERROR_OPERATING_SYSTEM);
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_OPERATING_SYSTEM, "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, 0, "the failed create left a handle");
    cr_assert(strstr(cuctx_last_error_message(), "cuDevicePrimaryCtxGetState"), "the message does not name it: %s",
              cuctx_last_error_message());
    struct cusim_call state = last_call("cuDevicePrimaryCtxGetState", mark);
    cr_assert_eq(state.rc, CUDA_ERROR_OPERATING_SYSTEM);
    cr_assert_eq(state.arg, 0, "device 0's primary asked");
    uint64_t made = last_call("cuGreenCtxCreate", mark).handle;
    cr_assert_neq(made, 0);
    cr_assert_eq(calls_on("cuGreenCtxDestroy", made, mark), 1, "the green context it made was not destroyed");
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0);
    cr_assert_eq(sim()->primary_refs(0), 0, "the green context's retain of the primary is left");
    cr_assert_eq(stats().ctx_handles, 0);
    cr_assert_eq(stats().green_contexts, 0);
    /* nothing of it is left to trip the next create */
    green(&g, 16, NULL);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a count no partition fits passed on as a partition of 0 SMs,
 * or more SMs than the device has asked of the driver. */
Test(green, a_count_no_partition_fits_is_invalid_value)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    unsigned long creates = calls("cuGreenCtxCreate");
    cr_assert_eq(cuctx_ctx_green(&g, 0, 133), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "device 0 has 132 SMs, fewer than the 133 asked"), "%s",
              cuctx_last_error_message());
    /* 130 rounds up to 136 in the simulator's model: no group */
    cr_assert_eq(cuctx_ctx_green(&g, 0, 130), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "give no partition of 130"), "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert_eq(calls("cuGreenCtxCreate"), creates);
    cr_assert_eq(cuctx_ctx_green_desc(&g, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_ctx_green(NULL, 0, 16), CUDA_ERROR_INVALID_VALUE);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a green create into a handle that holds a live context
 * going on (the claim's refusal not returned): the handle overwritten, its
 * context orphaned, a green context made that no handle names (found by
 * the mutant lib/green.c:200 `ret`, seed 47: no test ran the line). */
Test(green, a_create_into_a_live_handle_is_refused_and_leaves_it)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, kept;
    CHECK_OK(cuctx_ctx_green(&g, 0, 16));
    kept = g;
    unsigned long splits = calls("cuDevSmResourceSplitByCount"), creates = calls("cuGreenCtxCreate");
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "already holds a live object"), "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, kept.id, "the refused create changed the handle");
    cr_assert_eq(calls("cuDevSmResourceSplitByCount"), splits, "the refused create asked the driver to split");
    cr_assert_eq(calls("cuGreenCtxCreate"), creates, "the refused create made a green context");
    cr_assert_eq(sim()->live(CUSIM_GREEN), 1);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: two green contexts from one split (the group and the
 * remaining SMs) not made from the caller's descriptors. */
Test(green, desc_makes_it_from_the_callers_descriptor)
{
    NEED_DRIVER();
    PFN_cuDeviceGetDevResource_v12040 get = (PFN_cuDeviceGetDevResource_v12040)drv_sym("cuDeviceGetDevResource", 12040);
    PFN_cuDevSmResourceSplitByCount_v12040 split =
        (PFN_cuDevSmResourceSplitByCount_v12040)drv_sym("cuDevSmResourceSplitByCount", 12040);
    PFN_cuDevResourceGenerateDesc_v12040 gen = (PFN_cuDevResourceGenerateDesc_v12040)drv_sym("cuDevResourceGenerateDesc", 12040);
    CUdevResource all, part, rest;
    unsigned n = 1;
    CHECK_OK(get(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    CHECK_OK(split(&part, &n, &all, &rest, 0, 16));
    cr_assert_eq(n, 1);
    CUdevResourceDesc dsmall = NULL, dbig = NULL;
    CHECK_OK(gen(&dsmall, &part, 1));
    CHECK_OK(gen(&dbig, &rest, 1));
    cuctx_ctx small = {0}, big = {0};
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_green_desc(&small, 0, dsmall));
    if (sim())
        cr_assert_eq(last_call("cuGreenCtxCreate", mark).handle2, (uint64_t)(uintptr_t)dsmall);
    mark = log_mark();
    CHECK_OK(cuctx_ctx_green_desc(&big, 0, dbig));
    if (sim()) {
        cr_assert_eq(last_call("cuGreenCtxCreate", mark).handle2, (uint64_t)(uintptr_t)dbig);
        cr_assert_eq(calls("cuDevSmResourceSplitByCount"), 1, "cuctx split again");
        cr_assert_eq(sim()->live(CUSIM_GREEN), 2);
        cr_assert_eq(sim()->primary_refs(0), 2);
    }
    cr_assert_neq(cuctx_ctx_raw(small), cuctx_ctx_raw(big));
    CHECK_OK(cuctx_ctx_destroy(&small));
    CHECK_OK(cuctx_ctx_destroy(&big));
    if (sim()) {
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
        ASSERT_NO_MISUSE();
    }
}

/* ---- a driver or device without green contexts ------------------------------ */

/* Bug caught: a driver older than 12.4 reached through a NULL entry point
 * (a crash), or refused with an error that does not say what is missing. */
Test(green, a_driver_without_green_contexts_is_not_supported)
{
    NEED_SIM();
    sim()->hide_green(1);   /* before cuctx loads the driver: the loader resolves its table once */
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(g.id, 0);
    const char *m = cuctx_last_error_message();
    cr_assert(strstr(m, "cuctx_ctx_green: the driver has no green contexts") && strstr(m, "CUDA 12.4"), "%s", m);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_NOT_SUPPORTED);
    CUdevResourceDesc d = (CUdevResourceDesc)(uintptr_t)0x1000;
    cr_assert_eq(cuctx_ctx_green_desc(&g, 0, d), CUDA_ERROR_NOT_SUPPORTED);
    m = cuctx_last_error_message();
    cr_assert(strstr(m, "cuctx_ctx_green_desc: the driver has no green contexts") && strstr(m, "cuGreenCtxCreate"),
              "%s", m);
    cr_assert_eq(calls("cuGreenCtxCreate") + calls("cuDeviceGetDevResource"), 0);
    cr_assert_eq(stats().ctx_handles, 0);
    /* everything else still works */
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, POPPED);
    CHECK_OK(cuctx_ctx_destroy(&c));
    ASSERT_NO_MISUSE();
}

/* Bug caught: a device that refuses green contexts reported as some other
 * failure, or its NOT_SUPPORTED turned into another code. */
Test(green, a_device_without_support_is_not_supported_and_named)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    sim()->fail_call("cuDeviceGetDevResource", 1, CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "device 0 does not support green contexts (cuDeviceGetDevResource"),
              "%s", cuctx_last_error_message());
    sim()->fail_call("cuGreenCtxCreate", 1, CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "device 0 does not support green contexts (cuGreenCtxCreate"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

/* ---- its streams: destroyed before it ------------------------------------------- */

/* Bug caught: the green context destroyed with its streams alive (the
 * driver leaks them: cusim_leaked_streams), or its streams destroyed after
 * it (709 on the real driver), or a stream adopted only to track destroyed
 * by cuctx; their handles then destroyed a second time through the driver. */
Test(green, destroy_destroys_its_streams_first_then_the_green_context)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0};
    cuctx_stream s1 = {0}, s2 = {0}, s3 = {0}, tracked = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s1, g, 0, 0));
    CHECK_OK(cuctx_stream_create(&s2, g, CU_STREAM_NON_BLOCKING, -1));
    CUCTX_SCOPED(g) {   /* {0}: the current context, the green one */
        CHECK_OK(cuctx_stream_create(&s3, (cuctx_ctx){0}, 0, 0));
    }
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s1), "s1");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s2), "s2");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s3), "s3");
    /* the program's own stream, tracked only, destroyed by the program */
    PFN_cuStreamCreate_v2000 create = (PFN_cuStreamCreate_v2000)drv_sym("cuStreamCreate", 2000);
    PFN_cuStreamDestroy_v4000 destroy = (PFN_cuStreamDestroy_v4000)drv_sym("cuStreamDestroy", 4000);
    CUstream mine = NULL;
    CUCTX_SCOPED(g) {
        CHECK_OK(create(&mine, 0));
    }
    CHECK_OK(cuctx_stream_adopt(&tracked, g, mine, 0));
    cr_assert_eq(sim()->live(CUSIM_STREAM), 4);
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamDestroy(s1),cuStreamDestroy(s2),cuStreamDestroy(s3),cuGreenCtxDestroy(G)");
    cr_assert_eq(calls_on("cuStreamDestroy", (uint64_t)(uintptr_t)mine, mark), 0, "a tracked stream destroyed");
    cr_assert_eq(sim()->leaked_streams(), 1, "the tracked stream is the program's to destroy, not cuctx's");
    /* their handles stay until their own destroy, which the driver never sees */
    struct cuctx_stats st = stats();
    cr_assert_eq(st.streams, 4);
    mark = log_mark();
    CHECK_OK(cuctx_stream_destroy(&s1));
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_stream_destroy(&s3));
    CHECK_OK(cuctx_stream_destroy(&tracked));
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy"), "", "a stream destroyed twice");
    cr_assert_eq(stats().streams, 0);
    cr_assert_eq(stats().stale_skips, st.stale_skips + 3, "three skipped destroys");
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    (void)destroy;
    ASSERT_NO_MISUSE();
}

/* Bug caught: a green context's stream left usable after its destroy (a
 * call on a dead stream), or its CUCTX_AUTO cleanup reporting an error. */
Test(green, its_streams_after_its_destroy_are_refused_and_their_cleanup_is_quiet)
{
    NEED_DRIVER();
    struct handler_count h;
    cuctx_ctx g = {0};
    green(&g, 16, NULL);
    count_handler_install(&h);
    {
        CUCTX_AUTO cuctx_stream s = {0};
        CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
        CHECK_OK(cuctx_stream_synchronize(s));
        CHECK_OK(cuctx_ctx_destroy(&g));
        unsigned long syncs = calls("cuStreamSynchronize");
        cr_assert_eq(cuctx_stream_synchronize(s), CUDA_ERROR_CONTEXT_IS_DESTROYED);
        cr_assert_null(cuctx_stream_raw(s));
        cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
        cuctx_ctx owner = {0};
        cr_assert_eq(cuctx_stream_ctx(s, &owner), CUDA_ERROR_CONTEXT_IS_DESTROYED);
        cr_assert_eq(owner.id, 0);
        cr_assert_eq(calls("cuStreamSynchronize"), syncs, "a dead stream reached the driver");
    }   /* its cleanup: a skipped stale destroy */
    cr_assert_eq(h.calls, 0, "the cleanup reported: %s", h.last_msg);
    cr_assert_eq(stats().streams, 0);
    cuctx_set_error_handler(NULL, NULL);
    if (sim()) {
        cr_assert_eq(sim()->leaked_streams(), 0);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a stream's stream-ordered memory freed with cuMemFree (as
 * after any context's end) while its work may still run: the green
 * context's destroy must wait for a stream that carried such memory before
 * destroying it - a blocking one too, whose work no legacy stream orders
 * once the green context is gone. */
Test(green, a_stream_that_carried_stream_ordered_memory_is_waited_for_first)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0};
    cuctx_stream blocking = {0}, nonblocking = {0}, plain = {0};
    cuctx_mem a = {0}, b = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&blocking, g, 0, 0));
    CHECK_OK(cuctx_stream_create(&nonblocking, g, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&plain, g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(blocking), "blocking");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(nonblocking), "nonblocking");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(plain), "plain");
    CHECK_OK(cuctx_mem_alloc_async(&a, blocking, 4096));
    CHECK_OK(cuctx_mem_alloc_async(&b, nonblocking, 4096));
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamSynchronize", "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamSynchronize(blocking),cuStreamDestroy(blocking),"
                     "cuStreamSynchronize(nonblocking),cuStreamDestroy(nonblocking),"
                     "cuStreamDestroy(plain),cuGreenCtxDestroy(G)");
    uint64_t pa = cuctx_mem_ptr(a), pb = cuctx_mem_ptr(b);
    mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&a));
    CHECK_OK(cuctx_mem_destroy(&b));
    cr_assert_eq(calls_on("cuMemFree", pa, mark) + calls_on("cuMemFree", pb, mark), 2,
                 "stream-ordered memory is freed whatever became of its context");
    cr_assert_eq(sim()->orphaned_work(), 0);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    CHECK_OK(cuctx_stream_destroy(&blocking));
    CHECK_OK(cuctx_stream_destroy(&nonblocking));
    CHECK_OK(cuctx_stream_destroy(&plain));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: the memory of a green context's stream, the green context
 * gone while the primary context underneath lives on, freed by cuMemFree
 * (which leaves the pool counting it as used, measured) instead of on the
 * primary context's legacy stream, with the primary current for the call
 * only. */
Test(green, its_stream_ordered_memory_is_freed_in_the_living_primary_context)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, pc = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    uint64_t p = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_destroy(&g));
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(NULL);
    struct cusim_call f = last_call("cuMemFreeAsync", mark);
    cr_assert_eq(f.handle, p, "not freed by cuMemFreeAsync");
    cr_assert_eq(f.stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY);
    cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)cuctx_ctx_raw(pc), "not in the primary context");
    cr_assert_eq(calls_on("cuMemFree", p, mark), 0);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
    ASSERT_NO_MISUSE();
}

/* The destroy of one of its streams on another thread, under way while the
 * green context is destroyed: cuStreamDestroy is delayed, so the green
 * context's destroy comes while it sleeps in it.
 * Bug caught: the stream destroyed twice (once by each), or the green
 * context destroyed while the stream's destroy is still in the driver. */
struct destroy_arg { cuctx_stream s; CUresult rc; };
static void *destroy_stream(void *p)
{
    struct destroy_arg *a = p;
    a->rc = cuctx_stream_destroy(&a->s);
    return NULL;
}

Test(green, a_stream_destroy_under_way_on_another_thread_reaches_the_driver_once)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0};
    struct destroy_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    cuctx_stream other = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&a.s, g, 0, 0));
    CHECK_OK(cuctx_stream_create(&other, g, 0, 0));
    uint64_t raw = (uint64_t)(uintptr_t)cuctx_stream_raw(a.s);
    name_handle('s', raw, "theirs");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(other), "other");
    sim()->set_delay("cuStreamDestroy", 200000);
    size_t mark = log_mark();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_stream, &a), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    CHECK_OK(cuctx_ctx_destroy(&g));
    pthread_join(t, NULL);
    CHECK_OK(a.rc);
    cr_assert_eq(calls_on("cuStreamDestroy", raw, mark), 1, "destroyed twice, or not at all");
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamDestroy(theirs),cuStreamDestroy(other),cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->leaked_streams(), 0);
    sim()->set_delay("cuStreamDestroy", 0);
    CHECK_OK(cuctx_stream_destroy(&other));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The other order: a stream's own destroy on the main thread comes after
 * the green context's destroy (on thread t) has destroyed that stream, and
 * while it still destroys the next (cuStreamDestroy is delayed). Bug
 * caught: the ended stream's handle still tethered to the green context's
 * entry, which stays open until every stream is done: its destroy would
 * reach cuStreamDestroy a second time, with a stream the driver no longer
 * has. */
struct ctx_destroy_arg { cuctx_ctx g; CUresult rc; };
static void *destroy_ctx(void *p)
{
    struct ctx_destroy_arg *a = p;
    a->rc = cuctx_ctx_destroy(&a->g);
    return NULL;
}

Test(green, a_stream_it_destroyed_is_never_destroyed_again_while_it_goes_on)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    struct ctx_destroy_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    cuctx_stream first = {0}, second = {0};
    green(&a.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&first, a.g, 0, 0));
    CHECK_OK(cuctx_stream_create(&second, a.g, 0, 0));
    uint64_t raw1 = (uint64_t)(uintptr_t)cuctx_stream_raw(first), raw2 = (uint64_t)(uintptr_t)cuctx_stream_raw(second);
    name_handle('s', raw1, "first");
    name_handle('s', raw2, "second");
    sim()->set_delay("cuStreamDestroy", 200000);
    size_t mark = log_mark();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_ctx, &a), 0);
    /* t in the destroy of the second stream, the first one's done (a call
     * is logged as it returns) */
    while (calls_on("cuStreamDestroy", raw1, mark) == 0 || sim()->sleeping() == 0)
        usleep(1000);
    CHECK_OK(cuctx_stream_destroy(&first));
    cr_assert_eq(first.id, 0);
    pthread_join(t, NULL);
    CHECK_OK(a.rc);
    sim()->set_delay("cuStreamDestroy", 0);
    cr_assert_eq(calls_on("cuStreamDestroy", raw1, mark), 1, "the first stream destroyed twice");
    CHECK_OK(cuctx_stream_destroy(&second));
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamDestroy(first),cuStreamDestroy(second),cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A create in the green context while its destroy is under way (delayed in
 * the destroy of its stream): reached through {0} by a thread on which it
 * is current, the handle itself being gone by then.
 * Bug caught: a stream (or anything) made in a green context after its
 * destroy has walked its streams - a stream the driver then leaks. */
struct create_arg { cuctx_ctx g; volatile int entered, go; CUresult rc_stream, rc_event; };
static void *create_late(void *p)
{
    struct create_arg *a = p;
    CUCTX_SCOPED(a->g) {
        cuctx_stream s = {0};
        cuctx_event e = {0};
        a->entered = 1;
        while (!a->go)
            usleep(1000);
        a->rc_stream = cuctx_stream_create(&s, (cuctx_ctx){0}, 0, 0);
        a->rc_event = cuctx_event_create(&e, (cuctx_ctx){0}, 0);
        cuctx_stream_destroy(&s);
        cuctx_event_destroy(&e);
    }
    return NULL;
}
Test(green, a_create_while_its_destroy_is_under_way_is_refused)
{
    NEED_DRIVER();
    NEED_SIM();
    struct create_arg a = {{0}, 0, 0, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
    cuctx_stream s = {0};
    green(&a.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, a.g, 0, 0));
    pthread_t t, d;
    cr_assert_eq(pthread_create(&t, NULL, create_late, &a), 0);
    while (!a.entered)
        usleep(1000);
    unsigned long stream_creates = calls("cuStreamCreateWithPriority"), event_creates = calls("cuEventCreate");
    /* the creates go while the destroy sleeps in its stream's cuStreamDestroy */
    sim()->set_delay("cuStreamDestroy", 300000);
    struct ctx_destroy_arg da = {a.g, CUDA_ERROR_UNKNOWN};
    cr_assert_eq(pthread_create(&d, NULL, destroy_ctx, &da), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    a.go = 1;
    pthread_join(t, NULL);
    pthread_join(d, NULL);
    sim()->set_delay("cuStreamDestroy", 0);
    CHECK_OK(da.rc);
    cr_assert_eq(a.rc_stream, CUDA_ERROR_CONTEXT_IS_DESTROYED, "a stream made while the destroy walked: %s",
                 cuctx_result_name(a.rc_stream));
    cr_assert_eq(a.rc_event, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(calls("cuStreamCreateWithPriority"), stream_creates, "the create reached the driver");
    cr_assert_eq(calls("cuEventCreate"), event_creates, "the create reached the driver");
    cr_assert_eq(sim()->leaked_streams(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    cr_assert_eq(stats().ctx_handles, 0);
    ASSERT_NO_MISUSE();
}

/* The same create on a thread that lives on: this one, inside the green
 * context's scope, while the destroy (on thread d, held by the simulator
 * after its stream's cuStreamDestroy) goes on to drain the holds on the
 * green context's entry. Bug caught: the refusal keeping its hold on the entry -
 * the destroy then waits for this thread for good (alarm). Mutant killed:
 * lib/green.c:70 (`cuctx__entry_release(o);` of the refusal removed;
 * seed 41), which the test above misses: its creating thread ends before
 * the destroy drains, and its end lets go of the hold. */
Test(green, a_refused_create_while_its_destroy_is_under_way_holds_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct ctx_destroy_arg da = {{0}, CUDA_ERROR_UNKNOWN};
    cuctx_stream s = {0};
    green(&da.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, da.g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s), "s");
    unsigned long stream_creates = calls("cuStreamCreateWithPriority");
    size_t mark = log_mark();
    CUCTX_SCOPED(da.g) {
        pthread_t d;
        sim()->hold_after("cuStreamDestroy");
        cr_assert_eq(pthread_create(&d, NULL, destroy_ctx, &da), 0);
        while (sim()->sleeping() == 0)
            usleep(1000);
        cuctx_stream late = {0};
        CUresult rc = cuctx_stream_create(&late, (cuctx_ctx){0}, 0, 0);
        sim()->let_go();
        cr_assert_eq(pthread_join(d, NULL), 0);
        cr_assert_eq(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(rc));
        cr_assert_eq(late.id, 0);
    }
    CHECK_OK(da.rc);
    cr_assert_eq(calls("cuStreamCreateWithPriority"), stream_creates, "the create reached the driver");
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"), "cuStreamDestroy(s),cuGreenCtxDestroy(G)");
    cr_assert_null(current());
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    cr_assert_eq(stats().ctx_handles, 0);
    ASSERT_NO_MISUSE();
}

/* A call on one of its streams begun while its destroy walks the streams
 * (held by the simulator after the first stream's cuStreamDestroy): the
 * walk, reaching that stream, waits for the call (slowed in
 * cuStreamSynchronize) before it destroys the stream. Bug caught: the
 * stream destroyed under a call still in the driver, which then names a
 * destroyed stream (the simulator's misuse). Mutant killed:
 * lib/green.c:308 (`cuctx__drain_slow(c);` removed; seed 41). */
struct sync_arg { cuctx_stream s; CUresult rc; };
static void *sync_stream(void *p)
{
    struct sync_arg *a = p;
    a->rc = cuctx_stream_synchronize(a->s);
    return NULL;
}

Test(green, its_destroy_waits_for_a_call_under_way_on_a_stream_it_ends)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    unique_addresses();
    struct ctx_destroy_arg da = {{0}, CUDA_ERROR_UNKNOWN};
    struct sync_arg sa = {{0}, CUDA_ERROR_UNKNOWN};
    cuctx_stream first = {0};
    green(&da.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&first, da.g, 0, 0));
    CHECK_OK(cuctx_stream_create(&sa.s, da.g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(first), "first");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(sa.s), "second");
    size_t mark = log_mark();
    pthread_t d, t;
    sim()->hold_after("cuStreamDestroy");
    cr_assert_eq(pthread_create(&d, NULL, destroy_ctx, &da), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    /* the destroy is past the first stream; the call on the second begins */
    sim()->set_delay("cuStreamSynchronize", 200000);
    cr_assert_eq(pthread_create(&t, NULL, sync_stream, &sa), 0);
    while (sim()->sleeping() < 2)
        usleep(1000);
    sim()->let_go();
    cr_assert_eq(pthread_join(d, NULL), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    sim()->set_delay("cuStreamSynchronize", 0);
    CHECK_OK(da.rc);
    CHECK_OK(sa.rc);
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamSynchronize", "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamDestroy(first),cuStreamSynchronize(second),cuStreamDestroy(second),"
                     "cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->leaked_streams(), 0);
    CHECK_OK(cuctx_stream_destroy(&first));
    CHECK_OK(cuctx_stream_destroy(&sa.s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Its stream's destroy answered CUDA_ERROR_DEINITIALIZED (the driver shut
 * down meanwhile, as at process exit): the green context is not destroyed
 * through the driver after it, and the destroy succeeds quietly. Bug
 * caught: the driver called again after it said it was gone. Mutant
 * killed: lib/green.c:368 (`!gone && !shutdown` made `!gone || !shutdown`:
 * the flag set during the destroy not looked at; seed 41). */
Test(green, a_driver_gone_in_its_stream_destroy_skips_its_own_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    cuctx_stream s = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s), "s");
    sim()->fail_call("cuStreamDestroy", 1, CUDA_ERROR_DEINITIALIZED);
    size_t mark = log_mark();
    uint64_t failed = stats().failed_destroys;
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(g.id, 0);
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"), "cuStreamDestroy(s)",
                     "the green context destroyed through a driver that is gone");
    cr_assert_eq(stats().failed_destroys, failed);
    cr_assert_eq(stats().ctx_handles, 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(stats().streams, 0);
}

/* A green context made after another was destroyed takes creates, though
 * its entry may be the slot of the one destroyed, whose destroy marked it
 * ending: a new entry starts not ending (entry.c, cuctx__entry_new). Each
 * round's stream and event reach the driver in the round's green context. */
Test(green, a_green_context_made_after_one_destroyed_takes_creates)
{
    NEED_DRIVER();
    NEED_SIM();
    for (int round = 0; round < 4; round++) {
        cuctx_ctx g = {0};
        cuctx_stream s = {0};
        cuctx_event e = {0};
        green(&g, 16, NULL);
        size_t mark = log_mark();
        CUresult rc = cuctx_stream_create(&s, g, 0, 0);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: stream: %s", round, cuctx_last_error_message());
        rc = cuctx_event_create(&e, g, 0);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: event: %s", round, cuctx_last_error_message());
        cr_assert_eq(nth_call("cuStreamCreateWithPriority", mark, 0).rc, CUDA_SUCCESS, "round %d", round);
        cr_assert_eq(nth_call("cuEventCreate", mark, 0).rc, CUDA_SUCCESS, "round %d", round);
        CHECK_OK(cuctx_event_destroy(&e));
        CHECK_OK(cuctx_stream_destroy(&s));
        CHECK_OK(cuctx_ctx_destroy(&g));
    }
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* ---- everything else: the primary context's ---------------------------------- */

/* Every kind but streams made in the green context, the green context
 * destroyed while the primary lives (held by holder), then each destroyed:
 * through the driver, with the primary current where the destroy needs a
 * context, never the dead green one. */
enum holder { BY_CUCTX, BY_RUNTIME, BY_NEXT_GREEN };
static void others_outlive_it(enum holder holder)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0}, p = {0}, next = {0};
    uint64_t id[N_OTHERS], raw[N_OTHERS];
    CUcontext graw = green(&g, 16, "G");
    if (holder == BY_CUCTX)
        CHECK_OK(cuctx_ctx_primary(&p, 0));
    else if (holder == BY_RUNTIME)
        cr_assert_eq(sim()->primary_outside_retain(0), 0);
    CUcontext praw = primary_raw();
    make_others(g, graw, id, raw);
    for (size_t k = 0; k < N_OTHERS; k++) {
        cuctx_ctx owner = {0};
        CHECK_OK(others[k]->ctx_of(id[k], &owner));
        cr_assert_eq(cuctx_ctx_raw(owner), praw, "%s: its context is not the primary", others[k]->name);
        CHECK_OK(cuctx_ctx_destroy(&owner));
    }
    if (holder == BY_NEXT_GREEN)
        green(&next, 8, "next");
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(last_call("cuGreenCtxDestroy", mark).rc, CUDA_SUCCESS);
    cr_assert_eq(sim()->primary_refs(0), 1, "the primary's holder");
    for (size_t k = 0; k < N_OTHERS; k++)
        cr_assert(sim()->is_live(others[k]->sim, raw[k]), "%s died with the green context", others[k]->name);
    struct cuctx_stats st = stats();
    for (size_t k = 0; k < N_OTHERS; k++) {
        mark = log_mark();
        CHECK_OK((cuctx_destroy)(&id[k]));
        struct cusim_call c = last_call(others[k]->destroy_fn, mark);
        cr_assert_eq(c.handle, raw[k], "%s: not freed through the driver (skipped as the green context's?)",
                     others[k]->name);
        cr_assert_eq(c.rc, CUDA_SUCCESS, "%s", others[k]->name);
        if (others[k]->needs_current)
            cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)praw, "%s: freed with %s current, not the primary",
                         others[k]->name, name_of('c', c.ctx));
        cr_assert_neq(c.ctx, (uint64_t)(uintptr_t)graw, "%s: freed with the dead green context current",
                      others[k]->name);
    }
    cr_assert_eq(stats().stale_skips, st.stale_skips, "a child of the living primary skipped");
    cr_assert_null(current());
    if (holder == BY_CUCTX)
        CHECK_OK(cuctx_ctx_destroy(&p));
    else if (holder == BY_RUNTIME)
        cr_assert_eq(sim()->primary_outside_release(0), 0);
    else
        CHECK_OK(cuctx_ctx_destroy(&next));
    graph_fini();
    cr_assert_eq(sim()->live(CUSIM_ALL), 0, "something leaked");
    ASSERT_NO_MISUSE();
}

/* Bug caught: the children tethered to the green context's generation -
 * skipped at their destroy, so leaked while the primary lives (cuctx holds
 * it here), or freed with the dead green context current. */
Test(green, its_other_children_are_freed_after_it_while_cuctx_holds_the_primary)
{
    others_outlive_it(BY_CUCTX);
}

/* Bug caught: the same with the CUDA runtime holding the primary: a tether
 * ended by cuctx's own bookkeeping instead of the driver's id. */
Test(green, its_other_children_are_freed_after_it_while_the_runtime_holds_the_primary)
{
    others_outlive_it(BY_RUNTIME);
}

/* Bug caught: the same with the next green context holding the primary:
 * the destroy taking its retain for the primary's last. */
Test(green, its_other_children_are_freed_after_it_while_the_next_green_context_lives)
{
    others_outlive_it(BY_NEXT_GREEN);
}

/* Bug caught: the children freed through the driver after the green
 * context's destroy ended the primary (it held the last retain): the real
 * driver answers 709, 400 or 1 - or crashes - and the simulator records
 * each as a misuse. */
Test(green, its_other_children_are_skipped_once_its_destroy_ended_the_primary)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0};
    uint64_t id[N_OTHERS], raw[N_OTHERS];
    CUcontext graw = green(&g, 16, "G");
    make_others(g, graw, id, raw);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->primary_refs(0), 0, "its retain was the last");
    struct cuctx_stats st = stats();
    size_t mark = log_mark();
    for (size_t k = 0; k < N_OTHERS; k++) {
        cr_assert_eq(others[k]->raw(id[k]), 0, "%s: the accessor gave a dead object's value", others[k]->name);
        cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
        CHECK_OK((cuctx_destroy)(&id[k]));
        cr_assert_eq(calls_on(others[k]->destroy_fn, raw[k], mark), 0, "%s: the destroy reached the driver",
                     others[k]->name);
    }
    cr_assert_eq(stats().stale_skips, st.stale_skips + N_OTHERS);
    graph_fini();
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A destroy of the green context's event on another thread, in the
 * driver (delayed there) when the green context's destroy ends the
 * primary it held the last retain of.
 * Bug caught: the primary ended under a child call under way in it - on
 * the real driver a destroy of a dead event (709, or a crash); here a
 * misuse. The destroy must wait for it, as cuctx's last primary release
 * does. */
struct event_arg { cuctx_event e; CUresult rc; };
static void *destroy_event(void *p)
{
    struct event_arg *a = p;
    a->rc = cuctx_event_destroy(&a->e);
    return NULL;
}

Test(green, its_destroy_waits_for_a_child_call_under_way_in_the_primary_it_ends)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    struct event_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    green(&g, 16, "G");
    CHECK_OK(cuctx_event_create(&a.e, g, 0));
    uint64_t raw = (uint64_t)(uintptr_t)cuctx_event_raw(a.e);
    sim()->set_delay("cuEventDestroy", 200000);
    size_t mark = log_mark();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_event, &a), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    CHECK_OK(cuctx_ctx_destroy(&g));
    pthread_join(t, NULL);
    sim()->set_delay("cuEventDestroy", 0);
    CHECK_OK(a.rc);
    struct cusim_call ed = last_call("cuEventDestroy", mark);
    cr_assert_eq(ed.handle, raw);
    cr_assert_eq(ed.rc, CUDA_SUCCESS, "the event was destroyed after its primary ended");
    cr_assert_str_eq(log_seq(mark, (const char *const[]){"cuEventDestroy", "cuGreenCtxDestroy", NULL}, (char[256]){0}, 256),
                     "cuEventDestroy,cuGreenCtxDestroy");
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: children made after a reset of the primary under a living
 * green context sent to the driver (709 there), and those made before it
 * freed after it. The simulator's model: a reset ends the primary's
 * children; the green context lives on, its creates 709 until a retain. */
Test(green, a_reset_of_the_primary_under_it_ends_its_other_children)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, p = {0};
    cuctx_event e = {0}, e2 = {0};
    cuctx_stream s = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_event_create(&e, g, 0));
    CHECK_OK(cuctx_stream_create(&s, g, 0, 0));
    uint64_t eraw = (uint64_t)(uintptr_t)cuctx_event_raw(e);
    CHECK_OK(cuctx_ctx_primary_reset(0));
    size_t mark = log_mark();
    unsigned long creates = calls("cuEventCreate");
    cr_assert_eq(cuctx_event_create(&e2, g, 0), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert(strstr(cuctx_last_error_message(), "primary context under the green context has ended"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(calls("cuEventCreate"), creates, "the create reached the driver");
    CHECK_OK(cuctx_event_destroy(&e));
    cr_assert_eq(calls_on("cuEventDestroy", eraw, mark), 0, "an event of the reset primary freed");
    /* a retain makes the primary active again, with a new id */
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&e2, g, 0));
    CHECK_OK(cuctx_event_destroy(&e2));
    CHECK_OK(cuctx_ctx_destroy(&g));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(sim()->leaked_streams(), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: an event of the green context (the primary's) refused on
 * its own stream - "different contexts" - or one of an unrelated context
 * let through to the driver. */
Test(green, its_events_record_and_its_graph_execs_launch_on_its_streams)
{
    NEED_DRIVER();
    cuctx_ctx g = {0}, other = {0}, g2 = {0};
    cuctx_stream s = {0}, s2 = {0};
    cuctx_event e = {0}, foreign = {0};
    cuctx_graph_exec ge = {0};
    green(&g, 16, NULL);
    green(&g2, 8, NULL);
    CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&s2, g2, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_event_create(&e, g, 0));
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_record(e, s));
    if (sim())
        cr_assert_eq(last_call("cuEventRecord", mark).handle2, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
    CHECK_OK(cuctx_event_record(e, s2));    /* another green context over the same primary */
    CHECK_OK(cuctx_event_synchronize(e));
    CHECK_OK(cuctx_stream_wait_event(s, e));
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, g, test_graph(g), 0));
    CHECK_OK(cuctx_graph_exec_launch(ge, s));
    CHECK_OK(cuctx_stream_synchronize(s));
    new_ctx(&other, 0, NULL, POPPED);
    CHECK_OK(cuctx_event_create(&foreign, other, 0));
    unsigned long records = calls("cuEventRecord");
    cr_assert_eq(cuctx_event_record(foreign, s), CUDA_ERROR_INVALID_CONTEXT);
    cr_assert_eq(calls("cuEventRecord"), records);
    CHECK_OK(cuctx_event_destroy(&foreign));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_ctx_destroy(&g));
    CHECK_OK(cuctx_ctx_destroy(&g2));
    CHECK_OK(cuctx_ctx_destroy(&other));
    graph_fini();
    if (sim()) {
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a kernel of a module loaded in the green context launched
 * with the wrong context current (its stream's, the green one, is right). */
Test(green, a_kernel_of_its_module_launches_on_its_stream)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cuctx_module m = {0};
    cuctx_stream s = {0};
    CUfunction f = NULL;
    CUcontext graw = green(&g, 16, NULL);
    CHECK_OK(cuctx_module_load(&m, g, test_data_path("vadd.ptx")));
    CHECK_OK(cuctx_module_function(m, "vadd", &f));
    CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
    size_t mark = log_mark();
    void *args[] = {NULL, NULL, NULL, NULL};
    CUdeviceptr none = 0;
    int n = 0;
    args[0] = args[1] = args[2] = &none;
    args[3] = &n;
    CHECK_OK(cuctx_launch(f, s, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){32, 1, 1}, 0, args));
    if (sim()) {
        struct cusim_call c = last_call("cuLaunchKernel", mark);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)graw, "launched with %s current", name_of('c', c.ctx));
        cr_assert_eq(c.stream, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
    }
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_module_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&g));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* ---- scopes, current, borrows -------------------------------------------------- */

/* Bug caught: a scope over a green context not making its CUcontext
 * current, or not putting the previous one back; a {0} create inside
 * tethered to the wrong context (a stream to the primary, an event to the
 * green context). */
Test(green, a_scope_makes_it_current_and_a_create_in_it_takes_the_right_tether)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, g = {0}, sc = {0}, ec = {0};
    cuctx_stream s = {0};
    cuctx_event e = {0};
    CUcontext araw = new_ctx(&a, 0, "A", LEFT_CURRENT);
    CUcontext graw = green(&g, 16, "G");
    CUcontext praw = primary_raw();
    int ran = 0;
    CUCTX_SCOPED(g) {
        ran = 1;
        cr_assert_eq(current(), graw);
        CHECK_OK(cuctx_stream_create(&s, (cuctx_ctx){0}, 0, 0));
        CHECK_OK(cuctx_event_create(&e, (cuctx_ctx){0}, 0));
        cr_assert_eq(current(), graw);
    }
    cr_assert(ran);
    cr_assert_eq(current(), araw, "the previous context is not back");
    CHECK_OK(cuctx_stream_ctx(s, &sc));
    CHECK_OK(cuctx_event_ctx(e, &ec));
    cr_assert_eq(cuctx_ctx_raw(sc), graw, "its stream is not the green context's");
    cr_assert_eq(cuctx_ctx_raw(ec), praw, "its event is not the primary's");
    /* a borrow of it never ends it */
    CHECK_OK(cuctx_ctx_destroy(&sc));
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_ctx_destroy(&ec));
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(current(), araw);
    CHECK_OK(cuctx_ctx_destroy(&a));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: a green context destroyed inside its own scope left current,
 * stale (the driver leaves it so: every create after answers 709), or the
 * scope's exit then popping the level below it. */
Test(green, destroyed_inside_its_scope_it_is_not_left_current)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, g = {0};
    cuctx_event e = {0};
    CUcontext araw = new_ctx(&a, 0, "A", LEFT_CURRENT);
    green(&g, 16, "G");
    CUCTX_SCOPED(g) {
        CHECK_OK(cuctx_ctx_destroy(&g));
        cr_assert_eq(current(), araw, "the dead green context is still current");
        CHECK_OK(cuctx_event_create(&e, (cuctx_ctx){0}, 0));    /* in A */
    }
    cr_assert_eq(current(), araw, "the scope's exit popped A");
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_null(current());
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: a green context made current with cuctx_ctx_set_current and
 * destroyed left current, stale. */
Test(green, destroyed_while_set_current_it_is_not_left_current)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    CUcontext graw = green(&g, 16, "G");
    CHECK_OK(cuctx_ctx_set_current(g));
    cr_assert_eq(current(), graw);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_null(current(), "the dead green context is still current");
    if (sim()) {
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: cuctx popping a context on another thread, or failing the
 * destroy because the green context is current there; that thread's own
 * scope then leaves cleanly (the pop of a stale green context: 0). */
struct other_thread { cuctx_ctx g; volatile int in, done; CUcontext inside, after; };
static void *sit_in_scope(void *p)
{
    struct other_thread *o = p;
    CUCTX_SCOPED(o->g) {
        o->in = 1;
        while (!o->done)
            usleep(1000);
        o->inside = current();
    }
    o->after = current();
    return NULL;
}

Test(green, destroyed_while_current_on_another_thread)
{
    NEED_DRIVER();
    NEED_SIM();
    struct other_thread o = {{0}, 0, 0, NULL, (CUcontext)(uintptr_t)1};
    CUcontext graw = green(&o.g, 16, "G");
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, sit_in_scope, &o), 0);
    while (!o.in)
        usleep(1000);
    cuctx_ctx g = o.g;
    CHECK_OK(cuctx_ctx_destroy(&g));
    o.done = 1;
    pthread_join(t, NULL);
    cr_assert_eq(o.inside, graw, "the other thread's stack changed by this thread's destroy");
    cr_assert_null(o.after, "the other thread's scope did not leave its stack as it found it");
    cr_assert_null(current());
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a borrow of the green context's CUcontext ending it, or its
 * children through the borrow tethered to the wrong context. */
Test(green, a_borrow_of_it_never_ends_it)
{
    NEED_DRIVER();
    cuctx_ctx g = {0}, b = {0}, ec = {0};
    cuctx_event e = {0};
    cuctx_stream s = {0};
    CUcontext graw = green(&g, 16, NULL);
    CUcontext praw = primary_raw();
    CHECK_OK(cuctx_ctx_borrow(&b, graw));
    CHECK_OK(cuctx_event_create(&e, b, 0));
    CHECK_OK(cuctx_stream_create(&s, b, 0, 0));
    CHECK_OK(cuctx_event_ctx(e, &ec));
    cr_assert_eq(cuctx_ctx_raw(ec), praw);
    CHECK_OK(cuctx_ctx_destroy(&ec));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(stats().green_contexts, 1);
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&g));
    CHECK_OK(cuctx_stream_destroy(&s));
    if (sim()) {
        cr_assert_eq(sim()->leaked_streams(), 0);
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a refused cuGreenCtxDestroy leaving the generation alive
 * (children reaching a context cuctx has let go of), not counted, or not
 * returned. */
Test(green, a_destroy_the_driver_refuses_is_returned_and_ends_the_generation)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    cuctx_stream s = {0};
    green(&g, 16, NULL);
    CHECK_OK(cuctx_stream_create(&s, g, 0, 0));
    sim()->fail_call("cuGreenCtxDestroy", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ctx_destroy(&g), CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(cuctx_last_error_message(), "cuGreenCtxDestroy failed"), "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert_eq(stats().failed_destroys, 1);
    cr_assert_eq(stats().green_contexts, 0);
    cr_assert_eq(cuctx_stream_synchronize(s), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_OK(cuctx_stream_destroy(&s));
    ASSERT_NO_MISUSE();
}

/* ---- survivors of lib/green.c (g1) ---------------------------------------- */

/* Bug caught: a count equal to the device's SMs refused by cuctx as more
 * than the device has, instead of asked of the driver, which decides how
 * it rounds a partition (here: 132 rounds up to 136, no group). Mutant
 * killed: lib/green.c:135 (`>` made `>=`). */
Test(green, a_count_of_all_the_sms_is_asked_of_the_driver)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    size_t mark = log_mark();
    cr_assert_eq(cuctx_ctx_green(&g, 0, 132), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "device 0's 132 SMs give no partition of 132"), "%s",
              cuctx_last_error_message());
    struct cusim_call split = last_call("cuDevSmResourceSplitByCount", mark);
    cr_assert_eq(split.arg, 132, "the split of all the SMs was not asked of the driver");
    cr_assert_eq(split.handle2, 0, "no group");
    cr_assert_eq(calls("cuGreenCtxCreate"), 0);
    cr_assert_eq(g.id, 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a resource the driver said it filled but did not (a fault
 * plan answering success) read as whatever the stack held: cuctx zeroes
 * it first, so it reads as a device of 0 SMs, refused before any split.
 * Mutant killed: lib/green.c:130 `const` (the memset of `all` made to
 * fill it with 1s: a device of 16843009 SMs whose garbage is split). */
Test(green, a_device_resource_the_driver_did_not_fill_reads_as_no_sms)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    /* a successful create first: the stack where the resource lies holds a
     * real one */
    green(&g, 16, NULL);
    CHECK_OK(cuctx_ctx_destroy(&g));
    unsigned long splits = calls("cuDevSmResourceSplitByCount");
    sim()->fail_call("cuDeviceGetDevResource", 1, CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_INVALID_VALUE, "%s", cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "device 0 has 0 SMs, fewer than the 16 asked"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(calls("cuDevSmResourceSplitByCount"), splits, "a resource never filled was split");
    cr_assert_eq(g.id, 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a create from a descriptor into a handle that holds a live
 * context answered with success (the claim's refusal not returned): the
 * caller believes it has a second green context. Mutant killed:
 * lib/green.c:238 (`return rc;` made `return 0;`). */
Test(green, a_desc_create_into_a_live_handle_is_refused_and_leaves_it)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, kept;
    green(&g, 16, NULL);
    kept = g;
    unsigned long creates = calls("cuGreenCtxCreate");
    CUdevResourceDesc d = (CUdevResourceDesc)(uintptr_t)0x1000;
    cr_assert_eq(cuctx_ctx_green_desc(&g, 0, d), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "already holds a live object"), "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, kept.id, "the refused create changed the handle");
    cr_assert_eq(calls("cuGreenCtxCreate"), creates, "the refused create reached the driver");
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a stream that carried stream-ordered memory and is in a
 * capture when its green context is destroyed left alive (and the destroy
 * failed) because its synchronize answered 900: a capturing stream has no
 * work to wait for, and the destroy goes on (stream.c does the same). Mutant
 * killed: lib/green.c:268 (`||` made `&&`: 900 and 901 no longer taken). */
Test(green, a_capturing_stream_that_carried_memory_is_destroyed_with_it)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    cuctx_ctx g = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    cuctx_graph graph = {0};
    cuctx_capture cap;
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s), "s");
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_capture_begin(&cap, s, &graph, CU_STREAM_CAPTURE_MODE_RELAXED));
    cr_assert_eq(sim()->live(CUSIM_CAPTURE), 1);
    size_t mark = log_mark();
    uint64_t failed = stats().failed_destroys;
    CUresult rc = cuctx_ctx_destroy(&g);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(last_call("cuStreamSynchronize", mark).rc, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamSynchronize", "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamSynchronize(s),cuStreamDestroy(s),cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->leaked_streams(), 0, "the capturing stream died with the green context");
    cr_assert_eq(stats().failed_destroys, failed);
    cr_assert_neq(cuctx_capture_end(&cap, 0), CUDA_SUCCESS);
    cr_assert_eq(graph.id, 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->live(CUSIM_CAPTURE), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: the wait before the destroy of one of its streams that
 * carried stream-ordered memory failing (here a planned fault; on a GPU
 * any error cuStreamSynchronize passes on), and the stream then left alive
 * - no cuStreamDestroy - to die with the green context right after,
 * leaked, the green context's destroy failing as "the driver refused to
 * destroy stream" for a destroy the driver never saw. As for
 * cuctx_stream_destroy (test_async's
 * a_failed_wait_before_a_carried_streams_destroy_still_destroys_it): the
 * stream is destroyed all the same, and the failed wait goes to the error
 * handler; its memory is freed after it all the same. */
Test(green, a_failed_wait_before_a_carried_streams_destroy_still_destroys_it)
{
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    struct handler_count h;
    cuctx_ctx g = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0));
    uint64_t sraw = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    name_handle('s', sraw, "s");
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    uint64_t failed = stats().failed_destroys;
    count_handler_install(&h);
    size_t mark = log_mark();
    sim()->fail_call("cuStreamSynchronize", 1, CUDA_ERROR_UNKNOWN);
    CUresult rc = cuctx_ctx_destroy(&g);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(last_call("cuStreamSynchronize", mark).rc, CUDA_ERROR_UNKNOWN);
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamSynchronize", "cuStreamDestroy", "cuGreenCtxDestroy"),
                     "cuStreamSynchronize(s),cuStreamDestroy(s),cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->leaked_streams(), 0, "the stream died with the green context: leaked");
    cr_assert_eq(stats().failed_destroys, failed, "a destroy counted as failed");
    cr_assert_eq(h.calls, 1, "the failed wait not reported once (%d reports)", h.calls);
    cr_assert_eq(h.last_rc, CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(h.last_msg, "before its destroy failed"), "%s", h.last_msg);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(sim()->async_allocs_live(), 0, "its memory not freed");
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: the driver called again for the next stream after a stream's
 * destroy said it has shut down (CUDA_ERROR_DEINITIALIZED). Mutant killed:
 * lib/green.c:275 (`t->gone = 1;` made `t->gone = 0;`). */
Test(green, a_driver_gone_in_one_stream_destroy_skips_the_next_streams)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    cuctx_stream s1 = {0}, s2 = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s1, g, 0, 0));
    CHECK_OK(cuctx_stream_create(&s2, g, 0, 0));
    unsigned long destroys = calls("cuStreamDestroy");
    sim()->fail_call("cuStreamDestroy", 1, CUDA_ERROR_DEINITIALIZED);
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(nth_call("cuStreamDestroy", mark, 0).rc, CUDA_ERROR_DEINITIALIZED);
    cr_assert_eq(calls("cuStreamDestroy"), destroys + 1, "the driver called after it said it was gone");
    cr_assert_eq(calls("cuGreenCtxDestroy"), 0);
    CHECK_OK(cuctx_stream_destroy(&s1));
    CHECK_OK(cuctx_stream_destroy(&s2));
    cr_assert_eq(calls("cuStreamDestroy"), destroys + 1, "the driver called after it said it was gone");
    cr_assert_eq(stats().streams, 0);
}

/* Bug caught: a stream destroy the driver refused during its green
 * context's destroy not counted as a failed destroy (or not returned).
 * Mutants killed: lib/green.c:277 (the count removed, or made + 0). */
Test(green, a_stream_destroy_the_driver_refuses_is_counted_and_returned)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    cuctx_stream s = {0};
    green(&g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, g, 0, 0));
    uint64_t failed = stats().failed_destroys;
    sim()->fail_call("cuStreamDestroy", 1, CUDA_ERROR_UNKNOWN);
    size_t mark = log_mark();
    cr_assert_eq(cuctx_ctx_destroy(&g), CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(cuctx_last_error_message(), "the driver refused to destroy stream"), "%s",
              cuctx_last_error_message());
    /* two: the stream's, and the green context's destroy that returned it */
    cr_assert_eq(stats().failed_destroys, failed + 2, "the refused stream destroy not counted");
    cr_assert_eq(last_call("cuGreenCtxDestroy", mark).rc, CUDA_SUCCESS, "the green context not destroyed after it");
    cr_assert_eq(g.id, 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(stats().streams, 0);
}

/* A create of an event in the green context (on thread t), stopped by the
 * simulator after the cuCtxGetId that checks the primary context under it
 * - the green context's hold let go, the primary's taken (lib/green.c,
 * cuctx__child_create_green) - while the green context is destroyed. The
 * thread lives on after its create until told, so that a hold it kept is
 * not let go by its end. */
struct held_create { cuctx_ctx g; cuctx_event e; CUresult rc; volatile int done, may_exit; };
static void *create_event_held(void *p)
{
    struct held_create *a = p;
    a->rc = cuctx_event_create(&a->e, a->g, 0);
    a->done = 1;
    while (!a->may_exit)
        usleep(1000);
    return NULL;
}

static void held_create_begin(struct held_create *a, pthread_t *t, CUcontext praw, size_t mark)
{
    sim()->hold_after("cuCtxGetId");
    cr_assert_eq(pthread_create(t, NULL, create_event_held, a), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    cr_assert_eq(last_call("cuCtxGetId", mark).handle, (uint64_t)(uintptr_t)praw,
                 "the create is not held in the check of the primary context");
}

/* The green context destroyed (here, whole) while the create holds the
 * primary's entry: the create's hold of the green context's entry fails,
 * and it lets go of the primary's. Bug caught: the primary's entry kept
 * held - cuctx's last release of the primary, which drains it, then waits
 * for ever (alarm). Mutant killed: lib/green.c:89 `call`. */
Test(green, a_create_whose_green_context_ends_while_it_checks_the_primary_lets_go_of_it)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx p = {0};
    struct held_create a = {{0}, {0}, CUDA_ERROR_UNKNOWN, 0, 0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext praw = cuctx_ctx_raw(p);
    green(&a.g, 16, "G");
    cuctx_ctx g = a.g;
    unsigned long creates = calls("cuEventCreate");
    size_t mark = log_mark();
    pthread_t t;
    held_create_begin(&a, &t, praw, mark);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0);
    sim()->let_go();
    while (!a.done)
        usleep(1000);
    cr_assert_eq(a.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(a.rc));
    cr_assert_eq(a.e.id, 0);
    cr_assert_eq(calls("cuEventCreate"), creates, "the create reached the driver");
    CHECK_OK(cuctx_ctx_destroy(&p));    /* drains the primary's entry */
    cr_assert_eq(sim()->primary_refs(0), 0);
    a.may_exit = 1;
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The same create let go while the destroy (on thread d) walks the green
 * context's streams (slowed in cuStreamDestroy): the entry is open again,
 * marked ending, and the create's hold of it succeeds, sees it ending and
 * is refused, letting go of both entries. Bugs caught: the green context's
 * entry kept held - the destroy's second close drains it for ever - or
 * the primary's - cuctx's last release of the primary does (alarm).
 * Mutants killed: lib/green.c:93 and :94 `call`. */
Test(green, a_create_refused_as_its_green_context_ends_lets_go_of_both_entries)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx p = {0};
    cuctx_stream s = {0};
    struct held_create a = {{0}, {0}, CUDA_ERROR_UNKNOWN, 0, 0};
    struct ctx_destroy_arg da = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext praw = cuctx_ctx_raw(p);
    green(&a.g, 16, "G");
    da.g = a.g;
    CHECK_OK(cuctx_stream_create(&s, a.g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s), "s");
    unsigned long creates = calls("cuEventCreate");
    size_t mark = log_mark();
    pthread_t t, d;
    held_create_begin(&a, &t, praw, mark);
    sim()->set_delay("cuStreamDestroy", 300000);
    cr_assert_eq(pthread_create(&d, NULL, destroy_ctx, &da), 0);
    while (sim()->sleeping() < 2)
        usleep(1000);
    sim()->let_go();    /* the create goes on while the destroy sleeps in its walk */
    while (!a.done)
        usleep(1000);
    cr_assert_eq(a.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(a.rc));
    cr_assert_eq(a.e.id, 0);
    cr_assert_eq(pthread_join(d, NULL), 0);
    sim()->set_delay("cuStreamDestroy", 0);
    CHECK_OK(da.rc);
    cr_assert_eq(calls("cuEventCreate"), creates, "the create reached the driver");
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"), "cuStreamDestroy(s),cuGreenCtxDestroy(G)");
    CHECK_OK(cuctx_ctx_destroy(&p));    /* drains the primary's entry */
    cr_assert_eq(sim()->primary_refs(0), 0);
    a.may_exit = 1;
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A driver with green contexts but without the SM-resource calls
 * (cusim_hide_green(2)): cuctx_ctx_green, which splits, is refused as not
 * supported, naming what is missing, before any call; cuctx_ctx_green_desc,
 * which needs none of them, works with a descriptor made elsewhere (here
 * through the simulator's exported symbols). Bug caught: the split's
 * entry points checked for the wrong create - a NULL entry point called
 * by cuctx_ctx_green (a crash), cuctx_ctx_green_desc refused. Mutant
 * killed: lib/green.c:202 `not` (`!desc` made `desc`). */
Test(green, a_driver_without_sm_resources_refuses_the_split_only)
{
    NEED_SIM();
    sim()->hide_green(2);   /* before cuctx loads the driver: the loader resolves its table once */
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
    const char *m = cuctx_last_error_message();
    cr_assert(strstr(m, "cuctx_ctx_green: the driver has no SM resources") && strstr(m, "cuDeviceGetDevResource"),
              "%s", m);
    cr_assert_eq(g.id, 0);
    void *h = dlopen(getenv("CUCTX_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    PFN_cuDeviceGetDevResource_v12040 get = (PFN_cuDeviceGetDevResource_v12040)dlsym(h, "cuDeviceGetDevResource");
    PFN_cuDevSmResourceSplitByCount_v12040 split =
        (PFN_cuDevSmResourceSplitByCount_v12040)dlsym(h, "cuDevSmResourceSplitByCount");
    PFN_cuDevResourceGenerateDesc_v12040 gen = (PFN_cuDevResourceGenerateDesc_v12040)dlsym(h, "cuDevResourceGenerateDesc");
    cr_assert(get && split && gen);
    CUdevResource all, part;
    unsigned n = 1;
    CUdevResourceDesc d = NULL;
    CHECK_OK(get(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    CHECK_OK(split(&part, &n, &all, NULL, 0, 16));
    CHECK_OK(gen(&d, &part, 1));
    dlclose(h);
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_green_desc(&g, 0, d));
    cr_assert_eq(last_call("cuGreenCtxCreate", mark).handle2, (uint64_t)(uintptr_t)d);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The stack below the caller's frame filled with copies of r (from byte
 * shift of it on), so that a variable there that cuctx does not set reads
 * as a resource the driver filled. */
static __attribute__((noinline)) void stack_of_resources(const CUdevResource *r, size_t shift)
{
    volatile unsigned char fill[32768];
    const unsigned char *b = (const unsigned char *)r;
    for (size_t i = 0; i < sizeof fill; i++)
        fill[i] = b[(i + shift) % sizeof *r];
    (void)fill[0];
}

/* A driver that answers success without filling the resource it was
 * asked for (a fault plan): cuctx zeroes its resources first, so that the
 * device's reads as 0 SMs (refused before any split) and the partition as
 * no SM resource (refused by cuDevResourceGenerateDesc) - whatever the
 * stack held, here a real resource at every alignment. Bug caught: a
 * resource read uninitialized, split or made a green context of. Mutant
 * killed: lib/green.c:130 `call` (the memset of `all` removed: at some
 * alignment its SM count reads non-zero). The partition's memset removed
 * (:131) is not caught: its first bytes are overwritten by the calls
 * before (a pointer there), never an SM resource's type, whatever the fill. */
Test(green, resources_the_driver_did_not_fill_read_as_none_whatever_the_stack_held)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuDeviceGetDevResource_v12040 get = (PFN_cuDeviceGetDevResource_v12040)drv_sym("cuDeviceGetDevResource", 12040);
    CUdevResource real;
    CHECK_OK(get(0, &real, CU_DEV_RESOURCE_TYPE_SM));
    cuctx_ctx g = {0};
    unsigned long splits = calls("cuDevSmResourceSplitByCount");
    for (size_t shift = 0; shift < sizeof real; shift += 4) {
        CUresult rc;
        sim()->fail_call("cuDeviceGetDevResource", 1, CUDA_SUCCESS);
        stack_of_resources(&real, shift);
        rc = cuctx_ctx_green(&g, 0, 16);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "shift %zu: %s", shift, cuctx_last_error_message());
        cr_assert(strstr(cuctx_last_error_message(), "device 0 has 0 SMs"), "shift %zu: %s", shift,
                  cuctx_last_error_message());
        cr_assert_eq(calls("cuDevSmResourceSplitByCount"), splits, "shift %zu: a resource never filled was split",
                     shift);
        sim()->fail_call("cuDevSmResourceSplitByCount", 1, CUDA_SUCCESS);
        stack_of_resources(&real, shift);
        rc = cuctx_ctx_green(&g, 0, 16);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_RESOURCE_TYPE, "shift %zu: %s", shift, cuctx_last_error_message());
        splits = calls("cuDevSmResourceSplitByCount");
        cr_assert_eq(g.id, 0);
    }
    cr_assert_eq(calls("cuGreenCtxCreate"), 0, "a green context made of a partition never filled");
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

#else /* CUDA_VERSION < 12040 */

Test(green, built_without_green_contexts)
{
    NEED_DRIVER();
    cuctx_ctx g = {0};
    cr_assert_eq(cuctx_ctx_green(&g, 0, 16), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "older than 12.4"), "%s", cuctx_last_error_message());
}

#endif

/* ---- survivors of lib/green.c (g2) ---- */

#if CUDA_VERSION >= 12040

#include <sys/syscall.h>

/* One thread's part in the tests below: what it works on, its result, and
 * its thread id (for blocked_in), set first thing. */
struct g2_arg { cuctx_ctx g; cuctx_stream s; CUresult rc; volatile pid_t tid; volatile int done; };

static void *g2_destroy_ctx(void *p)
{
    struct g2_arg *a = p;
    a->tid = (pid_t)syscall(SYS_gettid);
    a->rc = cuctx_ctx_destroy(&a->g);
    a->done = 1;
    return NULL;
}

static void *g2_sync_ctx(void *p)
{
    struct g2_arg *a = p;
    a->tid = (pid_t)syscall(SYS_gettid);
    a->rc = cuctx_ctx_synchronize(a->g);
    a->done = 1;
    return NULL;
}

static void *g2_create_stream(void *p)
{
    struct g2_arg *a = p;
    a->tid = (pid_t)syscall(SYS_gettid);
    a->rc = cuctx_stream_create(&a->s, a->g, 0, 0);
    a->done = 1;
    return NULL;
}

static void *g2_destroy_stream(void *p)
{
    struct g2_arg *a = p;
    a->tid = (pid_t)syscall(SYS_gettid);
    a->rc = cuctx_stream_destroy(&a->s);
    a->done = 1;
    return NULL;
}

static void *g2_sync_stream(void *p)
{
    struct g2_arg *a = p;
    a->tid = (pid_t)syscall(SYS_gettid);
    a->rc = cuctx_stream_synchronize(a->s);
    a->done = 1;
    return NULL;
}

/* Until thread a sleeps in nanosleep (cuctx's waits - a drain, a wait for
 * a close to be decided - sleep so once past their first rounds), or has
 * finished its call. */
static void g2_wait_asleep(const struct g2_arg *a)
{
    while (a->tid == 0)
        usleep(1000);
    while (!a->done) {
        unsigned long arg1 = 0;
        long nr = blocked_in(a->tid, &arg1);
        if (nr == SYS_nanosleep || nr == SYS_clock_nanosleep)
            return;
        usleep(1000);
    }
}

/* The CUgreenCtx of the green context made last since mark (the simulator
 * logs it as cuGreenCtxCreate's handle), and the driver's own destroy. */
static CUgreenCtx g2_green_of(size_t mark)
{
    return (CUgreenCtx)(uintptr_t)last_call("cuGreenCtxCreate", mark).handle;
}
static CUresult g2_driver_green_destroy(CUgreenCtx g)
{
    PFN_cuGreenCtxDestroy_v12040 destroy = (PFN_cuGreenCtxDestroy_v12040)drv_sym("cuGreenCtxDestroy", 12040);
    return destroy(g);
}

/* A stream create in the green context under way (held by the simulator
 * after its cuStreamCreateWithPriority, the green context's entry held)
 * when the destroy begins: the destroy waits for it, then finds the
 * stream made and destroys it before the green context. Bug caught: the
 * destroy walking its streams before the creates under way have finished
 * - the stream made meanwhile is missed and dies with the green context,
 * leaked. Mutant killed: lib/green.c:354 (`cuctx__drain(e);` after the
 * first close removed). */
Test(green, its_destroy_waits_for_a_stream_create_under_way_and_destroys_the_stream_made)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    unique_addresses();
    struct g2_arg d = {0}, c = {0};
    c.rc = d.rc = CUDA_ERROR_UNKNOWN;
    green(&d.g, 16, "G");
    c.g = d.g;
    size_t mark = log_mark();
    pthread_t tc, td;
    sim()->hold_after("cuStreamCreateWithPriority");
    cr_assert_eq(pthread_create(&tc, NULL, g2_create_stream, &c), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    uint64_t raw = nth_call("cuStreamCreateWithPriority", mark, 0).handle;
    cr_assert_neq(raw, 0);
    name_handle('s', raw, "new");
    cr_assert_eq(pthread_create(&td, NULL, g2_destroy_ctx, &d), 0);
    g2_wait_asleep(&d);     /* waiting for the create (with the mutant: past its walk) */
    sim()->let_go();
    cr_assert_eq(pthread_join(tc, NULL), 0);
    cr_assert_eq(pthread_join(td, NULL), 0);
    CHECK_OK(c.rc);
    CHECK_OK(d.rc);
    cr_assert_eq(calls_on("cuStreamDestroy", raw, mark), 1, "the stream made under way was not destroyed by the destroy");
    cr_assert_str_eq(CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy"), "cuStreamDestroy(new),cuGreenCtxDestroy(G)");
    cr_assert_eq(sim()->leaked_streams(), 0, "the stream made under way died with the green context");
    CHECK_OK(cuctx_stream_destroy(&c.s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A call on a borrow of the green context (cuctx_ctx_synchronize, slowed
 * in the driver) begun while the destroy walks its streams (held by the
 * simulator after its stream's cuStreamDestroy, the entry open again): the
 * destroy waits for it before cuGreenCtxDestroy. Bug caught: the green
 * context destroyed under a call still in the driver with it current - the
 * call then runs in a dead context. Mutant killed: lib/green.c:360
 * (`cuctx__drain(e);` after the second close removed: only the drain at
 * the entry's free, after the driver's destroy, would wait). */
Test(green, its_destroy_waits_for_a_call_on_a_borrow_of_it_begun_while_it_walked_its_streams)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    unique_addresses();
    struct g2_arg d = {0}, y = {0};
    cuctx_stream s = {0};
    d.rc = y.rc = CUDA_ERROR_UNKNOWN;
    CUcontext graw = green(&d.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&s, d.g, 0, 0));
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(s), "s");
    CHECK_OK(cuctx_ctx_borrow(&y.g, graw));
    size_t mark = log_mark();
    pthread_t td, ty;
    sim()->hold_after("cuStreamDestroy");
    cr_assert_eq(pthread_create(&td, NULL, g2_destroy_ctx, &d), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    sim()->set_delay("cuCtxSynchronize", 300000);
    cr_assert_eq(pthread_create(&ty, NULL, g2_sync_ctx, &y), 0);
    while (sim()->sleeping() < 2)
        usleep(1000);
    sim()->let_go();
    cr_assert_eq(pthread_join(td, NULL), 0);
    cr_assert_eq(pthread_join(ty, NULL), 0);
    sim()->set_delay("cuCtxSynchronize", 0);
    CHECK_OK(d.rc);
    CHECK_OK(y.rc);
    cr_assert_eq(last_call("cuCtxSynchronize", mark).ctx, (uint64_t)(uintptr_t)graw);
    cr_assert_eq(last_call("cuCtxSynchronize", mark).rc, CUDA_SUCCESS, "the synchronize ran in the dead green context");
    cr_assert_str_eq(log_seq(mark, (const char *const[]){"cuStreamDestroy", "cuCtxSynchronize", "cuGreenCtxDestroy", NULL},
                             (char[256]){0}, 256),
                     "cuStreamDestroy,cuCtxSynchronize,cuGreenCtxDestroy");
    CHECK_OK(cuctx_ctx_destroy(&y.g));
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(sim()->leaked_streams(), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The destroy of one of its streams begun on another thread while the
 * green context's destroy drains its entry (a call on its other stream
 * holds it): that stream's destroy closes the stream and waits for a call
 * on it, which waits for the entry; the green context's walk then meets
 * the stream closing and waits until its own destroy has ended it. Bug
 * caught: the walk going on past a stream whose destroy is under way -
 * the green context's entry closed for good before that destroy could
 * hold it, so the stream is never destroyed and dies with the green
 * context, leaked. Mutant killed: lib/green.c:304
 * (`cuctx__wait_closed(id, KIND_STREAM);` removed). */
Test(green, its_destroy_waits_for_a_destroy_of_its_stream_under_way_on_another_thread)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    unique_addresses();
    struct g2_arg d = {0}, other = {0}, use = {0}, kill = {0};
    d.rc = other.rc = use.rc = kill.rc = CUDA_ERROR_UNKNOWN;
    green(&d.g, 16, "G");
    CHECK_OK(cuctx_stream_create(&use.s, d.g, 0, 0));
    CHECK_OK(cuctx_stream_create(&other.s, d.g, 0, 0));
    kill.s = use.s;
    uint64_t theirs = (uint64_t)(uintptr_t)cuctx_stream_raw(use.s);
    name_handle('s', theirs, "theirs");
    name_handle('s', (uint64_t)(uintptr_t)cuctx_stream_raw(other.s), "other");
    size_t mark = log_mark();
    pthread_t to, td, tu, tk;
    /* a call on the other stream holds the entry: the destroy's first drain waits */
    sim()->hold_after("cuStreamSynchronize");
    cr_assert_eq(pthread_create(&to, NULL, g2_sync_stream, &other), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    cr_assert_eq(pthread_create(&td, NULL, g2_destroy_ctx, &d), 0);
    g2_wait_asleep(&d);
    /* a call on theirs: it pins the stream, then waits for the closed entry */
    cr_assert_eq(pthread_create(&tu, NULL, g2_sync_stream, &use), 0);
    g2_wait_asleep(&use);
    /* theirs' destroy: it closes the stream, then waits for that call */
    cr_assert_eq(pthread_create(&tk, NULL, g2_destroy_stream, &kill), 0);
    g2_wait_asleep(&kill);
    /* the entry reopens for the walk: the call on theirs goes in, held */
    sim()->hold_after("cuStreamSynchronize");
    sim()->let_go();
    cr_assert_eq(pthread_join(to, NULL), 0);
    /* (with the mutant below the call may find the entry closed for good instead) */
    while (!use.done && (calls_on("cuStreamSynchronize", theirs, mark) == 0 || sim()->sleeping() == 0))
        usleep(1000);
    g2_wait_asleep(&d);     /* waiting for theirs' destroy (the mutant: draining the entry closed again) */
    sim()->let_go();
    sim()->hold_after(NULL);
    cr_assert_eq(pthread_join(tu, NULL), 0);
    cr_assert_eq(pthread_join(tk, NULL), 0);
    cr_assert_eq(pthread_join(td, NULL), 0);
    CHECK_OK(other.rc);
    CHECK_OK(use.rc);
    CHECK_OK(kill.rc);
    CHECK_OK(d.rc);
    cr_assert_eq(calls_on("cuStreamDestroy", theirs, mark), 1, "theirs not destroyed through the driver");
    cr_assert_eq(sim()->leaked_streams(), 0, "theirs died with the green context");
    cr_assert_eq(last_call("cuGreenCtxDestroy", mark).rc, CUDA_SUCCESS);
    const char *seq = CALLS_OF(mark, "cuStreamDestroy", "cuGreenCtxDestroy");
    const char *st = strstr(seq, "cuStreamDestroy(theirs)"), *gd = strstr(seq, "cuGreenCtxDestroy(G)");
    cr_assert(st && gd && st < gd, "theirs not destroyed before the green context: %s", seq);
    CHECK_OK(cuctx_stream_destroy(&other.s));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A green context destroyed by the driver behind cuctx's back
 * (cuGreenCtxDestroy of its CUgreenCtx), its CUcontext's address then
 * taken by a new context made through cuctx, whose registration ends the
 * green context's entry: the handle's destroy says the green context was
 * already destroyed, and asks nothing of the driver. Bug caught: that
 * destroy answering success, as if it had destroyed something. Mutant
 * killed: lib/green.c:353 (the refusal made `return 0;`). */
Test(green, destroyed_by_the_driver_behind_cuctxs_back_and_its_address_retaken_its_destroy_says_destroyed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, c = {0};
    size_t mark = log_mark();
    CUcontext graw = green(&g, 16, "G");
    CHECK_OK(g2_driver_green_destroy(g2_green_of(mark)));
    cr_assert_eq(new_ctx(&c, 0, "C", POPPED), graw, "the simulator gave the new context another address");
    uint64_t failed = stats().failed_destroys;
    mark = log_mark();
    cr_assert_eq(cuctx_ctx_destroy(&g), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert(strstr(cuctx_last_error_message(), "the green context was already destroyed"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert_eq(log_mark(), mark, "the destroy called the driver");
    cr_assert_eq(stats().failed_destroys, failed + 1);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The same done while the handle's destroy walks its streams (held by the
 * simulator after its stream's cuStreamDestroy, the entry open again): the
 * new context's registration ends the entry between the destroy's two
 * closes, and the destroy says so. Bug caught: the destroy answering
 * success though it destroyed no green context. Mutant killed:
 * lib/green.c:359 (that refusal made `return 0;`). */
Test(green, its_entry_ended_by_a_context_at_its_address_while_it_walked_its_streams_fails_its_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    struct g2_arg d = {0};
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    d.rc = CUDA_SUCCESS;
    size_t mark = log_mark();
    CUcontext graw = green(&d.g, 16, "G");
    CUgreenCtx gh = g2_green_of(mark);
    CHECK_OK(cuctx_stream_create(&s, d.g, 0, 0));
    uint64_t failed = stats().failed_destroys;
    mark = log_mark();
    pthread_t td;
    sim()->hold_after("cuStreamDestroy");
    cr_assert_eq(pthread_create(&td, NULL, g2_destroy_ctx, &d), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    CHECK_OK(g2_driver_green_destroy(gh));
    cr_assert_eq(new_ctx(&c, 0, "C", POPPED), graw, "the simulator gave the new context another address");
    sim()->let_go();
    cr_assert_eq(pthread_join(td, NULL), 0);
    cr_assert_eq(d.rc, CUDA_ERROR_UNKNOWN, "%s", cuctx_result_name(d.rc));
    cr_assert_eq(calls("cuGreenCtxDestroy"), 1, "cuctx destroyed a green context too");
    cr_assert_eq(stats().failed_destroys, failed + 1);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* The destroy's look at this thread's current context (to pop the green
 * context where it was current) failing once: it is asked again, and the
 * green context, current here, is popped. Bug caught: no second look - the
 * destroy fails saying it cannot tell whether the green context was
 * current, and leaves it so, stale. Mutant killed: lib/green.c:330
 * (`cur_rc != CUDA_SUCCESS` made `==`). */
Test(green, its_destroy_asks_again_for_the_current_context_after_a_failed_look)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    CUcontext graw = green(&g, 16, "G");
    CHECK_OK(cuctx_ctx_set_current(g));
    cr_assert_eq(current(), graw);
    size_t mark = log_mark();
    sim()->fail_call("cuCtxGetCurrent", 1, CUDA_ERROR_UNKNOWN);
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(nth_call("cuCtxGetCurrent", mark, 0).rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(nth_call("cuCtxGetCurrent", mark, 1).rc, CUDA_SUCCESS, "not asked again");
    cr_assert_null(current(), "the dead green context is still current");
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* As its_destroy_waits_for_a_child_call_under_way_in_the_primary_it_ends,
 * for the green context made after another one came and went: the count
 * of cuctx's green contexts on the device is back to 0 after the first, so
 * the second's destroy knows its retain may be the primary's last. Bug
 * caught: the first destroy's count left at 1 - the second's destroy then
 * ends the primary under the event's destroy under way (a misuse here).
 * Mutant killed: lib/green.c:372 (`p->greens > 0` made `> 1`). */
Test(green, the_next_green_contexts_destroy_waits_for_a_child_call_in_the_primary_it_ends)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx first = {0}, g = {0};
    struct event_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    green(&first, 16, "first");
    CHECK_OK(cuctx_ctx_destroy(&first));
    cr_assert_eq(sim()->primary_refs(0), 0);
    green(&g, 16, "G");
    CHECK_OK(cuctx_event_create(&a.e, g, 0));
    uint64_t raw = (uint64_t)(uintptr_t)cuctx_event_raw(a.e);
    sim()->set_delay("cuEventDestroy", 200000);
    size_t mark = log_mark();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_event, &a), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    CHECK_OK(cuctx_ctx_destroy(&g));
    pthread_join(t, NULL);
    sim()->set_delay("cuEventDestroy", 0);
    CHECK_OK(a.rc);
    struct cusim_call ed = last_call("cuEventDestroy", mark);
    cr_assert_eq(ed.handle, raw);
    cr_assert_eq(ed.rc, CUDA_SUCCESS, "the event was destroyed after its primary ended");
    cr_assert_str_eq(log_seq(mark, (const char *const[]){"cuEventDestroy", "cuGreenCtxDestroy", NULL}, (char[256]){0}, 256),
                     "cuEventDestroy,cuGreenCtxDestroy");
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

#endif

#if CUDA_VERSION >= 12040
/* ---- a green context cuctx did not make ----------------------------------- */

/* A green context made by the driver itself, as another library makes one
 * (cuGreenCtxCreate on 16 SMs of device 0): its CUgreenCtx in *g, its
 * CUcontext returned. */
static CUcontext foreign_green(CUgreenCtx *g)
{
    PFN_cuDeviceGetDevResource_v12040 get = (PFN_cuDeviceGetDevResource_v12040)drv_sym("cuDeviceGetDevResource", 12040);
    PFN_cuDevSmResourceSplitByCount_v12040 split =
        (PFN_cuDevSmResourceSplitByCount_v12040)drv_sym("cuDevSmResourceSplitByCount", 12040);
    PFN_cuDevResourceGenerateDesc_v12040 gen = (PFN_cuDevResourceGenerateDesc_v12040)drv_sym("cuDevResourceGenerateDesc", 12040);
    PFN_cuGreenCtxCreate_v12040 create = (PFN_cuGreenCtxCreate_v12040)drv_sym("cuGreenCtxCreate", 12040);
    PFN_cuCtxFromGreenCtx_v12040 from = (PFN_cuCtxFromGreenCtx_v12040)drv_sym("cuCtxFromGreenCtx", 12040);
    CUdevResource all, part;
    unsigned n = 1;
    CUdevResourceDesc d = NULL;
    CUcontext raw = NULL;
    CHECK_OK(get(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    CHECK_OK(split(&part, &n, &all, NULL, 0, 16));
    CHECK_OK(gen(&d, &part, 1));
    CHECK_OK(create(g, d, 0, CU_GREEN_CTX_DEFAULT_STREAM));
    CHECK_OK(from(&raw, *g));
    return raw;
}

/* A green context made elsewhere (by the driver directly, as a library
 * would), met by cuctx through cuctx_ctx_borrow of its CUcontext - or as
 * the current context of a create with ctx {0}. The driver puts its
 * device memory and events in the primary context underneath (measured,
 * DRIVER-FACTS), which lives on here (cuctx holds a retain). The contract
 * (API.md "Green contexts", cuctx.h, cuctx_ctx_green(3) "Its children"):
 * such children are tethered to the primary's generation and freed
 * through the driver after the green context is gone while the primary
 * lives, and cuctx_mem_ctx gives the primary. Found: cuctx registers the
 * borrowed green CUcontext as a plain borrowed context (entry.home never
 * set: only green.c's register_locked sets it), so the memory and the
 * event are tethered to the green context's own id; once its owner
 * destroys it, their destroys are skipped as stale - the 4 KiB and the
 * event stay allocated in the living primary context: leaked. */
Test(green, a_borrowed_green_context_made_elsewhere_has_its_memory_freed_after_it_in_the_living_primary)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx p = {0}, b = {0};
    cuctx_mem m = {0};
    cuctx_event e = {0};
    CUgreenCtx g = NULL;
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext praw = cuctx_ctx_raw(p);
    CUcontext graw = foreign_green(&g);
    CHECK_OK(cuctx_ctx_borrow(&b, graw));
    CHECK_OK(cuctx_mem_alloc(&m, b, 4096));
    CHECK_OK(cuctx_event_create(&e, b, 0));
    CUdeviceptr ptr = cuctx_mem_ptr(m);
    uint64_t eraw = (uint64_t)(uintptr_t)cuctx_event_raw(e);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(g2_driver_green_destroy(g));     /* its owner ends it; the primary lives (p) */
    cr_assert_eq(sim()->live(CUSIM_MEM), 1, "the driver keeps the memory in the primary");
    size_t mark = log_mark();
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_event_destroy(&e));
    cr_assert_eq(calls_on("cuMemFree", ptr, mark), 1,
                 "the memory of the living primary under a borrowed green context was not freed "
                 "(%llu stale skips): leaked", (unsigned long long)(stats().stale_skips - skips));
    cr_assert_eq(calls_on("cuEventDestroy", eraw, mark), 1, "its event was not destroyed: leaked");
    cr_assert_eq(sim()->live(CUSIM_MEM), 0);
    cr_assert_eq(sim()->live(CUSIM_EVENT), 0);
    (void)praw;
    CHECK_OK(cuctx_ctx_destroy(&p));
    ASSERT_NO_MISUSE();
}

/* The same as the last test, from the context the child names: a green
 * context's device memory belongs to the primary, and cuctx_mem_ctx gives
 * the primary (cuctx.h: "cuctx_event_ctx and its kin give the primary
 * context for them"). Found: for a green context met as the current
 * context (made elsewhere), it gives the green context, which the memory
 * outlives; and the memory's destroy after the green context's end is
 * skipped, leaking it. */
Test(green, a_green_context_made_elsewhere_and_current_tethers_its_memory_to_the_primary)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx p = {0}, mc = {0};
    cuctx_mem m = {0};
    CUgreenCtx g = NULL;
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext praw = cuctx_ctx_raw(p);
    CUcontext graw = foreign_green(&g);
    PFN_cuCtxSetCurrent_v4000 set = (PFN_cuCtxSetCurrent_v4000)drv_sym("cuCtxSetCurrent", 4000);
    CHECK_OK(set(graw));
    CHECK_OK(cuctx_mem_alloc(&m, (cuctx_ctx){0}, 4096));
    CHECK_OK(set(NULL));
    CUdeviceptr ptr = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_mem_ctx(m, &mc));
    CUcontext owner = cuctx_ctx_raw(mc);
    CHECK_OK(cuctx_ctx_destroy(&mc));
    CHECK_OK(g2_driver_green_destroy(g));
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    unsigned long frees = calls_on("cuMemFree", ptr, mark);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(owner, praw, "cuctx_mem_ctx gave %p (the green context), not the primary %p", (void *)owner,
                 (void *)praw);
    cr_assert_eq(frees, 1, "the memory was not freed: leaked");
    ASSERT_NO_MISUSE();
}

/* The same on any driver, the real one included: only cuctx's own answers
 * are read. A green context made elsewhere and borrowed; memory, an event
 * and a stream made in it; its owner ends it while the primary lives (a
 * retain through cuctx). The memory names the primary; its destroy and the
 * event's reach the driver (no stale skip), the stream's is skipped (it
 * died with the green context). Bug caught: the green context taken for a
 * plain one - the memory and the event skipped, leaked in the primary. */
Test(green, a_green_context_made_elsewhere_leaves_its_memory_and_events_to_the_primary_on_any_driver)
{
    NEED_DRIVER();
    cuctx_ctx p = {0}, b = {0}, mc = {0};
    cuctx_mem m = {0};
    cuctx_event e = {0};
    cuctx_stream s = {0};
    CUgreenCtx g = NULL;
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext graw = foreign_green(&g);
    CHECK_OK(cuctx_ctx_borrow(&b, graw));
    CHECK_OK(cuctx_mem_alloc(&m, b, 4096));
    CHECK_OK(cuctx_event_create(&e, b, 0));
    CHECK_OK(cuctx_stream_create(&s, b, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_ctx(m, &mc));
    cr_assert_eq(cuctx_ctx_raw(mc), cuctx_ctx_raw(p), "the memory names %p, not the primary %p",
                 (void *)cuctx_ctx_raw(mc), (void *)cuctx_ctx_raw(p));
    CHECK_OK(cuctx_ctx_destroy(&mc));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(g2_driver_green_destroy(g));
    struct cuctx_stats st = stats();
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_event_destroy(&e));
    cr_assert_eq(stats().stale_skips, st.stale_skips, "the memory or the event of the living primary skipped");
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(stats().stale_skips, st.stale_skips + 1, "the green context's stream reached the driver");
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(stats().streams + stats().events + stats().mems, 0);
}
#endif
