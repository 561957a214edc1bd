/* SPDX-License-Identifier: MIT */
/* registry.c - the table of slots behind every handle.
 *
 * A handle id is kind | slot index | generation (ids.h). Each slot has
 * one atomic word holding its generation, its kind while live, a closing
 * flag and a count of pins. Everything that checks a handle does it with one
 * atomic operation on that word:
 *
 *   pin     CAS pins+1, only if generation and kind match and not closing;
 *   close   CAS the closing flag on, same conditions: exactly one destroy wins;
 *   drain   wait until the pins (and holds) taken before the close are gone;
 *   free    generation+1, kind 0: every copy of the old id is now stale.
 *
 * Context entries, which every child call touches, are held rather than
 * pinned: through per-thread hazard slots, with no read-modify-write at all
 * (see "holds" below); so is a stream on the stream-ordered allocation's
 * and free's path ("holds of children").
 *
 * No lock is taken. The table grows in segments of 65536 slots that never
 * move, so a reader holding a stale id reads a slot that
 * still exists and sees that its generation moved on. Freed slots go to a
 * small per-thread cache first, else to a lock-free stack whose head carries
 * a tag against ABA: threads creating and destroying in their own contexts
 * share no hot cache line.
 */
#include "config.h"

#include "registry.h"
#include "ids.h"
#include "thread.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#ifdef __linux__
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

_Atomic(struct cuctx_slot *) cuctx__segments[CUCTX_SEG_COUNT];
int cuctx__asymmetric;
static _Atomic uint32_t next_index;     /* slots below this were handed out once */
static _Atomic uint64_t free_head;      /* tag (high 32) | index + 1 (low 32) */

_Atomic uint64_t cuctx__stale_skips;
_Atomic uint64_t cuctx__failed_destroys;
_Atomic size_t cuctx__parked_pools;
_Atomic uint64_t cuctx__shutdown_skips;

/* One round of waiting for another thread: a few yields, then sleeps that
 * double up to a millisecond, so a wait that lasts (a hold across a whole
 * cuCtxSynchronize) does not burn a core. */
static void backoff(unsigned *round)
{
    if (*round < 16) {
        sched_yield();
    } else {
        unsigned shift = *round - 16 < 10 ? *round - 16 : 10;
        struct timespec ts = {0, 1000L << shift};      /* 1 us .. ~1 ms */
        nanosleep(&ts, NULL);
    }
    (*round)++;
}

static struct cuctx_slot *fresh_slot(void)
{
    uint32_t index = atomic_fetch_add(&next_index, 1);
    if (index >= CUCTX_ID_INDEX_LIMIT) {
        atomic_fetch_sub(&next_index, 1);
        return NULL;
    }
    _Atomic(struct cuctx_slot *) *seg = cuctx__segment_of(index);
    struct cuctx_slot *base = atomic_load_explicit(seg, memory_order_acquire);
    if (!base) {
        /* Anonymous memory is zero and takes no RAM until a slot in a page
         * is first used. Segments are never given back: stale ids may still
         * read them. */
        size_t bytes = CUCTX_SEG_BYTES;
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct cuctx_slot *mine = m == MAP_FAILED ? NULL : m;
        struct cuctx_slot *expected = NULL;
        if (!mine)
            return NULL;    /* the index is lost; cuctx__slot_find() sees no segment for it */
        if (atomic_compare_exchange_strong(seg, &expected, mine))
            base = mine;
        else {
            munmap(mine, bytes);
            base = expected;
        }
    }
    struct cuctx_slot *s = &base[cuctx__segment_offset(index)];
    s->index = index;
    atomic_store_explicit(&s->word, (uint64_t)1 << CUCTX_W_GEN_SHIFT, memory_order_relaxed);
    return s;
}

static struct cuctx_slot *pop_global(void)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)head;
        if (top == 0)
            return fresh_slot();
        struct cuctx_slot *s = cuctx__slot_find(top - 1);
        uint32_t next = atomic_load_explicit(&s->next_free, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want,
                                                  memory_order_acquire, memory_order_acquire))
            return s;
    }
}

static void push_global(struct cuctx_slot *s)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&s->next_free, (uint32_t)head, memory_order_relaxed);
        uint64_t want = ((head >> 32) + 1) << 32 | (uint64_t)(s->index + 1);
        if (atomic_compare_exchange_weak_explicit(&free_head, &head, want,
                                                  memory_order_release, memory_order_relaxed))
            return;
    }
}

/* The per-thread cache of free slots (cuctx__me.registry.cache) goes back to the
 * shared list when the thread ends. */
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

