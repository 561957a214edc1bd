/* SPDX-License-Identifier: MIT */
/* bench_ops.c - single operations on one thread, cuctx beside the raw
 * driver: event create+destroy (CU_EVENT_DISABLE_TIMING), stream
 * create+destroy, 4 KiB device memory alloc+free, each in an owned context
 * that is current, and the handle-to-raw lookups cuctx_event_raw and
 * cuctx_ctx_raw of live handles beside reading a variable that holds the
 * raw handle. Prints nanoseconds per operation (best run of each) and
 * cuctx / raw time: the ratio of the bests and the median of the paired
 * ratios; writes the same rows to bench-ops.dat.
 * Usage: bench_ops [-s SECONDS] [-r ROUNDS] [-o FILE] (see benchlib.h) */
#include "benchlib.h"

#include <cuctx.h>
#include <stdlib.h>

static const char *prog = "bench_ops";
static cuctx_ctx ctx;
static cuctx_event live_event;
static CUevent live_event_raw;
static CUcontext live_ctx_raw;

/* Each body does n operations and returns how many failed. */
typedef long body_fn(long n);

static long event_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUevent ev;
        bad += bench_raw.event_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
        bad += bench_raw.event_destroy(ev) != CUDA_SUCCESS;
    }
    return bad;
}

static long event_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        cuctx_event ev = {0};
        bad += cuctx_event_create(&ev, ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
        bad += cuctx_event_destroy(&ev) != CUDA_SUCCESS;
    }
    return bad;
}

/* cuctx_stream_create calls cuStreamCreateWithPriority; so does the raw side,
 * with priority 0, which is what cuStreamCreate means. */
static long stream_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUstream s;
        bad += bench_raw.stream_create(&s, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS;
        bad += bench_raw.stream_destroy(s) != CUDA_SUCCESS;
    }
    return bad;
}

static long stream_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        cuctx_stream s = {0};
        bad += cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS;
        bad += cuctx_stream_destroy(&s) != CUDA_SUCCESS;
    }
    return bad;
}

static long mem_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUdeviceptr p;
        bad += bench_raw.mem_alloc(&p, 4096) != CUDA_SUCCESS;
        bad += bench_raw.mem_free(p) != CUDA_SUCCESS;
    }
    return bad;
}

static long mem_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        cuctx_mem m = {0};
        bad += cuctx_mem_alloc(&m, ctx, 4096) != CUDA_SUCCESS;
        bad += cuctx_mem_destroy(&m) != CUDA_SUCCESS;
    }
    return bad;
}

/* The raw side of a lookup: the raw handle as a program without cuctx keeps
 * it, in a variable the compiler must read each time. */
static long event_lookup_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUevent e = *(CUevent volatile *)&live_event_raw;
        bad += e == NULL;
    }
    return bad;
}

static long event_lookup_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUevent e = cuctx_event_raw(live_event);
        __asm__ volatile("" : "+r"(e));
        bad += e == NULL;
    }
    return bad;
}

static long ctx_lookup_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUcontext c = *(CUcontext volatile *)&live_ctx_raw;
        bad += c == NULL;
    }
    return bad;
}

static long ctx_lookup_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++) {
        CUcontext c = cuctx_ctx_raw(ctx);
        __asm__ volatile("" : "+r"(c));
        bad += c == NULL;
    }
    return bad;
}

static const struct op {
    const char *name;     /* the row's name in the data file */
    const char *title;
    long block;           /* operations between two looks at the clock */
    body_fn *raw, *cuctx;
} ops[] = {
    {"event", "event create+destroy", 64, event_raw, event_cuctx},
    {"stream", "stream create+destroy", 16, stream_raw, stream_cuctx},
    {"mem4k", "4 KiB alloc+free", 4, mem_raw, mem_cuctx},
    {"event_raw", "cuctx_event_raw lookup", 4096, event_lookup_raw, event_lookup_cuctx},
    {"ctx_raw", "cuctx_ctx_raw lookup", 4096, ctx_lookup_raw, ctx_lookup_cuctx},
};

/* Nanoseconds per operation over one run of about `seconds`. */
static double run(const struct op *op, body_fn *body, double seconds)
{
    long n = 0, bad = 0;
    double start = bench_now(), end = start + seconds, t;
    do {
        bad += body(op->block);
        n += op->block;
    } while ((t = bench_now()) < end);
    if (bad) {
        fprintf(stderr, "%s: %ld of %ld %s operations failed\n", prog, bad, n, op->name);
        bench_die(prog, op->title);
    }
    return (t - start) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
    struct bench_cfg cfg;
    bench_config(&cfg, "ops", argc, argv);
    bench_start(prog);
    /* created contexts are pushed, so ctx is current from here on */
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
        bench_die(prog, "context create");
    if (cuctx_event_create(&live_event, ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        bench_die(prog, "event create");
    live_event_raw = cuctx_event_raw(live_event);
    live_ctx_raw = cuctx_ctx_raw(ctx);

    FILE *data = bench_data_open(&cfg, prog,
        "# one thread, an owned context current; ns per operation, best run of each;\n"
        "# best = cuctx / raw of the bests, median = median over rounds of cuctx / raw\n"
        "# op raw_ns cuctx_ns best median\n");
    printf("single operations, one thread, owned context current: ns per operation, best of %d runs of %g s;\n"
           "best = cuctx / raw time of the bests, median = median over the rounds of cuctx / raw\n",
           cfg.rounds, cfg.seconds);
    printf("%-24s %10s %10s %7s %7s\n", "operation", "raw", "cuctx", "best", "median");
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const struct op *op = &ops[k];
        double raw[BENCH_MAX_ROUNDS], mine[BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS];
        run(op, op->raw, cfg.seconds / 4);      /* warm-up: caches, driver pools */
        run(op, op->cuctx, cfg.seconds / 4);
        for (int r = 0; r < cfg.rounds; r++) {
            /* alternate which goes first, so that drift hits both alike */
            if (r & 1) {
                mine[r] = run(op, op->cuctx, cfg.seconds);
                raw[r] = run(op, op->raw, cfg.seconds);
            } else {
                raw[r] = run(op, op->raw, cfg.seconds);
                mine[r] = run(op, op->cuctx, cfg.seconds);
            }
            ratio[r] = mine[r] / raw[r];
        }
        double braw = bench_min(raw, cfg.rounds), bmine = bench_min(mine, cfg.rounds);
        double med = bench_median(ratio, cfg.rounds);
        printf("%-24s %10.1f %10.1f %7.3f %7.3f\n", op->title, braw, bmine, bmine / braw, med);
        fprintf(data, "%s %.2f %.2f %.4f %.4f\n", op->name, braw, bmine, bmine / braw, med);
        fflush(stdout);
    }
    bench_data_close(data, &cfg);
    if (cuctx_event_destroy(&live_event) != CUDA_SUCCESS || cuctx_ctx_destroy(&ctx) != CUDA_SUCCESS)
        bench_die(prog, "cleanup");
    return 0;
}
