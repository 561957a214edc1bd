/* SPDX-License-Identifier: MIT */
/*
 * cudasim.c - a simulated CUDA driver for running cuctx's tests without a GPU.
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
 * Layout: the entry-point table and state, objects and their tables, the
 * call bookkeeping (log, counters, fault plans, misuses), the entry points by
 * area, cuGetProcAddress, and the cusim_* control API.
 */
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
	X(cuGraphInstantiateWithFlags) X(cuGraphExecDestroy) X(cuGraphLaunch)

/* Only # and ## touch the names, so cuda.h's renames (cuCtxCreate -> _v4) never expand here. */
#define SIM_ENUM(n) F_##n,
#define SIM_NAME(n) #n,
enum fn { SIM_FUNCTIONS(SIM_ENUM) F_COUNT };
static const char *const fn_names[F_COUNT] = { SIM_FUNCTIONS(SIM_NAME) };

/* ---------------------------------------------------------------------------
 * Objects.  Every handle value the simulator ever gave out has a record, live
 * or dead; a dead record is the graveyard entry that says why it died, until
 * recycling hands its value to a new object.
 */
enum kind {
	K_NONE, K_CTX, K_EVENT, K_STREAM, K_MODULE, K_FUNC, K_MEM, K_HOST,
	K_GRAPH, K_NODE, K_EXEC, K_COUNT
};

static const char *const kind_names[K_COUNT] = {
	"none", "context", "event", "stream", "module", "function", "mem",
	"host_mem", "graph", "graph node", "graph_exec",
};

/* Error for a handle that was once live (the real driver's answer where it has one). */
static const CUresult dead_rc[K_COUNT] = {
	[K_CTX] = CUDA_ERROR_INVALID_CONTEXT,
	[K_EVENT] = CUDA_ERROR_CONTEXT_IS_DESTROYED,
	[K_STREAM] = CUDA_ERROR_CONTEXT_IS_DESTROYED,
	[K_MODULE] = CUDA_ERROR_INVALID_HANDLE,
	[K_FUNC] = CUDA_ERROR_INVALID_HANDLE,
	[K_MEM] = CUDA_ERROR_INVALID_VALUE,
	[K_HOST] = CUDA_ERROR_INVALID_VALUE,
	[K_GRAPH] = CUDA_ERROR_INVALID_HANDLE,
	[K_NODE] = CUDA_ERROR_INVALID_HANDLE,
	[K_EXEC] = CUDA_ERROR_INVALID_HANDLE,
};

/* Error for a value the simulator never gave out. */
static const CUresult garbage_rc[K_COUNT] = {
	[K_CTX] = CUDA_ERROR_INVALID_CONTEXT,
	[K_EVENT] = CUDA_ERROR_INVALID_HANDLE,
	[K_STREAM] = CUDA_ERROR_INVALID_HANDLE,
	[K_MODULE] = CUDA_ERROR_INVALID_HANDLE,
	[K_FUNC] = CUDA_ERROR_INVALID_HANDLE,
	[K_MEM] = CUDA_ERROR_INVALID_VALUE,
	[K_HOST] = CUDA_ERROR_INVALID_VALUE,
	[K_GRAPH] = CUDA_ERROR_INVALID_HANDLE,
	[K_NODE] = CUDA_ERROR_INVALID_HANDLE,
	[K_EXEC] = CUDA_ERROR_INVALID_HANDLE,
};

/* Kinds whose freed values new objects take back; graphs are not context-bound, so their reuse proves nothing. */
static const bool recyclable[K_COUNT] = {
	[K_CTX] = true, [K_EVENT] = true, [K_STREAM] = true, [K_MODULE] = true,
	[K_MEM] = true, [K_HOST] = true, [K_EXEC] = true,
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

static struct {
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
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.recycling = true,
	.epoch = 1,
	.next_device_addr = SIM_DEVICE_BASE,
};

/* Each thread's context stack; a stale epoch means cusim_reset emptied it. */
static __thread struct {
	uint64_t epoch;
	int depth;
	uint64_t v[SIM_STACK_MAX];
	unsigned long long id[SIM_STACK_MAX];   /* v[i]'s context id when bound (cusim_set_stale_levels) */
} T;

static void stack_sync(void)
{
	if (T.epoch != S.epoch) {
		T.epoch = S.epoch;
		T.depth = 0;
	}
}

static uint64_t stack_top(void)
{
	stack_sync();
	return T.depth ? T.v[T.depth - 1] : 0;
}

/* Allocation failure inside a test double is not worth recovering from. */
static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fputs("cudasim: out of memory\n", stderr);
		abort();
	}
	return q;
}

static void vs_push(struct value_stack *s, uint64_t v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = xrealloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = v;
}

/* ---------------------------------------------------------------------------
 * The table of records, keyed by (kind, value): host pointers and fake device
 * addresses may coincide, so the kind is part of the key.
 */
static size_t slot(enum kind k, uint64_t v)
{
	uint64_t h = (v ^ ((uint64_t)k << 58)) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 24) & (S.nbuckets - 1);
}

static struct obj *find(enum kind k, uint64_t v)
{
	if (!S.nbuckets)
		return NULL;
	for (struct obj *o = S.buckets[slot(k, v)]; o; o = o->hnext)
		if (o->kind == k && o->value == v)
			return o;
	return NULL;
}

static void table_insert(struct obj *o)
{
	if (S.nobjs >= S.nbuckets) {
		size_t old = S.nbuckets;
		struct obj **ob = S.buckets;
		S.nbuckets = old ? 2 * old : 1024;
		S.buckets = calloc(S.nbuckets, sizeof *S.buckets);
		if (!S.buckets) {
			fputs("cudasim: out of memory\n", stderr);
			abort();
		}
		for (size_t i = 0; i < old; i++) {
			for (struct obj *p = ob[i], *next; p; p = next) {
				next = p->hnext;
				size_t s = slot(p->kind, p->value);
				p->hnext = S.buckets[s];
				S.buckets[s] = p;
			}
		}
		free(ob);
	}
	size_t s = slot(o->kind, o->value);
	o->hnext = S.buckets[s];
	S.buckets[s] = o;
	S.nobjs++;
}

static void kid_attach(struct obj *owner, struct obj *o)
{
	o->owner = owner;
	o->sib_next = NULL;
	o->sib_prev = owner ? owner->kid_last : NULL;
	if (!owner)
		return;
	if (owner->kid_last)
		owner->kid_last->sib_next = o;
	else
		owner->kid_first = o;
	owner->kid_last = o;
}

static void kid_detach(struct obj *o)
{
	struct obj *owner = o->owner;
	if (!owner)
		return;
	if (o->sib_prev)
		o->sib_prev->sib_next = o->sib_next;
	else
		owner->kid_first = o->sib_next;
	if (o->sib_next)
		o->sib_next->sib_prev = o->sib_prev;
	else
		owner->kid_last = o->sib_prev;
	o->sib_prev = o->sib_next = NULL;
}

static void mem_list_add(struct obj *o)
{
	o->mem_prev = NULL;
	o->mem_next = S.mem_list;
	if (S.mem_list)
		S.mem_list->mem_prev = o;
	S.mem_list = o;
}

static void mem_list_remove(struct obj *o)
{
	if (o->mem_prev)
		o->mem_prev->mem_next = o->mem_next;
	else
		S.mem_list = o->mem_next;
	if (o->mem_next)
		o->mem_next->mem_prev = o->mem_prev;
	o->mem_prev = o->mem_next = NULL;
}

static void count_live(struct obj *o, int delta)
{
	if (o->primary)
		S.live_primary += (size_t)delta;
	else
		S.live[o->kind] += (size_t)delta;
}

