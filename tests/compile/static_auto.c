/* SPDX-License-Identifier: MIT */
/* static_auto.c - must NOT compile under -Werror (tests/compile_check.sh): a
 * static variable never leaves scope, so its cleanup would never run. gcc
 * rejects `static CUCTX_AUTO` in C outright; g++ (-Wattributes), clang and
 * clang++ (-Wignored-attributes) warn by default that the cleanup is ignored
 * (cuctx(3), rule 1). */
#include <cuctx.h>

unsigned long long static_auto(void);

unsigned long long static_auto(void)
{
    static CUCTX_AUTO cuctx_event ev = {0};
    return (unsigned long long)ev.id;
}
