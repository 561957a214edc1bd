/* SPDX-License-Identifier: MIT */
/*
 * cuctx.h - CUDA Driver API resources that clean themselves up, for C.
 *
 * A Driver API program must release every context, event, stream, module,
 * allocation and graph exec exactly once, on every path out of every
 * function, while its context is still alive; get it wrong and the real
 * driver may crash or free memory that now belongs to someone else. cuctx
 * names each object by a handle, a struct holding one 64-bit id with a
 * generation, so a stale or destroyed handle is caught instead of used, and
 * tethers every child to its context, so a destroy that comes after the
 * context is gone never reaches the driver. On top of that:
 *
 *   CUCTX_AUTO          destroys a handle's object when its variable goes
 *                       out of scope, whichever way control leaves the block;
 *   CUCTX_SCOPED(ctx)   runs a block with ctx current, CUCTX_GUARD(ctx) the
 *                       rest of a block, and both put the old one back;
 *   CUCTX_MOVE(var)     hands an object out of its scope.
 *
 * A complete example (tests/compile_check.sh compiles it from here):
 *
 *   #include <cuctx.h>
 *   #include <stdio.h>
 *
 *   static int fail(const char *what)
 *   {
 *       fprintf(stderr, "%s: %s\n", what, cuctx_last_error_message());
 *       return 1;
 *   }
 *
 *   int main(void)
 *   {
 *       // A context of our own. Like cuCtxCreate, the create also pushes
 *       // it: it is this thread's current context until popped.
 *       CUCTX_AUTO cuctx_ctx mine = {0};
 *       if (cuctx_ctx_create(&mine, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
 *           return fail("create");
 *       cuctx_pop_current();              // undo the push
 *
 *       // The device's primary context, shared with the CUDA runtime:
 *       // the handle holds a retain; the context is NOT made current.
 *       CUCTX_AUTO cuctx_ctx primary = {0};
 *       if (cuctx_ctx_primary(&primary, 0) != CUDA_SUCCESS)
 *           return fail("primary");       // mine is destroyed here too
 *
 *       // A child names its context, current or not. Declared after it,
 *       // it is destroyed before it.
 *       CUCTX_AUTO cuctx_mem buf = {0};
 *       if (cuctx_mem_alloc(&buf, primary, 1 << 20) != CUDA_SUCCESS)
 *           return fail("alloc");
 *
 *       CUCTX_SCOPED(mine) {              // mine is current in here only
 *           CUCTX_AUTO cuctx_event start = {0}, stop = {0};
 *           if (cuctx_event_create(&start, mine, 0) != CUDA_SUCCESS ||
 *               cuctx_event_create(&stop, mine, 0) != CUDA_SUCCESS)
 *               return fail("event");     // the scope is left: mine popped
 *           // (cuctx_stream){0} is the default stream of the event's context.
 *           cuctx_event_record(start, (cuctx_stream){0});
 *           // ... raw driver calls in mine, e.g. a cuLaunchKernel ...
 *           cuctx_event_record(stop, (cuctx_stream){0});
 *           float ms = 0;
 *           if (cuctx_event_synchronize(stop) == CUDA_SUCCESS &&
 *               cuctx_event_elapsed_ms(start, stop, &ms) == CUDA_SUCCESS)
 *               printf("%.3f ms\n", ms);
 *       }                                 // stop, start destroyed; mine popped
 *       return 0;                         // buf freed, primary released,
 *   }                                     // mine destroyed, in that order
 *
 * The rules, in short; cuctx(3) has them in full, under the same numbers:
 *
 *   1. CUCTX_AUTO goes on local, non-const handle variables, declared
 *      initialised (normally {0}); other uses are errors or warnings where
 *      the compiler can tell them, undefined behaviour where it cannot.
 *   2. Cleanup runs in reverse order of declaration: declare children after
 *      their context.
 *   3. CUCTX_MOVE(var) yields the handle and leaves {0}; use its result.
 *   4. break and continue in CUCTX_SCOPED leave the scope; return and goto
 *      out of any macro restore the context.
 *   5. Cleanup does not run on exit(), abort(), longjmp() or cancellation;
 *      nothing of cuctx may be used in a signal handler.
 *   6. Never goto into the scope of a CUCTX_AUTO variable: a goto forward
 *      over its declaration lands in its scope too, and the cleanup runs on
 *      stack garbage (clang refuses; gcc warns only with -Wjump-misses-init,
 *      so turn it on). Declare every CUCTX_AUTO at the top of the function,
 *      initialised, before the first goto; then goto out is safe.
 *   7. Host code only.
 *   8. Failures of automatic cleanup go to the error handler.
 *   9. Contexts others can end (primary, borrowed) are checked by the
 *      driver's id for them before a child call reaches the driver.
 *  10. Every function is thread-safe; a destroy waits for calls under way.
 *  11. fork, cancellation, thread exit and process exit are handled.
 *
 * cuctx(3) also has the ABI kept between releases and a note on
 * thread-local storage and dlclose() for programs that dlopen() the library.
 *
 * Below: the API in the order a program meets it (handles, the macros,
 * contexts, child objects, scopes by hand, errors, the driver, diagnostics,
 * the version), each declaration with its contract; then a marked private
 * part, the machinery the macros expand to, which is not API.
 */
#ifndef CUCTX_H
#define CUCTX_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cuctx_version.h"
#include "cuctx_pfn.h"

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
 *  Handles: one 64-bit id (kind, slot, generation); {0} is "none".
 *  A destroyed, stale, copied-after-destroy or wrong-kind handle is detected
 *  (CUDA_ERROR_INVALID_HANDLE), never dereferenced. Creates leave *out {0}
 *  on failure. Destroys take the handle's address and leave it {0} - also
 *  when they fail - so a later automatic cleanup of it does nothing; a {0}
 *  handle is a no-op returning CUDA_SUCCESS, like free(NULL).
 * ------------------------------------------------------------------------ */

/* Filling a handle. Every create, adopt and cuctx_<kind>_ctx looks first at
 * the handle it fills: one that still holds a live object is refused
 * (CUDA_ERROR_INVALID_VALUE, "... already holds a live object; destroy or
 * CUCTX_MOVE it first") and left as it was, object and all - the one failure
 * that does not leave *out {0}. {0}, a destroyed or stale handle, and a child
 * whose context has ended (its slot is released as its destroy would, with no
 * driver call) are filled. So declare every handle initialised before its
 * create - `cuctx_mem m = {0};`, or with CUCTX_AUTO, which needs it anyway:
 * an uninitialised handle holds whatever the stack held, and a create into
 * it is refused in the rare case that this equals a live id. */

typedef struct cuctx_ctx { uint64_t id; } cuctx_ctx;
typedef struct cuctx_event { uint64_t id; } cuctx_event;
typedef struct cuctx_stream { uint64_t id; } cuctx_stream;
typedef struct cuctx_module { uint64_t id; } cuctx_module;
typedef struct cuctx_mem { uint64_t id; } cuctx_mem;
typedef struct cuctx_host_mem { uint64_t id; } cuctx_host_mem;
typedef struct cuctx_graph_exec { uint64_t id; } cuctx_graph_exec;
typedef struct cuctx_graph { uint64_t id; } cuctx_graph;
typedef struct cuctx_library { uint64_t id; } cuctx_library;
typedef struct cuctx_mem_pool { uint64_t id; } cuctx_mem_pool;
typedef struct cuctx_peer { uint64_t id; } cuctx_peer;

/* ------------------------------------------------------------------------
 *  Automatic cleanup: the macros, and the destroy they call
 * ------------------------------------------------------------------------ */

/* Destroys the object behind any handle, given the handle's address, and
 * resets it; {0} is a no-op returning CUDA_SUCCESS. */
CUCTX_API CUresult cuctx_destroy(void *handle);
/* The same for cleanup: never aborts; failures go to the error handler. */
CUCTX_API void cuctx_cleanup(void *handle);
/* Both are also macros that take a pointer to a cuctx handle and nothing
 * else: cuctx_destroy(&an_int), or a pointer to a const handle, does not
 * compile (C11 _Generic in C, where gcc and clang also offer it before C11;
 * overloads in C++). Code that holds handles of mixed kinds as void *
 * calls the functions themselves, by the parenthesised name:
 * (cuctx_destroy)(p), which checks the kind from the handle's id. Taking
 * their address (cuctx_cleanup as a cleanup attribute's function) is
 * unchanged. */
#if defined(__cplusplus)
#  define cuctx_destroy(handle) cuctx__destroy_typed(handle)
#  define cuctx_cleanup(handle) cuctx__cleanup_typed(handle)
#elif (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L) || defined(__GNUC__) || defined(__clang__)
#  define cuctx_destroy(handle) CUCTX__HANDLE_ONLY(cuctx_destroy, handle)
#  define cuctx_cleanup(handle) CUCTX__HANDLE_ONLY(cuctx_cleanup, handle)
#endif

#if !defined(CUCTX_NO_AUTO)
#  if !defined(__GNUC__) && !defined(__clang__)
#    error "cuctx: this compiler lacks __attribute__((cleanup)); define CUCTX_NO_AUTO to use the plain API without CUCTX_AUTO/CUCTX_MOVE/CUCTX_SCOPED/CUCTX_SCOPED_ELSE/CUCTX_GUARD"
#  endif

/* CUCTX_AUTO cuctx_event ev = {0};: on the declaration of a local handle
 * variable of any kind, destroys its object (cuctx_cleanup) when the
 * variable goes out of scope; the cleanup of {0} does nothing. Anything
 * else - another type, a const handle, a static variable - is refused where
 * the compiler can tell; cuctx(3), rule 1, says which compilers do, how. */
#  define CUCTX_AUTO CUCTX__AUTO

