// register_blocked.cu: step c. Both products by the book's register-blocked GEMM (kernels/gemm.cuh).
//
// Step b's threads computed one output each, so every FMA waited on two shared-memory loads.
// Here each thread computes an 8 x 8 block of outputs: per 4 values of k it loads 8 of A's and 8
// of B's 4-wide vectors and does 256 FMAs with them, 16 loads where step b needed 512. The
// arithmetic, not shared memory, now sets the pace. The GEMM lives in common/kernels because
// chapters 02 and 03 keep it: from here on they change only the softmax.
// Cost: 128 x 128 tiles (128 x 64 when N = d <= 64), so a problem smaller than a tile leaves
// SMs idle, and 146 to 210 registers per thread (ptxas, sm_90; common/model/sass_sm90.inc): one
// block of 256 threads per SM at BN = 128, three of 128 threads at BN = 64.
#include "kernels/gemm.cuh"
#include "kernels/numeric.cuh"
#include "naive.h"

namespace ch01 {

cudaError_t blocked_scores(const attn::AttentionParams& p, float* S) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return attn::gemm::launch<true>(p.B * p.H, p.Lq, p.Lk, p.d, p.scale, static_cast<const T*>(p.q),
                                    static_cast<const T*>(p.k), S);
  });
}

cudaError_t blocked_pv(const attn::AttentionParams& p, const float* P) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return attn::gemm::launch<false>(p.B * p.H, p.Lq, p.d, p.Lk, 1.f, P, static_cast<const T*>(p.v), static_cast<T*>(p.o));
  });
}

size_t blocked_scores_smem_bytes(int Lk) { return attn::gemm::smem_bytes<true>(Lk); }
size_t blocked_pv_smem_bytes(int d) { return attn::gemm::smem_bytes<false>(d); }

}  // namespace ch01
