#!/bin/sh
# SPDX-License-Identifier: MIT
# compile_check.sh - the header's promises to compilers, as a TAP test.
#
#   - tests/compile/uses_every_macro.c (every macro and the API) builds with
#     zero warnings (-Wall -Wextra -Wpedantic -Werror, and for gcc's C
#     -Wjump-misses-init, which cuctx(3), rule 6, tells users to turn on) with gcc and clang at
#     C11, C17 and C23 (-std=c2x, the name gcc 12 and clang 14 know), each at
#     -O0 and -O2 (some warnings only appear with the optimiser's analyses);
#     as C++17 with g++ and clang++; with the configured $CC and $CXX; and as
#     the host code of a .cu file under nvcc when $NVCC is set;
#   - the complete example in the header's opening comment, cut out of
#     include/cuctx.h as it stands, builds with zero warnings with gcc and
#     clang at C11 (-Wall -Wextra -Wpedantic -Werror);
#   - tests/compile/goto_into_scope.c, a goto into the scope of a CUCTX_AUTO
#     variable, is rejected by clang and by C++ (gcc accepts it in C);
#   - tests/compile/auto_not_a_handle.c, CUCTX_AUTO on an int, is rejected by
#     gcc and g++; clang, clang++ and nvcc, documented as not catching it,
#     are a SKIP once seen to compile it (and a failure if they stop);
#   - tests/compile/move_dropped.c, a CUCTX_MOVE whose result is dropped,
#     draws a warning by default (an error under -Werror) from gcc, clang,
#     g++, clang++ and nvcc;
#   - tests/compile/static_auto.c, `static CUCTX_AUTO`, does not compile
#     under -Werror with gcc, clang, g++ or clang++ (nvcc: a SKIP once seen
#     to compile it, as documented);
#   - tests/compile/const_move.c, CUCTX_MOVE of a const handle, does not
#     compile, without -Werror, with gcc, clang, g++, clang++ or nvcc;
#   - tests/compile/const_auto.c, CUCTX_AUTO on a const handle, does not
#     compile, without -Werror, with clang, g++, clang++ or nvcc; gcc in C
#     warns by default (checked) and refuses it under -Werror;
#   - tests/compile/destroy_not_a_handle.c, cuctx_destroy and (-DCLEANUP)
#     cuctx_cleanup of a pointer to an int, do not compile with gcc, clang
#     (C11), g++, clang++ or nvcc;
#   - tests/compile/call_wrong_args.c, CUCTX_CALL(cuMemcpyHtoD, ...) with a
#     handle for its CUdeviceptr and (-DTOO_FEW) without its byte count, does
#     not compile with gcc, clang, g++, clang++ or nvcc;
#   - tests/compile/goto_over_auto.c, a goto over a CUCTX_AUTO declaration
#     to a label in its scope, draws gcc's -Wjump-misses-init warning and is
#     rejected by clang (cuctx(3), rule 6);
#   - every line of include/cuctx_pfn.h names the typedef of the ABI that
#     cuda.h's prototype has (C11 _Static_assert of gcc's
#     __builtin_types_compatible_p), with and without
#     CUDA_API_PER_THREAD_DEFAULT_STREAM (a SKIP with a toolkit whose
#     cudaTypedefs.h names PFN_<name> itself: the table is not used there).
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
NOT_HANDLE=$CUCTX_SRCDIR/tests/compile/auto_not_a_handle.c
DROPPED=$CUCTX_SRCDIR/tests/compile/move_dropped.c
STATIC=$CUCTX_SRCDIR/tests/compile/static_auto.c
CONST_MOVE=$CUCTX_SRCDIR/tests/compile/const_move.c
CONST_AUTO=$CUCTX_SRCDIR/tests/compile/const_auto.c
DESTROY=$CUCTX_SRCDIR/tests/compile/destroy_not_a_handle.c
CALL_ARGS=$CUCTX_SRCDIR/tests/compile/call_wrong_args.c
GOTO_OVER=$CUCTX_SRCDIR/tests/compile/goto_over_auto.c
# cuctx_version.h, which cuctx.h includes, is written by configure into the build tree.
INC="-I$CUCTX_INCLUDE -I${CUCTX_BUILDDIR:-$CUCTX_SRCDIR}/include $CUDA_CPPFLAGS"
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