/* CUCTX_MOVE(var): yields the handle in var and leaves {0} behind, so that
 * var's cleanup does nothing: return CUCTX_MOVE(ev); hands the object out.
 * var is evaluated once and must be a non-const handle (an error with
 * every compiler otherwise); a dropped result leaks the object and draws a
 * warning (rule 3). */
#  define CUCTX_MOVE(var) CUCTX__MOVE(var)

/* CUCTX_SCOPED(ctx) { ... }: the block runs once with ctx current; at every
 * exit the thread's context stack is as it was at entry (see
 * cuctx_scope_exit for what that means when contexts die inside). If ctx
 * cannot be made current the block is skipped; the failure is in
 * cuctx_last_error() and was reported to the error handler. break and
 * continue leave the scope (rule 4). */
#  define CUCTX_SCOPED(ctx) CUCTX__SCOPED(ctx, CUCTX__UNIQUE(cuctx__scope_), 1, )

/* CUCTX_SCOPED_ELSE(ctx, on_fail) { ... }: as CUCTX_SCOPED, but when ctx
 * cannot be made current the statement on_fail runs instead of the block,
 * and the error handler is not told (cuctx_last_error() says why):
 *     CUCTX_SCOPED_ELSE(ctx, return cuctx_last_error()) { ... }
 *     CUCTX_SCOPED_ELSE(ctx, goto out) { ... }
 * on_fail may contain commas; it runs before the scope begins, so break,
 * continue, return and goto in it act as just before the macro. */
#  define CUCTX_SCOPED_ELSE(ctx, ...) \
    CUCTX__SCOPED(ctx, CUCTX__UNIQUE(cuctx__scope_), 0, __VA_ARGS__)

/* CUCTX_GUARD(ctx);: ctx is current to the end of the enclosing block. If it
 * cannot be made current, the rest of the block still runs with the thread's
 * context unchanged; the failure is in cuctx_last_error() and was reported
 * to the error handler. A declaration, not a loop: break and continue keep
 * their meaning. */
#  define CUCTX_GUARD(ctx)                                                  \
    cuctx_scope CUCTX__UNIQUE(cuctx__guard_)                                \
        __attribute__((cleanup(cuctx_scope_exit), unused))                  \
        = cuctx__scope_guard(ctx)

/* CUCTX_CAPTURE(s, &graph, mode) { ... }: captures the work the block
 * queues on s into a graph (cuctx_capture_begin), and ends the capture at
 * every exit of the block, so the stream is never left capturing:
 *   - the block's end (or continue): the graph goes to graph, which must
 *     hold no live graph at entry;
 *   - break, return, goto out of it: the capture is abandoned, the graph
 *     destroyed, graph stays {0}, the stream usable;
 *   - a capture the driver invalidated inside (a call the capture forbids,
 *     such as cuMemAlloc under CU_STREAM_CAPTURE_MODE_GLOBAL, answered
 *     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED): graph stays {0}, the error
 *     handler is told, cuctx_last_error() is
 *     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
 * If the capture cannot begin the block is skipped, the handler told and
 * the last error set, as with CUCTX_SCOPED. The block runs in the calling
 * thread's context stack as it was (the capture switches to s's context
 * only for its begin and end). What the driver forbids during a capture
 * (DRIVER-FACTS; tools/facts/free_beside_capture.c, H200): under GLOBAL,
 * from any thread of the process whose own mode is not RELAXED, under
 * THREAD_LOCAL from this thread: allocations and frees - stream-ordered
 * ones on any stream but the capturing one too - page-locked allocations
 * and frees, module and library unloads, graph instantiation and a graph
 * exec's destroy; in every mode cuCtxSynchronize of s's context, and
 * synchronizing or querying s or an event recorded in the capture. Such a
 * call answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and ends the capture.
 * cuctx's calls that make one: cuctx_mem_alloc and the destroy of its
 * memory, cuctx_mem_alloc_async/_from_pool, cuctx_host_mem_alloc and
 * _destroy, cuctx_module_destroy, cuctx_library_destroy,
 * cuctx_graph_exec_instantiate and _destroy, cuctx_ctx_synchronize,
 * cuctx_stream_synchronize(s), cuctx_event_synchronize/_query of a
 * captured event. A free of stream-ordered memory is not lost so: the
 * frees cuctx makes in place of one on the memory's own stream (its stream
 * or context gone) run with the thread's capture mode RELAXED and leave
 * the capture alone; one on its own stream is refused as the program's
 * own would be, ending the capture, and is then made again RELAXED. Where
 * no order serves while a capture runs - a free on a stream whose own
 * capture another call invalidated, or the wait for a non-blocking stream
 * destroyed while capturing, refused in any mode while a stream of its
 * context captures (that refusal ends that capture) - the free is kept,
 * the handle ended all the same, and made once a capture ends
 * (cuctx_capture_end, CUCTX_CAPTURE) or a stream is destroyed
 * (cuctx_stream_destroy); a capture cuctx does not see end (the driver's
 * own cuStreamEndCapture) leaves it kept until one of those. The
 * begin and the end never run beside cuctx_ctx_synchronize of the same
 * context on another thread (the real driver crashes so). */
#  define CUCTX_CAPTURE(s, out, mode) CUCTX__CAPTURE(s, out, mode, CUCTX__UNIQUE(cuctx__capture_), 1, )

/* CUCTX_CAPTURE_ELSE(s, &graph, mode, on_fail) { ... }: as CUCTX_CAPTURE,
 * but when the capture cannot begin, on_fail runs instead of the block
 * (as CUCTX_SCOPED_ELSE's), and an end that yields no graph does not tell
 * the error handler either: the program looks at graph and
 * cuctx_last_error(). */
#  define CUCTX_CAPTURE_ELSE(s, out, mode, ...) \
    CUCTX__CAPTURE(s, out, mode, CUCTX__UNIQUE(cuctx__capture_), 0, __VA_ARGS__)
#endif /* !CUCTX_NO_AUTO */

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
 * retain, released by its destroy. The generation is the driver's (cuctx(3),
 * rule 9): it ends when the primary context really ends - its last retain
 * by anyone released, or a reset - not when cuctx's last handle goes while
 * the CUDA runtime or other code still holds it. A later retain of an ended primary
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
 * owner destroys it (cuctx(3), rule 9). */
CUCTX_API CUresult cuctx_ctx_borrow(cuctx_ctx *out, CUcontext raw);
/* Destroys an owned context, releases a primary retain, or drops a borrow;
 * resets *ctx to {0}. A stale handle gives CUDA_ERROR_INVALID_HANDLE. If
 * the driver refuses, its error is returned and counted, and the generation
 * ends all the same: the children are not sent to the driver afterwards. */
CUCTX_API CUresult cuctx_ctx_destroy(cuctx_ctx *ctx);
CUCTX_API CUresult cuctx_ctx_set_current(cuctx_ctx ctx);
CUCTX_API CUresult cuctx_ctx_is_current(cuctx_ctx ctx, int *out);
/* Waits for the context's work; the thread's current context is unchanged.
 * A capture's begin or end in the same context (cuctx_capture_begin/_end,
 * CUCTX_CAPTURE) waits while it runs, and it waits for them: on the real
 * driver cuCtxSynchronize beside another thread's cuStreamBeginCapture or
 * cuStreamEndCapture in one context crashes (measured). A program's raw
 * calls of either are not covered. */
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
 *  Green contexts (CUDA 12.4+): a part of a device's SMs as a context
 * ------------------------------------------------------------------------ */

/* A green context runs its work on some of the device's SMs only, so that
 * one workload cannot starve another (an inference server's models each in
 * a partition). It is a cuctx_ctx like any other: CUCTX_SCOPED, CUCTX_GUARD,
 * cuctx_ctx_set_current, every create, cuctx_ctx_raw (the CUcontext of
 * cuCtxFromGreenCtx, which the driver's own context calls take; on the
 * H200 it is the same value as the CUgreenCtx, but that is not promised),
 * cuctx_ctx_device, cuctx_ctx_synchronize (its streams' work), the borrow
 * rules (cuctx_stream_ctx of its stream borrows it), the stats
 * (stats.green_contexts) and the leak report ("green"). Unlike
 * cuctx_ctx_create, the create makes nothing current.
 *
 * The driver treats its children two ways (measured on the H200):
 *   - its STREAMS are its own: they die with it and, not destroyed first,
 *     are leaked. So cuctx_ctx_destroy of a green context first destroys
 *     every live stream made in it (cuStreamDestroy; after a
 *     cuStreamSynchronize where stream-ordered memory was allocated on it),
 *     then the green context (cuGreenCtxDestroy). Their handles stay, as a
 *     destroyed context's children's do: their destroy is then a skipped
 *     stale destroy, and their uses CUDA_ERROR_CONTEXT_IS_DESTROYED;
 *   - everything else made in it - events, device and page-locked memory,
 *     modules, graph execs - belongs to the device's primary context
 *     underneath, made with the green context current but tethered to the
 *     primary context's generation: after the green context is destroyed
 *     they work and are freed through the driver while the primary lives
 *     (held by cuctx, by the CUDA runtime, by another green context), and
 *     are skipped once it has ended (the green context held its last
 *     retain, or a reset). cuctx_event_ctx and its kin give the primary
 *     context for them; cuctx_event_record and cuctx_graph_exec_launch take
 *     a stream of the green context (or of another green context over the
 *     same primary) for them, and {0} there is the primary's default
 *     stream. Stream-ordered memory belongs to its pool, as everywhere.
 * A green context made elsewhere (cuctx_ctx_borrow of its CUcontext, or
 * the current context of a create given {0}) is told apart by the driver
 * (cuStreamGetCtx_v2, CUDA 12.5+) and its children tethered the same way;
 * a driver older than 12.5 cannot tell it apart, and cuctx then takes it
 * for a plain context.
 * The green context holds a retain of the primary (cuGreenCtxCreate takes
 * it, cuGreenCtxDestroy gives it back); stats.contexts counts the primary
 * too while children of it live.
 *
 * A green context current on the calling thread when destroyed is popped,
 * as cuCtxDestroy pops an ordinary one (the driver would leave it current,
 * stale: creates would answer 709); on other threads it stays current,
 * stale, as any context destroyed there does. A create in a green context
 * whose destroy is under way on another thread gives
 * CUDA_ERROR_CONTEXT_IS_DESTROYED. A driver older than 12.4 (no
 * cuGreenCtxCreate) or a device without the support gives
 * CUDA_ERROR_NOT_SUPPORTED and a message naming what is missing, as does a
 * cuctx built with CUDA headers older than 12.4. Manual:
 * cuctx_ctx_green(3). */

