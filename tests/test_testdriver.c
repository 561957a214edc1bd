/* SPDX-License-Identifier: MIT */
/*
 * test_testdriver.c - the simulated driver as a user's program meets it: the
 * program is linked with -lcuda against the test driver built here
 * (testdriver/libcuda.la, installed as libcuda.so.1) and calls the driver's
 * ABI symbols directly, as cuda.h names them; the simulator's controls
 * (cudasim.h) come from the same library. Each test says which bug it
 * catches. cuctx itself appears once, to show that it loads the same
 * library the program is linked with.
 */
#include <criterion/criterion.h>

#include <cuctx.h>
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudasim.h"
#include "testdriver_ptsz.h"

#define H(x) ((uint64_t)(uintptr_t)(x))

#define OK(call)                                                                                    \
    do {                                                                                            \
        CUresult rc_ = (call);                                                                      \
        cr_assert_eq(rc_, CUDA_SUCCESS, "line %d: %s gave %d", __LINE__, #call, (int)rc_);         \
    } while (0)
#define WANT(call, want)                                                                            \
    do {                                                                                            \
        CUresult rc_ = (call);                                                                      \
        cr_assert_eq(rc_, (want), "line %d: %s gave %d, expected %d", __LINE__, #call, (int)rc_,   \
                     (int)(want));                                                                  \
    } while (0)

static CUcontext ctx;

/* device 0's primary context, current; everything else starts from nothing. */
static void setup(void)
{
    cusim_reset();
    OK(cuInit(0));
    OK(cuDevicePrimaryCtxRetain(&ctx, 0));
    OK(cuCtxPushCurrent(ctx));
}

static void teardown(void)
{
    cusim_reset();
}

/* The last record of the call log, which must be a call of fn. */
static struct cusim_call last(const char *fn)
{
    struct cusim_call rec;
    size_t n = cusim_log_count();
    cr_assert_gt(n, 0);
    cr_assert_eq(cusim_log_get(n - 1, &rec), 0);
    cr_assert_str_eq(rec.fn, fn);
    return rec;
}

static void assert_misuse(size_t i, const char *fn, const char *why)
{
    const char *text = cusim_misuse_text(i);
    cr_assert_not_null(text, "no misuse #%zu", i);
    cr_assert(strncmp(text, fn, strlen(fn)) == 0 && text[strlen(fn)] == '(', "misuse #%zu is \"%s\", not from %s", i,
              text, fn);
    cr_assert(strstr(text, why), "misuse #%zu is \"%s\", expected \"%s\"", i, text, why);
}

TestSuite(testdriver, .init = setup, .fini = teardown);
TestSuite(testdriver_line);

/* --- the line on stderr --------------------------------------------------------------- */

/* What cuInit (called twice) wrote on stderr, in a child process of its own (the line is once per process). */
static char *stderr_of_cuinit(const char *quiet)
{
    char path[] = "/tmp/cuctx-testdriver-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (quiet)
            setenv("CUCTX_TESTDRIVER_QUIET", quiet, 1);
        else
            unsetenv("CUCTX_TESTDRIVER_QUIET");
        dup2(fd, 2);
        _exit(cuInit(0) == CUDA_SUCCESS && cuInit(0) == CUDA_SUCCESS ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cuInit failed in the child");
    static char text[4096];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    text[n > 0 ? n : 0] = '\0';
    return text;
}

/* Catches a test driver that does not say what it is, or says it at every cuInit. */
Test(testdriver_line, cuinit_says_once_what_the_driver_is)
{
    const char *text = stderr_of_cuinit(NULL);
    cr_assert(strncmp(text, "cuctx test driver: ", 19) == 0, "stderr: \"%s\"", text);
    cr_assert(strstr(text, "without a GPU") && strstr(text, "not for numerics") && strstr(text, "kernels run nothing") &&
              strstr(text, "CUCTX_TESTDRIVER_QUIET=1"), "stderr: \"%s\"", text);
    const char *nl = strchr(text, '\n');
    cr_assert(nl && nl[1] == '\0', "more than one line: \"%s\"", text);
}

/* Catches CUCTX_TESTDRIVER_QUIET=1 being ignored, which would break every output check of a user's program. */
Test(testdriver_line, quiet_says_nothing)
{
    cr_assert_str_eq(stderr_of_cuinit("1"), "");
    const char *text = stderr_of_cuinit("0");   /* "0" is not quiet */
    cr_assert(strncmp(text, "cuctx test driver: ", 19) == 0, "stderr: \"%s\"", text);
}

/* --- copies and memsets ------------------------------------------------------------------ */

/* Catches copies that do not move the bytes (or move them to the wrong place): in, device to device, out. */
Test(testdriver, copies_round_trip_through_device_memory)
{
    CUdeviceptr a, b;
    OK(cuMemAlloc(&a, 1000));
    OK(cuMemAlloc(&b, 1000));
    unsigned char in[1000], out[1000];
    for (int i = 0; i < 1000; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    memset(out, 0, sizeof out);
    OK(cuMemcpyHtoD(a, in, sizeof in));
    OK(cuMemcpyDtoD(b + 100, a, 900));
    OK(cuMemcpyDtoH(out, b + 100, 900));
    cr_assert_eq(memcmp(out, in, 900), 0);
    struct cusim_call r = last("cuMemcpyDtoH");
    cr_assert_eq(r.handle, b + 100);
    cr_assert_eq(r.arg, 900);
    cr_assert_eq(r.handle2, H(out));
    cr_assert_eq(cusim_calls("cuMemcpyDtoD"), 1);
    WANT(cuMemcpyDtoD(b + 200, a, 900), CUDA_ERROR_INVALID_VALUE);   /* past b's end */
    cr_assert_eq(cusim_misuse_count(), 1);
    assert_misuse(0, "cuMemcpyDtoD", "outside every live allocation");
}

/* Catches asynchronous copies that skip the stream check or do not copy. */
Test(testdriver, async_copies_check_their_stream_and_copy)
{
    CUstream s;
    CUdeviceptr d;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc(&d, 64));
    char in[64] = "copied in on a stream", out[64] = "", out2[64] = "";
    OK(cuMemcpyHtoDAsync(d, in, sizeof in, s));
    struct cusim_call r = last("cuMemcpyHtoDAsync");
    cr_assert_eq(r.stream, H(s));
    cr_assert_eq(r.arg, 64);
    OK(cuMemcpyDtoDAsync(d + 32, d, 32, s));
    OK(cuMemcpyDtoHAsync(out, d, sizeof out, s));
    OK(cuStreamSynchronize(s));
    cr_assert_str_eq(out, "copied in on a stream");
    cr_assert_str_eq(out + 32, "copied in on a stream");
    OK(cuMemcpyDtoHAsync(out2, d, sizeof out2, NULL));   /* the default stream */
    cr_assert_str_eq(out2, "copied in on a stream");
    cr_assert_eq(cusim_misuse_count(), 0);
    OK(cuStreamDestroy(s));
    memset(out, 0, sizeof out);
    cr_assert_neq(cuMemcpyDtoHAsync(out, d, sizeof out, s), CUDA_SUCCESS);
    cr_assert_eq(out[0], 0, "a copy on a destroyed stream copied");
    cr_assert_eq(cusim_misuse_count(), 1);
    assert_misuse(0, "cuMemcpyDtoHAsync", "stream not live");
}

/* Catches memsets that write the wrong width or value, or accept a misaligned pointer. */
Test(testdriver, memsets_write_8_16_and_32_bit_values)
{
    CUstream s;
    CUdeviceptr d;
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc(&d, 64));
    OK(cuMemsetD8(d, 0x11, 64));
    OK(cuMemsetD16(d + 2, 0xbeef, 3));
    OK(cuMemsetD32Async(d + 16, 0x01020304u, 2, s));
    OK(cuMemsetD8Async(d + 40, 0x7f, 4, s));
    OK(cuMemsetD16Async(d + 48, 0x0a0b, 1, s));
    unsigned char b[64];
    OK(cuMemcpyDtoH(b, d, sizeof b));
    uint16_t h;
    uint32_t w;
    memcpy(&h, b + 2, 2);
    cr_assert_eq(h, 0xbeef);
    memcpy(&h, b + 6, 2);
    cr_assert_eq(h, 0xbeef);
    cr_assert_eq(b[8], 0x11);
    memcpy(&w, b + 20, 4);
    cr_assert_eq(w, 0x01020304u);
    cr_assert_eq(b[24], 0x11);
    cr_assert(b[40] == 0x7f && b[43] == 0x7f && b[44] == 0x11);
    memcpy(&h, b + 48, 2);
    cr_assert_eq(h, 0x0a0b);
    struct cusim_call r = last("cuMemcpyDtoH");
    (void)r;
    cr_assert_eq(cusim_calls("cuMemsetD32Async"), 1);
    WANT(cuMemsetD32(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);   /* not 4-byte aligned */
    WANT(cuMemsetD16(d + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cusim_misuse_count(), 0);
    OK(cuStreamDestroy(s));
}

/* Catches a 2D copy that ignores pitches or offsets, or crashes on an array. */
Test(testdriver, a_2d_copy_follows_pitches_and_offsets)
{
    enum { W = 5, ROWS = 4, HPITCH = 8, DPITCH = 16 };
    unsigned char host[ROWS * HPITCH], back[ROWS * HPITCH];
    for (int i = 0; i < ROWS * HPITCH; i++)
        host[i] = (unsigned char)i;
    memset(back, 0xee, sizeof back);
    CUdeviceptr d;
    OK(cuMemAlloc(&d, DPITCH * (ROWS + 1)));
    OK(cuMemsetD8(d, 0, DPITCH * (ROWS + 1)));
    CUDA_MEMCPY2D in = {0};
    in.srcMemoryType = CU_MEMORYTYPE_HOST;
    in.srcHost = host;
    in.srcPitch = HPITCH;
    in.srcXInBytes = 1;
    in.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    in.dstDevice = d;
    in.dstPitch = DPITCH;
    in.dstY = 1;
    in.WidthInBytes = W;
    in.Height = ROWS;
    OK(cuMemcpy2D(&in));
    unsigned char flat[DPITCH * (ROWS + 1)];
    OK(cuMemcpyDtoH(flat, d, sizeof flat));
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < DPITCH; c++)
            cr_assert_eq(flat[(r + 1) * DPITCH + c], c < W ? host[r * HPITCH + 1 + c] : 0, "row %d byte %d", r, c);
    CUDA_MEMCPY2D out = {0};
    out.srcMemoryType = CU_MEMORYTYPE_UNIFIED;   /* a device pointer, found as one */
    out.srcDevice = d;
    out.srcPitch = DPITCH;
    out.srcY = 1;
    out.dstMemoryType = CU_MEMORYTYPE_HOST;
    out.dstHost = back;
    out.dstPitch = HPITCH;
    out.dstXInBytes = 1;
    out.WidthInBytes = W;
    out.Height = ROWS;
    OK(cuMemcpy2DAsync(&out, NULL));
    for (int r = 0; r < ROWS; r++)
        cr_assert_eq(memcmp(back + r * HPITCH + 1, host + r * HPITCH + 1, W), 0, "row %d", r);
    cr_assert_eq(back[0], 0xee);
    cr_assert_eq(last("cuMemcpy2DAsync").arg, W * ROWS);
    out.srcPitch = W - 1;
    WANT(cuMemcpy2D(&out), CUDA_ERROR_INVALID_VALUE);   /* a pitch narrower than a row */
    out.srcPitch = DPITCH;
    out.srcY = 2;                                       /* the last row falls past the allocation */
    WANT(cuMemcpy2D(&out), CUDA_ERROR_INVALID_VALUE);
    assert_misuse(0, "cuMemcpy2D", "outside every live allocation");
    out.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    WANT(cuMemcpy2D(&out), CUDA_ERROR_NOT_SUPPORTED);
    assert_misuse(1, "cuMemcpy2D", "arrays are not implemented");
}

/* --- launches and host work -------------------------------------------------------------- */

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n\n"
                          ".visible .entry fill(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";

/* Catches launches that are not recorded with what was asked, that do something, or that skip the checks. */
Test(testdriver, launches_are_recorded_and_run_nothing)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr d;
    OK(cuModuleLoadData(&mod, ptx));
    OK(cuModuleGetFunction(&f, mod, "fill"));
    OK(cuStreamCreate(&s, 0));
    OK(cuMemAlloc(&d, 16));
    OK(cuMemsetD8(d, 0x5a, 16));
    void *args[] = {&d};
    OK(cuLaunchKernel(f, 3, 2, 1, 128, 2, 1, 0, s, args, NULL));
    struct cusim_call r = last("cuLaunchKernel");
    cr_assert_eq(r.handle, H(f));
    /* grid x | y << 32 | z << 48, block x | y << 16 | z << 32 (cudasim.h) */
    cr_assert_eq((unsigned long long)r.arg, 3ull | 2ull << 32 | 1ull << 48);
    cr_assert_eq(r.flags, 128ull | 2ull << 16 | 1ull << 32);
    cr_assert_eq(r.stream, H(s));
    CUlaunchConfig cfg = {0};
    cfg.gridDimX = 4;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 64;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    OK(cuLaunchKernelEx(&cfg, f, args, NULL));
    r = last("cuLaunchKernelEx");
    cr_assert((unsigned long long)r.arg == (4ull | 1ull << 32 | 1ull << 48) && r.flags == (64ull | 1ull << 16 | 1ull << 32)
              && r.stream == H(s));
    unsigned char b[16];
    OK(cuMemcpyDtoH(b, d, sizeof b));
    for (int i = 0; i < 16; i++)
        cr_assert_eq(b[i], 0x5a, "a launch changed device memory");
    cfg.blockDimX = 2048;
    WANT(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
    WANT(cuLaunchKernelEx(NULL, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cusim_calls("cuLaunchKernelEx"), 3);
    cr_assert_eq(cusim_misuse_count(), 0);
    OK(cuModuleUnload(mod));
    WANT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_misuse(0, "cuLaunchKernel", "not live");
    OK(cuStreamDestroy(s));
}

static void host_fn(void *user)
{
    ++*(int *)user;
}

struct callback_seen {
    int calls;
    CUstream stream;
    CUresult status;
};

static void callback(CUstream s, CUresult status, void *user)
{
    struct callback_seen *seen = user;
    seen->calls++;
    seen->stream = s;
    seen->status = status;
}

/* Catches host functions and stream callbacks that never run, run with the wrong arguments, or run on a dead stream. */
Test(testdriver, host_functions_and_callbacks_run_at_once)
{
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    int ran = 0;
    OK(cuLaunchHostFunc(s, host_fn, &ran));
    cr_assert_eq(ran, 1);
    cr_assert_eq(last("cuLaunchHostFunc").stream, H(s));
    struct callback_seen seen = {0, NULL, CUDA_ERROR_UNKNOWN};
    OK(cuStreamAddCallback(s, callback, &seen, 0));
    cr_assert(seen.calls == 1 && seen.stream == s && seen.status == CUDA_SUCCESS);
    WANT(cuStreamAddCallback(s, callback, &seen, 1), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(seen.calls, 1);
    OK(cuStreamDestroy(s));
    cr_assert_neq(cuLaunchHostFunc(s, host_fn, &ran), CUDA_SUCCESS);
    cr_assert_eq(ran, 1, "a host function ran on a destroyed stream");
    cr_assert_eq(cusim_misuse_count(), 1);
}

/* --- the device ------------------------------------------------------------------------ */

/* Catches attribute answers a program would size its launches by going wrong, and unknown attributes answered as known. */
Test(testdriver, device_attributes_are_an_h200s)
{
    int v = -1;
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    cr_assert_eq(v, 9);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    cr_assert_eq(v, 0);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    cr_assert_eq(v, 132);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1));
    cr_assert_eq(v, 32);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0));
    cr_assert_eq(v, 1024);
    cr_assert_eq(last("cuDeviceGetAttribute").flags, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 0));
    cr_assert_eq(v, 0, "an attribute not modelled answers 0");
    v = -1;
    WANT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    WANT(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(v, -1);
    WANT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7), CUDA_ERROR_INVALID_DEVICE);
    char name[128];
    OK(cuDeviceGetName(name, sizeof name, 0));
    cr_assert(strstr(name, "cuctx test driver"), "name: %s", name);
}

