/* SPDX-License-Identifier: MIT */
/* dlclose_check.c - a program that dlopen()s libcuctx, uses it from a second
 * thread (a context and an event on the driver CUCTX_DRIVER names),
 * dlclose()s it while that thread still lives, then lets the thread exit.
 * The library's pthread keys have destructors, which run at the thread's
 * exit: had dlclose() unmapped the library, the thread would die in them
 * (SIGSEGV in glibc's __nptl_deallocate_tsd). Linked with -z nodelete, the
 * library stays mapped. A TAP test of make check; the library is the
 * build tree's (CUCTX_BUILDDIR/lib/.libs/libcuctx.so), never linked in. */
#include <cuctx.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct api {
    CUresult (*init)(void);
    CUresult (*ctx_create)(cuctx_ctx *, CUdevice, unsigned);
    CUresult (*ctx_destroy)(cuctx_ctx *);
    CUresult (*event_create)(cuctx_event *, cuctx_ctx, unsigned);
    CUresult (*event_destroy)(cuctx_event *);
};

static struct api api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int used, closed;
static CUresult used_rc = CUDA_SUCCESS;

static void set_flag(int *flag)
{
    pthread_mutex_lock(&lock);
    *flag = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void wait_flag(const int *flag)
{
    pthread_mutex_lock(&lock);
    while (!*flag)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

/* Uses the library (which sets its per-thread keys), then waits for the
 * dlclose() before it exits, so that the keys' destructors run after it. */
static void *user(void *arg)
{
    (void)arg;
    cuctx_ctx ctx = {0};
    cuctx_event ev = {0};
    CUresult rc = api.init();
    if (rc == CUDA_SUCCESS)
        rc = api.ctx_create(&ctx, 0, 0);
    if (rc == CUDA_SUCCESS)
        rc = api.event_create(&ev, ctx, 0);
    if (rc == CUDA_SUCCESS)
        rc = api.event_destroy(&ev);
    if (rc == CUDA_SUCCESS)
        rc = api.ctx_destroy(&ctx);
    used_rc = rc;
    set_flag(&used);
    wait_flag(&closed);
    return NULL;
}

#define LOOKUP(h, field, name)                                                                     \
    do {                                                                                           \
        *(void **)&api.field = dlsym(h, name);                                                     \
        if (!api.field) {                                                                          \
            printf("Bail out! %s not found in the library: %s\n", name, dlerror());               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(void)
{
    const char *build = getenv("CUCTX_BUILDDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/lib/.libs/libcuctx.so", build && *build ? build : ".");
    printf("1..2\n");
    fflush(stdout);

    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("Bail out! dlopen(%s): %s\n", path, dlerror());
        return 1;
    }
    LOOKUP(h, init, "cuctx_init");
    LOOKUP(h, ctx_create, "cuctx_ctx_create");
    LOOKUP(h, ctx_destroy, "cuctx_ctx_destroy");
    LOOKUP(h, event_create, "cuctx_event_create");
    LOOKUP(h, event_destroy, "cuctx_event_destroy");

    pthread_t t;
    if (pthread_create(&t, NULL, user, NULL) != 0) {
        printf("Bail out! pthread_create failed\n");
        return 1;
    }
    wait_flag(&used);
    printf("%s 1 - a second thread made and destroyed a context and an event through the dlopen()ed library "
           "(%d)\n", used_rc == CUDA_SUCCESS ? "ok" : "not ok", (int)used_rc);
    fflush(stdout);

    dlclose(h);
    set_flag(&closed);
    pthread_join(t, NULL);   /* the thread's key destructors have run: a crash there ends the process */
    void *still = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    printf("ok 2 - after dlclose(), the thread exited cleanly (the library is %s)\n",
           still ? "still mapped" : "unmapped");
    if (still)
        dlclose(still);
    return used_rc == CUDA_SUCCESS ? 0 : 1;
}
