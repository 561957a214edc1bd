/* SPDX-License-Identifier: MIT */
/*
 * sim.h - the simulator's private header. The simulator (the .c files of
 * tests/sim/, built as libcudasim.so) is a simulated CUDA driver for running
 * cuctx's tests without a GPU.
 *
 * It behaves as the real driver was measured to behave (an H200, driver
 * 580.159.04, CUDA 13.0: context stacks, stale handles, address reuse,
 * primary contexts, event timing errors), with one deliberate difference: where the real driver crashes or silently
 * corrupts another owner's object, this one records a misuse and returns an
 * error.  Every handle it gives out is a value it looks up in its own tables;
 * it never dereferences a handle a caller passes in.
 *
 * Address recycling is a deliberate worst case, not a measurement: each new
 * object takes the most recently freed value of its kind, every time.  The
 * real driver reuses device-memory addresses nearly always but context
 * addresses only sometimes; always reusing makes every stale-handle bug show.
 *
 * This header is what its files share: the entry-point
 * list, object records, the state under S.lock, call bookkeeping and the
 * entry points' ABI declarations. The files: objects.c (records and their
 * tables), calls.c (log, counters, fault plans, misuses), device.c,
 * contexts.c, children.c, memory.c (the entry points by area), procs.c
 * (cuGetProcAddress) and controls.c (the cusim_* control API).
 */
#ifndef CUCTX_TESTS_SIM_H
#define CUCTX_TESTS_SIM_H

#define _GNU_SOURCE

#include <cuda.h>
#include <cudaTypedefs.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudasim.h"

#define SIM_DRIVER_VERSION 13000
#define SIM_DEFAULT_DEVICES 2
#define SIM_MAX_DEVICES 64
#define SIM_STACK_MAX 256
#define SIM_LOG_MAX 1000000u
#define SIM_MISUSE_MAX 100000u
#define SIM_MAX_ALLOC ((size_t)1 << 30)
#define SIM_MAX_IMAGE ((size_t)64 << 20)
#define SIM_DEVICE_BASE 0x7f0000000000ull
#define SIM_DEVICE_GRAIN ((uint64_t)64 << 10)
#define SIM_HANDLE_STRIDE 0x40u
#define SIM_PRIMARY_OFFSET 0x800000000ull
#define SIM_PRIO_LEAST 0
/* An H200's device memory as its driver reports it (143771 MiB). */
#define SIM_DEVICE_TOTAL_MEM ((size_t)143771 << 20)
#define SIM_PRIO_GREATEST (-5)

#define SIM_VISIBLE __attribute__((visibility("default")))
/* Gives a function the driver's ABI symbol name without touching cuda.h's macro renames. */
#define SIM_ABI(sym) __asm__(sym) SIM_VISIBLE

#define H(x) ((uint64_t)(uintptr_t)(x))

/* ---------------------------------------------------------------------------
 * Entry points by base name: the unit of counting, logging and fault plans.
 */
#define SIM_FUNCTIONS(X) \
	X(cuGetProcAddress) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) \
	X(cuDeviceGetCount) X(cuDeviceGetName) X(cuGetErrorName) X(cuGetErrorString) \
	X(cuCtxCreate) X(cuCtxDestroy) X(cuCtxPushCurrent) X(cuCtxPopCurrent) \
	X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) \
	X(cuCtxGetApiVersion) X(cuCtxGetId) X(cuDevicePrimaryCtxRetain) \
	X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxGetState) X(cuDevicePrimaryCtxReset) \
	X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) \
	X(cuEventSynchronize) X(cuEventElapsedTime) \
	X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy) \
	X(cuStreamSynchronize) X(cuStreamWaitEvent) X(cuStreamQuery) \
	X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
	X(cuLaunchKernel) \
	X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemHostAlloc) X(cuMemFreeHost) \
	X(cuMemsetD8) X(cuMemcpyHtoD) X(cuMemcpyDtoH) \
	X(cuGraphCreate) X(cuGraphAddEmptyNode) X(cuGraphDestroy) \
	X(cuGraphInstantiateWithFlags) X(cuGraphExecDestroy) X(cuGraphLaunch) \
	X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuMemGetInfo) \
	X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async) \
	X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) \
	X(cuMemcpy2D) X(cuMemcpy2DAsync) \
	X(cuLaunchKernelEx) X(cuLaunchHostFunc) X(cuStreamAddCallback)

