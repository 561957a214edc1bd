/* SPDX-License-Identifier: MIT */
/* test_registry.c - the slot table, generations, pins and the close/drain
 * protocol that the tether is built on, tested directly (no driver), and
 * the address map beside them (with the simulated driver). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuctx.h"
#include "ctxmap.h"
#include "entry.h"
#include "testlib.h"
#include "registry.h"

static uint64_t make(enum cuctx_kind kind, uint64_t payload)
{
    struct cuctx_slot *s = cuctx__slot_alloc();
    cr_assert_not_null(s);
    s->u.child.raw = payload;
    return cuctx__slot_publish(s, kind);
}

static void destroy(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__close(id, kind);
    cr_assert_not_null(s, "close of %#llx", (unsigned long long)id);
    cuctx__drain(s);
    cuctx__slot_free(s);
}

Test(registry, published_id_carries_kind_and_pins)
{
    uint64_t id = make(KIND_EVENT, 42);
    cr_assert_neq(id, 0);
    cr_assert_eq(cuctx__id_kind(id), KIND_EVENT);
    struct cuctx_slot *s = cuctx__pin(id, KIND_EVENT);
    cr_assert_not_null(s);
    cr_assert_eq(s->u.child.raw, 42);
    cuctx__unpin(s);
    cr_assert(cuctx__alive(id, KIND_EVENT));
}

Test(registry, wrong_kind_does_not_pin_or_close)
{
    uint64_t id = make(KIND_EVENT, 1);
    uint64_t as_stream = cuctx__id_make(KIND_STREAM, cuctx__id_index(id), cuctx__id_gen(id));
    cr_assert_null(cuctx__pin(as_stream, KIND_STREAM));
    cr_assert_null(cuctx__pin(id, KIND_STREAM));
    cr_assert_null(cuctx__close(id, KIND_MEM));
    cr_assert(cuctx__alive(id, KIND_EVENT), "still alive after refused calls");
}

Test(registry, freed_id_is_stale_and_slot_reused_with_new_generation)
{
    uint64_t a = make(KIND_STREAM, 1);
    destroy(a, KIND_STREAM);
    cr_assert_null(cuctx__pin(a, KIND_STREAM));
    cr_assert_null(cuctx__close(a, KIND_STREAM), "double destroy refused");
    cr_assert_not(cuctx__alive(a, KIND_STREAM));
    uint64_t b = make(KIND_STREAM, 2);
    cr_assert_eq(cuctx__id_index(a), cuctx__id_index(b), "the freed slot is reused first");
    cr_assert_neq(a, b, "with another generation");
    cr_assert_null(cuctx__pin(a, KIND_STREAM), "the old id does not reach the new object");
    struct cuctx_slot *s = cuctx__pin(b, KIND_STREAM);
    cr_assert_not_null(s);
    cr_assert_eq(s->u.child.raw, 2);
    cuctx__unpin(s);
}

/* A thread lists CUCTX_MY_PINS pins (for its exit and a cancel to let
 * go); one beyond is taken untracked, and the list's neighbour, the
 * thread's cache of free slots, is left alone: the next creates take the
 * slots freed before, never the slot of a live object pinned meanwhile.
 * Mutant killed: lib/registry.c:177 `ror` (`npins < CUCTX_MY_PINS` made
 * `<=`: the pin beyond went into pins[CUCTX_MY_PINS], which is cache[0],
 * so the third create after it reused the live object's slot and handed
 * out its very id again; seed 47). */
Test(registry, a_pin_beyond_the_threads_list_leaves_its_free_slots_alone)
{
    uint64_t spare[3];
    for (int i = 0; i < 3; i++)
        spare[i] = make(KIND_EVENT, 100 + (uint64_t)i);
    uint64_t id = make(KIND_EVENT, 42);
    for (int i = 0; i < 3; i++)
        destroy(spare[i], KIND_EVENT);
    cr_assert_eq(cuctx__me.registry.ncache, 3, "the freed slots are the thread's own");
    struct cuctx_slot *s[CUCTX_MY_PINS + 1];
    for (int i = 0; i < CUCTX_MY_PINS + 1; i++)
        cr_assert_not_null(s[i] = cuctx__pin(id, KIND_EVENT), "pin %d", i);
    cr_assert_eq(cuctx__me.registry.npins, CUCTX_MY_PINS, "the pin beyond the list was listed");
    for (int i = CUCTX_MY_PINS + 1; i-- > 0;)
        cuctx__unpin(s[i]);
    cr_assert_eq(cuctx__me.registry.npins, 0);
    cr_assert_eq(atomic_load(&s[0]->word) & CUCTX_W_PINS, 0, "every pin let go");
    for (int i = 0; i < 3; i++) {
        uint64_t n = make(KIND_EVENT, 200 + (uint64_t)i);
        cr_assert_neq(cuctx__id_index(n), cuctx__id_index(id), "create %d took the slot of a live object", i);
        cr_assert_eq(cuctx__id_index(n), cuctx__id_index(spare[2 - i]), "create %d took no slot freed before", i);
    }
    struct cuctx_slot *p = cuctx__pin(id, KIND_EVENT);
    cr_assert_not_null(p, "the pinned object is live");
    cr_assert_eq(p->u.child.raw, 42, "its payload was overwritten");
    cuctx__unpin(p);
}

Test(registry, garbage_ids_are_rejected)
{
    make(KIND_EVENT, 1);
    cr_assert_null(cuctx__pin(cuctx__id_make(KIND_EVENT, CUCTX_ID_INDEX_LIMIT - 5, 1), KIND_EVENT), "index never handed out");
    cr_assert_null(cuctx__pin(cuctx__id_make(KIND_EVENT, 0, 0x123456), KIND_EVENT), "generation never used");
    cr_assert_null(cuctx__pin(0, KIND_EVENT));
    cr_assert_null(cuctx__pin(UINT64_MAX, KIND_EVENT));
}

Test(registry, close_wins_once_and_stops_new_pins)
{
    uint64_t id = make(KIND_ENTRY, 0);
    struct cuctx_slot *s = cuctx__close(id, KIND_ENTRY);
    cr_assert_not_null(s);
    cr_assert_null(cuctx__close(id, KIND_ENTRY), "only one closer");
    cr_assert_null(cuctx__pin(id, KIND_ENTRY), "no pins once closing");
    cr_assert_not(cuctx__alive(id, KIND_ENTRY), "closing is not alive");
    cr_assert(cuctx__closing(id, KIND_ENTRY));
    cuctx__drain(s);
    cuctx__slot_free(s);
    cr_assert_not(cuctx__closing(id, KIND_ENTRY), "freed is neither alive nor closing");
    uint64_t live = make(KIND_ENTRY, 0);
    cr_assert_not(cuctx__closing(live, KIND_ENTRY));
}

struct drain_arg {
    uint64_t id;
    _Atomic int closed, drained;
};

static void *closer(void *p)
{
    struct drain_arg *a = p;
    struct cuctx_slot *s = cuctx__close(a->id, KIND_ENTRY);
    atomic_store(&a->closed, 1);
    cuctx__drain(s);
    atomic_store(&a->drained, 1);
    cuctx__slot_free(s);
    return NULL;
}

/* Starts a close of a->id on another thread and checks that it has begun
 * but not finished: something the caller took on the entry holds it up. */
static void close_elsewhere_and_see_it_wait(struct drain_arg *a, pthread_t *t)
{
    pthread_create(t, NULL, closer, a);
    while (!atomic_load(&a->closed))
        sched_yield();
    usleep(20000);
    cr_assert_eq(atomic_load(&a->drained), 0, "the close must wait while the entry is taken");
}

/* The context side of the tether: a context destroy waits out a child
 * destroy already under way (a pin on the context's entry). */
Test(registry, context_close_waits_for_child_calls_under_way)
{
    struct drain_arg a = {.id = make(KIND_ENTRY, 0)};
    struct cuctx_slot *child_call = cuctx__pin(a.id, KIND_ENTRY);
    pthread_t t;
    cr_assert_not_null(child_call);
    close_elsewhere_and_see_it_wait(&a, &t);
    cr_assert_null(cuctx__pin(a.id, KIND_ENTRY), "a child call starting now is refused");
    cuctx__unpin(child_call);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&a.drained), 1);
    cr_assert_not(cuctx__alive(a.id, KIND_ENTRY));
}

/* The same with the holds (hazard slots) that child calls take on their context. */
Test(registry, context_close_waits_for_holds)
{
    struct drain_arg a = {.id = make(KIND_ENTRY, 0)};
    unsigned hazard;
    struct cuctx_slot *child_call = cuctx__hold_own(a.id, KIND_ENTRY, &hazard);
    pthread_t t;
    cr_assert_not_null(child_call);
    close_elsewhere_and_see_it_wait(&a, &t);
    unsigned late;
    cr_assert_null(cuctx__hold_own(a.id, KIND_ENTRY, &late), "a child call starting now is refused");
    cuctx__unhold(child_call, hazard);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&a.drained), 1);
    cr_assert_null(cuctx__hold_own(a.id, KIND_ENTRY, &late), "and after the free");
}

/* A thread has a few hazard slots; holds beyond them (many contexts at
 * once, or one held again and again) are pins, which keep a close waiting
 * all the same. cuctx__holding sees the thread's hazard holds. */
#define MANY_HOLDS 9
Test(registry, holds_beyond_the_hazard_slots_still_keep_a_close_waiting)
{
    struct drain_arg a = {.id = make(KIND_ENTRY, 0)};
    uint64_t other = make(KIND_ENTRY, 0);
    struct cuctx_slot *held[MANY_HOLDS];
    unsigned hazard[MANY_HOLDS];
    cr_assert_not(cuctx__holding(a.id));
    held[0] = cuctx__hold_own(other, KIND_ENTRY, &hazard[0]);
    cr_assert_not_null(held[0]);
    cr_assert(cuctx__holding(other));
    cr_assert_not(cuctx__holding(a.id), "only what this thread holds");
    for (int i = 1; i < MANY_HOLDS; i++) {
        held[i] = cuctx__hold_own(a.id, KIND_ENTRY, &hazard[i]);
        cr_assert_not_null(held[i], "hold %d", i);
    }
    cr_assert(cuctx__holding(a.id));
    /* let go of all but the last (a pin, the hazard slots being full) */
    for (int i = 1; i < MANY_HOLDS - 1; i++)
        cuctx__unhold(held[i], hazard[i]);
    cuctx__unhold(held[0], hazard[0]);
    cr_assert_not(cuctx__holding(other));
    pthread_t t;
    close_elsewhere_and_see_it_wait(&a, &t);
    cuctx__unhold(held[MANY_HOLDS - 1], hazard[MANY_HOLDS - 1]);
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&a.drained), 1);
    cr_assert_not(cuctx__holding(a.id));
    destroy(other, KIND_ENTRY);
}

/* The handle side: a context handle's destroy waits for pins on the handle
 * taken before its close - cuctx_stats' walk (the count of contexts handed
 * out) and the leak report read a context handle's fields pinned - and only
 * then frees its slot, so that a reader never sees the slot reused under
 * it, nor lets go of a pin on a slot freed meanwhile. */
struct handle_destroy_arg {
    cuctx_ctx c;
    CUresult rc;
    _Atomic int done;
};

static void *destroy_handle(void *p)
{
    struct handle_destroy_arg *a = p;
    a->rc = cuctx_ctx_destroy(&a->c);
    atomic_store(&a->done, 1);
    return NULL;
}

Test(registry, a_context_handles_destroy_waits_for_pins_on_the_handle)
{
    NEED_DRIVER();
    struct handle_destroy_arg a = {.rc = CUDA_ERROR_UNKNOWN};
    cr_assert_eq(cuctx_ctx_create(&a.c, 0, 0), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_pop_current(), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    uint64_t id = a.c.id;
    struct cuctx_slot *reader = cuctx__pin(id, KIND_CTX_HANDLE);     /* as the stats' walk does */
    cr_assert_not_null(reader);
    uint64_t entry = reader->u.ctx.entry;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_handle, &a), 0);
    while (!cuctx__closing(id, KIND_CTX_HANDLE) && !atomic_load(&a.done))
        sched_yield();
    usleep(20000);
    cr_assert_eq(atomic_load(&a.done), 0, "the destroy went on past a pin on the handle taken before its close");
    cr_assert(cuctx__closing(id, KIND_CTX_HANDLE), "the pinned handle's slot was freed");
    cr_assert_eq(reader->u.ctx.entry, entry);
    cuctx__unpin(reader);
    pthread_join(t, NULL);
    cr_assert_eq(a.rc, CUDA_SUCCESS);
    cr_assert_not(cuctx__alive(id, KIND_CTX_HANDLE));
    cr_assert_not(cuctx__closing(id, KIND_CTX_HANDLE));
}

struct holder_arg { uint64_t id; _Atomic int stop; _Atomic long inside; };

static void *holder(void *p)
{
    struct holder_arg *h = p;
    unsigned hazard;
    while (!atomic_load(&h->stop)) {
        struct cuctx_slot *s = cuctx__hold_own(h->id, KIND_ENTRY, &hazard);
        if (!s)
            break;
        atomic_fetch_add(&h->inside, 1);
        atomic_fetch_sub(&h->inside, 1);
        cuctx__unhold(s, hazard);
    }
    return NULL;
}

/* Many threads hold while one closes: once the drain returns, no hold is
 * inside and none can start. */
Test(registry, no_hold_overlaps_the_end_of_a_drain)
{
    for (int round = 0; round < 50; round++) {
        struct holder_arg h = {.id = make(KIND_ENTRY, 0)};
        pthread_t t[6];
        for (int i = 0; i < 6; i++)
            pthread_create(&t[i], NULL, holder, &h);
        usleep(200);
        struct cuctx_slot *s = cuctx__close(h.id, KIND_ENTRY);
        cr_assert_not_null(s);
        cuctx__drain(s);
        cr_assert_eq(atomic_load(&h.inside), 0, "round %d: a hold was inside after the drain", round);
        cuctx__slot_free(s);
        atomic_store(&h.stop, 1);
        for (int i = 0; i < 6; i++)
            pthread_join(t[i], NULL);
    }
}

Test(registry, holds_a_million_live_objects_without_moving_them)
{
    enum { N = 1 << 20 };
    uint64_t *ids = malloc(N * sizeof *ids);
    cr_assert_not_null(ids);
    uint64_t first = make(KIND_MEM, 0);
    struct cuctx_slot *first_slot = cuctx__pin(first, KIND_MEM);
    cuctx__unpin(first_slot);
    for (uint64_t i = 0; i < N; i++)
        ids[i] = make(KIND_MEM, i + 1);
    struct cuctx_slot *again = cuctx__pin(first, KIND_MEM);
    cr_assert_eq(again, first_slot, "growing the table did not move a live slot");
    cuctx__unpin(again);
    for (uint64_t i = 0; i < N; i += 4099) {
        struct cuctx_slot *s = cuctx__pin(ids[i], KIND_MEM);
        cr_assert_not_null(s);
        cr_assert_eq(s->u.child.raw, i + 1);
        cuctx__unpin(s);
    }
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    cr_assert_eq(st.mems, N + 1);
    for (uint64_t i = 0; i < N; i++)
        destroy(ids[i], KIND_MEM);
    cuctx_stats_get(&st);
    cr_assert_eq(st.mems, 1);
    free(ids);
}

#define THREADS 8
#define PER_THREAD 20000

static void *churn(void *p)
{
    uintptr_t me = (uintptr_t)p;
    uint64_t *ids = malloc(64 * sizeof *ids);
    for (int round = 0; round < PER_THREAD / 64; round++) {
        for (int i = 0; i < 64; i++)
            ids[i] = make(KIND_EVENT, me << 32 | (uint64_t)i);
        for (int i = 0; i < 64; i++) {
            struct cuctx_slot *s = cuctx__pin(ids[i], KIND_EVENT);
            if (!s || s->u.child.raw != (me << 32 | (uint64_t)i))
                return (void *)1;   /* another thread's object behind my id */
            cuctx__unpin(s);
        }
        for (int i = 0; i < 64; i++)
            destroy(ids[i], KIND_EVENT);
    }
    free(ids);
    return NULL;
}

Test(registry, concurrent_alloc_and_free_never_share_a_slot)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        cr_assert_null(r, "thread %d saw a foreign object", i);
    }
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    cr_assert_eq(st.events, 0);
}

struct race { uint64_t id; _Atomic int go; _Atomic int wins; };

static void *race_close(void *p)
{
    struct race *r = p;
    while (!atomic_load(&r->go))
        ;
    struct cuctx_slot *s = cuctx__close(r->id, KIND_STREAM);
    if (s) {
        atomic_fetch_add(&r->wins, 1);
        cuctx__drain(s);
        cuctx__slot_free(s);
    }
    return NULL;
}

Test(registry, racing_closes_have_exactly_one_winner)
{
    for (int round = 0; round < 200; round++) {
        struct race r = {.id = make(KIND_STREAM, 0)};
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, race_close, &r);
        atomic_store(&r.go, 1);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        cr_assert_eq(atomic_load(&r.wins), 1, "round %d", round);
    }
}

Test(registry, a_slot_whose_generation_would_wrap_is_retired)
{
    struct cuctx_slot *s = cuctx__slot_alloc();
    /* as if it had been reused four billion times */
    atomic_store(&s->word, (uint64_t)(UINT32_MAX - 1) << 32);
    uint64_t id = cuctx__slot_publish(s, KIND_EVENT);
    cr_assert_eq(cuctx__id_gen(id), UINT32_MAX - 1);
    destroy(id, KIND_EVENT);
    for (int i = 0; i < 100; i++) {
        struct cuctx_slot *n = cuctx__slot_alloc();
        cr_assert_neq(n, s, "a retired slot is never handed out again");
        cuctx__slot_publish(n, KIND_EVENT);
    }
    cr_assert_null(cuctx__pin(id, KIND_EVENT));
}

/* The address map: an entry's removal takes the address out only while it
 * still names that entry. A newer context at the same address (its entry
 * put over the old one's) keeps its mapping when the old entry's end comes
 * late, and an address never mapped is left alone. */
Test(registry, a_late_removal_leaves_a_newer_mapping_of_the_address)
{
    CUcontext raw = (CUcontext)(uintptr_t)0x7000;
    size_t before = cuctx__map_count();
    uint64_t old_entry = cuctx__id_make(KIND_ENTRY, 1, 1), new_entry = cuctx__id_make(KIND_ENTRY, 2, 1);
    cr_assert_eq(cuctx__map_put(raw, old_entry), 0);
    cr_assert_eq(cuctx__map_put(raw, new_entry), 0);
    cr_assert_eq(cuctx__map_count(), before + 1);
    cuctx__map_remove(raw, old_entry);
    cr_assert_eq(cuctx__map_find(raw), new_entry, "the newer context's mapping was removed");
    cr_assert_eq(cuctx__map_count(), before + 1);
    cuctx__map_remove((CUcontext)(uintptr_t)0x9000, new_entry);
    cr_assert_eq(cuctx__map_count(), before + 1, "an address never mapped took another out");
    cuctx__map_remove(raw, new_entry);
    cr_assert_eq(cuctx__map_find(raw), 0);
    cr_assert_eq(cuctx__map_count(), before);
}

/* A primary reset ends the context's entry, and the entry leaves the
 * address map with it (the map holds live contexts only). */
Test(registry, a_primary_reset_takes_the_context_out_of_the_address_map)
{
    cuctx_ctx p = {0};
    NEED_DRIVER();
    size_t before = cuctx__map_count();
    cr_assert_eq(cuctx_ctx_primary(&p, 0), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx__map_count(), before + 1);
    cr_assert_eq(cuctx_ctx_primary_reset(0), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx__map_count(), before, "the reset context's address is still mapped");
    cr_assert_eq(cuctx_ctx_destroy(&p), CUDA_SUCCESS, "%s", cuctx_last_error_message());
}

/* A borrow's entry ends with the last handle or child that names it, with
 * no sweep: a program that borrows contexts its own code makes and ends
 * (here 200, each destroyed by its owner after the borrow's handle) keeps
 * the address map and the live entries flat. stats is never called: it
 * sweeps. */
static size_t live_entries(void)
{
    int64_t n[KIND_COUNT];
    cuctx__live_counts(n);
    return (size_t)n[KIND_ENTRY];
}

