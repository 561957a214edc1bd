/* SPDX-License-Identifier: MIT */
/* peer_ipc: what the real driver does with peer access and CUDA IPC where
 * cuda.h does not say (issue 23), each fact in a process of its own (a
 * forked child that starts CUDA itself; a crash shows as its signal):
 *
 *   peer (two GPUs; with one, only what one device can show):
 *     can         cuDeviceCanAccessPeer for every pair, a device and itself
 *     one_device  enable between two contexts of one device, and a context
 *                 and itself
 *     twice       enable twice (704?), disable twice (705?), from A current
 *     peer_died   enable A->B, destroy B, then cuCtxDisablePeerAccess(B)
 *                 with A current: the disable cuctx skips (simulator: a
 *                 misuse); and with B's address taken by a new context C
 *     from_died   enable A->B, destroy A, then with B current
 *                 cuCtxEnablePeerAccess(A's address taken by a new context)
 *     green       enable from a green context's CUcontext to B, and from B
 *                 to it (one GPU: to/from another context of the device)
 *     primary     between primary contexts held twice (a second retain
 *                 stands in for the CUDA runtime's): access after one
 *                 retain's release, and after the context ended and came
 *                 back (new id, same address); with -DWITH_CUDART also
 *                 cudaDeviceEnablePeerAccess first, then the driver's enable
 *   ipc (an exporter, and an importer it spawns with posix_spawn):
 *     own         the exporting process opens its own handle, in another
 *                 context and in the exporting one (memory and event)
 *     free        the importer maps; the exporter frees; the importer's
 *                 memset, copy and close
 *     exit        the same when the exporter process exits instead
 *     freed_first the exporter frees before the importer opens
 *     open_twice  opened twice in one context: the same pointer? closes
 *     event       the exporter destroys its event; the importer records,
 *                 synchronizes, waits on and destroys its copy
 *
 *   gcc -O2 -I/usr/local/cuda/include peer_ipc.c -L/usr/local/cuda/lib64/stubs -lcuda -o peer_ipc
 *   (or add -DWITH_CUDART -L/usr/local/cuda/lib64 -lcudart) && ./peer_ipc [fact ...]
 * Output: one "fact NAME: ..." line per step, driver codes by name. */
#include <cuda.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef WITH_CUDART
#include <cuda_runtime_api.h>
#endif

extern char **environ;

#define BYTES (1u << 20)

static const char *rcs(CUresult rc)
{
    const char *n = NULL;
    static char buf[32];
    if (cuGetErrorName(rc, &n) == CUDA_SUCCESS && n)
        return n;
    snprintf(buf, sizeof buf, "%d", (int)rc);
    return buf;
}

