/* SPDX-License-Identifier: MIT */
/* registry.c - the table of slots behind every handle.
 *
 * A handle id is kind | slot index | generation (internal.h). Each slot has
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
 * (see "holds" below).
 *
 * No lock is taken. The table grows in segments that never move (segment k
 * holds 1024 << k slots), so a reader holding a stale id reads a slot that
 * still exists and sees that its generation moved on. Freed slots go to a
 * small per-thread cache first, else to a lock-free stack whose head carries
 * a tag against ABA: threads creating and destroying in their own contexts
 * share no hot cache line.
 */
#include "internal.h"

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

#define GEN_SHIFT 32
#define KIND_SHIFT 26
#define KIND_MASK 0x3fu
#define CLOSING (UINT64_C(1) << 25)
#define PINS_MASK ((UINT64_C(1) << 25) - 1)

#define SEG_BASE_BITS 10
#define SEG_COUNT 17        /* 1024 * (2^17 - 1) slots: more than the 2^26 ids can name */

static _Atomic(struct cuctx_slot *) segments[SEG_COUNT];
static _Atomic uint32_t next_index;     /* slots below this were handed out once */
static _Atomic uint64_t free_head;      /* tag (high 32) | index + 1 (low 32) */

_Atomic uint64_t cuctx__stale_skips;
_Atomic uint64_t cuctx__failed_destroys;

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

static inline uint32_t word_gen(uint64_t w) { return (uint32_t)(w >> GEN_SHIFT); }
static inline unsigned word_kind(uint64_t w) { return (unsigned)(w >> KIND_SHIFT) & KIND_MASK; }

static inline void seg_of(uint32_t index, unsigned *seg, uint64_t *off)
{
    uint64_t j = (uint64_t)index + (1u << SEG_BASE_BITS);
    unsigned bits = 63u - (unsigned)__builtin_clzll(j);
    *seg = bits - SEG_BASE_BITS;
    *off = j - (UINT64_C(1) << bits);
}

/* The slot for an index, or NULL where no segment holds it yet. A slot in a
 * segment that was never handed out is zero: kind NONE, matching no id. */
static inline struct cuctx_slot *slot_at(uint32_t index)
{
    unsigned seg;
    uint64_t off;
    seg_of(index, &seg, &off);
    if (seg >= SEG_COUNT)
        return NULL;
    struct cuctx_slot *base = atomic_load_explicit(&segments[seg], memory_order_acquire);
    return base ? &base[off] : NULL;
}

static struct cuctx_slot *fresh_slot(void)
{
    uint32_t index = atomic_fetch_add(&next_index, 1);
    unsigned seg;
    uint64_t off;
    if (index >= CUCTX_ID_INDEX_LIMIT) {
        atomic_fetch_sub(&next_index, 1);
        return NULL;
    }
    seg_of(index, &seg, &off);
    struct cuctx_slot *base = atomic_load_explicit(&segments[seg], memory_order_acquire);
    if (!base) {
        /* Only the slots an id can name: the last segment is mostly beyond
         * the 2^26 limit. Anonymous memory is zero and takes no RAM until a
         * slot in a page is first used. Segments are never given back:
         * stale ids may still read them. */
        uint64_t first = index - off;
        uint64_t slots = (uint64_t)1 << (seg + SEG_BASE_BITS);
        if (first + slots > CUCTX_ID_INDEX_LIMIT)
            slots = CUCTX_ID_INDEX_LIMIT - first;
        size_t bytes = (size_t)slots * sizeof(struct cuctx_slot);
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct cuctx_slot *mine = m == MAP_FAILED ? NULL : m;
        struct cuctx_slot *expected = NULL;
        if (!mine)
            return NULL;    /* the index is lost; slot_at() sees no segment for it */
        if (atomic_compare_exchange_strong(&segments[seg], &expected, mine))
            base = mine;
        else {
            munmap(mine, bytes);
            base = expected;
        }
    }
    struct cuctx_slot *s = &base[off];
    s->index = index;
    atomic_store_explicit(&s->word, (uint64_t)1 << GEN_SHIFT, memory_order_relaxed);
    return s;
}

