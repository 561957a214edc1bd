/* SPDX-License-Identifier: MIT */
/* exit.cc - handles destroyed after the driver shut down: by an atexit
 * handler and by a C++ static destructor, both set up before the first cuctx
 * call, so both run after cuctx's exit hook. The program exits 0 and cuctx
 * prints nothing; stdout says what the destroys returned. */
#include <cuctx.h>
#include <stdio.h>
#include <stdlib.h>

static cuctx_ctx ctx;
static cuctx_event ev;
static cuctx_stream s;

static void report(const char *who, CUresult a, CUresult b)
{
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    printf("%s: destroys returned %s and %s; shutdown skips so far %llu\n", who, cuctx_result_name(a),
           cuctx_result_name(b), (unsigned long long)st.shutdown_skips);
    fflush(stdout);
}

struct owner {
    ~owner()
    {
        CUresult a = cuctx_event_destroy(&ev);
        CUresult b = cuctx_ctx_destroy(&ctx);
        report("static destructor", a, b);
    }
};
static owner at_the_end;

static void at_exit(void)
{
    CUresult a = cuctx_stream_destroy(&s);
    report("atexit handler", a, CUDA_SUCCESS);
}

int main(void)
{
    atexit(at_exit);
    if (cuctx_ctx_create(&ctx, 0, 0) != CUDA_SUCCESS || cuctx_event_create(&ev, ctx, 0) != CUDA_SUCCESS
        || cuctx_stream_create(&s, ctx, 0, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "%s\n", cuctx_last_error_message());
        return 1;
    }
    return 0;
}
