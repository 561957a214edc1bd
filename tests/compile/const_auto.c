/* SPDX-License-Identifier: MIT */
/* const_auto.c - must NOT compile, without -Werror, where the compiler can
 * refuse it (tests/compile_check.sh): the cleanup resets the variable to
 * {0}, and this one is const, so it would write to a const object. clang
 * and clang++ refuse the cleanup function's parameter, g++ and nvcc the
 * conversion to a pointer to non-const. gcc in C accepts the argument with
 * a warning on by default (-Wdiscarded-qualifiers; an error under -Werror or
 * -pedantic-errors): it treats that constraint violation as a pedantic
 * warning, and nothing in an attribute before the declaration can see the
 * declared type (cuctx(3), rule 1). */
#include <cuctx.h>

unsigned long long const_auto(const cuctx_event *from);

unsigned long long const_auto(const cuctx_event *from)
{
    CUCTX_AUTO const cuctx_event ev = *from;
    return (unsigned long long)ev.id;
}