/* A green context of at least sm_count of dev's SMs: one partition of the
 * device's SM resource (cuDeviceGetDevResource, cuDevSmResourceSplitByCount,
 * which rounds up to the driver's minimum and alignment, e.g. 8 on an H200),
 * its descriptor (cuDevResourceGenerateDesc) and the green context
 * (cuGreenCtxCreate, with CU_GREEN_CTX_DEFAULT_STREAM). Each call splits the
 * whole device afresh: two green contexts made so may share SMs; for
 * partitions apart, split once and use cuctx_ctx_green_desc. More SMs than
 * the device has, or a count no partition fits: CUDA_ERROR_INVALID_VALUE. */
CUCTX_API CUresult cuctx_ctx_green(cuctx_ctx *out, CUdevice dev, unsigned sm_count);
/* The same from a descriptor the caller built (CUDA_ERROR_INVALID_VALUE
 * for NULL), e.g. one of the groups and one of the remaining SMs of one
 * split, each a green context. */
#if CUDA_VERSION >= 12040
CUCTX_API CUresult cuctx_ctx_green_desc(cuctx_ctx *out, CUdevice dev, CUdevResourceDesc desc);
#else
/* (the same type: headers before CUDA 12.4 have no CUdevResourceDesc) */
CUCTX_API CUresult cuctx_ctx_green_desc(cuctx_ctx *out, CUdevice dev, struct CUdevResourceDesc_st *desc);
#endif

/* ------------------------------------------------------------------------
 *  Child resources. ctx may be {0}: the calling thread's current context.
 *  Each create runs with the owner current and leaves the thread's current
 *  context as it found it; each destroy reaches the driver only while the
 *  owner's generation is alive, and otherwise returns CUDA_SUCCESS.
 * ------------------------------------------------------------------------ */

/* The accessors (cuctx_event_raw, cuctx_mem_ptr, cuctx_mem_size, ...) cost
 * a few loads and no driver call: they read the handle's slot without
 * taking it, and a value counts only if the slot still holds the same
 * object afterwards. They give NULL or 0, with the last error set, for a
 * stale handle (CUDA_ERROR_INVALID_HANDLE) and for a child whose context
 * has ended (CUDA_ERROR_CONTEXT_IS_DESTROYED: its object went with the
 * context, though the handle still needs its destroy). For a child of a
 * context others can end (primary, borrowed) they ask the driver whether
 * it lives (cuCtxGetId), as every use does. cuctx_ctx_raw and
 * cuctx_ctx_device likewise. */

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
/* cuStreamDestroy; a non-blocking (or adopted) stream on which
 * stream-ordered memory was allocated first waits for its work, so that
 * memory freed after it is safe (cuctx_mem_alloc_async). A wait that
 * fails (or a stream capturing) does not stop the destroy: its memory's
 * frees then wait for its context instead, and a failed wait goes to the
 * error handler. */
CUCTX_API CUresult cuctx_stream_destroy(cuctx_stream *s);
CUCTX_API CUresult cuctx_stream_synchronize(cuctx_stream s);
/* The event may belong to another context or device, as in the driver. */
CUCTX_API CUresult cuctx_stream_wait_event(cuctx_stream s, cuctx_event ev);
CUCTX_API CUstream cuctx_stream_raw(cuctx_stream s);

CUCTX_API CUresult cuctx_module_load(cuctx_module *out, cuctx_ctx ctx, const char *path);
CUCTX_API CUresult cuctx_module_load_data(cuctx_module *out, cuctx_ctx ctx, const void *image);
CUCTX_API CUresult cuctx_module_destroy(cuctx_module *mod);
/* The function stays valid while the module lives; every failure leaves
 * *out NULL (when out is not NULL). */
CUCTX_API CUresult cuctx_module_function(cuctx_module mod, const char *name, CUfunction *out);
/* A global variable of the module (a __device__ variable): its device
 * address and size, either out may be NULL (cuModuleGetGlobal). Valid while
 * the module lives; CUDA_ERROR_NOT_FOUND for a name it does not have. */
CUCTX_API CUresult cuctx_module_global(cuctx_module mod, const char *name, CUdeviceptr *ptr, size_t *bytes);
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
 * context (CUDA_ERROR_INVALID_CONTEXT otherwise). A launch on a stream
 * handle holds the graph exec and the stream as child calls hold their
 * context, with plain stores (from the second launch of the pair on): a
 * graph exec or stream ever launched so pays for it at its destroy with
 * one membarrier(2), a few us, as a stream that carried stream-ordered
 * memory does (cuctx_mem_alloc_async). */
CUCTX_API CUresult cuctx_graph_exec_launch(cuctx_graph_exec ge, cuctx_stream s);
CUCTX_API CUgraphExec cuctx_graph_exec_raw(cuctx_graph_exec ge);

/* ------------------------------------------------------------------------
 *  Graphs, stream capture, libraries: objects of no context
 * ------------------------------------------------------------------------ */

/* A CUgraph (the description; cuctx_graph_exec is its instantiation in a
 * context). A graph belongs to no context - measured: cuGraphDestroy
 * succeeds after the context it was built in was destroyed - so it is not
 * tethered: it is made with no context current and destroyed through the
 * driver whenever its handle is, with the checks of every handle
 * (generation, CUCTX_AUTO, CUCTX_MOVE, leak report, stats.graphs). Build it
 * with raw calls on cuctx_graph_raw(g), or by capture (CUCTX_CAPTURE);
 * instantiate it with cuctx_graph_exec_instantiate(&ge, ctx,
 * cuctx_graph_raw(g), flags). */
CUCTX_API CUresult cuctx_graph_create(cuctx_graph *out);
CUCTX_API CUresult cuctx_graph_destroy(cuctx_graph *g);
CUCTX_API CUgraph cuctx_graph_raw(cuctx_graph g);

/* The state of a capture by hand; fields through the functions only. */
typedef struct cuctx_capture {
    uint64_t stream;        /* the capturing stream's handle */
    cuctx_graph *out;       /* where the graph goes */
    const char *file, *func;    /* the begin's site, the graph's for the leak report */
    int line;
    int state;              /* CUCTX__CAPTURE_* */
    int report;             /* an end that yields no graph tells the error handler */
    uint64_t cuctx__reserved[2];
} cuctx_capture;

/* Begins capturing the work queued on s into a graph
 * (cuStreamBeginCapture, mode CU_STREAM_CAPTURE_MODE_GLOBAL,
 * _THREAD_LOCAL or _RELAXED, in s's context). s must be a stream of
 * cuctx_stream_create, or adopted owned (the driver cannot capture the
 * legacy default stream; a handle that only tracks a stream made elsewhere
 * is refused, CUDA_ERROR_INVALID_VALUE: its destroy inside the block would
 * leave the stream capturing); *out must hold no live graph (CUDA_ERROR_INVALID_VALUE, *out
 * untouched: "Filling a handle"). On failure the capture is not begun:
 * the error, the last error set, c left ended. */
CUCTX_API CUresult cuctx_capture_begin(cuctx_capture *c, cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode);
/* Ends the capture (cuStreamEndCapture) - always, so the stream is never
 * left capturing. keep != 0: the graph goes to *out; keep == 0 abandons
 * it (cuGraphDestroy), *out stays {0}. A capture the driver invalidated
 * (a call it forbids during capture answered CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
 * yields no graph: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, *out {0}; so does
 * a stream destroyed or a context ended inside the capture (their errors).
 * A no-op returning CUDA_SUCCESS when c is ended already. */
CUCTX_API CUresult cuctx_capture_end(cuctx_capture *c, int keep);

/* A CUlibrary (CUDA 12.0+: cuLibraryLoadFromFile, cuLibraryLoadData of a
 * cubin, fatbin or PTX). A library and its kernels belong to no context -
 * measured: a kernel launches in a context made after the one current at
 * load - so, like a graph, it is not tethered. A PTX that does not
 * assemble loads with success on the real driver, and the failure shows
 * only at the kernel lookup (CUDA_ERROR_INVALID_PTX): cuctx keeps the JIT
 * log of the load and puts it in that lookup's error message. A driver
 * older than 12.0 gives CUDA_ERROR_NOT_SUPPORTED. */
CUCTX_API CUresult cuctx_library_load(cuctx_library *out, const char *path);
CUCTX_API CUresult cuctx_library_load_data(cuctx_library *out, const void *image);
/* The kernel, valid while the library lives, launchable in any context:
 * cuctx_launch(k, ...), or cuLaunchKernel((CUfunction)k, ...). Every
 * failure leaves *out NULL (when out is not NULL). */
CUCTX_API CUresult cuctx_library_kernel(cuctx_library lib, const char *name, CUkernel *out);
CUCTX_API CUresult cuctx_library_destroy(cuctx_library *lib);
CUCTX_API CUlibrary cuctx_library_raw(cuctx_library lib);

