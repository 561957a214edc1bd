/* SPDX-License-Identifier: MIT */
/* call_wrong_args.c - must NOT compile (tests/compile_check.sh): CUCTX_CALL
 * goes through the typedef of cuda.h's prototype, so cuMemcpyHtoD given a
 * handle where it takes a CUdeviceptr is an error (incompatible type), as
 * is -DTOO_FEW, a call without its byte count. */
#include <cuctx.h>

CUresult copy_in(cuctx_mem m, const void *src, size_t n);

CUresult copy_in(cuctx_mem m, const void *src, size_t n)
{
#ifdef TOO_FEW
    (void)n;
    return CUCTX_CALL(cuMemcpyHtoD, cuctx_mem_ptr(m), src);
#else
    return CUCTX_CALL(cuMemcpyHtoD, m, src, n);
#endif
}
