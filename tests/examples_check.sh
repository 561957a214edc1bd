#!/bin/sh
# SPDX-License-Identifier: MIT
# examples_check.sh - runs the examples that launch no kernel (TAP) against
# whatever driver CUCTX_DRIVER names: the simulator in make check, the real
# driver in make check-gpu. Each must exit 0 and print its key lines; the
# examples check their own steps and exit 1 when one went wrong, so the lines
# looked for here are the verdicts and the figures that back them.
set -u
ex=${CUCTX_BUILDDIR:-.}/examples
n=0 failed=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# run NAME: runs examples/NAME, leaving stdout in $out and stderr in $err.
run() {
  timeout 120 "$ex/$1" > "$out" 2> "$err"
}

# verdict NAME EXIT PATTERN...: ok if EXIT is 0, stderr is empty and every
# fixed string appears as a line (or part of one) of stdout.
verdict() {
  name=$1 rc=$2; shift 2
  missing=
  for want in "$@"; do
    grep -qF -- "$want" "$out" || missing="$missing [$want]"
  done
  n=$((n + 1))
  if [ "$rc" -eq 0 ] && [ ! -s "$err" ] && [ -z "$missing" ]; then
    echo "ok $n - $name"
    sed 's/^/# /' "$out"
  else
    failed=1
    echo "not ok $n - $name (exit $rc${missing:+, missing:$missing})"
    sed 's/^/# /' "$out" "$err"
  fi
}

echo "1..5"

run quickstart; verdict "quickstart: a scope, four objects, none current again after it" $? \
  "inside CUCTX_SCOPED: current context is ours" \
  "after the scope: current context is none again" \
  "live now: 1 context handle(s), 0 events, 0 streams, 0 allocations"

run scoped_switch; verdict "scoped_switch: the previous context is back after every way out of a scope" $? \
  "after B's scope ended: A is back" \
  "in A's scope, after the function returned from B's" \
  "make_events_in(B, 3) returned CUDA_SUCCESS" \
  "the loop ran 2 of 2 iterations to the end" \
  "after the guarded block ended: A is back" \
  "15 checks, 0 wrong"

run ownership; verdict "ownership: moves, a struct's close, a destroy on another thread, nothing alive at the end" $? \
  "ok: the failed call handed nothing out" \
  "ok: and the stream it had made before the failure was destroyed" \
  "ok: batch_close destroyed all four" \
  "recording the stale copy here: CUDA_ERROR_INVALID_HANDLE" \
  "alive: 0 contexts, 0 context handles, 0 events, 0 streams, 0 modules, 0 device allocations, 0 host allocations, 0 graph execs; 0 failed destroys, 0 stale skips" \
  "ownership: every check passed"

run hazards; rc=$?
# On the simulator the program also reports the misuses that reached the
# driver (there must be none); the real driver has no such count.
if [ -n "${CUCTX_DRIVER:-}" ] && [ "${CUCTX_DRIVER#*libcudasim}" != "$CUCTX_DRIVER" ]; then
  sim_line="the simulated driver recorded 0 misuses"
else
  sim_line="hazards: all handled"
fi
verdict "hazards: each crash or corruption of the raw driver handled" $rc \
  "1. a stream destroyed after its context" \
  "cuctx_stream_destroy returned CUDA_SUCCESS; the destroy was skipped (1 skip)" \
  "the stale destroy returned CUDA_SUCCESS and was skipped; B's memset CUDA_SUCCESS, B's own free CUDA_SUCCESS" \
  "through a stale copy CUDA_ERROR_INVALID_HANDLE" \
  "CUCTX_SCOPED on a stale copy: CUDA_ERROR_INVALID_HANDLE, block skipped" \
  "CUCTX_SCOPED on a borrowed context its owner destroyed: CUDA_ERROR_CONTEXT_IS_DESTROYED" \
  "5 of 5 hazards handled" \
  "$sim_line" \
  "hazards: all handled"

if [ -x "$ex/cxx_scopes" ]; then
  run cxx_scopes; verdict "cxx_scopes: an exception out of a scope, handles in a vector, a destroy on a std::thread" $? \
    "ok: the context current before the scope (none) is back" \
    "ok: the stream and the event were destroyed" \
    "ok: the copy left here is refused" \
    "cxx_scopes: every check passed"
else
  n=$((n + 1)); echo "ok $n - cxx_scopes # SKIP not built"
fi
exit $failed