/* ------------------------------------------------------------------------
 *  Stream-ordered memory and memory pools (CUDA 11.2+)
 * ------------------------------------------------------------------------ */

/* Memory allocated on a stream (cuMemAllocAsync) is a cuctx_mem like any
 * other - cuctx_mem_ptr, cuctx_mem_size, CUCTX_AUTO, CUCTX_MOVE, the leak
 * report - but its life is its own and its pool's, not its context's:
 * measured, it lives on after the context it was made in is destroyed or
 * reset (a pool belongs to the device), so its destroy frees it through
 * the driver whatever became of that context, with no context current if
 * need be; it is never skipped as a dead context's child is (that would
 * leak it), except in a forked child and after the driver shut down. It
 * counts in stats.async_mems, not stats.mems; cuctx_mem_ctx refuses it.
 *
 * cuctx_mem_destroy(&m), CUCTX_AUTO and cuctx_mem_free_async(&m, {0})
 * free it:
 *   - on the stream it was allocated on, while that stream lives
 *     (cuMemFreeAsync; cuctx holds the stream so that no destroy of it can
 *     come between). While another thread captures that stream, the free
 *     is taken into the capture, as the driver's own would be: it happens
 *     when the graph runs, and never if it does not run (the memory then
 *     stays allocated; cuctx has let go of it);
 *   - once that stream is destroyed - the driver crashes on a free naming
 *     it - on its context's legacy stream (cuMemFreeAsync(p,
 *     CU_STREAM_LEGACY)), which waits for the work of blocking streams,
 *     destroyed ones too (measured). A non-blocking stream's work (or an
 *     adopted stream's, whose flags cuctx does not know) does not run in
 *     that order, and a free beside it hands the memory on while a kernel
 *     queued there may still write it (measured: the next allocation got
 *     the address and the kernel's write). So cuctx_stream_destroy of such
 *     a stream that carried stream-ordered memory first waits for its
 *     work (cuStreamSynchronize): the one wait this adds, and only where a
 *     stream is destroyed with its memory's frees possibly still to come.
 *     (The allocations and frees hold their stream as child calls hold
 *     their context, with plain stores; a stream that was ever so held -
 *     by these or by cuctx_graph_exec_launch - pays for it at its destroy
 *     with one membarrier(2), a few us.)
 *     (A stream handle that only tracks its stream, adopted with owned 0,
 *     ends without it: order the raw stream's work before such frees.)
 *     The legacy stream takes part in captures of blocking streams: a free
 *     there while another thread captures a blocking stream of the same
 *     context is refused (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
 *   - once its context has ended (its work ended with it), on the legacy
 *     stream of its device's primary context while that is active (the
 *     runtime's, cuctx's, or under a green context), made current for the
 *     call: measured, a free ordered on a live context's stream brings the
 *     pool's CU_MEMPOOL_ATTR_USED_MEM_CURRENT down with it; it costs a
 *     cuPointerGetAttribute (the memory's device), a
 *     cuDevicePrimaryCtxGetState and a push and pop;
 *   - else with cuMemFree and no context. The driver returns the memory
 *     then, but its pool's CU_MEMPOOL_ATTR_USED_MEM_CURRENT goes on
 *     counting it (measured).
 * Every free here is a call a capture may forbid (CUCTX_CAPTURE's list):
 * the frees on a legacy stream, that cuMemFree, and the cuCtxSynchronize
 * that first waits for a stream destroyed while it captured run with the
 * calling thread's capture mode RELAXED (cuThreadExchangeStreamCaptureMode,
 * CUDA 10.1+; given back after), so a capture elsewhere or on this thread
 * neither refuses the free nor is ended by it; the free on the memory's
 * own stream runs in the thread's mode, as the program's own would, and
 * where a capture refuses it (ending that capture, as the driver does) is
 * made again RELAXED, so the memory is freed all the same. A synchronize
 * of a context with a capturing stream is still refused
 * (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), in any mode, and so is a free on
 * a stream whose own capture another call invalidated: such a free is
 * kept and made once a capture ends (CUCTX_CAPTURE's comment).
 * A thread whose current context another thread destroyed (say, inside a
 * CUCTX_SCOPED over a context that died) has its cuMemFree and its
 * cuMemFreeAsync on a default stream refused by the driver
 * (CUDA_ERROR_CONTEXT_IS_DESTROYED, nothing freed; measured on the H200,
 * where a cuMemFreeAsync on a live stream was accepted). cuctx then frees
 * again, after any such refusal: on a live stream with that stream's
 * context pushed over the dead level for the call, and where no context
 * is left to push, on a short-lived thread of its own, where nothing is
 * current. The dead level stays as it was.
 * A default stream by name ({0}, CUCTX_STREAM_LEGACY,
 * CUCTX_STREAM_PER_THREAD) is the current context's at the allocation,
 * and its memory is freed on that context's legacy stream. */
CUCTX_API CUresult cuctx_mem_alloc_async(cuctx_mem *out, cuctx_stream s, size_t bytes);
/* From an explicit pool (cuMemAllocFromPoolAsync); pool {0} is the
 * device's current pool, as cuctx_mem_alloc_async. */
CUCTX_API CUresult cuctx_mem_alloc_from_pool(cuctx_mem *out, cuctx_mem_pool pool, cuctx_stream s, size_t bytes);
/* Frees m ordered on s (any live stream of the device; {0}: the stream it
 * was allocated on, as cuctx_mem_destroy) and resets the handle. The free
 * is ordered after s's work alone, as cuMemFreeAsync's: work elsewhere
 * that may still use m must be ordered before it (an event), even when
 * m's own stream is gone - only the {0} form makes the waits above. Memory
 * of cuctx_mem_alloc is refused (CUDA_ERROR_INVALID_VALUE, m kept). */
CUCTX_API CUresult cuctx_mem_free_async(cuctx_mem *m, cuctx_stream s);

/* A pool (cuMemPoolCreate). props NULL: device-local pinned memory of dev.
 * A pool belongs to its device, not to a context (measured), so it has no
 * tether. Destroying it with cuctx memory from it alive ends the handle at
 * once, and the pool with the free of the last of that memory: the driver
 * allows a destroy then, but crashed when several threads did it
 * (measured).
 *
 * A pool cuctx made is never destroyed by the driver: its end *parks* it.
 * On the H200, tests/stress with pools destroyed in the run (every one
 * after its last free, each kept apart from synchronizes and stream and
 * context destroys) crashed the driver in 4 runs of 15, and ran clean in 15
 * of 15 with each destroy made a trim. So the end sets the pool back to
 * new - no device's current pool (the device's default made current
 * again, as the driver's destroy does, where cuDeviceSetMemPool made it
 * current), release threshold 0, cuMemPoolTrimTo(0) (memory whose frees
 * are still queued comes back at the next synchronize), the reuse flags
 * on, the high-water marks reset, other devices' access taken away - and keeps
 * it; the next create with the same props takes it, with no driver call.
 * stats.parked_pools counts them; they are never more than the pools
 * alive at once, hold no memory, and go with the process. A parked pool's
 * CUmemoryPool may come back from a later create: a raw copy kept past
 * the destroy names that pool then. Not parked, destroyed (kept apart as
 * above): a pool whose props allow export (handleTypes not NONE: a parked
 * one would stay open to the processes that imported it), one not at a
 * device location, and one the driver refused to set back (that failure
 * to the error handler). A failure of a destroy at a last allocation's
 * free goes to the error handler too. Memory allocated from a pool by
 * other means (a pool made current with cuDeviceSetMemPool and
 * cuctx_mem_alloc_async) is not counted: allocate with
 * cuctx_mem_alloc_from_pool. stats.mem_pools. */
CUCTX_API CUresult cuctx_mem_pool_create(cuctx_mem_pool *out, CUdevice dev, const CUmemPoolProps *props);
/* The device's default pool, or a pool made elsewhere, as a handle: owned
 * 0 (the default pool always) tracks it only, and its destroy ends the
 * handle alone; owned 1 is destroyed at its end (cuMemPoolDestroy, kept
 * apart as above), never parked: cuctx does not know its props. */
CUCTX_API CUresult cuctx_mem_pool_default(cuctx_mem_pool *out, CUdevice dev);
CUCTX_API CUresult cuctx_mem_pool_adopt(cuctx_mem_pool *out, CUmemoryPool raw, int owned);
CUCTX_API CUresult cuctx_mem_pool_destroy(cuctx_mem_pool *p);
/* cuMemPoolTrimTo: gives memory the pool holds unused back to the device,
 * keeping at least keep bytes. */
CUCTX_API CUresult cuctx_mem_pool_trim(cuctx_mem_pool p, size_t keep);
CUCTX_API CUmemoryPool cuctx_mem_pool_raw(cuctx_mem_pool p);

/* ------------------------------------------------------------------------
 *  Across contexts and processes: peer access and CUDA IPC
 * ------------------------------------------------------------------------ */

/* Peer access as an object: the memory of `to`'s device becomes reachable
 * from `from` (cuCtxEnablePeerAccess(to's context, 0) with from current;
 * from {0}: the current context). Its destroy - cuctx_peer_destroy,
 * cuctx_destroy, CUCTX_AUTO - disables it (cuCtxDisablePeerAccess naming
 * to, with from current). Peer access is state of the pair and ends with
 * either context (documented), so the handle is tethered to BOTH: its
 * destroy reaches the driver only while both contexts live, and is skipped
 * (CUDA_SUCCESS, counted in stats.stale_skips) once either has ended, in
 * whichever order they went - never a disable naming a dead context, or a
 * new one at its address. Access is one way: the other way is another
 * peer. Access already enabled by someone else
 * (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: the CUDA runtime's
 * cudaDeviceEnablePeerAccess between primary contexts, another library,
 * another cuctx_peer) is borrowed: the create succeeds, the handle tracks
 * it (its destroy never disables it) and cuctx_peer_owned says 0.
 * Refused: from and to the same context (CUDA_ERROR_INVALID_VALUE, before
 * the driver); devices without a peer path, and two contexts of one
 * device (the driver's CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, and a message
 * saying which devices); a stale handle or an ended context as for any
 * create. CUDA 4.0 and later; stats.peers. */
