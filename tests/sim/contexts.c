/* SPDX-License-Identifier: MIT */
/* contexts.c - contexts: create, destroy, the context stack, ids, and primary contexts. */
#include "sim.h"

#include <unistd.h>

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
	/* the documentation calls it a primary context with a green context's resources: 201 as for one */
	if (o->green) {
		misuse(&c, o->value, "context is a green context's: destroy it with cuGreenCtxDestroy");
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	obj_kill(o, "already destroyed");
	/* Destroying this thread's current context pops it; anywhere else it stays, stale. */
	if (stack_top() == H(ctx))
		T.depth--;
	pool_apart(&c, false);  /* it synchronizes and destroys streams: as those, beside a pool's destroy */
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
	CUresult rc = need_current(&cur);
	if (rc == CUDA_SUCCESS)
		rc = capture_ctx_sync(cur);
	if (rc == CUDA_SUCCESS) {
		/* everything queued in the context has finished, orphaned work too (pools.c) */
		pool_ctx_done(cur);
		pool_release(cur->device);
	}
	if (rc == CUDA_SUCCESS) {
		/* the synchronize runs, the lock let go: a capture begun or
		 * ended meanwhile in this context is a misuse (capture.c), as is
		 * a pool's destroy anywhere (pools.c) */
		cur->syncing++;
		pool_apart(&c, false);
		cur->syncing--;
	}
	return leave(&c, rc);
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
struct obj *primary_retain(CUdevice dev)
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
bool primary_release(CUdevice dev)
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
