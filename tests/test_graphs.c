/* SPDX-License-Identifier: MIT */
/* test_graphs.c - the kinds of no context (graphs, libraries), stream
 * capture, the JIT log of failed loads, module globals and the launch of a
 * library's kernel (issue 19). Each test says in a line which bug it
 * catches. The driver facts behind them (DRIVER-FACTS, measured on an
 * H200): a CUgraph and a CUlibrary outlive every context; a capture is
 * invalidated by the calls it forbids (900, then 901 at its end); a PTX
 * that does not assemble loads as a library with success and fails at the
 * kernel lookup. */
#include "testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

static const char small_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .global .align 4 .b32 counters[4];\n"
    "\n"
    ".visible .entry tick()\n"
    "{\n"
    "    ret;\n"
    "}\n";

static CUstreamCaptureStatus capture_status(cuctx_stream s)
{
    PFN_cuStreamIsCapturing_v10000 is_capturing = (PFN_cuStreamIsCapturing_v10000)drv_sym("cuStreamIsCapturing", 10000);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    CHECK_OK(is_capturing(cuctx_stream_raw(s), &st));
    return st;
}

static size_t graph_nodes(cuctx_graph g)
{
    PFN_cuGraphGetNodes_v10000 get_nodes = (PFN_cuGraphGetNodes_v10000)drv_sym("cuGraphGetNodes", 10000);
    size_t n = 0;
    CHECK_OK(get_nodes(cuctx_graph_raw(g), NULL, &n));
    return n;
}


/* ---- graphs: a kind of no context ------------------------------------- */

/* Bug caught: a graph tethered to the context current at its create -
 * skipped after that context's destroy, so the CUgraph leaks. */
