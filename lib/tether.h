/* SPDX-License-Identifier: MIT */
/* tether.h - the one mechanism every child kind uses (tether.c): a child
 * is created in its context, tethered to the context's entry, and
 * destroyed only while that entry lives. The create and destroy are inline
 * here, so that each kind's create and destroy are one function with its
 * driver call in it; the failures and skips are in tether.c. */
#ifndef CUCTX_TETHER_H
#define CUCTX_TETHER_H

#include "cuctx.h"
#include "claim.h"
#include "current.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "init.h"
#include "registry.h"

/* What is particular to a child kind: its driver destroy (its names are
 * in its line of CUCTX_CHILD_KINDS, ids.h). */
struct cuctx_child_kind {
    int destroy_needs_current;      /* the owner must be current for destroy */
    CUresult (*destroy)(uint64_t raw);
    /* A kind whose destroy needs more than the driver value (its slot's
     * fields or aux record): called in place of destroy, with the slot
     * closed and drained, and for a tethered kind its owner held (and
     * current where destroy_needs_current). */
    CUresult (*destroy_slot)(struct cuctx_slot *s, const char *fn);
};
#define CUCTX__KIND_DECL(K, name, field, display, tethered) extern const struct cuctx_child_kind cuctx__##name##_kind;
CUCTX_CHILD_KINDS(CUCTX__KIND_DECL)
#undef CUCTX__KIND_DECL

/* A kind's driver create, run with the owner current. */
typedef CUresult (*cuctx_make_fn)(void *arg, uint64_t *raw, size_t *size);
/* How a kind's file defines its make and its destroy: the inline create
 * and destroy below call them through a constant pointer, and
 * always_inline puts their driver call in place (the event pair: 322 -> 298
 * instructions in libcuctx, callgrind); an out-of-line copy stays for the
 * tables that name them. */
#define CUCTX__KIND_FN static inline __attribute__((always_inline))

/* What an adoption hands cuctx__child_create in place of a make: the
 * object made elsewhere; site->unowned says whether its destroy is cuctx's. */
struct cuctx_adopted {
    uint64_t raw;
    size_t size;
};

/* The out-of-line ends of the two below: failures, skips, waiting. */
CUresult cuctx__child_null(const char *fn);
CUresult cuctx__child_table_full(struct cuctx_held *o, const char *fn);
CUresult cuctx__child_bad_handle(uint64_t id, enum cuctx_kind kind, const char *fn);
CUresult cuctx__child_unclosed(uint64_t id, enum cuctx_kind kind, const char *fn);
CUresult cuctx__child_skip(struct cuctx_slot *s, _Atomic uint64_t *counter);
CUresult cuctx__child_unheld(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind);
CUresult cuctx__child_refused(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind);
CUresult cuctx__child_last_name(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind);
CUresult cuctx__child_untracked(struct cuctx_slot *s, enum cuctx_kind kind);

/* A call cancelled on the way (pthread_cancel acts at a driver call or a
 * wait, as a forced unwind, which runs the cleanups of frames built with
 * -fexceptions: configure.ac builds lib/ so) ends in cuctx__unwound
 * (tether.c): the thread lets go of what it holds and pops the context its
 * switch pushed, so that its own cleanup handlers find nothing held and its
 * context as it was; a child's slot is not lost or left closing for good.
 * A destroy's slot, its driver destroy called (called: with what outcome
 * nobody knows), is freed; not yet called, it is reopened (the object
 * lives, its copies still name it); a create's goes back unused. Every
 * normal exit disarms it first, so that the compiler drops the cleanup
 * there: the normal path pays nothing. */
struct cuctx_unwind {
    int armed;
    int called;
    struct cuctx_slot *slot;    /* a child create's or destroy's, else NULL */
    struct cuctx_switch *sw;    /* the call's switch to its context, else NULL */
};
void cuctx__unwound(struct cuctx_slot *s, int called, CUcontext pushed);
static inline __attribute__((always_inline)) void cuctx__unwind(struct cuctx_unwind *u)
{
    /* fields passed, not u: nothing of it need be kept in memory for this */
    if (__builtin_expect(u->armed, 0))
        cuctx__unwound(u->slot, u->called, u->sw ? u->sw->raw : NULL);
}
#define CUCTX__UNWIND __attribute__((cleanup(cuctx__unwind)))
/* The statement after it, a driver call made while holding (with the
 * switch sw, or NULL), is so covered; it must not leave by return, break
 * or goto. */
#define CUCTX__UNWOUND_LETS_GO(sw)                                                                     \
    for (struct cuctx_unwind cuctx__unwind_ CUCTX__UNWIND = {1, 0, NULL, (sw)}; cuctx__unwind_.armed; \
         cuctx__unwind_.armed = 0)

/* The untethered kinds' create and destroy (ids.h): the same handle, made
 * with no context held or switched to, its entry 0 - "no context" - and
 * destroyed by the driver whenever its handle is. In a forked child its
 * entry is set to one that never lives (entry.c), so its destroy takes the
 * tethered path and is skipped, as every object of the parent's is. */
