/* SPDX-License-Identifier: MIT */
/* jit.h - the JIT error log of a module or library load: the options that
 * ask the driver for it, and its text for a message. A PTX that does not
 * assemble fails with CUDA_ERROR_INVALID_PTX and nothing else but this
 * log says why. */
#ifndef CUCTX_JIT_H
#define CUCTX_JIT_H

#include <cuda.h>
#include <stdint.h>
#include <string.h>

#define CUCTX_JIT_LOG_BYTES 2048
struct cuctx_jit_log {
    CUjit_option opt[2];
    void *val[2];
    char buf[CUCTX_JIT_LOG_BYTES];
};

/* Ready to hand over as (2, l->opt, l->val). */
static inline void cuctx__jit_log_init(struct cuctx_jit_log *l)
{
    l->buf[0] = '\0';
    l->opt[0] = CU_JIT_ERROR_LOG_BUFFER;
    l->val[0] = l->buf;
    l->opt[1] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
    l->val[1] = (void *)(uintptr_t)sizeof l->buf;
}

/* The log with its trailing blank lines cut, "" when the driver wrote none. */
static inline const char *cuctx__jit_log_text(struct cuctx_jit_log *l)
{
    l->buf[sizeof l->buf - 1] = '\0';
    size_t n = strlen(l->buf);
    while (n > 0 && (l->buf[n - 1] == '\n' || l->buf[n - 1] == '\r' || l->buf[n - 1] == ' '))
        l->buf[--n] = '\0';
    return l->buf;
}

#endif