echo "1..71"

for cc in gcc clang; do
    for std in c11 c17 c2x; do
        for opt in -O0 -O2; do
            what="uses_every_macro.c: $cc -std=$std $opt has no warnings"
            jump=
            [ "$cc" = gcc ] && jump=-Wjump-misses-init     # C only; clang does not know it
            if have "$cc"; then
                expect_clean "$what" "$cc" -std=$std $opt $WARN $jump $INC -c "$SRC" -o "$work/x.o"
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

# The header's example: from its #include line to the line before "The
# rules", the comment's " *   " margin taken off.
awk '/^ \* The rules/ { exit } /^ \*   #include <cuctx.h>$/ { on = 1 } on { sub(/^ \*   /, ""); sub(/^ \*$/, ""); print }' \
    "$CUCTX_INCLUDE/cuctx.h" > "$work/example.c"
for cc in gcc clang; do
    what="the example in cuctx.h: $cc -std=c11 -O2 has no warnings"
    if ! grep -q 'int main' "$work/example.c"; then
        echo "no example found in $CUCTX_INCLUDE/cuctx.h" > "$work/out"
        not_ok "$what"
    elif have "$cc"; then
        jump=
        [ "$cc" = gcc ] && jump=-Wjump-misses-init
        expect_clean "$what" "$cc" -std=c11 -O2 $WARN $jump $INC -c "$work/example.c" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done

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

# expect_rejected DESCRIPTION PATTERN COMMAND...: ok when the compile fails
# and its output matches PATTERN (an extended regex), so that the failure is
# the one the file is about.
expect_rejected() {
    what=$1
    pattern=$2
    shift 2
    if "$@" >"$work/out" 2>&1; then
        echo "compiled, but must not" >>"$work/out"
        not_ok "$what"
    elif grep -E "$pattern" "$work/out" >/dev/null; then
        ok "$what"
    else
        not_ok "$what"
    fi
}

# expect_gap DESCRIPTION WHY COMMAND...: a compiler the header documents as
# not catching the mistake: SKIP once seen to compile it, not ok if it no
# longer does (then the rules in cuctx(3) are out of date).
expect_gap() {
    what=$1
    why=$2
    shift 2
    if "$@" >"$work/out" 2>&1; then
        skip "$what" "$why"
    else
        echo "documented as compiling, but failed: update cuctx(3)'s rules" >>"$work/out"
        not_ok "$what"
    fi
}

# A .cu copy of a test file for nvcc, which goes by the extension.
cu() {
    cp "$1" "$work/x.cu"
    echo "$work/x.cu"
}

have_nvcc() {
    [ -n "$NVCC" ] && have "$NVCC"
}

# CUCTX_AUTO on an int (cuctx(3), rule 1).
what="auto_not_a_handle.c: gcc rejects CUCTX_AUTO on an int"
if have gcc; then
    expect_rejected "$what" "cuctx__auto_cleanup" gcc -std=c11 $INC -c "$NOT_HANDLE" -o "$work/x.o"
else
    skip "$what" "no gcc"
fi
what="auto_not_a_handle.c: g++ rejects CUCTX_AUTO on an int"
if have g++; then
    expect_rejected "$what" "cuctx__handle_ptr" g++ -x c++ $INC -c "$NOT_HANDLE" -o "$work/x.o"
else
    skip "$what" "no g++"
fi
for cc in clang clang++; do
    what="auto_not_a_handle.c: $cc rejects CUCTX_AUTO on an int"
    x=
    [ "$cc" = clang++ ] && x="-x c++"
    if have "$cc"; then
        expect_gap "$what" "$cc does not check a cleanup's argument type (rule 1)" \
            "$cc" $x $INC -c "$NOT_HANDLE" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done
what="auto_not_a_handle.c: nvcc rejects CUCTX_AUTO on an int"
if have_nvcc; then
    expect_gap "$what" "nvcc does not check a cleanup's argument type (rule 1)" \
        "$NVCC" -c $INC "$(cu "$NOT_HANDLE")" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi

