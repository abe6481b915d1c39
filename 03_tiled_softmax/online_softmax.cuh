// online_softmax.cuh: the split-softmax identity, in code.
//
// A softmax over a row split in two parts, with part maxima m1, m2 and part sums
// l1 = sum exp(x - m1), l2 = sum exp(x - m2), has
//     m = max(m1, m2),   l = exp(m1 - m) * l1 + exp(m2 - m) * l2.
// So (m, l) can be built one element, one lane or one tile at a time, in any order, and merged:
// that is the online softmax of chapters 03 to 06. Here everything is in base 2 (exp2, and scores
// already multiplied by log2(e)), as chapter 02 ended.
#pragma once
#include <cuda_runtime.h>

#include "simt/simt.h"

namespace attn {

struct RowStats {
  float m = -INFINITY;  // running maximum (base-2 units)
  float l = 0.f;        // running sum of exp2(x - m)
};

// Two partial results merged by the identity. A part that saw only masked keys has m = -inf and
// l = 0; the guard keeps -inf - (-inf) from turning into NaN.
__device__ __forceinline__ RowStats merge(RowStats a, RowStats b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return RowStats{};
  return RowStats{m, a.l * exp2f(a.m - m) + b.l * exp2f(b.m - m)};
}

// One more element x: the running sum is rescaled only when the maximum grows.
__device__ __forceinline__ RowStats push(RowStats s, float x) {
  if (x == -INFINITY) return s;  // a masked key adds nothing
  if (x <= s.m) return RowStats{s.m, s.l + exp2f(x - s.m)};
  return RowStats{x, s.l * exp2f(s.m - x) + 1.f};
}

// Every lane's partial statistics merged across the warp; every lane gets the result.
__device__ __forceinline__ RowStats warp_merge(RowStats s) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const RowStats other{__shfl_xor_sync(0xffffffffu, s.m, offset), __shfl_xor_sync(0xffffffffu, s.l, offset)};
    s = merge(s, other);
  }
  return s;
}

}  // namespace attn