static struct cuctx_slot *pop_global(void)
{
    uint64_t head = atomic_load_explicit(&free_head, memory_order_acquire);
    for (;;) {
        uint32_t top = (uint32_t)head;
        if (top == 0)
            return fresh_slot();
        struct cuctx_slot *s = slot_at(top - 1);
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

/* The per-thread cache of free slots; handed back when the thread ends. */
#define CACHE_SIZE 32
struct slot_cache {
    unsigned n;
    int registered;     /* its destructor is set for this thread */
    struct cuctx_slot *slots[CACHE_SIZE];
};
static CUCTX_TLS struct slot_cache cache;
static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

/* At thread exit. Destructors of other keys (pthread keys, C11 tss) may
 * still free handles after this one ran: from here on this thread frees to
 * the shared list, never to a cache nobody will flush again. */
static void cache_flush(void *arg)
{
    struct slot_cache *c = arg;
    while (c->n)
        push_global(c->slots[--c->n]);
    c->registered = -1;
}

static void cache_key_make(void)
{
    pthread_key_create(&cache_key, cache_flush);
}

struct cuctx_slot *cuctx__slot_alloc(void)
{
    return cache.n ? cache.slots[--cache.n] : pop_global();
}

static void push_free(struct cuctx_slot *s)
{
    if (!cache.registered && cache.n < CACHE_SIZE) {
        pthread_once(&cache_key_once, cache_key_make);
        cache.registered = pthread_setspecific(cache_key, &cache) == 0 ? 1 : -1;
    }
    if (cache.registered > 0 && cache.n < CACHE_SIZE)
        cache.slots[cache.n++] = s;
    else
        push_global(s);
}

static void count_live(unsigned kind, int64_t delta);

uint64_t cuctx__slot_publish(struct cuctx_slot *s, enum cuctx_kind kind)
{
    uint32_t gen = word_gen(atomic_load_explicit(&s->word, memory_order_relaxed));
    atomic_store_explicit(&s->word, (uint64_t)gen << GEN_SHIFT | (uint64_t)kind << KIND_SHIFT,
                          memory_order_release);
    count_live(kind, 1);
    return cuctx__id_make(kind, s->index, gen);
}

void cuctx__slot_discard(struct cuctx_slot *s)
{
    push_free(s);   /* never published: its generation was not used */
}

static inline int matches(uint64_t w, uint64_t id, enum cuctx_kind kind)
{
    return cuctx__id_kind(id) == kind && word_kind(w) == (unsigned)kind
        && word_gen(w) == cuctx__id_gen(id) && !(w & CLOSING);
}

/* The pins this thread holds, so that a thread cancelled inside a driver
 * call leaves none behind: its exit releases them (thread_exit below). */
static CUCTX_TLS unsigned my_used;  /* bit i: my_rec->ids[i] in use; only this thread writes them */
#define MY_PINS 8
static CUCTX_TLS struct cuctx_slot *my_pins[MY_PINS];
static CUCTX_TLS unsigned my_npins;
static struct hazard_rec *hazard_rec(void);

struct cuctx_slot *cuctx__pin(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    if (!s)
        return NULL;
    hazard_rec();   /* its key runs thread_exit */
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (!matches(w, id, kind) || (w & PINS_MASK) == PINS_MASK)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, w + 1,
                                                    memory_order_acquire, memory_order_acquire));
    if (my_npins < MY_PINS)     /* a thread never holds that many; beyond, untracked */
        my_pins[my_npins++] = s;
    return s;
}

void cuctx__unpin(struct cuctx_slot *s)
{
    for (unsigned i = my_npins; i-- > 0;) {
        if (my_pins[i] == s) {
            my_pins[i] = my_pins[--my_npins];
            break;
        }
    }
    atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
    cuctx__deliver_reports();
}

int cuctx__thread_holds(void)
{
    return my_used != 0 || my_npins != 0;
}

/* ---- holds: hazard slots -----------------------------------------------------
 * Each thread that holds context entries owns a record of HAZARDS slots.
 *   hold:  write the id into a free slot of my record, fence, read the
 *          entry's word: if closing or reused, clear the slot and fail.
 *   drain: (after close set the closing flag) fence, then wait while any
 *          record's slot names this id.
 * Either the holder's read sees closing, or the closer's scan sees the id:
 * a hold never overlaps the destroy. The fence is asymmetric where Linux
 * offers membarrier(2): the holder's side is only a compiler barrier, and
 * the closer, about to spend milliseconds in cuCtxDestroy anyway, makes
 * every running thread of the process execute a full barrier. Otherwise the
 * holder pays a full fence. A thread holding more than HAZARDS entries at
 * once falls back to pinning the word. */
