// fused_softmax.h: chapter 02's softmax kernels. Each reads the unscaled scores S = Q K^T that
// chapter 01's GEMM kernel writes (with scale 1), and does scale, mask and softmax of a row in one
// kernel, writing P for chapter 01's P V kernel. Four steps, one file each.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace ch02 {

cudaError_t softmax_warp(const attn::AttentionParams& p, const float* S, float* P);   // a: a warp per row
cudaError_t softmax_block(const attn::AttentionParams& p, const float* S, float* P);  // b: a block per row
cudaError_t softmax_vec4(const attn::AttentionParams& p, const float* S, float* P);   // c: 128-bit accesses
cudaError_t softmax_exp2(const attn::AttentionParams& p, const float* S, float* P);   // d: exp2, log2(e) folded

// Whether a row of Lk floats fits in the shared memory one block may use on this GPU (steps b to d
// keep the row there and read S once; a longer row is read from memory again in each pass).
bool row_fits_on_chip(int Lk);

// Steps b to d's grid: a block per row of S (B*H*Lq of them), at most the 2^31 - 1 blocks a grid's x
// holds; past that a block takes several rows in turn.
inline unsigned row_blocks(const attn::AttentionParams& p) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  return static_cast<unsigned>(rows < 2147483647 ? rows : 2147483647);
}

// The block reductions' scratch (kernels/reduce.cuh) that steps b to d declare: 33 floats.
inline constexpr int kScratch = 33;
// The shared memory one block of steps b to d asks for at Lk keys, static and dynamic (the
// registry's figure): the scratch, and the row (`pad` floats more in steps c and d, which align it)
// when it fits.
size_t row_smem_bytes(int Lk, int pad);

}  // namespace ch02