# A dropped CUCTX_MOVE (cuctx(3), rule 3): warned by default, so -Werror alone.
unused='ignoring return value|unused-result|result of call is not used'
for cc in gcc clang g++ clang++; do
    what="move_dropped.c: $cc -Werror rejects a dropped CUCTX_MOVE"
    x=-std=c11
    case $cc in *++) x="-x c++" ;; esac
    if have "$cc"; then
        expect_rejected "$what" "$unused" "$cc" $x -Werror $INC -c "$DROPPED" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done
what="move_dropped.c: nvcc --Werror all-warnings rejects a dropped CUCTX_MOVE"
if have_nvcc; then
    expect_rejected "$what" "$unused" "$NVCC" -c $INC --Werror all-warnings "$(cu "$DROPPED")" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi

# static CUCTX_AUTO (cuctx(3), rule 1): an error in gcc C, a default-on
# warning elsewhere, so -Werror alone.
for cc in gcc clang g++ clang++; do
    what="static_auto.c: $cc -Werror rejects static CUCTX_AUTO"
    x=-std=c11
    case $cc in *++) x="-x c++" ;; esac
    if have "$cc"; then
        expect_rejected "$what" "cleanup|__extension__" "$cc" $x -Werror $INC -c "$STATIC" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done
what="static_auto.c: nvcc rejects static CUCTX_AUTO"
if have_nvcc; then
    expect_gap "$what" "nvcc drops the cleanup of a static without a word (rule 1)" \
        "$NVCC" -c $INC --Werror all-warnings "$(cu "$STATIC")" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi

# A const handle (cuctx(3), rules 1 and 3): the cleanup or the move would
# write to a const object. An error without -Werror, which CI also builds
# without.
for cc in gcc clang g++ clang++; do
    what="const_move.c: $cc rejects CUCTX_MOVE of a const handle"
    x=-std=c11
    case $cc in *++) x="-x c++" ;; esac
    if have "$cc"; then
        expect_rejected "$what" "const cuctx_event|cuctx__move" "$cc" $x $INC -c "$CONST_MOVE" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done
what="const_move.c: nvcc rejects CUCTX_MOVE of a const handle"
if have_nvcc; then
    expect_rejected "$what" "cuctx__move" "$NVCC" -c $INC "$(cu "$CONST_MOVE")" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi
for cc in clang g++ clang++; do
    what="const_auto.c: $cc rejects CUCTX_AUTO on a const handle"
    x=-std=c11
    case $cc in *++) x="-x c++" ;; esac
    if have "$cc"; then
        expect_rejected "$what" "const cuctx_event" "$cc" $x $INC -c "$CONST_AUTO" -o "$work/x.o"
    else
        skip "$what" "no $cc"
    fi
done
what="const_auto.c: nvcc rejects CUCTX_AUTO on a const handle"
if have_nvcc; then
    expect_rejected "$what" "const void|const cuctx_event" "$NVCC" -c $INC "$(cu "$CONST_AUTO")" -o "$work/x.o"
else
    skip "$what" "no nvcc (configure did not find one)"
fi
# gcc in C: a default-on warning, so an error under -Werror (rule 1).
what="const_auto.c: gcc warns, by default, of CUCTX_AUTO on a const handle"
if have gcc; then
    if gcc -std=c11 $INC -c "$CONST_AUTO" -o "$work/x.o" >"$work/out" 2>&1 &&
       grep -E "discards .const. qualifier" "$work/out" >/dev/null; then
        ok "$what"
    else
        echo "documented as a warning: update cuctx(3), rule 1" >>"$work/out"
        not_ok "$what"
    fi
else
    skip "$what" "no gcc"
fi
what="const_auto.c: gcc -Werror rejects CUCTX_AUTO on a const handle"
if have gcc; then
    expect_rejected "$what" "discards .const. qualifier" gcc -std=c11 -Werror $INC -c "$CONST_AUTO" -o "$work/x.o"
else
    skip "$what" "no gcc"
fi

