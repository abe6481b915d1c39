// mma.cuh: what the tensor-core kernels (chapters 05 and 07, and 06 through 05) share on top of simt/ptx.cuh.
//
// The fragments of mma.m16n8k16 (simt/fragments.h): lane = 4 * g + t holds, of the 16 x 8 fp32
// accumulator C, rows g and g + 8, columns 2t and 2t + 1: c[0], c[1] on row g, c[2], c[3] on row
// g + 8. Of the 16 x 16 A operand it holds the same rows, columns 2t, 2t + 1 and 2t + 8, 2t + 9.
// So the accumulators of two neighbouring 8-column tiles of S are, element for element, an A
// fragment of P: FlashAttention-2 keeps P in registers between its two products.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "simt/ptx.cuh"

namespace attn {

// Two floats rounded to T and packed into one 32-bit register, `lo` in the low half.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    std::memcpy(&r, &h, 4);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    std::memcpy(&r, &h, 4);
  }
  return r;
}

// The A fragment of columns [16k, 16k + 16) of P from the accumulators of S's 8-column tiles 2k
// and 2k + 1 (see the top of this file).
template <class T>
__device__ __forceinline__ void p_fragment(uint32_t (&a)[4], const float (&lo)[4], const float (&hi)[4]) {
  a[0] = pack2<T>(lo[0], lo[1]);  // row g,     columns 2t, 2t + 1
  a[1] = pack2<T>(lo[2], lo[3]);  // row g + 8, columns 2t, 2t + 1
  a[2] = pack2<T>(hi[0], hi[1]);  // row g,     columns 2t + 8, 2t + 9
  a[3] = pack2<T>(hi[2], hi[3]);  // row g + 8, columns 2t + 8, 2t + 9
}

// The four lanes of a quad (t = 0..3) hold the same two rows: row statistics meet in two steps.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

}  // namespace attn
