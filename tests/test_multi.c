/* SPDX-License-Identifier: MIT */
/* test_multi.c - what is tethered across contexts and processes (issue
 * 23): peer access as an object, tethered to both its contexts, and CUDA
 * IPC memory and events, children of the context that opens them. Each
 * test says in a line which bug it catches. They assert on the simulated
 * driver's call log (which context was current at each call, which calls
 * were made at all) and its misuse log. With the real driver the peer
 * tests run where there are two GPUs (the call-log checks skipped); the
 * IPC tests need the simulator's stand-in for a second process
 * (cusim_set_ipc_loopback), examples/ipc_share.c runs two real ones. */
#include "testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")
#define H(p) ((uint64_t)(uintptr_t)(p))
#define BYTES 4096

/* The peer and IPC calls from log position mark on, each with the context
 * current at it, by the names given: "enable(B)@A,disable(B)@A". */
static const char *multi_trace(size_t mark, char *buf, size_t n)
{
    static const struct { const char *fn, *as; char kind; } traced[] = {
        {"cuCtxEnablePeerAccess", "enable", 'c'}, {"cuCtxDisablePeerAccess", "disable", 'c'},
        {"cuIpcGetMemHandle", "get", 'm'},         {"cuIpcOpenMemHandle", "open", 'm'},
        {"cuIpcCloseMemHandle", "close", 'm'},     {"cuMemFree", "free", 'm'},
        {"cuIpcGetEventHandle", "getev", 'e'},     {"cuIpcOpenEventHandle", "openev", 'e'},
        {"cuEventDestroy", "evdestroy", 'e'},
    };
    struct cusim_call c;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = mark; sim() && sim()->log_get(i, &c) == 0; i++)
        for (size_t t = 0; t < sizeof traced / sizeof traced[0]; t++)
            if (strcmp(c.fn, traced[t].fn) == 0 && len < n)
                len += (size_t)snprintf(buf + len, n - len, "%s%s(%s)@%s", len ? "," : "", traced[t].as,
                                        name_of(traced[t].kind, c.handle), name_of('c', c.ctx));
    return buf;
}

#define EXPECT_MULTI(mark, want)                                                               \
    do {                                                                                       \
        if (sim()) {                                                                           \
            char multi_buf_[2048];                                                             \
            const char *got_ = multi_trace((mark), multi_buf_, sizeof multi_buf_);             \
            cr_assert_str_eq(got_, (want), "line %d: driver calls\n  got  %s\n  want %s", __LINE__, got_, (want)); \
            ASSERT_NO_MISUSE();                                                                \
        }                                                                                      \
    } while (0)

/* Two owned contexts, A on device 0 and B on device 1, popped; skips the
 * test on a machine with one GPU, or two without a peer path. */
static void two_devices(cuctx_ctx *a, cuctx_ctx *b)
{
    NEED_DRIVER();
    PFN_cuDeviceCanAccessPeer_v4000 can_access =
        (PFN_cuDeviceCanAccessPeer_v4000)drv_sym("cuDeviceCanAccessPeer", 4000);
    int can = 0;
    if (can_access(&can, 0, 1) != CUDA_SUCCESS || !can)
        cr_skip_test("needs two devices with a peer path (cuDeviceCanAccessPeer(0, 1) says no)");
    if (cuctx_ctx_create(b, 1, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
        cr_skip_test("needs a second device: %s", cuctx_last_error_message());
    CHECK_OK(cuctx_pop_current());
    name_handle('c', H(cuctx_ctx_raw(*b)), "B");
    new_ctx(a, 0, "A", POPPED);
}

static int sim_peer_on(cuctx_ctx from, cuctx_ctx to)
{
    return sim()->peer_enabled(H(cuctx_ctx_raw(from)), H(cuctx_ctx_raw(to)));
}

/* ---- peer access ---------------------------------------------------------- */

/* Bug caught: the enable or the disable run with the wrong context current
 * (to's, or whatever was current), or naming the wrong context; the
 * caller's current context changed by either. */
Test(peer, enable_and_destroy_call_the_driver_with_from_current)
{
    cuctx_ctx a = {0}, b = {0}, other = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    CUcontext o = new_ctx(&other, 0, "O", LEFT_CURRENT);
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    cr_assert_neq(p.id, 0);
    EXPECT_CURRENT(o);
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p, &owned));
    cr_assert_eq(owned, 1);
    if (sim())
        cr_assert(sim_peer_on(a, b) && !sim_peer_on(b, a), "access is one way, from A to B");
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(p.id, 0);
    EXPECT_CURRENT(o);
    EXPECT_MULTI(mark, "enable(B)@A,disable(B)@A");
    if (sim())
        cr_assert(!sim_peer_on(a, b));
    /* the other way, from the current context ({0}) */
    mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, (cuctx_ctx){0}, b));
    CHECK_OK(cuctx_peer_destroy(&p));
    EXPECT_MULTI(mark, "enable(B)@O,disable(B)@O");
    CHECK_OK(cuctx_ctx_destroy(&other));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(stats().peers, 0);
}

/* The four orders of the contexts' ends and the destroy's. Bug caught:
 * tethering to one context only - a disable after `to` died names a dead
 * context (a misuse in the simulator; unmeasured, possibly a crash, on the
 * real driver), one after `from` died runs in a dead context. */
static void peer_outlives(int first, int second)
{
    cuctx_ctx c[2] = {{0}, {0}};
    cuctx_peer p = {0};
    two_devices(&c[0], &c[1]);
    CHECK_OK(cuctx_peer_enable(&p, c[0], c[1]));
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&c[first]));
    if (second >= 0)
        CHECK_OK(cuctx_ctx_destroy(&c[second]));
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(p.id, 0);
    cr_assert_eq(stats().stale_skips, skips + 1, "the destroy is a skip, counted");
    cr_assert_eq(stats().peers, 0);
    EXPECT_MULTI(mark, "");
    CHECK_OK(cuctx_ctx_destroy(&c[0]));
    CHECK_OK(cuctx_ctx_destroy(&c[1]));
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

Test(peer, a_destroy_after_its_peer_context_ended_skips_the_driver) { peer_outlives(1, -1); }
Test(peer, a_destroy_after_the_context_it_is_enabled_from_ended_skips_the_driver) { peer_outlives(0, -1); }
Test(peer, a_destroy_after_both_ended_from_first_skips_the_driver) { peer_outlives(0, 1); }
Test(peer, a_destroy_after_both_ended_to_first_skips_the_driver) { peer_outlives(1, 0); }

