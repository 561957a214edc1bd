/* SPDX-License-Identifier: MIT */
/* tether.c - the one mechanism every child kind uses.
 *
 * A child records its owner's registry entry id (slot and generation) at
 * create. Every later driver call on the child holds that entry first
 * (cuctx__entry_hold); the hold fails once the context's destroy has begun
 * or its generation has ended - for a primary or borrowed context, also
 * when the driver's id shows it gone - and a context destroy waits for the
 * holds already taken. So:
 *   - a child destroy reaches the driver only while its context is alive,
 *     never concurrently with the context's destroy, and never for a new
 *     context that took a dead one's address (its entry id differs);
 *   - otherwise the driver already freed the child with its context: the
 *     handle is released, the skip counted, and the destroy succeeds.
 * A kind contributes only its driver calls (struct cuctx_child_kind).
 */
#include "config.h"

#include "tether.h"
#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>

CUresult cuctx__child_null(const char *fn)
{
    return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: the handle pointer is NULL", fn);
}

CUresult cuctx__child_table_full(struct cuctx_held *o, const char *fn)
{
    cuctx__entry_release(o);
    return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: cannot grow the handle table", fn);
}

CUresult cuctx__child_bad_handle(uint64_t id, enum cuctx_kind kind, const char *fn)
{
    const char *want = cuctx__kind_name(kind);
    CUstream named;
    if (cuctx__stream_named(id, &named))
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE,
                           "%s: %s names the default stream of whichever context is current, not a stream object",
                           fn, named == CU_STREAM_LEGACY ? "CUCTX_STREAM_LEGACY" : "CUCTX_STREAM_PER_THREAD");
    if (cuctx__id_kind(id) != kind)
        return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: handle %#llx is not a %s handle", fn,
                           (unsigned long long)id, want);
    return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "%s: %s handle %#llx is stale: destroyed already, or never valid",
                       fn, want, (unsigned long long)id);
}

/* A destroy whose handle names no live object to close: a default stream
 * by name has nothing to destroy (so CUCTX_AUTO may hold one); anything
 * else is a bad handle. */
CUresult cuctx__child_unclosed(uint64_t id, enum cuctx_kind kind, const char *fn)
{
    CUstream named;
    return kind == KIND_STREAM && cuctx__stream_named(id, &named) ? CUDA_SUCCESS : cuctx__child_bad_handle(id, kind, fn);
}

/* A destroy that does not reach the driver: the handle is released and
 * the reason counted. */
CUresult cuctx__child_skip(struct cuctx_slot *s, _Atomic uint64_t *counter)
{
    cuctx__slot_free(s);
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
    return CUDA_SUCCESS;
}

/* A name of a borrow's entry given back by a child that does not hold it
 * (entry.h), under the lock; the last ends the entry. Nothing for an entry
 * that has ended or is not counted. */
static void give_back(uint64_t entry)
{
    if (!entry)
        return;
    struct cuctx_slot *e = cuctx__peek_own(entry, KIND_ENTRY);     /* (not held: read as a peeker) */
    int counted = e && __atomic_load_n(&e->u.entry.by_id, __ATOMIC_RELAXED)
               && __atomic_load_n(&e->u.entry.counted, __ATOMIC_RELAXED) && cuctx__peek_valid_own(e, entry, KIND_ENTRY);
    if (counted) {
        cuctx__ctx_lock();
        cuctx__entry_unname_locked(entry);
        cuctx__ctx_unlock();
    }
}

/* A pair's second entry (its aux record's), 0 for any other kind. */
static uint64_t second_entry(struct cuctx_slot *s, enum cuctx_kind kind)
{
    return cuctx__kind_paired(kind) ? __atomic_load_n(&cuctx__slot_aux(s)->id[0], __ATOMIC_RELAXED) : 0;
}

/* The owner could not be held: the driver has shut down, the context has
 * ended (the driver freed the child with it), or the check failed. A pair
 * gives its names back: the context that did not end may be a borrow's;
 * where the check failed, any child does: its context may live on, and
 * the handle that named it is gone (as after a refused destroy). */
CUresult cuctx__child_unheld(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind)
{
    uint64_t raw = s->u.child.raw;
    uint64_t first = s->u.child.entry, second = second_entry(s, kind);
    if (cuctx__driver_gone(rc))
        return cuctx__child_skip(s, &cuctx__shutdown_skips);
    if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
        cuctx__child_skip(s, &cuctx__stale_skips);
        if (second) {
            give_back(first);
            give_back(second);
        }
        cuctx__debug("%s: %s %#llx outlived its context; the driver freed it with the context, not called again",
                     fn, cuctx__kind_name(kind), (unsigned long long)raw);
        return CUDA_SUCCESS;
    }
    cuctx__slot_free(s);    /* cannot tell whether its context lives: the driver's error */
    atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
    give_back(first);
    give_back(second);      /* (0 but for a pair: nothing) */
    return rc;
}