CUCTX_API CUresult cuctx_peer_enable(cuctx_peer *out, cuctx_ctx from, cuctx_ctx to);
CUCTX_API CUresult cuctx_peer_destroy(cuctx_peer *p);
/* *owned: 1 if the handle's destroy disables the access (cuctx enabled
 * it), 0 if it was borrowed. Either context ended: CUDA_ERROR_CONTEXT_IS_DESTROYED. */
CUCTX_API CUresult cuctx_peer_owned(cuctx_peer p, int *owned);

/* CUDA IPC: device memory and events shared with another process.
 *
 * cuctx_ipc_mem_get gives the handle of memory of cuctx_mem_alloc (or
 * adopted from cuMemAlloc) for another process (cuIpcGetMemHandle, in its
 * context); stream-ordered memory and memory opened from another process
 * are refused (CUDA_ERROR_INVALID_VALUE). cuctx_ipc_mem_open maps such a
 * handle into ctx ({0}: the current context; cuIpcOpenMemHandle with ctx
 * current; flags 0 or CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, as the
 * driver's). The mapping is a cuctx_mem like any other - cuctx_mem_ptr,
 * cuctx_mem_size (cuMemGetAddressRange asked at the open), cuctx_mem_ctx,
 * CUCTX_AUTO - and a child of ctx: its destroy closes it
 * (cuIpcCloseMemHandle with ctx current), and is skipped once ctx has ended
 * (the mapping went with it). It counts in stats.ipc_mems, not stats.mems.
 * A handle opened twice in one context is one mapping, counted by the
 * driver: each open's handle closes once.
 *
 * The importer's side depends on the exporter: memory the exporter frees
 * or loses (its process exits) while mapped elsewhere is undefined
 * behaviour for the importer (documented); keep the exporter's memory alive
 * until every importer has closed its mapping. The driver refuses a handle
 * in the process that made it: open it in another process (spawn it - CUDA
 * does not survive fork). The same for events: cuctx_ipc_event_get of an
 * event made with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING
 * (cuIpcGetEventHandle), cuctx_ipc_event_open into a cuctx_event of ctx
 * (cuIpcOpenEventHandle; untimed, destroyed with cuEventDestroy, skipped
 * after ctx ended, as any event). On failure *out is zeroed. CUDA 4.1 and
 * later (the open of memory: CUDA 11.0). */
CUCTX_API CUresult cuctx_ipc_mem_get(cuctx_mem m, CUipcMemHandle *out);
CUCTX_API CUresult cuctx_ipc_mem_open(cuctx_mem *out, cuctx_ctx ctx, CUipcMemHandle h, unsigned flags);
CUCTX_API CUresult cuctx_ipc_event_get(cuctx_event ev, CUipcEventHandle *out);
CUCTX_API CUresult cuctx_ipc_event_open(cuctx_event *out, cuctx_ctx ctx, CUipcEventHandle h);

/* ------------------------------------------------------------------------
 *  Launches
 * ------------------------------------------------------------------------ */

/* A grid or block size, as CUDA's dim3: {x, y, z}; give all three
 * ({n, 1, 1}), since 0 is a size the driver refuses. */
typedef struct cuctx_dim3 { unsigned x, y, z; } cuctx_dim3;

/* cuLaunchKernel(f, grid, block, shared_bytes, s, args, NULL) in the
 * stream's context: if another context is current it is pushed for the
 * launch and the thread's stack is left as it was. A stale stream, or one
 * whose context has ended, is refused before the driver
 * (CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_CONTEXT_IS_DESTROYED); s = {0} is
 * the current context's default stream, as in the driver, and so are
 * CUCTX_STREAM_LEGACY and CUCTX_STREAM_PER_THREAD (below). f must belong to
 * a module of the stream's context; NULL is CUDA_ERROR_INVALID_VALUE. args
 * as cuLaunchKernel's kernelParams. */
CUCTX_API CUresult cuctx_launch(CUfunction f, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block,
                                size_t shared_bytes, void **args);
/* The same for a library's kernel (cuctx_library_kernel), which launches in
 * whichever context the stream belongs to. cuctx_launch itself takes a
 * CUkernel too (a C11 _Generic in C, an overload in C++) and calls this. */
CUCTX_API CUresult cuctx_launch_kernel(CUkernel k, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block,
                                       size_t shared_bytes, void **args);
#if defined(__cplusplus)
extern "C++" {
static inline CUresult cuctx_launch(CUkernel k, cuctx_stream s, cuctx_dim3 grid, cuctx_dim3 block,
                                    size_t shared_bytes, void **args)
{
    return cuctx_launch_kernel(k, s, grid, block, shared_bytes, args);
}
}
#elif (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L) || defined(__GNUC__) || defined(__clang__)
#  define cuctx_launch(f, ...) \
    __extension__ _Generic((f), CUkernel: cuctx_launch_kernel, default: cuctx_launch)((f), __VA_ARGS__)
#endif

/* ------------------------------------------------------------------------
 *  Handles from elsewhere: a child's context, objects made outside cuctx,
 *  the default streams by name
 * ------------------------------------------------------------------------ */

/* A borrowed handle of the context h belongs to, in *out (see "Filling a
 * handle"): a function given a stream can create in the stream's context.
 * Destroying that handle (or its CUCTX_AUTO cleanup) never ends the
 * context, as for cuctx_ctx_borrow; its children are tethered as any
 * other's. A stale h gives CUDA_ERROR_INVALID_HANDLE, one whose context
 * has ended CUDA_ERROR_CONTEXT_IS_DESTROYED; *out is {0} then. */
CUCTX_API CUresult cuctx_event_ctx(cuctx_event h, cuctx_ctx *out);
CUCTX_API CUresult cuctx_stream_ctx(cuctx_stream h, cuctx_ctx *out);
CUCTX_API CUresult cuctx_module_ctx(cuctx_module h, cuctx_ctx *out);
CUCTX_API CUresult cuctx_mem_ctx(cuctx_mem h, cuctx_ctx *out);
CUCTX_API CUresult cuctx_host_mem_ctx(cuctx_host_mem h, cuctx_ctx *out);
CUCTX_API CUresult cuctx_graph_exec_ctx(cuctx_graph_exec h, cuctx_ctx *out);

/* A handle for a stream, event or device allocation made elsewhere (the
 * CUDA runtime, another library), as a child of ctx ({0}: the current
 * context, as for creates), which must be the context it was made in; the
 * driver is not asked. owned != 0: the handle owns it - its destroy
 * destroys it (cuStreamDestroy, cuEventDestroy, cuMemFree), tethered as a
 * created one's: skipped once its context has ended. owned == 0: the
 * handle only tracks it - its destroy ends the handle and never calls the
 * driver - while every use is still checked against the context's
 * generation. Adopt an object owned once at most: two owning handles
 * destroy it twice. NULL or 0 is refused (CUDA_ERROR_INVALID_VALUE), and so
 * are CU_STREAM_LEGACY and CU_STREAM_PER_THREAD, which are no objects (see
 * CUCTX_STREAM_LEGACY). bytes is what cuctx_mem_size will say. */
CUCTX_API CUresult cuctx_stream_adopt(cuctx_stream *out, cuctx_ctx ctx, CUstream raw, int owned);
CUCTX_API CUresult cuctx_event_adopt(cuctx_event *out, cuctx_ctx ctx, CUevent raw, int owned);
CUCTX_API CUresult cuctx_mem_adopt(cuctx_mem *out, cuctx_ctx ctx, CUdeviceptr p, size_t bytes, int owned);

/* The default streams by name, as cuctx_stream values (initialisers and
 * arguments: `cuctx_stream s = CUCTX_STREAM_LEGACY;`). Each names the
 * default stream of whichever context a call runs in: cuctx_launch in the
 * current one, cuctx_event_record and cuctx_graph_exec_launch in the
 * event's or graph exec's context, as with (cuctx_stream){0} - the
 * driver's NULL stream, still accepted there - and cuctx_stream_synchronize
 * and cuctx_stream_wait_event in the calling thread's current context.
 * cuctx_stream_raw gives CU_STREAM_LEGACY and CU_STREAM_PER_THREAD for
 * them; destroying one does nothing and returns CUDA_SUCCESS (a CUCTX_AUTO
 * handle may hold one); cuctx_stream_ctx refuses them, as they belong to
 * no one context. */
#ifdef __cplusplus
#  define CUCTX_STREAM_LEGACY (cuctx_stream{CUCTX__STREAM_LEGACY_ID})
#  define CUCTX_STREAM_PER_THREAD (cuctx_stream{CUCTX__STREAM_PER_THREAD_ID})
#else
/* A compound literal: in ISO C not a constant expression, so a static
 * object initialised with one is a gcc and clang extension, which gcc's
 * -Wpedantic names; automatic variables and arguments are plain C. */
#  define CUCTX_STREAM_LEGACY ((cuctx_stream){CUCTX__STREAM_LEGACY_ID})
#  define CUCTX_STREAM_PER_THREAD ((cuctx_stream){CUCTX__STREAM_PER_THREAD_ID})
#endif

/* ------------------------------------------------------------------------
 *  Create sites. Every create above is also a macro over its _at function,
 *  which records the caller's file, line and function for the leak report
 *  (CUCTX_LEAK_CHECK, cuctx_leak_report): nothing for the caller to write.
 *  The plain functions stay in the library, for other languages and for
 *  taking their address; (cuctx_event_create)(...) calls one directly, and
 *  CUCTX_NO_SITES defined before the include drops the macros.
 * ------------------------------------------------------------------------ */

