/* SPDX-License-Identifier: MIT */
/* test_oom.c - allocation failure and leaks in lib/, seen through an
 * allocator of the test's own.
 *
 * This program defines malloc, calloc, realloc, free, mmap and munmap. It is
 * linked with the internal copy of lib/ (libcuctx_internal.la), whose calls
 * of them bind to these definitions; the simulated driver, Criterion and
 * libc reach them too, through their PLT. Each definition forwards to the
 * real one (glibc's __libc_* entry points, or the system call), and looks at
 * its caller's address: only a call made from this executable's code (lib/
 * and the test bodies) is counted or may be made to fail.
 *
 * - live_blocks(): heap blocks allocated and not freed by this executable's
 *   code, counted while `counting` is set (a test sets it around library
 *   calls only, no assertion inside: Criterion's asserts may free from the
 *   test body what libcriterion allocated); `made` counts the allocations,
 *   so that a test can tell it measured something.
 * - empty_callocs: callocs from this executable's code that asked for no
 *   bytes (a count or a size of 0): a block lib/ then writes into is too
 *   small, which glibc's allocator does not notice (its smallest block has
 *   room for a few words).
 * - fail_calloc, fail_realloc: the nth calloc (realloc) from now fails
 *   (1 = the next one); 0 = none. In lib/ ctxmap.c calls calloc, and
 *   mem_pool.c for a pool's record.
 * - fail_segments: mappings of the handle table's segment size fail: that
 *   many more (counted down), every one while it is negative.
 * - race_segment: the first mapping of the segment size lets another thread
 *   map the same segment (and win) before it returns.
 * - guarding: each block malloc, calloc or realloc hands this executable's
 *   code is placed at the end of a mapping of its own, right before a page
 *   that cannot be read, so that a read one element past it (its size a
 *   multiple of 16) faults; free and realloc know such blocks by a table.
 *
 * Criterion runs every test in a process of its own, so a test starts with
 * a fresh library and no state left by another.
 *
 * Under AddressSanitizer or ThreadSanitizer, which bring their own allocator
 * (the blocks they hand out are not glibc's), the program defines none of
 * these and its tests are skipped; under valgrind, whose memcheck replaces
 * the executable's malloc too, every test finds that its own malloc is not
 * the one called, and skips. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuctx.h"
#include "ctxmap.h"
#include "driver.h"
#include "registry.h"
#include "testlib.h"

/* ---- the allocator ------------------------------------------------------ */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OWN_ALLOCATOR 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define OWN_ALLOCATOR 0
#endif
#endif
#ifndef OWN_ALLOCATOR
#define OWN_ALLOCATOR 1
#endif

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
extern char __executable_start[], etext[];

static atomic_int counting;
static atomic_long live, made, seen;
static atomic_int fail_calloc, fail_realloc;
static atomic_long empty_callocs;
static atomic_int fail_segments, race_segment;
static atomic_int raced_unmapped;
static atomic_int guarding;
/* (mp2) calloc_pause: this thread's next calloc of this executable's code
 * sets calloc_paused and waits for calloc_go (a race's loser held in it). */
static _Thread_local int calloc_pause;
static atomic_int calloc_paused, calloc_go;
/* (mp1) called, once, by the next realloc from this executable's code
 * (declared for every build: the tests name it; only the own allocator calls it) */
static void (*_Atomic realloc_hook)(void);
/* (h3) called, once, by the free of free_hook_block (from this executable's code) */
static void (*_Atomic free_hook)(void);
static void *_Atomic free_hook_block;

#if OWN_ALLOCATOR
static void *raced_mapping;

static int ours(const void *caller)
{
    return (const char *)caller >= __executable_start && (const char *)caller < etext;
}

static void count(const void *caller, long d)
{
    if (ours(caller) && atomic_load(&counting)) {
        atomic_fetch_add(&live, d);
        if (d > 0)
            atomic_fetch_add(&made, 1);
    }
}

/* Whether this call is the nth armed one (counting it down). */
static int fails(atomic_int *armed, const void *caller)
{
    if (!ours(caller))
        return 0;
    int n = atomic_load(armed);
    while (n > 0 && !atomic_compare_exchange_weak(armed, &n, n - 1))
        ;
    return n == 1;
}

/* The guarded blocks (see `guarding` above): block, its mapping, its size. */
#define GUARDED_MAX 4096
static struct guarded { char *block, *map; size_t len, size; } guarded[GUARDED_MAX];
static _Atomic size_t n_guarded;     /* (read without the lock by free: 0 is the usual answer) */
static atomic_flag guarded_lock = ATOMIC_FLAG_INIT;

static void guarded_lock_take(void)
{
    while (atomic_flag_test_and_set_explicit(&guarded_lock, memory_order_acquire))
        ;
}

static void guarded_lock_give(void) { atomic_flag_clear_explicit(&guarded_lock, memory_order_release); }

static void *guarded_alloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), room = (n + 15) & ~(size_t)15;
    size_t len = (room + page - 1) / page * page + page;
    long r = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == -1)
        return NULL;
    char *map = (char *)r, *block = map + len - page - room;
    if (mprotect(map + len - page, page, PROT_NONE) != 0)
        abort();
    guarded_lock_take();
    if (n_guarded == GUARDED_MAX)
        abort();
    guarded[n_guarded++] = (struct guarded){block, map, len, n};
    guarded_lock_give();
    return block;       /* (zero: a new anonymous mapping) */
}

/* Takes p out of the table if it is a guarded block: its size, else -1. */
static long guarded_forget(void *p, char **map, size_t *len)
{
    long size = -1;
    guarded_lock_take();
    for (size_t i = 0; i < n_guarded; i++) {
        if (guarded[i].block == p) {
            size = (long)guarded[i].size;
            *map = guarded[i].map;
            *len = guarded[i].len;
            guarded[i] = guarded[--n_guarded];
            break;
        }
    }
    guarded_lock_give();
    return size;
}

static int guarded_here(const void *caller)
{
    return ours(caller) && atomic_load(&guarding);
}

void *malloc(size_t n)
{
    atomic_fetch_add(&seen, 1);
    void *p = guarded_here(__builtin_return_address(0)) ? guarded_alloc(n) : __libc_malloc(n);
    if (p)
        count(__builtin_return_address(0), 1);
    return p;
}

void *calloc(size_t n, size_t size)
{
    if (calloc_pause && ours(__builtin_return_address(0))) {
        calloc_pause = 0;
        atomic_store(&calloc_paused, 1);
        while (!atomic_load(&calloc_go))
            nanosleep(&(struct timespec){0, 100000}, NULL);
    }
    if (fails(&fail_calloc, __builtin_return_address(0)))
        return NULL;
    if ((n == 0 || size == 0) && ours(__builtin_return_address(0)))
        atomic_fetch_add(&empty_callocs, 1);
    void *p = guarded_here(__builtin_return_address(0)) && size && n <= SIZE_MAX / size ? guarded_alloc(n * size)
                                                                                       : __libc_calloc(n, size);
    if (p)
        count(__builtin_return_address(0), 1);
    return p;
}


void *realloc(void *old, size_t n)
{
    if (fails(&fail_realloc, __builtin_return_address(0)))
        return NULL;
    void (*hook)(void) = ours(__builtin_return_address(0)) ? atomic_exchange(&realloc_hook, NULL) : NULL;
    if (hook)
        hook();
    char *map = NULL;
    size_t len = 0;
    long was = old && n_guarded ? guarded_forget(old, &map, &len) : -1;
    void *p;
    if (was >= 0 || (!old && guarded_here(__builtin_return_address(0)))) {
        p = guarded_alloc(n);
        if (p && old) {
            memcpy(p, old, (size_t)was < n ? (size_t)was : n);
            syscall(SYS_munmap, map, len);
        } else if (old) {   /* failed: the old block stays */
            guarded_lock_take();
            guarded[n_guarded++] = (struct guarded){old, map, len, (size_t)was};
            guarded_lock_give();
        }
    } else {
        p = __libc_realloc(old, n);
    }
    if (p && !old)
        count(__builtin_return_address(0), 1);
    return p;
}

void free(void *p)
{
    char *map = NULL;
    size_t len = 0;
    if (p)
        count(__builtin_return_address(0), -1);
    if (p && p == atomic_load(&free_hook_block) && ours(__builtin_return_address(0))) {
        void (*hook)(void) = atomic_exchange(&free_hook, NULL);
        if (hook)
            hook();
    }
    if (p && n_guarded && guarded_forget(p, &map, &len) >= 0)
        syscall(SYS_munmap, map, len);
    else
        __libc_free(p);
}

static void *another_segment_user(void *arg)
{
    (void)arg;
    return cuctx__slot_alloc();
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    const void *caller = __builtin_return_address(0);
    int segment = ours(caller) && len == CUCTX_SEG_BYTES;
    if (segment) {
        int n = atomic_load(&fail_segments);
        while (n > 0 && !atomic_compare_exchange_weak(&fail_segments, &n, n - 1))
            ;
        if (n != 0) {
            errno = ENOMEM;
            return MAP_FAILED;
        }
    }
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    void *m = r == -1 ? MAP_FAILED : (void *)r;
    int one = 1;
    if (segment && m != MAP_FAILED && atomic_compare_exchange_strong(&race_segment, &one, 0)) {
        /* Another thread takes the next slot: the same segment, mapped and
         * published by it while this one has not published its own. */
        pthread_t t;
        void *other = NULL;
        raced_mapping = m;
        if (pthread_create(&t, NULL, another_segment_user, NULL) == 0)
            pthread_join(t, &other);
        if (!other)
            abort();
    }
    return m;
}