CUresult cuctx__loose_create(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make, void *arg,
                             const struct cuctx_site *site);

/* The end of every create, tethered or not (entry 0): the object's fields
 * stored in its slot, then the slot published as *out. The fields known
 * before the driver's create (entry, site) may be stored before it, by
 * cuctx__child_fields, and the rest then by cuctx__child_publish_made: an
 * unpublished slot's fields are read by nobody but peekers with stale
 * ids, which find its word moved on. */
static inline __attribute__((always_inline)) void cuctx__child_fields(struct cuctx_slot *s, uint64_t entry,
                                                                      const struct cuctx_site *site)
{
    /* atomic: peekers with stale ids may read the reused slot (cuctx__slot_alloc) */
    __atomic_store_n(&s->u.child.entry, entry, __ATOMIC_RELAXED);
    cuctx__site_store(&s->u.child.site, site);
}
static inline __attribute__((always_inline)) void cuctx__child_publish_made(uint64_t *out, struct cuctx_slot *s,
                                                                           enum cuctx_kind kind, uint64_t raw,
                                                                           size_t size)
{
    __atomic_store_n(&s->u.child.raw, raw, __ATOMIC_RELAXED);
    __atomic_store_n(&s->u.child.size, size, __ATOMIC_RELAXED);
    *out = cuctx__slot_publish(s, kind);
}
static inline __attribute__((always_inline)) void
cuctx__child_publish(uint64_t *out, struct cuctx_slot *s, enum cuctx_kind kind, uint64_t entry, uint64_t raw,
                     size_t size, const struct cuctx_site *site)
{
    cuctx__child_fields(s, entry, site);
    cuctx__child_publish_made(out, s, kind, raw, size);
}

/* The end of every destroy once the driver's destroy answered rc: the
 * handle's end, or the refusal (tether.c). */
static inline __attribute__((always_inline)) CUresult
cuctx__child_destroyed(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind)
{
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return cuctx__child_refused(s, rc, fn, kind);
    cuctx__slot_free(s);
    return CUDA_SUCCESS;
}

/* The untethered create with the slot's aux record filled before it is
 * published (aux NULL: zeroed). Inline, so that a kind's create has its
 * make inlined as a tethered kind's has; cuctx__loose_create is it out of
 * line. */
static inline __attribute__((always_inline)) CUresult
cuctx__loose_create_aux(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make, void *arg,
                        const struct cuctx_site *site, const struct cuctx_aux *aux)
{
    uint64_t raw = 0;
    size_t size = 0;
    CUresult rc = CUDA_SUCCESS;
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (__builtin_expect(!s, 0))
        return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
    /* what is known already goes in first: fewer values kept across make */
    struct cuctx_aux *x = cuctx__slot_aux(s);
    if (aux) {
        *x = *aux;
    } else {
        x->id[0] = x->id[1] = 0;
        x->ptr = NULL;
    }
    cuctx__child_fields(s, 0, site);
    if (__builtin_expect(!make, 0)) {
        raw = ((const struct cuctx_adopted *)arg)->raw;
        size = ((const struct cuctx_adopted *)arg)->size;
    } else {
        struct cuctx_unwind u CUCTX__UNWIND = {1, 0, s, NULL};     /* cancelled in make: s goes back */
        rc = make(arg, &raw, &size);
        u.armed = 0;
    }
    if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
        cuctx__slot_discard(s);
        return rc;
    }
    cuctx__child_publish_made(out, s, kind, raw, size);
    return CUDA_SUCCESS;
}

/* An untethered child's destroy, its slot closed and drained: k's. */
static inline __attribute__((always_inline)) CUresult
cuctx__loose_destroy(struct cuctx_slot *s, const char *fn, enum cuctx_kind kind, const struct cuctx_child_kind *k)
{
    return cuctx__child_destroyed(s, k->destroy_slot ? k->destroy_slot(s, fn) : k->destroy(s->u.child.raw), fn, kind);
}

/* The holds a create has beside `in` let go: `to` when it is another
 * entry, and a pair's second. */
static inline __attribute__((always_inline)) void
cuctx__child_let_go(struct cuctx_held *in, struct cuctx_held *to, struct cuctx_held *second)
{
    if (to != in)
        cuctx__entry_release(to);
    if (second)
        cuctx__entry_release(second);
}

/* The made object registered: published as *out, tethered to the held
 * entry `to` and, for a pair, to `second` too; a counted entry (a
 * borrow's) gets the child's name. */
static inline __attribute__((always_inline)) void
cuctx__child_register(uint64_t *out, struct cuctx_slot *s, enum cuctx_kind kind, uint64_t raw, size_t size,
                      const struct cuctx_site *site, struct cuctx_held *to, struct cuctx_held *second)
{
    if (second) {
        struct cuctx_aux *x = cuctx__slot_aux(s);
        __atomic_store_n(&x->id[0], second->id, __ATOMIC_RELAXED);     /* (claim reads it as a peeker) */
        x->id[1] = 0;
        x->ptr = NULL;
    }
    cuctx__child_publish(out, s, kind, to->id, raw, size, site);
    if (cuctx__entry_counted(to->slot))     /* a borrow's entry: the child names it (entry.h) */
        cuctx__entry_named(to->slot);
    if (second && second->slot && cuctx__entry_counted(second->slot))
        cuctx__entry_named(second->slot);
}

