/* SPDX-License-Identifier: MIT */
/* capture.c - stream capture: cuStreamBeginCapture to cuStreamEndCapture, what a
 * capture makes of work queued on its streams, the calls it forbids (the
 * unsafe-call rule of cuThreadExchangeStreamCaptureMode, and the legacy
 * stream's implicit dependency on blocking streams), events recorded in a
 * capture, and other streams joining one through cuStreamWaitEvent.
 *
 * Measured on the H200 (driver 580.159.04; DRIVER-FACTS.md and cudasim.h list
 * the answers): a capture's graph exists from its begin and is handed out only
 * by a successful end; a capture that is invalidated, ended on the wrong
 * thread or with unjoined work, or whose origin stream is destroyed, takes its
 * graph with it. */
#include "sim.h"

/* This thread's number, for "the thread that began a capture". */
uint64_t thread_id(void)
{
	if (!T.tid)
		T.tid = ++S.last_tid;
	return T.tid;
}

/* The legacy default stream: NULL from the plain entry points (their _ptsz forms pass CU_STREAM_PER_THREAD). */
bool is_legacy_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY;
}

/* The live stream object s names, NULL for a default stream (checked live by the caller). */
static struct obj *stream_obj(CUstream s)
{
	if (is_default_stream(s))
		return NULL;
	struct obj *o = find(K_STREAM, H(s));
	return o && o->live ? o : NULL;
}

static struct capture *capture_by_id(unsigned long long id)
{
	for (struct capture *cap = S.captures; cap; cap = cap->next)
		if (cap->id == id)
			return cap;
	return NULL;
}

static void member_add(struct capture *cap, struct obj *s)
{
	s->cap = cap;
	s->cap_work = s->cap_joined = 0;
	s->cap_last = NULL;
	s->link_prev = NULL;
	s->link_next = cap->streams;
	if (cap->streams)
		cap->streams->link_prev = s;
	cap->streams = s;
	cap->members++;
}

static void member_remove(struct obj *s)
{
	struct capture *cap = s->cap;
	if (s->link_prev)
		s->link_prev->link_next = s->link_next;
	else
		cap->streams = s->link_next;
	if (s->link_next)
		s->link_next->link_prev = s->link_prev;
	s->link_prev = s->link_next = NULL;
	cap->members--;
	s->cap = NULL;
	s->cap_work = s->cap_joined = 0;
	s->cap_last = NULL;
}

/* Ends a capture: its streams leave it, and its graph is kept (a successful end hands it out) or dies. */
static void capture_end(struct capture *cap, bool keep_graph)
{
	while (cap->streams)
		member_remove(cap->streams);
	for (struct capture **p = &S.captures; *p; p = &(*p)->next) {
		if (*p == cap) {
			*p = cap->next;
			break;
		}
	}
	S.ncaptures--;
	cap->graph->cap = NULL;
	if (!keep_graph)
		obj_kill(cap->graph, "its capture ended without handing it out");
	free(cap);
}

/* Whether a blocking stream of ctx is in cap: the legacy stream of ctx would depend on it. */
static bool blocks_legacy(const struct capture *cap, const struct obj *ctx)
{
	for (const struct obj *s = cap->streams; s; s = s->link_next)
		if (s->owner == ctx && !(s->flags & CU_STREAM_NON_BLOCKING))
			return true;
	return false;
}

static bool has_stream_of(const struct capture *cap, const struct obj *ctx)
{
	for (const struct obj *s = cap->streams; s; s = s->link_next)
		if (s->owner == ctx)
			return true;
	return false;
}

/* The unsafe-call rule of cuThreadExchangeStreamCaptureMode, for this thread's mode:
 * GLOBAL, its own capture unless begun RELAXED, or another thread's GLOBAL capture;
 * THREAD_LOCAL, its own capture unless begun RELAXED; RELAXED, none. */
static bool forbids(const struct capture *cap, uint64_t me)
{
	bool own = cap->thread == me;
	switch (T.cap_mode) {
	case CU_STREAM_CAPTURE_MODE_RELAXED:
		return false;
	case CU_STREAM_CAPTURE_MODE_THREAD_LOCAL:
		return own && cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
	default:
		return own ? cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED : cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
	}
}

