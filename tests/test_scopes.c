/* SPDX-License-Identifier: MIT */
/* test_scopes.c - what CUCTX_SCOPED and CUCTX_GUARD leave on the thread's
 * context stack: the stack below the scope as it was at entry, contexts
 * pushed inside taken back, dead and retaken previous contexts never made
 * current, the last error left alone by a successful enter. */
#define _GNU_SOURCE    /* RTLD_NEXT */
#include "testlib.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define H(p) ((uint64_t)(uintptr_t)(p))

/* Builds the stack by hand, bottom first, as code outside cuctx would. */
static void raw_push(CUcontext c)
{
    PFN_cuCtxPushCurrent_v4000 push = (PFN_cuCtxPushCurrent_v4000)drv_sym("cuCtxPushCurrent", 4000);
    cr_assert_eq(push(c), CUDA_SUCCESS);
}

static CUcontext raw_pop(void)
{
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext c = NULL;
    cr_assert_eq(pop(&c), CUDA_SUCCESS);
    return c;
}

/* A context made through the driver, as code outside cuctx would: current
 * (pushed) until popped. */
static CUcontext raw_create(void)
{
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    CUcontext c = NULL;
    cr_assert_eq(create(&c, 0, 0), CUDA_SUCCESS);
    return c;
}

static void raw_destroy(CUcontext c)
{
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    cr_assert_eq(destroy(c), CUDA_SUCCESS);
}

/* Most tests here: a driver, and with the simulator one address per object
 * (its recycling off), so that a trace names each context once. */
static void need_driver_unique_addresses(void)
{
    NEED_DRIVER();
    unique_addresses();
}

/* Calls that hand a context to the driver to make it current. */
static unsigned long bound(CUcontext c, size_t mark)
{
    return calls_on("cuCtxSetCurrent", H(c), mark) + calls_on("cuCtxPushCurrent", H(c), mark);
}

Test(scope_stack, depth_two_below_the_scope_is_untouched)
{
    cuctx_ctx a = {0}, x = {0}, y = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), X = new_ctx(&x, 0, "X", POPPED), Y = new_ctx(&y, 0, "Y", POPPED);
    raw_push(X);
    raw_push(Y);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(Y);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    cr_assert_eq(raw_pop(), Y);
    EXPECT_CURRENT(X);
    cr_assert_eq(raw_pop(), X);
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(cuctx_ctx_destroy(&y));
}

Test(scope_stack, depth_three_nested_scopes_leave_every_level)
{
    cuctx_ctx a = {0}, b = {0}, x = {0}, y = {0}, z = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), B = new_ctx(&b, 0, "B", POPPED);
    CUcontext X = new_ctx(&x, 0, "X", POPPED), Y = new_ctx(&y, 0, "Y", POPPED), Z = new_ctx(&z, 0, "Z", POPPED);
    raw_push(X);
    raw_push(Y);
    raw_push(Z);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(b) {
            EXPECT_CURRENT(B);
            CUCTX_GUARD(a);
            EXPECT_CURRENT(A);
        }
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(Z);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPushCurrent(B),cuCtxPushCurrent(A),cuCtxPopCurrent(A),"
                       "cuCtxPopCurrent(B),cuCtxPopCurrent(A)");
    cr_assert_eq(raw_pop(), Z);
    cr_assert_eq(raw_pop(), Y);
    cr_assert_eq(raw_pop(), X);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(cuctx_ctx_destroy(&y));
    CHECK_OK(cuctx_ctx_destroy(&z));
}

Test(scope_stack, a_context_created_inside_does_not_leak_out)
{
    cuctx_ctx a = {0}, c = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext C = NULL;
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_create(&c, 0, CUCTX_SCHED_AUTO));
        C = cuctx_ctx_raw(c);
        name_handle('c', H(C), "C");
        EXPECT_CURRENT(C);             /* created contexts are pushed */
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(C),cuCtxPopCurrent(A)");
    int is = 1;
    CHECK_OK(cuctx_ctx_is_current(c, &is));
    cr_assert_eq(is, 0);
    (void)A;
    CHECK_OK(cuctx_ctx_destroy(&c));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

Test(scope_stack, contexts_created_inside_over_a_previous_one_are_all_taken_back)
{
    cuctx_ctx a = {0}, x = {0}, c = {0}, d = {0}, e = {0};
    need_driver_unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext X = new_ctx(&x, 0, "X", POPPED);
    CHECK_OK(cuctx_ctx_set_current(x));
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_create(&c, 0, CUCTX_SCHED_AUTO));
        CHECK_OK(cuctx_ctx_create(&d, 0, CUCTX_SCHED_AUTO));
        CHECK_OK(cuctx_ctx_create(&e, 0, CUCTX_SCHED_AUTO));
        CHECK_OK(cuctx_ctx_destroy(&e));   /* popped by the driver: not popped again */
        CHECK_OK(cuctx_pop_current());     /* d: popped by hand */
    }
    EXPECT_CURRENT(X);
    if (sim()) {
        char buf[2048];
        cr_assert_eq(calls("cuCtxPopCurrent"), 2 + 1 + 2, "2 by new_ctx, d by hand, c and A by the exit: %s", trace(0, buf, sizeof buf));
    }
    CHECK_OK(cuctx_ctx_destroy(&c));
    CHECK_OK(cuctx_ctx_destroy(&d));
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&x));
    cr_assert_eq(misuses(), 0);
}

