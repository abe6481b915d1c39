// backward.h: chapter 07, the backward pass. Given the forward's O and log-sum-exp L and the
// gradient dO, compute dQ, dK and dV (kernels/backward_params.h). Five steps, from N x N buffers
// in global memory to FlashAttention-2's backward on tensor cores with causal tiles skipped and
// its tiles copied as chapter 05 copies them; a file each for steps a to d, step e step d's kernel
// with one switch; preprocess.cu and dq_pass.cu hold the kernels the later steps share. One
// launcher per kernel: variants.cpp strings them together, one stage each.
#pragma once
#include <cuda_runtime.h>

#include "kernels/backward_params.h"
#include "kernels/head_dims.h"
#include "kernels/numeric.cuh"

namespace ch07 {

// The head dims of each step, declared once (kernels/head_dims.h): the kernels dispatch on them
// and the registry states them.
using CudaCoreDims = attn::HeadDimList<32, 64, 80, 96, 128>;  // step b: per-thread accumulators of d/4 floats
using TensorCoreDims = attn::HeadDimList<32, 64, 96, 128>;    // steps c, d: d/16 mma k-steps, d/8 accumulator tiles

// Shared by every step (preprocess.cu).
// D_i = sum_c dO_ic O_ic for every row [B*H][Lq]; with dq_accum, also its rows zeroed.
cudaError_t preprocess(const attn::BackwardParams& p, float* D, float* dq_accum);
// dQ = scale * dq_accum, in the inputs' type.
cudaError_t convert_dq(const attn::BackwardParams& p, const float* dq_accum);

// Step a, materialized.cu: the formulas, one thread per output element, P and dS [B*H][Lq][Lk]
// fp32 in global memory.
cudaError_t p_from_lse(const attn::BackwardParams& p, float* P);                   // P = exp(S - L)
cudaError_t dv_from_p(const attn::BackwardParams& p, const float* P);               // dV = P^T dO
cudaError_t ds_from_p(const attn::BackwardParams& p, const float* P, const float* D, float* dS);  // dS = P o (dO V^T - D)
cudaError_t dq_from_ds(const attn::BackwardParams& p, const float* dS);             // dQ = scale dS K
cudaError_t dk_from_ds(const attn::BackwardParams& p, const float* dS);             // dK = scale dS^T Q

// Step b, kv_outer.cu: FlashAttention-2's Algorithm 2 on CUDA cores. A block per K/V tile, dK
// and dV on chip, dQ added to dq_accum (fp32) with atomics; nothing N x N.
cudaError_t kv_outer(const attn::BackwardParams& p, const float* D, float* dq_accum);
inline constexpr int kKvOuterBr = 32, kKvOuterBc = 32;

// Step c, tensor_cores.cu: the same loop, the five products on mma.sync.
cudaError_t tensor_cores(const attn::BackwardParams& p, const float* D, float* dq_accum);
inline constexpr int kMmaBr = 64, kMmaBc = 64;  // Q rows per inner tile, keys per block (4 warps x 16)
inline constexpr int kLdS = kMmaBc + 8;         // dS [Br][Bc] in shared memory, rows padded

// Step d, causal.cu: the Q tiles above the causal diagonal skipped, the mask applied only to the
// tiles that need it. dq_accum = nullptr leaves dQ to dq_pass (dq_pass.cu), which walks K/V
// tiles for each Q tile, skipping those past the diagonal (chapter 06's tiles_to_visit), and
// writes dQ once: no atomics.
cudaError_t causal(const attn::BackwardParams& p, const float* D, float* dq_accum);
cudaError_t dq_pass(const attn::BackwardParams& p, const float* D);
// Step e, causal.cu's kernel with kCopies: step d with its tiles copied by 16-byte cp.async.
cudaError_t cp_async(const attn::BackwardParams& p, const float* D, float* dq_accum);

// The dynamic shared memory one block of each main kernel asks for at head dim d with `elem`-byte
// inputs: the launches use these, and the registry declares them (the other kernels ask for none).
// Step b: K_j, V_j (rows of d + 1 floats), Q_i, dO_i, S and dP (rows of Bc + 1), L and D.
inline constexpr size_t kv_outer_smem_bytes(int d) {
  return sizeof(float) * (2 * kKvOuterBc * (d + 1) + 2 * kKvOuterBr * d + 2 * kKvOuterBr * (kKvOuterBc + 1) + 2 * kKvOuterBr);
}
// Steps c to e: K_j, V_j, Q_i, dO_i in rows padded as chapter 05 pads (d + 8), dS, and L and D (fp32).
inline constexpr size_t mma_smem_bytes(int d, int elem) {
  return static_cast<size_t>(elem) * ((2 * kMmaBc + 2 * kMmaBr) * (d + 8) + kMmaBr * kLdS) + sizeof(float) * 2 * kMmaBr;
}
// The dQ pass: Q_i, dO_i, K_j, V_j padded, and L and D.
inline constexpr size_t dq_pass_smem_bytes(int d, int elem) {
  return static_cast<size_t>(elem) * (2 * kMmaBr + 2 * kMmaBc) * (d + 8) + sizeof(float) * 2 * kMmaBr;
}

// The first Q tile that sees a key of the K/V tile starting at k0 (the first query i with
// k0 <= i + offset); Tr when no query sees one. Chapter 06's tiles_to_visit, the other way round.
__host__ __device__ inline int first_q_tile(const attn::AttentionParams& p, int k0, int Br) {
  const int Tr = (p.Lq + Br - 1) / Br;
  if (p.causal == attn::Causal::none) return 0;
  const int i = k0 - p.causal_offset();
  return i <= 0 ? 0 : i >= p.Lq ? Tr : i / Br;
}

}  // namespace ch07