/* Only # and ## touch the names, so cuda.h's renames (cuCtxCreate -> _v4) never expand here. */
#define SIM_ENUM(n) F_##n,
#define SIM_NAME(n) #n,
enum fn { SIM_FUNCTIONS(SIM_ENUM) F_COUNT };


extern const char *const fn_names[F_COUNT];

/* ---- objects (objects.c) ---- */

enum kind {
	K_NONE, K_CTX, K_EVENT, K_STREAM, K_MODULE, K_FUNC, K_MEM, K_HOST,
	K_GRAPH, K_NODE, K_EXEC, K_COUNT
};

struct obj {
	uint64_t value;
	enum kind kind;
	bool live;
	bool primary;
	const char *why;             /* why a dead record died; static text */
	struct obj *hnext;           /* hash chain */
	struct obj *owner;           /* context of a child, module of a function, graph of a node */
	struct obj *kid_first, *kid_last, *sib_prev, *sib_next;
	struct obj *mem_prev, *mem_next; /* live device allocations, for interior-pointer lookups */
	int device;
	unsigned int flags;
	int priority;
	unsigned long long ctx_id;   /* a context's cuCtxGetId answer: new each time it becomes live */
	bool recorded;
	double stamp_ms;
	size_t size;                 /* bytes asked for */
	size_t span;                 /* bytes reserved: device address span or host block capacity */
	unsigned char *buf;          /* device backing store or page-locked host block */
	char *name;                  /* function name */
};

struct value_stack {
	uint64_t *v;
	size_t n, cap;
};

struct plan {
	enum fn fn;
	unsigned long at;
	CUresult rc;
};

struct sim_state {
	pthread_mutex_t lock;
	bool initialised;
	int devices;
	bool recycling;
	uint64_t epoch;
	struct obj **buckets;
	size_t nbuckets, nobjs;
	uint64_t serial[K_COUNT];
	uint64_t next_device_addr;
	struct value_stack freed[K_COUNT];
	size_t live[K_COUNT];
	size_t live_primary;
	struct obj *mem_list;
	struct obj *primary[SIM_MAX_DEVICES];
	unsigned int primary_refs[SIM_MAX_DEVICES];
	unsigned long calls[F_COUNT];
	struct cusim_call *log;
	size_t log_cap, log_start, log_len;
	char **misuse;
	size_t misuse_kept, misuse_cap, misuse_total;
	struct plan *plans;
	size_t nplans, plans_cap;
	unsigned long long last_ctx_id; /* never restarted, not even by cusim_reset: ids stay process-unique */
	bool hide_ctx_id;
	bool stale_levels;              /* cusim_set_stale_levels */
	CUresult fail_all;
	unsigned int delay_us[F_COUNT]; /* read without the lock, so only through __atomic builtins */
	unsigned int sleeping;          /* calls in delay() now; __atomic builtins too */
};

extern struct sim_state S;

/* Each thread's context stack; a stale epoch means cusim_reset emptied it. */
struct sim_thread {
	uint64_t epoch;
	int depth;
	uint64_t v[SIM_STACK_MAX];
	unsigned long long id[SIM_STACK_MAX];   /* v[i]'s context id when bound (cusim_set_stale_levels) */
};

extern __thread struct sim_thread T;

/* ---- objects.c ---- */
extern const char *const kind_names[K_COUNT];
extern const CUresult dead_rc[K_COUNT];
extern const CUresult garbage_rc[K_COUNT];
void stack_sync(void);
uint64_t stack_top(void);
void *xrealloc(void *p, size_t n);
struct obj *find(enum kind k, uint64_t v);
void table_insert(struct obj *o);
void count_live(struct obj *o, int delta);
struct obj *obj_new(enum kind k, struct obj *owner, size_t want);
void obj_kill(struct obj *o, const char *why);
struct obj *mem_containing(uint64_t p, size_t n);
double now_ms(void);

/* ---- call bookkeeping (calls.c) ---- */

/* What a call was asked beyond its main handle; cudasim.h lists each entry point's. */
struct args {
	unsigned long long flags;
	long long arg;
	uint64_t handle2;
	uint64_t stream;
};

#define ARGS(...) ((struct args){ __VA_ARGS__ })

struct call {
	enum fn fn;
	const char *name;            /* the logged name when not fn_names[fn] (an entry point not implemented) */
	uint64_t handle;
	uint64_t ctx;
	CUresult rc;
	struct args a;
};