/* The second half of every create: with the entry `in` held, runs make
 * with in's context current and registers the result tethered to the held
 * entry `to` - in itself but for a green context's children (green.c) -
 * and, for a pair (below), to the held entry `second` too (NULL for any
 * other kind: inlined, the code for it goes). All are let go. The object
 * is registered before the previous context is put back: a cancel in that
 * pop leaves it named by *out, not made and lost. */
static inline __attribute__((always_inline)) CUresult
cuctx__child_make(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make, void *arg,
                  const struct cuctx_site *site, struct cuctx_held *in, struct cuctx_held *to,
                  struct cuctx_held *second)
{
    struct cuctx_switch sw;     /* (switch_to clears it before its first call: a cancel finds it set) */
    uint64_t raw = 0;
    size_t size = 0;
    CUresult rc = CUDA_SUCCESS;
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (__builtin_expect(!s, 0)) {
        cuctx__child_let_go(in, to, second);
        return cuctx__child_table_full(in, fn);
    }
    if (__builtin_expect(!make, 0)) {
        raw = ((const struct cuctx_adopted *)arg)->raw;
        size = ((const struct cuctx_adopted *)arg)->size;
        cuctx__child_register(out, s, kind, raw, size, site, to, second);
    } else {
        struct cuctx_unwind u CUCTX__UNWIND = {1, 0, s, &sw};
        if ((rc = cuctx__switch_to(in->raw, fn, &sw)) == CUDA_SUCCESS) {
            rc = make(arg, &raw, &size);
            if (__builtin_expect(rc == CUDA_SUCCESS, 1)) {
                cuctx__child_register(out, s, kind, raw, size, site, to, second);
                u.slot = NULL;      /* (*out's now) */
            }
            cuctx__switch_back(&sw, fn);
        }
        u.armed = 0;
    }
    if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
        cuctx__slot_discard(s);
        cuctx__child_let_go(in, to, second);
        cuctx__entry_release(in);
        return rc;
    }
    cuctx__child_let_go(in, to, second);
    cuctx__entry_release(in);
    return CUDA_SUCCESS;
}

/* A create in a green context, its entry held (o), out of line (green.c):
 * refused while it is being destroyed; a stream is tethered to it, any
 * other child to the primary context underneath. */
CUresult cuctx__child_create_green(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make,
                                   void *arg, const struct cuctx_site *site, struct cuctx_held *o);

/* ---- pairs: a child tethered to two contexts (ids.h: tethered 2) -----
 * Peer access is state of a pair of contexts and dies with either. Its
 * slot names the first context's entry where every child's does
 * (u.child.entry: the context its driver calls run in) and the second's
 * in its aux record (id[0]). Its create and destroy hold both entries, the
 * second beside the first (cuctx__entry_hold_beside: a close that may be
 * abandoned is waited out with neither held, so two such calls never wait
 * on each other), and its destroy reaches the driver only while both live;
 * once either has ended it is skipped as any child's after its context.
 * A borrow's entry is named by it as by any child, each of the two.
 *
 * cuctx__ctx_hold2 holds the entries of two context handles ({0}: the
 * current context), b's beside a's; on failure neither is held. The pair
 * is made by cuctx__child_make(out, kind, fn, make, arg, site, a, a, b),
 * with a current, as any child. */
CUresult cuctx__ctx_hold2(cuctx_ctx a, cuctx_ctx b, const char *fn, struct cuctx_held *ha, struct cuctx_held *hb);
/* The end of a pair's destroy (cuctx__child_destroy), its slot closed and
 * drained: k's destroy with the first context current, or the skip. */
CUresult cuctx__pair_destroy(struct cuctx_slot *s, const char *fn, enum cuctx_kind kind,
                             const struct cuctx_child_kind *k);

/* Creates a child: claims *out (claim.h: not while it holds a live
 * object), resolves the owner, runs make with it current, and registers
 * the result tethered to the owner's generation. make NULL is an adoption:
 * arg is a struct cuctx_adopted, taken as made, with no driver call and no
 * switch. Inline, so that each kind's create is one function with its
 * driver call in it. */
static inline __attribute__((always_inline)) CUresult
cuctx__child_create(uint64_t *out, enum cuctx_kind kind, cuctx_ctx ctx, const char *fn, cuctx_make_fn make,
                    void *arg, const struct cuctx_site *site)
{
    struct cuctx_held o;
    if (__builtin_expect(!out, 0))
        return cuctx__child_null(fn);
    CUresult rc = cuctx__claim(out, kind, fn);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if (!cuctx__kind_tethered(kind))
        return cuctx__loose_create(out, kind, fn, make, arg, site);
    rc = cuctx__ctx_hold(ctx, fn, &o);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return rc;
    /* (the held entry's line, which the hold has just read) */
    if (__builtin_expect(__atomic_load_n(&o.slot->u.entry.home, __ATOMIC_RELAXED) != NULL, 0))
        return cuctx__child_create_green(out, kind, fn, make, arg, site, &o);
    return cuctx__child_make(out, kind, fn, make, arg, site, &o, &o, NULL);
}

