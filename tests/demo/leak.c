/* SPDX-License-Identifier: MIT */
/* leak.c - a program that leaks one event and one stream. Run with
 * CUCTX_LEAK_CHECK=1: at exit cuctx names both, with where they were made. */
#include <cuctx.h>
#include <stdio.h>

static void forget_two(cuctx_ctx ctx)
{
    cuctx_event ev = {0};       /* no CUCTX_AUTO: leaked on purpose */
    cuctx_stream s = {0};
    cuctx_event_create(&ev, ctx, 0);
    cuctx_stream_create(&s, ctx, 0, 0);
}

int main(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_primary(&ctx, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "%s\n", cuctx_last_error_message());
        return 1;
    }
    forget_two(ctx);
    return 0;
}
