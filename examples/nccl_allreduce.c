/* SPDX-License-Identifier: MIT */
/* nccl_allreduce.c - one process, every visible GPU: a cuctx context,
 * stream and buffers per GPU, one NCCL communicator per GPU
 * (ncclCommInitAll), and an all-reduce of each GPU's buffer, checked
 * against the expected sum and timed.
 *
 * The scale-out path is NCCL's, not cuctx's: cuctx keeps each GPU's
 * resources (the device's primary context, which NCCL and the CUDA runtime
 * under it share; a stream; the buffers), NCCL moves the data. cuctx's
 * objects are plain CUstream and CUdeviceptr values to NCCL. Every object
 * is under CUCTX_AUTO, so an early return cleans up; the communicators,
 * NCCL's, are destroyed first by hand. With peers between the GPUs (two or
 * more) NCCL uses their peer paths itself; cuctx_peer is for a program's
 * own kernels and copies.
 *
 * Output: a line per GPU, the check, then
 *   nccl_allreduce: N GPU(s), B MiB per GPU: algbw X GB/s, busbw Y GB/s
 * (busbw = algbw * 2 (n - 1) / n, NCCL's own convention: 0 with one GPU,
 * where NCCL copies in place). Exits 0 only if every GPU's sum is right.
 * Needs a GPU and NCCL; make proof-gpu runs it. */
#include <cuctx.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_GPUS 16
#define COUNT ((size_t)64 << 20)    /* floats per GPU: 256 MiB */
#define ROUNDS 20

