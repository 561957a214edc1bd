/* SPDX-License-Identifier: MIT */
/* uses_every_macro.c - compiled, never run, by tests/compile_check.sh: every
 * macro (CUCTX_AUTO, CUCTX_MOVE, CUCTX_SCOPED, CUCTX_SCOPED_ELSE, CUCTX_GUARD,
 * CUCTX_CAPTURE, CUCTX_CAPTURE_ELSE, CUCTX_CALL, the typed cuctx_destroy and
 * cuctx_cleanup, cuctx_launch of a CUfunction and of a CUkernel) and the API as documented, which must build without a single warning
 * with gcc and clang (C11, C17, C23), g++ and clang++, and as the host code
 * of a .cu file under nvcc. */
#include <cuctx.h>

#include <stdio.h>
#include <string.h>

#ifdef __CUDACC__
/* Device code next to the macros: the header must not get in its way. */
__global__ void scale(float *x, float by)
{
    x[threadIdx.x] *= by;
}
#endif

/* CUCTX_MOVE hands an object out of the function that made it. */
static cuctx_event make_event(cuctx_ctx ctx)
{
    CUCTX_AUTO cuctx_event ev = {0};
    if (cuctx_event_create(&ev, ctx, 0) != CUDA_SUCCESS)
        fprintf(stderr, "%s\n", cuctx_last_error_message());
    return CUCTX_MOVE(ev);
}

static cuctx_stream make_stream(cuctx_ctx ctx)
{
    CUCTX_AUTO cuctx_stream s = {0};
    if (cuctx_stream_create(&s, ctx, 0, 0) != CUDA_SUCCESS)
        return s;
    return CUCTX_MOVE(s);
}

/* A guard in a non-void function that ends with a return (-Wreturn-type),
 * and a guard variable nothing else reads (-Wunused-variable). */
static int is_current_under_guard(cuctx_ctx ctx)
{
    CUCTX_GUARD(ctx);
    int is = 0;
    if (cuctx_ctx_is_current(ctx, &is) != CUDA_SUCCESS)
        return -1;
    return is;
}

/* Two guards in one block. */
static CUresult sync_both(cuctx_ctx a, cuctx_ctx b)
{
    CUCTX_GUARD(a);
    CUresult rc = cuctx_ctx_synchronize(a);
    CUCTX_GUARD(b);
    return rc != CUDA_SUCCESS ? rc : cuctx_ctx_synchronize(b);
}

/* A guard as the only statement of a void function. */
static void just_a_guard(cuctx_ctx ctx)
{
    CUCTX_GUARD(ctx);
}

/* break and continue inside CUCTX_SCOPED in a loop; nested scopes; a scope
 * in a switch; return from inside a scope. */
static int scopes_in_loops(cuctx_ctx a, cuctx_ctx b, int n)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        CUCTX_SCOPED(a) {
            if (i == 0)
                continue;
            CUCTX_SCOPED(b) {
                if (i == 1)
                    break;
                count++;
            }
            if (i == 2)
                break;
            CUCTX_SCOPED(a) CUCTX_SCOPED(b) {
                count++;
            }
        }
        switch (i) {
        case 3:
            CUCTX_SCOPED(b) {
                CUCTX_AUTO cuctx_event ev = make_event(b);
                if (cuctx_event_query(ev) == CUDA_SUCCESS)
                    break;
                count--;
            }
            break;
        case 4: {
            CUCTX_GUARD(a);
            count += 2;
            break;
        }
        default:
            break;
        }
        if (i == 5)
            CUCTX_SCOPED(a) {
                return count;
            }
    }
    return count;
}

/* CUCTX_SCOPED_ELSE with each kind of on_fail: return, goto, an expression
 * with commas, break and continue of an enclosing loop; under an if without
 * braces (-Wdangling-else); nested. */
static CUresult scoped_else(cuctx_ctx a, cuctx_ctx b, int n)
{
    int count = 0, failed = 0;
    CUCTX_SCOPED_ELSE(a, return cuctx_last_error()) {
        count++;
    }
    for (int i = 0; i < n; i++) {
        CUCTX_SCOPED_ELSE(b, continue) {
            if (i == 1)
                continue;
            count++;
        }
        CUCTX_SCOPED_ELSE(a, break) count++;
        CUCTX_SCOPED_ELSE(b, failed++, count--) {
            CUCTX_SCOPED_ELSE(a, goto out) {
                CUCTX_AUTO cuctx_event ev = make_event(a);
                if (cuctx_event_query(ev) != CUDA_SUCCESS)
                    break;
            }
        }
        if (i == 3)
            CUCTX_SCOPED_ELSE(b, fprintf(stderr, "%s\n", cuctx_last_error_message())) {
                return CUDA_SUCCESS;
            }
    }
    if (failed)
        goto out;
    return count > 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
out:
    return cuctx_last_error();
}

