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
 *
 * cuLaunchKernel packs its sizes: arg = grid x | y << 32 | z << 48, flags =
 * block x | y << 16 | z << 32 (exact for every size the driver accepts).
 *
 * A stream is logged as its value: 0 for NULL, 1 for CU_STREAM_LEGACY, 2 for
 * CU_STREAM_PER_THREAD.  Every other entry point logs all three as 0. */
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

/* Destroys every object, clears logs, counters, fault plans, misuses,
 * delays, fail_all, outside primary retains and the cuCtxGetId hiding,
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

/* Misuses recorded since the last reset. */
size_t cusim_misuse_count(void);

/* Text of misuse i, e.g. "cuStreamDestroy(0x...): stream not live: its
 * context was destroyed"; NULL out of range; valid until the next reset. */
const char *cusim_misuse_text(size_t i);

/* The kinds of object the simulator counts: CUSIM_CONTEXT is non-primary
 * contexts, CUSIM_PRIMARY active primaries, CUSIM_ALL every kind together. */
enum cusim_kind {
	CUSIM_CONTEXT, CUSIM_PRIMARY, CUSIM_EVENT, CUSIM_STREAM, CUSIM_MODULE,
	CUSIM_MEM, CUSIM_HOST_MEM, CUSIM_GRAPH, CUSIM_GRAPH_EXEC, CUSIM_LIBRARY, CUSIM_CAPTURE,
	CUSIM_ALL
};

/* Live objects of a kind. */
size_t cusim_live(enum cusim_kind kind);

/* 1 if handle is a live object of that kind (not CUSIM_ALL). */
int cusim_is_live(enum cusim_kind kind, uint64_t handle);

/* Makes the nth call (1 = the next) of entry point fn, counted from now,
 * return rc without doing anything else; it is still logged and counted. */
void cusim_fail_call(const char *fn, unsigned long nth, CUresult rc);

/* Non-zero: cuGetProcAddress(_v2) answers for "cuCtxGetId" as for a symbol
 * the driver lacks (a pre-12.0 driver); zero shows it again. */
void cusim_hide_ctx_id(int hide);

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

/* Calls sleeping in their delay now (entered, not yet holding the lock), so
 * a test can wait until one is held there instead of guessing a time. */
unsigned cusim_sleeping(void);

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
	X(fail_all)                     \
	X(set_stale_levels)

#define CUSIM_CONTROL_TYPE(name) typedef __typeof__(&cusim_##name) cusim_##name##_fn;
CUSIM_CONTROLS(CUSIM_CONTROL_TYPE)
#undef CUSIM_CONTROL_TYPE

#ifdef __cplusplus
}
#endif

#endif
