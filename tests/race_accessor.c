/* SPDX-License-Identifier: MIT */
/* race_accessor.c - issue 18: the accessors read a slot without a pin (a
 * seqlock reader, cuctx__child_value in lib/tether.h) while other threads
 * destroy its object and reuse the slot for a new one of the same kind. A
 * stale handle must then give NULL, never the new object's value; a live
 * one its own value, or NULL once destroyed. For a ThreadSanitizer build
 * (configure --enable-tsan), which also checks that those reads race with
 * no plain write; `make race-check` runs it with race_scope_prev.
 *
 * One thread makes events and destroys each some events later, so that the
 * slots it frees are taken again at once, and writes each event's handle and
 * driver value once into a table; readers call cuctx_event_raw and
 * cuctx_ctx_raw on random entries of it, live or long stale. The simulator's
 * address recycling is turned off, so every event has its own value.
 * Usage: race_accessor [events]; CUCTX_DRIVER names the driver. Exit 0 when
 * no read gave another object's value. */
#include <cuctx.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define READERS 2
#define LAG 8       /* events alive at once */

struct made { _Atomic uint64_t id; _Atomic(CUevent) raw; };
static struct made *table;
static _Atomic long published;
static long events = 20000;
static _Atomic int done;
static _Atomic long wrong, live_reads, stale_reads;
static cuctx_ctx ctx;
static CUcontext ctx_raw;

static void *maker(void *arg)
{
    (void)arg;
    cuctx_event ring[LAG] = {{0}};
    for (long i = 0; i < events; i++) {
        cuctx_event *e = &ring[i % LAG];
        if (cuctx_event_destroy(e) != CUDA_SUCCESS || cuctx_event_create(e, ctx, 0) != CUDA_SUCCESS) {
            fprintf(stderr, "race_accessor: %s\n", cuctx_last_error_message());
            wrong++;
            break;
        }
        atomic_store_explicit(&table[i].raw, cuctx_event_raw(*e), memory_order_relaxed);
        atomic_store_explicit(&table[i].id, e->id, memory_order_relaxed);
        atomic_store_explicit(&published, i + 1, memory_order_release);
    }
    for (int k = 0; k < LAG; k++)
        cuctx_event_destroy(&ring[k]);
    atomic_store(&done, 1);
    return NULL;
}

static void *reader(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    while (!atomic_load(&done)) {
        long n = atomic_load_explicit(&published, memory_order_acquire);
        if (n == 0)
            continue;
        /* mostly the newest entries, whose slots are being reused now */
        long i = rand_r(&seed) % 4 ? n - 1 - rand_r(&seed) % (2 * LAG < n ? 2 * LAG : n) : rand_r(&seed) % n;
        cuctx_event e = {atomic_load_explicit(&table[i].id, memory_order_relaxed)};
        CUevent want = atomic_load_explicit(&table[i].raw, memory_order_relaxed);
        CUevent got = cuctx_event_raw(e);
        if (got && got != want) {
            fprintf(stderr, "race_accessor: handle %#llx gave %p, its event was %p\n", (unsigned long long)e.id,
                    (void *)got, (void *)want);
            wrong++;
        }
        if (got)
            live_reads++;
        else
            stale_reads++;
        if (cuctx_ctx_raw(ctx) != ctx_raw)
            wrong++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t m, r[READERS];
    if (argc > 1)
        events = atol(argv[1]);
    const char *drv = getenv("CUCTX_DRIVER");
    void *sim = drv && *drv ? dlopen(drv, RTLD_NOW | RTLD_LOCAL) : NULL;
    void (*recycling)(int) = sim ? (void (*)(int))dlsym(sim, "cusim_set_recycling") : NULL;
    if (recycling)
        recycling(0);
    table = calloc((size_t)events, sizeof *table);
    if (!table || cuctx_ctx_create(&ctx, 0, 0) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS) {
        fprintf(stderr, "race_accessor: no context: %s\n", cuctx_last_error_message());
        return 77;
    }
    ctx_raw = cuctx_ctx_raw(ctx);
    pthread_create(&m, NULL, maker, NULL);
    for (int k = 0; k < READERS; k++)
        pthread_create(&r[k], NULL, reader, (void *)(uintptr_t)(k + 1));
    pthread_join(m, NULL);
    for (int k = 0; k < READERS; k++)
        pthread_join(r[k], NULL);
    cuctx_ctx_destroy(&ctx);
    free(table);
    printf("race_accessor: %ld events, %ld reads of live handles, %ld of stale ones, %ld wrong\n", events,
           (long)live_reads, (long)stale_reads, (long)wrong);
    return wrong ? 1 : 0;
}