/* The switch to the owner, or the driver's destroy, failed. */
CUresult cuctx__child_refused(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind)
{
    uint64_t raw = s->u.child.raw;
    if (cuctx__driver_gone(rc))
        return cuctx__child_skip(s, &cuctx__shutdown_skips);
    cuctx__slot_free(s);
    atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
    return cuctx__fail(rc, "%s: the driver refused to destroy %s %#llx: %s", fn, cuctx__kind_name(kind),
                       (unsigned long long)raw, cuctx_result_name(rc));
}

CUresult cuctx__loose_create(uint64_t *out, enum cuctx_kind kind, const char *fn, cuctx_make_fn make, void *arg,
                             const struct cuctx_site *site)
{
    return cuctx__loose_create_aux(out, kind, fn, make, arg, site, NULL);
}

/* A destroy that took the last name of a borrow's entry: the handle ends as
 * any other's, then the entry (entry.h). */
CUresult cuctx__child_last_name(struct cuctx_slot *s, CUresult rc, const char *fn, enum cuctx_kind kind)
{
    uint64_t entry = s->u.child.entry;
    rc = cuctx__child_destroyed(s, rc, fn, kind);
    cuctx__entry_unname(entry);
    return rc;
}

CUresult cuctx__child_destroy_counted(struct cuctx_slot *s, struct cuctx_held *o, const char *fn, enum cuctx_kind kind,
                                      const struct cuctx_child_kind *k)
{
    struct cuctx_switch sw = {0};
    struct cuctx_unwind u CUCTX__UNWIND = {1, 0, s, &sw};
    return cuctx__child_destroy_held(s, o, &u, fn, kind, k, 1);
}

/* A child adopted only to track (or a pair found made by someone else):
 * its handle ends, and its names of borrows' entries, which it does not
 * hold, under the lock. */
CUresult cuctx__child_untracked(struct cuctx_slot *s, enum cuctx_kind kind)
{
    uint64_t entry = s->u.child.entry, second = second_entry(s, kind);
    cuctx__slot_free(s);
    give_back(entry);
    give_back(second);
    return CUDA_SUCCESS;
}

void cuctx__unwound(struct cuctx_slot *s, int called, CUcontext pushed)
{
    CUcontext cur = NULL;
    if (pushed && DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur == pushed) {
        struct cuctx_switch sw = {1, pushed};   /* the switch's push is still in place */
        cuctx__switch_back(&sw, "cuctx");
    }
    cuctx__let_go_all();
    if (!s)
        return;
    if (cuctx__word_kind(atomic_load_explicit(&s->word, memory_order_acquire)) == KIND_NONE)
        cuctx__slot_discard(s);     /* a create's, never published */
    else if (called)
        cuctx__slot_free(s);
    else
        cuctx__reopen(s);
}

CUresult cuctx__child_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u)
{
    return cuctx__child_use_inline(id, kind, fn, u);
}

/* Its context could not be held: the pin goes too. */
CUresult cuctx__child_unused(struct cuctx_use *u, CUresult rc)
{
    cuctx__unpin(u->obj);
    u->obj = NULL;
    cuctx__deliver_reports();
    return rc;
}

/* The same for a child held (cuctx__child_use_as). */
CUresult cuctx__child_unused_held(struct cuctx_use *u, CUresult rc)
{
    cuctx__unhold_child(u->obj, u->hazard);
    u->obj = NULL;
    cuctx__deliver_reports();
    return rc;
}

void cuctx__child_done(struct cuctx_use *u)
{
    cuctx__child_done_inline(u);
}

CUresult cuctx__child_use_beside(struct cuctx_held *a, uint64_t b_id, enum cuctx_kind b_kind, const char *fn,
                                 struct cuctx_use *b)
{
    CUresult rc;
    b->entry.slot = NULL;
    b->entry.id = 0;
    if (!(b->obj = cuctx__pin(b_id, b_kind))) {
        cuctx__entry_release(a);
        return cuctx__child_bad_handle(b_id, b_kind, fn);
    }
    uint64_t eb = b->obj->u.child.entry;
    /* (b in no context: nothing to hold) */
    if (!(eb == 0 && !cuctx__kind_tethered(b_kind))
        && (rc = cuctx__entry_hold_beside(a, eb, fn, 0, &b->entry)) != CUDA_SUCCESS) {
        cuctx__child_done(b);
        return rc;
    }
    b->raw = b->obj->u.child.raw;
    return CUDA_SUCCESS;
}

