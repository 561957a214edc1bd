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
	snprintf(name, (size_t)len, "cudasim device %d", dev);
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
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
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
