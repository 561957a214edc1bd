/* SPDX-License-Identifier: MIT */
/* controls.c - the cusim_* control API that tests reach with dlsym (cudasim.h). */
#include "sim.h"

/* ---------------------------------------------------------------------------
 * Control API.
 */
static int fn_index(const char *name)
{
	if (!name)
		return -1;
	for (int i = 0; i < F_COUNT; i++)
		if (strcmp(fn_names[i], name) == 0)
			return i;
	return -1;
}

SIM_VISIBLE void cusim_reset(void)
{
	pthread_mutex_lock(&S.lock);
	for (size_t i = 0; i < S.nbuckets; i++) {
		for (struct obj *o = S.buckets[i], *next; o; o = next) {
			next = o->hnext;
			free(o->buf);
			free(o->name);
			image_free(o->img);
			free(o);
		}
		S.buckets[i] = NULL;
	}
	S.nobjs = 0;
	capture_reset();
	pool_reset();
	peer_reset();
	ipc_reset();
	S.mem_list = NULL;
	memset(S.primary, 0, sizeof S.primary);
	memset(S.primary_refs, 0, sizeof S.primary_refs);
	memset(S.serial, 0, sizeof S.serial);
	memset(S.live, 0, sizeof S.live);
	S.live_primary = 0;
	S.next_device_addr = SIM_DEVICE_BASE;
	for (int k = 0; k < K_COUNT; k++)
		S.freed[k].n = 0;
	memset(S.calls, 0, sizeof S.calls);
	memset(S.calls_dead_ctx, 0, sizeof S.calls_dead_ctx);
	memset(sim_stub_calls, 0, sim_stub_count * sizeof sim_stub_calls[0]);
	S.log_start = S.log_len = 0;
	for (size_t i = 0; i < S.misuse_kept; i++)
		free(S.misuse[i]);
	S.misuse_kept = S.misuse_total = 0;
	S.nplans = 0;
	S.recycling = true;
	S.hide_ctx_id = false;
	S.hide_green = 0;
	S.leaked_streams = 0;
	S.stale_levels = false;
	S.sync_us = 0;
	S.fail_all = CUDA_SUCCESS;
	for (int i = 0; i < F_COUNT; i++)
		__atomic_store_n(&S.delay_us[i], 0u, __ATOMIC_RELAXED);
	__atomic_store_n(&S.hold_after, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&S.held, 0, __ATOMIC_SEQ_CST);
	/* Every thread's stack names values that no longer exist: a new epoch empties them all. */
	S.epoch++;
	stack_sync();
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_set_recycling(int on)
{
	pthread_mutex_lock(&S.lock);
	S.recycling = on != 0;
	if (!S.recycling)
		for (int k = 0; k < K_COUNT; k++)
			S.freed[k].n = 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE size_t cusim_log_count(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.log_len;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE int cusim_log_get(size_t i, struct cusim_call *out)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (out && i < S.log_len) {
		*out = S.log[(S.log_start + i) % S.log_cap];
		rc = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return rc;
}

/* A count of fn's calls: all of them (dead_ctx 0), or those answered
 * CUDA_ERROR_CONTEXT_IS_DESTROYED; an entry point not implemented is
 * counted by its ABI symbols' calls, none of which answers that. */
static unsigned long count_calls(const char *fn, int dead_ctx)
{
	int i = fn_index(fn);
	unsigned long n = 0;
	pthread_mutex_lock(&S.lock);
	if (i >= 0)
		n = dead_ctx ? S.calls_dead_ctx[i] : S.calls[i];
	else if (fn && !dead_ctx)
		for (size_t k = 0; k < sim_stub_count; k++)
			if (strcmp(sim_stubs[k].base, fn) == 0)
				n += sim_stub_calls[k];
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE unsigned long cusim_calls(const char *fn)
{
	return count_calls(fn, 0);
}

SIM_VISIBLE unsigned long cusim_calls_dead_ctx(const char *fn)
{
	return count_calls(fn, 1);
}

SIM_VISIBLE size_t cusim_misuse_count(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.misuse_total;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE const char *cusim_misuse_text(size_t i)
{
	const char *text = NULL;
	pthread_mutex_lock(&S.lock);
	if (i < S.misuse_kept)
		text = S.misuse[i];
	else if (i < S.misuse_total)
		text = "(misuse text not kept: over the limit)";
	pthread_mutex_unlock(&S.lock);
	return text;
}

/* The simulator's kind for a control-API kind, and whether it means primaries. */
static bool kind_of(enum cusim_kind ck, enum kind *k, bool *primary)
{
	static const struct { enum kind k; bool primary; } map[CUSIM_ALL] = {
		[CUSIM_CONTEXT] = { K_CTX, false }, [CUSIM_PRIMARY] = { K_CTX, true },
		[CUSIM_EVENT] = { K_EVENT, false }, [CUSIM_STREAM] = { K_STREAM, false },
		[CUSIM_MODULE] = { K_MODULE, false }, [CUSIM_MEM] = { K_MEM, false },
		[CUSIM_HOST_MEM] = { K_HOST, false }, [CUSIM_GRAPH] = { K_GRAPH, false },
		[CUSIM_GRAPH_EXEC] = { K_EXEC, false }, [CUSIM_LIBRARY] = { K_LIBRARY, false },
		[CUSIM_POOL] = { K_POOL, false }, [CUSIM_GREEN] = { K_GREEN, false },
		[CUSIM_IPC_MEM] = { K_IPCMEM, false },
	};
	if ((unsigned)ck >= CUSIM_ALL || ck == CUSIM_CAPTURE || ck == CUSIM_PEER)
		return false;
	*k = map[ck].k;
	*primary = map[ck].primary;
	return true;
}

SIM_VISIBLE size_t cusim_live(enum cusim_kind kind)
{
	enum kind k;
	bool primary;
	size_t n = 0;
	pthread_mutex_lock(&S.lock);
	if (kind == CUSIM_ALL) {
		static const enum kind all[] = { K_CTX, K_EVENT, K_STREAM, K_MODULE, K_MEM, K_HOST, K_GRAPH, K_EXEC,
						 K_LIBRARY, K_POOL, K_GREEN, K_IPCMEM };
		for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
			n += S.live[all[i]];
		n += S.live_primary + S.peer_live;
	} else if (kind == CUSIM_CAPTURE) {
		n = S.ncaptures;
	} else if (kind == CUSIM_PEER) {
		n = S.peer_live;
	} else if (kind_of(kind, &k, &primary)) {
		n = primary ? S.live_primary : S.live[k];
	}
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE int cusim_is_live(enum cusim_kind kind, uint64_t handle)
{
	enum kind k;
	bool primary;
	int live = 0;
	if (kind == CUSIM_CAPTURE) {
		k = K_STREAM;
		primary = false;
	} else if (!kind_of(kind, &k, &primary)) {
		return 0;
	}
	pthread_mutex_lock(&S.lock);
	struct obj *o = find(k, handle);
	live = o && o->live && o->primary == primary && (kind != CUSIM_CAPTURE || o->cap) &&
	       (kind != CUSIM_POOL || (!o->so.gone && !o->so.is_default));
	pthread_mutex_unlock(&S.lock);
	return live;
}

SIM_VISIBLE void cusim_fail_call(const char *fn, unsigned long nth, CUresult rc)
{
	int i = fn_index(fn);
	if (i < 0 || nth == 0)
		return;
	pthread_mutex_lock(&S.lock);
	if (S.nplans == S.plans_cap) {
		S.plans_cap = S.plans_cap ? 2 * S.plans_cap : 8;
		S.plans = xrealloc(S.plans, S.plans_cap * sizeof *S.plans);
	}
	S.plans[S.nplans++] = (struct plan){ (enum fn)i, S.calls[i] + nth, rc };
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_hide_ctx_id(int hide)
{
	pthread_mutex_lock(&S.lock);
	S.hide_ctx_id = hide != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_hide_green(int hide)
{
	pthread_mutex_lock(&S.lock);
	S.hide_green = hide == 2 ? 2 : hide != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE size_t cusim_leaked_streams(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.leaked_streams;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE int cusim_primary_outside_retain(int dev)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev)) {
		primary_retain(dev);
		rc = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE int cusim_primary_outside_release(int dev)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev) && primary_release(dev))
		rc = 0;
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE unsigned cusim_primary_refs(int dev)
{
	unsigned n = 0;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev))
		n = S.primary_refs[dev];
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE void cusim_set_delay(const char *fn, unsigned usec)
{
	int i = fn_index(fn);
	if (i >= 0)
		__atomic_store_n(&S.delay_us[i], usec, __ATOMIC_RELAXED);
}

SIM_VISIBLE void cusim_set_sync_time(unsigned usec)
{
	pthread_mutex_lock(&S.lock);
	S.sync_us = usec;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_hold_after(const char *fn)
{
	int i = fn ? fn_index(fn) : -1;
	__atomic_store_n(&S.hold_after, i + 1, __ATOMIC_SEQ_CST);
}

SIM_VISIBLE void cusim_let_go(void)
{
	__atomic_store_n(&S.held, 0, __ATOMIC_SEQ_CST);
}

SIM_VISIBLE unsigned cusim_sleeping(void)
{
	return __atomic_load_n(&S.sleeping, __ATOMIC_SEQ_CST);
}

SIM_VISIBLE void cusim_set_stale_levels(int on)
{
	pthread_mutex_lock(&S.lock);
	S.stale_levels = on != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_fail_all(CUresult rc)
{
	pthread_mutex_lock(&S.lock);
	S.fail_all = rc;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE size_t cusim_async_allocs_live(void)
{
	pthread_mutex_lock(&S.lock);
	size_t n = S.async_live;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE uint64_t cusim_default_pool(int dev)
{
	uint64_t v = 0;
	pthread_mutex_lock(&S.lock);
	if (valid_device(dev)) {
		struct obj *p = pool_default(dev);  /* made as cuDeviceGetDefaultMemPool would, without a call */
		v = p->value;
	}
	pthread_mutex_unlock(&S.lock);
	return v;
}

SIM_VISIBLE int cusim_pool_usage(uint64_t pool, uint64_t *used, uint64_t *reserved)
{
	int rc = -1;
	pthread_mutex_lock(&S.lock);
	struct obj *p = find(K_POOL, pool);
	if (p && p->live) {
		if (used)
			*used = p->so.used;
		if (reserved)
			*reserved = p->so.used + p->so.cached;
		rc = 0;
	}
	pthread_mutex_unlock(&S.lock);
	return rc;
}

SIM_VISIBLE size_t cusim_orphaned_work(void)
{
	size_t n = 0;
	pthread_mutex_lock(&S.lock);
	for (struct orphan *w = S.orphans; w; w = w->next)
		n += !w->done;
	pthread_mutex_unlock(&S.lock);
	return n;
}

SIM_VISIBLE void cusim_set_ipc_loopback(int on)
{
	pthread_mutex_lock(&S.lock);
	S.ipc_loopback = on != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE void cusim_set_peer_unsupported(int on)
{
	pthread_mutex_lock(&S.lock);
	S.peer_unsupported = on != 0;
	pthread_mutex_unlock(&S.lock);
}

SIM_VISIBLE int cusim_peer_enabled(uint64_t from, uint64_t to)
{
	pthread_mutex_lock(&S.lock);
	int on = peer_enabled(from, to);
	pthread_mutex_unlock(&S.lock);
	return on;
}
