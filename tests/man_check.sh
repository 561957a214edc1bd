#!/bin/sh
# SPDX-License-Identifier: MIT
# man_check.sh - the manual pages, as a TAP test (make check):
#
#   1. every page, and every .so link followed, formats with groff -man
#      without a warning (-ww);
#   2. every function include/cuctx.h declares CUCTX_API (less the internal
#      cuctx__ ones the macros call) and every public macro of cuctx(3) has a
#      page or a .so link under man/, and every link names a page that is
#      there;
#   3. every page under man/ is installed (listed in Makefile.am).
#
# Environment (set by make check): CUCTX_SRCDIR.
set -u

src=${CUCTX_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
echo "1..3"
work=$(mktemp -d "${TMPDIR:-/tmp}/cuctx-man.XXXXXX") || { echo "Bail out! cannot make a temporary directory"; exit 1; }
trap 'rm -rf "$work"' EXIT HUP INT TERM
failed=0

# The pages as installed: man3/NAME.3, so that ".so man3/x.3" resolves.
mkdir -p "$work/man3"
cp "$src"/man/*.3 "$work/man3/"

if command -v groff >/dev/null 2>&1; then
    : > "$work/warnings"
    for page in "$work"/man3/*.3; do
        (cd "$work" && groff -man -ww -z "man3/${page##*/}") > "$work/out" 2>&1
        [ -s "$work/out" ] && sed "s|^|${page##*/}: |" "$work/out" >> "$work/warnings"
    done
    if [ -s "$work/warnings" ]; then
        failed=1
        echo "not ok 1 - the pages format without warnings (groff -man -ww)"
        sed 's/^/# /' "$work/warnings"
    else
        echo "ok 1 - $(find "$work/man3" -name "*.3" | wc -l | tr -d ' ') pages format without warnings (groff -man -ww)"
    fi
else
    echo "ok 1 # SKIP no groff (Debian: groff-base)"
fi

missing=
for name in $(grep '^CUCTX_API' "$src/include/cuctx.h" | sed -e 's/(.*//' -e 's/.*[ *]//' | grep -v '^cuctx__') \
            CUCTX_AUTO CUCTX_MOVE CUCTX_SCOPED CUCTX_SCOPED_ELSE CUCTX_GUARD CUCTX_CALL; do
    f=$work/man3/$name.3
    if [ ! -f "$f" ]; then
        missing="$missing
$name: no page"
        continue
    fi
    target=$(sed -n '1s/^\.so //p' "$f")
    if [ -n "$target" ] && [ ! -f "$work/$target" ]; then
        missing="$missing
$name: links to $target, which is not there"
    fi
done
if [ -z "$missing" ]; then
    echo "ok 2 - every public function and macro has a page"
else
    failed=1
    echo "not ok 2 - every public function and macro has a page"
    echo "$missing" | sed -e '/^$/d' -e 's/^/# /'
fi

unlisted=
for page in "$src"/man/*.3; do
    grep -q "man/${page##*/}\\( \\|\$\\)" "$src/Makefile.am" || unlisted="$unlisted ${page##*/}"
done
if [ -z "$unlisted" ]; then
    echo "ok 3 - every page under man/ is installed"
else
    failed=1
    echo "not ok 3 - every page under man/ is installed (dist_man3_MANS in Makefile.am)"
    echo "# not listed:$unlisted"
fi
exit $failed
