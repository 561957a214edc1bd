#!/bin/sh
# SPDX-License-Identifier: MIT
# process_demos.sh - runs the programs in tests/demo/ (TAP): a leak report at
# exit, a fork with live objects, handles destroyed after the driver shut
# down. Against whatever driver CUCTX_DRIVER names, so also on a GPU.
set -u
demo=${CUCTX_BUILDDIR:-.}/tests
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; sed 's/^/# /' "$2"; }
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
echo "1..3"

CUCTX_LEAK_CHECK=1 "$demo/demo_leak" > "$out" 2> "$err"; rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c '^cuctx: leak: ' "$err")" -eq 2 ] \
   && grep -q '^cuctx: leak: event .*, created at .*leak.c:[0-9]* in forget_two()$' "$err" \
   && grep -q '^cuctx: leak: stream .*, created at .*leak.c:[0-9]* in forget_two()$' "$err" \
   && grep -qx 'cuctx: 2 objects alive' "$err"; then
  ok "leak: two lines naming forget_two, then the count, exit 0"; sed 's/^/# /' "$err"
else
  not_ok "leak (exit $rc)" "$err"
fi

timeout 60 "$demo/demo_fork" > "$out" 2> "$err"; rc=$?
if [ $rc -eq 0 ] && [ ! -s "$err" ] && grep -q 'child exited: normally, status 0' "$out" \
   && grep -q 'record CUDA_SUCCESS, synchronize CUDA_SUCCESS' "$out"; then
  ok "fork: the child exits 0, the parent's objects still work"; sed 's/^/# /' "$out"
else
  cat "$err" >> "$out"; not_ok "fork (exit $rc)" "$out"
fi

if [ -x "$demo/demo_exit" ]; then
  "$demo/demo_exit" > "$out" 2> "$err"; rc=$?
  if [ $rc -eq 0 ] && [ ! -s "$err" ] && grep -q 'atexit handler: destroys returned CUDA_SUCCESS' "$out" \
     && grep -q 'static destructor: destroys returned CUDA_SUCCESS and CUDA_SUCCESS; shutdown skips so far 3' "$out"; then
    ok "exit: destroys after the driver shut down succeed, nothing printed"; sed 's/^/# /' "$out"
  else
    cat "$err" >> "$out"; not_ok "exit (exit $rc)" "$out"
  fi
else
  n=$((n + 1)); echo "ok $n - exit # SKIP no C++ compiler"
fi
exit $failed
