// gemm.cuh: the book's CUDA-core GEMM, register-blocked. Chapter 01 builds it (step c) for both of
// attention's products; chapters 02 and 03 keep it, so that they change only their softmax.
//
//   C[bh] = alpha * A[bh] B[bh]^T   (kBt: B is [N][K], as K is for S = Q K^T)
//   C[bh] = alpha * A[bh] B[bh]     (B is [K][N], as V is for O = P V)
//
// every operand dense and row-major per batch entry bh, A [M][K], C [M][N]; any M, N, K (tiles
// past the edges are zero-filled, stores predicated). Inputs of any of the book's types, fp32
// arithmetic.
//
// Why it is fast, in three numbers. A block computes a BM x BN = 128 x BN tile of C, BK = 32 of
// the K dimension at a time, from shared memory. Each thread computes TM x TN = 8 x 8 outputs, so
// one value read from shared memory feeds 8 FMAs instead of 1 (step b's ratio): per 4 k, 8 + 8
// 128-bit shared loads feed 256 FFMAs (in the compiled loop, sass_sm90.inc, most of the rest
// stages the next slice).
// A thread's rows are ty + 16 i and its columns tx + TX j (K^T) or 4-wide groups 4 TX apart (V):
// a warp then reads each row of A at one address (a broadcast) and 8 or 16 distinct rows of B per
// phase, which the padding below puts on distinct banks.
// What it costs: 64 accumulators and 32 + 8 operand registers per thread (with addresses, 129 to
// 222 on sm_90: one block of 256 threads per SM at BN = 128, three of 128 at BN = 64), and a tile
// that idles when M or N is much smaller than 128.
// The copies into shared memory unroll by 4 (rows) and 8 (columns), not whole: whole, ptxas spills.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "numeric.cuh"
#include "simt/simt.h"

