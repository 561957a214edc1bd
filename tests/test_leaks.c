/* SPDX-License-Identifier: MIT */
/* test_leaks.c - the leak report: one line per live object naming its kind,
 * driver handle, cuctx handle, owning context and the file:line and
 * function of its create, then a count; on demand through
 * cuctx_leak_report, and at exit with CUCTX_LEAK_CHECK=1 without changing
 * the exit status. Runs on the real driver too. */
#include "testlib.h"

#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The report as a string (free it). */
static char *report(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    cr_assert_not_null(f);
    cuctx_leak_report(f);
    fclose(f);
    return text;
}

#define EXPECT_LINE(text, ...)                                                          \
    do {                                                                                \
        char want_[512];                                                                \
        snprintf(want_, sizeof want_, __VA_ARGS__);                                     \
        cr_assert_not_null(strstr((text), want_), "missing line:\n%s\nin report:\n%s", \
                           want_, (text));                                              \
    } while (0)

static CUgraph empty_graph(cuctx_ctx ctx)
{
    PFN_cuGraphCreate_v10000 create = (PFN_cuGraphCreate_v10000)drv_sym("cuGraphCreate", 10000);
    PFN_cuGraphAddEmptyNode_v10000 add = (PFN_cuGraphAddEmptyNode_v10000)drv_sym("cuGraphAddEmptyNode", 10000);
    CUgraph g = NULL;
    CUgraphNode node = NULL;
    CUCTX_SCOPED(ctx) {
        cr_assert_eq(create(&g, 0), CUDA_SUCCESS);
        cr_assert_eq(add(&node, g, NULL, 0), CUDA_SUCCESS);
    }
    return g;
}

/* The text of tests/data/vadd.ptx, NUL-terminated (static storage). */
static const char *vadd_image(void)
{
    static char image[1 << 16];
    const char *path = test_data_path("vadd.ptx");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t len = fread(image, 1, sizeof image - 1, f);
    fclose(f);
    image[len] = 0;
    return image;
}

/* The report's line of handle id (a context's or a child's) ends by saying
 * that a plain function made it. */
static void expect_plain(const char *text, uint64_t id, const char *what)
{
    static const char plain[] = ", created by a call without its site (a plain function)";
    char tag[64];
    snprintf(tag, sizeof tag, "handle %#llx)", (unsigned long long)id);
    cr_assert_neq(id, 0, "the %s has no handle", what);
    const char *at = strstr(text, tag);
    cr_assert_not_null(at, "no line of the %s (%s) in the report:\n%s", what, tag, text);
    const char *end = strchr(at, '\n');
    size_t n = sizeof plain - 1;
    cr_assert(end && (size_t)(end - at) >= n && memcmp(end - n, plain, n) == 0,
              "the %s's line does not say a plain function made it:\n%s", what, text);
}

/* Lines of the report that say a plain function made their object. */
static int plain_lines(const char *text)
{
    int n = 0;
    for (const char *c = text; (c = strstr(c, ", created by a call without its site (a plain function)\n")); c++)
        n++;
    return n;
}

