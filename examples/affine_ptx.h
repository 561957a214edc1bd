/* SPDX-License-Identifier: MIT */
/* affine_ptx.h - the kernel of the graph and library examples, as PTX
 * text the driver compiles at load: affine(x, y, n) sets y[i] = 2 * x[i] + 1
 * for i < n. */
#ifndef CUCTX_EXAMPLE_AFFINE_PTX_H
#define CUCTX_EXAMPLE_AFFINE_PTX_H

static const char affine_ptx[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry affine(\n"
    "    .param .u64 affine_x,\n"
    "    .param .u64 affine_y,\n"
    "    .param .u32 affine_n\n"
    ")\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<6>;\n"
    "    .reg .f32 %f<3>;\n"
    "    .reg .b64 %rd<8>;\n"
    "\n"
    "    ld.param.u64 %rd1, [affine_x];\n"
    "    ld.param.u64 %rd2, [affine_y];\n"
    "    ld.param.u32 %r2, [affine_n];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.s32 %r1, %r3, %r4, %r5;\n"
    "    setp.ge.u32 %p1, %r1, %r2;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd3, %rd1;\n"
    "    cvta.to.global.u64 %rd4, %rd2;\n"
    "    mul.wide.u32 %rd5, %r1, 4;\n"
    "    add.s64 %rd6, %rd3, %rd5;\n"
    "    ld.global.f32 %f1, [%rd6];\n"
    "    fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;\n"
    "    add.s64 %rd7, %rd4, %rd5;\n"
    "    st.global.f32 [%rd7], %f2;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

#endif
