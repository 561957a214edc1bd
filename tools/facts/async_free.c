/* SPDX-License-Identifier: MIT */
/* async_free: what frees a stream-ordered allocation safely, and where
 * such memory lives. Each scenario runs in a forked child; the parent
 * never calls cuInit. Run by hand on a GPU:
 *   gcc -O2 -I/usr/local/cuda/include async_free.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread && ./a.out
 * The first table: a kernel that spins 200 ms and then writes a marker
 * into p is queued on stream s; s is destroyed; p is freed one way; at
 * once a new allocation q of the same size is made on another stream and
 * filled with 0x55555555; after a synchronize q[0] tells whether the
 * kernel wrote into memory the free had handed on (q == p, q[0] the
 * marker). The free's own time says whether it waited for the kernel. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define R(call) report(#call, (call))
static CUresult report(const char *what, CUresult rc)
{
    const char *name = "?";
    cuGetErrorName(rc, &name);
    printf("    %-70s -> %d %s\n", what, (int)rc, name);
    fflush(stdout);
    return rc;
}
static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static const char spin_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 spin_p, .param .u64 spin_ns, .param .u32 spin_v)\n{\n"
    "    .reg .pred %p<2>;\n    .reg .b32 %r<2>;\n    .reg .b64 %rd<6>;\n"
    "    ld.param.u64 %rd1, [spin_p];\n    ld.param.u64 %rd2, [spin_ns];\n    ld.param.u32 %r1, [spin_v];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n    mov.u64 %rd3, %globaltimer;\n    add.u64 %rd4, %rd3, %rd2;\n"
    "LOOP:\n    mov.u64 %rd5, %globaltimer;\n    setp.lt.u64 %p1, %rd5, %rd4;\n    @%p1 bra LOOP;\n"
    "    st.global.u32 [%rd1], %r1;\n    ret;\n}\n";

static CUdevice dev;
static CUcontext ctx;
static CUfunction spin;
static int setup(void)
{
    CUmodule m;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, NULL, 0, dev))
        return 1;
    if (cuModuleLoadData(&m, spin_ptx) || cuModuleGetFunction(&spin, m, "spin"))
        return printf("    spin kernel did not load\n"), 1;
    return 0;
}
static CUresult launch_spin(CUstream s, CUdeviceptr p, unsigned long long ns, unsigned v)
{
    void *args[] = {&p, &ns, &v};
    return cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}
static size_t used(CUmemoryPool pool)
{
    cuuint64_t u = 0;
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u);
    return (size_t)u;
}

#define SIZE (1u << 20)
#define MARK 0xAAAAAAAAu
static int way, nonblocking;
static const char *const ways[] = {
    "cuMemFree(p)", "cuMemFree(p), no context current", "cuMemFreeAsync(p, CU_STREAM_LEGACY)",
    "cuMemFreeAsync(p, NULL)", "cuMemFreeAsync(p, another live stream)",
    "cuCtxSynchronize(), then cuMemFreeAsync(p, CU_STREAM_LEGACY)", "cuCtxSynchronize(), then cuMemFree(p)",
    "cuMemFreeAsync(p, CU_STREAM_PER_THREAD)"};
#define WAYS (int)(sizeof ways / sizeof *ways)

static int stream_gone(void)
{
    CUstream s, s2, s3;
    CUdeviceptr p, q;
    CUmemoryPool pool;
    unsigned v = 0;
    if (setup() || cuDeviceGetDefaultMemPool(&pool, dev))
        return 10;
    cuStreamCreate(&s, nonblocking ? CU_STREAM_NON_BLOCKING : 0);
    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING);
    if (cuMemAllocAsync(&p, SIZE, s) || launch_spin(s, p, 200000000ull, MARK))
        return 11;
    cuStreamDestroy(s);
    size_t before = used(pool);
    double t0 = now_us();
    CUresult rc;
    CUcontext popped;
    switch (way) {
    case 0: rc = cuMemFree(p); break;
    case 1: cuCtxPopCurrent(&popped); rc = cuMemFree(p); cuCtxPushCurrent(popped); break;
    case 2: rc = cuMemFreeAsync(p, CU_STREAM_LEGACY); break;
    case 3: rc = cuMemFreeAsync(p, NULL); break;
    case 4: rc = cuMemFreeAsync(p, s2); break;
    case 5: cuCtxSynchronize(); rc = cuMemFreeAsync(p, CU_STREAM_LEGACY); break;
    case 6: cuCtxSynchronize(); rc = cuMemFree(p); break;
    default: rc = cuMemFreeAsync(p, CU_STREAM_PER_THREAD); break;
    }
    double t1 = now_us();
    size_t after = used(pool);
    CUresult arc = cuMemAllocAsync(&q, SIZE, s3);
    cuMemsetD32Async(q, 0x55555555u, SIZE / 4, s3);
    cuStreamSynchronize(s3);
    double t2 = now_us();
    cuCtxSynchronize();
    cuMemcpyDtoH(&v, q, 4);
    printf("    free -> %d in %.0f us; pool used %zu -> %zu, %zu after a synchronize; q %s p (alloc %d, ready %.0f us after the free); q[0] %s\n",
           (int)rc, t1 - t0, before, after, used(pool), q == p ? "==" : "!=", (int)arc, t2 - t1,
           v == MARK ? "THE KERNEL'S MARKER: freed under it" : v == 0x55555555u ? "0x55555555 (ours)" : "other");
    return 0;
}

/* The context destroyed while a kernel queued on its stream still runs:
 * does cuCtxDestroy wait for it, and is a cuMemFree with no context then
 * safe (the address handed on only after the kernel's last write)? */
