/*
 * cuctx.h - CUDA Driver API resources that clean themselves up, for C.
 *
 * ==========================================================================
 *  What it is for
 * ==========================================================================
 *
 * A CUDA Driver API program in C owns contexts, events, streams, modules,
 * device and page-locked memory and graph execs, and must release each one
 * exactly once, on every path out of every function, in the right order and
 * while its context is still alive. Get it wrong and the real driver does not
 * always return an error: a stream destroyed after its context crashes the
 * process, and a cuMemFree of a pointer whose context died frees whatever a
 * newer context has since been given at that address.
 *
 * cuctx gives C what C++ destructors and Rust's Drop give those languages:
 *
 *   - CUCTX_AUTO on a handle variable destroys its object when the variable
 *     goes out of scope, whichever way control leaves the block;
 *   - CUCTX_SCOPED(ctx) { ... } and CUCTX_GUARD(ctx); make a context current
 *     for a block and put the previous one back at every exit;
 *   - every handle carries a generation, so a destroyed, stale or copied
 *     handle is detected instead of dereferenced;
 *   - every child object is tethered to its context's generation: when the
 *     context has gone (even if a new context now sits at the same address)
 *     the child's destroy does not reach the driver at all.
 *
 * ==========================================================================
 *  A complete example
 * ==========================================================================
 *
 *   #include <cuctx.h>
 *   #include <stdio.h>
 *
 *   int main(void)
 *   {
 *       CUCTX_AUTO cuctx_ctx ctx = {0};
 *       if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS) {
 *           fprintf(stderr, "%s\n", cuctx_last_error_message());
 *           return 1;
 *       }
 *       cuctx_pop_current();                // created contexts are pushed
 *
 *       CUCTX_SCOPED(ctx) {                 // ctx is current in here
 *           CUCTX_AUTO cuctx_stream s = {0};
 *           CUCTX_AUTO cuctx_event start = {0}, stop = {0};
 *           cuctx_stream_create(&s, ctx, 0, 0);
 *           cuctx_event_create(&start, ctx, 0);
 *           cuctx_event_create(&stop, ctx, 0);
 *           cuctx_event_record(start, s);
 *           cuctx_event_record(stop, s);    // ...work between the two...
 *           cuctx_event_synchronize(stop);
 *           float ms = 0;
 *           if (cuctx_event_elapsed_ms(start, stop, &ms) == CUDA_SUCCESS)
 *               printf("%.3f ms\n", ms);
 *       }                                   // events, then stream destroyed;
 *       return 0;                           // previous context restored
 *   }                                       // ctx destroyed last
 *
 * ==========================================================================
 *  The rules
 * ==========================================================================
 *
 * 1. Declare every CUCTX_AUTO variable initialised, normally to {0}:
 *        CUCTX_AUTO cuctx_event ev = {0};
 *    The cleanup runs on whatever the variable holds when the block exits,
 *    including an early return before the create; {0} is "nothing to do".
 *
 * 2. Cleanup runs in reverse order of declaration. Declare children after
 *    their context so they are destroyed first, while it is alive. Declared
 *    the other way round nothing breaks - the context goes first and its
 *    children's destroys are skipped as stale (the driver freed them with the
 *    context) - but the skip is counted, and CUCTX_LOG=debug reports it.
 *
 *        WRONG (works, but every child is a stale skip):
 *            CUCTX_AUTO cuctx_event ev = {0};
 *            CUCTX_AUTO cuctx_ctx ctx = {0};   // destroyed before ev
 *
 * 3. To hand an object out of its scope, return CUCTX_MOVE(var): it yields
 *    the handle and leaves {0} behind, so the cleanup does nothing.
 *
 * 4. Inside CUCTX_SCOPED(ctx) { ... }, break and continue leave the scope,
 *    not an enclosing loop (the macro is a run-once for loop). CUCTX_GUARD
 *    is a declaration, not a loop, so there break and continue keep their
 *    usual meaning. return and goto out of either restore the context.
 *
 * 5. Cleanup runs when a block is left normally, by return, break, continue
 *    or goto. It does not run on exit(), abort(), longjmp() or a thread that
 *    is cancelled; objects still alive then go with the process.
 *
 * 6. A goto that jumps into the scope of a CUCTX_AUTO variable, past its
 *    declaration, would run the cleanup on an uninitialised handle. clang and
 *    C++ compilers reject it; gcc accepts it silently in C, so do not do it.
 *
 * 7. Host code only. In a .cu file, use the macros in host functions; nvcc
 *    drops the cleanup attribute in __device__ code.
 *
 * 8. A cleanup cannot return an error. Failures in automatic cleanup go to
 *    the error handler (cuctx_set_error_handler), by default one line on
 *    stderr; CUCTX_LOG=quiet|warn|debug sets how much it says.
 *
 * 9. Contexts others can end. A primary context is shared with the CUDA
 *    runtime and every library built on it; a borrowed one (cuctx_ctx_borrow,
 *    or the current context when a create is given {0} and cuctx did not
 *    make it) is owned by someone else. cuctx names each context by the
 *    driver's own id for it (cuCtxGetId, CUDA 12.0 and later: unique in the
 *    process, never reused), recorded when cuctx first meets the context,
 *    and checks that id - one cuCtxGetId - before a child call on such a
 *    context reaches the driver. So a child whose primary or borrowed
 *    context was released by its last holder, reset, or destroyed by its
 *    owner - also when a new context has since taken the address - is never
 *    sent to the driver: its destroy is a counted stale skip, its other calls
 *    fail with CUDA_ERROR_CONTEXT_IS_DESTROYED. cuctx's own last release of a
 *    primary context ends cuctx's retain, not the context: while the runtime
 *    still holds it, children made through cuctx keep working and are freed
 *    by their destroys. Contexts cuctx created are decided by cuctx alone,
 *    with no driver call. What no check can exclude: an owner ending the
 *    context at the same moment as a child call on it, between the check and
 *    the call. With a driver that lacks cuCtxGetId, cuctx knows only what it
 *    did itself: a primary context ends with cuctx's last release, and a
 *    borrowed context's children are skipped once cuctx sees its address
 *    taken by a context cuctx creates or retains; keep such children within
 *    their owner's lifetime there.
 *
 * 10. All functions are thread-safe. A handle may be used from several
 *    threads at once; its destroy waits for uses already under way and
 *    later uses fail with CUDA_ERROR_INVALID_HANDLE. A context destroy waits
 *    for child calls under way on it, and child calls that start after it
 *    fail with CUDA_ERROR_CONTEXT_IS_DESTROYED (destroys are skipped).
 *
 * Errors: every function that can fail returns the driver's own CUresult and
 * records, for the calling thread, cuctx_last_error() and a sentence in
 * cuctx_last_error_message() naming the function, the object and the cause.
 *
 * Driver: cuctx never links libcuda. It opens libcuda.so.1 at run time, or
 * the library named by the environment variable CUCTX_DRIVER (ignored in
 * setuid/setgid programs), and resolves each entry point at a pinned ABI
 * version through cuGetProcAddress.
 */
