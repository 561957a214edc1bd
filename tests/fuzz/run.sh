#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh SECONDS [BUILDDIR]
#
# Builds cuctx (lib/*.c), the simulated driver (tests/sim/*.c, as a
# shared library) and the libFuzzer harness tests/fuzz/fuzz_api.c directly
# with clang - no autotools needed - then fuzzes for SECONDS seconds from a
# copy of the seed corpus tests/fuzz/corpus (the tree is never written).
# Ends with one line:
#     fuzz executions: N in S s, 0 crashes
# and exits 0; on a crash, a model mismatch, a sanitizer report or a
# timeout it prints the fuzzer's report, the failing input in hex (and a
# minimized one), and exits 1.
#
# BUILDDIR: where the objects go and stay (default: a temporary directory,
# removed afterwards). If it holds a config.h (a directory configured with
# ../configure), that one is used; otherwise a minimal config.h is written.
#
# Environment: CC (default clang, which must support -fsanitize=fuzzer:
# Debian's clang and libclang-rt-dev), CUDA_HOME or CUDA_PATH (default
# /usr/local/cuda, for cuda.h), CUCTX_FUZZ_ARGS (more libFuzzer options),
# CUCTX_FUZZ_MINIMIZE_S (seconds spent minimizing a crash, default 30; 0:
# none), CUCTX_FUZZ_KEEP=1 (keep the temporary directory),
# CUCTX_FUZZ_BUILD_ONLY=1 (build into BUILDDIR and stop: a later run with
# the same BUILDDIR recompiles nothing unchanged and fuzzes at once).
#
# To replay one input: CUCTX_FUZZ_SIM=BUILDDIR/libcudasim.so BUILDDIR/fuzz_api FILE
# (CUCTX_FUZZ_TRACE=1 prints the operations each input ran).
set -euo pipefail

usage() { echo "usage: $0 SECONDS [BUILDDIR]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
secs=$1
case $secs in ''|*[!0-9]*|0) usage ;; esac   # 0 would mean "forever" to libFuzzer

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
CC=${CC:-clang}

