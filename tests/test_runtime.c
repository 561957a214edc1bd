/* SPDX-License-Identifier: MIT */
/* test_runtime.c - cuctx beside the CUDA runtime and raw driver code in one
 * process, on a real GPU: the runtime shares the primary context, and code
 * outside cuctx destroys, recreates and resets contexts. Each test prints
 * what it measured to stderr (in the test log). Skipped on the simulator,
 * which the runtime cannot load. */
#include "testlib.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>
#include <stdio.h>

static struct {
    PFN_cuMemGetInfo_v3020 mem_info;
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxDestroy_v4000 destroy;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxSetCurrent_v4000 set_current;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemsetD8_v3020 memset8;
    PFN_cuDevicePrimaryCtxReset_v11000 reset;
    PFN_cuDevicePrimaryCtxGetState_v7000 state;
} drv;

static void need_gpu(void)
{
    NEED_DRIVER();
    if (sim())
        cr_skip_test("needs a real GPU and the CUDA runtime");
    drv.mem_info = (PFN_cuMemGetInfo_v3020)drv_sym("cuMemGetInfo", 3020);
    drv.create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    drv.destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    drv.pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    drv.set_current = (PFN_cuCtxSetCurrent_v4000)drv_sym("cuCtxSetCurrent", 4000);
    drv.mem_alloc = (PFN_cuMemAlloc_v3020)drv_sym("cuMemAlloc", 3020);
    drv.mem_free = (PFN_cuMemFree_v3020)drv_sym("cuMemFree", 3020);
    drv.memset8 = (PFN_cuMemsetD8_v3020)drv_sym("cuMemsetD8", 3020);
    drv.reset = (PFN_cuDevicePrimaryCtxReset_v11000)drv_sym("cuDevicePrimaryCtxReset", 11000);
    drv.state = (PFN_cuDevicePrimaryCtxGetState_v7000)drv_sym("cuDevicePrimaryCtxGetState", 7000);
}

/* Free device memory as the driver reports it, with ctx current. */
static size_t free_bytes(CUcontext ctx)
{
    size_t free = 0, total = 0;
    cr_assert_eq(drv.set_current(ctx), CUDA_SUCCESS);
    cr_assert_eq(drv.mem_info(&free, &total), CUDA_SUCCESS);
    return free;
}

#define GIB ((size_t)1 << 30)

Test(runtime, primary_allocation_is_freed_after_cuctx_release_while_the_runtime_holds_it)
{
    cuctx_ctx p = {0};
    cuctx_mem m = {0};
    need_gpu();
    cr_assert_eq(cudaFree(0), cudaSuccess, "the runtime retains device 0's primary context");
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext raw = cuctx_ctx_raw(p);
    size_t before = free_bytes(raw);
    CHECK_OK(cuctx_mem_alloc(&m, p, GIB));
    size_t during = free_bytes(raw);
    CUdeviceptr ptr = cuctx_mem_ptr(m);
    CHECK_OK(cuctx_ctx_destroy(&p));    /* cuctx's last retain; the runtime's keeps it alive */
    CHECK_OK(cuctx_mem_destroy(&m));
    size_t after = free_bytes(raw);
    /* Other test processes may create contexts meanwhile, which moves the
     * free figure; a second free of the pointer is the exact check. */
    cr_assert_eq(drv.mem_free(ptr), CUDA_ERROR_INVALID_VALUE, "cuctx freed the allocation already");
    fprintf(stderr, "runtime primary: free before %zu MiB, with 1 GiB allocated %zu MiB, after destroy %zu MiB; stale skips %llu\n",
            before >> 20, during >> 20, after >> 20, (unsigned long long)stats().stale_skips);
    /* The free figures are printed, not asserted: in make check-gpu other
     * test processes make and end contexts on the same device meanwhile (in
     * the GPU proof of 2026-11-30 one of them moved "before" by more than
     * the 1 GiB). The second free above is the exact check. */
    cr_assert_eq(stats().stale_skips, 0);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess, "the runtime still works");
    drv.set_current(NULL);
}

