/* SPDX-License-Identifier: MIT */
/* scoped_switch.c - two contexts, and work in each through CUCTX_SCOPED and
 * CUCTX_GUARD.
 *
 * A scope makes a context current for a block and, however the block is
 * left - its end, return, break, continue - puts back the context that was
 * current before it. The program walks through each way out, prints which
 * context is current at every step, and exits 1 if any step found the wrong
 * one. It launches no kernel: it runs on any GPU, and on the simulated
 * driver of `make check`. */
#include <cuctx.h>
#include <cudaTypedefs.h>
#include <stdio.h>

/* The two contexts' driver handles, only to print which one is current. */
static CUcontext raw_a, raw_b;
static int checks, failures;

static const char *name(CUcontext c)
{
    return c == NULL ? "none" : c == raw_a ? "A" : c == raw_b ? "B" : "another";
}

/* Prints the step and the current context; counts it wrong unless it is `want`. */
static void expect(const char *step, CUcontext want)
{
    CUcontext cur = NULL;
    cuctx_current_raw(&cur);
    checks++;
    if (cur != want)
        failures++;
    printf("  %-58s current: %s%s\n", step, name(cur), cur == want ? "" : "   <-- WRONG, expected another");
}

/* Makes `count` events in ctx and keeps none. Both ways out of the scope are
 * a return from inside it; either way ctx stops being current, and each
 * event is destroyed at the end of its loop iteration by CUCTX_AUTO. */
static CUresult make_events_in(cuctx_ctx ctx, int count)
{
    CUCTX_SCOPED(ctx) {
        expect("in make_events_in(), inside CUCTX_SCOPED(ctx)", cuctx_ctx_raw(ctx));
        for (int i = 0;; i++) {
            CUCTX_AUTO cuctx_event ev = {0};
            /* {0} as the owner means "the current context": the scope's. */
            CUresult rc = cuctx_event_create(&ev, (cuctx_ctx){0}, CU_EVENT_DISABLE_TIMING);
            if (rc != CUDA_SUCCESS)
                return rc;              /* failure: out of the scope by return */
            if (i + 1 == count)
                return CUDA_SUCCESS;    /* done: out of the scope by return */
        }
    }
    return cuctx_last_error();          /* reached only if ctx could not be made current */
}

static int device_count(void)
{
    PFN_cuDeviceGetCount_v2000 get_count;
    int n = 0;
    if (cuctx_driver_symbol("cuDeviceGetCount", 2000, (void **)&get_count) != CUDA_SUCCESS
        || get_count(&n) != CUDA_SUCCESS)
        return 0;
    return n;
}

int main(void)
{
    if (cuctx_init() != CUDA_SUCCESS) {
        fprintf(stderr, "scoped_switch: %s\n", cuctx_last_error_message());
        return 1;
    }
    /* A on device 0, B on device 1 when there is one. */
    int dev_b = device_count() > 1 ? 1 : 0;

    CUCTX_AUTO cuctx_ctx a = {0};
    CUCTX_AUTO cuctx_ctx b = {0};
    if (cuctx_ctx_create(&a, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_ctx_create(&b, dev_b, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS) {
        fprintf(stderr, "scoped_switch: %s\n", cuctx_last_error_message());
        return 1;
    }
    raw_a = cuctx_ctx_raw(a);
    raw_b = cuctx_ctx_raw(b);
    printf("context A on device 0, context B on device %d; creates push, so both were popped\n", dev_b);

    printf("1. nested scopes\n");
    expect("before any scope", NULL);
    CUCTX_SCOPED(a) {
        expect("inside CUCTX_SCOPED(A)", raw_a);
        CUCTX_SCOPED(b) {
            expect("inside CUCTX_SCOPED(B), nested in A", raw_b);
        }
        expect("after B's scope ended: A is back", raw_a);
    }
    expect("after A's scope ended: nothing is current again", NULL);

    printf("2. return from inside a scope\n");
    CUCTX_SCOPED(a) {
        CUresult rc = make_events_in(b, 3);
        printf("  make_events_in(B, 3) returned %s\n", cuctx_result_name(rc));
        if (rc != CUDA_SUCCESS)
            failures++;
        expect("in A's scope, after the function returned from B's", raw_a);
    }

    printf("3. break and continue leave the scope, not the loop around it\n");
    cuctx_ctx both[2] = {a, b};
    int iterations = 0;
    for (int i = 0; i < 2; i++) {
        CUCTX_SCOPED(both[i]) {
            expect(i == 0 ? "inside CUCTX_SCOPED(A), about to break" : "inside CUCTX_SCOPED(B), about to continue",
                   i == 0 ? raw_a : raw_b);
            if (i == 0)
                break;      /* ends the scope only: the for loop goes on */
            continue;
        }
        iterations++;
        expect(i == 0 ? "after the break, still in the loop" : "after the continue, still in the loop", NULL);
    }
    printf("  the loop ran %d of 2 iterations to the end\n", iterations);
    if (iterations != 2)
        failures++;

    printf("4. CUCTX_GUARD: current to the end of the enclosing block\n");
    CUCTX_SCOPED(a) {
        {
            CUCTX_GUARD(b);
            expect("after CUCTX_GUARD(B), in A's scope", raw_b);
            for (int i = 0; i < 3; i++)
                if (i == 1)
                    break;  /* a guard is no loop: this break is the for loop's */
            expect("after a break out of a for loop under the guard", raw_b);
        }
        expect("after the guarded block ended: A is back", raw_a);
    }
    expect("after A's scope", NULL);

    printf("%d checks, %d wrong; A and B are destroyed as main returns (B first)\n", checks, failures);
    return failures ? 1 : 0;
}
