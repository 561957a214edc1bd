/* SPDX-License-Identifier: MIT */
/* testlib.h - what the cuctx test programs share: access to the simulated
 * driver's control API (when the suite runs against it) and small helpers. */
#ifndef CUCTX_TESTLIB_H
#define CUCTX_TESTLIB_H

#include <criterion/criterion.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuctx.h"
#include "sim/cudasim.h"
#include "kinds.h"

/* The simulator's control functions (sim/cudasim.h), one member per control
 * of CUSIM_CONTROLS, named as the function less "cusim_": sim()->calls is
 * cusim_calls. */
#define TESTLIB_SIM_MEMBER(name) cusim_##name##_fn name;
struct sim {
    CUSIM_CONTROLS(TESTLIB_SIM_MEMBER)
};
#undef TESTLIB_SIM_MEMBER

/* The simulator's API if the suite runs against it, else NULL. */
const struct sim *sim(void);

/* Skips the calling test unless the simulated driver is loaded. */
#define NEED_SIM()                                                                 \
    do {                                                                           \
        if (!sim())                                                                \
            cr_skip_test("needs the simulated driver's controls (call log, misuse log)"); \
    } while (0)

/* Skips the calling test when no driver or no device is usable. */
#define NEED_DRIVER()                                                              \
    do {                                                                           \
        if (cuctx_init() != CUDA_SUCCESS)                                          \
            cr_skip_test("no usable CUDA driver: %s", cuctx_last_error_message()); \
    } while (0)

#define CHECK_OK(expr)                                                             \
    do {                                                                           \
        CUresult check_rc_ = (expr);                                               \
        cr_assert_eq(check_rc_, CUDA_SUCCESS, "%s -> %s: %s", #expr,                \
                     cuctx_result_name(check_rc_), cuctx_last_error_message());    \
    } while (0)

/* Calls of a driver entry point (base name) since the test began. */
unsigned long calls(const char *fn);
/* Calls of fn that named handle h, from log position `from` on. */
unsigned long calls_on(const char *fn, uint64_t h, size_t from);
/* The nth (0 = first) logged call of fn from log position `from` on, with
 * its arguments (see struct cusim_call); fails the test if there is none. */
struct cusim_call nth_call(const char *fn, size_t from, unsigned nth);
/* The last logged call of fn from log position `from` on; fails the test if none. */
struct cusim_call last_call(const char *fn, size_t from);
/* Misuses recorded by the simulator; prints them to stderr if any. */
size_t misuses(void);
/* The log position now, to look at what follows. */
size_t log_mark(void);
/* Writes the log from `from` on as "fn,fn,fn" into buf (destroys and
 * context switches only when filter is non-zero). */
const char *log_seq(size_t from, const char *const *only, char *buf, size_t n);

/* Every cuctx handle is a struct of one uint64_t: kind-independent test
 * bodies use this one type. */
typedef struct any_handle { uint64_t id; } any_handle;

/* cuctx_stats_get, as a value. */
struct cuctx_stats stats(void);

/* The calling thread's current context (NULL if none), through cuctx. */
CUcontext current(void);

/* The path of a test data file: $CUCTX_TEST_DATA/file (make check sets it to
 * the source tree's tests/data), else tests/data/file when it is unset or
 * empty. The text is kept until the next call. */
const char *test_data_path(const char *file);

/* A driver entry point through cuctx_driver_symbol; fails the test if absent. */
void *drv_sym(const char *name, int version);

/* A new pool of device 0 made by the driver (raw_pool, below), adopted as
 * owned into *out: cuctx destroys it with the handle. */
void adopt_new_pool(cuctx_mem_pool *out);

/* Counts errors passed to the error handler while installed. */
struct handler_count { int calls; CUresult last_rc; char last_msg[512]; };
void count_handler_install(struct handler_count *c);

/* Runs child(arg) in a forked child with a watchdog (a hang ends in
 * SIGALRM after 5 s, failing the test); returns its exit status (0 when
 * every check in it held). In a build that defines CUCTX_GCOV_DUMP (the
 * coverage builds of tools/mutate) the child dumps its gcov data before
 * _exit, so that what it ran of a statically linked lib/ is recorded, its
 * fork handlers included. */
int in_child(int (*child)(void *), void *arg);

/* ---- traces: the driver calls of a test, by names the test gave -------- */

/* Names a driver handle of kind 'c' (context), 'e' (event), 's' (stream),
 * 'm' (device memory), 'h' (host memory), 'M' (module), 'g' (graph exec). */
void name_handle(char kind, uint64_t h, const char *name);
/* The name given to h, "0" for NULL, "unnamed" otherwise. */
const char *name_of(char kind, uint64_t h);
/* "ev0", "ev1", ...: names for objects made in a loop. */
const char *nth(char *buf, size_t n, const char *base, int i);
#define NTH(base, i) nth((char[16]){0}, 16, (base), (i))
/* With the simulator: one value names one object for the whole test
 * (its address recycling off). */
void unique_addresses(void);
/* Runs fn(arg) with file descriptor 2 sent to a temporary file; what it
 * wrote to stderr is left in buf (at most n - 1 bytes, NUL-terminated). */
