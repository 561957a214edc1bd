/* SPDX-License-Identifier: MIT */
/* seed_registry.c - see seed_registry.h. */
#include "seed_registry.h"

#include "benchlib.h"

#include <pthread.h>
#include <stdlib.h>

struct slot {
    CUcontext key;     /* NULL: empty */
    uint64_t gen;      /* the current generation of the context at this address */
    int live;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *map;
static size_t cap, used;     /* cap: a power of two; used: keys ever entered (none are removed) */
static uint64_t next_gen = 1;

static PFN_cuCtxCreate_v3020 drv_ctx_create;
static PFN_cuCtxDestroy_v4000 drv_ctx_destroy;
static PFN_cuEventCreate_v2000 drv_event_create;
static PFN_cuEventDestroy_v4000 drv_event_destroy;

void seed_adopt_driver(void)
{
    drv_ctx_create = bench_raw.ctx_create;
    drv_ctx_destroy = bench_raw.ctx_destroy;
    drv_event_create = bench_raw.event_create;
    drv_event_destroy = bench_raw.event_destroy;
}

static size_t hash(CUcontext key)
{
    uint64_t x = (uint64_t)(uintptr_t)key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot for key: its own, or the empty one where it would go. Lock held. */
static struct slot *probe(struct slot *m, size_t n, CUcontext key)
{
    for (size_t i = hash(key) & (n - 1);; i = (i + 1) & (n - 1))
        if (m[i].key == key || m[i].key == NULL)
            return &m[i];
}

/* The slot of key, entered if new. Lock held. */
static struct slot *enter(CUcontext key)
{
    if (2 * (used + 1) > cap) {
        size_t n = cap ? 2 * cap : 64;
        struct slot *m = calloc(n, sizeof *m);
        if (!m)
            abort();
        for (size_t i = 0; i < cap; i++)
            if (map[i].key)
                *probe(m, n, map[i].key) = map[i];
        free(map);
        map = m;
        cap = n;
    }
    struct slot *s = probe(map, cap, key);
    if (!s->key) {
        s->key = key;
        used++;
    }
    return s;
}

/* The slot of key, or NULL. Lock held. */
static struct slot *find(CUcontext key)
{
    if (!cap)
        return NULL;
    struct slot *s = probe(map, cap, key);
    return s->key ? s : NULL;
}

static void begin(struct seed_ctx *out, CUcontext raw)
{
    struct slot *s = enter(raw);
    s->gen = next_gen++;
    s->live = 1;
    out->raw = raw;
    out->gen = s->gen;
}

void seed_ctx_adopt(struct seed_ctx *out, CUcontext raw)
{
    pthread_mutex_lock(&lock);
    struct slot *s = find(raw);
    if (s && s->live) {
        out->raw = raw;
        out->gen = s->gen;
    } else {
        begin(out, raw);
    }
    pthread_mutex_unlock(&lock);
}

CUresult seed_ctx_create(struct seed_ctx *out, unsigned flags, CUdevice dev)
{
    CUcontext raw = NULL;
    pthread_mutex_lock(&lock);
    CUresult rc = drv_ctx_create(&raw, flags, dev);
    if (rc == CUDA_SUCCESS)
        begin(out, raw);
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult seed_ctx_destroy(struct seed_ctx *ctx)
{
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct slot *s = find(ctx->raw);
    if (s && s->live && s->gen == ctx->gen) {
        rc = drv_ctx_destroy(ctx->raw);
        s->live = 0;
        s->gen = next_gen++;
    }
    pthread_mutex_unlock(&lock);
    ctx->raw = NULL;
    return rc;
}

CUresult seed_event_create(struct seed_event *out, CUcontext ctx, unsigned flags)
{
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct slot *s = find(ctx);
    if (s && s->live) {
        rc = drv_event_create(&out->raw, flags);
        out->ctx = ctx;
        out->gen = s->gen;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult seed_event_destroy(struct seed_event *ev)
{
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct slot *s = find(ev->ctx);
    if (s && s->live && s->gen == ev->gen)
        rc = drv_event_destroy(ev->raw);
    pthread_mutex_unlock(&lock);
    ev->raw = NULL;
    return rc;
}
