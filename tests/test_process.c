/* SPDX-License-Identifier: MIT */
/* test_process.c - the odd moments of a process's life, where cleanup runs:
 * fork with threads inside cuctx calls, a thread cancelled inside a driver
 * call, handles destroyed by thread-exit destructors, an error handler that
 * calls back into cuctx or is set while another thread reads it, the
 * driver shutting down at exit, destroys before the driver was ever
 * loaded. A hang is turned into a failure by alarm(). */
#define _GNU_SOURCE     /* REG_EFL, dl_iterate_phdr */
#include "testlib.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <threads.h>
#include <unistd.h>

#define H(p) ((uint64_t)(uintptr_t)(p))

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- fork --------------------------------------------------------------- */

struct sync_arg { cuctx_event ev; CUresult rc; };

static void *synchronize(void *p)
{
    struct sync_arg *a = p;
    a->rc = cuctx_event_synchronize(a->ev);
    return NULL;
}

struct inherited { cuctx_ctx ctx; cuctx_event ev; cuctx_stream s; };

static int destroy_inherited(void *p)
{
    struct inherited *in = p;
    unsigned long ev_calls = calls("cuEventDestroy"), s_calls = calls("cuStreamDestroy"),
                  ctx_calls = calls("cuCtxDestroy");
    if (cuctx_event_destroy(&in->ev) != CUDA_SUCCESS || in->ev.id != 0)
        return 1;
    if (cuctx_stream_destroy(&in->s) != CUDA_SUCCESS || in->s.id != 0)
        return 2;
    if (cuctx_ctx_destroy(&in->ctx) != CUDA_SUCCESS || in->ctx.id != 0)
        return 3;
    if (calls("cuEventDestroy") != ev_calls || calls("cuStreamDestroy") != s_calls
        || calls("cuCtxDestroy") != ctx_calls)
        return 4;   /* an object of the parent reached the child's driver */
    if (stats().events != 0 || stats().streams != 0 || stats().ctx_handles != 0)
        return 5;
    /* creates in the child give the driver's answer (the simulator works there) */
    cuctx_ctx c = {0};
    if (cuctx_ctx_create(&c, 0, 0) != CUDA_SUCCESS || cuctx_ctx_destroy(&c) != CUDA_SUCCESS)
        return 6;
    return 0;
}

Test(fork, the_child_never_sends_the_parents_objects_and_never_waits_for_its_threads)
{
    NEED_DRIVER();
    NEED_SIM();
    struct inherited in = {{0}, {0}, {0}};
    new_ctx(&in.ctx, 0, NULL, POPPED);
    CHECK_OK(cuctx_event_create(&in.ev, in.ctx, 0));
    CHECK_OK(cuctx_stream_create(&in.s, in.ctx, 0, 0));
    CHECK_OK(cuctx_event_record(in.ev, in.s));
    sim()->set_delay("cuEventSynchronize", 400000);
    struct sync_arg a = {in.ev, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, synchronize, &a), 0);
    sleep_ms(100);                      /* the thread is inside the driver call, holding */
    cr_assert_eq(in_child(destroy_inherited, &in), 0);
    pthread_join(t, NULL);
    CHECK_OK(a.rc);
    /* the parent's objects still work */
    sim()->set_delay("cuEventSynchronize", 0);
    CHECK_OK(cuctx_event_synchronize(in.ev));
    CHECK_OK(cuctx_event_destroy(&in.ev));
    CHECK_OK(cuctx_stream_destroy(&in.s));
    CHECK_OK(cuctx_ctx_destroy(&in.ctx));
    cr_assert_eq(calls("cuEventDestroy"), 1, "only the parent destroyed it");
    cr_assert_eq(misuses(), 0);
}

/* (the parent's parked pool, and what the child's create gave) */
struct parked_in { CUmemoryPool parents; };

static int create_pool_in_child(void *p)
{
    struct parked_in *in = p;
    cuctx_mem_pool pool = {0};
    unsigned long made = calls("cuMemPoolCreate");
    if (stats().parked_pools != 0)
        return 1;   /* the parent's parked pools counted in the child */
    if (cuctx_mem_pool_create(&pool, 0, NULL) != CUDA_SUCCESS)
        return 2;
    if (cuctx_mem_pool_raw(pool) == in->parents || calls("cuMemPoolCreate") != made + 1)
        return 3;   /* the child took the parent's pool */
    if (cuctx_mem_pool_destroy(&pool) != CUDA_SUCCESS || stats().parked_pools != 1)
        return 4;
    return 0;
}

/* Bug caught: a forked child taking a pool the parent parked (the parent's
 * pools are not the child's), or counting them. */
Test(fork, the_child_has_none_of_the_parents_parked_pools)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_mem_pool pool = {0};
    CHECK_OK(cuctx_mem_pool_create(&pool, 0, NULL));
    struct parked_in in = {cuctx_mem_pool_raw(pool)};
    CHECK_OK(cuctx_mem_pool_destroy(&pool));
    cr_assert_eq(stats().parked_pools, 1);
    cr_assert_eq(in_child(create_pool_in_child, &in), 0);
    cr_assert_eq(stats().parked_pools, 1, "the child's pool counted in the parent");
}

/* The slot index in a handle's id (kind 6 bits | index 26 | generation 32). */
static unsigned slot_index(uint64_t id)
{
    return (unsigned)(id >> 32) & ((1u << 26) - 1);
}

static int destroy_event_in_child(void *p)
{
    cuctx_event *ev = p;
    unsigned long destroys = calls("cuEventDestroy");
    if (cuctx_event_destroy(ev) != CUDA_SUCCESS || ev->id != 0)
        return 1;
    if (calls("cuEventDestroy") != destroys)
        return 2;   /* the parent's event reached the child's driver */
    return 0;
}

