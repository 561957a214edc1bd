/* SPDX-License-Identifier: MIT */
/* registry.h - the table of slots behind every handle, and its primitives,
 * inline: every handle operation is a few of them, and a call per
 * primitive cost more than the work inside (callgrind: 693 instructions
 * per event create + destroy as calls). The slow paths (growing the table,
 * waiting, a thread's first use) are in registry.c, which calls nothing
 * above it.
 *
 * The registry's words, and the library's names built on them:
 *
 *   slot      one cache line of the table: a word (generation, kind,
 *             closing flag, pins) and the payload of one object.
 *   id        kind | slot index | generation (ids.h): a handle's value.
 *   alloc     take a free slot; publish makes it live as a kind.
 *   pin       a CAS on a live slot's word (pins+1): it is not destroyed
 *             while pinned. Children are pinned for use.
 *   hold      a slot pinned through the thread's hazard slots, with plain
 *             stores: a context entry (cuctx__hold_own, cuctx__hold_slot),
 *             or a child on a hot path (cuctx__hold_child: a stream for a
 *             stream-ordered allocation or free). An entry held for one
 *             call, with its fields, is a struct cuctx_held (entry.h):
 *             cuctx__entry_hold (by entry id), cuctx__ctx_hold (by handle),
 *             cuctx__entry_hold_raw (by driver address).
 *   held      a child slot's word bit, set (one CAS) by the first hold of
 *             its generation: its close then waits for holds as an
 *             entry's does; a child never held drains its pins alone.
 *   close     claim the one destroy of an id: new pins and holds fail.
 *   drain     wait out the pins and holds taken before the close.
 *   reopen    abandon a close (the slot lives on, same generation).
 *   free      generation+1: every copy of the id is now stale.
 *   retire    a slot whose generation would wrap is never reused; an entry
 *             found gone by its driver id is retired from the map (entry.c).
 *   peek      read a slot's fields without a pin, then check the id again.
 *   entry     a context as cuctx knows it (KIND_ENTRY); a context handle
 *             (KIND_CTX_HANDLE) names one; children are tethered to one.
 *   life      who decides a context's life (enum cuctx_life, ids.h): a
 *             handle's, what destroying it undoes; an entry keeps only
 *             whether the driver's id decides it (by_id).
 *   by_id     an entry whose life the driver's id decides: holds check it.
 *   _own      a function for an id or index the library made itself
 *             (trusted: its segment exists, its kind is right); without
 *             the suffix, the id may come from outside (checked, or NULL).
 *   _slot     given the slot too, not only the id.
 */
#ifndef CUCTX_REGISTRY_H
#define CUCTX_REGISTRY_H

#include <cuda.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ids.h"
#include "thread.h"

/* One table slot, one cache line: threads working on their own objects must
 * not bounce a line between them with their pins (measured: 0.6 of the raw
 * driver's rate at 2-8 threads with 40-byte slots, on an H200 host).
 * `word` packs what every reader checks atomically:
 * generation (bits 32-63), kind (26-31), closing (25), held (24) and pins
 * (0-23).
 * The payload is written before the slot is published and read only by
 * holders of a pin, or by the one closer after the pins drained. */
#define CUCTX_CACHE_LINE 64
/* Where an object was made, for the leak report (NULL file: not known),
 * and whether its destroy is cuctx's, in the padding after line (a slot has
 * no room for another word). */
