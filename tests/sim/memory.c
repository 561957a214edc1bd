/* SPDX-License-Identifier: MIT */
/* memory.c - device and page-locked host memory: allocations, frees, memset and copies. */
#include "sim.h"

CUresult sim_cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
	struct call c;
	if (enter_with(&c, F_cuMemAlloc, 0, ARGS(.arg = (long long)size)))
		return leave(&c, c.rc);
	if (!dptr || size == 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (size > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_MEM, cur, size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	*dptr = o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemFree(CUdeviceptr dptr)
{
	struct call c;
	if (enter(&c, F_cuMemFree, dptr))
		return leave(&c, c.rc);
	if (!dptr)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o = find(K_MEM, dptr);
	if (!o && mem_containing(dptr, 0)) {
		misuse(&c, dptr, "mem not live: points inside an allocation, not at its start");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	CUresult rc = need_live(&c, K_MEM, dptr, &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* Device ranges are checked against live allocations: the real driver's stale pointer hits another owner's memory. */
static CUresult device_range(const struct call *c, CUdeviceptr p, size_t n, unsigned char **where)
{
	struct obj *o = mem_containing(p, n);
	if (o) {
		*where = o->buf + (p - o->value);
		return CUDA_SUCCESS;
	}
	struct obj *dead = find(K_MEM, p);
	if (dead && !dead->live)
		misuse(c, p, "mem not live: %s", dead->why);
	else
		misuse(c, p, "device range of %zu bytes lies outside every live allocation", n);
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_cuMemsetD8(CUdeviceptr dptr, unsigned char uc, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemsetD8, dptr, ARGS(.flags = uc, .arg = (long long)n)))
		return leave(&c, c.rc);
	unsigned char *dst;
	CUresult rc = device_range(&c, dptr, n, &dst);
	if (rc)
		return leave(&c, rc);
	memset(dst, uc, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemcpyHtoD, dst, ARGS(.arg = (long long)n, .handle2 = H(src))))
		return leave(&c, c.rc);
	if (!src && n)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *d;
	CUresult rc = device_range(&c, dst, n, &d);
	if (rc)
		return leave(&c, rc);
	if (n)
		memcpy(d, src, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemcpyDtoH, src, ARGS(.arg = (long long)n, .handle2 = H(dst))))
		return leave(&c, c.rc);
	if (!dst && n)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *s;
	CUresult rc = device_range(&c, src, n, &s);
	if (rc)
		return leave(&c, rc);
	if (n)
		memcpy(dst, s, n);
	return leave(&c, CUDA_SUCCESS);
}

#define SIM_HOST_FLAGS (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

static CUresult host_alloc(enum fn fn, void **pp, size_t size, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.flags = flags, .arg = (long long)size)))
		return leave(&c, c.rc);
	if (!pp || size == 0 || (flags & ~(unsigned int)SIM_HOST_FLAGS))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (size > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_HOST, cur, size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	o->flags = flags;
	*pp = o->buf;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemAllocHost(void **pp, size_t size)
{
	return host_alloc(F_cuMemAllocHost, pp, size, 0);
}

CUresult sim_cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	return host_alloc(F_cuMemHostAlloc, pp, size, flags);
}

CUresult sim_cuMemFreeHost(void *p)
{
	struct call c;
	if (enter(&c, F_cuMemFreeHost, H(p)))
		return leave(&c, c.rc);
	if (!p)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_HOST, H(p), &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* --- graphs ------------------------------------------------------------------ */
