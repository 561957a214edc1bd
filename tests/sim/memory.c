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
	if (rc == CUDA_SUCCESS)
		rc = capture_unsafe();
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_MEM, ctx_home(cur), size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	*dptr = o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

/* Rows of width bytes at a pitch of whole 512-byte units (the H200's answer for 64 bytes). */
#define SIM_PITCH_UNIT 512u

CUresult sim_cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height, unsigned int elem)
{
	struct call c;
	if (enter_with(&c, F_cuMemAllocPitch, 0, ARGS(.flags = elem, .arg = (long long)width)))
		return leave(&c, c.rc);
	if (!dptr || !pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (width > SIM_MAX_ALLOC || height > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	size_t p = (width + SIM_PITCH_UNIT - 1) / SIM_PITCH_UNIT * SIM_PITCH_UNIT;
	if (p * height > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc == CUDA_SUCCESS)
		rc = capture_unsafe();
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_MEM, ctx_home(cur), p * height);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	*dptr = o->value;
	*pitch = p;
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
	/* a destroyed context current on this thread: 709, nothing freed (the
	 * real driver refused cuctx's frees so, from threads in scopes over
	 * contexts that died) */
	if (current_is_dead())
		return leave(&c, CUDA_ERROR_CONTEXT_IS_DESTROYED);
	struct obj *o = find(K_MEM, dptr);
	/* a graph allocation a capture gave, outside its graph: measured 1 */
	if (o && o->so.graph_alloc)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!o && mem_containing(dptr, 0)) {
		misuse(&c, dptr, "mem not live: points inside an allocation, not at its start");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	/* documented: undefined behaviour (the importer's mapping is not memory of its own) */
	if (!o && ipc_mapping_at(dptr)) {
		misuse(&c, dptr, "an IPC mapping, not an allocation: close it with cuIpcCloseMemHandle");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	CUresult rc = need_live(&c, K_MEM, dptr, &o);
	if (rc)
		return leave(&c, rc);
	/* a module's global: measured 1, and it lives on */
	if (o->global)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if ((rc = capture_unsafe()))
		return leave(&c, rc);
	/* stream-ordered memory: 0 and given back, its pool's used figure left as it was (measured) */
	if (o->so.async) {
		c.a.handle2 = o->so.pool ? o->so.pool->value : 0;
		if ((rc = pool_plain_free(&c, o)))
			return leave(&c, rc);
	}
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* Device ranges are checked against live allocations: the real driver's stale pointer hits another owner's memory.
 * A module's global is reached only while its module's context is current (measured: 1 from another). */
static CUresult device_range(const struct call *c, CUdeviceptr p, size_t n, unsigned char **where)
{
	struct obj *o = mem_containing(p, n), *cur;
	if (!o) {               /* an IPC mapping's bytes are its exporter's (ipc.c) */
		CUresult rc = ipc_range(c, p, n, where);
		if (rc != CUDA_ERROR_NOT_FOUND)
			return rc;
	}
	if (o && o->global && (need_current(&cur) != CUDA_SUCCESS || ctx_home(cur) != o->owner->owner))
		return CUDA_ERROR_INVALID_VALUE;
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

/* A synchronous copy or memset: the legacy stream of the current context
 * carries it, which may not depend on a capturing blocking stream. */
static CUresult sync_legacy(void)
{
	struct obj *cur;
	return need_current(&cur) == CUDA_SUCCESS ? capture_legacy(cur) : CUDA_SUCCESS;
}

/* After an operation's checks, before it is done: CUDA_SUCCESS with *run to
 * do it now; else what to answer (an error, or success when a capture took
 * it as a node, which is not done). */
static CUresult queue(struct call *c, bool async, CUstream s, struct obj *ctx, bool *run)
{
	CUresult rc = async ? capture_work(c, s, ctx, W_NODE) : sync_legacy();
	*run = rc == CUDA_SUCCESS && !c->captured;
	return rc;
}

CUresult sim_cuMemsetD8(CUdeviceptr dptr, unsigned char uc, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemsetD8, dptr, ARGS(.flags = uc, .arg = (long long)n)))
		return leave(&c, c.rc);
	unsigned char *dst;
	CUresult rc = device_range(&c, dptr, n, &dst);
	if (rc == CUDA_SUCCESS)
		rc = sync_legacy();
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
	if (rc == CUDA_SUCCESS)
		rc = sync_legacy();
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
	if (rc == CUDA_SUCCESS)
		rc = sync_legacy();
	if (rc)
		return leave(&c, rc);
	if (n)
		memcpy(dst, s, n);
	return leave(&c, CUDA_SUCCESS);
}

/* An asynchronous call's stream: live (or a default stream with a live current
 * context), else the stream's error and a misuse. The work is done at once,
 * unless a capture takes it (queue). */
static CUresult need_stream(const struct call *c, CUstream s, struct obj **ctx)
{
	return stream_context(c, s, ctx);
}

#define NO_STREAM ((CUstream)(uintptr_t)~(uintptr_t)0)

/* memset of n elements of `width` bytes, each `value`; the pointer aligned to the width. */
static CUresult memset_n(enum fn fn, CUdeviceptr dptr, unsigned int value, unsigned width, size_t n, CUstream s)
{
	struct call c;
	bool async = s != NO_STREAM;
	if (enter_with(&c, fn, dptr, ARGS(.flags = value, .arg = (long long)n, .stream = async ? H(s) : 0)))
		return leave(&c, c.rc);
	CUresult rc;
	struct obj *ctx = NULL;
	bool run;
	if (async && (rc = need_stream(&c, s, &ctx)))
		return leave(&c, rc);
	if (dptr % width)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (n > SIZE_MAX / width)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *dst;
	rc = device_range(&c, dptr, n * width, &dst);
	if (rc || (rc = queue(&c, async, s, ctx, &run)) || !run)
		return leave(&c, rc);
	if (width == 1) {
		memset(dst, (int)(value & 0xffu), n);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (width == 2) {
				uint16_t v = (uint16_t)value;
				memcpy(dst + 2 * i, &v, 2);
			} else {
				uint32_t v = value;
				memcpy(dst + 4 * i, &v, 4);
			}
		}
	}
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemsetD16(CUdeviceptr dptr, unsigned short us, size_t n)
{
	return memset_n(F_cuMemsetD16, dptr, us, 2, n, NO_STREAM);
}

CUresult sim_cuMemsetD32(CUdeviceptr dptr, unsigned int ui, size_t n)
{
	return memset_n(F_cuMemsetD32, dptr, ui, 4, n, NO_STREAM);
}

CUresult sim_cuMemsetD8Async(CUdeviceptr dptr, unsigned char uc, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD8Async, dptr, uc, 1, n, s);
}

CUresult sim_cuMemsetD16Async(CUdeviceptr dptr, unsigned short us, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD16Async, dptr, us, 2, n, s);
}

