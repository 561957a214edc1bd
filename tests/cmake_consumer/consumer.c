/* SPDX-License-Identifier: MIT */
/* consumer.c - built by tests/cmake_consumer/CMakeLists.txt against an
 * installed cuctx: the header (and the cuda.h it includes) come from the
 * imported target's include directories, the library from its location.
 * Checks that the header, the library and the CMake package name one
 * version, that the macros compile, and - when CUCTX_DRIVER names a
 * driver - that the library loads it. */
#include <cuctx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    if (cuctx_version_hex() != CUCTX_VERSION_HEX || strcmp(cuctx_version(), CUCTX_VERSION_STRING) != 0 ||
        strcmp(FOUND_VERSION, CUCTX_VERSION_STRING) != 0) {
        printf("versions differ: header %s (%#x), library %s (%#x), CMake package %s\n", CUCTX_VERSION_STRING,
               (unsigned)CUCTX_VERSION_HEX, cuctx_version(), cuctx_version_hex(), FOUND_VERSION);
        return 1;
    }
    CUCTX_AUTO cuctx_event ev = {0};
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    CUresult rc = cuctx_init();
    printf("cuctx %s (header, library and package agree); cuctx_init: %s\n", cuctx_version(),
           cuctx_result_name(rc));
    if (getenv("CUCTX_DRIVER") && rc != CUDA_SUCCESS) {
        printf("%s\n", cuctx_last_error_message());
        return 1;
    }
    return 0;
}
