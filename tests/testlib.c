/* SPDX-License-Identifier: MIT */
/* testlib.c - see testlib.h. */
#include "testlib.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct sim the_sim;
static int sim_state;   /* 0 unknown, 1 present, -1 absent */

const struct sim *sim(void)
{
    if (sim_state == 0) {
        const char *path = getenv("CUCTX_DRIVER");
        void *h = path && *path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
        sim_state = -1;
        if (h && dlsym(h, "cusim_reset")) {
#define TESTLIB_SIM_LOOKUP(name) the_sim.name = (cusim_##name##_fn)dlsym(h, "cusim_" #name);
            CUSIM_CONTROLS(TESTLIB_SIM_LOOKUP)
#undef TESTLIB_SIM_LOOKUP
            sim_state = 1;
        }
    }
    return sim_state > 0 ? &the_sim : NULL;
}

unsigned long calls(const char *fn)
{
    return sim() ? sim()->calls(fn) : 0;
}

size_t log_mark(void)
{
    return sim() ? sim()->log_count() : 0;
}

unsigned long calls_on(const char *fn, uint64_t h, size_t from)
{
    unsigned long n = 0;
    struct cusim_call c;
    for (size_t i = from; sim() && sim()->log_get(i, &c) == 0; i++)
        if (strcmp(c.fn, fn) == 0 && c.handle == h)
            n++;
    return n;
}

struct cusim_call nth_call(const char *fn, size_t from, unsigned nth)
{
    struct cusim_call c = {0};
    unsigned seen = 0;
    cr_assert_not_null(sim(), "nth_call needs the simulator");
    for (size_t i = from; sim()->log_get(i, &c) == 0; i++)
        if (strcmp(c.fn, fn) == 0 && seen++ == nth)
            return c;
    cr_assert_fail("the log from %zu on has %u calls of %s, not %u", from, seen, fn, nth + 1);
    return c;   /* not reached */
}

struct cusim_call last_call(const char *fn, size_t from)
{
    struct cusim_call c, last = {0};
    int found = 0;
    cr_assert_not_null(sim(), "last_call needs the simulator");
    for (size_t i = from; sim()->log_get(i, &c) == 0; i++)
        if (strcmp(c.fn, fn) == 0) {
            last = c;
            found = 1;
        }
    cr_assert(found, "no call of %s in the log from %zu on", fn, from);
    return last;
}

size_t misuses(void)
{
    size_t n = sim() ? sim()->misuse_count() : 0;
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "simulator misuse: %s\n", sim()->misuse_text(i));
    return n;
}

const char *log_seq(size_t from, const char *const *only, char *buf, size_t n)
{
    struct cusim_call c;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = from; sim() && sim()->log_get(i, &c) == 0; i++) {
        int keep = !only;
        for (const char *const *o = only; o && *o && !keep; o++)
            keep = strcmp(*o, c.fn) == 0;
        if (keep && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", c.fn);
    }
    return buf;
}

struct cuctx_stats stats(void)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    return st;
}

CUcontext current(void)
{
    CUcontext c = NULL;
    cr_assert_eq(cuctx_current_raw(&c), CUDA_SUCCESS, "cuctx_current_raw: %s", cuctx_last_error_message());
    return c;
}

const char *test_data_path(const char *file)
{
    static char buf[4096];
    const char *dir = getenv("CUCTX_TEST_DATA");
    snprintf(buf, sizeof buf, "%s/%s", dir && *dir ? dir : "tests/data", file);
    return buf;
}

void *drv_sym(const char *name, int version)
{
    void *p = NULL;
    CUresult rc = cuctx_driver_symbol(name, version, &p);
    cr_assert_eq(rc, CUDA_SUCCESS, "driver symbol %s@%d: %s", name, version, cuctx_last_error_message());
    return p;
}

void adopt_new_pool(cuctx_mem_pool *out)
{
    CUresult rc = cuctx_mem_pool_adopt(out, raw_pool(0), 1);
    cr_assert_eq(rc, CUDA_SUCCESS, "cuctx_mem_pool_adopt: %s", cuctx_last_error_message());
}

static void count_errors(CUresult rc, const char *message, void *user)
{
    struct handler_count *c = user;
    if (rc == CUDA_SUCCESS)
        return;     /* debug notes */
    c->calls++;
    c->last_rc = rc;
    snprintf(c->last_msg, sizeof c->last_msg, "%s", message);
}

