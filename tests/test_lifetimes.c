/* SPDX-License-Identifier: MIT */
/* test_lifetimes.c - issue 17: where a context's life and the calls made
 * in it cross - a primary context ending under a child call in flight, a
 * reset of a primary context cuctx knows as borrowed, a thread cancelled
 * inside a context destroy, scopes over levels whose contexts died or were
 * replaced. Public API, testlib and the simulator's controls only; races
 * are made deterministic with the simulator's delays, hangs turned into
 * failures by alarm(). */
#include "testlib.h"

#include <cudaTypedefs.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define H(p) ((uint64_t)(uintptr_t)(p))

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until a call is asleep in its simulated delay (at most 5 s). */
static void wait_sleeping(void)
{
    for (int i = 0; i < 5000 && sim()->sleeping() == 0; i++)
        sleep_ms(1);
    cr_assert_gt(sim()->sleeping(), 0, "no call entered its delay");
}

/* ---- 1: a primary context ending under a child destroy in flight ---------- */

struct mem_arg { cuctx_mem m; CUresult rc; };

static void *destroy_mem(void *p)
{
    struct mem_arg *a = p;
    a->rc = cuctx_mem_destroy(&a->m);
    return NULL;
}

/* p2 keeps a retain across a reset; p3 retains the new primary context,
 * allocates m3 and lets go. cuctx's last retain is then p2's, whose entry
 * the reset ended: its release must still wait for m3's free in flight,
 * which otherwise lands after the context ended, on the new owner of m3's
 * address. */
Test(lifetimes, the_last_primary_release_through_a_handle_from_before_a_reset_waits_for_child_calls)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    cuctx_ctx p2 = {0}, p3 = {0};
    cuctx_ctx other = {0};
    new_ctx(&other, 0, "other", POPPED);
    struct mem_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    cuctx_mem mine = {0};
    CHECK_OK(cuctx_ctx_primary(&p2, 0));
    CHECK_OK(cuctx_ctx_primary_reset(0));
    CHECK_OK(cuctx_ctx_primary(&p3, 0));
    CHECK_OK(cuctx_mem_alloc(&a.m, p3, 4096));
    CUdeviceptr addr = cuctx_mem_ptr(a.m);
    CHECK_OK(cuctx_ctx_destroy(&p3));
    cr_assert_eq(sim()->primary_refs(0), 1, "p2's retain is left");
    sim()->set_delay("cuMemFree", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_mem, &a), 0);
    wait_sleeping();                        /* m3's free is under way */
    sim()->set_delay("cuMemFree", 0);
    CHECK_OK(cuctx_ctx_destroy(&p2));       /* cuctx's last retain: the context ends */
    cr_assert_eq(sim()->primary_refs(0), 0);
    CHECK_OK(cuctx_mem_alloc(&mine, other, 4096));
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(a.rc);
    cr_assert_eq(cuctx_mem_ptr(mine), addr, "the new allocation took m3's address (recycling)");
    cr_assert_eq(sim()->is_live(CUSIM_MEM, addr), 1,
                 "m3's free reached the driver after its context ended and freed the new owner's allocation");
    CHECK_OK(cuctx_mem_destroy(&mine));
    CHECK_OK(cuctx_ctx_destroy(&other));
    cr_assert_eq(misuses(), 0);
}

/* ---- 2: a reset of a primary context cuctx knows as borrowed -------------- */

struct stream_arg { cuctx_stream s; CUresult rc; };

static void *destroy_stream(void *p)
{
    struct stream_arg *a = p;
    a->rc = cuctx_stream_destroy(&a->s);
    return NULL;
}

/* The stream's destroy is slowed on a thread; the reset on this one must
 * wait for it, whatever cuctx knows the primary context as. */
static void reset_under_a_stream_destroy(struct stream_arg *a)
{
    sim()->set_delay("cuStreamDestroy", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_stream, a), 0);
    wait_sleeping();
    sim()->set_delay("cuStreamDestroy", 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_ctx_primary_reset(0));
    cr_assert_eq(pthread_join(t, NULL), 0);
    static const char *const seq[] = {"cuStreamDestroy", "cuDevicePrimaryCtxReset", NULL};
    char buf[256];
    cr_assert_str_eq(log_seq(mark, seq, buf, sizeof buf), "cuStreamDestroy,cuDevicePrimaryCtxReset",
                     "the stream's destroy reached the driver after the reset freed it: %s", buf);
    cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)");
    CHECK_OK(a->rc);
}

Test(lifetimes, a_reset_waits_for_child_calls_in_a_borrowed_primary_context)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)drv_sym("cuDevicePrimaryCtxRetain", 7000);
    CUcontext pc = NULL;
    CHECK_OK(retain(&pc, 0));               /* as the runtime would */
    cuctx_ctx b = {0};
    struct stream_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_borrow(&b, pc));
    CHECK_OK(cuctx_stream_create(&a.s, b, 0, 0));
    reset_under_a_stream_destroy(&a);
    CHECK_OK(cuctx_ctx_destroy(&b));
}

Test(lifetimes, a_reset_waits_for_child_calls_in_a_primary_context_met_as_current)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)drv_sym("cuDevicePrimaryCtxRetain", 7000);
    PFN_cuCtxSetCurrent_v4000 set_current = (PFN_cuCtxSetCurrent_v4000)drv_sym("cuCtxSetCurrent", 4000);
    CUcontext pc = NULL;
    CHECK_OK(retain(&pc, 0));
    CHECK_OK(set_current(pc));
    struct stream_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_stream_create(&a.s, (cuctx_ctx){0}, 0, 0));
    CHECK_OK(set_current(NULL));
    reset_under_a_stream_destroy(&a);
}

/* ---- 3: a thread cancelled inside a context destroy ------------------------ */

struct ctx_arg { cuctx_ctx c; CUresult rc; };

static void *destroy_ctx(void *p)
{
    struct ctx_arg *a = p;
    a->rc = cuctx_ctx_destroy(&a->c);
    pthread_testcancel();   /* a cancel put off by the destroy lands here */
    return NULL;
}

struct sync_arg { cuctx_event ev; CUresult rc; };

static void *synchronize(void *p)
{
    struct sync_arg *a = p;
    a->rc = cuctx_event_synchronize(a->ev);
    return NULL;
}

