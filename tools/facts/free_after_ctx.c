/* SPDX-License-Identifier: MIT */
/* free_after_ctx: is a cuMemFree of stream-ordered memory whose context
 * was destroyed (cuctx's free of it then, with no context current) safe
 * beside other threads' allocations? tests/stress on the H200 saw
 * cuMemAlloc and cuMemHostAlloc answer CUDA_ERROR_INVALID_VALUE in live
 * contexts, then hung inside the driver; and cuMemFree of pool memory was
 * measured to leave the pool counting it as used. Each way runs for a few
 * seconds in a forked child: 4 threads each make a context, a stream and 8
 * allocations on it (from the default pool and from a pool of their own),
 * destroy the context, and free them; 4 threads allocate and free device
 * and page-locked host memory in a long-lived context B, counting every
 * answer that is not 0. A child that does not end in time is reported hung:
 *   0  the allocations freed before the context's destroy (the control)
 *   1  freed after it by cuMemFree with no context current (cuctx's way)
 *   2  freed after it by cuMemFreeAsync on a stream of B, with no context
 *      current (the other live context's order)
 *   3  as 1, with the pools trimmed to 0 by the B threads now and then
 *   4  freed after it as cuctx frees it when the device's primary context
 *      is active: cuPointerGetAttribute(DEVICE_ORDINAL) asked first (its
 *      answers other than 0 and the device are counted apart), then the
 *      primary context (retained by the program) pushed, cuMemFreeAsync on
 *      the legacy stream, popped
 *   5  as 4, each maker's pool then destroyed at once (its last frees still
 *      queued on the primary context's legacy stream) and a new one made,
 *      every round: cuctx's deferred destroy of a pool whose handle went
 *      first, with the memory's context dead (tests/stress with pools
 *      destroyed in the run crashed or hung the H200's driver in about one
 *      run in four, where pool_destroy.c's one-context ways ran clean)
 *   6  as 5, the pool destroyed only after a synchronize of the primary
 *      context (its frees done)
 *   gcc -O2 -I/usr/local/cuda/include free_after_ctx.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread && ./a.out [seconds] */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static CUcontext b, prim;
static CUstream bs;
static CUdevice dev;
static CUmemoryPool dflt;
static int way, seconds = 4;
static atomic_int stop;
static atomic_ulong ok, bad, b_bad, ctxs, q_bad;

static void count(CUresult rc, _Atomic unsigned long *on_bad)
{
    atomic_fetch_add(rc == CUDA_SUCCESS ? &ok : on_bad, 1);
}

static void *maker(void *arg)
{
    (void)arg;
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = dev;
    CUmemoryPool mine;
    count(cuMemPoolCreate(&mine, &pp), &bad);
    while (!atomic_load(&stop)) {
        CUcontext a;
        CUstream s;
        CUdeviceptr p[8];
        if (cuCtxCreate(&a, NULL, 0, dev) != CUDA_SUCCESS) {
            atomic_fetch_add(&bad, 1);
            continue;
        }
        atomic_fetch_add(&ctxs, 1);
        count(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), &bad);
        for (int i = 0; i < 8; i++) {
            size_t bytes = 4096u << i;
            count(i & 1 ? cuMemAllocFromPoolAsync(&p[i], bytes, mine, s) : cuMemAllocAsync(&p[i], bytes, s), &bad);
            count(cuMemsetD8Async(p[i], 1, bytes, s), &bad);
        }
        if (way == 0)
            for (int i = 0; i < 8; i++)
                count(cuMemFreeAsync(p[i], s), &bad);
        count(cuStreamSynchronize(s), &bad);
        count(cuStreamDestroy(s), &bad);
        count(cuCtxDestroy(a), &bad);
        if (way == 0)
            continue;
        for (int i = 0; i < 8; i++) {
            if (way >= 4) {
                int ord = -1;
                if (cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p[i]) != CUDA_SUCCESS
                    || ord != (int)dev)
                    atomic_fetch_add(&q_bad, 1);
                count(cuCtxPushCurrent(prim), &bad);
                count(cuMemFreeAsync(p[i], CU_STREAM_LEGACY), &bad);
                count(cuCtxPopCurrent(NULL), &bad);
            } else {
                count(way == 2 ? cuMemFreeAsync(p[i], bs) : cuMemFree(p[i]), &bad);
            }
        }
        if (way >= 5) {     /* the pool ended with its last free, a new one made */
            if (way == 6) {
                count(cuCtxPushCurrent(prim), &bad);
                count(cuCtxSynchronize(), &bad);
                count(cuCtxPopCurrent(NULL), &bad);
            }
            count(cuMemPoolDestroy(mine), &bad);
            count(cuMemPoolCreate(&mine, &pp), &bad);
        }
    }
    count(cuMemPoolDestroy(mine), &bad);
    return NULL;
}