/* Bug caught: a primary context taken as ended at cuctx's last release
 * while the CUDA runtime still holds it (its peer access lives on and was
 * never disabled), or its reset not seen (a disable naming the context at
 * that address after, which is a new one). */
Test(peer, between_primary_contexts_it_follows_the_contexts_not_cuctxs_retains)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx p0 = {0}, p1 = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_primary(&p0, 0));
    CHECK_OK(cuctx_ctx_primary(&p1, 1));
    name_handle('c', H(cuctx_ctx_raw(p0)), "P0");
    name_handle('c', H(cuctx_ctx_raw(p1)), "P1");
    cr_assert_eq(sim()->primary_outside_retain(1), 0, "the runtime holds device 1's primary context");
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, p0, p1));
    CHECK_OK(cuctx_ctx_destroy(&p1));       /* cuctx's last retain of it; the runtime's keeps it */
    CHECK_OK(cuctx_peer_destroy(&p));
    EXPECT_MULTI(mark, "enable(P1)@P0,disable(P1)@P0");
    /* a reset of the peer's primary ends the access: the destroy after is skipped */
    CHECK_OK(cuctx_ctx_primary(&p1, 1));
    CHECK_OK(cuctx_peer_enable(&p, p0, p1));
    mark = log_mark();
    CHECK_OK(cuctx_ctx_primary_reset(1));
    CHECK_OK(cuctx_peer_destroy(&p));
    EXPECT_MULTI(mark, "");
    CHECK_OK(cuctx_ctx_destroy(&p1));
    cr_assert_eq(sim()->primary_outside_release(1), 0);
    CHECK_OK(cuctx_ctx_destroy(&p0));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: access someone else enabled (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
 * the runtime's cudaDeviceEnablePeerAccess, another library) taken as a
 * failure, or disabled by cuctx's destroy under its owner. */
Test(peer, access_enabled_elsewhere_is_borrowed_and_never_disabled)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    PFN_cuCtxEnablePeerAccess_v4000 enable = (PFN_cuCtxEnablePeerAccess_v4000)drv_sym("cuCtxEnablePeerAccess", 4000);
    PFN_cuCtxDisablePeerAccess_v4000 disable =
        (PFN_cuCtxDisablePeerAccess_v4000)drv_sym("cuCtxDisablePeerAccess", 4000);
    CHECK_OK(cuctx_ctx_set_current(a));
    CHECK_OK(enable(cuctx_ctx_raw(b), 0));      /* someone else's */
    CHECK_OK(cuctx_pop_current());
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p, &owned));
    cr_assert_eq(owned, 0, "borrowed");
    CHECK_OK(cuctx_peer_destroy(&p));
    EXPECT_MULTI(mark, "enable(B)@A");
    if (sim())
        cr_assert(sim_peer_on(a, b), "still on: its owner's to disable");
    CHECK_OK(cuctx_ctx_set_current(a));
    CHECK_OK(disable(cuctx_ctx_raw(b)));        /* the owner's disable works: cuctx left it alone */
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Bug caught: a second cuctx_peer of the same pair made as an owner too,
 * so that the first destroy pulls the access from under the second. */
Test(peer, a_second_handle_of_one_pair_borrows_from_the_first)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p1 = {0}, p2 = {0};
    two_devices(&a, &b);
    CHECK_OK(cuctx_peer_enable(&p1, a, b));
    CHECK_OK(cuctx_peer_enable(&p2, a, b));
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p2, &owned));
    cr_assert_eq(owned, 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_destroy(&p2));
    CHECK_OK(cuctx_peer_destroy(&p1));
    EXPECT_MULTI(mark, "disable(B)@A");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Bug caught: a pair of one context handed to the driver (or refused with
 * a bare code), also when two handles name that context. */
Test(peer, the_same_context_twice_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, a2 = {0}, pa = {0}, pa2 = {0};
    cuctx_peer p = {0};
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_ctx_borrow(&a2, cuctx_ctx_raw(a)));
    CHECK_OK(cuctx_ctx_primary(&pa, 0));
    CHECK_OK(cuctx_ctx_primary(&pa2, 0));
    size_t mark = log_mark();
    cr_assert_eq(cuctx_peer_enable(&p, a, a), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "same context"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_peer_enable(&p, a, a2), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "same context"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_peer_enable(&p, pa, pa2), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_ctx_set_current(a));
    cr_assert_eq(cuctx_peer_enable(&p, (cuctx_ctx){0}, a2), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_pop_current());
    cr_assert_eq(p.id, 0);
    cr_assert_eq(calls_on("cuCtxEnablePeerAccess", H(cuctx_ctx_raw(a)), mark), 0);
    cr_assert_eq(calls("cuCtxEnablePeerAccess"), 0);
    CHECK_OK(cuctx_ctx_destroy(&pa2));
    CHECK_OK(cuctx_ctx_destroy(&pa));
    CHECK_OK(cuctx_ctx_destroy(&a2));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(stats().contexts, 0);
}

/* Bug caught: the driver's refusal of two contexts of one device, or of
 * devices with no peer path, returned without saying which devices and
 * why; a refused create leaving a handle or a hold behind. */
Test(peer, contexts_the_driver_will_not_pair_are_refused_with_the_devices_named)
{
    NEED_DRIVER();
    NEED_SIM();     /* (the real driver's answer is test_sim's to measure) */
    cuctx_ctx a = {0}, a2 = {0};
    cuctx_peer p = {0};
    new_ctx(&a, 0, "A", POPPED);
    new_ctx(&a2, 0, "A2", POPPED);
    cr_assert_eq(cuctx_peer_enable(&p, a, a2), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "device 0 cannot access the memory of device 0"), "%s",
              cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "two contexts of one device"), "%s", cuctx_last_error_message());
    cr_assert_eq(p.id, 0);
    cuctx_ctx b = {0};
    new_ctx(&b, 1, "B", POPPED);
    sim()->set_peer_unsupported(1);
    cr_assert_eq(cuctx_peer_enable(&p, a, b), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "device 0 cannot access the memory of device 1"), "%s",
              cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "no peer path"), "%s", cuctx_last_error_message());
    cr_assert_eq(p.id, 0);
    cr_assert_eq(stats().peers, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a2));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: a NULL, stale or foreign handle dereferenced or handed to
 * the driver; a double destroy reaching it twice. */
