/* SPDX-License-Identifier: MIT */
// vadd.cu - the kernel that examples/event_timing times: c = a + b.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
