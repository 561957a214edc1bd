/* SPDX-License-Identifier: MIT */
/* procs.c - cuGetProcAddress: the table of entry points by name and ABI version, and
 * the ABI versions nobody should call. */
#include "sim.h"

/* ---------------------------------------------------------------------------
 * ABI versions nobody should call: the 32-bit originals and the newer
 * signatures.  They are exported under their real symbol names too, so a
 * plain dlsym("cuMemAlloc") lands on one, as it would on the real driver.
 */
static CUresult unsupported(enum fn fn, const char *abi, int version)
{
	struct call c;
	if (enter_as(&c, fn, 0, false, ARGS(0)))
		return leave(&c, c.rc);
	misuse(&c, 0, "%s (ABI version %d) called through an unpinned/unsupported ABI version", abi, version);
	return leave(&c, CUDA_ERROR_NOT_SUPPORTED);
}

#define SIM_MARKERS(X) \
	X(cuCtxCreate, 2000, cuCtxCreate) X(cuCtxCreate, 11040, cuCtxCreate_v3) \
	X(cuCtxCreate, 12050, cuCtxCreate_v4) X(cuCtxDestroy, 2000, cuCtxDestroy) \
	X(cuCtxPushCurrent, 2000, cuCtxPushCurrent) X(cuCtxPopCurrent, 2000, cuCtxPopCurrent) \
	X(cuCtxGetDevice, 13000, cuCtxGetDevice_v2) X(cuCtxSynchronize, 13000, cuCtxSynchronize_v2) \
	X(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease) \
	X(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset) \
	X(cuEventDestroy, 2000, cuEventDestroy) X(cuStreamDestroy, 2000, cuStreamDestroy) \
	X(cuMemAlloc, 2000, cuMemAlloc) X(cuMemFree, 2000, cuMemFree) \
	X(cuMemAllocHost, 2000, cuMemAllocHost) X(cuMemsetD8, 2000, cuMemsetD8) \
	X(cuMemcpyHtoD, 2000, cuMemcpyHtoD) X(cuMemcpyDtoH, 2000, cuMemcpyDtoH) \
	X(cuMemcpyDtoD, 2000, cuMemcpyDtoD) X(cuMemcpyHtoDAsync, 2000, cuMemcpyHtoDAsync) \
	X(cuMemcpyDtoHAsync, 2000, cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync, 3000, cuMemcpyDtoDAsync) \
	X(cuMemcpy2D, 2000, cuMemcpy2D) X(cuMemcpy2DAsync, 2000, cuMemcpy2DAsync) \
	X(cuMemsetD16, 2000, cuMemsetD16) X(cuMemsetD32, 2000, cuMemsetD32) \
	X(cuDeviceTotalMem, 2000, cuDeviceTotalMem) X(cuMemGetInfo, 2000, cuMemGetInfo) \
	X(cuMemAllocPitch, 2000, cuMemAllocPitch) X(cuModuleGetGlobal, 2000, cuModuleGetGlobal) \
	X(cuStreamBeginCapture, 10000, cuStreamBeginCapture) \
	X(cuStreamGetCaptureInfo, 10010, cuStreamGetCaptureInfo) \
	X(cuStreamGetCaptureInfo, 11030, cuStreamGetCaptureInfo_v2) \
	X(cuMemGetAddressRange, 2000, cuMemGetAddressRange)

#define SIM_MARKER_DEFINE(base, version, abi) \
	CUresult marker_##abi(void) SIM_ABI(#abi); \
	CUresult marker_##abi(void) { return unsupported(F_##base, #abi, version); }
SIM_MARKERS(SIM_MARKER_DEFINE)

/* ---------------------------------------------------------------------------
 * cuGetProcAddress: the entry with the largest ABI version not above the one
 * asked for.
 */
struct proc {
	const char *name;
	int version;
	void *fn;
	void *ptsz;     /* asked with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: the _ptsz/_ptds form */
};

#define SIM_PROC(name, version, fn) { #name, version, (void *)(fn), NULL },
#define SIM_PROC_PTSZ(name, version, fn, ptsz) { #name, version, (void *)(fn), (void *)(ptsz) },
/* Stringified here, not passed on: a forwarded name would expand through cuda.h's renames. */
#define SIM_MARKER_PROC(base, version, abi) { #base, version, (void *)(marker_##abi), NULL },