static void fact(const char *name, const char *fmt, ...)
{
    va_list ap;
    printf("fact %s: ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static int ngpus(void)
{
    int n = 0;
    cuDeviceGetCount(&n);
    return n;
}

/* (cuCtxCreate is cuCtxCreate_v4 in CUDA 13's cuda.h: the params NULL) */
static CUcontext ctx_on(int dev)
{
    CUcontext c = NULL;
    CUresult rc = cuCtxCreate(&c, NULL, 0, dev);
    if (rc != CUDA_SUCCESS) {
        fact("setup", "cuCtxCreate on device %d: %s", dev, rcs(rc));
        _exit(2);
    }
    cuCtxPopCurrent(NULL);
    return c;
}

/* ---- peer ----------------------------------------------------------------------- */

static void peer_can(void)
{
    for (int a = 0; a < ngpus(); a++)
        for (int b = 0; b < ngpus(); b++) {
            int can = -1;
            CUresult rc = cuDeviceCanAccessPeer(&can, a, b);
            fact("can", "cuDeviceCanAccessPeer(%d, %d): %s, %d", a, b, rcs(rc), can);
        }
}

static void peer_one_device(void)
{
    CUcontext a = ctx_on(0), b = ctx_on(0);
    cuCtxPushCurrent(a);
    fact("one_device", "enable to another context of device 0: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    fact("one_device", "enable to itself: %s", rcs(cuCtxEnablePeerAccess(a, 0)));
    fact("one_device", "disable of another context of device 0: %s", rcs(cuCtxDisablePeerAccess(b)));
    cuCtxPopCurrent(NULL);
    cuCtxDestroy(b);
    cuCtxDestroy(a);
}

static int two(const char *name)
{
    if (ngpus() >= 2)
        return 1;
    fact(name, "needs two GPUs, this machine has %d", ngpus());
    return 0;
}

static void peer_twice(void)
{
    if (!two("twice"))
        return;
    CUcontext a = ctx_on(0), b = ctx_on(1);
    cuCtxPushCurrent(a);
    fact("twice", "enable: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    fact("twice", "enable again: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    fact("twice", "disable: %s", rcs(cuCtxDisablePeerAccess(b)));
    fact("twice", "disable again: %s", rcs(cuCtxDisablePeerAccess(b)));
    fact("twice", "flags 1: %s", rcs(cuCtxEnablePeerAccess(b, 1)));
    cuCtxPopCurrent(NULL);
    cuCtxDestroy(b);
    cuCtxDestroy(a);
}

static void peer_died(void)
{
    if (!two("peer_died"))
        return;
    CUcontext a = ctx_on(0), b = ctx_on(1);
    cuCtxPushCurrent(a);
    fact("peer_died", "enable A->B: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    fact("peer_died", "destroy B: %s", rcs(cuCtxDestroy(b)));
    fact("peer_died", "disable(B) with A current, B dead: %s", rcs(cuCtxDisablePeerAccess(b)));
    CUcontext c = ctx_on(1);
    fact("peer_died", "a new context C on device 1: %s B's address", c == b ? "at" : "not at");
    fact("peer_died", "disable(C) with A current: %s", rcs(cuCtxDisablePeerAccess(c)));
    fact("peer_died", "enable(C): %s", rcs(cuCtxEnablePeerAccess(c, 0)));
    fact("peer_died", "disable(C): %s", rcs(cuCtxDisablePeerAccess(c)));
    cuCtxPopCurrent(NULL);
    cuCtxDestroy(c);
    cuCtxDestroy(a);
}

static void peer_from_died(void)
{
    if (!two("from_died"))
        return;
    CUcontext a = ctx_on(0), b = ctx_on(1);
    cuCtxPushCurrent(a);
    fact("from_died", "enable A->B: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    cuCtxPopCurrent(NULL);
    fact("from_died", "destroy A: %s", rcs(cuCtxDestroy(a)));
    CUcontext a2 = ctx_on(0);
    fact("from_died", "a new context A2 on device 0: %s A's address", a2 == a ? "at" : "not at");
    cuCtxPushCurrent(a2);
    fact("from_died", "disable(B) with A2 current (A2 never enabled it): %s", rcs(cuCtxDisablePeerAccess(b)));
    fact("from_died", "enable(B) from A2: %s", rcs(cuCtxEnablePeerAccess(b, 0)));
    cuCtxPopCurrent(NULL);
    cuCtxDestroy(a2);
    cuCtxDestroy(b);
}

static void peer_green(void)
{
    CUdevResource all, part[1], rest;
    unsigned n = 1;
    CUdevResourceDesc desc = NULL;
    CUgreenCtx g = NULL;
    CUcontext gc = NULL;
    CUresult rc = cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (rc == CUDA_SUCCESS)
        rc = cuDevSmResourceSplitByCount(part, &n, &all, &rest, 0, 16);
    if (rc == CUDA_SUCCESS)
        rc = cuDevResourceGenerateDesc(&desc, part, 1);
    if (rc == CUDA_SUCCESS)
        rc = cuGreenCtxCreate(&g, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM);
    if (rc == CUDA_SUCCESS)
        rc = cuCtxFromGreenCtx(&gc, g);
    if (rc != CUDA_SUCCESS) {
        fact("green", "no green context: %s", rcs(rc));
        return;
    }
    int other = ngpus() >= 2 ? 1 : 0;
    CUcontext b = ctx_on(other);
    cuCtxPushCurrent(gc);
    fact("green", "enable from the green context (device 0) to B (device %d): %s", other,
         rcs(cuCtxEnablePeerAccess(b, 0)));
    fact("green", "disable of it: %s", rcs(cuCtxDisablePeerAccess(b)));
    cuCtxPopCurrent(NULL);
    cuCtxPushCurrent(b);
    fact("green", "enable from B to the green context: %s", rcs(cuCtxEnablePeerAccess(gc, 0)));
    fact("green", "disable of it: %s", rcs(cuCtxDisablePeerAccess(gc)));
    CUcontext p0 = NULL;
    cuDevicePrimaryCtxRetain(&p0, 0);
    fact("green", "enable from B to the primary context under it: %s", rcs(cuCtxEnablePeerAccess(p0, 0)));
    cuCtxPopCurrent(NULL);
    fact("green", "destroy the green context: %s", rcs(cuGreenCtxDestroy(g)));
    cuCtxPushCurrent(b);
    fact("green", "then disable(primary) from B: %s", rcs(cuCtxDisablePeerAccess(p0)));
    cuCtxPopCurrent(NULL);
    cuDevicePrimaryCtxRelease(0);
    cuCtxDestroy(b);
}

static void peer_primary(void)
{
    if (!two("primary"))
        return;
    CUcontext p0, p1, again;
    unsigned long long id1 = 0, id1b = 0;
#ifdef WITH_CUDART
    /* the runtime's own enable, in the primary contexts it retains */
    cudaSetDevice(0);
    fact("primary", "cudaDeviceEnablePeerAccess(1): %d", (int)cudaDeviceEnablePeerAccess(1, 0));
#endif
    cuDevicePrimaryCtxRetain(&p0, 0);
    cuDevicePrimaryCtxRetain(&p0, 0);   /* a second holder: as the runtime */
    cuDevicePrimaryCtxRetain(&p1, 1);
    cuDevicePrimaryCtxRetain(&p1, 1);
    cuCtxGetId(p1, &id1);
    cuCtxPushCurrent(p0);
    fact("primary", "enable P0->P1: %s", rcs(cuCtxEnablePeerAccess(p1, 0)));
    cuCtxPopCurrent(NULL);
    cuDevicePrimaryCtxRelease(1);       /* one holder lets go: P1 lives on */
    cuCtxPushCurrent(p0);
    fact("primary", "disable(P1) after one of its two releases: %s", rcs(cuCtxDisablePeerAccess(p1)));
    fact("primary", "enable P0->P1 again: %s", rcs(cuCtxEnablePeerAccess(p1, 0)));
    cuCtxPopCurrent(NULL);
    cuDevicePrimaryCtxRelease(1);       /* the last: P1 ends */
    cuDevicePrimaryCtxRetain(&again, 1);
    cuCtxGetId(again, &id1b);
    fact("primary", "P1 retained again: %s address, id %llu then %llu", again == p1 ? "same" : "another", id1, id1b);
    cuCtxPushCurrent(p0);
    fact("primary", "disable(P1) of the access to the ended P1: %s", rcs(cuCtxDisablePeerAccess(again)));
    fact("primary", "enable to the new P1: %s", rcs(cuCtxEnablePeerAccess(again, 0)));
    fact("primary", "disable of it: %s", rcs(cuCtxDisablePeerAccess(again)));
    cuCtxPopCurrent(NULL);
    cuDevicePrimaryCtxRelease(1);
    cuDevicePrimaryCtxRelease(0);
    cuDevicePrimaryCtxRelease(0);
}

/* ---- IPC ---------------------------------------------------------------------------- */

static void hex(const void *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", ((const unsigned char *)p)[i]);
}

static void unhex(const char *s, void *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(s + 2 * i, "%2x", &v);
        ((unsigned char *)p)[i] = (unsigned char)v;
    }
}

static void ipc_own(void)
{
    CUcontext a = ctx_on(0), b = ctx_on(0);
    CUdeviceptr p = 0, q = 0;
    CUevent e = NULL, e2 = NULL;
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    cuCtxPushCurrent(a);
    cuMemAlloc(&p, BYTES);
    cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
    fact("own", "cuIpcGetMemHandle: %s", rcs(cuIpcGetMemHandle(&mh, p)));
    fact("own", "cuIpcGetEventHandle: %s", rcs(cuIpcGetEventHandle(&eh, e)));
    fact("own", "open in the exporting context: %s", rcs(cuIpcOpenMemHandle(&q, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)));
    cuCtxPopCurrent(NULL);
    cuCtxPushCurrent(b);
    fact("own", "open in another context of the process: %s",
         rcs(cuIpcOpenMemHandle(&q, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)));
    fact("own", "open the event in another context: %s", rcs(cuIpcOpenEventHandle(&e2, eh)));
    cuCtxPopCurrent(NULL);
    cuCtxDestroy(b);
    cuCtxDestroy(a);
}

/* The importer, a process of its own: fd 0 carries the exporter's go (a
 * byte, or EOF when it exited), fd 3 its ack to the exporter. */
static int importer(const char *mode, const char *mhex, const char *ehex)
{
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    unhex(mhex, &mh, sizeof mh);
    unhex(ehex, &eh, sizeof eh);
    if (cuInit(0) != CUDA_SUCCESS)
        return 2;
    int dev = ngpus() >= 2 ? 1 : 0;
    CUcontext c = ctx_on(dev);
    cuCtxPushCurrent(c);
    CUdeviceptr q = 0, q2 = 0;
    CUevent e = NULL;
    CUstream s = NULL;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    CUresult rc = cuIpcOpenMemHandle(&q, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    fact(mode, "importer (device %d): open: %s", dev, rcs(rc));
    fact(mode, "importer: open the event: %s", rcs(cuIpcOpenEventHandle(&e, eh)));
    if (strcmp(mode, "open_twice") == 0 && rc == CUDA_SUCCESS) {
        CUresult again = cuIpcOpenMemHandle(&q2, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        fact(mode, "importer: open again: %s, %s pointer", rcs(again), q2 == q ? "the same" : "another");
        fact(mode, "importer: close: %s", rcs(cuIpcCloseMemHandle(q)));
        unsigned v = 0;
        fact(mode, "importer: read after one close: %s", rcs(cuMemcpyDtoH(&v, q, sizeof v)));
        fact(mode, "importer: close again: %s", rcs(cuIpcCloseMemHandle(q)));
        fact(mode, "importer: a third close: %s", rcs(cuIpcCloseMemHandle(q)));
        return 0;
    }
    char ack = 1, go;
    if (write(3, &ack, 1) != 1)
        return 3;
    ssize_t got = read(0, &go, 1);
    fact(mode, "importer: the exporter %s", got == 1 ? "acted and lives" : "has exited");
    if (rc == CUDA_SUCCESS) {
        unsigned v = 0;
        fact(mode, "importer: read the mapping: %s (first word %#x)", rcs(cuMemcpyDtoH(&v, q, sizeof v)), v);
        fact(mode, "importer: memset the mapping: %s", rcs(cuMemsetD8(q, 7, BYTES)));
        fact(mode, "importer: synchronize: %s", rcs(cuCtxSynchronize()));
    }
    if (e) {
        fact(mode, "importer: record the event: %s", rcs(cuEventRecord(e, s)));
        fact(mode, "importer: wait on it: %s", rcs(cuStreamWaitEvent(s, e, 0)));
        fact(mode, "importer: synchronize it: %s", rcs(cuEventSynchronize(e)));
        fact(mode, "importer: destroy it: %s", rcs(cuEventDestroy(e)));
    }
    if (rc == CUDA_SUCCESS)
        fact(mode, "importer: close: %s", rcs(cuIpcCloseMemHandle(q)));
    cuStreamDestroy(s);
    cuCtxPopCurrent(NULL);
    fact(mode, "importer: destroy its context: %s", rcs(cuCtxDestroy(c)));
    return 0;
}

/* The exporter of one IPC fact, in a forked child: it spawns the importer. */
static void ipc_case(const char *mode)
{
    CUcontext a = ctx_on(0);
    CUdeviceptr p = 0;
    CUevent e = NULL;
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    cuCtxPushCurrent(a);
    cuMemAlloc(&p, BYTES);
    cuMemsetD32(p, 0x12345678u, BYTES / 4);
    cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
    cuEventRecord(e, NULL);
    cuIpcGetMemHandle(&mh, p);
    cuIpcGetEventHandle(&eh, e);
    if (strcmp(mode, "freed_first") == 0)
        fact(mode, "exporter: cuMemFree before the importer opens: %s", rcs(cuMemFree(p)));
    char mx[2 * sizeof mh + 1], ex[2 * sizeof eh + 1];
    hex(&mh, sizeof mh, mx);
    hex(&eh, sizeof eh, ex);
    int go[2], ack[2];
    if (pipe(go) != 0 || pipe(ack) != 0)
        _exit(2);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, go[0], 0);
    posix_spawn_file_actions_adddup2(&fa, ack[1], 3);
    posix_spawn_file_actions_addclose(&fa, go[1]);
    posix_spawn_file_actions_addclose(&fa, ack[0]);
    char a0[] = "peer_ipc", a1[] = "--importer";
    char m[32];
    snprintf(m, sizeof m, "%s", mode);
    char *argv[] = {a0, a1, m, mx, ex, NULL};
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    if (err != 0) {
        fact(mode, "posix_spawn: %s", strerror(err));
        _exit(2);
    }
    close(go[0]);
    close(ack[1]);
    char c;
    if (read(ack[0], &c, 1) != 1) {     /* the importer has opened (or it is open_twice, done) */
        waitpid(pid, NULL, 0);
        return;
    }
    if (strcmp(mode, "exit") == 0)
        _exit(0);                       /* the exporter's process ends: its pipe end closes */
    if (strcmp(mode, "free") == 0)
        fact(mode, "exporter: cuMemFree while the importer maps it: %s", rcs(cuMemFree(p)));
    if (strcmp(mode, "event") == 0)
        fact(mode, "exporter: cuEventDestroy while the importer has it: %s", rcs(cuEventDestroy(e)));
    c = 1;
    if (write(go[1], &c, 1) != 1)
        _exit(2);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        fact(mode, "importer: killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    cuCtxPopCurrent(NULL);
    fact(mode, "exporter: destroy its context: %s", rcs(cuCtxDestroy(a)));
}

/* ---- the runner ---------------------------------------------------------------------- */

static const struct { const char *name; void (*fn)(void); } peer_facts[] = {
    {"can", peer_can}, {"one_device", peer_one_device}, {"twice", peer_twice}, {"peer_died", peer_died},
    {"from_died", peer_from_died}, {"green", peer_green}, {"primary", peer_primary}, {"own", ipc_own},
};
static const char *const ipc_facts[] = {"free", "exit", "freed_first", "open_twice", "event"};

static int wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

/* fn (or the IPC case mode) in a forked child that starts CUDA itself. */
static void run(const char *name, void (*fn)(void), const char *mode)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        CUresult rc = cuInit(0);
        if (rc != CUDA_SUCCESS) {
            fact(name, "cuInit: %s", rcs(rc));
            _exit(2);
        }
        if (fn)
            fn();
        else
            ipc_case(mode);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    if (WIFSIGNALED(status))
        fact(name, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (mode && strcmp(mode, "exit") == 0)
        sleep(5);       /* the importer its exporter left behind finishes its lines */
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--importer") == 0)
        return importer(argv[2], argv[3], argv[4]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof peer_facts / sizeof peer_facts[0]; i++)
        if (wanted(argc, argv, peer_facts[i].name))
            run(peer_facts[i].name, peer_facts[i].fn, NULL);
    for (size_t i = 0; i < sizeof ipc_facts / sizeof ipc_facts[0]; i++)
        if (wanted(argc, argv, ipc_facts[i]))
            run(ipc_facts[i], NULL, ipc_facts[i]);
    return 0;
}
