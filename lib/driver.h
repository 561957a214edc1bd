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
    X(cuModuleLoadDataEx, 2010, 1)              \
    X(cuModuleUnload, 2000, 1)                  \
    X(cuModuleGetFunction, 2000, 1)             \
    X(cuMemAlloc, 3020, 1)                      \
    X(cuMemFree, 3020, 1)                       \
    X(cuMemHostAlloc, 2020, 1)                  \
    X(cuMemFreeHost, 2000, 1)                   \
    X(cuGraphInstantiateWithFlags, 11040, 0)    \
    X(cuGraphExecDestroy, 10000, 0)             \
    X(cuGraphLaunch, 10000, 0)                  \
    X(cuLaunchKernel, 4000, 0)                  \
    X(cuGraphCreate, 10000, 0)                  \
    X(cuGraphDestroy, 10000, 0)                 \
    X(cuStreamBeginCapture, 10010, 0)           \
    X(cuStreamEndCapture, 10000, 0)             \
    X(cuThreadExchangeStreamCaptureMode, 10010, 0) \
    X(cuModuleGetGlobal, 3020, 0)               \
    X(cuLibraryLoadData, 12000, 0)              \
    X(cuLibraryLoadFromFile, 12000, 0)          \
    X(cuLibraryUnload, 12000, 0)                \
    X(cuLibraryGetKernel, 12000, 0)             \
    X(cuMemAllocAsync, 11020, 0)                \
    X(cuMemAllocFromPoolAsync, 11020, 0)        \
    X(cuMemFreeAsync, 11020, 0)                 \
    X(cuMemPoolCreate, 11020, 0)                \
    X(cuMemPoolDestroy, 11020, 0)               \
    X(cuMemPoolTrimTo, 11020, 0)                \
    X(cuMemPoolSetAttribute, 11020, 0)          \
    X(cuMemPoolGetAccess, 11020, 0)             \
    X(cuMemPoolSetAccess, 11020, 0)             \
    X(cuDeviceGetDefaultMemPool, 11020, 0)      \
    X(cuDeviceGetMemPool, 11020, 0)             \
    X(cuDeviceSetMemPool, 11020, 0)             \
    X(cuCtxEnablePeerAccess, 4000, 0)           \
    X(cuCtxDisablePeerAccess, 4000, 0)          \
    X(cuIpcGetMemHandle, 4010, 0)               \
    X(cuIpcOpenMemHandle, 11000, 0)             \
    X(cuIpcCloseMemHandle, 4010, 0)             \
    X(cuMemGetAddressRange, 3020, 0)            \
    X(cuPointerGetAttribute, 4000, 0)           \
    X(cuIpcGetEventHandle, 4010, 0)             \
    X(cuIpcOpenEventHandle, 4010, 0)            \
    CUCTX__DRIVER_ENTRIES_GREEN(X)

/* Green contexts (CUDA 12.4+): in the table where the toolkit's headers
 * have them (their types and typedefs came with 12.4). */
#if CUDA_VERSION >= 12040
#  define CUCTX__DRIVER_ENTRIES_GREEN(X)        \
    X(cuDeviceGetDevResource, 12040, 0)         \
    X(cuDevSmResourceSplitByCount, 12040, 0)    \
    X(cuDevResourceGenerateDesc, 12040, 0)      \
    X(cuGreenCtxCreate, 12040, 0)               \
    X(cuGreenCtxDestroy, 12040, 0)              \
    X(cuCtxFromGreenCtx, 12040, 0)              \
    CUCTX__DRIVER_ENTRIES_12050(X)
#else
#  define CUCTX__DRIVER_ENTRIES_GREEN(X)
#endif
/* cuStreamGetCtx_v2, which tells a green context's CUcontext apart
 * (entry.c), came with 12.5. */
#if CUDA_VERSION >= 12050
#  define CUCTX__DRIVER_ENTRIES_12050(X) X(cuStreamGetCtx, 12050, 0)
#else
#  define CUCTX__DRIVER_ENTRIES_12050(X)
#endif

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

/* Whether the driver has every entry point a feature calls (optional ones:
 * required 0 above): CUDA_SUCCESS, else CUDA_ERROR_NOT_SUPPORTED and the
 * message "fn: the driver has no WHAT (NEEDED)". The entry points are
 * named by their place in the table:
 *   CUCTX__DRIVER_NEEDS(fn, "graph support", "CUDA 10.0 or newer needed",
 *                       CUCTX__DRV_AT(cuGraphCreate), CUCTX__DRV_AT(cuGraphDestroy)) */
#define CUCTX__DRV_AT(name) offsetof(struct cuctx_driver, f_##name)
CUresult cuctx__driver_needs(const char *fn, const size_t *at, size_t n, const char *what, const char *needed);
/* (the list twice: once as the array, once for its length) */
#define CUCTX__DRIVER_NEEDS(fn, what, needed, ...)                                                       \
    cuctx__driver_needs((fn), (const size_t[]){__VA_ARGS__},                                             \
                        sizeof((const size_t[]){__VA_ARGS__}) / sizeof(size_t), (what), (needed))

/* Opens the driver (CUCTX_DRIVER, else libcuda.so.1), runs cuInit and
 * resolves the table; once, by init (init.c). On failure the return is
 * the error and *msg says why, a sentence starting "cuctx_init: ". */
CUresult cuctx__driver_load(const char **msg);
/* A driver entry point by name, ABI version and cuGetProcAddress flags. */
CUresult cuctx__driver_lookup(const char *name, int version, unsigned long long flags, void **out);

/* The driver's id of a context; *id 0 and CUDA_SUCCESS without cuCtxGetId. */
static inline CUresult cuctx__ctx_id(CUcontext raw, unsigned long long *id)
{
    *id = 0;
    return DRV(cuCtxGetId) ? DRV(cuCtxGetId)(raw, id) : CUDA_SUCCESS;
}

/* Whether a driver answer means the context is gone. */
static inline int cuctx__gone(CUresult rc)
{
    return rc == CUDA_ERROR_CONTEXT_IS_DESTROYED || rc == CUDA_ERROR_INVALID_CONTEXT;
}

/* Whether a driver answer is a capture's refusal of the call (a
 * synchronize of a capturing stream, say): not the call's failure. */
static inline int cuctx__capture_refused(CUresult rc)
{
    return rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

/* Set once the driver has shut down (it answered CUDA_ERROR_DEINITIALIZED,
 * or cuctx's exit hook ran): destroys no longer call it. */
extern _Atomic int cuctx__shutdown;
/* Whether a driver answer says it has shut down; remembers it if so. */
static inline int cuctx__driver_gone(CUresult rc)
{
    if (rc != CUDA_ERROR_DEINITIALIZED)
        return 0;
    atomic_store_explicit(&cuctx__shutdown, 1, memory_order_relaxed);
    return 1;
}

#endif
