/* SPDX-License-Identifier: MIT */
/* driver.c - loads the CUDA driver at run time and resolves every entry
 * point through cuGetProcAddress at a pinned ABI version, once per process
 * (init.c calls it). Also the driver's shutdown, once it is seen. */
#include "config.h"

#include "driver.h"
#include "error.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cuctx_driver cuctx__drv;
_Atomic int cuctx__shutdown;

#define CUCTX__DRV_ENTRY(name, version, required) \
    {#name, version, required, offsetof(struct cuctx_driver, f_##name)},
const struct cuctx_driver_entry cuctx__drv_entries[] = {
    CUCTX_DRIVER_ENTRIES(CUCTX__DRV_ENTRY)
};
#undef CUCTX__DRV_ENTRY
const size_t cuctx__drv_entry_count = sizeof cuctx__drv_entries / sizeof cuctx__drv_entries[0];

static CUresult init_rc = CUDA_ERROR_NOT_INITIALIZED;
static char init_msg[768];
static void *lib;
static PFN_cuGetProcAddress_v12000 gpa_v2;
static PFN_cuGetProcAddress_v11030 gpa_v1;

/* The library to open, and whether CUCTX_DRIVER named it. */
static const char *driver_path(int *named)
{
#ifdef HAVE_SECURE_GETENV
    const char *p = secure_getenv("CUCTX_DRIVER");  /* ignored when setuid/setgid */
#else
    const char *p = getenv("CUCTX_DRIVER");
#endif
    *named = p && *p;
    return *named ? p : "libcuda.so.1";
}

static CUresult lookup(const char *name, int version, unsigned long long flags, void **out)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult rc;
    *out = NULL;
    if (gpa_v2)
        rc = gpa_v2(name, out, version, flags, &found);
    else
        rc = gpa_v1(name, out, version, flags);
    if (rc == CUDA_SUCCESS && (found != CU_GET_PROC_ADDRESS_SUCCESS || !*out))
        rc = CUDA_ERROR_NOT_FOUND;
    if (rc != CUDA_SUCCESS)
        *out = NULL;
    return rc;
}

/* Stores a data pointer from dlsym or cuGetProcAddress into a function
 * pointer by copying its bytes: ISO C has no cast between the two
 * (-Wpedantic), POSIX guarantees they share a representation. */
static void sym_to_fn(void *fn_ptr, size_t fn_size, void *sym)
{
    _Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym needs function and data pointers of one size");
    memcpy(fn_ptr, &sym, fn_size);
}

static void init_fail(CUresult rc, const char *fmt, ...) CUCTX_PRINTF(2, 3);
static void init_fail(CUresult rc, const char *fmt, ...)
{
    va_list ap;
    init_rc = rc;
    va_start(ap, fmt);
    vsnprintf(init_msg, sizeof init_msg, fmt, ap);
    va_end(ap);
}

