/* SPDX-License-Identifier: MIT */
/* ipc_share.c - one buffer of device memory shared by two processes (CUDA
 * IPC). The parent allocates it with cuctx, writes its first half, records
 * an event made for IPC after the copy, and starts a child process -
 * spawned (posix_spawn of this program), never forked after CUDA started -
 * giving it the two IPC handles on its command line. The child opens them
 * in a context of its own (on the second GPU where there is one), waits for
 * the parent's event on its stream, checks the first half, writes the
 * second, and exits; its mapping and event are closed by CUCTX_AUTO on the
 * way out. The parent checks the second half, and only then frees the
 * memory: the exporter keeps what it exported until every importer has
 * closed it (its free first is undefined behaviour for the importer).
 *
 * Output: one line from each side; the parent's last line is
 *   ipc_share: parent: child PID checked N values and wrote N; N of them right here
 * and the exit status is 0 only if both sides saw the right data. Needs a
 * GPU: the cuctx test driver keeps nothing across processes (make proof-gpu
 * runs it; make check only builds it). */
#include <cuctx.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define N (1u << 20)                /* 32-bit values in each half */
#define HALF ((size_t)N * sizeof(uint32_t))

static uint32_t parents(uint32_t i) { return i * 2654435761u + 1u; }
static uint32_t childs(uint32_t i) { return ~i ^ 0x5a5a5a5au; }

static int fail(const char *who, const char *what)
{
    fprintf(stderr, "ipc_share: %s: %s: %s\n", who, what, cuctx_last_error_message());
    return 1;
}

/* A handle as text for the command line, and back. */
static void to_hex(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
}

static int from_hex(const char *s, void *p, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        ((unsigned char *)p)[i] = (unsigned char)v;
    }
    return 0;
}

/* The importer: the other process. */
static int child(const char *mem_hex, const char *event_hex)
{
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    int ngpus = 0;
    if (from_hex(mem_hex, &mh, sizeof mh) != 0 || from_hex(event_hex, &eh, sizeof eh) != 0) {
        fprintf(stderr, "ipc_share: child: the handles on the command line are not %zu and %zu bytes of hex\n",
                sizeof mh, sizeof eh);
        return 1;
    }
    if (cuctx_init() != CUDA_SUCCESS || CUCTX_CALL(cuDeviceGetCount, &ngpus) != CUDA_SUCCESS)
        return fail("child", "init");
    CUdevice dev = ngpus > 1 ? 1 : 0;

    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem shared = {0};     /* the parent's memory, mapped here */
    CUCTX_AUTO cuctx_event ready = {0};    /* the parent's event */
    CUCTX_AUTO cuctx_host_mem host = {0};
    if (cuctx_ctx_primary(&ctx, dev) != CUDA_SUCCESS
        || cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, HALF, 0) != CUDA_SUCCESS)
        return fail("child", "context, stream and host memory");
    if (cuctx_ipc_mem_open(&shared, ctx, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != CUDA_SUCCESS)
        return fail("child", "opening the memory handle");
    if (cuctx_ipc_event_open(&ready, ctx, eh) != CUDA_SUCCESS)
        return fail("child", "opening the event handle");
    if (cuctx_mem_size(shared) < 2 * HALF) {
        fprintf(stderr, "ipc_share: child: the mapping has %zu bytes, not %zu\n", cuctx_mem_size(shared), 2 * HALF);
        return 1;
    }

    /* the parent's copy is ordered before the event: wait for it on the GPU */
    uint32_t *h = cuctx_host_mem_ptr(host);
    CUdeviceptr p = cuctx_mem_ptr(shared);
    if (cuctx_stream_wait_event(s, ready) != CUDA_SUCCESS
        || CUCTX_CALL(cuMemcpyDtoHAsync, h, p, HALF, cuctx_stream_raw(s)) != CUDA_SUCCESS
        || cuctx_stream_synchronize(s) != CUDA_SUCCESS)
        return fail("child", "reading the parent's half");
    unsigned wrong = 0;
    for (uint32_t i = 0; i < N; i++)
        wrong += h[i] != parents(i);
    for (uint32_t i = 0; i < N; i++)
        h[i] = childs(i);
    if (CUCTX_CALL(cuMemcpyHtoDAsync, p + HALF, h, HALF, cuctx_stream_raw(s)) != CUDA_SUCCESS
        || cuctx_stream_synchronize(s) != CUDA_SUCCESS)
        return fail("child", "writing its half");
    printf("ipc_share: child: opened %zu MiB of the parent's memory on GPU %d: %u of %u values wrong; wrote %u\n",
           cuctx_mem_size(shared) >> 20, (int)dev, wrong, N, N);
    fflush(stdout);
    return wrong ? 1 : 0;
}   /* host, the event, the mapping (closed, not freed), s, ctx */

/* The exporter. */
static int parent(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem buf = {0};
    CUCTX_AUTO cuctx_event ready = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS
        || cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
        || cuctx_mem_alloc(&buf, ctx, 2 * HALF) != CUDA_SUCCESS
        || cuctx_event_create(&ready, ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS
        || cuctx_host_mem_alloc(&host, ctx, HALF, 0) != CUDA_SUCCESS)
        return fail("parent", "context, stream, memory and event");
    uint32_t *h = cuctx_host_mem_ptr(host);
    for (uint32_t i = 0; i < N; i++)
        h[i] = parents(i);
    if (CUCTX_CALL(cuMemsetD32Async, cuctx_mem_ptr(buf) + HALF, 0, N, cuctx_stream_raw(s)) != CUDA_SUCCESS
        || CUCTX_CALL(cuMemcpyHtoDAsync, cuctx_mem_ptr(buf), h, HALF, cuctx_stream_raw(s)) != CUDA_SUCCESS
        || cuctx_event_record(ready, s) != CUDA_SUCCESS)
        return fail("parent", "writing its half");
    if (cuctx_ipc_mem_get(buf, &mh) != CUDA_SUCCESS || cuctx_ipc_event_get(ready, &eh) != CUDA_SUCCESS)
        return fail("parent", "the IPC handles");

    char mem_hex[2 * sizeof mh + 1], event_hex[2 * sizeof eh + 1];
    to_hex(&mh, sizeof mh, mem_hex);
    to_hex(&eh, sizeof eh, event_hex);
    char name[] = "ipc_share", flag[] = "--child";
    char *argv[] = {name, flag, mem_hex, event_hex, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    if (err != 0) {
        fprintf(stderr, "ipc_share: parent: posix_spawn: %s\n", strerror(err));
        return 1;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        continue;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "ipc_share: parent: the child failed (status %#x)\n", (unsigned)status);
        return 1;
    }
    /* the child has closed its mapping (it exited): now the memory may go */
    if (CUCTX_CALL(cuMemcpyDtoHAsync, h, cuctx_mem_ptr(buf) + HALF, HALF, cuctx_stream_raw(s)) != CUDA_SUCCESS
        || cuctx_stream_synchronize(s) != CUDA_SUCCESS)
        return fail("parent", "reading the child's half");
    unsigned right = 0;
    for (uint32_t i = 0; i < N; i++)
        right += h[i] == childs(i);
    printf("ipc_share: parent: child %d checked %u values and wrote %u; %u of them right here\n", (int)pid, N, N,
           right);
    return right == N ? 0 : 1;
}   /* host, ready, buf (freed after the child's close), s, ctx */

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child(argv[2], argv[3]);
    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "ipc_share: %s\n", cuctx_last_error_message());
        return 1;
    }
    return parent();
}