Test(scope_stack, set_current_inside_replaces_the_scopes_level_only)
{
    cuctx_ctx a = {0}, b = {0}, x = {0};
    need_driver_unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED), X = new_ctx(&x, 0, "X", POPPED);
    raw_push(X);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_set_current(b));
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(X);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxSetCurrent(B),cuCtxPopCurrent(B)");
    cr_assert_eq(raw_pop(), X);
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&x));
}

/* A scope on a borrowed context that is current pushes nothing and runs on
 * that context's own level; a set inside replaces the level. If the
 * borrowed context is destroyed by its owner inside the block and a new
 * context takes its address, exit finds another id there and does not put
 * that unrelated context back on the level: the set's context stays. */
Test(scope_stack, a_borrowed_scope_context_whose_address_is_retaken_inside_is_not_put_back)
{
    cuctx_ctx b = {0}, c = {0};
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    CUcontext C = new_ctx(&c, 0, "C", POPPED);
    CUcontext X = raw_create();         /* current: the scope pushes nothing */
    CHECK_OK(cuctx_ctx_borrow(&b, X));
    size_t mark = log_mark();
    CUCTX_SCOPED(b) {
        CHECK_OK(cuctx_ctx_set_current(c));
        EXPECT_CURRENT(C);
        raw_destroy(X);
        cr_assert_eq(raw_create(), X, "the simulator gave the new context X's address");
        cr_assert_eq(raw_pop(), X);
        EXPECT_CURRENT(C);
        mark = log_mark();
    }
    EXPECT_CURRENT(C);
    cr_assert_geq(calls_on("cuCtxGetId", H(X), mark), 1, "exit did not ask which context X's address is");
    cr_assert_eq(bound(X, mark), 0, "the new context at X's address was put back on the scope's level");
    CHECK_OK(cuctx_ctx_destroy(&b));
    raw_destroy(X);                     /* the new context */
    cr_assert_eq(raw_pop(), C);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* [X Y], the scope destroys Y: Y stays where it was, dead, and X below it;
 * nothing dead is ever handed to the driver. */
Test(scope_stack, previous_destroyed_inside_stays_dead_in_its_place_over_the_rest)
{
    cuctx_ctx a = {0}, x = {0}, y = {0};
    need_driver_unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext X = new_ctx(&x, 0, "X", POPPED), Y = new_ctx(&y, 0, "Y", POPPED);
    raw_push(X);
    raw_push(Y);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_destroy(&y));
    }
    EXPECT_CURRENT(Y);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxDestroy(Y),cuCtxPopCurrent(A)");
    cr_assert_eq(bound(Y, mark), 0, "the dead context was never handed to the driver");
    cr_assert_eq(cuctx_pop_current(), CUDA_ERROR_CONTEXT_IS_DESTROYED, "cuctx refuses to pop a dead context");
    cr_assert_eq(raw_pop(), Y);         /* the driver takes one that died on the stack */
    EXPECT_CURRENT(X);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&x));
    cr_assert_eq(misuses(), 0);
}

Test(scope_stack, both_levels_below_destroyed_inside_nothing_dead_is_bound)
{
    cuctx_ctx a = {0}, x = {0}, y = {0};
    need_driver_unique_addresses();
    new_ctx(&a, 0, "A", POPPED);
    CUcontext X = new_ctx(&x, 0, "X", POPPED), Y = new_ctx(&y, 0, "Y", POPPED);
    raw_push(X);
    raw_push(Y);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_destroy(&x));
        CHECK_OK(cuctx_ctx_destroy(&y));
    }
    EXPECT_CURRENT(Y);
    cr_assert_eq(bound(X, mark) + bound(Y, mark), 0);
    cr_assert_eq(calls_on("cuCtxSetCurrent", 0, mark), 0, "no blind pop of the level below");
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(misuses(), 0);
}

struct killer { cuctx_ctx *victim; CUresult rc; };

static void *destroy_on_another_thread(void *arg)
{
    struct killer *k = arg;
    k->rc = cuctx_ctx_destroy(k->victim);
    return NULL;
}