Test(registry, a_borrows_entry_ends_with_the_last_handle_or_child_that_names_it)
{
    NEED_DRIVER();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy_raw = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext raw = NULL, popped = NULL;
    cuctx_ctx b = {0}, b2 = {0};
    cuctx_event ev = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    for (int i = 0; i < 200; i++) {
        cr_assert_eq(create(&raw, 0, 0), CUDA_SUCCESS);
        cr_assert_eq(pop(&popped), CUDA_SUCCESS);
        cr_assert_eq(cuctx_ctx_borrow(&b, raw), CUDA_SUCCESS, "%s", cuctx_last_error_message());
        cr_assert_eq(cuctx__map_count(), map0 + 1);
        cr_assert_eq(cuctx_ctx_destroy(&b), CUDA_SUCCESS);
        cr_assert_eq(cuctx__map_count(), map0, "round %d: the borrow's entry outlived its last handle", i);
        cr_assert_eq(live_entries(), live0, "round %d", i);
        cr_assert_eq(destroy_raw(raw), CUDA_SUCCESS);
    }
    /* children name it too: it ends with the last of them */
    cr_assert_eq(create(&raw, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(pop(&popped), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_borrow(&b, raw), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_borrow(&b2, raw), CUDA_SUCCESS);
    cr_assert_eq(cuctx_event_create(&ev, b, 0), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_destroy(&b), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_destroy(&b2), CUDA_SUCCESS);
    cr_assert_eq(cuctx__map_count(), map0 + 1, "the entry ended while its event named it");
    size_t mark = log_mark();
    CUevent raw_ev = cuctx_event_raw(ev);
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_SUCCESS);
    cr_assert_eq(calls_on("cuEventDestroy", (uint64_t)(uintptr_t)raw_ev, mark), sim() ? 1 : 0,
                 "the event's destroy was skipped: its context lives");
    cr_assert_eq(cuctx__map_count(), map0, "the entry outlived the last child that named it");
    cr_assert_eq(live_entries(), live0);
    cr_assert_eq(destroy_raw(raw), CUDA_SUCCESS);
    /* a primary context borrowed, then retained: the retain's handle names
     * the same entry, which ends with the last of the two handles while the
     * runtime's retain keeps the context */
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)drv_sym("cuDevicePrimaryCtxRetain", 7000);
    PFN_cuDevicePrimaryCtxRelease_v11000 release =
        (PFN_cuDevicePrimaryCtxRelease_v11000)drv_sym("cuDevicePrimaryCtxRelease", 11000);
    cuctx_ctx p = {0};
    cr_assert_eq(retain(&raw, 0), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_borrow(&b, raw), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_primary(&p, 0), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_destroy(&b), CUDA_SUCCESS);
    cr_assert_eq(cuctx__map_count(), map0 + 1, "the entry ended while the primary handle named it");
    cr_assert_eq(cuctx_ctx_destroy(&p), CUDA_SUCCESS);
    cr_assert_eq(cuctx__map_count(), map0, "the entry outlived its last handle");
    cr_assert_eq(live_entries(), live0);
    cr_assert_eq(cuctx_ctx_primary(&p, 0), CUDA_SUCCESS);     /* met again: a new entry */
    cr_assert_eq(cuctx_event_create(&ev, p, 0), CUDA_SUCCESS);
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_destroy(&p), CUDA_SUCCESS);
    cr_assert_eq(release(0), CUDA_SUCCESS);
    cr_assert_eq(misuses(), 0);
}

/* A borrowed context destroyed by its owner: the sweep (cuctx_stats_get)
 * ends its entry and takes its address out of the map with it, though the
 * borrow's handle still names the entry. Mutant killed: lib/entry.c:128
 * (cuctx__map_remove in cuctx__entry_end_locked removed; seed 29): the
 * dead context's address stayed mapped. */
Test(registry, a_swept_entry_leaves_the_address_map)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 destroy_raw = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext raw = NULL, popped = NULL;
    cuctx_ctx b = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    cr_assert_eq(create(&raw, 0, 0), CUDA_SUCCESS);
    cr_assert_eq(pop(&popped), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_borrow(&b, raw), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    cr_assert_eq(cuctx__map_count(), map0 + 1);
    cr_assert_eq(destroy_raw(raw), CUDA_SUCCESS);
    cr_assert_eq(cuctx__map_count(), map0 + 1, "(no sweep yet)");
    (void)stats();  /* sweeps */
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the sweep did not end the dead context's entry");
    cr_assert_eq(cuctx__map_find(raw), 0, "the dead context's address is still mapped");
    cr_assert_eq(cuctx__map_count(), map0, "the swept entry stayed in the address map");
    cr_assert_eq(live_entries(), live0);
    cr_assert_eq(cuctx_ctx_destroy(&b), CUDA_SUCCESS);
    cr_assert_eq(cuctx__map_count(), map0);
    cr_assert_eq(misuses(), 0);
}

/* A primary context that cuctx alone retained, released by its last
 * handle: the driver ends it, and its entry leaves the address map with it.
 * Mutant killed: lib/entry.c:311 (cuctx__map_remove in
 * cuctx__primary_settle_locked removed; seed 31): the ended primary's
 * address stayed mapped. */
Test(registry, a_released_primary_context_leaves_the_address_map)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx p = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    cr_assert_eq(cuctx_ctx_primary(&p, 0), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    CUcontext raw = cuctx_ctx_raw(p);
    cr_assert_neq(cuctx__map_find(raw), 0);
    cr_assert_eq(cuctx__map_count(), map0 + 1);
    cr_assert_eq(cuctx_ctx_destroy(&p), CUDA_SUCCESS);
    cr_assert_eq(calls("cuDevicePrimaryCtxRelease"), 1);
    cr_assert_eq(live_entries(), live0, "the primary's entry outlived its last release");
    cr_assert_eq(cuctx__map_find(raw), 0, "the ended primary context's address is still mapped");
    cr_assert_eq(cuctx__map_count(), map0, "the ended primary's entry stayed in the address map");
    cr_assert_eq(misuses(), 0);
}

/* A borrowed context ended by its owner, then found gone by a child
 * create through the borrow (the hold's check by id): the entry is retired
 * there and then, and its address leaves the map with it, though the
 * borrow's handle still names the entry. Mutant killed: lib/entry.c:174
 * `call` (cuctx__map_remove in entry_retire removed; seed 41): the dead
 * context's address stayed mapped to the retired entry. */
Test(registry, an_entry_found_gone_by_a_hold_leaves_the_address_map)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    cr_assert_eq(cuctx__map_count(), map0 + 1);
    raw_ctx_destroy(raw);
    unsigned long ids = calls("cuCtxGetId"), creates = calls("cuEventCreate");
    cr_assert_eq(cuctx_event_create(&ev, b, 0), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_gt(calls("cuCtxGetId"), ids, "the hold did not check the borrowed context by its id");
    cr_assert_eq(calls("cuEventCreate"), creates, "the create reached the driver in a dead context");
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the hold did not retire the dead context's entry");
    cr_assert_eq(live_entries(), live0);
    cr_assert_eq(cuctx__map_find(raw), 0, "the dead context's address is still mapped");
    cr_assert_eq(cuctx__map_count(), map0, "the retired entry stayed in the address map");
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(cuctx__map_count(), map0);
    cr_assert_eq(misuses(), 0);
}

/* In a forked child no primary retain of cuctx's is left, on any device:
 * the child's own retain of device 0's primary context (the parent held
 * one through cuctx at the fork) is cuctx's last there, so its release
 * closes the entry around the driver's release, and the entry ends when
 * the context ends with it. The simulator's state crosses fork, the
 * parent's retain included, which a real driver's does not: the child
 * gives that retain back first with the driver's own release. Mutant
 * killed: lib/entry.c:83 `const` (the fork's reset of the per-device
 * retain counts starting at device 1; seed 41): the child counted the
 * parent's retain of device 0 as its own, took its release for not the
 * last, and the ended context's entry stayed live and mapped. */
struct primary_child { PFN_cuDevicePrimaryCtxRelease_v11000 release; };

static int primary_release_in_child(void *arg)
{
    const struct primary_child *pc = arg;
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    if (pc->release(0) != CUDA_SUCCESS)
        return 1;       /* the parent's retain, carried by the simulator */
    cuctx_ctx q = {0};
    if (cuctx_ctx_primary(&q, 0) != CUDA_SUCCESS)
        return 2;
    CUcontext raw = cuctx_ctx_raw(q);
    if (cuctx__map_count() != map0 + 1 || live_entries() != live0 + 1)
        return 3;
    unsigned long releases = calls("cuDevicePrimaryCtxRelease");
    if (cuctx_ctx_destroy(&q) != CUDA_SUCCESS || calls("cuDevicePrimaryCtxRelease") != releases + 1)
        return 4;
    if (live_entries() != live0)
        return 5;       /* the entry outlived the context's last release */
    if (cuctx__map_find(raw) != 0 || cuctx__map_count() != map0)
        return 6;
    return misuses() == 0 ? 0 : 7;
}

Test(registry, a_forked_childs_last_primary_release_ends_the_context_it_ended)
{
    NEED_DRIVER();
    NEED_SIM();
    struct primary_child pc = {
        (PFN_cuDevicePrimaryCtxRelease_v11000)drv_sym("cuDevicePrimaryCtxRelease", 11000)};
    cuctx_ctx p = {0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    int st = in_child(primary_release_in_child, &pc);
    cr_assert_neq(st, 5, "the child's last release of device 0's primary context left its entry live");
    cr_assert_eq(st, 0, "the child's check %d failed", st);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(misuses(), 0);
}

/* A thread that ends with a pin taken (as one cancelled inside a driver
 * call could; its exit hook, thread_exit, is the backstop): its exit lets
 * go of the pin, so that the child's destroy does not wait for it. Mutant
 * killed: lib/registry.c:271 (cuctx__let_go_all() in thread_exit removed;
 * seed 31): the slot kept the ended thread's pin. */
static void *pin_and_end(void *p)
{
    return cuctx__pin(*(const uint64_t *)p, KIND_EVENT);
}

Test(registry, a_thread_that_ends_with_a_pin_lets_go_of_it, .timeout = 30)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    pthread_t t;
    void *pinned = NULL;
    cr_assert_eq(pthread_create(&t, NULL, pin_and_end, &ev.id), 0);
    cr_assert_eq(pthread_join(t, &pinned), 0);
    cr_assert_not_null(pinned, "the thread could not pin the event");
    uint64_t w = atomic_load(&((struct cuctx_slot *)pinned)->word);
    cr_assert_eq(w & CUCTX_W_PINS, 0, "the ended thread's pin is still counted (%llu)",
                 (unsigned long long)(w & CUCTX_W_PINS));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* A child adopted only to track (owned 0) in a borrowed context names the
 * borrow's entry as a made child does; its handle's destroy (which never
 * reaches the driver) gives the name back, and the last name ends the
 * entry. Mutant killed: lib/tether.c:84 `call` (cuctx__entry_unname_locked
 * in give_back removed: the entry and its address outlived the last name;
 * seed 29). */
Test(registry, a_tracked_childs_destroy_gives_its_name_of_a_borrow_back)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuEventCreate_v2000 event_create = (PFN_cuEventCreate_v2000)drv_sym("cuEventCreate", 2000);
    PFN_cuEventDestroy_v4000 event_destroy = (PFN_cuEventDestroy_v4000)drv_sym("cuEventDestroy", 4000);
    CUevent raw_ev = NULL;
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext raw = raw_ctx_create(0, LEFT_CURRENT);   /* current: the event is made in it */
    cr_assert_eq(event_create(&raw_ev, 0), CUDA_SUCCESS);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_adopt(&ev, b, raw_ev, 0));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(cuctx__map_count(), map0 + 1, "the entry ended while the tracked event named it");
    unsigned long destroys = calls("cuEventDestroy");
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls("cuEventDestroy"), destroys, "a tracked event reached the driver's destroy");
    cr_assert_eq(cuctx__map_count(), map0, "the borrow's entry outlived the tracked event, its last name");
    cr_assert_eq(live_entries(), live0);
    cr_assert_eq(event_destroy(raw_ev), CUDA_SUCCESS);
    cr_assert_eq(cuctx_pop_current(), CUDA_SUCCESS);
    raw_ctx_destroy(raw);
    cr_assert_eq(misuses(), 0);
}

/* A child of a borrow whose destroy cannot check its context (the hold's
 * cuCtxGetId fails: the driver's error is returned, the handle ends) gives
 * its name of the borrow's entry back as a pair's does in that case: the
 * entry then ends with the borrow's handle, its last name. Before the fix
 * in lib/tether.c (cuctx__child_unheld gave names back only for pairs),
 * the entry outlived every handle and child, mapped and counted live;
 * found by the seed-47 mutant lib/tether.c:92 `const`, which gave the
 * name back by accident. */
Test(registry, a_childs_destroy_that_cannot_check_its_context_gives_its_name_back)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext ra = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    uint64_t id = ev.id;
    unsigned long destroys = calls("cuEventDestroy");
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);     /* the destroy's check of the borrow */
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(calls("cuEventDestroy"), destroys, "the driver's destroy was asked without the check");
    cr_assert_not(cuctx__alive(id, KIND_EVENT), "the handle outlived its refused destroy");
    cr_assert_eq(live_entries(), live0 + 1);
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(live_entries(), live0, "the borrow's entry outlived its last name");
    cr_assert_eq(cuctx__map_count(), map0, "the borrow's address stayed mapped after its last name");
    raw_ctx_destroy(ra);
    cr_assert_eq(misuses(), 0);
}

/* An owned context's entry names its handle (cuctx__handle_new), and a
 * thread that held the entry through that handle keeps it at hand
 * (cuctx__me.entry.last), so that its next calls on the context take the
 * short path. Mutant killed: lib/entry.c:280 `lcr` (`life == LIFE_OWNED
 * || life == LIFE_GREEN` made `&&`: no entry named its handle, and no
 * hold of an owned context was ever kept at hand; seed 29). */
Test(registry, an_owned_contexts_entry_names_its_handle)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CUcontext raw = cuctx_ctx_raw(c);
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    struct cuctx_slot *e = cuctx__peek(entry, KIND_ENTRY);
    cr_assert_not_null(e);
    cr_assert_eq(__atomic_load_n(&e->u.entry.owner_handle, __ATOMIC_RELAXED), c.id,
                 "the owned context's entry does not name its handle");
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    cr_assert_eq(cuctx__me.entry.last.handle, c.id, "the hold through the handle was not kept at hand");
    cr_assert_eq(cuctx__me.entry.last.entry, entry);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

static int report_in_child(void *p)
{
    (void)p;
    if (cuctx__me.registry.npins != 0 || cuctx__thread_busy())
        return 1;   /* the forking thread's pins (or holds) outlived the fork */
    struct handler_count h;
    count_handler_install(&h);
    any_handle bogus = {1};     /* names no object: its cleanup fails and reports */
    (cuctx_cleanup)(&bogus);
    int told = h.calls;
    cuctx_set_error_handler(NULL, NULL);
    return told == 1 ? 0 : 10 + told;   /* 10: the report waits for a release that never comes */
}

/* The fork forgets the forking thread's pins too, not only those of the
 * threads left behind: the child holds nothing, so a report it makes goes
 * to the error handler at once instead of waiting for a release. The
 * parent pinned handles before the fork, as any program that used cuctx
 * has. (Here, not in test_process: this program's children dump their
 * gcov data, so tools/mutate sees the child's lines run here.) Mutant
 * killed: lib/registry.c:290 `const` (the thread's pin count set to 1
 * instead of 0 in the child: the child took itself for busy and held the
 * report back; seed 29). */
Test(registry, a_forked_child_holds_no_pin_and_reports_at_once)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_synchronize(ev));     /* pins the event, and lets go */
    int st = in_child(report_in_child, NULL);
    cr_assert_neq(st, 1, "the child still counts pins or holds of the forking thread");
    cr_assert_eq(st, 0, "the child's report reached the handler %d times, not once", st - 10);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

struct pinned_elsewhere {
    cuctx_event ev;
    CUresult rc;
};

static void *synchronize_run(void *p)
{
    struct pinned_elsewhere *d = p;
    d->rc = cuctx_event_synchronize(d->ev);
    return NULL;
}

static int destroy_pinned_in_child(void *p)
{
    struct pinned_elsewhere *d = p;
    uint64_t id = d->ev.id;
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    if (atomic_load(&s->word) & CUCTX_W_PINS)
        return 1;   /* the pin of a thread the child does not have outlived the fork */
    unsigned long destroys = calls("cuEventDestroy");
    if (cuctx_event_destroy(&d->ev) != CUDA_SUCCESS)
        return 2;
    if (cuctx__alive(id, KIND_EVENT))
        return 3;
    return calls("cuEventDestroy") == destroys ? 0 : 4;     /* the parent's event, not the child's */
}

/* Only the forking thread lives on in a forked child: the pins that the
 * other threads held at the fork are gone with them, so the child's
 * destroy of an object another thread was using in the parent ends its
 * handle at once (without the driver: its context is the parent's), never
 * waiting for a release that cannot come. The other thread is held inside
 * cuEventSynchronize, pinning the event, across the fork. Mutant killed:
 * lib/registry.c:288 `call` (the pins of every slot not cleared in the
 * child: the event's word kept the other thread's pin, and its destroy
 * would drain for ever; seed 47). */
