/* SPDX-License-Identifier: MIT */
/* test_foreign.c - contexts others can end (rule 9): primary contexts shared with the runtime or raw code,
 * resets and borrowed contexts destroyed behind cuctx's back, the address map forgetting dead contexts, the
 * driver's errors at registration, the cost of the id check, and drivers without cuCtxGetId. */
#include "testlib.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H(p) ((uint64_t)(uintptr_t)(p))
#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

/* The driver called directly, as the runtime or another library would: cuctx sees none of these calls. */
static struct raw_driver {
    PFN_cuCtxCreate_v3020 ctx_create;   /* cuda.h maps cuCtxCreate to a newer ABI: resolve the 3020 one */
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_release;
    PFN_cuDevicePrimaryCtxReset_v11000 primary_reset;
} drv;

static const struct raw_driver *raw(void)
{
    if (!drv.ctx_create) {
        drv.ctx_create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
        drv.ctx_destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
        drv.event_create = (PFN_cuEventCreate_v2000)drv_sym("cuEventCreate", 2000);
        drv.event_destroy = (PFN_cuEventDestroy_v4000)drv_sym("cuEventDestroy", 4000);
        drv.primary_retain = (PFN_cuDevicePrimaryCtxRetain_v7000)drv_sym("cuDevicePrimaryCtxRetain", 7000);
        drv.primary_release = (PFN_cuDevicePrimaryCtxRelease_v11000)drv_sym("cuDevicePrimaryCtxRelease", 11000);
        drv.primary_reset = (PFN_cuDevicePrimaryCtxReset_v11000)drv_sym("cuDevicePrimaryCtxReset", 11000);
    }
    return &drv;
}

/* A context made by the raw driver on dev; like cuCtxCreate, it is pushed and current. */
static CUcontext new_raw_ctx(CUdevice dev)
{
    CUcontext c = NULL;
    CHECK_OK(raw()->ctx_create(&c, 0, dev));
    return c;
}

/* Child destroys that reached the driver from log position `from` on, as "fn,fn" ("" if none). */
static const char *child_destroys_since(size_t from)
{
    static const char *const destroys[] = {"cuEventDestroy", "cuStreamDestroy", "cuMemFree", NULL};
    static char buf[1024];
    return log_seq(from, destroys, buf, sizeof buf);
}

/* Without cuCtxGetId, as a pre-12.0 driver: must come before cuctx's first call, which resolves the entry points. */
static void without_ctx_ids(void)
{
    NEED_SIM();
    sim()->hide_ctx_id(1);
    NEED_DRIVER();
}

/* ------------------------------------------------------------------------
 *  1. A shared primary context outlives cuctx's last release
 * ------------------------------------------------------------------------ */

/* With someone else holding the primary context: cuctx's retain, a child, cuctx's release, the child's destroy. */
static void primary_child_freed_after_cuctx_release(void)
{
    cuctx_ctx p = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_mem_alloc(&m, p, 1u << 20));
    CUdeviceptr ptr = cuctx_mem_ptr(m);
    cr_assert_neq(ptr, 0);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 1, "the other holder keeps the primary context");
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(calls_on("cuMemFree", ptr, mark), 1, "the child of a primary context still alive was not freed");
    cr_assert_eq(sim()->live(CUSIM_MEM), 0, "the allocation leaked");
    cr_assert_eq(stats().stale_skips, 0);
    cr_assert_eq(stats().failed_destroys, 0);
}

Test(foreign, primary_child_is_freed_after_cuctx_release_while_the_runtime_holds_it)
{
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    primary_child_freed_after_cuctx_release();
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

Test(foreign, primary_child_is_freed_after_cuctx_release_while_raw_code_holds_it)
{
    CUcontext held = NULL;
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(raw()->primary_retain(&held, 0));
    primary_child_freed_after_cuctx_release();
    CHECK_OK(raw()->primary_release(0));
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

Test(foreign, borrowed_then_retained_primary_keeps_its_children_after_cuctx_release)
{
    CUcontext held = NULL;
    cuctx_ctx b = {0}, p = {0};
    cuctx_mem m_borrowed = {0}, m_primary = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(raw()->primary_retain(&held, 0));
    CHECK_OK(cuctx_ctx_borrow(&b, held));
    CHECK_OK(cuctx_mem_alloc(&m_borrowed, b, 1u << 20));
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    cr_assert_eq(cuctx_ctx_raw(p), held);
    cr_assert_eq(stats().contexts, 1, "the borrowed entry became the primary one");
    CHECK_OK(cuctx_mem_alloc(&m_primary, p, 1u << 20));
    CUdeviceptr pb = cuctx_mem_ptr(m_borrowed), pp = cuctx_mem_ptr(m_primary);
    CHECK_OK(cuctx_ctx_destroy(&p));
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m_borrowed));
    CHECK_OK(cuctx_mem_destroy(&m_primary));
    cr_assert_eq(calls_on("cuMemFree", pb, mark), 1, "the child made through the borrow was not freed");
    cr_assert_eq(calls_on("cuMemFree", pp, mark), 1, "the child made through the primary handle was not freed");
    cr_assert_eq(sim()->live(CUSIM_MEM), 0);
    cr_assert_eq(stats().stale_skips, 0);
    cr_assert_eq(stats().failed_destroys, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->primary_release(0));
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

Test(foreign, primary_children_are_skipped_once_cuctx_release_ends_the_context)
{
    cuctx_ctx p = {0};
    cuctx_mem m = {0};
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_mem_alloc(&m, p, 1u << 20));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 0, "nobody else held it: the release ended it");
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_str_eq(child_destroys_since(mark), "", "children of an ended primary context reached the driver");
    cr_assert_eq(stats().stale_skips, 2);
    cr_assert_eq(stats().failed_destroys, 0);
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  2. Primary resets
 * ------------------------------------------------------------------------ */