CUresult sim_cuMemsetD32Async(CUdeviceptr dptr, unsigned int ui, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD32Async, dptr, ui, 4, n, s);
}

/* The copies between host and device, in either direction, on a stream or not. */
static CUresult copy_hd(enum fn fn, bool to_device, CUdeviceptr dev, void *host, size_t n, CUstream s)
{
	struct call c;
	bool async = s != NO_STREAM;
	if (enter_with(&c, fn, dev, ARGS(.arg = (long long)n, .handle2 = H(host), .stream = async ? H(s) : 0)))
		return leave(&c, c.rc);
	CUresult rc;
	struct obj *ctx = NULL;
	bool run;
	if (async && (rc = need_stream(&c, s, &ctx)))
		return leave(&c, rc);
	if (!host && n)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *d;
	rc = device_range(&c, dev, n, &d);
	if (rc || (rc = queue(&c, async, s, ctx, &run)) || !run)
		return leave(&c, rc);
	if (n)
		memcpy(to_device ? (void *)d : host, to_device ? (const void *)host : d, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	return copy_hd(F_cuMemcpyHtoDAsync, true, dst, (void *)(uintptr_t)src, n, s);
}

CUresult sim_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_hd(F_cuMemcpyDtoHAsync, false, src, dst, n, s);
}

