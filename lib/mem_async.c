/* SPDX-License-Identifier: MIT */
/* mem_async.c - stream-ordered memory (cuMemAllocAsync,
 * cuMemAllocFromPoolAsync): a cuctx_mem whose life is its own and its
 * pool's, not its context's - a kind of no context (ids.h).
 *
 * What the real driver does (H200, tools/facts/async_free.c and
 * pool_accounting.c; DRIVER-FACTS):
 *   - the memory belongs to its pool, i.e. the device: it lives on after
 *     the context it was made in is destroyed or reset, and must still be
 *     freed then - skipping the free, as the tether does for other
 *     children, would leak it;
 *   - cuMemFreeAsync(p, s) with s destroyed crashes the process;
 *   - with s gone and work queued on it still running, a plain cuMemFree
 *     hands the address on at once (the running kernel then writes into
 *     the next allocation), and so does cuMemFreeAsync on another stream
 *     or the per-thread stream. What is safe: cuMemFreeAsync on the
 *     context's legacy stream when s was a blocking stream (the legacy
 *     stream waits for those, destroyed or not), and anything once s's
 *     work is done;
 *   - cuCtxDestroy waits for the work queued in the context (a 200 ms
 *     kernel: the destroy took 275 ms); then cuMemFree with no context
 *     current returns the memory (0), though the pool's used-memory
 *     attribute keeps counting it; cuMemFreeAsync on a stream of another
 *     live context returns it with the figure right.
 *
 * So each allocation records, in its slot's aux record, the stream it was
 * made on (a handle, or a default stream by name) and the entry of that
 * stream's context, and marks the stream as one that carried
 * stream-ordered memory: the destroy of such a stream, non-blocking or of
 * flags unknown, first waits for its work (stream.c), so that once a
 * stream is gone the legacy stream is a safe order for its memory. (A
 * synchronize of the context at the free instead would be refused, and
 * would end the capture, while any stream of the context captures.) The
 * memory's destroy frees:
 *   1. on its stream, held so that no destroy of it can come between,
 *      while that stream lives (no context switch: the call takes the
 *      stream alone, measured);
 *   2. else, while its context lives, on that context's legacy stream
 *      (after a cuCtxSynchronize where the stream was destroyed while it
 *      captured, which cannot be waited for: rare, and refused beside
 *      another capture in the context);
 *   3. else, the context and its work gone (the hold waits out a destroy
 *      under way), on the legacy stream of the device's primary context
 *      while that is active: a cuMemFree would free it too, but leave the
 *      pool counting it as used (measured: 8 MB after 24 contexts);
 *   4. else with cuMemFree and no context.
 * Each is a call a capture may forbid (below): 2 to 4 run with the
 * thread's capture mode RELAXED, so that a capture elsewhere neither
 * refuses them nor is ended by them; 1, refused so, is made again RELAXED.
 * A free is never skipped, except in a forked child (the parent's memory)
 * and after the driver shut down.
 *
 * The allocation and the free of case 1 hold the stream through the
 * thread's hazard slots (cuctx__hold_child, registry.h) rather than pin
 * it: a pin and its release are two locked read-modify-writes on the
 * stream's line each, four per pair, which the H200 showed as most of
 * what cuctx added to the raw pair. The price is the membarrier(2) the
 * stream's destroy pays once it was held (a few microseconds), on a
 * destroy that, for a non-blocking stream, synchronizes it anyway. Both
 * take the stream and its context's entry in one inline path
 * (cuctx__child_hold_fast, tether.h: hazard slots 0 and 1, each hold made
 * as before); whatever that path does not cover goes the full way, out of
 * line (alloc_slow, free_slow). */
#include "config.h"

#include "apart.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "mem_async.h"
#include "mem_pool.h"
#include "registry.h"
#include "tether.h"

#include <pthread.h>

/* The stream of a cuctx_mem_free_async call, which the destroy below uses
 * in place of the allocation's own (one thread's call, so per thread). */