Test(foreign, primary_reset_behind_cuctxs_back_skips_children_and_still_releases_once)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    CHECK_OK(cuctx_stream_create(&s, p, 0, 0));
    CHECK_OK(cuctx_mem_alloc(&m, p, 1u << 20));
    size_t mark = log_mark();
    CHECK_OK(raw()->primary_reset(0));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_str_eq(child_destroys_since(mark), "", "children of a reset primary context reached the driver");
    cr_assert_eq(stats().stale_skips, 3);
    ASSERT_NO_MISUSE();
    unsigned long releases = calls("cuDevicePrimaryCtxRelease");
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(calls("cuDevicePrimaryCtxRelease"), releases + 1, "a reset does not release cuctx's retain");
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(stats().failed_destroys, 0);
    ASSERT_NO_MISUSE();
}

Test(foreign, primary_reset_and_retained_again_keeps_old_children_away_from_the_new_context)
{
    cuctx_ctx p = {0}, p2 = {0};
    cuctx_event old = {0}, fresh = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext addr = cuctx_ctx_raw(p);
    CHECK_OK(cuctx_event_create(&old, p, 0));
    uint64_t r_old = H(cuctx_event_raw(old));
    CHECK_OK(raw()->primary_reset(0));
    cr_assert_eq(sim()->primary_outside_retain(0), 0, "the runtime retains it again: a new context");
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 1);

    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&old));
    cr_assert_eq(calls_on("cuEventDestroy", r_old, mark), 0, "the old child was sent to the new context");
    cr_assert_eq(stats().stale_skips, 1);

    CHECK_OK(cuctx_ctx_primary(&p2, 0));
    cr_assert_eq(cuctx_ctx_raw(p2), addr, "the primary context keeps its address");
    CHECK_OK(cuctx_event_create(&fresh, p2, 0));
    uint64_t r_new = H(cuctx_event_raw(fresh));
    CHECK_OK(cuctx_event_query(fresh));
    mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&fresh));
    cr_assert_eq(calls_on("cuEventDestroy", r_new, mark), 1, "the new context's child was not destroyed");
    cr_assert_eq(stats().stale_skips, 1);

    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&p2));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(sim()->live(CUSIM_EVENT), 0);
    ASSERT_NO_MISUSE();
}

Test(foreign, cuctx_primary_reset_skips_the_primarys_children)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    cuctx_mem m = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    CHECK_OK(cuctx_mem_alloc(&m, p, 1u << 20));
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_primary_reset(0));
    cr_assert_eq(calls("cuDevicePrimaryCtxReset"), 1);
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 0);
    cr_assert_eq(cuctx_event_query(ev), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_str_eq(child_destroys_since(mark), "", "children of a reset primary context reached the driver");
    cr_assert_eq(stats().stale_skips, 2);
    cr_assert_eq(cuctx_ctx_primary_reset(9999), CUDA_ERROR_INVALID_DEVICE);
    unsigned long releases = calls("cuDevicePrimaryCtxRelease");
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(calls("cuDevicePrimaryCtxRelease"), releases + 1);
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  3. A borrowed context destroyed by its owner
 * ------------------------------------------------------------------------ */

static void borrowed_child_after_owner_destroy(int recycle)
{
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUevent newer = NULL;
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_recycling(recycle);
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    uint64_t r_ev = H(cuctx_event_raw(ev));
    CHECK_OK(raw()->ctx_destroy(x));
    CUcontext y = new_raw_ctx(0);
    CHECK_OK(raw()->event_create(&newer, 0));
    if (recycle) {  /* the dangerous case: the stale destroy would free the new owner's event */
        cr_assert_eq(y, x, "recycling: the new context should have the dead one's address");
        cr_assert_eq(H(newer), r_ev, "recycling: the new event should have the dead one's value");
    } else {
        cr_assert_neq(y, x);
    }
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls_on("cuEventDestroy", r_ev, mark), 0, "the dead borrowed context's child reached the driver");
    cr_assert_eq(sim()->is_live(CUSIM_EVENT, H(newer)), 1, "the new context's event was freed");
    cr_assert_eq(stats().stale_skips, 1);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->event_destroy(newer));
    CHECK_OK(raw()->ctx_destroy(y));
    ASSERT_NO_MISUSE();
}

Test(foreign, borrowed_child_is_skipped_when_a_new_context_took_its_address_and_event_value)
{
    borrowed_child_after_owner_destroy(1);
}

Test(foreign, borrowed_child_is_skipped_after_its_owner_destroyed_the_context)
{
    borrowed_child_after_owner_destroy(0);
}

