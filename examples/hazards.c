/* SPDX-License-Identifier: MIT */
/* hazards.c - the call sequences that crash or corrupt memory on the raw
 * driver, run through cuctx.
 *
 * Each hazard below is a mistake real programs make. On the raw driver
 * (measured on an H200, driver 580.159.04) each one crashes the
 * process or silently frees memory that belongs to someone else. Through
 * cuctx each one is caught: the program prints what the raw driver would
 * have done and what happened instead, and exits 0 only if every hazard was
 * handled as expected. It launches no kernel: it runs on any GPU, and on the
 * simulated driver of `make check` (which also counts any misuse that reached
 * it: there must be none). */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int handled, hazards;

static void verdict(int ok, const char *raw, const char *cuctx)
{
    hazards++;
    handled += ok;
    printf("  raw driver: %s\n  cuctx:      %s\n  -> %s\n", raw, cuctx, ok ? "handled" : "NOT HANDLED");
}

static uint64_t stale_skips(void)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    return st.stale_skips;
}

static int fail(const char *what)
{
    fprintf(stderr, "hazards: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

/* 1. cuStreamDestroy after cuCtxDestroy: SIGSEGV on the raw driver. */
static int stream_after_context(void)
{
    printf("1. a stream destroyed after its context\n");
    cuctx_ctx ctx = {0};
    cuctx_stream s = {0};
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_stream_create(&s, ctx, 0, 0) != CUDA_SUCCESS)
        return fail("setting up");
    uint64_t skips = stale_skips();
    cuctx_ctx_destroy(&ctx);                 /* the context goes first: the driver freed s with it */
    CUresult rc = cuctx_stream_destroy(&s);  /* the raw cuStreamDestroy here is a SIGSEGV */
    char what[160];
    snprintf(what, sizeof what, "cuctx_stream_destroy returned %s; the destroy was skipped (%llu skip)",
             cuctx_result_name(rc), (unsigned long long)(stale_skips() - skips));
    verdict(rc == CUDA_SUCCESS && stale_skips() == skips + 1 && s.id == 0,
            "cuStreamDestroy after cuCtxDestroy: SIGSEGV", what);
    return 0;
}

/* 2. A stale cuMemFree after the address was reused: on the raw driver it
 * returns CUDA_SUCCESS and frees the new owner's allocation. */
static int stale_free_after_reuse(void)
{
    PFN_cuMemsetD8_v3020 memset8;
    printf("2. a stale free after address reuse\n");
    if (cuctx_driver_symbol("cuMemsetD8", 3020, (void **)&memset8) != CUDA_SUCCESS)
        return fail("cuMemsetD8");
    cuctx_ctx a = {0}, b = {0};
    cuctx_mem old = {0}, fresh = {0};
    if (cuctx_ctx_create(&a, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_mem_alloc(&old, a, 1 << 20) != CUDA_SUCCESS)
        return fail("setting up A");
    CUcontext raw_a = cuctx_ctx_raw(a);
    CUdeviceptr old_ptr = cuctx_mem_ptr(old);
    cuctx_ctx_destroy(&a);                   /* A's allocation went with it */
    if (cuctx_ctx_create(&b, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_mem_alloc(&fresh, b, 1 << 20) != CUDA_SUCCESS)
        return fail("setting up B");
    printf("  a new context B %s A's address; its allocation %s A's device address\n",
           cuctx_ctx_raw(b) == raw_a ? "took" : "did not take",
           cuctx_mem_ptr(fresh) == old_ptr ? "took" : "did not take (cuctx does not depend on it)");
    uint64_t skips = stale_skips();
    CUresult rc = cuctx_mem_destroy(&old);   /* the stale free of A's allocation */
    CUresult use = CUDA_ERROR_UNKNOWN;
    CUCTX_SCOPED(b) {
        use = memset8(cuctx_mem_ptr(fresh), 0x5a, 1 << 20);
    }
    CUresult own = cuctx_mem_destroy(&fresh);
    char what[200];
    snprintf(what, sizeof what, "the stale destroy returned %s and was skipped; B's memset %s, B's own free %s",
             cuctx_result_name(rc), cuctx_result_name(use), cuctx_result_name(own));
    verdict(rc == CUDA_SUCCESS && stale_skips() == skips + 1 && use == CUDA_SUCCESS && own == CUDA_SUCCESS,
            "cuMemFree(old) returns CUDA_SUCCESS and frees B's allocation; B's next cuMemsetD8 and cuMemFree fail with 1",
            what);
    cuctx_ctx_destroy(&b);
    return 0;
}

/* 3. A double destroy (through a copy of the handle): SIGSEGV for streams. */
static int double_destroy(void)
{
    printf("3. a double destroy\n");
    CUCTX_AUTO cuctx_ctx ctx = {0};
    cuctx_stream s = {0};
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_stream_create(&s, ctx, 0, 0) != CUDA_SUCCESS)
        return fail("setting up");
    cuctx_stream copy = s;
    CUresult first = cuctx_stream_destroy(&s);
    CUresult again = cuctx_stream_destroy(&s);      /* s is {0} now: a no-op */
    CUresult second = cuctx_stream_destroy(&copy);  /* the copy is stale: refused */
    char what[200];
    snprintf(what, sizeof what, "first destroy %s; again through the emptied handle %s; through a stale copy %s",
             cuctx_result_name(first), cuctx_result_name(again), cuctx_result_name(second));
    verdict(first == CUDA_SUCCESS && again == CUDA_SUCCESS && second == CUDA_ERROR_INVALID_HANDLE,
            "a second cuStreamDestroy of the same stream: SIGSEGV", what);
    return 0;
}

/* 4. Making a dead context current and popping it: the raw driver accepts
 * cuCtxPushCurrent of a destroyed context, and the pop then aborts the
 * process (free(): invalid pointer). */
static int pop_of_dead_context(void)
{
    PFN_cuCtxCreate_v3020 raw_create;
    PFN_cuCtxDestroy_v4000 raw_destroy;
    PFN_cuCtxPopCurrent_v4000 raw_pop;
    printf("4. a pop of a dead context\n");
    if (cuctx_driver_symbol("cuCtxCreate", 3020, (void **)&raw_create) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxDestroy", 4000, (void **)&raw_destroy) != CUDA_SUCCESS
        || cuctx_driver_symbol("cuCtxPopCurrent", 4000, (void **)&raw_pop) != CUDA_SUCCESS)
        return fail("driver entry points");

    /* (a) A copy of a destroyed context's handle. */
    cuctx_ctx ctx = {0};
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS)
        return fail("setting up");
    cuctx_ctx copy = ctx;
    cuctx_ctx_destroy(&ctx);
    CUcontext before = NULL, after = NULL;
    cuctx_current_raw(&before);
    int ran = 0;
    CUresult refused = CUDA_SUCCESS;
    CUCTX_SCOPED_ELSE(copy, refused = cuctx_last_error()) {
        ran = 1;
    }
    CUresult set = cuctx_ctx_set_current(copy);
    cuctx_current_raw(&after);
    char what[240];
    snprintf(what, sizeof what, "CUCTX_SCOPED on a stale copy: %s, block skipped; cuctx_ctx_set_current: %s; "
             "current context unchanged", cuctx_result_name(refused), cuctx_result_name(set));
    verdict(!ran && refused == CUDA_ERROR_INVALID_HANDLE && set == CUDA_ERROR_INVALID_HANDLE && after == before,
            "cuCtxPushCurrent(destroyed) returns CUDA_SUCCESS; the cuCtxPopCurrent after it aborts", what);

    /* (b) A context made and destroyed outside cuctx, borrowed in between:
     * cuctx learns of the death through the driver's context id. */
    CUcontext raw = NULL, popped = NULL;
    cuctx_ctx borrowed = {0};
    if (raw_create(&raw, 0, 0) != CUDA_SUCCESS || raw_pop(&popped) != CUDA_SUCCESS
        || cuctx_ctx_borrow(&borrowed, raw) != CUDA_SUCCESS)
        return fail("setting up the borrowed context");
    raw_destroy(raw);                       /* behind cuctx's back */
    ran = 0;
    refused = CUDA_SUCCESS;
    CUCTX_SCOPED_ELSE(borrowed, refused = cuctx_last_error()) {
        ran = 1;
    }
    cuctx_current_raw(&after);
    CUresult dropped = cuctx_ctx_destroy(&borrowed);
    snprintf(what, sizeof what, "CUCTX_SCOPED on a borrowed context its owner destroyed: %s, block skipped, "
             "nothing pushed; dropping the borrow: %s", cuctx_result_name(refused), cuctx_result_name(dropped));
    verdict(!ran && refused != CUDA_SUCCESS && after == before && dropped == CUDA_SUCCESS,
            "the same push and pop of the dead context: abort", what);
    return 0;
}

/* With the simulated driver loaded (make check), the misuses it recorded:
 * calls that would have crashed or corrupted on the real driver. */
static long simulator_misuses(void)
{
    const char *path = getenv("CUCTX_DRIVER");
    void *lib = path && *path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *sym = lib ? dlsym(lib, "cusim_misuse_count") : NULL;
    size_t (*count)(void) = NULL;
    memcpy(&count, &sym, sizeof sym);
    return count ? (long)count() : -1;
}

int main(void)
{
    if (cuctx_init() != CUDA_SUCCESS)
        return fail("no driver");
    if (stream_after_context() || stale_free_after_reuse() || double_destroy() || pop_of_dead_context())
        return 1;

    struct cuctx_stats st;
    cuctx_stats_get(&st);
    long misuses = simulator_misuses();
    if (misuses >= 0)
        printf("the simulated driver recorded %ld misuses\n", misuses);
    int ok = handled == hazards && misuses <= 0 && st.failed_destroys == 0 && st.contexts == 0;
    printf("%d of %d hazards handled; %llu destroys skipped as stale, %llu refused by the driver, %zu contexts left\n",
           handled, hazards, (unsigned long long)st.stale_skips, (unsigned long long)st.failed_destroys,
           st.contexts);
    printf("hazards: %s\n", ok ? "all handled" : "FAILED");
    return ok ? 0 : 1;
}