struct cuctx_site {
    const char *file;
    const char *func;
    int line;
    unsigned char unowned;  /* adopted only to track: its destroy ends the handle alone */
};
struct cuctx_slot {
    _Alignas(CUCTX_CACHE_LINE) _Atomic uint64_t word;
    _Atomic uint32_t next_free;     /* free-list link: index + 1, 0 = end */
    uint32_t index;                 /* fixed when the slot is first handed out */
    union {
        struct {                    /* KIND_ENTRY; fixed once published except as noted */
            CUcontext raw;
            unsigned long long ctx_id;  /* the driver's id (cuCtxGetId); 0: the driver has none */
            CUdevice dev;
            unsigned char by_id;    /* life decided by the driver's id: every hold checks it */
            unsigned char counted;  /* by_id, registered by a borrow: ends with its last name (entry.h) */
            unsigned char ending;   /* a green context being destroyed: creates refused (atomic; green.c) */
            uint64_t owner_handle;  /* an owned context's handle, set once after publishing (atomic) */
            uint32_t names;         /* counted: the handles and children naming it (atomic) */
            CUcontext home;         /* a green context's: the device's primary context under it, whose
                                       generation its children but streams are tethered to; else NULL */
        } entry;
        struct {                    /* KIND_CTX_HANDLE */
            uint64_t entry;
            int life;               /* enum cuctx_life; borrowed in a forked child */
            CUdevice dev;           /* a primary handle's device, for its release */
            struct cuctx_site site;
            void *green;            /* a green context's handle: its CUgreenCtx, for its destroy */
        } ctx;
        struct {                    /* children */
            uint64_t entry;         /* the owning context's entry id */
            uint64_t raw;           /* the driver handle, as an integer */
            size_t size;
            struct cuctx_site site;
        } child;
    } u;
};
_Static_assert(sizeof(struct cuctx_slot) == CUCTX_CACHE_LINE, "a slot is one cache line");

/* A slot's word: generation (bits 32-63), kind (26-31), closing (25), held
 * (24: a child's generation was held through hazard slots at least once,
 * so its close scans them; an entry's close always does) and pins (0-23). */
#define CUCTX_W_GEN_SHIFT 32
#define CUCTX_W_KIND_SHIFT 26
#define CUCTX_W_KIND_MASK 0x3fu
#define CUCTX_W_CLOSING (UINT64_C(1) << 25)
#define CUCTX_W_HELD (UINT64_C(1) << 24)
#define CUCTX_W_PINS ((UINT64_C(1) << 24) - 1)

/* What a child kind keeps beside its slot when one line has no room: two
 * ids and a pointer (a stream-ordered allocation's stream, the context it
 * was made in and its pool's record, mem_async.c; a pool's record,
 * mem_pool.c). Written before the slot is published and read by its one
 * closer, as the payload is (a pool's pointer: set once, atomically, by
 * whoever pins it first); in each segment after its slots, zeroed by every
 * create of an untethered kind, touched only where a kind uses it. */
struct cuctx_aux {
    uint64_t id[2];
    void *ptr;
};

/* The table is CUCTX_SEG_COUNT segments of 2^CUCTX_SEG_BITS slots each
 * (4 MiB of address space, touched a page at a time), made on demand and
 * never moved or freed: a slot's address is one load and an add away. */
#define CUCTX_SEG_BITS 16
#define CUCTX_SEG_COUNT (CUCTX_ID_INDEX_LIMIT >> CUCTX_SEG_BITS)
extern _Atomic(struct cuctx_slot *) cuctx__segments[CUCTX_SEG_COUNT];

static inline uint32_t cuctx__word_gen(uint64_t w) { return (uint32_t)(w >> CUCTX_W_GEN_SHIFT); }
static inline unsigned cuctx__word_kind(uint64_t w) { return (unsigned)(w >> CUCTX_W_KIND_SHIFT) & CUCTX_W_KIND_MASK; }

_Static_assert(CUCTX_ID_INDEX_LIMIT % (UINT32_C(1) << CUCTX_SEG_BITS) == 0, "every index has a segment");

/* Where an index lives: the segment pointer, and the slot within it. */
static inline _Atomic(struct cuctx_slot *) *cuctx__segment_of(uint32_t index)
{
    return &cuctx__segments[index >> CUCTX_SEG_BITS];
}
static inline uint32_t cuctx__segment_offset(uint32_t index)
{
    return index & ((UINT32_C(1) << CUCTX_SEG_BITS) - 1);
}

/* A segment's bytes: its slots, then their aux records. */
#define CUCTX_SEG_BYTES (((size_t)1 << CUCTX_SEG_BITS) * (sizeof(struct cuctx_slot) + sizeof(struct cuctx_aux)))

/* A slot's aux record (struct cuctx_aux). */
static inline struct cuctx_aux *cuctx__slot_aux(struct cuctx_slot *s)
{
    uint32_t off = cuctx__segment_offset(s->index);
    struct cuctx_slot *base = s - off;
    return (struct cuctx_aux *)(base + ((size_t)1 << CUCTX_SEG_BITS)) + off;
}