void stderr_of(void (*fn)(void *arg), void *arg, char *buf, size_t n);
/* How new_ctx leaves the context stack: with the new context pushed and
 * current (as cuctx_ctx_create leaves it), or popped again. */
enum ctx_left { LEFT_CURRENT, POPPED };
/* A new owned context on dev (the one helper that makes a context through
 * cuctx), named for traces unless name is NULL; returns its driver handle. */
CUcontext new_ctx(cuctx_ctx *c, CUdevice dev, const char *name, enum ctx_left left);
/* A context made by the driver itself (cuCtxCreate, flags 0), as code
 * outside cuctx makes one, left current or popped; raw_ctx_destroy ends it
 * with the driver's cuCtxDestroy. */
CUcontext raw_ctx_create(CUdevice dev, enum ctx_left left);
void raw_ctx_destroy(CUcontext raw);

/* An owned context's destroy on a thread of its own, held by the simulator
 * right after its cuCtxDestroy (cusim_hold_after), its entry still in the
 * address map, for a test that acts in that window (a context made at the
 * freed address, say). held_destroy_begin makes the context (popped: d->c,
 * its address d->old), starts the destroy and waits up to 10 s for the
 * hold: d->held. held_destroy_end lets it go and joins the thread: d->rc
 * is the destroy's result. Needs the simulator. */
struct held_destroy { cuctx_ctx c; CUcontext old; CUresult rc; int held; pthread_t t; };
void held_destroy_begin(struct held_destroy *d);
void held_destroy_end(struct held_destroy *d);
/* A memory pool made by the driver itself (cuMemPoolCreate: pinned, on
 * device dev, no export), as code outside cuctx makes one. */
CUmemoryPool raw_pool(CUdevice dev);

/* Context switches and destroys from log position `from` on, as
 * "cuCtxPushCurrent(B),cuEventDestroy(ev),cuCtxPopCurrent(B)". */
const char *trace(size_t from, char *buf, size_t n);

/* Against the simulator: the traced calls since `mark` are exactly `want`,
 * and no misuse was recorded. */
#define EXPECT_TRACE(mark, want)                                                            \
    do {                                                                                    \
        if (sim()) {                                                                        \
            char trace_buf_[4096];                                                          \
            const char *got_ = trace((mark), trace_buf_, sizeof trace_buf_);                \
            cr_assert_str_eq(got_, (want), "line %d: driver calls\n  got  %s\n  want %s",   \
                             __LINE__, got_, (want));                                       \
            cr_assert_eq(misuses(), 0, "the simulator recorded driver misuse");             \
        }                                                                                   \
    } while (0)

#define EXPECT_CURRENT(want)                                                                \
    do {                                                                                    \
        CUcontext cur_ = current(), want_ = (want);                                         \
        cr_assert_eq(cur_, want_, "line %d: current context is %s, want %s", __LINE__,      \
                     name_of('c', (uint64_t)(uintptr_t)cur_),                               \
                     name_of('c', (uint64_t)(uintptr_t)want_));                             \
    } while (0)


/* PTX that ptxas refuses: an instruction PTX does not have (the
 * simulator's cusim_bad, tests/sim/library.c); its load writes a JIT log. */
extern const char test_broken_ptx[];

/* ---- the child kinds (kinds.h) --------------------------------------- */

/* The graph graph execs are instantiated from: one per test process, made
 * on first use with c current (with whatever is current if c is {0});
 * graph_fini destroys it. */
CUgraph test_graph(cuctx_ctx c);
void graph_fini(void);

/* kind_create_<name>(&h, c): the kind's create with the default arguments
 * of kinds.h; kind_raw_<name>(h): its driver value as a number. */
#define KIND_HELPERS(name, type, stat, sim, letter, create_fn, destroy_fn, use_fn, needs_current, create, \
                     args, raw)                                                                         \
    static inline CUresult kind_create_##name(type *h, cuctx_ctx c) { return KIND_APPLY(create, h, c, KIND_ARGS args); } \
    static inline uint64_t kind_raw_##name(type h) { return (uint64_t)(uintptr_t)raw(h); }
TEST_CHILD_KINDS(KIND_HELPERS)
#undef KIND_HELPERS

/* ---- what another thread is blocked in (/proc) ----------------------------- */

/* The system call thread tid (of this process) is blocked in, its second
 * argument in *arg1: -1 when it is in none ("running", or blocked outside
 * a system call), -2 when /proc does not say (no /proc/self/task/TID/syscall). */
long blocked_in(pid_t tid, unsigned long *arg1);
/* Whether thread tid (of this process) is asleep in a futex wait, as a
 * thread waiting for a pthread mutex held by another is: 1 yes, 0 no, -1
 * when /proc does not say. */
int in_futex_wait(pid_t tid);

/* Stream-ordered memory whose context is gone (its free takes case 3 or 4
 * of lib/mem_async.c): a context made and destroyed, 4096 bytes of its
 * memory left in *m and its stream (a handle of the dead context, for the
 * caller to destroy) in *s. Returns the memory's address. */
uint64_t orphaned_async_mem(cuctx_mem *m, cuctx_stream *s);

#endif
