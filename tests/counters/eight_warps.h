// eight_warps.h: chapter 05's and chapter 06's kernels with the tiles the H200 ran them with at
// d = 96 and 128 (results/nvidia-h200, the kernels of 5676c2862807): blocks of 8 warps, Br = 256,
// Bc = 32, 2 stages. test_published.cpp models its comparisons with that GPU's measurements on
// these launches, whatever fa2_tiles chooses today; the published sets take today's kernels.
// fp16 only; another type or head dim gives cudaErrorInvalidValue.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace eight_warps {

cudaError_t lean_loop(const attn::AttentionParams& p);  // chapter 05's step h (and chapter 09's fa2_baseline)
cudaError_t balanced(const attn::AttentionParams& p);   // chapter 06's best: ch06::skip_tiles(p, true)

}  // namespace eight_warps
