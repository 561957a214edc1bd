/* SPDX-License-Identifier: MIT */
/* test_async.c - stream-ordered memory and memory pools (issue 20). Each
 * test says in a line which bug it catches. The driver facts behind them
 * (measured on an H200, tools/facts/async_free.c, pool_accounting.c): the
 * memory belongs to its pool, not to a context, and outlives the context
 * it was made in; cuMemFreeAsync naming a destroyed stream crashes; with
 * work still queued on a destroyed stream only a free on the legacy
 * stream (a blocking stream's work) or after a synchronize is safe; a
 * plain cuMemFree returns the memory but leaves the pool's used counter
 * up. The simulated driver records every unsafe free as a misuse. */
#include "testlib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")
#define BYTES 4096

/* The pool's used-memory counter, from the driver. */
static size_t pool_used(CUmemoryPool pool)
{
    PFN_cuMemPoolGetAttribute_v11020 get = (PFN_cuMemPoolGetAttribute_v11020)drv_sym("cuMemPoolGetAttribute", 11020);
    cuuint64_t used = 0;
    CHECK_OK(get(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    return (size_t)used;
}

static CUmemoryPool default_pool(void)
{
    PFN_cuDeviceGetDefaultMemPool_v11020 get =
        (PFN_cuDeviceGetDefaultMemPool_v11020)drv_sym("cuDeviceGetDefaultMemPool", 11020);
    CUmemoryPool pool = NULL;
    CHECK_OK(get(&pool, 0));
    return pool;
}

/* Work queued on s that the driver has not finished (on the real driver a
 * memset; the simulator counts it as pending until a synchronize). */
static void queue_work(cuctx_mem m, cuctx_stream s)
{
    PFN_cuMemsetD8Async_v3020 memset_async = (PFN_cuMemsetD8Async_v3020)drv_sym("cuMemsetD8Async", 3020);
    CHECK_OK(memset_async(cuctx_mem_ptr(m), 7, cuctx_mem_size(m), cuctx_stream_raw(s)));
}

/* Whether any call logged from mark names raw as its stream or handle,
 * other than calls of fn_ok. */
static int stream_named_since(uint64_t raw, size_t mark, const char *fn_ok)
{
    size_t n = sim()->log_count();
    for (size_t i = mark; i < n; i++) {
        struct cusim_call c;
        sim()->log_get(i, &c);
        if (fn_ok && strcmp(c.fn, fn_ok) == 0)
            continue;
        if (c.stream == raw || c.handle2 == raw || (c.handle == raw && strncmp(c.fn, "cuStream", 8) == 0))
            return 1;
    }
    return 0;
}

/* ---- the free, while its stream lives ------------------------------------ */

/* Bug caught: the free not ordered on the allocation's stream (a plain
 * cuMemFree frees under queued work), or a context switch around it. */
Test(async_mem, is_freed_on_its_own_stream)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    cr_assert_neq(cuctx_mem_ptr(m), 0);
    cr_assert_eq(cuctx_mem_size(m), BYTES);
    cr_assert_eq(stats().async_mems, 1);
    cr_assert_eq(stats().mems, 0, "stream-ordered memory counted as cuMemAlloc memory");
    CUmemoryPool pool = default_pool();
    cr_assert_eq(pool_used(pool), BYTES);
    uint64_t p = cuctx_mem_ptr(m);
    uint64_t sraw = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    queue_work(m, s);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(pool), 0, "not freed by cuMemFreeAsync (the pool still counts it)");
    if (sim()) {
        struct cusim_call f = last_call("cuMemFreeAsync", mark);
        cr_assert_eq(f.handle, p);
        cr_assert_eq(f.stream, sraw, "freed on another stream than its own");
        cr_assert_eq(calls_on("cuMemFree", p, mark), 0);
        cr_assert_eq(calls("cuCtxSynchronize"), 0, "a free on a live stream waited");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: the allocation's call switching contexts, or needing one
 * current, when its stream says which. */
Test(async_mem, takes_its_stream_with_another_context_current)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0}, b = {0};
    cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem m = {0};
    new_ctx(&a, 0, "A", POPPED);
    CUcontext braw = new_ctx(&b, 0, "B", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    size_t mark = log_mark();
    unsigned long pushes = calls("cuCtxPushCurrent");
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    struct cusim_call al = last_call("cuMemAllocAsync", mark);
    cr_assert_eq(al.stream, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
    cr_assert_eq(al.arg, BYTES);
    cr_assert_eq(al.ctx, (uint64_t)(uintptr_t)braw);
    EXPECT_CURRENT(braw);
    cr_assert_eq(calls("cuCtxPushCurrent"), pushes, "the allocation switched contexts");
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(braw);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
}

/* Bug caught: cuctx_mem_free_async ignoring its stream, or freeing on it
 * without holding it. */
Test(async_mem, free_async_orders_the_free_on_the_stream_given)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0}, s2 = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_stream_create(&s2, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_free_async(&m, s2));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), 0);
    if (sim()) {
        struct cusim_call f = last_call("cuMemFreeAsync", mark);
        cr_assert_eq(f.handle, p);
        cr_assert_eq(f.stream, (uint64_t)(uintptr_t)cuctx_stream_raw(s2));
        ASSERT_NO_MISUSE();
    }
    /* {0}: its own stream */
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    mark = log_mark();
    CHECK_OK(cuctx_mem_free_async(&m, (cuctx_stream){0}));
    if (sim())
        cr_assert_eq(last_call("cuMemFreeAsync", mark).stream, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
    cr_assert_eq(cuctx_mem_free_async(&m, s), CUDA_SUCCESS, "{0} handle: a no-op");
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: free_async given cuMemAlloc memory (the driver's answer is
 * undefined), or a stale stream reaching the driver. */
Test(async_mem, free_async_refuses_plain_memory_and_stale_streams)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0}, dead = {0};
    cuctx_mem plain = {0}, m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_mem_alloc(&plain, c, BYTES));
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    cr_assert_eq(cuctx_mem_free_async(&plain, s), CUDA_ERROR_INVALID_VALUE);
    cr_assert_neq(plain.id, 0, "the refused handle was reset");
    cr_assert(strstr(cuctx_last_error_message(), "not stream-ordered memory"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_stream_create(&dead, c, 0, 0));
    cuctx_stream copy = dead;
    CHECK_OK(cuctx_stream_destroy(&dead));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    size_t mark = log_mark();
    cr_assert_eq(cuctx_mem_free_async(&m, copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_neq(m.id, 0, "memory was let go for a stale stream");
    if (sim())
        cr_assert_eq(calls_on("cuMemFreeAsync", cuctx_mem_ptr(m), mark), 0);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_destroy(&plain));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* ---- the free, once its stream is gone ----------------------------------- */

/* The destroyed stream's flags: the free after it. */
static void stream_gone(unsigned flags, int work)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CUcontext craw = new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, flags, 0));
    uint64_t sraw = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    if (work)
        queue_work(m, s);
    size_t at_destroy = log_mark();
    CHECK_OK(cuctx_stream_destroy(&s));
    size_t mark = log_mark();
    unsigned long syncs = calls("cuCtxSynchronize");
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(NULL);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), 0, "not freed by cuMemFreeAsync");
    if (sim()) {
        cr_assert_eq(stream_named_since(sraw, mark, NULL), 0, "a call named the destroyed stream");
        struct cusim_call f = last_call("cuMemFreeAsync", mark);
        cr_assert_eq(f.handle, p);
        cr_assert_eq(f.stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY, "not freed on the legacy stream");
        cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)craw, "not in the stream's context");
        cr_assert_eq(calls_on("cuStreamSynchronize", sraw, at_destroy), flags & CU_STREAM_NON_BLOCKING ? 1u : 0u,
                     "a non-blocking stream's work must be waited for at its destroy, a blocking one's need not");
        cr_assert_eq(calls("cuCtxSynchronize"), syncs, "the free synchronized its context");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a free naming the destroyed stream (SIGSEGV on the real
 * driver), or a needless wait for a blocking stream. */
Test(async_mem, stream_destroyed_first_blocking) { stream_gone(0, 1); }
/* Bug caught: a free beside a non-blocking stream's unfinished work (the
 * real driver hands the address on under a running kernel): its destroy
 * must wait for that work. */
Test(async_mem, stream_destroyed_first_non_blocking) { stream_gone(CU_STREAM_NON_BLOCKING, 1); }
/* The same with nothing queued: the rule does not depend on it. */
Test(async_mem, stream_destroyed_first_idle) { stream_gone(CU_STREAM_NON_BLOCKING, 0); }

/* Bug caught: an adopted stream (flags unknown to cuctx) taken as
 * blocking. */
Test(async_mem, an_adopted_stream_gone_is_waited_for)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuStreamCreate_v2000 create = (PFN_cuStreamCreate_v2000)drv_sym("cuStreamCreate", 2000);
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CUstream raw;
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(create(&raw, CU_STREAM_NON_BLOCKING));
    CHECK_OK(cuctx_stream_adopt(&s, c, raw, 1));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    queue_work(m, s);
    size_t mark = log_mark();
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(calls_on("cuStreamSynchronize", (uint64_t)(uintptr_t)raw, mark), 1);
    CHECK_OK(cuctx_mem_destroy(&m));
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a stream destroy and the free of its memory racing - the
 * free taking the stream's value, then the stream destroyed before the
 * driver call. Many rounds on two threads; the simulator records any free
 * naming a destroyed stream. */
struct race { cuctx_stream s; cuctx_mem m; pthread_barrier_t *go; CUresult rc; };
static void *destroy_stream(void *arg)
{
    struct race *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = cuctx_stream_destroy(&r->s);
    return NULL;
}
Test(async_mem, a_stream_destroy_racing_the_free_is_never_crossed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    sim()->set_delay("cuMemFreeAsync", 50);
    for (int i = 0; i < 200; i++) {
        struct race r = {{0}, {0}, &go, CUDA_SUCCESS};
        pthread_t t;
        CHECK_OK(cuctx_stream_create(&r.s, c, i & 1 ? CU_STREAM_NON_BLOCKING : 0, 0));
        CHECK_OK(cuctx_mem_alloc_async(&r.m, r.s, BYTES));
        pthread_create(&t, NULL, destroy_stream, &r);
        pthread_barrier_wait(&go);
        CHECK_OK(cuctx_mem_destroy(&r.m));
        pthread_join(t, NULL);
        cr_assert_eq(r.rc, CUDA_SUCCESS, "the stream's destroy: %s", cuctx_result_name(r.rc));
    }
    sim()->set_delay("cuMemFreeAsync", 0);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), 0);
    ASSERT_NO_MISUSE();
    pthread_barrier_destroy(&go);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a stream destroy not waiting for an allocation or a free on
 * the stream that is inside its driver call, which holds the stream
 * through the thread's hazard slots (registry.h, "holds of children"): the
 * destroy reaches the driver first and the call names a dead stream. The
 * call is slowed (a sleep before the simulator takes it) and the destroy
 * starts once it sleeps there, so the two cross every time they can.
 * first: the allocation is the stream's first hold, which sets its held
 * bit; else the stream was held before (the hold's fast path). */
static long call_at(const char *fn, uint64_t h, size_t mark);
struct held_call { cuctx_stream s; cuctx_mem *m; int free; CUresult rc; };
static void *held_call(void *arg)
{
    struct held_call *h = arg;
    h->rc = h->free ? cuctx_mem_destroy(h->m) : cuctx_mem_alloc_async(h->m, h->s, BYTES);
    return NULL;
}
static void stream_destroy_beside(int free, int first, unsigned flags)
{
    NEED_DRIVER();
    NEED_SIM();
    const char *fn = free ? "cuMemFreeAsync" : "cuMemAllocAsync";
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0}, before = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, flags, 0));
    uint64_t raw = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    if (!first) {
        CHECK_OK(cuctx_mem_alloc_async(&before, s, BYTES));
        CHECK_OK(cuctx_mem_destroy(&before));
    }
    if (free)
        CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    struct held_call h = {s, &m, free, CUDA_ERROR_UNKNOWN};
    size_t mark = log_mark();
    pthread_t t;
    sim()->set_delay(fn, 100000);
    cr_assert_eq(pthread_create(&t, NULL, held_call, &h), 0);
    while (sim()->sleeping() == 0)      /* the call is in the driver, the stream held */
        usleep(1000);
    CHECK_OK(cuctx_stream_destroy(&s));
    pthread_join(t, NULL);
    sim()->set_delay(fn, 0);
    ASSERT_NO_MISUSE();
    cr_assert_eq(h.rc, CUDA_SUCCESS, "the %s beside the stream's destroy: %s", free ? "free" : "allocation",
                 cuctx_result_name(h.rc));
    long call = -1, destroy = call_at("cuStreamDestroy", raw, mark);
    for (size_t i = mark; call < 0 && i < log_mark(); i++) {
        struct cusim_call rec;
        if (sim()->log_get(i, &rec) == 0 && strcmp(rec.fn, fn) == 0)
            call = (long)i;
    }
    cr_assert(call >= 0 && destroy > call, "%s (log %ld) did not come before the stream's destroy (log %ld)", fn, call,
              destroy);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&c));
}
Test(async_mem, a_stream_destroy_waits_for_the_first_allocation_on_it) { stream_destroy_beside(0, 1, 0); }
Test(async_mem, a_stream_destroy_waits_for_an_allocation_on_it) { stream_destroy_beside(0, 0, 0); }
Test(async_mem, a_stream_destroy_waits_for_an_allocation_on_it_non_blocking)
{
    stream_destroy_beside(0, 0, CU_STREAM_NON_BLOCKING);
}
Test(async_mem, a_stream_destroy_waits_for_a_free_on_it) { stream_destroy_beside(1, 0, 0); }

/* ---- the free, once its context is gone ---------------------------------- */

/* Bug caught: stream-ordered memory tethered to its context - skipped
 * after the context's destroy, so it leaks in its pool. */
Test(async_mem, outlives_its_context_and_is_still_freed)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(cuctx_mem_ptr(m), p, "its accessor fails once the context is gone: %s", cuctx_last_error_message());
    uint64_t skips = stats().stale_skips;
    size_t mark = log_mark();
    unsigned long switches = calls("cuCtxPushCurrent") + calls("cuCtxSetCurrent");
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(NULL);
    cr_assert_eq(stats().stale_skips, skips, "the free was skipped as a dead context's child's");
    cr_assert_eq(stats().async_mems, 0);
    if (sim()) {
        struct cusim_call f = last_call("cuMemFree", mark);
        cr_assert_eq(f.handle, p, "not freed");
        cr_assert_eq(f.ctx, 0, "a context was made current for it");
        cr_assert_eq(calls_on("cuMemFreeAsync", p, mark), 0, "a stream-ordered free with no stream to name");
        cr_assert_eq(calls("cuCtxPushCurrent") + calls("cuCtxSetCurrent"), switches);
        cr_assert_eq(sim()->async_allocs_live(), 0, "the memory leaked in its pool");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));     /* skipped: died with its context */
}

