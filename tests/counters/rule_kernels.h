// rule_kernels.h: small kernels, each made to show one counting rule (test_rules.cpp), and the
// unswizzled twin of chapter 05's K tile (test_chapters.cpp).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace rules {

// out[i] = in[i * stride] for i < n, one thread each, 128 threads per block: a warp's load reads
// 32 floats `stride` apart.
cudaError_t strided_copy(const float* in, float* out, int n, int stride);
// out[i] = a mix of threadIdx, blockIdx, blockDim and gridDim: no shared memory at all.
cudaError_t builtins_only(unsigned* out, int blocks, int threads);
// One warp: lane l writes and reads word l * stride of static (dynamic: false) or dynamic
// shared memory (32 * 33 floats), then out[l] = that word; and every lane reads word 0.
cudaError_t shared_stride(float* out, int stride, bool dynamic);
// One warp: lane l stores and loads `width` bytes (4, 8 or 16) at byte l * width * spread of
// static shared memory.
cudaError_t shared_vector(float* out, int width, int spread);
// One warp: lane l reads in[l] if l < 16, else in[l + 64] and in[l + 96]; then sums in[j] for
// j = l, l + 32, ... below n (n <= 64).
cudaError_t divergent(const float* in, float* out, int n);
// Each of `blocks` blocks of one warp: `per_warp` mma.sync m16n8k16, `exps` exp2f and `exps`
// __expf per lane, `shuffles` __shfl_xor_sync, `barriers` __syncthreads.
cudaError_t operations(float* out, int blocks, int per_warp, int exps, int shuffles, int barriers);
// Each of `blocks` blocks of one warp: loads in[64b + l], a barrier, stores it at out[64b + l] and
// loads in[64b + 32 + l], a barrier, stores the sum at out[64b + 32 + l].
cudaError_t phases(const float* in, float* out, int blocks);
// Every thread of `blocks` x 128 adds 1 to counter[thread % 32].
cudaError_t atomics(int* counter, int blocks);
// The same with the atomics a CPU makes of compare-and-swap loops: every thread adds 1 to
// sum[thread % 32] and raises most[thread % 32] to its block's index.
cudaError_t cas_atomics(float* sum, int* most, int blocks);
// out[i] = in[i] + in[(i + shift) % n] for i < n: every element read twice.
cudaError_t read_twice(const float* in, float* out, int n, int shift);
// Each of `blocks` blocks of one warp sums its own row of `len` floats (row b of rows), `passes`
// times over, into out[b]; with store_first, it first writes the row (out-of-place copies from
// rows into the row b of `scratch`) and sums that instead.
cudaError_t sweeps(const float* rows, float* scratch, float* out, int blocks, int len, int passes, bool store_first);
// A grid of `tiles` x `heads` blocks of 32 threads (heads_first: the heads in x, as chapter 09's
// step g; else the tiles in x, as chapter 05), block (tile t, head h) summing row h of kv (`len`
// floats) from element t * skip on (skip 0: all of it; > 0: fewer from each later tile, as a
// causal block's K/V) into out[h * tiles + t].
cudaError_t shared_rows(const float* kv, float* out, int tiles, int heads, int len, int skip, bool heads_first);

// A K tile of Bc = 64 rows of D = 64 halves, copied by cp.async into shared memory stored row
// after row (no swizzle, no padding), then read as B fragments with ldmatrix.x4 as chapter 05's
// scores() reads them: each 8-row matrix then sits in one group of 4 banks.
cudaError_t unswizzled_k_tile(const uint16_t* K, float* out);

// A 64 x 64 fp16 tensor (row-major, 128-byte rows) loaded as one TMA box with the 128-byte swizzle,
// then multiplied by itself with 4 wgmma m64n64k16 of one warpgroup (A and B from shared memory);
// out[t] = thread t's first accumulator element.
cudaError_t tma_wgmma(const uint16_t* tensor, float* out, int ahead = 0);

}  // namespace rules
