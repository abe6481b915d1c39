// dispatch.cuh: the host side every step shares: which types and head dims a step is compiled for,
// and the TMA tensor maps of Q, K and V (steps c onwards).
#pragma once
#include <cuda.h>

#include <type_traits>

#include "hopper.h"
#include "kernels/numeric.cuh"
#include "simt/tma.cuh"

namespace ch09 {

// Calls f(T{}, std::integral_constant<int, D>{}) with the problem's 16-bit type T and its head dim
// D among HopperDims; fp32 inputs or another head dim give cudaErrorInvalidValue.
template <class F>
cudaError_t dispatch(const attn::AttentionParams& p, F&& f) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (std::is_same_v<decltype(t), float>) {
      return cudaErrorInvalidValue;
    } else {
      return attn::dispatch_head_dim(HopperDims{}, p.d, [&](auto d) { return f(t, d); });
    }
  });
}

// The tensor maps of Q, K and V, each [B * H][L][D] as a 3D tensor (D contiguous), in boxes of 64
// columns (128 bytes, the swizzle's span) by q_rows (Q) or kBc (K, V) rows, one (batch, head) deep:
// rows past L read as zeros.
struct TensorMaps {
  CUtensorMap q, k, v;
};
template <class T, int D>
cudaError_t tensor_maps(const attn::AttentionParams& p, int q_rows, TensorMaps* maps) {
  const CUtensorMapDataType type =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const auto map = [&](CUtensorMap* m, const void* base, int L, int rows) {
    const cuuint64_t dims[3] = {D, static_cast<cuuint64_t>(L), static_cast<cuuint64_t>(p.B) * p.H};
    const cuuint64_t strides[2] = {D * sizeof(T), static_cast<cuuint64_t>(L) * D * sizeof(T)};
    const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(rows), 1};
    return simt::make_tensor_map(m, type, 3, base, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B);
  };
  cudaError_t e = map(&maps->q, p.q, p.Lq, q_rows);
  if (e == cudaSuccess) e = map(&maps->k, p.k, p.Lk, kBc);
  if (e == cudaSuccess) e = map(&maps->v, p.v, p.Lk, kBc);
  return e;
}

}  // namespace ch09