/* The end of a child's destroy, its context's entry held (o), under the
 * guard u: the driver's destroy, then the handle's end. counted: the entry
 * is a borrow's (entry.h), whose name the child gives back while it holds
 * it, ending it if it was the last; a constant wherever this is inlined. */
static inline __attribute__((always_inline)) CUresult
cuctx__child_destroy_held(struct cuctx_slot *s, struct cuctx_held *o, struct cuctx_unwind *u, const char *fn,
                          enum cuctx_kind kind, const struct cuctx_child_kind *k, int counted)
{
    CUresult rc = CUDA_SUCCESS;
    if (k->destroy_needs_current)
        rc = cuctx__switch_to(o->raw, fn, u->sw);
    if (__builtin_expect(rc == CUDA_SUCCESS, 1)) {
        u->called = 1;
        rc = k->destroy_slot ? k->destroy_slot(s, fn) : k->destroy(s->u.child.raw);
        if (k->destroy_needs_current)
            cuctx__switch_back(u->sw, fn);
    }
    int last = counted && cuctx__entry_unnamed_last(o->slot);
    cuctx__entry_release(o);
    u->armed = 0;
    if (__builtin_expect(last, 0))
        return cuctx__child_last_name(s, rc, fn, kind);
    return cuctx__child_destroyed(s, rc, fn, kind);
}
/* The same out of line, for a child of a borrow's entry. */
CUresult cuctx__child_destroy_counted(struct cuctx_slot *s, struct cuctx_held *o, const char *fn, enum cuctx_kind kind,
                                      const struct cuctx_child_kind *k);

/* Destroys a child: the driver is called only while the owner lives.
 * Inline for the kind k (its destroy is called directly); the skips and
 * failures are in tether.c. The id's value, mine (not 0), taken from the
 * handle variable by the caller, which cleared it (cuctx__child_destroy). */
static inline __attribute__((always_inline)) CUresult
cuctx__child_destroy_id(uint64_t mine, enum cuctx_kind kind, const char *fn, const struct cuctx_child_kind *k)
{
    struct cuctx_held o;
    uint64_t pins;
    struct cuctx_slot *s = cuctx__close_pinned(mine, kind, &pins);
    if (__builtin_expect(!s, 0)) {
        /* Only here is cuctx started, if it was not: a slot that closed
         * was published by a create, which started it, and cuctx__init_ok
         * is never cleared once set; the close's CAS orders this thread
         * after that create, and so after the driver's loading. */
        CUCTX_INIT_OR_RETURN(fn);
        return cuctx__child_unclosed(mine, kind, fn);
    }
    struct cuctx_switch sw = {0};
    struct cuctx_unwind u CUCTX__UNWIND = {1, 0, s, &sw};
    if (__builtin_expect(pins != 0, 0))     /* pins taken before the close, or holds (registry.h) */
        cuctx__drain_slow(s);
    if (__builtin_expect(s->u.child.site.unowned, 0)) {    /* adopted to track only: not cuctx's to destroy */
        u.armed = 0;
        return cuctx__child_untracked(s, kind);
    }
    if (__builtin_expect(atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed), 0)) {
        u.armed = 0;
        return cuctx__child_skip(s, &cuctx__shutdown_skips);
    }
    if (!cuctx__kind_tethered(kind) && s->u.child.entry == 0) {     /* in no context: nothing to hold */
        u.called = 1;
        CUresult rc = cuctx__loose_destroy(s, fn, kind, k);
        u.armed = 0;
        return rc;
    }
    if (cuctx__kind_paired(kind)) {     /* two contexts to hold (below) */
        u.armed = 0;
        return cuctx__pair_destroy(s, fn, kind, k);
    }
    CUresult rc = cuctx__entry_hold_quiet(s->u.child.entry, &o);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
        u.armed = 0;
        return cuctx__child_unheld(s, rc, fn, kind);
    }
    /* (known not where the hold took its fast path: that costs nothing) */
    if (__builtin_expect(cuctx__entry_counted(o.slot), 0)) {
        u.armed = 0;
        return cuctx__child_destroy_counted(s, &o, fn, kind, k);
    }
    return cuctx__child_destroy_held(s, &o, &u, fn, kind, k, 0);
}
static inline __attribute__((always_inline)) CUresult
cuctx__child_destroy(uint64_t *id, enum cuctx_kind kind, const char *fn, const struct cuctx_child_kind *k)
{
    if (__builtin_expect(!id, 0))
        return cuctx__child_null(fn);
    if (*id == 0)
        return CUDA_SUCCESS;
    uint64_t mine = *id;
    *id = 0;    /* whatever happens, the variable names nothing afterwards */
    return cuctx__child_destroy_id(mine, kind, fn, k);
}

/* A child pinned for use, or held (cuctx__child_use_as; hazard: then its
 * hazard slot, or CUCTX_NO_HAZARD where the hold pinned), with its
 * context's entry held too (none for a child of an untethered kind:
 * entry.slot NULL, entry.id 0). */