Test(registry, a_forked_child_drops_the_pins_of_the_threads_left_behind)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    struct pinned_elsewhere d = {{0}, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_event_create(&d.ev, c, 0));
    CHECK_OK(cuctx_event_record(d.ev, (cuctx_stream){0}));
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(d.ev.id));
    sim()->hold_after("cuEventSynchronize");
    cr_assert_eq(pthread_create(&t, NULL, synchronize_run, &d), 0);
    int held = 0;
    for (int ms = 0; ms < 10000 && !(held = sim()->sleeping() == 1); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert(held, "the synchronize never reached the driver");
    cr_assert_eq(atomic_load(&s->word) & CUCTX_W_PINS, 1, "the other thread pins the event for its call");
    int st = in_child(destroy_pinned_in_child, &d);
    sim()->let_go();
    pthread_join(t, NULL);
    cr_assert_neq(st, 1, "the child kept the pin of a thread it does not have");
    cr_assert_eq(st, 0, "the child's destroy of the event (%d)", st);
    CHECK_OK(d.rc);
    cr_assert_eq(atomic_load(&s->word) & CUCTX_W_PINS, 0);
    CHECK_OK(cuctx_event_destroy(&d.ev));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- the context lock ------------------------------------------------------- */

/* Whether thread tid is asleep in nanosleep, as a thread waiting in lib/'s
 * backoff (registry.c: a drain waiting for holds, a hold waiting for a
 * close to be decided) is once it has yielded its first rounds: 1 yes, 0
 * no, -1 when /proc does not say. */
static int in_backoff_sleep(pid_t tid)
{
    unsigned long arg1 = 0;
    long nr = blocked_in(tid, &arg1);
    if (nr == -2)
        return -1;
    return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

/* A cuctx call run on a thread of its own while the test holds something
 * it may wait for: the context lock, or an entry held by another thread. */
struct locked_call {
    CUresult (*call)(struct locked_call *);
    cuctx_ctx c;
    void *arg;
    CUresult rc;
    _Atomic pid_t tid;
    _Atomic int done;
};

static void *run_locked_call(void *p)
{
    struct locked_call *l = p;
    atomic_store(&l->tid, gettid());
    l->rc = l->call(l);
    atomic_store(&l->done, 1);
    return NULL;
}

#define NEED_PROC_SYSCALL()                                                               \
    do {                                                                                  \
        if (in_futex_wait(gettid()) < 0)                                                  \
            cr_skip_test("/proc/self/task/TID/syscall is not readable here");             \
    } while (0)

/* Starts l->call on another thread and waits until that thread is asleep
 * as asleep(tid) says (1) or its call has returned (0); -1 if neither
 * comes within 10 s. The caller lets go of what the call may wait for and
 * joins *t. The wait decides nothing by time: the other thread can only
 * end up in one of the two states. */
static int returns_or_sleeps(struct locked_call *l, pthread_t *t, int (*asleep)(pid_t))
{
    cr_assert_eq(pthread_create(t, NULL, run_locked_call, l), 0);
    for (int ms = 0; ms < 10000; ms++) {
        pid_t tid = atomic_load(&l->tid);
        if (atomic_load(&l->done))
            return 0;
        if (tid && asleep(tid) == 1)
            return 1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return -1;
}

/* With the context lock held by the calling thread, the same for a futex
 * wait (the lock, the only one the test holds: 1; 0: the call went through
 * without the lock). */
static int runs_into_the_lock(struct locked_call *l, pthread_t *t)
{
    return returns_or_sleeps(l, t, in_futex_wait);
}

static CUresult destroy_ctx(struct locked_call *l)
{
    return cuctx_ctx_destroy(&l->c);
}

/* l set to destroy a new owned context, made and popped here. */
static void new_ctx_to_destroy(struct locked_call *l)
{
    *l = (struct locked_call){.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_create(&l->c, 0, 0));
    CHECK_OK(cuctx_pop_current());
}

/* An owned context's destroy takes the context lock to end the entry
 * (cuctx__entry_finish, after the driver's cuCtxDestroy): with the lock
 * held by another thread the destroy waits there, past its cuCtxDestroy,
 * and finishes once the lock is let go. No other acquisition of the lock
 * comes first on that path (handle_destroy, owned_destroy,
 * cuctx__destroy_popping take none). Mutant killed: lib/entry.c:117
 * (cuctx__ctx_lock() in cuctx__entry_finish removed; seed 23): the destroy
 * went through while the lock was held, and its unlock let go of the
 * test's. */
Test(ctx_lock, a_context_destroy_ends_its_entry_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l;
    new_ctx_to_destroy(&l);
    uint64_t handle = l.c.id;
    unsigned long destroys = calls("cuCtxDestroy");
    size_t contexts = sim()->live(CUSIM_CONTEXT);
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long destroyed = calls("cuCtxDestroy") - destroys;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the destroy went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the destroy neither waited for the lock nor returned in 10 s");
    cr_assert_eq(destroyed, 1, "the destroy waited for the lock before its cuCtxDestroy");
    CHECK_OK(l.rc);
    cr_assert_not(cuctx__alive(handle, KIND_CTX_HANDLE));
    cr_assert_eq(sim()->live(CUSIM_CONTEXT), contexts - 1);
    cr_assert_eq(misuses(), 0);
}

/* A hold of an entry that is closing, asked by a thread that holds the
 * context lock, is refused at once: the closer may be waiting for that
 * lock (here an owned context's destroy, past its cuCtxDestroy, waits for
 * it to end the entry), so waiting for the close would wait for ever.
 * Mutant killed: lib/entry.c:440 (`|| cuctx__me.lock.held` made
 * `&& cuctx__me.lock.held`: the thread holding the lock alone waited for
 * the close; seed 31, and seed 29's open item). The timeout only ends a
 * hung test. */
Test(ctx_lock, a_closing_entry_met_under_the_context_lock_is_refused_without_waiting, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l;
    new_ctx_to_destroy(&l);
    uint64_t entry = cuctx__map_find(cuctx_ctx_raw(l.c));
    cr_assert_neq(entry, 0);
    struct cuctx_held o = {.slot = NULL};
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    int closing = cuctx__closing(entry, KIND_ENTRY);
    CUresult rc = waited == 1 && closing ? cuctx__entry_hold_quiet(entry, &o) : CUDA_ERROR_UNKNOWN;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_eq(waited, 1, "the destroy did not wait for the context lock");
    cr_assert(closing, "the destroy waiting for the lock had not closed the entry");
    cr_assert_eq(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(rc));
    cr_assert_null(o.slot);
    CHECK_OK(l.rc);
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY));
    cr_assert_eq(misuses(), 0);
}

/* The release of cuctx's primary retain takes the context lock first
 * (primary_release: the retain count, the primary's entry, then the
 * driver's cuDevicePrimaryCtxRelease): with the lock held by another
 * thread the destroy of a primary handle waits before its release, and
 * finishes once the lock is let go. No other acquisition of the lock comes
 * first on that path (handle_destroy takes none for a primary handle).
 * Mutant killed: lib/context.c:126 (now :133, cuctx__ctx_lock() in
 * primary_release removed; listed as out of reach). */
Test(ctx_lock, a_primary_release_takes_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_primary(&l.c, 0));
    unsigned long releases = calls("cuDevicePrimaryCtxRelease");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long released = calls("cuDevicePrimaryCtxRelease") - releases;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the primary's release went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the primary's release neither waited for the lock nor returned in 10 s");
    cr_assert_eq(released, 0, "the primary was released before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(calls("cuDevicePrimaryCtxRelease"), releases + 1);
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(misuses(), 0);
}

#if CUDA_VERSION >= 12040
static CUresult make_green(struct locked_call *l)
{
    return cuctx_ctx_green(&l->c, 0, 16);
}

/* A green context's create registers it (its entry, the primary
 * context's, its handle) under the context lock: with the lock held by
 * another thread the create waits there, past the driver's
 * cuGreenCtxCreate, and finishes once the lock is let go. No other
 * acquisition of the lock comes first on that path (need_green, desc_of
 * and the driver calls take none). Mutant killed: lib/green.c:214
 * (cuctx__ctx_lock() before register_locked removed; seed 23). */
Test(ctx_lock, a_green_context_is_registered_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = make_green, .rc = CUDA_ERROR_UNKNOWN};
    unsigned long creates = calls("cuGreenCtxCreate");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long created = calls("cuGreenCtxCreate") - creates;
    uint64_t handle_meanwhile = l.c.id;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the green create went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the green create neither waited for the lock nor returned in 10 s");
    cr_assert_eq(created, 1, "the green create waited for the lock before its cuGreenCtxCreate");
    cr_assert_eq(handle_meanwhile, 0, "the handle was handed out before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(sim()->live(CUSIM_GREEN), 1);
    CHECK_OK(cuctx_ctx_destroy(&l.c));
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0);
    cr_assert_eq(misuses(), 0);
}

/* A green context's destroy settles the primary context's books (its
 * green count, maybe the primary's end) and destroys the green context
 * under the context lock: with the lock held by another thread the
 * destroy waits there, before its cuGreenCtxDestroy, and finishes once
 * the lock is let go. No other acquisition of the lock comes first on
 * that path (handle_destroy, end_streams and the entry's close take none).
 * Mutant killed: lib/green.c:364 (cuctx__ctx_lock() in cuctx__green_end
 * removed; seed 29): the green context was destroyed while the lock was
 * held, and the unlock let go of the test's. */
Test(ctx_lock, a_green_contexts_destroy_takes_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_green(&l.c, 0, 16));
    cr_assert_eq(sim()->live(CUSIM_GREEN), 1);
    uint64_t handle = l.c.id;
    unsigned long destroys = calls("cuGreenCtxDestroy");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long destroyed = calls("cuGreenCtxDestroy") - destroys;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the green destroy went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the green destroy neither waited for the lock nor returned in 10 s");
    cr_assert_eq(destroyed, 0, "the green context was destroyed before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_not(cuctx__alive(handle, KIND_CTX_HANDLE));
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0);
    cr_assert_eq(misuses(), 0);
}
#endif