/* Runs fn(arg) on a thread, slowed in the driver's entry point (a delay
 * of the simulator's), and cancels it there: the thread ends cancelled. */
static void cancel_in_driver_call(const char *entry, void *(*fn)(void *), void *arg)
{
    pthread_t t;
    void *res = NULL;
    sim()->set_delay(entry, 300000);
    cr_assert_eq(pthread_create(&t, NULL, fn, arg), 0);
    wait_sleeping();
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    sim()->set_delay(entry, 0);
}

/* After the cancelled destroy the context is gone for good: its child's
 * destroy is skipped (no hang on a context left closing), and the driver's
 * context was destroyed (no leak). */
static void context_ended(cuctx_event *ev, CUcontext raw)
{
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_event_destroy(ev));
    cr_assert_eq(stats().stale_skips, skips + 1, "the event's destroy was not skipped");
    cr_assert_eq(sim()->is_live(CUSIM_CONTEXT, H(raw)), 0, "the driver's context was left alive");
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

Test(lifetimes, a_thread_cancelled_in_the_drivers_context_destroy_still_ends_the_context)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct ctx_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&a.c, 0, "a", POPPED);
    CUcontext raw = cuctx_ctx_raw(a.c);
    cuctx_event ev = {0};
    CHECK_OK(cuctx_event_create(&ev, a.c, 0));
    cancel_in_driver_call("cuCtxDestroy", destroy_ctx, &a);
    context_ended(&ev, raw);
}

Test(lifetimes, a_thread_cancelled_while_its_context_destroy_drains_still_ends_the_context)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct ctx_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&a.c, 0, "a", POPPED);
    CUcontext raw = cuctx_ctx_raw(a.c);
    struct sync_arg s = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_event_create(&s.ev, a.c, 0));
    sim()->set_delay("cuEventSynchronize", 500000);
    pthread_t ts, t;
    void *res = NULL;
    cr_assert_eq(pthread_create(&ts, NULL, synchronize, &s), 0);
    wait_sleeping();                        /* the synchronize holds the context */
    cr_assert_eq(pthread_create(&t, NULL, destroy_ctx, &a), 0);
    sleep_ms(100);                          /* the destroy is waiting in its drain */
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    cr_assert_eq(pthread_join(ts, NULL), 0);
    CHECK_OK(s.rc);
    sim()->set_delay("cuEventSynchronize", 0);
    context_ended(&s.ev, raw);
}

/* Bug caught: the hold of a stream (registry.h, "holds of children") by a
 * stream-ordered allocation or free not let go when a cancel unwinds it in
 * the driver: the thread's own cleanup handler, which destroys the stream
 * (its destroy then scans the hazard slots), waits for ever on its own
 * hold (the alarm ends it). */
struct async_arg { cuctx_stream s; cuctx_mem m; CUresult destroyed; };
static void destroy_its_stream(void *p)
{
    struct async_arg *a = p;
    a->destroyed = cuctx_stream_destroy(&a->s);
}
static void *alloc_on_stream(void *p)
{
    struct async_arg *a = p;
    pthread_cleanup_push(destroy_its_stream, a);
    (void)cuctx_mem_alloc_async(&a->m, a->s, 4096);
    pthread_cleanup_pop(0);
    return NULL;
}
static void *free_on_stream(void *p)
{
    struct async_arg *a = p;
    pthread_cleanup_push(destroy_its_stream, a);
    (void)cuctx_mem_destroy(&a->m);
    pthread_cleanup_pop(0);
    return NULL;
}
Test(lifetimes, a_thread_cancelled_in_a_stream_ordered_call_lets_its_stream_go)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx c = {0};
    struct async_arg a = {{0}, {0}, CUDA_ERROR_UNKNOWN}, b = {{0}, {0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&c, 0, "a", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&a.s, c, 0, 0));
    cancel_in_driver_call("cuMemAllocAsync", alloc_on_stream, &a);     /* the stream's first hold */
    CHECK_OK(a.destroyed);
    CHECK_OK(cuctx_stream_create(&b.s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&b.m, b.s, 4096));
    cancel_in_driver_call("cuMemFreeAsync", free_on_stream, &b);
    CHECK_OK(b.destroyed);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: the holds of a graph exec launch (the exec, the stream and
 * their context in the thread's hazard slots, cuctx__child_hold_fast2,
 * tether.h; or both pinned, the first time) not let go when a cancel
 * unwinds it in the driver: the thread's cleanup handler, which destroys
 * the exec and the stream (each destroy then scans the hazard slots or
 * waits for the pins), waits for ever on its own holds (the alarm ends
 * it). */
struct launch_arg { cuctx_graph_exec ge; cuctx_stream s; CUresult destroyed; };
static void destroy_its_exec(void *p)
{
    struct launch_arg *a = p;
    a->destroyed = cuctx_graph_exec_destroy(&a->ge);
    if (a->destroyed == CUDA_SUCCESS)
        a->destroyed = cuctx_stream_destroy(&a->s);
}
static void *launch_on_stream(void *p)
{
    struct launch_arg *a = p;
    pthread_cleanup_push(destroy_its_exec, a);
    (void)cuctx_stream_synchronize(a->s);  /* (its hazard slots, taken outside the delayed call) */
    (void)cuctx_graph_exec_launch(a->ge, a->s);
    pthread_cleanup_pop(0);
    return NULL;
}
static void cancelled_launch(int first)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx c = {0};
    struct launch_arg a = {{0}, {0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&c, 0, "a", LEFT_CURRENT);
    CHECK_OK(cuctx_graph_exec_instantiate(&a.ge, c, test_graph(c), 0));
    CHECK_OK(cuctx_stream_create(&a.s, c, 0, 0));
    if (!first)
        CHECK_OK(cuctx_graph_exec_launch(a.ge, a.s));      /* both held once: the next launch's fast path */
    cancel_in_driver_call("cuGraphLaunch", launch_on_stream, &a);
    CHECK_OK(a.destroyed);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
    graph_fini();
}
Test(lifetimes, a_thread_cancelled_in_its_first_graph_launch_lets_the_exec_and_stream_go) { cancelled_launch(1); }
Test(lifetimes, a_thread_cancelled_in_a_graph_launch_lets_the_exec_and_stream_go) { cancelled_launch(0); }

