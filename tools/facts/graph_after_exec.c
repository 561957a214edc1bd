/* SPDX-License-Identifier: MIT */
/* graph_after_exec: is a CUgraph's destroy safe after a context its exec
 * was instantiated in was destroyed, with the exec never destroyed (what
 * cuctx does: the exec's destroy is skipped, since destroying it is a
 * crash)? And with a capture-made graph? Each round in a forked child, so a
 * crash is counted, not fatal. Four ways: the graph destroyed with no
 * context current, or with another live context current; the graph made by
 * cuGraphCreate + a memset node, or by stream capture of a memset and a
 * copy. A raw-driver program, run by hand on a GPU machine (not built):
 *   gcc -O2 -I/usr/local/cuda/include graph_after_exec.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./a.out [rounds]      (default 100 per way) */
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define OK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s -> %d\n", #x, (int)r_); _exit(10); } } while (0)

static int one_round(int captured, int other_current)
{
    CUdevice dev;
    CUcontext a, b = NULL;
    CUdeviceptr p;
    CUgraph g = NULL;
    CUgraphExec e;
    OK(cuInit(0));
    OK(cuDeviceGet(&dev, 0));
    OK(cuCtxCreate(&a, NULL, 0, dev));
    OK(cuMemAlloc(&p, 4096));
    if (captured) {
        CUstream s;
        static unsigned host[1024];
        OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        OK(cuMemsetD32Async(p, 7, 1024, s));
        OK(cuMemcpyDtoHAsync(host, p, 4096, s));
        OK(cuStreamEndCapture(s, &g));
        OK(cuStreamDestroy(s));
    } else {
        CUgraphNode n;
        CUDA_MEMSET_NODE_PARAMS m = {.dst = p, .value = 7, .elementSize = 4, .width = 1024, .height = 1};
        OK(cuGraphCreate(&g, 0));
        OK(cuGraphAddMemsetNode(&n, g, NULL, 0, &m, a));
    }
    OK(cuGraphInstantiate(&e, g, 0));
    OK(cuGraphLaunch(e, NULL));
    OK(cuCtxSynchronize());
    OK(cuCtxDestroy(a));                        /* the exec is never destroyed */
    if (other_current)
        OK(cuCtxCreate(&b, NULL, 0, dev));      /* current now */
    CUresult rc = cuGraphDestroy(g);
    if (b)
        OK(cuCtxDestroy(b));
    return rc == CUDA_SUCCESS ? 0 : 20 + (int)rc % 200;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    for (int way = 0; way < 4; way++) {
        int captured = way & 1, other = way >> 1, crashes = 0, failed = 0, ok = 0;
        for (int i = 0; i < rounds; i++) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0)
                _exit(one_round(captured, other));
            int st = 0;
            waitpid(pid, &st, 0);
            if (WIFSIGNALED(st))
                crashes++;
            else if (WEXITSTATUS(st) == 0)
                ok++;
            else
                failed++;
        }
        printf("graph %s, exec's context destroyed, cuGraphDestroy with %s current: %d ok, %d failed, %d crashed of %d\n",
               captured ? "by capture" : "by cuGraphCreate", other ? "another context" : "no context", ok, failed,
               crashes, rounds);
    }
    return 0;
}
