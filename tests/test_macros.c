/* SPDX-License-Identifier: MIT */
/* test_macros.c - every exit path of CUCTX_AUTO, CUCTX_SCOPED,
 * CUCTX_SCOPED_ELSE and CUCTX_GUARD, and CUCTX_MOVE: which context is current
 * at each point, and (against the simulated driver) exactly which destroys
 * and context switches reached the driver, in which order.
 *
 * The call log is read as "fn(name)" lines (EXPECT_TRACE in testlib.h): each
 * test names the driver handles it made (contexts A and B, events ev, ...),
 * so an expected trace reads like
 * "cuCtxPushCurrent(B),cuEventDestroy(ev),cuCtxPopCurrent(B)". Address
 * recycling is turned off so that one value names one object for the whole
 * test. */
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H(p) ((uint64_t)(uintptr_t)(p))

/* ---- setup ---------------------------------------------------------------- */



/* The handle of a destroyed context, with a fresh context A current. */
static cuctx_ctx stale_over_current(cuctx_ctx *a, CUcontext *A)
{
    cuctx_ctx b = {0};
    unique_addresses();
    *A = new_ctx(a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    cuctx_ctx stale = b;
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_set_current(*a));
    return stale;
}

static size_t live_children(void)
{
    struct cuctx_stats st = stats();
#define STAT_SUM(name, type, stat, ...) + st.stat
    return 0 TEST_CHILD_KINDS(STAT_SUM);
#undef STAT_SUM
}

/* <kind>_new(c, name): a child of c made with kinds.h's defaults and named
 * for traces (event_new, stream_new, ..., graph_exec_new). */
