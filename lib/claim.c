/* SPDX-License-Identifier: MIT */
/* claim.c - a create into a handle that holds a live object is refused.
 *
 * Overwriting such a handle would orphan its object: only the leak report
 * would ever see it again. So a create first looks at what the handle it
 * fills names: nothing ({0}), a stale id or garbage that matches no live
 * slot is fine to overwrite; a live context handle, or a live child whose
 * context lives, is refused and left as it was. A child whose context has
 * ended went with it in the driver, but its handle still holds a slot: that
 * slot is released here as the child's destroy would release it (no driver
 * call, counted as a skipped stale destroy), and the create goes on; for a
 * pair (peer access), when either of its contexts has ended.
 * Looking does not close the child, so a refused create disturbs no other
 * thread's use of it.
 */
#include "config.h"

#include "claim.h"
#include "entry.h"
#include "error.h"
#include "ids.h"
#include "registry.h"
#include "tether.h"

static CUresult refuse(uint64_t id, enum cuctx_kind kind, const char *fn)
{
    return cuctx__fail(CUDA_ERROR_INVALID_VALUE,
                       "%s: the handle to fill already holds a live object; destroy or CUCTX_MOVE it first "
                       "(%s handle %#llx)",
                       fn, kind == KIND_CTX_HANDLE ? "context" : cuctx__kind_name(kind), (unsigned long long)id);
}

CUresult cuctx__claim_slow(uint64_t *out, enum cuctx_kind kind, const char *fn)
{
    uint64_t id = *out;
    kind = cuctx__kind_in_type(kind, id);
    if (kind == KIND_CTX_HANDLE) {
        /* A live context handle always holds something its destroy undoes:
         * an owned context, a primary retain, or the borrow itself. */
        if (cuctx__alive(id, KIND_CTX_HANDLE))
            return refuse(id, kind, fn);
        *out = 0;
        return CUDA_SUCCESS;
    }
    struct cuctx_slot *s = cuctx__peek(id, kind);
    uint64_t entry = s ? __atomic_load_n(&s->u.child.entry, __ATOMIC_RELAXED) : 0;
    /* a pair's second context (tether.h) */
    uint64_t second = s && cuctx__kind_paired(kind) ? __atomic_load_n(&cuctx__slot_aux(s)->id[0], __ATOMIC_RELAXED) : 0;
    if (!s || !cuctx__peek_valid(s, id, kind)) {
        *out = 0;
        return CUDA_SUCCESS;
    }
    if (entry == 0 && !cuctx__kind_tethered(kind))     /* in no context: live while its slot is */
        return refuse(id, kind, fn);
    struct cuctx_held o;
    CUresult rc = cuctx__entry_hold_quiet(entry, &o);
    if (rc == CUDA_SUCCESS) {
        cuctx__entry_release(&o);
        if (!second)
            return refuse(id, kind, fn);
        /* a pair lives while both its contexts do (held one at a time) */
        if ((rc = cuctx__entry_hold_quiet(second, &o)) == CUDA_SUCCESS) {
            cuctx__entry_release(&o);
            return refuse(id, kind, fn);
        }
    }
    if (rc != CUDA_ERROR_CONTEXT_IS_DESTROYED && !cuctx__driver_gone(rc))
        return cuctx__fail(rc, "%s: cannot tell whether the %s in the handle to fill (%#llx) is still live: %s", fn,
                           cuctx__kind_name(kind), (unsigned long long)id, cuctx_result_name(rc));
    /* Its context has ended: release the slot as its destroy would. */
    uint64_t pins;
    if ((s = cuctx__close_pinned(id, kind, &pins)) != NULL) {
        if (pins)
            cuctx__drain_slow(s);
        cuctx__child_unheld(s, rc, fn, kind);
    }
    *out = 0;
    return CUDA_SUCCESS;
}