static CUresult copy_dd(enum fn fn, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	struct call c;
	bool async = s != NO_STREAM;
	if (enter_with(&c, fn, dst, ARGS(.arg = (long long)n, .handle2 = src, .stream = async ? H(s) : 0)))
		return leave(&c, c.rc);
	CUresult rc;
	struct obj *ctx = NULL;
	bool run;
	if (async && (rc = need_stream(&c, s, &ctx)))
		return leave(&c, rc);
	unsigned char *d, *from;
	if ((rc = device_range(&c, dst, n, &d)) || (rc = device_range(&c, src, n, &from)) ||
	    (rc = queue(&c, async, s, ctx, &run)) || !run)
		return leave(&c, rc);
	if (n)
		memmove(d, from, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_dd(F_cuMemcpyDtoD, dst, src, n, NO_STREAM);
}

CUresult sim_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_dd(F_cuMemcpyDtoDAsync, dst, src, n, s);
}

/* One side of a 2D copy: where its first byte is, checked over the whole extent.
 * Host memory cannot be checked; arrays are not implemented. */
static CUresult side_2d(const struct call *c, CUmemorytype type, const void *host, CUdeviceptr dev,
			size_t x, size_t y, size_t pitch, size_t width, size_t height, const char *which,
			unsigned char **out)
{
	size_t extent = (height - 1) * pitch + width, start = y * pitch + x;
	if (type == CU_MEMORYTYPE_UNIFIED) {     /* a device pointer if it lies where device memory is handed out */
		bool device = mem_containing(dev, 0) || (dev >= SIM_DEVICE_BASE && dev < S.next_device_addr);
		type = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		host = (const void *)(uintptr_t)dev;
	}
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		if (!host)
			return CUDA_ERROR_INVALID_VALUE;
		*out = (unsigned char *)(uintptr_t)host + start;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		return device_range(c, dev + start, extent, out);
	case CU_MEMORYTYPE_ARRAY:
		misuse(c, 0, "%s is a CUDA array: arrays are not implemented by the cuctx test driver", which);
		return CUDA_ERROR_NOT_SUPPORTED;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult copy_2d(enum fn fn, const CUDA_MEMCPY2D *p, CUstream s)
{
	struct call c;
	bool async = s != NO_STREAM;
	struct args a = { .stream = async ? H(s) : 0 };
	if (p) {
		a.arg = (long long)(p->WidthInBytes * p->Height);
		a.handle2 = p->srcMemoryType == CU_MEMORYTYPE_HOST ? H(p->srcHost) : p->srcDevice;
	}
	uint64_t dst = !p ? 0 : p->dstMemoryType == CU_MEMORYTYPE_HOST ? H(p->dstHost) : p->dstDevice;
	if (enter_with(&c, fn, dst, a))
		return leave(&c, c.rc);
	CUresult rc;
	struct obj *ctx = NULL;
	bool run;
	if (async && (rc = need_stream(&c, s, &ctx)))
		return leave(&c, rc);
	if (!p)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!p->WidthInBytes || !p->Height)
		return leave(&c, CUDA_SUCCESS);
	if (p->Height > 1 && (p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *from, *to;
	if ((rc = side_2d(&c, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcPitch,
			  p->WidthInBytes, p->Height, "the source", &from)) ||
	    (rc = side_2d(&c, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstPitch,
			  p->WidthInBytes, p->Height, "the destination", &to)) ||
	    (rc = queue(&c, async, s, ctx, &run)) || !run)
		return leave(&c, rc);
	for (size_t row = 0; row < p->Height; row++)
		memmove(to + row * p->dstPitch, from + row * p->srcPitch, p->WidthInBytes);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpy2D(const CUDA_MEMCPY2D *p)
{
	return copy_2d(F_cuMemcpy2D, p, NO_STREAM);
}

CUresult sim_cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream s)
{
	return copy_2d(F_cuMemcpy2DAsync, p, s);
}

/* Free memory is the device's total less the address span of its live allocations. */
CUresult sim_cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	struct call c;
	if (enter(&c, F_cuMemGetInfo, 0))
		return leave(&c, c.rc);
	if (!free_bytes || !total)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	size_t used = 0;
	for (struct obj *o = S.mem_list; o; o = o->mem_next)
		if ((o->owner && (o->global ? o->owner->owner : o->owner)->device == cur->device) ||
		    (o->so.async && o->device == cur->device))
			used += o->span;
	*total = SIM_DEVICE_TOTAL_MEM;
	*free_bytes = used < SIM_DEVICE_TOTAL_MEM ? SIM_DEVICE_TOTAL_MEM - used : 0;
	c.a.arg = (long long)*free_bytes;
	return leave(&c, CUDA_SUCCESS);
}

/* The per-thread default stream forms: a NULL stream means the per-thread one. */
#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult sim_cuMemsetD8Async_ptsz(CUdeviceptr dptr, unsigned char uc, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD8Async, dptr, uc, 1, n, PTSZ(s));
}

