/* SPDX-License-Identifier: MIT */
/* ctxmap.h - the map from a context's address to its registry entry
 * (ctxmap.c), under the context lock. It holds live contexts only: an
 * entry leaves it when it ends. */
#ifndef CUCTX_CTXMAP_H
#define CUCTX_CTXMAP_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

uint64_t cuctx__map_find(CUcontext raw);
int cuctx__map_put(CUcontext raw, uint64_t entry);
void cuctx__map_remove(CUcontext raw, uint64_t entry);
size_t cuctx__map_count(void);
void cuctx__map_foreach(void (*fn)(CUcontext raw, uint64_t entry, void *arg), void *arg);

#endif
