// blocked_softmax_pv.cu: step c. Step b's online softmax inside chapter 01's register-blocked GEMM.
//
// Step b gave each query row to one warp, whose lanes then computed P V one output column each:
// every FMA read a probability and a value from shared memory, chapter 01's step b pace. Here
// P V is chapter 01's step c GEMM (kernels/gemm.cuh) with A = P and B = V, and the softmax
// happens where the GEMM stages A: for each slice of BK = 32 keys, 8 lanes take a row's 32
// scores of S (4 each, one 32-byte sector per row and request), scale and mask them, find their
// maximum and sum with 3 shuffles each, update the row's running m and l, and write
// exp2(x - m_new) into the slice. A lane asks for its 4 scores before it masks any (masking in
// between would put each load behind a branch of its own), and for the next row's before it works
// on this one's, so that without attn_mask it waits for S once per slice, not once per row or
// score (attn_mask's loads, inside the mask, are still waited for row by row). Before the slice
// is multiplied in, the row's accumulators are scaled by alpha = exp2(m_old - m_new), as step b
// scaled o.
// Cost: 6 shuffles, 4 exp2 and one rescaling multiply per accumulator per slice, against 32 FMAs
// per accumulator; a head dim above 128 recomputes the softmax for each 128 columns of O; the
// next row's 4 scores held live, and a wait for each slice's first row. ptxas gives a thread 127
// or 128 registers (sm_90): 4 blocks of 128 threads per SM at BN = 64, 2 of 256 at BN = 128.
#include "kernels/gemm.cuh"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"
#include "simt/simt.h"
#include "tiled_softmax.h"