int munmap(void *addr, size_t len)
{
    if (addr && addr == raced_mapping)
        atomic_store(&raced_unmapped, 1);
    return (int)syscall(SYS_munmap, addr, len);
}
#endif

/* ---- helpers ------------------------------------------------------------- */

/* Skips the test unless the malloc called is this program's (called
 * through a pointer: a direct call could be this file's malloc inlined). */
#define NEED_OWN_ALLOCATOR()                                                        \
    do {                                                                            \
        long seen_ = atomic_load(&seen);                                            \
        void *(*volatile malloc_)(size_t) = malloc;                                 \
        free(malloc_(16));                                                          \
        if (atomic_load(&seen) == seen_)                                            \
            cr_skip_test("malloc is not this program's (valgrind replaces it)");   \
    } while (0)

static long live_blocks(void)
{
    return atomic_load(&live);
}

static size_t live_entries(void)
{
    int64_t n[KIND_COUNT];
    cuctx__live_counts(n);
    return (size_t)n[KIND_ENTRY];
}

/* Takes slots until the handle table needs a new segment, and then makes
 * the mapping of segments fail (the first segment mapped before); the slots
 * are kept, the last one taken in spare_slot. */
static struct cuctx_slot *spare_slot;

static void exhaust_the_table(void)
{
    struct cuctx_slot *first = cuctx__slot_alloc();
    cr_assert_not_null(first);
    cuctx__slot_discard(first);
    atomic_store(&fail_segments, -1);
    for (unsigned i = 0; i <= 2u << CUCTX_SEG_BITS; i++) {
        struct cuctx_slot *s = cuctx__slot_alloc();
        if (!s) {
            cr_assert_not_null(spare_slot);
            return;
        }
        spare_slot = s;
    }
    cr_assert_fail("the handle table never needed a new segment");
}

TestSuite(oom, .disabled = !OWN_ALLOCATOR);

#define N_CTX 100

/* Creates and destroys N_CTX owned contexts (the context map grows to 256
 * and shrinks back to 64); the first failure's result, or CUDA_SUCCESS. */
static CUresult churn(void)
{
    static cuctx_ctx c[N_CTX];
    CUresult rc = CUDA_SUCCESS, r;
    for (int i = 0; i < N_CTX; i++)
        if ((r = cuctx_ctx_create(&c[i], 0, 0)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r;
    for (int i = N_CTX - 1; i >= 0; i--)
        if ((r = cuctx_ctx_destroy(&c[i])) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r;
    return rc;
}

/* ---- the context map ------------------------------------------------------ */

Test(oom, growing_and_shrinking_the_context_map_leaks_nothing)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    CHECK_OK(churn());          /* the first run makes what lasts (the map itself) */
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    CUresult rc = churn();
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cr_assert_geq(atomic_load(&made) - made0, 8, "the map's two growths and two shrinks were not seen");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after %d contexts made and destroyed",
                 after - before, N_CTX);
}

/* The map grows when a put would take it past half full: from 64 keys at
 * the 33rd context. Either of its two new arrays failing fails the create:
 * out of memory, the handle {0}, the driver's context destroyed, the entry
 * ended, and the array that was allocated freed. */
Test(oom, a_failed_growth_of_the_context_map_fails_the_create_and_leaks_nothing)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    static cuctx_ctx c[64];
    int n = 0;
    while (cuctx__map_count() < 32) {
        cr_assert_lt(n, 64);
        CHECK_OK(cuctx_ctx_create(&c[n], 0, 0));
        n++;
    }
    for (int which = 1; which <= 2; which++) {
        cuctx_ctx d = {0};
        size_t ctxs = sim()->live(CUSIM_CONTEXT), entries = live_entries(), mapped = cuctx__map_count();
        atomic_store(&counting, 1);
        long before = live_blocks();
        atomic_store(&fail_calloc, which);
        CUresult rc = cuctx_ctx_create(&d, 0, 0);
        atomic_store(&fail_calloc, 0);
        long after = live_blocks();
        atomic_store(&counting, 0);
        cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "calloc %d of the growth failed: %s (%s)", which,
                     cuctx_result_name(rc), cuctx_last_error_message());
        cr_assert_eq(d.id, 0);
        cr_assert_eq(sim()->live(CUSIM_CONTEXT), ctxs, "the driver's context outlived the failed create");
        cr_assert_eq(live_entries(), entries, "the failed create left its entry published");
        cr_assert_eq(cuctx__map_count(), mapped);
        cr_assert_eq(after, before, "calloc %d of the growth failed: %ld heap blocks leaked", which,
                     after - before);
        cr_assert(strstr(cuctx_last_error_message(), "cannot grow the context map"), "%s",
                  cuctx_last_error_message());
        cr_assert_eq(misuses(), 0);
    }
    cuctx_ctx d = {0};
    CHECK_OK(cuctx_ctx_create(&d, 0, 0));       /* and the growth works again */
    CHECK_OK(cuctx_ctx_destroy(&d));
    for (int i = n - 1; i >= 0; i--)
        CHECK_OK(cuctx_ctx_destroy(&c[i]));
    cr_assert_eq(misuses(), 0);
}

/* The stats walk the map over a copy of its pairs (ctxmap.c's foreach). */
Test(oom, the_stats_leak_nothing)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    cuctx_ctx c = {0}, p = {0};
    struct cuctx_stats st;
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    cuctx_stats_get(&st);
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    for (int i = 0; i < 10; i++)
        cuctx_stats_get(&st);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_geq(atomic_load(&made) - made0, 10, "the stats' copies of the map were not seen");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after 10 stats", after - before);
    cr_assert_eq(st.ctx_handles, 2);
    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* The stats count contexts by collecting the entry ids the live handles
 * name (diagnostics.c), into an array grown by realloc. When it cannot
 * grow, the count falls back to the live entries (exact here: each entry
 * is named by a handle), not to 0, and the array is freed. */
Test(oom, stats_that_cannot_collect_the_handles_count_the_live_entries)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    cuctx_ctx c = {0}, p = {0};
    struct cuctx_stats st;
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    cuctx_stats_get(&st);
    cr_assert_eq(st.contexts, 2);
    atomic_store(&counting, 1);
    long before = live_blocks();
    atomic_store(&fail_realloc, 1);
    cuctx_stats_get(&st);
    int left = atomic_load(&fail_realloc);
    atomic_store(&fail_realloc, 0);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(left, 0, "the stats made no realloc");
    cr_assert_eq(live_entries(), 2);
    cr_assert_eq(st.contexts, 2, "%zu contexts counted when the handles could not be collected", st.contexts);
    cr_assert_eq(st.ctx_handles, 2);
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after the stats' failed realloc", after - before);
    CHECK_OK(cuctx_ctx_destroy(&p));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* The same when the array cannot grow a second time: the first block,
 * made by the first realloc, is freed with the failure. 70 live handles
 * need 128 ids, past the first 64. Mutant killed: lib/diagnostics.c:72
 * (`free(e.ids);` on failure removed; seed 31). */
Test(oom, stats_whose_second_growth_fails_leak_nothing)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    cuctx_ctx c = {0};
    cuctx_event ev[70];
    struct cuctx_stats st;
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    for (int i = 0; i < 70; i++) {
        ev[i] = (cuctx_event){0};
        CHECK_OK(cuctx_event_create(&ev[i], c, 0));
    }
    cuctx_stats_get(&st);
    atomic_store(&counting, 1);
    long before = live_blocks();
    atomic_store(&fail_realloc, 2);
    cuctx_stats_get(&st);
    int left = atomic_load(&fail_realloc);
    atomic_store(&fail_realloc, 0);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(left, 0, "the stats made fewer than two reallocs");
    cr_assert_eq(st.contexts, 1);
    cr_assert_eq(st.events, 70);
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after the stats' failed second realloc", after - before);
    for (int i = 0; i < 70; i++)
        CHECK_OK(cuctx_event_destroy(&ev[i]));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* The stats of a context's handle and n events, with the second realloc
 * of their id array armed to fail (the first growth holds 64 ids): the
 * count stays that of the entries the handles name, not the fallback to the
 * live entries. Here those differ: the context current at a {0} create,
 * made by the driver outside cuctx, keeps its entry after that create's
 * child is gone, and no handle names it. */
static void stats_of_events_with_a_second_growth_failing(int n)
{
    cuctx_ctx c = {0};
    cuctx_event ev[64], met = {0};
    struct cuctx_stats st;
    cr_assert_leq(n, 64);
    CUcontext raw = raw_ctx_create(0, LEFT_CURRENT);
    CHECK_OK(cuctx_event_create(&met, (cuctx_ctx){0}, 0));
    CHECK_OK(cuctx_event_destroy(&met));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    for (int i = 0; i < n; i++) {
        ev[i] = (cuctx_event){0};
        CHECK_OK(cuctx_event_create(&ev[i], c, 0));
    }
    cr_assert_eq(live_entries(), 2, "the context met by the {0} create kept no entry");
    cuctx_stats_get(&st);
    cr_assert_eq(st.contexts, 1);
    atomic_store(&fail_realloc, 2);
    cuctx_stats_get(&st);
    int left = atomic_load(&fail_realloc);
    atomic_store(&fail_realloc, 0);
    cr_assert_eq(st.contexts, 1, "%zu contexts: the collection failed and fell back to the live entries",
                 st.contexts);
    cr_assert_eq(left, 1, "the stats of %d handles made %s reallocs", n + 1, left == 0 ? "two or more" : "no");
    cr_assert_eq(st.ctx_handles, 1);
    cr_assert_eq(st.events, (size_t)n);
    for (int i = 0; i < n; i++)
        CHECK_OK(cuctx_event_destroy(&ev[i]));
    CHECK_OK(cuctx_ctx_destroy(&c));
    raw_ctx_destroy(raw);
}

