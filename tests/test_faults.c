/* SPDX-License-Identifier: MIT */
/* test_faults.c - fault injection over every driver call cuctx makes.
 *
 * The driver entry points come from the loader's own table
 * (cuctx__drv_entries), so an entry point added there is covered, or
 * flagged, without touching this file. For each workload - a short,
 * realistic sequence through one group of the public API - a clean run
 * records which driver calls each step made. Then every (workload, entry
 * point, k-th call) is run again with that one call failing
 * (CUDA_ERROR_UNKNOWN). k covers the first three calls of each entry point
 * in the workload and, beyond those, the first three inside each further
 * step, so a call site that is reached only late in a workload is not lost
 * to the cap.
 *
 * Every case runs in its own forked process, from a parent that has never
 * called cuctx or the driver: each starts with cuInit not yet called, an
 * empty registry and an empty context stack, and a crash or a hang (alarm)
 * takes down only that case. The child writes its verdict into shared
 * memory.
 *
 * What each case checks:
 *   - the failure comes back from the cuctx call whose driver call failed
 *     (non-SUCCESS; for a function without a CUresult, its failure value),
 *     or, where there is no caller to return to (automatic cleanup, scope
 *     enter/exit of the macros), reaches the error handler; otherwise the
 *     case is a swallowed error unless `exceptions` below explains it;
 *   - an exception that absorbs the failure must be without effect: every
 *     later step of the workload gives what it gave in the clean run;
 *   - creates that fail leave their handle {0};
 *   - after the workload has destroyed what it made: no live cuctx handle of
 *     any kind, no context entry of an owned context, no context entry whose
 *     context the driver still has, nothing alive in the simulator (primary
 *     contexts released) - except the one object whose destroy the injected
 *     failure refused;
 *   - no simulator misuse, no crash, no hang.
 *
 * Each workload runs twice: with cuCtxGetId (a CUDA 12 driver) and without
 * it (the driver hides it; cuctx falls back to cuCtxGetApiVersion).
 *
 * The number of cases is written to the file named by the environment
 * variable CUCTX_FAULT_COUNT_FILE (one line: N), printed on stderr and with
 * cr_log_info ("fault cases: N ...": seen when the test runs on its own;
 * under make check Criterion's TAP output hides both), and begins the
 * message of a failure.
 *
 * To look at one case: CUCTX_FAULT_ONLY=fn#k@text runs only the cases of
 * entry point fn, its call k, in workloads whose name contains text (each
 * part may be left out), and prints each case's steps with the driver calls
 * they made ("=>" marks the step the failure landed in), e.g.
 *     CUCTX_FAULT_ONLY='cuCtxGetCurrent#18@scopes' tests/test_faults
 * (with CUCTX_DRIVER and CUCTX_TEST_DATA set as make check sets them).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "current.h"
#include "driver.h"
#include "registry.h"
#include "testlib.h"

#define FAULT_RC CUDA_ERROR_UNKNOWN
#define K_CAP 3             /* calls of one entry point failed per workload step */
#define MAX_FNS 80          /* entries of the loader's table */
#define MAX_REGIONS 1024    /* steps of one workload */
#define CASE_ALARM_S 20     /* a case that runs longer has hung */

/* ------------------------------------------------------------------------
 *  Steps ("regions") of a workload and what the driver did in each
 * ------------------------------------------------------------------------ */

enum rkind {
    R_CALL,     /* a cuctx function returning CUresult: failed = rc != SUCCESS */
    R_VAL,      /* a cuctx function returning something else: failed = its failure value */
    R_FLAG,     /* a cuctx outcome the workload saw otherwise (CUCTX_SCOPED_ELSE's on_fail) */
    R_MARK,     /* code with no caller to return to: scope macros, automatic cleanup */
    R_RAW,      /* the test's own direct driver call: never failed on purpose */
    R_SETUP,    /* a cuctx call that only sets the scene: never failed on purpose */
    R_CHECK,    /* the workload's own expectation (clean run: must hold) */
};

struct region {
    const char *what;   /* the expression or label */
    int line;
    unsigned char kind;
    unsigned char failed;
    unsigned short reports;     /* error-handler calls during the step */
    int rc;
    unsigned short calls[MAX_FNS];
};

enum how { HOW_NONE, HOW_RETURNED, HOW_REPORTED, HOW_ABSORBED };
static const char *const how_names[] = {"-", "returned", "reported", "absorbed"};

/* What a child process hands back. */
struct outcome {
    int finished;
    int hit;                    /* step the failure landed in, -1 none */
    int how;
    int final_current_null;
    int hit_nth;                /* which call of the entry point inside that step */
    int hit_last_rc;            /* cuctx_last_error() right after the step */
    char hit_msg[512];          /* cuctx_last_error_message() right after the step */
    int nregions;
    char msg[3072];             /* violations, "" if none */
    struct region regions[MAX_REGIONS];
};

static size_t n_fns;
static const char *fn_name(size_t i) { return cuctx__drv_entries[i].name; }

/* The state of the run in this (child) process. */
static struct {
    struct outcome *out;
    const struct outcome *clean;    /* the clean run of this workload, for comparisons */
    int fault;                      /* table index of the failing entry point, -1: clean run */
    int no_ids;                     /* the driver hides cuCtxGetId */
    const char *excused;            /* why the exception absorbing the failure allows it */
    unsigned long target;           /* its call count when the failure fires */
    unsigned long snap[MAX_FNS];
    int snap_reports;
    struct handler_count hc;
} R;

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    char *m = R.out->msg;
    size_t len = strlen(m);
    va_list ap;
    if (len + 4 >= sizeof R.out->msg)
        return;
    if (len) {
        memcpy(m + len, "\n  ", 3);
        len += 3;
    }
    va_start(ap, fmt);
    vsnprintf(m + len, sizeof R.out->msg - len, fmt, ap);
    va_end(ap);
}

static void snapshot(unsigned long *now)
{
    for (size_t i = 0; i < n_fns; i++)
        now[i] = sim()->calls(fn_name(i));
}

/* Ends the step that began at the previous boundary. Empty marks (no
 * driver call, no report) are not kept. */
static void region_end(enum rkind kind, const char *what, int line, int failed, int rc)
{
    unsigned long now[MAX_FNS];
    int reports = R.hc.calls - R.snap_reports;
    int any = 0;
    snapshot(now);
    for (size_t i = 0; i < n_fns; i++)
        any |= now[i] != R.snap[i];
    if (kind == R_MARK && !any && !reports)
        return;
    if (R.out->nregions == MAX_REGIONS) {
        violation("more than %d workload steps: raise MAX_REGIONS", MAX_REGIONS);
        return;
    }
    struct region *r = &R.out->regions[R.out->nregions];
    r->what = what;
    r->line = line;
    r->kind = (unsigned char)kind;
    r->failed = (unsigned char)(failed != 0);
    r->rc = rc;
    r->reports = (unsigned short)reports;
    for (size_t i = 0; i < n_fns; i++) {
        r->calls[i] = (unsigned short)(now[i] - R.snap[i]);
        R.snap[i] = now[i];
    }
    R.snap_reports = R.hc.calls;
    if (R.fault >= 0 && R.out->hit < 0 && now[R.fault] >= R.target) {
        R.out->hit = R.out->nregions;
        R.out->hit_nth = (int)(R.target - (now[R.fault] - r->calls[R.fault]));
        R.out->hit_last_rc = (int)cuctx_last_error();
        snprintf(R.out->hit_msg, sizeof R.out->hit_msg, "%s", cuctx_last_error_message());
    }
    R.out->nregions++;
}

/* The boundary before a wrapped call: what ran since the last one had no
 * caller (scope macros, cleanups) or was plain workload code. */
static void mark(const char *label, int line) { region_end(R_MARK, label, line, 0, 0); }

#define MARK(label) mark((label), __LINE__)

