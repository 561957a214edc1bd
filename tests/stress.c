/* SPDX-License-Identifier: MIT */
/* stress.c - many threads doing random operations on cuctx objects, in a
 * shared pool of contexts that other threads keep destroying and remaking.
 *
 * Usage: stress [operations] [threads] [seed] [churn-interval-us]
 *   operations          in all, split over the workers (default 1000000)
 *   threads             workers (default 16)
 *   seed                of the PRNG (default: from the clock; always printed,
 *                       so that a failing run's operation sequences repeat)
 *   churn-interval-us   each churn thread sleeps this long between two
 *                       context replacements (default 200 with the simulator,
 *                       100000 with the real driver, where a context create
 *                       costs 0.1-0.2 s)
 * Environment: CUCTX_DRIVER (the driver cuctx loads; a library exporting
 * cusim_misuse_count is the simulator), STRESS_SEED, STRESS_CHURN_US,
 * STRESS_POOL (contexts in the pool, default 8), STRESS_CHURNERS (0-8,
 * default 2), STRESS_WATCHDOG_S (abort when nothing progressed for this
 * long, a deadlock; default 120, 0: off), STRESS_SHARED_GRAPH (1: one graph
 * per worker for all its instantiations, see shared_graph), and, each 1 by
 * default, 0 to turn it off: STRESS_RESETS (primary resets in the churn),
 * STRESS_OUTSIDE (the outside's primary retains, simulator only),
 * STRESS_SCOPES (scopes in the workers), STRESS_NESTED (nested scopes),
 * STRESS_CAPTURE (stream captures in the workers), STRESS_ASYNC
 * (stream-ordered memory and memory pools in the workers); and
 * STRESS_ASYNC_BESIDE_CAPTURE (default 0; 1: destroys of stream-ordered
 * memory of non-blocking streams run beside captures in their context, see
 * child_destroy).
 *
 * The pool holds owned contexts (cuctx_ctx_create), primary ones
 * (cuctx_ctx_primary), borrows of an owned context's raw handle, and
 * borrows of a raw context made through the driver (cuCtxCreate, resolved
 * with cuctx_driver_symbol). Workers create, use and destroy events,
 * streams, device memory, page-locked host memory and graph execs in random
 * pool contexts; they keep stale copies of destroyed handles (child and
 * context) and use or destroy them later, which must fail with
 * CUDA_ERROR_INVALID_HANDLE. Children live in per-thread arrays and in a
 * shared array (under a mutex) from which any thread destroys or uses them.
 * Churn threads replace random pool contexts; the children of a destroyed
 * context stay in the arrays, and their destroys must succeed (as stale
 * skips).
 *
 * Churn also resets primary contexts (cuctx_ctx_primary_reset) while
 * handles of them and children in them are in use: the generation ends, its
 * children are skipped from then on, the handles stay valid (holds through
 * them fail, their destroys release the retains the reset kept) and the
 * next retain makes a new generation at the same address. With the
 * simulator, the outside (the CUDA runtime's stand-in) retains and releases
 * primary contexts too, so that cuctx's last release is not always the
 * driver's; the model's retain count is checked against the simulator's.
 *
 * Workers also enter scopes (CUCTX_SCOPED_ELSE) over pool contexts churn
 * may be destroying, sometimes nested over another one and sometimes inside
 * a scope over a context that lives all run, make and destroy children with
 * {0} (the current context) inside, and check the thread's current context
 * after each exit (see scoped_body): this puts scope enter and exit in
 * ThreadSanitizer's view against context creation and destruction.
 *
 * The kinds of no context (issue 19). Each worker loads a cuctx_library (a
 * PTX of one .entry) at its start and launches its CUkernel with
 * cuctx_launch on streams of every pool context, its own and shared ones:
 * checked as the other uses (the stream's context alive: success; dead:
 * CUDA_ERROR_CONTEXT_IS_DESTROYED; a shared stream destroyed meanwhile:
 * CUDA_ERROR_INVALID_HANDLE; a stale copy: CUDA_ERROR_INVALID_HANDLE). The
 * libraries are destroyed at the very end, after every context died: that
 * must reach the driver and succeed.
 *
 * Workers also capture (op_capture) on one of their own non-blocking
 * streams, with CUCTX_CAPTURE_ELSE or cuctx_capture_begin/_end by hand,
 * mode THREAD_LOCAL or RELAXED (never GLOBAL: a GLOBAL capture makes every
 * other thread's allocation answer 900, which the rest of the run would
 * count as failures; and never a blocking stream: legacy-stream work of
 * other threads in that context would answer 906): inside, launches of the
 * library's kernel and an event record on the stream, now and then in a
 * nested scope over another pool context, and the whole capture now and
 * then inside a scope over home. The block ends normally (the graph kept),
 * or is left by break, goto or return (abandoned), or destroys its stream
 * (no graph, CUDA_ERROR_INVALID_HANDLE); a churned context ends it without
 * a graph (CUDA_ERROR_CONTEXT_IS_DESTROYED), a begin in a dead context is
 * refused; another worker's cuctx_ctx_synchronize of the context
 * invalidates it (the driver forbids cuCtxSynchronize during a capture in
 * any mode: that synchronize answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
 * the capture ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED); each life
 * counts its captures and synchronizes in flight, so both answers are
 * allowed exactly where the two overlapped. After each capture the stream
 * must be usable (not capturing). A kept graph holds one node per launch
 * captured; it goes into the worker's arrays as a child of kind graph
 * (untethered), used and destroyed later by any thread, after its context
 * died too - such a destroy must succeed and reach the driver, never be a
 * stale skip; those left at the end are destroyed after every context
 * died. Now and then a kept graph is instantiated in the stream's context
 * (a graph exec: tethered, a child like the others) and then destroyed at
 * once, so that each graph that is instantiated has exactly one exec, as
 * create_graph_exec's graphs (see shared_graph: the real driver crashed
 * with several execs of one graph in contexts later destroyed).
 *
 * Stream-ordered memory (op_async, issue 20). Workers allocate with
 * cuctx_mem_alloc_async on their own streams and on shared streams of pool
 * contexts that churn destroys, now and then from a pool of their own
 * (cuctx_mem_pool_create, one per device, cuctx_mem_alloc_from_pool) or
 * through a handle of the device's default pool (cuctx_mem_pool_default,
 * its destroy ending the handle alone), and in scopes on a default stream
 * by name ({0}, CUCTX_STREAM_LEGACY, CUCTX_STREAM_PER_THREAD: the current
 * context's). The allocation is checked as a create in the stream's
 * context (refused once that is dead; a shared stream destroyed meanwhile:
 * CUDA_ERROR_INVALID_HANDLE). The memory goes into the arrays as a child of
 * kind async mem, which belongs to no context (untethered, as a graph):
 * its uses (cuctx_mem_ptr, cuctx_mem_size; cuctx_mem_ctx refuses it) work
 * whatever became of its stream and context, and its destroy - by any
 * thread, often after its stream or context died - must succeed and reach
 * the driver, never be a stale skip; those left at the end are destroyed,
 * some before the pool's teardown and the rest after every context died
 * (then with cuMemFree and no context). Some are freed with
 * cuctx_mem_free_async on another stream of the worker's, on the same
 * device, while the stream they were allocated on lives (a free ordered on
 * that other stream is the caller's promise that the work on the first is
 * done, so never once it is destroyed); cuctx_mem_free_async of
 * cuctx_mem_alloc memory must be refused (CUDA_ERROR_INVALID_VALUE, the
 * handle kept), and one on a default stream with no context current
 * (CUDA_ERROR_INVALID_CONTEXT, kept). A free ordered on a stream while
 * that stream captures is taken into the capture (the driver's rule; a
 * free node of memory made outside the graph, refused), which no program
 * wants from another thread: so by default the destroys of memory of
 * non-blocking streams (the streams captures run on) and the captures in
 * the context exclude each other (STRESS_ASYNC_BESIDE_CAPTURE=1 lets them
 * meet, each destroy marked as a synchronize of the context for
 * op_capture's checks). (cuctx once also synchronized the context in such
 * a free when its stream was gone, which the driver refuses beside any
 * capture: seed 7, 20000 operations on 8 threads; now the stream's
 * destroy waits for its work instead.) Pools are trimmed, and destroyed now and then, often with
 * allocations alive; stale copies of pools (and of freed memory, as for
 * other kinds) must give CUDA_ERROR_INVALID_HANDLE to every call. At the
 * end: stats.async_mems and stats.mem_pools 0, and with the simulator no
 * live stream-ordered allocation (cusim_async_allocs_live), no pool, and
 * every destroy of the memory a driver call (cuMemFreeAsync or cuMemFree).
 *
 * A raw context is ended behind cuctx's back (cuCtxDestroy), which rule 9
 * says no check can exclude racing a child call; so, as an application
 * must, its children's calls hold the read side of their pool slot's lock
 * and the raw destroy holds the write side. Owned and primary contexts are
 * ended through cuctx, which must make that race harmless on its own.
 *
 * Each context's life (and each context handle's) is tracked as ALIVE,
 * DYING (its destroy has begun) and DEAD (the destroy returned), so results
 * are checked exactly where the order is known: a call that began after a
 * context was dead must say CUDA_ERROR_CONTEXT_IS_DESTROYED (a destroy: be a
 * stale skip), a call that ended before its context's destroy began must
 * work (a destroy: reach the driver).
 *
 * Checked at the end: every handle destroyed, cuctx_stats_get shows no live
 * object of any kind (graphs, libraries, stream-ordered memory and pools
 * too), no failed or
 * shutdown-skipped destroys, and
 *     sure_stale <= stale_skips <= child_destroys - sure_live;
 * (child destroys of the tethered kinds: a graph's is never skipped) with
 * the simulator also stale_skips == child_destroys - driver destroy calls
 * (each successful child destroy either reached the driver or was
 * skipped; tethered kinds, so a skipped graph destroy would break it),
 * driver create calls == successful child creates, no misuse, no live
 * simulated object (graphs, libraries, pools and stream-ordered memory
 * among them) and no capture left; for stream-ordered memory, driver
 * allocation calls == its creates, and the driver's frees of it
 * (cuMemFreeAsync, and the cuMemFree calls beyond the tethered kinds')
 * == its destroys. Exit status 0 only if all of that holds.
 */
#include <cuctx.h>
#include <cudaTypedefs.h>

#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/cudasim.h"
#include "kinds.h"

/* ------------------------------------------------------------------------
 *  Small things
 * ------------------------------------------------------------------------ */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(unsigned long us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        continue;
}

/* splitmix64: one state word per thread, seeded from the run's seed. */
static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static unsigned rnd(uint64_t *s, unsigned n)
{
    return n ? (unsigned)(next_rand(s) % n) : 0;
}

static _Atomic unsigned long failures;

/* Bumped by every operation, churn and teardown step; the watchdog aborts
 * the run when it stops moving (a deadlock), rather than hang. */
static _Atomic unsigned long heartbeat;
static _Atomic int finished;
static unsigned long watchdog_s;
static uint64_t run_seed;

static void beat(void)
{
    atomic_fetch_add_explicit(&heartbeat, 1, memory_order_relaxed);
}

/* On a deadlock, each thread's stack, to stderr (module and offset where
 * the symbol is hidden: addr2line reads those). Not async-signal-safe in
 * the letter (backtrace), which a process about to abort can afford. */
static void stack_dump(int sig)
{
    void *frames[48];
    char head[64];
    (void)sig;
    int n = snprintf(head, sizeof head, "stress: thread %ld:\n", (long)syscall(SYS_gettid));
    if (write(2, head, (size_t)n) < 0)
        return;
    backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
}

static void dump_all_stacks(void)
{
    void *warm[1];
    backtrace(warm, 1);     /* loads what backtrace needs, outside the handler */
    signal(SIGURG, stack_dump);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long tid = atol(e->d_name);
        if (tid <= 0 || tid == (long)syscall(SYS_gettid))
            continue;
        syscall(SYS_tgkill, (long)getpid(), tid, SIGURG);
        sleep_us(50000);
    }
    if (d)
        closedir(d);
}

/* A crash (of the driver, most likely): the crashing thread's stack, then
 * every other thread's, then the signal's own ending. */
static void on_crash(int sig)
{
    char head[80];
    int n = snprintf(head, sizeof head, "stress: FAIL: signal %d in thread %ld (seed %" PRIu64 ")\n", sig,
                     (long)syscall(SYS_gettid), run_seed);
    if (write(2, head, (size_t)n) >= 0)
        stack_dump(sig);
    dump_all_stacks();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void *watchdog(void *arg)
{
    unsigned long last = atomic_load(&heartbeat), still = 0;
    (void)arg;
    while (!atomic_load(&finished)) {
        sleep_us(100000);
        unsigned long now = atomic_load(&heartbeat);
        if (now != last) {
            last = now;
            still = 0;
        } else if (++still >= 10 * watchdog_s) {
            fprintf(stderr, "stress: FAIL: no progress for %lu s: deadlocked? (seed %" PRIu64 "); aborting\n",
                    watchdog_s, run_seed);
            fflush(NULL);
            dump_all_stacks();
            abort();
        }
    }
    return NULL;
}

/* A check that did not hold: counted, and the first ones printed. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    static pthread_mutex_t print_mu = PTHREAD_MUTEX_INITIALIZER;
    unsigned long n = atomic_fetch_add(&failures, 1);
    if (n >= 25)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&print_mu);
    fprintf(stderr, "stress: FAIL: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    pthread_mutex_unlock(&print_mu);
    va_end(ap);
}

#define RC(rc) cuctx_result_name(rc)

/* ------------------------------------------------------------------------
 *  The driver: a few raw entry points, and the simulator's controls
 * ------------------------------------------------------------------------ */

static PFN_cuCtxCreate_v3020 raw_ctx_create;
static PFN_cuCtxDestroy_v4000 raw_ctx_destroy;
static PFN_cuCtxPopCurrent_v4000 raw_ctx_pop;
static PFN_cuDeviceGetCount_v2000 raw_device_count;
static PFN_cuGraphCreate_v10000 raw_graph_create;
static PFN_cuGraphAddEmptyNode_v10000 raw_graph_add_empty;
static PFN_cuGraphDestroy_v10000 raw_graph_destroy;
static PFN_cuGraphGetNodes_v10000 raw_graph_nodes;
static PFN_cuMemGetInfo_v3020 raw_mem_info;

/* The simulator's controls (CUSIM_CONTROLS), named as the functions less
 * "cusim_"; all NULL with the real driver. */
#define STRESS_SIM_MEMBER(name) cusim_##name##_fn name;
static struct {
    CUSIM_CONTROLS(STRESS_SIM_MEMBER)
} sim;
#undef STRESS_SIM_MEMBER
static int have_sim;

static void *symbol(const char *name, int version, int required)
{
    void *p = NULL;
    CUresult rc = cuctx_driver_symbol(name, version, &p);
    if (rc != CUDA_SUCCESS && required) {
        fprintf(stderr, "stress: %s@%d: %s\n", name, version, cuctx_last_error_message());
        exit(2);
    }
    return rc == CUDA_SUCCESS ? p : NULL;
}

static void load_driver(void)
{
    CUresult rc = cuctx_init();
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "stress: cuctx_init: %s: %s\n", RC(rc), cuctx_last_error_message());
        exit(2);
    }
    raw_ctx_create = (PFN_cuCtxCreate_v3020)symbol("cuCtxCreate", 3020, 1);
    raw_ctx_destroy = (PFN_cuCtxDestroy_v4000)symbol("cuCtxDestroy", 4000, 1);
    raw_ctx_pop = (PFN_cuCtxPopCurrent_v4000)symbol("cuCtxPopCurrent", 4000, 1);
    raw_device_count = (PFN_cuDeviceGetCount_v2000)symbol("cuDeviceGetCount", 2000, 1);
    raw_graph_create = (PFN_cuGraphCreate_v10000)symbol("cuGraphCreate", 10000, 0);
    raw_graph_add_empty = (PFN_cuGraphAddEmptyNode_v10000)symbol("cuGraphAddEmptyNode", 10000, 0);
    raw_graph_destroy = (PFN_cuGraphDestroy_v10000)symbol("cuGraphDestroy", 10000, 0);
    raw_graph_nodes = (PFN_cuGraphGetNodes_v10000)symbol("cuGraphGetNodes", 10000, 0);

    const char *path = getenv("CUCTX_DRIVER");
    void *h = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (h && dlsym(h, "cusim_misuse_count") && dlsym(h, "cusim_live")) {
#define STRESS_SIM_LOOKUP(name) sim.name = (cusim_##name##_fn)dlsym(h, "cusim_" #name);
        CUSIM_CONTROLS(STRESS_SIM_LOOKUP)
#undef STRESS_SIM_LOOKUP
        have_sim = sim.misuse_text && sim.calls;
    }
    if (!have_sim)
        raw_mem_info = (PFN_cuMemGetInfo_v3020)symbol("cuMemGetInfo", 3020, 1);
}

/* Free device memory, asked with dev's primary context current (real driver only). */
static int mem_info(CUdevice dev, size_t *free_b, size_t *total_b)
{
    cuctx_ctx p = {0};
    CUresult rc = cuctx_ctx_primary(&p, dev);
    if (rc != CUDA_SUCCESS)
        return -1;
    rc = CUDA_ERROR_UNKNOWN;
    CUCTX_SCOPED(p) {
        rc = raw_mem_info(free_b, total_b);
    }
    cuctx_ctx_destroy(&p);
    return rc == CUDA_SUCCESS ? 0 : -1;
}

/* ------------------------------------------------------------------------
 *  Contexts: the pool, and what is known of each context's life
 * ------------------------------------------------------------------------ */

enum { ALIVE, DYING, DEAD };

/* One driver context's life: DYING from just before its destroy (for a
 * primary context: the release of the last retain) to DEAD just after. */
struct life {
    _Atomic int state;
    /* Set as it begins to die (life_dying): births_begun then, and whether a
     * birth was under way. A context born after that may take its address. */
    _Atomic unsigned long dying_births;
    _Atomic int dying_in_flight;
    /* Stream captures on streams of this context and cuctx_ctx_synchronize
     * calls on it: in flight now, and begun in all (each marked before the
     * driver call, unmarked after it). A synchronize and a capture overlap
     * exactly when one side, looking at its start and again later, saw the
     * other in flight or begun meanwhile (overlaps). */
    _Atomic long captures, syncs;
    _Atomic unsigned long captures_begun, syncs_begun;
    /* Read: a capture on a stream of this context (op_capture); write: a
     * destroy of stream-ordered memory of a non-blocking stream
     * (child_destroy), unless STRESS_ASYNC_BESIDE_CAPTURE=1. */
    pthread_rwlock_t capture_lock;
    struct life *all_next;
};

