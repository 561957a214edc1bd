/* SPDX-License-Identifier: MIT */
/* error.h - the calling thread's last error and the error handler. */
#ifndef CUCTX_ERROR_H
#define CUCTX_ERROR_H

#include "cuctx.h"
#include "thread.h"

#if defined(__GNUC__)
#  define CUCTX_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define CUCTX_PRINTF(f, a)
#endif

/* Records rc and a message for the calling thread; returns rc. */
CUresult cuctx__fail(CUresult rc, const char *fmt, ...) CUCTX_PRINTF(2, 3);
/* For failures with no caller to return to: records, then tells the handler. */
void cuctx__report(CUresult rc, const char *fmt, ...) CUCTX_PRINTF(2, 3);
/* CUCTX_LOG=debug only: a note to the handler (rc CUDA_SUCCESS). */
void cuctx__debug(const char *fmt, ...) CUCTX_PRINTF(1, 2);
/* Reads CUCTX_LOG; called once, by init. */
void cuctx__log_init(void);

/* While a quiet section is open on the calling thread, failures are not
 * recorded as its last error (scope enter's look at the previous context). */
void cuctx__quiet(int on);

/* Reports made while this thread held something (cuctx__thread_busy) wait
 * for its last release, since the handler may call back into cuctx: every
 * release of an entry, a pin or the context lock delivers them. */
void cuctx__deliver_reports_slow(void);
static inline void cuctx__deliver_reports(void)
{
    if (__builtin_expect(cuctx__me.error.reports_pending, 0))
        cuctx__deliver_reports_slow();
}

#endif
