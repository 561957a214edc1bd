/* SPDX-License-Identifier: MIT */
/* ipc.c - CUDA IPC: device memory and events shared with another process.
 * The handles themselves (cuIpcGetMemHandle, cuIpcGetEventHandle) are
 * values, asked of a live cuctx_mem or cuctx_event in its context; what
 * an open makes is a child of the importing context like any other:
 *   - memory opened from a handle is a cuctx_mem of its own kind
 *     (KIND_MEM_IPC), closed by cuIpcCloseMemHandle, not freed; its size is
 *     the driver's (cuMemGetAddressRange) - the mapping is of the whole
 *     exported allocation;
 *   - an event opened from a handle is a plain cuctx_event (its destroy is
 *     cuEventDestroy, as the documentation says).
 * Both are tethered to the importing context: their destroys are skipped
 * once it has ended, which took them with it. */
#include "config.h"

#include "context.h"
#include "cuctx.h"
#include "current.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "tether.h"

#include <string.h>

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuIpcCloseMemHandle)((CUdeviceptr)raw); }
const struct cuctx_child_kind cuctx__mem_ipc_kind = {1, destroy, NULL};

static CUresult need_ipc(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "CUDA IPC", "CUDA 11.0 or newer needed", CUCTX__DRV_AT(cuIpcGetMemHandle),
                               CUCTX__DRV_AT(cuIpcOpenMemHandle), CUCTX__DRV_AT(cuIpcCloseMemHandle),
                               CUCTX__DRV_AT(cuMemGetAddressRange), CUCTX__DRV_AT(cuIpcGetEventHandle),
                               CUCTX__DRV_AT(cuIpcOpenEventHandle));
}

/* A handle asked of the live child id of kind (pinned, its context held
 * and made current): get(out, raw). */
static CUresult get_handle(uint64_t id, enum cuctx_kind kind, const char *fn, const char *call,
                           CUresult (*get)(void *out, uint64_t raw), void *out)
{
    struct cuctx_use u;
    struct cuctx_switch sw;
    CUresult rc = cuctx__child_use(id, kind, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    int switched = 0;
    CUCTX__UNWOUND_LETS_GO(&sw)
        if ((rc = cuctx__switch_to(u.entry.raw, fn, &sw)) == CUDA_SUCCESS) {
            switched = 1;
            rc = get(out, u.raw);
            cuctx__switch_back(&sw, fn);
        }
    cuctx__child_done(&u);
    if (switched && rc != CUDA_SUCCESS)
        cuctx__fail(rc, "%s: %s failed: %s", fn, call, cuctx_result_name(rc));
    return rc;
}

/* The start of both gets: *out zeroed (what a failure leaves), the
 * library and the driver's IPC calls checked. */
static CUresult get_begin(void *out, size_t size, const char *fn)
{
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: out is NULL", fn);
    memset(out, 0, size);
    CUCTX_INIT_OR_RETURN(fn);
    return need_ipc(fn);
}

/* ---- memory ----------------------------------------------------------------- */

static CUresult get_mem(void *out, uint64_t raw) { return DRV(cuIpcGetMemHandle)(out, (CUdeviceptr)raw); }

CUCTX_API CUresult cuctx_ipc_mem_get(cuctx_mem m, CUipcMemHandle *out)
{
    static const char fn[] = "cuctx_ipc_mem_get";
    CUresult rc = get_begin(out, sizeof *out, fn);
    if (rc != CUDA_SUCCESS)
        return rc;
    switch (cuctx__id_kind(m.id)) {
    case KIND_MEM_ASYNC:
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: handle %#llx is stream-ordered memory, which cuIpcGetMemHandle does not export "
                           "(a pool made for export does: cuMemPoolExportPointer)", fn, (unsigned long long)m.id);
    case KIND_MEM_IPC:
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: handle %#llx is memory opened from another process: hand on the handle it was "
                           "opened from", fn, (unsigned long long)m.id);
    default:
        break;
    }
    if ((rc = get_handle(m.id, KIND_MEM, fn, "cuIpcGetMemHandle", get_mem, out)) != CUDA_SUCCESS)
        memset(out, 0, sizeof *out);
    return rc;
}