void misuse(const struct call *c, uint64_t handle, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool enter_as(struct call *c, enum fn fn, uint64_t handle, bool needs_init, struct args a);
bool enter(struct call *c, enum fn fn, uint64_t handle);
bool enter_with(struct call *c, enum fn fn, uint64_t handle, struct args a);
CUresult leave(struct call *c, CUresult rc);
CUresult need_live(const struct call *c, enum kind k, uint64_t v, struct obj **out);
CUresult need_current(struct obj **out);
bool is_default_stream(CUstream s);
CUresult stream_context(const struct call *c, CUstream s, struct obj **ctx);
CUresult need_stream_of(const struct call *c, const struct obj *o, CUstream s, const char *what);
bool valid_device(CUdevice dev);
const char *call_name(const struct call *c);

/* ---- entry points not implemented (stubs.c, generated by tools/testdriver-stubs) ---- */
struct sim_stub {
	const char *symbol;          /* the ABI symbol exported ("cuArrayCreate_v2") */
	const char *base;            /* the name cuGetProcAddress and the log use ("cuArrayCreate") */
	void *fn;
};
extern const struct sim_stub sim_stubs[];
extern const size_t sim_stub_count;
extern unsigned long sim_stub_calls[];  /* under S.lock */
/* What every stub does: logs the call under its base name, records a misuse, answers 801. */
CUresult not_implemented(size_t i);
/* The stub cuGetProcAddress hands out for a base name; NULL if none. */
void *stub_for(const char *base);

/* ---- contexts.c ---- */
struct obj *primary_retain(CUdevice dev);
bool primary_release(CUdevice dev);

/* ---------------------------------------------------------------------------
 * Exported entry points, under the real driver's ABI symbol names.
 */
CUresult sim_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags) SIM_ABI("cuGetProcAddress");
CUresult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status) SIM_ABI("cuGetProcAddress_v2");
CUresult sim_cuInit(unsigned int flags) SIM_ABI("cuInit");
CUresult sim_cuDriverGetVersion(int *version) SIM_ABI("cuDriverGetVersion");
CUresult sim_cuDeviceGet(CUdevice *dev, int ordinal) SIM_ABI("cuDeviceGet");
CUresult sim_cuDeviceGetCount(int *count) SIM_ABI("cuDeviceGetCount");
CUresult sim_cuDeviceGetName(char *name, int len, CUdevice dev) SIM_ABI("cuDeviceGetName");
CUresult sim_cuGetErrorName(CUresult error, const char **str) SIM_ABI("cuGetErrorName");
CUresult sim_cuGetErrorString(CUresult error, const char **str) SIM_ABI("cuGetErrorString");
CUresult sim_cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) SIM_ABI("cuCtxCreate_v2");
CUresult sim_cuCtxDestroy(CUcontext ctx) SIM_ABI("cuCtxDestroy_v2");
CUresult sim_cuCtxPushCurrent(CUcontext ctx) SIM_ABI("cuCtxPushCurrent_v2");
CUresult sim_cuCtxPopCurrent(CUcontext *pctx) SIM_ABI("cuCtxPopCurrent_v2");
CUresult sim_cuCtxSetCurrent(CUcontext ctx) SIM_ABI("cuCtxSetCurrent");
CUresult sim_cuCtxGetCurrent(CUcontext *pctx) SIM_ABI("cuCtxGetCurrent");
CUresult sim_cuCtxGetDevice(CUdevice *dev) SIM_ABI("cuCtxGetDevice");
CUresult sim_cuCtxSynchronize(void) SIM_ABI("cuCtxSynchronize");
CUresult sim_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) SIM_ABI("cuCtxGetApiVersion");
CUresult sim_cuCtxGetId(CUcontext ctx, unsigned long long *id) SIM_ABI("cuCtxGetId");
CUresult sim_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) SIM_ABI("cuDevicePrimaryCtxRetain");
CUresult sim_cuDevicePrimaryCtxRelease(CUdevice dev) SIM_ABI("cuDevicePrimaryCtxRelease_v2");
CUresult sim_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) SIM_ABI("cuDevicePrimaryCtxGetState");
CUresult sim_cuDevicePrimaryCtxReset(CUdevice dev) SIM_ABI("cuDevicePrimaryCtxReset_v2");
CUresult sim_cuEventCreate(CUevent *ev, unsigned int flags) SIM_ABI("cuEventCreate");
CUresult sim_cuEventDestroy(CUevent ev) SIM_ABI("cuEventDestroy_v2");
CUresult sim_cuEventRecord(CUevent ev, CUstream s) SIM_ABI("cuEventRecord");
CUresult sim_cuEventQuery(CUevent ev) SIM_ABI("cuEventQuery");
CUresult sim_cuEventSynchronize(CUevent ev) SIM_ABI("cuEventSynchronize");
CUresult sim_cuEventElapsedTime(float *ms, CUevent start, CUevent end) SIM_ABI("cuEventElapsedTime");
CUresult sim_cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) SIM_ABI("cuEventElapsedTime_v2");
CUresult sim_cuStreamCreate(CUstream *ps, unsigned int flags) SIM_ABI("cuStreamCreate");
CUresult sim_cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority) SIM_ABI("cuStreamCreateWithPriority");
CUresult sim_cuStreamDestroy(CUstream s) SIM_ABI("cuStreamDestroy_v2");
CUresult sim_cuStreamSynchronize(CUstream s) SIM_ABI("cuStreamSynchronize");
CUresult sim_cuStreamWaitEvent(CUstream s, CUevent ev, unsigned int flags) SIM_ABI("cuStreamWaitEvent");
CUresult sim_cuStreamQuery(CUstream s) SIM_ABI("cuStreamQuery");
CUresult sim_cuModuleLoad(CUmodule *pmod, const char *fname) SIM_ABI("cuModuleLoad");
CUresult sim_cuModuleLoadData(CUmodule *pmod, const void *image) SIM_ABI("cuModuleLoadData");
CUresult sim_cuModuleUnload(CUmodule mod) SIM_ABI("cuModuleUnload");
CUresult sim_cuModuleGetFunction(CUfunction *pf, CUmodule mod, const char *name) SIM_ABI("cuModuleGetFunction");
CUresult sim_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra) SIM_ABI("cuLaunchKernel");
CUresult sim_cuMemAlloc(CUdeviceptr *dptr, size_t size) SIM_ABI("cuMemAlloc_v2");
CUresult sim_cuMemFree(CUdeviceptr dptr) SIM_ABI("cuMemFree_v2");
CUresult sim_cuMemAllocHost(void **pp, size_t size) SIM_ABI("cuMemAllocHost_v2");
CUresult sim_cuMemHostAlloc(void **pp, size_t size, unsigned int flags) SIM_ABI("cuMemHostAlloc");
CUresult sim_cuMemFreeHost(void *p) SIM_ABI("cuMemFreeHost");
CUresult sim_cuMemsetD8(CUdeviceptr dptr, unsigned char uc, size_t n) SIM_ABI("cuMemsetD8_v2");
CUresult sim_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) SIM_ABI("cuMemcpyHtoD_v2");
CUresult sim_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) SIM_ABI("cuMemcpyDtoH_v2");
CUresult sim_cuGraphCreate(CUgraph *pg, unsigned int flags) SIM_ABI("cuGraphCreate");
CUresult sim_cuGraphAddEmptyNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t ndeps) SIM_ABI("cuGraphAddEmptyNode");
CUresult sim_cuGraphDestroy(CUgraph g) SIM_ABI("cuGraphDestroy");
CUresult sim_cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags) SIM_ABI("cuGraphInstantiateWithFlags");
CUresult sim_cuGraphExecDestroy(CUgraphExec e) SIM_ABI("cuGraphExecDestroy");
CUresult sim_cuGraphLaunch(CUgraphExec e, CUstream s) SIM_ABI("cuGraphLaunch");
CUresult sim_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) SIM_ABI("cuDeviceGetAttribute");
CUresult sim_cuDeviceTotalMem(size_t *bytes, CUdevice dev) SIM_ABI("cuDeviceTotalMem_v2");
CUresult sim_cuMemGetInfo(size_t *free_bytes, size_t *total) SIM_ABI("cuMemGetInfo_v2");
CUresult sim_cuMemsetD16(CUdeviceptr dptr, unsigned short us, size_t n) SIM_ABI("cuMemsetD16_v2");
CUresult sim_cuMemsetD32(CUdeviceptr dptr, unsigned int ui, size_t n) SIM_ABI("cuMemsetD32_v2");
CUresult sim_cuMemsetD8Async(CUdeviceptr dptr, unsigned char uc, size_t n, CUstream s) SIM_ABI("cuMemsetD8Async");
CUresult sim_cuMemsetD16Async(CUdeviceptr dptr, unsigned short us, size_t n, CUstream s) SIM_ABI("cuMemsetD16Async");
CUresult sim_cuMemsetD32Async(CUdeviceptr dptr, unsigned int ui, size_t n, CUstream s) SIM_ABI("cuMemsetD32Async");
CUresult sim_cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n) SIM_ABI("cuMemcpyDtoD_v2");
CUresult sim_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) SIM_ABI("cuMemcpyHtoDAsync_v2");
CUresult sim_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) SIM_ABI("cuMemcpyDtoHAsync_v2");
CUresult sim_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) SIM_ABI("cuMemcpyDtoDAsync_v2");
CUresult sim_cuMemcpy2D(const CUDA_MEMCPY2D *p) SIM_ABI("cuMemcpy2D_v2");
CUresult sim_cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream s) SIM_ABI("cuMemcpy2DAsync_v2");
CUresult sim_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) SIM_ABI("cuLaunchKernelEx");
CUresult sim_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user) SIM_ABI("cuLaunchHostFunc");
CUresult sim_cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *user, unsigned int flags) SIM_ABI("cuStreamAddCallback");

