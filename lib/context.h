/* SPDX-License-Identifier: MIT */
/* context.h - what the context API (context.c) offers the child kinds. */
#ifndef CUCTX_CONTEXT_H
#define CUCTX_CONTEXT_H

#include "cuctx.h"
#include "ids.h"

#include <pthread.h>
#include <stdint.h>

/* The cuctx_<kind>_ctx functions: a borrowed handle of the context of the
 * live child id, in *out (claimed first, claim.h). The child's context must
 * live: an ended one gives CUDA_ERROR_CONTEXT_IS_DESTROYED, a stale child
 * CUDA_ERROR_INVALID_HANDLE, and *out {0}. */
CUresult cuctx__child_ctx(uint64_t id, enum cuctx_kind kind, const char *fn, cuctx_ctx *out);

#endif
