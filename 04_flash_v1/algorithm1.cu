// algorithm1.cu: FlashAttention's Algorithm 1, line by line.
//
// Chapter 03 still wrote S: one N x N buffer. Here nothing N x N exists anywhere. K and V are cut
// into Tc tiles of Bc rows, Q into Tr tiles of Br rows, with Bc and Br chosen so that a K tile, a
// V tile, a Q tile, an O tile and S_ij fit in the M floats of shared memory. The outer loop takes
// a K/V tile into shared memory once; the inner loop brings every Q tile past it, with that
// tile's O, l and m from global memory, and merges the new keys into them by the split-softmax
// identity (chapter 03), writing them back normalized (line 12). One block runs the whole double
// loop for one (batch, head), as in the paper's pseudocode; its 256 threads share each line.
// Cost: O, l and m travel to and from global memory Tc times (every Q tile, every K/V tile), Q is
// read Tc times, and only B*H blocks run: the GPU is busy only with many heads. Chapter 05 turns
// the loops around.
#include <algorithm>

#include "flash_v1.h"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch04 {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;

int footprint(int Bc, int Br, int d) { return 2 * Bc * d + 2 * Br * d + Br * Bc + 6 * Br; }

template <class T>
__global__ void algorithm1_kernel(const attn::AttentionParams p, const int Bc, const int Br, float* O_acc, float* ell,
                                  float* m_hbm) {
  const int d = p.d, bh = static_cast<int>(blockIdx.x), b = bh / p.H, h = bh % p.H;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  float* Kj = simt::dynamic_smem<float>();  // [Bc][d]
  float* Vj = Kj + Bc * d;                  // [Bc][d]
  float* Qi = Vj + Bc * d;                  // [Br][d]
  float* Oi = Qi + Br * d;                  // [Br][d]
  float* Sij = Oi + Br * d;                 // [Br][Bc], then P~_ij in place
  float* li = Sij + Br * Bc;                // [Br] each
  float* mi = li + Br;
  float* m_tilde = mi + Br;
  float* l_tilde = m_tilde + Br;
  float* m_new = l_tilde + Br;
  float* l_new = m_new + Br;
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * d;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * d;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * d;
  float* O = O_acc + static_cast<size_t>(bh) * p.Lq * d;
  float* l = ell + static_cast<size_t>(bh) * p.Lq;
  float* m = m_hbm + static_cast<size_t>(bh) * p.Lq;
  const int Tr = (p.Lq + Br - 1) / Br, Tc = (p.Lk + Bc - 1) / Bc;

  // 2: initialize O = 0, l = 0, m = -inf in HBM.
  for (int e = tid; e < p.Lq * d; e += kThreads) O[e] = 0.f;
  for (int r = tid; r < p.Lq; r += kThreads) l[r] = 0.f, m[r] = -INFINITY;
  __syncthreads();
  for (int j = 0; j < Tc; ++j) {  // 5
    const int k0 = j * Bc;
    // 6: load K_j, V_j from HBM to on-chip SRAM (rows past Lk as zeros).
    for (int e = tid; e < Bc * d; e += kThreads) {
      const int r = e / d, c = e % d;
      const bool in = k0 + r < p.Lk;
      Kj[e] = in ? attn::load(K + static_cast<size_t>(k0 + r) * d + c) : 0.f;
      Vj[e] = in ? attn::load(V + static_cast<size_t>(k0 + r) * d + c) : 0.f;
    }
    for (int i = 0; i < Tr; ++i) {  // 7
      const int q0 = i * Br;
      // 8: load Q_i, O_i, l_i, m_i from HBM to on-chip SRAM.
      for (int e = tid; e < Br * d; e += kThreads) {
        const int r = e / d, c = e % d;
        const bool in = q0 + r < p.Lq;
        Qi[e] = in ? attn::load(Q + static_cast<size_t>(q0 + r) * d + c) : 0.f;
        Oi[e] = in ? O[static_cast<size_t>(q0 + r) * d + c] : 0.f;
      }
      for (int r = tid; r < Br; r += kThreads) {
        li[r] = q0 + r < p.Lq ? l[q0 + r] : 0.f;
        mi[r] = q0 + r < p.Lq ? m[q0 + r] : -INFINITY;
      }
      __syncthreads();
      // 9: S_ij = scale * Q_i K_j^T, with is_causal or the mask (-inf: key removed or past Lk).
      for (int e = tid; e < Br * Bc; e += kThreads) {
        const int r = e / Bc, c = e % Bc, qi = q0 + r, kj = k0 + c;
        float s = -INFINITY;
        if (qi < p.Lq && kj < p.Lk) {
          float dot = 0.f;
          for (int x = 0; x < d; ++x) dot += Qi[r * d + x] * Kj[c * d + x];
          s = attn::mask_score(p, b, h, qi, kj, p.scale * dot);
        }
        Sij[e] = s;
      }
      __syncthreads();
      // 10: m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij); a warp per row.
      // 11: m_i^new = max(m_i, m~_ij), l_i^new = e^(m_i - m_i^new) l_i + e^(m~_ij - m_i^new) l~_ij.
      for (int r = warp; r < Br; r += kWarps) {
        float mx = -INFINITY;
        for (int c = lane; c < Bc; c += 32) mx = fmaxf(mx, Sij[r * Bc + c]);
        mx = attn::warp_max(mx);
        float sum = 0.f;
        for (int c = lane; c < Bc; c += 32) {
          const float pt = mx == -INFINITY ? 0.f : __expf(Sij[r * Bc + c] - mx);
          Sij[r * Bc + c] = pt;
          sum += pt;
        }
        sum = attn::warp_sum(sum);
        if (lane == 0) {
          const float mn = fmaxf(mi[r], mx);
          m_tilde[r] = mx;
          l_tilde[r] = sum;
          m_new[r] = mn;
          l_new[r] = mn == -INFINITY ? 0.f : __expf(mi[r] - mn) * li[r] + __expf(mx - mn) * sum;
        }
      }
      __syncthreads();
      // 12: write O_i = diag(l_i^new)^-1 (diag(l_i) e^(m_i - m_i^new) O_i + e^(m~_ij - m_i^new) P~_ij V_j) to HBM.
      for (int e = tid; e < Br * d; e += kThreads) {
        const int r = e / d, c = e % d;
        if (q0 + r >= p.Lq) continue;
        float pv = 0.f;
        for (int x = 0; x < Bc; ++x) pv += Sij[r * Bc + x] * Vj[x * d + c];
        const float mn = m_new[r];
        O[static_cast<size_t>(q0 + r) * d + c] =
            l_new[r] > 0.f ? (li[r] * __expf(mi[r] - mn) * Oi[e] + __expf(m_tilde[r] - mn) * pv) / l_new[r] : 0.f;
      }
      // 13: write l_i = l_i^new, m_i = m_i^new to HBM.
      for (int r = tid; r < Br; r += kThreads)
        if (q0 + r < p.Lq) l[q0 + r] = l_new[r], m[q0 + r] = m_new[r];
      __syncthreads();  // Q_i, O_i, S_ij and the statistics are refilled next
    }
  }
  // 16: return O, in the inputs' type; and the log-sum-exp.
  T* out = static_cast<T*>(p.o) + static_cast<size_t>(bh) * p.Lq * d;
  for (int e = tid; e < p.Lq * d; e += kThreads) attn::store(out + e, O[e]);
  if (p.lse)
    for (int r = tid; r < p.Lq; r += kThreads)
      p.lse[static_cast<size_t>(bh) * p.Lq + r] = l[r] > 0.f ? m[r] + logf(l[r]) : -INFINITY;
}

}  // namespace

Blocks algorithm1_blocks(int d) {
  int optin = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0);
  Blocks blk{};
  blk.M_device = optin / static_cast<int>(sizeof(float));
  blk.M = blk.M_device;
  for (;; blk.M -= 4 * d) {
    blk.Bc = (blk.M + 4 * d - 1) / (4 * d);  // Bc = ceil(M / 4d)
    blk.Br = std::min(blk.Bc, d);             // Br = min(Bc, d)
    if (footprint(blk.Bc, blk.Br, d) <= blk.M_device || blk.Bc == 1) break;
  }
  blk.smem_bytes = static_cast<size_t>(footprint(blk.Bc, blk.Br, d)) * sizeof(float);
  return blk;
}

cudaError_t algorithm1(const attn::AttentionParams& p, float* O_acc, float* l, float* m) {
  const Blocks blk = algorithm1_blocks(p.d);
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(algorithm1_kernel<decltype(t)>, dim3(p.B * p.H), dim3(kThreads), blk.smem_bytes, p, blk.Bc,
                        blk.Br, O_acc, l, m);
  });
}

}  // namespace ch04
