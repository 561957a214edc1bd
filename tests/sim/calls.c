/* SPDX-License-Identifier: MIT */
/* calls.c - the call bookkeeping: enter() takes the lock, counts the call and applies
 * a fault plan or the not-initialised rule; leave() logs it and unlocks; the
 * call log, misuses, delays, and the checks entry points share. */
#include "sim.h"

/* ---------------------------------------------------------------------------
 * Call bookkeeping.  enter() takes the lock, counts the call and applies a
 * fault plan or the not-initialised rule; leave() logs it and unlocks.
 */
const char *const fn_names[F_COUNT] = { SIM_FUNCTIONS(SIM_NAME) };




const char *call_name(const struct call *c)
{
	return c->name ? c->name : fn_names[c->fn];
}

static void log_append(const struct call *c)
{
	struct cusim_call rec = { call_name(c), c->handle, c->ctx, c->rc, c->a.flags, c->a.arg, c->a.handle2, c->a.stream,
				  c->captured };
	if (S.log_len < S.log_cap) {
		S.log[(S.log_start + S.log_len) % S.log_cap] = rec;
		S.log_len++;
		return;
	}
	if (S.log_cap < SIM_LOG_MAX) {
		size_t cap = S.log_cap ? 2 * S.log_cap : 4096;
		if (cap > SIM_LOG_MAX)
			cap = SIM_LOG_MAX;
		S.log = xrealloc(S.log, cap * sizeof *S.log);
		S.log_cap = cap;
		S.log[S.log_len++] = rec;
		return;
	}
	/* Full: drop the oldest record, keeping the last SIM_LOG_MAX. */
	S.log[S.log_start] = rec;
	S.log_start = (S.log_start + 1) % S.log_cap;
}

void misuse(const struct call *c, uint64_t handle, const char *fmt, ...)
{
	S.misuse_total++;
	if (S.misuse_kept >= SIM_MISUSE_MAX)
		return;
	char detail[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	char *text = NULL;
	if (asprintf(&text, "%s(0x%llx): %s", call_name(c), (unsigned long long)handle, detail) < 0)
		return;
	if (S.misuse_kept == S.misuse_cap) {
		S.misuse_cap = S.misuse_cap ? 2 * S.misuse_cap : 16;
		S.misuse = xrealloc(S.misuse, S.misuse_cap * sizeof *S.misuse);
	}
	S.misuse[S.misuse_kept++] = text;
}

static void not_sleeping(void *unused)
{
	(void)unused;
	__atomic_sub_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
}

/* Sleeps without the lock, so other threads keep calling meanwhile and a cancel can land here. */
static void delay(enum fn fn)
{
	unsigned int us = __atomic_load_n(&S.delay_us[fn], __ATOMIC_RELAXED);
	if (!us)
		return;
	struct timespec left = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };
	__atomic_add_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
	pthread_cleanup_push(not_sleeping, NULL);      /* a cancel in the sleep still counts it out */
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		continue;
	pthread_cleanup_pop(1);
}

/* Returns true when the call must stop now with c->rc (everything fails, a
 * fault plan fired, or cuInit has not run); the arguments are logged either way. */
bool enter_as(struct call *c, enum fn fn, uint64_t handle, bool needs_init, struct args a)
{
	delay(fn);
	pthread_mutex_lock(&S.lock);
	c->fn = fn;
	c->name = NULL;
	c->handle = handle;
	c->a = a;
	c->ctx = stack_top();
	c->rc = CUDA_SUCCESS;
	c->captured = 0;
	unsigned long n = ++S.calls[fn];
	if (S.fail_all && fn != F_cuGetProcAddress) {
		c->rc = S.fail_all;
		return true;
	}
	for (size_t i = 0; i < S.nplans; i++) {
		if (S.plans[i].fn == fn && S.plans[i].at == n) {
			c->rc = S.plans[i].rc;
			S.plans[i] = S.plans[--S.nplans];
			return true;
		}
	}
	if (needs_init && !S.initialised) {
		c->rc = CUDA_ERROR_NOT_INITIALIZED;
		return true;
	}
	return false;
}

bool enter(struct call *c, enum fn fn, uint64_t handle)
{
	return enter_as(c, fn, handle, true, ARGS(0));
}

/* enter() for an entry point whose arguments the log keeps. */
bool enter_with(struct call *c, enum fn fn, uint64_t handle, struct args a)
{
	return enter_as(c, fn, handle, true, a);
}

