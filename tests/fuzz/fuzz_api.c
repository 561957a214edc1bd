/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api.c - a libFuzzer harness for cuctx against the simulated driver.
 *
 * Each input is read as a program: a sequence of operations of three bytes
 * (opcode, a, b) over a few slots - context handles, child handles of every
 * kind, contexts the harness made behind cuctx's back - and the calling
 * thread's context stack. Every operation is run on cuctx and on a small
 * model of what the manual (include/cuctx.h) promises; after each one the
 * harness compares:
 *   - return codes, where the model can tell (nearly everywhere), and
 *     cuctx_last_error() after each failure;
 *   - live cuctx handles per kind (cuctx_stats_get) and the stale-skip,
 *     failed-destroy and shutdown-skip counters;
 *   - live driver objects per kind (cusim_live) and primary retains
 *     (cusim_primary_refs): a child is alive in the driver exactly while
 *     its cuctx handle lives and its context does - a graph or a library
 *     (kinds of no context) exactly while its handle lives, whatever became
 *     of any context: its destroy reaches the driver and is never a stale
 *     skip; and no stream capture going on (cusim_live(CUSIM_CAPTURE));
 *   - the current context (the top of the thread's stack);
 *   - reports to the error handler (failed cleanups, failed CUCTX_SCOPED);
 *   - the simulator's misuse log, which must stay empty.
 * At the end of an input everything is destroyed, the stack emptied and the
 * simulator reset; no cuctx object may be left. Any mismatch prints the
 * operations of the input and calls abort().
 *
 * The driver: LLVMFuzzerInitialize sets CUCTX_DRIVER from CUCTX_FUZZ_SIM
 * (the path of the simulator built as a shared library) before the first
 * cuctx call; CUCTX_DRIVER itself may be set instead.
 *
 * What the model keeps of the driver: every context instance (owned: made
 * by cuctx_ctx_create; raw: made by the harness through the driver; primary:
 * a device's primary context from one activation to its end), the address
 * each one has (the simulator hands a freed address to the next context,
 * so several instances share one), and the thread's stack as a list of
 * addresses, as the driver keeps it: a slot whose context died names
 * whichever context has the address now.
 *
 * The encoding, for writing seeds by hand: an optional first byte 0xff
 * turns the simulator's address recycling off for the input; then each
 * operation is three bytes, OP a b, OP taken modulo 29 (a capture reads
 * more, see 26):
 *   0 ctx_create (slot a%4; b: bit 0 device, bits 1-3 flags, 0x80 bad flags,
 *     0x70 bad device)           1 ctx_primary (slot a%4; b bit 0 device)
 *   2 ctx_borrow (slot a%4; b%6: 0-1 a raw context, 2 the current one, 3 the
 *     address of ctx slot (a>>2)%4, 4 a primary, 5 NULL)
 *   3 ctx destroy (slot a%4; b%3: cuctx_ctx_destroy, cuctx_destroy,
 *     cuctx_cleanup; b&0x80: a child's id to cuctx_ctx_destroy)
 *   4 ctx_set_current   5 pop_current   6 ctx query (b%4: is_current, raw,
 *     device, synchronize)   7 ctx_primary_reset (b bit 0 device)
 *   8 child create (slot a%8 in context (a>>3)%6: slots 0-3, 4 {0}, 5 a
 *     child's id; kind b%6: event, stream, module, mem, host_mem, graph exec;
 *     b/6 picks flags and sizes, some invalid)   9 child create in {0}
 *   10 child destroy (slot a%8; b%4: own kind, another kind, cuctx_destroy,
 *     cuctx_cleanup)   11 child use (slot a%8, second operand slot (a>>3)%8;
 *     b&0x0f the call, b&0x80 as kind (b>>4)%6)
 *   12 copy a slot   13 copy, destroy the original, use and destroy the copy
 *   14 cuctx_scope_enter (ctx slot a%5, 4 = {0}; a&0x80: a child's id)
 *   15 cuctx_scope_exit of the innermost (b&1: exit an exited one again)
 *   16 a block of b%4+1 operations in CUCTX_SCOPED, CUCTX_SCOPED_ELSE,
 *     CUCTX_GUARD, CUCTX_SCOPED with break, or with return ((b>>2)%5)
 *   17 raw cuCtxCreate (raw slot a%2; b bit 0 device, bit 1 left pushed)
 *   18 raw cuCtxDestroy   19 raw push   20 raw pop
 *   21 raw primary retain/release/reset (a%3; b bit 0 device)
 *   22 CUCTX_AUTO create (b%7: a child kind or a context; b&0x80: CUCTX_MOVE
 *     it out to slot a%8)
 *   23 cuctx_graph (slot a%8; b%5: create, create into the slot itself (a
 *     live graph there: refused), raw and its node count, instantiate an
 *     exec in context (b>>3)%6 (as 8) into slot (a>>3)%8, destroy)
 *   24 cuctx_library (slot a%8; b%5: load_data of image (b>>3)%6 - kernels,
 *     the same into the slot itself, PTX that does not assemble, text
 *     without kernels, binary, NULL -, load from a file ((b>>3)&1: the
 *     kernels' file, else a missing one), kernel lookup (name (b>>3)%4: k,
 *     k2, nope, NULL; a bad image's error with its JIT log), raw, destroy)
 *   25 cuctx_launch of the kernel last looked up while its library lives
 *     (b%4: 0-1 on slot a%8's stream, 2 {0}, 3 CUCTX_STREAM_LEGACY or
 *     _PER_THREAD; b&0x40 a grid of 0, b&0x80 a NULL kernel)
 *   26 a stream capture, begun and ended within the operation (op_capture):
 *     stream slot a%8 ((a>>6)==3: CUCTX_STREAM_LEGACY), the graph into slot
 *     (a>>3)%8; b&3 the mode (GLOBAL, THREAD_LOCAL, RELAXED, not a mode),
 *     ((b>>2)&7)%6 the form (by hand kept, by hand abandoned, CUCTX_CAPTURE,
 *     CUCTX_CAPTURE_ELSE, CUCTX_CAPTURE left by break, CUCTX_CAPTURE_ELSE
 *     left by return), b>>5 steps of one more byte each (cap_step)
 *   27 stream-ordered memory and pools (slot a%8, other slot (a>>3)%8; b%8:
 *     0 cuctx_mem_alloc_async, 1 cuctx_mem_alloc_from_pool of the pool in
 *     slot (other+1+((b>>6)&1))%8 ({0} or stale: refused), each on stream
 *     operand b>>3 (%4: 0-1 other's stream, 2 {0}, 3 CUCTX_STREAM_LEGACY,
 *     or _PER_THREAD with bit 2), into the slot itself with b&0x80, 0 bytes
 *     with b&0x40 (op 0); 2 cuctx_mem_free_async of the slot on that stream
 *     operand (plain memory, stale handles: refused); 3 the same with {0};
 *     4 cuctx_mem_pool_create (device (b>>3)&1, b&0x40 a bad one, b&0x80
 *     into the slot itself); 5 cuctx_mem_pool_default (device (b>>4)&1) or,
 *     with (b>>3)&1, cuctx_mem_pool_adopt (owned 0) of the raw pool of the
 *     default pool handle in other; 6 pool raw or trim (b>>3); 7 a NULL
 *     output to one of the five ((b>>3)%5))
 *   28 a green context into ctx slot a%4 (op_green): b%4 0-1
 *     cuctx_ctx_green of (b>>2)%4 -> 16, 8, 0 or 200 SMs on device (b>>4)&1
 *     (a bad device with (b & 0xe0) == 0xe0), 2 cuctx_ctx_green_desc of a
 *     split of 24 SMs, 3 of a NULL descriptor. Its children but streams are
 *     the primary context's; primary resets are not run while one lives
 *   29 peer access and IPC (slot a%8, other slot (a>>3)%8; b%8: 0-1
 *     cuctx_peer_enable from ctx slot (a>>3)%4 ({0} with b&8) to ctx slot
 *     (b>>4)%4, into the slot itself with b&0x80; 2 cuctx_peer_owned; 3-4
 *     cuctx_ipc_mem_get of other's memory and cuctx_ipc_mem_open of it in
 *     context (b>>4)%6 (as 8), flags CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS with
 *     b&8; 5-6 the same for an event (cuctx_ipc_event_get, _open); 7 a NULL
 *     output to one of six ((b>>3)%6)). The simulator stands in for the
 *     importing process (cusim_set_ipc_loopback); an opened event whose
 *     exporter's event is gone is never used again, only destroyed
 *     (documented: undefined), and opened memory only read through the
 *     accessors.
 * Child slots hold handles of any kind; ops 10, 11 and 13 take graphs,
 * libraries, stream-ordered memory, pools, peers and opened memory too
 * (kind (b>>4)%12 where they pick one).
 * Bytes past the end read as 0. While a scope is open, raw operations keep
 * the stack's shape (raw pushes and pops inside a scope must balance).
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuctx.h"

void cuctx__pools_destroy_parked(void);     /* lib/mem_pool.h: the harness links lib/ itself */
#include "cudasim.h"
#include "../kinds.h"

/* ---- the simulator's controls and the raw driver ------------------------- */

/* One member per control of CUSIM_CONTROLS, named as the function less "cusim_". */
#define FUZZ_SIM_MEMBER(name) cusim_##name##_fn name;
static struct {
    CUSIM_CONTROLS(FUZZ_SIM_MEMBER)
} sim;
#undef FUZZ_SIM_MEMBER

static struct {
    PFN_cuCtxCreate_v3020 create;
    PFN_cuCtxDestroy_v4000 destroy;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuCtxGetCurrent_v4000 get;
    PFN_cuCtxSetCurrent_v4000 set;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 release;
    PFN_cuDevicePrimaryCtxReset_v11000 reset;
    PFN_cuGraphCreate_v10000 graph_create;
    PFN_cuGraphDestroy_v10000 graph_destroy;
    PFN_cuGraphGetNodes_v10000 graph_nodes;
    PFN_cuDeviceGetDevResource_v12040 dev_resource;
    PFN_cuDevSmResourceSplitByCount_v12040 sm_split;
    PFN_cuDevResourceGenerateDesc_v12040 gen_desc;
} raw;

#define H(p) ((uint64_t)(uintptr_t)(p))
#define C(v) ((CUcontext)(uintptr_t)(v))

/* ---- limits ------------------------------------------------------------------ */

#define NCTX 4          /* context handle slots */
#define NCH 8           /* child handle slots */
#define NRAW 2          /* contexts made behind cuctx's back */
#define NDEV 2          /* the simulator's devices (CUSIM_DEVICES) */
#define BAD_DEV 7
#define MAX_INST 1024
#define MAX_OBJ 2048
#define STACK_CAP 48    /* operations that push stop here (the driver's limit is 256) */
#define MAX_SCOPES 12
#define MAX_LEVEL 3     /* nested CUCTX_SCOPED blocks */
#define MAX_RAW_REFS 4

/* ---- the model ---------------------------------------------------------------- */

/* The child kinds in the order of TEST_CHILD_KINDS (kinds.h), which names them
 * (the tethered kinds), then the kinds of no context, graph, library,
 * stream-ordered memory and memory pool, then peer access (tethered to two
 * contexts) and memory opened from an IPC handle, in the order of cuctx's
 * id kinds (lib/ids.h). */
enum okind { O_NONE, O_CTX, O_EVENT, O_STREAM, O_MODULE, O_MEM, O_HOST, O_GEXEC, O_GRAPH, O_LIB, O_MASYNC, O_POOL,
             O_PEER, O_MIPC, O_KINDS };
#define O_NAME(name, ...) #name,
#define O_SIM(name, type, stat, sim, ...) sim,
#define O_ONE(...) +1
_Static_assert(O_GRAPH == O_EVENT TEST_CHILD_KINDS(O_ONE), "enum okind has one child kind per line of kinds.h");
#define O_CHILD_KINDS (O_KINDS - O_EVENT)   /* child kinds, tethered or not */
static const char *const okind_name[O_KINDS] = {"none", "ctx", TEST_CHILD_KINDS(O_NAME) "graph", "library",
                                                "mem_async", "mem_pool", "peer", "mem_ipc"};
/* the simulator's kind for the driver's objects of each child kind */
static const enum cusim_kind sim_kind[O_KINDS] = {CUSIM_ALL, CUSIM_ALL, TEST_CHILD_KINDS(O_SIM) CUSIM_GRAPH,
                                                  CUSIM_LIBRARY, CUSIM_MEM, CUSIM_POOL, CUSIM_PEER,
                                                  CUSIM_IPC_MEM};
/* A graph, a library, stream-ordered memory or a pool belongs to no
 * context: no inst, never a stale skip. */
static int untethered(int k)
{
    return k == O_GRAPH || k == O_LIB || k == O_MASYNC || k == O_POOL;
}
enum role { R_OWNED = 1, R_PRIMARY, R_BORROWED, R_GREEN };
static const char *const role_name[] = {"?", "owned", "primary", "borrowed", "green"};
/* A green context (cuctx_ctx_green) holds a retain of its device's primary
 * context; of what is made in it only streams are its own, the rest is the
 * primary's (tether_inst). */
enum ikind { I_OWNED = 1, I_RAW, I_PRIMARY, I_GREEN };
static const char *const ikind_name[] = {"?", "owned", "raw", "primary", "green"};

struct inst {                   /* one driver context, from its creation to its end */
    uint64_t addr;
    int live;
    int kind;                   /* enum ikind */
    int dev;
};

struct obj {                    /* one cuctx handle's object */
    uint64_t id;
    int kind;                   /* enum okind */
    int alive;                  /* its handle has not been destroyed */
    int inst;                   /* child: its context; ctx handle: the context it names */
    int role;                   /* ctx handles */
    int dev;
    unsigned flags;             /* events: creation flags */
    int recorded;               /* events */
    int cap_recorded;           /* events: last recorded in a capture (over now): waits answer 1 */
    int image;                  /* libraries: 0 kernels k and k2, 1 PTX that does not assemble, 2 not PTX */
    int sobj;                   /* mem_async: the object of the stream it was allocated on, -1 a default one */
    int pobj;                   /* mem_async: 1 + the object of the pool handle it came from; 0 none */
    int borrowed;               /* mem_pool: a handle that does not own its pool (default, adopted with 0);
                                   peer: access enabled before it, which its destroy leaves on */
    int inst2;                  /* peer: the context it reaches (inst: the one it is enabled from) */
    int src;                    /* mem_ipc, an opened event: 1 + the exported object; 0 none */
    size_t size;                /* mem, host_mem; graphs: their nodes */
};

/* A scope the model knows to be open (entered), or failed/exited. */
struct mscope {
    int entered;
    unsigned depth;             /* cuctx's push count at enter */
    uint64_t prev;              /* the stack's top at enter */
    int prev_occ;               /* the live context at prev then, -1 if none */
    int pushed_nothing;         /* ran on prev's own level (prev was the context entered) */
    unsigned long sets;         /* cuctx_ctx_set_current calls at enter */
};

struct open_scope {
    cuctx_scope s;
    struct mscope m;
};

static struct {
    struct inst inst[MAX_INST];
    int ninst;
    struct obj obj[MAX_OBJ];
    int nobj;
    uint64_t stack[256];
    int depth;
    unsigned pushes;            /* levels cuctx counts as pushed by itself on this thread */
    unsigned long sets;         /* successful cuctx_ctx_set_current calls */
    int prim[NDEV];             /* the primary instance of each device, latest; -1 none */
    unsigned prim_raw_refs[NDEV];
    uint64_t ctx_slot[NCTX];
    uint64_t ch_slot[NCH];
    int raw_slot[NRAW];         /* instance made by the harness, -1 none */
    CUgraph graph;
    CUkernel kernel;            /* the last kernel looked up, of library object kernel_lib */
    int kernel_lib;
    uint64_t stale_skips;       /* expected since the input began */
    int reports;                /* expected reports to the error handler */
    struct open_scope sc[MAX_SCOPES];
    int nsc;
    int base;                   /* explicit scopes below this belong to an enclosing block */
    int level;
    int macro_open;             /* CUCTX_SCOPED and CUCTX_GUARD scopes entered, not yet left */
    cuctx_scope exited;         /* a scope exited already, to exit again (no-op) */
    int have_exited;
} M;

static uint64_t prim_addr[NDEV];
static uint64_t base_stale, base_failed;

/* what the error handler was told */
static int reports_seen;
static CUresult last_report_rc;
static char last_report_msg[512];

static const char *ptx_path;
static int print_trace;         /* CUCTX_FUZZ_TRACE=1: print each input's operations */
static const char good_image[] = "// cuctx fuzz\n.visible .entry k(\n)\n{\n ret;\n}\n.entry k2 ( )\n";
/* PTX that does not assemble (the simulator's convention): a library of it
 * loads, and its kernel lookups fail with the JIT log in the message. */
static const char broken_image[] = "// cuctx fuzz\n.visible .entry k(\n)\n{\n\tcusim_bad;\n ret;\n}\n";
static const char text_image[] = "// no kernels in here\n";
static const char bin_image[] = "\x7f" "ELF\x01\x02";

/* ---- the log of the current input, printed on a mismatch ------------------------ */

static char trace[1 << 16];
static size_t trace_len;
static int step_no;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    if (trace_len + 256 >= sizeof trace)
        return;
    trace_len += (size_t)snprintf(trace + trace_len, sizeof trace - trace_len, "%*s#%d ", M.level * 2, "", step_no);
    va_start(ap, fmt);
    trace_len += (size_t)vsnprintf(trace + trace_len, sizeof trace - trace_len, fmt, ap);
    va_end(ap);
    if (trace_len < sizeof trace - 1)
        trace[trace_len++] = '\n', trace[trace_len] = 0;
}

static void dump_model(void)
{
    fprintf(stderr, "--- model: stack (bottom first):");
    for (int i = 0; i < M.depth; i++)
        fprintf(stderr, " %#llx", (unsigned long long)M.stack[i]);
    fprintf(stderr, "; cuctx pushes %u\n", M.pushes);
    for (int i = 0; i < M.ninst; i++)
        fprintf(stderr, "  inst %d: %s %#llx dev %d %s\n", i, ikind_name[M.inst[i].kind],
                (unsigned long long)M.inst[i].addr, M.inst[i].dev, M.inst[i].live ? "live" : "dead");
    for (int i = 0; i < M.nobj; i++)
        fprintf(stderr, "  obj %d: %s %#llx %s inst %d%s%s\n", i, okind_name[M.obj[i].kind],
                (unsigned long long)M.obj[i].id, M.obj[i].alive ? "alive" : "destroyed", M.obj[i].inst,
                M.obj[i].kind == O_CTX ? " " : "", M.obj[i].kind == O_CTX ? role_name[M.obj[i].role] : "");
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\n*** cuctx fuzz: MISMATCH at step %d: ", step_no);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n--- cuctx_last_error_message: %s\n", cuctx_last_error_message());
    fprintf(stderr, "--- operations of this input:\n%s", trace);
    dump_model();
    size_t n = sim.misuse_count();
    for (size_t i = 0; i < n && i < 20; i++)
        fprintf(stderr, "--- simulator misuse: %s\n", sim.misuse_text(i));
    if (reports_seen)
        fprintf(stderr, "--- last report: %s: %s\n", cuctx_result_name(last_report_rc), last_report_msg);
    cuctx_leak_report(stderr);
    abort();
}

static void on_report(CUresult rc, const char *message, void *user)
{
    (void)user;
    if (rc == CUDA_SUCCESS)
        return;     /* CUCTX_LOG=debug notes */
    reports_seen++;
    last_report_rc = rc;
    snprintf(last_report_msg, sizeof last_report_msg, "%s", message);
}

/* Odd steps call the plain create functions, even ones the macros that
 * record the create site. */
#define PLAIN (step_no & 1)

static void expect_rc(CUresult got, CUresult want, const char *what)
{
    if (got != want)
        fail("%s returned %s, the model expects %s", what, cuctx_result_name(got), cuctx_result_name(want));
    if (got != CUDA_SUCCESS && cuctx_last_error() != got)
        fail("%s failed with %s but cuctx_last_error() is %s", what, cuctx_result_name(got),
             cuctx_result_name(cuctx_last_error()));
}

/* ---- model helpers --------------------------------------------------------------- */

static uint64_t top(void)
{
    return M.depth ? M.stack[M.depth - 1] : 0;
}

static void push(uint64_t addr)
{
    if (M.depth >= 256)
        fail("model stack overflow");
    M.stack[M.depth++] = addr;
}

/* The context at addr now (the latest made there), -1 if none was ever. */
static int occ(uint64_t addr)
{
    for (int i = M.ninst - 1; i >= 0; i--)
        if (M.inst[i].addr == addr)
            return i;
    return -1;
}

static int occ_live(uint64_t addr)
{
    int i = addr ? occ(addr) : -1;
    return i >= 0 && M.inst[i].live ? i : -1;
}

static int inst_new(uint64_t addr, int kind, int dev)
{
    if (M.ninst >= MAX_INST)
        fail("model: too many contexts");
    if (occ_live(addr) >= 0)
        fail("the driver gave address %#llx to a new context while the model has a live one there",
             (unsigned long long)addr);
    M.inst[M.ninst] = (struct inst){addr, 1, kind, dev};
    return M.ninst++;
}

static int obj_find(uint64_t id)
{
    if (!id)
        return -1;
    for (int i = M.nobj - 1; i >= 0; i--)
        if (M.obj[i].id == id)
            return i;
    return -1;
}

static int obj_new(uint64_t id, int kind, int inst)
{
    if (M.nobj >= MAX_OBJ)
        fail("model: too many objects");
    if (!id)
        fail("a successful create left the handle {0}");
    if (obj_find(id) >= 0)
        fail("a create returned id %#llx, which an earlier object had", (unsigned long long)id);
    M.obj[M.nobj] = (struct obj){.id = id, .kind = kind, .alive = 1, .inst = inst};
    return M.nobj++;
}

/* Whether a child's context lives - both of a peer's. */
static int obj_ctx_live(const struct obj *o)
{
    return M.inst[o->inst].live && (o->kind != O_PEER || M.inst[o->inst2].live);
}

/* The expected result of using id as a child of kind k. */
static CUresult want_child(uint64_t id, int k, int *oi)
{
    int i = obj_find(id);
    *oi = i;
    if (i < 0 || M.obj[i].kind != k || !M.obj[i].alive)
        return CUDA_ERROR_INVALID_HANDLE;
    if (untethered(k))
        return CUDA_SUCCESS;
    if (!obj_ctx_live(&M.obj[i]))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

/* ... as a context handle ({0} is INVALID_HANDLE here). */
static CUresult want_ctx(uint64_t id, int *oi)
{
    return want_child(id, O_CTX, oi);
}

/* The owner a create given ctx id would use ({0}: the current context). */
static CUresult want_owner(uint64_t id, int *inst)
{
    int oi;
    if (id == 0) {
        if (!M.depth)
            return CUDA_ERROR_INVALID_CONTEXT;
        int k = occ_live(top());
        if (k < 0)
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;
        *inst = k;
        return CUDA_SUCCESS;
    }
    CUresult rc = want_ctx(id, &oi);
    if (rc == CUDA_SUCCESS)
        *inst = M.obj[oi].inst;
    return rc;
}

static unsigned prim_handles(int dev)
{
    unsigned n = 0;
    for (int i = 0; i < M.nobj; i++)
        if (M.obj[i].kind == O_CTX && M.obj[i].alive && M.obj[i].role == R_PRIMARY && M.obj[i].dev == dev)
            n++;
    return n;
}

/* Live green contexts of dev: each holds a retain of its primary context. */
static unsigned greens_on(int dev)
{
    unsigned n = 0;
    for (int i = 0; i < M.ninst; i++)
        if (M.inst[i].live && M.inst[i].kind == I_GREEN && M.inst[i].dev == dev)
            n++;
    return n;
}

/* The retains of dev's primary context. */
static unsigned prim_holds(int dev)
{
    return prim_handles(dev) + M.prim_raw_refs[dev] + greens_on(dev);
}

static void prim_maybe_end(int dev)
{
    if (prim_holds(dev) == 0 && M.prim[dev] >= 0)
        M.inst[M.prim[dev]].live = 0;
}

/* The context a child of kind k made in context inst belongs to: a green
 * context's children but streams are its primary's, live while a green
 * context lives (resets are not run then: op_primary_reset). */
static int tether_inst(int inst, int k)
{
    if (inst < 0 || M.inst[inst].kind != I_GREEN || k == O_STREAM)
        return inst;
    return M.prim[M.inst[inst].dev];
}

/* Whether a stream of context s takes the work of an object of context o
 * (an event record, a graph launch): the same context, or s a green context
 * over o, its live primary. */
static int stream_takes(int s, int o)
{
    return s == o || (M.inst[s].kind == I_GREEN && M.inst[o].kind == I_PRIMARY && M.inst[s].dev == M.inst[o].dev);
}

static void prim_retain_model(int dev)
{
    if (M.prim[dev] < 0 || !M.inst[M.prim[dev]].live)
        M.prim[dev] = inst_new(prim_addr[dev], I_PRIMARY, dev);
}

/* A driver-side end of an owned or raw context: cuCtxDestroy pops it only
 * when it is the top of the calling thread's stack. */
static int ctx_end_model(int inst)
{
    M.inst[inst].live = 0;
    if (M.depth && top() == M.inst[inst].addr) {
        M.depth--;
        return 1;
    }
    return 0;
}

/* The model of a destroy of a context handle. */
static CUresult model_ctx_destroy(uint64_t id)
{
    int oi = obj_find(id);
    if (!id)
        return CUDA_SUCCESS;
    if (oi < 0 || M.obj[oi].kind != O_CTX || !M.obj[oi].alive)
        return CUDA_ERROR_INVALID_HANDLE;
    struct obj *o = &M.obj[oi];
    o->alive = 0;
    if (o->role == R_OWNED) {
        if (ctx_end_model(o->inst) && M.pushes)
            M.pushes--;
    } else if (o->role == R_PRIMARY) {
        prim_maybe_end(o->dev);
    } else if (o->role == R_GREEN) {
        /* its streams end with it (destroyed first); cuctx pops it where it
         * is this thread's current context, as the driver pops an owned one */
        if (ctx_end_model(o->inst) && M.pushes)
            M.pushes--;
        prim_maybe_end(o->dev);
    }
    return CUDA_SUCCESS;
}

/* ... of a child handle, destroyed as kind k. */
static CUresult model_child_destroy(uint64_t id, int k)
{
    int oi;
    if (!id)
        return CUDA_SUCCESS;
    CUresult rc = want_child(id, k, &oi);
    if (rc == CUDA_ERROR_INVALID_HANDLE)
        return rc;
    M.obj[oi].alive = 0;
    /* (a borrowed peer's handle ends with no look at its contexts) */
    if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && !(k == O_PEER && M.obj[oi].borrowed))
        M.stale_skips++;
    return CUDA_SUCCESS;
}

/* cuctx_destroy: by the kind in the id. */
static int id_kind(uint64_t id)
{
    unsigned k = (unsigned)(id >> 58);
    return k >= O_CTX && k <= O_MIPC ? (int)k : O_NONE;
}

static CUresult model_any_destroy(uint64_t id)
{
    if (!id)
        return CUDA_SUCCESS;
    int k = id_kind(id);
    if (k == O_CTX)
        return model_ctx_destroy(id);
    if (k == O_NONE)
        return CUDA_ERROR_INVALID_HANDLE;
    return model_child_destroy(id, k);
}

/* ---- checks after every step ------------------------------------------------------- */

static void verify(const char *where)
{
    struct cuctx_stats st;
    size_t want[O_KINDS] = {0}, drv[O_KINDS] = {0};
    size_t live_ctx = 0, live_prim = 0;

    cuctx_stats_get(&st);
    for (int i = 0; i < M.nobj; i++) {
        if (!M.obj[i].alive)
            continue;
        want[M.obj[i].kind]++;
        if (M.obj[i].kind != O_CTX && (untethered(M.obj[i].kind) || obj_ctx_live(&M.obj[i]))
            && !M.obj[i].borrowed)
            drv[M.obj[i].kind]++;
    }
    /* the driver maps an IPC handle once per context, whatever the opens */
    drv[O_MIPC] = 0;
    for (int i = 0; i < M.nobj; i++) {
        const struct obj *o = &M.obj[i];
        int first = o->kind == O_MIPC && o->alive && M.inst[o->inst].live;
        for (int j = 0; first && j < i; j++)
            first = !(M.obj[j].kind == O_MIPC && M.obj[j].alive && M.obj[j].src == o->src && M.obj[j].inst == o->inst);
        drv[O_MIPC] += first;
    }
    /* the driver counts stream-ordered allocations with the others */
    drv[O_MEM] += drv[O_MASYNC];
    /* a pool whose handle was destroyed with memory from it alive lives on
     * in the driver until the last of that memory is freed; then, as one
     * ended with none, it is parked (every owned pool here is one cuctx
     * made), alive in the driver until a create takes it again: at most
     * the pools ended (mem_pool.c) */
    size_t ended = 0;
    for (int i = 0; i < M.nobj; i++) {
        if (M.obj[i].kind != O_POOL || M.obj[i].alive || M.obj[i].borrowed)
            continue;
        int kept = 0;
        for (int j = 0; j < M.nobj && !kept; j++)
            kept = M.obj[j].kind == O_MASYNC && M.obj[j].alive && M.obj[j].pobj == i + 1;
        drv[O_POOL] += kept;
        ended += !kept;
    }
    if (st.parked_pools > ended)
        fail("%s: cuctx_stats_get says %zu pools parked, more than the %zu pools ended", where, st.parked_pools, ended);
    drv[O_POOL] += st.parked_pools;
    drv[O_GRAPH] += M.graph ? 1 : 0;    /* the raw one graph_exec instantiates */
    #define O_STAT(name, type, stat, ...) st.stat,
    size_t got[O_KINDS] = {0, st.ctx_handles, TEST_CHILD_KINDS(O_STAT) st.graphs, st.libraries, st.async_mems,
                           st.mem_pools, st.peers, st.ipc_mems};
#undef O_STAT
    for (int k = O_CTX; k < O_KINDS; k++)
        if (got[k] != want[k])
            fail("%s: cuctx_stats_get says %zu live %s handles, the model %zu", where, got[k], okind_name[k], want[k]);
    if (st.stale_skips != base_stale + M.stale_skips)
        fail("%s: stale_skips is %llu, the model expects %llu", where,
             (unsigned long long)(st.stale_skips - base_stale), (unsigned long long)M.stale_skips);
    /* Every live context that an alive handle names has its live entry;
     * entries of ended contexts may linger until cuctx next looks. */
    size_t named = 0;
    for (int k = 0; k < M.ninst; k++) {
        if (!M.inst[k].live)
            continue;
        for (int i = 0; i < M.nobj; i++) {
            if (M.obj[i].alive && (M.obj[i].inst == k || (M.obj[i].kind == O_PEER && M.obj[i].inst2 == k))) {
                named++;
                break;
            }
        }
    }
    if (st.contexts < named || st.contexts > (size_t)M.ninst)
        fail("%s: cuctx_stats_get says %zu contexts; %zu live ones are named by handles, %d were ever met", where,
             st.contexts, named, M.ninst);
    if (st.failed_destroys != base_failed)
        fail("%s: failed_destroys grew by %llu", where, (unsigned long long)(st.failed_destroys - base_failed));
    if (st.shutdown_skips != 0)
        fail("%s: shutdown_skips is %llu", where, (unsigned long long)st.shutdown_skips);

    size_t live_green = 0, green_handles = 0;
    for (int i = 0; i < M.ninst; i++)
        if (M.inst[i].live)
            *(M.inst[i].kind == I_PRIMARY ? &live_prim : M.inst[i].kind == I_GREEN ? &live_green : &live_ctx) += 1;
    for (int i = 0; i < M.nobj; i++)
        green_handles += M.obj[i].kind == O_CTX && M.obj[i].alive && M.obj[i].role == R_GREEN;
    if (st.green_contexts != green_handles)
        fail("%s: cuctx_stats_get says %zu green contexts, the model %zu", where, st.green_contexts, green_handles);
    if (sim.live(CUSIM_GREEN) != live_green)
        fail("%s: the driver has %zu live green contexts, the model %zu", where, sim.live(CUSIM_GREEN), live_green);
    if (sim.leaked_streams() != 0)
        fail("%s: the driver saw %zu streams die with their green context (not destroyed first)", where,
             sim.leaked_streams());
    if (sim.live(CUSIM_CONTEXT) != live_ctx)
        fail("%s: the driver has %zu live contexts, the model %zu", where, sim.live(CUSIM_CONTEXT), live_ctx);
    if (sim.live(CUSIM_PRIMARY) != live_prim)
        fail("%s: the driver has %zu active primary contexts, the model %zu", where, sim.live(CUSIM_PRIMARY), live_prim);
    for (int k = O_EVENT; k < O_KINDS; k++) {
        size_t n = k == O_MASYNC ? sim.async_allocs_live() : sim.live(sim_kind[k]);
        if (n != drv[k])
            fail("%s: the driver has %zu live %s objects, the model %zu", where, n, okind_name[k], drv[k]);
    }
    if (sim.live(CUSIM_CAPTURE) != 0)
        fail("%s: the driver has %zu stream captures going on", where, sim.live(CUSIM_CAPTURE));
    for (int d = 0; d < NDEV; d++) {
        unsigned refs = prim_holds(d);
        if (sim.primary_refs(d) != refs)
            fail("%s: device %d's primary context has %u retains, the model %u", where, d, sim.primary_refs(d), refs);
    }

    CUcontext cur = NULL;
    if (raw.get(&cur) != CUDA_SUCCESS)
        fail("%s: cuCtxGetCurrent failed", where);
    if (H(cur) != top())
        fail("%s: the current context is %#llx, the model says %#llx", where, (unsigned long long)H(cur),
             (unsigned long long)top());
    cur = C(1);
    if (cuctx_current_raw(&cur) != CUDA_SUCCESS || H(cur) != top())
        fail("%s: cuctx_current_raw says %p, the model %#llx", where, (void *)cur, (unsigned long long)top());
    if (sim.misuse_count() != 0)
        fail("%s: the simulator recorded %zu misuse(s)", where, sim.misuse_count());
    if (reports_seen != M.reports)
        fail("%s: the error handler was told %d time(s), the model expects %d", where, reports_seen, M.reports);
}

/* ---- the input ---------------------------------------------------------------------- */

static const uint8_t *in;
static size_t in_n, in_pos;

static uint8_t next(void)
{
    return in_pos < in_n ? in[in_pos++] : 0;
}

enum op {
    OP_CTX_CREATE, OP_CTX_PRIMARY, OP_CTX_BORROW, OP_CTX_DESTROY, OP_CTX_SET_CURRENT, OP_POP_CURRENT,
    OP_CTX_QUERY, OP_PRIMARY_RESET, OP_CHILD_CREATE, OP_CHILD_CREATE_CUR, OP_CHILD_DESTROY, OP_CHILD_USE,
    OP_COPY, OP_STALE, OP_SCOPE_ENTER, OP_SCOPE_EXIT, OP_SCOPED, OP_RAW_CREATE, OP_RAW_DESTROY,
    OP_RAW_PUSH, OP_RAW_POP, OP_RAW_PRIMARY, OP_AUTO, OP_GRAPH, OP_LIBRARY, OP_LAUNCH, OP_CAPTURE, OP_ASYNC,
    OP_GREEN, OP_MULTI, OP_COUNT
};

static void run_ops(int n);
static void library_kernel(uint64_t id, unsigned v);

/* ---- contexts ------------------------------------------------------------------------- */

static void op_ctx_create(int slot, uint8_t b)
{
    static const unsigned sched[] = {CUCTX_SCHED_AUTO, CUCTX_SCHED_SPIN, CUCTX_SCHED_YIELD, CUCTX_SCHED_BLOCKING_SYNC};
    int dev = b & 1;
    unsigned flags = sched[(b >> 1) & 3] | ((b >> 3) & 1 ? CUCTX_MAP_HOST : 0);
    CUresult want = CUDA_SUCCESS;
    if (b & 0x80) {
        flags = 0x20;
        want = CUDA_ERROR_INVALID_VALUE;
    } else if ((b & 0x70) == 0x70) {
        dev = BAD_DEV;
        want = CUDA_ERROR_INVALID_DEVICE;
    }
    if (M.depth >= STACK_CAP)
        return;
    cuctx_ctx c = {0xdead};
    CUresult rc = PLAIN ? (cuctx_ctx_create)(&c, dev, flags) : cuctx_ctx_create(&c, dev, flags);
    note("ctx_create(slot %d, dev %d, flags %#x) -> %s %#llx", slot, dev, flags, cuctx_result_name(rc),
         (unsigned long long)c.id);
    expect_rc(rc, want, "cuctx_ctx_create");
    if (rc != CUDA_SUCCESS) {
        if (c.id)
            fail("a failed cuctx_ctx_create left the handle %#llx", (unsigned long long)c.id);
        return;
    }
    CUcontext cur = NULL;
    raw.get(&cur);
    int k = inst_new(H(cur), I_OWNED, dev);
    push(H(cur));
    M.pushes++;
    int oi = obj_new(c.id, O_CTX, k);
    M.obj[oi].role = R_OWNED;
    M.obj[oi].dev = dev;
    M.ctx_slot[slot] = c.id;
    if (cuctx_ctx_raw(c) != cur)
        fail("cuctx_ctx_raw of a new context is %p, the driver made it %p", (void *)cuctx_ctx_raw(c), (void *)cur);
    if (cuctx_ctx_device(c) != dev)
        fail("cuctx_ctx_device of a new context on device %d is %d", dev, cuctx_ctx_device(c));
}

static void op_ctx_primary(int slot, uint8_t b)
{
    int dev = b & 1;
    CUresult want = CUDA_SUCCESS;
    if ((b & 0x70) == 0x70) {
        dev = BAD_DEV;
        want = CUDA_ERROR_INVALID_DEVICE;
    }
    cuctx_ctx c = {0xdead};
    CUresult rc = PLAIN ? (cuctx_ctx_primary)(&c, dev) : cuctx_ctx_primary(&c, dev);
    note("ctx_primary(slot %d, dev %d) -> %s %#llx", slot, dev, cuctx_result_name(rc), (unsigned long long)c.id);
    expect_rc(rc, want, "cuctx_ctx_primary");
    if (rc != CUDA_SUCCESS) {
        if (c.id)
            fail("a failed cuctx_ctx_primary left the handle %#llx", (unsigned long long)c.id);
        return;
    }
    prim_retain_model(dev);
    int oi = obj_new(c.id, O_CTX, M.prim[dev]);
    M.obj[oi].role = R_PRIMARY;
    M.obj[oi].dev = dev;
    M.ctx_slot[slot] = c.id;
    if (H(cuctx_ctx_raw(c)) != prim_addr[dev])
        fail("cuctx_ctx_raw of device %d's primary context is %p, not %#llx", dev, (void *)cuctx_ctx_raw(c),
             (unsigned long long)prim_addr[dev]);
}

/* A green context into ctx slot `slot`: b%4 0-1 cuctx_ctx_green of
 * (b>>2)%4 -> 16, 8, 0 or 200 SMs (200: more than the device has), 2
 * cuctx_ctx_green_desc of a split of 24 SMs, 3 of a NULL descriptor; device
 * (b>>4)&1, BAD_DEV with (b & 0xe0) == 0xe0 for the first two. */
static void op_green(int slot, uint8_t b)
{
    static const unsigned sms[] = {16, 8, 0, 200};
    int dev = (b >> 4) & 1, form = b % 4;
    unsigned n = sms[(b >> 2) % 4];
    CUresult want = CUDA_SUCCESS, rc;
    cuctx_ctx c = {0xdead};
    if (form < 2 && (b & 0xe0) == 0xe0)
        dev = BAD_DEV, want = CUDA_ERROR_INVALID_DEVICE;
    else if (form < 2 && n > 132)
        want = CUDA_ERROR_INVALID_VALUE;
    else if (form == 3)
        want = CUDA_ERROR_INVALID_VALUE;
    if (form < 2) {
        rc = PLAIN ? (cuctx_ctx_green)(&c, dev, n) : cuctx_ctx_green(&c, dev, n);
    } else {
        CUdevResourceDesc d = NULL;
        if (form == 2) {
            CUdevResource all, part;
            unsigned groups = 1;
            if (raw.dev_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS
                || raw.sm_split(&part, &groups, &all, NULL, 0, 24) != CUDA_SUCCESS
                || raw.gen_desc(&d, &part, 1) != CUDA_SUCCESS)
                fail("raw split of device %d's SMs", dev);
        }
        rc = PLAIN ? (cuctx_ctx_green_desc)(&c, dev, d) : cuctx_ctx_green_desc(&c, dev, d);
    }
    note("ctx_green(slot %d, dev %d, %s %u) -> %s %#llx", slot, dev, form < 2 ? "SMs" : form == 2 ? "a descriptor of" : "NULL",
         form < 2 ? n : form == 2 ? 24 : 0, cuctx_result_name(rc), (unsigned long long)c.id);
    expect_rc(rc, want, form < 2 ? "cuctx_ctx_green" : "cuctx_ctx_green_desc");
    if (rc != CUDA_SUCCESS) {
        if (c.id)
            fail("a failed green create left the handle %#llx", (unsigned long long)c.id);
        return;
    }
    prim_retain_model(dev);
    CUcontext raw_ctx = cuctx_ctx_raw(c);
    int k = inst_new(H(raw_ctx), I_GREEN, dev);
    int oi = obj_new(c.id, O_CTX, k);
    M.obj[oi].role = R_GREEN;
    M.obj[oi].dev = dev;
    M.ctx_slot[slot] = c.id;
    if (cuctx_ctx_device(c) != dev)
        fail("cuctx_ctx_device of a green context on device %d is %d", dev, cuctx_ctx_device(c));
}

/* An address to borrow; 0 for NULL. Only addresses the driver has met. */
static uint64_t borrow_source(uint8_t a, uint8_t b, const char **what)
{
    switch (b % 6) {
    case 0:
    case 1: {
        int k = M.raw_slot[b % 2];
        *what = "raw slot";
        return k >= 0 ? M.inst[k].addr : 0;
    }
    case 2:
        *what = "current";
        return top();
    case 3: {
        int oi = obj_find(M.ctx_slot[(a >> 2) % NCTX]);
        *what = "ctx slot's address";
        return oi >= 0 ? M.inst[M.obj[oi].inst].addr : 0;
    }
    case 4: {
        int dev = (b >> 3) & 1;
        *what = "primary";
        return occ(prim_addr[dev]) >= 0 ? prim_addr[dev] : 0;
    }
    default:
        *what = "NULL";
        return 0;
    }
}

static void op_ctx_borrow(int slot, uint8_t a, uint8_t b)
{
    const char *what;
    uint64_t addr = borrow_source(a, b, &what);
    CUresult want = CUDA_SUCCESS;
    int k = -1;
    if (!addr)
        want = CUDA_ERROR_INVALID_VALUE;
    else if ((k = occ_live(addr)) < 0)
        want = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    cuctx_ctx c = {0xdead};
    CUresult rc = PLAIN ? (cuctx_ctx_borrow)(&c, C(addr)) : cuctx_ctx_borrow(&c, C(addr));
    note("ctx_borrow(slot %d, %s %#llx) -> %s %#llx", slot, what, (unsigned long long)addr, cuctx_result_name(rc),
         (unsigned long long)c.id);
    expect_rc(rc, want, "cuctx_ctx_borrow");
    if (rc != CUDA_SUCCESS) {
        if (c.id)
            fail("a failed cuctx_ctx_borrow left the handle %#llx", (unsigned long long)c.id);
        return;
    }
    int oi = obj_new(c.id, O_CTX, k);
    M.obj[oi].role = R_BORROWED;
    M.obj[oi].dev = M.inst[k].dev;
    M.ctx_slot[slot] = c.id;
    if (cuctx_ctx_device(c) != M.inst[k].dev)
        fail("cuctx_ctx_device of a borrowed context of device %d is %d", M.inst[k].dev, cuctx_ctx_device(c));
}

/* Destroys *h by one of three calls; the model's answer is want. */
static void destroy_via(uint64_t *h, int how, CUresult want, const char *what)
{
    CUresult rc;
    uint64_t was = *h;
    switch (how % 3) {
    case 0:
        rc = id_kind(was) == O_CTX || !was ? cuctx_ctx_destroy((cuctx_ctx *)h) : (cuctx_destroy)(h);
        break;
    case 1:
        rc = (cuctx_destroy)(h);    /* the untyped forms: a bare id of any kind */
        break;
    default: {
        int before = reports_seen;
        (cuctx_cleanup)(h);
        rc = reports_seen > before ? last_report_rc : CUDA_SUCCESS;
        if (want != CUDA_SUCCESS)
            M.reports++;
        if (reports_seen > before + 1)
            fail("one cuctx_cleanup told the error handler %d times", reports_seen - before);
        break;
    }
    }
    note("  %s(%#llx) via %s -> %s", what, (unsigned long long)was,
         how % 3 == 0 ? "kind destroy" : how % 3 == 1 ? "cuctx_destroy" : "cuctx_cleanup",
         cuctx_result_name(rc));
    if (how % 3 == 2) {
        if (rc != want)
            fail("cuctx_cleanup of %#llx reported %s, the model expects %s", (unsigned long long)was,
                 cuctx_result_name(rc), cuctx_result_name(want));
    } else {
        expect_rc(rc, want, what);
    }
    if (*h != 0)
        fail("%s left the handle %#llx, not {0}", what, (unsigned long long)*h);
}

static void op_ctx_destroy(int slot, uint8_t b)
{
    if (b & 0x80) {
        /* a child's id given to cuctx_ctx_destroy: refused, the child lives on */
        uint64_t id = M.ch_slot[(b >> 2) % NCH];
        if (!id)
            return;
        CUresult rc = cuctx_ctx_destroy((cuctx_ctx *)&id);
        note("ctx_destroy(child %#llx) -> %s", (unsigned long long)M.ch_slot[(b >> 2) % NCH], cuctx_result_name(rc));
        expect_rc(rc, CUDA_ERROR_INVALID_HANDLE, "cuctx_ctx_destroy of a child's handle");
        return;
    }
    note("ctx_destroy(slot %d)", slot);
    uint64_t id = M.ctx_slot[slot];
    CUresult want = model_ctx_destroy(id);
    destroy_via(&M.ctx_slot[slot], b, want, "cuctx_ctx_destroy");
}

static void op_ctx_set_current(int slot, uint8_t b)
{
    uint64_t id = (b & 0x80) ? 0 : (b & 0x40) ? M.ch_slot[b % NCH] : M.ctx_slot[slot];
    int oi;
    CUresult want = want_ctx(id, &oi);
    CUresult rc = cuctx_ctx_set_current((cuctx_ctx){id});
    note("ctx_set_current(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_ctx_set_current");
    if (rc == CUDA_SUCCESS) {
        M.sets++;
        if (M.depth)
            M.stack[M.depth - 1] = M.inst[M.obj[oi].inst].addr;
        else
            push(M.inst[M.obj[oi].inst].addr);
    }
}

static void op_pop_current(void)
{
    CUresult want = CUDA_SUCCESS;
    if (!M.depth)
        want = CUDA_ERROR_INVALID_CONTEXT;
    else if (occ_live(top()) < 0)
        want = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    CUresult rc = cuctx_pop_current();
    note("pop_current -> %s", cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_pop_current");
    if (rc == CUDA_SUCCESS) {
        M.depth--;
        if (M.pushes)
            M.pushes--;
    }
}

static void ctx_query(uint64_t id, uint8_t b)
{
    int oi;
    CUresult want = want_ctx(id, &oi), rc;
    uint64_t addr = want == CUDA_SUCCESS ? M.inst[M.obj[oi].inst].addr : 0;
    cuctx_ctx c = {id};
    switch (b % 4) {
    case 0: {
        int is = -1;
        rc = cuctx_ctx_is_current(c, &is);
        note("ctx_is_current(%#llx) -> %s %d", (unsigned long long)id, cuctx_result_name(rc), is);
        expect_rc(rc, want, "cuctx_ctx_is_current");
        if (is != (rc == CUDA_SUCCESS && top() == addr))
            fail("cuctx_ctx_is_current says %d", is);
        break;
    }
    case 1: {
        CUcontext r = cuctx_ctx_raw(c);
        note("ctx_raw(%#llx) -> %p", (unsigned long long)id, (void *)r);
        if (H(r) != addr)
            fail("cuctx_ctx_raw is %p, the model says %#llx", (void *)r, (unsigned long long)addr);
        if (!r && cuctx_last_error() != want)
            fail("cuctx_ctx_raw failed, the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                 cuctx_result_name(want));
        break;
    }
    case 2: {
        CUdevice d = cuctx_ctx_device(c);
        note("ctx_device(%#llx) -> %d", (unsigned long long)id, d);
        if (d != (want == CUDA_SUCCESS ? M.inst[M.obj[oi].inst].dev : -1))
            fail("cuctx_ctx_device is %d", d);
        break;
    }
    default:
        rc = cuctx_ctx_synchronize(c);
        note("ctx_synchronize(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_ctx_synchronize");
        break;
    }
}

static void op_ctx_query(int slot, uint8_t b)
{
    ctx_query((b & 0x80) ? M.ch_slot[(b >> 3) % NCH] : M.ctx_slot[slot], b);
}

static void op_primary_reset(uint8_t a, uint8_t b)
{
    int dev = (b & 0x70) == 0x70 ? BAD_DEV : b & 1;
    CUresult want = dev == BAD_DEV ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
    CUresult rc;
    /* A reset under a live green context is the simulator's model, not
     * measured: not fuzzed (tests/test_green has it). */
    if (dev != BAD_DEV && greens_on(dev)) {
        note("primary reset of device %d: not while a green context lives on it", dev);
        return;
    }
    if (a & 1) {
        rc = cuctx_ctx_primary_reset(dev);
        note("ctx_primary_reset(%d) -> %s", dev, cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_ctx_primary_reset");
    } else {
        if (dev == BAD_DEV)
            return;
        rc = raw.reset(dev);
        note("raw cuDevicePrimaryCtxReset(%d) -> %s", dev, cuctx_result_name(rc));
        if (rc != want)
            fail("raw reset: %s", cuctx_result_name(rc));
    }
    if (rc == CUDA_SUCCESS && M.prim[dev] >= 0)
        M.inst[M.prim[dev]].live = 0;
}

/* ---- children ------------------------------------------------------------------------- */

static CUgraph graph(void)
{
    if (!M.graph && raw.graph_create(&M.graph, 0) != CUDA_SUCCESS)
        fail("cuGraphCreate failed");
    return M.graph;
}

/* Creates a child of kind k (O_EVENT..O_GEXEC) in ctx; returns cuctx's answer,
 * and in *want the model's, given that the owner resolves as `owner`. */
static CUresult child_create(int k, uint64_t ctx, unsigned param, uint64_t *out, CUresult owner, CUresult *want,
                             unsigned *flags, size_t *size, char *desc, size_t dn)
{
    cuctx_ctx c = {ctx};
    CUresult rc, drv = CUDA_SUCCESS;
    *flags = 0;
    *size = 0;
    *out = 0xdead;
    switch (k) {
    case O_EVENT: {
        static const unsigned ef[] = {0, CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING,
                                      CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS, 0x80};
        unsigned f = ef[param % 6];
        drv = param % 6 >= 4 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        *flags = f;
        snprintf(desc, dn, "event_create(flags %#x)", f);
        rc = PLAIN ? (cuctx_event_create)((cuctx_event *)out, c, f) : cuctx_event_create((cuctx_event *)out, c, f);
        break;
    }
    case O_STREAM: {
        static const unsigned sf[] = {0, CU_STREAM_NON_BLOCKING, 4};
        static const int prio[] = {0, -1, -5, 3, -9};
        unsigned f = sf[param % 3];
        int p = prio[(param / 3) % 5];
        drv = f == 4 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        snprintf(desc, dn, "stream_create(flags %#x, priority %d)", f, p);
        rc = PLAIN ? (cuctx_stream_create)((cuctx_stream *)out, c, f, p)
                   : cuctx_stream_create((cuctx_stream *)out, c, f, p);
        break;
    }
    case O_MODULE:
        switch (param % 5) {
        case 0:
        case 1:
            snprintf(desc, dn, "module_load_data(kernels)");
            rc = PLAIN ? (cuctx_module_load_data)((cuctx_module *)out, c, good_image)
                       : cuctx_module_load_data((cuctx_module *)out, c, good_image);
            break;
        case 2:
            snprintf(desc, dn, "module_load_data(%s)", param & 8 ? "no kernels" : "binary");
            drv = CUDA_ERROR_INVALID_IMAGE;
            rc = cuctx_module_load_data((cuctx_module *)out, c, param & 8 ? text_image : bin_image);
            break;
        case 3:
            snprintf(desc, dn, "module_load(missing file)");
            drv = CUDA_ERROR_FILE_NOT_FOUND;
            rc = PLAIN ? (cuctx_module_load)((cuctx_module *)out, c, "/nonexistent/cuctx-fuzz.ptx")
                       : cuctx_module_load((cuctx_module *)out, c, "/nonexistent/cuctx-fuzz.ptx");
            break;
        default:
            snprintf(desc, dn, "module_load(%s)", ptx_path ? ptx_path : "kernels");
            rc = ptx_path ? cuctx_module_load((cuctx_module *)out, c, ptx_path)
                          : cuctx_module_load_data((cuctx_module *)out, c, good_image);
            break;
        }
        break;
    case O_MEM: {
        static const size_t ms[] = {1, 16, 4096, 100000, 0, ((size_t)1 << 30) + 1};
        size_t n = ms[param % 6];
        drv = n == 0 ? CUDA_ERROR_INVALID_VALUE : n > ((size_t)1 << 30) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
        *size = n;
        snprintf(desc, dn, "mem_alloc(%zu)", n);
        rc = PLAIN ? (cuctx_mem_alloc)((cuctx_mem *)out, c, n) : cuctx_mem_alloc((cuctx_mem *)out, c, n);
        break;
    }
    case O_HOST: {
        static const size_t hs[] = {1, 64, 4096, 0};
        static const unsigned hf[] = {0, CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_DEVICEMAP,
                                      CU_MEMHOSTALLOC_WRITECOMBINED, 0x80};
        size_t n = hs[param % 4];
        unsigned f = hf[(param / 4) % 5];
        drv = n == 0 || f == 0x80 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        *size = n;
        snprintf(desc, dn, "host_mem_alloc(%zu, flags %#x)", n, f);
        rc = PLAIN ? (cuctx_host_mem_alloc)((cuctx_host_mem *)out, c, n, f)
                   : cuctx_host_mem_alloc((cuctx_host_mem *)out, c, n, f);
        break;
    }
    default: {
        static const unsigned long long gf[] = {0, 0, 1, 0, 0x100};
        int null_graph = param % 5 == 3;
        unsigned long long f = gf[param % 5];
        drv = f == 0x100 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        snprintf(desc, dn, "graph_exec_instantiate(%s, flags %#llx)", null_graph ? "NULL" : "graph", f);
        if (null_graph) {
            *want = CUDA_ERROR_INVALID_VALUE;   /* checked before the context */
            return cuctx_graph_exec_instantiate((cuctx_graph_exec *)out, c, NULL, f);
        }
        rc = PLAIN ? (cuctx_graph_exec_instantiate)((cuctx_graph_exec *)out, c, graph(), f)
                   : cuctx_graph_exec_instantiate((cuctx_graph_exec *)out, c, graph(), f);
        break;
    }
    }
    *want = owner != CUDA_SUCCESS ? owner : drv;
    return rc;
}

static void do_child_create(int slot, uint64_t ctx, const char *ctxdesc, uint8_t b)
{
    int k = O_EVENT + b % 6;
    unsigned param = b / 6;
    int inst = -1;
    CUresult owner = want_owner(ctx, &inst), want;
    uint64_t id;
    unsigned flags;
    size_t size;
    char desc[128];
    CUresult rc = child_create(k, ctx, param, &id, owner, &want, &flags, &size, desc, sizeof desc);
    note("%s in %s %#llx -> slot %d: %s %#llx", desc, ctxdesc, (unsigned long long)ctx, slot, cuctx_result_name(rc),
         (unsigned long long)id);
    expect_rc(rc, want, desc);
    if (rc != CUDA_SUCCESS) {
        if (id)
            fail("a failed create left the handle %#llx", (unsigned long long)id);
        return;
    }
    if (id_kind(id) != k)
        fail("a new %s handle %#llx is of kind %d", okind_name[k], (unsigned long long)id, id_kind(id));
    int oi = obj_new(id, k, tether_inst(inst, k));
    M.obj[oi].flags = flags;
    M.obj[oi].size = size;
    M.ch_slot[slot] = id;
}

/* The context operand of a create: a slot, {0} (current), or a child's id. */
static uint64_t ctx_operand(unsigned sel, const char **desc)
{
    sel %= 6;
    if (sel < NCTX) {
        *desc = "ctx slot";
        return M.ctx_slot[sel];
    }
    if (sel == NCTX) {
        *desc = "{0}";
        return 0;
    }
    *desc = "a child's id as ctx";
    return M.ch_slot[0] ? M.ch_slot[0] : M.ch_slot[1];
}

static void op_child_create(uint8_t a, uint8_t b)
{
    const char *d;
    uint64_t ctx = ctx_operand(a >> 3, &d);
    do_child_create(a % NCH, ctx, d, b);
}

/* The kinds of the handle type cuctx_mem. */
static int mem_kind(int k)
{
    return k == O_MEM || k == O_MASYNC || k == O_MIPC;
}

static void op_child_destroy(uint8_t a, uint8_t b)
{
    int slot = a % NCH;
    uint64_t id = M.ch_slot[slot];
    int oi = obj_find(id);
    int k = oi >= 0 ? M.obj[oi].kind : O_EVENT + (b >> 4) % O_CHILD_KINDS;
    CUresult rc, want;
    switch (b % 4) {
    case 0:
    case 1: {
        /* the kind's own destroy; with b & 2, another kind's (refused, left alive) */
        int dk = b % 4 == 1 ? O_EVENT + (k - O_EVENT + 1 + (b >> 4) % (O_CHILD_KINDS - 1)) % O_CHILD_KINDS : k;
        /* cuctx_mem_destroy frees either kind of memory (one handle type) */
        int mk = mem_kind(dk) && mem_kind(id_kind(id)) ? id_kind(id) : dk;
        want = model_child_destroy(id, mk);
        switch (dk) {
        case O_EVENT: rc = cuctx_event_destroy((cuctx_event *)&M.ch_slot[slot]); break;
        case O_STREAM: rc = cuctx_stream_destroy((cuctx_stream *)&M.ch_slot[slot]); break;
        case O_MODULE: rc = cuctx_module_destroy((cuctx_module *)&M.ch_slot[slot]); break;
        case O_MEM: rc = cuctx_mem_destroy((cuctx_mem *)&M.ch_slot[slot]); break;
        case O_HOST: rc = cuctx_host_mem_destroy((cuctx_host_mem *)&M.ch_slot[slot]); break;
        case O_GRAPH: rc = cuctx_graph_destroy((cuctx_graph *)&M.ch_slot[slot]); break;
        case O_LIB: rc = cuctx_library_destroy((cuctx_library *)&M.ch_slot[slot]); break;
        case O_MASYNC: rc = cuctx_mem_destroy((cuctx_mem *)&M.ch_slot[slot]); break;
        case O_POOL: rc = cuctx_mem_pool_destroy((cuctx_mem_pool *)&M.ch_slot[slot]); break;
        case O_PEER: rc = cuctx_peer_destroy((cuctx_peer *)&M.ch_slot[slot]); break;
        case O_MIPC: rc = cuctx_mem_destroy((cuctx_mem *)&M.ch_slot[slot]); break;
        default: rc = cuctx_graph_exec_destroy((cuctx_graph_exec *)&M.ch_slot[slot]); break;
        }
        note("%s_destroy(slot %d %#llx) -> %s", okind_name[dk], slot, (unsigned long long)id, cuctx_result_name(rc));
        expect_rc(rc, want, "child destroy");
        if (M.ch_slot[slot])
            fail("a destroy left the handle %#llx", (unsigned long long)M.ch_slot[slot]);
        break;
    }
    default:
        note("child destroy (slot %d)", slot);
        want = model_any_destroy(id);
        destroy_via(&M.ch_slot[slot], b % 4 == 2 ? 1 : 2, want, "destroy");
        break;
    }
}

/* A use of id as a child of kind k; other is a second operand (a stream, an event). */
/* An event opened from an IPC handle whose exported event has gone: any
 * use of it is undefined (documented; the simulator's misuse), its destroy
 * alone is right. */
static int ipc_orphan(uint64_t id)
{
    int oi = obj_find(id);
    if (oi < 0 || !M.obj[oi].alive || M.obj[oi].kind != O_EVENT || !M.obj[oi].src)
        return 0;
    const struct obj *e = &M.obj[M.obj[oi].src - 1];
    return !e->alive || !M.inst[e->inst].live;
}

static void child_use(int k, uint64_t id, uint64_t other, unsigned v)
{
    int oi, o2;
    /* the memory accessors take any kind of memory (one handle type) */
    if (mem_kind(k) && mem_kind(id_kind(id)))
        k = id_kind(id);
    if (ipc_orphan(id) || ipc_orphan(other)) {
        note("use of %#llx with %#llx: skipped, an opened event whose exporter's is gone", (unsigned long long)id,
             (unsigned long long)other);
        return;
    }
    CUresult want = want_child(id, k, &oi), rc;
    switch (k) {
    case O_EVENT:
        switch (v % 6) {
        case 0:
            rc = cuctx_event_record((cuctx_event){id}, (cuctx_stream){0});
            note("event_record(%#llx, {0}) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_event_record");
            if (rc == CUDA_SUCCESS)
                M.obj[oi].recorded = 1, M.obj[oi].cap_recorded = 0;
            return;
        case 1:
            if (want == CUDA_SUCCESS && other) {
                want = want_child(other, O_STREAM, &o2);
                if (want == CUDA_SUCCESS && !stream_takes(M.obj[o2].inst, M.obj[oi].inst))
                    want = CUDA_ERROR_INVALID_CONTEXT;
            }
            rc = cuctx_event_record((cuctx_event){id}, (cuctx_stream){other});
            note("event_record(%#llx, %#llx) -> %s", (unsigned long long)id, (unsigned long long)other,
                 cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_event_record on a stream");
            if (rc == CUDA_SUCCESS)
                M.obj[oi].recorded = 1, M.obj[oi].cap_recorded = 0;
            return;
        case 2:
            /* last recorded in a capture, which is over: 1 */
            if (want == CUDA_SUCCESS && M.obj[oi].cap_recorded)
                want = CUDA_ERROR_INVALID_VALUE;
            rc = cuctx_event_query((cuctx_event){id});
            note("event_query(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_event_query");
            return;
        case 3:
            if (want == CUDA_SUCCESS && M.obj[oi].cap_recorded)
                want = CUDA_ERROR_INVALID_VALUE;
            rc = cuctx_event_synchronize((cuctx_event){id});
            note("event_synchronize(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_event_synchronize");
            return;
        case 4: {
            float ms = -1;
            if (want == CUDA_SUCCESS) {
                want = want_child(other, O_EVENT, &o2);
                if (want == CUDA_SUCCESS && (M.obj[oi].cap_recorded || M.obj[o2].cap_recorded))
                    want = CUDA_ERROR_INVALID_VALUE;
                else if (want == CUDA_SUCCESS
                    && ((M.obj[oi].flags | M.obj[o2].flags) & CU_EVENT_DISABLE_TIMING
                        || !M.obj[oi].recorded || !M.obj[o2].recorded))
                    want = CUDA_ERROR_INVALID_HANDLE;
            }
            rc = cuctx_event_elapsed_ms((cuctx_event){id}, (cuctx_event){other}, &ms);
            note("event_elapsed_ms(%#llx, %#llx) -> %s", (unsigned long long)id, (unsigned long long)other,
                 cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_event_elapsed_ms");
            if (rc != CUDA_SUCCESS && ms != -1)
                fail("a failed cuctx_event_elapsed_ms wrote *ms");
            return;
        }
        default: {
            CUevent r = cuctx_event_raw((cuctx_event){id});
            note("event_raw(%#llx) -> %p", (unsigned long long)id, (void *)r);
            if ((r != NULL) != (want == CUDA_SUCCESS) || (r && !sim.is_live(CUSIM_EVENT, H(r))))
                fail("cuctx_event_raw is %p, the model says %s", (void *)r, cuctx_result_name(want));
            return;
        }
        }
    case O_STREAM:
        switch (v % 3) {
        case 0:
            rc = cuctx_stream_synchronize((cuctx_stream){id});
            note("stream_synchronize(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_stream_synchronize");
            return;
        case 1:
            if (want == CUDA_SUCCESS)
                want = want_child(other, O_EVENT, &o2);
            if (want == CUDA_SUCCESS && M.obj[o2].cap_recorded)
                want = CUDA_ERROR_INVALID_VALUE;
            rc = cuctx_stream_wait_event((cuctx_stream){id}, (cuctx_event){other});
            note("stream_wait_event(%#llx, %#llx) -> %s", (unsigned long long)id, (unsigned long long)other,
                 cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_stream_wait_event");
            return;
        default: {
            CUstream r = cuctx_stream_raw((cuctx_stream){id});
            note("stream_raw(%#llx) -> %p", (unsigned long long)id, (void *)r);
            if ((r != NULL) != (want == CUDA_SUCCESS) || (r && !sim.is_live(CUSIM_STREAM, H(r))))
                fail("cuctx_stream_raw is %p, the model says %s", (void *)r, cuctx_result_name(want));
            return;
        }
        }
    case O_MODULE:
        switch (v % 3) {
        case 0:
        case 1: {
            CUfunction f = (CUfunction)1;
            const char *name = v % 3 ? "nope" : (v & 4) ? "k2" : "k";
            if (want == CUDA_SUCCESS && v % 3)
                want = CUDA_ERROR_NOT_FOUND;
            rc = cuctx_module_function((cuctx_module){id}, name, &f);
            note("module_function(%#llx, %s) -> %s", (unsigned long long)id, name, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_module_function");
            if ((f != NULL) != (rc == CUDA_SUCCESS))
                fail("cuctx_module_function gave the function %p", (void *)f);
            return;
        }
        default: {
            CUmodule r = cuctx_module_raw((cuctx_module){id});
            note("module_raw(%#llx) -> %p", (unsigned long long)id, (void *)r);
            if ((r != NULL) != (want == CUDA_SUCCESS) || (r && !sim.is_live(CUSIM_MODULE, H(r))))
                fail("cuctx_module_raw is %p, the model says %s", (void *)r, cuctx_result_name(want));
            return;
        }
        }
    case O_MASYNC:
        if (v % 4 == 3) {
            /* of no context: cuctx_mem_ctx refuses it, the output {0}
             * (CUDA_ERROR_INVALID_VALUE); a stale handle of the kind is a
             * bad handle first (CUDA_ERROR_INVALID_HANDLE), as every
             * kind's */
            cuctx_ctx cx = {0xdead};
            rc = cuctx_mem_ctx((cuctx_mem){id}, &cx);
            note("mem_ctx(%#llx) -> %s %#llx", (unsigned long long)id, cuctx_result_name(rc), (unsigned long long)cx.id);
            expect_rc(rc, id_kind(id) == O_MASYNC && want != CUDA_ERROR_INVALID_HANDLE ? CUDA_ERROR_INVALID_VALUE : want,
                      "cuctx_mem_ctx of stream-ordered memory");
            if (cx.id)
                fail("a refused cuctx_mem_ctx left the handle %#llx", (unsigned long long)cx.id);
            return;
        }
        /* fall through: the accessors of any memory */
    case O_MEM:
        if (v % 2 == 0) {
            size_t n = cuctx_mem_size((cuctx_mem){id});
            note("mem_size(%#llx) -> %zu", (unsigned long long)id, n);
            if (n != (want == CUDA_SUCCESS ? M.obj[oi].size : 0))
                fail("cuctx_mem_size is %zu, the model says %s", n, cuctx_result_name(want));
        } else {
            CUdeviceptr p = cuctx_mem_ptr((cuctx_mem){id});
            note("mem_ptr(%#llx) -> %#llx", (unsigned long long)id, (unsigned long long)p);
            if ((p != 0) != (want == CUDA_SUCCESS) || (p && !sim.is_live(CUSIM_MEM, p)))
                fail("cuctx_mem_ptr is %#llx, the model says %s", (unsigned long long)p, cuctx_result_name(want));
        }
        if (want != CUDA_SUCCESS && cuctx_last_error() != want)
            fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                 cuctx_result_name(want));
        return;
    case O_HOST:
        if (v % 2 == 0) {
            size_t n = cuctx_host_mem_size((cuctx_host_mem){id});
            note("host_mem_size(%#llx) -> %zu", (unsigned long long)id, n);
            if (n != (want == CUDA_SUCCESS ? M.obj[oi].size : 0))
                fail("cuctx_host_mem_size is %zu, the model says %s", n, cuctx_result_name(want));
        } else {
            void *p = cuctx_host_mem_ptr((cuctx_host_mem){id});
            note("host_mem_ptr(%#llx) -> %p", (unsigned long long)id, p);
            if ((p != NULL) != (want == CUDA_SUCCESS) || (p && !sim.is_live(CUSIM_HOST_MEM, H(p))))
                fail("cuctx_host_mem_ptr is %p, the model says %s", p, cuctx_result_name(want));
            if (p)
                memset(p, 0xa5, M.obj[oi].size);    /* the whole block is the caller's */
        }
        if (want != CUDA_SUCCESS && cuctx_last_error() != want)
            fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                 cuctx_result_name(want));
        return;
    case O_GRAPH: {
        CUgraph g = cuctx_graph_raw((cuctx_graph){id});
        size_t n = 0;
        note("graph_raw(%#llx) -> %p", (unsigned long long)id, (void *)g);
        if ((g != NULL) != (want == CUDA_SUCCESS) || (g && !sim.is_live(CUSIM_GRAPH, H(g))))
            fail("cuctx_graph_raw is %p, the model says %s", (void *)g, cuctx_result_name(want));
        if (!g && cuctx_last_error() != want)
            fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                 cuctx_result_name(want));
        if (g && (raw.graph_nodes(g, NULL, &n) != CUDA_SUCCESS || n != M.obj[oi].size))
            fail("the graph has %zu nodes, the model %zu", n, M.obj[oi].size);
        return;
    }
    case O_MIPC:
        /* the accessors only: the exporter may have freed what it maps */
        if (v % 2 == 0) {
            size_t n = cuctx_mem_size((cuctx_mem){id});
            note("mem_size(opened %#llx) -> %zu", (unsigned long long)id, n);
            if (n != (want == CUDA_SUCCESS ? M.obj[oi].size : 0))
                fail("cuctx_mem_size is %zu, the model says %s", n, cuctx_result_name(want));
        } else {
            CUdeviceptr p = cuctx_mem_ptr((cuctx_mem){id});
            note("mem_ptr(opened %#llx) -> %#llx", (unsigned long long)id, (unsigned long long)p);
            if ((p != 0) != (want == CUDA_SUCCESS) || (p && !sim.is_live(CUSIM_IPC_MEM, p)))
                fail("cuctx_mem_ptr is %#llx, the model says %s", (unsigned long long)p, cuctx_result_name(want));
        }
        if (want != CUDA_SUCCESS && cuctx_last_error() != want)
            fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                 cuctx_result_name(want));
        return;
    case O_PEER: {
        int owned = -1;
        rc = cuctx_peer_owned((cuctx_peer){id}, &owned);
        note("peer_owned(%#llx) -> %s %d", (unsigned long long)id, cuctx_result_name(rc), owned);
        expect_rc(rc, want, "cuctx_peer_owned");
        if (rc == CUDA_SUCCESS && owned != !M.obj[oi].borrowed)
            fail("cuctx_peer_owned says %d, the model %d", owned, !M.obj[oi].borrowed);
        return;
    }
    case O_POOL:
        if (v % 2) {
            CUmemoryPool p = cuctx_mem_pool_raw((cuctx_mem_pool){id});
            note("mem_pool_raw(%#llx) -> %p", (unsigned long long)id, (void *)p);
            if ((p != NULL) != (want == CUDA_SUCCESS))
                fail("cuctx_mem_pool_raw is %p, the model says %s", (void *)p, cuctx_result_name(want));
            if (!p && cuctx_last_error() != want)
                fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                     cuctx_result_name(want));
        } else {
            rc = cuctx_mem_pool_trim((cuctx_mem_pool){id}, (v >> 1) & 1 ? 4096 : 0);
            note("mem_pool_trim(%#llx) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_mem_pool_trim");
        }
        return;
    case O_LIB:
        if (v % 2) {
            CUlibrary l = cuctx_library_raw((cuctx_library){id});
            note("library_raw(%#llx) -> %p", (unsigned long long)id, (void *)l);
            if ((l != NULL) != (want == CUDA_SUCCESS) || (l && !sim.is_live(CUSIM_LIBRARY, H(l))))
                fail("cuctx_library_raw is %p, the model says %s", (void *)l, cuctx_result_name(want));
            if (!l && cuctx_last_error() != want)
                fail("the last error is %s, the model says %s", cuctx_result_name(cuctx_last_error()),
                     cuctx_result_name(want));
        } else {
            library_kernel(id, v >> 1);
        }
        return;
    default:
        switch (v % 3) {
        case 0:
            rc = cuctx_graph_exec_launch((cuctx_graph_exec){id}, (cuctx_stream){0});
            note("graph_exec_launch(%#llx, {0}) -> %s", (unsigned long long)id, cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_graph_exec_launch");
            return;
        case 1:
            if (want == CUDA_SUCCESS && other) {
                want = want_child(other, O_STREAM, &o2);
                if (want == CUDA_SUCCESS && !stream_takes(M.obj[o2].inst, M.obj[oi].inst))
                    want = CUDA_ERROR_INVALID_CONTEXT;
            }
            rc = cuctx_graph_exec_launch((cuctx_graph_exec){id}, (cuctx_stream){other});
            note("graph_exec_launch(%#llx, %#llx) -> %s", (unsigned long long)id, (unsigned long long)other,
                 cuctx_result_name(rc));
            expect_rc(rc, want, "cuctx_graph_exec_launch on a stream");
            return;
        default: {
            CUgraphExec r = cuctx_graph_exec_raw((cuctx_graph_exec){id});
            note("graph_exec_raw(%#llx) -> %p", (unsigned long long)id, (void *)r);
            if ((r != NULL) != (want == CUDA_SUCCESS) || (r && !sim.is_live(CUSIM_GRAPH_EXEC, H(r))))
                fail("cuctx_graph_exec_raw is %p, the model says %s", (void *)r, cuctx_result_name(want));
            return;
        }
        }
    }
}

static void op_child_use(uint8_t a, uint8_t b)
{
    uint64_t id = M.ch_slot[a % NCH], other = M.ch_slot[(a >> 3) % NCH];
    int oi = obj_find(id);
    int k = (b & 0x80) || oi < 0 ? O_EVENT + (b >> 4) % O_CHILD_KINDS : M.obj[oi].kind;
    child_use(k, id, other, b & 0x0f);
}

static void op_copy(uint8_t a, uint8_t b)
{
    if (b & 1) {
        note("copy child slot %d -> %d", a % NCH, (b >> 1) % NCH);
        M.ch_slot[(b >> 1) % NCH] = M.ch_slot[a % NCH];
    } else {
        note("copy ctx slot %d -> %d", a % NCTX, (b >> 1) % NCTX);
        M.ctx_slot[(b >> 1) % NCTX] = M.ctx_slot[a % NCTX];
    }
}

/* Copy a handle, destroy the original, then use and destroy the copy. */
static void op_stale(uint8_t a, uint8_t b)
{
    if (b & 1) {
        int slot = a % NCH;
        uint64_t copy = M.ch_slot[slot];
        int oi = obj_find(copy);
        int k = oi >= 0 ? M.obj[oi].kind : O_EVENT + (b >> 4) % O_CHILD_KINDS;
        note("stale copy of child slot %d (%#llx)", slot, (unsigned long long)copy);
        destroy_via(&M.ch_slot[slot], (b >> 1) % 3, model_any_destroy(copy), "destroy of the original");
        child_use(k, copy, M.ch_slot[(a >> 3) % NCH], b >> 3);
        destroy_via(&copy, (b >> 5) % 3, model_any_destroy(copy), "destroy of the stale copy");
    } else {
        int slot = a % NCTX;
        uint64_t copy = M.ctx_slot[slot];
        note("stale copy of ctx slot %d (%#llx)", slot, (unsigned long long)copy);
        destroy_via(&M.ctx_slot[slot], (b >> 1) % 3, model_ctx_destroy(copy), "destroy of the original");
        const char *d = "stale ctx";
        if (!(b & 0x40) && M.depth < STACK_CAP)
            do_child_create((a >> 3) % NCH, copy, d, b >> 1);
        else
            ctx_query(copy, b >> 1);
        destroy_via(&copy, (b >> 5) % 3, model_ctx_destroy(copy), "destroy of the stale copy");
    }
}

/* ---- scopes ----------------------------------------------------------------------------- */

static CUresult model_scope_enter(struct mscope *m, uint64_t id)
{
    int oi;
    m->entered = 0;
    if (!id)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = want_ctx(id, &oi);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t addr = M.inst[M.obj[oi].inst].addr;
    m->depth = M.pushes;
    m->prev = top();
    m->prev_occ = occ_live(m->prev);
    m->pushed_nothing = m->prev == addr;
    m->sets = M.sets;
    if (m->prev != addr) {
        push(addr);
        M.pushes++;
    }
    m->entered = 1;
    return CUDA_SUCCESS;
}

/* What cuctx_scope_exit does: pops what cuctx pushed since the enter; a
 * scope that pushed nothing, when a cuctx_ctx_set_current ran inside (and
 * no cuctx pop took its level), puts the previous context back on its level
 * while that context lives; then, if the previous context's slot is on top
 * again and a different context than at enter now lives at its address,
 * takes that slot back too (a level cuctx had pushed: counted off). */
static void model_scope_exit(struct mscope *m)
{
    if (!m->entered)
        return;
    m->entered = 0;
    for (unsigned n = M.pushes; n > m->depth; n--) {
        if (!M.depth) {
            M.reports++;
            return;
        }
        M.depth--;
        if (M.pushes)
            M.pushes--;
    }
    if (m->pushed_nothing && M.sets != m->sets && M.pushes >= m->depth && top() != m->prev
        && m->prev_occ >= 0 && occ_live(m->prev) == m->prev_occ) {
        if (M.depth)
            M.stack[M.depth - 1] = m->prev;
        else
            push(m->prev);
    }
    if (m->prev && M.depth && top() == m->prev) {
        int k = occ_live(m->prev);
        if (k >= 0 && k != m->prev_occ) {
            M.depth--;
            if (m->depth > 0 && M.pushes)
                M.pushes--;
        }
    }
}

static uint64_t scope_operand(uint8_t a, const char **desc)
{
    if (a & 0x80) {
        *desc = "a child's id";
        return M.ch_slot[a % NCH];
    }
    if (a % 5 == 4) {
        *desc = "{0}";
        return 0;
    }
    *desc = "ctx slot";
    return M.ctx_slot[a % 5];
}

static void scope_exit_one(void)
{
    struct open_scope *s = &M.sc[--M.nsc];
    cuctx_scope_exit(&s->s);
    model_scope_exit(&s->m);
    note("scope_exit -> state %d", s->s.state);
    if (s->s.state != CUCTX__SCOPE_EXITED && s->s.state != CUCTX__SCOPE_FAILED)
        fail("an exited scope's state is %d", s->s.state);
    M.exited = s->s;
    M.have_exited = 1;
}

static void op_scope_enter(uint8_t a)
{
    const char *d;
    uint64_t id = scope_operand(a, &d);
    if (M.nsc >= MAX_SCOPES || M.depth >= STACK_CAP)
        return;
    struct open_scope *s = &M.sc[M.nsc];
    unsigned depth = M.pushes;
    uint64_t prev = top();
    CUresult want = model_scope_enter(&s->m, id);
    memset(&s->s, 0x5a, sizeof s->s);
    CUresult rc = cuctx_scope_enter(&s->s, (cuctx_ctx){id});
    note("scope_enter(%s %#llx) -> %s (depth %u, prev %p)", d, (unsigned long long)id, cuctx_result_name(rc),
         s->s.depth, (void *)s->s.prev_raw);
    expect_rc(rc, want, "cuctx_scope_enter");
    if (rc == CUDA_SUCCESS) {
        if (s->s.state != CUCTX__SCOPE_ENTERED || s->s.depth != depth || H(s->s.prev_raw) != prev)
            fail("an entered scope is state %d depth %u prev %p; the model: depth %u prev %#llx", s->s.state,
                 s->s.depth, (void *)s->s.prev_raw, depth, (unsigned long long)prev);
    } else if (s->s.state != CUCTX__SCOPE_FAILED) {
        fail("a failed scope enter left state %d", s->s.state);
    }
    M.nsc++;
}

static void op_scope_exit(uint8_t b)
{
    if ((b & 1) && M.have_exited) {
        note("scope_exit of an exited scope (no-op)");
        cuctx_scope_exit(&M.exited);
        return;
    }
    if (M.nsc > M.base)
        scope_exit_one();
}

/* The body of a block: n operations, then the explicit scopes they left open. */
static void body(int n)
{
    int base = M.base;
    M.base = M.nsc;
    M.level++;
    if (M.level <= MAX_LEVEL)
        run_ops(n);
    while (M.nsc > M.base)
        scope_exit_one();
    M.level--;
    M.base = base;
}

static void scoped_return(cuctx_ctx c, int n, int *ran)
{
    CUCTX_SCOPED(c) {
        *ran = 1;
        body(n);
        return;
    }
}

static void op_scoped(uint8_t a, uint8_t b)
{
    const char *d;
    uint64_t id = scope_operand(a, &d);
    cuctx_ctx c = {id};
    int n = b % 4 + 1, form = (b >> 2) % 5, ran = 0, failed = 0;
    struct mscope m;
    static const char *const forms[] = {"CUCTX_SCOPED", "CUCTX_SCOPED_ELSE", "CUCTX_GUARD", "CUCTX_SCOPED+break",
                                        "CUCTX_SCOPED+return"};
    if (M.depth >= STACK_CAP)
        return;
    CUresult want = model_scope_enter(&m, id);
    note("%s(%s %#llx) { %d ops; model: %s", forms[form], d, (unsigned long long)id, n, cuctx_result_name(want));
    if (want != CUDA_SUCCESS && form != 1)
        M.reports++;    /* CUCTX_SCOPED and CUCTX_GUARD tell the handler */
    int entered = m.entered;
    M.macro_open += entered;
    switch (form) {
    case 0:
        CUCTX_SCOPED(c) {
            ran = 1;
            body(n);
        }
        break;
    case 1:
        CUCTX_SCOPED_ELSE(c, failed = 1) {
            ran = 1;
            body(n);
        }
        if (failed == ran)
            fail("CUCTX_SCOPED_ELSE ran %s", ran ? "the block and on_fail" : "neither");
        break;
    case 2: {
        CUCTX_GUARD(c);
        ran = want == CUDA_SUCCESS;     /* the block runs either way */
        body(n);
        break;
    }
    case 3:
        for (int i = 0; i < 3; i++) {
            CUCTX_SCOPED(c) {
                ran = 1;
                body(n);
                break;      /* leaves the scope, not this loop */
            }
            if (i == 0)
                break;
        }
        break;
    default:
        scoped_return(c, n, &ran);
        break;
    }
    M.macro_open -= entered;
    model_scope_exit(&m);
    note("} %s", forms[form]);
    if (ran != (want == CUDA_SUCCESS))
        fail("%s %s the block; the model expects the enter to give %s", forms[form], ran ? "ran" : "skipped",
             cuctx_result_name(want));
    if (want != CUDA_SUCCESS && form != 2 && cuctx_last_error() != want)   /* a guard's block ran */
        fail("after a failed %s the last error is %s, the model says %s", forms[form],
             cuctx_result_name(cuctx_last_error()), cuctx_result_name(want));
}

/* ---- behind cuctx's back --------------------------------------------------------------- */

/* Whether a scope is open: raw pushes and pops inside one must be balanced
 * (cuctx_scope_exit), so then the raw operations leave the stack's shape
 * alone - contexts may still die where they are. */
static int in_scope(void)
{
    if (M.macro_open)
        return 1;
    for (int i = 0; i < M.nsc; i++)
        if (M.sc[i].m.entered)
            return 1;
    return 0;
}

/* Whether a raw destroy of instance k would pop it (it is the top). */
static int on_top(int k)
{
    return M.depth && top() == M.inst[k].addr;
}

static void raw_destroy_slot(int r)
{
    int k = M.raw_slot[r];
    if (k < 0 || !M.inst[k].live || (in_scope() && on_top(k)))
        return;
    CUresult rc = raw.destroy(C(M.inst[k].addr));
    note("raw cuCtxDestroy(%#llx) -> %s", (unsigned long long)M.inst[k].addr, cuctx_result_name(rc));
    if (rc != CUDA_SUCCESS)
        fail("raw cuCtxDestroy failed: %s", cuctx_result_name(rc));
    ctx_end_model(k);
}

static void op_raw_create(uint8_t a, uint8_t b)
{
    int r = a % NRAW, dev = b & 1, k = M.raw_slot[r];
    if (M.depth >= STACK_CAP)
        return;
    if (in_scope()) {
        if (k >= 0 && M.inst[k].live && on_top(k))
            return;
        b &= ~2;    /* popped at once */
    }
    raw_destroy_slot(r);
    CUcontext c = NULL;
    CUresult rc = raw.create(&c, 0, dev);
    note("raw cuCtxCreate(dev %d) -> %s %p%s", dev, cuctx_result_name(rc), (void *)c, b & 2 ? ", left pushed" : "");
    if (rc != CUDA_SUCCESS)
        fail("raw cuCtxCreate failed: %s", cuctx_result_name(rc));
    M.raw_slot[r] = inst_new(H(c), I_RAW, dev);
    push(H(c));
    if (!(b & 2)) {
        CUcontext p = NULL;
        if (raw.pop(&p) != CUDA_SUCCESS || p != c)
            fail("raw pop of a new context");
        M.depth--;
    }
}

static void op_raw_push(uint8_t a, uint8_t b)
{
    uint64_t addr = 0;
    switch (b % 3) {
    case 0: {
        int k = M.raw_slot[a % NRAW];
        addr = k >= 0 ? M.inst[k].addr : 0;
        break;
    }
    case 1: {
        int oi = obj_find(M.ctx_slot[a % NCTX]);
        addr = oi >= 0 ? M.inst[M.obj[oi].inst].addr : 0;
        break;
    }
    default:
        addr = prim_addr[a & 1];
        break;
    }
    if (!addr || occ_live(addr) < 0 || M.depth >= STACK_CAP || in_scope())
        return;     /* only live contexts are handed to the driver */
    CUresult rc = raw.push(C(addr));
    note("raw cuCtxPushCurrent(%#llx) -> %s", (unsigned long long)addr, cuctx_result_name(rc));
    if (rc != CUDA_SUCCESS)
        fail("raw push failed");
    push(addr);
}

static void op_raw_pop(uint8_t b)
{
    if (!M.depth || in_scope())
        return;
    CUcontext p = NULL;
    CUresult rc = b & 1 ? raw.set(NULL) : raw.pop(&p);
    note("raw %s -> %s", b & 1 ? "cuCtxSetCurrent(NULL)" : "cuCtxPopCurrent", cuctx_result_name(rc));
    if (rc != CUDA_SUCCESS || (!(b & 1) && H(p) != top()))
        fail("raw pop");
    M.depth--;
}

static void op_raw_primary(uint8_t a, uint8_t b)
{
    int dev = b & 1;
    CUresult rc;
    switch (a % 3) {
    case 0: {
        if (M.prim_raw_refs[dev] >= MAX_RAW_REFS)
            return;
        CUcontext c = NULL;
        rc = raw.retain(&c, dev);
        note("raw cuDevicePrimaryCtxRetain(%d) -> %s %p", dev, cuctx_result_name(rc), (void *)c);
        if (rc != CUDA_SUCCESS || H(c) != prim_addr[dev])
            fail("raw retain");
        M.prim_raw_refs[dev]++;
        prim_retain_model(dev);
        break;
    }
    case 1:
        if (!M.prim_raw_refs[dev])
            return;
        rc = raw.release(dev);
        note("raw cuDevicePrimaryCtxRelease(%d) -> %s", dev, cuctx_result_name(rc));
        if (rc != CUDA_SUCCESS)
            fail("raw release");
        M.prim_raw_refs[dev]--;
        prim_maybe_end(dev);
        break;
    default:
        op_primary_reset(0, b & 1);
        break;
    }
}

/* ---- automatic cleanup ------------------------------------------------------------------- */

#define AUTO_CHILD(T)                                                                          \
    do {                                                                                       \
        CUCTX_AUTO T h = {0};                                                                  \
        rc = child_create(k, ctx, param, &h.id, owner, &want, &flags, &size, desc, sizeof desc); \
        note("CUCTX_AUTO %s in %s %#llx -> %s%s", desc, d, (unsigned long long)ctx,            \
             cuctx_result_name(rc), move ? ", moved out" : "");                                \
        expect_rc(rc, want, desc);                                                             \
        if (rc == CUDA_SUCCESS) {                                                              \
            oi = obj_new(h.id, k, tether_inst(inst, k));                                       \
            M.obj[oi].flags = flags;                                                           \
            M.obj[oi].size = size;                                                             \
            if (move) {                                                                        \
                T moved = CUCTX_MOVE(h);                                                       \
                M.ch_slot[dest] = moved.id;                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static void op_auto(uint8_t a, uint8_t b)
{
    const char *d;
    uint64_t ctx = ctx_operand(a >> 3, &d);
    int k = b % 7, dest = a % NCH, move = (b & 0x80) != 0, oi = -1, inst = -1;
    unsigned param = (b >> 3) & 0x0f, flags;
    size_t size;
    char desc[128];
    CUresult rc, want;
    if (M.depth >= STACK_CAP)
        return;
    if (k == 6) {
        int dev = b & 8 ? 1 : 0;
        {
            CUCTX_AUTO cuctx_ctx c = {0};
            rc = cuctx_ctx_create(&c, dev, 0);
            note("CUCTX_AUTO ctx_create(dev %d) -> %s%s", dev, cuctx_result_name(rc), move ? ", moved out" : "");
            expect_rc(rc, CUDA_SUCCESS, "cuctx_ctx_create");
            CUcontext cur = NULL;
            raw.get(&cur);
            int ki = inst_new(H(cur), I_OWNED, dev);
            push(H(cur));
            M.pushes++;
            oi = obj_new(c.id, O_CTX, ki);
            M.obj[oi].role = R_OWNED;
            M.obj[oi].dev = dev;
            if (move) {
                cuctx_ctx moved = CUCTX_MOVE(c);
                M.ctx_slot[dest % NCTX] = moved.id;
            }
        }
        if (!move)
            model_ctx_destroy(M.obj[oi].id);    /* the cleanup ran; a failure would be a report */
        return;
    }
    k += O_EVENT;
    CUresult owner = want_owner(ctx, &inst);
    switch (k) {
    case O_EVENT: AUTO_CHILD(cuctx_event); break;
    case O_STREAM: AUTO_CHILD(cuctx_stream); break;
    case O_MODULE: AUTO_CHILD(cuctx_module); break;
    case O_MEM: AUTO_CHILD(cuctx_mem); break;
    case O_HOST: AUTO_CHILD(cuctx_host_mem); break;
    default: AUTO_CHILD(cuctx_graph_exec); break;
    }
    if (oi >= 0 && !move)
        model_child_destroy(M.obj[oi].id, k);
}

/* ---- the kinds of no context: graphs, libraries; launches; stream capture ---------- */

/* Whether slot holds a live object of kind k: a create into it is refused
 * (the handle-filling rule of cuctx.h); of no context, alive is live. */
static int slot_holds_live(uint64_t id, int k)
{
    int oi = obj_find(id);
    return oi >= 0 && M.obj[oi].kind == k && M.obj[oi].alive
           && (untethered(k) || M.inst[M.obj[oi].inst].live);
}

static void op_graph(uint8_t a, uint8_t b)
{
    int slot = a % NCH;
    uint64_t id = M.ch_slot[slot];
    CUresult rc, want;
    switch (b % 5) {
    case 0:
    case 1: {
        /* b%5 == 1: into the slot itself, which must not hold a live graph */
        int into = b % 5 == 1;
        cuctx_graph g = {into ? id : 0xdead};
        want = into && slot_holds_live(id, O_GRAPH) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
        rc = PLAIN ? (cuctx_graph_create)(&g) : cuctx_graph_create(&g);
        note("graph_create(%s slot %d) -> %s %#llx", into ? "into" : "for", slot, cuctx_result_name(rc),
             (unsigned long long)g.id);
        expect_rc(rc, want, "cuctx_graph_create");
        if (rc != CUDA_SUCCESS) {
            if (g.id != (into ? id : 0))
                fail("a refused cuctx_graph_create changed the handle to %#llx", (unsigned long long)g.id);
            return;
        }
        if (id_kind(g.id) != O_GRAPH)
            fail("a new graph handle %#llx is of kind %d", (unsigned long long)g.id, id_kind(g.id));
        obj_new(g.id, O_GRAPH, -1);
        M.ch_slot[slot] = g.id;
        return;
    }
    case 2:
        child_use(O_GRAPH, id, 0, 0);
        return;
    case 3: {
        /* an exec of the slot's graph, in a context operand, to another slot */
        const char *d;
        uint64_t ctx = ctx_operand(b >> 3, &d);
        int dest = (a >> 3) % NCH, inst = -1, oi;
        CUgraph g = cuctx_graph_raw((cuctx_graph){id});
        if ((g != NULL) != (want_child(id, O_GRAPH, &oi) == CUDA_SUCCESS))
            fail("cuctx_graph_raw is %p", (void *)g);
        want = g ? want_owner(ctx, &inst) : CUDA_ERROR_INVALID_VALUE;
        cuctx_graph_exec ge = {0xdead};
        rc = cuctx_graph_exec_instantiate(&ge, (cuctx_ctx){ctx}, g, 0);
        note("graph_exec_instantiate(graph slot %d %p, %s %#llx) -> slot %d: %s %#llx", slot, (void *)g, d,
             (unsigned long long)ctx, dest, cuctx_result_name(rc), (unsigned long long)ge.id);
        expect_rc(rc, want, "cuctx_graph_exec_instantiate of a cuctx_graph");
        if (rc == CUDA_SUCCESS) {
            obj_new(ge.id, O_GEXEC, tether_inst(inst, O_GEXEC));
            M.ch_slot[dest] = ge.id;
        } else if (ge.id) {
            fail("a failed instantiate left the handle %#llx", (unsigned long long)ge.id);
        }
        return;
    }
    default:
        want = model_child_destroy(id, O_GRAPH);
        rc = cuctx_graph_destroy((cuctx_graph *)&M.ch_slot[slot]);
        note("graph_destroy(slot %d %#llx) -> %s", slot, (unsigned long long)id, cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_graph_destroy");
        if (M.ch_slot[slot])
            fail("a destroy left the handle %#llx", (unsigned long long)M.ch_slot[slot]);
        return;
    }
}

/* cuctx_library_kernel of library id, name by v. */
static void library_kernel(uint64_t id, unsigned v)
{
    static const char *const names[] = {"k", "k2", "nope", NULL};
    const char *name = names[v % 4];
    int oi;
    CUresult want = want_child(id, O_LIB, &oi);
    if (!name)
        want = CUDA_ERROR_INVALID_VALUE;   /* checked first */
    else if (want == CUDA_SUCCESS)
        want = M.obj[oi].image == 1   ? CUDA_ERROR_INVALID_PTX
               : M.obj[oi].image == 2 ? CUDA_ERROR_INVALID_IMAGE
               : v % 4 == 2           ? CUDA_ERROR_NOT_FOUND
                                      : CUDA_SUCCESS;
    CUkernel k = (CUkernel)1;
    CUresult rc = cuctx_library_kernel((cuctx_library){id}, name, &k);
    note("library_kernel(%#llx, %s) -> %s %p", (unsigned long long)id, name ? name : "NULL", cuctx_result_name(rc),
         (void *)k);
    expect_rc(rc, want, "cuctx_library_kernel");
    if ((rc == CUDA_SUCCESS) != (k != NULL))     /* every failure leaves *out NULL */
        fail("cuctx_library_kernel gave the kernel %p", (void *)k);
    /* the JIT log of the load, kept for the lookup's message */
    if (rc == CUDA_ERROR_INVALID_PTX && !strstr(cuctx_last_error_message(), "cusim_bad"))
        fail("the failed kernel lookup of a library of PTX that does not assemble does not give the JIT log");
    if (rc == CUDA_SUCCESS) {
        M.kernel = k;
        M.kernel_lib = oi;
    }
}

static void op_library(uint8_t a, uint8_t b)
{
    int slot = a % NCH;
    uint64_t id = M.ch_slot[slot];
    CUresult rc, want;
    switch (b % 5) {
    case 0:
    case 1: {
        /* from memory (b%5 == 0; image (b>>3)%6, 1: into the slot itself) or a file */
        static const char *const what[] = {"kernels", "kernels, into the slot", "PTX that does not assemble",
                                           "text without kernels", "binary", "NULL"};
        const void *const images[] = {good_image, good_image, broken_image, text_image, bin_image, NULL};
        static const int image_kind[] = {0, 0, 1, 2, 2, 0};
        int from_file = b % 5 == 1, img = (b >> 3) % 6, into = !from_file && img == 1;
        const char *path = (b >> 3) & 1 ? ptx_path : "/nonexistent/cuctx-fuzz.ptx";
        if (from_file && !path)
            return;
        cuctx_library l = {into ? id : 0xdead};
        if (into && slot_holds_live(id, O_LIB))
            want = CUDA_ERROR_INVALID_VALUE;
        else if (from_file)
            want = path == ptx_path ? CUDA_SUCCESS : CUDA_ERROR_FILE_NOT_FOUND;
        else
            want = images[img] ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        if (from_file)
            rc = PLAIN ? (cuctx_library_load)(&l, path) : cuctx_library_load(&l, path);
        else
            rc = PLAIN ? (cuctx_library_load_data)(&l, images[img]) : cuctx_library_load_data(&l, images[img]);
        note("library_load%s(%s) -> slot %d: %s %#llx", from_file ? "" : "_data", from_file ? path : what[img], slot,
             cuctx_result_name(rc), (unsigned long long)l.id);
        expect_rc(rc, want, from_file ? "cuctx_library_load" : "cuctx_library_load_data");
        if (rc != CUDA_SUCCESS) {
            if (l.id != (into ? id : 0))
                fail("a failed library load changed the handle to %#llx", (unsigned long long)l.id);
            return;
        }
        if (id_kind(l.id) != O_LIB)
            fail("a new library handle %#llx is of kind %d", (unsigned long long)l.id, id_kind(l.id));
        int oi = obj_new(l.id, O_LIB, -1);
        M.obj[oi].image = from_file ? 0 : image_kind[img];
        M.ch_slot[slot] = l.id;
        return;
    }
    case 2:
        library_kernel(id, b >> 3);
        return;
    case 3:
        child_use(O_LIB, id, 0, 1);
        return;
    default:
        want = model_child_destroy(id, O_LIB);
        rc = cuctx_library_destroy((cuctx_library *)&M.ch_slot[slot]);
        note("library_destroy(slot %d %#llx) -> %s", slot, (unsigned long long)id, cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_library_destroy");
        if (M.ch_slot[slot])
            fail("a destroy left the handle %#llx", (unsigned long long)M.ch_slot[slot]);
        return;
    }
}

/* The kernel last looked up, while its library lives (a kernel of an
 * unloaded library is the caller's error, which cuctx cannot see). */
static CUkernel live_kernel(void)
{
    return M.kernel_lib >= 0 && M.obj[M.kernel_lib].alive ? M.kernel : NULL;
}

/* The answer to a launch on the current context's default stream. */
static CUresult want_default_launch(void)
{
    if (!M.depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    return occ_live(top()) < 0 ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_SUCCESS;
}

/* cuctx_launch of the library's kernel: on a slot's stream (an empty slot
 * is {0}: the current context's default stream), {0}, CUCTX_STREAM_LEGACY
 * or _PER_THREAD; b&0x40: a grid of 0 (the driver's error); b&0x80: a NULL
 * kernel. */
static void op_launch(uint8_t a, uint8_t b)
{
    CUkernel k = live_kernel();
    if (!k)
        return;
    cuctx_stream s;
    const char *d;
    int oi;
    switch (b % 4) {
    case 0:
    case 1: s = (cuctx_stream){M.ch_slot[a % NCH]}; d = "slot"; break;
    case 2: s = (cuctx_stream){0}; d = "{0}"; break;
    default:
        s = (b >> 2) & 1 ? CUCTX_STREAM_PER_THREAD : CUCTX_STREAM_LEGACY;
        d = (b >> 2) & 1 ? "CUCTX_STREAM_PER_THREAD" : "CUCTX_STREAM_LEGACY";
        break;
    }
    CUresult want = s.id == 0 || s.id == CUCTX_STREAM_LEGACY.id || s.id == CUCTX_STREAM_PER_THREAD.id
                        ? want_default_launch()
                        : want_child(s.id, O_STREAM, &oi);
    cuctx_dim3 grid = {(b & 0x40) ? 0u : 2u, 1, 1}, block = {32, 1, 1};
    if (want == CUDA_SUCCESS && !grid.x)
        want = CUDA_ERROR_INVALID_VALUE;
    if (b & 0x80) {
        k = NULL;
        want = CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = cuctx_launch(k, s, grid, block, 0, NULL);
    note("launch(kernel %p, %s %#llx, grid %u) -> %s", (void *)k, d, (unsigned long long)s.id, grid.x,
         cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_launch of a library's kernel");
}

/* One stream capture, begun and ended within the operation (so that no
 * other operation runs while a stream captures: the unsafe-call rules of a
 * capture would reach every one of them), with steps in between. */
struct mcap {
    uint64_t s;                 /* the stream */
    int mode;                   /* CUstreamCaptureMode */
    int invalid;                /* the driver invalidated it */
    size_t nodes;               /* launches it took */
    int dest;                   /* the slot the graph goes to (*out) */
};

/* Whether the capture still exists in the driver: its stream and that
 * stream's context alive (either's end discards it). */
static int cap_live(const struct mcap *mc)
{
    int oi;
    return want_child(mc->s, O_STREAM, &oi) == CUDA_SUCCESS;
}

/* A borrowed handle of the stream's context (cuctx_stream_ctx), for steps
 * that call on the context; 0 if the model says it cannot be had. */
static uint64_t cap_ctx_handle(const struct mcap *mc)
{
    int oi;
    CUresult want = want_child(mc->s, O_STREAM, &oi);
    cuctx_ctx h = {0};
    CUresult rc = cuctx_stream_ctx((cuctx_stream){mc->s}, &h);
    note("  stream_ctx(%#llx) -> %s %#llx", (unsigned long long)mc->s, cuctx_result_name(rc), (unsigned long long)h.id);
    expect_rc(rc, want, "cuctx_stream_ctx");
    if (rc != CUDA_SUCCESS)
        return 0;
    int hi = obj_new(h.id, O_CTX, M.obj[oi].inst);
    M.obj[hi].role = R_BORROWED;
    M.obj[hi].dev = M.inst[M.obj[oi].inst].dev;
    return h.id;
}

static void cap_ctx_handle_done(uint64_t h)
{
    CUresult want = model_ctx_destroy(h);
    CUresult rc = cuctx_ctx_destroy((cuctx_ctx *)&h);
    expect_rc(rc, want, "cuctx_ctx_destroy of a stream's context handle");
}

/* One step inside a capture, from byte st. */
static void cap_step(struct mcap *mc, uint8_t st)
{
    int oi, o2;
    CUresult rc, want;
    switch (st % 8) {
    case 0: {
        CUkernel k = live_kernel();
        if (!k)
            return;
        want = want_child(mc->s, O_STREAM, &oi);
        if (want == CUDA_SUCCESS && mc->invalid)
            want = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        rc = cuctx_launch(k, (cuctx_stream){mc->s}, (cuctx_dim3){1, 1, 1}, (cuctx_dim3){1, 1, 1}, 0, NULL);
        note("  launch on the capturing stream -> %s", cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_launch in a capture");
        mc->nodes += rc == CUDA_SUCCESS;
        return;
    }
    case 1: {
        /* an event recorded in the capture: no node; its waits answer 1 after the capture */
        uint64_t e = M.ch_slot[(st >> 3) % NCH];
        if (ipc_orphan(e)) {
            note("  event_record(%#llx) on the capturing stream: skipped, its exporter's event is gone",
                 (unsigned long long)e);
            return;
        }
        want = want_child(e, O_EVENT, &oi);
        if (want == CUDA_SUCCESS) {
            want = want_child(mc->s, O_STREAM, &o2);
            if (want == CUDA_SUCCESS && !stream_takes(M.obj[o2].inst, M.obj[oi].inst))
                want = CUDA_ERROR_INVALID_CONTEXT;
            else if (want == CUDA_SUCCESS && mc->invalid)
                want = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        }
        rc = cuctx_event_record((cuctx_event){e}, (cuctx_stream){mc->s});
        note("  event_record(%#llx) on the capturing stream -> %s", (unsigned long long)e, cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_event_record in a capture");
        if (rc == CUDA_SUCCESS)
            M.obj[oi].cap_recorded = 1, M.obj[oi].recorded = 0;
        return;
    }
    case 2: {
        /* cuCtxSynchronize: refused in every mode, the capture invalidated */
        uint64_t h = cap_ctx_handle(mc);
        if (!h)
            return;
        int live = cap_live(mc);
        rc = cuctx_ctx_synchronize((cuctx_ctx){h});
        note("  ctx_synchronize of the capturing stream's context -> %s", cuctx_result_name(rc));
        expect_rc(rc, live ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS, "cuctx_ctx_synchronize in a capture");
        mc->invalid |= live;
        cap_ctx_handle_done(h);
        return;
    }
    case 3: {
        /* cuMemAlloc: forbidden to this thread unless the capture is RELAXED */
        uint64_t h = cap_ctx_handle(mc);
        if (!h)
            return;
        int refuse = cap_live(mc) && mc->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        int slot = (st >> 3) % NCH;
        if (slot == mc->dest)
            slot = (slot + 1) % NCH;
        cuctx_mem m = {0};
        rc = cuctx_mem_alloc(&m, (cuctx_ctx){h}, 4096);
        note("  mem_alloc in the capturing stream's context -> slot %d: %s %#llx", slot, cuctx_result_name(rc),
             (unsigned long long)m.id);
        expect_rc(rc, refuse ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS, "cuctx_mem_alloc in a capture");
        mc->invalid |= refuse;
        if (rc == CUDA_SUCCESS) {
            int mi = obj_new(m.id, O_MEM, tether_inst(M.obj[obj_find(h)].inst, O_MEM));
            M.obj[mi].size = 4096;
            M.ch_slot[slot] = m.id;
        }
        cap_ctx_handle_done(h);
        return;
    }
    case 4: {
        /* the stream destroyed: the capture goes with it */
        uint64_t copy = mc->s;
        want = model_child_destroy(copy, O_STREAM);
        rc = cuctx_stream_destroy((cuctx_stream *)&copy);
        note("  stream_destroy of the capturing stream -> %s", cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_stream_destroy in a capture");
        return;
    }
    case 5: {
        /* the stream's context ended: the capture goes with it */
        if (want_child(mc->s, O_STREAM, &oi) != CUDA_SUCCESS)
            return;
        int k = M.obj[oi].inst;
        if (M.inst[k].kind == I_PRIMARY) {
            op_primary_reset(1, (uint8_t)M.inst[k].dev);
        } else if (M.inst[k].kind == I_RAW) {
            for (int r = 0; r < NRAW; r++)
                if (M.raw_slot[r] == k)
                    raw_destroy_slot(r);
        } else {
            for (int i = 0; i < M.nobj; i++) {
                if (M.obj[i].kind == O_CTX && M.obj[i].alive && M.obj[i].role == R_OWNED && M.obj[i].inst == k) {
                    uint64_t h = M.obj[i].id;
                    note("  ctx_destroy of the capturing stream's context (%#llx)", (unsigned long long)h);
                    want = model_ctx_destroy(h);
                    expect_rc(cuctx_ctx_destroy((cuctx_ctx *)&h), want, "cuctx_ctx_destroy in a capture");
                    break;
                }
            }
        }
        return;
    }
    case 6: {
        /* a second begin on the stream: the driver's 401, the first going on */
        cuctx_capture c2;
        cuctx_graph g2 = {0};
        want = want_child(mc->s, O_STREAM, &oi);
        if (want == CUDA_SUCCESS)
            want = CUDA_ERROR_ILLEGAL_STATE;
        rc = cuctx_capture_begin(&c2, (cuctx_stream){mc->s}, &g2, CU_STREAM_CAPTURE_MODE_RELAXED);
        note("  a second capture_begin on the stream -> %s", cuctx_result_name(rc));
        expect_rc(rc, want, "a second cuctx_capture_begin");
        if (g2.id)
            fail("a refused capture begin left a graph");
        expect_rc(cuctx_capture_end(&c2, 1), CUDA_SUCCESS, "cuctx_capture_end of a capture not begun");
        return;
    }
    default:
        /* a synchronize of the capturing stream: refused, the capture invalidated */
        want = want_child(mc->s, O_STREAM, &oi);
        if (want == CUDA_SUCCESS) {
            want = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
            mc->invalid = 1;
        }
        rc = cuctx_stream_synchronize((cuctx_stream){mc->s});
        note("  stream_synchronize of the capturing stream -> %s", cuctx_result_name(rc));
        expect_rc(rc, want, "cuctx_stream_synchronize in a capture");
        return;
    }
}

static void cap_steps(struct mcap *mc, int n)
{
    for (int i = 0; i < n; i++)
        cap_step(mc, next());
}

/* The end's answer: the stream or its context gone, invalidated, or a graph. */
static CUresult cap_want_end(const struct mcap *mc)
{
    int oi;
    CUresult want = want_child(mc->s, O_STREAM, &oi);
    if (want == CUDA_SUCCESS && mc->invalid)
        want = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return want;
}

static int cap_block_return(struct mcap *mc, int n, int *ran, int *failed)
{
    CUCTX_CAPTURE_ELSE((cuctx_stream){mc->s}, (cuctx_graph *)&M.ch_slot[mc->dest], (CUstreamCaptureMode)mc->mode,
                       *failed = 1) {
        *ran = 1;
        cap_steps(mc, n);
        return 1;
    }
    return 0;
}

/* OP_CAPTURE: a: the stream's slot a%NCH ((a>>6) == 3: CUCTX_STREAM_LEGACY),
 * the graph's slot (a>>3)%NCH, which the capture fills; b&3 the mode
 * (GLOBAL, THREAD_LOCAL, RELAXED, not a mode); (b>>2)%6 the form: by hand
 * kept, by hand abandoned (keep 0), CUCTX_CAPTURE, CUCTX_CAPTURE_ELSE,
 * CUCTX_CAPTURE left by break, CUCTX_CAPTURE_ELSE left by return; b>>5 the
 * number of steps, one byte each (cap_step: st%8 a launch, an event record,
 * a context synchronize, an allocation, the stream's destroy, its context's
 * end, a second begin, the stream's synchronize). */
static void op_capture(uint8_t a, uint8_t b)
{
    static const int modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                CU_STREAM_CAPTURE_MODE_RELAXED, 99};
    static const char *const forms[] = {"by hand, kept", "by hand, abandoned", "CUCTX_CAPTURE", "CUCTX_CAPTURE_ELSE",
                                        "CUCTX_CAPTURE+break", "CUCTX_CAPTURE_ELSE+return"};
    struct mcap mc = {0};
    int form = ((b >> 2) & 7) % 6, n = b >> 5, oi;
    mc.s = (a >> 6) == 3 ? CUCTX_STREAM_LEGACY.id : M.ch_slot[a % NCH];
    mc.mode = modes[b & 3];
    mc.dest = (a >> 3) % NCH;
    uint64_t held = M.ch_slot[mc.dest];
    cuctx_graph *out = (cuctx_graph *)&M.ch_slot[mc.dest];

    /* the begin: the output first, then the mode, the stream */
    CUresult want = CUDA_SUCCESS;
    int claimed = 0;
    if (slot_holds_live(held, O_GRAPH)) {
        want = CUDA_ERROR_INVALID_VALUE;
    } else {
        claimed = 1;
        if (mc.mode == 99)
            want = CUDA_ERROR_INVALID_VALUE;
        else if (mc.s == 0 || mc.s == CUCTX_STREAM_LEGACY.id)
            want = CUDA_ERROR_INVALID_VALUE;
        else
            want = want_child(mc.s, O_STREAM, &oi);
    }
    note("capture %s on %#llx (mode %d, graph to slot %d, %d steps); the begin: model %s", forms[form],
         (unsigned long long)mc.s, mc.mode, mc.dest, n, cuctx_result_name(want));
    int ran = 0, failed = 0;
    CUresult rc = CUDA_SUCCESS, end_rc = CUDA_SUCCESS;
    switch (form) {
    case 0:
    case 1: {
        cuctx_capture c;
        rc = cuctx_capture_begin(&c, (cuctx_stream){mc.s}, out, (CUstreamCaptureMode)mc.mode);
        expect_rc(rc, want, "cuctx_capture_begin");
        if (claimed)
            held = 0;
        if (M.ch_slot[mc.dest] != held)
            fail("cuctx_capture_begin left the graph slot %#llx, the model %#llx",
                 (unsigned long long)M.ch_slot[mc.dest], (unsigned long long)held);
        if (rc == CUDA_SUCCESS) {
            ran = 1;
            cap_steps(&mc, n);
        }
        end_rc = cuctx_capture_end(&c, form == 0);
        note("  capture_end(keep %d) -> %s", form == 0, cuctx_result_name(end_rc));
        expect_rc(end_rc, rc == CUDA_SUCCESS ? cap_want_end(&mc) : CUDA_SUCCESS, "cuctx_capture_end");
        expect_rc(cuctx_capture_end(&c, form == 0), CUDA_SUCCESS, "a second cuctx_capture_end (a no-op)");
        break;
    }
    case 2:
    case 3:
        if (form == 2 && want != CUDA_SUCCESS)
            M.reports++;    /* CUCTX_CAPTURE tells the handler of a failed begin */
        if (form == 2) {
            CUCTX_CAPTURE((cuctx_stream){mc.s}, out, (CUstreamCaptureMode)mc.mode) {
                ran = 1;
                if (M.ch_slot[mc.dest] != 0)
                    fail("in a capture block the graph slot holds %#llx", (unsigned long long)M.ch_slot[mc.dest]);
                cap_steps(&mc, n);
                end_rc = cap_want_end(&mc);
                if (end_rc != CUDA_SUCCESS)
                    M.reports++;    /* ... and of an end without a graph */
            }
        } else {
            CUCTX_CAPTURE_ELSE((cuctx_stream){mc.s}, out, (CUstreamCaptureMode)mc.mode, failed = 1) {
                ran = 1;
                cap_steps(&mc, n);
                end_rc = cap_want_end(&mc);
            }
        }
        if (ran)
            note("  end of the block: model %s, last error %s, graph %#llx", cuctx_result_name(end_rc),
                 cuctx_result_name(cuctx_last_error()), (unsigned long long)M.ch_slot[mc.dest]);
        if (ran && end_rc != CUDA_SUCCESS && cuctx_last_error() != end_rc)
            fail("a capture block's end gave no graph with the last error %s, the model says %s",
                 cuctx_result_name(cuctx_last_error()), cuctx_result_name(end_rc));
        break;
    case 4:
        M.reports += want != CUDA_SUCCESS;
        for (int i = 0; i < 2; i++) {
            CUCTX_CAPTURE((cuctx_stream){mc.s}, out, (CUstreamCaptureMode)mc.mode) {
                ran = 1;
                cap_steps(&mc, n);
                break;      /* leaves the capture, abandoned, not this loop */
            }
            if (i == 0)
                break;
        }
        end_rc = CUDA_ERROR_UNKNOWN;    /* abandoned: no graph */
        break;
    default:
        {
            int returned = cap_block_return(&mc, n, &ran, &failed);
            if (returned != ran)
                fail("a capture block with return returned %d, ran %d", returned, ran);
        }
        end_rc = CUDA_ERROR_UNKNOWN;
        break;
    }
    if (form >= 2) {
        if (ran != (want == CUDA_SUCCESS))
            fail("%s %s the block; the model expects the begin to give %s", forms[form], ran ? "ran" : "skipped",
                 cuctx_result_name(want));
        if ((form == 3 || form == 5) && failed == ran)
            fail("%s ran %s", forms[form], ran ? "the block and on_fail" : "neither");
        if (!ran && cuctx_last_error() != want)
            fail("after a refused %s the last error is %s, the model says %s", forms[form],
                 cuctx_result_name(cuctx_last_error()), cuctx_result_name(want));
    }
    if (claimed)
        held = 0;
    /* a graph only where the block ended normally or keep was 1, and the end had one */
    int kept = ran && (form == 0 || form == 2 || form == 3) && end_rc == CUDA_SUCCESS;
    uint64_t g = M.ch_slot[mc.dest];
    if (kept) {
        if (!g || g == held || id_kind(g) != O_GRAPH)
            fail("a capture that ended with a graph left the slot %#llx", (unsigned long long)g);
        int gi = obj_new(g, O_GRAPH, -1);
        M.obj[gi].size = mc.nodes;
        size_t nodes = 0;
        if (raw.graph_nodes(cuctx_graph_raw((cuctx_graph){g}), NULL, &nodes) != CUDA_SUCCESS || nodes != mc.nodes)
            fail("the captured graph has %zu nodes, %zu launches were captured", nodes, mc.nodes);
    } else if (g != held) {
        fail("a capture with no graph left the slot %#llx, the model %#llx", (unsigned long long)g,
             (unsigned long long)held);
    }
}

/* ---- stream-ordered memory and memory pools (op 27) ------------------------------------ */

/* What a create into *out finds there (claim.c): a live object of the
 * handle's type (for a cuctx_mem, memory of any kind: device,
 * stream-ordered or IPC-opened) is refused (CUDA_ERROR_INVALID_VALUE); a
 * child whose context ended is released as a stale skip first, and the
 * create goes on. k: a kind of the handle's type. */
static CUresult model_claim(uint64_t id, int k)
{
    int oi = obj_find(id);
    if (oi < 0 || !M.obj[oi].alive)
        return CUDA_SUCCESS;
    int ok = M.obj[oi].kind;
    if (ok != k && !(mem_kind(ok) && mem_kind(k)))
        return CUDA_SUCCESS;
    if (untethered(M.obj[oi].kind) || obj_ctx_live(&M.obj[oi]))
        return CUDA_ERROR_INVALID_VALUE;
    M.obj[oi].alive = 0;
    M.stale_skips++;
    return CUDA_SUCCESS;
}

/* The stream operand of op 27: sel%4 0-1 the stream handle in slot, 2 {0},
 * 3 CUCTX_STREAM_LEGACY or (sel&4) CUCTX_STREAM_PER_THREAD. */
static uint64_t async_stream(unsigned sel, int slot)
{
    switch (sel % 4) {
    case 2: return 0;
    case 3: return sel & 4 ? CUCTX_STREAM_PER_THREAD.id : CUCTX_STREAM_LEGACY.id;
    default: return M.ch_slot[slot];
    }
}

/* What a call taking stream sid expects of it; *inst its context, *sobj
 * its object (-1 for a default stream, the current context's). */
static CUresult want_stream(uint64_t sid, int *inst, int *sobj)
{
    *sobj = -1;
    if (sid == 0 || sid == CUCTX_STREAM_LEGACY.id || sid == CUCTX_STREAM_PER_THREAD.id)
        return want_owner(0, inst);
    CUresult rc = want_child(sid, O_STREAM, sobj);
    if (rc == CUDA_SUCCESS)
        *inst = M.obj[*sobj].inst;
    return rc;
}

/* cuctx_mem_alloc_async (pool_slot < 0) or cuctx_mem_alloc_from_pool into
 * slot (into: the slot's handle itself, else a fresh one). */
static void async_alloc(int slot, int into, int pool_slot, uint64_t sid, size_t bytes)
{
    uint64_t was = M.ch_slot[slot];
    uint64_t pool = pool_slot >= 0 ? M.ch_slot[pool_slot] : 0;
    cuctx_mem m = {into ? was : 0xdead};
    int inst = -1, sobj = -1, oi;
    CUresult want = into ? model_claim(was, O_MASYNC) : CUDA_SUCCESS;
    int kept = want != CUDA_SUCCESS;    /* refused by the claim: the handle stays */
    if (want == CUDA_SUCCESS && pool_slot >= 0 && pool != 0)     /* {0}: the device's current pool */
        want = want_child(pool, O_POOL, &oi);
    if (want == CUDA_SUCCESS)
        want = want_stream(sid, &inst, &sobj);
    if (want == CUDA_SUCCESS && bytes == 0)
        want = CUDA_ERROR_INVALID_VALUE;   /* the driver's answer */
    CUresult rc;
    if (pool_slot < 0)
        rc = PLAIN ? (cuctx_mem_alloc_async)(&m, (cuctx_stream){sid}, bytes)
                   : cuctx_mem_alloc_async(&m, (cuctx_stream){sid}, bytes);
    else
        rc = PLAIN ? (cuctx_mem_alloc_from_pool)(&m, (cuctx_mem_pool){pool}, (cuctx_stream){sid}, bytes)
                   : cuctx_mem_alloc_from_pool(&m, (cuctx_mem_pool){pool}, (cuctx_stream){sid}, bytes);
    note("mem_alloc_%s(%s slot %d, pool %#llx, stream %#llx, %zu) -> %s %#llx", pool_slot < 0 ? "async" : "from_pool",
         into ? "into" : "for", slot, (unsigned long long)pool, (unsigned long long)sid, bytes, cuctx_result_name(rc),
         (unsigned long long)m.id);
    expect_rc(rc, want, pool_slot < 0 ? "cuctx_mem_alloc_async" : "cuctx_mem_alloc_from_pool");
    if (rc != CUDA_SUCCESS) {
        /* refused: a live handle kept; else {0} (a claimed one reset) */
        if (m.id != (kept ? was : 0))
            fail("a refused stream-ordered allocation left the handle %#llx", (unsigned long long)m.id);
        if (into)
            M.ch_slot[slot] = m.id;
        return;
    }
    if (id_kind(m.id) != O_MASYNC)
        fail("new stream-ordered memory %#llx is of kind %d", (unsigned long long)m.id, id_kind(m.id));
    int pi = pool_slot >= 0 && pool ? obj_find(pool) : -1;
    oi = obj_new(m.id, O_MASYNC, -1);
    M.obj[oi].size = bytes;
    M.obj[oi].sobj = sobj;
    M.obj[oi].pobj = pi + 1;
    M.ch_slot[slot] = m.id;
}

/* cuctx_mem_free_async(&slot, stream sid). */
static void async_free(int slot, uint64_t sid)
{
    uint64_t id = M.ch_slot[slot];
    int oi = obj_find(id), inst = -1, sobj = -1;
    CUresult want;
    int reset = 1;
    if (sid && oi >= 0 && M.obj[oi].kind == O_MASYNC && M.obj[oi].alive && M.obj[oi].sobj >= 0) {
        /* On another stream than its own, a free is the caller's promise
         * that the work on its own is done: never once that stream is
         * destroyed and its work may run on (the driver would hand the
         * memory on under it; the simulator records a misuse). */
        const struct obj *so = &M.obj[M.obj[oi].sobj];
        if (!so->alive && M.inst[so->inst].live) {
            note("free_async(slot %d) on another stream: skipped, its stream destroyed", slot);
            return;
        }
    }
    if (!id) {
        want = CUDA_SUCCESS;
    } else if (id_kind(id) != O_MASYNC) {
        want = CUDA_ERROR_INVALID_VALUE;    /* not stream-ordered memory: kept */
        reset = 0;
    } else if (sid && (want = want_stream(sid, &inst, &sobj)) != CUDA_SUCCESS) {
        reset = 0;
    } else {
        want = model_child_destroy(id, O_MASYNC);
    }
    CUresult rc = cuctx_mem_free_async((cuctx_mem *)&M.ch_slot[slot], (cuctx_stream){sid});
    note("mem_free_async(slot %d %#llx, stream %#llx) -> %s", slot, (unsigned long long)id, (unsigned long long)sid,
         cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_mem_free_async");
    if (M.ch_slot[slot] != (reset ? 0 : id))
        fail("cuctx_mem_free_async left the handle %#llx, the model expects %s", (unsigned long long)M.ch_slot[slot],
             reset ? "{0}" : "it kept");
}

/* cuctx_mem_pool_create (how 0), _default (1) or _adopt of the pool of
 * another slot, owned 0 (2), into slot. */
static void pool_make(int slot, int into, int how, int dev, int src)
{
    uint64_t was = M.ch_slot[slot];
    cuctx_mem_pool p = {into ? was : 0xdead};
    CUresult want = into ? model_claim(was, O_POOL) : CUDA_SUCCESS;
    int kept = want != CUDA_SUCCESS;
    CUmemoryPool raw_pool = NULL;
    CUresult rc;
    if (how == 2) {
        /* only a default pool's, which never ends: a borrowed handle of a
         * pool that another handle destroys would name a dead pool */
        int si;
        if (want_child(M.ch_slot[src], O_POOL, &si) == CUDA_SUCCESS && M.obj[si].borrowed)
            raw_pool = cuctx_mem_pool_raw((cuctx_mem_pool){M.ch_slot[src]});
        if (want == CUDA_SUCCESS && !raw_pool)
            want = CUDA_ERROR_INVALID_VALUE;
    } else if (want == CUDA_SUCCESS && dev == BAD_DEV) {
        want = how == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_DEVICE;
    }
    switch (how) {
    case 0: rc = PLAIN ? (cuctx_mem_pool_create)(&p, dev, NULL) : cuctx_mem_pool_create(&p, dev, NULL); break;
    case 1: rc = PLAIN ? (cuctx_mem_pool_default)(&p, dev) : cuctx_mem_pool_default(&p, dev); break;
    default: rc = PLAIN ? (cuctx_mem_pool_adopt)(&p, raw_pool, 0) : cuctx_mem_pool_adopt(&p, raw_pool, 0); break;
    }
    static const char *const what[] = {"cuctx_mem_pool_create", "cuctx_mem_pool_default", "cuctx_mem_pool_adopt"};
    note("%s(%s slot %d, dev %d, raw %p) -> %s %#llx", what[how], into ? "into" : "for", slot, dev, (void *)raw_pool,
         cuctx_result_name(rc), (unsigned long long)p.id);
    expect_rc(rc, want, what[how]);
    if (rc != CUDA_SUCCESS) {
        if (p.id != (kept ? was : 0))
            fail("a refused %s left the handle %#llx", what[how], (unsigned long long)p.id);
        if (into)
            M.ch_slot[slot] = p.id;
        return;
    }
    if (id_kind(p.id) != O_POOL)
        fail("a new pool handle %#llx is of kind %d", (unsigned long long)p.id, id_kind(p.id));
    int oi = obj_new(p.id, O_POOL, -1);
    M.obj[oi].borrowed = how != 0;
    M.obj[oi].dev = dev;
    M.ch_slot[slot] = p.id;
}

/* NULL outputs: each refused (CUDA_ERROR_INVALID_VALUE), nothing made. */
static void async_null_out(unsigned v)
{
    CUresult rc;
    const char *what;
    switch (v % 5) {
    case 0: what = "cuctx_mem_alloc_async(NULL)"; rc = cuctx_mem_alloc_async(NULL, (cuctx_stream){0}, 4096); break;
    case 1:
        what = "cuctx_mem_alloc_from_pool(NULL, {0})";
        rc = cuctx_mem_alloc_from_pool(NULL, (cuctx_mem_pool){0}, (cuctx_stream){0}, 4096);
        break;
    case 2: what = "cuctx_mem_free_async(NULL)"; rc = cuctx_mem_free_async(NULL, (cuctx_stream){0}); break;
    case 3: what = "cuctx_mem_pool_create(NULL)"; rc = cuctx_mem_pool_create(NULL, 0, NULL); break;
    default: what = "cuctx_mem_pool_default(NULL)"; rc = cuctx_mem_pool_default(NULL, 0); break;
    }
    note("%s -> %s", what, cuctx_result_name(rc));
    expect_rc(rc, CUDA_ERROR_INVALID_VALUE, what);
}

static void op_async(uint8_t a, uint8_t b)
{
    int slot = a % NCH, other = (a >> 3) % NCH;
    switch (b % 8) {
    case 0:
    case 1:
        /* b%8 == 1: from the pool in slot (other + 1 + (b>>6)) % NCH ({0}: the device's) */
        async_alloc(slot, (b >> 7) & 1, b % 8 ? (other + 1 + ((b >> 6) & 1)) % NCH : -1, async_stream(b >> 3, other),
                    (b & 0x40) && b % 8 == 0 ? 0 : 4096);
        return;
    case 2:
        async_free(slot, async_stream(b >> 3, other));
        return;
    case 3:
        async_free(slot, 0);
        return;
    case 4:
        pool_make(slot, (b >> 7) & 1, 0, (b & 0x40) ? BAD_DEV : (b >> 3) & 1, 0);
        return;
    case 5:
        pool_make(slot, (b >> 7) & 1, (b >> 3) & 1 ? 2 : 1, (b >> 4) & 1, other);
        return;
    case 6:
        child_use(O_POOL, M.ch_slot[slot], 0, b >> 3);
        return;
    default:
        async_null_out(b >> 3);
        return;
    }
}

/* ---- peer access and IPC (op 28) -------------------------------------------------------- */

/* cuctx_peer_enable(from, to) into slot (into: the slot's handle itself).
 * cuctx holds to's context first, then from's: the model asks in that order. */
static void peer_enable(int slot, int into, uint64_t from, uint64_t to)
{
    uint64_t was = M.ch_slot[slot];
    cuctx_peer p = {into ? was : 0xdead};
    int fi = -1, ti = -1, borrowed = 0;
    CUresult want = into ? model_claim(was, O_PEER) : CUDA_SUCCESS;
    int kept = want != CUDA_SUCCESS;
    if (want == CUDA_SUCCESS && from && from == to)
        want = CUDA_ERROR_INVALID_VALUE;
    if (want == CUDA_SUCCESS)
        want = want_owner(to, &ti);
    if (want == CUDA_SUCCESS)
        want = want_owner(from, &fi);
    if (want == CUDA_SUCCESS && fi == ti)
        want = CUDA_ERROR_INVALID_VALUE;        /* one context, named twice */
    /* a green context on either side: the simulator's model answers 801
     * (not measured), before it looks at the devices */
    if (want == CUDA_SUCCESS && (M.inst[fi].kind == I_GREEN || M.inst[ti].kind == I_GREEN))
        want = CUDA_ERROR_NOT_SUPPORTED;
    if (want == CUDA_SUCCESS && M.inst[fi].dev == M.inst[ti].dev)
        want = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    for (int i = 0; want == CUDA_SUCCESS && i < M.nobj; i++)
        borrowed |= M.obj[i].kind == O_PEER && M.obj[i].alive && !M.obj[i].borrowed && M.obj[i].inst == fi
                    && M.obj[i].inst2 == ti;    /* enabled already: the driver says 704 */
    CUresult rc = PLAIN ? (cuctx_peer_enable)(&p, (cuctx_ctx){from}, (cuctx_ctx){to})
                        : cuctx_peer_enable(&p, (cuctx_ctx){from}, (cuctx_ctx){to});
    note("peer_enable(%s slot %d, from %#llx, to %#llx) -> %s %#llx", into ? "into" : "for", slot,
         (unsigned long long)from, (unsigned long long)to, cuctx_result_name(rc), (unsigned long long)p.id);
    expect_rc(rc, want, "cuctx_peer_enable");
    if (rc != CUDA_SUCCESS) {
        if (p.id != (kept ? was : 0))
            fail("a refused cuctx_peer_enable left the handle %#llx", (unsigned long long)p.id);
        if (into)
            M.ch_slot[slot] = p.id;
        return;
    }
    if (id_kind(p.id) != O_PEER)
        fail("a new peer handle %#llx is of kind %d", (unsigned long long)p.id, id_kind(p.id));
    int oi = obj_new(p.id, O_PEER, fi);
    M.obj[oi].inst2 = ti;
    M.obj[oi].borrowed = borrowed;
    M.ch_slot[slot] = p.id;
}

/* Whether export src (an object index) is mapped, in a context of dev other than inst. */
static int ipc_mapped_beside(int src, int inst, int dev)
{
    for (int i = 0; i < M.nobj; i++) {
        const struct obj *o = &M.obj[i];
        if (o->kind == O_MIPC && o->alive && o->src == src + 1 && o->inst != inst && M.inst[o->inst].live
            && M.inst[o->inst].dev == dev)
            return 1;
    }
    return 0;
}

/* The handle of memory mid, opened into a fresh handle in ctx, to slot. */
static void ipc_mem(int slot, uint64_t mid, uint64_t ctx, unsigned flags)
{
    CUipcMemHandle h;
    int mi = -1, inst = -1;
    CUresult want = id_kind(mid) == O_MASYNC || id_kind(mid) == O_MIPC ? CUDA_ERROR_INVALID_VALUE
                                                                        : want_child(mid, O_MEM, &mi);
    CUresult rc = cuctx_ipc_mem_get((cuctx_mem){mid}, &h);
    note("ipc_mem_get(%#llx) -> %s", (unsigned long long)mid, cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_ipc_mem_get");
    if (rc != CUDA_SUCCESS)
        return;
    cuctx_mem q = {0xdead};
    want = want_owner(ctx, &inst);
    if (want == CUDA_SUCCESS)   /* a green context's: its primary's (the exporter's, maybe) */
        inst = tether_inst(inst, O_MIPC);
    if (want == CUDA_SUCCESS && (inst == M.obj[mi].inst || ipc_mapped_beside(mi, inst, M.inst[inst].dev)))
        want = CUDA_ERROR_INVALID_CONTEXT;      /* the exporting context; one context a device */
    rc = PLAIN ? (cuctx_ipc_mem_open)(&q, (cuctx_ctx){ctx}, h, flags) : cuctx_ipc_mem_open(&q, (cuctx_ctx){ctx}, h, flags);
    note("ipc_mem_open(in %#llx, flags %#x) -> slot %d: %s %#llx", (unsigned long long)ctx, flags, slot,
         cuctx_result_name(rc), (unsigned long long)q.id);
    expect_rc(rc, want, "cuctx_ipc_mem_open");
    if (rc != CUDA_SUCCESS) {
        if (q.id)
            fail("a refused cuctx_ipc_mem_open left the handle %#llx", (unsigned long long)q.id);
        return;
    }
    if (id_kind(q.id) != O_MIPC)
        fail("opened memory %#llx is of kind %d", (unsigned long long)q.id, id_kind(q.id));
    int oi = obj_new(q.id, O_MIPC, inst);
    M.obj[oi].src = mi + 1;
    M.obj[oi].size = M.obj[mi].size;
    M.ch_slot[slot] = q.id;
}

/* The handle of event eid, opened into a fresh handle in ctx, to slot. */
static void ipc_event(int slot, uint64_t eid, uint64_t ctx)
{
    CUipcEventHandle h;
    int ei = -1, inst = -1;
    CUresult want = want_child(eid, O_EVENT, &ei);
    if (want == CUDA_SUCCESS && (!(M.obj[ei].flags & CU_EVENT_INTERPROCESS) || M.obj[ei].src))
        want = CUDA_ERROR_INVALID_VALUE;        /* not made for it; an opened one */
    CUresult rc = cuctx_ipc_event_get((cuctx_event){eid}, &h);
    note("ipc_event_get(%#llx) -> %s", (unsigned long long)eid, cuctx_result_name(rc));
    expect_rc(rc, want, "cuctx_ipc_event_get");
    if (rc != CUDA_SUCCESS)
        return;
    cuctx_event e = {0xdead};
    want = want_owner(ctx, &inst);
    if (want == CUDA_SUCCESS)   /* a green context's: its primary's (the exporter's, maybe) */
        inst = tether_inst(inst, O_EVENT);
    if (want == CUDA_SUCCESS && inst == M.obj[ei].inst)
        want = CUDA_ERROR_INVALID_CONTEXT;
    rc = PLAIN ? (cuctx_ipc_event_open)(&e, (cuctx_ctx){ctx}, h) : cuctx_ipc_event_open(&e, (cuctx_ctx){ctx}, h);
    note("ipc_event_open(in %#llx) -> slot %d: %s %#llx", (unsigned long long)ctx, slot, cuctx_result_name(rc),
         (unsigned long long)e.id);
    expect_rc(rc, want, "cuctx_ipc_event_open");
    if (rc != CUDA_SUCCESS) {
        if (e.id)
            fail("a refused cuctx_ipc_event_open left the handle %#llx", (unsigned long long)e.id);
        return;
    }
    int oi = obj_new(e.id, O_EVENT, inst);
    M.obj[oi].flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
    M.obj[oi].src = ei + 1;
    M.ch_slot[slot] = e.id;
}

/* NULL outputs: each refused (CUDA_ERROR_INVALID_VALUE), nothing made. */
static void multi_null_out(unsigned v, uint64_t id)
{
    CUresult rc;
    const char *what;
    cuctx_ctx none = {0};
    CUipcMemHandle mh;
    CUipcEventHandle eh;
    memset(&mh, 0, sizeof mh);
    memset(&eh, 0, sizeof eh);
    switch (v % 6) {
    case 0: what = "cuctx_peer_enable(NULL)"; rc = cuctx_peer_enable(NULL, none, none); break;
    case 1: what = "cuctx_peer_owned(NULL)"; rc = cuctx_peer_owned((cuctx_peer){id}, NULL); break;
    case 2: what = "cuctx_ipc_mem_get(NULL)"; rc = cuctx_ipc_mem_get((cuctx_mem){id}, NULL); break;
    case 3: what = "cuctx_ipc_mem_open(NULL)"; rc = cuctx_ipc_mem_open(NULL, none, mh, 0); break;
    case 4: what = "cuctx_ipc_event_get(NULL)"; rc = cuctx_ipc_event_get((cuctx_event){id}, NULL); break;
    default: what = "cuctx_ipc_event_open(NULL)"; rc = cuctx_ipc_event_open(NULL, none, eh); break;
    }
    note("%s -> %s", what, cuctx_result_name(rc));
    expect_rc(rc, CUDA_ERROR_INVALID_VALUE, what);
}

static void op_multi(uint8_t a, uint8_t b)
{
    int slot = a % NCH, other = (a >> 3) % NCH;
    const char *d;
    sim.set_ipc_loopback(1);    /* the process stands in for the importer of its handles (cudasim.h) */
    switch (b % 8) {
    case 0:
    case 1:
        peer_enable(slot, (b >> 7) & 1, (b & 0x08) ? 0 : M.ctx_slot[(a >> 3) % NCTX], M.ctx_slot[(b >> 4) % NCTX]);
        return;
    case 2:
        child_use(O_PEER, M.ch_slot[slot], 0, 0);
        return;
    case 3:
    case 4:
        ipc_mem(slot, M.ch_slot[other], ctx_operand(b >> 4, &d), (b & 0x08) ? CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS : 0);
        return;
    case 5:
    case 6:
        ipc_event(slot, M.ch_slot[other], ctx_operand(b >> 4, &d));
        return;
    default:
        multi_null_out(b >> 3, M.ch_slot[slot]);
        return;
    }
}

/* ---- the interpreter -------------------------------------------------------------------- */

static void run_op(void)
{
    uint8_t op = next() % OP_COUNT, a = next(), b = next();
    step_no++;
    switch (op) {
    case OP_CTX_CREATE: op_ctx_create(a % NCTX, b); break;
    case OP_CTX_PRIMARY: op_ctx_primary(a % NCTX, b); break;
    case OP_CTX_BORROW: op_ctx_borrow(a % NCTX, a, b); break;
    case OP_CTX_DESTROY: op_ctx_destroy(a % NCTX, b); break;
    case OP_CTX_SET_CURRENT: op_ctx_set_current(a % NCTX, b); break;
    case OP_POP_CURRENT: op_pop_current(); break;
    case OP_CTX_QUERY: op_ctx_query(a % NCTX, b); break;
    case OP_PRIMARY_RESET: op_primary_reset(1, b); break;
    case OP_CHILD_CREATE: op_child_create(a, b); break;
    case OP_CHILD_CREATE_CUR: if (M.depth < STACK_CAP) do_child_create(a % NCH, 0, "{0}", b); break;
    case OP_CHILD_DESTROY: op_child_destroy(a, b); break;
    case OP_CHILD_USE: op_child_use(a, b); break;
    case OP_COPY: op_copy(a, b); break;
    case OP_STALE: op_stale(a, b); break;
    case OP_SCOPE_ENTER: op_scope_enter(a); break;
    case OP_SCOPE_EXIT: op_scope_exit(b); break;
    case OP_SCOPED: op_scoped(a, b); break;
    case OP_RAW_CREATE: op_raw_create(a, b); break;
    case OP_RAW_DESTROY: raw_destroy_slot(a % NRAW); break;
    case OP_RAW_PUSH: op_raw_push(a, b); break;
    case OP_RAW_POP: op_raw_pop(b); break;
    case OP_RAW_PRIMARY: op_raw_primary(a, b); break;
    case OP_AUTO: op_auto(a, b); break;
    case OP_GRAPH: op_graph(a, b); break;
    case OP_LIBRARY: op_library(a, b); break;
    case OP_LAUNCH: op_launch(a, b); break;
    case OP_ASYNC: op_async(a, b); break;
    case OP_GREEN: op_green(a % NCTX, b); break;
    case OP_MULTI: op_multi(a, b); break;
    default: op_capture(a, b); break;
    }
    verify("after the step");
}

static void run_ops(int n)
{
    for (int i = 0; i < n && in_pos < in_n; i++)
        run_op();
}

/* ---- the end of an input ------------------------------------------------------------------ */

static void teardown(void)
{
    note("-- teardown");
    while (M.nsc > 0)
        scope_exit_one();
    verify("after leaving the scopes");

    /* every handle still alive, newest first */
    for (int i = M.nobj - 1; i >= 0; i--) {
        if (!M.obj[i].alive)
            continue;
        uint64_t id = M.obj[i].id;
        CUresult want = model_any_destroy(id);
        CUresult rc = (cuctx_destroy)(&id);
        note("teardown: cuctx_destroy(%s %#llx) -> %s", okind_name[M.obj[i].kind], (unsigned long long)M.obj[i].id,
             cuctx_result_name(rc));
        expect_rc(rc, want, "teardown destroy");
        verify("after a teardown destroy");
    }
    for (int d = 0; d < NDEV; d++) {
        while (M.prim_raw_refs[d]) {
            if (raw.release(d) != CUDA_SUCCESS)
                fail("teardown: raw primary release");
            M.prim_raw_refs[d]--;
            prim_maybe_end(d);
        }
    }
    for (int r = 0; r < NRAW; r++)
        raw_destroy_slot(r);
    if (M.graph) {
        if (raw.graph_destroy(M.graph) != CUDA_SUCCESS)
            fail("teardown: cuGraphDestroy");
        M.graph = NULL;
    }
    verify("after the driver-side teardown");
    for (int i = 0; i < M.ninst; i++)
        if (M.inst[i].live)
            fail("teardown: the model still has a live context (inst %d)", i);

    /* the stack: dead contexts and all, as the driver lets one pop them */
    for (CUcontext cur = NULL; raw.get(&cur) == CUDA_SUCCESS && cur;) {
        CUcontext p;
        if (raw.pop(&p) != CUDA_SUCCESS)
            fail("teardown: raw pop");
        M.depth--;
    }
    verify("after emptying the stack");

    /* cuctx learns that the contexts it met are gone when it next looks
     * at them: look, so that it forgets them */
    for (int i = 0; i < M.ninst; i++) {
        if (occ(M.inst[i].addr) != i)
            continue;   /* an address once is enough */
        cuctx_ctx c = {0};
        CUresult rc = cuctx_ctx_borrow(&c, C(M.inst[i].addr));
        expect_rc(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "teardown: borrow of a dead context");
    }

    /* cuctx's count of its own pushes on this thread back to zero: pop
     * (through cuctx) a context pushed behind its back, until it must be */
    CUcontext x = NULL;
    if (raw.create(&x, 0, 0) != CUDA_SUCCESS)
        fail("teardown: raw create");
    for (unsigned i = 0; i < M.pushes + 4; i++) {
        expect_rc(cuctx_pop_current(), CUDA_SUCCESS, "teardown: cuctx_pop_current");
        if (raw.push(x) != CUDA_SUCCESS)
            fail("teardown: raw push");
    }
    M.pushes = 0;
    CUcontext p;
    if (raw.pop(&p) != CUDA_SUCCESS || p != x || raw.destroy(x) != CUDA_SUCCESS)
        fail("teardown: raw pop/destroy");

    struct cuctx_stats st;
    cuctx_stats_get(&st);
    if (st.contexts || st.ctx_handles || st.events || st.streams || st.modules || st.mems || st.host_mems
        || st.graph_execs || st.graphs || st.libraries || st.async_mems || st.mem_pools || st.peers || st.ipc_mems)
        fail("teardown: cuctx still has objects: %zu contexts, %zu ctx handles, %zu events, %zu streams, "
             "%zu modules, %zu mems, %zu host mems, %zu graph execs, %zu graphs, %zu libraries, %zu async mems, "
             "%zu mem pools, %zu peers, %zu ipc mems",
             st.contexts, st.ctx_handles, st.events, st.streams, st.modules, st.mems, st.host_mems, st.graph_execs,
             st.graphs, st.libraries, st.async_mems, st.mem_pools, st.peers, st.ipc_mems);
    /* the pools parked (alive in the driver, counted by verify) go before
     * the simulator's reset, which would leave cuctx naming pools it forgot */
    cuctx__pools_destroy_parked();
    cuctx_stats_get(&st);
    if (st.parked_pools != 0)
        fail("teardown: %zu pools still parked", st.parked_pools);
    if (sim.live(CUSIM_ALL) != 0)
        fail("teardown: the driver still has %zu live objects", sim.live(CUSIM_ALL));
    if (sim.misuse_count() != 0)
        fail("teardown: the simulator recorded %zu misuse(s)", sim.misuse_count());
    if (reports_seen != M.reports)
        fail("teardown: the error handler was told %d time(s), the model expects %d", reports_seen, M.reports);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cuctx_stats st;
    memset(&M, 0, sizeof M);
    for (int d = 0; d < NDEV; d++)
        M.prim[d] = -1;
    for (int r = 0; r < NRAW; r++)
        M.raw_slot[r] = -1;
    M.kernel_lib = -1;
    trace_len = 0;
    trace[0] = 0;
    step_no = 0;
    reports_seen = 0;
    cuctx_stats_get(&st);
    base_stale = st.stale_skips;
    base_failed = st.failed_destroys;
    in = data;
    in_n = size;
    in_pos = 0;
    if (size && data[0] == 0xff) {
        sim.set_recycling(0);   /* fresh addresses for every object, for this input */
        in_pos = 1;
    }

    verify("at the start");
    run_ops(1 << 30);
    teardown();
    if (print_trace)
        fprintf(stderr, "%s", trace);
    sim.reset();
    return 0;
}

static void *need_sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "fuzz_api: the simulator lacks %s\n", name);
        exit(1);
    }
    return p;
}

static void *drv_sym(const char *name, int version)
{
    void *p = NULL;
    if (cuctx_driver_symbol(name, version, &p) != CUDA_SUCCESS) {
        fprintf(stderr, "fuzz_api: %s\n", cuctx_last_error_message());
        exit(1);
    }
    return p;
}

static void remove_ptx(void)
{
    unlink(ptx_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *path = getenv("CUCTX_FUZZ_SIM");
    if (path && *path)
        setenv("CUCTX_DRIVER", path, 1);
    path = getenv("CUCTX_DRIVER");
    if (!path || !*path) {
        fprintf(stderr, "fuzz_api: set CUCTX_FUZZ_SIM (or CUCTX_DRIVER) to the simulator, libcudasim.so\n");
        exit(1);
    }
    setenv("CUSIM_DEVICES", "2", 1);
    print_trace = getenv("CUCTX_FUZZ_TRACE") && strcmp(getenv("CUCTX_FUZZ_TRACE"), "1") == 0;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h || !dlsym(h, "cusim_reset")) {
        fprintf(stderr, "fuzz_api: %s is not the simulated driver (%s)\n", path, h ? "no cusim_reset" : dlerror());
        exit(1);
    }
#define FUZZ_SIM_LOOKUP(name) sim.name = (cusim_##name##_fn)need_sym(h, "cusim_" #name);
    CUSIM_CONTROLS(FUZZ_SIM_LOOKUP)
#undef FUZZ_SIM_LOOKUP

    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "fuzz_api: %s\n", cuctx_last_error_message());
        exit(1);
    }
    raw.create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    raw.destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    raw.push = (PFN_cuCtxPushCurrent_v4000)drv_sym("cuCtxPushCurrent", 4000);
    raw.pop = (PFN_cuCtxPopCurrent_v4000)drv_sym("cuCtxPopCurrent", 4000);
    raw.get = (PFN_cuCtxGetCurrent_v4000)drv_sym("cuCtxGetCurrent", 4000);
    raw.set = (PFN_cuCtxSetCurrent_v4000)drv_sym("cuCtxSetCurrent", 4000);
    raw.retain = (PFN_cuDevicePrimaryCtxRetain_v7000)drv_sym("cuDevicePrimaryCtxRetain", 7000);
    raw.release = (PFN_cuDevicePrimaryCtxRelease_v11000)drv_sym("cuDevicePrimaryCtxRelease", 11000);
    raw.reset = (PFN_cuDevicePrimaryCtxReset_v11000)drv_sym("cuDevicePrimaryCtxReset", 11000);
    raw.graph_create = (PFN_cuGraphCreate_v10000)drv_sym("cuGraphCreate", 10000);
    raw.graph_destroy = (PFN_cuGraphDestroy_v10000)drv_sym("cuGraphDestroy", 10000);
    raw.graph_nodes = (PFN_cuGraphGetNodes_v10000)drv_sym("cuGraphGetNodes", 10000);
    raw.dev_resource = (PFN_cuDeviceGetDevResource_v12040)drv_sym("cuDeviceGetDevResource", 12040);
    raw.sm_split = (PFN_cuDevSmResourceSplitByCount_v12040)drv_sym("cuDevSmResourceSplitByCount", 12040);
    raw.gen_desc = (PFN_cuDevResourceGenerateDesc_v12040)drv_sym("cuDevResourceGenerateDesc", 12040);
    cuctx_set_error_handler(on_report, NULL);

    /* a device's primary context keeps its address for the process */
    for (int d = 0; d < NDEV; d++) {
        CUcontext c = NULL;
        if (raw.retain(&c, d) != CUDA_SUCCESS || raw.release(d) != CUDA_SUCCESS) {
            fprintf(stderr, "fuzz_api: cannot retain device %d's primary context\n", d);
            exit(1);
        }
        prim_addr[d] = H(c);
    }

    /* a module file for cuctx_module_load (run.sh points TMPDIR at its own
     * temporary directory: a crash skips the atexit removal) */
    static char tmpl[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/cuctx-fuzz-XXXXXX.ptx", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemps(tmpl, 4);
    if (fd >= 0) {
        if (write(fd, good_image, sizeof good_image - 1) == (ssize_t)(sizeof good_image - 1))
            ptx_path = tmpl;
        close(fd);
        if (ptx_path)
            atexit(remove_ptx);
        else
            unlink(tmpl);
    }
    sim.reset();
    return 0;
}
