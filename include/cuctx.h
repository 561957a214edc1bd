/* SPDX-License-Identifier: MIT */
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
 * 1. CUCTX_AUTO is for local handle variables - cuctx_ctx, cuctx_event,
 *    cuctx_stream, cuctx_module, cuctx_mem, cuctx_host_mem, cuctx_graph_exec
 *    - declared initialised, normally to {0}:
 *        CUCTX_AUTO cuctx_event ev = {0};
 *    The cleanup runs on whatever the variable holds when the block exits,
 *    including an early return before the create; {0} is "nothing to do".
 *    On any other type (CUCTX_AUTO int n = 5;, an array of handles, a struct
 *    of your own) gcc and g++ stop with an error; clang, clang++ and nvcc
 *    compile it, and the cleanup then reads and zeroes the variable as if it
 *    were a handle: undefined behaviour. A static, thread-local or file-scope
 *    variable never goes out of scope, so its cleanup could never run:
 *    `static CUCTX_AUTO` does not compile with gcc in C, and otherwise gcc and
 *    g++ (-Wattributes) and clang and clang++ (-Wignored-attributes) warn,
 *    by default, that the cleanup is ignored - an error under -Werror; nvcc
 *    says nothing.
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
 *    the handle and leaves {0} behind, so the cleanup does nothing. Return or
 *    assign the result: a dropped one leaks the object, so it draws a
 *    warning by default (-Wunused-result in gcc, clang, g++ and clang++,
 *    #1650-D in nvcc; a cast to void silences only clang and clang++). var
 *    must be a handle variable; anything else is an error with every
 *    compiler.
 *
 * 4. Inside CUCTX_SCOPED(ctx) { ... } and CUCTX_SCOPED_ELSE(ctx, on_fail)
 *    { ... }, break and continue leave the scope, not an enclosing loop (the
 *    macros are run-once for loops). CUCTX_GUARD is a declaration, not a
 *    loop, so there break and continue keep their usual meaning. return and
 *    goto out of any of them restore the context. When ctx cannot be made
 *    current, CUCTX_SCOPED skips the block and tells the error handler;
 *    CUCTX_SCOPED_ELSE runs on_fail instead of the block and tells no one
 *    (on_fail runs before the loop starts: break, continue, return and goto
 *    there act as just before the macro); CUCTX_GUARD tells the error handler
 *    and runs the rest of the block unswitched. cuctx_last_error() says why.
 *
 * 5. Cleanup runs when a block is left normally, by return, break, continue
 *    or goto. It does not run on exit(), abort(), longjmp() or a thread that
 *    is cancelled; objects still alive then go with the process. cuctx is
 *    not async-signal-safe (it takes locks and allocates): no cuctx function
 *    may be called from a signal handler, so no macro may be used in one.
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
 *    fail with CUDA_ERROR_CONTEXT_IS_DESTROYED (destroys are skipped). What
 *    a destroy waits for is only driver calls already under way on that
 *    object or context (a whole cuctx_ctx_synchronize, say); it waits by
 *    sleeping, with backoff, not by spinning.
 *
 * 11. A process's odd moments.
 *    - fork: CUDA cannot be used in a forked child. There, every object
 *      inherited from the parent is dead: its destroy succeeds, resets the
 *      handle and never calls the driver (context handles act as borrows),
 *      its other calls fail; nothing waits for the parent's other threads.
 *      Creates in the child give the driver's own answer.
 *    - Cancellation: a thread cancelled inside a cuctx call (in a blocking
 *      driver call such as cuctx_event_synchronize) leaves nothing held: its
 *      exit releases what it held. Its automatic cleanups do not run (rule 5).
 *    - Thread exit: handles may be destroyed from pthread key, C11 tss and
 *      C++ thread_local destructors.
 *    - The error handler may call any cuctx function, also destroy the
 *      context whose child's cleanup it is told about: it is never called
 *      while cuctx holds something on the calling thread.
 *    - Process exit: once the driver reports CUDA_ERROR_DEINITIALIZED, or
 *      cuctx's own exit hook has run (it runs before the driver's teardown,
 *      and after exit handlers registered after the first cuctx call), cuctx
 *      no longer calls the driver: destroys succeed quietly, reset their
 *      handles, and count in cuctx_stats.shutdown_skips.
 *    - CUCTX_LEAK_CHECK=1 reports the objects still alive at exit
 *      (cuctx_leak_report).
 *
 * Errors: every function that can fail returns the driver's own CUresult and
 * records, for the calling thread, cuctx_last_error() and a sentence in
 * cuctx_last_error_message() naming the function, the object and the cause.
 *
 * Driver: cuctx never links libcuda. It opens libcuda.so.1 at run time, or
 * the library named by the environment variable CUCTX_DRIVER (ignored in
 * setuid/setgid programs), and resolves each entry point at a pinned ABI
 * version through cuGetProcAddress.
 *
 * Versions and ABI: CUCTX_VERSION_MAJOR, _MINOR, _PATCH and _HEX are the
 * header's version, cuctx_version_hex() the library's. Between releases
 * that change the library's soname, what the header compiles into a program
 * stays valid: a handle is one uint64_t for good; cuctx_scope, which the
 * macros keep on the caller's stack, has reserved words that later versions
 * may use without changing its size; and cuctx_stats_get passes the
 * caller's sizeof(struct cuctx_stats), so fields added at its end read 0
 * from an older library, and a newer library fills only the fields an older
 * program knows. The exported functions carry the symbol version CUCTX_0.1
 * (functions added later get later versions).
 *
 * Thread-local storage: the library keeps about 1.4 KiB per thread in
 * initial-exec TLS, fast for a program that links cuctx (or loads it at
 * start). A program that dlopen()s libcuctx later takes those bytes from
 * glibc's small reserve of static TLS, which every library loaded that way
 * shares; when it is used up, dlopen fails with "cannot allocate memory in
 * static TLS block". Link cuctx or preload it (LD_PRELOAD) then, or enlarge
 * the reserve (glibc 2.32 and later: GLIBC_TUNABLES=
 * glibc.rtld.optional_static_tls=BYTES).
 */
