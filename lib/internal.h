/* SPDX-License-Identifier: MIT */
/* internal.h - what the library's files share: errors, the registry, the
 * tether and the context switch used by creates. Nothing here is exported. */
#ifndef CUCTX_INTERNAL_H
#define CUCTX_INTERNAL_H

#include "config.h"

#include <stdatomic.h>
#include <stdint.h>

#include "cuctx.h"
#include "driver.h"

/* Thread-locals of the library: initial-exec avoids a __tls_get_addr call on
 * every access (cuctx is linked, not dlopen()ed, so static TLS is there). */
#if defined(__GNUC__)
#  define CUCTX_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#  define CUCTX_TLS _Thread_local
#endif

/* ---- errors (error.c) ---------------------------------------------------- */

#if defined(__GNUC__)
#  define CUCTX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define CUCTX_PRINTF(f, a)
#endif

/* Records rc and a message for the calling thread; returns rc. */
CUresult cuctx__fail(CUresult rc, const char *fmt, ...) CUCTX_PRINTF(2, 3);
/* For failures with no caller to return to: records, then tells the handler. */
void cuctx__report(CUresult rc, const char *fmt, ...) CUCTX_PRINTF(2, 3);
/* CUCTX_LOG=debug only: a note to the handler (rc CUDA_SUCCESS). */
void cuctx__debug(const char *fmt, ...) CUCTX_PRINTF(1, 2);
/* Reports made while this thread held something wait for its last release
 * (the handler may call back into cuctx); releases deliver them. */
void cuctx__deliver_reports_slow(void);
static inline void cuctx__deliver_reports(void);
/* Reads CUCTX_LOG; called once by the loader. */
void cuctx__log_init(void);

/* Every public entry point starts with this. */
#define CUCTX_INIT_OR_RETURN(fn)                                   \
    do {                                                           \
        CUresult cuctx__irc = cuctx__ensure_init(fn);              \
        if (cuctx__irc != CUDA_SUCCESS)                            \
            return cuctx__irc;                                     \
    } while (0)

/* ---- the registry (registry.c) ------------------------------------------ */

/* The child kinds, one line each: X(KIND, name, stats field). A kind is
 * this line plus its file, lib/NAME.c, which defines cuctx__NAME_kind (its
 * driver destroy) and its public functions; the enum value, the table of
 * kinds and the stats count follow from the line. Appended only: the
 * order is in every id. */
#define CUCTX_CHILD_KINDS(X)                    \
    X(EVENT, event, events)                     \
    X(STREAM, stream, streams)                  \
    X(MODULE, module, modules)                  \
    X(MEM, mem, mems)                           \
    X(HOST_MEM, host_mem, host_mems)            \
    X(GRAPH_EXEC, graph_exec, graph_execs)

/* Object kinds; the top byte of every id. KIND_ENTRY names a context's
 * registry entry (generation and address) and never leaves the library. */
#define CUCTX__KIND_ENUM(K, name, field) KIND_##K,
enum cuctx_kind {
    KIND_NONE = 0,
    KIND_CTX_HANDLE,
    CUCTX_CHILD_KINDS(CUCTX__KIND_ENUM)
    KIND_ENTRY,
    KIND_COUNT
};
#undef CUCTX__KIND_ENUM

/* A handle id: kind (6 bits) | slot index (26 bits) | generation (32 bits).
 * 2^26 slots is 67 million live objects; a slot whose generation would wrap
 * is retired, so a stale id can never name a later object. */
#define CUCTX_ID_KIND_SHIFT 58
#define CUCTX_ID_INDEX_SHIFT 32
#define CUCTX_ID_INDEX_LIMIT (UINT32_C(1) << 26)
static inline enum cuctx_kind cuctx__id_kind(uint64_t id) { return (enum cuctx_kind)(id >> CUCTX_ID_KIND_SHIFT); }
static inline uint32_t cuctx__id_index(uint64_t id) { return (uint32_t)(id >> CUCTX_ID_INDEX_SHIFT) & (CUCTX_ID_INDEX_LIMIT - 1); }
static inline uint32_t cuctx__id_gen(uint64_t id) { return (uint32_t)id; }
static inline uint64_t cuctx__id_make(enum cuctx_kind kind, uint32_t index, uint32_t gen)
{
    return (uint64_t)kind << CUCTX_ID_KIND_SHIFT | (uint64_t)index << CUCTX_ID_INDEX_SHIFT | gen;
}