#define KIND_NEW(kind, type, stat, sim, letter, ...)                   \
    static type kind##_new(cuctx_ctx c, const char *name)              \
    {                                                                  \
        type h = {0};                                                  \
        CHECK_OK(kind_create_##kind(&h, c));                           \
        name_handle(letter, kind_raw_##kind(h), name);                 \
        return h;                                                      \
    }
TEST_CHILD_KINDS(KIND_NEW)
#undef KIND_NEW

/* ======================================================================== */
/*  CUCTX_AUTO                                                              */
/* ======================================================================== */

Test(auto, context_destroyed_when_the_block_falls_off_the_end)
{
    NEED_DRIVER();
    unique_addresses();
    size_t mark = log_mark();
    CUcontext A;
    {
        CUCTX_AUTO cuctx_ctx a = {0};
        CHECK_OK(cuctx_ctx_create(&a, 0, CUCTX_SCHED_AUTO));
        A = cuctx_ctx_raw(a);
        name_handle('c', H(A), "A");
        EXPECT_CURRENT(A);
        cr_assert_eq(stats().contexts, 1);
    }
    EXPECT_CURRENT(NULL);      /* destroying the current context pops it */
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(stats().ctx_handles, 0);
    EXPECT_TRACE(mark, "cuCtxDestroy(A)");
}

/* Each kind's handle, made with its owner A current and declared CUCTX_AUTO
 * in an inner block, is destroyed at the block's exit: the one driver call
 * is its destroy (A current, so no switch), and A stays current. */
static CUcontext block_exit_begin(cuctx_ctx *a, size_t *mark)
{
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(*a));
    *mark = log_mark();
    return A;
}

static void block_exit_end(CUcontext A, size_t mark, size_t live, const char *want)
{
    cr_assert_eq(live, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, want);
    graph_fini();
}

#define AUTO_AT_BLOCK_EXIT(name, type, stat, sim, letter, create_fn, destroy_fn, ...) \
    Test(auto, name##_destroyed_at_block_exit)                                        \
    {                                                                                 \
        CUCTX_AUTO cuctx_ctx a = {0};                                                 \
        size_t mark;                                                                  \
        CUcontext A = block_exit_begin(&a, &mark);                                    \
        {                                                                             \
            CUCTX_AUTO type h = name##_new(a, "h");                                   \
            cr_assert_eq(stats().stat, 1);                                            \
        }                                                                             \
        block_exit_end(A, mark, stats().stat, destroy_fn "(h)");                      \
    }
TEST_CHILD_KINDS(AUTO_AT_BLOCK_EXIT)
#undef AUTO_AT_BLOCK_EXIT

Test(auto, every_kind_destroyed_in_reverse_declaration_order_children_first)
{
    NEED_DRIVER();
    unique_addresses();
    size_t mark = 0;
    {
        CUCTX_AUTO cuctx_ctx a = {0};
        CUcontext A = new_ctx(&a, 0, "A", POPPED);
        CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
        CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
        CUCTX_AUTO cuctx_mem m = mem_new(a, "m");
        CUCTX_AUTO cuctx_host_mem h = host_mem_new(a, "h");
        CUCTX_AUTO cuctx_module mod = module_new(a, "mod");
        CUCTX_AUTO cuctx_graph_exec ge = graph_exec_new(a, "ge");
        cr_assert_eq(live_children(), 6);
        (void)A;
        EXPECT_CURRENT(NULL);
        mark = log_mark();
    }
    EXPECT_CURRENT(NULL);
    struct cuctx_stats st = stats();
    cr_assert_eq(st.stale_skips, 0, "children declared after their context are destroyed while it lives");
    cr_assert_eq(st.failed_destroys, 0);
    cr_assert_eq(live_children(), 0);
    cr_assert_eq(st.contexts, 0);
    /* the memory frees need their context current: pushed around each */
    EXPECT_TRACE(mark, "cuGraphExecDestroy(ge),cuModuleUnload(mod),"
                       "cuCtxPushCurrent(A),cuMemFreeHost(h),cuCtxPopCurrent(A),"
                       "cuCtxPushCurrent(A),cuMemFree(m),cuCtxPopCurrent(A),"
                       "cuStreamDestroy(s),cuEventDestroy(ev),cuCtxDestroy(A)");
    graph_fini();
}

Test(auto, child_declared_before_its_context_is_a_stale_skip_not_a_driver_call)
{
    NEED_DRIVER();
    unique_addresses();
    size_t mark = 0;
    {
        CUCTX_AUTO cuctx_event ev = {0};   /* WRONG order on purpose (rule 2) */
        CUCTX_AUTO cuctx_ctx a = {0};
        new_ctx(&a, 0, "A", POPPED);
        ev = event_new(a, "ev");
        mark = log_mark();
    }
    cr_assert_eq(stats().stale_skips, 1);
    cr_assert_eq(stats().events, 0);
    cr_assert_eq(stats().failed_destroys, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxDestroy(A)");
}

Test(auto, cleanup_of_zero_handles_calls_nothing)
{
    struct handler_count hc;
    NEED_DRIVER();
    count_handler_install(&hc);
    size_t before = sim() ? sim()->log_count() : 0;
    {
        CUCTX_AUTO cuctx_ctx c = {0};
        CUCTX_AUTO cuctx_event ev = {0};
        CUCTX_AUTO cuctx_stream s = {0};
        CUCTX_AUTO cuctx_module mod = {0};
        CUCTX_AUTO cuctx_mem m = {0};
        CUCTX_AUTO cuctx_host_mem h = {0};
        CUCTX_AUTO cuctx_graph_exec ge = {0};
    }
    if (sim())
        cr_assert_eq(sim()->log_count(), before, "a {0} cleanup made driver calls");
    cr_assert_eq(hc.calls, 0);
    cr_assert_eq(stats().failed_destroys, 0);
    cuctx_set_error_handler(NULL, NULL);
}

/* Returns the event's driver handle, read through the AUTO variable. */
static CUevent auto_return_one_level(cuctx_ctx a, cuctx_event *copy)
{
    CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
    *copy = ev;
    return cuctx_event_raw(ev);
}

Test(auto, return_value_computed_before_cleanup)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    cuctx_event copy = {0};
    CUevent raw = auto_return_one_level(a, &copy);
    cr_assert_not_null(raw, "the return value read the handle before it was destroyed");
    cr_assert_null(cuctx_event_raw(copy), "after the return the event is destroyed");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(stats().events, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev)");
    if (sim())
        cr_assert_eq(calls_on("cuEventDestroy", H(raw), mark), 1);
}

/* Returns how many children were alive when the return value was computed. */
static size_t auto_return_two_levels(cuctx_ctx a)
{
    CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
    {
        CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
        return live_children() + (ev.id != 0) + (s.id != 0);
    }
}

Test(auto, return_from_two_nested_blocks_destroys_inner_then_outer)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    cr_assert_eq(auto_return_two_levels(a), 4);
    cr_assert_eq(live_children(), 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuStreamDestroy(s),cuEventDestroy(ev)");
}

static size_t auto_return_three_levels(cuctx_ctx a, int go)
{
    CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
    for (int i = 0; i < 1; i++) {
        CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
        if (go) {
            CUCTX_AUTO cuctx_mem m = mem_new(a, "m");
            return live_children();
        }
    }
    return 0;
}

Test(auto, return_from_three_nested_levels_destroys_innermost_first)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    cr_assert_eq(auto_return_three_levels(a, 1), 3, "all three alive when the value was computed");
    cr_assert_eq(live_children(), 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuMemFree(m),cuStreamDestroy(s),cuEventDestroy(ev)");
}

Test(auto, break_destroys_the_iteration_handle_and_leaves_the_loop)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int i, iterations = 0;
    for (i = 0; i < 5; i++) {
        CUCTX_AUTO cuctx_event ev = event_new(a, NTH("ev", i));
        cr_assert_eq(stats().events, 1, "the previous iteration's event is gone");
        iterations++;
        if (i == 1)
            break;
    }
    cr_assert_eq(i, 1);
    cr_assert_eq(iterations, 2);
    cr_assert_eq(stats().events, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev0),cuEventDestroy(ev1)");
}

Test(auto, continue_destroys_the_iteration_handle_and_the_loop_goes_on)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int after_continue = 0, iterations = 0;
    for (int i = 0; i < 3; i++) {
        CUCTX_AUTO cuctx_event ev = event_new(a, NTH("ev", i));
        iterations++;
        cr_assert_eq(stats().events, 1);
        if (i != 1)
            continue;
        after_continue++;
    }
    cr_assert_eq(iterations, 3);
    cr_assert_eq(after_continue, 1);
    cr_assert_eq(stats().events, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev0),cuEventDestroy(ev1),cuEventDestroy(ev2)");
}

