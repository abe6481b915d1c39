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
// 128-bit shared loads feed 256 FFMAs, which is 94 % FFMA among the inner loop's instructions.
// A thread's rows are ty + 16 i and its columns tx + TX j (K^T) or 4-wide groups 4 TX apart (V):
// a warp then reads each row of A at one address (a broadcast) and 8 or 16 distinct rows of B per
// phase, which the padding below puts on distinct banks.
// What it costs: 64 accumulators and 32 + 8 operand registers per thread (one or two blocks per
// SM), and a tile that idles when M or N is much smaller than 128.
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

// Rows [row0, row0 + R) and columns [k0, k0 + BK) of a row-major matrix with `cols` columns into
// s[R][kRow] as floats, zeros outside. The 32 lanes of a warp take 32 consecutive elements of one
// row: one coalesced load, and a store to 32 distinct banks.
template <int R, int Threads, class T>
__device__ __forceinline__ void load_rows(float (*s)[kRow], const T* src, int rows, int cols, int row0, int k0) {
  static_assert(R * BK % Threads == 0, "whole passes: the loop unrolls");
  #pragma unroll
  for (int pass = 0; pass < R * BK / Threads; ++pass) {
    const int e = static_cast<int>(threadIdx.x) + pass * Threads, r = e / BK, k = e % BK;
    s[r][k] = row0 + r < rows && k0 + k < cols ? load(src + static_cast<size_t>(row0 + r) * cols + k0 + k) : 0.f;
  }
}

// Rows [k0, k0 + BK) and columns [n0, n0 + BN) of a row-major [K][N] matrix into s[BK][BN]: the
// lanes take consecutive columns, both in memory and in banks.
template <int BN, class T>
__device__ __forceinline__ void load_kn(float (*s)[BN], const T* src, int K, int N, int k0, int n0) {
  #pragma unroll
  for (int pass = 0; pass < BK * BN / Shape<BN>::threads; ++pass) {
    const int e = static_cast<int>(threadIdx.x) + pass * Shape<BN>::threads, k = e / BN, n = e % BN;
    s[k][n] = k0 + k < K && n0 + n < N ? load(src + static_cast<size_t>(k0 + k) * N + n0 + n) : 0.f;
  }
}

__device__ __forceinline__ float component(const float4& v, int c) { return c == 0 ? v.x : c == 1 ? v.y : c == 2 ? v.z : v.w; }

// Row i of the thread's TM rows, column j of its TN columns, within the tile.
template <int BN>
__device__ __forceinline__ int row_of(int ty, int i) { return ty + Shape<BN>::TY * i; }
template <int BN, bool kBt>
__device__ __forceinline__ int col_of(int tx, int j) {
  return kBt ? tx + Shape<BN>::TX * j : 4 * tx + 4 * Shape<BN>::TX * (j / 4) + j % 4;
}

// acc += As Bs^T over one BK slice: As [BM][RA] (RA >= BK, a multiple of 4: every lane of an
// access phase reads the same row), Bs [BN][kRow] (K^T's layout).
template <int BN, int RA>
__device__ __forceinline__ void multiply_bt(float (&acc)[TM][TN], const float (*As)[RA], const float (*Bs)[kRow], int tx, int ty) {
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
__device__ __forceinline__ void multiply_kn(float (&acc)[TM][TN], const float (*As)[RA], const float (*Bs)[BN], int tx, int ty) {
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
    if constexpr (kBt) multiply_bt<BN>(acc, As, Bs, tx, ty);
    else multiply_kn<BN>(acc, As, Bs, tx, ty);
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

// The launch: BN = 64 when N <= 64 (a head dim of 64 fills it), else 128.
template <bool kBt, class TA, class TB, class TC>
cudaError_t launch(int batches, int M, int N, int K, float alpha, const TA* A, const TB* B, TC* C) {
  const int BN = N <= 64 ? 64 : 128;
  const long long blocks = static_cast<long long>(batches) * ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  if (blocks > 2147483647) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(blocks));
  if (BN == 64) return simt::launch(gemm_kernel<TA, TB, TC, kBt, 64>, grid, dim3(Shape<64>::threads), 0, M, N, K, alpha, A, B, C);
  return simt::launch(gemm_kernel<TA, TB, TC, kBt, 128>, grid, dim3(Shape<128>::threads), 0, M, N, K, alpha, A, B, C);
}

}  // namespace attn::gemm
