/* SPDX-License-Identifier: MIT */
/* bench_callgrind.c - one operation in a loop, nothing else, for counting
 * instructions under valgrind --tool=callgrind (tools/bench-callgrind runs
 * it twice, with two loop counts, and divides the difference, so that
 * everything outside the loop - loading the driver, creating contexts,
 * exit - cancels out).
 * Usage: bench_callgrind CASE N
 * CASE: event           event create+destroy, owned context current
 *       event-noncur    the same with the context not current
 *       stream          stream create+destroy, context current
 *       mem             4 KiB cuctx_mem_alloc + destroy, context current
 *       async           4 KiB stream-ordered alloc+free on a non-blocking stream
 *       lookup          cuctx_event_raw of a live event
 *       graph-launch    cuctx_graph_exec_launch of a graph of one empty node
 *                       on a non-blocking stream
 *       scoped-noncur   CUCTX_SCOPED enter+exit, target not current
 *       scoped-cur      CUCTX_SCOPED enter+exit, target current already */
#include <cuctx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    fprintf(stderr, "bench_callgrind: %s: %s\n", what, cuctx_last_error_message());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_callgrind CASE N\n");
        return 2;
    }
    const char *what = argv[1];
    long n = atol(argv[2]);
    cuctx_ctx base = {0}, other = {0};
    /* other is made first and popped, so that base stays current below */
    if (cuctx_ctx_create(&other, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS
        || cuctx_ctx_create(&base, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS)
        return fail("context create");
    int failed = 0;
    if (!strcmp(what, "event") || !strcmp(what, "event-noncur")) {
        cuctx_ctx in = !strcmp(what, "event") ? base : other;
        for (long i = 0; i < n; i++) {
            cuctx_event ev = {0};
            failed |= cuctx_event_create(&ev, in, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
            failed |= cuctx_event_destroy(&ev) != CUDA_SUCCESS;
        }
    } else if (!strcmp(what, "stream")) {
        for (long i = 0; i < n; i++) {
            cuctx_stream s = {0};
            failed |= cuctx_stream_create(&s, base, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS;
            failed |= cuctx_stream_destroy(&s) != CUDA_SUCCESS;
        }
    } else if (!strcmp(what, "mem")) {
        for (long i = 0; i < n; i++) {
            cuctx_mem m = {0};
            failed |= cuctx_mem_alloc(&m, base, 4096) != CUDA_SUCCESS;
            failed |= cuctx_mem_destroy(&m) != CUDA_SUCCESS;
        }
    } else if (!strcmp(what, "async")) {
        cuctx_stream s = {0};
        if (cuctx_stream_create(&s, base, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS)
            return fail("stream create");
        for (long i = 0; i < n; i++) {
            cuctx_mem m = {0};
            failed |= cuctx_mem_alloc_async(&m, s, 4096) != CUDA_SUCCESS;
            failed |= cuctx_mem_destroy(&m) != CUDA_SUCCESS;
        }
        cuctx_stream_destroy(&s);
    } else if (!strcmp(what, "graph-launch")) {
        cuctx_stream s = {0};
        cuctx_graph g = {0};
        cuctx_graph_exec ge = {0};
        CUgraphNode node;
        if (cuctx_stream_create(&s, base, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS || cuctx_graph_create(&g) != CUDA_SUCCESS
            || CUCTX_CALL(cuGraphAddEmptyNode, &node, cuctx_graph_raw(g), NULL, 0) != CUDA_SUCCESS
            || cuctx_graph_exec_instantiate(&ge, base, cuctx_graph_raw(g), 0) != CUDA_SUCCESS)
            return fail("graph of one empty node");
        for (long i = 0; i < n; i++)
            failed |= cuctx_graph_exec_launch(ge, s) != CUDA_SUCCESS;
        failed |= cuctx_stream_synchronize(s) != CUDA_SUCCESS;
        cuctx_graph_exec_destroy(&ge);
        cuctx_graph_destroy(&g);
        cuctx_stream_destroy(&s);
    } else if (!strcmp(what, "lookup")) {
        cuctx_event ev = {0};
        if (cuctx_event_create(&ev, base, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
            return fail("event create");
        for (long i = 0; i < n; i++) {
            CUevent raw = cuctx_event_raw(ev);
            failed |= raw == NULL;
            __asm__ volatile("" : : "r"(raw) : "memory");
        }
        cuctx_event_destroy(&ev);
    } else if (!strcmp(what, "scoped-noncur") || !strcmp(what, "scoped-cur")) {
        cuctx_ctx in = !strcmp(what, "scoped-cur") ? base : other;
        for (long i = 0; i < n; i++) {
            int ran = 0;
            CUCTX_SCOPED(in) {
                ran = 1;
                __asm__ volatile("" : : "r"(ran) : "memory");
            }
            failed |= !ran;
        }
    } else {
        fprintf(stderr, "bench_callgrind: unknown case %s\n", what);
        return 2;
    }
    if (failed)
        return fail(what);
    if (cuctx_ctx_destroy(&base) != CUDA_SUCCESS || cuctx_ctx_destroy(&other) != CUDA_SUCCESS)
        return fail("context destroy");
    return 0;
}
