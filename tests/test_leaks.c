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
 * reported without a site. */
Test(leaks, every_create_as_a_plain_function_works_and_is_reported_without_a_site)
{
    cuctx_ctx ctx = {0}, p = {0}, b = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0}, mod2 = {0};
    cuctx_mem m = {0};
    cuctx_host_mem hm = {0};
    cuctx_graph_exec ge = {0};
    static char image[1 << 16];
    NEED_DRIVER();
    const char *vadd_path = test_data_path("vadd.ptx");
    FILE *f = fopen(vadd_path, "r");
    cr_assert_not_null(f, "%s", vadd_path);
    size_t len = fread(image, 1, sizeof image - 1, f);
    fclose(f);
    image[len] = 0;
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
    int plain = 0;
    for (const char *c = text; (c = strstr(c, ", created by a call without its site (a plain function)\n")); c++)
        plain++;
    cr_assert_eq(plain, 10, "ten objects made by plain functions:\n%s", text);
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
