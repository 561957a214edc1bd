/* SPDX-License-Identifier: MIT */
/* process.c - the odd moments of a process's life: fork and exit.
 *
 * fork: CUDA cannot be used in a forked child, and nothing the parent made
 * exists there. The child's handler (run by the forking thread, the only one
 * in the child) drops the holds and pins of the threads that did not come
 * along, ends every context entry and turns every context handle into a
 * borrow: the parent's objects are never sent to the child's driver, their
 * destroys succeed, and nothing waits for a thread that is not there.
 *
 * exit: with CUCTX_LEAK_CHECK=1 the exit hook first reports the objects
 * still alive. At process exit the driver shuts down and answers
 * CUDA_ERROR_DEINITIALIZED. From then on - or from cuctx's own exit hook,
 * which runs before the driver's teardown - destroys do not call it: they
 * succeed quietly, reset their handles, and are counted.
 */
#include "config.h"

#include "process.h"
#include "cuctx.h"
#include "driver.h"
#include "entry.h"
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void fork_prepare(void) { cuctx__ctx_lock_fork(-1); }
static void fork_parent(void) { cuctx__ctx_lock_fork(1); }

static void fork_child(void)
{
    cuctx__ctx_lock_fork(1);
    cuctx__registry_after_fork();
    cuctx__contexts_after_fork();
}

static void at_exit(void)
{
    const char *check = getenv("CUCTX_LEAK_CHECK");
    if (check && strcmp(check, "1") == 0)
        cuctx_leak_report(stderr);
    atomic_store(&cuctx__shutdown, 1);
}

void cuctx__process_init(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(at_exit);
}