static CUresult get_stats(struct locked_call *l)
{
    struct cuctx_stats st;
    (void)l;
    return cuctx_stats_get_sized(&st, sizeof st) == sizeof st ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* The stats count the contexts handed out (and sweep the dead ones out of
 * the address map) under the context lock: with the lock held by another
 * thread cuctx_stats_get waits, and returns once the lock is let go. No
 * other acquisition of the lock comes first on that path
 * (cuctx__live_counts takes none). Mutant killed: lib/diagnostics.c:65
 * (cuctx__ctx_lock() in contexts_handed_out removed; seed 29). */
Test(ctx_lock, the_stats_count_contexts_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx a = {0};
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    struct locked_call l = {.call = get_stats, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    int done_meanwhile = atomic_load(&l.done);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the stats went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the stats neither waited for the lock nor returned in 10 s");
    cr_assert_eq(done_meanwhile, 0);
    CHECK_OK(l.rc);
    cr_assert_eq(stats().contexts, 1);
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(stats().contexts, 0);
}

/* ---- waits for holds and for closes ------------------------------------ */

/* Waits (1 ms at a time, up to 10 s) until the simulator holds n calls in
 * cusim_hold_after or a delay; fails the test otherwise. */
static void until_sim_holds(unsigned n)
{
    for (int ms = 0; sim()->sleeping() != n; ms++) {
        cr_assert_lt(ms, 10000, "the simulator never held %u calls", n);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

static void *synchronize_event(void *p)
{
    struct locked_call *l = p;
    l->rc = cuctx_event_synchronize(*(cuctx_event *)l->arg);
    atomic_store(&l->done, 1);
    return NULL;
}

static CUresult query_event(struct locked_call *l)
{
    return cuctx_event_query(*(cuctx_event *)l->arg);
}

/* A borrowed context that its owner destroyed is found gone by the next
 * hold (the driver's id check), which retires its entry: the retire waits
 * for the holds already taken - here another thread's, inside a call on
 * the context's event (held after its driver call by the simulator) -
 * before the slot is freed. Mutant killed: lib/entry.c:177 `call`
 * (cuctx__drain in entry_retire removed: the slot was freed under the
 * other thread's hold; seed 29). */
Test(drain, a_retired_borrows_entry_waits_for_the_holds_under_way, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    struct locked_call holder = {.arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call retirer = {.call = query_event, .arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t th, tr;
    sim()->hold_after("cuEventSynchronize");
    cr_assert_eq(pthread_create(&th, NULL, synchronize_event, &holder), 0);
    until_sim_holds(1);     /* the holder is past its driver call, the entry held */
    raw_ctx_destroy(raw);
    unsigned long checks = calls("cuCtxGetId");
    int waited = returns_or_sleeps(&retirer, &tr, in_backoff_sleep);
    int holder_done = atomic_load(&holder.done);
    sim()->let_go();
    pthread_join(th, NULL);
    pthread_join(tr, NULL);
    cr_assert_eq(holder_done, 0);
    cr_assert_gt(calls("cuCtxGetId"), checks, "the query did not check the context");
    cr_assert_neq(waited, 0, "the retire of the entry did not wait for the other thread's hold");
    cr_assert_eq(waited, 1, "the query neither waited nor returned in 10 s");
    CHECK_OK(holder.rc);
    cr_assert_eq(retirer.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(retirer.rc));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(misuses(), 0);
}

/* The two handles of a call on two contexts (a stream of one, an event of
 * the other). */
struct two { cuctx_stream s; cuctx_event ev; };

static CUresult wait_event(struct locked_call *l)
{
    struct two *w = l->arg;
    return cuctx_stream_wait_event(w->s, w->ev);
}

static CUresult reset_primary(struct locked_call *l)
{
    (void)l;
    return cuctx_ctx_primary_reset(0);
}

/* A call on two contexts whose second is closing lets go of the first
 * before it waits for the close to be decided (cuctx__entry_hold_beside):
 * a thread that holds an entry never waits for another's close. So while
 * the call waits - the second context's destroy held in its cuCtxDestroy
 * by the simulator - the first context can be destroyed without waiting
 * for it. Mutant killed: lib/entry.c:440 `lcr` (`... ||
 * cuctx__thread_holds_entry() || cuctx__me.lock.held` made `... ||
 * cuctx__thread_holds_entry() && cuctx__me.lock.held`: the call waited
 * holding the first context, and that context's destroy waited for it;
 * seed 29). */
Test(drain, a_call_waiting_for_a_close_holds_no_other_context, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx x = {0};
    struct two w = {{0}, {0}};
    struct locked_call closer = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call waiter = {.call = wait_event, .arg = &w, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call other = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    new_ctx(&other.c, 0, NULL, POPPED);
    CHECK_OK(cuctx_stream_create(&w.s, other.c, 0, 0));
    new_ctx(&x, 0, NULL, POPPED);
    CHECK_OK(cuctx_event_create(&w.ev, x, 0));
    closer.c = x;
    pthread_t tc, tw, to;
    sim()->hold_after("cuCtxDestroy");
    cr_assert_eq(pthread_create(&tc, NULL, run_locked_call, &closer), 0);
    until_sim_holds(1);     /* x's entry closing, its destroy inside cuCtxDestroy */
    int waiting = returns_or_sleeps(&waiter, &tw, in_backoff_sleep);
    int blocked = waiting == 1 ? returns_or_sleeps(&other, &to, in_backoff_sleep) : -2;
    sim()->let_go();
    pthread_join(tc, NULL);
    pthread_join(tw, NULL);
    if (blocked != -2)
        pthread_join(to, NULL);
    cr_assert_eq(waiting, 1, "the call on the closing context did not wait for the close (%d)", waiting);
    cr_assert_neq(blocked, 1, "the other context's destroy waited for the call waiting on the close");
    cr_assert_eq(blocked, 0, "the other context's destroy neither returned nor waited in 10 s");
    CHECK_OK(closer.rc);
    CHECK_OK(other.rc);
    cr_assert_eq(waiter.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(waiter.rc));
    CHECK_OK(cuctx_event_destroy(&w.ev));
    CHECK_OK(cuctx_stream_destroy(&w.s));
    cr_assert_eq(misuses(), 0);
}

/* The same call, its second context a primary one whose release by cuctx
 * (held in cuDevicePrimaryCtxRelease) closes the entry, and which lives on
 * - an outside retain - so that the close is abandoned: the call waited
 * with nothing held, then takes both contexts again, and makes its driver
 * call holding both. A reset of the primary context meanwhile (its call
 * held by the simulator after cuStreamWaitEvent) waits for that hold.
 * Mutant killed: lib/entry.c:474 `ror` (the first context taken again
 * made to end the loop with the second let go: the call ran without
 * holding the primary context, whose reset did not wait; seed 29). */
Test(drain, a_call_that_waited_out_an_abandoned_close_holds_both_contexts, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx y = {0};
    struct two w = {{0}, {0}};
    struct locked_call releaser = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call waiter = {.call = wait_event, .arg = &w, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call resetter = {.call = reset_primary, .rc = CUDA_ERROR_UNKNOWN};
    new_ctx(&y, 0, NULL, POPPED);
    CHECK_OK(cuctx_stream_create(&w.s, y, 0, 0));
    CHECK_OK(cuctx_ctx_primary(&releaser.c, 0));
    CHECK_OK(cuctx_event_create(&w.ev, releaser.c, 0));
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    pthread_t tr, tw, tx;
    sim()->hold_after("cuDevicePrimaryCtxRelease");
    cr_assert_eq(pthread_create(&tr, NULL, run_locked_call, &releaser), 0);
    until_sim_holds(1);     /* the primary's entry closing, the release inside the driver */
    int waiting = returns_or_sleeps(&waiter, &tw, in_backoff_sleep);
    if (waiting == 1)
        sim()->hold_after("cuStreamWaitEvent");
    sim()->let_go();        /* the release; the entry reopens (the context lives) */
    pthread_join(tr, NULL);
    int blocked = -2;
    if (waiting == 1) {
        for (int ms = 0; calls("cuStreamWaitEvent") == 0 || sim()->sleeping() != 1; ms++) {
            cr_assert_lt(ms, 10000, "the call never reached cuStreamWaitEvent");
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
        blocked = returns_or_sleeps(&resetter, &tx, in_backoff_sleep);
        sim()->let_go();
        pthread_join(tx, NULL);
    }
    pthread_join(tw, NULL);
    cr_assert_eq(waiting, 1, "the call on the closing context did not wait for the close (%d)", waiting);
    cr_assert_neq(blocked, 0, "the primary's reset did not wait for the call: it did not hold the context");
    cr_assert_eq(blocked, 1, "the reset neither returned nor waited in 10 s");
    CHECK_OK(releaser.rc);
    CHECK_OK(waiter.rc);
    CHECK_OK(resetter.rc);
    cr_assert_eq(calls("cuStreamWaitEvent"), 1);
    CHECK_OK(cuctx_event_destroy(&w.ev));
    CHECK_OK(cuctx_stream_destroy(&w.s));
    CHECK_OK(cuctx_ctx_destroy(&y));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(misuses(), 0);
}

/* ---- the closer's membarrier ----------------------------------------------- */

/* This program's syscall(2): the internal copy of lib/ linked in calls it
 * (a static archive: the call binds here at link time), and so does any
 * shared object through its PLT. It forwards to libc's and counts the
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) calls that succeeded. */
static atomic_long private_expedited;

long syscall(long nr, ...)
{
    static long (*_Atomic real)(long, ...);
    long (*f)(long, ...) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "syscall");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    va_list ap;
    long a[6];
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    long r = f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
#ifdef SYS_membarrier
    if (nr == SYS_membarrier && a[0] == MEMBARRIER_CMD_PRIVATE_EXPEDITED && a[1] == 0 && r == 0)
        atomic_fetch_add(&private_expedited, 1);
#endif
    return r;
}

/* This program's pthread_setspecific, as its syscall above: it forwards
 * to libc's, except on a thread that armed it (refuse_setspecific), where
 * the next call fails with ENOMEM, as glibc's does when it cannot allocate
 * the thread's second-level table; the value refused is kept. */
static _Thread_local int refuse_setspecific;
static _Thread_local const void *refused_value;

int pthread_setspecific(pthread_key_t key, const void *value)
{
    static int (*_Atomic real)(pthread_key_t, const void *);
    int (*f)(pthread_key_t, const void *) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "pthread_setspecific");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    if (refuse_setspecific) {
        refuse_setspecific = 0;
        refused_value = value;
        return ENOMEM;
    }
    return f(key, value);
}

/* A thread whose hazard record cannot be bound to it (its key's
 * pthread_setspecific failed) goes on without one and gives the record
 * back, untaken, for the next thread. Mutant killed: lib/registry.c:324
 * (the record's `taken` left set on that failure; seed 31): the record
 * stayed taken by no thread for good. */
static void *record_refused(void *p)
{
    (void)p;
    refuse_setspecific = 1;
    struct cuctx_hazard_rec *r = cuctx__hazard_rec();
    return r ? NULL : (void *)refused_value;
}

Test(registry, a_hazard_record_that_cannot_be_bound_is_given_back)
{
    pthread_t t;
    void *rec = NULL;
    cr_assert_not_null(cuctx__hazard_rec());    /* this thread's: the key made */
    cr_assert_eq(pthread_create(&t, NULL, record_refused, NULL), 0);
    cr_assert_eq(pthread_join(t, &rec), 0);
    cr_assert_not_null(rec, "the thread's record was bound, or not offered");
    cr_assert_eq(atomic_load(&((struct cuctx_hazard_rec *)rec)->taken), 0,
                 "the record a thread could not bind stayed taken");
}

/* Where the process registered for membarrier(2) (cuctx__asymmetric), a
 * holder's half of the hold/drain fence is a compiler barrier only, and the
 * closer's drain makes every thread fence: each drain of a context entry
 * makes one successful membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0),
 * here with a hold of another entry registered on another thread. Mutants
 * killed: lib/registry.c:334 (seed 23; now :335), closer_fence's membarrier
 * skipped where cuctx__asymmetric, or asked with flags 1 (EINVAL, and the
 * closer fell back to a fence of its own, which orders nothing on the
 * holders' side). */
struct other_hold { uint64_t id; _Atomic int held, stop; };

static void *hold_meanwhile(void *p)
{
    struct other_hold *o = p;
    unsigned hazard;
    struct cuctx_slot *s = cuctx__hold_own(o->id, KIND_ENTRY, &hazard);
    if (!s)
        abort();
    atomic_store(&o->held, 1);
    while (!atomic_load(&o->stop))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cuctx__unhold(s, hazard);
    return NULL;
}

Test(membarrier, the_drain_of_a_context_entry_makes_every_thread_fence)
{
#ifndef SYS_membarrier
    cr_skip_test("no membarrier(2) on this system");
#else
    destroy(make(KIND_ENTRY, 0), KIND_ENTRY);   /* the registry set up: cuctx__asymmetric settled */
    if (!cuctx__asymmetric)
        cr_skip_test("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available here: holders fence themselves");
    struct other_hold o = {.id = make(KIND_ENTRY, 1)};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, hold_meanwhile, &o), 0);
    while (!atomic_load(&o.held))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    long before = atomic_load(&private_expedited);
    destroy(make(KIND_ENTRY, 2), KIND_ENTRY);
    long fences = atomic_load(&private_expedited) - before;
    atomic_store(&o.stop, 1);
    pthread_join(t, NULL);
    destroy(o.id, KIND_ENTRY);
    cr_assert_eq(fences, 1, "%ld successful membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) by the drain", fences);
#endif
}

/* ---- holds of children: the hot paths' first use marks the child held ---- */

static int held_bit(uint64_t id)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    return s && (atomic_load(&s->word) & CUCTX_W_HELD) != 0;
}

/* The stream-ordered pair and the graph exec launch hold their children
 * through the thread's hazard slots, not by pins, once a child's
 * generation was held (its CUCTX_W_HELD bit: registry.h). The first use
 * takes the full path, which sets the bit, and the uses after it take the
 * fast path. Nothing else observes the bit: a full path that stopped
 * setting it would leave every later launch or pair pinning (two locked
 * read-modify-writes a child), correct but at the slow path's cost. Bugs
 * caught: launch_slow's mark_held dropped (lib/graph_exec.c), the
 * stream-ordered pair's first hold made a pin (lib/mem_async.c). The held
 * bit is also what makes a held child's destroy scan the hazard slots. */
Test(holds, a_first_launch_and_a_first_stream_ordered_allocation_mark_their_children_held)
{
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_stream s = {0}, s2 = {0};
    cuctx_graph g = {0};
    cuctx_graph_exec ge = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_stream_create(&s2, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_graph_create(&g));
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, c, cuctx_graph_raw(g), 0));
    cr_assert(!held_bit(ge.id) && !held_bit(s.id) && !held_bit(s2.id), "a child held before any use");

    CHECK_OK(cuctx_graph_exec_launch(ge, s));
    cr_assert(held_bit(ge.id), "the first launch did not mark the exec held");
    cr_assert(held_bit(s.id), "the first launch did not mark its stream held");
    CHECK_OK(cuctx_graph_exec_launch(ge, s));
    cr_assert(held_bit(ge.id) && held_bit(s.id));

    CHECK_OK(cuctx_mem_alloc_async(&m, s2, 4096));
    cr_assert(held_bit(s2.id), "the first stream-ordered allocation did not mark its stream held");
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_stream_synchronize(s));

    /* a held child's destroy still ends it, and its successor starts unheld */
    uint64_t was = ge.id;
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    cr_assert(!held_bit(was), "a destroyed exec's slot kept the held bit");
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_graph_destroy(&g));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- the context lock in a stream-ordered free (seed 43) ----------------- */

static CUresult destroy_mem(struct locked_call *l)
{
    return cuctx_mem_destroy((cuctx_mem *)l->arg);
}

/* Stream-ordered memory whose context is gone, freed with the device's
 * primary context active (lib/mem_async.c's case 3, free_in_primary): the
 * free asks the pointer's device and whether its primary context is
 * active, then finds that context's address under the context lock
 * (cuctx__primary_address reads and fills the table of primary contexts).
 * With the lock held by another thread the free waits there, after its
 * cuPointerGetAttribute and before any free, and frees on the primary's
 * legacy stream once the lock is let go. Mutant killed: lib/mem_async.c:204
 * `call` (that cuctx__ctx_lock() removed: the free went through, and its
 * unlock let go of the test's; seed 43). */
Test(ctx_lock, a_free_in_the_primary_context_finds_it_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx pc = {0}, c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    uint64_t p = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_destroy(&c));
    struct locked_call l = {.call = destroy_mem, .arg = &m, .rc = CUDA_ERROR_UNKNOWN};
    size_t mark = log_mark();
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long asked = calls_on("cuPointerGetAttribute", p, mark);
    unsigned long freed = calls_on("cuMemFreeAsync", p, mark) + calls_on("cuMemFree", p, mark);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the free went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the free neither waited for the lock nor returned in 10 s");
    cr_assert_eq(asked, 1, "the free waited for the lock before it asked the pointer's device");
    cr_assert_eq(freed, 0, "the memory was freed before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(m.id, 0);
    struct cusim_call f = last_call("cuMemFreeAsync", mark);
    cr_assert_eq(f.handle, p, "not freed by cuMemFreeAsync");
    cr_assert_eq(f.stream, (uint64_t)(uintptr_t)CU_STREAM_LEGACY, "not on the legacy stream");
    cr_assert_eq(f.ctx, (uint64_t)(uintptr_t)cuctx_ctx_raw(pc), "not with the primary context current");
    cr_assert_eq(calls_on("cuMemFree", p, mark), 0);
    cr_assert_eq(stats().async_mems, 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* A thread's freed slots are its own first (the per-thread cache): a slot
 * another thread freed is not what this thread's next create gets while
 * that thread lives; the thread's end gives its cache to the shared list,
 * whose next create reuses it. Mutant killed: lib/registry.c:159 `not`
 * (the cache's flush never registered at a thread's first free, so that
 * no thread ever kept a slot: every free went to the shared list and the
 * other thread's create took the slot at once; seed 43). */
struct cache_thread { uint64_t id; pthread_barrier_t freed, done; };

static void *free_one_and_wait(void *p)
{
    struct cache_thread *c = p;
    c->id = make(KIND_EVENT, 1);
    destroy(c->id, KIND_EVENT);
    pthread_barrier_wait(&c->freed);
    pthread_barrier_wait(&c->done);     /* alive, its cache unflushed, until told */
    return NULL;
}

Test(registry, a_slot_freed_by_a_thread_stays_its_own_until_it_ends)
{
    struct cache_thread c = {0};
    pthread_t t;
    cr_assert_eq(pthread_barrier_init(&c.freed, NULL, 2), 0);
    cr_assert_eq(pthread_barrier_init(&c.done, NULL, 2), 0);
    cr_assert_eq(pthread_create(&t, NULL, free_one_and_wait, &c), 0);
    pthread_barrier_wait(&c.freed);
    uint64_t mine = make(KIND_EVENT, 2);
    pthread_barrier_wait(&c.done);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_neq(cuctx__id_index(mine), cuctx__id_index(c.id),
                  "this thread's create took the slot the living thread had freed to its own cache");
    uint64_t after = make(KIND_EVENT, 3);
    cr_assert_eq(cuctx__id_index(after), cuctx__id_index(c.id), "the ended thread's cached slot was not shared");
    cr_assert_neq(after, c.id, "with another generation");
    destroy(after, KIND_EVENT);
    destroy(mine, KIND_EVENT);
    pthread_barrier_destroy(&c.freed);
    pthread_barrier_destroy(&c.done);
}

/* Peer access someone else enabled between two borrowed contexts: the
 * pair tracks it (not owned) and names both borrows' entries, as a pair it
 * made does; its destroy, which never reaches the driver, gives both names
 * back (the tracked child's give_back, for the second context too), so
 * both entries end with it and leave the address map. Mutant killed:
 * lib/tether.c:167 `call` (the second context's name not given back: B's
 * entry and its address outlived everything; seed 43). */
Test(registry, a_tracked_pairs_destroy_gives_both_borrows_names_back)
{
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxEnablePeerAccess_v4000 enable = (PFN_cuCtxEnablePeerAccess_v4000)drv_sym("cuCtxEnablePeerAccess", 4000);
    PFN_cuCtxDisablePeerAccess_v4000 disable =
        (PFN_cuCtxDisablePeerAccess_v4000)drv_sym("cuCtxDisablePeerAccess", 4000);
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    PFN_cuCtxPushCurrent_v4000 push = (PFN_cuCtxPushCurrent_v4000)drv_sym("cuCtxPushCurrent", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cr_assert_eq(push(ra), CUDA_SUCCESS);
    cr_assert_eq(enable(rb, 0), CUDA_SUCCESS);         /* someone else's access, from A to B */
    cr_assert_eq(pop(NULL), CUDA_SUCCESS);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p, &owned));
    cr_assert_eq(owned, 0, "tracked, not owned");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(live_entries(), live0 + 2, "an entry ended while the pair named it");
    cr_assert_eq(cuctx__map_count(), map0 + 2);
    unsigned long disables = calls("cuCtxDisablePeerAccess");
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables, "the tracked access was disabled");
    cr_assert_eq(live_entries(), live0, "an entry outlived the pair, its last name");
    cr_assert_eq(cuctx__map_count(), map0, "an address stayed mapped after its entry's last name");
    cr_assert_eq(push(ra), CUDA_SUCCESS);
    cr_assert_eq(disable(rb), CUDA_SUCCESS, "the owner's disable");
    cr_assert_eq(pop(NULL), CUDA_SUCCESS);
    raw_ctx_destroy(ra);
    raw_ctx_destroy(rb);
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/registry.c (r2) ---- */

/* A child's hold when the thread's hazard slots are all in use (here by
 * four context entries) pins the child instead: *hazard is
 * CUCTX_NO_HAZARD, the word counts one pin, the thread's used slots stay
 * as they were, and the let-go unpins (registry.h, cuctx__hold_child).
 * Mutants killed: lib/registry.c:399 `const` twice and `lcr` (the test for
 * a full record never true: the hold took a fifth "hazard slot", ids[4],
 * which is the record's next field), lib/registry.c:401 `ret` (the pin's
 * slot not returned: a live child's hold refused). */
Test(holds, a_childs_hold_beyond_the_hazard_slots_pins_it)
{
    uint64_t entries[CUCTX_HAZARDS];
    struct cuctx_slot *held[CUCTX_HAZARDS];
    unsigned hazard[CUCTX_HAZARDS];
    uint64_t child = make(KIND_STREAM, 0);
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(child));
    for (int i = 0; i < CUCTX_HAZARDS; i++) {
        entries[i] = make(KIND_ENTRY, 0);
        held[i] = cuctx__hold_own(entries[i], KIND_ENTRY, &hazard[i]);
        cr_assert_not_null(held[i]);
        cr_assert_neq(hazard[i], CUCTX_NO_HAZARD, "hold %d took no hazard slot", i);
    }
    cr_assert_eq(cuctx__me.registry.used, (1u << CUCTX_HAZARDS) - 1);
    unsigned h = 0;
    struct cuctx_slot *c = cuctx__hold_child(child, KIND_STREAM, &h);
    cr_assert_eq(c, s, "the live child's hold was refused");
    cr_assert_eq(h, CUCTX_NO_HAZARD, "the hold took hazard slot %u of a full record", h);
    cr_assert_eq(atomic_load(&s->word) & CUCTX_W_PINS, 1, "the hold is a pin");
    cr_assert_eq(cuctx__me.registry.used, (1u << CUCTX_HAZARDS) - 1);
    cuctx__unhold_child(c, h);
    cr_assert_eq(atomic_load(&s->word) & CUCTX_W_PINS, 0);
    for (int i = 0; i < CUCTX_HAZARDS; i++) {
        cuctx__unhold(held[i], hazard[i]);
        destroy(entries[i], KIND_ENTRY);
    }
    destroy(child, KIND_STREAM);
}

/* A child's hold refused because the child is closing (its generation held
 * before, so its drain scans the hazard slots) clears the hazard slot it
 * wrote: none of the thread's slots names the child, and the drain, here on
 * the same thread, has nothing to wait for. Mutant killed:
 * lib/registry.c:415 `call` (the slot left naming the child: the drain
 * would wait for ever for this thread's refused hold). */
Test(holds, a_childs_hold_refused_by_its_close_leaves_no_hazard_slot_naming_it)
{
    uint64_t child = make(KIND_STREAM, 0);
    unsigned h;
    struct cuctx_slot *c = cuctx__hold_child(child, KIND_STREAM, &h);
    cr_assert_not_null(c);
    cr_assert_neq(h, CUCTX_NO_HAZARD);
    cr_assert(held_bit(child), "the first hold marks the child held");
    cuctx__unhold_child(c, h);
    struct cuctx_slot *s = cuctx__close(child, KIND_STREAM);
    cr_assert_not_null(s);
    cr_assert_null(cuctx__hold_child(child, KIND_STREAM, &h), "a closing child's hold");
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    for (int i = 0; i < CUCTX_HAZARDS; i++)
        cr_assert_neq(atomic_load(&r->ids[i]), child, "hazard slot %d still names the refused child", i);
    cr_assert_eq(cuctx__me.registry.used, 0);
    cuctx__drain(s);
    cuctx__slot_free(s);
    cr_assert_not(cuctx__alive(child, KIND_STREAM));
}

/* ---- r2: the fork and the hazard records ---- */

/* Another thread, at the fork: pins the first slot of the table (an event)
 * and holds a child (a stream, marked held) in a hazard slot. */
struct left_behind {
    uint64_t event, stream;
    struct cuctx_hazard_rec *rec;
    _Atomic int ready, stop;
};

static void *pin_and_hold_across_fork(void *p)
{
    struct left_behind *o = p;
    unsigned h;
    struct cuctx_slot *pin = cuctx__pin(o->event, KIND_EVENT);
    struct cuctx_slot *held = cuctx__hold_child(o->stream, KIND_STREAM, &h);
    if (!pin || !held || h == CUCTX_NO_HAZARD)
        abort();
    o->rec = cuctx__me.registry.rec;
    atomic_store(&o->ready, 1);
    while (!atomic_load(&o->stop))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cuctx__unhold_child(held, h);
    cuctx__unpin(pin);
    return NULL;
}

static void *record_of_a_new_thread(void *p)
{
    (void)p;
    return cuctx__hazard_rec();
}

/* Closes, drains and frees id without the test's asserts (in a child). */
static int destroy_quietly(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__close(id, kind);
    if (!s)
        return -1;
    cuctx__drain(s);        /* (a hang here ends in in_child's SIGALRM) */
    cuctx__slot_free(s);
    return 0;
}

static int after_fork_without_them(void *p)
{
    struct left_behind *o = p;
    struct cuctx_slot *ev = cuctx__slot_find(cuctx__id_index(o->event));
    if (atomic_load(&ev->word) & CUCTX_W_PINS)
        return 1;   /* the first slot kept the pin of a thread the child does not have */
    for (int i = 0; i < CUCTX_HAZARDS; i++)
        if (atomic_load(&o->rec->ids[i]) == o->stream)
            return 2;   /* its hold of the stream too */
    if (destroy_quietly(o->stream, KIND_STREAM) || destroy_quietly(o->event, KIND_EVENT))
        return 3;
    pthread_t t;
    void *rec = NULL;
    if (pthread_create(&t, NULL, record_of_a_new_thread, NULL) || pthread_join(t, &rec) || !rec)
        return 4;
    return rec == cuctx__me.registry.rec ? 5 : 0;   /* 5: the forking thread's record given away */
}

/* In a forked child only the forking thread lives on: the holds and pins
 * the other threads had at the fork are gone (registry.c,
 * cuctx__registry_after_fork), also the pin of the table's first slot,
 * so that the child's destroys of a stream another thread held and of an
 * event it pinned end at once; the forking thread keeps its own record: a
 * thread the child starts takes another. Mutants killed:
 * lib/registry.c:282 `ror` (the other threads' records kept, the forking
 * thread's given back), :283 `call` (the other threads' records kept, with
 * their holds: the stream's drain waited for ever), :285 `const` (slot 0
 * skipped: the event kept the pin). */
Test(registry, a_forked_child_drops_the_holds_of_the_threads_left_behind)
{
    struct left_behind o = {.event = make(KIND_EVENT, 0)};
    cr_assert_eq(cuctx__id_index(o.event), 0, "the test's event is not the table's first slot");
    NEED_DRIVER();
    o.stream = make(KIND_STREAM, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pin_and_hold_across_fork, &o), 0);
    while (!atomic_load(&o.ready))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert(held_bit(o.stream), "the other thread's hold marks the stream held");
    int st = in_child(after_fork_without_them, &o);
    atomic_store(&o.stop, 1);
    pthread_join(t, NULL);
    cr_assert_neq(st, 1, "the child kept another thread's pin of the first slot");
    cr_assert_neq(st, 2, "the child kept another thread's hold of the stream");
    cr_assert_eq(st, 0, "the child's destroys or its new thread's record (%d)", st);
    destroy(o.stream, KIND_STREAM);
    destroy(o.event, KIND_EVENT);
}

static int drain_in_child_fences(void *p)
{
    (void)p;
    if (!cuctx__asymmetric)
        return 1;   /* the child's holders would fence for themselves */
    long before = atomic_load(&private_expedited);
    if (destroy_quietly(make(KIND_ENTRY, 3), KIND_ENTRY))
        return 2;
    return atomic_load(&private_expedited) - before == 1 ? 0 : 3;
}

/* The membarrier registration is made anew in a forked child, which stays
 * asymmetric where it succeeds: an entry's drain there makes one
 * successful membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0), as in the
 * parent (membarrier/the_drain_of_a_context_entry_makes_every_thread_fence).
 * Mutants killed: lib/registry.c:291 `lcr` and `not` (the child's
 * cuctx__asymmetric cleared where the process was registered: the drain
 * fenced only itself). */
Test(membarrier, a_forked_childs_drain_still_makes_every_thread_fence)
{
#ifndef SYS_membarrier
    cr_skip_test("no membarrier(2) on this system");
#else
    NEED_DRIVER();
    destroy(make(KIND_ENTRY, 0), KIND_ENTRY);   /* the registry set up: cuctx__asymmetric settled */
    if (!cuctx__asymmetric)
        cr_skip_test("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available here");
    int st = in_child(drain_in_child_fences, NULL);
    cr_assert_neq(st, 1, "the child is not asymmetric though its registration could succeed");
    cr_assert_eq(st, 0, "the child's drain (%d)", st);
#endif
}

#if defined(SYS_membarrier) && defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#ifdef CUCTX_GCOV_DUMP
void __gcov_dump(void);     /* libgcov's */
#endif

/* In a grandchild whose membarrier registration the seccomp filter of its
 * parent refused: the process is no longer asymmetric, and an entry's
 * drain makes no membarrier (it would fail) but fences itself. */
static int grandchild_unregistered(void)
{
    if (cuctx__asymmetric)
        return 1;
    long before = atomic_load(&private_expedited);
    if (destroy_quietly(make(KIND_ENTRY, 4), KIND_ENTRY))
        return 2;
    return atomic_load(&private_expedited) == before ? 0 : 3;
}

static int fork_refusing_registration(void *p)
{
    (void)p;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (!cuctx__asymmetric)
        return 10;  /* the child's own registration anew failed */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
        return 100;
    pid_t (*volatile fork_fn)(void) = fork;     /* (not gcov's __gcov_fork: see in_child) */
    pid_t pid = fork_fn();
    if (pid < 0)
        return 11;
    if (pid == 0) {
        int st = grandchild_unregistered();
#ifdef CUCTX_GCOV_DUMP
        __gcov_dump();
#endif
        _exit(st);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 12;
    return WEXITSTATUS(status);
}

/* Where a forked child's membarrier registration anew fails (here refused
 * by a seccomp filter the parent installed before forking it, the parent
 * itself asymmetric), the child is asymmetric no more: its holders fence
 * for themselves (registry.h, cuctx__holder_fence) and its drains fence
 * without membarrier. Mutant killed: lib/registry.c:292 `const` (the
 * child left asymmetric though unregistered: its holders' compiler barrier
 * ordered nothing, and its closers' membarrier failed). */
Test(membarrier, a_forked_child_whose_registration_fails_fences_for_itself)
{
    NEED_DRIVER();
    destroy(make(KIND_ENTRY, 0), KIND_ENTRY);   /* the registry set up: cuctx__asymmetric settled */
    if (!cuctx__asymmetric)
        cr_skip_test("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) is not available here");
    int st = in_child(fork_refusing_registration, NULL);
    if (st == 100)
        cr_skip_test("no seccomp filter can be installed here");
    cr_assert_neq(st, 10, "the child's registration anew failed");
    cr_assert_neq(st, 1, "the grandchild stayed asymmetric though its registration was refused");
    cr_assert_eq(st, 0, "the grandchild's drain (%d)", st);
}
#endif

/* ---- r2: a thread's hazard record, made or not ---- */
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define R2_OWN_ALIGNED_ALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define R2_OWN_ALIGNED_ALLOC 0
#endif
#endif
#ifndef R2_OWN_ALIGNED_ALLOC
#define R2_OWN_ALIGNED_ALLOC 1
#endif

#if R2_OWN_ALIGNED_ALLOC
/* This program's aligned_alloc, as its syscall above (the internal copy of
 * lib/ binds to it): it forwards to libc's, except on a thread that set
 * aligned_mode: 1, it fails (ENOMEM); 2, the block it hands out is dirty
 * (every byte 0xa5), as a block reused from the heap may be. */
static _Thread_local int aligned_mode, aligned_calls;

void *aligned_alloc(size_t alignment, size_t size)
{
    static void *(*_Atomic real)(size_t, size_t);
    void *(*f)(size_t, size_t) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "aligned_alloc");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    aligned_calls++;
    if (aligned_mode == 1) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = f(alignment, size);
    if (p && aligned_mode == 2)
        memset(p, 0xa5, size);
    return p;
}

/* Makes an event slot on a thread whose aligned_alloc does as mode says;
 * returns its record (or (void *)1 for none), NULL if the thread never
 * asked for a block. */
struct made_on_thread { int mode; uint64_t id; };

static void *make_event_on_thread(void *p)
{
    struct made_on_thread *m = p;
    aligned_mode = m->mode;
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (!s)
        return NULL;
    m->id = cuctx__slot_publish(s, KIND_EVENT);
    if (!aligned_calls)
        return NULL;
    return cuctx__me.registry.rec ? (void *)cuctx__me.registry.rec : (void *)1;
}
#endif

/* A thread whose hazard record cannot be allocated goes on without one and
 * counts its objects centrally (registry.c, live_unowned): the live count
 * of the kind takes in the object it made, and its destroy elsewhere
 * takes it out. Mutants killed: lib/registry.c:315 `ret` (the failed
 * allocation returned as a record: the thread crashed counting through
 * it), :340 `call` (the thread's object counted nowhere). */
Test(registry, a_thread_without_a_hazard_record_counts_its_objects_centrally)
{
#if !R2_OWN_ALIGNED_ALLOC
    cr_skip_test("aligned_alloc is the sanitizer's here");
#else
    int64_t before[KIND_COUNT], during[KIND_COUNT], after[KIND_COUNT];
    struct made_on_thread m = {.mode = 1};
    pthread_t t;
    void *rec = NULL;
    cuctx__live_counts(before);
    cr_assert_eq(pthread_create(&t, NULL, make_event_on_thread, &m), 0);
    cr_assert_eq(pthread_join(t, &rec), 0);
    if (!rec && m.id) {     /* this program's aligned_alloc never ran: valgrind's replaced it */
        destroy(m.id, KIND_EVENT);
        cr_skip_test("aligned_alloc is not this program's here (valgrind replaces it)");
    }
    cr_assert_eq(rec, (void *)1, "the thread has a record (%p)", rec);
    cuctx__live_counts(during);
    cr_assert_eq(during[KIND_EVENT], before[KIND_EVENT] + 1, "the live events: %lld, before %lld",
                 (long long)during[KIND_EVENT], (long long)before[KIND_EVENT]);
    destroy(m.id, KIND_EVENT);
    cuctx__live_counts(after);
    cr_assert_eq(after[KIND_EVENT], before[KIND_EVENT]);
#endif
}

/* A thread's new hazard record starts empty whatever its block held: it
 * holds nothing and has counted nothing but the one object the thread
 * made. Mutant killed: lib/registry.c:316 `call` (the record's memset
 * removed: the block's old bytes counted as live objects of every kind). */
Test(registry, a_new_hazard_record_starts_with_no_holds_and_no_counts)
{
#if !R2_OWN_ALIGNED_ALLOC
    cr_skip_test("aligned_alloc is the sanitizer's here");
#else
    int64_t before[KIND_COUNT], during[KIND_COUNT];
    struct made_on_thread m = {.mode = 2};
    pthread_t t;
    void *rec = NULL;
    cuctx__live_counts(before);
    cr_assert_eq(pthread_create(&t, NULL, make_event_on_thread, &m), 0);
    cr_assert_eq(pthread_join(t, &rec), 0);
    if (!rec && m.id) {
        destroy(m.id, KIND_EVENT);
        cr_skip_test("aligned_alloc is not this program's here (valgrind replaces it)");
    }
    cr_assert(rec != (void *)1, "the thread made no record of its own");
    struct cuctx_hazard_rec *r = rec;
    for (int i = 0; i < CUCTX_HAZARDS; i++)
        cr_assert_eq(atomic_load(&r->ids[i]), 0, "hazard slot %d of the ended thread's record", i);
    cuctx__live_counts(during);
    for (unsigned k = KIND_CTX_HANDLE; k < KIND_COUNT; k++)
        cr_assert_eq(during[k], before[k] + (k == KIND_EVENT), "kind %u: %lld live, before %lld", k,
                     (long long)during[k], (long long)before[k]);
    destroy(m.id, KIND_EVENT);
#endif
}

/* ---- survivors of lib/context.c (c1) ---- */

static CUresult c1_create_ctx(struct locked_call *l)
{
    return cuctx_ctx_create(&l->c, 0, 0);
}

/* An owned context's create registers it (its entry, then its handle)
 * under the context lock: with the lock held by another thread the create
 * waits there, past the driver's cuCtxCreate, and finishes once the lock
 * is let go. No other acquisition of the lock comes first on that path
 * (the claim, cuctx__create_pushed and cuctx__ctx_id take none). Mutant
 * killed: lib/context.c:65 `call` (cuctx__ctx_lock() removed: the create
 * went through while the lock was held, and its unlock let go of the
 * test's). */
Test(ctx_lock, a_context_create_registers_it_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = c1_create_ctx, .rc = CUDA_ERROR_UNKNOWN};
    unsigned long creates = calls("cuCtxCreate");
    size_t entries = live_entries();
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long created = calls("cuCtxCreate") - creates;
    uint64_t handle_meanwhile = l.c.id;
    size_t entries_meanwhile = live_entries();
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the create went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the create neither waited for the lock nor returned in 10 s");
    cr_assert_eq(created, 1, "the create waited for the lock before its cuCtxCreate");
    cr_assert_eq(handle_meanwhile, 0, "the handle was handed out before the lock was had");
    cr_assert_eq(entries_meanwhile, entries, "the entry was registered before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(live_entries(), entries + 1);
    CHECK_OK(cuctx_ctx_destroy(&l.c));
    cr_assert_eq(live_entries(), entries);
    cr_assert_eq(misuses(), 0);
}

static CUresult c1_retain_primary(struct locked_call *l)
{
    return cuctx_ctx_primary(&l->c, 0);
}

/* A primary retain takes the context lock before the driver's
 * cuDevicePrimaryCtxRetain (its count and entry are settled under it, so
 * that no release runs between): with the lock held by another thread the
 * retain waits before the driver is asked, and finishes once the lock is
 * let go. No other acquisition of the lock comes first on that path (the
 * claim takes none). Mutant killed: lib/context.c:89 `call`
 * (cuctx__ctx_lock() removed: the retain went through while the lock was
 * held). */
Test(ctx_lock, a_primary_retain_takes_the_context_lock_before_the_driver, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = c1_retain_primary, .rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_init());
    unsigned long retains = calls("cuDevicePrimaryCtxRetain");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long retained = calls("cuDevicePrimaryCtxRetain") - retains;
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the retain went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the retain neither waited for the lock nor returned in 10 s");
    cr_assert_eq(retained, 0, "the primary was retained before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), retains + 1);
    cr_assert_eq(sim()->primary_refs(0), 1);
    CHECK_OK(cuctx_ctx_destroy(&l.c));
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(misuses(), 0);
}

static CUresult c1_reset_primary(struct locked_call *l)
{
    (void)l;
    return cuctx_ctx_primary_reset(0);
}

/* A primary reset finds the primary's entry, closes it and resets the
 * context under the context lock: with the lock held by another thread
 * the reset waits before it asks the driver anything, and finishes once
 * the lock is let go (the entry then ended). Mutant killed:
 * lib/context.c:160 `call` (cuctx__ctx_lock() removed: the reset went
 * through while the lock was held). */
Test(ctx_lock, a_primary_reset_takes_the_context_lock_before_the_driver, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx p = {0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext raw = cuctx_ctx_raw(p);
    cr_assert_neq(cuctx__map_find(raw), 0);
    struct locked_call l = {.call = c1_reset_primary, .rc = CUDA_ERROR_UNKNOWN};
    unsigned long resets = calls("cuDevicePrimaryCtxReset");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long reset = calls("cuDevicePrimaryCtxReset") - resets;
    uint64_t mapped_meanwhile = cuctx__map_find(raw);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the reset went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the reset neither waited for the lock nor returned in 10 s");
    cr_assert_eq(reset, 0, "the primary was reset before the lock was had");
    cr_assert_neq(mapped_meanwhile, 0, "the entry left the address map before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_eq(calls("cuDevicePrimaryCtxReset"), resets + 1);
    cr_assert_eq(cuctx__map_find(raw), 0, "the reset context's entry stayed in the address map");
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(sim()->primary_refs(0), 0);
    cr_assert_eq(misuses(), 0);
}

/* A borrowed handle's destroy gives its name of the entry back under the
 * context lock (a borrow's entry ends with its last name): with the lock
 * held by another thread the destroy waits there, its handle already
 * gone and the entry still mapped, and finishes once the lock is let go,
 * the entry ended. No other acquisition of the lock comes first on that
 * path (handle_destroy's close, drain and free take none). Mutant killed:
 * lib/context.c:307 `call` (cuctx__ctx_lock() removed: the destroy went
 * through while the lock was held). */
Test(ctx_lock, a_borrowed_handles_destroy_gives_its_name_back_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    CUcontext raw = raw_ctx_create(0, POPPED);
    struct locked_call l = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    size_t map0 = cuctx__map_count();
    CHECK_OK(cuctx_ctx_borrow(&l.c, raw));
    cr_assert_eq(cuctx__map_count(), map0 + 1);
    uint64_t handle = l.c.id;
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    size_t mapped_meanwhile = cuctx__map_count();
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the borrow's destroy went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the borrow's destroy neither waited for the lock nor returned in 10 s");
    cr_assert_eq(mapped_meanwhile, map0 + 1, "the borrow's entry ended before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_not(cuctx__alive(handle, KIND_CTX_HANDLE));
    cr_assert_eq(cuctx__map_count(), map0, "the borrow's entry outlived its last handle");
    raw_ctx_destroy(raw);
    cr_assert_eq(misuses(), 0);
}

/* cuctx_ctx_raw reads an owned context's entry without holding it (the
 * accessors' comment, context.c): asked of an owned context other than
 * the one this thread held last, it leaves the thread's entry at hand
 * (cuctx__me.entry.last, which only a hold through an owned handle sets)
 * as it was. Mutant killed: lib/context.c:407 `lcr` (`||` made `&&`: the
 * read was taken only after the short path matched, so every other owned
 * context's address came through a hold). */
Test(registry, the_address_of_an_owned_context_is_read_without_a_hold)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, POPPED);
    CUcontext rb = new_ctx(&b, 0, NULL, POPPED);
    CHECK_OK(cuctx_ctx_synchronize(a));
    cr_assert_eq(cuctx__me.entry.last.handle, a.id, "the hold through a was not kept at hand");
    cr_assert_eq(cuctx_ctx_raw(b), rb);
    cr_assert_eq(cuctx__me.entry.last.handle, a.id, "cuctx_ctx_raw held b's entry");
    cr_assert_eq(cuctx_ctx_raw(a), ra);
    cr_assert_eq(cuctx__me.entry.last.handle, a.id);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- survivors of lib/registry.c, whole-file survey (r1) ---------------------- */

#include <limits.h>
#include <sys/mman.h>

/* Where Linux offers membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (the
 * test asks the kernel itself), the registry registers for it at its setup
 * (cuctx__asymmetric), and the drain of a context entry then makes one
 * such barrier that succeeds. The membarrier test above skips where the
 * registry did not register, so it could not tell a registration that
 * failed here. Mutants killed: lib/registry.c:248 `const` (the query asked
 * with flags 1: EINVAL) and lib/registry.c:250 `const` (the registration
 * asked with flags 1: EINVAL): holders fenced themselves, the drain made no
 * barrier (registry survey). */
Test(membarrier, where_linux_offers_the_expedited_barrier_the_drain_of_an_entry_makes_it)
{
#ifndef SYS_membarrier
    cr_skip_test("no membarrier(2) on this system");
#else
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        cr_skip_test("the kernel does not offer membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)");
    long before = atomic_load(&private_expedited);
    destroy(make(KIND_ENTRY, 0), KIND_ENTRY);
    long fences = atomic_load(&private_expedited) - before;
    cr_assert(cuctx__asymmetric, "the kernel offers the expedited barrier, the registry did not register for it");
    cr_assert_eq(fences, 1, "%ld successful membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) by the drain", fences);
#endif
}

/* A thread lets go of a pin that is not its last listed one (the first of
 * three), then ends holding the other two: its exit lets go of exactly
 * those, and the pin it let go of is not let go of again (here it would
 * take away the pin this thread holds on the same slot). Mutants killed:
 * lib/registry.c:186 `const` (`i-- > 1`: the list's first entry never
 * looked at, so the pin let go of stayed listed and the exit let go of it
 * a second time) and lib/registry.c:187 `ror` (`!=`: the wrong entry taken
 * off the list, so the exit let go of the first pin again and left the
 * third counted for good) (registry survey). */
static void *pin_three_let_go_of_the_first(void *p)
{
    const uint64_t *id = p;
    struct cuctx_slot *s[3];
    for (int i = 0; i < 3; i++)
        if (!(s[i] = cuctx__pin(id[i], KIND_EVENT)))
            return NULL;
    cuctx__unpin(s[0]);     /* not the last listed: cuctx__unpin_listed */
    return s[0];            /* ends with the second and third pinned */
}

static unsigned pins_of(uint64_t id)
{
    return (unsigned)(atomic_load(&cuctx__slot_find(cuctx__id_index(id))->word) & CUCTX_W_PINS);
}

Test(registry, a_pin_let_go_out_of_order_leaves_the_exit_the_others)
{
    uint64_t id[3];
    for (int i = 0; i < 3; i++)
        id[i] = make(KIND_EVENT, 300 + (uint64_t)i);
    struct cuctx_slot *mine = cuctx__pin(id[0], KIND_EVENT);
    cr_assert_not_null(mine);
    pthread_t t;
    void *ok = NULL;
    cr_assert_eq(pthread_create(&t, NULL, pin_three_let_go_of_the_first, id), 0);
    cr_assert_eq(pthread_join(t, &ok), 0);
    cr_assert_not_null(ok, "the thread could not pin the three events");
    cr_assert_eq(pins_of(id[0]), 1, "the first event has %u pins, this thread's only expected", pins_of(id[0]));
    cr_assert_eq(pins_of(id[1]), 0, "the ended thread's pin of the second event is still counted");
    cr_assert_eq(pins_of(id[2]), 0, "the ended thread's pin of the third event is still counted");
    cuctx__unpin(mine);
    for (int i = 0; i < 3; i++)
        destroy(id[i], KIND_EVENT);
}

/* A handle freed by a destructor of another key in the last round of a
 * thread's exit (glibc runs PTHREAD_DESTRUCTOR_ITERATIONS rounds at most),
 * after the registry's cache_flush ran in that round: its slot goes to the
 * shared list (registry.c: "from here on this thread frees to the shared
 * list, never to a cache nobody will flush again"), so the next create
 * elsewhere takes it. Mutant killed: lib/registry.c:142 `const` (the
 * flushed cache marked unregistered (0), not exiting (-1): the late free
 * registered the cache anew and cached the slot, with no round left to
 * flush it) (registry survey). */
static pthread_key_t late_key;
static uint64_t late_id;
static _Atomic int late_rounds, late_freed;

static void late_free(void *arg)
{
    int round = atomic_fetch_add(&late_rounds, 1) + 1;
    if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        pthread_setspecific(late_key, arg);     /* one more round */
        return;
    }
    destroy(late_id, KIND_EVENT);
    atomic_store(&late_freed, 1);
}

static void *free_in_the_last_destructor_round(void *p)
{
    (void)p;
    destroy(make(KIND_EVENT, 1), KIND_EVENT);   /* the thread's cache registered */
    /* a key made after the cache's: its destructor runs after cache_flush in each round */
    if (pthread_key_create(&late_key, late_free) != 0)
        return NULL;
    late_id = make(KIND_EVENT, 2);
    pthread_setspecific(late_key, &late_id);
    return &late_id;
}

Test(registry, a_handle_freed_after_its_threads_cache_was_flushed_goes_to_the_shared_list)
{
    pthread_t t;
    void *made = NULL;
    cr_assert_eq(pthread_create(&t, NULL, free_in_the_last_destructor_round, NULL), 0);
    cr_assert_eq(pthread_join(t, &made), 0);
    cr_assert_not_null(made, "the thread could not make its key");
    cr_assert(atomic_load(&late_freed), "the destructor ran %d rounds, never the last", atomic_load(&late_rounds));
    cr_assert_eq(cuctx__me.registry.ncache, 0, "this thread has slots of its own");
    uint64_t next = make(KIND_EVENT, 3);
    cr_assert_eq(cuctx__id_index(next), cuctx__id_index(late_id),
                 "the slot freed in the thread's last destructor round went to a cache nobody flushes");
    destroy(next, KIND_EVENT);
    pthread_key_delete(late_key);
}

/* A thread whose slot cache could not be registered (the cache key's
 * pthread_setspecific failed) frees to the shared list for the rest of its
 * life, not only that once (registry.c: "a thread whose registration
 * failed ... frees to the shared list"): while it lives, another thread's
 * create takes the slot it freed last. Mutant killed: lib/registry.c:161
 * `const` (a failure marked 0, not -1: the next free registered again and
 * kept its slot to itself) (registry survey). */
struct refused_cache { uint64_t first, second; int refused_was_the_cache; pthread_barrier_t freed, done; };

static void *free_twice_without_a_cache(void *p)
{
    struct refused_cache *r = p;
    r->first = make(KIND_EVENT, 1);
    r->second = make(KIND_EVENT, 2);            /* the hazard record bound before */
    refuse_setspecific = 1;
    destroy(r->first, KIND_EVENT);              /* the cache's registration refused */
    r->refused_was_the_cache = refused_value == (const void *)&cuctx__me;
    destroy(r->second, KIND_EVENT);
    pthread_barrier_wait(&r->freed);
    pthread_barrier_wait(&r->done);             /* alive until told */
    return NULL;
}

Test(registry, a_thread_refused_a_slot_cache_frees_to_the_shared_list_for_good)
{
    struct refused_cache r = {0};
    pthread_t t;
    cr_assert_eq(pthread_barrier_init(&r.freed, NULL, 2), 0);
    cr_assert_eq(pthread_barrier_init(&r.done, NULL, 2), 0);
    cr_assert_eq(pthread_create(&t, NULL, free_twice_without_a_cache, &r), 0);
    pthread_barrier_wait(&r.freed);
    cr_assert_eq(cuctx__me.registry.ncache, 0, "this thread has slots of its own");
    uint64_t next = make(KIND_EVENT, 3);
    pthread_barrier_wait(&r.done);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert(r.refused_was_the_cache, "the refused pthread_setspecific was not the slot cache's");
    cr_assert_eq(cuctx__id_index(next), cuctx__id_index(r.second),
                 "the slot freed after the refused registration stayed in the thread's cache");
    destroy(next, KIND_EVENT);
    pthread_barrier_destroy(&r.freed);
    pthread_barrier_destroy(&r.done);
}

/* A forked child has only the forking thread: the holds that the other
 * threads' hazard records showed at the fork are gone with them, so the
 * child's destroy of a stream another thread was holding (a child held
 * through the hazard slots, as a stream-ordered allocation holds its
 * stream: its close scans them) drains at once. (Entries end at the fork
 * anyway, so only a held child still has a close there to wait.) The other
 * thread holds the stream in its first hazard slot (its first hold).
 * Mutants killed: lib/registry.c:240 `const` (hazard_release begun at slot
 * 1: the record's slot 0 kept the id) and lib/registry.c:241 `call` (no
 * slot cleared): the child's drain waited for ever (registry survey). */
struct held_elsewhere {
    uint64_t id;
    struct cuctx_hazard_rec *rec;
    unsigned hazard;
    _Atomic int held, stop;
};

static void *hold_until_told(void *p)
{
    struct held_elsewhere *h = p;
    struct cuctx_slot *s = cuctx__hold_child(h->id, KIND_STREAM, &h->hazard);
    if (!s)
        return NULL;
    h->rec = cuctx__me.registry.rec;
    atomic_store(&h->held, 1);
    while (!atomic_load(&h->stop))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cuctx__unhold(s, h->hazard);
    return s;
}

static int destroy_held_in_child(void *p)
{
    struct held_elsewhere *h = p;
    for (unsigned i = 0; i < CUCTX_HAZARDS; i++)
        if (atomic_load(&h->rec->ids[i]))
            return 1;   /* the hold of a thread the child does not have outlived the fork */
    struct cuctx_slot *s = cuctx__close(h->id, KIND_STREAM);
    if (!s)
        return 2;
    cuctx__drain(s);    /* (the held bit: it scans the hazard slots) */
    cuctx__slot_free(s);
    return cuctx__alive(h->id, KIND_STREAM) ? 3 : 0;
}

Test(registry, a_forked_childs_drain_of_a_stream_another_thread_held_ends_at_once)
{
    NEED_DRIVER();      /* cuctx_init: the fork hooks */
    struct held_elsewhere h = {.id = make(KIND_STREAM, 7)};
    pthread_t t;
    void *held = NULL;
    cr_assert_eq(pthread_create(&t, NULL, hold_until_told, &h), 0);
    for (int ms = 0; ms < 10000 && !atomic_load(&h.held); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert(atomic_load(&h.held), "the thread could not hold the stream");
    cr_assert_eq(h.hazard, 0, "the thread's first hold is in its first hazard slot");
    cr_assert_eq(atomic_load(&h.rec->ids[0]), h.id);
    cr_assert(atomic_load(&cuctx__slot_find(cuctx__id_index(h.id))->word) & CUCTX_W_HELD,
              "the stream's close would not scan the hazard slots");
    int st = in_child(destroy_held_in_child, &h);
    atomic_store(&h.stop, 1);
    cr_assert_eq(pthread_join(t, &held), 0);
    cr_assert_neq(st, 1, "the child kept the hold of a thread it does not have");
    cr_assert_eq(st, 0, "the child's destroy of the stream (%d)", st);
    destroy(h.id, KIND_STREAM);
}

/* This program's mmap, as its syscall above: it forwards to libc's, except
 * on a thread that armed it (mmap_record), where it also counts the calls
 * and keeps the last one's arguments, and, with mmap_refuse, fails them
 * with ENOMEM without mapping anything. */
static _Thread_local int mmap_record, mmap_refuse;
static _Thread_local unsigned long mmap_asked;
static _Thread_local struct { size_t len; int prot, flags, fd; off_t off; } mmap_last;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *(*_Atomic real)(void *, size_t, int, int, int, off_t);
    void *(*f)(void *, size_t, int, int, int, off_t) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "mmap");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    if (mmap_record) {
        mmap_asked++;
        mmap_last.len = len;
        mmap_last.prot = prot;
        mmap_last.flags = flags;
        mmap_last.fd = fd;
        mmap_last.off = off;
        if (mmap_refuse) {
            errno = ENOMEM;
            return MAP_FAILED;
        }
    }
    return f(addr, len, prot, flags, fd, off);
}

/* A segment of the table is private anonymous memory, asked with fd -1:
 * Linux ignores the fd of an anonymous mapping, but "some implementations
 * require fd to be -1 if MAP_ANONYMOUS is specified, and portable
 * applications should ensure this" (mmap(2)). Mutant killed:
 * lib/registry.c:83 `const` (fd -0, which is 0: standard input) (registry
 * survey). */
Test(registry, a_new_segment_is_private_anonymous_memory_asked_with_no_file)
{
    mmap_record = 1;
    for (unsigned long n = 0; !mmap_asked && n <= 2ul << CUCTX_SEG_BITS; n++)
        cr_assert_not_null(cuctx__slot_alloc());    /* kept: the table grows to its next segment */
    mmap_record = 0;
    cr_assert_eq(mmap_asked, 1, "no segment, or more than one, asked for");
    cr_assert_eq(mmap_last.len, CUCTX_SEG_BYTES);
    cr_assert_eq(mmap_last.prot, PROT_READ | PROT_WRITE);
    cr_assert_eq(mmap_last.flags, MAP_PRIVATE | MAP_ANONYMOUS);
    cr_assert_eq(mmap_last.fd, -1, "an anonymous mapping asked with fd %d", mmap_last.fd);
    cr_assert_eq(mmap_last.off, 0);
}

/* The table holds CUCTX_ID_INDEX_LIMIT slots (an id has 26 bits of
 * index). Reaching the limit takes no memory here: with mmap refused, each
 * index of a segment not yet made is lost (fresh_slot: "the index is
 * lost"), so 2^26 refused creates use them all up. From the limit on, a
 * create is refused without asking for a segment past the table's end
 * (cuctx__segments has CUCTX_SEG_COUNT of them), and the walk over every
 * slot handed out (cuctx__slot_foreach: the leak report, the stats) still
 * finds exactly the live ones. Mutant killed: lib/registry.c:72 `ror`
 * (`index > CUCTX_ID_INDEX_LIMIT`: the index at the limit went on, read
 * cuctx__segments[CUCTX_SEG_COUNT], past the array, and asked for a
 * segment there) (registry survey). In the --enable-asan build it also
 * kills lib/registry.c:73 `call` and `const` (the lost index at the limit
 * not given back: next_index grew past the limit, and the walk read
 * cuctx__segments past its end, a global-buffer-overflow; in a plain build
 * the word there, live_unowned[0], is always 0 and reads as no segment). */
static void count_live_events(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    (void)s;
    if (kind == KIND_EVENT)
        ++*(unsigned long *)arg;
}

Test(registry, a_full_table_refuses_a_create_and_asks_for_no_segment_past_its_end, .timeout = 60)
{
    uint64_t live = make(KIND_EVENT, 1);
    unsigned mapped = 0;
    while (mapped < CUCTX_SEG_COUNT && atomic_load(&cuctx__segments[mapped]))
        mapped++;
    mmap_record = mmap_refuse = 1;
    for (;;) {
        unsigned long asked = mmap_asked;
        if (cuctx__slot_alloc())
            continue;       /* the rest of the segments made: kept */
        if (mmap_asked == asked)
            break;          /* refused without asking: full */
    }
    unsigned long asked = mmap_asked;
    for (int i = 0; i < 3; i++)
        cr_assert_null(cuctx__slot_alloc(), "a create past the limit");
    mmap_record = mmap_refuse = 0;
    cr_assert_eq(mmap_asked, asked, "a create past the limit asked for a segment");
    cr_assert_eq(asked, (unsigned long)(CUCTX_SEG_COUNT - mapped) << CUCTX_SEG_BITS,
                 "%lu segments asked for, one for each index of the %u segments not made expected", asked,
                 CUCTX_SEG_COUNT - mapped);
    unsigned long events = 0;
    cuctx__slot_foreach(count_live_events, &events);
    cr_assert_eq(events, 1, "the walk over the full table found %lu events", events);
    destroy(live, KIND_EVENT);
    uint64_t again = make(KIND_EVENT, 2);
    cr_assert_eq(cuctx__id_index(again), cuctx__id_index(live), "the full table did not hand out a slot freed in it");
    destroy(again, KIND_EVENT);
}

/* This program's sched_yield, as its syscall above: it forwards to libc's
 * and counts the calling thread's yields. */
static _Thread_local unsigned long yields;

int sched_yield(void)
{
    static int (*_Atomic real)(void);
    int (*f)(void) = atomic_load(&real);
    if (!f) {
        *(void **)&f = dlsym(RTLD_NEXT, "sched_yield");
        if (!f)
            abort();
        atomic_store(&real, f);
    }
    yields++;
    return f();
}

/* A drain that waits for a hold on another thread first yields the
 * processor a few rounds, then sleeps (registry.c's backoff: "a few
 * yields, then sleeps that double up to a millisecond"): here the closer
 * is seen asleep in nanosleep before the hold is let go, and it had
 * yielded before. Mutant killed: lib/registry.c:60 `call` (the yield
 * removed: the first rounds spun without giving the processor up)
 * (registry survey). */
struct yielding_drain { uint64_t id; unsigned long yields; };

static CUresult drain_held_entry(struct locked_call *l)
{
    struct yielding_drain *y = l->arg;
    unsigned long before = yields;
    struct cuctx_slot *s = cuctx__close(y->id, KIND_ENTRY);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    cuctx__drain(s);
    cuctx__slot_free(s);
    y->yields = yields - before;
    return CUDA_SUCCESS;
}

Test(registry, a_drain_waiting_for_a_hold_yields_before_it_sleeps, .timeout = 30)
{
    NEED_PROC_SYSCALL();
    struct other_hold o = {.id = make(KIND_ENTRY, 1)};
    struct yielding_drain y = {.id = o.id};
    struct locked_call l = {.call = drain_held_entry, .arg = &y, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t holder, closer;
    cr_assert_eq(pthread_create(&holder, NULL, hold_meanwhile, &o), 0);
    while (!atomic_load(&o.held))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    int st = returns_or_sleeps(&l, &closer, in_backoff_sleep);
    atomic_store(&o.stop, 1);
    pthread_join(holder, NULL);
    pthread_join(closer, NULL);
    cr_assert_eq(st, 1, "the drain did not wait for the hold (%d)", st);
    CHECK_OK(l.rc);
    cr_assert_gt(y.yields, 0, "the drain slept without yielding first");
}

/* ---- survivors of lib/entry.c (e2) ---- */

/* wait_event, then the thread stays (parked until go) with whatever the
 * call left held: a thread's exit would let go of it. */
struct e2_parked { struct two w; CUresult rc; _Atomic int called, go; };

static CUresult e2_wait_event_then_park(struct locked_call *l)
{
    struct e2_parked *p = l->arg;
    p->rc = cuctx_stream_wait_event(p->w.s, p->w.ev);
    atomic_store(&p->called, 1);
    while (!atomic_load(&p->go))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return p->rc;
}

/* A call on two contexts whose second - a primary context - was closing
 * while cuctx released it, the close abandoned (an outside retain keeps the
 * context): the call waits for the verdict with nothing held, holds the
 * primary to see it decided, lets it go, and takes both again
 * (cuctx__entry_hold_beside). Each hold of the primary after the wait checks
 * its id (entry.c: a failed or missing check proves nothing, every later
 * hold checks again): with the settle's own, three cuCtxGetId on the
 * primary. Once the call has returned, its thread (still running) holds
 * nothing: a reset of the primary context on another thread does not wait
 * for it. Mutants killed: lib/entry.c:452 `const` (the hold after the wait
 * not checking the id: two cuCtxGetId) and lib/entry.c:473 `call` (the hold
 * taken to see the verdict never let go: the reset waited for the calling
 * thread). */
Test(drain, a_call_that_waited_out_an_abandoned_close_checks_the_primary_and_keeps_no_hold, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx y = {0};
    struct e2_parked p = {.rc = CUDA_ERROR_UNKNOWN};
    struct locked_call releaser = {.call = destroy_ctx, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call waiter = {.call = e2_wait_event_then_park, .arg = &p, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call resetter = {.call = reset_primary, .rc = CUDA_ERROR_UNKNOWN};
    new_ctx(&y, 0, NULL, POPPED);
    CHECK_OK(cuctx_stream_create(&p.w.s, y, 0, 0));
    CHECK_OK(cuctx_ctx_primary(&releaser.c, 0));
    uint64_t prim = (uint64_t)(uintptr_t)cuctx_ctx_raw(releaser.c);
    CHECK_OK(cuctx_event_create(&p.w.ev, releaser.c, 0));
    cr_assert_eq(sim()->primary_outside_retain(0), 0);
    pthread_t tr, tw, tx;
    sim()->hold_after("cuDevicePrimaryCtxRelease");
    cr_assert_eq(pthread_create(&tr, NULL, run_locked_call, &releaser), 0);
    until_sim_holds(1);     /* the primary's entry closing, the release inside the driver */
    int waiting = returns_or_sleeps(&waiter, &tw, in_backoff_sleep);
    size_t mark = log_mark();
    sim()->let_go();        /* the release; the entry reopens (the context lives) */
    pthread_join(tr, NULL);
    int called = 0;
    for (int ms = 0; ms < 10000 && !(called = atomic_load(&p.called)); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    unsigned long ids = calls_on("cuCtxGetId", prim, mark);
    int blocked = called ? returns_or_sleeps(&resetter, &tx, in_backoff_sleep) : -2;
    atomic_store(&p.go, 1);
    pthread_join(tw, NULL);
    if (blocked != -2)
        pthread_join(tx, NULL);
    cr_assert_eq(waiting, 1, "the call on the closing context did not wait for the close (%d)", waiting);
    cr_assert(called, "the call did not return within 10 s of the release");
    CHECK_OK(releaser.rc);
    CHECK_OK(p.rc);
    cr_assert_eq(ids, 3, "cuCtxGetId on the primary context after the release: %lu, want 3 (the settle, the "
                 "hold after the wait, the hold beside the first context)", ids);
    cr_assert_neq(blocked, 1, "the primary's reset waited: the returned call's thread still held the context");
    cr_assert_eq(blocked, 0, "the reset neither returned nor waited in 10 s");
    CHECK_OK(resetter.rc);
    cr_assert_eq(calls("cuStreamWaitEvent"), 1);
    CHECK_OK(cuctx_event_destroy(&p.w.ev));
    CHECK_OK(cuctx_stream_destroy(&p.w.s));
    CHECK_OK(cuctx_ctx_destroy(&y));
    cr_assert_eq(sim()->primary_outside_release(0), 0);
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/entry.c (e1) ---- */

/* Whether the calling thread's cancelability is enabled (left so). */
static int e1_cancel_enabled(void)
{
    int old = -1;
    cr_assert_eq(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    return old == PTHREAD_CANCEL_ENABLE;
}

/* The context lock disables cancellation while it is held only: a cuctx
 * call that took it (a borrow registers its context under it), or that
 * retired an entry it found gone (entry_retire, which also keeps
 * cancellation off from the close to the free), leaves its caller's
 * cancelability as it found it. Mutants killed: lib/entry.c:46 `call`
 * (cuctx__ctx_unlock not restoring the state: every thread that took the
 * lock could never be cancelled again) and lib/entry.c:180 `call`
 * (entry_retire not restoring it). */
Test(ctx_lock, a_call_that_took_the_lock_or_retired_an_entry_leaves_cancellation_enabled)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    cr_assert(e1_cancel_enabled());
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0, "the borrow registered no entry");
    cr_assert(e1_cancel_enabled(), "the borrow left cancellation disabled");
    raw_ctx_destroy(raw);
    unsigned long checks = calls("cuCtxGetId"), creates = calls("cuEventCreate");
    cr_assert_eq(cuctx_event_create(&ev, b, 0), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_gt(calls("cuCtxGetId"), checks, "the create did not check the context");
    cr_assert_eq(calls("cuEventCreate"), creates);
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the entry found gone was not retired");
    cr_assert(e1_cancel_enabled(), "the retire of the entry left cancellation disabled");
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert(e1_cancel_enabled(), "the borrow's destroy left cancellation disabled");
    cr_assert_eq(misuses(), 0);
}

/* (a graph of the parent's, and the checks its destroy in a forked child
 * fails: 0 when all held) */
static int e1_destroy_parents_graph_in_child(void *p)
{
    cuctx_graph *g = p;
    uint64_t id = g->id;
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    if (s->u.child.entry != CUCTX__ENTRY_NEVER)
        return 1;   /* the graph was not marked as of no context of the child's */
    unsigned long destroys = calls("cuGraphDestroy");
    uint64_t skips = stats().stale_skips;
    if (cuctx_graph_destroy(g) != CUDA_SUCCESS || g->id != 0)
        return 2;
    if (calls("cuGraphDestroy") != destroys)
        return 3;   /* the parent's graph reached the child's driver */
    if (stats().stale_skips != skips + 1 || cuctx__alive(id, KIND_GRAPH))
        return 4;
    return 0;
}

/* The parent's side of a forked child's check (in_child) of the parent's
 * graph, a kind in no context: the child's check passes (hint: what its
 * codes mean), the parent's graph is as it was (in no context), and the
 * parent's own destroy of it is the only one that reaches the driver,
 * leaving no graph and no misuse. */
static void the_parents_graph_through_a_childs_check(int (*check)(void *), const char *hint)
{
    cuctx_graph g = {0};
    CHECK_OK(cuctx_graph_create(&g));
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(g.id));
    cr_assert_eq(s->u.child.entry, 0, "a graph is in no context");
    int st = in_child(check, &g);
    cr_assert_eq(st, 0, "the child's check %d failed%s", st, hint);
    cr_assert_eq(s->u.child.entry, 0, "the parent's graph changed by the child's fork handler");
    cr_assert_eq(calls("cuGraphDestroy"), 0, "the child's destroy counted in the parent's driver");
    CHECK_OK(cuctx_graph_destroy(&g));
    cr_assert_eq(calls("cuGraphDestroy"), 1, "the parent's destroy did not reach the driver");
    cr_assert_eq(sim()->live(CUSIM_GRAPH), 0);
    cr_assert_eq(misuses(), 0);
}

/* A graph belongs to no context, so no entry's end skips its destroy; in
 * a forked child the fork handler marks it as in a context that never
 * lives (the parent's graph is not the child's driver's), so that its
 * destroy there is skipped, counted, and never reaches the driver - while
 * the parent's own destroy still does. Run through in_child, whose child
 * dumps its gcov counters, so that the mutation tool sees the fork
 * handler's lines run (test_graphs' own fork test forks directly).
 * Mutants killed: lib/entry.c:99 `ror` (`kind != KIND_CTX_HANDLE`: every
 * child taken for a context handle, the graph left unmarked) and
 * lib/entry.c:101 `const`, `not`, `ror` (the graph, of entry 0, left
 * unmarked). */
Test(registry, a_forked_childs_destroy_of_a_parents_graph_is_skipped)
{
    NEED_DRIVER();
    NEED_SIM();
    the_parents_graph_through_a_childs_check(e1_destroy_parents_graph_in_child, "");
}

/* (a fork whose child only ends; its result in l->rc) */
static int e1_child_exits(void *p)
{
    (void)p;
    return 0;
}

static CUresult e1_fork(struct locked_call *l)
{
    (void)l;
    return in_child(e1_child_exits, NULL) == 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

/* fork waits for the context lock (process.c's prepare handler), so that
 * the child never inherits it taken by a thread it does not have: with
 * the lock held by another thread a fork waits, and goes through once the
 * lock is let go. Mutant killed: lib/entry.c:55 `call` (the prepare
 * handler's pthread_mutex_lock removed: the fork went through while the
 * lock was held, and the parent's handler let go of the holder's lock). */
Test(ctx_lock, a_fork_waits_for_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    struct locked_call l = {.call = e1_fork, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    int done_meanwhile = atomic_load(&l.done);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the fork went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the fork neither waited for the lock nor returned in 10 s");
    cr_assert_eq(done_meanwhile, 0);
    CHECK_OK(l.rc);
}

/* A borrowed context that its owner destroyed is found gone by the next
 * hold, which retires its entry under the context lock (entry_retire:
 * the close and the address map's removal): with the lock held by another
 * thread the call waits there, after its cuCtxGetId, and returns
 * CONTEXT_IS_DESTROYED once the lock is let go. No other acquisition of
 * the lock comes first on that path (the event's hold and check take
 * none). Mutant killed: lib/entry.c:171 `call` (cuctx__ctx_lock() in
 * entry_retire removed: the retire went through while the lock was held,
 * and its unlock let go of the holder's lock). */
Test(ctx_lock, a_retired_entry_leaves_the_address_map_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    raw_ctx_destroy(raw);
    struct locked_call l = {.call = query_event, .arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    unsigned long checks = calls("cuCtxGetId");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long checked = calls("cuCtxGetId") - checks;
    uint64_t mapped_meanwhile = cuctx__map_find(raw);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the retire went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the query neither waited for the lock nor returned in 10 s");
    cr_assert_geq(checked, 1, "the query waited for the lock before its check of the context");
    cr_assert_eq(mapped_meanwhile, entry, "the entry left the address map before the lock was had");
    cr_assert_eq(l.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(l.rc));
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY));
    cr_assert_eq(cuctx__map_find(raw), 0, "the retired entry stayed in the address map");
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(misuses(), 0);
}

static CUresult e1_destroy_event(struct locked_call *l)
{
    return cuctx_event_destroy((cuctx_event *)l->arg);
}

/* A borrow's entry ends with the last child that names it: that child's
 * destroy, once the driver destroyed the child, ends the entry under the
 * context lock (cuctx__entry_unname). With the lock held by another thread
 * the destroy waits there, past its cuEventDestroy, the entry still in
 * the address map, and ends it once the lock is let go. Mutant killed:
 * lib/entry.c:153 `call` (cuctx__ctx_lock() in cuctx__entry_unname
 * removed: the entry ended while the lock was held, and the unlock let go
 * of the holder's lock). */
Test(ctx_lock, the_last_name_of_a_borrows_entry_ends_it_under_the_context_lock, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(cuctx__map_find(raw), entry, "the entry ended while its event named it");
    struct locked_call l = {.call = e1_destroy_event, .arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    unsigned long destroys = calls("cuEventDestroy");
    pthread_t t;
    cuctx__ctx_lock();
    int waited = runs_into_the_lock(&l, &t);
    unsigned long destroyed = calls("cuEventDestroy") - destroys;
    uint64_t mapped_meanwhile = cuctx__map_find(raw);
    int alive_meanwhile = cuctx__alive(entry, KIND_ENTRY);
    cuctx__ctx_unlock();
    pthread_join(t, NULL);
    cr_assert_neq(waited, 0, "the entry's end went through while another thread held the context lock");
    cr_assert_eq(waited, 1, "the event's destroy neither waited for the lock nor returned in 10 s");
    cr_assert_eq(destroyed, 1, "the destroy waited for the lock before its cuEventDestroy");
    cr_assert_eq(mapped_meanwhile, entry, "the entry left the address map before the lock was had");
    cr_assert(alive_meanwhile, "the entry ended before the lock was had");
    CHECK_OK(l.rc);
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the entry outlived the last child that named it");
    cr_assert_eq(cuctx__map_find(raw), 0);
    raw_ctx_destroy(raw);
    cr_assert_eq(misuses(), 0);
}

static void *e1_synchronize_ctx(void *p)
{
    struct locked_call *l = p;
    l->rc = cuctx_ctx_synchronize(l->c);
    atomic_store(&l->done, 1);
    return NULL;
}

/* A borrow's entry whose last name goes (here its one handle's destroy)
 * is closed and drained before it ends: the end waits for the holds
 * already taken - another thread's, inside a synchronize of the context
 * through that handle (held after its cuCtxSynchronize by the simulator) -
 * before the slot is freed. Mutant killed: lib/entry.c:142 `call`
 * (cuctx__drain in end_unnamed_locked removed: the entry was freed under
 * the other thread's hold). */
Test(drain, a_borrows_entry_ended_by_its_last_name_waits_for_the_holds_under_way, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    CUcontext raw = raw_ctx_create(0, POPPED);
    struct locked_call holder = {.rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_borrow(&holder.c, raw));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    struct locked_call ender = {.call = destroy_ctx, .c = holder.c, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t th, te;
    sim()->hold_after("cuCtxSynchronize");
    cr_assert_eq(pthread_create(&th, NULL, e1_synchronize_ctx, &holder), 0);
    until_sim_holds(1);     /* the holder is past its driver call, the entry held */
    int waited = returns_or_sleeps(&ender, &te, in_backoff_sleep);
    int alive_meanwhile = cuctx__alive(entry, KIND_ENTRY) || cuctx__closing(entry, KIND_ENTRY);
    int holder_done = atomic_load(&holder.done);
    sim()->let_go();
    pthread_join(th, NULL);
    pthread_join(te, NULL);
    cr_assert_eq(holder_done, 0);
    cr_assert_neq(waited, 0, "the end of the entry did not wait for the other thread's hold");
    cr_assert_eq(waited, 1, "the destroy neither waited nor returned in 10 s");
    cr_assert(alive_meanwhile, "the entry was freed under the other thread's hold");
    CHECK_OK(holder.rc);
    CHECK_OK(ender.rc);
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the entry outlived its last name");
    cr_assert_eq(cuctx__map_find(raw), 0);
    raw_ctx_destroy(raw);
    cr_assert_eq(misuses(), 0);
}

static CUresult e1_create_ctx(struct locked_call *l)
{
    return cuctx_ctx_create(&l->c, 0, 0);
}

/* A context made at the address of a borrowed context that its owner
 * destroyed ends the old entry there (cuctx__entry_new ->
 * cuctx__entry_end_locked), which waits for the holds already taken of it
 * - another thread's, inside a call on the borrowed context's event (held
 * after its cuEventSynchronize by the simulator) - before the slot is
 * freed. Mutant killed: lib/entry.c:129 `call` (cuctx__drain in
 * cuctx__entry_end_locked removed: the old entry was freed under the
 * other thread's hold). */
Test(drain, an_entry_ended_by_a_new_context_at_its_address_waits_for_the_holds_under_way, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    struct locked_call holder = {.arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call maker = {.call = e1_create_ctx, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t th, tm;
    sim()->hold_after("cuEventSynchronize");
    cr_assert_eq(pthread_create(&th, NULL, synchronize_event, &holder), 0);
    until_sim_holds(1);     /* the holder is past its driver call, the entry held */
    raw_ctx_destroy(raw);
    unsigned long creates = calls("cuCtxCreate");
    int waited = returns_or_sleeps(&maker, &tm, in_backoff_sleep);
    int created_meanwhile = calls("cuCtxCreate") - creates == 1;
    int closing_meanwhile = cuctx__closing(entry, KIND_ENTRY);
    int holder_done = atomic_load(&holder.done);
    sim()->let_go();
    pthread_join(th, NULL);
    pthread_join(tm, NULL);
    cr_assert_eq(holder_done, 0);
    cr_assert_neq(waited, 0, "the end of the old entry did not wait for the other thread's hold");
    cr_assert_eq(waited, 1, "the create neither waited nor returned in 10 s");
    cr_assert(created_meanwhile, "the create waited before its cuCtxCreate");
    cr_assert(closing_meanwhile, "the old entry was not closing while the create waited");
    CHECK_OK(holder.rc);
    CHECK_OK(maker.rc);
    cr_assert_eq(cuctx_ctx_raw(maker.c), raw, "the simulator recycles the address");
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY), "the old entry outlived the new context at its address");
    cr_assert_neq(cuctx__map_find(raw), entry);
    unsigned long destroys = calls("cuEventDestroy");
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(calls("cuEventDestroy"), destroys, "the dead borrowed context's event reached the driver");
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&maker.c));
    cr_assert_eq(misuses(), 0);
}

static void *e1_query_then_testcancel(void *p)
{
    struct locked_call *l = p;
    atomic_store(&l->tid, gettid());
    l->rc = cuctx_event_query(*(cuctx_event *)l->arg);
    atomic_store(&l->done, 1);
    pthread_testcancel();
    return NULL;
}

/* entry_retire keeps cancellation off from the entry's close to its free:
 * a thread cancelled while the retire waits for another thread's hold
 * (its drain sleeps, a cancellation point) finishes the retire first, and
 * is cancelled only at its next cancellation point after the call - so
 * the entry never stays closing for good. Mutant killed: lib/entry.c:170
 * `call` (cancellation not disabled: the thread was cancelled inside the
 * drain, the entry left closing for ever). */
Test(drain, a_retire_cancelled_while_it_waits_for_a_hold_still_frees_the_entry, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    NEED_PROC_SYSCALL();
    cuctx_ctx b = {0};
    cuctx_event ev = {0};
    CUcontext raw = raw_ctx_create(0, POPPED);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    uint64_t entry = cuctx__map_find(raw);
    cr_assert_neq(entry, 0);
    struct locked_call holder = {.arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    struct locked_call retirer = {.arg = &ev, .rc = CUDA_ERROR_UNKNOWN};
    pthread_t th, tr;
    void *res = NULL;
    sim()->hold_after("cuEventSynchronize");
    cr_assert_eq(pthread_create(&th, NULL, synchronize_event, &holder), 0);
    until_sim_holds(1);     /* the holder is past its driver call, the entry held */
    raw_ctx_destroy(raw);
    cr_assert_eq(pthread_create(&tr, NULL, e1_query_then_testcancel, &retirer), 0);
    int asleep = 0;
    for (int ms = 0; ms < 10000 && !asleep && !atomic_load(&retirer.done); ms++) {
        pid_t tid = atomic_load(&retirer.tid);
        asleep = tid && in_backoff_sleep(tid) == 1;
        if (!asleep)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    int closing_meanwhile = cuctx__closing(entry, KIND_ENTRY);
    cr_assert_eq(pthread_cancel(tr), 0);
    sim()->let_go();
    pthread_join(th, NULL);
    cr_assert_eq(pthread_join(tr, &res), 0);
    cr_assert(asleep, "the retire did not wait for the other thread's hold");
    cr_assert(closing_meanwhile);
    cr_assert_eq(atomic_load(&retirer.done), 1, "the retiring thread was cancelled inside the retire");
    cr_assert_eq(res, PTHREAD_CANCELED, "the cancel was lost");
    cr_assert_eq(retirer.rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(retirer.rc));
    cr_assert_not(cuctx__closing(entry, KIND_ENTRY), "the retired entry was left closing");
    cr_assert_not(cuctx__alive(entry, KIND_ENTRY));
    CHECK_OK(holder.rc);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(misuses(), 0);
}

/* ---- sample seed 53 (t1) ---- */

/* The slots a thread's cache held go to the shared free list when the
 * thread ends (cache_flush), each pushed on top of the ones before it: the
 * creates of a thread with no cache of its own then take back every one of
 * them, the last pushed first, each once, before any slot never handed out.
 * The ending thread freed three events in the order a, b, c; its cache
 * gives them back from its end (c, b, a), so the list reads a, b, c.
 * Mutant killed: lib/registry.c:121 `call` (push_global not linking the
 * slot to the old head: the list kept only the last slot pushed, here a,
 * with the next_free of its first life - 0, a slot never pushed - so b and
 * c were lost and the second create took a fresh slot) (sample seed 53;
 * before only killed by a race in the stress program). */
static void *make_three_free_them_and_end(void *p)
{
    uint64_t *id = p;
    for (int i = 0; i < 3; i++)
        id[i] = make(KIND_EVENT, 530 + (uint64_t)i);
    for (int i = 0; i < 3; i++)
        destroy(id[i], KIND_EVENT);             /* to this thread's cache */
    return cuctx__me.registry.ncache >= 3 ? id : NULL;
}

Test(registry, the_slots_of_an_ended_threads_cache_all_come_back_from_the_shared_list_in_order)
{
    uint64_t freed[3] = {0}, again[3];
    pthread_t t;
    void *cached = NULL;
    cr_assert_eq(pthread_create(&t, NULL, make_three_free_them_and_end, freed), 0);
    cr_assert_eq(pthread_join(t, &cached), 0);
    cr_assert_not_null(cached, "the thread's three frees did not go to its cache");
    cr_assert_eq(cuctx__me.registry.ncache, 0, "this thread has slots of its own");
    for (int i = 0; i < 3; i++)
        again[i] = make(KIND_EVENT, 540 + (uint64_t)i);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(cuctx__id_index(again[i]), cuctx__id_index(freed[i]),
                     "create %d took slot %u, not slot %u, the %s freed by the ended thread", i,
                     (unsigned)cuctx__id_index(again[i]), (unsigned)cuctx__id_index(freed[i]),
                     i == 0 ? "last" : i == 1 ? "second" : "first");
    for (int i = 0; i < 3; i++) {
        struct cuctx_slot *s = cuctx__pin(again[i], KIND_EVENT);
        cr_assert_not_null(s);
        cr_assert_eq(s->u.child.raw, 540 + (uint64_t)i, "a slot handed out twice");
        cuctx__unpin(s);
        destroy(again[i], KIND_EVENT);
    }
}

/* A pin of an id that is no longer live in its slot - destroyed, or asked
 * as another kind - is refused also where the pin takes the slow path:
 * a thread's first pin (no hazard record yet) and a pin beyond the
 * CUCTX_MY_PINS a thread lists. Mutant killed: lib/registry.c:176 `ret`
 * (cuctx__pin_slow returning (void *)1 for a refused pin: a stale handle
 * passed as live) (sample seed 53; no program ran that line before). */
struct first_pin { uint64_t id; enum cuctx_kind kind; int had_record; struct cuctx_slot *got; };

static void *pin_as_first_thing(void *p)
{
    struct first_pin *f = p;
    f->had_record = cuctx__me.registry.rec != NULL;
    f->got = cuctx__pin(f->id, f->kind);
    if (f->got == cuctx__slot_find(cuctx__id_index(f->id)))    /* not what a wrong answer points to */
        cuctx__unpin(f->got);
    return NULL;
}

static struct cuctx_slot *first_pin_of(uint64_t id, enum cuctx_kind kind)
{
    struct first_pin f = {.id = id, .kind = kind, .had_record = -1};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, pin_as_first_thing, &f), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(f.had_record, 0, "the new thread had a hazard record before its first pin");
    return f.got;
}

Test(registry, a_threads_first_pin_of_a_stale_id_is_refused)
{
    uint64_t live = make(KIND_EVENT, 531), gone = make(KIND_EVENT, 532);
    destroy(gone, KIND_EVENT);
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(live));
    cr_assert_eq(first_pin_of(live, KIND_EVENT), s, "a new thread's first pin of a live event");
    cr_assert_null(first_pin_of(gone, KIND_EVENT), "a new thread's first pin of a destroyed event");
    cr_assert_null(first_pin_of(live, KIND_STREAM), "a new thread's first pin of an event as a stream");
    cr_assert_eq(pins_of(live), 0);
    destroy(live, KIND_EVENT);
}

Test(registry, a_pin_beyond_the_listed_ones_of_a_stale_id_is_refused)
{
    uint64_t id[CUCTX_MY_PINS + 1];
    struct cuctx_slot *s[CUCTX_MY_PINS + 1];
    for (int i = 0; i <= CUCTX_MY_PINS; i++)
        id[i] = make(KIND_EVENT, 550 + (uint64_t)i);
    uint64_t gone = make(KIND_EVENT, 549);
    destroy(gone, KIND_EVENT);
    for (int i = 0; i < CUCTX_MY_PINS; i++)
        cr_assert_not_null(s[i] = cuctx__pin(id[i], KIND_EVENT));
    cr_assert_eq(cuctx__me.registry.npins, CUCTX_MY_PINS, "this thread's list of pins is not full");
    cr_assert_null(cuctx__pin(gone, KIND_EVENT), "a pin beyond the list of a destroyed event");
    cr_assert_null(cuctx__pin(id[CUCTX_MY_PINS], KIND_STREAM), "a pin beyond the list of an event as a stream");
    s[CUCTX_MY_PINS] = cuctx__pin(id[CUCTX_MY_PINS], KIND_EVENT);
    cr_assert_eq(s[CUCTX_MY_PINS], cuctx__slot_find(cuctx__id_index(id[CUCTX_MY_PINS])),
                 "a pin beyond the list of a live event");
    for (int i = CUCTX_MY_PINS; i >= 0; i--) {
        cuctx__unpin(s[i]);
        cr_assert_eq(pins_of(id[i]), 0);
        destroy(id[i], KIND_EVENT);
    }
}

/* ---- mutation survivors of lib/ctxmap.c (h7) ---- */

/* The map's hash (ctxmap.c's home) before its mask: two addresses whose
 * values agree in their low 16 bits have the same home at every capacity up
 * to 65536, and one whose low 16 bits are 0 has home 0 at all of them. */
static uint32_t map_hash_h7(uintptr_t k)
{
    return (uint32_t)(((uint64_t)k * UINT64_C(0x9e3779b97f4a7c15)) >> 32);
}

/* Two distinct addresses (multiples of 16, as a context's is) with the same
 * home at every capacity the map takes in these tests. */
static void same_home_pair_h7(uintptr_t *a, uintptr_t *b)
{
    static uintptr_t seen[65536];
    for (uintptr_t k = 0x100000;; k += 16) {
        uint32_t h = map_hash_h7(k) & 0xffff;
        if (seen[h]) {
            *a = seen[h];
            *b = k;
            return;
        }
        seen[h] = k;
    }
}

/* An address whose home is slot 0 at every capacity up to 65536. */
static uintptr_t home_zero_h7(void)
{
    uintptr_t k = 0x100000;
    while (map_hash_h7(k) & 0xffff)
        k += 16;
    return k;
}

/* A lookup of no address, and any lookup or removal in a map that was never
 * made, answers "none" (and touches no array).
 * Mutants killed: lib/ctxmap.c:68 (the empty answer made 1) and
 * lib/ctxmap.c:90 (`!cap || !raw` made `!cap && !raw`: a removal before the
 * map's first put probes arrays that do not exist). */
Test(registry, an_unmade_map_and_a_null_address_find_nothing)
{
    CUcontext raw = (CUcontext)(uintptr_t)0x7000;
    uint64_t entry = cuctx__id_make(KIND_ENTRY, 1, 1);
    cr_assert_eq(cuctx__map_count(), 0, "the test needs a map still unmade");
    cr_assert_eq(cuctx__map_find(raw), 0, "a lookup in the unmade map");
    cr_assert_eq(cuctx__map_find(NULL), 0, "a lookup of no address in the unmade map");
    cuctx__map_remove(raw, entry);
    cuctx__map_remove(NULL, entry);
    cr_assert_eq(cuctx__map_count(), 0);
    cr_assert_eq(cuctx__map_put(raw, entry), 0);
    cr_assert_eq(cuctx__map_find(NULL), 0, "a lookup of no address");
    cuctx__map_remove(NULL, entry);
    cr_assert_eq(cuctx__map_find(raw), entry, "a removal of no address took one out");
    cr_assert_eq(cuctx__map_count(), 1);
    cuctx__map_remove(raw, entry);
    cr_assert_eq(cuctx__map_count(), 0);
}

/* Removing the address at its home moves the next address of the same home
 * (put after it, one slot on) back into the hole, so it is still found.
 * Mutant killed: lib/ctxmap.c:99 (`>=` made `>`: a key whose home is the
 * hole is left behind the empty slot, where no probe reaches it). */
Test(registry, removing_an_address_keeps_the_next_of_the_same_home_found)
{
    uintptr_t a, b;
    same_home_pair_h7(&a, &b);
    uint64_t ea = cuctx__id_make(KIND_ENTRY, 1, 1), eb = cuctx__id_make(KIND_ENTRY, 2, 1);
    cr_assert_eq(cuctx__map_count(), 0, "the test needs an empty map");
    cr_assert_eq(cuctx__map_put((CUcontext)a, ea), 0);
    cr_assert_eq(cuctx__map_put((CUcontext)b, eb), 0);
    cuctx__map_remove((CUcontext)a, ea);
    cr_assert_eq(cuctx__map_find((CUcontext)a), 0);
    cr_assert_eq(cuctx__map_find((CUcontext)b), eb, "the address after the removed one, of the same home, is lost");
    cr_assert_eq(cuctx__map_count(), 1);
    cuctx__map_remove((CUcontext)b, eb);
    cr_assert_eq(cuctx__map_find((CUcontext)b), 0);
    cr_assert_eq(cuctx__map_count(), 0);
}

/* Growing the map carries every address over, the one in its first slot
 * too; shrinking it back as well.
 * Mutant killed: lib/ctxmap.c:53 (the copy starting at slot 1). */
Test(registry, growing_the_map_keeps_the_address_in_its_first_slot)
{
    enum { N = 300 };   /* past 32, 64, 128 and 256: grows from 64 slots to 1024 */
    uintptr_t zero = home_zero_h7();
    uint64_t ez = cuctx__id_make(KIND_ENTRY, 1, 1);
    cr_assert_eq(cuctx__map_count(), 0, "the test needs an empty map");
    cr_assert_eq(cuctx__map_put((CUcontext)zero, ez), 0);
    for (uintptr_t i = 1; i <= N; i++) {
        uintptr_t k = 0x40000000 + 16 * i;
        cr_assert_neq(k, zero);
        cr_assert_eq(cuctx__map_put((CUcontext)k, cuctx__id_make(KIND_ENTRY, 1 + i, 1)), 0);
        cr_assert_eq(cuctx__map_find((CUcontext)zero), ez, "the first slot's address lost after %u puts",
                     (unsigned)i);
    }
    for (uintptr_t i = 1; i <= N; i++)
        cr_assert_eq(cuctx__map_find((CUcontext)(0x40000000 + 16 * i)), cuctx__id_make(KIND_ENTRY, 1 + i, 1));
    for (uintptr_t i = N; i >= 1; i--) {
        cuctx__map_remove((CUcontext)(0x40000000 + 16 * i), cuctx__id_make(KIND_ENTRY, 1 + i, 1));
        cr_assert_eq(cuctx__map_find((CUcontext)zero), ez, "the first slot's address lost while shrinking");
    }
    cr_assert_eq(cuctx__map_count(), 1);
    cuctx__map_remove((CUcontext)zero, ez);
    cr_assert_eq(cuctx__map_count(), 0);
}

/* ---- mutation survivors of lib/claim.c (h7) ---- */

struct claim_arg_h7 { cuctx_stream s; cuctx_ctx b; CUresult rc; atomic_int done; };

static void *create_into_h7(void *p)
{
    struct claim_arg_h7 *a = p;
    a->rc = cuctx_stream_create(&a->s, a->b, 0, 0);
    atomic_store(&a->done, 1);
    return NULL;
}

/* A create into the handle of a stream whose context has ended releases the
 * stream's slot as its destroy would: after waiting for a pin another
 * thread still holds on it (here the test's own, taken before the create
 * closed the slot), so the slot is never freed under a reader.
 * Mutant killed: lib/claim.c:74 `call` (`cuctx__drain_slow(s);` removed:
 * the create went on and freed the slot with the pin still on it). */
Test(claim, a_create_into_an_orphaned_handle_waits_for_a_pin_on_its_slot, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0};
    struct claim_arg_h7 arg = {.rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_stream_create(&arg.s, a, 0, 0));
    uint64_t old = arg.s.id;
    CHECK_OK(cuctx_ctx_destroy(&a));    /* the stream went with its context */
    CHECK_OK(cuctx_ctx_create(&arg.b, 0, 0));
    struct cuctx_slot *pinned = cuctx__pin(old, KIND_STREAM);
    cr_assert_not_null(pinned, "the orphaned stream's slot could not be pinned");
    uint64_t skips = stats().stale_skips;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, create_into_h7, &arg), 0);
    /* the gate: the create has closed the slot (or, wrongly, finished) */
    while (!cuctx__closing(old, KIND_STREAM) && !atomic_load(&arg.done))
        usleep(1000);
    usleep(100000);     /* time to go on, were it not waiting */
    cr_assert_eq(atomic_load(&arg.done), 0, "the create went on while the slot was pinned");
    cr_assert(cuctx__closing(old, KIND_STREAM), "the pinned slot was freed");
    cuctx__unpin(pinned);
    cr_assert_eq(pthread_join(t, NULL), 0);
    CHECK_OK(arg.rc);
    cr_assert_neq(arg.s.id, old);
    cr_assert_eq(stats().stale_skips, skips + 1, "the orphaned stream's slot was not released as a destroy would");
    CHECK_OK(cuctx_stream_destroy(&arg.s));
    CHECK_OK(cuctx_ctx_destroy(&arg.b));
    cr_assert_eq(misuses(), 0);
}

/* ---- mutation survivors of lib/tether.c (h1) ---- */

/* Peer access that cuctx enabled between two borrowed contexts, their
 * handles destroyed first: the pair's names keep both entries; the pair's
 * destroy disables the access once and gives both names back, so both
 * entries end and leave the address map. Mutants killed: lib/tether.c:309
 * and :310 `call` (the first or the second context's name not given back
 * after the pair's destroy reached the driver). */
Test(registry, an_owned_pairs_destroy_gives_both_borrows_names_back)
{
    NEED_DRIVER();
    NEED_SIM();
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p, &owned));
    cr_assert_eq(owned, 1, "enabled by cuctx: owned");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(live_entries(), live0 + 2, "an entry ended while the pair named it");
    unsigned long disables = calls("cuCtxDisablePeerAccess");
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables + 1, "the owned access was not disabled once");
    cr_assert_eq(live_entries(), live0, "an entry outlived the pair, its last name");
    cr_assert_eq(cuctx__map_count(), map0, "an address stayed mapped after its entry's last name");
    raw_ctx_destroy(ra);
    raw_ctx_destroy(rb);
    cr_assert_eq(misuses(), 0);
}

