/* SPDX-License-Identifier: MIT */
// saxpy.cu - a .cu file: a kernel, and host code that keeps its resources
// with cuctx and launches the kernel with <<<...>>>.
//
// The runtime's launch goes to the current context, which CUCTX_GUARD makes
// device 0's primary context: the one the runtime itself would use, so the
// kernel, the memory and the stream cuctx made are all in one context. The
// macros are for host code only (nvcc drops the cleanup attribute in device
// code). Built by nvcc when configure finds it; needs a GPU. Exits 0 only if
// every result is right and nothing is left alive.
#include <cuctx.h>
#include <cuda_runtime_api.h>

#include <cstdio>

__global__ void saxpy(float a, const float *x, float *y, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

static int fail(const char *what)
{
    std::fprintf(stderr, "saxpy: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

static int run()
{
    const unsigned n = 1u << 20;
    const size_t bytes = n * sizeof(float);

    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS)
        return fail("retaining device 0's primary context");
    CUCTX_GUARD(ctx);

    CUCTX_AUTO cuctx_stream stream = {0};
    CUCTX_AUTO cuctx_event start = {0}, stop = {0};
    CUCTX_AUTO cuctx_mem x = {0}, y = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    if (cuctx_stream_create(&stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&start, ctx, 0) != CUDA_SUCCESS || cuctx_event_create(&stop, ctx, 0) != CUDA_SUCCESS
        || cuctx_mem_alloc(&x, ctx, bytes) != CUDA_SUCCESS || cuctx_mem_alloc(&y, ctx, bytes) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, bytes, 0) != CUDA_SUCCESS)
        return fail("resources");

    float *h = static_cast<float *>(cuctx_host_mem_ptr(host));
    float *dx = reinterpret_cast<float *>(cuctx_mem_ptr(x));
    float *dy = reinterpret_cast<float *>(cuctx_mem_ptr(y));
    cudaStream_t s = cuctx_stream_raw(stream);
    for (unsigned i = 0; i < n; i++)
        h[i] = static_cast<float>(i);
    cudaMemcpyAsync(dx, h, bytes, cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(dy, h, bytes, cudaMemcpyHostToDevice, s);
    cuctx_event_record(start, stream);
    saxpy<<<(n + 255) / 256, 256, 0, s>>>(2.0f, dx, dy, n);
    cudaError_t err = cudaGetLastError();
    cuctx_event_record(stop, stream);
    cudaMemcpyAsync(h, dy, bytes, cudaMemcpyDeviceToHost, s);
    if (err != cudaSuccess || cuctx_stream_synchronize(stream) != CUDA_SUCCESS) {
        std::fprintf(stderr, "saxpy: launch: %s; %s\n", cudaGetErrorString(err), cuctx_last_error_message());
        return 1;
    }
    float ms = 0;
    cuctx_event_elapsed_ms(start, stop, &ms);
    unsigned wrong = 0;
    for (unsigned i = 0; i < n; i++)
        wrong += h[i] != 3.0f * static_cast<float>(i);
    std::printf("saxpy of %u floats on device %d: %.3f ms, %u wrong results\n", n, (int)cuctx_ctx_device(ctx), ms,
                wrong);
    return wrong ? 1 : 0;
}   // host, y, x, stop, start, stream destroyed; the guard ends; the retain is released

int main()
{
    int rc = run();
    cuctx_stats st;
    cuctx_stats_get(&st);
    /* The runtime keeps the primary context alive after cuctx's handle is
     * gone, so cuctx still knows the context (st.contexts); what must be
     * zero is the handles. */
    std::printf("alive afterwards: %zu context handles, %zu device allocations, %zu streams, %zu events "
                "(%zu contexts known, the runtime's among them)\n",
                st.ctx_handles, st.mems, st.streams, st.events, st.contexts);
    if (rc == 0 && st.ctx_handles + st.mems + st.streams + st.events + st.host_mems != 0)
        rc = 1;
    std::printf("saxpy: %s\n", rc ? "FAILED" : "correct, nothing left alive");
    return rc;
}
