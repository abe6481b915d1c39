// fused_softmax_pv.cu: step b. Softmax and P V in one kernel: P never reaches memory.
//
// Step a still wrote P (B*H*Lq*Lk floats) for the P V kernel to read back. Here a warp owns one
// query row and walks its scores a tile of Bc = 64 keys at a time, keeping three things in
// registers: the running maximum m, the running sum l, and the unnormalized output row o. When a
// tile raises the maximum from m to m', everything accumulated so far was scaled by exp2(-m)
// instead of exp2(-m'): multiplying o and l by alpha = exp2(m - m') fixes it (the same identity
// as in step a, applied to o as well as to l). After the last tile O = o / l. The four warps of a
// block share each tile of V, staged in shared memory. The row's log-sum-exp, m + log(l), is what
// a backward pass would need: it is written too.
// Cost: S is still computed and written by the GEMM kernel: one N x N buffer instead of two, and
// O's row is rescaled once per tile. Removing S is chapter 04.
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"
#include "tiled_softmax.h"

namespace ch03 {
namespace {

constexpr int kWarps = 4;  // query rows per block
constexpr int kBc = 64;    // keys per tile: two per lane

template <class T, int kCols>  // kCols = ceil(d / 32): the output columns a lane owns
__global__ void fused_softmax_pv_kernel(const attn::AttentionParams p, const float* S) {
  float* Vs = simt::dynamic_smem<float>();  // [kBc][d]: the V tile, shared by the block's warps
  __shared__ float Ps[kWarps][kBc];         // each warp's probabilities of the current tile
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int bh = static_cast<int>(blockIdx.y), b = bh / p.H, h = bh % p.H;
  const int i = static_cast<int>(blockIdx.x) * kWarps + warp;
  const bool active = i < p.Lq;  // a warp past the last row still helps load V and meets the barriers
  const float* s = S + (static_cast<size_t>(bh) * p.Lq + (active ? i : 0)) * p.Lk;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * p.d;
  const float scale_log2 = p.scale * attn::kLog2e;

  float m = -INFINITY, l = 0.f, o[kCols] = {};
  for (int j0 = 0; j0 < p.Lk; j0 += kBc) {
    __syncthreads();  // every warp is done with the previous tile of V
    for (int e = static_cast<int>(threadIdx.x); e < kBc * p.d; e += 32 * kWarps) {
      const int r = e / p.d, c = e % p.d;
      Vs[e] = j0 + r < p.Lk ? attn::load(V + static_cast<size_t>(j0 + r) * p.d + c) : 0.f;
    }
    __syncthreads();
    if (!active) continue;

    float x[2];  // this lane's two scores of the tile, in base 2, masked; -inf past the end
    #pragma unroll
    for (int t = 0; t < 2; ++t) {
      const int j = j0 + lane + 32 * t;
      x[t] = j < p.Lk ? attn::mask_score(p, b, h, i, j, s[j] * scale_log2, attn::kLog2e) : -INFINITY;
    }
    const float m_new = fmaxf(m, attn::warp_max(fmaxf(x[0], x[1])));
    if (m_new == -INFINITY) continue;  // nothing visible so far: o and l stay 0
    const float alpha = exp2f(m - m_new);  // 0 on the first visible tile (m = -inf)
    const float p0 = exp2f(x[0] - m_new), p1 = exp2f(x[1] - m_new);
    l = l * alpha + attn::warp_sum(p0 + p1);
    m = m_new;
    Ps[warp][lane] = p0;
    Ps[warp][lane + 32] = p1;
    __syncwarp();  // the whole tile's P is visible to the warp
    #pragma unroll
    for (int k = 0; k < kCols; ++k) {
      const int c = lane + 32 * k;
      float acc = 0.f;
      if (c < p.d)
        for (int j = 0; j < kBc; ++j) acc += Ps[warp][j] * Vs[j * p.d + c];
      o[k] = o[k] * alpha + acc;
    }
    __syncwarp();  // the next tile overwrites Ps
  }
  if (!active) return;
  const float inv_l = l > 0.f ? 1.f / l : 0.f;  // no visible key: O = 0
  T* O = static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + i) * p.d;
  #pragma unroll
  for (int k = 0; k < kCols; ++k)
    if (lane + 32 * k < p.d) attn::store(O + lane + 32 * k, o[k] * inv_l);
  if (lane == 0 && p.lse) p.lse[static_cast<size_t>(bh) * p.Lq + i] = l > 0.f ? (m + log2f(l)) * attn::kLn2 : -INFINITY;
}

template <class T, int kCols>
cudaError_t launch(const attn::AttentionParams& p, const float* S) {
  const dim3 grid((p.Lq + kWarps - 1) / kWarps, p.B * p.H), block(32 * kWarps);
  return simt::launch(fused_softmax_pv_kernel<T, kCols>, grid, block, kBc * p.d * sizeof(float), p, S);
}

template <class T, int kCols = 1>
cudaError_t dispatch_cols(const attn::AttentionParams& p, const float* S) {
  if constexpr (kCols < 8) {
    if ((p.d + 31) / 32 > kCols) return dispatch_cols<T, kCols + 1>(p, S);
  }
  return launch<T, kCols>(p, S);
}

}  // namespace

cudaError_t fused_softmax_pv(const attn::AttentionParams& p, const float* S) {
  if (p.d > 256 || p.B * p.H > 65535) return cudaErrorInvalidValue;
  return attn::dispatch_dtype(p.dtype, [&](auto t) { return dispatch_cols<decltype(t)>(p, S); });
}

size_t fused_smem_bytes(int d) { return sizeof(float) * (kBc * static_cast<size_t>(d) + kWarps * kBc); }  // Vs, Ps

}  // namespace ch03