/* The fork forgets the pins of the parent's other threads on every slot,
 * the table's first included (registry.c, cuctx__registry_after_fork): an
 * event in slot 0 (the slot of a context destroyed first), pinned by a
 * thread inside its synchronize at the fork, is destroyed in the child
 * without waiting for that thread, which the child does not have. */
Test(fork, a_pin_on_the_first_slot_held_by_another_thread_is_forgotten_in_the_child)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx first = {0}, c = {0};
    cuctx_event ev[3] = {{0}};
    CHECK_OK(cuctx_ctx_create(&first, 0, 0));
    CHECK_OK(cuctx_pop_current());
    new_ctx(&c, 0, NULL, POPPED);
    CHECK_OK(cuctx_ctx_destroy(&first));    /* its slots, 0 among them, are free now */
    int at = -1;
    for (int i = 0; i < 3 && at < 0; i++) {
        CHECK_OK(cuctx_event_create(&ev[i], c, 0));
        if (slot_index(ev[i].id) == 0)
            at = i;
    }
    cr_assert_geq(at, 0, "no event took slot 0 (the table hands out slots in another order now)");
    CHECK_OK(cuctx_event_record(ev[at], (cuctx_stream){0}));
    sim()->set_delay("cuEventSynchronize", 400000);
    struct sync_arg a = {ev[at], CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, synchronize, &a), 0);
    while (sim()->sleeping() == 0)
        sleep_ms(1);                    /* the thread is inside the driver call, the event pinned */
    cuctx_event in_child_ev = ev[at];
    cr_assert_eq(in_child(destroy_event_in_child, &in_child_ev), 0);
    pthread_join(t, NULL);
    CHECK_OK(a.rc);
    sim()->set_delay("cuEventSynchronize", 0);
    for (int i = 0; i < 3; i++)
        CHECK_OK(cuctx_event_destroy(&ev[i]));
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
}

struct primary_arg { cuctx_ctx p; CUresult rc; };

static void *retain(void *p)
{
    struct primary_arg *a = p;
    a->rc = cuctx_ctx_primary(&a->p, 0);
    return NULL;
}

static int create_in_child(void *p)
{
    (void)p;
    cuctx_ctx c = {0}, q = {0};
    if (cuctx_ctx_create(&c, 0, 0) != CUDA_SUCCESS || cuctx_ctx_destroy(&c) != CUDA_SUCCESS)
        return 1;
    if (cuctx_ctx_primary(&q, 1) != CUDA_SUCCESS || cuctx_ctx_destroy(&q) != CUDA_SUCCESS)
        return 2;
    return 0;
}

Test(fork, a_thread_inside_a_primary_retain_does_not_lock_the_child_out)
{
    NEED_DRIVER();
    NEED_SIM();
    sim()->set_delay("cuDevicePrimaryCtxRetain", 300000);
    struct primary_arg a = {{0}, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, retain, &a), 0);
    sleep_ms(100);                      /* inside the retain, holding the context lock */
    sim()->set_delay("cuDevicePrimaryCtxRetain", 0);
    cr_assert_eq(in_child(create_in_child, NULL), 0);
    pthread_join(t, NULL);
    CHECK_OK(a.rc);
    CHECK_OK(cuctx_ctx_destroy(&a.p));
    cr_assert_eq(misuses(), 0);
}

/* ---- cancellation --------------------------------------------------------- */

Test(cancel, a_thread_cancelled_inside_event_synchronize_leaves_nothing_held)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx ctx = {0};
    new_ctx(&ctx, 0, NULL, POPPED);
    cuctx_event ev = {0}, other = {0};
    CHECK_OK(cuctx_event_create(&ev, ctx, 0));
    CHECK_OK(cuctx_event_create(&other, ctx, 0));
    sim()->set_delay("cuEventSynchronize", 5000000);
    struct sync_arg a = {ev, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    void *res = NULL;
    cr_assert_eq(pthread_create(&t, NULL, synchronize, &a), 0);
    sleep_ms(100);
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    size_t mark = log_mark();
    CHECK_OK(cuctx_event_destroy(&other));      /* the context's hold is gone */
    CHECK_OK(cuctx_event_destroy(&ev));         /* and the event's pin */
    cr_assert_eq(calls_on("cuEventDestroy", 0, mark), 0);
    cr_assert_eq(calls("cuEventDestroy"), 2, "both reached the driver");
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    cr_assert_eq(misuses(), 0);
}

Test(cancel, a_cancelled_holder_does_not_block_its_contexts_destroy)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx ctx = {0};
    new_ctx(&ctx, 0, NULL, POPPED);
    cuctx_event ev = {0};
    CHECK_OK(cuctx_event_create(&ev, ctx, 0));
    sim()->set_delay("cuEventSynchronize", 5000000);
    struct sync_arg a = {ev, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, synchronize, &a), 0);
    sleep_ms(100);
    cr_assert_eq(pthread_cancel(t), 0);
    pthread_join(t, NULL);
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    uint64_t skips = stats().stale_skips;
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(stats().stale_skips, skips + 1);
    cr_assert_eq(misuses(), 0);
}

/* A thread cancelled inside cuCtxSynchronize, which its context
 * synchronize made after pushing the context, pops it while it unwinds
 * (cuctx__unwound) still holding the context: that pop failing is reported
 * then, so the report waits, and the thread ends without another release.
 * The report is delivered at the thread's exit (error.c's exit hook), on
 * that thread, once its holds are gone: not lost. */
struct ctx_sync_arg { cuctx_ctx c; };

