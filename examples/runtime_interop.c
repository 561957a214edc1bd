/* SPDX-License-Identifier: MIT */
/* runtime_interop.c - cuctx beside the CUDA runtime in one program.
 *
 * The runtime (libcudart: cudaMalloc, cudaMemcpy, ...) works in each device's
 * primary context, the same one cuctx_ctx_primary retains. Here both allocate
 * in it, copy between each other's buffers, and share one stream. Then
 * cuctx's last handle on the context is released while the runtime still
 * holds it: the context lives on, the runtime keeps working, and cuctx's
 * remaining allocation is really freed by its destroy (not skipped as if the
 * context had gone, which would leak it). Needs a GPU; exits 0 only if every
 * step did what it says. */
#include <cuctx.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES ((size_t)256 << 20)
#define MIB(x) ((x) >> 20)

static int failures;

static void check(int ok, const char *what)
{
    printf("  %s: %s\n", ok ? "ok" : "WRONG", what);
    if (!ok)
        failures++;
}

static size_t free_device_memory(void)
{
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    return free;
}

int main(void)
{
    /* The runtime first: cudaFree(0) makes it retain device 0's primary
     * context and make it current on this thread. */
    cudaError_t err = cudaSetDevice(0);
    if (err == cudaSuccess)
        err = cudaFree(0);
    if (err != cudaSuccess) {
        fprintf(stderr, "runtime_interop: the CUDA runtime found no usable GPU: %s\n", cudaGetErrorString(err));
        return 1;
    }
    CUcontext runtime_ctx = NULL;
    cuctx_current_raw(&runtime_ctx);

    printf("1. one primary context, two users\n");
    cuctx_ctx primary = {0};
    if (cuctx_ctx_primary(&primary, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "runtime_interop: %s\n", cuctx_last_error_message());
        return 1;
    }
    check(cuctx_ctx_raw(primary) == runtime_ctx, "cuctx_ctx_primary(0) is the context the runtime made current");

    void *rt_buf = NULL;
    unsigned char *host = malloc(BYTES);
    cuctx_mem buf = {0};
    cuctx_stream stream = {0};
    size_t free_before = free_device_memory();
    if (!host || cudaMalloc(&rt_buf, BYTES) != cudaSuccess || cuctx_mem_alloc(&buf, primary, BYTES) != CUDA_SUCCESS
        || cuctx_stream_create(&stream, primary, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "runtime_interop: allocating: %s / %s\n", cudaGetErrorString(cudaGetLastError()),
                cuctx_last_error_message());
        return 1;
    }
    size_t free_during = free_device_memory();
    printf("  the runtime's cudaMalloc and cuctx's allocation: %zu MiB each; free device memory %zu -> %zu MiB\n",
           MIB(BYTES), MIB(free_before), MIB(free_during));

    /* The runtime fills its buffer, copies it into cuctx's on cuctx's stream
     * (a CUstream is a cudaStream_t), and reads cuctx's buffer back. */
    cudaStream_t s = (cudaStream_t)cuctx_stream_raw(stream);
    memset(host, 0, BYTES);
    err = cudaMemsetAsync(rt_buf, 0x5a, BYTES, s);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync((void *)(uintptr_t)cuctx_mem_ptr(buf), rt_buf, BYTES, cudaMemcpyDeviceToDevice, s);
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(host, (const void *)(uintptr_t)cuctx_mem_ptr(buf), BYTES, cudaMemcpyDeviceToHost, s);
    CUresult rc = cuctx_stream_synchronize(stream);
    size_t wrong = 0;
    for (size_t i = 0; i < BYTES; i++)
        wrong += host[i] != 0x5a;
    printf("  runtime memset, runtime copies into and out of cuctx's buffer on cuctx's stream: %s, %s, %zu wrong bytes\n",
           cudaGetErrorString(err), cuctx_result_name(rc), wrong);
    check(err == cudaSuccess && rc == CUDA_SUCCESS && wrong == 0, "the data went through both");

    printf("2. cuctx's last handle released while the runtime still holds the context\n");
    cuctx_stream_destroy(&stream);
    rc = cuctx_ctx_destroy(&primary);        /* cuctx's retain ends; the runtime's does not */
    check(rc == CUDA_SUCCESS, "cuctx_ctx_destroy released cuctx's retain");
    err = cudaMemset(rt_buf, 0x11, BYTES);
    if (err == cudaSuccess)
        err = cudaMemcpy((void *)(uintptr_t)cuctx_mem_ptr(buf), rt_buf, BYTES, cudaMemcpyDeviceToDevice);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    check(err == cudaSuccess, "the runtime still works, also on the allocation cuctx still owns");

    struct cuctx_stats st;
    cuctx_stats_get(&st);
    uint64_t skips = st.stale_skips;
    rc = cuctx_mem_destroy(&buf);            /* the context is alive: this frees for real */
    cuctx_stats_get(&st);
    size_t free_after = free_device_memory();
    printf("  cuctx_mem_destroy: %s, %llu skipped; free device memory now %zu MiB\n", cuctx_result_name(rc),
           (unsigned long long)(st.stale_skips - skips), MIB(free_after));
    check(rc == CUDA_SUCCESS && st.stale_skips == skips, "cuctx's allocation was freed through the driver, not skipped");
    check(free_after + BYTES / 2 >= free_during + BYTES, "its 256 MiB came back to the device");

    err = cudaFree(rt_buf);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    check(err == cudaSuccess, "the runtime frees its own buffer and synchronizes as before");
    free(host);
    /* The primary context lives on (the runtime holds it): cuctx still
     * knows it (st.contexts counts it), but holds no handle to anything. */
    cuctx_stats_get(&st);
    check(st.ctx_handles + st.mems + st.streams + st.events + st.host_mems == 0 && st.failed_destroys == 0,
          "cuctx has no handle alive and no destroy was refused");
    printf("runtime_interop: %s\n", failures ? "FAILED" : "every check passed");
    return failures ? 1 : 0;
}
