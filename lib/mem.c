/* SPDX-License-Identifier: MIT */
/* mem.c - cuctx_mem (device memory): what is particular to it. A stale
 * cuMemFree is the worst hazard the tether stops: after the address is
 * reused it frees another context's allocation and reports success. */
#include "config.h"

#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "mem_async.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuMemFree)((CUdeviceptr)raw); }
const struct cuctx_child_kind cuctx__mem_kind = {1, destroy, NULL};

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    size_t bytes = *(size_t *)arg;
    CUdeviceptr p = 0;
    CUresult rc = DRV(cuMemAlloc)(&p, bytes);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_mem_alloc: cuMemAlloc(%zu bytes) failed: %s", bytes, cuctx_result_name(rc));
    *raw = (uint64_t)p;
    *size = bytes;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_mem_alloc_at(cuctx_mem *out, cuctx_ctx ctx, size_t bytes,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return cuctx__child_create(out ? &out->id : NULL, KIND_MEM, ctx, "cuctx_mem_alloc", make, &bytes, &site);
}

CUCTX_API CUresult (cuctx_mem_alloc)(cuctx_mem *out, cuctx_ctx ctx, size_t bytes)
{
    return cuctx_mem_alloc_at(out, ctx, bytes, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_adopt_at(cuctx_mem *out, cuctx_ctx ctx, CUdeviceptr p, size_t bytes, int owned,
                                      const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    return cuctx__child_adopt(out ? &out->id : NULL, KIND_MEM, ctx, "cuctx_mem_adopt", (uint64_t)p, bytes, owned,
                              &site);
}

CUCTX_API CUresult (cuctx_mem_adopt)(cuctx_mem *out, cuctx_ctx ctx, CUdeviceptr p, size_t bytes, int owned)
{
    return cuctx_mem_adopt_at(out, ctx, p, bytes, owned, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_mem_ctx(cuctx_mem m, cuctx_ctx *out)
{
    static const char fn[] = "cuctx_mem_ctx";
    if (cuctx__id_kind(m.id) == KIND_MEM_ASYNC) {
        CUresult rc;
        if (out && (rc = cuctx__claim(&out->id, KIND_CTX_HANDLE, fn)) != CUDA_SUCCESS)
            return rc;
        CUCTX_INIT_OR_RETURN(fn);
        if (!cuctx__alive(m.id, KIND_MEM_ASYNC))
            return cuctx__child_bad_handle(m.id, KIND_MEM_ASYNC, fn);
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: stream-ordered memory belongs to its pool, not to a context (handle %#llx)", fn,
                           (unsigned long long)m.id);
    }
    if (cuctx__id_kind(m.id) == KIND_MEM_IPC)
        return cuctx__child_ctx(m.id, KIND_MEM_IPC, fn, out);
    return cuctx__child_ctx(m.id, KIND_MEM, fn, out);
}

/* Stream-ordered memory (mem_async.c) and memory opened from another
 * process (ipc.c) share the handle type: the kind is the id's, and each
 * path below is inline for its kind. The stream-ordered one is a tail call
 * from a function that saves no register: the others are a function of
 * their own. */
static const char destroy_fn[] = "cuctx_mem_destroy";
static __attribute__((noinline)) CUresult destroy_tethered(uint64_t *var, uint64_t id)
{
    if (id == 0)
        return CUDA_SUCCESS;
    *var = 0;   /* (as cuctx__child_destroy does first) */
    if (cuctx__id_kind(id) == KIND_MEM_IPC)
        return cuctx__child_destroy_id(id, KIND_MEM_IPC, destroy_fn, &cuctx__mem_ipc_kind);
    return cuctx__child_destroy_id(id, KIND_MEM, destroy_fn, &cuctx__mem_kind);
}

CUCTX_API CUresult cuctx_mem_destroy(cuctx_mem *m)
{
    if (!m)
        return cuctx__child_null(destroy_fn);
    uint64_t id = m->id;
    if (cuctx__id_kind(id) == KIND_MEM_ASYNC) {
        m->id = 0;
        return cuctx__mem_async_destroy(id, destroy_fn);
    }
    return destroy_tethered(&m->id, id);
}

CUCTX_API size_t cuctx_mem_size(cuctx_mem m)
{
    if (cuctx__id_kind(m.id) == KIND_MEM_ASYNC)
        return (size_t)cuctx__child_value(m.id, KIND_MEM_ASYNC, "cuctx_mem_size", FIELD_SIZE);
    if (cuctx__id_kind(m.id) == KIND_MEM_IPC)
        return (size_t)cuctx__child_value(m.id, KIND_MEM_IPC, "cuctx_mem_size", FIELD_SIZE);
    return (size_t)cuctx__child_value(m.id, KIND_MEM, "cuctx_mem_size", FIELD_SIZE);
}

CUCTX_API CUdeviceptr cuctx_mem_ptr(cuctx_mem m)
{
    if (cuctx__id_kind(m.id) == KIND_MEM_ASYNC)
        return (CUdeviceptr)cuctx__child_value(m.id, KIND_MEM_ASYNC, "cuctx_mem_ptr", FIELD_RAW);
    if (cuctx__id_kind(m.id) == KIND_MEM_IPC)
        return (CUdeviceptr)cuctx__child_value(m.id, KIND_MEM_IPC, "cuctx_mem_ptr", FIELD_RAW);
    return (CUdeviceptr)cuctx__child_value(m.id, KIND_MEM, "cuctx_mem_ptr", FIELD_RAW);
}