#ifndef CUCTX_H
#define CUCTX_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  define CUCTX_API
#elif defined(CUCTX_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#  define CUCTX_API __attribute__((visibility("default")))
#else
#  define CUCTX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 *  Errors
 * ------------------------------------------------------------------------ */

/* The calling thread's last failure; CUDA_SUCCESS if none yet. Successful
 * calls leave it unchanged. */
CUCTX_API CUresult cuctx_last_error(void);
/* A sentence about the last failure ("" if none); valid until the calling
 * thread's next failing cuctx call. */
CUCTX_API const char *cuctx_last_error_message(void);
/* "CUDA_ERROR_INVALID_HANDLE" etc.; works with no driver loaded. */
CUCTX_API const char *cuctx_result_name(CUresult rc);

/* Receives failures that have no caller to return to (automatic cleanup).
 * fn == NULL restores the default, which writes one line to stderr. */
typedef void (*cuctx_error_fn)(CUresult rc, const char *message, void *user);
CUCTX_API void cuctx_set_error_handler(cuctx_error_fn fn, void *user);

/* ------------------------------------------------------------------------
 *  Driver
 * ------------------------------------------------------------------------ */

/* Loads the driver and calls cuInit(0), once per process; every other
 * function calls it implicitly. Returns the same result on every call. */
