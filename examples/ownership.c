/* SPDX-License-Identifier: MIT */
/* ownership.c - who destroys what, and when.
 *
 *   1. A function makes a stream and a buffer and hands them out with
 *      CUCTX_MOVE; if a step fails, what it made so far is destroyed.
 *   2. A struct owns several objects and one function destroys them all.
 *   3. A handle is destroyed on another thread; the copy left here is then
 *      refused, not sent to the driver.
 *   4. At the end cuctx_stats_get shows nothing alive.
 *
 * run() shows the error-path pattern: its CUCTX_AUTO variables are all
 * declared first, so each failure can goto out.
 *
 * Exits 0 only if every step did what it says. It launches no kernel: it runs
 * on any GPU, and on the simulated driver of `make check`. */
#include <cuctx.h>
#include <pthread.h>
#include <stdio.h>

static int failures;

static void check(int ok, const char *what)
{
    printf("  %s: %s\n", ok ? "ok" : "WRONG", what);
    if (!ok)
        failures++;
}

static struct cuctx_stats now(void)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    return st;
}

/* 1. Until the moves at the end, CUCTX_AUTO owns s and m: a failure on the
 * way returns, and whatever was made is destroyed on the way out. */
static CUresult make_stream_and_buffer(cuctx_ctx ctx, size_t bytes, cuctx_stream *stream_out, cuctx_mem *buf_out)
{
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem m = {0};
    CUresult rc = cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = cuctx_mem_alloc(&m, ctx, bytes);
    if (rc != CUDA_SUCCESS)
        return rc;                  /* s is destroyed here */
    *stream_out = CUCTX_MOVE(s);    /* s is {0} now, so its cleanup does nothing */
    *buf_out = CUCTX_MOVE(m);
    return CUDA_SUCCESS;
}

/* 2. A struct that owns its objects; batch_close is the one place they end. */
struct batch {
    cuctx_stream stream;
    cuctx_mem buf;
    cuctx_host_mem staging;
    cuctx_event done;
};

/* Children before anything they use; every destroy resets its handle to {0},
 * so closing twice, or closing a half-opened batch, is harmless. */
static void batch_close(struct batch *b)
{
    cuctx_destroy(&b->done);
    cuctx_destroy(&b->staging);
    cuctx_destroy(&b->buf);
    cuctx_destroy(&b->stream);
}

static CUresult batch_open(struct batch *b, cuctx_ctx ctx, size_t bytes)
{
    static const struct batch none;
    *b = none;
    CUresult rc = make_stream_and_buffer(ctx, bytes, &b->stream, &b->buf);
    if (rc == CUDA_SUCCESS)
        rc = cuctx_host_mem_alloc(&b->staging, ctx, bytes, 0);
    if (rc == CUDA_SUCCESS)
        rc = cuctx_event_create(&b->done, ctx, CU_EVENT_DISABLE_TIMING);
    if (rc != CUDA_SUCCESS)
        batch_close(b);
    return rc;
}

/* 3. Runs on another thread: destroys the event it was handed. No context
 * needs to be current here; cuctx makes the owner current for the call. */
struct handoff {
    cuctx_event ev;
    CUresult rc;
};

static void *destroy_elsewhere(void *arg)
{
    struct handoff *h = arg;
    h->rc = cuctx_event_destroy(&h->ev);
    return NULL;
}