static void load(void)
{
    int named;
    const char *path = driver_path(&named);
    char code[160];
    CUresult rc;

    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);   /* never closed: handles outlive any caller */
    if (!lib) {
        const char *why = dlerror();
        if (named)
            init_fail(CUDA_ERROR_NOT_INITIALIZED,
                      "cuctx_init: CUCTX_DRIVER names %s, which cannot be loaded (%s); set CUCTX_DRIVER to the "
                      "path of a CUDA driver library (libcuda.so.1 or the test driver), or unset it to use libcuda.so.1",
                      path, why ? why : "unknown dlopen error");
        else
            init_fail(CUDA_ERROR_NOT_INITIALIZED,
                      "cuctx_init: cannot load the CUDA driver %s (%s); install the NVIDIA driver, or name a driver library in CUCTX_DRIVER",
                      path, why ? why : "unknown dlopen error");
        return;
    }
    sym_to_fn(&gpa_v2, sizeof gpa_v2, dlsym(lib, "cuGetProcAddress_v2"));
    if (!gpa_v2)
        sym_to_fn(&gpa_v1, sizeof gpa_v1, dlsym(lib, "cuGetProcAddress"));
    if (!gpa_v2 && !gpa_v1) {
        if (named)
            init_fail(CUDA_ERROR_NOT_INITIALIZED,
                      "cuctx_init: CUCTX_DRIVER names %s, which is not a CUDA driver: it exports neither "
                      "cuGetProcAddress_v2 nor cuGetProcAddress (a driver for CUDA 11.3 or newer does)",
                      path);
        else
            init_fail(CUDA_ERROR_NOT_INITIALIZED,
                      "cuctx_init: the CUDA driver %s has no cuGetProcAddress (%s); cuctx needs a driver for CUDA 11.3 or newer",
                      path, "neither cuGetProcAddress_v2 nor cuGetProcAddress exported");
        return;
    }

    /* cuInit first, so a stub or a machine without a device is reported as such. */
    void *p = NULL;
    if (lookup("cuInit", 2000, CU_GET_PROC_ADDRESS_DEFAULT, &p) != CUDA_SUCCESS)
        p = dlsym(lib, "cuInit");
    if (!p) {
        init_fail(CUDA_ERROR_NOT_FOUND, "cuctx_init: the CUDA driver %s%s does not provide %s", path,
                  named ? " (named by CUCTX_DRIVER)" : "", "cuInit");
        return;
    }
    sym_to_fn(&cuctx__drv.f_cuInit, sizeof cuctx__drv.f_cuInit, p);
    rc = cuctx__drv.f_cuInit(0);
    if (rc != CUDA_SUCCESS) {
        const char *why = rc == CUDA_ERROR_STUB_LIBRARY ? "it is the CUDA toolkit's stub library, not a driver"
                        : rc == CUDA_ERROR_NO_DEVICE    ? "no CUDA device is present"
                                                        : "the driver failed to initialise";
        snprintf(code, sizeof code, "%s: %s", cuctx_result_name(rc), why);
        if (named && rc == CUDA_ERROR_STUB_LIBRARY)
            init_fail(rc, "cuctx_init: CUCTX_DRIVER names %s, the CUDA toolkit's stub library, not a driver "
                          "(cuInit: %s); name the driver itself (libcuda.so.1 of the NVIDIA driver) or unset CUCTX_DRIVER",
                      path, cuctx_result_name(rc));
        else if (named)
            init_fail(rc, "cuctx_init: CUCTX_DRIVER names %s, whose cuInit failed (%s)", path, code);
        else
            init_fail(rc, "cuctx_init: cuInit failed with the CUDA driver %s (%s)", path, code);
        return;
    }

    for (size_t i = 0; i < cuctx__drv_entry_count; i++) {
        const struct cuctx_driver_entry *e = &cuctx__drv_entries[i];
        void **slot = (void **)(void *)((char *)&cuctx__drv + e->offset);
        if (*slot)
            continue;
        rc = lookup(e->name, e->version, CU_GET_PROC_ADDRESS_DEFAULT, slot);
        if (rc != CUDA_SUCCESS && e->required) {
            snprintf(code, sizeof code, "%s at ABI version %d: %s", e->name, e->version, cuctx_result_name(rc));
            init_fail(rc, "cuctx_init: the CUDA driver %s%s does not provide %s", path,
                      named ? " (named by CUCTX_DRIVER)" : "", code);
            return;
        }
    }
    init_rc = CUDA_SUCCESS;
}

CUresult cuctx__driver_needs(const char *fn, const size_t *at, size_t n, const char *what, const char *needed)
{
    for (size_t i = 0; i < n; i++)
        if (!*(void **)(void *)((char *)&cuctx__drv + at[i]))
            return cuctx__fail(CUDA_ERROR_NOT_SUPPORTED, "%s: the driver has no %s (%s)", fn, what, needed);
    return CUDA_SUCCESS;
}

CUresult cuctx__driver_load(const char **msg)
{
    load();
    *msg = init_msg;
    return init_rc;
}

CUresult cuctx__driver_lookup(const char *name, int version, unsigned long long flags, void **out)
{
    return lookup(name, version, flags, out);
}