/* ------------------------------------------------------------------------
 *  4. The address map forgets dead contexts
 * ------------------------------------------------------------------------ */

Test(foreign, owned_contexts_at_100000_distinct_addresses_all_register)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_recycling(0);
    for (int i = 0; i < 100000; i++) {
        cuctx_ctx c = {0};
        CUresult rc = cuctx_ctx_create(&c, 0, 0);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: %s", i, cuctx_last_error_message());
        rc = cuctx_ctx_destroy(&c);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: %s", i, cuctx_last_error_message());
    }
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(calls("cuCtxCreate"), 100000);
    ASSERT_NO_MISUSE();
}

Test(foreign, entries_of_dead_borrowed_contexts_are_swept)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_recycling(0);
    for (int i = 0; i < 20000; i++) {
        cuctx_ctx b = {0};
        cuctx_event ev = {0};
        CUcontext x = new_raw_ctx(0);
        CUresult rc = cuctx_ctx_borrow(&b, x);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: borrow: %s", i, cuctx_last_error_message());
        rc = cuctx_event_create(&ev, b, 0);
        cr_assert_eq(rc, CUDA_SUCCESS, "round %d: event: %s", i, cuctx_last_error_message());
        CHECK_OK(cuctx_event_destroy(&ev));
        CHECK_OK(cuctx_ctx_destroy(&b));
        CHECK_OK(raw()->ctx_destroy(x));
    }
    cr_assert_leq(stats().contexts, 200, "%zu entries kept for dead borrowed contexts", stats().contexts);
    cr_assert_eq(stats().stale_skips, 0);
    cr_assert_eq(calls("cuEventDestroy"), 20000);
    ASSERT_NO_MISUSE();
}

/* The stats' sweep (entry.c, sweep_one over ctxmap.c's foreach) asks the
 * driver for the id of every borrowed context in the address map, whatever
 * slot of the map its address hashes to, the first one included. Each round
 * borrows 32 contexts at fresh addresses (the map holds them at 64 slots,
 * half full), so that over the rounds every slot holds one of them. */
#define SWEEP_ROUNDS 32
#define SWEEP_BORROWS 32

Test(foreign, the_stats_sweep_asks_the_driver_about_every_borrowed_context)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_recycling(0);
    for (int round = 0; round < SWEEP_ROUNDS; round++) {
        CUcontext x[SWEEP_BORROWS];
        cuctx_ctx b[SWEEP_BORROWS] = {{0}};
        for (int i = 0; i < SWEEP_BORROWS; i++) {
            x[i] = new_raw_ctx(0);
            CUresult rc = cuctx_ctx_borrow(&b[i], x[i]);
            cr_assert_eq(rc, CUDA_SUCCESS, "round %d, borrow %d: %s", round, i, cuctx_last_error_message());
        }
        size_t mark = log_mark();
        cr_assert_eq(stats().contexts, SWEEP_BORROWS, "round %d", round);
        for (int i = 0; i < SWEEP_BORROWS; i++)
            cr_assert_eq(calls_on("cuCtxGetId", H(x[i]), mark), 1,
                         "round %d: the sweep did not ask about borrowed context %d of %d", round, i, SWEEP_BORROWS);
        for (int i = SWEEP_BORROWS - 1; i >= 0; i--) {
            CHECK_OK(cuctx_ctx_destroy(&b[i]));
            CHECK_OK(raw()->ctx_destroy(x[i]));
        }
    }
    cr_assert_eq(stats().contexts, 0);
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  5. Registration reports the driver's errors
 * ------------------------------------------------------------------------ */

Test(foreign, borrow_reports_a_failed_cuCtxGetDevice_and_a_retry_works)
{
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(1);
    size_t before = stats().contexts;
    sim()->fail_call("cuCtxGetDevice", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ctx_borrow(&b, x), CUDA_ERROR_UNKNOWN, "not a success with device -1");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(b.id, 0);
    cr_assert_eq(stats().contexts, before, "nothing registered");
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    cr_assert_eq(cuctx_ctx_device(b), 1);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

/* A borrow identifies a context it has not met under the context lock,
 * making it current to ask its device: a failed pop after that is reported
 * then. The report waits while the thread holds the lock; with the device
 * not found either, the borrow fails and holds nothing after the lock, so
 * the report reaches the error handler when the lock is let go (entry.c,
 * cuctx__ctx_unlock), before the borrow returns, not at some later call. */
Test(foreign, a_failed_pop_inside_a_failed_borrow_reaches_the_handler_before_it_returns)
{
    cuctx_ctx b = {0};
    struct handler_count hc;
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    CUcontext y = new_raw_ctx(0);      /* current, so the borrow of x pushes x */
    count_handler_install(&hc);
    size_t mark = log_mark();
    sim()->fail_call("cuCtxGetDevice", 1, CUDA_ERROR_INVALID_DEVICE);
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ctx_borrow(&b, x), CUDA_ERROR_INVALID_DEVICE, "%s", cuctx_last_error_message());
    cr_assert_eq(hc.calls, 1, "the handler was called %d times during the borrow", hc.calls);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN);
    cr_assert_not_null(strstr(hc.last_msg, "cannot restore the previous context"), "%s", hc.last_msg);
    cr_assert_eq(calls_on("cuCtxPushCurrent", H(x), mark), 1);
    cr_assert_eq(nth_call("cuCtxPopCurrent", mark, 0).rc, CUDA_ERROR_UNKNOWN);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(b.id, 0);
    CHECK_OK(cuctx_pop_current());     /* the level the failed pop left */
    EXPECT_CURRENT(y);
    CHECK_OK(raw()->ctx_destroy(y));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