static const struct proc procs[] = {
	SIM_PROC(cuGetProcAddress, 11030, sim_cuGetProcAddress)
	SIM_PROC(cuGetProcAddress, 12000, sim_cuGetProcAddress_v2)
	SIM_PROC(cuInit, 2000, sim_cuInit)
	SIM_PROC(cuDriverGetVersion, 2020, sim_cuDriverGetVersion)
	SIM_PROC(cuDeviceGet, 2000, sim_cuDeviceGet)
	SIM_PROC(cuDeviceGetCount, 2000, sim_cuDeviceGetCount)
	SIM_PROC(cuDeviceGetName, 2000, sim_cuDeviceGetName)
	SIM_PROC(cuGetErrorName, 6000, sim_cuGetErrorName)
	SIM_PROC(cuGetErrorString, 6000, sim_cuGetErrorString)
	SIM_PROC(cuCtxCreate, 3020, sim_cuCtxCreate)
	SIM_PROC(cuCtxDestroy, 4000, sim_cuCtxDestroy)
	SIM_PROC(cuCtxPushCurrent, 4000, sim_cuCtxPushCurrent)
	SIM_PROC(cuCtxPopCurrent, 4000, sim_cuCtxPopCurrent)
	SIM_PROC(cuCtxSetCurrent, 4000, sim_cuCtxSetCurrent)
	SIM_PROC(cuCtxGetCurrent, 4000, sim_cuCtxGetCurrent)
	SIM_PROC(cuCtxGetDevice, 2000, sim_cuCtxGetDevice)
	SIM_PROC(cuCtxSynchronize, 2000, sim_cuCtxSynchronize)
	SIM_PROC(cuCtxGetApiVersion, 3020, sim_cuCtxGetApiVersion)
	SIM_PROC(cuCtxGetId, 12000, sim_cuCtxGetId)
	SIM_PROC(cuDevicePrimaryCtxRetain, 7000, sim_cuDevicePrimaryCtxRetain)
	SIM_PROC(cuDevicePrimaryCtxRelease, 11000, sim_cuDevicePrimaryCtxRelease)
	SIM_PROC(cuDevicePrimaryCtxGetState, 7000, sim_cuDevicePrimaryCtxGetState)
	SIM_PROC(cuDevicePrimaryCtxReset, 11000, sim_cuDevicePrimaryCtxReset)
	SIM_PROC(cuEventCreate, 2000, sim_cuEventCreate)
	SIM_PROC(cuEventDestroy, 4000, sim_cuEventDestroy)
	SIM_PROC_PTSZ(cuEventRecord, 2000, sim_cuEventRecord, sim_cuEventRecord_ptsz)
	SIM_PROC(cuEventQuery, 2000, sim_cuEventQuery)
	SIM_PROC(cuEventSynchronize, 2000, sim_cuEventSynchronize)
	SIM_PROC(cuEventElapsedTime, 2000, sim_cuEventElapsedTime)
	SIM_PROC(cuEventElapsedTime, 12080, sim_cuEventElapsedTime_v2)
	SIM_PROC(cuStreamCreate, 2000, sim_cuStreamCreate)
	SIM_PROC(cuStreamCreateWithPriority, 5050, sim_cuStreamCreateWithPriority)
	SIM_PROC(cuStreamDestroy, 4000, sim_cuStreamDestroy)
	SIM_PROC_PTSZ(cuStreamSynchronize, 2000, sim_cuStreamSynchronize, sim_cuStreamSynchronize_ptsz)
	SIM_PROC_PTSZ(cuStreamWaitEvent, 3020, sim_cuStreamWaitEvent, sim_cuStreamWaitEvent_ptsz)
	SIM_PROC_PTSZ(cuStreamQuery, 2000, sim_cuStreamQuery, sim_cuStreamQuery_ptsz)
	SIM_PROC(cuModuleLoad, 2000, sim_cuModuleLoad)
	SIM_PROC(cuModuleLoadData, 2000, sim_cuModuleLoadData)
	SIM_PROC(cuModuleUnload, 2000, sim_cuModuleUnload)
	SIM_PROC(cuModuleGetFunction, 2000, sim_cuModuleGetFunction)
	SIM_PROC_PTSZ(cuLaunchKernel, 4000, sim_cuLaunchKernel, sim_cuLaunchKernel_ptsz)
	SIM_PROC(cuMemAlloc, 3020, sim_cuMemAlloc)
	SIM_PROC(cuMemFree, 3020, sim_cuMemFree)
	SIM_PROC(cuMemAllocHost, 3020, sim_cuMemAllocHost)
	SIM_PROC(cuMemHostAlloc, 2020, sim_cuMemHostAlloc)
	SIM_PROC(cuMemFreeHost, 2000, sim_cuMemFreeHost)
	SIM_PROC_PTSZ(cuMemsetD8, 3020, sim_cuMemsetD8, sim_cuMemsetD8_ptds)
	SIM_PROC_PTSZ(cuMemcpyHtoD, 3020, sim_cuMemcpyHtoD, sim_cuMemcpyHtoD_ptds)
	SIM_PROC_PTSZ(cuMemcpyDtoH, 3020, sim_cuMemcpyDtoH, sim_cuMemcpyDtoH_ptds)
	SIM_PROC(cuGraphCreate, 10000, sim_cuGraphCreate)
	SIM_PROC(cuGraphAddEmptyNode, 10000, sim_cuGraphAddEmptyNode)
	SIM_PROC(cuGraphDestroy, 10000, sim_cuGraphDestroy)
	SIM_PROC(cuGraphInstantiateWithFlags, 11040, sim_cuGraphInstantiateWithFlags)
	SIM_PROC(cuGraphExecDestroy, 10000, sim_cuGraphExecDestroy)
	SIM_PROC_PTSZ(cuGraphLaunch, 10000, sim_cuGraphLaunch, sim_cuGraphLaunch_ptsz)
	SIM_PROC(cuDeviceGetAttribute, 2000, sim_cuDeviceGetAttribute)
	SIM_PROC(cuDeviceTotalMem, 3020, sim_cuDeviceTotalMem)
	SIM_PROC(cuMemGetInfo, 3020, sim_cuMemGetInfo)
	SIM_PROC_PTSZ(cuMemsetD16, 3020, sim_cuMemsetD16, sim_cuMemsetD16_ptds)
	SIM_PROC_PTSZ(cuMemsetD32, 3020, sim_cuMemsetD32, sim_cuMemsetD32_ptds)
	SIM_PROC_PTSZ(cuMemsetD8Async, 3020, sim_cuMemsetD8Async, sim_cuMemsetD8Async_ptsz)
	SIM_PROC_PTSZ(cuMemsetD16Async, 3020, sim_cuMemsetD16Async, sim_cuMemsetD16Async_ptsz)
	SIM_PROC_PTSZ(cuMemsetD32Async, 3020, sim_cuMemsetD32Async, sim_cuMemsetD32Async_ptsz)
	SIM_PROC_PTSZ(cuMemcpyDtoD, 3020, sim_cuMemcpyDtoD, sim_cuMemcpyDtoD_ptds)
	SIM_PROC_PTSZ(cuMemcpyHtoDAsync, 3020, sim_cuMemcpyHtoDAsync, sim_cuMemcpyHtoDAsync_ptsz)
	SIM_PROC_PTSZ(cuMemcpyDtoHAsync, 3020, sim_cuMemcpyDtoHAsync, sim_cuMemcpyDtoHAsync_ptsz)
	SIM_PROC_PTSZ(cuMemcpyDtoDAsync, 3020, sim_cuMemcpyDtoDAsync, sim_cuMemcpyDtoDAsync_ptsz)
	SIM_PROC_PTSZ(cuMemcpy2D, 3020, sim_cuMemcpy2D, sim_cuMemcpy2D_ptds)
	SIM_PROC_PTSZ(cuMemcpy2DAsync, 3020, sim_cuMemcpy2DAsync, sim_cuMemcpy2DAsync_ptsz)
	SIM_PROC_PTSZ(cuLaunchKernelEx, 11060, sim_cuLaunchKernelEx, sim_cuLaunchKernelEx_ptsz)
	SIM_PROC_PTSZ(cuLaunchHostFunc, 10000, sim_cuLaunchHostFunc, sim_cuLaunchHostFunc_ptsz)
	SIM_PROC_PTSZ(cuStreamAddCallback, 5000, sim_cuStreamAddCallback, sim_cuStreamAddCallback_ptsz)
	SIM_PROC_PTSZ(cuStreamBeginCapture, 10010, sim_cuStreamBeginCapture, sim_cuStreamBeginCapture_ptsz)
	SIM_PROC_PTSZ(cuStreamEndCapture, 10000, sim_cuStreamEndCapture, sim_cuStreamEndCapture_ptsz)
	SIM_PROC_PTSZ(cuStreamIsCapturing, 10000, sim_cuStreamIsCapturing, sim_cuStreamIsCapturing_ptsz)
	SIM_PROC_PTSZ(cuStreamGetCaptureInfo, 12030, sim_cuStreamGetCaptureInfo, sim_cuStreamGetCaptureInfo_ptsz)
	SIM_PROC(cuThreadExchangeStreamCaptureMode, 10010, sim_cuThreadExchangeStreamCaptureMode)
	SIM_PROC(cuGraphGetNodes, 10000, sim_cuGraphGetNodes)
	SIM_PROC(cuMemAllocPitch, 3020, sim_cuMemAllocPitch)
	SIM_PROC(cuModuleLoadDataEx, 2010, sim_cuModuleLoadDataEx)
	SIM_PROC(cuModuleGetGlobal, 3020, sim_cuModuleGetGlobal)
	SIM_PROC(cuLibraryLoadData, 12000, sim_cuLibraryLoadData)
	SIM_PROC(cuLibraryLoadFromFile, 12000, sim_cuLibraryLoadFromFile)
	SIM_PROC(cuLibraryUnload, 12000, sim_cuLibraryUnload)
	SIM_PROC(cuLibraryGetKernel, 12000, sim_cuLibraryGetKernel)
	SIM_PROC(cuLibraryGetKernelCount, 12040, sim_cuLibraryGetKernelCount)
	SIM_PROC(cuLibraryGetModule, 12000, sim_cuLibraryGetModule)
	SIM_PROC(cuLibraryGetGlobal, 12000, sim_cuLibraryGetGlobal)
	SIM_PROC(cuKernelGetFunction, 12000, sim_cuKernelGetFunction)
	SIM_PROC(cuKernelGetName, 12030, sim_cuKernelGetName)
	SIM_PROC(cuKernelGetLibrary, 12050, sim_cuKernelGetLibrary)
	SIM_PROC_PTSZ(cuMemAllocAsync, 11020, sim_cuMemAllocAsync, sim_cuMemAllocAsync_ptsz)
	SIM_PROC_PTSZ(cuMemAllocFromPoolAsync, 11020, sim_cuMemAllocFromPoolAsync, sim_cuMemAllocFromPoolAsync_ptsz)
	SIM_PROC_PTSZ(cuMemFreeAsync, 11020, sim_cuMemFreeAsync, sim_cuMemFreeAsync_ptsz)
	SIM_PROC(cuMemPoolCreate, 11020, sim_cuMemPoolCreate)
	SIM_PROC(cuMemPoolDestroy, 11020, sim_cuMemPoolDestroy)
	SIM_PROC(cuMemPoolTrimTo, 11020, sim_cuMemPoolTrimTo)
	SIM_PROC(cuMemPoolGetAttribute, 11020, sim_cuMemPoolGetAttribute)
	SIM_PROC(cuMemPoolSetAttribute, 11020, sim_cuMemPoolSetAttribute)
	SIM_PROC(cuMemPoolGetAccess, 11020, sim_cuMemPoolGetAccess)
	SIM_PROC(cuMemPoolSetAccess, 11020, sim_cuMemPoolSetAccess)
	SIM_PROC(cuDeviceGetDefaultMemPool, 11020, sim_cuDeviceGetDefaultMemPool)
	SIM_PROC(cuDeviceGetMemPool, 11020, sim_cuDeviceGetMemPool)
	SIM_PROC(cuDeviceSetMemPool, 11020, sim_cuDeviceSetMemPool)
	SIM_PROC(cuDeviceGetDevResource, 12040, sim_cuDeviceGetDevResource)
	SIM_PROC(cuDevSmResourceSplitByCount, 12040, sim_cuDevSmResourceSplitByCount)
	SIM_PROC(cuDevResourceGenerateDesc, 12040, sim_cuDevResourceGenerateDesc)
	SIM_PROC(cuGreenCtxCreate, 12040, sim_cuGreenCtxCreate)
	SIM_PROC(cuGreenCtxDestroy, 12040, sim_cuGreenCtxDestroy)
	SIM_PROC(cuCtxFromGreenCtx, 12040, sim_cuCtxFromGreenCtx)
	SIM_PROC(cuGreenCtxGetId, 12090, sim_cuGreenCtxGetId)
	SIM_PROC(cuGreenCtxStreamCreate, 12050, sim_cuGreenCtxStreamCreate)
	SIM_PROC(cuGreenCtxRecordEvent, 12040, sim_cuGreenCtxRecordEvent)
	SIM_PROC(cuGreenCtxWaitEvent, 12040, sim_cuGreenCtxWaitEvent)
	SIM_PROC(cuGreenCtxGetDevResource, 12040, sim_cuGreenCtxGetDevResource)
	SIM_PROC(cuStreamGetCtx, 12050, sim_cuStreamGetCtx_v2)
	SIM_PROC(cuDeviceCanAccessPeer, 4000, sim_cuDeviceCanAccessPeer)
	SIM_PROC(cuCtxEnablePeerAccess, 4000, sim_cuCtxEnablePeerAccess)
	SIM_PROC(cuCtxDisablePeerAccess, 4000, sim_cuCtxDisablePeerAccess)
	SIM_PROC(cuIpcGetMemHandle, 4010, sim_cuIpcGetMemHandle)
	SIM_PROC(cuIpcOpenMemHandle, 4010, sim_cuIpcOpenMemHandle_v1)
	SIM_PROC(cuIpcOpenMemHandle, 11000, sim_cuIpcOpenMemHandle)
	SIM_PROC(cuIpcCloseMemHandle, 4010, sim_cuIpcCloseMemHandle)
	SIM_PROC(cuIpcGetEventHandle, 4010, sim_cuIpcGetEventHandle)
	SIM_PROC(cuIpcOpenEventHandle, 4010, sim_cuIpcOpenEventHandle)
	SIM_PROC(cuMemGetAddressRange, 3020, sim_cuMemGetAddressRange)
	SIM_PROC(cuPointerGetAttribute, 4000, sim_cuPointerGetAttribute)
	SIM_MARKERS(SIM_MARKER_PROC)
};