struct cuctx_use {
    struct cuctx_slot *obj;
    unsigned hazard;
    struct cuctx_held entry;
    uint64_t raw;
};
CUresult cuctx__child_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u);
void cuctx__child_done(struct cuctx_use *u);
/* The same two inline, for a call's hot path (cuctx__stream_take); the
 * failure's end out of line (tether.c). hold: the child is held rather
 * than pinned (cuctx__hold_child: no locked instruction, but the child's
 * destroy then pays a membarrier), for the stream-ordered allocation; its
 * end is then cuctx__child_done_as with hold too. */
CUresult cuctx__child_unused(struct cuctx_use *u, CUresult rc);
CUresult cuctx__child_unused_held(struct cuctx_use *u, CUresult rc);
static inline __attribute__((always_inline)) CUresult cuctx__child_use_as(uint64_t id, enum cuctx_kind kind, int hold,
                                                                          const char *fn, struct cuctx_use *u)
{
    u->obj = NULL;
    u->entry.slot = NULL;
    CUCTX_INIT_OR_RETURN(fn);
    u->obj = hold ? cuctx__hold_child(id, kind, &u->hazard) : cuctx__pin(id, kind);
    if (__builtin_expect(!u->obj, 0))
        return cuctx__child_bad_handle(id, kind, fn);
    uint64_t entry = u->obj->u.child.entry;
    if (entry == 0 && !cuctx__kind_tethered(kind)) {   /* in no context */
        u->entry.id = 0;
        u->raw = u->obj->u.child.raw;
        return CUDA_SUCCESS;
    }
    CUresult rc = cuctx__entry_hold(entry, fn, &u->entry);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return hold ? cuctx__child_unused_held(u, rc) : cuctx__child_unused(u, rc);
    u->raw = u->obj->u.child.raw;
    return CUDA_SUCCESS;
}
static inline __attribute__((always_inline)) CUresult cuctx__child_use_inline(uint64_t id, enum cuctx_kind kind,
                                                                              const char *fn, struct cuctx_use *u)
{
    return cuctx__child_use_as(id, kind, 0, fn, u);
}
/* (reports wait while anything is held: delivered once, after both) */
static inline __attribute__((always_inline)) void cuctx__child_done_as(struct cuctx_use *u, int hold)
{
    if (u->entry.slot)
        cuctx__unhold(u->entry.slot, u->entry.hazard);
    u->entry.slot = NULL;
    if (u->obj) {
        if (hold)
            cuctx__unhold_child(u->obj, u->hazard);
        else
            cuctx__unpin(u->obj);
    }
    u->obj = NULL;
    cuctx__deliver_reports();
}
static inline __attribute__((always_inline)) void cuctx__child_done_inline(struct cuctx_use *u)
{
    cuctx__child_done_as(u, 0);
}
/* The steps of the fast holds below, each as cuctx__hold_child and
 * cuctx__hold_slot hold - the id stored in hazard slot i, the holder's
 * fence, the word read - with the thread's record r and cuctx__asymmetric
 * read once by the caller. 1: held; 0: slot i cleared again. A child
 * counts only live, not closing, and held before (its CUCTX_W_HELD bit,
 * as cuctx__hold_child requires it): one compare; an entry only live and
 * not by_id (cuctx__entry_hold_as's fast path). */
static inline __attribute__((always_inline)) int cuctx__hold_fast_child_at(struct cuctx_hazard_rec *r, unsigned i,
                                                                           struct cuctx_slot *s, uint64_t id,
                                                                           enum cuctx_kind kind, int asymmetric)
{
    atomic_store_explicit(&r->ids[i], id, memory_order_relaxed);
    cuctx__holder_fence(asymmetric);
    if (__builtin_expect((atomic_load_explicit(&s->word, memory_order_acquire) & ~CUCTX_W_PINS)
                         == ((id << CUCTX_W_GEN_SHIFT) | (uint64_t)kind << CUCTX_W_KIND_SHIFT | CUCTX_W_HELD), 1))
        return 1;
    atomic_store_explicit(&r->ids[i], 0, memory_order_release);
    return 0;
}
static inline __attribute__((always_inline)) struct cuctx_slot *
cuctx__hold_fast_entry_at(struct cuctx_hazard_rec *r, unsigned i, uint64_t entry, int asymmetric)
{
    struct cuctx_slot *e = cuctx__slot_own(cuctx__id_index(entry));
    atomic_store_explicit(&r->ids[i], entry, memory_order_relaxed);
    cuctx__holder_fence(asymmetric);
    if (__builtin_expect(cuctx__word_matches_own(atomic_load_explicit(&e->word, memory_order_acquire), entry,
                                                 KIND_ENTRY) && !e->u.entry.by_id, 1))
        return e;
    atomic_store_explicit(&r->ids[i], 0, memory_order_release);
    return NULL;
}
/* The hot path of the above with hold, for a child of a tethered kind (the
 * stream of a stream-ordered allocation or free): the child and its
 * context's entry held through the thread's hazard slots 0 and 1 (the
 * steps above), with the thread's record, its used bits and
 * cuctx__asymmetric read once for both, and one store of the used bits.
 * 1: both held, u's fields set but hazard and entry.hazard; their end is
 * cuctx__child_done_fast(2). 0: nothing held, and the caller takes the
 * full path, cuctx__child_use_as with hold (its generation's first hold,
 * an entry to check or wait for, hazard slot 0 or 1 in use, no record
 * yet, an error). kind_known: id was accepted as one of kind before, or
 * has generation 0 (a default stream by name, {0}), which no slot's word
 * has: its kind need not be tested apart, the word's compare does it. */