static void destroy_elsewhere(cuctx_ctx *victim)
{
    struct killer k = {victim, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_on_another_thread, &k), 0);
    pthread_join(t, NULL);
    cr_assert_eq(k.rc, CUDA_SUCCESS, "%s", cuctx_result_name(k.rc));
}

Test(scope_stack, previous_destroyed_on_another_thread_inside_is_not_bound)
{
    cuctx_ctx a = {0}, x = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), X = new_ctx(&x, 0, "X", POPPED);
    CHECK_OK(cuctx_ctx_set_current(x));
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        destroy_elsewhere(&x);
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(X);                  /* dead, where it was */
    cr_assert_eq(bound(X, mark), 0);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxDestroy(X),cuCtxPopCurrent(A)");
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* The previous context was dead before the scope (destroyed on another
 * thread while current here), and inside the scope a new context takes its
 * address: the slot would now make that unrelated context current. */
Test(scope_stack, previous_dead_at_entry_whose_address_is_retaken_is_not_left_current)
{
    cuctx_ctx a = {0}, p = {0}, c = {0};
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    CUcontext A = new_ctx(&a, 0, "A", POPPED), P = new_ctx(&p, 0, "P", POPPED);
    CHECK_OK(cuctx_ctx_set_current(p));
    destroy_elsewhere(&p);
    cr_assert_eq(current(), P, "the dead context stays current on this thread");
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        CHECK_OK(cuctx_ctx_create(&c, 0, CUCTX_SCHED_AUTO));
        cr_assert_eq(cuctx_ctx_raw(c), P, "the simulator gave the new context P's address");
    }
    EXPECT_CURRENT(NULL);
    {
        char buf[2048];
        cr_assert_eq(bound(P, mark), 0, "%s", trace(mark, buf, sizeof buf));
    }
    cr_assert_eq(calls_on("cuCtxSetCurrent", 0, mark), 1, "the retaken slot was taken back");
    int is = 1;
    CHECK_OK(cuctx_ctx_is_current(c, &is));
    cr_assert_eq(is, 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(misuses(), 0);
}

/* A scope over A while the current context P was destroyed on another
 * thread before the enter: it pushes A and pops it, and P, dead, stays
 * current where it was. */
static void scope_over_a_previous_dead_at_entry(void)
{
    cuctx_ctx a = {0}, p = {0};
    CUcontext P = new_ctx(&p, 0, "P", POPPED);
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(p));
    destroy_elsewhere(&p);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(a) {
        ran++;
    }
    cr_assert_eq(ran, 1);
    EXPECT_CURRENT(P);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Dead at entry and not retaken: it stays where it was. */
Test(scope_stack, previous_dead_at_entry_stays_in_its_place)
{
    need_driver_unique_addresses();
    scope_over_a_previous_dead_at_entry();
}

Test(scope_stack, a_successful_enter_leaves_the_last_error_alone)
{
    cuctx_ctx a = {0}, p = {0}, stale = {0};
    need_driver_unique_addresses();
    new_ctx(&p, 0, "P", POPPED);
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_create(&stale, 0, CUCTX_SCHED_AUTO));
    cuctx_ctx copy = stale;
    CHECK_OK(cuctx_ctx_destroy(&stale));
    cr_assert_eq(cuctx_ctx_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    char before[512];
    snprintf(before, sizeof before, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_ctx_set_current(p));
    destroy_elsewhere(&p);              /* a dead previous context: no failure of the enter */
    cuctx_scope s;
    CHECK_OK(cuctx_scope_enter(&s, a));
    cuctx_scope_exit(&s);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_str_eq(cuctx_last_error_message(), before);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

Test(scope_stack, the_same_context_nested_is_pushed_once)
{
    cuctx_ctx a = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(a) {
            CUCTX_GUARD(a);
            EXPECT_CURRENT(A);
        }
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(NULL);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    CHECK_OK(cuctx_ctx_destroy(&a));
}

Test(scope_stack, the_entered_context_destroyed_inside_is_not_popped_twice)
{
    cuctx_ctx a = {0}, x = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED), X = new_ctx(&x, 0, "X", POPPED);
    raw_push(X);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CUCTX_SCOPED(a) {
            CHECK_OK(cuctx_ctx_destroy(&a));
            EXPECT_CURRENT(X);
        }
        EXPECT_CURRENT(X);
    }
    EXPECT_CURRENT(X);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxDestroy(A)");
    (void)A;
    cr_assert_eq(raw_pop(), X);
    CHECK_OK(cuctx_ctx_destroy(&x));
}

