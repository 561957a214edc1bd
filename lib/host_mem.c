/* SPDX-License-Identifier: MIT */
/* host_mem.c - cuctx_host_mem (page-locked host memory): what is particular to it. */
#include "config.h"

#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuMemFreeHost)((void *)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__host_mem_kind = {1, destroy, NULL};

struct host_args { size_t bytes; unsigned flags; };

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct host_args *a = arg;
    void *p = NULL;
    CUresult rc = DRV(cuMemHostAlloc)(&p, a->bytes, a->flags);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_host_mem_alloc: cuMemHostAlloc(%zu bytes, flags %#x) failed: %s",
                           a->bytes, a->flags, cuctx_result_name(rc));
    *raw = (uint64_t)(uintptr_t)p;
    *size = a->bytes;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_host_mem_alloc_at(cuctx_host_mem *out, cuctx_ctx ctx, size_t bytes, unsigned flags,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct host_args a = {bytes, flags};
    return cuctx__child_create(out ? &out->id : NULL, KIND_HOST_MEM, ctx, "cuctx_host_mem_alloc", make, &a, &site);
}

CUCTX_API CUresult (cuctx_host_mem_alloc)(cuctx_host_mem *out, cuctx_ctx ctx, size_t bytes, unsigned flags)
{
    return cuctx_host_mem_alloc_at(out, ctx, bytes, flags, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_host_mem_ctx(cuctx_host_mem h, cuctx_ctx *out)
{
    return cuctx__child_ctx(h.id, KIND_HOST_MEM, "cuctx_host_mem_ctx", out);
}

CUCTX_API CUresult cuctx_host_mem_destroy(cuctx_host_mem *h)
{
    return cuctx__child_destroy(h ? &h->id : NULL, KIND_HOST_MEM, "cuctx_host_mem_destroy", &cuctx__host_mem_kind);
}

CUCTX_API size_t cuctx_host_mem_size(cuctx_host_mem h)
{
    return (size_t)cuctx__child_value(h.id, KIND_HOST_MEM, "cuctx_host_mem_size", FIELD_SIZE);
}

CUCTX_API void *cuctx_host_mem_ptr(cuctx_host_mem h)
{
    return (void *)(uintptr_t)cuctx__child_value(h.id, KIND_HOST_MEM, "cuctx_host_mem_ptr", FIELD_RAW);
}