#define CALL(expr)                                                              \
    __extension__({                                                             \
        mark("(before " #expr ")", __LINE__);                                   \
        CUresult call_rc_ = (expr);                                             \
        region_end(R_CALL, #expr, __LINE__, call_rc_ != CUDA_SUCCESS, (int)call_rc_); \
        call_rc_;                                                               \
    })

/* A create: as CALL, and a failure leaves the handle {0}. */
#define CREATE(expr, handle)                                                    \
    __extension__({                                                             \
        mark("(before " #expr ")", __LINE__);                                   \
        CUresult create_rc_ = (expr);                                           \
        region_end(R_CALL, #expr, __LINE__, create_rc_ != CUDA_SUCCESS, (int)create_rc_); \
        if (create_rc_ != CUDA_SUCCESS && (handle).id != 0)                     \
            violation("line %d: %s failed (%s) but left the handle %#llx, not {0}", __LINE__, \
                      #expr, cuctx_result_name(create_rc_), (unsigned long long)(handle).id); \
        if (create_rc_ == CUDA_SUCCESS && (handle).id == 0)                     \
            violation("line %d: %s succeeded but left the handle {0}", __LINE__, #expr); \
        create_rc_;                                                             \
    })

/* A function without a CUresult; fail is an expression of its value v_. */
#define VAL(expr, fail)                                                         \
    __extension__({                                                             \
        mark("(before " #expr ")", __LINE__);                                   \
        __typeof__(expr) v_ = (expr);                                           \
        region_end(R_VAL, #expr, __LINE__, (fail), 0);                          \
        v_;                                                                     \
    })

#define RAW(expr)                                                               \
    __extension__({                                                             \
        mark("(before " #expr ")", __LINE__);                                   \
        CUresult raw_rc_ = (expr);                                              \
        region_end(R_RAW, #expr, __LINE__, raw_rc_ != CUDA_SUCCESS, (int)raw_rc_); \
        raw_rc_;                                                                \
    })

#define SETUP(expr)                                                             \
    __extension__({                                                             \
        mark("(before " #expr ")", __LINE__);                                   \
        CUresult setup_rc_ = (expr);                                            \
        region_end(R_SETUP, #expr, __LINE__, setup_rc_ != CUDA_SUCCESS, (int)setup_rc_); \
        setup_rc_;                                                              \
    })

/* Ends the step it closes itself: what ran since the last boundary was the
 * cuctx code whose outcome it records. */
#define FLAG(label, failed) region_end(R_FLAG, label, __LINE__, (failed), 0)

#define CHECK(cond, label)                                                      \
    do {                                                                        \
        mark("(before check)", __LINE__);                                       \
        region_end(R_CHECK, label, __LINE__, !(cond), 0);                       \
    } while (0)

/* A boundary when the enclosing block's cleanups reach it: declared after
 * a CUCTX_AUTO variable, it ends the step before that variable's cleanup;
 * the next sentinel up ends the cleanup's own step. */
struct sentinel { const char *label; int line; };
static void sentinel_fire(struct sentinel *s) { mark(s->label, s->line); }
#define SENTINEL_CAT2(a, b) a##b
#define SENTINEL_CAT(a, b) SENTINEL_CAT2(a, b)
#define SENTINEL(label)                                                         \
    struct sentinel SENTINEL_CAT(sentinel_, __COUNTER__)                        \
        __attribute__((cleanup(sentinel_fire), unused)) = {(label), __LINE__}

/* ------------------------------------------------------------------------
 *  What the workloads use besides cuctx
 * ------------------------------------------------------------------------ */

static struct {
    PFN_cuCtxCreate_v3020 ctx_create;
    PFN_cuCtxDestroy_v4000 ctx_destroy;
    PFN_cuCtxPopCurrent_v4000 ctx_pop;
    PFN_cuGraphCreate_v10000 graph_create;
    PFN_cuGraphAddEmptyNode_v10000 graph_add_empty;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuDeviceGetDevResource_v12040 dev_resource;
    PFN_cuDevSmResourceSplitByCount_v12040 sm_split;
    PFN_cuDevResourceGenerateDesc_v12040 resource_desc;
    PFN_cuMemPoolSetAccess_v11020 pool_set_access;
    PFN_cuDeviceSetMemPool_v11020 set_mem_pool;
} raw;

static char ptx_path[4096];
static char *ptx_image;

static const cuctx_ctx NO_CTX = {0};
static const cuctx_stream NO_STREAM = {0};

enum owner { OWNED, PRIMARY, GREEN };
static const char *const owner_names[] = {"owned", "primary", "green"};

struct workload {
    const char *name;
    void (*run)(const struct workload *w);
    int owner;          /* enum owner, for the child kinds */
    int ids_only;       /* meaningful only with cuCtxGetId */
};

/* The context children are made in: owned (created, then popped), the
 * primary context of device 0, or a green context of 16 of its SMs (whose
 * children but streams are the primary's, which it holds the last retain of). */
static CUresult owner_open(int kind, cuctx_ctx *c)
{
    if (kind == PRIMARY)
        return CREATE(cuctx_ctx_primary(c, 0), *c);
    if (kind == GREEN)
        return CREATE(cuctx_ctx_green(c, 0, 16), *c);
    CUresult rc = CREATE(cuctx_ctx_create(c, 0, CUCTX_SCHED_AUTO), *c);
    if (rc == CUDA_SUCCESS)
        CALL(cuctx_pop_current());
    return rc;
}

/* ------------------------------------------------------------------------
 *  The workloads
 * ------------------------------------------------------------------------ */

static void wl_driver(const struct workload *w)
{
    int version = 0;
    CUcontext cur = NULL;
    void *sym = NULL;
    (void)w;
    CALL(cuctx_init());
    CALL(cuctx_driver_version(&version));
    CALL(cuctx_driver_symbol("cuMemsetD8", 3020, &sym));
    CALL(cuctx_current_raw(&cur));
}

/* Owned contexts: create (pushed), ask, synchronize, pop; one destroyed
 * while current; set_current on an empty stack, then pop. */
static void wl_ctx_owned(const struct workload *w)
{
    cuctx_ctx a = {0}, b = {0};
    int is = 0;
    (void)w;
    if (CREATE(cuctx_ctx_create(&a, 0, CUCTX_SCHED_AUTO), a) != CUDA_SUCCESS)
        goto out;
    CALL(cuctx_ctx_is_current(a, &is));
    VAL(cuctx_ctx_raw(a), v_ == NULL);
    VAL(cuctx_ctx_device(a), v_ == -1);
    CALL(cuctx_ctx_synchronize(a));
    CALL(cuctx_pop_current());
    if (CREATE(cuctx_ctx_create(&b, 1, CUCTX_SCHED_BLOCKING_SYNC | CUCTX_MAP_HOST), b) == CUDA_SUCCESS)
        CALL(cuctx_ctx_destroy(&b));        /* while current: the driver pops it */
    if (CALL(cuctx_ctx_set_current(a)) == CUDA_SUCCESS) {
        CALL(cuctx_ctx_synchronize(a));
        CALL(cuctx_pop_current());
    }
out:
    CALL(cuctx_ctx_destroy(&b));
    CALL(cuctx_ctx_destroy(&a));
}

/* Primary contexts: two retains of one, set current, ask, synchronize. */
static void wl_ctx_primary(const struct workload *w)
{
    cuctx_ctx p = {0}, q = {0};
    int is = 0;
    (void)w;
    if (CREATE(cuctx_ctx_primary(&p, 0), p) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_ctx_primary(&q, 0), q);
    if (CALL(cuctx_ctx_set_current(p)) == CUDA_SUCCESS) {
        CALL(cuctx_ctx_is_current(q, &is));
        CALL(cuctx_pop_current());
    }
    CALL(cuctx_ctx_synchronize(q));
    VAL(cuctx_ctx_raw(q), v_ == NULL);
    VAL(cuctx_ctx_device(p), v_ == -1);
out:
    CALL(cuctx_ctx_destroy(&q));
    CALL(cuctx_ctx_destroy(&p));
}

/* A reset frees the children with the context; the handle is destroyed as
 * usual, and a new retain gets a new generation. */
static void wl_primary_reset(const struct workload *w)
{
    cuctx_ctx p = {0};
    cuctx_mem m = {0};
    cuctx_event e = {0};
    (void)w;
    if (CREATE(cuctx_ctx_primary(&p, 0), p) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_mem_alloc(&m, p, 4096), m);
    CREATE(cuctx_event_create(&e, p, 0), e);
    CALL(cuctx_ctx_primary_reset(0));
    CALL(cuctx_mem_destroy(&m));            /* skipped: freed by the reset */
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_ctx_destroy(&p));
    if (CREATE(cuctx_ctx_primary(&p, 0), p) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_event_create(&e, p, CU_EVENT_DISABLE_TIMING), e) == CUDA_SUCCESS)
        CALL(cuctx_event_query(e));
out:
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_ctx_destroy(&p));
}

/* A reset of a primary context only the runtime (an outside holder) retains:
 * cuctx has no address for it, and asks the driver (state, retain, release)
 * to find and drain whatever entry it has for it. */
static void wl_primary_reset_unretained(const struct workload *w)
{
    (void)w;
    if (CALL(cuctx_init()) != CUDA_SUCCESS)
        return;
    CHECK(sim()->primary_outside_retain(0) == 0, "the simulator took the outside retain");
    CALL(cuctx_ctx_primary_reset(0));
    sim()->primary_outside_release(0);
}

/* The runtime (an outside holder) retains the primary context too: cuctx's
 * last release does not end it, and the children made through cuctx keep
 * working and are freed by their destroys. */
static void wl_primary_shared(const struct workload *w)
{
    cuctx_ctx p = {0};
    cuctx_event e = {0};
    cuctx_stream s = {0};
    int outside;
    (void)w;
    if (CALL(cuctx_init()) != CUDA_SUCCESS)
        return;
    outside = sim()->primary_outside_retain(0) == 0;    /* needs cuInit: the devices */
    CHECK(outside, "the simulator took the outside retain");
    if (CREATE(cuctx_ctx_primary(&p, 0), p) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_event_create(&e, p, 0), e);
    CREATE(cuctx_stream_create(&s, p, 0, 0), s);
    CALL(cuctx_ctx_destroy(&p));            /* cuctx's last retain; the runtime's remains */
    CALL(cuctx_event_record(e, s));
    CALL(cuctx_stream_synchronize(s));
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_stream_destroy(&s));
    CHECK(sim()->live(CUSIM_EVENT) == 0 && sim()->live(CUSIM_STREAM) == 0,
          "children made through cuctx are freed while the runtime holds the primary context");
out:
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_ctx_destroy(&p));
    if (outside)
        sim()->primary_outside_release(0);
}

/* Borrowed contexts: one handed in, one met as the current context of a
 * create given {0}, and one whose owner destroys it before its child. */
static void wl_borrow(const struct workload *w)
{
    CUcontext r1 = NULL, r2 = NULL, popped;
    cuctx_ctx b = {0};
    cuctx_event e = {0}, e2 = {0};
    cuctx_stream s = {0};
    (void)w;
    if (CALL(cuctx_init()) != CUDA_SUCCESS)
        return;
    if (RAW(raw.ctx_create(&r1, 0, 0)) != CUDA_SUCCESS)
        return;
    RAW(raw.ctx_pop(&popped));
    if (CREATE(cuctx_ctx_borrow(&b, r1), b) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_event_create(&e, b, 0), e) == CUDA_SUCCESS)
        CALL(cuctx_event_record(e, NO_STREAM));
    CALL(cuctx_ctx_synchronize(b));
    VAL(cuctx_ctx_device(b), v_ == -1);
    if (RAW(raw.ctx_create(&r2, 1, 0)) == CUDA_SUCCESS) {      /* current: r2, unknown to cuctx */
        if (CREATE(cuctx_stream_create(&s, NO_CTX, 0, 0), s) == CUDA_SUCCESS)
            CALL(cuctx_stream_synchronize(s));
        CALL(cuctx_stream_destroy(&s));
        RAW(raw.ctx_destroy(r2));          /* current: the driver pops it */
    }
    CALL(cuctx_event_destroy(&e));
    /* A child that outlives its borrowed context's owner: with cuCtxGetId
     * its destroy is skipped; without it, rule 9 asks to keep such
     * children within their owner's lifetime, so not here. */
    if (!R.no_ids)
        CREATE(cuctx_event_create(&e2, b, 0), e2);
out:
    CALL(cuctx_ctx_destroy(&b));
    RAW(raw.ctx_destroy(r1));               /* the owner ends it: e2 goes with it */
    CALL(cuctx_event_destroy(&e2));         /* skipped: never sent to the driver */
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_event_destroy(&e));
}

/* Rule 2's wrong order: the context goes first, the children's destroys are
 * skipped (owned: no driver call; primary: the id check). */
static void wl_wrong_order(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_event e = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    if (owner_open(w->owner, &c) == CUDA_SUCCESS) {
        CREATE(cuctx_event_create(&e, c, 0), e);
        CREATE(cuctx_stream_create(&s, c, 0, -1), s);
        CREATE(cuctx_mem_alloc(&m, c, 1 << 16), m);
    }
    CALL(cuctx_ctx_destroy(&c));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_event_destroy(&e));
}

/* The scope machinery: nested CUCTX_SCOPED over an owned and a primary
 * context (each the other's previous context), a context created inside a
 * scope, CUCTX_SCOPED_ELSE, CUCTX_GUARD and the plain enter/exit. */
static void wl_scope(const struct workload *w)
{
    cuctx_ctx a = {0}, p = {0}, c = {0}, o = {0}, b = {0};
    cuctx_event e = {0};
    cuctx_mem m = {0};
    cuctx_stream s = {0};
    cuctx_scope sc;
    int else_failed = 0;
    (void)w;
    if (owner_open(OWNED, &a) != CUDA_SUCCESS || CREATE(cuctx_ctx_primary(&p, 0), p) != CUDA_SUCCESS)
        goto out;

    MARK("(before CUCTX_SCOPED(a))");
    CUCTX_SCOPED(a) {
        MARK("CUCTX_SCOPED(a) enter");
        CREATE(cuctx_event_create(&e, NO_CTX, 0), e);       /* in a, the current context */
        CUCTX_SCOPED(p) {
            MARK("CUCTX_SCOPED(p) enter, previous a");
            CREATE(cuctx_mem_alloc(&m, NO_CTX, 512), m);     /* in p */
        }
        MARK("CUCTX_SCOPED(p) exit, previous a");
    }
    MARK("CUCTX_SCOPED(a) exit, previous none");

    CUCTX_SCOPED(p) {
        MARK("CUCTX_SCOPED(p) enter, previous none");
        CUCTX_SCOPED(a) {
            MARK("CUCTX_SCOPED(a) enter, previous p");
            CALL(cuctx_event_record(e, NO_STREAM));
        }
        MARK("CUCTX_SCOPED(a) exit, previous p");
    }
    MARK("CUCTX_SCOPED(p) exit, previous none");

    CUCTX_SCOPED(a) {
        MARK("CUCTX_SCOPED(a) enter, for a create inside");
        CREATE(cuctx_ctx_create(&c, 1, 0), c);               /* pushed: the exit pops it */
    }
    MARK("CUCTX_SCOPED(a) exit, popping the context created inside");

    CUCTX_SCOPED_ELSE(p, else_failed = 1) {
        FLAG("CUCTX_SCOPED_ELSE(p) enter", 0);
        CREATE(cuctx_stream_create(&s, NO_CTX, 0, 0), s);
    }
    if (else_failed)
        FLAG("CUCTX_SCOPED_ELSE(p) enter", 1);
    MARK("CUCTX_SCOPED_ELSE(p) exit");

    {
        CUCTX_GUARD(a);
        MARK("CUCTX_GUARD(a) enter");
        CALL(cuctx_event_synchronize(e));
    }
    MARK("CUCTX_GUARD(a) exit");

    if (CALL(cuctx_scope_enter(&sc, p)) == CUDA_SUCCESS) {
        CALL(cuctx_stream_synchronize(s));
        cuctx_scope_exit(&sc);
        MARK("cuctx_scope_exit(&sc)");
    }

    /* A caller's context (o, created: pushed and current), a scope over a,
     * and inside it a context created and destroyed while current: the
     * scope's exit must leave o current. */
    if (CREATE(cuctx_ctx_create(&o, 1, 0), o) == CUDA_SUCCESS) {
        CUcontext o_raw = VAL(cuctx_ctx_raw(o), v_ == NULL), cur = NULL;
        CUCTX_SCOPED(a) {
            MARK("CUCTX_SCOPED(a) enter, previous o");
            if (CREATE(cuctx_ctx_create(&b, 0, 0), b) == CUDA_SUCCESS)
                CALL(cuctx_ctx_destroy(&b));        /* current: the driver pops it */
        }
        MARK("CUCTX_SCOPED(a) exit, previous o");
        CALL(cuctx_current_raw(&cur));
        CHECK(cur == o_raw, "after the scope the previous context (o) is current again");
        if (cur == o_raw)
            CALL(cuctx_pop_current());
    }
out:
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_ctx_destroy(&b));
    CALL(cuctx_ctx_destroy(&o));
    CALL(cuctx_ctx_destroy(&c));
    CALL(cuctx_ctx_destroy(&p));
    CALL(cuctx_ctx_destroy(&a));
}

/* cuctx_scope_exit's last duty: the previous context - one cuctx meets
 * first at the scope's enter - is destroyed by its owner inside the block
 * and a new context takes its address; at exit the driver's id shows the
 * slot to be another context's, which is popped rather than left current. */
static void wl_scope_replaced(const struct workload *w)
{
    cuctx_ctx a = {0};
    CUcontext r = NULL, r2 = NULL, popped = NULL, cur = NULL;
    (void)w;
    if (owner_open(OWNED, &a) != CUDA_SUCCESS)
        goto out;
    if (RAW(raw.ctx_create(&r, 0, 0)) != CUDA_SUCCESS)     /* current: the caller's, unknown to cuctx */
        goto out;
    MARK("(before CUCTX_SCOPED(a))");
    CUCTX_SCOPED(a) {
        MARK("CUCTX_SCOPED(a) enter, previous r (met here first)");
        RAW(raw.ctx_destroy(r));             /* not current: stays on the stack, dead */
        if (RAW(raw.ctx_create(&r2, 0, 0)) == CUDA_SUCCESS) {
            CHECK(r2 == r, "the new context took the dead one's address");
            RAW(raw.ctx_pop(&popped));
        }
    }
    MARK("CUCTX_SCOPED(a) exit, previous r replaced");
    CALL(cuctx_current_raw(&cur));
    CHECK(cur == NULL, "the slot of the dead previous context, now another context's, was taken back");
out:
    if (r2)
        RAW(raw.ctx_destroy(r2));           /* if current (left so by a fault run), popped too */
    else if (r)
        RAW(raw.ctx_destroy(r));
    CALL(cuctx_ctx_destroy(&a));
}

static void wl_event(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_event start = {0}, stop = {0};
    float ms = 0;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0), s) != CUDA_SUCCESS
        || CREATE(cuctx_event_create(&start, c, CU_EVENT_DEFAULT), start) != CUDA_SUCCESS
        || CREATE(cuctx_event_create(&stop, c, CU_EVENT_BLOCKING_SYNC), stop) != CUDA_SUCCESS)
        goto out;
    CALL(cuctx_event_record(start, s));
    CALL(cuctx_event_record(stop, NO_STREAM));  /* the owner's default stream */
    CALL(cuctx_event_query(stop));
    CALL(cuctx_event_synchronize(stop));
    CALL(cuctx_event_elapsed_ms(start, stop, &ms));
    VAL(cuctx_event_raw(start), v_ == NULL);
out:
    CALL(cuctx_event_destroy(&stop));
    CALL(cuctx_event_destroy(&start));
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_ctx_destroy(&c));
}