#ifndef CUCTX_H
#define CUCTX_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cuctx_version.h"

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
 *  Version
 * ------------------------------------------------------------------------ */

/* The library's version, "MAJOR.MINOR.PATCH", and the same as 0xMMmmpp:
 * compare cuctx_version_hex() with CUCTX_VERSION_HEX, the header's, to see
 * whether the program runs with the library it was built against. */
CUCTX_API const char *cuctx_version(void);
CUCTX_API unsigned cuctx_version_hex(void);

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

#if !defined(CUCTX_NO_SITES)
#  define CUCTX__SITE __FILE__, __LINE__, __func__
#  define cuctx_ctx_create(out, dev, flags) cuctx_ctx_create_at(out, dev, flags, CUCTX__SITE)
#  define cuctx_ctx_primary(out, dev) cuctx_ctx_primary_at(out, dev, CUCTX__SITE)
#  define cuctx_ctx_borrow(out, raw) cuctx_ctx_borrow_at(out, raw, CUCTX__SITE)
#  define cuctx_event_create(out, ctx, flags) cuctx_event_create_at(out, ctx, flags, CUCTX__SITE)
#  define cuctx_stream_create(out, ctx, flags, priority) \
       cuctx_stream_create_at(out, ctx, flags, priority, CUCTX__SITE)
#  define cuctx_module_load(out, ctx, path) cuctx_module_load_at(out, ctx, path, CUCTX__SITE)
#  define cuctx_module_load_data(out, ctx, image) cuctx_module_load_data_at(out, ctx, image, CUCTX__SITE)
#  define cuctx_mem_alloc(out, ctx, bytes) cuctx_mem_alloc_at(out, ctx, bytes, CUCTX__SITE)
#  define cuctx_host_mem_alloc(out, ctx, bytes, flags) cuctx_host_mem_alloc_at(out, ctx, bytes, flags, CUCTX__SITE)
#  define cuctx_graph_exec_instantiate(out, ctx, graph, flags) \
       cuctx_graph_exec_instantiate_at(out, ctx, graph, flags, CUCTX__SITE)
