/* SPDX-License-Identifier: MIT */
/* test_calls.c - a program's own driver calls through cuctx's driver:
 * CUCTX_CALL, cuctx_driver_symbol_flags, and launches with cuctx_launch.
 * Each asserts what the simulated driver was asked. */
#include "testlib.h"
#include "calls_ptds.h"

#include <stdlib.h>
#include <string.h>

#define H(p) ((uint64_t)(uintptr_t)(p))

/* cuGetProcAddress calls from log position `from` on that asked for name. */
static unsigned long lookups_since(size_t from)
{
    unsigned long n = 0;
    for (size_t i = from; i < sim()->log_count(); i++) {
        struct cusim_call c;
        if (sim()->log_get(i, &c) == 0 && strcmp(c.fn, "cuGetProcAddress") == 0)
            n++;
    }
    return n;
}

/* A context of our own, current, with a 64-byte allocation. */
static void ctx_with_mem(cuctx_ctx *c, cuctx_mem *m)
{
    new_ctx(c, 0, "A", LEFT_CURRENT);
    CHECK_OK(cuctx_mem_alloc(m, *c, 64));
}

/* ---- CUCTX_CALL ------------------------------------------------------- */

/* Catches a CUCTX_CALL that does not reach the loaded driver, or passes its
 * arguments wrongly (cuMemcpyHtoD: cuda.h renames it to cuMemcpyHtoD_v2). */
Test(calls, call_reaches_the_driver_with_its_arguments)
{
    cuctx_ctx c = {0};
    cuctx_mem m = {0};
    unsigned char host[48] = {1, 2, 3};
    NEED_SIM();
    ctx_with_mem(&c, &m);
    unsigned long before = calls("cuMemcpyHtoD");
    size_t mark = log_mark();
    CHECK_OK(CUCTX_CALL(cuMemcpyHtoD, cuctx_mem_ptr(m), host, sizeof host));
    cr_assert_eq(calls("cuMemcpyHtoD"), before + 1);
    struct cusim_call k = last_call("cuMemcpyHtoD", mark);
    cr_assert_eq(k.handle, (uint64_t)cuctx_mem_ptr(m), "destination");
    cr_assert_eq(k.handle2, H(host), "source");
    cr_assert_eq(k.arg, (long long)sizeof host, "byte count");
    struct cusim_call q = last_call("cuGetProcAddress", mark);
    cr_assert_eq(q.arg, 3020, "resolved at the ABI of cuMemcpyHtoD_v2's typedef, not %lld", q.arg);
    cr_assert_eq(q.flags, CU_GET_PROC_ADDRESS_DEFAULT);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

static CUresult query_site(CUstream s)
{
    return CUCTX_CALL(cuStreamQuery, s);    /* one call site, called repeatedly */
}

/* Catches a call site that resolves its entry point on every call (no
 * cache), or shares one cache between two call sites. */
Test(calls, each_call_site_resolves_once)
{
    cuctx_ctx c = {0};
    NEED_SIM();
    new_ctx(&c, 0, "A", LEFT_CURRENT);
    size_t mark = log_mark();
    unsigned long queries = calls("cuStreamQuery");
    for (int i = 0; i < 5; i++)
        CHECK_OK(query_site(NULL));
    cr_assert_eq(calls("cuStreamQuery"), queries + 5);
    cr_assert_eq(lookups_since(mark), 1, "cuGetProcAddress once for the site, not per call");
    CHECK_OK(CUCTX_CALL(cuStreamQuery, NULL));      /* another site: its own lookup */
    cr_assert_eq(lookups_since(mark), 2);
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Catches a CUCTX_CALL of an entry point the driver lacks that calls NULL,
 * or that gives no error or no message. */
Test(calls, entry_point_the_driver_lacks_gives_its_error)
{
    CUdeviceptr p = 0;
    size_t bytes = 0;
    NEED_SIM();
    CHECK_OK(cuctx_init());
    size_t mark = log_mark();
    /* The simulator answers every entry point of the real driver (a stub for
     * those it does not implement), so a driver's answer for one it lacks is
     * given on purpose. */
    sim()->fail_call("cuGetProcAddress", 1, CUDA_ERROR_NOT_FOUND);
    CUresult rc = CUCTX_CALL(cuModuleGetGlobal, &p, &bytes, NULL, "x");
    cr_assert_eq(rc, CUDA_ERROR_NOT_FOUND, "%s", cuctx_result_name(rc));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_NOT_FOUND);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "CUCTX_CALL(cuModuleGetGlobal)"), "%s",
                       cuctx_last_error_message());
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuModuleGetGlobal at ABI version 3020"), "%s",
                       cuctx_last_error_message());
    cr_assert_eq(lookups_since(mark), 1, "asked the driver");
}