static CUCTX_TLS CUstream free_on;
static CUCTX_TLS CUcontext free_on_ctx;     /* its context, held by the caller; NULL for a default stream */
static CUCTX_TLS int free_on_set;
static void free_on_reset(int *armed)
{
    if (*armed)
        free_on_set = 0;
}

static CUresult need_async(const char *fn)
{
    if (__builtin_expect(DRV(cuMemAllocAsync) && DRV(cuMemFreeAsync), 1))
        return CUDA_SUCCESS;    /* (the allocation's path: no table walk) */
    return CUCTX__DRIVER_NEEDS(fn, "stream-ordered memory", "CUDA 11.2 or newer needed", CUCTX__DRV_AT(cuMemAllocAsync),
                               CUCTX__DRV_AT(cuMemFreeAsync));
}

/* Every free below is a call a capture may forbid: under another
 * thread's CU_STREAM_CAPTURE_MODE_GLOBAL capture, or this thread's own,
 * cuMemFreeAsync on any stream that is not capturing, cuMemFree and
 * cuCtxSynchronize answer 900 and end the capture (measured on the H200,
 * tools/facts/free_beside_capture.c: legacy, blocking and non-blocking
 * streams alike). Refused, the free fails and the memory leaks. The
 * documentation lets the calling thread's own capture mode decide whether
 * its unsafe calls are prohibited, and the H200 agrees: made with it
 * RELAXED, each goes through and the capture is intact. So the frees of
 * cases 2 to 4, which cuctx chose in place of the memory's own stream, run
 * RELAXED (the program's own frees would have been on that stream); case
 * 1's, on the stream the program gave, runs in the thread's mode, as the
 * driver's would (no exchange on the allocation's hot path), and where
 * refused so is made again RELAXED: the capture is ended as the driver
 * ends it, but the memory is not lost. A synchronize that would wait for a
 * capturing stream of its own context is still refused, in any mode, and
 * so is a free on a stream whose own capture was invalidated (901): those
 * two are kept, and made once a capture ends (keep_refused, below). The
 * mode is given back after the call, whatever it answered and on a cancel
 * too (the cleanup); a driver without the exchange, or one that refuses
 * it, has the call made in the thread's mode, as before. */
struct relaxed { CUstreamCaptureMode mode; int exchanged; const char *fn; };
/* Each exchange with cancellation off: a cancel acted on inside the first
 * would come before the cleanup that gives the mode back is in place, and
 * inside the give-back after that cleanup has begun; held off, it is acted
 * on at the next cancellation point, the mode given back by then or the
 * cleanup armed to give it back. */
static CUresult exchange_uncancelled(CUstreamCaptureMode *mode)
{
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    CUresult rc = DRV(cuThreadExchangeStreamCaptureMode)(mode);
    pthread_setcancelstate(old, NULL);
    return rc;
}
static inline struct relaxed relax(const char *fn)
{
    struct relaxed r = {CU_STREAM_CAPTURE_MODE_RELAXED, 0, fn};
    r.exchanged = DRV(cuThreadExchangeStreamCaptureMode) != NULL && exchange_uncancelled(&r.mode) == CUDA_SUCCESS;
    return r;
}
static void relaxed_end(struct relaxed *r)
{
    CUresult rc;
    if (r->exchanged && (rc = exchange_uncancelled(&r->mode)) != CUDA_SUCCESS)
        cuctx__report(rc, "%s: cannot give the thread its stream capture mode back after a free of stream-ordered "
                          "memory (it stays RELAXED): cuThreadExchangeStreamCaptureMode failed: %s", r->fn,
                      cuctx_result_name(rc));
}
/* The statement after it runs so (a run-once for, as apart.h's guards). */
#define CAPTURE_RELAXED(fn)                                                                         \
    for (struct relaxed relaxed_ __attribute__((cleanup(relaxed_end))) = relax(fn),                  \
                        *relaxed_once_ = &relaxed_;                                                  \
         relaxed_once_; relaxed_once_ = NULL)

