// numeric.cuh: the three input types of the book, seen from a kernel. Every chapter up to 04
// loads fp32, fp16 or bf16 and computes in fp32; load() and store() are the only places that know
// which type a tensor holds.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "head_dims.h"
#include "params.h"

namespace attn {

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

// The 16-bit values go through a named local: a call's struct result stored straight to memory
// is the one store the counters build's instrumentation does not see (notes/emulator.md).
__device__ __forceinline__ void store(float* p, float x) { *p = x; }
__device__ __forceinline__ void store(__half* p, float x) {
  const __half h = __float2half_rn(x);
  *p = h;
}
__device__ __forceinline__ void store(__nv_bfloat16* p, float x) {
  const __nv_bfloat16 h = __float2bfloat16_rn(x);
  *p = h;
}

// Calls f with a value of the C++ type that `t` names: f(float{}), f(__half{}) or f(__nv_bfloat16{}).
template <class F>
cudaError_t dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::fp32:
      return f(float{});
    case DType::fp16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
  }
  return cudaErrorInvalidValue;
}

// Calls f with std::integral_constant<int, D>{} for the D among Ds that equals d (kernels whose
// registers are sized by the head dim); cudaErrorInvalidValue if none does.
template <int... Ds, class F>
cudaError_t dispatch_head_dim(int d, F&& f) {
  cudaError_t r = cudaErrorInvalidValue;
  (void)((d == Ds ? (r = f(std::integral_constant<int, Ds>{}), true) : false) || ...);
  return r;
}
template <int... Ds, class F>
cudaError_t dispatch_head_dim(HeadDimList<Ds...>, int d, F&& f) {
  return dispatch_head_dim<Ds...>(d, static_cast<F&&>(f));
}

// The scaled score s of query i and key j after is_causal: -inf when the key is not visible.
__device__ __forceinline__ float causal_score(const AttentionParams& p, int i, int j, float s) {
  return p.causal != Causal::none && j > i + p.causal_offset() ? -INFINITY : s;
}

// A load through the read-only path (ld.global.nc): for a tensor no thread writes while the kernel
// runs. Said so, nvcc also knows that the load cannot alias the tile's stores to shared memory and
// to O. Without it, its front end spent over a minute on one file of chapter 05 proving what it may
// reorder around the mask's loads, and that file's SASS was 11 % longer (05_flash_v2/rows_32.cu,
// sm_90: 40 831 instructions, 36 679 with it). The cpu backend loads plainly.
template <class T>
__device__ __forceinline__ T load_readonly(const T* p) {
#ifdef __CUDACC__
  return __ldg(p);
#else
  return *p;
#endif
}

// The scaled score s of query i and key j of head (b, h) after is_causal and attn_mask; -inf
// removes the key. A kernel that works in base-2 exponents passes s already multiplied by
// log2(e) and additive_scale = log2(e), so that the additive mask is converted the same way.
__device__ __forceinline__ float mask_score(const AttentionParams& p, int b, int h, int i, int j, float s,
                                            float additive_scale = 1.f) {
  s = causal_score(p, i, j, s);
  if (p.mask_kind == MaskKind::none || s == -INFINITY) return s;
  const long long at = b * p.mask_stride_b + h * p.mask_stride_h + static_cast<long long>(i) * p.Lk + j;
  if (p.mask_kind == MaskKind::boolean) return load_readonly(static_cast<const uint8_t*>(p.mask) + at) ? s : -INFINITY;
  return s + additive_scale * load_readonly(static_cast<const float*>(p.mask) + at);
}

// log2(e): exp(x) = exp2(x * log2(e)), and exp2 is the GPU's native exponential.
constexpr float kLog2e = 1.4426950408889634f;
// ln(2): a log-sum-exp found in base 2 is multiplied by it to be torch's natural one.
constexpr float kLn2 = 0.6931471805599453f;

// The base-2 score s (already times scale * log2(e)) of query i and key j of a tile, whose rows and
// columns may run past the problem's: -inf there, else is_causal and, with kAttnMask, attn_mask.
// kAttnMask = false is for a kernel instantiated for a problem without attn_mask: the mask's loads
// are not compiled in.
template <bool kAttnMask = true>
__device__ __forceinline__ float tile_score(const AttentionParams& p, int b, int h, int i, int j, float s) {
  if (j >= p.Lk || i >= p.Lq) return -INFINITY;
  if constexpr (kAttnMask) return mask_score(p, b, h, i, j, s, kLog2e);
  return causal_score(p, i, j, s);
}

}  // namespace attn