/* The same pair, one of its contexts destroyed by its owner before the
 * pair's destroy (gone: the destroy is skipped, counted stale, and
 * succeeds): the pair's name of the other, still living, borrow is given
 * back, so its entry ends too; and the destroy's slot goes back to the
 * thread's free slots once, so that the next objects made get a slot each. */
static void pair_destroy_after_owner_destroyed_one_h1(int destroy_first)
{
    NEED_DRIVER();
    NEED_SIM();
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(live_entries(), live0 + 2, "an entry ended while the pair named it");
    raw_ctx_destroy(destroy_first ? ra : rb);
    unsigned long disables = calls("cuCtxDisablePeerAccess");
    cr_assert_eq(cuctx_peer_owned(p, NULL), CUDA_ERROR_INVALID_VALUE);   /* a failure first */
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE, "the skipped destroy recorded a failure: %s",
                 cuctx_last_error_message());
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables, "a destroyed context's access was disabled");
    cr_assert_eq(live_entries(), live0, "the living borrow's entry outlived the pair, its last name");
    cr_assert_eq(cuctx__map_count(), map0, "an address stayed mapped after its entry's last name");
    uint64_t made[4];
    for (int i = 0; i < 4; i++) {
        made[i] = make(KIND_EVENT, (uint64_t)i + 1);
        for (int j = 0; j < i; j++)
            cr_assert_neq(cuctx__id_index(made[i]), cuctx__id_index(made[j]),
                          "two objects made after the destroy got one slot");
    }
    for (int i = 0; i < 4; i++)
        destroy(made[i], KIND_EVENT);
    raw_ctx_destroy(destroy_first ? rb : ra);
    cr_assert_eq(misuses(), 0);
}

