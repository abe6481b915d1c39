// flash_v2.h: chapter 05, FlashAttention-2. The loops of chapter 04 turned around: a block owns a
// tile of Q for its whole life and walks every K/V tile, so O, m and l stay in registers and are
// written once; the grid covers (Q tile, head, batch). Four steps, one file each.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace ch05 {

// Head dims of the CUDA-core steps (registers sized by d) and of the tensor-core steps.
inline constexpr int kCudaCoreDims[] = {32, 64, 80, 96, 128};
inline constexpr int kTensorCoreDims[] = {32, 64, 96, 128, 256};

cudaError_t split_k(const attn::AttentionParams& p);       // a: FA2's loop order; warps split each K/V tile
cudaError_t split_q(const attn::AttentionParams& p);       // b: warps split Q: no reduction across warps
cudaError_t tensor_cores(const attn::AttentionParams& p);  // c: mma.sync, ldmatrix, P in registers
cudaError_t pipelined(const attn::AttentionParams& p);     // d: cp.async stages, swizzle, ldmatrix.x4

// Rows of Q and of K/V per tile of the pipelined kernel for head dim d.
struct Tiles {
  int Br, Bc, stages;
};
Tiles pipelined_tiles(int d);

}  // namespace ch05