/* Every kind under CUCTX_AUTO, children declared after their context. */
static int every_kind(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO | CUCTX_MAP_HOST) != CUDA_SUCCESS) {
        fprintf(stderr, "%s: %s\n", cuctx_result_name(cuctx_last_error()), cuctx_last_error_message());
        return 1;
    }
    cuctx_pop_current();

    CUCTX_AUTO cuctx_ctx primary = {0};
    CUCTX_AUTO cuctx_ctx borrowed = {0};
    if (cuctx_ctx_primary(&primary, cuctx_ctx_device(ctx)) == CUDA_SUCCESS)
        cuctx_ctx_borrow(&borrowed, cuctx_ctx_raw(primary));

    CUCTX_SCOPED(ctx) {
        CUCTX_AUTO cuctx_event start = make_event(ctx), stop = make_event(ctx);
        CUCTX_AUTO cuctx_stream s = make_stream(ctx);
        CUCTX_AUTO cuctx_mem m = {0};
        CUCTX_AUTO cuctx_host_mem h = {0};
        CUCTX_AUTO cuctx_module mod = {0};
        CUCTX_AUTO cuctx_graph_exec ge = {0};
        CUfunction f = NULL;
        float ms = 0;

        if (cuctx_mem_alloc(&m, ctx, 1 << 20) != CUDA_SUCCESS)
            return 1;
        if (cuctx_host_mem_alloc(&h, ctx, 1 << 20, 0) != CUDA_SUCCESS)
            return 1;
        if (cuctx_module_load_data(&mod, ctx, ".visible .entry k() { ret; }") == CUDA_SUCCESS)
            cuctx_module_function(mod, "k", &f);
        cuctx_event_record(start, s);
        cuctx_stream_wait_event(s, start);
        cuctx_event_record(stop, s);
        cuctx_stream_synchronize(s);
        cuctx_event_synchronize(stop);
        if (cuctx_event_elapsed_ms(start, stop, &ms) == CUDA_SUCCESS)
            printf("%.3f ms, %zu bytes at %llu, host %p\n", (double)ms, cuctx_mem_size(m),
                   (unsigned long long)cuctx_mem_ptr(m), cuctx_host_mem_ptr(h));
        printf("%p %p %p %p %zu\n", (void *)cuctx_event_raw(start), (void *)cuctx_stream_raw(s),
               (void *)cuctx_module_raw(mod), (void *)cuctx_graph_exec_raw(ge), cuctx_host_mem_size(h));
        if (cuctx_graph_exec_raw(ge))
            cuctx_graph_exec_launch(ge, s);
        if (f) {
            void *args[] = {&ms};
            cuctx_dim3 grid = {4, 2, 1}, block = {128, 1, 1};
            cuctx_stream current_default = {0};
            cuctx_launch(f, s, grid, block, 0, args);
            cuctx_launch(f, current_default, grid, block, 256, NULL);
        }
    }

    struct cuctx_stats st;
    cuctx_stats_get(&st);
    printf("%zu contexts, %llu stale skips\n", st.contexts, (unsigned long long)st.stale_skips);
    return 0;
}

/* CUCTX_CALL: names cuda.h renames (cuMemcpyHtoD -> cuMemcpyHtoD_v2,
 * cuCtxCreate -> cuCtxCreate_v4), one that has a per-thread variant
 * (cuStreamQuery), one without arguments, one used as a condition and one
 * whose value is dropped (no warning). */
static CUresult raw_calls(cuctx_mem m, cuctx_stream s)
{
    unsigned char host[64] = {0};
    CUcontext c = NULL;
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    if (CUCTX_CALL(cuMemcpyHtoD, cuctx_mem_ptr(m), host, sizeof host) != CUDA_SUCCESS)
        return cuctx_last_error();
    CUCTX_CALL(cuMemcpyDtoHAsync, host, cuctx_mem_ptr(m), sizeof host, cuctx_stream_raw(s));
    CUresult rc = CUCTX_CALL(cuStreamQuery, cuctx_stream_raw(s));
    if (rc == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuCtxSynchronize, );
    if (rc == CUDA_SUCCESS && CUCTX_CALL(cuCtxCreate, &c, &params, 0, 0) == CUDA_SUCCESS)
        rc = CUCTX_CALL(cuCtxDestroy, c);
    return rc;
}

/* Captures: kept at the end, abandoned by a return, the ELSE form with a
 * goto; the graph and a library under CUCTX_AUTO, a library's kernel
 * launched through the same cuctx_launch as a function; by hand. */
