// register_tiles.cuh: what chapter 04's steps c and d share. Both compute S_ij and O_i as chapter
// 01's register-blocked GEMM does (kernels/gemm.cuh), 128 query rows by Bc = BN keys, each thread
// an 8 x 8 block; this is the online softmax of chapter 03 on such a block of S_ij.
#pragma once
#include "kernels/gemm.cuh"
#include "kernels/numeric.cuh"
#include "kernels/reduce.cuh"

namespace ch04 {

// P_ij's rows padded by TX floats: the rows a warp writes at once start TX banks apart.
template <int BN>
constexpr int kRowP = BN + attn::gemm::Shape<BN>::TX;

// is_causal, attn_mask and the ends of the sequences on a block of S_ij already in base 2 (queries
// q0 + the thread's rows, keys k0 + its columns): -inf where a key is hidden or past Lk, or the row
// past Lq. Only tiles that need it run this (softmax_tile): the others skip it whole.
template <int BN>
__device__ __forceinline__ void mask_tile(const attn::AttentionParams& p, int b, int h, int q0, int k0,
                                          float (&S)[attn::gemm::TM][attn::gemm::TN], int tx, int ty) {
  #pragma unroll
  for (int i = 0; i < attn::gemm::TM; ++i) {
    const int qi = q0 + attn::gemm::row_of<BN>(ty, i);
    #pragma unroll
    for (int j = 0; j < attn::gemm::TN; ++j) {
      const int kj = k0 + attn::gemm::col_of<BN, true>(tx, j);
      S[i][j] = qi < p.Lq && kj < p.Lk ? attn::mask_score(p, b, h, qi, kj, S[i][j], attn::kLog2e) : -INFINITY;
    }
  }
}

// Scales the thread's block of S_ij by scale_log2 = scale * log2(e) (and masks it where the tile
// needs it), folds the tile into its rows' running maximum m and sum l (a row's Bc scores lie on
// the TX lanes that share it: TX-lane shuffles), writes exp2(S - m_new) to P, and multiplies o by
// alpha = exp2(m_old - m_new).
template <int BN>
__device__ __forceinline__ void softmax_tile(const attn::AttentionParams& p, float scale_log2, int b, int h, int q0, int k0,
                                             float (&S)[attn::gemm::TM][attn::gemm::TN], float (&m)[attn::gemm::TM],
                                             float (&l)[attn::gemm::TM], float (&o)[attn::gemm::TM][attn::gemm::TN],
                                             float (*P)[kRowP<BN>], int tx, int ty) {
  using attn::gemm::TM, attn::gemm::TN, attn::gemm::row_of, attn::gemm::col_of;
  #pragma unroll
  for (int i = 0; i < TM; ++i)
    #pragma unroll
    for (int j = 0; j < TN; ++j) S[i][j] *= scale_log2;
  // The same for every thread of the block: a tile inside both sequences, without is_causal or
  // attn_mask, has nothing to mask.
  if (p.causal != attn::Causal::none || p.mask_kind != attn::MaskKind::none || q0 + attn::gemm::BM > p.Lq || k0 + BN > p.Lk)
    mask_tile<BN>(p, b, h, q0, k0, S, tx, ty);
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    float tile_max = -INFINITY;
    #pragma unroll
    for (int j = 0; j < TN; ++j) tile_max = fmaxf(tile_max, S[i][j]);
    const float m_new = fmaxf(m[i], attn::group_max<attn::gemm::Shape<BN>::TX>(tile_max));
    float sum = 0.f;
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      const float e = m_new == -INFINITY ? 0.f : exp2f(S[i][j] - m_new);  // nothing visible yet: 0
      P[row_of<BN>(ty, i)][col_of<BN, true>(tx, j)] = e;
      sum += e;
    }
    const float alpha = m_new == -INFINITY ? 1.f : exp2f(m[i] - m_new);  // 0 on the first visible tile
    l[i] = l[i] * alpha + attn::group_sum<attn::gemm::Shape<BN>::TX>(sum);
    m[i] = m_new;
    #pragma unroll
    for (int j = 0; j < TN; ++j) o[i][j] *= alpha;
  }
}

}  // namespace ch04
