/* SPDX-License-Identifier: MIT */
/* library.c - one cuLibrary, its kernel launched in two contexts: a
 * library and its kernels belong to no context (CUDA 12.0+), so the
 * library is loaded before either context exists and outlives the first.
 * With two GPUs the contexts are on devices 0 and 1; with one, both are on
 * device 0. Then a PTX that does not assemble: its load succeeds, as on the
 * real driver, and the kernel lookup fails with the JIT log in the message.
 * The program's own driver calls go through CUCTX_CALL; it links cuctx
 * alone.
 *
 * On the cuctx test driver no kernel runs: there the program checks that
 * the copies round-trip and y kept what the memset put there, and says
 * that the kernel's values are checked on a GPU. */
#include <cuctx.h>
#include <stdio.h>
#include <string.h>

#include "affine_ptx.h"

#define N 3000u
#define BLOCK 128u

/* A kernel that ptxas refuses: an instruction PTX does not have. */
static const char broken_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry broken()\n"
    "{\n"
    "    cusim_bad;\n"
    "    ret;\n"
    "}\n";

static int fail(const char *what)
{
    fprintf(stderr, "library: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

/* y = 2x + 1 by the library's kernel in a context of device dev; returns
 * how many values are right (on the test driver: how many kept the
 * memset's value), or -1. */
static long run_in_new_context(CUdevice dev, CUkernel affine, int kernels_run)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem x = {0}, y = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    if (cuctx_ctx_create(&ctx, dev, 0) != CUDA_SUCCESS)
        return fail("a context"), -1;
    cuctx_pop_current();    /* a create pushes its context; the scope below makes it current */
    CUCTX_SCOPED(ctx) {
        if (cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
            || cuctx_mem_alloc(&x, ctx, N * sizeof(float)) != CUDA_SUCCESS
            || cuctx_mem_alloc(&y, ctx, N * sizeof(float)) != CUDA_SUCCESS
            || cuctx_host_mem_alloc(&host, ctx, 2 * N * sizeof(float), 0) != CUDA_SUCCESS)
            return fail("stream and memory"), -1;
        float *in = cuctx_host_mem_ptr(host), *out = in + N;
        for (unsigned i = 0; i < N; i++)
            in[i] = (float)i - 100.0f;
        CUdeviceptr px = cuctx_mem_ptr(x), py = cuctx_mem_ptr(y);
        unsigned n = N;
        void *args[] = {&px, &py, &n};
        CUstream raw = cuctx_stream_raw(s);
        if (CUCTX_CALL(cuMemcpyHtoDAsync, px, in, N * sizeof(float), raw) != CUDA_SUCCESS
            || CUCTX_CALL(cuMemsetD32Async, py, 0, N, raw) != CUDA_SUCCESS)
            return fail("copy in"), -1;
        /* cuctx_launch takes the CUkernel as it takes a CUfunction. */
        if (cuctx_launch(affine, s, (cuctx_dim3){(N + BLOCK - 1) / BLOCK, 1, 1}, (cuctx_dim3){BLOCK, 1, 1}, 0,
                         args) != CUDA_SUCCESS)
            return fail("the launch"), -1;
        if (CUCTX_CALL(cuMemcpyDtoHAsync, out, py, N * sizeof(float), raw) != CUDA_SUCCESS
            || cuctx_stream_synchronize(s) != CUDA_SUCCESS)
            return fail("copy out"), -1;
        long right = 0;
        for (unsigned i = 0; i < N; i++)
            right += kernels_run ? out[i] == 2.0f * in[i] + 1.0f : out[i] == 0.0f;
        return right;
    }
    return fail("entering the context"), -1;
}   /* host, y, x, s, then the context destroyed */

int main(void)
{
    CUCTX_AUTO cuctx_library lib = {0}, broken = {0};
    CUkernel affine = NULL;
    int devices = 0;
    char name[256] = "";

    /* No context exists yet: the library needs none. */
    if (cuctx_library_load_data(&lib, affine_ptx) != CUDA_SUCCESS)
        return fail("loading the library");
    if (cuctx_library_kernel(lib, "affine", &affine) != CUDA_SUCCESS)
        return fail("the kernel");
    if (CUCTX_CALL(cuDeviceGetCount, &devices) != CUDA_SUCCESS
        || CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, 0) != CUDA_SUCCESS)
        return fail("the devices");
    int kernels_run = strstr(name, "cuctx test driver") == NULL;
    CUdevice second = devices > 1 ? 1 : 0;
    printf("library: %d device(s); device 0 is %s; the kernel runs in a context of device 0, then of device %d\n",
           devices, name, second);

    long first = run_in_new_context(0, affine, kernels_run);
    long other = run_in_new_context(second, affine, kernels_run);
    if (first < 0 || other < 0)
        return 1;
    printf("library: %s in %ld and %ld of %u values (first context destroyed before the second was made)\n",
           kernels_run ? "y = 2x + 1" : "no kernel runs on the cuctx test driver; y kept the memset's 0", first,
           other, N);

    CUkernel k = NULL;
    CUresult load = cuctx_library_load_data(&broken, broken_ptx);
    CUresult lookup = cuctx_library_kernel(broken, "broken", &k);
    printf("library: a PTX that does not assemble: load %s, kernel lookup %s\n", cuctx_result_name(load),
           cuctx_result_name(lookup));
    printf("library: the lookup's message: %s\n", cuctx_last_error_message());
    int logged = strstr(cuctx_last_error_message(), "the JIT log of the library's load") != NULL;

    int ok = first == N && other == N && load == CUDA_SUCCESS && lookup == CUDA_ERROR_INVALID_PTX && logged;
    printf("library: %s\n", ok ? "every check passed" : "a check FAILED");
    return ok ? 0 : 1;
}