/* A snapshot of the other side's marks, taken just after marking one's own
 * begin. The order matters: each side counts itself in flight before it
 * counts itself begun, and reads the other's begun count before its in-flight
 * count. Then a snapshot that misses the other's in-flight mark was taken
 * before that mark, so before the other's begun mark too, and the begun count
 * the side looks at again later has moved. (Counting begun first and reading
 * in flight first, as this once did, let a snapshot fall between the other
 * side's two marks and see neither: a synchronize refused by a capture it
 * never saw: one CI run under TSan failed so, 67 reruns did not.) */
struct overlap { long in_flight; unsigned long begun; };

static struct overlap overlap_mark(_Atomic long *mine, _Atomic unsigned long *mine_begun, _Atomic long *theirs,
                                   _Atomic unsigned long *theirs_begun)
{
    atomic_fetch_add(mine, 1);
    atomic_fetch_add(mine_begun, 1);
    struct overlap o;
    o.begun = atomic_load(theirs_begun);
    o.in_flight = atomic_load(theirs);
    return o;
}

/* Whether the other side may have run at any time since the snapshot. */
static int overlaps(const struct overlap *o, _Atomic unsigned long *theirs_begun)
{
    return o->in_flight > 0 || atomic_load(theirs_begun) != o->begun;
}

/* Context births (creates, primary retains), counted for the {0} creates in
 * scopes: a thread's current context is an address, and a new context may
 * take a dead one's. active goes up before begun and down after the create. */
static _Atomic unsigned long births_begun;
static _Atomic long births_active;

static void birth_begin(void)
{
    atomic_fetch_add(&births_active, 1);
    atomic_fetch_add(&births_begun, 1);
}

static void birth_end(void)
{
    atomic_fetch_sub(&births_active, 1);
}

/* Whether a context born since l began to die may have taken its address. */
static int life_maybe_reused(const struct life *l)
{
    return atomic_load(&l->dying_in_flight) || atomic_load(&births_begun) > atomic_load(&l->dying_births);
}

enum ctx_kind { CK_OWNED, CK_PRIMARY, CK_BORROW_OWNED, CK_BORROW_RAW, CK_COUNT };
static const char *const ctx_kind_names[CK_COUNT] = {"owned", "primary", "borrowed (owned)", "borrowed (raw)"};

/* One pool generation. Its fields never change once published (handles are
 * destroyed through copies), and it is freed only at exit, so a worker may
 * keep a pointer to it past its replacement. */
struct rec {
    enum ctx_kind kind;
    int slot;                   /* its pool slot: that slot's raw_lock guards a raw destroy */
    CUdevice dev;
    cuctx_ctx h;                /* the handle children are made through */
    cuctx_ctx owned;            /* CK_BORROW_OWNED: the owning handle */
    CUcontext raw;              /* CK_BORROW_RAW: the driver's context */
    _Atomic int hstate;         /* h's life: ALIVE, DYING, DEAD */
    struct life *life;          /* the context's */
    struct rec *all_next;
};

#define POOL_MAX 64
struct slot {
    pthread_mutex_t mu;         /* guards rec */
    struct rec *rec;
    pthread_rwlock_t raw_lock;  /* read: a child call in a CK_BORROW_RAW context; write: its cuCtxDestroy */
};
static struct slot pool[POOL_MAX];
static int pool_n = 8;
static int n_devices = 1;

/* Everything allocated, freed at exit. */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rec *all_recs;
static struct life *all_lives;

static struct life *life_new(void)
{
    struct life *l = calloc(1, sizeof *l);
    if (!l) {
        perror("stress: calloc");
        exit(2);
    }
    atomic_init(&l->state, ALIVE);
    atomic_init(&l->dying_births, 0);
    atomic_init(&l->dying_in_flight, 0);
    atomic_init(&l->captures, 0);
    atomic_init(&l->syncs, 0);
    atomic_init(&l->captures_begun, 0);
    atomic_init(&l->syncs_begun, 0);
    pthread_rwlock_init(&l->capture_lock, NULL);
    pthread_mutex_lock(&all_mu);
    l->all_next = all_lives;
    all_lives = l;
    pthread_mutex_unlock(&all_mu);
    return l;
}

/* Primary contexts, tracked under prim_mu as the driver keeps them: the
 * driver's retains are cuctx's (prim_count: live primary handles, of any
 * generation) and the outside's (prim_outside: the CUDA runtime's stand-in,
 * simulator only). A retain while the context is inactive makes a new
 * generation (prim_life: NULL while inactive) at the same address; the last
 * driver release or a reset ends it. A reset keeps the retains: the handles
 * of the ended generation stay valid (holds through them fail, destroys
 * release their retains) and each rec keeps the life it was made in. */
#define DEV_MAX 2
static pthread_mutex_t prim_mu = PTHREAD_MUTEX_INITIALIZER;
static int prim_count[DEV_MAX];
static int prim_outside[DEV_MAX];
static struct life *prim_life[DEV_MAX];
static int opt_resets = 1, opt_outside = 1, opt_scopes = 1, opt_nested = 1;
static _Atomic unsigned long n_resets, n_outside_retains, n_outside_releases;

/* Destroyed context handles, for workers to try again. */
#define STALE_CTX_MAX 64
static pthread_mutex_t stale_ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t stale_ctx[STALE_CTX_MAX];
static int n_stale_ctx, stale_ctx_next;

static void stale_ctx_push(uint64_t id)
{
    pthread_mutex_lock(&stale_ctx_mu);
    stale_ctx[stale_ctx_next] = id;
    stale_ctx_next = (stale_ctx_next + 1) % STALE_CTX_MAX;
    if (n_stale_ctx < STALE_CTX_MAX)
        n_stale_ctx++;
    pthread_mutex_unlock(&stale_ctx_mu);
}

static uint64_t stale_ctx_pick(uint64_t *rng)
{
    uint64_t id = 0;
    pthread_mutex_lock(&stale_ctx_mu);
    if (n_stale_ctx)
        id = stale_ctx[rnd(rng, (unsigned)n_stale_ctx)];
    pthread_mutex_unlock(&stale_ctx_mu);
    return id;
}

/* Context counters, from the churn threads and the setup. */
static _Atomic unsigned long ctx_made[CK_COUNT], ctx_retired[CK_COUNT];
static _Atomic unsigned long ctx_handles_made, ctx_handles_destroyed;

static void state_set(_Atomic int *s, int v)
{
    atomic_store(s, v);
}

/* Under prim_mu, with the simulator: its count of dev's primary retains
 * is the model's (cuctx's handles and the outside's). */
static void prim_check(CUdevice dev, const char *after)
{
    if (!have_sim || !sim.primary_refs)
        return;
    unsigned refs = sim.primary_refs((int)dev);
    if (refs != (unsigned)(prim_count[dev] + prim_outside[dev]))
        fail("after %s on device %d: the simulator counts %u primary retains, expected %d (cuctx's %d, the "
             "outside's %d)", after, (int)dev, refs, prim_count[dev] + prim_outside[dev], prim_count[dev],
             prim_outside[dev]);
}

/* l's context is about to be destroyed: ALIVE -> DYING, births noted first. */
static void life_dying(struct life *l)
{
    atomic_store(&l->dying_births, atomic_load(&births_begun));
    atomic_store(&l->dying_in_flight, atomic_load(&births_active) > 0);
    state_set(&l->state, DYING);
}

/* A new pool generation of the given kind for slot s; NULL (a failure
 * counted) if the driver refused. */
static struct rec *rec_make(enum ctx_kind kind, int s, CUdevice dev)
{
    struct rec *r = calloc(1, sizeof *r);
    CUresult rc;
    if (!r) {
        perror("stress: calloc");
        exit(2);
    }
    r->kind = kind;
    r->slot = s;
    r->dev = dev;
    atomic_init(&r->hstate, ALIVE);
    switch (kind) {
    case CK_OWNED:
        birth_begin();
        rc = cuctx_ctx_create(&r->h, dev, CUCTX_SCHED_AUTO);
        birth_end();
        if (rc != CUDA_SUCCESS)
            goto refused;
        if ((rc = cuctx_pop_current()) != CUDA_SUCCESS)
            fail("cuctx_pop_current after a create: %s", RC(rc));
        r->life = life_new();
        atomic_fetch_add(&ctx_handles_made, 1);
        break;
    case CK_PRIMARY:
        pthread_mutex_lock(&prim_mu);
        birth_begin();
        rc = cuctx_ctx_primary(&r->h, dev);
        birth_end();
        if (rc == CUDA_SUCCESS) {
            prim_count[dev]++;
            if (!prim_life[dev])
                prim_life[dev] = life_new();
            r->life = prim_life[dev];
        }
        prim_check(dev, "cuctx_ctx_primary");
        pthread_mutex_unlock(&prim_mu);
        if (rc != CUDA_SUCCESS)
            goto refused;
        atomic_fetch_add(&ctx_handles_made, 1);
        break;
    case CK_BORROW_OWNED:
        birth_begin();
        rc = cuctx_ctx_create(&r->owned, dev, CUCTX_SCHED_AUTO);
        birth_end();
        if (rc != CUDA_SUCCESS)
            goto refused;
        if ((rc = cuctx_pop_current()) != CUDA_SUCCESS)
            fail("cuctx_pop_current after a create: %s", RC(rc));
        atomic_fetch_add(&ctx_handles_made, 1);
        r->life = life_new();
        if ((rc = cuctx_ctx_borrow(&r->h, cuctx_ctx_raw(r->owned))) != CUDA_SUCCESS) {
            fail("cuctx_ctx_borrow of a live owned context: %s: %s", RC(rc), cuctx_last_error_message());
            cuctx_ctx_destroy(&r->owned);
            atomic_fetch_add(&ctx_handles_destroyed, 1);
            state_set(&r->life->state, DEAD);
            free(r);
            return NULL;
        }
        atomic_fetch_add(&ctx_handles_made, 1);
        break;
    case CK_BORROW_RAW: {
        CUcontext popped = NULL;
        birth_begin();
        rc = raw_ctx_create(&r->raw, 0, dev);
        birth_end();
        if (rc != CUDA_SUCCESS)
            goto refused;
        if ((rc = raw_ctx_pop(&popped)) != CUDA_SUCCESS || popped != r->raw)
            fail("cuCtxPopCurrent after cuCtxCreate: %s", RC(rc));
        r->life = life_new();
        if ((rc = cuctx_ctx_borrow(&r->h, r->raw)) != CUDA_SUCCESS) {
            fail("cuctx_ctx_borrow of a live raw context: %s: %s", RC(rc), cuctx_last_error_message());
            raw_ctx_destroy(r->raw);
            state_set(&r->life->state, DEAD);
            free(r);
            return NULL;
        }
        atomic_fetch_add(&ctx_handles_made, 1);
        break;
    }
    default:
        break;
    }
    atomic_fetch_add(&ctx_made[kind], 1);
    pthread_mutex_lock(&all_mu);
    r->all_next = all_recs;
    all_recs = r;
    pthread_mutex_unlock(&all_mu);
    return r;
refused:
    fail("making a %s context on device %d: %s: %s", ctx_kind_names[kind], (int)dev, RC(rc),
         cuctx_last_error_message());
    free(r);
    return NULL;
}

/* Destroys handle h (a copy: the record stays as it was), which must work. */
static void ctx_handle_destroy(cuctx_ctx h, const char *what)
{
    CUresult rc = cuctx_ctx_destroy(&h);
    if (rc != CUDA_SUCCESS)
        fail("cuctx_ctx_destroy (%s): %s: %s", what, RC(rc), cuctx_last_error_message());
    if (h.id != 0)
        fail("cuctx_ctx_destroy (%s) left the handle set", what);
    atomic_fetch_add(&ctx_handles_destroyed, 1);
}

/* Ends a pool generation taken out of its slot: its contexts and handles. */
static void rec_retire(struct rec *r, uint64_t *rng)
{
    CUresult rc;
    switch (r->kind) {
    case CK_OWNED:
        state_set(&r->hstate, DYING);
        life_dying(r->life);
        ctx_handle_destroy(r->h, "owned");
        state_set(&r->life->state, DEAD);
        state_set(&r->hstate, DEAD);
        stale_ctx_push(r->h.id);
        break;
    case CK_PRIMARY: {
        pthread_mutex_lock(&prim_mu);
        /* The last driver retain (cuctx's or the outside's) ends the active
         * generation: r's own, or, after a reset, a later one. */
        struct life *cur = prim_life[r->dev];
        int ends = cur && prim_count[r->dev] + prim_outside[r->dev] == 1;
        state_set(&r->hstate, DYING);
        if (ends)
            life_dying(cur);
        ctx_handle_destroy(r->h, cur == r->life ? "primary" : "primary, its generation reset");
        prim_count[r->dev]--;
        if (ends) {
            state_set(&cur->state, DEAD);
            prim_life[r->dev] = NULL;
        }
        state_set(&r->hstate, DEAD);
        prim_check(r->dev, "cuctx_ctx_destroy of a primary handle");
        pthread_mutex_unlock(&prim_mu);
        stale_ctx_push(r->h.id);
        break;
    }
    case CK_BORROW_OWNED:
        if (rnd(rng, 2)) {      /* the borrow first, then its owner */
            state_set(&r->hstate, DYING);
            ctx_handle_destroy(r->h, "borrow of an owned context");
            state_set(&r->hstate, DEAD);
            life_dying(r->life);
            ctx_handle_destroy(r->owned, "owner of a borrowed context");
            state_set(&r->life->state, DEAD);
        } else {                /* the owner first: the borrow outlives the context */
            life_dying(r->life);
            ctx_handle_destroy(r->owned, "owner of a borrowed context");
            state_set(&r->life->state, DEAD);
            state_set(&r->hstate, DYING);
            ctx_handle_destroy(r->h, "borrow of a destroyed owned context");
            state_set(&r->hstate, DEAD);
        }
        stale_ctx_push(r->owned.id);
        stale_ctx_push(r->h.id);
        break;
    case CK_BORROW_RAW:
        /* Behind cuctx's back: no child call of this slot may be under way. */
        life_dying(r->life);
        pthread_rwlock_wrlock(&pool[r->slot].raw_lock);
        rc = raw_ctx_destroy(r->raw);
        pthread_rwlock_unlock(&pool[r->slot].raw_lock);
        state_set(&r->life->state, DEAD);
        if (rc != CUDA_SUCCESS)
            fail("cuCtxDestroy of a raw context: %s", RC(rc));
        /* The borrow still names it: cuctx must see it gone (the entry would
         * end with the borrow's handle anyway, entry.h). */
        if ((rc = cuctx_ctx_synchronize(r->h)) != CUDA_ERROR_CONTEXT_IS_DESTROYED)
            fail("cuctx_ctx_synchronize of a borrow whose raw context was destroyed: %s, expected "
                 "CUDA_ERROR_CONTEXT_IS_DESTROYED", RC(rc));
        state_set(&r->hstate, DYING);
        ctx_handle_destroy(r->h, "borrow of a destroyed raw context");
        state_set(&r->hstate, DEAD);
        stale_ctx_push(r->h.id);
        break;
    default:
        break;
    }
    atomic_fetch_add(&ctx_retired[r->kind], 1);
}

static struct rec *rec_make_random(int s, uint64_t *rng)
{
    for (int tries = 0; tries < 4; tries++) {
        struct rec *r = rec_make((enum ctx_kind)rnd(rng, CK_COUNT), s, (CUdevice)rnd(rng, (unsigned)n_devices));
        if (r)
            return r;
    }
    return NULL;
}

/* A churn step: cuctx_ctx_primary_reset of dev's primary context, under
 * prim_mu as the retains and releases. The active generation (if any) ends;
 * every retain stays, so the handles of it stay valid, and the next retain
 * makes a new generation at the same address. Returns 0 when nothing holds
 * a retain on dev (no reset then). */
static int prim_reset(CUdevice dev)
{
    pthread_mutex_lock(&prim_mu);
    if (prim_count[dev] + prim_outside[dev] == 0) {
        pthread_mutex_unlock(&prim_mu);
        return 0;
    }
    struct life *cur = prim_life[dev];
    if (cur)
        life_dying(cur);
    CUresult rc = cuctx_ctx_primary_reset(dev);
    if (rc != CUDA_SUCCESS)
        fail("cuctx_ctx_primary_reset(%d) with %d retains of cuctx's, %d of the outside's: %s: %s", (int)dev,
             prim_count[dev], prim_outside[dev], RC(rc), cuctx_last_error_message());
    if (cur) {
        state_set(&cur->state, DEAD);
        prim_life[dev] = NULL;
    }
    prim_check(dev, "cuctx_ctx_primary_reset");
    pthread_mutex_unlock(&prim_mu);
    atomic_fetch_add(&n_resets, 1);
    return 1;
}

/* A churn step with the simulator: the outside (the runtime's stand-in)
 * retains dev's primary context, or releases a retain of its own. A release
 * that would end an active generation is not made: the outside ending a
 * context behind cuctx's back may race a child call (rule 9), as a raw
 * destroy; so cuctx's releases are the ones that end it, and its releases
 * while the outside holds a retain are not the last. */
static void prim_outside_step(CUdevice dev, uint64_t *rng)
{
    if (!have_sim || !sim.primary_outside_retain || !sim.primary_outside_release)
        return;
    pthread_mutex_lock(&prim_mu);
    if (prim_outside[dev] < 2 && (prim_outside[dev] == 0 || rnd(rng, 2))) {
        birth_begin();
        int r = sim.primary_outside_retain((int)dev);
        birth_end();
        if (r != 0) {
            fail("cusim_primary_outside_retain(%d): %d", (int)dev, r);
        } else {
            prim_outside[dev]++;
            if (!prim_life[dev])
                prim_life[dev] = life_new();
            atomic_fetch_add(&n_outside_retains, 1);
        }
    } else if (prim_outside[dev] > 0 && (!prim_life[dev] || prim_count[dev] + prim_outside[dev] > 1)) {
        int r = sim.primary_outside_release((int)dev);
        if (r != 0)
            fail("cusim_primary_outside_release(%d): %d", (int)dev, r);
        else
            prim_outside[dev]--;
        atomic_fetch_add(&n_outside_releases, 1);
    }
    prim_check(dev, "an outside retain or release");
    pthread_mutex_unlock(&prim_mu);
}

/* The current generation of a random slot. */
static struct rec *pick_rec(uint64_t *rng)
{
    struct slot *sl = &pool[rnd(rng, (unsigned)pool_n)];
    pthread_mutex_lock(&sl->mu);
    struct rec *r = sl->rec;
    pthread_mutex_unlock(&sl->mu);
    return r;
}

/* The read side of the raw locks of one or two records' slots, in slot
 * order; only raw-borrowed contexts need it. */
struct raw_hold { int n; int slots[2]; };

/* Set while this thread holds the read side of every slot's raw lock (a
 * scope, see op_scope): raw_lock then takes nothing more. */
static _Thread_local int raw_all;

