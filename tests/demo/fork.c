/* SPDX-License-Identifier: MIT */
/* fork.c - a parent with live objects forks; the child exits at once
 * (cuctx's exit hook and any cleanup there must neither touch the parent's
 * objects nor hang), and the parent's objects still work afterwards. */
#include <cuctx.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    CUCTX_AUTO cuctx_ctx ctx = {0};
    if (cuctx_ctx_create(&ctx, 0, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "%s\n", cuctx_last_error_message());
        return 1;
    }
    CUCTX_AUTO cuctx_stream s = {0};
    CUCTX_AUTO cuctx_event ev = {0};
    CUCTX_AUTO cuctx_mem m = {0};
    if (cuctx_stream_create(&s, ctx, 0, 0) || cuctx_event_create(&ev, ctx, 0) || cuctx_mem_alloc(&m, ctx, 1 << 20)) {
        fprintf(stderr, "%s\n", cuctx_last_error_message());
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        return 0;               /* the child: every CUCTX_AUTO above runs on its way out */
    int status = -1;
    waitpid(pid, &status, 0);
    printf("child exited: %s, status %d\n", WIFEXITED(status) ? "normally" : "by a signal",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    CUresult rec = cuctx_event_record(ev, s);
    CUresult sync = cuctx_event_synchronize(ev);
    printf("parent after the fork: record %s, synchronize %s, memory %zu bytes at %#llx\n", cuctx_result_name(rec),
           cuctx_result_name(sync), cuctx_mem_size(m), (unsigned long long)cuctx_mem_ptr(m));
    struct cuctx_stats st;
    cuctx_stats_get(&st);
    printf("parent: %zu event, %zu stream, %zu allocation alive; %llu destroys skipped\n", st.events, st.streams,
           st.mems, (unsigned long long)st.stale_skips);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && rec == CUDA_SUCCESS && sync == CUDA_SUCCESS ? 0 : 1;
}