/* Catches free memory that does not follow allocations and frees. */
Test(testdriver, memory_info_follows_live_allocations)
{
    size_t total = 0, dev_total = 0, free0 = 0, free1 = 0, free2 = 0;
    OK(cuDeviceTotalMem(&dev_total, 0));
    OK(cuMemGetInfo(&free0, &total));
    cr_assert_eq(total, dev_total);
    cr_assert_eq(free0, total);
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 3u << 20));
    OK(cuMemGetInfo(&free1, &total));
    cr_assert(free1 <= free0 - (3u << 20) && free1 > free0 - (4u << 20), "free %zu -> %zu", free0, free1);
    OK(cuMemFree(d));
    OK(cuMemGetInfo(&free2, &total));
    cr_assert_eq(free2, free0);
    CUcontext popped;
    OK(cuCtxPopCurrent(&popped));
    WANT(cuMemGetInfo(&free2, &total), CUDA_ERROR_INVALID_CONTEXT);
}

/* --- what is not implemented ------------------------------------------------------------- */

/* Catches a symbol of the real driver missing from the test driver (the loader would stop the program) or a stub that crashes or stays silent. */
Test(testdriver, an_entry_point_not_implemented_says_so)
{
    CUarray arr = NULL;
    CUDA_ARRAY_DESCRIPTOR desc = {0};
    WANT(cuArrayCreate(&arr, &desc), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_null(arr);
    struct cusim_call r = last("cuArrayCreate");
    cr_assert_eq(r.rc, CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cusim_calls("cuArrayCreate"), 1);
    cr_assert_eq(cusim_misuse_count(), 1);
    assert_misuse(0, "cuArrayCreate", "not implemented by the cuctx test driver (ABI symbol cuArrayCreate_v2)");
    /* cuGetProcAddress hands the same out, under the base name; an unknown name stays unknown. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    OK(cuGetProcAddress("cuArrayCreate", &fn, 3020, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    cr_assert(fn && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CUresult (*create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    memcpy(&create, &fn, sizeof fn);
    WANT(create(&arr, &desc), CUDA_ERROR_NOT_SUPPORTED);
    cr_assert_eq(cusim_calls("cuArrayCreate"), 2);
    WANT(cuGetProcAddress("cuNoSuchThing", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_ERROR_NOT_FOUND);
    cr_assert_null(fn);
}

/* --- the per-thread default stream ------------------------------------------------------- */

/* Catches the _ptsz/_ptds symbols missing, or not treating NULL as the per-thread stream. */
Test(testdriver, per_thread_default_stream_symbols_work)
{
    CUdeviceptr d;
    OK(cuMemAlloc(&d, 32));
    char in[32] = "per-thread stream", out[32] = "";
    OK(ptsz_copy_in_and_out(d, in, out, sizeof in));
    cr_assert_str_eq(out, in);
    struct cusim_call r;
    cr_assert_eq(cusim_log_get(cusim_log_count() - 2, &r), 0);
    cr_assert_str_eq(r.fn, "cuMemcpyHtoDAsync");
    cr_assert_eq(r.stream, H(CU_STREAM_PER_THREAD));
    /* cuGetProcAddress with the per-thread flag gives the _ptsz form too. */
    void *fn = NULL;
    OK(cuGetProcAddress("cuMemsetD8Async", &fn, 3020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    CUresult (*set)(CUdeviceptr, unsigned char, size_t, CUstream);
    memcpy(&set, &fn, sizeof fn);
    OK(set(d, 1, 4, NULL));
    cr_assert_eq(last("cuMemsetD8Async").stream, H(CU_STREAM_PER_THREAD));
    OK(cuGetProcAddress("cuMemsetD8Async", &fn, 3020, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    memcpy(&set, &fn, sizeof fn);
    OK(set(d, 1, 4, NULL));
    cr_assert_eq(last("cuMemsetD8Async").stream, 0);
    cr_assert_eq(cusim_misuse_count(), 0);
}

/* --- cuctx in the same program ------------------------------------------------------------ */

/* Catches cuctx loading another driver than the libcuda.so.1 the program is linked with. */
Test(testdriver, cuctx_loads_the_library_the_program_is_linked_with)
{
    unsetenv("CUCTX_DRIVER");     /* as a user's program runs: cuctx opens libcuda.so.1 */
    cuctx_ctx c = {0};
    cuctx_mem m = {0};
    size_t before = cusim_live(CUSIM_CONTEXT);
    cr_assert_eq(cuctx_ctx_create(&c, 0, 0), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    cr_assert_eq(cusim_live(CUSIM_CONTEXT), before + 1, "cuctx's context is not in the linked driver");
    cr_assert_eq(cuctx_mem_alloc(&m, c, 256), CUDA_SUCCESS, "%s", cuctx_last_error_message());
    char in[16] = "through cuctx", out[16] = "";
    OK(cuMemcpyHtoD(cuctx_mem_ptr(m), in, sizeof in));
    OK(cuMemcpyDtoH(out, cuctx_mem_ptr(m), sizeof out));
    cr_assert_str_eq(out, in);
    cr_assert_eq(cuctx_mem_destroy(&m), CUDA_SUCCESS);
    cr_assert_eq(cuctx_ctx_destroy(&c), CUDA_SUCCESS);
    cr_assert_eq(cusim_live(CUSIM_CONTEXT), before);
    cr_assert_eq(cusim_misuse_count(), 0);
}
