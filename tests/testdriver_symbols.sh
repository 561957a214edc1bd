#!/bin/sh
# SPDX-License-Identifier: MIT
# testdriver_symbols.sh - the test driver built here (TAP): its directory
# (CUCTX_TESTDRIVER_DIR) holds libcuda.so.1, whose soname is libcuda.so.1,
# and libcuda.so; and it defines every function the CUDA toolkit's stub
# libcuda.so exports (CUCTX_CUDA_DIR), so that no program linked against the
# real driver's symbols is stopped by the loader. A symbol missing means
# tests/sim/stubs.c is out of date: run tools/testdriver-stubs. The second
# test skips without nm, readelf or the toolkit's stub.
set -u
dir=${CUCTX_TESTDRIVER_DIR:?}
echo "1..2"
if [ -f "$dir/libcuda.so.1" ] && [ -e "$dir/libcuda.so" ] &&
   { ! command -v readelf > /dev/null || readelf -d "$dir/libcuda.so.1" | grep -q 'SONAME.*\[libcuda\.so\.1\]'; }; then
  echo "ok 1 - $dir holds libcuda.so.1 (soname libcuda.so.1) and libcuda.so"
else
  echo "not ok 1 - $dir lacks libcuda.so.1 or libcuda.so, or the soname is not libcuda.so.1"; exit 1
fi
stub=
for d in lib64 lib; do
  [ -z "$stub" ] && [ -f "${CUCTX_CUDA_DIR:-/nonexistent}/$d/stubs/libcuda.so" ] && stub=$CUCTX_CUDA_DIR/$d/stubs/libcuda.so
done
if [ -z "$stub" ] || ! command -v nm > /dev/null; then
  echo "ok 2 - every symbol of the toolkit's stub libcuda.so # SKIP no stub libcuda.so in the toolkit, or no nm"; exit 0
fi
want=$(mktemp) have=$(mktemp)
trap 'rm -f "$want" "$have"' EXIT
nm -D --defined-only "$stub" | awk '$2 == "T" { print $3 }' | LC_ALL=C sort -u > "$want"
nm -D --defined-only "$dir/libcuda.so.1" | awk '$2 == "T" { print $3 }' | LC_ALL=C sort -u > "$have"
missing=$(LC_ALL=C comm -23 "$want" "$have")
if [ -z "$missing" ]; then
  echo "ok 2 - all $(wc -l < "$want") functions of $stub are defined by the test driver"
else
  echo "not ok 2 - $(echo "$missing" | wc -l) functions of $stub are missing from the test driver (run tools/testdriver-stubs):"
  echo "$missing" | head -20 | sed 's/^/# /'
  exit 1
fi
