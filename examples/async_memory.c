/* SPDX-License-Identifier: MIT */
/* async_memory.c - stream-ordered memory (cuctx_mem_alloc_async, CUDA
 * 11.2+): three streams of one context, each running batches of work, every
 * batch in a buffer of its own that is allocated on the stream and freed on
 * it at the end of the loop body by CUCTX_AUTO - in the stream's order, so
 * the host never waits and the next batch can get the same memory back.
 *
 *   lane A, a blocking stream, runs all its batches;
 *   lane B, a non-blocking stream, leaves by return halfway, as an error
 *     path does: the buffer of that batch is freed on the way out;
 *   lane C allocates from a pool of its own (cuctx_mem_pool_create,
 *     cuctx_mem_alloc_from_pool); afterwards the pool is destroyed while an
 *     allocation from it is alive, which goes on being used.
 *
 * Then a stream destroyed before the memory allocated on it, with work still
 * queued there: the order a program gets when it declares the memory before
 * the stream (cleanup runs in reverse), or ends a stream on an error path.
 * The real driver crashes on a free that names a destroyed stream, and a free
 * anywhere else can hand the memory on while that work still writes it;
 * cuctx frees it on the context's legacy stream, which waits for a blocking
 * stream's work; a non-blocking stream's destroy waits for its work first.
 * Last, allocations per second, stream-ordered against cuctx_mem_alloc.
 * The program's own driver calls go through CUCTX_CALL; it links cuctx alone.
 *
 * On the cuctx test driver no kernel runs: there y keeps the value the
 * memset put in it, which the program checks instead of y = 2x + 1; it also
 * asks the simulated driver how many misuses reached it (there must be
 * none) and whether the destroyed stream's work was still unfinished at the
 * frees (a blocking stream's must be: that is the case being shown; a
 * non-blocking stream's must not, its destroy having waited). */
#include <cuctx.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "affine_ptx.h"

#define N 4096u             /* floats in x and in y */
#define BLOCK 256u
#define BATCHES 8           /* per lane */
#define LANES 3
#define KERNELS 50          /* launches queued on the stream that is destroyed */
#define ALLOCS 2000         /* allocations of each kind, timed */
#define SMALL 4096u         /* bytes each */

struct lane {
    const char *name;
    cuctx_stream stream;
    cuctx_mem_pool pool;    /* {0}: the device's current pool */
    int stop_at;            /* the batch at which a step "fails"; -1: none */
    float *in, *out;        /* BATCHES * N floats each, page-locked */
    int lane;
};

static int kernels_run;
static CUfunction affine;

static int fail(const char *what)
{
    fprintf(stderr, "async_memory: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

static struct cuctx_stats stats(void)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    return st;
}

/* With the simulated driver loaded (make check), one of its counters; -1 on
 * any other driver. */
static long simulator_count(const char *name)
{
    const char *path = getenv("CUCTX_DRIVER");
    void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *sym = lib ? dlsym(lib, name) : NULL;
    size_t (*count)(void) = NULL;
    memcpy(&count, &sym, sizeof sym);
    return count ? (long)count() : -1;
}

/* What the memset puts in y before the kernel overwrites it: a value of
 * its own per lane and batch, never 0 and never 2x + 1. */
static float sentinel(int lane, int batch)
{
    return -1000.0f * (float)(lane + 1) - (float)batch;
}

/* One batch on s: x copied in, y set to the sentinel, y = 2x + 1 by
 * `launches` kernels, y copied out. With launches 0 it stops after the
 * memset. */
static CUresult queue_batch(cuctx_stream s, CUdeviceptr x, CUdeviceptr y, const float *in, float *out, float fill,
                            int launches)
{
    unsigned n = N, bits;
    memcpy(&bits, &fill, sizeof bits);
    void *args[] = {&x, &y, &n};
    CUstream raw = cuctx_stream_raw(s);
    CUresult rc = CUCTX_CALL(cuMemcpyHtoDAsync, x, in, N * sizeof(float), raw);
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuMemsetD32Async, y, bits, N, raw);
    if (launches == 0)
        return rc;
    for (int k = 0; k < launches && rc == CUDA_SUCCESS; k++)
        rc = cuctx_launch(affine, s, (cuctx_dim3){(N + BLOCK - 1) / BLOCK, 1, 1}, (cuctx_dim3){BLOCK, 1, 1}, 0,
                          args);
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuMemcpyDtoHAsync, out, y, N * sizeof(float), raw);
    return rc;
}