namespace attn::gemm {

constexpr int BM = 128, BK = 32, TM = 8, TN = 8;
// Rows of BK = 32 floats padded to 36: the 8 lanes of a 128-bit access phase reading 8
// consecutive rows start 4 banks apart, so the 8 x 4 words fall on 32 distinct banks.
constexpr int kRow = BK + 4;

template <int BN>
struct Shape {
  static constexpr int TX = BN / TN, TY = BM / TM, threads = TX * TY;  // 256 threads at BN = 128
};

// Rows [row0, row0 + R) and columns [k0, k0 + BK) of a row-major matrix with `rows` rows and
// `cols` columns into s[R][kRow] as floats: zeros past the last column (they meet the other
// operand in the sum over k), nothing past the last row (it only feeds outputs never stored). The
// 32 lanes of a warp take 32 consecutive elements of one row: one coalesced load, and a store to
// 32 distinct banks. Each pass's load is predicated, not branched around: behind a branch of its
// own (`if (row < rows) s = load(...)`), ptxas waited for one row's load before it asked for the
// next, 8 latencies in a row per 8 passes (the H200 ran that code: tests/counters/h200_sass_as_run.inc).
// 4 passes in flight, not 8: with 8 loads' registers live, the PV GEMM compiled for sm_120 (from
// the compute_90 PTX) spills; 4 keep every arch spill-free (tools/arch_resources.py).
template <int R, int Threads, class T>
__device__ __forceinline__ void load_rows(float (*s)[kRow], const T* src, int rows, int cols, int row0, int k0) {
  static_assert(Threads % BK == 0 && R % (Threads / BK) == 0, "whole passes");
  const int k = static_cast<int>(threadIdx.x) % BK, r0 = static_cast<int>(threadIdx.x) / BK;
  const bool in_k = k0 + k < cols;
  const T* from = src + static_cast<size_t>(row0 + r0) * cols + k0 + k;
  constexpr int step = Threads / BK;  // rows per pass
  #pragma unroll 4
  for (int pass = 0; pass < R / step; ++pass) {
    const bool in_rows = row0 + r0 + pass * step < rows;
    const float v = in_k && in_rows ? load(from + static_cast<size_t>(pass) * step * cols) : 0.f;
    if (in_rows) s[r0 + pass * step][k] = v;
  }
}

// Rows [k0, k0 + BK) and columns [n0, n0 + BN) of a row-major [K][N] matrix into s[BK][BN]: zeros
// past row K, nothing past column N (as above). The lanes take consecutive columns, both in
// memory and in banks.
template <int BN, class T>
__device__ __forceinline__ void load_kn(float (*s)[BN], const T* src, int K, int N, int k0, int n0) {
  constexpr int step = Shape<BN>::threads / BN;  // rows per pass
  const int n = static_cast<int>(threadIdx.x) % BN, r0 = static_cast<int>(threadIdx.x) / BN;
  if (n0 + n >= N) return;
  const T* from = src + static_cast<size_t>(k0 + r0) * N + n0 + n;
  #pragma unroll 8
  for (int pass = 0; pass < BK / step; ++pass)
    s[r0 + pass * step][n] = k0 + r0 + pass * step < K ? load(from + static_cast<size_t>(pass) * step * N) : 0.f;
}

__device__ __forceinline__ float component(const float4& v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// Row i of the thread's TM rows, column j of its TN columns, within the tile.
template <int BN>
__device__ __forceinline__ int row_of(int ty, int i) { return ty + Shape<BN>::TY * i; }
template <int BN, bool kBt>
__device__ __forceinline__ int col_of(int tx, int j) {
  return kBt ? tx + Shape<BN>::TX * j : 4 * tx + 4 * Shape<BN>::TX * (j / 4) + j % 4;
}

// Whether the thread has an output inside the first `rows` rows and `cols` columns of the tile:
// one whose outputs all lie outside skips the products (an edge tile's idle threads, a small
// problem's many, cost nothing; on a GPU the branch is uniform but at the edge).
template <int BN, bool kBt>
__device__ __forceinline__ bool has_outputs(int tx, int ty, int rows, int cols) {
  return row_of<BN>(ty, 0) < rows && col_of<BN, kBt>(tx, 0) < cols;
}

// acc += As Bs^T over one BK slice: As [BM][RA] (RA >= BK, a multiple of 4: every lane of an
// access phase reads the same row), Bs [BN][kRow] (K^T's layout). Only the first `rows` x `cols`
// outputs of the tile are wanted.
template <int BN, int RA>
__device__ __forceinline__ void multiply_bt(float (&acc)[TM][TN], const float (*As)[RA], const float (*Bs)[kRow], int tx, int ty,
                                            int rows, int cols) {
  if (!has_outputs<BN, true>(tx, ty, rows, cols)) return;
  #pragma unroll
  for (int k = 0; k < BK; k += 4) {
    float4 a[TM];
    #pragma unroll
    for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(&As[row_of<BN>(ty, i)][k]);
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      const float4 b = *reinterpret_cast<const float4*>(&Bs[col_of<BN, true>(tx, j)][k]);
      #pragma unroll
      for (int i = 0; i < TM; ++i)
        acc[i][j] = fmaf(a[i].w, b.w, fmaf(a[i].z, b.z, fmaf(a[i].y, b.y, fmaf(a[i].x, b.x, acc[i][j]))));
    }
  }
}

// acc += As Bs over one BK slice: As [BM][RA] as above, Bs [BK][BN] (V's layout).
template <int BN, int RA>
__device__ __forceinline__ void multiply_kn(float (&acc)[TM][TN], const float (*As)[RA], const float (*Bs)[BN], int tx, int ty,
                                            int rows, int cols) {
  if (!has_outputs<BN, false>(tx, ty, rows, cols)) return;
  #pragma unroll
  for (int k = 0; k < BK; k += 4) {
    float4 a[TM];
    #pragma unroll
    for (int i = 0; i < TM; ++i) a[i] = *reinterpret_cast<const float4*>(&As[row_of<BN>(ty, i)][k]);
    #pragma unroll
    for (int c = 0; c < 4; ++c) {
      float b[TN];
      #pragma unroll
      for (int q = 0; q < TN / 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[k + c][col_of<BN, false>(tx, 4 * q)]);
        b[4 * q] = v.x, b[4 * q + 1] = v.y, b[4 * q + 2] = v.z, b[4 * q + 3] = v.w;
      }
      #pragma unroll
      for (int i = 0; i < TM; ++i) {
        const float x = component(a[i], c);
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(x, b[j], acc[i][j]);
      }
    }
  }
}

