/* SPDX-License-Identifier: MIT */
/* free_beside_capture: what the frees of stream-ordered memory that cannot
 * use the memory's own stream (lib/mem_async.c, cases 2 and 4) do beside a
 * stream capture, and whether a thread's capture mode exchanged to RELAXED
 * (cuThreadExchangeStreamCaptureMode) lets them through without breaking
 * the capture, as the documentation says: a thread's own mode decides
 * whether its "potentially unsafe" calls are prohibited.
 *
 * Thread A, in context X, begins a capture (mode GLOBAL, THREAD_LOCAL or
 * RELAXED), queues a cuMemsetD8Async, waits for B, then ends the capture:
 * end 0 = intact, 901 = invalidated. Thread B, its own mode left as it is
 * (GLOBAL, a new thread's) or exchanged to RELAXED around the call, does:
 *   a  cuMemFree(p) with no context current, p from cuMemAllocAsync in a
 *      context Y since destroyed (mem_async.c case 4); the default pool's
 *      used memory before and after;
 *   b  cuCtxSynchronize with another live context Y current (case 2's wait);
 *   c  cuMemFreeAsync(p, CU_STREAM_LEGACY) with Y current, p Y's;
 *   d  for reference, cuMemAlloc with Y current.
 * Then, to list which of the other calls cuctx makes a capture forbids
 * (the header's list beside CUCTX_CAPTURE), under A's GLOBAL capture with
 * B's mode left as it is and Y current, B does one of:
 *   e  cuGraphInstantiate of a graph of one empty node; f cuGraphExecDestroy;
 *   g  cuLibraryLoadData of a small PTX; h cuLibraryUnload;
 *   i  cuModuleLoadData of it; j cuModuleUnload;
 *   k  cuMemHostAlloc; l cuMemFreeHost; m cuEventDestroy; n cuStreamDestroy;
 *   o  cuMemFreeAsync on a non-blocking stream of Y; p on a blocking one;
 *   q  cuMemAllocAsync on a non-blocking stream of Y
 *      (the objects made beforehand in Y).
 * Last, "self": B is the capturing thread (X current for the begin and the
 * end, between them none for a, Y for b), and does a or b. Each case runs in a forked
 * child, so a crash or a hang (20 s) is counted, not fatal; one line each.
 * Run by hand on a GPU:
 *   gcc -O2 -I/usr/local/cuda/include free_beside_capture.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 *   ./a.out
 * On cuctx's simulator (BUILD: the build directory), to compare its model:
 *   gcc -O2 -I/usr/local/cuda/include free_beside_capture.c \
 *       -LBUILD/tests/.libs -lcudasim -Wl,-rpath,BUILD/tests/.libs -lpthread
 *   CUCTX_TESTDRIVER_QUIET=1 ./a.out
 * There, as the documentation has it: with B's mode left GLOBAL, its own
 * GLOBAL or THREAD_LOCAL capture, or another thread's GLOBAL one, makes a,
 * b and d 900 and the capture 901; with B RELAXED none does; c is no such
 * call; the pool keeps counting a's memory (as the H200 did in
 * free_after_ctx.c). */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define BYTES (1u << 20)

/* The three-argument create (ABI 3020), not cuda.h 13's cuCtxCreate_v4:
 * every driver has it, and so does cuctx's simulator, which refuses v4. */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);

static const char *const mode_names[] = {"GLOBAL", "THREAD_LOCAL", "RELAXED"};
static const char *const what_names[] = {"a cuMemFree, no context", "b cuCtxSynchronize of Y",
                                         "c cuMemFreeAsync legacy", "d cuMemAlloc (reference)",
                                         "e cuGraphInstantiate", "f cuGraphExecDestroy",
                                         "g cuLibraryLoadData", "h cuLibraryUnload",
                                         "i cuModuleLoadData", "j cuModuleUnload",
                                         "k cuMemHostAlloc", "l cuMemFreeHost",
                                         "m cuEventDestroy", "n cuStreamDestroy",
                                         "o cuMemFreeAsync nonblocking", "p cuMemFreeAsync blocking",
                                         "q cuMemAllocAsync nonblocking"};
