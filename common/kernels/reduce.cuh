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

// The same sums scattered (a reduce-scatter): each lane of a group brings N partial sums and keeps
// only some of the group's N totals, where group_sum would give every lane all N. At each of the
// log2(Lanes) exchanges a lane sends its partner the half of its values the partner keeps (two
// selects a value) and adds what it receives to the half it keeps: N - N / Lanes shuffles where
// N >= Lanes (15 for 16 values over 16 lanes), where N group_sums take N log2(Lanes) (64). On return
// v[j], j < Scatter::per_lane, is total number (lane % Lanes) / Scatter::dup * per_lane + j, and
// where N < Lanes, Lanes / N neighbouring lanes hold each total. The lane is threadIdx.x's: a
// block of one dimension, as the decoding kernels launch.
template <int Lanes, int N>
struct Scatter {
  static_assert(Lanes >= 1 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0 && N >= 1 && (N & (N - 1)) == 0,
                "a group of a power of 2 lanes, at most a warp, and a power of 2 values");
  static constexpr int per_lane = N >= Lanes ? N / Lanes : 1;
  static constexpr int dup = N >= Lanes ? 1 : Lanes / N;
};
template <int Lanes, int N, int Offset = Lanes / 2, int Count = N>
__device__ __forceinline__ void group_sum_scatter(float (&v)[N]) {
  static_assert(Scatter<Lanes, N>::per_lane > 0, "Scatter's shapes");
  if constexpr (Offset > 0) {
    if constexpr (Count > 1) {
      const bool upper = (threadIdx.x & Offset) != 0;  // this lane keeps the upper half
#pragma unroll
      for (int i = 0; i < Count / 2; ++i) {
        const float send = upper ? v[i] : v[i + Count / 2], keep = upper ? v[i + Count / 2] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, Offset);
      }
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], Offset);  // one total left: summed as group_sum does
    }
    group_sum_scatter<Lanes, N, Offset / 2, (Count > 1 ? Count / 2 : 1)>(v);
  }
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