#define HAZARDS 4
#define NO_HAZARD UINT32_MAX
struct hazard_rec {
    _Alignas(CUCTX_CACHE_LINE) _Atomic uint64_t ids[HAZARDS];
    struct hazard_rec *next;        /* the list only grows: records are reused, never freed */
    _Atomic int taken;              /* a live thread owns it */
    /* Objects published minus objects freed by the record's threads, per
     * kind: the sum over records is the live count, with no shared counter
     * on the hot path. Only the owning thread writes; a new owner goes on
     * adding to the same sums. */
    _Alignas(CUCTX_CACHE_LINE) _Atomic int64_t live[KIND_COUNT];
};
static _Atomic(struct hazard_rec *) hazard_list;
static CUCTX_TLS struct hazard_rec *my_rec;
static pthread_key_t hazard_key;
static pthread_once_t hazard_once = PTHREAD_ONCE_INIT;
static int asymmetric;              /* membarrier registered: holders skip the fence */

static void hazard_release(void *arg)
{
    struct hazard_rec *r = arg;
    for (unsigned i = 0; i < HAZARDS; i++)
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

/* At thread exit, also one cancelled inside a driver call: its holds and
 * pins go. Destructors of other keys that run later and call cuctx take a
 * record anew, and this runs again for it. */
static void thread_exit(void *arg)
{
    while (my_npins)
        cuctx__unpin(my_pins[my_npins - 1]);
    hazard_release(arg);
    my_rec = NULL;
    my_used = 0;
}

void cuctx__registry_after_fork(void)
{
    /* Only the forking thread lives on in the child: the other threads'
     * holds and pins are gone with them, and the membarrier registration is
     * made anew for the child (holders fence for themselves if it fails). */
    for (struct hazard_rec *r = atomic_load(&hazard_list); r; r = r->next)
        if (r != my_rec)
            hazard_release(r);
    uint32_t n = atomic_load(&next_index);
    for (uint32_t i = 0; i < n; i++) {
        struct cuctx_slot *s = slot_at(i);
        if (s)
            atomic_store(&s->word, atomic_load(&s->word) & ~PINS_MASK);
    }
    my_npins = 0;
    if (asymmetric && !membarrier_register())
        asymmetric = 0;
}

static void hazard_init(void)
{
    pthread_key_create(&hazard_key, thread_exit);
    asymmetric = membarrier_register();
}

static struct hazard_rec *hazard_rec(void)
{
    struct hazard_rec *r;
    if (my_rec)
        return my_rec;
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
    return my_rec = r;
}

/* Threads without a record (its allocation failed) count here. */
static _Atomic int64_t live_unowned[KIND_COUNT];

static void count_live(unsigned kind, int64_t delta)
{
    struct hazard_rec *r = my_rec ? my_rec : hazard_rec();
    if (kind >= KIND_COUNT)
        return;
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
    for (struct hazard_rec *r = atomic_load_explicit(&hazard_list, memory_order_acquire); r; r = r->next)
        for (unsigned k = 0; k < KIND_COUNT; k++)
            out[k] += atomic_load_explicit(&r->live[k], memory_order_relaxed);
}

static inline void holder_fence(void)
{
    if (asymmetric)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

static void closer_fence(void)
{
#ifdef __linux__
    if (asymmetric && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}

static void hazards_wait(uint64_t id)
{
    pthread_once(&hazard_once, hazard_init);    /* so that `asymmetric` is settled */
    closer_fence();
    for (struct hazard_rec *r = atomic_load_explicit(&hazard_list, memory_order_acquire); r; r = r->next)
        for (unsigned i = 0, round = 0; i < HAZARDS; i++)
            while (atomic_load_explicit(&r->ids[i], memory_order_acquire) == id)
                backoff(&round);
}

int cuctx__holding(uint64_t id)
{
    if (!my_rec)
        return 0;
    for (unsigned i = 0; i < HAZARDS; i++)
        if ((my_used & (1u << i)) && atomic_load_explicit(&my_rec->ids[i], memory_order_relaxed) == id)
            return 1;
    return 0;
}

struct cuctx_slot *cuctx__hold(uint64_t id, enum cuctx_kind kind, unsigned *hazard)
{
    struct hazard_rec *r = hazard_rec();
    if (!r || my_used == (1u << HAZARDS) - 1) {
        struct cuctx_slot *s = cuctx__pin(id, kind);
        if (s)
            *hazard = NO_HAZARD;
        return s;
    }
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    if (!s || !matches(atomic_load_explicit(&s->word, memory_order_relaxed), id, kind))
        return NULL;
    unsigned i = (unsigned)__builtin_ctz(~my_used);
    atomic_store_explicit(&r->ids[i], id, memory_order_relaxed);
    holder_fence();
    if (!matches(atomic_load_explicit(&s->word, memory_order_acquire), id, kind)) {
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
        return NULL;
    }
    my_used |= 1u << i;
    *hazard = i;
    return s;
}

void cuctx__unhold(struct cuctx_slot *s, unsigned hazard)
{
    if (hazard == NO_HAZARD) {
        cuctx__unpin(s);
        return;
    }
    atomic_store_explicit(&my_rec->ids[hazard], 0, memory_order_release);
    my_used &= ~(1u << hazard);
}

struct cuctx_slot *cuctx__close(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    if (!s)
        return NULL;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (!matches(w, id, kind))
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, w | CLOSING,
                                                    memory_order_seq_cst, memory_order_acquire));
    return s;
}

void cuctx__drain(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_seq_cst);
    if (word_kind(w) == KIND_ENTRY)
        hazards_wait(cuctx__id_make(KIND_ENTRY, s->index, word_gen(w)));
    for (unsigned round = 0; atomic_load_explicit(&s->word, memory_order_seq_cst) & PINS_MASK;)
        backoff(&round);
}