Test(auto, goto_out_of_nested_blocks_destroys_inner_then_outer)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int skipped = 0, jump = 1;
    {
        CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
        {
            CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
            {
                CUCTX_AUTO cuctx_mem m = mem_new(a, "m");
                if (jump)
                    goto out;
                skipped++;
            }
            skipped++;
        }
        skipped++;
    }
    skipped++;
out:
    cr_assert_eq(skipped, 0);
    cr_assert_eq(live_children(), 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuMemFree(m),cuStreamDestroy(s),cuEventDestroy(ev)");
}

Test(auto, switch_case_bodies_destroy_their_handles_on_break)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int hits[3] = {0}, not_reached = 0;
    for (int k = 0; k < 3; k++) {
        switch (k) {
        case 0: {
            CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
            hits[0]++;
            break;
        }
        case 1: {
            CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
            hits[1]++;
            if (k == 1)
                break;
            not_reached++;
            break;
        }
        default:
            hits[2]++;
            cr_assert_eq(live_children(), 0, "case bodies destroyed their handles at break");
            break;
        }
    }
    cr_assert_eq(hits[0] + hits[1] + hits[2], 3);
    cr_assert_eq(not_reached, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev),cuStreamDestroy(s)");
}

/* Hands a new event out of its scope. */
static cuctx_event make_event(cuctx_ctx a)
{
    CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
    return CUCTX_MOVE(ev);
}

Test(auto, move_hands_the_object_out_and_the_receiver_destroys_it)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    {
        CUCTX_AUTO cuctx_event got = make_event(a);
        cr_assert_neq(got.id, 0);
        EXPECT_TRACE(mark, "");     /* the moved-from variable's cleanup did nothing */
        cr_assert_eq(stats().events, 1);
        CHECK_OK(cuctx_event_query(got));   /* still alive and usable */
    }
    cr_assert_eq(stats().events, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev)");
}

Test(auto, move_leaves_zero_behind_and_yields_the_handle)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    size_t mark = 0;
    {
        CUCTX_AUTO cuctx_mem outer = {0};
        {
            CUCTX_AUTO cuctx_mem inner = mem_new(a, "m");
            uint64_t id = inner.id;
            outer = CUCTX_MOVE(inner);
            cr_assert_eq(inner.id, 0, "CUCTX_MOVE leaves {0} behind");
            cr_assert_eq(outer.id, id, "CUCTX_MOVE yields the handle");
            mark = log_mark();
        }
        EXPECT_TRACE(mark, "");
        cr_assert_eq(stats().mems, 1);
        cr_assert_eq(cuctx_mem_size(outer), 4096);
    }
    cr_assert_eq(stats().mems, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuMemFree(m),cuCtxPopCurrent(A)");
}

Test(auto, move_evaluates_its_argument_once)
{
    NEED_DRIVER();
    cuctx_event list[3] = {{0}};
    int i = 0;
    list[0].id = 11;    /* never destroyed: MOVE only reads and resets */
    list[1].id = 22;
    cuctx_event got = CUCTX_MOVE(list[i++]);
    cr_assert_eq(i, 1, "the argument was evaluated %d times", i);
    cr_assert_eq(got.id, 11);
    cr_assert_eq(list[0].id, 0, "the moved-from element is reset");
    cr_assert_eq(list[1].id, 22, "no other element is touched");
}

/* One CUCTX_MOVE per handle kind: each picks its own function. */
Test(auto, move_works_for_every_kind)
{
    NEED_DRIVER();
    cuctx_ctx c = {1};      /* never destroyed: MOVE only reads and resets */
    cuctx_event ev = {2};
    cuctx_stream s = {3};
    cuctx_module mod = {4};
    cuctx_mem m = {5};
    cuctx_host_mem h = {6};
    cuctx_graph_exec ge = {7};
    cr_assert_eq(CUCTX_MOVE(c).id, 1);
    cr_assert_eq(CUCTX_MOVE(ev).id, 2);
    cr_assert_eq(CUCTX_MOVE(s).id, 3);
    cr_assert_eq(CUCTX_MOVE(mod).id, 4);
    cr_assert_eq(CUCTX_MOVE(m).id, 5);
    cr_assert_eq(CUCTX_MOVE(h).id, 6);
    cr_assert_eq(CUCTX_MOVE(ge).id, 7);
    cr_assert_eq(c.id + ev.id + s.id + mod.id + m.id + h.id + ge.id, 0, "each left {0} behind");
}

Test(auto, move_of_a_context_out_of_an_inner_block_destroys_it_later)
{
    NEED_DRIVER();
    unique_addresses();
    size_t mark = 0;
    {
        CUCTX_AUTO cuctx_ctx keep = {0};
        {
            CUCTX_AUTO cuctx_ctx a = {0};
            new_ctx(&a, 0, "A", POPPED);
            mark = log_mark();
            keep = CUCTX_MOVE(a);
        }
        EXPECT_TRACE(mark, "");
        cr_assert_eq(stats().contexts, 1);
        cr_assert_not_null(cuctx_ctx_raw(keep));
    }
    cr_assert_eq(stats().contexts, 0);
    EXPECT_TRACE(mark, "cuCtxDestroy(A)");
}