/* A borrowed context its owner destroyed is not made current. */
Test(scope_stack, a_borrowed_context_destroyed_by_its_owner_is_not_entered)
{
    cuctx_ctx b = {0};
    need_driver_unique_addresses();
    NEED_SIM();
    CUcontext B = raw_create();         /* owned by code outside cuctx */
    raw_pop();
    CHECK_OK(cuctx_ctx_borrow(&b, B));
    raw_destroy(B);
    size_t mark = log_mark();
    int ran = 0;
    CUCTX_SCOPED(b) {
        ran++;
    }
    cr_assert_eq(ran, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_last_error_message());
    cr_assert_eq(bound(B, mark), 0);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
}

/* A previous context that could not be identified at enter (a transient
 * driver error, not death) is left where it was. */
Test(scope_stack, a_previous_context_that_could_not_be_identified_is_left_alone)
{
    cuctx_ctx a = {0};
    need_driver_unique_addresses();
    NEED_SIM();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext X = raw_create();         /* current, and new to cuctx */
    name_handle('c', H(X), "X");
    sim()->fail_call("cuCtxGetDevice", 1, CUDA_ERROR_UNKNOWN);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(X);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    cr_assert_eq(raw_pop(), X);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* cuctx still has an entry for a borrowed context its owner destroyed; a
 * new context took the address and is current. Entering and leaving a
 * scope must leave that new context current (found by the fuzzer). */
Test(scope_stack, a_stale_entry_at_the_previous_address_does_not_cost_the_new_context_its_place)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext A = raw_create();
    CHECK_OK(cuctx_event_create(&ev, (cuctx_ctx){0}, 0));  /* cuctx meets A as borrowed */
    raw_destroy(A);                                         /* its owner ends it */
    CUcontext B = raw_create();
    cr_assert_eq(B, A, "the simulator gave B A's address");
    CUCTX_SCOPED(p) {
        cr_assert_neq(current(), B);
    }
    EXPECT_CURRENT(B);
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(stats().stale_skips, 1);
    raw_destroy(B);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(misuses(), 0);
}

/* Neither its device nor its id could be read at enter: at exit the scope
 * says so to the error handler and leaves the previous context where it
 * was, current again, without another look at it. */
Test(scope_stack, a_previous_context_whose_id_could_not_be_read_is_reported_and_left_alone)
{
    cuctx_ctx a = {0};
    struct handler_count hc;
    need_driver_unique_addresses();
    NEED_SIM();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext X = raw_create();         /* current, and new to cuctx */
    name_handle('c', H(X), "X");
    count_handler_install(&hc);
    sim()->fail_call("cuCtxGetDevice", 1, CUDA_ERROR_UNKNOWN);
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
    sim()->fail_call("cuCtxGetId", 2, CUDA_ERROR_UNKNOWN);
    unsigned long ids = calls("cuCtxGetId");
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        cr_assert_eq(hc.calls, 0, "the enter itself succeeded quietly");
    }
    EXPECT_CURRENT(X);
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    cr_assert_eq(hc.calls, 1, "the exit reported the unchecked slot");
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN);
    cr_assert_not_null(strstr(hc.last_msg, "could not be identified at enter"), "%s", hc.last_msg);
    cr_assert_leq(calls("cuCtxGetId"), ids + 2, "no look at it at exit");
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(raw_pop(), X);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* A create that fails after cuCtxCreate (its id could not be read) destroys
 * the new context, which the driver pops: cuctx must count that pop, or the
 * scope's exit pops one level too many and takes the context below it. */
Test(scope_stack, a_create_failing_after_cuCtxCreate_inside_a_scope_leaves_the_stack_below)
{
    cuctx_ctx a = {0}, x = {0}, b = {5};
    need_driver_unique_addresses();
    NEED_SIM();
    CUcontext X = new_ctx(&x, 0, "X", POPPED);
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_set_current(x));
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
        cr_assert_eq(cuctx_ctx_create(&b, 0, 0), CUDA_ERROR_UNKNOWN);
        cr_assert_eq(b.id, 0);
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(X);
    cr_assert_eq(last_call("cuCtxPopCurrent", mark).rc, CUDA_SUCCESS);
    cr_assert_eq(calls_on("cuCtxPopCurrent", H(A), mark), 1, "A's push popped once");
    cr_assert_eq(calls_on("cuCtxPopCurrent", H(X), mark), 0, "X, below the scope, not popped");
    cr_assert_eq(stats().contexts, 2);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&x));
    cr_assert_eq(misuses(), 0);
}

/* What a scope asks the driver: its enter asks which context is current,
 * once; its exit only pops what it pushed, or, when it pushed nothing and
 * no cuctx_ctx_set_current ran inside, asks nothing at all. */