work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-fuzz.XXXXXX")
cleanup() { if [ "${CUCTX_FUZZ_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT

if [ $# -ge 2 ]; then
  mkdir -p "$2"
  B=$(cd "$2" && pwd)
else
  B=$work/build
  mkdir -p "$B"
fi

cuda_inc=
for d in ${CUDA_HOME:-} ${CUDA_PATH:-} /usr/local/cuda; do
  if [ -f "$d/include/cuda.h" ] && [ -f "$d/include/cudaTypedefs.h" ]; then cuda_inc=$d/include; break; fi
done
[ -n "$cuda_inc" ] || { echo "run.sh: no cuda.h and cudaTypedefs.h (set CUDA_HOME)" >&2; exit 2; }

# config.h: a configured build directory's, or the little the library uses
# (rewritten only when it changes, so that a kept BUILDDIR is not rebuilt).
if [ -f "$B/config.h" ]; then
  cfg=$B
else
  cfg=$B/fuzz-config
  mkdir -p "$cfg"
  {
    echo '/* written by tests/fuzz/run.sh */'
    echo '#ifndef _GNU_SOURCE'
    echo '# define _GNU_SOURCE 1'
    echo '#endif'
    printf '#define _GNU_SOURCE 1\n#include <stdlib.h>\nint main(void) { return secure_getenv("X") != 0; }\n' > "$work/sg.c"
    if "$CC" -Werror=implicit-function-declaration "$work/sg.c" -o "$work/sg" >/dev/null 2>&1; then
      echo '#define HAVE_SECURE_GETENV 1'
    fi
  } > "$work/config.h"
  cmp -s "$work/config.h" "$cfg/config.h" || cp "$work/config.h" "$cfg/config.h"
fi
# cuctx_version.h (included by cuctx.h): a configured build directory's, or
# one made here from configure.ac's version, as configure would.
if [ -f "$B/include/cuctx_version.h" ]; then
  cp "$B/include/cuctx_version.h" "$work/cuctx_version.h"
else
  ver=$(sed -n 's/^AC_INIT(\[cuctx\], \[\([0-9.]*\)\].*/\1/p' "$src/configure.ac")
  sed -e "s/@CUCTX_VERSION_MAJOR@/$(echo "$ver" | cut -d. -f1)/" -e "s/@CUCTX_VERSION_MINOR@/$(echo "$ver" | cut -d. -f2)/" \
    -e "s/@CUCTX_VERSION_PATCH@/$(echo "$ver" | cut -d. -f3)/" -e "s/@PACKAGE_VERSION@/$ver/" \
    "$src/include/cuctx_version.h.in" > "$work/cuctx_version.h"
fi
cmp -s "$work/cuctx_version.h" "$cfg/cuctx_version.h" || cp "$work/cuctx_version.h" "$cfg/cuctx_version.h"

# Does this clang have libFuzzer?
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' > "$work/probe.c"
if ! "$CC" -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" >/dev/null 2>&1; then
  echo "run.sh: $CC cannot build with -fsanitize=fuzzer (Debian: apt-get install clang libclang-rt-dev)" >&2
  exit 2
fi

san="-fsanitize=address,undefined -fno-sanitize-recover=all"
common="-std=gnu11 -g -O1 -fno-omit-frame-pointer -I$cuda_inc -I$src/include -I$cfg"

echo "run.sh: building in $B" >&2
jobs=$(nproc 2>/dev/null || echo 2)
# build OUT SRC DEPS... -- COMMAND...: runs COMMAND unless OUT is newer than SRC and DEPS
pids=()
build() {
  local out=$1 dep stale=0
  shift
  while [ "$1" != -- ]; do
    if [ ! -e "$out" ] || [ "$1" -nt "$out" ]; then stale=1; fi
    shift
  done
  shift
  [ $stale = 1 ] || return 0
  "$@" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || build_failed=1
    pids=("${pids[@]:1}")
  fi
}
build_failed=0
objs=()
hdrs=("$src"/lib/*.h "$src/include/cuctx.h" "$cfg/config.h" "$cfg/cuctx_version.h" "$0")
for f in "$src"/lib/*.c; do
  o=$B/lib_$(basename "$f" .c).o
  build "$o" "$f" "${hdrs[@]}" -- "$CC" $common $san -fsanitize=fuzzer-no-link -DCUCTX_BUILDING \
    -fvisibility=hidden -I"$src/lib" -I"$cfg" -c "$f" -o "$o"
  objs+=("$o")
done
build "$B/libcudasim.so" "$src"/tests/sim/*.c "$src"/tests/sim/*.h "$0" -- \
  "$CC" $common $san -fPIC -shared -fvisibility=hidden -I"$src/tests/sim" \
  "$src"/tests/sim/*.c -o "$B/libcudasim.so" -lpthread
build "$B/fuzz_api.o" "$here/fuzz_api.c" "$src/include/cuctx.h" "$src/tests/sim/cudasim.h" "$here/../kinds.h" "$0" -- \
  "$CC" $common $san -fsanitize=fuzzer-no-link -I"$src/tests/sim" -c "$here/fuzz_api.c" -o "$B/fuzz_api.o"
for p in "${pids[@]}"; do wait "$p" || build_failed=1; done
[ $build_failed = 0 ] || { echo "run.sh: the build failed" >&2; exit 2; }
"$CC" $common $san -fsanitize=fuzzer "$B/fuzz_api.o" "${objs[@]}" -o "$B/fuzz_api" -ldl -lpthread
if [ "${CUCTX_FUZZ_BUILD_ONLY:-0}" = 1 ]; then echo "run.sh: built $B/fuzz_api" >&2; exit 0; fi

# The seeds, copied: libFuzzer adds what it finds to its corpus directory.
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$here/corpus" ]; then cp "$here"/corpus/* "$work/corpus/" 2>/dev/null || true; fi

export CUCTX_FUZZ_SIM=$B/libcudasim.so
# The simulator's line at cuInit says nothing a fuzzing run needs.
export CUCTX_TESTDRIVER_QUIET=1
export TMPDIR=$work     # the harness's module file goes there
log=$work/fuzz.log
start=$(date +%s)
set +e
# shellcheck disable=SC2086
"$B/fuzz_api" -max_total_time="$secs" -print_final_stats=1 -max_len=768 -timeout=20 \
  -rss_limit_mb=4096 -artifact_prefix="$work/artifacts/" ${CUCTX_FUZZ_ARGS:-} \
  "$work/corpus" > "$log" 2>&1
rc=$?
set -e
end=$(date +%s)

execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
crashes=$(find "$work/artifacts" -type f | wc -l)
if [ $rc -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
if [ -z "$execs" ]; then
  # a crash ends the run before the final stats: the last status line says how far it got
  execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -1)
fi

if [ $rc -ne 0 ] || [ "$crashes" -ne 0 ]; then
  echo "---- fuzzer output (tail)"
  tail -n 120 "$log"
  for a in "$work"/artifacts/*; do
    [ -f "$a" ] || continue
    echo "---- failing input $(basename "$a") ($(wc -c < "$a") bytes), hex:"
    od -An -v -tx1 "$a" | tr -d ' \n'; echo
    m=${CUCTX_FUZZ_MINIMIZE_S:-30}
    if [ "$m" -gt 0 ]; then
      "$B/fuzz_api" -minimize_crash=1 -max_total_time="$m" -exact_artifact_path="$work/minimized" "$a" \
        > "$work/minimize.log" 2>&1 || true
      if [ -f "$work/minimized" ]; then
        echo "---- minimized ($(wc -c < "$work/minimized") bytes), hex:"
        od -An -v -tx1 "$work/minimized" | tr -d ' \n'; echo
        echo "---- replay: CUCTX_FUZZ_SIM=$B/libcudasim.so $B/fuzz_api FILE"
      fi
    fi
    break
  done
  echo "fuzz executions: ${execs:-0} in $((end - start)) s, $crashes crash$([ "$crashes" -eq 1 ] || echo es)"
  exit 1
fi
echo "fuzz executions: ${execs:-0} in $((end - start)) s, 0 crashes"