/* The slot for an index (< CUCTX_ID_INDEX_LIMIT, as every id's is), or NULL
 * where no segment holds it yet. A slot in a segment that was never handed
 * out is zero: kind NONE, matching no id. */
static inline struct cuctx_slot *cuctx__slot_find(uint32_t index)
{
    struct cuctx_slot *base = atomic_load_explicit(cuctx__segment_of(index), memory_order_acquire);
    return base ? &base[cuctx__segment_offset(index)] : NULL;
}

/* The slot of an index the library handed out itself (a held entry's, a
 * child's owner): its segment exists. */
static inline struct cuctx_slot *cuctx__slot_own(uint32_t index)
{
    return &atomic_load_explicit(cuctx__segment_of(index), memory_order_acquire)[cuctx__segment_offset(index)];
}

/* Whether word w is the live, not closing, slot of id as kind: the word
 * less its pins and held bit must be exactly the id's generation and kind. */
static inline int cuctx__word_matches_own(uint64_t w, uint64_t id, enum cuctx_kind kind)
{
    return (w & ~(CUCTX_W_PINS | CUCTX_W_HELD)) == ((id << CUCTX_W_GEN_SHIFT) | (uint64_t)kind << CUCTX_W_KIND_SHIFT);
}
/* The same for an id from outside, which may name another kind. */
static inline int cuctx__word_matches(uint64_t w, uint64_t id, enum cuctx_kind kind)
{
    return cuctx__id_kind(id) == kind && cuctx__word_matches_own(w, id, kind);
}

/* ---- per-thread state ------------------------------------------------------ */

/* Each thread that holds context entries owns a record of hazard slots
 * (registry.c explains the protocol) and its counts of live objects. */
#define CUCTX_HAZARDS 4
#define CUCTX_NO_HAZARD UINT32_MAX
struct cuctx_hazard_rec {
    _Alignas(CUCTX_CACHE_LINE) _Atomic uint64_t ids[CUCTX_HAZARDS];
    struct cuctx_hazard_rec *next;  /* the list only grows: records are reused, never freed */
    _Atomic int taken;              /* a live thread owns it */
    /* Objects published minus objects freed by the record's threads, per
     * kind: the sum over records is the live count, with no shared counter
     * on the hot path. Only the owning thread writes; a new owner goes on
     * adding to the same sums. */
    _Alignas(CUCTX_CACHE_LINE) _Atomic int64_t live[KIND_COUNT];
};

extern int cuctx__asymmetric;      /* membarrier registered: holders skip the full fence */

/* ---- slow paths (registry.c) ------------------------------------------------ */
struct cuctx_hazard_rec *cuctx__hazard_rec_slow(void);
struct cuctx_slot *cuctx__slot_alloc_slow(void);
void cuctx__slot_push_slow(struct cuctx_slot *s);
void cuctx__count_live_slow(unsigned kind, int64_t delta);
struct cuctx_slot *cuctx__hold_slow(uint64_t id, enum cuctx_kind kind, unsigned *hazard);
void cuctx__drain_slow(struct cuctx_slot *s);

static inline struct cuctx_hazard_rec *cuctx__hazard_rec(void)
{
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    return __builtin_expect(r != NULL, 1) ? r : cuctx__hazard_rec_slow();
}

static inline void cuctx__count_live(unsigned kind, int64_t delta)
{
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    if (__builtin_expect(r != NULL, 1))     /* kind: a published slot's, < KIND_COUNT */
        atomic_store_explicit(&r->live[kind], atomic_load_explicit(&r->live[kind], memory_order_relaxed) + delta,
                              memory_order_relaxed);
    else
        cuctx__count_live_slow(kind, delta);
}

/* ---- slots ------------------------------------------------------------------ */

/* Reserves a free slot; publish it with cuctx__slot_publish once filled.
 * NULL when the table cannot grow. Its payload is written with relaxed
 * atomic stores: a reader peeking with a stale id (cuctx__peek) may load the
 * same fields at the same time. The fence orders those stores after the
 * free that ended the slot's last generation, so a peeker that loads one of
 * them sees that generation gone in cuctx__peek_valid (a seqlock writer's
 * fence; on x86 it costs no instruction). */
