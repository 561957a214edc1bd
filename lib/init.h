/* SPDX-License-Identifier: MIT */
/* init.h - the one-time start of cuctx in a process: the driver loaded,
 * then the process hooks. Every public entry point that needs the driver
 * starts with CUCTX_INIT_OR_RETURN; after the first success that is one
 * load, inlined. */
#ifndef CUCTX_INIT_H
#define CUCTX_INIT_H

#include <stdatomic.h>

#include <cuda.h>

/* Starts cuctx once; the result on every call. fn names the caller in the
 * failure message. */
CUresult cuctx__init_slow(const char *fn);
extern _Atomic int cuctx__init_ok;
static inline CUresult cuctx__ensure_init(const char *fn)
{
    if (__builtin_expect(atomic_load_explicit(&cuctx__init_ok, memory_order_acquire), 1))
        return CUDA_SUCCESS;
    return cuctx__init_slow(fn);
}

#define CUCTX_INIT_OR_RETURN(fn)                                   \
    do {                                                           \
        CUresult cuctx__irc = cuctx__ensure_init(fn);              \
        if (cuctx__irc != CUDA_SUCCESS)                            \
            return cuctx__irc;                                     \
    } while (0)

#endif
