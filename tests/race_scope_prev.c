/* SPDX-License-Identifier: MIT */
/* race_scope_prev.c - issue 17 item 9, for a ThreadSanitizer build
 * (configure --enable-tsan; Criterion cannot run under it): a scope's
 * enter reads its previous context's entry without a pin (prev_seen in
 * lib/scope.c, a seqlock reader) while another thread ends that context
 * and reuses the entry's slot for new objects, whose payload it writes.
 * Those writes must be atomic, or TSan reports a data race on the slot.
 *
 * One thread keeps an owned context current and enters scopes over another
 * context; a second destroys the current one from outside, at no agreed
 * moment, and makes contexts and events, which take the freed slots; the
 * first then makes a new current context and goes on. With the simulator,
 * whose lock orders every driver call (which would hide the race from
 * TSan), cuCtxPushCurrent is slowed (cusim_set_delay, a sleep before the
 * lock) so that the slot is reused between the scope's read and its next
 * driver call. Exit 0 when every
 * call gave what it should; the race itself is TSan's to report (run with
 * TSAN_OPTIONS=halt_on_error=1 to make it the exit status).
 * Usage: race_scope_prev [rounds]; CUCTX_DRIVER names the driver. */
#include <cuctx.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static _Atomic uint64_t victim;     /* the scoping thread's current context, for the other to end */
static _Atomic int stop;
static int rounds = 200;
static _Atomic int failures;

static void *scoper(void *arg)
{
    cuctx_ctx x = *(cuctx_ctx *)arg;
    for (int r = 0; r < rounds; r++) {
        cuctx_ctx a = {0};
        if (cuctx_ctx_create(&a, 0, 0) != CUDA_SUCCESS) {     /* current on this thread */
            failures++;
            break;
        }
        atomic_store(&victim, a.id);
        for (int i = 0; i < 2000 && atomic_load(&victim) == a.id; i++) {
            CUCTX_SCOPED(x) {
            }
        }
        while (atomic_load(&victim) == a.id)
            ;   /* until the other thread took it */
    }
    atomic_store(&stop, 1);
    return NULL;
}

static void *ender(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        uint64_t id = atomic_load(&victim);
        if (!id)
            continue;
        cuctx_ctx a = {id};
        usleep(1000);                   /* a few scopes have read its entry */
        if (cuctx_ctx_destroy(&a) != CUDA_SUCCESS)
            failures++;
        for (int i = 0; i < 8; i++) {   /* new objects in the freed slots */
            cuctx_ctx c = {0};
            cuctx_event ev = {0};
            if (cuctx_ctx_create(&c, 0, 0) != CUDA_SUCCESS || cuctx_event_create(&ev, c, 0) != CUDA_SUCCESS
                || cuctx_event_destroy(&ev) != CUDA_SUCCESS || cuctx_ctx_destroy(&c) != CUDA_SUCCESS)
                failures++;
        }
        atomic_store(&victim, 0);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    cuctx_ctx x = {0};
    pthread_t s, e;
    if (argc > 1)
        rounds = atoi(argv[1]);
    const char *drv = getenv("CUCTX_DRIVER");
    void *sim = drv && *drv ? dlopen(drv, RTLD_NOW | RTLD_LOCAL) : NULL;
    void (*set_delay)(const char *, unsigned) = sim ? (void (*)(const char *, unsigned))dlsym(sim, "cusim_set_delay") : NULL;
    if (set_delay)
        set_delay("cuCtxPushCurrent", 200);
    if (cuctx_ctx_create(&x, 0, 0) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS) {
        fprintf(stderr, "race_scope_prev: no context: %s\n", cuctx_last_error_message());
        return 77;
    }
    pthread_create(&s, NULL, scoper, &x);
    pthread_create(&e, NULL, ender, NULL);
    pthread_join(s, NULL);
    pthread_join(e, NULL);
    cuctx_ctx_destroy(&x);
    printf("race_scope_prev: %d rounds, %d failures\n", rounds, failures);
    return failures ? 1 : 0;
}
