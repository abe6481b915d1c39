// simt/fragments.h: which element of a warp-wide mma.m16n8k16 operand each lane holds.
//
// From the PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type". With
// g = lane / 4 (groupID) and t = lane % 4 (threadID_in_group), lane `lane` holds element i of:
//   A (16 x 16, row-major, 8 halves):   row g + 8*((i/2)%2),  column 2t + (i%2) + 8*(i/4)
//   B (16 x 8, k x n, 4 halves):        k 2t + (i%2) + 8*(i/2), n g
//   C, D (16 x 8, fp32, 4 floats):      row g + 8*(i/2),      column 2t + (i%2)
// Two consecutive halves (i even, i+1) share one 32-bit register, the lower index in the low bits.
// wgmma.m64nNk16 (simt/wgmma.cuh), warp w of the warpgroup (warp index % 4), N / 2 floats of D:
//   D (64 x N, fp32):                   row 16w + g + 8*((i/2)%2),  column 8*(i/4) + 2t + (i%2)
// that is, warp w's 16 rows, every 8 columns laid out as C above; A from registers (4 registers per
// thread) is warp w's 16 rows in A's layout above.
// The emulator's mma and its tests use these functions; kernels normally never need them.
#pragma once
#include <cuda_runtime.h>

namespace simt::frag {

__host__ __device__ constexpr int a_row(int lane, int i) { return (lane >> 2) + 8 * ((i >> 1) & 1); }
__host__ __device__ constexpr int a_col(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 2); }
__host__ __device__ constexpr int b_k(int lane, int i) { return 2 * (lane & 3) + (i & 1) + 8 * (i >> 1); }
__host__ __device__ constexpr int b_n(int lane, int /*i*/) { return lane >> 2; }
__host__ __device__ constexpr int c_row(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
__host__ __device__ constexpr int c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }
__host__ __device__ constexpr int wgmma_d_row(int warp, int lane, int i) { return 16 * (warp & 3) + c_row(lane, i & 3); }
__host__ __device__ constexpr int wgmma_d_col(int lane, int i) { return 8 * (i >> 2) + c_col(lane, i); }

}  // namespace simt::frag
