/* SPDX-License-Identifier: MIT */
/* stale_current: a thread's current context ends on another thread, and a
 * new context takes its address. What does the first thread see? Three ways
 * to get the same address: a primary context released (last retain) and
 * retained again on another thread; a primary reset and retained again;
 * ordinary contexts destroyed and created until one lands on the address.
 * Each scenario in a forked child. A raw-driver program, run by hand on a GPU
 * machine (not part of any build):
 *   gcc -O2 -I/usr/local/cuda/include stale_current.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 * Measured on an H200 (driver 580.159.04): the primary context comes back at
 * the same address with a new id, and the first thread's current level then
 * names the new context (cuCtxGetId(NULL) gives the new id, creates work);
 * ordinary contexts never took the dead one's address (0 of 96 creates). */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#define R(x) printf("    %-60s -> %d\n", #x, (int)(x))
static CUcontext A, A2;
static CUdevice dev;
static int mode;

static void *other(void *p)
{
    (void)p;
    if (mode == 0) {            /* last release, retain again */
        R(cuDevicePrimaryCtxRelease(dev));
        R(cuDevicePrimaryCtxRetain(&A2, dev));
    } else if (mode == 1) {     /* reset, retain again */
        R(cuDevicePrimaryCtxReset(dev));
        R(cuDevicePrimaryCtxRetain(&A2, dev));
    } else {                    /* ordinary: destroy, create until the address comes back */
        CUcontext keep[16];
        int n = 0;
        R(cuCtxDestroy(A));
        for (int i = 0; i < 16 && !A2; i++) {
            CUcontext c;
            if (cuCtxCreate(&c, NULL, 0, dev) != CUDA_SUCCESS)
                break;
            cuCtxPopCurrent(NULL);
            if (c == A)
                A2 = c;
            else
                keep[n++] = c;
        }
        for (int i = 0; i < n; i++)
            cuCtxDestroy(keep[i]);
        printf("    ordinary: %d other contexts made before the address came back: %s\n", n, A2 ? "yes" : "no");
    }
    return NULL;
}

static void look(void)
{
    CUcontext cur = NULL;
    unsigned long long ida2 = 0, idnull = 0, idcur = 0;
    CUevent e;
    CUresult r;
    printf("    A %p, A2 %p, same address: %d\n", (void *)A, (void *)A2, A == A2);
    R(cuCtxGetId(A2, &ida2));
    printf("    id of A2 = %llu\n", ida2);
    R(cuCtxGetCurrent(&cur));
    printf("    current == A2's address: %d\n", cur == A2);
    R(cuCtxGetId(NULL, &idnull));
    printf("    cuCtxGetId(NULL) = %llu\n", idnull);
    R(cuCtxGetId(cur, &idcur));
    printf("    cuCtxGetId(current) = %llu\n", idcur);
    r = cuEventCreate(&e, 0);
    printf("    cuEventCreate with this current -> %d\n", r);
    if (!r)
        cuEventDestroy(e);
    R(cuCtxPushCurrent(A2));
    r = cuEventCreate(&e, 0);
    printf("    after pushing A2: cuEventCreate -> %d\n", r);
    if (!r)
        cuEventDestroy(e);
    R(cuCtxGetId(NULL, &idnull));
    printf("    after pushing A2: cuCtxGetId(NULL) = %llu\n", idnull);
    R(cuCtxPopCurrent(&cur));
    R(cuCtxSetCurrent(A2));
    r = cuEventCreate(&e, 0);
    printf("    after cuCtxSetCurrent(A2): cuEventCreate -> %d\n", r);
    if (!r)
        cuEventDestroy(e);
}

static void scenario(int m)
{
    unsigned long long ida = 0;
    pthread_t t;
    mode = m;
    cuInit(0);
    cuDeviceGet(&dev, 0);
    for (int round = 0; round < (m == 2 ? 6 : 1); round++) {
        A2 = NULL;
        if (m < 2) {
            R(cuDevicePrimaryCtxRetain(&A, dev));
            R(cuCtxSetCurrent(A));
        } else {
            R(cuCtxCreate(&A, NULL, 0, dev));
        }
        cuCtxGetId(A, &ida);
        printf("    id of A = %llu\n", ida);
        pthread_create(&t, NULL, other, NULL);
        pthread_join(t, NULL);
        if (A2 == A) {
            look();
            return;
        }
        printf("  round %d: no address reuse\n", round);
        cuCtxSetCurrent(NULL);
        if (A2)
            cuCtxDestroy(A2);
    }
}

int main(void)
{
    static const char *const names[] = {"primary: last release on another thread, retained again there",
                                        "primary: reset on another thread, retained again there",
                                        "ordinary: destroyed on another thread, created there until the address returns"};
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int m = 0; m < 3; m++) {
        printf("== %s\n", names[m]);
        pid_t pid = fork();
        if (pid == 0) {
            scenario(m);
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st))
            printf("  child killed by signal %d\n", WTERMSIG(st));
        else
            printf("  child exit %d\n", WEXITSTATUS(st));
    }
    return 0;
}