/* cusim_hold_after: the call armed for, once done, waits here for cusim_let_go. */
static void hold_after(enum fn fn)
{
	int want = (int)fn + 1;
	if (__atomic_load_n(&S.hold_after, __ATOMIC_SEQ_CST) != want ||
	    !__atomic_compare_exchange_n(&S.hold_after, &want, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&S.held, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&S.sleeping, 1u, __ATOMIC_SEQ_CST);
	pthread_cleanup_push(not_sleeping, NULL);
	while (__atomic_load_n(&S.held, __ATOMIC_SEQ_CST)) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	pthread_cleanup_pop(1);
}

CUresult leave(struct call *c, CUresult rc)
{
	c->rc = rc;
	if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED && c->fn < F_COUNT)
		S.calls_dead_ctx[c->fn]++;
	log_append(c);
	pthread_mutex_unlock(&S.lock);
	hold_after(c->fn);
	return rc;
}

/* Looks up a live object a caller named; anything else is a misuse answered with the kind's error. */
CUresult need_live(const struct call *c, enum kind k, uint64_t v, struct obj **out)
{
	struct obj *o = find(k, v);
	if (o && o->live) {
		*out = o;
		return CUDA_SUCCESS;
	}
	/* a stream its green context's destroy left behind: documented 709, measured so, no crash */
	if (o && o->leaked)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if (o) {
		misuse(c, v, "%s not live: %s", kind_names[k], o->why);
		return dead_rc[k];
	}
	misuse(c, v, "%s not live: never created", kind_names[k]);
	return garbage_rc[k];
}

/* The calling thread's current context: 201 with none, 709 when it has been
 * destroyed (a green context's CUcontext also while the primary context under
 * it is inactive, after a reset: model). What is made in it belongs to
 * ctx_home(*out). */
CUresult need_current(struct obj **out)
{
	uint64_t top = stack_top();
	if (!top)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct obj *o = find(K_CTX, top);
	if (!o || !o->live || (S.stale_levels && T.id[T.depth - 1] != o->ctx_id))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if (o->green && !ctx_home(o)->live)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*out = o;
	return CUDA_SUCCESS;
}

bool current_is_dead(void)
{
	struct obj *o;
	return stack_top() != 0 && need_current(&o) == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

bool is_default_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* The context a stream argument runs in: the default stream means the current context's. */
CUresult stream_context(const struct call *c, CUstream s, struct obj **ctx)
{
	if (is_default_stream(s))
		return need_current(ctx);
	struct obj *so = NULL;
	CUresult rc = need_live(c, K_STREAM, H(s), &so);
	if (rc == CUDA_SUCCESS)
		*ctx = so->owner;
	return rc;
}

/* Work on stream s for object o (what: "event recorded", "graph exec
 * launched") must stay in o's context; anything else is a misuse. */
CUresult need_stream_of(const struct call *c, const struct obj *o, CUstream s, const char *what)
{
	struct obj *sctx;
	CUresult rc = stream_context(c, s, &sctx);
	if (rc)
		return rc;
	if (ctx_home(sctx) != o->owner) {
		misuse(c, o->value, is_default_stream(s) ? "%s on the default stream of a context other than its own"
							  : "%s on a stream of another context", what);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	return CUDA_SUCCESS;
}

bool valid_device(CUdevice dev)
{
	return dev >= 0 && dev < S.devices;
}

/* ---------------------------------------------------------------------------
 * Entry points the simulator does not implement (stubs.c): each is logged under
 * its base name, counted, recorded as a misuse naming it, and answers
 * CUDA_ERROR_NOT_SUPPORTED, so that a program linked against the real
 * driver's symbols runs on to its first such call and says which it was.
 * cusim_fail_all still applies; fault plans and delays do not.
 */
CUresult not_implemented(size_t i)
{
	pthread_mutex_lock(&S.lock);
	struct call c = { .fn = F_COUNT, .name = sim_stubs[i].base, .ctx = stack_top() };
	sim_stub_calls[i]++;
	if (S.fail_all)
		return leave(&c, S.fail_all);
	misuse(&c, 0, "not implemented by the cuctx test driver (ABI symbol %s): CUDA_ERROR_NOT_SUPPORTED",
	       sim_stubs[i].symbol);
	return leave(&c, CUDA_ERROR_NOT_SUPPORTED);
}

/* The newest ABI symbol of that name (the last in sorted order), not a _ptsz/_ptds one. */
void *stub_for(const char *base)
{
	void *fn = NULL;
	for (size_t i = 0; i < sim_stub_count; i++)
		if (strcmp(sim_stubs[i].base, base) == 0 && !strstr(sim_stubs[i].symbol, "_pt"))
			fn = sim_stubs[i].fn;
	return fn;
}
