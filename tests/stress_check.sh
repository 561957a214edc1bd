#!/bin/sh
# SPDX-License-Identifier: MIT
# stress_check.sh - a short run of tests/stress as one TAP test (make check):
# 20000 operations on 8 threads against whatever driver CUCTX_DRIVER names.
# STRESS_OPS, STRESS_THREADS and STRESS_SEED override; the seed is printed.
# Primary resets, the outside's primary retains, (nested) scopes, stream
# captures and stream-ordered memory are on by default; STRESS_RESETS,
# STRESS_OUTSIDE, STRESS_SCOPES, STRESS_NESTED, STRESS_CAPTURE and
# STRESS_ASYNC set to 0 turn them off (tests/stress reads them from the
# environment).
set -u
prog=${CUCTX_BUILDDIR:-.}/tests/stress
out=$(mktemp "${TMPDIR:-/tmp}/cuctx-stress.XXXXXX") || { echo "1..0 # SKIP cannot make a temporary file"; exit 0; }
trap 'rm -f "$out"' EXIT HUP INT TERM
echo "1..1"
to=
command -v timeout >/dev/null 2>&1 && to="timeout 600"
$to "$prog" "${STRESS_OPS:-20000}" "${STRESS_THREADS:-8}" ${STRESS_SEED:+"$STRESS_SEED"} > "$out" 2>&1
rc=$?
summary=$(grep '^stress: [0-9]* operations' "$out" | sed 's/^stress: //')
if [ $rc -eq 0 ]; then
    echo "ok 1 - stress: ${summary:-ran}"
else
    echo "not ok 1 - stress (exit $rc)"
fi
sed 's/^/# /' "$out"
exit $((rc != 0))
