/* SPDX-License-Identifier: MIT */
/* bench_threads.c - the thread sweep: event create+destroy pairs
 * (CU_EVENT_DISABLE_TIMING) on 1, 2, 4, 8, 16 threads, each thread in its
 * own context ("own") and all in one context ("shared"), each without and
 * with churn (one more thread creating and destroying contexts in a loop
 * meanwhile), through three implementations in one process: the raw driver,
 * cuctx, and the seed registry design (seed_registry.h). The churn thread
 * uses the same implementation as the workers of its run, since how a
 * design makes and ends contexts is part of what is compared.
 * Prints millions of pairs per second, best run of each, and cuctx against
 * raw and against the seed: ratio of the bests and median over the rounds
 * of the paired ratios (higher is better for cuctx); writes the same rows to
 * bench-threads.dat (tools/plot-bench draws them).
 *
 * A run's throughput counts the workers' time only: from the start signal
 * until the last worker has ended. Only then is the churn thread told to
 * stop, and the run waits for it to finish the context it is making or
 * destroying; that wait (on the H200 it can be seconds) is reported per row,
 * as the mean over the row's runs, apart from the throughput.
 *
 * Usage: bench_threads [-s SECONDS] [-r ROUNDS] [-t MAX-THREADS] [-o FILE]
 *                      [-T COUNTS] [-C own|shared|both]
 * Which rows run (environment, or the options, which win):
 *   -T COUNTS, BENCH_THREAD_COUNTS  thread counts, comma-separated (8,16);
 *                                   default 1, 2, 4, ... up to -t, and -t
 *   -C MODE, BENCH_CONTEXTS         own, shared or both (default)
 *   BENCH_CHURN                     0: rows without churn only; only: rows
 *                                   with churn only; 1 or unset: both
 *   BENCH_CHURN_PAUSE_MS            the churn thread sleeps this long after
 *                                   each context create+destroy (default 0) */
#include "benchlib.h"
#include "seed_registry.h"

#include <cuctx.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *prog = "bench_threads";

enum impl { RAW, CUCTX, SEED, IMPLS };
static const char *const impl_name[IMPLS] = {"raw", "cuctx", "seed"};

struct worker {
    cuctx_ctx ctx;
    struct seed_ctx seed;
    enum impl impl;
    atomic_int *go, *stop;
    unsigned long pairs;
    long bad;
};

struct churner {
    enum impl impl;
    double pause;       /* seconds of sleep after each context create+destroy */
    atomic_int stop;
    atomic_int started;
    unsigned long contexts;
    long bad;
};

/* A worker makes pairs until the main thread raises stop, looking at it
 * before each pair: a pair can wait long (the seed design's workers wait for
 * its churn thread's mutex, held across a whole context create), and a
 * worker that looked at the clock only now and then would run on for
 * seconds past the end. */