/* Case 2 above: on the legacy stream of the held context o, after a
 * synchronize of it where the stream's destroy could not wait (unwaited:
 * that stream's id, else 0). */
static __attribute__((noinline)) CUresult free_in_context(CUdeviceptr p, struct cuctx_held *o, uint64_t unwaited,
                                                          const char *fn)
{
    struct cuctx_switch sw = {0};
    CUresult rc;
    CUCTX__UNWOUND_LETS_GO(&sw)
        if ((rc = cuctx__switch_to(o->raw, fn, &sw)) == CUDA_SUCCESS) {
            if (unwaited) {
                /* a capture's begin or end beside it crashes the driver, and
                 * so does a pool's destroy (apart.h) */
                struct cuctx_sync_guard g CUCTX__SYNC_GUARD = cuctx__sync_shared(o->id);
                (void)g;
                CUCTX__APART_FROM_POOLS
                    CAPTURE_RELAXED(fn)
                        rc = DRV(cuCtxSynchronize)();
                if (rc == CUDA_SUCCESS)     /* its work is done: its other frees need not wait */
                    cuctx__stream_waited(unwaited);
            }
            if (rc == CUDA_SUCCESS)
                CAPTURE_RELAXED(fn)
                    rc = DRV(cuMemFreeAsync)(p, CU_STREAM_LEGACY);
            cuctx__switch_back(&sw, fn);
        }
    return rc;
}

/* A free on s that a capture refused (rc 900, in the thread's own mode):
 * made again RELAXED (the comment of CAPTURE_RELAXED); any other rc as it
 * is. */
static CUresult free_again_relaxed(CUdeviceptr p, CUstream s, CUresult rc, const char *fn)
{
    if (rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        CAPTURE_RELAXED(fn)
            rc = DRV(cuMemFreeAsync)(p, s);
    return rc;
}

/* A free the driver refused with CUDA_ERROR_CONTEXT_IS_DESTROYED although
 * the stream it names, or no context at all, would do: the calling
 * thread's current context is a destroyed one (ended by another thread
 * while current here, as in a scope over a context that died; seen on the
 * H200 in the stress runs: the free refused, the memory kept). Case 1 then
 * frees again with the stream's live context pushed over that level (its
 * pop leaves the level as it was); case 4, with no live context to push,
 * on a thread of its own, where nothing is current. Both are rare: cold,
 * out of line. */
static __attribute__((noinline, cold)) CUresult free_on_stream_pushed(CUdeviceptr p, CUstream s, CUcontext ctx,
                                                                      const char *fn)
{
    struct cuctx_switch sw = {0};
    CUresult rc = CUDA_ERROR_UNKNOWN;     /* (set by the push or the free: the guard runs its statement once) */
    CUCTX__UNWOUND_LETS_GO(&sw)
        if ((rc = cuctx__switch_slow(ctx, CUDA_SUCCESS, fn, &sw)) == CUDA_SUCCESS) {   /* a push, always */
            rc = free_again_relaxed(p, s, DRV(cuMemFreeAsync)(p, s), fn);     /* as case 1's */
            cuctx__switch_back(&sw, fn);
        }
    return rc;
}

/* Case 1's free on the stream s of the held context ctx (NULL: a default
 * stream by name, the current context's), refused with rc: made again
 * where the refusal says how - with the stream's context pushed over a
 * dead current one (above), or RELAXED beside a capture that forbids it
 * (the comment of CAPTURE_RELAXED). Cold, out of line. */
static __attribute__((noinline, cold)) CUresult free_refused(CUdeviceptr p, CUstream s, CUcontext ctx, CUresult rc,
                                                             const char *fn)
{
    if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && ctx)
        return free_on_stream_pushed(p, s, ctx, fn);
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = free_again_relaxed(p, s, rc, fn);
    return rc;
}