static inline struct cuctx_slot *cuctx__slot_alloc(void)
{
    struct cuctx_slot *s;
    if (__builtin_expect(cuctx__me.registry.ncache != 0, 1)) {
        s = cuctx__me.registry.cache[--cuctx__me.registry.ncache];
        if (!s)     /* (the cache holds slots only: the caller's NULL test folds away here) */
            __builtin_unreachable();
    } else {
        s = cuctx__slot_alloc_slow();
    }
    atomic_thread_fence(memory_order_release);
    return s;
}

/* Writes a site into a slot's payload, atomically for peekers (above). */
static inline void cuctx__site_store(struct cuctx_site *to, const struct cuctx_site *from)
{
    __atomic_store_n(&to->file, from->file, __ATOMIC_RELAXED);
    __atomic_store_n(&to->func, from->func, __ATOMIC_RELAXED);
    __atomic_store_n(&to->line, from->line, __ATOMIC_RELAXED);
    __atomic_store_n(&to->unowned, from->unowned, __ATOMIC_RELAXED);
}

/* A free slot back: to the thread's cache, else to the shared list. */
static inline void cuctx__slot_push(struct cuctx_slot *s)
{
    if (__builtin_expect(cuctx__me.registry.cache_registered > 0 && cuctx__me.registry.ncache < CUCTX_SLOT_CACHE, 1))
        cuctx__me.registry.cache[cuctx__me.registry.ncache++] = s;
    else
        cuctx__slot_push_slow(s);
}

/* Makes the slot live as kind; returns its id. */
static inline uint64_t cuctx__slot_publish(struct cuctx_slot *s, enum cuctx_kind kind)
{
    uint32_t gen = cuctx__word_gen(atomic_load_explicit(&s->word, memory_order_relaxed));
    atomic_store_explicit(&s->word, (uint64_t)gen << CUCTX_W_GEN_SHIFT | (uint64_t)kind << CUCTX_W_KIND_SHIFT,
                          memory_order_release);
    cuctx__count_live(kind, 1);
    return cuctx__id_make(kind, s->index, gen);
}

/* Returns an unpublished slot to the free list (its generation was not used). */
static inline void cuctx__slot_discard(struct cuctx_slot *s)
{
    cuctx__slot_push(s);
}

/* Ends the slot's generation and frees it: every copy of the old id is now
 * stale. A slot whose generation would wrap is retired for good (reusing it
 * would bring its old ids back to life). */
static inline void cuctx__slot_free(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    uint32_t gen = cuctx__word_gen(w) + 1;
    cuctx__count_live(cuctx__word_kind(w), -1);
    atomic_store_explicit(&s->word, (uint64_t)gen << CUCTX_W_GEN_SHIFT, memory_order_release);
    if (__builtin_expect(gen != UINT32_MAX, 1))
        cuctx__slot_push(s);
}

/* ---- pins, holds, close ------------------------------------------------------ */

/* A pin keeps a live slot from being destroyed while held; NULL when id is
 * stale, of another kind, or closing. One CAS on the slot's word. Reports
 * deferred while pinned are the releaser's to deliver (error.h). The
 * thread lists its pins (registry.c: its exit and a cancel release them).
 * Inline for a thread with its record and room in its list; the rest - a
 * thread's first, a pin beyond the list - in cuctx__pin_slow. */
struct cuctx_slot *cuctx__pin_slow(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind);
void cuctx__unpin_listed(struct cuctx_slot *s);
/* The CAS of a pin on s, id's slot: 0 when id is not live there. */
static inline int cuctx__pin_word(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (!cuctx__word_matches(w, id, kind) || (w & CUCTX_W_PINS) == CUCTX_W_PINS)
            return 0;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, w + 1,
                                                    memory_order_acquire, memory_order_acquire));
    return 1;
}
static inline struct cuctx_slot *cuctx__pin(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    unsigned n = cuctx__me.registry.npins;
    if (__builtin_expect(!s, 0))
        return NULL;
    if (__builtin_expect(cuctx__me.registry.rec == NULL || n >= CUCTX_MY_PINS, 0))
        return cuctx__pin_slow(s, id, kind);
    if (!cuctx__pin_word(s, id, kind))
        return NULL;
    cuctx__me.registry.pins[n] = s;
    cuctx__me.registry.npins = n + 1;
    return s;
}
/* Pins are let go in the reverse order mostly: the last listed is one load
 * away, any other is looked for (cuctx__unpin_listed). */
