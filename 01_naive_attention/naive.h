// naive.h: the kernels of chapter 01, one launcher each. The chapter's variants.cpp strings them
// together; chapters 02 and 03 reuse step c's two GEMMs.
#pragma once
#include <cuda_runtime.h>

#include "kernels/params.h"

namespace ch01 {

// S = scale * Q K^T into the fp32 workspace [B*H][Lq][Lk]: one thread per element of S.
cudaError_t scores(const attn::AttentionParams& p, float* S);
// P = softmax(mask(S)) by rows: one thread per row, three passes over it (max, sum, normalize).
// P is fp32 (the naive variant) or the inputs' type (the math path, whose second GEMM reads it).
cudaError_t softmax_rows(const attn::AttentionParams& p, const float* S, void* P, bool P_in_input_type);
// O = P V, P fp32 [B*H][Lq][Lk]: one thread per element of O.
cudaError_t pv(const attn::AttentionParams& p, const float* P);
// Step b, the same two products from 32 x 32 tiles in shared memory (smem_tiles.cu).
cudaError_t tiled_scores(const attn::AttentionParams& p, float* S);
cudaError_t tiled_pv(const attn::AttentionParams& p, const float* P);
// Step c, the same two products by the register-blocked GEMM of kernels/gemm.cuh.
cudaError_t blocked_scores(const attn::AttentionParams& p, float* S);
cudaError_t blocked_pv(const attn::AttentionParams& p, const float* P);
// The math path (gpu backend only): the two GEMMs by cuBLAS, around softmax_rows.
// S = scale * Q K^T in fp32; O = P V with P in the inputs' type.
cudaError_t cublas_scores(const attn::AttentionParams& p, float* S);
cudaError_t cublas_pv(const attn::AttentionParams& p, const void* P);

// The shared memory one block of step b's and step c's products asks for (static; the registry's
// figure): step b's, either product; step c's, S = Q K^T (N = Lk) and O = P V (N = d).
size_t tiled_smem_bytes();
size_t blocked_scores_smem_bytes(int Lk);
size_t blocked_pv_smem_bytes(int d);

}  // namespace ch01
