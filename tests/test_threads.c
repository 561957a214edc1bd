/* SPDX-License-Identifier: MIT */
/* test_threads.c - the tether under concurrency.
 *
 * - workers create and destroy children of a context while another thread
 *   keeps destroying it and making a new one at the same address;
 * - many threads destroy the same handle at once: exactly one wins;
 * - uses racing a child's destroy, and child uses racing the context's
 *   destroy, never reach the driver for a dead object;
 * - the registry holds a million live objects.
 *
 * Against the real driver (sim() NULL) the first three run with fewer
 * operations and fewer context generations (a context costs ~0.15 s there)
 * and with the simulator-only asserts skipped.
 */
#include "testlib.h"

#include <criterion/logging.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

/* ------------------------------------------------------------------------
 *  Churn: 8 workers make and destroy children of "the" context while a
 *  churner destroys it and creates the next one at the same address.
 * ------------------------------------------------------------------------ */

#define WORKERS 8
#define HOLD 4              /* children each worker keeps alive at a time */
#define CHILD_KINDS 3       /* event, stream, device memory */

static const char *const create_fns[CHILD_KINDS] = {"cuEventCreate", "cuStreamCreateWithPriority", "cuMemAlloc"};
static const char *const destroy_fns[CHILD_KINDS] = {"cuEventDestroy", "cuStreamDestroy", "cuMemFree"};

static CUresult child_create(int kind, uint64_t *id, cuctx_ctx ctx)
{
    switch (kind) {
    case 0: return cuctx_event_create((cuctx_event *)id, ctx, CU_EVENT_DISABLE_TIMING);
    case 1: return cuctx_stream_create((cuctx_stream *)id, ctx, 0, 0);
    default: return cuctx_mem_alloc((cuctx_mem *)id, ctx, 256);
    }
}

static CUresult child_destroy(int kind, uint64_t *id)
{
    switch (kind) {
    case 0: return cuctx_event_destroy((cuctx_event *)id);
    case 1: return cuctx_stream_destroy((cuctx_stream *)id);
    default: return cuctx_mem_destroy((cuctx_mem *)id);
    }
}

struct churn {
    _Atomic uint64_t ctx_id;        /* the current context handle, published */
    _Atomic int workers_left;
    long pairs_per_worker;
    _Atomic unsigned long creates, destroys, retries, bad;
    _Atomic int first_bad_rc;
    _Atomic int first_bad_where;    /* 1 create, 2 destroy, 3 churner */
    unsigned long min_generations;  /* workers keep going until the churner did this many */
    _Atomic unsigned long generations;
    _Atomic int churner_done;       /* the churner returned (finished or failed) */
    unsigned long same_address;
    pthread_barrier_t start;
};

struct worker_arg {
    struct churn *c;
    int index;
};

static void note_bad(struct churn *c, CUresult rc, int where)
{
    int zero = 0;
    if (atomic_fetch_add(&c->bad, 1) == 0) {
        atomic_compare_exchange_strong(&c->first_bad_rc, &zero, (int)rc);
        atomic_store(&c->first_bad_where, where);
    }
}

