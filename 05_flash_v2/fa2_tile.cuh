// fa2_tile.cuh: the steps of FlashAttention-2 on tensor cores that every such kernel of the book
// shares (steps c to h of this chapter, chapters 06 and 10): what one warp does to 16 of its rows for
// one tile of Bc keys, once S = Q K^T is in its accumulators, and how it writes O at the end.
//
// A lane (g = lane / 4, t = lane % 4) holds rows g and g + 8 of the warp's 16 rows; of each
// 8-column tile of S or O, columns 2t and 2t + 1 (mma.cuh).
#pragma once
#include "flash_v2.h"
#include "kernels/numeric.cuh"
#include "kernels/mma.cuh"
#include "simt/ptx.cuh"

namespace ch05 {

// One lane's share of the running state: its two rows of O (unnormalized), their maxima m (base
// 2) and its part of their sums l (the quad adds the parts up at the end). The rows themselves,
// `row` and row + 8 (absolute), the kernels pass along: they cost no register between uses.
template <int D>
struct RowState {
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.f, 0.f};
};

// Scores in base 2 (scale * log2(e)), with is_causal or the mask, and -inf past the last key or
// for a row past the last query. kAttnMask = false leaves out the attn_mask's code (chapter 06
// instantiates its kernel per mode, so that a problem without a mask carries none).
template <int Bc, bool kAttnMask = true>
__device__ __forceinline__ void scale_and_mask(float (&s)[Bc / 8][4], int row, const attn::AttentionParams& p, int b,
                                               int h, int k0, float scale_log2) {
  const int t = static_cast<int>(threadIdx.x % 4);
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int i = row + e / 2 * 8, key = k0 + nt * 8 + 2 * t + (e & 1);
      s[nt][e] = attn::tile_score<kAttnMask>(p, b, h, i, key, s[nt][e] * scale_log2);
    }
}

// f(score, query, key) on each of a thread's scores of a tile: rows row and row + 8 of the m-tile,
// keys from k0 (the m16n8k16 accumulator's layout).
template <int Bc, class F>
__device__ __forceinline__ void for_each_score(float (&s)[Bc / 8][4], int row, int k0, F&& f) {
  const int t = static_cast<int>(threadIdx.x % 4);
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) f(s[nt][e], row + e / 2 * 8, k0 + nt * 8 + 2 * t + (e & 1));
}

// The mask a kernel's Policy asks for (lean_loop.cuh): its mask_mod's rule on every score when it
// has one (chapter 10: mask_mod(p) gives the functor; one with visit() picks its rule once per
// tile, not per score), else scale_and_mask with or without attn_mask's code.
template <int Bc, class Policy>
__device__ __forceinline__ void mask_tile(float (&s)[Bc / 8][4], int row, const attn::AttentionParams& p, int b, int h,
                                          int k0, float scale_log2) {
  if constexpr (requires { Policy::mask_mod(p); }) {
    const auto apply = [&](const auto& rule) {
      for_each_score<Bc>(s, row, k0, [&](float& x, int i, int key) {
        x = key >= p.Lk || i >= p.Lq || !rule(b, h, i, key) ? -INFINITY : x * scale_log2;
      });
    };
    const auto mod = Policy::mask_mod(p);
    if constexpr (requires { mod.visit(apply); }) mod.visit(apply);
    else apply(mod);
  } else {
    scale_and_mask<Bc, Policy::kAttnMask>(s, row, p, b, h, k0, scale_log2);
  }
}

// Chapter 10's score_mod (a Policy with score_mod(p, b, h), a functor, or one with visit() as mask_mod's):
// each score scaled, then changed by the mod as FlexAttention's score_mod sees it (natural units),
// then put in base 2.
template <int Bc, class Policy>
__device__ __forceinline__ void score_tile(float (&s)[Bc / 8][4], int row, const attn::AttentionParams& p, int b, int h,
                                           int k0) {
  const auto apply = [&](const auto& mod) {
    for_each_score<Bc>(s, row, k0, [&](float& x, int i, int key) { x = mod(x * p.scale, b, h, i, key) * attn::kLog2e; });
  };
  const auto mod = Policy::score_mod(p, b, h);
  if constexpr (requires { mod.visit(apply); }) mod.visit(apply);
  else apply(mod);
}

// Scores in base 2 only: for a tile that no mask, no causal diagonal and no sequence end
// crosses (chapter 06 sorts the tiles).
template <int Bc>
__device__ __forceinline__ void scale_only(float (&s)[Bc / 8][4], float scale_log2) {
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[nt][e] *= scale_log2;
}

