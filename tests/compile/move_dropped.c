/* SPDX-License-Identifier: MIT */
/* move_dropped.c - must draw a warning (tests/compile_check.sh, under
 * -Werror): the result of CUCTX_MOVE is dropped, so the event is no longer
 * destroyed by anyone. gcc, clang, g++ and clang++ say "ignoring return
 * value" (-Wunused-result; cuctx(3), rule 3). */
#include <cuctx.h>

void drop_the_move(cuctx_ctx ctx);

void drop_the_move(cuctx_ctx ctx)
{
    CUCTX_AUTO cuctx_event ev = {0};
    cuctx_event_create(&ev, ctx, 0);
    CUCTX_MOVE(ev);
}