/* Bug caught: with the device's primary context active, memory whose
 * context died freed by cuMemFree (measured: the pool then counts it as
 * used for its life), or on the primary's stream without the primary
 * current, or left current after. */
Test(async_mem, outlives_its_context_and_is_freed_in_the_primary_context)
{
    NEED_DRIVER();
    cuctx_ctx pc = {0}, c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_destroy(&c));
    size_t used = pool_used(default_pool());
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(NULL);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), used - BYTES, "the pool still counts the memory as used");
    if (sim()) {
        struct cusim_call f = last_call("cuMemFreeAsync", mark);
        cr_assert_eq(f.handle, p, "not freed by cuMemFreeAsync");
        cr_assert_eq(f.stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY, "not on the legacy stream");
        cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)cuctx_ctx_raw(pc), "not with the primary context current");
        cr_assert_eq(f.rc, CUDA_SUCCESS);
        cr_assert_eq(calls_on("cuMemFree", p, mark), 0, "freed twice");
        cr_assert_eq(sim()->async_allocs_live(), 0, "the memory leaked in its pool");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* Bug caught: case 3 taken where the device's primary context is not
 * active (a retain made only to free would create and end a context), or
 * a failed question of the pointer's device taken for an answer. */
Test(async_mem, with_no_primary_context_or_no_answer_cuMemFree_frees_it)
{
    NEED_DRIVER();
    for (int fail_query = 0; fail_query < 2; fail_query++) {
        cuctx_ctx pc = {0}, c = {0};
        cuctx_stream s = {0};
        cuctx_mem m = {0};
        if (fail_query)
            CHECK_OK(cuctx_ctx_primary(&pc, 0));
        new_ctx(&c, 0, "C", POPPED);
        CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
        CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
        uint64_t p = cuctx_mem_ptr(m);
        CHECK_OK(cuctx_ctx_destroy(&c));
        size_t mark = log_mark();
        unsigned long retains = calls("cuDevicePrimaryCtxRetain");
        if (sim() && fail_query)
            sim()->fail_call("cuPointerGetAttribute", 1, CUDA_ERROR_INVALID_VALUE);
        CHECK_OK(cuctx_mem_destroy(&m));
        EXPECT_CURRENT(NULL);
        cr_assert_eq(stats().async_mems, 0);
        if (sim()) {
            cr_assert_eq(calls_on("cuPointerGetAttribute", p, mark), 1, "the device was not asked");
            cr_assert_eq(calls_on("cuMemFree", p, mark), 1, "not freed by cuMemFree");
            cr_assert_eq(calls_on("cuMemFreeAsync", p, mark), 0);
            cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), retains, "a primary context retained to free");
            cr_assert_eq(sim()->async_allocs_live(), 0);
            ASSERT_NO_MISUSE();
        }
        CHECK_OK(cuctx_stream_destroy(&s));
        if (fail_query)
            CHECK_OK(cuctx_ctx_destroy(&pc));
    }
}

/* A thread whose current context another thread destroyed (a scope over
 * a context that died): the driver refuses its frees with
 * CUDA_ERROR_CONTEXT_IS_DESTROYED, even on a live stream or with none
 * needed (seen on the H200: stress runs with scopes over dying contexts).
 * Bug caught: that answer passed on, the memory kept and the destroy
 * failed - on the memory's live stream (case 1: freed again with the
 * stream's context pushed over the dead level), and with its stream and
 * context gone (case 4: freed on a thread where nothing is current). */
static void *destroy_ctx_there(void *p)
{
    CHECK_OK(cuctx_ctx_destroy((cuctx_ctx *)p));
    return NULL;
}
static void destroy_ctx_elsewhere(cuctx_ctx *c)
{
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_ctx_there, c), 0);
    pthread_join(t, NULL);
}
/* live_stream 1: the memory's stream lives, in another context than the
 * dead one current (case 1); 0: the dead one is the memory's own context,
 * its stream gone with it (case 4, no primary context active). */
static void free_after_current_died(int live_stream)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0}, d = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    if (live_stream)
        new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    cuctx_ctx *dying = live_stream ? &d : &c;
    CUcontext dead = cuctx_ctx_raw(*dying), home = cuctx_ctx_raw(c);
    CUstream sraw = cuctx_stream_raw(s);
    CUCTX_SCOPED(*dying) {
        destroy_ctx_elsewhere(dying);
        size_t mark = log_mark();
        CHECK_OK(cuctx_mem_destroy(&m));
        cr_assert_eq(m.id, 0);
        cr_assert_eq(current(), dead, "the dead level was not left as it was");
        struct cusim_call f = last_call(live_stream ? "cuMemFreeAsync" : "cuMemFree", mark);
        cr_assert_eq(f.handle, p);
        cr_assert_eq(f.rc, CUDA_SUCCESS, "the last free was refused: %s", cuctx_result_name(f.rc));
        if (live_stream) {
            cr_assert_eq(f.stream, (uint64_t)(uintptr_t)sraw, "not on its stream");
            cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)home, "not with the stream's context pushed");
        } else {
            cr_assert_eq(f.ctx, 0, "freed with a context current");
        }
        cr_assert_eq(sim()->async_allocs_live(), 0, "the memory was kept");
    }
    cr_assert_eq(stats().async_mems, 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    if (live_stream)
        CHECK_OK(cuctx_ctx_destroy(&c));
}
Test(async_mem, a_thread_whose_current_context_died_frees_on_a_live_stream) { free_after_current_died(1); }
Test(async_mem, a_thread_whose_current_context_died_frees_memory_whose_context_is_gone) { free_after_current_died(0); }

/* Case 4's free on a thread of its own refused by the driver: the destroy
 * returns that refusal and counts a failed destroy, as for any free the
 * driver refuses. Bug caught: the thread's answer dropped, the destroy
 * reporting success for memory never freed. Mutant killed:
 * lib/mem_async.c:165 `ret` (free_with_none_current returning 0; seed 47). */
Test(async_mem, a_refused_free_on_a_thread_of_its_own_is_returned)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    CUcontext dead = cuctx_ctx_raw(c);
    uint64_t failed = stats().failed_destroys;
    CUCTX_SCOPED(c) {
        destroy_ctx_elsewhere(&c);
        size_t mark = log_mark();
        /* the first cuMemFree, on this thread, is refused by the driver
         * itself (its current context is dead); the second, on the thread
         * of its own, by this plan */
        sim()->fail_call("cuMemFree", 2, CUDA_ERROR_ILLEGAL_ADDRESS);
        cr_assert_eq(cuctx_mem_destroy(&m), CUDA_ERROR_ILLEGAL_ADDRESS, "%s", cuctx_last_error_message());
        cr_assert_eq(calls_on("cuMemFree", p, mark), 2, "not freed again on a thread of its own");
        struct cusim_call f = last_call("cuMemFree", mark);
        cr_assert_eq(f.ctx, 0, "freed again with a context current");
        cr_assert_eq(f.rc, CUDA_ERROR_ILLEGAL_ADDRESS);
        cr_assert_eq(current(), dead, "the dead level was not left as it was");
    }
    cr_assert_eq(stats().failed_destroys, failed + 1, "the refused free was not counted");
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(sim()->async_allocs_live(), 1, "the refused free freed the memory");
    CHECK_OK(cuctx_stream_destroy(&s));
}

/* Bug caught: the memory of a primary context counted gone with a reset
 * (measured: the pool keeps it), or freed with a switch to a context that
 * the reset ended. */
Test(async_mem, outlives_a_primary_reset)
{
    NEED_DRIVER();
    cuctx_ctx pc = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    CUCTX_SCOPED(pc) {
        CHECK_OK(cuctx_mem_alloc_async(&m, (cuctx_stream){0}, BYTES));
    }
    uint64_t p = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_primary_reset(0));
    cr_assert_eq(pool_used(default_pool()), BYTES, "the reset freed it");
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    if (sim()) {
        cr_assert_eq(calls_on("cuMemFree", p, mark), 1);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* ---- default streams by name --------------------------------------------- */

/* A stream-ordered allocation as the process's first call to cuctx
 * (Criterion runs each test in a process of its own): the driver is loaded
 * before the library asks whether it has stream-ordered memory, so {0}
 * with no context current gives the answer it gives later,
 * CUDA_ERROR_INVALID_CONTEXT, not "no stream-ordered memory"
 * (CUDA_ERROR_NOT_SUPPORTED). Mutant killed: lib/mem_async.c:433 `call`
 * (CUCTX_INIT_OR_RETURN of alloc left out; seed 47). */
Test(async_mem, an_allocation_as_the_first_call_loads_the_driver_first)
{
    cuctx_mem m = {0};
    CUresult rc = cuctx_mem_alloc_async(&m, (cuctx_stream){0}, BYTES);
    NEED_DRIVER();      /* (after: it would load the driver itself) */
    cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    if (sim())
        cr_assert_eq(calls("cuMemAllocAsync"), 0);
}

/* Bug caught: {0} taken without a current context, or its memory freed on
 * the current context's stream of the moment instead of its own
 * context's. */
Test(async_mem, a_default_stream_is_the_current_contexts)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0};
    cr_assert_eq(cuctx_mem_alloc_async(&m, (cuctx_stream){0}, BYTES), CUDA_ERROR_INVALID_CONTEXT,
                 "{0} with no context current: %s", cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    CUcontext araw = new_ctx(&a, 0, "A", LEFT_CURRENT);
    CHECK_OK(cuctx_mem_alloc_async(&m, (cuctx_stream){0}, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    CUcontext braw = new_ctx(&b, 0, "B", LEFT_CURRENT);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    EXPECT_CURRENT(braw);
    if (sim()) {
        struct cusim_call f = last_call("cuMemFreeAsync", mark);
        cr_assert_eq(f.handle, p);
        cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)araw, "freed in the context current now, not its own");
        cr_assert_eq(f.stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY);
        cr_assert_eq(calls("cuCtxSynchronize"), 0);
        ASSERT_NO_MISUSE();
    }
    CUCTX_SCOPED(b) {
        CHECK_OK(cuctx_mem_alloc_async(&m, CUCTX_STREAM_PER_THREAD, BYTES));
    }
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- pools ---------------------------------------------------------------- */

/* The log position of the first call of fn naming h from mark on (-1: none). */
static long call_at(const char *fn, uint64_t h, size_t mark)
{
    size_t n = sim()->log_count();
    for (size_t i = mark; i < n; i++) {
        struct cusim_call c;
        sim()->log_get(i, &c);
        if (strcmp(c.fn, fn) == 0 && c.handle == h)
            return (long)i;
    }
    return -1;
}

static uint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute attr)
{
    PFN_cuMemPoolGetAttribute_v11020 get = (PFN_cuMemPoolGetAttribute_v11020)drv_sym("cuMemPoolGetAttribute", 11020);
    cuuint64_t v = 0;
    int flag = 0;
    if (attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES) {
        CHECK_OK(get(pool, attr, &flag));
        return (uint64_t)flag;
    }
    CHECK_OK(get(pool, attr, &v));
    return v;
}

/* Asserts that a pool cuctx made has ended as cuctx ends one (mem_pool.c):
 * never destroyed (the H200's driver crashed in tests/stress with pools
 * destroyed in the run) but parked - its release threshold back to 0, then
 * trimmed to 0, the rest of its attributes as new - after the log's mark;
 * returns the log position of that trim (the pool's end). */
static long assert_parked(CUmemoryPool raw, size_t mark)
{
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, mark), 0, "a pool cuctx made was destroyed");
    long trim = call_at("cuMemPoolTrimTo", (uint64_t)(uintptr_t)raw, mark);
    cr_assert(trim >= 0, "the pool's end did not trim it");
    struct cusim_call c;
    sim()->log_get((size_t)trim, &c);
    cr_assert_eq(c.arg, 0, "the pool's end kept %lld bytes", c.arg);
    /* (memory freed by cuMemFree stays counted as used: measured) */
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), pool_used(raw), "the parked pool holds memory");
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    cr_assert_geq(stats().parked_pools, 1);
    return trim;
}

/* A context C with a stream, an owned pool and n allocations from it on
 * that stream; the pool's handle then destroyed. */
struct pool_scene {
    cuctx_ctx c;
    cuctx_stream s;
    cuctx_mem_pool pool;
    CUmemoryPool raw;
    cuctx_mem m[2];
    size_t mark;    /* the log just before the pool's handle was destroyed */
};

static void pool_scene(struct pool_scene *ps, int n)
{
    memset(ps, 0, sizeof *ps);
    new_ctx(&ps->c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&ps->s, ps->c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_pool_create(&ps->pool, 0, NULL));
    cr_assert_eq(stats().mem_pools, 1);
    ps->raw = cuctx_mem_pool_raw(ps->pool);
    cr_assert_neq(ps->raw, NULL);
    for (int i = 0; i < n; i++)
        CHECK_OK(cuctx_mem_alloc_from_pool(&ps->m[i], ps->pool, ps->s, BYTES));
    cr_assert_eq(pool_used(ps->raw), (size_t)n * BYTES);
    ps->mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&ps->pool));
    cr_assert_eq(ps->pool.id, 0);
    cr_assert_eq(stats().mem_pools, 0, "the handle ends at once");
}

/* Bug caught: the pool ended while cuctx memory from it lives (measured:
 * eight threads destroying pools so crashed the H200's driver within
 * seconds, tools/facts/pool_destroy.c), or not ended once its last
 * allocation is freed (its memory kept), or the memory gone with its
 * pool's handle. */