static inline __attribute__((always_inline)) int cuctx__child_hold_fast(uint64_t id, enum cuctx_kind kind,
                                                                        int kind_known, struct cuctx_use *u)
{
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    unsigned used = cuctx__me.registry.used;
    if (__builtin_expect(!s || (!kind_known && cuctx__id_kind(id) != kind) || !r || (used & 3u), 0))
        return 0;
    int asymmetric = cuctx__asymmetric;     /* (settled: the thread has its record) */
    if (__builtin_expect(cuctx__hold_fast_child_at(r, 0, s, id, kind, asymmetric), 1)) {
        uint64_t entry = s->u.child.entry;     /* (fixed while the child is held) */
        struct cuctx_slot *e = cuctx__hold_fast_entry_at(r, 1, entry, asymmetric);
        if (__builtin_expect(e != NULL, 1)) {
            cuctx__me.registry.used = used | 3u;
            u->obj = s;
            u->entry.slot = e;
            u->entry.id = entry;
            u->entry.raw = e->u.entry.raw;
            u->raw = s->u.child.raw;
            return 1;
        }
        atomic_store_explicit(&r->ids[0], 0, memory_order_release);
    }
    return 0;
}
/* The same for two children of one context that a call uses together (a
 * graph exec and the stream it is launched on): a in hazard slot 0, b in
 * 1, and the entry both name in 2, by the same steps. 1: all three held,
 * a's obj, entry.slot, entry.id and raw set, and b's obj and raw (the
 * caller needs no context current); their end is cuctx__child_done_fast(3).
 * 0: nothing held, for the full path: either
 * generation not yet held, ids of other kinds or stale (a default stream
 * by name has generation 0, which no slot's word has), children of
 * different entries (a green context's stream), hazard slots 0 to 2 in
 * use, and what the one child's path leaves to its full path. */
static inline __attribute__((always_inline)) int cuctx__child_hold_fast2(uint64_t a_id, enum cuctx_kind a_kind,
                                                                         uint64_t b_id, enum cuctx_kind b_kind,
                                                                         struct cuctx_use *a, struct cuctx_use *b)
{
    struct cuctx_slot *sa = cuctx__slot_find(cuctx__id_index(a_id));
    struct cuctx_slot *sb = cuctx__slot_find(cuctx__id_index(b_id));
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    unsigned used = cuctx__me.registry.used;
    if (__builtin_expect(!sa || !sb || cuctx__id_kind(a_id) != a_kind || cuctx__id_kind(b_id) != b_kind || !r
                         || (used & 7u), 0))
        return 0;
    int asymmetric = cuctx__asymmetric;     /* (settled: the thread has its record) */
    if (__builtin_expect(!cuctx__hold_fast_child_at(r, 0, sa, a_id, a_kind, asymmetric), 0))
        return 0;
    if (__builtin_expect(cuctx__hold_fast_child_at(r, 1, sb, b_id, b_kind, asymmetric), 1)) {
        uint64_t entry = sa->u.child.entry;    /* (fixed while the children are held) */
        struct cuctx_slot *e;
        if (__builtin_expect(sb->u.child.entry == entry && (e = cuctx__hold_fast_entry_at(r, 2, entry, asymmetric)),
                             1)) {
            cuctx__me.registry.used = used | 7u;
            a->obj = sa;
            a->entry.slot = e;
            a->entry.id = entry;
            a->raw = sa->u.child.raw;
            b->obj = sb;
            b->raw = sb->u.child.raw;
            return 1;
        }
        atomic_store_explicit(&r->ids[1], 0, memory_order_release);
    }
    atomic_store_explicit(&r->ids[0], 0, memory_order_release);
    return 0;
}
/* The end of the holds of the above: hazard slots 0 to n - 1 cleared, and
 * the reports delivered. */
static inline __attribute__((always_inline)) void cuctx__child_done_fast(unsigned n)
{
    struct cuctx_hazard_rec *r = cuctx__me.registry.rec;
    for (unsigned i = n; i-- > 0;)
        atomic_store_explicit(&r->ids[i], 0, memory_order_release);
    cuctx__me.registry.used &= ~((1u << n) - 1);
    cuctx__deliver_reports();
}
/* A pair pinned for use, both its contexts held (the second in *second). */
CUresult cuctx__pair_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u,
                         struct cuctx_held *second);
void cuctx__pair_done(struct cuctx_use *u, struct cuctx_held *second);
/* Two children for one call, pinned in that order. When
 * they share a context its entry is held once (b's hold is a's); else
 * both are held, and a close of b's entry that may yet be abandoned (a
 * primary context living on in another retain) is waited out with neither
 * held, then both are taken again: a thread never waits while it holds an
 * entry, so two such calls never wait on each other. */