void count_handler_install(struct handler_count *c)
{
    memset(c, 0, sizeof *c);
    cuctx_set_error_handler(count_errors, c);
}

struct named { char kind; uint64_t h; char name[16]; };
static struct named names[64];
static int n_names;

void name_handle(char kind, uint64_t h, const char *name)
{
    cr_assert_lt(n_names, 64, "too many named handles");
    names[n_names].kind = kind;
    names[n_names].h = h;
    snprintf(names[n_names].name, sizeof names[n_names].name, "%s", name);
    n_names++;
}

const char *nth(char *buf, size_t n, const char *base, int i)
{
    snprintf(buf, n, "%s%d", base, i);
    return buf;
}

const char *name_of(char kind, uint64_t h)
{
    if (h == 0)
        return "0";
    for (int i = n_names - 1; i >= 0; i--)
        if (names[i].kind == kind && names[i].h == h)
            return names[i].name;
    return "unnamed";
}

#define TRACED_DESTROY(name, type, stat, sim, letter, create_fn, destroy_fn, ...) {destroy_fn, letter},
static const struct { const char *fn; char kind; } traced[] = {
    {"cuCtxSetCurrent", 'c'}, {"cuCtxPushCurrent", 'c'}, {"cuCtxPopCurrent", 'c'},
    {"cuCtxDestroy", 'c'}, TEST_CHILD_KINDS(TRACED_DESTROY)
};
#undef TRACED_DESTROY

const char *trace(size_t from, char *buf, size_t n)
{
    struct cusim_call c;
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = from; sim() && sim()->log_get(i, &c) == 0; i++)
        for (size_t t = 0; t < sizeof traced / sizeof traced[0]; t++)
            if (strcmp(c.fn, traced[t].fn) == 0 && len < n)
                len += (size_t)snprintf(buf + len, n - len, "%s%s(%s)", len ? "," : "", c.fn,
                                        name_of(traced[t].kind, c.handle));
    return buf;
}

void stderr_of(void (*fn)(void *arg), void *arg, char *buf, size_t n)
{
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    cr_assert_geq(saved, 0);
    cr_assert_geq(dup2(fileno(tmp), 2), 0);
    fn(arg);
    fflush(stderr);
    int back = dup2(saved, 2);
    close(saved);
    cr_assert_geq(back, 0);
    rewind(tmp);
    size_t got = fread(buf, 1, n - 1, tmp);
    buf[got] = 0;
    fclose(tmp);
}

void unique_addresses(void)
{
    if (sim())
        sim()->set_recycling(0);
}

CUcontext new_ctx(cuctx_ctx *c, CUdevice dev, const char *name, enum ctx_left left)
{
    CHECK_OK(cuctx_ctx_create(c, dev, CUCTX_SCHED_AUTO));
    if (left == POPPED)
        CHECK_OK(cuctx_pop_current());
    CUcontext raw = cuctx_ctx_raw(*c);
    cr_assert_not_null(raw);
    if (name)
        name_handle('c', (uint64_t)(uintptr_t)raw, name);
    return raw;
}

CUcontext raw_ctx_create(CUdevice dev, enum ctx_left left)
{
    PFN_cuCtxCreate_v3020 create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxPopCurrent_v4000 pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    CUcontext raw = NULL, popped = NULL;
    cr_assert_eq(create(&raw, 0, dev), CUDA_SUCCESS, "cuCtxCreate");
    if (left == POPPED)
        cr_assert_eq(pop(&popped), CUDA_SUCCESS, "cuCtxPopCurrent");
    return raw;
}

void raw_ctx_destroy(CUcontext raw)
{
    PFN_cuCtxDestroy_v4000 destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    cr_assert_eq(destroy(raw), CUDA_SUCCESS, "cuCtxDestroy");
}

CUmemoryPool raw_pool(CUdevice dev)
{
    PFN_cuMemPoolCreate_v11020 create = (PFN_cuMemPoolCreate_v11020)drv_sym("cuMemPoolCreate", 11020);
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    CUmemoryPool raw = NULL;
    cr_assert_eq(create(&raw, &pp), CUDA_SUCCESS, "cuMemPoolCreate");
    return raw;
}

static CUgraph the_graph;