static void raw_lock(struct raw_hold *h, const struct rec *a, const struct rec *b)
{
    h->n = 0;
    if (raw_all)
        return;
    if (a && a->kind == CK_BORROW_RAW)
        h->slots[h->n++] = a->slot;
    if (b && b->kind == CK_BORROW_RAW && !(h->n && h->slots[0] == b->slot))
        h->slots[h->n++] = b->slot;
    if (h->n == 2 && h->slots[0] > h->slots[1]) {
        int t = h->slots[0];
        h->slots[0] = h->slots[1];
        h->slots[1] = t;
    }
    for (int i = 0; i < h->n; i++)
        pthread_rwlock_rdlock(&pool[h->slots[i]].raw_lock);
}

static void raw_unlock(struct raw_hold *h)
{
    for (int i = h->n - 1; i >= 0; i--)
        pthread_rwlock_unlock(&pool[h->slots[i]].raw_lock);
}

/* ------------------------------------------------------------------------
 *  Children
 * ------------------------------------------------------------------------ */

/* C_GRAPH: graphs kept by captures (op_capture), and C_MEM_ASYNC:
 * stream-ordered memory (op_async), the kinds of no context here
 * (untethered: never skipped, whatever became of the context of the stream
 * it was captured or allocated on); op_create makes the kinds before them. */
enum child_kind { C_EVENT, C_STREAM, C_MEM, C_HOST_MEM, C_GRAPH_EXEC, C_GRAPH, C_MEM_ASYNC, C_COUNT };
static int have_graphs;
/* The context current while graphs are created and destroyed: an owned one
 * outside the pool, alive for the whole run. (With the real driver, graphs
 * made and destroyed with no context current crashed cuGraphDestroy at the
 * end of a run, now and then, once every context they had been
 * instantiated in was gone.) */
static cuctx_ctx home;
/* STRESS_SHARED_GRAPH=1: every instantiation of a worker uses the worker's
 * one graph, for the whole run. By default each instantiation gets a graph
 * of its own, destroyed right after it: with the real driver, execs of one
 * graph instantiated in contexts that were later destroyed crashed
 * cuGraphExecDestroy of a sibling exec or cuGraphDestroy of the graph, now
 * and then (driver 580.159.04). */
static int shared_graph;

/* A graph of one empty node, made in home; NULL (a failure counted) if the
 * driver refused. */
static CUgraph graph_new(void)
{
    CUgraph g = NULL;
    CUgraphNode node;
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    CUCTX_SCOPED(home) {
        if ((rc = raw_graph_create(&g, 0)) == CUDA_SUCCESS
            && (rc = raw_graph_add_empty(&node, g, NULL, 0)) != CUDA_SUCCESS) {
            raw_graph_destroy(g);
            g = NULL;
        }
    }
    if (rc != CUDA_SUCCESS) {
        fail("making a graph: %s", RC(rc));
        return NULL;
    }
    return g;
}

static void graph_free(CUgraph g)
{
    CUresult rc = CUDA_ERROR_INVALID_CONTEXT;
    CUCTX_SCOPED(home) {
        rc = raw_graph_destroy(g);
    }
    if (rc != CUDA_SUCCESS)
        fail("cuGraphDestroy: %s", RC(rc));
}

/* A pool of a worker's (op_async): one per pool made, freed at exit; the
 * allocations from it not destroyed yet, counted by whichever thread makes
 * or destroys one (so that a destroy of the pool knows whether some live). */
struct pool_gen {
    _Atomic long live;
    struct pool_gen *all_next;
};

struct child {
    enum child_kind kind;
    uint64_t id;
    struct rec *rec;            /* the pool generation it was made in (async mem: its stream's) */
    size_t size;                /* memory: its bytes; a graph: its nodes */
    int scoped;                 /* made with {0} in a scope over rec's handle */
    unsigned flags;             /* a stream: its creation flags; async mem: its stream's, and AF_* */
    uint64_t stream;            /* async mem: the stream handle it was allocated on (0: a default one) */
    struct pool_gen *pg;        /* async mem from a worker's pool: that pool's */
};
/* STRESS_ASYNC, and the driver has stream-ordered memory (op_async). */
static int opt_async = 1;
/* STRESS_ASYNC_BESIDE_CAPTURE: 0 (the default) keeps the destroys of
 * stream-ordered memory of non-blocking streams away from the captures in
 * their context (struct life's capture_lock); 1 lets them meet, where a
 * free on a capturing stream is taken into the capture. */
static int opt_async_beside_capture;
/* STRESS_ASYNC_OPS: which parts of the stream-ordered workload run, a mask
 * (default 63, all), to find which one a driver's failure needs: 1 shared
 * streams, 2 frees on another stream, 4 pool trims and destroys, 8
 * allocations from pools (the workers' and default pools' handles), 16 on
 * default streams by name in scopes, 32 the refused frees; 64 takes the
 * destroys out of 4 (a trim in their place: the workers' pools then end
 * only with the run). With a part off, its share of the operations
 * allocates on the worker's own streams. */
enum { AO_SHARED = 1, AO_FREE_OTHER = 2, AO_POOL_OPS = 4, AO_FROM_POOL = 8, AO_NAMED = 16, AO_REFUSED = 32,
       AO_NO_POOL_DESTROY = 64 };
static int opt_async_ops = 63;
struct worker;
static CUresult async_alloc_named(struct worker *w, struct child *c);
/* async mem flags, beside its stream's CU_STREAM_NON_BLOCKING */
#define AF_POOL 0x100u          /* from a worker's pool (cuctx_mem_alloc_from_pool) */
#define AF_DEFAULT_POOL 0x200u  /* from a handle of the device's default pool */
#define AF_NAMED 0x400u         /* on a default stream by name, in a scope */

#define OWN_MAX 48
#define STALE_MAX 32
#define SHARED_MAX 512

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static struct child shared[SHARED_MAX];
static int n_shared;

struct counts {
    unsigned long ops;
    unsigned long creates[C_COUNT];     /* successful */
    unsigned long create_refused;       /* in a stale handle or a dead context */
    unsigned long destroys;             /* successful child destroys (each child once) */
    unsigned long sure_stale;           /* destroys begun after their context was dead */
    unsigned long sure_live;            /* destroys ended before their context's destroy began */
    unsigned long uses, uses_dead, uses_raced;
    unsigned long stale_checks;
    unsigned long shared_destroys, ctx_ops;
    unsigned long scopes, scopes_refused, scopes_nested, scoped_creates, scoped_unknown;
    /* the kinds of no context (untethered_destroys: graph destroys, in destroys too) */
    unsigned long untethered_destroys, graphs_after_ctx, graph_uses;
    unsigned long launches, launches_dead, launches_raced, launches_stale;
    unsigned long captures, cap_kept, cap_abandoned, cap_refused, cap_ctx_ended, cap_invalidated,
        cap_stream_gone, cap_by_hand, cap_in_home, cap_nested, cap_instantiated, cap_into_held, cap_launches,
        cap_records, cap_stale, cap_paused, syncs_in_capture;
    /* stream-ordered memory and pools (op_async; async_destroys in destroys too) */
    unsigned long async_ops, async_own, async_shared, async_named, async_from_pool, async_from_default,
        async_refused, async_raced, async_destroys, async_after_ctx, async_synced, async_free_other,
        async_free_other_refused, async_plain_refused, async_no_ctx_refused, async_uses, async_ctx_refused,
        pools_made, pools_destroyed, pools_destroyed_alive, pool_trims, pool_stale, default_pools;
};

struct worker {
    int index;
    pthread_t thread;
    uint64_t rng;
    unsigned long quota;
    struct child own[OWN_MAX];
    int n_own;
    struct { enum child_kind kind; uint64_t id; } stale[STALE_MAX];
    int n_stale, stale_next;
    CUgraph graph;
    cuctx_library lib;          /* loaded at the worker's start, destroyed at the end of the run */
    CUkernel kernel;            /* its kernel; NULL without libraries (a driver older than 12.0) */
    struct rec *cached;         /* a pool generation kept for a while: it may die meanwhile */
    cuctx_mem_pool pools[DEV_MAX];      /* its memory pools, made when first needed ({0}: none) */
    struct pool_gen *pool_gens[DEV_MAX];
    uint64_t stale_pools[8];    /* copies of its destroyed pools */
    int n_stale_pools;
    struct counts c;
};

/* The context for the next create or context call: mostly the one used
 * last, which churn may have replaced (and destroyed) since. */
static struct rec *worker_rec(struct worker *w)
{
    if (!w->cached || rnd(&w->rng, 8) == 0)
        w->cached = pick_rec(&w->rng);
    return w->cached;
}

static int life_is(const struct rec *r, int state)
{
    return atomic_load(&r->life->state) == state;
}

/* Each kind's create: c->id set, and c->size for memory. */
static CUresult create_event(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    cuctx_event e = {0};
    CUresult rc = cuctx_event_create(&e, ctx, rnd(&w->rng, 2) ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT);
    c->id = e.id;
    return rc;
}

static CUresult create_stream(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    cuctx_stream s = {0};
    c->flags = rnd(&w->rng, 2) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
    CUresult rc = cuctx_stream_create(&s, ctx, c->flags, 0);
    c->id = s.id;
    return rc;
}

static CUresult create_mem(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    cuctx_mem m = {0};
    c->size = 256 + rnd(&w->rng, 64 << 10);
    CUresult rc = cuctx_mem_alloc(&m, ctx, c->size);
    c->id = m.id;
    return rc;
}

static CUresult create_host_mem(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    cuctx_host_mem hm = {0};
    c->size = 64 + rnd(&w->rng, 16 << 10);
    CUresult rc = cuctx_host_mem_alloc(&hm, ctx, c->size, rnd(&w->rng, 2) ? CU_MEMHOSTALLOC_PORTABLE : 0);
    c->id = hm.id;
    return rc;
}

static CUresult create_graph_exec(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    cuctx_graph_exec ge = {0};
    CUgraph g = w->graph;
    if (!shared_graph && (g = graph_new()) == NULL)
        return CUDA_ERROR_UNKNOWN;
    CUresult rc = cuctx_graph_exec_instantiate(&ge, ctx, g, 0);
    if (!shared_graph)
        graph_free(g);
    c->id = ge.id;
    return rc;
}

/* Each kind's destroy, through a copy of the handle: *id is what the destroy
 * left in it. */
#define DESTROY_BY_ID(name, type, ...)                       \
    static inline __attribute__((unused)) CUresult destroy_##name(uint64_t *id) \
    {                                                        \
        type h = {*id};                                      \
        CUresult rc = cuctx_##name##_destroy(&h);            \
        *id = h.id;                                          \
        return rc;                                           \
    }
TEST_CHILD_KINDS(DESTROY_BY_ID)
DESTROY_BY_ID(graph, cuctx_graph, 0)
#undef DESTROY_BY_ID

/* Graphs are not in kinds.h's list (it has the tethered kinds); no create
 * function: they come from captures. Nor is stream-ordered memory: made by
 * op_async and scoped_create, destroyed as a cuctx_mem (whose destroy
 * frees either kind). */
static const struct kind_info kind_info_graph = {"graph", "cuStreamEndCapture", "cuGraphDestroy"};
static const struct kind_info kind_info_mem_async = {"async mem", "cuMemAllocAsync", "cuMemFreeAsync"};

/* The kinds of child stress makes (no modules), by enum child_kind: the
 * kind's name (plural in the summary: the name and an s) and the driver
 * entry points cuctx calls for it (kinds.h), whose calls the simulator
 * counts (tethered kinds only: a graph's driver calls are also the
 * capture's and the raw ones of graph_new), cuctx's create and destroy,
 * and whether the kind belongs to no context. */
static const struct child_ops {
    const struct kind_info *info;
    CUresult (*create)(struct worker *w, struct child *c, cuctx_ctx ctx);
    CUresult (*destroy)(uint64_t *id);
    int untethered;
} child_kinds[C_COUNT] = {
    [C_EVENT] = {&kind_info_event, create_event, destroy_event, 0},
    [C_STREAM] = {&kind_info_stream, create_stream, destroy_stream, 0},
    [C_MEM] = {&kind_info_mem, create_mem, destroy_mem, 0},
    [C_HOST_MEM] = {&kind_info_host_mem, create_host_mem, destroy_host_mem, 0},
    [C_GRAPH_EXEC] = {&kind_info_graph_exec, create_graph_exec, destroy_graph_exec, 0},
    [C_GRAPH] = {&kind_info_graph, NULL, destroy_graph, 1},
    [C_MEM_ASYNC] = {&kind_info_mem_async, NULL, destroy_mem, 1},
};

/* The simulator's count of calls of every kind's driver create (destroys: 0)
 * or destroy (1); 0 with the real driver. */
/* Frees the simulator refused with CUDA_ERROR_CONTEXT_IS_DESTROYED (the
 * calling thread's current context dead), which cuctx makes again. */
static unsigned long refused_frees(void)
{
    if (!have_sim || !sim.calls_dead_ctx)
        return 0;
    return sim.calls_dead_ctx("cuMemFree") + sim.calls_dead_ctx("cuMemFreeAsync");
}

static unsigned long sim_child_calls(int destroys)
{
    unsigned long n = 0;
    for (int k = 0; have_sim && k < C_COUNT; k++)
        if (!child_kinds[k].untethered)
            n += sim.calls(destroys ? child_kinds[k].info->destroy_fn : child_kinds[k].info->create_fn);
    return n;
}

static CUresult child_create(struct worker *w, struct child *c, cuctx_ctx ctx)
{
    c->id = 0;
    CUresult rc = child_kinds[c->kind].create(w, c, ctx);
    if ((rc == CUDA_SUCCESS) != (c->id != 0))
        fail("%s create returned %s with handle %#" PRIx64, child_kinds[c->kind].info->name, RC(rc), c->id);
    return rc;
}

/* The kind's destroy, or now and then the generic one. */
static CUresult child_destroy_id(struct worker *w, enum child_kind kind, uint64_t *id)
{
    if (rnd(&w->rng, 4) == 0)
        return (cuctx_destroy)(id);     /* the untyped form: a bare id of any kind */
    return child_kinds[kind].destroy(id);
}

/* Destroys a live child this thread owns (taken out of its array): must
 * succeed, stale or not; counted for the stale-skip bounds. */
static void child_destroy(struct worker *w, struct child *c, int keep_stale_copy)
{
    struct raw_hold rh;
    uint64_t id = c->id;
    /* Stream-ordered memory of a non-blocking stream: its free, ordered on
     * that stream while it lives, would be taken into a capture running
     * on it (see the top comment); so by default such a destroy waits for
     * the captures in the context and holds them off; with
     * STRESS_ASYNC_BESIDE_CAPTURE=1 it runs beside them, marked as a
     * synchronize of the context for op_capture's checks. */
    struct life *synced = c->kind == C_MEM_ASYNC && c->stream && (c->flags & CU_STREAM_NON_BLOCKING) ? c->rec->life
                                                                                                     : NULL;
    raw_lock(&rh, c->rec, NULL);
    if (synced && !opt_async_beside_capture) {
        pthread_rwlock_wrlock(&synced->capture_lock);
    } else if (synced) {
        atomic_fetch_add(&synced->syncs_begun, 1);
        atomic_fetch_add(&synced->syncs, 1);
    }
    int dead_before = life_is(c->rec, DEAD);
    CUresult rc;
    if (c->kind == C_MEM_ASYNC && rnd(&w->rng, 4) == 0) {
        cuctx_mem m = {id};
        rc = cuctx_mem_free_async(&m, (cuctx_stream){0});   /* {0}: as a destroy */
        id = m.id;
    } else {
        rc = child_destroy_id(w, c->kind, &id);
    }
    if (synced && !opt_async_beside_capture)
        pthread_rwlock_unlock(&synced->capture_lock);
    else if (synced)
        atomic_fetch_sub(&synced->syncs, 1);
    int alive_after = life_is(c->rec, ALIVE);
    raw_unlock(&rh);
    if (rc != CUDA_SUCCESS)
        fail("destroy of a live %s (%s context, %s): %s: %s", child_kinds[c->kind].info->name,
             ctx_kind_names[c->rec->kind], dead_before ? "dead" : "alive or dying", RC(rc),
             cuctx_last_error_message());
    if (id != 0)
        fail("destroy of a %s left the handle set", child_kinds[c->kind].info->name);
    w->c.destroys++;
    if (c->kind == C_MEM_ASYNC) {
        /* reaches the driver whatever became of its stream and context
         * (the simulator's counts of frees and live allocations say so at
         * the end) */
        w->c.async_destroys++;
        w->c.async_after_ctx += dead_before;
        w->c.async_synced += synced != NULL;
        if (c->pg && rc == CUDA_SUCCESS)
            atomic_fetch_sub(&c->pg->live, 1);
    } else if (child_kinds[c->kind].untethered) {
        /* reaches the driver whatever became of the context: not a stale
         * skip (the simulator's count of skips says so at the end) */
        w->c.untethered_destroys++;
        w->c.graphs_after_ctx += dead_before;
    } else {
        w->c.sure_stale += dead_before;
        w->c.sure_live += alive_after;
    }
    if (keep_stale_copy) {
        w->stale[w->stale_next].kind = c->kind;
        w->stale[w->stale_next].id = c->id;
        w->stale_next = (w->stale_next + 1) % STALE_MAX;
        if (w->n_stale < STALE_MAX)
            w->n_stale++;
    }
    c->id = 0;
    beat();
}

/* One use of a child, checked. c may be a copy of a shared child another
 * thread may destroy meanwhile (raced: CUDA_ERROR_INVALID_HANDLE allowed).
 * other: NULL, or a live child of this thread's that the use then involves
 * (an event recorded on stream other, a stream waiting for event other, a
 * graph exec launched on stream other). */
static const cuctx_dim3 one = {1, 1, 1};

