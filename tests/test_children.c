/* SPDX-License-Identifier: MIT */
/* test_children.c - the six child kinds and their tether to the owning
 * context's generation.
 *
 * One table describes each kind (its create, use and destroy through cuctx,
 * and the driver entry points they should reach); one set of test bodies
 * runs for every kind, so each (kind, behaviour) pair is its own test.
 *
 * Against the simulated driver the tests assert on its call log (which
 * entry point, on which handle value, with which arguments and which
 * context current), its misuse log (must stay empty) and its live-object
 * counts. Against the real
 * driver (sim() NULL) the same bodies run with those asserts skipped: what
 * is left (return codes, stats, data read back) must hold there too, and
 * the hazards the real driver crashes on must not crash.
 */
#include "testlib.h"

#include <criterion/logging.h>

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cudaTypedefs.h>

/* ------------------------------------------------------------------------
 *  Small helpers
 * ------------------------------------------------------------------------ */

#define ASSERT_NO_MISUSE() cr_assert_eq(misuses(), 0, "the simulated driver recorded misuses (listed above)")

/* The first log record from `from` on of fn with rc SUCCESS naming handle h
 * (h == 0: any handle); 0 if found, -1 if not. */
static int find_call(const char *fn, uint64_t h, size_t from, struct cusim_call *out)
{
    struct cusim_call c;
    for (size_t i = from; sim() && sim()->log_get(i, &c) == 0; i++) {
        if (strcmp(c.fn, fn) == 0 && (h == 0 || c.handle == h)) {
            if (out)
                *out = c;
            return 0;
        }
    }
    return -1;
}

static int device_count(void)
{
    CUresult (*get_count)(int *) = (CUresult (*)(int *))drv_sym("cuDeviceGetCount", 2000);
    int n = 0;
    CHECK_OK(get_count(&n));
    return n;
}

/* Device memory at p: set to v, read back, and check every byte. */
static void mem_roundtrip(CUdeviceptr p, size_t n, unsigned char v)
{
    PFN_cuMemsetD8_v3020 memset_d8 = (PFN_cuMemsetD8_v3020)drv_sym("cuMemsetD8", 3020);
    PFN_cuMemcpyDtoH_v3020 dtoh = (PFN_cuMemcpyDtoH_v3020)drv_sym("cuMemcpyDtoH", 3020);
    unsigned char *back = malloc(n);
    cr_assert_not_null(back);
    memset(back, (unsigned char)~v, n);
    CHECK_OK(memset_d8(p, v, n));
    CHECK_OK(dtoh(back, p, n));
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(back[i], v, "byte %zu of device memory %#llx reads %#x, wrote %#x", i,
                     (unsigned long long)p, back[i], v);
    free(back);
}

/* ------------------------------------------------------------------------
 *  The kind table
 * ------------------------------------------------------------------------ */

struct kind {
    const char *name;           /* for messages */
    enum cusim_kind sim_kind;   /* the simulator's kind (cusim_live, cusim_is_live) */
    const char *create_fn;      /* driver entry point of the create */
    const char *create_api;     /* cuctx function of the create */
    const char *destroy_fn;     /* driver entry point of the destroy */
    const char *use_fn;         /* driver entry point of use(), NULL if none */
    int destroy_needs_current;  /* the owner must be current at the driver destroy */
    size_t stats_off;           /* offsetof(struct cuctx_stats, <kind count>) */
    CUresult (*create)(uint64_t *id, cuctx_ctx ctx);
    CUresult (*destroy)(uint64_t *id);
    /* One use of a live object; owner is its context (for memory copies). */
    void (*use)(uint64_t id, cuctx_ctx owner);
    /* Use through a possibly stale handle: returns what cuctx returned. */
    CUresult (*try_use)(uint64_t id);
    uint64_t (*raw)(uint64_t id);
};

static size_t kind_count(const struct kind *k, const struct cuctx_stats *st)
{
    size_t n;
    memcpy(&n, (const char *)st + k->stats_off, sizeof n);
    return n;
}

/* event */
static CUresult event_try_use(uint64_t id) { return cuctx_event_record((cuctx_event){id}, (cuctx_stream){0}); }
static void event_use(uint64_t id, cuctx_ctx owner)
{
    (void)owner;
    CHECK_OK(event_try_use(id));
    CHECK_OK(cuctx_event_synchronize((cuctx_event){id}));
}

/* stream */
static CUresult stream_try_use(uint64_t id) { return cuctx_stream_synchronize((cuctx_stream){id}); }
static void stream_use(uint64_t id, cuctx_ctx owner) { (void)owner; CHECK_OK(stream_try_use(id)); }

/* module */
static CUresult module_try_use(uint64_t id)
{
    CUfunction f = NULL;
    return cuctx_module_function((cuctx_module){id}, "vadd", &f);
}
static void module_use(uint64_t id, cuctx_ctx owner)
{
    (void)owner;
    CUfunction f = NULL;
    CHECK_OK(cuctx_module_function((cuctx_module){id}, "vadd", &f));
    cr_assert_not_null(f);
}

/* device memory */
static CUresult mem_try_use(uint64_t id) { return cuctx_mem_size((cuctx_mem){id}) == KIND_BYTES ? CUDA_SUCCESS : cuctx_last_error(); }
static void mem_use(uint64_t id, cuctx_ctx owner)
{
    cuctx_mem m = {id};
    cr_assert_eq(cuctx_mem_size(m), KIND_BYTES);
    CUdeviceptr p = cuctx_mem_ptr(m);
    cr_assert_neq(p, 0);
    if (!owner.id) {
        mem_roundtrip(p, KIND_BYTES, 0x5a);      /* the owner is current */
        return;
    }
    int ran = 0;
    CUCTX_SCOPED(owner) { mem_roundtrip(p, KIND_BYTES, 0x5a); ran = 1; }
    cr_assert(ran, "could not make the owner current: %s", cuctx_last_error_message());
}

/* page-locked host memory */
static CUresult host_mem_try_use(uint64_t id) { return cuctx_host_mem_ptr((cuctx_host_mem){id}) ? CUDA_SUCCESS : cuctx_last_error(); }
static void host_mem_use(uint64_t id, cuctx_ctx owner)
{
    (void)owner;
    cuctx_host_mem h = {id};
    cr_assert_eq(cuctx_host_mem_size(h), KIND_BYTES);
    unsigned char *p = cuctx_host_mem_ptr(h);
    cr_assert_not_null(p);
    memset(p, 0xa5, KIND_BYTES);
    for (size_t i = 0; i < KIND_BYTES; i += 511)
        cr_assert_eq(p[i], 0xa5);
}

/* graph exec */
static CUresult graph_exec_try_use(uint64_t id) { return cuctx_graph_exec_launch((cuctx_graph_exec){id}, (cuctx_stream){0}); }
static void graph_exec_use(uint64_t id, cuctx_ctx owner) { (void)owner; CHECK_OK(graph_exec_try_use(id)); }

/* The table: one row per line of kinds.h, with the uses above. */
#define KIND_ROW(name, type, stat, sim, letter, create_fn, destroy_fn, use_fn, needs_current, create, args, raw) \
    static CUresult name##_create(uint64_t *id, cuctx_ctx c) { return kind_create_##name((type *)id, c); }      \
    static CUresult name##_destroy(uint64_t *id) { return cuctx_##name##_destroy((type *)id); }               \
    static uint64_t name##_raw(uint64_t id) { return kind_raw_##name((type){id}); }                          \
    static const struct kind K_##name = {#name, sim, create_fn, #create, destroy_fn, use_fn, needs_current,   \
                                         offsetof(struct cuctx_stats, stat), name##_create, name##_destroy,   \
                                         name##_use, name##_try_use, name##_raw};
TEST_CHILD_KINDS(KIND_ROW)
#undef KIND_ROW

/* Creates a child of kind k in ctx, checks it, returns its raw value. */
static uint64_t make(const struct kind *k, uint64_t *id, cuctx_ctx ctx)
{
    CUresult rc = k->create(id, ctx);
    cr_assert_eq(rc, CUDA_SUCCESS, "%s create: %s: %s", k->name, cuctx_result_name(rc), cuctx_last_error_message());
    cr_assert_neq(*id, 0, "%s create left the handle {0}", k->name);
    uint64_t raw = k->raw(*id);
    cr_assert_neq(raw, 0, "%s raw accessor gave 0 for a live handle", k->name);
    return raw;
}

/* ------------------------------------------------------------------------
 *  The behaviours, one body each, for every kind
 * ------------------------------------------------------------------------ */

/* 1. Create, use, destroy: the driver create runs with the owner current,
 * whether or not it was current, and the current context is left as found;
 * use and destroy reach the driver on the same handle value. */