#endif

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
    uint64_t prev_entry;    /* its registry entry (0: none, or dead at enter; all ones: unidentified) */
    unsigned long long prev_ctx_id; /* its driver id if others can end it; 0: cuctx's own */
    unsigned depth;         /* stack levels cuctx had pushed on this thread at enter */
    int state;              /* CUCTX__SCOPE_* */
    /* Room for later versions (the size is compiled into callers): the enter
     * zeroes it; nothing reads it yet. */
    uint64_t cuctx__reserved[2];
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
    size_t contexts;            /* live contexts in use through cuctx (owned, primary, borrowed):
                                   named by a live cuctx_ctx handle or a live child */
    size_t ctx_handles;         /* live cuctx_ctx handles */
    size_t events, streams, modules, mems, host_mems, graph_execs;
    uint64_t stale_skips;       /* child destroys not sent to the driver: context gone
                                   (also, in a forked child, every object of the parent) */
    uint64_t failed_destroys;   /* destroys the driver refused */
    uint64_t shutdown_skips;    /* destroys not sent because the driver had shut down
                                   (process exit): they succeed quietly */
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
 *  The macros
 * ------------------------------------------------------------------------ */

#define CUCTX__CAT2(a, b) a##b
#define CUCTX__CAT(a, b) CUCTX__CAT2(a, b)
/* __COUNTER__ so that two macros on one line still get distinct names. */
#define CUCTX__UNIQUE(prefix) CUCTX__CAT(prefix, __COUNTER__)

#if !defined(CUCTX_NO_AUTO)
#  if !defined(__GNUC__) && !defined(__clang__)
#    error "cuctx: this compiler lacks __attribute__((cleanup)); define CUCTX_NO_AUTO to use the plain API without CUCTX_AUTO/CUCTX_MOVE/CUCTX_SCOPED/CUCTX_SCOPED_ELSE/CUCTX_GUARD"
#  endif

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
 * for argument 1 of 'cuctx__auto_cleanup'". */
typedef union cuctx__handle_ptr {
    cuctx_ctx *ctx;
    cuctx_event *event;
    cuctx_stream *stream;
    cuctx_module *module;
    cuctx_mem *mem;
    cuctx_host_mem *host_mem;
    cuctx_graph_exec *graph_exec;
} cuctx__handle_ptr __attribute__((transparent_union));

/* All pointers to structures share one representation: any member will do. */
static inline void cuctx__auto_cleanup(cuctx__handle_ptr h)
{
    cuctx_cleanup(h.ctx);
}

/* __extension__: -Wpedantic would flag the conversion to the union at every
 * declaration (it quiets -Wpedantic for the whole declaration). It also
 * makes `static CUCTX_AUTO` a syntax error here. */
#    define CUCTX_AUTO __extension__ __attribute__((cleanup(cuctx__auto_cleanup), unused))
#  elif defined(CUCTX__TYPED_AUTO)
/* g++: one converting constructor per handle pointer; anything else is
 * "could not convert '& n' from 'int*' to 'cuctx__handle_ptr'". */
