// pv.cu: O = P V, one thread per output element.
//
// Thread (i, c) walks row i of P and column c of V. The threads of a warp take neighbouring
// columns c, so their loads of V are coalesced; each reads all of its P row, Lk floats.
#include <algorithm>

#include "kernels/numeric.cuh"
#include "naive.h"
#include "simt/simt.h"

namespace ch01 {
namespace {

template <class T>
__global__ void pv_kernel(const attn::AttentionParams p, const float* P) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);  // column of O
  if (c >= p.d) return;
  // Rows beyond the grid's 65535 y-blocks, and heads beyond its 65535 z-blocks, are taken in turns.
  for (int i = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y); i < p.Lq;
       i += static_cast<int>(gridDim.y * blockDim.y))  // query row
    for (int bh = static_cast<int>(blockIdx.z); bh < p.B * p.H; bh += static_cast<int>(gridDim.z)) {
      const float* prow = P + (static_cast<size_t>(bh) * p.Lq + i) * p.Lk;
      const T* v = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * p.d + c;
      float o = 0.f;
      for (int j = 0; j < p.Lk; ++j) o += prow[j] * attn::load(v + static_cast<size_t>(j) * p.d);
      attn::store(static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + i) * p.d + c, o);
    }
}

}  // namespace

cudaError_t pv(const attn::AttentionParams& p, const float* P) {
  const dim3 block(32, 8);
  const dim3 grid((p.d + 31) / 32, std::min((p.Lq + 7) / 8, 65535), std::min(p.B * p.H, 65535));
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(pv_kernel<decltype(t)>, grid, block, 0, p, P);
  });
}

}  // namespace ch01
