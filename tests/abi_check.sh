#!/bin/sh
# SPDX-License-Identifier: MIT
# abi_check.sh - the built library's interface, as a TAP test (make check):
#
#   1. the dynamic symbols libcuctx.so defines are exactly the functions
#      include/cuctx.h declares CUCTX_API - no internal cuctx__ name beyond
#      the three the macros call, nothing missing;
#   2. lib/cuctx.map lists exactly those functions too;
#   3. where the version script was used, each carries the version CUCTX_0.1;
#   4. a program that does not link cuctx can dlopen() it (its initial-exec
#      TLS fits glibc's default reserve) and calls the same version the header
#      has; the TLS size is reported.
#
# Environment (set by make check): CUCTX_SRCDIR, CUCTX_BUILDDIR, CC,
# CUDA_CPPFLAGS.
set -u

src=${CUCTX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${CUCTX_BUILDDIR:-.}
lib=$build/lib/.libs/libcuctx.so
CC=${CC:-cc}

echo "1..4"
if [ ! -f "$lib" ]; then
    for i in 1 2 3 4; do echo "ok $i # SKIP no shared library at $lib (configured --disable-shared?)"; done
    exit 0
fi
if ! command -v nm >/dev/null 2>&1; then
    for i in 1 2 3 4; do echo "ok $i # SKIP no nm"; done
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-abi.XXXXXX") || { echo "Bail out! cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$work"' EXIT HUP INT TERM
failed=0

# The header's functions: each declaration starts a line with CUCTX_API and
# has its name just before the first '('.
grep '^CUCTX_API' "$src/include/cuctx.h" | sed -e 's/(.*//' -e 's/.*[ *]//' | LC_ALL=C sort -u > "$work/header"
# Defined dynamic symbols, less the version nodes (type A).
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' > "$work/nm"
sed 's/@.*//' "$work/nm" | LC_ALL=C sort -u > "$work/exported"
# The map's global names: the lines "    name;" between "global:" and "local:".
sed -n '/global:/,/local:/s/^ *\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$src/lib/cuctx.map" | LC_ALL=C sort -u > "$work/map"

# compare N DESCRIPTION WANT GOT WANT_NAME GOT_NAME
compare() {
    if [ -s "$3" ] && cmp -s "$3" "$4"; then
        echo "ok $1 - $2 ($(wc -l < "$3" | tr -d ' ') functions)"
    else
        failed=1
        echo "not ok $1 - $2"
        LC_ALL=C comm -23 "$3" "$4" | sed "s/^/# in $5, not in $6: /"
        LC_ALL=C comm -13 "$3" "$4" | sed "s/^/# in $6, not in $5: /"
    fi
}
compare 1 "exported symbols of libcuctx.so are the header's CUCTX_API functions" "$work/header" "$work/exported" "cuctx.h" "libcuctx.so"
compare 2 "lib/cuctx.map lists the header's CUCTX_API functions" "$work/header" "$work/map" "cuctx.h" "cuctx.map"

if grep -q '@' "$work/nm"; then
    bad=$(grep -v '@@CUCTX_0\.1$' "$work/nm")
    if [ -z "$bad" ]; then
        echo "ok 3 - every exported symbol has the version CUCTX_0.1"
    else
        failed=1
        echo "not ok 3 - every exported symbol has the version CUCTX_0.1"
        echo "$bad" | sed 's/^/# /'
    fi
else
    echo "ok 3 # SKIP the library has no symbol versions (the linker took no version script)"
fi

# 4: dlopen from a program that does not link cuctx.
tls=$(readelf -lW "$lib" 2>/dev/null | awk '$1 == "TLS" { print $6 }')
cat > "$work/dl.c" <<'PROG'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cuctx.h>
int main(int argc, char **argv)
{
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    void *sym = dlsym(lib, "cuctx_version_hex");
    unsigned (*hex)(void);
    if (!sym) {
        printf("no cuctx_version_hex\n");
        return 1;
    }
    memcpy(&hex, &sym, sizeof hex);
    printf("dlopen()ed library %#x, header %#x\n", hex(), (unsigned)CUCTX_VERSION_HEX);
    return hex() == CUCTX_VERSION_HEX ? 0 : 1;
}
PROG
# In a sanitizer build the program links the sanitizers' runtime too, which
# must come first in a process that loads an instrumented library.
# shellcheck disable=SC2086  # CUDA_CPPFLAGS and CUCTX_SAN_CFLAGS are word lists
if ! $CC ${CUCTX_SAN_CFLAGS:-} -I"$src/include" -I"$build/include" ${CUDA_CPPFLAGS:-} -o "$work/dl" "$work/dl.c" -ldl > "$work/out" 2>&1; then
    echo "ok 4 # SKIP cannot build the dlopen program with $CC"
    sed 's/^/# /' "$work/out"
elif "$work/dl" "$lib" > "$work/out" 2>&1; then
    echo "ok 4 - a program that does not link cuctx dlopen()s it (initial-exec TLS: $((${tls:-0})) bytes): $(cat "$work/out")"
else
    failed=1
    echo "not ok 4 - a program that does not link cuctx dlopen()s it (initial-exec TLS: $((${tls:-0})) bytes)"
    sed 's/^/# /' "$work/out"
fi
exit $failed