Test(graph, outlives_the_context_it_was_made_in)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_graph g = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_graph_create(&g));
    cr_assert_neq(cuctx_graph_raw(g), NULL);
    cr_assert_eq(stats().graphs, 1);
    CHECK_OK(cuctx_ctx_destroy(&c));
    uint64_t raw = (uint64_t)(uintptr_t)cuctx_graph_raw(g);
    cr_assert_neq(raw, 0, "a graph's accessor works after the context died: %s", cuctx_last_error_message());
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    CHECK_OK(cuctx_graph_destroy(&g));
    cr_assert_eq(g.id, 0);
    cr_assert_eq(stats().stale_skips, skips, "the destroy was skipped as a stale child's");
    cr_assert_eq(stats().graphs, 0);
    if (sim()) {
        cr_assert_eq(calls_on("cuGraphDestroy", raw, mark), 1, "cuGraphDestroy of the graph");
        cr_assert_eq(sim()->live(CUSIM_GRAPH), 0, "the graph leaked in the driver");
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a graph create that needs, switches to or holds a context. */
Test(graph, is_made_with_no_context_current)
{
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(current(), NULL);
    size_t mark = log_mark();
    CUCTX_AUTO cuctx_graph g = {0};
    CHECK_OK(cuctx_graph_create(&g));
    struct cusim_call c = last_call("cuGraphCreate", mark);
    cr_assert_eq(c.ctx, 0);
    cr_assert_eq(c.handle, (uint64_t)(uintptr_t)cuctx_graph_raw(g));
    cr_assert_eq(calls("cuCtxPushCurrent"), 0);
    cr_assert_eq(stats().contexts, 0, "a graph counted a context");
}

/* Bug caught: the generation checks of other handles missing for a kind
 * without a tether (a stale copy reaching cuGraphDestroy twice). */
Test(graph, a_stale_copy_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_graph g = {0}, copy;
    CHECK_OK(cuctx_graph_create(&g));
    copy = g;
    CHECK_OK(cuctx_graph_destroy(&g));
    size_t mark = log_mark();
    cr_assert_eq(cuctx_graph_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_graph_raw(copy), NULL);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    if (sim())
        cr_assert_eq(log_mark(), mark, "a driver call for a stale graph");
}

/* Bug caught: CUCTX_AUTO, CUCTX_MOVE or cuctx_destroy not knowing the new
 * handle types (the typed destroy's list, the cleanup's union). */
static cuctx_library load_moved(void)
{
    CUCTX_AUTO cuctx_library lib = {0};
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    return CUCTX_MOVE(lib);
}

Test(graph, auto_move_and_destroy_take_graphs_and_libraries)
{
    NEED_DRIVER();
    {
        CUCTX_AUTO cuctx_graph g = {0};
        CHECK_OK(cuctx_graph_create(&g));
        cr_assert_eq(stats().graphs, 1);
    }
    cr_assert_eq(stats().graphs, 0, "CUCTX_AUTO did not destroy the graph");
    cuctx_library lib = load_moved();
    cr_assert_neq(lib.id, 0);
    cr_assert_eq(stats().libraries, 1, "CUCTX_MOVE did not hand the library out alive");
    CHECK_OK(cuctx_destroy(&lib));
    cr_assert_eq(lib.id, 0);
    cr_assert_eq(stats().libraries, 0);
    if (sim()) {
        cr_assert_eq(calls("cuGraphDestroy"), 1);
        cr_assert_eq(calls("cuLibraryUnload"), 1);
    }
}

/* Bug caught: a create into a handle that holds a live graph orphaning it
 * (the claim treating "no context" as a dead one). */
Test(graph, a_create_into_a_live_graph_is_refused)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_graph g = {0};
    CHECK_OK(cuctx_graph_create(&g));
    cuctx_graph before = g;
    cr_assert_eq(cuctx_graph_create(&g), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(g.id, before.id);
    cr_assert_eq(stats().graphs, 1);
    CUCTX_AUTO cuctx_library lib = {0};
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    cuctx_library lib_before = lib;
    cr_assert_eq(cuctx_library_load_data(&lib, small_ptx), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(lib.id, lib_before.id);
}

/* Bug caught: the leak report naming a context (or "a destroyed context")
 * for an object of none. */
static void report_to_stderr(void *arg)
{
    (void)arg;
    cuctx_leak_report(NULL);
}

Test(graph, the_leak_report_says_no_context)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_graph g = {0};
    CUCTX_AUTO cuctx_library lib = {0};
    CHECK_OK(cuctx_graph_create(&g));
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    char out[4096];
    stderr_of(report_to_stderr, NULL, out, sizeof out);
    cr_assert(strstr(out, "cuctx: leak: graph ") && strstr(out, "in no context (a graph belongs to none)"), "%s", out);
    cr_assert(strstr(out, "cuctx: leak: library ") && strstr(out, "in no context (a library belongs to none)"), "%s",
              out);
    cr_assert(strstr(out, "test_graphs.c"), "the create site is missing: %s", out);
}

/* Bug caught: a forked child destroying the parent's graph and library
 * through its driver (no tether to end them there). */
struct inherited { cuctx_graph g; cuctx_library lib; };

static int destroy_inherited(struct inherited *in)
{
    unsigned long g_calls = calls("cuGraphDestroy"), l_calls = calls("cuLibraryUnload");
    uint64_t skips = stats().stale_skips;
    if (cuctx_graph_destroy(&in->g) != CUDA_SUCCESS || in->g.id != 0)
        return 1;
    if (cuctx_library_destroy(&in->lib) != CUDA_SUCCESS || in->lib.id != 0)
        return 2;
    if (calls("cuGraphDestroy") != g_calls || calls("cuLibraryUnload") != l_calls)
        return 3;
    if (stats().stale_skips != skips + 2 || stats().graphs != 0 || stats().libraries != 0)
        return 4;
    return 0;
}

Test(graph, a_forked_child_never_destroys_the_parents)
{
    NEED_DRIVER();
    NEED_SIM();
    struct inherited in = {{0}, {0}};
    CHECK_OK(cuctx_graph_create(&in.g));
    CHECK_OK(cuctx_library_load_data(&in.lib, small_ptx));
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        alarm(5);
        _exit(destroy_inherited(&in));
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's check %d failed",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK_OK(cuctx_graph_destroy(&in.g));
    CHECK_OK(cuctx_library_destroy(&in.lib));
    cr_assert_eq(calls("cuGraphDestroy"), 1);
    cr_assert_eq(calls("cuLibraryUnload"), 1);
}

/* ---- libraries --------------------------------------------------------- */

/* Bug caught: a library tethered to a context (skipped, leaked) or loaded
 * through one; a kernel refused in a context made after the load. */
Test(library, its_kernel_launches_in_a_context_made_after_the_load_and_it_outlives_that)
{
    NEED_DRIVER();
    cuctx_library lib = {0};
    CUkernel k = NULL;
    cr_assert_eq(current(), NULL);
    size_t mark = log_mark();
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    CHECK_OK(cuctx_library_kernel(lib, "tick", &k));
    cr_assert_neq(k, NULL);
    if (sim()) {
        cr_assert_eq(last_call("cuLibraryLoadData", mark).ctx, 0, "the load needed a context");
        cr_assert_eq(calls("cuCtxPushCurrent") + calls("cuDevicePrimaryCtxRetain") + calls("cuCtxCreate"), 0);
    }
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    mark = log_mark();
    CHECK_OK(cuctx_launch(k, s, (cuctx_dim3){2, 1, 1}, (cuctx_dim3){32, 1, 1}, 0, NULL));
    CHECK_OK(cuctx_stream_synchronize(s));
    if (sim()) {
        struct cusim_call l = last_call("cuLaunchKernel", mark);
        cr_assert_eq(l.handle, (uint64_t)(uintptr_t)k, "the launch named another function than the kernel");
        cr_assert_eq(l.stream, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
        cr_assert_eq(l.arg, (long long)(2 | 1ull << 32 | 1ull << 48), "grid (x | y << 32 | z << 48)");
        cr_assert_eq(l.flags, 32 | 1ull << 16 | 1ull << 32, "block (x | y << 16 | z << 32)");
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_library_destroy(&lib));
    cr_assert_eq(stats().stale_skips, skips);
    if (sim()) {
        cr_assert_eq(calls("cuLibraryUnload"), 1, "the library's unload was skipped");
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: the launch of a kernel going to the driver on a stale stream
 * (the stream check of cuctx_launch missing from the CUkernel form). */
Test(library, a_kernel_launch_on_a_stale_stream_is_refused_before_the_driver)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_library lib = {0};
    CUkernel k = NULL;
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    CHECK_OK(cuctx_library_kernel(lib, "tick", &k));
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    cuctx_stream stale = s;
    CHECK_OK(cuctx_stream_destroy(&s));
    unsigned long launches = sim() ? calls("cuLaunchKernel") : 0;
    cr_assert_eq(cuctx_launch_kernel(k, stale, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){1, 1, 1}, 0, NULL),
                 CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_launch_kernel(NULL, stale, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){1, 1, 1}, 0, NULL),
                 CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_launch_kernel: the kernel is NULL"), "%s",
              cuctx_last_error_message());
    if (sim())
        cr_assert_eq(calls("cuLaunchKernel"), launches);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a broken PTX's ptxas errors lost - the library load succeeds
 * (measured), so only a kept log can explain the lookup's failure. */
Test(library, a_ptx_that_does_not_assemble_fails_at_the_lookup_with_the_load_log)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_library lib = {0};
    CUkernel k = (CUkernel)(uintptr_t)1;
    CHECK_OK(cuctx_library_load_data(&lib, test_broken_ptx));
    cr_assert_eq(cuctx_library_kernel(lib, "broken", &k), CUDA_ERROR_INVALID_PTX);
    cr_assert_eq(k, NULL);
    const char *msg = cuctx_last_error_message();
    cr_assert(strstr(msg, "cuctx_library_kernel: cuLibraryGetKernel(\"broken\") failed: CUDA_ERROR_INVALID_PTX; "
                          "the JIT log of the library's load: "), "%s", msg);
    cr_assert(strstr(msg, "cusim_bad"), "the log does not name the bad instruction: %s", msg);
    /* a second lookup says it again: the log is kept until the destroy */
    cr_assert_eq(cuctx_library_kernel(lib, "broken", &k), CUDA_ERROR_INVALID_PTX);
    cr_assert(strstr(cuctx_last_error_message(), "cusim_bad"), "%s", cuctx_last_error_message());
}

/* Bug caught: a good library's failed lookup blamed on another's log (the
 * kept logs keyed wrongly, or never dropped at destroy). */
Test(library, a_good_librarys_unknown_kernel_has_no_log)
{
    NEED_DRIVER();
    cuctx_library bad = {0};
    CUCTX_AUTO cuctx_library good = {0};
    CUkernel k;
    CHECK_OK(cuctx_library_load_data(&bad, test_broken_ptx));
    CHECK_OK(cuctx_library_destroy(&bad));
    CHECK_OK(cuctx_library_load_data(&good, small_ptx));   /* may take the bad one's driver handle */
    cr_assert_eq(cuctx_library_kernel(good, "nothing_of_that_name", &k), CUDA_ERROR_NOT_FOUND);
    cr_assert_null(strstr(cuctx_last_error_message(), "JIT log"), "%s", cuctx_last_error_message());
}

/* A kernel lookup on a library handle that names no live library - a
 * stale copy of a destroyed one, or {0} - fails with
 * CUDA_ERROR_INVALID_HANDLE, *out NULL (cuctx.h: every failure), before
 * the driver. Mutant killed: lib/library.c:165 `ret` (the failed use's
 * `return rc;` made `return 0;`: the lookup answered CUDA_SUCCESS with no
 * kernel; seed 43). */
Test(library, a_kernel_lookup_on_a_stale_library_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_library lib = {0}, stale;
    CUkernel k = NULL;
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    CHECK_OK(cuctx_library_kernel(lib, "tick", &k));
    cr_assert_neq(k, NULL);
    stale = lib;
    CHECK_OK(cuctx_library_destroy(&lib));
    unsigned long lookups = sim() ? calls("cuLibraryGetKernel") : 0;
    cuctx_library handles[2] = {stale, {0}};
    for (int i = 0; i < 2; i++) {
        k = (CUkernel)(uintptr_t)1;
        cr_assert_eq(cuctx_library_kernel(handles[i], "tick", &k), CUDA_ERROR_INVALID_HANDLE, "%s handle",
                     i ? "a {0}" : "a stale");
        cr_assert_eq(k, NULL, "a failed lookup left *out set");
        cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    }
    if (sim()) {
        cr_assert_eq(calls("cuLibraryGetKernel"), lookups, "the driver was asked for a stale library's kernel");
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a module's bad PTX reported by a code alone. */
Test(library, a_modules_bad_ptx_error_carries_the_jit_log)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    new_ctx(&c, 0, "C", POPPED);
    cr_assert_eq(cuctx_module_load_data(&m, c, test_broken_ptx), CUDA_ERROR_INVALID_PTX);
    cr_assert_eq(m.id, 0);
    const char *msg = cuctx_last_error_message();
    cr_assert(strstr(msg, "CUDA_ERROR_INVALID_PTX; the JIT log: ") && strstr(msg, "cusim_bad"), "%s", msg);
    cr_assert_eq(cuctx_module_load(&m, c, test_data_path("broken.ptx")), CUDA_ERROR_INVALID_PTX);
    msg = cuctx_last_error_message();
    cr_assert(strstr(msg, "cuModuleLoad(\"") && strstr(msg, "; the JIT log: ") && strstr(msg, "cusim_bad"), "%s", msg);
    cr_assert_eq(stats().modules, 0);
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_MODULE), 0, "the load made to read the log left a module");
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* A file that cuModuleLoad refused as bad PTX is read once more, through
 * cuModuleLoadDataEx, for its JIT log; when that second load succeeds (the
 * file was fine after all, or changed in between) the module it made is
 * unloaded at once. Here the first load is made to fail. Mutant killed:
 * lib/module.c:38 `call` (that cuModuleUnload removed: the module leaked;
 * gcov had seen no test run the line; seed 29). */
Test(library, a_file_that_loads_on_its_second_reading_leaves_no_module)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    new_ctx(&c, 0, "C", POPPED);
    size_t mark = log_mark();
    sim()->fail_call("cuModuleLoad", 1, CUDA_ERROR_INVALID_PTX);
    cr_assert_eq(cuctx_module_load(&m, c, test_data_path("vadd.ptx")), CUDA_ERROR_INVALID_PTX);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuModuleLoadDataEx"), 1, "the file was not read again for its log");
    struct cusim_call load = last_call("cuModuleLoadDataEx", mark);
    cr_assert_eq(load.rc, CUDA_SUCCESS, "the second reading did not load (%d)", (int)load.rc);
    cr_assert_eq(calls("cuModuleUnload"), 1, "the module of the second reading was not unloaded");
    cr_assert_eq(sim()->live(CUSIM_MODULE), 0, "the load made to read the log left a module");
    cr_assert_eq(stats().modules, 0);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a global's address or size wrong, or looked up on a stale
 * module. */
Test(library, a_modules_global)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    CUdeviceptr p = 0;
    size_t bytes = 0;
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_module_load_data(&m, c, small_ptx));
    CHECK_OK(cuctx_module_global(m, "counters", &p, &bytes));
    cr_assert_neq(p, 0);
    cr_assert_eq(bytes, 16);
    CHECK_OK(cuctx_module_global(m, "counters", NULL, NULL));
    cr_assert_eq(cuctx_module_global(m, "no_such", &p, &bytes), CUDA_ERROR_NOT_FOUND);
    cr_assert_eq(p, 0);
    cr_assert_eq(bytes, 0);
    cuctx_module stale = m;
    CHECK_OK(cuctx_module_destroy(&m));
    unsigned long lookups = sim() ? calls("cuModuleGetGlobal") : 0;
    cr_assert_eq(cuctx_module_global(stale, "counters", &p, &bytes), CUDA_ERROR_INVALID_HANDLE);
    if (sim())
        cr_assert_eq(calls("cuModuleGetGlobal"), lookups);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- capture ------------------------------------------------------------ */

