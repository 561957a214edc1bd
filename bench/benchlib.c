/* SPDX-License-Identifier: MIT */
/* benchlib.c - see benchlib.h. */
#include "benchlib.h"

#include <cuctx.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench_raw bench_raw;

static char data_path[4096];

double bench_number(const char *prog, const char *what, const char *s, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "%s: %s must be a number from %g to %g, not '%s'\n", prog, what, lo, hi, s);
        exit(2);
    }
    return v;
}

void bench_config(struct bench_cfg *cfg, const char *name, int argc, char **argv)
{
    bench_config_own(cfg, name, argc, argv, NULL, NULL);
}

void bench_config_own(struct bench_cfg *cfg, const char *name, int argc, char **argv, bench_opt_fn *own,
                      const char *own_usage)
{
    char prog[64];
    const char *s;
    snprintf(prog, sizeof prog, "bench_%s", name);
    setvbuf(stdout, NULL, _IOLBF, 0);   /* rows appear as they are measured, also into a pipe */
    cfg->seconds = 0.1;
    cfg->rounds = 9;
    cfg->max_threads = 16;
    cfg->slices = 20;
    cfg->data = NULL;
    if ((s = getenv("BENCH_SECONDS")) && *s)
        cfg->seconds = bench_number(prog, "BENCH_SECONDS", s, 1e-4, 3600);
    if ((s = getenv("BENCH_ROUNDS")) && *s)
        cfg->rounds = (int)bench_number(prog, "BENCH_ROUNDS", s, 1, BENCH_MAX_ROUNDS);
    if ((s = getenv("BENCH_THREADS")) && *s)
        cfg->max_threads = (int)bench_number(prog, "BENCH_THREADS", s, 1, BENCH_MAX_THREADS);
    if ((s = getenv("BENCH_SLICES")) && *s)
        cfg->slices = (int)bench_number(prog, "BENCH_SLICES", s, 1, 1000);
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val || opt[0] != '-' || !opt[1] || opt[2]) {
            fprintf(stderr, "usage: %s [-s SECONDS-PER-RUN] [-r ROUNDS] [-t MAX-THREADS] [-o DATA-FILE]%s%s\n",
                    prog, own_usage ? " " : "", own_usage ? own_usage : "");
            exit(2);
        }
        switch (opt[1]) {
        case 's': cfg->seconds = bench_number(prog, "-s", val, 1e-4, 3600); break;
        case 'r': cfg->rounds = (int)bench_number(prog, "-r", val, 1, BENCH_MAX_ROUNDS); break;
        case 't': cfg->max_threads = (int)bench_number(prog, "-t", val, 1, BENCH_MAX_THREADS); break;
        case 'o': cfg->data = val; break;
        default:
            if (own && own(opt[1], val))
                break;
            fprintf(stderr, "%s: unknown option %s\n", prog, opt);
            exit(2);
        }
    }
    if (!cfg->data) {
        const char *dir = getenv("BENCH_DATA_DIR");
        snprintf(data_path, sizeof data_path, "%s/bench-%s.dat", dir && *dir ? dir : ".", name);
        cfg->data = data_path;
    }
}

void bench_die(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, cuctx_last_error_message());
    exit(1);
}

#define RAW(field, name, version)                                                       \
    if (cuctx_driver_symbol(name, version, (void **)&bench_raw.field) != CUDA_SUCCESS) \
        bench_die(prog, "cuGetProcAddress(" name ")")

void bench_start(const char *prog)
{
    if (cuctx_init() != CUDA_SUCCESS)
        bench_die(prog, "cuctx_init");
    RAW(ctx_create, "cuCtxCreate", 3020);
    RAW(ctx_destroy, "cuCtxDestroy", 4000);
    RAW(get_current, "cuCtxGetCurrent", 4000);
    RAW(set_current, "cuCtxSetCurrent", 4000);
    RAW(push, "cuCtxPushCurrent", 4000);
    RAW(pop, "cuCtxPopCurrent", 4000);
    RAW(event_create, "cuEventCreate", 2000);
    RAW(event_destroy, "cuEventDestroy", 4000);
    RAW(stream_create, "cuStreamCreateWithPriority", 5050);
    RAW(stream_destroy, "cuStreamDestroy", 4000);
    RAW(mem_alloc, "cuMemAlloc", 3020);
    RAW(mem_free, "cuMemFree", 3020);
    RAW(mem_alloc_async, "cuMemAllocAsync", 11020);
    RAW(mem_free_async, "cuMemFreeAsync", 11020);
    RAW(stream_sync, "cuStreamSynchronize", 2000);
    RAW(launch_kernel, "cuLaunchKernel", 4000);
    RAW(graph_launch, "cuGraphLaunch", 10000);
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long bench_interleave(const struct bench_cfg *cfg, int k, bench_slice_fn *fn, void *arg, long block, double *ns)
{
    double spent[8] = {0}, slice = cfg->seconds / cfg->slices;
    long done[8] = {0}, bad = 0;
    for (int turn = 0; turn < cfg->slices; turn++) {
        for (int j = 0; j < k; j++) {
            int who = (turn + j) % k;
            double start = bench_now(), t;
            do {
                bad += fn(who, block, arg);
                done[who] += block;
            } while ((t = bench_now()) - start < slice);
            spent[who] += t - start;
        }
    }
    for (int i = 0; i < k; i++)
        ns[i] = spent[i] * 1e9 / (double)done[i];
    return bad;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(const double *v, int n)
{
    double s[BENCH_MAX_ROUNDS];
    if (n > BENCH_MAX_ROUNDS)
        n = BENCH_MAX_ROUNDS;
    memcpy(s, v, (size_t)n * sizeof s[0]);
    qsort(s, (size_t)n, sizeof s[0], by_value);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double bench_max(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

double bench_min(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

FILE *bench_data_open(const struct bench_cfg *cfg, const char *prog, const char *header)
{
    FILE *f = fopen(cfg->data, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %s\n", prog, cfg->data, strerror(errno));
        exit(1);
    }
    setvbuf(f, NULL, _IOLBF, 0);    /* a run cut short keeps the rows it measured */
    int version = 0;
    cuctx_driver_version(&version);
    const char *drv = getenv("CUCTX_DRIVER");
    if (!drv || !*drv)
        drv = "libcuda.so.1";
    else if (strrchr(drv, '/'))
        drv = strrchr(drv, '/') + 1;
    fprintf(f, "# %s: BENCH_SECONDS=%g BENCH_ROUNDS=%d BENCH_SLICES=%d BENCH_THREADS=%d, %s, driver version %d\n",
            prog, cfg->seconds, cfg->rounds, cfg->slices, cfg->max_threads, drv, version);
    fputs(header, f);
    return f;
}

void bench_data_close(FILE *f, const struct bench_cfg *cfg)
{
    if (fclose(f) != 0)
        fprintf(stderr, "writing %s failed: %s\n", cfg->data, strerror(errno));
    else
        printf("(rows written to %s)\n", cfg->data);
}