Test(peer, null_stale_and_foreign_handles_are_refused)
{
    cuctx_ctx a = {0}, b = {0}, gone = {0};
    cuctx_peer p = {0}, copy;
    two_devices(&a, &b);
    new_ctx(&gone, 0, NULL, POPPED);
    cuctx_ctx stale = gone;
    CHECK_OK(cuctx_ctx_destroy(&gone));
    size_t mark = log_mark();
    cr_assert_eq(cuctx_peer_enable(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_peer_enable(&p, stale, b), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_peer_enable(&p, a, stale), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_peer_enable(&p, a, (cuctx_ctx){12345}), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_peer_enable(&p, (cuctx_ctx){0}, b), CUDA_ERROR_INVALID_CONTEXT, "none current");
    cr_assert_eq(p.id, 0);
    cr_assert_eq(calls_on("cuCtxEnablePeerAccess", H(cuctx_ctx_raw(b)), mark), 0);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    copy = p;
    int owned;
    cr_assert_eq(cuctx_peer_owned(p, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_peer_destroy(NULL), CUDA_ERROR_INVALID_VALUE);
    cuctx_ctx a_copy = a;
    cr_assert_eq(cuctx_peer_destroy((cuctx_peer *)&a_copy), CUDA_ERROR_INVALID_HANDLE, "a context handle");
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(cuctx_peer_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_peer_owned(copy, &owned), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuctx_peer_destroy(&p));       /* {0}: nothing */
    if (sim())
        cr_assert_eq(calls("cuCtxDisablePeerAccess"), 1);
    /* cuctx_peer_owned of a pair whose context ended */
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(cuctx_peer_owned(p, &owned), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_OK(cuctx_peer_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: the second context's entry not named by the pair - a
 * borrowed context whose handle goes first ends its entry, and the
 * destroy, finding it gone, skips the disable of access that lives on; or
 * the names never given back, so the entries outlive everything. */
Test(peer, a_pair_of_borrowed_contexts_keeps_their_entries_until_its_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext ra, rb;
    CHECK_OK(create(&rb, 0, 1));
    CHECK_OK(pop(NULL));
    CHECK_OK(create(&ra, 0, 0));
    CHECK_OK(pop(NULL));
    name_handle('c', H(ra), "A");
    name_handle('c', H(rb), "B");
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(stats().contexts, 2, "both named by the pair");
    CHECK_OK(cuctx_peer_destroy(&p));
    EXPECT_MULTI(mark, "enable(B)@A,disable(B)@A");
    cr_assert_eq(sim()->peer_enabled(H(ra), H(rb)), 0);
    cr_assert_eq(sim()->live(CUSIM_PEER), 0);
    cr_assert_eq(stats().contexts, 0, "their names given back: the entries ended");
    CHECK_OK(destroy(ra));
    CHECK_OK(destroy(rb));
}

/* Bug caught: a borrowed context's name kept by a pair whose other
 * context ended first (the skip path), so that its entry lingers. */
Test(peer, a_skipped_destroy_gives_the_living_contexts_name_back)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext ra;
    CHECK_OK(create(&ra, 0, 0));
    CHECK_OK(pop(NULL));
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    new_ctx(&b, 1, "B", POPPED);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(stats().contexts, 1, "A, named by the pair");
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(stats().contexts, 0);
    CHECK_OK(destroy(ra));
    ASSERT_NO_MISUSE();
}

/* Bug caught: a refused disable lost (not returned, not counted) or the
 * handle kept alive after it. */
Test(peer, a_disable_the_driver_refuses_is_returned_and_counted)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    NEED_SIM();
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    uint64_t failed = stats().failed_destroys;
    sim()->fail_call("cuCtxDisablePeerAccess", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_peer_destroy(&p), CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(cuctx_last_error_message(), "peer access"), "%s", cuctx_last_error_message());
    cr_assert_eq(p.id, 0);
    cr_assert_eq(stats().failed_destroys, failed + 1);
    cr_assert_eq(stats().peers, 0);
    /* a refused enable leaves nothing */
    sim()->fail_call("cuCtxEnablePeerAccess", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_peer_enable(&p, b, a), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(p.id, 0);
    cr_assert_eq(stats().peers, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: CUCTX_AUTO, cuctx_destroy or CUCTX_MOVE not knowing the
 * kind (a compile error, or a destroy of the wrong kind). */
static cuctx_peer enable_auto(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_AUTO cuctx_peer p = {0};
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    return CUCTX_MOVE(p);
}

Test(peer, cuctx_auto_cuctx_destroy_and_cuctx_move_take_it)
{
    cuctx_ctx a = {0}, b = {0};
    two_devices(&a, &b);
    size_t mark = log_mark();
    {
        CUCTX_AUTO cuctx_peer p = {0};
        CHECK_OK(cuctx_peer_enable(&p, a, b));
    }
    EXPECT_MULTI(mark, "enable(B)@A,disable(B)@A");
    cuctx_peer moved = enable_auto(b, a);
    cr_assert_eq(stats().peers, 1, "moved out, not destroyed");
    mark = log_mark();
    CHECK_OK(cuctx_destroy(&moved));
    cr_assert_eq(moved.id, 0);
    EXPECT_MULTI(mark, "disable(A)@B");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Bug caught: a create into a handle that holds live peer access orphaning
 * it; or one whose second context has ended refused forever. */
Test(peer, a_create_into_a_live_handle_is_refused_and_into_an_ended_one_fills_it)
{
    cuctx_ctx a = {0}, b = {0}, c = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    new_ctx(&c, 1, "C", POPPED);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    uint64_t first = p.id;
    cr_assert_eq(cuctx_peer_enable(&p, a, c), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(p.id, first, "left as it was");
    CHECK_OK(cuctx_ctx_destroy(&b));        /* the pair's second context ends */
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&p, a, c));
    cr_assert_neq(p.id, first);
    cr_assert_eq(stats().stale_skips, skips + 1, "the ended pair's slot released as its destroy would");
    EXPECT_MULTI(mark, "enable(C)@A");
    CHECK_OK(cuctx_peer_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&c));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Bug caught: a create into a handle that names no live pair - a copy
 * kept past its pair's destroy, or garbage - looked at as a pair: the slot
 * it names holds no pair (any more), or there is none, and reading the
 * pair's second context from it faults or finds a stale one. Such a
 * handle is simply filled, with nothing counted as a skip. Mutant killed:
 * lib/claim.c:48 `lcr` (`s && paired` made `s || paired`: the aux record
 * of the NULL slot read; seed 41). */
Test(peer, a_create_into_a_stale_or_garbage_handle_fills_it)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    cuctx_peer stale = p;
    CHECK_OK(cuctx_peer_destroy(&p));
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_enable(&stale, a, b));
    cr_assert_neq(stale.id, 0);
    CHECK_OK(cuctx_peer_destroy(&stale));
    cuctx_peer junk = {12345};      /* an id of no kind, whose slot holds nothing of its */
    CHECK_OK(cuctx_peer_enable(&junk, a, b));
    cr_assert_neq(junk.id, 12345);
    CHECK_OK(cuctx_peer_destroy(&junk));
    cr_assert_eq(stats().stale_skips, skips, "a handle that held no live pair counted as a skipped destroy");
    EXPECT_MULTI(mark, "enable(B)@A,disable(B)@A,enable(B)@A,disable(B)@A");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(stats().peers, 0);
}

/* Bug caught: a create into a live child of another kind looked at as a
 * pair, its slot's aux record read for a second context: a slot that held
 * a pair before keeps that pair's second context there, and once that
 * context has ended the live event would be taken for one whose context
 * ended - released as a skipped destroy, the handle filled, the event
 * orphaned. The pair's slot is the last one freed here, so the event's
 * create (one slot) takes it from the thread's cache. Mutant killed:
 * lib/claim.c:48 `lcr` (`s && paired` made `s || paired`; seed 41). */
Test(peer, a_create_into_a_live_event_whose_slot_held_a_pair_is_refused)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    cuctx_event ev = {0};
    two_devices(&a, &b);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    uint64_t pair = p.id;
    CHECK_OK(cuctx_ctx_destroy(&b));        /* the pair's second context ends */
    CHECK_OK(cuctx_peer_destroy(&p));       /* (a skip) */
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    cr_assert_eq(ev.id >> 32 & 0x3ffffff, pair >> 32 & 0x3ffffff, "the event did not take the pair's slot");
    uint64_t first = ev.id, skips = stats().stale_skips;
    unsigned long creates = calls("cuEventCreate");
    cr_assert_eq(cuctx_event_create(&ev, a, 0), CUDA_ERROR_INVALID_VALUE, "a create into a live event");
    cr_assert_eq(ev.id, first, "left as it was");
    cr_assert_eq(stats().stale_skips, skips, "the live event was released as a skipped destroy");
    cr_assert_eq(stats().events, 1);
    cr_assert_eq(calls("cuEventCreate"), creates, "the refused create reached the driver");
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: the stats and the leak report not knowing the kind, or
 * naming only one of its contexts. */
Test(peer, stats_and_the_leak_report_name_it_and_both_contexts)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    two_devices(&a, &b);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    cr_assert_eq(stats().peers, 1);
    cr_assert_eq(stats().contexts, 2);
    char buf[4096] = "", want[256];
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cuctx_leak_report(f);
    fclose(f);
    snprintf(want, sizeof want, "peer access (handle %#llx) from context %p to context %p",
             (unsigned long long)p.id, (void *)cuctx_ctx_raw(a), (void *)cuctx_ctx_raw(b));
    cr_assert(strstr(buf, want), "want \"%s\" in:\n%s", want, buf);
    cr_assert(strstr(buf, "test_multi.c"), "no create site: %s", buf);
    CHECK_OK(cuctx_ctx_destroy(&b));
    buf[0] = 0;
    f = fmemopen(buf, sizeof buf - 1, "w");
    cuctx_leak_report(f);
    fclose(f);
    cr_assert(strstr(buf, "to a destroyed context"), "%s", buf);
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(stats().peers, 0);
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- both contexts held for the disable ----------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

struct peer_arg { cuctx_peer p; CUresult rc; };

static void *destroy_peer(void *v)
{
    struct peer_arg *arg = v;
    arg->rc = cuctx_peer_destroy(&arg->p);
    return NULL;
}

/* The disable is slowed on a thread; the peer context's destroy on this
 * one must wait for it. Bug caught: only the first context held for the
 * disable - the second destroyed under it, so that the disable names a
 * dead context (the simulator's misuse). */
Test(peer, a_context_destroy_waits_for_a_disable_under_way_whichever_context_it_is)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    for (int which = 0; which < 2; which++) {
        cuctx_ctx c[2] = {{0}, {0}};
        struct peer_arg arg = {{0}, CUDA_ERROR_UNKNOWN};
        two_devices(&c[0], &c[1]);
        CHECK_OK(cuctx_peer_enable(&arg.p, c[0], c[1]));
        sim()->set_delay("cuCtxDisablePeerAccess", 300000);
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, destroy_peer, &arg), 0);
        for (int i = 0; i < 5000 && sim()->sleeping() == 0; i++)
            sleep_ms(1);
        cr_assert_gt(sim()->sleeping(), 0, "the disable never began");
        sim()->set_delay("cuCtxDisablePeerAccess", 0);
        size_t mark = log_mark();
        CHECK_OK(cuctx_ctx_destroy(&c[which]));
        cr_assert_eq(pthread_join(t, NULL), 0);
        CHECK_OK(arg.rc);
        static const char *const seq[] = {"cuCtxDisablePeerAccess", "cuCtxDestroy", NULL};
        char buf[256];
        cr_assert_str_eq(log_seq(mark, seq, buf, sizeof buf), "cuCtxDisablePeerAccess,cuCtxDestroy",
                         "context %d was destroyed under the disable: %s", which, buf);
        ASSERT_NO_MISUSE();
        CHECK_OK(cuctx_ctx_destroy(&c[1 - which]));
    }
}

struct ctx_arg { cuctx_ctx c; CUresult rc; };

static void *destroy_ctx(void *v)
{
    struct ctx_arg *arg = v;
    arg->rc = cuctx_ctx_destroy(&arg->c);
    return NULL;
}

/* cuctx's last release of P1 is slowed while the runtime's retain keeps
 * the context alive: its entry is closed until the driver's verdict, then
 * reopened. Bug caught: a destroy that takes that close for P1's end and
 * skips the disable of access that lives on; or one that waits for the
 * verdict while it holds P0 (a deadlock with a release of P0 beside). */
Test(peer, a_destroy_waits_out_a_primary_release_the_context_survives)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    cuctx_ctx p0 = {0};
    cuctx_peer p = {0};
    struct ctx_arg arg = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_primary(&p0, 0));
    CHECK_OK(cuctx_ctx_primary(&arg.c, 1));
    CUcontext r0 = cuctx_ctx_raw(p0), r1 = cuctx_ctx_raw(arg.c);
    cr_assert_eq(sim()->primary_outside_retain(1), 0, "the runtime holds device 1's primary context");
    CHECK_OK(cuctx_peer_enable(&p, p0, arg.c));
    uint64_t skips = stats().stale_skips;   /* (before: the stats wait for the context lock the release holds) */
    sim()->set_delay("cuDevicePrimaryCtxRelease", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_ctx, &arg), 0);
    for (int i = 0; i < 5000 && sim()->sleeping() == 0; i++)
        sleep_ms(1);
    cr_assert_gt(sim()->sleeping(), 0, "the release never began");
    sim()->set_delay("cuDevicePrimaryCtxRelease", 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(arg.rc);
    cr_assert_eq(stats().stale_skips, skips, "the destroy was skipped: P1 lives on");
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), 1);
    static const char *const seq[] = {"cuDevicePrimaryCtxRelease", "cuCtxDisablePeerAccess", NULL};
    char buf[256];
    cr_assert_str_eq(log_seq(mark, seq, buf, sizeof buf), "cuDevicePrimaryCtxRelease,cuCtxDisablePeerAccess",
                     "the disable did not wait for the release's verdict: %s", buf);
    cr_assert_eq(sim()->peer_enabled(H(r0), H(r1)), 0, "the access was left on");
    ASSERT_NO_MISUSE();
    cr_assert_eq(sim()->primary_outside_release(1), 0);
    CHECK_OK(cuctx_ctx_destroy(&p0));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* ---- IPC memory ------------------------------------------------------------- */