struct captured { cuctx_ctx c; cuctx_stream s; cuctx_event ev; cuctx_library lib; CUkernel k; };

static void capture_setup(struct captured *t)
{
    *t = (struct captured){{0}, {0}, {0}, {0}, NULL};
    new_ctx(&t->c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&t->s, t->c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_library_load_data(&t->lib, small_ptx));
    CHECK_OK(cuctx_library_kernel(t->lib, "tick", &t->k));
}

/* The work a capture records: an event recorded (no node: it marks a point
 * in the capture) and a kernel launch (one node). */
static void queue_work(struct captured *t)
{
    CHECK_OK(cuctx_event_create(&t->ev, t->c, CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_event_record(t->ev, t->s));
    CHECK_OK(cuctx_launch(t->k, t->s, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){32, 1, 1}, 0, NULL));
}

static void capture_teardown(struct captured *t)
{
    CHECK_OK(cuctx_library_destroy(&t->lib));
    CHECK_OK(cuctx_event_destroy(&t->ev));
    CHECK_OK(cuctx_stream_destroy(&t->s));
    CHECK_OK(cuctx_ctx_destroy(&t->c));
}

/* Bug caught: the graph not kept at the block's end, the capture left
 * open, or the begin/end on another stream or mode. */
Test(capture, the_blocks_end_keeps_the_graph)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        ran++;
        cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
        queue_work(&t);
    }
    cr_assert_eq(ran, 1);
    cr_assert_neq(g.id, 0, "no graph: %s", cuctx_last_error_message());
    cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE);
    cr_assert_eq(graph_nodes(g), 1);
    cr_assert_eq(stats().graphs, 1);
    if (sim()) {
        struct cusim_call b = last_call("cuStreamBeginCapture", mark), e = last_call("cuStreamEndCapture", mark);
        cr_assert_eq(b.handle, (uint64_t)(uintptr_t)cuctx_stream_raw(t.s));
        cr_assert_eq(b.flags, CU_STREAM_CAPTURE_MODE_GLOBAL);
        cr_assert_eq(e.handle, b.handle);
        cr_assert_eq(calls("cuStreamBeginCapture"), 1);
        cr_assert_eq(calls("cuStreamEndCapture"), 1);
        ASSERT_NO_MISUSE();
    }
    cr_assert_eq(current(), NULL, "the capture left a context current");
    CHECK_OK(cuctx_graph_destroy(&g));
    capture_teardown(&t);
}

