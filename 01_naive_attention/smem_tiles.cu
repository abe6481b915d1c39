// smem_tiles.cu: step b. Both products from 32 x 32 tiles staged in shared memory.
//
// Step a's threads each read a whole row of Q (or P) and of K (or a column of V) from global
// memory: a tile of 32 x 32 outputs read every input 32 times over. Here a block of 32 x 32
// threads first copies a 32 x 32 tile of each operand into shared memory, every thread one
// element (coalesced: the lanes of a warp take consecutive elements of one row), and then every
// thread reads its row and column from there: global memory is read once per tile instead of
// once per output. Padding the rows to 33 floats puts the 32 rows a warp reads of K's tile on 32
// different banks.
// Cost: every FMA still needs two shared-memory loads, so shared memory, not arithmetic, sets
// the pace (step c: register blocking). One kernel serves both products: kBt says whether B is
// stored [N][K] (K, for S = Q K^T) or [K][N] (V, for O = P V).
#include <algorithm>

#include "kernels/numeric.cuh"
#include "naive.h"
#include "simt/simt.h"

namespace ch01 {
namespace {

constexpr int kTile = 32;

// C[bh] = alpha * A[bh] op(B[bh]), A [M][K], C [M][N], B [N][K] (kBt) or [K][N]; any sizes.
template <class TA, class TB, class TC, bool kBt>
__global__ void tiled_kernel(int batches, int M, int N, int K, float alpha, const TA* A, const TB* B, TC* C) {
  __shared__ float As[kTile][kTile + 1];  // A's tile: [row][k]
  __shared__ float Bs[kTile][kTile + 1];  // B's tile as stored: [n][k] (kBt) or [k][n]
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int n0 = static_cast<int>(blockIdx.x) * kTile;
  // Row tiles beyond the grid's 65535 y-blocks, and batches beyond its 65535 z-blocks, are taken in
  // turns: the same for every thread of the block, so all of them meet every __syncthreads.
  for (int m0 = static_cast<int>(blockIdx.y) * kTile; m0 < M; m0 += static_cast<int>(gridDim.y) * kTile)
  for (int bh = static_cast<int>(blockIdx.z); bh < batches; bh += static_cast<int>(gridDim.z)) {
    const TA* a = A + static_cast<size_t>(bh) * M * K;
    const TB* b = B + static_cast<size_t>(bh) * K * N;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
      __syncthreads();  // the previous tiles are consumed
      As[ty][tx] = m0 + ty < M && k0 + tx < K ? attn::load(a + static_cast<size_t>(m0 + ty) * K + k0 + tx) : 0.f;
      if (kBt) Bs[ty][tx] = n0 + ty < N && k0 + tx < K ? attn::load(b + static_cast<size_t>(n0 + ty) * K + k0 + tx) : 0.f;
      else Bs[ty][tx] = k0 + ty < K && n0 + tx < N ? attn::load(b + static_cast<size_t>(k0 + ty) * N + n0 + tx) : 0.f;
      __syncthreads();
      for (int k = 0; k < kTile; ++k) acc += As[ty][k] * (kBt ? Bs[tx][k] : Bs[k][tx]);
    }
    if (m0 + ty < M && n0 + tx < N) attn::store(C + static_cast<size_t>(bh) * M * N + static_cast<size_t>(m0 + ty) * N + n0 + tx, alpha * acc);
  }
}

template <bool kBt, class TA, class TB, class TC>
cudaError_t launch(int batches, int M, int N, int K, float alpha, const TA* A, const TB* B, TC* C) {
  const dim3 grid((N + kTile - 1) / kTile, std::min((M + kTile - 1) / kTile, 65535), std::min(batches, 65535));
  return simt::launch(tiled_kernel<TA, TB, TC, kBt>, grid, dim3(kTile, kTile), 0, batches, M, N, K, alpha, A, B, C);
}

}  // namespace

cudaError_t tiled_scores(const attn::AttentionParams& p, float* S) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return launch<true>(p.B * p.H, p.Lq, p.Lk, p.d, p.scale, static_cast<const T*>(p.q), static_cast<const T*>(p.k), S);
  });
}

cudaError_t tiled_pv(const attn::AttentionParams& p, const float* P) {
  return attn::dispatch_dtype(p.dtype, [&](auto t) {
    using T = decltype(t);
    return launch<false>(p.B * p.H, p.Lq, p.d, p.Lk, 1.f, P, static_cast<const T*>(p.v), static_cast<T*>(p.o));
  });
}

size_t tiled_smem_bytes() { return 2 * sizeof(float) * kTile * (kTile + 1); }  // As and Bs

}  // namespace ch01