static void t_create_use_destroy(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    struct cusim_call c;
    struct cuctx_stats st0 = stats();
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cr_assert_eq(current(), ra);

    /* the owner is current */
    size_t m1 = log_mark();
    any_handle h1 = {0};
    uint64_t r1 = make(k, &h1.id, a);
    cr_assert_eq(current(), ra, "the create changed the current context");
    if (sim()) {
        cr_assert_eq(find_call(k->create_fn, r1, m1, &c), 0, "no %s returning %#llx in the log", k->create_fn,
                     (unsigned long long)r1);
        cr_assert_eq(c.rc, CUDA_SUCCESS);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra, "%s ran with %#llx current, not the owner %p", k->create_fn,
                     (unsigned long long)c.ctx, (void *)ra);
    }

    /* the owner is not current: another context is */
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cr_assert_eq(current(), rb);
    size_t m2 = log_mark();
    any_handle h2 = {0};
    uint64_t r2 = make(k, &h2.id, a);
    cr_assert_neq(r1, r2);
    cr_assert_eq(current(), rb, "the create did not restore the current context");
    if (sim()) {
        cr_assert_eq(find_call(k->create_fn, r2, m2, &c), 0);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra, "%s ran with %#llx current, not the owner %p", k->create_fn,
                     (unsigned long long)c.ctx, (void *)ra);
    }
    struct cuctx_stats st1 = stats();
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0) + 2, "stats count of %s", k->name);

    /* use */
    size_t m3 = log_mark();
    k->use(h1.id, a);
    k->use(h2.id, a);
    cr_assert_eq(current(), rb);
    if (sim() && k->use_fn) {
        cr_assert_eq(calls_on(k->use_fn, r1, m3), 1);
        cr_assert_eq(calls_on(k->use_fn, r2, m3), 1);
    }

    /* destroy: one driver call each, on the same value */
    size_t m4 = log_mark();
    CHECK_OK(k->destroy(&h1.id));
    cr_assert_eq(h1.id, 0, "destroy did not reset the handle");
    CHECK_OK(k->destroy(&h2.id));
    cr_assert_eq(current(), rb, "the destroy changed the current context");
    if (sim()) {
        cr_assert_eq(calls_on(k->destroy_fn, r1, m4), 1);
        cr_assert_eq(calls_on(k->destroy_fn, r2, m4), 1);
        cr_assert_eq(find_call(k->destroy_fn, r2, m4, &c), 0);
        cr_assert_eq(c.rc, CUDA_SUCCESS);
        if (k->destroy_needs_current)
            cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra, "%s ran without its owner current", k->destroy_fn);
        cr_assert_eq(sim()->is_live(k->sim_kind, r1), 0);
        cr_assert_eq(sim()->is_live(k->sim_kind, r2), 0);
    }
    struct cuctx_stats st2 = stats();
    cr_assert_eq(kind_count(k, &st2), kind_count(k, &st0));
    cr_assert_eq(st2.stale_skips, st0.stale_skips);

    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 2. Destroy after the context was destroyed: skipped, counted, SUCCESS. */
static void t_destroy_after_ctx_destroy(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0};
    uint64_t r = make(k, &h.id, a);
    struct cuctx_stats st0 = stats();
    CHECK_OK(cuctx_ctx_destroy(&a));
    if (sim())
        cr_assert_eq(sim()->is_live(k->sim_kind, r), 0, "the simulator should have freed the child with its context");

    size_t m = log_mark();
    unsigned long before = calls(k->destroy_fn);
    CUresult rc = k->destroy(&h.id);
    cr_assert_eq(rc, CUDA_SUCCESS, "stale destroy of %s: %s: %s", k->name, cuctx_result_name(rc),
                 cuctx_last_error_message());
    cr_assert_eq(h.id, 0, "the stale destroy did not reset the handle");
    cr_assert_eq(calls(k->destroy_fn), before, "%s reached the driver for a child of a destroyed context", k->destroy_fn);
    cr_assert_eq(calls_on(k->destroy_fn, r, m), 0);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips + 1, "stale skips: %llu -> %llu",
                 (unsigned long long)st0.stale_skips, (unsigned long long)st1.stale_skips);
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0) - 1, "the skipped %s is still counted live", k->name);
    cr_assert_eq(st1.failed_destroys, st0.failed_destroys);
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 3. Destroy after the context died and a new context took its address, and
 * a new object of the kind took the child's value: the stale destroy must
 * not free the new object. */
static void t_destroy_after_address_reuse(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle old = {0}, fresh = {0};
    uint64_t r_old = make(k, &old.id, a);
    CHECK_OK(cuctx_ctx_destroy(&a));

    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    uint64_t r_new = make(k, &fresh.id, b);
    if (sim()) {
        cr_assert_eq(rb, ra, "recycling: the new context should have the dead one's address");
        cr_assert_eq(r_new, r_old, "recycling: the new %s should have the dead one's value", k->name);
    } else if (rb != ra || r_new != r_old) {
        cr_log_info("real driver: context %s, %s %s", rb == ra ? "reused" : "not reused", k->name,
                    r_new == r_old ? "reused" : "not reused");
    }

    struct cuctx_stats st0 = stats();
    size_t m = log_mark();
    unsigned long before = calls(k->destroy_fn);
    CHECK_OK(k->destroy(&old.id));
    cr_assert_eq(old.id, 0);
    cr_assert_eq(calls(k->destroy_fn), before, "the stale %s destroy reached the driver", k->name);
    cr_assert_eq(calls_on(k->destroy_fn, r_old, m), 0);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips + 1);

    /* the new object is untouched and still works */
    if (sim())
        cr_assert_eq(sim()->is_live(k->sim_kind, r_new), 1, "the new %s was freed by a stale destroy", k->name);
    cr_assert_eq(k->raw(fresh.id), r_new);
    k->use(fresh.id, b);
    if (k == &K_mem) {
        /* the real driver's hazard: a stale cuMemFree frees the new owner's memory */
        CUCTX_SCOPED(b) { mem_roundtrip((CUdeviceptr)r_new, KIND_BYTES, 0xc3); }
    }

    size_t m2 = log_mark();
    CHECK_OK(k->destroy(&fresh.id));
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, r_new, m2), 1, "the new %s's own destroy must reach the driver", k->name);
    CHECK_OK(cuctx_ctx_destroy(&b));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 4. The same through the primary context: after the last release, the
 * children are stale although a re-retain gives the same address. */
static void t_primary_released(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx p = {0}, p2 = {0};
    CUcontext before_cur = current();
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CUcontext rp = cuctx_ctx_raw(p);
    cr_assert_not_null(rp);
    cr_assert_eq(current(), before_cur, "retaining the primary context changed the current context");

    size_t m0 = log_mark();
    any_handle old = {0};
    uint64_t r_old = make(k, &old.id, p);
    cr_assert_eq(current(), before_cur);
    struct cusim_call c;
    if (sim()) {
        cr_assert_eq(find_call(k->create_fn, r_old, m0, &c), 0);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)rp, "%s did not run in the primary context", k->create_fn);
    }
    CHECK_OK(cuctx_ctx_destroy(&p));     /* the last release */
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_PRIMARY), 0, "the primary context should be inactive after the last release");

    CHECK_OK(cuctx_ctx_primary(&p2, 0));
    CUcontext rp2 = cuctx_ctx_raw(p2);
    if (sim())
        cr_assert_eq(rp2, rp, "a re-retained primary context has the same address");
    else if (rp2 != rp)
        cr_log_info("real driver: the re-retained primary context moved (%p -> %p)", (void *)rp, (void *)rp2);

    any_handle fresh = {0};
    uint64_t r_new = make(k, &fresh.id, p2);
    if (sim())
        cr_assert_eq(r_new, r_old, "recycling: the new %s should have the old value", k->name);

    struct cuctx_stats st0 = stats();
    size_t m = log_mark();
    unsigned long dcalls = calls(k->destroy_fn);
    CHECK_OK(k->destroy(&old.id));
    cr_assert_eq(old.id, 0);
    cr_assert_eq(calls(k->destroy_fn), dcalls, "a child of the released primary reached %s", k->destroy_fn);
    cr_assert_eq(calls_on(k->destroy_fn, r_old, m), 0);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips + 1);
    if (sim())
        cr_assert_eq(sim()->is_live(k->sim_kind, r_new), 1);
    k->use(fresh.id, p2);

    size_t m2 = log_mark();
    CHECK_OK(k->destroy(&fresh.id));
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, r_new, m2), 1);
    CHECK_OK(cuctx_ctx_destroy(&p2));
    cr_assert_eq(current(), before_cur);
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 5a. Double destroy through a stale copy, and use after destroy. */
static void t_double_destroy(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0};
    uint64_t r = make(k, &h.id, a);
    any_handle copy = h, copy2 = h;
    CHECK_OK(k->destroy(&h.id));
    cr_assert_eq(h.id, 0);

    /* destroying the reset variable again is the {0} no-op */
    CHECK_OK(k->destroy(&h.id));

    struct cuctx_stats st0 = stats();
    size_t m = log_mark();
    unsigned long before = calls(k->destroy_fn);
    CUresult rc = k->destroy(&copy.id);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "destroy through a stale copy: %s", cuctx_result_name(rc));
    cr_assert_eq(copy.id, 0, "destroys leave the handle {0}, also when they fail");
    uint64_t stale_id = copy2.id;
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "stale"), NULL, "message: %s", cuctx_last_error_message());
    rc = (cuctx_destroy)(&copy2);  /* the untyped form: the test holds any kind */
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "cuctx_destroy through a stale copy: %s", cuctx_result_name(rc));
    cr_assert_eq(calls(k->destroy_fn), before, "a double destroy reached the driver");

    /* use after destroy */
    rc = k->try_use(stale_id);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "use after destroy: %s", cuctx_result_name(rc));
    cr_assert_eq(k->raw(stale_id), 0, "raw accessor of a destroyed %s", k->name);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    if (sim()) {
        cr_assert_eq(calls_on(k->destroy_fn, r, m), 0);
        if (k->use_fn)
            cr_assert_eq(calls_on(k->use_fn, r, m), 0);
    }
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips, "a double destroy is an error, not a stale skip");
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 5b. A handle of this kind passed as another kind: INVALID_HANDLE, the
 * object untouched. */
