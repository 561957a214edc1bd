/* SPDX-License-Identifier: MIT */
/* ipc.c - CUDA IPC: cuIpcGetMemHandle, cuIpcOpenMemHandle (_v2 and the
 * first ABI), cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle,
 * and cuMemGetAddressRange, which tells an opened mapping's size.
 *
 * A handle encodes what it exports (its kind, the exporting process's pid,
 * the allocation's address or the event's value, and the number of this
 * export, so that a handle of memory since freed - its address perhaps
 * reused - is told from one of the memory there now) in the 64 bytes of
 * CUipcMemHandle / CUipcEventHandle.
 *
 * One process. The real driver refuses to open a handle in the process that
 * exported it (reported as CUDA_ERROR_INVALID_CONTEXT; not measured here),
 * and so does the simulator by default. cusim_set_ipc_loopback(1) stands in
 * for a second process: a handle then opens in any context but the one that
 * owns the exported object, as the importer's contexts are never the
 * exporter's. A handle of another process (another pid) is a misuse: the
 * test driver keeps nothing across processes.
 *
 * An opened mapping (K_IPCMEM) is an address of its own, in the importing
 * context (a child of it: it dies with it), whose bytes are the exported
 * allocation's; once the exporter frees that (documented: undefined
 * behaviour for the importer), every use of the mapping is a misuse; its
 * close still answers 0 (model). The same for an opened event (a K_EVENT
 * of the importing context, untimed) once its exported event is destroyed. */
#include "sim.h"

#include <unistd.h>

#define IPC_MAGIC 0x6370697369737563ull  /* "cusimipc" */
enum { IPC_MEM = 'm', IPC_EVENT = 'e' };

/* What a handle holds (its first bytes; the rest are zero). */
struct ipc_wire {
	uint64_t magic;
	uint32_t what;               /* IPC_MEM or IPC_EVENT */
	int32_t pid;
	uint64_t value;              /* the allocation's address, the event's value */
	unsigned long long id;       /* its ipc_id */
};
_Static_assert(sizeof(struct ipc_wire) <= CU_IPC_HANDLE_SIZE, "a wire record fits in a handle");

void ipc_reset(void)
{
	S.ipc_maps = NULL;      /* (the records are the reset's to free) */
	S.ipc_loopback = false;
}

static void export_number(struct obj *o)
{
	if (!o->ipc_id)
		o->ipc_id = ++S.last_ipc_id;
}

static void wire_write(char *reserved, unsigned what, const struct obj *o)
{
	struct ipc_wire w = { IPC_MAGIC, what, (int32_t)getpid(), o->value, o->ipc_id };
	memset(reserved, 0, CU_IPC_HANDLE_SIZE);
	memcpy(reserved, &w, sizeof w);
}

/* Whether an opened object's export still lives. */
static bool source_live(const struct obj *o)
{
	return o->ipc_src && o->ipc_src->live && o->ipc_src->ipc_id == o->ipc_src_id;
}

/* The exported object a handle names, for an open in the current context
 * cur: CUDA_SUCCESS and *src, or the answer (a misuse recorded where the
 * real driver's answer is unknown and may be worse). */