Test(auto, cleanup_of_a_handle_destroyed_through_a_copy_reports_and_goes_on)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    {
        /* declared first, so cleaned up after ev's failed cleanup: "goes on" means it still is */
        CUCTX_AUTO cuctx_event later = event_new(a, "later");
        CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
        cuctx_event copy = ev;
        CHECK_OK(cuctx_event_destroy(&copy));
        cr_assert_eq(copy.id, 0);
        cr_assert_neq(ev.id, 0);
        cr_assert_neq(later.id, 0);
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(hc.calls, 1, "the failed cleanup went to the error handler once");
    cr_assert_eq(hc.last_rc, CUDA_ERROR_INVALID_HANDLE, "got %s", cuctx_result_name(hc.last_rc));
    cr_assert_not_null(strstr(hc.last_msg, "automatic cleanup"), "message: %s", hc.last_msg);
    cr_assert_eq(stats().events, 0, "the cleanup after the failed one destroyed its event");
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuEventDestroy(ev),cuEventDestroy(later)");     /* ev once, through the copy */
}

/* A block whose CUCTX_AUTO event names no object, so its cleanup fails. */
static void failing_cleanup(void)
{
    CUCTX_AUTO cuctx_event ev = {0x0123456789abcdefull};
    (void)ev;
}

static void run_failing_cleanup(void *arg)
{
    (void)arg;
    failing_cleanup();
}

/* What failing_cleanup writes to stderr. */
static void stderr_of_failing_cleanup(char *buf, size_t n)
{
    stderr_of(run_failing_cleanup, NULL, buf, n);
}

Test(auto, failed_cleanup_is_written_to_stderr_again_once_the_default_handler_is_restored)
{
    struct handler_count hc;
    char out[1024];
    cr_assert_eq(unsetenv("CUCTX_LOG"), 0);     /* the default level: warnings are written */
    NEED_DRIVER();
    count_handler_install(&hc);
    stderr_of_failing_cleanup(out, sizeof out);
    cr_assert_eq(hc.calls, 1, "the installed handler got the failure");
    cr_assert_str_eq(out, "", "an installed handler replaces the default one");
    cuctx_set_error_handler(NULL, NULL);
    stderr_of_failing_cleanup(out, sizeof out);
    cr_assert_eq(hc.calls, 1, "the old handler is no longer called");
    cr_assert_eq(strncmp(out, "cuctx: ", 7), 0, "stderr got \"%s\"", out);
    cr_assert_not_null(strstr(out, "automatic cleanup"), "stderr got \"%s\"", out);
}

Test(auto, cleanup_of_a_context_destroyed_through_a_copy_reports_and_goes_on)
{
    struct handler_count hc;
    NEED_DRIVER();
    unique_addresses();
    count_handler_install(&hc);
    size_t mark = 0;
    {
        CUCTX_AUTO cuctx_ctx a = {0};
        new_ctx(&a, 0, "A", POPPED);
        mark = log_mark();
        cuctx_ctx copy = a;
        CHECK_OK(cuctx_ctx_destroy(&copy));
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(hc.calls, 1);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_INVALID_HANDLE, "got %s", cuctx_result_name(hc.last_rc));
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxDestroy(A)");
}

Test(auto, cleanup_the_driver_refuses_reports_and_counts_a_failed_destroy)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    {
        CUCTX_AUTO cuctx_stream s = stream_new(a, "s");
        sim()->fail_call("cuStreamDestroy", 1, CUDA_ERROR_UNKNOWN);
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(hc.calls, 1);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN, "got %s", cuctx_result_name(hc.last_rc));
    cr_assert_eq(stats().failed_destroys, 1);
    cr_assert_eq(stats().streams, 0, "the handle is released even so");
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuStreamDestroy(s)");
}

/* ======================================================================== */
/*  CUCTX_SCOPED                                                            */
/* ======================================================================== */

Test(scoped, falls_off_the_end_and_leaves_no_context_when_none_was_current)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        ran++;
    }
    cr_assert_eq(ran, 1, "the block runs exactly once");
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(scoped, falls_off_the_end_and_restores_the_previous_context)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED(b) {
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

Test(scoped, entering_the_current_context_changes_nothing_at_the_driver)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        ran++;
    }
    cr_assert_eq(ran, 1);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(scoped, nested_on_the_same_context_switches_only_once)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(a) {
            EXPECT_CURRENT(A);
            CUCTX_SCOPED(a) {
                EXPECT_CURRENT(A);
            }
        }
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(scoped, nested_on_different_contexts_restores_each_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        CUCTX_SCOPED(b) {
            EXPECT_CURRENT(B);
            CUCTX_SCOPED(a) {
                EXPECT_CURRENT(A);
            }
            EXPECT_CURRENT(B);
        }
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPushCurrent(A),cuCtxPopCurrent(A),"
                 "cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(scoped, two_scopes_on_one_line_nest)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(a) CUCTX_SCOPED(b) { EXPECT_CURRENT(B); ran++; }
    cr_assert_eq(ran, 1);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(scoped, evaluates_its_context_expression_once)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    cuctx_ctx list[2] = {a, {0}};
    int i = 0, ran = 0;
    CUCTX_SCOPED(list[i++]) {
        EXPECT_CURRENT(A);
        ran++;
    }
    cr_assert_eq(i, 1);
    cr_assert_eq(ran, 1);
    EXPECT_CURRENT(NULL);
}

static CUcontext scoped_return_one_level(cuctx_ctx b)
{
    CUCTX_SCOPED(b) {
        return current();
    }
    return (CUcontext)(uintptr_t)1;   /* enter failed */
}

