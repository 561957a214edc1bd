/* SPDX-License-Identifier: MIT */
/* goto_into_scope.c - must NOT compile (tests/compile_check.sh): the goto
 * jumps into the scope of a CUCTX_AUTO variable, past its initialisation,
 * so the cleanup would run on an uninitialised handle. clang rejects it
 * ("cannot jump from this goto statement to its label"); gcc accepts it in
 * C, which is why rule 6 of cuctx(3) says never to do it. */
#include <cuctx.h>

int jump_in(int skip);

int jump_in(int skip)
{
    if (skip)
        goto inside;
    {
        CUCTX_AUTO cuctx_event ev = {0};
    inside:
        return ev.id != 0;
    }
}