/* A context met as the current one by a {0} create is registered once
 * (its id, and its device asked with it made current) and is not a borrow:
 * its entry is not counted, so it outlives the child that met it, and the
 * next {0} create there checks its id alone, without registering it again.
 * (Only cuctx_ctx_borrow's entries end with their last name.) */
Test(foreign, a_current_context_met_by_a_create_is_registered_once_and_not_ended_with_its_child)
{
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    unsigned long devs = calls("cuCtxGetDevice");
    CHECK_OK(cuctx_event_create(&ev, (cuctx_ctx){0}, 0));
    cr_assert_eq(calls("cuCtxGetDevice") - devs, 1, "registered with its device");
    CHECK_OK(cuctx_event_destroy(&ev));
    size_t mark = log_mark();
    devs = calls("cuCtxGetDevice");
    CHECK_OK(cuctx_event_create(&ev, (cuctx_ctx){0}, 0));
    cr_assert_eq(calls("cuCtxGetDevice"), devs, "registered again: its entry ended with the first event");
    cr_assert_eq(calls_on("cuCtxGetId", H(x), mark), 1, "its id checked once");
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

Test(foreign, borrow_reports_a_failed_cuCtxGetId_as_the_drivers_error)
{
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    size_t before = stats().contexts;
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ctx_borrow(&b, x), CUDA_ERROR_UNKNOWN, "a failed id query is not a destroyed context");
    cr_assert_eq(b.id, 0);
    cr_assert_eq(stats().contexts, before);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

Test(foreign, borrowing_a_context_destroyed_by_raw_code_is_refused)
{
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(raw()->ctx_destroy(x));
    cr_assert_eq(cuctx_ctx_borrow(&b, x), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(b.id, 0);
    cr_assert_eq(stats().contexts, 0);
    ASSERT_NO_MISUSE();
}

/* A context made by code that reached the driver itself, before cuctx was
 * ever called: a borrow of it as the process's first cuctx call loads the
 * driver (the table it asks the context's device and id through) and
 * takes it, and the handle's destroy leaves it to its owner. Bug caught:
 * the borrow calling through the table before the load (a crash, or a
 * refusal). Mutant killed: lib/context.c:200 `call` (CUCTX_INIT_OR_RETURN
 * left out; seed 43). */
Test(foreign, a_borrow_as_the_first_call_loads_the_driver_first)
{
    const char *path = getenv("CUCTX_DRIVER");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);   /* the one cuctx opens */
    if (!lib)
        cr_skip_test("no CUDA driver: %s", dlerror());
    PFN_cuGetProcAddress_v12000 gpa;
    void *p = dlsym(lib, "cuGetProcAddress_v2");
    cr_assert_not_null(p, "the driver exports no cuGetProcAddress_v2");
    memcpy(&gpa, &p, sizeof p);
    PFN_cuInit_v2000 init;
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxDestroy_v4000 destroy;
    cr_assert_eq(gpa("cuInit", (void **)&init, 2000, CU_GET_PROC_ADDRESS_DEFAULT, NULL), CUDA_SUCCESS);
    cr_assert_eq(gpa("cuCtxCreate", (void **)&create, 3020, CU_GET_PROC_ADDRESS_DEFAULT, NULL), CUDA_SUCCESS);
    cr_assert_eq(gpa("cuCtxPopCurrent", (void **)&pop, 4000, CU_GET_PROC_ADDRESS_DEFAULT, NULL), CUDA_SUCCESS);
    cr_assert_eq(gpa("cuCtxDestroy", (void **)&destroy, 4000, CU_GET_PROC_ADDRESS_DEFAULT, NULL), CUDA_SUCCESS);
    if (init(0) != CUDA_SUCCESS)
        cr_skip_test("cuInit(0) failed: no usable CUDA device");
    CUcontext x = NULL, top = NULL;
    cr_assert_eq(create(&x, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(pop(&top), CUDA_SUCCESS);
    cr_assert_eq(top, x);
    cuctx_ctx b = {0};
    CUresult rc = cuctx_ctx_borrow(&b, x);     /* cuctx's first call */
    cr_assert_eq(rc, CUDA_SUCCESS, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_neq(b.id, 0);
    cr_assert_eq(cuctx_ctx_raw(b), x);
    cr_assert_eq(cuctx_ctx_device(b), 0);
    cr_assert_eq(stats().contexts, 1);
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(stats().contexts, 0);
    if (sim()) {
        cr_assert(sim()->is_live(CUSIM_CONTEXT, H(x)), "the borrow's destroy ended its owner's context");
        cr_assert_eq(calls("cuCtxDestroy"), 0);
        ASSERT_NO_MISUSE();
    }
    cr_assert_eq(destroy(x), CUDA_SUCCESS);
    dlclose(lib);
}

/* ------------------------------------------------------------------------
 *  6. The cost of the check
 * ------------------------------------------------------------------------ */

Test(foreign, child_calls_on_an_owned_context_make_no_id_query)
{
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    unsigned long before = calls("cuCtxGetId");
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls("cuCtxGetId"), before, "cuctx decides its own contexts' life without the driver");
    CHECK_OK(cuctx_ctx_destroy(&c));
    ASSERT_NO_MISUSE();
}

/* Exactly one cuCtxGetId for each of create, query and destroy of an event in c. */
static void one_id_query_per_child_call(cuctx_ctx c)
{
    cuctx_event ev = {0};
    unsigned long n = calls("cuCtxGetId");
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    cr_assert_eq(calls("cuCtxGetId") - n, 1, "create");
    n = calls("cuCtxGetId");
    CHECK_OK(cuctx_event_query(ev));
    cr_assert_eq(calls("cuCtxGetId") - n, 1, "query");
    n = calls("cuCtxGetId");
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls("cuCtxGetId") - n, 1, "destroy");
    cr_assert_eq(calls("cuEventDestroy"), 1);
}

Test(foreign, child_calls_on_a_primary_context_make_one_id_query_each)
{
    cuctx_ctx p = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    one_id_query_per_child_call(p);
    CHECK_OK(cuctx_ctx_destroy(&p));
    ASSERT_NO_MISUSE();
}

Test(foreign, child_calls_on_a_borrowed_context_make_one_id_query_each)
{
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    one_id_query_per_child_call(b);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  7. A driver without cuCtxGetId
 * ------------------------------------------------------------------------ */

Test(foreign, without_ids_children_of_live_contexts_are_destroyed_through_the_driver)
{
    cuctx_ctx c = {0}, p = {0}, b = {0};
    cuctx_event e_owned = {0}, e_primary = {0}, e_borrowed = {0};
    without_ctx_ids();
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_event_create(&e_owned, c, 0));
    CHECK_OK(cuctx_event_create(&e_primary, p, 0));
    CHECK_OK(cuctx_event_create(&e_borrowed, b, 0));
    CHECK_OK(cuctx_event_query(e_primary));
    CHECK_OK(cuctx_event_query(e_borrowed));
    CHECK_OK(cuctx_event_destroy(&e_owned));
    CHECK_OK(cuctx_event_destroy(&e_primary));
    CHECK_OK(cuctx_event_destroy(&e_borrowed));
    cr_assert_eq(calls("cuEventDestroy"), 3);
    cr_assert_eq(sim()->live(CUSIM_EVENT), 0);
    cr_assert_eq(stats().stale_skips, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(x));
    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(calls("cuCtxGetId"), 0, "the hidden entry point was called");
    ASSERT_NO_MISUSE();
}

/* The documented behaviour without ids: a primary context ends, for cuctx, with cuctx's last release. */
Test(foreign, without_ids_primary_children_are_skipped_after_cuctx_release_even_while_the_runtime_holds_it)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    without_ctx_ids();
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    uint64_t r_ev = H(cuctx_event_raw(ev));
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 1);
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls_on("cuEventDestroy", r_ev, mark), 0);
    cr_assert_eq(stats().stale_skips, 1);
    cr_assert_eq(calls("cuCtxGetId"), 0, "the hidden entry point was called");
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    ASSERT_NO_MISUSE();
}