static void *churn_worker(void *p)
{
    struct worker_arg *a = p;
    struct churn *c = a->c;
    any_handle held[HOLD];
    int kinds[HOLD];
    memset(held, 0, sizeof held);
    pthread_barrier_wait(&c->start);
    for (long i = 0; i < c->pairs_per_worker ||
                     (atomic_load(&c->generations) < c->min_generations && !atomic_load(&c->churner_done));
         i++) {
        int slot = (int)(i % HOLD);
        if (held[slot].id) {
            CUresult rc = child_destroy(kinds[slot], &held[slot].id);
            atomic_fetch_add(&c->destroys, 1);
            if (rc != CUDA_SUCCESS || held[slot].id != 0)
                note_bad(c, rc, 2);
        }
        int kind = (int)((i + a->index) % CHILD_KINDS);
        for (;;) {
            cuctx_ctx ctx = {atomic_load(&c->ctx_id)};
            CUresult rc = child_create(kind, &held[slot].id, ctx);
            if (rc == CUDA_SUCCESS) {
                kinds[slot] = kind;
                atomic_fetch_add(&c->creates, 1);
                break;
            }
            if (held[slot].id != 0)
                note_bad(c, rc, 1);
            if (rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
                /* the published context died under us: take the newer one */
                atomic_fetch_add(&c->retries, 1);
                sched_yield();
                continue;
            }
            note_bad(c, rc, 1);
            break;
        }
    }
    for (int s = 0; s < HOLD; s++) {
        if (held[s].id) {
            CUresult rc = child_destroy(kinds[s], &held[s].id);
            atomic_fetch_add(&c->destroys, 1);
            if (rc != CUDA_SUCCESS)
                note_bad(c, rc, 2);
        }
    }
    atomic_fetch_sub(&c->workers_left, 1);
    return NULL;
}

/* Runs on its own thread: destroy the published context, create the next
 * one (recycling gives it the same address), publish it; until the workers
 * are done. The real driver gets at most 3 generations. */
static void churn(struct churn *c);

static void *churner(void *p)
{
    struct churn *c = p;
    churn(c);
    atomic_store(&c->churner_done, 1);
    return NULL;
}

static void churn(struct churn *c)
{
    unsigned long max_gen = sim() ? (unsigned long)-1 : 3;
    pthread_barrier_wait(&c->start);
    do {
        cuctx_ctx old = {atomic_load(&c->ctx_id)};
        CUcontext old_raw = cuctx_ctx_raw(old);
        CUresult rc = cuctx_ctx_destroy(&old);
        if (rc != CUDA_SUCCESS) {
            note_bad(c, rc, 3);
            return;
        }
        cuctx_ctx next = {0};
        if ((rc = cuctx_ctx_create(&next, 0, CUCTX_SCHED_AUTO)) != CUDA_SUCCESS ||
            (rc = cuctx_pop_current()) != CUDA_SUCCESS) {
            note_bad(c, rc, 3);
            return;
        }
        if (cuctx_ctx_raw(next) == old_raw)
            c->same_address++;
        atomic_store(&c->ctx_id, next.id);
        atomic_fetch_add(&c->generations, 1);
        usleep(sim() ? 50 : 20000);
    } while (atomic_load(&c->workers_left) > 0 && atomic_load(&c->generations) < max_gen);
}