/* The exporter A (device 0) with memory m, and the importer B (device 1, or
 * 0 with one device), both popped; the simulator stands in for the second
 * process. */
static void ipc_setup(cuctx_ctx *a, cuctx_ctx *b, cuctx_mem *m, CUipcMemHandle *h)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_ipc_loopback(1);
    new_ctx(a, 0, "A", POPPED);
    new_ctx(b, 1, "B", POPPED);
    CHECK_OK(cuctx_mem_alloc(m, *a, BYTES));
    name_handle('m', cuctx_mem_ptr(*m), "m");
    CHECK_OK(cuctx_ipc_mem_get(*m, h));
}

static void copy_in(cuctx_mem m, unsigned char v)
{
    PFN_cuMemsetD8_v3020 set = (PFN_cuMemsetD8_v3020)drv_sym("cuMemsetD8", 3020);
    CHECK_OK(set(cuctx_mem_ptr(m), v, cuctx_mem_size(m)));
}

static unsigned char byte_of(cuctx_mem m, size_t at)
{
    PFN_cuMemcpyDtoH_v3020 get = (PFN_cuMemcpyDtoH_v3020)drv_sym("cuMemcpyDtoH", 3020);
    unsigned char v = 0;
    CHECK_OK(get(&v, cuctx_mem_ptr(m) + at, 1));
    return v;
}