/* Bug caught: a capture left by a jump keeping a graph, leaking it, or
 * leaving the stream capturing (its next synchronize would invalidate
 * nothing and fail). break, goto and return, each. */
static int leave_by_return(struct captured *t, cuctx_graph *g)
{
    CUCTX_CAPTURE(t->s, g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        queue_work(t);
        return 7;
    }
    return 0;
}

Test(capture, break_goto_and_return_abandon_it)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    for (int way = 0; way < 3; way++) {
        if (way == 0) {
            CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
                queue_work(&t);
                break;
            }
        } else if (way == 1) {
            CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
                queue_work(&t);
                goto out;
            }
        out:;
        } else {
            cr_assert_eq(leave_by_return(&t, &g), 7);
        }
        cr_assert_eq(g.id, 0, "way %d kept a graph", way);
        cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE, "way %d left the stream capturing", way);
        CHECK_OK(cuctx_stream_synchronize(t.s));
        CHECK_OK(cuctx_event_destroy(&t.ev));
    }
    cr_assert_eq(stats().graphs, 0);
    if (sim()) {
        cr_assert_eq(calls("cuStreamEndCapture"), 3);
        cr_assert_eq(calls("cuGraphDestroy"), 3, "an abandoned graph leaked");
        cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
        ASSERT_NO_MISUSE();
    }
    capture_teardown(&t);
}

/* Counts what reaches the error handler about abandoning a capture,
 * whatever its code (count_handler_install leaves out CUDA_SUCCESS). */
struct abandon_reports { int n; CUresult rc; };

static void count_abandon_reports(CUresult rc, const char *message, void *user)
{
    struct abandon_reports *a = user;
    if (strncmp(message, "CUCTX_CAPTURE: abandoning", 25) == 0) {
        a->n++;
        a->rc = rc;
    }
}

/* A capture abandoned by a jump whose end and graph destroy succeed tells
 * the error handler nothing; nor does the ELSE form's, whose failures are
 * for the program to look at, when its abandon fails (the graph's destroy
 * made to fail: the one case that reaches the form's flag in the test of
 * lib/capture.c:175-176, so that gcov sees this program run the line).
 * Mutant killed: lib/capture.c:176 `lcr` (`... && c->report` made `... ||
 * c->report`: every abandon of the reporting form told the handler, of a
 * success too; and the other `lcr` of the line, whose `rc !=
 * CUDA_ERROR_CONTEXT_IS_DESTROYED && c->report` stood alone; seed 29). */
Test(capture, a_capture_abandoned_cleanly_tells_the_handler_nothing)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    struct abandon_reports a = {0, CUDA_SUCCESS};
    cuctx_set_error_handler(count_abandon_reports, &a);
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        queue_work(&t);
        break;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(a.n, 0, "the handler was told %d times of the abandon (%s)", a.n, cuctx_result_name(a.rc));
    cr_assert_eq(g.id, 0);
    cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE);
    if (sim()) {
        cr_assert_eq(calls("cuStreamEndCapture"), 1);
        cr_assert_eq(calls("cuGraphDestroy"), 1);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_synchronize(t.s));
    CHECK_OK(cuctx_event_destroy(&t.ev));
    if (sim()) {
        sim()->fail_call("cuGraphDestroy", 1, CUDA_ERROR_UNKNOWN);
        cuctx_set_error_handler(count_abandon_reports, &a);
        CUCTX_CAPTURE_ELSE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL, (void)0) {
            queue_work(&t);
            break;
        }
        cuctx_set_error_handler(NULL, NULL);
        cr_assert_eq(a.n, 0, "the ELSE form told the handler %d times of the abandon (%s)", a.n,
                     cuctx_result_name(a.rc));
        cr_assert_eq(g.id, 0);
        cr_assert_eq(calls("cuGraphDestroy"), 2);
        cr_assert_eq(last_call("cuGraphDestroy", 0).rc, CUDA_ERROR_UNKNOWN, "the destroy did not fail as made to");
        cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE);
        CHECK_OK(cuctx_stream_synchronize(t.s));
        CHECK_OK(cuctx_event_destroy(&t.ev));
    }
    capture_teardown(&t);
}

/* Bug caught: continue treated as a jump out (abandoning the graph), or
 * the block run twice. */
Test(capture, continue_ends_the_block_normally)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    int ran = 0;
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_RELAXED) {
        ran++;
        queue_work(&t);
        continue;
    }
    cr_assert_eq(ran, 1);
    cr_assert_neq(g.id, 0);
    CHECK_OK(cuctx_graph_destroy(&g));
    capture_teardown(&t);
}

/* Bug caught: an invalidated capture reported as a success (a {0} graph
 * with no error), or an error not told to the handler. */
