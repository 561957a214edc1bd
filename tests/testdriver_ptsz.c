/* SPDX-License-Identifier: MIT */
/* testdriver_ptsz.c - calls made as a program built with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM makes them (cuda.h then names the _ptsz
 * and _ptds symbols), for test_testdriver. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda.h>

#include "testdriver_ptsz.h"

CUresult ptsz_copy_in_and_out(CUdeviceptr d, const void *in, void *out, size_t n)
{
    CUresult rc = cuMemcpyHtoDAsync(d, in, n, NULL);
    if (rc == CUDA_SUCCESS)
        rc = cuMemcpyDtoH(out, d, n);
    return rc;
}
