/* SPDX-License-Identifier: MIT */
/* ids.h - what a handle id is made of: the object kinds, with the name
 * each kind goes by in messages, and the id's layout. */
#ifndef CUCTX_IDS_H
#define CUCTX_IDS_H

#include <stdint.h>

/* The child kinds, one line each: X(KIND, name, stats field, display name,
 * tethered). A kind is this line plus its file, lib/NAME.c, which defines
 * cuctx__NAME_kind (its driver destroy) and its public functions; the enum
 * value, the table of kinds (destroy.c), the stats count and the name in
 * messages follow from the line. A tethered kind (1) lives in a context and
 * dies with it (tether.h); an untethered one (0) belongs to no context -
 * a CUgraph, a CUlibrary, a memory pool and the memory in it: measured,
 * DRIVER-FACTS - so it is made with no context held and destroyed whenever
 * its handle is, with the same handle checks (a kind may say how: struct
 * cuctx_child_kind's destroy_slot). A kind tethered to two contexts (2) -
 * peer access, state of a pair that dies with either - names its second
 * context's entry in its slot's aux record (tether.h, "pairs"). The kinds
 * of IPC live in ipc.c. Appended only: the order is in every id. */
#define CUCTX_CHILD_KINDS(X)                                        \
    X(EVENT, event, events, "event", 1)                             \
    X(STREAM, stream, streams, "stream", 1)                         \
    X(MODULE, module, modules, "module", 1)                         \
    X(MEM, mem, mems, "device memory", 1)                           \
    X(HOST_MEM, host_mem, host_mems, "page-locked host memory", 1)  \
    X(GRAPH_EXEC, graph_exec, graph_execs, "graph exec", 1)         \
    X(GRAPH, graph, graphs, "graph", 0)                             \
    X(LIBRARY, library, libraries, "library", 0)                    \
    X(MEM_ASYNC, mem_async, async_mems, "stream-ordered memory", 0) \
    X(MEM_POOL, mem_pool, mem_pools, "memory pool", 0)              \
    X(PEER, peer, peers, "peer access", 2)                          \
    X(MEM_IPC, mem_ipc, ipc_mems, "IPC-opened memory", 1)

/* Object kinds; the top byte of every id. KIND_CTX_HANDLE is a cuctx_ctx
 * (one per create, retain or borrow); KIND_ENTRY is the context itself as
 * cuctx knows it (its address, generation and driver id), which the
 * handles and children name and which never leaves the library. */
#define CUCTX__KIND_ENUM(K, name, field, display, tethered) KIND_##K,
enum cuctx_kind {
    KIND_NONE = 0,
    KIND_CTX_HANDLE,
    CUCTX_CHILD_KINDS(CUCTX__KIND_ENUM)
    KIND_ENTRY,
    KIND_COUNT
};
#undef CUCTX__KIND_ENUM

/* A child kind's name in messages ("device memory"); "object" for the others. */
static inline const char *cuctx__kind_name(enum cuctx_kind kind)
{
#define CUCTX__KIND_NAME(K, name, field, display, tethered) [KIND_##K] = display,
    static const char *const names[KIND_COUNT] = {CUCTX_CHILD_KINDS(CUCTX__KIND_NAME)};
#undef CUCTX__KIND_NAME
    return kind < KIND_COUNT && names[kind] ? names[kind] : "object";
}

/* Whether a kind is tethered to a context: a constant where kind is one,
 * so that the tether's inline paths (tether.h) fold to one form per kind. */
#define CUCTX__KIND_LOOSE(K, name, field, display, tethered) | ((uint64_t)!(tethered) << KIND_##K)
static inline __attribute__((always_inline)) int cuctx__kind_tethered(enum cuctx_kind kind)
{
    return !((0 CUCTX_CHILD_KINDS(CUCTX__KIND_LOOSE)) >> kind & 1);
}
#undef CUCTX__KIND_LOOSE

/* Whether a kind is tethered to two contexts (2 above), as constant. */
#define CUCTX__KIND_PAIR(K, name, field, display, tethered) | ((uint64_t)((tethered) == 2) << KIND_##K)
static inline __attribute__((always_inline)) int cuctx__kind_paired(enum cuctx_kind kind)
{
    return (int)((0 CUCTX_CHILD_KINDS(CUCTX__KIND_PAIR)) >> kind & 1);
}
#undef CUCTX__KIND_PAIR

/* A handle id: kind (6 bits) | slot index (26 bits) | generation (32 bits).
 * 2^26 slots is 67 million live objects; a slot whose generation would wrap
 * is retired, so a stale id can never name a later object. */
#define CUCTX_ID_KIND_SHIFT 58
#define CUCTX_ID_INDEX_SHIFT 32
#define CUCTX_ID_INDEX_LIMIT (UINT32_C(1) << 26)
static inline enum cuctx_kind cuctx__id_kind(uint64_t id) { return (enum cuctx_kind)(id >> CUCTX_ID_KIND_SHIFT); }
static inline uint32_t cuctx__id_index(uint64_t id) { return (uint32_t)(id >> CUCTX_ID_INDEX_SHIFT) & (CUCTX_ID_INDEX_LIMIT - 1); }
static inline uint32_t cuctx__id_gen(uint64_t id) { return (uint32_t)id; }
static inline uint64_t cuctx__id_make(enum cuctx_kind kind, uint32_t index, uint32_t gen)
{
    return (uint64_t)kind << CUCTX_ID_KIND_SHIFT | (uint64_t)index << CUCTX_ID_INDEX_SHIFT | gen;
}

/* Three kinds share the handle type cuctx_mem: device memory (KIND_MEM),
 * stream-ordered memory (KIND_MEM_ASYNC) and memory opened from another
 * process (KIND_MEM_IPC), told apart by the id. The kind that id names if
 * it is a handle of kind's type. */
static inline enum cuctx_kind cuctx__kind_in_type(enum cuctx_kind kind, uint64_t id)
{
    if (kind == KIND_MEM || kind == KIND_MEM_ASYNC || kind == KIND_MEM_IPC) {
        enum cuctx_kind in = cuctx__id_kind(id);
        return in == KIND_MEM_ASYNC || in == KIND_MEM_IPC ? in : KIND_MEM;
    }
    return kind;
}

/* An entry id no slot ever has (generation 0): the tether of objects that
 * no driver call may reach, yet belong to no context (entry.c, fork). */
#define CUCTX__ENTRY_NEVER ((uint64_t)KIND_ENTRY << CUCTX_ID_KIND_SHIFT)

/* Who decides a context's life. An owned context was created by cuctx and
 * ends only through it, so the registry alone says whether it lives; so
 * does a green context cuctx made (green.c), whose entry also names the
 * primary context underneath. A primary context (retained through cuctx)
 * and a borrowed one (handed in, or met as some thread's current context)
 * can be ended by anyone - the CUDA runtime, other libraries, a reset - so
 * the driver's context id says. An entry's life and a handle's life are
 * the same word: for a handle, what destroying it undoes. */
enum cuctx_life { LIFE_OWNED = 1, LIFE_PRIMARY, LIFE_BORROWED, LIFE_GREEN };

#endif
