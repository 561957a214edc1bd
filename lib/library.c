/* SPDX-License-Identifier: MIT */
/* library.c - cuctx_library: what is particular to libraries, a kind of
 * no context (ids.h), and the JIT logs of their loads.
 *
 * A PTX that does not assemble loads with success through cuLibraryLoad*
 * (measured, lazy and eager loading alike): ptxas's errors go only into the
 * JIT log given at the load, and the failure shows later, as
 * CUDA_ERROR_INVALID_PTX from cuLibraryGetKernel, with nothing logged. So a
 * load that wrote a log keeps it here, by the library's driver handle,
 * until the library's destroy, and a kernel lookup that fails says it. Loads
 * that write nothing (every good one) keep nothing. */
#include "config.h"

#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "ids.h"
#include "init.h"
#include "jit.h"
#include "tether.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the kept logs ---------------------------------------------------------- */

struct kept_log { struct kept_log *next; CUlibrary lib; char text[]; };
static pthread_mutex_t logs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_log *logs;
static _Atomic int logs_any;     /* a destroy looks only when some log is kept */

static void log_keep(CUlibrary lib, const char *text)
{
    size_t n = strlen(text) + 1;
    struct kept_log *k = malloc(sizeof *k + n);
    if (!k)
        return;     /* the lookup's message will lack it; nothing else does */
    k->lib = lib;
    memcpy(k->text, text, n);
    pthread_mutex_lock(&logs_lock);
    k->next = logs;
    logs = k;
    atomic_store(&logs_any, 1);
    pthread_mutex_unlock(&logs_lock);
}

/* Copies lib's log into buf ("" if none) and, with drop, forgets it. */
static void log_take(CUlibrary lib, char *buf, size_t size, int drop)
{
    if (size)
        buf[0] = '\0';
    if (!atomic_load(&logs_any))
        return;
    pthread_mutex_lock(&logs_lock);
    for (struct kept_log **p = &logs; *p; p = &(*p)->next) {
        if ((*p)->lib != lib)
            continue;
        struct kept_log *k = *p;
        if (size)
            snprintf(buf, size, "%s", k->text);
        if (drop) {
            *p = k->next;
            free(k);
        }
        break;
    }
    atomic_store(&logs_any, logs != NULL);
    pthread_mutex_unlock(&logs_lock);
}

/* ---- the kind -------------------------------------------------------------- */

CUCTX__KIND_FN CUresult destroy(uint64_t raw)
{
    log_take((CUlibrary)(uintptr_t)raw, NULL, 0, 1);
    return DRV(cuLibraryUnload)((CUlibrary)(uintptr_t)raw);
}
const struct cuctx_child_kind cuctx__library_kind = {0, destroy, NULL};

static CUresult need_libraries(const char *fn)
{
    return CUCTX__DRIVER_NEEDS(fn, "cuLibrary entry points", "a CUDA 12.0 driver or newer is needed",
                               CUCTX__DRV_AT(cuLibraryLoadData), CUCTX__DRV_AT(cuLibraryLoadFromFile),
                               CUCTX__DRV_AT(cuLibraryUnload), CUCTX__DRV_AT(cuLibraryGetKernel));
}

struct library_args { const char *path; const void *image; const char *fn, *what; };

CUCTX__KIND_FN CUresult make(void *arg, uint64_t *raw, size_t *size)
{
    const struct library_args *a = arg;
    struct cuctx_jit_log log;
    CUlibrary lib = NULL;
    CUresult rc;
    cuctx__jit_log_init(&log);
    if (a->path)
        rc = DRV(cuLibraryLoadFromFile)(&lib, a->path, log.opt, log.val, 2, NULL, NULL, 0);
    else
        rc = DRV(cuLibraryLoadData)(&lib, a->image, log.opt, log.val, 2, NULL, NULL, 0);
    const char *text = cuctx__jit_log_text(&log);
    if (rc != CUDA_SUCCESS) {
        if (a->path)
            return cuctx__fail(rc, "%s: cuLibraryLoadFromFile(\"%s\") failed: %s%s%s", a->fn, a->path,
                               cuctx_result_name(rc), *text ? "; the JIT log: " : "", text);
        return cuctx__fail(rc, "%s: cuLibraryLoadData failed: %s%s%s", a->fn, cuctx_result_name(rc),
                           *text ? "; the JIT log: " : "", text);
    }
    if (*text)
        log_keep(lib, text);
    *raw = (uint64_t)(uintptr_t)lib;
    *size = 0;
    return CUDA_SUCCESS;
}

static CUresult load(cuctx_library *out, struct library_args *a, const struct cuctx_site *site)
{
    CUresult rc;
    if (out && (rc = cuctx__claim(&out->id, KIND_LIBRARY, a->fn)) != CUDA_SUCCESS)
        return rc;
    if (!a->path && !a->image)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: %s is NULL", a->fn, a->what);
    if ((rc = cuctx__ensure_init(a->fn)) != CUDA_SUCCESS || (rc = need_libraries(a->fn)) != CUDA_SUCCESS)
        return rc;
    return cuctx__child_create(out ? &out->id : NULL, KIND_LIBRARY, (cuctx_ctx){0}, a->fn, make, a, site);
}

CUCTX_API CUresult cuctx_library_load_at(cuctx_library *out, const char *path, const char *file, int line,
                                         const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct library_args a = {path, NULL, "cuctx_library_load", "path"};
    return load(out, &a, &site);
}

CUCTX_API CUresult (cuctx_library_load)(cuctx_library *out, const char *path)
{
    return cuctx_library_load_at(out, path, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_library_load_data_at(cuctx_library *out, const void *image, const char *file, int line,
                                              const char *func)
{
    struct cuctx_site site = {.file = file, .func = func, .line = line};
    struct library_args a = {NULL, image, "cuctx_library_load_data", "image"};
    return load(out, &a, &site);
}

CUCTX_API CUresult (cuctx_library_load_data)(cuctx_library *out, const void *image)
{
    return cuctx_library_load_data_at(out, image, NULL, 0, NULL);
}

CUCTX_API CUresult cuctx_library_kernel(cuctx_library lib, const char *name, CUkernel *out)
{
    static const char fn[] = "cuctx_library_kernel";
    struct cuctx_use u;
    if (out)
        *out = NULL;    /* on every failure */
    if (!name || !out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: name or out is NULL", fn);
    CUresult rc = cuctx__child_use(lib.id, KIND_LIBRARY, fn, &u);
    if (rc != CUDA_SUCCESS)
        return rc;
    CUCTX__UNWOUND_LETS_GO(NULL)
        rc = DRV(cuLibraryGetKernel)(out, (CUlibrary)(uintptr_t)u.raw, name);
    if (rc != CUDA_SUCCESS) {
        char text[400];
        log_take((CUlibrary)(uintptr_t)u.raw, text, sizeof text, 0);
        cuctx__fail(rc, "%s: cuLibraryGetKernel(\"%s\") failed: %s%s%s", fn, name, cuctx_result_name(rc),
                    *text ? "; the JIT log of the library's load: " : "", text);
    }
    cuctx__child_done(&u);
    return rc;
}

CUCTX_API CUresult cuctx_library_destroy(cuctx_library *lib)
{
    return cuctx__child_destroy(lib ? &lib->id : NULL, KIND_LIBRARY, "cuctx_library_destroy", &cuctx__library_kind);
}

CUCTX_API CUlibrary cuctx_library_raw(cuctx_library lib)
{
    return (CUlibrary)(uintptr_t)cuctx__child_value(lib.id, KIND_LIBRARY, "cuctx_library_raw", FIELD_RAW);
}
