/* SPDX-License-Identifier: MIT */
/* module.c - cuctx_module: what is particular to modules. */
#include "config.h"

#include "claim.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

static CUresult destroy(uint64_t raw) { return DRV(cuModuleUnload)((CUmodule)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__module_kind = {0, destroy};

struct module_args { const char *path; const void *image; };

static CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct module_args *a = arg;
    CUmodule m = NULL;
    CUresult rc;
    if (a->path) {
        rc = DRV(cuModuleLoad)(&m, a->path);
        if (rc != CUDA_SUCCESS)
            return cuctx__fail(rc, "cuctx_module_load: cuModuleLoad(\"%s\") failed: %s", a->path, cuctx_result_name(rc));
    } else {
        rc = DRV(cuModuleLoadData)(&m, a->image);
        if (rc != CUDA_SUCCESS)
            return cuctx__fail(rc, "cuctx_module_load_data: cuModuleLoadData failed: %s", cuctx_result_name(rc));
    }
    *raw = (uint64_t)(uintptr_t)m;
    *size = 0;
    return CUDA_SUCCESS;
}

CUCTX_API CUresult cuctx_module_load_at(cuctx_module *out, cuctx_ctx ctx, const char *path,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct module_args a = {path, NULL};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_MODULE, "cuctx_module_load")) != CUDA_SUCCESS)
        return rc;
    if (!path)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_module_load: path is NULL");
    return cuctx__child_create(out ? &out->id : NULL, KIND_MODULE, ctx, "cuctx_module_load", make, &a, &site);
}

CUCTX_API CUresult (cuctx_module_load)(cuctx_module *out, cuctx_ctx ctx, const char *path)
{
    return cuctx_module_load_at(out, ctx, path, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_module_load_data_at(cuctx_module *out, cuctx_ctx ctx, const void *image,
                                   const char *file, int line, const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct module_args a = {NULL, image};
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_MODULE, "cuctx_module_load_data")) != CUDA_SUCCESS)
        return rc;
    if (!image)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_module_load_data: image is NULL");
    return cuctx__child_create(out ? &out->id : NULL, KIND_MODULE, ctx, "cuctx_module_load_data", make, &a, &site);
}

CUCTX_API CUresult (cuctx_module_load_data)(cuctx_module *out, cuctx_ctx ctx, const void *image)
{
    return cuctx_module_load_data_at(out, ctx, image, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_module_ctx(cuctx_module mod, cuctx_ctx *out)
{
    return cuctx__child_ctx(mod.id, KIND_MODULE, "cuctx_module_ctx", out);
}

CUCTX_API CUresult cuctx_module_destroy(cuctx_module *mod)
{
    return cuctx__child_destroy(mod ? &mod->id : NULL, KIND_MODULE, "cuctx_module_destroy", &cuctx__module_kind);
}

CUCTX_API CUresult cuctx_module_function(cuctx_module mod, const char *name, CUfunction *out)
{
    static const char fn[] = "cuctx_module_function";
    struct cuctx_use u;
    if (!name || !out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: name or out is NULL", fn);
    *out = NULL;
    CUresult rc = cuctx__child_use(mod.id, KIND_MODULE, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuModuleGetFunction)(out, (CUmodule)(uintptr_t)u.raw, name);
    cuctx__child_done(&u);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuModuleGetFunction(\"%s\") failed: %s", fn, name, cuctx_result_name(rc));
}

CUCTX_API CUmodule cuctx_module_raw(cuctx_module mod)
{
    return (CUmodule)(uintptr_t)cuctx__child_value(mod.id, KIND_MODULE, "cuctx_module_raw", FIELD_RAW);
}