CUgraph test_graph(cuctx_ctx c)
{
    if (the_graph)
        return the_graph;
    PFN_cuGraphCreate_v10000 create = (PFN_cuGraphCreate_v10000)drv_sym("cuGraphCreate", 10000);
    PFN_cuGraphAddEmptyNode_v10000 add = (PFN_cuGraphAddEmptyNode_v10000)drv_sym("cuGraphAddEmptyNode", 10000);
    cuctx_scope sc;
    int entered = c.id && cuctx_scope_enter(&sc, c) == CUDA_SUCCESS;
    CUgraph g = NULL;
    CUgraphNode node = NULL;
    CUresult rc = create(&g, 0);
    if (rc == CUDA_SUCCESS)
        rc = add(&node, g, NULL, 0);
    if (entered)
        cuctx_scope_exit(&sc);
    cr_assert_eq(rc, CUDA_SUCCESS, "making the test graph: %s", cuctx_result_name(rc));
    the_graph = g;
    return g;
}

void graph_fini(void)
{
    if (!the_graph)
        return;
    PFN_cuGraphDestroy_v10000 destroy = (PFN_cuGraphDestroy_v10000)drv_sym("cuGraphDestroy", 10000);
    CUresult rc = destroy(the_graph);
    the_graph = NULL;
    cr_expect_eq(rc, CUDA_SUCCESS, "cuGraphDestroy of the test graph: %s", cuctx_result_name(rc));
}

#ifdef CUCTX_GCOV_DUMP
void __gcov_dump(void);     /* libgcov's */
#endif

int in_child(int (*child)(void *), void *arg)
{
    /* Called through a pointer: built with --coverage, gcc turns a direct
     * call of fork into libgcov's __gcov_fork, which zeroes the child's
     * counters once fork has returned there - after the fork handlers ran,
     * so that what they did would never be recorded. */
    pid_t (*volatile fork_fn)(void) = fork;
    fflush(NULL);
    pid_t pid = fork_fn();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        alarm(5);
        int status = child(arg);
#ifdef CUCTX_GCOV_DUMP
        __gcov_dump();      /* _exit skips it */
#endif
        _exit(status);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child did not exit (signal %d: a hang ends in SIGALRM)",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return WEXITSTATUS(status);
}

static void *held_destroy_run(void *p)
{
    struct held_destroy *d = p;
    d->rc = cuctx_ctx_destroy(&d->c);
    return NULL;
}

void held_destroy_begin(struct held_destroy *d)
{
    *d = (struct held_destroy){.rc = CUDA_ERROR_UNKNOWN};
    CHECK_OK(cuctx_ctx_create(&d->c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    d->old = cuctx_ctx_raw(d->c);
    sim()->hold_after("cuCtxDestroy");
    cr_assert_eq(pthread_create(&d->t, NULL, held_destroy_run, d), 0);
    for (int ms = 0; ms < 10000 && !(d->held = sim()->sleeping() == 1); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

void held_destroy_end(struct held_destroy *d)
{
    sim()->let_go();
    pthread_join(d->t, NULL);
}

const char test_broken_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry broken()\n"
    "{\n"
    "    cusim_bad;\n"
    "    ret;\n"
    "}\n";

/* ---- what another thread is blocked in (/proc) --------------------------- */

long blocked_in(pid_t tid, unsigned long *arg1)
{
    char path[64], line[256];
    long nr = -1;
    unsigned long arg0 = 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -2;
    int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got)
        return -2;
    if (sscanf(line, "%ld %lx %lx", &nr, &arg0, arg1) != 3)
        return -1;
    return nr;
}

int in_futex_wait(pid_t tid)
{
    unsigned long op = 0;
    long nr = blocked_in(tid, &op);
    if (nr == -2)
        return -1;
    op &= FUTEX_CMD_MASK;
    return nr == SYS_futex && (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET);
}

/* A context made and destroyed; its stream-ordered memory left in *m, its
 * stream (a handle of the dead context, for the caller to destroy) in *s. */
uint64_t orphaned_async_mem(cuctx_mem *m, cuctx_stream *s)
{
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, POPPED);
    CHECK_OK(cuctx_stream_create(s, c, 0, 0));
    CHECK_OK(cuctx_mem_alloc_async(m, *s, 4096));
    CHECK_OK(cuctx_ctx_destroy(&c));
    return cuctx_mem_ptr(*m);
}