struct free_apart { CUdeviceptr p; CUresult rc; const char *fn; };
static void *free_apart_run(void *arg)
{
    struct free_apart *f = arg;
    CAPTURE_RELAXED(f->fn)     /* (a new thread's mode is GLOBAL) */
        f->rc = DRV(cuMemFree)(f->p);
    return NULL;
}

static __attribute__((noinline, cold)) CUresult free_with_none_current(CUdeviceptr p, const char *fn)
{
    struct free_apart f = {p, CUDA_ERROR_UNKNOWN, fn};
    pthread_t t;
    int old;
    /* not left halfway by a cancel: the thread frees whatever this one does */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    int e = pthread_create(&t, NULL, free_apart_run, &f);
    if (e == 0)
        pthread_join(t, NULL);
    pthread_setcancelstate(old, NULL);
    return e == 0 ? f.rc : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Case 3 above: on the legacy stream of the primary context of the
 * memory's device, where that context is active. The memory's own context
 * and its work are gone, so any order frees it; but only a free ordered on
 * a live context's stream brings the pool's used figure back down, which
 * a cuMemFree never does (measured, tools/facts/free_after_ctx.c). Not
 * CUDA_SUCCESS: not freed here, and case 4 frees it - quietly where case 3
 * does not apply (a driver without cuPointerGetAttribute, no active
 * primary context, its address another context's now), with a report
 * where a driver call failed (the pool's figure then stays up). */
static __attribute__((noinline)) CUresult free_in_primary(CUdeviceptr p, const char *fn)
{
    int dev = -1;
    CUcontext raw = NULL;
    struct cuctx_held o;
    CUresult rc;
    const char *step = "cuPointerGetAttribute";
    if (!DRV(cuPointerGetAttribute))
        return CUDA_ERROR_NOT_SUPPORTED;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuPointerGetAttribute)(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (rc == CUDA_SUCCESS) {
        /* active now (cuctx knows the address of one that was, and asking
         * a context that is not for its id is a misuse) */
        unsigned flags = 0;
        int active = 0;
        step = "cuDevicePrimaryCtxGetState";
        if (!DRV(cuDevicePrimaryCtxGetState))
            return CUDA_ERROR_NOT_SUPPORTED;
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuDevicePrimaryCtxGetState)((CUdevice)dev, &flags, &active);
        if (rc == CUDA_SUCCESS && !active)
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    if (rc == CUDA_SUCCESS) {
        step = "finding the device's primary context";
        cuctx__quiet(1);    /* (the report below says it) */
        cuctx__ctx_lock();
        rc = cuctx__primary_address((CUdevice)dev, fn, &raw);
        cuctx__ctx_unlock();
        if (rc == CUDA_SUCCESS && raw)
            rc = cuctx__entry_hold_raw(raw, fn, &o);
        cuctx__quiet(0);
        if (rc == CUDA_SUCCESS && (!raw || o.slot->u.entry.dev != (CUdevice)dev || o.slot->u.entry.home)) {
            if (raw)
                cuctx__entry_release(&o);
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;     /* none active (its address another's now) */
        }
        if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED)
            return rc;
    }
    if (rc == CUDA_SUCCESS) {
        step = "the free on its legacy stream";
        rc = free_in_context(p, &o, 0, fn);
        cuctx__entry_release(&o);
    }
    if (rc != CUDA_SUCCESS)
        cuctx__report(rc, "%s: stream-ordered memory %#llx whose context has ended: %s failed (%s); freed by "
                          "cuMemFree instead, which leaves its pool counting it as used", fn, (unsigned long long)p,
                      step, cuctx_result_name(rc));
    return rc;
}

/* Cases 1 to 4 above the full way, out of line: where the fast path of
 * case 1 (free_slot, below) did not apply - the allocation's stream a
 * default one by name, gone, or its generation not yet held by this path;
 * its context to check, wait for, or gone; the thread's hazard slots 0 and
 * 1 in use. stream and entry: the allocation's aux record. */
static __attribute__((noinline)) CUresult free_slow(CUdeviceptr p, uint64_t stream, uint64_t entry, const char *fn)
{
    CUresult rc;
    CUstream named;
    struct cuctx_held o;
    if (!cuctx__stream_default(stream, &named)) {
        /* 1: its stream lives, and stays until the free is queued (its
         * hold stops its destroy, its context's hold the context's) */
        unsigned hz;
        struct cuctx_slot *st = cuctx__hold_child(stream, KIND_STREAM, &hz);
        if (st) {
            rc = cuctx__entry_hold_quiet(st->u.child.entry, &o);
            if (rc == CUDA_SUCCESS) {
                CUCTX__UNWOUND_LETS_GO(NULL)
                    rc = DRV(cuMemFreeAsync)(p, (CUstream)(uintptr_t)st->u.child.raw);
                if (rc != CUDA_SUCCESS)
                    rc = free_refused(p, (CUstream)(uintptr_t)st->u.child.raw, o.raw, rc, fn);
                cuctx__entry_release(&o);
                cuctx__unhold_child(st, hz);
                cuctx__deliver_reports();   /* (made while it held the stream: a failed pop, say) */
                return rc;
            }
            cuctx__unhold_child(st, hz);
            if (rc != CUDA_ERROR_CONTEXT_IS_DESTROYED)
                return rc;      /* the check of its context failed: no free unsure of its order */
        }
    }
    rc = cuctx__entry_hold_quiet(entry, &o);
    if (rc == CUDA_SUCCESS) {   /* 2 */
        rc = free_in_context(p, &o, !cuctx__stream_default(stream, &named) && cuctx__stream_unwaited(stream) ? stream : 0,
                             fn);
        cuctx__entry_release(&o);
        return rc;
    }
    if (rc != CUDA_ERROR_CONTEXT_IS_DESTROYED)
        return rc;
    if (free_in_primary(p, fn) == CUDA_SUCCESS)     /* 3 */
        return CUDA_SUCCESS;
    CUCTX__UNWOUND_LETS_GO(NULL)    /* 4 */
        CAPTURE_RELAXED(fn)
            rc = DRV(cuMemFree)(p);
    if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED)
        rc = free_with_none_current(p, fn);
    return rc;
}

/* The free, inlined into the destroy with case 1's usual form: the stream
 * and its context held at once (cuctx__child_hold_fast, tether.h), no
 * context switch. on_free_async: where cuctx_mem_free_async's stream may
 * replace the allocation's (its kind, below); the plain destroy never
 * looks. */
static inline __attribute__((always_inline)) CUresult free_slot(struct cuctx_slot *s, const char *fn,
                                                                int on_free_async)
{
    const struct cuctx_aux *a = cuctx__slot_aux(s);
    CUdeviceptr p = (CUdeviceptr)s->u.child.raw;
    uint64_t stream = a->id[0];
    CUresult rc;
    if (on_free_async && free_on_set) {     /* cuctx_mem_free_async's stream, pinned by its caller */
        rc = DRV(cuMemFreeAsync)(p, free_on);
        if (rc != CUDA_SUCCESS)
            rc = free_refused(p, free_on, free_on_ctx, rc, fn);
        return rc;
    }
    struct cuctx_use u;
    /* (a default stream's id never matches a slot's word: generation 0) */
    if (__builtin_expect(!cuctx__child_hold_fast(stream, KIND_STREAM, 1, &u), 0))
        return free_slow(p, stream, a->id[1], fn);
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuMemFreeAsync)(p, (CUstream)(uintptr_t)u.raw);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        rc = free_refused(p, (CUstream)(uintptr_t)u.raw, u.entry.raw, rc, fn);
    cuctx__child_done_fast(2);
    return rc;
}
/* A kept free (below) made again: by the full way, which finds what
 * became of its stream and context meanwhile; done, its pool's reference
 * given back; refused otherwise than by a capture, reported and counted
 * as a destroy the driver refused (the memory lost). */
