/* SPDX-License-Identifier: MIT */
/* green.c - SM resources and green contexts (CUDA 12.4+): cuDeviceGetDevResource,
 * cuDevSmResourceSplitByCount, cuDevResourceGenerateDesc, cuGreenCtxCreate,
 * cuGreenCtxDestroy, cuCtxFromGreenCtx, cuGreenCtxGetId, cuGreenCtxStreamCreate,
 * cuGreenCtxRecordEvent, cuGreenCtxWaitEvent, cuGreenCtxGetDevResource, and
 * cuStreamGetCtx_v2, which tells a green context's CUcontext from others.
 *
 * Measured on the H200 (driver 580.159.04; DRIVER-FACTS.md, cudasim.h lists
 * the answers): a green context retains the device's primary context and its
 * destroy releases it; its CUcontext is a context of its own (its own value
 * and id) that can be made current, but of what is made while it is current
 * only the streams are its own (they die with it, leaked: every call naming
 * them answers 709); events, memory, modules, host memory and graph execs
 * belong to the primary context underneath (ctx_home).
 *
 * Records: a CUgreenCtx is a K_GREEN, its CUcontext a K_CTX hidden from
 * cusim_live (the green context counts as CUSIM_GREEN), each pointing at the
 * other through ->green; a CUdevResourceDesc is a K_DESC, never freed. */
#include "sim.h"

/* The model of an H200's SMs (cudasim.h): 132 SMs; a partition is at least
 * 8 SMs, in multiples of 8 (the documentation's guideline for compute
 * capability 9.0+), or 2 and 2 with CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING. */
#define SIM_SM_COUNT 132u
#define SIM_SM_MIN 8u
#define SIM_SM_ALIGN 8u
#define SIM_SM_MIN_LOOSE 2u
#define SIM_SM_ALIGN_LOOSE 2u
#define SIM_SPLIT_FLAGS (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING | CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE)

/* What the simulator keeps in a CUdevResource's internal padding (the structure
 * is the caller's; the real driver keeps its own state there too). */
struct res_tag {
	uint32_t magic;
	int32_t device;
	uint64_t split;              /* 0: a device's (or a green context's) whole set; else the split that made it */
};
#define SIM_RES_MAGIC 0x6375736du  /* "cusm" */

_Static_assert(sizeof(struct res_tag) <= sizeof(((CUdevResource *)0)->_internal_padding), "the tag fits");

static void res_fill(CUdevResource *r, int device, uint64_t split, unsigned sms, bool loose)
{
	memset(r, 0, sizeof *r);
	r->type = CU_DEV_RESOURCE_TYPE_SM;
	r->sm.smCount = sms;
	r->sm.minSmPartitionSize = loose ? SIM_SM_MIN_LOOSE : SIM_SM_MIN;
	r->sm.smCoscheduledAlignment = loose ? SIM_SM_ALIGN_LOOSE : SIM_SM_ALIGN;
	struct res_tag t = { SIM_RES_MAGIC, device, split };
	memcpy(r->_internal_padding, &t, sizeof t);
}

/* A resource this simulator filled in: its tag; false for anything else. */
static bool res_tag(const CUdevResource *r, struct res_tag *t)
{
	memcpy(t, r->_internal_padding, sizeof *t);
	return t->magic == SIM_RES_MAGIC && valid_device(t->device);
}

bool green_hidden(const char *symbol)
{
	static const char *const names[] = {
		"cuDeviceGetDevResource", "cuDevSmResourceSplitByCount", "cuDevSmResourceSplit",
		"cuDevResourceGenerateDesc", "cuCtxFromGreenCtx", "cuCtxGetDevResource", "cuStreamGetGreenCtx",
	};
	static const char *const resources[] = {
		"cuDeviceGetDevResource", "cuDevSmResourceSplitByCount", "cuDevSmResourceSplit",
		"cuDevResourceGenerateDesc", "cuCtxGetDevResource",
	};
	if (!S.hide_green)
		return false;
	if (S.hide_green == 2) {
		for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++)
			if (strcmp(symbol, resources[i]) == 0)
				return true;
		return false;
	}
	if (strncmp(symbol, "cuGreenCtx", 10) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(symbol, names[i]) == 0)
			return true;
	return false;
}

