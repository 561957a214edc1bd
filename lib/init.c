/* SPDX-License-Identifier: MIT */
/* init.c - cuctx_init and what needs it first: CUCTX_LOG read, the driver
 * loaded (driver.c), then the fork and exit hooks (process.c); and the
 * driver's version and symbols for callers. */
#include "config.h"

#include "init.h"
#include "cuctx.h"
#include "driver.h"
#include "error.h"
#include "process.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_rc = CUDA_ERROR_NOT_INITIALIZED;
static const char *init_msg = "";
_Atomic int cuctx__init_ok;

static void init_once_run(void)
{
    cuctx__log_init();
    init_rc = cuctx__driver_load(&init_msg);
    if (init_rc == CUDA_SUCCESS) {
        cuctx__process_init();  /* after cuInit: cuctx's exit hook runs before the driver's teardown */
        atomic_store_explicit(&cuctx__init_ok, 1, memory_order_release);
    }
}

CUresult cuctx__init_slow(const char *fn)
{
    pthread_once(&init_once, init_once_run);   /* after a success, ensure_init never gets here */
    if (init_rc == CUDA_SUCCESS)
        return CUDA_SUCCESS;
    if (fn && strcmp(fn, "cuctx_init") != 0)
        return cuctx__fail(init_rc, "%s: %s", fn, init_msg);
    return cuctx__fail(init_rc, "%s", init_msg);
}

CUCTX_API CUresult cuctx_init(void)
{
    return cuctx__init_slow("cuctx_init");
}

CUCTX_API CUresult cuctx_driver_version(int *out)
{
    if (!out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_driver_version: out is NULL");
    CUCTX_INIT_OR_RETURN("cuctx_driver_version");
    CUresult rc = DRV(cuDriverGetVersion)(out);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_driver_version: cuDriverGetVersion failed: %s", cuctx_result_name(rc));
    return rc;
}

/* A symbol for a caller (fn names it in the messages). */
static CUresult symbol(const char *fn, const char *name, int version, unsigned long long flags, void **out)
{
    if (!name || !out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: name or out is NULL", fn);
    *out = NULL;
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM
        && flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                           "%s: flags %#llx are not one of CU_GET_PROC_ADDRESS_DEFAULT, "
                           "CU_GET_PROC_ADDRESS_LEGACY_STREAM and CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM",
                           fn, flags);
    CUCTX_INIT_OR_RETURN(fn);
    CUresult rc = cuctx__driver_lookup(name, version, flags, out);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "%s: the driver has no %s at ABI version %d%s: %s", fn, name, version,
                           flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM ? " (per-thread default stream)"
                           : flags == CU_GET_PROC_ADDRESS_LEGACY_STREAM           ? " (legacy stream)"
                                                                                   : "",
                           cuctx_result_name(rc));
    return rc;
}

CUCTX_API CUresult cuctx_driver_symbol(const char *name, int version, void **out)
{
    return symbol("cuctx_driver_symbol", name, version, CU_GET_PROC_ADDRESS_DEFAULT, out);
}

CUCTX_API CUresult cuctx_driver_symbol_flags(const char *name, int version, unsigned long long flags, void **out)
{
    return symbol("cuctx_driver_symbol_flags", name, version, flags, out);
}

/* The version in a PFN typedef's name, "PFN_<name>_v<version>[_ptds|_ptsz]";
 * 0 if it is not one. */
static int pfn_version(const char *name, const char *pfn)
{
    size_t n = strlen(name);
    if (strncmp(pfn, "PFN_", 4) != 0 || strncmp(pfn + 4, name, n) != 0 || strncmp(pfn + 4 + n, "_v", 2) != 0)
        return 0;
    char *end;
    long v = strtol(pfn + 6 + n, &end, 10);
    if (v <= 0 || v > 1000000 || (*end && strcmp(end, "_ptds") != 0 && strcmp(end, "_ptsz") != 0))
        return 0;
    return (int)v;
}

CUCTX_API CUresult cuctx__call_resolve(const char *name, const char *pfn, unsigned long long flags, void *slot)
{
    char fn[160];
    void *p = NULL;
    snprintf(fn, sizeof fn, "CUCTX_CALL(%s)", name);
    int version = pfn_version(name, pfn);
    if (!version)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "%s: %s is not the typedef of a driver entry point", fn, pfn);
    CUresult rc = symbol(fn, name, version, flags, &p);
    if (rc == CUDA_SUCCESS)    /* the call site's function pointer: same representation (POSIX) */
        __atomic_store_n((void **)slot, p, __ATOMIC_RELEASE);
    return rc;
}