static void *work(void *p)
{
    struct worker *w = p;
    CUcontext raw_ctx = cuctx_ctx_raw(w->ctx);
    w->bad += bench_raw.set_current(raw_ctx) != CUDA_SUCCESS;
    while (!atomic_load(w->go))
        ;
    unsigned long n = 0;
    long bad = 0;
#define UNTIL_STOP for (; !atomic_load_explicit(w->stop, memory_order_relaxed); n++)
    switch (w->impl) {
    case RAW:
        UNTIL_STOP {
            CUevent ev;
            bad += bench_raw.event_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
            bad += bench_raw.event_destroy(ev) != CUDA_SUCCESS;
        }
        break;
    case CUCTX:
        UNTIL_STOP {
            cuctx_event ev = {0};
            bad += cuctx_event_create(&ev, w->ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
            bad += cuctx_event_destroy(&ev) != CUDA_SUCCESS;
        }
        break;
    default:
        UNTIL_STOP {
            struct seed_event ev;
            bad += seed_event_create(&ev, raw_ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
            bad += seed_event_destroy(&ev) != CUDA_SUCCESS;
        }
        break;
    }
#undef UNTIL_STOP
    w->pairs = n;
    w->bad += bad;
    bench_raw.set_current(NULL);
    return NULL;
}

/* The churn thread's pause: sleeps in steps of at most 1 ms, so that a stop
 * is seen within about a millisecond. */
static void churn_pause(struct churner *c)
{
    double end = bench_now() + c->pause, left;
    while (!atomic_load(&c->stop) && (left = end - bench_now()) > 0) {
        struct timespec ts = {0, left < 1e-3 ? (long)(left * 1e9) : 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void *churn(void *p)
{
    struct churner *c = p;
    atomic_store(&c->started, 1);
    while (!atomic_load(&c->stop)) {
        switch (c->impl) {
        case RAW: {
            CUcontext raw = NULL;
            CUresult rc = bench_raw.ctx_create(&raw, 0, 0);
            c->bad += rc != CUDA_SUCCESS;
            if (rc == CUDA_SUCCESS)
                c->bad += bench_raw.ctx_destroy(raw) != CUDA_SUCCESS;
            break;
        }
        case CUCTX: {
            cuctx_ctx h = {0};
            c->bad += cuctx_ctx_create(&h, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS;
            c->bad += cuctx_ctx_destroy(&h) != CUDA_SUCCESS;
            break;
        }
        default: {
            struct seed_ctx s = {0};
            CUresult rc = seed_ctx_create(&s, 0, 0);
            c->bad += rc != CUDA_SUCCESS;
            if (rc == CUDA_SUCCESS)
                c->bad += seed_ctx_destroy(&s) != CUDA_SUCCESS;
            break;
        }
        }
        c->contexts++;
        if (c->pause > 0)
            churn_pause(c);
    }
    return NULL;
}

struct result {
    double mpairs;      /* millions of pairs per second, all workers together, over the workers' time */
    double churn_rate;  /* contexts the churn thread made and destroyed per second of its life */
    double churn_wait;  /* seconds from the last worker's end until the churn thread had ended */
};

static struct result run(const cuctx_ctx *ctxs, const struct seed_ctx *seeds, int threads, int with_churn,
                         enum impl impl, double seconds, double churn_pause_s)
{
    pthread_t t[BENCH_MAX_THREADS], ct;
    struct worker w[BENCH_MAX_THREADS];
    struct churner c = {.impl = impl, .pause = churn_pause_s};
    atomic_int go = 0, stop = 0;
    double churn_start = bench_now();
    if (with_churn) {
        if (pthread_create(&ct, NULL, churn, &c) != 0)
            bench_die(prog, "pthread_create");
        while (!atomic_load(&c.started))
            ;
    }
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ctxs[i], seeds[i], impl, &go, &stop, 0, 0};
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            bench_die(prog, "pthread_create");
    }
    double start = bench_now();
    atomic_store(&go, 1);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
    atomic_store(&stop, 1);
    unsigned long total = 0;
    long bad = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += w[i].pairs;
        bad += w[i].bad;
    }
    /* the workers' time ends here, before the churn thread is stopped */
    double workers_end = bench_now(), elapsed = workers_end - start;
    struct result res = {(double)total / elapsed / 1e6, 0, 0};
    static int verbose = -1;
    if (verbose < 0)
        verbose = getenv("BENCH_VERBOSE") && strcmp(getenv("BENCH_VERBOSE"), "0") != 0;
    if (verbose)
        fprintf(stderr, "%s: %s, %d threads%s: workers ran %.3f s, %lu pairs; churn contexts so far %ld\n", prog,
                impl_name[impl], threads, with_churn ? ", churn" : "", elapsed, total,
                with_churn ? (long)c.contexts : 0L);
    if (with_churn) {
        atomic_store(&c.stop, 1);
        pthread_join(ct, NULL);
        double churn_end = bench_now();
        if (verbose)
            fprintf(stderr, "%s:   churn thread ended %.3f s after the workers, %ld contexts in all\n", prog,
                    churn_end - workers_end, (long)c.contexts);
        res.churn_wait = churn_end - workers_end;
        /* over the churn thread's whole life: it starts before the workers and ends after them */
        res.churn_rate = (double)c.contexts / (churn_end - churn_start);
        bad += c.bad;
    }
    if (bad) {
        fprintf(stderr, "%s: %ld creates or destroys failed (%s, %d threads%s)\n", prog, bad, impl_name[impl],
                threads, with_churn ? ", churn" : "");
        bench_die(prog, impl_name[impl]);
    }
    return res;
}

enum { OWN = 1, SHARED = 2 };           /* context modes, as bits */
enum { NO_CHURN = 1, WITH_CHURN = 2 };  /* churn modes, as bits */
#define MAX_COUNTS 32

static int counts[MAX_COUNTS], ncounts; /* the thread counts chosen; none: the default sweep */
static int ctx_modes = OWN | SHARED;
static int churn_modes = NO_CHURN | WITH_CHURN;

/* A comma-separated list of thread counts, each 1 to BENCH_MAX_THREADS. */
static void parse_counts(const char *what, const char *s)
{
    ncounts = 0;
    for (const char *p = s;;) {
        char *end;
        long n = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || n < 1 || n > BENCH_MAX_THREADS || ncounts == MAX_COUNTS) {
            fprintf(stderr, "%s: %s must be up to %d thread counts from 1 to %d separated by commas (8,16), not '%s'\n",
                    prog, what, MAX_COUNTS, BENCH_MAX_THREADS, s);
            exit(2);
        }
        counts[ncounts++] = (int)n;
        if (!*end)
            break;
        p = end + 1;
    }
}

static void parse_contexts(const char *what, const char *s)
{
    if (strcmp(s, "own") == 0)
        ctx_modes = OWN;
    else if (strcmp(s, "shared") == 0)
        ctx_modes = SHARED;
    else if (strcmp(s, "both") == 0)
        ctx_modes = OWN | SHARED;
    else {
        fprintf(stderr, "%s: %s must be own, shared or both, not '%s'\n", prog, what, s);
        exit(2);
    }
}

static int own_option(char opt, const char *val)
{
    switch (opt) {
    case 'T': parse_counts("-T", val); return 1;
    case 'C': parse_contexts("-C", val); return 1;
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    struct bench_cfg cfg;
    const char *s;
    /* BENCH_CHURN=0: the rows without churn only; =only: the churn rows
     * only. On the H200 a context create can wait for seconds while other
     * threads make and destroy events (the driver's lock), so the churn rows
     * take long: choose few of them with -T and -C, and see the wait column. */
    if ((s = getenv("BENCH_CHURN")) && *s) {
        if (strcmp(s, "0") == 0)
            churn_modes = NO_CHURN;
        else if (strcmp(s, "only") == 0)
            churn_modes = WITH_CHURN;
        else if (strcmp(s, "1") != 0) {
            fprintf(stderr, "%s: BENCH_CHURN must be 0, 1 or only, not '%s'\n", prog, s);
            return 2;
        }
    }
    double pause_ms = 0;
    if ((s = getenv("BENCH_CHURN_PAUSE_MS")) && *s)
        pause_ms = bench_number(prog, "BENCH_CHURN_PAUSE_MS", s, 0, 60000);
    if ((s = getenv("BENCH_THREAD_COUNTS")) && *s)
        parse_counts("BENCH_THREAD_COUNTS", s);
    if ((s = getenv("BENCH_CONTEXTS")) && *s)
        parse_contexts("BENCH_CONTEXTS", s);
    bench_config_own(&cfg, "threads", argc, argv, own_option, "[-T COUNTS] [-C own|shared|both]");
    if (ncounts == 0) {
        for (int n = 1; n <= cfg.max_threads; n *= 2)
            counts[ncounts++] = n;
        if (counts[ncounts - 1] != cfg.max_threads)
            counts[ncounts++] = cfg.max_threads;
    }
    int max = 1;
    for (int k = 0; k < ncounts; k++)
        max = counts[k] > max ? counts[k] : max;
    cfg.max_threads = max;  /* the data file's header names the largest count run */

    char rows[512];
    int len = snprintf(rows, sizeof rows, "threads");
    for (int k = 0; k < ncounts; k++)
        len += snprintf(rows + len, sizeof rows - (size_t)len, "%s%d", k ? "," : " ", counts[k]);
    snprintf(rows + len, sizeof rows - (size_t)len, "; contexts %s; churn %s; churn pause %g ms",
             ctx_modes == OWN ? "own" : ctx_modes == SHARED ? "shared" : "own, shared",
             churn_modes == NO_CHURN ? "no" : churn_modes == WITH_CHURN ? "yes" : "no, yes", pause_ms);

    bench_start(prog);
    seed_adopt_driver();
    /* one context per thread for the own rows; the shared rows use the first */
    int made = ctx_modes & OWN ? max : 1;
    cuctx_ctx own[BENCH_MAX_THREADS] = {{0}}, shared[BENCH_MAX_THREADS];
    struct seed_ctx own_seed[BENCH_MAX_THREADS], shared_seed[BENCH_MAX_THREADS];
    for (int i = 0; i < made; i++) {
        if (cuctx_ctx_create(&own[i], 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS)
            bench_die(prog, "context create");
        seed_ctx_adopt(&own_seed[i], cuctx_ctx_raw(own[i]));
    }
    for (int i = 0; i < max; i++) {
        shared[i] = own[0];
        shared_seed[i] = own_seed[0];
    }
    /* warm-up: the first runs after creating contexts are slower for all */
    for (int k = 0; k < IMPLS; k++) {
        if (ctx_modes & OWN)
            run(own, own_seed, max, 0, (enum impl)k, cfg.seconds / 2, 0);
        else
            run(shared, shared_seed, max, 0, (enum impl)k, cfg.seconds / 2, 0);
    }

    char header[2048];
    snprintf(header, sizeof header,
        "# event create+destroy pairs, millions per second, all threads together, best run of each;\n"
        "# c/raw, c/seed = cuctx / raw, cuctx / seed: of the bests (best) and median over rounds (median);\n"
        "# churn_per_s = contexts made and destroyed per second by the churn thread in cuctx's runs, over its life;\n"
        "# churn_wait_s = mean over the row's runs of the seconds from the workers' end until the churn thread ended\n"
        "# rows: %s\n"
        "# threads context churn raw cuctx seed c/raw_best c/raw_median c/seed_best c/seed_median churn_per_s churn_wait_s\n",
        rows);
    FILE *data = bench_data_open(&cfg, prog, header);
    printf("thread sweep: event create+destroy pairs, millions per second, best of %d runs of %g s;\n"
           "cuctx / raw and cuctx / seed: best = of the bests, median = median over the rounds (higher: cuctx faster);\n"
           "ctx/s: the churn thread's contexts per second (cuctx's runs); wait s: mean wait for it after the workers\n"
           "rows: %s\n",
           cfg.rounds, cfg.seconds, rows);
    printf("%-7s %-7s %-5s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "threads", "context", "churn", "raw", "cuctx",
           "seed", "c/raw", "median", "c/seed", "median", "ctx/s", "wait s");
    double pause_s = pause_ms / 1000;
    for (int k = 0; k < ncounts; k++) {
        int threads = counts[k];
        for (int mode = 0; mode < 2; mode++) {
            if (!(ctx_modes & (mode == 0 ? OWN : SHARED)))
                continue;
            for (int with_churn = 0; with_churn < 2; with_churn++) {
                if (!(churn_modes & (with_churn ? WITH_CHURN : NO_CHURN)))
                    continue;
                const cuctx_ctx *ctxs = mode == 0 ? own : shared;
                const struct seed_ctx *seeds = mode == 0 ? own_seed : shared_seed;
                double m[IMPLS][BENCH_MAX_ROUNDS], vs_raw[BENCH_MAX_ROUNDS], vs_seed[BENCH_MAX_ROUNDS];
                double churned = 0, waited = 0;
                for (int r = 0; r < cfg.rounds; r++) {
                    for (int j = 0; j < IMPLS; j++) {
                        enum impl impl = (enum impl)((r + j) % IMPLS);  /* rotate which goes first */
                        struct result res = run(ctxs, seeds, threads, with_churn, impl, cfg.seconds, pause_s);
                        m[impl][r] = res.mpairs;
                        if (impl == CUCTX)
                            churned += res.churn_rate / cfg.rounds;
                        waited += res.churn_wait / (cfg.rounds * IMPLS);
                    }
                    vs_raw[r] = m[CUCTX][r] / m[RAW][r];
                    vs_seed[r] = m[CUCTX][r] / m[SEED][r];
                }
                double raw = bench_max(m[RAW], cfg.rounds), mine = bench_max(m[CUCTX], cfg.rounds);
                double seed = bench_max(m[SEED], cfg.rounds);
                double mr = bench_median(vs_raw, cfg.rounds), ms = bench_median(vs_seed, cfg.rounds);
                const char *ctxname = mode == 0 ? "own" : "shared", *churnname = with_churn ? "yes" : "no";
                printf("%-7d %-7s %-5s %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f %8.2f %8.1f %8.3f\n", threads, ctxname,
                       churnname, raw, mine, seed, mine / raw, mr, mine / seed, ms, churned, waited);
                fprintf(data, "%d %s %s %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.2f %.4f\n", threads, ctxname, churnname,
                        raw, mine, seed, mine / raw, mr, mine / seed, ms, churned, waited);
                fflush(stdout);
                fflush(data);
            }
        }
    }
    bench_data_close(data, &cfg);
    for (int i = 0; i < made; i++)
        if (cuctx_ctx_destroy(&own[i]) != CUDA_SUCCESS)
            bench_die(prog, "context destroy");
    return 0;
}