Test(leaks, one_line_per_object_of_each_kind_with_its_create_site)
{
    cuctx_ctx ctx = {0}, p = {0}, b = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0};
    cuctx_mem m = {0};
    cuctx_host_mem hm = {0};
    cuctx_graph_exec ge = {0};
    NEED_DRIVER();
    const char *vadd_path = test_data_path("vadd.ptx");
    CHECK_OK(cuctx_ctx_create(&ctx, 0, 0)); int l_ctx = __LINE__;
    CHECK_OK(cuctx_ctx_primary(&p, 0)); int l_p = __LINE__;
    CHECK_OK(cuctx_ctx_borrow(&b, cuctx_ctx_raw(ctx))); int l_b = __LINE__;
    CHECK_OK(cuctx_event_create(&ev, ctx, 0)); int l_ev = __LINE__;
    CHECK_OK(cuctx_stream_create(&s, ctx, 0, 0)); int l_s = __LINE__;
    CHECK_OK(cuctx_module_load(&mod, ctx, vadd_path)); int l_mod = __LINE__;
    CHECK_OK(cuctx_mem_alloc(&m, ctx, 4096)); int l_m = __LINE__;
    CHECK_OK(cuctx_host_mem_alloc(&hm, ctx, 4096, 0)); int l_hm = __LINE__;
    CUgraph g = empty_graph(ctx);
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, ctx, g, 0)); int l_ge = __LINE__;
    CUcontext raw = cuctx_ctx_raw(ctx);
    char *text = report();
    const char *f = __FILE__, *fn = __func__;
    EXPECT_LINE(text, "cuctx: leak: context %p (owned, handle %#llx), created at %s:%d in %s()\n", (void *)raw,
                (unsigned long long)ctx.id, f, l_ctx, fn);
    EXPECT_LINE(text, "cuctx: leak: context %p (primary, handle %#llx), created at %s:%d in %s()\n",
                (void *)cuctx_ctx_raw(p), (unsigned long long)p.id, f, l_p, fn);
    EXPECT_LINE(text, "cuctx: leak: context %p (borrowed, handle %#llx), created at %s:%d in %s()\n", (void *)raw,
                (unsigned long long)b.id, f, l_b, fn);
    EXPECT_LINE(text, "cuctx: leak: event %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)(uintptr_t)cuctx_event_raw(ev), (unsigned long long)ev.id, (void *)raw, f, l_ev, fn);
    EXPECT_LINE(text, "cuctx: leak: stream %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)(uintptr_t)cuctx_stream_raw(s), (unsigned long long)s.id, (void *)raw, f, l_s, fn);
    EXPECT_LINE(text, "cuctx: leak: module %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)(uintptr_t)cuctx_module_raw(mod), (unsigned long long)mod.id, (void *)raw, f,
                l_mod, fn);
    EXPECT_LINE(text, "cuctx: leak: device memory %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)cuctx_mem_ptr(m), (unsigned long long)m.id, (void *)raw, f, l_m, fn);
    EXPECT_LINE(text,
                "cuctx: leak: page-locked host memory %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)(uintptr_t)cuctx_host_mem_ptr(hm), (unsigned long long)hm.id, (void *)raw, f,
                l_hm, fn);
    EXPECT_LINE(text, "cuctx: leak: graph exec %#llx (handle %#llx) in context %p, created at %s:%d in %s()\n",
                (unsigned long long)(uintptr_t)cuctx_graph_exec_raw(ge), (unsigned long long)ge.id, (void *)raw, f,
                l_ge, fn);
    EXPECT_LINE(text, "cuctx: 9 objects alive\n");
    int lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, 10, "nine objects and the count:\n%s", text);
    free(text);
    cuctx_destroy(&ge);
    cuctx_destroy(&hm);
    cuctx_destroy(&m);
    cuctx_destroy(&mod);
    cuctx_destroy(&s);
    cuctx_destroy(&ev);
    cuctx_destroy(&b);
    cuctx_destroy(&p);
    cuctx_destroy(&ctx);
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
}

Test(leaks, a_child_of_a_destroyed_context_and_a_plain_function_call_are_named_so)
{
    cuctx_ctx ctx = {0};
    cuctx_event ev = {0}, plain = {0};
    NEED_DRIVER();
    CHECK_OK(cuctx_ctx_create(&ctx, 0, 0));
    CHECK_OK(cuctx_event_create(&ev, ctx, 0));
    CHECK_OK((cuctx_event_create)(&plain, ctx, 0));
    uint64_t raw_ev = (uint64_t)(uintptr_t)cuctx_event_raw(ev);
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    char *text = report();
    EXPECT_LINE(text, "cuctx: leak: event %#llx (handle %#llx) in a destroyed context, created at %s:",
                (unsigned long long)raw_ev, (unsigned long long)ev.id, __FILE__);
    EXPECT_LINE(text, "(handle %#llx) in a destroyed context, created by a call without its site (a plain function)\n",
                (unsigned long long)plain.id);
    EXPECT_LINE(text, "cuctx: 2 objects alive\n");
    free(text);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_event_destroy(&plain));
}

/* Each create is also a plain function (the macro's name in parentheses),
 * for callers that take its address or compile with CUCTX_NO_SITES: it does
 * the same work, with the arguments reaching the driver, and its objects are
 * reported without a site. This test takes the contexts and the first
 * children; the three after it take the rest (objects of no context, pools,
 * stream-ordered memory, a capture and a launch; the adopts; green
 * contexts, peer access and IPC), so that every plain create is called. */