/* Without ids nothing but cuctx's own reset tells the primary's children
 * apart: the reset itself must end the generation. */
Test(foreign, without_ids_cuctx_primary_reset_still_skips_the_children)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    without_ctx_ids();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    uint64_t r_ev = H(cuctx_event_raw(ev));
    CHECK_OK(cuctx_ctx_primary_reset(0));
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls_on("cuEventDestroy", r_ev, mark), 0);
    cr_assert_eq(stats().stale_skips, 1);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(calls("cuDevicePrimaryCtxRelease"), 1, "a reset does not release the retain");
    cr_assert_eq(sim()->primary_refs(0), 0);
    ASSERT_NO_MISUSE();
}

/* The documented limit without ids: cuctx cannot see a borrowed context's death
 * unless a context cuctx makes takes the address, so this destroy reaches the
 * driver with a dead event. The real driver answers it with an error; the
 * simulator records it as a misuse too, and exactly that one is expected. */
Test(foreign, without_ids_a_borrowed_contexts_child_reaches_the_driver_after_a_raw_destroy)
{
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    without_ctx_ids();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    uint64_t r_ev = H(cuctx_event_raw(ev));
    CHECK_OK(raw()->ctx_destroy(x));
    size_t mark = log_mark();
    cr_assert_neq(cuctx_event_destroy(&ev), CUDA_SUCCESS, "the driver refuses the dead event");
    cr_assert_eq(ev.id, 0);
    cr_assert_eq(calls_on("cuEventDestroy", r_ev, mark), 1);
    cr_assert_eq(stats().stale_skips, 0);
    cr_assert_eq(stats().failed_destroys, 1);
    cr_assert_eq(calls("cuCtxGetId"), 0, "the hidden entry point was called");
    cr_assert_eq(misuses(), 1, "expected exactly the one misuse of the documented limit (listed above)");
    CHECK_OK(cuctx_ctx_destroy(&b));
}

