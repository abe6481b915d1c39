// reduce.cuh: reductions across a warp and across a block, for the softmax chapters.
#pragma once
#include <cuda_runtime.h>

#include "simt/simt.h"

namespace attn {

// Butterfly: after log2(32) exchanges every lane holds the result, no shared memory needed.
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
// The same within each aligned group of Lanes consecutive lanes (Lanes a power of 2, at most 32):
// log2(Lanes) exchanges, every lane of the warp taking part.
template <int Lanes>
__device__ __forceinline__ float group_max(float v) {
  for (int offset = Lanes / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
template <int Lanes>
__device__ __forceinline__ float group_sum(float v) {
  for (int offset = Lanes / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Across a block of blockDim.x threads (a multiple of 32, at most 1024): each warp reduces its
// lanes, warp leaders meet in shared memory, the first warp reduces their results and shares the
// answer. `scratch` holds 33 floats of shared memory; every thread gets the result.
template <bool Max>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  v = Max ? warp_max(v) : warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < warps ? scratch[lane] : (Max ? -INFINITY : 0.f);
    w = Max ? warp_max(w) : warp_sum(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const float r = scratch[32];
  __syncthreads();  // scratch is reused by the next reduction
  return r;
}
__device__ __forceinline__ float block_max(float v, float* scratch) { return block_reduce<true>(v, scratch); }
__device__ __forceinline__ float block_sum(float v, float* scratch) { return block_reduce<false>(v, scratch); }

}  // namespace attn
