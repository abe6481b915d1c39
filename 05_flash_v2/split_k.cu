// split_k.cu: step a. FlashAttention-2's loop order, on CUDA cores.
//
// Chapter 04 kept O, l and m in global memory because its outer loop ran over K/V tiles: every
// Q tile came back Tc times. Here the loops are turned around: a block owns one tile of Q for its
// whole life (the grid covers Q tiles x heads x batches, so long sequences fill the GPU even with
// one head) and walks all K/V tiles. O stays in registers, unnormalized, and is divided by l once
// at the end; the log-sum-exp is written for a backward pass. Scores are in base 2 (scale *
// log2(e) folded into Q) as in chapter 03.
// Inside the block this step still splits the work as FA1 did, the scheme the FA2 paper calls
// "split-K": each of the 4 warps takes a quarter of every K/V tile for all 32 rows (lane = row),
// so each warp holds a partial (m, l, O) of every row, and at the end the four partials meet in
// shared memory, merged by the split-softmax identity. (Not to be confused with "split-KV", which
// divides the keys between blocks and merges in a second kernel: the decoding trick.)
// Where things live: a thread's row of O in registers (every loop over d is unrolled, so the
// compiler knows each index); its row of Q and its scores in shared memory, read in loops the
// compiler keeps rolled. Registers indexed at run time would go to local memory (a stack frame).
// Cost: the merge (4 x 32 x d floats through shared memory); d floats of O per thread, which is
// why d stops at 128.
#include <algorithm>

#include "flash_v2.h"
#include "kernels/numeric.cuh"
#include "simt/simt.h"

namespace ch05 {
namespace {

constexpr int Br = 32, Bc = 64, kSlice = Bc / kWarps;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps) split_k_kernel(const attn::AttentionParams p) {
  float* Ks = simt::dynamic_smem<float>();  // [Bc][D]
  float* Vs = Ks + Bc * D;                  // [Bc][D]
  float* Qs = Vs + Bc * D;                  // [Br][D + 4]: rows 16-byte aligned, lanes on distinct banks
  float* Ss = Qs + Br * (D + 4);            // [kWarps][Br][kSlice + 1]
  const int r = static_cast<int>(threadIdx.x % 32), w = static_cast<int>(threadIdx.x / 32);  // row, key slice
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H;
  const int i = static_cast<int>(blockIdx.x) * Br + r;
  const bool active = i < p.Lq;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const float scale_log2 = p.scale * attn::kLog2e;
  float* q = Qs + r * (D + 4);
  float* s = Ss + (w * Br + r) * (kSlice + 1);

  const T* qrow = static_cast<const T*>(p.q) + (static_cast<size_t>(bh) * p.Lq + (active ? i : 0)) * D;
  for (int e = w; e < D; e += kWarps) q[e] = attn::load(qrow + e) * scale_log2;  // the 4 warps share the row
  float o[D];
#pragma unroll
  for (int e = 0; e < D; ++e) o[e] = 0.f;
  float m = -INFINITY, l = 0.f;

  for (int k0 = 0; k0 < p.Lk; k0 += Bc) {
    __syncthreads();  // the previous tile is consumed (and Q written)
    for (int e = static_cast<int>(threadIdx.x); e < Bc * D; e += 32 * kWarps) {
      const int j = e / D;
      const bool in = k0 + j < p.Lk;
      Ks[e] = in ? attn::load(K + static_cast<size_t>(k0) * D + e) : 0.f;
      Vs[e] = in ? attn::load(V + static_cast<size_t>(k0) * D + e) : 0.f;
    }
    __syncthreads();
    if (!active) continue;
    float m_tile = m;  // this warp's quarter of the tile: keys w * kSlice ...
    for (int c = 0; c < kSlice; ++c) {
      const int j = w * kSlice + c, key = k0 + j;
      float x = -INFINITY;
      if (key < p.Lk) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < D; ++e) dot += q[e] * Ks[j * D + e];
        x = attn::mask_score(p, b, h, i, key, dot, attn::kLog2e);
      }
      s[c] = x;
      m_tile = fmaxf(m_tile, x);
    }
    const float m_use = m_tile == -INFINITY ? 0.f : m_tile;  // nothing visible yet: keep exp2 finite
    const float alpha = exp2f(m - m_use);
    float sum = 0.f;
    for (int c = 0; c < kSlice; ++c) sum += s[c] = exp2f(s[c] - m_use);
    l = l * alpha + sum;
    m = m_tile;
#pragma unroll
    for (int e = 0; e < D; ++e) o[e] *= alpha;
    for (int c = 0; c < kSlice; ++c) {
      const float pc = s[c];
      const float* v = Vs + (w * kSlice + c) * D;
#pragma unroll
      for (int e = 0; e < D; ++e) o[e] += pc * v[e];
    }
  }

  // The four warps' partial results of each row, merged through shared memory (the K and V
  // tiles' space is free now): row r's final m and l, then O column by column.
  __syncthreads();
  float* part_o = Ks;                    // [kWarps][Br][D]
  float* part_m = Qs;                    // [kWarps][Br]
  float* part_l = part_m + kWarps * Br;  // [kWarps][Br]
#pragma unroll
  for (int e = 0; e < D; ++e) part_o[(w * Br + r) * D + e] = o[e];
  part_m[w * Br + r] = m;
  part_l[w * Br + r] = l;
  __syncthreads();
  if (!active) return;
  float m_row = -INFINITY, l_row = 0.f;
#pragma unroll
  for (int x = 0; x < kWarps; ++x) m_row = fmaxf(m_row, part_m[x * Br + r]);
  const float m_use = m_row == -INFINITY ? 0.f : m_row;
  float scale_of[kWarps];
#pragma unroll
  for (int x = 0; x < kWarps; ++x) l_row += part_l[x * Br + r] * (scale_of[x] = exp2f(part_m[x * Br + r] - m_use));
  const float inv_l = l_row > 0.f ? 1.f / l_row : 0.f;  // no visible key: O = 0
  T* out = static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + i) * D;
  for (int e = w; e < D; e += kWarps) {  // each warp writes a quarter of the columns
    float acc = 0.f;
#pragma unroll
    for (int x = 0; x < kWarps; ++x) acc += part_o[(x * Br + r) * D + e] * scale_of[x];
    attn::store(out + e, acc * inv_l);
  }
  if (w == 0 && p.lse)
    p.lse[static_cast<size_t>(bh) * p.Lq + i] = l_row > 0.f ? (m_row + log2f(l_row)) * 0.6931471805599453f : -INFINITY;
}

}  // namespace

cudaError_t split_k(const attn::AttentionParams& p) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return attn::dispatch_head_dim(CudaCoreDims{}, p.d, [&](auto d) {
      constexpr int D = decltype(d)::value;
      const size_t smem = smem_bytes(Step::split_k, D, 4);
      return simt::launch(split_k_kernel<decltype(t), D>, dim3((p.Lq + Br - 1) / Br, p.B * p.H), dim3(32 * kWarps),
                          smem, p);
    });
  });
}

}  // namespace ch05
