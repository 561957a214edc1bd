/* SPDX-License-Identifier: MIT */
/* pools.c - stream-ordered memory and memory pools: cuMemAllocAsync,
 * cuMemAllocFromPoolAsync, cuMemFreeAsync, the pool calls, and the
 * bookkeeping behind the one hazard they bring: work queued on a stream that
 * was destroyed before it finished goes on running, so an allocation it uses
 * must not be freed (and its address handed out again) until something has
 * ordered the free after that work.
 *
 * Measured on the H200 (driver 580.159.04; DRIVER-FACTS.md, and cudasim.h
 * lists the answers): a stream-ordered allocation belongs to its pool and a
 * pool to its device, not to a context; cuMemFree of one answers 0 and gives
 * the memory back but never lowers the pool's used figure; a free on a
 * destroyed stream crashes (a misuse here). */
#include "sim.h"

#include <unistd.h>

/* --- streams' work, as far as stream-ordered memory needs it ------------------ */

void pool_stream_new(struct obj *s)
{
	s->so.gen = ++S.last_stream_gen;
}

static struct obj *live_stream(CUstream s)
{
	if (is_default_stream(s))
		return NULL;
	struct obj *o = find(K_STREAM, H(s));
	return o && o->live ? o : NULL;
}

void pool_stream_work(CUstream s)
{
	struct obj *so = live_stream(s);
	if (so)
		so->so.work_seq++;
}

void pool_stream_done(struct obj *s)
{
	s->so.done_seq = s->so.work_seq;
}

void pool_ctx_done(struct obj *ctx)
{
	for (struct obj *k = ctx->kid_first; k; k = k->sib_next)
		if (k->kind == K_STREAM)
			pool_stream_done(k);
	for (struct orphan *w = S.orphans; w; w = w->next)
		if (w->ctx == ctx)
			w->done = true;
}

void pool_event_recorded(struct obj *ev, CUstream s)
{
	struct obj *so = live_stream(s);
	ev->so.ev_stream = so;
	ev->so.ev_gen = so ? so->so.gen : 0;
	ev->so.ev_seq = so ? so->so.work_seq : 0;
}

/* The event's stream has finished everything queued before the record, destroyed or not. */
void pool_event_done(struct obj *ev)
{
	unsigned long long gen = ev->so.ev_gen, seq = ev->so.ev_seq;
	if (!gen)
		return;
	struct obj *so = ev->so.ev_stream;
	if (so->live && so->so.gen == gen && so->so.done_seq < seq)
		so->so.done_seq = seq;
	for (struct orphan *w = S.orphans; w; w = w->next)
		if (w->gen == gen && w->seq <= seq)
			w->done = true;
}

void pool_stream_destroyed(struct obj *s)
{
	if (s->so.work_seq == s->so.done_seq || !s->so.allocs)
		return;
	struct orphan *w = xrealloc(NULL, sizeof *w);
	*w = (struct orphan){ .ctx = s->owner, .gen = s->so.gen, .seq = s->so.work_seq,
			      .nonblocking = (s->flags & CU_STREAM_NON_BLOCKING) != 0 };
	for (struct obj *m = S.mem_list; m; m = m->mem_next) {
		if (m->so.async && m->so.stream == s) {
			m->so.orphan = w;
			w->allocs++;
		}
	}
	w->next = S.orphans;
	if (S.orphans)
		S.orphans->prev = w;
	S.orphans = w;
}

static void orphan_free(struct orphan *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		S.orphans = w->next;
	if (w->next)
		w->next->prev = w->prev;
	free(w);
}

/* --- pools --------------------------------------------------------------------- */

static void pool_link(struct obj *p)
{
	p->so.pool_prev = NULL;
	p->so.pool_next = S.pools;
	if (S.pools)
		S.pools->so.pool_prev = p;
	S.pools = p;
}

static void pool_unlink(struct obj *p)
{
	if (p->so.pool_prev)
		p->so.pool_prev->so.pool_next = p->so.pool_next;
	else if (S.pools == p)
		S.pools = p->so.pool_next;
	if (p->so.pool_next)
		p->so.pool_next->so.pool_prev = p->so.pool_prev;
	p->so.pool_prev = p->so.pool_next = NULL;
}

