/* SPDX-License-Identifier: MIT */
/* destroy_not_a_handle.c - must NOT compile (tests/compile_check.sh):
 * cuctx_destroy and cuctx_cleanup given a pointer to an int would write 8
 * zero bytes over a 4-byte variable. C11 _Generic has no association for
 * it, C++ no overload; -DCLEANUP checks cuctx_cleanup instead. */
#include <cuctx.h>

int not_a_handle(void);

int not_a_handle(void)
{
    int n = 5;
#ifdef CLEANUP
    cuctx_cleanup(&n);
#else
    cuctx_destroy(&n);
#endif
    return n;
}