Test(threads, children_survive_context_churn_at_same_address, .timeout = 120)
{
    NEED_DRIVER();
    long total_pairs = sim() ? 8000 : 1000;    /* 16,000 child operations; 2,000 on the GPU */
    struct churn c;
    memset(&c, 0, sizeof c);
    c.pairs_per_worker = total_pairs / WORKERS;
    c.min_generations = sim() ? 300 : 3;
    pthread_barrier_init(&c.start, NULL, WORKERS + 1);
    atomic_store(&c.workers_left, WORKERS);
    struct cuctx_stats st0 = stats();

    cuctx_ctx first = {0};
    CHECK_OK(cuctx_ctx_create(&first, 0, CUCTX_SCHED_AUTO));
    CHECK_OK(cuctx_pop_current());
    atomic_store(&c.ctx_id, first.id);

    double t0 = now_s();
    pthread_t w[WORKERS], ch;
    struct worker_arg args[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        args[i] = (struct worker_arg){&c, i};
        cr_assert_eq(pthread_create(&w[i], NULL, churn_worker, &args[i]), 0);
    }
    cr_assert_eq(pthread_create(&ch, NULL, churner, &c), 0);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(w[i], NULL);
    pthread_join(ch, NULL);
    double secs = now_s() - t0;

    unsigned long creates = atomic_load(&c.creates), destroys = atomic_load(&c.destroys);
    struct cuctx_stats st1 = stats();
    unsigned long skipped = (unsigned long)(st1.stale_skips - st0.stale_skips);
    cr_log_info("churn: %lu creates, %lu destroys (%lu stale skips), %lu retries, %lu context generations "
                "(%lu at the same address) in %.3f s",
                creates, destroys, skipped, atomic_load(&c.retries), atomic_load(&c.generations), c.same_address, secs);
    fprintf(stderr, "churn: %lu creates, %lu destroys (%lu stale skips), %lu retries, %lu generations (%lu same address), %.3f s\n",
            creates, destroys, skipped, atomic_load(&c.retries), atomic_load(&c.generations), c.same_address, secs);

    cr_assert_eq(atomic_load(&c.bad), 0, "%lu bad results; first: %s at %s", atomic_load(&c.bad),
                 cuctx_result_name((CUresult)atomic_load(&c.first_bad_rc)),
                 atomic_load(&c.first_bad_where) == 1 ? "create" : atomic_load(&c.first_bad_where) == 2 ? "destroy" : "churner");
    pthread_barrier_destroy(&c.start);
    cr_assert_geq(creates, (unsigned long)(c.pairs_per_worker * WORKERS));
    cr_assert_eq(destroys, creates, "every child made was destroyed");
    cr_assert_geq(atomic_load(&c.generations), c.min_generations, "the churner stopped early");
    if (sim()) {
        cr_assert_geq(creates + destroys, 10000);
        cr_assert_eq(c.same_address, atomic_load(&c.generations), "recycling: each new context should take the dead one's address");
        unsigned long driver_creates = 0, driver_destroys = 0;
        for (int k = 0; k < CHILD_KINDS; k++) {
            driver_creates += sim()->calls(create_fns[k]);
            driver_destroys += sim()->calls(destroy_fns[k]);
        }
        cr_assert_eq(driver_creates, creates, "driver creates %lu, successful cuctx creates %lu", driver_creates, creates);
        /* every destroy either reached the driver or was a counted stale skip */
        cr_assert_eq(driver_destroys + skipped, destroys, "driver destroys %lu + stale skips %lu != destroys %lu",
                     driver_destroys, skipped, destroys);
    }

    cuctx_ctx last = {atomic_load(&c.ctx_id)};
    CHECK_OK(cuctx_ctx_destroy(&last));
    struct cuctx_stats st2 = stats();
    cr_assert_eq(st2.events, st0.events, "leaked event handles: %zu", st2.events);
    cr_assert_eq(st2.streams, st0.streams, "leaked stream handles: %zu", st2.streams);
    cr_assert_eq(st2.mems, st0.mems, "leaked memory handles: %zu", st2.mems);
    cr_assert_eq(st2.contexts, st0.contexts, "leaked context entries");
    cr_assert_eq(st2.ctx_handles, st0.ctx_handles);
    cr_assert_eq(st2.failed_destroys, st0.failed_destroys);
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_ALL), 0, "the driver still holds %zu objects", sim()->live(CUSIM_ALL));
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  Many threads destroy the same handle at once.
 * ------------------------------------------------------------------------ */

#define RACERS 16

struct race {
    pthread_barrier_t start, end;
    int rounds;
    int kind;                           /* per round: 0 event, 1 stream */
    uint64_t id;
    CUresult rc[RACERS];
};

struct racer_arg {
    struct race *r;
    int index;
};

static void *racer(void *p)
{
    struct racer_arg *a = p;
    struct race *r = a->r;
    for (int round = 0; round < r->rounds; round++) {
        pthread_barrier_wait(&r->start);
        any_handle mine = {r->id};     /* each thread its own copy */
        r->rc[a->index] = child_destroy(r->kind, &mine.id);
        pthread_barrier_wait(&r->end);
    }
    return NULL;
}