Test(mem_pool, destroyed_with_allocations_alive_ends_with_the_last_free)
{
    NEED_DRIVER();
    struct pool_scene ps;
    pool_scene(&ps, 2);
    uint64_t p0 = cuctx_mem_ptr(ps.m[0]), p1 = cuctx_mem_ptr(ps.m[1]);
    cr_assert_neq(p0, 0, "the allocation went with its pool's handle");
    if (sim())
        cr_assert_eq(call_at("cuMemPoolTrimTo", (uint64_t)(uintptr_t)ps.raw, ps.mark), -1,
                     "the pool was ended with memory alive");
    CHECK_OK(cuctx_mem_destroy(&ps.m[0]));
    if (sim())
        cr_assert_eq(call_at("cuMemPoolTrimTo", (uint64_t)(uintptr_t)ps.raw, ps.mark), -1,
                     "the pool was ended with its second allocation alive");
    cr_assert_eq(stats().parked_pools, 0);
    CHECK_OK(cuctx_mem_destroy(&ps.m[1]));
    cr_assert_eq(stats().parked_pools, 1);
    if (sim()) {
        long freed = call_at("cuMemFreeAsync", p1, ps.mark), ended = assert_parked(ps.raw, ps.mark);
        cr_assert(freed >= 0 && ended > freed, "the pool's end (log %ld) did not follow the last free (log %ld)",
                  ended, freed);
        cr_assert_eq(sim()->live(CUSIM_POOL), 1, "the parked pool is the one pool left");
        cr_assert_eq(pool_attr(ps.raw, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0, "the parked pool holds memory");
        ASSERT_NO_MISUSE();
    }
    cr_assert_eq(stats().failed_destroys, 0);
    CHECK_OK(cuctx_stream_destroy(&ps.s));
    CHECK_OK(cuctx_ctx_destroy(&ps.c));
}

/* Bug caught: a pool with no cuctx memory alive kept past its handle's
 * destroy, or its memory's reference never given back (the pool then
 * outlives everything). */
Test(mem_pool, with_its_memory_freed_first_it_ends_with_its_handle)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, pool, s, BYTES));
    CHECK_OK(cuctx_mem_destroy(&m));
    size_t mark = log_mark();
    cr_assert_eq(stats().parked_pools, 0);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().parked_pools, 1);
    if (sim()) {
        assert_parked(raw, mark);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

static int device_count(void)
{
    int n = 0;
    CHECK_OK(((PFN_cuDeviceGetCount_v2000)drv_sym("cuDeviceGetCount", 2000))(&n));
    return n;
}

static CUmemAccess_flags pool_access(CUmemoryPool pool, int dev)
{
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_MAX;
    CHECK_OK(((PFN_cuMemPoolGetAccess_v11020)drv_sym("cuMemPoolGetAccess", 11020))(&f, pool, &loc));
    return f;
}

/* Bug caught: a create not taking a parked pool of the same properties
 * (each pool's end then leaves one more behind), taking one of other
 * properties (another device's; an exportable one, which is never parked),
 * or handing one out with its last owner's attributes or other devices'
 * access still set. */
Test(mem_pool, a_create_takes_a_parked_pool_set_back_to_new)
{
    NEED_DRIVER();
    PFN_cuMemPoolSetAttribute_v11020 set =
        (PFN_cuMemPoolSetAttribute_v11020)drv_sym("cuMemPoolSetAttribute", 11020);
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool a = {0}, b = {0};
    cuctx_mem m = {0};
    int devices = device_count(), off = 0;
    cuuint64_t keep = 1 << 20;
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&a, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(a);
    CHECK_OK(set(raw, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CHECK_OK(set(raw, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &off));
    CHECK_OK(set(raw, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, &off));
    if (devices >= 2) {
        CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        CHECK_OK(((PFN_cuMemPoolSetAccess_v11020)drv_sym("cuMemPoolSetAccess", 11020))(raw, &rw, 1));
        cr_assert_eq(pool_access(raw, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    }
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, a, s, BYTES));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_stream_synchronize(s));
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&a));
    cr_assert_eq(stats().mem_pools, 0);
    cr_assert_eq(stats().parked_pools, 1);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC), 1);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES), 1);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES), 1);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0, "the parked pool holds memory");
    if (devices >= 2)
        cr_assert_eq(pool_access(raw, 1), CU_MEM_ACCESS_FLAGS_PROT_NONE, "device 1 may still reach it");
    if (sim())
        assert_parked(raw, mark);
    /* other properties: a pool of their own */
    if (devices >= 2) {
        CHECK_OK(cuctx_mem_pool_create(&b, 1, NULL));
        cr_assert_neq(cuctx_mem_pool_raw(b), raw, "device 1 was given device 0's pool");
        CHECK_OK(cuctx_mem_pool_destroy(&b));
        cr_assert_eq(stats().parked_pools, 2);
    }
    CUmemPoolProps shared;
    memset(&shared, 0, sizeof shared);
    shared.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    shared.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    shared.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CHECK_OK(cuctx_mem_pool_create(&b, 0, &shared));
    CUmemoryPool raw_b = cuctx_mem_pool_raw(b);
    cr_assert_neq(raw_b, raw, "an exportable pool was given a parked one");
    size_t parked = stats().parked_pools;
    mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&b));
    cr_assert_eq(stats().parked_pools, parked, "an exportable pool was parked");
    if (sim())
        cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw_b, mark), 1);
    /* the same again: the parked pool, no new one */
    mark = log_mark();
    CHECK_OK(cuctx_mem_pool_create(&a, 0, NULL));
    cr_assert_eq(cuctx_mem_pool_raw(a), raw, "a create did not take the parked pool");
    cr_assert_eq(stats().parked_pools, parked - 1);
    cr_assert_eq(stats().mem_pools, 1);
    if (sim())
        cr_assert_eq(calls_on("cuMemPoolCreate", 0, mark), 0, "a create made a pool with one parked");
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, a, s, BYTES));
    cr_assert_eq(pool_used(raw), BYTES);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_pool_destroy(&a));
    cr_assert_eq(stats().parked_pools, parked);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: a pool the driver would not set back parked anyway (the next
 * create then gets a pool holding memory or someone else's settings), or
 * that failure lost or returned as the destroy's, which did succeed. */
Test(mem_pool, one_that_cannot_be_set_back_is_destroyed_and_reported)
{
    NEED_DRIVER();
    NEED_SIM();
    static const char *const steps[] = {"cuMemPoolSetAttribute", "cuMemPoolTrimTo", "cuDeviceGetCount",
                                        "cuMemPoolGetAccess"};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        struct handler_count h;
        cuctx_mem_pool p = {0};
        CHECK_OK(cuctx_mem_pool_create(&p, 0, NULL));
        CUmemoryPool raw = cuctx_mem_pool_raw(p);
        count_handler_install(&h);
        sim()->fail_call(steps[i], 1, CUDA_ERROR_NOT_PERMITTED);
        size_t mark = log_mark();
        CHECK_OK(cuctx_mem_pool_destroy(&p));
        cuctx_set_error_handler(NULL, NULL);
        cr_assert_eq(p.id, 0);
        cr_assert_eq(h.calls, 1, "%s failing: %d reports", steps[i], h.calls);
        cr_assert_eq(h.last_rc, CUDA_ERROR_NOT_PERMITTED);
        cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, mark), 1, "%s failing: not destroyed",
                     steps[i]);
        cr_assert_eq(stats().parked_pools, 0);
        cr_assert_eq(sim()->live(CUSIM_POOL), 0);
    }
    ASSERT_NO_MISUSE();
}

/* Bug caught: the last allocation's free after its context ended (a
 * cuMemFree with no context current) or by cuctx_mem_free_async on
 * another stream not ending a pool whose handle went first. */
Test(mem_pool, the_last_free_ends_it_whichever_way_it_frees)
{
    NEED_DRIVER();
    struct pool_scene ps;
    pool_scene(&ps, 2);
    cuctx_stream s2 = {0};
    uint64_t p1 = cuctx_mem_ptr(ps.m[1]);
    CHECK_OK(cuctx_stream_create(&s2, ps.c, 0, 0));
    CHECK_OK(cuctx_mem_free_async(&ps.m[0], s2));
    cr_assert_eq(ps.m[0].id, 0);
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_stream_destroy(&ps.s));
    CHECK_OK(cuctx_ctx_destroy(&ps.c));
    if (sim())
        cr_assert_eq(call_at("cuMemPoolTrimTo", (uint64_t)(uintptr_t)ps.raw, ps.mark), -1,
                     "the pool was ended with memory alive");
    CHECK_OK(cuctx_mem_destroy(&ps.m[1]));     /* its context gone: cuMemFree */
    cr_assert_eq(stats().parked_pools, 1);
    if (sim()) {
        long freed = call_at("cuMemFree", p1, ps.mark), ended = assert_parked(ps.raw, ps.mark);
        cr_assert(freed >= 0 && ended > freed, "the pool's end (log %ld) did not follow the free (log %ld)",
                  ended, freed);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a refused allocation keeping its reference to the pool (the
 * pool then never destroyed), or a borrowed pool destroyed by cuctx when
 * its last cuctx allocation goes. */
Test(mem_pool, a_refused_allocation_and_a_borrowed_pool_hold_nothing)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0}, theirs = {0};
    cuctx_mem m = {0}, n = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    sim()->fail_call("cuMemAllocFromPoolAsync", 1, CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(cuctx_mem_alloc_from_pool(&m, pool, s, BYTES), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert_eq(m.id, 0);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().parked_pools, 1, "the refused allocation kept the pool alive");
    assert_parked(raw, mark);
    /* a pool made elsewhere, borrowed: its owner destroys it */
    PFN_cuMemPoolDestroy_v11020 destroy = (PFN_cuMemPoolDestroy_v11020)drv_sym("cuMemPoolDestroy", 11020);
    CUmemoryPool mine = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&theirs, mine, 0));
    CHECK_OK(cuctx_mem_alloc_from_pool(&n, theirs, s, BYTES));
    CHECK_OK(cuctx_mem_pool_destroy(&theirs));
    mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&n));
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)mine, mark), 0, "cuctx destroyed a borrowed pool");
    CHECK_OK(destroy(mine));
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: the pool's device ignored (props NULL must mean the device
 * given, pinned and device-local), or a pool that dies with a context. */
Test(mem_pool, serves_a_context_made_after_its_first_died)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem_pool pool = {0};
    CUCTX_AUTO cuctx_mem m = {0};
    new_ctx(&a, 0, "A", LEFT_CURRENT);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    if (sim())
        cr_assert_eq(last_call("cuMemPoolCreate", mark).ctx, (uint64_t)(uintptr_t)current(),
                     "a pool create switched contexts");
    CHECK_OK(cuctx_ctx_destroy(&a));
    new_ctx(&b, 0, "B", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, b, 0, 0));
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, pool, s, BYTES));
    cr_assert_eq(pool_used(cuctx_mem_pool_raw(pool)), BYTES);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(pool_used(cuctx_mem_pool_raw(pool)), 0);
    CHECK_OK(cuctx_mem_pool_trim(pool, 0));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&b));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: the default pool's handle destroying the device's default
 * pool (it is borrowed), or adopted pools' ownership ignored. */
Test(mem_pool, the_default_pool_is_borrowed)
{
    NEED_DRIVER();
    cuctx_mem_pool d = {0}, adopted = {0};
    CHECK_OK(cuctx_mem_pool_default(&d, 0));
    cr_assert_eq(cuctx_mem_pool_raw(d), default_pool());
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&d));
    CHECK_OK(cuctx_mem_pool_adopt(&adopted, default_pool(), 0));
    CHECK_OK(cuctx_mem_pool_destroy(&adopted));
    if (sim()) {
        cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)default_pool(), mark), 0,
                     "the default pool was destroyed");
        ASSERT_NO_MISUSE();
    }
    cr_assert_eq(stats().mem_pools, 0);
}

/* Bug caught: a pool's destroy (an adopted owned pool's: those cuctx made
 * are never destroyed) running while another thread's context synchronize,
 * stream destroy or context destroy runs (measured: the real driver
 * crashes or hangs, tools/facts/pool_destroy.c; the simulator records a
 * misuse), for either order of the two. Each call of the simulator runs
 * 200 ms here; the destroy must come after the other call's end in the
 * log. */
struct beside { cuctx_ctx c; cuctx_stream s; cuctx_mem_pool pool; int what; CUresult rc; cuctx_ctx dies; };
static void *run_beside(void *p)
{
    struct beside *b = p;
    b->rc = b->what == 0   ? cuctx_ctx_synchronize(b->c)
            : b->what == 1 ? cuctx_stream_destroy(&b->s)
            : b->what == 2 ? cuctx_mem_pool_destroy(&b->pool)
                           : cuctx_ctx_destroy(&b->dies);
    return NULL;
}
Test(mem_pool, its_destroy_never_runs_beside_a_synchronize_or_a_stream_destroy)
{
    static const char *const first[] = {"cuCtxSynchronize", "cuStreamDestroy", "cuMemPoolDestroy", "cuCtxDestroy"};
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    sim()->set_sync_time(200000);
    for (int what = 0; what < 5; what++) {
        struct beside b = {c, {0}, {0}, what % 4, CUDA_ERROR_UNKNOWN, {0}};
        cuctx_stream s = {0};
        cuctx_mem_pool pool = {0};
        cuctx_mem m = {0};
        CHECK_OK(cuctx_stream_create(&b.s, c, 0, 0));
        CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
        adopt_new_pool(&b.pool);
        adopt_new_pool(&pool);
        if (what == 3)      /* another context's destroy */
            new_ctx(&b.dies, 0, "D", POPPED);
        if (what == 4)      /* the pool ended by its last allocation's free */
            CHECK_OK(cuctx_mem_alloc_from_pool(&m, pool, s, BYTES));
        CUmemoryPool raw = cuctx_mem_pool_raw(pool);
        size_t mark = log_mark();
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, run_beside, &b), 0);
        while (sim()->sleeping() == 0)      /* the other call is running */
            usleep(1000);
        if (what == 2) {    /* then the synchronize, beside the pool's destroy */
            CHECK_OK(cuctx_ctx_synchronize(c));
            CHECK_OK(cuctx_mem_pool_destroy(&pool));
        } else {
            CHECK_OK(cuctx_mem_pool_destroy(&pool));
            CHECK_OK(cuctx_mem_destroy(&m));
        }
        pthread_join(t, NULL);
        CHECK_OK(b.rc);
        ASSERT_NO_MISUSE();
        long other = -1, mine = call_at(what == 2 ? "cuCtxSynchronize" : "cuMemPoolDestroy",
                                        what == 2 ? 0 : (uint64_t)(uintptr_t)raw, mark);
        for (size_t i = mark; i < log_mark(); i++) {
            struct cusim_call call;
            if (sim()->log_get(i, &call) == 0 && strcmp(call.fn, first[what % 4]) == 0 && other < 0)
                other = (long)i;
        }
        cr_assert(other >= 0 && mine > other, "round %d: %s (log %ld) came before the end of %s (log %ld)", what,
                  what == 2 ? "the synchronize" : "the pool's destroy", mine, first[what % 4], other);
        CHECK_OK(cuctx_mem_pool_destroy(&b.pool));
        CHECK_OK(cuctx_stream_destroy(&b.s));
        CHECK_OK(cuctx_stream_destroy(&s));
    }
    sim()->set_sync_time(0);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a stale pool reaching the driver, or {0} not taken as the
 * device's current pool. */