extern "C++" {  /* a class with constructors, inside the header's extern "C" */
struct cuctx__handle_ptr {
    void *p;
    cuctx__handle_ptr(cuctx_ctx *h) : p(h) {}
    cuctx__handle_ptr(cuctx_event *h) : p(h) {}
    cuctx__handle_ptr(cuctx_stream *h) : p(h) {}
    cuctx__handle_ptr(cuctx_module *h) : p(h) {}
    cuctx__handle_ptr(cuctx_mem *h) : p(h) {}
    cuctx__handle_ptr(cuctx_host_mem *h) : p(h) {}
    cuctx__handle_ptr(cuctx_graph_exec *h) : p(h) {}
};

static inline void cuctx__auto_cleanup(cuctx__handle_ptr h)
{
    cuctx_cleanup(h.p);
}
}
#    define CUCTX_AUTO __attribute__((cleanup(cuctx__auto_cleanup), unused))
#  else
/* unused: clang before 17 warns on variables only a cleanup reads. */
#    define CUCTX_AUTO __attribute__((cleanup(cuctx_cleanup), unused))
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
CUCTX__MOVE_FN(cuctx_ctx, cuctx__move)
CUCTX__MOVE_FN(cuctx_event, cuctx__move)
CUCTX__MOVE_FN(cuctx_stream, cuctx__move)
CUCTX__MOVE_FN(cuctx_module, cuctx__move)
CUCTX__MOVE_FN(cuctx_mem, cuctx__move)
CUCTX__MOVE_FN(cuctx_host_mem, cuctx__move)
CUCTX__MOVE_FN(cuctx_graph_exec, cuctx__move)
}
/* var appears once, so it is evaluated once: CUCTX_MOVE(arr[i++]) works. */
#    define CUCTX_MOVE(var) cuctx__move(&(var))
#  else
CUCTX__MOVE_FN(cuctx_ctx, cuctx__move_ctx)
CUCTX__MOVE_FN(cuctx_event, cuctx__move_event)
CUCTX__MOVE_FN(cuctx_stream, cuctx__move_stream)
CUCTX__MOVE_FN(cuctx_module, cuctx__move_module)
CUCTX__MOVE_FN(cuctx_mem, cuctx__move_mem)
CUCTX__MOVE_FN(cuctx_host_mem, cuctx__move_host_mem)
CUCTX__MOVE_FN(cuctx_graph_exec, cuctx__move_graph_exec)
/* _Generic does not evaluate its controlling expression, so var is
 * evaluated once, in &(var): CUCTX_MOVE(arr[i++]) works. */
#    define CUCTX_MOVE(var)                                                 \
    __extension__ _Generic((var),                                           \
        cuctx_ctx: cuctx__move_ctx,                                         \
        cuctx_event: cuctx__move_event,                                     \
        cuctx_stream: cuctx__move_stream,                                   \
        cuctx_module: cuctx__move_module,                                   \
        cuctx_mem: cuctx__move_mem,                                         \
        cuctx_host_mem: cuctx__move_host_mem,                               \
        cuctx_graph_exec: cuctx__move_graph_exec)(&(var))
#  endif

/* The enter of CUCTX_SCOPED (report != 0: a failure also goes to the error
 * handler) and of CUCTX_SCOPED_ELSE (its on_fail takes the failure instead). */
CUCTX_API cuctx_scope cuctx__scope_begin(cuctx_ctx ctx, int report);

/* True once, on the first test of the loop, and only if the enter worked:
 * a failed enter skips the block; break/continue end the loop. */
static inline int cuctx__scope_once(cuctx_scope *s)
{
    if (s->state != CUCTX__SCOPE_ENTERED)
        return 0;
    s->state = CUCTX__SCOPE_RAN;
    return 1;
}

/* Both scope forms. The failure branch (__VA_ARGS__) runs in the scope
 * variable's initialiser, before the run-once loop begins, so break,
 * continue, return and goto in it mean what they mean just before the
 * macro; and a statement expression, not an if-else, so that an enclosing
 * if without braces draws no -Wdangling-else. */
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

/* CUCTX_SCOPED(ctx) { ... }: the block runs once with ctx current; at every
 * exit the thread's context stack is as it was at entry (see
 * cuctx_scope_exit for what that means when contexts die inside). If ctx
 * cannot be made current the block is skipped; the failure is in
 * cuctx_last_error() and was reported to the error handler. */
#define CUCTX_SCOPED(ctx) CUCTX__SCOPED(ctx, CUCTX__UNIQUE(cuctx__scope_), 1, )

/* CUCTX_SCOPED_ELSE(ctx, on_fail) { ... }: as CUCTX_SCOPED, but when ctx
 * cannot be made current the statement on_fail runs instead of the block,
 * and the error handler is not told (cuctx_last_error() says why):
 *     CUCTX_SCOPED_ELSE(ctx, return cuctx_last_error()) { ... }
 *     CUCTX_SCOPED_ELSE(ctx, goto out) { ... }
 * on_fail may contain commas. */
#define CUCTX_SCOPED_ELSE(ctx, ...) \
    CUCTX__SCOPED(ctx, CUCTX__UNIQUE(cuctx__scope_), 0, __VA_ARGS__)

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
