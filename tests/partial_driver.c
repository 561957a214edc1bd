/* SPDX-License-Identifier: MIT */
/* partial_driver.c - a "driver" for the loader tests that provides
 * cuGetProcAddress_v2 and cuInit, and nothing else, so that the loader's
 * report of a missing required entry point can be checked.
 * Built with PARTIAL_V1 (libpartialdrv1): only the CUDA 11.3 cuGetProcAddress,
 * which answers every name with success and no address, and no cuInit at
 * all: the loader's fallback to it and its report of a missing cuInit. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

#ifdef PARTIAL_V1
#undef cuGetProcAddress     /* cuda.h names the _v2 one so */
__attribute__((visibility("default")))
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    (void)symbol;
    (void)version;
    (void)flags;
    *pfn = NULL;
    return CUDA_SUCCESS;
}
#else
static CUresult fake_init(unsigned flags)
{
    return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

__attribute__((visibility("default")))
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    (void)version;
    (void)flags;
    if (strcmp(symbol, "cuInit") == 0) {
        *pfn = (void *)fake_init;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
#endif