/* Mutants killed: lib/tether.c:109 `call` (with the second context gone,
 * the first's name not given back), lib/tether.c:295 `const` (the second
 * context's hold not quiet: the skip, a success, recorded that context's
 * end as the thread's last error), lib/tether.c:297 `const` (the destroy's
 * cancellation guard left armed on the skip: at its return the freed slot
 * was pushed on the thread's free slots a second time, and two of the next
 * objects shared it). */
Test(registry, an_owned_pairs_destroy_with_its_second_context_gone_gives_the_firsts_name_back)
{
    pair_destroy_after_owner_destroyed_one_h1(0);
}

/* Mutant killed: lib/tether.c:110 `call` (with the first context gone, the
 * second's name not given back). */
Test(registry, an_owned_pairs_destroy_with_its_first_context_gone_gives_the_seconds_name_back)
{
    pair_destroy_after_owner_destroyed_one_h1(1);
}

/* The same pair, its destroy's check of a context refused by the driver
 * (cuCtxGetId failing with an error that does not say the context is
 * gone): the destroy fails with that error, the handle ends (as after any
 * refused destroy), and the pair's names of both borrows are given back,
 * since either context may live on: both entries end. Mutant killed:
 * lib/tether.c:119 `call` (the second context's name not given back). */
Test(registry, an_owned_pairs_destroy_whose_check_failed_gives_both_borrows_names_back)
{
    NEED_DRIVER();
    NEED_SIM();
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    cuctx_peer copy = p;
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    cr_assert_eq(live_entries(), live0 + 2, "an entry ended while the pair named it");
    unsigned long disables = calls("cuCtxDisablePeerAccess"), checks = calls("cuCtxGetId");
    sim()->fail_call("cuCtxGetId", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_peer_destroy(&p), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(calls("cuCtxGetId"), checks + 1, "not one check asked");
    cr_assert_eq(calls("cuCtxDisablePeerAccess"), disables, "the access was disabled, unchecked");
    cr_assert_eq(cuctx_peer_destroy(&copy), CUDA_ERROR_INVALID_HANDLE, "the handle did not end");
    cr_assert_eq(live_entries(), live0, "a borrow's entry outlived the pair, its last name");
    cr_assert_eq(cuctx__map_count(), map0, "an address stayed mapped after its entry's last name");
    raw_ctx_destroy(ra);
    raw_ctx_destroy(rb);
}

/* A child of a borrowed context, its last name (the context's handle
 * destroyed first), whose destroy the driver refuses: the destroy answers
 * the driver's error, not success, and the borrow's entry ends with the
 * handle all the same. Mutant killed: lib/tether.c:148 `ret` (the last
 * name's destroy answered success whatever the driver said). */
Test(registry, a_refused_destroy_of_a_borrows_last_child_answers_the_drivers_error)
{
    NEED_DRIVER();
    NEED_SIM();
    size_t map0 = cuctx__map_count(), live0 = live_entries();
    CUcontext raw = raw_ctx_create(0, POPPED);
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_borrow(&c, raw));
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(live_entries(), live0 + 1, "the entry ended while the event named it");
    unsigned long destroys = calls("cuEventDestroy");
    sim()->fail_call("cuEventDestroy", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_ERROR_UNKNOWN, "the refused destroy answered %s",
                 cuctx_result_name(cuctx_last_error()));
    cr_assert_eq(calls("cuEventDestroy"), destroys + 1);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    cr_assert_eq(live_entries(), live0, "the borrow's entry outlived its last name");
    cr_assert_eq(cuctx__map_count(), map0);
    raw_ctx_destroy(raw);
}