/* An invalidated capture forbids as an active one does (measured: a second cuMemAlloc is 900 too). */
CUresult capture_unsafe(void)
{
	uint64_t me = thread_id();
	CUresult rc = CUDA_SUCCESS;
	for (struct capture *cap = S.captures; cap; cap = cap->next) {
		if (forbids(cap, me)) {
			cap->invalidated = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return rc;
}

CUresult capture_legacy(struct obj *ctx)
{
	CUresult rc = CUDA_SUCCESS;
	for (struct capture *cap = S.captures; cap; cap = cap->next) {
		if (blocks_legacy(cap, ctx)) {
			cap->invalidated = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		}
	}
	return rc;
}

/* Measured 900 in every mode, from the capturing thread or another; stricter, the unsafe-call rule too. */
CUresult capture_ctx_sync(struct obj *ctx)
{
	CUresult rc = capture_unsafe();
	for (struct capture *cap = S.captures; cap; cap = cap->next) {
		if (cap->ctx == ctx || has_stream_of(cap, ctx)) {
			cap->invalidated = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return rc;
}

CUresult capture_green(struct obj *ctx, struct obj *ev)
{
	CUresult rc = CUDA_SUCCESS;
	struct capture *theirs = ev && ev->cap_id ? capture_by_id(ev->cap_id) : NULL;
	for (struct capture *cap = S.captures; cap; cap = cap->next) {
		if (has_stream_of(cap, ctx) || cap == theirs) {
			cap->invalidated = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	}
	return rc;
}

CUresult capture_stream_sync(CUstream s, struct obj *ctx)
{
	struct obj *so = stream_obj(s);
	if (so && so->cap) {
		so->cap->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return is_legacy_stream(s) ? capture_legacy(ctx) : CUDA_SUCCESS;
}

/* A node of cap's graph, added by stream so. */
static void add_node(struct capture *cap, struct obj *so)
{
	struct obj *n = obj_new(K_NODE, cap->graph, 0);
	so->cap_work++;
	so->cap_last = (CUgraphNode)(uintptr_t)n->value;
}

CUresult capture_work(struct call *c, CUstream s, struct obj *ctx, enum work w)
{
	struct obj *so = stream_obj(s);
	if (!so || !so->cap) {
		CUresult rc = is_legacy_stream(s) ? capture_legacy(ctx) : CUDA_SUCCESS;
		if (rc == CUDA_SUCCESS)
			pool_stream_work(s);      /* the stream now has work that may not have finished */
		return rc;
	}
	struct capture *cap = so->cap;
	if (cap->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (w == W_CALLBACK) {
		cap->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	c->captured = cap->graph->value;
	if (w == W_NODE)
		add_node(cap, so);
	return CUDA_SUCCESS;
}

void capture_mark_event(struct obj *ev, CUstream s)
{
	struct obj *so = stream_obj(s);
	ev->cap_id = so->cap->id;
	ev->cap_stream = so;
	ev->cap_seq = so->cap_work;
	ev->cap_node = so->cap_last;
	ev->recorded = false;
}

void capture_clear_event(struct obj *ev)
{
	ev->cap_id = 0;
	ev->cap_stream = NULL;
	ev->cap_node = NULL;
}

/* While its capture is active: 907, and the capture invalidated; once it is
 * invalidated or ended: 1 (measured, query and synchronize alike). Else the
 * unsafe-call rule. */
CUresult capture_event_wait(struct obj *ev)
{
	if (!ev->cap_id)
		return capture_unsafe();
	struct capture *cap = capture_by_id(ev->cap_id);
	if (cap && !cap->invalidated) {
		cap->invalidated = true;
		return CUDA_ERROR_CAPTURED_EVENT;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult capture_wait(struct call *c, CUstream s, struct obj *ctx, struct obj *ev, unsigned int flags)
{
	struct obj *so = stream_obj(s);
	struct capture *mine = so ? so->cap : NULL;
	struct capture *theirs = ev->cap_id ? capture_by_id(ev->cap_id) : NULL;
	if (!so && is_legacy_stream(s)) {
		CUresult rc = capture_legacy(ctx);
		if (rc)
			return rc;
	}
	if (mine && mine->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (flags == CU_EVENT_WAIT_EXTERNAL) {
		/* an event-wait node; the flag is invalid outside capture */
		if (!mine)
			return CUDA_ERROR_INVALID_VALUE;
		c->captured = mine->graph->value;
		add_node(mine, so);
		return CUDA_SUCCESS;
	}
	if (ev->cap_id && !theirs) {
		/* recorded in a capture that has ended: measured 1, and a capturing stream's capture invalidated */
		if (mine)
			mine->invalidated = true;
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!theirs) {
		/* an event recorded outside any capture: a capture may not depend on it */
		if (!mine)
			return CUDA_SUCCESS;
		mine->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
	}
	if (mine == theirs) {
		/* a dependency inside the capture; the origin waiting joins the stream back up to that point */
		c->captured = mine->graph->value;
		struct obj *from = ev->cap_stream;
		if (so == mine->origin && from->live && from->cap == mine && from->cap_joined < ev->cap_seq)
			from->cap_joined = ev->cap_seq;
		if (!so->cap_last)
			so->cap_last = ev->cap_node;
		return CUDA_SUCCESS;
	}
	if (mine) {
		mine->invalidated = theirs->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_MERGE;
	}
	if (theirs->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (!so) {
		/* a default stream cannot join a capture (the simulator refuses their capture) */
		theirs->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	/* s joins the capture, depending on the point the event marks */
	member_add(theirs, so);
	so->cap_last = ev->cap_node;
	c->captured = theirs->graph->value;
	return CUDA_SUCCESS;
}

void capture_stream_dies(struct obj *s)
{
	struct capture *cap = s->cap;
	if (s == cap->origin)
		capture_end(cap, false);
	else
		member_remove(s);
}

void capture_reset(void)
{
	while (S.captures) {
		struct capture *next = S.captures->next;
		free(S.captures);
		S.captures = next;
	}
	S.ncaptures = 0;
}

/* --- entry points ------------------------------------------------------------ */

/* A capture's begin or end while cuCtxSynchronize runs in its context on
 * another thread: a SIGSEGV in the real driver (measured on the H200,
 * tools/facts/sync_beside_capture.c), so a misuse here; the call goes on. */
static void beside_synchronize(struct call *c, struct obj *ctx, CUstream s)
{
	if (ctx && ctx->syncing)
		misuse(c, H(s), "stream capture begun or ended while cuCtxSynchronize runs in its context on another "
				"thread: a crash of the real driver");
}

/* The stream a begin or an end names: its object (NULL for a default
 * stream), its context checked live and for a synchronize beside it. */
static CUresult capture_stream(struct call *c, CUstream s, struct obj **so)
{
	struct obj *ctx;
	CUresult rc = stream_context(c, s, &ctx);
	if (rc)
		return rc;
	beside_synchronize(c, ctx, s);
	*so = stream_obj(s);
	return CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode)
{
	struct call c;
	if (enter_with(&c, F_cuStreamBeginCapture, H(s), ARGS(.flags = (unsigned)mode)))
		return leave(&c, c.rc);
	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *so;
	CUresult rc = capture_stream(&c, s, &so);
	if (rc)
		return leave(&c, rc);
	/* The legacy stream is refused (measured); the per-thread one too, stricter than the real driver. */
	if (is_default_stream(s))
		return leave(&c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	if (so->cap)
		return leave(&c, CUDA_ERROR_ILLEGAL_STATE);
	struct capture *cap = xrealloc(NULL, sizeof *cap);
	memset(cap, 0, sizeof *cap);
	cap->id = ++S.last_capture_id;
	cap->origin = so;
	cap->ctx = so->owner;
	cap->mode = mode;
	cap->thread = thread_id();
	cap->graph = obj_new(K_GRAPH, NULL, 0);
	cap->graph->cap = cap;
	cap->next = S.captures;
	S.captures = cap;
	S.ncaptures++;
	member_add(cap, so);
	c.a.arg = (long long)cap->id;
	c.a.handle2 = cap->graph->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode)
{
	return begin_capture(s, mode);
}

/* Whether a stream other than the origin has captured work the origin has not waited on. */
static bool unjoined(const struct capture *cap)
{
	for (const struct obj *s = cap->streams; s; s = s->link_next)
		if (s != cap->origin && s->cap_work > s->cap_joined)
			return true;
	return false;
}

static CUresult end_capture(CUstream s, CUgraph *pg)
{
	struct call c;
	if (enter(&c, F_cuStreamEndCapture, H(s)))
		return leave(&c, c.rc);
	if (!pg)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	*pg = NULL;
	struct obj *so;
	CUresult rc = capture_stream(&c, s, &so);
	if (rc)
		return leave(&c, rc);
	if (!so || !so->cap)
		return leave(&c, CUDA_ERROR_ILLEGAL_STATE);
	struct capture *cap = so->cap;
	if (so != cap->origin) {
		cap->invalidated = true;
		return leave(&c, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	}
	if (cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED && cap->thread != thread_id())
		rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	else if (cap->invalidated)
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	else if (unjoined(cap))
		rc = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	struct obj *g = cap->graph;
	capture_end(cap, rc == CUDA_SUCCESS);
	if (rc == CUDA_SUCCESS) {
		*pg = (CUgraph)(uintptr_t)g->value;
		c.a.handle2 = g->value;
	}
	return leave(&c, rc);
}

CUresult sim_cuStreamEndCapture(CUstream s, CUgraph *pg)
{
	return end_capture(s, pg);
}

static CUstreamCaptureStatus status_of(const struct obj *so)
{
	if (!so || !so->cap)
		return CU_STREAM_CAPTURE_STATUS_NONE;
	return so->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* Asking about the legacy stream beside a capture of a blocking stream: 906, the capture left alone. */
static bool legacy_beside_capture(CUstream s, const struct obj *ctx)
{
	if (!is_legacy_stream(s))
		return false;
	for (const struct capture *cap = S.captures; cap; cap = cap->next)
		if (blocks_legacy(cap, ctx))
			return true;
	return false;
}

static CUresult is_capturing(CUstream s, CUstreamCaptureStatus *status)
{
	struct call c;
	if (enter(&c, F_cuStreamIsCapturing, H(s)))
		return leave(&c, c.rc);
	if (!status)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ctx;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc)
		return leave(&c, rc);
	if (legacy_beside_capture(s, ctx))
		return leave(&c, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	*status = status_of(stream_obj(s));
	c.a.arg = *status;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
	return is_capturing(s, status);
}

/* The edge data of a stream's one dependency: the default edge. */
static const CUgraphEdgeData default_edge;

static CUresult capture_info(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
			     const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct call c;
	if (enter(&c, F_cuStreamGetCaptureInfo, H(s)))
		return leave(&c, c.rc);
	if (!status || (edges && !deps))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *ctx;
	CUresult rc = stream_context(&c, s, &ctx);
	if (rc)
		return leave(&c, rc);
	if (legacy_beside_capture(s, ctx))
		return leave(&c, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	struct obj *so = stream_obj(s);
	*status = status_of(so);
	c.a.arg = *status;
	/* The other outputs only for an active capture: the real driver leaves them alone otherwise. */
	if (*status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		struct capture *cap = so->cap;
		c.a.handle2 = cap->graph->value;
		if (id)
			*id = cap->id;
		if (graph)
			*graph = (CUgraph)(uintptr_t)cap->graph->value;
		if (deps)
			*deps = so->cap_last ? &so->cap_last : NULL;
		if (edges)
			*edges = so->cap_last ? &default_edge : NULL;
		if (ndeps)
			*ndeps = so->cap_last ? 1 : 0;
	}
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
				    const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	return capture_info(s, status, id, graph, deps, edges, ndeps);
}

CUresult sim_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	struct call c;
	if (enter_with(&c, F_cuThreadExchangeStreamCaptureMode, 0, ARGS(.flags = mode ? (unsigned)*mode : 0)))
		return leave(&c, c.rc);
	if (!mode) {
		misuse(&c, 0, "NULL mode: the real driver crashes");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	if ((unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
		misuse(&c, 0, "mode %u is no CUstreamCaptureMode: the real driver takes it, and its rule is then undefined",
		       (unsigned)*mode);
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	stack_sync();
	CUstreamCaptureMode old = T.cap_mode;
	T.cap_mode = *mode;
	*mode = old;
	c.a.arg = old;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	struct call c;
	if (enter(&c, F_cuGraphGetNodes, H(g)))
		return leave(&c, c.rc);
	if (!n || (nodes && *n == 0))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *go;
	CUresult rc = need_live(&c, K_GRAPH, H(g), &go);
	if (rc)
		return leave(&c, rc);
	size_t count = 0;
	for (struct obj *k = go->kid_first; k; k = k->sib_next) {
		if (nodes && count < *n)
			nodes[count] = (CUgraphNode)(uintptr_t)k->value;
		count++;
	}
	if (nodes) {
		for (size_t i = count; i < *n; i++)
			nodes[i] = NULL;
		if (*n > count)
			*n = count;
	} else {
		*n = count;
	}
	c.a.arg = (long long)count;
	return leave(&c, CUDA_SUCCESS);
}

/* The per-thread default stream forms: a NULL stream means the per-thread one. */
#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult sim_cuStreamBeginCapture_ptsz(CUstream s, CUstreamCaptureMode mode)
{
	return begin_capture(PTSZ(s), mode);
}

CUresult sim_cuStreamEndCapture_ptsz(CUstream s, CUgraph *pg)
{
	return end_capture(PTSZ(s), pg);
}

CUresult sim_cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status)
{
	return is_capturing(PTSZ(s), status);
}

CUresult sim_cuStreamGetCaptureInfo_ptsz(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
					 const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	return capture_info(PTSZ(s), status, id, graph, deps, edges, ndeps);
}