static CUresult kept_free(struct cuctx_kept *k, const char *fn)
{
    CUresult rc = free_slow((CUdeviceptr)k->word[0], k->word[1], k->word[2], fn);
    if (rc == CUDA_SUCCESS) {
        cuctx__pool_unref(k->ptr, fn);
    } else if (!cuctx__capture_refused(rc)) {
        atomic_fetch_add_explicit(&cuctx__failed_destroys, 1, memory_order_relaxed);
        cuctx__report(rc, "%s: the free of stream-ordered memory %#llx, kept while a capture refused it, failed: %s",
                      fn, (unsigned long long)k->word[0], cuctx_result_name(rc));
    }
    return rc;
}

/* A free a capture refused (900, 901) where no other order serves - on a
 * stream whose own capture another call invalidated, or case 2's wait
 * while a stream of the context captures: kept (tether.h), made again
 * once a capture ends or a stream is destroyed; the handle ends now, the
 * pool's reference stays with the memory. *kept: so. Cold. */
static __attribute__((noinline, cold)) CUresult keep_refused(struct cuctx_slot *s, CUresult rc,
                                                             struct cuctx_pool_life *life, int *kept)
{
    const struct cuctx_aux *a = cuctx__slot_aux(s);
    uint64_t w[3] = {s->u.child.raw, a->id[0], a->id[1]};
    if (!cuctx__capture_refused(rc) || !cuctx__kept_add(kept_free, w, life))
        return rc;
    *kept = 1;
    return CUDA_SUCCESS;
}