Test(leaks, every_create_as_a_plain_function_works_and_is_reported_without_a_site)
{
    cuctx_ctx ctx = {0}, p = {0}, b = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0}, mod2 = {0};
    cuctx_mem m = {0};
    cuctx_host_mem hm = {0};
    cuctx_graph_exec ge = {0};
    NEED_DRIVER();
    const char *image = vadd_image();
    const char *vadd_path = test_data_path("vadd.ptx");
    size_t mark = log_mark();
    CHECK_OK((cuctx_ctx_create)(&ctx, 0, CUCTX_SCHED_YIELD));
    CHECK_OK((cuctx_ctx_primary)(&p, 0));
    CHECK_OK((cuctx_ctx_borrow)(&b, cuctx_ctx_raw(ctx)));
    CHECK_OK((cuctx_event_create)(&ev, ctx, CU_EVENT_DISABLE_TIMING));
    CHECK_OK((cuctx_stream_create)(&s, ctx, CU_STREAM_NON_BLOCKING, -1));
    CHECK_OK((cuctx_module_load)(&mod, ctx, vadd_path));
    CHECK_OK((cuctx_module_load_data)(&mod2, ctx, image));
    CHECK_OK((cuctx_mem_alloc)(&m, ctx, 5000));
    CHECK_OK((cuctx_host_mem_alloc)(&hm, ctx, 6000, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_OK((cuctx_graph_exec_instantiate)(&ge, ctx, empty_graph(ctx), 0));
    cr_assert_eq(cuctx_ctx_raw(b), cuctx_ctx_raw(ctx));
    cr_assert_eq(cuctx_mem_size(m), 5000);
    cr_assert_eq(cuctx_host_mem_size(hm), 6000);
    CUfunction fn = NULL;
    CHECK_OK(cuctx_module_function(mod2, "vadd", &fn));
    cr_assert_not_null(fn);
    if (sim()) {
        cr_assert_eq(last_call("cuCtxCreate", mark).flags, CUCTX_SCHED_YIELD);
        cr_assert_eq(last_call("cuEventCreate", mark).flags, CU_EVENT_DISABLE_TIMING);
        struct cusim_call c = last_call("cuStreamCreateWithPriority", mark);
        cr_assert_eq(c.flags, CU_STREAM_NON_BLOCKING);
        cr_assert_eq(c.arg, -1);
        cr_assert_eq(last_call("cuMemAlloc", mark).arg, 5000);
        c = last_call("cuMemHostAlloc", mark);
        cr_assert_eq(c.arg, 6000);
        cr_assert_eq(c.flags, CU_MEMHOSTALLOC_PORTABLE);
        cr_assert_eq(calls("cuModuleLoad"), 1);
        cr_assert_eq(calls("cuModuleLoadDataEx"), 1);
        cr_assert_eq(calls("cuDevicePrimaryCtxRetain"), 1);
        cr_assert_eq(calls("cuGraphInstantiateWithFlags"), 1);
    }
    char *text = report();
    cr_assert_eq(plain_lines(text), 10, "ten objects made by plain functions:\n%s", text);
    EXPECT_LINE(text, "cuctx: 10 objects alive\n");
    free(text);
    cuctx_destroy(&ge);
    cuctx_destroy(&hm);
    cuctx_destroy(&m);
    cuctx_destroy(&mod2);
    cuctx_destroy(&mod);
    cuctx_destroy(&s);
    cuctx_destroy(&ev);
    cuctx_destroy(&b);
    cuctx_destroy(&p);
    cuctx_destroy(&ctx);
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
}

#define H(p) ((uint64_t)(uintptr_t)(p))

/* The plain forms of the creates of no context (graph, library, pool,
 * stream-ordered memory), of a capture's begin and of the launch. The
 * launch makes no object; the begin makes none either, but the graph its
 * capture yields is reported with the begin's site, here none. */
Test(leaks, the_plain_functions_of_graphs_libraries_pools_captures_and_launches)
{
    cuctx_ctx ctx = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0};
    cuctx_graph g = {0}, captured = {0};
    cuctx_library lib = {0}, lib2 = {0};
    cuctx_mem_pool pool = {0}, dflt = {0};
    cuctx_mem am = {0}, pm = {0};
    cuctx_capture cap = {0};   /* (ended: an end of a capture never begun does nothing) */
    const cuctx_dim3 grid = {3, 2, 1}, block = {32, 4, 1};
    NEED_DRIVER();
    const char *image = vadd_image();
    const char *vadd_path = test_data_path("vadd.ptx");
    CHECK_OK(cuctx_ctx_create(&ctx, 0, 0));
    CHECK_OK(cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0));
    CHECK_OK(cuctx_module_load(&mod, ctx, vadd_path));
    CUfunction fn = NULL;
    CHECK_OK(cuctx_module_function(mod, "vadd", &fn));
    size_t mark = log_mark();
    CHECK_OK((cuctx_graph_create)(&g));
    CHECK_OK((cuctx_library_load)(&lib, vadd_path));
    CHECK_OK((cuctx_library_load_data)(&lib2, image));
    CHECK_OK((cuctx_mem_pool_create)(&pool, 0, NULL));
    CHECK_OK((cuctx_mem_pool_default)(&dflt, 0));
    CHECK_OK((cuctx_mem_alloc_async)(&am, s, 7000));
    CHECK_OK((cuctx_mem_alloc_from_pool)(&pm, pool, s, 9000));
    CUdeviceptr ptr = cuctx_mem_ptr(am);
    unsigned n = 0;     /* (no element: on a GPU the kernel writes nothing) */
    void *args[] = {&ptr, &ptr, &ptr, &n};
    CHECK_OK((cuctx_launch)(fn, s, grid, block, 96, args));
    CHECK_OK((cuctx_capture_begin)(&cap, s, &captured, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_OK(cuctx_capture_end(&cap, 1));
    cr_assert_not_null(cuctx_graph_raw(g));
    cr_assert_not_null(cuctx_graph_raw(captured));
    cr_assert_not_null(cuctx_library_raw(lib));
    cr_assert_not_null(cuctx_library_raw(lib2));
    cr_assert_not_null(cuctx_mem_pool_raw(pool));
    cr_assert_eq(cuctx_mem_size(am), 7000);
    cr_assert_eq(cuctx_mem_size(pm), 9000);
    if (sim()) {
        cr_assert_eq(last_call("cuGraphCreate", mark).handle, H(cuctx_graph_raw(g)));
        cr_assert_eq(last_call("cuLibraryLoadFromFile", mark).handle, H(cuctx_library_raw(lib)));
        cr_assert_eq(last_call("cuLibraryLoadData", mark).handle, H(cuctx_library_raw(lib2)));
        struct cusim_call c = last_call("cuMemPoolCreate", mark);
        cr_assert_eq(c.handle, H(cuctx_mem_pool_raw(pool)));
        cr_assert_eq(c.arg, 0, "a pool of device 0");
        c = last_call("cuDeviceGetDefaultMemPool", mark);
        cr_assert_eq(c.arg, 0, "device 0's default pool");
        cr_assert_eq(c.handle, H(cuctx_mem_pool_raw(dflt)));
        cr_assert_eq(c.handle, sim()->default_pool(0));
        c = last_call("cuMemAllocAsync", mark);
        cr_assert_eq(c.arg, 7000);
        cr_assert_eq(c.stream, H(cuctx_stream_raw(s)));
        cr_assert_eq(c.handle, cuctx_mem_ptr(am));
        c = last_call("cuMemAllocFromPoolAsync", mark);
        cr_assert_eq(c.arg, 9000);
        cr_assert_eq(c.handle2, H(cuctx_mem_pool_raw(pool)), "from the pool given");
        cr_assert_eq(c.stream, H(cuctx_stream_raw(s)));
        cr_assert_eq(c.handle, cuctx_mem_ptr(pm));
        c = last_call("cuLaunchKernel", mark);
        cr_assert_eq(c.handle, H(fn));
        cr_assert_eq(c.handle2, H(cuctx_stream_raw(s)));
        cr_assert_eq((uint64_t)c.arg, grid.x | (uint64_t)grid.y << 32 | (uint64_t)grid.z << 48);
        cr_assert_eq(c.flags, block.x | (uint64_t)block.y << 16 | (uint64_t)block.z << 32);
        c = last_call("cuStreamBeginCapture", mark);
        cr_assert_eq(c.handle, H(cuctx_stream_raw(s)));
        cr_assert_eq(c.flags, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
        cr_assert_eq(last_call("cuStreamEndCapture", mark).handle2, H(cuctx_graph_raw(captured)));
        cr_assert_eq(calls("cuGraphCreate"), 1);
        cr_assert_eq(calls("cuLibraryLoadFromFile"), 1);
        cr_assert_eq(calls("cuLibraryLoadData"), 1);
        cr_assert_eq(calls("cuMemPoolCreate"), 1);
        cr_assert_eq(calls("cuLaunchKernel"), 1);
        cr_assert_eq(calls("cuStreamBeginCapture"), 1);
    }
    char *text = report();
    expect_plain(text, g.id, "graph");
    expect_plain(text, captured.id, "captured graph");
    expect_plain(text, lib.id, "library loaded from its file");
    expect_plain(text, lib2.id, "library loaded from its image");
    expect_plain(text, pool.id, "pool");
    expect_plain(text, dflt.id, "default pool");
    expect_plain(text, am.id, "stream-ordered memory");
    expect_plain(text, pm.id, "memory from the pool");
    cr_assert_eq(plain_lines(text), 8, "eight objects made by plain functions:\n%s", text);
    EXPECT_LINE(text, "cuctx: 11 objects alive\n");
    free(text);
    cuctx_destroy(&pm);
    cuctx_destroy(&am);
    cuctx_destroy(&dflt);
    cuctx_destroy(&pool);
    cuctx_destroy(&lib2);
    cuctx_destroy(&lib);
    cuctx_destroy(&captured);
    cuctx_destroy(&g);
    cuctx_destroy(&mod);
    cuctx_destroy(&s);
    cuctx_destroy(&ctx);
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
    cr_assert_eq(stats().parked_pools, 1, "the pool cuctx made, parked");
    if (sim()) {
        cr_assert_eq(sim()->live(CUSIM_ALL), 1);
        cr_assert_eq(sim()->live(CUSIM_POOL), 1, "the parked pool");
        cr_assert_eq(misuses(), 0);
    }
}

/* The adopts' plain forms: the handle takes the caller's object, which the
 * driver is not asked about, and owned decides whether its destroy destroys
 * it. */
Test(leaks, the_plain_functions_of_the_adopts)
{
    cuctx_ctx ctx = {0};
    cuctx_stream s = {0};
    cuctx_event ev = {0};
    cuctx_mem m = {0};
    cuctx_mem_pool pool = {0};
    NEED_DRIVER();
    CHECK_OK(cuctx_ctx_create(&ctx, 0, 0));
    CUstream raw_s = NULL;
    CUevent raw_ev = NULL;
    CUdeviceptr raw_m = 0;
    CUmemoryPool raw_pool = NULL;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CHECK_OK(((PFN_cuStreamCreate_v2000)drv_sym("cuStreamCreate", 2000))(&raw_s, 0));
    CHECK_OK(((PFN_cuEventCreate_v2000)drv_sym("cuEventCreate", 2000))(&raw_ev, 0));
    CHECK_OK(((PFN_cuMemAlloc_v3020)drv_sym("cuMemAlloc", 3020))(&raw_m, 3000));
    CHECK_OK(((PFN_cuMemPoolCreate_v11020)drv_sym("cuMemPoolCreate", 11020))(&raw_pool, &props));
    size_t mark = log_mark();
    CHECK_OK((cuctx_stream_adopt)(&s, ctx, raw_s, 1));
    CHECK_OK((cuctx_event_adopt)(&ev, ctx, raw_ev, 0));
    CHECK_OK((cuctx_mem_adopt)(&m, ctx, raw_m, 3000, 1));
    CHECK_OK((cuctx_mem_pool_adopt)(&pool, raw_pool, 1));
    cr_assert_eq(cuctx_stream_raw(s), raw_s);
    cr_assert_eq(cuctx_event_raw(ev), raw_ev);
    cr_assert_eq(cuctx_mem_ptr(m), raw_m);
    cr_assert_eq(cuctx_mem_size(m), 3000);
    cr_assert_eq(cuctx_mem_pool_raw(pool), raw_pool);
    char *text = report();
    expect_plain(text, s.id, "adopted stream");
    expect_plain(text, ev.id, "adopted event");
    expect_plain(text, m.id, "adopted memory");
    expect_plain(text, pool.id, "adopted pool");
    EXPECT_LINE(text, "(handle %#llx) in context %p, adopted to track (not cuctx's to destroy), created by a call "
                "without its site (a plain function)\n", (unsigned long long)ev.id, (void *)cuctx_ctx_raw(ctx));
    cr_assert_eq(plain_lines(text), 4, "four objects made by plain functions:\n%s", text);
    EXPECT_LINE(text, "cuctx: 5 objects alive\n");
    free(text);
    if (sim())
        cr_assert_eq(log_mark(), mark, "an adopt asked the driver something");
    CHECK_OK(cuctx_destroy(&pool));
    CHECK_OK(cuctx_destroy(&m));
    CHECK_OK(cuctx_destroy(&ev));
    CHECK_OK(cuctx_destroy(&s));
    if (sim()) {
        cr_assert_eq(calls_on("cuStreamDestroy", H(raw_s), mark), 1, "the owned stream destroyed");
        cr_assert_eq(calls_on("cuMemFree", raw_m, mark), 1, "the owned memory freed");
        cr_assert_eq(calls_on("cuMemPoolDestroy", H(raw_pool), mark), 1, "the owned pool destroyed");
        cr_assert_eq(calls_on("cuEventDestroy", H(raw_ev), mark), 0, "the tracked event destroyed");
    }
    CHECK_OK(((PFN_cuEventDestroy_v4000)drv_sym("cuEventDestroy", 4000))(raw_ev));
    CHECK_OK(cuctx_destroy(&ctx));
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
    if (sim()) {
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
        cr_assert_eq(misuses(), 0);
    }
}

/* The plain forms of the creates across contexts and devices: green
 * contexts, peer access, IPC memory and events. The simulator's second
 * device and its stand-in for a second process (cusim_set_ipc_loopback). */
Test(leaks, the_plain_functions_of_green_contexts_peer_access_and_ipc)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem m = {0}, q = {0};
    cuctx_event e = {0}, opened = {0};
    cuctx_peer p = {0};
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_ipc_loopback(1);
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_create(&b, 1, 0));
    CHECK_OK(cuctx_pop_current());
    CUcontext ra = cuctx_ctx_raw(a), rb = cuctx_ctx_raw(b);
    CHECK_OK(cuctx_mem_alloc(&m, a, 4096));
    CHECK_OK(cuctx_ipc_mem_get(m, &mh));
    CHECK_OK(cuctx_event_create(&e, a, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_ipc_event_get(e, &eh));
    size_t mark = log_mark();
    CHECK_OK((cuctx_ipc_mem_open)(&q, b, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK_OK((cuctx_ipc_event_open)(&opened, b, eh));
    CHECK_OK((cuctx_peer_enable)(&p, a, b));
    struct cusim_call c = last_call("cuIpcOpenMemHandle", mark);
    cr_assert_eq(c.flags, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    cr_assert_eq(c.ctx, H(rb), "opened in B");
    cr_assert_eq(c.handle2, cuctx_mem_ptr(m), "the exported allocation");
    cr_assert_eq(c.handle, cuctx_mem_ptr(q));
    cr_assert_eq(cuctx_mem_size(q), 4096);
    c = last_call("cuIpcOpenEventHandle", mark);
    cr_assert_eq(c.ctx, H(rb), "opened in B");
    cr_assert_eq(c.handle2, H(cuctx_event_raw(e)), "the exported event");
    cr_assert_eq(c.handle, H(cuctx_event_raw(opened)));
    c = last_call("cuCtxEnablePeerAccess", mark);
    cr_assert_eq(c.ctx, H(ra), "enabled from A");
    cr_assert_eq(c.handle, H(rb), "to B");
    cr_assert(sim()->peer_enabled(H(ra), H(rb)));
#if CUDA_VERSION >= 12040
    cuctx_ctx g = {0}, gd = {0};
    PFN_cuDeviceGetDevResource_v12040 get = (PFN_cuDeviceGetDevResource_v12040)drv_sym("cuDeviceGetDevResource", 12040);
    PFN_cuDevSmResourceSplitByCount_v12040 split =
        (PFN_cuDevSmResourceSplitByCount_v12040)drv_sym("cuDevSmResourceSplitByCount", 12040);
    PFN_cuDevResourceGenerateDesc_v12040 gen =
        (PFN_cuDevResourceGenerateDesc_v12040)drv_sym("cuDevResourceGenerateDesc", 12040);
    CUdevResource all, part;
    unsigned groups = 1;
    CUdevResourceDesc desc = NULL;
    CHECK_OK(get(0, &all, CU_DEV_RESOURCE_TYPE_SM));
    CHECK_OK(split(&part, &groups, &all, NULL, 0, 8));
    CHECK_OK(gen(&desc, &part, 1));
    mark = log_mark();
    CHECK_OK((cuctx_ctx_green)(&g, 0, 16));
    cr_assert_eq(last_call("cuDevSmResourceSplitByCount", mark).arg, 16, "the SMs asked");
    c = last_call("cuGreenCtxCreate", mark);
    cr_assert_eq(c.arg, 0, "on device 0");
    cr_assert_eq(c.flags, CU_GREEN_CTX_DEFAULT_STREAM);
    uint64_t green_g = c.handle;
    cr_assert_eq(last_call("cuCtxFromGreenCtx", mark).handle2, H(cuctx_ctx_raw(g)));
    mark = log_mark();
    CHECK_OK((cuctx_ctx_green_desc)(&gd, 0, desc));
    c = last_call("cuGreenCtxCreate", mark);
    cr_assert_eq(c.handle2, H(desc), "from the caller's descriptor");
    cr_assert_eq(c.arg, 0, "on device 0");
    uint64_t green_gd = c.handle;
    cr_assert_eq(calls("cuDevSmResourceSplitByCount"), 2, "the create from a descriptor split again");
    cr_assert_eq(sim()->live(CUSIM_GREEN), 2);
#endif
    char *text = report();
    expect_plain(text, q.id, "IPC-opened memory");
    expect_plain(text, opened.id, "IPC-opened event");
    expect_plain(text, p.id, "peer access");
    int made = 3;
#if CUDA_VERSION >= 12040
    EXPECT_LINE(text, "cuctx: leak: context %p (green, handle %#llx), created by a call without its site (a plain "
                "function)\n", (void *)cuctx_ctx_raw(g), (unsigned long long)g.id);
    EXPECT_LINE(text, "cuctx: leak: context %p (green, handle %#llx), created by a call without its site (a plain "
                "function)\n", (void *)cuctx_ctx_raw(gd), (unsigned long long)gd.id);
    made += 2;
#endif
    cr_assert_eq(plain_lines(text), made, "%d objects made by plain functions:\n%s", made, text);
    EXPECT_LINE(text, "cuctx: %d objects alive\n", made + 4);
    free(text);
#if CUDA_VERSION >= 12040
    mark = log_mark();
    CHECK_OK(cuctx_destroy(&gd));
    CHECK_OK(cuctx_destroy(&g));
    cr_assert_eq(calls_on("cuGreenCtxDestroy", green_g, mark), 1);
    cr_assert_eq(calls_on("cuGreenCtxDestroy", green_gd, mark), 1);
    cr_assert_eq(sim()->live(CUSIM_GREEN), 0);
#endif
    CUdeviceptr qp = cuctx_mem_ptr(q);
    mark = log_mark();
    CHECK_OK(cuctx_destroy(&p));
    CHECK_OK(cuctx_destroy(&opened));
    CHECK_OK(cuctx_destroy(&q));
    cr_assert_eq(calls_on("cuCtxDisablePeerAccess", H(rb), mark), 1);
    cr_assert_eq(calls_on("cuIpcCloseMemHandle", qp, mark), 1, "the mapping closed");
    CHECK_OK(cuctx_destroy(&e));
    CHECK_OK(cuctx_destroy(&m));
    CHECK_OK(cuctx_destroy(&b));
    CHECK_OK(cuctx_destroy(&a));
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    cr_assert_eq(misuses(), 0);
}

/* A program that leaks one event and one stream, with CUCTX_LEAK_CHECK=1:
 * two lines and the count on stderr at exit, and its own exit status. */
static cuctx_ctx leak_ctx;

static void leak_and_exit(int err_fd)
{
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    dup2(err_fd, 2);
    setenv("CUCTX_LEAK_CHECK", "1", 1);
    if (cuctx_ctx_create(&leak_ctx, 0, 0) != CUDA_SUCCESS)
        _exit(100);
    cuctx_event_create(&ev, leak_ctx, 0);
    cuctx_stream_create(&s, leak_ctx, 0, 0);
    exit(3);
}

/* The child makes its objects after the fork, which the real driver refuses
 * once the parent has used it: there tests/process_demos.sh runs the same
 * check in a fresh process. */
Test(leaks, at_exit_with_leak_check_the_report_goes_to_stderr_and_the_status_stays)
{
    int err_pipe[2];
    NEED_DRIVER();
    NEED_SIM();
    cr_assert_eq(pipe(err_pipe), 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(err_pipe[0]);
        leak_and_exit(err_pipe[1]);
    }
    close(err_pipe[1]);
    char buf[4096] = {0};
    size_t n = 0;
    ssize_t r;
    while ((r = read(err_pipe[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    cr_assert_eq(WEXITSTATUS(status), 3, "the exit status is the program's");
    cr_assert_not_null(strstr(buf, "cuctx: leak: event "), "%s", buf);
    cr_assert_not_null(strstr(buf, "cuctx: leak: stream "), "%s", buf);
    cr_assert_not_null(strstr(buf, "in leak_and_exit()\n"), "%s", buf);
    cr_assert_not_null(strstr(buf, "cuctx: leak: context "), "%s", buf);
    cr_assert_not_null(strstr(buf, "cuctx: 3 objects alive\n"), "%s", buf);
}

/* Peer access whose context it is enabled from was destroyed first: the
 * report says so where that context's address would be, and still names
 * its peer; once the peer is gone too, both are named destroyed (the
 * peer's old address in parentheses). Mutant killed: lib/diagnostics.c:158
 * `call` (the "(destroyed)" left out: the line read "from context  to
 * context ..."; seed 43). */
Test(leaks, peer_access_of_a_destroyed_context_is_reported_from_a_destroyed_context)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    NEED_DRIVER();
    NEED_SIM();
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_create(&b, 1, 0));
    CHECK_OK(cuctx_pop_current());
    CUcontext rb = cuctx_ctx_raw(b);
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    char *text = report();
    EXPECT_LINE(text, "cuctx: leak: peer access (handle %#llx) from context (destroyed) to context %p, created at %s:",
                (unsigned long long)p.id, (void *)rb, __FILE__);
    EXPECT_LINE(text, "cuctx: 2 objects alive\n");
    free(text);
    CHECK_OK(cuctx_ctx_destroy(&b));
    text = report();
    EXPECT_LINE(text, "cuctx: leak: peer access (handle %#llx) from context (destroyed) to a destroyed context (%p), "
                "created at %s:", (unsigned long long)p.id, (void *)rb, __FILE__);
    EXPECT_LINE(text, "cuctx: 1 object alive\n");
    free(text);
    CHECK_OK(cuctx_peer_destroy(&p));
    text = report();
    cr_assert_str_eq(text, "cuctx: 0 objects alive\n");
    free(text);
}

/* ---- mutation survivors of lib/diagnostics.c (h2) ---- */

/* The report is flushed before cuctx_leak_report returns: the file's
 * descriptor, read past its stdio buffer, already holds the whole report.
 * Mutant killed: lib/diagnostics.c:193 `call` (the fflush left out: the
 * text stayed in the FILE's buffer until its fclose). */
Test(leaks, the_report_is_flushed_to_its_file_before_the_call_returns)
{
    NEED_DRIVER();
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cuctx_leak_report(f);
    char buf[256] = {0};
    ssize_t got = pread(fileno(f), buf, sizeof buf - 1, 0);
    cr_assert_str_eq(buf, "cuctx: 0 objects alive\n", "%zd bytes on the file before its fclose", got);
    fclose(f);
}

/* Peer access someone else enabled, tracked by cuctx as borrowed, is
 * reported as such. Mutant killed: lib/diagnostics.c:164 `call` (the
 * ", borrowed (...)" left out of the line). */
Test(leaks, borrowed_peer_access_is_reported_as_enabled_elsewhere)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_peer p = {0};
    NEED_DRIVER();
    NEED_SIM();
    PFN_cuCtxEnablePeerAccess_v4000 enable = (PFN_cuCtxEnablePeerAccess_v4000)drv_sym("cuCtxEnablePeerAccess", 4000);
    PFN_cuCtxDisablePeerAccess_v4000 disable =
        (PFN_cuCtxDisablePeerAccess_v4000)drv_sym("cuCtxDisablePeerAccess", 4000);
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_create(&b, 1, 0));
    CHECK_OK(cuctx_pop_current());
    CUcontext ra = cuctx_ctx_raw(a), rb = cuctx_ctx_raw(b);
    CHECK_OK(cuctx_ctx_set_current(a));
    CHECK_OK(enable(rb, 0));        /* someone else's */
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_peer_enable(&p, a, b));
    char *text = report();
    EXPECT_LINE(text,
                "cuctx: leak: peer access (handle %#llx) from context %p to context %p, borrowed (enabled elsewhere: "
                "not cuctx's to disable), created at %s:",
                (unsigned long long)p.id, (void *)ra, (void *)rb, __FILE__);
    free(text);
    CHECK_OK(cuctx_peer_destroy(&p));
    CHECK_OK(cuctx_ctx_set_current(a));
    CHECK_OK(disable(rb));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* stats.green_contexts counts context handles of green contexts only: a
 * child whose driver handle's low 32 bits equal LIFE_GREEN (4; a child's
 * raw handle lies where a context handle keeps its life, registry.h) is no
 * green context. Mutant killed: lib/diagnostics.c:33 `lcr` (`||`: every
 * slot's u.ctx.life read, the adopted allocation at 4 counted green). */
Test(leaks, a_child_whose_raw_handle_aliases_a_green_life_is_no_green_context)
{
    cuctx_ctx c = {0};
    cuctx_mem m = {0};
    NEED_DRIVER();
    CHECK_OK(cuctx_ctx_create(&c, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_mem_adopt(&m, c, (CUdeviceptr)4, 16, 0));     /* tracked only: the driver is never asked */
    struct cuctx_stats st = stats();
    cr_assert_eq(st.green_contexts, 0, "%zu green contexts counted", st.green_contexts);
    cr_assert_eq(st.contexts, 1);
    cr_assert_eq(st.mems, 1);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* stats.contexts takes a second entry only from a pair (peer access): a
 * child of another kind (an event) made in the slot of a destroyed pair
 * finds that pair's second entry id still in the slot's aux record, which
 * only pairs read. Here that entry is alive and named by nothing: a context
 * made by the driver outside cuctx, met by a {0} create (its entry kept,
 * uncounted), whose handle (cuctx_event_ctx) made the pair and is
 * destroyed. Mutant killed: lib/diagnostics.c:36 `lcr` (`||`: every child
 * that is no pair had its aux read as a pair's, the foreign context counted). */
Test(leaks, a_child_in_a_destroyed_pairs_slot_names_no_second_context)
{
    cuctx_ctx a = {0}, bf = {0};
    cuctx_peer p = {0};
    cuctx_event met = {0}, ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    CUcontext raw = raw_ctx_create(1, LEFT_CURRENT);
    CHECK_OK(cuctx_event_create(&met, (cuctx_ctx){0}, 0));
    CHECK_OK(cuctx_event_ctx(met, &bf));   /* (a borrow would make the entry end with its last name) */
    CHECK_OK(cuctx_event_destroy(&met));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_ctx_create(&a, 0, 0));
    CHECK_OK(cuctx_pop_current());
    CHECK_OK(cuctx_peer_enable(&p, a, bf));
    CHECK_OK(cuctx_ctx_destroy(&bf));
    uint64_t pair = p.id;
    CHECK_OK(cuctx_peer_destroy(&p));
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    cr_assert_eq((ev.id >> 32) & 0x3ffffff, (pair >> 32) & 0x3ffffff, "the event %#llx is not in the pair's slot (%#llx)",
                 (unsigned long long)ev.id, (unsigned long long)pair);
    struct cuctx_stats st = stats();
    cr_assert_eq(st.contexts, 1, "%zu contexts counted (a only)", st.contexts);
    cr_assert_eq(st.events, 1);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
    raw_ctx_destroy(raw);
}