Test(scope_stack, a_scope_asks_which_context_is_current_once)
{
    cuctx_ctx a = {0};
    need_driver_unique_addresses();
    NEED_SIM();     /* counts driver calls */
    new_ctx(&a, 0, "A", POPPED);
    unsigned long before = calls("cuCtxGetCurrent");
    CUCTX_SCOPED(a) {
        cr_assert_eq(calls("cuCtxGetCurrent"), before + 1, "the enter asks once");
        CUCTX_SCOPED(a) {
        }
    }
    cr_assert_eq(calls("cuCtxGetCurrent"), before + 2, "one question per enter, none at either exit");
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* The header's promise about the reserved words: the enter zeroes them,
 * also when it fails at once (a {0} handle, a destroyed context). Mutant
 * killed: lib/scope.c:104 (the second reserved word left as it was;
 * seed 29). */
Test(scope_stack, a_failed_enter_still_zeroes_the_reserved_words)
{
    NEED_DRIVER();
    cuctx_scope sc;
    memset(&sc, 0xff, sizeof sc);
    cr_assert_eq(cuctx_scope_enter(&sc, (cuctx_ctx){0}), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(sc.cuctx__reserved[0], 0);
    cr_assert_eq(sc.cuctx__reserved[1], 0, "the failed enter left the second reserved word alone");
    cuctx_scope_exit(&sc);
    cuctx_ctx a = {0};
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    cuctx_ctx copy = a;
    CHECK_OK(cuctx_ctx_destroy(&a));
    memset(&sc, 0xff, sizeof sc);
    cr_assert_neq(cuctx_scope_enter(&sc, copy), CUDA_SUCCESS);
    cr_assert_eq(sc.cuctx__reserved[0], 0);
    cr_assert_eq(sc.cuctx__reserved[1], 0, "the failed enter left the second reserved word alone");
    cuctx_scope_exit(&sc);
    cr_assert_null(current());
}

/* A previous context this thread met lately and cuctx owns needs no
 * second look: the enter holds the entered context once, and asks the
 * driver nothing more than at the first enter over the same previous
 * context (there it was looked up once, by address). Mutants killed:
 * lib/scope.c:82 (prev_seen's `return 1` made `return 0`: the entered
 * context let go and held again, its id asked again) and lib/scope.c:79
 * (the last check there negated, with the same effect; seed 31). */
Test(scope_stack, an_owned_previous_context_met_lately_costs_no_second_hold)
{
    cuctx_ctx x = {0}, p = {0};
    char buf[512];
    need_driver_unique_addresses();
    NEED_SIM();     /* counts driver calls */
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    new_ctx(&x, 0, "X", LEFT_CURRENT);
    CUCTX_SCOPED(p) {
    }
    size_t mark = log_mark();
    CUCTX_SCOPED(p) {
        /* the primary's id checked once at its hold, then pushed */
        cr_assert_str_eq(log_seq(mark, NULL, buf, sizeof buf), "cuCtxGetCurrent,cuCtxGetId,cuCtxPushCurrent");
    }
    EXPECT_CURRENT(cuctx_ctx_raw(x));
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(cuctx_ctx_destroy(&p));
}

/* The handle table's mappings (lib/registry.c's segments, its only mmap):
 * while mmap_refusals is above 0, each call of mmap is refused (and
 * counted), as the kernel refuses one when memory is short. */
static _Atomic long mmap_refusals, mmap_refused;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *(*_Atomic real)(void *, size_t, int, int, int, off_t);
    void *(*f)(void *, size_t, int, int, int, off_t) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "mmap");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    long left = atomic_load(&mmap_refusals);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&mmap_refusals, &left, left - 1)) {
            atomic_fetch_add(&mmap_refused, 1);
            errno = ENOMEM;
            return MAP_FAILED;
        }
    }
    return f(addr, len, prot, flags, fd, off);
}

/* The first segment of the handle table (slots 0 to 65535) could not be
 * mapped: each create that asked for one of its slots failed, its index
 * lost (registry.c, fresh_slot), and the table went on in the second. A
 * scope whose previous context was dead at entry (prev_entry 0) then exits
 * as anywhere else, looking at no slot of the missing segment. Mutant
 * killed: lib/scope.c:258 `const` (`scope->prev_entry != 1`: an entry id
 * of 0 passes the test, and exit reads the word of slot 0 for it, in a
 * segment never mapped; seed 41). */
Test(scope_stack, a_previous_context_dead_at_entry_reads_no_slot_of_a_lost_segment)
{
    cuctx_graph g = {0};
    need_driver_unique_addresses();
    CHECK_OK(cuctx_init());
    long lost = 0;
    atomic_store(&mmap_refusals, 65536);
    for (long i = 0; i < 65536; i++)    /* a graph: a slot and nothing else before its driver call */
        lost += cuctx_graph_create(&g) == CUDA_ERROR_OUT_OF_MEMORY;
    atomic_store(&mmap_refusals, 0);
    cr_assert_eq(lost, 65536, "creates refused: %ld", lost);
    cr_assert_eq(atomic_load(&mmap_refused), 65536, "the first segment was mapped already: %ld refusals",
                 (long)atomic_load(&mmap_refused));
    cr_assert_eq(g.id, 0);
    scope_over_a_previous_dead_at_entry();
    cr_assert_eq(stats().graphs, 0);
}

