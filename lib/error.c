/* SPDX-License-Identifier: MIT */
/* error.c - the calling thread's last error, the error handler, CUCTX_LOG,
 * and CUresult names that work without a driver. */
#include "config.h"

#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOG_QUIET, LOG_WARN, LOG_DEBUG };

static CUCTX_TLS CUresult last_rc;
static CUCTX_TLS char last_msg[512];
static CUCTX_TLS int quiet;

void cuctx__quiet(int on)
{
    quiet += on ? 1 : -1;
}

static _Atomic int log_level = LOG_WARN;

/* The handler is a (fn, user) pair under a seqlock: no memory per setting,
 * and none to free under a thread still calling an old handler (a reader
 * calls the copies it read). seq is odd while a writer is in; writers
 * take turns on it; readers retry until they read both fields between
 * the same even values. */
static _Atomic unsigned long handler_seq;
static _Atomic(cuctx_error_fn) handler_fn;      /* NULL: the default */
static _Atomic(void *) handler_user;

static void default_handler(CUresult rc, const char *message, void *user)
{
    (void)user;
    if (atomic_load_explicit(&log_level, memory_order_relaxed) == LOG_QUIET)
        return;
    (void)rc;   /* every message names its code already */
    fprintf(stderr, "cuctx: %s\n", message);
}

void cuctx__log_init(void)
{
    const char *v = getenv("CUCTX_LOG");
    int level = LOG_WARN;
    if (v && strcmp(v, "quiet") == 0)
        level = LOG_QUIET;
    else if (v && strcmp(v, "debug") == 0)
        level = LOG_DEBUG;
    atomic_store(&log_level, level);
}

CUCTX_API void cuctx_set_error_handler(cuctx_error_fn fn, void *user)
{
    unsigned long seq = atomic_load_explicit(&handler_seq, memory_order_relaxed);
    for (;;) {
        if (!(seq & 1) && atomic_compare_exchange_weak_explicit(&handler_seq, &seq, seq + 1,
                                                                memory_order_acquire, memory_order_relaxed))
            break;
        seq = atomic_load_explicit(&handler_seq, memory_order_relaxed);
    }
    atomic_thread_fence(memory_order_release);      /* the odd seq before the fields */
    atomic_store_explicit(&handler_fn, fn, memory_order_relaxed);
    atomic_store_explicit(&handler_user, user, memory_order_relaxed);
    atomic_store_explicit(&handler_seq, seq + 2, memory_order_release);
}

/* Reports made while this thread holds something wait (below); the
 * first is kept here. */
static CUCTX_TLS CUresult pending_rc;
static CUCTX_TLS char pending_msg[512];

/* msg is the thread's last message or its pending one, which a failing
 * cuctx call inside the handler rewrites: the handler gets a copy of its
 * own, unchanged for the whole call. */
static void call_handler(CUresult rc, const char *from)
{
    cuctx_error_fn fn;
    void *user;
    unsigned long s1, s2;
    char msg[sizeof pending_msg];
    snprintf(msg, sizeof msg, "%s", from);
    do {
        s1 = atomic_load_explicit(&handler_seq, memory_order_acquire);
        fn = atomic_load_explicit(&handler_fn, memory_order_relaxed);
        user = atomic_load_explicit(&handler_user, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);  /* the fields before the second look */
        s2 = atomic_load_explicit(&handler_seq, memory_order_relaxed);
    } while ((s1 & 1) || s1 != s2);
    if (!fn)
        default_handler(rc, msg, NULL);
    else
        fn(rc, msg, user);
}

static void vrecord(CUresult rc, const char *fmt, va_list ap) CUCTX_PRINTF(2, 0);
static void vrecord(CUresult rc, const char *fmt, va_list ap)
{
    last_rc = rc;
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
}