static inline void cuctx__unpin(struct cuctx_slot *s)
{
    unsigned n = cuctx__me.registry.npins;
    if (__builtin_expect(n != 0 && cuctx__me.registry.pins[n - 1] == s, 1))
        cuctx__me.registry.npins = n - 1;
    else
        cuctx__unpin_listed(s);
    atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
}

/* The holder's half of the fence (registry.c), between the store of the id
 * into a hazard slot and the read of the word: a compiler barrier where the
 * closer makes every thread fence with membarrier(2) (asymmetric: the value
 * of cuctx__asymmetric, which a caller holding twice may read once: it is
 * settled before the thread's record exists, and changes after that only
 * in a forked child, which has one thread). */
static inline __attribute__((always_inline)) void cuctx__holder_fence(int asymmetric)
{
    if (__builtin_expect(asymmetric, 1))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The pin of a context entry on the tether's hot path: the id goes into one
 * of the calling thread's hazard slots with plain stores, so a hold costs no
 * atomic read-modify-write and threads sharing a context share no written
 * cache line. Released on the same thread; *hazard is for cuctx__unhold.
 * cuctx__drain waits for holds as for pins. s is id's slot. */
static inline struct cuctx_slot *cuctx__hold_slot(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind,
                                                unsigned *hazard)
{
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    unsigned used = cuctx__me.registry.used;
    if (__builtin_expect(!r || used == (1u << CUCTX_HAZARDS) - 1, 0))
        return cuctx__hold_slow(id, kind, hazard);
    unsigned i = (unsigned)__builtin_ctz(~used);
    atomic_store_explicit(&r->ids[i], id, memory_order_relaxed);
    cuctx__holder_fence(cuctx__asymmetric);
    if (!cuctx__word_matches_own(atomic_load_explicit(&s->word, memory_order_acquire), id, kind)) {
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
        return NULL;
    }
    cuctx__me.registry.used = used | 1u << i;
    *hazard = i;
    return s;
}

/* The same by id alone. id comes from the library (a handle's field, a
 * child's owner, the context map): its segment exists, its kind is kind. */
static inline struct cuctx_slot *cuctx__hold_own(uint64_t id, enum cuctx_kind kind, unsigned *hazard)
{
    return cuctx__hold_slot(cuctx__slot_own(cuctx__id_index(id)), id, kind, hazard);
}

/* A child held as an entry is (above), for a hot path that would otherwise
 * pin it and unpin it: two locked read-modify-writes on the child's line
 * per call. The child's close must then scan the hazard slots, which costs
 * a membarrier(2), so only a child's held generation does: the first hold
 * sets CUCTX_W_HELD in its word (one CAS, once), and the hold counts only
 * if the bit was set before any close - the close's CAS then sees it
 * (registry.c, "holds of children"). NULL when id is stale, of another
 * kind, or closing; *hazard as for cuctx__hold_slot (CUCTX_NO_HAZARD: it
 * pinned, the thread's hazard slots being all in use). Reports deferred
 * while held are the releaser's to deliver, as for a pin. */
struct cuctx_slot *cuctx__hold_child_slow(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind, unsigned *hazard);
static inline struct cuctx_slot *cuctx__hold_child(uint64_t id, enum cuctx_kind kind, unsigned *hazard)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    unsigned used = cuctx__me.registry.used;
    if (__builtin_expect(!s || cuctx__id_kind(id) != kind, 0))
        return NULL;
    if (__builtin_expect(!r || used == (1u << CUCTX_HAZARDS) - 1, 0))
        return cuctx__hold_child_slow(s, id, kind, hazard);
    unsigned i = (unsigned)__builtin_ctz(~used);
    atomic_store_explicit(&r->ids[i], id, memory_order_relaxed);
    cuctx__holder_fence(cuctx__asymmetric);
    /* live, not closing, and held before: one compare */
    if (__builtin_expect((atomic_load_explicit(&s->word, memory_order_acquire) & ~CUCTX_W_PINS)
                         != ((id << CUCTX_W_GEN_SHIFT) | (uint64_t)kind << CUCTX_W_KIND_SHIFT | CUCTX_W_HELD), 0)) {
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
        return cuctx__hold_child_slow(s, id, kind, hazard);     /* the generation's first hold, or a failure */
    }
    cuctx__me.registry.used = used | 1u << i;
    *hazard = i;
    return s;
}