static void *synchronize_ctx(void *p)
{
    struct ctx_sync_arg *a = p;
    (void)cuctx_ctx_synchronize(a->c);
    return NULL;
}

/* A thread synchronizing a's context (not current there: the synchronize
 * pushes it) is cancelled while the driver holds it past cuCtxSynchronize,
 * with the pop its unwinding makes failing; returns once it has ended. */
static void cancel_a_synchronize_whose_pop_fails(struct ctx_sync_arg *a)
{
    sim()->hold_after("cuCtxSynchronize");
    pthread_t t;
    void *res = NULL;
    cr_assert_eq(pthread_create(&t, NULL, synchronize_ctx, a), 0);
    while (sim()->sleeping() == 0)      /* past cuCtxSynchronize, the context held and pushed */
        sched_yield();
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    sim()->let_go();
}

Test(cancel, a_report_waiting_when_a_cancelled_thread_ends_reaches_the_handler_at_its_exit)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct ctx_sync_arg a = {{0}};
    struct handler_count hc;
    new_ctx(&a.c, 0, NULL, POPPED);     /* not current on the thread: the synchronize pushes it */
    CUcontext raw = cuctx_ctx_raw(a.c);
    count_handler_install(&hc);
    size_t mark = log_mark();
    unsigned long pops = calls("cuCtxPopCurrent"), syncs = calls("cuCtxSynchronize");
    cancel_a_synchronize_whose_pop_fails(&a);
    cr_assert_eq(calls_on("cuCtxPushCurrent", H(raw), mark), 1);
    cr_assert_eq(calls("cuCtxSynchronize"), syncs + 1);
    cr_assert_eq(calls("cuCtxPopCurrent"), pops + 1, "the unwinding thread did not pop the context it pushed once");
    cr_assert_eq(nth_call("cuCtxPopCurrent", mark, 0).rc, CUDA_ERROR_UNKNOWN);
    cr_assert_eq(hc.calls, 1, "the failed pop was reported %d times by the thread's end", hc.calls);
    cr_assert_eq(hc.last_rc, CUDA_ERROR_UNKNOWN);
    cr_assert_not_null(strstr(hc.last_msg, "cannot restore the previous context"), "%s", hc.last_msg);
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_ctx_destroy(&a.c));      /* the thread's hold is gone */
    cr_assert_eq(sim()->is_live(CUSIM_CONTEXT, H(raw)), 0);
    cr_assert_eq(misuses(), 0);
}

/* ---- thread exit ------------------------------------------------------------ */

static cuctx_ctx shared_ctx;
static pthread_key_t late_key;
static tss_t late_tss;
static _Atomic int destroyed_late;

static void destroy_at_exit(void *p)
{
    cuctx_event *ev = p;
    if (cuctx_event_destroy(ev) == CUDA_SUCCESS && ev->id == 0)
        destroyed_late++;
    free(ev);
}

static void *make_and_leave(void *use_tss)
{
    cuctx_event scratch = {0};      /* a slot freed here first sets up this thread's cache */
    if (cuctx_event_create(&scratch, shared_ctx, 0) != CUDA_SUCCESS || cuctx_event_destroy(&scratch) != CUDA_SUCCESS)
        return NULL;
    cuctx_event *ev = calloc(1, sizeof *ev);
    if (ev && cuctx_event_create(ev, shared_ctx, 0) == CUDA_SUCCESS) {
        if (use_tss)
            tss_set(late_tss, ev);
        else
            pthread_setspecific(late_key, ev);
    }
    return NULL;
}

static uint32_t slot_of(uint64_t id)
{
    return (uint32_t)(id >> 32) & ((1u << 26) - 1);
}

/* Thousands of threads, each destroying its handle in a destructor that runs
 * after cuctx's own (its key is made later): the slots are reused, so a new
 * handle still gets a low slot. */
static void many_threads_destroy_at_exit(int use_tss, int threads)
{
    NEED_DRIVER();
    new_ctx(&shared_ctx, 0, NULL, POPPED);
    cuctx_event warm = {0};
    CHECK_OK(cuctx_event_create(&warm, shared_ctx, 0));     /* cuctx's keys exist first */
    CHECK_OK(cuctx_event_destroy(&warm));
    if (use_tss)
        cr_assert_eq(tss_create(&late_tss, destroy_at_exit), thrd_success);
    else
        cr_assert_eq(pthread_key_create(&late_key, destroy_at_exit), 0);
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, make_and_leave, use_tss ? &late_tss : NULL), 0);
        pthread_join(t, NULL);
    }
    cr_assert_eq(destroyed_late, threads);
    cr_assert_eq(stats().events, 0);
    /* more handles than any cache holds, so some come from the table's end */
    cuctx_event probe[100] = {{0}};
    uint32_t top = 0;
    for (int i = 0; i < 100; i++) {
        CHECK_OK(cuctx_event_create(&probe[i], shared_ctx, 0));
        top = slot_of(probe[i].id) > top ? slot_of(probe[i].id) : top;
    }
    cr_assert_lt(top, 1000, "slot %u: the table grew with the threads", top);
    for (int i = 0; i < 100; i++)
        CHECK_OK(cuctx_event_destroy(&probe[i]));
    CHECK_OK(cuctx_ctx_destroy(&shared_ctx));
}

Test(thread_exit, handles_destroyed_by_pthread_key_destructors_reuse_their_slots)
{
    many_threads_destroy_at_exit(0, 20000);
}

Test(thread_exit, handles_destroyed_by_c11_tss_destructors_reuse_their_slots)
{
    many_threads_destroy_at_exit(1, 2000);
}

/* ---- the error handler calls back -------------------------------------------- */

static cuctx_ctx victim;
static int handler_calls;
static CUresult handler_destroy_rc = CUDA_ERROR_UNKNOWN;

