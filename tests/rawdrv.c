/* SPDX-License-Identifier: MIT */
/*
 * rawdrv.c - the loader and the small helpers of rawdrv.h.
 */
#include "rawdrv.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rawdrv D;

/* One row of RAWDRV_ENTRIES: where its pointer goes in D. */
struct rawdrv_row {
	const char *symbol;
	int version;
	unsigned users;
	size_t offset;
};

#define RAWDRV_ROW(member, symbol, version, users) {#symbol, version, users, offsetof(struct rawdrv, member)},
static const struct rawdrv_row rows[] = {RAWDRV_ENTRIES(RAWDRV_ROW)};
#undef RAWDRV_ROW

static void resolve(void *slot, const char *symbol, int version)
{
	CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *fn = NULL;
	CUresult rc = D.GetProcAddress(symbol, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
	cr_assert(rc == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && fn,
		  "cuGetProcAddress(%s, %d): %d, status %d", symbol, version, (int)rc, (int)status);
	memcpy(slot, &fn, sizeof fn);
}

void rawdrv_open(void)
{
	const char *path = getenv("CUCTX_DRIVER");
	if (!path || !*path)
		path = "libcuda.so.1";
	D.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!D.lib)
		cr_skip_test("no CUDA driver: %s", dlerror());
	D.sim = dlsym(D.lib, "cusim_reset") != NULL;
	void *gpa = dlsym(D.lib, "cuGetProcAddress_v2");
	cr_assert_not_null(gpa, "%s exports no cuGetProcAddress_v2 (CUDA 12.0 and later do)", path);
	memcpy(&D.GetProcAddress, &gpa, sizeof gpa);
}

void rawdrv_init(void)
{
	resolve(&D.Init, "cuInit", 2000);
	CUresult rc = D.Init(0);
	if (rc != CUDA_SUCCESS)
		cr_skip_test("cuInit(0) gave %d: no usable CUDA device", (int)rc);
}

void rawdrv_resolve(unsigned users)
{
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (rows[i].users & users)
			resolve((char *)&D + rows[i].offset, rows[i].symbol, rows[i].version);
}

static void control(void *slot, const char *symbol)
{
	void *p = dlsym(D.lib, symbol);
	cr_assert_not_null(p, "simulator lacks %s", symbol);
	memcpy(slot, &p, sizeof p);
}

void rawdrv_controls(void)
{
#define RAWDRV_CONTROL(name) control(&D.name, "cusim_" #name);
	CUSIM_CONTROLS(RAWDRV_CONTROL)
#undef RAWDRV_CONTROL
}

const char *rawdrv_rc_name(CUresult rc)
{
	const char *s = NULL;
	return D.GetErrorName && D.GetErrorName(rc, &s) == CUDA_SUCCESS && s ? s : "an unknown code";
}

CUcontext new_raw_ctx(CUdevice dev)
{
	CUcontext c = NULL;
	OK(D.CtxCreate(&c, 0, dev));
	return c;
}

CUcontext current(void)
{
	CUcontext c = (CUcontext)(uintptr_t)0xdead;
	OK(D.CtxGetCurrent(&c));
	return c;
}

unsigned long long ctx_id(CUcontext ctx)
{
	unsigned long long id = 0;
	OK(D.CtxGetId(ctx, &id));
	return id;
}
