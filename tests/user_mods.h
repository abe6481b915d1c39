// user_mods.h: a mask_mod and a score_mod the book does not know (user_mods.cu), and the kernel
// made of them, for fp16 at d = 64.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace user_mods {

constexpr int kD = 64;
// Exercise 3's dilated causal window: every third key back from the query.
struct Dilated {
  ATTN_HOST_DEVICE bool operator()(int, int, int q, int kv) const { return kv <= q && (q - kv) % 3 == 0; }
};
// A bias that grows with the distance and shrinks with the head: s - (q - kv) / (8 (h + 1)).
struct RelativeBias {
  ATTN_HOST_DEVICE float operator()(float s, int, int h, int q, int kv) const {
    return s - static_cast<float>(q - kv) / static_cast<float>(8 * (h + 1));
  }
};
cudaError_t run(const attn::AttentionParams& p);  // cudaErrorInvalidValue but for fp16, d = kD

}  // namespace user_mods