/* ---- 3: a thread cancelled inside a child's destroy ------------------------ */

/* The report's count of live objects, and whether any line names kind. */
static size_t leak_count(const char *kind, int *named)
{
    char *text = NULL;
    size_t n = 0, alive = (size_t)-1;
    FILE *f = open_memstream(&text, &n);
    cr_assert_not_null(f);
    cuctx_leak_report(f);
    fclose(f);
    const char *last = strstr(text, "cuctx: ");
    for (const char *p = last; p; p = strstr(p + 1, "cuctx: "))
        last = p;
    cr_assert(last && sscanf(last, "cuctx: %zu object", &alive) == 1, "no count in the report:\n%s", text);
    *named = strstr(text, kind) != NULL;
    free(text);
    return alive;
}

/* Cancelled while its cuStreamDestroy is under way: the driver was asked,
 * with what outcome nobody knows, so the handle ends there - no slot left
 * closing for good, counted in the stats but missing from the report. */
Test(lifetimes, a_thread_cancelled_in_the_drivers_stream_destroy_still_ends_the_handle)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx c = {0};
    new_ctx(&c, 0, "c", POPPED);
    struct stream_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_stream_create(&a.s, c, 0, 0));
    cuctx_stream copy = a.s;
    cr_assert_eq(stats().streams, 1);
    cancel_in_driver_call("cuStreamDestroy", destroy_stream, &a);
    int named = 1;
    cr_assert_eq(stats().streams, 0, "the cancelled destroy left its stream counted");
    cr_assert_eq(leak_count("stream", &named), 1, "the report counts the context alone");
    cr_assert_not(named, "the report names the stream");
    cr_assert_eq(cuctx_stream_destroy(&copy), CUDA_ERROR_INVALID_HANDLE, "the handle ended");
    CHECK_OK(cuctx_ctx_destroy(&c));        /* the cancelled thread holds nothing */
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

/* The same for a kind whose destroy makes its context current: the
 * thread's own cleanup handler, which runs after cuctx's part of the
 * unwinding, finds its current context as it was and nothing held (a
 * context destroy there would wait for the thread's own hold for good). */
struct mem_cancel { cuctx_mem m; cuctx_ctx c; CUcontext cur; CUresult rc; size_t mems; };

static void mem_cancel_handler(void *p)
{
    struct mem_cancel *a = p;
    a->cur = current();
    a->mems = stats().mems;
    a->rc = cuctx_ctx_destroy(&a->c);
}

static void *destroy_mem_cancellable(void *p)
{
    struct mem_cancel *a = p;
    pthread_cleanup_push(mem_cancel_handler, a);
    cuctx_mem_destroy(&a->m);
    pthread_cleanup_pop(0);
    return NULL;
}

/* A create cancelled in its driver call: its thread's cleanup handler
 * finds nothing held, its current context as it was, and no object
 * counted (the driver may have made one, which nobody can name). */
static void *alloc_cancellable(void *p)
{
    struct mem_cancel *a = p;
    pthread_cleanup_push(mem_cancel_handler, a);
    cuctx_mem_alloc(&a->m, a->c, 4096);
    pthread_cleanup_pop(0);
    return NULL;
}

/* The two above, one a test: the call cancelled (a free of an allocation
 * made first, or the alloc), and what its thread's cleanup handler found. */
struct mem_case { const char *entry, *what; void *(*call)(void *); int allocated; };
static const struct mem_case mem_free = {"cuMemFree", "free", destroy_mem_cancellable, 1};
static const struct mem_case mem_alloc = {"cuMemAlloc", "alloc", alloc_cancellable, 0};

static void cancel_a_mem_call(const struct mem_case *k)
{
    struct mem_cancel a = {{0}, {0}, (CUcontext)1, CUDA_ERROR_UNKNOWN, 99};
    new_ctx(&a.c, 0, "c", POPPED);
    if (k->allocated)
        CHECK_OK(cuctx_mem_alloc(&a.m, a.c, 4096));
    cancel_in_driver_call(k->entry, k->call, &a);
    cr_assert_null(a.cur, "the cancelled %s left its context current", k->what);
    cr_assert_eq(a.mems, 0, "the cancelled %s left its allocation counted", k->what);
    if (!k->allocated)
        cr_assert_eq(a.m.id, 0, "the handle was filled");
    CHECK_OK(a.rc);
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

/* Cancelled before its driver call, while the destroy makes the child's
 * context current (cuCtxPushCurrent): the driver was never asked, so the
 * handle lives on - counted, its memory alive - and a destroy through a
 * copy of it frees the memory once. The same for a child of an owned
 * context and of a borrowed one (whose destroy is the out-of-line
 * cuctx__child_destroy_counted). Mutants killed: lib/tether.c:183
 * (`cuctx__reopen(s);` of the unwinding removed: the handle left closing
 * for good) and lib/tether.c:155 (the borrowed kind's guard starting as
 * if the driver had been called: the handle freed, the memory leaked;
 * seed 31). */
static void cancel_a_destroy_before_its_driver_call(int borrowed)
{
    CUcontext raw = NULL;
    cuctx_ctx c = {0};
    if (borrowed) {
        raw = raw_ctx_create(0, POPPED);
        CHECK_OK(cuctx_ctx_borrow(&c, raw));
    } else {
        new_ctx(&c, 0, "c", POPPED);
    }
    struct mem_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_mem_alloc(&a.m, c, 4096));
    cuctx_mem copy = a.m;
    CUdeviceptr ptr = cuctx_mem_ptr(a.m);
    EXPECT_CURRENT(NULL);
    cancel_in_driver_call("cuCtxPushCurrent", destroy_mem, &a);
    cr_assert_eq(calls_on("cuMemFree", H(ptr), 0), 0, "the driver was asked to free");
    cr_assert_eq(sim()->is_live(CUSIM_MEM, H(ptr)), 1);
    cr_assert_eq(stats().mems, 1, "the handle whose destroy never reached the driver ended");
    CHECK_OK(cuctx_mem_destroy(&copy));
    cr_assert_eq(calls_on("cuMemFree", H(ptr), 0), 1);
    cr_assert_eq(sim()->is_live(CUSIM_MEM, H(ptr)), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (borrowed)
        raw_ctx_destroy(raw);
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

Test(lifetimes, a_thread_cancelled_before_its_childs_destroy_reached_the_driver_leaves_the_child)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_destroy_before_its_driver_call(0);
}

Test(lifetimes, a_thread_cancelled_before_its_borrowed_childs_destroy_reached_the_driver_leaves_the_child)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_destroy_before_its_driver_call(1);
}

