/* SPDX-License-Identifier: MIT */
/* green_contexts.c - two green contexts on one GPU (CUDA 12.4+): the
 * device's SMs split once into 16 and the rest, a green context on each
 * part (cuctx_ctx_green_desc), the same kernel launched in both and timed
 * with events - alone, where the 16-SM partition is the slower, and both at
 * once, side by side. Each green context has children of every kind: a
 * module, a stream, events, device and page-locked memory, a graph exec
 * and stream-ordered memory.
 *
 * Then the destroy order wrong on purpose, in a third green context
 * (cuctx_ctx_green, by count): destroyed before its children, as when it is
 * declared after them or an error path ends it early. The driver treats
 * them two ways, and so does cuctx: its stream dies with it, so cuctx
 * destroys the stream first (else the driver leaks it); everything else
 * belongs to the device's primary context underneath, which the other two
 * green contexts hold, so it is freed through the driver afterwards -
 * cuMemGetInfo shows a 256 MiB buffer still allocated after the green
 * context's destroy and back after the buffer's. Last, a green context that
 * held the primary's last retain: its event went with the primary, and the
 * event's destroy is skipped.
 *
 * The kernel, spin(y, n, iters), runs `iters` steps of a linear
 * congruential generator per thread and stores the result: work that takes
 * as long as the SMs it has. On the cuctx test driver no kernel runs: y
 * keeps the value the memset put there, which the program checks instead,
 * the timings mean nothing and are not compared; it also asks the simulated
 * driver for its misuses and the streams it saw leaked (there must be none).
 * A GPU or driver without green contexts: the program says so and exits 77. */
#include <cuctx.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N (1u << 22)            /* threads per launch, one value of y each */
#define BLOCK 256u
#define ITERS 20000u            /* generator steps per thread */
#define SMALL_SMS 16u
#define SAMPLES 64              /* values of y checked on the host */
#define BUFFER_MIB 256u         /* the wrong-order path's buffer */