CUCTX_API CUresult cuctx_init(void);
CUCTX_API CUresult cuctx_driver_version(int *out);
/* Any other driver entry point, from the same driver cuctx loaded, resolved
 * through cuGetProcAddress at the given ABI version (the suffix of the
 * PFN_name_vNNNN typedef you will call it through). */
CUCTX_API CUresult cuctx_driver_symbol(const char *name, int version, void **out);

/* ------------------------------------------------------------------------
 *  Handles: one 64-bit id (kind, slot, generation); {0} is "none".
 *  A destroyed, stale, copied-after-destroy or wrong-kind handle is detected
 *  (CUDA_ERROR_INVALID_HANDLE), never dereferenced. Creates leave *out {0}
 *  on failure. Destroys take the handle's address and leave it {0} - also
 *  when they fail - so a later automatic cleanup of it does nothing; a {0}
 *  handle is a no-op returning CUDA_SUCCESS, like free(NULL).
 * ------------------------------------------------------------------------ */

typedef struct cuctx_ctx { uint64_t id; } cuctx_ctx;
typedef struct cuctx_event { uint64_t id; } cuctx_event;
typedef struct cuctx_stream { uint64_t id; } cuctx_stream;
typedef struct cuctx_module { uint64_t id; } cuctx_module;
typedef struct cuctx_mem { uint64_t id; } cuctx_mem;
typedef struct cuctx_host_mem { uint64_t id; } cuctx_host_mem;
typedef struct cuctx_graph_exec { uint64_t id; } cuctx_graph_exec;

/* ------------------------------------------------------------------------
 *  Contexts
 * ------------------------------------------------------------------------ */

#define CUCTX_SCHED_AUTO          0x00u  /* CU_CTX_SCHED_AUTO */
#define CUCTX_SCHED_SPIN          0x01u  /* CU_CTX_SCHED_SPIN */
#define CUCTX_SCHED_YIELD         0x02u  /* CU_CTX_SCHED_YIELD */
#define CUCTX_SCHED_BLOCKING_SYNC 0x04u  /* CU_CTX_SCHED_BLOCKING_SYNC */
#define CUCTX_MAP_HOST            0x08u  /* CU_CTX_MAP_HOST */
#define CUCTX_LMEM_RESIZE_TO_MAX  0x10u  /* CU_CTX_LMEM_RESIZE_TO_MAX */

/* A new owned context with a fresh generation; like cuCtxCreate it is
 * pushed on the calling thread's stack and current. */
CUCTX_API CUresult cuctx_ctx_create(cuctx_ctx *out, CUdevice dev, unsigned flags);
/* Retains dev's primary context (not made current). Each handle holds one
 * retain, released by its destroy. The generation is the driver's (rule 9):
 * it ends when the primary context really ends - its last retain by anyone
 * released, or a reset - not when cuctx's last handle goes while the CUDA
 * runtime or other code still holds it. A later retain of an ended primary
 * context gets a new generation although the address is the same. */
CUCTX_API CUresult cuctx_ctx_primary(cuctx_ctx *out, CUdevice dev);
/* Resets dev's primary context through the driver (cuDevicePrimaryCtxReset:
 * every allocation and object in it is freed) and ends its generation, after
 * child calls under way on it: its children are skipped from then on. A
 * reset does not release retains; primary handles are still destroyed as
 * usual. A reset by anyone else is seen through the context's id. */
CUCTX_API CUresult cuctx_ctx_primary_reset(CUdevice dev);
/* A non-owning handle for a live context owned elsewhere; destroying it
 * never destroys the context. Children made in it are skipped once the
 * owner destroys it (rule 9). */