/* The same for a pair (peer access, tethered to both its contexts): its
 * destroy, cancelled while it makes the first context current
 * (cuCtxPushCurrent), never reached cuCtxDisablePeerAccess, so the handle
 * lives on - counted, access still enabled - and a destroy through a copy
 * of it disables the access once; both contexts' entries were let go, so
 * their destroys end. Mutant killed: lib/tether.c:291 (the pair's guard
 * `{1, 0, s, &sw}` made `{0, 0, s, &sw}`, never armed: the handle left
 * closing for good; seed 41). */
struct peer_arg { cuctx_peer p; CUresult rc; };

static void *destroy_peer(void *p)
{
    struct peer_arg *a = p;
    a->rc = cuctx_peer_destroy(&a->p);
    return NULL;
}

Test(lifetimes, a_thread_cancelled_before_its_pairs_destroy_reached_the_driver_leaves_the_pair)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, "a", POPPED), rb = new_ctx(&b, 1, "b", POPPED);
    struct peer_arg p = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_peer_enable(&p.p, a, b));
    cuctx_peer copy = p.p;
    cr_assert(sim()->peer_enabled(H(ra), H(rb)));
    unsigned long disables = calls("cuCtxDisablePeerAccess");
    EXPECT_CURRENT(NULL);
    cancel_in_driver_call("cuCtxPushCurrent", destroy_peer, &p);
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables, "the driver was asked to disable");
    cr_assert(sim()->peer_enabled(H(ra), H(rb)));
    cr_assert_eq(stats().peers, 1, "the pair whose destroy never reached the driver ended");
    CHECK_OK(cuctx_peer_destroy(&copy));
    cr_assert_eq(copy.id, 0);
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables + 1);
    cr_assert_not(sim()->peer_enabled(H(ra), H(rb)));
    cr_assert_eq(stats().peers, 0);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

Test(lifetimes, a_thread_cancelled_in_the_drivers_mem_free_leaves_its_current_context_and_holds_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_mem_call(&mem_free);
}

Test(lifetimes, a_thread_cancelled_in_the_drivers_alloc_leaves_its_current_context_and_holds_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_mem_call(&mem_alloc);
}

/* A child call cancelled in its driver call (here cuEventSynchronize),
 * or a context call that switched (cuCtxSynchronize): the thread's own
 * cleanup handler finds nothing held - destroying the event and its
 * context there would wait for the thread's own pin and hold for good -
 * and its current context as it was. */
struct use_cancel { cuctx_event ev; cuctx_ctx c; int sync_ctx; CUcontext cur; CUresult ev_rc, ctx_rc; };

static void use_cancel_handler(void *p)
{
    struct use_cancel *a = p;
    a->cur = current();
    a->ev_rc = cuctx_event_destroy(&a->ev);
    a->ctx_rc = cuctx_ctx_destroy(&a->c);
}

static void *use_cancellable(void *p)
{
    struct use_cancel *a = p;
    pthread_cleanup_push(use_cancel_handler, a);
    if (a->sync_ctx)
        cuctx_ctx_synchronize(a->c);
    else
        cuctx_event_synchronize(a->ev);
    pthread_cleanup_pop(0);
    return NULL;
}

static void cancel_a_use(int sync_ctx, const char *slowed)
{
    struct use_cancel a = {{0}, {0}, sync_ctx, (CUcontext)1, CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN};
    new_ctx(&a.c, 0, "c", POPPED);
    CHECK_OK(cuctx_event_create(&a.ev, a.c, 0));
    cancel_in_driver_call(slowed, use_cancellable, &a);
    cr_assert_null(a.cur, "the cancelled %s left its context current", slowed);
    CHECK_OK(a.ev_rc);
    CHECK_OK(a.ctx_rc);
    cr_assert_eq(stats().events, 0);
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

Test(lifetimes, a_thread_cancelled_in_a_child_calls_driver_call_holds_nothing_in_its_cleanup_handlers)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_use(0, "cuEventSynchronize");
}

Test(lifetimes, a_thread_cancelled_in_a_context_synchronize_finds_its_context_as_it_was)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cancel_a_use(1, "cuCtxSynchronize");
}

/* A child call that checks its context's id (a borrowed context) and is
 * cancelled in that check: the hold it had taken for the check goes too. */
struct check_cancel { cuctx_event ev; CUcontext raw; CUresult rc; };

static void check_cancel_handler(void *p)
{
    struct check_cancel *a = p;
    a->rc = cuctx_event_destroy(&a->ev);
}

static void *query_cancellable(void *p)
{
    struct check_cancel *a = p;
    pthread_cleanup_push(check_cancel_handler, a);
    cuctx_event_query(a->ev);
    pthread_cleanup_pop(0);
    return NULL;
}

Test(lifetimes, a_thread_cancelled_while_a_child_call_checks_its_contexts_id_holds_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext popped = NULL;
    struct check_cancel a = {{0}, NULL, CUDA_ERROR_UNKNOWN};
    cuctx_ctx b = {0};
    CHECK_OK(create(&a.raw, 0, 0));
    CHECK_OK(pop(&popped));
    CHECK_OK(cuctx_ctx_borrow(&b, a.raw));
    CHECK_OK(cuctx_event_create(&a.ev, b, 0));
    cancel_in_driver_call("cuCtxGetId", query_cancellable, &a);
    CHECK_OK(a.rc);
    cr_assert_eq(stats().events, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(destroy(a.raw));
    cr_assert_eq(misuses(), 0);
}

/* ---- 4: nested scopes over a level whose address a new context took ------- */

/* The program's own context P is current; a scope inside a scope finds its
 * previous context A destroyed and its address taken by C: the inner exit
 * takes A's level off the stack, and the outer exit must count that. */
Test(lifetimes, nested_scopes_over_a_destroyed_level_leave_the_programs_context_current)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    CUcontext P = NULL;
    cuctx_ctx x = {0}, b = {0}, A = {0}, C = {0};
    new_ctx(&x, 0, "x", POPPED);
    new_ctx(&b, 0, "b", POPPED);
    CHECK_OK(create(&P, 0, 0));
    CUCTX_SCOPED(x) {
        CHECK_OK(cuctx_ctx_create(&A, 0, 0));
        CUcontext a_raw = cuctx_ctx_raw(A);
        CUCTX_SCOPED(b) {
            CHECK_OK(cuctx_ctx_destroy(&A));
            CHECK_OK(cuctx_ctx_create(&C, 0, 0));
            cr_assert_eq(cuctx_ctx_raw(C), a_raw, "C took A's address (recycling)");
            CHECK_OK(cuctx_pop_current());
        }
    }
    CUcontext cur = current();
    cr_assert_eq(cur, P, "after the scopes %p is current, want the program's %p", (void *)cur, (void *)P);
    CHECK_OK(cuctx_ctx_destroy(&C));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(destroy(P));
    cr_assert_eq(misuses(), 0);
}