/* The per-thread default stream forms (_ptsz: a NULL stream is CU_STREAM_PER_THREAD; _ptds:
 * the synchronous calls, which behave the same here), as a program built with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM calls them. */
CUresult sim_cuEventRecord_ptsz(CUevent ev, CUstream s) SIM_ABI("cuEventRecord_ptsz");
CUresult sim_cuStreamSynchronize_ptsz(CUstream s) SIM_ABI("cuStreamSynchronize_ptsz");
CUresult sim_cuStreamQuery_ptsz(CUstream s) SIM_ABI("cuStreamQuery_ptsz");
CUresult sim_cuStreamWaitEvent_ptsz(CUstream s, CUevent ev, unsigned int flags) SIM_ABI("cuStreamWaitEvent_ptsz");
CUresult sim_cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) SIM_ABI("cuGraphLaunch_ptsz");
CUresult sim_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params, void **extra) SIM_ABI("cuLaunchKernel_ptsz");
CUresult sim_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) SIM_ABI("cuLaunchKernelEx_ptsz");
CUresult sim_cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *user) SIM_ABI("cuLaunchHostFunc_ptsz");
CUresult sim_cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *user, unsigned int flags) SIM_ABI("cuStreamAddCallback_ptsz");
CUresult sim_cuMemsetD8Async_ptsz(CUdeviceptr dptr, unsigned char uc, size_t n, CUstream s) SIM_ABI("cuMemsetD8Async_ptsz");
CUresult sim_cuMemsetD16Async_ptsz(CUdeviceptr dptr, unsigned short us, size_t n, CUstream s) SIM_ABI("cuMemsetD16Async_ptsz");
CUresult sim_cuMemsetD32Async_ptsz(CUdeviceptr dptr, unsigned int ui, size_t n, CUstream s) SIM_ABI("cuMemsetD32Async_ptsz");
CUresult sim_cuMemcpyHtoDAsync_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s) SIM_ABI("cuMemcpyHtoDAsync_v2_ptsz");
CUresult sim_cuMemcpyDtoHAsync_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s) SIM_ABI("cuMemcpyDtoHAsync_v2_ptsz");
CUresult sim_cuMemcpyDtoDAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) SIM_ABI("cuMemcpyDtoDAsync_v2_ptsz");
CUresult sim_cuMemcpy2DAsync_ptsz(const CUDA_MEMCPY2D *p, CUstream s) SIM_ABI("cuMemcpy2DAsync_v2_ptsz");
CUresult sim_cuMemsetD8_ptds(CUdeviceptr dptr, unsigned char uc, size_t n) SIM_ABI("cuMemsetD8_v2_ptds");
CUresult sim_cuMemsetD16_ptds(CUdeviceptr dptr, unsigned short us, size_t n) SIM_ABI("cuMemsetD16_v2_ptds");
CUresult sim_cuMemsetD32_ptds(CUdeviceptr dptr, unsigned int ui, size_t n) SIM_ABI("cuMemsetD32_v2_ptds");
CUresult sim_cuMemcpyHtoD_ptds(CUdeviceptr dst, const void *src, size_t n) SIM_ABI("cuMemcpyHtoD_v2_ptds");
CUresult sim_cuMemcpyDtoH_ptds(void *dst, CUdeviceptr src, size_t n) SIM_ABI("cuMemcpyDtoH_v2_ptds");
CUresult sim_cuMemcpyDtoD_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) SIM_ABI("cuMemcpyDtoD_v2_ptds");
CUresult sim_cuMemcpy2D_ptds(const CUDA_MEMCPY2D *p) SIM_ABI("cuMemcpy2D_v2_ptds");


#endif
