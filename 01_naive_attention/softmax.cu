// softmax.cu: P = softmax(mask(S)) row by row, one thread per row, three passes.
//
//   pass 1: m = max_j s_ij          (after is_causal / attn_mask: a masked key scores -inf)
//   pass 2: l = sum_j exp(s_ij - m)
//   pass 3: p_ij = exp(s_ij - m) / l
// Subtracting the row maximum keeps exp() from overflowing; it changes nothing mathematically.
// A row whose every key is masked has m = -inf: its P row is 0, and so is its output.
// One thread per row reads its row three times and writes it once; the threads of a warp read
// rows Lk floats apart (uncoalesced), and a short sequence leaves most of the GPU idle. Chapter
// 02 rewrites exactly this kernel.
#include <algorithm>

#include "kernels/numeric.cuh"
#include "naive.h"
#include "simt/simt.h"

namespace ch01 {
namespace {

template <class TP>
__global__ void softmax_kernel(const attn::AttentionParams p, const float* S, TP* P) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= p.Lq) return;
  for (int bh = static_cast<int>(blockIdx.y); bh < p.B * p.H; bh += static_cast<int>(gridDim.y)) {
    const int b = bh / p.H, h = bh % p.H;
    const size_t row = (static_cast<size_t>(bh) * p.Lq + i) * p.Lk;
    float m = -INFINITY;
    for (int j = 0; j < p.Lk; ++j) m = fmaxf(m, attn::mask_score(p, b, h, i, j, S[row + j]));
    float l = 0.f;
    if (m != -INFINITY)
      for (int j = 0; j < p.Lk; ++j) l += __expf(attn::mask_score(p, b, h, i, j, S[row + j]) - m);
    for (int j = 0; j < p.Lk; ++j) {
      const float e = m == -INFINITY ? 0.f : __expf(attn::mask_score(p, b, h, i, j, S[row + j]) - m);
      attn::store(P + row + j, e / (m == -INFINITY ? 1.f : l));
    }
  }
}

}  // namespace

cudaError_t softmax_rows(const attn::AttentionParams& p, const float* S, void* P, bool P_in_input_type) {
  const dim3 block(128), grid((p.Lq + 127) / 128, std::min(p.B * p.H, 65535));
  if (!P_in_input_type) return simt::launch(softmax_kernel<float>, grid, block, 0, p, S, static_cast<float*>(P));
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return simt::launch(softmax_kernel<T>, grid, block, 0, p, S, static_cast<T*>(P));
  });
}

}  // namespace ch01