CUresult cuctx__child_use2(uint64_t a_id, enum cuctx_kind a_kind, uint64_t b_id, enum cuctx_kind b_kind,
                           const char *fn, struct cuctx_use *a, struct cuctx_use *b);
/* The same for a call whose first part is an entry already held, a (the
 * current context's, for a default stream by name): b pinned and its entry
 * held beside a's, by the same wait. On failure b is done and a let go. */
CUresult cuctx__child_use_beside(struct cuctx_held *a, uint64_t b_id, enum cuctx_kind b_kind, const char *fn,
                                 struct cuctx_use *b);
void cuctx__child_done2(struct cuctx_use *a, struct cuctx_use *b);

/* An accessor's read (the _raw, _ptr and _size functions): the driver
 * value and size of a live child, or 0 with the last error set. The child
 * is read without a pin or a hold, as a seqlock reader (registry.h, peek):
 * its value counts only if its slot still has the id after the read, so a
 * slot reused meanwhile never yields another object's value; and only if
 * its owned context's entry is live (cuctx__entry_live_unheld, entry.h). Anything else -
 * stale, being destroyed, its context ended or one others can end - takes
 * the checked path (tether.c), which pins, holds, and says why. */
enum cuctx_field { FIELD_RAW, FIELD_SIZE };
uint64_t cuctx__child_value_slow(uint64_t id, enum cuctx_kind kind, const char *fn, enum cuctx_field field);
static inline __attribute__((always_inline)) uint64_t cuctx__child_value(uint64_t id, enum cuctx_kind kind,
                                                                        const char *fn, enum cuctx_field field)
{
    /* The id's kind is not checked apart: the word holds the kind, and a
     * live slot of kind with the id's index and generation is only ever
     * named by an id of that kind. */
    struct cuctx_slot *s = cuctx__slot_find(cuctx__id_index(id));
    if (__builtin_expect(s && cuctx__word_matches_own(atomic_load_explicit(&s->word, memory_order_acquire), id, kind),
                         1)) {
        uint64_t entry = __atomic_load_n(&s->u.child.entry, __ATOMIC_RELAXED);
        uint64_t v = field == FIELD_RAW ? __atomic_load_n(&s->u.child.raw, __ATOMIC_RELAXED)
                                        : __atomic_load_n(&s->u.child.size, __ATOMIC_RELAXED);
        if (__builtin_expect(cuctx__peek_valid_own(s, id, kind)
                             && ((!cuctx__kind_tethered(kind) && entry == 0) || cuctx__entry_live_unheld(entry)), 1))
            return v;
    }
    return cuctx__child_value_slow(id, kind, fn, field);
}

/* Adopts an object made elsewhere (the _adopt functions): a create whose
 * make is taking raw; a NULL one is refused. owned: its destroy is cuctx's,
 * else the handle only tracks it. In each kind's file, as its creates are. */
static inline CUresult cuctx__child_adopt(uint64_t *out, enum cuctx_kind kind, cuctx_ctx ctx, const char *fn,
                                          uint64_t raw, size_t size, int owned, const struct cuctx_site *where)
{
    struct cuctx_site site = {.file = where->file, .func = where->func, .line = where->line, .unowned = !owned};
    struct cuctx_adopted a = {raw, size};
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(out, kind, fn)) != CUDA_SUCCESS)
        return rc;
    if (!raw)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the %s to adopt is NULL", fn, cuctx__kind_name(kind));
    return cuctx__child_create(out, kind, ctx, fn, NULL, &a, &site);
}

/* The default streams. {0} names the driver's NULL stream, and
 * CUCTX_STREAM_LEGACY and CUCTX_STREAM_PER_THREAD (cuctx.h) name
 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: stream ids of generation 0,
 * which no slot ever has, so no stream handle is ever one of them. Each is
 * the default stream of whichever context is current at the call. */
_Static_assert(CUCTX__STREAM_LEGACY_ID == ((uint64_t)KIND_STREAM << CUCTX_ID_KIND_SHIFT | (uint64_t)0 << CUCTX_ID_INDEX_SHIFT),
               "CUCTX_STREAM_LEGACY is stream index 0, generation 0");
_Static_assert(CUCTX__STREAM_PER_THREAD_ID == ((uint64_t)KIND_STREAM << CUCTX_ID_KIND_SHIFT | (uint64_t)1 << CUCTX_ID_INDEX_SHIFT),
               "CUCTX_STREAM_PER_THREAD is stream index 1, generation 0");
/* Whether id names a default stream by name, and its driver value. */
static inline int cuctx__stream_named(uint64_t id, CUstream *raw)
{
    if (__builtin_expect(id != CUCTX__STREAM_LEGACY_ID && id != CUCTX__STREAM_PER_THREAD_ID, 1))
        return 0;
    *raw = id == CUCTX__STREAM_LEGACY_ID ? CU_STREAM_LEGACY : CU_STREAM_PER_THREAD;
    return 1;
}
/* The same with {0}, the NULL stream, counted in. */
static inline int cuctx__stream_default(uint64_t id, CUstream *raw)
{
    if (id == 0) {
        *raw = NULL;
        return 1;
    }
    return cuctx__stream_named(id, raw);
}

