/*
 * cudasim.h - control API of the simulated CUDA driver used by cuctx's tests.
 *
 * The simulator (tests/sim/cudasim.c, built as libcudasim.so) exports
 * cuGetProcAddress, cuGetProcAddress_v2 and the ABI symbols of every driver
 * entry point cuctx calls, behaving as the real driver was measured to
 * behave (an H200, driver 580.159.04).  Where the real driver crashes or silently corrupts another
 * owner's object, the simulator instead records a *misuse* and returns an
 * error, so a test can assert that cuctx never triggered one.
 *
 * Tests load the simulator with dlopen(getenv("CUCTX_DRIVER")) and reach
 * these functions with dlsym; a library without "cusim_reset" is the real
 * driver.
 *
 * Bounds: the call log keeps the most recent 1,000,000 records (older ones
 * are dropped, index 0 is always the oldest kept); cusim_calls() counts stay
 * exact.  The misuse log keeps the text of the first 100,000 misuses;
 * cusim_misuse_count() stays exact and later texts read as a placeholder.
 */
#ifndef CUCTX_TESTS_CUDASIM_H
#define CUCTX_TESTS_CUDASIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One driver call as the simulator saw it. */
struct cusim_call {
	const char *fn;   /* base name without ABI suffix ("cuEventDestroy"); static storage */
	uint64_t handle;  /* the main handle the call names or returns, 0 if none */
	uint64_t ctx;     /* the calling thread's current context when the call began */
	CUresult rc;      /* what the call returned */
};

/* Destroys every object, clears logs, counters, fault plans and misuses,
 * turns recycling back on and empties every thread's context stack.
 * cuInit's state and the device count survive. */
void cusim_reset(void);

/* Address recycling: on (the default), each new object takes the most
 * recently freed value of its kind; off, values are never reused. */
void cusim_set_recycling(int on);

/* Number of records in the call log (at most 1,000,000). */
size_t cusim_log_count(void);

/* Copies record i (0 = oldest kept) to *out: 0 on success, -1 out of range. */
int cusim_log_get(size_t i, struct cusim_call *out);

/* Calls of the entry point with this base name since the last reset. */
unsigned long cusim_calls(const char *fn);

/* Misuses recorded since the last reset. */
size_t cusim_misuse_count(void);

/* Text of misuse i, e.g. "cuStreamDestroy(0x...): stream not live: its
 * context was destroyed"; NULL out of range; valid until the next reset. */
const char *cusim_misuse_text(size_t i);

/* Live objects of a kind: "context" (non-primary), "primary" (active
 * primaries), "event", "stream", "module", "mem", "host_mem", "graph",
 * "graph_exec", or "all" (every kind above together). */
size_t cusim_live(const char *kind);

/* 1 if handle is a live object of that kind (same names as cusim_live). */
int cusim_is_live(const char *kind, uint64_t handle);

/* Makes the nth call (1 = the next) of entry point fn, counted from now,
 * return rc without doing anything else; it is still logged and counted. */
void cusim_fail_call(const char *fn, unsigned long nth, CUresult rc);

#ifdef __cplusplus
}
#endif

#endif
