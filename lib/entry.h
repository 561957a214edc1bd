/* SPDX-License-Identifier: MIT */
/* entry.h - context entries (entry.c): what cuctx knows of one driver
 * context, the context lock, and holding an entry for the length of a
 * driver call, with its inline fast paths. */
#ifndef CUCTX_ENTRY_H
#define CUCTX_ENTRY_H

#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "registry.h"

/* Registering, retaining, releasing and ending entries take this lock
 * (driver calls on those paths cost milliseconds anyway); holding an
 * entry and every child operation never do. Never take it while holding
 * an entry: an entry's end drains holds under it. */
void cuctx__ctx_lock(void);
void cuctx__ctx_unlock(void);

/* fork: the lock around it; in the child, every entry ends and every
 * context handle becomes a borrow (process.c calls these). */
void cuctx__ctx_lock_fork(int phase);   /* -1 before fork, else after it */
void cuctx__contexts_after_fork(void);

/* A held context entry: children's creates, uses and destroys hold one for
 * the duration of their driver call, and a context's end waits them out. */
struct cuctx_held {
    struct cuctx_slot *slot;
    uint64_t id;
    CUcontext raw;
    unsigned hazard;
};

/* Holds an entry by id and, where the driver decides its life, checks its
 * id (one cuCtxGetId): an entry whose context is gone ends here.
 * CONTEXT_IS_DESTROYED when it has ended; the driver's error if the check
 * itself failed. Inline for an owned context's live entry; the rest
 * (checks, waiting for a closing entry, failures) in entry.c, which gets
 * the slot already held, or NULL. quiet: an ended context is not recorded
 * as an error, for callers to whom it is no failure (a child's destroy);
 * other failures are, under the name "cuctx". */
CUresult cuctx__entry_hold_slow(uint64_t entry, const char *fn, int quiet, struct cuctx_held *out,
                                struct cuctx_slot *held);
static inline __attribute__((always_inline)) CUresult cuctx__entry_hold_as(uint64_t entry, const char *fn, int quiet,
                                                                           struct cuctx_held *out)
{
    struct cuctx_slot *s = cuctx__hold_own(entry, KIND_ENTRY, &out->hazard);
    if (__builtin_expect(s != NULL && !s->u.entry.by_id, 1)) {
        out->slot = s;
        out->id = entry;
        out->raw = s->u.entry.raw;
        return CUDA_SUCCESS;
    }
    return cuctx__entry_hold_slow(entry, fn, quiet, out, s);
}
static inline __attribute__((always_inline)) CUresult cuctx__entry_hold(uint64_t entry, const char *fn,
                                                                        struct cuctx_held *out)
{
    return cuctx__entry_hold_as(entry, fn, 0, out);
}
static inline __attribute__((always_inline)) CUresult cuctx__entry_hold_quiet(uint64_t entry, struct cuctx_held *out)
{
    return cuctx__entry_hold_as(entry, "cuctx", 1, out);
}

static inline void cuctx__entry_release(struct cuctx_held *o)
{
    if (o->slot)
        cuctx__unhold(o->slot, o->hazard);
    o->slot = NULL;
    cuctx__deliver_reports();
}

/* Holds entry b beside a, which the caller holds, for a call on two
 * contexts. One entry (b == a's) is held once: out's slot is NULL, its
 * fields a's. A close of b that may yet be abandoned (a primary context
 * living on in another retain) is waited out with neither held, then both
 * are taken again: a thread never waits while it holds an entry, so two
 * such calls never wait on each other. On failure (CONTEXT_IS_DESTROYED:
 * either has ended; else the check's error) a is let go too. quiet as for
 * cuctx__entry_hold_as. */
CUresult cuctx__entry_hold_beside(struct cuctx_held *a, uint64_t b, const char *fn, int quiet,
                                  struct cuctx_held *out);

/* Resolves ctx ({0}: the current context) to its held entry. Errors:
 * INVALID_HANDLE for a bad handle, INVALID_CONTEXT when nothing is current,
 * CONTEXT_IS_DESTROYED when the context is gone. The handle's entry is
 * read without a pin (this is on every child create), so the field is read
 * atomically and kept only if the handle was still live after the read. */