/* Who decides a context's life. An owned context was created by cuctx and
 * ends only through it, so the registry alone says whether it lives. A
 * primary context (retained through cuctx) and a borrowed one (handed in,
 * or met as some thread's current context) can be ended by anyone - the
 * CUDA runtime, other libraries, a reset - so the driver's context id says.
 * A handle's role is the same word: what destroying the handle undoes. */
enum cuctx_life { LIFE_OWNED = 1, LIFE_PRIMARY, LIFE_BORROWED };

/* One table slot, one cache line: threads working on their own objects must
 * not bounce a line between them with their pins (measured: 0.6 of the raw
 * driver's rate at 2-8 threads with 40-byte slots, on an H200 host).
 * `word` packs what every reader checks atomically:
 * generation (bits 32-63), kind (26-31), closing (25) and pins (0-24).
 * The payload is written before the slot is published and read only by
 * holders of a pin, or by the one closer after the pins drained. */
#define CUCTX_CACHE_LINE 64
/* Where an object was made, for the leak report (NULL file: not known). */
struct cuctx_site {
    const char *file;
    const char *func;
    int line;
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
            unsigned char owner;    /* enum cuctx_life; borrowed -> primary under the lock */
            unsigned char checked;  /* life decided by the driver's id: every hold checks it */
            uint64_t owner_handle;  /* an owned context's handle, set once after publishing (atomic) */
        } entry;
        struct {                    /* KIND_CTX_HANDLE */
            uint64_t entry;
            int role;               /* enum cuctx_life; borrowed in a forked child */
            CUdevice dev;           /* a primary handle's device, for its release */
            struct cuctx_site site;
        } ctx;
        struct {                    /* children */
            uint64_t owner;         /* the owning context's entry id */
            uint64_t raw;           /* the driver handle, as an integer */
            size_t size;
            struct cuctx_site site;
        } child;
    } u;
};
_Static_assert(sizeof(struct cuctx_slot) == CUCTX_CACHE_LINE, "a slot is one cache line");

/* The slot primitives (alloc, publish, pin, hold, close, drain, free,
 * peek): inline, in registry.h, since every handle operation is made of
 * them. */
#include "registry.h"

static inline void cuctx__deliver_reports(void)
{
    if (__builtin_expect(cuctx__me.reports_pending, 0))
        cuctx__deliver_reports_slow();
}

/* Live objects per kind, summed over the threads' own counters: cheap at
 * any table size. Exact while no thread creates or destroys. */
void cuctx__live_counts(int64_t out[KIND_COUNT]);
/* The id of a published slot, from its word. */
uint64_t cuctx__slot_id(struct cuctx_slot *s);
/* Calls fn for each published slot; used by diagnostics. */
void cuctx__slot_foreach(void (*fn)(enum cuctx_kind kind, struct cuctx_slot *s, void *arg), void *arg);

extern _Atomic uint64_t cuctx__stale_skips;
extern _Atomic uint64_t cuctx__failed_destroys;

/* ---- context entries (entry.c, ctxmap.c) -------------------------------- */

/* Registering, retaining, releasing and ending entries take this lock
 * (driver calls on those paths cost milliseconds anyway); holding an
 * entry and every child operation never do. Never take it while holding
 * an entry: an entry's end drains holds under it. */
void cuctx__ctx_lock(void);
void cuctx__ctx_unlock(void);
int cuctx__ctx_lock_held(void);

/* ---- process life (process.c) -------------------------------------------- */

/* Set once the driver has shut down (it answered CUDA_ERROR_DEINITIALIZED,
 * or cuctx's exit hook ran): destroys no longer call it. */
