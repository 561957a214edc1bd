/* SPDX-License-Identifier: MIT */
/*
 * rawdrv.h - the CUDA driver reached with no cuctx in between, for the tests
 * that ask the driver itself: test_contract (what cuctx relies on) and
 * test_sim (the simulator against what it models). Neither links libcuctx.
 *
 * The driver is the one the suite runs against: the file CUCTX_DRIVER names
 * (the simulator in make check), else libcuda.so.1 (make check-gpu). It is
 * opened with dlopen, and every entry point is looked up through
 * cuGetProcAddress_v2 at the ABI version cuctx pins, as cuctx's loader does.
 * The simulator's control API (cudasim.h) comes through dlsym.
 *
 * Use from a suite's .init: rawdrv_open(), then rawdrv_init() where cuInit
 * must come before the lookups (the real driver wants it), then
 * rawdrv_resolve(); rawdrv_controls() against the simulator only.
 */
#ifndef CUCTX_TESTS_RAWDRV_H
#define CUCTX_TESTS_RAWDRV_H

#include <criterion/criterion.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "cudasim.h"

/* Which program calls an entry point: RAWDRV_CONTRACT, test_contract and
 * test_sim; RAWDRV_SIM, test_sim alone. test_contract looks up only its own,
 * so that it asks no more of a driver than it tests. */
#define RAWDRV_CONTRACT 1u
#define RAWDRV_SIM 2u
#define RAWDRV_ALL (RAWDRV_CONTRACT | RAWDRV_SIM)

/* The entry points: X(member, symbol, version, users). A member is the
 * symbol less "cu" (EventElapsedTime2: the same entry point at its later
 * ABI); the types are cudaTypedefs.h's PFN_<symbol>_v<version>. Token
 * pasting and # keep cuda.h's renaming macros (cuCtxCreate -> cuCtxCreate_v2)
 * off the symbols. */
#define RAWDRV_ENTRIES(X)                                                                \
	X(Init, cuInit, 2000, RAWDRV_CONTRACT)                                           \
	X(DriverGetVersion, cuDriverGetVersion, 2020, RAWDRV_CONTRACT)                   \
	X(DeviceGet, cuDeviceGet, 2000, RAWDRV_SIM)                                      \
	X(DeviceGetCount, cuDeviceGetCount, 2000, RAWDRV_SIM)                            \
	X(DeviceGetName, cuDeviceGetName, 2000, RAWDRV_SIM)                              \
	X(GetErrorName, cuGetErrorName, 6000, RAWDRV_CONTRACT)                           \
	X(GetErrorString, cuGetErrorString, 6000, RAWDRV_SIM)                            \
	X(CtxCreate, cuCtxCreate, 3020, RAWDRV_CONTRACT)                                 \
	X(CtxDestroy, cuCtxDestroy, 4000, RAWDRV_CONTRACT)                               \
	X(CtxPushCurrent, cuCtxPushCurrent, 4000, RAWDRV_CONTRACT)                       \
	X(CtxPopCurrent, cuCtxPopCurrent, 4000, RAWDRV_CONTRACT)                         \
	X(CtxSetCurrent, cuCtxSetCurrent, 4000, RAWDRV_CONTRACT)                         \
	X(CtxGetCurrent, cuCtxGetCurrent, 4000, RAWDRV_CONTRACT)                         \
	X(CtxGetDevice, cuCtxGetDevice, 2000, RAWDRV_SIM)                                \
	X(CtxSynchronize, cuCtxSynchronize, 2000, RAWDRV_SIM)                            \
	X(CtxGetApiVersion, cuCtxGetApiVersion, 3020, RAWDRV_CONTRACT)                   \
	X(CtxGetId, cuCtxGetId, 12000, RAWDRV_CONTRACT)                                  \
	X(PrimaryRetain, cuDevicePrimaryCtxRetain, 7000, RAWDRV_CONTRACT)                \
	X(PrimaryRelease, cuDevicePrimaryCtxRelease, 11000, RAWDRV_CONTRACT)             \
	X(PrimaryGetState, cuDevicePrimaryCtxGetState, 7000, RAWDRV_CONTRACT)            \
	X(PrimaryReset, cuDevicePrimaryCtxReset, 11000, RAWDRV_CONTRACT)                 \
	X(EventCreate, cuEventCreate, 2000, RAWDRV_CONTRACT)                             \
	X(EventDestroy, cuEventDestroy, 4000, RAWDRV_CONTRACT)                           \
	X(EventRecord, cuEventRecord, 2000, RAWDRV_CONTRACT)                             \
	X(EventQuery, cuEventQuery, 2000, RAWDRV_SIM)                                    \
	X(EventSynchronize, cuEventSynchronize, 2000, RAWDRV_CONTRACT)                   \
	X(EventElapsedTime, cuEventElapsedTime, 2000, RAWDRV_CONTRACT)                   \
	X(EventElapsedTime2, cuEventElapsedTime, 12080, RAWDRV_SIM)                      \
	X(StreamCreate, cuStreamCreate, 2000, RAWDRV_SIM)                                \
	X(StreamCreateWithPriority, cuStreamCreateWithPriority, 5050, RAWDRV_SIM)        \
	X(StreamDestroy, cuStreamDestroy, 4000, RAWDRV_SIM)                              \
	X(StreamSynchronize, cuStreamSynchronize, 2000, RAWDRV_SIM)                      \
	X(StreamWaitEvent, cuStreamWaitEvent, 3020, RAWDRV_SIM)                          \
	X(StreamQuery, cuStreamQuery, 2000, RAWDRV_SIM)                                  \
	X(ModuleLoad, cuModuleLoad, 2000, RAWDRV_SIM)                                    \
	X(ModuleLoadData, cuModuleLoadData, 2000, RAWDRV_CONTRACT)                       \
	X(ModuleUnload, cuModuleUnload, 2000, RAWDRV_CONTRACT)                           \
	X(ModuleGetFunction, cuModuleGetFunction, 2000, RAWDRV_SIM)                      \
	X(LaunchKernel, cuLaunchKernel, 4000, RAWDRV_SIM)                                \
	X(MemAlloc, cuMemAlloc, 3020, RAWDRV_CONTRACT)                                   \
	X(MemFree, cuMemFree, 3020, RAWDRV_CONTRACT)                                     \
	X(MemAllocHost, cuMemAllocHost, 3020, RAWDRV_CONTRACT)                           \
	X(MemHostAlloc, cuMemHostAlloc, 2020, RAWDRV_SIM)                                \
	X(MemFreeHost, cuMemFreeHost, 2000, RAWDRV_CONTRACT)                             \
	X(MemsetD8, cuMemsetD8, 3020, RAWDRV_CONTRACT)                                   \
	X(MemcpyHtoD, cuMemcpyHtoD, 3020, RAWDRV_SIM)                                    \
	X(MemcpyDtoH, cuMemcpyDtoH, 3020, RAWDRV_SIM)                                    \
	X(GraphCreate, cuGraphCreate, 10000, RAWDRV_CONTRACT)                            \
	X(GraphAddEmptyNode, cuGraphAddEmptyNode, 10000, RAWDRV_CONTRACT)                \
	X(GraphDestroy, cuGraphDestroy, 10000, RAWDRV_CONTRACT)                          \
	X(GraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, RAWDRV_CONTRACT) \
	X(GraphExecDestroy, cuGraphExecDestroy, 10000, RAWDRV_CONTRACT)                  \
	X(GraphLaunch, cuGraphLaunch, 10000, RAWDRV_SIM)