static void child_use(struct worker *w, const struct child *c, const struct child *other, int raced)
{
    CUresult rc = CUDA_SUCCESS;
    CUresult alive_rc = CUDA_SUCCESS;   /* the answer while every context involved lives */
    int query = 0, launch = 0, untethered = 0;
    const char *what = "";
    struct raw_hold rh;
    const struct rec *orec = other ? other->rec : NULL;
    raw_lock(&rh, c->rec, orec);
    int dead_before = life_is(c->rec, DEAD) || (orec && life_is(orec, DEAD));
    switch (c->kind) {
    case C_EVENT: {
        cuctx_event e = {c->id};
        switch (other ? 0 : rnd(&w->rng, 4)) {   /* with other: a record on that stream */
        case 0:
            what = "cuctx_event_record";
            if (other && other->kind == C_STREAM) {
                rc = cuctx_event_record(e, (cuctx_stream){other->id});
                if (other->rec->life != c->rec->life)
                    alive_rc = CUDA_ERROR_INVALID_CONTEXT;
            } else {
                rc = cuctx_event_record(e, (cuctx_stream){0});
            }
            break;
        case 1:
            what = "cuctx_event_query";
            rc = cuctx_event_query(e);
            query = 1;
            break;
        case 2:
            what = "cuctx_event_synchronize";
            rc = cuctx_event_synchronize(e);
            break;
        default:
            what = "cuctx_event_raw";
            rc = cuctx_event_raw(e) ? CUDA_SUCCESS : cuctx_last_error();
            break;
        }
        break;
    }
    case C_STREAM: {
        cuctx_stream s = {c->id};
        if (other && other->kind == C_EVENT) {
            what = "cuctx_stream_wait_event";   /* the event may be another context's */
            rc = cuctx_stream_wait_event(s, (cuctx_event){other->id});
        } else if (w->kernel && rnd(&w->rng, 3) == 0) {
            /* a library's kernel, in whichever context the stream has */
            what = "cuctx_launch of a library's kernel";
            rc = cuctx_launch(w->kernel, s, one, one, 0, NULL);
            launch = 1;
        } else if (rnd(&w->rng, 4)) {
            what = "cuctx_stream_synchronize";
            rc = cuctx_stream_synchronize(s);
        } else {
            what = "cuctx_stream_raw";
            rc = cuctx_stream_raw(s) ? CUDA_SUCCESS : cuctx_last_error();
        }
        break;
    }
    case C_MEM: {
        cuctx_mem m = {c->id};
        what = "cuctx_mem_ptr/size";
        CUdeviceptr p = cuctx_mem_ptr(m);
        rc = p ? CUDA_SUCCESS : cuctx_last_error();
        if (rc == CUDA_SUCCESS) {
            size_t n = cuctx_mem_size(m);
            rc = n ? CUDA_SUCCESS : cuctx_last_error();
            if (n && n != c->size)
                fail("cuctx_mem_size: %zu, allocated %zu", n, c->size);
        }
        break;
    }
    case C_HOST_MEM: {
        cuctx_host_mem hm = {c->id};
        what = "cuctx_host_mem_ptr/size";
        void *p = cuctx_host_mem_ptr(hm);
        rc = p ? CUDA_SUCCESS : cuctx_last_error();
        if (rc == CUDA_SUCCESS) {
            size_t n = cuctx_host_mem_size(hm);
            rc = n ? CUDA_SUCCESS : cuctx_last_error();
            if (n && n != c->size)
                fail("cuctx_host_mem_size: %zu, allocated %zu", n, c->size);
        }
        break;
    }
    case C_GRAPH_EXEC: {
        cuctx_graph_exec ge = {c->id};
        what = "cuctx_graph_exec_launch";
        if (other && other->kind == C_STREAM) {
            rc = cuctx_graph_exec_launch(ge, (cuctx_stream){other->id});
            if (other->rec->life != c->rec->life)
                alive_rc = CUDA_ERROR_INVALID_CONTEXT;
        } else {
            rc = cuctx_graph_exec_launch(ge, (cuctx_stream){0});
        }
        break;
    }
    case C_MEM_ASYNC: {
        /* untethered: works whatever became of its stream and context */
        cuctx_mem m = {c->id};
        untethered = 1;
        w->c.async_uses++;
        if (rnd(&w->rng, 4) == 0) {
            /* belongs to no context: refused, the output left {0} */
            cuctx_ctx cx = {0};
            what = "cuctx_mem_ctx";
            rc = cuctx_mem_ctx(m, &cx);
            if (rc == CUDA_ERROR_INVALID_VALUE && cx.id == 0)
                rc = CUDA_SUCCESS;
            else if (rc != CUDA_ERROR_INVALID_HANDLE)
                fail("cuctx_mem_ctx of stream-ordered memory: %s, handle %#" PRIx64
                     ", expected CUDA_ERROR_INVALID_VALUE and {0}", RC(rc), cx.id);
            w->c.async_ctx_refused += rc == CUDA_SUCCESS;
            if (cx.id)
                cuctx_ctx_destroy(&cx);
            break;
        }
        what = "cuctx_mem_ptr/size of stream-ordered memory";
        CUdeviceptr p = cuctx_mem_ptr(m);
        rc = p ? CUDA_SUCCESS : cuctx_last_error();
        if (rc == CUDA_SUCCESS) {
            size_t n = cuctx_mem_size(m);
            rc = n ? CUDA_SUCCESS : cuctx_last_error();
            if (n && n != c->size)
                fail("cuctx_mem_size of stream-ordered memory: %zu, allocated %zu", n, c->size);
        }
        break;
    }
    case C_GRAPH: {
        /* untethered: works whatever became of the context of its capture */
        what = "cuctx_graph_raw";
        CUgraph g = cuctx_graph_raw((cuctx_graph){c->id});
        rc = g ? CUDA_SUCCESS : cuctx_last_error();
        untethered = 1;
        w->c.graph_uses++;
        size_t n = 0;
        CUresult nrc = CUDA_SUCCESS;
        /* (not a shared copy's: another thread may destroy it meanwhile) */
        if (g && !raced && raw_graph_nodes && ((nrc = raw_graph_nodes(g, NULL, &n)) != CUDA_SUCCESS || n != c->size))
            fail("cuGraphGetNodes of a captured graph (%s context, %s): %s, %zu nodes, %zu launches were captured",
                 ctx_kind_names[c->rec->kind], life_is(c->rec, ALIVE) ? "alive" : "dead or dying", RC(nrc), n,
                 c->size);
        break;
    }
    default:
        break;
    }
    int alive_after = life_is(c->rec, ALIVE) && (!orec || life_is(orec, ALIVE));
    raw_unlock(&rh);
    w->c.uses++;
    w->c.uses_dead += rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    w->c.uses_raced += rc == CUDA_ERROR_INVALID_HANDLE;
    if (launch) {
        w->c.launches++;
        w->c.launches_dead += rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
        w->c.launches_raced += rc == CUDA_ERROR_INVALID_HANDLE;
    }
    int ok;
    if (rc == CUDA_ERROR_INVALID_HANDLE)
        ok = raced;
    else if (untethered)
        ok = rc == CUDA_SUCCESS;
    else if (dead_before)
        ok = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else if (alive_after)
        ok = rc == alive_rc || (query && rc == CUDA_ERROR_NOT_READY);
    else
        ok = rc == alive_rc || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED || (query && rc == CUDA_ERROR_NOT_READY);
    if (!ok)
        fail("%s on a %s%s%s (%s context, %s%s%s): %s: %s", what, raced ? "shared " : "",
             child_kinds[c->kind].info->name, c->scoped ? " made with {0} in a scope" : "",
             ctx_kind_names[c->rec->kind], dead_before ? "dead" : alive_after ? "alive" : "dying",
             other ? ", with another child" : "", other && other->scoped ? " made with {0} in a scope" : "", RC(rc),
             cuctx_last_error_message());
}

/* A use of a stale stream copy: a synchronize, a launch of the library's
 * kernel, or a capture, which must be refused at its begin (the block
 * skipped, the output left {0}). */
static CUresult stale_stream_use(struct worker *w, uint64_t id, const char **what)
{
    cuctx_stream s = {id};
    switch (rnd(&w->rng, w->kernel ? 3 : 2)) {
    case 0:
        return cuctx_stream_synchronize(s);
    case 1: {
        cuctx_graph g = {0};
        int ran = 0;
        CUresult rc = CUDA_SUCCESS;
        *what = "capture";
        CUCTX_CAPTURE_ELSE(s, &g, rnd(&w->rng, 2) ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL : CU_STREAM_CAPTURE_MODE_RELAXED,
                           rc = cuctx_last_error()) {
            ran = 1;
        }
        if (ran || g.id)
            fail("a capture on a stale stream copy %s", ran ? "ran its block" : "made a graph");
        w->c.cap_stale++;
        return ran ? CUDA_SUCCESS : rc;
    }
    default:
        *what = "launch";
        w->c.launches_stale++;
        return cuctx_launch(w->kernel, s, one, one, 0, NULL);
    }
}

/* A stale copy of a destroyed child: every use and destroy must say
 * CUDA_ERROR_INVALID_HANDLE, and touch nothing. */
static void stale_use(struct worker *w)
{
    int i = (int)rnd(&w->rng, (unsigned)w->n_stale);
    enum child_kind kind = w->stale[i].kind;
    uint64_t id = w->stale[i].id;
    CUresult rc;
    const char *what;
    switch (rnd(&w->rng, 3)) {
    case 0:
        what = "destroy";
        rc = child_destroy_id(w, kind, &id);
        if (id != 0)
            fail("destroy of a stale %s left the handle set", child_kinds[kind].info->name);
        break;
    default:
        what = "use";
        switch (kind) {
        case C_EVENT: rc = cuctx_event_query((cuctx_event){id}); break;
        case C_STREAM: rc = stale_stream_use(w, id, &what); break;
        case C_MEM: rc = cuctx_mem_ptr((cuctx_mem){id}) ? CUDA_SUCCESS : cuctx_last_error(); break;
        case C_HOST_MEM: rc = cuctx_host_mem_ptr((cuctx_host_mem){id}) ? CUDA_SUCCESS : cuctx_last_error(); break;
        case C_GRAPH_EXEC: rc = cuctx_graph_exec_launch((cuctx_graph_exec){id}, (cuctx_stream){0}); break;
        case C_GRAPH: rc = cuctx_graph_raw((cuctx_graph){id}) ? CUDA_SUCCESS : cuctx_last_error(); break;
        case C_MEM_ASYNC:
            if (rnd(&w->rng, 2)) {
                rc = cuctx_mem_ptr((cuctx_mem){id}) ? CUDA_SUCCESS : cuctx_last_error();
            } else {
                cuctx_mem m = {id};
                what = "cuctx_mem_free_async";
                rc = cuctx_mem_free_async(&m, (cuctx_stream){0});
                if (m.id != 0)
                    fail("cuctx_mem_free_async of a stale copy left the handle set (as a destroy, it resets it)");
            }
            break;
        default: rc = CUDA_ERROR_INVALID_VALUE; break;
        }
        break;
    }
    w->c.stale_checks++;
    if (rc != CUDA_ERROR_INVALID_HANDLE)
        fail("%s of a stale %s copy: %s, expected CUDA_ERROR_INVALID_HANDLE", what, child_kinds[kind].info->name,
             RC(rc));
}

/* A stale copy of a destroyed context handle. */
static void stale_ctx_use(struct worker *w)
{
    cuctx_ctx h = {stale_ctx_pick(&w->rng)};
    CUresult rc;
    const char *what;
    if (!h.id)
        return;
    switch (rnd(&w->rng, 3)) {
    case 0:
        what = "cuctx_ctx_destroy";
        rc = cuctx_ctx_destroy(&h);
        break;
    case 1: {
        cuctx_event e = {0};
        what = "cuctx_event_create";
        rc = cuctx_event_create(&e, h, 0);
        if (e.id) {
            fail("cuctx_event_create in a destroyed context handle made an event");
            cuctx_event_destroy(&e);
        }
        break;
    }
    default:
        what = "cuctx_ctx_synchronize";
        rc = cuctx_ctx_synchronize(h);
        break;
    }
    w->c.stale_checks++;
    if (rc != CUDA_ERROR_INVALID_HANDLE)
        fail("%s of a stale context handle copy: %s, expected CUDA_ERROR_INVALID_HANDLE", what, RC(rc));
}

/* A context-level call on a pool context. */
/* What a call on pool context r may return, from what was known of it
 * before and after the call: the handle destroyed, the context dead, alive
 * throughout, or dying meanwhile (then any of those answers). */
static void ctx_call_check(const struct rec *r, int handle_dead, int dead_before, int alive_after, CUresult rc,
                           const char *what, const char *prep)
{
    int ok;
    if (handle_dead)
        ok = rc == CUDA_ERROR_INVALID_HANDLE;
    else if (dead_before)
        ok = rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else if (alive_after)
        ok = rc == CUDA_SUCCESS;
    else
        ok = rc == CUDA_SUCCESS || rc == CUDA_ERROR_INVALID_HANDLE || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!ok)
        fail("%s %s a %s context (%s): %s: %s", what, prep, ctx_kind_names[r->kind],
             handle_dead ? "handle destroyed" : dead_before ? "dead" : alive_after ? "alive" : "dying", RC(rc),
             cuctx_last_error_message());
}

static void ctx_use(struct worker *w)
{
    struct rec *r = worker_rec(w);
    struct raw_hold rh;
    int is_cur = -1;
    const char *what;
    raw_lock(&rh, r, NULL);
    int dead_before = atomic_load(&r->hstate) == DEAD || life_is(r, DEAD);
    int handle_dead = atomic_load(&r->hstate) == DEAD;
    CUresult rc;
    if (rnd(&w->rng, 2)) {
        /* The driver answers 900 to a cuCtxSynchronize while a stream of
         * the context captures (another worker's op_capture), and
         * invalidates that capture: allowed exactly then. */
        struct life *l = r->life;
        struct overlap o = overlap_mark(&l->syncs, &l->syncs_begun, &l->captures, &l->captures_begun);
        what = "cuctx_ctx_synchronize";
        rc = cuctx_ctx_synchronize(r->h);
        int captured = overlaps(&o, &l->captures_begun);
        atomic_fetch_sub(&l->syncs, 1);
        if (rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && captured) {
            raw_unlock(&rh);
            w->c.ctx_ops++;
            w->c.syncs_in_capture++;
            return;
        }
    } else {
        what = "cuctx_ctx_is_current";
        rc = cuctx_ctx_is_current(r->h, &is_cur);
        if (rc == CUDA_SUCCESS && is_cur != 0)
            fail("a pool context is current on a worker thread");
    }
    int alive_after = atomic_load(&r->hstate) == ALIVE && life_is(r, ALIVE);
    raw_unlock(&rh);
    w->c.ctx_ops++;
    ctx_call_check(r, handle_dead, dead_before, alive_after, rc, what, "on");
}

static void op_create(struct worker *w)
{
    struct rec *r = worker_rec(w);
    struct child c = {(enum child_kind)rnd(&w->rng, have_graphs ? C_GRAPH : C_GRAPH_EXEC), 0, r, 0, 0, 0, 0, NULL};
    struct raw_hold rh;
    raw_lock(&rh, r, NULL);
    int handle_dead = atomic_load(&r->hstate) == DEAD;
    int dead_before = handle_dead || life_is(r, DEAD);
    CUresult rc = child_create(w, &c, r->h);
    int alive_after = atomic_load(&r->hstate) == ALIVE && life_is(r, ALIVE);
    raw_unlock(&rh);
    char what[64];
    snprintf(what, sizeof what, "%s create", child_kinds[c.kind].info->name);
    ctx_call_check(r, handle_dead, dead_before, alive_after, rc, what, "in");
    if (rc != CUDA_SUCCESS) {
        w->c.create_refused++;
        return;
    }
    w->c.creates[c.kind]++;
    if (rnd(&w->rng, 5) == 0) {
        pthread_mutex_lock(&shared_mu);
        if (n_shared < SHARED_MAX) {
            shared[n_shared++] = c;
            c.id = 0;
        }
        pthread_mutex_unlock(&shared_mu);
        if (!c.id)
            return;
    }
    if (w->n_own < OWN_MAX)
        w->own[w->n_own++] = c;
    else
        child_destroy(w, &c, 0);
}

static struct child *random_own(struct worker *w, int kind)
{
    if (!w->n_own)
        return NULL;
    for (int tries = 0; tries < 4; tries++) {
        struct child *c = &w->own[rnd(&w->rng, (unsigned)w->n_own)];
        if (kind < 0 || (int)c->kind == kind)
            return c;
    }
    return NULL;
}

static void op_use_own(struct worker *w)
{
    struct child *c = random_own(w, -1);
    struct child *other = NULL;
    if (!c) {
        op_create(w);
        return;
    }
    if (rnd(&w->rng, 3) == 0) {
        if (c->kind == C_EVENT || c->kind == C_GRAPH_EXEC)
            other = random_own(w, C_STREAM);
        else if (c->kind == C_STREAM)
            other = random_own(w, C_EVENT);
    }
    child_use(w, c, other, 0);
}

static void op_destroy_own(struct worker *w)
{
    if (!w->n_own) {
        op_create(w);
        return;
    }
    int i = (int)rnd(&w->rng, (unsigned)w->n_own);
    struct child c = w->own[i];
    w->own[i] = w->own[--w->n_own];
    child_destroy(w, &c, rnd(&w->rng, 3) == 0);
}

static void op_destroy_shared(struct worker *w)
{
    struct child c = {0};
    pthread_mutex_lock(&shared_mu);
    if (n_shared) {
        int i = (int)rnd(&w->rng, (unsigned)n_shared);
        c = shared[i];
        shared[i] = shared[--n_shared];
    }
    pthread_mutex_unlock(&shared_mu);
    if (!c.id) {
        op_create(w);
        return;
    }
    w->c.shared_destroys++;
    child_destroy(w, &c, rnd(&w->rng, 3) == 0);
}

static void op_use_shared(struct worker *w)
{
    struct child c = {0};
    pthread_mutex_lock(&shared_mu);
    if (n_shared)
        c = shared[rnd(&w->rng, (unsigned)n_shared)];     /* a copy: others may destroy it meanwhile */
    pthread_mutex_unlock(&shared_mu);
    if (!c.id) {
        op_create(w);
        return;
    }
    child_use(w, &c, NULL, 1);
}

/* The thread's current context, which must be known. */
static CUcontext current(const char *when)
{
    CUcontext cur = NULL;
    CUresult rc = cuctx_current_raw(&cur);
    if (rc != CUDA_SUCCESS)
        fail("cuctx_current_raw %s: %s: %s", when, RC(rc), cuctx_last_error_message());
    return cur;
}

/* Enters a scope over r's handle (CUCTX_SCOPED_ELSE: a refusal is expected
 * while churn destroys contexts, so the error handler is not told) and
 * checks the enter's result as ctx_use does; returns whether it entered. */
static int scope_result_ok(struct worker *w, const struct rec *r, int handle_dead, int dead_before, CUresult rc,
                           const char *what)
{
    int alive_after = atomic_load(&r->hstate) == ALIVE && life_is(r, ALIVE);
    ctx_call_check(r, handle_dead, dead_before, alive_after, rc, what, "over");
    if (rc != CUDA_SUCCESS)
        w->c.scopes_refused++;
    return rc == CUDA_SUCCESS;
}

/* A create with {0} (the current context: r's, pushed by the scope around),
 * then the child kept or destroyed here. If r's context died and a context
 * born since may have taken its address, the current context may be that
 * one: the child's owner is unknown, so it is destroyed at once, counted
 * in neither bound of the stale skips (the caller holds every raw lock). */