static void *user(void *arg)
{
    unsigned r = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    cuCtxSetCurrent(b);
    while (!atomic_load(&stop)) {
        r = r * 1103515245u + 12345u;
        CUdeviceptr p;
        void *h;
        size_t bytes = 256 + (r >> 8) % 65536;
        CUresult rc = cuMemAlloc(&p, bytes);
        count(rc, &b_bad);
        if (rc == CUDA_SUCCESS)
            count(cuMemFree(p), &b_bad);
        rc = cuMemHostAlloc(&h, bytes, 0);
        count(rc, &b_bad);
        if (rc == CUDA_SUCCESS)
            count(cuMemFreeHost(h), &b_bad);
        if (way == 3 && (r & 63) == 0)
            count(cuMemPoolTrimTo(dflt, 0), &b_bad);
    }
    return NULL;
}

static int run(void)
{
    pthread_t t[8];
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&b, NULL, 0, dev) || cuStreamCreate(&bs, 0)
        || cuDeviceGetDefaultMemPool(&dflt, dev) || cuDevicePrimaryCtxRetain(&prim, dev))
        return 10;
    cuCtxPopCurrent(NULL);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, maker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[4 + i], NULL, user, (void *)(uintptr_t)i);
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    cuCtxSetCurrent(b);
    cuuint64_t used = 0;
    cuMemPoolGetAttribute(dflt, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
    printf("    %lu contexts; %lu calls answered 0; %lu of the makers' and %lu of B's did not; "
           "then cuCtxSynchronize %d, default pool used %llu bytes; %lu device questions not answered 0 and the device\n",
           atomic_load(&ctxs), atomic_load(&ok), atomic_load(&bad), atomic_load(&b_bad), (int)cuCtxSynchronize(),
           (unsigned long long)used, atomic_load(&q_bad));
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"0: freed before the context's destroy (control)",
                                        "1: freed after it by cuMemFree, no context current",
                                        "2: freed after it by cuMemFreeAsync on a stream of another context",
                                        "3: as 1, pools trimmed beside",
                                        "4: freed after it on the primary context's legacy stream, pushed (cuctx)",
                                        "5: as 4, the pool destroyed right after, a new one made",
                                        "6: as 5, the pool destroyed after a synchronize of the primary"};
    if (argc > 1)
        seconds = atoi(argv[1]);
    const char *ways = argc > 2 ? argv[2] : "0123456";
    for (const char *w = ways; *w; w++) {
        way = *w - '0';
        for (int round = 0; round < 2; round++) {
            printf("%s, round %d\n", names[way], round);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                int rc = run();
                fflush(NULL);
                _exit(rc);
            }
            int st = 0, waited = 0;
            while (waitpid(pid, &st, WNOHANG) == 0 && waited < (seconds + 15) * 10) {
                usleep(100000);
                waited++;
            }
            if (waited >= (seconds + 15) * 10) {
                printf("    HUNG\n");
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
            } else if (WIFSIGNALED(st)) {
                printf("    CRASHED (signal %d)\n", WTERMSIG(st));
            } else if (WEXITSTATUS(st)) {
                printf("    setup failed (%d)\n", WEXITSTATUS(st));
            }
        }
    }
    return 0;
}