static void wl_stream(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_stream s1 = {0}, s2 = {0};
    cuctx_event e = {0};
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_stream_create(&s1, c, 0, 0), s1) != CUDA_SUCCESS
        || CREATE(cuctx_stream_create(&s2, c, CU_STREAM_NON_BLOCKING, -1), s2) != CUDA_SUCCESS
        || CREATE(cuctx_event_create(&e, c, CU_EVENT_DISABLE_TIMING), e) != CUDA_SUCCESS)
        goto out;
    CALL(cuctx_event_record(e, s1));
    CALL(cuctx_stream_wait_event(s2, e));
    CALL(cuctx_stream_synchronize(s2));
    VAL(cuctx_stream_raw(s1), v_ == NULL);
out:
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_stream_destroy(&s2));
    CALL(cuctx_stream_destroy(&s1));
    CALL(cuctx_ctx_destroy(&c));
}

/* A module with a global variable (cuctx_module_global). */
static const char global_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .b32 counters[4];\n"
    ".visible .entry tick()\n{\n    ret;\n}\n";

static void wl_module(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_module m1 = {0}, m2 = {0}, m3 = {0};
    CUfunction f = NULL;
    CUdeviceptr p = 0;
    size_t bytes = 0;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_module_load(&m1, c, ptx_path), m1) == CUDA_SUCCESS)
        CALL(cuctx_module_function(m1, "vadd", &f));
    if (CREATE(cuctx_module_load_data(&m2, c, ptx_image), m2) == CUDA_SUCCESS) {
        CALL(cuctx_module_function(m2, "vadd", &f));
        VAL(cuctx_module_raw(m2), v_ == NULL);
    }
    if (CREATE(cuctx_module_load_data(&m3, c, global_ptx), m3) == CUDA_SUCCESS)
        CALL(cuctx_module_global(m3, "counters", &p, &bytes));
out:
    CALL(cuctx_module_destroy(&m3));
    CALL(cuctx_module_destroy(&m2));
    CALL(cuctx_module_destroy(&m1));
    CALL(cuctx_ctx_destroy(&c));
}

/* cuctx_launch on a stream of the owner (not current: pushed for it), and
 * on the default stream with the owner current. */
static void wl_launch(const struct workload *w)
{
    static const cuctx_dim3 grid = {2, 1, 1}, block = {32, 1, 1};
    cuctx_ctx c = {0};
    cuctx_module m = {0};
    cuctx_stream s = {0};
    CUfunction f = NULL;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_module_load(&m, c, ptx_path), m) != CUDA_SUCCESS
        || CALL(cuctx_module_function(m, "vadd", &f)) != CUDA_SUCCESS
        || CREATE(cuctx_stream_create(&s, c, 0, 0), s) != CUDA_SUCCESS)
        goto out;
    CALL(cuctx_launch(f, s, grid, block, 0, NULL));
    CUCTX_SCOPED(c) {
        MARK("CUCTX_SCOPED(c) enter");
        CALL(cuctx_launch(f, NO_STREAM, grid, block, 64, NULL));
    }
    MARK("CUCTX_SCOPED(c) exit");
out:
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_module_destroy(&m));
    CALL(cuctx_ctx_destroy(&c));
}

static void wl_mem(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_mem a = {0}, b = {0};
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_mem_alloc(&a, c, 1 << 20), a) == CUDA_SUCCESS) {
        VAL(cuctx_mem_ptr(a), v_ == 0);
        VAL(cuctx_mem_size(a), v_ == 0);
    }
    CREATE(cuctx_mem_alloc(&b, c, 100), b);
out:
    CALL(cuctx_mem_destroy(&b));
    CALL(cuctx_mem_destroy(&a));
    CALL(cuctx_ctx_destroy(&c));
}

static void wl_host_mem(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_host_mem a = {0}, b = {0};
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_host_mem_alloc(&a, c, 4096, 0), a) == CUDA_SUCCESS) {
        VAL(cuctx_host_mem_ptr(a), v_ == NULL);
        VAL(cuctx_host_mem_size(a), v_ == 0);
    }
    CREATE(cuctx_host_mem_alloc(&b, c, 8192, CU_MEMHOSTALLOC_PORTABLE), b);
out:
    CALL(cuctx_host_mem_destroy(&b));
    CALL(cuctx_host_mem_destroy(&a));
    CALL(cuctx_ctx_destroy(&c));
}

static void wl_graph_exec(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_graph_exec ge = {0};
    CUgraph g = NULL;
    CUgraphNode node = NULL;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (RAW(raw.graph_create(&g, 0)) != CUDA_SUCCESS || RAW(raw.graph_add_empty(&node, g, NULL, 0)) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_graph_exec_instantiate(&ge, c, g, 0), ge) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_stream_create(&s, c, 0, 0), s) == CUDA_SUCCESS) {
        CALL(cuctx_graph_exec_launch(ge, s));
        CALL(cuctx_stream_synchronize(s));
    }
    CALL(cuctx_graph_exec_launch(ge, NO_STREAM));
    VAL(cuctx_graph_exec_raw(ge), v_ == NULL);
out:
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_graph_exec_destroy(&ge));
    if (g)
        RAW(raw.graph_destroy(g));
    CALL(cuctx_ctx_destroy(&c));
}

/* Graphs and libraries, objects of no context: a library loaded from a
 * file and from memory, its kernel launched on a stream of the owner; a
 * capture kept at the block's end, one abandoned by break, one by hand;
 * the captured graph instantiated in the owner and launched. */
static void wl_capture(const struct workload *w)
{
    static const cuctx_dim3 one = {1, 1, 1}, warp = {32, 1, 1};
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_library lib = {0}, lib2 = {0};
    cuctx_graph g = {0}, g2 = {0}, g3 = {0};
    cuctx_graph_exec ge = {0};
    cuctx_capture cap;
    CUkernel k = NULL;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0), s) != CUDA_SUCCESS
        || CREATE(cuctx_library_load(&lib2, ptx_path), lib2) != CUDA_SUCCESS
        || CREATE(cuctx_library_load_data(&lib, ptx_image), lib) != CUDA_SUCCESS
        || CALL(cuctx_library_kernel(lib, "vadd", &k)) != CUDA_SUCCESS)
        goto out;
    VAL(cuctx_library_raw(lib), v_ == NULL);
    CALL(cuctx_launch(k, s, one, warp, 0, NULL));
    CUCTX_CAPTURE(s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        MARK("CUCTX_CAPTURE begin");
        CALL(cuctx_launch(k, s, one, warp, 0, NULL));
    }
    MARK("CUCTX_CAPTURE end");
    CUCTX_CAPTURE(s, &g2, CU_STREAM_CAPTURE_MODE_RELAXED) {
        MARK("CUCTX_CAPTURE begin");
        CALL(cuctx_launch(k, s, one, warp, 0, NULL));
        break;
    }
    MARK("CUCTX_CAPTURE abandoned by break");
    if (CALL(cuctx_capture_begin(&cap, s, &g2, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) == CUDA_SUCCESS) {
        CALL(cuctx_launch(k, s, one, warp, 0, NULL));
        CALL(cuctx_capture_end(&cap, 1));
    }
    CREATE(cuctx_graph_create(&g3), g3);
    if (g.id && CREATE(cuctx_graph_exec_instantiate(&ge, c, VAL(cuctx_graph_raw(g), v_ == NULL), 0), ge)
                    == CUDA_SUCCESS)
        CALL(cuctx_graph_exec_launch(ge, s));
out:
    CALL(cuctx_graph_exec_destroy(&ge));
    CALL(cuctx_graph_destroy(&g3));
    CALL(cuctx_graph_destroy(&g2));
    CALL(cuctx_graph_destroy(&g));
    /* the stream before the libraries: after a failed end it may still be
     * capturing (its destroy ends that), and an unload under a GLOBAL
     * capture is a call the capture forbids */
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_library_destroy(&lib));
    CALL(cuctx_library_destroy(&lib2));
    CALL(cuctx_ctx_destroy(&c));
}

/* Stream-ordered memory and pools: a free on its stream, on another, after
 * its stream (non-blocking: a synchronize first), after its context
 * (cuMemFree), a pool destroyed with an allocation alive (given device 1's
 * access first: its end, parking it, takes that away, and made the
 * device's current pool: its end makes the default pool current again),
 * an exportable pool (destroyed, not parked). */
static void wl_async(const struct workload *w)
{
    static const CUmemPoolProps shared = {CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                          {CU_MEM_LOCATION_TYPE_DEVICE, 0}, NULL, 0, 0, {0}};
    static const CUmemAccessDesc to_1 = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    cuctx_ctx c = {0};
    cuctx_stream s = {0}, s2 = {0};
    cuctx_mem_pool pool = {0}, dflt = {0}, exported = {0};
    cuctx_mem m = {0}, m2 = {0}, m3 = {0}, m4 = {0}, m5 = {0};
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0), s) != CUDA_SUCCESS
        || CREATE(cuctx_stream_create(&s2, c, 0, 0), s2) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_mem_pool_create(&pool, 0, NULL), pool);
    CREATE(cuctx_mem_pool_create(&exported, 0, &shared), exported);
    if (pool.id)
        RAW(raw.pool_set_access(cuctx_mem_pool_raw(pool), &to_1, 1));
    CREATE(cuctx_mem_pool_default(&dflt, 0), dflt);
    CREATE(cuctx_mem_alloc_async(&m, s, 4096), m);
    if (pool.id)
        CREATE(cuctx_mem_alloc_from_pool(&m2, pool, s2, 4096), m2);
    CREATE(cuctx_mem_alloc_async(&m3, s2, 4096), m3);
    CREATE(cuctx_mem_alloc_async(&m4, s, 4096), m4);
    CREATE(cuctx_mem_alloc_async(&m5, s2, 4096), m5);
    if (m.id)
        VAL(cuctx_mem_ptr(m), v_ == 0);
    CALL(cuctx_mem_free_async(&m3, s));
    if (pool.id)
        CALL(cuctx_mem_pool_trim(pool, 0));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_mem_destroy(&m4));
out:
    if (pool.id)
        RAW(raw.set_mem_pool(0, cuctx_mem_pool_raw(pool)));
    CALL(cuctx_mem_pool_destroy(&pool));
    CALL(cuctx_mem_pool_destroy(&exported));
    CALL(cuctx_mem_pool_destroy(&dflt));
    CALL(cuctx_mem_destroy(&m2));
    CALL(cuctx_mem_destroy(&m3));
    CALL(cuctx_mem_destroy(&m4));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_stream_destroy(&s));
    /* m5's stream finishes first: a refused cuCtxDestroy leaves the context
     * alive in the driver though ended for cuctx, which then frees m5 as
     * after its context's end (cuMemFree), beside whatever work of the
     * context is unfinished (a limit of that case, in the session notes) */
    CALL(cuctx_stream_synchronize(s2));
    CALL(cuctx_stream_destroy(&s2));
    CALL(cuctx_ctx_destroy(&c));
    CALL(cuctx_mem_destroy(&m5));   /* its context gone: in the primary if active (else cuMemFree) */
}

/* Across contexts and processes: peer access from the owner to a context
 * of device 1 and back, a second handle of one pair (borrowed: the driver
 * answers 704), one destroyed after its context (skipped); memory and an
 * event exported from the owner and opened in that context (the simulator
 * stands in for the importing process), and a mapping in a third context
 * that ends before its close (skipped). */