static void destroy_the_context(CUresult rc, const char *message, void *user)
{
    (void)rc;
    (void)message;
    (void)user;
    if (rc == CUDA_SUCCESS)
        return;
    handler_calls++;
    handler_destroy_rc = cuctx_ctx_destroy(&victim);
}

Test(reentrancy, the_handler_may_destroy_the_context_whose_childs_cleanup_failed)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    new_ctx(&victim, 0, NULL, POPPED);
    cuctx_set_error_handler(destroy_the_context, NULL);
    {
        CUCTX_AUTO cuctx_mem m = {0};
        CHECK_OK(cuctx_mem_alloc(&m, victim, 4096));
        /* the free runs with the context pushed; putting the old one back fails */
        sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    }
    cr_assert_eq(handler_calls, 1);
    CHECK_OK(handler_destroy_rc);
    cr_assert_eq(victim.id, 0);
    cr_assert_eq(stats().contexts, 0);
    cr_assert_eq(calls("cuMemFree"), 1);
    cuctx_set_error_handler(NULL, NULL);
}

/* ---- the handler set while another thread reads it --------------------------- */

/* cuctx_set_error_handler stores the handler's function and user pointer
 * under a seqlock (error.c): a report on another thread that reads them
 * while a setter is between its stores must not take the pair torn (the
 * new function with the old user pointer, or the reverse), but wait and
 * take the new one whole. No driver call, lock or wait lies in the
 * setter's window, so the test makes the pause itself: it finds the two
 * fields in lib/'s data (the words that hold the pointers it set), makes
 * their page read-only, and lets every access to that page fault; the
 * fault handler lets each through, one instruction at a time (the x86
 * trap flag, then SIGTRAP), except the setter's second field store: there
 * the setter waits, the page made unreadable, while the other thread
 * reports. That thread's reads of the function field are counted: at its
 * second it has looked again (the setter is let go: the reader then waits
 * for its last store); a handler called first (meanwhile) is let go too,
 * and tells the test it was called inside the window. A second setter in
 * the window must wait its turn: its third read of one word (it spins)
 * lets the first go on, a store to a field ends the window too, and says
 * that it went in beside the first. x86-64 Linux only;
 * not under a sanitizer, whose own handlers and shadow memory would see
 * the faults. */
#if defined(__x86_64__) && defined(__linux__)
#define FAULT_STEPPING 1
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#undef FAULT_STEPPING
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#undef FAULT_STEPPING
#endif
#endif
#endif

#ifdef FAULT_STEPPING
#include <link.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <ucontext.h>

#define TRAP_FLAG 0x100L
#define WRITE_FAULT 2L      /* in the page fault's error code (REG_ERR): a write */

static struct {
    char *page;                     /* lib/'s page that holds the two fields */
    size_t size;
    uintptr_t fn_at, user_at;       /* the fields: found by their values */
    _Atomic int tracing;
    _Atomic int prot;               /* the page's protection between steps */
    int setter_stores;              /* the setter's stores to the fields so far */
    _Atomic int paused, reader_fn_reads, called_in_window, second_spun, second_went_in;
    uintptr_t second_read_at[16];   /* the second setter's reads, by word */
    int second_reads[16], second_words;
    sem_t go, resume;
} pw;
static _Thread_local int pw_role;  /* 1: the setter held, 2: the reporter, 3: a second setter */
static int pw_user_a, pw_user_b, pw_user_c;
static _Atomic int pw_calls_a, pw_calls_b, pw_calls_c, pw_torn;

static void pw_stop(void)
{
    atomic_store(&pw.tracing, 0);
    mprotect(pw.page, pw.size, PROT_READ | PROT_WRITE);
    sem_post(&pw.resume);
}

static void pw_fault(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    uintptr_t at = (uintptr_t)si->si_addr;
    if (!atomic_load(&pw.tracing) || at - (uintptr_t)pw.page >= pw.size) {
        signal(sig, SIG_DFL);       /* not the test's: the access crashes */
        return;
    }
    if (pw_role == 1 && (at == pw.fn_at || at == pw.user_at) && ++pw.setter_stores == 2) {
        atomic_store(&pw.paused, 1);
        atomic_store(&pw.prot, PROT_NONE);
        mprotect(pw.page, pw.size, PROT_NONE);
        sem_post(&pw.go);
        while (sem_wait(&pw.resume) != 0)
            continue;
        return;                     /* the page writable again: the store is made */
    }
    if (pw_role == 2 && at == pw.fn_at && atomic_fetch_add(&pw.reader_fn_reads, 1) == 1) {
        pw_stop();                  /* its second look: the setter goes on */
        return;
    }
    if (pw_role == 3 && atomic_load(&pw.paused)) {
        int write = (uc->uc_mcontext.gregs[REG_ERR] & WRITE_FAULT) != 0;
        if (write && (at == pw.fn_at || at == pw.user_at)) {
            atomic_store(&pw.second_went_in, 1);
            pw_stop();
            return;
        }
        if (!write) {
            int i = 0;
            while (i < pw.second_words && pw.second_read_at[i] != at)
                i++;
            if (i == pw.second_words && i < 16)
                pw.second_read_at[pw.second_words++] = at;
            if (i < 16 && ++pw.second_reads[i] == 3) {
                atomic_store(&pw.second_spun, 1);
                pw_stop();
                return;
            }
        }
    }
    mprotect(pw.page, pw.size, PROT_READ | PROT_WRITE);
    uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
}

static void pw_step(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    (void)sig, (void)si;
    uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
    if (atomic_load(&pw.tracing))
        mprotect(pw.page, pw.size, atomic_load(&pw.prot));
}

