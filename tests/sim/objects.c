/* SPDX-License-Identifier: MIT */
/* objects.c - objects: every handle value's record (live or dead), the table keyed by
 * (kind, value), owners and their children, address recycling, the state S
 * and each thread's context stack. */
#include "sim.h"

/* ---------------------------------------------------------------------------
 * Objects.  Every handle value the simulator ever gave out has a record, live
 * or dead; a dead record is the graveyard entry that says why it died, until
 * recycling hands its value to a new object.
 */

const char *const kind_names[K_COUNT] = {
	"none", "context", "event", "stream", "module", "function", "mem",
	"host_mem", "graph", "graph node", "graph_exec", "library", "kernel", "pool",
	"green context", "resource descriptor", "ipc_mem",
};

/* Error for a handle that was once live (the real driver's answer where it has one). */
const CUresult dead_rc[K_COUNT] = {
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
	[K_LIBRARY] = CUDA_ERROR_INVALID_HANDLE,
	[K_KERNEL] = CUDA_ERROR_INVALID_HANDLE,
	[K_POOL] = CUDA_ERROR_INVALID_HANDLE,
	[K_GREEN] = CUDA_ERROR_CONTEXT_IS_DESTROYED,
	[K_DESC] = CUDA_ERROR_INVALID_VALUE,
	[K_IPCMEM] = CUDA_ERROR_INVALID_VALUE,
};

/* Error for a value the simulator never gave out. */
const CUresult garbage_rc[K_COUNT] = {
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
	[K_LIBRARY] = CUDA_ERROR_INVALID_HANDLE,
	[K_KERNEL] = CUDA_ERROR_INVALID_HANDLE,
	[K_POOL] = CUDA_ERROR_INVALID_HANDLE,
	[K_GREEN] = CUDA_ERROR_INVALID_CONTEXT,
	[K_DESC] = CUDA_ERROR_INVALID_VALUE,
	[K_IPCMEM] = CUDA_ERROR_INVALID_VALUE,
};

/* Kinds whose freed values new objects take back; graphs are not context-bound, so their reuse proves nothing.
 * Libraries and their kernels belong to no context either, but a stale one names another's (a stale unload
 * unloads a new library, a stale kernel launches a new one's), which only reuse shows. Pools too: a stale
 * pool handle names the next pool made. Green contexts too (their CUcontext is a K_CTX, recycled with
 * the others); resource descriptors are never freed. A stream leaked by its green context's destroy is
 * never reused either (the real driver leaks it: see obj_kill). An IPC mapping's address is taken back
 * as device memory's is: a stale close then closes the next mapping there. */
static const bool recyclable[K_COUNT] = {
	[K_CTX] = true, [K_EVENT] = true, [K_STREAM] = true, [K_MODULE] = true,
	[K_MEM] = true, [K_HOST] = true, [K_EXEC] = true, [K_LIBRARY] = true, [K_KERNEL] = true,
	[K_POOL] = true, [K_GREEN] = true, [K_IPCMEM] = true,
};




struct sim_state S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.recycling = true,
	.epoch = 1,
	.next_device_addr = SIM_DEVICE_BASE,
};

/* Each thread's context stack; a stale epoch means cusim_reset emptied it. */
__thread struct sim_thread T;

void stack_sync(void)
{
	if (T.epoch != S.epoch) {
		T.epoch = S.epoch;
		T.depth = 0;
		T.cap_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
	}
}

uint64_t stack_top(void)
{
	stack_sync();
	return T.depth ? T.v[T.depth - 1] : 0;
}

/* Allocation failure inside a test double is not worth recovering from. */
void *xrealloc(void *p, size_t n)
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

struct obj *find(enum kind k, uint64_t v)
{
	if (!S.nbuckets)
		return NULL;
	for (struct obj *o = S.buckets[slot(k, v)]; o; o = o->hnext)
		if (o->kind == k && o->value == v)
			return o;
	return NULL;
}

void table_insert(struct obj *o)
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