/* A call on a pair whose second context has ended (its handle destroyed)
 * fails in the hold of that context's entry beside the first's, and says
 * so: the thread's last error names the call.
 * Mutant killed: lib/tether.c:321 `const` (that hold made quiet: the call
 * failed without a word). */
Test(registry, a_call_on_a_pair_whose_second_context_ended_says_so)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    new_ctx(&a, 0, "a", POPPED);
    new_ctx(&b, 1, "b", POPPED);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&b));
    int owned = -1;
    cr_assert_eq(cuctx_peer_owned(p, NULL), CUDA_ERROR_INVALID_VALUE);   /* another failure first */
    cr_assert_eq(cuctx_peer_owned(p, &owned), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(owned, -1);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED, "the failure was not recorded");
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuctx_peer_owned"), NULL, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_peer_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&a));
    cr_assert_eq(misuses(), 0);
}

/* A peer enable between two borrowed contexts checks the second ("to")
 * twice: found and checked first, let go, then held again beside the
 * first. Where the driver's check says it is gone at that second hold (the
 * last cuCtxGetId of the enable), the enable fails and says so: the
 * thread's last error names the call. That hold, made beside the first,
 * lets go of both and holds the second alone again (its entry is retired
 * only with no other entry held: entry.c check_held), so the driver says
 * "gone" twice, as it would of a context really gone. Mutant killed:
 * lib/tether.c:283 `const` (that hold made quiet: the enable failed
 * without a word). */
