/* SPDX-License-Identifier: MIT */
/* const_move.c - must NOT compile, without -Werror (tests/compile_check.sh):
 * CUCTX_MOVE resets its variable to {0}, and this one is const, so the move
 * would write to a const object. In C, CUCTX_MOVE selects on the variable's
 * address, whose type keeps the const, so gcc and clang find no match in
 * its _Generic; in C++ and under nvcc no overload takes a pointer to const
 * (cuctx(3), rule 3). */
#include <cuctx.h>

cuctx_event move_a_const(const cuctx_event *from);

cuctx_event move_a_const(const cuctx_event *from)
{
    const cuctx_event ev = *from;
    return CUCTX_MOVE(ev);
}