Test(mem_pool, a_bad_pool_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, pool, s, BYTES));     /* {0}: the device's current pool */
    if (sim()) {
        cr_assert_eq(calls_on("cuMemAllocAsync", cuctx_mem_ptr(m), mark), 1);
        cr_assert_eq(calls("cuMemAllocFromPoolAsync"), 0);
    }
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    cuctx_mem_pool copy = pool;
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    mark = log_mark();
    cr_assert_eq(cuctx_mem_alloc_from_pool(&m, copy, s, BYTES), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(cuctx_mem_pool_trim(copy, 0), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_mem_pool_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    if (sim()) {
        cr_assert_eq(calls_on("cuMemAllocFromPoolAsync", 0, mark) + calls_on("cuMemPoolTrimTo", (uint64_t)(uintptr_t)raw, mark),
                     0);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- the handle ----------------------------------------------------------- */

/* Bug caught: a create into a cuctx_mem holding live memory of the other
 * kind overwriting it (the claim looking at one kind only). */
Test(async_mem, a_handle_holding_either_kind_is_not_overwritten)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc(&m, c, BYTES));
    uint64_t held = m.id;
    cr_assert_eq(cuctx_mem_alloc_async(&m, s, BYTES), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(m.id, held);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    held = m.id;
    cr_assert_eq(cuctx_mem_alloc(&m, c, BYTES), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(m.id, held);
    cuctx_ctx owner = {0};
    cr_assert_eq(cuctx_mem_ctx(m, &owner), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "belongs to its pool"), "%s", cuctx_last_error_message());
    cuctx_mem copy = m, stale = m;
    CHECK_OK(cuctx_destroy(&m));    /* by its kind */
    cr_assert_eq(cuctx_mem_destroy(&copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_mem_ptr(copy), 0);
    cr_assert_eq(cuctx_mem_ctx(stale, &owner), CUDA_ERROR_INVALID_HANDLE, "a stale handle is a bad handle first");
    cr_assert(strstr(cuctx_last_error_message(), "stale"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: CUCTX_AUTO missing the kind, or freeing twice across
 * continue and return. */
static int auto_return(cuctx_stream s, int early)
{
    CUCTX_AUTO cuctx_mem m = {0};
    if (cuctx_mem_alloc_async(&m, s, BYTES) != CUDA_SUCCESS)
        return -1;
    if (early)
        return 1;
    return 0;
}
Test(async_mem, cuctx_auto_frees_at_continue_and_return)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    size_t mark = log_mark();
    for (int i = 0; i < 4; i++) {
        CUCTX_AUTO cuctx_mem m = {0};
        CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
        if (i % 2)
            continue;
        cr_assert_eq(stats().async_mems, 1);
    }
    cr_assert_eq(auto_return(s, 1), 1);
    cr_assert_eq(auto_return(s, 0), 0);
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(pool_used(default_pool()), 0);
    if (sim()) {
        cr_assert_eq(calls("cuMemAllocAsync"), 6);
        unsigned long frees = 0;
        for (unsigned i = 0; i < 6; i++)
            frees += nth_call("cuMemFreeAsync", mark, i).stream == (uint64_t)(uintptr_t)cuctx_stream_raw(s);
        cr_assert_eq(frees, 6, "each allocation freed once, on its stream");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: the leak report not telling stream-ordered memory and pools
 * apart from cuMemAlloc memory. */
Test(async_mem, the_leak_report_names_the_kind)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    cuctx_mem_pool pool = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    cuctx_leak_report(f);
    fclose(f);
    cr_assert(strstr(buf, "stream-ordered memory"), "%s", buf);
    cr_assert(strstr(buf, "memory pool"), "%s", buf);
    cr_assert(strstr(buf, "test_async.c"), "no create site: %s", buf);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: the free of memory whose non-blocking stream is gone
 * synchronizing the context, which the driver refuses (900) while another
 * stream of it captures, ending that capture and losing the memory. */
Test(async_mem, a_free_after_its_stream_leaves_a_capture_beside_it_alone)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s1 = {0}, s2 = {0};
    cuctx_mem m = {0};
    cuctx_graph g = {0};
    cuctx_capture cap;
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s1, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&s2, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s1, BYTES));
    queue_work(m, s1);
    CHECK_OK(cuctx_stream_destroy(&s1));
    CHECK_OK(cuctx_capture_begin(&cap, s2, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_capture_end(&cap, 1));
    cr_assert_neq(g.id, 0, "the capture beside the free was lost");
    cr_assert_eq(stats().failed_destroys, 0);
    if (sim()) {
        cr_assert_eq(sim()->async_allocs_live(), 0);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_graph_destroy(&g));
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a stream destroyed while it captured taken as waited for -
 * its synchronize is refused then (900), and work queued before the
 * capture may still run: its memory's free must wait for the context. */
Test(async_mem, a_stream_destroyed_while_capturing_is_waited_for_at_the_free)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0}, m2 = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    CHECK_OK(cuctx_mem_alloc_async(&m2, s, BYTES));
    queue_work(m, s);
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(g.id, 0);
    unsigned long syncs = calls("cuCtxSynchronize");
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&m));
    if (sim()) {
        cr_assert_eq(calls("cuCtxSynchronize") - syncs, 1, "the free did not wait for the context");
        cr_assert_eq(last_call("cuMemFreeAsync", mark).stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY);
        cr_assert_eq(sim()->async_allocs_live(), 1);
    }
    /* Bug caught: the stream remembered after its work was waited for
     * (every later free synchronizing the context again, the list
     * growing for good). */
    syncs = calls("cuCtxSynchronize");
    CHECK_OK(cuctx_mem_destroy(&m2));
    if (sim()) {
        cr_assert_eq(calls("cuCtxSynchronize") - syncs, 0, "the second free waited again");
        cr_assert_eq(sim()->async_allocs_live(), 0);
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* A stream destroyed while it captured, in a context of its own: its
 * memory made, work queued on it, then its destroy (its synchronize
 * refused, so it is remembered as not waited for). */
static void destroy_while_capturing(cuctx_ctx c, cuctx_stream *s, cuctx_mem *m, int n)
{
    cuctx_capture cap;
    cuctx_graph g = {0};
    CHECK_OK(cuctx_stream_create(s, c, CU_STREAM_NON_BLOCKING, 0));
    for (int i = 0; i < n; i++)
        CHECK_OK(cuctx_mem_alloc_async(&m[i], *s, BYTES));
    queue_work(m[0], *s);
    CHECK_OK(cuctx_capture_begin(&cap, *s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_OK(cuctx_stream_destroy(s));
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
}

static void *destroy_mem(void *p)
{
    cuctx_mem *m = p;
    CHECK_OK(cuctx_mem_destroy(m));
    return NULL;
}

/* Two frees of one such stream's memory on two threads, both seeing it not
 * waited for, each synchronizing its context (delayed in the simulator, so
 * that the second begins while the first waits and ends after it): the
 * second's "it is waited for now" finds the stream gone from the list.
 * Bug caught: that second removal taking another stream's place instead -
 * the list's slot just past its end still holds the id removed - so that
 * the other stream, of another context whose work nothing waited for, is
 * forgotten and its memory freed under that work (the simulator's misuse). */
Test(async_mem, a_stream_waited_for_twice_leaves_another_remembered)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c1 = {0}, c2 = {0};
    cuctx_stream x = {0}, y = {0};
    cuctx_mem mx[1] = {{0}}, my[2] = {{0}, {0}};
    CUcontext C1 = new_ctx(&c1, 0, "C1", LEFT_CURRENT);
    CUcontext C2 = new_ctx(&c2, 0, "C2", LEFT_CURRENT);
    destroy_while_capturing(c1, &x, mx, 1);    /* remembered first, */
    destroy_while_capturing(c2, &y, my, 2);    /* then this one, last */
    unsigned long syncs = calls("cuCtxSynchronize");
    size_t mark = log_mark();
    sim()->set_delay("cuCtxSynchronize", 300000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_mem, &my[0]), 0);
    while (sim()->sleeping() == 0)
        usleep(1000);
    usleep(50000);  /* the second synchronize ends well after the first */
    CHECK_OK(cuctx_mem_destroy(&my[1]));
    pthread_join(t, NULL);
    sim()->set_delay("cuCtxSynchronize", 0);
    cr_assert_eq(calls("cuCtxSynchronize") - syncs, 2, "the two frees did not both wait (the race was not set up)");
    cr_assert_eq(nth_call("cuCtxSynchronize", mark, 0).ctx, (uint64_t)(uintptr_t)C2);
    cr_assert_eq(nth_call("cuCtxSynchronize", mark, 1).ctx, (uint64_t)(uintptr_t)C2);
    syncs = calls("cuCtxSynchronize");
    mark = log_mark();
    CHECK_OK(cuctx_mem_destroy(&mx[0]));
    cr_assert_eq(calls("cuCtxSynchronize") - syncs, 1, "the free of the other stream's memory did not wait");
    cr_assert_eq(last_call("cuCtxSynchronize", mark).ctx, (uint64_t)(uintptr_t)C1, "waited for another context");
    cr_assert_eq(sim()->async_allocs_live(), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&c2));
    CHECK_OK(cuctx_ctx_destroy(&c1));
}

/* Bug caught: a pool create given no handle to fill going on (no error),
 * or an adopt into a handle that holds a live pool overwriting it or
 * claiming success while doing nothing. Mutants killed:
 * lib/mem_pool.c:302 (the NULL out's error replaced by success) and
 * lib/mem_pool.c:344 (the adopt's refused claim answered with success),
 * seed 29. */
Test(mem_pool, a_null_or_live_handle_to_fill_is_refused)
{
    NEED_DRIVER();
    cuctx_mem_pool pool = {0};
    unsigned long creates = sim() ? calls("cuMemPoolCreate") : 0;
    cr_assert_eq(cuctx_mem_pool_create(NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    if (sim())
        cr_assert_eq(calls("cuMemPoolCreate"), creates, "a pool was made for no handle");
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    uint64_t id = pool.id;
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    cr_assert_eq(cuctx_mem_pool_adopt(&pool, default_pool(), 0), CUDA_ERROR_INVALID_VALUE,
                 "an adopt into a live pool's handle was not refused");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(pool.id, id, "the refused adopt changed the handle");
    cr_assert_eq(cuctx_mem_pool_raw(pool), raw);
    cr_assert_eq(stats().mem_pools, 1);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().mem_pools, 0);
}

/* ---- mem_async survivors (ma2) -------------------------------------------- */

/* The driver refusing the free of the last allocation from a pool whose
 * handle went first: the memory may still be there, so the pool keeps the
 * reference the memory held - never ended (parked) under it; the destroy
 * returns the refusal and counts a failed destroy. Bug caught: the pool's
 * reference given back whatever the free answered (the pool then trimmed
 * and handed to the next create with the memory still in it). Mutant
 * killed: lib/mem_async.c:316 `lcr` (the reference given back when the
 * memory has none, or when the free failed). */
Test(mem_pool, a_refused_free_keeps_the_pool_of_its_memory)
{
    NEED_DRIVER();
    NEED_SIM();
    struct pool_scene ps;
    pool_scene(&ps, 1);
    uint64_t p = cuctx_mem_ptr(ps.m[0]);
    uint64_t failed = stats().failed_destroys;
    sim()->fail_call("cuMemFreeAsync", 1, CUDA_ERROR_ILLEGAL_ADDRESS);
    cr_assert_eq(cuctx_mem_destroy(&ps.m[0]), CUDA_ERROR_ILLEGAL_ADDRESS, "%s", cuctx_last_error_message());
    cr_assert_eq(ps.m[0].id, 0);
    cr_assert_eq(calls_on("cuMemFreeAsync", p, ps.mark), 1);
    cr_assert_eq(stats().failed_destroys, failed + 1, "the refused free was not counted");
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(call_at("cuMemPoolTrimTo", (uint64_t)(uintptr_t)ps.raw, ps.mark), -1,
                 "the pool was ended under memory whose free was refused");
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)ps.raw, ps.mark), 0);
    cr_assert_eq(stats().parked_pools, 0, "the pool was parked with its memory's free refused");
    cr_assert_eq(pool_used(ps.raw), BYTES, "the refused free freed the memory");
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&ps.s));
    CHECK_OK(cuctx_ctx_destroy(&ps.c));
}

/* cuctx_mem_free_async given no handle: refused as every call given a NULL
 * handle pointer is (CUDA_ERROR_INVALID_VALUE, "the handle pointer is
 * NULL"), before the driver, whatever the stream. Bug caught: a free of no
 * memory answering success. Mutant killed: lib/mem_async.c:495 `ret` (the
 * NULL pointer's error replaced by CUDA_SUCCESS). */
Test(async_mem, free_async_refuses_a_null_handle_pointer)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    unsigned long frees = sim() ? calls("cuMemFreeAsync") : 0;
    cuctx_stream streams[] = {s, {0}};
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) {
        cr_assert_eq(cuctx_mem_free_async(NULL, streams[i]), CUDA_ERROR_INVALID_VALUE);
        cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
        cr_assert(strstr(cuctx_last_error_message(), "cuctx_mem_free_async: the handle pointer is NULL"), "%s",
                  cuctx_last_error_message());
    }
    if (sim())
        cr_assert_eq(calls("cuMemFreeAsync"), frees, "the driver was asked to free no memory");
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- mem_async survivors (ma1) -------------------------------------------- */

/* Case 4 after case 3 declined: p freed once, by cuMemFree with no
 * context current, succeeding, and never by cuMemFreeAsync. */
static void ma1_freed_by_cuMemFree(uint64_t p, size_t mark)
{
    cr_assert_eq(calls_on("cuMemFreeAsync", p, mark), 0, "freed on a stream (case 3 taken)");
    cr_assert_eq(calls_on("cuMemFree", p, mark), 1, "not freed by cuMemFree");
    struct cusim_call f = last_call("cuMemFree", mark);
    cr_assert_eq(f.ctx, 0, "freed with a context current");
    cr_assert_eq(f.rc, CUDA_SUCCESS);
}

