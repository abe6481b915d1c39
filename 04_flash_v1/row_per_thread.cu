// row_per_thread.cu: the same algorithm with the FA1 CUDA kernel's structure, a row per thread.
//
// Algorithm 1 had 256 threads share each line: every step ended in a barrier, and the row
// maxima and sums needed warp reductions. This kernel keeps FA1's structure (a block per
// (batch, head), K/V tiles in the outer loop, O, l and m in global memory) but gives each thread
// one row of the Q tile (FA1 itself computes a tile with warps and tensor cores; the thread per
// row is the simplest correct shape, and chapter 05 takes the tensor cores): thread t computes the scores of its query against the K tile, their maximum, sum and
// exponentials, and its row of O, alone; the block only shares the K, V and Q tiles in shared
// memory. Tiles are kTile = 64 rows of Q and of K/V (Br = Bc), whatever d. Rows and keys past the
// end of the sequence are masked, so any N works, and every head dim up to 256 fits.
// Cost: a thread reads its O row, l and m from global memory and writes them back for every K/V
// tile, as in Algorithm 1; 64 threads per block and B*H blocks leave most of a GPU idle.
#include "flash_v1.h"
#include "kernels/numeric.cuh"
#include "simt/simt.h"

namespace ch04 {
namespace {

template <class T>
__global__ void row_per_thread_kernel(const attn::AttentionParams p, float* O_acc, float* ell, float* m_hbm) {
  const int d = p.d, bh = static_cast<int>(blockIdx.x), b = bh / p.H, h = bh % p.H;
  const int t = static_cast<int>(threadIdx.x);  // this thread's row of every Q tile
  float* Kj = simt::dynamic_smem<float>();     // [kTile][d]
  float* Vj = Kj + kTile * d;                  // [kTile][d]
  float* Qi = Vj + kTile * d;                  // [kTile][d]
  float* S = Qi + kTile * d;                   // [kTile][kTile + 1]: one row per thread, padded
  float* s = S + t * (kTile + 1);              // so that the threads' rows sit on different banks
  const T* Q = static_cast<const T*>(p.q) + static_cast<size_t>(bh) * p.Lq * d;
  const T* K = static_cast<const T*>(p.k) + static_cast<size_t>(bh) * p.Lk * d;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * d;
  float* O = O_acc + static_cast<size_t>(bh) * p.Lq * d;
  float* l = ell + static_cast<size_t>(bh) * p.Lq;
  float* m = m_hbm + static_cast<size_t>(bh) * p.Lq;

  // Each thread owns rows t, t + kTile, ... of O, l and m: it initializes and updates them alone.
  for (int r = t; r < p.Lq; r += kTile) {
    for (int c = 0; c < d; ++c) O[static_cast<size_t>(r) * d + c] = 0.f;
    l[r] = 0.f;
    m[r] = -INFINITY;
  }
  for (int k0 = 0; k0 < p.Lk; k0 += kTile) {  // K/V tiles: the outer loop
    __syncthreads();  // the previous tiles are consumed
    for (int e = t; e < kTile * d; e += kTile) {
      const int r = e / d, c = e % d;
      const bool in = k0 + r < p.Lk;
      Kj[e] = in ? attn::load(K + static_cast<size_t>(k0 + r) * d + c) : 0.f;
      Vj[e] = in ? attn::load(V + static_cast<size_t>(k0 + r) * d + c) : 0.f;
    }
    for (int q0 = 0; q0 < p.Lq; q0 += kTile) {  // Q tiles: the inner loop
      __syncthreads();  // the K/V tile is in; the previous Q tile is consumed
      for (int e = t; e < kTile * d; e += kTile) {
        const int r = e / d, c = e % d;
        Qi[e] = q0 + r < p.Lq ? attn::load(Q + static_cast<size_t>(q0 + r) * d + c) : 0.f;
      }
      __syncthreads();
      const int qi = q0 + t;
      if (qi >= p.Lq) continue;
      float m_tile = -INFINITY;  // S row, its max, then exponentials and their sum
      for (int c = 0; c < kTile; ++c) {
        float x = -INFINITY;
        if (k0 + c < p.Lk) {
          float dot = 0.f;
          for (int e = 0; e < d; ++e) dot += Qi[t * d + e] * Kj[c * d + e];
          x = attn::mask_score(p, b, h, qi, k0 + c, p.scale * dot);
        }
        s[c] = x;
        m_tile = fmaxf(m_tile, x);
      }
      float l_tile = 0.f;
      for (int c = 0; c < kTile; ++c) l_tile += s[c] = m_tile == -INFINITY ? 0.f : __expf(s[c] - m_tile);
      const float m_old = m[qi], l_old = l[qi], m_new = fmaxf(m_old, m_tile);
      const float l_new = m_new == -INFINITY ? 0.f : __expf(m_old - m_new) * l_old + __expf(m_tile - m_new) * l_tile;
      float* o = O + static_cast<size_t>(qi) * d;
      for (int c = 0; c < d; ++c) {
        float pv = 0.f;
        for (int x = 0; x < kTile; ++x) pv += s[x] * Vj[x * d + c];
        o[c] = l_new > 0.f ? (l_old * __expf(m_old - m_new) * o[c] + __expf(m_tile - m_new) * pv) / l_new : 0.f;
      }
      l[qi] = l_new;
      m[qi] = m_new;
    }
  }
  T* out = static_cast<T*>(p.o) + static_cast<size_t>(bh) * p.Lq * d;
  for (int r = t; r < p.Lq; r += kTile) {
    for (int c = 0; c < d; ++c) attn::store(out + static_cast<size_t>(r) * d + c, O[static_cast<size_t>(r) * d + c]);
    if (p.lse) p.lse[static_cast<size_t>(bh) * p.Lq + r] = l[r] > 0.f ? m[r] + logf(l[r]) : -INFINITY;
  }
}

}  // namespace

// K_j, V_j and Q_i tiles of kTile rows, and S_ij padded to kTile + 1 columns.
size_t row_per_thread_smem_bytes(int d) { return (3 * kTile * static_cast<size_t>(d) + kTile * (kTile + 1)) * sizeof(float); }

cudaError_t row_per_thread(const attn::AttentionParams& p, float* O_acc, float* l, float* m) {
  const size_t smem = row_per_thread_smem_bytes(p.d);
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(row_per_thread_kernel<decltype(t)>, dim3(p.B * p.H), dim3(kTile), smem, p, O_acc, l, m);
  });
}

}  // namespace ch04