#define RAWDRV_ENTRY_MEMBER(member, symbol, version, users) PFN_##symbol##_v##version member;
#define RAWDRV_CONTROL_MEMBER(name) cusim_##name##_fn name;

struct rawdrv {
	void *lib;              /* the dlopen handle */
	int sim;                /* the simulated driver (it exports cusim_reset) */
	int version;            /* cuDriverGetVersion, where a program asks it */
	int devices;            /* the device count, where a program asks it */
	PFN_cuGetProcAddress_v12000 GetProcAddress;
	RAWDRV_ENTRIES(RAWDRV_ENTRY_MEMBER)
	CUSIM_CONTROLS(RAWDRV_CONTROL_MEMBER)   /* cusim_<name>; NULL until rawdrv_controls() */
};

#undef RAWDRV_ENTRY_MEMBER
#undef RAWDRV_CONTROL_MEMBER

extern struct rawdrv D;

/* Opens the driver and takes cuGetProcAddress_v2 from it; a test skips where
 * there is no driver to open. Sets D.lib, D.sim and D.GetProcAddress. */
void rawdrv_open(void);

/* Looks up cuInit and calls cuInit(0); a machine without a usable device
 * skips the test. */
void rawdrv_init(void);

/* Looks up every entry point of RAWDRV_ENTRIES whose users include one of
 * `users`; each must be found. */
void rawdrv_resolve(unsigned users);

/* Takes every control of CUSIM_CONTROLS (cudasim.h) from the simulator; each
 * must be there. */
void rawdrv_controls(void);

/* The name the driver gives rc, or "an unknown code". */
const char *rawdrv_rc_name(CUresult rc);

/* Asserts that `call` gave `want`, naming both answers when it did not. (The
 * names are asked of the driver only then: a simulator's call log stays as
 * the test made it, also with Criterion's --full-stats.) */
#define WANT(call, want)                                                                             \
	do {                                                                                         \
		CUresult got_ = (call), want_ = (want);                                              \
		cr_assert_eq(got_, want_, "line %d: %s gave %d %s, expected %d %s", __LINE__, #call, \
			     (int)got_, got_ == want_ ? "" : rawdrv_rc_name(got_), (int)want_,       \
			     got_ == want_ ? "" : rawdrv_rc_name(want_));                            \
	} while (0)
#define OK(call) WANT(call, CUDA_SUCCESS)

/* A new context on dev, made current by the create. */
CUcontext new_raw_ctx(CUdevice dev);

/* The calling thread's current context (NULL: none). */
CUcontext current(void);

/* The id cuCtxGetId gives ctx (NULL: the current context). */
unsigned long long ctx_id(CUcontext ctx);

#endif
