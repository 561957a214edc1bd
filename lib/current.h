/* SPDX-License-Identifier: MIT */
/* current.h - the calling thread's current context: switching to a
 * context for one driver call, and every change cuctx makes to the
 * thread's context stack that outlasts a call. Those keep the count of
 * levels cuctx left pushed (cuctx__me.current.pushes), which scopes use to
 * take back exactly what was pushed inside them: the functions here are
 * the only ones that change it. */
#ifndef CUCTX_CURRENT_H
#define CUCTX_CURRENT_H

#include "driver.h"
#include "thread.h"

/* Makes raw current for one driver call and puts the old one back, with
 * push/pop, so the previous context is never handed to the driver. Not
 * counted: the switch is undone within the call. pushed: the push is
 * done and its pop not yet; raw: the context of a push asked for and not
 * yet popped, else NULL - set before the push and cleared after the pop,
 * so that a cancel inside either call leaves the unwind (tether.h) to
 * pop only where raw is still current, which it is exactly while the push
 * is in place (the switch pushes only a context that is not current). */
struct cuctx_switch { int pushed; CUcontext raw; };
CUresult cuctx__switch_slow(CUcontext raw, CUresult rc, const char *fn, struct cuctx_switch *sw);
void cuctx__switch_back_slow(struct cuctx_switch *sw, const char *fn);
static inline CUresult cuctx__switch_to(CUcontext raw, const char *fn, struct cuctx_switch *sw)
{
    CUcontext cur = NULL;
    sw->pushed = 0;     /* before the call: a cancel there pops nothing (tether.h) */
    sw->raw = NULL;
    CUresult rc = DRV(cuCtxGetCurrent)(&cur);
    if (__builtin_expect(rc == CUDA_SUCCESS && cur == raw, 1))
        return CUDA_SUCCESS;
    return cuctx__switch_slow(raw, rc, fn, sw);
}
static inline void cuctx__switch_back(struct cuctx_switch *sw, const char *fn)
{
    if (sw->pushed)
        cuctx__switch_back_slow(sw, fn);
}

/* Levels cuctx left pushed on the calling thread's stack (creates, scopes). */
static inline unsigned cuctx__push_count(void) { return cuctx__me.current.pushes; }

/* The driver's own calls, counted on success; they record no error.
 * Inline: a scope's enter and exit are each one of them. */
static inline CUresult cuctx__push(CUcontext raw, uint64_t entry)  /* cuCtxPushCurrent */
{
    CUresult rc = DRV(cuCtxPushCurrent)(raw);
    if (__builtin_expect(rc == CUDA_SUCCESS, 1)) {
        cuctx__me.current.pushes++;
        cuctx__me.current.top = entry;
    }
    return rc;
}
/* A pop of a level cuctx did not push (cuctx_pop_current of the caller's
 * own) leaves the count alone when it is 0. */
static inline CUresult cuctx__pop(void)           /* cuCtxPopCurrent */
{
    CUcontext popped;
    CUresult rc = DRV(cuCtxPopCurrent)(&popped);
    if (__builtin_expect(rc == CUDA_SUCCESS, 1) && cuctx__me.current.pushes)
        cuctx__me.current.pushes--;
    cuctx__me.current.top = 0;
    return rc;
}
/* cuCtxSetCurrent(raw) for cuctx_ctx_set_current: replaces the top level,
 * counted apart (a scope that pushed nothing puts its own level back). */
static inline CUresult cuctx__set_current(CUcontext raw, uint64_t entry)
{
    CUresult rc = DRV(cuCtxSetCurrent)(raw);
    if (rc == CUDA_SUCCESS)
        cuctx__me.current.sets++;
    cuctx__me.current.top = rc == CUDA_SUCCESS ? entry : 0;
    return rc;
}
/* cuCtxSetCurrent(raw) putting a scope's previous context back on its own
 * level: not one of the sets above. */
static inline CUresult cuctx__put_back(CUcontext raw)
{
    cuctx__me.current.top = 0;
    return DRV(cuCtxSetCurrent)(raw);
}
/* Whether the top level is known to be bound to entry (cuctx bound it so,
 * or found it so by id, and has not changed the level since): then the
 * address current names that entry's context, not a dead one whose address
 * it took. Programs that change the stack with raw driver calls break this,
 * as they break the push count. */
static inline int cuctx__top_is(uint64_t entry) { return cuctx__me.current.top == entry; }
static inline void cuctx__top_found(uint64_t entry) { cuctx__me.current.top = entry; }
static inline uint64_t cuctx__set_count(void) { return cuctx__me.current.sets; }
/* cuCtxSetCurrent(NULL), which takes the top level off; counted when
 * ours says cuctx had pushed that level. */
static inline CUresult cuctx__set_null(int ours)
{
    CUresult rc = DRV(cuCtxSetCurrent)(NULL);
    if (rc == CUDA_SUCCESS && ours && cuctx__me.current.pushes)
        cuctx__me.current.pushes--;
    cuctx__me.current.top = 0;
    return rc;
}
/* Whether the calling thread's current context, found at the address of
 * the context whose driver id is ctx_id, is that context and not a dead one
 * whose address it took (ended on another thread while current here):
 * asked by id, cuCtxGetId(NULL). *is 1 without ids; when the driver cannot
 * say, *is 1 and its error returned. */
CUresult cuctx__current_is(unsigned long long ctx_id, int *is);
/* cuCtxCreate, which pushes the new context. */
CUresult cuctx__create_pushed(CUcontext *raw, unsigned flags, CUdevice dev);
/* cuCtxDestroy of a context this thread's cuctx__create_pushed left on top. */
CUresult cuctx__destroy_pushed(CUcontext raw);
/* cuCtxDestroy of any context, which the driver pops off this thread's
 * stack if it is current there. *cur_rc: whether that could be known (the
 * current context is asked, twice, before the destroy). */
CUresult cuctx__destroy_popping(CUcontext raw, CUresult *cur_rc);

#endif