static CUresult captures(cuctx_stream s, int bail)
{
    CUCTX_AUTO cuctx_graph g = {0}, g2 = {0}, g3 = {0};
    CUCTX_AUTO cuctx_library lib = {0};
    CUCTX_AUTO cuctx_graph_exec ge = {0};
    CUkernel k = NULL;
    CUdeviceptr p = 0;
    size_t bytes = 0;
    cuctx_capture c;
    cuctx_graph made = {0};
    cuctx_module mod = {0};
    cuctx_library moved = {0}, other = {0};
    cuctx_dim3 one = {1, 1, 1}, warp = {32, 1, 1};
    cuctx_ctx current_ctx = {0};
    if (cuctx_library_load_data(&lib, ".visible .entry k() { ret; }") == CUDA_SUCCESS)
        cuctx_library_kernel(lib, "k", &k);
    CUCTX_CAPTURE(s, &g, CU_STREAM_CAPTURE_MODE_GLOBAL) {
        if (k)
            cuctx_launch(k, s, one, warp, 0, NULL);
        if (bail)
            return cuctx_last_error();
    }
    CUCTX_CAPTURE_ELSE(s, &g2, CU_STREAM_CAPTURE_MODE_RELAXED, goto out) {
        if (bail > 1)
            break;
    }
    if (cuctx_capture_begin(&c, s, &g3, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS)
        cuctx_capture_end(&c, bail == 0);
    if (g.id)
        cuctx_graph_exec_instantiate(&ge, current_ctx, cuctx_graph_raw(g), 0);
    if (cuctx_graph_create(&made) == CUDA_SUCCESS)
        cuctx_graph_destroy(&made);
    printf("%p %p\n", (void *)cuctx_library_raw(lib), (void *)cuctx_graph_raw(g2));
    if (cuctx_module_global(mod, "x", &p, &bytes) == CUDA_SUCCESS)
        printf("%llu %zu\n", (unsigned long long)p, bytes);
    moved = CUCTX_MOVE(lib);
    cuctx_library_destroy(&moved);
    if (cuctx_library_load(&other, "k.ptx") == CUDA_SUCCESS)
        cuctx_destroy(&other);
out:
    return cuctx_last_error();
}

/* The typed destroy and cleanup on every kind, and the untyped function for
 * a handle held as void *. */
static void destroy_every_kind(cuctx_ctx *c, cuctx_event *e, cuctx_stream *s, cuctx_module *mod, cuctx_mem *m,
                               cuctx_host_mem *h, cuctx_graph_exec *ge, void *any)
{
    cuctx_destroy(c);
    cuctx_destroy(e);
    cuctx_destroy(s);
    cuctx_cleanup(mod);
    cuctx_cleanup(m);
    cuctx_cleanup(h);
    if (cuctx_destroy(ge) != CUDA_SUCCESS)
        (cuctx_cleanup)(any);
    (cuctx_destroy)(any);
}

static void on_error(CUresult rc, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "cuctx: %s: %s\n", cuctx_result_name(rc), message);
}

int main(void)
{
    int version = 0;
    cuctx_set_error_handler(on_error, NULL);
    if (cuctx_init() != CUDA_SUCCESS || cuctx_driver_version(&version) != CUDA_SUCCESS)
        return 1;
    void *sym = NULL;
    cuctx_driver_symbol("cuCtxGetCurrent", 2000, &sym);
    cuctx_driver_symbol_flags("cuStreamQuery", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &sym);

    CUCTX_AUTO cuctx_ctx a = {0};
    CUCTX_AUTO cuctx_ctx b = {0};
    if (cuctx_ctx_create(&a, 0, CUCTX_SCHED_BLOCKING_SYNC) != CUDA_SUCCESS
        || cuctx_ctx_create(&b, 0, CUCTX_SCHED_SPIN | CUCTX_LMEM_RESIZE_TO_MAX) != CUDA_SUCCESS)
        return 1;
    CUcontext cur = NULL;
    cuctx_current_raw(&cur);
    cuctx_ctx_set_current(a);

    cuctx_scope by_hand;
    if (cuctx_scope_enter(&by_hand, b) == CUDA_SUCCESS)
        cuctx_scope_exit(&by_hand);

    just_a_guard(a);
    printf("%d %d %d %d\n", is_current_under_guard(a), (int)sync_both(a, b), scopes_in_loops(a, b, 8),
           (int)scoped_else(a, b, 5));

    cuctx_ctx moved = CUCTX_MOVE(b);
    cuctx_ctx back = {CUCTX_MOVE(moved).id};     /* a used result, by member */
    cuctx_destroy(&back);
    cuctx_cleanup(&back);
    cuctx_event e = {0};
    cuctx_stream s = {0};
    cuctx_module mod = {0};
    cuctx_mem m = {0};
    cuctx_host_mem h = {0};
    cuctx_graph_exec ge = {0};
    destroy_every_kind(&back, &e, &s, &mod, &m, &h, &ge, &e);
    if (raw_calls(m, s) != CUDA_SUCCESS || captures(s, 1) != CUDA_SUCCESS)
        return 1;
    return every_kind();
}