extern _Atomic int cuctx__shutdown;
extern _Atomic uint64_t cuctx__shutdown_skips;
/* Whether a driver answer says it has shut down; remembers it if so. */
static inline int cuctx__driver_gone(CUresult rc)
{
    if (rc != CUDA_ERROR_DEINITIALIZED)
        return 0;
    atomic_store_explicit(&cuctx__shutdown, 1, memory_order_relaxed);
    return 1;
}
/* Registers the fork and exit hooks; called once, by a successful init. */
void cuctx__process_init(void);
/* fork: the registry (pins, holds) and the contexts, in the child. */
void cuctx__ctx_lock_fork(int phase);   /* -1 before fork, else after it */
void cuctx__registry_after_fork(void);
void cuctx__contexts_after_fork(void);
void cuctx__primaries_after_fork(void);   /* context.c: cuctx's primary retains */

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
 * itself failed. fn NULL: nothing recorded, for callers to whom an ended
 * context is no failure. Inline for an owned context's live entry; the
 * rest (checks, waiting for a closing entry, failures) in entry.c, which
 * gets the slot already held, or NULL. */
CUresult cuctx__entry_hold_slow(uint64_t entry, const char *fn, struct cuctx_held *out, struct cuctx_slot *held);
static inline __attribute__((always_inline)) CUresult cuctx__entry_hold(uint64_t entry, const char *fn, struct cuctx_held *out)
{
    struct cuctx_slot *s = cuctx__hold_own(entry, KIND_ENTRY, &out->hazard);
    if (__builtin_expect(s != NULL && !s->u.entry.by_id, 1)) {
        out->slot = s;
        out->id = entry;
        out->raw = s->u.entry.raw;
        return CUDA_SUCCESS;
    }
    return cuctx__entry_hold_slow(entry, fn, out, s);
}

static inline void cuctx__entry_release(struct cuctx_held *o)
{
    if (o->slot)
        cuctx__unhold(o->slot, o->hazard);
    o->slot = NULL;
    cuctx__deliver_reports();
}

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
    if (__builtin_expect(ctx.id != cuctx__me.last.handle || ctx.id == 0, 0))
        return 0;
    out->slot = cuctx__hold_slot(cuctx__me.last.slot, cuctx__me.last.entry, KIND_ENTRY, &out->hazard);
    out->id = cuctx__me.last.entry;
    out->raw = cuctx__me.last.raw;
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
                cuctx__me.last.handle = ctx.id;
                cuctx__me.last.entry = entry;
                cuctx__me.last.slot = out->slot;
                cuctx__me.last.raw = out->raw;
            }
            return rc;
        }
    }
    return cuctx__ctx_hold_slow(ctx, fn, out);
}
/* The held entry of a raw context, registering it as borrowed when cuctx
 * has not met it (its id and device asked of the driver). */
CUresult cuctx__entry_hold_raw(CUcontext raw, const char *fn, struct cuctx_held *out);
/* Under the lock: a new entry for raw, ending whatever entry the address had
 * (the driver gave it to a new context). */
CUresult cuctx__entry_new(CUcontext raw, unsigned long long ctx_id, CUdevice dev, enum cuctx_life owner,
                          const char *fn, uint64_t *out);
/* Under the lock: ends the entries of primary and borrowed contexts that
 * the driver's id says are gone (one cuCtxGetId each; nothing without ids). */
void cuctx__sweep_locked(void);
/* Under the lock: ends a live entry now (close, drain, forget, free). */
void cuctx__entry_end_locked(uint64_t id);
/* Ends an entry that was closed by its caller (without the lock). */
void cuctx__entry_finish(struct cuctx_slot *s, uint64_t id);
/* The driver's id of a context; *id 0 and CUDA_SUCCESS without cuCtxGetId. */
CUresult cuctx__ctx_id(CUcontext raw, unsigned long long *id);
/* Whether a driver answer means the context is gone. */
static inline int cuctx__gone(CUresult rc)
{
    return rc == CUDA_ERROR_CONTEXT_IS_DESTROYED || rc == CUDA_ERROR_INVALID_CONTEXT;
}

