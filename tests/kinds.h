/* SPDX-License-Identifier: MIT */
/* kinds.h - the public child kinds, one line each. Every test program that
 * does something per kind expands this table (with the X-macro idiom of
 * CUCTX_CHILD_KINDS in lib/internal.h), so adding a kind to the tests is
 * one line here.
 *
 * X(name, type, stat, sim, letter, create_fn, destroy_fn, use_fn,
 *   destroy_needs_current, create, args, raw)
 *   name        the kind as cuctx spells it (cuctx_<name>_destroy) and the suite name of its tests
 *   type        its handle type
 *   stat        its live count in struct cuctx_stats
 *   sim         the simulator's object kind (enum cusim_kind)
 *   letter      how traces name its handles (name_handle in testlib.h)
 *   create_fn   the driver entry point cuctx's create calls
 *   destroy_fn  the driver entry point cuctx's destroy calls
 *   use_fn      the driver entry point of the tests' one use of it (NULL: none)
 *   destroy_needs_current  the owner must be current at the driver destroy
 *   create      cuctx's create function, called as create(&h, c, args...)
 *   args        its other arguments, the defaults the tests use; they may name
 *               the owner c (a graph exec's graph is made in it)
 *   raw         the accessor of the driver value (what the simulator's log names)
 */
#ifndef CUCTX_TEST_KINDS_H
#define CUCTX_TEST_KINDS_H

/* Bytes of device and of host memory the tests allocate. */
#define KIND_BYTES 4096

#define TEST_CHILD_KINDS(X)                                                                         \
    X(event, cuctx_event, events, CUSIM_EVENT, 'e', "cuEventCreate", "cuEventDestroy",              \
      "cuEventRecord", 0, cuctx_event_create, (0), cuctx_event_raw)                                 \
    X(stream, cuctx_stream, streams, CUSIM_STREAM, 's', "cuStreamCreateWithPriority",               \
      "cuStreamDestroy", "cuStreamSynchronize", 0, cuctx_stream_create, (0, 0), cuctx_stream_raw)   \
    X(module, cuctx_module, modules, CUSIM_MODULE, 'M', "cuModuleLoad", "cuModuleUnload",           \
      "cuModuleGetFunction", 0, cuctx_module_load, (test_data_path("vadd.ptx")), cuctx_module_raw)  \
    X(mem, cuctx_mem, mems, CUSIM_MEM, 'm', "cuMemAlloc", "cuMemFree", "cuMemsetD8", 1,             \
      cuctx_mem_alloc, (KIND_BYTES), cuctx_mem_ptr)                                                 \
    X(host_mem, cuctx_host_mem, host_mems, CUSIM_HOST_MEM, 'h', "cuMemHostAlloc", "cuMemFreeHost",  \
      NULL, 1, cuctx_host_mem_alloc, (KIND_BYTES, 0), cuctx_host_mem_ptr)                           \
    X(graph_exec, cuctx_graph_exec, graph_execs, CUSIM_GRAPH_EXEC, 'g',                             \
      "cuGraphInstantiateWithFlags", "cuGraphExecDestroy", "cuGraphLaunch", 0,                      \
      cuctx_graph_exec_instantiate, (test_graph(c), 0), cuctx_graph_exec_raw)

/* kind_info_<name>: a kind's name and driver entry points as data, for a
 * program that keeps its own list of the kinds it makes (stress.c). */
struct kind_info {
    const char *name, *create_fn, *destroy_fn;
};
#define KIND_INFO(name, type, stat, sim, letter, create_fn, destroy_fn, ...) \
    static const struct kind_info kind_info_##name __attribute__((unused)) = {#name, create_fn, destroy_fn};
TEST_CHILD_KINDS(KIND_INFO)
#undef KIND_INFO

/* args without its parentheses. */
#define KIND_ARGS(...) __VA_ARGS__
/* f(...) once the arguments are expanded: cuctx's creates are macros too,
 * and must see args as the arguments they are, not as one. */
#define KIND_APPLY(f, ...) f(__VA_ARGS__)

#endif