static const char spin_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry spin(\n"
    "    .param .u64 spin_y,\n"
    "    .param .u32 spin_n,\n"
    "    .param .u32 spin_iters\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<9>;\n"
    "    .reg .b64 %rd<5>;\n"
    "\n"
    "    ld.param.u64 %rd1, [spin_y];\n"
    "    ld.param.u32 %r1, [spin_n];\n"
    "    ld.param.u32 %r2, [spin_iters];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.s32 %r6, %r3, %r4, %r5;\n"
    "    setp.ge.u32 %p1, %r6, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    mov.u32 %r7, %r6;\n"
    "    mov.u32 %r8, 0;\n"
    "    setp.eq.u32 %p2, %r2, 0;\n"
    "    @%p2 bra STORE;\n"
    "LOOP:\n"
    "    mad.lo.u32 %r7, %r7, 1664525, 1013904223;\n"
    "    add.u32 %r8, %r8, 1;\n"
    "    setp.lt.u32 %p2, %r8, %r2;\n"
    "    @%p2 bra LOOP;\n"
    "STORE:\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r6, 4;\n"
    "    add.s64 %rd4, %rd2, %rd3;\n"
    "    st.global.u32 [%rd4], %r7;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* One partition: a green context and what the program makes in it. */
struct part {
    const char *name;
    unsigned sms;
    cuctx_ctx ctx;
    cuctx_module mod;
    CUfunction spin;
    cuctx_stream s;
    cuctx_event start, stop;
    cuctx_mem y;
    cuctx_host_mem out;     /* y copied back, page-locked */
    cuctx_graph graph;      /* one launch, captured (a graph belongs to no context) */
    cuctx_graph_exec exec;  /* its instantiation in the green context */
};

static int kernels_run;

static int fail(const char *what)
{
    fprintf(stderr, "green_contexts: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

static struct cuctx_stats stats(void)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    return st;
}

/* With the simulated driver loaded (make check), one of its counters; -1 on
 * any other driver. */
static long simulator_count(const char *name)
{
    const char *path = getenv("CUCTX_DRIVER");
    void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *sym = lib ? dlsym(lib, name) : NULL;
    size_t (*count)(void) = NULL;
    memcpy(&count, &sym, sizeof sym);
    return count ? (long)count() : -1;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* What spin leaves in y[i]. */
static unsigned expected(unsigned i)
{
    unsigned v = i;
    for (unsigned k = 0; k < ITERS; k++)
        v = v * 1664525u + 1013904223u;
    return v;
}

/* The value the memset puts in y before a launch: never a result checked. */
#define SENTINEL 0xdeadbeefu

/* One launch of spin over y on the partition's stream. */
static CUresult launch(const struct part *p, CUdeviceptr y, unsigned n)
{
    unsigned iters = ITERS;
    void *args[] = {&y, &n, &iters};
    return cuctx_launch(p->spin, p->s, (cuctx_dim3){(n + BLOCK - 1) / BLOCK, 1, 1}, (cuctx_dim3){BLOCK, 1, 1}, 0,
                        args);
}

/* The green context of desc and its children. */
static int part_open(struct part *p, CUdevice dev, CUdevResourceDesc desc)
{
    if (cuctx_ctx_green_desc(&p->ctx, dev, desc) != CUDA_SUCCESS)
        return fail("a green context");
    if (cuctx_module_load_data(&p->mod, p->ctx, spin_ptx) != CUDA_SUCCESS
        || cuctx_module_function(p->mod, "spin", &p->spin) != CUDA_SUCCESS)
        return fail("loading the kernel");
    if (cuctx_stream_create(&p->s, p->ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&p->start, p->ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS
        || cuctx_event_create(&p->stop, p->ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return fail("a stream and events");
    if (cuctx_mem_alloc(&p->y, p->ctx, N * sizeof(unsigned)) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&p->out, p->ctx, N * sizeof(unsigned), 0) != CUDA_SUCCESS)
        return fail("memory");
    /* a launch captured into a graph and instantiated in the green context */
    CUCTX_CAPTURE(p->s, &p->graph, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        if (launch(p, cuctx_mem_ptr(p->y), N) != CUDA_SUCCESS)
            return fail("capturing a launch");
    }
    if (!p->graph.id || cuctx_graph_exec_instantiate(&p->exec, p->ctx, cuctx_graph_raw(p->graph), 0) != CUDA_SUCCESS)
        return fail("the graph");
    return 0;
}

/* The right order: children first, the green context last. */
static CUresult part_close(struct part *p)
{
    CUresult rc = CUDA_SUCCESS, r;
#define CLOSE(h) if ((r = cuctx_destroy(&p->h)) != CUDA_SUCCESS && rc == CUDA_SUCCESS) rc = r
    CLOSE(exec);
    CLOSE(graph);
    CLOSE(out);
    CLOSE(y);
    CLOSE(stop);
    CLOSE(start);
    CLOSE(s);
    CLOSE(mod);
    CLOSE(ctx);
#undef CLOSE
    return rc;
}

/* y set to the sentinel, start, the kernel, stop, y copied back: queued. */
static CUresult queue_timed(const struct part *p)
{
    CUstream raw = cuctx_stream_raw(p->s);
    CUresult rc = CUCTX_CALL(cuMemsetD32Async, cuctx_mem_ptr(p->y), SENTINEL, N, raw);
    if (rc == CUDA_SUCCESS)
        rc = cuctx_event_record(p->start, p->s);
    if (rc == CUDA_SUCCESS)
        rc = launch(p, cuctx_mem_ptr(p->y), N);
    if (rc == CUDA_SUCCESS)
        rc = cuctx_event_record(p->stop, p->s);
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuMemcpyDtoHAsync, cuctx_host_mem_ptr(p->out), cuctx_mem_ptr(p->y), N * sizeof(unsigned), raw);
    return rc;
}

/* The kernel's time from the events, and whether y came back right. */
static int finish_timed(const struct part *p, float *ms)
{
    if (cuctx_stream_synchronize(p->s) != CUDA_SUCCESS || cuctx_event_elapsed_ms(p->start, p->stop, ms) != CUDA_SUCCESS)
        return fail("timing a launch"), 0;
    const unsigned *y = cuctx_host_mem_ptr(p->out);
    int right = 0;
    for (int k = 0; k < SAMPLES; k++) {
        unsigned i = (unsigned)((unsigned long long)k * (N - 1) / (SAMPLES - 1));
        right += y[i] == (kernels_run ? expected(i) : SENTINEL);
    }
    if (right != SAMPLES)
        printf("green_contexts: %s: %d of %d sampled values of y right\n", p->name, right, SAMPLES);
    return right == SAMPLES;
}

/* Device memory free now, in MiB (cuMemGetInfo, which needs a context: the
 * green context given). */
static long free_mib(cuctx_ctx in)
{
    size_t free_b = 0, total = 0;
    CUresult rc = CUDA_ERROR_UNKNOWN;
    CUCTX_SCOPED(in) {
        rc = CUCTX_CALL(cuMemGetInfo, &free_b, &total);
    }
    return rc == CUDA_SUCCESS ? (long)(free_b >> 20) : -1;
}

/* The wrong order on purpose: a green context destroyed before its
 * children, with the primary held by `holder` (another green context). */
static int wrong_order(CUdevice dev, cuctx_ctx holder)
{
    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_event e = {0};
    CUCTX_AUTO cuctx_host_mem h = {0};
    CUCTX_AUTO cuctx_mem buf = {0}, scratch = {0};
    CUCTX_AUTO cuctx_graph graph = {0};
    CUCTX_AUTO cuctx_graph_exec exec = {0};
    CUCTX_AUTO cuctx_ctx g = {0};   /* declared last: its cleanup would come first, too */
    struct part p = {"wrong order", SMALL_SMS, {0}, {0}, NULL, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
    if (cuctx_ctx_green(&g, dev, SMALL_SMS) != CUDA_SUCCESS)
        return fail("the third green context");
    if (cuctx_module_load_data(&mod, g, spin_ptx) != CUDA_SUCCESS || cuctx_module_function(mod, "spin", &p.spin) != CUDA_SUCCESS
        || cuctx_stream_create(&s, g, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&e, g, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&h, g, 4096, 0) != CUDA_SUCCESS)
        return fail("the third green context's children");
    p.s = s;
    long before = free_mib(holder);
    if (cuctx_mem_alloc(&buf, g, (size_t)BUFFER_MIB << 20) != CUDA_SUCCESS)
        return fail("the buffer");
    long with = free_mib(holder);
    /* work in it: a launch into stream-ordered memory, a graph of one
     * launch into the buffer, an event after both */
    if (cuctx_mem_alloc_async(&scratch, s, 1024 * sizeof(unsigned)) != CUDA_SUCCESS
        || launch(&p, cuctx_mem_ptr(scratch), 1024) != CUDA_SUCCESS)
        return fail("a launch into stream-ordered memory");
    CUCTX_CAPTURE(s, &graph, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        if (launch(&p, cuctx_mem_ptr(buf), 1024) != CUDA_SUCCESS)
            return fail("capturing a launch");
    }
    if (!graph.id || cuctx_graph_exec_instantiate(&exec, g, cuctx_graph_raw(graph), 0) != CUDA_SUCCESS
        || cuctx_graph_exec_launch(exec, s) != CUDA_SUCCESS || cuctx_event_record(e, s) != CUDA_SUCCESS
        || cuctx_event_synchronize(e) != CUDA_SUCCESS)
        return fail("the work in the third green context");

    struct cuctx_stats st0 = stats();
    long before_destroy = free_mib(holder);  /* the pool's and the graph's memory came since `with` */
    CUresult rc = cuctx_ctx_destroy(&g);     /* THE WRONG ORDER: before its children */
    long after_destroy = free_mib(holder);
    struct cuctx_stats st1 = stats();
    CUresult buf_rc = cuctx_mem_destroy(&buf);
    long after_free = free_mib(holder);
    printf("green_contexts: wrong order: the green context destroyed before its children: %s; its stream "
           "destroyed first, by that destroy (its handle lives on: %s)\n", cuctx_result_name(rc),
           st1.streams == st0.streams ? "its destroy is to come, and a skip" : "GONE");
    /* the rest by hand, to see each answer (their CUCTX_AUTO would do the same) */
    CUresult rcs[] = {cuctx_mem_destroy(&scratch), cuctx_graph_exec_destroy(&exec), cuctx_graph_destroy(&graph),
                      cuctx_event_destroy(&e), cuctx_host_mem_destroy(&h), cuctx_module_destroy(&mod),
                      cuctx_stream_destroy(&s)};
    int all_ok = 1;
    for (size_t i = 0; i < sizeof rcs / sizeof rcs[0]; i++)
        all_ok = all_ok && rcs[i] == CUDA_SUCCESS;
    struct cuctx_stats st2 = stats();
    uint64_t skips = st2.stale_skips - st0.stale_skips;
    printf("green_contexts: wrong order: after it the buffer's free %s, then the stream-ordered memory, graph exec, "
           "graph, event, host memory and module freed %s; %llu destroy skipped (the stream's), %llu failed\n",
           cuctx_result_name(buf_rc), all_ok ? "CUDA_SUCCESS" : "with a FAILURE", (unsigned long long)skips,
           (unsigned long long)(st2.failed_destroys - st0.failed_destroys));
    long taken = before - with, back = after_free - after_destroy;
    printf("green_contexts: cuMemGetInfo: %ld MiB free before the %u MiB buffer, %ld with it, %ld before the green "
           "context's destroy (after its pool and graph), %ld after it (the buffer is the primary's: still there), "
           "%ld after its free: %s\n", before, BUFFER_MIB, with, before_destroy, after_destroy, after_free,
           back >= (long)BUFFER_MIB - 2 ? "freed, not leaked" : "NOT given back");
    return rc == CUDA_SUCCESS && buf_rc == CUDA_SUCCESS && all_ok && skips == 1 && st1.streams == st0.streams
           && st2.failed_destroys == st0.failed_destroys && taken >= (long)BUFFER_MIB - 2
           && after_destroy - before_destroy < (long)BUFFER_MIB / 2 && back >= (long)BUFFER_MIB - 2 ? 0 : 1;
}

/* A green context that holds the primary's last retain, destroyed before
 * its event: the event went with the primary, and its destroy is skipped. */
static int last_holder(CUdevice dev)
{
    cuctx_ctx g = {0};
    cuctx_event e = {0};
    if (cuctx_ctx_green(&g, dev, SMALL_SMS) != CUDA_SUCCESS || cuctx_event_create(&e, g, 0) != CUDA_SUCCESS)
        return fail("the last green context");
    uint64_t skips = stats().stale_skips;
    CUresult g_rc = cuctx_ctx_destroy(&g), e_rc = cuctx_event_destroy(&e);
    uint64_t skipped = stats().stale_skips - skips;
    printf("green_contexts: the last holder: a green context that held the primary's last retain destroyed before "
           "its event (%s): the event's destroy %s, skipped (%llu skip): it went with the primary\n",
           cuctx_result_name(g_rc), cuctx_result_name(e_rc), (unsigned long long)skipped);
    return g_rc == CUDA_SUCCESS && e_rc == CUDA_SUCCESS && skipped == 1 ? 0 : 1;
}

int main(void)
{
    struct part small = {"small", SMALL_SMS, {0}, {0}, NULL, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
    struct part big = {"big", 0, {0}, {0}, NULL, {0}, {0}, {0}, {0}, {0}, {0}, {0}};
    char name[256] = "";
    CUdevice dev = 0;
    CUdevResource all, group, rest;
    CUdevResourceDesc dsmall = NULL, dbig = NULL;
    unsigned groups = 1;

    if (cuctx_init() != CUDA_SUCCESS)
        return fail("the driver");
    if (CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, dev) != CUDA_SUCCESS)
        return fail("cuDeviceGetName");
    kernels_run = strstr(name, "cuctx test driver") == NULL;
    /* One split of the device's SMs: a group of SMALL_SMS and the rest, apart. */
    memset(&all, 0, sizeof all);
    CUresult rc = CUCTX_CALL(cuDeviceGetDevResource, dev, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuDevSmResourceSplitByCount, &group, &groups, &all, &rest, 0, SMALL_SMS);
    if (rc == CUDA_SUCCESS && groups == 1)
        rc = CUCTX_CALL(cuDevResourceGenerateDesc, &dsmall, &group, 1);
    if (rc == CUDA_SUCCESS && groups == 1)
        rc = CUCTX_CALL(cuDevResourceGenerateDesc, &dbig, &rest, 1);
    if (rc == CUDA_ERROR_NOT_SUPPORTED || rc == CUDA_ERROR_NOT_FOUND) {
        printf("green_contexts: device 0 (%s) or its driver has no green contexts (%s): nothing to show\n", name,
               cuctx_last_error_message());
        return 77;
    }
    if (rc != CUDA_SUCCESS || groups != 1)
        return fail("splitting the device's SMs");
    small.sms = group.sm.smCount;
    big.sms = rest.sm.smCount;
    printf("green_contexts: device 0 is %s, %u SMs: partitions of %u and %u from one split\n", name,
           all.sm.smCount, small.sms, big.sms);
    if (part_open(&small, dev, dsmall) || part_open(&big, dev, dbig))
        return 1;
    printf("green_contexts: two green contexts, each with a module, a stream, two events, device and page-locked "
           "memory and a graph exec: green_contexts %zu, contexts %zu (the two and the primary under them)\n",
           stats().green_contexts, stats().contexts);

    int ok = 1;
    /* warm-up: each graph once (the first launch of a kernel costs more) */
    if (cuctx_graph_exec_launch(small.exec, small.s) != CUDA_SUCCESS
        || cuctx_graph_exec_launch(big.exec, big.s) != CUDA_SUCCESS
        || cuctx_stream_synchronize(small.s) != CUDA_SUCCESS || cuctx_stream_synchronize(big.s) != CUDA_SUCCESS)
        return fail("the graphs");

    /* alone: one partition after the other */
    float ms_small = 0, ms_big = 0;
    if (queue_timed(&small) != CUDA_SUCCESS)
        return fail("the small partition's launch");
    ok = finish_timed(&small, &ms_small) && ok;
    if (queue_timed(&big) != CUDA_SUCCESS)
        return fail("the big partition's launch");
    ok = finish_timed(&big, &ms_big) && ok;
    printf("green_contexts: alone: %u SMs %.2f ms, %u SMs %.2f ms (the small partition %.1f times slower)\n",
           small.sms, ms_small, big.sms, ms_big, ms_big > 0 ? ms_small / ms_big : 0.0);

    /* at once: both queued, then waited for */
    float at_small = 0, at_big = 0;
    double t0 = now_ms();
    if (queue_timed(&small) != CUDA_SUCCESS || queue_timed(&big) != CUDA_SUCCESS)
        return fail("the launches at once");
    ok = finish_timed(&small, &at_small) && ok;
    ok = finish_timed(&big, &at_big) && ok;
    double wall = now_ms() - t0;
    printf("green_contexts: at once: both done in %.2f ms of wall time, %.2f and %.2f ms each, against %.2f ms one "
           "after the other\n", wall, at_small, at_big, (double)ms_small + ms_big);
    if (kernels_run) {
        int slower = ms_small > 2.0f * ms_big;
        /* side by side: the big one, queued second, did not wait for the
         * small one (its events would bracket that wait), and the two took
         * less wall time than one after the other */
        int together = at_big < 1.5f * ms_big && wall < (double)ms_small + ms_big;
        printf("green_contexts: the %u-SM partition %s; the two %s\n", small.sms,
               slower ? "is the slower, as it should be" : "is NOT the slower",
               together ? "ran side by side" : "did NOT run side by side");
        printf("green_contexts: y right in %d of %d samples of each launch\n", SAMPLES, SAMPLES);
        ok = ok && slower && together;
    } else {
        printf("green_contexts: kernels run nothing on the cuctx test driver: y kept the memset's value; the "
               "timings are compared on a GPU\n");
    }

    /* the wrong order, while the two hold the primary */
    ok = wrong_order(dev, big.ctx) == 0 && ok;

    /* the right order: children first */
    CUresult close_small = part_close(&small), close_big = part_close(&big);
    printf("green_contexts: the two closed children first: %s, %s\n", cuctx_result_name(close_small),
           cuctx_result_name(close_big));
    ok = ok && close_small == CUDA_SUCCESS && close_big == CUDA_SUCCESS;
    ok = last_holder(dev) == 0 && ok;

    struct cuctx_stats st = stats();
    printf("green_contexts: at the end: %zu contexts, %zu green, %zu context handles, %zu events, %zu streams, %zu "
           "modules, %zu device allocations, %zu host allocations, %zu graph execs, %zu stream-ordered; %llu failed "
           "destroys\n", st.contexts, st.green_contexts, st.ctx_handles, st.events, st.streams, st.modules, st.mems,
           st.host_mems, st.graph_execs, st.async_mems, (unsigned long long)st.failed_destroys);
    ok = ok && st.contexts == 0 && st.ctx_handles == 0 && st.events == 0 && st.streams == 0 && st.modules == 0
         && st.mems == 0 && st.host_mems == 0 && st.graph_execs == 0 && st.async_mems == 0 && st.graphs == 0
         && st.failed_destroys == 0;
    long misuses = simulator_count("cusim_misuse_count"), leaked = simulator_count("cusim_leaked_streams");
    if (misuses >= 0)
        printf("green_contexts: the simulated driver recorded %ld misuses and %ld leaked streams\n", misuses, leaked);
    ok = ok && misuses <= 0 && leaked <= 0;
    printf("green_contexts: %s\n", ok ? "every check passed" : "a check FAILED");
    return ok ? 0 : 1;
}