/* The stats collect one entry id per live handle (two for a pair only), so
 * 40 handles fit the array's first growth (64 ids): no second realloc is
 * made, and one that would fail changes nothing. Mutant killed:
 * lib/diagnostics.c:36 `const` (the second id of a handle that is no pair
 * 1 instead of 0, collected for every handle: 80 ids, a second growth,
 * which failed; seed 41). */
Test(oom, stats_collect_one_id_per_handle_that_is_no_pair)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    stats_of_events_with_a_second_growth_failing(39);
}

/* The context map's walk (the sweep by id that the stats make) reads no
 * element past its arrays: with every block of lib/ ending right before
 * a page that cannot be read, one read past the keys or past the copy of
 * the pairs faults. The map's arrays are made at its first entry, after
 * the guard is set. Mutants killed: lib/ctxmap.c:124 (the walk of the keys
 * to `i <= cap`) and lib/ctxmap.c:127 (the walk of the copy to `i <= n`;
 * seed 31), reads past a block that glibc's allocator leaves unseen. */
Test(oom, the_context_maps_walk_reads_nothing_past_its_arrays)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx b = {0};
    cr_assert_eq(cuctx__map_count(), 0, "the map was made before the guard");
    CUcontext raw = raw_ctx_create(0, POPPED);
    atomic_store(&guarding, 1);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));    /* the map's first entry: its arrays made */
    unsigned long ids = calls("cuCtxGetId");
    struct cuctx_stats st;
    cuctx_stats_get(&st);                   /* the sweep: the walk */
    atomic_store(&guarding, 0);
    cr_assert_gt(calls("cuCtxGetId"), ids, "the stats made no sweep by id");
    cr_assert_eq(st.contexts, 1);
    CHECK_OK(cuctx_ctx_destroy(&b));
    raw_ctx_destroy(raw);
    cr_assert_eq(misuses(), 0);
}

/* ---- the handle table ------------------------------------------------------ */

/* A context create refused for want of a slot: out of memory, the handle
 * {0}, the driver's context destroyed, no entry left, no misuse; then,
 * with segments mapped again, a create that works. */
static void create_refused_for_want_of_a_slot(size_t ctxs, size_t entries)
{
    cuctx_ctx c = {0};
    CUresult rc = cuctx_ctx_create(&c, 0, 0);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(c.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    cr_assert_eq(sim()->live(CUSIM_CONTEXT), ctxs, "the driver's context outlived the failed create");
    cr_assert_eq(live_entries(), entries, "the failed create left its entry");
    cr_assert_eq(misuses(), 0);
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* The entry's slot is the one that cannot be had (the next segment's
 * mapping fails once, a later one would succeed): the create stops there. */
Test(oom, a_context_create_with_no_slot_left_fails_cleanly)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    size_t ctxs = sim()->live(CUSIM_CONTEXT), entries = live_entries();
    exhaust_the_table();
    atomic_store(&fail_segments, 1);
    create_refused_for_want_of_a_slot(ctxs, entries);
}

/* The slot for the context's entry is the last one: its handle finds none,
 * and the entry ends again. */
Test(oom, a_context_create_with_one_slot_left_fails_cleanly)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    size_t ctxs = sim()->live(CUSIM_CONTEXT), entries = live_entries();
    exhaust_the_table();
    cr_assert_null(cuctx__slot_alloc());
    uint64_t spare = cuctx__slot_publish(spare_slot, KIND_EVENT);
    struct cuctx_slot *s = cuctx__close(spare, KIND_EVENT);
    cr_assert_not_null(s);
    cuctx__drain(s);
    cuctx__slot_free(s);
    create_refused_for_want_of_a_slot(ctxs, entries);
}

/* A child create that finds no slot lets go of its context's entry: the
 * context's destroy, which drains the entry, does not wait for ever. */
Test(oom, a_child_create_with_no_slot_left_fails_and_lets_go_of_its_context, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    size_t events = sim()->live(CUSIM_EVENT);
    exhaust_the_table();
    CUresult rc = cuctx_event_create(&ev, c, 0);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(ev.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    cr_assert_eq(sim()->live(CUSIM_EVENT), events);
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* Two threads cross into a new segment of the handle table at once: the
 * one whose mapping was not published unmaps it. */
Test(oom, the_loser_of_two_threads_making_a_segment_unmaps_its_own)
{
    NEED_OWN_ALLOCATOR();
    atomic_store(&race_segment, 1);
    for (unsigned i = 0; i <= 2u << CUCTX_SEG_BITS && atomic_load(&race_segment); i++)
        cr_assert_not_null(cuctx__slot_alloc());
    cr_assert_eq(atomic_load(&race_segment), 0, "no new segment was made");
    struct cuctx_slot *s = cuctx__slot_alloc();
    cr_assert_not_null(s);
    uint64_t id = cuctx__slot_publish(s, KIND_EVENT);
    cr_assert_eq(cuctx__slot_find(cuctx__id_index(id)), s);
    cr_assert(atomic_load(&raced_unmapped), "the losing thread's mapping of the segment was not unmapped");
}

/* ---- the table of primary contexts ---------------------------------------- */

/* The first use of a device's primary context grows cuctx's per-device
 * table; realloc failing there fails the call and gives the retain back. */
Test(oom, a_primary_retain_that_cannot_grow_the_device_table_fails_cleanly)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx p = {0};
    atomic_store(&fail_realloc, 1);
    CUresult rc = cuctx_ctx_primary(&p, 0);
    atomic_store(&fail_realloc, 0);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(p.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "table of primary contexts"), "%s", cuctx_last_error_message());
    cr_assert_eq(sim()->live(CUSIM_PRIMARY), 0, "the failed call kept its primary retain");
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_ctx_destroy(&p));
}

Test(oom, a_green_create_that_cannot_grow_the_device_table_fails_cleanly)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0};
    atomic_store(&fail_realloc, 1);
    CUresult rc = cuctx_ctx_green(&g, 0, 8);
    atomic_store(&fail_realloc, 0);
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        cr_skip_test("no green contexts: %s", cuctx_last_error_message());
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "table of primary contexts"), "%s", cuctx_last_error_message());
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0, "the failed create left its green context");
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_ctx_green(&g, 0, 8));
    CHECK_OK(cuctx_ctx_destroy(&g));
    cr_assert_eq(misuses(), 0);
}

/* ---- the record of an adopted pool ----------------------------------------- */

/* An owned context with a non-blocking stream in it; their destroys. */
static void ctx_and_stream(cuctx_ctx *c, cuctx_stream *s)
{
    CHECK_OK(cuctx_ctx_create(c, 0, 0));
    CHECK_OK(cuctx_stream_create(s, *c, CU_STREAM_NON_BLOCKING, 0));
}

static void ctx_and_stream_end(cuctx_ctx *c, cuctx_stream *s)
{
    CHECK_OK(cuctx_stream_destroy(s));
    CHECK_OK(cuctx_ctx_destroy(c));
}

struct timed_destroy { cuctx_mem_pool pool; CUresult rc; atomic_int done; };

static void *destroy_pool(void *p)
{
    struct timed_destroy *d = p;
    d->rc = cuctx_mem_pool_destroy(&d->pool);
    atomic_store(&d->done, 1);
    return NULL;
}

/* An owned pool's record is made at its first allocation (calloc in
 * cuctx__pool_ref). When it cannot be, the allocation is refused with
 * CUDA_ERROR_OUT_OF_MEMORY and lets go of its use of the pool: the pool's
 * destroy then returns (here within 10 s, on a thread of its own, so that a
 * destroy waiting for ever fails the test instead of hanging it) and
 * destroys the driver's pool once. Mutant killed: lib/mem_async.c's
 * cuctx__child_done(&pool) on that path removed (seed 23). */
Test(oom, an_allocation_whose_pool_record_cannot_be_made_lets_go_of_the_pool, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    struct timed_destroy d = {.pool = {0}};
    ctx_and_stream(&c, &s);
    CUmemoryPool raw = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&d.pool, raw, 1));
    size_t pools = sim()->live(CUSIM_POOL);
    unsigned long allocs = calls("cuMemAllocFromPoolAsync");
    atomic_store(&fail_calloc, 1);
    CUresult rc = cuctx_mem_alloc_from_pool(&m, d.pool, s, 4096);
    int armed = atomic_exchange(&fail_calloc, 0);
    cr_assert_eq(armed, 0, "the allocation made no calloc");
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    cr_assert_eq(calls("cuMemAllocFromPoolAsync"), allocs, "the driver was asked for the memory");
    unsigned long destroys = calls("cuMemPoolDestroy");
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, destroy_pool, &d), 0);
    for (int ms = 0; !atomic_load(&d.done); ms++) {
        if (ms == 10000)
            cr_assert_fail("cuctx_mem_pool_destroy has not returned after 10 s: the refused allocation kept the pool");
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    pthread_join(t, NULL);
    CHECK_OK(d.rc);
    cr_assert_eq(calls("cuMemPoolDestroy"), destroys + 1);
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, 0), 1);
    cr_assert_eq(sim()->live(CUSIM_POOL), pools - 1);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
}

/* An owned pool adopted, allocated from (its record made, with parks 0)
 * and destroyed: the record goes with the driver's pool. The first round
 * makes what lasts (the stream's bookkeeping); the second must leave the
 * count of lib/'s heap blocks as it found it. Mutant killed:
 * lib/mem_pool.c:235 (`free(l);` before the driver's destroy removed; seed 31). */