#define WHAT_COUNT ((int)(sizeof what_names / sizeof what_names[0]))
static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";
/* e - n's objects, made in Y beforehand */
static CUgraph g_made;
static CUgraphExec ge_made;
static CUlibrary lib_made;
static CUmodule mod_made;
static void *host_made;
static CUevent ev_made;
static CUstream st_made, st_blocking;
static CUdeviceptr p_made;

static CUcontext x, y;
static CUstream sx;
static CUdeviceptr buf, p;
static CUstreamCaptureMode cap_mode;
static int relaxed;     /* B exchanges its mode to RELAXED around its call */
static int what;        /* 0 - 3: a - d */
static pthread_barrier_t begun, done;
static CUresult begin_rc = CUDA_ERROR_UNKNOWN, end_rc = CUDA_ERROR_UNKNOWN, b_rc = CUDA_ERROR_UNKNOWN;
static CUresult exch_rc = CUDA_SUCCESS, back_rc = CUDA_SUCCESS;
static CUstreamCaptureMode b_had = (CUstreamCaptureMode)-1;

static void begin(void)
{
    begin_rc = cuStreamBeginCapture(sx, cap_mode);
    if (begin_rc == CUDA_SUCCESS)
        cuMemsetD8Async(buf, 1, 4096, sx);
}

static void end(void)
{
    CUgraph g = NULL;
    if (begin_rc != CUDA_SUCCESS)
        return;
    end_rc = cuStreamEndCapture(sx, &g);
    if (g)
        cuGraphDestroy(g);
}

/* B's call, inside the mode exchange where asked */
static void b_call(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUdeviceptr q;
    if (relaxed) {
        exch_rc = cuThreadExchangeStreamCaptureMode(&m);
        b_had = m;
    }
    switch (what) {
    case 0: b_rc = cuMemFree(p); break;
    case 1: b_rc = cuCtxSynchronize(); break;
    case 2: b_rc = cuMemFreeAsync(p, CU_STREAM_LEGACY); break;
    case 3: b_rc = cuMemAlloc(&q, 4096); break;
    case 4: { CUgraphExec e; b_rc = cuGraphInstantiate(&e, g_made, 0); } break;
    case 5: b_rc = cuGraphExecDestroy(ge_made); break;
    case 6: { CUlibrary l; b_rc = cuLibraryLoadData(&l, ptx, NULL, NULL, 0, NULL, NULL, 0); } break;
    case 7: b_rc = cuLibraryUnload(lib_made); break;
    case 8: { CUmodule m2; b_rc = cuModuleLoadData(&m2, ptx); } break;
    case 9: b_rc = cuModuleUnload(mod_made); break;
    case 10: { void *h; b_rc = cuMemHostAlloc(&h, 4096, 0); } break;
    case 11: b_rc = cuMemFreeHost(host_made); break;
    case 12: b_rc = cuEventDestroy(ev_made); break;
    case 13: b_rc = cuStreamDestroy(st_made); break;
    case 14: b_rc = cuMemFreeAsync(p_made, st_made); break;
    case 15: b_rc = cuMemFreeAsync(p_made, st_blocking); break;
    default: b_rc = cuMemAllocAsync(&q, 4096, st_made); break;
    }
    if (relaxed)
        back_rc = cuThreadExchangeStreamCaptureMode(&m);
}

static void *thread_a(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(x);
    begin();
    pthread_barrier_wait(&begun);
    pthread_barrier_wait(&done);
    end();
    return NULL;
}

static void *thread_b(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&begun);
    if (what != 0)
        cuCtxSetCurrent(y);     /* a: none current (a new thread's) */
    b_call();
    pthread_barrier_wait(&done);
    return NULL;
}

/* B is the capturing thread */
static void *thread_self(void *arg)
{
    (void)arg;
    cuCtxSetCurrent(x);
    begin();
    cuCtxSetCurrent(what == 0 ? NULL : y);
    b_call();
    cuCtxSetCurrent(x);
    end();
    return NULL;
}

static unsigned long long pool_used(CUdevice dev)
{
    CUmemoryPool pool;
    cuuint64_t used = 0;
    if (cuDeviceGetDefaultMemPool(&pool, dev) || cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used))
        return ~0ull;
    return (unsigned long long)used;
}

