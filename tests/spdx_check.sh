#!/bin/sh
# spdx_check.sh [--fix] - every source file of the tree carries the line
# "SPDX-License-Identifier: MIT" in its first five lines, as a TAP test
# (make check). With --fix it inserts the line where it is missing, in the
# file's own comment syntax, and says which files it changed.
#
# The files: `git ls-files` when the source tree is a git checkout, else
# every file under it (a release tarball), less what autotools generate.
# Sources are C, C++ and CUDA files and headers, shell scripts (by name or
# by a #! line), automake, autoconf and m4 files, .in templates, CMake files,
# the linker map and the manual pages (not the one-line .so links). Test data
# (tests/data, the fuzzing corpus) is not source, and the Autoconf Archive's
# macros copied into m4/ (ax_*.m4) keep their own licence notices, as their
# licences ask.
#
# Environment: CUCTX_SRCDIR (default: the directory above this script).
set -u

src=${CUCTX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
fix=0
[ "${1:-}" = --fix ] && fix=1
tag="SPDX-License-Identifier: MIT"
work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-spdx.XXXXXX") || { echo "Bail out! cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$work"' EXIT HUP INT TERM

if command -v git >/dev/null 2>&1 && git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
   [ "$(cd "$src" && git rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$src" && pwd -P)" ]; then
    how="git ls-files"
    (cd "$src" && git ls-files) > "$work/all"
else
    how="the files of the tree"
    (cd "$src" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) > "$work/all"
fi

# source FILE: whether FILE (relative to $src) must carry the line. Outside
# git, a tree built in place also holds what configure and make wrote
# (config.h, libtool's wrapper scripts, programs): they say they were
# generated, or are not text.
source_file() {
    if [ "$how" != "git ls-files" ]; then
        head -n 5 "$src/$1" 2>/dev/null | grep -qE '[Gg]enerated (from|by|automatically)' && return 1
        [ "$(head -c 4 "$src/$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] && return 1
    fi
    case $1 in
        tests/data/*|tests/fuzz/corpus/*|build-aux/*|autom4te.cache/*|_*/*) return 1 ;;
        configure|aclocal.m4|config.h.in|Makefile.in|*/Makefile.in|m4/libtool.m4|m4/lt*.m4|m4/ax_*.m4|aminclude_static.am) return 1 ;;
        *.c|*.h|*.cc|*.cpp|*.cxx|*.hpp|*.cu|*.cuh|*.sh|*.am|*.ac|*.m4|*.in|*.cmake|CMakeLists.txt|*/CMakeLists.txt|*.map) return 0 ;;
        .ci/run|tools/*) return 0 ;;
        man/*.3) sed -n '1{/^\.so /q1;}' "$src/$1"; return $? ;;
    esac
    head -c 2 "$src/$1" 2>/dev/null | grep -q '^#!'
}

# comment FILE: the tag as a comment in FILE's syntax.
comment() {
    case $1 in
        *.c|*.h|*.cc|*.cpp|*.cxx|*.hpp|*.cu|*.cuh|*.map|*.h.in) echo "/* $tag */" ;;
        man/*.3) echo ".\\\" $tag" ;;
        *) echo "# $tag" ;;
    esac
}

n=0
: > "$work/missing"
while IFS= read -r f; do
    [ -f "$src/$f" ] || continue
    source_file "$f" || continue
    n=$((n + 1))
    head -n 5 "$src/$f" | grep -q "$tag" || echo "$f" >> "$work/missing"
done < "$work/all"

if [ "$fix" = 1 ]; then
    while IFS= read -r f; do
        line=$(comment "$f")
        if head -c 2 "$src/$f" | grep -q '^#!'; then
            { sed -n 1p "$src/$f"; echo "$line"; sed 1d "$src/$f"; } > "$work/new"
        else
            { echo "$line"; cat "$src/$f"; } > "$work/new"
        fi
        cat "$work/new" > "$src/$f"     # keeps the file's mode
        echo "added: $f"
    done < "$work/missing"
    exit 0
fi

echo "1..1"
if [ -s "$work/missing" ]; then
    echo "not ok 1 - every source file carries \"$tag\" ($(wc -l < "$work/missing" | tr -d ' ') of $n, from $how, do not; tests/spdx_check.sh --fix adds it)"
    sed 's/^/# missing: /' "$work/missing"
    exit 1
fi
echo "ok 1 - all $n source files carry \"$tag\" (from $how)"
