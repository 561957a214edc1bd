/* SPDX-License-Identifier: MIT */
/* calls_ptds.c - CUCTX_CALL in a file compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM (Makefile.am), for test_calls.c. */
#include "calls_ptds.h"

CUresult ptds_stream_query(CUstream s)
{
    return CUCTX_CALL(cuStreamQuery, s);
}

CUresult ptds_memcpy_htod(CUdeviceptr dst, const void *src, size_t n)
{
    return CUCTX_CALL(cuMemcpyHtoD, dst, src, n);
}