/* The address -> entry map (ctxmap.c), under the lock. It holds live
 * contexts only: an entry leaves it when it ends. */
uint64_t cuctx__map_find(CUcontext raw);
int cuctx__map_put(CUcontext raw, uint64_t entry);
void cuctx__map_remove(CUcontext raw, uint64_t entry);
size_t cuctx__map_count(void);
void cuctx__map_foreach(void (*fn)(CUcontext raw, uint64_t entry, void *arg), void *arg);

/* ---- the calling thread's current context (current.c) -------------------- */

/* Makes raw current for one driver call and puts the old one back, with
 * push/pop, so the previous context is never handed to the driver. */
struct cuctx_switch { int pushed; };
CUresult cuctx__switch_slow(CUcontext raw, CUresult rc, const char *fn, struct cuctx_switch *sw);
void cuctx__switch_back_slow(struct cuctx_switch *sw, const char *fn);
static inline CUresult cuctx__switch_to(CUcontext raw, const char *fn, struct cuctx_switch *sw)
{
    CUcontext cur = NULL;
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    sw->pushed = 0;
    if (__builtin_expect(rc == CUDA_SUCCESS && cur == raw, 1))
        return CUDA_SUCCESS;
    return cuctx__switch_slow(raw, rc, fn, sw);
}
static inline void cuctx__switch_back(struct cuctx_switch *sw, const char *fn)
{
    if (sw->pushed)
        cuctx__switch_back_slow(sw, fn);
}
/* Levels cuctx left pushed on the calling thread's stack (creates, scopes):
 * a scope pops those pushed inside it. */
static inline unsigned cuctx__push_count(void) { return cuctx__me.pushes; }
static inline void cuctx__pushed(void) { cuctx__me.pushes++; }
static inline void cuctx__popped(void)
{
    if (cuctx__me.pushes)
        cuctx__me.pushes--;
}

/* Whether the calling thread's current context, whose address is that of
 * the context with driver id ctx_id, is that context and not a dead one
 * whose address it took (destroyed on another thread while current here):
 * asked by id (cuCtxGetId(NULL)). *is 1 without ids; when the driver
 * cannot say, *is 1 and its error returned. */
CUresult cuctx__current_is(unsigned long long ctx_id, int *is);

/* While a quiet section is open on the calling thread, failures are not
 * recorded as its last error (scope enter's look at the previous context). */
void cuctx__quiet(int on);

/* ---- children (tether.c) ------------------------------------------------- */

/* What is particular to a child kind: its names and its driver destroy. */
struct cuctx_child_kind {
    const char *name;               /* "event" */
    int destroy_needs_current;      /* the owner must be current for destroy */
    CUresult (*destroy)(uint64_t raw);
};
extern const struct cuctx_child_kind *const cuctx__child_kinds[KIND_COUNT];
#define CUCTX__KIND_DECL(K, name, field) extern const struct cuctx_child_kind cuctx__##name##_kind;
CUCTX_CHILD_KINDS(CUCTX__KIND_DECL)
#undef CUCTX__KIND_DECL

/* A kind's driver create, run with the owner current. */
typedef CUresult (*cuctx_make_fn)(void *arg, uint64_t *raw, size_t *size);

/* The out-of-line ends of the two below: failures, skips, waiting. */
CUresult cuctx__child_null(const char *fn);
CUresult cuctx__child_table_full(struct cuctx_held *o, const char *fn);
CUresult cuctx__child_bad_handle(uint64_t id, enum cuctx_kind kind, const char *fn);
CUresult cuctx__child_skip(struct cuctx_slot *s, _Atomic uint64_t *counter);
CUresult cuctx__child_unheld(struct cuctx_slot *s, CUresult rc, const char *fn, const struct cuctx_child_kind *k);
CUresult cuctx__child_refused(struct cuctx_slot *s, CUresult rc, const char *fn, const struct cuctx_child_kind *k);

/* Creates a child: resolves the owner, runs make with it current, and
 * registers the result tethered to the owner's generation. Inline, so that
 * each kind's create is one function with its driver call in it. */
