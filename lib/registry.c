/* registry.c - the table of slots behind every handle.
 *
 * A handle id is kind | slot index | generation (internal.h). Each slot has
 * one atomic word holding its generation, its kind while live, a closing
 * flag and a count of pins. Everything that checks a handle does it with one
 * atomic operation on that word:
 *
 *   pin     CAS pins+1, only if generation and kind match and not closing;
 *   close   CAS the closing flag on, same conditions: exactly one destroy wins;
 *   drain   wait until the pins taken before the close are gone;
 *   free    generation+1, kind 0: every copy of the old id is now stale.
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
#include <stdlib.h>
#include <string.h>

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
        size_t bytes = ((size_t)1 << (seg + SEG_BASE_BITS)) * sizeof(struct cuctx_slot);
        struct cuctx_slot *mine = aligned_alloc(CUCTX_CACHE_LINE, bytes);
        struct cuctx_slot *expected = NULL;
        if (!mine)
            return NULL;    /* the index is lost; slot_at() sees no segment for it */
        memset(mine, 0, bytes);
        if (atomic_compare_exchange_strong(&segments[seg], &expected, mine))
            base = mine;
        else {
            free(mine);
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

static void cache_flush(void *arg)
{
    struct slot_cache *c = arg;
    while (c->n)
        push_global(c->slots[--c->n]);
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

static void stripes_ensure(struct cuctx_slot *s);

uint64_t cuctx__slot_publish(struct cuctx_slot *s, enum cuctx_kind kind)
{
    if (kind == KIND_ENTRY)
        stripes_ensure(s);
    uint32_t gen = word_gen(atomic_load_explicit(&s->word, memory_order_relaxed));
    atomic_store_explicit(&s->word, (uint64_t)gen << GEN_SHIFT | (uint64_t)kind << KIND_SHIFT,
                          memory_order_release);
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

/* ---- striped holds ---------------------------------------------------------
 * hold:  count +1 in this thread's stripe, then read the word: if the slot is
 *        closing or reused, count -1 and fail.
 * close: set closing in the word (above), then drain reads every stripe.
 * Both sides are sequentially consistent, so either the holder sees closing
 * or the closer sees the count: a hold never overlaps the destroy. A stale
 * holder may count briefly in a later occupant's stripes; it takes the count
 * back at once, so at worst a drain waits a moment longer. */
#define STRIPES 16
#define NO_STRIPE UINT32_MAX
struct cuctx_stripe {
    _Alignas(CUCTX_CACHE_LINE) _Atomic uint64_t n;
};
static _Atomic unsigned stripe_next;
static CUCTX_TLS unsigned my_stripe;    /* stripe + 1; 0: not chosen yet */

static inline unsigned stripe_of_thread(void)
{
    if (!my_stripe)
        my_stripe = atomic_fetch_add_explicit(&stripe_next, 1, memory_order_relaxed) % STRIPES + 1;
    return my_stripe - 1;
}

struct cuctx_slot *cuctx__hold(uint64_t id, enum cuctx_kind kind, unsigned *stripe)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    struct cuctx_stripe *st = s ? atomic_load_explicit(&s->stripes, memory_order_acquire) : NULL;
    if (!st) {
        *stripe = NO_STRIPE;
        return s ? cuctx__pin(id, kind) : NULL;
    }
    if (!matches(atomic_load_explicit(&s->word, memory_order_relaxed), id, kind))
        return NULL;
    unsigned i = stripe_of_thread();
    atomic_fetch_add_explicit(&st[i].n, 1, memory_order_seq_cst);
    if (!matches(atomic_load_explicit(&s->word, memory_order_seq_cst), id, kind)) {
        atomic_fetch_sub_explicit(&st[i].n, 1, memory_order_release);
        return NULL;
    }
    *stripe = i;
    return s;
}

void cuctx__unhold(struct cuctx_slot *s, unsigned stripe)
{
    if (stripe == NO_STRIPE)
        cuctx__unpin(s);
    else
        atomic_fetch_sub_explicit(&atomic_load_explicit(&s->stripes, memory_order_relaxed)[stripe].n, 1,
                                  memory_order_release);
}

/* Entries are few and each gets its stripes once; ordinary slots have none. */
static void stripes_ensure(struct cuctx_slot *s)
{
    if (atomic_load_explicit(&s->stripes, memory_order_relaxed))
        return;
    struct cuctx_stripe *st = aligned_alloc(CUCTX_CACHE_LINE, STRIPES * sizeof *st);
    if (!st)
        return;     /* holds fall back to the word's pins */
    memset(st, 0, STRIPES * sizeof *st);
    atomic_store_explicit(&s->stripes, st, memory_order_release);
}

struct cuctx_slot *cuctx__pin(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = slot_at(cuctx__id_index(id));
    if (!s)
        return NULL;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (!matches(w, id, kind) || (w & PINS_MASK) == PINS_MASK)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, w + 1,
                                                    memory_order_acquire, memory_order_acquire));
    return s;
}

void cuctx__unpin(struct cuctx_slot *s)
{
    atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
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
    struct cuctx_stripe *st = atomic_load_explicit(&s->stripes, memory_order_acquire);
    while (atomic_load_explicit(&s->word, memory_order_seq_cst) & PINS_MASK)
        sched_yield();
    for (unsigned i = 0; st && i < STRIPES; i++)
        while (atomic_load_explicit(&st[i].n, memory_order_seq_cst))
            sched_yield();
}

void cuctx__slot_free(struct cuctx_slot *s)
{
    uint32_t gen = word_gen(atomic_load_explicit(&s->word, memory_order_relaxed)) + 1;
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