# cuctx_destroy / cuctx_cleanup of a pointer to an int (the typed macros).
not_handle='_Generic|generic association|cuctx__(destroy|cleanup)_typed|no instance of overloaded'
for variant in "" -DCLEANUP; do
    name=cuctx_destroy
    [ -n "$variant" ] && name=cuctx_cleanup
    for cc in gcc clang g++ clang++; do
        what="destroy_not_a_handle.c: $cc rejects $name of an int pointer"
        x=-std=c11
        case $cc in *++) x="-x c++" ;; esac
        if have "$cc"; then
            expect_rejected "$what" "$not_handle" "$cc" $x $variant $INC -c "$DESTROY" -o "$work/x.o"
        else
            skip "$what" "no $cc"
        fi
    done
    what="destroy_not_a_handle.c: nvcc rejects $name of an int pointer"
    if have_nvcc; then
        expect_rejected "$what" "$not_handle" "$NVCC" -c $variant $INC "$(cu "$DESTROY")" -o "$work/x.o"
    else
        skip "$what" "no nvcc (configure did not find one)"
    fi
done

# CUCTX_CALL with arguments cuda.h's prototype does not take.
wrong_args='incompatible type|cannot convert|no viable conversion|no suitable conversion|too few arguments'
for variant in "" -DTOO_FEW; do
    case=" a handle for its CUdeviceptr"
    [ -n "$variant" ] && case=" too few arguments"
    for cc in gcc clang g++ clang++; do
        what="call_wrong_args.c: $cc rejects CUCTX_CALL(cuMemcpyHtoD) with$case"
        x=-std=c11
        case $cc in *++) x="-x c++" ;; esac
        if have "$cc"; then
            expect_rejected "$what" "$wrong_args" "$cc" $x $variant $INC -c "$CALL_ARGS" -o "$work/x.o"
        else
            skip "$what" "no $cc"
        fi
    done
    what="call_wrong_args.c: nvcc rejects CUCTX_CALL(cuMemcpyHtoD) with$case"
    if have_nvcc; then
        expect_rejected "$what" "$wrong_args" "$NVCC" -c $variant $INC "$(cu "$CALL_ARGS")" -o "$work/x.o"
    else
        skip "$what" "no nvcc (configure did not find one)"
    fi
done

# A goto over a CUCTX_AUTO declaration (cuctx(3), rule 6): gcc warns only
# with -Wjump-misses-init, clang refuses it.
what="goto_over_auto.c: gcc -Wjump-misses-init warns of a goto over a CUCTX_AUTO declaration"
if have gcc; then
    if gcc -std=c11 -Wjump-misses-init $INC -c "$GOTO_OVER" -o "$work/x.o" >"$work/out" 2>&1 &&
       grep -E "jump skips variable initialization" "$work/out" >/dev/null; then
        ok "$what"
    else
        echo "no -Wjump-misses-init warning: update cuctx(3), rule 6" >>"$work/out"
        not_ok "$what"
    fi
else
    skip "$what" "no gcc"
fi
what="goto_over_auto.c: clang rejects a goto over a CUCTX_AUTO declaration"
if have clang; then
    expect_jump_error "$what" clang -std=c11 $INC -fsyntax-only "$GOTO_OVER"
else
    skip "$what" "no clang"
fi

# cuctx_pfn.h against cuda.h's prototypes, one assertion per entry point.
{
    echo '#include <cuctx.h>'
    echo '#if defined(PFN_cuGetErrorString)'
    echo '#error the toolkit names PFN_<name> itself'
    echo '#endif'
    sed -n 's/^#define CUCTX__PFN_\([A-Za-z0-9_]*\) .*/_Static_assert(__builtin_types_compatible_p(CUCTX__PFN_\1, __typeof__(\&\1)), "\1");/p' \
        "$CUCTX_INCLUDE/cuctx_pfn.h"
} > "$work/pfn.c"
for ptds in "" -DCUDA_API_PER_THREAD_DEFAULT_STREAM; do
    what="cuctx_pfn.h: every typedef is cuda.h's prototype${ptds:+ (per-thread default stream)}"
    if ! have gcc; then
        skip "$what" "no gcc"
    elif gcc -std=c11 $ptds $INC -fsyntax-only "$work/pfn.c" >"$work/out" 2>&1; then
        ok "$what"
    elif grep -q "names PFN_<name> itself" "$work/out"; then
        skip "$what" "this toolkit's cudaTypedefs.h names PFN_<name>"
    else
        echo "regenerate it with tools/gen-pfn-table, or fix the generator's rules" >>"$work/out"
        not_ok "$what"
    fi
done

[ "$n" -eq 71 ] || echo "# the plan said 71 checks but $n ran"
exit $((failed > 0))
