#!/bin/sh
# SPDX-License-Identifier: MIT
# testdriver_installcheck.sh LIBDIR TESTDRIVERDIR RAW_CALLS_C - run by make
# installcheck (and so by make distcheck): a program with driver calls of
# its own (examples/raw_calls.c) built as a user builds one against the
# installed cuctx and its test driver,
#     cc raw_calls.c $(pkg-config --cflags --libs cuctx) -L"$dir" -lcuda
# with dir=$(pkg-config --variable=testdriverdir cuctx), and run with
# LD_LIBRARY_PATH="$dir" and no CUCTX_DRIVER: its own calls and cuctx's reach
# the one test driver, its data checks pass, and the test driver says once
# on stderr what it is (and nothing with CUCTX_TESTDRIVER_QUIET=1). Also:
# the directory holds libcuda.so.1 and libcuda.so and is not LIBDIR.
# Ends with one line, "testdriver installcheck: ..."; exits 0 when all held.
# Environment: CC (default cc), PKG_CONFIG (default pkg-config).
set -u
[ $# -eq 3 ] || { echo "usage: $0 LIBDIR TESTDRIVERDIR RAW_CALLS_C" >&2; exit 2; }
libdir=$1 want_dir=$2 src=$3
cc=${CC:-cc}
pkgconfig=${PKG_CONFIG:-pkg-config}
fail() { echo "testdriver installcheck: FAILED: $*"; exit 1; }

PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
dir=$($pkgconfig --variable=testdriverdir cuctx) || fail "pkg-config knows no cuctx under $libdir/pkgconfig"
[ "$dir" = "$want_dir" ] || fail "pkg-config's testdriverdir is '$dir', the installation's is '$want_dir'"
[ "$dir" != "$libdir" ] || fail "the test driver is in the library directory $libdir"
for f in libcuda.so.1 libcuda.so; do
    [ -e "$dir/$f" ] || fail "no $f in $dir"
done
work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-testdriver.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT HUP INT TERM

# shellcheck disable=SC2046  # pkg-config's flags, split on purpose
if ! $cc -o "$work/raw_calls" "$src" $($pkgconfig --cflags --libs cuctx) -L"$dir" -lcuda \
        -Wl,-rpath,"$libdir" > "$work/build.log" 2>&1; then
    sed 's/^/  /' "$work/build.log"
    fail "examples/raw_calls.c did not build against the installed cuctx and test driver"
fi
run() {
    env -u CUCTX_DRIVER "$@" LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$work/raw_calls" > "$work/out" 2> "$work/err"
}
run -u CUCTX_TESTDRIVER_QUIET; rc=$?
if [ $rc -ne 0 ] || ! grep -q '^raw_calls: every check passed$' "$work/out"; then
    sed 's/^/  /' "$work/out" "$work/err"
    fail "raw_calls on the installed test driver: exit $rc"
fi
grep -q '^raw_calls: device 0 is cuctx test driver' "$work/out" || fail "raw_calls did not run on the test driver"
said=$(grep -c '^cuctx test driver: ' "$work/err")
[ "$said" -eq 1 ] || { sed 's/^/  /' "$work/err"; fail "the test driver said what it is $said times on stderr, not once"; }
run CUCTX_TESTDRIVER_QUIET=1; rc=$?
[ $rc -eq 0 ] || fail "raw_calls with CUCTX_TESTDRIVER_QUIET=1: exit $rc"
[ ! -s "$work/err" ] || { sed 's/^/  /' "$work/err"; fail "stderr not empty with CUCTX_TESTDRIVER_QUIET=1"; }
sed 's/^/  /' "$work/out"
echo "testdriver installcheck: raw_calls built with -L$dir -lcuda ran on the installed test driver: every check passed; the line on stderr once, none when quiet"
