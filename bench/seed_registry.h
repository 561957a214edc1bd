/* SPDX-License-Identifier: MIT */
/* seed_registry.h - the project's first ("seed") registry design, made
 * again in a few lines so that the benchmarks can run it beside cuctx.
 *
 * One process-wide pthread mutex guards a hash map from a context's address
 * to its generation counter. A child records the address and generation of
 * its context. Every create takes the mutex, calls the driver, records, and
 * lets go; every destroy takes the mutex, compares generations and calls the
 * driver's destroy while still holding it. Contexts are made and destroyed
 * the same way (cuCtxCreate and cuCtxDestroy under the mutex), which is what
 * makes a thread that churns contexts stall every other thread.
 *
 * It is the benchmark's baseline, not a library: the caller passes the
 * context that is current (the design is charged no cuCtxGetCurrent), and
 * contexts made elsewhere are entered into the map with seed_ctx_adopt. */
#ifndef SEED_REGISTRY_H
#define SEED_REGISTRY_H

#include <cuda.h>
#include <stdint.h>

struct seed_ctx {
    CUcontext raw;
    uint64_t gen;
};

struct seed_event {
    CUevent raw;
    CUcontext ctx;
    uint64_t gen;
};

/* Takes the driver entry points from benchlib's bench_raw (bench_start first). */
void seed_adopt_driver(void);
/* Enters a live context made elsewhere (a new generation if it is unknown or dead). */
void seed_ctx_adopt(struct seed_ctx *out, CUcontext raw);
CUresult seed_ctx_create(struct seed_ctx *out, unsigned flags, CUdevice dev);
CUresult seed_ctx_destroy(struct seed_ctx *ctx);
/* ctx must be the calling thread's current context. */
CUresult seed_event_create(struct seed_event *out, CUcontext ctx, unsigned flags);
/* Skips the driver (and succeeds) when the event's context has ended. */
CUresult seed_event_destroy(struct seed_event *ev);

#endif