static void adopted_pool_round(cuctx_stream s)
{
    CUmemoryPool raw = raw_pool(0);
    cuctx_mem_pool pool = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_mem_pool_adopt(&pool, raw, 1));
    CHECK_OK(cuctx_mem_alloc_from_pool(&m, pool, s, 4096));
    CHECK_OK(cuctx_mem_destroy(&m));
    unsigned long destroys = calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, 0);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, 0), destroys + 1);
}

Test(oom, an_adopted_pools_record_goes_with_the_pool)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    ctx_and_stream(&c, &s);
    adopted_pool_round(s);
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    adopted_pool_round(s);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_geq(atomic_load(&made) - made0, 1, "the pool's record was not seen made");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after a pool's round", after - before);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
}

/* The same record when the driver shuts down while the pool's last
 * memory is being freed (its handle destroyed before): the free, held by
 * the simulator right after its cuMemFreeAsync, finds the shutdown flag
 * set (as cuctx's exit hook, or a driver answering
 * CUDA_ERROR_DEINITIALIZED on another thread, sets it) when it ends the
 * pool, which is then not destroyed - the driver is gone - but its record
 * is freed all the same. Mutant killed: lib/mem_pool.c:222 (that
 * `free(l);` removed; seed 31). */
struct freeing { cuctx_mem m; CUresult rc; };

static void *free_mem(void *p)
{
    struct freeing *f = p;
    f->rc = cuctx_mem_destroy(&f->m);
    return NULL;
}

Test(oom, a_pools_record_ended_after_the_driver_shut_down_is_freed, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    struct freeing f = {{0}, CUDA_ERROR_UNKNOWN};
    ctx_and_stream(&c, &s);
    CUmemoryPool raw = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&pool, raw, 1));
    CHECK_OK(cuctx_mem_alloc_from_pool(&f.m, pool, s, 4096));   /* the record made */
    CHECK_OK(cuctx_mem_pool_destroy(&pool));    /* its memory lives: the pool stays */
    cr_assert_eq(calls("cuMemPoolDestroy"), 0);
    pthread_t t;
    atomic_store(&counting, 1);
    long before = live_blocks();
    sim()->hold_after("cuMemFreeAsync");
    cr_assert_eq(pthread_create(&t, NULL, free_mem, &f), 0);
    for (int i = 0; i < 10000 && sim()->sleeping() == 0; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    int held = sim()->sleeping() > 0;
    atomic_store(&cuctx__shutdown, 1);
    sim()->let_go();
    pthread_join(t, NULL);
    atomic_store(&cuctx__shutdown, 0);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert(held, "the free was not held after its cuMemFreeAsync");
    CHECK_OK(f.rc);
    cr_assert_eq(calls("cuMemFreeAsync"), 1);
    cr_assert_eq(calls("cuMemPoolDestroy"), 0, "the pool was destroyed after the driver shut down");
    cr_assert_eq(after, before - 1, "%ld heap blocks of lib/ freed by the pool's end, not 1", before - after);
    ctx_and_stream_end(&c, &s);
}

/* An adopted pool's record, made at its first allocation, is a block of the
 * record's size: the allocation asks calloc for it, never for an empty
 * block it would then write past (glibc's smallest block holds the fields
 * an adopted pool's record uses, so nothing else would tell). Mutant
 * killed: lib/mem_pool.c:186 `const` (`calloc(1, sizeof *mine)` made
 * `calloc(0, sizeof *mine)`; seed 29). */
Test(oom, an_adopted_pools_record_is_allocated_at_its_size)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem_pool pool = {0};
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, POPPED);
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CUmemoryPool raw = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&pool, raw, 1));
    atomic_store(&empty_callocs, 0);
    atomic_store(&made, 0);
    atomic_store(&counting, 1);
    CUresult rc = cuctx_mem_alloc_from_pool(&m, pool, s, 4096);
    atomic_store(&counting, 0);
    CHECK_OK(rc);
    cr_assert_gt(atomic_load(&made), 0, "the first allocation made no record");
    cr_assert_eq(atomic_load(&empty_callocs), 0, "the pool's record was asked of calloc as an empty block");
    CHECK_OK(cuctx_mem_free_async(&m, s));
    CHECK_OK(cuctx_stream_synchronize(s));
    unsigned long destroys = calls("cuMemPoolDestroy");
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw, 0), 1, "the owned pool was not destroyed");
    cr_assert_eq(calls("cuMemPoolDestroy"), destroys + 1);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* ---- the list of streams destroyed while capturing ------------------------- */

/* A stream that carried stream-ordered memory and is destroyed while it
 * captures cannot be waited for: its destroy remembers it, so that its
 * memory's frees wait for the context. When the list cannot grow (realloc),
 * the destroy is refused: the handle ends (as at any refused destroy) and
 * the driver's stream is kept. */
Test(oom, a_capturing_stream_that_cannot_be_remembered_is_not_destroyed)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    ctx_and_stream(&c, &s);
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    size_t streams = sim()->live(CUSIM_STREAM);
    unsigned long destroys = calls("cuStreamDestroy");
    atomic_store(&fail_realloc, 1);
    CUresult rc = cuctx_stream_destroy(&s);
    atomic_store(&fail_realloc, 0);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(s.id, 0);
    cr_assert_eq(calls("cuStreamDestroy"), destroys, "the stream was destroyed, not remembered");
    cr_assert_eq(sim()->live(CUSIM_STREAM), streams);
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- libraries and modules (seed 43) ----------------------------------------- */

/* A library whose load wrote a JIT log (a PTX that does not assemble: its
 * load succeeds, its lookup fails) keeps the log until its destroy, which
 * frees it. The first round makes what lasts; the second must leave the
 * count of lib/'s heap blocks as it found it. Mutant killed:
 * lib/library.c:65 `call` (the dropped log's `free(k);` removed; seed 43). */
static CUresult broken_library_round(void)
{
    cuctx_library lib = {0};
    CUkernel k = NULL;
    CUresult rc = cuctx_library_load_data(&lib, test_broken_ptx);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (cuctx_library_kernel(lib, "broken", &k) != CUDA_ERROR_INVALID_PTX
        || !strstr(cuctx_last_error_message(), "the JIT log of the library's load: "))
        rc = CUDA_ERROR_UNKNOWN;    /* no log was kept */
    CUresult d = cuctx_library_destroy(&lib);
    return rc != CUDA_SUCCESS ? rc : d;
}

Test(oom, a_librarys_kept_jit_log_goes_with_the_library)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(broken_library_round());
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    CUresult rc = broken_library_round();
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_geq(atomic_load(&made) - made0, 1, "the kept log was not seen made");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after a broken library's load and destroy",
                 after - before);
    cr_assert_eq(calls("cuLibraryUnload"), 2);
    cr_assert_eq(sim()->live(CUSIM_LIBRARY), 0);
    cr_assert_eq(misuses(), 0);
}

/* A module file that cuModuleLoad refuses as bad PTX is read once more
 * (lib/module.c's log_of_file) into a block of its size and one byte more,
 * the terminating '\0' the load through cuModuleLoadDataEx needs. With
 * lib/'s blocks guarded and the file 256 bytes (a multiple of 16: the
 * block ends right at the unreadable page), a block one byte short faults
 * at that write. Mutant killed: lib/module.c:34 `const` (`malloc((size_t)n
 * + 1)` made `+ 0`; seed 43). */
Test(oom, a_bad_module_files_second_reading_has_room_for_its_terminator)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    char path[] = "/tmp/cuctx-test-oom-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    char text[256];
    memset(text, ' ', sizeof text);
    memcpy(text, test_broken_ptx, strlen(test_broken_ptx));
    text[sizeof text - 1] = '\n';
    cr_assert_eq(write(fd, text, sizeof text), (ssize_t)sizeof text);
    close(fd);
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    new_ctx(&c, 0, NULL, POPPED);
    size_t mark = log_mark();
    atomic_store(&counting, 1);
    long made0 = atomic_load(&made);
    atomic_store(&guarding, 1);
    CUresult rc = cuctx_module_load(&m, c, path);
    atomic_store(&guarding, 0);
    long made1 = atomic_load(&made);
    atomic_store(&counting, 0);
    unlink(path);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_PTX, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    cr_assert_gt(made1, made0, "lib/ allocated nothing for the second reading");
    struct cusim_call again = last_call("cuModuleLoadDataEx", mark);
    cr_assert_eq(again.rc, CUDA_ERROR_INVALID_PTX, "the file was not read again for its log");
    const char *msg = cuctx_last_error_message();
    cr_assert(strstr(msg, "; the JIT log: ") && strstr(msg, "cusim_bad"), "%s", msg);
    cr_assert_eq(sim()->live(CUSIM_MODULE), 0);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* ---- mem_pool survivors (mp1) ---- */

/* lib/mem_pool.h: for a harness that resets the driver (tests/fuzz) */
void cuctx__pools_destroy_parked(void);

/* n pools cuctx made (device 0's, default properties), alive at once and
 * then ended, so that n are parked; their driver's pools in raw. */
static void park_pools(CUmemoryPool *raw, int n)
{
    cuctx_mem_pool pool[16] = {{0}};
    cr_assert_leq(n, 16);
    size_t parked = stats().parked_pools;
    for (int i = 0; i < n; i++) {
        CHECK_OK(cuctx_mem_pool_create(&pool[i], 0, NULL));
        raw[i] = cuctx_mem_pool_raw(pool[i]);
    }
    for (int i = 0; i < n; i++)
        CHECK_OK(cuctx_mem_pool_destroy(&pool[i]));
    cr_assert_eq(stats().parked_pools, parked + (size_t)n);
}

/* cuctx__pools_destroy_parked destroys each parked pool once, in the
 * driver, frees each one's record and leaves none parked; the list, empty
 * then, takes pools again (and gives them out again). Mutants killed:
 * lib/mem_pool.c:135 `const` (`take(parked.n - 0)`: the one past the last
 * taken), :137 `not` (stopping at the first pool), :140 `call` (a record
 * not freed), :136 `call` (the list's lock kept: its next lock never
 * returns, here the timeout). */