Test(threads, concurrent_destroys_of_one_handle_exactly_one_wins, .timeout = 120)
{
    NEED_DRIVER();
    struct race r;
    memset(&r, 0, sizeof r);
    r.rounds = sim() ? 400 : 100;
    pthread_barrier_init(&r.start, NULL, RACERS + 1);
    pthread_barrier_init(&r.end, NULL, RACERS + 1);
    cuctx_ctx ctx = {0};
    CHECK_OK(cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO));
    CHECK_OK(cuctx_pop_current());

    pthread_t t[RACERS];
    struct racer_arg args[RACERS];
    for (int i = 0; i < RACERS; i++) {
        args[i] = (struct racer_arg){&r, i};
        cr_assert_eq(pthread_create(&t[i], NULL, racer, &args[i]), 0);
    }
    struct cuctx_stats st0 = stats();
    double t0 = now_s();
    for (int round = 0; round < r.rounds; round++) {
        r.kind = round % 2;
        any_handle h = {0};
        CHECK_OK(child_create(r.kind, &h.id, ctx));
        uint64_t raw = r.kind == 0 ? (uint64_t)(uintptr_t)cuctx_event_raw((cuctx_event){h.id})
                                   : (uint64_t)(uintptr_t)cuctx_stream_raw((cuctx_stream){h.id});
        r.id = h.id;
        size_t m = log_mark();
        pthread_barrier_wait(&r.start);
        pthread_barrier_wait(&r.end);
        int ok = 0, invalid = 0;
        for (int i = 0; i < RACERS; i++) {
            ok += r.rc[i] == CUDA_SUCCESS;
            invalid += r.rc[i] == CUDA_ERROR_INVALID_HANDLE;
        }
        cr_assert_eq(ok, 1, "round %d (%s): %d destroys succeeded", round, r.kind ? "stream" : "event", ok);
        cr_assert_eq(invalid, RACERS - 1, "round %d: %d INVALID_HANDLE of %d", round, invalid, RACERS - 1);
        if (sim())
            cr_assert_eq(calls_on(destroy_fns[r.kind], raw, m), 1, "round %d: driver destroys of %#llx", round,
                         (unsigned long long)raw);
        /* the handle is dead for its own kind's use too, which never reaches the driver; a
         * use through the other kind's function would be refused for the kind alone */
        size_t after = log_mark();
        CUresult use = r.kind == 0 ? cuctx_event_query((cuctx_event){h.id})
                                   : cuctx_stream_synchronize((cuctx_stream){h.id});
        cr_assert_eq(use, CUDA_ERROR_INVALID_HANDLE, "round %d (%s): a use after the race gave %s", round,
                     r.kind ? "stream" : "event", cuctx_result_name(use));
        if (sim())
            cr_assert_eq(log_mark(), after, "round %d: the use of a destroyed handle reached the driver", round);
    }
    double secs = now_s() - t0;
    for (int i = 0; i < RACERS; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "same-handle destroy race: %d rounds x %d threads, %.3f s\n", r.rounds, RACERS, secs);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.events, st0.events);
    cr_assert_eq(st1.streams, st0.streams);
    cr_assert_eq(st1.stale_skips, st0.stale_skips);
    if (sim()) {
        cr_assert_eq(sim()->calls("cuEventDestroy") + sim()->calls("cuStreamDestroy"), (unsigned long)r.rounds);
        cr_assert_eq(sim()->live(CUSIM_EVENT) + sim()->live(CUSIM_STREAM), 0);
    }
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    pthread_barrier_destroy(&r.start);
    pthread_barrier_destroy(&r.end);
    ASSERT_NO_MISUSE();
}

/* ------------------------------------------------------------------------
 *  Uses racing a destroy: of the child, or of its context.
 * ------------------------------------------------------------------------ */

#define USERS 6
#define USES_PER_ROUND 200

struct use_race {
    pthread_barrier_t start, end;
    int rounds;
    uint64_t ev;
    _Atomic int go;
    _Atomic int destroyed;      /* set by the main thread once its destroy returned */
    _Atomic unsigned long ok, refused, bad;
    _Atomic int first_bad;
    CUresult refusal;           /* the expected failure once the destroy happened */
};