static struct obj *pool_make(int device)
{
	struct obj *p = obj_new(K_POOL, NULL, 0);
	p->device = device;
	p->so.reuse[0] = p->so.reuse[1] = p->so.reuse[2] = 1;
	pool_link(p);
	return p;
}

/* A device's default pool: one value for the life of the process (until a reset), never counted. */
struct obj *pool_default(int device)
{
	struct obj *p = S.default_pool[device];
	if (!p) {
		p = pool_make(device);
		obj_hide(p);
		p->so.is_default = true;
		S.default_pool[device] = p;
	}
	return p;
}

/* The pool cuMemAllocAsync takes from: cuDeviceSetMemPool's, else the default. */
static struct obj *current_pool(int device)
{
	return S.mem_pool[device] ? S.mem_pool[device] : pool_default(device);
}

/* A pool handle a caller names: live and not destroyed; NULL is 1, anything else a misuse. */
static CUresult need_pool(const struct call *c, CUmemoryPool pool, struct obj **out)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	struct obj *p = find(K_POOL, H(pool));
	if (p && p->live && p->so.gone) {
		misuse(c, H(pool), "pool not live: already destroyed (its allocations live on until freed)");
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return need_live(c, K_POOL, H(pool), out);
}

static uint64_t reserved(const struct obj *p)
{
	return p->so.used + p->so.cached;
}

/* What the pool keeps beyond its used memory comes down to `keep` bytes in all (or to nothing more than used). */
static void trim(struct obj *p, uint64_t keep)
{
	if (reserved(p) <= keep)
		return;
	p->so.cached = keep > p->so.used ? keep - p->so.used : 0;
}

void pool_release(int device)
{
	for (struct obj *p = S.pools; p; p = p->so.pool_next)
		if (p->device == device)
			trim(p, p->so.threshold);
}

/* Ends a pool whose destroy came while allocations were alive, once the last is gone. */
static void pool_maybe_end(struct obj *p)
{
	if (p->so.gone && !p->so.allocs && p->live)
		obj_kill(p, "already destroyed");
}

void pool_obj_dies(struct obj *o)
{
	switch (o->kind) {
	case K_MEM:
		if (!o->so.async)
			return;
		S.async_live--;
		if (o->so.stream)
			o->so.stream->so.allocs--;
		if (o->so.orphan && --o->so.orphan->allocs == 0)
			orphan_free(o->so.orphan);
		o->so.stream = NULL;
		o->so.orphan = NULL;
		if (o->so.pool) {
			struct obj *p = o->so.pool;
			o->so.pool = NULL;
			p->so.allocs--;
			pool_maybe_end(p);
		}
		return;
	case K_STREAM:
		if (o->so.allocs)
			for (struct obj *m = S.mem_list; m; m = m->mem_next)
				if (m->so.async && m->so.stream == o)
					m->so.stream = NULL;
		o->so.allocs = 0;
		return;
	case K_CTX:
		/* its orphaned work ends with it (measured: nothing of it runs on) */
		for (struct orphan *w = S.orphans; w; w = w->next)
			if (w->ctx == o)
				w->done = true;
		return;
	case K_POOL:
		pool_unlink(o);
		for (int d = 0; d < SIM_MAX_DEVICES; d++) {
			if (S.mem_pool[d] == o)
				S.mem_pool[d] = NULL;
			if (S.default_pool[d] == o)
				S.default_pool[d] = NULL;
		}
		return;
	default:
		return;
	}
}

void pool_reset(void)
{
	while (S.orphans)
		orphan_free(S.orphans);
	memset(S.default_pool, 0, sizeof S.default_pool);
	memset(S.mem_pool, 0, sizeof S.mem_pool);
	S.pools = NULL;
	S.async_live = 0;
}

/* --- the free hazard ----------------------------------------------------------- */

/* A free of o (async: by cuMemFreeAsync on s) that comes while work its
 * destroyed stream left may still run: a misuse, answered 401 with nothing
 * freed. Ordered after that work (measured safe): a synchronize since
 * (cuCtxSynchronize of its context, cuEventSynchronize of an event recorded
 * after it), or cuMemFreeAsync on the legacy stream of its context, current,
 * when the destroyed stream was a blocking one. */
