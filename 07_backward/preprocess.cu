// preprocess.cu: the two small kernels around the backward's main loop (steps a to d).
//
// D_i = sum_c dO_ic O_ic is the row sum that dS = P o (dP - D) subtracts. By the softmax's
// Jacobian it equals sum_j P_ij dP_ij, which would need a whole row of P and dP: from O it costs
// one pass over two Lq x d tensors, before the main loop, so that a block owning a K/V tile has
// every row's D at hand. A warp per row: lanes take every 32nd column and meet by shuffles.
// The same pass zeroes the fp32 accumulator of dQ, which the main loop adds to with atomics (the
// harness poisons every workspace with NaN: an accumulator nobody zeroes fails the check).
// convert_dq turns the accumulator into dQ in the inputs' type, applying the scale once.
// Cost: reads O and dO (2 Lq d elements), writes D (Lq floats) and zeroes Lq d floats; the
// conversion reads Lq d floats and writes dQ.
#include <algorithm>

#include "backward.h"
#include "kernels/reduce.cuh"
#include "simt/simt.h"

namespace ch07 {
namespace {

constexpr int kWarps = 4;

// A warp per row of B*H*Lq; rows beyond the grid's 2^31 - 1 blocks of kWarps rows are taken in turns,
// by the whole warp (its row's test is the same for all its lanes, as the shuffles need).
template <class T>
__global__ void preprocess_kernel(const attn::BackwardParams p, float* D, float* dq_accum) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  for (long long row = static_cast<long long>(blockIdx.x) * kWarps + threadIdx.x / 32; row < rows;
       row += static_cast<long long>(gridDim.x) * kWarps) {
    const T* o = static_cast<const T*>(p.o) + row * p.d;
    const T* dout = static_cast<const T*>(p.dout) + row * p.d;
    float sum = 0.f;
    for (int c = lane; c < p.d; c += 32) sum += attn::load(o + c) * attn::load(dout + c);
    sum = attn::warp_sum(sum);
    if (lane == 0) D[row] = sum;
    if (dq_accum)
      for (int c = lane; c < p.d; c += 32) dq_accum[row * p.d + c] = 0.f;
  }
}

template <class T>
__global__ void convert_dq_kernel(const attn::BackwardParams p, const float* dq_accum) {
  const long long n = static_cast<long long>(p.B) * p.H * p.Lq * p.d;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += static_cast<long long>(gridDim.x) * blockDim.x)
    attn::store(static_cast<T*>(p.dq) + e, p.scale * dq_accum[e]);
}

unsigned blocks_for(long long n, int per_block) {
  return static_cast<unsigned>(std::min<long long>((n + per_block - 1) / per_block, 1 << 20));
}

}  // namespace

cudaError_t preprocess(const attn::BackwardParams& p, float* D, float* dq_accum) {
  const long long rows = static_cast<long long>(p.B) * p.H * p.Lq;
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(preprocess_kernel<decltype(t)>,
                        dim3(static_cast<unsigned>(std::min<long long>((rows + kWarps - 1) / kWarps, 2147483647))),
                        dim3(32 * kWarps), 0, p, D, dq_accum);
  });
}

cudaError_t convert_dq(const attn::BackwardParams& p, const float* dq_accum) {
  const long long n = static_cast<long long>(p.B) * p.H * p.Lq * p.d;
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    return simt::launch(convert_dq_kernel<decltype(t)>, dim3(blocks_for(n, 256)), dim3(256), 0, p, dq_accum);
  });
}

}  // namespace ch07