CUresult cuctx__ctx_hold_slow(cuctx_ctx ctx, const char *fn, struct cuctx_held *out);
/* The handle is the thread's last. An owned context's handle and entry end
 * together: cuctx_ctx_destroy frees the handle and closes the entry with no
 * call between, and a fork ends every entry. So while the entry can be
 * held the handle is live, and neither needs looking up: the entry is held
 * by its known slot. Else the full path below. */
static inline __attribute__((always_inline)) int cuctx__ctx_hold_last(cuctx_ctx ctx, struct cuctx_held *out)
{
    if (__builtin_expect(ctx.id != cuctx__me.entry.last.handle || ctx.id == 0, 0))
        return 0;
    out->slot = cuctx__hold_slot(cuctx__me.entry.last.slot, cuctx__me.entry.last.entry, KIND_ENTRY, &out->hazard);
    out->id = cuctx__me.entry.last.entry;
    out->raw = cuctx__me.entry.last.raw;
    return out->slot != NULL;
}
static inline __attribute__((always_inline)) CUresult cuctx__ctx_hold(cuctx_ctx ctx, const char *fn,
                                                                          struct cuctx_held *out)
{
    if (__builtin_expect(cuctx__ctx_hold_last(ctx, out), 1))
        return CUDA_SUCCESS;
    struct cuctx_slot *h = ctx.id ? cuctx__peek(ctx.id, KIND_CTX_HANDLE) : NULL;
    if (__builtin_expect(h != NULL, 1)) {
        uint64_t entry = __atomic_load_n(&h->u.ctx.entry, __ATOMIC_RELAXED);
        if (cuctx__peek_valid(h, ctx.id, KIND_CTX_HANDLE)) {
            CUresult rc = cuctx__entry_hold(entry, fn, out);
            /* held: the entry's fields stay its own; its owning handle only
             * for an owned context, not for primary or borrowed handles */
            if (rc == CUDA_SUCCESS && out->slot
                && __atomic_load_n(&out->slot->u.entry.owner_handle, __ATOMIC_RELAXED) == ctx.id) {
                cuctx__me.entry.last.handle = ctx.id;
                cuctx__me.entry.last.entry = entry;
                cuctx__me.entry.last.slot = out->slot;
                cuctx__me.entry.last.raw = out->raw;
            }
            return rc;
        }
    }
    return cuctx__ctx_hold_slow(ctx, fn, out);
}
/* Whether an entry is live and the registry alone decides its life (an
 * owned context's), seen without holding it: for the accessors, which take
 * the holding path otherwise - ended, closing, or a context others can end
 * (by_id: only a hold, which asks the driver, can tell). by_id is fixed for
 * an entry's life and read after its word matched: a value read from a
 * reuse of the slot means the entry ended meanwhile, which the caller
 * could not have told from its ending just after the check. entry is an id
 * the library made (a handle's or a child's field, read while that slot
 * was live). */
static inline __attribute__((always_inline)) int cuctx__entry_live_unheld(uint64_t entry)
{
    /* The slot of the owned context this thread used last is at hand: an
     * index's slot never changes, so no segment lookup (a load that waits
     * for the child's fields) is needed when the child is of that context. */
    struct cuctx_slot *e = __builtin_expect(entry == cuctx__me.entry.last.entry, 1)
                               ? cuctx__me.entry.last.slot
                               : cuctx__slot_own(cuctx__id_index(entry));
    return cuctx__word_matches_own(atomic_load_explicit(&e->word, memory_order_acquire), entry, KIND_ENTRY)
        && !__atomic_load_n(&e->u.entry.by_id, __ATOMIC_RELAXED);
}

/* An accessor's read of a context handle without holding its entry, as a
 * seqlock reader (registry.h, peek): the entry's address, and the handle's
 * device (the entry's), while handle and entry are live and the registry
 * alone decides the entry's life (see above). 0 otherwise - {0}, stale,
 * closing, reused, by_id - and the caller takes the holding path. */