static void pw_record(void *user, void *own, _Atomic int *calls)
{
    if (atomic_load(&pw.tracing)) {
        atomic_store(&pw.called_in_window, 1);
        pw_stop();
    }
    (*calls)++;
    if (user != own)
        pw_torn++;
}

static void pw_handler_a(CUresult rc, const char *msg, void *user)
{
    (void)rc, (void)msg;
    pw_record(user, &pw_user_a, &pw_calls_a);
}

static void pw_handler_b(CUresult rc, const char *msg, void *user)
{
    (void)rc, (void)msg;
    pw_record(user, &pw_user_b, &pw_calls_b);
}

static void pw_handler_c(CUresult rc, const char *msg, void *user)
{
    (void)rc, (void)msg;
    pw_record(user, &pw_user_c, &pw_calls_c);
}

/* The words of every loaded object's writable segments that hold v. */
struct pw_scan { uintptr_t v, found[8]; int n; };

static int pw_scan_object(struct dl_phdr_info *info, size_t size, void *p)
{
    struct pw_scan *sc = p;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t from = (info->dlpi_addr + ph->p_vaddr + 7) & ~(uintptr_t)7;
        uintptr_t to = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        for (uintptr_t w = from; w + sizeof(uintptr_t) <= to; w += sizeof(uintptr_t))
            if (*(const uintptr_t *)w == sc->v && sc->n < 8)
                sc->found[sc->n++] = w;
    }
    return 0;
}

/* The one word found holding v that holds now too: a field of lib/'s. */
static uintptr_t pw_field(struct pw_scan *sc, uintptr_t now)
{
    uintptr_t at = 0;
    int n = 0;
    for (int i = 0; i < sc->n; i++)
        if (*(const uintptr_t *)sc->found[i] == now)
            at = sc->found[i], n++;
    cr_assert_eq(n, 1, "%d words hold the handler's field", n);
    return at;
}

static void *pw_set_b(void *unused)
{
    (void)unused;
    pw_role = 1;
    atomic_store(&pw.prot, PROT_READ);
    atomic_store(&pw.tracing, 1);
    mprotect(pw.page, pw.size, PROT_READ);
    cuctx_set_error_handler(pw_handler_b, &pw_user_b);
    return NULL;
}

static void *pw_report(void *p)
{
    cuctx_ctx *c = p;
    pw_role = 2;
    while (sem_wait(&pw.go) != 0)
        continue;
    (void)cuctx_ctx_synchronize(*c);    /* its pop fails: reported at its release */
    return NULL;
}

static void *pw_set_c(void *unused)
{
    (void)unused;
    pw_role = 3;
    while (sem_wait(&pw.go) != 0)
        continue;
    cuctx_set_error_handler(pw_handler_c, &pw_user_c);
    return NULL;
}

/* The fields found (the words that hold A's pair, then B's; A's set
 * again), the signal handlers installed (old: the ones to put back). */
static void pw_begin(struct sigaction old[2])
{
    struct pw_scan fns = {.v = (uintptr_t)pw_handler_a}, users = {.v = (uintptr_t)&pw_user_a};
    cuctx_set_error_handler(pw_handler_a, &pw_user_a);
    dl_iterate_phdr(pw_scan_object, &fns);
    dl_iterate_phdr(pw_scan_object, &users);
    cuctx_set_error_handler(pw_handler_b, &pw_user_b);
    pw.fn_at = pw_field(&fns, (uintptr_t)pw_handler_b);
    pw.user_at = pw_field(&users, (uintptr_t)&pw_user_b);
    cuctx_set_error_handler(pw_handler_a, &pw_user_a);
    pw.size = (size_t)sysconf(_SC_PAGESIZE);
    pw.page = (char *)(pw.fn_at & ~(uintptr_t)(pw.size - 1));
    cr_assert_eq(pw.user_at & ~(uintptr_t)(pw.size - 1), (uintptr_t)pw.page, "the two fields on two pages");
    sem_init(&pw.go, 0, 0);
    sem_init(&pw.resume, 0, 0);
    struct sigaction fault = {.sa_sigaction = pw_fault, .sa_flags = SA_SIGINFO}, step = fault;
    step.sa_sigaction = pw_step;
    cr_assert_eq(sigaction(SIGSEGV, &fault, &old[0]), 0);
    cr_assert_eq(sigaction(SIGTRAP, &step, &old[1]), 0);
}

static void pw_end(const struct sigaction old[2])
{
    sigaction(SIGSEGV, &old[0], NULL);
    sigaction(SIGTRAP, &old[1], NULL);
    cr_assert_eq(atomic_load(&pw.paused), 1, "the setter was not held between its stores");
}
#endif

Test(handler, a_report_read_while_another_thread_sets_the_handler_takes_the_new_pair_whole)
{
#ifndef FAULT_STEPPING
    cr_skip_test("needs x86-64 Linux without a sanitizer (single-stepping by the trap flag)");
#else
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, POPPED);       /* not current on the reporter: its synchronize pushes it */
    struct sigaction old[2];
    pw_begin(old);
    unsigned long pops = calls("cuCtxPopCurrent");
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    pthread_t reporter, setter;
    cr_assert_eq(pthread_create(&reporter, NULL, pw_report, &c), 0);
    cr_assert_eq(pthread_create(&setter, NULL, pw_set_b, NULL), 0);
    pthread_join(setter, NULL);
    pthread_join(reporter, NULL);
    pw_end(old);
    cr_assert_eq(calls("cuCtxPopCurrent"), pops + 1);
    cr_assert_eq(pw_calls_a + pw_calls_b, 1, "the failed pop was reported %d times", pw_calls_a + pw_calls_b);
    cr_assert_eq(pw_torn, 0, "a handler was called with the other's user pointer");
    cr_assert_eq(atomic_load(&pw.called_in_window), 0, "the report did not wait for the setter");
    cr_assert_eq(pw_calls_b, 1, "the report did not go to the handler being set");
    cr_assert_eq(atomic_load(&pw.reader_fn_reads), 2, "the report did not read the handler again");
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
#endif
}

