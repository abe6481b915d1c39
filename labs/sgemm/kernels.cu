// kernels.cu: two fp32 SGEMMs, the lab's worked example (notes/performance_model.md, "Your own
// kernel"). Plain CUDA: launched through simt::launch, so the emulator runs this very source.
//
// naive: each thread computes one element of C from a row of A and a column of B, all from global
// memory. A warp's 32 threads share A's element (one sector, broadcast) and read 32 consecutive
// floats of B: coalesced, but every operand comes from L1 or L2, 2 loads per FMA.
// tiled: a block of 32 x 32 threads stages a 32 x 32 tile of A and one of B in shared memory, then
// each thread does 32 FMAs from it: global traffic per FMA / 32, at the cost of two __syncthreads
// per tile and 2 shared loads per FMA (the next step, registers, is siboehm's kernel 4).
#include "kernels.h"
#include "simt/simt.h"

namespace sgemm {
namespace {

constexpr int kTile = 32;

__global__ void naive_kernel(int n, const float* A, const float* B, float* C) {
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float sum = 0.f;
  for (int k = 0; k < n; ++k) sum += A[row * n + k] * B[k * n + col];
  C[row * n + col] = sum;
}

__global__ void tiled_kernel(int n, const float* A, const float* B, float* C) {
  __shared__ float As[kTile][kTile];  // a warp reads one element of it at a time: a broadcast
  __shared__ float Bs[kTile][kTile];  // a warp reads a row of it: 32 banks, no conflict
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row = static_cast<int>(blockIdx.y) * kTile + ty, col = static_cast<int>(blockIdx.x) * kTile + tx;
  float sum = 0.f;
  for (int k0 = 0; k0 < n; k0 += kTile) {
    As[ty][tx] = A[row * n + k0 + tx];
    Bs[ty][tx] = B[(k0 + ty) * n + col];
    __syncthreads();
    for (int k = 0; k < kTile; ++k) sum += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[row * n + col] = sum;
}

}  // namespace

cudaError_t naive(int n, const float* A, const float* B, float* C) {
  return simt::launch(naive_kernel, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, n, A, B, C);
}

cudaError_t tiled(int n, const float* A, const float* B, float* C) {
  return simt::launch(tiled_kernel, dim3(n / kTile, n / kTile), dim3(kTile, kTile), 0, n, A, B, C);
}

}  // namespace sgemm
