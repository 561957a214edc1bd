/* SPDX-License-Identifier: MIT */
/* testdriver_ptsz.h - see testdriver_ptsz.c. */
#ifndef CUCTX_TESTS_TESTDRIVER_PTSZ_H
#define CUCTX_TESTS_TESTDRIVER_PTSZ_H
#include <cuda.h>
#include <stddef.h>

/* cuMemcpyHtoDAsync on the default stream, then cuMemcpyDtoH, through the
 * per-thread default stream symbols (cuMemcpyHtoDAsync_v2_ptsz,
 * cuMemcpyDtoH_v2_ptds). */
CUresult ptsz_copy_in_and_out(CUdeviceptr d, const void *in, void *out, size_t n);
#endif