CUCTX_API CUresult cuctx_ctx_create_at(cuctx_ctx *out, CUdevice dev, unsigned flags,
                                       const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_ctx_primary_at(cuctx_ctx *out, CUdevice dev, const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_ctx_borrow_at(cuctx_ctx *out, CUcontext raw, const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_ctx_green_at(cuctx_ctx *out, CUdevice dev, unsigned sm_count, const char *file, int line,
                                      const char *func);
CUCTX_API CUresult cuctx_ctx_green_desc_at(cuctx_ctx *out, CUdevice dev, struct CUdevResourceDesc_st *desc,
                                           const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_event_create_at(cuctx_event *out, cuctx_ctx ctx, unsigned flags,
                                         const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_stream_create_at(cuctx_stream *out, cuctx_ctx ctx, unsigned flags, int priority,
                                          const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_module_load_at(cuctx_module *out, cuctx_ctx ctx, const char *path,
                                        const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_module_load_data_at(cuctx_module *out, cuctx_ctx ctx, const void *image,
                                             const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_mem_alloc_at(cuctx_mem *out, cuctx_ctx ctx, size_t bytes,
                                      const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_host_mem_alloc_at(cuctx_host_mem *out, cuctx_ctx ctx, size_t bytes, unsigned flags,
                                           const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_graph_exec_instantiate_at(cuctx_graph_exec *out, cuctx_ctx ctx, CUgraph graph,
                                                   unsigned long long flags, const char *file, int line,
                                                   const char *func);
CUCTX_API CUresult cuctx_graph_create_at(cuctx_graph *out, const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_capture_begin_at(cuctx_capture *c, cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode,
                                          const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_library_load_at(cuctx_library *out, const char *path, const char *file, int line,
                                         const char *func);
CUCTX_API CUresult cuctx_library_load_data_at(cuctx_library *out, const void *image, const char *file, int line,
                                              const char *func);
CUCTX_API CUresult cuctx_mem_alloc_async_at(cuctx_mem *out, cuctx_stream s, size_t bytes, const char *file, int line,
                                            const char *func);
CUCTX_API CUresult cuctx_mem_alloc_from_pool_at(cuctx_mem *out, cuctx_mem_pool pool, cuctx_stream s, size_t bytes,
                                                const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_mem_pool_create_at(cuctx_mem_pool *out, CUdevice dev, const CUmemPoolProps *props,
                                            const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_mem_pool_default_at(cuctx_mem_pool *out, CUdevice dev, const char *file, int line,
                                             const char *func);
CUCTX_API CUresult cuctx_peer_enable_at(cuctx_peer *out, cuctx_ctx from, cuctx_ctx to, const char *file, int line,
                                        const char *func);
CUCTX_API CUresult cuctx_ipc_mem_open_at(cuctx_mem *out, cuctx_ctx ctx, CUipcMemHandle h, unsigned flags,
                                         const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_ipc_event_open_at(cuctx_event *out, cuctx_ctx ctx, CUipcEventHandle h, const char *file,
                                           int line, const char *func);

/* The adopts record their site as the creates do. */
CUCTX_API CUresult cuctx_stream_adopt_at(cuctx_stream *out, cuctx_ctx ctx, CUstream raw, int owned,
                                         const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_event_adopt_at(cuctx_event *out, cuctx_ctx ctx, CUevent raw, int owned,
                                        const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_mem_adopt_at(cuctx_mem *out, cuctx_ctx ctx, CUdeviceptr p, size_t bytes, int owned,
                                      const char *file, int line, const char *func);
CUCTX_API CUresult cuctx_mem_pool_adopt_at(cuctx_mem_pool *out, CUmemoryPool raw, int owned, const char *file,
                                           int line, const char *func);

#if !defined(CUCTX_NO_SITES)
#  define cuctx_stream_adopt(out, ctx, raw, owned) cuctx_stream_adopt_at(out, ctx, raw, owned, CUCTX__SITE)
#  define cuctx_event_adopt(out, ctx, raw, owned) cuctx_event_adopt_at(out, ctx, raw, owned, CUCTX__SITE)
#  define cuctx_mem_adopt(out, ctx, p, bytes, owned) cuctx_mem_adopt_at(out, ctx, p, bytes, owned, CUCTX__SITE)
#  define cuctx_mem_pool_adopt(out, raw, owned) cuctx_mem_pool_adopt_at(out, raw, owned, CUCTX__SITE)
#endif

#if !defined(CUCTX_NO_SITES)
#  define cuctx_ctx_create(out, dev, flags) cuctx_ctx_create_at(out, dev, flags, CUCTX__SITE)
#  define cuctx_ctx_primary(out, dev) cuctx_ctx_primary_at(out, dev, CUCTX__SITE)
#  define cuctx_ctx_borrow(out, raw) cuctx_ctx_borrow_at(out, raw, CUCTX__SITE)
#  define cuctx_ctx_green(out, dev, sm_count) cuctx_ctx_green_at(out, dev, sm_count, CUCTX__SITE)
#  define cuctx_ctx_green_desc(out, dev, desc) cuctx_ctx_green_desc_at(out, dev, desc, CUCTX__SITE)
#  define cuctx_event_create(out, ctx, flags) cuctx_event_create_at(out, ctx, flags, CUCTX__SITE)
#  define cuctx_stream_create(out, ctx, flags, priority) \
       cuctx_stream_create_at(out, ctx, flags, priority, CUCTX__SITE)
#  define cuctx_module_load(out, ctx, path) cuctx_module_load_at(out, ctx, path, CUCTX__SITE)
#  define cuctx_module_load_data(out, ctx, image) cuctx_module_load_data_at(out, ctx, image, CUCTX__SITE)
#  define cuctx_mem_alloc(out, ctx, bytes) cuctx_mem_alloc_at(out, ctx, bytes, CUCTX__SITE)
#  define cuctx_host_mem_alloc(out, ctx, bytes, flags) cuctx_host_mem_alloc_at(out, ctx, bytes, flags, CUCTX__SITE)
#  define cuctx_graph_exec_instantiate(out, ctx, graph, flags) \
       cuctx_graph_exec_instantiate_at(out, ctx, graph, flags, CUCTX__SITE)
#  define cuctx_graph_create(out) cuctx_graph_create_at(out, CUCTX__SITE)
#  define cuctx_capture_begin(c, s, out, mode) cuctx_capture_begin_at(c, s, out, mode, CUCTX__SITE)
#  define cuctx_library_load(out, path) cuctx_library_load_at(out, path, CUCTX__SITE)
#  define cuctx_library_load_data(out, image) cuctx_library_load_data_at(out, image, CUCTX__SITE)
#  define cuctx_mem_alloc_async(out, s, bytes) cuctx_mem_alloc_async_at(out, s, bytes, CUCTX__SITE)
#  define cuctx_mem_alloc_from_pool(out, pool, s, bytes) \
       cuctx_mem_alloc_from_pool_at(out, pool, s, bytes, CUCTX__SITE)
#  define cuctx_mem_pool_create(out, dev, props) cuctx_mem_pool_create_at(out, dev, props, CUCTX__SITE)
#  define cuctx_mem_pool_default(out, dev) cuctx_mem_pool_default_at(out, dev, CUCTX__SITE)
#  define cuctx_peer_enable(out, from, to) cuctx_peer_enable_at(out, from, to, CUCTX__SITE)
#  define cuctx_ipc_mem_open(out, ctx, h, flags) cuctx_ipc_mem_open_at(out, ctx, h, flags, CUCTX__SITE)
#  define cuctx_ipc_event_open(out, ctx, h) cuctx_ipc_event_open_at(out, ctx, h, CUCTX__SITE)
#endif

/* ------------------------------------------------------------------------
 *  Scopes by hand: the functions behind CUCTX_SCOPED and CUCTX_GUARD
 * ------------------------------------------------------------------------ */

/* The state behind CUCTX_SCOPED/CUCTX_GUARD; use the fields through the
 * functions only. */
typedef struct cuctx_scope {
    CUcontext prev_raw;     /* current context at enter */
    uint64_t prev_entry;    /* its registry entry (0: none, dead at enter, or not identified) */
    unsigned long long prev_ctx_id; /* its driver id if others can end it; 0: cuctx's own */
    unsigned depth;         /* stack levels cuctx had pushed on this thread at enter */
    int state;              /* CUCTX__SCOPE_* */
    /* Room for later versions (the size is compiled into callers; cuctx(3),
     * "Versions and ABI"): the enter zeroes it; nothing reads it yet. */
    uint64_t cuctx__reserved[2];
} cuctx_scope;

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
/* The same with cuGetProcAddress's flags: CU_GET_PROC_ADDRESS_DEFAULT (what
 * cuctx_driver_symbol passes), CU_GET_PROC_ADDRESS_LEGACY_STREAM or
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (the _ptds/_ptsz variants,
 * typed PFN_name_vNNNN_ptds or _ptsz). Other flags: CUDA_ERROR_INVALID_VALUE. */
CUCTX_API CUresult cuctx_driver_symbol_flags(const char *name, int version, unsigned long long flags, void **out);

/* ------------------------------------------------------------------------
 *  Raw driver calls through the same driver
 * ------------------------------------------------------------------------ */

/* CUCTX_CALL(name, args...) calls the driver entry point name through the
 * driver cuctx loaded (libcuda.so.1 or CUCTX_DRIVER), so a program's own
 * calls and cuctx's reach one driver without linking libcuda:
 *
 *     CUresult rc = CUCTX_CALL(cuMemcpyHtoD, cuctx_mem_ptr(buf), host, bytes);
 *
 * name is the documented name (cuMemcpyHtoD, cuCtxCreate), not a _v2 form;
 * the call goes through the PFN typedef of the ABI that cuda.h's prototype
 * has (cudaTypedefs.h; for CUDA 13 headers, which no longer name it, the
 * table in cuctx_pfn.h), so wrong arguments do not compile, and the entry
 * point is resolved at that ABI version. With CUDA_API_PER_THREAD_DEFAULT_STREAM
 * defined before the include it is the per-thread-default-stream variant
 * (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM), as cuda.h's own names are.
 * Each call site resolves its entry point once, on first use, and keeps it
 * (thread-safe); the value is the driver's CUresult. When cuctx cannot
 * start or the driver lacks the entry point, nothing is called: the value
 * is that error (CUDA_ERROR_NOT_FOUND for a missing entry point) and the
 * last error says which. An expression (a GNU statement expression: gcc,
 * clang, their C++ and nvcc's host code); for an entry point without
 * arguments write CUCTX_CALL(cuCtxSynchronize, ), since C before C23 wants
 * the comma. */
#define CUCTX_CALL(name, ...)                                               \
    CUCTX__CALL(#name, CUCTX__PFN_PICK(PFN_##name, CUCTX__PFN_##name), __VA_ARGS__)

/* ------------------------------------------------------------------------
 *  Diagnostics
 * ------------------------------------------------------------------------ */

struct cuctx_stats {
    size_t contexts;            /* live contexts in use through cuctx (owned, primary, borrowed, green):
                                   named by a live cuctx_ctx handle or a live child */
    size_t ctx_handles;         /* live cuctx_ctx handles */
    size_t events, streams, modules, mems, host_mems, graph_execs;
    uint64_t stale_skips;       /* child destroys not sent to the driver: context gone
                                   (also, in a forked child, every object of the parent) */
    uint64_t failed_destroys;   /* destroys the driver refused */
    uint64_t shutdown_skips;    /* destroys not sent because the driver had shut down
                                   (process exit): they succeed quietly */
    size_t graphs, libraries;   /* live objects of no context (appended after the 0.1.0 fields) */
    size_t async_mems, mem_pools;   /* stream-ordered allocations (not in mems) and memory pools */
    size_t green_contexts;      /* live green contexts made through cuctx (in contexts and ctx_handles too) */
    size_t peers, ipc_mems;     /* peer access objects; memory opened from another process (not in mems) */
    size_t parked_pools;        /* pools cuctx made whose end kept them for reuse (cuctx_mem_pool_create):
                                   not live, holding no memory */
};
/* cuctx_stats_get(&st) fills st. The object counts are cheap at any number
 * of objects (each thread keeps its own); contexts walks the handle table,
 * after asking the driver (cuCtxGetId) whether each primary or borrowed
 * context still lives. All exact while no other thread creates or
 * destroys. The handle table itself costs 64 bytes per slot at the most
 * objects ever alive at once, up to 2^26 slots (4 GiB), and is not given
 * back: a stale handle may still be checked against its slot.
 * Later versions add fields at the end of struct cuctx_stats only. The macro
 * passes the size the program was compiled with: the library writes that
 * many bytes - the fields it knows, zero for any it does not - and returns
 * how many of them it filled (the smaller of size and its own size). */
CUCTX_API size_t cuctx_stats_get_sized(struct cuctx_stats *out, size_t size);
#define cuctx_stats_get(out) ((void)cuctx_stats_get_sized((out), sizeof *(out)))
/* Writes one line per live object - kind, driver handle, cuctx handle,
 * owning context, and the file:line and function of its create - then a
 * count, to out (stderr if NULL). With the environment variable
 * CUCTX_LEAK_CHECK=1 the same report is written to stderr at process exit
 * (before cuctx's own exit hook stops calling the driver); the exit status
 * is not changed. Call it while no other thread creates or destroys. */
CUCTX_API void cuctx_leak_report(FILE *out);

/* ------------------------------------------------------------------------
 *  Version
 * ------------------------------------------------------------------------ */

/* The library's version, "MAJOR.MINOR.PATCH", and the same as 0xMMmmpp:
 * compare cuctx_version_hex() with CUCTX_VERSION_HEX, the header's, to see
 * whether the program runs with the library it was built against. */
CUCTX_API const char *cuctx_version(void);
CUCTX_API unsigned cuctx_version_hex(void);

/* ========================================================================
 *  Private: nothing below is API. The cuctx__ and CUCTX__ names are what
 *  the macros above expand to; they may change in any release. (A macro
 *  may name a helper defined later, since it expands where it is used;
 *  the inline functions here are each defined before their first use.)
 * ======================================================================== */

/* The ids of CUCTX_STREAM_LEGACY and CUCTX_STREAM_PER_THREAD: stream ids
 * (kind 3) of slots 0 and 1 at generation 0, which no live handle has. */
#define CUCTX__STREAM_LEGACY_ID UINT64_C(0x0c00000000000000)
#define CUCTX__STREAM_PER_THREAD_ID UINT64_C(0x0c00000100000000)

/* The states of cuctx_capture.state. */
#define CUCTX__CAPTURE_ENDED   0  /* not begun, failed to begin, or ended */
#define CUCTX__CAPTURE_BEGUN   1  /* capturing, block not yet run */
#define CUCTX__CAPTURE_RUNNING 2  /* capturing, block running */

/* The states of cuctx_scope.state. */
#define CUCTX__SCOPE_FAILED  0  /* enter failed: block skipped, nothing to undo */
#define CUCTX__SCOPE_ENTERED 1  /* entered, block not yet run */
#define CUCTX__SCOPE_RAN     2  /* block ran (run-once loop is done) */
#define CUCTX__SCOPE_EXITED  3

#if !defined(CUCTX_NO_SITES)
/* The create site the create macros pass to the _at functions. */
#  define CUCTX__SITE __FILE__, __LINE__, __func__
#endif

#define CUCTX__CAT2(a, b) a##b
#define CUCTX__CAT(a, b) CUCTX__CAT2(a, b)
/* __COUNTER__ so that two macros on one line still get distinct names. */
#define CUCTX__UNIQUE(prefix) CUCTX__CAT(prefix, __COUNTER__)

/* Every handle type but cuctx_ctx, one line each - X(name, arg) for
 * cuctx_<name> - so that the typed destroy, CUCTX_AUTO and CUCTX_MOVE take
 * a new kind from one line here. arg is passed on to X. */
#define CUCTX__CHILD_HANDLES(X, arg)                                       \
    X(event, arg) X(stream, arg) X(module, arg) X(mem, arg) X(host_mem, arg) \
    X(graph_exec, arg) X(graph, arg) X(library, arg) X(mem_pool, arg) X(peer, arg)

/* The typed cuctx_destroy and cuctx_cleanup. C: _Generic selects the
 * function itself for a pointer to a (non-const) handle and has no other
 * association, so anything else is an error; it does not evaluate its
 * controlling expression, so handle is evaluated once, in the call. The
 * function's name inside its own macro does not expand again. */
#define CUCTX__HANDLE_ONLY(fn, handle)                                      \
    __extension__ _Generic((handle),                                        \
        cuctx_ctx *: fn CUCTX__CHILD_HANDLES(CUCTX__ASSOC_FN, fn))(handle)
#define CUCTX__ASSOC_FN(name, fn) , cuctx_##name *: fn
#if defined(__cplusplus)
/* C++: one overload per handle pointer and none taking void *, so a
 * pointer to anything else matches none. */
#  define CUCTX__TYPED_DESTROY(type)                                        \
    static inline CUresult cuctx__destroy_typed(type *h) { return (cuctx_destroy)(h); } \
    static inline void cuctx__cleanup_typed(type *h) { (cuctx_cleanup)(h); }
extern "C++" {  /* overloads, inside the header's extern "C" */
#  define CUCTX__TYPED_DESTROY_OF(name, _) CUCTX__TYPED_DESTROY(cuctx_##name)
CUCTX__TYPED_DESTROY(cuctx_ctx)
CUCTX__CHILD_HANDLES(CUCTX__TYPED_DESTROY_OF, _)
}
#  undef CUCTX__TYPED_DESTROY_OF
#  undef CUCTX__TYPED_DESTROY
#endif

/* CUCTX_CALL. The name is only ever stringified or pasted in CUCTX_CALL
 * itself: passed on, it would expand through cuda.h's renames
 * (cuMemcpyHtoD -> cuMemcpyHtoD_v2). CUDA 11.3 to 12.x's cudaTypedefs.h
 * defines PFN_<name> as the typedef of cuda.h's prototype
 * (PFN_cuMemcpyHtoD_v3020, or _v7000_ptds per-thread); CUDA 13's does not,
 * and cuctx_pfn.h's CUCTX__PFN_<name> (from the same typedefs) stands in.
 * Both arguments of the pick are expanded, only the chosen one is used. */
#if defined(PFN_cuGetErrorString)
#  define CUCTX__PFN_PICK(toolkit, cuctx) toolkit
#else
#  define CUCTX__PFN_PICK(toolkit, cuctx) cuctx
#endif
#define CUCTX__PFN_PLAIN(n, d) PFN_##n##_v##d
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#  define CUCTX__PFN_PTDS(n, d, p) PFN_##n##_v##p##_ptds
#  define CUCTX__PFN_PTSZ(n, d, p) PFN_##n##_v##p##_ptsz
#  define CUCTX__CALL_FLAGS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#else
#  define CUCTX__PFN_PTDS(n, d, p) PFN_##n##_v##d
#  define CUCTX__PFN_PTSZ(n, d, p) PFN_##n##_v##d
#  define CUCTX__CALL_FLAGS CU_GET_PROC_ADDRESS_DEFAULT
#endif
#define CUCTX__STR2(x) #x
#define CUCTX__STR(x) CUCTX__STR2(x)

/* Resolves a CUCTX_CALL site: name at the ABI version read from pfn, the
 * typedef's name ("PFN_cuMemcpyHtoD_v3020"), stored into *slot (the call
 * site's function pointer) on success; otherwise the error, with the last
 * error set, and *slot untouched. */
CUCTX_API CUresult cuctx__call_resolve(const char *name, const char *pfn, unsigned long long flags, void *slot);

/* One function pointer per call site (the static), loaded with acquire and
 * stored by the resolve with release: after the first call, a load and a
 * test. Two threads resolving at once store the same value. */
#define CUCTX__CALL(name_str, pfn, ...)                                     \
    __extension__({                                                         \
        static pfn cuctx__call_site;                                        \
        pfn cuctx__call_fn = __atomic_load_n(&cuctx__call_site, __ATOMIC_ACQUIRE); \
        CUresult cuctx__call_rc = CUDA_SUCCESS;                             \
        if (__builtin_expect(!cuctx__call_fn, 0)                            \
            && (cuctx__call_rc = cuctx__call_resolve(name_str, CUCTX__STR(pfn), CUCTX__CALL_FLAGS, \
                                                     (void *)&cuctx__call_site)) == CUDA_SUCCESS) \
            cuctx__call_fn = __atomic_load_n(&cuctx__call_site, __ATOMIC_ACQUIRE); \
        cuctx__call_fn ? cuctx__call_fn(__VA_ARGS__) : cuctx__call_rc;      \
    })

#if !defined(CUCTX_NO_AUTO)

/* gcc and g++ themselves build the cleanup call like any other call, with
 * the usual argument conversions, so there CUCTX_AUTO can check the type.
 * clang, nvcc's front end and the other compilers that define __GNUC__
 * demand a parameter of exactly the variable's pointer type. */
#  if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) \
      && !defined(__INTEL_COMPILER) && !defined(__NVCOMPILER)
#    define CUCTX__TYPED_AUTO 1
#  endif

#  if defined(CUCTX__TYPED_AUTO) && !defined(__cplusplus)
/* gcc, C: a transparent union of the handle pointers, and none other (no
 * void *, which would take any pointer): anything else is "incompatible type
 * for argument 1 of 'cuctx__auto_cleanup'". A pointer to a const handle
 * gets only gcc's -Wdiscarded-qualifiers: it ranks that conversion as a
 * pedantic warning, in a union as anywhere. */
typedef union cuctx__handle_ptr {
    cuctx_ctx *ctx;
#    define CUCTX__UNION_MEMBER(name, _) cuctx_##name *name;
    CUCTX__CHILD_HANDLES(CUCTX__UNION_MEMBER, _)
#    undef CUCTX__UNION_MEMBER
} cuctx__handle_ptr __attribute__((transparent_union));

/* All pointers to structures share one representation: any member will do. */
static inline void cuctx__auto_cleanup(cuctx__handle_ptr h)
{
    (cuctx_cleanup)(h.ctx);
}

/* __extension__: -Wpedantic would flag the conversion to the union at every
 * declaration (it quiets -Wpedantic for the whole declaration). It also
 * makes `static CUCTX_AUTO` a syntax error here. */
#    define CUCTX__AUTO __extension__ __attribute__((cleanup(cuctx__auto_cleanup), unused))
#  elif defined(CUCTX__TYPED_AUTO)
/* g++: one converting constructor per handle pointer; anything else is
 * "could not convert '& n' from 'int*' to 'cuctx__handle_ptr'". */
extern "C++" {  /* a class with constructors, inside the header's extern "C" */
struct cuctx__handle_ptr {
    void *p;
    cuctx__handle_ptr(cuctx_ctx *h) : p(h) {}
#    define CUCTX__CONVERT(name, _) cuctx__handle_ptr(cuctx_##name *h) : p(h) {}
    CUCTX__CHILD_HANDLES(CUCTX__CONVERT, _)
#    undef CUCTX__CONVERT
};

static inline void cuctx__auto_cleanup(cuctx__handle_ptr h)
{
    (cuctx_cleanup)(h.p);
}
}
#    define CUCTX__AUTO __attribute__((cleanup(cuctx__auto_cleanup), unused))
#  else
/* unused: clang before 17 warns on variables only a cleanup reads. */
#    define CUCTX__AUTO __attribute__((cleanup(cuctx_cleanup), unused))
#  endif

/* One function per handle type: it yields *h and leaves {0} behind.
 * warn_unused_result because a dropped move leaks the object: the variable's
 * cleanup no longer ends it. */
#define CUCTX__MOVE_FN(type, name)                                          \
    static inline __attribute__((warn_unused_result)) type name(type *h)   \
    {                                                                       \
        type moved = *h;                                                    \
        h->id = 0;                                                          \
        return moved;                                                       \
    }

#  ifdef __cplusplus
extern "C++" {  /* overloads, inside the header's extern "C" */
#    define CUCTX__MOVE_OF(name, _) CUCTX__MOVE_FN(cuctx_##name, cuctx__move)
CUCTX__MOVE_FN(cuctx_ctx, cuctx__move)
CUCTX__CHILD_HANDLES(CUCTX__MOVE_OF, _)
#    undef CUCTX__MOVE_OF
}
/* var appears once, so it is evaluated once: CUCTX_MOVE(arr[i++]) works. No
 * overload takes a pointer to const: a const handle does not compile. */
#    define CUCTX__MOVE(var) cuctx__move(&(var))
#  else
#    define CUCTX__MOVE_OF(name, _) CUCTX__MOVE_FN(cuctx_##name, cuctx__move_##name)
CUCTX__MOVE_FN(cuctx_ctx, cuctx__move_ctx)
CUCTX__CHILD_HANDLES(CUCTX__MOVE_OF, _)
#    undef CUCTX__MOVE_OF
/* _Generic does not evaluate its controlling expression, so var is
 * evaluated once, in the call: CUCTX_MOVE(arr[i++]) works. It selects on
 * &(var), not var, because lvalue conversion drops a const that the pointer
 * keeps: a const handle matches no association, an error, where passing its
 * address to the function would only draw a warning. */
#    define CUCTX__MOVE(var)                                                \
    __extension__ _Generic(&(var),                                          \
        cuctx_ctx *: cuctx__move_ctx CUCTX__CHILD_HANDLES(CUCTX__MOVE_ASSOC, _))(&(var))
#    define CUCTX__MOVE_ASSOC(name, _) , cuctx_##name *: cuctx__move_##name
#  endif

/* The enter of CUCTX_SCOPED (report != 0: a failure also goes to the error
 * handler) and of CUCTX_SCOPED_ELSE (its on_fail takes the failure instead). */
CUCTX_API cuctx_scope cuctx__scope_begin(cuctx_ctx ctx, int report);
/* The enter of CUCTX_GUARD: a failure goes to the error handler. */
CUCTX_API cuctx_scope cuctx__scope_guard(cuctx_ctx ctx);

/* True once, on the first test of the loop, and only if the enter worked:
 * a failed enter skips the block; break/continue end the loop. */
static inline int cuctx__scope_once(cuctx_scope *s)
{
    if (s->state != CUCTX__SCOPE_ENTERED)
        return 0;
    s->state = CUCTX__SCOPE_RAN;
    return 1;
}

/* Both scope forms: a run-once for loop whose variable's cleanup is the
 * exit. var arrives as an argument, CUCTX__UNIQUE already expanded once, so
 * the declaration and the loop test name the same variable (__COUNTER__
 * written twice here would give two names). The failure branch
 * (__VA_ARGS__) runs in the scope variable's initialiser, before the loop
 * begins, so break, continue, return and goto in it mean what they mean
 * just before the macro; and a statement expression, not an if-else, so
 * that an enclosing if without braces draws no -Wdangling-else. */
#define CUCTX__SCOPED(ctx, var, report, ...)                                \
    for (cuctx_scope var __attribute__((cleanup(cuctx_scope_exit), unused)) \
             = __extension__({                                              \
                   cuctx_scope cuctx__entered = cuctx__scope_begin((ctx), (report)); \
                   if (cuctx__entered.state == CUCTX__SCOPE_FAILED) {       \
                       __VA_ARGS__;                                         \
                   }                                                        \
                   cuctx__entered;                                          \
               });                                                          \
         cuctx__scope_once(&var);)

/* The capture macros' three steps: the begin (report: failures go to the
 * error handler), the loop test (true once, on the first test; on the
 * second - the block ended or continued - it ends the capture, keeping the
 * graph), and the cleanup (the block was left by a jump: abandon). */
CUCTX_API cuctx_capture cuctx__capture_start(cuctx_stream s, cuctx_graph *out, CUstreamCaptureMode mode, int report,
                                             const char *file, int line, const char *func);
CUCTX_API int cuctx__capture_once(cuctx_capture *c);
CUCTX_API void cuctx__capture_cleanup(cuctx_capture *c);

/* As CUCTX__SCOPED: a run-once loop whose variable's cleanup abandons. */
#define CUCTX__CAPTURE(s, out, mode, var, report, ...)                      \
    for (cuctx_capture var __attribute__((cleanup(cuctx__capture_cleanup), unused)) \
             = __extension__({                                              \
                   cuctx_capture cuctx__begun                               \
                       = cuctx__capture_start((s), (out), (mode), (report), __FILE__, __LINE__, __func__); \
                   if (cuctx__begun.state == CUCTX__CAPTURE_ENDED) {        \
                       __VA_ARGS__;                                         \
                   }                                                        \
                   cuctx__begun;                                            \
               });                                                          \
         cuctx__capture_once(&var);)

#endif /* !CUCTX_NO_AUTO */

#ifdef __cplusplus
}
#endif

#endif /* CUCTX_H */
