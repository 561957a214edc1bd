/* SPDX-License-Identifier: MIT */
/* graph.h - what graph.c offers the rest of lib/. */
#ifndef CUCTX_GRAPH_H
#define CUCTX_GRAPH_H

#include <cuda.h>
#include <stdint.h>

#include "registry.h"

/* Registers g, made elsewhere (a capture's end), as a cuctx_graph in
 * *out, claimed already; on failure g is destroyed and the error set. */
CUresult cuctx__graph_take(uint64_t *out, CUgraph g, const char *fn, const struct cuctx_site *site);

#endif