Test(oom, destroying_the_parked_pools_destroys_each_once_and_frees_its_record, .timeout = 10)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CUmemoryPool raw[3];
    ctx_and_stream(&c, &s);
    size_t pools = sim()->live(CUSIM_POOL);
    park_pools(raw, 3);
    cr_assert_eq(sim()->live(CUSIM_POOL), pools + 3);
    cr_assert_eq(calls("cuMemPoolDestroy"), 0, "a pool cuctx made was destroyed at its end");
    size_t mark = log_mark();
    unsigned long destroys = calls("cuMemPoolDestroy");
    atomic_store(&counting, 1);
    long before = live_blocks();
    cuctx__pools_destroy_parked();
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(stats().parked_pools, 0);
    cr_assert_eq(calls("cuMemPoolDestroy") - destroys, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw[i], mark), 1, "pool %d", i);
    cr_assert_eq(sim()->live(CUSIM_POOL), pools);
    cr_assert_eq(before - after, 3, "%ld heap blocks of lib/ freed, not the 3 records", before - after);
    /* nothing parked: a no-op */
    destroys = calls("cuMemPoolDestroy");
    cuctx__pools_destroy_parked();
    cr_assert_eq(calls("cuMemPoolDestroy"), destroys);
    /* and the list works on: parks, and a create takes what was parked */
    park_pools(raw, 1);
    unsigned long creates = calls("cuMemPoolCreate");
    cuctx_mem_pool again = {0};
    CHECK_OK(cuctx_mem_pool_create(&again, 0, NULL));
    cr_assert_eq(cuctx_mem_pool_raw(again), raw[0], "a create did not take the parked pool");
    cr_assert_eq(calls("cuMemPoolCreate"), creates, "a create made a pool with one parked");
    cr_assert_eq(stats().parked_pools, 0);
    CHECK_OK(cuctx_mem_pool_destroy(&again));
    cuctx__pools_destroy_parked();
    cr_assert_eq(sim()->live(CUSIM_POOL), pools);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
    cr_assert_eq(stats().failed_destroys, 0);
}

/* A pool that cannot be parked - the list full (8, its first size) and no
 * memory to grow it (realloc failing) - is destroyed instead, at once, and
 * the list keeps the 8 it had (which still serve creates). Mutant killed:
 * lib/mem_pool.c:117 `const` (`ok = 0;` made `ok = 1;`: the pool put past
 * the list's end, never destroyed). */
Test(oom, a_pool_the_full_list_cannot_grow_for_is_destroyed, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool[9] = {{0}};
    CUmemoryPool raw[9];
    ctx_and_stream(&c, &s);
    size_t pools = sim()->live(CUSIM_POOL);
    atomic_store(&guarding, 1);     /* (a write past the list faults) */
    for (int i = 0; i < 9; i++) {
        CHECK_OK(cuctx_mem_pool_create(&pool[i], 0, NULL));
        raw[i] = cuctx_mem_pool_raw(pool[i]);
    }
    for (int i = 0; i < 8; i++)
        CHECK_OK(cuctx_mem_pool_destroy(&pool[i]));
    cr_assert_eq(stats().parked_pools, 8);
    cr_assert_eq(calls("cuMemPoolDestroy"), 0);
    size_t mark = log_mark();
    unsigned long destroys = calls("cuMemPoolDestroy");
    atomic_store(&fail_realloc, 1);
    CUresult rc = cuctx_mem_pool_destroy(&pool[8]);
    int armed = atomic_exchange(&fail_realloc, 0);
    atomic_store(&guarding, 0);
    cr_assert_eq(armed, 0, "the pool's end made no realloc");
    CHECK_OK(rc);
    cr_assert_eq(pool[8].id, 0);
    cr_assert_eq(stats().parked_pools, 8, "the pool was parked with no room for it");
    cr_assert_eq(calls("cuMemPoolDestroy") - destroys, 1);
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw[8], mark), 1, "the unparked pool lives on");
    cr_assert_eq(sim()->live(CUSIM_POOL), pools + 8);
    /* the 8 parked serve creates */
    unsigned long creates = calls("cuMemPoolCreate");
    CHECK_OK(cuctx_mem_pool_create(&pool[0], 0, NULL));
    cr_assert_neq(cuctx_mem_pool_raw(pool[0]), raw[8]);
    cr_assert_eq(calls("cuMemPoolCreate"), creates, "a create made a pool with one parked");
    cr_assert_eq(stats().parked_pools, 7);
    CHECK_OK(cuctx_mem_pool_destroy(&pool[0]));
    cr_assert_eq(stats().failed_destroys, 0);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
}

/* The list of parked pools is one thread's at a time: while a pool's end
 * holds it - parking the ninth pool, its realloc (the list growing past 8)
 * held by this program's allocator - another thread that destroys the
 * parked pools (cuctx__pools_destroy_parked) or takes one (a create) waits
 * for it, the list untouched meanwhile, and goes on once it is let go.
 * "Waits" is seen without a clock: the other thread is found asleep in a
 * futex (its /proc/self/task/TID/syscall), the count of parked pools still
 * 8; without the lock it takes a pool (the count drops) or returns first.
 * Mutants killed: lib/mem_pool.c:109 `call` (park's parked_lock() removed:
 * the list not held over the realloc), :133 `call` (destroy_parked's
 * parked_lock() removed), :94 `call` (unpark's parked_lock() removed). */
struct list_user {
    void (*op)(struct list_user *);
    atomic_long tid;
    atomic_int done;
    int waited;             /* found asleep on the list's lock, nothing taken */
    size_t parked_then;     /* the parked count when it was seen so (or done) */
    cuctx_mem_pool pool;    /* (op_create's) */
    CUresult rc;            /* (op_create's) */
};
static struct list_user *list_user;

static void op_destroy_parked(struct list_user *u) { (void)u; cuctx__pools_destroy_parked(); }
static void op_create(struct list_user *u) { u->rc = cuctx_mem_pool_create(&u->pool, 0, NULL); }

static void *list_user_main(void *p)
{
    struct list_user *u = p;
    atomic_store(&u->tid, (long)syscall(SYS_gettid));
    u->op(u);
    atomic_store(&u->done, 1);
    return NULL;
}

static pthread_t list_user_thread;

/* Starts main(arg) on *t and waits until the thread is done (*done) or
 * asleep in a futex (its id in *tid), or 10 s have passed: which of these
 * it was is the caller's to assert. Called from a realloc_hook, with the
 * list the other thread wants held. */
