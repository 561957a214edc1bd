/* SPDX-License-Identifier: MIT */
/* multi_gpu.c - every GPU at once: one thread per device, each in its
 * device's primary context, each running the vadd kernel (vadd.cu, compiled
 * to PTX at build time) on its own memory.
 *
 * Every resource a thread makes is under CUCTX_AUTO, so each early return
 * below cleans up after itself, and a thread's context is current only
 * inside it (CUCTX_GUARD). At the end the program prints which devices ran
 * the kernel and got the right answer - "devices used: 0 1" on a two-GPU
 * machine - and exits 0 only if every device did. */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern const char cuctx_example_vadd_ptx[];

#define N (1u << 22)
#define MAX_DEVICES 64

static PFN_cuDeviceGetCount_v2000 get_count;
static PFN_cuDeviceGetName_v2000 get_name;
static PFN_cuCtxGetDevice_v2000 current_device;
static PFN_cuLaunchKernel_v4000 launch;
static PFN_cuMemcpyHtoDAsync_v3020 htod;
static PFN_cuMemcpyDtoHAsync_v3020 dtoh;

struct gpu {
    int dev;
    char name[128];
    int ran_on;             /* the device cuCtxGetDevice named inside the thread */
    unsigned wrong;         /* wrong results, or N + 1 when it never got that far */
    char error[256];
};

static void *fail(struct gpu *g, const char *what)
{
    snprintf(g->error, sizeof g->error, "%s: %s", what, cuctx_last_error_message());
    return NULL;
}

static void *run_on(void *arg)
{
    struct gpu *g = arg;
    g->wrong = N + 1;
    get_name(g->name, sizeof g->name, g->dev);

    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_primary(&ctx, g->dev) != CUDA_SUCCESS)
        return fail(g, "retaining the primary context");
    CUCTX_GUARD(ctx);       /* current on this thread until it returns */
    CUdevice here = -1;
    current_device(&here);
    g->ran_on = (int)here;

    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_stream stream = {0};
    CUCTX_AUTO cuctx_mem a = {0}, b = {0}, c = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUfunction vadd;
    if (cuctx_module_load_data(&mod, ctx, cuctx_example_vadd_ptx) != CUDA_SUCCESS
        || cuctx_module_function(mod, "vadd", &vadd) != CUDA_SUCCESS)
        return fail(g, "loading the kernel");
    if (cuctx_stream_create(&stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_mem_alloc(&a, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc(&b, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc(&c, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, N * sizeof(float), 0) != CUDA_SUCCESS)
        return fail(g, "stream and memory");

    /* a[i] = i and b[i] = 1000 * (dev + 1): each device's answer is its own. */
    float *h = cuctx_host_mem_ptr(host);
    CUstream s = cuctx_stream_raw(stream);
    for (unsigned i = 0; i < N; i++)
        h[i] = (float)i;
    if (htod(cuctx_mem_ptr(a), h, N * sizeof(float), s) != CUDA_SUCCESS
        || cuctx_stream_synchronize(stream) != CUDA_SUCCESS)
        return fail(g, "copying a");
    for (unsigned i = 0; i < N; i++)
        h[i] = 1000.0f * (float)(g->dev + 1);
    if (htod(cuctx_mem_ptr(b), h, N * sizeof(float), s) != CUDA_SUCCESS)
        return fail(g, "copying b");

    CUdeviceptr pa = cuctx_mem_ptr(a), pb = cuctx_mem_ptr(b), pc = cuctx_mem_ptr(c);
    unsigned n = N;
    void *args[] = {&pa, &pb, &pc, &n};
    CUresult rc = launch(vadd, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL);
    if (rc != CUDA_SUCCESS) {
        snprintf(g->error, sizeof g->error, "cuLaunchKernel: %s", cuctx_result_name(rc));
        return NULL;
    }
    if (dtoh(h, pc, N * sizeof(float), s) != CUDA_SUCCESS || cuctx_stream_synchronize(stream) != CUDA_SUCCESS)
        return fail(g, "copying the result back");
    g->wrong = 0;
    for (unsigned i = 0; i < N; i++)
        g->wrong += h[i] != (float)i + 1000.0f * (float)(g->dev + 1);
    return NULL;
}   /* host, c, b, a, stream, mod destroyed; the guard ends; the retain is released */

int main(void)
{
    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "multi_gpu: %s\n", cuctx_last_error_message());
        return 1;
    }
    if (cuctx_driver_symbol("cuDeviceGetCount", 2000, (void **)&get_count) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuDeviceGetName", 2000, (void **)&get_name) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxGetDevice", 2000, (void **)&current_device) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuLaunchKernel", 4000, (void **)&launch) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuMemcpyHtoDAsync", 3020, (void **)&htod) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuMemcpyDtoHAsync", 3020, (void **)&dtoh) != CUDA_SUCCESS) {
        fprintf(stderr, "multi_gpu: driver entry points: %s\n", cuctx_last_error_message());
        return 1;
    }
    int count = 0;
    if (get_count(&count) != CUDA_SUCCESS || count < 1) {
        fprintf(stderr, "multi_gpu: no CUDA device\n");
        return 1;
    }
    if (count > MAX_DEVICES)
        count = MAX_DEVICES;
    printf("%d device(s): one thread each\n", count);

    static struct gpu gpus[MAX_DEVICES];
    pthread_t threads[MAX_DEVICES];
    for (int d = 0; d < count; d++) {
        gpus[d].dev = d;
        if (pthread_create(&threads[d], NULL, run_on, &gpus[d]) != 0) {
            fprintf(stderr, "multi_gpu: pthread_create failed\n");
            return 1;
        }
    }
    char used[4 * MAX_DEVICES] = "";
    int good = 0;
    for (int d = 0; d < count; d++) {
        pthread_join(threads[d], NULL);
        struct gpu *g = &gpus[d];
        int ok = g->wrong == 0 && g->ran_on == d;
        if (g->error[0])
            printf("device %d (%s): %s\n", d, g->name, g->error);
        else
            printf("device %d (%s): vadd of %u floats in its primary context, current device %d, %u wrong\n",
                   d, g->name, N, g->ran_on, g->wrong);
        if (ok) {
            good++;
            snprintf(used + strlen(used), sizeof used - strlen(used), " %d", d);
        }
    }
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    printf("alive afterwards: %zu contexts, %zu modules, %zu streams, %zu device and %zu host allocations\n",
           st.contexts, st.modules, st.streams, st.mems, st.host_mems);
    printf("devices used:%s\n", good ? used : " none");
    int ok = good == count && st.contexts + st.modules + st.streams + st.mems + st.host_mems == 0;
    printf("multi_gpu: %s\n", ok ? "every device ran the kernel correctly" : "FAILED");
    return ok ? 0 : 1;
}