CUCTX_API CUresult cuctx_ctx_borrow(cuctx_ctx *out, CUcontext raw);
/* Destroys an owned context, releases a primary retain, or drops a borrow;
 * resets *ctx to {0}. A stale handle gives CUDA_ERROR_INVALID_HANDLE. If
 * the driver refuses, its error is returned and counted, and the generation
 * ends all the same: the children are not sent to the driver afterwards. */
CUCTX_API CUresult cuctx_ctx_destroy(cuctx_ctx *ctx);
CUCTX_API CUresult cuctx_ctx_set_current(cuctx_ctx ctx);
CUCTX_API CUresult cuctx_ctx_is_current(cuctx_ctx ctx, int *out);
/* Waits for the context's work; the thread's current context is unchanged. */
CUCTX_API CUresult cuctx_ctx_synchronize(cuctx_ctx ctx);
/* NULL (raw) or -1 (device) with the last error set for a stale handle. */
CUCTX_API CUcontext cuctx_ctx_raw(cuctx_ctx ctx);
CUCTX_API CUdevice cuctx_ctx_device(cuctx_ctx ctx);
/* The calling thread's current context, NULL when none. */
CUCTX_API CUresult cuctx_current_raw(CUcontext *out);
/* Pops the calling thread's current context (undoes the push of create).
 * Refuses (CUDA_ERROR_CONTEXT_IS_DESTROYED) when cuctx knows the current
 * context to be destroyed: the real driver aborts the process there. */
CUCTX_API CUresult cuctx_pop_current(void);

/* ------------------------------------------------------------------------
 *  Child resources. ctx may be {0}: the calling thread's current context.
 *  Each create runs with the owner current and leaves the thread's current
 *  context as it found it; each destroy reaches the driver only while the
 *  owner's generation is alive, and otherwise returns CUDA_SUCCESS.
 * ------------------------------------------------------------------------ */

CUCTX_API CUresult cuctx_event_create(cuctx_event *out, cuctx_ctx ctx, unsigned flags);
CUCTX_API CUresult cuctx_event_destroy(cuctx_event *ev);
/* s = {0}: the owner's default stream. Event and stream must share a
 * context (CUDA_ERROR_INVALID_CONTEXT otherwise). */
CUCTX_API CUresult cuctx_event_record(cuctx_event ev, cuctx_stream s);
CUCTX_API CUresult cuctx_event_synchronize(cuctx_event ev);
/* CUDA_SUCCESS when complete, CUDA_ERROR_NOT_READY when not yet. */
CUCTX_API CUresult cuctx_event_query(cuctx_event ev);
/* The driver's error (CUDA_ERROR_INVALID_HANDLE) for events made with
 * CU_EVENT_DISABLE_TIMING or not yet recorded; *ms untouched then. */
CUCTX_API CUresult cuctx_event_elapsed_ms(cuctx_event start, cuctx_event end, float *ms);
CUCTX_API CUevent cuctx_event_raw(cuctx_event ev);

CUCTX_API CUresult cuctx_stream_create(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority);
CUCTX_API CUresult cuctx_stream_destroy(cuctx_stream *s);
CUCTX_API CUresult cuctx_stream_synchronize(cuctx_stream s);
/* The event may belong to another context or device, as in the driver. */
CUCTX_API CUresult cuctx_stream_wait_event(cuctx_stream s, cuctx_event ev);
CUCTX_API CUstream cuctx_stream_raw(cuctx_stream s);

CUCTX_API CUresult cuctx_module_load(cuctx_module *out, cuctx_ctx ctx, const char *path);
CUCTX_API CUresult cuctx_module_load_data(cuctx_module *out, cuctx_ctx ctx, const void *image);
CUCTX_API CUresult cuctx_module_destroy(cuctx_module *mod);
/* The function stays valid while the module lives. */
CUCTX_API CUresult cuctx_module_function(cuctx_module mod, const char *name, CUfunction *out);
CUCTX_API CUmodule cuctx_module_raw(cuctx_module mod);