static void t_wrong_kind(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    any_handle h = {0};
    uint64_t r = make(k, &h.id, a);
    size_t m = log_mark();
    unsigned long ev_d = calls("cuEventDestroy"), st_d = calls("cuStreamDestroy"), own_d = calls(k->destroy_fn);

    if (k != &K_stream) {
        cuctx_stream as_stream = {h.id};
        cr_assert_eq(cuctx_stream_destroy(&as_stream), CUDA_ERROR_INVALID_HANDLE);
        cr_assert_eq(as_stream.id, 0, "destroys leave the handle {0}, also when they fail");
        cr_assert_neq(strstr(cuctx_last_error_message(), "not a"), NULL, "message: %s", cuctx_last_error_message());
        cr_assert_eq(cuctx_stream_synchronize((cuctx_stream){h.id}), CUDA_ERROR_INVALID_HANDLE);
    }
    if (k != &K_event) {
        cuctx_event as_event = {h.id};
        cr_assert_eq(cuctx_event_destroy(&as_event), CUDA_ERROR_INVALID_HANDLE);
        cr_assert_eq(as_event.id, 0);
        cr_assert_eq(cuctx_event_query((cuctx_event){h.id}), CUDA_ERROR_INVALID_HANDLE);
    }
    cuctx_ctx as_ctx = {h.id};
    cr_assert_eq(cuctx_ctx_destroy(&as_ctx), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(calls("cuEventDestroy"), ev_d);
    cr_assert_eq(calls("cuStreamDestroy"), st_d);
    cr_assert_eq(calls(k->destroy_fn), own_d);
    if (sim())
        cr_assert_eq(calls_on("cuCtxDestroy", 0, m), 0);

    /* the object survived all that */
    cr_assert_eq(k->raw(h.id), r);
    k->use(h.id, a);
    CHECK_OK(k->destroy(&h.id));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 6. CUCTX_AUTO, child declared after its context: the child's destroy
 * reaches the driver before the context's, with no stale skip. */
static void t_auto_children_first(const struct kind *k)
{
    NEED_DRIVER();
    struct cuctx_stats st0 = stats();
    uint64_t r = 0;
    CUcontext rc_ = NULL;
    size_t m = 0;
    {
        CUCTX_AUTO cuctx_ctx ctx = {0};
        rc_ = new_ctx(&ctx, 0, NULL, LEFT_CURRENT);
        any_handle h __attribute__((cleanup(cuctx_cleanup))) = {0};    /* any kind: CUCTX_AUTO takes handle types only */
        r = make(k, &h.id, ctx);
        m = log_mark();
    }
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips, "automatic cleanup in declaration order made a stale skip");
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0));
    cr_assert_eq(st1.contexts, st0.contexts);
    if (sim()) {
        const char *only[] = {k->destroy_fn, "cuCtxDestroy", NULL};
        char seq[256], want[256];
        snprintf(want, sizeof want, "%s,cuCtxDestroy", k->destroy_fn);
        cr_assert_str_eq(log_seq(m, only, seq, sizeof seq), want);
        cr_assert_eq(calls_on(k->destroy_fn, r, m), 1);
        cr_assert_eq(calls_on("cuCtxDestroy", (uint64_t)(uintptr_t)rc_, m), 1);
        cr_assert_eq(sim()->live(CUSIM_ALL) - sim()->live(CUSIM_GRAPH), 0, "something leaked");
    }
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 6b. The wrong order (rule 2): works, every child a counted stale skip. */
static void t_auto_wrong_order(const struct kind *k)
{
    NEED_DRIVER();
    struct cuctx_stats st0 = stats();
    size_t m = 0;
    {
        any_handle h __attribute__((cleanup(cuctx_cleanup))) = {0};    /* any kind: CUCTX_AUTO takes handle types only */
        CUCTX_AUTO cuctx_ctx ctx = {0};
        new_ctx(&ctx, 0, NULL, LEFT_CURRENT);
        make(k, &h.id, ctx);
        m = log_mark();
    }
    struct cuctx_stats st1 = stats();
    cr_assert_eq(st1.stale_skips, st0.stale_skips + 1);
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0));
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, 0, m), 0);
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 7. ctx {0}: the owner is the calling thread's current context (made by
 * cuctx), and it stays current. */
static void t_null_ctx_uses_current(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);    /* b current, a below it */
    size_t m = log_mark();
    any_handle h = {0};
    uint64_t r = make(k, &h.id, (cuctx_ctx){0});
    cr_assert_eq(current(), rb);
    if (sim()) {
        struct cusim_call c;
        cr_assert_eq(find_call(k->create_fn, r, m, &c), 0);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)rb);
    }
    /* tethered to b: b's death makes it stale, a is unaffected */
    CHECK_OK(cuctx_ctx_destroy(&b));
    struct cuctx_stats st0 = stats();
    unsigned long before = calls(k->destroy_fn);
    CHECK_OK(k->destroy(&h.id));
    cr_assert_eq(calls(k->destroy_fn), before);
    cr_assert_eq(stats().stale_skips, st0.stale_skips + 1, "a child made with {0} was not tethered to the current context");
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 7b. ctx {0} with a context made by the raw driver (not through cuctx): it
 * is the owner and stays current. cuctx cannot see the raw context's death,
 * so the children are destroyed while it lives. */
static void t_null_ctx_raw_driver_context(const struct kind *k)
{
    NEED_DRIVER();
    PFN_cuCtxCreate_v3020 raw_create = (PFN_cuCtxCreate_v3020)drv_sym("cuCtxCreate", 3020);
    PFN_cuCtxDestroy_v4000 raw_destroy = (PFN_cuCtxDestroy_v4000)drv_sym("cuCtxDestroy", 4000);
    CUcontext raw = NULL;
    CHECK_OK(raw_create(&raw, 0, 0));
    cr_assert_eq(current(), raw);
    struct cuctx_stats st0 = stats();
    size_t m = log_mark();
    any_handle h = {0};
    uint64_t r = make(k, &h.id, (cuctx_ctx){0});
    cr_assert_eq(current(), raw, "the create changed the current context");
    if (sim()) {
        struct cusim_call c;
        cr_assert_eq(find_call(k->create_fn, r, m, &c), 0);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)raw);
    }
    struct cuctx_stats st1 = stats();
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0) + 1);
    cr_assert_geq(st1.contexts, st0.contexts + 1, "the raw context got no registry entry");
    k->use(h.id, (cuctx_ctx){0});
    size_t m2 = log_mark();
    CHECK_OK(k->destroy(&h.id));
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, r, m2), 1);
    cr_assert_eq(current(), raw);
    CHECK_OK(raw_destroy(raw));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 8. No context given and none current: INVALID_CONTEXT, handle {0}. */
