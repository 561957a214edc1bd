/* SPDX-License-Identifier: MIT */
/* dead_current: a thread's current context is destroyed by another thread.
 * Which calls on objects of a second, live context B does the driver then
 * refuse on the first thread? Each call in a forked child of its own, so that
 * no answer depends on another: the child makes B, a stream of B, memory of
 * three kinds (cuMemAlloc, cuMemAllocAsync on B's stream from the default
 * pool, the same from a pool of its own), a one-node graph exec and an event;
 * then makes context A current, has a second thread destroy A, and makes the
 * one call with the dead A still current. It prints the answer, then whether
 * the call took effect (memory returned to its pool; the work done), and the
 * answer of the same call with A's level popped. A raw-driver program, run by
 * hand on a GPU machine (not part of any build):
 *   gcc -O2 -I/usr/local/cuda/include dead_current.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 * Measured on an H200 (driver 580.159.04, 2026-12-03): refused with 709
 * and nothing freed: cuMemFree (of cuMemAlloc memory and of pool memory)
 * and cuMemFreeAsync(p, NULL); the same cuMemFree with nothing current
 * then answers 0, the cuMemFreeAsync(p, NULL) 201. Accepted (0) and done:
 * cuMemFreeAsync on B's live stream (default pool and an own pool: the
 * pool's use drops to 0), cuGraphLaunch, cuEventRecord,
 * cuStreamSynchronize, cuMemAllocAsync, cuMemsetD8Async, cuEventDestroy,
 * cuStreamDestroy. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { printf("    setup %s -> %d\n", #x, (int)r_); exit(3); } } while (0)

static CUcontext A, B;
static CUdevice dev;
static CUstream s;
static CUdeviceptr plain, dflt, mine;
static CUmemoryPool pool, dpool;
static CUgraphExec exec;
static CUevent ev;

static void *destroy_a(void *p)
{
    (void)p;
    printf("    other thread: cuCtxDestroy(A) -> %d\n", (int)cuCtxDestroy(A));
    return NULL;
}

static size_t used(CUmemoryPool p)
{
    cuuint64_t u = 0;
    cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u);
    return (size_t)u;
}

static const char *const names[] = {
    "cuMemFree(cuMemAlloc memory of B)",
    "cuMemFreeAsync(default-pool memory, B's stream)",
    "cuMemFreeAsync(own-pool memory, B's stream)",
    "cuMemFree(default-pool memory)",
    "cuMemFreeAsync(default-pool memory, NULL)",
    "cuGraphLaunch(exec of B, B's stream)",
    "cuEventRecord(event of B, B's stream)",
    "cuStreamSynchronize(B's stream)",
    "cuMemAllocAsync(4 KiB, B's stream)",
    "cuMemsetD8Async(B memory, B's stream)",
    "cuEventDestroy(event of B)",
    "cuStreamDestroy(B's stream)",
};
enum { NCALLS = sizeof names / sizeof names[0] };

static CUresult call(int i)
{
    CUdeviceptr q = 0;
    switch (i) {
    case 0: return cuMemFree(plain);
    case 1: return cuMemFreeAsync(dflt, s);
    case 2: return cuMemFreeAsync(mine, s);
    case 3: return cuMemFree(dflt);
    case 4: return cuMemFreeAsync(dflt, NULL);
    case 5: return cuGraphLaunch(exec, s);
    case 6: return cuEventRecord(ev, s);
    case 7: return cuStreamSynchronize(s);
    case 8: { CUresult r = cuMemAllocAsync(&q, 4096, s); if (r == CUDA_SUCCESS) printf("    (got %#llx)\n", (unsigned long long)q); return r; }
    case 9: return cuMemsetD8Async(plain, 7, 4096, s);
    case 10: return cuEventDestroy(ev);
    default: return cuStreamDestroy(s);
    }
}

static void child(int i)
{
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&B, NULL, 0, dev));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&plain, 4096));
    CK(cuDeviceGetDefaultMemPool(&dpool, dev));
    CUmemPoolProps pp = {0};
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 0;
    CK(cuMemPoolCreate(&pool, &pp));
    CK(cuMemAllocAsync(&dflt, 1 << 20, s));
    CK(cuMemAllocFromPoolAsync(&mine, 1 << 20, pool, s));
    CUgraph g;
    CUgraphNode n;
    CK(cuGraphCreate(&g, 0));
    CK(cuGraphAddEmptyNode(&n, g, NULL, 0));
    CK(cuGraphInstantiateWithFlags(&exec, g, 0));
    CK(cuEventCreate(&ev, 0));
    CK(cuStreamSynchronize(s));
    size_t du = used(dpool), mu = used(pool);
    CK(cuCtxPopCurrent(NULL));
    CK(cuCtxCreate(&A, NULL, 0, dev));      /* current: A over nothing */
    pthread_t t;
    pthread_create(&t, NULL, destroy_a, NULL);
    pthread_join(t, NULL);
    CUcontext cur = NULL;
    cuCtxGetCurrent(&cur);
    printf("    current after the destroy: %s\n", cur == A ? "A (dead)" : cur ? "another" : "none");
    CUresult r = call(i);
    printf("    with dead A current: %-48s -> %d\n", names[i], (int)r);
    CUresult p = cuCtxPopCurrent(&cur);
    printf("    cuCtxPopCurrent -> %d; current now %s\n", (int)p, cur == A ? "was A" : "?");
    CK(cuCtxPushCurrent(B));
    if (i != 11)
        printf("    cuStreamSynchronize(B's stream) with B current -> %d\n", (int)cuStreamSynchronize(s));
    printf("    pool use: default %zu -> %zu, own %zu -> %zu\n", du, used(dpool), mu, used(pool));
    if (r != CUDA_SUCCESS) {
        CK(cuCtxPopCurrent(NULL));
        r = call(i);
        printf("    again with nothing current: %-40s -> %d\n", names[i], (int)r);
        CK(cuCtxPushCurrent(B));
        cuStreamSynchronize(s);
        printf("    pool use after: default %zu, own %zu\n", used(dpool), used(pool));
    }
    fflush(stdout);
    _exit(0);
}

int main(void)
{
    for (int i = 0; i < NCALLS; i++) {
        printf("== %d: %s\n", i, names[i]);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            child(i);
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            printf("    child ended: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    return 0;
}
