/* SPDX-License-Identifier: MIT */
/* children.c - the children of a context other than memory: events, streams, modules
 * (with kernel launch) and graphs with their execs. */
#include "sim.h"

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
	struct obj *o = obj_new(K_EVENT, ctx_home(cur), 0);
	o->flags = flags;
	*ev = (CUevent)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

/* The destroys that differ only in their entry point and kind: a NULL (or
 * default-stream) handle is an error, a dead one a misuse, a live one dies;
 * unsafe: a call a capture may forbid (capture_unsafe). */
static CUresult destroy_plain(enum fn fn, enum kind k, uint64_t h, bool null_handle, bool unsafe)
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
	if (k == K_GRAPH && o->cap) {
		misuse(&c, h, "graph is being built by a stream capture: end the capture first");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	if (unsafe && (rc = capture_unsafe()))
		return leave(&c, rc);
	if (k == K_STREAM)
		pool_stream_destroyed(o);       /* its unfinished work runs on (pools.c) */
	obj_kill(o, "already destroyed");
	if (k == K_STREAM)
		pool_apart(&c, false);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuEventDestroy(CUevent ev)
{
	return destroy_plain(F_cuEventDestroy, K_EVENT, H(ev), !ev, false);
}

CUresult sim_cuEventRecord(CUevent ev, CUstream s)
{
	struct call c;
	if (enter_with(&c, F_cuEventRecord, H(ev), ARGS(.handle2 = H(s))))
		return leave(&c, c.rc);
	struct obj *o;
	CUresult rc = need_live(&c, K_EVENT, H(ev), &o);
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, o);
	if (rc)
		return leave(&c, rc);
	struct obj *sctx = NULL;
	rc = need_stream_of(&c, o, s, "event recorded");
	if (rc == CUDA_SUCCESS)
		rc = stream_context(&c, s, &sctx);
	if (rc == CUDA_SUCCESS)
		rc = capture_work(&c, s, sctx, W_MARK);
	if (rc)
		return leave(&c, rc);
	if (c.captured) {
		capture_mark_event(o, s);
		return leave(&c, CUDA_SUCCESS);
	}
	capture_clear_event(o);
	pool_event_recorded(o, s);
	o->recorded = true;
	o->stamp_ms = now_ms();
	return leave(&c, CUDA_SUCCESS);
}

/* Work completes the moment it is queued, so waiting and polling succeed, but
 * for what a capture makes of them (capture_event_wait). */
CUresult sim_cuEventQuery(CUevent ev)
{
	struct call c;
	if (enter(&c, F_cuEventQuery, H(ev)))
		return leave(&c, c.rc);
	struct obj *o;
	CUresult rc = need_live(&c, K_EVENT, H(ev), &o);
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, o);
	if (rc == CUDA_SUCCESS)
		rc = capture_event_wait(o);
	if (rc == CUDA_SUCCESS)
		pool_event_done(o);             /* answered finished: the work before it is */
	return leave(&c, rc);
}

CUresult sim_cuEventSynchronize(CUevent ev)
{
	struct call c;
	if (enter(&c, F_cuEventSynchronize, H(ev)))
		return leave(&c, c.rc);
	struct obj *o;
	CUresult rc = need_live(&c, K_EVENT, H(ev), &o);
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, o);
	if (rc == CUDA_SUCCESS)
		rc = capture_event_wait(o);
	if (rc == CUDA_SUCCESS) {
		pool_event_done(o);
		pool_release(o->owner->device);
	}
	return leave(&c, rc);
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
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, a);
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, b);
	if (rc)
		return leave(&c, rc);
	if (!ms)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* An event last recorded in a capture: measured 1 once the capture ended. */
	if (a->cap_id || b->cap_id)
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
	pool_stream_new(o);
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
	return destroy_plain(F_cuStreamDestroy, K_STREAM, H(s), is_default_stream(s), false);
}

/* A synchronize or a query of s answered finished: its work is (a default
 * stream's is not tracked); a synchronize lets the device's pools give back
 * what they keep above their release threshold. */
static void stream_finished(CUstream s, struct obj *ctx, bool sync)
{
	if (!is_default_stream(s))
		pool_stream_done(find(K_STREAM, H(s)));
	if (sync)
		pool_release(ctx->device);
}

CUresult sim_cuStreamSynchronize(CUstream s)
{
	struct call c;
	if (enter(&c, F_cuStreamSynchronize, H(s)))
		return leave(&c, c.rc);
	struct obj *ctx;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS)
		rc = capture_stream_sync(s, ctx);
	if (rc == CUDA_SUCCESS)
		stream_finished(s, ctx, true);
	return leave(&c, rc);
}

