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

/* Object kinds; the top byte of every id. KIND_ENTRY names a context's
 * registry entry (generation and address) and never leaves the library. */
enum cuctx_kind {
    KIND_NONE = 0,
    KIND_CTX,
    KIND_EVENT,
    KIND_STREAM,
    KIND_MODULE,
    KIND_MEM,
    KIND_HOST_MEM,
    KIND_GRAPH_EXEC,
    KIND_ENTRY,
    KIND_COUNT
};

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

enum cuctx_ownership { OWN_OWNED = 1, OWN_PRIMARY, OWN_FOREIGN };
enum cuctx_role { ROLE_OWNED = 1, ROLE_PRIMARY, ROLE_BORROWED };

/* One table slot, one cache line: threads working on their own objects must
 * not bounce a line between them with their pins (measured: 0.6 of the raw
 * driver's rate at 2-8 threads with 40-byte slots, on an H200 host).
 * `word` packs what every reader checks atomically:
 * generation (bits 32-63), kind (26-31), closing (25) and pins (0-24).
 * The payload is written before the slot is published and read only by
 * holders of a pin, or by the one closer after the pins drained. */
#define CUCTX_CACHE_LINE 64
struct cuctx_slot {
    _Alignas(CUCTX_CACHE_LINE) _Atomic uint64_t word;
    _Atomic uint32_t next_free;     /* free-list link: index + 1, 0 = end */
    uint32_t index;                 /* fixed when the slot is first handed out */
    union {
        struct {                    /* KIND_ENTRY */
            CUcontext raw;
            CUdevice dev;
            int ownership;          /* enum cuctx_ownership */
            int handles;            /* primary retains held, under the context lock */
        } entry;
        struct {                    /* KIND_CTX */
            uint64_t entry;
            int role;               /* enum cuctx_role */
        } ctx;
        struct {                    /* children */
            uint64_t owner;         /* the owning context's entry id */
            uint64_t raw;           /* the driver handle, as an integer */
            size_t size;
        } child;
    } u;
};

/* Reserves a free slot; publish it with cuctx__slot_publish once filled. */
struct cuctx_slot *cuctx__slot_alloc(void);
/* Makes the slot live as kind; returns its id. */
uint64_t cuctx__slot_publish(struct cuctx_slot *s, enum cuctx_kind kind);
/* Returns an unpublished slot to the free list. */
void cuctx__slot_discard(struct cuctx_slot *s);

/* A pin keeps a live slot from being destroyed while held; NULL when id is
 * stale, of another kind, or closing. Cheap: one CAS on the slot's word. */
struct cuctx_slot *cuctx__pin(uint64_t id, enum cuctx_kind kind);
void cuctx__unpin(struct cuctx_slot *s);
/* The pin of a context entry on the tether's hot path: the id goes into one
 * of the calling thread's hazard slots with plain stores, so a hold costs no
 * atomic read-modify-write and threads sharing a context share no written
 * cache line. Released on the same thread; *hazard is for cuctx__unhold.
 * cuctx__drain waits for holds as for pins. */
struct cuctx_slot *cuctx__hold(uint64_t id, enum cuctx_kind kind, unsigned *hazard);
void cuctx__unhold(struct cuctx_slot *s, unsigned hazard);
/* Claims the one destroy of id (NULL if stale, wrong kind or already
 * closing); new pins fail from here on. */
struct cuctx_slot *cuctx__close(uint64_t id, enum cuctx_kind kind);
/* Waits until the pins taken before the close are released. */
void cuctx__drain(struct cuctx_slot *s);
/* Ends the slot's generation and frees it. */
void cuctx__slot_free(struct cuctx_slot *s);
/* Whether id names a live slot (not closing), without pinning. */
int cuctx__alive(uint64_t id, enum cuctx_kind kind);
/* Whether id names a slot whose destroy has begun but not finished. */
int cuctx__closing(uint64_t id, enum cuctx_kind kind);
/* Reads without a pin, as a seqlock reader: cuctx__peek gives the slot if
 * id is live; read its fields with relaxed atomic loads; the values hold if
 * cuctx__peek_valid then says id is still live (the slot was not reused). */