/* Bug caught: the handle asked, or the mapping opened or closed, with the
 * wrong context current; the mapping freed with cuMemFree; its size not
 * the exported allocation's; counted as device memory. */
Test(ipc_mem, open_maps_into_its_context_and_destroy_closes_it_there)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    size_t mark = log_mark();
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    name_handle('m', cuctx_mem_ptr(q), "q");
    cr_assert_neq(cuctx_mem_ptr(q), 0);
    cr_assert_eq(cuctx_mem_size(q), BYTES, "the exported allocation's size");
    cr_assert_eq(stats().ipc_mems, 1);
    cr_assert_eq(stats().mems, 1, "the exporter's alone");
    cuctx_ctx owner = {0};
    CHECK_OK(cuctx_mem_ctx(q, &owner));
    cr_assert_eq(cuctx_ctx_raw(owner), cuctx_ctx_raw(b));
    CHECK_OK(cuctx_ctx_destroy(&owner));
    copy_in(q, 0x5a);
    cr_assert_eq(byte_of(m, BYTES - 1), 0x5a, "one memory: the exporter sees the importer's bytes");
    copy_in(m, 0x21);
    cr_assert_eq(byte_of(q, 17), 0x21);
    cr_assert_eq(last_call("cuIpcOpenMemHandle", mark).flags, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    CHECK_OK(cuctx_mem_destroy(&q));
    cr_assert_eq(q.id, 0);
    cr_assert_eq(stats().ipc_mems, 0);
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_MULTI(mark, "get(m)@A,open(q)@B,close(q)@B,free(m)@A");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: an opened mapping not tethered to its context: its close
 * after the context died names a dead mapping (a misuse; on the real
 * driver perhaps another mapping at the address by now). */
Test(ipc_mem, its_close_is_skipped_after_its_context_died)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, 0));
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(sim()->live(CUSIM_IPC_MEM), 0, "the mapping went with its context");
    cr_assert_eq(cuctx_mem_ptr(q), 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CHECK_OK(cuctx_mem_destroy(&q));
    cr_assert_eq(stats().stale_skips, skips + 1);
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_MULTI(mark, "free(m)@A");
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: the exporter's free before the importer's close not
 * possible to order right with cuctx: the importer closes first, the
 * exporter frees after, and nothing touches freed memory. (The other
 * order is the program's bug, documented: the simulator's misuse.) */
Test(ipc_mem, importer_closes_before_the_exporter_frees)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, 0));
    CHECK_OK(cuctx_mem_destroy(&q));
    CHECK_OK(cuctx_mem_destroy(&m));
    ASSERT_NO_MISUSE();
    /* the wrong order, seen by the simulator */
    CHECK_OK(cuctx_mem_alloc(&m, a, BYTES));
    CHECK_OK(cuctx_ipc_mem_get(m, &h));
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, 0));
    CHECK_OK(cuctx_mem_destroy(&m));
    PFN_cuMemsetD8_v3020 set = (PFN_cuMemsetD8_v3020)drv_sym("cuMemsetD8", 3020);
    cr_assert_eq(set(cuctx_mem_ptr(q), 1, 4), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(sim()->misuse_count(), 1);
    cr_assert(strstr(sim()->misuse_text(0), "after its exporter freed"), "%s", sim()->misuse_text(0));
    CHECK_OK(cuctx_mem_destroy(&q));        /* its close is still right */
    cr_assert_eq(sim()->misuse_count(), 1);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Documented: a handle opened twice in one context is one mapping, counted.
 * Bug caught: the second handle's destroy closing the first's mapping
 * (two closes are needed, one each), or cuctx refusing the second. */
Test(ipc_mem, opened_twice_in_one_context_each_handle_closes_once)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q1 = {0}, q2 = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q1, b, h, 0));
    CHECK_OK(cuctx_ipc_mem_open(&q2, b, h, 0));
    cr_assert_eq(cuctx_mem_ptr(q1), cuctx_mem_ptr(q2));
    cr_assert_eq(stats().ipc_mems, 2);
    CHECK_OK(cuctx_mem_destroy(&q1));
    cr_assert_eq(sim()->live(CUSIM_IPC_MEM), 1, "q2's open still counts");
    cr_assert_eq(byte_of(q2, 0), 0);
    CHECK_OK(cuctx_mem_destroy(&q2));
    cr_assert_eq(sim()->live(CUSIM_IPC_MEM), 0);
    cr_assert_eq(calls("cuIpcCloseMemHandle"), 2);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: the open in the exporting process (the driver's refusal)
 * returned without saying why, or leaving a handle. */
Test(ipc_mem, the_exporting_process_cannot_open_its_own_handle)
{
    NEED_DRIVER();
    NEED_SIM();     /* (the real driver's answer is test_sim's to measure) */
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0xdead};
    CUipcMemHandle h;
    new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_mem_alloc(&m, a, BYTES));
    CHECK_OK(cuctx_ipc_mem_get(m, &h));
    q.id = 0;
    cr_assert_eq(cuctx_ipc_mem_open(&q, b, h, 0), CUDA_ERROR_INVALID_CONTEXT);
    cr_assert(strstr(cuctx_last_error_message(), "another process"), "%s", cuctx_last_error_message());
    cr_assert_eq(q.id, 0);
    cr_assert_eq(stats().ipc_mems, 0);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: a stale, NULL or wrong-kind handle handed to the driver; a
 * failed get leaving a half-written handle that looks valid. */
