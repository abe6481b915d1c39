// tiled_softmax.h: chapter 03's kernels. All read the unscaled S = Q K^T of chapter 01's GEMM
// kernel (scale 1) and scale and mask it themselves, as chapter 02 does.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace ch03 {

// a: P = softmax(scale*S) with the row's maximum and sum found in one pass (then P written in a
//    second), a warp per row.
cudaError_t online_softmax(const attn::AttentionParams& p, const float* S, float* P);
// b: O = softmax(scale*S) V without P: S walked tile by tile, O accumulated and rescaled. Also
//    writes the log-sum-exp of each row to p.lse.
cudaError_t fused_softmax_pv(const attn::AttentionParams& p, const float* S);
// c: the same online softmax where chapter 01's register-blocked GEMM stages its A operand, P:
//    O = softmax(scale*S) V by blocks of 128 rows, 8 x 8 outputs per thread. Writes p.lse too.
cudaError_t blocked_softmax_pv(const attn::AttentionParams& p, const float* S);

// The shared memory one block of steps b and c asks for at head dim d, static and dynamic (the
// registry's figure; step a's warps need none).
size_t fused_smem_bytes(int d);
size_t blocked_smem_bytes(int d);

}  // namespace ch03
