/* SPDX-License-Identifier: MIT */
/* module.c - cuctx_module: what is particular to modules. */
#include "config.h"

#include "claim.h"
#include "context.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "jit.h"
#include "registry.h"
#include "tether.h"

#include <stdio.h>
#include <stdlib.h>

CUCTX__KIND_FN CUresult destroy(uint64_t raw) { return DRV(cuModuleUnload)((CUmodule)(uintptr_t)raw); }
const struct cuctx_child_kind cuctx__module_kind = {0, destroy, NULL};

struct module_args { const char *path; const void *image; };

/* The JIT log of a file that failed to load as PTX: cuModuleLoad gives
 * none, so the file's bytes are loaded once more through
 * cuModuleLoadDataEx, which does (a failure path only). */
static void log_of_file(const char *path, struct cuctx_jit_log *log)
{
    FILE *f;
    char *image = NULL;
    long n;
    if (!(f = fopen(path, "rb")))
        return;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0
        && (image = malloc((size_t)n + 1)) != NULL && fread(image, 1, (size_t)n, f) == (size_t)n) {
        CUmodule m = NULL;
        image[n] = '\0';
        if (DRV(cuModuleLoadDataEx)(&m, image, 2, log->opt, log->val) == CUDA_SUCCESS)
            DRV(cuModuleUnload)(m);    /* (loads now: nothing to say) */
    }
    free(image);
    fclose(f);
}

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct module_args *a = arg;
    struct cuctx_jit_log log;
    CUmodule m = NULL;
    CUresult rc;
    cuctx__jit_log_init(&log);
    if (a->path) {
        rc = DRV(cuModuleLoad)(&m, a->path);
        if (rc == CUDA_ERROR_INVALID_PTX)
            log_of_file(a->path, &log);
    } else {
        rc = DRV(cuModuleLoadDataEx)(&m, a->image, 2, log.opt, log.val);
    }
    if (rc != CUDA_SUCCESS) {
        const char *text = cuctx__jit_log_text(&log);
        if (a->path)
            return cuctx__fail(rc, "cuctx_module_load: cuModuleLoad(\"%s\") failed: %s%s%s", a->path,
                               cuctx_result_name(rc), *text ? "; the JIT log: " : "", text);
        return cuctx__fail(rc, "cuctx_module_load_data: cuModuleLoadDataEx failed: %s%s%s", cuctx_result_name(rc),
                           *text ? "; the JIT log: " : "", text);
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
    if (out)
        *out = NULL;    /* on every failure */
    if (!name || !out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: name or out is NULL", fn);
    CUresult rc = cuctx__child_use(mod.id, KIND_MODULE, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuModuleGetFunction)(out, (CUmodule)(uintptr_t)u.raw, name);
    cuctx__child_done(&u);
    return rc == CUDA_SUCCESS ? rc : cuctx__fail(rc, "%s: cuModuleGetFunction(\"%s\") failed: %s", fn, name, cuctx_result_name(rc));
}

CUCTX_API CUresult cuctx_module_global(cuctx_module mod, const char *name, CUdeviceptr *ptr, size_t *bytes)
{
    static const char fn[] = "cuctx_module_global";
    struct cuctx_use u;
    CUdeviceptr p = 0;
    size_t n = 0;
    if (ptr)
        *ptr = 0;
    if (bytes)
        *bytes = 0;
    if (!name)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: name is NULL", fn);
    CUresult rc = cuctx__child_use(mod.id, KIND_MODULE, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = CUDA_ERROR_NOT_SUPPORTED;
    if (DRV(cuModuleGetGlobal))
        CUCTX__UNWOUND_LETS_GO(NULL)
            rc = DRV(cuModuleGetGlobal)(&p, &n, (CUmodule)(uintptr_t)u.raw, name);
    cuctx__child_done(&u);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: cuModuleGetGlobal(\"%s\") failed: %s", fn, name, cuctx_result_name(rc));
    if (ptr)
        *ptr = p;
    if (bytes)
        *bytes = n;
    return CUDA_SUCCESS;
}

CUCTX_API CUmodule cuctx_module_raw(cuctx_module mod)
{
    return (CUmodule)(uintptr_t)cuctx__child_value(mod.id, KIND_MODULE, "cuctx_module_raw", FIELD_RAW);
}
