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
 * Usage: bench_threads [-s SECONDS] [-r ROUNDS] [-t MAX-THREADS] [-o FILE] */
#include "benchlib.h"
#include "seed_registry.h"

#include <cuctx.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "bench_threads";

enum impl { RAW, CUCTX, SEED, IMPLS };
static const char *const impl_name[IMPLS] = {"raw", "cuctx", "seed"};

struct worker {
    cuctx_ctx ctx;
    struct seed_ctx seed;
    enum impl impl;
    double seconds;
    atomic_int *go;
    unsigned long pairs;
    long bad;
};

struct churner {
    enum impl impl;
    atomic_int stop;
    atomic_int started;
    unsigned long contexts;
    long bad;
};

#define BLOCK 64

static void *work(void *p)
{
    struct worker *w = p;
    CUcontext raw_ctx = cuctx_ctx_raw(w->ctx);
    w->bad += bench_raw.set_current(raw_ctx) != CUDA_SUCCESS;
    while (!atomic_load(w->go))
        ;
    double end = bench_now() + w->seconds;
    unsigned long n = 0;
    long bad = 0;
    do {
        switch (w->impl) {
        case RAW:
            for (int i = 0; i < BLOCK; i++) {
                CUevent ev;
                bad += bench_raw.event_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
                bad += bench_raw.event_destroy(ev) != CUDA_SUCCESS;
            }
            break;
        case CUCTX:
            for (int i = 0; i < BLOCK; i++) {
                cuctx_event ev = {0};
                bad += cuctx_event_create(&ev, w->ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
                bad += cuctx_event_destroy(&ev) != CUDA_SUCCESS;
            }
            break;
        default:
            for (int i = 0; i < BLOCK; i++) {
                struct seed_event ev;
                bad += seed_event_create(&ev, raw_ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
                bad += seed_event_destroy(&ev) != CUDA_SUCCESS;
            }
            break;
        }
        n += BLOCK;
    } while (bench_now() < end);
    w->pairs = n;
    w->bad += bad;
    bench_raw.set_current(NULL);
    return NULL;
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
    }
    return NULL;
}

struct result {
    double mpairs;      /* millions of pairs per second, all workers together */
    double churn_rate;  /* contexts made and destroyed per second by the churn thread */
};

static struct result run(const cuctx_ctx *ctxs, const struct seed_ctx *seeds, int threads, int with_churn,
                         enum impl impl, double seconds)
{
    pthread_t t[BENCH_MAX_THREADS], ct;
    struct worker w[BENCH_MAX_THREADS];
    struct churner c = {.impl = impl};
    atomic_int go = 0;
    if (with_churn) {
        if (pthread_create(&ct, NULL, churn, &c) != 0)
            bench_die(prog, "pthread_create");
        while (!atomic_load(&c.started))
            ;
    }
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){ctxs[i], seeds[i], impl, seconds, &go, 0, 0};
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            bench_die(prog, "pthread_create");
    }
    double start = bench_now();
    atomic_store(&go, 1);
    unsigned long total = 0;
    long bad = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += w[i].pairs;
        bad += w[i].bad;
    }
    double elapsed = bench_now() - start;
    struct result res = {(double)total / elapsed / 1e6, 0};
    if (with_churn) {
        atomic_store(&c.stop, 1);
        pthread_join(ct, NULL);
        /* counted over the whole life of the churn thread, a little longer than the run */
        res.churn_rate = (double)c.contexts / elapsed;
        bad += c.bad;
    }
    if (bad) {
        fprintf(stderr, "%s: %ld creates or destroys failed (%s, %d threads%s)\n", prog, bad, impl_name[impl],
                threads, with_churn ? ", churn" : "");
        bench_die(prog, impl_name[impl]);
    }
    return res;
}