/* At thread exit. Destructors of other keys (pthread keys, C11 tss) may
 * still free handles after this one ran: from here on this thread frees to
 * the shared list, never to a cache nobody will flush again. */
static void cache_flush(void *arg)
{
    (void)arg;      /* the exiting thread's own cuctx__me */
    while (cuctx__me.registry.ncache)
        push_global(cuctx__me.registry.cache[--cuctx__me.registry.ncache]);
    cuctx__me.registry.cache_registered = -1;
}

static void cache_key_make(void)
{
    pthread_key_create(&cache_key, cache_flush);
}

struct cuctx_slot *cuctx__slot_alloc_slow(void)
{
    return pop_global();
}

/* The first free of a thread registers its cache's flush; a thread whose
 * registration failed, or that is exiting, frees to the shared list. */
void cuctx__slot_push_slow(struct cuctx_slot *s)
{
    if (!cuctx__me.registry.cache_registered) {
        pthread_once(&cache_key_once, cache_key_make);
        cuctx__me.registry.cache_registered = pthread_setspecific(cache_key, &cuctx__me) == 0 ? 1 : -1;
    }
    if (cuctx__me.registry.cache_registered > 0 && cuctx__me.registry.ncache < CUCTX_SLOT_CACHE)
        cuctx__me.registry.cache[cuctx__me.registry.ncache++] = s;
    else
        push_global(s);
}

/* The pins this thread holds, so that a thread cancelled inside a driver
 * call leaves none behind: its exit releases them (thread_exit below). */

struct cuctx_slot *cuctx__pin_slow(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind)
{
    cuctx__hazard_rec();     /* its key runs thread_exit */
    if (!cuctx__pin_word(s, id, kind))
        return NULL;
    if (cuctx__me.registry.npins < CUCTX_MY_PINS)     /* a thread never holds that many; beyond, untracked */
        cuctx__me.registry.pins[cuctx__me.registry.npins++] = s;
    return s;
}

/* A pin that is not the thread's last listed one off its list, if it is on
 * it (one beyond CUCTX_MY_PINS is not); the caller drops it from the word. */
void cuctx__unpin_listed(struct cuctx_slot *s)
{
    for (unsigned i = cuctx__me.registry.npins; i-- > 0;) {
        if (cuctx__me.registry.pins[i] == s) {
            cuctx__me.registry.pins[i] = cuctx__me.registry.pins[--cuctx__me.registry.npins];
            break;
        }
    }
}

/* A hold that pinned (cuctx__hold_slow) let go, out of line: rare. */
void cuctx__unhold_pinned(struct cuctx_slot *s)
{
    cuctx__unpin(s);
}

/* ---- holds: hazard slots -----------------------------------------------------
 * Each thread that holds context entries owns a record of CUCTX_HAZARDS
 * slots (registry.h).
 *   hold:  write the id into a free slot of my record, fence, read the
 *          entry's word: if closing or reused, clear the slot and fail.
 *   drain: (after close set the closing flag) fence, then wait while any
 *          record's slot names this id.
 * Either the holder's read sees closing, or the closer's scan sees the id:
 * a hold never overlaps the destroy. The fence is cuctx__asymmetric where Linux
 * offers membarrier(2): the holder's side is only a compiler barrier, and
 * the closer, about to spend milliseconds in cuCtxDestroy anyway, makes
 * every running thread of the process execute a full barrier. Otherwise the
 * holder pays a full fence. A thread holding more than CUCTX_HAZARDS entries
 * at once falls back to pinning the word.
 *
 * Holds of children (cuctx__hold_child). A child's close scans the hazard
 * slots only if its word has CUCTX_W_HELD, so that a child never held
 * (most) closes without the membarrier. The holder:
 *   store the id in a hazard slot; fence (as above); read the word: not
 *   live or closing, clear the slot and fail; held bit set, done; else CAS
 *   the bit on, which fails if the word changed (a pin, a close), and read
 *   again.
 * The closer: CAS closing on (cuctx__close_pinned), which returns the word
 * it replaced; if that had the bit, fence and scan as for an entry.
 * A hold succeeds only with the bit set in a word without closing it read
 * or wrote, so the bit came before the close in the word's order, and the
 * close's CAS, which reads the latest word, saw it: the scan runs. Then the
 * holder's read came before the close in that order too, and the argument
 * above holds (the first holder's CAS is itself a full barrier). A close
 * whose CAS saw no bit comes before every bit-setting CAS, which then fails
 * on the closing flag, and the holder's read again says closing. The bit
 * lives as long as the generation (publish and free write the word whole);
 * a reopened slot keeps it, so its next close scans too. */
static _Atomic(struct cuctx_hazard_rec *) hazard_list;
static pthread_key_t hazard_key;
static pthread_once_t hazard_once = PTHREAD_ONCE_INIT;