/* Another thread destroys a and makes c, which may take its address. */
struct swap_arg { cuctx_ctx a, c; };

static void *destroy_and_retake(void *p)
{
    struct swap_arg *s = p;
    if (cuctx_ctx_destroy(&s->a) == CUDA_SUCCESS && cuctx_ctx_create(&s->c, 0, 0) == CUDA_SUCCESS)
        cuctx_pop_current();
    return NULL;
}

Test(lifetimes, nested_scopes_over_a_level_destroyed_on_another_thread_leave_the_programs_context_current)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    CUcontext P = NULL;
    cuctx_ctx x = {0}, b = {0};
    new_ctx(&x, 0, "x", POPPED);
    new_ctx(&b, 0, "b", POPPED);
    struct swap_arg s = {{0}, {0}};
    CHECK_OK(create(&P, 0, 0));
    CUCTX_SCOPED(x) {
        CHECK_OK(cuctx_ctx_create(&s.a, 0, 0));
        CUcontext a_raw = cuctx_ctx_raw(s.a);
        CUCTX_SCOPED(b) {
            pthread_t t;
            cr_assert_eq(pthread_create(&t, NULL, destroy_and_retake, &s), 0);
            cr_assert_eq(pthread_join(t, NULL), 0);
            cr_assert_eq(cuctx_ctx_raw(s.c), a_raw, "C took A's address (recycling)");
        }
    }
    CUcontext cur = current();
    cr_assert_eq(cur, P, "after the scopes %p is current, want the program's %p", (void *)cur, (void *)P);
    CHECK_OK(cuctx_ctx_destroy(&s.c));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(destroy(P));
    cr_assert_eq(misuses(), 0);
}

/* ---- 5: set_current inside a scope that pushed nothing --------------------- */

Test(lifetimes, set_current_inside_a_scope_is_undone_whether_or_not_the_scope_pushed)
{
    NEED_DRIVER();
    cuctx_ctx x = {0}, a = {0}, p = {0};
    new_ctx(&x, 0, "x", POPPED);
    new_ctx(&a, 0, "a", POPPED);
    new_ctx(&p, 0, "p", POPPED);
    CUcontext P = cuctx_ctx_raw(p);
    CUCTX_SCOPED(x) {
        CHECK_OK(cuctx_ctx_set_current(a));
    }
    cr_assert_null(current(), "a scope that pushed: the previous (no) context is back");
    CHECK_OK(cuctx_ctx_set_current(p));
    CUCTX_SCOPED(p) {
        CHECK_OK(cuctx_ctx_set_current(a));
    }
    CUcontext cur = current();
    cr_assert_eq(cur, P, "a scope entered over its own context: %p is current after it, want %p", (void *)cur,
                 (void *)P);
    CHECK_OK(cuctx_pop_current());
    cr_assert_null(current(), "one level, as at entry");
    CHECK_OK(cuctx_ctx_destroy(&x));
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&p));
}
/* ---- 10: a scope over a dead current context at its context's address ------ */

Test(lifetimes, a_scope_switches_away_from_a_dead_current_context_at_its_contexts_address)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_stale_levels(1);     /* this thread's level of A stays A's, dead */
    struct swap_arg r = {{0}, {0}};
    CHECK_OK(cuctx_ctx_create(&r.a, 0, 0));     /* current here */
    CUcontext a_raw = cuctx_ctx_raw(r.a);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_and_retake, &r), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(cuctx_ctx_raw(r.c), a_raw, "A2 took A's address (recycling)");
    int was = -1;
    CHECK_OK(cuctx_ctx_is_current(r.c, &was));
    cuctx_event ev = {0};
    CUCTX_SCOPED(r.c) {
        int is = 0;
        CHECK_OK(cuctx_ctx_is_current(r.c, &is));
        cr_assert_eq(is, 1);
        CUresult rc = cuctx_event_create(&ev, (cuctx_ctx){0}, 0);
        cr_assert_eq(rc, CUDA_SUCCESS, "a create in the scope of A2: %s (%s)", cuctx_result_name(rc),
                     cuctx_last_error_message());
    }
    cr_assert_eq(was, 0, "before the scope A2 is not current here (the dead A is), yet is_current says %d", was);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&r.c));
    cr_assert_eq(misuses(), 0);
}

/* ---- 8: the error handler set again and again ----------------------------- */

static void quiet_handler(CUresult rc, const char *message, void *user)
{
    (void)rc;
    (void)message;
    (void)user;
}

static void counting_handler(CUresult rc, const char *message, void *user)
{
    (void)message;
    if (rc != CUDA_SUCCESS)
        ++*(int *)user;
}

/* A program may set its handler per request, per thread, per phase: a
 * million settings take no memory that stays. (Under a sanitizer's
 * allocator mallinfo2 says nothing, and the check holds trivially.) */
