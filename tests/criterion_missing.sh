#!/bin/sh
# SPDX-License-Identifier: MIT
# criterion_missing.sh - in make check's list in place of the Criterion test
# programs when configure did not find Criterion: one skipped test (TAP) that
# names them. The other tests of make check run as usual.
# Environment: CUCTX_CRITERION_PROGS (the programs left out).
# shellcheck disable=SC2086  # one word per program
set -- ${CUCTX_CRITERION_PROGS:-}
names=$(echo "$*" | sed 's|tests/||g; s/ /, /g')
echo "1..0 # SKIP Criterion >= 2.4 not found by configure: its $# test programs ($names) not built; install libcriterion-dev (or run tools/deps) and configure again"
