/* SPDX-License-Identifier: MIT */
/* bench_scope.c - a scoped context switch, side by side with the raw calls
 * it replaces, in one run, on one thread: cuCtxGetCurrent + cuCtxSetCurrent
 * + cuCtxSetCurrent, cuCtxPushCurrent + cuCtxPopCurrent, and CUCTX_SCOPED,
 * for a context that is not current and for one that is. Prints
 * nanoseconds per enter+exit (best of the rounds) and the ratio of cuctx to
 * each raw sequence. Usage: bench_scope [iterations-per-round] */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 9

static PFN_cuCtxGetCurrent_v4000 get_current;
static PFN_cuCtxSetCurrent_v4000 set_current;
static PFN_cuCtxPushCurrent_v4000 push;
static PFN_cuCtxPopCurrent_v4000 pop;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

enum way { GET_SET_SET, PUSH_POP, SCOPED };

/* Nanoseconds per switch in and back, entering `in` with `base` current. */
static double once(enum way way, cuctx_ctx in, CUcontext raw_in, long n)
{
    CUcontext prev, popped;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        switch (way) {
        case GET_SET_SET:
            get_current(&prev);
            set_current(raw_in);
            set_current(prev);
            break;
        case PUSH_POP:
            push(raw_in);
            pop(&popped);
            break;
        case SCOPED:
            CUCTX_SCOPED(in) {
                __asm__ volatile("" ::: "memory");
            }
            break;
        }
    }
    return (now() - t0) / (double)n;
}

static double best(enum way way, cuctx_ctx in, long n)
{
    CUcontext raw_in = cuctx_ctx_raw(in);
    double b = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t = once(way, in, raw_in, n);
        b = t < b ? t : b;
    }
    return b;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    cuctx_ctx base = {0}, other = {0};
    if (cuctx_init() != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxGetCurrent", 4000, (void **)&get_current) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxSetCurrent", 4000, (void **)&set_current) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxPushCurrent", 4000, (void **)&push) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxPopCurrent", 4000, (void **)&pop) != CUDA_SUCCESS
        || cuctx_ctx_create(&other, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS
        || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_ctx_create(&base, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS) {
        fprintf(stderr, "bench_scope: %s\n", cuctx_last_error_message());
        return 1;
    }
    /* base stays current below everything: the usual case of a scope */
    printf("scoped context switch, ns per enter+exit, best of %d rounds of %ld\n", ROUNDS, n);
    printf("%-12s %12s %10s %10s %14s %12s\n", "entered", "get+set+set", "push+pop", "SCOPED", "SCOPED/gss", "SCOPED/pp");
    struct { const char *name; cuctx_ctx in; } cases[] = {{"not current", other}, {"current", base}};
    for (int c = 0; c < 2; c++) {
        once(SCOPED, cases[c].in, cuctx_ctx_raw(cases[c].in), n / 10);     /* warm-up */
        double gss = best(GET_SET_SET, cases[c].in, n);
        double pp = best(PUSH_POP, cases[c].in, n);
        double sc = best(SCOPED, cases[c].in, n);
        printf("%-12s %12.1f %10.1f %10.1f %14.2f %12.2f\n", cases[c].name, gss, pp, sc, sc / gss, sc / pp);
    }
    cuctx_ctx_destroy(&base);
    cuctx_ctx_destroy(&other);
    return 0;
}
