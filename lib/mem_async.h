/* SPDX-License-Identifier: MIT */
/* mem_async.h - what mem_async.c offers the rest of lib/. */
#ifndef CUCTX_MEM_ASYNC_H
#define CUCTX_MEM_ASYNC_H

#include <cuda.h>
#include <stdint.h>

/* The destroy of stream-ordered memory (cuctx_mem_destroy of such a
 * handle), in the file of its kind: the free inlined into it. id: the
 * handle's value, of kind KIND_MEM_ASYNC (checked by the caller on this
 * value), which the caller took out of the handle, setting it to {0}. */
CUresult cuctx__mem_async_destroy(uint64_t id, const char *fn);

#endif