static CUresult orphan_hazard(const struct call *c, const struct obj *o, bool async, CUstream s)
{
	const struct orphan *w = o->so.orphan;
	if (!w || w->done)
		return CUDA_SUCCESS;
	struct obj *cur;
	if (async && is_legacy_stream(s) && !w->nonblocking && need_current(&cur) == CUDA_SUCCESS && cur == w->ctx)
		return CUDA_SUCCESS;
	misuse(c, o->value,
	       "stream-ordered allocation freed while unfinished work of its destroyed %s stream may still use it "
	       "(the real driver hands the address out again under that work): synchronize its context first%s",
	       w->nonblocking ? "non-blocking" : "blocking",
	       w->nonblocking ? "" : ", or free it on the legacy stream of that context");
	return CUDA_ERROR_ILLEGAL_STATE;
}

CUresult pool_plain_free(const struct call *c, struct obj *o)
{
	return orphan_hazard(c, o, false, NULL);
}

/* --- the entry points ------------------------------------------------------------ */

/* cuMemAllocAsync (pool NULL: the device's current pool) and cuMemAllocFromPoolAsync. */
static CUresult alloc_async(enum fn fn, CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.arg = (long long)size, .handle2 = H(pool), .stream = H(s))))
		return leave(&c, c.rc);
	struct obj *ctx, *p = NULL;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS && fn == F_cuMemAllocFromPoolAsync)
		rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (!dptr || size == 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (size > SIM_MAX_ALLOC)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	if (!p)
		p = current_pool(ctx->device);
	c.a.handle2 = p->value;
	if ((rc = capture_work(&c, s, ctx, W_NODE)))
		return leave(&c, rc);
	if (c.captured) {
		/* a graph allocation: an address of its own, live only inside the graph */
		struct obj *g = mem_ghost(size, "a graph allocation of a stream capture: not live outside its graph");
		*dptr = g->value;
		c.handle = g->value;
		return leave(&c, CUDA_SUCCESS);
	}
	/* not captured: an allocation a capture forbids as it does cuMemAlloc's.
	 * Measured (tools/facts/free_beside_capture.c, H200): under another
	 * thread's GLOBAL capture, 900 and the capture invalidated, on any
	 * stream - legacy, blocking, non-blocking - and so for the free */
	if ((rc = capture_unsafe()))
		return leave(&c, rc);
	struct obj *o = obj_new(K_MEM, NULL, size);
	if (!o)
		return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
	o->device = p->device;
	o->so.async = true;
	o->so.pool = p;
	o->so.stream = live_stream(s);
	if (o->so.stream)
		o->so.stream->so.allocs++;
	p->so.allocs++;
	S.async_live++;
	uint64_t from_cache = p->so.cached < size ? p->so.cached : size;
	p->so.cached -= from_cache;
	p->so.used += size;
	if (p->so.used > p->so.used_high)
		p->so.used_high = p->so.used;
	if (reserved(p) > p->so.reserved_high)
		p->so.reserved_high = reserved(p);
	*dptr = o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return alloc_async(F_cuMemAllocAsync, dptr, size, NULL, s);
}

CUresult sim_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
	return alloc_async(F_cuMemAllocFromPoolAsync, dptr, size, pool, s);
}

CUresult sim_cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
	struct call c;
	if (enter_with(&c, F_cuMemFreeAsync, dptr, ARGS(.stream = H(s))))
		return leave(&c, c.rc);
	struct obj *ctx, *o = find(K_MEM, dptr);
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc)
		return leave(&c, rc);
	if (!dptr)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* a destroyed context current on this thread: refused as cuMemFree
	 * is (memory.c). Measured (tools/facts/dead_current.c, H200): 709 on
	 * a default stream; a live stream of another context is accepted
	 * there, and refused here (stricter), so that cuctx's retry with the
	 * stream's context pushed stays tested */
	if (current_is_dead())
		return leave(&c, CUDA_ERROR_CONTEXT_IS_DESTROYED);
	/* a graph allocation outside its graph: measured 1 */
	if (o && o->so.graph_alloc)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!o && mem_containing(dptr, 0)) {
		misuse(&c, dptr, "mem not live: points inside an allocation, not at its start");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	if ((rc = need_live(&c, K_MEM, dptr, &o)))
		return leave(&c, rc);
	if (o->global)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (o->so.pool)
		c.a.handle2 = o->so.pool->value;
	if ((rc = capture_work(&c, s, ctx, W_NODE)) || c.captured)
		return leave(&c, rc);
	if ((rc = capture_unsafe()))     /* (as the allocation's, above) */
		return leave(&c, rc);
	if ((rc = orphan_hazard(&c, o, true, s)))
		return leave(&c, rc);
	if (o->so.pool) {
		struct obj *p = o->so.pool;
		p->so.used -= o->size <= p->so.used ? o->size : p->so.used;
		p->so.cached += o->size;
	}
	obj_kill(o, "already freed");
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
	return sim_cuMemAllocAsync(dptr, size, s ? s : CU_STREAM_PER_THREAD);
}

