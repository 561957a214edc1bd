#!/bin/sh
# SPDX-License-Identifier: MIT
# layers_check.sh - the library's files form layers, as a TAP test (make check):
#
#   1. no object of lib/ calls, or reads a variable of, an object that
#      depends on it in turn: the graph of "A uses a symbol B defines" has
#      no cycle. On a cycle it prints one, edge by edge: which object uses
#      which symbol of which.
#
# On success it prints the layers from the bottom up: each object sits one
# layer above the highest object it uses. Symbols are read with nm from the
# built objects (libtool's lib/.libs/libcuctx_la-*.o, else lib/libcuctx_la-*.o).
#
# Environment (set by make check): CUCTX_BUILDDIR.
set -u

build=${CUCTX_BUILDDIR:-.}

echo "1..1"
if ! command -v nm >/dev/null 2>&1; then
    echo "ok 1 # SKIP no nm"
    exit 0
fi
dir=$build/lib/.libs
set -- "$dir"/libcuctx_la-*.o
if [ ! -f "$1" ]; then
    dir=$build/lib
    set -- "$dir"/libcuctx_la-*.o
fi
if [ ! -f "$1" ]; then
    echo "ok 1 # SKIP no objects of libcuctx under $build/lib"
    exit 0
fi

# One line per symbol: "D object symbol" where the object defines it,
# "U object symbol" where it uses it undefined. nm -A prefixes the file.
nm -A "$@" 2>/dev/null | awk '
{
    # "FILE.o: U sym" or "FILE.o:ADDRESS T sym"
    file = $1
    sub(/\.o:.*/, "", file)
    sub(/.*libcuctx_la-/, "", file)
    if ($(NF - 1) == "U")
        print "U", file, $NF
    else if ($(NF - 1) ~ /^[BCDGRSTVW]$/)
        print "D", file, $NF
}' | awk '
$1 == "D" { def[$3] = $2; nodes[$2] = 1; next }
$1 == "U" { use[++nu] = $2 " " $3; nodes[$2] = 1 }
END {
    for (i = 1; i <= nu; i++) {
        split(use[i], p, " ")
        from = p[1]; sym = p[2]
        if (!(sym in def) || def[sym] == from)
            continue
        to = def[sym]
        if (!((from, to) in edge)) {
            edge[from, to] = sym
            out[from] = out[from] " " to
        }
    }
    # Depth-first search, iterative, for a back edge (a cycle).
    for (n in nodes) color[n] = 0
    cyclic = 0
    for (n in nodes) {
        if (color[n] || cyclic)
            continue
        top = 1; stack[1] = n; next_i[1] = 1; color[n] = 1
        while (top > 0 && !cyclic) {
            v = stack[top]
            k = split(out[v], succ, " ")
            if (next_i[top] > k) {
                color[v] = 2
                level[v] = 0
                for (j = 1; j <= k; j++)
                    if (level[succ[j]] + 1 > level[v])
                        level[v] = level[succ[j]] + 1
                top--
                continue
            }
            w = succ[next_i[top]]
            next_i[top]++
            if (color[w] == 1) {
                # w ... v -> w is a cycle: print it from w.
                cyclic = 1
                for (s = 1; s <= top && stack[s] != w; s++)
                    ;
                for (; s <= top; s++) {
                    a = stack[s]; b = (s < top) ? stack[s + 1] : w
                    printf "#   %s.o uses %s of %s.o\n", a, edge[a, b], b > "/dev/stderr"
                }
            } else if (color[w] == 0) {
                color[w] = 1
                top++; stack[top] = w; next_i[top] = 1
            }
        }
    }
    if (cyclic)
        exit 1
    max = 0
    for (n in nodes) if (level[n] > max) max = level[n]
    for (l = 0; l <= max; l++) {
        line = ""
        for (n in nodes) if (level[n] == l) line = line " " n
        # sort the names of a layer for a stable listing
        m = split(line, names, " ")
        for (x = 1; x <= m; x++)
            for (y = x + 1; y <= m; y++)
                if (names[y] < names[x]) { t = names[x]; names[x] = names[y]; names[y] = t }
        line = ""
        for (x = 1; x <= m; x++) line = line (x > 1 ? " " : "") names[x]
        printf "# layer %d: %s\n", l, line
    }
}' > "${TMPDIR:-/tmp}/cuctx-layers.$$" 2> "${TMPDIR:-/tmp}/cuctx-cycle.$$"
status=$?
if [ "$status" -eq 0 ]; then
    echo "ok 1 - the objects of lib/ form layers without a cycle"
    cat "${TMPDIR:-/tmp}/cuctx-layers.$$"
else
    echo "not ok 1 - the objects of lib/ form layers without a cycle"
    echo "# a cycle:"
    cat "${TMPDIR:-/tmp}/cuctx-cycle.$$"
fi
rm -f "${TMPDIR:-/tmp}/cuctx-layers.$$" "${TMPDIR:-/tmp}/cuctx-cycle.$$"
[ "$status" -eq 0 ]
