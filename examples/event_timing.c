/* SPDX-License-Identifier: MIT */
/* event_timing.c - times a kernel with two events on a stream. The kernel
 * (vadd.cu) was compiled to PTX by nvcc at build time; every resource here
 * is under CUCTX_AUTO, so each early return below cleans up after itself. */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>

extern const char cuctx_example_vadd_ptx[];

#define N (1u << 24)

static int fail(const char *what)
{
    fprintf(stderr, "event_timing: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

int main(void)
{
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;

    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS)
        return fail("cannot retain the primary context of device 0");
    if (cuctx_driver_symbol("cuLaunchKernel", 4000, (void **)&launch) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuMemcpyHtoD", 3020, (void **)&htod) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuMemcpyDtoH", 3020, (void **)&dtoh) != CUDA_SUCCESS)
        return fail("driver entry points");

    CUCTX_GUARD(ctx);   /* current for the rest of main */

    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_stream stream = {0};
    CUCTX_AUTO cuctx_event start = {0}, stop = {0};
    CUCTX_AUTO cuctx_mem a = {0}, b = {0}, c = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUfunction vadd;
    if (cuctx_module_load_data(&mod, ctx, cuctx_example_vadd_ptx) != CUDA_SUCCESS
        || cuctx_module_function(mod, "vadd", &vadd) != CUDA_SUCCESS)
        return fail("loading the kernel");
    if (cuctx_stream_create(&stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&start, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS
        || cuctx_event_create(&stop, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return fail("stream and events");
    if (cuctx_mem_alloc(&a, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc(&b, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc(&c, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, N * sizeof(float), 0) != CUDA_SUCCESS)
        return fail("memory");

    float *h = cuctx_host_mem_ptr(host);
    for (unsigned i = 0; i < N; i++)
        h[i] = (float)i;
    if (htod(cuctx_mem_ptr(a), h, N * sizeof(float)) != CUDA_SUCCESS
        || htod(cuctx_mem_ptr(b), h, N * sizeof(float)) != CUDA_SUCCESS)
        return fail("copy to the device");

    CUdeviceptr pa = cuctx_mem_ptr(a), pb = cuctx_mem_ptr(b), pc = cuctx_mem_ptr(c);
    unsigned n = N;
    void *args[] = {&pa, &pb, &pc, &n};
    CUstream s = cuctx_stream_raw(stream);
    cuctx_event_record(start, stream);
    CUresult rc = launch(vadd, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL);
    cuctx_event_record(stop, stream);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "event_timing: cuLaunchKernel failed: %s\n", cuctx_result_name(rc));
        return 1;
    }
    if (cuctx_event_synchronize(stop) != CUDA_SUCCESS)
        return fail("waiting for the kernel");
    float ms = 0;
    if (cuctx_event_elapsed_ms(start, stop, &ms) != CUDA_SUCCESS)
        return fail("elapsed time");

    if (dtoh(h, pc, N * sizeof(float)) != CUDA_SUCCESS)
        return fail("copy back");
    unsigned bad = 0;
    for (unsigned i = 0; i < N; i++)
        bad += h[i] != 2.0f * (float)i;
    printf("vadd of %u floats: %.3f ms (%.1f GB/s), %u wrong results\n", N, ms,
           3.0 * N * sizeof(float) / (ms * 1e6), bad);
    return bad ? 1 : 0;
}