/* Case 3 asks the pointer's device first; where the driver refuses that
 * question there is no device to ask about: nothing more is asked (the
 * primary context's state of no device), cuMemFree frees the memory, and
 * the report names the question refused. Bug caught: the refusal taken
 * for an answer, the state of whatever device ordinal was left asked.
 * Mutant killed: lib/mem_async.c:188 `ror` (the refusal's test
 * reversed). */
Test(async_mem, a_refused_pointer_query_asks_no_primary_contexts_state)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx pc = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    struct handler_count h;
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    uint64_t p = orphaned_async_mem(&m, &s);
    size_t mark = log_mark();
    unsigned long states = calls("cuDevicePrimaryCtxGetState");
    count_handler_install(&h);
    sim()->fail_call("cuPointerGetAttribute", 1, CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_mem_destroy(&m));
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls_on("cuPointerGetAttribute", p, mark), 1);
    cr_assert_eq(calls("cuDevicePrimaryCtxGetState"), states, "a primary context's state asked with no device known");
    ma1_freed_by_cuMemFree(p, mark);
    cr_assert_eq(h.calls, 1, "reports: %d", h.calls);
    cr_assert(strstr(h.last_msg, "cuPointerGetAttribute failed (CUDA_ERROR_INVALID_VALUE)"), "%s", h.last_msg);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* A pointer query the driver answers with success but without writing
 * the device (an answer cuctx cannot use: the simulator's fault plan with
 * CUDA_SUCCESS): the ordinal left is -1, no device, so the memory is not
 * freed on device 0's primary context on a guess - cuMemFree frees it.
 * Bug caught: the ordinal's initial value a real device's (0), the free
 * made on that device's primary context. Mutant killed:
 * lib/mem_async.c:179 `const` (`int dev = -0;`). */
Test(async_mem, a_pointer_query_that_names_no_device_frees_on_no_primary_context)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx pc = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    uint64_t p = orphaned_async_mem(&m, &s);
    size_t mark = log_mark();
    sim()->fail_call("cuPointerGetAttribute", 1, CUDA_SUCCESS);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls_on("cuPointerGetAttribute", p, mark), 1);
    for (size_t i = mark; i < sim()->log_count(); i++) {
        struct cusim_call c;
        sim()->log_get(i, &c);
        if (strcmp(c.fn, "cuDevicePrimaryCtxGetState") == 0)
            cr_assert_neq(c.arg, 0, "device 0's primary context asked about: no device was named");
    }
    ma1_freed_by_cuMemFree(p, mark);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* The entry cuctx holds at the address of the device's active primary
 * context names another device (on the real driver: an address that is
 * another device's context now; here the primary context is active
 * through an outside retain, unknown to cuctx, and the simulator's
 * cuCtxGetDevice, asked when the address is registered, answers success
 * without writing the device). Case 3 then does not apply - no free on a
 * context it cannot vouch for - and cuMemFree frees the memory, quietly;
 * the entry held to look is let go, so a report made after it reaches
 * the handler at once (reports wait while the thread holds an entry).
 * Bugs caught: the free made on that context anyway, the memory left
 * unfreed with success claimed, the entry kept held. Mutants killed:
 * lib/mem_async.c:210 `lcr`, :212 `call` and :213 `ret`. */
Test(async_mem, a_primary_address_whose_entry_is_another_devices_frees_with_cuMemFree)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_stream s = {0}, s2 = {0};
    cuctx_mem m = {0}, m2 = {0};
    struct handler_count h;
    uint64_t p = orphaned_async_mem(&m, &s);
    uint64_t p2 = orphaned_async_mem(&m2, &s2);
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    size_t mark = log_mark();
    unsigned long devices = calls("cuCtxGetDevice");
    count_handler_install(&h);
    sim()->fail_call("cuCtxGetDevice", 1, CUDA_SUCCESS);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuCtxGetDevice"), devices + 1, "the primary context's address was not registered");
    ma1_freed_by_cuMemFree(p, mark);
    cr_assert_eq(h.calls, 0, "reported: %s", h.last_msg);
    cr_assert_eq(sim()->async_allocs_live(), 1, "the memory was not freed");
    /* the next free's report (its pointer query refused) is delivered now */
    mark = log_mark();
    sim()->fail_call("cuPointerGetAttribute", 1, CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_mem_destroy(&m2));
    cr_assert_eq(h.calls, 1, "the report waited: the first free kept an entry held");
    cr_assert(strstr(h.last_msg, "cuPointerGetAttribute failed"), "%s", h.last_msg);
    ma1_freed_by_cuMemFree(p2, mark);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_stream_destroy(&s2));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
}

/* Finding the address of the device's active primary context fails
 * halfway: cuctx did not know it, and the release after its retain is
 * refused by the driver, the address in hand. Case 3 then does not free
 * on it (found by a failed step), and cuMemFree frees the memory, with a
 * report naming that step. Bug caught: the address of a failed lookup
 * used anyway. Mutant killed: lib/mem_async.c:207 `lcr` (the entry held
 * where the address was given, whatever the lookup answered). */
Test(async_mem, a_primary_context_found_by_a_failed_lookup_is_not_freed_on)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    struct handler_count h;
    uint64_t p = orphaned_async_mem(&m, &s);
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    size_t mark = log_mark();
    unsigned long retains = calls("cuDevicePrimaryCtxRetain");
    count_handler_install(&h);
    sim()->fail_call("cuDevicePrimaryCtxRelease", 1, CUDA_ERROR_UNKNOWN);
    CHECK_OK(cuctx_mem_destroy(&m));
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), retains + 1, "the address was not looked up");
    ma1_freed_by_cuMemFree(p, mark);
    cr_assert_eq(h.calls, 1, "reports: %d", h.calls);
    cr_assert(strstr(h.last_msg, "finding the device's primary context failed (CUDA_ERROR_UNKNOWN)"), "%s",
              h.last_msg);
    cr_assert_eq(sim()->async_allocs_live(), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
}

/* A thread whose current context died frees memory on its live stream
 * (case 1): the driver refuses the first free (the dead level current),
 * and the free made again with the stream's context pushed is refused
 * too (a fault plan): the destroy returns that refusal and counts a
 * failed destroy, the memory kept, as for any free the driver refuses.
 * Bug caught: the second free's answer dropped, success claimed for
 * memory never freed. Mutant killed: lib/mem_async.c:143 `ret`
 * (free_on_stream_pushed returning 0). */
Test(async_mem, a_refused_free_with_the_streams_context_pushed_is_returned)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0}, d = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    CUcontext dead = cuctx_ctx_raw(d), home = cuctx_ctx_raw(c);
    CUstream sraw = cuctx_stream_raw(s);
    uint64_t failed = stats().failed_destroys;
    CUCTX_SCOPED(d) {
        destroy_ctx_elsewhere(&d);
        size_t mark = log_mark();
        sim()->fail_call("cuMemFreeAsync", 2, CUDA_ERROR_ILLEGAL_ADDRESS);
        cr_assert_eq(cuctx_mem_destroy(&m), CUDA_ERROR_ILLEGAL_ADDRESS, "%s", cuctx_last_error_message());
        cr_assert_eq(calls_on("cuMemFreeAsync", p, mark), 2, "not freed again with the stream's context pushed");
        struct cusim_call f = nth_call("cuMemFreeAsync", mark, 0);
        cr_assert_eq(f.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "the first free was not refused for the dead level");
        f = nth_call("cuMemFreeAsync", mark, 1);
        cr_assert_eq(f.stream, (uint64_t)(uintptr_t)sraw, "not on its stream");
        cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)home, "not with the stream's context pushed");
        cr_assert_eq(f.rc, CUDA_ERROR_ILLEGAL_ADDRESS);
        cr_assert_eq(current(), dead, "the dead level was not left as it was");
    }
    cr_assert_eq(stats().failed_destroys, failed + 1, "the refused free was not counted");
    cr_assert_eq(sim()->async_allocs_live(), 1, "the refused free freed the memory");
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Case 4's free on a thread of its own while the calling thread is
 * cancelled: that thread is not cancelled halfway through the free -
 * while the helper thread frees its memory, answering into its frame -
 * but after it, the destroy's answer returned, and its cancel state is
 * given back as it was, so the cancel then lands at its next cancellation
 * point. The simulator holds the calling thread's own cuMemFree (refused:
 * its current context is dead) and then the helper thread's (both after
 * the call, cusim_hold_after), and the cancel is sent while the helper's
 * is held. Bugs caught: the cancel taken in the join (the destroy never
 * returning, the helper left behind), the cancel state left disabled (the
 * thread never cancelled). Mutants killed: lib/mem_async.c:160 `call` and
 * lib/mem_async.c:164 `call`. */
struct ma1_cancelled { cuctx_ctx c; cuctx_mem m; CUresult rc; };
/* (a frame of its own, returned from before the cancel lands: the frame
 * the cancel unwinds keeps no poisoned stack under ASan, whose redzones an
 * unwind by cancellation leaves behind for the thread's exit to trip on) */
static __attribute__((noinline)) void ma1_free_in_a_dead_scope_body(struct ma1_cancelled *a)
{
    CUCTX_SCOPED(a->c) {
        destroy_ctx_elsewhere(&a->c);
        a->rc = cuctx_mem_destroy(&a->m);
    }
}
static void *ma1_free_in_a_dead_scope(void *p)
{
    ma1_free_in_a_dead_scope_body(p);
    pthread_testcancel();   /* a cancel put off by the free lands here */
    return NULL;
}
/* Waits (10 s at most) until n calls of cuMemFree were made and one call
 * is held after it. */
static void ma1_wait_held_free(unsigned long n)
{
    for (int i = 0; i < 10000 && !(calls("cuMemFree") == n && sim()->sleeping() == 1); i++)
        usleep(1000);
    cr_assert_eq(calls("cuMemFree"), n, "cuMemFree calls");
    cr_assert_eq(sim()->sleeping(), 1, "no cuMemFree held");
}
Test(async_mem, a_thread_cancelled_in_a_free_on_a_thread_of_its_own_is_cancelled_after_it, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    struct ma1_cancelled a = {{0}, {0}, CUDA_ERROR_UNKNOWN};
    cuctx_stream s = {0};
    pthread_t t;
    void *res = NULL;
    new_ctx(&a.c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, a.c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&a.m, s, BYTES));
    uint64_t p = cuctx_mem_ptr(a.m);
    size_t mark = log_mark();
    unsigned long frees = calls("cuMemFree");
    sim()->hold_after("cuMemFree");
    cr_assert_eq(pthread_create(&t, NULL, ma1_free_in_a_dead_scope, &a), 0);
    ma1_wait_held_free(frees + 1);      /* the thread's own, refused */
    sim()->hold_after("cuMemFree");
    sim()->let_go();
    ma1_wait_held_free(frees + 2);      /* the helper thread's, done: the thread waits for it */
    cr_assert_eq(pthread_cancel(t), 0);
    sim()->let_go();
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED, "the thread was not cancelled: its cancel state was left disabled");
    cr_assert_eq(a.rc, CUDA_SUCCESS, "the destroy did not return (cancelled inside it): %s", cuctx_result_name(a.rc));
    cr_assert_eq(a.m.id, 0);
    struct cusim_call f = nth_call("cuMemFree", mark, 1);
    cr_assert_eq(f.handle, p);
    cr_assert_eq(f.ctx, 0, "freed again with a context current");
    cr_assert_eq(f.rc, CUDA_SUCCESS);
    cr_assert_eq(calls_on("cuMemFree", p, mark), 2);
    cr_assert_eq(sim()->async_allocs_live(), 0, "the memory was kept");
    cr_assert_eq(stats().async_mems, 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
}

/* ---- mem_async survivors (ma3) ---- */

/* Bug caught: an allocation given no handle to fill going on, or answering
 * success: it must be refused with CUDA_ERROR_INVALID_VALUE, the last
 * error saying why, before any driver call - for either allocation. Kills
 * the mem_async mutant lib/mem_async.c:430 ret (cuctx__child_null's error
 * replaced by success). */
