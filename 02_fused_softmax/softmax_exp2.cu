// softmax_exp2.cu: step d. Step c in base 2: exp2f, with log2(e) folded into the scale.
//
// exp(x) = exp2(x * log2(e)), and exp2 is what the GPU's special-function unit computes: __expf
// is a multiply followed by that exp2. Multiplying the scores by scale * log2(e) once, as they
// are loaded, makes every exponential a bare exp2f(x - m), with m the maximum in base-2 units.
// The additive mask is converted the same way (mask_score's last argument). Same bytes, fewer
// instructions per score.
// Cost: none in accuracy worth measuring; the scores in the row cache are in base 2.
#include "fused_softmax.h"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch02 {
namespace {

constexpr int kThreads = 256;

// One row, by the whole block.
template <bool OnChip>
__device__ __forceinline__ void softmax_row(const attn::AttentionParams& p, const float* S, float* P, long long row,
                                            float* scratch) {
  float* smem = simt::dynamic_smem<float>();
  const int bh = static_cast<int>(row / p.Lq), i = static_cast<int>(row % p.Lq), b = bh / p.H, h = bh % p.H;
  const float* s = S + row * p.Lk;
  float* out = P + row * p.Lk;
  const int tid = static_cast<int>(threadIdx.x);
  // [0, head) and [head + 4 * quads, Lk) one by one; [head, head + 4 * quads) as float4. S and P
  // are allocated alike (the launcher checks), so one head serves both.
  const int misaligned = static_cast<int>(reinterpret_cast<uintptr_t>(s) % 16 / 4);
  const int head = min((4 - misaligned) % 4, p.Lk);
  const int quads = (p.Lk - head) / 4, tail = head + 4 * quads;
  float* cached = smem + 4 - head;  // so that cached + head is 16-byte aligned too
  // The at most 3 + 3 edge elements, one per thread: thread tid takes edge element `edge`.
  const int edge = tid < head ? tid : tid - head < p.Lk - tail ? tail + tid - head : -1;
  const float scale_log2 = p.scale * attn::kLog2e;
  auto masked = [&](int j, float x) { return attn::mask_score(p, b, h, i, j, x * scale_log2, attn::kLog2e); };

  float m = -INFINITY;
  for (int q = tid; q < quads; q += kThreads) {
    const int j = head + 4 * q;
    const float4 x = *reinterpret_cast<const float4*>(s + j);
    const float4 y = make_float4(masked(j, x.x), masked(j + 1, x.y), masked(j + 2, x.z), masked(j + 3, x.w));
    if (OnChip) *reinterpret_cast<float4*>(cached + j) = y;
    m = fmaxf(m, fmaxf(fmaxf(y.x, y.y), fmaxf(y.z, y.w)));
  }
  if (edge >= 0) {
    const float y = masked(edge, s[edge]);
    if (OnChip) cached[edge] = y;
    m = fmaxf(m, y);
  }
  m = attn::block_max(m, scratch);
  if (m == -INFINITY) {
    for (int j = tid; j < p.Lk; j += kThreads) out[j] = 0.f;
    return;
  }
  auto score = [&](int j) { return OnChip ? cached[j] : masked(j, s[j]); };
  float l = 0.f;
  for (int j = tid; j < p.Lk; j += kThreads) l += exp2f(score(j) - m);
  const float inv_l = 1.f / attn::block_sum(l, scratch);
  for (int q = tid; q < quads; q += kThreads) {
    const int j = head + 4 * q;
    *reinterpret_cast<float4*>(out + j) = make_float4(exp2f(score(j) - m) * inv_l, exp2f(score(j + 1) - m) * inv_l,
                                                      exp2f(score(j + 2) - m) * inv_l, exp2f(score(j + 3) - m) * inv_l);
  }
  if (edge >= 0) out[edge] = exp2f(score(edge) - m) * inv_l;
}

// A block per row; rows beyond the grid's 2^31 - 1 blocks are taken in turns, a barrier between
// two: the next row's first pass writes the cached row by its own alignment (head), so a thread may
// overwrite an element another still reads in this row's last pass.
// As in step c, 8 blocks per SM with the row on chip (32 registers; left to itself ptxas takes 39).
template <bool OnChip>
__global__ void __launch_bounds__(kThreads, OnChip ? 8 : 6)
    softmax_exp2_kernel(const attn::AttentionParams p, const float* S, float* P) {
  __shared__ float scratch[kScratch];
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    if (row != blockIdx.x) __syncthreads();
    softmax_row<OnChip>(p, S, P, row, scratch);
  }
}

}  // namespace

cudaError_t softmax_exp2(const attn::AttentionParams& p, const float* S, float* P) {
  if ((reinterpret_cast<uintptr_t>(S) - reinterpret_cast<uintptr_t>(P)) % 16 != 0) return cudaErrorMisalignedAddress;
  const dim3 grid(row_blocks(p)), block(kThreads);
  if (row_fits_on_chip(p.Lk))
    return simt::launch(softmax_exp2_kernel<true>, grid, block, (p.Lk + 4) * sizeof(float), p, S, P);
  return simt::launch(softmax_exp2_kernel<false>, grid, block, 0, p, S, P);
}

}  // namespace ch02
