/* SPDX-License-Identifier: MIT */
/* green.h - what green contexts (green.c) offer the context API. The
 * create's half for children is declared beside the create it branches
 * from (cuctx__child_create_green, tether.h). */
#ifndef CUCTX_GREEN_H
#define CUCTX_GREEN_H

#include <cuda.h>
#include <stdint.h>

/* A green context's destroy, from cuctx_ctx_destroy once its handle is
 * freed: its streams first, then cuGreenCtxDestroy (green, the handle's
 * CUgreenCtx), then its entry ends. The error of the first thing that
 * failed; the entry ends all the same. */
CUresult cuctx__green_end(uint64_t entry, void *green, CUdevice dev, const char *fn);

#endif