void cuctx__unhold_pinned(struct cuctx_slot *s);
/* Lets go of a child held by cuctx__hold_child, or pinned (hazard
 * CUCTX_NO_HAZARD): both inline. */
static inline void cuctx__unhold_child(struct cuctx_slot *s, unsigned hazard)
{
    if (hazard == CUCTX_NO_HAZARD) {
        cuctx__unpin(s);
        return;
    }
    atomic_store_explicit(&cuctx__me.registry.rec->ids[hazard], 0, memory_order_release);
    cuctx__me.registry.used &= ~(1u << hazard);
}
static inline void cuctx__unhold(struct cuctx_slot *s, unsigned hazard)
{
    if (__builtin_expect(hazard == CUCTX_NO_HAZARD, 0)) {
        cuctx__unhold_pinned(s);
        return;
    }
    atomic_store_explicit(&cuctx__me.registry.rec->ids[hazard], 0, memory_order_release);
    cuctx__me.registry.used &= ~(1u << hazard);
}

/* Claims the one destroy of id (NULL if stale, wrong kind or already
 * closing); new pins and holds fail from here on. *pins: the pins the slot
 * had at the close, the most there can be from then on, and CUCTX_W_HELD
 * if its generation was ever held: nonzero, cuctx__drain_slow has
 * something to wait for. */
static inline struct cuctx_slot *cuctx__close_pinned(uint64_t id, enum cuctx_kind kind, uint64_t *pins)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    if (!s)
        return NULL;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (!cuctx__word_matches(w, id, kind))
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, w | CUCTX_W_CLOSING,
                                                    memory_order_seq_cst, memory_order_acquire));
    *pins = w & (CUCTX_W_PINS | CUCTX_W_HELD);
    return s;
}

static inline struct cuctx_slot *cuctx__close(uint64_t id, enum cuctx_kind kind)
{
    uint64_t pins;
    return cuctx__close_pinned(id, kind, &pins);
}

/* Waits until the pins and holds taken before the close are released;
 * sleeps, with backoff, when they last. A child slot with no pins left at
 * the close, never held, has nothing to wait for: pins and holds cannot be
 * taken once it closes. */
static inline void cuctx__drain(struct cuctx_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_seq_cst);
    if (__builtin_expect(cuctx__word_kind(w) != KIND_ENTRY && !(w & (CUCTX_W_PINS | CUCTX_W_HELD)), 1))
        return;
    cuctx__drain_slow(s);
}

/* Whether id names a live slot (not closing), without pinning. */
static inline int cuctx__alive(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    return s && cuctx__word_matches(atomic_load_explicit(&s->word, memory_order_acquire), id, kind);
}

/* The same for an id the library made (see cuctx__slot_own). */
static inline int cuctx__alive_own(uint64_t id, enum cuctx_kind kind)
{
    return cuctx__word_matches_own(atomic_load_explicit(&cuctx__slot_own(cuctx__id_index(id))->word, memory_order_acquire), id,
                          kind);
}

/* Reads without a pin, as a seqlock reader: cuctx__peek gives the slot if
 * id is live; read its fields with relaxed atomic loads; the values hold if
 * cuctx__peek_valid then says id is still live (the slot was not reused). */
static inline struct cuctx_slot *cuctx__peek(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    return s && cuctx__word_matches(atomic_load_explicit(&s->word, memory_order_acquire), id, kind) ? s : NULL;
}

static inline int cuctx__peek_valid(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind)
{
    atomic_thread_fence(memory_order_acquire);  /* the field reads happen before this check */
    return cuctx__word_matches(atomic_load_explicit(&s->word, memory_order_relaxed), id, kind);
}