Test(handler, a_second_setter_waits_for_the_first_to_finish)
{
#ifndef FAULT_STEPPING
    cr_skip_test("needs x86-64 Linux without a sanitizer (single-stepping by the trap flag)");
#else
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    cuctx_ctx c = {0};
    new_ctx(&c, 0, NULL, POPPED);
    struct sigaction old[2];
    pw_begin(old);
    pthread_t second, first;
    cr_assert_eq(pthread_create(&second, NULL, pw_set_c, NULL), 0);
    cr_assert_eq(pthread_create(&first, NULL, pw_set_b, NULL), 0);
    pthread_join(first, NULL);
    pthread_join(second, NULL);
    pw_end(old);
    cr_assert_eq(atomic_load(&pw.second_went_in), 0, "the second setter stored a field while the first was inside");
    cr_assert_eq(atomic_load(&pw.second_spun), 1, "the second setter did not wait");
    /* the last setter's pair, whole: a report gets C with C's user pointer */
    unsigned long pops = calls("cuCtxPopCurrent");
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    (void)cuctx_ctx_synchronize(c);     /* its pop fails: reported at its release */
    cr_assert_eq(calls("cuCtxPopCurrent"), pops + 1);
    cr_assert_eq(pw_calls_a + pw_calls_b + pw_calls_c, 1);
    cr_assert_eq(pw_torn, 0, "a handler was called with another's user pointer");
    cr_assert_eq(pw_calls_c, 1, "the report did not go to the handler set last");
    cuctx_set_error_handler(NULL, NULL);
    CHECK_OK(cuctx_pop_current());      /* the level the failed pop left */
    CHECK_OK(cuctx_ctx_destroy(&c));
    cr_assert_eq(misuses(), 0);
#endif
}

/* ---- the driver shut down ------------------------------------------------------ */

Test(shutdown, destroys_after_the_driver_deinitialized_succeed_quietly)
{
    NEED_DRIVER();
    NEED_SIM();
    struct handler_count hc;
    cuctx_ctx ctx = {0};
    new_ctx(&ctx, 0, NULL, POPPED);
    cuctx_event ev = {0}, ev2 = {0};
    cuctx_stream s = {0};
    CHECK_OK(cuctx_event_create(&ev, ctx, 0));
    CHECK_OK(cuctx_event_create(&ev2, ctx, 0));
    CHECK_OK(cuctx_stream_create(&s, ctx, 0, 0));
    count_handler_install(&hc);
    sim()->fail_all(CUDA_ERROR_DEINITIALIZED);
    size_t mark = log_mark();
    {
        CUCTX_AUTO cuctx_event auto_ev = ev;
        ev.id = 0;
    }
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_destroy(&ev2));
    CHECK_OK(cuctx_ctx_destroy(&ctx));
    cr_assert_eq(s.id + ev2.id + ctx.id, 0);
    cr_assert_eq(hc.calls, 0, "nothing reported: %s", hc.last_msg);
    cr_assert_eq(stats().shutdown_skips, 4);
    cr_assert_eq(stats().failed_destroys, 0);
    cr_assert_eq(stats().events + stats().streams + stats().ctx_handles, 0);
    cr_assert_leq(log_mark() - mark, 1, "the driver is not called once it answered DEINITIALIZED");
}

/* A primary context's child: its destroy asks the driver for the context's
 * id first, and a driver that has shut down answers that question with
 * DEINITIALIZED: the destroy is skipped as after shutdown, and its handle's
 * slot is freed all the same. */
Test(shutdown, a_child_whose_contexts_check_finds_the_driver_gone_is_skipped)
{
    NEED_DRIVER();
    NEED_SIM();
    struct handler_count hc;
    cuctx_ctx p = {0};
    cuctx_event ev = {0};
    CHECK_OK(cuctx_ctx_primary(&p, 0));
    CHECK_OK(cuctx_event_create(&ev, p, 0));
    count_handler_install(&hc);
    sim()->fail_all(CUDA_ERROR_DEINITIALIZED);
    size_t mark = log_mark();
    unsigned long destroys = calls("cuEventDestroy"), id_checks = calls("cuCtxGetId");
    CHECK_OK(cuctx_event_destroy(&ev));
    cr_assert_eq(ev.id, 0);
    cr_assert_eq(calls("cuEventDestroy"), destroys, "the driver is not asked to destroy the event");
    cr_assert_eq(log_mark() - mark, 1, "one driver call in all");
    cr_assert_eq(calls("cuCtxGetId"), id_checks + 1, "and that is the check of the context's id");
    cr_assert_eq(stats().shutdown_skips, 1);
    cr_assert_eq(stats().events, 0, "the event's slot is freed");
    cr_assert_eq(hc.calls, 0, "nothing reported: %s", hc.last_msg);
    CHECK_OK(cuctx_ctx_destroy(&p));
    cr_assert_eq(stats().shutdown_skips, 2);
}

/* A program whose exit handler, registered before cuctx started, destroys
 * handles: cuctx's own exit hook runs first, so they never reach the
 * driver, and nothing is printed. */
static cuctx_ctx exit_ctx;
static cuctx_event exit_ev;