static void wl_multi(const struct workload *w)
{
    cuctx_ctx c = {0}, d = {0}, e = {0};
    cuctx_peer p = {0}, p2 = {0}, p3 = {0};
    cuctx_mem m = {0}, q = {0}, q2 = {0};
    cuctx_event ev = {0}, oe = {0};
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    int owned = 0;
    sim()->set_ipc_loopback(1);
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    if (CREATE(cuctx_ctx_create(&d, 1, CUCTX_SCHED_AUTO), d) != CUDA_SUCCESS)
        goto out;
    CALL(cuctx_pop_current());
    if (CREATE(cuctx_peer_enable(&p, c, d), p) == CUDA_SUCCESS)
        CALL(cuctx_peer_owned(p, &owned));
    CREATE(cuctx_peer_enable(&p2, d, c), p2);
    CREATE(cuctx_peer_enable(&p3, c, d), p3);
    if (CREATE(cuctx_mem_alloc(&m, c, 4096), m) == CUDA_SUCCESS && CALL(cuctx_ipc_mem_get(m, &mh)) == CUDA_SUCCESS
        && CREATE(cuctx_ipc_mem_open(&q, d, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), q) == CUDA_SUCCESS) {
        VAL(cuctx_mem_ptr(q), v_ == 0);
        VAL(cuctx_mem_size(q), v_ == 0);
    }
    if (CREATE(cuctx_event_create(&ev, c, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), ev) == CUDA_SUCCESS
        && CALL(cuctx_ipc_event_get(ev, &eh)) == CUDA_SUCCESS
        && CREATE(cuctx_ipc_event_open(&oe, d, eh), oe) == CUDA_SUCCESS)
        CALL(cuctx_event_record(oe, NO_STREAM));
    if (m.id && q.id && CREATE(cuctx_ctx_create(&e, 0, CUCTX_SCHED_AUTO), e) == CUDA_SUCCESS) {
        CALL(cuctx_pop_current());
        CREATE(cuctx_ipc_mem_open(&q2, e, mh, 0), q2);
    }
out:
    CALL(cuctx_ctx_destroy(&e));            /* q2's context first: its close is skipped */
    CALL(cuctx_mem_destroy(&q2));
    CALL(cuctx_event_destroy(&oe));
    CALL(cuctx_mem_destroy(&q));
    CALL(cuctx_event_destroy(&ev));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_peer_destroy(&p3));
    CALL(cuctx_peer_destroy(&p));
    CALL(cuctx_ctx_destroy(&d));            /* p2's context first: its disable is skipped */
    CALL(cuctx_destroy(&p2));
    CALL(cuctx_ctx_destroy(&c));
}

/* Everything destroyed by CUCTX_AUTO, in an early return too. */
static void auto_children(cuctx_ctx ctx)
{
    SENTINEL("automatic cleanup of host memory h");
    CUCTX_AUTO cuctx_host_mem h = {0};
    SENTINEL("automatic cleanup of module mod");
    CUCTX_AUTO cuctx_module mod = {0};
    SENTINEL("automatic cleanup of stream s");
    CUCTX_AUTO cuctx_stream s = {0};
    SENTINEL("(end of auto_children)");
    if (CREATE(cuctx_stream_create(&s, ctx, 0, 0), s) != CUDA_SUCCESS)
        return;
    if (CREATE(cuctx_module_load_data(&mod, ctx, ptx_image), mod) != CUDA_SUCCESS)
        return;
    CREATE(cuctx_host_mem_alloc(&h, ctx, 64, 0), h);
}

static void wl_auto(const struct workload *w)
{
    SENTINEL("automatic cleanup of context ctx");
    CUCTX_AUTO cuctx_ctx ctx = {0};
    SENTINEL("automatic cleanup of primary context p");
    CUCTX_AUTO cuctx_ctx p = {0};
    SENTINEL("automatic cleanup of device memory m");
    CUCTX_AUTO cuctx_mem m = {0};
    SENTINEL("automatic cleanup of event pe (in p)");
    CUCTX_AUTO cuctx_event pe = {0};
    SENTINEL("(end of wl_auto)");
    (void)w;
    if (CREATE(cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO), ctx) != CUDA_SUCCESS)
        return;
    CALL(cuctx_pop_current());
    MARK("(before CUCTX_SCOPED(ctx))");
    CUCTX_SCOPED(ctx) {
        SENTINEL("automatic cleanup of event ev, then CUCTX_SCOPED(ctx) exit");
        CUCTX_AUTO cuctx_event ev = {0};
        SENTINEL("(end of the scoped block)");
        MARK("CUCTX_SCOPED(ctx) enter");
        if (CREATE(cuctx_event_create(&ev, NO_CTX, 0), ev) == CUDA_SUCCESS)
            CALL(cuctx_event_record(ev, NO_STREAM));
    }
    MARK("CUCTX_SCOPED(ctx) exit");
    auto_children(ctx);
    if (CREATE(cuctx_mem_alloc(&m, ctx, 1024), m) != CUDA_SUCCESS)
        return;
    if (CREATE(cuctx_ctx_primary(&p, 1), p) != CUDA_SUCCESS)
        return;
    CREATE(cuctx_event_create(&pe, p, 0), pe);
}

/* cuctx_destroy on every kind of handle. */
static void wl_destroy_any(const struct workload *w)
{
    cuctx_ctx c = {0};
    cuctx_event e = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0};
    cuctx_mem m = {0};
    cuctx_host_mem h = {0};
    cuctx_graph_exec ge = {0};
    CUgraph g = NULL;
    CUgraphNode node = NULL;
    if (owner_open(w->owner, &c) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_event_create(&e, c, 0), e);
    CREATE(cuctx_stream_create(&s, c, 0, 0), s);
    CREATE(cuctx_module_load(&mod, c, ptx_path), mod);
    CREATE(cuctx_mem_alloc(&m, c, 256), m);
    CREATE(cuctx_host_mem_alloc(&h, c, 256, 0), h);
    if (RAW(raw.graph_create(&g, 0)) == CUDA_SUCCESS && RAW(raw.graph_add_empty(&node, g, NULL, 0)) == CUDA_SUCCESS)
        CREATE(cuctx_graph_exec_instantiate(&ge, c, g, 0), ge);
out:
    CALL(cuctx_destroy(&ge));
    CALL(cuctx_destroy(&h));
    CALL(cuctx_destroy(&m));
    CALL(cuctx_destroy(&mod));
    CALL(cuctx_destroy(&s));
    CALL(cuctx_destroy(&e));
    CALL(cuctx_destroy(&c));
    if (g)
        RAW(raw.graph_destroy(g));
}

/* 64 borrowed contexts whose owners destroyed them, then one more borrow:
 * registering it sweeps the map, one cuCtxGetId per dead entry. Only the
 * last borrow and what follows are failed on purpose. */
#define SWEEP_N 64
static void wl_sweep(const struct workload *w)
{
    static CUcontext r[SWEEP_N];
    CUcontext last = NULL, popped;
    cuctx_ctx b = {0};
    cuctx_event e = {0};
    int made = 0;
    (void)w;
    sim()->set_recycling(0);    /* distinct addresses: 64 entries in the map */
    if (SETUP(cuctx_init()) != CUDA_SUCCESS)
        return;
    for (made = 0; made < SWEEP_N; made++) {
        if (RAW(raw.ctx_create(&r[made], 0, 0)) != CUDA_SUCCESS)
            break;
        RAW(raw.ctx_pop(&popped));
        if (SETUP(cuctx_ctx_borrow(&b, r[made])) == CUDA_SUCCESS)
            SETUP(cuctx_ctx_destroy(&b));
    }
    for (int i = 0; i < made; i++)
        RAW(raw.ctx_destroy(r[i]));
    if (RAW(raw.ctx_create(&last, 1, 0)) != CUDA_SUCCESS)
        return;
    RAW(raw.ctx_pop(&popped));
    if (CREATE(cuctx_ctx_borrow(&b, last), b) == CUDA_SUCCESS)
        CREATE(cuctx_event_create(&e, b, 0), e);
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_ctx_destroy(&b));
    RAW(raw.ctx_destroy(last));
}

/* Green contexts: one made from a descriptor, the other by a count; the
 * first's children but streams outlive it in the primary the second holds;
 * its streams, one of them with stream-ordered memory, end with it; one
 * destroyed while current in a scope, one while set current. */
static void wl_green(const struct workload *w)
{
    cuctx_ctx g = {0}, g2 = {0}, g3 = {0};
    cuctx_stream s = {0}, s2 = {0};
    cuctx_event e = {0};
    cuctx_mem m = {0}, am = {0};
    cuctx_module mod = {0};
    CUdevResource all, part;
    CUdevResourceDesc desc = NULL;
    unsigned n = 1;
    (void)w;
    if (CALL(cuctx_init()) != CUDA_SUCCESS)
        return;
    if (RAW(raw.dev_resource(0, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS
        || RAW(raw.sm_split(&part, &n, &all, NULL, 0, 24)) != CUDA_SUCCESS
        || RAW(raw.resource_desc(&desc, &part, 1)) != CUDA_SUCCESS)
        return;
    if (CREATE(cuctx_ctx_green_desc(&g, 0, desc), g) != CUDA_SUCCESS)
        goto out;
    CREATE(cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0), s);
    CREATE(cuctx_stream_create(&s2, g, 0, 0), s2);
    CREATE(cuctx_event_create(&e, g, 0), e);
    CREATE(cuctx_mem_alloc(&m, g, 4096), m);
    CREATE(cuctx_module_load_data(&mod, g, ptx_image), mod);
    if (s.id) {
        CREATE(cuctx_mem_alloc_async(&am, s, 4096), am);
        if (e.id)
            CALL(cuctx_event_record(e, s));
        CALL(cuctx_stream_synchronize(s));
    }
    VAL(cuctx_ctx_raw(g), v_ == NULL);
    CREATE(cuctx_ctx_green(&g2, 0, 16), g2);       /* holds the primary from here on */
    CALL(cuctx_ctx_destroy(&g));                    /* s and s2 first */
    CALL(cuctx_event_destroy(&e));                  /* in the primary, which g2 holds */
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_module_destroy(&mod));
    CALL(cuctx_mem_destroy(&am));
    CALL(cuctx_stream_destroy(&s));                 /* skipped: ended with g */
    CALL(cuctx_stream_destroy(&s2));
    if (g2.id) {
        CUCTX_SCOPED(g2) {
            MARK("CUCTX_SCOPED(g2) enter");
            CREATE(cuctx_stream_create(&s, NO_CTX, 0, 0), s);
            CALL(cuctx_ctx_destroy(&g2));           /* current: popped */
        }
        MARK("CUCTX_SCOPED(g2) exit");
    }
    if (CREATE(cuctx_ctx_green(&g3, 0, 8), g3) == CUDA_SUCCESS && CALL(cuctx_ctx_set_current(g3)) == CUDA_SUCCESS)
        CALL(cuctx_ctx_destroy(&g3));               /* current: popped */
out:
    CALL(cuctx_stream_destroy(&s));
    CALL(cuctx_stream_destroy(&s2));
    CALL(cuctx_mem_destroy(&am));
    CALL(cuctx_module_destroy(&mod));
    CALL(cuctx_mem_destroy(&m));
    CALL(cuctx_event_destroy(&e));
    CALL(cuctx_ctx_destroy(&g3));
    CALL(cuctx_ctx_destroy(&g2));
    CALL(cuctx_ctx_destroy(&g));
}

