// softmax_warp.cu: step a. One warp per row, shuffle reductions; scale and mask done here.
//
// Chapter 01 gave each row one thread, which walked the row alone, and its warp's 32 loads went
// to 32 different rows. Here the 32 lanes of a warp share one row: lane l takes elements l,
// l + 32, ..., so every load of the warp reads 32 consecutive floats (one 128-byte transaction),
// and the row's maximum and sum meet in five __shfl_xor_sync steps, with no shared memory. The
// scale moves in from the GEMM (which now writes Q K^T), so S is read with the mask in one place.
// Cost: a row is still read three times (max, sum, normalize), from cache if it stays there.
#include <algorithm>

#include "fused_softmax.h"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch02 {
namespace {

constexpr int kWarps = 4;  // rows per block

// One row, by one warp.
__device__ __forceinline__ void softmax_row(const attn::AttentionParams& p, const float* S, float* P, long long row) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int bh = static_cast<int>(row / p.Lq), i = static_cast<int>(row % p.Lq), b = bh / p.H, h = bh % p.H;
  const float* s = S + row * p.Lk;
  float* out = P + row * p.Lk;

  float m = -INFINITY;
  for (int j = lane; j < p.Lk; j += 32) m = fmaxf(m, attn::mask_score(p, b, h, i, j, p.scale * s[j]));
  m = attn::warp_max(m);
  if (m == -INFINITY) {  // no visible key: P = 0, and so O = 0
    for (int j = lane; j < p.Lk; j += 32) out[j] = 0.f;
    return;
  }
  float l = 0.f;
  for (int j = lane; j < p.Lk; j += 32) l += __expf(attn::mask_score(p, b, h, i, j, p.scale * s[j]) - m);
  const float inv_l = 1.f / attn::warp_sum(l);
  for (int j = lane; j < p.Lk; j += 32) out[j] = __expf(attn::mask_score(p, b, h, i, j, p.scale * s[j]) - m) * inv_l;
}

// A warp per row; rows beyond the grid's 2^31 - 1 blocks of kWarps rows are taken in turns, by the
// whole warp (its row's test is the same for all its lanes, as the shuffles need).
__global__ void softmax_warp_kernel(const attn::AttentionParams p, const float* S, float* P) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = static_cast<long long>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows;
       row += static_cast<long long>(gridDim.x) * kWarps)
    softmax_row(p, S, P, row);
}

}  // namespace

cudaError_t softmax_warp(const attn::AttentionParams& p, const float* S, float* P) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  const long long blocks = std::min<long long>((rows + kWarps - 1) / kWarps, 2147483647);
  return simt::launch(softmax_warp_kernel, dim3(static_cast<unsigned>(blocks)), dim3(32 * kWarps), 0, p, S, P);
}

}  // namespace ch02