static void destroy_at_process_exit(void)
{
    unsigned long before = calls("cuEventDestroy") + calls("cuCtxDestroy");
    int ok = cuctx_event_destroy(&exit_ev) == CUDA_SUCCESS && cuctx_ctx_destroy(&exit_ctx) == CUDA_SUCCESS
          && calls("cuEventDestroy") + calls("cuCtxDestroy") == before && stats().shutdown_skips == 2;
    _exit(ok ? 0 : 9);
}

static int exit_with_live_handles(void *p)
{
    int *err_pipe = p;
    dup2(err_pipe[1], 2);
    atexit(destroy_at_process_exit);
    if (cuctx_ctx_create(&exit_ctx, 0, 0) != CUDA_SUCCESS || cuctx_event_create(&exit_ev, exit_ctx, 0) != CUDA_SUCCESS)
        return 1;
    exit(0);
}

Test(shutdown, exit_handlers_that_destroy_handles_after_cuctx_shut_down_print_nothing)
{
    int err_pipe[2];
    NEED_SIM();
    cr_assert_eq(pipe(err_pipe), 0);
    cr_assert_eq(in_child(exit_with_live_handles, err_pipe), 0);
    close(err_pipe[1]);
    char buf[256] = {0};
    ssize_t n = read(err_pipe[0], buf, sizeof buf - 1);
    cr_assert_leq(n, 0, "stderr: %s", buf);
}

/* ---- before the driver was ever loaded ---------------------------------------- */

Test(no_driver, destroys_before_a_successful_init_reset_the_handle)
{
    setenv("CUCTX_DRIVER", "/nonexistent/libcuda.so.1", 1);
    cuctx_event ev = {UINT64_C(0x0200000100000001)};
    cuctx_ctx ctx = {UINT64_C(0x0100000200000001)};
    cuctx_mem m = {UINT64_C(0x0500000300000001)};
    cr_assert_eq(cuctx_event_destroy(&ev), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(cuctx_ctx_destroy(&ctx), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(cuctx_destroy(&m), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(ev.id + ctx.id + m.id, 0, "every destroy resets its handle");
}

/* ---- mutation survivors of lib/error.c (h2) ---- */

/* A report delivered at a thread's exit is no longer pending once its
 * handler is called: a handler that then calls cuctx (a function that holds
 * the context and lets go, which delivers what is pending) is not called a
 * second time with the same report. The scene is that of
 * a_report_waiting_when_a_cancelled_thread_ends_reaches_the_handler_at_its_exit.
 * Mutant killed: lib/error.c:131 `const` (`reports_pending = 1` in
 * error.c's exit hook: the handler's own cuctx call delivered the report
 * again, the handler called twice). */
struct reentrant_count_h2 { cuctx_ctx c; int calls; CUresult last_rc; };

static void count_and_ask_h2(CUresult rc, const char *message, void *user)
{
    struct reentrant_count_h2 *r = user;
    (void)message;
    if (rc == CUDA_SUCCESS)
        return;     /* debug notes */
    r->calls++;
    r->last_rc = rc;
    int cur = -1;
    (void)cuctx_ctx_is_current(r->c, &cur);    /* holds the context and lets go */
}

Test(cancel, a_report_delivered_at_a_threads_exit_is_delivered_once_when_its_handler_calls_cuctx)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct ctx_sync_arg a = {{0}};
    struct reentrant_count_h2 rec = {{0}, 0, CUDA_SUCCESS};
    new_ctx(&a.c, 0, NULL, POPPED);
    CUcontext raw = cuctx_ctx_raw(a.c);
    rec.c = a.c;
    cuctx_set_error_handler(count_and_ask_h2, &rec);
    size_t mark = log_mark();
    unsigned long pops = calls("cuCtxPopCurrent");
    cancel_a_synchronize_whose_pop_fails(&a);
    cr_assert_eq(calls("cuCtxPopCurrent"), pops + 1);
    cr_assert_eq(nth_call("cuCtxPopCurrent", mark, 0).rc, CUDA_ERROR_UNKNOWN);
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(rec.calls, 1, "the failed pop was reported %d times by the thread's end", rec.calls);
    cr_assert_eq(rec.last_rc, CUDA_ERROR_UNKNOWN);
    CHECK_OK(cuctx_ctx_destroy(&a.c));
    cr_assert_eq(sim()->is_live(CUSIM_CONTEXT, H(raw)), 0);
    cr_assert_eq(misuses(), 0);
}

/* ---- the error handler's message ------------------------------------------ */

/* The handler below calls cuctx - as the manual allows ("The error handler
 * may call any cuctx function") - and only then reads its message. */
struct msg_seen { int calls; char msg[512]; };

static void handler_calls_cuctx_first(CUresult rc, const char *message, void *user)
{
    struct msg_seen *seen = user;
    (void)rc;
    cuctx_event bogus = {UINT64_C(0x0400000100000001)};   /* no live event: fails, as a stale handle does */
    (void)cuctx_event_destroy(&bogus);
    seen->calls++;
    snprintf(seen->msg, sizeof seen->msg, "%s", message);
}

Test(handler, the_message_handed_to_the_handler_stays_its_own_while_the_handler_calls_cuctx)
{
    NEED_DRIVER();
    struct msg_seen seen = {0, ""};
    cuctx_set_error_handler(handler_calls_cuctx_first, &seen);
    cuctx_ctx stale = {UINT64_C(0x0100000500000007)};
    int ran = 0;
    CUCTX_SCOPED(stale) {                   /* cannot be entered: reported */
        ran = 1;
    }
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(ran, 0);
    cr_assert_eq(seen.calls, 1);
    cr_assert_not_null(strstr(seen.msg, "CUCTX_SCOPED"),
                       "the handler's message became another call's: \"%s\"", seen.msg);
}

/* The same for a report made while the thread held something, delivered
 * once it let go (from pending_msg): the handler's own cuctx call makes
 * and delivers another such report before the first handler reads its
 * message. */
static cuctx_host_mem nested_hm;
struct nested_seen { int calls; char first[512]; };

static void handler_destroys_host_mem_first(CUresult rc, const char *message, void *user)
{
    struct nested_seen *seen = user;
    (void)rc;
    if (seen->calls++ == 0) {
        (void)cuctx_pop_current();      /* the level the failed pop left */
        sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
        (void)cuctx_host_mem_destroy(&nested_hm);   /* its switch back fails: reported, nested */
        snprintf(seen->first, sizeof seen->first, "%s", message);
    }
}

Test(handler, a_deferred_report_keeps_its_message_while_the_handler_makes_another)
{
    NEED_DRIVER();
    NEED_SIM();
    cuctx_ctx a = {0};
    cuctx_event ev = {0};
    struct nested_seen seen = {0, ""};
    new_ctx(&a, 0, NULL, POPPED);
    CHECK_OK(cuctx_event_create(&ev, a, 0));
    CHECK_OK(cuctx_host_mem_alloc(&nested_hm, a, 64, 0));
    cuctx_set_error_handler(handler_destroys_host_mem_first, &seen);
    sim()->fail_call("cuCtxPopCurrent", 1, CUDA_ERROR_UNKNOWN);
    (void)cuctx_event_record(ev, (cuctx_stream){0});    /* its pop fails while it holds the event */
    cuctx_set_error_handler(NULL, NULL);
    cr_assert_eq(seen.calls, 2, "handler calls: %d", seen.calls);
    cr_assert_not_null(strstr(seen.first, "cuctx_event_record"),
                       "the first report's message became the nested one's: \"%s\"", seen.first);
    CHECK_OK(cuctx_pop_current());      /* the level the nested failed pop left */
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&a));
}