static inline __attribute__((always_inline)) CUresult
cuctx__child_create(uint64_t *out, enum cuctx_kind kind, cuctx_ctx ctx, const char *fn, cuctx_make_fn make,
                    void *arg, const struct cuctx_site *site)
{
    struct cuctx_held o;
    struct cuctx_switch sw;
    uint64_t raw = 0;
    size_t size = 0;
    if (__builtin_expect(!out, 0))
        return cuctx__child_null(fn);
    *out = 0;
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = cuctx__ctx_hold(ctx, fn, &o);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return rc;
    struct cuctx_slot *s = cuctx__slot_alloc();
    if (__builtin_expect(!s, 0))
        return cuctx__child_table_full(&o, fn);
    if ((rc = cuctx__switch_to(o.raw, fn, &sw)) == CUDA_SUCCESS) {
        rc = make(arg, &raw, &size);
        cuctx__switch_back(&sw, fn);
    }
    if (__builtin_expect(rc != CUDA_SUCCESS, 0)) {
        cuctx__slot_discard(s);
        cuctx__entry_release(&o);
        return rc;
    }
    /* atomic: a reused slot's first word is peeked at as a context handle's entry */
    __atomic_store_n(&s->u.child.entry, o.id, __ATOMIC_RELAXED);
    s->u.child.raw = raw;
    s->u.child.size = size;
    s->u.child.site = *site;
    *out = cuctx__slot_publish(s, kind);
    cuctx__entry_release(&o);
    return CUDA_SUCCESS;
}

/* Destroys a child: the driver is called only while the owner lives.
 * Inline for the kind k (its destroy is called directly); the skips and
 * failures are in tether.c. */
static inline __attribute__((always_inline)) CUresult
cuctx__child_destroy(uint64_t *id, enum cuctx_kind kind, const char *fn, const struct cuctx_child_kind *k)
{
    struct cuctx_held o;
    if (__builtin_expect(!id, 0))
        return cuctx__child_null(fn);
    if (*id == 0)
        return CUDA_SUCCESS;
    uint64_t mine = *id;
    *id = 0;    /* whatever happens, the variable names nothing afterwards */
    CUCTX_INIT_OR_RETURN(fn);
    uint64_t pins;
    struct cuctx_slot *s = cuctx__close_pinned(mine, kind, &pins);
    if (__builtin_expect(!s, 0))
        return cuctx__child_bad_handle(mine, kind, fn);
    if (__builtin_expect(pins != 0, 0))     /* a child has no holds: pins taken before the close */
        cuctx__drain_slow(s);
    if (__builtin_expect(atomic_load_explicit(&cuctx__shutdown, memory_order_relaxed), 0))
        return cuctx__child_skip(s, &cuctx__shutdown_skips);
    CUresult rc = cuctx__entry_hold(s->u.child.entry, NULL, &o);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return cuctx__child_unheld(s, rc, fn, k);
    struct cuctx_switch sw = {0};
    if (k->destroy_needs_current)
        rc = cuctx__switch_to(o.raw, fn, &sw);
    if (__builtin_expect(rc == CUDA_SUCCESS, 1)) {
        rc = k->destroy(s->u.child.raw);
        if (k->destroy_needs_current)
            cuctx__switch_back(&sw, fn);
    }
    cuctx__entry_release(&o);
    if (__builtin_expect(rc != CUDA_SUCCESS, 0))
        return cuctx__child_refused(s, rc, fn, k);
    cuctx__slot_free(s);
    return CUDA_SUCCESS;
}

/* A child pinned for use, with its owner pinned too. */
struct cuctx_use {
    struct cuctx_slot *obj;
    struct cuctx_held entry;
    uint64_t raw;
};
CUresult cuctx__child_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u);
void cuctx__child_done(struct cuctx_use *u);
/* Accessor helper: the payload of a live child, or 0 with the last error set. */
int cuctx__child_peek(uint64_t id, enum cuctx_kind kind, const char *fn, uint64_t *raw, size_t *size);

#endif