Test(scoped, return_from_one_level_computes_the_value_before_the_restore)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUcontext got = scoped_return_one_level(b);
    cr_assert_eq(got, B, "the value was computed with B current, got %s", name_of('c', H(got)));
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

static CUcontext scoped_return_two_levels(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(b) {
            return current();
        }
    }
    return (CUcontext)(uintptr_t)1;
}

Test(scoped, return_from_two_nested_levels_restores_both)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    CUcontext got = scoped_return_two_levels(a, b);
    cr_assert_eq(got, B, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

static CUcontext scoped_return_three_levels(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(b) {
            CUCTX_SCOPED(a) {
                return current();
            }
        }
    }
    return (CUcontext)(uintptr_t)1;
}

Test(scoped, return_from_three_nested_levels_restores_every_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(b));
    size_t mark = log_mark();
    CUcontext got = scoped_return_three_levels(a, b);
    cr_assert_eq(got, A, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(B);
    /* B, then A, B, A entered; unwound as B, A, and B again */
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPushCurrent(A),cuCtxPopCurrent(A),"
                 "cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(scoped, break_leaves_only_the_scope_and_restores)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int iterations = 0, after_break = 0, after_scope = 0;
    for (int i = 0; i < 3; i++) {
        iterations++;
        CUCTX_SCOPED(a) {
            EXPECT_CURRENT(A);
            if (i >= 0)
                break;              /* leaves the scope, not the loop */
            after_break++;
        }
        EXPECT_CURRENT(NULL);
        after_scope++;
    }
    cr_assert_eq(iterations, 3, "the loop went on");
    cr_assert_eq(after_scope, 3);
    cr_assert_eq(after_break, 0);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPopCurrent(A),cuCtxPushCurrent(A),cuCtxPopCurrent(A),"
                 "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(scoped, continue_leaves_only_the_scope_and_the_loop_goes_on)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int after_continue = 0, after_scope = 0, i = 0;
    while (i < 2) {
        i++;
        CUCTX_SCOPED(b) {
            EXPECT_CURRENT(B);
            if (i > 0)
                continue;           /* ends the run-once loop: leaves the scope */
            after_continue++;
        }
        EXPECT_CURRENT(A);
        after_scope++;
    }
    cr_assert_eq(after_continue, 0);
    cr_assert_eq(after_scope, 2, "the statement after the scope ran in every iteration");
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

Test(scoped, goto_out_of_nested_blocks_restores_every_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    int skipped = 0, jump = 1;
    CUCTX_SCOPED(a) {
        {
            CUCTX_SCOPED(b) {
                {
                    EXPECT_CURRENT(B);
                    if (jump)
                        goto out;
                    skipped++;
                }
            }
            skipped++;
        }
        skipped++;
    }
    skipped++;
out:
    cr_assert_eq(skipped, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(scoped, break_in_a_switch_case_leaves_the_scope_not_the_switch)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int after_scope = 0, other = 0, not_reached = 0;
    for (int k = 0; k < 2; k++) {
        switch (k) {
        case 1:
            CUCTX_SCOPED(a) {
                CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
                EXPECT_CURRENT(A);
                if (k == 1)
                    break;          /* leaves the scope only */
                not_reached++;
            }
            EXPECT_CURRENT(NULL);
            after_scope++;
            break;                  /* leaves the switch */
        default:
            other++;
            break;
        }
    }
    cr_assert_eq(after_scope, 1);
    cr_assert_eq(other, 1);
    cr_assert_eq(not_reached, 0);
    cr_assert_eq(stats().events, 0);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuEventDestroy(ev),cuCtxPopCurrent(A)");
}

Test(scoped, auto_children_inside_are_destroyed_before_the_restore)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED(b) {
        CUCTX_AUTO cuctx_event ev = event_new(b, "ev");
        CUCTX_AUTO cuctx_stream s = stream_new(b, "s");
    }
    EXPECT_CURRENT(A);
    cr_assert_eq(live_children(), 0);
    cr_assert_eq(stats().stale_skips, 0);
    /* created with B current: no push/pop; destroyed before A comes back */
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(B),cuStreamDestroy(s),cuEventDestroy(ev),cuCtxPopCurrent(B)");
}

Test(scoped, failed_enter_on_a_destroyed_context_skips_the_block)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    CUcontext A = NULL;
    NEED_DRIVER();
    cuctx_ctx stale = stale_over_current(&a, &A);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(stale) {
        ran++;
    }
    cr_assert_eq(ran, 0, "the block was skipped");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE, "last error %s",
                 cuctx_result_name(cuctx_last_error()));
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_scope_enter"), "message: %s",
                       cuctx_last_error_message());
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
    if (sim())
        cr_assert_eq(calls_on("cuCtxSetCurrent", H(A), mark) + calls_on("cuCtxSetCurrent", 0, mark), 0);
}

