/* SPDX-License-Identifier: MIT */
/* peer.c - cuctx_peer: peer access between two contexts as an object, a
 * pair of the tether (tether.h, "pairs"): tethered to both contexts, since
 * the access is state of the pair and ends with either (documented). What
 * is particular to it: the enable with `from` current, the disable naming
 * `to`, and access someone else enabled, which is borrowed - the handle
 * tracks it (site.unowned, as an adoption that does not own) and its
 * destroy never disables it. */
#include "config.h"

#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "registry.h"
#include "tether.h"

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuCtxDisablePeerAccess)((CUcontext)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__peer_kind = {1, destroy, NULL};

struct enable_args {
    CUcontext to;
    CUdevice from_dev, to_dev;
    struct cuctx_site *site;    /* unowned set when the access was there already */
    const char *fn;
};

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    struct enable_args *a = arg;
    CUresult rc = DRV(cuCtxEnablePeerAccess)(a->to, 0);
    *raw = (uint64_t)(uintptr_t)a->to;
    *size = 0;
    if (rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
        a->site->unowned = 1;   /* someone else's: tracked, never disabled by cuctx */
        return CUDA_SUCCESS;
    }
    if (rc == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
        return cuctx__fail(rc, "%s: device %d cannot access the memory of device %d (%s): %s", a->fn, (int)a->from_dev,
                           (int)a->to_dev,
                           a->from_dev == a->to_dev ? "two contexts of one device have no peer access"
                                                    : "cuDeviceCanAccessPeer says no peer path",
                           cuctx_result_name(rc));
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuCtxEnablePeerAccess from device %d to device %d failed: %s", a->fn,
                           (int)a->from_dev, (int)a->to_dev, cuctx_result_name(rc));
    return CUDA_SUCCESS;
}

static CUresult need_peer(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "peer access", "CUDA 4.0 or newer needed", CUCTX__DRV_AT(cuCtxEnablePeerAccess),
                               CUCTX__DRV_AT(cuCtxDisablePeerAccess));
}

CUCTX_API CUresult cuctx_peer_enable_at(cuctx_peer *out, cuctx_ctx from, cuctx_ctx to, const char *file, int line,
                                        const char *func)
{
    static const char fn[] = "cuctx_peer_enable";
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct cuctx_held a, b;
    CUresult rc;
    if (!out)
        return cuctx__child_null(fn);
    if ((rc = cuctx__claim(&out->id, KIND_PEER, fn)) != CUDA_SUCCESS)
        return rc;
    CUCTX_INIT_OR_RETURN(fn);
    if ((rc = need_peer(fn)) != CUDA_SUCCESS)
        return rc;
    if (from.id != 0 && from.id == to.id)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: from and to are the same context handle (%#llx)", fn,
                           (unsigned long long)from.id);
    if ((rc = cuctx__ctx_hold2(from, to, fn, &a, &b)) != CUDA_SUCCESS)
        return rc;
    if (a.id == b.id) {     /* two handles of one context, or {0} naming it */
        cuctx__entry_release(&a);
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: from and to are the same context (%p)", fn, (void *)a.raw);
    }
    struct enable_args args = {b.raw, a.slot->u.entry.dev, b.slot->u.entry.dev, &site, fn};
    return cuctx__child_make(&out->id, KIND_PEER, fn, make, &args, &site, &a, &a, &b);
}

CUCTX_API CUresult (cuctx_peer_enable)(cuctx_peer *out, cuctx_ctx from, cuctx_ctx to)
{
    return cuctx_peer_enable_at(out, from, to, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_peer_destroy(cuctx_peer *p)
{
    return cuctx__child_destroy(p ? &p->id : NULL, KIND_PEER, "cuctx_peer_destroy", &cuctx__peer_kind);
}

CUCTX_API CUresult cuctx_peer_owned(cuctx_peer p, int *owned)
{
    static const char fn[] = "cuctx_peer_owned";
    struct cuctx_use u;
    struct cuctx_held second;
    if (!owned)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: owned is NULL", fn);
    CUresult rc = cuctx__pair_use(p.id, KIND_PEER, fn, &u, &second);
    if (rc != CUDA_SUCCESS)
        return rc;
    *owned = !u.obj->u.child.site.unowned;
    cuctx__pair_done(&u, &second);
    return CUDA_SUCCESS;
}