CUresult sim_cuStreamQuery(CUstream s)
{
	struct call c;
	if (enter(&c, F_cuStreamQuery, H(s)))
		return leave(&c, c.rc);
	struct obj *ctx;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS)
		rc = capture_stream_sync(s, ctx);
	if (rc == CUDA_SUCCESS)
		stream_finished(s, ctx, false);
	return leave(&c, rc);
}

/* Waiting on an event of another context or device is legal; beyond liveness,
 * the flags and what capture makes of the wait (capture_wait) are checked. */
CUresult sim_cuStreamWaitEvent(CUstream s, CUevent ev, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuStreamWaitEvent, H(s), ARGS(.flags = flags, .handle2 = H(ev))))
		return leave(&c, c.rc);
	if (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ctx, *e;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS)
		rc = need_live(&c, K_EVENT, H(ev), &e);
	if (rc == CUDA_SUCCESS)
		rc = ipc_event_check(&c, e);
	if (rc == CUDA_SUCCESS)
		rc = capture_wait(&c, s, ctx, e, flags);
	return leave(&c, rc);
}

/* --- modules and launches --------------------------------------------------- */

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
	rc = module_load_text(&c, ctx_home(cur), text, n, pmod, 0, NULL, NULL);
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
	return leave(&c, module_load_text(&c, ctx_home(cur), text, strnlen(text, SIM_MAX_IMAGE), pmod, 0, NULL, NULL));
}

CUresult sim_cuModuleLoadDataEx(CUmodule *pmod, const void *image, unsigned int nopts, CUjit_option *opts, void **vals)
{
	struct call c;
	if (enter_with(&c, F_cuModuleLoadDataEx, 0, ARGS(.arg = nopts)))
		return leave(&c, c.rc);
	if (!pmod || !image || (nopts && (!opts || !vals)))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	const char *text = image;
	return leave(&c, module_load_text(&c, ctx_home(cur), text, strnlen(text, SIM_MAX_IMAGE), pmod, nopts, opts, vals));
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
	/* a library's module in a context (cuLibraryGetModule): measured 800 */
	if (o->lib)
		return leave(&c, CUDA_ERROR_NOT_PERMITTED);
	if ((rc = capture_unsafe()))
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
		if (f->kind == K_FUNC && strcmp(f->name, name) == 0) {
			*pf = (CUfunction)(uintptr_t)f->value;
			return leave(&c, CUDA_SUCCESS);
		}
	}
	return leave(&c, CUDA_ERROR_NOT_FOUND);
}

/* A launch's checks, for cuLaunchKernel and cuLaunchKernelEx: a live function of a
 * module of the current context, or a live library kernel (a CUkernel cast to
 * CUfunction, which launches in any context), a stream of the current context,
 * sizes the device allows. It is recorded and runs nothing; on a capturing
 * stream it becomes a node of the capture's graph. */
static CUresult launch(enum fn fn, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
		       unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, CUstream s)
{
	struct call c;
	/* the grid and block as asked (cudasim.h): exact for every size the driver takes */
	if (enter_with(&c, fn, H(f),
		       ARGS(.handle2 = H(s), .stream = H(s),
			    .arg = (long long)((uint64_t)gx | (uint64_t)(gy & 0xffff) << 32 | (uint64_t)(gz & 0xffff) << 48),
			    .flags = (unsigned long long)(bx & 0xffff) | (unsigned long long)(by & 0xffff) << 16
				     | (unsigned long long)(bz & 0xffff) << 32)))
		return leave(&c, c.rc);
	struct obj *fo, *cur, *sctx;
	bool kernel = !find(K_FUNC, H(f)) && find(K_KERNEL, H(f));
	CUresult rc = need_live(&c, kernel ? K_KERNEL : K_FUNC, H(f), &fo);
	if (rc)
		return leave(&c, rc);
	rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	if (!kernel && fo->owner->owner != ctx_home(cur)) {
		misuse(&c, fo->value, "function's module belongs to another context than the current one");
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	rc = stream_context(&c, s, &sctx);
	if (rc)
		return leave(&c, rc);
	if (ctx_home(sctx) != ctx_home(cur)) {
		misuse(&c, H(s), "kernel launched on a stream of another context");
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	}
	if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long long)bx * by * bz > 1024 || bx > 1024 || by > 1024 || bz > 64 ||
	    gy > 65535 || gz > 65535 || gx > 2147483647u || shmem > 232448)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	return leave(&c, capture_work(&c, s, cur, W_NODE));
}

CUresult sim_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			    unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
			    CUstream s, void **params, void **extra)
{
	(void)params;
	(void)extra;
	return launch(F_cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shmem, s);
}