static uint64_t fresh_value(enum kind k)
{
	return ((uint64_t)k << 36) + ++S.serial[k] * SIM_HANDLE_STRIDE;
}

/* The most recently freed value of kind k, if recycling may hand it out for `want` bytes. */
static struct obj *take_recycled(enum kind k, size_t want)
{
	struct value_stack *fs = &S.freed[k];
	if (!S.recycling || !recyclable[k] || !fs->n)
		return NULL;
	struct obj *o = find(k, fs->v[fs->n - 1]);
	if (!o || o->live)
		return NULL;
	if ((k == K_MEM || k == K_HOST) && o->span < want)
		return NULL;
	fs->n--;
	return o;
}

/*
 * Makes a live object of kind k owned by `owner`.  Device memory gets a fake
 * address with a real backing buffer; host memory is a real block the caller
 * writes to.  Returns NULL when the backing store cannot be had.
 */
static struct obj *obj_new(enum kind k, struct obj *owner, size_t want)
{
	struct obj *o = take_recycled(k, want);
	bool reused = o != NULL;
	unsigned char *hostbuf = NULL;

	if (k == K_MEM) {
		unsigned char *b = calloc(1, want);
		if (!b) {
			if (reused)
				vs_push(&S.freed[k], o->value);
			return NULL;
		}
		if (!reused) {
			o = xrealloc(NULL, sizeof *o);
			memset(o, 0, sizeof *o);
			o->kind = k;
			o->value = S.next_device_addr;
			o->span = (want + SIM_DEVICE_GRAIN - 1) / SIM_DEVICE_GRAIN * SIM_DEVICE_GRAIN;
			S.next_device_addr += o->span;
			table_insert(o);
		}
		o->buf = b;
		mem_list_add(o);
	} else if (k == K_HOST) {
		if (!reused) {
			hostbuf = malloc(want);
			if (!hostbuf)
				return NULL;
			o = xrealloc(NULL, sizeof *o);
			memset(o, 0, sizeof *o);
			o->kind = k;
			o->value = H(hostbuf);
			o->buf = hostbuf;
			o->span = want;
			table_insert(o);
		}
	} else if (!reused) {
		o = xrealloc(NULL, sizeof *o);
		memset(o, 0, sizeof *o);
		o->kind = k;
		o->value = fresh_value(k);
		table_insert(o);
	}

	o->live = true;
	o->primary = false;
	o->why = NULL;
	o->size = want;
	o->flags = 0;
	o->priority = 0;
	o->recorded = false;
	o->stamp_ms = 0;
	o->kid_first = o->kid_last = NULL;
	kid_attach(owner, o);
	count_live(o, +1);
	return o;
}

/* Why a child dies with the object that owns it. */
static const char *orphan_reason(const struct obj *owner)
{
	switch (owner->kind) {
	case K_CTX:
		return owner->primary ? "its primary context was released or reset"
				      : "its context was destroyed";
	case K_MODULE:
		return "its module was unloaded";
	case K_GRAPH:
		return "its graph was destroyed";
	default:
		return "its owner died";
	}
}

/* Ends an object's life and its children's, newest child first, so their freed values stack oldest-on-top. */
static void obj_kill(struct obj *o, const char *why)
{
	while (o->kid_last)
		obj_kill(o->kid_last, orphan_reason(o));
	kid_detach(o);
	o->owner = NULL;
	o->live = false;
	o->why = why;
	count_live(o, -1);
	if (o->kind == K_MEM) {
		mem_list_remove(o);
		free(o->buf);
		o->buf = NULL;
	}
	if (o->kind == K_FUNC) {
		free(o->name);
		o->name = NULL;
	}
	/* Host blocks stay allocated (recycled, or quarantined) so malloc cannot hand their address out again. */
	if (recyclable[o->kind] && S.recycling && !o->primary)
		vs_push(&S.freed[o->kind], o->value);
}

