/* SPDX-License-Identifier: MIT */
/*
 * cudasim.h - control API of the simulated CUDA driver used by cuctx's tests.
 *
 * The simulator (the .c files of tests/sim/, built as libcudasim.so) exports
 * cuGetProcAddress, cuGetProcAddress_v2 and the ABI symbols of every driver
 * entry point cuctx calls, behaving as the real driver was measured to
 * behave (an H200, driver 580.159.04).  Where the real driver crashes or silently corrupts another
 * owner's object, the simulator instead records a *misuse* and returns an
 * error, so a test can assert that cuctx never triggered one.
 *
 * Tests load the simulator with dlopen(getenv("CUCTX_DRIVER")) and reach
 * these functions with dlsym; a library without "cusim_reset" is the real
 * driver.
 *
 * Address recycling is a deliberate worst case, not a measurement: each new
 * object takes the most recently freed value of its kind, every time.  The
 * real driver reuses device-memory addresses nearly always but context
 * addresses only sometimes.
 *
 * Context ids (cuCtxGetId) count 1, 2, 3... for the whole process, never
 * reused and not restarted by cusim_reset: a recycled context value and a
 * primary context that becomes active again each get a new id.
 *
 * Bounds: the call log keeps the most recent 1,000,000 records (older ones
 * are dropped, index 0 is always the oldest kept); cusim_calls() counts stay
 * exact.  The misuse log keeps the text of the first 100,000 misuses;
 * cusim_misuse_count() stays exact and later texts read as a placeholder.
 */
