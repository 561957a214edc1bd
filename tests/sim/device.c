/* SPDX-License-Identifier: MIT */
/* device.c - cuInit, the driver version, devices and the error names. */
#include "sim.h"

/* --- initialisation and devices ------------------------------------------ */

static int devices_from_env(void)
{
	const char *s = getenv("CUSIM_DEVICES");
	if (!s || !*s)
		return SIM_DEFAULT_DEVICES;
	char *end;
	long n = strtol(s, &end, 10);
	if (*end || n < 0)
		return SIM_DEFAULT_DEVICES;
	return n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)n;
}

/* The line a program run on this driver prints once, at its first successful cuInit. */
#define SIM_ANNOUNCEMENT                                                                                   \
	"cuctx test driver: a simulated CUDA driver for testing a program's resource lifetimes and error " \
	"paths without a GPU, not for numerics: kernels run nothing (CUCTX_TESTDRIVER_QUIET=1 hides this line)\n"

static bool announced;   /* once per process: cusim_reset does not bring it back */

static void announce(void)
{
	if (announced)
		return;
	announced = true;
	const char *q = getenv("CUCTX_TESTDRIVER_QUIET");
	if (q && *q && strcmp(q, "0") != 0)
		return;
	fputs(SIM_ANNOUNCEMENT, stderr);
	fflush(stderr);
}

CUresult sim_cuInit(unsigned int flags)
{
	struct call c;
	if (enter_as(&c, F_cuInit, 0, false, ARGS(.flags = flags)))
		return leave(&c, c.rc);
	if (flags != 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!S.initialised) {
		S.devices = devices_from_env();
		if (S.devices == 0)
			return leave(&c, CUDA_ERROR_NO_DEVICE);
		S.initialised = true;
	}
	announce();
	return leave(&c, CUDA_SUCCESS);
}

/* Like the real driver, the version query needs no cuInit. */
CUresult sim_cuDriverGetVersion(int *version)
{
	struct call c;
	if (enter_as(&c, F_cuDriverGetVersion, 0, false, ARGS(0)))
		return leave(&c, c.rc);
	if (!version)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	*version = SIM_DRIVER_VERSION;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGet(CUdevice *dev, int ordinal)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGet, 0, ARGS(.arg = ordinal)))
		return leave(&c, c.rc);
	if (!dev)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(ordinal))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGetCount(int *count)
{
	struct call c;
	if (enter(&c, F_cuDeviceGetCount, 0))
		return leave(&c, c.rc);
	if (!count)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	*count = S.devices;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGetName, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!name || len <= 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, (size_t)len, "cuctx test driver device %d (simulated, kernels run nothing)", dev);
	return leave(&c, CUDA_SUCCESS);
}

/* What an H200 (compute capability 9.0) answers, for the attributes a program
 * commonly asks; every other attribute below CU_DEVICE_ATTRIBUTE_MAX answers 0
 * (absent, unsupported), and one outside that range CUDA_ERROR_INVALID_VALUE. */
struct attribute_value {
	CUdevice_attribute attrib;
	int value;
};

static const struct attribute_value attributes[] = {
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152 },
	{ CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536 },
	{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536 },
	{ CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000 },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512 },
	{ CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1 },
	{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132 },
	{ CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0 },
	{ CU_DEVICE_ATTRIBUTE_INTEGRATED, 0 },
	{ CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1 },
	{ CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 3201000 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 6144 },
	{ CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800 },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048 },
	{ CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0 },
	{ CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32 },
	{ CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1 },
};

CUresult sim_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGetAttribute, 0, ARGS(.flags = (unsigned long long)attrib, .arg = dev)))
		return leave(&c, c.rc);
	if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
		*pi = 0x18 + 0x10 * dev;
		return leave(&c, CUDA_SUCCESS);
	}
	*pi = 0;
	for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++)
		if (attributes[i].attrib == attrib)
			*pi = attributes[i].value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceTotalMem, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!bytes)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	*bytes = SIM_DEVICE_TOTAL_MEM;
	return leave(&c, CUDA_SUCCESS);
}

struct error_text {
	CUresult rc;
	const char *name;
	const char *text;
};

static const struct error_text error_texts[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
	{ CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted" },
	{ CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	  "operation not permitted when stream is capturing" },
	{ CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	  "operation failed due to a previous error during capture" },
	{ CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
	  "operation would result in a merge of separate capture sequences" },
	{ CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	  "capture was not ended in the same stream as it began" },
	{ CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	  "capturing stream has unjoined work" },
	{ CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	  "dependency created on uncaptured work in another stream" },
	{ CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
	  "operation would make the legacy stream depend on a capturing blocking stream" },
	{ CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
	  "operation not permitted on an event last recorded in a capturing stream" },
	{ CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	  "attempt to terminate a thread-local capture sequence from another thread" },
	{ CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	  "peer access is not supported between these two devices" },
	{ CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	  "peer access is already enabled" },
	{ CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static const struct error_text *error_lookup(CUresult rc)
{
	for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
		if (error_texts[i].rc == rc)
			return &error_texts[i];
	return NULL;
}

/* The error-text calls need no cuInit, so a caller can describe cuInit's own failure. */
CUresult sim_cuGetErrorName(CUresult error, const char **str)
{
	struct call c;
	if (enter_as(&c, F_cuGetErrorName, 0, false, ARGS(.arg = error)))
		return leave(&c, c.rc);
	if (!str)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct error_text *e = error_lookup(error);
	*str = e ? e->name : NULL;
	return leave(&c, e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

CUresult sim_cuGetErrorString(CUresult error, const char **str)
{
	struct call c;
	if (enter_as(&c, F_cuGetErrorString, 0, false, ARGS(.arg = error)))
		return leave(&c, c.rc);
	if (!str)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct error_text *e = error_lookup(error);
	*str = e ? e->text : NULL;
	return leave(&c, e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* --- contexts -------------------------------------------------------------- */