static void *user(void *p)
{
    struct use_race *u = p;
    for (int round = 0; round < u->rounds; round++) {
        pthread_barrier_wait(&u->start);
        cuctx_event ev = {u->ev};
        for (unsigned long n = 0;; n++) {
            CUresult rc = cuctx_event_query(ev);
            if (rc == CUDA_SUCCESS) {
                atomic_fetch_add(&u->ok, 1);
                /* bounded, so the simulator's call log (1,000,000 records)
                 * keeps every round whole: past this, wait for the destroy */
                if (n >= USES_PER_ROUND)
                    while (!atomic_load(&u->destroyed))
                        sched_yield();
            } else if (rc == u->refusal) {
                atomic_fetch_add(&u->refused, 1);
                break;          /* the destroy happened: every later use fails too */
            } else {
                int zero = 0;
                atomic_compare_exchange_strong(&u->first_bad, &zero, (int)rc);
                atomic_fetch_add(&u->bad, 1);
                break;
            }
            if (n == 8)
                atomic_store(&u->go, 1);
        }
        pthread_barrier_wait(&u->end);
    }
    return NULL;
}

/* Runs rounds of: USERS threads query one event while the main thread
 * destroys the event (child) or its context (ctx_destroy). */
static void run_use_race(int destroy_context)
{
    struct use_race u;
    memset(&u, 0, sizeof u);
    u.rounds = sim() ? 300 : 40;
    if (destroy_context && !sim())
        u.rounds = 3;           /* a context per round */
    u.refusal = destroy_context ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_ERROR_INVALID_HANDLE;
    if (sim())
        sim()->set_recycling(0);    /* every event value unique: a late call on one is visible */
    pthread_barrier_init(&u.start, NULL, USERS + 1);
    pthread_barrier_init(&u.end, NULL, USERS + 1);
    pthread_t t[USERS];
    for (int i = 0; i < USERS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, user, &u), 0);

    cuctx_ctx ctx = {0};
    struct cuctx_stats st0 = stats();
    double t0 = now_s();
    for (int round = 0; round < u.rounds; round++) {
        if (!ctx.id) {
            CHECK_OK(cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO));
            CHECK_OK(cuctx_pop_current());
        }
        cuctx_event ev = {0};
        CHECK_OK(cuctx_event_create(&ev, ctx, 0));
        uint64_t raw = (uint64_t)(uintptr_t)cuctx_event_raw(ev);
        u.ev = ev.id;
        atomic_store(&u.go, 0);
        atomic_store(&u.destroyed, 0);
        size_t m = log_mark();
        pthread_barrier_wait(&u.start);
        while (!atomic_load(&u.go))
            sched_yield();
        if (destroy_context) {
            CHECK_OK(cuctx_ctx_destroy(&ctx));
        } else {
            CHECK_OK(cuctx_event_destroy(&ev));
        }
        atomic_store(&u.destroyed, 1);
        pthread_barrier_wait(&u.end);
        if (sim()) {
            /* nothing reached the driver for the event after its death */
            struct cusim_call c;
            int dead = 0;
            const char *death = destroy_context ? "cuCtxDestroy" : "cuEventDestroy";
            for (size_t i = m; sim()->log_get(i, &c) == 0; i++) {
                if (strcmp(c.fn, death) == 0)
                    dead = 1;
                else if (dead && strcmp(c.fn, "cuEventQuery") == 0 && c.handle == raw)
                    cr_assert_fail("round %d: cuEventQuery(%#llx) after %s", round, (unsigned long long)raw, death);
            }
            cr_assert(dead, "round %d: no %s in the log", round, death);
        }
        if (destroy_context)
            CHECK_OK(cuctx_event_destroy(&ev));     /* a stale skip */
    }
    double secs = now_s() - t0;
    for (int i = 0; i < USERS; i++)
        pthread_join(t[i], NULL);
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    fprintf(stderr, "use vs %s destroy: %d rounds, %lu uses ok, %lu refused, %.3f s\n",
            destroy_context ? "context" : "event", u.rounds, atomic_load(&u.ok), atomic_load(&u.refused), secs);
    cr_assert_eq(atomic_load(&u.bad), 0, "%lu uses failed with %s", atomic_load(&u.bad),
                 cuctx_result_name((CUresult)atomic_load(&u.first_bad)));
    cr_assert_eq(atomic_load(&u.refused), (unsigned long)(USERS * u.rounds), "every user saw the destroy once");
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.events, st0.events);
    cr_assert_eq(st1.stale_skips, st0.stale_skips + (destroy_context ? (uint64_t)u.rounds : 0));
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    pthread_barrier_destroy(&u.start);
    pthread_barrier_destroy(&u.end);
    ASSERT_NO_MISUSE();
}