CUresult cuctx__fail(CUresult rc, const char *fmt, ...)
{
    va_list ap;
    if (quiet)
        return rc;
    va_start(ap, fmt);
    vrecord(rc, fmt, ap);
    va_end(ap);
    return rc;
}

/* The handler may call any cuctx function, destroys included, which wait
 * for holds: so it is never called while this thread holds an entry, a pin
 * or the context lock. A report made then waits for the last release; if
 * several do, the first is kept. */

/* A thread that ends with a report pending (cancelled while it held a
 * pin, say) gets it delivered at its exit, once the registry's own exit
 * hook has released what the thread held: until then this hook asks to be
 * run again, in the next round of key destructors. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;

static void deliver_at_exit(void *arg)
{
    if (!cuctx__me.error.reports_pending)
        return;
    if (cuctx__thread_busy()) {
        pthread_setspecific(exit_key, arg);
        return;
    }
    cuctx__me.error.reports_pending = 0;
    call_handler(pending_rc, pending_msg);
}

static void exit_key_make(void)
{
    exit_key_ok = pthread_key_create(&exit_key, deliver_at_exit) == 0;
}

static void deliver_or_defer(CUresult rc, const char *msg)
{
    if (!cuctx__thread_busy()) {
        call_handler(rc, msg);
    } else if (!cuctx__me.error.reports_pending) {
        pending_rc = rc;
        snprintf(pending_msg, sizeof pending_msg, "%s", msg);
        cuctx__me.error.reports_pending = 1;
        pthread_once(&exit_key_once, exit_key_make);
        if (exit_key_ok)
            pthread_setspecific(exit_key, &pending_rc);
    }
}

void cuctx__deliver_reports_slow(void)
{
    if (cuctx__thread_busy())
        return;
    cuctx__me.error.reports_pending = 0;
    call_handler(pending_rc, pending_msg);
}

void cuctx__report(CUresult rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrecord(rc, fmt, ap);
    va_end(ap);
    deliver_or_defer(rc, last_msg);
}

void cuctx__debug(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (atomic_load_explicit(&log_level, memory_order_relaxed) != LOG_DEBUG)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    deliver_or_defer(CUDA_SUCCESS, msg);
}

CUCTX_API CUresult cuctx_last_error(void) { return last_rc; }
CUCTX_API const char *cuctx_last_error_message(void) { return last_msg; }

/* By number, so that the table compiles with every supported cuda.h. */
static const struct { int code; const char *name; } result_names[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {5, "CUDA_ERROR_PROFILER_DISABLED"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED"},
    {200, "CUDA_ERROR_INVALID_IMAGE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT"},
    {205, "CUDA_ERROR_MAP_FAILED"},
    {206, "CUDA_ERROR_UNMAP_FAILED"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED"},
    {208, "CUDA_ERROR_ALREADY_MAPPED"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED"},
    {211, "CUDA_ERROR_NOT_MAPPED"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
    {218, "CUDA_ERROR_INVALID_PTX"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC"},
    {226, "CUDA_ERROR_CONTAINED"},
    {300, "CUDA_ERROR_INVALID_SOURCE"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},
    {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {402, "CUDA_ERROR_LOSSY_QUERY"},
    {500, "CUDA_ERROR_NOT_FOUND"},
    {600, "CUDA_ERROR_NOT_READY"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
    {710, "CUDA_ERROR_ASSERT"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {718, "CUDA_ERROR_INVALID_PC"},
    {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},
    {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
    {907, "CUDA_ERROR_CAPTURED_EVENT"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
    {909, "CUDA_ERROR_TIMEOUT"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"},
    {916, "CUDA_ERROR_KEY_ROTATION"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

CUCTX_API const char *cuctx_result_name(CUresult rc)
{
    size_t lo = 0, hi = sizeof result_names / sizeof result_names[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (result_names[mid].code == (int)rc)
            return result_names[mid].name;
        if (result_names[mid].code < (int)rc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return "CUDA_ERROR_(unrecognised code)";
}
