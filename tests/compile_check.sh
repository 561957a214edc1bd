#!/bin/sh
# compile_check.sh - the header's promises to compilers, as a TAP test.
#
#   - tests/compile/uses_every_macro.c (every macro and the API) builds with
#     zero warnings (-Wall -Wextra -Wpedantic -Werror) with gcc and clang at
#     C11, C17 and C23 (-std=c2x, the name gcc 12 and clang 14 know), each at
#     -O0 and -O2 (some warnings only appear with the optimiser's analyses);
#     as C++17 with g++ and clang++; with the configured $CC and $CXX; and as
#     the host code of a .cu file under nvcc when $NVCC is set;
#   - tests/compile/goto_into_scope.c, a goto into the scope of a CUCTX_AUTO
#     variable, is rejected by clang and by C++ (gcc accepts it in C).
#
# Environment (set by `make check`): CC, CXX, NVCC (may be empty),
# CUDA_CPPFLAGS, CUCTX_INCLUDE, CUCTX_SRCDIR. Nothing is linked.
# shellcheck disable=SC2086  # INC, WARN, CC and CXX are word lists on purpose
set -u

CUCTX_SRCDIR=${CUCTX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
CUCTX_INCLUDE=${CUCTX_INCLUDE:-$CUCTX_SRCDIR/include}
CUDA_CPPFLAGS=${CUDA_CPPFLAGS:-}
CC=${CC:-cc}
CXX=${CXX:-c++}
NVCC=${NVCC:-}

SRC=$CUCTX_SRCDIR/tests/compile/uses_every_macro.c
GOTO=$CUCTX_SRCDIR/tests/compile/goto_into_scope.c
INC="-I$CUCTX_INCLUDE $CUDA_CPPFLAGS"
WARN="-Wall -Wextra -Wpedantic -Werror"

work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-compile.XXXXXX") || { echo "1..0 # SKIP cannot make a temporary directory"; exit 0; }
trap 'rm -rf "$work"' EXIT HUP INT TERM

n=0
failed=0

# The compiler's own output, as TAP diagnostics.
diag() {
    sed -e "s/^/# /" -e "40q" "$work/out"
}

ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

not_ok() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
    diag
}

skip() {
    n=$((n + 1))
    echo "ok $n - $1 # SKIP $2"
}

have() {
    command -v "$1" >/dev/null 2>&1
}

# expect_clean DESCRIPTION COMMAND...: ok when the command succeeds and
# prints nothing (a warning that is not an error still counts against it).
expect_clean() {
    what=$1
    shift
    if "$@" >"$work/out" 2>&1 && ! [ -s "$work/out" ]; then
        ok "$what"
    else
        not_ok "$what"
    fi
}

echo "1..19"

for cc in gcc clang; do
    for std in c11 c17 c2x; do
        for opt in -O0 -O2; do
            what="uses_every_macro.c: $cc -std=$std $opt has no warnings"
            if have "$cc"; then
                expect_clean "$what" "$cc" -std=$std $opt $WARN $INC -c "$SRC" -o "$work/x.o"
            else
                skip "$what" "no $cc"
            fi
        done
    done
done

for cxx in g++ clang++; do
    what="uses_every_macro.c: $cxx -x c++ -std=c++17 -O2 has no warnings"
    if have "$cxx"; then
        expect_clean "$what" "$cxx" -x c++ -std=c++17 -O2 $WARN $INC -c "$SRC" -o "$work/x.o"
    else
        skip "$what" "no $cxx"
    fi
done

# The configured compilers, with their own default standard.
set -- $CC
if have "$1"; then
    expect_clean "uses_every_macro.c: CC ($CC) -O2 has no warnings" $CC -O2 $WARN $INC -c "$SRC" -o "$work/x.o"
else
    skip "uses_every_macro.c: CC ($CC) -O2 has no warnings" "CC not found"
fi
set -- $CXX
if have "$1"; then
    expect_clean "uses_every_macro.c: CXX ($CXX) -x c++ -O2 has no warnings" $CXX -x c++ -O2 $WARN $INC -c "$SRC" -o "$work/x.o"
else
    skip "uses_every_macro.c: CXX ($CXX) -x c++ -O2 has no warnings" "CXX not found"
fi

what="uses_every_macro.c as the host code of a .cu file: nvcc has no warnings"
if [ -n "$NVCC" ] && have "$NVCC"; then
    cp "$SRC" "$work/x.cu"
    expect_clean "$what" "$NVCC" -c $INC --Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror \
        "$work/x.cu" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi

# expect_jump_error DESCRIPTION COMMAND...: ok when the compile fails and
# the error is about the jump (not, say, a missing header).
expect_jump_error() {
    what=$1
    shift
    if "$@" >"$work/out" 2>&1; then
        echo "compiled, but must not" >>"$work/out"
        not_ok "$what"
    elif grep -i 'jump' "$work/out" >/dev/null; then
        ok "$what"
    else
        not_ok "$what"
    fi
}

what="goto_into_scope.c: clang rejects a goto into a CUCTX_AUTO scope"
if have clang; then
    expect_jump_error "$what" clang -std=c11 $INC -fsyntax-only "$GOTO"
else
    skip "$what" "no clang"
fi

what="goto_into_scope.c: C++ ($CXX) rejects a goto into a CUCTX_AUTO scope"
set -- $CXX
if have "$1"; then
    expect_jump_error "$what" $CXX -x c++ $INC -fsyntax-only "$GOTO"
else
    skip "$what" "CXX not found"
fi

[ "$n" -eq 19 ] || echo "# the plan said 19 checks but $n ran"
exit $((failed > 0))
