// online_softmax.cu: step a. The row's maximum and sum in one pass.
//
// Chapter 02's warp per row read its row three times: once for the maximum m, once for the sum l
// of exp(x - m) (which needs m), once to write P. The split-softmax identity (online_softmax.cuh)
// lets each lane keep a running (m, l) over its elements, rescaling l whenever m grows, and the
// lanes merge their pairs in five shuffle steps. One pass gives both statistics; a second writes
// P. S is read twice instead of three times, without keeping the row on chip.
// Cost: an exp2 and a rescale when a lane's maximum grows; the merge is five steps of two shuffles.
#include <algorithm>

#include "kernels/numeric.cuh"
#include "online_softmax.cuh"
#include "simt/simt.h"
#include "tiled_softmax.h"

namespace ch03 {
namespace {

constexpr int kWarps = 4;  // rows per block

// One row, by one warp.
__device__ __forceinline__ void softmax_row(const attn::AttentionParams& p, const float* S, float* P, long long row) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int bh = static_cast<int>(row / p.Lq), i = static_cast<int>(row % p.Lq), b = bh / p.H, h = bh % p.H;
  const float* s = S + row * p.Lk;
  float* out = P + row * p.Lk;
  const float scale_log2 = p.scale * attn::kLog2e;
  auto score = [&](int j) { return attn::mask_score(p, b, h, i, j, s[j] * scale_log2, attn::kLog2e); };

  attn::RowStats st;
  for (int j = lane; j < p.Lk; j += 32) st = attn::push(st, score(j));  // pass 1: m and l together
  st = attn::warp_merge(st);
  const float inv_l = st.l > 0.f ? 1.f / st.l : 0.f;  // no visible key: P = 0
  for (int j = lane; j < p.Lk; j += 32) out[j] = st.l > 0.f ? exp2f(score(j) - st.m) * inv_l : 0.f;  // pass 2
}

// A warp per row; rows beyond the grid's 2^31 - 1 blocks of kWarps rows are taken in turns, by the
// whole warp (its row's test is the same for all its lanes, as the shuffles need).
__global__ void online_softmax_kernel(const attn::AttentionParams p, const float* S, float* P) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = static_cast<long long>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows;
       row += static_cast<long long>(gridDim.x) * kWarps)
    softmax_row(p, S, P, row);
}

}  // namespace

cudaError_t online_softmax(const attn::AttentionParams& p, const float* S, float* P) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  const long long blocks = std::min<long long>((rows + kWarps - 1) / kWarps, 2147483647);
  return simt::launch(online_softmax_kernel, dim3(static_cast<unsigned>(blocks)), dim3(32 * kWarps), 0, p, S, P);
}

}  // namespace ch03