// exp2 as the steps compute it: exp2f (steps c to g: ex2.approx.f32 with the extra instructions
// that keep subnormal results), or ex2.approx.ftz.f32 alone (step h: a score 126 binary orders
// below the row maximum adds nothing to a sum of at least 1).
struct Exp2 {
  __device__ static float f(float x) { return exp2f(x); }
};
struct Exp2Ftz {
  __device__ static float f(float x) { return simt::ex2_approx_ftz(x); }
};

// The online softmax's first half, on a tile of scores: new maxima, the scores replaced by
// P = exp2(c * s - m_new) (fp32, still in the accumulators), l rescaled and summed, and in alpha
// what O must be multiplied by, exp2(m_old - m_new). c = 1 when the scores are already in base 2
// (scale_and_mask); c = scale * log2(e) > 0 when they are raw, which folds the scaling into the
// exponent's FFMA (step h).
template <int Bc, class E = Exp2>
__device__ __forceinline__ void softmax_scores(float (&s)[Bc / 8][4], float (&m)[2], float (&l)[2], float (&alpha)[2],
                                               float c = 1.f) {
  float m_new[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) m_new[e / 2] = fmaxf(m_new[e / 2], s[nt][e]);
  float m_use[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    m_new[r] = fmaxf(m[r], attn::quad_max(m_new[r]) * c);
    m_use[r] = m_new[r] == -INFINITY ? 0.f : m_new[r];  // nothing visible yet: keep exp2 finite
    alpha[r] = E::f(m[r] - m_use[r]);
    m[r] = m_new[r];
  }
#pragma unroll
  for (int nt = 0; nt < Bc / 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) sum[e / 2] += s[nt][e] = E::f(fmaf(s[nt][e], c, -m_use[e / 2]));
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + sum[r];
}
// Its second half: O's rows multiplied by their alpha.
template <int D>
__device__ __forceinline__ void rescale_o(float (&o)[D / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int nt = 0; nt < D / 8; ++nt) {
    o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
    o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
  }
}
// Both halves at once, as every step of chapters 05 to 08 runs them.
template <int Bc, int D, class E = Exp2>
__device__ __forceinline__ void online_softmax(float (&s)[Bc / 8][4], float (&o)[D / 8][4], float (&m)[2],
                                               float (&l)[2], float c = 1.f) {
  float alpha[2];
  softmax_scores<Bc, E>(s, m, l, alpha, c);
  rescale_o<D>(o, alpha);
}
template <int Bc, int D, class E = Exp2>
__device__ __forceinline__ void online_softmax(float (&s)[Bc / 8][4], RowState<D>& st, float c = 1.f) {
  online_softmax<Bc, D, E>(s, st.o, st.m, st.l, c);
}

// O = o / l in the inputs' type, and lse = (m + log2 l) * ln 2; a row without a visible key gets
// O = 0 and lse = -inf.
template <class T, int D>
__device__ __forceinline__ void store_rows(const float (&o)[D / 8][4], const float (&m)[2], const float (&l_part)[2],
                                           int row, const attn::AttentionParams& p, int bh) {
  const int t = static_cast<int>(threadIdx.x % 4);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = attn::quad_sum(l_part[r]);  // every lane of the warp takes part
    const float inv_l = l > 0.f ? 1.f / l : 0.f;
    const int i = row + 8 * r;
    if (i >= p.Lq) continue;
    T* out = static_cast<T*>(p.o) + (static_cast<size_t>(bh) * p.Lq + i) * D;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) {
      attn::store(out + nt * 8 + 2 * t, o[nt][2 * r] * inv_l);
      attn::store(out + nt * 8 + 2 * t + 1, o[nt][2 * r + 1] * inv_l);
    }
    if (t == 0 && p.lse)
      p.lse[static_cast<size_t>(bh) * p.Lq + i] = l > 0.f ? (m[r] + log2f(l)) * 0.6931471805599453f : -INFINITY;
  }
}
template <class T, int D>
__device__ __forceinline__ void store_rows(const RowState<D>& st, int row, const attn::AttentionParams& p, int bh) {
  store_rows<T, D>(st.o, st.m, st.l, row, p, bh);
}

// Calls f(T{}, std::integral_constant<int, D>{}) with the problem's 16-bit type T and its head
// dim D among TensorCoreDims (flash_v2.h); fp32 inputs or another head dim give
// cudaErrorInvalidValue.
template <class F>
cudaError_t dispatch_tensor_core(const attn::AttentionParams& p, F&& f) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (std::is_same_v<decltype(t), float>) {
      return cudaErrorInvalidValue;
    } else {
      return attn::dispatch_head_dim(TensorCoreDims{}, p.d, [&](auto d) { return f(t, d); });
    }
  });
}

}  // namespace ch05