Test(scoped, failed_enter_on_a_zero_handle_skips_the_block)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    cuctx_ctx none = {0};
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(none) {
        ran++;
    }
    cr_assert_eq(ran, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(scoped, failed_enter_is_reported_to_the_error_handler_once)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0};
    CUcontext A = NULL;
    NEED_DRIVER();
    cuctx_ctx stale = stale_over_current(&a, &A);
    count_handler_install(&hc);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(stale) {
        ran++;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 0, "the block was skipped");
    cr_assert_eq(hc.calls, 1, "the handler was called %d times", hc.calls);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_INVALID_HANDLE, "got %s", cuctx_result_name(hc.last_rc));
    cr_assert_not_null(strstr(hc.last_msg, "CUCTX_SCOPED"), "message: %s", hc.last_msg);
    cr_assert_not_null(strstr(hc.last_msg, "cuctx_scope_enter"), "message: %s", hc.last_msg);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(scoped, failed_push_reports_the_drivers_error)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    sim()->fail_call("cuCtxPushCurrent", 1, CUDA_ERROR_UNKNOWN);
    int ran = 0;
    CUCTX_SCOPED(b) {
        ran++;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 0);
    cr_assert_eq(hc.calls, 1);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN, "got %s", cuctx_result_name(hc.last_rc));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    EXPECT_CURRENT(A);
}

/* The stack below the scope is the user's: the dead context stays where it
 * was, and is never handed to the driver. */
Test(scoped, previous_context_destroyed_inside_stays_where_it_was)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED(b) {
        EXPECT_CURRENT(B);
        CHECK_OK(cuctx_ctx_destroy(&a));
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxDestroy(A),cuCtxPopCurrent(B)");
    if (sim())
        cr_assert_eq(misuses(), 0);
}

Test(scoped, entered_context_destroyed_inside_restores_the_previous_one)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED(b) {
        CHECK_OK(cuctx_ctx_destroy(&b));
        EXPECT_CURRENT(A);             /* the driver popped it */
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxDestroy(B)");
}

/* ======================================================================== */
/*  CUCTX_SCOPED_ELSE                                                       */
/* ======================================================================== */

/* A destroyed context: what every failed enter below is given. */
static cuctx_ctx stale_ctx(const char *name)
{
    cuctx_ctx c = {0};
    new_ctx(&c, 0, name, POPPED);
    cuctx_ctx stale = c;
    CHECK_OK(cuctx_ctx_destroy(&c));
    return stale;
}

Test(scoped_else, failed_enter_runs_on_fail_not_the_block_and_tells_no_handler)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    cuctx_ctx stale = stale_ctx("B");
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    int ran = 0, failed = 0;
    CUCTX_SCOPED_ELSE(stale, failed++) {
        ran++;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(failed, 1, "on_fail ran %d times", failed);
    cr_assert_eq(ran, 0, "the block was skipped");
    cr_assert_eq(hc.calls, 0, "the error handler was told: %s", hc.last_msg);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE, "last error %s",
                 cuctx_result_name(cuctx_last_error()));
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(scoped_else, entered_runs_the_block_not_on_fail_and_restores)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    int ran = 0, failed = 0;
    CUCTX_SCOPED_ELSE(b, failed++) {
        EXPECT_CURRENT(B);
        ran++;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 1, "the block runs exactly once");
    cr_assert_eq(failed, 0);
    cr_assert_eq(hc.calls, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

static CUresult else_return(cuctx_ctx c, int *ran)
{
    CUCTX_SCOPED_ELSE(c, return cuctx_last_error()) {
        (*ran)++;
    }
    return CUDA_SUCCESS;
}

Test(scoped_else, on_fail_may_return)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    cuctx_ctx stale = stale_ctx("C");
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    int ran = 0;
    CUresult rc = else_return(stale, &ran);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "returned %s", cuctx_result_name(rc));
    cr_assert_eq(ran, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
    CHECK_OK(else_return(b, &ran));
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 1);
    cr_assert_eq(hc.calls, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

/* on_fail returns from inside an outer scope that did enter: the outer
 * scope's context is put back on the way out. */
static CUresult else_return_from_inside(cuctx_ctx outer, cuctx_ctx inner, int *ran)
{
    CUCTX_SCOPED_ELSE(outer, return CUDA_ERROR_UNKNOWN) {
        CUCTX_SCOPED_ELSE(inner, return cuctx_last_error()) {
            (*ran)++;
        }
        (*ran)++;
    }
    return CUDA_SUCCESS;
}

Test(scoped_else, on_fail_returning_from_inside_an_entered_scope_restores_it)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    cuctx_ctx stale = stale_ctx("C");
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int ran = 0;
    CUresult rc = else_return_from_inside(b, stale, &ran);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "returned %s", cuctx_result_name(rc));
    cr_assert_eq(ran, 0, "neither block went on after the failure");
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

Test(scoped_else, on_fail_may_goto_out_of_an_entered_scope)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    cuctx_ctx stale = stale_ctx("B");
    size_t mark = log_mark();
    int skipped = 0;
    CUCTX_SCOPED_ELSE(a, skipped += 100) {
        CUCTX_SCOPED_ELSE(stale, goto out) {
            skipped++;
        }
        skipped++;
    }
    skipped++;
