/* SPDX-License-Identifier: MIT */
/* bench_events.c - the hot path, side by side: event create + destroy
 * (CU_EVENT_DISABLE_TIMING) through the raw driver and through cuctx, in one
 * run, on 1..T threads each in its own context and all in one shared context.
 * Prints millions of pairs per second and the ratio cuctx / raw (1.00 = as
 * fast as the raw calls). Run-to-run noise on a shared machine only slows a
 * run down, so the ratio of the best runs is shown, and beside it the
 * median of the ratios of paired runs.
 * Usage: bench_events [seconds-per-run] [max-threads] */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static PFN_cuEventCreate_v2000 ev_create;
static PFN_cuEventDestroy_v4000 ev_destroy;
static PFN_cuCtxSetCurrent_v4000 set_current;

struct worker {
    cuctx_ctx ctx;
    int use_cuctx;
    double seconds;
    _Atomic int *go;
    unsigned long pairs;
    int failed;
};

#define ROUNDS 9

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *work(void *p)
{
    struct worker *w = p;
    set_current(cuctx_ctx_raw(w->ctx));
    while (!atomic_load(w->go))
        ;
    double end = now() + w->seconds;
    unsigned long n = 0;
    while (now() < end) {
        for (int i = 0; i < 256; i++) {
            if (w->use_cuctx) {
                cuctx_event ev = {0};
                w->failed |= cuctx_event_create(&ev, w->ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
                w->failed |= cuctx_event_destroy(&ev) != CUDA_SUCCESS;
            } else {
                CUevent ev;
                w->failed |= ev_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
                w->failed |= ev_destroy(ev) != CUDA_SUCCESS;
            }
        }
        n += 256;
    }
    w->pairs = n;
    set_current(NULL);
    return NULL;
}

/* Millions of pairs per second over `threads` threads. */
static double run(cuctx_ctx *ctxs, int threads, int use_cuctx, double seconds)
{
    pthread_t t[64];
    struct worker w[64];
    _Atomic int go = 0;
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ctxs[i], use_cuctx, seconds, &go, 0, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    double start = now();
    atomic_store(&go, 1);
    unsigned long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += w[i].pairs;
        if (w[i].failed) {
            fprintf(stderr, "bench_events: a create or destroy failed: %s\n", cuctx_last_error_message());
            exit(1);
        }
    }
    return (double)total / (now() - start) / 1e6;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 0.4;
    int max_threads = argc > 2 ? atoi(argv[2]) : 16;
    if (max_threads > 64)
        max_threads = 64;
    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "bench_events: %s\n", cuctx_last_error_message());
        return 1;
    }
    if (cuctx_driver_symbol("cuEventCreate", 2000, (void **)&ev_create) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuEventDestroy", 4000, (void **)&ev_destroy) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxSetCurrent", 4000, (void **)&set_current) != CUDA_SUCCESS) {
        fprintf(stderr, "bench_events: %s\n", cuctx_last_error_message());
        return 1;
    }
    cuctx_ctx own[64] = {{0}}, shared[64];
    for (int i = 0; i < max_threads; i++) {
        if (cuctx_ctx_create(&own[i], 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS) {
            fprintf(stderr, "bench_events: %s\n", cuctx_last_error_message());
            return 1;
        }
        cuctx_pop_current();
        shared[i] = own[0];
    }
    /* warm up: the first runs after creating contexts are slower for both */
    run(own, max_threads, 0, 0.5);
    run(own, max_threads, 1, 0.5);
    printf("event create+destroy pairs, millions per second: best of %d runs of %.2f s each;\n"
           "best = ratio of the bests; median = median over the runs of cuctx / raw, each cuctx\n"
           "run next to a raw run\n", ROUNDS, seconds);
    printf("%-8s %-7s %10s %10s %7s %7s\n", "threads", "context", "raw", "cuctx", "best", "median");
    for (int threads = 1; threads <= max_threads; threads *= 2) {
        for (int mode = 0; mode < 2; mode++) {
            cuctx_ctx *ctxs = mode == 0 ? own : shared;
            double raw = 0, mine = 0, ratio[ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                /* alternate which goes first, so that drift hits both alike */
                double r, c;
                if (round & 1) {
                    c = run(ctxs, threads, 1, seconds);
                    r = run(ctxs, threads, 0, seconds);
                } else {
                    r = run(ctxs, threads, 0, seconds);
                    c = run(ctxs, threads, 1, seconds);
                }
                raw = r > raw ? r : raw;
                mine = c > mine ? c : mine;
                ratio[round] = c / r;
            }
            qsort(ratio, ROUNDS, sizeof ratio[0], by_value);
            printf("%-8d %-7s %10.2f %10.2f %7.2f %7.2f\n", threads, mode == 0 ? "own" : "shared", raw, mine,
                   mine / raw, ratio[ROUNDS / 2]);
            fflush(stdout);
        }
    }
    for (int i = 0; i < max_threads; i++)
        cuctx_ctx_destroy(&own[i]);
    return 0;
}