struct open_mem_args {
    CUipcMemHandle h;
    unsigned flags;
    const char *fn;
};

static CUresult open_mem(void *arg, uint64_t *raw, size_t *size)
{
    const struct open_mem_args *a = arg;
    CUdeviceptr p = 0;
    size_t bytes = 0;
    CUresult rc = DRV(cuIpcOpenMemHandle)(&p, a->h, a->flags);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuIpcOpenMemHandle(flags %#x) failed: %s%s", a->fn, a->flags,
                           cuctx_result_name(rc),
                           rc == CUDA_ERROR_INVALID_CONTEXT
                               ? " (the driver opens a handle only in another process than the one that made it)"
                               : "");
    if ((rc = DRV(cuMemGetAddressRange)(NULL, &bytes, p)) != CUDA_SUCCESS) {
        CUresult closed = DRV(cuIpcCloseMemHandle)(p);    /* not kept half made */
        return cuctx__fail(rc, "%s: cuMemGetAddressRange of the mapping failed: %s%s", a->fn, cuctx_result_name(rc),
                           closed == CUDA_SUCCESS ? "; it was closed" : "; its close failed too: it is left mapped");
    }
    *raw = (uint64_t)p;
    *size = bytes;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_ipc_mem_open_at(cuctx_mem *out, cuctx_ctx ctx, CUipcMemHandle h, unsigned flags,
                                         const char *file, int line, const char *func)
{
    static const char fn[] = "cuctx_ipc_mem_open";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct open_mem_args a = {h, flags, fn};
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(&out->id, KIND_MEM_IPC, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = need_ipc(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(&out->id, KIND_MEM_IPC, ctx, fn, open_mem, &a, &site);
}

CUCTX_API CUresult (cuctx_ipc_mem_open)(cuctx_mem *out, cuctx_ctx ctx, CUipcMemHandle h, unsigned flags)
{
    return cuctx_ipc_mem_open_at(out, ctx, h, flags, NULL, 0, NULL);
}

/* ---- events ----------------------------------------------------------------- */

static CUresult get_event(void *out, uint64_t raw)
{
    return DRV(cuIpcGetEventHandle)(out, (CUevent)(uintptr_t)raw);
}

CUCTX_API CUresult cuctx_ipc_event_get(cuctx_event ev, CUipcEventHandle *out)
{
    static const char fn[] = "cuctx_ipc_event_get";
    CUresult rc = get_begin(out, sizeof *out, fn);
    if (rc != CUDA_SUCCESS)
        return rc;
    if ((rc = get_handle(ev.id, KIND_EVENT, fn, "cuIpcGetEventHandle", get_event, out)) != CUDA_SUCCESS) {
        memset(out, 0, sizeof *out);
        if (rc == CUDA_ERROR_INVALID_VALUE)
            cuctx__fail(rc, "%s: cuIpcGetEventHandle refused the event: %s (it must be made with "
                        "CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)", fn, cuctx_result_name(rc));
    }
    return rc;
}

static CUresult open_event(void *arg, uint64_t *raw, size_t *size)
{
    CUevent ev = NULL;
    CUresult rc = DRV(cuIpcOpenEventHandle)(&ev, *(const CUipcEventHandle *)arg);
    *raw = (uint64_t)(uintptr_t)ev;
    *size = 0;
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_ipc_event_open: cuIpcOpenEventHandle failed: %s%s", cuctx_result_name(rc),
                           rc == CUDA_ERROR_INVALID_CONTEXT
                               ? " (the driver opens a handle only in another process than the one that made it)"
                               : "");
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_ipc_event_open_at(cuctx_event *out, cuctx_ctx ctx, CUipcEventHandle h, const char *file,
                                           int line, const char *func)
{
    static const char fn[] = "cuctx_ipc_event_open";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(&out->id, KIND_EVENT, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = need_ipc(fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(&out->id, KIND_EVENT, ctx, fn, open_event, &h, &site);
}

CUCTX_API CUresult (cuctx_ipc_event_open)(cuctx_event *out, cuctx_ctx ctx, CUipcEventHandle h)
{
    return cuctx_ipc_event_open_at(out, ctx, h, NULL, 0, NULL);
}