static void start_until_done_or_asleep(pthread_t *t, void *(*main)(void *), void *arg, atomic_long *tid,
                                       atomic_int *done)
{
    if (pthread_create(t, NULL, main, arg) != 0)
        abort();
    for (long ms = 0; ms < 10000; ms++) {
        long id = atomic_load(tid);
        if (atomic_load(done) || (id && in_futex_wait((pid_t)id) == 1))
            return;
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
}

/* In the ninth pool's park, the list held (realloc_hook): starts the other
 * thread and waits until it is done or asleep in a futex. */
static void run_list_user(void)
{
    struct list_user *u = list_user;
    start_until_done_or_asleep(&list_user_thread, list_user_main, u, &u->tid, &u->done);
    u->parked_then = atomic_load(&cuctx__parked_pools);
    u->waited = !atomic_load(&u->done) && u->parked_then == 8;
}

static void list_held_while_parking(void (*op)(struct list_user *), struct list_user *u, CUmemoryPool *raw)
{
    cuctx_mem_pool pool[9] = {{0}};
    if (in_futex_wait((pid_t)syscall(SYS_gettid)) < 0)
        cr_skip_test("no /proc/self/task/TID/syscall to see a thread asleep");
    for (int i = 0; i < 9; i++) {
        CHECK_OK(cuctx_mem_pool_create(&pool[i], 0, NULL));
        raw[i] = cuctx_mem_pool_raw(pool[i]);
    }
    for (int i = 0; i < 8; i++)
        CHECK_OK(cuctx_mem_pool_destroy(&pool[i]));
    cr_assert_eq(stats().parked_pools, 8);
    memset(u, 0, sizeof *u);
    u->op = op;
    list_user = u;
    atomic_store(&realloc_hook, run_list_user);
    CUresult rc = cuctx_mem_pool_destroy(&pool[8]);
    void (*left)(void) = atomic_exchange(&realloc_hook, NULL);
    cr_assert_null(left, "the ninth pool's park made no realloc");
    pthread_join(list_user_thread, NULL);
    CHECK_OK(rc);
    cr_assert(u->waited, "the other thread did not wait for the list (done %d, parked then %zu)",
              atomic_load(&u->done), u->parked_then);
}

Test(oom, destroying_the_parked_pools_waits_for_a_park_in_progress, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CUmemoryPool raw[9];
    struct list_user u;
    ctx_and_stream(&c, &s);
    size_t pools = sim()->live(CUSIM_POOL);
    unsigned long destroys = calls("cuMemPoolDestroy");
    list_held_while_parking(op_destroy_parked, &u, raw);
    /* once let go, it destroyed all nine, the one parked meanwhile too */
    cr_assert_eq(stats().parked_pools, 0);
    cr_assert_eq(calls("cuMemPoolDestroy") - destroys, 9);
    cr_assert_eq(calls_on("cuMemPoolDestroy", (uint64_t)(uintptr_t)raw[8], 0), 1);
    cr_assert_eq(sim()->live(CUSIM_POOL), pools);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
}

Test(oom, a_create_waits_for_a_park_in_progress, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CUmemoryPool raw[9];
    struct list_user u;
    ctx_and_stream(&c, &s);
    unsigned long creates = calls("cuMemPoolCreate");
    list_held_while_parking(op_create, &u, raw);
    CHECK_OK(u.rc);
    /* once let go, it took a parked pool: nine made in all, eight parked */
    cr_assert_eq(calls("cuMemPoolCreate") - creates, 9);
    cr_assert_eq(stats().parked_pools, 8);
    cr_assert_eq(stats().mem_pools, 1);
    CHECK_OK(cuctx_mem_pool_destroy(&u.pool));
    cr_assert_eq(stats().parked_pools, 9);
    cr_assert_eq(calls("cuMemPoolDestroy"), 0);
    ctx_and_stream_end(&c, &s);
    cr_assert_eq(misuses(), 0);
}

/* ---- mem_pool survivors (mp2) ---- */

/* A pool whose last memory is freed after the driver shut down ends
 * quietly: not destroyed (the driver is gone, and its pools with it), and
 * that end no failure - no failed destroy counted, nothing reported, the
 * free's own answer 0. Mutant killed: lib/mem_pool.c:223 `ret` (the end
 * after the shutdown answering 1, which the last free then counts and
 * reports as a refused pool destroy). */
Test(oom, a_pool_ended_after_the_driver_shut_down_is_no_failed_destroy, .timeout = 30)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    struct freeing f = {{0}, CUDA_ERROR_UNKNOWN};
    struct handler_count h;
    ctx_and_stream(&c, &s);
    CUmemoryPool raw = raw_pool(0);
    CHECK_OK(cuctx_mem_pool_adopt(&pool, raw, 1));
    CHECK_OK(cuctx_mem_alloc_from_pool(&f.m, pool, s, 4096));
    CHECK_OK(cuctx_mem_pool_destroy(&pool));    /* its memory lives: the pool stays */
    uint64_t failed = stats().failed_destroys;
    count_handler_install(&h);
    pthread_t t;
    sim()->hold_after("cuMemFreeAsync");
    cr_assert_eq(pthread_create(&t, NULL, free_mem, &f), 0);
    for (int i = 0; i < 10000 && sim()->sleeping() == 0; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    int held = sim()->sleeping() > 0;
    atomic_store(&cuctx__shutdown, 1);
    sim()->let_go();
    pthread_join(t, NULL);
    atomic_store(&cuctx__shutdown, 0);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert(held, "the free was not held after its cuMemFreeAsync");
    CHECK_OK(f.rc);
    cr_assert_eq(calls("cuMemFreeAsync"), 1);
    cr_assert_eq(calls("cuMemPoolDestroy"), 0, "the pool was destroyed after the driver shut down");
    cr_assert_eq(stats().failed_destroys, failed, "the pool's end after the shutdown was counted a failed destroy");
    cr_assert_eq(h.calls, 0, "%d reports (the last: %s)", h.calls, h.last_msg);
    CHECK_OK(((PFN_cuMemPoolDestroy_v11020)drv_sym("cuMemPoolDestroy", 11020))(raw));
    ctx_and_stream_end(&c, &s);
}

/* An adopted pool's record, made by its first allocation, made by two
 * first allocations at once: the one whose record lost the race frees it
 * (and takes the winner's). The simulator cannot hold a thread between
 * the record's calloc and its publication (no driver call there), so this
 * program's calloc holds the first allocation's thread in that calloc
 * while a second allocation makes and publishes its record. Mutant killed:
 * lib/mem_pool.c:197 `call` (the loser's `free(mine);` removed: a leak). */
struct pool_alloc { cuctx_mem_pool pool; cuctx_stream s; cuctx_mem m; CUresult rc; };

static void *alloc_held_in_calloc(void *p)
{
    struct pool_alloc *a = p;
    calloc_pause = 1;
    a->rc = cuctx_mem_alloc_from_pool(&a->m, a->pool, a->s, 4096);
    calloc_pause = 0;
    return NULL;
}

Test(oom, a_pools_record_that_lost_the_race_to_be_made_is_freed, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s2 = {0};
    struct pool_alloc a = {{0}, {0}, {0}, CUDA_ERROR_UNKNOWN};
    cuctx_mem m = {0};
    ctx_and_stream(&c, &a.s);
    CHECK_OK(cuctx_stream_create(&s2, c, CU_STREAM_NON_BLOCKING, 0));
    CUmemoryPool raw = raw_pool(0);
    pthread_t t;
    atomic_store(&calloc_paused, 0);
    atomic_store(&calloc_go, 0);
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    CHECK_OK(cuctx_mem_pool_adopt(&a.pool, raw, 1));
    int started = pthread_create(&t, NULL, alloc_held_in_calloc, &a) == 0;
    for (int i = 0; started && i < 10000 && !atomic_load(&calloc_paused); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    int paused = atomic_load(&calloc_paused);
    CUresult rc = cuctx_mem_alloc_from_pool(&m, a.pool, s2, 4096);    /* its record made and published */
    atomic_store(&calloc_go, 1);
    if (started)
        pthread_join(t, NULL);
    long made_both = atomic_load(&made) - made0;
    CUresult rc_m = cuctx_mem_destroy(&m), rc_a = cuctx_mem_destroy(&a.m);
    CUresult rc_p = cuctx_mem_pool_destroy(&a.pool);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert(started);
    cr_assert(paused, "the first allocation was not held in its calloc");
    CHECK_OK(rc);
    CHECK_OK(a.rc);
    CHECK_OK(rc_m);
    CHECK_OK(rc_a);
    CHECK_OK(rc_p);
    cr_assert_geq(made_both, 2, "two records were not made");
    cr_assert_eq(calls("cuMemAllocFromPoolAsync"), 2);
    cr_assert_eq(calls("cuMemPoolDestroy"), 1, "the pool did not end with its handle and memory gone");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after the race for the pool's record", after - before);
    CHECK_OK(cuctx_stream_destroy(&s2));
    ctx_and_stream_end(&c, &a.s);
    cr_assert_eq(misuses(), 0);
}

/* ---- mem_pool survivors (mp3) --------------------------------------------- */

/* A pool create whose record (calloc) cannot be made: refused with
 * CUDA_ERROR_OUT_OF_MEMORY and its reason, the handle left empty, the
 * driver not asked for a pool; the next create works. Bug caught: the
 * failure answered with success, the caller then holding an empty handle
 * it takes for a pool. Mutant killed: lib/mem_pool.c:317 `ret`. */
Test(oom, a_pool_create_whose_record_cannot_be_made_fails_cleanly)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem_pool pool = {0};
    unsigned long creates = calls("cuMemPoolCreate");
    atomic_store(&fail_calloc, 1);
    CUresult rc = cuctx_mem_pool_create(&pool, 0, NULL);
    int armed = atomic_exchange(&fail_calloc, 0);
    cr_assert_eq(armed, 0, "the create made no calloc");
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_OUT_OF_MEMORY);
    cr_assert(strstr(cuctx_last_error_message(), "no memory for the pool's record"), "%s",
              cuctx_last_error_message());
    cr_assert_eq(pool.id, 0);
    cr_assert_eq(calls("cuMemPoolCreate"), creates, "the driver was asked for a pool");
    cr_assert_eq(stats().mem_pools, 0);
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    cr_assert_eq(calls("cuMemPoolCreate"), creates + 1);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(misuses(), 0);
}

/* A pool create the driver refuses (cuMemPoolCreate failing) leaves no
 * heap block of lib/ behind: the pool's record goes. The first refusal
 * makes what lasts. Mutant killed: lib/mem_pool.c:328 `call` (`free(l);`
 * on a failed create removed). */
Test(oom, a_pool_create_the_driver_refuses_leaks_nothing)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem_pool pool = {0};
    sim()->fail_call("cuMemPoolCreate", 1, CUDA_ERROR_OUT_OF_MEMORY);
    CUresult first = cuctx_mem_pool_create(&pool, 0, NULL);
    sim()->fail_call("cuMemPoolCreate", 1, CUDA_ERROR_OUT_OF_MEMORY);
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    CUresult rc = cuctx_mem_pool_create(&pool, 0, NULL);
    long after = live_blocks();
    atomic_store(&counting, 0);
    cr_assert_eq(first, CUDA_ERROR_OUT_OF_MEMORY, "%s", cuctx_result_name(first));
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(pool.id, 0);
    cr_assert_geq(atomic_load(&made) - made0, 1, "the pool's record was not seen made");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after a refused pool create", after - before);
    cr_assert_eq(sim()->live(CUSIM_POOL), 0);
    cr_assert_eq(stats().mem_pools, 0);
    cr_assert_eq(stats().parked_pools, 0);
    cr_assert_eq(misuses(), 0);
}

/* A create that takes a parked pool and then finds no slot for its handle:
 * refused (CUDA_ERROR_OUT_OF_MEMORY), and the pool goes back to the parked
 * list - not destroyed, no new one made - for the next create, which gets
 * it. Bug caught: the refusal answered with success (the handle empty).
 * Mutant killed: lib/mem_pool.c:325 `ret`. */
