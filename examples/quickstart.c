/* SPDX-License-Identifier: MIT */
/* quickstart.c - the README's main example: a context and a few children
 * under CUCTX_AUTO, a switch with CUCTX_SCOPED, and what happened, printed. */
#include <cuctx.h>
#include <stdio.h>

static const char *name_of(CUcontext c, CUcontext mine)
{
    return c == NULL ? "none" : c == mine ? "ours" : "another";
}

int main(void)
{
    CUresult rc = cuctx_init();
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "quickstart: no usable CUDA driver (%s): %s\n", cuctx_result_name(rc),
                cuctx_last_error_message());
        return 1;
    }
    int version = 0;
    cuctx_driver_version(&version);
    printf("driver version %d.%d\n", version / 1000, version % 1000 / 10);

    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS) {
        fprintf(stderr, "quickstart: %s\n", cuctx_last_error_message());
        return 1;
    }
    CUcontext raw = cuctx_ctx_raw(ctx), cur = NULL;
    printf("created context %p on device %d; it is current (created contexts are pushed)\n",
           (void *)raw, (int)cuctx_ctx_device(ctx));
    cuctx_pop_current();
    cuctx_current_raw(&cur);
    printf("popped it: current context is %s\n", name_of(cur, raw));

    CUCTX_SCOPED(ctx) {
        cuctx_current_raw(&cur);
        printf("inside CUCTX_SCOPED: current context is %s\n", name_of(cur, raw));

        CUCTX_AUTO cuctx_stream stream = {0};
        CUCTX_AUTO cuctx_event start = {0}, stop = {0};
        CUCTX_AUTO cuctx_mem buf = {0};
        if (cuctx_stream_create(&stream, ctx, 0, 0) != CUDA_SUCCESS
            || cuctx_event_create(&start, ctx, 0) != CUDA_SUCCESS
            || cuctx_event_create(&stop, ctx, 0) != CUDA_SUCCESS
            || cuctx_mem_alloc(&buf, ctx, 1 << 20) != CUDA_SUCCESS) {
            fprintf(stderr, "quickstart: %s\n", cuctx_last_error_message());
            return 1;   /* every object made so far is destroyed on the way out */
        }
        cuctx_event_record(start, stream);
        cuctx_event_record(stop, stream);
        cuctx_event_synchronize(stop);
        float ms = -1;
        cuctx_event_elapsed_ms(start, stop, &ms);
        printf("made a stream, two events and %zu bytes of device memory; empty interval %.3f ms\n",
               cuctx_mem_size(buf), ms);
    }   /* buf, stop, start, stream destroyed here, in that order */

    cuctx_current_raw(&cur);
    printf("after the scope: current context is %s again\n", name_of(cur, raw));

    struct cuctx_stats st;
    cuctx_stats_get(&st);
    printf("live now: %zu context handle(s), %zu events, %zu streams, %zu allocations\n",
           st.ctx_handles, st.events, st.streams, st.mems);
    printf("the context is destroyed as main returns\n");
    return 0;
}
