// bench_kernels.h: the kernels of the emulator's benchmark.
#pragma once
#include <cuda_runtime.h>

cudaError_t bench_barriers(int threads, int iters, int* out);
cudaError_t bench_shuffles(int threads, int iters, int* out);
// FlashAttention-style forward of `heads` heads of [n][d] fp32 (d = 64), 64 x 64 tiles.
cudaError_t bench_flash(const float* q, const float* k, const float* v, float* o, int heads, int n, int d, float scale);