#ifndef CUCTX_TESTS_CUDASIM_H
#define CUCTX_TESTS_CUDASIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One driver call as the simulator saw it.
 *
 * flags, arg and handle2 are what the call was asked, logged as passed (a
 * stream priority before clamping) even when the call failed or a fault plan
 * answered it; 0 where the entry point has no such argument:
 *
 *   entry point                       flags         arg             handle2
 *   cuInit                            flags         -               -
 *   cuGetProcAddress(_v2)             flags         version         -
 *   cuGetErrorName, cuGetErrorString  -             the CUresult    -
 *   cuDeviceGet                       -             ordinal         -
 *   cuDeviceGetName                   -             device          -
 *   cuCtxCreate                       flags         device          -
 *   cuDevicePrimaryCtxRetain, -Release, -GetState, -Reset
 *                                     -             device          -
 *   cuEventCreate                     flags         -               -
 *   cuEventRecord                     -             -               stream
 *   cuEventElapsedTime(_v2)           -             -               end event
 *   cuStreamCreate                    flags         -               -
 *   cuStreamCreateWithPriority        flags         priority        -
 *   cuStreamWaitEvent                 flags         -               event
 *   cuLaunchKernel, cuLaunchKernelEx  block         grid            stream
 *   cuMemAlloc, cuMemAllocHost        -             size            -
 *   cuMemHostAlloc                    flags         size            -
 *   cuMemsetD8                        the byte      count           -
 *   cuMemcpyHtoD, cuMemcpyDtoH        -             count           host pointer
 *     and their Async forms
 *   cuMemcpyDtoD(Async)               -             count           source
 *   cuMemcpy2D(Async)                 -             width * height  source (host
 *                                                                   or device)
 *   cuMemsetD16, -D32, their Async    the value     count           -
 *     forms and cuMemsetD8Async
 *   cuLaunchHostFunc,                 flags         -               -
 *     cuStreamAddCallback
 *   cuDeviceGetAttribute              attribute     device          -
 *   cuDeviceTotalMem                  -             device          -
 *   cuMemGetInfo                      -             free bytes      -
 *   cuGraphCreate                     flags         -               -
 *   cuGraphAddEmptyNode               -             dependencies    -
 *   cuGraphInstantiateWithFlags       flags         -               graph
 *   cuGraphLaunch                     -             -               stream
 *   cuGraphGetNodes                   -             nodes it has    -
 *   cuStreamBeginCapture              mode          capture id      the capture's graph
 *   cuStreamEndCapture                -             -               the graph handed
 *                                                                   back, 0 if none
 *   cuStreamIsCapturing               -             status given    -
 *   cuStreamGetCaptureInfo            -             status given    the graph (active)
 *   cuThreadExchangeStreamCaptureMode mode asked    mode given back -
 *   cuMemAllocPitch                   element size  width           -
 *   cuModuleLoadDataEx                -             option count    -
 *   cuModuleGetGlobal,                -             -               the global's address
 *     cuLibraryGetGlobal
 *   cuLibraryLoadData,                library       JIT option      -
 *     cuLibraryLoadFromFile             option count  count
 *   cuLibraryGetKernel                -             -               the kernel
 *   cuLibraryGetKernelCount           -             the count       -
 *   cuLibraryGetModule                -             -               the module
 *   cuKernelGetFunction               -             -               the function
 *   cuKernelGetLibrary                -             -               the library
 *   cuMemAllocAsync,                  -             size            the pool (the
 *     cuMemAllocFromPoolAsync                                       one asked, else
 *                                                                   the device's)
 *   cuMemFreeAsync                    -             -               the pool of the
 *                                                                   allocation, if live
 *   cuMemFree (stream-ordered memory) -             -               its pool
 *   cuMemPoolCreate                   -             location id     -
 *   cuMemPoolTrimTo                   -             bytes to keep   -
 *   cuMemPoolGetAttribute,            attribute     the value given -
 *     cuMemPoolSetAttribute                         back / asked
 *   cuDeviceGetDefaultMemPool,        -             device          -
 *     cuDeviceGetMemPool, cuDeviceSetMemPool
 *   cuDeviceGetDevResource            type          device          -
 *   cuDevSmResourceSplitByCount       useFlags      minCount        *nbGroups as the
 *                                                                   call left it (the
 *                                                                   groups given back)
 *   cuDevResourceGenerateDesc         -             nbResources     -
 *   cuGreenCtxCreate                  flags         device          the descriptor
 *   cuGreenCtxDestroy,                -             -               its CUcontext
 *     cuCtxFromGreenCtx
 *   cuGreenCtxGetId                   -             the id given    -
 *   cuGreenCtxStreamCreate            flags         priority        the green context
 *   cuGreenCtxRecordEvent,            -             -               the event
 *     cuGreenCtxWaitEvent
 *   cuGreenCtxGetDevResource          type          -               -
 *   cuStreamGetCtx (_v2)              -             the green       the context (a
 *                                                   context, or 0   green one's primary)
 *   cuDeviceCanAccessPeer             -             device          peer device
 *   cuCtxEnablePeerAccess             flags         -               -
 *   cuIpcGetMemHandle,                -             the export's    -
 *     cuIpcGetEventHandle                           number
 *   cuIpcOpenMemHandle                flags         -               the exported
 *                                                                   allocation
 *   cuIpcOpenEventHandle              -             -               the exported event
 *   cuMemGetAddressRange              -             size given      -
 *   cuPointerGetAttribute             -             the attribute   -
 *
 * The main handle of the capture calls is the stream; of cuGraphGetNodes the
 * graph; of cuLibrary* the library (cuLibraryLoad*: the library made); of
 * cuKernel* the kernel; of cuMemAllocPitch the allocation made; of
 * cuMemAllocAsync and -FromPoolAsync the allocation made (a capture's graph
 * allocation too); of cuMemFreeAsync the pointer; of cuMemPool* and
 * cuDevice*MemPool the pool (named, made or given back). The stream of
 * cuMemAllocAsync, -FromPoolAsync and cuMemFreeAsync is in the stream column.
 * The main handle of cuDevResourceGenerateDesc is the descriptor made; of
 * cuGreenCtxCreate the green context made; of cuGreenCtxStreamCreate the
 * stream made; of the other cuGreenCtx* calls and cuCtxFromGreenCtx the green
 * context named. The main handle of cuCtxEnablePeerAccess and
 * cuCtxDisablePeerAccess is the peer context; of cuIpcGetMemHandle,
 * cuIpcCloseMemHandle, cuMemGetAddressRange and cuPointerGetAttribute the
 * pointer; of
 * cuIpcGetEventHandle the event; of cuIpcOpenMemHandle and
 * cuIpcOpenEventHandle the mapping or event made.
 *
 * cuLaunchKernel packs its sizes: arg = grid x | y << 32 | z << 48, flags =
 * block x | y << 16 | z << 32 (exact for every size the driver accepts).
 *
 * A stream is logged as its value: 0 for NULL, 1 for CU_STREAM_LEGACY, 2 for
 * CU_STREAM_PER_THREAD.  Every other entry point logs all three as 0.
 *
 * captured: nonzero when a stream capture took the call instead of doing it
 * (the value of the capture's graph, which cuStreamEndCapture hands back):
 * see "Stream capture" below. */
struct cusim_call {
	const char *fn;   /* base name without ABI suffix ("cuEventDestroy"); static storage */
	uint64_t handle;  /* the main handle the call names or returns, 0 if none */
	uint64_t ctx;     /* the calling thread's current context when the call began */
	CUresult rc;      /* what the call returned */
	unsigned long long flags;  /* the flags argument (table above) */
	long long arg;    /* a device, size, count or priority (table above) */
	uint64_t handle2; /* a second handle: stream, event or graph (table above) */
	uint64_t stream;  /* the stream of a call that takes one (the launches, the
			     asynchronous copies and memsets, host work), else 0 */
	uint64_t captured; /* the graph of the stream capture that took the call
			      instead of doing it, else 0 (see "Stream capture") */
};

/* The entry points of the real driver that the simulator does not implement
 * (every other symbol of the CUDA toolkit's stub libcuda.so, tests/sim/stubs.c)
 * are exported too, and cuGetProcAddress hands them out: each call answers
 * CUDA_ERROR_NOT_SUPPORTED, is logged under its base name ("cuArrayCreate" for
 * cuArrayCreate_v2) and counted by cusim_calls, and records a misuse "NAME(0x0):
 * not implemented by the cuctx test driver (ABI symbol SYMBOL): ...". Fault
 * plans and delays do not reach them; cusim_fail_all does.
 *
 * The _ptsz and _ptds symbols of the implemented entry points that take a
 * stream (or copy and set memory) are implemented: a NULL stream there is
 * logged as CU_STREAM_PER_THREAD (2), under the base name; cuGetProcAddress
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM gives those forms.
 *
 * At its first successful cuInit in a process the simulator writes one line
 * to stderr saying that it is cuctx's test driver, unless
 * CUCTX_TESTDRIVER_QUIET is set (to anything but "" or "0"). */

/* Stream capture (measured on the H200, driver 580.159.04, unless marked
 * "stricter": there the simulator refuses what the real driver was not seen to
 * refuse, or was not asked).
 *
 * - cuStreamBeginCapture(s, mode) (cuStreamBeginCapture_v2; mode GLOBAL,
 *   THREAD_LOCAL or RELAXED, else 1): the legacy stream (NULL,
 *   CU_STREAM_LEGACY) answers 900; the per-thread stream also 900 (stricter:
 *   the real driver captures it); a stream already in a capture (active,
 *   invalidated, or joined to another's) 401, that capture going on. The
 *   capture's graph is made here and is live (CUSIM_GRAPH) from now on.
 * - While s captures, work queued on it is not done and is logged with
 *   captured set: cuLaunchKernel(Ex), the Async memsets and copies,
 *   cuLaunchHostFunc (the function is not called), cuGraphLaunch and
 *   cuStreamWaitEvent with CU_EVENT_WAIT_EXTERNAL each add one node to the
 *   graph; cuEventRecord (the event is now "recorded in a capture") and
 *   cuStreamWaitEvent on an event recorded in the same capture add none.
 *   cuStreamAddCallback answers 900 and invalidates the capture.
 * - Invalidated: the call that invalidates answers its error; later work on
 *   the capture's streams answers 901; cuStreamSynchronize/-Query of them 900;
 *   cuStreamEndCapture 901 with *graph NULL, and the streams are usable again.
 * - The unsafe-call rule, by the calling thread's mode
 *   (cuThreadExchangeStreamCaptureMode; GLOBAL by default and after a reset):
 *   GLOBAL forbids while this thread has a capture not begun RELAXED, or any
 *   other thread a GLOBAL capture; THREAD_LOCAL only the former; RELAXED
 *   nothing. A forbidden call answers 900 and invalidates every capture that
 *   forbids it (an invalidated capture forbids as before, until its end). The
 *   calls: cuMemAlloc, cuMemAllocPitch, cuMemAllocHost, cuMemHostAlloc,
 *   cuMemFree, cuMemFreeHost, cuModuleUnload, cuLibraryUnload,
 *   cuGraphInstantiateWithFlags, cuGraphExecDestroy, cuEventQuery and
 *   cuEventSynchronize (of events not recorded in a capture), cuCtxSynchronize
 *   (all measured). Allowed (measured): module and library loads, the
 *   synchronous copies and memsets, creating and destroying contexts, streams,
 *   events and graphs, cuGraphLaunch on another stream, cuMemGetInfo.
 * - cuCtxSynchronize: besides the rule, 900 and invalidated for every capture
 *   with a stream of the current context, from any thread in any mode.
 * - cuStreamSynchronize / cuStreamQuery of a stream in a capture: 900, the
 *   capture invalidated (any mode).
 * - The legacy stream (NULL or CU_STREAM_LEGACY, also as the stream of the
 *   synchronous copies and memsets) while a blocking stream (created without
 *   CU_STREAM_NON_BLOCKING) of the current context is in a capture: work,
 *   cuStreamSynchronize and -Query answer 906 and invalidate that capture;
 *   cuStreamIsCapturing / cuStreamGetCaptureInfo of it answer 906 and leave
 *   it alone. A capture of non-blocking streams leaves the legacy stream free.
 * - An event recorded in a capture: cuEventQuery and cuEventSynchronize 907,
 *   invalidating the capture, while it is active; once it is invalidated or
 *   ended, both answer 1, and so do cuEventElapsedTime and
 *   cuStreamWaitEvent on it (a capturing stream's capture then invalidated),
 *   until the event is recorded outside a capture.
 * - cuStreamWaitEvent(s2, ev) with ev recorded in an active capture: s2 (not
 *   capturing) joins the capture; s2 in another capture: 902, both
 *   invalidated; s2 a default stream: 900 and invalidated (stricter). A
 *   capturing stream waiting on an event recorded outside any capture: 905,
 *   invalidated. CU_EVENT_WAIT_EXTERNAL outside a capture: 1.
 * - cuStreamEndCapture(s, &g): s in no capture (or a default stream) 401; s a
 *   joined stream, not the origin: 903, the capture invalidated and going on;
 *   from a thread other than the one that began a capture not begun RELAXED:
 *   908, and the capture ends without a graph; invalidated: 901; a joined
 *   stream with work the origin has not waited on since (an event recorded on
 *   it after its last work, waited on by the origin itself; stricter: the real
 *   driver also accepts a join through a third stream): 904, ended without a
 *   graph. Where it fails, *g is set to NULL. Else 0 and *g the capture's
 *   graph, which cuGraphGetNodes counts, cuGraphInstantiateWithFlags
 *   instantiates and cuGraphDestroy destroys, also after its context died.
 *   cuGraphDestroy / -Instantiate of a graph still being captured: a misuse
 *   and 1.
 * - cuStreamDestroy of a capture's origin stream: 0, the capture discarded
 *   with its graph, its joined streams out of it and usable; of a joined
 *   stream: 0, it leaves the capture. A context's death is its streams'.
 * - cuStreamGetCaptureInfo (cuStreamGetCaptureInfo_v3, version 12030): status
 *   always; id (1, 2, ... for the process), graph, dependencies (the stream's
 *   last node, or NULL and 0 before its first) and edge data only while
 *   active; a NULL status 1.
 * - cuThreadExchangeStreamCaptureMode with NULL or a value not of the enum: a
 *   misuse and 1 (the real driver crashes on NULL, takes a bad value).
 * - The captured nodes never run: cuGraphLaunch of the exec does nothing.
 * Counts: cusim_live(CUSIM_CAPTURE) is the captures begun and not ended (not
 * part of CUSIM_ALL; their graphs are counted as CUSIM_GRAPH);
 * cusim_is_live(CUSIM_CAPTURE, stream) says whether that stream is in one
 * (active or invalidated).
 *
 * Stream-ordered memory and memory pools (measured on the H200, driver
 * 580.159.04, unless marked "stricter" or "model": a choice where nothing was
 * measured).
 *
 * - Entry points (ABI version 11020; the first three with _ptsz forms):
 *   cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync, cuMemPoolCreate,
 *   cuMemPoolDestroy, cuMemPoolTrimTo, cuMemPoolGetAttribute,
 *   cuMemPoolSetAttribute, cuMemPoolGetAccess, cuMemPoolSetAccess,
 *   cuDeviceGetDefaultMemPool, cuDeviceGetMemPool, cuDeviceSetMemPool. Fault
 *   plans, delays and fail_all reach them as any.
 * - Access (model): a pool's own device reads and writes it, and cannot be
 *   set otherwise (101); another device has none until cuMemPoolSetAccess
 *   gives it read-write (where peers can reach each other, else 101), and
 *   none again when set so; read-only is 1.
 * - A stream-ordered allocation belongs to its pool, not to a context: no
 *   context's destroy, release or reset frees it; it stays usable from any
 *   context (copies, memsets) and is freed by cuMemFreeAsync on any live
 *   stream (another context's too) or by cuMemFree, with or without a
 *   context current. A pool belongs to its device: made while a context was
 *   current, it serves allocations in contexts made after that one died.
 *   Pools need cuInit only; cuMemPoolCreate takes CU_MEM_ALLOCATION_TYPE_PINNED
 *   at a CU_MEM_LOCATION_TYPE_DEVICE location with handle types NONE or
 *   POSIX_FILE_DESCRIPTOR, else 1 (stricter: no host pools).
 * - cuMemAllocAsync(&p, n, s) and cuMemFreeAsync(p, s) with s a live stream
 *   work with no context current; with a default stream (NULL,
 *   CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) and no context current both
 *   answer 201 (709 if the current one was destroyed). A destroyed stream: a
 *   misuse ("stream not live") and 709 (the real driver's cuMemFreeAsync
 *   crashes). Size 0 or a NULL pointer: 1; over 1 GiB: 2. A NULL pool: 1.
 *   cuMemFreeAsync of memory from cuMemAlloc: 0, freed at once (model).
 * - Figures: USED_MEM_CURRENT goes up by the bytes asked at each allocation
 *   (model: no rounding) and down at cuMemFreeAsync, at the call; cuMemFree
 *   of stream-ordered memory answers 0 and gives the memory back
 *   (cuMemGetInfo, its address reused at once) but never lowers the figure
 *   (measured: it stays up for the life of the pool). RESERVED_MEM_CURRENT
 *   is used plus what cuMemFreeAsync gave back and the pool keeps (model): a
 *   synchronize (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize)
 *   of the device lets each of its pools keep at most RELEASE_THRESHOLD
 *   (default 0) reserved, cuMemPoolTrimTo(pool, keep) at most keep; neither
 *   goes below used. The _HIGH figures are watermarks, set only to 0 (which
 *   restarts them), else 1; the REUSE_* flags are kept (default 1) and change
 *   nothing; the _CURRENT figures cannot be set (1); another attribute, or a
 *   NULL value, is 1.
 * - cuPointerGetAttribute (ABI 4000; model, not measured here) of a live
 *   allocation, stream-ordered or not, whether or not its context lives and
 *   with no context current: CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL its device,
 *   _MEMORY_TYPE CU_MEMORYTYPE_DEVICE, _MEMPOOL_HANDLE its pool (NULL for
 *   cuMemAlloc memory); a pointer in no live allocation 1; other attributes
 *   801.
 * - Address recycling as for cuMemAlloc: a new allocation, stream-ordered or
 *   not, takes the most recently freed address of either kind.
 * - A second free (either call) of the same pointer: 1, and the misuse "mem
 *   not live: already freed", as for cuMemFree (the real driver answers 1 -
 *   or frees whoever holds the address now). A pointer inside an allocation:
 *   a misuse and 1.
 * - cuMemPoolDestroy with allocations alive: 0; they stay usable and their
 *   frees answer 0; the pool is dead to callers at once (cusim_live and
 *   cusim_is_live(CUSIM_POOL) no longer count it; any call naming it is the
 *   misuse "pool not live: already destroyed (its allocations live on until
 *   freed)" and 400) and ends with its last allocation; after that a call
 *   naming it is the misuse "pool not live: already destroyed" and 400. A
 *   device's default pool is never destroyed (1) and never counted; a pool
 *   set by cuDeviceSetMemPool (of that device, else 101) is what
 *   cuMemAllocAsync takes from until it is destroyed.
 * - Under stream capture, cuMemAllocAsync on a capturing stream becomes a node
 *   and gives an address of its own (a graph allocation), never a live
 *   allocation outside the graph: cuMemFreeAsync or cuMemFree of it there
 *   answers 1 (measured), no misuse; it is not counted. cuMemFreeAsync on a
 *   capturing stream becomes a node and frees nothing (model).
 * - Orphaned work. Each live stream has pending work from the moment an
 *   asynchronous call is queued on it (kernel launches, graph launches, the
 *   Async copies and memsets, host functions, event records,
 *   cuMemAllocAsync, cuMemFreeAsync) until something says it finished:
 *   cuStreamSynchronize or cuStreamQuery of it answering 0, cuCtxSynchronize
 *   of its context, cuEventSynchronize or cuEventQuery answering 0 of an
 *   event recorded on it after that work. cuStreamDestroy of a stream with
 *   pending work leaves that work running (measured with a 200 ms kernel):
 *   the stream-ordered allocations made on it that are still alive wait on
 *   that orphaned work until it is ordered before now - by cuCtxSynchronize
 *   of its context, a synchronize (or query answering 0) of an event recorded
 *   on the stream after the work, or the end of the context (its destroy, or
 *   a primary context's release or reset: its orphaned work ends with it).
 *   Freeing such an allocation before is the misuse "stream-ordered
 *   allocation freed while unfinished work of its destroyed blocking stream
 *   may still use it ..." ("... non-blocking stream ...") and answers 401,
 *   nothing freed (the real driver answers 0 and hands the address out again
 *   while the kernel still writes it) - except cuMemFreeAsync(p, NULL or
 *   CU_STREAM_LEGACY) with the stream's context current when the stream was
 *   blocking (created without CU_STREAM_NON_BLOCKING): the legacy stream
 *   waits for it (measured safe). Measured unsafe, so misuses: cuMemFree (a
 *   context current or not), cuMemFreeAsync on another live stream or on
 *   CU_STREAM_PER_THREAD (so the _ptsz form with NULL), and on the legacy
 *   stream when the destroyed stream was non-blocking or another context is
 *   current. Stricter: a synchronize of the legacy stream does not order it.
 *   cusim_orphaned_work counts destroyed streams with such unfinished work.
 * Counts: cusim_live(CUSIM_MEM) counts stream-ordered allocations with the
 * others (cusim_async_allocs_live those alone), cusim_live(CUSIM_POOL) the
 * pools made and not destroyed; both are in CUSIM_ALL, so a test that checks
 * for leaks sees an allocation no free reached. cusim_pool_usage and
 * cusim_default_pool read the figures without a call.
 *
 * Green contexts (CUDA 12.4+; measured on the H200, driver 580.159.04 - the
 * green-context rows of DRIVER-FACTS.md - unless marked "documented" (what
 * cuda.h says, not measured), "stricter" or "model").
 *
 * - Entry points (ABI version 12040, cuGreenCtxStreamCreate 12050,
 *   cuGreenCtxGetId 12090): cuDeviceGetDevResource,
 *   cuDevSmResourceSplitByCount, cuDevResourceGenerateDesc, cuGreenCtxCreate,
 *   cuGreenCtxDestroy, cuCtxFromGreenCtx, cuGreenCtxGetId,
 *   cuGreenCtxStreamCreate, cuGreenCtxRecordEvent, cuGreenCtxWaitEvent,
 *   cuGreenCtxGetDevResource. Fault plans, delays and fail_all reach them as
 *   any; cusim_hide_green hides them all (a driver older than 12.4).
 *   cuStreamGetCtx_v2 (12050; documented): a stream's context, or for a
 *   default stream by name the current context's, with a green context's
 *   primary context in *pctx and the green context in *pgreen (else NULL);
 *   CU_STREAM_PER_THREAD with a green context current 400, none current
 *   201. cuCtxGetDevResource and cuStreamGetGreenCtx stay stubs.
 * - SM resources (model): every device has 132 SMs, as the H200 does
 *   (measured), with minSmPartitionSize 8 and smCoscheduledAlignment 8 (the
 *   documentation's guideline for compute capability 9.0+). Only
 *   CU_DEV_RESOURCE_TYPE_SM (else 914); a NULL resource 1; a bad device 101.
 *   The simulator marks each resource it fills in (in the structure's
 *   internal padding); another one is 1.
 * - cuDevSmResourceSplitByCount(result, &n, input, remaining, flags, min):
 *   groups of max(min, 8) SMs rounded up to a multiple of 8 (with
 *   CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING: 2 and 2; the other flag
 *   changes nothing), as many as fit, at most n; remaining (may be NULL)
 *   gets what is left; n is set to the groups made (measured: 16 of 132 ->
 *   one group of 16, 116 left). result NULL: n is set to the groups that
 *   would be made. n NULL, result with n 0, min above the input's SMs, an
 *   unknown flag: 1. A split's output (group or remaining) split again: 915
 *   (documented; a green context's resource, cuGreenCtxGetDevResource,
 *   splits).
 * - cuDevResourceGenerateDesc(&d, res, k): k of 0 or NULLs 1; several
 *   resources must come from one split of one device (documented), else
 *   915, as is a total of 0 SMs (model). A descriptor is never freed (there
 *   is no call to) and not counted.
 * - cuGreenCtxCreate(&g, d, dev, flags): flags must be exactly
 *   CU_GREEN_CTX_DEFAULT_STREAM (documented as required), else 1; a bad device
 *   101; a descriptor of another device 1 (model); a value never given out by
 *   cuDevResourceGenerateDesc: a misuse and 1. It retains dev's primary
 *   context (measured: cusim_primary_refs counts it; an inactive primary
 *   becomes active, with a new id), makes a green context (CUSIM_GREEN) and
 *   its CUcontext, and sets nothing current (documented). It takes 100-113 ms
 *   on the H200; here no time at all (model).
 * - cuGreenCtxDestroy(g): 0; its CUcontext dies with it, and the primary's
 *   retain is released: when it was the last, the primary context ends as at
 *   its last cuDevicePrimaryCtxRelease, with everything that belongs to it
 *   (see below). A destroyed green context named again (destroy, convert,
 *   ids, streams, events, resources): a misuse and 709 (stricter: not
 *   measured); NULL 201.
 * - cuCtxFromGreenCtx gives the same CUcontext each time (measured), a value
 *   of its own: neither the primary context's nor the CUgreenCtx's (model:
 *   the two are separate handles, each recycled with its kind). cuCtxGetId
 *   of it equals cuGreenCtxGetId (measured), from the one process-wide id
 *   counter of contexts; after cuGreenCtxDestroy cuCtxGetId of it answers
 *   709, no misuse (measured), and cuCtxGetApiVersion 201, like any
 *   destroyed context. cuCtxDestroy of it: a misuse and 201 (stricter; the
 *   documentation calls it a primary context, and a primary's destroy is
 *   201, measured).
 * - The CUcontext is made current with cuCtxSetCurrent or cuCtxPushCurrent
 *   and works as a context (measured): cuCtxGetId(NULL) gives its id,
 *   cuCtxGetDevice its device, cuCtxSynchronize synchronizes its streams.
 *   Of what is made while it is current, only STREAMS are its own
 *   (cuStreamCreate, cuStreamCreateWithPriority, and cuGreenCtxStreamCreate,
 *   which needs no current context and takes CU_STREAM_NON_BLOCKING only,
 *   documented; else 1). Events, device memory (cuMemAlloc, -Pitch),
 *   modules (and a library's module, cuKernelGetFunction), page-locked host
 *   memory and graph execs belong to the device's primary context underneath
 *   (measured): they live while the primary does, whoever holds it, and are
 *   used from either (a kernel of such a module launches on a stream of
 *   either: model). Stream-ordered memory belongs to its pool, as anywhere.
 * - After cuGreenCtxDestroy its streams are dead and leaked (documented, and
 *   measured for query and destroy): every call naming one answers 709 and
 *   records no misuse, cuStreamDestroy too and as often as asked (stricter
 *   than nothing: the real driver was not seen to crash on them); their
 *   values are never handed out again (the real driver leaks them);
 *   cusim_leaked_streams counts them. Things of the primary live on while
 *   someone else holds it: cuEventDestroy 0, cuMemFree 0,
 *   cuModuleGetFunction 0, cuModuleUnload 0, cuMemFreeHost 0,
 *   cuGraphExecDestroy 0 (measured). When the green context held the last
 *   retain they die with the primary, as a primary context's children do:
 *   cuModuleGetFunction and cuModuleUnload 400 and cuMemFreeHost 1
 *   (measured, and a misuse each, as for any dead handle), cuEventDestroy
 *   709; cuGraphExecDestroy measured 0 without a crash in this case (but a
 *   SIGSEGV after an ordinary context's destroy), here a misuse and 400 as
 *   for every graph exec of a dead context (stricter).
 * - A green context current on a thread when destroyed stays current there,
 *   stale (measured): creates in it answer 709 (cuEventCreate measured),
 *   cuCtxGetId(NULL) 709, cuCtxPopCurrent 0. Binding it again
 *   (cuCtxSetCurrent, -PushCurrent): a misuse and 201, as for any destroyed
 *   context.
 * - cuDevicePrimaryCtxReset while a green context lives (model, not
 *   measured): the primary's children die as on any reset; the green context
 *   and its streams live on, its retain kept, but while the primary is
 *   inactive anything made in its CUcontext (cuEventCreate, cuStreamCreate,
 *   cuMemAlloc, ...) and cuGreenCtxStreamCreate answer 709; a retain
 *   makes the primary active again and them work.
 * - cuGreenCtxRecordEvent(g, ev): ev must belong to g's primary context
 *   (documented 400 else); records ev now. cuGreenCtxWaitEvent(g, ev): ev of
 *   any context; nothing to wait for. Both answer 900 and invalidate the
 *   captures with a stream of g, and WaitEvent also the capture ev was
 *   recorded in if it goes on (documented). NULL g 201, NULL ev 400.
 * - cuGreenCtxGetDevResource(g, &r, SM): g's SMs (the descriptor's total),
 *   minSmPartitionSize and alignment 8.
 * - Address recycling: the CUgreenCtx and the CUcontext each take the most
 *   recently freed value of their kind (the CUcontext: of any context, and a
 *   new ordinary context may take a destroyed green context's CUcontext).
 * Counts: cusim_live(CUSIM_GREEN) is the green contexts made and not
 * destroyed (in CUSIM_ALL); their CUcontexts are not counted as CUSIM_CONTEXT,
 * though cusim_is_live(CUSIM_CONTEXT, its CUcontext) is 1 while it lives;
 * the primary context a green context holds is counted as CUSIM_PRIMARY;
 * cusim_leaked_streams counts the streams that died with one.
 *
 * Peer access (CUDA 4.0; nothing measured yet - the H200 has no peer: each
 * answer is "documented" (what cuda.h says), "model" (a choice where it says
 * nothing) or "stricter").
 *
 * - Entry points (ABI version 4000): cuDeviceCanAccessPeer,
 *   cuCtxEnablePeerAccess, cuCtxDisablePeerAccess.
 * - cuDeviceCanAccessPeer(&can, dev, peer): 1 for any two distinct devices
 *   (model: an NVLink machine), 0 for a device and itself (documented) and
 *   for every pair after cusim_set_peer_unsupported(1); a bad device 101, a
 *   NULL can 1.
 * - cuCtxEnablePeerAccess(peer, flags), with the context it is enabled from
 *   current (201 with none, 709 when it is destroyed): flags other than 0:
 *   1 (documented); peer NULL: 201; a destroyed (or never made) peer context:
 *   a misuse and 201; devices that cannot access each other - the same
 *   device, so also the same context - 217 CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
 *   (documented); access from this context to that one enabled already: 704
 *   CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED (documented); a green context's
 *   CUcontext on either side: 801 (model, until measured); else 0, and
 *   access from the current context to peer is on (one way).
 * - Peer access ends when either context ends: its destroy, a primary
 *   context's last release or its reset, a green context's destroy
 *   (documented). cusim_live(CUSIM_PEER) counts the pairs enabled now (in
 *   CUSIM_ALL); cusim_peer_enabled asks about one.
 * - cuCtxDisablePeerAccess(peer), the context it was enabled from current:
 *   0 and off; not enabled: 705 CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
 *   (documented). A peer context that was destroyed: a misuse and 201
 *   (stricter: what the real driver does with a disable after the peer
 *   context died is not measured - it may crash); the misuse says when the
 *   access ended with it. The value of a destroyed peer context now taken
 *   by a new context, access to the old one having been on: a misuse and
 *   705 (the disable meant the dead context).
 *
 * CUDA IPC (CUDA 4.1; not measured here: "documented", "reported" (known
 * of the real driver, not measured by this project), "model" or
 * "stricter").
 *
 * - Entry points: cuIpcGetMemHandle, cuIpcOpenMemHandle (ABI 11000, the
 *   _v2 symbol; the first ABI, 4010, too), cuIpcCloseMemHandle,
 *   cuIpcGetEventHandle, cuIpcOpenEventHandle (4010), and
 *   cuMemGetAddressRange (3020): an allocation's or a mapping's base and
 *   size, either pointer may be NULL; a pointer in none 500 (documented).
 * - A handle holds the exporting process's pid, the object and the number
 *   of its export; a handle of memory freed since (its address perhaps
 *   another allocation's now) is told apart.
 * - One process. The real driver refuses to open a handle in the process
 *   that made it (reported: CUDA_ERROR_INVALID_CONTEXT), and so does the
 *   simulator, unless cusim_set_ipc_loopback(1) makes the process stand in
 *   for its own importer: a handle then opens in any context but the one
 *   that owns the exported object (201 there). A handle of another process
 *   (another pid): a misuse and 801 - the test driver keeps nothing across
 *   processes, so examples/ipc_share runs on a GPU only.
 * - cuIpcGetMemHandle(&h, p): p the base of a live allocation of cuMemAlloc
 *   (documented); a pointer inside one, a mapping, pool memory or a module's
 *   global: 1 (model); a freed one: a misuse and 1. cuIpcGetEventHandle(&h,
 *   ev): ev made with CU_EVENT_INTERPROCESS (documented), not an opened
 *   one (model), else 1. No context need be current (model).
 * - cuIpcOpenMemHandle(&p, h, flags), the importing context current (201 /
 *   709): flags other than 0 and CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1
 *   (documented); h not a handle of this driver 1 (model); its memory freed:
 *   a misuse and 1 (stricter: not measured). A mapping of its own address
 *   in the current context (its primary, for a green context's), whose bytes
 *   are the exported allocation's (copies and memsets through either side
 *   see the other's); the memory of another device maps only between peers
 *   (model: 217 otherwise, whatever the flag); opened again in the same
 *   context: the same pointer, counted (documented), each open needing its
 *   close; in another context of the same device while open in one: 201
 *   (documented as not allowed; the code is the model's). cusim_live
 *   (CUSIM_IPC_MEM) counts the mappings (in CUSIM_ALL, not in CUSIM_MEM);
 *   cuMemGetInfo does not count them.
 * - An opened mapping is a child of its context: it dies with it. Every
 *   use of a mapping whose exporter freed the memory (documented: undefined
 *   behaviour) is a misuse and 1; its close answers 0 (model).
 * - cuIpcCloseMemHandle(p): one close of an open; the last ends the mapping
 *   (its address is reused as device memory's is). A mapping that died with
 *   its context or was closed, or memory of cuMemAlloc: a misuse and 1.
 *   cuMemFree of a mapping: a misuse and 1.
 * - cuIpcOpenEventHandle(&ev, h): as for memory (no device rule): an event of
 *   the current context (its primary's), untimed (documented: as made with
 *   CU_EVENT_DISABLE_TIMING), destroyed with cuEventDestroy. Once its
 *   exported event is destroyed, recording, querying, synchronizing, timing
 *   or waiting on it is a misuse and 400 (documented: undefined behaviour).
 *
 * PTX images, JIT logs, module globals and libraries.
 *
 * - A text image is PTX when it has a ".entry NAME" or a ".global"
 *   declaration (comments aside); any other image is 200 to a module load.
 * - PTX that does not assemble, by convention (real ptxas rejects the same):
 *   a line after the first .entry whose first word is the identifier
 *   cusim_bad, used as an instruction ("\tcusim_bad;"). Its JIT error log is,
 *   one line per such line (N its 1-based line number in the image), joined
 *   by "\n", no "\n" at the end, as the H200's driver writes it:
 *     ptxas application ptx input, line N; error   : Not a name of any known instruction: 'cusim_bad'
 *     ptxas fatal   : Ptx assembly aborted due to errors
 * - The logs (CU_JIT_ERROR_LOG_BUFFER with CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
 *   CU_JIT_INFO_LOG_BUFFER with CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES) of
 *   cuModuleLoadDataEx and cuLibraryLoadData/-FromFile: each buffer of size B
 *   gets the first B-1 bytes of its text and a NUL, and its size option is
 *   set to min(strlen(text), B). The error log's text is the above, or ""
 *   for an image that assembles or is not PTX; the info log's is always "".
 *   A size option without its buffer option: 1. Other options are ignored.
 * - cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx of such PTX: 218,
 *   nothing made. cuLibraryLoadData / -LoadFromFile of it: 0, a live library
 *   (CUSIM_LIBRARY), the log written; then cuLibraryGetKernel (any name),
 *   cuLibraryGetModule and cuLibraryGetGlobal answer 218, writing nothing,
 *   and cuLibraryGetKernelCount gives 0. A library of an image that is not
 *   PTX (binary, or text without .entry and .global) does the same with 200
 *   (measured: the real driver loads libraries lazily).
 * - Globals: each ".global [.align A] [.v2|.v4] .TYPE NAME[N]...;" outside a
 *   body (not .extern; TYPE b/u/s 8, 16, 32, 64, f16, bf16, f32, f64) is
 *   device memory of the module's context, zeroed, of TYPE's size times the
 *   dimensions, made at load and freed at unload (not counted by
 *   cusim_live). cuModuleGetGlobal(&dptr, &bytes, mod, name): 0 with either
 *   pointer NULL; both NULL or a NULL name 1; the name of a function 1; an
 *   unknown name 500; where it fails, *dptr and *bytes are set to 0. Copies
 *   and memsets reach a global while its module's context is current (from
 *   another context: 1, measured); cuMemFree of one: 1.
 * - Libraries belong to no context: loading needs cuInit only (3 before), and
 *   cuLibraryUnload works after any context died; a second unload (a crash on
 *   the real driver) is a misuse. cuLibraryGetKernel of an unknown name: 500.
 *   cuKernelGetFunction needs a current context (201 without) and gives the
 *   same CUfunction each time in it: a function of the library's module in
 *   that context (cuLibraryGetModule; made at its first use there, not
 *   counted as a module, gone with the context or the library;
 *   cuModuleUnload of it: 800). A CUkernel cast to CUfunction launches in
 *   whatever context is current; a kernel after its library's unload is a
 *   misuse (400), as is a module's function in another context. Also:
 *   cuLibraryGetKernelCount, cuLibraryGetGlobal, cuKernelGetName,
 *   cuKernelGetLibrary.
 */

/* Destroys every object, clears logs, counters, fault plans, misuses,
 * delays, fail_all, outside primary retains, the cuCtxGetId and green-context
 * hiding, the leaked-stream count, peer access, IPC loopback and the
 * no-peer setting,
 * turns recycling back on and empties every thread's context stack.
 * cuInit's state, the device count and the context id counter survive. */
void cusim_reset(void);

/* Address recycling: on (the default), each new object takes the most
 * recently freed value of its kind (a worst case, see above); off, values
 * are never reused. */
void cusim_set_recycling(int on);

/* Number of records in the call log (at most 1,000,000). */
size_t cusim_log_count(void);

/* Copies record i (0 = oldest kept) to *out: 0 on success, -1 out of range. */
int cusim_log_get(size_t i, struct cusim_call *out);

/* Calls of the entry point with this base name since the last reset. */
unsigned long cusim_calls(const char *fn);

/* Of those, the calls answered CUDA_ERROR_CONTEXT_IS_DESTROYED: for a
 * count of calls that did their work, where a refused one is made again
 * (a free refused because the calling thread's current context is a
 * destroyed one). */
unsigned long cusim_calls_dead_ctx(const char *fn);

/* Misuses recorded since the last reset. */
size_t cusim_misuse_count(void);

/* Text of misuse i, e.g. "cuStreamDestroy(0x...): stream not live: its
 * context was destroyed"; NULL out of range; valid until the next reset. */
const char *cusim_misuse_text(size_t i);

/* The kinds of object the simulator counts: CUSIM_CONTEXT is non-primary
 * contexts, CUSIM_PRIMARY active primaries, CUSIM_MEM device allocations
 * (stream-ordered ones too: cusim_async_allocs_live counts those alone),
 * CUSIM_LIBRARY loaded libraries, CUSIM_PEER pairs of contexts with peer
 * access enabled, CUSIM_IPC_MEM IPC mappings opened and not closed (see "CUDA
 * IPC"; not in CUSIM_MEM), CUSIM_CAPTURE stream captures begun and not
 * ended (see "Stream capture"; cusim_is_live with a stream), CUSIM_POOL
 * memory pools made by cuMemPoolCreate and not destroyed (a device's default
 * pool is not counted), CUSIM_GREEN green contexts made by cuGreenCtxCreate
 * and not destroyed (cusim_is_live takes the CUgreenCtx; its CUcontext is not
 * counted as CUSIM_CONTEXT, the primary context it retains is counted as
 * CUSIM_PRIMARY), CUSIM_ALL every kind together but CUSIM_CAPTURE (a
 * capture's graph counts as CUSIM_GRAPH). New kinds go before CUSIM_ALL. */
enum cusim_kind {
	CUSIM_CONTEXT, CUSIM_PRIMARY, CUSIM_EVENT, CUSIM_STREAM, CUSIM_MODULE,
	CUSIM_MEM, CUSIM_HOST_MEM, CUSIM_GRAPH, CUSIM_GRAPH_EXEC, CUSIM_LIBRARY, CUSIM_CAPTURE,
	CUSIM_POOL, CUSIM_GREEN, CUSIM_PEER, CUSIM_IPC_MEM, CUSIM_ALL
};

/* Live objects of a kind. */
size_t cusim_live(enum cusim_kind kind);

/* 1 if handle is a live object of that kind (not CUSIM_ALL; 0 for
 * CUSIM_PEER, whose pairs cusim_peer_enabled asks about). */
int cusim_is_live(enum cusim_kind kind, uint64_t handle);

/* Makes the nth call (1 = the next) of entry point fn, counted from now,
 * return rc without doing anything else; it is still logged and counted. */
void cusim_fail_call(const char *fn, unsigned long nth, CUresult rc);

/* Non-zero: cuGetProcAddress(_v2) answers for "cuCtxGetId" as for a symbol
 * the driver lacks (a pre-12.0 driver); zero shows it again. */
void cusim_hide_ctx_id(int hide);

/* 1: cuGetProcAddress(_v2) answers for every green-context entry point
 * (cuGreenCtx*, cuCtxFromGreenCtx, cuDeviceGetDevResource, cuCtxGetDevResource,
 * cuDevSmResourceSplitByCount, cuDevSmResourceSplit, cuDevResourceGenerateDesc,
 * cuStreamGetGreenCtx) as for a symbol the driver lacks (a driver older than
 * CUDA 12.4); 2: only the SM-resource ones (cuDeviceGetDevResource,
 * cuDevSmResourceSplitByCount, cuDevSmResourceSplit, cuDevResourceGenerateDesc,
 * cuCtxGetDevResource), the green contexts themselves still there (a driver
 * that can make a green context of a descriptor but not split; the ABI
 * symbols stay exported, for a test to make a descriptor with); any other
 * non-zero value is 1; zero shows them again. Off after cusim_reset. */
void cusim_hide_green(int hide);

/* Streams that died with their green context (cuGreenCtxDestroy while they
 * were alive; the real driver leaks them) since the last reset: a test sees a
 * program that did not destroy its streams first, which no misuse records. */
size_t cusim_leaked_streams(void);

/* A retain of dev's primary context by an outside holder (as the CUDA
 * runtime is): same count as cuDevicePrimaryCtxRetain, but neither logged
 * nor counted.  0 on success, -1 for a bad device. */
int cusim_primary_outside_retain(int dev);

/* Drops one retain of dev's primary context like cuDevicePrimaryCtxRelease,
 * neither logged nor counted.  0 on success, -1 for a bad device or none held. */
int cusim_primary_outside_release(int dev);

/* Retains of dev's primary context now held, from anyone; 0 for a bad device. */
unsigned cusim_primary_refs(int dev);

/* Every call of entry point fn (base name) sleeps usec microseconds before
 * taking the simulator's lock, so other threads go on and it can be
 * cancelled there; 0 removes the delay. */
void cusim_set_delay(const char *fn, unsigned usec);

/* Calls sleeping in their delay now (entered, not yet holding the lock), or
 * in a window of cusim_set_sync_time, so a test can wait until one is held
 * there instead of guessing a time. */
unsigned cusim_sleeping(void);

/* The next call of entry point fn (base name), once done (its effect made,
 * logged, the simulator's lock let go), waits before it returns to its
 * caller until cusim_let_go(), counted by cusim_sleeping meanwhile; so a
 * test can run code of its own between a driver call and what its caller
 * does next, without guessing a time. A later cusim_hold_after replaces an
 * armed one that no call has taken yet; NULL (or an unknown name) disarms.
 * cusim_reset disarms it and lets a waiting call go. */
void cusim_hold_after(const char *fn);

/* Lets the call that cusim_hold_after holds return (none held: nothing). */
void cusim_let_go(void);

/* Non-zero: every driver entry point but cuGetProcAddress returns rc without
 * doing anything, still logged and counted (e.g. CUDA_ERROR_DEINITIALIZED,
 * as at process exit); 0 turns it off. */
void cusim_fail_all(CUresult rc);

/* Non-zero: a stack level keeps the context it was bound to, by id: once
 * that context is destroyed the level stays dead (creates on it give 709,
 * cuCtxGetId(NULL) 709) even when a new context takes its value, as when a
 * thread's current context is destroyed on another thread, which then
 * creates one at the same address. Zero (the default, and after
 * cusim_reset): a level is its value, and a new context there is current. */
void cusim_set_stale_levels(int on);

/* Non-zero: a cuCtxSynchronize that succeeds runs usec microseconds after
 * its checks, with the simulator's lock let go; a stream capture begun or
 * ended in that context meanwhile (on another thread) is recorded as a
 * misuse - on the real driver the two at once crash inside cuCtxSynchronize
 * (measured on the H200, tools/facts/sync_beside_capture.c). 0 (the
 * default, and after cusim_reset) turns it off. */
void cusim_set_sync_time(unsigned usec);

/* Live stream-ordered allocations (cuMemAllocAsync, cuMemAllocFromPoolAsync;
 * also counted by cusim_live(CUSIM_MEM)); a graph allocation a capture gave
 * is not one. */
size_t cusim_async_allocs_live(void);

/* The value of dev's default pool (what cuDeviceGetDefaultMemPool gives),
 * neither logged nor counted; 0 for a bad device. */
uint64_t cusim_default_pool(int dev);

/* A pool's figures as cuMemPoolGetAttribute gives them (USED_MEM_CURRENT,
 * RESERVED_MEM_CURRENT), neither logged nor counted; either pointer may be
 * NULL. 0, or -1 when pool is no pool the simulator keeps (a destroyed pool
 * whose allocations are still alive is kept). */
int cusim_pool_usage(uint64_t pool, uint64_t *used, uint64_t *reserved);

/* Orphaned work not yet finished: destroyed streams whose unfinished work
 * live stream-ordered allocations made on them still wait on (see
 * "Stream-ordered memory"). */
size_t cusim_orphaned_work(void);

/* Non-zero: this process stands in for the importer of its own IPC handles
 * (cuIpcOpenMemHandle, cuIpcOpenEventHandle), which then open in any
 * context but the exporting object's (see "CUDA IPC"); zero (the default,
 * and after cusim_reset): they are refused with 201, as the real driver
 * refuses a process its own handles. */
void cusim_set_ipc_loopback(int on);

/* Non-zero: no two devices can access each other's memory
 * (cuDeviceCanAccessPeer 0, cuCtxEnablePeerAccess 217), as on a machine
 * whose GPUs have no peer path; zero (the default, and after cusim_reset):
 * any two distinct devices can. */
void cusim_set_peer_unsupported(int on);

/* 1 if peer access from context from to context to (values as the driver
 * gave them) is enabled now, neither logged nor counted. */
int cusim_peer_enabled(uint64_t from, uint64_t to);

/* Every control above, X(name) for cusim_<name>: the one list from which
 * the tests that reach the controls with dlsym (testlib, rawdrv, stress,
 * fuzz_api) make their pointers, each looked up as "cusim_" #name and
 * typed cusim_<name>_fn, a pointer to the function as declared above. A
 * control added here is declared above and exported by controls.c. */
#define CUSIM_CONTROLS(X)               \
	X(reset)                        \
	X(set_recycling)                \
	X(log_count)                    \
	X(log_get)                      \
	X(calls)                        \
	X(calls_dead_ctx)               \
	X(misuse_count)                 \
	X(misuse_text)                  \
	X(live)                         \
	X(is_live)                      \
	X(fail_call)                    \
	X(hide_ctx_id)                  \
	X(primary_outside_retain)       \
	X(primary_outside_release)      \
	X(primary_refs)                 \
	X(set_delay)                    \
	X(sleeping)                     \
	X(hold_after)                   \
	X(let_go)                       \
	X(fail_all)                     \
	X(set_stale_levels)             \
	X(set_sync_time)                \
	X(async_allocs_live)            \
	X(default_pool)                 \
	X(pool_usage)                   \
	X(orphaned_work)                \
	X(hide_green)                   \
	X(leaked_streams)               \
	X(set_ipc_loopback)             \
	X(set_peer_unsupported)         \
	X(peer_enabled)

#define CUSIM_CONTROL_TYPE(name) typedef __typeof__(&cusim_##name) cusim_##name##_fn;
CUSIM_CONTROLS(CUSIM_CONTROL_TYPE)
#undef CUSIM_CONTROL_TYPE

#ifdef __cplusplus
}
#endif

#endif