struct gpu {
    cuctx_ctx ctx;
    cuctx_stream s;
    cuctx_mem send, recv;
    cuctx_host_mem host;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cuctx_fail(const char *what)
{
    fprintf(stderr, "nccl_allreduce: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

static int nccl_fail(const char *what, ncclResult_t r)
{
    fprintf(stderr, "nccl_allreduce: %s: %s\n", what, ncclGetErrorString(r));
    return 1;
}

/* The destroys in order: communicators (NCCL's) before the contexts they
 * were made in are released, then every cuctx object of every GPU. */
static void gpus_end(struct gpu *g, ncclComm_t *comms, int n)
{
    for (int i = 0; i < n; i++)
        if (comms[i])
            ncclCommDestroy(comms[i]);
    for (int i = 0; i < n; i++) {
        cuctx_destroy(&g[i].host);
        cuctx_destroy(&g[i].recv);
        cuctx_destroy(&g[i].send);
        cuctx_destroy(&g[i].s);
        cuctx_destroy(&g[i].ctx);
    }
}

/* One all-reduce on every GPU, grouped: NCCL needs all of one process's
 * calls between ncclGroupStart and ncclGroupEnd. */
static ncclResult_t allreduce(struct gpu *g, ncclComm_t *comms, int n)
{
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; r == ncclSuccess && i < n; i++)
        r = ncclAllReduce((const void *)(uintptr_t)cuctx_mem_ptr(g[i].send),
                          (void *)(uintptr_t)cuctx_mem_ptr(g[i].recv), COUNT, ncclFloat, ncclSum, comms[i],
                          (cudaStream_t)cuctx_stream_raw(g[i].s));
    ncclResult_t e = ncclGroupEnd();
    return r != ncclSuccess ? r : e;
}

static int wait_all(struct gpu *g, int n)
{
    for (int i = 0; i < n; i++)
        if (cuctx_stream_synchronize(g[i].s) != CUDA_SUCCESS)
            return cuctx_fail("synchronize");
    return 0;
}

static int run(struct gpu *g, ncclComm_t *comms, int n)
{
    int devs[MAX_GPUS];
    for (int i = 0; i < n; i++) {
        devs[i] = i;
        /* the primary context: NCCL's runtime works in it too */
        if (cuctx_ctx_primary(&g[i].ctx, i) != CUDA_SUCCESS
            || cuctx_stream_create(&g[i].s, g[i].ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
            || cuctx_mem_alloc(&g[i].send, g[i].ctx, COUNT * sizeof(float)) != CUDA_SUCCESS
            || cuctx_mem_alloc(&g[i].recv, g[i].ctx, COUNT * sizeof(float)) != CUDA_SUCCESS
            || cuctx_host_mem_alloc(&g[i].host, g[i].ctx, 1024 * sizeof(float), 0) != CUDA_SUCCESS)
            return cuctx_fail("a GPU's context, stream and buffers");
        /* GPU i contributes i + 1 everywhere */
        float v = (float)(i + 1);
        unsigned bits;
        memcpy(&bits, &v, sizeof bits);
        CUresult rc = CUCTX_CALL(cuMemsetD32Async, cuctx_mem_ptr(g[i].send), bits, COUNT, cuctx_stream_raw(g[i].s));
        if (rc != CUDA_SUCCESS) {
            fprintf(stderr, "nccl_allreduce: cuMemsetD32Async: %s\n", cuctx_result_name(rc));
            return 1;
        }
        char name[128] = "";
        CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, i);
        printf("GPU %d: %s, %zu MiB in and out\n", i, name, COUNT * sizeof(float) >> 20);
    }
    ncclResult_t r = ncclCommInitAll(comms, n, devs);
    if (r != ncclSuccess)
        return nccl_fail("ncclCommInitAll", r);
    if ((r = allreduce(g, comms, n)) != ncclSuccess)     /* the warm-up round, checked below */
        return nccl_fail("ncclAllReduce", r);
    if (wait_all(g, n))
        return 1;

    /* every element of every GPU's result is 1 + 2 + ... + n */
    float want = (float)n * (float)(n + 1) / 2.0f;
    unsigned wrong = 0;
    for (int i = 0; i < n; i++) {
        float *h = cuctx_host_mem_ptr(g[i].host);
        size_t at[3] = {0, COUNT / 2, COUNT - 1024};
        for (int k = 0; k < 3; k++) {
            CUresult rc = CUCTX_CALL(cuMemcpyDtoHAsync, h, cuctx_mem_ptr(g[i].recv) + at[k] * sizeof(float),
                                     1024 * sizeof(float), cuctx_stream_raw(g[i].s));
            if (rc != CUDA_SUCCESS || cuctx_stream_synchronize(g[i].s) != CUDA_SUCCESS)
                return cuctx_fail("copying the result back");
            for (int j = 0; j < 1024; j++)
                wrong += h[j] != want;
        }
    }
    printf("check: every GPU holds %.0f in the 3 x 1024 places looked at: %u wrong\n", want, wrong);
    if (wrong)
        return 1;

    double t0 = now_s();
    for (int round = 0; round < ROUNDS; round++)
        if ((r = allreduce(g, comms, n)) != ncclSuccess)
            return nccl_fail("ncclAllReduce", r);
    if (wait_all(g, n))
        return 1;
    double per = (now_s() - t0) / ROUNDS;
    double bytes = (double)(COUNT * sizeof(float));
    double algbw = bytes / per / 1e9;
    printf("nccl_allreduce: %d GPU(s), %zu MiB per GPU: %.3f ms a round, algbw %.1f GB/s, busbw %.1f GB/s\n", n,
           COUNT * sizeof(float) >> 20, per * 1e3, algbw, algbw * 2.0 * (n - 1) / n);
    return 0;
}

int main(void)
{
    if (cuctx_init() != CUDA_SUCCESS)
        return cuctx_fail("init");
    int n = 0;
    if (CUCTX_CALL(cuDeviceGetCount, &n) != CUDA_SUCCESS || n < 1) {
        fprintf(stderr, "nccl_allreduce: no CUDA device\n");
        return 1;
    }
    if (n > MAX_GPUS)
        n = MAX_GPUS;
    int version = 0;
    ncclGetVersion(&version);
    printf("NCCL %d, %d GPU(s)\n", version, n);
    static struct gpu g[MAX_GPUS];
    static ncclComm_t comms[MAX_GPUS];
    int rc = run(g, comms, n);
    gpus_end(g, comms, n);      /* on every path */
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    if (st.ctx_handles + st.streams + st.mems + st.host_mems != 0) {
        fprintf(stderr, "nccl_allreduce: cuctx objects left alive\n");
        return 1;
    }
    return rc;
}
