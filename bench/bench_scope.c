/* SPDX-License-Identifier: MIT */
/* bench_scope.c - a scoped context switch, side by side with the raw calls
 * it replaces, in one run, on one thread: cuCtxGetCurrent + cuCtxSetCurrent
 * + cuCtxSetCurrent, cuCtxPushCurrent + cuCtxPopCurrent, CUCTX_SCOPED, and
 * the driver calls CUCTX_SCOPED makes without anything around them (floor),
 * entering a context that is not current and one that is. Each round
 * interleaves the four in short slices, in a rotating order (benchlib.h).
 * Prints nanoseconds per enter+exit (best round of each) and SCOPED / each
 * raw sequence: the ratio of the bests and the median of the ratios within
 * a round; writes the same rows to bench-scope.dat.
 * Usage: bench_scope [-s SECONDS] [-r ROUNDS] [-o FILE] (see benchlib.h) */
#include "benchlib.h"

#include <cuctx.h>

static const char *prog = "bench_scope";

/* FLOOR: the driver calls CUCTX_SCOPED itself makes - cuCtxGetCurrent, and
 * when the context is not current already cuCtxPushCurrent and
 * cuCtxPopCurrent - with nothing else: what no scope guard that asks the
 * driver which context is current can go below. */
enum way { GET_SET_SET, PUSH_POP, SCOPED, FLOOR, WAYS };
static const char *const way_name[WAYS] = {"get+set+set", "push+pop", "SCOPED", "floor"};

/* n switches into `in` and back; returns how many failed. */
static long body(enum way way, cuctx_ctx in, CUcontext raw_in, long n)
{
    CUcontext prev, popped;
    long bad = 0;
    for (long i = 0; i < n; i++) {
        switch (way) {
        case GET_SET_SET:
            bad += bench_raw.get_current(&prev) != CUDA_SUCCESS;
            bad += bench_raw.set_current(raw_in) != CUDA_SUCCESS;
            bad += bench_raw.set_current(prev) != CUDA_SUCCESS;
            break;
        case PUSH_POP:
            bad += bench_raw.push(raw_in) != CUDA_SUCCESS;
            bad += bench_raw.pop(&popped) != CUDA_SUCCESS;
            break;
        case FLOOR:
            bad += bench_raw.get_current(&prev) != CUDA_SUCCESS;
            if (prev != raw_in) {
                bad += bench_raw.push(raw_in) != CUDA_SUCCESS;
                bad += bench_raw.pop(&popped) != CUDA_SUCCESS;
            }
            break;
        default: {
            int ran = 0;
            CUCTX_SCOPED(in) {
                ran = 1;
                __asm__ volatile("" : "+r"(ran) : : "memory");
            }
            bad += !ran;
            break;
        }
        }
    }
    return bad;
}

struct target { cuctx_ctx in; CUcontext raw_in; };

static long way_ops(int way, long n, void *arg)
{
    const struct target *t = arg;
    if (body((enum way)way, t->in, t->raw_in, n))
        bench_die(prog, way_name[way]);
    return 0;
}

/* One round: the four ways interleaved; ns[way] per enter+exit. */
static void round_of(const struct bench_cfg *cfg, cuctx_ctx in, double ns[WAYS])
{
    struct target t = {in, cuctx_ctx_raw(in)};
    (void)bench_interleave(cfg, WAYS, way_ops, &t, 1024, ns);     /* (a failure ends the program) */
}

int main(int argc, char **argv)
{
    struct bench_cfg cfg;
    bench_config(&cfg, "scope", argc, argv);
    bench_start(prog);
    cuctx_ctx base = {0}, other = {0};
    if (cuctx_ctx_create(&other, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_ctx_create(&base, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
        bench_die(prog, "context create");
    /* base stays current below everything: the usual case of a scope */
    FILE *data = bench_data_open(&cfg, prog,
        "# one thread, ns per enter+exit, best round of each (the ways interleaved in BENCH_SLICES slices);\n"
        "# ratios: SCOPED / raw sequence,\n"
        "# of the bests (best) and median over rounds (median)\n"
        "# floor_ns: the driver calls SCOPED makes (get, and push+pop when not current), alone\n"
        "# entered gss_ns pp_ns scoped_ns gss_best gss_median pp_best pp_median floor_ns floor_best floor_median\n");
    printf("scoped context switch, one thread: ns per enter+exit, best of %d rounds of %g s a way,\n"
           "each round the four ways interleaved in %d slices each;\n"
           "SCOPED / raw: best = of the bests, median = median over the rounds\n", cfg.rounds, cfg.seconds,
           cfg.slices);
    printf("floor = the driver calls SCOPED makes, alone: get, and push+pop when not current\n");
    printf("%-12s %12s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "entered", "get+set+set", "push+pop", "SCOPED",
           "/gss best", "median", "/pp best", "median", "floor", "/fl best", "median");
    struct { const char *name, *row; cuctx_ctx in; } cases[] = {
        {"not current", "not_current", other},
        {"current", "current", base},
    };
    for (int c = 0; c < 2; c++) {
        double t[WAYS][BENCH_MAX_ROUNDS], vs_gss[BENCH_MAX_ROUNDS], vs_pp[BENCH_MAX_ROUNDS], best[WAYS];
        double vs_floor[BENCH_MAX_ROUNDS], ns[WAYS];
        struct bench_cfg warm = cfg;
        warm.seconds = cfg.seconds / 4;
        round_of(&warm, cases[c].in, ns);       /* warm-up */
        for (int r = 0; r < cfg.rounds; r++) {
            round_of(&cfg, cases[c].in, ns);
            for (int w = 0; w < WAYS; w++)
                t[w][r] = ns[w];
            vs_gss[r] = t[SCOPED][r] / t[GET_SET_SET][r];
            vs_pp[r] = t[SCOPED][r] / t[PUSH_POP][r];
            vs_floor[r] = t[SCOPED][r] / t[FLOOR][r];
        }
        for (int w = 0; w < WAYS; w++)
            best[w] = bench_min(t[w], cfg.rounds);
        double gss_best = best[SCOPED] / best[GET_SET_SET], pp_best = best[SCOPED] / best[PUSH_POP];
        double gss_med = bench_median(vs_gss, cfg.rounds), pp_med = bench_median(vs_pp, cfg.rounds);
        double fl_best = best[SCOPED] / best[FLOOR], fl_med = bench_median(vs_floor, cfg.rounds);
        printf("%-12s %12.1f %9.1f %9.1f %9.3f %9.3f %9.3f %9.3f %9.1f %9.3f %9.3f\n", cases[c].name,
               best[GET_SET_SET], best[PUSH_POP], best[SCOPED], gss_best, gss_med, pp_best, pp_med, best[FLOOR],
               fl_best, fl_med);
        fprintf(data, "%s %.2f %.2f %.2f %.4f %.4f %.4f %.4f %.2f %.4f %.4f\n", cases[c].row, best[GET_SET_SET],
                best[PUSH_POP], best[SCOPED], gss_best, gss_med, pp_best, pp_med, best[FLOOR], fl_best, fl_med);
        fflush(stdout);
    }
    bench_data_close(data, &cfg);
    if (cuctx_ctx_destroy(&base) != CUDA_SUCCESS || cuctx_ctx_destroy(&other) != CUDA_SUCCESS)
        bench_die(prog, "context destroy");
    return 0;
}