/* The live device allocation holding [p, p+n), or NULL. */
static struct obj *mem_containing(uint64_t p, size_t n)
{
	for (struct obj *o = S.mem_list; o; o = o->mem_next)
		if (p >= o->value && p - o->value <= o->size && n <= o->size - (p - o->value))
			return o;
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------------------
 * Call bookkeeping.  enter() takes the lock, counts the call and applies a
 * fault plan or the not-initialised rule; leave() logs it and unlocks.
 */
/* What a call was asked beyond its main handle; cudasim.h lists each entry point's. */
struct args {
	unsigned long long flags;
	long long arg;
	uint64_t handle2;
};

#define ARGS(...) ((struct args){ __VA_ARGS__ })

struct call {
	enum fn fn;
	uint64_t handle;
	uint64_t ctx;
	CUresult rc;
	struct args a;
};

static void log_append(const struct call *c)
{
	struct cusim_call rec = { fn_names[c->fn], c->handle, c->ctx, c->rc, c->a.flags, c->a.arg, c->a.handle2 };
	if (S.log_len < S.log_cap) {
		S.log[(S.log_start + S.log_len) % S.log_cap] = rec;
		S.log_len++;
		return;
	}
	if (S.log_cap < SIM_LOG_MAX) {
		size_t cap = S.log_cap ? 2 * S.log_cap : 4096;
		if (cap > SIM_LOG_MAX)
			cap = SIM_LOG_MAX;
		S.log = xrealloc(S.log, cap * sizeof *S.log);
		S.log_cap = cap;
		S.log[S.log_len++] = rec;
		return;
	}
	/* Full: drop the oldest record, keeping the last SIM_LOG_MAX. */
	S.log[S.log_start] = rec;
	S.log_start = (S.log_start + 1) % S.log_cap;
}

static void misuse(const struct call *c, uint64_t handle, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void misuse(const struct call *c, uint64_t handle, const char *fmt, ...)
{
	S.misuse_total++;
	if (S.misuse_kept >= SIM_MISUSE_MAX)
		return;
	char detail[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	char *text = NULL;
	if (asprintf(&text, "%s(0x%llx): %s", fn_names[c->fn], (unsigned long long)handle, detail) < 0)
		return;
	if (S.misuse_kept == S.misuse_cap) {
		S.misuse_cap = S.misuse_cap ? 2 * S.misuse_cap : 16;
		S.misuse = xrealloc(S.misuse, S.misuse_cap * sizeof *S.misuse);
	}
	S.misuse[S.misuse_kept++] = text;
}

static void not_sleeping(void *unused)
{
	(void)unused;
	__atomic_sub_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
}

/* Sleeps without the lock, so other threads keep calling meanwhile and a cancel can land here. */
static void delay(enum fn fn)
{
	unsigned int us = __atomic_load_n(&S.delay_us[fn], __ATOMIC_RELAXED);
	if (!us)
		return;
	struct timespec left = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };
	__atomic_add_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
	pthread_cleanup_push(not_sleeping, NULL);      /* a cancel in the sleep still counts it out */
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		continue;
	pthread_cleanup_pop(1);
}

/* Returns true when the call must stop now with c->rc (everything fails, a
 * fault plan fired, or cuInit has not run); the arguments are logged either way. */
static bool enter_as(struct call *c, enum fn fn, uint64_t handle, bool needs_init, struct args a)
{
	delay(fn);
	pthread_mutex_lock(&S.lock);
	c->fn = fn;
	c->handle = handle;
	c->a = a;
	c->ctx = stack_top();
	c->rc = CUDA_SUCCESS;
	unsigned long n = ++S.calls[fn];
	if (S.fail_all && fn != F_cuGetProcAddress) {
		c->rc = S.fail_all;
		return true;
	}
	for (size_t i = 0; i < S.nplans; i++) {
		if (S.plans[i].fn == fn && S.plans[i].at == n) {
			c->rc = S.plans[i].rc;
			S.plans[i] = S.plans[--S.nplans];
			return true;
		}
	}
	if (needs_init && !S.initialised) {
		c->rc = CUDA_ERROR_NOT_INITIALIZED;
		return true;
	}
	return false;
}

static bool enter(struct call *c, enum fn fn, uint64_t handle)
{
	return enter_as(c, fn, handle, true, ARGS(0));
}

/* enter() for an entry point whose arguments the log keeps. */
static bool enter_with(struct call *c, enum fn fn, uint64_t handle, struct args a)
{
	return enter_as(c, fn, handle, true, a);
}

static CUresult leave(struct call *c, CUresult rc)
{
	c->rc = rc;
	log_append(c);
	pthread_mutex_unlock(&S.lock);
	return rc;
}

/* Looks up a live object a caller named; anything else is a misuse answered with the kind's error. */
static CUresult need_live(const struct call *c, enum kind k, uint64_t v, struct obj **out)
{
	struct obj *o = find(k, v);
	if (o && o->live) {
		*out = o;
		return CUDA_SUCCESS;
	}
	if (o) {
		misuse(c, v, "%s not live: %s", kind_names[k], o->why);
		return dead_rc[k];
	}
	misuse(c, v, "%s not live: never created", kind_names[k]);
	return garbage_rc[k];
}

/* The calling thread's current context: 201 with none, 709 when it has been destroyed. */
static CUresult need_current(struct obj **out)
{
	uint64_t top = stack_top();
	if (!top)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct obj *o = find(K_CTX, top);
	if (!o || !o->live || (S.stale_levels && T.id[T.depth - 1] != o->ctx_id))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*out = o;
	return CUDA_SUCCESS;
}

static bool is_default_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The context a stream argument runs in: the default stream means the current context's. */
static CUresult stream_context(const struct call *c, CUstream s, struct obj **ctx)
{
	if (is_default_stream(s))
		return need_current(ctx);
	struct obj *so;
	CUresult rc = need_live(c, K_STREAM, H(s), &so);
	if (rc == CUDA_SUCCESS)
		*ctx = so->owner;
	return rc;
}

/* Work on stream s for object o (what: "event recorded", "graph exec
 * launched") must stay in o's context; anything else is a misuse. */
static CUresult need_stream_of(const struct call *c, const struct obj *o, CUstream s, const char *what)
{
	struct obj *sctx;
	CUresult rc = stream_context(c, s, &sctx);
	if (rc)
		return rc;
	if (sctx != o->owner) {
		misuse(c, o->value, is_default_stream(s) ? "%s on the default stream of a context other than its own"
							  : "%s on a stream of another context", what);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}

static bool valid_device(CUdevice dev)
{
	return dev >= 0 && dev < S.devices;
}

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

/* --- initialisation and devices ------------------------------------------ */

static int devices_from_env(void)
{
	const char *s = getenv("CUSIM_DEVICES");
	if (!s || !*s)
		return SIM_DEFAULT_DEVICES;
	char *end;
	long n = strtol(s, &end, 10);
	if (*end || n < 0)
		return SIM_DEFAULT_DEVICES;
	return n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)n;
}

CUresult sim_cuInit(unsigned int flags)
{
	struct call c;
	if (enter_as(&c, F_cuInit, 0, false, ARGS(.flags = flags)))
		return leave(&c, c.rc);
	if (flags != 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!S.initialised) {
		S.devices = devices_from_env();
		if (S.devices == 0)
			return leave(&c, CUDA_ERROR_NO_DEVICE);
		S.initialised = true;
	}
	return leave(&c, CUDA_SUCCESS);
}

/* Like the real driver, the version query needs no cuInit. */
CUresult sim_cuDriverGetVersion(int *version)
{
	struct call c;
	if (enter_as(&c, F_cuDriverGetVersion, 0, false, ARGS(0)))
		return leave(&c, c.rc);
	if (!version)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	*version = SIM_DRIVER_VERSION;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGet(CUdevice *dev, int ordinal)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGet, 0, ARGS(.arg = ordinal)))
		return leave(&c, c.rc);
	if (!dev)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(ordinal))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGetCount(int *count)
{
	struct call c;
	if (enter(&c, F_cuDeviceGetCount, 0))
		return leave(&c, c.rc);
	if (!count)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	*count = S.devices;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGetName, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!name || len <= 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, (size_t)len, "cudasim device %d", dev);
	return leave(&c, CUDA_SUCCESS);
}

struct error_text {
	CUresult rc;
	const char *name;
	const char *text;
};