/* The free, then its pool's reference given back (the last destroys a
 * pool whose handle went first, mem_pool.c). A free refused keeps it: the
 * memory may live, and a pool destroyed under live memory can crash. */
static inline __attribute__((always_inline)) CUresult destroy_slot_as(struct cuctx_slot *s, const char *fn,
                                                                      int on_free_async)
{
    struct cuctx_pool_life *life = cuctx__slot_aux(s)->ptr;     /* (read before the call: kept in a register) */
    int kept = 0;
    CUresult rc = free_slot(s, fn, on_free_async);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        rc = keep_refused(s, rc, life, &kept);
    if (__builtin_expect(life != NULL, 0) && rc == CUDA_SUCCESS && !kept)    /* (most memory has none) */
        cuctx__pool_unref(life, fn);
    return rc;
}
static inline __attribute__((always_inline)) CUresult destroy_slot(struct cuctx_slot *s, const char *fn)
{
    return destroy_slot_as(s, fn, 0);
}
static CUresult destroy_slot_free_async(struct cuctx_slot *s, const char *fn)
{
    return destroy_slot_as(s, fn, 1);
}
const struct cuctx_child_kind cuctx__mem_async_kind = {0, NULL, destroy_slot};
/* cuctx_mem_free_async's, which looks for its stream first */
static const struct cuctx_child_kind free_async_kind = {0, NULL, destroy_slot_free_async};

/* (the kind known here, its destroy_slot is called directly and inlined;
 * the caller checked id's kind, and so that it is not 0, on this value) */
CUresult cuctx__mem_async_destroy(uint64_t id, const char *fn)
{
    if (cuctx__id_kind(id) != KIND_MEM_ASYNC)
        __builtin_unreachable();
    return cuctx__child_destroy_id(id, KIND_MEM_ASYNC, fn, &cuctx__mem_async_kind);
}

struct make_args {
    size_t bytes;
    CUmemoryPool pool;  /* NULL: the device's current pool */
    CUstream stream;
    const char *fn;
};