/* ------------------------------------------------------------------------
 *  8. A {0}-owner create meets a new context at a dead one's address
 * ------------------------------------------------------------------------ */

Test(foreign, null_owner_create_registers_a_new_context_at_a_dead_foreign_contexts_address)
{
    cuctx_event e1 = {0}, e2 = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_event_create(&e1, (cuctx_ctx){0}, 0));
    uint64_t r1 = H(cuctx_event_raw(e1));
    CHECK_OK(raw()->ctx_destroy(x));
    CUcontext y = new_raw_ctx(0);
    cr_assert_eq(y, x, "recycling: the new context should have the dead one's address");
    cr_assert_eq(current(), y);
    CHECK_OK(cuctx_event_create(&e2, (cuctx_ctx){0}, 0));
    uint64_t r2 = H(cuctx_event_raw(e2));
    cr_assert_eq(r2, r1, "recycling: the new event should have the dead one's value");
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&e1));
    cr_assert_eq(calls_on("cuEventDestroy", r1, mark), 0, "the old context's child reached the new context");
    cr_assert_eq(sim()->is_live(CUSIM_EVENT, r2), 1);
    cr_assert_eq(stats().stale_skips, 1);
    mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&e2));
    cr_assert_eq(calls_on("cuEventDestroy", r2, mark), 1, "the new context's child was not destroyed");
    CHECK_OK(raw()->ctx_destroy(y));
    ASSERT_NO_MISUSE();
}

/* A child's destroy whose context check fails with an error of its own
 * (not "gone"): the error comes back, the handle is released all the same,
 * and the failed destroy is counted. */
Test(foreign, a_child_destroy_whose_context_check_fails_is_counted_as_failed)
{
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    struct cuctx_stats st0 = stats();
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_ERROR_UNKNOWN, "%s", cuctx_last_error_message());
    cr_assert_eq(ev.id, 0);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.failed_destroys, st0.failed_destroys + 1);
    cr_assert_eq(st1.events, st0.events - 1);
    CHECK_OK(cuctx_ctx_destroy(&p));
}

/* A context made (by raw code) at the address of an owned context whose
 * destroy has reached the driver but whose entry has not yet left the
 * address map: a borrow of it sees that the closing entry's address now
 * names another context (cuCtxGetId differs: retaken_while_closing) and
 * registers the new one, instead of refusing it as being destroyed. The
 * simulator holds the destroying thread right after its cuCtxDestroy
 * (cusim_hold_after) and gives the new context the freed address.
 * Mutants killed: lib/entry.c:367 (seed 23), retaken_while_closing
 * returning 0, or with `== CUDA_SUCCESS` made `!=`: the borrow failed with
 * CUDA_ERROR_CONTEXT_IS_DESTROYED. */
Test(foreign, a_context_made_at_the_address_of_one_being_destroyed_is_borrowed, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    struct held_destroy d;
    held_destroy_begin(&d);
    CUcontext fresh = NULL;
    cuctx_ctx b = {0};
    CUresult rc = CUDA_ERROR_UNKNOWN;
    char msg[512] = "";
    if (d.held) {     /* the destroy is past its cuCtxDestroy, its entry still in the map */
        fresh = new_raw_ctx(0);
        rc = cuctx_ctx_borrow(&b, fresh);
        snprintf(msg, sizeof msg, "%s", cuctx_last_error_message());
    }
    held_destroy_end(&d);
    cr_assert(d.held, "the destroy was not held after its cuCtxDestroy within 10 s");
    cr_assert_eq(fresh, d.old, "the simulator did not give the destroyed context's address again");
    cr_assert_eq(rc, CUDA_SUCCESS, "borrow of the new context at the address: %s (%s)", cuctx_result_name(rc), msg);
    CHECK_OK(d.rc);
    cuctx_event ev = {0};     /* the borrow names the new context, after the old entry's end too */
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(cuctx_ctx_raw(b), fresh);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(fresh));
    ASSERT_NO_MISUSE();
}

/* ---- survivors of lib/entry.c (e2) ---- */

/* Calls of fn (whatever they name) from log position `from` on. */
static unsigned long e2_calls_since(const char *fn, size_t from)
{
    unsigned long n = 0;
    struct cusim_call c;
    for (size_t i = from; sim()->log_get(i, &c) == 0; i++)
        n += strcmp(c.fn, fn) == 0;
    return n;
}

/* A borrow of a context cuctx has not met reads its id once: the register
 * reads it, and the hold that follows does not read it again (the id was
 * just read: entry_lookup's *fresh). Mutants killed: lib/entry.c:387 `ror`
 * (`== CUDA_SUCCESS` made `!=`) and lib/entry.c:388 `const` (`*fresh = 1`
 * made 0): the hold checked the new entry again, a second cuCtxGetId. */
