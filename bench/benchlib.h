/* SPDX-License-Identifier: MIT */
/* benchlib.h - what the benchmarks share: settings from the environment,
 * the clock, the raw driver entry points, the interleaved round, paired
 * statistics, data files.
 *
 * Every benchmark times cuctx and the raw driver in one process, for
 * BENCH_ROUNDS rounds. In the single-thread programs a round interleaves
 * the contenders: BENCH_SLICES short slices of each in turn (raw, cuctx,
 * raw, cuctx, ..., which goes first rotating from turn to turn), so that a
 * change of the machine's speed during the round (clock, another process)
 * falls on every contender alike. Noise on a shared machine only ever slows
 * a run down, so the best round of each is its figure, and the ratio of the
 * bests is one summary; the other is the median over the rounds of the
 * ratio within a round, which drift between rounds cannot move. */
#ifndef BENCHLIB_H
#define BENCHLIB_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>

#define BENCH_MAX_ROUNDS 101
#define BENCH_MAX_THREADS 64

struct bench_cfg {
    double seconds;      /* one timed run: BENCH_SECONDS, default 0.1 */
    int rounds;          /* paired runs per row: BENCH_ROUNDS, default 9 */
    int max_threads;     /* the sweep's largest thread count: BENCH_THREADS, default 16 */
    int slices;          /* slices per contender in a round: BENCH_SLICES, default 20 */
    const char *data;    /* the data file: argument -o FILE, else BENCH_DATA_DIR/bench-NAME.dat */
};

/* Reads the settings (environment, then -s SECONDS -r ROUNDS -t THREADS
 * -o FILE on the command line); exits with a message on a bad value. */
void bench_config(struct bench_cfg *cfg, const char *name, int argc, char **argv);

/* A program's own options beside the common ones: called with each option
 * letter bench_config does not know and its value; returns 0 if the letter
 * is not the program's either (a usage error). */
typedef int bench_opt_fn(char opt, const char *val);
/* bench_config, also taking the program's own options through own (may be
 * NULL); own_usage (e.g. "[-T COUNTS]") is added to the usage message. */
void bench_config_own(struct bench_cfg *cfg, const char *name, int argc, char **argv, bench_opt_fn *own,
                      const char *own_usage);

/* s as a number from lo to hi; exits with a message naming `what` if it is not. */
double bench_number(const char *prog, const char *what, const char *s, double lo, double hi);

/* The raw driver, from the same library cuctx loaded (cuctx_driver_symbol). */
struct bench_raw {
    PFN_cuCtxCreate_v3020 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxGetCurrent_v4000 get_current;
    PFN_cuCtxSetCurrent_v4000 set_current;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuEventCreate_v2000 event_create;
    PFN_cuEventDestroy_v4000 event_destroy;
    PFN_cuStreamCreateWithPriority_v5050 stream_create;
    PFN_cuStreamDestroy_v4000 stream_destroy;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemAllocAsync_v11020 mem_alloc_async;
    PFN_cuMemFreeAsync_v11020 mem_free_async;
    PFN_cuStreamSynchronize_v2000 stream_sync;
    PFN_cuLaunchKernel_v4000 launch_kernel;
    PFN_cuGraphLaunch_v10000 graph_launch;
};
extern struct bench_raw bench_raw;

/* cuctx_init and the raw entry points; exits with a message on failure. */
void bench_start(const char *prog);
/* Exits with the failing step and cuctx's last error message. */
void bench_die(const char *prog, const char *what);

double bench_now(void);                     /* seconds, monotonic */

/* Runs n operations of contender `who`; returns how many failed. */
typedef long bench_slice_fn(int who, long n, void *arg);
/* One round of k contenders (at most 8), interleaved: cfg->slices turns,
 * in each a slice of about cfg->seconds / cfg->slices of every contender,
 * the first of a turn rotating; a slice runs blocks of `block` operations
 * until its time is up. ns[i] = nanoseconds per operation of contender i
 * over all its slices. Returns the failed operations of all of them. */
long bench_interleave(const struct bench_cfg *cfg, int k, bench_slice_fn *fn, void *arg, long block, double *ns);
double bench_median(const double *v, int n);
double bench_max(const double *v, int n);
double bench_min(const double *v, int n);

/* Opens cfg->data for writing and writes its header lines (each "# ...");
 * exits with a message if it cannot. */
FILE *bench_data_open(const struct bench_cfg *cfg, const char *prog, const char *header);
/* Closes it, and says where the rows went. */
void bench_data_close(FILE *f, const struct bench_cfg *cfg);

#endif