// One block per tile of C, blockIdx.x = (batch entry, tile row, tile column) in that order: a
// one-dimensional grid holds 2^31 - 1 blocks, as many as any buffer of S that fits in memory has.
template <class TA, class TB, class TC, bool kBt, int BN>
__global__ void __launch_bounds__(Shape<BN>::threads) gemm_kernel(int M, int N, int K, float alpha, const TA* A,
                                                                  const TB* B, TC* C) {
  __shared__ __align__(16) float As[BM][kRow];
  __shared__ __align__(16) float Bs[kBt ? BN : BK][kBt ? kRow : BN];
  const int tx = static_cast<int>(threadIdx.x) % Shape<BN>::TX, ty = static_cast<int>(threadIdx.x) / Shape<BN>::TX;
  const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM, tile = static_cast<int>(blockIdx.x);
  const int bh = tile / (tiles_m * tiles_n), m0 = tile / tiles_n % tiles_m * BM, n0 = tile % tiles_n * BN;
  const TA* a = A + static_cast<size_t>(bh) * M * K;
  const TB* b = B + static_cast<size_t>(bh) * K * N;
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    __syncthreads();  // the previous slice is consumed
    load_rows<BM, Shape<BN>::threads>(As, a, M, K, m0, k0);
    if constexpr (kBt) load_rows<BN, Shape<BN>::threads>(Bs, b, N, K, n0, k0);
    else load_kn<BN>(Bs, b, K, N, k0, n0);
    __syncthreads();
    if constexpr (kBt) multiply_bt<BN>(acc, As, Bs, tx, ty, M - m0, N - n0);
    else multiply_kn<BN>(acc, As, Bs, tx, ty, M - m0, N - n0);
  }
  TC* c = C + static_cast<size_t>(bh) * M * N;
  #pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + row_of<BN>(ty, i);
    #pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = n0 + col_of<BN, kBt>(tx, j);
      if (row < M && col < N) store(c + static_cast<size_t>(row) * N + col, alpha * acc[i][j]);
    }
  }
}

// BN = 64 when N <= 64 (a head dim of 64 fills it), else 128.
constexpr int bn_for(int N) { return N <= 64 ? 64 : 128; }
// The static shared memory of a block (As and Bs above) at N: what a chapter's variant declares.
template <bool kBt>
constexpr size_t smem_bytes(int N) {
  return sizeof(float) * (BM * kRow + (kBt ? bn_for(N) * kRow : BK * bn_for(N)));
}

template <bool kBt, class TA, class TB, class TC>
cudaError_t launch(int batches, int M, int N, int K, float alpha, const TA* A, const TB* B, TC* C) {
  const int BN = bn_for(N);
  const long long blocks = static_cast<long long>(batches) * ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  if (blocks > 2147483647) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (BN == 64) return simt::launch(gemm_kernel<TA, TB, TC, kBt, 64>, grid, dim3(Shape<64>::threads), 0, M, N, K, alpha, A, B, C);
  return simt::launch(gemm_kernel<TA, TB, TC, kBt, 128>, grid, dim3(Shape<128>::threads), 0, M, N, K, alpha, A, B, C);
}

}  // namespace attn::gemm