int main(int argc, char **argv)
{
    struct bench_cfg cfg;
    bench_config(&cfg, "threads", argc, argv);
    /* BENCH_CHURN=0: the rows without churn only. On the H200 a context
     * create can wait for seconds while other threads make and destroy
     * events (the driver's lock), so the churn rows may take many minutes. */
    const char *churn_env = getenv("BENCH_CHURN");
    int churn_modes = churn_env && strcmp(churn_env, "0") == 0 ? 1 : 2;
    bench_start(prog);
    seed_adopt_driver();
    int max = cfg.max_threads;
    cuctx_ctx own[BENCH_MAX_THREADS] = {{0}}, shared[BENCH_MAX_THREADS];
    struct seed_ctx own_seed[BENCH_MAX_THREADS], shared_seed[BENCH_MAX_THREADS];
    for (int i = 0; i < max; i++) {
        if (cuctx_ctx_create(&own[i], 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS)
            bench_die(prog, "context create");
        seed_ctx_adopt(&own_seed[i], cuctx_ctx_raw(own[i]));
    }
    for (int i = 0; i < max; i++) {
        shared[i] = own[0];
        shared_seed[i] = own_seed[0];
    }
    /* warm-up: the first runs after creating contexts are slower for all */
    for (int k = 0; k < IMPLS; k++)
        run(own, own_seed, max, 0, (enum impl)k, cfg.seconds / 2);

    FILE *data = bench_data_open(&cfg, prog,
        "# event create+destroy pairs, millions per second, all threads together, best run of each;\n"
        "# c/raw, c/seed = cuctx / raw, cuctx / seed: of the bests (best) and median over rounds (median);\n"
        "# churn_per_s = contexts made and destroyed per second by the churn thread in cuctx's runs\n"
        "# threads context churn raw cuctx seed c/raw_best c/raw_median c/seed_best c/seed_median churn_per_s\n");
    printf("thread sweep: event create+destroy pairs, millions per second, best of %d runs of %g s;\n"
           "cuctx / raw and cuctx / seed: best = of the bests, median = median over the rounds (higher: cuctx faster)\n",
           cfg.rounds, cfg.seconds);
    printf("%-7s %-7s %-5s %8s %8s %8s %8s %8s %8s %8s %8s\n", "threads", "context", "churn", "raw", "cuctx",
           "seed", "c/raw", "median", "c/seed", "median", "ctx/s");
    int counts[16], ncounts = 0;
    for (int n = 1; n <= max; n *= 2)
        counts[ncounts++] = n;
    if (counts[ncounts - 1] != max)
        counts[ncounts++] = max;
    for (int k = 0; k < ncounts; k++) {
        int threads = counts[k];
        for (int mode = 0; mode < 2; mode++) {
            for (int with_churn = 0; with_churn < churn_modes; with_churn++) {
                const cuctx_ctx *ctxs = mode == 0 ? own : shared;
                const struct seed_ctx *seeds = mode == 0 ? own_seed : shared_seed;
                double m[IMPLS][BENCH_MAX_ROUNDS], vs_raw[BENCH_MAX_ROUNDS], vs_seed[BENCH_MAX_ROUNDS];
                double churned = 0;
                for (int r = 0; r < cfg.rounds; r++) {
                    for (int j = 0; j < IMPLS; j++) {
                        enum impl impl = (enum impl)((r + j) % IMPLS);  /* rotate which goes first */
                        struct result res = run(ctxs, seeds, threads, with_churn, impl, cfg.seconds);
                        m[impl][r] = res.mpairs;
                        if (impl == CUCTX)
                            churned += res.churn_rate / cfg.rounds;
                    }
                    vs_raw[r] = m[CUCTX][r] / m[RAW][r];
                    vs_seed[r] = m[CUCTX][r] / m[SEED][r];
                }
                double raw = bench_max(m[RAW], cfg.rounds), mine = bench_max(m[CUCTX], cfg.rounds);
                double seed = bench_max(m[SEED], cfg.rounds);
                double mr = bench_median(vs_raw, cfg.rounds), ms = bench_median(vs_seed, cfg.rounds);
                const char *ctxname = mode == 0 ? "own" : "shared", *churnname = with_churn ? "yes" : "no";
                printf("%-7d %-7s %-5s %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f %8.2f %8.1f\n", threads, ctxname,
                       churnname, raw, mine, seed, mine / raw, mr, mine / seed, ms, churned);
                fprintf(data, "%d %s %s %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.2f\n", threads, ctxname, churnname,
                        raw, mine, seed, mine / raw, mr, mine / seed, ms, churned);
                fflush(stdout);
                fflush(data);
            }
        }
    }
    bench_data_close(data, &cfg);
    for (int i = 0; i < max; i++)
        if (cuctx_ctx_destroy(&own[i]) != CUDA_SUCCESS)
            bench_die(prog, "context destroy");
    return 0;
}