/* The same pair for an id the library made (see cuctx__slot_own). */
static inline struct cuctx_slot *cuctx__peek_own(uint64_t id, enum cuctx_kind kind)
{
    struct cuctx_slot *s = cuctx__slot_own(cuctx__id_index(id));
    return cuctx__word_matches_own(atomic_load_explicit(&s->word, memory_order_acquire), id, kind) ? s : NULL;
}

static inline int cuctx__peek_valid_own(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind)
{
    atomic_thread_fence(memory_order_acquire);
    return cuctx__word_matches_own(atomic_load_explicit(&s->word, memory_order_relaxed), id, kind);
}

/* Abandons a close: the slot is live again with the same generation. */
void cuctx__reopen(struct cuctx_slot *s);
/* Waits until id is no longer closing (freed, or reopened). */
void cuctx__wait_closed(uint64_t id, enum cuctx_kind kind);
/* Whether the calling thread holds id in one of its hazard slots. */
int cuctx__holding(uint64_t id);
/* Lets go of every hold and pin of the calling thread: for a call unwound
 * by a cancellation (tether.c), whose holds and pins are all the thread
 * has, since none outlives a call and no user code runs while one is held. */
void cuctx__let_go_all(void);
/* The statement after it - a driver call or a wait made while holding -
 * lets go of everything when a cancellation unwinds it (lib/ is built with
 * -fexceptions); it must not leave by return, break or goto. The flag is
 * known at every exit, so that the normal path pays nothing. */
static inline void cuctx__let_go_unwound(const int *armed)
{
    if (__builtin_expect(*armed, 0))
        cuctx__let_go_all();
}
#define CUCTX__LET_GO_ON_UNWIND                                                                      \
    for (int cuctx__armed_ __attribute__((cleanup(cuctx__let_go_unwound))) = 1; cuctx__armed_; \
         cuctx__armed_ = 0)
/* Whether the calling thread holds any entry or pin. */
static inline int cuctx__thread_holds(void)
{
    return cuctx__me.registry.used != 0 || cuctx__me.registry.npins != 0;
}
/* Whether the calling thread holds a context entry (a hold, or a pin of an
 * entry's slot): a pin or hold of a child's slot is no entry. */
static inline int cuctx__thread_holds_entry(void)
{
    for (unsigned i = 0; i < CUCTX_HAZARDS; i++)
        if ((cuctx__me.registry.used & (1u << i))
            && cuctx__id_kind(atomic_load_explicit(&cuctx__me.registry.rec->ids[i], memory_order_relaxed)) == KIND_ENTRY)
            return 1;
    for (unsigned i = 0; i < cuctx__me.registry.npins; i++)
        if (cuctx__word_kind(atomic_load_explicit(&cuctx__me.registry.pins[i]->word, memory_order_relaxed))
            == KIND_ENTRY)
            return 1;
    return 0;
}
/* Whether id names a slot whose destroy has begun but not finished. */
int cuctx__closing(uint64_t id, enum cuctx_kind kind);
/* The slot of such an id, else NULL; its payload is its closer's to free. */
struct cuctx_slot *cuctx__closing_slot(uint64_t id, enum cuctx_kind kind);

/* Live objects per kind, summed over the threads' own counters: cheap at
 * any table size. Exact while no thread creates or destroys. */
void cuctx__live_counts(int64_t out[KIND_COUNT]);
/* The id of a published slot, from its word. */
uint64_t cuctx__slot_id(struct cuctx_slot *s);
/* Calls fn for each published slot; used by diagnostics and fork. */
void cuctx__slot_foreach(void (*fn)(enum cuctx_kind kind, struct cuctx_slot *s, void *arg), void *arg);
/* In a forked child: the other threads' holds and pins are gone. */
void cuctx__registry_after_fork(void);

/* Destroys that did not reach the driver, or that it refused (stats). */
extern _Atomic uint64_t cuctx__stale_skips;       /* the context had ended */
extern _Atomic uint64_t cuctx__failed_destroys;   /* the driver refused, or could not be asked */
extern _Atomic size_t cuctx__parked_pools;        /* pools cuctx made, parked at their end (mem_pool.c) */
extern _Atomic uint64_t cuctx__shutdown_skips;    /* the driver had shut down */

#endif