/* Catches a CUCTX_CALL that calls through an unloaded driver. */
Test(calls, call_without_a_driver_gives_the_load_error)
{
    cr_assert_eq(setenv("CUCTX_DRIVER", "/nonexistent/libcuda-missing.so.1", 1), 0);
    cr_assert_eq(CUCTX_CALL(cuStreamQuery, NULL), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "libcuda-missing"), "%s", cuctx_last_error_message());
}

/* Catches CUDA_API_PER_THREAD_DEFAULT_STREAM not reaching the lookup: the
 * per-thread variant asked for with its flag and its typedef's version. */
Test(calls, per_thread_default_stream_build_asks_for_the_ptds_variant)
{
    cuctx_ctx c = {0};
    cuctx_mem m = {0};
    unsigned char host[8] = {0};
    NEED_SIM();
    ctx_with_mem(&c, &m);
    size_t mark = log_mark();
    CHECK_OK(ptds_stream_query(NULL));
    struct cusim_call q = last_call("cuGetProcAddress", mark);
    cr_assert_eq(q.flags, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "flags %#llx", q.flags);
    cr_assert_eq(q.arg, 7000, "PFN_cuStreamQuery_v7000_ptsz's version, not %lld", q.arg);
    mark = log_mark();
    CHECK_OK(ptds_memcpy_htod(cuctx_mem_ptr(m), host, sizeof host));
    q = last_call("cuGetProcAddress", mark);
    cr_assert_eq(q.flags, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    cr_assert_eq(q.arg, 7000, "PFN_cuMemcpyHtoD_v7000_ptds's version, not %lld", q.arg);
    cr_assert_eq(last_call("cuMemcpyHtoD", mark).arg, (long long)sizeof host);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- cuctx_driver_symbol_flags ------------------------------------------- */

/* Catches flags dropped on the way to cuGetProcAddress. */
Test(calls, driver_symbol_flags_reach_cuGetProcAddress)
{
    static const unsigned long long flags[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
    NEED_SIM();
    CHECK_OK(cuctx_init());
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        void *p = NULL;
        size_t mark = log_mark();
        CHECK_OK(cuctx_driver_symbol_flags("cuStreamQuery", 7000, flags[i], &p));
        cr_assert_not_null(p);
        struct cusim_call q = last_call("cuGetProcAddress", mark);
        cr_assert_eq(q.flags, flags[i], "asked %#llx, the driver saw %#llx", flags[i], q.flags);
        cr_assert_eq(q.arg, 7000);
    }
    void *p = NULL;
    size_t mark = log_mark();
    CHECK_OK(cuctx_driver_symbol("cuStreamQuery", 2000, &p));
    cr_assert_eq(last_call("cuGetProcAddress", mark).flags, CU_GET_PROC_ADDRESS_DEFAULT, "the plain form's flags");
}

/* Catches bad flags passed on to the driver instead of refused. */
Test(calls, driver_symbol_flags_refuses_other_flags)
{
    void *p = (void *)1;
    NEED_SIM();
    CHECK_OK(cuctx_init());
    size_t mark = log_mark();
    cr_assert_eq(cuctx_driver_symbol_flags("cuStreamQuery", 7000, 4, &p), CUDA_ERROR_INVALID_VALUE);
    cr_assert_null(p, "cleared");
    cr_assert_not_null(strstr(cuctx_last_error_message(), "CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM"), "%s",
                       cuctx_last_error_message());
    cr_assert_eq(lookups_since(mark), 0, "nothing asked of the driver");
}

/* Catches the driver's own error replaced: asked for an ABI version newer
 * than itself, cuGetProcAddress answers CUDA_ERROR_INVALID_VALUE (its status
 * says the symbol was not found), and the caller gets that error, not
 * CUDA_ERROR_NOT_FOUND, which cuctx gives only for a success without an
 * entry point. */
Test(calls, driver_symbol_passes_on_the_drivers_own_error)
{
    void *p = (void *)1;
    NEED_SIM();
    CHECK_OK(cuctx_init());
    size_t mark = log_mark();
    CUresult rc = cuctx_driver_symbol("cuStreamQuery", 999999, &p);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s (%s)", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_null(p, "cleared");
    struct cusim_call q = last_call("cuGetProcAddress", mark);
    cr_assert_eq(q.arg, 999999, "the driver was asked for version %lld", q.arg);
    cr_assert_eq(q.rc, CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(lookups_since(mark), 1);
}

/* cuctx__call_resolve (exported, behind CUCTX_CALL) reads the ABI version
 * from the typedef's name only when that name is the entry point's own,
 * "PFN_<name>_v<version>": a name without the PFN_ prefix, or the typedef
 * of another entry point, is refused before the driver is asked, the call
 * site left unresolved. Catches a check that refuses only when both the
 * prefix and the name are wrong (mutant lib/init.c:97 `lcr`, seed 41:
 * either typedef was resolved at its version). */
Test(calls, a_typedef_not_of_the_entry_point_is_refused)
{
    static const char *const wrong[] = {
        "XFN_cuStreamQuery_v2000",      /* the right name without the PFN_ prefix */
        "PFN_cuStreamQuerz_v2000",      /* another entry point's typedef, of the same length */
    };
    NEED_SIM();
    CHECK_OK(cuctx_init());
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        void *slot = NULL;
        size_t mark = log_mark();
        CUresult rc = cuctx__call_resolve("cuStreamQuery", wrong[i], CU_GET_PROC_ADDRESS_DEFAULT, &slot);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s: %s", wrong[i], cuctx_result_name(rc));
        cr_assert_not_null(strstr(cuctx_last_error_message(), "is not the typedef of a driver entry point"), "%s",
                           cuctx_last_error_message());
        cr_assert_null(slot, "%s: the call site was resolved", wrong[i]);
        cr_assert_eq(lookups_since(mark), 0, "%s: the driver was asked", wrong[i]);
    }
    void *slot = NULL;     /* the right typedef's name resolves */
    size_t mark = log_mark();
    CHECK_OK(cuctx__call_resolve("cuStreamQuery", "PFN_cuStreamQuery_v2000", CU_GET_PROC_ADDRESS_DEFAULT, &slot));
    cr_assert_not_null(slot);
    cr_assert_eq(last_call("cuGetProcAddress", mark).arg, 2000);
    cr_assert_eq(lookups_since(mark), 1);
}

/* ---- cuctx_launch ------------------------------------------------------ */

static const cuctx_dim3 grid = {3, 2, 5}, block = {64, 2, 1};

static uint64_t packed_grid(cuctx_dim3 g) { return g.x | (uint64_t)g.y << 32 | (uint64_t)g.z << 48; }
static uint64_t packed_block(cuctx_dim3 b) { return b.x | (uint64_t)b.y << 16 | (uint64_t)b.z << 32; }

/* A module of c loaded from the test data, and its function vadd. */
static CUfunction vadd_of(cuctx_ctx c, cuctx_module *mod)
{
    CUfunction f = NULL;
    CHECK_OK(cuctx_module_load(mod, c, test_data_path("vadd.ptx")));
    CHECK_OK(cuctx_module_function(*mod, "vadd", &f));
    return f;
}

/* vadd of a context made for the test and left current, and a stream of
 * that context to launch it on. */
static CUfunction vadd_on_a_stream(cuctx_ctx *c, cuctx_module *mod, cuctx_stream *s)
{
    new_ctx(c, 0, "A", LEFT_CURRENT);
    CUfunction f = vadd_of(*c, mod);
    CHECK_OK(cuctx_stream_create(s, *c, 0, 0));
    return f;
}

/* Catches a launch that mixes up the stream, grid, block or shared size. */
Test(launch, launch_passes_stream_grid_and_block)
{
    cuctx_ctx c = {0};
    cuctx_module mod = {0};
    cuctx_stream s = {0};
    NEED_SIM();
    CUfunction f = vadd_on_a_stream(&c, &mod, &s);
    size_t mark = log_mark();
    CHECK_OK(cuctx_launch(f, s, grid, block, 128, NULL));
    struct cusim_call k = last_call("cuLaunchKernel", mark);
    cr_assert_eq(k.handle, H(f));
    cr_assert_eq(k.handle2, H(cuctx_stream_raw(s)), "the stream's CUstream");
    cr_assert_eq((uint64_t)k.arg, packed_grid(grid), "grid %#llx", (unsigned long long)k.arg);
    cr_assert_eq(k.flags, packed_block(block), "block %#llx", k.flags);
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Catches {0} sent anywhere but the current context's NULL stream. */
Test(launch, empty_stream_is_the_current_contexts_default_stream)
{
    cuctx_ctx c = {0};
    cuctx_module mod = {0};
    NEED_SIM();
    CUcontext A = new_ctx(&c, 0, "A", LEFT_CURRENT);
    CUfunction f = vadd_of(c, &mod);
    size_t mark = log_mark();
    CHECK_OK(cuctx_launch(f, (cuctx_stream){0}, grid, block, 0, NULL));
    struct cusim_call k = last_call("cuLaunchKernel", mark);
    cr_assert_eq(k.handle2, 0, "the NULL stream");
    cr_assert_eq(k.ctx, H(A));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Catches a launch on a stale stream that reaches the driver. */
Test(launch, stale_stream_is_refused_before_the_driver)
{
    cuctx_ctx c = {0};
    cuctx_module mod = {0};
    cuctx_stream s = {0};
    NEED_SIM();
    CUfunction f = vadd_on_a_stream(&c, &mod, &s);
    cuctx_stream copy = s;
    CHECK_OK(cuctx_stream_destroy(&s));
    unsigned long before = calls("cuLaunchKernel");
    cr_assert_eq(cuctx_launch(f, copy, grid, block, 0, NULL), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(calls("cuLaunchKernel"), before, "no cuLaunchKernel");
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_launch"), "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* Catches a launch in whatever context is current instead of the stream's,
 * or one that leaves the stream's context pushed. */
Test(launch, launch_runs_in_the_streams_context_and_restores_the_stack)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_module mod = {0};
    cuctx_stream s = {0};
    NEED_SIM();
    unique_addresses();
    CUcontext A = new_ctx(&a, 0, "A", POPPED);
    CUfunction f = vadd_of(a, &mod);
    name_handle('s', 0, "0");
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    CUcontext B = new_ctx(&b, 0, "B", LEFT_CURRENT);
    size_t mark = log_mark();
    CHECK_OK(cuctx_launch(f, s, grid, block, 0, NULL));
    EXPECT_TRACE(mark, "cuCtxPushCurrent(A),cuCtxPopCurrent(A)");
    cr_assert_eq(last_call("cuLaunchKernel", mark).ctx, H(A), "launched with A current");
    EXPECT_CURRENT(B);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* Catches a launch on a stream whose context has ended that reaches the
 * driver (a dead context made current for it). */
Test(launch, stream_of_a_destroyed_context_is_refused)
{
    cuctx_ctx a = {0}, b = {0};
    cuctx_module mod = {0};
    cuctx_stream s = {0};
    NEED_SIM();
    new_ctx(&a, 0, "A", POPPED);
    CUfunction f = vadd_of(a, &mod);
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    new_ctx(&b, 0, "B", LEFT_CURRENT);
    CHECK_OK(cuctx_ctx_destroy(&a));
    unsigned long before = calls("cuLaunchKernel"), pushes = calls("cuCtxPushCurrent");
    CUresult rc = cuctx_launch(f, s, grid, block, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls("cuLaunchKernel"), before);
    cr_assert_eq(calls("cuCtxPushCurrent"), pushes, "the dead context is never made current");
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&b));
}

/* Catches a NULL function handed to the driver. */
Test(launch, null_function_is_invalid_value)
{
    NEED_SIM();
    CHECK_OK(cuctx_init());
    unsigned long before = calls("cuLaunchKernel");
    cr_assert_eq(cuctx_launch(NULL, (cuctx_stream){0}, grid, block, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(calls("cuLaunchKernel"), before);
}

/* ---- mutation survivors of lib/launch.c (h6) ---- */

/* A launch as the process's first call to cuctx (Criterion runs each test
 * in a process of its own) starts cuctx first: with no driver to load, it
 * answers the load's error, not that the driver lacks cuLaunchKernel.
 * Mutant killed: lib/launch.c:36 `call` (CUCTX_INIT_OR_RETURN removed: the
 * table not yet filled read as a driver without cuLaunchKernel). */
Test(launch, a_launch_as_the_first_call_without_a_driver_gives_the_load_error)
{
    cr_assert_eq(setenv("CUCTX_DRIVER", "/nonexistent/libcuda-missing.so.1", 1), 0);
    CUfunction f = (CUfunction)(uintptr_t)0x1000;   /* never reaches a driver */
    CUresult rc = cuctx_launch(f, (cuctx_stream){0}, grid, block, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_NOT_INITIALIZED, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_not_null(strstr(cuctx_last_error_message(), "libcuda-missing"), "%s", cuctx_last_error_message());
    rc = cuctx_launch_kernel((CUkernel)(uintptr_t)0x1000, (cuctx_stream){0}, grid, block, 0, NULL);
    cr_assert_eq(rc, CUDA_ERROR_NOT_INITIALIZED, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
}

/* shared_bytes is handed to cuLaunchKernel as an unsigned int: the largest
 * one, 2^32 - 1, goes to the driver (which judges it: the simulated device
 * refuses it), 2^32 is refused by cuctx before the driver. Mutant killed:
 * lib/launch.c:17 `ror` (`>=`: 2^32 - 1 refused too). */
Test(launch, shared_bytes_up_to_the_largest_unsigned_int_reach_the_driver)
{
    cuctx_ctx c = {0};
    cuctx_module mod = {0};
    cuctx_stream s = {0};
    NEED_SIM();
    CUfunction f = vadd_on_a_stream(&c, &mod, &s);
    size_t mark = log_mark();
    CUresult rc = cuctx_launch(f, s, grid, block, 0xffffffffu, NULL);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls_on("cuLaunchKernel", H(f), mark), 1, "2^32 - 1 shared bytes did not reach the driver");
    cr_assert_eq(last_call("cuLaunchKernel", mark).rc, CUDA_ERROR_INVALID_VALUE);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuLaunchKernel(grid 3x2x5, block 64x2x1, 4294967295 shared bytes) failed"),
                       "%s", cuctx_last_error_message());
    if (sizeof(size_t) > 4) {
        mark = log_mark();
        rc = cuctx_launch(f, s, grid, block, (size_t)0xffffffffu + 1, NULL);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s", cuctx_result_name(rc));
        cr_assert_eq(calls_on("cuLaunchKernel", H(f), mark), 0, "2^32 shared bytes reached the driver");
        cr_assert_not_null(strstr(cuctx_last_error_message(), "more than a launch can have"), "%s",
                           cuctx_last_error_message());
    }
    CHECK_OK(cuctx_launch(f, s, grid, block, 128, NULL));
    cr_assert_eq(misuses(), 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&c));
}

/* ---- mutation survivors of lib/init.c (h4) ---- */

/* cuctx__call_resolve refuses a typedef name whose version is not a
 * positive number of at most 1000000 followed by nothing, _ptds or _ptsz,
 * before the driver is asked. Catches mutants lib/init.c:101 `lcr` (a
 * negative or too large version let through when nothing follows it) and
 * lib/init.c:102 `const` (a refused name read as version 1). */
Test(calls, a_typedef_of_a_version_out_of_bounds_or_with_another_suffix_is_refused)
{
    static const char *const wrong[] = {
        "PFN_cuStreamQuery_v-5",        /* a negative version */
        "PFN_cuStreamQuery_v2000000",   /* a version beyond every driver's */
        "PFN_cuStreamQuery_v2000_foo",  /* a suffix other than _ptds and _ptsz */
    };
    NEED_SIM();
    CHECK_OK(cuctx_init());
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        void *slot = NULL;
        size_t mark = log_mark();
        CUresult rc = cuctx__call_resolve("cuStreamQuery", wrong[i], CU_GET_PROC_ADDRESS_DEFAULT, &slot);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s: %s", wrong[i], cuctx_result_name(rc));
        cr_assert_not_null(strstr(cuctx_last_error_message(), "is not the typedef of a driver entry point"), "%s: %s",
                           wrong[i], cuctx_last_error_message());
        cr_assert_null(slot, "%s: the call site was resolved", wrong[i]);
        cr_assert_eq(lookups_since(mark), 0, "%s: the driver was asked", wrong[i]);
    }
    void *slot = NULL;     /* the per-thread suffix is the typedef's own */
    size_t mark = log_mark();
    CHECK_OK(cuctx__call_resolve("cuStreamQuery", "PFN_cuStreamQuery_v7000_ptsz",
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &slot));
    cr_assert_not_null(slot);
    cr_assert_eq(last_call("cuGetProcAddress", mark).arg, 7000);
}

/* A failed lookup's message names the stream variant asked for, and none
 * for the default flags. Catches mutants lib/init.c:75 and :76 `ror` (the
 * variant named for flags that did not ask for it). */
Test(calls, a_failed_lookups_message_names_the_stream_variant_asked_for)
{
    static const struct { unsigned long long flags; const char *says; } cases[] = {
        {CU_GET_PROC_ADDRESS_DEFAULT, "at ABI version 999999: "},
        {CU_GET_PROC_ADDRESS_LEGACY_STREAM, "at ABI version 999999 (legacy stream): "},
        {CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "at ABI version 999999 (per-thread default stream): "},
    };
    NEED_SIM();
    CHECK_OK(cuctx_init());
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        void *p = (void *)1;
        size_t mark = log_mark();
        CUresult rc = cuctx_driver_symbol_flags("cuStreamQuery", 999999, cases[i].flags, &p);
        cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s", cuctx_result_name(rc));
        cr_assert_null(p);
        cr_assert_eq(lookups_since(mark), 1);
        cr_assert_not_null(strstr(cuctx_last_error_message(), cases[i].says), "flags %#llx: %s", cases[i].flags,
                           cuctx_last_error_message());
    }
}

/* A failed start's message: the loader's, which names cuctx_init, for
 * cuctx_init itself; another function's puts that function's name in
 * front. Catches mutants lib/init.c:38 `lcr` and `const` (cuctx_init's
 * name put in front of its own failure, once more). */
Test(calls, a_failed_start_is_told_with_the_callers_name_but_for_cuctx_init)
{
    int v = 0;
    cr_assert_eq(setenv("CUCTX_DRIVER", "/nonexistent/libcuda-missing.so.1", 1), 0);
    cr_assert_eq(cuctx_init(), CUDA_ERROR_NOT_INITIALIZED);
    const char *msg = cuctx_last_error_message();
    cr_assert_eq(strncmp(msg, "cuctx_init: CUCTX_DRIVER names /nonexistent/libcuda-missing.so.1", 64), 0,
                 "not the loader's message alone: %s", msg);
    cr_assert_eq(cuctx_driver_version(&v), CUDA_ERROR_NOT_INITIALIZED);
    msg = cuctx_last_error_message();
    cr_assert_eq(strncmp(msg, "cuctx_driver_version: cuctx_init: CUCTX_DRIVER names ", 53), 0, "%s", msg);
}

/* ---- mutation survivors of lib/driver.c (h4) ---- */

/* A cuGetProcAddress that answers CUDA_SUCCESS but hands out no entry
 * point (the fault plan returns before the simulator writes its outputs:
 * the pointer stays NULL, the status as cuctx set it, found) is a symbol
 * not found, not a success with a NULL pointer. Catches mutant
 * lib/driver.c:54 `lcr` (only a success whose status says not found and
 * whose pointer is NULL refused). */
Test(calls, a_lookups_success_without_an_entry_point_is_not_found)
{
    void *p = (void *)1;
    NEED_SIM();
    CHECK_OK(cuctx_init());
    size_t mark = log_mark();
    sim()->fail_call("cuGetProcAddress", 1, CUDA_SUCCESS);
    CUresult rc = cuctx_driver_symbol("cuStreamQuery", 2000, &p);
    cr_assert_eq(rc, CUDA_ERROR_NOT_FOUND, "%s", cuctx_result_name(rc));
    cr_assert_null(p, "no entry point handed out");
    cr_assert_eq(lookups_since(mark), 1);
    cr_assert_eq(last_call("cuGetProcAddress", mark).rc, CUDA_SUCCESS, "the driver said success");
}