struct cuctx_entry_fields {
    CUcontext raw;
    CUdevice dev;
};
static inline __attribute__((always_inline)) int cuctx__ctx_read(cuctx_ctx ctx, struct cuctx_entry_fields *f)
{
    struct cuctx_slot *h = cuctx__slot_find(cuctx__id_index(ctx.id));
    /* the id's kind need not be checked apart: see cuctx__child_value (tether.h) */
    if (!h || !cuctx__word_matches_own(atomic_load_explicit(&h->word, memory_order_acquire), ctx.id, KIND_CTX_HANDLE))
        return 0;
    uint64_t entry = __atomic_load_n(&h->u.ctx.entry, __ATOMIC_RELAXED);
    f->dev = __atomic_load_n(&h->u.ctx.dev, __ATOMIC_RELAXED);
    if (!cuctx__peek_valid_own(h, ctx.id, KIND_CTX_HANDLE))
        return 0;
    struct cuctx_slot *e = cuctx__peek_own(entry, KIND_ENTRY);
    if (!e)
        return 0;
    f->raw = __atomic_load_n(&e->u.entry.raw, __ATOMIC_RELAXED);
    unsigned char by_id = __atomic_load_n(&e->u.entry.by_id, __ATOMIC_RELAXED);
    return cuctx__peek_valid_own(e, entry, KIND_ENTRY) && !by_id;
}
/* The same for the owned context handle this thread used last
 * (cuctx__ctx_hold_last): its entry live means its handle is, and the
 * address is the thread's copy. The device is not kept there. */
static inline __attribute__((always_inline)) int cuctx__ctx_read_last(cuctx_ctx ctx, struct cuctx_entry_fields *f)
{
    if (ctx.id != cuctx__me.entry.last.handle || ctx.id == 0
        || !cuctx__word_matches_own(atomic_load_explicit(&cuctx__me.entry.last.slot->word, memory_order_acquire),
                                    cuctx__me.entry.last.entry, KIND_ENTRY))
        return 0;
    f->raw = cuctx__me.entry.last.raw;
    return 1;
}

/* Whether held entry g is a green context's over held entry p's context,
 * its primary (green.c): g's children but streams belong to p, and the
 * driver takes work of p's objects on g's streams as on p's own. While g
 * lives it holds a retain of the primary at that address, so p, held (its
 * id checked), is that primary. */
static inline int cuctx__entry_green_over(const struct cuctx_held *g, const struct cuctx_held *p)
{
    return g->slot && __atomic_load_n(&g->slot->u.entry.home, __ATOMIC_RELAXED) == p->raw;
}

/* The held entry of a raw context, registering it as borrowed when cuctx
 * has not met it (its id and device asked of the driver). */
CUresult cuctx__entry_hold_raw(CUcontext raw, const char *fn, struct cuctx_held *out);

/* A borrow's entry ends with the last handle or child that names it, so
 * that the entries of contexts borrowed and then ended by their owners do
 * not pile up until a sweep. Such an entry - registered by
 * cuctx__entry_hold_borrowed, and by_id - is counted: its names are the
 * borrowed and primary handles and the children made in it (each counted
 * while its maker holds the entry or the context lock), and the one that
 * takes the count to 0 ends it, unless a call in flight named it meanwhile
 * (cuctx__entry_unname). Entries met otherwise (as a thread's current
 * context) are not counted: they stay until their context ends. */
CUresult cuctx__entry_hold_borrowed(CUcontext raw, const char *fn, struct cuctx_held *out);
static inline __attribute__((always_inline)) int cuctx__entry_counted(const struct cuctx_slot *e)
{
    return __builtin_expect(e->u.entry.by_id, 0) && __atomic_load_n(&e->u.entry.counted, __ATOMIC_RELAXED);
}
/* A name more, of a held entry (or under the lock). */
static inline void cuctx__entry_named(struct cuctx_slot *e)
{
    __atomic_add_fetch(&e->u.entry.names, 1, __ATOMIC_RELAXED);
}
/* A name less, of a held entry: 1 when it was the last (then, holding
 * nothing, call cuctx__entry_unname). */