static void hazard_release(void *arg)
{
    struct cuctx_hazard_rec *r = arg;
    for (unsigned i = 0; i < CUCTX_HAZARDS; i++)
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
    atomic_store_explicit(&r->taken, 0, memory_order_release);
}

static int membarrier_register(void)
{
#ifdef __linux__
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        && syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return 0;
#endif
}

void cuctx__let_go_all(void)
{
    while (cuctx__me.registry.npins)
        cuctx__unpin(cuctx__me.registry.pins[cuctx__me.registry.npins - 1]);
    for (unsigned i = 0; i < CUCTX_HAZARDS; i++)
        if (cuctx__me.registry.used & (1u << i))
            atomic_store_explicit(&cuctx__me.registry.rec->ids[i], 0, memory_order_release);
    cuctx__me.registry.used = 0;
}

/* At thread exit, also one cancelled inside a driver call: its holds and
 * pins go. Destructors of other keys that run later and call cuctx take a
 * record anew, and this runs again for it. */
static void thread_exit(void *arg)
{
    cuctx__let_go_all();
    hazard_release(arg);
    cuctx__me.registry.rec = NULL;
}

void cuctx__registry_after_fork(void)
{
    /* Only the forking thread lives on in the child: the other threads'
     * holds and pins are gone with them, and the membarrier registration is
     * made anew for the child (holders fence for themselves if it fails). */
    for (struct cuctx_hazard_rec *r = atomic_load(&hazard_list); r; r = r->next)
        if (r != cuctx__me.registry.rec)
            hazard_release(r);
    uint32_t n = atomic_load(&next_index);
    for (uint32_t i = 0; i < n; i++) {
        struct cuctx_slot *s = cuctx__slot_find(i);
        if (s)
            atomic_store(&s->word, atomic_load(&s->word) & ~CUCTX_W_PINS);
    }
    cuctx__me.registry.npins = 0;
    if (cuctx__asymmetric && !membarrier_register())
        cuctx__asymmetric = 0;
}

static void hazard_init(void)
{
    pthread_key_create(&hazard_key, thread_exit);
    cuctx__asymmetric = membarrier_register();
}

/* The calling thread's first hold or count: a record from the list, or a
 * new one; NULL if none can be had (the thread pins and counts centrally). */
struct cuctx_hazard_rec *cuctx__hazard_rec_slow(void)
{
    struct cuctx_hazard_rec *r;
    pthread_once(&hazard_once, hazard_init);
    for (r = atomic_load_explicit(&hazard_list, memory_order_acquire); r; r = r->next) {
        int unowned = 0;
        if (atomic_compare_exchange_strong(&r->taken, &unowned, 1))
            break;
    }
    if (!r) {
        r = aligned_alloc(CUCTX_CACHE_LINE, sizeof *r);
        if (!r)
            return NULL;
        memset(r, 0, sizeof *r);
        atomic_store_explicit(&r->taken, 1, memory_order_relaxed);
        r->next = atomic_load_explicit(&hazard_list, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&hazard_list, &r->next, r, memory_order_release,
                                                      memory_order_relaxed))
            ;
    }
    if (pthread_setspecific(hazard_key, r) != 0) {
        atomic_store(&r->taken, 0);
        return NULL;
    }
    return cuctx__me.registry.rec = r;
}

/* Threads without a record (its allocation failed) count here. */
static _Atomic int64_t live_unowned[KIND_COUNT];

void cuctx__count_live_slow(unsigned kind, int64_t delta)
{
    struct cuctx_hazard_rec *r = cuctx__hazard_rec();
    if (r)
        atomic_store_explicit(&r->live[kind], atomic_load_explicit(&r->live[kind], memory_order_relaxed) + delta,
                              memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&live_unowned[kind], delta, memory_order_relaxed);
}

void cuctx__live_counts(int64_t out[KIND_COUNT])
{
    for (unsigned k = 0; k < KIND_COUNT; k++)
        out[k] = atomic_load_explicit(&live_unowned[k], memory_order_relaxed);
    for (struct cuctx_hazard_rec *r = atomic_load_explicit(&hazard_list, memory_order_acquire); r; r = r->next)
        for (unsigned k = 0; k < KIND_COUNT; k++)
            out[k] += atomic_load_explicit(&r->live[k], memory_order_relaxed);
}

