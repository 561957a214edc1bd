/* SPDX-License-Identifier: MIT */
/* driver.h - the driver entry points cuctx calls, each pinned to the ABI
 * version of the typedef it is called through (cudaTypedefs.h). One table,
 * enumerable: later tools (fault injection, tracing) walk it. */
#ifndef CUCTX_DRIVER_H
#define CUCTX_DRIVER_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stddef.h>

/* X(name, version, required): PFN_<name>_v<version> is the type called through. */
#define CUCTX_DRIVER_ENTRIES(X)                 \
    X(cuInit, 2000, 1)                          \
    X(cuDriverGetVersion, 2020, 1)              \
    X(cuDeviceGetCount, 2000, 1)                \
    X(cuCtxCreate, 3020, 1)                     \
    X(cuCtxDestroy, 4000, 1)                    \
    X(cuCtxPushCurrent, 4000, 1)                \
    X(cuCtxPopCurrent, 4000, 1)                 \
    X(cuCtxSetCurrent, 4000, 1)                 \
    X(cuCtxGetCurrent, 4000, 1)                 \
    X(cuCtxGetDevice, 2000, 1)                  \
    X(cuCtxSynchronize, 2000, 1)                \
    X(cuCtxGetApiVersion, 3020, 1)              \
    X(cuDevicePrimaryCtxRetain, 7000, 1)        \
    X(cuDevicePrimaryCtxRelease, 11000, 1)      \
    X(cuDevicePrimaryCtxReset, 11000, 1)        \
    X(cuDevicePrimaryCtxGetState, 7000, 0)      \
    X(cuCtxGetId, 12000, 0)                     \
    X(cuEventCreate, 2000, 1)                   \
    X(cuEventDestroy, 4000, 1)                  \
    X(cuEventRecord, 2000, 1)                   \
    X(cuEventQuery, 2000, 1)                    \
    X(cuEventSynchronize, 2000, 1)              \
    X(cuEventElapsedTime, 2000, 1)              \
    X(cuStreamCreateWithPriority, 5050, 1)      \
    X(cuStreamDestroy, 4000, 1)                 \
    X(cuStreamSynchronize, 2000, 1)             \
    X(cuStreamWaitEvent, 3020, 1)               \
    X(cuModuleLoad, 2000, 1)                    \
    X(cuModuleLoadData, 2000, 1)                \
    X(cuModuleUnload, 2000, 1)                  \
    X(cuModuleGetFunction, 2000, 1)             \
    X(cuMemAlloc, 3020, 1)                      \
    X(cuMemFree, 3020, 1)                       \
    X(cuMemHostAlloc, 2020, 1)                  \
    X(cuMemFreeHost, 2000, 1)                   \
    X(cuGraphInstantiateWithFlags, 11040, 0)    \
    X(cuGraphExecDestroy, 10000, 0)             \
    X(cuGraphLaunch, 10000, 0)

/* Members are named f_<name>: token pasting keeps cuda.h's renaming macros
 * (cuCtxCreate -> cuCtxCreate_v4) away from them. */
#define CUCTX__DRV_MEMBER(name, version, required) PFN_##name##_v##version f_##name;
struct cuctx_driver {
    CUCTX_DRIVER_ENTRIES(CUCTX__DRV_MEMBER)
};
#undef CUCTX__DRV_MEMBER

struct cuctx_driver_entry {
    const char *name;
    int version;
    int required;
    size_t offset;      /* of the pointer in struct cuctx_driver */
};

extern struct cuctx_driver cuctx__drv;
extern const struct cuctx_driver_entry cuctx__drv_entries[];
extern const size_t cuctx__drv_entry_count;

/* The call: DRV(cuEventCreate)(&ev, flags). */
#define DRV(name) (cuctx__drv.f_##name)

/* Loads and initialises the driver once; the result on every call. The
 * check after the first success is one load, inlined into every entry point. */
CUresult cuctx__init_slow(const char *fn);
extern _Atomic int cuctx__init_ok;
static inline CUresult cuctx__ensure_init(const char *fn)
{
    if (__builtin_expect(atomic_load_explicit(&cuctx__init_ok, memory_order_acquire), 1))
        return CUDA_SUCCESS;
    return cuctx__init_slow(fn);
}

#endif