CUresult sim_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
	return sim_cuMemAllocFromPoolAsync(dptr, size, pool, s ? s : CU_STREAM_PER_THREAD);
}

CUresult sim_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
	return sim_cuMemFreeAsync(dptr, s ? s : CU_STREAM_PER_THREAD);
}

CUresult sim_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolCreate, 0, ARGS(.arg = props ? props->location.id : 0)))
		return leave(&c, c.rc);
	if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(props->location.id) ||
	    (props->handleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *p = pool_make(props->location.id);
	*pool = (CUmemoryPool)(uintptr_t)p->value;
	c.handle = p->value;
	return leave(&c, CUDA_SUCCESS);
}

/* cuMemPoolDestroy on one thread while cuCtxSynchronize or cuStreamDestroy runs on another, in any context,
 * crashed the real driver (SIGSEGV) or hung it (measured on the H200, tools/facts/pool_destroy.c: ways S and R
 * against U and T); cuCtxDestroy, which does both, is taken as one of them. Each side checks for a call of the other running, and runs for S.sync_us with the lock let
 * go, so that any overlap is seen by the call that comes second. */
void pool_apart(struct call *c, bool destroy)
{
	if (destroy ? S.drains_running : S.pool_destroys_running)
		misuse(c, c->handle, destroy ? "pool destroyed while cuCtxSynchronize, cuStreamDestroy or cuCtxDestroy "
					       "runs on another thread: a crash or hang of the real driver"
					     : "called while a memory pool is destroyed on another thread: a crash or hang "
					       "of the real driver");
	if (!S.sync_us)
		return;
	unsigned *running = destroy ? &S.pool_destroys_running : &S.drains_running;
	unsigned us = S.sync_us;
	(*running)++;
	pthread_mutex_unlock(&S.lock);
	__atomic_add_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);     /* (cusim_sleeping: a test waits for it) */
	usleep(us);
	__atomic_sub_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&S.lock);
	(*running)--;
}

/* With allocations alive the pool lives on, dead to callers, until the last is freed (measured: they stay usable,
 * with one thread; a misuse here, as several threads crashed). */