static inline __attribute__((always_inline)) CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct make_args *m = arg;
    CUdeviceptr p = 0;
    CUresult rc = m->pool ? DRV(cuMemAllocFromPoolAsync)(&p, m->bytes, m->pool, m->stream)
                          : DRV(cuMemAllocAsync)(&p, m->bytes, m->stream);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: %s(%zu bytes) failed: %s", m->fn,
                           m->pool ? "cuMemAllocFromPoolAsync" : "cuMemAllocAsync", m->bytes, cuctx_result_name(rc));
    *raw = (uint64_t)p;
    *size = m->bytes;
    return CUDA_SUCCESS;
}

/* (the last reference where the pool's handle was destroyed meanwhile: it
 * destroys the pool) */
static void pool_ref_drop(struct cuctx_pool_life **l)
{
    if (*l)     /* (known NULL without a pool: the cleanup folds away) */
        cuctx__pool_unref(*l, "cuctx_mem_alloc_from_pool");
}

/* The memory made on the stream held in st (its context's entry held
 * too, or for a default stream the current context's alone: st->obj
 * NULL). Its aux record names the stream as the allocation was given it,
 * s, the entry of the context it was made in, and the pool's reference
 * life, which the memory takes when made. */
static inline __attribute__((always_inline)) CUresult made_on(cuctx_mem *out, cuctx_stream s, const struct cuctx_use *st,
                                                              struct make_args *m, const struct cuctx_site *site,
                                                              struct cuctx_pool_life *life)
{
    struct cuctx_aux aux = {{s.id, st->entry.id}, life};
    if (st->obj)
        cuctx__stream_carries(st->obj);
    m->stream = (CUstream)(uintptr_t)st->raw;
    return cuctx__loose_create_aux(&out->id, KIND_MEM_ASYNC, m->fn, make, m, site, &aux);
}

/* The allocation where cuctx__child_hold_fast did not hold its stream, out
 * of line: a handle the full way (cuctx__child_use_as with hold: its
 * generation's first hold, an entry to check or wait for, an error), or a
 * default stream by name or {0}, the current context's, whose entry is
 * held alone. */
static __attribute__((noinline)) CUresult alloc_slow(cuctx_mem *out, cuctx_stream s, size_t bytes, CUmemoryPool pool,
                                                    const char *fn, const char *file, const char *func, int line,
                                                    struct cuctx_pool_life *life)
{
    struct make_args m = {bytes, pool, NULL, fn};
    struct cuctx_site where = {.file = file, .func = func, .line = line};
    const struct cuctx_site *site = &where;
    struct cuctx_use st;
    CUstream named;
    CUresult rc;
    if (!cuctx__stream_default(s.id, &named)) {
        rc = cuctx__child_use_as(s.id, KIND_STREAM, 1, fn, &st);
    } else {
        st.obj = NULL;
        st.raw = (uint64_t)(uintptr_t)named;
        rc = cuctx__ctx_hold((cuctx_ctx){0}, fn, &st.entry);
    }
    if (rc != CUDA_SUCCESS) {
        cuctx__deliver_reports();   /* (what child_done of the empty use did) */
        return rc;
    }
    rc = made_on(out, s, &st, &m, site, life);
    cuctx__child_done_as(&st, 1);
    return rc;
}

/* Both allocations: pool_id 0 ({0}) is the device's current pool. Inline
 * into each, with make and the holds of the stream and its context: the
 * allocation on a stream is one function. */