/* Queues the lane's batches on its stream, each in a buffer that lives for
 * one iteration. Returns how many batches were queued to the end, or -1
 * when a call failed and -2 when a step "found something wrong" (stop_at):
 * both leave by return from inside the loop, and the buffer of that batch
 * is freed on the stream all the same, after the work already queued. */
static int run_lane(const struct lane *l)
{
    for (int b = 0; b < BATCHES; b++) {
        CUCTX_AUTO cuctx_mem tmp = {0};
        CUresult rc = l->pool.id ? cuctx_mem_alloc_from_pool(&tmp, l->pool, l->stream, 2 * N * sizeof(float))
                                 : cuctx_mem_alloc_async(&tmp, l->stream, 2 * N * sizeof(float));
        if (rc != CUDA_SUCCESS)
            return fail("a batch's buffer"), -1;
        int stop = b == l->stop_at;
        CUdeviceptr x = cuctx_mem_ptr(tmp), y = x + N * sizeof(float);     /* one buffer, two halves */
        if (queue_batch(l->stream, x, y, l->in + (size_t)b * N, l->out + (size_t)b * N, sentinel(l->lane, b),
                        stop ? 0 : 1) != CUDA_SUCCESS)
            return fail("queueing a batch"), -1;
        if (stop)
            return -2;      /* tmp freed here, on l->stream, after its copy and memset */
    }                       /* tmp freed here, on l->stream, after the batch's work */
    return BATCHES;
}

/* Whether out holds what the batch should have left there: y = 2x + 1, or,
 * where no kernel runs, the memset's value. */
static int batch_right(const float *in, const float *out, float fill)
{
    for (unsigned i = 0; i < N; i++)
        if (out[i] != (kernels_run ? 2.0f * in[i] + 1.0f : fill))
            return 0;
    return 1;
}

static int batch_untouched(const float *out)
{
    for (unsigned i = 0; i < N; i++)
        if (out[i] != 0.0f)
            return 0;
    return 1;
}

/* A stream of `flags` destroyed with KERNELS launches still queued on it,
 * before the two allocations made on it; then the allocations freed, and
 * new memory taken at once on another stream and written (what a free that
 * handed the memory on under the running work would corrupt). Returns 1
 * when the results are right and every step succeeded. */
