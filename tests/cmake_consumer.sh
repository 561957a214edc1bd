#!/bin/sh
# SPDX-License-Identifier: MIT
# cmake_consumer.sh PREFIX VERSION - builds tests/cmake_consumer, a small CMake
# project, against the cuctx installed under PREFIX (find_package(cuctx),
# cuctx::cuctx) and runs it; then checks that the package refuses versions
# it does not satisfy (the next minor release, and the next major one).
# Ends with one line, "cmake consumer: ...", and exits 0 when all held, 1
# when not, 77 (skipped) without cmake.
#
# Run by make installcheck (and so by make distcheck) and by .ci/run after
# `make install prefix=...`. Environment: CMAKE (default: cmake),
# CUCTX_DRIVER (a driver for the program to load; ignored when that file is
# not there).
set -u
[ $# -eq 2 ] || { echo "usage: $0 PREFIX VERSION" >&2; exit 2; }
prefix=$(cd "$1" 2>/dev/null && pwd) || { echo "cmake consumer: FAILED: no directory $1"; exit 1; }
version=$2
here=$(cd "$(dirname "$0")" && pwd)
cmake=${CMAKE:-cmake}
if ! command -v "$cmake" >/dev/null 2>&1; then
    echo "cmake consumer: skipped: no cmake (Debian: apt-get install cmake, or tools/deps)"
    exit 77
fi
if [ ! -f "$prefix/lib/cmake/cuctx/cuctxConfig.cmake" ] && [ -z "$(find "$prefix" -path '*/cmake/cuctx/cuctxConfig.cmake' 2>/dev/null)" ]; then
    echo "cmake consumer: FAILED: no cmake/cuctx/cuctxConfig.cmake under $prefix"
    exit 1
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-cmake.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT HUP INT TERM

major=$(echo "$version" | cut -d. -f1)
minor=$(echo "$version" | cut -d. -f2)
series=$major.$minor
[ "$major" -eq 0 ] || series=$major

# configure DIR WANT: configures the project into DIR asking for WANT.
configure() {
    "$cmake" -S "$here/cmake_consumer" -B "$1" -DCMAKE_PREFIX_PATH="$prefix" -DCUCTX_WANT="$2" \
        -DCMAKE_BUILD_TYPE=Release > "$1.log" 2>&1
}

if ! configure "$work/ok" "$series"; then
    sed 's/^/  /' "$work/ok.log"
    echo "cmake consumer: FAILED: find_package(cuctx $series) did not find the package under $prefix"
    exit 1
fi
if ! "$cmake" --build "$work/ok" > "$work/build.log" 2>&1; then
    sed 's/^/  /' "$work/build.log"
    echo "cmake consumer: FAILED: the program did not build against cuctx::cuctx"
    exit 1
fi
[ -n "${CUCTX_DRIVER:-}" ] && [ ! -f "$CUCTX_DRIVER" ] && unset CUCTX_DRIVER
if ! out=$("$work/ok/consumer" 2>&1); then
    echo "$out" | sed 's/^/  /'
    echo "cmake consumer: FAILED: the program built against cuctx::cuctx failed"
    exit 1
fi
echo "  $out"

# Requests this installation must refuse.
if [ "$major" -eq 0 ]; then
    refused="0.$((minor + 1)) 1.0"
else
    refused="$major.$((minor + 1)) $((major + 1)).0"
fi
for want in $refused; do
    if configure "$work/no" "$want"; then
        echo "cmake consumer: FAILED: find_package(cuctx $want) accepted cuctx $version"
        exit 1
    fi
    grep -q "considered but not accepted" "$work/no.log" || {
        sed 's/^/  /' "$work/no.log"
        echo "cmake consumer: FAILED: find_package(cuctx $want) failed, but not on the version"
        exit 1
    }
    rm -rf "$work/no"
done
echo "cmake consumer: find_package(cuctx $series) found $version under $prefix, the program built with cuctx::cuctx ran; $(echo "$refused" | sed 's/ / and /') refused"