static inline __attribute__((always_inline)) CUresult alloc(cuctx_mem *out, uint64_t pool_id, cuctx_stream s,
                                                            size_t bytes, const char *fn, const struct cuctx_site *site)
{
    struct make_args m = {bytes, NULL, NULL, fn};
    struct cuctx_use pool = {0};
    struct cuctx_use st;
    /* the pool's reference, given back unless the memory took it (a cancel too) */
    struct cuctx_pool_life *life __attribute__((cleanup(pool_ref_drop))) = NULL;
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(&out->id, KIND_MEM_ASYNC, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = need_async(fn)) != CUDA_SUCCESS)
        return rc;
    if (pool_id) {
        if ((rc = CUCTX__DRIVER_NEEDS(fn, "memory pools", "CUDA 11.2 or newer needed",
                                      CUCTX__DRV_AT(cuMemAllocFromPoolAsync))) != CUDA_SUCCESS)
            return rc;
        if ((rc = cuctx__child_use(pool_id, KIND_MEM_POOL, fn, &pool)) != CUDA_SUCCESS)
            return rc;
        m.pool = (CUmemoryPool)(uintptr_t)pool.raw;
        int no_memory;
        if (!(life = cuctx__pool_ref(pool.obj, &no_memory)) && no_memory) {
            cuctx__child_done(&pool);
            return cuctx__fail(CUDA_ERROR_OUT_OF_MEMORY, "%s: no memory for the pool's record", fn);
        }
    }
    /* the stream held, and its context (a default stream's id never takes
     * the fast path: generation 0 matches no slot's word) */
    if (__builtin_expect(cuctx__child_hold_fast(s.id, KIND_STREAM, 0, &st), 1)) {
        rc = made_on(out, s, &st, &m, site, life);
        cuctx__child_done_fast(2);   /* (the reports delivered) */
    } else {
        /* (the site's fields, not its address: in registers here) */
        rc = alloc_slow(out, s, bytes, m.pool, fn, site->file, site->func, site->line, life);
    }
    if (rc == CUDA_SUCCESS)
        life = NULL;    /* (the memory's now) */
    if (pool_id)
        cuctx__child_done(&pool);
    return rc;
}

CUCTX_API CUresult cuctx_mem_alloc_async_at(cuctx_mem *out, cuctx_stream s, size_t bytes, const char *file, int line,
                                            const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return alloc(out, 0, s, bytes, "cuctx_mem_alloc_async", &site);
}

CUCTX_API CUresult (cuctx_mem_alloc_async)(cuctx_mem *out, cuctx_stream s, size_t bytes)
{
    return cuctx_mem_alloc_async_at(out, s, bytes, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_alloc_from_pool_at(cuctx_mem *out, cuctx_mem_pool pool, cuctx_stream s, size_t bytes,
                                                const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return alloc(out, pool.id, s, bytes, "cuctx_mem_alloc_from_pool", &site);
}

CUCTX_API CUresult (cuctx_mem_alloc_from_pool)(cuctx_mem *out, cuctx_mem_pool pool, cuctx_stream s, size_t bytes)
{
    return cuctx_mem_alloc_from_pool_at(out, pool, s, bytes, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_free_async(cuctx_mem *m, cuctx_stream s)
{
    static const char fn[] = "cuctx_mem_free_async";
    struct cuctx_stream_arg sa;
    CUresult rc;
    if (!m)
        return cuctx__child_null(fn);
    uint64_t id = m->id;
    if (id == 0)
        return CUDA_SUCCESS;
    if (cuctx__id_kind(id) != KIND_MEM_ASYNC)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: handle %#llx is not stream-ordered memory (cuctx_mem_alloc_async); "
                           "cuctx_mem_destroy frees it", fn, (unsigned long long)id);
    if (s.id == 0) {    /* the stream it was allocated on */
        m->id = 0;
        return cuctx__mem_async_destroy(id, fn);
    }
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = cuctx__stream_take(s, 0, fn, &sa)) != CUDA_SUCCESS)
        return rc;
    {
        /* a named default stream is the current context's: it stays
         * current; a cancel inside lets go of the setting */
        int armed __attribute__((cleanup(free_on_reset))) = 1;
        free_on = sa.raw;
        free_on_ctx = sa.use.obj ? (CUcontext)sa.use.entry.raw : NULL;
        free_on_set = 1;
        rc = cuctx__child_destroy(&m->id, KIND_MEM_ASYNC, fn, &free_async_kind);
        free_on_set = 0;
        armed = 0;
    }
    cuctx__stream_done(&sa);
    return rc;
}
