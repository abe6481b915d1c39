// split_q.cu: step b. Warps split Q, not K.
//
// Step a gave each warp a quarter of every K/V tile, so every warp ended with partial results of
// every row and the warps had to merge them through shared memory. FlashAttention-2's work
// partitioning gives each warp its own rows of Q instead: here each thread owns one query row
// (4 warps x 32 lanes = 128 rows per block) and sees every key of every tile. Nothing is shared
// between warps but the K and V tiles, nothing is merged: the end of the kernel is a division.
// Cost: each thread walks all 64 keys of a tile (four times step a's share) and keeps 64 scores
// in shared memory; a block now needs 128 rows of Q to be busy.
#include "flash_v2.h"
#include "kernels/numeric.cuh"
#include "simt/simt.h"

namespace ch05 {
namespace {

constexpr int Br = 32 * kWarps, Bc = 64;

// From d = 80 on, a block's shared memory (117 KiB at d = 80) is over half of the most any SM has
// (228 KiB, sm_90 and sm_100): one block per SM on every GPU. Saying so (a minimum of 1 block) lets
// ptxas give o[d] the registers it needs; without it, sm_86 and sm_89 held d = 96 to 128 registers
// and spilled. Below, 0: no hint, ptxas's own choice.
template <int D>
constexpr int kMinBlocks = smem_bytes(Step::split_q, D, 4) > 114 * 1024 ? 1 : 0;

template <class T, int D>
__global__ void __launch_bounds__(32 * kWarps, kMinBlocks<D>) split_q_kernel(const attn::AttentionParams p) {
  float* Ks = simt::dynamic_smem<float>();      // [Bc][D]
  float* Vs = Ks + Bc * D;                      // [Bc][D]
  float* Qs = Vs + Bc * D;                      // [Br][D + 4]
  float* Ss = Qs + Br * (D + 4);                // [Br][Bc + 1]
  const int r = static_cast<int>(threadIdx.x);  // this thread's row of the Q tile
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H;
  const int i = static_cast<int>(blockIdx.x) * Br + r;
  const bool active = i < p.Lq;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * D;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * D;
  const float scale_log2 = p.scale * attn::kLog2e;
  float* q = Qs + r * (D + 4);
  float* s = Ss + r * (Bc + 1);

  const T* qrow = static_cast<const T*>(p.q) + (static_cast<size_t>(bh) * p.Lq + (active ? i : 0)) * D;
  for (int e = 0; e < D; ++e) q[e] = attn::load(qrow + e) * scale_log2;
  float o[D];
#pragma unroll
  for (int e = 0; e < D; ++e) o[e] = 0.f;
  float m = -INFINITY, l = 0.f;

  for (int k0 = 0; k0 < p.Lk; k0 += Bc) {
    __syncthreads();  // the previous tile is consumed
    for (int e = static_cast<int>(threadIdx.x); e < Bc * D; e += 32 * kWarps) {
      const int j = e / D;
      const bool in = k0 + j < p.Lk;
      Ks[e] = in ? attn::load(K + static_cast<size_t>(k0) * D + e) : 0.f;
      Vs[e] = in ? attn::load(V + static_cast<size_t>(k0) * D + e) : 0.f;
    }
    __syncthreads();
    if (!active) continue;
    float m_tile = m;  // the whole tile
    for (int j = 0; j < Bc; ++j) {
      const int key = k0 + j;
      float x = -INFINITY;
      if (key < p.Lk) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < D; ++e) dot += q[e] * Ks[j * D + e];
        x = attn::mask_score(p, b, h, i, key, dot, attn::kLog2e);
      }
      s[j] = x;
      m_tile = fmaxf(m_tile, x);
    }
    const float m_use = m_tile == -INFINITY ? 0.f : m_tile;  // nothing visible yet: keep exp2 finite
    const float alpha = exp2f(m - m_use);
    float sum = 0.f;
    for (int j = 0; j < Bc; ++j) sum += s[j] = exp2f(s[j] - m_use);
    l = l * alpha + sum;
    m = m_tile;
#pragma unroll
    for (int e = 0; e < D; ++e) o[e] *= alpha;
    for (int j = 0; j < Bc; ++j) {
      const float pj = s[j];
#pragma unroll
      for (int e = 0; e < D; ++e) o[e] += pj * Vs[j * D + e];
    }
  }

  if (!active) return;
  const float inv_l = l > 0.f ? 1.f / l : 0.f;  // no visible key: O = 0
  T* out = static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + i) * D;
#pragma unroll
  for (int e = 0; e < D; ++e) attn::store(out + e, o[e] * inv_l);
  if (p.lse) p.lse[static_cast<size_t>(bh) * p.Lq + i] = l > 0.f ? (m + log2f(l)) * 0.6931471805599453f : -INFINITY;
}

}  // namespace

cudaError_t split_q(const attn::AttentionParams& p) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return attn::dispatch_head_dim(CudaCoreDims{}, p.d, [&](auto d) {
      constexpr int D = decltype(d)::value;
      const size_t smem = smem_bytes(Step::split_q, D, 4);
      return simt::launch(split_q_kernel<decltype(t), D>, dim3((p.Lq + Br - 1) / Br, p.B * p.H), dim3(32 * kWarps),
                          smem, p);
    });
  });
}

}  // namespace ch05
