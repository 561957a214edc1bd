/* SPDX-License-Identifier: MIT */
/* pool_accounting: does a plain cuMemFree of stream-ordered memory give it
 * back to its pool? async_free.c saw the pool's used-memory figure stay up
 * after cuMemFree while the address was handed out again. Here a 1 GiB
 * allocation is made and freed 20 times each way, and the pool's used and
 * reserved figures and the device's free memory are printed, then again
 * after trimming the pool to 0. Each way in a forked child:
 *   gcc -O2 -I/usr/local/cuda/include pool_accounting.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda && ./a.out */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static CUmemoryPool pool;
static void show(const char *when)
{
    cuuint64_t u = 0, r = 0;
    size_t fr = 0, tot = 0;
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u);
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r);
    CUresult rc = cuMemGetInfo(&fr, &tot);
    printf("    %-58s used %6llu MiB, reserved %6llu MiB, device free %6zu MiB%s\n", when,
           (unsigned long long)u >> 20, (unsigned long long)r >> 20, fr >> 20, rc ? " (no context for cuMemGetInfo)" : "");
    fflush(stdout);
}

static int way;
static const char *const ways[] = {
    "cuMemFree(p), its context current",
    "cuMemFree(p), no context current",
    "cuMemFree(p) after its context's destroy (a new context each round)",
    "cuMemFreeAsync(p, CU_STREAM_LEGACY) in another live context, its own destroyed",
    "cuMemFreeAsync(p, s) (the control)"};

static int run(void)
{
    CUdevice dev;
    CUcontext c, keep, popped;
    CUstream s;
    CUdeviceptr p;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&keep, NULL, 0, dev) || cuDeviceGetDefaultMemPool(&pool, dev))
        return 10;
    show("start");
    for (int i = 0; i < 20; i++) {
        CUresult a, f;
        if (way >= 2 && way <= 3)
            cuCtxCreate(&c, NULL, 0, dev);
        cuStreamCreate(&s, 0);
        a = cuMemAllocAsync(&p, (size_t)1 << 30, s);
        cuStreamSynchronize(s);
        switch (way) {
        case 0: f = cuMemFree(p); break;
        case 1: cuCtxPopCurrent(&popped); f = cuMemFree(p); cuCtxPushCurrent(popped); break;
        case 2: cuCtxDestroy(c); cuCtxPopCurrent(&popped); f = cuMemFree(p); cuCtxPushCurrent(popped); break;
        case 3: cuCtxDestroy(c); cuCtxSetCurrent(keep); f = cuMemFreeAsync(p, CU_STREAM_LEGACY); break;
        default: f = cuMemFreeAsync(p, s); break;
        }
        if (way < 2 || way == 4)
            cuStreamDestroy(s);
        cuCtxSetCurrent(keep);
        cuCtxSynchronize();
        if (i < 2 || i == 19) {
            char when[80];
            snprintf(when, sizeof when, "round %d (alloc %d, free %d)", i, (int)a, (int)f);
            show(when);
        }
    }
    CUresult t = cuMemPoolTrimTo(pool, 0);
    char when[80];
    snprintf(when, sizeof when, "after cuMemPoolTrimTo(pool, 0) -> %d", (int)t);
    show(when);
    return 0;
}

int main(void)
{
    for (way = 0; way < (int)(sizeof ways / sizeof *ways); way++) {
        printf("%s\n", ways[way]);
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
    return 0;
}
