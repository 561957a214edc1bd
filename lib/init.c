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

CUCTX_API CUresult cuctx_driver_symbol(const char *name, int version, void **out)
{
    if (!name || !out)
        return cuctx__fail(CUDA_ERROR_INVALID_VALUE, "cuctx_driver_symbol: name or out is NULL");
    *out = NULL;
    CUCTX_INIT_OR_RETURN("cuctx_driver_symbol");
    CUresult rc = cuctx__driver_lookup(name, version, out);
    if (rc != CUDA_SUCCESS)
        return cuctx__fail(rc, "cuctx_driver_symbol: the driver has no %s at ABI version %d: %s", name, version, cuctx_result_name(rc));
    return rc;
}