static void t_no_context(const struct kind *k)
{
    NEED_DRIVER();
    cr_assert_null(current());
    any_handle h = {0x1234};
    if (k == &K_graph_exec) {
        /* needs a graph: make it with a context current, then leave none current */
        cuctx_ctx a = {0};
        new_ctx(&a, 0, NULL, LEFT_CURRENT);
        test_graph(a);
        CHECK_OK(cuctx_pop_current());
        CUresult rc = k->create(&h.id, (cuctx_ctx){0});
        cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s", cuctx_result_name(rc));
        cr_assert_eq(h.id, 0);
        CHECK_OK(cuctx_ctx_destroy(&a));
    } else {
        CUresult rc = k->create(&h.id, (cuctx_ctx){0});
        cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s", cuctx_result_name(rc));
        cr_assert_eq(h.id, 0, "a failed create must leave the handle {0}");
    }
    cr_assert_eq(calls(k->create_fn), 0);
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 9. The driver's create fails: its code, handle {0}, a message naming the
 * function, nothing leaked, current context unchanged. */
static void t_create_fault(const struct kind *k)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    if (k == &K_graph_exec)
        test_graph(a);
    struct cuctx_stats st0 = stats();
    size_t live0 = sim()->live(k->sim_kind);
    sim()->fail_call(k->create_fn, 1, CUDA_ERROR_OUT_OF_MEMORY);
    any_handle h = {0x77};
    CUresult rc = k->create(&h.id, a);
    cr_assert_eq(rc, CUDA_ERROR_OUT_OF_MEMORY, "%s", cuctx_result_name(rc));
    cr_assert_eq(h.id, 0, "a failed create must leave the handle {0}");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_OUT_OF_MEMORY);
    const char *msg = cuctx_last_error_message();
    cr_assert_neq(strstr(msg, k->create_fn), NULL, "the message should name %s: %s", k->create_fn, msg);
    cr_assert_neq(strstr(msg, k->create_api), NULL, "the message should name %s: %s", k->create_api, msg);
    cr_assert_neq(strstr(msg, "CUDA_ERROR_OUT_OF_MEMORY"), NULL, "message: %s", msg);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0), "a failed create left a handle in the registry");
    cr_assert_eq(sim()->live(k->sim_kind), live0);
    cr_assert_eq(current(), rb, "a failed create changed the current context");

    /* and the next create works */
    any_handle ok = {0};
    make(k, &ok.id, a);
    CHECK_OK(k->destroy(&ok.id));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 10. Stats count live objects of the kind. */
static void t_stats_count(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    struct cuctx_stats st0 = stats();
    any_handle h[3] = {{0}, {0}, {0}};
    for (int i = 0; i < 3; i++)
        make(k, &h[i].id, a);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0) + 3);
    if (sim())
        cr_assert_eq(sim()->live(k->sim_kind), 3);
    CHECK_OK(k->destroy(&h[0].id));
    struct cuctx_stats st2 = stats();
    cr_assert_eq(kind_count(k, &st2), kind_count(k, &st0) + 2);
    CHECK_OK(cuctx_ctx_destroy(&a));
    CHECK_OK(k->destroy(&h[1].id));
    CHECK_OK(k->destroy(&h[2].id));
    struct cuctx_stats st3 = stats();
    cr_assert_eq(kind_count(k, &st3), kind_count(k, &st0));
    cr_assert_eq(st3.stale_skips, st0.stale_skips + 2);
    cr_assert_eq(st3.contexts, st0.contexts - 1);
    if (sim())
        cr_assert_eq(sim()->live(k->sim_kind), 0);
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* 11. Concurrency in cuctx_destroy / CUCTX_MOVE: a moved handle is owned by
 * the receiver; cleanup of the emptied variable is a no-op. */
static uint64_t moved_out(const struct kind *k, cuctx_ctx ctx)
{
    any_handle h __attribute__((cleanup(cuctx_cleanup))) = {0};    /* any kind: CUCTX_AUTO takes handle types only */
    make(k, &h.id, ctx);
    uint64_t id = h.id;     /* CUCTX_MOVE, by hand: it takes handle types only */
    h.id = 0;
    return id;
}

static void t_move_out_of_scope(const struct kind *k)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    struct cuctx_stats st0 = stats();
    any_handle h = {moved_out(k, a)};
    cr_assert_neq(h.id, 0);
    struct cuctx_stats st1 = stats();
    cr_assert_eq(kind_count(k, &st1), kind_count(k, &st0) + 1, "the moved %s was destroyed at scope exit", k->name);
    k->use(h.id, a);
    size_t m = log_mark();
    uint64_t r = k->raw(h.id);
    CHECK_OK((cuctx_destroy)(&h));     /* the untyped form: the test holds any kind */
    cr_assert_eq(h.id, 0);
    if (sim())
        cr_assert_eq(calls_on(k->destroy_fn, r, m), 1);
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    ASSERT_NO_MISUSE();
}

/* One Test per (kind, behaviour). */
#define KIND_TESTS(suite, K)                                                                        \
    Test(suite, create_use_destroy_runs_with_owner_current) { t_create_use_destroy(&K); }            \
    Test(suite, destroy_after_context_destroy_skips_driver) { t_destroy_after_ctx_destroy(&K); }     \
    Test(suite, destroy_after_address_reuse_spares_new_object) { t_destroy_after_address_reuse(&K); } \
    Test(suite, primary_released_children_are_skipped) { t_primary_released(&K); }                  \
    Test(suite, double_destroy_and_stale_copy_are_invalid_handle) { t_double_destroy(&K); }          \
    Test(suite, wrong_kind_handle_is_invalid_handle) { t_wrong_kind(&K); }                           \
    Test(suite, auto_after_context_destroys_children_first) { t_auto_children_first(&K); }           \
    Test(suite, auto_before_context_is_counted_stale_skip) { t_auto_wrong_order(&K); }               \
    Test(suite, null_ctx_takes_current_context_as_owner) { t_null_ctx_uses_current(&K); }            \
    Test(suite, null_ctx_takes_raw_driver_context_as_owner) { t_null_ctx_raw_driver_context(&K); }   \
    Test(suite, null_ctx_without_current_is_invalid_context) { t_no_context(&K); }                   \
    Test(suite, create_failure_returns_driver_error_and_leaks_nothing) { t_create_fault(&K); }       \
    Test(suite, stats_count_live_objects) { t_stats_count(&K); }                                     \
    Test(suite, move_hands_object_out_of_scope) { t_move_out_of_scope(&K); }

#define KIND_SUITE(name, ...) KIND_TESTS(name, K_##name)
TEST_CHILD_KINDS(KIND_SUITE)
#undef KIND_SUITE

/* ------------------------------------------------------------------------
 *  Kind-specific behaviours
 * ------------------------------------------------------------------------ */

