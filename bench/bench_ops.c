/* SPDX-License-Identifier: MIT */
/* bench_ops.c - single operations on one thread, cuctx beside the raw
 * driver, each in an owned context that is current: event create+destroy
 * (CU_EVENT_DISABLE_TIMING), the same with one cuCtxGetCurrent added to the
 * raw side (the call a create in a given context cannot do without),
 * stream create+destroy, 4 KiB device memory alloc+free, the same
 * stream-ordered on a non-blocking stream; every accessor of a live handle
 * (cuctx_event_raw, cuctx_ctx_raw, cuctx_stream_raw, cuctx_module_raw,
 * cuctx_mem_ptr, cuctx_mem_size, cuctx_host_mem_ptr, cuctx_host_mem_size,
 * cuctx_graph_exec_raw) beside reading a variable that holds what it gives;
 * and launches on a non-blocking stream beside the raw call on the same
 * stream: a 1x1x1 launch of an empty kernel of a module (cuctx_launch
 * against cuLaunchKernel), of a graph exec of one empty node
 * (cuctx_graph_exec_launch against cuGraphLaunch) and of the same kernel
 * from a library (cuctx_launch of a CUkernel against cuLaunchKernel of it
 * cast to CUfunction), the stream synchronized after each block of
 * launches on both sides alike. Each round interleaves the two sides in
 * short slices (benchlib.h). Prints nanoseconds per operation (best round
 * of each) and cuctx / raw time: the ratio of the bests, the median of the
 * per-round ratios, and the least and the greatest of them (lo, hi);
 * writes the same rows to bench-ops.dat.
 * Usage: bench_ops [-s SECONDS] [-r ROUNDS] [-o FILE] (see benchlib.h) */
#include "benchlib.h"

#include <cuctx.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "bench_ops";
static cuctx_ctx ctx;
static cuctx_event live_event;

/* One create+destroy pair in the context c, which is current on the thread
 * (the raw driver calls act on the current context, so the raw pairs do not
 * read c); returns how many of the two calls failed. */
typedef long pair_fn(cuctx_ctx c);

/* The timing loop of all pair rows: n pairs; returns how many calls failed.
 * Both sides pay the same indirect call per pair. */
static long pairs(pair_fn *pair, long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += pair(ctx);
    return bad;
}

static long event_pair_raw(cuctx_ctx c)
{
    (void)c;
    CUevent ev;
    long bad = bench_raw.event_create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
    return bad + (bench_raw.event_destroy(ev) != CUDA_SUCCESS);
}