static CUresult proc_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
			    CUdriverProcAddressQueryResult *status)
{
	struct call c;
	if (enter_as(&c, F_cuGetProcAddress, 0, false, ARGS(.flags = flags, .arg = version)))
		return leave(&c, c.rc);
	if (pfn)
		*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!symbol || !pfn)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
	    flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* Documented: asking for a version newer than the driver is an error, not the newest entry. */
	if (version > SIM_DRIVER_VERSION)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct proc *best = NULL;
	bool named = false;
	/* A hidden cuCtxGetId matches no entry: the answer of a driver older than CUDA 12.0;
	 * hidden green-context entry points, of one older than CUDA 12.4 (green.c). */
	bool hidden = (S.hide_ctx_id && strcmp(symbol, "cuCtxGetId") == 0) || green_hidden(symbol);
	for (size_t i = 0; !hidden && i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(procs[i].name, symbol) != 0)
			continue;
		named = true;
		if (procs[i].version <= version && (!best || procs[i].version > best->version))
			best = &procs[i];
	}
	/* An entry point of the real driver that this one does not implement: its
	 * stub, which answers CUDA_ERROR_NOT_SUPPORTED when called (stubs.c). */
	void *stub = hidden || named ? NULL : stub_for(symbol);
	if (stub) {
		*pfn = stub;
		if (status)
			*status = CU_GET_PROC_ADDRESS_SUCCESS;
		return leave(&c, CUDA_SUCCESS);
	}
	if (!best) {
		if (status && named)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return leave(&c, CUDA_ERROR_NOT_FOUND);
	}
	*pfn = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && best->ptsz ? best->ptsz : best->fn;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return proc_lookup(symbol, pfn, version, flags, NULL);
}

CUresult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *status)
{
	return proc_lookup(symbol, pfn, version, flags, status);
}