static void scoped_create(struct worker *w, struct rec *r)
{
    struct child c = {(enum child_kind)rnd(&w->rng, C_GRAPH_EXEC), 0, r, 0, 1, 0, 0, NULL};
    int dead_before = life_is(r, DEAD);
    CUresult rc;
    if (opt_async && (opt_async_ops & AO_NAMED) && rnd(&w->rng, 5) == 0) {
        /* stream-ordered memory on a default stream by name: the current
         * context's, freed on its legacy stream */
        c.kind = C_MEM_ASYNC;
        rc = async_alloc_named(w, &c);
    } else {
        rc = child_create(w, &c, (cuctx_ctx){0});
    }
    int alive_after = life_is(r, ALIVE);
    int unknown = !alive_after && life_maybe_reused(r->life);
    int ok;
    if (alive_after)
        ok = rc == CUDA_SUCCESS;
    else if (dead_before && !unknown)
        ok = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else
        ok = rc == CUDA_SUCCESS || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!ok)
        fail("%s create with {0} in a scope over a %s context (%s%s): %s: %s", child_kinds[c.kind].info->name,
             ctx_kind_names[r->kind], dead_before ? "dead" : alive_after ? "alive" : "dying",
             unknown ? ", its address maybe taken" : "", RC(rc), cuctx_last_error_message());
    if (rc != CUDA_SUCCESS) {
        w->c.create_refused++;
        return;
    }
    w->c.creates[c.kind]++;
    w->c.scoped_creates++;
    if (unknown) {
        uint64_t id = c.id;
        rc = child_destroy_id(w, c.kind, &id);
        if (rc != CUDA_SUCCESS || id != 0)
            fail("destroy of a %s made with {0} in a scope over a dead context: %s: %s",
                 child_kinds[c.kind].info->name, RC(rc), cuctx_last_error_message());
        w->c.destroys++;
        w->c.async_destroys += c.kind == C_MEM_ASYNC;
        w->c.scoped_unknown++;
        return;
    }
    if (w->n_own < OWN_MAX && rnd(&w->rng, 2))
        w->own[w->n_own++] = c;
    else
        child_destroy(w, &c, rnd(&w->rng, 3) == 0);
}

/* Scopes over pool contexts that churn may be destroying (or resetting):
 * CUCTX_SCOPED_ELSE over one, a {0} create inside, now and then a nested
 * scope over another with a {0} create in it; sometimes all of it inside a
 * scope over home, which never dies. After each exit the thread's current
 * context is checked: after the outer one, exactly what it was before it;
 * after the nested one, the outer's context - which, if it died meanwhile,
 * may instead have been popped when a new context may have taken its
 * address (cuctx_scope_exit). The read side of every raw lock is held
 * throughout: the current context may be any slot's raw context. */
static void scoped_body(struct worker *w)
{
    struct rec *a = worker_rec(w);
    struct rec *b = rnd(&w->rng, 3) == 0 && opt_nested ? pick_rec(&w->rng) : NULL;
    CUcontext base = current("before a scope");
    int a_handle_dead = atomic_load(&a->hstate) == DEAD;
    int a_dead_before = a_handle_dead || life_is(a, DEAD);
    int entered = 0;
    CUresult erc = CUDA_SUCCESS;
    w->c.scopes++;
    CUCTX_SCOPED_ELSE(a->h, erc = cuctx_last_error()) {
        entered = 1;
        if (!scope_result_ok(w, a, a_handle_dead, a_dead_before, CUDA_SUCCESS, "CUCTX_SCOPED_ELSE"))
            break;
        CUcontext in_a = current("in a scope");
        if (life_is(a, ALIVE) && in_a == base)
            fail("in a scope over a live %s context, the current context is still the one before", ctx_kind_names[a->kind]);
        scoped_create(w, a);
        if (b) {
            int b_handle_dead = atomic_load(&b->hstate) == DEAD;
            int b_dead_before = b_handle_dead || life_is(b, DEAD);
            CUresult brc = CUDA_SUCCESS;
            int b_entered = 0, a_alive_in_b = 0, a_state_end_b = -1;
            w->c.scopes++;
            w->c.scopes_nested++;
            CUCTX_SCOPED_ELSE(b->h, brc = cuctx_last_error()) {
                b_entered = 1;
                a_alive_in_b = life_is(a, ALIVE);   /* so the enter saw a's context alive */
                if (scope_result_ok(w, b, b_handle_dead, b_dead_before, CUDA_SUCCESS, "nested CUCTX_SCOPED_ELSE"))
                    scoped_create(w, b);
                a_state_end_b = atomic_load(&a->life->state);
            }
            if (!b_entered)
                scope_result_ok(w, b, b_handle_dead, b_dead_before, brc, "nested CUCTX_SCOPED_ELSE");
            CUcontext after_b = current("after a nested scope");
            int a_alive = life_is(a, ALIVE);
            /* The contract: a previous context destroyed inside the block
             * stays where it was, unless a new one took its address. One
             * already dead or dying at the nested enter may be popped too. */
            if (after_b != in_a
                && !(after_b == base && !a_alive && (!a_alive_in_b || life_maybe_reused(a->life))))
                fail("after a nested scope over a %s context (%s): current context %p, expected %p (the outer "
                     "scope's %s context, %s; %s at the end of the nested block)%s",
                     ctx_kind_names[b->kind], b_entered ? "entered" : "refused", (void *)after_b, (void *)in_a,
                     ctx_kind_names[a->kind], a_alive ? "alive" : a_alive_in_b ? "died inside the nested scope" : "dead or dying",
                     a_state_end_b == ALIVE ? "alive" : a_state_end_b == DYING ? "dying" : a_state_end_b == DEAD ? "dead" : "-",
                     a_alive ? "" : ", or the one before the outer scope if its address may have been taken");
        }
        /* Again, unless the nested scope's exit popped a's level (its
         * address taken): then {0} is no longer a's context. */
        if (rnd(&w->rng, 2) && current("in a scope, after a nested one") == in_a)
            scoped_create(w, a);
    }
    if (!entered)
        scope_result_ok(w, a, a_handle_dead, a_dead_before, erc, "CUCTX_SCOPED_ELSE");
    CUcontext after = current("after a scope");
    if (after != base)
        fail("after a scope over a %s context (%s): current context %p, expected %p as before it",
             ctx_kind_names[a->kind], entered ? "entered" : "refused", (void *)after, (void *)base);
}

static void op_scope(struct worker *w)
{
    for (int i = 0; i < pool_n; i++)
        pthread_rwlock_rdlock(&pool[i].raw_lock);
    raw_all = 1;
    if (rnd(&w->rng, 2)) {
        CUCTX_SCOPED(home) {
            scoped_body(w);
        }
        CUcontext cur = current("after a scope over home");
        if (cur != NULL)
            fail("after a scope over home: current context %p, expected none", (void *)cur);
    } else {
        scoped_body(w);
    }
    raw_all = 0;
    for (int i = pool_n - 1; i >= 0; i--)
        pthread_rwlock_unlock(&pool[i].raw_lock);
}

/* ------------------------------------------------------------------------
 *  Stream capture (op_capture), into graphs of no context
 * ------------------------------------------------------------------------ */

static int opt_capture = 1;

/* How a capture's block ends: normally (the graph kept); left by break,
 * goto or return (abandoned); after destroying its stream (no graph); by
 * hand, cuctx_capture_end with keep 1 or 0; or not begun at all, its output
 * holding a live graph. */
enum cap_how { HOW_END, HOW_BREAK, HOW_GOTO, HOW_RETURN, HOW_DESTROY_STREAM, HOW_HAND_KEEP, HOW_HAND_DROP,
               HOW_INTO_HELD };
static const char *const cap_how_names[] = {"ended", "left by break", "left by goto", "left by return",
                                            "its stream destroyed inside", "by hand, kept", "by hand, abandoned",
                                            "into a held graph"};

struct cap {
    struct child s;             /* the stream, a copy (out of the array for HOW_DESTROY_STREAM) */
    struct rec *r;              /* its pool generation */
    struct rec *b;              /* the generation of a nested scope, or NULL */
    struct child ev;            /* an event made for the capture to record (id 0: none) */
    enum cap_how how;
    CUstreamCaptureMode mode;
    struct overlap o;           /* other threads' synchronizes of r's context (overlaps) */
    CUcontext base;             /* the current context around the capture */
    cuctx_graph g;
    int ran, refused, stream_gone;
    int dead_at_end;            /* r's context dead as the block ended (before the capture's end) */
    CUresult begin_rc, end_rc;
    size_t nodes;               /* launches the capture took: the graph's nodes */
};

/* A call on the capturing stream: alive, it works; dead, it is refused
 * before the driver; and the capture may have been invalidated by another
 * thread's synchronize of the context meanwhile (then the driver answers
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED to work on its stream). */
static void cap_check(struct cap *cp, CUresult rc, int dead_before, int alive_after, const char *what)
{
    int ok;
    if (rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        ok = !dead_before && overlaps(&cp->o, &cp->r->life->syncs_begun);
    else if (dead_before)
        ok = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else if (alive_after)
        ok = rc == CUDA_SUCCESS;
    else
        ok = rc == CUDA_SUCCESS || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!ok)
        fail("%s in a capture (%s, mode %s) on a stream of a %s context (%s): %s: %s", what,
             cap_how_names[cp->how], cp->mode == CU_STREAM_CAPTURE_MODE_RELAXED ? "RELAXED" : "THREAD_LOCAL",
             ctx_kind_names[cp->r->kind], dead_before ? "dead" : alive_after ? "alive" : "dying", RC(rc),
             cuctx_last_error_message());
}

static void cap_launch(struct worker *w, struct cap *cp)
{
    if (!w->kernel)
        return;
    int dead_before = life_is(cp->r, DEAD);
    CUresult rc = cuctx_launch(w->kernel, (cuctx_stream){cp->s.id}, one, one, 0, NULL);
    int alive_after = life_is(cp->r, ALIVE);
    w->c.cap_launches++;
    cap_check(cp, rc, dead_before, alive_after, "cuctx_launch of a library's kernel");
    if (rc == CUDA_SUCCESS)
        cp->nodes++;
}

/* The captured work: 0-2 launches, and an event record (no node); now
 * and then a pause, so that churn and other threads' synchronizes reach
 * the context during the capture more often than a short capture lets
 * them. */
static void cap_work(struct worker *w, struct cap *cp)
{
    unsigned n = rnd(&w->rng, 3);
    if (n) {
        cap_launch(w, cp);
        n--;
    }
    if (rnd(&w->rng, 16) == 0) {
        w->c.cap_paused++;
        sleep_us(10 + rnd(&w->rng, 150));
    }
    for (; n > 0; n--)
        cap_launch(w, cp);
    if (cp->ev.id && rnd(&w->rng, 2)) {
        int dead_before = life_is(cp->r, DEAD);
        CUresult rc = cuctx_event_record((cuctx_event){cp->ev.id}, (cuctx_stream){cp->s.id});
        int alive_after = life_is(cp->r, ALIVE);
        w->c.cap_records++;
        cap_check(cp, rc, dead_before, alive_after, "cuctx_event_record");
    }
}

/* After a scope over cp->b nested in the capture (a launch on the
 * capturing stream in it, the stream's context pushed for it): its enter's
 * result if it failed, checked as op_scope's, and the current context,
 * which must be the one before the scope. */
static void cap_nested_check(struct worker *w, struct cap *cp, int handle_dead, int dead_before, int entered,
                             CUresult rc)
{
    if (!entered)
        scope_result_ok(w, cp->b, handle_dead, dead_before, rc, "CUCTX_SCOPED_ELSE nested in a capture");
    CUcontext after = current("after a scope nested in a capture");
    if (after != cp->base)
        fail("after a scope nested in a capture: current context %p, expected %p as before it", (void *)after,
             (void *)cp->base);
}

/* CUCTX_CAPTURE_ELSE and its ways out. Returns 1 if the block was left by
 * return. */
static int cap_block(struct worker *w, struct cap *cp)
{
    int b_handle_dead = 0, b_dead_before = 0, b_entered = 0, in_nested = 0;
    CUresult brc = CUDA_SUCCESS;
    CUCTX_CAPTURE_ELSE((cuctx_stream){cp->s.id}, &cp->g, cp->mode, cp->refused = 1,
                       cp->begin_rc = cuctx_last_error()) {
        cp->ran = 1;
        cap_work(w, cp);
        if (cp->b) {
            w->c.scopes++;
            w->c.cap_nested++;
            b_handle_dead = atomic_load(&cp->b->hstate) == DEAD;
            b_dead_before = b_handle_dead || life_is(cp->b, DEAD);
            CUCTX_SCOPED_ELSE(cp->b->h, brc = cuctx_last_error()) {
                b_entered = 1;
                if (scope_result_ok(w, cp->b, b_handle_dead, b_dead_before, CUDA_SUCCESS,
                                    "CUCTX_SCOPED_ELSE nested in a capture"))
                    cap_launch(w, cp);
                in_nested = 1;
                if (cp->how == HOW_GOTO)
                    goto abandoned;
                if (cp->how == HOW_RETURN)
                    return 1;
                in_nested = 0;
            }
            cap_nested_check(w, cp, b_handle_dead, b_dead_before, b_entered, brc);
        }
        if (cp->how == HOW_GOTO)
            goto abandoned;
        if (cp->how == HOW_RETURN)
            return 1;
        if (cp->how == HOW_BREAK)
            break;
        if (cp->how == HOW_DESTROY_STREAM) {
            /* the destroy answers 0 and takes the capture with it */
            child_destroy(w, &cp->s, 0);
            cp->stream_gone = 1;
        }
        cp->dead_at_end = life_is(cp->r, DEAD);
    }
    cp->end_rc = cp->ran && !cp->g.id ? cuctx_last_error() : CUDA_SUCCESS;
    return 0;
abandoned:
    if (in_nested)
        cap_nested_check(w, cp, b_handle_dead, b_dead_before, b_entered, brc);
    return 0;
}

/* By hand: cuctx_capture_begin, the work, cuctx_capture_end(keep), and
 * an end again, which must be a no-op. */
static void cap_by_hand(struct worker *w, struct cap *cp)
{
    cuctx_capture c;
    int keep = cp->how == HOW_HAND_KEEP;
    w->c.cap_by_hand++;
    cp->begin_rc = cuctx_capture_begin(&c, (cuctx_stream){cp->s.id}, &cp->g, cp->mode);
    if (cp->begin_rc != CUDA_SUCCESS) {
        cp->refused = 1;
        CUresult rc = cuctx_capture_end(&c, keep);
        if (rc != CUDA_SUCCESS)
            fail("cuctx_capture_end of a capture whose begin failed: %s, expected CUDA_SUCCESS (a no-op)", RC(rc));
        return;
    }
    cp->ran = 1;
    cap_work(w, cp);
    cp->dead_at_end = life_is(cp->r, DEAD);
    cp->end_rc = cuctx_capture_end(&c, keep);
    CUresult again = cuctx_capture_end(&c, keep);
    if (again != CUDA_SUCCESS)
        fail("a second cuctx_capture_end: %s, expected CUDA_SUCCESS (a no-op)", RC(again));
}

/* A capture into a handle that holds a live graph: refused before the
 * driver (CUDA_ERROR_INVALID_VALUE), the block skipped, the handle kept. */
static void cap_into_held(struct worker *w, struct cap *cp, const struct child *held)
{
    cuctx_graph g = {held->id};
    int ran = 0;
    CUresult rc = CUDA_SUCCESS;
    CUCTX_CAPTURE_ELSE((cuctx_stream){cp->s.id}, &g, cp->mode, rc = cuctx_last_error()) {
        ran = 1;
    }
    w->c.cap_into_held++;
    if (ran || rc != CUDA_ERROR_INVALID_VALUE || g.id != held->id)
        fail("a capture into a handle holding a live graph: %s, %s, the handle %s", ran ? "the block ran" : "skipped",
             RC(rc), g.id == held->id ? "kept" : "changed");
}

/* The capture, in whichever form; the current context checked after it. */
static void cap_run(struct worker *w, struct cap *cp, const struct child *held)
{
    cp->base = current("before a capture");
    if (cp->how == HOW_INTO_HELD)
        cap_into_held(w, cp, held);
    else if (cp->how == HOW_HAND_KEEP || cp->how == HOW_HAND_DROP)
        cap_by_hand(w, cp);
    else if (cap_block(w, cp) && cp->how != HOW_RETURN)
        fail("a capture block returned, left %s", cap_how_names[cp->how]);
    CUcontext after = current("after a capture");
    if (after != cp->base)
        fail("after a capture (%s): current context %p, expected %p as before it", cap_how_names[cp->how],
             (void *)after, (void *)cp->base);
}

/* What became of the capture: checked against what is known of its
 * context's life and of the synchronizes that overlapped it. */
static void cap_outcome(struct worker *w, struct cap *cp, int dead_before, int alive_after, int synced)
{
    int ok = 1;
    const char *expected = "";
    if (cp->how == HOW_INTO_HELD)
        return;
    if (cp->refused) {
        w->c.cap_refused++;
        ok = !cp->ran && !cp->g.id && cp->begin_rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && !alive_after;
        expected = "a begin refused only with CUDA_ERROR_CONTEXT_IS_DESTROYED, its context dead or dying";
    } else if (!cp->ran) {
        ok = 0;
        expected = "the block run, or on_fail";
    } else if (cp->how == HOW_DESTROY_STREAM) {
        w->c.cap_stream_gone++;
        ok = !cp->g.id && cp->end_rc == CUDA_ERROR_INVALID_HANDLE;
        expected = "no graph, CUDA_ERROR_INVALID_HANDLE";
    } else if (cp->how != HOW_END && cp->how != HOW_HAND_KEEP) {
        w->c.cap_abandoned++;
        ok = !cp->g.id;
        expected = "no graph";
        if (cp->how == HOW_HAND_DROP) {
            ok = ok && (cp->end_rc == CUDA_SUCCESS || (cp->end_rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && !alive_after)
                        || (cp->end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && synced));
            expected = "no graph; CUDA_SUCCESS, or the context's end, or an invalidation where a synchronize overlapped";
        }
    } else if (cp->g.id) {
        w->c.cap_kept++;
        ok = !cp->dead_at_end && cp->end_rc == CUDA_SUCCESS;
        expected = "no graph once the context was dead";
        CUgraph raw = cuctx_graph_raw(cp->g);
        size_t n = 0;
        if (!raw || (raw_graph_nodes && (raw_graph_nodes(raw, NULL, &n) != CUDA_SUCCESS || n != cp->nodes)))
            fail("a kept graph: cuctx_graph_raw %p, %zu nodes, %zu launches captured", (void *)raw, n, cp->nodes);
    } else if (cp->end_rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && !alive_after) {
        w->c.cap_ctx_ended++;
    } else if (cp->end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && synced) {
        w->c.cap_invalidated++;
    } else {
        ok = 0;
        expected = "a graph, or no graph with the context's end or an invalidation where a synchronize overlapped";
    }
    if (!ok)
        fail("a capture (%s, mode %s) on a stream of a %s context (%s, at the block's end %s): %s, graph %s, "
             "begin %s, end %s (%s); expected %s",
             cap_how_names[cp->how], cp->mode == CU_STREAM_CAPTURE_MODE_RELAXED ? "RELAXED" : "THREAD_LOCAL",
             ctx_kind_names[cp->r->kind], dead_before ? "dead" : alive_after ? "alive" : "dying",
             cp->dead_at_end ? "dead" : "not dead", cp->refused ? "refused" : cp->ran ? "ran" : "neither",
             cp->g.id ? "kept" : "{0}", RC(cp->begin_rc), RC(cp->end_rc), cuctx_last_error_message(), expected);
}

/* A kept graph: into the arrays as an untethered child, or (now and then)
 * instantiated once in the stream's context and destroyed at once. */
