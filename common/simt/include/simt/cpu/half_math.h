// simt/cpu/half_math.h: the __half and __nv_bfloat16 functions that cuda_fp16.h and cuda_bf16.h
// declare for device code only. Conversions and + - * / already have host versions in CUDA 12+.
//
// Each result is rounded once, from a double that holds the exact value, or its rounding to odd
// (for fma: a*b is exact in double and TwoSum recovers what the addition lost), or the libm value
// (exp, log, ...). Rounding a float result to half instead rounds twice and is wrong in rare cases.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

namespace simt::detail {
// p + c rounded to odd: truncated toward zero, with the last bit set if anything was cut off.
// Rounding that to a format of fewer than 52 bits gives the correctly rounded p + c.
inline double sum_round_to_odd(double p, double c) {
  const double s = p + c, bb = s - p, err = (p - (s - bb)) + (c - bb);  // s + err == p + c exactly
  if (err == 0 || !std::isfinite(s)) return s;
  double t = (s > 0) != (err > 0) ? std::nextafter(s, 0.0) : s;
  unsigned long long u;
  std::memcpy(&u, &t, 8);
  u |= 1u;
  std::memcpy(&t, &u, 8);
  return t;
}
// double -> 16-bit float, rounded once. The host's __double2half and __double2bfloat16 may go
// through float and round twice; rounding to float toward zero with the last bit set when inexact
// ("round to odd") keeps what was cut off, so that rounding that float is the correct rounding.
inline float to_float_odd(double x) {
  float f = static_cast<float>(x);
  if (std::isfinite(f) && static_cast<double>(f) != x) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    unsigned u;
    std::memcpy(&u, &f, 4);
    u |= 1u;
    std::memcpy(&f, &u, 4);
  }
  return f;
}
inline __half to_half(double x) { return __float2half_rn(to_float_odd(x)); }
inline __nv_bfloat16 to_bf16(double x) { return __float2bfloat16_rn(to_float_odd(x)); }
inline double d(__half x) { return static_cast<double>(__half2float(x)); }
inline double d(__nv_bfloat16 x) { return static_cast<double>(__bfloat162float(x)); }
}  // namespace simt::detail

// ---- __half ---------------------------------------------------------------------------------------
inline __half __hfma(__half a, __half b, __half c) {
  using namespace simt::detail;
  return to_half(sum_round_to_odd(d(a) * d(b), d(c)));
}
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __halves2half2(__hfma(__low2half(a), __low2half(b), __low2half(c)),
                        __hfma(__high2half(a), __high2half(b), __high2half(c)));
}
inline __half hexp(__half a) { return simt::detail::to_half(std::exp(simt::detail::d(a))); }
inline __half hexp2(__half a) { return simt::detail::to_half(std::exp2(simt::detail::d(a))); }
inline __half hexp10(__half a) { return simt::detail::to_half(std::pow(10.0, simt::detail::d(a))); }
inline __half hlog(__half a) { return simt::detail::to_half(std::log(simt::detail::d(a))); }
inline __half hlog2(__half a) { return simt::detail::to_half(std::log2(simt::detail::d(a))); }
inline __half hsqrt(__half a) { return simt::detail::to_half(std::sqrt(simt::detail::d(a))); }
inline __half hrsqrt(__half a) { return simt::detail::to_half(1.0 / std::sqrt(simt::detail::d(a))); }
inline __half hrcp(__half a) { return simt::detail::to_half(1.0 / simt::detail::d(a)); }
inline __half2 h2exp(__half2 a) { return __halves2half2(hexp(__low2half(a)), hexp(__high2half(a))); }
inline __half2 h2exp2(__half2 a) { return __halves2half2(hexp2(__low2half(a)), hexp2(__high2half(a))); }
inline int __half2int_rn(__half a) { return static_cast<int>(std::nearbyint(__half2float(a))); }

// ---- __nv_bfloat16 ----------------------------------------------------------------------------------
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  using namespace simt::detail;
  return to_bf16(sum_round_to_odd(d(a) * d(b), d(c)));
}
inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
  return __halves2bfloat162(__hfma(__low2bfloat16(a), __low2bfloat16(b), __low2bfloat16(c)),
                            __hfma(__high2bfloat16(a), __high2bfloat16(b), __high2bfloat16(c)));
}
inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return simt::detail::to_bf16(std::exp(simt::detail::d(a))); }
inline __nv_bfloat16 hexp2(__nv_bfloat16 a) { return simt::detail::to_bf16(std::exp2(simt::detail::d(a))); }
inline __nv_bfloat16 hlog(__nv_bfloat16 a) { return simt::detail::to_bf16(std::log(simt::detail::d(a))); }
inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return simt::detail::to_bf16(std::sqrt(simt::detail::d(a))); }
inline __nv_bfloat16 hrcp(__nv_bfloat16 a) { return simt::detail::to_bf16(1.0 / simt::detail::d(a)); }
inline __nv_bfloat162 h2exp(__nv_bfloat162 a) {
  return __halves2bfloat162(hexp(__low2bfloat16(a)), hexp(__high2bfloat16(a)));
}
inline __nv_bfloat162 h2exp2(__nv_bfloat162 a) {
  return __halves2bfloat162(hexp2(__low2bfloat16(a)), hexp2(__high2bfloat16(a)));
}