namespace ch03 {
namespace {

using attn::gemm::BK;
using attn::gemm::BM;
using attn::gemm::Shape;
using attn::gemm::TM;
using attn::gemm::TN;
constexpr int kRowLanes = 8;  // lanes per row of the slice, 4 scores each
// Rows of P padded to 40 floats: the 4 rows a warp writes at once start 8 banks apart.
constexpr int kRowP = BK + 8;

template <class T, int BN>
__global__ void __launch_bounds__(Shape<BN>::threads) blocked_softmax_pv_kernel(const attn::AttentionParams p, const float* S) {
  __shared__ __align__(16) float Ps[BM][kRowP];  // the slice of P: the GEMM's A
  __shared__ __align__(16) float Vs[BK][BN];      // the slice of V: its B
  __shared__ float m_s[BM], l_s[BM], alpha_s[BM];  // each row's running max and sum, this slice's rescaling
  // Every lane makes as many trips of the row loop: its __syncwarp and 8-lane shuffles need them all.
  static_assert(BM % (4 * (Shape<BN>::threads / 32)) == 0, "a block's warps take 4 rows at a time, evenly");
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32, warps = Shape<BN>::threads / 32;
  const int tx = tid % Shape<BN>::TX, ty = tid / Shape<BN>::TX;
  const int q = lane % kRowLanes, rg = lane / kRowLanes;  // this lane's keys q + 8 c, its row in the warp's 4
  // blockIdx.x = (batch and head, block of rows, block of columns), as chapter 01's GEMM.
  const int tiles_n = (p.d + BN - 1) / BN, tiles_m = (p.Lq + BM - 1) / BM, tile = static_cast<int>(blockIdx.x);
  const int bh = tile / (tiles_m * tiles_n), m0 = tile / tiles_n % tiles_m * BM, n0 = tile % tiles_n * BN;
  const int b = bh / p.H, h = bh % p.H;
  const float scale_log2 = p.scale * attn::kLog2e;
  const float* s = S + static_cast<size_t>(bh) * p.Lq * p.Lk;
  const T* V = static_cast<const T*>(p.v) + static_cast<size_t>(bh) * p.Lk * p.d;
  #pragma unroll
  for (int r = tid; r < BM; r += Shape<BN>::threads) m_s[r] = -INFINITY, l_s[r] = 0.f;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < p.Lk; k0 += BK) {
    __syncthreads();  // the previous slice is consumed (and m_s, l_s are set)
    float x[BK / kRowLanes], next[BK / kRowLanes];  // this row's scores, and the next row's, in flight
    const auto ask = [&](float (&y)[BK / kRowLanes], int r) {
      const int i = m0 + r;
      #pragma unroll
      for (int c = 0; c < BK / kRowLanes; ++c) {
        const int j = k0 + q + kRowLanes * c;
        y[c] = r < BM && i < p.Lq && j < p.Lk ? s[static_cast<size_t>(i) * p.Lk + j] : -INFINITY;
      }
    };
    ask(next, 4 * warp + rg);
    for (int r = 4 * warp + rg; r < BM; r += 4 * warps) {
      const int i = m0 + r;
      float tile_max = -INFINITY;
      #pragma unroll
      for (int c = 0; c < BK / kRowLanes; ++c) x[c] = next[c];
      ask(next, r + 4 * warps);
      #pragma unroll
      for (int c = 0; c < BK / kRowLanes; ++c) {
        const int j = k0 + q + kRowLanes * c;
        if (i < p.Lq && j < p.Lk) x[c] = attn::mask_score(p, b, h, i, j, x[c] * scale_log2, attn::kLog2e);
        tile_max = fmaxf(tile_max, x[c]);
      }
      const float m_old = m_s[r], m_new = fmaxf(m_old, attn::group_max<kRowLanes>(tile_max));
      float sum = 0.f;
      #pragma unroll
      for (int c = 0; c < BK / kRowLanes; ++c) {
        const float e = m_new == -INFINITY ? 0.f : exp2f(x[c] - m_new);  // nothing visible yet: 0
        Ps[r][q + kRowLanes * c] = e;
        sum += e;
      }
      sum = attn::group_sum<kRowLanes>(sum);
      __syncwarp();  // every lane has read m_s[r] before it changes
      if (q == 0) {
        const float alpha = m_new == -INFINITY ? 1.f : exp2f(m_old - m_new);  // 0 on the first visible slice
        m_s[r] = m_new, l_s[r] = l_s[r] * alpha + sum, alpha_s[r] = alpha;
      }
    }
    attn::gemm::load_kn<BN>(Vs, V, p.Lk, p.d, k0, n0);
    __syncthreads();
    #pragma unroll
    for (int i = 0; i < TM; ++i) {
      const float alpha = alpha_s[attn::gemm::row_of<BN>(ty, i)];
      #pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] *= alpha;
    }
    attn::gemm::multiply_kn<BN>(acc, Ps, Vs, tx, ty, p.Lq - m0, p.d - n0);
  }
  T* O = static_cast<T*>(p.o) + static_cast<size_t>(bh) * p.Lq * p.d;
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = attn::gemm::row_of<BN>(ty, i);
    if (m0 + r >= p.Lq) continue;
    const float inv_l = l_s[r] > 0.f ? 1.f / l_s[r] : 0.f;  // no visible key: O = 0
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int c = n0 + attn::gemm::col_of<BN, false>(tx, j);
      if (c < p.d) attn::store(O + static_cast<size_t>(m0 + r) * p.d + c, acc[i][j] * inv_l);
    }
  }
  if (p.lse && n0 == 0) {
    #pragma unroll
    for (int r = tid; r < BM; r += Shape<BN>::threads)
      if (m0 + r < p.Lq)
        p.lse[static_cast<size_t>(bh) * p.Lq + m0 + r] = l_s[r] > 0.f ? (m_s[r] + log2f(l_s[r])) * attn::kLn2 : -INFINITY;
  }
}

template <class T, int BN>
cudaError_t launch(const attn::AttentionParams& p, const float* S) {
  const long long blocks = static_cast<long long>(p.B) * p.H * ((p.Lq + BM - 1) / BM) * ((p.d + BN - 1) / BN);
  if (blocks > 2147483647) return cudaErrorInvalidConfiguration;
  return simt::launch(blocked_softmax_pv_kernel<T, BN>, dim3(static_cast<unsigned>(blocks)), dim3(Shape<BN>::threads), 0, p, S);
}

}  // namespace

cudaError_t blocked_softmax_pv(const attn::AttentionParams& p, const float* S) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return p.d <= 64 ? launch<T, 64>(p, S) : launch<T, 128>(p, S);
  });
}

size_t blocked_smem_bytes(int d) {  // Ps, Vs, and m_s, l_s, alpha_s
  return sizeof(float) * (BM * kRowP + BK * (d <= 64 ? 64 : 128) + 3 * BM);
}

}  // namespace ch03