Test(lifetimes, setting_the_error_handler_a_million_times_keeps_no_memory)
{
    NEED_DRIVER();
    struct mallinfo2 before = mallinfo2();
    for (uintptr_t i = 0; i < 1000000; i++)
        cuctx_set_error_handler(i % 3 ? quiet_handler : NULL, (void *)i);
    struct mallinfo2 after = mallinfo2();
    size_t grown = after.uordblks > before.uordblks ? after.uordblks - before.uordblks : 0;
    cr_assert_lt(grown, (size_t)1 << 20, "1e6 cuctx_set_error_handler calls kept %zu bytes", grown);
    /* the last one set is the one called, with its own user pointer */
    int heard = 0;
    cuctx_set_error_handler(counting_handler, &heard);
    cuctx_event stale = {0};
    cuctx_ctx c = {0};
    new_ctx(&c, 0, "c", POPPED);
    CHECK_OK(cuctx_event_create(&stale, c, 0));
    cuctx_event copy = stale;
    CHECK_OK(cuctx_event_destroy(&stale));
    cuctx_cleanup(&copy);                   /* a stale handle: told to the handler */
    cr_assert_eq(heard, 1);
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- 6: stats.contexts counts the live contexts handed out, exactly ------ */

struct raw_ctx_api {
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxDestroy_v4000 destroy;
    PFN_cuCtxPopCurrent_v4000 pop;
};

static struct raw_ctx_api raw_api(void)
{
    struct raw_ctx_api r = {(PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020),
                            (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000),
                            (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000)};
    return r;
}

#define EXPECT_CONTEXTS(n, what)                                                                  \
    do {                                                                                          \
        size_t got_ = stats().contexts;                                                           \
        cr_assert_eq(got_, (size_t)(n), "%s: stats.contexts is %zu, want %zu", (what), got_,      \
                     (size_t)(n));                                                                \
    } while (0)

Test(lifetimes, stats_count_the_live_contexts_handed_out_exactly)
{
    NEED_DRIVER();
    NEED_SIM();
    struct raw_ctx_api r = raw_api();
    CUcontext raw = NULL, popped = NULL;

    /* a borrow's handle destroyed, then its owner destroys the context */
    cuctx_ctx b = {0};
    CHECK_OK(r.create(&raw, 0, 0));
    CHECK_OK(r.pop(&popped));
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    EXPECT_CONTEXTS(1, "a live borrow");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(r.destroy(raw));
    EXPECT_CONTEXTS(0, "a borrowed context destroyed by its owner");

    /* a {0} create while a foreign context is current */
    cuctx_event ev = {0};
    CHECK_OK(r.create(&raw, 0, 0));
    CHECK_OK(cuctx_event_create(&ev, (cuctx_ctx){0}, 0));
    CHECK_OK(cuctx_event_destroy(&ev));
    EXPECT_CONTEXTS(0, "a foreign current context met by a {0} create, never handed out");
    CHECK_OK(r.pop(&popped));
    CHECK_OK(r.destroy(raw));

    /* a scope entered while a foreign context is current */
    cuctx_ctx c = {0};
    new_ctx(&c, 0, "c", POPPED);
    CHECK_OK(r.create(&raw, 0, 0));
    CUCTX_SCOPED(c) {
    }
    CHECK_OK(cuctx_ctx_destroy(&c));
    EXPECT_CONTEXTS(0, "a foreign context met as a scope's previous, cuctx's only context destroyed");
    CHECK_OK(r.pop(&popped));
    CHECK_OK(r.destroy(raw));

    /* many borrowed contexts destroyed by their owner, then owned ones made and destroyed */
    for (int i = 0; i < 3000; i++) {
        CHECK_OK(r.create(&raw, 0, 0));
        CHECK_OK(r.pop(&popped));
        CHECK_OK(cuctx_ctx_borrow(&b, raw));
        CHECK_OK(cuctx_ctx_destroy(&b));
        CHECK_OK(r.destroy(raw));
    }
    for (int i = 0; i < 200; i++) {
        new_ctx(&c, 0, NULL, POPPED);
        CHECK_OK(cuctx_ctx_destroy(&c));
    }
    EXPECT_CONTEXTS(0, "3000 borrowed contexts destroyed by their owner, 200 owned made and destroyed");
    cr_assert_eq(misuses(), 0);
}

/* A borrow's entry ends with its last handle (issue 17, item 6): a scope
 * whose previous context is that borrowed context, its borrow destroyed
 * inside, still knows the context by its driver id - it lives, so it is
 * left current (not taken off the stack as a dead context's level), and put
 * back on its own level after a set_current inside. */
Test(lifetimes, a_scope_keeps_a_borrowed_previous_context_whose_borrow_ended_inside)
{
    NEED_DRIVER();
    NEED_SIM();
    struct raw_ctx_api r = raw_api();
    CUcontext raw = NULL, popped = NULL;
    cuctx_ctx b = {0}, c = {0};
    new_ctx(&c, 0, "c", POPPED);
    CHECK_OK(r.create(&raw, 0, 0));         /* the program's context, current */
    name_handle('c', H(raw), "R");
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CUCTX_SCOPED(c) {
        CHECK_OK(cuctx_ctx_destroy(&b));
    }
    EXPECT_CURRENT(raw);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CUCTX_SCOPED(b) {                       /* R current already: pushed nothing */
        CHECK_OK(cuctx_ctx_set_current(c));
        CHECK_OK(cuctx_ctx_destroy(&b));
    }
    EXPECT_CURRENT(raw);
    CHECK_OK(r.pop(&popped));
    cr_assert_eq(popped, raw);
    EXPECT_CURRENT(NULL);
    CHECK_OK(r.destroy(raw));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* A scope whose previous context another thread is destroying at the
 * scope's exit - the destroy has closed the context's entry and waits in its
 * drain for a call in flight there - finds that context still at its address,
 * under the closing entry's driver id: the same context, so its level stays
 * and it is current after the scope (not taken off as a dead context's). */
Test(lifetimes, a_scope_leaves_its_previous_context_current_while_another_thread_destroys_it)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct raw_ctx_api r = raw_api();
    cuctx_ctx x = {0};
    struct ctx_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    struct sync_arg s = {{0}, CUDA_ERROR_UNKNOWN};
    CUcontext popped = NULL;
    new_ctx(&x, 0, "x", POPPED);
    CUcontext p_raw = new_ctx(&a.c, 0, "p", LEFT_CURRENT);
    cuctx_ctx copy = a.c;
    CHECK_OK(cuctx_event_create(&s.ev, a.c, 0));
    sim()->set_delay("cuEventSynchronize", 500000);
    pthread_t ts, t;
    cr_assert_eq(pthread_create(&ts, NULL, synchronize, &s), 0);
    wait_sleeping();                            /* the synchronize holds p */
    CUCTX_SCOPED(x) {
        cr_assert_eq(pthread_create(&t, NULL, destroy_ctx, &a), 0);
        while (cuctx_ctx_raw(copy) != NULL)     /* the destroy ended p's handle, */
            sleep_ms(1);
        sleep_ms(50);                           /* closed p's entry and waits in its drain */
    }
    EXPECT_CURRENT(p_raw);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(pthread_join(ts, NULL), 0);
    sim()->set_delay("cuEventSynchronize", 0);
    CHECK_OK(a.rc);
    CHECK_OK(s.rc);
    CHECK_OK(r.pop(&popped));                   /* p's level, p destroyed meanwhile */
    cr_assert_eq(popped, p_raw);
    EXPECT_CURRENT(NULL);
    CHECK_OK(cuctx_event_destroy(&s.ev));
    CHECK_OK(cuctx_ctx_destroy(&x));
    cr_assert_eq(misuses(), 0);
}

/* A scope over its own context (it pushed nothing) whose level a pop inside
 * took: the level below is the program's, and stays as it is. */
Test(lifetimes, a_pop_inside_a_scope_that_pushed_nothing_leaves_the_level_below_alone)
{
    NEED_DRIVER();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    CUcontext Q = NULL;
    cuctx_ctx p = {0};
    CHECK_OK(create(&Q, 0, 0));
    CHECK_OK(cuctx_ctx_create(&p, 0, 0));      /* [Q P] */
    CUCTX_SCOPED(p) {
        CHECK_OK(cuctx_pop_current());          /* [Q] */
    }
    CUcontext cur = current();
    cr_assert_eq(cur, Q, "after the scope %p is current, want the program's %p below", (void *)cur, (void *)Q);
    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(destroy(Q));
}

/* stats.contexts counts each context once, however its handles and
 * children lie in the handle table (interleaved with another context's). */
Test(lifetimes, stats_count_a_context_once_whatever_the_order_of_its_children)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_event e[4] = {{0}};
    NEED_DRIVER();
    new_ctx(&a, 0, "a", POPPED);
    new_ctx(&b, 0, "b", POPPED);
    for (int i = 0; i < 4; i++)
        CHECK_OK(cuctx_event_create(&e[i], i % 2 ? b : a, 0));
    EXPECT_CONTEXTS(2, "two contexts, each with a handle and two events made in turn");
    for (int i = 0; i < 4; i++)
        CHECK_OK(cuctx_event_destroy(&e[i]));
    CHECK_OK(cuctx_ctx_destroy(&b));
    EXPECT_CONTEXTS(1, "one context left");
    CHECK_OK(cuctx_ctx_destroy(&a));
    EXPECT_CONTEXTS(0, "none left");
}

/* A reset of a primary context cuctx never retained asks the driver for
 * its address (one retain and release while it is active) once: the
 * address is the device's for the life of the process, so a second reset,
 * of the context made again at that address, asks nothing. */
Test(lifetimes, a_reset_learns_the_primary_contexts_address_once)
{
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(sim()->primary_outside_retain(0), 0);     /* as the runtime would */
    unsigned long retains = calls("cuDevicePrimaryCtxRetain");
    CHECK_OK(cuctx_ctx_primary_reset(0));
    cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), retains + 1, "the first reset asks the address once");
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(sim()->primary_outside_retain(0), 0);      /* active again, at the same address */
    CHECK_OK(cuctx_ctx_primary_reset(0));
    cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), retains + 1, "the second reset asked the address again");
    cr_assert_eq(sim()->primary_outside_release(0), 0);
}

