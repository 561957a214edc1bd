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

echo "1..10"

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
# raw_calls makes driver calls of its own, linked with -lcuda. On the
# simulator it runs as a user's program does on the installed test driver:
# LD_LIBRARY_PATH names the directory of the test driver built here (its
# libcuda.so.1), and CUCTX_DRIVER is unset, so cuctx opens libcuda.so.1 too.
# In make check-gpu it runs on the real driver.
if [ -x "$ex/raw_calls" ]; then
  if [ -n "${CUCTX_DRIVER:-}" ] && [ "${CUCTX_DRIVER#*libcudasim}" != "$CUCTX_DRIVER" ]; then
    env -u CUCTX_DRIVER LD_LIBRARY_PATH="${CUCTX_TESTDRIVER_DIR:?}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      timeout 120 "$ex/raw_calls" > "$out" 2> "$err"; rc=$?
    kernel_line="raw_calls: kernels run nothing on the cuctx test driver: y kept the memset's value in 5000 of 5000 places"
    device_line="raw_calls: device 0 is cuctx test driver"
  else
    run raw_calls; rc=$?
    kernel_line="raw_calls: kernel: 5000 of 5000 values of y are 2 * x + 1"
    device_line="raw_calls: device 0 is "
  fi
  verdict "raw_calls: the program's own copies and launch, linked with -lcuda, on cuctx's memory and stream" $rc \
    "$device_line" \
    "raw_calls: round trip: 5000 of 5000 values of x came back as written" \
    "$kernel_line" \
    "raw_calls: every check passed"
else
  n=$((n + 1)); echo "ok $n - raw_calls # SKIP not built (configure found no stub libcuda.so in the CUDA toolkit)"
fi
run graph_capture; verdict "graph_capture: a capture kept at its block's end, one abandoned by a return, the graph launched" $? \
  "graph_capture: captured a graph of 22 nodes (a memset, 20 kernels, a copy)" \
  "graph_capture: a capture left by return -2: graph not kept, the stream no longer capturing" \
  "graph_capture: every check passed"

run library; verdict "library: one library's kernel in two contexts, a broken PTX's JIT log in the lookup's message" $? \
  "library: a PTX that does not assemble: load CUDA_SUCCESS, kernel lookup CUDA_ERROR_INVALID_PTX" \
  "library: the lookup's message: cuctx_library_kernel: cuLibraryGetKernel(\"broken\") failed: CUDA_ERROR_INVALID_PTX; the JIT log of the library's load: " \
  "library: every check passed"

# On the simulator the program also reports what the simulated driver saw:
# the destroyed stream's work unfinished at the frees, and no misuse.
run async_memory; rc=$?
if [ -n "${CUCTX_DRIVER:-}" ] && [ "${CUCTX_DRIVER#*libcudasim}" != "$CUCTX_DRIVER" ]; then
  y="y kept the memset's value"
  sim_line="async_memory: the simulated driver recorded 0 misuses"
  orphan_line="async_memory: the simulated driver: work of 1 destroyed blocking stream unfinished at the frees"
  orphan_line2="async_memory: the simulated driver: work of 0 destroyed non-blocking stream unfinished at the frees"
else
  y="y = 2x + 1"
  sim_line="async_memory: at the end: "
  orphan_line="async_memory: a non-blocking stream destroyed"
  orphan_line2="async_memory: a blocking stream destroyed"
fi
verdict "async_memory: buffers allocated and freed on three streams, an early return, a pool destroyed under its memory, streams destroyed before their memory" $rc \
  "async_memory: lane B (non-blocking stream, the device's pool): left by return at batch 4 of 8, as an error path; async_mems after it: 0" \
  "async_memory: lane A: $y in 8 of 8 batches" \
  "async_memory: lane B: $y in 4 of 4 batches; the 4 batches from the return on never ran: 4 untouched" \
  "async_memory: lane C: $y in 8 of 8 batches" \
  "async_memory: lane C's pool destroyed with an allocation from it alive: CUDA_SUCCESS, then mem_pools 0, async_mems 1; the allocation used after it: CUDA_SUCCESS, y right, freed CUDA_SUCCESS" \
  "async_memory: a blocking stream destroyed with 50 kernels queued, before its 2 allocations: stream destroy CUDA_SUCCESS, frees CUDA_SUCCESS and CUDA_SUCCESS, new memory written at once on another stream CUDA_SUCCESS; y right" \
  "async_memory: a non-blocking stream destroyed with 50 kernels queued, before its 2 allocations: stream destroy CUDA_SUCCESS, frees CUDA_SUCCESS and CUDA_SUCCESS, new memory written at once on another stream CUDA_SUCCESS; y right" \
  "async_memory: 2000 allocations of 4096 bytes and their frees: stream-ordered " \
  "async_memory: at the end: mems 0, async_mems 0, mem_pools 0; 0 failed destroys" \
  "$orphan_line" \
  "$orphan_line2" \
  "$sim_line" \
  "async_memory: every check passed"

# Green contexts (CUDA 12.4+); 77: the device or driver has none. On the
# simulator the timings mean nothing and kernels run nothing: it checks the
# destroys and the memory, and what the simulated driver saw.
run green_contexts; rc=$?
if [ "$rc" -eq 77 ]; then
  n=$((n + 1)); echo "ok $n - green_contexts # SKIP $(tail -n 1 "$out")"
else
  if [ -n "${CUCTX_DRIVER:-}" ] && [ "${CUCTX_DRIVER#*libcudasim}" != "$CUCTX_DRIVER" ]; then
    kernel_line="green_contexts: kernels run nothing on the cuctx test driver: y kept the memset's value"
    sim_line="green_contexts: the simulated driver recorded 0 misuses and 0 leaked streams"
  else
    kernel_line="green_contexts: the 16-SM partition is the slower, as it should be; the two ran side by side"
    sim_line="green_contexts: y right in 64 of 64 samples of each launch"
  fi
  verdict "green_contexts: two partitions of one GPU timed alone and at once; a green context destroyed before its children" $rc \
    "green_contexts: alone: " \
    "$kernel_line" \
    "green_contexts: wrong order: the green context destroyed before its children: CUDA_SUCCESS; its stream destroyed first, by that destroy (its handle lives on: its destroy is to come, and a skip)" \
    "green_contexts: wrong order: after it the buffer's free CUDA_SUCCESS, then the stream-ordered memory, graph exec, graph, event, host memory and module freed CUDA_SUCCESS; 1 destroy skipped (the stream's), 0 failed" \
    "(the buffer is the primary's: still there)" \
    "after its free: freed, not leaked" \
    "the event's destroy CUDA_SUCCESS, skipped (1 skip): it went with the primary" \
    "green_contexts: at the end: 0 contexts, 0 green, 0 context handles, 0 events, 0 streams, 0 modules, 0 device allocations, 0 host allocations, 0 graph execs, 0 stream-ordered; 0 failed destroys" \
    "$sim_line" \
    "green_contexts: every check passed"
fi

exit $failed