void cuctx__reopen(struct cuctx_slot *s)
{
    atomic_fetch_and_explicit(&s->word, ~CLOSING, memory_order_release);
}

void cuctx__wait_closed(uint64_t id, enum cuctx_kind kind)
{
    for (unsigned round = 0; cuctx__closing(id, kind);)
        backoff(&round);
}

void cuctx__slot_free(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    uint32_t gen = word_gen(w) + 1;
    count_live(word_kind(w), -1);
    atomic_store_explicit(&s->word, (uint64_t)gen << GEN_SHIFT, memory_order_release);
    if (gen != UINT32_MAX)
        push_free(s);
    /* else retired for good: reusing it would bring its old ids back to life */
}

int cuctx__alive(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    return s && matches(atomic_load_explicit(&s->word, memory_order_acquire), id, kind);
}

struct cuctx_slot *cuctx__closing_slot(uint64_t id, enum cuctx_kind kind)
{
    return cuctx__closing(id, kind) ? slot_at(cuctx__id_index(id)) : NULL;
}

int cuctx__closing(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    uint64_t w = s ? atomic_load_explicit(&s->word, memory_order_acquire) : 0;
    return s && (w & CLOSING) && matches(w & ~CLOSING, id, kind);
}

struct cuctx_slot *cuctx__peek(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    return s && matches(atomic_load_explicit(&s->word, memory_order_acquire), id, kind) ? s : NULL;
}

int cuctx__peek_valid(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind)
{
    atomic_thread_fence(memory_order_acquire);  /* the field reads happen before this check */
    return matches(atomic_load_explicit(&s->word, memory_order_relaxed), id, kind);
}

uint64_t cuctx__slot_id(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    return cuctx__id_make((enum cuctx_kind)word_kind(w), s->index, word_gen(w));
}

void cuctx__slot_foreach(void (*fn)(enum cuctx_kind kind, struct cuctx_slot *s, void *arg), void *arg)
{
    uint32_t n = atomic_load_explicit(&next_index, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct cuctx_slot *s = slot_at(i);
        if (!s)
            continue;
        unsigned k = word_kind(atomic_load_explicit(&s->word, memory_order_acquire));
        if (k != KIND_NONE && k < KIND_COUNT)
            fn((enum cuctx_kind)k, s, arg);
    }
}
