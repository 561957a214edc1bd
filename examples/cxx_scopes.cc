/* SPDX-License-Identifier: MIT */
// cxx_scopes.cc - the same header from C++.
//
// cuctx is a C library, but C++ code that talks to the Driver API (or mixes
// with C code that does) can use it as is: the handles are plain structs, the
// macros work in g++ and clang++, and cleanup also runs while an exception
// unwinds the stack, so a throw out of a CUCTX_SCOPED block restores the
// context and destroys the block's objects like a return would. The program
// shows that, plus handles in a std::vector and a destroy on a std::thread,
// and exits 0 only if every check passed. No kernel: it runs on any GPU and on
// the simulated driver of `make check`.
#include <cuctx.h>

#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char *what)
{
    std::printf("  %s: %s\n", ok ? "ok" : "WRONG", what);
    if (!ok)
        failures++;
}

cuctx_stats stats()
{
    cuctx_stats st;
    cuctx_stats_get(&st);
    return st;
}

CUcontext current()
{
    CUcontext c = nullptr;
    cuctx_current_raw(&c);
    return c;
}

// A stream and an event made in ctx; throws if either cannot be made. The
// throw is no leak: s and ev are destroyed as the exception leaves.
cuctx_event make_and_fail(cuctx_ctx ctx, bool fail)
{
    CUCTX_SCOPED(ctx) {
        CUCTX_AUTO cuctx_stream s = {0};
        CUCTX_AUTO cuctx_event ev = {0};
        if (cuctx_stream_create(&s, ctx, 0, 0) != CUDA_SUCCESS || cuctx_event_create(&ev, ctx, 0) != CUDA_SUCCESS)
            throw std::runtime_error(cuctx_last_error_message());
        cuctx_event_record(ev, s);
        if (fail)
            throw std::runtime_error("failed on purpose, with ctx current and two objects alive");
        return CUCTX_MOVE(ev);  // the overload for cuctx_event; s is destroyed here
    }
    throw std::runtime_error(cuctx_last_error_message());  // the scope was refused
}

}  // namespace

int main()
{
    if (cuctx_init() != CUDA_SUCCESS) {
        std::fprintf(stderr, "cxx_scopes: %s\n", cuctx_last_error_message());
        return 1;
    }
    {
        CUCTX_AUTO cuctx_ctx ctx = {0};
        if (cuctx_ctx_create(&ctx, 0, CUCTX_SCHED_AUTO) != CUDA_SUCCESS || cuctx_pop_current() != CUDA_SUCCESS) {
            std::fprintf(stderr, "cxx_scopes: %s\n", cuctx_last_error_message());
            return 1;
        }

        std::printf("1. an exception out of CUCTX_SCOPED\n");
        try {
            cuctx_event kept = make_and_fail(ctx, true);
            cuctx_event_destroy(&kept);
        } catch (const std::exception &e) {
            std::printf("  caught: %s\n", e.what());
        }
        check(current() == nullptr, "the context current before the scope (none) is back");
        check(stats().streams == 0 && stats().events == 0, "the stream and the event were destroyed");
        cuctx_event kept = make_and_fail(ctx, false);
        check(kept.id != 0 && cuctx_event_synchronize(kept) == CUDA_SUCCESS, "without the throw, the event came out");
        cuctx_event_destroy(&kept);

        std::printf("2. handles in a std::vector\n");
        std::vector<cuctx_mem> bufs(8);     // value-initialised: all {0}
        for (auto &b : bufs)
            if (cuctx_mem_alloc(&b, ctx, 4096) != CUDA_SUCCESS)
                break;
        check(stats().mems == bufs.size(), "eight allocations alive");
        for (auto &b : bufs)
            cuctx_destroy(&b);              // destroys and resets each to {0}
        check(stats().mems == 0 && bufs[0].id == 0, "all freed, all handles reset");

        std::printf("3. a destroy on a std::thread\n");
        cuctx_stream s = {0};
        cuctx_stream_create(&s, ctx, 0, 0);
        cuctx_stream copy = s;
        CUresult rc = CUDA_ERROR_UNKNOWN;
        std::thread t([&] { rc = cuctx_stream_destroy(&s); });
        t.join();
        check(rc == CUDA_SUCCESS && s.id == 0, "the thread destroyed the stream");
        check(cuctx_stream_synchronize(copy) == CUDA_ERROR_INVALID_HANDLE, "the copy left here is refused");
    }   // ctx destroyed here
    cuctx_stats st = stats();
    check(st.contexts + st.ctx_handles + st.events + st.streams + st.mems == 0 && st.failed_destroys == 0,
          "nothing alive at the end");
    std::printf("cxx_scopes: %s\n", failures ? "FAILED" : "every check passed");
    return failures ? 1 : 0;
}