/* A stream argument for a call of its own: a handle's stream, pinned with
 * its context held (use), or a default stream by name - {0} too where
 * null_ok - with the calling thread's current context held (current), as
 * a create given {0} holds it: the default streams are the current
 * context's. stream.c. */
struct cuctx_stream_arg {
    struct cuctx_use use;
    struct cuctx_held current;
    CUstream raw;
};
CUresult cuctx__stream_take_current(const char *fn, struct cuctx_stream_arg *a);
static inline __attribute__((always_inline)) CUresult cuctx__stream_take(cuctx_stream s, int null_ok, const char *fn,
                                                                         struct cuctx_stream_arg *a)
{
    a->use.obj = NULL;
    a->use.entry.slot = NULL;
    a->current.slot = NULL;
    if (__builtin_expect(!(null_ok ? cuctx__stream_default(s.id, &a->raw) : cuctx__stream_named(s.id, &a->raw)), 1)) {
        CUresult rc = cuctx__child_use_inline(s.id, KIND_STREAM, fn, &a->use);
        a->raw = (CUstream)(uintptr_t)a->use.raw;
        return rc;
    }
    return cuctx__stream_take_current(fn, a);   /* a default stream: the current context's */
}
static inline __attribute__((always_inline)) void cuctx__stream_done(struct cuctx_stream_arg *a)
{
    if (a->current.slot)
        cuctx__unhold(a->current.slot, a->current.hazard);
    a->current.slot = NULL;
    cuctx__child_done_inline(&a->use);
}
/* Whether the stream of id was destroyed, with stream-ordered memory made
 * on it, while it captured or after a failed wait, so that its work was
 * not waited for (tether.c). */
int cuctx__stream_unwaited(uint64_t id);
/* Its work is known done (a synchronize of its context returned): it is
 * forgotten, and its memory's later frees need no wait. */
void cuctx__stream_waited(uint64_t id);
/* The wait before the destroy of a stream that carried stream-ordered
 * memory (its slot s, closed and drained: stream.c, green.c): its
 * cuStreamSynchronize. CUDA_SUCCESS once waited for, or, not waited for -
 * capturing, or the wait refused (reported to the error handler) - once
 * remembered as such (cuctx__stream_unwaited): either way the destroy goes
 * on. CUDA_ERROR_OUT_OF_MEMORY where it could not be remembered. */
CUresult cuctx__stream_wait_carried(struct cuctx_slot *s, const char *fn);
/* A stream slot's size holds its flags as cuctx made it: known, and
 * whether CU_STREAM_NON_BLOCKING (an adopted stream's are not known); and
 * whether stream-ordered memory was allocated on it (mem_async.c), set
 * once, by the allocations, which hold the stream (its destroy reads it
 * once the holds drained). */
#define CUCTX__STREAM_FLAGS_KNOWN (UINT64_C(1) << 32)
#define CUCTX__STREAM_CARRIED (UINT64_C(1) << 33)
static inline void cuctx__stream_carries(struct cuctx_slot *s)
{
    if (!(__atomic_load_n(&s->u.child.size, __ATOMIC_RELAXED) & CUCTX__STREAM_CARRIED))
        __atomic_fetch_or(&s->u.child.size, CUCTX__STREAM_CARRIED, __ATOMIC_RELAXED);
}

/* Destroys a capture refused - the driver answered 900 or 901 and no other
 * order serves: a free on a stream whose own capture was invalidated, a
 * wait for a stream that cannot be made while a stream of its context
 * captures - kept, their handles ended, to be made again once a capture
 * ends (cuctx_capture_end), a stream is destroyed, or cuctx_stats_get
 * sweeps (tether.c). retry makes one again: CUDA_SUCCESS, done; refused by
 * a capture again, kept; anything else, its own to report, dropped. What
 * the record holds (three words and a pointer) is the kind's. A forked
 * child drops the parent's. */
struct cuctx_kept;
typedef CUresult cuctx_kept_fn(struct cuctx_kept *k, const char *fn);
struct cuctx_kept {
    cuctx_kept_fn *retry;
    struct cuctx_kept *next;
    uint64_t word[3];
    void *ptr;
};
/* Keeps one; 0 where there is no memory for it (then it is lost, as it
 * was refused). */
int cuctx__kept_add(cuctx_kept_fn *retry, const uint64_t word[3], void *ptr);
/* Makes the kept ones again, the calling thread holding nothing; quiet
 * (the thread's last error stays its call's). Costs one load while none is
 * kept. */
void cuctx__kept_retry_slow(const char *fn);
extern _Atomic unsigned cuctx__kept_count;
static inline void cuctx__kept_retry(const char *fn)
{
    if (__builtin_expect(atomic_load_explicit(&cuctx__kept_count, memory_order_relaxed) != 0, 0))
        cuctx__kept_retry_slow(fn);
}

#endif