void count_live(struct obj *o, int delta)
{
	if (o->hidden)
		return;
	if (o->primary)
		S.live_primary += (size_t)delta;
	else
		S.live[o->kind] += (size_t)delta;
}

/* Takes a live object out of cusim_live's counts for good: it is part of another (a library's module in
 * a context, a module's global), which is counted instead. */
void obj_hide(struct obj *o)
{
	count_live(o, -1);
	o->hidden = true;
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
	if ((k == K_MEM || k == K_HOST || k == K_IPCMEM) && o->span < want)
		return NULL;
	fs->n--;
	return o;
}

/*
 * Makes a live object of kind k owned by `owner`.  Device memory gets a fake
 * address with a real backing buffer; an IPC mapping a fake address of its
 * own and no buffer (ipc.c points it at the exported allocation's); host
 * memory is a real block the caller writes to.  Returns NULL when the
 * backing store cannot be had.
 */
struct obj *obj_new(enum kind k, struct obj *owner, size_t want)
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
	} else if (k == K_IPCMEM && !reused) {
		o = xrealloc(NULL, sizeof *o);
		memset(o, 0, sizeof *o);
		o->kind = k;
		o->value = S.next_device_addr;
		o->span = (want + SIM_DEVICE_GRAIN - 1) / SIM_DEVICE_GRAIN * SIM_DEVICE_GRAIN;
		S.next_device_addr += o->span;
		table_insert(o);
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
	o->hidden = o->global = false;
	o->img = NULL;
	o->lib = o->link_first = o->link_prev = o->link_next = NULL;
	o->cap = NULL;
	o->cap_work = o->cap_joined = o->cap_seq = 0;
	o->cap_last = o->cap_node = NULL;
	o->cap_id = 0;
	o->cap_stream = NULL;
	memset(&o->so, 0, sizeof o->so);
	o->green = NULL;
	o->leaked = false;
	o->sms = 0;
	o->ipc_id = o->ipc_src_id = 0;
	o->ipc_src = NULL;
	o->ipc_refs = 0;
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
		if (owner->green)
			return "its green context was destroyed (the real driver leaks it)";
		return owner->primary ? "its primary context was released or reset"
				      : "its context was destroyed";
	case K_MODULE:
		return "its module was unloaded";
	case K_GRAPH:
		return "its graph was destroyed";
	case K_LIBRARY:
		return "its library was unloaded";
	default:
		return "its owner died";
	}
}

/* Ends an object's life and its children's, newest child first, so their freed values stack oldest-on-top. */
void obj_kill(struct obj *o, const char *why)
{
	if (o->kind == K_STREAM && o->cap)
		capture_stream_dies(o);
	library_obj_dies(o);
	pool_obj_dies(o);
	peer_obj_dies(o);
	ipc_obj_dies(o);
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
	free(o->name);
	o->name = NULL;
	/* Host blocks stay allocated (recycled, or quarantined) so malloc cannot hand their address out again. */
	if (recyclable[o->kind] && S.recycling && !o->primary && !o->leaked)
		vs_push(&S.freed[o->kind], o->value);
}

/* The live device allocation holding [p, p+n), or NULL. */
struct obj *mem_containing(uint64_t p, size_t n)
{
	for (struct obj *o = S.mem_list; o; o = o->mem_next)
		if (p >= o->value && p - o->value <= o->size && n <= o->size - (p - o->value))
			return o;
	return NULL;
}

/* A dead record of device memory that was never live (a graph allocation a
 * capture handed out): its own address span, never recycled, so that a free
 * of it finds it and answers as the real driver does. */
struct obj *mem_ghost(size_t want, const char *why)
{
	struct obj *o = xrealloc(NULL, sizeof *o);
	memset(o, 0, sizeof *o);
	o->kind = K_MEM;
	o->value = S.next_device_addr;
	o->size = want;
	o->span = (want + SIM_DEVICE_GRAIN - 1) / SIM_DEVICE_GRAIN * SIM_DEVICE_GRAIN;
	S.next_device_addr += o->span;
	o->why = why;
	o->so.graph_alloc = true;
	table_insert(o);
	return o;
}

double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