/* ---- a call with two children across a primary context's last release ---- */

struct release_arg { cuctx_ctx p; CUresult rc; };

static void *release_primary(void *p)
{
    struct release_arg *a = p;
    a->rc = cuctx_ctx_destroy(&a->p);
    return NULL;
}

/* cuctx's last retain of a primary context the runtime also retains: the
 * release closes the context's entry and reopens it once the driver says
 * the context lives on. A stream of another context waiting for an event of
 * the primary context in that window must wait for the verdict; it said
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, because the thread already held the
 * stream's context when it came to the event's (found by tests/stress). */
Test(lifetimes, a_call_with_two_children_waits_out_a_primary_release_its_context_survives)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    cuctx_ctx other = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    struct release_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&other, 0, "other", POPPED);
    cr_assert_eq(sim()->primary_outside_retain(0), 0, "the runtime's retain");
    CHECK_OK(cuctx_ctx_primary(&a.p, 0));
    CHECK_OK(cuctx_event_create(&ev, a.p, 0));
    CHECK_OK(cuctx_stream_create(&s, other, 0, 0));
    sim()->set_delay("cuDevicePrimaryCtxRelease", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, release_primary, &a), 0);
    wait_sleeping();                        /* the entry is closed; the release is in the driver */
    sim()->set_delay("cuDevicePrimaryCtxRelease", 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_stream_wait_event(s, ev));
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(a.rc);
    static const char *const seq[] = {"cuDevicePrimaryCtxRelease", "cuStreamWaitEvent", NULL};
    char buf[256];
    cr_assert_str_eq(log_seq(mark, seq, buf, sizeof buf), "cuDevicePrimaryCtxRelease,cuStreamWaitEvent",
                     "the wait did not wait for the release's verdict: %s", buf);
    mark = log_mark();
    CUevent raw_ev = cuctx_event_raw(ev);
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls_on("cuEventDestroy", H(raw_ev), mark), 1,
                 "the primary context lives on: its event is the driver's to free");
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&other));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(misuses(), 0);
}

/* The same with the stream named (CUCTX_STREAM_LEGACY, the current
 * context's default stream): the current context's hold is let go while
 * the event's closing context is waited out, then both are taken again; it
 * said CUDA_ERROR_CONTEXT_IS_DESTROYED. */