Test(oom, a_parked_pool_whose_create_finds_no_slot_stays_parked)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem_pool pool = {0};
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    CUmemoryPool raw = cuctx_mem_pool_raw(pool);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().parked_pools, 1);
    unsigned long creates = calls("cuMemPoolCreate"), destroys = calls("cuMemPoolDestroy");
    exhaust_the_table();
    CUresult rc = cuctx_mem_pool_create(&pool, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    cr_assert_eq(pool.id, 0);
    cr_assert_eq(stats().parked_pools, 1, "the parked pool was not given back to the list");
    cr_assert_eq(calls("cuMemPoolCreate"), creates);
    cr_assert_eq(calls("cuMemPoolDestroy"), destroys);
    cr_assert_eq(sim()->live(CUSIM_POOL), 1);
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    cr_assert_eq(cuctx_mem_pool_raw(pool), raw, "the next create did not get the parked pool");
    cr_assert_eq(calls("cuMemPoolCreate"), creates);
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/context.c (c1) ---- */

/* A borrow of a context cuctx knows already (here an owned one, by its
 * address) needs a slot for its handle only; with none to be had it is
 * refused: out of memory, the handle {0}, and the context and its entry as
 * they were. Mutant killed: lib/context.c:207 `ret` (the borrow's `return
 * rc;` made `return 0;`: success with no handle). */
Test(oom, a_borrow_with_no_slot_left_for_its_handle_is_refused)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0}, b = {7};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CUcontext raw = cuctx_ctx_raw(c);
    size_t ctxs = sim()->live(CUSIM_CONTEXT), entries = live_entries();
    exhaust_the_table();
    CUresult rc = cuctx_ctx_borrow(&b, raw);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(b.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    cr_assert_eq(live_entries(), entries);
    cr_assert_eq(sim()->live(CUSIM_CONTEXT), ctxs);
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_ctx_borrow(&b, raw));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(sim()->live(CUSIM_CONTEXT), ctxs - 1);
    cr_assert_eq(misuses(), 0);
}

/* A child's context asked for as a handle (cuctx_event_ctx) needs a slot
 * for the borrowed handle; with none to be had it is refused: out of
 * memory and the handle {0}. Mutant killed: lib/context.c:224 `ret`
 * (cuctx__child_ctx's `return rc;` made `return 0;`: success with no
 * handle). */
Test(oom, a_childs_context_with_no_slot_left_for_its_handle_is_refused)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0}, got = {7};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_event_create(&ev, c, 0));
    exhaust_the_table();
    CUresult rc = cuctx_event_ctx(ev, &got);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(got.id, 0);
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_event_ctx(ev, &got));
    cr_assert_eq(cuctx_ctx_raw(got), cuctx_ctx_raw(c));
    CHECK_OK(cuctx_ctx_destroy(&got));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/entry.c (e2) ---- */

/* A borrow of a context cuctx has not met, whose registration needs the
 * context map to grow (the 33rd key), with that growth refused: the borrow
 * fails with the registration's error - out of memory, "cannot grow the
 * context map" - and nothing is left; a borrow after that works. Mutant
 * killed: lib/entry.c:263 `ret` (entry_register's `return rc` made `return
 * 0`: the failed registration counted as done, its entry id never set,
 * and the borrow's second round registered the context after all). */
Test(oom, a_borrow_whose_registration_cannot_grow_the_context_map_fails)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    static cuctx_ctx c[64];
    int n = 0;
    while (cuctx__map_count() < 32) {
        cr_assert_lt(n, 64);
        CHECK_OK(cuctx_ctx_create(&c[n], 0, 0));
        n++;
    }
    CUcontext x = raw_ctx_create(0, POPPED);
    cuctx_ctx b = {0};
    size_t entries = live_entries(), mapped = cuctx__map_count();
    atomic_store(&fail_calloc, 1);
    CUresult rc = cuctx_ctx_borrow(&b, x);
    atomic_store(&fail_calloc, 0);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the context map"), "%s", cuctx_last_error_message());
    cr_assert_eq(b.id, 0);
    cr_assert_eq(live_entries(), entries, "the failed borrow left an entry");
    cr_assert_eq(cuctx__map_count(), mapped);
    CHECK_OK(cuctx_ctx_borrow(&b, x));      /* the growth works again */
    cr_assert_eq(cuctx_ctx_raw(b), x);
    CHECK_OK(cuctx_ctx_destroy(&b));
    raw_ctx_destroy(x);
    for (int i = n - 1; i >= 0; i--)
        CHECK_OK(cuctx_ctx_destroy(&c[i]));
    cr_assert_eq(misuses(), 0);
}

/* ---- survivors of lib/stream.c (s1) ---- */

/* The list of streams destroyed while capturing (tether.h, tether.c). */
int cuctx__stream_unwaited(uint64_t id);
void cuctx__stream_waited(uint64_t id);

/* The list's lock (unwaited_lock) is held over the list's growth: while a
 * capturing stream's destroy grows it (its first entry, realloc held by
 * this program's allocator), another thread that asks whether a stream is
 * in the list, or takes one out, waits for it - seen without a clock, the
 * other thread asleep in a futex - and, let go, finds the stream just
 * added (or takes it out). Mutants killed (in lib/stream.c then):
 * lib/tether.c:372 `call` (unwaited_add's lock removed), :350 `call`
 * (cuctx__stream_unwaited's lock removed), :359 `call`
 * (cuctx__stream_waited's lock removed): the other thread then goes
 * through at once, before the stream is in the list. */
struct unwaited_user {
    int take_out;           /* 1: cuctx__stream_waited, 0: cuctx__stream_unwaited */
    uint64_t id;
    atomic_long tid;
    atomic_int done;
    int found;              /* cuctx__stream_unwaited's answer */
    int waited;             /* found asleep, not done, while the list grew */
};
static struct unwaited_user *unwaited_user;
static pthread_t unwaited_user_thread;

static void *unwaited_user_main(void *p)
{
    struct unwaited_user *u = p;
    atomic_store(&u->tid, (long)syscall(SYS_gettid));
    if (u->take_out)
        cuctx__stream_waited(u->id);
    else
        u->found = cuctx__stream_unwaited(u->id);
    atomic_store(&u->done, 1);
    return NULL;
}

/* In the list's growth, its lock held (realloc_hook): starts the other
 * thread and waits until it is done or asleep in a futex. */
static void run_unwaited_user(void)
{
    struct unwaited_user *u = unwaited_user;
    start_until_done_or_asleep(&unwaited_user_thread, unwaited_user_main, u, &u->tid, &u->done);
    u->waited = !atomic_load(&u->done);
}

static void unwaited_list_held_while_growing(struct unwaited_user *u)
{
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    cuctx_capture cap;
    cuctx_graph g = {0};
    if (in_futex_wait((pid_t)syscall(SYS_gettid)) < 0)
        cr_skip_test("no /proc/self/task/TID/syscall to see a thread asleep");
    ctx_and_stream(&c, &s);
    CHECK_OK(cuctx_mem_alloc_async(&m, s, 4096));
    CHECK_OK(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_RELAXED));
    u->id = s.id;
    cr_assert_eq(cuctx__stream_unwaited(u->id), 0);
    unwaited_user = u;
    atomic_store(&realloc_hook, run_unwaited_user);
    CUresult rc = cuctx_stream_destroy(&s);
    void (*left)(void) = atomic_exchange(&realloc_hook, NULL);
    cr_assert_null(left, "the capturing stream's destroy made no realloc");
    pthread_join(unwaited_user_thread, NULL);
    CHECK_OK(rc);
    cr_assert(u->waited, "the other thread did not wait for the list (done %d)", atomic_load(&u->done));
    cr_assert_eq(cuctx_capture_end(&cap, 1), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx__stream_unwaited(u->id), !u->take_out, "the list after the other thread's call");
    if (u->take_out)
        CHECK_OK(cuctx_ctx_synchronize(c));     /* (what a free would have waited for) */
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

Test(oom, asking_for_an_unwaited_stream_waits_for_the_lists_growth, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    struct unwaited_user u = {0};
    unwaited_list_held_while_growing(&u);
    cr_assert_eq(u.found, 1, "the stream added meanwhile was not found");
}

Test(oom, taking_a_stream_out_of_the_unwaited_list_waits_for_its_growth, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    struct unwaited_user u = {.take_out = 1};
    unwaited_list_held_while_growing(&u);
}

/* ---- survivors of lib/green.c (g1) ---------------------------------------- */

/* A green create that finds no slot for one of its entries or its handle
 * (the table exhausted; the primary's entry known before or not): refused
 * with CUDA_ERROR_OUT_OF_MEMORY, the green context it made destroyed
 * (its retain of the primary with it), no handle, no entry left; then a
 * create works. step: 0 no slot for the primary's entry, 1 none for the
 * green context's (the primary's known), 2 none for the handle (one slot
 * left, for the green context's entry). */
static void green_create_without_a_slot(int step)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx g = {0}, p = {0};
    if (step > 0)
        CHECK_OK(cuctx_ctx_primary(&p, 0));
    unsigned refs = sim()->primary_refs(0);
    size_t entries = live_entries();
    uint64_t handles = stats().ctx_handles;
    exhaust_the_table();
    if (step == 2) {
        cr_assert_null(cuctx__slot_alloc());
        uint64_t spare = cuctx__slot_publish(spare_slot, KIND_EVENT);
        struct cuctx_slot *s = cuctx__close(spare, KIND_EVENT);
        cr_assert_not_null(s);
        cuctx__drain(s);
        cuctx__slot_free(s);
    }
    size_t mark = log_mark();
    CUresult rc = cuctx_ctx_green(&g, 0, 16);
    if (rc == CUDA_ERROR_NOT_SUPPORTED)
        cr_skip_test("no green contexts: %s", cuctx_last_error_message());
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), "cannot grow the handle table"), "%s", cuctx_last_error_message());
    cr_assert_eq(g.id, 0);
    uint64_t green_made = last_call("cuGreenCtxCreate", mark).handle;
    cr_assert_eq(calls_on("cuGreenCtxDestroy", green_made, mark), 1, "the green context made was not destroyed");
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0, "the failed create left its green context");
    cr_assert_eq(sim()->primary_refs(0), refs, "the failed create left its retain of the primary");
    cr_assert_eq(live_entries(), entries, "the failed create left an entry");
    cr_assert_eq(stats().ctx_handles, handles);
    cr_assert_eq(misuses(), 0);
    atomic_store(&fail_segments, 0);
    CHECK_OK(cuctx_ctx_green(&g, 0, 16));
    CHECK_OK(cuctx_ctx_destroy(&g));
    if (step > 0)
        CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(misuses(), 0);
}

