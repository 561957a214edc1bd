/* SPDX-License-Identifier: MIT */
/* destroy.c - cuctx_destroy and cuctx_cleanup: any handle, by its kind.
 * The one place that knows every kind's file: the table of kinds. */
#include "config.h"

#include "cuctx.h"
#include "error.h"
#include "ids.h"
#include "tether.h"

#include <stdio.h>

#define CUCTX__KIND_ENTRY(K, name, field, display, tethered) [KIND_##K] = &cuctx__##name##_kind,
static const struct cuctx_child_kind *const child_kinds[KIND_COUNT] = {CUCTX_CHILD_KINDS(CUCTX__KIND_ENTRY)};
#undef CUCTX__KIND_ENTRY

CUCTX_API CUresult (cuctx_destroy)(void *handle)
{
    if (!handle)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_destroy: handle is NULL");
    uint64_t *id = (uint64_t *)handle;     /* every handle is a struct of one uint64_t */
    if (*id == 0)
        return CUDA_SUCCESS;
    enum cuctx_kind kind = cuctx__id_kind(*id);
    if (kind == KIND_CTX_HANDLE)
        return cuctx_ctx_destroy((cuctx_ctx *)handle);
    if (kind < KIND_COUNT && child_kinds[kind])
        return cuctx__child_destroy(id, kind, "cuctx_destroy", child_kinds[kind]);
    uint64_t bad = *id;
    *id = 0;
    return cuctx__fail(CUDA_ERROR_INVALID_HANDLE, "cuctx_destroy: %#llx is not a cuctx handle", (unsigned long long)bad);
}

CUCTX_API void (cuctx_cleanup)(void *handle)
{
    if ((cuctx_destroy)(handle) != CUDA_SUCCESS) {
        char why[512];
        snprintf(why, sizeof why, "%s", cuctx_last_error_message());
        cuctx__report(cuctx_last_error(), "automatic cleanup: %s", why);
    }
}