CUCTX_API CUresult cuctx_mem_alloc(cuctx_mem *out, cuctx_ctx ctx, size_t bytes);
CUCTX_API CUresult cuctx_mem_destroy(cuctx_mem *m);
CUCTX_API size_t cuctx_mem_size(cuctx_mem m);
CUCTX_API CUdeviceptr cuctx_mem_ptr(cuctx_mem m);

/* flags as cuMemHostAlloc (CU_MEMHOSTALLOC_*); 0 is cuMemAllocHost. */
CUCTX_API CUresult cuctx_host_mem_alloc(cuctx_host_mem *out, cuctx_ctx ctx, size_t bytes, unsigned flags);
CUCTX_API CUresult cuctx_host_mem_destroy(cuctx_host_mem *h);
CUCTX_API size_t cuctx_host_mem_size(cuctx_host_mem h);
CUCTX_API void *cuctx_host_mem_ptr(cuctx_host_mem h);

CUCTX_API CUresult cuctx_graph_exec_instantiate(cuctx_graph_exec *out, cuctx_ctx ctx, CUgraph graph, unsigned long long flags);
CUCTX_API CUresult cuctx_graph_exec_destroy(cuctx_graph_exec *ge);
/* s = {0}: the owner's default stream. Graph exec and stream must share a
 * context (CUDA_ERROR_INVALID_CONTEXT otherwise). */
CUCTX_API CUresult cuctx_graph_exec_launch(cuctx_graph_exec ge, cuctx_stream s);
CUCTX_API CUgraphExec cuctx_graph_exec_raw(cuctx_graph_exec ge);

/* ------------------------------------------------------------------------
 *  Automatic cleanup
 * ------------------------------------------------------------------------ */

/* Destroys the object behind any handle, given the handle's address, and
 * resets it; {0} is a no-op returning CUDA_SUCCESS. */
CUCTX_API CUresult cuctx_destroy(void *handle);
/* The same for cleanup: never aborts; failures go to the error handler. */
CUCTX_API void cuctx_cleanup(void *handle);

/* The state behind CUCTX_SCOPED/CUCTX_GUARD; use the fields through the
 * functions only. */
typedef struct cuctx_scope {
    CUcontext prev_raw;     /* current context at enter */
    uint64_t prev_entry;    /* its registry entry (0: none, or dead at enter) */
    unsigned depth;         /* stack levels cuctx had pushed on this thread at enter */
    int state;              /* CUCTX__SCOPE_* */
} cuctx_scope;
#define CUCTX__SCOPE_FAILED  0  /* enter failed: block skipped, nothing to undo */
#define CUCTX__SCOPE_ENTERED 1  /* entered, block not yet run */
#define CUCTX__SCOPE_RAN     2  /* block ran (run-once loop is done) */
#define CUCTX__SCOPE_EXITED  3

/* Makes ctx current by pushing it on the calling thread's context stack
 * (nothing is pushed when it is current already). On failure returns the
 * error, sets the last error, and leaves state FAILED; a success leaves the
 * last error alone. */
CUCTX_API CUresult cuctx_scope_enter(cuctx_scope *scope, cuctx_ctx ctx);
/* Pops what cuctx pushed on the thread's stack since the enter - the
 * scope's own push, and contexts created inside and still pushed - so the
 * stack below the scope is as it was at enter and the previous context is
 * current again. cuctx never hands the previous context to the driver: if
 * it was destroyed inside the block it stays on the stack where it was,
 * dead (creates given {0} then fail with CUDA_ERROR_CONTEXT_IS_DESTROYED);
 * if a new context has meanwhile taken its address (seen by the driver's
 * id), that slot is popped too rather than leave an unrelated context
 * current. Raw pushes and pops inside the scope must be balanced. A no-op
 * when the enter failed or the scope was exited already. */
CUCTX_API void cuctx_scope_exit(cuctx_scope *scope);

