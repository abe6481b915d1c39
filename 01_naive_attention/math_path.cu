// math_path.cu: the yardstick. Both GEMMs by cuBLAS, the softmax of softmax.cu in between: the
// shape of PyTorch's math backend (two batched GEMMs and a softmax, S and P in memory).
//
// cuBLAS is column-major. A row-major [rows][cols] matrix is its transpose in column-major, so
//   S (Lq x Lk, row-major) = Q K^T   is   S^T = K Q^T  column-major:  m = Lk, n = Lq, k = d, K transposed;
//   O (Lq x d, row-major)  = P V     is   O^T = V^T P^T column-major: m = d,  n = Lq, k = Lk.
#include <cublas_v2.h>

#include <cstdio>

#include "naive.h"

namespace ch01 {
namespace {

cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t x = nullptr;
    if (cublasCreate(&x) != CUBLAS_STATUS_SUCCESS) std::fprintf(stderr, "cuBLAS: cublasCreate failed\n");
    return x;
  }();
  return h;
}

cudaDataType_t cuda_type(attn::DType t) {
  return t == attn::DType::fp32 ? CUDA_R_32F : t == attn::DType::fp16 ? CUDA_R_16F : CUDA_R_16BF;
}

cudaError_t status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return cudaGetLastError();
  std::fprintf(stderr, "cuBLAS: %s failed: %s\n", what, cublasGetStatusString(s));
  return cudaErrorUnknown;
}

}  // namespace

cudaError_t cublas_scores(const attn::AttentionParams& p, float* S) {
  if (!handle()) return cudaErrorUnknown;
  const float alpha = p.scale, beta = 0.f;
  const cudaDataType_t t = cuda_type(p.dtype);
  return status(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_T, CUBLAS_OP_N, p.Lk, p.Lq, p.d, &alpha,
                                           p.k, t, p.d, static_cast<long long>(p.Lk) * p.d,
                                           p.q, t, p.d, static_cast<long long>(p.Lq) * p.d, &beta,
                                           S, CUDA_R_32F, p.Lk, static_cast<long long>(p.Lq) * p.Lk, p.B * p.H,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "S = scale * Q K^T");
}

cudaError_t cublas_pv(const attn::AttentionParams& p, const void* P) {
  if (!handle()) return cudaErrorUnknown;
  const float alpha = 1.f, beta = 0.f;
  const cudaDataType_t t = cuda_type(p.dtype);
  return status(cublasGemmStridedBatchedEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, p.d, p.Lq, p.Lk, &alpha,
                                           p.v, t, p.d, static_cast<long long>(p.Lk) * p.d,
                                           P, t, p.Lk, static_cast<long long>(p.Lq) * p.Lk, &beta,
                                           p.o, t, p.d, static_cast<long long>(p.Lq) * p.d, p.B * p.H,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "O = P V");
}

}  // namespace ch01
