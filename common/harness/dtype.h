// dtype.h: fp32, fp16 and bf16 on the host.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

#include "kernels/params.h"

namespace attn {

const char* dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);
size_t dtype_size(DType t);
int mantissa_bits(DType t);  // 23, 10, 7: a value's relative rounding error is at most 2^-(bits+1)
double largest_finite(DType t);  // 3.4e38, 65504, 3.39e38
float round_to(DType t, float x);  // x rounded to the type, returned as float
// n floats converted to the type's bytes (2 or 4 per element), and back.
void encode(DType t, const float* src, void* dst, size_t n);
void decode(DType t, const void* src, float* dst, size_t n);

}  // namespace attn
