/* SPDX-License-Identifier: MIT */
/* test_abi.c - what the header compiles into callers and the library must
 * honour: the version macros against the library's, struct cuctx_stats read
 * through a size (shorter and longer than the library's), and the reserved
 * words of cuctx_scope. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "testlib.h"

Test(version, header_library_and_configure_agree)
{
    char made[32];
    snprintf(made, sizeof made, "%d.%d.%d", CUCTX_VERSION_MAJOR, CUCTX_VERSION_MINOR, CUCTX_VERSION_PATCH);
    cr_assert_str_eq(made, PACKAGE_VERSION, "the header's numbers are configure's version");
    cr_assert_str_eq(CUCTX_VERSION_STRING, PACKAGE_VERSION);
    cr_assert_str_eq(cuctx_version(), CUCTX_VERSION_STRING, "the library was built from this header");
    cr_assert_eq(cuctx_version_hex(), (unsigned)CUCTX_VERSION_HEX, "library %#x, header %#x", cuctx_version_hex(),
                 (unsigned)CUCTX_VERSION_HEX);
    cr_assert_eq(cuctx_version_hex(),
                 ((unsigned)CUCTX_VERSION_MAJOR << 16) | ((unsigned)CUCTX_VERSION_MINOR << 8) | CUCTX_VERSION_PATCH);
}

Test(version, works_without_a_driver)
{
    cr_assert_eq(setenv("CUCTX_DRIVER", "/nonexistent/libcuda.so.1", 1), 0);
    cr_assert_str_eq(cuctx_version(), PACKAGE_VERSION);
    cr_assert_eq(cuctx_init(), CUDA_ERROR_NOT_INITIALIZED);
}

/* One live event and one live stream in a fresh context, so that the
 * counts to read are known. */
static void two_children(cuctx_ctx *ctx, cuctx_event *ev, cuctx_stream *s)
{
    NEED_DRIVER();
    new_ctx(ctx, 0, "A", POPPED);
    CHECK_OK(cuctx_event_create(ev, *ctx, 0));
    CHECK_OK(cuctx_stream_create(s, *ctx, 0, 0));
}

Test(stats_abi, macro_passes_the_full_size)
{
    cuctx_ctx ctx = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    two_children(&ctx, &ev, &s);
    struct cuctx_stats st;
    memset(&st, 0xab, sizeof st);
    cuctx_stats_get(&st);
    cr_assert_eq(st.events, 1);
    cr_assert_eq(st.streams, 1);
    cr_assert_eq(st.mems, 0);
    cr_assert_eq(st.shutdown_skips, 0, "the last field of 0.1 is written");
    cr_assert_eq(cuctx_stats_get_sized(&st, sizeof st), sizeof st);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&ctx));
}

/* A program built against an older, shorter struct: only its bytes are
 * written. */
Test(stats_abi, shorter_struct_gets_only_its_fields)
{
    cuctx_ctx ctx = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    two_children(&ctx, &ev, &s);
    struct cuctx_stats st;
    memset(&st, 0xab, sizeof st);
    size_t old_size = offsetof(struct cuctx_stats, events) + sizeof st.events;
    cr_assert_eq(cuctx_stats_get_sized(&st, old_size), old_size);
    cr_assert_eq(st.events, 1);
    cr_assert_eq(st.ctx_handles, 1);
    const unsigned char *rest = (const unsigned char *)&st + old_size;
    for (size_t i = 0; i < sizeof st - old_size; i++)
        cr_assert_eq(rest[i], 0xab, "byte %zu past the caller's size was written", old_size + i);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&ctx));
}

/* A program built against a newer, longer struct: the fields this library
 * does not know read 0, and the return value says where its own end. */
Test(stats_abi, longer_struct_gets_zeros_past_the_known_fields)
{
    cuctx_ctx ctx = {0};
    cuctx_event ev = {0};
    cuctx_stream s = {0};
    two_children(&ctx, &ev, &s);
    struct newer {
        struct cuctx_stats known;
        uint64_t later[5];
    } st;
    memset(&st, 0xab, sizeof st);
    cr_assert_eq(cuctx_stats_get_sized((struct cuctx_stats *)&st, sizeof st), sizeof st.known);
    cr_assert_eq(st.known.events, 1);
    cr_assert_eq(st.known.streams, 1);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(st.later[i], 0, "field %zu unknown to the library is not zero", i);
    CHECK_OK(cuctx_stream_destroy(&s));
    CHECK_OK(cuctx_event_destroy(&ev));
    CHECK_OK(cuctx_ctx_destroy(&ctx));
}

Test(stats_abi, null_or_empty_writes_nothing)
{
    struct cuctx_stats st;
    memset(&st, 0xab, sizeof st);
    cr_assert_eq(cuctx_stats_get_sized(NULL, sizeof st), 0);
    cr_assert_eq(cuctx_stats_get_sized(&st, 0), 0);
    const unsigned char *b = (const unsigned char *)&st;
    for (size_t i = 0; i < sizeof st; i++)
        cr_assert_eq(b[i], 0xab);
}

/* One byte is room for one byte: a size smaller than the first field gets
 * that much of it, not nothing (here the low byte of `contexts`, 1 on a
 * little-endian machine with one context live). Mutant killed:
 * lib/diagnostics.c:91 (`size == 0` made `size == 1`: a size of 1 taken
 * for none; seed 31). */
Test(stats_abi, a_one_byte_struct_gets_one_byte)
{
    cuctx_ctx ctx = {0};
    CHECK_OK(cuctx_ctx_create(&ctx, 0, 0));
    struct cuctx_stats st;
    memset(&st, 0xab, sizeof st);
    cr_assert_eq(cuctx_stats_get_sized(&st, 1), 1);
    const unsigned char *b = (const unsigned char *)&st;
    size_t one = 1;
    cr_assert_eq(b[0], *(const unsigned char *)&one == 1 ? 1 : 0, "the first byte of contexts: %#x", b[0]);
    for (size_t i = 1; i < sizeof st; i++)
        cr_assert_eq(b[i], 0xab, "byte %zu written", i);
    CHECK_OK(cuctx_ctx_destroy(&ctx));
}

/* The reserved words are the room later versions grow into: a successful
 * enter zeroes them, whatever the caller's stack held. */
Test(scope_abi, enter_zeroes_the_reserved_words)
{
    cuctx_ctx ctx = {0};
    NEED_DRIVER();
    new_ctx(&ctx, 0, "A", POPPED);
    cuctx_scope sc;
    memset(&sc, 0xab, sizeof sc);
    CHECK_OK(cuctx_scope_enter(&sc, ctx));
    for (size_t i = 0; i < sizeof sc.cuctx__reserved / sizeof sc.cuctx__reserved[0]; i++)
        cr_assert_eq(sc.cuctx__reserved[i], 0, "reserved word %zu", i);
    cr_assert_eq(current(), cuctx_ctx_raw(ctx));
    cuctx_scope_exit(&sc);
    cr_assert_null(current());
    CHECK_OK(cuctx_ctx_destroy(&ctx));
}

Test(scope_abi, size_is_fixed)
{
    /* 32 bytes of state and 16 reserved, on LP64; lib/version.c asserts the
     * same when the library is built. */
    if (sizeof(void *) == 8)
        cr_assert_eq(sizeof(cuctx_scope), 48);
    cr_assert_eq(offsetof(cuctx_scope, cuctx__reserved) + sizeof(((cuctx_scope *)0)->cuctx__reserved),
                 sizeof(cuctx_scope), "the reserved words are last");
}