/* A borrowed context destroyed by its owner, and a new context at the same
 * address with an allocation at the same device address: the stale free
 * must not free the new owner's memory. */
Test(runtime, stale_free_of_a_borrowed_context_spares_the_new_owner_at_the_same_addresses)
{
    cuctx_ctx b = {0};
    cuctx_mem m = {0};
    CUcontext x = NULL, y = NULL;
    CUdeviceptr mine = 0;
    int same_ctx = 0, same_ptr = 0;
    need_gpu();
    for (int tries = 0; tries < 8 && !(same_ctx && same_ptr); tries++) {
        cr_assert_eq(drv.create(&x, 0, 0), CUDA_SUCCESS);
        CHECK_OK(cuctx_ctx_borrow(&b, x));
        CHECK_OK(cuctx_mem_alloc(&m, b, 1 << 20));
        CUdeviceptr old = cuctx_mem_ptr(m);
        cr_assert_eq(drv.destroy(x), CUDA_SUCCESS);     /* behind cuctx's back */
        cr_assert_eq(drv.create(&y, 0, 0), CUDA_SUCCESS);
        cr_assert_eq(drv.mem_alloc(&mine, 1 << 20), CUDA_SUCCESS);
        same_ctx = y == x;
        same_ptr = mine == old;
        uint64_t skips = stats().stale_skips;
        CHECK_OK(cuctx_mem_destroy(&m));
        cr_assert_eq(stats().stale_skips, skips + 1, "the stale free was skipped");
        cr_assert_eq(drv.memset8(mine, 7, 1 << 20), CUDA_SUCCESS, "the new owner's memory is intact");
        cr_assert_eq(drv.mem_free(mine), CUDA_SUCCESS, "and still its to free");
        CHECK_OK(cuctx_ctx_destroy(&b));
        cr_assert_eq(drv.destroy(y), CUDA_SUCCESS);
        fprintf(stderr, "borrowed, try %d: context address %s, allocation address %s\n", tries,
                same_ctx ? "reused" : "new", same_ptr ? "reused" : "new");
    }
    if (!(same_ctx && same_ptr))
        cr_log_warn("the driver did not reuse both addresses in 8 tries; the skip was still checked each time");
}

Test(runtime, raw_primary_reset_skips_the_children_and_the_release_still_balances)
{
    cuctx_ctx p = {0};
    cuctx_stream s = {0};
    cuctx_event ev = {0};
    unsigned flags = 0;
    int active = 1;
    need_gpu();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_stream_create(&s, p, 0, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    cr_assert_eq(drv.reset(0), CUDA_SUCCESS);      /* behind cuctx's back */
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_stream_destroy(&s));           /* the raw driver crashes here */
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(stats().stale_skips, skips + 2);
    CHECK_OK(cuctx_ctx_destroy(&p));              /* a reset does not release: this does */
    cr_assert_eq(drv.state(0, &flags, &active), CUDA_SUCCESS);
    fprintf(stderr, "after a raw reset: 2 children skipped, primary active after cuctx's release: %d\n", active);
    cr_assert_eq(active, 0);
}

Test(runtime, cuctx_primary_reset_ends_the_generation_and_a_new_retain_works)
{
    cuctx_ctx p = {0}, q = {0};
    cuctx_mem m = {0}, n = {0};
    need_gpu();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_mem_alloc(&m, p, 1 << 20));
    CHECK_OK(cuctx_ctx_primary_reset(0));
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(stats().stale_skips, skips + 1);
    CHECK_OK(cuctx_ctx_primary(&q, 0));
    CHECK_OK(cuctx_mem_alloc(&n, q, 1 << 20));
    CHECK_OK(cuctx_mem_destroy(&n));
    cr_assert_eq(stats().stale_skips, skips + 1, "the new generation's child was freed by the driver");
    CHECK_OK(cuctx_ctx_destroy(&q));
    CHECK_OK(cuctx_ctx_destroy(&p));
}
