// kernels.h: the lab's two SGEMMs, C = A B for n x n row-major fp32 matrices (n a multiple of 32).
#pragma once
#include <cuda_runtime.h>

namespace sgemm {

// One thread per element of C, each reading its row of A and column of B from global memory.
cudaError_t naive(int n, const float* A, const float* B, float* C);
// The same threads, in 32 x 32 blocks that stage a 32 x 32 tile of A and of B in shared memory.
cudaError_t tiled(int n, const float* A, const float* B, float* C);

}  // namespace sgemm