static int run(void)
{
    /* Every CUCTX_AUTO of the function first, initialised, before the first
     * goto: a goto out taken before a declaration further down would land in
     * that variable's scope, and its cleanup would read stack garbage
     * (cuctx(3), rule 6; gcc says so only with -Wjump-misses-init). */
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_event ev = {0};
    /* The plain locals too: -Wjump-misses-init warns of any initialised
     * variable a goto skips, and is the only warning gcc has for the
     * harmful case. */
    const char *failed = NULL;
    cuctx_stream s = {0}, s2 = {0};
    cuctx_mem m = {0}, m2 = {0};
    struct batch b;
    cuctx_event copy;
    struct handoff h;
    pthread_t t;
    CUresult rc;
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS)
        goto out;

    printf("1. a function hands a stream and a buffer out with CUCTX_MOVE\n");
    rc = make_stream_and_buffer(ctx, 1 << 20, &s, &m);
    check(rc == CUDA_SUCCESS && cuctx_mem_size(m) == 1 << 20 && cuctx_stream_synchronize(s) == CUDA_SUCCESS,
          "the caller got a live stream and a 1 MiB buffer");
    check(now().streams == 1 && now().mems == 1, "exactly one of each is alive: the function's copies were emptied");
    rc = make_stream_and_buffer(ctx, (size_t)1 << 50, &s2, &m2);    /* 1 PiB: the allocation fails */
    printf("  asking for 1 PiB: %s\n", cuctx_result_name(rc));
    check(rc != CUDA_SUCCESS && s2.id == 0 && m2.id == 0, "the failed call handed nothing out");
    check(now().streams == 1, "and the stream it had made before the failure was destroyed");
    cuctx_stream_destroy(&s);
    cuctx_mem_destroy(&m);

    printf("2. a struct that owns its objects, and one function that destroys them\n");
    rc = batch_open(&b, ctx, 4096);
    check(rc == CUDA_SUCCESS, "batch_open made a stream, a buffer, page-locked memory and an event");
    if (rc == CUDA_SUCCESS) {
        check(cuctx_event_record(b.done, b.stream) == CUDA_SUCCESS && cuctx_event_synchronize(b.done) == CUDA_SUCCESS,
              "the batch's event was recorded on its stream and completed");
        struct cuctx_stats st = now();
        check(st.streams == 1 && st.mems == 1 && st.host_mems == 1 && st.events == 1, "four objects alive");
    }
    batch_close(&b);
    check(now().streams + now().mems + now().host_mems + now().events == 0, "batch_close destroyed all four");
    batch_close(&b);
    check(now().failed_destroys == 0, "closing it a second time did nothing (every handle was {0})");

    printf("3. a handle destroyed on another thread\n");
    if (cuctx_event_create(&ev, ctx, 0) != CUDA_SUCCESS)
        goto out;
    copy = ev;                              /* a copy kept behind: it will go stale */
    h.ev = CUCTX_MOVE(ev);
    h.rc = CUDA_ERROR_UNKNOWN;
    if (pthread_create(&t, NULL, destroy_elsewhere, &h) != 0) {
        failed = "pthread_create failed";
        cuctx_event_destroy(&h.ev);         /* moved out of ev: no cleanup of ours ends it */
        goto out;
    }
    pthread_join(t, NULL);
    check(h.rc == CUDA_SUCCESS && h.ev.id == 0, "the other thread's destroy succeeded and emptied its handle");
    rc = cuctx_event_record(copy, (cuctx_stream){0});
    printf("  recording the stale copy here: %s\n", cuctx_result_name(rc));
    check(rc == CUDA_ERROR_INVALID_HANDLE, "the stale copy was refused without reaching the driver");
    return 0;
out:
    fprintf(stderr, "ownership: %s\n", failed ? failed : cuctx_last_error_message());
    return 1;
}   /* on every path: ev ({0} after the move, or never made) and then ctx are cleaned up here */

int main(void)
{
    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "ownership: %s\n", cuctx_last_error_message());
        return 1;
    }
    if (run() != 0)
        return 1;

    printf("4. at the end\n");
    struct cuctx_stats st = now();
    printf("  alive: %zu contexts, %zu context handles, %zu events, %zu streams, %zu modules, %zu device "
           "allocations, %zu host allocations, %zu graph execs; %llu failed destroys, %llu stale skips\n",
           st.contexts, st.ctx_handles, st.events, st.streams, st.modules, st.mems, st.host_mems, st.graph_execs,
           (unsigned long long)st.failed_destroys, (unsigned long long)st.stale_skips);
    check(st.contexts + st.ctx_handles + st.events + st.streams + st.modules + st.mems + st.host_mems
                  + st.graph_execs == 0 && st.failed_destroys == 0 && st.stale_skips == 0,
          "nothing alive, no destroy refused, none skipped");
    printf("%s\n", failures ? "ownership: FAILED" : "ownership: every check passed");
    return failures ? 1 : 0;
}