/* Mutant killed: lib/green.c:174 `ret` (the refusal answered with success,
 * no handle made). */
Test(oom, a_green_create_with_no_slot_for_the_primarys_entry_fails_cleanly)
{
    green_create_without_a_slot(0);
}

/* Mutant killed: lib/green.c:176 `ret` (the same for the green context's
 * own entry). */
Test(oom, a_green_create_with_no_slot_for_its_entry_fails_cleanly)
{
    green_create_without_a_slot(1);
}

/* Mutants killed: lib/green.c:180 `call` (the green context's entry left
 * when its handle finds no slot) and :181 `ret` (that refusal answered
 * with success). */
Test(oom, a_green_create_with_no_slot_for_its_handle_fails_cleanly)
{
    green_create_without_a_slot(2);
}

/* ---- mutation survivors of lib/module.c and lib/library.c (h3) ---- */

/* A module file that cuModuleLoad refuses as bad PTX is read once more for
 * its JIT log (lib/module.c's log_of_file); the block it was read into is
 * freed: a second failed load leaves the count of lib/'s heap blocks as it
 * found it (the first makes what lasts). Mutant killed: lib/module.c:40
 * `call` (the `free(image);` removed: the file's bytes leaked at each
 * failed load). */
Test(oom, a_bad_module_files_second_reading_frees_what_it_read)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s", test_data_path("broken.ptx"));
    new_ctx(&c, 0, NULL, POPPED);
    cr_assert_eq(cuctx_module_load(&m, c, path), CUDA_ERROR_INVALID_PTX);
    size_t mark = log_mark();
    atomic_store(&counting, 1);
    long before = live_blocks(), made0 = atomic_load(&made);
    CUresult rc = cuctx_module_load(&m, c, path);
    long after = live_blocks(), made1 = atomic_load(&made);
    atomic_store(&counting, 0);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_PTX, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    cr_assert_eq(last_call("cuModuleLoadDataEx", mark).rc, CUDA_ERROR_INVALID_PTX, "the file was not read again");
    cr_assert_gt(made1, made0, "lib/ allocated nothing for the second reading");
    cr_assert_eq(after, before, "%ld heap blocks of lib/ more after a bad module file's failed load", after - before);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

/* A library's kept JIT log is kept with its terminating '\0'. The PTX has
 * seven bad lines, on lines 100 to 106: the simulator's log of them is 736
 * bytes, a multiple of 16, so that with lib/'s blocks guarded the kept log's
 * block (its 16-byte header, the text and the '\0') would end right at the
 * unreadable page if the '\0' were left out, and the lookup that reads the
 * log faults. Mutant killed: lib/library.c:36 `const` (`strlen(text) + 0`:
 * the log kept without its terminator, read past its block). */
Test(oom, a_librarys_kept_jit_log_keeps_its_terminator)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    char ptx[1024];
    size_t n = (size_t)snprintf(ptx, sizeof ptx, ".version 8.0\n.target sm_90\n.address_size 64\n\n"
                                                 ".visible .entry broken()\n{\n");   /* lines 1 to 6 */
    for (int line = 7; line < 100; line++)
        ptx[n++] = '\n';
    for (int i = 0; i < 7; i++)
        n += (size_t)snprintf(ptx + n, sizeof ptx - n, "    cusim_bad;\n");
    snprintf(ptx + n, sizeof ptx - n, "    ret;\n}\n");
    cuctx_library lib = {0};
    CUkernel k = NULL;
    atomic_store(&guarding, 1);
    CUresult rc = cuctx_library_load_data(&lib, ptx);
    atomic_store(&guarding, 0);
    CHECK_OK(rc);
    rc = cuctx_library_kernel(lib, "broken", &k);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_PTX, "%s", cuctx_result_name(rc));
    const char *msg = cuctx_last_error_message();
    cr_assert(strstr(msg, "the JIT log of the library's load: ptxas application ptx input, line 100; "), "%s", msg);
    /* The kill needs the kept log 736 bytes long: should the simulator's
     * wording change, this says so instead of the test passing for the mutant. */
    int kept_736 = 0;
#if OWN_ALLOCATOR
    guarded_lock_take();
    for (size_t i = 0; i < n_guarded; i++)
        kept_736 |= guarded[i].size == 16 + 736 + 1 && memcmp(guarded[i].block + 16, "ptxas", 5) == 0;
    guarded_lock_give();
#endif
    cr_assert(kept_736, "no kept log of 736 bytes: the simulator's log changed; choose the bad lines again");
    CHECK_OK(cuctx_library_destroy(&lib));
    cr_assert_eq(misuses(), 0);
}

/* The guarded block of lib/ that holds a kept JIT log starting with text,
 * of size 16 + strlen(text) + 1 (struct kept_log's header, the text, its
 * '\0'); NULL if there is none. */
static void *kept_log_block_h3(const char *text)
{
    void *found = NULL;
#if OWN_ALLOCATOR
    size_t size = 16 + strlen(text) + 1;
    guarded_lock_take();
    for (size_t i = 0; i < n_guarded; i++)
        if (guarded[i].size == size && memcmp(guarded[i].block + 16, text, strlen(text) + 1) == 0)
            found = guarded[i].block;
    guarded_lock_give();
#else
    (void)text;
#endif
    return found;
}

/* The kept logs' list is held under its lock: while a library's destroy
 * drops its log (held in the free of the log's block, the list's lock
 * held), another thread's load of a library that keeps a log waits for it
 * - seen without a clock: the other thread found asleep in a futex, not
 * done - and, let go, keeps its log. Mutants killed: lib/library.c:56
 * `call` (log_take's lock removed: the other thread goes through at once)
 * and :42 `call` (log_keep's lock removed: the same). */
struct log_keeper_h3 {
    cuctx_library lib;
    CUresult rc;
    atomic_long tid;
    atomic_int done;
    int waited;
};
static struct log_keeper_h3 *log_keeper_h3;
static pthread_t log_keeper_thread_h3;

static void *log_keeper_main_h3(void *p)
{
    struct log_keeper_h3 *u = p;
    atomic_store(&u->tid, (long)syscall(SYS_gettid));
    u->rc = cuctx_library_load_data(&u->lib, test_broken_ptx);
    atomic_store(&u->done, 1);
    return NULL;
}

static void run_log_keeper_h3(void)
{
    struct log_keeper_h3 *u = log_keeper_h3;
    start_until_done_or_asleep(&log_keeper_thread_h3, log_keeper_main_h3, u, &u->tid, &u->done);
    u->waited = !atomic_load(&u->done);
}

Test(oom, a_log_kept_while_another_is_dropped_waits_for_the_list, .timeout = 30)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    NEED_SIM();
    if (in_futex_wait((pid_t)syscall(SYS_gettid)) < 0)
        cr_skip_test("no /proc/self/task/TID/syscall to see a thread asleep");
    static const char log_start[] = "ptxas application ptx input, line 7; error   : "
                                    "Not a name of any known instruction: 'cusim_bad'\n"
                                    "ptxas fatal   : Ptx assembly aborted due to errors";
    cuctx_library lib = {0};
    CUkernel k = NULL;
    struct log_keeper_h3 u = {0};
    atomic_store(&guarding, 1);
    CUresult rc = cuctx_library_load_data(&lib, test_broken_ptx);
    atomic_store(&guarding, 0);
    CHECK_OK(rc);
    void *block = kept_log_block_h3(log_start);
    cr_assert_not_null(block, "no block of lib/ holds the kept log");
    log_keeper_h3 = &u;
    atomic_store(&free_hook_block, block);
    atomic_store(&free_hook, run_log_keeper_h3);
    rc = cuctx_library_destroy(&lib);
    void (*left)(void) = atomic_exchange(&free_hook, NULL);
    atomic_store(&free_hook_block, NULL);
    cr_assert_null(left, "the destroy did not free the kept log's block");
    pthread_join(log_keeper_thread_h3, NULL);
    CHECK_OK(rc);
    cr_assert(u.waited, "the other thread did not wait for the list of kept logs (done %d)", atomic_load(&u.done));
    CHECK_OK(u.rc);
    cr_assert_eq(cuctx_library_kernel(u.lib, "broken", &k), CUDA_ERROR_INVALID_PTX);
    cr_assert(strstr(cuctx_last_error_message(), "the JIT log of the library's load: ptxas"), "%s",
              cuctx_last_error_message());
    CHECK_OK(cuctx_library_destroy(&u.lib));
    cr_assert_eq(misuses(), 0);
}

/* ---- mutation survivors of lib/diagnostics.c (h2) ---- */

/* The stats' id array grows only when the next handle's ids (two at most)
 * would not fit: 63 handles that are no pair fill 63 of the first growth's
 * 64 ids, so no second realloc is made, and one armed to fail changes
 * nothing (the count stays that of the entries named by handles, not the
 * fallback to the live entries, which counts the foreign context met by a
 * {0} create, as in stats_collect_one_id_per_handle_that_is_no_pair).
 * Mutant killed: lib/diagnostics.c:38 `ror` (`e->n + 2 >= e->cap`: the
 * array grown at 62 ids already, the second realloc made and failed). */
Test(oom, sixty_three_handles_fit_the_stats_first_growth)
{
    NEED_OWN_ALLOCATOR();
    NEED_DRIVER();
    stats_of_events_with_a_second_growth_failing(62);
}