CUresult sim_cuMemsetD16Async_ptsz(CUdeviceptr dptr, unsigned short us, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD16Async, dptr, us, 2, n, PTSZ(s));
}

CUresult sim_cuMemsetD32Async_ptsz(CUdeviceptr dptr, unsigned int ui, size_t n, CUstream s)
{
	return memset_n(F_cuMemsetD32Async, dptr, ui, 4, n, PTSZ(s));
}

CUresult sim_cuMemcpyHtoDAsync_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	return copy_hd(F_cuMemcpyHtoDAsync, true, dst, (void *)(uintptr_t)src, n, PTSZ(s));
}

CUresult sim_cuMemcpyDtoHAsync_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_hd(F_cuMemcpyDtoHAsync, false, src, dst, n, PTSZ(s));
}

CUresult sim_cuMemcpyDtoDAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy_dd(F_cuMemcpyDtoDAsync, dst, src, n, PTSZ(s));
}

CUresult sim_cuMemcpy2DAsync_ptsz(const CUDA_MEMCPY2D *p, CUstream s)
{
	return copy_2d(F_cuMemcpy2DAsync, p, PTSZ(s));
}

CUresult sim_cuMemsetD8_ptds(CUdeviceptr dptr, unsigned char uc, size_t n)
{
	return sim_cuMemsetD8(dptr, uc, n);
}

CUresult sim_cuMemsetD16_ptds(CUdeviceptr dptr, unsigned short us, size_t n)
{
	return sim_cuMemsetD16(dptr, us, n);
}

CUresult sim_cuMemsetD32_ptds(CUdeviceptr dptr, unsigned int ui, size_t n)
{
	return sim_cuMemsetD32(dptr, ui, n);
}

CUresult sim_cuMemcpyHtoD_ptds(CUdeviceptr dst, const void *src, size_t n)
{
	return sim_cuMemcpyHtoD(dst, src, n);
}

CUresult sim_cuMemcpyDtoH_ptds(void *dst, CUdeviceptr src, size_t n)
{
	return sim_cuMemcpyDtoH(dst, src, n);
}

CUresult sim_cuMemcpyDtoD_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return sim_cuMemcpyDtoD(dst, src, n);
}

CUresult sim_cuMemcpy2D_ptds(const CUDA_MEMCPY2D *p)
{
	return sim_cuMemcpy2D(p);
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
	if (rc == CUDA_SUCCESS)
		rc = capture_unsafe();
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_HOST, ctx_home(cur), size);
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
	if (rc == CUDA_SUCCESS)
		rc = capture_unsafe();
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* --- graphs ------------------------------------------------------------------ */

/* cuPointerGetAttribute, for the attributes cuctx asks: the device an
 * allocation lives on, its memory type, and the pool it came from. A live
 * allocation answers whether or not its context lives (stream-ordered
 * memory outlives it); a pointer in no live allocation is 1, as the driver
 * documents for memory it does not know. Other attributes are not
 * modelled: 801. No context need be current. */
CUresult sim_cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr dptr)
{
	struct call c;
	if (enter_with(&c, F_cuPointerGetAttribute, dptr, ARGS(.arg = (long long)attr)))
		return leave(&c, c.rc);
	if (!data)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o = mem_containing(dptr, 1);
	if (!o || o->kind != K_MEM || o->so.graph_alloc)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = o->device;
		return leave(&c, CUDA_SUCCESS);
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = CU_MEMORYTYPE_DEVICE;
		return leave(&c, CUDA_SUCCESS);
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = o->so.async && o->so.pool ? (CUmemoryPool)(uintptr_t)o->so.pool->value : NULL;
		return leave(&c, CUDA_SUCCESS);
	default:
		return leave(&c, CUDA_ERROR_NOT_SUPPORTED);
	}
}