struct cuctx_slot *cuctx__peek(uint64_t id, enum cuctx_kind kind);
int cuctx__peek_valid(struct cuctx_slot *s, uint64_t id, enum cuctx_kind kind);

/* Calls fn for each published slot; used by diagnostics. */
void cuctx__slot_foreach(void (*fn)(enum cuctx_kind kind, struct cuctx_slot *s, void *arg), void *arg);

extern _Atomic uint64_t cuctx__stale_skips;
extern _Atomic uint64_t cuctx__failed_destroys;

/* ---- contexts (context.c) ----------------------------------------------- */

/* A pinned context entry: children's creates, uses and destroys hold one
 * for the duration of their driver call, and a context destroy waits them out. */
struct cuctx_owner {
    struct cuctx_slot *slot;
    uint64_t id;
    CUcontext raw;
    unsigned hazard;
};

/* Resolves ctx ({0}: the current context, registered on first sight) to
 * its pinned entry. Errors: INVALID_HANDLE for a bad handle, INVALID_CONTEXT
 * when nothing is current, CONTEXT_IS_DESTROYED when the context is gone. */
CUresult cuctx__owner_acquire(cuctx_ctx ctx, const char *fn, struct cuctx_owner *out);
/* Holds an entry by id; CONTEXT_IS_DESTROYED when its generation ended
 * (fn NULL: no error recorded, for callers to whom that is no failure). */
CUresult cuctx__owner_pin(uint64_t entry, const char *fn, struct cuctx_owner *out);
void cuctx__owner_release(struct cuctx_owner *o);

/* The live entry for a raw context, registering a foreign one if needed;
 * CONTEXT_IS_DESTROYED if the driver says it is dead. */
CUresult cuctx__entry_for_raw(CUcontext raw, const char *fn, uint64_t *out);

/* Makes raw current for one driver call and puts the old one back, with
 * push/pop, so the previous context is never handed to the driver. */
struct cuctx_switch { int pushed; };
CUresult cuctx__switch_to(CUcontext raw, const char *fn, struct cuctx_switch *sw);
void cuctx__switch_back(struct cuctx_switch *sw, const char *fn);

/* ---- children (child.c) ------------------------------------------------- */

/* What is particular to a child kind: its names and its driver destroy. */
struct cuctx_child_kind {
    const char *name;               /* "event" */
    int destroy_needs_current;      /* the owner must be current for destroy */
    CUresult (*destroy)(uint64_t raw);
};
extern const struct cuctx_child_kind *const cuctx__child_kinds[KIND_COUNT];
extern const struct cuctx_child_kind cuctx__event_kind, cuctx__stream_kind,
    cuctx__module_kind, cuctx__mem_kind, cuctx__host_mem_kind, cuctx__graph_exec_kind;

/* A kind's driver create, run with the owner current. */
typedef CUresult (*cuctx_make_fn)(void *arg, uint64_t *raw, size_t *size);

/* Creates a child: resolves the owner, runs make with it current, and
 * registers the result tethered to the owner's generation. */
CUresult cuctx__child_create(uint64_t *out, enum cuctx_kind kind, cuctx_ctx ctx,
                             const char *fn, cuctx_make_fn make, void *arg);
/* Destroys a child: the driver is called only while the owner lives. */
CUresult cuctx__child_destroy(uint64_t *id, enum cuctx_kind kind, const char *fn);

/* A child pinned for use, with its owner pinned too. */
struct cuctx_use {
    struct cuctx_slot *obj;
    struct cuctx_owner owner;
    uint64_t raw;
};
CUresult cuctx__child_use(uint64_t id, enum cuctx_kind kind, const char *fn, struct cuctx_use *u);
void cuctx__child_done(struct cuctx_use *u);
/* Accessor helper: the payload of a live child, or 0 with the last error set. */
int cuctx__child_peek(uint64_t id, enum cuctx_kind kind, const char *fn, uint64_t *raw, size_t *size);

/* "CUDA_ERROR_X" for messages. */
#define RN(rc) cuctx_result_name(rc)

#endif