Test(capture, an_invalidated_capture_leaves_no_graph_and_says_so)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    struct handler_count h;
    count_handler_install(&h);
    cuctx_graph g = {0};
    cuctx_mem m = {0};
    CUresult alloc = CUDA_SUCCESS;
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        queue_work(&t);
        alloc = cuctx_mem_alloc(&m, t.c, 4096);    /* forbidden under GLOBAL: invalidates */
    }
    cr_assert_eq(alloc, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(h.calls, 1, "the handler was told %d times", h.calls);
    cr_assert_eq(h.last_rc, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert(strstr(h.last_msg, "CUCTX_CAPTURE") && strstr(h.last_msg, "invalidated"), "%s", h.last_msg);
    cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_OK(cuctx_stream_synchronize(t.s));
    cuctx_set_error_handler(NULL, NULL);
    capture_teardown(&t);
}

/* Bug caught: the ELSE form telling the handler, or running the block
 * after a failed begin. */
Test(capture, the_else_form_runs_its_branch_and_tells_no_handler)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    struct handler_count h;
    count_handler_install(&h);
    cuctx_graph g = {0};
    int ran = 0, failed = 0;
    CUCTX_CAPTURE_ELSE(CUCTX_STREAM_LEGACY, &g, CU_STREAM_CAPTURE_MODE_GLOBAL, failed++) {
        ran++;
    }
    cr_assert_eq(ran, 0);
    cr_assert_eq(failed, 1);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cuctx_mem m = {0};
    CUCTX_CAPTURE_ELSE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL, failed++) {
        ran++;
        cr_assert_eq(cuctx_mem_alloc(&m, t.c, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    cr_assert_eq(ran, 1);
    cr_assert_eq(failed, 1);
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(h.calls, 0, "the handler was told %d times", h.calls);
    cuctx_set_error_handler(NULL, NULL);
    capture_teardown(&t);
}

/* Bug caught: a begin that overwrites a live graph in *out, or runs the
 * block, or reaches the driver, when it should refuse. */
Test(capture, an_output_holding_a_graph_or_a_default_stream_is_refused)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    struct handler_count h;
    count_handler_install(&h);
    CUCTX_AUTO cuctx_graph g = {0};
    CHECK_OK(cuctx_graph_create(&g));
    cuctx_graph before = g;
    int ran = 0;
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        ran++;
    }
    cr_assert_eq(ran, 0);
    cr_assert_eq(g.id, before.id);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(h.calls, 1);
    cr_assert(strstr(h.last_msg, "the block is skipped"), "%s", h.last_msg);
    cuctx_graph other = {0};
    CUCTX_CAPTURE(CUCTX_STREAM_PER_THREAD, &other, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        ran++;
    }
    CUCTX_CAPTURE((cuctx_stream){0}, &other, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        ran++;
    }
    cuctx_capture c;
    cr_assert_eq(cuctx_capture_begin(&c, t.s, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_capture_begin(&c, t.s, &other, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(ran, 0);
    cr_assert_eq(h.calls, 3);
    if (sim())
        cr_assert_eq(calls("cuStreamBeginCapture"), 0, "a refused capture reached the driver");
    cuctx_set_error_handler(NULL, NULL);
    capture_teardown(&t);
}

/* Bug caught: a capture's begin or end disturbing the thread's context
 * stack, in either nesting; a scope's own driver calls invalidating the
 * capture. */
Test(capture, nests_inside_a_scope_and_a_scope_inside_it)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_ctx other = {0};
    CUcontext other_raw = new_ctx(&other, 0, "O", POPPED);
    CUcontext c_raw = cuctx_ctx_raw(t.c);
    cuctx_graph g1 = {0}, g2 = {0};
    CUCTX_SCOPED(other) {
        CUCTX_CAPTURE(t.s, &g1, CU_STREAM_CAPTURE_MODE_GLOBAL) {
            EXPECT_CURRENT(other_raw);
            queue_work(&t);
        }
        EXPECT_CURRENT(other_raw);
    }
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_event_destroy(&t.ev));
    CUCTX_CAPTURE(t.s, &g2, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        CUCTX_SCOPED(t.c) {
            EXPECT_CURRENT(c_raw);
            queue_work(&t);
        }
        CUCTX_SCOPED(other) {
            EXPECT_CURRENT(other_raw);
        }
        EXPECT_CURRENT(NULL);
    }
    EXPECT_CURRENT(NULL);
    cr_assert_neq(g1.id, 0, "%s", cuctx_last_error_message());
    cr_assert_neq(g2.id, 0, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_graph_destroy(&g1));
    CHECK_OK(cuctx_graph_destroy(&g2));
    CHECK_OK(cuctx_ctx_destroy(&other));
    capture_teardown(&t);
}

/* Bug caught: one of cuctx's own calls making a driver call that a
 * capture forbids (a synchronize in a drain, a stream query to check
 * liveness, an allocation in a create), in any mode: the capture would be
 * invalidated and the graph lost. Everything cuctx offers that is not
 * itself forbidden is called inside, and the graph must survive. */
static void everything_allowed(struct captured *t, cuctx_ctx other)
{
    cuctx_event e2 = {0};
    cuctx_stream s2 = {0};
    cuctx_ctx borrowed = {0};
    cuctx_graph loose = {0};
    CUkernel k = NULL;
    queue_work(t);
    CHECK_OK(cuctx_event_create(&e2, t->c, 0));
    CHECK_OK(cuctx_stream_create(&s2, t->c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_wait_event(t->s, t->ev));
    CHECK_OK(cuctx_stream_ctx(t->s, &borrowed));
    CHECK_OK(cuctx_ctx_destroy(&borrowed));
    cr_assert_neq(cuctx_stream_raw(t->s), NULL);
    cr_assert_neq(cuctx_event_raw(t->ev), NULL);
    CHECK_OK(cuctx_library_kernel(t->lib, "tick", &k));
    CHECK_OK(cuctx_launch(k, t->s, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){32, 1, 1}, 0, NULL));
    CHECK_OK(cuctx_graph_create(&loose));
    CUCTX_SCOPED(other) {
        CUCTX_GUARD(t->c);
        int yes = 0;
        CHECK_OK(cuctx_ctx_is_current(t->c, &yes));
        cr_assert(yes);
    }
    (void)stats();
    CHECK_OK(cuctx_graph_destroy(&loose));
    CHECK_OK(cuctx_event_destroy(&e2));
    CHECK_OK(cuctx_stream_destroy(&s2));
}

Test(capture, cuctxs_own_calls_do_not_invalidate_it_in_any_mode)
{
    NEED_DRIVER();
    static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                CU_STREAM_CAPTURE_MODE_RELAXED};
    struct captured t;
    capture_setup(&t);
    cuctx_ctx other = {0};
    new_ctx(&other, 0, "O", POPPED);
    for (unsigned i = 0; i < 3; i++) {
        cuctx_graph g = {0};
        CUCTX_CAPTURE(t.s, &g, modes[i]) {
            everything_allowed(&t, other);
        }
        cr_assert_neq(g.id, 0, "mode %d: the capture was lost: %s", (int)modes[i], cuctx_last_error_message());
        cr_assert_eq(graph_nodes(g), 2, "mode %d: the two launches", (int)modes[i]);
        CHECK_OK(cuctx_graph_destroy(&g));
        CHECK_OK(cuctx_event_destroy(&t.ev));
    }
    if (sim())
        ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&other));
    capture_teardown(&t);
}

/* Bug caught: the capture holding the stream's pin across the block - the
 * stream's destroy inside would wait for it on this thread forever - or
 * its end calling the driver on the destroyed stream. */
Test(capture, the_stream_destroyed_inside_ends_it_without_a_graph)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    CUCTX_CAPTURE_ELSE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL, cr_assert_fail("begin failed")) {
        queue_work(&t);
        CHECK_OK(cuctx_stream_destroy(&t.s));
    }
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert(strstr(cuctx_last_error_message(), "the capturing stream was destroyed"), "%s",
              cuctx_last_error_message());
    if (sim()) {
        cr_assert_eq(calls("cuStreamEndCapture"), 0);
        cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
        ASSERT_NO_MISUSE();
    }
    capture_teardown(&t);
}

