/* SPDX-License-Identifier: MIT */
/* peer.c - peer access between contexts: cuDeviceCanAccessPeer,
 * cuCtxEnablePeerAccess, cuCtxDisablePeerAccess.
 *
 * Peer access is state of a pair of contexts, one way: enabled with the
 * first current, naming the second. It ends when either context ends (its
 * destroy, a primary context's last release or reset, a green context's
 * destroy), as documented ("until either context is destroyed"). Nothing
 * here was measured on the H200 yet (one GPU: no peer): every answer is
 * the documented one or, where the documentation says nothing, the model's
 * choice, marked in cudasim.h; where a call names a context whose peer
 * access ended with it, the simulator takes the stricter answer and
 * records a misuse.
 *
 * Records: every pair enabled since the reset is a struct peer_link, kept
 * when it ends (disabled, or one of its contexts died) so that a later
 * disable naming the same context value can say what became of it. A link
 * names its contexts by record and by context id: a primary context's
 * record, and a recycled context's, outlive the context they held. */
#include "sim.h"

struct peer_link {
	struct obj *from, *to;
	unsigned long long from_id, to_id;
	const char *why;             /* NULL while enabled; else why it ended (static text) */
	struct peer_link *next;
};

void peer_reset(void)
{
	for (struct peer_link *l = S.peer_links, *next; l; l = next) {
		next = l->next;
		free(l);
	}
	S.peer_links = NULL;
	S.peer_live = 0;
	S.peer_unsupported = false;
}

static void link_end(struct peer_link *l, const char *why)
{
	l->why = why;
	S.peer_live--;
}

void peer_obj_dies(struct obj *o)
{
	if (o->kind != K_CTX)
		return;
	for (struct peer_link *l = S.peer_links; l; l = l->next) {
		if (l->why)
			continue;
		if (l->from == o && l->from_id == o->ctx_id)
			link_end(l, "the context it was enabled from was destroyed");
		else if (l->to == o && l->to_id == o->ctx_id)
			link_end(l, "its peer context was destroyed");
	}
}

/* The enabled link from -> to, or NULL. */
static struct peer_link *link_live(const struct obj *from, const struct obj *to)
{
	for (struct peer_link *l = S.peer_links; l; l = l->next)
		if (!l->why && l->from == from && l->to == to && l->from_id == from->ctx_id && l->to_id == to->ctx_id)
			return l;
	return NULL;
}

bool peer_enabled(uint64_t from, uint64_t to)
{
	struct obj *a = find(K_CTX, from), *b = find(K_CTX, to);
	return a && b && a->live && b->live && link_live(a, b);
}

/* The newest ended link from `from` (this life) to the record `to` - any of its lives - or NULL. */
static struct peer_link *link_ended(const struct obj *from, const struct obj *to)
{
	for (struct peer_link *l = S.peer_links; l; l = l->next)
		if (l->why && l->from == from && l->to == to && l->from_id == from->ctx_id)
			return l;
	return NULL;
}

/* Whether devices dev and peer can reach each other's memory: any two
 * distinct devices (model: an NVLink machine), none with
 * cusim_set_peer_unsupported; never a device itself (documented: 0). */
bool peer_can_access(int dev, int peer)
{
	return dev != peer && !S.peer_unsupported;
}

CUresult sim_cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	struct call c;
	if (enter_with(&c, F_cuDeviceCanAccessPeer, 0, ARGS(.arg = dev, .handle2 = (uint64_t)(int64_t)peer)))
		return leave(&c, c.rc);
	if (!can)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if (!valid_device(dev) || !valid_device(peer))
		return leave(&c, CUDA_ERROR_INVALID_DEVICE);
	*can = peer_can_access(dev, peer);
	return leave(&c, CUDA_SUCCESS);
}

/* The peer context a call names: CUDA_SUCCESS for a live one; 201 for
 * NULL; CONTEXT_IS_DESTROYED for a dead or unknown value (*out its record,
 * NULL if none), which the caller records as a misuse: handing the driver
 * a destroyed context poisons what it touches (measured for binding). */
static CUresult need_peer(CUcontext peer, struct obj **out)
{
	if (!peer)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct obj *o = find(K_CTX, H(peer));
	if (o && o->live) {
		*out = o;
		return CUDA_SUCCESS;
	}
	*out = o;
	return CUDA_ERROR_CONTEXT_IS_DESTROYED;   /* the caller says which misuse */
}

CUresult sim_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, F_cuCtxEnablePeerAccess, H(peer), ARGS(.flags = flags)))
		return leave(&c, c.rc);
	struct obj *cur, *to;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	if (flags != 0)                                 /* documented: must be 0 */
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	if ((rc = need_peer(peer, &to)) == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
		misuse(&c, H(peer), "peer context not live: %s", to ? to->why : "never created");
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	if (rc)
		return leave(&c, rc);
	/* model, not measured: the GPU measurement decides what a green context does */
	if (cur->green || to->green)
		return leave(&c, CUDA_ERROR_NOT_SUPPORTED);
	/* documented: what cuDeviceCanAccessPeer says no to, a device itself included */
	if (!peer_can_access(cur->device, to->device))
		return leave(&c, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
	if (link_live(cur, to))                         /* documented */
		return leave(&c, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
	struct peer_link *l = xrealloc(NULL, sizeof *l);
	*l = (struct peer_link){ cur, to, cur->ctx_id, to->ctx_id, NULL, S.peer_links };
	S.peer_links = l;
	S.peer_live++;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuCtxDisablePeerAccess(CUcontext peer)
{
	struct call c;
	if (enter(&c, F_cuCtxDisablePeerAccess, H(peer)))
		return leave(&c, c.rc);
	struct obj *cur, *to;
	CUresult rc = need_current(&cur);
	if (rc)
		return leave(&c, rc);
	rc = need_peer(peer, &to);
	if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED) {
		/* Not measured on the real driver (one GPU so far): a disable
		 * naming a destroyed peer context may crash or answer an error.
		 * Stricter: refused and a misuse, whatever it would do. */
		struct peer_link *l = to ? link_ended(cur, to) : NULL;
		if (l)
			misuse(&c, H(peer), "peer access to it ended (%s); the disable names a dead context", l->why);
		else
			misuse(&c, H(peer), "peer context not live: %s", to ? to->why : "never created");
		return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
	}
	if (rc)
		return leave(&c, rc);
	struct peer_link *l = link_live(cur, to);
	if (l) {
		link_end(l, "disabled");
		return leave(&c, CUDA_SUCCESS);
	}
	/* The value names a context again, a new one: the access to the old
	 * one ended with it. The real driver answers 705 or worse (not
	 * measured); a misuse here, for the disable meant the dead context. */
	l = link_ended(cur, to);
	if (l && l->to_id != to->ctx_id)
		misuse(&c, H(peer), "peer access to it ended (%s); the value now names another context", l->why);
	return leave(&c, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);   /* documented */
}
