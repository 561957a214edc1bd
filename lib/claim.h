/* SPDX-License-Identifier: MIT */
/* claim.h - the handle a create fills (claim.c). A create into a handle
 * that still names a live object is refused, so that the object is not
 * orphaned; every create claims its handle first, before any other check
 * that could reset it. Inline for the usual {0} handle. */
#ifndef CUCTX_CLAIM_H
#define CUCTX_CLAIM_H

#include <cuda.h>
#include <stdint.h>

#include "ids.h"

/* CUDA_SUCCESS with *out reset to {0} when it names no live object of kind
 * (it is {0}, stale, or garbage), or a child whose context has ended: that
 * one's slot is released as its destroy would, without the driver.
 * Otherwise CUDA_ERROR_INVALID_VALUE with *out as it was. */
CUresult cuctx__claim_slow(uint64_t *out, enum cuctx_kind kind, const char *fn);
static inline __attribute__((always_inline)) CUresult cuctx__claim(uint64_t *out, enum cuctx_kind kind,
                                                                   const char *fn)
{
    if (__builtin_expect(*out == 0, 1))
        return CUDA_SUCCESS;
    return cuctx__claim_slow(out, kind, fn);
}

#endif