Test(event, elapsed_ms_of_untimed_events_is_driver_error)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_event e0 = {0}, e1 = {0};
    size_t m = log_mark();
    CHECK_OK(cuctx_event_create(&e0, a, CU_EVENT_DISABLE_TIMING));
    CHECK_OK(cuctx_event_create(&e1, a, CU_EVENT_DISABLE_TIMING));
    if (sim()) {
        /* the flags reach the driver as given, not only the handle's own record of them */
        cr_assert_eq(nth_call("cuEventCreate", m, 0).flags, CU_EVENT_DISABLE_TIMING);
        cr_assert_eq(nth_call("cuEventCreate", m, 1).flags, CU_EVENT_DISABLE_TIMING);
    }
    CHECK_OK(cuctx_event_record(e0, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_record(e1, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_synchronize(e1));
    float ms = -7.0f;
    CUresult rc = cuctx_event_elapsed_ms(e0, e1, &ms);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s", cuctx_result_name(rc));
    cr_assert_eq(ms, -7.0f, "*ms was written on failure");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuEventElapsedTime"), NULL, "%s", cuctx_last_error_message());
    CHECK_OK(cuctx_event_destroy(&e0));
    CHECK_OK(cuctx_event_destroy(&e1));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(event, elapsed_ms_of_unrecorded_events_is_driver_error)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_event e0 = {0}, e1 = {0};
    CHECK_OK(cuctx_event_create(&e0, a, 0));
    CHECK_OK(cuctx_event_create(&e1, a, 0));
    float ms = -7.0f;
    CUresult rc = cuctx_event_elapsed_ms(e0, e1, &ms);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "neither recorded: %s", cuctx_result_name(rc));
    cr_assert_eq(ms, -7.0f);
    CHECK_OK(cuctx_event_record(e0, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_synchronize(e0));
    rc = cuctx_event_elapsed_ms(e0, e1, &ms);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "end not recorded: %s", cuctx_result_name(rc));
    cr_assert_eq(ms, -7.0f);
    /* recorded both: a time */
    CHECK_OK(cuctx_event_record(e1, (cuctx_stream){0}));
    CHECK_OK(cuctx_event_synchronize(e1));
    CHECK_OK(cuctx_event_elapsed_ms(e0, e1, &ms));
    cr_assert_geq(ms, 0.0f);
    cr_assert_eq(cuctx_event_elapsed_ms(e0, e1, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_event_destroy(&e0));
    CHECK_OK(cuctx_event_destroy(&e1));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(event, record_on_stream_of_other_context_is_invalid_context)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_stream_create(&s, b, 0, 0));
    unsigned long rec = calls("cuEventRecord");
    CUresult rc = cuctx_event_record(ev, s);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_CONTEXT, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls("cuEventRecord"), rec, "the mismatched record reached the driver");
    cr_assert_neq(strstr(cuctx_last_error_message(), "context"), NULL, "%s", cuctx_last_error_message());
    /* a stream of its own context works */
    cuctx_stream s_a = {0};
    CHECK_OK(cuctx_stream_create(&s_a, a, 0, 0));
    size_t m = log_mark();
    CHECK_OK(cuctx_event_record(ev, s_a));
    if (sim()) {
        cr_assert_eq(calls("cuEventRecord"), rec + 1);
        cr_assert_eq(last_call("cuEventRecord", m).handle2, (uint64_t)(uintptr_t)cuctx_stream_raw(s_a),
                     "recorded on another stream than the one asked for");
    }
    CHECK_OK(cuctx_stream_destroy(&s_a));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(event, record_on_null_stream_uses_owner_default_stream)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);     /* b is current, the event is a's */
    cuctx_event ev = {0};
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    uint64_t r = (uint64_t)(uintptr_t)cuctx_event_raw(ev);
    size_t m = log_mark();
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    cr_assert_eq(current(), rb, "recording changed the current context");
    if (sim()) {
        struct cusim_call c;
        cr_assert_eq(find_call("cuEventRecord", r, m, &c), 0);
        cr_assert_eq(c.rc, CUDA_SUCCESS);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra, "recorded on the default stream of %#llx, not the owner's",
                     (unsigned long long)c.ctx);
        cr_assert_eq(c.handle2, 0, "recorded on stream %#llx, not the NULL stream", (unsigned long long)c.handle2);
    }
    CHECK_OK(cuctx_event_synchronize(ev));
    CHECK_OK(cuctx_event_query(ev));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(stream, wait_event_of_other_context_and_device)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cuctx_stream s = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    uint64_t rs = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    CHECK_OK(cuctx_event_create(&ev, b, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    unsigned long w = calls("cuStreamWaitEvent");
    size_t m = log_mark();
    CHECK_OK(cuctx_stream_wait_event(s, ev));
    if (sim()) {
        cr_assert_eq(calls("cuStreamWaitEvent"), w + 1);
        struct cusim_call c = last_call("cuStreamWaitEvent", m);
        cr_assert_eq(c.handle, rs);
        cr_assert_eq(c.handle2, (uint64_t)(uintptr_t)cuctx_event_raw(ev));
        cr_assert_eq(c.flags, 0);
    }
    CHECK_OK(cuctx_stream_synchronize(s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&b));

    if (device_count() >= 2) {
        cuctx_ctx d1 = {0};
        m = log_mark();
        new_ctx(&d1, 1, NULL, LEFT_CURRENT);
        cr_assert_eq(cuctx_ctx_device(d1), 1);
        if (sim())    /* not only recorded as device 1: made there */
            cr_assert_eq(last_call("cuCtxCreate", m).arg, 1);
        cuctx_event ev1 = {0};
        CHECK_OK(cuctx_event_create(&ev1, d1, 0));
        CHECK_OK(cuctx_event_record(ev1, (cuctx_stream){0}));
        m = log_mark();
        CHECK_OK(cuctx_stream_wait_event(s, ev1));
        if (sim()) {
            cr_assert_eq(calls("cuStreamWaitEvent"), w + 2);
            struct cusim_call c = last_call("cuStreamWaitEvent", m);
            cr_assert_eq(c.handle, rs);
            cr_assert_eq(c.handle2, (uint64_t)(uintptr_t)cuctx_event_raw(ev1));
        }
        CHECK_OK(cuctx_event_destroy(&ev1));
        CHECK_OK(cuctx_ctx_destroy(&d1));
    } else {
        cr_log_info("one device: the other-device wait was not tried");
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* The message of the calling thread's last failure names fn and says its
 * context is gone. */
static void assert_told_destroyed(const char *fn)
{
    const char *msg = cuctx_last_error_message();
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s", cuctx_result_name(cuctx_last_error()));
    cr_assert_neq(strstr(msg, fn), NULL, "the failure is not %s's: %s", fn, msg);
    cr_assert_neq(strstr(msg, "the context has been destroyed"), NULL, "%s", msg);
}

/* Bug caught: a call on two handles whose second one's context has ended
 * refused without a word - the failure of that hold not recorded as the
 * thread's last error, which then still tells of an earlier one - or the
 * call reaching the driver with a dead context's object. */
Test(stream, a_second_handle_of_a_destroyed_context_is_refused_and_said_so)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    new_ctx(&a, 0, NULL, POPPED);
    new_ctx(&b, 0, NULL, LEFT_CURRENT);
    cuctx_event ev_a = {0}, ev_b = {0};
    cuctx_stream s_a = {0}, s_b = {0};
    CHECK_OK(cuctx_event_create(&ev_a, a, 0));
    CHECK_OK(cuctx_stream_create(&s_a, a, 0, 0));
    CHECK_OK(cuctx_event_create(&ev_b, b, 0));
    CHECK_OK(cuctx_stream_create(&s_b, b, 0, 0));
    CHECK_OK(cuctx_ctx_destroy(&a));
    unsigned long waits = calls("cuStreamWaitEvent"), records = calls("cuEventRecord");
    float ms;

    /* each time another failure first, so that the message after is the call's own */
    cr_assert_eq(cuctx_event_elapsed_ms(ev_b, ev_b, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_stream_wait_event(s_b, ev_a), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_told_destroyed("cuctx_stream_wait_event");
    cr_assert_eq(cuctx_event_elapsed_ms(ev_b, ev_b, NULL), CUDA_ERROR_INVALID_VALUE);
    CUresult rc = cuctx_stream_wait_event(CUCTX_STREAM_LEGACY, ev_a);     /* a default stream by name */
    cr_assert_eq(rc, CUDA_ERROR_CONTEXT_IS_DESTROYED, "%s: %s", cuctx_result_name(rc), cuctx_last_error_message());
    assert_told_destroyed("cuctx_stream_wait_event");
    cr_assert_eq(cuctx_event_elapsed_ms(ev_b, ev_b, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_event_record(ev_b, s_a), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_told_destroyed("cuctx_event_record");
    cr_assert_eq(cuctx_event_elapsed_ms(ev_b, ev_b, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_event_elapsed_ms(ev_b, ev_a, &ms), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_told_destroyed("cuctx_event_elapsed_ms");
    if (sim()) {
        cr_assert_eq(calls("cuStreamWaitEvent"), waits, "a wait on a dead context's event reached the driver");
        cr_assert_eq(calls("cuEventRecord"), records, "a record on a dead context's stream reached the driver");
    }
    CHECK_OK(cuctx_event_destroy(&ev_a));
    CHECK_OK(cuctx_stream_destroy(&s_a));
    CHECK_OK(cuctx_event_destroy(&ev_b));
    CHECK_OK(cuctx_stream_destroy(&s_b));
    CHECK_OK(cuctx_ctx_destroy(&b));
    ASSERT_NO_MISUSE();
}

Test(stream, flags_and_priority_reach_driver)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_stream s = {0};
    size_t m = log_mark();
    CHECK_OK(cuctx_stream_create(&s, a, CU_STREAM_NON_BLOCKING, -1));
    cr_assert_not_null(cuctx_stream_raw(s));
    if (sim()) {
        struct cusim_call c = last_call("cuStreamCreateWithPriority", m);
        cr_assert_eq(c.handle, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
        cr_assert_eq(c.flags, CU_STREAM_NON_BLOCKING);
        cr_assert_eq(c.arg, -1, "priority %lld reached the driver, not -1", c.arg);
    }
    cuctx_stream bad = {0x55};
    CUresult rc = cuctx_stream_create(&bad, a, 0x80, 0);
    cr_assert_neq(rc, CUDA_SUCCESS, "unknown stream flags accepted");
    cr_assert_eq(bad.id, 0);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(module, function_lookup)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_module mod = {0};
    CHECK_OK(cuctx_module_load(&mod, a, test_data_path("vadd.ptx")));
    CUfunction f = NULL;
    CHECK_OK(cuctx_module_function(mod, "vadd", &f));
    cr_assert_not_null(f);
    CUfunction g = (CUfunction)(uintptr_t)1;
    CUresult rc = cuctx_module_function(mod, "nope", &g);
    cr_assert_eq(rc, CUDA_ERROR_NOT_FOUND, "%s", cuctx_result_name(rc));
    cr_assert_null(g);
    cr_assert_neq(strstr(cuctx_last_error_message(), "nope"), NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_module_function(mod, NULL, &g), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* Bug caught: the check of the arguments letting one NULL through when the
 * other is set (a NULL name, or a NULL place for the function, handed to
 * cuModuleGetFunction). */
Test(module, function_with_a_null_name_or_out_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_module mod = {0};
    CHECK_OK(cuctx_module_load(&mod, a, test_data_path("vadd.ptx")));
    unsigned long gets = calls("cuModuleGetFunction");
    CUfunction g = (CUfunction)(uintptr_t)1;
    CUresult rc = cuctx_module_function(mod, NULL, &g);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s", cuctx_result_name(rc));
    cr_assert_null(g, "a refused lookup left the function set");
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuctx_module_function: name or out is NULL"), NULL, "%s",
                  cuctx_last_error_message());
    if (sim())
        cr_assert_eq(calls("cuModuleGetFunction"), gets, "a NULL name reached the driver");
    /* another failure's message in between, so that the next is its own */
    cr_assert_eq(cuctx_module_function(mod, "nope", &g), CUDA_ERROR_NOT_FOUND);
    gets = calls("cuModuleGetFunction");
    rc = cuctx_module_function(mod, "vadd", NULL);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_VALUE, "%s", cuctx_result_name(rc));
    cr_assert_neq(strstr(cuctx_last_error_message(), "cuctx_module_function: name or out is NULL"), NULL, "%s",
                  cuctx_last_error_message());
    if (sim())
        cr_assert_eq(calls("cuModuleGetFunction"), gets, "a NULL out reached the driver");
    CHECK_OK(cuctx_module_destroy(&mod));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(module, load_data_from_image_and_missing_file)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    FILE *f = fopen(test_data_path("vadd.ptx"), "rb");
    cr_assert_not_null(f, "cannot open %s", test_data_path("vadd.ptx"));
    static char image[1 << 16];
    size_t n = fread(image, 1, sizeof image - 1, f);
    fclose(f);
    cr_assert_gt(n, 0);
    image[n] = 0;
    cr_assert_neq(strstr(image, ".entry vadd("), NULL);

    cuctx_module mod = {0};
    CHECK_OK(cuctx_module_load_data(&mod, a, image));
    CUfunction fn = NULL;
    CHECK_OK(cuctx_module_function(mod, "vadd", &fn));
    CHECK_OK(cuctx_module_destroy(&mod));

    cuctx_module missing = {0x99};
    CUresult rc = cuctx_module_load(&missing, a, test_data_path("no-such-module.ptx"));
    cr_assert_eq(rc, CUDA_ERROR_FILE_NOT_FOUND, "%s", cuctx_result_name(rc));
    cr_assert_eq(missing.id, 0);
    cr_assert_neq(strstr(cuctx_last_error_message(), "no-such-module.ptx"), NULL, "%s", cuctx_last_error_message());
    cr_assert_eq(cuctx_module_load(&missing, a, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_module_load_data(&missing, a, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(mem, size_pointer_and_contents)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_mem m = {0};
    CHECK_OK(cuctx_mem_alloc(&m, a, 12345));
    cr_assert_eq(cuctx_mem_size(m), 12345);
    CUdeviceptr p = cuctx_mem_ptr(m);
    cr_assert_neq(p, 0);
    mem_roundtrip(p, 12345, 0x3c);
    CHECK_OK(cuctx_mem_destroy(&m));
    cr_assert_eq(cuctx_mem_size(m), 0);
    cr_assert_eq(cuctx_mem_ptr(m), 0);
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(host_mem, size_and_writable_pointer)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_host_mem h = {0};
    size_t mark = log_mark();
    CHECK_OK(cuctx_host_mem_alloc(&h, a, 3000, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    cr_assert_eq(cuctx_host_mem_size(h), 3000);
    if (sim()) {
        struct cusim_call c = last_call("cuMemHostAlloc", mark);
        cr_assert_eq(c.flags, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP, "flags %#llx", c.flags);
        cr_assert_eq(c.arg, 3000);
    }
    unsigned char *p = cuctx_host_mem_ptr(h);
    cr_assert_not_null(p);
    for (size_t i = 0; i < 3000; i++)
        p[i] = (unsigned char)i;
    for (size_t i = 0; i < 3000; i++)
        cr_assert_eq(p[i], (unsigned char)i);
    /* a copy from device memory lands in it */
    cuctx_mem m = {0};
    CHECK_OK(cuctx_mem_alloc(&m, a, 3000));
    PFN_cuMemsetD8_v3020 memset_d8 = (PFN_cuMemsetD8_v3020)drv_sym("cuMemsetD8", 3020);
    PFN_cuMemcpyDtoH_v3020 dtoh = (PFN_cuMemcpyDtoH_v3020)drv_sym("cuMemcpyDtoH", 3020);
    CHECK_OK(memset_d8(cuctx_mem_ptr(m), 0x11, 3000));
    CHECK_OK(dtoh(p, cuctx_mem_ptr(m), 3000));
    cr_assert_eq(p[0], 0x11);
    cr_assert_eq(p[2999], 0x11);
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_host_mem_destroy(&h));
    cr_assert_null(cuctx_host_mem_ptr(h));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

Test(graph_exec, launch_on_stream_and_default_stream)
{
    NEED_DRIVER();
    cuctx_ctx a = {0}, b = {0};
    CUcontext ra = new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CUgraph g = test_graph(a);
    cuctx_graph_exec ge = {0};
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, a, g, 0));
    uint64_t r = (uint64_t)(uintptr_t)cuctx_graph_exec_raw(ge);
    cr_assert_neq(r, 0);
    cuctx_stream s = {0};
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    unsigned long l = calls("cuGraphLaunch");
    size_t m0 = log_mark();
    CHECK_OK(cuctx_graph_exec_launch(ge, s));
    if (sim()) {
        struct cusim_call c = last_call("cuGraphLaunch", m0);
        cr_assert_eq(c.handle, r);
        cr_assert_eq(c.handle2, (uint64_t)(uintptr_t)cuctx_stream_raw(s), "launched on %#llx, not on the stream",
                     (unsigned long long)c.handle2);
    }
    CHECK_OK(cuctx_stream_synchronize(s));

    /* {0}: the owner's default stream, also with another context current */
    CUcontext rb = new_ctx(&b, 0, NULL, LEFT_CURRENT);
    size_t m = log_mark();
    CHECK_OK(cuctx_graph_exec_launch(ge, (cuctx_stream){0}));
    cr_assert_eq(current(), rb);
    if (sim()) {
        cr_assert_eq(calls("cuGraphLaunch"), l + 2);
        struct cusim_call c;
        cr_assert_eq(find_call("cuGraphLaunch", r, m, &c), 0);
        cr_assert_eq(c.ctx, (uint64_t)(uintptr_t)ra);
        cr_assert_eq(c.handle2, 0, "{0} launched on %#llx, not the NULL stream", (unsigned long long)c.handle2);
    }
    CHECK_OK(cuctx_ctx_synchronize(a));

    /* a stream of another context is refused before the driver sees it */
    cuctx_stream sb = {0};
    CHECK_OK(cuctx_stream_create(&sb, b, 0, 0));
    unsigned long before = calls("cuGraphLaunch");
    cr_assert_eq(cuctx_graph_exec_launch(ge, sb), CUDA_ERROR_INVALID_CONTEXT);
    cr_assert_eq(calls("cuGraphLaunch"), before);
    CHECK_OK(cuctx_stream_destroy(&sb));

    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    cr_assert_eq(cuctx_graph_exec_instantiate(&ge, a, NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuctx_ctx_destroy(&b));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();     /* the CUgraph outlives its execs */
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* Bug caught: a graph exec's or a stream's destroy not waiting for a
 * launch of the exec on the stream that is inside its driver call, which
 * holds both (and their context) through the thread's hazard slots
 * (cuctx__child_hold_fast2, tether.h): the destroy reaches the driver
 * first and the launch names a dead object. The launch is slowed (a sleep
 * before the simulator takes it) and the destroy starts once it sleeps
 * there. first: the launch is the pair's first, which pins both and sets
 * their held bits; else they were launched before (the fast path). */
struct launch_call { cuctx_graph_exec ge; cuctx_stream s; CUresult rc; };
static void *launch_call(void *arg)
{
    struct launch_call *h = arg;
    /* (a first call that holds a context gives the thread its hazard slots) */
    if ((h->rc = cuctx_stream_synchronize(h->s)) == CUDA_SUCCESS)
        h->rc = cuctx_graph_exec_launch(h->ge, h->s);
    return NULL;
}
static long log_index(const char *fn, uint64_t h, size_t from)
{
    struct cusim_call c;
    for (size_t i = from; sim()->log_get(i, &c) == 0; i++)
        if (strcmp(c.fn, fn) == 0 && c.handle == h)
            return (long)i;
    return -1;
}
static void destroy_beside_launch(int exec, int first)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, LEFT_CURRENT);
    cuctx_graph_exec ge = {0};
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, c, test_graph(c), 0));
    cuctx_stream s = {0};
    CHECK_OK(cuctx_stream_create(&s, c, 0, 0));
    uint64_t rge = (uint64_t)(uintptr_t)cuctx_graph_exec_raw(ge), rs = (uint64_t)(uintptr_t)cuctx_stream_raw(s);
    if (!first) {
        CHECK_OK(cuctx_graph_exec_launch(ge, s));
        CHECK_OK(cuctx_stream_synchronize(s));
    }
    struct launch_call h = {ge, s, CUDA_ERROR_UNKNOWN};
    size_t mark = log_mark();
    pthread_t t;
    sim()->set_delay("cuGraphLaunch", 100000);
    cr_assert_eq(pthread_create(&t, NULL, launch_call, &h), 0);
    while (sim()->sleeping() == 0)      /* the launch is in the driver, both held */
        usleep(1000);
    if (exec)
        CHECK_OK(cuctx_graph_exec_destroy(&ge));
    else
        CHECK_OK(cuctx_stream_destroy(&s));
    pthread_join(t, NULL);
    sim()->set_delay("cuGraphLaunch", 0);
    ASSERT_NO_MISUSE();
    cr_assert_eq(h.rc, CUDA_SUCCESS, "the launch beside the %s's destroy: %s", exec ? "graph exec" : "stream",
                 cuctx_result_name(h.rc));
    long launch = log_index("cuGraphLaunch", rge, mark);
    long destroy = exec ? log_index("cuGraphExecDestroy", rge, mark) : log_index("cuStreamDestroy", rs, mark);
    cr_assert(launch >= 0 && destroy > launch, "the launch (log %ld) did not come before the %s's destroy (log %ld)",
              launch, exec ? "graph exec" : "stream", destroy);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_ctx_destroy(&c));
    graph_fini();
    ASSERT_NO_MISUSE();
}
Test(graph_exec, a_destroy_waits_for_the_first_launch_of_it) { destroy_beside_launch(1, 1); }
Test(graph_exec, a_destroy_waits_for_a_launch_of_it) { destroy_beside_launch(1, 0); }
Test(graph_exec, a_stream_destroy_waits_for_the_first_launch_on_it) { destroy_beside_launch(0, 1); }
Test(graph_exec, a_stream_destroy_waits_for_a_launch_on_it) { destroy_beside_launch(0, 0); }

Test(children, stats_count_every_kind_at_once)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    struct cuctx_stats st0 = stats();
#define KIND_PTR(name, ...) &K_##name,
    const struct kind *all[] = {TEST_CHILD_KINDS(KIND_PTR)};
#undef KIND_PTR
    enum { N = sizeof all / sizeof all[0] };
    any_handle h[N][2];
    memset(h, 0, sizeof h);
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i % 2; j++)
            make(all[i], &h[i][j].id, a);
    struct cuctx_stats st1 = stats();
    for (int i = 0; i < N; i++)
        cr_assert_eq(kind_count(all[i], &st1), kind_count(all[i], &st0) + 1 + (size_t)(i % 2), "%s", all[i]->name);
    cr_assert_eq(st1.contexts, st0.contexts);
    cr_assert_eq(st1.ctx_handles, st0.ctx_handles);
    /* generic destroy of each */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 2; j++)
            CHECK_OK((cuctx_destroy)(&h[i][j]));  /* untyped: any kind */
    struct cuctx_stats st2 = stats();
    for (int i = 0; i < N; i++)
        cr_assert_eq(kind_count(all[i], &st2), kind_count(all[i], &st0), "%s", all[i]->name);
    cr_assert_eq(st2.stale_skips, st0.stale_skips);
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    if (sim())
        cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

Test(children, null_handle_destroy_is_noop_and_null_pointer_is_invalid_value)
{
    NEED_DRIVER();
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    cuctx_mem m = {0};
    unsigned long n = sim() ? sim()->log_count() : 0;
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_mem_destroy(&m));
    CHECK_OK(cuctx_destroy(&ev));
    if (sim())
        cr_assert_eq(sim()->log_count(), n, "a {0} destroy called the driver");
    cr_assert_eq(cuctx_event_destroy(NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_event_create(NULL, (cuctx_ctx){0}, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq((cuctx_destroy)(NULL), CUDA_ERROR_INVALID_VALUE);
    ASSERT_NO_MISUSE();
}

Test(children, create_with_stale_context_handle_fails)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    cuctx_ctx stale = a;
    CHECK_OK(cuctx_ctx_destroy(&a));
    unsigned long before = calls("cuEventCreate");
    cuctx_event ev = {0x42};
    CUresult rc = cuctx_event_create(&ev, stale, 0);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s", cuctx_result_name(rc));
    cr_assert_eq(ev.id, 0);
    cr_assert_eq(calls("cuEventCreate"), before);
    ASSERT_NO_MISUSE();
}

/* A handle whose slot index lies beyond every segment of the table (a
 * forged or corrupted value, not one cuctx ever gave out) names nothing:
 * refused as invalid, the driver never asked. Kind in the top 6 bits,
 * index in the next 26: index 2^26 - 1 is in no segment a small table has. */
Test(children, a_handle_beyond_the_table_is_refused_before_the_driver)
{
    NEED_DRIVER();
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    const uint64_t far_index = ((uint64_t)1 << 26) - 1;
    cuctx_ctx forged_ctx = {((uint64_t)1 << 58) | far_index << 32 | 1};     /* kind 1: context */
    cuctx_event forged_ev = {((uint64_t)2 << 58) | far_index << 32 | 1};    /* kind 2: event */
    unsigned long creates = calls("cuEventCreate"), destroys = calls("cuEventDestroy");
    cuctx_event ev = {0x42};
    CUresult rc = cuctx_event_create(&ev, forged_ctx, 0);
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s", cuctx_result_name(rc));
    cr_assert_eq(ev.id, 0);
    cr_assert_eq(cuctx_event_query(forged_ev), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(cuctx_event_destroy(&forged_ev), CUDA_ERROR_INVALID_HANDLE);
    cr_assert_eq(forged_ev.id, 0, "the variable is reset even so");
    cr_assert_eq(calls("cuEventCreate"), creates);
    cr_assert_eq(calls("cuEventDestroy"), destroys);
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* A failure reported in the middle of a child call (here the pop that
 * should put the previous context back after recording on the event's
 * default stream) reaches the error handler before the call returns, not
 * at some later call of the thread's. */
Test(event, a_report_made_inside_a_call_reaches_the_handler_before_it_returns)
{
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    struct handler_count hc;
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, "A", POPPED);
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    count_handler_install(&hc);
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    cuctx_event_record(ev, (cuctx_stream){0});
    cr_assert_eq(hc.calls, 1, "the handler was called %d times during the call", hc.calls);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN);
    CHECK_OK(cuctx_pop_current());     /* the level the failed pop left */
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- survivors of lib/stream.c (s1) ---- */

/* {0}, the driver's NULL stream, is accepted by the calls that run in an
 * object's context (cuctx.h, "The default streams by name"), not by
 * cuctx_stream_synchronize: there it is no handle, refused before the
 * driver, with a context current. Mutant killed: lib/stream.c:167 `const`
 * (`cuctx__stream_take(s, 1, ...)`: {0} taken as the current context's
 * NULL stream and synchronized). */
Test(stream, synchronize_of_the_null_handle_is_refused)
{
    cuctx_ctx a = {0};
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    unsigned long syncs = calls("cuStreamSynchronize");
    CUresult rc = cuctx_stream_synchronize((cuctx_stream){0});
    cr_assert_eq(rc, CUDA_ERROR_INVALID_HANDLE, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls("cuStreamSynchronize"), syncs, "the NULL stream was synchronized");
    CHECK_OK(cuctx_stream_synchronize(CUCTX_STREAM_LEGACY));   /* the named default stream is */
    cr_assert_eq(calls("cuStreamSynchronize"), syncs + 1);
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* A default stream by name is the calling thread's current context's:
 * with no context current, the wait on it is refused and the driver never
 * asked to wait. Mutant killed: lib/stream.c:184 `ret` (the failed take
 * answered CUDA_SUCCESS). */
Test(stream, a_wait_on_a_default_stream_with_no_context_current_is_refused)
{
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, NULL, POPPED);
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    cr_assert_null(current());
    unsigned long waits = calls("cuStreamWaitEvent");
    CUresult rc = cuctx_stream_wait_event(CUCTX_STREAM_LEGACY, ev);
    cr_assert_neq(rc, CUDA_SUCCESS, "a wait with no context current succeeded");
    cr_assert_eq(cuctx_last_error(), rc);
    rc = cuctx_stream_wait_event(CUCTX_STREAM_PER_THREAD, ev);
    cr_assert_neq(rc, CUDA_SUCCESS, "a wait with no context current succeeded");
    cr_assert_eq(calls("cuStreamWaitEvent"), waits);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* A synchronize of a default stream by name as the process's first call
 * to cuctx (Criterion runs each test in a process of its own) starts cuctx
 * first: with no context current the answer is the driver's, not a crash
 * in a driver table not yet filled. Mutant killed: lib/stream.c:159
 * `call` (CUCTX_INIT_OR_RETURN of cuctx__stream_take_current removed). */
Test(stream, a_default_stream_synchronize_as_the_first_call_starts_cuctx)
{
    CUresult rc = cuctx_stream_synchronize(CUCTX_STREAM_LEGACY);
    NEED_DRIVER();      /* (after: it would start cuctx itself) */
    NEED_SIM();
    cr_assert_neq(rc, CUDA_SUCCESS, "a synchronize with no context current succeeded");
    cr_assert_eq(calls("cuInit"), 1);
    cr_assert_eq(calls("cuStreamSynchronize"), 0);
    cuctx_ctx a = {0};
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CHECK_OK(cuctx_stream_synchronize(CUCTX_STREAM_LEGACY));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- mutation survivors of lib/graph_exec.c (h6) ---- */

/* A launch on a stream of the exec's context, both held once already (the
 * fast path of cuctx_graph_exec_launch), whose cuGraphLaunch fails gives
 * the driver's error and records it; one that succeeds there leaves the
 * last error alone. Mutants
 * killed: lib/graph_exec.c:148 `ror` (the failure answered as a success,
 * the success recorded as a failure) and lib/graph_exec.c:149 `ret` (the
 * failure answered as a success). */
Test(graph_exec, a_failed_launch_on_the_fast_path_gives_the_drivers_error_and_says_so)
{
    cuctx_ctx a = {0};
    cuctx_graph_exec ge = {0}, none = {0};
    cuctx_stream s = {0};
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, NULL, LEFT_CURRENT);
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, a, test_graph(a), 0));
    CHECK_OK(cuctx_stream_create(&s, a, 0, 0));
    CHECK_OK(cuctx_graph_exec_launch(ge, s));      /* marks both held: the next launches take the fast path */
    cr_assert_eq(cuctx_graph_exec_instantiate(&none, a, NULL, 0), CUDA_ERROR_INVALID_VALUE);  /* a last error to keep */
    unsigned long launches = calls("cuGraphLaunch");
    CHECK_OK(cuctx_graph_exec_launch(ge, s));
    cr_assert_eq(calls("cuGraphLaunch"), launches + 1);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE, "a launch that succeeded recorded %s: %s",
                 cuctx_result_name(cuctx_last_error()), cuctx_last_error_message());
    size_t mark = log_mark();
    sim()->fail_call("cuGraphLaunch", 1, CUDA_ERROR_UNKNOWN);
    CUresult rc = cuctx_graph_exec_launch(ge, s);
    cr_assert_eq(rc, CUDA_ERROR_UNKNOWN, "%s", cuctx_result_name(rc));
    struct cusim_call c = last_call("cuGraphLaunch", mark);
    cr_assert_eq(c.rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(c.handle, (uint64_t)(uintptr_t)cuctx_graph_exec_raw(ge));
    cr_assert_eq(c.handle2, (uint64_t)(uintptr_t)cuctx_stream_raw(s));
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cuctx_graph_exec_launch: cuGraphLaunch failed"), "%s",
                       cuctx_last_error_message());
    CHECK_OK(cuctx_graph_exec_launch(ge, s));      /* the exec and the stream still work */
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* A launch on a default stream by name ({0}) whose exec's context cannot
 * be made current gives that error, with its own message, and never calls cuGraphLaunch: it is not reported a second time as a failed
 * launch. Mutant killed: lib/graph_exec.c:114 `const` (`switched = 1`: the
 * switch's failure then also recorded as "cuGraphLaunch failed"). */
Test(graph_exec, a_default_stream_launch_whose_context_cannot_be_made_current_says_only_that)
{
    cuctx_ctx a = {0};
    cuctx_graph_exec ge = {0};
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, NULL, POPPED);
    CHECK_OK(cuctx_graph_exec_instantiate(&ge, a, test_graph(a), 0));
    cr_assert_null(current(), "no context current: the launch must push the exec's");
    unsigned long launches = calls("cuGraphLaunch");
    sim()->fail_call("cuCtxPushCurrent", 1, CUDA_ERROR_UNKNOWN);
    CUresult rc = cuctx_graph_exec_launch(ge, (cuctx_stream){0});
    cr_assert_eq(rc, CUDA_ERROR_UNKNOWN, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls("cuGraphLaunch"), launches, "launched without its context current");
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_UNKNOWN);
    cr_assert_not_null(strstr(cuctx_last_error_message(), "cannot make context"), "%s", cuctx_last_error_message());
    cr_assert_null(strstr(cuctx_last_error_message(), "cuGraphLaunch failed"), "%s", cuctx_last_error_message());
    cr_assert_null(current(), "a context left current");
    CHECK_OK(cuctx_graph_exec_launch(ge, (cuctx_stream){0}));
    cr_assert_eq(calls("cuGraphLaunch"), launches + 1);
    CHECK_OK(cuctx_graph_exec_destroy(&ge));
    CHECK_OK(cuctx_ctx_destroy(&a));
    graph_fini();
    cr_assert_eq(sim()->live(CUSIM_ALL), 0);
    ASSERT_NO_MISUSE();
}

/* ---- mutation survivors of lib/event.c (h8) ---- */

/* A query or synchronize that the driver answers with success, and a query
 * it answers "not ready" (no failure: the work is still running), report
 * nothing: the error handler is not called and the thread's last error
 * stays as it was. Mutant killed: lib/event.c:72 `lcr`
 * (`rc != CUDA_SUCCESS || rc != CUDA_ERROR_NOT_READY`: every answer
 * reported as a failure). */
Test(event, a_query_answered_done_or_not_ready_reports_nothing)
{
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    struct handler_count hc;
    NEED_DRIVER();
    NEED_SIM();
    new_ctx(&a, 0, "A", LEFT_CURRENT);
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_event_record(ev, (cuctx_stream){0}));
    cr_assert_eq(cuctx_last_error(), CUDA_SUCCESS);
    count_handler_install(&hc);
    unsigned long queries = calls("cuEventQuery"), syncs = calls("cuEventSynchronize");
    CHECK_OK(cuctx_event_synchronize(ev));
    CHECK_OK(cuctx_event_query(ev));
    sim()->fail_call("cuEventQuery", 1, CUDA_ERROR_NOT_READY);
    CUresult rc = cuctx_event_query(ev);
    cr_assert_eq(rc, CUDA_ERROR_NOT_READY, "%s", cuctx_result_name(rc));
    cr_assert_eq(calls("cuEventQuery"), queries + 2);
    cr_assert_eq(calls("cuEventSynchronize"), syncs + 1);
    cr_assert_eq(hc.calls, 0, "the handler was called %d times (last: %s, %s)", hc.calls,
                 cuctx_result_name(hc.last_rc), hc.last_msg);
    cr_assert_eq(cuctx_last_error(), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
    ASSERT_NO_MISUSE();
}

/* ---- mutation survivors of lib/mem.c (h8) ---- */

/* A destroy given no variable is refused and reported, as for the other
 * kinds (the event's is checked above), never taken for a success. Mutant
 * killed: lib/mem.c:94 `ret` (`return 0;` for the NULL pointer). */
Test(mem, destroy_of_a_null_pointer_is_refused)
{
    NEED_DRIVER();
    unsigned long n = sim() ? sim()->log_count() : 0;
    cr_assert_eq(cuctx_mem_destroy(NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuctx_last_error(), CUDA_ERROR_INVALID_VALUE);
    cr_assert(strstr(cuctx_last_error_message(), "cuctx_mem_destroy"), "%s", cuctx_last_error_message());
    if (sim()) {
        cr_assert_eq(sim()->log_count(), n, "a NULL destroy called the driver");
        ASSERT_NO_MISUSE();
    }
}