Test(ipc_mem, get_refuses_what_cannot_be_exported_before_the_driver)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0}, stale = {0}, am = {0};
    cuctx_stream s = {0};
    CUipcMemHandle h, zero;
    memset(&zero, 0, sizeof zero);
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, 0));
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&am, s, BYTES));
    CHECK_OK(cuctx_mem_alloc(&stale, a, BYTES));
    CHECK_OK(cuctx_mem_destroy(&(cuctx_mem){stale.id}));
    unsigned long gets = calls("cuIpcGetMemHandle");
    memset(&h, 0x77, sizeof h);
    cr_assert_eq(cuctx_ipc_mem_get(stale, &h), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(memcmp(&h, &zero, sizeof h), 0, "zeroed on failure");
    cr_assert_eq(cuctx_ipc_mem_get(am, &h), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "stream-ordered"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_ipc_mem_get(q, &h), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "opened from another process"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_ipc_mem_get(m, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_ipc_mem_get((cuctx_mem){s.id}, &h), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(calls("cuIpcGetMemHandle"), gets, "none reached the driver");
    cr_assert_eq(cuctx_ipc_mem_open(NULL, b, h, 0), CUDA_ERROR_INVALID_VALUE);
    /* a handle already holding live memory is not overwritten */
    cr_assert_eq(cuctx_ipc_mem_open(&m, b, h, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(calls("cuIpcOpenMemHandle"), 1);
    CHECK_OK(cuctx_mem_destroy(&am));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_mem_destroy(&q));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* An IPC get as the process's first call to cuctx (Criterion runs each
 * test in a process of its own): the driver is loaded before the library
 * asks whether it has CUDA IPC, so the answer is the handle's refusal, not
 * "no CUDA IPC". Mutant killed: lib/ipc.c:69 (CUCTX_INIT_OR_RETURN of
 * get_begin removed; seed 31). */
Test(ipc_mem, a_get_as_the_first_call_loads_the_driver_first)
{
    CUipcMemHandle h, zero;
    memset(&zero, 0, sizeof zero);
    memset(&h, 0x77, sizeof h);
    CUresult rc = cuctx_ipc_mem_get((cuctx_mem){0}, &h);
    NEED_DRIVER();      /* (after: it would load the driver itself) */
    NEED_SIM();
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(memcmp(&h, &zero, sizeof h), 0, "zeroed on failure");
    cr_assert_eq(calls("cuIpcGetMemHandle"), 0);
}

/* Bug caught: an IPC handle of memory the exporter freed opening
 * something (the simulator refuses it, a misuse: the real driver's answer
 * is not measured), and cuctx then keeping a handle. */
Test(ipc_mem, a_handle_whose_memory_was_freed_opens_nothing)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(cuctx_ipc_mem_open(&q, b, h, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(q.id, 0);
    cr_assert_eq(stats().ipc_mems, 0);
    cr_assert_eq(sim()->misuse_count(), 1, "the simulator's stricter answer");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: a mapping left open when asking its size fails, the open
 * reported as failed (a leak of the mapping until its context dies). */
Test(ipc_mem, a_failed_size_query_closes_the_mapping)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    sim()->fail_call("cuMemGetAddressRange", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ipc_mem_open(&q, b, h, 0), CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(cuctx_last_error_message(), "it was closed"), "%s", cuctx_last_error_message());
    cr_assert_eq(q.id, 0);
    cr_assert_eq(sim()->live(CUSIM_IPC_MEM), 0);
    cr_assert_eq(calls("cuIpcCloseMemHandle"), 1);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: the stats and the leak report not telling opened memory from
 * allocated memory. */
Test(ipc_mem, stats_and_the_leak_report_name_the_kind)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    CUipcMemHandle h;
    ipc_setup(&a, &b, &m, &h);
    CHECK_OK(cuctx_ipc_mem_open(&q, b, h, 0));
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cuctx_leak_report(f);
    fclose(f);
    cr_assert(strstr(buf, "IPC-opened memory"), "%s", buf);
    cr_assert(strstr(buf, "test_multi.c"), "no create site: %s", buf);
    cr_assert_eq(stats().ipc_mems, 1);
    CHECK_OK(cuctx_destroy(&q));        /* the generic destroy knows it */
    cr_assert_eq(stats().ipc_mems, 0);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* ---- IPC events ------------------------------------------------------------- */

/* Bug caught: an opened event not a child of its context (its destroy
 * after the context died reaching the driver), or opened with the wrong
 * context current; an event without CU_EVENT_INTERPROCESS refused without
 * saying why. */
Test(ipc_event, an_opened_event_is_a_child_of_its_context)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_ipc_loopback(1);
    cuctx_ctx a = {0}, b = {0};
    cuctx_event timed = {0}, e = {0}, mine = {0}, again = {0};
    CUipcEventHandle h;
    new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 1, "B", POPPED);
    CHECK_OK(cuctx_event_create(&timed, a, 0));
    cr_assert_eq(cuctx_ipc_event_get(timed, &h), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "CU_EVENT_INTERPROCESS"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_event_create(&e, a, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    name_handle('e', H(cuctx_event_raw(e)), "e");
    size_t mark = log_mark();
    CHECK_OK(cuctx_ipc_event_get(e, &h));
    CHECK_OK(cuctx_ipc_event_open(&mine, b, h));
    name_handle('e', H(cuctx_event_raw(mine)), "mine");
    cr_assert_eq(stats().events, 3);
    CHECK_OK(cuctx_event_record(mine, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_synchronize(mine));
    CHECK_OK(cuctx_event_destroy(&mine));
    EXPECT_MULTI(mark, "getev(e)@A,openev(mine)@B,evdestroy(mine)@0");
    CHECK_OK(cuctx_ipc_event_open(&again, b, h));
    CHECK_OK(cuctx_ctx_destroy(&b));
    mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&again));
    EXPECT_MULTI(mark, "");
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_event_destroy(&timed));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* Bug caught: a NULL or stale handle dereferenced; the process's own
 * handle (the driver's refusal) not explained. */
Test(ipc_event, bad_input_is_refused)
{
    NEED_DRIVER();
    NEED_SIM();     /* (the real driver's answer to its own handle is test_sim's to measure) */
    cuctx_ctx a = {0}, b = {0};
    cuctx_event e = {0}, stale = {0}, mine = {0};
    CUipcEventHandle h;
    new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 0, "B", POPPED);
    CHECK_OK(cuctx_event_create(&e, a, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_event_create(&stale, a, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_event_destroy(&(cuctx_event){stale.id}));
    cr_assert_eq(cuctx_ipc_event_get(e, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_ipc_event_get(stale, &h), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_ipc_event_open(NULL, b, h), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_ipc_event_get(e, &h));
    cr_assert_eq(cuctx_ipc_event_open(&mine, b, h), CUDA_ERROR_INVALID_CONTEXT, "the exporting process's own");
    cr_assert(strstr(cuctx_last_error_message(), "another process"), "%s", cuctx_last_error_message());
    cr_assert_eq(mine.id, 0);
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Documented (cuctx.h, CUDA IPC): on failure *out is zeroed. An event the
 * driver refuses to export (made without CU_EVENT_INTERPROCESS) leaves the
 * caller's handle all zero, whatever it held before. Mutant killed:
 * lib/ipc.c:164 `const` (`memset(out, 1, ...)` after the refusal: every
 * byte 1; seed 41). */
Test(ipc_event, a_refused_get_leaves_the_handle_zeroed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0};
    cuctx_event timed = {0};
    CUipcEventHandle h, zero;
    memset(&zero, 0, sizeof zero);
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_event_create(&timed, a, 0));
    size_t mark = log_mark();
    memset(&h, 0xab, sizeof h);
    cr_assert_eq(cuctx_ipc_event_get(timed, &h), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(calls_on("cuIpcGetEventHandle", H(cuctx_event_raw(timed)), mark), 1, "the driver was asked");
    cr_assert_eq(last_call("cuIpcGetEventHandle", mark).rc, CUDA_ERROR_INVALID_VALUE, "and refused");
    cr_assert_eq(memcmp(&h, &zero, sizeof h), 0, "the refused get left bytes in the handle");
    CHECK_OK(cuctx_event_destroy(&timed));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* ---- sample seed 53 ---- */

/* {0} as both contexts names the current context twice: with one current
 * it is the same context twice (refused as such), with none it is "no
 * context current", as {0} is anywhere else; neither reaches the driver.
 * Mutant killed: lib/peer.c:72 `const` (`from.id != 1`: two {0} handles
 * taken for the same handle before anyone asked which context {0} is, so
 * the missing current context was reported as a bad pair; seed 53). */
Test(peer, two_null_handles_name_the_current_context_twice_or_none)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    cuctx_peer p = {0};
    new_ctx(&a, 0, "A", POPPED);
    size_t mark = log_mark();
    cr_assert_eq(cuctx_peer_enable(&p, (cuctx_ctx){0}, (cuctx_ctx){0}), CUDA_ERROR_INVALID_CONTEXT, "none current");
    cr_assert(strstr(cuctx_last_error_message(), "same context") == NULL, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_ctx_set_current(a));
    cr_assert_eq(cuctx_peer_enable(&p, (cuctx_ctx){0}, (cuctx_ctx){0}), CUDA_ERROR_INVALID_VALUE, "A twice");
    cr_assert(strstr(cuctx_last_error_message(), "same context"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_pop_current());
    cr_assert_eq(p.id, 0);
    cr_assert_eq(calls_on("cuCtxEnablePeerAccess", H(cuctx_ctx_raw(a)), mark), 0);
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* ---- mutation survivors of lib/ipc.c and lib/peer.c (h5) ---- */

/* A get whose switch to the memory's context fails reports the switch,
 * not the driver's get, which was never asked; and a get that succeeds
 * leaves the last error as it was (documented: successful calls leave it
 * unchanged). Mutants killed: lib/ipc.c:49 `const` (`switched = 1`: the
 * failed switch reported as a failed cuIpcGetMemHandle) and lib/ipc.c:57
 * `lcr` (`switched || rc != CUDA_SUCCESS`: the same, and a successful get
 * recorded as a failure with CUDA_SUCCESS). */
Test(ipc_mem, a_get_whose_switch_fails_names_the_switch_and_a_good_get_records_nothing)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0};
    CUipcMemHandle h, zero;
    memset(&zero, 0, sizeof zero);
    ipc_setup(&a, &b, &m, &h);
    unsigned long gets = calls("cuIpcGetMemHandle");
    memset(&h, 0x77, sizeof h);
    sim()->fail_call("cuCtxPushCurrent", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_ipc_mem_get(m, &h), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(calls("cuIpcGetMemHandle"), gets, "the driver's get was not reached");
    cr_assert(strstr(cuctx_last_error_message(), "cannot make context"), "%s", cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "cuIpcGetMemHandle") == NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(memcmp(&h, &zero, sizeof h), 0, "zeroed on failure");
    /* a get that works after it: the failure stays the last error */
    CHECK_OK(cuctx_ipc_mem_get(m, &h));
    cr_assert_eq(calls("cuIpcGetMemHandle"), gets + 1);
    cr_assert_neq(memcmp(&h, &zero, sizeof h), 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN, "%s", cuctx_result_name(cuctx_last_error()));
    cr_assert(strstr(cuctx_last_error_message(), "cannot make context"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* An IPC open as the process's first call to cuctx (Criterion runs each
 * test in a process of its own): the driver is loaded before the library
 * asks whether it has CUDA IPC, so the answer is that no context is
 * current ({0} names the current one), not "no CUDA IPC". Mutant killed:
 * lib/ipc.c:139 `call` (CUCTX_INIT_OR_RETURN of cuctx_ipc_mem_open_at
 * removed). */
Test(ipc_mem, an_open_as_the_first_call_loads_the_driver_first)
{
    cuctx_mem q = {0};
    CUipcMemHandle h;
    memset(&h, 0, sizeof h);
    CUresult rc = cuctx_ipc_mem_open(&q, (cuctx_ctx){0}, h, 0);
    NEED_DRIVER();      /* (after: it would load the driver itself) */
    NEED_SIM();
    cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(q.id, 0);
    cr_assert_eq(calls("cuIpcOpenMemHandle"), 0);
}

/* The same for an IPC event's open. Mutant killed: lib/ipc.c:196 `call`
 * (CUCTX_INIT_OR_RETURN of cuctx_ipc_event_open_at removed). */
Test(ipc_event, an_open_as_the_first_call_loads_the_driver_first)
{
    cuctx_event e = {0};
    CUipcEventHandle h;
    memset(&h, 0, sizeof h);
    CUresult rc = cuctx_ipc_event_open(&e, (cuctx_ctx){0}, h);
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(e.id, 0);
    cr_assert_eq(calls("cuIpcOpenEventHandle"), 0);
}

/* An event opened into a handle that holds a live event is refused before
 * the driver, and the live event is left as it was (documented for every
 * create). Mutant killed: lib/ipc.c:195 `ret` (the claim's refusal
 * returned as success, the open not made and the caller told it was). */
Test(ipc_event, an_open_into_a_live_event_is_refused_before_the_driver)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_ipc_loopback(1);
    cuctx_ctx a = {0}, b = {0};
    cuctx_event e = {0}, live = {0};
    CUipcEventHandle h;
    new_ctx(&a, 0, "A", POPPED);
    new_ctx(&b, 1, "B", POPPED);
    CHECK_OK(cuctx_event_create(&e, a, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_event_create(&live, b, 0));
    CHECK_OK(cuctx_ipc_event_get(e, &h));
    uint64_t was = live.id;
    CUevent raw = cuctx_event_raw(live);
    cr_assert_eq(cuctx_ipc_event_open(&live, b, h), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(live.id, was, "the live event's handle kept");
    cr_assert_eq(cuctx_event_raw(live), raw);
    cr_assert_eq(calls("cuIpcOpenEventHandle"), 0);
    cr_assert_eq(stats().events, 2);
    CHECK_OK(cuctx_event_destroy(&live));
    CHECK_OK(cuctx_event_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A peer enable as the process's first call to cuctx: the driver is
 * loaded before the library asks whether it has peer access, so two {0}
 * handles with no context current are "no context current". Mutant
 * killed: lib/peer.c:69 `call` (CUCTX_INIT_OR_RETURN of
 * cuctx_peer_enable_at removed). */
Test(peer, an_enable_as_the_first_call_loads_the_driver_first)
{
    cuctx_peer p = {0};
    CUresult rc = cuctx_peer_enable(&p, (cuctx_ctx){0}, (cuctx_ctx){0});
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(p.id, 0);
    cr_assert_eq(calls("cuCtxEnablePeerAccess"), 0);
}

/* A get run on a thread of its own, held after its switch's
 * cuCtxPushCurrent (cusim_hold_after) while the test writes `fill` into
 * its out-argument: what a driver that writes part of a handle before it
 * fails would leave there. */
struct held_get_h5 {
    int event;
    cuctx_mem m;
    cuctx_event e;
    union {
        CUipcMemHandle mem;
        CUipcEventHandle ev;
    } h;
    CUresult rc;
};

static void *held_get_run_h5(void *arg)
{
    struct held_get_h5 *g = arg;
    g->rc = g->event ? cuctx_ipc_event_get(g->e, &g->h.ev) : cuctx_ipc_mem_get(g->m, &g->h.mem);
    return NULL;
}

static void held_get_h5(struct held_get_h5 *g, unsigned char fill)
{
    pthread_t t;
    sim()->hold_after("cuCtxPushCurrent");
    cr_assert_eq(pthread_create(&t, NULL, held_get_run_h5, g), 0);
    for (int i = 0; i < 10000 && sim()->sleeping() == 0; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    int held = sim()->sleeping() > 0;
    if (held)
        memset(&g->h, fill, sizeof g->h);
    sim()->let_go();
    pthread_join(t, NULL);
    cr_assert(held, "the get was not held after its cuCtxPushCurrent");
}

/* Documented (cuctx.h, CUDA IPC): on failure *out is zeroed - also where
 * the handle holds bytes by the time the driver's get fails (here the
 * test's, written while the get is held before the driver is called; in
 * the field, a driver's partial write). Mutant killed: lib/ipc.c:96
 * `call` (the memset after a failed get removed: only get_begin's zeroing,
 * done before the driver was called, is left). */
Test(ipc_mem, a_get_the_driver_fails_zeroes_what_the_handle_held_then)
{
    cuctx_ctx a = {0}, b = {0};
    struct held_get_h5 g = {0};
    CUipcMemHandle zero;
    memset(&zero, 0, sizeof zero);
    ipc_setup(&a, &b, &g.m, &g.h.mem);
    size_t mark = log_mark();
    sim()->fail_call("cuIpcGetMemHandle", 1, CUDA_ERROR_UNKNOWN);
    held_get_h5(&g, 0x77);
    cr_assert_eq(g.rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(calls_on("cuIpcGetMemHandle", cuctx_mem_ptr(g.m), mark), 1, "the driver was asked");
    cr_assert_eq(memcmp(&g.h.mem, &zero, sizeof zero), 0, "the failed get left bytes in the handle");
    CHECK_OK(cuctx_mem_destroy(&g.m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* The same for an event the driver refuses to export (made without
 * CU_EVENT_INTERPROCESS). Mutant killed: lib/ipc.c:164 `call` (the memset
 * after the refusal removed). */
Test(ipc_event, a_refused_get_zeroes_what_the_handle_held_then)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0};
    struct held_get_h5 g = {.event = 1};
    CUipcEventHandle zero;
    memset(&zero, 0, sizeof zero);
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_event_create(&g.e, a, 0));
    size_t mark = log_mark();
    held_get_h5(&g, 0xab);
    cr_assert_eq(g.rc, CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(calls_on("cuIpcGetEventHandle", H(cuctx_event_raw(g.e)), mark), 1, "the driver was asked");
    cr_assert_eq(last_call("cuIpcGetEventHandle", mark).rc, CUDA_ERROR_INVALID_VALUE, "and refused");
    cr_assert_eq(memcmp(&g.h.ev, &zero, sizeof zero), 0, "the refused get left bytes in the handle");
    CHECK_OK(cuctx_event_destroy(&g.e));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}