Test(foreign, a_first_borrow_reads_the_contexts_id_once)
{
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    cr_assert_eq(calls_on("cuCtxGetId", H(x), mark), 1, "cuCtxGetId on the new context: %lu calls, want 1",
                 calls_on("cuCtxGetId", H(x), mark));
    cr_assert_eq(e2_calls_since("cuCtxGetDevice", mark), 1, "the borrow did not register the context");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

/* cuctx_ctx_primary_reset of a device whose primary context cuctx never
 * retained and that is not active: its address is asked of the driver
 * (cuDevicePrimaryCtxGetState: inactive, so there is none and nothing to
 * wait for) and the reset goes to the driver. Mutant killed: lib/entry.c:339
 * `ret` (`return CUDA_SUCCESS` for an inactive primary made `return 1`: the
 * reset failed with CUDA_ERROR_INVALID_VALUE before the driver). */
Test(foreign, cuctx_primary_reset_of_an_inactive_primary_context_reaches_the_driver)
{
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 0);
    size_t mark = log_mark();
    CUresult rc = cuctx_ctx_primary_reset(0);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(e2_calls_since("cuDevicePrimaryCtxGetState", mark), 1, "the primary's state was not asked");
    cr_assert_eq(e2_calls_since("cuDevicePrimaryCtxReset", mark), 1, "the reset did not reach the driver");
    cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), 0, "an inactive primary context was retained");
    ASSERT_NO_MISUSE();
}

/* A new entry when the address map holds 64 (sweep_at's first value) sweeps
 * the map first: each borrowed entry's context is asked for by id, and the
 * one its owner destroyed ends. 63 owned contexts (never asked about) and
 * one borrowed context, destroyed by raw code, make 64; the 65th context's
 * create sweeps. Mutants killed: lib/entry.c:211 `ror` (`>=` made `>`: no
 * sweep at 64) and lib/entry.c:212 `call` (the sweep removed): the dead
 * borrowed context was not asked about. */
Test(foreign, a_new_entry_at_64_mapped_contexts_sweeps_the_dead_borrowed_ones)
{
    static cuctx_ctx c[64];
    cuctx_ctx b = {0};
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(raw()->ctx_destroy(x));
    for (int i = 0; i < 63; i++) {
        CHECK_OK(cuctx_ctx_create(&c[i], 0, 0));
        CHECK_OK(cuctx_pop_current());
    }
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_create(&c[63], 0, 0));
    CHECK_OK(cuctx_pop_current());
    cr_assert_eq(calls_on("cuCtxGetId", H(x), mark), 1,
                 "the 65th entry's create asked %lu times about the dead borrowed context, want 1 (the sweep)",
                 calls_on("cuCtxGetId", H(x), mark));
    for (int i = 63; i >= 0; i--)
        CHECK_OK(cuctx_ctx_destroy(&c[i]));
    CHECK_OK(cuctx_ctx_destroy(&b));
    ASSERT_NO_MISUSE();
}

/* A thread's current context met again after its owner destroyed it and
 * made a new one at the address: the first round of the lookup finds the
 * old entry, whose check ends it, quietly (no failure recorded: it is no
 * failure of the call), and the second registers the new context; the
 * create succeeds, and a successful call leaves cuctx_last_error() as it
 * was (cuctx.h): CUDA_SUCCESS, none yet. Mutant killed: lib/entry.c:491
 * `not` (the first round's hold not quiet: the old context's end recorded
 * as the thread's last error, though the create succeeded). */
Test(foreign, a_current_context_replaced_at_its_address_is_met_without_an_error_report)
{
    cuctx_event e1 = {0}, e2 = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_event_create(&e1, (cuctx_ctx){0}, 0));
    CHECK_OK(raw()->ctx_destroy(x));
    CUcontext y = new_raw_ctx(0);
    cr_assert_eq(y, x, "recycling: the new context should have the dead one's address");
    cr_assert_eq(cuctx_last_error(), CUDA_SUCCESS, "no failure yet");
    CHECK_OK(cuctx_event_create(&e2, (cuctx_ctx){0}, 0));
    cr_assert_eq(cuctx_last_error(), CUDA_SUCCESS, "a failure was recorded: %s", cuctx_last_error_message());
    cr_assert_str_eq(cuctx_last_error_message(), "");
    CHECK_OK(cuctx_event_destroy(&e1));
    CHECK_OK(cuctx_event_destroy(&e2));
    cr_assert_eq(calls("cuEventDestroy"), 1, "the new context's event only");
    CHECK_OK(raw()->ctx_destroy(y));
    ASSERT_NO_MISUSE();
}

/* Without cuCtxGetId a borrowed context's death is seen only when its
 * address is given out again: a context cuctx creates there ends the old
 * entry (cuctx__entry_new), so the borrowed context's child is skipped -
 * not sent to the driver, where it would name the new context. Mutant
 * killed: lib/entry.c:210 `call` (the old entry not ended: without an id to
 * check, its child's destroy went to the driver). */
Test(foreign, without_ids_a_context_created_at_a_borrowed_ones_address_ends_the_old_entry)
{
    cuctx_ctx b = {0}, c = {0};
    cuctx_event ev = {0};
    without_ctx_ids();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    uint64_t r_ev = H(cuctx_event_raw(ev));
    CHECK_OK(raw()->ctx_destroy(x));
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    cr_assert_eq(cuctx_ctx_raw(c), x, "recycling: the new context should have the dead one's address");
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls_on("cuEventDestroy", r_ev, mark), 0, "the old context's child reached the driver");
    cr_assert_eq(stats().stale_skips, 1);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(calls("cuCtxGetId"), 0, "the hidden entry point was called");
    ASSERT_NO_MISUSE();
}