static CUresult wire_read(const struct call *c, const char *reserved, unsigned what, enum kind k, struct obj *cur,
			  struct obj **src)
{
	struct ipc_wire w;
	memcpy(&w, reserved, sizeof w);
	if (w.magic != IPC_MAGIC || w.what != what)
		return CUDA_ERROR_INVALID_VALUE;        /* model: not a handle of this kind */
	if (w.pid != (int32_t)getpid()) {
		misuse(c, w.value, "a handle exported by another process (pid %d): the cuctx test driver keeps no %s "
		       "across processes", (int)w.pid, kind_names[k]);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	struct obj *o = find(k, w.value);
	if (!o || !o->live || o->ipc_id != w.id) {
		/* stricter: not measured what the real driver does with the handle of freed memory */
		misuse(c, w.value, "the handle's exported %s is gone: %s", kind_names[k],
		       !o ? "never made by this driver (since its reset)"
		       : o->live ? "freed, and its address handed out again" : o->why);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* reported for the real driver (not measured here): a process cannot open its own handles */
	if (!S.ipc_loopback || o->owner == ctx_home(cur))
		return CUDA_ERROR_INVALID_CONTEXT;
	*src = o;
	return CUDA_SUCCESS;
}

CUresult sim_cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
	struct call c;
	if (enter(&c, F_cuIpcGetMemHandle, dptr))
		return leave(&c, c.rc);
	if (!h || !dptr)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o = find(K_MEM, dptr);
	/* documented: the base of an allocation of cuMemAlloc; not a pointer
	 * inside one, an opened mapping (model) or pool memory (model) */
	if ((!o && (mem_containing(dptr, 0) || ipc_mapping_at(dptr))) || (o && o->so.graph_alloc))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	CUresult rc = need_live(&c, K_MEM, dptr, &o);
	if (rc)
		return leave(&c, rc);
	if (o->so.async || o->global)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	export_number(o);
	wire_write(h->reserved, IPC_MEM, o);
	c.a.arg = (long long)o->ipc_id;
	return leave(&c, CUDA_SUCCESS);
}

/* The live mapping of export src in the importing context home, or NULL. */
static struct obj *mapping_of(const struct obj *src, const struct obj *home)
{
	for (struct obj *m = S.ipc_maps; m; m = m->mem_next)
		if (m->ipc_src == src && m->ipc_src_id == src->ipc_id && m->owner == home)
			return m;
	return NULL;
}

/* documented: one context per device of the importing process may open an export */
static bool mapped_elsewhere_on(const struct obj *src, const struct obj *home)
{
	for (struct obj *m = S.ipc_maps; m; m = m->mem_next)
		if (m->ipc_src == src && m->ipc_src_id == src->ipc_id && m->owner != home && m->device == home->device)
			return true;
	return false;
}

static CUresult open_mem(enum fn fn, CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
	struct call c;
	if (enter_with(&c, fn, 0, ARGS(.flags = flags)))
		return leave(&c, c.rc);
	if (!dptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur, *src;
	CUresult rc = need_current(&cur);
	if (rc == CUDA_SUCCESS)
		rc = wire_read(&c, h.reserved, IPC_MEM, K_MEM, cur, &src);
	if (rc)
		return leave(&c, rc);
	c.a.handle2 = src->value;
	struct obj *home = ctx_home(cur);
	/* model: another device's memory maps where the devices are peers (cuDeviceCanAccessPeer) */
	if (cur->device != src->owner->device && !peer_can_access(cur->device, src->owner->device))
		return leave(&c, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
	struct obj *m = mapping_of(src, home);
	if (m) {                /* documented: the same pointer again, counted */
		m->ipc_refs++;
	} else {
		if (mapped_elsewhere_on(src, home))
			return leave(&c, CUDA_ERROR_INVALID_CONTEXT);
		if (!(m = obj_new(K_IPCMEM, home, src->size)))
			return leave(&c, CUDA_ERROR_OUT_OF_MEMORY);
		m->device = home->device;
		m->ipc_src = src;
		m->ipc_src_id = src->ipc_id;
		m->ipc_refs = 1;
		m->mem_prev = NULL;
		m->mem_next = S.ipc_maps;
		if (S.ipc_maps)
			S.ipc_maps->mem_prev = m;
		S.ipc_maps = m;
	}
	*dptr = m->value;
	c.handle = m->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuIpcOpenMemHandle(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
	return open_mem(F_cuIpcOpenMemHandle, dptr, h, flags);
}

/* The first ABI (CUDA 4.1): the same arguments. */
CUresult sim_cuIpcOpenMemHandle_v1(CUdeviceptr *dptr, CUipcMemHandle h, unsigned int flags)
{
	return open_mem(F_cuIpcOpenMemHandle, dptr, h, flags);
}

void ipc_obj_dies(struct obj *o)
{
	if (o->kind != K_IPCMEM)
		return;
	if (o->mem_prev)
		o->mem_prev->mem_next = o->mem_next;
	else
		S.ipc_maps = o->mem_next;
	if (o->mem_next)
		o->mem_next->mem_prev = o->mem_prev;
	o->mem_prev = o->mem_next = NULL;
	o->ipc_src = NULL;
}

CUresult sim_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct call c;
	if (enter(&c, F_cuIpcCloseMemHandle, dptr))
		return leave(&c, c.rc);
	if (!dptr)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *m = find(K_IPCMEM, dptr), *a = find(K_MEM, dptr);
	if ((!m || !m->live) && a && a->live) {
		misuse(&c, dptr, "memory of cuMemAlloc, not an IPC mapping: free it with cuMemFree");
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	}
	/* a mapping that died with its context, or closed already: not
	 * measured on the real driver, where the address may be a new
	 * mapping's by now; a misuse */
	CUresult rc = need_live(&c, K_IPCMEM, dptr, &m);
	if (rc)
		return leave(&c, rc);
	if (--m->ipc_refs == 0)
		obj_kill(m, "already closed");
	return leave(&c, CUDA_SUCCESS);
}

struct obj *ipc_mapping_at(uint64_t p)
{
	struct obj *m = find(K_IPCMEM, p);
	return m && m->live ? m : NULL;
}

CUresult ipc_range(const struct call *c, uint64_t p, size_t n, unsigned char **where)
{
	for (struct obj *m = S.ipc_maps; m; m = m->mem_next) {
		if (p < m->value || p - m->value > m->size || n > m->size - (p - m->value))
			continue;
		if (!source_live(m)) {
			misuse(c, p, "IPC mapping used after its exporter freed the memory (documented: undefined behaviour)");
			return CUDA_ERROR_INVALID_VALUE;
		}
		*where = m->ipc_src->buf + (p - m->value);
		return CUDA_SUCCESS;
	}
	struct obj *dead = find(K_IPCMEM, p);
	if (dead && !dead->live) {
		misuse(c, p, "ipc_mem not live: %s", dead->why);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_ERROR_NOT_FOUND;
}

CUresult sim_cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
	struct call c;
	if (enter(&c, F_cuMemGetAddressRange, dptr))
		return leave(&c, c.rc);
	struct obj *o = mem_containing(dptr, 1);
	for (struct obj *m = S.ipc_maps; !o && m; m = m->mem_next)
		if (dptr >= m->value && dptr - m->value < m->size)
			o = m;
	if (!o)     /* documented: a pointer in no allocation */
		return leave(&c, CUDA_ERROR_NOT_FOUND);
	if (base)
		*base = o->value;
	if (size)
		*size = o->size;
	c.a.arg = (long long)o->size;
	return leave(&c, CUDA_SUCCESS);
}

/* --- events ------------------------------------------------------------------- */

CUresult sim_cuIpcGetEventHandle(CUipcEventHandle *h, CUevent ev)
{
	struct call c;
	if (enter(&c, F_cuIpcGetEventHandle, H(ev)))
		return leave(&c, c.rc);
	if (!h)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *o;
	CUresult rc = need_live(&c, K_EVENT, H(ev), &o);
	if (rc)
		return leave(&c, rc);
	/* documented: made with CU_EVENT_INTERPROCESS (and so untimed); not an opened one (model) */
	if (!(o->flags & CU_EVENT_INTERPROCESS) || o->ipc_src)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	export_number(o);
	wire_write(h->reserved, IPC_EVENT, o);
	c.a.arg = (long long)o->ipc_id;
	return leave(&c, CUDA_SUCCESS);
}

CUresult sim_cuIpcOpenEventHandle(CUevent *ev, CUipcEventHandle h)
{
	struct call c;
	if (enter(&c, F_cuIpcOpenEventHandle, 0))
		return leave(&c, c.rc);
	if (!ev)
		return leave(&c, CUDA_ERROR_INVALID_VALUE);
	struct obj *cur, *src;
	CUresult rc = need_current(&cur);
	if (rc == CUDA_SUCCESS)
		rc = wire_read(&c, h.reserved, IPC_EVENT, K_EVENT, cur, &src);
	if (rc)
		return leave(&c, rc);
	c.a.handle2 = src->value;
	/* documented: it behaves as an event made with CU_EVENT_DISABLE_TIMING */
	struct obj *o = obj_new(K_EVENT, ctx_home(cur), 0);
	o->flags = CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	o->ipc_src = src;
	o->ipc_src_id = src->ipc_id;
	*ev = (CUevent)(uintptr_t)o->value;
	c.handle = o->value;
	return leave(&c, CUDA_SUCCESS);
}

CUresult ipc_event_check(const struct call *c, const struct obj *ev)
{
	if (!ev->ipc_src || source_live(ev))
		return CUDA_SUCCESS;
	misuse(c, ev->value, "event opened from an IPC handle used after its exporter destroyed the event "
	       "(documented: undefined behaviour)");
	return CUDA_ERROR_INVALID_HANDLE;
}