static void cap_keep(struct worker *w, struct cap *cp)
{
    struct child gc = {C_GRAPH, cp->g.id, cp->r, cp->nodes, 0, 0, 0, NULL};
    cp->g.id = 0;
    w->c.creates[C_GRAPH]++;
    if (rnd(&w->rng, 3) == 0) {
        struct rec *r = cp->r;
        struct child ec = {C_GRAPH_EXEC, 0, r, 0, 0, 0, 0, NULL};
        cuctx_graph_exec ge = {0};
        int handle_dead = atomic_load(&r->hstate) == DEAD;
        int dead_before = handle_dead || life_is(r, DEAD);
        CUresult rc = cuctx_graph_exec_instantiate(&ge, r->h, cuctx_graph_raw((cuctx_graph){gc.id}), 0);
        int alive_after = atomic_load(&r->hstate) == ALIVE && life_is(r, ALIVE);
        ctx_call_check(r, handle_dead, dead_before, alive_after, rc, "graph exec instantiate of a captured graph",
                       "in");
        if ((rc == CUDA_SUCCESS) != (ge.id != 0))
            fail("graph exec instantiate of a captured graph returned %s with handle %#" PRIx64, RC(rc), ge.id);
        if (rc == CUDA_SUCCESS) {
            w->c.creates[C_GRAPH_EXEC]++;
            w->c.cap_instantiated++;
            ec.id = ge.id;
            if (w->n_own < OWN_MAX)
                w->own[w->n_own++] = ec;
            else
                child_destroy(w, &ec, 0);
        } else {
            w->c.create_refused++;
        }
        /* One exec per graph, as create_graph_exec's graphs: the graph
         * goes now, with home current as graph_free's (shared_graph, and
         * graph_new's note on the real driver). */
        CUCTX_SCOPED(home) {
            child_destroy(w, &gc, rnd(&w->rng, 3) == 0);
        }
        if (gc.id)
            fail("a captured graph was not destroyed after its instantiation (the scope over home failed?)");
        return;
    }
    if (rnd(&w->rng, 5) == 0) {
        pthread_mutex_lock(&shared_mu);
        if (n_shared < SHARED_MAX) {
            shared[n_shared++] = gc;
            gc.id = 0;
        }
        pthread_mutex_unlock(&shared_mu);
        if (!gc.id)
            return;
    }
    if (w->n_own < OWN_MAX)
        w->own[w->n_own++] = gc;
    else
        child_destroy(w, &gc, 0);
}

/* A capture on one of this worker's non-blocking streams, in a random
 * form (enum cap_how), mode THREAD_LOCAL or RELAXED, now and then inside a
 * scope over home; the read side of every raw lock held throughout, as in
 * op_scope (a raw-borrowed context is not destroyed during a capture; owned
 * and primary ones may be). */
static void op_capture(struct worker *w)
{
    int si = -1;
    for (int tries = 0; tries < 6 && w->n_own; tries++) {
        int i = (int)rnd(&w->rng, (unsigned)w->n_own);
        if (w->own[i].kind == C_STREAM && (w->own[i].flags & CU_STREAM_NON_BLOCKING)) {
            si = i;
            break;
        }
    }
    if (si < 0) {
        op_create(w);
        return;
    }
    static const enum cap_how hows[16] = {HOW_END, HOW_END, HOW_END, HOW_END, HOW_END, HOW_END, HOW_END,
                                          HOW_BREAK, HOW_BREAK, HOW_GOTO, HOW_RETURN, HOW_DESTROY_STREAM,
                                          HOW_HAND_KEEP, HOW_HAND_KEEP, HOW_HAND_DROP, HOW_INTO_HELD};
    struct cap cp = {0};
    const struct child *held = NULL;
    cp.s = w->own[si];
    cp.r = cp.s.rec;
    cp.how = hows[rnd(&w->rng, 16)];
    cp.mode = rnd(&w->rng, 2) ? CU_STREAM_CAPTURE_MODE_THREAD_LOCAL : CU_STREAM_CAPTURE_MODE_RELAXED;
    if (cp.how == HOW_INTO_HELD && !(held = random_own(w, C_GRAPH)))
        cp.how = HOW_END;
    if (cp.how <= HOW_DESTROY_STREAM && opt_nested && rnd(&w->rng, 3) == 0)
        cp.b = pick_rec(&w->rng);
    int in_home = rnd(&w->rng, 4) == 0;

    for (int i = 0; i < pool_n; i++)
        pthread_rwlock_rdlock(&pool[i].raw_lock);
    raw_all = 1;
    if (cp.how != HOW_INTO_HELD && rnd(&w->rng, 2)) {
        /* an event for the capture to record, made in the stream's context */
        struct rec *r = cp.r;
        cp.ev = (struct child){C_EVENT, 0, r, 0, 0, 0, 0, NULL};
        int handle_dead = atomic_load(&r->hstate) == DEAD;
        int dead_before = handle_dead || life_is(r, DEAD);
        CUresult rc = child_create(w, &cp.ev, r->h);
        int alive_after = atomic_load(&r->hstate) == ALIVE && life_is(r, ALIVE);
        ctx_call_check(r, handle_dead, dead_before, alive_after, rc, "event create (for a capture)", "in");
        if (rc == CUDA_SUCCESS) {
            w->c.creates[C_EVENT]++;
        } else {
            w->c.create_refused++;
            cp.ev.id = 0;
        }
    }
    if (cp.how == HOW_DESTROY_STREAM)
        w->own[si] = w->own[--w->n_own];    /* the block destroys it */

    struct life *l = cp.r->life;
    if (opt_async && !opt_async_beside_capture)
        pthread_rwlock_rdlock(&l->capture_lock);
    w->c.captures++;
    cp.o = overlap_mark(&l->captures, &l->captures_begun, &l->syncs, &l->syncs_begun);
    int dead_before = life_is(cp.r, DEAD);
    if (in_home) {
        w->c.cap_in_home++;
        CUCTX_SCOPED(home) {
            cap_run(w, &cp, held);
        }
        CUcontext cur = current("after a scope over home around a capture");
        if (cur != NULL)
            fail("after a scope over home around a capture: current context %p, expected none", (void *)cur);
    } else {
        cap_run(w, &cp, held);
    }
    int synced = overlaps(&cp.o, &l->syncs_begun);
    atomic_fetch_sub(&l->captures, 1);
    if (opt_async && !opt_async_beside_capture)
        pthread_rwlock_unlock(&l->capture_lock);
    int alive_after = life_is(cp.r, ALIVE);
    cap_outcome(w, &cp, dead_before, alive_after, synced);

    if (cp.how == HOW_DESTROY_STREAM && !cp.stream_gone)
        child_destroy(w, &cp.s, 0);         /* the block did not run */
    if (cp.how != HOW_DESTROY_STREAM) {
        /* the stream is usable after any capture: not capturing any more */
        int sdead = life_is(cp.r, DEAD);
        CUresult rc = cuctx_stream_synchronize((cuctx_stream){cp.s.id});
        int salive = life_is(cp.r, ALIVE);
        if (!(sdead ? rc == CUDA_ERROR_CONTEXT_IS_DESTROYED
                    : salive ? rc == CUDA_SUCCESS : rc == CUDA_SUCCESS || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED))
            fail("cuctx_stream_synchronize after a capture (%s) on a stream of a %s context (%s): %s: %s",
                 cap_how_names[cp.how], ctx_kind_names[cp.r->kind], sdead ? "dead" : salive ? "alive" : "dying",
                 RC(rc), cuctx_last_error_message());
    }
    if (cp.ev.id)
        child_destroy(w, &cp.ev, 0);
    if (cp.g.id)
        cap_keep(w, &cp);
    raw_all = 0;
    for (int i = pool_n - 1; i >= 0; i--)
        pthread_rwlock_unlock(&pool[i].raw_lock);
}

/* ------------------------------------------------------------------------
 *  Stream-ordered memory and memory pools (op_async)
 * ------------------------------------------------------------------------ */

static pthread_mutex_t pool_gens_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pool_gen *all_pool_gens;

static struct pool_gen *pool_gen_new(void)
{
    struct pool_gen *g = calloc(1, sizeof *g);
    if (!g) {
        perror("stress: calloc");
        exit(2);
    }
    atomic_init(&g->live, 0);
    pthread_mutex_lock(&pool_gens_mu);
    g->all_next = all_pool_gens;
    all_pool_gens = g;
    pthread_mutex_unlock(&pool_gens_mu);
    return g;
}

/* The worker's pool of device dev, made when it has none (no context is
 * needed: a pool belongs to its device); {0} if the driver refused (a
 * failure counted). */
static cuctx_mem_pool worker_pool(struct worker *w, CUdevice dev, struct pool_gen **pg)
{
    if (!w->pools[dev].id) {
        CUresult rc = cuctx_mem_pool_create(&w->pools[dev], dev, NULL);
        if (rc != CUDA_SUCCESS || !w->pools[dev].id) {
            fail("cuctx_mem_pool_create(%d): %s, handle %#" PRIx64 ": %s", (int)dev, RC(rc), w->pools[dev].id,
                 cuctx_last_error_message());
            w->pools[dev].id = 0;
            return (cuctx_mem_pool){0};
        }
        w->pool_gens[dev] = pool_gen_new();
        w->c.pools_made++;
    }
    *pg = w->pool_gens[dev];
    return w->pools[dev];
}

/* A new child: into the shared array now and then, else this worker's
 * (destroyed at once when that is full). */
static void child_keep(struct worker *w, struct child *c)
{
    if (rnd(&w->rng, 5) == 0) {
        pthread_mutex_lock(&shared_mu);
        if (n_shared < SHARED_MAX) {
            shared[n_shared++] = *c;
            c->id = 0;
        }
        pthread_mutex_unlock(&shared_mu);
        if (!c->id)
            return;
    }
    if (w->n_own < OWN_MAX)
        w->own[w->n_own++] = *c;
    else
        child_destroy(w, c, 0);
}

/* On a default stream by name, in a scope (scoped_create, which checks the
 * result as other creates with {0}): the current context's. */
static CUresult async_alloc_named(struct worker *w, struct child *c)
{
    cuctx_mem m = {0};
    cuctx_stream s = {0};
    unsigned which = rnd(&w->rng, 3);
    if (which == 1)
        s = CUCTX_STREAM_LEGACY;
    else if (which == 2)
        s = CUCTX_STREAM_PER_THREAD;
    c->size = 256 + rnd(&w->rng, 64 << 10);
    c->flags = AF_NAMED;
    c->stream = 0;
    c->pg = NULL;
    CUresult rc = cuctx_mem_alloc_async(&m, s, c->size);
    c->id = m.id;
    if ((rc == CUDA_SUCCESS) != (m.id != 0))
        fail("cuctx_mem_alloc_async on a default stream returned %s with handle %#" PRIx64, RC(rc), m.id);
    w->c.async_ops++;
    w->c.async_named += rc == CUDA_SUCCESS;
    return rc;
}

/* An allocation on stream sc (this worker's, or a copy of a shared one
 * that another thread may destroy meanwhile: raced), from the device's
 * current pool, the worker's pool of the device, or a handle of the
 * device's default pool (destroyed right after: the handle alone ends);
 * checked as a create in the stream's context. */
static void async_alloc_on(struct worker *w, const struct child *sc, int raced)
{
    struct rec *r = sc->rec;
    struct child c = {C_MEM_ASYNC, 0, r, 256 + rnd(&w->rng, 64 << 10), 0, sc->flags & CU_STREAM_NON_BLOCKING, sc->id,
                      NULL};
    cuctx_mem m = {0};
    cuctx_mem_pool mp = {0}, dflt = {0};
    const char *what = "cuctx_mem_alloc_async";
    CUresult rc;
    unsigned how = opt_async_ops & AO_FROM_POOL ? rnd(&w->rng, 8) : 7;
    if (how < 2) {
        if (!(mp = worker_pool(w, r->dev, &c.pg)).id)
            return;
        c.flags |= AF_POOL;
        what = "cuctx_mem_alloc_from_pool (the worker's pool)";
    } else if (how == 2) {
        if ((rc = cuctx_mem_pool_default(&dflt, r->dev)) != CUDA_SUCCESS || !dflt.id) {
            fail("cuctx_mem_pool_default(%d): %s: %s", (int)r->dev, RC(rc), cuctx_last_error_message());
            return;
        }
        mp = dflt;
        c.flags |= AF_DEFAULT_POOL;
        w->c.default_pools++;
        what = "cuctx_mem_alloc_from_pool (a default pool's handle)";
    }
    if (c.pg)
        atomic_fetch_add(&c.pg->live, 1);
    struct raw_hold rh;
    raw_lock(&rh, r, NULL);
    int dead_before = life_is(r, DEAD);
    if (mp.id)
        rc = cuctx_mem_alloc_from_pool(&m, mp, (cuctx_stream){sc->id}, c.size);
    else
        rc = cuctx_mem_alloc_async(&m, (cuctx_stream){sc->id}, c.size);
    int alive_after = life_is(r, ALIVE);
    raw_unlock(&rh);
    w->c.async_ops++;
    if (dflt.id) {
        CUresult drc = cuctx_mem_pool_destroy(&dflt);
        if (drc != CUDA_SUCCESS || dflt.id)
            fail("cuctx_mem_pool_destroy of a default pool's handle: %s: %s", RC(drc), cuctx_last_error_message());
    }
    if ((rc == CUDA_SUCCESS) != (m.id != 0))
        fail("%s returned %s with handle %#" PRIx64, what, RC(rc), m.id);
    int ok;
    if (rc == CUDA_ERROR_INVALID_HANDLE)
        ok = raced;
    else if (dead_before)
        ok = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else if (alive_after)
        ok = rc == CUDA_SUCCESS;
    else
        ok = rc == CUDA_SUCCESS || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (!ok)
        fail("%s on a %s%s stream of a %s context (%s): %s: %s", what, raced ? "shared " : "",
             sc->flags & CU_STREAM_NON_BLOCKING ? "non-blocking" : "blocking", ctx_kind_names[r->kind],
             dead_before ? "dead" : alive_after ? "alive" : "dying", RC(rc), cuctx_last_error_message());
    if (rc != CUDA_SUCCESS) {
        if (c.pg)
            atomic_fetch_sub(&c.pg->live, 1);
        w->c.async_refused += rc == CUDA_ERROR_CONTEXT_IS_DESTROYED;
        w->c.async_raced += rc == CUDA_ERROR_INVALID_HANDLE;
        if (m.id) {         /* reported above; not left behind */
            cuctx_mem_destroy(&m);
        }
        return;
    }
    c.id = m.id;
    w->c.creates[C_MEM_ASYNC]++;
    w->c.async_own += !raced;
    w->c.async_shared += raced;
    w->c.async_from_pool += (c.flags & AF_POOL) != 0;
    w->c.async_from_default += (c.flags & AF_DEFAULT_POOL) != 0;
    child_keep(w, &c);
}

/* A stream of this worker's still (its handle not destroyed). */
static int own_stream_alive(const struct worker *w, uint64_t id)
{
    for (int i = 0; i < w->n_own; i++)
        if (w->own[i].kind == C_STREAM && w->own[i].id == id)
            return 1;
    return 0;
}

static void async_alloc_own(struct worker *w)
{
    struct child *sc = random_own(w, C_STREAM);
    if (sc)
        async_alloc_on(w, sc, 0);
    else
        op_create(w);
}

/* cuctx_mem_free_async of this worker's memory on another of its streams,
 * of the same device, while the stream it was allocated on lives: the
 * memory is freed (ordered on that stream) and the handle reset; with that
 * stream's context dead, refused and the handle kept. */
static void async_free_other(struct worker *w)
{
    int mi = -1;
    for (int tries = 0; tries < 8 && w->n_own; tries++) {
        int i = (int)rnd(&w->rng, (unsigned)w->n_own);
        if (w->own[i].kind == C_MEM_ASYNC && w->own[i].stream && own_stream_alive(w, w->own[i].stream)) {
            mi = i;
            break;
        }
    }
    if (mi < 0) {
        async_alloc_own(w);
        return;
    }
    struct child mc = w->own[mi];
    const struct child *s2 = NULL;
    for (int tries = 0; tries < 8; tries++) {
        const struct child *c = &w->own[rnd(&w->rng, (unsigned)w->n_own)];
        if (c->kind == C_STREAM && c->id != mc.stream && c->rec->dev == mc.rec->dev) {
            s2 = c;
            break;
        }
    }
    if (!s2) {
        async_alloc_own(w);
        return;
    }
    struct rec *sr = s2->rec;
    struct raw_hold rh;
    raw_lock(&rh, mc.rec, sr);
    int dead_before = life_is(sr, DEAD);
    int mdead_before = life_is(mc.rec, DEAD);
    cuctx_mem m = {mc.id};
    CUresult rc = cuctx_mem_free_async(&m, (cuctx_stream){s2->id});
    int alive_after = life_is(sr, ALIVE);
    raw_unlock(&rh);
    int freed = rc == CUDA_SUCCESS && m.id == 0, kept = rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && m.id == mc.id;
    int ok = dead_before ? kept : alive_after ? freed : freed || kept;
    if (!ok)
        fail("cuctx_mem_free_async on another stream (of a %s context, %s): %s, the handle %s: %s",
             ctx_kind_names[sr->kind], dead_before ? "dead" : alive_after ? "alive" : "dying", RC(rc),
             m.id == 0 ? "reset" : m.id == mc.id ? "kept" : "changed", cuctx_last_error_message());
    if (m.id) {
        w->c.async_free_other_refused++;
        return;
    }
    /* freed: a destroy, as child_destroy counts one */
    w->own[mi] = w->own[--w->n_own];
    w->c.destroys++;
    w->c.async_destroys++;
    w->c.async_after_ctx += mdead_before;
    w->c.async_free_other++;
    if (mc.pg)
        atomic_fetch_sub(&mc.pg->live, 1);
    if (rnd(&w->rng, 3) == 0) {
        w->stale[w->stale_next].kind = C_MEM_ASYNC;
        w->stale[w->stale_next].id = mc.id;
        w->stale_next = (w->stale_next + 1) % STALE_MAX;
        if (w->n_stale < STALE_MAX)
            w->n_stale++;
    }
    beat();
}

/* cuctx_mem_free_async refusing before the driver: memory of
 * cuctx_mem_alloc (CUDA_ERROR_INVALID_VALUE), or a default stream by name
 * with no context current (CUDA_ERROR_INVALID_CONTEXT); the handle kept. */
