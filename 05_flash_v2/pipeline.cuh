// pipeline.cuh: the memory side of steps c to h (and of chapter 06): where a tile's elements live
// in shared memory, and the cp.async copies that fill it.
#pragma once
#include "flash_v2.h"
#include "simt/ptx.cuh"
#include "simt/simt.h"

namespace ch05 {

// Rows of D elements padded by 8: the 8 rows an ldmatrix reads start 16 bytes apart modulo the
// 128 bytes of the 32 banks, so they fall on 8 different groups of 4 banks (steps c, d).
template <int D>
struct Padded {
  static constexpr int kRow = row_elems(D, false);
  __host__ __device__ static constexpr int elems(int rows) { return rows * kRow; }
  __device__ static int at(int row, int col) { return row * kRow + col; }
};

// The swizzle (step e on): with D a multiple of 64, the 16-byte chunk c of row r is stored at
// chunk c ^ (r % 8), so the 8 rows an ldmatrix reads at one logical chunk sit in 8 different
// groups of banks with no padding. Other head dims keep the padding.
template <int D>
struct Swizzled {
  static constexpr bool kSwizzle = D % 64 == 0;
  static constexpr int kRow = row_elems(D, true);
  __host__ __device__ static constexpr int elems(int rows) { return rows * kRow; }
  __device__ static int at(int row, int col) {
    if constexpr (kSwizzle) return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
    return row * kRow + col;
  }
};

// `rows` rows of D elements (row r at src + r * D) into a tile of layout L, by 16-byte cp.async
// from each of kThreads threads; rows at or past `valid` are zero-filled by the copy itself.
template <class T, int D, class L, int kThreads>
__device__ __forceinline__ void copy_tile(T* tile, const T* src, int rows, int valid) {
  for (int c = static_cast<int>(threadIdx.x); c < rows * D / 8; c += kThreads) {
    const int r = c / (D / 8), col = (c % (D / 8)) * 8;
    const bool in = r < valid;
    simt::cp_async_cg_16_zfill(tile + L::at(r, col), src + static_cast<size_t>(in ? r : 0) * D + col, in ? 16 : 0);
  }
}

__host__ __device__ constexpr int floor_pow2(int n) { return n < 2 ? 1 : 2 * floor_pow2(n / 2); }

// The same copy with the trip count known to the compiler (step h), fully unrolled. Each of the
// first kRowsPerPass * D / 8 threads copies one 16-byte column of every kRowsPerPass-th row (at
// d = 96 a row is 12 chunks: with 256 threads, 16 rows, 192 threads take part and the last two
// warps skip the copies), so a thread's addresses are one base plus constants. kTail: the tile may
// run past the last row (`valid` rows are real), which only the last K/V tile and the last Q tile do.
template <class T, int D, class L, int kRows, int kThreads, bool kTail>
__device__ __forceinline__ void copy_rows(T* tile, const T* src, int valid) {
  constexpr int kChunks = D / 8, kRowsPerPass = floor_pow2(kThreads / kChunks);
  static_assert(kRows % kRowsPerPass == 0, "every copying thread copies the same number of chunks");
  const int tid = static_cast<int>(threadIdx.x), r0 = tid / kChunks, col = tid % kChunks * 8;
  if (r0 >= kRowsPerPass) return;
  (void)valid;
  const T* from = src + static_cast<size_t>(r0) * D + col;  // row r0 + i * kRowsPerPass: from + constant
#pragma unroll
  for (int i = 0; i < kRows / kRowsPerPass; ++i) {
    const int r = r0 + i * kRowsPerPass;
    if constexpr (kTail) {
      const bool in = r < valid;
      simt::cp_async_cg_16_zfill(tile + L::at(r, col), in ? from + i * kRowsPerPass * D : src, in ? 16 : 0);
    } else {
      simt::cp_async_cg_16(tile + L::at(r, col), from + i * kRowsPerPass * D);
    }
  }
}

}  // namespace ch05