/* Bug caught: the functions by hand: end keeping or abandoning wrongly, a
 * second end calling the driver, a second begin on a capturing stream
 * stopping the first capture. */
Test(capture, by_hand)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_capture c, c2;
    cuctx_graph g = {0}, g2 = {0};
    CHECK_OK(cuctx_capture_begin(&c, t.s, &g, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    queue_work(&t);
    cr_assert_eq(cuctx_capture_begin(&c2, t.s, &g2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_ERROR_ILLEGAL_STATE);
    cr_assert(strstr(cuctx_last_error_message(), "capturing already"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_capture_end(&c2, 1));   /* never begun: nothing to end */
    cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_OK(cuctx_capture_end(&c, 1));
    cr_assert_neq(g.id, 0);
    unsigned long ends = sim() ? calls("cuStreamEndCapture") : 0;
    CHECK_OK(cuctx_capture_end(&c, 1));
    if (sim())
        cr_assert_eq(calls("cuStreamEndCapture"), ends, "a second end reached the driver");
    CHECK_OK(cuctx_event_destroy(&t.ev));
    CHECK_OK(cuctx_capture_begin(&c, t.s, &g2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    queue_work(&t);
    CHECK_OK(cuctx_capture_end(&c, 0));
    cr_assert_eq(g2.id, 0);
    cr_assert_eq(stats().graphs, 1);
    CHECK_OK(cuctx_graph_destroy(&g));
    capture_teardown(&t);
}

/* Bug caught: a captured graph's exec not tethered (its destroy after the
 * context's would crash the real driver), or the graph tethered (leaked). */
Test(capture, its_graph_outlives_the_context_and_the_exec_does_not)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    cuctx_graph_exec ge = {0};
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        queue_work(&t);
    }
    cr_assert_neq(g.id, 0);
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, t.c, cuctx_graph_raw(g), 0));
    CHECK_OK(cuctx_graph_exec_launch(ge, t.s));
    CHECK_OK(cuctx_stream_synchronize(t.s));
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_event_destroy(&t.ev));
    CHECK_OK(cuctx_stream_destroy(&t.s));
    CHECK_OK(cuctx_ctx_destroy(&t.c));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    cr_assert_eq(stats().stale_skips, skips + 1, "the exec's destroy after its context was not skipped");
    CHECK_OK(cuctx_graph_destroy(&g));
    cr_assert_eq(stats().stale_skips, skips + 1, "the graph's destroy was skipped");
    if (sim()) {
        cr_assert_eq(calls("cuGraphExecDestroy"), 0);
        cr_assert_eq(calls("cuGraphDestroy"), 1);
        cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: cuctx letting a capture begin while its synchronize of the
 * same context runs on another thread - a SIGSEGV inside cuCtxSynchronize
 * on the real driver (measured: tools/facts/sync_beside_capture.c, and
 * tests/stress crashed so). The simulator records the overlap as a misuse;
 * the begin must wait for the synchronize to end. */
struct sync_arg { cuctx_ctx c; CUresult rc; };

static void *synchronize_slowly(void *p)
{
    struct sync_arg *a = p;
    a->rc = cuctx_ctx_synchronize(a->c);
    return NULL;
}

Test(capture, never_begins_while_a_synchronize_of_its_context_runs)
{
    NEED_DRIVER();
    NEED_SIM();
    struct captured t;
    capture_setup(&t);
    sim()->set_sync_time(400000);
    struct sync_arg a = {t.c, CUDA_ERROR_UNKNOWN};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, synchronize_slowly, &a), 0);
    usleep(100000);     /* the synchronize is running: 400 ms */
    cuctx_graph g = {0};
    CUCTX_CAPTURE(t.s, &g, CU_STREAM_CAPTURE_MODE_RELAXED) {
        queue_work(&t);
    }
    pthread_join(th, NULL);
    CHECK_OK(a.rc);
    cr_assert_neq(g.id, 0, "%s", cuctx_last_error_message());
    ASSERT_NO_MISUSE();
    size_t sync_at = 0, begin_at = 0;
    for (size_t i = 0; i < log_mark(); i++) {
        struct cusim_call call;
        if (sim()->log_get(i, &call) == 0 && strcmp(call.fn, "cuCtxSynchronize") == 0)
            sync_at = i + 1;
        if (sim()->log_get(i, &call) == 0 && strcmp(call.fn, "cuStreamBeginCapture") == 0)
            begin_at = i + 1;
    }
    cr_assert(sync_at && begin_at && sync_at < begin_at, "the begin (%zu) came before the synchronize's end (%zu)",
              begin_at, sync_at);
    sim()->set_sync_time(0);
    CHECK_OK(cuctx_graph_destroy(&g));
    capture_teardown(&t);
}

/* A file of one byte that cuModuleLoad refused as bad PTX is read again
 * for its JIT log as a longer one is: its length (1) is no reason to skip
 * the second reading. Mutant killed: lib/module.c:33 `const` (`(n =
 * ftell(f)) > 1`: a one-byte file never read again, its log lost; seed 41). */