CUresult cuctx__child_use2(uint64_t a_id, enum cuctx_kind a_kind, uint64_t b_id, enum cuctx_kind b_kind,
                           const char *fn, struct cuctx_use *a, struct cuctx_use *b)
{
    CUresult rc;
    b->obj = NULL;
    b->entry.slot = NULL;
    b->entry.id = 0;
    if ((rc = cuctx__child_use(a_id, a_kind, fn, a)) != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__child_use_beside(&a->entry, b_id, b_kind, fn, b)) != CUDA_SUCCESS)
        cuctx__child_done(a);
    return rc;
}

void cuctx__child_done2(struct cuctx_use *a, struct cuctx_use *b)
{
    cuctx__child_done(b);
    cuctx__child_done(a);
}


uint64_t cuctx__child_value_slow(uint64_t id, enum cuctx_kind kind, const char *fn, enum cuctx_field field)
{
    struct cuctx_use u;
    CUstream named;     /* cuctx_stream_raw of a default stream by name: no slot has it */
    if (kind == KIND_STREAM && cuctx__stream_named(id, &named))
        return (uint64_t)(uintptr_t)named;
    if (cuctx__child_use(id, kind, fn, &u) != CUDA_SUCCESS)
        return 0;
    uint64_t v = field == FIELD_RAW ? u.raw : u.obj->u.child.size;
    cuctx__child_done(&u);
    return v;
}


/* ---- pairs ------------------------------------------------------------------ */

CUresult cuctx__ctx_hold2(cuctx_ctx a, cuctx_ctx b, const char *fn, struct cuctx_held *ha, struct cuctx_held *hb)
{
    /* b's entry, found and checked as any create's, let go at once: a is
     * held first, then b's beside it */
    CUresult rc = cuctx__ctx_hold(b, fn, hb);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t eb = hb->id;
    cuctx__entry_release(hb);
    if ((rc = cuctx__ctx_hold(a, fn, ha)) != CUDA_SUCCESS)
        return rc;
    return cuctx__entry_hold_beside(ha, eb, fn, 0, hb);
}

CUresult cuctx__pair_destroy(struct cuctx_slot *s, const char *fn, enum cuctx_kind kind,
                             const struct cuctx_child_kind *k)
{
    struct cuctx_held a, b;
    struct cuctx_switch sw = {0};
    struct cuctx_unwind u CUCTX__UNWIND = {1, 0, s, &sw};
    uint64_t first = s->u.child.entry, second = second_entry(s, kind);
    CUresult rc = cuctx__entry_hold_quiet(first, &a);
    if (rc == CUDA_SUCCESS)
        rc = cuctx__entry_hold_beside(&a, second, "cuctx", 1, &b);     /* (a let go if not) */
    if (rc != CUDA_SUCCESS) {
        u.armed = 0;
        return cuctx__child_unheld(s, rc, fn, kind);    /* either ended: skipped */
    }
    if ((rc = cuctx__switch_to(a.raw, fn, &sw)) == CUDA_SUCCESS) {
        u.called = 1;
        rc = k->destroy(s->u.child.raw);
        cuctx__switch_back(&sw, fn);
    }
    cuctx__entry_release(&b);
    cuctx__entry_release(&a);
    u.armed = 0;
    rc = cuctx__child_destroyed(s, rc, fn, kind);
    give_back(first);
    give_back(second);
    return rc;
}

CUresult cuctx__pair_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u,
                         struct cuctx_held *second)
{
    second->slot = NULL;
    CUresult rc = cuctx__child_use(id, kind, fn, u);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = cuctx__entry_hold_beside(&u->entry, second_entry(u->obj, kind), fn, 0, second)) != CUDA_SUCCESS)
        cuctx__child_done(u);
    return rc;
}

void cuctx__pair_done(struct cuctx_use *u, struct cuctx_held *second)
{
    cuctx__entry_release(second);
    cuctx__child_done(u);
}

/* ---- streams destroyed with their work not waited for --------------------- */

/* The wait before the destroy of a stream that carried stream-ordered
 * memory, and the list of the streams not waited for (tether.h): here,
 * below both destroys that make it - a stream's (stream.c) and a green
 * context's of its streams (green.c) - as stream.c calls green.c (its
 * creates, through tether.h) and so cannot be called by it
 * (tests/layers_check.sh). */