static const struct workload workloads[] = {
    {"driver", wl_driver, OWNED, 0},
    {"ctx owned: create/is_current/raw/device/synchronize/pop/set_current/destroy", wl_ctx_owned, OWNED, 0},
    {"ctx primary: retain twice/set_current/is_current/synchronize/destroy", wl_ctx_primary, PRIMARY, 0},
    {"ctx primary_reset", wl_primary_reset, PRIMARY, 0},
    {"ctx primary_reset of the runtime's primary context", wl_primary_reset_unretained, PRIMARY, 0},
    /* Without cuCtxGetId cuctx's last release ends the context for cuctx
     * (documented, rule 9): its children are skipped from then on. */
    {"ctx primary shared with the runtime", wl_primary_shared, PRIMARY, 1},
    {"ctx borrow", wl_borrow, OWNED, 0},
    {"ctx destroyed before its children", wl_wrong_order, OWNED, 0},
    {"ctx destroyed before its children", wl_wrong_order, PRIMARY, 0},
    {"ctx destroyed before its children", wl_wrong_order, GREEN, 0},
    {"green contexts", wl_green, GREEN, 0},
    {"scopes: CUCTX_SCOPED/SCOPED_ELSE/GUARD/scope_enter+exit", wl_scope, OWNED, 0},
    {"scopes: previous context replaced at its address", wl_scope_replaced, OWNED, 1},
    /* each child kind (kinds.h) in an owned and in a primary context */
#define KIND_WORKLOADS(name, ...) {#name, wl_##name, OWNED, 0}, {#name, wl_##name, PRIMARY, 0}, \
                                  {#name, wl_##name, GREEN, 0},
    TEST_CHILD_KINDS(KIND_WORKLOADS)
#undef KIND_WORKLOADS
    {"launch", wl_launch, OWNED, 0},
    {"launch", wl_launch, PRIMARY, 0},
    {"launch", wl_launch, GREEN, 0},
    {"graphs, capture, libraries", wl_capture, OWNED, 0},
    {"graphs, capture, libraries", wl_capture, PRIMARY, 0},
    {"graphs, capture, libraries", wl_capture, GREEN, 0},
    {"stream-ordered memory and pools", wl_async, OWNED, 0},
    {"stream-ordered memory and pools", wl_async, PRIMARY, 0},
    {"stream-ordered memory and pools", wl_async, GREEN, 0},
    {"peer access and IPC", wl_multi, OWNED, 0},
    {"peer access and IPC", wl_multi, PRIMARY, 0},
    {"automatic cleanup (CUCTX_AUTO)", wl_auto, OWNED, 0},
    {"cuctx_destroy", wl_destroy_any, OWNED, 0},
    {"cuctx_destroy", wl_destroy_any, PRIMARY, 0},
    {"borrowed-context sweep", wl_sweep, OWNED, 1},
};
#define N_WORKLOADS (sizeof workloads / sizeof workloads[0])

/* Entry points in the loader's table that no cuctx function calls. */
static const char *const never_called[] = {
    NULL,   /* (none now: cuDeviceGetCount was, before pools were parked) */
};

/* ------------------------------------------------------------------------
 *  Exceptions: failures that legitimately neither come back as a return
 *  value nor reach the error handler, or that reach only the handler from
 *  a function that has a return value. Each names the entry point, the
 *  cuctx function (or step label) it fails in, and why. An ABSORBED
 *  exception must also be without effect: the rest of the workload has to
 *  go exactly as in the clean run (checked).
 *
 *  Where an absorbing exception does have an effect the case fails. This
 *  found three lib/ behaviours, since fixed: owned_destroy ignored a failed
 *  cuCtxGetCurrent (the push count of an enclosing scope went wrong);
 *  primary_release took a failed cuCtxGetId after cuctx's last release as
 *  "context gone" while the runtime still held it; and a scope whose
 *  previous context could not be identified at enter left an unrelated
 *  context at that address current, unreported.
 * ------------------------------------------------------------------------ */

struct exception {
    const char *fn;         /* the failing driver entry point */
    const char *where;      /* the cuctx function, or a substring of the step label (of a call's step too
                               where it holds a '(': one call of the workload); NULL: any */
    int min_nth;            /* only from this call of fn inside the step on (0: any) */
    int how;                /* HOW_ABSORBED or HOW_REPORTED */
    const char *why;
};

static const struct exception exceptions[] = {
    /* cuctx__switch_back (current.c): a child create, use or destroy, a
     * context synchronize and the registration of a borrowed context make
     * the owner current with a push for their one driver call and pop it
     * afterwards. When only that pop fails, the operation itself has
     * succeeded (an object exists, a destroy is done): returning an error
     * would lose or misreport it, so the failure to restore the caller's
     * context goes to the error handler. */
    {"cuCtxPopCurrent", NULL, 0, HOW_REPORTED,
     "restoring the caller's context after a successful operation: to the error handler"},
    /* mem_pool.c: a pool whose handle was destroyed while cuctx memory
     * from it lived is destroyed at the free of the last of it. The free
     * has succeeded (the memory is gone, its handle with it) when that
     * destroy fails: returning an error would misreport the memory's free,
     * so the pool's failure goes to the error handler. */
    {"cuMemPoolDestroy", "cuctx_mem_destroy", 0, HOW_REPORTED,
     "the deferred destroy of a pool at its last allocation's free: to the error handler"},
    {"cuMemPoolDestroy", "cuctx_mem_free_async", 0, HOW_REPORTED,
     "the deferred destroy of a pool at its last allocation's free: to the error handler"},
    /* mem_pool.c: a pool cuctx made is set back to new and parked at its
     * end (its handle's destroy, or the free of its last allocation). When
     * a call of that fails, the pool is destroyed instead: the destroy or
     * free has succeeded, and the failure goes to the error handler. */
#define PARK_WHY "setting a pool back to new, to park it, failed: destroyed instead, the failure to the error handler"
#define PARK_STEPS(fn)                                                                                     \
    {fn, "cuctx_mem_destroy", 0, HOW_REPORTED, PARK_WHY}, {fn, "cuctx_mem_free_async", 0, HOW_REPORTED, PARK_WHY}, \
        {fn, "cuctx_mem_pool_destroy", 0, HOW_REPORTED, PARK_WHY}
    PARK_STEPS("cuMemPoolSetAttribute"),
    PARK_STEPS("cuMemPoolTrimTo"),
    PARK_STEPS("cuDeviceGetCount"),
    PARK_STEPS("cuMemPoolGetAccess"),
    PARK_STEPS("cuMemPoolSetAccess"),
    /* stream.c: the wait before the destroy of a non-blocking stream that
     * carried stream-ordered memory failed: the stream is destroyed all the
     * same (its memory's frees wait for its context), and the failure goes
     * to the error handler. */
    {"cuStreamSynchronize", "cuctx_stream_destroy", 0, HOW_REPORTED,
     "the wait before a stream's destroy: destroyed all the same, the failure to the error handler"},
    /* green.c: the same wait before the destroy of a green context's
     * stream that carried stream-ordered memory, in the green context's
     * destroy (tether.c's, shared). */
    {"cuStreamSynchronize", "cuctx_ctx_destroy", 0, HOW_REPORTED,
     "the wait before a green context's stream's destroy: destroyed all the same, the failure to the error handler"},
    PARK_STEPS("cuDeviceGetMemPool"),
    PARK_STEPS("cuDeviceGetDefaultMemPool"),
    PARK_STEPS("cuDeviceSetMemPool"),
    /* mem_async.c, case 3: stream-ordered memory whose context has ended
     * is freed on the legacy stream of the device's primary context while
     * that is active (the steps below: m5's context destroyed, am's green
     * context destroyed with the primary held). Where a call of that way
     * fails (the device's question, finding and holding the primary, the
     * switch, the free) the memory is freed by cuMemFree instead: the
     * destroy succeeds, and the failure, which leaves the pool's used
     * figure up, goes to the error handler. */
#define CASE3_WHY "case 3's free in the primary context failed: freed by cuMemFree, the failure to the error handler"
    {"cuPointerGetAttribute", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuDevicePrimaryCtxGetState", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetId", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetApiVersion", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxPushCurrent", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetCurrent", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuMemFreeAsync", "cuctx_mem_destroy(&m5)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuPointerGetAttribute", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuDevicePrimaryCtxGetState", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetId", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetApiVersion", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxPushCurrent", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuCtxGetCurrent", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
    {"cuMemFreeAsync", "cuctx_mem_destroy(&am)", 0, HOW_REPORTED, CASE3_WHY},
#undef CASE3_WHY
    /* mem_async.c: case 4's cuMemFree and case 2's cuCtxSynchronize run
     * with the thread's capture mode exchanged to RELAXED, and back after.
     * Where the first exchange fails, the call is made in the thread's own
     * mode, as before there was an exchange (no capture beside it here: the
     * same free); where only the exchange back fails, the free has
     * succeeded, and the failure goes to the error handler. */
    {"cuThreadExchangeStreamCaptureMode", NULL, 0, HOW_ABSORBED,
     "the thread's capture mode not made RELAXED for a free: the free made in the thread's own mode"},
    {"cuThreadExchangeStreamCaptureMode", NULL, 2, HOW_REPORTED,
     "the thread's capture mode not given back after a free: to the error handler"},
    /* cuctx_pop_current (current.c) asks the driver whether the current
     * context is alive before popping it (the driver aborts on popping a
     * destroyed one that was handed to it). Only a "gone" answer stops
     * the pop; a failed question leaves cuctx not knowing it dead, so it
     * pops as asked - the pop's own result is returned. */
    {"cuCtxGetId", "cuctx_pop_current", 0, HOW_ABSORBED,
     "the liveness check before a pop is inconclusive: the pop goes ahead"},
    {"cuCtxGetApiVersion", "cuctx_pop_current", 0, HOW_ABSORBED,
     "the liveness check before a pop is inconclusive (no cuCtxGetId): the pop goes ahead"},
    /* settle_prev (scope.c), at a scope's exit, asks whether the previous
     * context is still the one met at enter; a failed question is taken as
     * "dead: left where it was", which for a live context is what a
     * successful answer leads to as well. */
    {"cuCtxGetId", "exit", 0, HOW_ABSORBED,
     "scope exit's check of the previous context is inconclusive: it is left where it was"},
    {"cuCtxGetCurrent", "exit", 0, HOW_ABSORBED,
     "scope exit cannot see whether the previous context's slot is on top: it is left where it was"},
    /* cuctx_scope_enter (scope.c) identifies the previous context (its
     * entry, registering it as borrowed when cuctx meets it first: its id,
     * and its device and whether it is a green context with it made
     * current). When that fails the enter
     * still succeeds - the previous context is not what the scope is for -
     * and the exit leaves its slot alone. */
    {"cuCtxGetId", "enter", 0, HOW_ABSORBED,
     "scope enter cannot identify the previous context: the exit leaves it alone"},
    {"cuCtxGetApiVersion", "enter", 0, HOW_ABSORBED,
     "scope enter cannot identify the previous context: the exit leaves it alone"},
    {"cuCtxGetCurrent", "enter", 0, HOW_ABSORBED,
     "scope enter cannot identify the previous context: the exit leaves it alone"},
    {"cuCtxGetDevice", "enter", 0, HOW_ABSORBED,
     "scope enter cannot identify the previous context: the exit leaves it alone"},
    {"cuStreamGetCtx", "enter", 0, HOW_ABSORBED,
     "scope enter cannot identify the previous context: the exit leaves it alone"},
    /* owned_destroy (context.c) asks for the current context only to know
     * whether the driver's destroy popped it off this thread's stack (to
     * keep cuctx's count of its own pushes); the destroy itself succeeded.
     * The count is what a scope's exit pops by, so a failure here is
     * without effect only if nothing later depends on it: the comparison
     * with the clean run decides (see wl_scope, context o). */
    {"cuCtxGetCurrent", "cuctx_ctx_destroy", 0, HOW_ABSORBED,
     "destroy of an owned context: only whether it was current is unknown"},
    {"cuCtxGetCurrent", "cuctx_destroy", 0, HOW_ABSORBED,
     "destroy of an owned context: only whether it was current is unknown"},
    {"cuCtxGetCurrent", "automatic cleanup of context", 0, HOW_ABSORBED,
     "destroy of an owned context: only whether it was current is unknown"},
    /* primary_release (context.c): after cuctx's last release of a primary
     * context, cuCtxGetId says whether the context lives on in another
     * holder's retain (the runtime's); a failed question is taken as
     * "gone" and the entry ends. Without another holder that is the truth;
     * with one, the comparison with the clean run decides
     * (wl_primary_shared). */
    {"cuCtxGetId", "cuctx_ctx_destroy", 0, HOW_ABSORBED,
     "after the last release of a primary context, whether it lives on is unknown: taken as ended"},
    {"cuCtxGetId", "cuctx_destroy", 0, HOW_ABSORBED,
     "after the last release of a primary context, whether it lives on is unknown: taken as ended"},
    {"cuCtxGetId", "automatic cleanup of primary context", 0, HOW_ABSORBED,
     "after the last release of a primary context, whether it lives on is unknown: taken as ended"},
    /* The sweep (entry.c, sweep_one) that a new context entry triggers
     * once the map holds 64 contexts asks cuCtxGetId of every primary and
     * borrowed entry and ends those whose context is gone; a failed
     * question keeps the entry, which is what the map held before the
     * sweep (it ends when next met, or at the next sweep). Calls 2.. of
     * the step: call 1 is the new context's own registration. */
    {"cuCtxGetId", "cuctx_ctx_borrow", 2, HOW_ABSORBED,
     "the map sweep's check of a dead entry is inconclusive: the entry stays for the next sweep"},
    {NULL, NULL, 0, 0, NULL},
};

static const struct exception *find_exception(const char *fn, const struct region *r, int nth, int how)
{
    char api[128];
    size_t n = strcspn(r->what, "(");
    snprintf(api, sizeof api, "%.*s", (int)n, r->what);
    for (const struct exception *x = exceptions; x->fn; x++) {
        if (x->how != how || strcmp(x->fn, fn) != 0 || nth < x->min_nth)
            continue;
        if (!x->where || (r->kind == R_MARK || strchr(x->where, '(') ? strstr(r->what, x->where) != NULL
                                                                       : strcmp(api, x->where) == 0))
            return x;
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 *  The checks at the end of a case (child side)
 * ------------------------------------------------------------------------ */

struct entry_scan { size_t owned, live, lingering; };

static void scan_entry(enum cuctx_kind kind, struct cuctx_slot *s, void *arg)
{
    struct entry_scan *e = arg;
    if (kind != KIND_ENTRY)
        return;
    uint64_t raw_ctx = (uint64_t)(uintptr_t)s->u.entry.raw;
    if (s->u.entry.owner_handle != 0)     /* an owned context names its handle */
        e->owned++;
    else if (sim()->is_live(CUSIM_CONTEXT, raw_ctx) || sim()->is_live(CUSIM_PRIMARY, raw_ctx))
        e->live++;
    else
        e->lingering++;     /* a primary or borrowed context that died: ended when next met */
}

/* The kind whose destroy fn is, and its name for messages; 0 if fn destroys none. */
static int is_destroy_fn(const char *fn, enum cusim_kind *kind, const char **name)
{
#define DESTROY_ROW(name, type, stat, sim, letter, create_fn, destroy_fn, ...) {destroy_fn, sim, #name},
    static const struct { const char *fn; enum cusim_kind kind; const char *name; } d[] = {
        {"cuCtxDestroy", CUSIM_CONTEXT, "context"}, {"cuDevicePrimaryCtxRelease", CUSIM_PRIMARY, "primary"},
        {"cuGraphDestroy", CUSIM_GRAPH, "graph"}, {"cuLibraryUnload", CUSIM_LIBRARY, "library"},
        {"cuMemFreeAsync", CUSIM_MEM, "stream-ordered memory"}, {"cuMemPoolDestroy", CUSIM_POOL, "memory pool"},
        {"cuGreenCtxDestroy", CUSIM_GREEN, "green context"},
        {"cuCtxDisablePeerAccess", CUSIM_PEER, "peer access"}, {"cuIpcCloseMemHandle", CUSIM_IPC_MEM, "IPC memory"},
        TEST_CHILD_KINDS(DESTROY_ROW)
    };
#undef DESTROY_ROW
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (strcmp(d[i].fn, fn) == 0) {
            *kind = d[i].kind;
            *name = d[i].name;
            return 1;
        }
    return 0;
}

/* A stream-ordered free whose steps before the driver's free failed -
 * the switch to its context, the check of it - leaves the memory to the
 * driver as a refused free does (mem_async.c); so does a stream destroy
 * whose wait for its work failed (stream.c). */
static int async_free_step(const char *fn, const char *what, enum cusim_kind *kind, const char **name)
{
    static const char *const steps[] = {"cuCtxPushCurrent", "cuCtxGetCurrent", "cuCtxGetId"};
    /* the wait of a stream that carried stream-ordered memory (stream.c) */
    if (strncmp(what, "cuctx_stream_destroy(", 21) == 0 && strcmp(fn, "cuStreamSynchronize") == 0) {
        *kind = CUSIM_STREAM;
        *name = "stream";
        return 1;
    }
    *kind = CUSIM_MEM;
    *name = "stream-ordered memory";
    if (strncmp(what, "cuctx_mem_destroy(", 18) != 0 && strncmp(what, "cuctx_mem_free_async(", 21) != 0)
        return 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (strcmp(fn, steps[i]) == 0)
            return 1;
    return 0;
}

static void final_checks(void)
{
    struct cuctx_stats st;
    struct entry_scan es = {0, 0, 0};
    enum cusim_kind dkind = CUSIM_ALL;
    const char *dname = NULL;
    /* The destroy the injected failure refused leaves its object to the driver. */
    int refused = R.fault >= 0 && R.out->hit >= 0 && is_destroy_fn(fn_name((size_t)R.fault), &dkind, &dname)
                  && (R.out->how == HOW_RETURNED || R.out->how == HOW_REPORTED);
    if (!refused && R.fault >= 0 && R.out->hit >= 0 && R.out->how == HOW_RETURNED
        && async_free_step(fn_name((size_t)R.fault), R.out->regions[R.out->hit].what, &dkind, &dname))
        refused = 1;
    /* (a green context the driver refused to destroy holds a retain of the primary) */
    int refused_primary = refused && (dkind == CUSIM_PRIMARY || dkind == CUSIM_GREEN);

    cuctx_stats_get(&st);
    if (st.ctx_handles || st.events || st.streams || st.modules || st.mems || st.host_mems || st.graph_execs
        || st.graphs || st.libraries || st.async_mems || st.mem_pools || st.peers || st.ipc_mems)
        violation("cuctx still has live handles: %zu ctx, %zu event, %zu stream, %zu module, %zu mem, "
                  "%zu host mem, %zu graph exec, %zu graph, %zu library, %zu stream-ordered mem, %zu pool, "
                  "%zu peer, %zu IPC mem",
                  st.ctx_handles, st.events, st.streams, st.modules, st.mems, st.host_mems, st.graph_execs, st.graphs,
                  st.libraries, st.async_mems, st.mem_pools, st.peers, st.ipc_mems);
    cuctx__slot_foreach(scan_entry, &es);
    if (es.owned)
        violation("cuctx still has %zu context entr%s of owned contexts", es.owned, es.owned == 1 ? "y" : "ies");
    if (es.live > (size_t)refused_primary)
        violation("cuctx still has %zu context entr%s of contexts the driver has alive", es.live,
                  es.live == 1 ? "y" : "ies");

    /* Pools cuctx made end parked, alive in the driver and counted in
     * stats.parked_pools, never destroyed (mem_pool.c). */
    if (sim()->live(CUSIM_POOL) < st.parked_pools)
        violation("%zu pools parked, %zu alive in the driver", st.parked_pools, sim()->live(CUSIM_POOL));
    size_t all = sim()->live(CUSIM_ALL) - st.parked_pools;
    if (refused && dkind == CUSIM_CONTEXT) {
        /* The context lives on in the driver, and with it any child whose
         * destroy came after (skipped: "the generation ends all the same",
         * cuctx_ctx_destroy in cuctx.h). */
        if (sim()->live(CUSIM_CONTEXT) > 1 || sim()->live(CUSIM_PRIMARY) != 0)
            violation("driver objects alive after the refused cuCtxDestroy: %zu contexts, %zu primary",
                      sim()->live(CUSIM_CONTEXT), sim()->live(CUSIM_PRIMARY));
    } else if (refused && dkind == CUSIM_GREEN) {
        /* The same for a refused cuGreenCtxDestroy: the green context, and
         * the primary its retain holds; its streams were destroyed first.
         * With ids the primary's children destroyed after it are freed (it
         * lives); without, cuctx cannot tell, and ends the primary's
         * generation with what it takes for its last retain: they stay. */
        if (sim()->live(CUSIM_GREEN) > 1 || sim()->live(CUSIM_PRIMARY) > 1 || (!R.no_ids && all > 2)
            || sim()->live(CUSIM_STREAM) != 0)
            violation("driver objects alive after the refused cuGreenCtxDestroy: %zu green, %zu primary, %zu in all",
                      sim()->live(CUSIM_GREEN), sim()->live(CUSIM_PRIMARY), all);
    } else if (refused_primary) {
        /* The same for a refused release of cuctx's last retain. */
        if (sim()->live(CUSIM_PRIMARY) > 1 || sim()->live(CUSIM_CONTEXT) != 0)
            violation("driver objects alive after the refused cuDevicePrimaryCtxRelease: %zu contexts, %zu primary",
                      sim()->live(CUSIM_CONTEXT), sim()->live(CUSIM_PRIMARY));
    } else if (refused) {
        /* A refused free of pool memory keeps the pool too, its handle
         * destroyed before it: the pool ends only after its memory
         * (mem_pool.c; only the stream-ordered workload makes pools). */
        size_t kept_pool = dkind == CUSIM_MEM && sim()->live(CUSIM_POOL) - st.parked_pools == 1;
        all -= kept_pool;
        if (all > 1 || sim()->live(dkind) - (dkind == CUSIM_POOL ? st.parked_pools : 0) != all)
            violation("%zu driver objects alive, more than the one (%s) whose destroy was refused", all, dname);
    } else if (all) {
        violation("%zu driver objects alive: %zu contexts, %zu primary, %zu event, %zu stream, %zu module, "
                  "%zu mem, %zu host mem, %zu graph, %zu graph exec, %zu library, %zu capture, %zu pool, %zu peer, "
                  "%zu IPC mem", all,
                  sim()->live(CUSIM_CONTEXT), sim()->live(CUSIM_PRIMARY), sim()->live(CUSIM_EVENT),
                  sim()->live(CUSIM_STREAM), sim()->live(CUSIM_MODULE), sim()->live(CUSIM_MEM),
                  sim()->live(CUSIM_HOST_MEM), sim()->live(CUSIM_GRAPH), sim()->live(CUSIM_GRAPH_EXEC),
                  sim()->live(CUSIM_LIBRARY), sim()->live(CUSIM_CAPTURE), sim()->live(CUSIM_POOL),
                  sim()->live(CUSIM_PEER), sim()->live(CUSIM_IPC_MEM));
    }
    if (!refused_primary && sim()->primary_refs(0) + sim()->primary_refs(1) != 0)
        violation("primary contexts still retained: device 0 x%u, device 1 x%u", sim()->primary_refs(0),
                  sim()->primary_refs(1));
    size_t mis = sim()->misuse_count();
    for (size_t i = 0; i < mis && i < 4; i++)
        violation("simulator misuse: %s", sim()->misuse_text(i));

    CUcontext cur = (CUcontext)1;
    R.out->final_current_null = cuctx_current_raw(&cur) == CUDA_SUCCESS && cur == NULL;
}

static int is_result(const struct region *r)
{
    return r->kind != R_MARK;
}

/* An absorbed failure must leave no trace: the steps after it give what
 * they gave in the clean run, the handler hears nothing more, and the
 * thread's context stack ends as it did. */
static void compare_with_clean(void)
{
    const struct outcome *c = R.clean;
    const struct outcome *o = R.out;
    int i = o->hit + 1, j = o->hit + 1, rep_c = 0, rep_o = 0, diffs = 0;
    for (int x = i; x < o->nregions; x++)
        rep_o += o->regions[x].reports;
    for (int x = j; x < c->nregions; x++)
        rep_c += c->regions[x].reports;
    for (;;) {
        while (i < o->nregions && !is_result(&o->regions[i]))
            i++;
        while (j < c->nregions && !is_result(&c->regions[j]))
            j++;
        if (i >= o->nregions || j >= c->nregions)
            break;
        const struct region *a = &o->regions[i], *b = &c->regions[j];
        if (a->line != b->line) {
            violation("absorbed (%s), but with an effect: the workload went on at line %d `%s` (clean run: line %d `%s`)",
                      R.excused, a->line, a->what, b->line, b->what);
            return;
        }
        if (a->failed != b->failed && diffs++ < 4)
            violation("absorbed (%s), but with an effect: later, line %d `%s` %s%s%s (in the clean run it %s)", R.excused, a->line,
                      a->what, a->failed ? "failed" : "succeeded", a->kind == R_CALL ? ": " : "",
                      a->kind == R_CALL ? cuctx_result_name((CUresult)a->rc) : "",
                      b->failed ? "failed" : "succeeded");
        i++;
        j++;
    }
    if (diffs)
        return;
    if ((i < o->nregions) != (j < c->nregions))
        violation("absorbed (%s), but with an effect: the workload took %s steps than in the clean run",
                  R.excused, i < o->nregions ? "more" : "fewer");
    else if (rep_o != rep_c)
        violation("absorbed (%s), but with an effect: %d later report%s to the error handler (clean run: %d)", R.excused, rep_o,
                  rep_o == 1 ? "" : "s", rep_c);
    else if (o->final_current_null != c->final_current_null)
        violation("absorbed (%s), but with an effect: the thread's context stack is %s at the end (clean run: %s)",
                  R.excused, o->final_current_null ? "empty" : "not empty", c->final_current_null ? "empty" : "not empty");
}

static void judge(void)
{
    struct outcome *o = R.out;
    if (R.fault < 0) {
        for (int i = 0; i < o->nregions; i++) {
            const struct region *r = &o->regions[i];
            if (r->kind != R_MARK && r->failed)
                violation("clean run: line %d `%s` failed (%s): %s", r->line, r->what,
                          cuctx_result_name((CUresult)r->rc), r->kind == R_CHECK ? "" : cuctx_last_error_message());
            if (r->reports)
                violation("clean run: line %d `%s`: %u report%s to the error handler: %s", r->line, r->what,
                          r->reports, r->reports == 1 ? "" : "s", R.hc.last_msg);
        }
        if (!o->final_current_null)
            violation("clean run: a context is still current at the end");
        return;
    }
    const char *fn = fn_name((size_t)R.fault);
    if (o->hit < 0) {
        violation("the failure planned for %s call #%lu never happened", fn, R.target);
        return;
    }
    const struct region *h = &o->regions[o->hit];
    int has_value = h->kind == R_CALL || h->kind == R_VAL || h->kind == R_FLAG;
    if (h->kind == R_RAW || h->kind == R_SETUP || h->kind == R_CHECK) {
        violation("the failure landed in the test's own step `%s` (line %d)", h->what, h->line);
        return;
    }
    if (o->how == HOW_RETURNED) {
        /* "every function that can fail returns the driver's own CUresult
         * and records cuctx_last_error()" */
        if (h->kind == R_CALL && h->rc != FAULT_RC)
            violation("`%s` (line %d) returned %s, not the driver's %s", h->what, h->line,
                      cuctx_result_name((CUresult)h->rc), cuctx_result_name(FAULT_RC));
        if (h->kind == R_CALL && o->hit_last_rc != h->rc)
            violation("`%s` (line %d) returned %s but cuctx_last_error() is %s (\"%s\")", h->what, h->line,
                      cuctx_result_name((CUresult)h->rc), cuctx_result_name((CUresult)o->hit_last_rc), o->hit_msg);
        return;
    }
    if (o->how == HOW_REPORTED && !has_value)
        return;
    const struct exception *x = find_exception(fn, h, o->hit_nth, o->how);
    if (!x) {
        if (o->how == HOW_REPORTED)
            violation("`%s` (line %d) returned CUDA_SUCCESS; the failure went only to the error handler: %s", h->what,
                      h->line, R.hc.last_msg);
        else
            violation("swallowed: %s `%s` (line %d) %s, and the error handler heard nothing",
                      h->kind == R_MARK ? "in" : "", h->what, h->line,
                      h->kind == R_MARK ? "ran" : "returned success");
        return;
    }
    R.excused = x->why;
    if (o->how == HOW_ABSORBED)
        compare_with_clean();
}

/* Where the failure went: back to the caller, to the error handler, or
 * nowhere. */
static void classify(void)
{
    struct outcome *o = R.out;
    if (R.fault < 0 || o->hit < 0)
        return;
    const struct region *h = &o->regions[o->hit];
    int has_value = h->kind == R_CALL || h->kind == R_VAL || h->kind == R_FLAG;
    o->how = has_value && h->failed ? HOW_RETURNED : h->reports ? HOW_REPORTED : HOW_ABSORBED;
}

/* The child: one run of one workload, with at most one failing call. */
static void run_child(const struct workload *w, int no_ids, int fault, unsigned long k, struct outcome *out,
                      const struct outcome *clean)
{
    alarm(CASE_ALARM_S);
    memset(out, 0, sizeof *out);
    out->hit = -1;
    R.out = out;
    R.clean = clean;
    R.fault = fault;
    R.no_ids = no_ids;
    if (no_ids)
        sim()->hide_ctx_id(1);
    count_handler_install(&R.hc);
    snapshot(R.snap);
    R.snap_reports = 0;
    if (fault >= 0) {
        R.target = R.snap[fault] + k;
        sim()->fail_call(fn_name((size_t)fault), k, FAULT_RC);
    }
    w->run(w);
    MARK("(after the workload returned: its automatic cleanups)");
    classify();
    final_checks();
    judge();
    out->finished = 1;
}

/* ------------------------------------------------------------------------
 *  The parent
 * ------------------------------------------------------------------------ */

static void load_raw(void)
{
    const char *path = getenv("CUCTX_DRIVER");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "dlopen %s: %s", path, dlerror());
    raw.ctx_create = (PFN_cuCtxCreate_v3020)dlsym(h, "cuCtxCreate_v2");
    raw.ctx_destroy = (PFN_cuCtxDestroy_v4000)dlsym(h, "cuCtxDestroy_v2");
    raw.ctx_pop = (PFN_cuCtxPopCurrent_v4000)dlsym(h, "cuCtxPopCurrent_v2");
    raw.graph_create = (PFN_cuGraphCreate_v10000)dlsym(h, "cuGraphCreate");
    raw.graph_add_empty = (PFN_cuGraphAddEmptyNode_v10000)dlsym(h, "cuGraphAddEmptyNode");
    raw.graph_destroy = (PFN_cuGraphDestroy_v10000)dlsym(h, "cuGraphDestroy");
    raw.dev_resource = (PFN_cuDeviceGetDevResource_v12040)dlsym(h, "cuDeviceGetDevResource");
    raw.sm_split = (PFN_cuDevSmResourceSplitByCount_v12040)dlsym(h, "cuDevSmResourceSplitByCount");
    raw.resource_desc = (PFN_cuDevResourceGenerateDesc_v12040)dlsym(h, "cuDevResourceGenerateDesc");
    raw.pool_set_access = (PFN_cuMemPoolSetAccess_v11020)dlsym(h, "cuMemPoolSetAccess");
    raw.set_mem_pool = (PFN_cuDeviceSetMemPool_v11020)dlsym(h, "cuDeviceSetMemPool");
    cr_assert(raw.ctx_create && raw.ctx_destroy && raw.ctx_pop && raw.graph_create && raw.graph_add_empty
              && raw.graph_destroy && raw.dev_resource && raw.sm_split && raw.resource_desc && raw.pool_set_access
              && raw.set_mem_pool,
              "the simulator lacks a raw entry point");

    snprintf(ptx_path, sizeof ptx_path, "%s", test_data_path("vadd.ptx"));
    FILE *f = fopen(ptx_path, "rb");
    cr_assert_not_null(f, "cannot open %s", ptx_path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    ptx_image = buf;
}

/* CUCTX_FAULT_ONLY=fn#k@text runs only the cases of entry point fn, call
 * k, in workloads whose name contains text (each part optional:
 * "cuCtxGetId", "cuCtxGetId#4", "#4@scopes"), and prints their steps. */
static const char *only_fn, *only_where;
static unsigned long only_k;
static int only_set;

static void parse_only(void)
{
    static char buf[256];
    const char *v = getenv("CUCTX_FAULT_ONLY");
    if (!v || !*v)
        return;
    only_set = 1;
    snprintf(buf, sizeof buf, "%s", v);
    char *at = strchr(buf, '@'), *hash = strchr(buf, '#');
    if (at) {
        *at = 0;
        only_where = at + 1;
    }
    if (hash) {
        *hash = 0;
        only_k = strtoul(hash + 1, NULL, 10);
    }
    only_fn = buf[0] ? buf : NULL;
}

static int only_wants(const struct workload *w, const char *fn, unsigned long k)
{
    return !only_set || ((!only_fn || strcmp(only_fn, fn) == 0) && (!only_k || only_k == k)
                         && (!only_where || strstr(w->name, only_where)));
}

static void print_trace(const struct outcome *o)
{
    for (int i = 0; i < o->nregions; i++) {
        const struct region *r = &o->regions[i];
        fprintf(stderr, "    %s%4d %-7s %s%s", i == o->hit ? "=>" : "  ", r->line,
                (const char *[]){"call", "value", "flag", "mark", "raw", "setup", "check"}[r->kind],
                r->what, r->kind == R_MARK ? "" : r->failed ? "  -> FAILED" : "  -> ok");
        if ((r->kind == R_CALL || r->kind == R_RAW || r->kind == R_SETUP) && r->failed)
            fprintf(stderr, " (%s)", cuctx_result_name((CUresult)r->rc));
        if (r->reports)
            fprintf(stderr, "  [%u report%s]", r->reports, r->reports == 1 ? "" : "s");
        for (size_t f = 0; f < n_fns; f++)
            if (r->calls[f])
                fprintf(stderr, " %s%s", fn_name(f), r->calls[f] > 1 ? "*" : "");
        fputc('\n', stderr);
    }
}

#ifdef CUCTX_GCOV_DUMP
/* libgcov's (coverage builds define CUCTX_GCOV_DUMP: see Makefile.am). */
void __gcov_dump(void);
#endif

/* Runs one child to its end; fills *out, or describes a crash or hang. */
static void fork_case(const struct workload *w, int no_ids, int fault, unsigned long k, struct outcome *out,
                      const struct outcome *clean)
{
    fflush(NULL);
    memset(out, 0, offsetof(struct outcome, regions));
    out->hit = -1;
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
    if (pid == 0) {
        run_child(w, no_ids, fault, k, out, clean);
#ifdef CUCTX_GCOV_DUMP
        __gcov_dump();      /* _exit skips it: the coverage of the case would be lost */
#endif
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
        snprintf(out->msg, sizeof out->msg, "hung: still running after %d s", CASE_ALARM_S);
    else if (WIFSIGNALED(status))
        snprintf(out->msg, sizeof out->msg, "crashed: signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (!out->finished)
        snprintf(out->msg + strlen(out->msg), sizeof out->msg - strlen(out->msg),
                 "%sexited (status %d) before the end of the case", out->msg[0] ? "\n" : "", WEXITSTATUS(status));
}

struct report {
    char *text;
    size_t len, cap;
    int failures;
};

static void say(struct report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct report *rep, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (rep->len + (size_t)n + 1 > rep->cap) {
        rep->cap = (rep->len + (size_t)n + 1) * 2;
        rep->text = realloc(rep->text, rep->cap);
        cr_assert_not_null(rep->text);
    }
    va_start(ap, fmt);
    vsnprintf(rep->text + rep->len, rep->cap - rep->len, fmt, ap);
    va_end(ap);
    rep->len += (size_t)n;
}

Test(faults, every_driver_call_of_every_workload_fails_cleanly, .timeout = 600)
{
    NEED_SIM();
    n_fns = cuctx__drv_entry_count;
    cr_assert_leq(n_fns, MAX_FNS, "the loader's table has %zu entries: raise MAX_FNS", n_fns);
    load_raw();
    parse_only();

    struct outcome *shared = mmap(NULL, 2 * sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(shared, MAP_FAILED, "mmap: %s", strerror(errno));
    struct outcome *clean = malloc(sizeof *clean);
    cr_assert_not_null(clean);
    struct report rep = {NULL, 0, 0, 0};
    unsigned long reached[MAX_FNS] = {0};
    unsigned long cases = 0, by_how[4] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    for (int no_ids = 0; no_ids <= 1; no_ids++) {
        for (size_t wi = 0; wi < N_WORKLOADS; wi++) {
            const struct workload *w = &workloads[wi];
            const char *mode = no_ids ? "without cuCtxGetId" : "with cuCtxGetId";
            if (no_ids && w->ids_only)
                continue;
            fork_case(w, no_ids, -1, 0, &shared[0], NULL);
            if (shared[0].msg[0]) {
                rep.failures++;
                say(&rep, "[%s] %s (%s) clean run:\n  %s\n", mode, w->name, owner_names[w->owner], shared[0].msg);
                continue;
            }
            memcpy(clean, &shared[0], sizeof *clean);

            /* The cases: per entry point, its calls #1..K_CAP in the
             * workload, and #1..K_CAP inside every step after that. */
            for (size_t f = 0; f < n_fns; f++) {
                unsigned long before = 0;
                for (int r = 0; r < clean->nregions; r++) {
                    const struct region *reg = &clean->regions[r];
                    unsigned long n = reg->calls[f];
                    before += n;
                    if (reg->kind == R_RAW || reg->kind == R_SETUP || reg->kind == R_CHECK)
                        continue;   /* the test's own steps: never failed on purpose */
                    reached[f] += n;
                    /* (j <= K_CAP inside every step covers k <= K_CAP too) */
                    for (unsigned long j = 1; j <= n && j <= K_CAP; j++) {
                        unsigned long k = before - n + j;
                        if (!only_wants(w, fn_name(f), k))
                            continue;
                        fork_case(w, no_ids, (int)f, k, &shared[1], clean);
                        cases++;
                        by_how[shared[1].how]++;
                        if (shared[1].msg[0]) {
                            rep.failures++;
                            say(&rep, "[%s] %s (%s): %s #%lu fails, in `%s` (line %d) -> %s:\n  %s\n", mode, w->name,
                                owner_names[w->owner], fn_name(f), k, reg->what, reg->line,
                                how_names[shared[1].how], shared[1].msg);
                        }
                        if (only_set) {
                            fprintf(stderr, "[%s] %s (%s): %s #%lu -> %s%s%s\n", mode, w->name, owner_names[w->owner],
                                    fn_name(f), k, how_names[shared[1].how], shared[1].msg[0] ? ":\n  " : "",
                                    shared[1].msg);
                            print_trace(&shared[1]);
                        }
                    }
                }
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;

    /* Every entry point of the table is called by cuctx in some workload
     * (so failed on purpose there), or is known to be called by no cuctx
     * function. */
    for (size_t f = 0; f < n_fns; f++) {
        int listed = 0;
        for (size_t i = 0; i < sizeof never_called / sizeof never_called[0]; i++)
            listed |= never_called[i] && strcmp(never_called[i], fn_name(f)) == 0;
        if (!reached[f] && !listed) {
            rep.failures++;
            say(&rep, "%s: in the loader's table, but no workload calls it: add a workload for the call site\n",
                fn_name(f));
        } else if (reached[f] && listed) {
            rep.failures++;
            say(&rep, "%s: listed as called by no cuctx function, but workloads call it %lu times\n", fn_name(f),
                reached[f]);
        }
    }

    fprintf(stderr, "fault cases: %lu (failure returned %lu, reported %lu, absorbed %lu) in %.1f s, "
            "%d failure%s\n", cases, by_how[HOW_RETURNED], by_how[HOW_REPORTED], by_how[HOW_ABSORBED], secs,
            rep.failures, rep.failures == 1 ? "" : "s");
    /* With CRITERION_OUTPUTS=tap:- (make check) Criterion points the test's
     * stdout and stderr away from the TAP stream, and its TAP report shows
     * neither log messages nor passing assertions: there the count reaches
     * CI through CUCTX_FAULT_COUNT_FILE, and a failure's message. */
    cr_log_info("fault cases: %lu", cases);
    const char *count_file = getenv("CUCTX_FAULT_COUNT_FILE");
    if (count_file && *count_file) {
        FILE *cf = fopen(count_file, "w");
        cr_assert_not_null(cf, "cannot write %s: %s", count_file, strerror(errno));
        fprintf(cf, "%lu\n", cases);
        fclose(cf);
    }
    if (rep.failures)
        fprintf(stderr, "%s", rep.text);
    cr_assert_eq(rep.failures, 0, "fault cases: %lu (%.1f s), %d failing:\n%.6000s%s", cases, secs, rep.failures,
                 rep.text ? rep.text : "", rep.len > 6000 ? "\n(...; all of them on stderr)" : "");
    cr_assert_gt(cases, 0, "fault cases: 0");
    free(rep.text);
    free(clean);
    munmap(shared, 2 * sizeof *shared);
}

/* A driver without the entry points a kind needs (older than the CUDA
 * version that brought them): the create says which version is needed,
 * and nothing reaches the driver. Bug caught: a call through a NULL entry
 * point, or a bare error code. */
Test(faults, a_driver_without_graphs_capture_or_libraries_is_told_which_version_is_needed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    struct cuctx_driver saved = cuctx__drv;
    cuctx__drv.f_cuLibraryLoadData = NULL;
    cuctx__drv.f_cuStreamBeginCapture = NULL;
    cuctx__drv.f_cuGraphCreate = NULL;
    size_t mark = log_mark();
    cuctx_library lib = {0};
    cuctx_graph g = {0};
    cuctx_capture cap;
    cr_assert_eq(cuctx_library_load_data(&lib, ".visible .entry k() { ret; }"), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 12.0 driver or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_graph_create(&g), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 10.0 or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_capture_begin(&cap, s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 10.1 or newer"), "%s", cuctx_last_error_message());
    cuctx__drv.f_cuGraphInstantiateWithFlags = NULL;   /* (an exec needs it; the rest are there) */
    cuctx_graph_exec ge = {0};
    cr_assert_eq(cuctx_graph_exec_instantiate(&ge, c, (CUgraph)(uintptr_t)1, 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 11.4 or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(lib.id, 0);
    cr_assert_eq(g.id, 0);
    cr_assert_eq(ge.id, 0);
    cr_assert_eq(log_mark(), mark, "a driver call was made");
    cuctx__drv = saved;
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a driver older than 11.2 reached with a NULL entry point, or
 * told nothing of what it lacks. Mutant killed: lib/mem_pool.c:346 `ret`
 * (the adopt's refusal for a driver without pools answered with success;
 * seed 47). */
Test(faults, a_driver_without_stream_ordered_memory_is_told_which_version_is_needed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    cuctx_mem_pool pool = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    struct cuctx_driver saved = cuctx__drv;
    cuctx__drv.f_cuMemAllocFromPoolAsync = NULL;
    size_t mark = log_mark();
    cuctx_mem m = {0};
    cuctx_mem_pool p2 = {0};
    cr_assert_eq(cuctx_mem_alloc_from_pool(&m, pool, s, 64), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 11.2 or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_mem_pool_create(&p2, 0, NULL), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 11.2 or newer"), "%s", cuctx_last_error_message());
    cuctx__drv.f_cuMemAllocAsync = NULL;
    cr_assert_eq(cuctx_mem_alloc_async(&m, s, 64), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 11.2 or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_mem_pool_default(&p2, 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cuctx_mem_pool_adopt(&p2, cuctx_mem_pool_raw(pool), 0), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert(strstr(cuctx_last_error_message(), "CUDA 11.2 or newer"), "%s", cuctx_last_error_message());
    cr_assert_eq(m.id, 0);
    cr_assert_eq(p2.id, 0);
    cr_assert_eq(log_mark(), mark, "a driver call was made");
    cuctx__drv = saved;
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* The four IPC calls against the driver as it is now: each refused with
 * CUDA_ERROR_NOT_SUPPORTED, saying what is missing, a get's handle left
 * zeroed and an open's left {0}, and no driver call made. */
static void ipc_refused(CUresult rc, const char *fn)
{
    static const char missing[] = "the driver has no CUDA IPC (CUDA 11.0 or newer needed)";
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: ", fn);
    cr_assert_eq(rc, CUDA_ERROR_NOT_SUPPORTED, "%s: %s: %s", fn, cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert(strstr(cuctx_last_error_message(), prefix) && strstr(cuctx_last_error_message(), missing), "%s",
              cuctx_last_error_message());
}

static void ipc_refused_by_the_driver(cuctx_ctx c, cuctx_mem m, cuctx_event ev)
{
    CUipcMemHandle mh, zero_mh;
    CUipcEventHandle eh, zero_eh;
    memset(&zero_mh, 0, sizeof zero_mh);
    memset(&zero_eh, 0, sizeof zero_eh);
    memset(&mh, 0x5a, sizeof mh);
    memset(&eh, 0x5a, sizeof eh);
    size_t mark = log_mark();
    ipc_refused(cuctx_ipc_mem_get(m, &mh), "cuctx_ipc_mem_get");
    cr_assert_eq(memcmp(&mh, &zero_mh, sizeof mh), 0, "a refused get left its handle set");
    ipc_refused(cuctx_ipc_event_get(ev, &eh), "cuctx_ipc_event_get");
    cr_assert_eq(memcmp(&eh, &zero_eh, sizeof eh), 0, "a refused get left its handle set");
    cuctx_mem q = {0};
    cuctx_event oe = {0};
    ipc_refused(cuctx_ipc_mem_open(&q, c, zero_mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuctx_ipc_mem_open");
    ipc_refused(cuctx_ipc_event_open(&oe, c, zero_eh), "cuctx_ipc_event_open");
    cr_assert_eq(q.id, 0);
    cr_assert_eq(oe.id, 0);
    cr_assert_eq(log_mark(), mark, "a driver call was made");
}

/* Bug caught: a driver without CUDA IPC (older than 11.0) let past the
 * check - a get going on to the driver (through a NULL entry point, or a
 * present one of a set the driver does not have whole) - or told nothing
 * of what it lacks. */
Test(faults, a_driver_without_ipc_is_told_which_version_is_needed)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    cuctx_mem m = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_mem_alloc(&m, c, 4096));
    CHECK_OK(cuctx_event_create(&ev, c, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    struct cuctx_driver saved = cuctx__drv;
    /* one of the set missing: the others are not used without it */
    cuctx__drv.f_cuIpcOpenEventHandle = NULL;
    ipc_refused_by_the_driver(c, m, ev);
    /* none of it, as in a driver before 11.0 */
    cuctx__drv.f_cuIpcGetMemHandle = NULL;
    cuctx__drv.f_cuIpcOpenMemHandle = NULL;
    cuctx__drv.f_cuIpcCloseMemHandle = NULL;
    cuctx__drv.f_cuIpcGetEventHandle = NULL;
    ipc_refused_by_the_driver(c, m, ev);
    cuctx__drv = saved;
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Bug caught: a driver without peer access (older than 4.0, or one whose
 * table lacks either call) let past the check - an enable going on to the
 * driver through a NULL entry point, or one whose destroy would need the
 * missing disable - or refused with success and no handle. Mutant killed:
 * lib/peer.c:71 `ret` (the refusal returned as 0; seed 43). */
Test(faults, a_driver_without_peer_access_is_told_which_version_is_needed)
{
    NEED_DRIVER();
    NEED_SIM();
    static const char missing[] = "cuctx_peer_enable: the driver has no peer access (CUDA 4.0 or newer needed)";
    cuctx_ctx c = {0}, d = {0};
    cuctx_peer p = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_ctx_create(&d, 0, 0));
    struct cuctx_driver saved = cuctx__drv;
    size_t mark = log_mark();
    /* the disable missing: an enable it could never undo is not made */
    cuctx__drv.f_cuCtxDisablePeerAccess = NULL;
    cr_assert_eq(cuctx_peer_enable(&p, c, d), CUDA_ERROR_NOT_SUPPORTED, "%s", cuctx_last_error_message());
    cr_assert_str_eq(cuctx_last_error_message(), missing);
    cr_assert_eq(p.id, 0);
    /* both missing, as in a driver before 4.0 */
    cuctx__drv.f_cuCtxEnablePeerAccess = NULL;
    cr_assert_eq(cuctx_peer_enable(&p, d, c), CUDA_ERROR_NOT_SUPPORTED, "%s", cuctx_last_error_message());
    cr_assert_str_eq(cuctx_last_error_message(), missing);
    cr_assert_eq(p.id, 0);
    cr_assert_eq(log_mark(), mark, "a driver call was made");
    cr_assert_eq(stats().peers, 0);
    cuctx__drv = saved;
    CHECK_OK(cuctx_ctx_destroy(&d));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
}

/* ---- mem_async survivors (ma1) -------------------------------------------- */

/* Stream-ordered memory whose context is gone, freed by a driver without
 * cuPointerGetAttribute (the pointer's device cannot be asked), then by
 * one without cuDevicePrimaryCtxGetState (its primary context cannot be
 * checked for being active; the device's primary context is active
 * here): case 3 does not apply, and cuMemFree frees the memory. Bug
 * caught: the missing entry point taken for a free done, the memory left
 * in its pool with success claimed. Mutants killed: lib/mem_async.c:185
 * `ret` and lib/mem_async.c:195 `ret` (each refusal answered with 0). */
Test(faults, memory_whose_context_is_gone_is_freed_by_a_driver_that_cannot_find_its_primary_context)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx pc = {0};
    cuctx_stream s1 = {0}, s2 = {0};
    cuctx_mem m1 = {0}, m2 = {0};
    CHECK_OK(cuctx_ctx_primary(&pc, 0));
    uint64_t p1 = orphaned_async_mem(&m1, &s1), p2 = orphaned_async_mem(&m2, &s2);
    struct cuctx_driver saved = cuctx__drv;
    unsigned long states = calls("cuDevicePrimaryCtxGetState");
    size_t mark = log_mark();
    cuctx__drv.f_cuPointerGetAttribute = NULL;
    CHECK_OK(cuctx_mem_destroy(&m1));
    cr_assert_eq(m1.id, 0);
    cr_assert_eq(calls_on("cuMemFree", p1, mark), 1, "not freed by cuMemFree");
    cr_assert_eq(calls_on("cuMemFreeAsync", p1, mark), 0);
    cr_assert_eq(sim()->async_allocs_live(), 1, "the memory was left in its pool");
    cuctx__drv = saved;
    mark = log_mark();
    cuctx__drv.f_cuDevicePrimaryCtxGetState = NULL;
    CHECK_OK(cuctx_mem_destroy(&m2));
    cuctx__drv = saved;
    cr_assert_eq(m2.id, 0);
    cr_assert_eq(calls_on("cuPointerGetAttribute", p2, mark), 1, "the pointer's device was not asked");
    cr_assert_eq(calls_on("cuMemFree", p2, mark), 1, "not freed by cuMemFree");
    cr_assert_eq(calls_on("cuMemFreeAsync", p2, mark), 0);
    cr_assert_eq(calls("cuDevicePrimaryCtxGetState"), states);
    cr_assert_eq(sim()->async_allocs_live(), 0, "the memory was left in its pool");
    cr_assert_eq(stats().async_mems, 0);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_stream_destroy(&s1));
    CHECK_OK(cuctx_stream_destroy(&s2));
    CHECK_OK(cuctx_ctx_destroy(&pc));
}

/* ---- mutation survivors of lib/launch.c (h6) ---- */

/* Bug caught: a driver without cuLaunchKernel (an optional entry point:
 * lib/driver.h) let past the check - a launch called through a NULL entry
 * point - or refused with success. Both launches, on a stream of cuctx and
 * on a default stream by name, are refused with CUDA_ERROR_NOT_SUPPORTED,
 * saying so, and no driver call is made. Mutant killed: lib/launch.c:38
 * `ret` (the refusal returned as 0). */
Test(faults, a_driver_without_cuLaunchKernel_refuses_both_launches_before_the_driver)
{
    NEED_DRIVER();
    NEED_SIM();
    static const cuctx_dim3 one = {1, 1, 1};
    cuctx_ctx c = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    CUfunction f = (CUfunction)(uintptr_t)0x1000;   /* never reaches the driver */
    struct cuctx_driver saved = cuctx__drv;
    cuctx__drv.f_cuLaunchKernel = NULL;
    size_t mark = log_mark();
    CUresult rc = cuctx_launch(f, s, one, one, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_NOT_SUPPORTED, "%s", cuctx_result_name(rc));
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_launch: the driver has no cuLaunchKernel"), "%s",
                       cuctx_last_error_message());
    rc = cuctx_launch_kernel((CUkernel)(uintptr_t)0x1000, (cuctx_stream){0}, one, one, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_NOT_SUPPORTED, "%s", cuctx_result_name(rc));
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_launch_kernel: the driver has no cuLaunchKernel"),
                       "%s", cuctx_last_error_message());
    cr_assert_eq(log_mark(), mark, "a driver call was made");
    cuctx__drv = saved;
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&c));
}