CUresult sim_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	(void)params;
	(void)extra;
	if (!config || (config->numAttrs && !config->attrs)) {
		struct call c;
		if (enter_with(&c, F_cuLaunchKernelEx, H(f), ARGS(0)))
			return leave(&c, c.rc);
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	return launch(F_cuLaunchKernelEx, f, config->gridDimX, config->gridDimY, config->gridDimZ,
		      config->blockDimX, config->blockDimY, config->blockDimZ, config->sharedMemBytes,
		      config->hStream);
}

/* Host work queued on a stream: the stream is checked, the call logged, and
 * the function runs at once on the calling thread, after the simulator's lock
 * is let go (so that it may call the driver). On a capturing stream a host
 * function becomes a node and is not called; a callback is refused. */
static CUresult host_work(enum fn fn, CUstream s, CUhostFn hfn, CUstreamCallback cb, void *user,
			  unsigned int flags)
{
	struct call c;
	if (enter_with(&c, fn, H(s), ARGS(.flags = flags, .stream = H(s))))
		return leave(&c, c.rc);
	if ((!hfn && !cb) || flags != 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ctx;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc == CUDA_SUCCESS)
		rc = capture_work(&c, s, ctx, hfn ? W_NODE : W_CALLBACK);
	bool captured = c.captured != 0;
	leave(&c, rc);
	if (rc || captured)
		return rc;
	if (hfn)
		hfn(user);
	else
		cb(s, CUDA_SUCCESS, user);
	return CUDA_SUCCESS;
}

CUresult sim_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *user)
{
	return host_work(F_cuLaunchHostFunc, s, fn, NULL, user, 0);
}

CUresult sim_cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *user, unsigned int flags)
{
	return host_work(F_cuStreamAddCallback, s, NULL, cb, user, flags);
}

/* The per-thread default stream forms: a NULL stream means the per-thread one. */
#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult sim_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
				 unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
				 CUstream s, void **params, void **extra)
{
	return sim_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, PTSZ(s), params, extra);
}

CUresult sim_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	if (!config)
		return sim_cuLaunchKernelEx(config, f, params, extra);
	CUlaunchConfig copy = *config;
	copy.hStream = PTSZ(copy.hStream);
	return sim_cuLaunchKernelEx(&copy, f, params, extra);
}

CUresult sim_cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *user)
{
	return sim_cuLaunchHostFunc(PTSZ(s), fn, user);
}

CUresult sim_cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *user, unsigned int flags)
{
	return sim_cuStreamAddCallback(PTSZ(s), cb, user, flags);
}

CUresult sim_cuEventRecord_ptsz(CUevent ev, CUstream s)
{
	return sim_cuEventRecord(ev, PTSZ(s));
}

CUresult sim_cuStreamSynchronize_ptsz(CUstream s)
{
	return sim_cuStreamSynchronize(PTSZ(s));
}

CUresult sim_cuStreamQuery_ptsz(CUstream s)
{
	return sim_cuStreamQuery(PTSZ(s));
}

CUresult sim_cuStreamWaitEvent_ptsz(CUstream s, CUevent ev, unsigned int flags)
{
	return sim_cuStreamWaitEvent(PTSZ(s), ev, flags);
}

CUresult sim_cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
	return sim_cuGraphLaunch(e, PTSZ(s));
}

/* --- device and host memory ------------------------------------------------- */


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
	return destroy_plain(F_cuGraphDestroy, K_GRAPH, H(g), !g, false);
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
	if (go->cap) {
		misuse(&c, go->value, "graph is being built by a stream capture: end the capture first");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	if ((rc = capture_unsafe()))
		return leave(&c, rc);
	struct obj *e = obj_new(K_EXEC, ctx_home(cur), 0);
	*pe = (CUgraphExec)(uintptr_t)e->value;
	c.handle = e->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGraphExecDestroy(CUgraphExec e)
{
	return destroy_plain(F_cuGraphExecDestroy, K_EXEC, H(e), !e, true);
}

CUresult sim_cuGraphLaunch(CUgraphExec e, CUstream s)
{
	struct call c;
	if (enter_with(&c, F_cuGraphLaunch, H(e), ARGS(.handle2 = H(s))))
		return leave(&c, c.rc);
	struct obj *o, *sctx = NULL;
	CUresult rc = need_live(&c, K_EXEC, H(e), &o);
	if (rc == CUDA_SUCCESS)
		rc = need_stream_of(&c, o, s, "graph exec launched");
	if (rc == CUDA_SUCCESS)
		rc = stream_context(&c, s, &sctx);
	if (rc == CUDA_SUCCESS)
		rc = capture_work(&c, s, sctx, W_NODE);
	return leave(&c, rc);
}