/* A thread's current context met by a create is not counted: its entry
 * stays when its last child goes (entry.h), so a second create in it finds
 * it without registering it again - even when the entry's slot was last
 * a counted borrow's, ended with its handle just before. Mutant killed:
 * lib/entry.c:226 `call` (the new entry's counted flag not cleared: it
 * kept the borrow's, and ended with the event). */
Test(foreign, a_current_contexts_entry_in_a_borrows_old_slot_is_not_counted)
{
    cuctx_ctx b = {0};
    cuctx_event e1 = {0}, e2 = {0};
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(cuctx_ctx_destroy(&b));        /* the counted entry's last name: it ends, its slot free */
    CUcontext y = new_raw_ctx(0);
    CHECK_OK(cuctx_event_create(&e1, (cuctx_ctx){0}, 0));  /* y registered, uncounted */
    CHECK_OK(cuctx_event_destroy(&e1));
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_create(&e2, (cuctx_ctx){0}, 0));
    cr_assert_eq(e2_calls_since("cuCtxGetDevice", mark), 0,
                 "the current context was registered again: its entry had ended with its child");
    CHECK_OK(cuctx_event_destroy(&e2));
    CHECK_OK(raw()->ctx_destroy(y));
    CHECK_OK(raw()->ctx_destroy(x));
    ASSERT_NO_MISUSE();
}

/* A borrow's entry ends with its last name (entry.h), so a borrow of the
 * same context after its last handle went registers it anew. That holds
 * too when the entry's slot was last a borrow's that ended with a name
 * left (its context found destroyed by its owner while its handle lived).
 * Mutant killed: lib/entry.c:228 `call` (the new entry's name count not
 * cleared: it kept the dead borrow's name, and outlived its last handle). */
Test(foreign, a_borrows_entry_in_the_slot_of_one_ended_with_names_left_ends_with_its_last_handle)
{
    cuctx_ctx b = {0}, b2 = {0};
    NEED_DRIVER();
    NEED_SIM();
    unique_addresses();
    CUcontext x = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b, x));
    CHECK_OK(raw()->ctx_destroy(x));
    cr_assert_eq(cuctx_ctx_synchronize(b), CUDA_ERROR_CONTEXT_IS_DESTROYED);  /* its entry ends, b naming it */
    CUcontext y = new_raw_ctx(0);
    CHECK_OK(cuctx_ctx_borrow(&b2, y));
    CHECK_OK(cuctx_ctx_destroy(&b2));       /* y's entry: its last name */
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_borrow(&b2, y));
    cr_assert_eq(e2_calls_since("cuCtxGetDevice", mark), 1,
                 "the borrow found the entry its last handle should have ended (%lu registrations)",
                 e2_calls_since("cuCtxGetDevice", mark));
    CHECK_OK(cuctx_ctx_destroy(&b2));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(raw()->ctx_destroy(y));
    ASSERT_NO_MISUSE();
}

/* A borrow of a context whose destroy through cuctx has reached the driver
 * while its entry is still closing (the destroy held by the simulator right
 * after cuCtxDestroy): the closing entry's address names no new context -
 * its id cannot be read, the context is gone - so the borrow is refused as
 * being destroyed, with no registration tried: one cuCtxGetId in each of
 * the lookup's two rounds (hold_raw). Mutant killed: lib/entry.c:367 `lcr`
 * (`... == CUDA_SUCCESS && now != s->u.entry.ctx_id` made `... ==
 * CUDA_SUCCESS || now != ...`: the failed read left now 0, unlike the
 * entry's id, so the address counted as retaken and the borrow tried to
 * register it, failing as "has been destroyed" after more id reads; that
 * mutant builds only without -Werror, its `||` unparenthesized). */
Test(foreign, a_borrow_of_a_context_being_destroyed_is_refused_without_registering_it, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    struct held_destroy d;
    held_destroy_begin(&d);
    cuctx_ctx b = {0};
    CUresult rc = CUDA_ERROR_UNKNOWN;
    char msg[512] = "";
    unsigned long ids = 0, devs = 0;
    if (d.held) {     /* the destroy is past its cuCtxDestroy, its entry still in the map */
        size_t mark = log_mark();
        rc = cuctx_ctx_borrow(&b, d.old);
        snprintf(msg, sizeof msg, "%s", cuctx_last_error_message());
        ids = calls_on("cuCtxGetId", H(d.old), mark);
        devs = e2_calls_since("cuCtxGetDevice", mark);
    }
    held_destroy_end(&d);
    cr_assert(d.held, "the destroy was not held after its cuCtxDestroy within 10 s");
    CHECK_OK(d.rc);
    cr_assert_eq(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s (%s)", cuctx_result_name(rc), msg);
    cr_assert_not_null(strstr(msg, "is being destroyed"), "%s", msg);
    cr_assert_eq(b.id, 0);
    cr_assert_eq(ids, 2, "cuCtxGetId on the closing context's address: %lu calls, want 2 (one a round)", ids);
    cr_assert_eq(devs, 0, "a registration was tried");
    ASSERT_NO_MISUSE();
}