static int stream_destroyed_first(cuctx_ctx ctx, cuctx_stream other, unsigned flags, const float *in, float *out,
                                  float fill)
{
    /* Declared before the stream: a return from here on would end the
     * stream first too (cleanup runs in reverse), with the same outcome. */
    CUCTX_AUTO cuctx_mem x = {0}, y = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem next = {0};
    const char *kind = flags & CU_STREAM_NON_BLOCKING ? "non-blocking" : "blocking";
    if (cuctx_stream_create(&s, ctx, flags, 0) != CUDA_SUCCESS
        || cuctx_mem_alloc_async(&x, s, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc_async(&y, s, N * sizeof(float)) != CUDA_SUCCESS)
        return fail("the stream and its memory"), 0;
    if (queue_batch(s, cuctx_mem_ptr(x), cuctx_mem_ptr(y), in, out, fill, KERNELS) != CUDA_SUCCESS)
        return fail("queueing the work"), 0;

    CUresult destroyed = cuctx_stream_destroy(&s);      /* the work is still queued */
    long unfinished = simulator_count("cusim_orphaned_work");
    CUresult freed_x = cuctx_mem_destroy(&x), freed_y = cuctx_mem_destroy(&y);
    /* New memory on another stream, written at once. */
    CUresult reused = cuctx_mem_alloc_async(&next, other, 2 * N * sizeof(float));
    if (reused == CUDA_SUCCESS)
        reused = CUCTX_CALL(cuMemsetD32Async, cuctx_mem_ptr(next), 0xffffffffu, 2 * N, cuctx_stream_raw(other));
    if (cuctx_ctx_synchronize(ctx) != CUDA_SUCCESS)
        return fail("synchronizing"), 0;
    int right = batch_right(in, out, fill);
    printf("async_memory: a %s stream destroyed with %d kernels queued, before its 2 allocations: stream destroy %s, "
           "frees %s and %s, new memory written at once on another stream %s; y %s\n",
           kind, KERNELS, cuctx_result_name(destroyed), cuctx_result_name(freed_x), cuctx_result_name(freed_y),
           cuctx_result_name(reused), right ? "right" : "WRONG");
    if (unfinished >= 0)
        printf("async_memory: the simulated driver: work of %ld destroyed %s stream unfinished at the frees\n",
               unfinished, kind);
    int waited = flags & CU_STREAM_NON_BLOCKING ? unfinished <= 0 : unfinished != 0;
    return right && destroyed == CUDA_SUCCESS && freed_x == CUDA_SUCCESS && freed_y == CUDA_SUCCESS
        && reused == CUDA_SUCCESS && waited;
}

/* The pool destroyed while an allocation from it is alive: the driver keeps
 * the pool until that memory is freed, and the memory stays usable. */
static int pool_outlived(cuctx_mem_pool *pool, cuctx_stream s, const float *in, float *out, float fill)
{
    CUCTX_AUTO cuctx_mem last = {0};
    if (cuctx_mem_alloc_from_pool(&last, *pool, s, 2 * N * sizeof(float)) != CUDA_SUCCESS)
        return fail("the pool's last allocation"), 0;
    CUresult destroyed = cuctx_mem_pool_destroy(pool);
    struct cuctx_stats st = stats();
    CUdeviceptr x = cuctx_mem_ptr(last);
    CUresult used = queue_batch(s, x, x + N * sizeof(float), in, out, fill, 1);
    CUresult freed = cuctx_mem_destroy(&last);
    if (cuctx_stream_synchronize(s) != CUDA_SUCCESS)
        return fail("synchronizing"), 0;
    int right = batch_right(in, out, fill);
    printf("async_memory: lane C's pool destroyed with an allocation from it alive: %s, then mem_pools %zu, "
           "async_mems %zu; the allocation used after it: %s, y %s, freed %s\n",
           cuctx_result_name(destroyed), st.mem_pools, st.async_mems, cuctx_result_name(used),
           right ? "right" : "WRONG", cuctx_result_name(freed));
    return destroyed == CUDA_SUCCESS && st.mem_pools == 0 && st.async_mems == 1 && used == CUDA_SUCCESS && right
        && freed == CUDA_SUCCESS;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ALLOCS allocations of SMALL bytes and their frees, each kind; per second. */
static int timing(cuctx_ctx ctx, cuctx_stream s)
{
    cuctx_mem m = {0};
    double t0 = seconds();
    for (int i = 0; i < ALLOCS; i++)
        if (cuctx_mem_alloc_async(&m, s, SMALL) != CUDA_SUCCESS || cuctx_mem_destroy(&m) != CUDA_SUCCESS)
            return fail("a stream-ordered allocation"), 0;
    if (cuctx_stream_synchronize(s) != CUDA_SUCCESS)
        return fail("synchronizing"), 0;
    double t1 = seconds();
    for (int i = 0; i < ALLOCS; i++)
        if (cuctx_mem_alloc(&m, ctx, SMALL) != CUDA_SUCCESS || cuctx_mem_destroy(&m) != CUDA_SUCCESS)
            return fail("an allocation"), 0;
    double t2 = seconds();
    double async_rate = ALLOCS / (t1 - t0), plain_rate = ALLOCS / (t2 - t1);
    printf("async_memory: %d allocations of %u bytes and their frees: stream-ordered %.0f/s, cuctx_mem_alloc "
           "%.0f/s; stream-ordered / cuctx_mem_alloc: %.1f\n",
           ALLOCS, SMALL, async_rate, plain_rate, async_rate / plain_rate);
    return 1;
}

int main(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUCTX_AUTO cuctx_stream sa = {0}, sb = {0}, sc = {0};
    CUCTX_AUTO cuctx_mem_pool pool = {0};
    char name[256] = "";

    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS)
        return fail("device 0's primary context");
    CUdevice dev = cuctx_ctx_device(ctx);
    if (CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, dev) != CUDA_SUCCESS)
        return fail("cuDeviceGetName");
    kernels_run = strstr(name, "cuctx test driver") == NULL;
    printf("async_memory: device 0 is %s\n", name);
    CUCTX_GUARD(ctx);   /* current until main returns: the raw calls need it */
    if (cuctx_module_load_data(&mod, ctx, affine_ptx) != CUDA_SUCCESS
        || cuctx_module_function(mod, "affine", &affine) != CUDA_SUCCESS)
        return fail("loading the kernel");
    if (cuctx_stream_create(&sa, ctx, CU_STREAM_DEFAULT, 0) != CUDA_SUCCESS
        || cuctx_stream_create(&sb, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_stream_create(&sc, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        return fail("the streams");
    if (cuctx_mem_pool_create(&pool, dev, NULL) != CUDA_SUCCESS)
        return fail("the pool");
    /* in and out of every lane's batches, and of the two steps after */
    size_t per_lane = 2 * (size_t)BATCHES * N;
    if (cuctx_host_mem_alloc(&host, ctx, (LANES * per_lane + 4 * N) * sizeof(float), 0) != CUDA_SUCCESS)
        return fail("host memory");
    float *h = cuctx_host_mem_ptr(host);
    memset(h, 0, (LANES * per_lane + 4 * N) * sizeof(float));

    struct lane lanes[LANES] = {
        {"A (blocking stream, the device's pool)", sa, {0}, -1, NULL, NULL, 0},
        {"B (non-blocking stream, the device's pool)", sb, {0}, BATCHES / 2, NULL, NULL, 1},
        {"C (non-blocking stream, a pool of its own)", sc, pool, -1, NULL, NULL, 2},
    };
    for (int l = 0; l < LANES; l++) {
        lanes[l].in = h + l * per_lane;
        lanes[l].out = lanes[l].in + (size_t)BATCHES * N;
        for (size_t i = 0; i < (size_t)BATCHES * N; i++)
            lanes[l].in[i] = 0.25f * (float)(i % 1000) + (float)(3 * l) - 7.0f;
    }

    /* The pipeline: each lane's batches queued on its stream, the three
     * streams running side by side; the host waits only at the end. */
    int ok = 1;
    for (int l = 0; l < LANES; l++) {
        int queued = run_lane(&lanes[l]);
        if (queued == -1)
            return 1;
        struct cuctx_stats st = stats();
        if (queued == -2)
            printf("async_memory: lane %s: left by return at batch %d of %d, as an error path; "
                   "async_mems after it: %zu\n", lanes[l].name, lanes[l].stop_at, BATCHES, st.async_mems);
        else
            printf("async_memory: lane %s: %d of %d batches queued, each in a buffer allocated and freed on "
                   "the stream; async_mems after it: %zu\n", lanes[l].name, queued, BATCHES, st.async_mems);
        ok = ok && st.async_mems == 0 && queued == (lanes[l].stop_at < 0 ? BATCHES : -2);
    }
    for (int l = 0; l < LANES; l++)
        if (cuctx_stream_synchronize(lanes[l].stream) != CUDA_SUCCESS)
            return fail("synchronizing a lane");
    for (int l = 0; l < LANES; l++) {
        int right = 0, untouched = 0, end = lanes[l].stop_at < 0 ? BATCHES : lanes[l].stop_at;
        for (int b = 0; b < BATCHES; b++) {
            const float *in = lanes[l].in + (size_t)b * N, *out = lanes[l].out + (size_t)b * N;
            if (b < end)
                right += batch_right(in, out, sentinel(l, b));
            else
                untouched += batch_untouched(out);
        }
        printf("async_memory: lane %c: %s in %d of %d batches", lanes[l].name[0],
               kernels_run ? "y = 2x + 1" : "y kept the memset's value", right, end);
        if (end < BATCHES)
            printf("; the %d batches from the return on never ran: %d untouched", BATCHES - end, untouched);
        printf("\n");
        ok = ok && right == end && untouched == BATCHES - end;
    }

    float *rest = h + LANES * per_lane;
    for (size_t i = 0; i < N; i++)
        rest[i] = (float)i * 0.5f - 100.0f;
    ok = pool_outlived(&pool, sc, rest, rest + N, sentinel(LANES, 0)) && ok;
    for (size_t i = 0; i < N; i++)
        rest[2 * N + i] = (float)i - 2048.0f;
    ok = stream_destroyed_first(ctx, sb, CU_STREAM_DEFAULT, rest + 2 * N, rest + 3 * N, sentinel(LANES, 1)) && ok;
    memset(rest + 3 * N, 0, N * sizeof(float));
    ok = stream_destroyed_first(ctx, sb, CU_STREAM_NON_BLOCKING, rest + 2 * N, rest + 3 * N, sentinel(LANES, 2)) && ok;
    ok = timing(ctx, sa) && ok;

    struct cuctx_stats st = stats();
    printf("async_memory: at the end: mems %zu, async_mems %zu, mem_pools %zu; %llu failed destroys\n", st.mems,
           st.async_mems, st.mem_pools, (unsigned long long)st.failed_destroys);
    ok = ok && st.mems == 0 && st.async_mems == 0 && st.mem_pools == 0 && st.failed_destroys == 0;
    long misuses = simulator_count("cusim_misuse_count");
    if (misuses >= 0)
        printf("async_memory: the simulated driver recorded %ld misuses\n", misuses);
    ok = ok && misuses <= 0;
    if (!kernels_run)
        printf("async_memory: the cuctx test driver runs no kernel: y = 2x + 1 is checked on a GPU\n");
    printf("async_memory: %s\n", ok ? "every check passed" : "a check FAILED");
    return ok ? 0 : 1;
}