/* ------------------------------------------------------------------------
 *  Diagnostics
 * ------------------------------------------------------------------------ */

struct cuctx_stats {
    size_t contexts;            /* live registered contexts (owned, primary, borrowed) */
    size_t ctx_handles;         /* live cuctx_ctx handles */
    size_t events, streams, modules, mems, host_mems, graph_execs;
    uint64_t stale_skips;       /* child destroys not sent to the driver: context gone
                                   (also, in a forked child, every object of the parent) */
    uint64_t failed_destroys;   /* destroys the driver refused */
    uint64_t shutdown_skips;    /* destroys not sent because the driver had shut down
                                   (process exit): they succeed quietly */
};
CUCTX_API void cuctx_stats_get(struct cuctx_stats *out);

/* ------------------------------------------------------------------------
 *  The macros
 * ------------------------------------------------------------------------ */

#define CUCTX__CAT2(a, b) a##b
#define CUCTX__CAT(a, b) CUCTX__CAT2(a, b)
/* __COUNTER__ so that two macros on one line still get distinct names. */
#define CUCTX__UNIQUE(prefix) CUCTX__CAT(prefix, __COUNTER__)

#if !defined(CUCTX_NO_AUTO)
#  if !defined(__GNUC__) && !defined(__clang__)
#    error "cuctx: this compiler lacks __attribute__((cleanup)); define CUCTX_NO_AUTO to use the plain API without CUCTX_AUTO/CUCTX_SCOPED/CUCTX_GUARD"
#  endif

/* unused: clang before 17 warns on variables only a cleanup reads. */
#define CUCTX_AUTO __attribute__((cleanup(cuctx_cleanup), unused))

/* A statement expression (hence __extension__, for -Wpedantic) that goes
 * through one pointer, so var is evaluated once: CUCTX_MOVE(arr[i++]) works. */
#define CUCTX_MOVE(var)                                                     \
    __extension__({                                                         \
        __typeof__(var) *cuctx__from = &(var);                              \
        __typeof__(var) cuctx__moved = *cuctx__from;                        \
        cuctx__from->id = 0;                                                \
        cuctx__moved;                                                       \
    })

static inline cuctx_scope cuctx__scope_begin(cuctx_ctx ctx)
{
    cuctx_scope s;
    cuctx_scope_enter(&s, ctx);
    return s;
}

/* True once, on the first test of the loop, and only if the enter worked:
 * a failed enter skips the block; break/continue end the loop. */
static inline int cuctx__scope_once(cuctx_scope *s)
{
    if (s->state != CUCTX__SCOPE_ENTERED)
        return 0;
    s->state = CUCTX__SCOPE_RAN;
    return 1;
}

#define CUCTX__SCOPED(ctx, var)                                             \
    for (cuctx_scope var __attribute__((cleanup(cuctx_scope_exit), unused)) \
             = cuctx__scope_begin(ctx);                                     \
         cuctx__scope_once(&var);)

/* CUCTX_SCOPED(ctx) { ... }: the block runs once with ctx current; at every
 * exit the thread's context stack is as it was at entry (see
 * cuctx_scope_exit for what that means when contexts die inside). */
#define CUCTX_SCOPED(ctx) CUCTX__SCOPED(ctx, CUCTX__UNIQUE(cuctx__scope_))

/* CUCTX_GUARD(ctx);: ctx is current to the end of the enclosing block. If it
 * cannot be made current, the rest of the block still runs with the thread's
 * context unchanged; the failure is in cuctx_last_error() and was reported
 * to the error handler. */
#define CUCTX_GUARD(ctx)                                                    \
    cuctx_scope CUCTX__UNIQUE(cuctx__guard_)                                \
        __attribute__((cleanup(cuctx_scope_exit), unused))                  \
        = cuctx__scope_guard(ctx)

CUCTX_API cuctx_scope cuctx__scope_guard(cuctx_ctx ctx);

#endif /* !CUCTX_NO_AUTO */

#ifdef __cplusplus
}
#endif

#endif /* CUCTX_H */
