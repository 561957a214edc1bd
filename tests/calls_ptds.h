/* SPDX-License-Identifier: MIT */
/* calls_ptds.h - calls made through CUCTX_CALL from a file compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM (calls_ptds.c). */
#ifndef CUCTX_TESTS_CALLS_PTDS_H
#define CUCTX_TESTS_CALLS_PTDS_H

#include "cuctx.h"

CUresult ptds_stream_query(CUstream s);
CUresult ptds_memcpy_htod(CUdeviceptr dst, const void *src, size_t n);

#endif
