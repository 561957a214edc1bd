/* SPDX-License-Identifier: MIT */
/* version.c - the library's version, as the header it was built with says,
 * and compile-time checks on the layouts the header compiles into callers. */
#include "config.h"

#include "cuctx.h"

#include <assert.h>

/* The macros keep a cuctx_scope on the caller's stack and cuctx__scope_begin
 * returns one by value: its size is part of the ABI. New state goes into
 * cuctx__reserved, not after it. */
#if UINTPTR_MAX == UINT64_MAX
static_assert(sizeof(cuctx_scope) == 48, "cuctx_scope's size is part of the ABI");
#endif
static_assert(sizeof(cuctx_ctx) == sizeof(uint64_t), "a handle is one uint64_t");

CUCTX_API const char *cuctx_version(void)
{
    return CUCTX_VERSION_STRING;
}

CUCTX_API unsigned cuctx_version_hex(void)
{
    return CUCTX_VERSION_HEX;
}