Test(registry, a_peer_enable_whose_second_context_is_gone_at_its_second_hold_says_so)
{
    NEED_DRIVER();
    NEED_SIM();
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    unsigned long checks = calls("cuCtxGetId");
    CHECK_OK(cuctx_peer_enable(&p, a, b));      /* to count its checks */
    unsigned long n = calls("cuCtxGetId") - checks;
    cr_assert_geq(n, 2, "the enable checked %lu times", n);
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(cuctx_peer_owned(p, NULL), CUDA_ERROR_INVALID_VALUE);   /* another failure first */
    sim()->fail_call("cuCtxGetId", n, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    sim()->fail_call("cuCtxGetId", n + 1, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(cuctx_peer_enable(&p, a, b), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    cr_assert_eq(p.id, 0);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED, "the failure was not recorded");
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuctx_peer_enable"), NULL, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    raw_ctx_destroy(ra);
    raw_ctx_destroy(rb);
}

/* A tracked pair's destroy (peer access that raw code enabled, between two
 * borrowed contexts) gives the borrows' names back under the context lock,
 * the first lock of that destroy, and leaves the thread's cancellation
 * state as the caller had it (enabled). Mutant killed: lib/tether.c:83
 * `call` (the lock not taken: its unlock restored the state the thread's
 * previous lock had saved - one taken where cuctx had disabled
 * cancellation - leaving the caller's cancellation disabled). */
Test(registry, a_tracked_pairs_destroy_giving_borrows_names_back_keeps_the_callers_cancellation_state)
{
    NEED_DRIVER();
    NEED_SIM();
    size_t live0 = live_entries();
    PFN_cuCtxEnablePeerAccess_v4000 enable = (PFN_cuCtxEnablePeerAccess_v4000)drv_sym("cuCtxEnablePeerAccess", 4000);
    PFN_cuCtxDisablePeerAccess_v4000 disable =
        (PFN_cuCtxDisablePeerAccess_v4000)drv_sym("cuCtxDisablePeerAccess", 4000);
    PFN_cuCtxPushCurrent_v4000 push = (PFN_cuCtxPushCurrent_v4000)drv_sym("cuCtxPushCurrent", 4000);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext rb = raw_ctx_create(1, POPPED);
    CUcontext ra = raw_ctx_create(0, POPPED);
    cr_assert_eq(push(ra), CUDA_SUCCESS);
    cr_assert_eq(enable(rb, 0), CUDA_SUCCESS);         /* someone else's access, from A to B */
    cr_assert_eq(pop(NULL), CUDA_SUCCESS);
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_borrow(&a, ra));         /* (each takes the lock, cancellation enabled) */
    CHECK_OK(cuctx_ctx_borrow(&b, rb));
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    int owned = -1;
    CHECK_OK(cuctx_peer_owned(p, &owned));
    cr_assert_eq(owned, 0, "tracked, not owned");
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(cuctx_ctx_destroy(&b));
    int old = -1;
    cr_assert_eq(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    cr_assert_eq(old, PTHREAD_CANCEL_ENABLE);
    CHECK_OK(cuctx_peer_destroy(&p));
    cr_assert_eq(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
    cr_assert_eq(old, PTHREAD_CANCEL_ENABLE, "the destroy left the caller's cancellation disabled");
    cr_assert_eq(live_entries(), live0, "a borrow's entry outlived the pair, its last name");
    cr_assert_eq(push(ra), CUDA_SUCCESS);
    cr_assert_eq(disable(rb), CUDA_SUCCESS, "the owner's disable");
    cr_assert_eq(pop(NULL), CUDA_SUCCESS);
    raw_ctx_destroy(ra);
    raw_ctx_destroy(rb);
}

/* A create cancelled in its driver call gives its slot, reserved but never
 * published, back to its thread's free slots, which go to the shared list
 * when the thread ends: the next thread to need a slot gets that one.
 * Here thread T first frees a slot of its own (so that the create takes
 * it from T's cache), then its cuctx_mem_alloc is cancelled in the
 * simulator's delayed cuMemAlloc (the test waits until the call sleeps
 * there); a fresh thread U's first object then gets the same slot. Mutant
 * killed: lib/tether.c:179 `call` (the cancelled create's slot not given
 * back: lost for good, U got another). */
struct cancelled_create_h1 { cuctx_ctx c; cuctx_mem m; uint64_t freed; };

static void *create_cancelled_h1(void *p)
{
    struct cancelled_create_h1 *a = p;
    uint64_t x = make(KIND_EVENT, 7);
    destroy(x, KIND_EVENT);
    a->freed = x;
    cuctx_mem_alloc(&a->m, a->c, 4096);
    return NULL;
}

static void *make_one_h1(void *p)
{
    uint64_t *out = p;
    *out = make(KIND_EVENT, 8);
    return NULL;
}

Test(registry, a_create_cancelled_in_its_driver_call_gives_its_slot_back)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct cancelled_create_h1 a = {{0}, {0}, 0};
    new_ctx(&a.c, 0, "c", POPPED);
    sim()->set_delay("cuMemAlloc", 300000);
    pthread_t t;
    void *res = NULL;
    cr_assert_eq(pthread_create(&t, NULL, create_cancelled_h1, &a), 0);
    for (int ms = 0; ms < 5000 && sim()->sleeping() == 0; ms++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    cr_assert_gt(sim()->sleeping(), 0, "no call entered its delay");
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    sim()->set_delay("cuMemAlloc", 0);
    cr_assert_eq(a.m.id, 0, "the cancelled create filled the handle");
    cr_assert_eq(stats().mems, 0);
    uint64_t y = 0;
    cr_assert_eq(pthread_create(&t, NULL, make_one_h1, &y), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert_eq(cuctx__id_index(y), cuctx__id_index(a.freed),
                 "the next thread's object got slot %u, not the cancelled create's %u",
                 (unsigned)cuctx__id_index(y), (unsigned)cuctx__id_index(a.freed));
    destroy(y, KIND_EVENT);
    CHECK_OK(cuctx_ctx_destroy(&a.c));
    cr_assert_eq(misuses(), 0);
}

/* ---- mutation survivors of lib/destroy.c (h4) ---- */

/* A handle whose kind byte is KIND_COUNT, one past the last kind, is no
 * cuctx handle: refused and cleared without a look at the table of kinds.
 * Catches mutant lib/destroy.c:27 `ror` (the table read one past its end). */
Test(registry, a_handle_of_the_kind_one_past_the_last_is_refused_by_destroy)
{
    NEED_DRIVER();
    any_handle past = {(uint64_t)KIND_COUNT << CUCTX_ID_KIND_SHIFT | 1};
    cr_assert_eq((cuctx_destroy)(&past), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "is not a cuctx handle"), "%s", cuctx_last_error_message());
    cr_assert_eq(past.id, 0, "cleared");
}

/* Writes zeros over the stack below the caller's frame, where the frame of
 * the next function it calls will be: what that function leaves unset
 * reads as zeros, not as what an earlier call left there. */
static __attribute__((noinline)) void zero_the_stack_h4(void)
{
    volatile char junk[16384];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 0;
}

/* A cleanup's report carries the destroy's own message after "automatic
 * cleanup: ", read before the report can change the thread's last error.
 * Catches mutant lib/destroy.c:38 `call` (the message never copied: the
 * report carried whatever the stack held, here zeros). */
Test(registry, a_cleanups_report_carries_the_destroys_message)
{
    struct handler_count h;
    char want[600];
    NEED_DRIVER();
    any_handle zero = {0}, bogus = {1}, copy = {1};
    (cuctx_cleanup)(&zero);         /* a handle of 0: nothing reported; binds the call before the stack is zeroed */
    count_handler_install(&h);
    cr_assert_eq((cuctx_destroy)(&copy), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(h.calls, 0, "a destroy's failure is the caller's, not reported");
    snprintf(want, sizeof want, "automatic cleanup: %s", cuctx_last_error_message());
    zero_the_stack_h4();
    (cuctx_cleanup)(&bogus);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(h.calls, 1);
    cr_assert_eq(h.last_rc, CUDA_ERROR_INVALID_HANDLE);
    cr_assert_str_eq(h.last_msg, want);
    cr_assert_eq(bogus.id, 0);
}

/* ---- mutation survivors of lib/claim.c (h7), moved from test_process.c ---- */

static int create_graph_into_inherited(void *p)
{
    cuctx_graph *g = p;
    uint64_t old = g->id;
    unsigned long made = calls("cuGraphCreate"), destroyed = calls("cuGraphDestroy");
    uint64_t skips = stats().stale_skips;
    if (cuctx_graph_create(g) != CUDA_SUCCESS)
        return 1;   /* refused as if the parent's graph were the child's */
    if (g->id == old || g->id == 0)
        return 2;
    if (stats().stale_skips != skips + 1)
        return 3;   /* the parent's graph's slot was not released as its destroy would */
    if (calls("cuGraphCreate") != made + 1 || calls("cuGraphDestroy") != destroyed)
        return 4;   /* the parent's graph reached the child's driver */
    if (cuctx_graph_destroy(g) != CUDA_SUCCESS || calls("cuGraphDestroy") != destroyed + 1)
        return 5;
    return 0;
}

/* A create in a forked child into a handle of a graph (a kind in no
 * context) inherited from the parent is no create into a live handle: the
 * graph is the parent's, not the child's, and its slot is released as the
 * child's destroy of it would be (no driver call), then the create goes on.
 * Mutant killed: lib/claim.c:53 `lcr` (`entry == 0 && !tethered` made `||`:
 * every untethered kind refused at once, without looking at the entry the
 * fork gave it, CUCTX__ENTRY_NEVER). Here, not in test_process.c: the line
 * runs only in the child, and gcov sees a child's lines of lib/ only in a
 * program linked with the internal library (see docs/MUTATION.md). */
Test(registry, a_create_in_a_forked_child_into_an_inherited_graphs_handle_goes_on)
{
    NEED_DRIVER();
    NEED_SIM();
    the_parents_graph_through_a_childs_check(create_graph_into_inherited, " (1: the create was refused)");
}
