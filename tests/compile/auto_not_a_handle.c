/* SPDX-License-Identifier: MIT */
/* auto_not_a_handle.c - must NOT compile with gcc or g++
 * (tests/compile_check.sh): CUCTX_AUTO on an int would have the cleanup read
 * and zero 8 bytes of a 4-byte variable as if it were a handle. gcc says
 * "incompatible type for argument 1 of 'cuctx__auto_cleanup'", g++ "could
 * not convert ... to 'cuctx__handle_ptr'"; clang, clang++ and nvcc compile
 * it (cuctx(3), rule 1). */
#include <cuctx.h>

int not_a_handle(void);

int not_a_handle(void)
{
    CUCTX_AUTO int n = 5;
    return n;
}
