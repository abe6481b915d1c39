// scores.cu: S = scale * Q K^T, one thread per element.
//
// The most direct translation of the formula: thread (i, j) walks row i of Q and row j of K and
// writes one fp32 score to global memory. Every score of every head goes to memory: B*H*Lq*Lk
// floats, which is what later chapters learn to avoid. Neighbouring threads read neighbouring
// rows of K, d elements apart, so the loads of a warp are not coalesced: a cost this chapter
// accepts to stay readable, and measures.
#include <algorithm>

#include "kernels/numeric.cuh"
#include "naive.h"
#include "simt/simt.h"

namespace ch01 {
namespace {

constexpr int kTile = 16;  // a block computes a 16 x 16 tile of S

template <class T>
__global__ void scores_kernel(const attn::AttentionParams p, float* S) {
  const int j = static_cast<int>(blockIdx.x) * kTile + static_cast<int>(threadIdx.x);  // key
  if (j >= p.Lk) return;
  // Query tiles beyond the grid's 65535 y-blocks, and heads beyond its 65535 z-blocks, are taken in
  // turns (a long Lq with few keys is a small S).
  for (int i = static_cast<int>(blockIdx.y) * kTile + static_cast<int>(threadIdx.y); i < p.Lq;
       i += static_cast<int>(gridDim.y) * kTile)  // query
    for (int bh = static_cast<int>(blockIdx.z); bh < p.B * p.H; bh += static_cast<int>(gridDim.z)) {
      const T* q = static_cast<const T*>(p.q) + (static_cast<size_t>(bh) * p.Lq + i) * p.d;
      const T* k = static_cast<const T*>(p.k) + (static_cast<size_t>(bh) * p.Lk + j) * p.d;
      float s = 0.f;
      for (int c = 0; c < p.d; ++c) s += attn::load(q + c) * attn::load(k + c);
      S[(static_cast<size_t>(bh) * p.Lq + i) * p.Lk + j] = p.scale * s;
    }
}

}  // namespace

cudaError_t scores(const attn::AttentionParams& p, float* S) {
  const dim3 block(kTile, kTile);
  const dim3 grid((p.Lk + kTile - 1) / kTile, std::min((p.Lq + kTile - 1) / kTile, 65535), std::min(p.B * p.H, 65535));
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(scores_kernel<decltype(t)>, grid, block, 0, p, S);
  });
}

}  // namespace ch01