out:
    cr_assert_eq(skipped, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

/* Rule 4: on_fail runs before the macro's loop, so its break and continue
 * are the enclosing loop's. */
Test(scoped_else, break_and_continue_in_on_fail_act_on_the_enclosing_loop)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    cuctx_ctx stale = stale_ctx("B");
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int i, iterations = 0, after = 0;
    for (i = 0; i < 3; i++) {
        iterations++;
        CUCTX_SCOPED_ELSE(stale, continue) {
            after += 100;
        }
        after++;
    }
    cr_assert_eq(iterations, 3);
    cr_assert_eq(after, 0, "continue went to the next iteration");
    for (i = 0; i < 3; i++) {
        CUCTX_SCOPED_ELSE(stale, break) {
            after += 100;
        }
        after++;
    }
    cr_assert_eq(i, 0, "break left the loop");
    cr_assert_eq(after, 0);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(scoped_else, break_and_continue_in_the_block_leave_only_the_scope)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int iterations = 0, not_reached = 0, after_scope = 0, failed = 0;
    for (int i = 0; i < 2; i++) {
        iterations++;
        CUCTX_SCOPED_ELSE(b, failed++) {
            EXPECT_CURRENT(B);
            if (i == 0)
                break;              /* leaves the scope, not the loop */
            if (i == 1)
                continue;           /* the same */
            not_reached++;
        }
        EXPECT_CURRENT(A);
        after_scope++;
    }
    cr_assert_eq(iterations, 2);
    cr_assert_eq(after_scope, 2);
    cr_assert_eq(not_reached + failed, 0);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

static CUcontext else_return_two_levels(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_SCOPED_ELSE(a, return NULL) {
        CUCTX_SCOPED_ELSE(b, return NULL) {
            return current();
        }
    }
    return NULL;
}

Test(scoped_else, return_from_the_block_restores_every_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    CUcontext got = else_return_two_levels(a, b);
    cr_assert_eq(got, B, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(scoped_else, auto_children_inside_are_destroyed_before_the_restore)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED_ELSE(b, cr_assert_fail("enter failed: %s", cuctx_last_error_message())) {
        CUCTX_AUTO cuctx_event ev = event_new(b, "ev");
    }
    EXPECT_CURRENT(A);
    cr_assert_eq(stats().events, 0);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuEventDestroy(ev),cuCtxPopCurrent(B)");
}

Test(scoped_else, evaluates_its_context_expression_once)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    cuctx_ctx list[2] = {a, {0}};
    int i = 0, ran = 0, failed = 0;
    CUCTX_SCOPED_ELSE(list[i++], failed++) {
        EXPECT_CURRENT(A);
        ran++;
    }
    cr_assert_eq(i, 1);
    cr_assert_eq(ran, 1);
    cr_assert_eq(failed, 0);
    EXPECT_CURRENT(NULL);
}

/* ======================================================================== */
/*  CUCTX_GUARD                                                             */
/* ======================================================================== */

Test(guard, lasts_to_the_end_of_the_enclosing_block)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    {
        CUCTX_GUARD(a);
        EXPECT_CURRENT(A);
        {
            EXPECT_CURRENT(A);
        }
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(guard, restores_the_previous_context)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(b));
    size_t mark = log_mark();
    {
        CUCTX_GUARD(a);
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(B);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(guard, two_guards_in_one_block_restore_in_reverse_order)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    {
        CUCTX_GUARD(a);
        EXPECT_CURRENT(A);
        CUCTX_GUARD(b);
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(guard, entering_the_current_context_changes_nothing_at_the_driver)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    {
        CUCTX_GUARD(a);
        EXPECT_CURRENT(A);
        {
            CUCTX_GUARD(a);
            EXPECT_CURRENT(A);
        }
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(guard, break_keeps_its_meaning_and_leaves_the_loop)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int i, iterations = 0;
    for (i = 0; i < 5; i++) {
        CUCTX_GUARD(a);
        EXPECT_CURRENT(A);
        iterations++;
        if (i == 1)
            break;                  /* leaves the loop */
    }
    cr_assert_eq(i, 1);
    cr_assert_eq(iterations, 2);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPopCurrent(A),cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
}

Test(guard, continue_keeps_its_meaning_and_goes_to_the_next_iteration)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    int iterations = 0, after_continue = 0;
    for (int i = 0; i < 3; i++) {
        CUCTX_GUARD(b);
        EXPECT_CURRENT(B);
        iterations++;
        if (i != 2)
            continue;               /* skips the rest of this iteration */
        after_continue++;
    }
    cr_assert_eq(iterations, 3);
    cr_assert_eq(after_continue, 1);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPushCurrent(B),cuCtxPopCurrent(B),"
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

static CUcontext guard_return_one_level(cuctx_ctx b)
{
    CUCTX_GUARD(b);
    return current();
}

Test(guard, return_from_one_level_computes_the_value_before_the_restore)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUcontext got = guard_return_one_level(b);
    cr_assert_eq(got, B, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxPopCurrent(B)");
}

static CUcontext guard_return_two_levels(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_GUARD(a);
    {
        CUCTX_GUARD(b);
        return current();
    }
}

Test(guard, return_from_two_nested_levels_restores_both)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    CUcontext got = guard_return_two_levels(a, b);
    cr_assert_eq(got, B, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

static CUcontext guard_return_three_levels(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_GUARD(a);
    for (int i = 0; i < 2; i++) {
        CUCTX_GUARD(b);
        if (i == 1) {
            CUCTX_GUARD(a);
            return current();
        }
    }
    return NULL;
}

Test(guard, return_from_three_nested_levels_restores_every_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(b));
    size_t mark = log_mark();
    CUcontext got = guard_return_three_levels(a, b);
    cr_assert_eq(got, A, "got %s", name_of('c', H(got)));
    EXPECT_CURRENT(B);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),"                             /* outer guard */
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B),"          /* i = 0 */
                 "cuCtxPushCurrent(B),cuCtxPushCurrent(A),"         /* i = 1, inner guard */
                 "cuCtxPopCurrent(A),cuCtxPopCurrent(B),"           /* return: inner, loop guard */
                 "cuCtxPopCurrent(A)");                             /* outer guard */
}

