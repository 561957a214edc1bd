/* SPDX-License-Identifier: MIT */
/* mpi_nccl.c - one MPI rank per GPU: each rank takes the GPU of its local
 * rank (its place among the ranks of its node), keeps its context, stream
 * and buffers with cuctx, and joins an NCCL communicator whose id rank 0
 * made and MPI broadcast; then the all-reduce of nccl_allreduce.c, checked
 * on every rank and timed.
 *
 * cuctx is per process: each rank has its own registry, its own handles,
 * its own contexts. MPI starts the processes and carries the NCCL id; NCCL
 * moves the data. Every rank's cuctx objects are under CUCTX_AUTO in one
 * function, so every error path of every rank cleans up before the rank
 * reports; the ranks agree on success after each phase (an MPI_Allreduce
 * of a flag), so that a rank that failed never leaves the others waiting
 * in an NCCL call, and the communicator is aborted, not destroyed, once
 * any rank has failed.
 *
 *   mpirun -np NGPUS examples/mpi_nccl     (with one GPU: examples/mpi_nccl)
 *
 * Output: a line per rank, then from rank 0
 *   mpi_nccl: N rank(s), B MiB per rank: algbw X GB/s, busbw Y GB/s
 * Exits 0 on every rank only if every rank's sum is right. Needs a GPU,
 * NCCL and MPI; make proof-gpu runs it. */
#include <cuctx.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define COUNT ((size_t)64 << 20)    /* floats per rank: 256 MiB */
#define ROUNDS 20

static int rank, nranks;

static int cuctx_fail(const char *what)
{
    fprintf(stderr, "mpi_nccl: rank %d: %s: %s\n", rank, what, cuctx_last_error_message());
    return 0;
}

static int nccl_fail(const char *what, ncclResult_t r)
{
    fprintf(stderr, "mpi_nccl: rank %d: %s: %s\n", rank, what, ncclGetErrorString(r));
    return 0;
}

/* Whether every rank says ok. */
static int all_ok(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The rank's GPU: its place among the ranks of its node, modulo the GPUs. */
static int local_gpu(int ngpus)
{
    MPI_Comm node;
    int local = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    return local % ngpus;
}

/* The cleanup of a communicator left by an error path: once a rank has
 * failed, the others may be inside an NCCL call of it, so it is aborted,
 * not destroyed. The way out that worked destroys it and leaves NULL. */
static void comm_abort(ncclComm_t *comm)
{
    if (*comm)
        ncclCommAbort(*comm);
}

static int run(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_mem send = {0}, recv = {0};
    CUCTX_AUTO cuctx_host_mem host = {0};
    ncclComm_t comm __attribute__((cleanup(comm_abort))) = NULL;
    int ok = 1, ngpus = 0;

    if (cuctx_init() != CUDA_SUCCESS || CUCTX_CALL(cuDeviceGetCount, &ngpus) != CUDA_SUCCESS || ngpus < 1)
        ok = cuctx_fail("no usable GPU");
    int dev = ok ? local_gpu(ngpus) : -1;
    if (ok && (cuctx_ctx_primary(&ctx, dev) != CUDA_SUCCESS
               || cuctx_stream_create(&s, ctx, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS
               || cuctx_mem_alloc(&send, ctx, COUNT * sizeof(float)) != CUDA_SUCCESS
               || cuctx_mem_alloc(&recv, ctx, COUNT * sizeof(float)) != CUDA_SUCCESS
               || cuctx_host_mem_alloc(&host, ctx, 1024 * sizeof(float), 0) != CUDA_SUCCESS))
        ok = cuctx_fail("context, stream and buffers");
    if (ok) {
        /* rank r contributes r + 1 everywhere */
        float v = (float)(rank + 1);
        unsigned bits;
        memcpy(&bits, &v, sizeof bits);
        if (CUCTX_CALL(cuMemsetD32Async, cuctx_mem_ptr(send), bits, COUNT, cuctx_stream_raw(s)) != CUDA_SUCCESS)
            ok = cuctx_fail("cuMemsetD32Async");
    }
    if (!all_ok(ok))
        return 0;       /* every rank's objects are destroyed on the way out */
    char name[128] = "";
    CUCTX_CALL(cuDeviceGetName, name, (int)sizeof name, dev);
    printf("rank %d of %d: GPU %d (%s)\n", rank, nranks, dev, name);

    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        ok = nccl_fail("ncclGetUniqueId", r);
    if (!all_ok(ok))
        return 0;
    MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    /* NCCL works in the current context: the rank's (its device's primary) */
    CUCTX_GUARD(ctx);
    if ((r = ncclCommInitRank(&comm, nranks, id, rank)) != ncclSuccess)
        ok = nccl_fail("ncclCommInitRank", r);
    if (!all_ok(ok))
        return 0;

    double t0 = 0;
    for (int round = 0; ok && round <= ROUNDS; round++) {
        if (round == 1) {       /* round 0 warms up and is checked */
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        r = ncclAllReduce((const void *)(uintptr_t)cuctx_mem_ptr(send), (void *)(uintptr_t)cuctx_mem_ptr(recv),
                          COUNT, ncclFloat, ncclSum, comm, (cudaStream_t)cuctx_stream_raw(s));
        if (r != ncclSuccess)
            ok = nccl_fail("ncclAllReduce", r);
        else if (cuctx_stream_synchronize(s) != CUDA_SUCCESS)
            ok = cuctx_fail("synchronize");
        if (ok && round == 0) {
            float want = (float)nranks * (float)(nranks + 1) / 2.0f, *h = cuctx_host_mem_ptr(host);
            unsigned wrong = 0;
            size_t at[3] = {0, COUNT / 2, COUNT - 1024};
            for (int k = 0; ok && k < 3; k++) {
                if (CUCTX_CALL(cuMemcpyDtoHAsync, h, cuctx_mem_ptr(recv) + at[k] * sizeof(float),
                               1024 * sizeof(float), cuctx_stream_raw(s)) != CUDA_SUCCESS
                    || cuctx_stream_synchronize(s) != CUDA_SUCCESS)
                    ok = cuctx_fail("copying the result back");
                for (int j = 0; ok && j < 1024; j++)
                    wrong += h[j] != want;
            }
            printf("rank %d: check: %.0f in the 3 x 1024 places looked at: %u wrong\n", rank, want, wrong);
            ok = ok && wrong == 0;
        }
        if (!all_ok(ok))
            return 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double per = (MPI_Wtime() - t0) / ROUNDS;
    if (rank == 0) {
        double algbw = (double)(COUNT * sizeof(float)) / per / 1e9;
        printf("mpi_nccl: %d rank(s), %zu MiB per rank: %.3f ms a round, algbw %.1f GB/s, busbw %.1f GB/s\n", nranks,
               COUNT * sizeof(float) >> 20, per * 1e3, algbw, algbw * 2.0 * (nranks - 1) / nranks);
    }
    ncclCommDestroy(comm);
    comm = NULL;
    return 1;
}   /* the guard, comm (if left), host, recv, send, s, ctx: in that order, on every path */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int ok = all_ok(run());
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    if (st.ctx_handles + st.streams + st.mems + st.host_mems != 0) {
        fprintf(stderr, "mpi_nccl: rank %d: cuctx objects left alive\n", rank);
        ok = 0;
    }
    ok = all_ok(ok);
    if (rank == 0)
        printf("mpi_nccl: %s\n", ok ? "every rank's sum is right, every rank cleaned up" : "FAILED");
    MPI_Finalize();
    return ok ? 0 : 1;
}