static long event_pair_cuctx(cuctx_ctx c)
{
    cuctx_event ev = {0};
    long bad = cuctx_event_create(&ev, c, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
    return bad + (cuctx_event_destroy(&ev) != CUDA_SUCCESS);
}

/* The raw pair with the one driver call a create in a given context must
 * add: cuCtxGetCurrent, to know whether that context is current. */
static long event_pair_get_raw(cuctx_ctx c)
{
    CUcontext cur;
    long bad = bench_raw.get_current(&cur) != CUDA_SUCCESS;
    return bad + event_pair_raw(c);
}

/* cuctx_stream_create calls cuStreamCreateWithPriority; so does the raw side,
 * with priority 0, which is what cuStreamCreate means. */
static long stream_pair_raw(cuctx_ctx c)
{
    (void)c;
    CUstream s;
    long bad = bench_raw.stream_create(&s, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS;
    return bad + (bench_raw.stream_destroy(s) != CUDA_SUCCESS);
}

static long stream_pair_cuctx(cuctx_ctx c)
{
    cuctx_stream s = {0};
    long bad = cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS;
    return bad + (cuctx_stream_destroy(&s) != CUDA_SUCCESS);
}

static long mem_pair_raw(cuctx_ctx c)
{
    (void)c;
    CUdeviceptr p;
    long bad = bench_raw.mem_alloc(&p, 4096) != CUDA_SUCCESS;
    return bad + (bench_raw.mem_free(p) != CUDA_SUCCESS);
}

static long mem_pair_cuctx(cuctx_ctx c)
{
    cuctx_mem m = {0};
    long bad = cuctx_mem_alloc(&m, c, 4096) != CUDA_SUCCESS;
    return bad + (cuctx_mem_destroy(&m) != CUDA_SUCCESS);
}

/* Stream-ordered memory: 4 KiB allocated and freed on a non-blocking
 * stream of the context (live_async_stream), as a pipeline does. */
static cuctx_stream live_async_stream;

static long async_pair_raw(cuctx_ctx c)
{
    (void)c;
    CUstream s = cuctx_stream_raw(live_async_stream);
    CUdeviceptr p;
    long bad = bench_raw.mem_alloc_async(&p, 4096, s) != CUDA_SUCCESS;
    return bad + (bench_raw.mem_free_async(p, s) != CUDA_SUCCESS);
}

static long async_pair_cuctx(cuctx_ctx c)
{
    (void)c;
    cuctx_mem m = {0};
    long bad = cuctx_mem_alloc_async(&m, live_async_stream, 4096) != CUDA_SUCCESS;
    return bad + (cuctx_mem_destroy(&m) != CUDA_SUCCESS);
}

/* A stream's whole life when it carries stream-ordered memory: create,
 * one 4 KiB pair on it, destroy. cuctx's destroy of such a stream pays what
 * its allocations' holds of it leave: one membarrier(2) (the stream row's
 * streams, never held, do not). */
static long stream_async_raw(cuctx_ctx c)
{
    (void)c;
    CUstream s;
    CUdeviceptr p;
    if (bench_raw.stream_create(&s, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        return 1;
    long bad = bench_raw.mem_alloc_async(&p, 4096, s) != CUDA_SUCCESS;
    bad += bad ? 0 : bench_raw.mem_free_async(p, s) != CUDA_SUCCESS;
    return bad + (bench_raw.stream_destroy(s) != CUDA_SUCCESS);
}

static long stream_async_cuctx(cuctx_ctx c)
{
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    if (cuctx_stream_create(&s, c, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        return 1;
    long bad = cuctx_mem_alloc_async(&m, s, 4096) != CUDA_SUCCESS;
    bad += bad ? 0 : cuctx_mem_destroy(&m) != CUDA_SUCCESS;
    return bad + (cuctx_stream_destroy(&s) != CUDA_SUCCESS);
}

/* A row's own loop, one per side: n operations; returns how many failed. A
 * lookup row has one so that no call per operation is timed (it would be
 * most of a lookup's cost), a launch row because a launch is no pair. */
typedef long body_fn(long n);

/* The live handles the lookup rows read, and what each accessor gives for
 * them: the raw side reads that value as a program without cuctx keeps it,
 * in a variable the compiler must read each time. */
static cuctx_stream live_stream;
static cuctx_module live_module;
static cuctx_mem live_mem;
static cuctx_host_mem live_host_mem;
static cuctx_graph_exec live_graph_exec;
static CUgraph live_graph;

/* A tiny module for cuctx_module_raw and the launch rows (its empty kernel
 * nop): PTX the driver's JIT takes on any GPU. */
static const char nop_ptx[] =
    ".version 6.0\n.target sm_50\n.address_size 64\n.visible .entry nop()\n{\n ret;\n}\n";

/* name_raw and name_cuctx, the two sides of the row for accessor acc of the
 * handle h, whose result has type T. */
#define LOOKUP(name, T, acc, h)                                      \
    static T name##_value;                                           \
    static long name##_raw(long n)                                   \
    {                                                                \
        long bad = 0;                                                \
        for (long i = 0; i < n; i++) {                               \
            T v = *(T volatile *)&name##_value;                      \
            bad += v == 0;                                           \
        }                                                            \
        return bad;                                                  \
    }                                                                \
    static long name##_cuctx(long n)                                 \
    {                                                                \
        long bad = 0;                                                \
        for (long i = 0; i < n; i++) {                               \
            T v = acc(h);                                            \
            __asm__ volatile("" : "+r"(v));                          \
            bad += v == 0;                                           \
        }                                                            \
        return bad;                                                  \
    }
LOOKUP(event_lookup, CUevent, cuctx_event_raw, live_event)
LOOKUP(ctx_lookup, CUcontext, cuctx_ctx_raw, ctx)
LOOKUP(stream_lookup, CUstream, cuctx_stream_raw, live_stream)
LOOKUP(module_lookup, CUmodule, cuctx_module_raw, live_module)
LOOKUP(mem_ptr_lookup, CUdeviceptr, cuctx_mem_ptr, live_mem)
LOOKUP(mem_size_lookup, size_t, cuctx_mem_size, live_mem)
LOOKUP(host_ptr_lookup, void *, cuctx_host_mem_ptr, live_host_mem)
LOOKUP(host_size_lookup, size_t, cuctx_host_mem_size, live_host_mem)
LOOKUP(graph_exec_lookup, CUgraphExec, cuctx_graph_exec_raw, live_graph_exec)

/* Makes the handles the lookup rows read, and notes each accessor's value. */
static void lookups_make(void)
{
    PFN_cuGraphCreate_v10000 graph_create;
    if (cuctx_event_create(&live_event, ctx, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        bench_die(prog, "event create");
    if (cuctx_stream_create(&live_stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        bench_die(prog, "stream create");
    if (cuctx_module_load_data(&live_module, ctx, nop_ptx) != CUDA_SUCCESS)
        bench_die(prog, "module load");
    if (cuctx_mem_alloc(&live_mem, ctx, 4096) != CUDA_SUCCESS)
        bench_die(prog, "device memory alloc");
    if (cuctx_host_mem_alloc(&live_host_mem, ctx, 4096, 0) != CUDA_SUCCESS)
        bench_die(prog, "host memory alloc");
    if (cuctx_driver_symbol("cuGraphCreate", 10000, (void **)&graph_create) != CUDA_SUCCESS
        || graph_create(&live_graph, 0) != CUDA_SUCCESS)
        bench_die(prog, "graph create");
    if (cuctx_graph_exec_instantiate(&live_graph_exec, ctx, live_graph, 0) != CUDA_SUCCESS)
        bench_die(prog, "graph instantiate");
    event_lookup_value = cuctx_event_raw(live_event);
    ctx_lookup_value = cuctx_ctx_raw(ctx);
    stream_lookup_value = cuctx_stream_raw(live_stream);
    module_lookup_value = cuctx_module_raw(live_module);
    mem_ptr_lookup_value = cuctx_mem_ptr(live_mem);
    mem_size_lookup_value = cuctx_mem_size(live_mem);
    host_ptr_lookup_value = cuctx_host_mem_ptr(live_host_mem);
    host_size_lookup_value = cuctx_host_mem_size(live_host_mem);
    graph_exec_lookup_value = cuctx_graph_exec_raw(live_graph_exec);
}

static void lookups_destroy(void)
{
    PFN_cuGraphDestroy_v10000 graph_destroy;
    if (cuctx_graph_exec_destroy(&live_graph_exec) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuGraphDestroy", 10000, (void **)&graph_destroy) != CUDA_SUCCESS
        || graph_destroy(live_graph) != CUDA_SUCCESS || cuctx_host_mem_destroy(&live_host_mem) != CUDA_SUCCESS
        || cuctx_mem_destroy(&live_mem) != CUDA_SUCCESS || cuctx_module_destroy(&live_module) != CUDA_SUCCESS
        || cuctx_stream_destroy(&live_stream) != CUDA_SUCCESS || cuctx_event_destroy(&live_event) != CUDA_SUCCESS)
        bench_die(prog, "cleanup");
}

/* The launch rows. Each launches nop from nop_ptx, with a grid and a block of
 * 1x1x1, no shared memory and no arguments, on launch_stream, a non-blocking
 * stream of ctx: as a function of live_module (live_function), as a kernel
 * of launch_library (live_kernel), and as the one empty node of a graph
 * instantiated in ctx (launch_exec). The raw side launches the same things
 * on the same stream, taking the raw stream and graph exec from variables
 * (launch_raw_stream, launch_raw_exec) as a program without cuctx keeps
 * them. run() synchronizes the stream after every block of launches, on
 * both sides with the same raw cuStreamSynchronize, so that a GPU's queue
 * stays short; both sides' times per launch include that share of it. */
static cuctx_stream launch_stream;
static cuctx_library launch_library;
static cuctx_graph launch_graph;
static cuctx_graph_exec launch_exec;
static CUfunction live_function;
static CUkernel live_kernel;
static CUstream launch_raw_stream;
static CUgraphExec launch_raw_exec;
static const cuctx_dim3 one = {1, 1, 1};

static long launch_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += bench_raw.launch_kernel(live_function, 1, 1, 1, 1, 1, 1, 0, launch_raw_stream, NULL, NULL)
               != CUDA_SUCCESS;
    return bad;
}

static long launch_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += cuctx_launch(live_function, launch_stream, one, one, 0, NULL) != CUDA_SUCCESS;
    return bad;
}

static long graph_launch_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += bench_raw.graph_launch(launch_raw_exec, launch_raw_stream) != CUDA_SUCCESS;
    return bad;
}

static long graph_launch_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += cuctx_graph_exec_launch(launch_exec, launch_stream) != CUDA_SUCCESS;
    return bad;
}

/* A library's kernel launches raw as a function (the header says so). */
static long library_launch_raw(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += bench_raw.launch_kernel((CUfunction)(void *)live_kernel, 1, 1, 1, 1, 1, 1, 0, launch_raw_stream,
                                       NULL, NULL) != CUDA_SUCCESS;
    return bad;
}

/* cuctx_launch of a CUkernel is cuctx_launch_kernel (a _Generic in C). */
static long library_launch_cuctx(long n)
{
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += cuctx_launch(live_kernel, launch_stream, one, one, 0, NULL) != CUDA_SUCCESS;
    return bad;
}

/* Makes what the launch rows launch; live_module must be loaded. */
static void launches_make(void)
{
    CUgraphNode node;
    if (cuctx_stream_create(&launch_stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        bench_die(prog, "stream create");
    if (cuctx_module_function(live_module, "nop", &live_function) != CUDA_SUCCESS)
        bench_die(prog, "module function");
    if (cuctx_library_load_data(&launch_library, nop_ptx) != CUDA_SUCCESS)
        bench_die(prog, "library load");
    if (cuctx_library_kernel(launch_library, "nop", &live_kernel) != CUDA_SUCCESS)
        bench_die(prog, "library kernel");
    if (cuctx_graph_create(&launch_graph) != CUDA_SUCCESS
        || CUCTX_CALL(cuGraphAddEmptyNode, &node, cuctx_graph_raw(launch_graph), NULL, 0) != CUDA_SUCCESS)
        bench_die(prog, "graph of one empty node");
    if (cuctx_graph_exec_instantiate(&launch_exec, ctx, cuctx_graph_raw(launch_graph), 0) != CUDA_SUCCESS)
        bench_die(prog, "graph instantiate");
    launch_raw_stream = cuctx_stream_raw(launch_stream);
    launch_raw_exec = cuctx_graph_exec_raw(launch_exec);
}

static void launches_destroy(void)
{
    if (cuctx_stream_synchronize(launch_stream) != CUDA_SUCCESS
        || cuctx_graph_exec_destroy(&launch_exec) != CUDA_SUCCESS || cuctx_graph_destroy(&launch_graph) != CUDA_SUCCESS
        || cuctx_library_destroy(&launch_library) != CUDA_SUCCESS
        || cuctx_stream_destroy(&launch_stream) != CUDA_SUCCESS)
        bench_die(prog, "cleanup");
}

enum side { RAW, CUCTX };

/* Whether the row called name is measured: every row, or where BENCH_ONLY
 * is set, those it names (a list of row names separated by commas). */
static int row_chosen(const char *only, const char *name)
{
    if (!only || !*only)
        return 1;
    size_t n = strlen(name);
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static const struct op {
    const char *name;     /* the row's name in the data file */
    const char *title;
    long block;           /* operations between two looks at the clock */
    pair_fn *pair[2];     /* a pair row: the raw pair and cuctx's, timed by pairs() */
    body_fn *body[2];     /* a row with its own loops: the raw loop and cuctx's */
    int sync;             /* a launch row: launch_stream is synchronized after each block */
} ops[] = {
    {"event", "event create+destroy", 64, {event_pair_raw, event_pair_cuctx}, {NULL, NULL}, 0},
    {"event_get", "event (raw + get)", 64, {event_pair_get_raw, event_pair_cuctx}, {NULL, NULL}, 0},
    {"stream", "stream create+destroy", 16, {stream_pair_raw, stream_pair_cuctx}, {NULL, NULL}, 0},
    {"mem4k", "4 KiB alloc+free", 4, {mem_pair_raw, mem_pair_cuctx}, {NULL, NULL}, 0},
    {"async4k", "4 KiB async alloc+free", 16, {async_pair_raw, async_pair_cuctx}, {NULL, NULL}, 0},
    {"stream_async", "stream+async pair+destroy", 8, {stream_async_raw, stream_async_cuctx}, {NULL, NULL}, 0},
    {"event_raw", "cuctx_event_raw lookup", 4096, {NULL, NULL}, {event_lookup_raw, event_lookup_cuctx}, 0},
    {"ctx_raw", "cuctx_ctx_raw lookup", 4096, {NULL, NULL}, {ctx_lookup_raw, ctx_lookup_cuctx}, 0},
    {"stream_raw", "cuctx_stream_raw", 4096, {NULL, NULL}, {stream_lookup_raw, stream_lookup_cuctx}, 0},
    {"module_raw", "cuctx_module_raw", 4096, {NULL, NULL}, {module_lookup_raw, module_lookup_cuctx}, 0},
    {"mem_ptr", "cuctx_mem_ptr", 4096, {NULL, NULL}, {mem_ptr_lookup_raw, mem_ptr_lookup_cuctx}, 0},
    {"mem_size", "cuctx_mem_size", 4096, {NULL, NULL}, {mem_size_lookup_raw, mem_size_lookup_cuctx}, 0},
    {"host_mem_ptr", "cuctx_host_mem_ptr", 4096, {NULL, NULL}, {host_ptr_lookup_raw, host_ptr_lookup_cuctx}, 0},
    {"host_mem_size", "cuctx_host_mem_size", 4096, {NULL, NULL}, {host_size_lookup_raw, host_size_lookup_cuctx}, 0},
    {"graph_exec_raw", "cuctx_graph_exec_raw", 4096, {NULL, NULL}, {graph_exec_lookup_raw, graph_exec_lookup_cuctx}, 0},
    {"launch", "kernel launch", 256, {NULL, NULL}, {launch_raw, launch_cuctx}, 1},
    {"graph_launch", "graph exec launch", 256, {NULL, NULL}, {graph_launch_raw, graph_launch_cuctx}, 1},
    {"library_launch", "library kernel launch", 256, {NULL, NULL}, {library_launch_raw, library_launch_cuctx}, 1},
};

/* n operations of one side of a row, in blocks of the row's size (the
 * launch rows synchronize their stream after each block, both sides with
 * the same raw call); returns how many failed. */
static long side_ops(int side, long n, void *arg)
{
    const struct op *op = arg;
    pair_fn *pair = op->pair[side];
    body_fn *body = op->body[side];
    long bad = pair ? pairs(pair, n) : body(n);
    if (op->sync)
        bad += bench_raw.stream_sync(launch_raw_stream) != CUDA_SUCCESS;
    return bad;
}

/* One round of a row: raw and cuctx interleaved (benchlib.h); ns[RAW] and
 * ns[CUCTX] per operation. */
static void round_of(const struct bench_cfg *cfg, const struct op *op, double ns[2])
{
    long bad = bench_interleave(cfg, 2, side_ops, (void *)op, op->block, ns);
    if (bad) {
        fprintf(stderr, "%s: %ld %s operations failed\n", prog, bad, op->name);
        bench_die(prog, op->title);
    }
}

int main(int argc, char **argv)
{
    struct bench_cfg cfg;
    bench_config(&cfg, "ops", argc, argv);
    bench_start(prog);
    /* created contexts are pushed, so ctx is current from here on */
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
        bench_die(prog, "context create");
    lookups_make();
    launches_make();
    if (cuctx_stream_create(&live_async_stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
        bench_die(prog, "stream create");

    FILE *data = bench_data_open(&cfg, prog,
        "# one thread, an owned context current; ns per operation, best round of each;\n"
        "# a round interleaves raw and cuctx in BENCH_SLICES slices each\n"
        "# best = cuctx / raw of the bests, median = median over rounds of cuctx / raw,\n"
        "# lo and hi = the least and the greatest of those per-round ratios\n"
        "# op raw_ns cuctx_ns best median lo hi\n");
    printf("single operations, one thread, owned context current: ns per operation, best of %d rounds of %g s\n"
           "a side, each round raw and cuctx interleaved in %d slices each;\n"
           "best = cuctx / raw time of the bests, median = median over the rounds of cuctx / raw,\n"
           "lo, hi = the least and the greatest of those per-round ratios\n",
           cfg.rounds, cfg.seconds, cfg.slices);
    printf("%-25s %10s %10s %7s %7s %7s %7s\n", "operation", "raw", "cuctx", "best", "median", "lo", "hi");
    const char *only = getenv("BENCH_ONLY");
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const struct op *op = &ops[k];
        if (!row_chosen(only, op->name))
            continue;
        double raw[BENCH_MAX_ROUNDS], mine[BENCH_MAX_ROUNDS], ratio[BENCH_MAX_ROUNDS], ns[2];
        struct bench_cfg warm = cfg;
        warm.seconds = cfg.seconds / 4;
        round_of(&warm, op, ns);            /* warm-up: caches, driver pools */
        for (int r = 0; r < cfg.rounds; r++) {
            round_of(&cfg, op, ns);
            raw[r] = ns[RAW];
            mine[r] = ns[CUCTX];
            ratio[r] = mine[r] / raw[r];
        }
        double braw = bench_min(raw, cfg.rounds), bmine = bench_min(mine, cfg.rounds);
        double med = bench_median(ratio, cfg.rounds);
        double lo = bench_min(ratio, cfg.rounds), hi = bench_max(ratio, cfg.rounds);
        printf("%-25s %10.1f %10.1f %7.3f %7.3f %7.3f %7.3f\n", op->title, braw, bmine, bmine / braw, med, lo, hi);
        fprintf(data, "%s %.2f %.2f %.4f %.4f %.4f %.4f\n", op->name, braw, bmine, bmine / braw, med, lo, hi);
        fflush(stdout);
    }
    bench_data_close(data, &cfg);
    launches_destroy();
    lookups_destroy();
    if (cuctx_stream_synchronize(live_async_stream) != CUDA_SUCCESS || cuctx_stream_destroy(&live_async_stream) != CUDA_SUCCESS)
        bench_die(prog, "stream destroy");
    if (cuctx_ctx_destroy(&ctx) != CUDA_SUCCESS)
        bench_die(prog, "cleanup");
    return 0;
}