static int context_gone(void)
{
    CUstream s, s3;
    CUdeviceptr p, q;
    CUcontext b;
    unsigned v = 0;
    if (setup())
        return 10;
    cuStreamCreate(&s, nonblocking ? CU_STREAM_NON_BLOCKING : 0);
    if (cuMemAllocAsync(&p, SIZE, s) || launch_spin(s, p, 200000000ull, MARK))
        return 11;
    double t0 = now_us();
    R(cuCtxDestroy(ctx));
    double t1 = now_us();
    R(cuMemFree(p));
    R(cuCtxCreate(&b, NULL, 0, dev));
    cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING);
    R(cuMemAllocAsync(&q, SIZE, s3));
    cuMemsetD32Async(q, 0x55555555u, SIZE / 4, s3);
    cuStreamSynchronize(s3);
    usleep(300000);
    cuCtxSynchronize();
    cuMemcpyDtoH(&v, q, 4);
    printf("    cuCtxDestroy took %.0f us; q %s p; q[0] %s\n", t1 - t0, q == p ? "==" : "!=",
           v == MARK ? "THE KERNEL'S MARKER: freed under it" : v == 0x55555555u ? "0x55555555 (ours)" : "other");
    return 0;
}

/* Where pool memory lives and who frees it. */
static int nocurrent_free(void)
{
    CUstream s;
    CUdeviceptr p;
    CUmemoryPool pool;
    CUcontext popped;
    if (setup() || cuDeviceGetDefaultMemPool(&pool, dev))
        return 10;
    cuStreamCreate(&s, 0);
    R(cuMemAllocAsync(&p, 64 << 20, s));
    R(cuStreamSynchronize(s));
    printf("    default pool used %zu\n", used(pool));
    cuCtxPopCurrent(&popped);
    R(cuMemFree(p));
    printf("    after cuMemFree with no context current: pool used %zu\n", used(pool));
    cuCtxPushCurrent(popped);
    R(cuCtxSynchronize());
    printf("    and after a synchronize in the context: pool used %zu\n", used(pool));
    /* a second allocation, freed by cuMemFreeAsync with no context current */
    R(cuMemAllocAsync(&p, 64 << 20, s));
    R(cuStreamSynchronize(s));
    cuCtxPopCurrent(&popped);
    R(cuMemFreeAsync(p, s));
    R(cuStreamSynchronize(s));
    printf("    after cuMemFreeAsync(p, s) with no context current: pool used %zu\n", used(pool));
    R(cuMemAllocAsync(&p, 4096, s));
    printf("    (cuMemAllocAsync(s) with no context current, above)\n");
    R(cuMemFreeAsync(p, NULL));
    printf("    (cuMemFreeAsync(p, NULL) with no context current, above)\n");
    return 0;
}