Test(guard, goto_out_of_nested_blocks_restores_every_level)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    int skipped = 0, jump = 1;
    {
        CUCTX_GUARD(a);
        {
            CUCTX_GUARD(b);
            {
                EXPECT_CURRENT(B);
                if (jump)
                    goto out;
                skipped++;
            }
        }
        skipped++;
    }
    skipped++;
out:
    cr_assert_eq(skipped, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}

Test(guard, break_in_a_switch_case_leaves_the_switch_and_restores)
{
    CUCTX_AUTO cuctx_ctx a = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    int inside = 0, after_block = 0, not_reached = 0;
    for (int k = 0; k < 2; k++) {
        switch (k) {
        case 1: {
            CUCTX_GUARD(a);
            CUCTX_AUTO cuctx_event ev = event_new(a, "ev");
            EXPECT_CURRENT(A);
            inside++;
            if (k == 1)
                break;              /* leaves the switch */
            not_reached++;
        }
            after_block++;
            break;
        default:
            EXPECT_CURRENT(NULL);
            break;
        }
        EXPECT_CURRENT(NULL);
    }
    cr_assert_eq(inside, 1);
    cr_assert_eq(after_block, 0, "break left the switch, not just the block");
    cr_assert_eq(not_reached, 0);
    cr_assert_eq(stats().events, 0);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuEventDestroy(ev),cuCtxPopCurrent(A)");
}

Test(guard, failed_enter_runs_the_block_unswitched_and_reports)
{
    struct handler_count hc;
    CUCTX_AUTO cuctx_ctx a = {0};
    CUcontext A = NULL;
    NEED_DRIVER();
    cuctx_ctx stale = stale_over_current(&a, &A);
    count_handler_install(&hc);
    size_t mark = log_mark();
    int ran = 0;
    {
        CUCTX_GUARD(stale);
        ran++;
        EXPECT_CURRENT(A);
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 1, "the rest of the block runs");
    cr_assert_eq(hc.calls, 1, "the failure went to the error handler");
    cr_assert_eq(hc.last_rc, CUDA_ERROR_INVALID_HANDLE, "got %s", cuctx_result_name(hc.last_rc));
    cr_assert_not_null(strstr(hc.last_msg, "CUCTX_GUARD"), "message: %s", hc.last_msg);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
}

Test(guard, previous_context_destroyed_inside_stays_where_it_was)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    {
        CUCTX_GUARD(b);
        CHECK_OK(cuctx_ctx_destroy(&a));
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(B),cuCtxDestroy(A),cuCtxPopCurrent(B)");
    if (sim())
        cr_assert_eq(misuses(), 0);
}

Test(guard, auto_declared_after_the_guard_is_destroyed_before_the_restore)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    {
        CUCTX_GUARD(b);
        CUCTX_AUTO cuctx_mem m = mem_new(b, "m");
        CUCTX_AUTO cuctx_event ev = event_new(b, "ev");
    }
    EXPECT_CURRENT(A);
    cr_assert_eq(live_children(), 0);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(B),cuEventDestroy(ev),cuMemFree(m),cuCtxPopCurrent(B)");
}

/* ======================================================================== */
/*  The three together                                                      */
/* ======================================================================== */

static CUcontext mixed_return(cuctx_ctx a, cuctx_ctx b, size_t *events_then)
{
    CUCTX_GUARD(a);
    for (int i = 0; i < 3; i++) {
        CUCTX_AUTO cuctx_event ev = event_new(a, NTH("ev", i));
        CUCTX_SCOPED(b) {
            if (i == 1) {
                *events_then = stats().events;
                return current();
            }
        }
    }
    return NULL;
}

Test(mixed, return_through_scoped_auto_and_guard_unwinds_in_order)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    size_t events_then = 0;
    CUcontext got = mixed_return(a, b, &events_then);
    cr_assert_eq(got, B, "got %s", name_of('c', H(got)));
    cr_assert_eq(events_then, 1);
    cr_assert_eq(stats().events, 0);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuEventDestroy(ev0),"
                 "cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuEventDestroy(ev1),cuCtxPopCurrent(A)");
}

Test(mixed, scoped_inside_a_guard_loop_break_leaves_the_scope_then_the_loop)
{
    CUCTX_AUTO cuctx_ctx a = {0}, b = {0};
    NEED_DRIVER();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    size_t mark = log_mark();
    int i, after_scope = 0;
    for (i = 0; i < 4; i++) {
        CUCTX_GUARD(a);
        CUCTX_SCOPED(b) {
            EXPECT_CURRENT(B);
            break;                  /* the scope */
        }
        EXPECT_CURRENT(A);
        after_scope++;
        if (i == 1)
            break;                  /* the loop */
    }
    cr_assert_eq(i, 1);
    cr_assert_eq(after_scope, 2);
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark,
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A),"
                 "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
}
