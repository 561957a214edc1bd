/* SPDX-License-Identifier: MIT */
/* goto_over_auto.c - must warn (tests/compile_check.sh): the goto jumps
 * over a CUCTX_AUTO declaration to a label in its scope, so at the return
 * the cleanup runs on the uninitialised handle. clang rejects it; gcc says
 * nothing under -Wall -Wextra and warns with -Wjump-misses-init ("jump
 * skips variable initialization"), which is why the rules say to declare
 * every CUCTX_AUTO at the top of the function, initialised. */
#include <cuctx.h>

int make_two(cuctx_ctx ctx);

int make_two(cuctx_ctx ctx)
{
    if (cuctx_event_create(NULL, ctx, 0) != CUDA_SUCCESS)
        goto out;
    CUCTX_AUTO cuctx_event ev = {0};
    if (cuctx_event_create(&ev, ctx, 0) != CUDA_SUCCESS)
        goto out;
    return 0;
out:
    return 1;
}