Test(async_mem, a_null_handle_to_fill_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    size_t mark = sim() ? log_mark() : 0;
    cr_assert_eq(cuctx_mem_alloc_async(NULL, s, BYTES), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_mem_alloc_async: the handle pointer is NULL"), "%s",
              cuctx_last_error_message());
    cr_assert_eq((cuctx_mem_alloc_async)(NULL, s, BYTES), CUDA_ERROR_INVALID_VALUE, "the plain function");
    cr_assert_eq(cuctx_mem_alloc_from_pool(NULL, pool, s, BYTES), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_mem_alloc_from_pool: the handle pointer is NULL"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(stats().async_mems, 0);
    if (sim()) {
        cr_assert_eq(log_mark(), mark, "a driver call was made for no handle");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Memory on a stream of the primary context (an entry that is checked by
 * its id, so that its free takes the full way, free_slow's case 1) whose
 * cuMemFreeAsync the driver refuses as if the thread's current context
 * were a destroyed one; the free again with the stream's context pushed,
 * whose pop then fails. The pop's report is made while the free holds the
 * stream and its context. */
static int free_whose_pop_fails(struct handler_count *h, cuctx_ctx *pc, cuctx_stream *s)
{
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(pc, 0));
    CHECK_OK(cuctx_stream_create(s, *pc, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, *s, BYTES));
    uint64_t p = cuctx_mem_ptr(m);
    count_handler_install(h);
    size_t mark = log_mark();
    sim()->fail_call("cuMemFreeAsync", 1, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    CHECK_OK(cuctx_mem_destroy(&m));
    int told = h->calls;    /* (before any other cuctx call) */
    cr_assert_eq(calls_on("cuMemFreeAsync", p, mark), 2, "the refused free was not made again");
    cr_assert_eq(nth_call("cuMemFreeAsync", mark, 1).ctx, (uint64_t)(uintptr_t)cuctx_ctx_raw(*pc),
                 "not freed again with the stream's context pushed");
    cr_assert_eq(sim()->async_allocs_live(), 0);
    cr_assert_eq(nth_call("cuCtxPopCurrent", mark, 0).rc, CUDA_ERROR_UNKNOWN, "the pop did not fail (not set up)");
    return told;
}

/* Bug caught: a report made while a free of stream-ordered memory held its
 * stream (a failed pop of the context pushed for the free) left pending
 * when the free lets go of the stream - the release that ended the
 * thread's holds delivering nothing - so that the destroy returns without
 * the error handler told, and the report reaches it in some later,
 * unrelated call (error.h: every release delivers). */
Test(async_mem, a_report_made_while_the_free_held_its_stream_is_delivered_by_the_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    struct handler_count h;
    cuctx_ctx pc = {0};
    cuctx_stream s = {0};
    cr_assert_eq(free_whose_pop_fails(&h, &pc, &s), 1, "the destroy returned with its report not delivered");
    cr_assert_eq(h.calls, 1);
    cr_assert_eq(h.last_rc, CUDA_ERROR_UNKNOWN);
    cr_assert(strstr(h.last_msg, "cannot restore the previous context"), "%s", h.last_msg);
    cuctx_set_error_handler(NULL, NULL);
    EXPECT_CURRENT(cuctx_ctx_raw(pc));  /* (the failed pop left it pushed) */
    CUcontext popped;
    CHECK_OK(((PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000))(&popped));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
    ASSERT_NO_MISUSE();
}

/* ---- mem_pool survivors (mp2) ---- */

/* Bug caught: a parked pool handed out with its last owner's high-water
 * marks (RESERVED_MEM_HIGH, USED_MEM_HIGH not reset: reset to 0 they start
 * again from now, and a parked pool holds nothing). Mutant killed:
 * lib/mem_pool.c:160 `lcr` (the `||` after the RESERVED_MEM_HIGH reset
 * made `&&`: its success skipped the USED_MEM_HIGH reset). */
Test(mem_pool, a_parked_pools_high_water_marks_are_reset)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool p = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&p, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, p, s, BYTES));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_stream_synchronize(s));
    cr_assert_geq(pool_attr(raw, CU_MEMPOOL_ATTR_USED_MEM_HIGH), BYTES, "the pool's use was not seen");
    cr_assert_geq(pool_attr(raw, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), BYTES, "the pool's reserve was not seen");
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    cr_assert_eq(stats().parked_pools, 1);
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0, "the parked pool's reserve high mark kept");
    cr_assert_eq(pool_attr(raw, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0, "the parked pool's use high mark kept");
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* Bug caught: the reset of a parked pool taking device 0's access away
 * from no pool (a pool of device 1 parked with device 0 still let in: the
 * next owner's pool open to a device it never named). Mutant killed:
 * lib/mem_pool.c:164 `const` (the devices' loop started at 1). */
Test(mem_pool, a_parked_pool_of_device_1_lets_device_0_in_no_more)
{
    NEED_DRIVER();
    if (device_count() < 2)
        cr_skip_test("one device: no other to let in");
    cuctx_mem_pool p = {0};
    CHECK_OK(cuctx_mem_pool_create(&p, 1, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK_OK(((PFN_cuMemPoolSetAccess_v11020)drv_sym("cuMemPoolSetAccess", 11020))(raw, &rw, 1));
    cr_assert_eq(pool_access(raw, 0), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    size_t mark = log_mark();
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    cr_assert_eq(stats().parked_pools, 1);
    cr_assert_eq(pool_access(raw, 0), CU_MEM_ACCESS_FLAGS_PROT_NONE, "device 0 may still reach the parked pool");
    cr_assert_eq(pool_access(raw, 1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "its own device lost it");
    if (sim()) {
        assert_parked(raw, mark);
        ASSERT_NO_MISUSE();
    }
}

/* Bug caught: a pool whose handle went first, destroyed by its last
 * allocation's free and refused by the driver, not counted as a failed
 * destroy (cuctx_stats) or not reported - or that failure made the free's,
 * which did succeed. Mutants killed: lib/mem_pool.c:253 `call` and `const`
 * (the failed_destroys count not raised, or raised by 0). */
Test(mem_pool, a_destroy_refused_at_the_last_free_is_counted_and_reported)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool p = {0};
    cuctx_mem m = {0};
    struct handler_count h;
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CUmemoryPool raw = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&p, raw, 1));     /* owned, adopted: destroyed at its end, not parked */
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, p, s, BYTES));
    CHECK_OK(cuctx_mem_pool_destroy(&p));           /* its memory lives: the pool stays */
    uint64_t failed = stats().failed_destroys;
    size_t mark = log_mark();
    count_handler_install(&h);
    sim()->fail_call("cuMemPoolDestroy", 1, CUDA_ERROR_NOT_PERMITTED);
    CUresult rc = cuctx_mem_destroy(&m);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(rc, CUDA_SUCCESS, "the free succeeded: %d", rc);
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, mark), 1, "the last free did not end the pool");
    cr_assert_eq(stats().failed_destroys, failed + 1, "the refused pool destroy was not counted");
    cr_assert_eq(h.calls, 1, "%d reports", h.calls);
    cr_assert_eq(h.last_rc, CUDA_ERROR_NOT_PERMITTED);
    CHECK_OK(((PFN_cuMemPoolDestroy_v11020)drv_sym("cuMemPoolDestroy", 11020))(raw));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(sim()->live(CUSIM_POOL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: the reset of a parked pool asking the driver about devices
 * it never counted - a cuDeviceGetCount that answers 0 (CUDA_SUCCESS)
 * without writing the count (the simulator's fail_call with CUDA_SUCCESS)
 * must leave the count at none, not at a device 0 the driver did not name.
 * Mutant killed: lib/mem_pool.c:152 `const` (`devices = 0` made
 * `devices = 1`: a pool of device 1 then asks device 0's access). */
Test(mem_pool, a_parked_pools_reset_asks_about_no_device_the_driver_did_not_count)
{
    NEED_DRIVER();
    NEED_SIM();
    if (device_count() < 2)
        cr_skip_test("one device: no pool of device 1");
    cuctx_mem_pool p = {0};
    CHECK_OK(cuctx_mem_pool_create(&p, 1, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    size_t mark = log_mark();
    sim()->fail_call("cuDeviceGetCount", 1, CUDA_SUCCESS);     /* answers 0, counts nothing */
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    cr_assert_eq(stats().parked_pools, 1);
    cr_assert_eq(nth_call("cuDeviceGetCount", mark, 0).rc, CUDA_SUCCESS);     /* (the reset counted devices) */
    cr_assert_eq(calls_on("cuMemPoolGetAccess", (uint64_t)(uintptr_t)raw, mark), 0,
                 "a device the driver did not count was asked about");
    cr_assert_eq(calls_on("cuMemPoolSetAccess", (uint64_t)(uintptr_t)raw, mark), 0);
    assert_parked(raw, mark);
    ASSERT_NO_MISUSE();
}

/* ---- mem_pool survivors (mp3) --------------------------------------------- */

/* A pool create as the process's first cuctx call loads the driver before
 * it asks whether the driver has pools: it makes the pool, rather than
 * answering "the driver has no memory pools" (CUDA_ERROR_NOT_SUPPORTED)
 * from a table not yet filled. Mutant killed: lib/mem_pool.c:272 `call`
 * (need_pools' CUCTX_INIT_OR_RETURN left out). */
Test(mem_pool, a_pool_as_the_first_call_loads_the_driver_first)
{
    cuctx_mem_pool pool = {0};
    CUresult rc = cuctx_mem_pool_create(&pool, 0, NULL);
    NEED_DRIVER();      /* (after: it would load the driver itself) */
    cr_assert_eq(rc, CUDA_SUCCESS, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_neq(pool.id, 0);
    cr_assert_eq(stats().mem_pools, 1);
    if (sim())
        cr_assert_eq(calls("cuMemPoolCreate"), 1);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
}

/* props NULL are the props a caller would write for device-local pinned
 * memory of dev (zeroed, then PINNED, handle types NONE, a DEVICE location
 * at dev): a pool made either way and parked is taken by a create made the
 * other way, with no new pool. Bug caught: the NULL props' unset fields
 * (maxSize, usage, reserved, win32SecurityAttributes) left other than 0,
 * so the driver is asked for a pool other than the documented one and no
 * parked pool ever matches. Mutant killed: lib/mem_pool.c:306 `const`
 * (memset(&dflt, 1, ...)). */
Test(mem_pool, null_props_are_the_default_props_written_out)
{
    NEED_DRIVER();
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    cuctx_mem_pool a = {0}, b = {0};
    CHECK_OK(cuctx_mem_pool_create(&a, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(a);
    CHECK_OK(cuctx_mem_pool_destroy(&a));
    cr_assert_eq(stats().parked_pools, 1);
    unsigned long creates = calls("cuMemPoolCreate");
    CHECK_OK(cuctx_mem_pool_create(&b, 0, &props));
    cr_assert_eq(cuctx_mem_pool_raw(b), raw, "props NULL made a pool of other props than the default written out");
    cr_assert_eq(stats().parked_pools, 0);
    if (sim())
        cr_assert_eq(calls("cuMemPoolCreate"), creates, "a create made a pool with one parked");
    CHECK_OK(cuctx_mem_pool_destroy(&b));
    cr_assert_eq(stats().parked_pools, 1);
    CHECK_OK(cuctx_mem_pool_create(&a, 0, NULL));
    cr_assert_eq(cuctx_mem_pool_raw(a), raw, "props NULL did not take the pool parked by the default written out");
    cr_assert_eq(stats().parked_pools, 0);
    if (sim()) {
        cr_assert_eq(calls("cuMemPoolCreate"), creates, "a create made a pool with one parked");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_mem_pool_destroy(&a));
}

/* A device's default pool asked for into a handle that holds a live pool:
 * refused (CUDA_ERROR_INVALID_VALUE), the handle and its pool kept, the
 * driver not asked. Bug caught: the refusal answered with success (the
 * caller then takes the handle for the default pool). Mutant killed:
 * lib/mem_pool.c:363 `ret` (default's refused claim returning 0). */
Test(mem_pool, a_default_pool_into_a_live_handle_is_refused)
{
    NEED_DRIVER();
    cuctx_mem_pool pool = {0};
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    uint64_t id = pool.id;
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    unsigned long asked = sim() ? calls("cuDeviceGetDefaultMemPool") : 0;
    CUresult rc = cuctx_mem_pool_default(&pool, 0);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "a default pool into a live pool's handle: %s",
                 cuctx_result_name(rc));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(pool.id, id, "the refused default changed the handle");
    cr_assert_eq(cuctx_mem_pool_raw(pool), raw);
    cr_assert_eq(stats().mem_pools, 1);
    if (sim())
        cr_assert_eq(calls("cuDeviceGetDefaultMemPool"), asked, "the driver was asked for the default pool");
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().mem_pools, 0);
}

/* ---- sample seed 53 ---- */

/* cuctx_mem_ctx of stream-ordered memory into a live context handle is
 * refused as any create into a live handle is, before it says the memory
 * has no context, and leaves the handle as it was. Mutant killed:
 * lib/mem.c:62 `ret` (the refusal answered CUDA_SUCCESS; gcov had seen
 * no test run the line; seed 53). */
Test(async_mem, its_context_asked_into_a_live_handle_is_refused)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", LEFT_CURRENT);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    cuctx_ctx live = c;
    cr_assert_eq(cuctx_mem_ctx(m, &live), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "belongs to its pool") == NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(live.id, c.id, "the live handle was overwritten");
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    if (sim())
        ASSERT_NO_MISUSE();
}

/* ---- mutation survivors of lib/mem.c (h8) ---- */

/* cuctx_mem_ctx of a handle of stream-ordered memory as the process's
 * first call to cuctx (Criterion runs each test in a process of its own)
 * starts cuctx first, as every call does: the driver is loaded and
 * initialised before the handle, which no process made, is refused. The
 * handle is forged: kind 10 (stream-ordered memory, lib/ids.h) in the top
 * 6 bits, a slot index beyond every segment in the next 26. Mutant killed:
 * lib/mem.c:63 `call` (CUCTX_INIT_OR_RETURN of the stream-ordered path
 * removed: the handle refused with cuctx not started). */
Test(async_mem, a_mem_ctx_as_the_first_call_starts_cuctx)
{
    const uint64_t far_index = ((uint64_t)1 << 26) - 1;
    cuctx_mem forged = {((uint64_t)10 << 58) | far_index << 32 | 1};     /* kind 10: stream-ordered memory */
    cuctx_ctx owner = {0};
    CUresult rc = cuctx_mem_ctx(forged, &owner);
    NEED_SIM();
    unsigned long inits = calls("cuInit");      /* (before NEED_DRIVER, which starts cuctx itself) */
    NEED_DRIVER();
    cr_assert_eq(inits, 1, "cuInit called %lu times by the first call", inits);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "stream-ordered memory"), "%s", cuctx_last_error_message());
    cr_assert_eq(owner.id, 0);
    ASSERT_NO_MISUSE();
}
/* Bug caught: the wait that cuctx_stream_destroy makes first for a
 * non-blocking stream that carried stream-ordered memory failing (here a
 * planned fault; on a GPU any error cuStreamSynchronize passes on): the
 * destroy returns that error as "the driver refused to destroy stream",
 * though cuStreamDestroy was never called, resets the handle, and the
 * stream is never destroyed - leaked, with no handle left to destroy it
 * by. The header: cuctx_stream_destroy is cuStreamDestroy, which first
 * waits; destroys leave the handle {0} "also when they fail", so the
 * object must not be left behind unreachable. (The work not waited for
 * is then the memory's free's to wait for, as for a stream destroyed
 * while it captured.) */
Test(async_mem, a_failed_wait_before_a_carried_streams_destroy_still_destroys_it)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    queue_work(m, s);
    uint64_t sraw = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    size_t mark = log_mark();
    sim()->fail_call("cuStreamSynchronize", 1, CUDA_ERROR_UNKNOWN);
    (void)cuctx_stream_destroy(&s);
    cr_assert_eq(s.id, 0);
    cr_assert_eq(calls_on("cuStreamDestroy", sraw, mark), 1, "cuStreamDestroy was never called: the stream leaks");
    cr_assert_eq(sim()->is_live(CUSIM_STREAM, sraw), 0, "the stream outlived its handle's destroy");
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(sim()->async_allocs_live(), 0);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a pool cuctx made, made the device's current pool, then its
 * handle destroyed while memory from it lives (the next test: with none).
 * The pool's end waits for that memory (its last free ends it), and so did
 * its setting back to no device's current pool: until then
 * memory "from the device's current pool" went on landing in a pool whose
 * handle was destroyed, and the end then parked it with that memory in it,
 * for the next create. The driver's destroy makes the default pool current
 * at once; so must the handle's destroy. */
Test(mem_pool, a_pool_destroyed_under_live_memory_is_no_longer_current_at_once)
{
    NEED_DRIVER();
    PFN_cuDeviceSetMemPool_v11020 set_pool = (PFN_cuDeviceSetMemPool_v11020)drv_sym("cuDeviceSetMemPool", 11020);
    PFN_cuDeviceGetMemPool_v11020 get_pool = (PFN_cuDeviceGetMemPool_v11020)drv_sym("cuDeviceGetMemPool", 11020);
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool p = {0}, p2 = {0};
    cuctx_mem in_pool = {0}, current = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&p, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    CHECK_OK(cuctx_mem_alloc_from_pool(&in_pool, p, s, BYTES));
    CHECK_OK(set_pool(0, raw));
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    CUmemoryPool cur = NULL;
    CHECK_OK(get_pool(&cur, 0));
    cr_assert_neq(cur, raw, "the pool stayed device 0's current pool after its handle's destroy");
    cr_assert_eq(cur, default_pool(), "the device's default pool is not current again");
    CHECK_OK(cuctx_mem_alloc_async(&current, s, BYTES));
    CHECK_OK(cuctx_stream_synchronize(s));
    cr_assert_eq(pool_used(raw), BYTES, "memory from the device's current pool went into the destroyed pool");
    CHECK_OK(cuctx_mem_destroy(&in_pool));      /* the pool's end: parked */
    CHECK_OK(cuctx_mem_pool_create(&p2, 0, NULL));
    cr_assert_eq(pool_used(cuctx_mem_pool_raw(p2)), 0, "a new pool came with memory in it");
    CHECK_OK(cuctx_mem_destroy(&current));
    CHECK_OK(cuctx_mem_pool_destroy(&p2));
    CHECK_OK(cuctx_stream_destroy(&s));
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a pool cuctx made, made the device's current pool
 * (cuDeviceSetMemPool, as the header's pool paragraph allows), then
 * destroyed: its end parks it instead of cuMemPoolDestroy, and parking
 * leaves it the device's current pool - the driver's destroy makes the
 * device's default pool current again. So cuctx_mem_alloc_async (pool
 * {0}, "the device's current pool") goes on allocating from the parked
 * pool, which the header says holds no memory and is "set back to new",
 * and the next cuctx_mem_pool_create takes that pool with memory in it;
 * its end then parks it under that memory. The header: the end "sets the
 * pool back to new"; API.md: cuctx_mem_pool_destroy is "as the driver's". */
Test(mem_pool, a_parked_pool_is_no_longer_the_devices_current_pool)
{
    NEED_DRIVER();
    PFN_cuDeviceSetMemPool_v11020 set_pool = (PFN_cuDeviceSetMemPool_v11020)drv_sym("cuDeviceSetMemPool", 11020);
    PFN_cuDeviceGetMemPool_v11020 get_pool = (PFN_cuDeviceGetMemPool_v11020)drv_sym("cuDeviceGetMemPool", 11020);
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool p = {0}, p2 = {0};
    cuctx_mem m = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CHECK_OK(cuctx_mem_pool_create(&p, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    CHECK_OK(set_pool(0, raw));
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    CUmemoryPool cur = NULL;
    CHECK_OK(get_pool(&cur, 0));
    cr_assert_neq(cur, raw, "the destroyed (parked) pool is still device 0's current pool");
    cr_assert_eq(cur, default_pool(), "the device's default pool is not current again");
    /* what follows from it: memory "from the device's current pool" lands
     * in the parked pool, which a create then takes */
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    CHECK_OK(cuctx_mem_pool_create(&p2, 0, NULL));
    cr_assert_eq(pool_used(cuctx_mem_pool_raw(p2)), 0, "a new pool came with memory in it");
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_mem_pool_destroy(&p2));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- frees of stream-ordered memory beside a capture -------------------
 *
 * The frees that cannot use the memory's stream - case 4's cuMemFree with
 * no context and case 2's cuCtxSynchronize (mem_async.c) - are calls a
 * capture under CU_STREAM_CAPTURE_MODE_GLOBAL on any thread (or
 * THREAD_LOCAL on this one) forbids. Found by an attack on 2026-12-04: they
 * answered 900, the free failed (the memory leaked: its handle reset) and
 * the unrelated capture was invalidated. They now run with the thread's
 * capture mode RELAXED (cuThreadExchangeStreamCaptureMode: the thread's
 * own mode decides whether its unsafe calls are prohibited, as documented),
 * given back after the call. The H200 then showed (tools/facts/
 * free_beside_capture.c) that such a capture forbids cuMemFreeAsync and
 * cuMemAllocAsync on any stream too, the legacy stream of case 2's and
 * 3's free included: those run RELAXED now as well, and case 1's free on
 * the memory's own stream, refused so, is made again RELAXED (the capture
 * ended as by the driver, the memory not lost). All but the tests marked
 * NEED_SIM need no simulator control but for the leak count, so they run
 * on the real driver as they are. */

/* The calling thread's capture mode, read by an exchange with mode m,
 * which it then has. */
static CUstreamCaptureMode exchange_mode(CUstreamCaptureMode m, CUresult *rc)
{
    PFN_cuThreadExchangeStreamCaptureMode_v10010 exchange =
        (PFN_cuThreadExchangeStreamCaptureMode_v10010)drv_sym("cuThreadExchangeStreamCaptureMode", 10010);
    *rc = exchange(&m);
    return m;
}

/* (on another thread: the capture's thread is not the free's) */
static void *capture_on_other_thread_free(void *arg)
{
    cuctx_mem *m = arg;
    return (void *)(intptr_t)cuctx_mem_destroy(m);
}

/* The free of stream-ordered memory whose context is gone and no primary
 * context active (case 4, cuMemFree with no context) made while any thread
 * captures under CU_STREAM_CAPTURE_MODE_GLOBAL, or this thread under
 * THREAD_LOCAL: it frees the memory and leaves the capture intact. Bug
 * caught: cuMemFree made in the thread's own mode, a call such a capture
 * forbids (900, DRIVER-FACTS: "capture GLOBAL: cuMemAlloc on another
 * thread: 900 and invalidated"), so the free failed - the handle reset,
 * the memory leaked, though the header says such memory "is never skipped
 * ... (that would leak it)" - and the unrelated capture was invalidated,
 * though the header lists cuctx's calls that break a capture and a
 * destroy of stream-ordered memory is not among them. */
static void free_of_orphan_beside_capture(CUstreamCaptureMode mode, int other_thread)
{
    NEED_DRIVER();
    cuctx_mem m = {0};
    cuctx_stream dead = {0};
    cuctx_ctx d = {0};
    cuctx_stream s = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    orphaned_async_mem(&m, &dead);
    new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, d, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, mode));
    CUresult rc;
    if (other_thread) {
        pthread_t t;
        void *ret = NULL;
        cr_assert_eq(pthread_create(&t, NULL, capture_on_other_thread_free, &m), 0);
        pthread_join(t, &ret);
        rc = (CUresult)(intptr_t)ret;
    } else {
        rc = cuctx_mem_destroy(&m);
        CUresult x;
        cr_assert_eq(exchange_mode(CU_STREAM_CAPTURE_MODE_GLOBAL, &x), CU_STREAM_CAPTURE_MODE_GLOBAL,
                     "the thread's capture mode was not given back");
        CHECK_OK(x);
    }
    CUresult end = cuctx_capture_end(&cap, 1);
    cr_assert_eq(rc, CUDA_SUCCESS, "the free beside the capture failed: %s", cuctx_result_name(rc));
    cr_assert_eq(end, CUDA_SUCCESS, "the capture beside the free was invalidated: %s", cuctx_result_name(end));
    cr_assert_neq(g.id, 0);
    cr_assert_eq(stats().failed_destroys, 0);
    if (sim()) {
        cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_graph_destroy(&g));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_stream_destroy(&dead));
    CHECK_OK(cuctx_ctx_destroy(&d));
}
Test(async_mem, an_orphans_free_beside_a_global_capture_neither_leaks_nor_breaks_it)
{
    free_of_orphan_beside_capture(CU_STREAM_CAPTURE_MODE_GLOBAL, 0);
}
Test(async_mem, an_orphans_free_on_another_thread_beside_a_global_capture_neither_leaks_nor_breaks_it)
{
    free_of_orphan_beside_capture(CU_STREAM_CAPTURE_MODE_GLOBAL, 1);
}
Test(async_mem, an_orphans_free_beside_a_thread_local_capture_neither_leaks_nor_breaks_it)
{
    free_of_orphan_beside_capture(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 0);
}

/* The same as the orphan's free beside a capture above, by case 2's wait:
 * memory whose non-blocking stream was destroyed while it captured (so its
 * work is waited for at the free, by a cuCtxSynchronize of its context)
 * freed while this thread captures a stream of ANOTHER context under
 * CU_STREAM_CAPTURE_MODE_GLOBAL. Bug caught: the synchronize made in the
 * thread's own mode, a call that capture forbids (900, DRIVER-FACTS), the
 * free failed - handle reset, memory leaked - and the unrelated capture
 * was invalidated. */
Test(async_mem, a_waited_free_beside_another_contexts_global_capture_neither_leaks_nor_breaks_it)
{
    NEED_DRIVER();
    cuctx_ctx c = {0}, d = {0};
    cuctx_stream s = {0}, t = {0};
    cuctx_mem m = {0};
    cuctx_capture cap;
    cuctx_graph g = {0}, g2 = {0};
    new_ctx(&c, 0, "C", POPPED);
    new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    queue_work(m, s);
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuctx_stream_create(&t, d, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_capture_begin(&cap, t, &g2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult rc = cuctx_mem_destroy(&m);
    CUresult end = cuctx_capture_end(&cap, 1);
    cr_assert_eq(rc, CUDA_SUCCESS, "the free beside the capture failed: %s", cuctx_result_name(rc));
    cr_assert_eq(end, CUDA_SUCCESS, "the capture beside the free was invalidated: %s", cuctx_result_name(end));
    if (sim()) {
        cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_graph_destroy(&g2));
    CHECK_OK(cuctx_stream_destroy(&t));
    CHECK_OK(cuctx_ctx_destroy(&d));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Case 1, the free on the memory's own live stream, made by another
 * thread while this one captures a stream of another context under
 * CU_STREAM_CAPTURE_MODE_GLOBAL: a free such a capture forbids on any
 * stream (measured on the H200: 900, the capture invalidated). The
 * capture is ended as the driver ends it - the program's own free there
 * would do the same - but the free is made again RELAXED: the memory is
 * not lost. Before, the 900 was returned and the handle reset: leaked. */
Test(async_mem, a_free_on_its_stream_beside_another_threads_global_capture_is_made_again_relaxed)
{
    NEED_DRIVER();
    cuctx_ctx c = {0}, d = {0};
    cuctx_stream s = {0}, t = {0};
    cuctx_mem m = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    new_ctx(&c, 0, "C", POPPED);
    new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    CHECK_OK(cuctx_stream_synchronize(s));
    uint64_t ptr = (uint64_t)cuctx_mem_ptr(m);
    CHECK_OK(cuctx_stream_create(&t, d, CU_STREAM_NON_BLOCKING, 0));
    unsigned long frees = sim() ? calls_on("cuMemFreeAsync", ptr, 0) : 0;
    CHECK_OK(cuctx_capture_begin(&cap, t, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pthread_t th;
    void *ret = NULL;
    cr_assert_eq(pthread_create(&th, NULL, capture_on_other_thread_free, &m), 0);
    pthread_join(th, &ret);
    CUresult rc = (CUresult)(intptr_t)ret;
    CUresult end = cuctx_capture_end(&cap, 1);
    cr_assert_eq(rc, CUDA_SUCCESS, "the free beside the capture failed: %s", cuctx_result_name(rc));
    cr_assert_eq(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the driver's refusal ended the capture: %s",
                 cuctx_result_name(end));
    cr_assert_eq(g.id, 0);
    cr_assert_eq(stats().failed_destroys, 0);
    if (sim()) {
        cr_assert_eq(calls_on("cuMemFreeAsync", ptr, 0), frees + 2, "not refused, then made again");
        cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
        ASSERT_NO_MISUSE();
    }
    CHECK_OK(cuctx_stream_destroy(&t));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&d));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* A driver that refuses the exchange of the thread's capture mode: the
 * free is made in the thread's own mode, as it was before the fix
 * (refused beside a GLOBAL capture, which it ends), and no mode is given
 * back - none was taken. The refused free is kept, and made when the
 * capture has ended (tether.h): the memory is not lost. */
Test(async_mem, a_refused_mode_exchange_leaves_the_free_in_the_threads_own_mode)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem m = {0};
    cuctx_stream dead = {0}, s = {0};
    cuctx_ctx d = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    orphaned_async_mem(&m, &dead);
    new_ctx(&d, 0, "D", POPPED);
    CHECK_OK(cuctx_stream_create(&s, d, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    unsigned long exchanges = calls("cuThreadExchangeStreamCaptureMode");
    sim()->fail_call("cuThreadExchangeStreamCaptureMode", 1, CUDA_ERROR_NOT_SUPPORTED);
    uint64_t failed = stats().failed_destroys;
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(calls("cuThreadExchangeStreamCaptureMode"), exchanges + 1, "a mode given back that was not taken");
    cr_assert_eq(sim()->async_allocs_live(), 1, "the refused free was made");
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    cr_assert_eq(sim()->async_allocs_live(), 0, "the kept free was not made at the capture's end");
    cr_assert_eq(stats().failed_destroys, failed);
    ASSERT_NO_MISUSE();
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_stream_destroy(&dead));
    CHECK_OK(cuctx_ctx_destroy(&d));
}

/* A thread cancelled in case 4's cuMemFree, made with its capture mode
 * RELAXED: the unwinding gives the mode back, so that the thread's own
 * cleanup handler finds it as it was (GLOBAL, a new thread's). The
 * simulator delays the cuMemFree, and the cancel lands in the delay. */
struct relaxed_cancel { cuctx_mem m; CUstreamCaptureMode found; CUresult rc; };
static void relaxed_cancel_found(void *p)
{
    struct relaxed_cancel *a = p;
    a->found = exchange_mode(CU_STREAM_CAPTURE_MODE_GLOBAL, &a->rc);
}
static void *free_relaxed_cancellable(void *p)
{
    struct relaxed_cancel *a = p;
    pthread_cleanup_push(relaxed_cancel_found, a);
    cuctx_mem_destroy(&a->m);
    pthread_cleanup_pop(0);
    return NULL;
}
Test(async_mem, a_thread_cancelled_in_a_relaxed_free_gets_its_capture_mode_back, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    struct relaxed_cancel a = {{0}, (CUstreamCaptureMode)99, CUDA_ERROR_UNKNOWN};
    cuctx_stream dead = {0};
    pthread_t t;
    void *res = NULL;
    orphaned_async_mem(&a.m, &dead);
    sim()->set_delay("cuMemFree", 300000);
    cr_assert_eq(pthread_create(&t, NULL, free_relaxed_cancellable, &a), 0);
    for (int i = 0; i < 10000 && sim()->sleeping() != 1; i++)
        usleep(1000);
    cr_assert_eq(sim()->sleeping(), 1, "no cuMemFree in its delay");
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    sim()->set_delay("cuMemFree", 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    CHECK_OK(a.rc);
    cr_assert_eq(a.found, CU_STREAM_CAPTURE_MODE_GLOBAL, "the cancelled free left the thread's capture mode %d",
                 (int)a.found);
    CHECK_OK(cuctx_stream_destroy(&dead));
}

/* ---- attack a4 ---- */

/* Case 1's free made again with the stream's context pushed (the calling
 * thread's current context dead: the first free refused 709) while
 * another thread captures under CU_STREAM_CAPTURE_MODE_GLOBAL: the pushed
 * free is a cuMemFreeAsync that capture forbids (900), so it must be made
 * RELAXED, or made again so, as free_refused does for the 900 of the
 * first. The header: "A free of stream-ordered memory is never lost so".
 * Bug: free_on_stream_pushed makes its cuMemFreeAsync in the thread's own
 * mode and returns the 900: the handle reset, the memory leaked. */
struct a4_dead_free {
    cuctx_ctx d;
    cuctx_mem m;
    CUresult rc;
    pthread_barrier_t dead, captured;
};
static void *a4_free_in_dead_scope(void *p)
{
    struct a4_dead_free *a = p;
    CUCTX_SCOPED(a->d) {
        destroy_ctx_elsewhere(&a->d);
        pthread_barrier_wait(&a->dead);
        pthread_barrier_wait(&a->captured);
        a->rc = cuctx_mem_destroy(&a->m);
    }
    return NULL;
}
Test(async_mem, a_free_with_the_streams_context_pushed_beside_a_global_capture_is_not_lost, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    static struct a4_dead_free a;
    a.rc = CUDA_ERROR_UNKNOWN;
    cuctx_ctx c = {0}, e = {0};
    cuctx_stream s = {0}, t = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    pthread_t th;
    new_ctx(&c, 0, "C", POPPED);
    new_ctx(&a.d, 0, "D", POPPED);
    new_ctx(&e, 0, "E", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&t, e, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&a.m, s, BYTES));
    CHECK_OK(cuctx_stream_synchronize(s));
    uint64_t p = cuctx_mem_ptr(a.m);
    pthread_barrier_init(&a.dead, NULL, 2);
    pthread_barrier_init(&a.captured, NULL, 2);
    cr_assert_eq(pthread_create(&th, NULL, a4_free_in_dead_scope, &a), 0);
    pthread_barrier_wait(&a.dead);
    size_t mark = log_mark();
    CHECK_OK(cuctx_capture_begin(&cap, t, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    pthread_barrier_wait(&a.captured);
    pthread_join(th, NULL);
    (void)cuctx_capture_end(&cap, 0);
    cr_assert_eq(nth_call("cuMemFreeAsync", mark, 0).rc, CUDA_ERROR_CONTEXT_IS_DESTROYED,
                 "the first free was not refused for the dead level");
    cr_assert_eq(a.rc, CUDA_SUCCESS, "the free beside the capture failed: %s", cuctx_result_name(a.rc));
    cr_assert_eq(last_call("cuMemFreeAsync", mark).rc, CUDA_SUCCESS, "the last free of %#llx was refused",
                 (unsigned long long)p);
    cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
    CHECK_OK(cuctx_stream_destroy(&t));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&e));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* The same as a_pool_destroyed_under_live_memory_is_no_longer_current_at_once
 * for a pool made elsewhere and adopted as owned (cuctx destroys it with
 * the handle, API.md: "as the driver's"): its handle destroyed while
 * memory from it lives, it must be no device's current pool at once, as
 * after the driver's cuMemPoolDestroy. Bug: its record (cuctx__pool_ref)
 * is calloc'ed with no props - location.type 0, INVALID - so not_current
 * returns at its first test and the pool stays device 0's current pool
 * until its last allocation is freed: memory "from the device's current
 * pool" lands meanwhile in a pool whose handle is gone, uncounted, and
 * the pool is then cuMemPoolDestroy'ed under it. */
Test(mem_pool, an_adopted_pool_destroyed_under_live_memory_is_no_longer_current_at_once)
{
    NEED_DRIVER();
    PFN_cuDeviceSetMemPool_v11020 set_pool = (PFN_cuDeviceSetMemPool_v11020)drv_sym("cuDeviceSetMemPool", 11020);
    PFN_cuDeviceGetMemPool_v11020 get_pool = (PFN_cuDeviceGetMemPool_v11020)drv_sym("cuDeviceGetMemPool", 11020);
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool p = {0};
    cuctx_mem in_pool = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    adopt_new_pool(&p);
    CUmemoryPool raw = cuctx_mem_pool_raw(p);
    CHECK_OK(cuctx_mem_alloc_from_pool(&in_pool, p, s, BYTES));
    CHECK_OK(set_pool(0, raw));
    CHECK_OK(cuctx_mem_pool_destroy(&p));
    CUmemoryPool cur = NULL;
    CHECK_OK(get_pool(&cur, 0));
    CUmemoryPool was = cur;
    if (cur == raw)     /* (put right, so that the rest ends cleanly) */
        CHECK_OK(set_pool(0, default_pool()));
    CHECK_OK(cuctx_mem_destroy(&in_pool));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_neq(was, raw, "the adopted pool stayed device 0's current pool after its handle's destroy");
    cr_assert_eq(was, default_pool(), "the device's default pool is not current again");
}

/* Memory allocated on s before s's capture, freed while that capture is
 * already invalidated - here by cuctx's own free of other memory on its
 * own (non-capturing) stream, refused 900 under the thread's GLOBAL
 * capture and so ending it, as the header says, then made again RELAXED.
 * The free on s is then refused too (901: s's capture invalidated, in any
 * mode). The header: "A free of stream-ordered memory is never lost so".
 * Bug: free_refused retries only 709 and 900; the 901 is returned, the
 * handle reset, the memory leaked (stats.failed_destroys counts it). */
/* Fixed: no order is left to free in - s's work from before its capture
 * may still run, s cannot take the free, nor can s or its context be
 * synchronized while s captures (900 in any mode) - so the free is kept
 * and made when the capture ends (tether.h, cuctx__kept_add). */
Test(async_mem, a_free_on_a_stream_whose_capture_was_invalidated_is_not_lost)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0}, u = {0};
    cuctx_mem on_s = {0}, on_u = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&u, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&on_s, s, BYTES));
    CHECK_OK(cuctx_mem_alloc_async(&on_u, u, BYTES));
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_stream_synchronize(u));
    uint64_t failed = stats().failed_destroys;
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult rc_u = cuctx_mem_destroy(&on_u);   /* refused 900, the capture ended; made again RELAXED */
    CUresult rc_s = cuctx_mem_destroy(&on_s);
    CUresult end = cuctx_capture_end(&cap, 1);
    CHECK_OK(cuctx_stream_synchronize(s));
    cr_assert_eq(rc_u, CUDA_SUCCESS, "%s", cuctx_result_name(rc_u));
    cr_assert_eq(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "%s", cuctx_result_name(end));
    cr_assert_eq(rc_s, CUDA_SUCCESS, "the free on the stream of the invalidated capture failed: %s",
                 cuctx_result_name(rc_s));
    cr_assert_eq(stats().failed_destroys, failed, "a free refused");
    if (sim())
        cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
    CHECK_OK(cuctx_stream_destroy(&u));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* A thread cancelled at either exchange of its capture mode around a
 * RELAXED free (case 4's cuMemFree of orphaned memory): its own cleanup
 * handler must find its mode as it was (GLOBAL, a new thread's), as
 * a_thread_cancelled_in_a_relaxed_free_gets_its_capture_mode_back has it
 * for a cancel in the free itself; cuctx(3): a cancelled call leaves the
 * thread as it found it. at_give_back 0: the cancel lands in a hold after
 * the first exchange has made the mode RELAXED (relax() never returns, so
 * the cleanup attribute of relaxed_ is not yet armed: nothing gives the
 * mode back). 1: the cancel lands in the delay before the give-back
 * (relaxed_end runs at the normal scope exit, outside the protected
 * region: no cleanup runs it again). Either way the handler found
 * RELAXED (attack a4). Fixed: each exchange is made with cancellation off,
 * so the cancel is acted on later, the mode given back by then or the
 * cleanup armed to give it back. */
/* (the cancel, held off while the mode is exchanged, is acted on at the
 * next cancellation point: here, at the latest, the testcancel after the
 * free, where the handler must find the mode given back) */
static void *free_relaxed_then_testcancel(void *p)
{
    struct relaxed_cancel *a = p;
    pthread_cleanup_push(relaxed_cancel_found, a);
    cuctx_mem_destroy(&a->m);
    pthread_testcancel();
    pthread_cleanup_pop(0);
    return NULL;
}
static void cancel_at_mode_exchange(int at_give_back)
{
    NEED_DRIVER();
    NEED_SIM();
    struct relaxed_cancel a = {{0}, (CUstreamCaptureMode)99, CUDA_ERROR_UNKNOWN};
    cuctx_stream dead = {0};
    pthread_t t;
    void *res = NULL;
    orphaned_async_mem(&a.m, &dead);
    unsigned long frees = calls("cuMemFree");
    if (at_give_back)
        sim()->set_delay("cuThreadExchangeStreamCaptureMode", 200000);
    else
        sim()->hold_after("cuThreadExchangeStreamCaptureMode");
    cr_assert_eq(pthread_create(&t, NULL, free_relaxed_then_testcancel, &a), 0);
    for (int i = 0; i < 10000 && !(sim()->sleeping() == 1 && (!at_give_back || calls("cuMemFree") > frees)); i++)
        usleep(1000);
    cr_assert_eq(sim()->sleeping(), 1, "no exchange held");
    cr_assert_eq(pthread_cancel(t), 0);
    if (!at_give_back)
        sim()->let_go();
    cr_assert_eq(pthread_join(t, &res), 0);
    sim()->set_delay("cuThreadExchangeStreamCaptureMode", 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    CHECK_OK(a.rc);
    cr_assert_eq(a.found, CU_STREAM_CAPTURE_MODE_GLOBAL, "the cancelled free left the thread's capture mode %d",
                 (int)a.found);
    CHECK_OK(cuctx_stream_destroy(&dead));
}
Test(async_mem, a_thread_cancelled_after_its_mode_was_made_relaxed_gets_it_back, .timeout = 30)
{
    cancel_at_mode_exchange(0);
}
Test(async_mem, a_thread_cancelled_at_its_modes_give_back_gets_it_back, .timeout = 30)
{
    cancel_at_mode_exchange(1);
}

/* Case 2's wait (cuCtxSynchronize of the memory's context, for a
 * non-blocking stream destroyed while it captured) while ANOTHER thread
 * captures another stream of that same context: the synchronize is refused
 * in any mode (DRIVER-FACTS) and invalidates that thread's capture, and
 * the free is then never made - the handle reset, the memory leaked. The
 * header (CUCTX_CAPTURE): "A free of stream-ordered memory is never lost
 * so: the frees cuctx makes in place of one on the memory's own stream
 * ... run with the thread's capture mode RELAXED and leave the capture
 * alone". (cuctx_mem_alloc_async(3) says the synchronize "is still
 * refused": the two promises cannot both hold as written; the memory and
 * the unrelated capture are the casualties.) */
struct a4_capture_there { cuctx_stream t; cuctx_graph g; cuctx_capture cap; pthread_barrier_t begun, freed; CUresult end; };
static void *a4_capture_beside(void *p)
{
    struct a4_capture_there *a = p;
    CUresult rc = cuctx_capture_begin(&a->cap, a->t, &a->g, CU_STREAM_CAPTURE_MODE_RELAXED);
    pthread_barrier_wait(&a->begun);
    pthread_barrier_wait(&a->freed);
    a->end = rc == CUDA_SUCCESS ? cuctx_capture_end(&a->cap, 1) : rc;
    return NULL;
}
static void waited_free_beside_capture_in_its_context(int capture_kept)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    static struct a4_capture_there a;
    pthread_t th;
    new_ctx(&c, 0, "C", POPPED);
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&a.t, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, BYTES));
    queue_work(m, s);
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_OK(cuctx_stream_destroy(&s));
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
    uint64_t failed = stats().failed_destroys;
    pthread_barrier_init(&a.begun, NULL, 2);
    pthread_barrier_init(&a.freed, NULL, 2);
    cr_assert_eq(pthread_create(&th, NULL, a4_capture_beside, &a), 0);
    pthread_barrier_wait(&a.begun);
    CUresult rc = cuctx_mem_destroy(&m);
    pthread_barrier_wait(&a.freed);
    pthread_join(th, NULL);
    if (a.g.id)
        CHECK_OK(cuctx_graph_destroy(&a.g));
    CHECK_OK(cuctx_stream_destroy(&a.t));
    CHECK_OK(cuctx_ctx_synchronize(c));
    cr_assert_eq(rc, CUDA_SUCCESS, "the free beside the capture failed: %s", cuctx_result_name(rc));
    cr_assert_eq(stats().failed_destroys, failed, "the free was refused");
    if (sim())
        cr_assert_eq(sim()->async_allocs_live(), 0, "the stream-ordered memory leaked");
    if (capture_kept)
        cr_assert_eq(a.end, CUDA_SUCCESS, "the other thread's capture was invalidated: %s", cuctx_result_name(a.end));
    CHECK_OK(cuctx_ctx_destroy(&c));
}
/* Fixed: the wait cannot be made while a stream of the context captures,
 * and the free must not be made without it (a kernel queued on the
 * destroyed stream may still write the memory): it is kept, and made when
 * that capture ends (tether.h, cuctx__kept_add). */
Test(async_mem, a_waited_free_beside_another_threads_capture_in_its_context_is_not_lost, .timeout = 30)
{
    waited_free_beside_capture_in_its_context(0);
}
/* OPEN, disabled until fixed: the refused synchronize still ends the
 * other thread's capture. Fix proposed: skip it where cuctx's own record
 * shows a capture live in the context (the kept free waits for its end
 * anyway); that record does not exist yet (the sync guard only keeps
 * captures' begins and ends apart from synchronizes). */
Test(async_mem, a_waited_free_beside_another_threads_capture_in_its_context_leaves_that_capture_alone, .timeout = 30,
     .disabled = true)
{
    waited_free_beside_capture_in_its_context(1);
}