struct obj *ctx_home(struct obj *ctx)
{
	if (!ctx->green)
		return ctx;
	/* the primary record of its device, which primary_retain made before the green context */
	return S.primary[ctx->device];
}

/* --- resources ------------------------------------------------------------------ */

CUresult sim_cuDeviceGetDevResource(CUdevice dev, CUdevResource *res, CUdevResourceType type)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceGetDevResource, 0, ARGS(.flags = (unsigned)type, .arg = dev)))
		return leave(&c, c.rc);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	if (!res)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (type != CU_DEV_RESOURCE_TYPE_SM)
		return leave(&c, CUDA_ERROR_INVALID_RESOURCE_TYPE);
	res_fill(res, dev, 0, SIM_SM_COUNT, false);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nb, const CUdevResource *input,
					 CUdevResource *remaining, unsigned int flags, unsigned int min_count)
{
	struct call c;
	if (enter_with(&c, F_cuDevSmResourceSplitByCount, 0,
		       ARGS(.flags = flags, .arg = min_count, .handle2 = nb ? *nb : 0)))
		return leave(&c, c.rc);
	if (!nb || !input || (flags & ~(unsigned)SIM_SPLIT_FLAGS) || (result && *nb == 0))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (input->type != CU_DEV_RESOURCE_TYPE_SM)
		return leave(&c, CUDA_ERROR_INVALID_RESOURCE_TYPE);
	struct res_tag t;
	if (!res_tag(input, &t) || min_count > input->sm.smCount)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	/* documented: a split's output cannot be split again before it makes a green context */
	if (t.split)
		return leave(&c, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
	bool loose = flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING;
	unsigned lo = loose ? SIM_SM_MIN_LOOSE : SIM_SM_MIN, align = loose ? SIM_SM_ALIGN_LOOSE : SIM_SM_ALIGN;
	unsigned size = min_count < lo ? lo : min_count;
	size = (size + align - 1) / align * align;
	unsigned groups = size <= input->sm.smCount ? input->sm.smCount / size : 0;
	if (!result) {
		*nb = groups;
		c.a.handle2 = groups;
		return leave(&c, CUDA_SUCCESS);
	}
	if (groups > *nb)
		groups = *nb;
	uint64_t split = ++S.last_split;
	for (unsigned i = 0; i < groups; i++)
		res_fill(&result[i], t.device, split, size, loose);
	if (remaining)
		res_fill(remaining, t.device, split, input->sm.smCount - groups * size, loose);
	*nb = groups;
	c.a.handle2 = groups;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuDevResourceGenerateDesc(CUdevResourceDesc *pdesc, CUdevResource *res, unsigned int n)
{
	struct call c;
	if (enter_with(&c, F_cuDevResourceGenerateDesc, 0, ARGS(.arg = n)))
		return leave(&c, c.rc);
	if (!pdesc || !res || n == 0)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	unsigned sms = 0;
	struct res_tag first = { 0 };
	for (unsigned i = 0; i < n; i++) {
		struct res_tag t;
		if (res[i].type != CU_DEV_RESOURCE_TYPE_SM)
			return leave(&c, CUDA_ERROR_INVALID_RESOURCE_TYPE);
		if (!res_tag(&res[i], &t))
			return leave(&c, CUDA_ERROR_INVALID_VALUE);
		if (i == 0)
			first = t;
		/* documented: one device, and several SM resources only from one split */
		else if (t.device != first.device || !t.split || t.split != first.split)
			return leave(&c, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
		sms += res[i].sm.smCount;
	}
	if (sms == 0)
		return leave(&c, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION);
	struct obj *d = obj_new(K_DESC, NULL, 0);
	obj_hide(d);
	d->device = first.device;
	d->sms = sms;
	*pdesc = (CUdevResourceDesc)(uintptr_t)d->value;
	c.handle = d->value;
	return leave(&c, CUDA_SUCCESS);
}

/* --- green contexts ----------------------------------------------------------------- */

/* No 100 ms here: the real driver's create takes that long (measured), the model does not. */
CUresult sim_cuGreenCtxCreate(CUgreenCtx *pg, CUdevResourceDesc desc, CUdevice dev, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuGreenCtxCreate, 0, ARGS(.flags = flags, .arg = dev, .handle2 = H(desc))))
		return leave(&c, c.rc);
	if (!pg || flags != CU_GREEN_CTX_DEFAULT_STREAM)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	struct obj *d = find(K_DESC, H(desc));
	if (!d) {
		misuse(&c, H(desc), "resource descriptor not live: never created");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	if (d->device != dev)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	stack_sync();
	struct obj *prim = primary_retain(dev);
	struct obj *g = obj_new(K_GREEN, NULL, 0);
	struct obj *x = obj_new(K_CTX, NULL, 0);
	obj_hide(x);                    /* counted as its green context */
	g->device = x->device = dev;
	g->sms = x->sms = d->sms;
	x->flags = prim->flags;
	x->ctx_id = ++S.last_ctx_id;
	g->green = x;
	x->green = g;
	*pg = (CUgreenCtx)(uintptr_t)g->value;
	c.handle = g->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGreenCtxDestroy(CUgreenCtx g)
{
	struct call c;
	if (enter(&c, F_cuGreenCtxDestroy, H(g)))
		return leave(&c, c.rc);
	if (!g)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	struct obj *o;
	CUresult rc = need_live(&c, K_GREEN, H(g), &o);
	if (rc)
		return leave(&c, rc);
	struct obj *x = o->green;
	c.a.handle2 = x->value;
	/* Its streams die with it and are leaked (documented; measured 709 for each call after, no crash). */
	for (struct obj *k = x->kid_first; k; k = k->sib_next) {
		if (k->kind == K_STREAM) {
			k->leaked = true;
			S.leaked_streams++;
		}
	}
	obj_kill(x, "its green context was destroyed");
	obj_kill(o, "already destroyed");
	/* The CUcontext stays on any thread's stack that has it, stale (measured); the primary's retain goes. */
	primary_release(o->device);
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxFromGreenCtx(CUcontext *pctx, CUgreenCtx g)
{
	struct call c;
	if (enter(&c, F_cuCtxFromGreenCtx, H(g)))
		return leave(&c, c.rc);
	if (!pctx)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!g)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	struct obj *o;
	CUresult rc = need_live(&c, K_GREEN, H(g), &o);
	if (rc)
		return leave(&c, rc);
	*pctx = (CUcontext)(uintptr_t)o->green->value;
	c.a.handle2 = o->green->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGreenCtxGetId(CUgreenCtx g, unsigned long long *id)
{
	struct call c;
	if (enter(&c, F_cuGreenCtxGetId, H(g)))
		return leave(&c, c.rc);
	if (!id)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!g)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	struct obj *o;
	CUresult rc = need_live(&c, K_GREEN, H(g), &o);
	if (rc)
		return leave(&c, rc);
	*id = o->green->ctx_id;
	c.a.arg = (long long)*id;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGreenCtxStreamCreate(CUstream *ps, CUgreenCtx g, unsigned int flags, int priority)
{
	struct call c;
	if (enter_with(&c, F_cuGreenCtxStreamCreate, 0, ARGS(.flags = flags, .arg = priority, .handle2 = H(g))))
		return leave(&c, c.rc);
	/* documented: CU_STREAM_NON_BLOCKING must be given */
	if (!ps || flags != CU_STREAM_NON_BLOCKING)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!g)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	struct obj *o;
	CUresult rc = need_live(&c, K_GREEN, H(g), &o);
	if (rc)
		return leave(&c, rc);
	if (!ctx_home(o->green)->live)
		return leave(&c, CUDA_ERROR_CONTEXT_IS_DESTROYED);
	if (priority > SIM_PRIO_LEAST)
		priority = SIM_PRIO_LEAST;
	if (priority < SIM_PRIO_GREATEST)
		priority = SIM_PRIO_GREATEST;
	struct obj *s = obj_new(K_STREAM, o->green, 0);
	pool_stream_new(s);
	s->flags = flags;
	s->priority = priority;
	*ps = (CUstream)(uintptr_t)s->value;
	c.handle = s->value;
	return leave(&c, CUDA_SUCCESS);
}

/* The green context and event of cuGreenCtxRecordEvent / -WaitEvent. */
static CUresult green_and_event(struct call *c, CUgreenCtx g, CUevent ev, struct obj **go, struct obj **eo)
{
	if (!g)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ev)
		return CUDA_ERROR_INVALID_HANDLE;
	CUresult rc = need_live(c, K_GREEN, H(g), go);
	if (rc == CUDA_SUCCESS)
		rc = need_live(c, K_EVENT, H(ev), eo);
	return rc;
}

/* Every stream of the green context has finished what came before: the
 * simulator runs work at once, so the record is a record of "now" (model). */
CUresult sim_cuGreenCtxRecordEvent(CUgreenCtx g, CUevent ev)
{
	struct call c;
	if (enter_with(&c, F_cuGreenCtxRecordEvent, H(g), ARGS(.handle2 = H(ev))))
		return leave(&c, c.rc);
	struct obj *go, *eo;
	CUresult rc = green_and_event(&c, g, ev, &go, &eo);
	if (rc)
		return leave(&c, rc);
	/* documented: the event and the green context of one primary context, else 400 */
	if (eo->owner != ctx_home(go->green))
		return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	if ((rc = capture_green(go->green, NULL)))
		return leave(&c, rc);
	capture_clear_event(eo);
	pool_event_recorded(eo, NULL);
	eo->recorded = true;
	eo->stamp_ms = now_ms();
	return leave(&c, CUDA_SUCCESS);
}

/* An event of any context or device; documented 900, captures invalidated,
 * when the green context has a capturing stream or the event was recorded in
 * a capture still going on. */
CUresult sim_cuGreenCtxWaitEvent(CUgreenCtx g, CUevent ev)
{
	struct call c;
	if (enter_with(&c, F_cuGreenCtxWaitEvent, H(g), ARGS(.handle2 = H(ev))))
		return leave(&c, c.rc);
	struct obj *go, *eo;
	CUresult rc = green_and_event(&c, g, ev, &go, &eo);
	if (rc == CUDA_SUCCESS)
		rc = capture_green(go->green, eo);
	return leave(&c, rc);
}

CUresult sim_cuGreenCtxGetDevResource(CUgreenCtx g, CUdevResource *res, CUdevResourceType type)
{
	struct call c;
	if (enter_with(&c, F_cuGreenCtxGetDevResource, H(g), ARGS(.flags = (unsigned)type)))
		return leave(&c, c.rc);
	if (!res)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!g)
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	struct obj *o;
	CUresult rc = need_live(&c, K_GREEN, H(g), &o);
	if (rc)
		return leave(&c, rc);
	if (type != CU_DEV_RESOURCE_TYPE_SM)
		return leave(&c, CUDA_ERROR_INVALID_RESOURCE_TYPE);
	res_fill(res, o->device, 0, o->sms, false);
	return leave(&c, CUDA_SUCCESS);
}

/* cuStreamGetCtx_v2 (12.5): the contexts of a stream, or for a default stream
 * by name of the current context. Documented (not measured on the H200): for
 * a green context's stream, or a green context current, the primary context
 * of its device in *pctx and the green context in *pgreen; else the context
 * and NULL; CU_STREAM_PER_THREAD with a green context current answers
 * CUDA_ERROR_INVALID_HANDLE, no context current CUDA_ERROR_INVALID_CONTEXT.
 * A stream not live is undefined behaviour there: a misuse here. */
CUresult sim_cuStreamGetCtx_v2(CUstream hs, CUcontext *pctx, CUgreenCtx *pgreen)
{
	struct call c;
	if (enter(&c, F_cuStreamGetCtx, H(hs)))
		return leave(&c, c.rc);
	if (!pctx || !pgreen)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *x;
	CUresult rc;
	if (is_default_stream(hs)) {
		if ((rc = need_current(&x)) != CUDA_SUCCESS)
			return leave(&c, rc);
		if (x->green && hs == CU_STREAM_PER_THREAD)
			return leave(&c, CUDA_ERROR_INVALID_HANDLE);
	} else {
		struct obj *so;
		if ((rc = need_live(&c, K_STREAM, H(hs), &so)) != CUDA_SUCCESS)
			return leave(&c, rc);
		x = so->owner;
	}
	*pctx = (CUcontext)(uintptr_t)ctx_home(x)->value;
	*pgreen = x->green ? (CUgreenCtx)(uintptr_t)x->green->value : NULL;
	c.a.handle2 = ctx_home(x)->value;
	c.a.arg = x->green ? (long long)x->green->value : 0;
	return leave(&c, CUDA_SUCCESS);
}