Test(threads, uses_racing_child_destroy_never_reach_driver_after_it, .timeout = 120)
{
    NEED_DRIVER();
    run_use_race(0);
}

Test(threads, child_uses_racing_context_destroy_never_reach_driver_after_it, .timeout = 120)
{
    NEED_DRIVER();
    run_use_race(1);
}

/* ------------------------------------------------------------------------
 *  A million live objects.
 * ------------------------------------------------------------------------ */

#define MANY (1u << 20)

Test(threads, registry_holds_a_million_live_events, .timeout = 120)
{
    NEED_DRIVER();
    NEED_SIM();         /* a million driver events is the simulator's business */
    cuctx_ctx ctx = {0};
    CHECK_OK(cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO));
    cuctx_event *ev = calloc(MANY, sizeof *ev);
    cr_assert_not_null(ev);
    double t0 = now_s();
    for (unsigned i = 0; i < MANY; i++) {
        CUresult rc = cuctx_event_create(&ev[i], ctx, CU_EVENT_DISABLE_TIMING);
        if (rc != CUDA_SUCCESS)
            cr_assert_fail("event %u: %s: %s", i, cuctx_result_name(rc), cuctx_last_error_message());
    }
    double t_create = now_s() - t0;
    struct cuctx_stats st = stats();
    cr_assert_eq(st.events, MANY, "stats: %zu live events", st.events);
    cr_assert_eq(sim()->live(CUSIM_EVENT), MANY);

    /* every handle is distinct and still names its own event */
    uint64_t first_raw = (uint64_t)(uintptr_t)cuctx_event_raw(ev[0]);
    uint64_t last_raw = (uint64_t)(uintptr_t)cuctx_event_raw(ev[MANY - 1]);
    cr_assert_neq(first_raw, 0);
    cr_assert_neq(first_raw, last_raw);
    cr_assert_eq(sim()->is_live(CUSIM_EVENT, first_raw), 1);
    for (unsigned i = 0; i < MANY; i += 4099)
        cr_assert_neq(cuctx_event_raw(ev[i]), NULL, "event %u", i);
    CHECK_OK(cuctx_event_record(ev[MANY / 2], (cuctx_stream){0}));

    /* half destroyed through the driver, half skipped after the context */
    double t1 = now_s();
    for (unsigned i = 0; i < MANY / 2; i++)
        CHECK_OK(cuctx_event_destroy(&ev[i]));
    double t_destroy = now_s() - t1;
    cr_assert_eq(sim()->calls("cuEventDestroy"), MANY / 2);
    uint64_t skips0 = stats().stale_skips;
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    double t2 = now_s();
    for (unsigned i = MANY / 2; i < MANY; i++)
        CHECK_OK(cuctx_event_destroy(&ev[i]));
    double t_skip = now_s() - t2;
    st = stats();
    cr_assert_eq(st.events, 0);
    cr_assert_eq(st.stale_skips, skips0 + MANY / 2);
    cr_assert_eq(sim()->calls("cuEventDestroy"), MANY / 2);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    free(ev);
    /* timings are reported, not asserted: sanitizer builds are many times slower */
    fprintf(stderr, "%u events: create %.3f s, destroy half %.3f s, skip half %.3f s\n", MANY, t_create, t_destroy,
            t_skip);
    ASSERT_NO_MISUSE();
}
