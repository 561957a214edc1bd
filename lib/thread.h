/* SPDX-License-Identifier: MIT */
/* thread.h - the calling thread's record: the one thread-local that the
 * hot paths touch, with one part per module that keeps state per thread.
 * Lower layers read the parts of higher ones (error.c asks whether this
 * thread holds anything) without calling them. */
#ifndef CUCTX_THREAD_H
#define CUCTX_THREAD_H

#include <cuda.h>
#include <stdint.h>

/* Thread-locals of the library: initial-exec avoids a __tls_get_addr call on
 * every access (cuctx is linked, not dlopen()ed, so static TLS is there). */
#if defined(__GNUC__)
#  define CUCTX_TLS _Thread_local __attribute__((tls_model("initial-exec")))
#else
#  define CUCTX_TLS _Thread_local
#endif

struct cuctx_slot;
struct cuctx_hazard_rec;

#define CUCTX_SLOT_CACHE 32     /* free slots a thread keeps for itself */
#define CUCTX_MY_PINS 8         /* pins a thread tracks (it never holds that many) */

/* Always named as cuctx__me, never through a pointer to it: in a program
 * that links cuctx statically the linker rewrites the TLS address
 * computation into a form that no longer sets the flags gcc 12's
 * -fsanitize=null check of such a pointer reads (a false "member access
 * within null pointer" under UBSan). */
struct cuctx_thread {
    struct {                        /* registry.c */
        struct cuctx_hazard_rec *rec;   /* NULL until the thread's first hold or count */
        unsigned used;              /* bit i: rec->ids[i] in use; only this thread writes them */
        unsigned ncache;
        int cache_registered;       /* 1: the cache is flushed at thread exit; -1: never use it */
        unsigned npins;             /* pins[0..npins): released at thread exit */
        struct cuctx_slot *pins[CUCTX_MY_PINS];
        struct cuctx_slot *cache[CUCTX_SLOT_CACHE];    /* free slots, this thread's first */
    } registry;
    struct {                        /* current.c */
        unsigned pushes;            /* stack levels cuctx left pushed */
        uint64_t sets;              /* cuctx_ctx_set_current calls that replaced the top level */
        uint64_t top;               /* the entry cuctx last bound the top level to (push, set), by
                                       id; 0: not known (a pop, a create, a destroy) */
    } current;
    struct {                        /* error.c */
        int reports_pending;        /* handler reports waiting for the last release */
    } error;
    struct {                        /* entry.c */
        struct { CUcontext raw; uint64_t entry; } seen[2];  /* last entries looked up by address */
        /* The owned context handle this thread resolved last, with its
         * entry and the entry's slot (cuctx__ctx_hold_last); 0: none. */
        struct { uint64_t handle, entry; struct cuctx_slot *slot; CUcontext raw; } last;
    } entry;
    struct {                        /* entry.c: the context lock */
        int held;
        int cancel_state;           /* saved while the lock is held */
    } lock;
};
extern CUCTX_TLS struct cuctx_thread cuctx__me;

/* Whether the calling thread holds an entry, a pin or the context lock:
 * then nothing may wait on other threads' releases (the error handler may). */
static inline int cuctx__thread_busy(void)
{
    return cuctx__me.registry.used != 0 || cuctx__me.registry.npins != 0 || cuctx__me.lock.held;
}

#endif