/* ---- cancellation between a create's driver call and its return ----------- */

struct create_arg { cuctx_ctx c; cuctx_event ev; CUcontext at_cleanup; int cleanup_ran; };

static void note_current(void *p)
{
    struct create_arg *a = p;
    a->cleanup_ran = 1;
    a->at_cleanup = (CUcontext)(uintptr_t)1;
    (void)cuctx_current_raw(&a->at_cleanup);
}

static void *create_event(void *p)
{
    struct create_arg *a = p;
    pthread_cleanup_push(note_current, a);
    (void)cuctx_event_create(&a->ev, a->c, 0);
    pthread_cleanup_pop(0);
    return NULL;
}

/* The thread has no context current; the create pushes the event's context,
 * makes the event, and is cancelled in the pop that should follow. */
static void cancel_a_create_in_its_pop(struct create_arg *a)
{
    pthread_t t;
    void *res = NULL;
    sim()->set_delay("cuCtxPopCurrent", 5000000);
    unsigned long made = calls("cuEventCreate");
    cr_assert_eq(pthread_create(&t, NULL, create_event, a), 0);
    while (calls("cuEventCreate") == made || sim()->sleeping() == 0)
        sched_yield();
    cr_assert_eq(pthread_cancel(t), 0);
    cr_assert_eq(pthread_join(t, &res), 0);
    cr_assert_eq(res, PTHREAD_CANCELED);
    sim()->set_delay("cuCtxPopCurrent", 0);
}

/* A create cancelled after its driver's create, as it puts the previous
 * context back: the object made must not outlive it unnamed (cuctx(3):
 * its handle then names the object, which the context's end or a destroy
 * of the handle ends). Before, the unwind gave the unpublished slot back
 * and the event lived on in the driver with no handle (attack a3). */
Test(cancel, a_create_cancelled_after_its_driver_create_leaves_no_unnamed_object)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct create_arg a = {{0}, {0}, NULL, 0};
    new_ctx(&a.c, 0, NULL, POPPED);
    unsigned long destroyed = calls("cuEventDestroy");
    cancel_a_create_in_its_pop(&a);
    cr_assert_eq(sim()->live(CUSIM_EVENT), stats().events,
                 "%zu event(s) in the driver, %zu handle(s): the cancelled create's event leaked",
                 sim()->live(CUSIM_EVENT), stats().events);
    cr_assert_eq(stats().events, 1);
    cr_assert_neq(a.ev.id, 0, "the handle does not name the event made");
    CUevent raw = cuctx_event_raw(a.ev);
    cr_assert_eq(sim()->is_live(CUSIM_EVENT, H(raw)), 1);
    CHECK_OK(cuctx_event_destroy(&a.ev));
    cr_assert_eq(calls("cuEventDestroy"), destroyed + 1);
    cr_assert_eq(sim()->live(CUSIM_EVENT), 0);
    CHECK_OK(cuctx_ctx_destroy(&a.c));
    cr_assert_eq(misuses(), 0);
}

/* cuctx(3), rule 11: the cancelled call "pops the context it made current,
 * as the cancellation unwinds it, before the thread's own cleanup handlers
 * run". */
Test(cancel, a_create_cancelled_in_its_pop_still_pops_before_the_threads_cleanup_handlers)
{
    NEED_DRIVER();
    NEED_SIM();
    alarm(10);
    struct create_arg a = {{0}, {0}, NULL, 0};
    new_ctx(&a.c, 0, NULL, POPPED);
    cancel_a_create_in_its_pop(&a);
    cr_assert_eq(a.cleanup_ran, 1);
    cr_assert_null(a.at_cleanup, "the cleanup handler found context %p current, pushed by the cancelled create",
                   (void *)a.at_cleanup);
    CHECK_OK(cuctx_ctx_destroy(&a.c));
    cr_assert_eq(misuses(), 0);
}
