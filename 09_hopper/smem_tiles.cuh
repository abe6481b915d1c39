// smem_tiles.cuh: a tile of R rows of D 16-bit values in shared memory as wgmma reads it with the
// 128-byte swizzle (simt/wgmma.cuh): D / 64 blocks of 64 columns, one after another; in each, row
// r's 128 bytes at r * 128, its 16-byte chunk c at chunk c ^ (r % 8). The same bytes one TMA box
// per column block would write; Q and K are read K-major (along d), V N-major (along d too, now
// the product's N).
#pragma once
#include <cstdint>

#include "hopper.h"
#include "simt/simt.h"
#include "simt/tma.cuh"  // fence_proxy_async, and TMA for the steps after b
#include "simt/wgmma.cuh"

namespace ch09 {

// Dynamic shared memory from its first 1024-byte boundary: the 128-byte swizzle's pattern repeats
// every 1024 bytes of shared address. A GPU's starts so aligned when no static __shared__ precedes
// it (simt/tma.cuh), but the declaration promises 16 bytes (simt/gpu.h): this makes sure. A
// launch asks for kAlign bytes more (hopper.h).
template <class T>
__device__ __forceinline__ T* aligned_smem() {
  unsigned char* p = simt::dynamic_smem<unsigned char>();
#if SIMT_CPU
  return reinterpret_cast<T*>(p);  // the emulator's starts 1024-byte aligned
#else
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  return reinterpret_cast<T*>(p + (kAlign - a % kAlign) % kAlign);
#endif
}

template <int R>
__device__ __forceinline__ int swizzled(int r, int c) {
  return c / 64 * R * 64 + r * 64 + ((c % 64 / 8) ^ (r % 8)) * 8 + c % 8;
}

// Rows [0, rows) of src (row stride D) into the tile, 16 bytes per thread and step; rows past
// `rows` are zeros, so that a ragged last tile adds nothing to P V.
template <class T, int R, int D, int kThreads>
__device__ __forceinline__ void load_tile(T* tile, const T* src, int rows) {
  static_assert(D % 64 == 0, "whole 128-byte rows per column block");
#pragma unroll 4
  for (int q = static_cast<int>(threadIdx.x); q < R * D / 8; q += kThreads) {
    const int r = q / (D / 8), c = q % (D / 8) * 8;
    const uint4 v = r < rows ? *reinterpret_cast<const uint4*>(src + static_cast<size_t>(r) * D + c) : uint4{0, 0, 0, 0};
    *reinterpret_cast<uint4*>(tile + swizzled<R>(r, c)) = v;
  }
}

// Q or K as a K-major operand: k-step s is columns 16 s .. 16 s + 15 of d, 32 bytes into the rows
// of column block s / 4; 8-row groups 1024 bytes apart. The descriptor of k-step 0, and what
// k-step s adds to it (the start address, in 16-byte units, is its low bits): one 64-bit register
// pair per operand, and constants.
template <class T>
__device__ __forceinline__ uint64_t k_major(const T* tile) {
  return simt::wgmma_desc(tile, simt::WgmmaSwizzle::b128, 0, 1024);
}
template <int R>
__host__ __device__ constexpr uint64_t k_major_step(int s) {
  return static_cast<uint64_t>(s / 4 * R * 128 + s % 4 * 32) >> 4;
}
// V as an N-major B: k-step kk is keys 16 kk .. 16 kk + 15, 16 rows of 128 bytes further; the
// column blocks (N) R * 128 bytes apart, groups of 8 keys 1024.
template <int R, class T>
__device__ __forceinline__ uint64_t n_major(const T* tile) {
  return simt::wgmma_desc(tile, simt::WgmmaSwizzle::b128, R * 128, 1024);
}
__host__ __device__ constexpr uint64_t n_major_step(int kk) { return static_cast<uint64_t>(kk * 16 * 128) >> 4; }

}  // namespace ch09