static const struct error_text error_texts[] = {
	{ CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
	{ CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library" },
	{ CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND", "file not found" },
	{ CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
	{ CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static const struct error_text *error_lookup(CUresult rc)
{
	for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
		if (error_texts[i].rc == rc)
			return &error_texts[i];
	return NULL;
}

/* The error-text calls need no cuInit, so a caller can describe cuInit's own failure. */
CUresult sim_cuGetErrorName(CUresult error, const char **str)
{
	struct call c;
	if (enter_as(&c, F_cuGetErrorName, 0, false, ARGS(.arg = error)))
		return leave(&c, c.rc);
	if (!str)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct error_text *e = error_lookup(error);
	*str = e ? e->name : NULL;
	return leave(&c, e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

CUresult sim_cuGetErrorString(CUresult error, const char **str)
{
	struct call c;
	if (enter_as(&c, F_cuGetErrorString, 0, false, ARGS(.arg = error)))
		return leave(&c, c.rc);
	if (!str)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct error_text *e = error_lookup(error);
	*str = e ? e->text : NULL;
	return leave(&c, e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* --- contexts -------------------------------------------------------------- */

#define SIM_CTX_FLAGS_MASK 0xFFu

CUresult sim_cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuCtxCreate, 0, ARGS(.flags = flags, .arg = dev)))
		return leave(&c, c.rc);
	if (!pctx || (flags & ~SIM_CTX_FLAGS_MASK))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	stack_sync();
	if (T.depth == SIM_STACK_MAX)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *o = obj_new(K_CTX, NULL, 0);
	o->device = dev;
	o->flags = flags;
	o->ctx_id = ++S.last_ctx_id;
	T.id[T.depth] = o->ctx_id;
	T.v[T.depth++] = o->value;
	*pctx = (CUcontext)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxDestroy(CUcontext ctx)
{
	struct call c;
	if (enter(&c, F_cuCtxDestroy, H(ctx)))
		return leave(&c, c.rc);
	if (!ctx)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_CTX, H(ctx), &o);
	if (rc)
		return leave(&c, rc);
	if (o->primary) {
		misuse(&c, o->value, "context is a primary context: release it, never destroy it");
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	obj_kill(o, "already destroyed");
	/* Destroying this thread's current context pops it; anywhere else it stays, stale. */
	if (stack_top() == H(ctx))
		T.depth--;
	return leave(&c, CUDA_SUCCESS);
}

/* A context a caller hands over to become current must be live: the real driver accepts a dead one and crashes later. */
static CUresult need_live_context_to_bind(const struct call *c, CUcontext ctx, struct obj **out)
{
	struct obj *o = find(K_CTX, H(ctx));
	if (o && o->live) {
		*out = o;
		return CUDA_SUCCESS;
	}
	misuse(c, H(ctx), "context not live: %s (binding it poisons the thread's context stack)",
	       o ? o->why : "never created");
	return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult sim_cuCtxPushCurrent(CUcontext ctx)
{
	struct call c;
	if (enter(&c, F_cuCtxPushCurrent, H(ctx)))
		return leave(&c, c.rc);
	if (!ctx)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live_context_to_bind(&c, ctx, &o);
	if (rc)
		return leave(&c, rc);
	stack_sync();
	if (T.depth == SIM_STACK_MAX)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	T.id[T.depth] = o->ctx_id;
	T.v[T.depth++] = o->value;
	return leave(&c, CUDA_SUCCESS);
}

/* Popping a context that died on the stack succeeds and removes it, as the real driver was measured to do. */
CUresult sim_cuCtxPopCurrent(CUcontext *pctx)
{
	struct call c;
	if (enter(&c, F_cuCtxPopCurrent, 0))
		return leave(&c, c.rc);
	stack_sync();
	if (T.depth == 0)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	uint64_t top = T.v[--T.depth];
	c.handle = top;
	if (pctx)
		*pctx = (CUcontext)(uintptr_t)top;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxSetCurrent(CUcontext ctx)
{
	struct call c;
	if (enter(&c, F_cuCtxSetCurrent, H(ctx)))
		return leave(&c, c.rc);
	stack_sync();
	if (!ctx) {
		if (T.depth)
			T.depth--;
		return leave(&c, CUDA_SUCCESS);
	}
	struct obj *o;
	CUresult rc = need_live_context_to_bind(&c, ctx, &o);
	if (rc)
		return leave(&c, rc);
	if (T.depth) {
		T.id[T.depth - 1] = o->ctx_id;
		T.v[T.depth - 1] = o->value;
	} else {
		T.id[T.depth] = o->ctx_id;
		T.v[T.depth++] = o->value;
	}
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxGetCurrent(CUcontext *pctx)
{
	struct call c;
	if (enter(&c, F_cuCtxGetCurrent, 0))
		return leave(&c, c.rc);
	if (!pctx)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	c.handle = stack_top();
	*pctx = (CUcontext)(uintptr_t)c.handle;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxGetDevice(CUdevice *dev)
{
	struct call c;
	if (enter(&c, F_cuCtxGetDevice, 0))
		return leave(&c, c.rc);
	if (!dev)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	*dev = cur->device;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxSynchronize(void)
{
	struct call c;
	if (enter(&c, F_cuCtxSynchronize, 0))
		return leave(&c, c.rc);
	struct obj *cur;
	return leave(&c, need_current(&cur));
}

CUresult sim_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	struct call c;
	if (enter(&c, F_cuCtxGetApiVersion, H(ctx)))
		return leave(&c, c.rc);
	if (!version)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc;
	if (ctx) {
		/* The real driver answers 201 for a destroyed context without harm:
		 * it is the safe way to ask whether a context is alive, not a misuse. */
		o = find(K_CTX, H(ctx));
		rc = o && o->live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	} else {
		rc = need_current(&o);
	}
	if (rc)
		return leave(&c, rc);
	*version = 3020;
	return leave(&c, CUDA_SUCCESS);
}

/* Like cuCtxGetApiVersion, asking about a dead context is safe (709); only a value never given out is a misuse. */
CUresult sim_cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	struct call c;
	bool stop = enter(&c, F_cuCtxGetId, H(ctx));
	if (!ctx)
		c.handle = c.ctx;
	if (stop)
		return leave(&c, c.rc);
	if (!id)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = CUDA_SUCCESS;
	if (!ctx) {
		rc = need_current(&o);
	} else {
		o = find(K_CTX, H(ctx));
		if (!o) {
			misuse(&c, H(ctx), "context not live: never created");
			rc = CUDA_ERROR_INVALID_CONTEXT;
		} else if (!o->live) {
			rc = CUDA_ERROR_CONTEXT_IS_DESTROYED;
		}
	}
	if (rc)
		return leave(&c, rc);
	*id = o->ctx_id;
	return leave(&c, CUDA_SUCCESS);
}

/* --- primary contexts ------------------------------------------------------ */

/* A device's primary context keeps one value for the life of the process, as the real driver's does. */
static struct obj *primary_of(CUdevice dev)
{
	struct obj *o = S.primary[dev];
	if (o)
		return o;
	o = xrealloc(NULL, sizeof *o);
	memset(o, 0, sizeof *o);
	o->kind = K_CTX;
	o->primary = true;
	o->device = dev;
	o->value = ((uint64_t)K_CTX << 36) + SIM_PRIMARY_OFFSET + (uint64_t)dev * 0x1000;
	o->why = "primary context is inactive";
	table_insert(o);
	S.primary[dev] = o;
	return o;
}

/* One more retain; an inactive primary becomes a new context at the same address, so it gets a new id. */
static struct obj *primary_retain(CUdevice dev)
{
	struct obj *o = primary_of(dev);
	if (!o->live) {
		o->live = true;
		o->why = NULL;
		o->ctx_id = ++S.last_ctx_id;
		count_live(o, +1);
	}
	S.primary_refs[dev]++;
	return o;
}

/* One retain fewer, false if there was none; the last deactivates the primary unless a reset already did. */
static bool primary_release(CUdevice dev)
{
	if (S.primary_refs[dev] == 0)
		return false;
	struct obj *o = primary_of(dev);
	if (--S.primary_refs[dev] == 0 && o->live)
		obj_kill(o, "primary context was released (inactive)");
	return true;
}

CUresult sim_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDevicePrimaryCtxRetain, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!pctx)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *o = primary_retain(dev);
	*pctx = (CUcontext)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDevicePrimaryCtxRelease, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	c.handle = primary_of(dev)->value;
	if (!primary_release(dev)) {
		misuse(&c, c.handle, "primary context of device %d released more often than retained", dev);
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct call c;
	if (enter_with(&c, F_cuDevicePrimaryCtxGetState, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!flags || !active)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *o = primary_of(dev);
	c.handle = o->value;
	*flags = o->flags;
	*active = o->live;
	return leave(&c, CUDA_SUCCESS);
}

/* The real driver's reset ends the context but keeps every retain: each still needs its release. */
CUresult sim_cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct call c;
	if (enter_with(&c, F_cuDevicePrimaryCtxReset, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *o = primary_of(dev);
	c.handle = o->value;
	if (o->live)
		obj_kill(o, "primary context was reset (inactive)");
	return leave(&c, CUDA_SUCCESS);
}

/* --- events ---------------------------------------------------------------- */

#define SIM_EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

CUresult sim_cuEventCreate(CUevent *ev, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuEventCreate, 0, ARGS(.flags = flags)))
		return leave(&c, c.rc);
	if (!ev || (flags & ~(unsigned int)SIM_EVENT_FLAGS))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_EVENT, cur, 0);
	o->flags = flags;
	*ev = (CUevent)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

/* The destroys that differ only in their entry point and kind: a NULL (or
 * default-stream) handle is an error, a dead one a misuse, a live one dies. */
static CUresult destroy_plain(enum fn fn, enum kind k, uint64_t h, bool null_handle)
{
	struct call c;
	if (enter(&c, fn, h))
		return leave(&c, c.rc);
	if (null_handle)
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	struct obj *o;
	CUresult rc = need_live(&c, k, h, &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already destroyed");
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuEventDestroy(CUevent ev)
{
	return destroy_plain(F_cuEventDestroy, K_EVENT, H(ev), !ev);
}

CUresult sim_cuEventRecord(CUevent ev, CUstream s)
{
	struct call c;
	if (enter_with(&c, F_cuEventRecord, H(ev), ARGS(.handle2 = H(s))))
		return leave(&c, c.rc);
	struct obj *o;
	CUresult rc = need_live(&c, K_EVENT, H(ev), &o);
	if (rc)
		return leave(&c, rc);
	rc = need_stream_of(&c, o, s, "event recorded");
	if (rc)
		return leave(&c, rc);
	o->recorded = true;
	o->stamp_ms = now_ms();
	return leave(&c, CUDA_SUCCESS);
}

/* Work completes the moment it is queued, so waiting and polling always succeed. */
CUresult sim_cuEventQuery(CUevent ev)
{
	struct call c;
	if (enter(&c, F_cuEventQuery, H(ev)))
		return leave(&c, c.rc);
	struct obj *o;
	return leave(&c, need_live(&c, K_EVENT, H(ev), &o));
}

CUresult sim_cuEventSynchronize(CUevent ev)
{
	struct call c;
	if (enter(&c, F_cuEventSynchronize, H(ev)))
		return leave(&c, c.rc);
	struct obj *o;
	return leave(&c, need_live(&c, K_EVENT, H(ev), &o));
}

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
	struct call c;
	if (enter_with(&c, F_cuEventElapsedTime, H(start), ARGS(.handle2 = H(end))))
		return leave(&c, c.rc);
	struct obj *a, *b;
	CUresult rc = need_live(&c, K_EVENT, H(start), &a);
	if (rc == CUDA_SUCCESS)
		rc = need_live(&c, K_EVENT, H(end), &b);
	if (rc)
		return leave(&c, rc);
	if (!ms)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* The real driver's answer for untimed or unrecorded events: an error, not a misuse. */
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	if (!a->recorded || !b->recorded)
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	*ms = (float)(b->stamp_ms - a->stamp_ms);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
	return elapsed(ms, start, end);
}

CUresult sim_cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
	return elapsed(ms, start, end);
}

/* --- streams --------------------------------------------------------------- */

static CUresult stream_create(enum fn fn, CUstream *ps, unsigned int flags, int priority)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.flags = flags, .arg = priority)))
		return leave(&c, c.rc);
	if (!ps || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	/* Out-of-range priorities are clamped into [greatest, least], as the real driver does. */
	if (priority > SIM_PRIO_LEAST)
		priority = SIM_PRIO_LEAST;
	if (priority < SIM_PRIO_GREATEST)
		priority = SIM_PRIO_GREATEST;
	struct obj *o = obj_new(K_STREAM, cur, 0);
	o->flags = flags;
	o->priority = priority;
	*ps = (CUstream)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuStreamCreate(CUstream *ps, unsigned int flags)
{
	return stream_create(F_cuStreamCreate, ps, flags, 0);
}

CUresult sim_cuStreamCreateWithPriority(CUstream *ps, unsigned int flags, int priority)
{
	return stream_create(F_cuStreamCreateWithPriority, ps, flags, priority);
}

CUresult sim_cuStreamDestroy(CUstream s)
{
	return destroy_plain(F_cuStreamDestroy, K_STREAM, H(s), is_default_stream(s));
}

CUresult sim_cuStreamSynchronize(CUstream s)
{
	struct call c;
	if (enter(&c, F_cuStreamSynchronize, H(s)))
		return leave(&c, c.rc);
	struct obj *ctx;
	return leave(&c, stream_context(&c, s, &ctx));
}

CUresult sim_cuStreamQuery(CUstream s)
{
	struct call c;
	if (enter(&c, F_cuStreamQuery, H(s)))
		return leave(&c, c.rc);
	struct obj *ctx;
	return leave(&c, stream_context(&c, s, &ctx));
}

/* Waiting on an event of another context or device is legal; only the flags are checked beyond liveness. */
CUresult sim_cuStreamWaitEvent(CUstream s, CUevent ev, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuStreamWaitEvent, H(s), ARGS(.flags = flags, .handle2 = H(ev))))
		return leave(&c, c.rc);
	if (flags != 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ctx, *e;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS)
		rc = need_live(&c, K_EVENT, H(ev), &e);
	return leave(&c, rc);
}

/* --- modules and launches --------------------------------------------------- */

static bool is_ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '$';
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

/* PTX is plain ASCII text; anything else (a cubin, a fatbin, garbage) is an image we cannot load. */
static bool is_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x7f || (ch < 0x20 && !is_space((char)ch)))
			return false;
	}
	return true;
}

/* Makes a module in the current context whose functions are the names after each ".entry". */
static CUresult module_from_text(struct call *c, struct obj *cur, const char *text, size_t n, CUmodule *pmod)
{
	if (!is_text(text, n))
		return CUDA_ERROR_INVALID_IMAGE;
	struct obj *mod = NULL;
	static const char key[] = ".entry";
	const size_t klen = sizeof key - 1;
	for (const char *p = text; (p = strstr(p, key)) != NULL; p += klen) {
		if ((p > text && !is_space(p[-1])) || !is_space(p[klen]))
			continue;
		const char *q = p + klen;
		while (is_space(*q))
			q++;
		const char *e = q;
		while (is_ident_char(*e))
			e++;
		if (e == q)
			continue;
		if (!mod)
			mod = obj_new(K_MODULE, cur, 0);
		struct obj *f = obj_new(K_FUNC, mod, 0);
		f->name = strndup(q, (size_t)(e - q));
		if (!f->name) {
			fputs("cudasim: out of memory\n", stderr);
			abort();
		}
	}
	if (!mod)
		return CUDA_ERROR_INVALID_IMAGE;
	*pmod = (CUmodule)(uintptr_t)mod->value;
	c->handle = mod->value;
	return CUDA_SUCCESS;
}

static CUresult read_file(const char *path, char **out, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			buf = xrealloc(buf, cap);
		}
		size_t got = fread(buf + len, 1, cap - len - 1, f);
		len += got;
		if (got == 0 || len > SIM_MAX_IMAGE)
			break;
	}
	bool failed = ferror(f) || len > SIM_MAX_IMAGE;
	fclose(f);
	if (failed) {
		free(buf);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	buf[len] = '\0';
	*out = buf;
	*n = len;
	return CUDA_SUCCESS;
}

CUresult sim_cuModuleLoad(CUmodule *pmod, const char *fname)
{
	struct call c;
	if (enter(&c, F_cuModuleLoad, 0))
		return leave(&c, c.rc);
	if (!pmod || !fname)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	char *text;
	size_t n;
	rc = read_file(fname, &text, &n);
	if (rc)
		return leave(&c, rc);
	rc = module_from_text(&c, cur, text, n, pmod);
	free(text);
	return leave(&c, rc);
}

CUresult sim_cuModuleLoadData(CUmodule *pmod, const void *image)
{
	struct call c;
	if (enter(&c, F_cuModuleLoadData, 0))
		return leave(&c, c.rc);
	if (!pmod || !image)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	const char *text = image;
	return leave(&c, module_from_text(&c, cur, text, strnlen(text, SIM_MAX_IMAGE), pmod));
}

CUresult sim_cuModuleUnload(CUmodule mod)
{
	struct call c;
	if (enter(&c, F_cuModuleUnload, H(mod)))
		return leave(&c, c.rc);
	if (!mod)
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	struct obj *o;
	CUresult rc = need_live(&c, K_MODULE, H(mod), &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already unloaded");
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuModuleGetFunction(CUfunction *pf, CUmodule mod, const char *name)
{
	struct call c;
	if (enter(&c, F_cuModuleGetFunction, H(mod)))
		return leave(&c, c.rc);
	if (!pf || !name)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *m;
	CUresult rc = need_live(&c, K_MODULE, H(mod), &m);
	if (rc)
		return leave(&c, rc);
	for (struct obj *f = m->kid_first; f; f = f->sib_next) {
		if (strcmp(f->name, name) == 0) {
			*pf = (CUfunction)(uintptr_t)f->value;
			return leave(&c, CUDA_SUCCESS);
		}
	}
	return leave(&c, CUDA_ERROR_NOT_FOUND);
}

CUresult sim_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
			    CUstream s, void **params, void **extra)
{
	struct call c;
	(void)shmem;
	(void)params;
	(void)extra;
	if (enter_with(&c, F_cuLaunchKernel, H(f), ARGS(.handle2 = H(s))))
		return leave(&c, c.rc);
	struct obj *fn, *cur, *sctx;
	CUresult rc = need_live(&c, K_FUNC, H(f), &fn);
	if (rc)
		return leave(&c, rc);
	rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	if (fn->owner->owner != cur) {
		misuse(&c, fn->value, "function's module belongs to another context than the current one");
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	rc = stream_context(&c, s, &sctx);
	if (rc)
		return leave(&c, rc);
	if (sctx != cur) {
		misuse(&c, H(s), "kernel launched on a stream of another context");
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	return leave(&c, CUDA_SUCCESS);
}

/* --- device and host memory ------------------------------------------------- */

CUresult sim_cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
	struct call c;
	if (enter_with(&c, F_cuMemAlloc, 0, ARGS(.arg = (long long)size)))
		return leave(&c, c.rc);
	if (!dptr || size == 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (size > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_MEM, cur, size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	*dptr = o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemFree(CUdeviceptr dptr)
{
	struct call c;
	if (enter(&c, F_cuMemFree, dptr))
		return leave(&c, c.rc);
	if (!dptr)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o = find(K_MEM, dptr);
	if (!o && mem_containing(dptr, 0)) {
		misuse(&c, dptr, "mem not live: points inside an allocation, not at its start");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	CUresult rc = need_live(&c, K_MEM, dptr, &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* Device ranges are checked against live allocations: the real driver's stale pointer hits another owner's memory. */
static CUresult device_range(const struct call *c, CUdeviceptr p, size_t n, unsigned char **where)
{
	struct obj *o = mem_containing(p, n);
	if (o) {
		*where = o->buf + (p - o->value);
		return CUDA_SUCCESS;
	}
	struct obj *dead = find(K_MEM, p);
	if (dead && !dead->live)
		misuse(c, p, "mem not live: %s", dead->why);
	else
		misuse(c, p, "device range of %zu bytes lies outside every live allocation", n);
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_cuMemsetD8(CUdeviceptr dptr, unsigned char uc, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemsetD8, dptr, ARGS(.flags = uc, .arg = (long long)n)))
		return leave(&c, c.rc);
	unsigned char *dst;
	CUresult rc = device_range(&c, dptr, n, &dst);
	if (rc)
		return leave(&c, rc);
	memset(dst, uc, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemcpyHtoD, dst, ARGS(.arg = (long long)n, .handle2 = H(src))))
		return leave(&c, c.rc);
	if (!src && n)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *d;
	CUresult rc = device_range(&c, dst, n, &d);
	if (rc)
		return leave(&c, rc);
	if (n)
		memcpy(d, src, n);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	struct call c;
	if (enter_with(&c, F_cuMemcpyDtoH, src, ARGS(.arg = (long long)n, .handle2 = H(dst))))
		return leave(&c, c.rc);
	if (!dst && n)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned char *s;
	CUresult rc = device_range(&c, src, n, &s);
	if (rc)
		return leave(&c, rc);
	if (n)
		memcpy(dst, s, n);
	return leave(&c, CUDA_SUCCESS);
}

#define SIM_HOST_FLAGS (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)

static CUresult host_alloc(enum fn fn, void **pp, size_t size, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.flags = flags, .arg = (long long)size)))
		return leave(&c, c.rc);
	if (!pp || size == 0 || (flags & ~(unsigned int)SIM_HOST_FLAGS))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (size > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *o = obj_new(K_HOST, cur, size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	o->flags = flags;
	*pp = o->buf;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemAllocHost(void **pp, size_t size)
{
	return host_alloc(F_cuMemAllocHost, pp, size, 0);
}

CUresult sim_cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	return host_alloc(F_cuMemHostAlloc, pp, size, flags);
}

CUresult sim_cuMemFreeHost(void *p)
{
	struct call c;
	if (enter(&c, F_cuMemFreeHost, H(p)))
		return leave(&c, c.rc);
	if (!p)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_HOST, H(p), &o);
	if (rc)
		return leave(&c, rc);
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

/* --- graphs ------------------------------------------------------------------ */

#define SIM_GRAPH_INSTANTIATE_FLAGS 0xFull

CUresult sim_cuGraphCreate(CUgraph *pg, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuGraphCreate, 0, ARGS(.flags = flags)))
		return leave(&c, c.rc);
	if (!pg || flags != 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o = obj_new(K_GRAPH, NULL, 0);
	*pg = (CUgraph)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGraphAddEmptyNode(CUgraphNode *pn, CUgraph g, const CUgraphNode *deps, size_t ndeps)
{
	struct call c;
	if (enter_with(&c, F_cuGraphAddEmptyNode, H(g), ARGS(.arg = (long long)ndeps)))
		return leave(&c, c.rc);
	if (!pn || (ndeps && !deps))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *go, *dep;
	CUresult rc = need_live(&c, K_GRAPH, H(g), &go);
	if (rc)
		return leave(&c, rc);
	for (size_t i = 0; i < ndeps; i++) {
		rc = need_live(&c, K_NODE, H(deps[i]), &dep);
		if (rc)
			return leave(&c, rc);
		if (dep->owner != go)
			return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	struct obj *n = obj_new(K_NODE, go, 0);
	*pn = (CUgraphNode)(uintptr_t)n->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGraphDestroy(CUgraph g)
{
	return destroy_plain(F_cuGraphDestroy, K_GRAPH, H(g), !g);
}

CUresult sim_cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags)
{
	struct call c;
	if (enter_with(&c, F_cuGraphInstantiateWithFlags, 0, ARGS(.flags = flags, .handle2 = H(g))))
		return leave(&c, c.rc);
	if (!pe || (flags & ~SIM_GRAPH_INSTANTIATE_FLAGS))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *go, *cur;
	CUresult rc = need_live(&c, K_GRAPH, H(g), &go);
	if (rc)
		return leave(&c, rc);
	rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	struct obj *e = obj_new(K_EXEC, cur, 0);
	*pe = (CUgraphExec)(uintptr_t)e->value;
	c.handle = e->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGraphExecDestroy(CUgraphExec e)
{
	return destroy_plain(F_cuGraphExecDestroy, K_EXEC, H(e), !e);
}

CUresult sim_cuGraphLaunch(CUgraphExec e, CUstream s)
{
	struct call c;
	if (enter_with(&c, F_cuGraphLaunch, H(e), ARGS(.handle2 = H(s))))
		return leave(&c, c.rc);
	struct obj *o;
	CUresult rc = need_live(&c, K_EXEC, H(e), &o);
	if (rc)
		return leave(&c, rc);
	return leave(&c, need_stream_of(&c, o, s, "graph exec launched"));
}

/* ---------------------------------------------------------------------------
 * ABI versions nobody should call: the 32-bit originals and the newer
 * signatures.  They are exported under their real symbol names too, so a
 * plain dlsym("cuMemAlloc") lands on one, as it would on the real driver.
 */
static CUresult unsupported(enum fn fn, const char *abi, int version)
{
	struct call c;
	if (enter_as(&c, fn, 0, false, ARGS(0)))
		return leave(&c, c.rc);
	misuse(&c, 0, "%s (ABI version %d) called through an unpinned/unsupported ABI version", abi, version);
	return leave(&c, CUDA_ERROR_NOT_SUPPORTED);
}

#define SIM_MARKERS(X) \
	X(cuCtxCreate, 2000, cuCtxCreate) X(cuCtxCreate, 11040, cuCtxCreate_v3) \
	X(cuCtxCreate, 12050, cuCtxCreate_v4) X(cuCtxDestroy, 2000, cuCtxDestroy) \
	X(cuCtxPushCurrent, 2000, cuCtxPushCurrent) X(cuCtxPopCurrent, 2000, cuCtxPopCurrent) \
	X(cuCtxGetDevice, 13000, cuCtxGetDevice_v2) X(cuCtxSynchronize, 13000, cuCtxSynchronize_v2) \
	X(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease) \
	X(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset) \
	X(cuEventDestroy, 2000, cuEventDestroy) X(cuStreamDestroy, 2000, cuStreamDestroy) \
	X(cuMemAlloc, 2000, cuMemAlloc) X(cuMemFree, 2000, cuMemFree) \
	X(cuMemAllocHost, 2000, cuMemAllocHost) X(cuMemsetD8, 2000, cuMemsetD8) \
	X(cuMemcpyHtoD, 2000, cuMemcpyHtoD) X(cuMemcpyDtoH, 2000, cuMemcpyDtoH)

#define SIM_MARKER_DEFINE(base, version, abi) \
	CUresult marker_##abi(void) SIM_ABI(#abi); \
	CUresult marker_##abi(void) { return unsupported(F_##base, #abi, version); }
SIM_MARKERS(SIM_MARKER_DEFINE)

/* ---------------------------------------------------------------------------
 * cuGetProcAddress: the entry with the largest ABI version not above the one
 * asked for.
 */
struct proc {
	const char *name;
	int version;
	void *fn;
};

#define SIM_PROC(name, version, fn) { #name, version, (void *)(fn) },
/* Stringified here, not passed on: a forwarded name would expand through cuda.h's renames. */
#define SIM_MARKER_PROC(base, version, abi) { #base, version, (void *)(marker_##abi) },

static const struct proc procs[] = {
	SIM_PROC(cuGetProcAddress, 11030, sim_cuGetProcAddress)
	SIM_PROC(cuGetProcAddress, 12000, sim_cuGetProcAddress_v2)
	SIM_PROC(cuInit, 2000, sim_cuInit)
	SIM_PROC(cuDriverGetVersion, 2020, sim_cuDriverGetVersion)
	SIM_PROC(cuDeviceGet, 2000, sim_cuDeviceGet)
	SIM_PROC(cuDeviceGetCount, 2000, sim_cuDeviceGetCount)
	SIM_PROC(cuDeviceGetName, 2000, sim_cuDeviceGetName)
	SIM_PROC(cuGetErrorName, 6000, sim_cuGetErrorName)
	SIM_PROC(cuGetErrorString, 6000, sim_cuGetErrorString)
	SIM_PROC(cuCtxCreate, 3020, sim_cuCtxCreate)
	SIM_PROC(cuCtxDestroy, 4000, sim_cuCtxDestroy)
	SIM_PROC(cuCtxPushCurrent, 4000, sim_cuCtxPushCurrent)
	SIM_PROC(cuCtxPopCurrent, 4000, sim_cuCtxPopCurrent)
	SIM_PROC(cuCtxSetCurrent, 4000, sim_cuCtxSetCurrent)
	SIM_PROC(cuCtxGetCurrent, 4000, sim_cuCtxGetCurrent)
	SIM_PROC(cuCtxGetDevice, 2000, sim_cuCtxGetDevice)
	SIM_PROC(cuCtxSynchronize, 2000, sim_cuCtxSynchronize)
	SIM_PROC(cuCtxGetApiVersion, 3020, sim_cuCtxGetApiVersion)
	SIM_PROC(cuCtxGetId, 12000, sim_cuCtxGetId)
	SIM_PROC(cuDevicePrimaryCtxRetain, 7000, sim_cuDevicePrimaryCtxRetain)
	SIM_PROC(cuDevicePrimaryCtxRelease, 11000, sim_cuDevicePrimaryCtxRelease)
	SIM_PROC(cuDevicePrimaryCtxGetState, 7000, sim_cuDevicePrimaryCtxGetState)
	SIM_PROC(cuDevicePrimaryCtxReset, 11000, sim_cuDevicePrimaryCtxReset)
	SIM_PROC(cuEventCreate, 2000, sim_cuEventCreate)
	SIM_PROC(cuEventDestroy, 4000, sim_cuEventDestroy)
	SIM_PROC(cuEventRecord, 2000, sim_cuEventRecord)
	SIM_PROC(cuEventQuery, 2000, sim_cuEventQuery)
	SIM_PROC(cuEventSynchronize, 2000, sim_cuEventSynchronize)
	SIM_PROC(cuEventElapsedTime, 2000, sim_cuEventElapsedTime)
	SIM_PROC(cuEventElapsedTime, 12080, sim_cuEventElapsedTime_v2)
	SIM_PROC(cuStreamCreate, 2000, sim_cuStreamCreate)
	SIM_PROC(cuStreamCreateWithPriority, 5050, sim_cuStreamCreateWithPriority)
	SIM_PROC(cuStreamDestroy, 4000, sim_cuStreamDestroy)
	SIM_PROC(cuStreamSynchronize, 2000, sim_cuStreamSynchronize)
	SIM_PROC(cuStreamWaitEvent, 3020, sim_cuStreamWaitEvent)
	SIM_PROC(cuStreamQuery, 2000, sim_cuStreamQuery)
	SIM_PROC(cuModuleLoad, 2000, sim_cuModuleLoad)
	SIM_PROC(cuModuleLoadData, 2000, sim_cuModuleLoadData)
	SIM_PROC(cuModuleUnload, 2000, sim_cuModuleUnload)
	SIM_PROC(cuModuleGetFunction, 2000, sim_cuModuleGetFunction)
	SIM_PROC(cuLaunchKernel, 4000, sim_cuLaunchKernel)
	SIM_PROC(cuMemAlloc, 3020, sim_cuMemAlloc)
	SIM_PROC(cuMemFree, 3020, sim_cuMemFree)
	SIM_PROC(cuMemAllocHost, 3020, sim_cuMemAllocHost)
	SIM_PROC(cuMemHostAlloc, 2020, sim_cuMemHostAlloc)
	SIM_PROC(cuMemFreeHost, 2000, sim_cuMemFreeHost)
	SIM_PROC(cuMemsetD8, 3020, sim_cuMemsetD8)
	SIM_PROC(cuMemcpyHtoD, 3020, sim_cuMemcpyHtoD)
	SIM_PROC(cuMemcpyDtoH, 3020, sim_cuMemcpyDtoH)
	SIM_PROC(cuGraphCreate, 10000, sim_cuGraphCreate)
	SIM_PROC(cuGraphAddEmptyNode, 10000, sim_cuGraphAddEmptyNode)
	SIM_PROC(cuGraphDestroy, 10000, sim_cuGraphDestroy)
	SIM_PROC(cuGraphInstantiateWithFlags, 11040, sim_cuGraphInstantiateWithFlags)
	SIM_PROC(cuGraphExecDestroy, 10000, sim_cuGraphExecDestroy)
	SIM_PROC(cuGraphLaunch, 10000, sim_cuGraphLaunch)
	SIM_MARKERS(SIM_MARKER_PROC)
};

static CUresult proc_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
			    CUdriverProcAddressQueryResult *status)
{
	struct call c;
	if (enter_as(&c, F_cuGetProcAddress, 0, false, ARGS(.flags = flags, .arg = version)))
		return leave(&c, c.rc);
	if (pfn)
		*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!symbol || !pfn)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
	    flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* Documented: asking for a version newer than the driver is an error, not the newest entry. */
	if (version > SIM_DRIVER_VERSION)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	const struct proc *best = NULL;
	bool named = false;
	/* A hidden cuCtxGetId matches no entry: the answer of a driver older than CUDA 12.0. */
	bool hidden = S.hide_ctx_id && strcmp(symbol, "cuCtxGetId") == 0;
	for (size_t i = 0; !hidden && i < sizeof procs / sizeof procs[0]; i++) {
		if (strcmp(procs[i].name, symbol) != 0)
			continue;
		named = true;
		if (procs[i].version <= version && (!best || procs[i].version > best->version))
			best = &procs[i];
	}
	if (!best) {
		if (status && named)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return leave(&c, CUDA_ERROR_NOT_FOUND);
	}
	*pfn = best->fn;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
	return proc_lookup(symbol, pfn, version, flags, NULL);
}

CUresult sim_cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *status)
{
	return proc_lookup(symbol, pfn, version, flags, status);
}

/* ---------------------------------------------------------------------------
 * Control API.
 */
static int fn_index(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < F_COUNT; i++)
		if (strcmp(fn_names[i], name) == 0)
			return i;
	return -1;
}

SIM_VISIBLE void cusim_reset(void)
{
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < S.nbuckets; i++) {
		for (struct obj *o = S.buckets[i], *next; o; o = next) {
			next = o->hnext;
			free(o->buf);
			free(o->name);
			free(o);
		}
		S.buckets[i] = NULL;
	}
	S.nobjs = 0;
	S.mem_list = NULL;
	memset(S.primary, 0, sizeof S.primary);
	memset(S.primary_refs, 0, sizeof S.primary_refs);
	memset(S.serial, 0, sizeof S.serial);
	memset(S.live, 0, sizeof S.live);
	S.live_primary = 0;
	S.next_device_addr = SIM_DEVICE_BASE;
	for (int k = 0; k < K_COUNT; k++)
		S.freed[k].n = 0;
	memset(S.calls, 0, sizeof S.calls);
	S.log_start = S.log_len = 0;
	for (size_t i = 0; i < S.misuse_kept; i++)
		free(S.misuse[i]);
	S.misuse_kept = S.misuse_total = 0;
	S.nplans = 0;
	S.recycling = true;
	S.hide_ctx_id = false;
	S.stale_levels = false;
	S.fail_all = CUDA_SUCCESS;
	for (int i = 0; i < F_COUNT; i++)
		__atomic_store_n(&S.delay_us[i], 0u, __ATOMIC_RELAXED);
	/* Every thread's stack names values that no longer exist: a new epoch empties them all. */
	S.epoch++;
	stack_sync();
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_set_recycling(int on)
{
	pthread_mutex_lock(&S.lock);
	S.recycling = on != 0;
	if (!S.recycling)
		for (int k = 0; k < K_COUNT; k++)
			S.freed[k].n = 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE size_t cusim_log_count(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.log_len;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE int cusim_log_get(size_t i, struct cusim_call *out)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (out && i < S.log_len) {
		*out = S.log[(S.log_start + i) % S.log_cap];
		rc = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE unsigned long cusim_calls(const char *fn)
{
	int i = fn_index(fn);
	if (i < 0)
		return 0;
	pthread_mutex_lock(&S.lock);
	unsigned long n = S.calls[i];
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE size_t cusim_misuse_count(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.misuse_total;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE const char *cusim_misuse_text(size_t i)
{
	const char *text = NULL;
	pthread_mutex_lock(&S.lock);
	if (i < S.misuse_kept)
		text = S.misuse[i];
	else if (i < S.misuse_total)
		text = "(misuse text not kept: over the limit)";
	pthread_mutex_unlock(&S.lock);
	return text;
}

/* Maps a control-API kind name to a kind and whether it means primaries. */
static bool kind_of(const char *name, enum kind *k, bool *primary)
{
	static const struct { const char *name; enum kind k; bool primary; } names[] = {
		{ "context", K_CTX, false }, { "primary", K_CTX, true },
		{ "event", K_EVENT, false }, { "stream", K_STREAM, false },
		{ "module", K_MODULE, false }, { "mem", K_MEM, false },
		{ "host_mem", K_HOST, false }, { "graph", K_GRAPH, false },
		{ "graph_exec", K_EXEC, false },
	};
	if (!name)
		return false;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strcmp(names[i].name, name) == 0) {
			*k = names[i].k;
			*primary = names[i].primary;
			return true;
		}
	}
	return false;
}

SIM_VISIBLE size_t cusim_live(const char *kind)
{
	enum kind k;
	bool primary;
	size_t n = 0;
	pthread_mutex_lock(&S.lock);
	if (kind && strcmp(kind, "all") == 0) {
		static const enum kind all[] = { K_CTX, K_EVENT, K_STREAM, K_MODULE, K_MEM, K_HOST, K_GRAPH, K_EXEC };
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			n += S.live[all[i]];
		n += S.live_primary;
	} else if (kind_of(kind, &k, &primary)) {
		n = primary ? S.live_primary : S.live[k];
	}
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE int cusim_is_live(const char *kind, uint64_t handle)
{
	enum kind k;
	bool primary;
	int live = 0;
	if (!kind_of(kind, &k, &primary))
		return 0;
	pthread_mutex_lock(&S.lock);
	struct obj *o = find(k, handle);
	live = o && o->live && o->primary == primary;
	pthread_mutex_unlock(&S.lock);
	return live;
}

SIM_VISIBLE void cusim_fail_call(const char *fn, unsigned long nth, CUresult rc)
{
	int i = fn_index(fn);
	if (i < 0 || nth == 0)
		return;
	pthread_mutex_lock(&S.lock);
	if (S.nplans == S.plans_cap) {
		S.plans_cap = S.plans_cap ? 2 * S.plans_cap : 8;
		S.plans = xrealloc(S.plans, S.plans_cap * sizeof *S.plans);
	}
	S.plans[S.nplans++] = (struct plan){ (enum fn)i, S.calls[i] + nth, rc };
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_hide_ctx_id(int hide)
{
	pthread_mutex_lock(&S.lock);
	S.hide_ctx_id = hide != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE int cusim_primary_outside_retain(int dev)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev)) {
		primary_retain(dev);
		rc = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE int cusim_primary_outside_release(int dev)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev) && primary_release(dev))
		rc = 0;
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE unsigned cusim_primary_refs(int dev)
{
	unsigned n = 0;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev))
		n = S.primary_refs[dev];
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE void cusim_set_delay(const char *fn, unsigned usec)
{
	int i = fn_index(fn);
	if (i >= 0)
		__atomic_store_n(&S.delay_us[i], usec, __ATOMIC_RELAXED);
}

SIM_VISIBLE unsigned cusim_sleeping(void)
{
	return __atomic_load_n(&S.sleeping, __ATOMIC_SEQ_CST);
}

SIM_VISIBLE void cusim_set_stale_levels(int on)
{
	pthread_mutex_lock(&S.lock);
	S.stale_levels = on != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_fail_all(CUresult rc)
{
	pthread_mutex_lock(&S.lock);
	S.fail_all = rc;
	pthread_mutex_unlock(&S.lock);
}