static int primary_reset(void)
{
    CUcontext pc;
    CUstream s;
    CUdeviceptr p, q;
    CUmemoryPool pool, mine;
    CUmemPoolProps pp;
    if (cuInit(0) || cuDeviceGet(&dev, 0))
        return 10;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 0;
    R(cuDevicePrimaryCtxRetain(&pc, dev));
    R(cuCtxSetCurrent(pc));
    R(cuDeviceGetDefaultMemPool(&pool, dev));
    R(cuMemPoolCreate(&mine, &pp));
    R(cuStreamCreate(&s, 0));
    CUdeviceptr e;
    R(cuMemAllocAsync(&p, 64 << 20, s));
    R(cuMemAllocFromPoolAsync(&e, 64 << 20, mine, s));
    R(cuStreamSynchronize(s));
    printf("    used: default %zu, explicit %zu\n", used(pool), used(mine));
    R(cuDevicePrimaryCtxReset(dev));
    printf("    after cuDevicePrimaryCtxReset: default %zu, explicit %zu\n", used(pool), used(mine));
    R(cuDevicePrimaryCtxRetain(&pc, dev));
    R(cuCtxSetCurrent(pc));
    R(cuStreamCreate(&s, 0));
    R(cuMemsetD32Async(p, 1, 16, s));
    R(cuStreamSynchronize(s));
    R(cuMemAllocAsync(&q, 64 << 20, s));
    R(cuStreamSynchronize(s));
    printf("    a new 64 MiB default-pool allocation after the reset: q %s p\n", q == p ? "==" : "!=");
    R(cuMemFree(p));
    printf("    after cuMemFree(p): default used %zu\n", used(pool));
    R(cuCtxSynchronize());
    printf("    after a synchronize: default used %zu\n", used(pool));
    R(cuMemFree(e));
    R(cuCtxSynchronize());
    printf("    after cuMemFree(e) and a synchronize: explicit used %zu\n", used(mine));
    return 0;
}

static int default_pool_after_destroy(void)
{
    CUstream s;
    CUdeviceptr p, q;
    CUmemoryPool pool;
    CUcontext b;
    if (setup() || cuDeviceGetDefaultMemPool(&pool, dev))
        return 10;
    cuStreamCreate(&s, 0);
    R(cuMemAllocAsync(&p, 64 << 20, s));
    R(cuStreamSynchronize(s));
    R(cuCtxDestroy(ctx));
    printf("    default pool used after cuCtxDestroy: %zu\n", used(pool));
    R(cuCtxCreate(&b, NULL, 0, dev));
    R(cuStreamCreate(&s, 0));
    R(cuMemAllocAsync(&q, 64 << 20, s));
    R(cuStreamSynchronize(s));
    printf("    new context's allocation: q %s p; used %zu\n", q == p ? "==" : "!=", used(pool));
    R(cuMemsetD32Async(p, 1, 16, s));
    R(cuStreamSynchronize(s));
    R(cuCtxDestroy(b));
    CUcontext cur = NULL;
    cuCtxGetCurrent(&cur);
    printf("    no context alive (current %p)\n", (void *)cur);
    R(cuMemFree(p));
    R(cuMemFree(q));
    printf("    used after both frees with no context alive: %zu\n", used(pool));
    R(cuCtxCreate(&b, NULL, 0, dev));
    R(cuCtxSynchronize());
    printf("    and in a new context after a synchronize: %zu\n", used(pool));
    return 0;
}

static int cross_context(void)
{
    CUstream s, sb;
    CUdeviceptr p;
    CUmemoryPool pool;
    CUcontext a, b;
    if (setup() || cuDeviceGetDefaultMemPool(&pool, dev))
        return 10;
    a = ctx;
    cuStreamCreate(&s, 0);
    R(cuMemAllocAsync(&p, 1 << 20, s));
    R(cuCtxCreate(&b, NULL, 0, dev));
    R(cuStreamCreate(&sb, 0));
    R(cuCtxSetCurrent(a));
    R(cuMemFreeAsync(p, sb));
    R(cuStreamSynchronize(sb));
    printf("    freed on a stream of another context: used %zu\n", used(pool));
    return 0;
}

