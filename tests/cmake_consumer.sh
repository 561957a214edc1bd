#!/bin/sh
# SPDX-License-Identifier: MIT
# cmake_consumer.sh PREFIX VERSION - builds tests/cmake_consumer, a small CMake
# project, against the cuctx installed under PREFIX (find_package(cuctx),
# cuctx::cuctx) and runs it; then checks that the package refuses versions
# it does not satisfy (the next minor release, and the next major one).
# Then, given the build tree (CUCTX_BUILDDIR), installs it again into a
# prefix of its own, moves that tree to another directory (the first one is
# gone) and builds and runs the program there, with cuctx::cuctx and, where
# the static library was installed, with cuctx::cuctx_static.
# Ends with one line, "cmake consumer: ...", and exits 0 when all held, 1
# when not, 77 (skipped) without cmake.
#
# Run by make installcheck (and so by make distcheck) and by .ci/run after
# `make install prefix=...`. Environment: CMAKE (default: cmake),
# CUCTX_DRIVER (a driver for the program to load; ignored when that file is
# not there), CUCTX_BUILDDIR (the configured and built tree that installed
# PREFIX; without it the moved installation is not tried), MAKE.
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

# configure DIR WANT [PREFIX [ARG...]]: configures the project into DIR asking
# for WANT, against the installation in PREFIX (default: the one given).
configure() {
    dir=$1 want=$2 at=$prefix
    shift 2
    if [ $# -gt 0 ]; then at=$1; shift; fi
    "$cmake" -S "$here/cmake_consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$at" -DCUCTX_WANT="$want" \
        -DCMAKE_BUILD_TYPE=Release "$@" > "$dir.log" 2>&1
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

# build_and_run DIR PREFIX WHAT [ARG...]: configures, builds and runs the
# program against PREFIX, WHAT naming the target in messages.
build_and_run() {
    dir=$1 at=$2 what=$3; shift 3
    if ! configure "$dir" "$series" "$at" "$@"; then
        sed 's/^/  /' "$dir.log"
        echo "cmake consumer: FAILED: find_package(cuctx $series) did not find the package under $at ($what)"
        exit 1
    fi
    if ! "$cmake" --build "$dir" > "$dir.build.log" 2>&1; then
        sed 's/^/  /' "$dir.build.log"
        echo "cmake consumer: FAILED: the program did not build against $what under $at"
        exit 1
    fi
    if ! out=$("$dir/consumer" 2>&1); then
        echo "$out" | sed 's/^/  /'
        echo "cmake consumer: FAILED: the program built against $what under $at failed"
        exit 1
    fi
    echo "  $what under $at: $out"
}

# The installation moved: installed into one prefix, the tree moved to another.
moved="not tried (no CUCTX_BUILDDIR)"
if [ -n "${CUCTX_BUILDDIR:-}" ]; then
    first=$work/first
    if ! "${MAKE:-make}" -C "$CUCTX_BUILDDIR" install prefix="$first" > "$work/install.log" 2>&1; then
        tail -n 30 "$work/install.log" | sed 's/^/  /'
        echo "cmake consumer: FAILED: make install prefix=$first in $CUCTX_BUILDDIR"
        exit 1
    fi
    mv "$first" "$work/moved" || exit 1
    build_and_run "$work/moved-shared" "$work/moved" cuctx::cuctx
    moved="installed in $first, moved to $work/moved: built and ran with cuctx::cuctx"
    if [ -n "$(find "$work/moved" -name libcuctx.a 2>/dev/null)" ]; then
        build_and_run "$work/moved-static" "$work/moved" cuctx::cuctx_static -DCUCTX_STATIC=ON
        if readelf -d "$work/moved-static/consumer" 2>/dev/null | grep -q 'NEEDED.*libcuctx'; then
            echo "cmake consumer: FAILED: the program linked with cuctx::cuctx_static needs libcuctx.so"
            exit 1
        fi
        moved="$moved and cuctx::cuctx_static"
    else
        moved="$moved (no static library installed: cuctx::cuctx_static not tried)"
    fi
fi
echo "cmake consumer: find_package(cuctx $series) found $version under $prefix, the program built with cuctx::cuctx ran; $(echo "$refused" | sed 's/ / and /') refused; $moved"