static pthread_mutex_t unwaited_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *unwaited;  /* ids of streams destroyed with work not waited for */
static size_t n_unwaited, cap_unwaited;

int cuctx__stream_unwaited(uint64_t id)
{
    int found = 0;
    pthread_mutex_lock(&unwaited_lock);
    for (size_t i = 0; i < n_unwaited && !found; i++)
        found = unwaited[i] == id;
    pthread_mutex_unlock(&unwaited_lock);
    return found;
}

void cuctx__stream_waited(uint64_t id)
{
    pthread_mutex_lock(&unwaited_lock);
    for (size_t i = 0; i < n_unwaited; i++)
        if (unwaited[i] == id) {
            unwaited[i] = unwaited[--n_unwaited];
            break;
        }
    pthread_mutex_unlock(&unwaited_lock);
}

/* Remembers id; 0 when it cannot. */
static int unwaited_add(uint64_t id)
{
    int ok = 1;
    pthread_mutex_lock(&unwaited_lock);
    if (n_unwaited == cap_unwaited) {
        size_t cap = cap_unwaited ? 2 * cap_unwaited : 16;
        uint64_t *more = realloc(unwaited, cap * sizeof *more);
        if (more) {
            unwaited = more;
            cap_unwaited = cap;
        }
    }
    if (n_unwaited < cap_unwaited)
        unwaited[n_unwaited++] = id;
    else
        ok = 0;
    pthread_mutex_unlock(&unwaited_lock);
    return ok;
}

CUresult cuctx__stream_wait_carried(struct cuctx_slot *s, const char *fn)
{
    CUstream raw = (CUstream)(uintptr_t)s->u.child.raw;
    CUresult rc = DRV(cuStreamSynchronize)(raw);
    /* A stream not waited for - capturing (work queued before its capture
     * may still run), or a wait the driver refused - is destroyed all the
     * same: its memory's frees wait for the context instead (mem_async.c),
     * or, where it cannot be remembered, its caller decides. (A failed
     * wait once stopped the destroy, in stream.c and in green.c, and the
     * stream, its handle reset or its green context destroyed, leaked.) */
    if (rc != CUDA_SUCCESS
        && !unwaited_add(cuctx__id_make(KIND_STREAM, s->index,
                                        cuctx__word_gen(atomic_load_explicit(&s->word, memory_order_relaxed)))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (rc != CUDA_SUCCESS && !cuctx__capture_refused(rc))
        cuctx__report(rc, "%s: waiting for stream %p before its destroy failed (%s): destroyed all the same; the "
                          "frees of its stream-ordered memory wait for its context instead", fn, (void *)raw,
                      cuctx_result_name(rc));
    return CUDA_SUCCESS;
}

/* ---- destroys a capture refused, kept (tether.h) --------------------------- */

_Atomic unsigned cuctx__kept_count;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cuctx_kept *kept;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

/* (a forked child: the records are the parent's, its memory not the child's) */
static void kept_after_fork(void)
{
    pthread_mutex_init(&kept_lock, NULL);
    kept = NULL;
    atomic_store_explicit(&cuctx__kept_count, 0, memory_order_relaxed);
}
static void kept_fork_hook(void) { pthread_atfork(NULL, NULL, kept_after_fork); }

static void kept_push(struct cuctx_kept *k)
{
    pthread_mutex_lock(&kept_lock);
    k->next = kept;
    kept = k;
    atomic_fetch_add_explicit(&cuctx__kept_count, 1, memory_order_relaxed);
    pthread_mutex_unlock(&kept_lock);
}

int cuctx__kept_add(cuctx_kept_fn *retry, const uint64_t word[3], void *ptr)
{
    struct cuctx_kept *k = malloc(sizeof *k);
    if (!k)
        return 0;
    pthread_once(&kept_once, kept_fork_hook);
    k->retry = retry;
    k->word[0] = word[0];
    k->word[1] = word[1];
    k->word[2] = word[2];
    k->ptr = ptr;
    kept_push(k);
    return 1;
}

void cuctx__kept_retry_slow(const char *fn)
{
    pthread_mutex_lock(&kept_lock);
    struct cuctx_kept *k = kept;
    kept = NULL;
    atomic_store_explicit(&cuctx__kept_count, 0, memory_order_relaxed);
    pthread_mutex_unlock(&kept_lock);
    cuctx__quiet(1);
    while (k) {
        struct cuctx_kept *next = k->next;
        if (cuctx__capture_refused(k->retry(k, fn)))
            kept_push(k);
        else
            free(k);
        k = next;
    }
    cuctx__quiet(0);
}
