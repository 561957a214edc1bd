/* SPDX-License-Identifier: MIT */
/* ctxmap.c - the map from a context's address to its registry entry.
 *
 * It holds live contexts only: an entry leaves it when the entry ends, so a
 * process may meet any number of distinct context addresses and the map's
 * size follows the contexts alive now. Open addressing with linear probing;
 * removal shifts the following keys back instead of leaving tombstones.
 * Every access is under the context lock: the hot paths never come here
 * (a handle names its entry directly, and the current context's entry is
 * remembered per thread, see entry.c).
 */
#include "config.h"

#include "ctxmap.h"

#include <stdlib.h>

static uintptr_t *keys;     /* 0: empty */
static uint64_t *vals;
static size_t cap;          /* a power of two, or 0 */
static size_t used;

static size_t home(uintptr_t k)
{
    uint64_t x = (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(x >> 32) & (cap - 1);
}

static size_t probe(uintptr_t k)
{
    size_t i = home(k);
    while (keys[i] && keys[i] != k)
        i = (i + 1) & (cap - 1);
    return i;
}

/* Keeps the load at most a half; shrinks to a quarter after removals. */
static int resize(size_t want)
{
    uintptr_t *ok = keys;
    uint64_t *ov = vals;
    size_t ocap = cap;
    uintptr_t *nk = calloc(want, sizeof *nk);
    uint64_t *nv = calloc(want, sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    keys = nk;
    vals = nv;
    cap = want;
    for (size_t i = 0; i < ocap; i++) {
        if (ok[i]) {
            size_t j = probe(ok[i]);
            keys[j] = ok[i];
            vals[j] = ov[i];
        }
    }
    free(ok);
    free(ov);
    return 0;
}

uint64_t cuctx__map_find(CUcontext raw)
{
    if (!cap || !raw)
        return 0;
    size_t i = probe((uintptr_t)raw);
    return keys[i] ? vals[i] : 0;
}

int cuctx__map_put(CUcontext raw, uint64_t entry)
{
    if ((used + 1) * 2 > cap && resize(cap ? cap * 2 : 64) != 0)
        return -1;
    size_t i = probe((uintptr_t)raw);
    if (!keys[i]) {
        keys[i] = (uintptr_t)raw;
        used++;
    }
    vals[i] = entry;
    return 0;
}

/* Only while the address still maps to that entry: a newer context at the
 * same address keeps its own. */
void cuctx__map_remove(CUcontext raw, uint64_t entry)
{
    if (!cap || !raw)
        return;
    size_t i = probe((uintptr_t)raw);
    if (!keys[i] || vals[i] != entry)
        return;
    /* Backward shift: move up each later key of the run whose home is not
     * between the hole and it, so no probe sequence is broken. */
    for (size_t j = (i + 1) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1)) {
        size_t h = home(keys[j]);
        if (((j - h) & (cap - 1)) >= ((j - i) & (cap - 1))) {
            keys[i] = keys[j];
            vals[i] = vals[j];
            i = j;
        }
    }
    keys[i] = 0;
    vals[i] = 0;
    used--;
    if (cap > 64 && used * 8 < cap)
        resize(cap / 2);    /* on failure the larger table stays, still correct */
}

size_t cuctx__map_count(void)
{
    return used;
}

/* Over a copy, so that fn may end entries (and so remove keys). */
void cuctx__map_foreach(void (*fn)(CUcontext raw, uint64_t entry, void *arg), void *arg)
{
    size_t n = 0;
    struct pair { CUcontext raw; uint64_t entry; } *all = used ? malloc(used * sizeof *all) : NULL;
    if (!all)
        return;
    for (size_t i = 0; i < cap; i++)
        if (keys[i])
            all[n++] = (struct pair){(CUcontext)keys[i], vals[i]};
    for (size_t i = 0; i < n; i++)
        fn(all[i].raw, all[i].entry, arg);
    free(all);
}
