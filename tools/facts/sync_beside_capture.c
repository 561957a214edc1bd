/* SPDX-License-Identifier: MIT */
/* sync_beside_capture: cuCtxSynchronize on one thread while another thread
 * of the same context captures a stream. tests/stress crashed the real
 * driver inside cuCtxSynchronize (SIGSEGV, a NULL dereference in
 * libcuda.so.1) in 2 of 4 runs of 300,000 operations with captures on,
 * never with them off. Which part of a capture does it race: its begin
 * and end (empty captures), the work queued into it, the graph's destroy?
 * Each way runs in a forked child, a few seconds, counting the
 * synchronizes and their answers (900 while a capture is active is the
 * documented answer); a crash is counted, not fatal. Run by hand on a GPU:
 *   gcc -O2 -I/usr/local/cuda/include sync_beside_capture.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 *   ./a.out [seconds per way [control]]   (default 3, 0)
 * control 1: the main thread does not synchronize; 2: the other thread
 * queues plain memsets, no capture; 3: one capture, begun at the start and
 * ended at the stop; 4: each capture stays open 20 ms; 5: the captures are
 * in another context than the synchronizes. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static CUcontext ctx;
static atomic_int stop;
static int way;         /* 0: empty captures; 1: a memset captured; 2: memset, graph destroyed; 3: + instantiate */
static CUdeviceptr buf;
static int control;     /* 1: no synchronize (the main thread sleeps); 2: no capture (plain memsets);
                           3: one capture, active the whole time; 4: captures 20 ms long;
                           5: the captures in a context of their own */

static void *capturer(void *p)
{
    (void)p;
    CUstream s;
    CUcontext own = NULL;
    CUdevice dev;
    cuCtxSetCurrent(ctx);
    if (control == 5 && cuCtxGetDevice(&dev) == CUDA_SUCCESS)
        cuCtxCreate(&own, NULL, 0, dev);    /* current on this thread now */
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    while (!atomic_load(&stop)) {
        CUgraph g = NULL;
        if (control == 2) {
            cuMemsetD8Async(buf, 1, 4096, s);
            continue;
        }
        if (control == 3) {     /* begun once, ended at the stop */
            if (cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS) {
                while (!atomic_load(&stop))
                    usleep(1000);
                if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g)
                    cuGraphDestroy(g);
            }
            break;
        }
        if (cuStreamBeginCapture(s, way == 0 ? CU_STREAM_CAPTURE_MODE_RELAXED : CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
            continue;
        if (way > 0)
            cuMemsetD8Async(buf, 1, 4096, s);
        if (control == 4)
            usleep(20000);
        if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g) {
            if (way == 3) {
                CUgraphExec e;
                if (cuGraphInstantiate(&e, g, 0) == CUDA_SUCCESS)
                    cuGraphExecDestroy(e);
            }
            if (way >= 2)
                cuGraphDestroy(g);
        }
    }
    cuStreamDestroy(s);
    if (own)
        cuCtxDestroy(own);
    return NULL;
}

static int run_way(int seconds)
{
    CUdevice dev;
    pthread_t t;
    unsigned long ok = 0, refused = 0, other = 0;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev) || cuMemAlloc(&buf, 4096))
        return 10;
    pthread_create(&t, NULL, capturer, NULL);
    time_t end = time(NULL) + seconds;
    while (time(NULL) < end) {
        if (control == 1) {
            usleep(1000);
            continue;
        }
        CUresult rc = cuCtxSynchronize();
        if (rc == CUDA_SUCCESS)
            ok++;
        else if (rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
            refused++;
        else
            other++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("    synchronizes: %lu ok, %lu answered 900, %lu other\n", ok, refused, other);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"empty captures (begin, end)", "a memset captured, graph leaked",
                                        "a memset captured, graph destroyed", "a memset captured, instantiated, exec and graph destroyed"};
    int seconds = argc > 1 ? atoi(argv[1]) : 3;
    control = argc > 2 ? atoi(argv[2]) : 0;
    printf("control %d (%s)\n", control, control == 1 ? "no synchronize" : control == 2 ? "no capture" : control == 3 ? "one long capture" : control == 4 ? "captures 20 ms long" : control == 5 ? "captures in another context" : "both");
    for (way = 0; way < 4; way++) {
        for (int round = 0; round < 3; round++) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0)
                _exit(run_way(seconds));
            int st = 0;
            waitpid(pid, &st, 0);
            printf("%s, round %d: %s\n", names[way], round,
                   WIFSIGNALED(st) ? (WTERMSIG(st) == SIGSEGV ? "CRASHED (SIGSEGV)" : "killed by a signal")
                                   : WEXITSTATUS(st) ? "setup failed" : "no crash");
        }
    }
    return 0;
}
