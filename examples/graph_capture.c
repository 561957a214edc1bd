/* SPDX-License-Identifier: MIT */
/* graph_capture.c - stream capture with CUCTX_CAPTURE: a memset, a run of
 * kernel launches and a copy out, captured from a stream into a graph,
 * instantiated once and launched many times, timed against queueing the
 * same work directly. A second capture leaves its block early by a return,
 * as an error path does: the capture is abandoned, no graph is kept, and
 * the stream works on. Nothing is destroyed by hand. The program makes no
 * driver call of its own but through CUCTX_CALL, so it links cuctx alone.
 *
 * On the cuctx test driver no kernel runs and captured work runs nowhere;
 * there the program checks what the driver was asked to do (the graph's
 * node count, the stream usable after the abandoned capture) and says that
 * the numbers are checked on a GPU. */
#include <cuctx.h>
#include <stdio.h>
#include <string.h>

#include "affine_ptx.h"

#define N 4096u
#define BLOCK 256u
#define KERNELS 20      /* launches per round of work */
#define ROUNDS 200      /* rounds, by graph and directly */

struct work {
    cuctx_stream stream;
    CUfunction affine;
    CUdeviceptr x, y;
    float *out;         /* page-locked */
};

static int fail(const char *what)
{
    fprintf(stderr, "graph_capture: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

/* One round of the work, queued on w->stream: y = 0, KERNELS times
 * y = 2x + 1, y copied out. */
static CUresult queue_round(const struct work *w)
{
    unsigned n = N;
    CUdeviceptr x = w->x, y = w->y;
    void *args[] = {&x, &y, &n};
    CUstream s = cuctx_stream_raw(w->stream);
    CUresult rc = CUCTX_CALL(cuMemsetD32Async, w->y, 0, N, s);
    for (int k = 0; k < KERNELS && rc == CUDA_SUCCESS; k++)
        rc = cuctx_launch(w->affine, w->stream, (cuctx_dim3){(N + BLOCK - 1) / BLOCK, 1, 1},
                          (cuctx_dim3){BLOCK, 1, 1}, 0, args);
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuMemcpyDtoHAsync, w->out, w->y, N * sizeof(float), s);
    return rc;
}

/* A capture that an error path leaves by return: the macro ends and
 * abandons the capture on the way out. */
static int capture_then_fail(const struct work *w, cuctx_graph *g)
{
    CUCTX_CAPTURE(w->stream, g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        if (queue_round(w) != CUDA_SUCCESS)
            return -1;
        return -2;  /* say the program found something wrong halfway */
    }
    return 0;
}

int main(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_module mod = {0};
    CUCTX_AUTO cuctx_stream stream = {0};
    CUCTX_AUTO cuctx_event t0 = {0}, t1 = {0};
    CUCTX_AUTO cuctx_mem x = {0}, y = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUCTX_AUTO cuctx_graph graph = {0}, abandoned = {0};
    CUCTX_AUTO cuctx_graph_exec exec = {0};
    struct work w;
    char name[256] = "";

    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS)
        return fail("device 0's primary context");
    if (CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, cuctx_ctx_device(ctx)) != CUDA_SUCCESS)
        return fail("cuDeviceGetName");
    int kernels_run = strstr(name, "cuctx test driver") == NULL;
    printf("graph_capture: device 0 is %s\n", name);
    CUCTX_GUARD(ctx);   /* current until main returns: the program's raw calls need it */
    if (cuctx_module_load_data(&mod, ctx, affine_ptx) != CUDA_SUCCESS
        || cuctx_module_function(mod, "affine", &w.affine) != CUDA_SUCCESS)
        return fail("loading the kernel");
    if (cuctx_stream_create(&stream, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_event_create(&t0, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS
        || cuctx_event_create(&t1, ctx, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return fail("stream and events");
    if (cuctx_mem_alloc(&x, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_mem_alloc(&y, ctx, N * sizeof(float)) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, 2 * N * sizeof(float), 0) != CUDA_SUCCESS)
        return fail("memory");
    w = (struct work){stream, w.affine, cuctx_mem_ptr(x), cuctx_mem_ptr(y), (float *)cuctx_host_mem_ptr(host) + N};
    float *in = cuctx_host_mem_ptr(host);
    for (unsigned i = 0; i < N; i++)
        in[i] = 0.25f * (float)i - 3.0f;
    if (CUCTX_CALL(cuMemcpyHtoD, w.x, in, N * sizeof(float)) != CUDA_SUCCESS)
        return fail("copying x in");

    /* The capture: at the block's end the graph is in `graph`. */
    CUCTX_CAPTURE(stream, &graph, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        if (queue_round(&w) != CUDA_SUCCESS)
            return fail("queueing the work into the capture");
    }
    if (!graph.id)
        return fail("the capture");
    size_t nodes = 0;
    if (CUCTX_CALL(cuGraphGetNodes, cuctx_graph_raw(graph), NULL, &nodes) != CUDA_SUCCESS)
        return fail("cuGraphGetNodes");
    printf("graph_capture: captured a graph of %zu nodes (a memset, %d kernels, a copy)\n", nodes, KERNELS);
    if (cuctx_graph_exec_instantiate(&exec, ctx, cuctx_graph_raw(graph), 0) != CUDA_SUCCESS)
        return fail("instantiating the graph");

    /* The early return: abandoned, nothing kept, the stream not capturing. */
    int why = capture_then_fail(&w, &abandoned);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (CUCTX_CALL(cuStreamIsCapturing, cuctx_stream_raw(stream), &status) != CUDA_SUCCESS)
        return fail("cuStreamIsCapturing");
    printf("graph_capture: a capture left by return %d: graph %s, the stream %s\n", why,
           abandoned.id ? "KEPT" : "not kept", status == CU_STREAM_CAPTURE_STATUS_NONE ? "no longer capturing" : "STILL CAPTURING");
    if (abandoned.id || status != CU_STREAM_CAPTURE_STATUS_NONE)
        return 1;

    /* The same rounds, by graph and directly, each timed with events. */
    float ms_graph = 0, ms_direct = 0;
    if (cuctx_event_record(t0, stream) != CUDA_SUCCESS)
        return fail("recording");
    for (int r = 0; r < ROUNDS; r++)
        if (cuctx_graph_exec_launch(exec, stream) != CUDA_SUCCESS)
            return fail("launching the graph");
    if (cuctx_event_record(t1, stream) != CUDA_SUCCESS || cuctx_event_synchronize(t1) != CUDA_SUCCESS
        || cuctx_event_elapsed_ms(t0, t1, &ms_graph) != CUDA_SUCCESS)
        return fail("timing the graph");
    unsigned right_graph = 0;
    for (unsigned i = 0; i < N; i++)
        right_graph += w.out[i] == 2.0f * in[i] + 1.0f;
    memset(w.out, 0, N * sizeof(float));
    if (cuctx_event_record(t0, stream) != CUDA_SUCCESS)
        return fail("recording");
    for (int r = 0; r < ROUNDS; r++)
        if (queue_round(&w) != CUDA_SUCCESS)
            return fail("queueing the work directly");
    if (cuctx_event_record(t1, stream) != CUDA_SUCCESS || cuctx_event_synchronize(t1) != CUDA_SUCCESS
        || cuctx_event_elapsed_ms(t0, t1, &ms_direct) != CUDA_SUCCESS)
        return fail("timing the direct launches");
    unsigned right_direct = 0;
    for (unsigned i = 0; i < N; i++)
        right_direct += w.out[i] == 2.0f * in[i] + 1.0f;

    printf("graph_capture: %d rounds of %d kernels: by graph %.3f ms (%.2f us a round), directly %.3f ms "
           "(%.2f us a round)\n", ROUNDS, KERNELS, ms_graph, 1000.0 * ms_graph / ROUNDS, ms_direct,
           1000.0 * ms_direct / ROUNDS);
    int ok = nodes == KERNELS + 2;
    if (kernels_run) {
        printf("graph_capture: by graph / directly: %.2f\n", ms_direct > 0 ? ms_graph / ms_direct : 0.0);
        printf("graph_capture: y = 2x + 1 in %u of %u values by graph, %u directly\n", right_graph, N, right_direct);
        ok = ok && right_graph == N && right_direct == N;
    } else {
        printf("graph_capture: the cuctx test driver runs no kernel: the values and times are checked on a GPU\n");
    }
    printf("graph_capture: %s\n", ok ? "every check passed" : "a check FAILED");
    return ok ? 0 : 1;
}