static void async_free_refused(struct worker *w, int plain)
{
    struct child *c = random_own(w, plain ? C_MEM : C_MEM_ASYNC);
    if (!c) {
        if (plain)
            op_create(w);
        else
            async_alloc_own(w);
        return;
    }
    cuctx_mem m = {c->id};
    CUresult want = plain ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_CONTEXT;
    cuctx_stream s = plain ? (cuctx_stream){0} : rnd(&w->rng, 2) ? CUCTX_STREAM_LEGACY : CUCTX_STREAM_PER_THREAD;
    if (plain && rnd(&w->rng, 2)) {
        const struct child *sc = random_own(w, C_STREAM);
        if (sc)
            s.id = sc->id;
    }
    CUresult rc = cuctx_mem_free_async(&m, s);
    if (rc != want || m.id != c->id)
        fail("cuctx_mem_free_async of %s: %s, the handle %s; expected %s and the handle kept",
             plain ? "cuctx_mem_alloc memory" : "stream-ordered memory on a default stream with no context current",
             RC(rc), m.id == c->id ? "kept" : "changed", RC(want));
    if (plain)
        w->c.async_plain_refused++;
    else
        w->c.async_no_ctx_refused++;
}

/* The worker's pools: a trim, a destroy (often with allocations alive,
 * which live on), or calls on a stale pool copy or {0}, refused before the
 * driver. */
static void async_pool_op(struct worker *w)
{
    CUdevice dev = (CUdevice)rnd(&w->rng, (unsigned)n_devices);
    cuctx_mem_pool p = w->pools[dev];
    CUresult rc;
    unsigned op = rnd(&w->rng, 4);
    if (op == 1 && (opt_async_ops & AO_NO_POOL_DESTROY))
        op = 0;
    switch (op) {
    case 0:
        if (!p.id)
            break;
        rc = cuctx_mem_pool_trim(p, rnd(&w->rng, 2) ? 0 : 4096);
        if (rc != CUDA_SUCCESS || !cuctx_mem_pool_raw(p))
            fail("cuctx_mem_pool_trim / _raw of a live pool: %s: %s", RC(rc), cuctx_last_error_message());
        w->c.pool_trims++;
        return;
    case 1:
        if (!p.id)
            break;
        w->c.pools_destroyed_alive += atomic_load(&w->pool_gens[dev]->live) > 0;
        rc = cuctx_mem_pool_destroy(&w->pools[dev]);
        if (rc != CUDA_SUCCESS || w->pools[dev].id)
            fail("cuctx_mem_pool_destroy (%ld allocations alive): %s: %s", atomic_load(&w->pool_gens[dev]->live),
                 RC(rc), cuctx_last_error_message());
        w->pools[dev].id = 0;
        w->pool_gens[dev] = NULL;
        w->c.pools_destroyed++;
        w->stale_pools[w->n_stale_pools++ % 8] = p.id;
        return;
    default:
        break;
    }
    /* a stale copy (or a trim of {0}; an allocation from {0} is from the
     * device's current pool): every call refused, the driver not reached */
    int nst = w->n_stale_pools < 8 ? w->n_stale_pools : 8;
    cuctx_mem_pool st = {nst ? w->stale_pools[rnd(&w->rng, (unsigned)nst)] : 0};
    CUresult want = CUDA_ERROR_INVALID_HANDLE;
    const char *what;
    switch (st.id ? rnd(&w->rng, 4) : 1) {
    case 0: {
        cuctx_mem m = {0};
        what = "cuctx_mem_alloc_from_pool";
        rc = cuctx_mem_alloc_from_pool(&m, st, (cuctx_stream){0}, 4096);
        if (m.id) {
            fail("cuctx_mem_alloc_from_pool from a %s pool made memory", st.id ? "stale" : "{0}");
            cuctx_mem_destroy(&m);
        }
        break;
    }
    case 1:
        what = "cuctx_mem_pool_trim";
        rc = cuctx_mem_pool_trim(st, 0);
        break;
    case 2:
        what = "cuctx_mem_pool_raw";
        rc = cuctx_mem_pool_raw(st) ? CUDA_SUCCESS : cuctx_last_error();
        break;
    default:
        what = "cuctx_mem_pool_destroy";
        rc = cuctx_mem_pool_destroy(&st);
        if (st.id)
            fail("cuctx_mem_pool_destroy of a stale copy left the handle set");
        break;
    }
    w->c.pool_stale++;
    if (rc != want)
        fail("%s of a %s pool: %s, expected %s", what, st.id ? "stale" : "{0}", RC(rc), RC(want));
}

/* An allocation on a shared stream (a copy: others destroy it). */
static void async_alloc_shared(struct worker *w)
{
    struct child sc = {0};
    pthread_mutex_lock(&shared_mu);
    for (int tries = 0; tries < 6 && n_shared; tries++) {
        const struct child *c = &shared[rnd(&w->rng, (unsigned)n_shared)];
        if (c->kind == C_STREAM) {
            sc = *c;
            break;
        }
    }
    pthread_mutex_unlock(&shared_mu);
    if (sc.id)
        async_alloc_on(w, &sc, 1);
    else
        async_alloc_own(w);
}

static void op_async(struct worker *w)
{
    unsigned r = rnd(&w->rng, 100);
    if (r < 40)
        async_alloc_own(w);
    else if (r < 55 && (opt_async_ops & AO_SHARED))
        async_alloc_shared(w);
    else if (r >= 55 && r < 70 && (opt_async_ops & AO_FREE_OTHER))
        async_free_other(w);
    else if (r >= 70 && r < 76 && (opt_async_ops & AO_REFUSED))
        async_free_refused(w, 1);
    else if (r >= 76 && r < 80 && (opt_async_ops & AO_REFUSED))
        async_free_refused(w, 0);
    else if (r >= 80 && (opt_async_ops & AO_POOL_OPS))
        async_pool_op(w);
    else
        async_alloc_own(w);
}

/* The worker's library: a PTX of one kernel that takes no arguments. */
static const char stress_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry tick()\n"
    "{\n"
    "    ret;\n"
    "}\n";
static _Atomic unsigned long libraries_loaded;
static _Atomic int no_libraries;    /* the driver has none (older than 12.0) */