static int pool_destroyed(void)
{
    CUstream s;
    CUdeviceptr p, p2;
    CUmemoryPool mine;
    CUmemPoolProps pp;
    if (setup())
        return 10;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 0;
    R(cuMemPoolCreate(&mine, &pp));
    cuStreamCreate(&s, 0);
    R(cuMemAllocFromPoolAsync(&p, 1 << 20, mine, s));
    R(cuMemAllocFromPoolAsync(&p2, 1 << 20, mine, s));
    R(cuStreamSynchronize(s));
    R(cuMemPoolDestroy(mine));
    R(cuMemFree(p));
    R(cuMemFree(p));
    printf("    (a second cuMemFree of the same pointer, above)\n");
    R(cuCtxDestroy(ctx));
    R(cuMemFree(p2));
    printf("    (the pool and the context destroyed, then cuMemFree, above)\n");
    return 0;
}

static int cost(void)
{
    CUstream s, s2;
    CUdeviceptr p, big;
    enum { N = 2000 };
    double t0, fa = 0, fs = 0, fl = 0;
    if (setup())
        return 10;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    for (int pass = 0; pass < 2; pass++) {
        fa = fs = fl = 0;
        for (int i = 0; i < N; i++) {
            cuMemAllocAsync(&p, 4096, s);
            t0 = now_us(); cuMemFreeAsync(p, s); fa += now_us() - t0;
            cuMemAllocAsync(&p, 4096, s);
            cuStreamSynchronize(s);
            t0 = now_us(); cuMemFree(p); fs += now_us() - t0;
            cuMemAllocAsync(&p, 4096, s);
            t0 = now_us(); cuMemFreeAsync(p, CU_STREAM_LEGACY); fl += now_us() - t0;
        }
    }
    printf("    per free (4 KiB, %d each): cuMemFreeAsync(p, s) %.2f us; cuMemFree(p), idle %.2f us; "
           "cuMemFreeAsync(p, CU_STREAM_LEGACY) %.2f us\n", N, fa / N, fs / N, fl / N);
    cuCtxSynchronize();
    /* does cuMemFree of idle pool memory wait for unrelated work? */
    cuMemAllocAsync(&p, 4096, s);
    cuMemAlloc(&big, 4096);
    cuStreamSynchronize(s);
    launch_spin(s2, big, 200000000ull, 1);
    t0 = now_us();
    R(cuMemFree(p));
    printf("    cuMemFree(p) of idle pool memory, a 200 ms kernel running on another stream: %.0f us\n", now_us() - t0);
    cuCtxSynchronize();
    cuMemAlloc(&p, 4096);
    launch_spin(s2, big, 200000000ull, 1);
    t0 = now_us();
    R(cuMemFree(p));
    printf("    cuMemFree(p) of cuMemAlloc memory, the same kernel running: %.0f us\n", now_us() - t0);
    return 0;
}

static int under_capture(void)
{
    CUstream s;
    CUdeviceptr p = 0;
    CUgraph g;
    if (setup())
        return 10;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    R(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    R(cuMemAllocAsync(&p, 4096, s));
    R(cuStreamEndCapture(s, &g));
    printf("    p = %#llx\n", (unsigned long long)p);
    R(cuMemFreeAsync(p, s));
    R(cuStreamSynchronize(s));
    R(cuMemFree(p));
    printf("    (the graph never launched: frees of its allocation's address, above)\n");
    return 0;
}

static void in_child(const char *name, int (*fn)(void))
{
    printf("%s\n", name);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = fn();
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

int main(void)
{
    char title[200];
    for (nonblocking = 0; nonblocking < 2; nonblocking++)
        for (way = 0; way < WAYS; way++) {
            snprintf(title, sizeof title, "stream gone (%s), 200 ms of work queued: %s",
                     nonblocking ? "non-blocking" : "blocking", ways[way]);
            in_child(title, stream_gone);
        }
    for (nonblocking = 0; nonblocking < 2; nonblocking++)
        in_child(nonblocking ? "context destroyed, 200 ms of work queued on a non-blocking stream; cuMemFree after"
                             : "context destroyed, 200 ms of work queued on a blocking stream; cuMemFree after",
                 context_gone);
    in_child("free with no context current", nocurrent_free);
    in_child("primary context reset with pool memory alive", primary_reset);
    in_child("default pool memory after its context's destroy", default_pool_after_destroy);
    in_child("freed on a stream of another context", cross_context);
    in_child("explicit pool destroyed with allocations alive", pool_destroyed);
    in_child("cost", cost);
    in_child("allocated under capture", under_capture);
    return 0;
}
