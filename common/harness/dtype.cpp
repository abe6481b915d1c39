#include "dtype.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

namespace attn {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}
std::optional<DType> parse_dtype(std::string_view s) {
  for (DType t : {DType::fp32, DType::fp16, DType::bf16})
    if (s == dtype_name(t)) return t;
  return std::nullopt;
}
size_t dtype_size(DType t) { return t == DType::fp32 ? 4 : 2; }
int mantissa_bits(DType t) { return t == DType::fp32 ? 23 : t == DType::fp16 ? 10 : 7; }

double largest_finite(DType t) {
  // The largest significand (all mantissa bits set) at the largest exponent: 2^15 for fp16, 2^127
  // for fp32 and bf16.
  return std::ldexp(2.0 - std::ldexp(1.0, -mantissa_bits(t)), t == DType::fp16 ? 15 : 127);
}

float round_to(DType t, float x) {
  switch (t) {
    case DType::fp32: return x;
    case DType::fp16: return __half2float(__float2half_rn(x));
    case DType::bf16: return __bfloat162float(__float2bfloat16_rn(x));
  }
  return x;
}

void encode(DType t, const float* src, void* dst, size_t n) {
  if (t == DType::fp32) {
    std::memcpy(dst, src, n * 4);
  } else if (t == DType::fp16) {
    auto* d = static_cast<__half*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = __float2half_rn(src[i]);
  } else {
    auto* d = static_cast<__nv_bfloat16*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = __float2bfloat16_rn(src[i]);
  }
}
void decode(DType t, const void* src, float* dst, size_t n) {
  if (t == DType::fp32) {
    std::memcpy(dst, src, n * 4);
  } else if (t == DType::fp16) {
    const auto* s = static_cast<const __half*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = __half2float(s[i]);
  } else {
    const auto* s = static_cast<const __nv_bfloat16*>(src);
    for (size_t i = 0; i < n; ++i) dst[i] = __bfloat162float(s[i]);
  }
}

}  // namespace attn