static void *work(void *arg)
{
    struct worker *w = arg;
    /* Loaded with no context current (a library belongs to none), while
     * churn goes on; destroyed at the end of the run, after every context. */
    CUresult lrc = cuctx_library_load_data(&w->lib, stress_ptx);
    if (lrc == CUDA_SUCCESS) {
        atomic_fetch_add(&libraries_loaded, 1);
        if ((lrc = cuctx_library_kernel(w->lib, "tick", &w->kernel)) != CUDA_SUCCESS)
            fail("cuctx_library_kernel(\"tick\"): %s: %s", RC(lrc), cuctx_last_error_message());
    } else if (lrc == CUDA_ERROR_NOT_SUPPORTED) {
        atomic_store(&no_libraries, 1);
    } else {
        fail("cuctx_library_load_data: %s: %s", RC(lrc), cuctx_last_error_message());
    }
    for (unsigned long i = 0; i < w->quota; i++) {
        unsigned r = rnd(&w->rng, 100);
        if (opt_scopes && rnd(&w->rng, 16) == 0)
            op_scope(w);
        else if (opt_capture && rnd(&w->rng, 24) == 0)
            op_capture(w);
        else if (opt_async && rnd(&w->rng, 8) == 0)
            op_async(w);
        else if (r < 28)
            op_create(w);
        else if (r < 52)
            op_use_own(w);
        else if (r < 66)
            op_destroy_own(w);
        else if (r < 74)
            op_destroy_shared(w);
        else if (r < 82)
            op_use_shared(w);
        else if (r < 92) {
            if (w->n_stale)
                stale_use(w);
            else
                stale_ctx_use(w);
        } else if (r < 96) {
            stale_ctx_use(w);
        } else {
            ctx_use(w);
        }
        w->c.ops++;
        beat();
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 *  Churn
 * ------------------------------------------------------------------------ */

static _Atomic int stop_churn;
static unsigned long churn_us;

struct churner {
    pthread_t thread;
    uint64_t rng;
    unsigned long replaced;
};

static void *churn(void *arg)
{
    struct churner *ch = arg;
    while (!atomic_load(&stop_churn)) {
        if (churn_us)
            sleep_us(churn_us);
        if (atomic_load(&stop_churn))
            break;
        unsigned step = rnd(&ch->rng, 8);
        if (opt_resets && step < 2) {
            if (prim_reset((CUdevice)rnd(&ch->rng, (unsigned)n_devices)))
                beat();
            continue;
        }
        if (opt_outside && have_sim && step == 2) {
            prim_outside_step((CUdevice)rnd(&ch->rng, (unsigned)n_devices), &ch->rng);
            beat();
            continue;
        }
        int s = (int)rnd(&ch->rng, (unsigned)pool_n);
        struct rec *nr = rec_make_random(s, &ch->rng);
        if (!nr)
            continue;
        pthread_mutex_lock(&pool[s].mu);
        struct rec *old = pool[s].rec;
        pool[s].rec = nr;
        pthread_mutex_unlock(&pool[s].mu);
        rec_retire(old, &ch->rng);
        ch->replaced++;
        beat();
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 *  main
 * ------------------------------------------------------------------------ */

static _Atomic unsigned long handler_calls;

static void on_error(CUresult rc, const char *message, void *user)
{
    (void)user;
    if (rc == CUDA_SUCCESS)
        return;     /* CUCTX_LOG=debug notes */
    if (atomic_fetch_add(&handler_calls, 1) < 5)
        fprintf(stderr, "stress: error handler: %s: %s\n", RC(rc), message);
}

static unsigned long env_or(const char *name, unsigned long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoul(v, NULL, 0) : dflt;
}

static void add_counts(struct counts *to, const struct counts *c)
{
    to->ops += c->ops;
    for (int k = 0; k < C_COUNT; k++)
        to->creates[k] += c->creates[k];
    to->create_refused += c->create_refused;
    to->destroys += c->destroys;
    to->sure_stale += c->sure_stale;
    to->sure_live += c->sure_live;
    to->uses += c->uses;
    to->uses_dead += c->uses_dead;
    to->uses_raced += c->uses_raced;
    to->stale_checks += c->stale_checks;
    to->shared_destroys += c->shared_destroys;
    to->ctx_ops += c->ctx_ops;
    to->scopes += c->scopes;
    to->scopes_refused += c->scopes_refused;
    to->scopes_nested += c->scopes_nested;
    to->scoped_creates += c->scoped_creates;
    to->scoped_unknown += c->scoped_unknown;
#define STRESS_ADD(f) to->f += c->f;
    STRESS_ADD(untethered_destroys) STRESS_ADD(graphs_after_ctx) STRESS_ADD(graph_uses)
    STRESS_ADD(launches) STRESS_ADD(launches_dead) STRESS_ADD(launches_raced) STRESS_ADD(launches_stale)
    STRESS_ADD(captures) STRESS_ADD(cap_kept) STRESS_ADD(cap_abandoned) STRESS_ADD(cap_refused)
    STRESS_ADD(cap_ctx_ended) STRESS_ADD(cap_invalidated) STRESS_ADD(cap_stream_gone) STRESS_ADD(cap_by_hand)
    STRESS_ADD(cap_in_home) STRESS_ADD(cap_nested) STRESS_ADD(cap_instantiated) STRESS_ADD(cap_into_held)
    STRESS_ADD(cap_launches) STRESS_ADD(cap_records) STRESS_ADD(cap_stale) STRESS_ADD(cap_paused) STRESS_ADD(syncs_in_capture)
    STRESS_ADD(async_ops) STRESS_ADD(async_own) STRESS_ADD(async_shared) STRESS_ADD(async_named)
    STRESS_ADD(async_from_pool) STRESS_ADD(async_from_default) STRESS_ADD(async_refused) STRESS_ADD(async_raced)
    STRESS_ADD(async_destroys) STRESS_ADD(async_after_ctx) STRESS_ADD(async_synced) STRESS_ADD(async_free_other)
    STRESS_ADD(async_free_other_refused) STRESS_ADD(async_plain_refused) STRESS_ADD(async_no_ctx_refused)
    STRESS_ADD(async_uses) STRESS_ADD(async_ctx_refused) STRESS_ADD(pools_made) STRESS_ADD(pools_destroyed)
    STRESS_ADD(pools_destroyed_alive) STRESS_ADD(pool_trims) STRESS_ADD(pool_stale) STRESS_ADD(default_pools)
#undef STRESS_ADD
}

#define CHECK(cond, ...)                    \
    do {                                    \
        if (!(cond))                        \
            fail(__VA_ARGS__);              \
    } while (0)

int main(int argc, char **argv)
{
    unsigned long ops = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000ul;
    int threads = argc > 2 ? atoi(argv[2]) : 16;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0)
                             : env_or("STRESS_SEED", (unsigned long)time(NULL) ^ ((unsigned long)clock() << 20));
    int churners = (int)env_or("STRESS_CHURNERS", 2);
    pool_n = (int)env_or("STRESS_POOL", 8);
    if (threads < 1 || threads > 1024 || churners < 0 || churners > 8 || pool_n < 1 || pool_n > POOL_MAX) {
        fprintf(stderr, "usage: stress [operations] [threads 1-1024] [seed] [churn-interval-us]\n"
                        "  environment: STRESS_SEED, STRESS_CHURN_US, STRESS_POOL (1-%d), STRESS_CHURNERS (0-8), "
                        "STRESS_WATCHDOG_S, STRESS_SHARED_GRAPH, STRESS_RESETS, STRESS_OUTSIDE, STRESS_SCOPES, "
                        "STRESS_NESTED, STRESS_CAPTURE, STRESS_ASYNC, STRESS_ASYNC_BESIDE_CAPTURE, STRESS_ASYNC_OPS\n",
                POOL_MAX);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    cuctx_set_error_handler(on_error, NULL);
    load_driver();
    churn_us = argc > 4 ? strtoul(argv[4], NULL, 0) : env_or("STRESS_CHURN_US", have_sim ? 200 : 100000);
    watchdog_s = env_or("STRESS_WATCHDOG_S", 120);
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGFPE, on_crash);
    shared_graph = (int)env_or("STRESS_SHARED_GRAPH", 0);
    opt_resets = (int)env_or("STRESS_RESETS", 1);
    opt_scopes = (int)env_or("STRESS_SCOPES", 1);
    opt_outside = (int)env_or("STRESS_OUTSIDE", 1);
    opt_nested = (int)env_or("STRESS_NESTED", 1);
    opt_capture = (int)env_or("STRESS_CAPTURE", 1);
    opt_async = (int)env_or("STRESS_ASYNC", 1);
    opt_async_beside_capture = (int)env_or("STRESS_ASYNC_BESIDE_CAPTURE", 0);
    opt_async_ops = (int)env_or("STRESS_ASYNC_OPS", 63);
    run_seed = seed;
    pthread_t dog;
    if (watchdog_s && pthread_create(&dog, NULL, watchdog, NULL) != 0) {
        perror("stress: pthread_create");
        return 2;
    }

    int count = 0;
    CUresult rc = raw_device_count(&count);
    if (rc != CUDA_SUCCESS || count < 1) {
        fprintf(stderr, "stress: no device (%s, %d)\n", RC(rc), count);
        return 2;
    }
    n_devices = count < DEV_MAX ? count : DEV_MAX;
    have_graphs = raw_graph_create && raw_graph_add_empty && raw_graph_destroy;
    opt_capture = opt_capture && have_graphs;
    /* stream-ordered memory and pools: CUDA 11.2 */
    int have_async = symbol("cuMemAllocAsync", 11020, 0) && symbol("cuMemPoolCreate", 11020, 0);
    opt_async = opt_async && have_async;
    const char *drv = getenv("CUCTX_DRIVER");
    printf("stress: seed %" PRIu64 ", %lu operations, %d threads, %d churn threads every %lu us, pool %d, "
           "%d device%s, driver %s (%s)\n",
           seed, ops, threads, churners, churn_us, pool_n, n_devices, n_devices == 1 ? "" : "s",
           drv && *drv ? drv : "libcuda.so.1", have_sim ? "simulator" : "real");

    size_t free0 = 0, free1 = 0, total = 0;
    if (!have_sim && mem_info(0, &free0, &total) == 0)
        printf("stress: device 0 memory before: %zu MiB free of %zu MiB\n", free0 >> 20, total >> 20);

    unsigned long destroy_calls0 = sim_child_calls(1), create_calls0 = sim_child_calls(0);
    unsigned long async_alloc_calls0 = 0, async_free_calls0 = 0, pool_creates0 = 0, refused_frees0 = 0;
    if (have_sim) {
        async_alloc_calls0 = sim.calls("cuMemAllocAsync") + sim.calls("cuMemAllocFromPoolAsync");
        async_free_calls0 = sim.calls("cuMemFreeAsync");
        refused_frees0 = refused_frees();
        pool_creates0 = sim.calls("cuMemPoolCreate");
    }
    struct cuctx_stats st0;
    cuctx_stats_get(&st0);

    /* The pool: each kind at least once where there is room. */
    uint64_t setup_rng = seed ^ UINT64_C(0x5eed);
    for (int s = 0; s < pool_n; s++) {
        pthread_mutex_init(&pool[s].mu, NULL);
        pthread_rwlock_init(&pool[s].raw_lock, NULL);
        pool[s].rec = rec_make((enum ctx_kind)(s % CK_COUNT), s, (CUdevice)(s / CK_COUNT % n_devices));
        if (!pool[s].rec && !(pool[s].rec = rec_make_random(s, &setup_rng))) {
            fprintf(stderr, "stress: cannot fill the pool\n");
            return 1;
        }
    }

    struct worker *ws = calloc((size_t)threads, sizeof *ws);
    struct churner *cs = calloc((size_t)(churners ? churners : 1), sizeof *cs);
    if (!ws || !cs) {
        perror("stress: calloc");
        return 2;
    }
    for (int i = 0; i < threads; i++) {
        ws[i].index = i;
        ws[i].rng = seed + UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(i + 1);
        ws[i].quota = ops / (unsigned long)threads + ((unsigned long)i < ops % (unsigned long)threads);
    }
    birth_begin();
    rc = cuctx_ctx_create(&home, 0, CUCTX_SCHED_AUTO);
    birth_end();
    if (rc != CUDA_SUCCESS || (rc = cuctx_pop_current()) != CUDA_SUCCESS) {
        fprintf(stderr, "stress: cannot make the home context: %s\n", cuctx_last_error_message());
        return 2;
    }
    atomic_fetch_add(&ctx_handles_made, 1);
    if (have_graphs) {
        for (int i = 0; shared_graph && i < threads; i++)
            if ((ws[i].graph = graph_new()) == NULL)
                return 2;
    }

    double t0 = now_s();
    for (int i = 0; i < churners; i++) {
        cs[i].rng = seed ^ (UINT64_C(0xc42c42) + (uint64_t)i * UINT64_C(0x100000001b3));
        if (pthread_create(&cs[i].thread, NULL, churn, &cs[i]) != 0) {
            perror("stress: pthread_create");
            return 2;
        }
    }
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&ws[i].thread, NULL, work, &ws[i]) != 0) {
            perror("stress: pthread_create");
            return 2;
        }
    }
    for (int i = 0; i < threads; i++)
        pthread_join(ws[i].thread, NULL);
    double seconds = now_s() - t0;
    atomic_store(&stop_churn, 1);
    unsigned long replaced = 0;
    for (int i = 0; i < churners; i++) {
        pthread_join(cs[i].thread, NULL);
        replaced += cs[i].replaced;
    }

    /* Teardown: every child left, then the pool (no other thread runs now,
     * so every destroy here is known stale or live). */
    struct counts tot = {0};
    struct worker *mw = &ws[0];
    unsigned long left = 0, graphs_last = 0;
    /* Graphs (of no context) are kept aside, to be destroyed after every
     * context died, home too. */
    struct child *kept = calloc((size_t)threads * OWN_MAX + SHARED_MAX, sizeof *kept);
    if (!kept) {
        perror("stress: calloc");
        return 2;
    }
    /* Stream-ordered memory too, about half of it (the rest goes now,
     * after or before its stream, in contexts still alive or not). */
    unsigned long async_last = 0;
    for (int i = 0; i < threads; i++) {
        for (int j = 0; j < ws[i].n_own; j++) {
            enum child_kind k = ws[i].own[j].kind;
            if (k == C_GRAPH || (k == C_MEM_ASYNC && rnd(&setup_rng, 2))) {
                kept[graphs_last++] = ws[i].own[j];
                async_last += k == C_MEM_ASYNC;
            } else {
                child_destroy(mw, &ws[i].own[j], 0);
            }
            left++;
        }
        ws[i].n_own = 0;
    }
    for (int j = 0; j < n_shared; j++) {
        enum child_kind k = shared[j].kind;
        if (k == C_GRAPH || (k == C_MEM_ASYNC && rnd(&setup_rng, 2))) {
            kept[graphs_last++] = shared[j];
            async_last += k == C_MEM_ASYNC;
        } else {
            child_destroy(mw, &shared[j], 0);
        }
        left++;
    }
    n_shared = 0;
    /* The outside's retains go while cuctx holds one of its own (made here),
     * so that cuctx's release is the last and ends the generation. */
    for (int d = 0; d < n_devices; d++) {
        if (!prim_outside[d])
            continue;
        struct rec *r = rec_make(CK_PRIMARY, 0, (CUdevice)d);
        while (prim_outside[d] > 0) {
            if (sim.primary_outside_release(d) != 0)
                fail("cusim_primary_outside_release(%d) at teardown", d);
            prim_outside[d]--;
            atomic_fetch_add(&n_outside_releases, 1);
        }
        if (r)
            rec_retire(r, &setup_rng);
    }
    for (int s = 0; s < pool_n; s++) {
        rec_retire(pool[s].rec, &setup_rng);
        pool[s].rec = NULL;
        beat();
    }
    atomic_store(&finished, 1);
    if (watchdog_s)
        pthread_join(dog, NULL);
    if (have_graphs) {
        for (int i = 0; i < threads; i++)
            if (ws[i].graph)
                graph_free(ws[i].graph);
    }
    ctx_handle_destroy(home, "the home context");
    /* The workers' pools, many with allocations alive (kept above): those
     * live on, and the driver ends each pool with its last. */
    unsigned long pools_last = 0, pools_last_alive = 0;
    for (int i = 0; i < threads; i++) {
        for (int d = 0; d < DEV_MAX; d++) {
            if (!ws[i].pools[d].id)
                continue;
            pools_last_alive += atomic_load(&ws[i].pool_gens[d]->live) > 0;
            CUresult prc = cuctx_mem_pool_destroy(&ws[i].pools[d]);
            if (prc != CUDA_SUCCESS || ws[i].pools[d].id)
                fail("cuctx_mem_pool_destroy at the end: %s: %s", RC(prc), cuctx_last_error_message());
            else
                pools_last++;
        }
    }
    /* No context left: the graphs, the stream-ordered memory kept and the
     * libraries go now, and each destroy must reach the driver (the
     * simulator's live counts say so below). */
    for (unsigned long j = 0; j < graphs_last; j++)
        child_destroy(mw, &kept[j], 0);
    free(kept);
    unsigned long libraries_destroyed = 0;
    for (int i = 0; i < threads; i++) {
        if (!ws[i].lib.id)
            continue;
        CUresult lrc = cuctx_library_destroy(&ws[i].lib);
        if (lrc != CUDA_SUCCESS || ws[i].lib.id)
            fail("cuctx_library_destroy after every context died: %s: %s", RC(lrc), cuctx_last_error_message());
        else
            libraries_destroyed++;
    }
    for (int i = 0; i < threads; i++)
        add_counts(&tot, &ws[i].c);

    /* The checks. */
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    unsigned long creates = 0, tethered_creates = 0;
    for (int k = 0; k < C_COUNT; k++) {
        creates += tot.creates[k];
        if (!child_kinds[k].untethered)
            tethered_creates += tot.creates[k];
    }
    /* the bounds and counts of stale skips are the tethered kinds' */
    unsigned long tethered_destroys = tot.destroys - tot.untethered_destroys - tot.async_destroys;
    uint64_t skips = st.stale_skips - st0.stale_skips;
    CHECK(creates == tot.destroys, "children: %lu created, %lu destroyed", creates, tot.destroys);
    CHECK(tot.creates[C_GRAPH] == tot.untethered_destroys, "graphs: %lu kept, %lu destroyed", tot.creates[C_GRAPH],
          tot.untethered_destroys);
    CHECK(tot.creates[C_MEM_ASYNC] == tot.async_destroys, "stream-ordered memory: %lu allocated, %lu freed",
          tot.creates[C_MEM_ASYNC], tot.async_destroys);
    CHECK(tot.pools_made == tot.pools_destroyed + pools_last, "pools: %lu made, %lu destroyed", tot.pools_made,
          tot.pools_destroyed + pools_last);
    CHECK(libraries_destroyed == atomic_load(&libraries_loaded), "libraries: %lu loaded, %lu destroyed",
          atomic_load(&libraries_loaded), libraries_destroyed);
    CHECK(atomic_load(&ctx_handles_made) == atomic_load(&ctx_handles_destroyed),
          "context handles: %lu made, %lu destroyed", atomic_load(&ctx_handles_made),
          atomic_load(&ctx_handles_destroyed));
    CHECK(st.contexts == 0 && st.ctx_handles == 0 && st.events == 0 && st.streams == 0 && st.modules == 0
              && st.mems == 0 && st.host_mems == 0 && st.graph_execs == 0 && st.graphs == 0 && st.libraries == 0
              && st.async_mems == 0 && st.mem_pools == 0,
          "cuctx_stats: live contexts %zu, context handles %zu, events %zu, streams %zu, modules %zu, mems %zu, "
          "host_mems %zu, graph_execs %zu, graphs %zu, libraries %zu, async_mems %zu, mem_pools %zu (all must be 0)",
          st.contexts, st.ctx_handles, st.events, st.streams, st.modules, st.mems, st.host_mems, st.graph_execs,
          st.graphs, st.libraries, st.async_mems, st.mem_pools);
    CHECK(st.failed_destroys == st0.failed_destroys, "cuctx_stats: %" PRIu64 " failed destroys",
          st.failed_destroys - st0.failed_destroys);
    CHECK(st.shutdown_skips == st0.shutdown_skips, "cuctx_stats: %" PRIu64 " shutdown skips",
          st.shutdown_skips - st0.shutdown_skips);
    CHECK(tot.sure_stale <= skips && skips + tot.sure_live <= tethered_destroys,
          "stale skips %" PRIu64 " outside [%lu, %lu] (destroys begun after their context died .. destroys "
          "less those ended before it began to die; tethered kinds)",
          skips, tot.sure_stale, tethered_destroys - tot.sure_live);
    CHECK(atomic_load(&handler_calls) == 0, "the error handler was called %lu times", atomic_load(&handler_calls));

    size_t misuses = 0;
    unsigned long destroy_calls = 0, create_calls = 0;
    if (have_sim) {
        destroy_calls = sim_child_calls(1) - destroy_calls0;
        create_calls = sim_child_calls(0) - create_calls0;
        misuses = sim.misuse_count();
        for (size_t i = 0; i < misuses && i < 10; i++)
            fprintf(stderr, "stress: simulator misuse: %s\n", sim.misuse_text(i));
        CHECK(misuses == 0, "the simulator recorded %zu misuses", misuses);
        /* Each successful destroy either reached the driver once or was
         * skipped; the driver destroy calls of the tethered kinds take in
         * the cuMemFree calls of stream-ordered memory whose context had
         * ended, so both kinds of memory are in one sum: tethered destroys
         * + async mem destroys = stale skips + the tethered kinds' destroy
         * calls + cuMemFreeAsync calls. A graph or async mem destroy
         * counted as a stale skip would break it, with the simulator's
         * live counts below (the memory would still be allocated). A free
         * refused because the thread's current context was a dead one
         * (a scope over a context that died) is made again: counted once. */
        unsigned long refused = refused_frees() - refused_frees0;
        unsigned long async_free_calls = sim.calls("cuMemFreeAsync") - async_free_calls0;
        unsigned long async_alloc_calls = sim.calls("cuMemAllocAsync") + sim.calls("cuMemAllocFromPoolAsync")
                                          - async_alloc_calls0;
        CHECK(skips + destroy_calls + async_free_calls - refused == tethered_destroys + tot.async_destroys,
              "stale skips %" PRIu64 " + driver destroy calls %lu (tethered kinds, cuMemFree of stream-ordered "
              "memory among them) + cuMemFreeAsync calls %lu - frees refused for a dead current context %lu != "
              "child destroys %lu (tethered kinds) + stream-ordered memory destroys %lu", skips, destroy_calls,
              async_free_calls, refused, tethered_destroys, tot.async_destroys);
        CHECK(async_alloc_calls == tot.creates[C_MEM_ASYNC],
              "driver stream-ordered allocation calls %lu != successful allocations %lu", async_alloc_calls,
              tot.creates[C_MEM_ASYNC]);
        /* every pool made ends parked, never destroyed; a create takes a parked one where it can */
        struct cuctx_stats pst;
        cuctx_stats_get(&pst);
        unsigned long pool_creates = sim.calls("cuMemPoolCreate") - pool_creates0;
        CHECK(pool_creates == pst.parked_pools && pool_creates <= tot.pools_made,
              "driver cuMemPoolCreate calls %lu: not the pools parked at the end (%zu), or more than the pools made "
              "(%lu)", pool_creates, pst.parked_pools, tot.pools_made);
        CHECK(sim.live(CUSIM_POOL) == pst.parked_pools, "the simulator has %zu pools alive, cuctx %zu parked",
              sim.live(CUSIM_POOL), pst.parked_pools);
        size_t async_live = sim.async_allocs_live();
        CHECK(async_live == 0, "the simulator has %zu live stream-ordered allocations (leaked in their pools)",
              async_live);
        CHECK(sim.orphaned_work() == 0, "the simulator has %zu destroyed streams' work still waited on",
              sim.orphaned_work());
        CHECK(create_calls == tethered_creates, "driver create calls %lu != successful creates %lu (tethered kinds)",
              create_calls, tethered_creates);
        size_t live = sim.live(CUSIM_ALL) - pst.parked_pools;
        CHECK(live == 0, "the simulator has %zu live objects besides the parked pools (context %zu, primary %zu, "
              "event %zu, stream %zu, mem %zu, host_mem %zu, graph %zu, graph_exec %zu, library %zu, pool %zu)", live,
              sim.live(CUSIM_CONTEXT), sim.live(CUSIM_PRIMARY), sim.live(CUSIM_EVENT), sim.live(CUSIM_STREAM),
              sim.live(CUSIM_MEM), sim.live(CUSIM_HOST_MEM), sim.live(CUSIM_GRAPH), sim.live(CUSIM_GRAPH_EXEC),
              sim.live(CUSIM_LIBRARY), sim.live(CUSIM_POOL));
        CHECK(sim.live(CUSIM_CAPTURE) == 0, "the simulator has %zu stream captures begun and not ended",
              sim.live(CUSIM_CAPTURE));
    } else if (mem_info(0, &free1, &total) == 0) {
        printf("stress: device 0 memory after: %zu MiB free of %zu MiB (%+lld MiB)\n", free1 >> 20, total >> 20,
               ((long long)free1 - (long long)free0) / (1 << 20));
    }

    printf("stress: children: ");
    for (int k = 0; k < C_COUNT; k++)
        printf("%s%lu %ss", k ? ", " : "", tot.creates[k], child_kinds[k].info->name);
    printf(" created; %lu creates refused (stale handle or dead context); %lu destroyed (%lu of them from the "
           "shared array, %lu at teardown)\n",
           tot.create_refused, tot.destroys, tot.shared_destroys, left);
    printf("stress: uses: %lu (%lu found the context destroyed, %lu raced a destroy of a shared handle); "
           "%lu stale-copy checks; %lu context calls\n",
           tot.uses, tot.uses_dead, tot.uses_raced, tot.stale_checks, tot.ctx_ops);
    printf("stress: contexts: %lu replaced by churn; made owned %lu, primary %lu, borrowed-owned %lu, "
           "borrowed-raw %lu\n",
           replaced, atomic_load(&ctx_made[CK_OWNED]), atomic_load(&ctx_made[CK_PRIMARY]),
           atomic_load(&ctx_made[CK_BORROW_OWNED]), atomic_load(&ctx_made[CK_BORROW_RAW]));
    printf("stress: stale skips %" PRIu64 ": %lu certain (destroy begun after the context died), %lu in "
           "flight with the context's destroy%s\n",
           skips, tot.sure_stale, (unsigned long)(skips - tot.sure_stale),
           have_sim ? "; driver destroy calls + stale skips = child destroys" : "");
    printf("stress: primary: %lu resets, outside retains %lu and releases %lu%s; scopes %lu (%lu nested, %lu "
           "refused), %lu children made with {0} in them (%lu in a context whose address may have been taken)\n",
           atomic_load(&n_resets), atomic_load(&n_outside_retains), atomic_load(&n_outside_releases),
           have_sim ? "" : " (real driver: no outside)", tot.scopes, tot.scopes_nested, tot.scopes_refused,
           tot.scoped_creates, tot.scoped_unknown);
    if (atomic_load(&no_libraries))
        printf("stress: libraries: none (the driver has no cuLibrary: older than 12.0)\n");
    else
        printf("stress: libraries: %lu loaded, %lu destroyed after every context died; kernel launches: %lu on "
               "streams (%lu found the context destroyed, %lu raced a destroy of a shared stream), %lu on stale "
               "stream copies refused, %lu in captures\n",
               atomic_load(&libraries_loaded), libraries_destroyed, tot.launches, tot.launches_dead,
               tot.launches_raced, tot.launches_stale, tot.cap_launches);
    if (opt_capture)
        printf("stress: captures: %lu (%lu by hand, %lu in a scope over home, %lu with a scope nested): %lu graphs "
               "kept, %lu abandoned (break, goto, return, end with keep 0), %lu refused at the begin (context "
               "dead), %lu ended without a graph by the context's end, %lu invalidated by another thread's "
               "synchronize (%lu synchronizes refused during captures), %lu by the stream's destroy inside, %lu "
               "into a held graph refused, %lu on stale stream copies refused; %lu event records captured, %lu "
               "paused inside\n",
               tot.captures, tot.cap_by_hand, tot.cap_in_home, tot.cap_nested, tot.cap_kept, tot.cap_abandoned,
               tot.cap_refused, tot.cap_ctx_ended, tot.cap_invalidated, tot.syncs_in_capture, tot.cap_stream_gone,
               tot.cap_into_held, tot.cap_stale, tot.cap_records, tot.cap_paused);
    else
        printf("stress: captures: off (STRESS_CAPTURE=0, or the driver has no graphs)\n");
    printf("stress: graphs (no context): %lu kept by captures, %lu destroyed (%lu after their context died, %lu of "
           "them at the end after every context), none a stale skip; %lu uses; %lu kept graphs instantiated once\n",
           tot.creates[C_GRAPH], tot.untethered_destroys, tot.graphs_after_ctx, graphs_last - async_last, tot.graph_uses,
           tot.cap_instantiated);
    if (opt_async)
        printf("stress: stream-ordered memory: %lu ops; %lu allocated (%lu on own streams, %lu on shared ones, %lu on "
               "default streams in scopes; %lu from the workers' pools, %lu through default pools' handles), %lu "
               "refused (context dead), %lu raced a shared stream's destroy; %lu freed (%lu after their context "
               "died, %lu of them at the end after every context; %lu of non-blocking streams' memory, %s; %lu by cuctx_mem_free_async on another stream, %lu of those refused with its context "
               "dead), none a stale skip; %lu uses (%lu cuctx_mem_ctx refused); free_async refused: %lu of plain "
               "memory, %lu on a default stream with no context\n",
               tot.async_ops, tot.creates[C_MEM_ASYNC], tot.async_own, tot.async_shared, tot.async_named,
               tot.async_from_pool, tot.async_from_default, tot.async_refused, tot.async_raced, tot.async_destroys,
               tot.async_after_ctx, async_last, tot.async_synced,
               opt_async_beside_capture ? "beside captures, marked as synchronizes" : "kept apart from captures",
               tot.async_free_other, tot.async_free_other_refused,
               tot.async_uses, tot.async_ctx_refused, tot.async_plain_refused, tot.async_no_ctx_refused);
    if (opt_async)
        printf("stress: pools: %lu made, %lu destroyed in the run (%lu with allocations alive), %lu at the end (%lu "
               "with allocations alive); %lu trims, %lu stale or {0} pool calls refused\n",
               tot.pools_made, tot.pools_destroyed, tot.pools_destroyed_alive, pools_last, pools_last_alive,
               tot.pool_trims, tot.pool_stale);
    else
        printf("stress: stream-ordered memory: off (STRESS_ASYNC=0, or the driver has none)\n");
    printf("stress: %lu operations, %d threads, %.2f s, %.0f ops/s, %" PRIu64 " stale skips, %zu misuses%s, "
           "resets %lu, scopes %lu, captures %lu (%lu kept), library launches %lu, async ops %lu (%lu allocations)\n",
           tot.ops, threads, seconds, seconds > 0 ? (double)tot.ops / seconds : 0.0, skips, misuses,
           have_sim ? "" : " (real driver: not counted)", atomic_load(&n_resets), tot.scopes, tot.captures,
           tot.cap_kept, tot.launches + tot.cap_launches, tot.async_ops, tot.creates[C_MEM_ASYNC]);

    while (all_recs) {
        struct rec *r = all_recs;
        all_recs = r->all_next;
        free(r);
    }
    while (all_lives) {
        struct life *l = all_lives;
        all_lives = l->all_next;
        pthread_rwlock_destroy(&l->capture_lock);
        free(l);
    }
    while (all_pool_gens) {
        struct pool_gen *g = all_pool_gens;
        all_pool_gens = g->all_next;
        free(g);
    }
    free(ws);
    free(cs);
    unsigned long nf = atomic_load(&failures);
    if (nf) {
        printf("stress: FAILED: %lu check%s did not hold (seed %" PRIu64 ")\n", nf, nf == 1 ? "" : "s", seed);
        return 1;
    }
    printf("stress: all checks passed\n");
    return 0;
}