CUresult sim_cuMemPoolDestroy(CUmemoryPool pool)
{
	struct call c;
	if (enter(&c, F_cuMemPoolDestroy, H(pool)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (p->so.is_default)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	pool_apart(&c, true);
	if ((rc = need_pool(&c, pool, &p)))     /* (again: the lock was let go) */
		return leave(&c, rc);
	for (int d = 0; d < SIM_MAX_DEVICES; d++)
		if (S.mem_pool[d] == p)
			S.mem_pool[d] = NULL;
	if (p->so.allocs) {
		/* the real driver ends the pool with its last allocation when one thread does this, and crashed
		 * when several threads did, each with a pool of its own (tools/facts/pool_destroy.c): a misuse */
		misuse(&c, H(pool), "pool destroyed with %llu allocation(s) alive (the real driver crashed so "
		       "when other threads used pools meanwhile)", (unsigned long long)p->so.allocs);
		obj_hide(p);
		p->so.gone = true;
		return leave(&c, CUDA_SUCCESS);
	}
	obj_kill(p, "already destroyed");
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolTrimTo, H(pool), ARGS(.arg = (long long)keep)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	trim(p, keep);
	return leave(&c, CUDA_SUCCESS);
}

static bool is_reuse(CUmemPool_attribute attr)
{
	return attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
	       attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

CUresult sim_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolGetAttribute, H(pool), ARGS(.flags = (unsigned)attr)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (!value)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (is_reuse(attr)) {
		int v = p->so.reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
		memcpy(value, &v, sizeof v);
		c.a.arg = v;
		return leave(&c, CUDA_SUCCESS);
	}
	cuuint64_t v;
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->so.threshold; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = reserved(p); break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = p->so.reserved_high; break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->so.used; break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = p->so.used_high; break;
	default: return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	memcpy(value, &v, sizeof v);
	c.a.arg = (long long)v;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolSetAttribute, H(pool), ARGS(.flags = (unsigned)attr)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (!value)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (is_reuse(attr)) {
		int v;
		memcpy(&v, value, sizeof v);
		c.a.arg = v;
		p->so.reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = v != 0;
		return leave(&c, CUDA_SUCCESS);
	}
	cuuint64_t v;
	memcpy(&v, value, sizeof v);
	c.a.arg = (long long)v;
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->so.threshold = v;
		return leave(&c, CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:  /* only reset, to 0, which starts it again from now */
		if (v)
			return leave(&c, CUDA_ERROR_INVALID_VALUE);
		p->so.reserved_high = reserved(p);
		return leave(&c, CUDA_SUCCESS);
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (v)
			return leave(&c, CUDA_ERROR_INVALID_VALUE);
		p->so.used_high = p->so.used;
		return leave(&c, CUDA_SUCCESS);
	default:
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
}

/* Access of other devices to a pool's memory (model): its own device always
 * reads and writes, and cannot be set otherwise; another device has none
 * until given read-write access, if it may reach the pool's device at all
 * (peer capability); read-only is not offered for pools (1). */
static CUresult access_location(const CUmemLocation *loc)
{
	return loc && loc->type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(loc->id) ? CUDA_SUCCESS
										    : CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool, CUmemLocation *location)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolGetAccess, H(pool), ARGS(.arg = location ? location->id : -1)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc || (rc = access_location(location)))
		return leave(&c, rc);
	if (!flags)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	bool rw = location->id == p->device || (p->so.peers >> location->id & 1);
	*flags = rw ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	c.a.flags = (unsigned)*flags;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
	struct call c;
	if (enter_with(&c, F_cuMemPoolSetAccess, H(pool), ARGS(.arg = (long long)count)))
		return leave(&c, c.rc);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (!map && count)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	uint64_t peers = p->so.peers;
	for (size_t i = 0; i < count; i++) {
		const CUmemAccessDesc *d = &map[i];
		int dev = d->location.id;
		if ((rc = access_location(&d->location)))
			return leave(&c, rc);
		if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return leave(&c, CUDA_ERROR_INVALID_VALUE);
		if (dev == p->device) {
			if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
				return leave(&c, CUDA_ERROR_INVALID_DEVICE);
			continue;
		}
		if (d->flags == CU_MEM_ACCESS_FLAGS_PROT_NONE)
			peers &= ~(1ull << dev);
		else if (!peer_can_access(dev, p->device))
			return leave(&c, CUDA_ERROR_INVALID_DEVICE);
		else
			peers |= 1ull << dev;
	}
	p->so.peers = peers;
	return leave(&c, CUDA_SUCCESS);
}

/* The device calls: cuInit is all they need, a pool belonging to its device. */
static CUresult device_pool(enum fn fn, CUmemoryPool *pool, CUdevice dev)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!pool)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *p = fn == F_cuDeviceGetDefaultMemPool ? pool_default(dev) : current_pool(dev);
	*pool = (CUmemoryPool)(uintptr_t)p->value;
	c.handle = p->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return device_pool(F_cuDeviceGetDefaultMemPool, pool, dev);
}

CUresult sim_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return device_pool(F_cuDeviceGetMemPool, pool, dev);
}

CUresult sim_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceSetMemPool, H(pool), ARGS(.arg = dev)))
		return leave(&c, c.rc);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *p;
	CUresult rc = need_pool(&c, pool, &p);
	if (rc)
		return leave(&c, rc);
	if (p->device != dev)
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	S.mem_pool[dev] = p->so.is_default ? NULL : p;
	return leave(&c, CUDA_SUCCESS);
}
