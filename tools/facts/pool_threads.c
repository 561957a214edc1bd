/* SPDX-License-Identifier: MIT */
/* pool_threads: which multi-threaded use of stream-ordered memory crashes
 * the real driver? tests/stress with its stream-ordered workload crashed
 * the H200's driver (SIGSEGV in cuMemAllocFromPoolAsync, cuStreamSynchronize
 * or cuCtxSynchronize, an abort in cuCtxDestroy, hangs; cuMemAlloc and
 * cuMemHostAlloc answering CUDA_ERROR_INVALID_VALUE first), with no context
 * churn and no captures too, and never with that workload off. Each way
 * below runs 8 threads for a few seconds in a forked child, in one
 * context, and counts the answers; a crash is counted, not fatal:
 *   0  each thread allocates and frees on its own stream (the control)
 *   1  from explicit pools, each pool destroyed by its maker while other
 *      threads free allocations from it (cuMemPoolDestroy with allocations
 *      alive, their frees racing it)
 *   2  pools trimmed by one thread while others allocate and free
 *   3  frees on another thread's stream (cuMemFreeAsync(p, s2))
 *   4  non-blocking streams destroyed with memory alive, then that memory
 *      freed on the legacy stream (cuctx's order after a stream is gone)
 *   5  cuMemFree (no context current) of pool memory while other threads
 *      allocate from the same pool
 *   gcc -O2 -I/usr/local/cuda/include pool_threads.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread && ./a.out [seconds] */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 8
#define SLOTS 64
static CUcontext ctx;
static CUdevice dev;
static int way, seconds = 3;
static atomic_int stop;
static atomic_ulong ok, bad;
static _Atomic CUdeviceptr slots[SLOTS];        /* allocations handed between threads */
static _Atomic(CUmemoryPool) pools[THREADS];

static CUmemoryPool new_pool(void)
{
    CUmemPoolProps pp;
    CUmemoryPool p = NULL;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    return cuMemPoolCreate(&p, &pp) == CUDA_SUCCESS ? p : NULL;
}

static void count(CUresult rc)
{
    if (rc == CUDA_SUCCESS)
        atomic_fetch_add(&ok, 1);
    else
        atomic_fetch_add(&bad, 1);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    unsigned r = (unsigned)me * 2654435761u + 1;
    CUstream s;
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (way == 1 || way == 2 || way == 5)
        atomic_store(&pools[me], new_pool());
    while (!atomic_load(&stop)) {
        r = r * 1103515245u + 12345u;
        CUdeviceptr p = 0;
        size_t bytes = 256 + (r >> 8) % 65536;
        CUmemoryPool pool = atomic_load(&pools[(r >> 4) % THREADS]);
        CUresult rc = (way == 1 || way == 2 || way == 5) && pool ? cuMemAllocFromPoolAsync(&p, bytes, pool, s)
                                                                : cuMemAllocAsync(&p, bytes, s);
        count(rc);
        if (rc != CUDA_SUCCESS)
            continue;
        if (way == 0) {
            count(cuMemFreeAsync(p, s));
            continue;
        }
        if (way == 4 && (r & 15) == 0) {   /* the stream goes first; its memory freed on the legacy stream */
            cuMemsetD8Async(p, 1, bytes, s);
            count(cuStreamDestroy(s));
            count(cuMemFreeAsync(p, CU_STREAM_LEGACY));
            cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
            continue;
        }
        cuStreamSynchronize(s);     /* ready for every stream */
        /* hand it to the slots; free what was there */
        CUdeviceptr old = atomic_exchange(&slots[(r >> 12) % SLOTS], p);
        if (!old)
            continue;
        if (way == 5 && (r & 3) == 0) {
            CUcontext popped;
            cuCtxPopCurrent(&popped);
            count(cuMemFree(old));
            cuCtxPushCurrent(popped);
        } else {
            count(cuMemFreeAsync(old, s));
        }
        if (way == 1 && (r & 63) == 0) {    /* my pool destroyed with allocations alive, a new one made */
            CUmemoryPool mine = atomic_exchange(&pools[me], NULL);
            if (mine)
                count(cuMemPoolDestroy(mine));
            atomic_store(&pools[me], new_pool());
        }
        if (way == 2 && me == 0 && (r & 7) == 0) {
            for (int i = 0; i < THREADS; i++) {
                CUmemoryPool q = atomic_load(&pools[i]);
                if (q)
                    count(cuMemPoolTrimTo(q, 0));
            }
        }
    }
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
    return NULL;
}

static int run(void)
{
    pthread_t t[THREADS];
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
        return 10;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i])
            cuMemFreeAsync(slots[i], NULL);
    CUresult sync = cuCtxSynchronize();
    CUdeviceptr probe;
    CUresult alloc = cuMemAlloc(&probe, 4096);
    printf("    %lu calls answered 0, %lu did not; then cuCtxSynchronize %d, cuMemAlloc %d\n", atomic_load(&ok),
           atomic_load(&bad), (int)sync, (int)alloc);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {
        "0: own stream, alloc and free (control)", "1: pools destroyed by their makers while others free from them",
        "2: pools trimmed while others allocate and free", "3: frees on another thread's stream",
        "4: streams destroyed with memory queued, freed on the legacy stream",
        "5: cuMemFree with no context of pool memory beside allocations"};
    if (argc > 1)
        seconds = atoi(argv[1]);
    for (way = 0; way < 6; way++) {
        for (int round = 0; round < 2; round++) {
            printf("%s, round %d\n", names[way], round);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                int rc = run();
                fflush(NULL);
                _exit(rc);
            }
            int st = 0;
            waitpid(pid, &st, 0);
            if (WIFSIGNALED(st))
                printf("    CRASHED (signal %d)\n", WTERMSIG(st));
            else if (WEXITSTATUS(st))
                printf("    setup failed (%d)\n", WEXITSTATUS(st));
        }
    }
    return 0;
}