/* A scope whose context was current pushes nothing; a set inside replaced
 * its level, so the exit puts the scope's context back there. That put
 * back succeeding tells the handler nothing and leaves the last error
 * alone; the driver refusing it is reported, naming the context, and the
 * set's context stays current. Mutant killed: lib/scope.c:236 `ror`
 * (`rc == CUDA_SUCCESS`: the refusal unreported and the success reported;
 * seed 43). */
Test(scope_stack, a_refused_put_back_of_the_scopes_context_is_reported)
{
    cuctx_ctx a = {0}, b = {0}, stale = {0};
    struct handler_count hc;
    need_driver_unique_addresses();
    NEED_SIM();                         /* makes the driver refuse */
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_create(&stale, 0, CUCTX_SCHED_AUTO));
    cuctx_ctx copy = stale;
    CHECK_OK(cuctx_ctx_destroy(&stale));
    cr_assert_eq(cuctx_ctx_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    char before[512];
    snprintf(before, sizeof before, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_ctx_set_current(a));
    count_handler_install(&hc);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_set_current(b));
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxSetCurrent(B),cuCtxSetCurrent(A)");
    cr_assert_eq(hc.calls, 0, "a put back that worked was reported: %s", hc.last_msg);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_str_eq(cuctx_last_error_message(), before);
    mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_set_current(b));
        sim()->fail_call("cuCtxSetCurrent", 1, CUDA_ERROR_UNKNOWN);
    }
    EXPECT_CURRENT(B);
    cr_assert_eq(last_call("cuCtxSetCurrent", mark).rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(calls_on("cuCtxSetCurrent", H(A), mark), 1, "the put back asked once");
    cr_assert_eq(hc.calls, 1, "the refused put back was not reported");
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN);
    char want[128];
    snprintf(want, sizeof want, "cuctx_scope_exit: cannot put the scope's context %p back on its level", (void *)A);
    cr_assert_not_null(strstr(hc.last_msg, want), "%s", hc.last_msg);
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/scope.c (s1) ---- */

/* A scope's enter as the process's first call to cuctx (Criterion runs
 * each test in a process of its own), given a handle no process made:
 * cuctx starts first (the driver loaded, the current context asked), then
 * the handle is refused, with the scope FAILED. Mutant killed:
 * lib/scope.c:105 `call` (CUCTX_INIT_OR_RETURN removed: the enter calls
 * the driver through a table not yet filled). */
Test(scope_stack, an_enter_as_the_first_call_starts_cuctx)
{
    const uint64_t far_index = ((uint64_t)1 << 26) - 1;
    cuctx_ctx forged = {((uint64_t)1 << 58) | far_index << 32 | 1};     /* kind 1: context handle */
    cuctx_scope sc;
    memset(&sc, 0xff, sizeof sc);
    CUresult rc = cuctx_scope_enter(&sc, forged);
    NEED_DRIVER();      /* (after: it would start cuctx itself) */
    NEED_SIM();
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(sc.state, CUCTX__SCOPE_FAILED);
    cr_assert_eq(calls("cuInit"), 1);
    cr_assert_eq(calls("cuCtxGetCurrent"), 1, "the enter asked which context is current, then refused the handle");
    cr_assert_eq(calls("cuCtxPushCurrent"), 0);
    cuctx_scope_exit(&sc);
    cr_assert_null(current());
}

/* A borrowed previous context this thread met lately (its entry in the
 * thread's cache of entries looked up by address) is no owned one: its
 * owner may end it, so the enter identifies it by its driver id as any
 * other. Destroyed inside the block by its owner (below the scope's push)
 * and its address taken by a new context, it is then not left current
 * at exit: the slot is taken off (cuctx.h, cuctx_scope_exit). Mutant
 * killed: lib/scope.c:79 `lcr` (`&& !cuctx__peek_valid(...)`: a checked
 * entry in the cache taken as the previous context with no driver id, so
 * exit trusts it alive and leaves the new context current). */
Test(scope_stack, a_borrowed_previous_context_met_lately_is_still_told_apart_by_its_id)
{
    cuctx_ctx a = {0};
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext X = raw_create();         /* current, no handle: borrowed when looked up */
    CUCTX_SCOPED(a) {                   /* X looked up by address: met lately */
        EXPECT_CURRENT(A);
    }
    EXPECT_CURRENT(X);
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
        raw_destroy(X);                 /* by its owner, below the scope's level */
        cr_assert_eq(raw_create(), X, "the simulator gave the new context X's address");
        cr_assert_eq(raw_pop(), X);
        EXPECT_CURRENT(A);
        mark = log_mark();
    }
    cr_assert_geq(calls_on("cuCtxGetId", H(X), mark), 1, "exit did not ask which context X's address is");
    EXPECT_CURRENT(NULL);               /* the new context at X's address not left current */
    cr_assert_eq(bound(X, mark), 0);
    raw_destroy(X);                     /* the new context */
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(misuses(), 0);
}

