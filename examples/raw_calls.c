/* SPDX-License-Identifier: MIT */
/* raw_calls.c - a whole program: cuctx owns the context, the stream, the
 * events and the memory (all under CUCTX_AUTO), and the program makes its
 * own driver calls on them - copies, a memset and a kernel launch - linked
 * with -lcuda as any CUDA program is. The kernel is PTX text that the driver
 * compiles at load: y[i] = 2 * x[i] + 1 for i < n.
 *
 * On a GPU, link and run it as usual:
 *     cc raw_calls.c $(pkg-config --cflags --libs cuctx) -lcuda && ./a.out
 * Without one, on cuctx's test driver, which cuctx then loads too:
 *     dir=$(pkg-config --variable=testdriverdir cuctx)
 *     cc raw_calls.c $(pkg-config --cflags --libs cuctx) -L"$dir" -lcuda
 *     LD_LIBRARY_PATH="$dir" ./a.out
 * The test driver runs no kernel. The program tells it by the device name
 * and says so; there it checks the copies and that y kept the value the
 * memset gave it, and on a GPU the kernel's result as well. */
#include <cuctx.h>
#include <stdio.h>
#include <string.h>

#include "affine_ptx.h"   /* the kernel, affine_ptx */

#define N 5000u         /* not a multiple of the block: the kernel's bounds check matters */
#define BLOCK 256u
#define SENTINEL 1.0e7f /* what y holds before the launch */

static int fail(const char *what)
{
    fprintf(stderr, "raw_calls: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

static int raw_fail(const char *call, CUresult rc)
{
    const char *name = NULL;
    cuGetErrorName(rc, &name);
    fprintf(stderr, "raw_calls: %s failed: %s\n", call, name ? name : "an unknown error");
    return 1;
}

int main(void)
{
    /* Every CUCTX_AUTO at the top, initialised: any return below cleans up
     * what was made, in reverse order. */
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_stream stream = {0};
    CUCTX_AUTO cuctx_event start = {0}, stop = {0};
    CUCTX_AUTO cuctx_mem x = {0}, y = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUresult rc;

    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS)
        return fail("device 0's primary context");
    /* A raw call: the program's libcuda is the driver cuctx loaded. */
    char name[256] = "";
    if ((rc = cuDeviceGetName(name, (int)sizeof name, cuctx_ctx_device(ctx))) != CUDA_SUCCESS)
        return raw_fail("cuDeviceGetName", rc);
    int kernels_run = strstr(name, "cuctx test driver") == NULL;
    printf("raw_calls: device 0 is %s\n", name);

    CUCTX_GUARD(ctx);   /* current until main returns */
    CUfunction affine;
    if (cuctx_module_load_data(&mod, ctx, affine_ptx) != CUDA_SUCCESS
        || cuctx_module_function(mod, "affine", &affine) != CUDA_SUCCESS)
        return fail("loading the kernel");
    if (cuctx_stream_create(&stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&start, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS
        || cuctx_event_create(&stop, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return fail("stream and events");
    size_t bytes = N * sizeof(float);
    if (cuctx_mem_alloc(&x, ctx, bytes) != CUDA_SUCCESS || cuctx_mem_alloc(&y, ctx, bytes) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, 3 * bytes, 0) != CUDA_SUCCESS)
        return fail("memory");

    float *in = cuctx_host_mem_ptr(host), *back = in + N, *out = in + 2 * N;
    for (unsigned i = 0; i < N; i++)
        in[i] = 0.5f * (float)i - 7.0f;
    memset(back, 0, bytes);
    memset(out, 0, bytes);
    unsigned int sentinel_bits;
    float sentinel = SENTINEL;
    memcpy(&sentinel_bits, &sentinel, sizeof sentinel_bits);

    /* The raw calls, on cuctx's stream and memory. */
    CUstream s = cuctx_stream_raw(stream);
    CUdeviceptr px = cuctx_mem_ptr(x), py = cuctx_mem_ptr(y);
    unsigned n = N;
    void *args[] = {&px, &py, &n};
    if ((rc = cuctx_event_record(start, stream)) != CUDA_SUCCESS)
        return fail("recording the start");
    if ((rc = cuMemsetD32Async(py, sentinel_bits, N, s)) != CUDA_SUCCESS)
        return raw_fail("cuMemsetD32Async", rc);
    if ((rc = cuMemcpyHtoDAsync(px, in, bytes, s)) != CUDA_SUCCESS)
        return raw_fail("cuMemcpyHtoDAsync", rc);
    if ((rc = cuLaunchKernel(affine, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, s, args, NULL)) != CUDA_SUCCESS)
        return raw_fail("cuLaunchKernel", rc);
    if ((rc = cuMemcpyDtoHAsync(out, py, bytes, s)) != CUDA_SUCCESS)
        return raw_fail("cuMemcpyDtoHAsync(y)", rc);
    if ((rc = cuMemcpyDtoHAsync(back, px, bytes, s)) != CUDA_SUCCESS)
        return raw_fail("cuMemcpyDtoHAsync(x)", rc);
    if (cuctx_event_record(stop, stream) != CUDA_SUCCESS || cuctx_event_synchronize(stop) != CUDA_SUCCESS)
        return fail("waiting for the stream");
    float ms = -1;
    if (cuctx_event_elapsed_ms(start, stop, &ms) != CUDA_SUCCESS)
        return fail("elapsed time");
    printf("raw_calls: memset, copy in, affine on %u blocks of %u threads, two copies out: %.3f ms\n",
           (N + BLOCK - 1) / BLOCK, BLOCK, ms);

    unsigned same = 0, right = 0, kept = 0;
    for (unsigned i = 0; i < N; i++) {
        same += back[i] == in[i];
        right += out[i] == 2.0f * in[i] + 1.0f;
        kept += out[i] == SENTINEL;
    }
    printf("raw_calls: round trip: %u of %u values of x came back as written\n", same, N);
    int ok = same == N;
    if (kernels_run) {
        printf("raw_calls: kernel: %u of %u values of y are 2 * x + 1\n", right, N);
        ok = ok && right == N;
    } else {
        printf("raw_calls: kernels run nothing on the cuctx test driver: y kept the memset's value in %u of %u "
               "places (the kernel's result is checked on a GPU)\n", kept, N);
        ok = ok && kept == N;
    }
    printf("raw_calls: %s\n", ok ? "every check passed" : "a check FAILED");
    return ok ? 0 : 1;
}   /* host, y, x, stop, start, stream, mod destroyed here, then the context released */
