/* SPDX-License-Identifier: MIT */
/* exit_churn: does the raw driver stall with no cuctx in the process? Twice
 * in 88 runs of the stress with stream-ordered memory (mask 63) every thread
 * of the process sat in the driver for 8 s: a cuStreamDestroy waiting on a
 * condition, two cuCtxCreate on a mutex, an exiting thread in the driver's
 * thread-exit destructor on a mutex. This program makes the same mix with
 * raw calls only: worker threads that each make a context or use the
 * primary, create a stream, allocate and free stream-ordered memory on it,
 * destroy the stream, and exit after a few rounds (new ones take their
 * place), beside two threads creating and destroying contexts. A watchdog
 * reports a run with no progress for 8 s as a stall. Each run in a forked
 * child. Measured on an H200 (driver 580.159.04, 2026-12-03): 12 runs of 5 s
 * (about 11 s each with start and joins), no stall and no crash. Run by
 * hand on a GPU machine (not part of any build):
 *   gcc -O2 -I/usr/local/cuda/include exit_churn.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 *   ./a.out RUNS SECONDS
 */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUdevice dev;
static CUcontext primary;
static atomic_long progress;
static atomic_int stop;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int round = 0; round < 4 + (int)(rand_r(&seed) % 8); round++) {
        CUcontext own = NULL;
        if (rand_r(&seed) % 3 == 0) {
            if (cuCtxCreate(&own, NULL, 0, dev) != CUDA_SUCCESS)
                continue;
        } else {
            cuCtxPushCurrent(primary);
        }
        CUstream s;
        if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS) {
            CUdeviceptr p[4];
            int n = 1 + (int)(rand_r(&seed) % 4);
            for (int i = 0; i < n; i++)
                if (cuMemAllocAsync(&p[i], 4096, s) != CUDA_SUCCESS)
                    p[i] = 0;
            for (int i = 0; i < n; i++)
                if (p[i] && rand_r(&seed) % 4)
                    cuMemFreeAsync(p[i], s);
                else if (p[i])
                    cuMemFree(p[i]);
            cuStreamDestroy(s);
        }
        if (own)
            cuCtxDestroy(own);
        else
            cuCtxPopCurrent(NULL);
        atomic_fetch_add(&progress, 1);
    }
    return NULL;     /* the thread ends: the driver's exit destructor runs */
}

static void *churn(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        CUcontext c;
        if (cuCtxCreate(&c, NULL, 0, dev) == CUDA_SUCCESS) {
            cuCtxPopCurrent(NULL);
            cuCtxDestroy(c);
        }
        atomic_fetch_add(&progress, 1);
    }
    return NULL;
}

static void *watchdog(void *arg)
{
    (void)arg;
    long last = -1;
    int still = 0;
    for (;;) {
        sleep(1);
        long now = atomic_load(&progress);
        still = now == last ? still + 1 : 0;
        last = now;
        if (still >= 8) {
            printf("    STALL: no progress for 8 s after %ld steps\n", now);
            fflush(stdout);
            _exit(2);
        }
    }
    return NULL;
}

static int one_run(int secs, unsigned seed)
{
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&primary, dev))
        return 3;
    pthread_t w, c[2], t[8];
    pthread_create(&w, NULL, watchdog, NULL);
    for (int i = 0; i < 2; i++)
        pthread_create(&c[i], NULL, churn, NULL);
    time_t end = time(NULL) + secs;
    long threads = 0;
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(seed * 131 + (unsigned)threads++));
    while (time(NULL) < end)
        for (int i = 0; i < 8; i++) {
            pthread_join(t[i], NULL);
            pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(seed * 131 + (unsigned)threads++));
        }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    printf("    %ld worker threads, %ld steps\n", threads, atomic_load(&progress));
    fflush(stdout);     /* the child ends in _exit */
    return 0;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 10, secs = argc > 2 ? atoi(argv[2]) : 5, stalls = 0;
    for (int r = 0; r < runs; r++) {
        printf("== run %d\n", r);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(one_run(secs, (unsigned)r + 1));
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
            stalls++;
        else if (!WIFEXITED(st) || WEXITSTATUS(st))
            printf("    child ended: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
                   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    }
    printf("stalls: %d of %d runs\n", stalls, runs);
    return 0;
}