/* One case, in a child of its own: 0, else the step that failed. */
static int run_case(int self)
{
    CUdevice dev;
    CUstream sy;
    pthread_t a, b;
    unsigned long long before, after;
    alarm(20);
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate_v2(&x, 0, dev) || cuMemAlloc(&buf, 4096)
        || cuStreamCreate(&sx, CU_STREAM_NON_BLOCKING))
        return 10;
    if (cuCtxCreate_v2(&y, 0, dev))
        return 11;
    if (what == 0 || what == 2) {
        if (cuStreamCreate(&sy, CU_STREAM_NON_BLOCKING) || cuMemAllocAsync(&p, BYTES, sy) || cuStreamSynchronize(sy)
            || cuStreamDestroy(sy))
            return 12;
        if (what == 0 && cuCtxDestroy(y))
            return 13;
    }
    if (what >= 4) {    /* e - n: their objects, in Y (current after its create) */
        CUgraphNode node;
        CUresult r[] = {cuGraphCreate(&g_made, 0), CUDA_SUCCESS, CUDA_SUCCESS,
                        cuLibraryLoadData(&lib_made, ptx, NULL, NULL, 0, NULL, NULL, 0), cuModuleLoadData(&mod_made, ptx),
                        cuMemHostAlloc(&host_made, 4096, 0), cuEventCreate(&ev_made, 0),
                        cuStreamCreate(&st_made, CU_STREAM_NON_BLOCKING), cuStreamCreate(&st_blocking, 0),
                        CUDA_SUCCESS};
        if (!r[7])
            r[9] = cuMemAllocAsync(&p_made, 4096, st_made) ? 1 : cuStreamSynchronize(st_made);
        if (!r[0])
            r[1] = cuGraphAddEmptyNode(&node, g_made, NULL, 0);
        if (!r[1])
            r[2] = cuGraphInstantiate(&ge_made, g_made, 0);
        for (int i = 0; i < (int)(sizeof r / sizeof r[0]); i++)
            if (r[i]) {
                printf("(setup step %d: %d) ", i, (int)r[i]);
                fflush(stdout);
                return 14;
            }
    }
    cuCtxSetCurrent(x);
    before = pool_used(dev);
    pthread_barrier_init(&begun, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    if (self) {
        pthread_create(&b, NULL, thread_self, NULL);
    } else {
        pthread_create(&a, NULL, thread_a, NULL);
        pthread_create(&b, NULL, thread_b, NULL);
        pthread_join(a, NULL);
    }
    pthread_join(b, NULL);
    if (what == 2) {    /* the free's order done, so that the figure can follow */
        cuCtxSetCurrent(y);
        cuCtxSynchronize();
    }
    after = pool_used(dev);
    printf("%-12s %-7s %s %-26s begin %3d  B %3d  end %3d (%s)", mode_names[cap_mode], relaxed ? "RELAXED" : "default",
           self ? "self " : "other", what_names[what], (int)begin_rc, (int)b_rc, (int)end_rc,
           end_rc == CUDA_SUCCESS ? "intact" : end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ? "invalidated" : "?");
    if (what == 0 || what == 2)
        printf("  pool used %llu -> %llu", before, after);
    if (relaxed && (exch_rc || back_rc || b_had != CU_STREAM_CAPTURE_MODE_GLOBAL))
        printf("  exchange %d/%d, B's mode was %d", (int)exch_rc, (int)back_rc, (int)b_had);
    printf("\n");
    fflush(stdout);
    return 0;
}

static void one(int self)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(run_case(self));
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st) || WEXITSTATUS(st))
        printf("%-12s %-7s %s %-26s %s %d\n", mode_names[cap_mode], relaxed ? "RELAXED" : "default", self ? "self " : "other",
               what_names[what], WIFSIGNALED(st) ? "KILLED by signal" : "setup failed, step",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

int main(void)
{
    printf("capture      B mode  B     B's call                   return codes (901: the capture invalidated)\n");
    for (int m = 0; m < 3; m++) {
        cap_mode = (CUstreamCaptureMode)m;
        for (relaxed = 0; relaxed < 2; relaxed++)
            for (what = 0; what < 4; what++)
                one(0);
    }
    for (int m = 0; m < 3; m++) {
        cap_mode = (CUstreamCaptureMode)m;
        for (relaxed = 0; relaxed < 2; relaxed++)
            for (what = 0; what < 2; what++)
                one(1);
    }
    cap_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    relaxed = 0;
    for (what = 4; what < WHAT_COUNT; what++)
        one(0);
    return 0;
}