/* A scope whose context was current pushes nothing; a set inside replaced
 * its level, and then the scope's own context, one cuctx owns, was
 * destroyed inside: exit does not put the dead context back on the level
 * (cuctx never hands a destroyed context to the driver), and the set's
 * context stays current. Mutants killed: lib/scope.c:227 `lcr` (`&&`: the
 * test for a dead owned context never returns) and lib/scope.c:227 `const`
 * (`prev_ctx_id == 1`: an owned context, id 0, no longer matches), both
 * handing the dead context to cuCtxSetCurrent. */
Test(scope_stack, the_scopes_own_context_destroyed_inside_after_a_set_is_not_put_back)
{
    cuctx_ctx a = {0}, b = {0};
    need_driver_unique_addresses();
    NEED_SIM();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext B = new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a)); /* current: the scope pushes nothing */
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_set_current(b));
        CHECK_OK(cuctx_ctx_destroy(&a));
        EXPECT_CURRENT(B);
    }
    EXPECT_CURRENT(B);
    EXPECT_TRACE(mark, "cuCtxSetCurrent(B),cuCtxDestroy(A)");
    cr_assert_eq(bound(A, mark), 0, "the destroyed context was handed to the driver");
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(misuses(), 0);
}

/* Nested scopes over a borrowed context whose owner destroys it inside the
 * inner one, a new context taking its address: the inner exit takes that
 * slot off (cuCtxSetCurrent(NULL)), and since the slot was the outer
 * scope's own push, off cuctx's count of levels too - so the outer exit
 * pops nothing more, and the context below both scopes stays current.
 * Mutant killed: lib/scope.c:206 `const` (`scope->depth > 1`: with one
 * level pushed below the inner scope the count is left one too high, and
 * the outer exit pops the context below). */
Test(scope_stack, a_retaken_level_pushed_by_an_outer_scope_is_taken_off_the_count_too)
{
    cuctx_ctx a = {0}, bx = {0};
    char buf[512];
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext R = raw_create();         /* below both scopes */
    CUcontext X = raw_create();
    cr_assert_eq(raw_pop(), X);
    CHECK_OK(cuctx_ctx_borrow(&bx, X));
    EXPECT_CURRENT(R);
    size_t mark = 0;
    CUCTX_SCOPED(bx) {                  /* pushes X */
        CUCTX_SCOPED(a) {               /* pushes A over X */
            EXPECT_CURRENT(A);
            raw_destroy(X);             /* by its owner, below */
            cr_assert_eq(raw_create(), X, "the simulator gave the new context X's address");
            cr_assert_eq(raw_pop(), X);
        }
        EXPECT_CURRENT(R);              /* X's slot, now another context's, taken off */
        mark = log_mark();
    }
    EXPECT_CURRENT(R);
    const char *const pops[] = {"cuCtxPopCurrent", "cuCtxSetCurrent", NULL};
    cr_assert_str_eq(log_seq(mark, pops, buf, sizeof buf), "", "the outer exit popped a level not its own");
    cr_assert_eq(raw_pop(), R);
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_ctx_destroy(&bx));
    raw_destroy(X);                     /* the new context */
    raw_destroy(R);
    CHECK_OK(cuctx_ctx_destroy(&a));
    (void)A;
    cr_assert_eq(misuses(), 0);
}

/* ---- survey of lib/scope.c, the rest (u1) ---- */

/* A scope entered over its own context left current by the create asks the
 * driver once by id whether the address current is that context, and
 * remembers the answer for the thread: a nested scope of the same context
 * asks no more. Mutant killed: lib/scope.c:128 (the answer not kept). */