static inline int cuctx__entry_unnamed_last(struct cuctx_slot *e)
{
    return __atomic_sub_fetch(&e->u.entry.names, 1, __ATOMIC_ACQ_REL) == 0;
}
/* Ends a counted entry whose last name went (takes the lock). */
void cuctx__entry_unname(uint64_t id);
/* Under the lock: a handle's name less, of its entry if it lives and is
 * counted; the last ends it. */
void cuctx__entry_unname_locked(uint64_t id);
/* Under the lock: a new entry for raw, ending whatever entry the address had
 * (the driver gave it to a new context). */
CUresult cuctx__entry_new(CUcontext raw, unsigned long long ctx_id, CUdevice dev, enum cuctx_life life,
                          const char *fn, uint64_t *out);
/* Under the lock: ends a live entry now (close, drain, forget, free). */
void cuctx__entry_end_locked(uint64_t id);
/* Under the lock: ends the entries whose contexts the driver says are gone
 * (by id; those of primary and borrowed contexts are otherwise found dead
 * only when something holds them). */
void cuctx__sweep_locked(void);

/* cuctx's primary retains of one device, and its primary context's address
 * (the driver keeps one address per device for the life of the process),
 * under the lock. Counted per device, not per entry: a reset ends the entry
 * but keeps the retains (measured), so retains taken before a reset are
 * released through handles whose entry is dead, and the entry of the
 * context that lives now is found by the address. */
struct cuctx_primary {
    CUcontext raw;
    int retains;
    int greens;     /* live green contexts of cuctx's on the device, each holding a retain (green.c) */
};
/* dev's record, grown on demand when grow; NULL for a bad device or no memory. */
struct cuctx_primary *cuctx__primary_of(CUdevice dev, int grow);
/* Under the lock, around a release of a primary retain that may end the
 * context (cuctx's last, or a green context's destroy): no child call may
 * run across it. The close takes the live entry of dev's primary context -
 * found by its address, whatever cuctx knows it as - and drains it (NULL
 * when there is none; *id its id). The settle, after the release, ends it
 * when the driver says the context is gone (or has no ids, or has shut
 * down), and otherwise reopens it: the context lives on in someone else's
 * retain (the runtime's), and its children keep working. */
struct cuctx_slot *cuctx__primary_close_locked(CUdevice dev, uint64_t *id);
void cuctx__primary_settle_locked(struct cuctx_slot *e, uint64_t id);
/* Under the lock: the address of dev's primary context, NULL when it is
 * not active (no child of it can be under way). Known once cuctx retained
 * it (the driver keeps one address per device); else asked of the driver,
 * which takes a retain and its release - only while the context is active,
 * so neither makes nor ends one. */
CUresult cuctx__primary_address(CUdevice dev, const char *fn, CUcontext *raw);
/* Under the lock: an entry for home, the primary context of dev under a
 * green context, checked by id as a primary's is; one of its generation
 * met before (retained, borrowed) serves. */
CUresult cuctx__entry_home_locked(CUcontext home, CUdevice dev, const char *fn);
/* Under the lock: the live entry at raw if it names the context the driver
 * now gives ctx_id (without ids: whether it lives at all), else NULL. */
struct cuctx_slot *cuctx__entry_same(CUcontext raw, unsigned long long ctx_id);
/* Under the lock, or holding entry: a new context handle of life naming
 * entry, in *out (the caller claimed it). An owned or green context's entry
 * names its one handle; a borrow's counted entry gets a name more. */
CUresult cuctx__handle_new(cuctx_ctx *out, uint64_t entry, enum cuctx_life life, CUdevice dev, const char *fn,
                           const struct cuctx_site *site);
/* Ends an entry that was closed by its caller (without the lock). */
void cuctx__entry_finish(struct cuctx_slot *s, uint64_t id);

#endif