Test(library, a_one_byte_file_refused_as_bad_ptx_is_read_again_for_its_log)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    char path[] = "/tmp/cuctx-one-byte-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "x", 1), 1);
    cr_assert_eq(close(fd), 0);
    new_ctx(&c, 0, "C", POPPED);
    size_t mark = log_mark();
    unsigned long before = calls("cuModuleLoadDataEx");
    sim()->fail_call("cuModuleLoad", 1, CUDA_ERROR_INVALID_PTX);
    CUresult rc = cuctx_module_load(&m, c, path);
    unlink(path);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_PTX, "%s", cuctx_result_name(rc));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuModuleLoadDataEx"), before + 1, "the one-byte file was not read again for its log");
    struct cusim_call load = last_call("cuModuleLoadDataEx", mark);
    cr_assert_eq(load.arg, 2, "the second reading asks for the JIT log (2 options), not %lld", load.arg);
    cr_assert_eq(sim()->live(CUSIM_MODULE), 0, "the load made to read the log left a module");
    cr_assert_eq(stats().modules, 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- survivors of lib/capture.c and lib/entry.c (e1) ---- */

/* A capture by hand given no capture to fill is refused as documented
 * (INVALID_VALUE, its reason recorded), for the begin and the end alike,
 * and nothing reaches the driver. Mutants killed: lib/capture.c:83 and :130
 * `ret` (the NULL capture answered 0, as if begun or ended). */
Test(capture, by_hand_a_null_capture_is_refused_at_begin_and_end)
{
    NEED_DRIVER();
    struct captured t;
    capture_setup(&t);
    cuctx_graph g = {0};
    unsigned long begins = sim() ? calls("cuStreamBeginCapture") : 0;
    unsigned long ends = sim() ? calls("cuStreamEndCapture") : 0;
    cr_assert_eq(cuctx_capture_begin(NULL, t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_capture_begin: the capture is NULL"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_capture_end(NULL, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_capture_end: the capture is NULL"), "%s",
              cuctx_last_error_message());
    if (sim()) {
        cr_assert_eq(calls("cuStreamBeginCapture"), begins);
        cr_assert_eq(calls("cuStreamEndCapture"), ends);
        cr_assert_eq(capture_status(t.s), CU_STREAM_CAPTURE_STATUS_NONE);
    }
    capture_teardown(&t);
}

/* An abandoned capture (end with keep 0) whose graph the driver refuses to
 * destroy answers the driver's error and says so in the last error; one
 * that destroys it leaves the last error alone. Mutant killed:
 * lib/capture.c:120 `ror` (the failure returned unrecorded, the success
 * recorded as a failure of cuGraphDestroy). */
Test(capture, by_hand_abandoning_tells_a_failed_graph_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    struct captured t;
    capture_setup(&t);
    cuctx_capture c;
    cuctx_graph g = {0};
    /* first a clean abandon: the driver destroys the graph, no error is recorded */
    CHECK_OK(cuctx_capture_begin(&c, t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    queue_work(&t);
    CHECK_OK(cuctx_event_destroy(&t.ev));
    cr_assert_eq(cuctx_capture_end(NULL, 0), CUDA_ERROR_INVALID_VALUE);   /* a last error to keep */
    size_t mark = log_mark();
    CHECK_OK(cuctx_capture_end(&c, 0));
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE, "a clean abandon recorded %s: %s",
                 cuctx_result_name(cuctx_last_error()), cuctx_last_error_message());
    struct cusim_call d = last_call("cuGraphDestroy", mark);
    cr_assert_eq(d.rc, CUDA_SUCCESS);
    cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
    /* then one whose cuGraphDestroy fails */
    CHECK_OK(cuctx_capture_begin(&c, t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    queue_work(&t);
    mark = log_mark();
    sim()->fail_call("cuGraphDestroy", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_capture_end(&c, 0), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(g.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_capture_end: cuGraphDestroy of the abandoned graph failed"),
              "%s", cuctx_last_error_message());
    d = last_call("cuGraphDestroy", mark);
    cr_assert_eq(d.rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(sim()->live(CUSIM_GRAPH), 1);
    PFN_cuGraphDestroy_v10000 destroy = (PFN_cuGraphDestroy_v10000)drv_sym("cuGraphDestroy", 10000);
    cr_assert_eq(destroy((CUgraph)(uintptr_t)d.handle), CUDA_SUCCESS);
    capture_teardown(&t);
}

/* ---- mutation survivors of lib/module.c (h3) ---- */

#include <fcntl.h>

/* A global asked for with no name is refused as documented (INVALID_VALUE,
 * *ptr and *bytes 0), before the driver. Mutant killed: lib/module.c:145
 * `ret` (the refusal answered 0, success with no global). */
Test(library, a_modules_global_with_no_name_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    CUdeviceptr p = 1;
    size_t bytes = 1;
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_module_load_data(&m, c, small_ptx));
    unsigned long lookups = sim() ? calls("cuModuleGetGlobal") : 0;
    cr_assert_eq(cuctx_module_global(m, NULL, &p, &bytes), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "name is NULL"), "%s", cuctx_last_error_message());
    cr_assert_eq(p, 0);
    cr_assert_eq(bytes, 0);
    if (sim())
        cr_assert_eq(calls("cuModuleGetGlobal"), lookups, "the driver was asked for a global of no name");
    CHECK_OK(cuctx_module_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* An empty file that cuModuleLoad refused as bad PTX has nothing to read
 * again for a log: no second load is made, and the file opened to find
 * that out is closed (the lowest free descriptor is the same before and
 * after). Mutants killed: lib/module.c:33 `ror` (`ftell(f) >= 0`: the
 * empty file loaded again through cuModuleLoadDataEx) and :41 `call` (the
 * `fclose(f);` removed: a descriptor leaked at each failed load). */
Test(library, an_empty_file_refused_as_bad_ptx_is_not_read_again_and_is_closed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    char path[] = "/tmp/cuctx-empty-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(close(fd), 0);
    new_ctx(&c, 0, "C", POPPED);
    unsigned long before = calls("cuModuleLoadDataEx");
    sim()->fail_call("cuModuleLoad", 1, CUDA_ERROR_INVALID_PTX);
    int probe = open("/dev/null", O_RDONLY);
    cr_assert_geq(probe, 0);
    cr_assert_eq(close(probe), 0);
    CUresult rc = cuctx_module_load(&m, c, path);
    int again = open("/dev/null", O_RDONLY);
    unlink(path);
    cr_assert_geq(again, 0);
    cr_assert_eq(close(again), 0);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_PTX, "%s", cuctx_result_name(rc));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuModuleLoadDataEx"), before, "the empty file was loaded again for its log");
    cr_assert_eq(again, probe, "the file read for the log was left open (descriptor %d free before, %d after)",
                 probe, again);
    cr_assert_eq(sim()->live(CUSIM_MODULE), 0);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- mutation survivors of lib/library.c (h3) ---- */

/* A library load given no path (no image) is refused as documented
 * (INVALID_VALUE, the handle left 0), before the driver. Mutant killed:
 * lib/library.c:123 `ret` (the refusal answered 0: success with no
 * library; no test ran the line). */
Test(library, a_load_of_no_path_or_no_image_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_library lib = {0};
    unsigned long files = sim() ? calls("cuLibraryLoadFromFile") : 0, datas = sim() ? calls("cuLibraryLoadData") : 0;
    cr_assert_eq(cuctx_library_load(&lib, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_library_load: path is NULL"), "%s", cuctx_last_error_message());
    cr_assert_eq(lib.id, 0);
    cr_assert_eq(cuctx_library_load_data(&lib, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_library_load_data: image is NULL"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(lib.id, 0);
    cr_assert_eq(stats().libraries, 0);
    if (sim()) {
        cr_assert_eq(calls("cuLibraryLoadFromFile"), files);
        cr_assert_eq(calls("cuLibraryLoadData"), datas);
    }
}

/* A kernel lookup with no name, or no place for the kernel, is refused
 * (INVALID_VALUE) before the driver, either one missing alone. Mutant
 * killed: lib/library.c:161 `lcr` (`!name && !out`: only both missing
 * refused, the driver asked otherwise). */
Test(library, a_kernel_lookup_with_no_name_or_no_out_is_refused_before_the_driver)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_library lib = {0};
    CUkernel k = (CUkernel)(uintptr_t)1;
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    unsigned long lookups = sim() ? calls("cuLibraryGetKernel") : 0;
    cr_assert_eq(cuctx_library_kernel(lib, NULL, &k), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(k, NULL);
    cr_assert(strstr(cuctx_last_error_message(), "name or out is NULL"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_library_kernel(lib, "tick", NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "name or out is NULL"), "%s", cuctx_last_error_message());
    if (sim())
        cr_assert_eq(calls("cuLibraryGetKernel"), lookups, "the driver was asked for a lookup cuctx refuses");
}

/* Fills a stretch of the stack below its caller with 'x' (what a frame
 * called next from the same caller finds in its uninitialized locals). */
static __attribute__((noinline)) void dirty_the_stack_h3(void)
{
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 'x';
}

/* A failed lookup in a library that kept no log says no log, whatever the
 * stack held where the lookup keeps the log's text: that buffer is made ""
 * first. The stack is filled with 'x' right before, at the lookup's depth
 * (after a first lookup, so that no lazy binding runs in between).
 * Mutant killed: lib/library.c:53 `const` (`buf[1] = '\0'`: the buffer's
 * first byte left as found, and the lookup's message given a "JIT log" of
 * stack garbage). */
Test(library, a_failed_lookup_with_no_log_kept_says_none_whatever_the_stack_held)
{
    NEED_DRIVER();
    CUCTX_AUTO cuctx_library lib = {0};
    CUkernel k = NULL;
    CHECK_OK(cuctx_library_load_data(&lib, small_ptx));
    CHECK_OK(cuctx_library_kernel(lib, "tick", &k));
    cr_assert_eq(cuctx_library_kernel(lib, "nothing_of_that_name", &k), CUDA_ERROR_NOT_FOUND);
    dirty_the_stack_h3();
    CUresult rc = cuctx_library_kernel(lib, "nothing_of_that_name", &k);
    cr_assert_eq(rc, CUDA_ERROR_NOT_FOUND, "%s", cuctx_result_name(rc));
    cr_assert_null(strstr(cuctx_last_error_message(), "JIT log"), "%s", cuctx_last_error_message());
}

/* ---- mutation survivors of lib/graph.c (h6) ---- */

/* A capture's end that cannot hand its graph over - the output was given a
 * live graph while the capture ran, so the graph's create is refused as a
 * create into a live handle - answers that refusal, destroys the captured
 * graph in the driver (nothing else names it), and leaves the output as
 * it was. Mutants killed: lib/graph.c:61 `ret` (the refusal answered as a
 * success) and lib/graph.c:60 `call` (the captured graph leaked). */
Test(capture, an_end_that_cannot_fill_its_output_destroys_the_captured_graph)
{
    NEED_DRIVER();
    NEED_SIM();
    struct captured t;
    capture_setup(&t);
    cuctx_capture c;
    cuctx_graph g = {0}, other = {0};
    CHECK_OK(cuctx_graph_create(&other));
    CHECK_OK(cuctx_capture_begin(&c, t.s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    queue_work(&t);
    g = other;      /* the output now names a live graph */
    size_t mark = log_mark();
    CUresult rc = cuctx_capture_end(&c, 1);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_capture_end: the handle to fill already holds a live object"),
                       "%s", cuctx_last_error_message());
    struct cusim_call e = last_call("cuStreamEndCapture", mark);
    cr_assert_eq(e.rc, CUDA_SUCCESS);
    cr_assert_neq(e.handle2, 0, "the capture made no graph");
    cr_assert_neq(e.handle2, (uint64_t)(uintptr_t)cuctx_graph_raw(other));
    cr_assert_eq(calls_on("cuGraphDestroy", e.handle2, mark), 1, "the captured graph was not destroyed");
    cr_assert_eq(sim()->live(CUSIM_GRAPH), 1, "the captured graph leaked in the driver");
    cr_assert_eq(g.id, other.id, "the output was overwritten");
    cr_assert_eq(stats().graphs, 1);
    CHECK_OK(cuctx_capture_end(&c, 1));     /* ended: nothing more to do */
    CHECK_OK(cuctx_graph_destroy(&other));
    cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
    ASSERT_NO_MISUSE();
    capture_teardown(&t);
}


/* ---- a stream handle that only tracks ------------------------------------- */

/* Bug caught: a capture on a stream handle that only tracks its
 * stream (cuctx_stream_adopt, owned 0) whose handle is destroyed inside
 * the block: the destroy ends the handle and never calls the driver (the
 * header's adopt contract), so the raw stream goes on capturing; the end
 * looks the stream up by its handle only, finds it stale and gives up -
 * CUDA_ERROR_INVALID_HANDLE, "the capturing stream was destroyed" (it was
 * not) - and the stream is left capturing, though CUCTX_CAPTURE "ends the
 * capture at every exit of the block, so the stream is never left
 * capturing". The begin now refuses such a handle (the header: "a handle
 * that only tracks a stream made elsewhere is refused"): the block is
 * skipped, and the stream never captures. */
Test(capture, a_tracking_stream_handle_destroyed_inside_leaves_no_stream_capturing)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_graph g = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    PFN_cuStreamCreate_v2000 mk = (PFN_cuStreamCreate_v2000)drv_sym("cuStreamCreate", 2000);
    PFN_cuStreamDestroy_v4000 rm = (PFN_cuStreamDestroy_v4000)drv_sym("cuStreamDestroy", 4000);
    PFN_cuStreamIsCapturing_v10000 is_capturing = (PFN_cuStreamIsCapturing_v10000)drv_sym("cuStreamIsCapturing", 10000);
    CUstream raw = NULL;
    CHECK_OK(mk(&raw, CU_STREAM_NON_BLOCKING));
    CHECK_OK(cuctx_stream_adopt(&s, c, raw, 0));
    CUCTX_CAPTURE(s, &g, CU_STREAM_CAPTURE_MODE_RELAXED) {
        CHECK_OK(cuctx_stream_destroy(&s));
    }
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    CHECK_OK(is_capturing(raw, &st));
    cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE, "the raw stream was left capturing (status %d)", (int)st);
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_CAPTURE), 0, "a capture was left open");
    CHECK_OK(rm(raw));
    CHECK_OK(cuctx_ctx_destroy(&c));
}