Test(scope_stack, the_scopes_context_found_current_by_id_is_not_asked_again_nested)
{
    cuctx_ctx a = {0};
    need_driver_unique_addresses();
    NEED_SIM();     /* counts driver calls */
    CUcontext A = new_ctx(&a, 0, "A", LEFT_CURRENT);
    size_t mark = log_mark();
    unsigned long before = calls("cuCtxGetId");
    CUCTX_SCOPED(a) {
        cr_assert_eq(calls("cuCtxGetId"), before + 1, "the enter asks once by id");
        CUCTX_SCOPED(a) {
            EXPECT_CURRENT(A);
        }
        cr_assert_eq(calls("cuCtxGetId"), before + 1, "the nested enter asks no more");
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "");
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* The current context was dead at enter (destroyed on another thread while
 * current here) and the scope's own context took its address before the
 * enter: that level is not the scope's context, which is pushed over it and
 * popped at exit; the level below, bound now to the scope's context by
 * address, is taken off rather than left current. The process's first
 * context X lives throughout, its entry the registry's very first slot
 * (an id of 1 would name it), so that the dead level cannot pass for a
 * live owned entry. Mutant killed: lib/scope.c:133 (the dead level
 * recorded as entry 1). */
Test(scope_stack, the_scopes_context_at_the_address_of_a_dead_current_one_is_not_left_current_below)
{
    cuctx_ctx x = {0}, a = {0}, p = {0};
    NEED_DRIVER();
    NEED_SIM();                         /* needs the simulator's address reuse */
    sim()->set_stale_levels(1);         /* this thread's level of P stays P's, dead */
    new_ctx(&x, 0, "X", POPPED);
    CUcontext P = new_ctx(&p, 0, "P", POPPED);
    CHECK_OK(cuctx_ctx_set_current(p));
    destroy_elsewhere(&p);
    cr_assert_eq(current(), P, "the dead context stays current on this thread");
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    cr_assert_eq(A, P, "the simulator gave A P's address");
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        EXPECT_CURRENT(A);
    }
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A),cuCtxSetCurrent(0)");
    EXPECT_CURRENT(NULL);
    cr_assert_eq(calls_on("cuCtxPushCurrent", H(A), mark), 1, "A pushed over the dead level");
    cr_assert_eq(calls_on("cuCtxSetCurrent", 0, mark), 1, "the retaken level was taken off");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&x));
    cr_assert_eq(misuses(), 0);
}

/* A scope entered on thread t over a context cuctx knows by a borrow, Q,
 * stopped by the simulator after the cuCtxGetId that checks Q's entry (not
 * under the registry's lock) - the scope's own context let go meanwhile
 * (lib/scope.c, enter) - while the scope's context is destroyed here: the
 * enter's second hold of it fails, and the enter says so, having pushed
 * nothing. Mutant killed: lib/scope.c:138 (that failure answered as
 * success). */
struct held_enter { cuctx_ctx a; CUcontext q; CUresult rc; int state; volatile int done; };
static void *enter_over_a_borrowed_context(void *p)
{
    struct held_enter *h = p;
    cuctx_scope s;
    raw_push(h->q);
    h->rc = cuctx_scope_enter(&s, h->a);
    h->state = s.state;
    if (h->rc == CUDA_SUCCESS)
        cuctx_scope_exit(&s);
    raw_pop();
    h->done = 1;
    return NULL;
}

Test(scope_stack, an_enter_whose_context_is_destroyed_while_it_identifies_the_previous_one_fails)
{
    cuctx_ctx a = {0}, q = {0};
    need_driver_unique_addresses();
    NEED_SIM();                         /* holds a driver call */
    alarm(10);
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUcontext Q = raw_create();
    cr_assert_eq(raw_pop(), Q);
    CHECK_OK(cuctx_ctx_borrow(&q, Q));
    struct held_enter h = {a, Q, CUDA_SUCCESS, -1, 0};
    size_t mark = log_mark();
    sim()->hold_after("cuCtxGetId");
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, enter_over_a_borrowed_context, &h), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    cr_assert_eq(last_call("cuCtxGetId", mark).handle, H(Q), "the enter is not held identifying the previous context");
    CHECK_OK(cuctx_ctx_destroy(&a));
    sim()->let_go();
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(h.done, 1);
    cr_assert_eq(h.rc, CUDA_ERROR_INVALID_HANDLE, "the enter failed: %s", cuctx_result_name(h.rc));
    cr_assert_eq(h.state, CUCTX__SCOPE_FAILED);
    cr_assert_eq(calls_on("cuCtxPushCurrent", H(A), mark), 0, "the destroyed context was not pushed");
    CHECK_OK(cuctx_ctx_destroy(&q));
    raw_destroy(Q);
    cr_assert_eq(misuses(), 0);
}

/* A scope that pushed nothing (its context A current at enter) whose block
 * sets another context current and then A again: its level holds A at
 * exit, so exit binds nothing. Mutant killed: lib/scope.c:223 (A, current
 * on the level already, handed to the driver again). */
Test(scope_stack, a_scopes_own_level_set_back_to_its_context_inside_is_not_set_again)
{
    cuctx_ctx a = {0}, b = {0};
    need_driver_unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_ctx_set_current(a));
    size_t mark = log_mark();
    CUCTX_SCOPED(a) {
        CHECK_OK(cuctx_ctx_set_current(b));
        CHECK_OK(cuctx_ctx_set_current(a));
    }
    EXPECT_CURRENT(A);
    EXPECT_TRACE(mark, "cuCtxSetCurrent(B),cuCtxSetCurrent(A)");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(misuses(), 0);
}
