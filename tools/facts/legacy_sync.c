/* SPDX-License-Identifier: MIT */
/* legacy_sync: does a free ordered on the legacy stream, beside
 * cuCtxSynchronize on other threads, deadlock the real driver? tests/stress
 * hung on the H200 with two threads in cuMemFreeAsync(p, CU_STREAM_LEGACY)
 * (cuctx's free of stream-ordered memory whose stream is gone), three in
 * cuCtxSynchronize and others in cuMemFree, cuMemFreeHost and cuEventCreate,
 * all waiting on locks inside the driver. Each way runs 8 threads in one
 * context for a few seconds in a forked child; a child that makes no
 * progress for 10 s is reported hung and killed:
 *   0  4 threads allocate on their own non-blocking stream and free there;
 *      4 threads call cuCtxSynchronize in a loop (the control)
 *   1  as 0, but each free is ordered on the legacy stream
 *   2  as 1, the stream destroyed first (a synchronize of it, then the
 *      destroy, then the legacy free: cuctx's order)
 *   3  as 2 without the synchronizing threads
 *   4  as 2, the free by cuMemFree in place of the legacy stream
 *   gcc -O2 -I/usr/local/cuda/include legacy_sync.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread && ./a.out [seconds] */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static CUcontext ctx;
static int way, seconds = 4;
static atomic_int stop;
static atomic_ulong ok, bad, beats;

static void count(CUresult rc)
{
    atomic_fetch_add(rc == CUDA_SUCCESS ? &ok : &bad, 1);
    atomic_fetch_add(&beats, 1);
}

static void *allocator(void *arg)
{
    unsigned r = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    CUstream s;
    cuCtxSetCurrent(ctx);
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    while (!atomic_load(&stop)) {
        r = r * 1103515245u + 12345u;
        CUdeviceptr p = 0;
        size_t bytes = 256 + (r >> 8) % 65536;
        CUresult rc = cuMemAllocAsync(&p, bytes, s);
        count(rc);
        if (rc != CUDA_SUCCESS)
            continue;
        count(cuMemsetD8Async(p, 1, bytes, s));
        if (way == 0) {
            count(cuMemFreeAsync(p, s));
        } else if (way == 1) {
            count(cuMemFreeAsync(p, CU_STREAM_LEGACY));
        } else {
            count(cuStreamSynchronize(s));
            count(cuStreamDestroy(s));
            count(way == 4 ? cuMemFree(p) : cuMemFreeAsync(p, CU_STREAM_LEGACY));
            count(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        }
    }
    cuStreamSynchronize(s);
    cuStreamDestroy(s);
    return NULL;
}

static void *syncer(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(ctx);
    while (!atomic_load(&stop))
        count(cuCtxSynchronize());
    return NULL;
}

static int run(void)
{
    pthread_t t[8];
    int syncers = way == 3 ? 0 : 4;
    if (cuInit(0) || cuCtxCreate(&ctx, NULL, 0, 0))
        return 10;
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, allocator, (void *)(uintptr_t)i);
    for (int i = 0; i < syncers; i++)
        pthread_create(&t[4 + i], NULL, syncer, NULL);
    sleep((unsigned)seconds);
    atomic_store(&stop, 1);
    for (int i = 0; i < 4 + syncers; i++)
        pthread_join(t[i], NULL);
    printf("    %lu calls answered 0, %lu did not; then cuCtxSynchronize %d\n", atomic_load(&ok), atomic_load(&bad),
           (int)cuCtxSynchronize());
    fflush(stdout);
    return 0;
}

/* the parent's watch: the child's calls counted in shared memory would
 * need more; a child that outlives its time by 10 s is hung */
int main(int argc, char **argv)
{
    static const char *const names[] = {
        "0: frees on their own streams, cuCtxSynchronize beside (control)",
        "1: frees on the legacy stream, cuCtxSynchronize beside",
        "2: stream synchronized and destroyed, then the legacy free, cuCtxSynchronize beside",
        "3: as 2 with no cuCtxSynchronize", "4: as 2 with cuMemFree"};
    if (argc > 1)
        seconds = atoi(argv[1]);
    const char *ways = argc > 2 ? argv[2] : "01234";
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
            while (waitpid(pid, &st, WNOHANG) == 0 && waited < (seconds + 10) * 10) {
                usleep(100000);
                waited++;
            }
            if (waited >= (seconds + 10) * 10) {
                printf("    HUNG (no exit %d s after the end)\n", 10);
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