Test(lifetimes, a_wait_on_a_named_default_stream_waits_out_a_primary_release_its_context_survives)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    cuctx_ctx other = {0};
    cuctx_event ev = {0};
    struct release_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    new_ctx(&other, 0, "other", LEFT_CURRENT);  /* the default stream's context */
    cr_assert_eq(sim()->primary_outside_retain(0), 0, "the runtime's retain");
    CHECK_OK(cuctx_ctx_primary(&a.p, 0));
    CHECK_OK(cuctx_event_create(&ev, a.p, 0));
    /* the current context looked up once: found again without the context
     * lock, which the release holds */
    CHECK_OK(cuctx_stream_synchronize(CUCTX_STREAM_LEGACY));
    sim()->set_delay("cuDevicePrimaryCtxRelease", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, release_primary, &a), 0);
    wait_sleeping();                        /* the entry is closed; the release is in the driver */
    sim()->set_delay("cuDevicePrimaryCtxRelease", 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_stream_wait_event(CUCTX_STREAM_LEGACY, ev));
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(a.rc);
    static const char *const seq[] = {"cuDevicePrimaryCtxRelease", "cuStreamWaitEvent", NULL};
    char buf[256];
    cr_assert_str_eq(log_seq(mark, seq, buf, sizeof buf), "cuDevicePrimaryCtxRelease,cuStreamWaitEvent",
                     "the wait did not wait for the release's verdict: %s", buf);
    struct cusim_call w = last_call("cuStreamWaitEvent", mark);
    cr_assert_eq(w.handle, 1, "not on the legacy stream");
    cr_assert_eq(w.ctx, H(cuctx_ctx_raw(other)), "not in the current context");
    cr_assert_eq(w.handle2, H(cuctx_event_raw(ev)));
    EXPECT_CURRENT(cuctx_ctx_raw(other));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&other));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(misuses(), 0);
}

/* A call with two children whose second handle is stale: refused before
 * the driver with the second handle named, and the first child's pin given
 * back (its destroy would wait for it for good). */
Test(lifetimes, a_call_with_two_children_refuses_a_stale_second_handle_and_lets_go_of_the_first)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(20);
    cuctx_ctx c = {0};
    cuctx_event ev = {0}, gone_ev = {0};
    cuctx_stream s = {0}, gone_s = {0};
    new_ctx(&c, 0, "c", POPPED);
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_event_create(&gone_ev, c, 0));
    CHECK_OK(cuctx_stream_create(&gone_s, c, 0, 0));
    cuctx_event stale_ev = gone_ev;
    cuctx_stream stale_s = gone_s;
    CHECK_OK(cuctx_event_destroy(&gone_ev));
    CHECK_OK(cuctx_stream_destroy(&gone_s));
    float ms = 0;
    size_t mark = log_mark();
    cr_assert_eq(cuctx_event_record(ev, stale_s), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "stream handle"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_stream_wait_event(s, stale_ev), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "event handle"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_event_elapsed_ms(ev, stale_ev, &ms), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(calls_on("cuEventRecord", H(cuctx_event_raw(ev)), mark), 0);
    cr_assert_eq(calls_on("cuStreamWaitEvent", H(cuctx_stream_raw(s)), mark), 0);
    cr_assert_eq(calls("cuEventElapsedTime"), 0, "nothing timed");
    CHECK_OK(cuctx_event_destroy(&ev));     /* hangs if a pin of ev was kept */
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* ---- mutation survivors of lib/tether.c (h1) ---- */

/* A child of a borrowed context whose destroy needs no current context (an
 * event: cuEventDestroy), cancelled in the driver's destroy: the destroy
 * (the out-of-line cuctx__child_destroy_counted) never made a context
 * current, so its unwinding pops none - cuCtxPopCurrent is not asked on the
 * cancelled thread - and the handle ends, the driver having been asked.
 * Mutant killed: lib/tether.c:154 `const` (the switch starting as pushed:
 * the unwinding popped a context it never pushed). */
struct event_arg_h1 { cuctx_event ev; CUresult rc; };

static void *destroy_event_h1(void *p)
{
    struct event_arg_h1 *a = p;
    a->rc = cuctx_event_destroy(&a->ev);
    return NULL;
}

Test(lifetimes, a_thread_cancelled_in_the_drivers_event_destroy_of_a_borrowed_context_pops_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    CUcontext raw = raw_ctx_create(0, POPPED);
    cuctx_ctx c = {0};
    CHECK_OK(cuctx_ctx_borrow(&c, raw));
    struct event_arg_h1 a = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_event_create(&a.ev, c, 0));
    cuctx_event copy = a.ev;
    EXPECT_CURRENT(NULL);
    unsigned long pushes = calls("cuCtxPushCurrent"), pops = calls("cuCtxPopCurrent");
    cancel_in_driver_call("cuEventDestroy", destroy_event_h1, &a);
    cr_assert_eq(calls("cuCtxPushCurrent"), pushes, "the cancelled destroy pushed a context");
    cr_assert_eq(calls("cuCtxPopCurrent"), pops, "the cancelled destroy popped a context it never pushed");
    cr_assert_eq(stats().events, 0, "the cancelled destroy left its event counted");
    cr_assert_eq(cuctx_event_destroy(&copy), CUDA_ERROR_INVALID_HANDLE, "the handle ended");
    CHECK_OK(cuctx_ctx_destroy(&c));
    raw_ctx_destroy(raw);
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}

/* A pair's destroy cancelled in the driver's cuCtxDisablePeerAccess: the
 * driver was asked, so the handle ends there (as a stream's, above): a
 * copy of it names nothing, and the access is never disabled again.
 * Mutant killed: lib/tether.c:301 `const` (the guard not told the driver
 * was called: the handle reopened, and the copy's destroy disabled the
 * access a second time). */
Test(lifetimes, a_thread_cancelled_in_the_drivers_peer_access_disable_still_ends_the_pair)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, "a", POPPED);
    new_ctx(&b, 1, "b", POPPED);
    struct peer_arg p = {{0}, CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_peer_enable(&p.p, a, b));
    cuctx_peer copy = p.p;
    unsigned long disables = calls("cuCtxDisablePeerAccess");
    EXPECT_CURRENT(NULL);
    cancel_in_driver_call("cuCtxDisablePeerAccess", destroy_peer, &p);
    disables = calls("cuCtxDisablePeerAccess");    /* (the cancelled call's count, whether it counts) */
    cr_assert_eq(stats().peers, 0, "the cancelled destroy left its pair counted");
    cr_assert_eq(cuctx_peer_destroy(&copy), CUDA_ERROR_INVALID_HANDLE, "the handle did not end");
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables, "the access was disabled again");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(misuses(), 0);
}