static void closer_fence(void)
{
#ifdef __linux__
    if (cuctx__asymmetric && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}

static void hazards_wait(uint64_t id)
{
    pthread_once(&hazard_once, hazard_init);    /* so that `cuctx__asymmetric` is settled */
    closer_fence();
    for (struct cuctx_hazard_rec *r = atomic_load_explicit(&hazard_list, memory_order_acquire); r; r = r->next)
        for (unsigned i = 0, round = 0; i < CUCTX_HAZARDS; i++)
            while (atomic_load_explicit(&r->ids[i], memory_order_acquire) == id)
                backoff(&round);
}

int cuctx__holding(uint64_t id)
{
    /* a used bit is set only while the thread has its record */
    for (unsigned i = 0; i < CUCTX_HAZARDS; i++)
        if ((cuctx__me.registry.used & (1u << i)) && atomic_load_explicit(&cuctx__me.registry.rec->ids[i], memory_order_relaxed) == id)
            return 1;
    return 0;
}

/* A hold without a free hazard slot of the thread's own: the thread's first
 * (its record is made here), or one beyond CUCTX_HAZARDS at once, which pins. */
struct cuctx_slot *cuctx__hold_slow(uint64_t id, enum cuctx_kind kind, unsigned *hazard)
{
    struct cuctx_slot *s;
    if (!cuctx__me.registry.rec && cuctx__hazard_rec_slow())
        return cuctx__hold_own(id, kind, hazard);
    if ((s = cuctx__pin(id, kind)))
        *hazard = CUCTX_NO_HAZARD;
    return s;
}

/* A child's hold without a free hazard slot (pins), or before its record,
 * or whose fast check failed: its generation's first hold, which sets the
 * held bit (above), or a hold refused. The full fence: the slow path. */
struct cuctx_slot *cuctx__hold_child_slow(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind, unsigned *hazard)
{
    struct cuctx_hazard_rec *r = cuctx__hazard_rec();
    unsigned used = cuctx__me.registry.used;
    if (!r || used == (1u << CUCTX_HAZARDS) - 1) {
        *hazard = CUCTX_NO_HAZARD;
        return cuctx__pin(id, kind);
    }
    unsigned i = (unsigned)__builtin_ctz(~used);
    atomic_store_explicit(&r->ids[i], id, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    while (!(w & CUCTX_W_HELD)) {
        if (!cuctx__word_matches(w, id, kind))
            break;
        if (atomic_compare_exchange_weak_explicit(&s->word, &w, w | CUCTX_W_HELD, memory_order_seq_cst,
                                                  memory_order_acquire))
            w |= CUCTX_W_HELD;
    }
    if (!cuctx__word_matches(w, id, kind)) {
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
        return NULL;
    }
    cuctx__me.registry.used = used | 1u << i;
    *hazard = i;
    return s;
}

void cuctx__drain_slow(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_seq_cst);
    unsigned kind = cuctx__word_kind(w);
    if (kind == KIND_ENTRY || (w & CUCTX_W_HELD))    /* (a child's bit is set before its close, if ever) */
        hazards_wait(cuctx__id_make((enum cuctx_kind)kind, s->index, cuctx__word_gen(w)));
    for (unsigned round = 0; atomic_load_explicit(&s->word, memory_order_seq_cst) & CUCTX_W_PINS;)
        backoff(&round);
}

void cuctx__reopen(struct cuctx_slot *s)
{
    atomic_fetch_and_explicit(&s->word, ~CUCTX_W_CLOSING, memory_order_release);
}

void cuctx__wait_closed(uint64_t id, enum cuctx_kind kind)
{
    for (unsigned round = 0; cuctx__closing(id, kind);)
        backoff(&round);
}

struct cuctx_slot *cuctx__closing_slot(uint64_t id, enum cuctx_kind kind)
{
    return cuctx__closing(id, kind) ? cuctx__slot_find(cuctx__id_index(id)) : NULL;
}

int cuctx__closing(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    uint64_t w = s ? atomic_load_explicit(&s->word, memory_order_acquire) : 0;
    return s && (w & CUCTX_W_CLOSING) && cuctx__word_matches(w & ~CUCTX_W_CLOSING, id, kind);
}

uint64_t cuctx__slot_id(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    return cuctx__id_make((enum cuctx_kind)cuctx__word_kind(w), s->index, cuctx__word_gen(w));
}

void cuctx__slot_foreach(void (*fn)(enum cuctx_kind kind, struct cuctx_slot *s, void *arg), void *arg)
{
    uint32_t n = atomic_load_explicit(&next_index, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct cuctx_slot *s = cuctx__slot_find(i);
        if (!s)
            continue;
        unsigned k = cuctx__word_kind(atomic_load_explicit(&s->word, memory_order_acquire));
        if (k != KIND_NONE && k < KIND_COUNT)
            fn((enum cuctx_kind)k, s, arg);
    }
}
