// cost_model.h: the HBM bytes of chapters 01 to 03, whose kernels pass N x N matrices of fp32
// through global memory. One home for the counts they share; each chapter's variants.cpp adds
// what is its own.
#pragma once
#include "harness/dtype.h"
#include "harness/problem.h"
#include "kernels/params.h"

namespace attn::cost {

// Elements of one N x N buffer (S or P) over all heads.
inline double nn(const Problem& p) { return static_cast<double>(p.heads()) * p.Lq * p.Lk; }
inline double nn(const AttentionParams& p) { return static_cast<double>(p.B) * p.H * p.Lq * p.Lk; }
// Bytes of one [B, H, L, d] input or output tensor.
inline double in_bytes(const AttentionParams& p, int L) {
  return static_cast<double>(p.B) * p.H * L * p.d * dtype_size(p.dtype);
}
// S = Q K^T: Q and K read, S written in fp32.
inline double gemm1_bytes(const AttentionParams& p) { return in_bytes(p, p.Lq) + in_bytes(p, p.Lk) + 4 * nn(p); }
// O = P V: P read in fp32, V read, O written.
inline double gemm2_bytes(const AttentionParams& p) { return 4 * nn(p) + in_bytes(p, p.Lk) + in_bytes(p, p.Lq); }

}  // namespace attn::cost
